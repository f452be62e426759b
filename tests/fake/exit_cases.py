#!/usr/bin/env python3
"""Scenario tests of culprit's last look over the simulated CUDA driver: faults no call the program made
returned to it, found before the process exits or a context goes away, on every context, waiting a bounded time
(CULPRIT_EXIT_WAIT, `culprit run --exit-wait`) for work still running; and `culprit run --error-exitcode`.

Same harness and command line as cases.py (`--build BUILD CASE`, `--list`, `--check-list NAME...`).
"""

import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cases as h  # noqa: E402  (the harness: running programs, loading and checking reports)

h.CASES.clear()  # this file's cases only
case, check = h.case, h.check
STEP = h.STEP
LINKED_SRC = os.path.join(h.PROG_SRC, "linked.c")

# Launch #10 runs for 300 ms from the moment it is queued and faults when it completes: the program returns from
# main long before, as a real program that never synchronizes does before its GPU got to the faulty kernel.
SLOW_FAULT = {"FAKECUDA_HANG": "launch=10,ms=300", "FAKECUDA_FAULT": "launch=10"}
FAULTED_0 = "exited with status 0 although a kernel faulted"


def expect_exit_report(rep, seq, tag, cli=True):
    h.check_error(rep, 700, "exit")
    check(seq in h.named_seqs(rep), "the faulty launch #%d is not named: %r" % (seq, h.named_seqs(rep)))
    if cli:  # file:line come from `culprit run`'s symbolization
        who = rep.get("culprit") or (rep.get("candidates") or [{}])[0]
        h.expect_frame(who.get("stack"), LINKED_SRC, h.marker_line(LINKED_SRC, tag), "the launch stack")


@case("exit_pending_fault")
def _(b):
    argv = [b.prog("linked"), "exits", "return0"]
    base = h.plain(b, argv, SLOW_FAULT)
    check(base.rc == 0 and b"returning without synchronizing" in base.out, "scenario broken\n" + base.describe())
    # Preloaded: the process still exits 0 with the same output, and the report names the launch.
    rdir = b.newdir("reports")
    res = h.preloaded(b, argv, SLOW_FAULT, rdir)
    h.same_as_plain(base, res, "preloaded", exact_stderr=False)
    expect_exit_report(h.load_report(rdir), 10, "return0", cli=False)
    # culprit run passes the 0 through and says plainly that a kernel faulted; --error-exitcode changes it.
    rdir = b.newdir("reports")
    res = h.cli_run(b, argv, SLOW_FAULT, rdir)
    h.same_as_plain(base, res, "culprit run", exact_stderr=False)
    check(FAULTED_0 in res.err_text, "culprit run did not say the command exited 0 although a kernel faulted\n" +
          res.describe())
    expect_exit_report(h.load_report(rdir), 10, "return0")
    rdir = b.newdir("reports")
    res = h.cli_run(b, argv, SLOW_FAULT, rdir, opts=("--error-exitcode", "9"))
    check(res.rc == 9 and "exiting with 9 (--error-exitcode)" in res.err_text,
          "--error-exitcode 9 did not make culprit run exit 9\n" + res.describe())
    check(res.out == base.out, "stdout differs under --error-exitcode\n" + res.describe())
    # A command that fails on its own keeps its status: --error-exitcode is only for a 0 that hides a fault.
    argv_fail = [b.prog("linked"), "legacy", "exit"]
    env = {"FAKECUDA_FAULT": "launch=10"}
    rdir = b.newdir("reports")
    res = h.cli_run(b, argv_fail, env, rdir, opts=("--error-exitcode", "9"))
    check(res.rc == 3 and FAULTED_0 not in res.err_text, "a command's own status 3 was changed\n" + res.describe())


