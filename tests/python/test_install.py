"""`pip install` of the repository root: the build backend (pybuild/culprit_build.py) turns an sdist of the source
tree into one wheel holding the Python package and the native build; installed offline into a fresh venv, the
`culprit` command, `culprit demo` and `python -m culprit run` work from it alone.

The wheel is built once per module. Under CTest the backend packages CTest's own build tree (CULPRIT_BUILD_DIR)
instead of building one; with CULPRIT_TEST_WHEEL_CMAKE=1 it builds with CMake from the unpacked sdist, as
`pip install .` does (a minute or more), and so it does when no build tree is found.
"""

import base64
import csv
import glob
import hashlib
import io
import json
import os
import shutil
import subprocess
import sys
import tarfile
import zipfile

import pytest

from conftest import PKG_DIR, REPO, build_dir

BACKEND_DIR = os.path.join(REPO, "pybuild")
VERSION = "0.1.0"
TAG = "py3-none-linux_x86_64"
WHEEL = "culprit-%s-%s.whl" % (VERSION, TAG)
NEEDED = ["bin/culprit", "bin/culprit-demo-sim", "lib/libculprit.so", "lib/culprit-sim/libcuda.so.1"]
BUILD_TIMEOUT = 1500  # a CMake build of the native parts on a slow machine
STEP_TIMEOUT = 120


def _clean_env(**extra):
    """The environment without this build's and pip's settings, plus extra."""
    e = {k: v for k, v in os.environ.items()
         if not k.startswith(("CULPRIT_", "FAKECUDA_", "PIP_"))
         and k not in ("LD_PRELOAD", "LD_LIBRARY_PATH", "PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV")}
    e.update(PIP_CONFIG_FILE=os.devnull, PIP_DISABLE_PIP_VERSION_CHECK="1", PIP_NO_INPUT="1",
             PIP_NO_CACHE_DIR="1", PYTHONDONTWRITEBYTECODE="1")
    e.update(extra)
    return e


def _run(argv, timeout=STEP_TIMEOUT, **kw):
    p = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True,
                       timeout=timeout, **kw)
    p.what = "%s\n--- status %s\n--- stdout\n%s\n--- stderr\n%s" % (" ".join(argv), p.returncode, p.stdout,
                                                                    p.stderr)
    return p


def _backend(call, cwd, env=None, root=REPO):
    """Runs culprit_build.<call> in a child interpreter (the backend of the tree at root), as pip does."""
    code = "import sys; sys.path.insert(0, %r); import culprit_build as b; print(b.%s)" % (
        os.path.join(root, "pybuild"), call)
    return _run([sys.executable, "-c", code], cwd=str(cwd), env=env or _clean_env())


def _reused_build():
    """The build tree the backend packages, or None to have it build with CMake."""
    if os.environ.get("CULPRIT_TEST_WHEEL_CMAKE") == "1":
        return None
    b = build_dir()
    missing = [n for n in NEEDED if not os.path.isfile(os.path.join(b, n))]
    if not missing:
        return os.path.abspath(b)
    if os.environ.get("CULPRIT_BUILD_DIR"):
        pytest.fail("the build tree %s lacks %s" % (b, ", ".join(missing)))
    return None


# ---- one sdist, one wheel, one venv for the module --------------------------------------------------------------


@pytest.fixture(scope="module")
def work(tmp_path_factory):
    return tmp_path_factory.mktemp("install")


@pytest.fixture(scope="module")
def sdist(work):
    out = work / "sdist"
    p = _backend("build_sdist(%r)" % str(out), cwd=work)
    assert p.returncode == 0, p.what
    return out / p.stdout.strip().splitlines()[-1]


@pytest.fixture(scope="module")
def venv(work):
    p = _run([sys.executable, "-c", "import venv, ensurepip"])
    if p.returncode != 0:
        pytest.skip("%s has no venv or ensurepip module (Debian: python3-venv)" % sys.executable)
    d = work / "venv"
    p = _run([sys.executable, "-m", "venv", str(d)], env=_clean_env())
    if p.returncode != 0 and "ensurepip" in p.stdout + p.stderr:
        pytest.skip("python3 -m venv cannot install pip into a venv (Debian: python3-venv)")
    assert p.returncode == 0, p.what
    return d


