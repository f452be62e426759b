#!/usr/bin/env python3
"""A stand-in for cuda-gdb in batch mode over the simulated driver's GPU core dumps (tests/fakecuda/SPEC.md):
`fake_cuda_gdb.py -batch -nx -ex "target cudacore FILE" ...` prints what cuda-gdb prints of the exception, in its
words: the exception, the PC with the kernel and its source line, and the focus on the faulting thread.
FAKE_CUDA_GDB_CRASH=1 makes it die after the exception lines, as cuda-gdb 13.0 did on the H200. A dump whose
faulting warp is gone ("faulting-warp 0") gets no focus line and nothing after it.
FAKE_CUDA_GDB_INSN="STG.E desc[UR8][R2.64+0x10],R5" also answers `x/i $errorpc` with that instruction and
`info registers` with the focus lane's registers, as cuda-gdb 13.0 prints them: R2:R3 holds the dump's arg0 (the
faulting launch's first parameter) plus FAKE_CUDA_GDB_OFFSET bytes; the lane's pc is the instruction after
errorpc (it made the faulting access), or, with FAKE_CUDA_GDB_MOVED=1, one before it (it is not the faulting
lane, as the focus of a warp-wide "Warp Illegal Address" was on the H200).
FAKE_CUDA_GDB_LANES=1 also answers `cuda lane N` and the `info registers` after it, as cuda-gdb 13.0 did on the
H200: lanes 0-7 of the warp are active, each at the instruction after errorpc, lane N's R2:R3 the address arg0 +
4 N (its own element, the instruction's immediate taken off), except lane FAKE_CUDA_GDB_LANE (default 5), whose
R2:R3 is arg0 plus FAKE_CUDA_GDB_OFFSET; the focus lane (3) answers "CUDA focus unchanged.", lanes 8-31 are not
active and the switch fails (the focus lane's registers follow).

`fake_cuda_gdb.py -nx -batch -p PID -ex "info cuda kernels"` attaches to a live process of the simulated driver:
it prints cuda-gdb's kernel table with the kernels FAKECUDA_RUNNING/running-PID lists (the launches the driver
keeps running, tests/fakecuda/SPEC.md), or "No CUDA kernels.", then detaches. A PID that does not exist gets
gdb's "ptrace: No such process.". FAKE_CUDA_GDB_ATTACH=refuse answers as gdb does where ptrace is refused (Yama),
=fail prints nothing useful and exits 1, =gone answers as for a process that ended meanwhile, =garbled prints a table no reader knows, =hang never answers (the caller's time limit must stop it).
FAKE_CUDA_GDB_DELAY=S takes S seconds to attach, as cuda-gdb reading a torch process's libraries does (7.6-9 s on
an H100); a process that ended meanwhile gets gdb's "The program no longer exists.".
FAKE_CUDA_GDB_LOG=FILE appends the pid of each attach to FILE, and with a delay, "PID start T" and "PID end T"
(CLOCK_MONOTONIC seconds) around it."""
import os
import re
import subprocess
import sys
import time


def demangle(name):
    try:
        out = subprocess.run(["c++filt", name], capture_output=True, text=True, timeout=10).stdout.strip()
        return out or name
    except (OSError, subprocess.SubprocessError):
        return name


def note(line):
    """Appends line to FAKE_CUDA_GDB_LOG, when it is set."""
    log = os.environ.get("FAKE_CUDA_GDB_LOG")
    if log:
        with open(log, "a") as f:
            f.write(line + "\n")


def attach(pid):
    """`-p PID`: the live process's running kernels, as `info cuda kernels` prints them."""
    note("%d" % pid)
    how = os.environ.get("FAKE_CUDA_GDB_ATTACH", "")
    if how == "hang":
        sys.stdout.flush()
        while True:
            time.sleep(3600)
    if not os.path.exists("/proc/%d" % pid):
        print("ptrace: No such process.")
        return 1
    if how == "refuse":
        print("Could not attach to process.  If your uid matches the uid of the target process, check the setting "
              "of /proc/sys/kernel/yama/ptrace_scope, or try again as the root user.  For more details, see "
              "/etc/sysctl.d/10-ptrace.conf")
        print("ptrace: Operation not permitted.")
        return 1
    if how == "gone":
        print("ptrace: No such process.")  # as gdb says of a process that ended while it attached
        return 1
    if how == "garbled":  # a table of a form this reader does not know
        print("  Kernel Parent Dev Grid Status                SMs Mask GridDim  BlockDim Invocation ")
        print("*      0      -   0    1 Active 0x1 <2x1x1> <128x1x1> vec_fill")
        return 0
    if how == "fail":
        print("warning: something went wrong")
        return 1
    print("Attaching to process %d" % pid)
    delay = float(os.environ.get("FAKE_CUDA_GDB_DELAY") or 0)
    if delay > 0:
        note("%d start %.3f" % (pid, time.monotonic()))
        time.sleep(delay)
        note("%d end %.3f" % (pid, time.monotonic()))
        if not os.path.exists("/proc/%d" % pid):
            print("\nProgram terminated with signal SIGTERM, Terminated.\nThe program no longer exists.")
            return 1
    rows = []
    try:
        with open(os.path.join(os.environ.get("FAKECUDA_RUNNING", "/nonexistent"), "running-%d" % pid)) as f:
            rows = [l.split() for l in f.read().splitlines() if l.strip()]
    except OSError:
        pass
    if not rows:
        print("No CUDA kernels.")
    else:
        print("  Kernel Parent Dev Grid Status                SMs Mask GridDim  BlockDim Invocation ")
        for i, (name, grid, block, dev) in enumerate(rows):
            print("%s %6d %6s %3s %4d Active 0x%032x (%s) (%s) %s(p=0x7f0000000000, n=20) " % (
                "*" if i == 0 else " ", i, "-", dev, i + 1, 1, grid, block, name))
    print("[Inferior 1 (process %d) detached]" % pid)
    return 0


