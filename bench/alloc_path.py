"""What recording an allocation costs, on the CPU, over the simulated driver: a Python program allocates and frees
device memory through ctypes (cuMemAlloc then cuMemFree, as a program without a caching allocator does) from a
chosen Python depth, with and without libculprit preloaded, each in processes of its own, and prints the time per
allocation-and-free pair (the median of the repetitions) and the difference; with --callgrind also the
instructions culprit adds per pair (valgrind's count, exact and repeatable where timings on a shared machine are
not). The allocation site is a native stack (up to 16 frames) and the Python frames; --env CULPRIT_STACK_DEPTH=0
leaves the native stack out. No GPU is needed; the numbers are this machine's and the simulated driver's.

usage: python3 bench/alloc_path.py [--build DIR] [--pairs N] [--depth D] [--live L] [--reps R] [--callgrind]
                                   [--env VAR=VAL ...]"""
import argparse
import ctypes
import os
import re
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import simrun  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def child(pairs, depth, live):
    """The measured program: LIVE allocations kept, then PAIRS allocate-and-free pairs DEPTH Python frames below
    the loop; prints the nanoseconds the pairs took."""
    cu = ctypes.CDLL("libcuda.so.1")
    assert cu.cuInit(0) == 0
    dev, ctx = ctypes.c_int(), ctypes.c_void_p()
    assert cu.cuDeviceGet(ctypes.byref(dev), 0) == 0
    assert cu.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev) == 0
    assert cu.cuCtxSetCurrent(ctx) == 0
    alloc, free = cu.cuMemAlloc_v2, cu.cuMemFree_v2
    free.argtypes = [ctypes.c_uint64]
    p = ctypes.c_uint64()
    keep = []
    for _ in range(live):
        assert alloc(ctypes.byref(p), ctypes.c_size_t(4096)) == 0
        keep.append(p.value)
    size = ctypes.c_size_t(256)
    ref = ctypes.byref(p)

    def pair():
        alloc(ref, size)
        free(p.value)

    def down(d):
        return down(d - 1) if d > 0 else loop()

    def loop():
        t0 = time.perf_counter_ns()
        for _ in range(pairs):
            pair()
        return time.perf_counter_ns() - t0

    print("ns %d" % down(depth))


def run(build, pairs, depth, live, env_extra, preload, callgrind):
    p, ir = simrun.run_child(build, __file__, [pairs, depth, live], env_extra, preload, callgrind, "alloc_path")
    return int(re.search(r"^ns (\d+)$", p.stdout, re.M).group(1)), ir


def main():
    if len(sys.argv) == 5 and sys.argv[1] == "--child":
        child(int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]))
        return
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--pairs", type=int, default=100000)
    ap.add_argument("--depth", type=int, default=20, help="Python frames between the loop and the calls")
    ap.add_argument("--live", type=int, default=1000, help="allocations kept live beside the pairs")
    ap.add_argument("--reps", type=int, default=5, help="processes per configuration (the median is shown)")
    ap.add_argument("--callgrind", action="store_true", help="also count instructions (valgrind), with and without")
    ap.add_argument("--env", nargs="*", default=[], help="more VAR=VAL for the library")
    a = ap.parse_args()
    if a.pairs < 1 or a.depth < 0 or a.live < 0 or a.reps < 1:
        ap.error("--pairs and --reps must be positive, --depth and --live not negative")
    extra = dict(kv.split("=", 1) for kv in a.env)
    build = os.path.abspath(a.build)
    without, with_ = [], []
    for _ in range(a.reps):                 # alternated, so drifts of a shared machine hit both alike
        without.append(run(build, a.pairs, a.depth, a.live, {}, False, False)[0] / a.pairs)
        with_.append(run(build, a.pairs, a.depth, a.live, extra, True, False)[0] / a.pairs)
    m0, m1 = statistics.median(without), statistics.median(with_)
    print("alloc_path: %d cuMemAlloc+cuMemFree pairs, Python depth %d, %d allocations live, %d processes each%s"
          % (a.pairs, a.depth, a.live, a.reps, (" (" + " ".join(a.env) + ")") if a.env else ""))
    print("time: %.2f us per pair without culprit, %.2f us with: +%.2f us (runs without: %s; with: %s)" % (
        m0 / 1000, m1 / 1000, (m1 - m0) / 1000, " ".join("%.2f" % (x / 1000) for x in without),
        " ".join("%.2f" % (x / 1000) for x in with_)))
    if a.callgrind:
        # instructions per pair as the slope between N and 2N pairs, so start-up and exit cancel out
        n = min(a.pairs, 10000)
        slope = []
        for preload in (True, False):
            _, ir1 = run(build, n, a.depth, a.live, extra if preload else {}, preload, True)
            _, ir2 = run(build, 2 * n, a.depth, a.live, extra if preload else {}, preload, True)
            slope.append(None if ir1 is None or ir2 is None else (ir2 - ir1) / n)
        if None in slope:
            print("callgrind: no count read")
        else:
            print("callgrind: %.0f instructions per pair with culprit, %.0f without: +%.0f" % (
                slope[0], slope[1], slope[0] - slope[1]))

if __name__ == "__main__":
    main()