@pytest.fixture(scope="module")
def wheel(work, sdist, venv):
    """The wheel pip builds from the sdist, offline, with its default build isolation."""
    reuse = _reused_build()
    if reuse is None and not shutil.which("cmake"):
        pytest.skip("no build tree to package and no cmake to build one (set CULPRIT_BUILD_DIR)")
    env = _clean_env(**({"CULPRIT_BUILD_DIR": reuse} if reuse else {}))
    out = work / "wheels"
    p = _run([str(venv / "bin" / "python"), "-m", "pip", "wheel", "-v", "--no-index", "--no-deps", "-w", str(out),
              str(sdist)], timeout=BUILD_TIMEOUT, cwd=str(work), env=env)
    assert p.returncode == 0, p.what
    assert ("packaging the existing build tree" in p.stdout + p.stderr) == bool(reuse), p.what
    assert sorted(os.listdir(out)) == [WHEEL]
    return out / WHEEL


@pytest.fixture(scope="module")
def installed(venv, wheel):
    p = _run([str(venv / "bin" / "python"), "-m", "pip", "install", "--no-index", "--no-deps", str(wheel)],
             env=_clean_env())
    assert p.returncode == 0, p.what
    p = _run([str(venv / "bin" / "python"), "-c", "import culprit, sys; print(culprit.__file__)"], env=_clean_env())
    assert p.returncode == 0, p.what
    pkg = os.path.dirname(p.stdout.strip())
    assert pkg.startswith(str(venv)), p.what
    return venv, pkg


def _venv_env(venv, **extra):
    return _clean_env(PATH=str(venv / "bin") + os.pathsep + os.environ.get("PATH", ""), **extra)


# ---- the archives -----------------------------------------------------------------------------------------------


def test_sdist_holds_the_sources(sdist):
    assert sdist.name == "culprit-%s.tar.gz" % VERSION
    with tarfile.open(str(sdist)) as t:
        names = {n.split("/", 1)[1] for n in t.getnames() if "/" in n}
        pkg_info = t.extractfile("culprit-%s/PKG-INFO" % VERSION).read().decode()
        mode = t.getmember("culprit-%s/build.sh" % VERSION).mode
    for f in ("pyproject.toml", "pybuild/culprit_build.py", "CMakeLists.txt", "src/cli/main.c",
              "tests/fakecuda/fc_api.c", "demo/demo_sim.c", "python/culprit/__init__.py", "python/README.md"):
        assert f in names
    assert not [n for n in names if "__pycache__" in n or n.endswith(".pyc") or n.startswith(("build/", ".git/"))]
    # The whole package tree (files made after the sdist aside).
    made = os.stat(str(sdist)).st_mtime
    for d, dirs, files in os.walk(os.path.join(PKG_DIR, "culprit")):
        dirs[:] = [x for x in dirs if x != "__pycache__"]
        for f in files:
            p = os.path.join(d, f)
            if not f.endswith(".pyc") and os.stat(p).st_mtime < made:
                assert os.path.relpath(p, REPO) in names
    assert "Name: culprit\n" in pkg_info and "Version: %s\n" % VERSION in pkg_info
    assert mode & 0o111, "build.sh lost its executable bit"


def test_wheel_record_is_consistent(wheel, sdist):
    with zipfile.ZipFile(str(wheel)) as z:
        infos = {i.filename: i for i in z.infolist()}
        rows = list(csv.reader(io.StringIO(z.read("culprit-%s.dist-info/RECORD" % VERSION).decode())))
        listed = {}
        for row in rows:
            assert len(row) == 3, row
            listed[row[0]] = row
        assert set(listed) == set(infos), "RECORD and the zip differ: %s" % (set(listed) ^ set(infos))
        for name, (_, digest, size) in listed.items():
            if name.endswith("/RECORD"):
                assert (digest, size) == ("", "")
                continue
            data = z.read(name)
            algo, _, value = digest.partition("=")
            assert algo == "sha256" and int(size) == len(data), name
            assert value == base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode(), name
        wheel_meta = z.read("culprit-%s.dist-info/WHEEL" % VERSION).decode()
        entry_points = z.read("culprit-%s.dist-info/entry_points.txt" % VERSION).decode()
        metadata = z.read("culprit-%s.dist-info/METADATA" % VERSION).decode()
    assert "Tag: %s\n" % TAG in wheel_meta and "Root-Is-Purelib: false\n" in wheel_meta
    assert "[console_scripts]\nculprit = culprit._cli:main\n" in entry_points
    assert "Version: %s\n" % VERSION in metadata and "Requires-Python: >=3.8\n" in metadata
    assert list(infos)[-1].endswith("/RECORD")

    native = {n for n in infos if n.startswith("culprit/_native/")}
    for n in ("bin/culprit", "bin/culprit-demo-sim", "lib/libculprit.so", "lib/culprit-sim/libcuda.so.1"):
        assert "culprit/_native/" + n in native
    for n in ("bin/culprit", "bin/culprit-demo-sim"):
        assert (infos["culprit/_native/" + n].external_attr >> 16) & 0o111, n + " is not executable in the wheel"
    # The sdist's whole package tree, subpackages included, without bytecode.
    with tarfile.open(str(sdist)) as t:
        prefix = "culprit-%s/python/" % VERSION
        src = {n[len(prefix):] for n in t.getnames() if n.startswith(prefix + "culprit/") and t.getmember(n).isfile()}
    assert "culprit/__init__.py" in src and "culprit/_cli.py" in src
    assert src <= set(infos), "not in the wheel: %s" % (src - set(infos))
    assert not [n for n in infos if "__pycache__" in n or n.endswith(".pyc")]


