"""End-to-end check of Python launch lines: this script drives the simulated CUDA driver through ctypes (which
releases the GIL around each call, as torch does around a launch) with libculprit preloaded, makes the third
launch fault, and checks that the report names that launch with this file's line, inside the right function,
and the line where the error surfaced. Under CULPRIT_MODE=blocking the third launch call itself returns the
error; blocking mode takes that launch's frames when its synchronize fails (still inside the call) and keeps the
two launches before it, whose synchronize succeeded, without frames.

usage: python3 pyline_helper.py REPORT_DIR   (run with LD_PRELOAD=libculprit.so and the simulated driver on
LD_LIBRARY_PATH; FAKECUDA_FAULT=launch=3 in the environment)"""
import ctypes
import glob
import json
import os
import sys


def marker_line(tag):
    with open(__file__) as f:
        for n, text in enumerate(f, 1):
            if text.rstrip().endswith("# " + tag):
                return n
    raise SystemExit("marker %s missing" % tag)


def check(cond, msg):
    if not cond:
        print("FAIL: " + msg)
        sys.exit(1)


cu = ctypes.CDLL("libcuda.so.1")


def call(name, *args):
    rc = getattr(cu, name)(*args)
    return rc


def setup():
    check(call("cuInit", 0) == 0, "cuInit")
    dev = ctypes.c_int()
    check(call("cuDeviceGet", ctypes.byref(dev), 0) == 0, "cuDeviceGet")
    ctx = ctypes.c_void_p()
    check(call("cuDevicePrimaryCtxRetain", ctypes.byref(ctx), dev) == 0, "retain")
    check(call("cuCtxSetCurrent", ctx) == 0, "set current")
    mod = ctypes.c_void_p()
    check(call("cuModuleLoadData", ctypes.byref(mod), b"fakecubin:_Z4stepPfi,_Z6reducePfi") == 0, "module")
    fns = []
    for name in (b"_Z4stepPfi", b"_Z6reducePfi"):
        f = ctypes.c_void_p()
        check(call("cuModuleGetFunction", ctypes.byref(f), mod, name) == 0, "function")
        fns.append(f)
    return fns


def launch(f):
    u = ctypes.c_uint
    return call("cuLaunchKernel", f, u(1), u(1), u(1), u(32), u(1), u(1), u(0), ctypes.c_void_p(0),
                ctypes.c_void_p(0), ctypes.c_void_p(0))


class Model:
    def forward(self, fns, step):
        if step == 3:
            return launch(fns[1])  # PY-LAUNCH
        return launch(fns[0])


BLOCKING = os.environ.get("CULPRIT_MODE") == "blocking"


def train(fns):
    m = Model()
    for step in (1, 2, 3, 4):
        rc = m.forward(fns, step)
        if BLOCKING and step == 3:
            check(rc == 700, "in blocking mode the faulting launch must return the error, returned %d" % rc)
            return rc
        check(rc == 0, "launch %d" % step)
    return call("cuCtxSynchronize")  # PY-SURFACE


CYCLE_STEPS = 203  # the faulting launch (FAKECUDA_FAULT=launch=203): the same four lines launched from 50 times


def cycle_step(fns, step):
    k = step % 4
    if k == 0:
        return launch(fns[0])  # PY-C0
    if k == 1:
        return launch(fns[0])  # PY-C1
    if k == 2:
        return launch(fns[1])  # PY-C2
    return launch(fns[1])  # PY-C3


def cycle(rdir, fns):
    """Launches from the same four lines over and over (a training loop's shape): a launch's stacks are kept once
    per call chain and found again by their hashes; every launch in the report must still show its own line."""
    for step in range(1, CYCLE_STEPS + 1):
        if cycle_step(fns, step) != 0:
            break
    check(call("cuCtxSynchronize") != 0, "the scripted fault did not surface")
    reports = glob.glob(os.path.join(rdir, "culprit-%d.json" % os.getpid()))
    check(len(reports) == 1, "no report in %s" % rdir)
    rep = json.load(open(reports[0]))
    launches = [rep.get("culprit") or {}] + (rep.get("history") or [])
    check(launches[0].get("seq") == CYCLE_STEPS, "culprit %r" % launches[0].get("seq"))
    checked = 0
    for l in launches:
        py = l.get("python") or []
        if not l.get("seq"):
            continue
        check(len(py) > 2 and py[2]["function"] == "cycle_step", "launch %d frames %r" % (l["seq"], py[:3]))
        want = marker_line("PY-C%d" % (l["seq"] % 4))
        check(py[2]["line"] == want, "launch %d shows line %d, launched from line %d" % (l["seq"], py[2]["line"], want))
        checked += 1
    check(checked >= 4, "only %d launches listed" % checked)
    print("pyline cycle: %d launches, each with its own line" % checked)


def main():
    rdir = sys.argv[1]
    fns = setup()
    if len(sys.argv) > 2 and sys.argv[2] == "cycle":
        return cycle(rdir, fns)
    rc = train(fns)
    check(rc != 0, "the scripted fault did not surface (rc %d)" % rc)
    reports = glob.glob(os.path.join(rdir, "culprit-%d.json" % os.getpid()))
    check(len(reports) == 1, "no report in %s" % rdir)
    rep = json.load(open(reports[0]))
    check(rep.get("python_status", "").startswith("CPython"), "python_status %r" % rep.get("python_status"))
    c = rep.get("culprit") or {}
    check(c.get("seq") == 3, "culprit %r" % c.get("seq"))
    py = c.get("python") or []
    check(py, "culprit has no Python frames")
    me = os.path.basename(__file__)
    check(all(os.path.basename(f["file"]) == me for f in py), "frames from elsewhere: %r" % py)
    # innermost first: call -> launch -> Model.forward (the marked line) -> train -> main -> <module>
    names = [f["function"] for f in py]
    # qualified names (co_qualname) exist from CPython 3.11; 3.10 has the plain name
    method = "Model.forward" if sys.version_info >= (3, 11) else "forward"
    check(names == ["call", "launch", method, "train", "main", "<module>"], "frames %r" % names)
    check(py[2]["line"] == marker_line("PY-LAUNCH"), "forward frame %r, expected line %d" % (
        py[2], marker_line("PY-LAUNCH")))
    surf = (rep.get("error") or {}).get("python") or []
    hist = rep.get("history") or []
    seqs = [h.get("seq") for h in hist]
    check(seqs == [1, 2], "history %r, expected launches 1 and 2" % seqs)
    if BLOCKING:
        check([f["function"] for f in surf[:3]] == ["call", "launch", method] and surf[2].get("line") == marker_line(
            "PY-LAUNCH"), "surfacing frames %r: the error surfaces in the launch call" % surf[:3])
        check(all(not h.get("python") for h in hist), "launches whose synchronize succeeded kept frames: %r" % hist)
    else:
        check([f["function"] for f in surf[:2]] == ["call", "train"] and surf[1].get("line") == marker_line(
            "PY-SURFACE"), "surfacing frames %r" % surf[:2])
        check(all(h.get("python") for h in hist), "launches before the culprit lack their frames: %r" % hist)
    print("pyline: culprit launch and surfacing line found")


if __name__ == "__main__":
    main()
