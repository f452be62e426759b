"""The build backend behind `pip install .` (PEP 517): builds culprit with CMake and writes one wheel holding the
Python package and the native program, library and simulated driver. Standard library only, so that pip's
isolated build needs nothing from an index; it is not a general-purpose backend.

Environment read here (documented in docs/usage.md, "Installing with pip"):
  CULPRIT_BUILD_DIR  package this existing CMake build tree as it is instead of building one
  CUDA_HOME          the CUDA toolkit (headers); else /usr/local/cuda, /usr/local/cuda-*, /usr/lib/cuda
  CMAKE_ARGS         extra arguments for the CMake configure step (split like a shell would)
  CMAKE_BUILD_PARALLEL_LEVEL, CMAKE_GENERATOR, CC, CXX: CMake's own
"""

import ast
import base64
import glob
import hashlib
import io
import os
import re
import shlex
import shutil
import subprocess
import sys
import sysconfig
import tarfile
import tempfile
import time
import zipfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # the source tree (pyproject.toml's folder)
PACKAGE_SRC = os.path.join("python", "culprit")  # the Python package, relative to ROOT
NATIVE = "culprit/_native"                       # where the native build goes inside the wheel
CMAKE_MIN = (3, 22)                              # cmake_minimum_required of CMakeLists.txt
CUDA_MIN = 12040                                 # CUDA_VERSION of the oldest cuda.h culprit builds against

# What `culprit` needs at run time, as (path in the build tree, path under NATIVE, required). The program finds
# the library at <its folder>/../lib/libculprit.so, and `culprit demo` its programs beside itself and the
# simulated driver at <its folder>/../lib/culprit-sim (src/cli/util.c, src/cli/demo.c). libunwind's SONAME is
# whatever the build copied beside libculprit.so (src/CMakeLists.txt), so lib/libunwind.so.* is globbed.
NATIVE_FILES = [
    ("bin/culprit", "bin/culprit", True),
    ("bin/culprit-demo-sim", "bin/culprit-demo-sim", True),
    ("bin/culprit-demo-cuda", "bin/culprit-demo-cuda", False),  # built only when nvcc was found
    ("lib/libculprit.so", "lib/libculprit.so", True),
    ("lib/libunwind.so.*", "lib/", False),                     # absent when built without libunwind
    ("lib/culprit-sim/libcuda.so.1", "lib/culprit-sim/libcuda.so.1", True),
]
# The CMake targets behind them. fakecuda (the simulated driver) lives under tests/, so the configure step keeps
# CULPRIT_BUILD_TESTS on and only these targets are built.
TARGETS = ["culprit", "culprit-cli", "culprit-demo-sim", "fakecuda"]
GPU_TARGETS = ["culprit-demo-cuda"]
# Folders an sdist of a tree that is not a git checkout leaves out (with build* at the top and *.egg-info).
IGNORED_DIRS = {".git", "__pycache__", "culprit-reports", "Testing", "dist"}


class BuildError(Exception):
    """A build that cannot go on, with the sentence that says what to do."""


# ---- messages -------------------------------------------------------------------------------------------------


def _say(msg):
    """Progress on stderr: pip shows it with -v, and in full when the build fails."""
    sys.stderr.write("culprit build: %s\n" % msg)
    sys.stderr.flush()


def _fail(err):
    """Ends the build with one clear sentence instead of a traceback."""
    sys.stderr.write("culprit build: error: %s\n" % err)
    sys.stderr.flush()
    raise SystemExit(1)


def _hook(fn):
    """Wraps a PEP 517 hook so a BuildError ends the build with its sentence."""
    def run(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except BuildError as e:
            _fail(e)
    run.__name__ = fn.__name__
    run.__doc__ = fn.__doc__
    return run


# ---- pyproject.toml -------------------------------------------------------------------------------------------


def _strip_comment(line):
    """line without a trailing # comment (a # inside a string stays)."""
    quote = None
    i = 0
    while i < len(line):
        c = line[i]
        if quote:
            if c == "\\" and quote == '"':
                i += 1
            elif c == quote:
                quote = None
        elif c in "\"'":
            quote = c
        elif c == "#":
            return line[:i]
        i += 1
    return line


def _toml_value(text, where):
    if text in ("true", "false"):
        return text == "true"
    if text.startswith(("{", '"""', "'''")):
        raise BuildError("pyproject.toml, %s: inline tables and multi-line strings are not read by this backend "
                         "on Python < 3.11" % where)
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError):
        raise BuildError("pyproject.toml, %s: cannot read the value %r" % (where, text))