@case("exit_wait_bound")
def _(b):
    # The wait is bounded: with CULPRIT_EXIT_WAIT=0 (one round of queries) the kernel still running is not
    # waited for and nothing is reported; a launch that never completes holds the exit for the wait at most.
    argv = [b.prog("linked"), "exits", "return0"]
    base = h.plain(b, argv, SLOW_FAULT)
    for env, opts in ((dict(SLOW_FAULT, CULPRIT_EXIT_WAIT="0"), ()), (SLOW_FAULT, ("--exit-wait", "0"))):
        rdir = b.newdir("reports")
        res = h.cli_run(b, argv, env, rdir, opts) if opts else h.preloaded(b, argv, env, rdir)
        h.same_as_plain(base, res, "exit wait 0 %s" % (opts,), exact_stderr=False)
        h.no_report(rdir, "exit wait 0 %s" % (opts,))
    hung = {"FAKECUDA_HANG": "launch=10"}
    base = h.plain(b, argv, hung)
    rdir = b.newdir("reports")
    t0 = time.monotonic()
    res = h.cli_run(b, argv, hung, rdir, opts=("--exit-wait", "0.5"))
    took = time.monotonic() - t0
    h.same_as_plain(base, res, "a hung launch at exit", exact_stderr=False)
    h.no_report(rdir, "a hung launch at exit")
    # Not a timing measurement: the run would last the harness's whole limit if the wait were not bounded.
    check(took < h.RUN_TIMEOUT / 2, "the exit waited %.1f s for a launch that never completes" % took)
    # A slow healthy kernel at exit is waited for and is not a fault.
    slow = {"FAKECUDA_HANG": "launch=10,ms=200"}
    base = h.plain(b, argv, slow)
    rdir = b.newdir("reports")
    res = h.cli_run(b, argv, slow, rdir)
    h.same_as_plain(base, res, "a slow healthy kernel at exit", exact_stderr=False)
    h.no_report(rdir, "a slow healthy kernel at exit")
    check(FAULTED_0 not in res.err_text, "a healthy run was said to have faulted\n" + res.describe())


@case("exit_other_context")
def _(b):
    # The faulty work is on device 1's context; device 0's is current at exit: every context is looked at.
    argv = [b.prog("linked"), "exits", "otherctx"]
    env = dict(SLOW_FAULT)
    base = h.plain(b, argv, env)
    check(base.rc == 0, "scenario broken\n" + base.describe())
    rdir = b.newdir("reports")
    res = h.cli_run(b, argv, env, rdir)
    h.same_as_plain(base, res, "culprit run", exact_stderr=False)
    rep = h.load_report(rdir)
    expect_exit_report(rep, 10, "otherctx")
    who = rep.get("culprit") or (rep.get("candidates") or [{}])[0]
    check(who.get("device") == 1, "the named launch is not on device 1: %r" % who.get("device"))


@case("exit_unwrapped_thread")
def _(b):
    # A worker thread meets the error in a call culprit does not wrap (as cuBLAS does on PyTorch's autograd
    # thread) and the main thread, with no context current, fails: found at exit all the same. (The simulated
    # GPU runs one launch ahead, so launch #9 faults when #10 is queued; the library's default breadcrumb density
    # puts none among 10 launches, so it runs ahead the same way with culprit as without.)
    argv = [b.prog("linked"), "exits", "thread"]
    env = {"FAKECUDA_FAULT": "launch=9", "FAKECUDA_RUN_AHEAD": "1", "CULPRIT_CRUMB_EVERY": "", "CULPRIT_MARK_BUDGET": "0"}
    base = h.plain(b, argv, env)
    check(base.rc == 1 and b"cuEventCreate failed (700)" in base.out, "scenario broken\n" + base.describe())
    for via in ("preloaded", "culprit run"):
        rdir = b.newdir("reports")
        res = h.preloaded(b, argv, env, rdir) if via == "preloaded" else h.cli_run(b, argv, env, rdir)
        h.same_as_plain(base, res, via, exact_stderr=False)
        rep = h.load_report(rdir)
        expect_exit_report(rep, 9, "thread", cli=via != "preloaded")
        check(FAULTED_0 not in res.err_text, "%s: the status 1 was called 0\n%s" % (via, res.describe()))


