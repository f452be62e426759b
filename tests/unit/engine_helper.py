"""A kernel launched by a thread that runs no Python (as PyTorch's autograd engine launches backward's kernels)
faults. The launch record must carry the frames of the Python thread that waited on it in C, with the line that
started the work, marked as that thread's (python_thread, flag python-of-waiting-thread). Two ways it surfaces:

  engine  the engine thread's own synchronize returns the error while the Python thread still waits
  caller  the engine finished; the Python thread synchronizes later from another line (as loss.item() after
          backward() returned), so only the frames kept at launch time can name the backward() line

usage: python3 engine_helper.py LIBENGINE REPORT_DIR engine|caller   (libculprit preloaded, the simulated
driver on LD_LIBRARY_PATH, FAKECUDA_FAULT=launch=2)"""
import ctypes
import glob
import json
import os
import sys
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


def backward(lib, sync):
    return lib.run_engine(sync)  # ENGINE-WAIT


def item(lib):
    return lib.sync_now()  # CALLER-SYNC


def idle(stop):
    stop.wait()  # another Python thread, waiting on something else: it must not be taken for the waiting one


def main():
    lib = ctypes.CDLL(sys.argv[1])
    scenario = sys.argv[3]
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
    reports = glob.glob(os.path.join(sys.argv[2], "culprit-%d.json" % os.getpid()))
    check(len(reports) == 1, "no report")
    rep = json.load(open(reports[0]))
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


if __name__ == "__main__":
    main()