def parse_toml(text):
    """The subset of TOML that pyproject.toml uses: [tables], key = string, number, boolean, or an array of those
    (over several lines too). tomllib reads it on Python 3.11 and later; this serves older interpreters."""
    doc, table = {}, None
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        line = _strip_comment(lines[i]).strip()
        i += 1
        if not line:
            continue
        if line.startswith("[["):
            raise BuildError("pyproject.toml, line %d: arrays of tables are not read by this backend" % i)
        if line.startswith("["):
            table = doc
            for part in line[1:line.rindex("]")].split("."):
                table = table.setdefault(part.strip().strip('"'), {})
            continue
        key, eq, value = line.partition("=")
        key, value = key.strip().strip('"'), value.strip()
        if not eq or not key or table is None:
            raise BuildError("pyproject.toml, line %d: expected key = value inside a [table]" % i)
        if value.startswith("["):
            while value.count("[") > value.count("]") and i < len(lines):  # an array over several lines
                value += " " + _strip_comment(lines[i]).strip()
                i += 1
        table[key] = _toml_value(value, "line %d" % i)
    return doc


def _read_text(rel):
    with open(os.path.join(ROOT, rel), encoding="utf-8") as f:
        return f.read()


def _project():
    """The [project] table of pyproject.toml, checked against what this backend knows how to write, and its
    version against CMakeLists.txt and the package's __version__ (the three must agree)."""
    text = _read_text("pyproject.toml")
    try:
        import tomllib
        doc = tomllib.loads(text)
    except ImportError:
        doc = parse_toml(text)
    proj = doc.get("project") or {}
    known = {"name", "version", "description", "readme", "requires-python", "classifiers", "dependencies",
             "scripts"}
    unknown = sorted(set(proj) - known)
    if unknown:
        raise BuildError("pyproject.toml: [project] keys %s are not written by this backend (pybuild/"
                         "culprit_build.py); add them there" % ", ".join(unknown))
    for key in ("name", "version", "description"):
        if not isinstance(proj.get(key), str):
            raise BuildError("pyproject.toml: [project] needs %s (a string)" % key)
    m = re.search(r"project\(\s*culprit\s+VERSION\s+([0-9][0-9.]*)", _read_text("CMakeLists.txt"))
    cmake_version = m.group(1) if m else None
    m = re.search(r'^__version__\s*=\s*"([^"]+)"', _read_text(os.path.join(PACKAGE_SRC, "__init__.py")), re.M)
    py_version = m.group(1) if m else None
    if not (proj["version"] == cmake_version == py_version):
        raise BuildError("the version differs: pyproject.toml says %s, CMakeLists.txt %s, %s/__init__.py %s; "
                         "make them agree" % (proj["version"], cmake_version, PACKAGE_SRC, py_version))
    return proj


def _dist_name(proj):
    return re.sub(r"[-_.]+", "_", proj["name"]).lower()


def _dist_info(proj):
    return "%s-%s.dist-info" % (_dist_name(proj), proj["version"])


def _tag():
    """py3-none-<platform>: the native parts do not depend on the Python version, only on the machine."""
    plat = sysconfig.get_platform()
    if not plat.startswith("linux-"):
        raise BuildError("culprit runs on Linux only (this is %s)" % plat)
    return "py3-none-" + re.sub(r"[-.]", "_", plat)


def _metadata(proj):
    """The METADATA (PKG-INFO) text: core metadata 2.1, the README as the description."""
    out = ["Metadata-Version: 2.1", "Name: %s" % proj["name"], "Version: %s" % proj["version"],
           "Summary: %s" % proj["description"]]
    if proj.get("requires-python"):
        out.append("Requires-Python: %s" % proj["requires-python"])
    out += ["Classifier: %s" % c for c in proj.get("classifiers", [])]
    out += ["Requires-Dist: %s" % d for d in proj.get("dependencies", [])]
    body = ""
    readme = proj.get("readme")
    if readme:
        if not isinstance(readme, str) or not readme.endswith(".md"):
            raise BuildError("pyproject.toml: readme must be the path of a .md file")
        out.append("Description-Content-Type: text/markdown")
        body = _read_text(readme)
    return "\n".join(out) + "\n\n" + body


def _wheel_file(tag):
    return "Wheel-Version: 1.0\nGenerator: culprit_build\nRoot-Is-Purelib: false\nTag: %s\n" % tag