@case("exit_fork_child")
def _(b):
    # A forked child that launched nothing asks the driver nothing at exit (its inherited CUDA state is not its
    # own), even with a slow faulty kernel of the parent's unfinished: no wait there, no report from it.
    argv = [b.prog("linked"), "legacy", "forkidle"]
    env = {"FAKECUDA_HANG": "launch=4,ms=200", "FAKECUDA_FAULT": "launch=4", "FAKECUDA_TRACE": "1"}
    rdir = b.newdir("reports")
    child_err = os.path.join(b.newdir("child"), "stderr")
    res = h.preloaded(b, argv + ["4"], dict(env, CHILD_STDERR=child_err), rdir)
    check(res.rc == 1 and b"child exited with status 1" in res.out, "scenario broken\n" + res.describe())
    with open(child_err, errors="replace") as f:
        calls = [l for l in f.read().splitlines() if l.startswith("fakecuda:")]
    check(not calls, "the forked child called the driver: %r" % calls[:5])
    files = [os.path.basename(f) for f in h.report_files(rdir)]
    check(files == ["culprit-%d.json" % res.pid], "expected the parent's report alone, found %s" % files)
    h.check_error(h.load_report(rdir), 700, "cuCtxSynchronize")


@case("exit_dlopened_driver")
def _(b):
    # The driver is opened with dlopen (as PyTorch opens it); at exit it is finalized with the other libraries
    # (after which it answers CUDA_ERROR_DEINITIALIZED): the last look runs among the program's exit handlers,
    # registered at the first launch, so it asks while the driver still answers.
    argv = [b.prog("dlsym"), "return0"]
    base = h.plain(b, argv, SLOW_FAULT)
    check(base.rc == 0, "scenario broken\n" + base.describe())
    rdir = b.newdir("reports")
    res = h.cli_run(b, argv, SLOW_FAULT, rdir)
    h.same_as_plain(base, res, "culprit run", exact_stderr=False)
    rep = h.load_report(rdir)
    h.check_error(rep, 700, "exit")
    check(10 in h.named_seqs(rep), "the faulty launch #10 is not named: %r" % h.named_seqs(rep))


@case("exit_bad_options")
def _(b):
    # Bad values are refused with one sentence and exit status 2, before anything runs; a bad CULPRIT_EXIT_WAIT
    # turns culprit off for the process, which then runs as without it.
    argv = [b.prog("linked"), "exits", "return0"]
    for opt, val, want in (("--exit-wait", "-1", "--exit-wait must be seconds"),
                           ("--exit-wait", "2s", "--exit-wait must be seconds"),
                           ("--exit-wait", "1.2345", "--exit-wait must be seconds"),
                           ("--error-exitcode", "256", "--error-exitcode must be an exit status"),
                           ("--error-exitcode", "x", "--error-exitcode must be an exit status")):
        rdir = b.newdir("reports")
        res = h.cli_run(b, argv, SLOW_FAULT, rdir, opts=(opt, val))
        check(res.rc == 2 and want in res.err_text and not res.out,
              "%s %s was not refused as bad usage\n%s" % (opt, val, res.describe()))
    base = h.plain(b, argv, SLOW_FAULT)
    rdir = b.newdir("reports")
    res = h.preloaded(b, argv, dict(SLOW_FAULT, CULPRIT_EXIT_WAIT="soon"), rdir)
    check(res.rc == base.rc and res.out == base.out and "CULPRIT_EXIT_WAIT='soon' is not valid" in res.err_text,
          "a bad CULPRIT_EXIT_WAIT did not turn culprit off with one line\n" + res.describe())
    h.no_report(rdir, "culprit off by a bad CULPRIT_EXIT_WAIT")


if __name__ == "__main__":
    sys.exit(h.main())
