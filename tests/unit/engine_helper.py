"""A kernel launched by a thread that runs no Python (as PyTorch's autograd engine launches backward's kernels)
faults. The launch record must carry the frames of the Python thread that waited on it in C, with the line that
started the work, marked as that thread's (python_thread, flag python-of-waiting-thread). Two ways it surfaces:

  engine  the engine thread's own synchronize (in blocking mode its launch) returns the error while the Python
          thread still waits
  caller  the engine finished; the Python thread synchronizes later from another line (as loss.item() after
          backward() returned), so only the frames kept at launch time can name the backward() line
  autograd  a second Python thread starts the engine from a module under torch/autograd/ while the main thread
          waits elsewhere: the thread inside torch.autograd is the waiting one, not the older main thread
  twice   one persistent engine thread serves two calls made back to back from two lines of one function,
          through the same helper (as two backward() calls both wait inside torch's one run_backward line); the
          faulty launch belongs to the second call, so the second line must be named, not the first

  stats   twice again, in a child with CULPRIT_STATS=1: its summary line must count each engine launch once as
          looking for the waiting thread's frames and finding them, by its clock or a check within a call and by a
          new walk after the waiting thread moved between the two calls

usage: python3 engine_helper.py LIBENGINE REPORT_DIR engine|caller|autograd|twice|stats   (libculprit preloaded, the
simulated driver on LD_LIBRARY_PATH, FAKECUDA_FAULT=launch=2; twice and stats: launch=5)"""
import ctypes
import glob
import json
import os
import re
import subprocess
import sys
import tempfile
import threading


def check(cond, msg):
    if not cond:
        print("FAIL: " + msg)
        sys.exit(1)


def marker_line(tag):
    with open(__file__) as f:
        for n, text in enumerate(f, 1):
            if text.rstrip().endswith("# " + tag):
                return n
    raise SystemExit("marker missing")


def this_report():
    """This process's report, which must exist."""
    reports = glob.glob(os.path.join(sys.argv[2], "culprit-%d.json" % os.getpid()))
    check(len(reports) == 1, "no report")
    with open(reports[0]) as f:
        return json.load(f)


def backward(lib, sync):
    return lib.run_engine(sync)  # ENGINE-WAIT


def item(lib):
    return lib.sync_now()  # CALLER-SYNC


def idle(stop):
    stop.wait()  # another Python thread, waiting on something else: it must not be taken for the waiting one


AUTOGRAD_MODULE = """
def run_backward(lib):
    return lib.run_engine(0)
"""


def autograd_module():
    """A module whose file lies under .../torch/autograd/, as torch's own backward() entry does."""
    root = tempfile.mkdtemp(prefix="culprit-engine.")
    os.makedirs(os.path.join(root, "torch", "autograd"))
    path = os.path.join(root, "torch", "autograd", "graph_stub.py")
    with open(path, "w") as f:
        f.write(AUTOGRAD_MODULE)
    namespace = {}
    exec(compile(AUTOGRAD_MODULE, path, "exec"), namespace)
    return namespace["run_backward"], path


def worker_backward(lib, result):
    run_backward, _ = autograd_module()
    result.append(run_backward(lib))  # WORKER-BACKWARD
    result.append(threading.get_ident())


def run_backward(lib, n):
    return lib.engine_run(n)  # the one line every call waits at, like torch's _engine_run_backward


def two_steps(lib):
    first = run_backward(lib, 3)  # FIRST-CALL
    second = run_backward(lib, 3)  # SECOND-CALL
    return first, second


def main_twice(lib):
    rc = two_steps(lib)
    check(rc == (0, 0), "the engine's launches returned %r" % (rc,))
    rc = item(lib)
    check(rc == 700, "the caller's synchronize returned %r, expected 700" % rc)
    c = this_report().get("culprit") or {}
    check(c.get("seq") == 5, "culprit seq %r, expected launch #5 (the second call's second)" % c.get("seq"))
    me = os.path.basename(__file__)
    lines = [f.get("line") for f in c.get("python") or [] if os.path.basename(f.get("file", "")) == me]
    check(marker_line("SECOND-CALL") in lines and marker_line("FIRST-CALL") not in lines,
          "the launch's lines %r: expected the second call's line %d" % (lines, marker_line("SECOND-CALL")))
    print("engine/twice: the second call's line is named")


