"""`pip install ./python` works offline with the system's setuptools (no build isolation, no index), and the
installed package works under the library."""

import json
import os
import shutil
import subprocess
import sys

import pytest

from conftest import PKG_DIR, HERE


def _have(module, min_version=None):
    code = "import %s, sys; v = %s.__version__; print(v)" % (module, module)
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    if p.returncode != 0:
        return False
    if min_version is None:
        return True
    try:
        return int(p.stdout.strip().split(".")[0]) >= min_version
    except ValueError:
        return True


def test_pip_install_offline(run_py, tmp_path):
    if not _have("pip"):
        pytest.skip("pip is not installed for %s (Debian: python3-pip)" % sys.executable)
    if not _have("setuptools", 61):
        pytest.skip("setuptools >= 61 (pyproject [project] tables) is not installed for %s "
                    "(Debian: python3-setuptools)" % sys.executable)
    if not _have("wheel"):
        pytest.skip("the wheel package, which this setuptools needs to build a wheel, is not installed for %s "
                    "(Debian: python3-wheel)" % sys.executable)
    # Build from a copy: setuptools writes build/ and *.egg-info beside the sources.
    src = tmp_path / "src"
    shutil.copytree(PKG_DIR, src, ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__"))
    target = tmp_path / "site"
    env = dict(os.environ, PIP_NO_CACHE_DIR="1", PIP_DISABLE_PIP_VERSION_CHECK="1", PIP_NO_INPUT="1",
               PYTHONDONTWRITEBYTECODE="1")
    env.pop("PYTHONPATH", None)
    p = subprocess.run([sys.executable, "-m", "pip", "install", "--no-build-isolation", "--no-index", "--no-deps",
                        "--target", str(target), str(src)], capture_output=True, text=True, env=env, timeout=100)
    assert p.returncode == 0, "pip failed:\n%s\n%s" % (p.stdout, p.stderr)
    assert (target / "culprit" / "__init__.py").exists()
    assert (target / "culprit" / "__main__.py").exists()
    assert list(target.glob("culprit-0.1.0.dist-info"))

    r = run_py("""
        import json, culprit, fakegpu
        with culprit.blocking():
            mode = culprit.mode()
        print(json.dumps([culprit.__file__, mode, culprit.mode()]))
    """, pythonpath=[str(target), HERE]).ok()
    path, inside, after = json.loads(r.out)
    assert path.startswith(str(target))
    assert (inside, after) == ("blocking", "record")
    r = run_py(args=["-m", "culprit"], pythonpath=[str(target)])
    assert r.rc == 0 and "library loaded and active" in r.out
