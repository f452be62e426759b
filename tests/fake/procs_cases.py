#!/usr/bin/env python3
"""Scenario tests of what a program does to its own process, over the simulated CUDA driver (progs/procs.c):
it closes every descriptor it did not open and opens its own, or forks children that never launch; and of what
culprit knows when it could not see or keep a fault: a report it could not write, a program it was not loaded in.
culprit uses no descriptor it does not own, a child that does no CUDA work does no culprit work, and a fault
culprit met is never called "no sticky CUDA error".

Same harness and command line as cases.py (`--build BUILD CASE`, `--list`, `--check-list NAME...`).
"""

import os
import re
import resource
import shutil
import signal
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cases as h  # noqa: E402  (the harness: running programs, loading and checking reports)
import hang_cases  # noqa: E402  (hang reports)

h.CASES.clear()  # this file's cases only (hang_cases registered its own on import)
case, check = h.case, h.check


def same_output(base, res, what):
    """The program's exit status and stdout are the same with culprit, but the line counting descriptors and
    threads (culprit's watcher is a thread; libunwind, which it opens, keeps a pipe)."""
    def mine(out):
        return [l for l in out.splitlines() if b"descriptor(s) above 2" not in l]
    check(res.rc == base.rc and mine(res.out) == mine(base.out), "%s: the program behaved otherwise with culprit\n"
          "--- without\n%s--- with\n%s" % (what, base.out_text, res.describe()))


def fds_line(res):
    m = re.search(rb"procs: (\d+) descriptor\(s\) above 2 after the first launches, (\d+) thread\(s\)", res.out)
    check(m, "the program did not count its descriptors\n" + res.describe())
    return int(m.group(1)), int(m.group(2))


@case("closefds_pipe")
def _(b):
    # A program that closes fds 3..1023 after its first launches and opens a pipe of its own used to get the
    # watcher's pipe numbers: the watcher ate what the program wrote into it (a program reading it back blocked
    # forever) and spun on the closed descriptor. culprit now holds no descriptor in the program at all.
    argv = [b.prog("procs"), "closefds-pipe", "-"]
    env = {"FAKECUDA_FAULT": "launch=5"}
    base = h.plain(b, argv, env)
    check(b"read back the pipe's message" in base.out and base.rc == 1, "scenario broken\n" + base.describe())
    rdir = b.newdir("reports")
    res = h.preloaded(b, argv, env, rdir)
    same_output(base, res, "preloaded")
    check(fds_line(res)[1] > fds_line(base)[1], "no watcher thread was started: the case proves nothing\n" +
          res.describe())
    # culprit still works after the program closed everything: the fault at launch 5 is named
    rep = h.load_report(rdir)
    h.check_error(rep, 700, "cuCtxSynchronize")
    check(5 in h.named_seqs(rep), "launch #5 is not named: %r" % h.named_seqs(rep))
    # under culprit run too (its own relay pipes are stdout and stderr here, which the program keeps)
    rdir = b.newdir("reports")
    res = h.cli_run(b, argv, env, rdir)
    same_output(base, res, "culprit run")
    check("the kernel that faulted: step" in res.err_text, "no verdict under culprit run\n" + res.describe())


@case("stdout_closed")
def _(b):
    # A program started with stdout closed: after its first launches (a stack taken for each, and for its
    # allocation) fd 1 is still closed; libunwind's pipe, opened at the first stack, used to take its number.
    res = h._execute(b, [b.prog("procs"), "stdout-closed", "-"], dict(h._base_env(b, {}), LD_PRELOAD=b.lib,
                     CULPRIT_DIR=b.newdir("reports")), b.newdir("preload"), preexec=lambda: os.close(1),
                     stdout=None)
    check(b"procs: fd 1 is still closed" in res.err, "culprit took fd 1\n" + res.describe())


@case("closefds_signal")
def _(b):
    # The same program, then 16 files opened and the report signal sent: the handler used to write its wake-up
    # byte into whichever file took the watcher's old pipe number. The files stay empty, and the report is
    # written all the same (the watcher is woken without a descriptor).
    env = {"FAKECUDA_FAULT": "launch=5"}
    files = b.newdir("files")
    argv = [b.prog("procs"), "closefds-signal", files]
    rdir = b.newdir("reports")
    res = h.preloaded(b, argv, env, rdir)
    check(b"the files are untouched" in res.out, "culprit wrote into the program's files\n" + res.describe())
    hangs = hang_cases.hang_files(rdir)
    check(len(hangs) == 1, "the report signal gave %d hang reports, not 1\n%s" % (len(hangs), res.describe()))
    rep = hang_cases.read_json(hangs[0])
    hang_cases.check_trigger(rep, signal.SIGUSR1)
    check(b"procs: synchronized" not in res.out and res.rc == 1, "the program did not carry on to its fault\n" +
          res.describe())
    faults = [f for f in h.report_files(rdir) if not f.endswith("-hang.json")]
    check(len(faults) == 1, "fault reports: %r" % faults)
    h.check_error(hang_cases.read_json(faults[0]), 700, "cuCtxSynchronize")