def _entry_points(proj):
    scripts = proj.get("scripts") or {}
    if not scripts:
        return None
    return "[console_scripts]\n" + "".join("%s = %s\n" % kv for kv in sorted(scripts.items()))


def _dist_info_files(proj, tag):
    """(name, bytes) of the .dist-info folder, RECORD aside."""
    files = [("METADATA", _metadata(proj).encode("utf-8")), ("WHEEL", _wheel_file(tag).encode("ascii"))]
    ep = _entry_points(proj)
    if ep:
        files.append(("entry_points.txt", ep.encode("utf-8")))
    return files


# ---- the native build -----------------------------------------------------------------------------------------


def _cuda_root():
    """The CUDA toolkit folder with include/cuda.h: CUDA_HOME when set (it must then be right), else the usual
    places, newest versioned folder first."""
    env = os.environ.get("CUDA_HOME")
    if env:
        if not os.path.isfile(os.path.join(env, "include", "cuda.h")):
            raise BuildError("CUDA_HOME is %s, which has no include/cuda.h; set it to the CUDA toolkit's folder "
                             "(12.4 or newer)" % env)
        return env
    versioned = sorted(glob.glob("/usr/local/cuda-*"), key=lambda p: [int(x) if x.isdigit() else -1
                                                                   for x in re.split(r"[-.]", p)], reverse=True)
    for d in ["/usr/local/cuda"] + versioned + ["/usr/lib/cuda"]:
        if os.path.isfile(os.path.join(d, "include", "cuda.h")):
            return d
    raise BuildError("the CUDA toolkit's headers (include/cuda.h, CUDA 12.4 or newer) were not found in "
                     "/usr/local/cuda, /usr/local/cuda-* or /usr/lib/cuda; install the CUDA toolkit (nvcc is "
                     "optional) and set CUDA_HOME to its folder")


