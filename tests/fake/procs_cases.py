#!/usr/bin/env python3
"""Scenario tests of what a program does to its own process, over the simulated CUDA driver (progs/procs.c):
it closes every descriptor it did not open and opens its own, or forks children that never launch. culprit holds
no descriptor in the program, and a child that does no CUDA work does no culprit work.

Same harness and command line as cases.py (`--build BUILD CASE`, `--list`, `--check-list NAME...`).
"""

import os
import re
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


if __name__ == "__main__":
    sys.exit(h.main())