@case("fork_child_quiet")
def _(b):
    # A child forked after the first launches that never launches does no culprit work: its fork handlers write
    # next to nothing (they used to empty megabytes of tables page by page: about 8 ms and 750 page faults a
    # child, paid by every program that forks per task), it starts no thread and writes no report, neither at
    # its fork nor at its exit. Page faults are counted, not timed: the child counts them first thing.
    argv = [b.prog("procs"), "child-threads"]
    base = h.plain(b, argv)
    rdir = b.newdir("reports")
    res = h.preloaded(b, argv, {"CULPRIT_HANG_TIMEOUT": "60"}, rdir)
    check(res.rc == 0 and b"child status 0" in res.out, "the child\n" + res.describe())
    check(fds_line(res)[1] > fds_line(base)[1], "no watcher in the parent: the case proves nothing\n" +
          res.describe())

    def faults(r):
        m = re.search(rb"procs: page faults at fork (\d+)", r.out)
        check(m, "the child did not count its page faults\n" + r.describe())
        return int(m.group(1))
    check(faults(res) < faults(base) + 300, "the child's fork handlers took %d page faults (%d without culprit)\n%s" %
          (faults(res), faults(base), res.describe()))
    check(b"the child runs 1 thread(s)" in res.out, "the child started a thread\n" + res.describe())
    h.no_report(rdir, "a healthy parent and a child that never launched")
    # many children: all of them end, none leaves anything behind
    res = h.preloaded(b, [b.prog("procs"), "forks", "50"], {}, rdir)
    check(res.rc == 0 and b"50 children ended" in res.out, "the forks\n" + res.describe())
    h.no_report(rdir, "50 children that never launched")


# Launch #10 runs for 300 ms from the moment it is queued and faults when it completes: the program returns 0 from
# main before, and culprit finds the fault at exit (exit_cases.py's SLOW_FAULT).
SLOW_FAULT = {"FAKECUDA_HANG": "launch=10,ms=300", "FAKECUDA_FAULT": "launch=10"}


def file_limit(size):
    """A preexec function that sets the file size limit (ulimit -f) to size bytes."""
    def set_limit():
        resource.setrlimit(resource.RLIMIT_FSIZE, (size, size))
    return set_limit


@case("report_unwritten")
def _(b):
    # A fault whose report could not be written (a full disk, ulimit -f) used to end in "no sticky CUDA error", and
    # --error-exitcode did not fire; under ulimit -f the write raised SIGXFSZ, which killed the program (status
    # 153) and left the temporary file. The write now fails with EFBIG, the library prints the verdict whole and
    # says why no file holds it, and culprit run counts the fault.
    argv = [b.prog("linked"), "exits", "return0"]
    rdir = b.newdir("reports")
    res = h._execute(b, argv, dict(h._base_env(b, SLOW_FAULT), LD_PRELOAD=b.lib, CULPRIT_DIR=rdir),
                     b.newdir("preload"), preexec=file_limit(1024))
    check(res.rc == 0, "the program did not end as it would have (SIGXFSZ?)\n" + res.describe())
    check("could not write the report into %s: File too large" % rdir in res.err_text and
          "it surfaced later, in exit" in res.err_text, "no verdict and no reason\n" + res.describe())
    check(not os.listdir(rdir), "files left in the report directory: %r" % os.listdir(rdir))
    for opts, rc in (((), 0), (("--error-exitcode", "9"), 9)):
        rdir = b.newdir("reports")
        cmd = [b.cli, "run", "--dir", rdir] + list(opts) + ["--"] + argv
        res = h._execute(b, cmd, h._base_env(b, SLOW_FAULT), b.newdir("cli"), preexec=file_limit(1024))
        check(res.rc == rc and "no sticky CUDA error" not in res.err_text and
              "met a sticky CUDA error whose report culprit could not write" in res.err_text and
              "exited with status 0 although a kernel faulted" in res.err_text and
              "it surfaced later, in exit" in res.err_text,
              "culprit run %s: the unwritten fault was not counted\n%s" % (" ".join(opts), res.describe()))
        check(not os.path.exists(rdir) or not os.listdir(rdir), "files left: %r" % os.listdir(rdir))
    # the program's own SIGXFSZ is left as it was: ignored, it stays ignored and the write still fails cleanly
    rdir = b.newdir("reports")

    def limit_and_ignore():
        file_limit(1024)()
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    res = h._execute(b, argv, dict(h._base_env(b, SLOW_FAULT), LD_PRELOAD=b.lib, CULPRIT_DIR=rdir),
                     b.newdir("preload"), preexec=limit_and_ignore)
    check(res.rc == 0 and "File too large" in res.err_text, "SIGXFSZ ignored\n" + res.describe())