# ---- the installed tool -----------------------------------------------------------------------------------------


def test_console_script(installed, tmp_path):
    venv, pkg = installed
    env = _venv_env(venv)
    assert shutil.which("culprit", path=env["PATH"]) == str(venv / "bin" / "culprit")
    p = _run(["culprit", "--help"], env=env, cwd=str(tmp_path))
    assert p.returncode == 0 and p.stdout.startswith("usage: culprit <command>"), p.what
    p = _run(["culprit", "version"], env=env, cwd=str(tmp_path))
    assert p.returncode == 0 and p.stdout.strip() == "culprit %s" % VERSION, p.what
    p = _run(["culprit", "bogus"], env=env, cwd=str(tmp_path))
    assert p.returncode == 2, p.what  # the program's own usage status, passed through
    assert os.access(os.path.join(pkg, "_native", "bin", "culprit"), os.X_OK)


def test_demo(installed, tmp_path):
    venv, pkg = installed
    p = _run(["culprit", "demo"], env=_venv_env(venv), cwd=str(tmp_path), timeout=STEP_TIMEOUT)
    err = p.stderr
    assert "the kernel that faulted: " in err, p.what
    if "no usable GPU was found" in err:
        assert p.returncode == 1, p.what
        assert "the kernel that faulted: softmax_loss(float const*, int const*, float*, int)" in err, p.what
        assert "device assert: `idx < n` failed at fake.cu:8" in err, p.what
        assert "the demo exited with status 1; that is expected, its kernel faults on purpose" in err, p.what
        # the wheel's demo ran (its report names the program; the verdict offers no cuda-gdb on the simulator)
        reports = glob.glob(str(tmp_path / "culprit-reports" / "*" / "culprit-*.json"))
        assert len(reports) == 1, p.what
        with open(reports[0]) as f:
            exe = json.load(f)["process"]["exe"]
        assert exe == os.path.join(pkg, "_native", "bin", "culprit-demo-sim"), (exe, p.what)
        assert "cuda-gdb" not in err, p.what
    else:
        assert p.returncode != 0, p.what
    assert os.listdir(str(tmp_path / "culprit-reports"))


def test_python_m_culprit_run(installed, tmp_path):
    venv, pkg = installed
    env = _venv_env(venv)
    code = "import culprit, os; print(culprit.loaded()); print(os.environ['LD_PRELOAD']); print(culprit.__file__)"
    p = _run(["python", "-m", "culprit", "run", "--", "python", "-c", code], env=env, cwd=str(tmp_path))
    assert p.returncode == 0, p.what
    loaded, preload, where = p.stdout.splitlines()
    assert loaded == "True", p.what
    assert os.path.realpath(preload) == os.path.realpath(os.path.join(pkg, "_native", "lib", "libculprit.so"))
    assert where.startswith(pkg)
    # Without arguments it still says whether the library is loaded.
    p = _run(["python", "-m", "culprit"], env=env, cwd=str(tmp_path))
    assert p.returncode == 1 and "library not loaded" in p.stdout, p.what


def test_diagnose_from_the_wheel(installed, tmp_path):
    """`culprit run --diagnose` finds the start-up hook inside the installed package (culprit/_boot) and the
    package it loads is the wheel's."""
    venv, pkg = installed
    env = _venv_env(venv)
    code = ("import os, sys; print(os.environ.get('CULPRIT_DIAGNOSE')); "
            "print(sys.modules['culprit'].__file__); print(os.environ['PYTHONPATH'].split(os.pathsep)[0])")
    p = _run(["culprit", "run", "--diagnose", "--", "python", "-c", code], env=env, cwd=str(tmp_path))
    assert p.returncode == 0, p.what
    flag, where, boot = p.stdout.splitlines()
    assert flag == "1" and where.startswith(pkg), p.what
    assert os.path.realpath(boot) == os.path.realpath(os.path.join(pkg, "_boot")), p.what