def _check_cuda_version(root):
    with open(os.path.join(root, "include", "cuda.h"), encoding="latin-1") as f:
        m = re.search(r"^#define\s+CUDA_VERSION\s+(\d+)", f.read(), re.M)
    if m and int(m.group(1)) < CUDA_MIN:
        v = int(m.group(1))
        raise BuildError("the CUDA headers in %s are CUDA %d.%d; culprit needs 12.4 or newer (set CUDA_HOME to a "
                         "newer toolkit)" % (root, v // 1000, v % 1000 // 10))


def _tools():
    """cmake (its path), after checking it, the compilers and a build program are there."""
    cmake = shutil.which("cmake")
    if not cmake:
        raise BuildError("cmake is not on PATH; install CMake %d.%d or newer (Debian/Ubuntu: apt-get install "
                         "cmake); it is not taken from an index, the build works offline" % CMAKE_MIN)
    out = subprocess.run([cmake, "--version"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                         universal_newlines=True).stdout
    m = re.search(r"version (\d+)\.(\d+)", out)
    if not m or (int(m.group(1)), int(m.group(2))) < CMAKE_MIN:
        raise BuildError("%s is %s; culprit needs CMake %d.%d or newer" % (cmake, m.group(0) if m else "unknown",
                                                                          CMAKE_MIN[0], CMAKE_MIN[1]))
    for env, names, what in (("CC", ("cc", "gcc", "clang"), "C"), ("CXX", ("c++", "g++", "clang++"), "C++")):
        prog = os.environ.get(env)
        found = shutil.which(shlex.split(prog)[0]) if prog else next(filter(None, map(shutil.which, names)), None)
        if not found:
            raise BuildError("no %s compiler found (%s); install gcc and g++ (Debian/Ubuntu: apt-get install gcc "
                             "g++ make)" % (what, "%s=%s" % (env, prog) if prog else ", ".join(names)))
    if not os.environ.get("CMAKE_GENERATOR") and not shutil.which("make") and not shutil.which("ninja"):
        raise BuildError("neither make nor ninja is on PATH; install make (Debian/Ubuntu: apt-get install make)")
    return cmake


def _run(argv, env):
    _say("$ " + " ".join(shlex.quote(a) for a in argv))
    sys.stderr.flush()
    p = subprocess.run(argv, env=env, stdout=sys.stderr.fileno(), stderr=sys.stderr.fileno())
    if p.returncode != 0:
        raise BuildError("%s failed with status %d (its output is above)" % (" ".join(argv[:2]), p.returncode))


def _cache_value(build, name):
    try:
        with open(os.path.join(build, "CMakeCache.txt"), encoding="utf-8", errors="replace") as f:
            for line in f:
                if line.startswith(name + ":"):
                    return line.split("=", 1)[1].strip()
    except OSError:
        pass
    return ""


def _cmake_build(build):
    """Configures and builds the native parts into build (Release), printing CMake's output on stderr."""
    cmake = _tools()
    cuda = _cuda_root()
    _check_cuda_version(cuda)
    env = dict(os.environ)
    env["PATH"] = os.path.join(cuda, "bin") + os.pathsep + env.get("PATH", "")  # nvcc, when the toolkit has it
    configure = [cmake, "-S", ROOT, "-B", build, "-DCMAKE_BUILD_TYPE=Release", "-DCUDAToolkit_ROOT=" + cuda,
                 "-DCULPRIT_BUILD_TESTS=ON"]
    if not env.get("CMAKE_GENERATOR") and not shutil.which("make"):
        configure += ["-G", "Ninja"]
    configure += shlex.split(env.get("CMAKE_ARGS", ""))
    _say("configuring in %s (CUDA headers from %s)" % (build, cuda))
    _run(configure, env)
    targets = list(TARGETS)
    nvcc = _cache_value(build, "CMAKE_CUDA_COMPILER")
    if _cache_value(build, "CULPRIT_BUILD_GPU").upper() in ("ON", "1", "TRUE", "YES") and nvcc and \
            not nvcc.endswith("NOTFOUND"):
        targets += GPU_TARGETS
        _say("nvcc found (%s): the GPU demo is built too" % nvcc)
    else:
        _say("no nvcc: the wheel's `culprit demo` runs on the simulated driver only")
    argv = [cmake, "--build", build, "--target"] + targets
    if not env.get("CMAKE_BUILD_PARALLEL_LEVEL"):
        argv += ["-j", str(os.cpu_count() or 2)]
    _say("building %s" % ", ".join(targets))
    _run(argv, env)


def _native_files(build):
    """[(absolute path, path in the wheel)] of the native parts in the build tree build; BuildError naming what
    is missing."""
    out, missing = [], []
    for src, dst, required in NATIVE_FILES:
        found = sorted(p for p in glob.glob(os.path.join(build, src)) if os.path.isfile(p))
        if not found and required:
            missing.append(src)
        for p in found:
            name = dst + os.path.basename(p) if dst.endswith("/") else dst
            out.append((os.path.realpath(p), NATIVE + "/" + name))
    if missing:
        raise BuildError("the build tree %s lacks %s; build it first (./build.sh, or cmake --build %s --target "
                         "%s)" % (build, ", ".join(missing), build, " ".join(TARGETS)))
    return out


# ---- the Python package ---------------------------------------------------------------------------------------


def _package_files():
    """[(absolute path, path in the wheel)] of the whole package tree python/culprit (subpackages included),
    without bytecode."""
    top = os.path.join(ROOT, PACKAGE_SRC)
    out = []
    for d, dirs, files in os.walk(top):
        dirs[:] = sorted(x for x in dirs if x != "__pycache__" and x != "_native")
        for f in sorted(files):
            if f.endswith((".pyc", ".pyo")):
                continue
            p = os.path.join(d, f)
            out.append((p, "culprit/" + os.path.relpath(p, top).replace(os.sep, "/")))
    return out


# ---- writing archives -----------------------------------------------------------------------------------------


def _zip_time():
    """Entry time: SOURCE_DATE_EPOCH when set (reproducible wheels), else now."""
    t = int(os.environ.get("SOURCE_DATE_EPOCH", time.time()))
    return time.gmtime(max(t, 315532800))[:6]  # zip cannot say before 1980


def _record_line(name, data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode("ascii")
    return "%s,sha256=%s,%d" % (name, digest, len(data))


def _write_wheel(path, entries, proj, tag):
    """Writes the wheel at path: entries [(absolute path, name)], then the .dist-info with RECORD last. File modes
    go into the zip entries, so executables stay executable once installed."""
    when = _zip_time()
    dist_info = _dist_info(proj)
    record = []
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        def add(name, data, mode):
            info = zipfile.ZipInfo(name, when)
            info.external_attr = (0o100000 | mode) << 16  # a regular file with these permissions
            info.compress_type = zipfile.ZIP_DEFLATED
            z.writestr(info, data)
            record.append(_record_line(name, data))

        for src, name in entries:
            with open(src, "rb") as f:
                data = f.read()
            add(name, data, 0o755 if os.stat(src).st_mode & 0o111 else 0o644)
        for name, data in _dist_info_files(proj, tag):
            add(dist_info + "/" + name, data, 0o644)
        record.append(dist_info + "/RECORD,,")
        info = zipfile.ZipInfo(dist_info + "/RECORD", when)
        info.external_attr = (0o100644) << 16
        info.compress_type = zipfile.ZIP_DEFLATED
        z.writestr(info, "\n".join(record) + "\n")
    return len(record)


def _source_files():
    """The source tree's files, relative to ROOT: what git tracks plus untracked files it does not ignore (in a
    git checkout), else every file outside build folders and caches."""
    if os.path.exists(os.path.join(ROOT, ".git")) and shutil.which("git"):
        p = subprocess.run(["git", "-C", ROOT, "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                           stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        if p.returncode == 0:
            names = sorted(set(n for n in p.stdout.decode("utf-8", "surrogateescape").split("\0") if n))
            return [n for n in names if os.path.isfile(os.path.join(ROOT, n))]  # not files deleted since
    out = []
    for d, dirs, files in os.walk(ROOT):
        rel = os.path.relpath(d, ROOT)
        dirs[:] = sorted(x for x in dirs if x not in IGNORED_DIRS and not (rel == "." and x.startswith("build"))
                         and not x.endswith(".egg-info"))
        for f in sorted(files):
            if not f.endswith((".pyc", ".pyo")):
                out.append(os.path.normpath(os.path.join(rel, f)))
    return out


# ---- PEP 517 hooks --------------------------------------------------------------------------------------------


@_hook
def get_requires_for_build_wheel(config_settings=None):
    """Nothing: the backend is the standard library, and CMake and the compilers come from the system."""
    return []


@_hook
def get_requires_for_build_sdist(config_settings=None):
    return []


@_hook
def prepare_metadata_for_build_wheel(metadata_directory, config_settings=None):
    proj = _project()
    name = _dist_info(proj)
    d = os.path.join(metadata_directory, name)
    os.makedirs(d, exist_ok=True)
    for fname, data in _dist_info_files(proj, _tag()):
        with open(os.path.join(d, fname), "wb") as f:
            f.write(data)
    return name


@_hook
def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    """Builds the native parts with CMake in a temporary folder (or takes them from CULPRIT_BUILD_DIR) and writes
    the wheel: culprit/ (the Python package) and culprit/_native/{bin,lib} (the build)."""
    proj = _project()
    tag = _tag()
    wheel = "%s-%s-%s.whl" % (_dist_name(proj), proj["version"], tag)
    given = os.environ.get("CULPRIT_BUILD_DIR")
    tmp = None
    try:
        if given:
            build = os.path.abspath(given)  # pip runs the backend in the source tree: relative to its root
            if not os.path.isdir(build):
                raise BuildError("CULPRIT_BUILD_DIR is %s, which is not a folder" % given)
            _say("packaging the existing build tree %s (CULPRIT_BUILD_DIR) as it is; nothing is built" % build)
        else:
            build = tmp = tempfile.mkdtemp(prefix="culprit-build-")
            _cmake_build(build)
        entries = _package_files() + _native_files(build)
        os.makedirs(wheel_directory, exist_ok=True)
        n = _write_wheel(os.path.join(wheel_directory, wheel), entries, proj, tag)
    finally:
        if tmp:
            shutil.rmtree(tmp, ignore_errors=True)
    _say("wrote %s (%d files)" % (wheel, n))
    return wheel


@_hook
def build_sdist(sdist_directory, config_settings=None):
    """A .tar.gz of the source tree (tracked files, and untracked ones git does not ignore) with PKG-INFO."""
    proj = _project()
    base = "%s-%s" % (_dist_name(proj), proj["version"])
    name = base + ".tar.gz"
    files = _source_files()
    os.makedirs(sdist_directory, exist_ok=True)
    with tarfile.open(os.path.join(sdist_directory, name), "w:gz", format=tarfile.PAX_FORMAT) as tar:
        def norm(info):
            info.uid = info.gid = 0
            info.uname = info.gname = ""
            return info
        for rel in files:
            tar.add(os.path.join(ROOT, rel), arcname=base + "/" + rel.replace(os.sep, "/"), recursive=False,
                    filter=norm)
        data = _metadata(proj).encode("utf-8")
        info = tarfile.TarInfo(base + "/PKG-INFO")
        info.size, info.mode, info.mtime = len(data), 0o644, int(os.environ.get("SOURCE_DATE_EPOCH", time.time()))
        tar.addfile(info, io.BytesIO(data))
    _say("wrote %s (%d files)" % (name, len(files) + 1))
    return name
