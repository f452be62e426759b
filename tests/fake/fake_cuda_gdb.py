#!/usr/bin/env python3
"""A stand-in for cuda-gdb in batch mode over the simulated driver's GPU core dumps (tests/fakecuda/SPEC.md):
`fake_cuda_gdb.py -batch -nx -ex "target cudacore FILE" ...` prints what cuda-gdb prints of the exception, in its
words: the exception, the PC with the kernel and its source line, and the focus on the faulting thread.
FAKE_CUDA_GDB_CRASH=1 makes it die after the exception lines, as cuda-gdb 13.0 did on the H200."""
import os
import subprocess
import sys


def demangle(name):
    try:
        out = subprocess.run(["c++filt", name], capture_output=True, text=True, timeout=10).stdout.strip()
        return out or name
    except (OSError, subprocess.SubprocessError):
        return name


def main(argv):
    target = None
    for i, a in enumerate(argv):
        if a == "-ex" and i + 1 < len(argv) and argv[i + 1].startswith("target cudacore "):
            target = argv[i + 1][len("target cudacore "):]
    if not target:
        print("no cudacore target given", file=sys.stderr)
        return 1
    print("Opening GPU coredump: %s\n" % target)
    try:
        with open(target) as f:
            fields = dict(line.rstrip("\n").split(" ", 1) for line in f if " " in line)
    except OSError as e:
        print("%s: %s." % (target, e.strerror))
        return 1
    print("CUDA Exception: %s" % fields.get("exception", "?"))
    print("The exception was triggered at PC 0x7f0000001000  %s  (fake.cu:8)" % demangle(fields.get("kernel", "?")))
    sys.stdout.flush()
    if os.environ.get("FAKE_CUDA_GDB_CRASH") == "1":
        print("\n\nFatal signal: Aborted")
        sys.stdout.flush()
        os.abort()
    print("[Current focus set to CUDA kernel 0, grid 1, block (1,0,0), thread (3,0,0), device 0, sm 0, warp 0, "
          "lane 3]")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
