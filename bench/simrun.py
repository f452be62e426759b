"""Running a benchmark's child program over the simulated driver (bench/host_path.py, bench/alloc_path.py): the
environment (the simulated driver on the library path, the program's own CULPRIT_* variables left out), the
library preloaded or not, and under valgrind's callgrind when instructions are to be counted."""
import os
import re
import subprocess
import sys
import tempfile


def run_child(build, script, args, env_extra, preload, callgrind, name):
    """Runs `python3 SCRIPT --child ARGS...`; returns (the finished process, instructions counted or None). With
    preload, libculprit.so is preloaded and reports go to a temporary folder; env_extra is added either way."""
    env = dict(os.environ)
    for k in list(env):
        if k.startswith("CULPRIT_") or k == "LD_PRELOAD":
            del env[k]
    env["LD_LIBRARY_PATH"] = os.path.join(build, "lib", "culprit-sim")
    env.update(env_extra)
    tmp = tempfile.mkdtemp(prefix="culprit-%s." % name)
    if preload:
        env["LD_PRELOAD"] = os.path.join(build, "lib", "libculprit.so")
        env["CULPRIT_DIR"] = tmp
    cmd = [sys.executable, script, "--child"] + [str(a) for a in args]
    if callgrind:
        cmd = ["valgrind", "--tool=callgrind", "--callgrind-out-file=" + os.path.join(tmp, "callgrind.out")] + cmd
    p = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if p.returncode != 0:
        raise SystemExit("%s: the program failed (%d):\n%s" % (name, p.returncode, p.stderr[-2000:]))
    ir = None
    if callgrind:
        m = re.search(r"Collected\s*:\s*(\d+)", p.stderr)
        ir = int(m.group(1)) if m else None
    return p, ir
