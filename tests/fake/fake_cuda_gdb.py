#!/usr/bin/env python3
"""A stand-in for cuda-gdb in batch mode over the simulated driver's GPU core dumps (tests/fakecuda/SPEC.md):
`fake_cuda_gdb.py -batch -nx -ex "target cudacore FILE" ...` prints what cuda-gdb prints of the exception, in its
words: the exception, the PC with the kernel and its source line, and the focus on the faulting thread.
FAKE_CUDA_GDB_CRASH=1 makes it die after the exception lines, as cuda-gdb 13.0 did on the H200.
FAKE_CUDA_GDB_INSN="STG.E desc[UR8][R2.64+0x10],R5" also answers `x/i $errorpc` with that instruction and
`info registers` with the focus lane's registers, as cuda-gdb 13.0 prints them: R2:R3 holds the dump's arg0 (the
faulting launch's first parameter) plus FAKE_CUDA_GDB_OFFSET bytes; the lane's pc is the instruction after
errorpc (it made the faulting access), or, with FAKE_CUDA_GDB_MOVED=1, one before it (it is not the faulting
lane, as the focus of a warp-wide "Warp Illegal Address" was on the H200)."""
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
    insn = os.environ.get("FAKE_CUDA_GDB_INSN")
    if insn:
        errorpc = 0x7f0000001000
        pc = errorpc - 0x100 if os.environ.get("FAKE_CUDA_GDB_MOVED") == "1" else errorpc + 0x10
        addr = int(fields.get("arg0", "0x0"), 16) + int(os.environ.get("FAKE_CUDA_GDB_OFFSET", "0"))
        print("*> 0x%x <_Z9write_oobPii+400>:\t%s" % (errorpc, insn))
        print("pc             0x%-16x  0x%x <write_oob(int*, int)+%d>" % (pc, pc, pc - errorpc + 400))
        print("errorpc        0x%-16x  0x%x <write_oob(int*, int)+400>" % (errorpc, errorpc))
        for r in range(8):
            v = {2: addr & 0xffffffff, 3: addr >> 32}.get(r, 0)
            print("%-14s 0x%-16x  %d" % ("R%d" % r, v, v))
        for r in range(4):
            print("%-14s 0x%-16x  %d" % ("UR%d" % r, 0, 0))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