# ---- without a wheel --------------------------------------------------------------------------------------------


def test_source_tree_has_no_program(tmp_path):
    p = _run([sys.executable, "-m", "culprit", "version"], env=_clean_env(PYTHONPATH=PKG_DIR), cwd=str(tmp_path))
    assert p.returncode == 127, p.what
    assert "has no bundled culprit program" in p.stderr and "pip install ." in p.stderr, p.what
    p = _run([sys.executable, "-c", "from culprit import _cli; print(_cli.bundled('bin', 'culprit'))"],
             env=_clean_env(PYTHONPATH=PKG_DIR), cwd=str(tmp_path))
    assert p.stdout.strip() == "None", p.what


def test_toml_fallback_reads_pyproject_like_tomllib():
    try:
        import tomllib
    except ImportError:
        pytest.skip("tomllib is Python 3.11 and later")
    sys.path.insert(0, BACKEND_DIR)
    try:
        import culprit_build
    finally:
        sys.path.remove(BACKEND_DIR)
    with open(os.path.join(REPO, "pyproject.toml"), encoding="utf-8") as f:
        text = f.read()
    assert culprit_build.parse_toml(text) == tomllib.loads(text)
    tricky = '[a]\nx = "has # inside" # comment\ny = [\n  "p",  # one\n  "q",\n]\nz = true\n'
    assert culprit_build.parse_toml(tricky) == tomllib.loads(tricky)


def test_backend_says_what_is_missing(tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    # No cmake on PATH: the build stops with one sentence naming the package, no traceback.
    p = _backend("build_wheel(%r)" % str(tmp_path / "out"), cwd=tmp_path, env=_clean_env(PATH=str(empty)))
    assert p.returncode == 1, p.what
    assert "culprit build: error: cmake is not on PATH; install CMake 3.22 or newer" in p.stderr, p.what
    assert "Traceback" not in p.stderr, p.what
    # A CULPRIT_BUILD_DIR without a build in it.
    p = _backend("build_wheel(%r)" % str(tmp_path / "out"), cwd=tmp_path,
                 env=_clean_env(CULPRIT_BUILD_DIR=str(empty)))
    assert p.returncode == 1, p.what
    assert "lacks bin/culprit, bin/culprit-demo-sim, lib/libculprit.so, lib/culprit-sim/libcuda.so.1" in p.stderr
    # A CUDA_HOME without the headers (needs cmake and compilers, checked first).
    if not (shutil.which("cmake") and shutil.which("cc") and shutil.which("c++")):
        return
    p = _backend("build_wheel(%r)" % str(tmp_path / "out"), cwd=tmp_path, env=_clean_env(CUDA_HOME=str(empty)))
    assert p.returncode == 1, p.what
    assert "CUDA_HOME is %s, which has no include/cuda.h" % empty in p.stderr, p.what
    assert not (tmp_path / "out").exists()


def test_backend_checks_the_versions_agree(tmp_path):
    root = tmp_path / "tree"
    for rel in ("pyproject.toml", "CMakeLists.txt", "pybuild/culprit_build.py", "python/culprit/__init__.py",
                "python/README.md"):
        os.makedirs(str((root / rel).parent), exist_ok=True)
        shutil.copy(os.path.join(REPO, rel), str(root / rel))
    p = _backend("prepare_metadata_for_build_wheel(%r)" % str(tmp_path / "meta"), cwd=tmp_path, root=str(root))
    assert p.returncode == 0 and p.stdout.strip() == "culprit-%s.dist-info" % VERSION, p.what
    meta = (tmp_path / "meta" / ("culprit-%s.dist-info" % VERSION) / "METADATA").read_text()
    assert meta.startswith("Metadata-Version: 2.1\nName: culprit\nVersion: %s\n" % VERSION)
    cm = root / "CMakeLists.txt"
    cm.write_text(cm.read_text().replace("VERSION %s" % VERSION, "VERSION 9.9.9", 1))
    p = _backend("prepare_metadata_for_build_wheel(%r)" % str(tmp_path / "meta2"), cwd=tmp_path, root=str(root))
    assert p.returncode == 1, p.what
    assert "the version differs: pyproject.toml says %s, CMakeLists.txt 9.9.9" % VERSION in p.stderr, p.what