@case("setuid_off")
def _(b):
    # A set-user-ID program runs without LD_PRELOAD (the loader's secure mode): culprit run said "no sticky CUDA
    # error" of a program that faulted. It now says culprit was off in it, and why. Needs root to give the copy
    # another owner, and a file system that honours set-user-ID.
    if os.geteuid() != 0:
        raise h.CaseSkipped("needs root to make a set-user-ID program of another owner")
    d = b.newdir("setuid")
    if os.statvfs(d).f_flag & os.ST_NOSUID:
        raise h.CaseSkipped("the test directory's file system ignores set-user-ID")
    prog = os.path.join(d, "linked")
    shutil.copy(b.prog("linked"), prog)
    os.chmod(d, 0o755)
    os.chown(prog, 65534, -1)
    os.chmod(prog, 0o4755)
    res = h.cli_run(b, [prog, "legacy", "ctxsync", "5"], {"FAKECUDA_FAULT": "launch=4"}, b.newdir("reports"))
    check("culprit was off in %s: it is set-user-ID, and the dynamic loader ignores LD_PRELOAD" % prog in
          res.err_text and "no sticky CUDA error" not in res.err_text, "the set-user-ID program\n" + res.describe())
    # set-user-ID to the caller itself is no secure mode: culprit runs in it
    os.chown(prog, 0, -1)
    os.chmod(prog, 0o4755)
    res = h.cli_run(b, [prog, "legacy", "ctxsync", "5"], {"FAKECUDA_FAULT": "launch=4"}, b.newdir("reports"))
    check("the kernel that faulted: step" in res.err_text, "set-user-ID to root, run by root\n" + res.describe())


@case("preload_dropped")
def _(b):
    # A program started without culprit's LD_PRELOAD (`env -u LD_PRELOAD prog`) faulted, and culprit run said
    # "no sticky CUDA error". Each process that launches with culprit loaded now leaves an empty file in the run
    # directory at its first launch; culprit run counts and removes them, and with none says it saw no kernel
    # launched, rather than vouch for a program it never watched.
    prog = [b.prog("linked"), "legacy", "ctxsync", "5"]
    rdir = b.newdir("reports")
    os.rmdir(rdir)  # culprit run makes it, and removes it when it holds nothing
    res = h.cli_run(b, ["env", "-u", "LD_PRELOAD"] + prog, {"FAKECUDA_FAULT": "launch=4"}, rdir)
    check(res.rc == 1 and "culprit: no sticky CUDA error in env, and culprit saw no kernel launched in it" in
          res.err_text and "env -u LD_PRELOAD" in res.err_text, "LD_PRELOAD dropped\n" + res.describe())
    check(not os.path.exists(rdir), "the run directory was left: %r" % (os.path.exists(rdir) and os.listdir(rdir)))
    # a healthy program culprit watched: the plain line, and nothing left behind
    res = h.cli_run(b, prog, {}, rdir)
    lines = h.culprit_lines(res)
    check(res.rc == 0 and "culprit: no sticky CUDA error in %s" % prog[0] in lines, "healthy\n" + res.describe())
    check(not os.path.exists(rdir), "the run directory was left: %r" % (os.path.exists(rdir) and os.listdir(rdir)))
    # a fault: the report, and no marker beside it
    rdir = b.newdir("reports")
    res = h.cli_run(b, prog, {"FAKECUDA_FAULT": "launch=4"}, rdir)
    check("the kernel that faulted: step" in res.err_text, "fault\n" + res.describe())
    check([f for f in os.listdir(rdir) if f.startswith(".")] == [], "left in the directory: %r" % os.listdir(rdir))


if __name__ == "__main__":
    sys.exit(h.main())
