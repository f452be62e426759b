"""A kernel launched by a thread that runs no Python (as PyTorch's autograd engine launches backward's kernels)
faults while the Python thread waits in C: the report must carry that Python thread's stack, with the line
that started the work, under python_threads.

usage: python3 engine_helper.py LIBENGINE REPORT_DIR   (libculprit preloaded, the simulated driver on
LD_LIBRARY_PATH, FAKECUDA_FAULT=launch=2)"""
import ctypes
import glob
import json
import os
import sys


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


def backward(lib):
    return lib.run_engine()  # ENGINE-WAIT


def main():
    lib = ctypes.CDLL(sys.argv[1])
    rc = backward(lib)
    check(rc == 700, "the engine thread's synchronize returned %r, expected 700" % rc)
    reports = glob.glob(os.path.join(sys.argv[2], "culprit-%d.json" % os.getpid()))
    check(len(reports) == 1, "no report")
    rep = json.load(open(reports[0]))
    c = rep.get("culprit") or {}
    check(c.get("seq") == 2 and not c.get("python"), "culprit %r (it must be the engine's launch #2, no Python)" % (
        {k: c.get(k) for k in ("seq", "kernel", "python")},))
    threads = rep.get("python_threads") or []
    check(threads, "no python_threads in the report")
    frames = threads[0].get("python") or []
    me = os.path.basename(__file__)
    hit = [f for f in frames if os.path.basename(f.get("file", "")) == me and f.get("line") == marker_line(
        "ENGINE-WAIT")]
    check(hit and hit[0].get("function") == "backward", "the waiting thread's frames %r lack %s:%d" % (
        frames, me, marker_line("ENGINE-WAIT")))
    print("engine: the waiting Python line is in the report")


if __name__ == "__main__":
    main()