def main(argv):
    for i, a in enumerate(argv):
        if a == "-p" and i + 1 < len(argv):
            return attach(int(argv[i + 1]))
    target = None
    for i, a in enumerate(argv):
        if a == "-ex" and i + 1 < len(argv) and argv[i + 1].startswith("target cudacore "):
            target = argv[i + 1][len("target cudacore "):]
    if not target:
        print("no cudacore target given", file=sys.stderr)
        return 1
    print("Opening GPU coredump: %s\n" % target)
    try:
        with open(target, "rb") as f:
            data = f.read()
    except OSError as e:
        print("%s: %s." % (target, e.strerror))
        return 1
    # the simulated driver's dump is an ELF file whose note section holds the text (tests/fakecuda/SPEC.md)
    start = data.find(b"fakecuda-coredump\n")
    text = data[start:].split(b"\0", 1)[0].decode("utf-8", "replace") if start >= 0 else ""
    fields = dict(line.split(" ", 1) for line in text.splitlines() if " " in line)
    print("CUDA Exception: %s" % fields.get("exception", "?"))
    print("The exception was triggered at PC 0x7f0000001000  %s  (fake.cu:8)" % demangle(fields.get("kernel", "?")))
    sys.stdout.flush()
    if os.environ.get("FAKE_CUDA_GDB_CRASH") == "1":
        print("terminate called after throwing an instance of 'std::out_of_range'")
        print("  what():  vector::_M_range_check: __n (which is 4294967294) >= this->size() (which is 64)")
        print("\n\nFatal signal: Aborted")
        sys.stdout.flush()
        os.abort()
    if fields.get("faulting-warp", "1") == "0":
        return 0  # the faulting warp is not in the dump: no focus, nothing to show of a thread
    print("[Current focus set to CUDA kernel 0, grid 1, block (1,0,0), thread (3,0,0), device 0, sm 0, warp 0, "
          "lane 3]")
    insn = os.environ.get("FAKE_CUDA_GDB_INSN")
    if insn:
        errorpc = 0x7f0000001000
        pc = errorpc - 0x100 if os.environ.get("FAKE_CUDA_GDB_MOVED") == "1" else errorpc + 0x10
        addr = int(fields.get("arg0", "0x0"), 16) + int(os.environ.get("FAKE_CUDA_GDB_OFFSET", "0"))
        print("*> 0x%x <_Z9write_oobPii+400>:\t%s" % (errorpc, insn))
        if os.environ.get("FAKE_CUDA_GDB_LANES") == "1":
            arg0 = int(fields.get("arg0", "0x0"), 16)
            imm = re.search(r"\+0x([0-9a-fA-F]+)\]", insn)
            imm = int(imm.group(1), 16) if imm else 0
            registers(pc, errorpc, arg0 + 4 * 3 - imm)  # the focus lane 3: its own element
            lanes(argv, errorpc, arg0, imm, addr)
        else:
            registers(pc, errorpc, addr)
    return 0


def registers(pc, errorpc, addr):
    """`info registers` of a lane whose R2:R3 holds addr."""
    print("pc             0x%-16x  0x%x <write_oob(int*, int)+%d>" % (pc, pc, pc - errorpc + 400))
    print("errorpc        0x%-16x  0x%x <write_oob(int*, int)+400>" % (errorpc, errorpc))
    for r in range(8):
        v = {2: addr & 0xffffffff, 3: addr >> 32}.get(r, 0)
        print("%-14s 0x%-16x  %d" % ("R%d" % r, v, v))
    for r in range(4):
        print("%-14s 0x%-16x  %d" % ("UR%d" % r, 0, 0))


def lanes(argv, errorpc, arg0, imm, bad_addr):
    """The answers to `cuda lane N` + `info registers`, in the order asked."""
    bad = int(os.environ.get("FAKE_CUDA_GDB_LANE", "5"))
    own = lambda n: (arg0 + 4 * n - imm) & 0xffffffffffffffff
    for i, a in enumerate(argv):
        m = re.match(r"cuda lane (\d+)$", a) if i and argv[i - 1] == "-ex" else None
        if not m:
            continue
        n = int(m.group(1))
        if n == 3:
            print("CUDA focus unchanged.")
            registers(errorpc + 0x10, errorpc, own(3))
        elif n >= 8:
            print("Invalid coordinates requested. CUDA focus unchanged.")
            registers(errorpc + 0x10, errorpc, own(3))
        else:
            print("[Switching focus to CUDA kernel 0, grid 1, block (1,0,0), thread (%d,0,0), device 0, sm 0, "
                  "warp 0, lane %d]" % (n, n))
            print("0x%016x\t8\t    p[i] = 1;" % (errorpc + 0x10))
            addr = bad_addr if n == bad else own(n)
            registers(errorpc + 0x10, errorpc, addr)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