def main_stats():
    env = dict(os.environ, CULPRIT_STATS="1")
    res = subprocess.run([sys.executable, __file__, sys.argv[1], sys.argv[2], "twice"], env=env,
                         capture_output=True, text=True, timeout=50)
    check(res.returncode == 0, "the twice run failed (%d):\n%s%s" % (res.returncode, res.stdout, res.stderr))
    lines = [l for l in res.stderr.splitlines() if "stats:" in l]
    check(len(lines) == 1, "expected one summary line, got:\n" + res.stderr)
    m = re.search(r"(\d+) launches, .* (\d+) launches with a waiting thread's frames, (\d+) looked for them at "
                  r"[\d.]+ us \((\d+) by its clock, (\d+) checked, (\d+) walked, (\d+) none\)", lines[0])
    check(m, "the summary does not say how the waiting thread's frames were known: %r" % lines[0])
    launches, found, tried, clock, checked, walked, none = (int(g) for g in m.groups())
    # every launch is the engine's, which runs no Python: each looks once, and finds the waiting thread
    check(launches == 6 and tried == launches, "%d launches, %d looked for a waiting thread's frames: expected 6 and 6"
          % (launches, tried))
    check(found == tried and none == 0, "every engine launch must find the waiting thread's frames: %r" % lines[0])
    check(walked >= 2, "the waiting thread moved between the two calls, its frames must be walked again: %r" % lines[0])
    check(clock + checked >= 1, "within one call the frames are known again without a walk: %r" % lines[0])
    print("engine/stats: %d launches looked, %d by clock, %d checked, %d walked, %d none" % (
        tried, clock, checked, walked, none))


def main():
    scenario = sys.argv[3]
    if scenario == "stats":
        return main_stats()
    lib = ctypes.CDLL(sys.argv[1])
    if scenario == "autograd":
        return main_autograd(lib)
    if scenario == "twice":
        return main_twice(lib)
    stop = threading.Event()
    other = threading.Thread(target=idle, args=(stop,))
    other.start()
    try:
        if scenario == "engine":
            rc = backward(lib, 1)
            check(rc == 700, "the engine thread's synchronize returned %r, expected 700" % rc)
        else:
            rc = backward(lib, 0)
            check(rc == 0, "the engine's launches returned %r" % rc)
            rc = item(lib)
            check(rc == 700, "the caller's synchronize returned %r, expected 700" % rc)
    finally:
        stop.set()
        other.join()
    rep = this_report()
    c = rep.get("culprit") or {}
    check(c.get("seq") == 2, "culprit %r (it must be the engine's launch #2)" % ({k: c.get(k) for k in (
        "seq", "kernel")},))
    me = os.path.basename(__file__)
    frames = c.get("python") or []
    hit = [f for f in frames if os.path.basename(f.get("file", "")) == me and f.get("line") == marker_line(
        "ENGINE-WAIT")]
    check(hit and hit[0].get("function") == "backward", "the launch's frames %r lack %s:%d" % (
        frames, me, marker_line("ENGINE-WAIT")))
    check(c.get("python_thread") == threading.main_thread().ident,
          "python_thread %r, expected the main thread %r" % (c.get("python_thread"), threading.main_thread().ident))
    check("python-of-waiting-thread" in (c.get("flags") or []), "flags %r" % c.get("flags"))
    check(c.get("thread") != threading.main_thread().native_id, "the launch is not the engine thread's")
    if scenario == "caller":
        err = (rep.get("error") or {}).get("python") or []
        check(err and err[0].get("line") == marker_line("CALLER-SYNC"), "error frames %r" % err)
    print("engine/%s: the waiting Python line is the launch's" % scenario)


def main_autograd(lib):
    result = []
    worker = threading.Thread(target=worker_backward, args=(lib, result))
    worker.start()
    worker.join()  # the main thread waits here, in C, and is the oldest Python thread
    check(result and result[0] == 0, "the engine's launches returned %r" % result)
    rc = item(lib)
    check(rc == 700, "the caller's synchronize returned %r, expected 700" % rc)
    c = this_report().get("culprit") or {}
    check(c.get("seq") == 2, "culprit seq %r" % c.get("seq"))
    check(c.get("python_thread") == result[1], "python_thread %r, expected the worker %r (main %r)" % (
        c.get("python_thread"), result[1], threading.main_thread().ident))
    frames = c.get("python") or []
    files = [f.get("file", "") for f in frames]
    check(files and files[0].endswith(os.path.join("torch", "autograd", "graph_stub.py")), "frames %r" % frames)
    me = os.path.basename(__file__)
    check(any(os.path.basename(f.get("file", "")) == me and f.get("line") == marker_line("WORKER-BACKWARD")
              for f in frames), "the worker's line is missing from %r" % frames)
    print("engine/autograd: the thread inside torch.autograd is the waiting one")


if __name__ == "__main__":
    main()
