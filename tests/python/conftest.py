"""Fixtures of the Python package's tests: run a child interpreter with or without libculprit.so preloaded,
over the simulated driver (tests/fakecuda), with the package from python/ on its path.

The build is found through CULPRIT_BUILD_DIR (CTest sets it) or <repo>/build. The preload has to be in the
environment when the interpreter starts, so every test that needs the library runs a child process.
"""

import os
import subprocess
import sys
import textwrap

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
PKG_DIR = os.path.join(REPO, "python")
CHILD_TIMEOUT = 60

# The package itself, for the tests that need no library (argument checks).
sys.path.insert(0, PKG_DIR)


def build_dir():
    return os.environ.get("CULPRIT_BUILD_DIR") or os.path.join(REPO, "build")


def library_paths():
    """(libculprit.so, simulated driver folder), or a skip when they are not built (a failure under CTest)."""
    b = build_dir()
    lib = os.path.join(b, "lib", "libculprit.so")
    sim = os.path.join(b, "lib", "culprit-sim")
    if not os.path.exists(lib) or not os.path.exists(os.path.join(sim, "libcuda.so.1")):
        msg = "libculprit.so or the simulated driver not built in %s (set CULPRIT_BUILD_DIR)" % b
        if os.environ.get("CULPRIT_BUILD_DIR"):
            pytest.fail(msg)
        pytest.skip(msg)
    return lib, sim


class Child:
    """What a child interpreter did: rc, out, err (text)."""

    def __init__(self, proc):
        self.rc = proc.returncode
        self.out = proc.stdout
        self.err = proc.stderr

    def ok(self):
        assert self.rc == 0, "child failed with %s\n--- stdout\n%s\n--- stderr\n%s" % (self.rc, self.out, self.err)
        return self

    def culprit_lines(self, prefix):
        return [l for l in self.err.splitlines() if l.startswith(prefix)]


@pytest.fixture
def run_py(tmp_path):
    """run_py(code, preload=True, env=None, args=None, pythonpath=None) runs `python -c code` (dedented) or,
    with args, `python args...`; CULPRIT_DIR is tmp_path/reports; the fake driver is on LD_LIBRARY_PATH."""

    def run(code=None, preload=True, env=None, args=None, pythonpath=None):
        e = {k: v for k, v in os.environ.items()
             if not k.startswith(("CULPRIT_", "FAKECUDA_")) and k not in ("LD_PRELOAD", "PYTHONPATH")}
        e["PYTHONPATH"] = os.pathsep.join(pythonpath or [PKG_DIR, HERE])
        e["PYTHONDONTWRITEBYTECODE"] = "1"
        e["CULPRIT_DIR"] = str(tmp_path / "reports")
        # Reports in these tests must name the exact launch: a breadcrumb after every launch (precise density).
        e["CULPRIT_CRUMB_EVERY"] = "1"
        if preload:
            lib, sim = library_paths()
            e["LD_PRELOAD"] = lib
            e["LD_LIBRARY_PATH"] = sim
        if env:
            e.update(env)
        argv = [sys.executable] + (args if args is not None else ["-c", textwrap.dedent(code)])
        proc = subprocess.run(argv, env=e, cwd=str(tmp_path), capture_output=True, text=True,
                              timeout=CHILD_TIMEOUT)
        return Child(proc)

    return run


# ---- a file whose every test was skipped ---------------------------------------------------------------------
# pytest exits 0 when every test of a file was skipped (no torch here, no Lightning there), and CTest would count
# the file as Passed. With nothing passed or failed and something skipped, the run exits 77 instead, the code
# CTest's SKIP_RETURN_CODE takes as "skipped" (tests/python/CMakeLists.txt): the skip shows.
SKIP_EXIT_CODE = 77
_outcomes = {"passed": 0, "failed": 0, "skipped": 0}


def pytest_runtest_logreport(report):
    if report.failed:
        _outcomes["failed"] += 1
    elif report.skipped:
        _outcomes["skipped"] += 1
    elif report.passed and report.when == "call":
        _outcomes["passed"] += 1


def pytest_collectreport(report):
    # a module skipped as a whole (pytest.importorskip at its top) is skipped at collection
    if report.failed:
        _outcomes["failed"] += 1
    elif report.skipped:
        _outcomes["skipped"] += 1


def pytest_sessionfinish(session, exitstatus):
    # 0: all went well; 5: nothing collected, as when the module itself was skipped
    if exitstatus in (0, 5) and not _outcomes["passed"] and not _outcomes["failed"] and _outcomes["skipped"]:
        session.exitstatus = SKIP_EXIT_CODE
