"""The launch path's host cost on the CPU, over the simulated driver: a Python program launches kernels through
ctypes (which releases the GIL around each call, as PyTorch does) from a chosen Python depth, cycling through a
chosen number of call lines, with libculprit preloaded. It prints what CULPRIT_STATS says of culprit's time per
launch, and with --callgrind the instructions culprit adds per launch (valgrind's count with the library against
without it: exact and repeatable where timings on a shared machine are not; it leaves cache misses out).
No GPU is needed; the numbers are this machine's, for comparing one build of the launch path with another (the
GPU's numbers are bench.py's).

With --params the kernel declares its two parameters (a pointer and an int) and every launch passes them, so
culprit keeps them in the record; without, the launches pass none (as before the records kept parameters).

usage: python3 bench/host_path.py [--build DIR] [--launches N] [--depth D] [--lines L] [--mode M] [--callgrind]
                                  [--params] [--env VAR=VAL ...]"""
import argparse
import ctypes
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import simrun  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def child(launches, depth, lines, params):
    """The measured program: N launches, each from DEPTH Python frames below the loop, at one of LINES lines."""
    cu = ctypes.CDLL("libcuda.so.1")
    assert cu.cuInit(0) == 0
    dev, ctx, mod, fn = ctypes.c_int(), ctypes.c_void_p(), ctypes.c_void_p(), ctypes.c_void_p()
    assert cu.cuDeviceGet(ctypes.byref(dev), 0) == 0
    assert cu.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev) == 0
    assert cu.cuCtxSetCurrent(ctx) == 0
    image = b"fakecubin:_Z4stepPfi(8,4)" if params else b"fakecubin:_Z4stepPfi"
    assert cu.cuModuleLoadData(ctypes.byref(mod), image) == 0
    assert cu.cuModuleGetFunction(ctypes.byref(fn), mod, b"_Z4stepPfi") == 0
    launch = cu.cuLaunchKernel
    u, null = ctypes.c_uint(1), ctypes.c_void_p(0)
    buf, n = ctypes.c_void_p(0x7f0000001000), ctypes.c_int(1024)
    args = (ctypes.c_void_p * 2)(ctypes.addressof(buf), ctypes.addressof(n))
    kp = ctypes.cast(args, ctypes.c_void_p) if params else null
    b32 = ctypes.c_uint(32)

    def at_line(k):
        # one call site per line: the launch's Python line differs from line to line, as in a real program
        if k == 0:
            return launch(fn, u, u, u, b32, u, u, u, null, kp, null)
        if k == 1:
            return launch(fn, u, u, u, b32, u, u, u, null, kp, null)
        if k == 2:
            return launch(fn, u, u, u, b32, u, u, u, null, kp, null)
        return launch(fn, u, u, u, b32, u, u, u, null, kp, null)

    def down(d, k):
        return down(d - 1, k) if d > 0 else at_line(k)

    sync = cu.cuCtxSynchronize
    for i in range(launches):
        down(depth, i % lines)
        if i % 64 == 63:
            sync()
    sync()


def run(build, launches, depth, lines, params, env_extra, preload, callgrind):
    env = dict(env_extra, CULPRIT_STATS="1") if preload else env_extra
    p, ir = simrun.run_child(build, __file__, [launches, depth, lines, int(params)], env, preload, callgrind,
                             "host_path")
    return next((l for l in p.stderr.splitlines() if "culprit: stats:" in l), ""), ir


def main():
    if len(sys.argv) == 6 and sys.argv[1] == "--child":
        child(int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]))
        return
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--launches", type=int, default=200000)
    ap.add_argument("--depth", type=int, default=20, help="Python frames between the loop and the launch")
    ap.add_argument("--lines", type=int, default=4, choices=range(1, 5), help="call lines cycled through (1-4)")
    ap.add_argument("--mode", default="record")
    ap.add_argument("--callgrind", action="store_true", help="also count instructions (valgrind), with and without")
    ap.add_argument("--params", action="store_true", help="launches pass parameters whose layout the kernel declares")
    ap.add_argument("--env", nargs="*", default=[], help="more VAR=VAL for the library")
    a = ap.parse_args()
    if a.launches < 1 or a.depth < 0:
        ap.error("--launches must be positive and --depth not negative")
    extra = {"CULPRIT_MODE": a.mode}
    extra.update(kv.split("=", 1) for kv in a.env)
    build = os.path.abspath(a.build)
    stats, ir_with = run(build, a.launches, a.depth, a.lines, a.params, extra, True, a.callgrind)
    m = re.search(r"([\d.]+) us per launch in culprit \(native stack ([\d.]+), Python frames ([\d.]+)", stats)
    print("host_path: %d launches, Python depth %d, %d lines, mode %s%s" % (a.launches, a.depth, a.lines, a.mode,
                                                                         ", with parameters" if a.params else ""))
    if m:
        print("stats: %s us per launch in culprit (native stack %s, Python frames %s)" % m.groups())
    else:
        print("stats: none printed (%s)" % (stats or "no stats line"))
    if a.callgrind:
        _, ir_without = run(build, a.launches, a.depth, a.lines, a.params, {}, False, True)
        if ir_with is None or ir_without is None:
            print("callgrind: no count read")
        else:
            print("callgrind: %.0f instructions per launch added by culprit (%d with, %d without)"
                  % ((ir_with - ir_without) / a.launches, ir_with, ir_without))


if __name__ == "__main__":
    main()
