#!/usr/bin/env python3
"""Scenario tests of `culprit run`'s output watch over the simulated CUDA driver: device asserts on the
program's stdout or stderr tied to the verdict and narrowing it (Triton's form through its Python file, a graph
replay's node), output passed on byte for byte (partial lines, bytes that are not UTF-8, large output, a closed
reader, a terminal), and the command's own signals and closed streams. The harness is cases.py's.

    python3 watch_cases.py --build BUILD CASE     run one case: exit 0 pass, 1 fail (with the reason), 77 skip
    python3 watch_cases.py --list                 the case names, one a line
    python3 watch_cases.py --check-list NAME...   check NAME... (CMake's list) is exactly the list of cases

Standard library only.
"""

import os
import re
import shutil
import signal
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cases  # noqa: E402
from cases import (BAD, CaseFailed, CaseSkipped, RUN_TIMEOUT, STEP, _base_env, _execute, _no_core, brief, check,
                   cli_run, culprit_lines, expect_exact, expect_plain_failure, load_report, plain, program_stderr,
                   same_as_plain)  # noqa: E402

cases.CASES.clear()  # this file's cases only
case = cases.case


# The output watch of `culprit run`: device asserts tied to the verdict, output passed on unchanged ------------

ASSERT_LINE = "fake.cu:8: void %s(...): block: [1,0,0], thread: [3,0,0] Assertion `idx < n` failed."

# Writes to stdout and stderr in small interleaved pieces: partial lines, carriage returns, bytes that are not
# UTF-8, a line longer than the watch's line buffer, an assert-like line split across writes, and no final
# newline. argv[1] = megabytes of extra stdout (lines of varied length).
PASSTHROUGH_PROG = r'''
import os, sys
def w(fd, data):
    while data:
        data = data[os.write(fd, data):]
for i in range(50):
    w(1, b"out %d " % i)
    w(2, b"err %d\r" % i)
    w(1, b"\xff\xfe\x00 part\n" if i % 7 == 0 else b"")
w(2, b"x" * 20000 + b"\n")
w(2, b"not.cu:1: void k(int): block: [0,0,0], thr")
w(2, b"ead: [0,0,0] Assertion `nope` fail\n")
mb = int(sys.argv[1]) if len(sys.argv) > 1 else 0
if mb:
    line, total, n = b"", 0, 0
    while total < mb << 20:
        n += 1
        chunk = (b"%08d " % n) + bytes(range(33, 127)) * (n % 97) + b"\n"
        w(1, chunk)
        total += len(chunk)
w(1, b"last line without newline")
'''


def python_prog(b, source):
    """argv running a Python program written from source."""
    path = os.path.join(b.newdir("py"), "prog.py")
    with open(path, "w") as f:
        f.write(source)
    return [sys.executable, path]


def cli_extra_stderr(base_err, got_err, what):
    """Under `culprit run` with separate pipes, stderr is the program's stderr byte for byte, then the CLI's own
    lines (only "culprit:" lines)."""
    check(got_err.startswith(base_err), "%s: the program's stderr bytes changed under culprit run\n"
          "--- without (%d bytes)\n%r\n--- with (%d bytes)\n%r" % (what, len(base_err), base_err[-400:],
                                                                    len(got_err), got_err[-400:]))
    rest = got_err[len(base_err):].decode("utf-8", "replace").splitlines()
    check(all(l.startswith("culprit:") for l in rest), "%s: more than culprit's lines after the program's "
          "stderr:\n%s" % (what, "\n".join(rest)))


def expect_assert(entry, kernel, stream, what, file="fake.cu", line=8, block=(1, 0, 0), thread=(3, 0, 0),
                  assertion="idx < n"):
    check(isinstance(entry, dict), "%s: no device assert entry (%r)" % (what, entry))
    for field, want in (("file", file), ("line", line), ("kernel", kernel), ("block", list(block)),
                        ("thread", list(thread)), ("assertion", assertion), ("stream", stream)):
        check(entry.get(field) == want, "%s: device_asserts %s is %r, expected %r (%r)" % (
            what, field, entry.get(field), want, entry))


def rendered_assert_under_culprit(res, kernel_line, assert_text):
    lines = culprit_lines(res)
    heads = [i for i, l in enumerate(lines) if l.startswith("culprit: the kernel that faulted:")]
    check(heads and kernel_line in lines[heads[0]], "no culprit kernel line naming %s\n%s" % (kernel_line,
                                                                                            res.err_text))
    nxt = lines[heads[0] + 1] if heads[0] + 1 < len(lines) else ""
    check(nxt == "culprit:   device assert: " + assert_text,
          "the line under the culprit kernel is %r, expected the device assert %r" % (nxt, assert_text))


@case("watch_assert_stdout")
def _(b):
    # The simulated driver prints the assert on stdout (as the design brief has it); it reaches the terminal
    # untouched and the report and verdict carry it.
    env = {"FAKECUDA_FAULT": "launch=3,code=710"}
    argv = [b.prog("linked"), "legacy", "ctxsync"]
    base = plain(b, argv, env)
    check((ASSERT_LINE % "step").encode() in base.out, "scenario broken\n" + base.describe())
    rdir = b.newdir("reports")
    res = cli_run(b, argv, env, rdir)
    check(res.rc == base.rc, "exit status %s, %s without culprit" % (res.rc, base.rc))
    check(res.out == base.out, "stdout bytes differ under culprit run\n--- without\n%r\n--- with\n%r" % (
        base.out, res.out))
    check(program_stderr(res) == base.err_text.splitlines(), "the program's stderr differs\n" + res.describe())
    rep = load_report(rdir)
    rep["_via_cli"] = True
    expect_exact(rep, kernel=STEP, seq=3)
    asserts = rep.get("device_asserts")
    check(isinstance(asserts, list) and len(asserts) == 1, "device_asserts is %r" % asserts)
    expect_assert(asserts[0], "void step(...)", "stdout", "710 under culprit run")
    rendered_assert_under_culprit(res, "step(float*, int)",
                                  "`idx < n` failed at fake.cu:8, block [1,0,0], thread [3,0,0]")
    # `culprit report` shows it as well, from the file.
    out = _execute(b, [b.cli, "report", rep["_path"]], _base_env(b, None), b.work)
    check("device assert: `idx < n` failed at fake.cu:8" in out.out_text, "culprit report does not show the "
          "device assert\n" + out.describe())


@case("watch_assert_at_launch")
def _(b):
    # The assert's error surfaces at a launch (the GPU ran ahead) and the program exits on it without
    # synchronizing. The simulated driver prints the device's printf buffer only at a synchronize, stricter than the
    # H100's driver (which had printed it by the time the launch returned the error) and like an error met at a call
    # that is not one of the points where CUDA prints it (a query, an allocation; exit is not one either): without
    # culprit the text never appears. The library's context synchronize (which returns the error at once) prints
    # it, so the line reaches the program's stdout, the command reads it, and the report says what was called.
    env = {"FAKECUDA_FAULT": "launch=3,code=710", "FAKECUDA_RUN_AHEAD": "1"}
    argv = [b.prog("linked"), "legacy", "nextlaunch", "3"]
    base = plain(b, argv, env)
    check(base.rc != 0 and b"Assertion" not in base.out and "cuLaunchKernel" in base.err_text,
          "scenario broken: the error must surface at a launch, with no assert text\n" + base.describe())
    rdir = b.newdir("reports")
    res = cli_run(b, argv, env, rdir)
    check(res.rc == base.rc, "exit status %s, %s without culprit" % (res.rc, base.rc))
    check(res.out.count((ASSERT_LINE % "step").encode()) == 1, "the assert text did not reach stdout once\n" +
          res.describe())
    rep = load_report(rdir)
    check(rep["error"].get("api") == "cuLaunchKernel", "error.api %r" % rep["error"].get("api"))
    check(rep.get("printf_flush") == {"call": "cuCtxSynchronize", "result": 710},
          "printf_flush %r" % rep.get("printf_flush"))
    asserts = rep.get("device_asserts")
    check(isinstance(asserts, list) and len(asserts) == 1, "device_asserts is %r" % asserts)
    expect_assert(asserts[0], "void step(...)", "stdout", "710 at a launch")
    # an assert that surfaced at a synchronize was flushed by it: nothing more is called
    env = {"FAKECUDA_FAULT": "launch=3,code=710"}
    rdir = b.newdir("reports")
    res = cli_run(b, [b.prog("linked"), "legacy", "ctxsync"], env, rdir)
    rep = load_report(rdir)
    check("printf_flush" not in rep and res.out.count(b"Assertion") == 1,
          "a synchronize's assert: printf_flush %r\n%s" % (rep.get("printf_flush"), res.describe()))
    # nor for an error that is not an assert
    env = {"FAKECUDA_FAULT": "launch=3", "FAKECUDA_RUN_AHEAD": "1"}
    rdir = b.newdir("reports")
    cli_run(b, argv, env, rdir)
    rep = load_report(rdir)
    check(rep["error"].get("code") == 700 and "printf_flush" not in rep, "a 700: printf_flush %r" % rep.get(
        "printf_flush"))


@case("watch_assert_text_lost")
def _(b):
    # A device assert whose line never reaches the output culprit run reads (here the program sends its stdout to
    # /dev/null; on the GPU, thousands of threads asserting at once can lose every line): with both descriptors
    # watched, the report says so with an empty device_asserts and the verdict of candidates says why the assert
    # did not narrow them. Fixed spacing, the fault between two marks: a window of candidates.
    env = {"FAKECUDA_FAULT": "launch=30,code=710", "CULPRIT_CRUMB_EVERY": "", "CULPRIT_MARK_BUDGET": "0"}
    prog = [b.prog("linked"), "legacy", "ctxsync", "40"]
    lost = ["sh", "-c", 'exec "$@" >/dev/null', "sh"] + prog
    hint = "no assert text: the output culprit run read held no device-assert line"
    rdir = b.newdir("reports")
    res = cli_run(b, lost, env, rdir)
    rep = load_report(rdir)
    check(rep["error"].get("code") == 710 and rep["verdict"].get("certainty") == "candidates",
          "scenario broken: a 710 with a window of candidates is needed\n" + res.describe())
    check(rep.get("device_asserts") == [], "device_asserts is %r, not []" % rep.get("device_asserts"))
    check(hint in cases.joined(res.err_text), "the verdict does not say the assert text is missing\n" + res.describe())
    # the same with the line printed: it is read, and nothing says it is missing
    rdir = b.newdir("reports")
    res = cli_run(b, prog, env, rdir)
    rep = load_report(rdir)
    check(len(rep.get("device_asserts") or []) == 1 and hint not in cases.joined(res.err_text),
          "with the line printed: device_asserts %r\n%s" % (rep.get("device_asserts"), res.describe()))
    # unwatched (--no-watch), culprit run cannot know: no device_asserts, no hint
    rdir = b.newdir("reports")
    res = cli_run(b, lost, env, rdir, ("--no-watch",))
    rep = load_report(rdir)
    check("device_asserts" not in rep and hint not in cases.joined(res.err_text),
          "--no-watch: device_asserts %r\n%s" % (rep.get("device_asserts"), res.describe()))
    # a fault that is not an assert prints no assert line and is not said to have lost one
    env = {"FAKECUDA_FAULT": "launch=30", "CULPRIT_CRUMB_EVERY": "", "CULPRIT_MARK_BUDGET": "0"}
    rdir = b.newdir("reports")
    res = cli_run(b, lost, env, rdir)
    rep = load_report(rdir)
    check(rep["error"].get("code") == 700 and "device_asserts" not in rep and hint not in cases.joined(res.err_text),
          "a 700: device_asserts %r\n%s" % (rep.get("device_asserts"), res.describe()))


@case("watch_assert_stderr")
def _(b):
    # On the real GPU the assert came on stderr. A shell prints two assert lines there, one naming another
    # kernel, then runs the faulting program as a grandchild of culprit: the report lists both, the one naming
    # its culprit first.
    other = ("/src/other.cu:31: void ns::other<float>(const float *, int) [with T = float]: block: [0,2,0], "
             "thread: [5,0,0] Assertion `p != nullptr` failed.")
    mine = ("/home/u/proj/kern.cu:8: void step(float *, int): block: [3,0,0], thread: [9,0,0] "
            "Assertion `idx < n && \"in range\"` failed.")
    script = "printf '%%s\\n' '%s' >&2; printf '%%s\\n' '%s' >&2; \"$@\"; exit $?" % (other, mine.replace("'", ""))
    env = {"FAKECUDA_FAULT": "launch=4"}
    argv = ["/bin/sh", "-c", script, "sh", b.prog("linked"), "legacy", "ctxsync"]
    base = plain(b, argv, env)
    expect_plain_failure(base, "cuCtxSynchronize", 700)
    rdir = b.newdir("reports")
    res = cli_run(b, argv, env, rdir)
    check(res.rc == base.rc and res.out == base.out, "behaviour changed\n%s\n%s" % (base.describe(),
                                                                                    res.describe()))
    check(program_stderr(res) == base.err_text.splitlines(), "the program's stderr differs\n" + res.describe())
    rep = load_report(rdir)
    rep["_via_cli"] = True
    expect_exact(rep, kernel=STEP, seq=4)
    asserts = rep.get("device_asserts") or []
    check(len(asserts) == 2, "device_asserts is %r" % asserts)
    expect_assert(asserts[0], "void step(float *, int)", "stderr", "the culprit's assert",
                  file="/home/u/proj/kern.cu", block=(3, 0, 0), thread=(9, 0, 0), assertion='idx < n && "in range"')
    expect_assert(asserts[1], "void ns::other<float>(const float *, int) [with T = float]", "stderr",
                  "the other assert", file="/src/other.cu", line=31, block=(0, 2, 0), thread=(5, 0, 0),
                  assertion="p != nullptr")
    rendered_assert_under_culprit(res, "step(float*, int)", '`idx < n && "in range"` failed at '
                                  "/home/u/proj/kern.cu:8, block [3,0,0], thread [9,0,0]")


def run_with(b, cmd, preexec, stdout=subprocess.PIPE, env=None, stderr=subprocess.PIPE):
    """Runs cmd with a custom start (preexec runs in the child before exec); stderr is captured by default."""
    return _execute(b, cmd, _base_env(b, env), b.newdir("cli"), preexec, stdout, stderr)


@case("watch_assert_file")
def _(b):
    # stdout redirected to a regular file: the program gets the file itself (it can seek; the offset behaves as
    # without culprit), and culprit reads back the bytes the run wrote there for the assert. An assert line in
    # the file from before the run, or left past the end of what the run wrote, is not counted. A file in
    # append mode (a log other processes may append to as well) is relayed instead, so only the command's own
    # lines are seen.
    env = {"FAKECUDA_FAULT": "launch=3,code=710"}
    probe = 'if [ -f /dev/stdout ]; then echo "stdout is a file" >&2; fi; exec "$@"'
    argv = ["/bin/sh", "-c", probe, "sh", b.prog("linked"), "legacy", "ctxsync"]
    old = (ASSERT_LINE % "old_kernel") + "\n"
    outputs = {}
    # how: "end" = opened at its end, "append" = O_APPEND, "over" = at offset 0 over old content (1<>file)
    for who in ("plain", "culprit"):
        for how in ("end", "append", "over"):
            path = os.path.join(b.newdir("out"), "out.txt")
            with open(path, "w") as f:
                f.write(("x" * 4000 + "\n" + old) if how == "over" else ("from before the run\n" + old))
            fd = os.open(path, os.O_WRONLY | (os.O_APPEND if how == "append" else 0))
            if how == "end":
                os.lseek(fd, 0, os.SEEK_END)
            rdir = b.newdir("reports")
            cmd = argv if who == "plain" else [b.cli, "run", "--dir", rdir, "--"] + argv
            try:
                res = run_with(b, cmd, lambda: None, stdout=fd, env=env)
            finally:
                os.close(fd)
            with open(path, "rb") as f:
                outputs[who, how] = (res.rc, f.read())
            if who == "plain":
                check((ASSERT_LINE % "step").encode() in outputs[who, how][1], "scenario broken")
                continue
            if how != "append":
                check("stdout is a file" in res.err_text, "%s: the program's stdout is not the file itself\n%s"
                      % (how, res.describe()))
            check(outputs[who, how] == outputs["plain", how], "%s: the file's content or the exit status differ "
                  "under culprit run\n--- without\n%r\n--- with\n%r" % (how, outputs["plain", how],
                                                                     outputs[who, how]))
            rep = load_report(rdir)
            asserts = rep.get("device_asserts")
            check(isinstance(asserts, list) and len(asserts) == 1, "%s: device_asserts is %r (the old line must "
                  "not count)" % (how, asserts))
            expect_assert(asserts[0], "void step(...)", "stdout", "%s: assert read back from the file" % how)
    # One file as stdout and stderr through two offsets (stderr's far beyond stdout's): read back once, from
    # the earlier start to the later end, the assert counted once.
    path = os.path.join(b.newdir("out"), "both.txt")
    with open(path, "w") as f:
        f.write(old)
    fd1, fd2 = os.open(path, os.O_WRONLY), os.open(path, os.O_WRONLY)
    os.lseek(fd1, 0, os.SEEK_END)
    os.lseek(fd2, 100000, os.SEEK_SET)
    rdir = b.newdir("reports")
    try:
        res = run_with(b, [b.cli, "run", "--dir", rdir, "--"] + argv, lambda: None, stdout=fd1, env=env,
                       stderr=fd2)
    finally:
        os.close(fd1)
        os.close(fd2)
    with open(path, "rb") as f:
        both = f.read()
    check(b"no sticky" not in both and b"culprit: " in both[100000:], "culprit's lines are not after the "
          "command's stderr")
    asserts = load_report(rdir).get("device_asserts")
    check(isinstance(asserts, list) and len(asserts) == 1, "one file as stdout and stderr: device_asserts is %r"
          % asserts)
    expect_assert(asserts[0], "void step(...)", "stdout+stderr", "one file through two offsets")


@case("cli_ignored_signals")
def _(b):
    # Started under nohup (SIGHUP ignored) with SIGCHLD ignored too: the program inherits both ignored, as it
    # would without culprit, a SIGHUP sent to culprit changes nothing, and the exit status still comes through
    # (an ignored SIGCHLD would have let the kernel reap the child and lose it).
    prog = ("import os, signal, time\n"
            "print('hup', signal.getsignal(signal.SIGHUP) == signal.SIG_IGN, flush=True)\n"
            "print('chld', signal.getsignal(signal.SIGCHLD) == signal.SIG_IGN, flush=True)\n"
            "print('term', signal.getsignal(signal.SIGTERM) == signal.SIG_DFL, flush=True)\n"
            "os.kill(os.getppid(), signal.SIGHUP)\n"
            "time.sleep(0.3)\n"
            "raise SystemExit(5)\n")
    def ignore():
        signal.signal(signal.SIGHUP, signal.SIG_IGN)
        signal.signal(signal.SIGCHLD, signal.SIG_IGN)
    for opts in ((), ("--no-watch",)):
        cmd = [b.cli, "run", "--dir", b.newdir("reports")] + list(opts) + ["--", sys.executable, "-c", prog]
        res = run_with(b, cmd, ignore)
        # with the watch, the SIGHUP goes to culprit; with --no-watch the parent is culprit as well
        check(res.rc == 5, "exit status %r, expected the program's 5 (%s)\n%s" % (res.rc, opts, res.describe()))
        check(res.out_text.split("\n")[:3] == ["hup True", "chld True", "term True"],
              "the program's dispositions differ from culprit's start (%s): %r" % (opts, res.out_text))


@case("cli_closed_stdout")
def _(b):
    # culprit started with stdout closed: the program finds it closed too (nothing of culprit's takes its
    # place), and culprit's own lines still go to stderr.
    prog = ("import os, sys\n"
            "try:\n"
            "    os.fstat(1)\n"
            "    sys.stderr.write('stdout open\\n')\n"
            "except OSError:\n"
            "    sys.stderr.write('stdout closed\\n')\n"
            "raise SystemExit(3)\n")
    for opts in ((), ("--no-watch",)):
        cmd = [b.cli, "run", "--dir", b.newdir("reports")] + list(opts) + ["--", sys.executable, "-c", prog]
        res = run_with(b, cmd, lambda: os.close(1), stdout=None)
        check(res.rc == 3, "exit status %r, expected 3 (%s)\n%s" % (res.rc, opts, res.describe()))
        check(program_stderr(res) == ["stdout closed"], "the program saw %r (%s)" % (program_stderr(res), opts))
        check(any("no sticky CUDA error" in l for l in culprit_lines(res)),
              "culprit's closing line is missing from stderr (%s)\n%s" % (opts, res.describe()))


@case("watch_narrow_candidates")
def _(b):
    # Four streams with unfinished work: record mode can only list candidates, one per stream. The device assert
    # names write_oob, which only one candidate runs, so culprit run narrows the verdict to it.
    env = {"FAKECUDA_FAULT": "kernel=%s,code=710" % BAD}
    argv = [b.prog("linked"), "streams4"]
    base = plain(b, argv, env)
    expect_plain_failure(base, "cuCtxSynchronize", 710)
    rdir = b.newdir("reports")
    res = cli_run(b, argv, env, rdir)
    same_as_plain(base, res, "culprit run", exact_stderr=False)
    check(res.out == base.out, "stdout bytes differ")
    rep = load_report(rdir)
    rep["_via_cli"] = True
    c = expect_exact(rep, kernel=BAD, seq=15, stream_kind="created")
    v = rep["verdict"]
    check(v["reason"].endswith("; the device assert names write_oob(int*, int)"), "reason %r" % v["reason"])
    check(v.get("window") == {"first": 15, "last": 15}, "window %r" % v.get("window"))
    before = rep.get("candidates_before_assert") or []
    check(sorted(x.get("seq") for x in before) == [13, 14, 16] and all(x.get("mangled") == STEP for x in before),
          "candidates_before_assert %s" % [brief(x) for x in before])
    check(not rep.get("candidates"), "candidates still listed: %r" % [brief(x) for x in rep.get("candidates")])
    # the library's history ran up to the first candidate, on another stream: none of it is "before" #15
    hist = rep.get("history") or []
    check(all(h.get("stream") == c.get("stream") and h.get("seq") < 15 for h in hist),
          "history after narrowing holds other streams' or later launches: %s" % [brief(h) for h in hist])
    expect_assert((rep.get("device_asserts") or [None])[0], "void write_oob(...)", "stdout", "narrowed")
    rendered_assert_under_culprit(res, "write_oob(int*, int)",
                                  "`idx < n` failed at fake.cu:8, block [1,0,0], thread [3,0,0]")
    check("the device assert names write_oob" in res.err_text.replace("\nculprit:    ", ""),
          "the printed reason does not say the assert decided\n" + res.err_text)
    check(c.get("stack"), "the narrowed culprit lost its stack")
    # Without the watch the verdict stays "candidates".
    rdir = b.newdir("reports")
    res = cli_run(b, argv, env, rdir, ["--no-watch"])
    rep = load_report(rdir)
    check(rep["verdict"]["certainty"] == "candidates" and "device_asserts" not in rep,
          "--no-watch still changed the report: %r" % rep["verdict"])


@case("watch_narrow_window")
def _(b):
    # Record mode's default density leaves a window of launches per stream (#5..#24 in all: each stream's first
    # launch has its breadcrumb, and it completed). Narrowed by the assert to write_oob (#15), the launches of the
    # window before it on its stream (#7, #11) go to the history, oldest first, after #3 when the library's own
    # history held it (it lists the launches before its first candidate, whose stream depends on the order of
    # the stream table), and they stay in candidates_before_assert.
    # (streams4_quiet: no event records, whose tail marks would settle every launch before the fault.)
    env = {"FAKECUDA_FAULT": "kernel=%s,code=710" % BAD, "CULPRIT_CRUMB_EVERY": "16", "CULPRIT_MARK_BUDGET": "0"}
    argv = [b.prog("linked"), "streams4_quiet"]
    rdir = b.newdir("reports")
    res = cli_run(b, argv, env, rdir)
    rep = load_report(rdir)
    rep["_via_cli"] = True
    c = expect_exact(rep, kernel=BAD, seq=15, stream_kind="created")
    hist = rep.get("history") or []
    check([h.get("seq") for h in hist] in ([7, 11], [3, 7, 11]) and all(h.get("stream") == c.get("stream") for h in hist),
          "history after narrowing: %s" % [brief(h) for h in hist])
    before = rep.get("candidates_before_assert") or []
    check(sorted(x.get("seq") for x in before) == [s for s in range(5, 25) if s != 15],
          "candidates_before_assert: %s" % [x.get("seq") for x in before])
    text = "\n".join(culprit_lines(res))
    check(re.search(r"launches before it on stream \S+ \(oldest first\):\n(culprit:   #3 step.*\n)?"
                    r"culprit:   #7 step.*\nculprit:   #11 step", text),
          "the printed history does not list #7, #11\n" + text)


# Triton's tl.device_assert prints `unknown` for the kernel and names the Python file of the @triton.jit function.
# A file holding the simulated driver's two kernels as Triton functions, the assert in write_oob's body.
TRITON_FILE = '''import triton
import triton.language as tl


@triton.jit
def step(x_ptr, n):
    tl.store(x_ptr + tl.program_id(0), 0.0)


@triton.jit(debug=True)
def write_oob(out_ptr, idx_ptr, n):
    i = tl.load(idx_ptr + tl.program_id(0))
    tl.device_assert(i < n, "idx < n")
    tl.store(out_ptr + i, 1)
'''
TRITON_ASSERT = "%s:%d: unknown: block: [1,0,0], thread: [3,0,0] Assertion `idx < n` failed."


def triton_file(b):
    """A Python file of Triton kernels, and the line of its device assert."""
    path = os.path.join(b.newdir("triton"), "moe_kernels.py")
    with open(path, "w") as f:
        f.write(TRITON_FILE)
    return path, TRITON_FILE.splitlines().index('    tl.device_assert(i < n, "idx < n")') + 1


def printing_first(line, argv):
    """argv run by a shell that first prints line on stderr (as the device prints an assert)."""
    return ["/bin/sh", "-c", "printf '%s\\n' \"$0\" >&2; \"$@\"", line] + list(argv)


def joined(res):
    """culprit's lines as one text, wrapped paragraphs joined."""
    return re.sub(r"\nculprit: +", " ", "\n".join(culprit_lines(res)))


@case("watch_triton_assert")
def _(b):
    # Four streams leave a candidate each; a Triton assert names no kernel (`unknown`), but its file holds the
    # line in write_oob's body, which one candidate runs. (Code 700: the simulated driver prints no assert of its
    # own.) When the file is gone before the line comes, the verdict stays candidates and says why.
    path, lineno = triton_file(b)
    env = {"FAKECUDA_FAULT": "kernel=%s" % BAD}
    argv = printing_first(TRITON_ASSERT % (path, lineno), [b.prog("linked"), "streams4"])
    base = plain(b, argv, env)
    expect_plain_failure(base, "cuCtxSynchronize", 700)
    rdir = b.newdir("reports")
    res = cli_run(b, argv, env, rdir)
    same_as_plain(base, res, "culprit run", exact_stderr=False)
    rep = load_report(rdir)
    rep["_via_cli"] = True
    expect_exact(rep, kernel=BAD, seq=15, stream_kind="created")
    reason = rep["verdict"]["reason"]
    check(reason.endswith("; the device assert at %s:%d is in the @triton.jit function write_oob, which launch #15 "
                          "alone runs" % (path, lineno)), "reason %r" % reason)
    a = (rep.get("device_asserts") or [None])[0]
    expect_assert(a, "unknown", "stderr", "Triton's form", file=path, line=lineno)
    check(a.get("function") == "write_oob" and a.get("launches") == [15], "device assert %r" % a)
    rendered_assert_under_culprit(res, "write_oob(int*, int)",
                                  "`idx < n` failed at %s:%d, block [1,0,0], thread [3,0,0]" % (path, lineno))
    os.unlink(path)
    rdir = b.newdir("reports")
    res = cli_run(b, argv, env, rdir)
    rep = load_report(rdir)
    check(rep["verdict"]["certainty"] == "candidates", "narrowed without the file: %r" % rep["verdict"])
    why = ("the device assert at %s:%d prints no kernel name (`unknown`, as Triton's do) and its file did not tell "
           "it: it could not be read (No such file or directory)" % (path, lineno))
    check(rep["verdict"]["reason"].endswith(why), "reason %r" % rep["verdict"]["reason"])
    check(why in joined(res), "the printed verdict does not say why the assert did not narrow it\n" + res.err_text)
    a = rep["device_asserts"][0]
    check("function" not in a and "could not be read" in a.get("function_unknown", "") and
          sorted(a.get("launches")) == [13, 14, 15, 16], "device assert %r" % a)


@case("watch_graph_assert")
def _(b):
    # A fault inside a graph replay: the culprit is the graph launch, and the device assert names the captured
    # node that runs its kernel: the simulated driver's own assert line (code 710), or a Triton assert whose file
    # holds the line in write_oob (code 700).
    path, lineno = triton_file(b)
    fault = "kernel=%s,nth=2" % BAD
    for env, argv, form in (
            ({"FAKECUDA_FAULT": fault + ",code=710"}, [b.prog("procaddr"), "v2", "graph"], "the device's signature"),
            ({"FAKECUDA_FAULT": fault}, printing_first(TRITON_ASSERT % (path, lineno),
                                                       [b.prog("procaddr"), "v2", "graph"]), "Triton's form")):
        rdir = b.newdir("reports")
        res = cli_run(b, argv, env, rdir)
        rep = load_report(rdir)
        rep["_via_cli"] = True
        c = expect_exact(rep, kind="graph", api="cuGraphLaunch")
        node = c.get("node") or {}
        nodes = c.get("graph_nodes") or []
        check(node.get("mangled") == BAD and c.get("node_source") == "device assert" and len(nodes) == 3 and
              node.get("seq") == nodes[1].get("seq"), "%s: culprit.node %s (%r)" % (form, brief(node),
                                                                                    c.get("node_source")))
        check(rep["verdict"]["reason"].endswith("; the device assert names the graph's node #%d write_oob(int*, int)"
                                                % node["seq"]), "%s: reason %r" % (form, rep["verdict"]["reason"]))
        check(rep["device_asserts"][0].get("launches") == [node["seq"]], "%s: %r" % (form, rep["device_asserts"]))
        lines = culprit_lines(res)
        at = [i for i, l in enumerate(lines) if "the node that faulted, named by the device assert:" in l]
        check(at and "write_oob" in lines[at[0] + 1] and any("device assert: `idx < n` failed" in l
                                                             for l in lines[at[0] + 2:at[0] + 5]),
              "%s: the printed verdict does not show the node with its assert\n%s" % (form, res.err_text))
        check(not any("device assert:" in l for l in lines[:at[0]]),
              "%s: the assert is shown under the graph launch as well\n%s" % (form, res.err_text))


@case("watch_passthrough")
def _(b):
    # Separate pipes: stdout and stderr arrive byte for byte, in the order written on each.
    argv = python_prog(b, PASSTHROUGH_PROG)
    base = plain(b, argv)
    check(base.rc == 0 and base.out.endswith(b"without newline"), "scenario broken\n" + base.describe())
    res = cli_run(b, argv, None, b.newdir("reports"))
    check(res.rc == 0, "exit status %s\n%s" % (res.rc, res.describe()))
    check(res.out == base.out, "stdout bytes differ under culprit run\n--- without\n%r\n--- with\n%r" % (
        base.out[:600], res.out[:600]))
    cli_extra_stderr(base.err, res.err, "passthrough")
    # stdout and stderr into one pipe (2>&1): one channel, so their interleaving is kept too.
    both = [sys.executable, "-c", "import subprocess,sys; sys.exit(subprocess.call(sys.argv[1:], "
            "stderr=subprocess.STDOUT))"]
    base = plain(b, both + argv)
    cmd = both + [b.cli, "run", "--dir", b.newdir("reports"), "--"] + argv
    res = _execute(b, cmd, _base_env(b, None), b.newdir("cli"))
    prog_part = res.out[:len(base.out)]
    check(prog_part == base.out, "stdout+stderr in one pipe: the interleaving changed\n--- without\n%r\n"
          "--- with\n%r" % (base.out[:800], prog_part[:800]))


@case("watch_large")
def _(b):
    # 10 MB on stdout (plus the interleaved stderr pieces) pass through unchanged, and in reasonable time.
    argv = python_prog(b, PASSTHROUGH_PROG) + ["10"]
    base = plain(b, argv)
    check(base.rc == 0 and len(base.out) > 10 << 20, "scenario broken: %d bytes" % len(base.out))
    res = cli_run(b, argv, None, b.newdir("reports"))
    check(res.rc == 0, "exit status %s\n%s" % (res.rc, res.err_text[-2000:]))
    check(len(res.out) == len(base.out) and res.out == base.out, "10 MB of stdout differ: %d bytes, %d without"
          % (len(res.out), len(base.out)))
    cli_extra_stderr(base.err, res.err, "large output")


@case("watch_closed_reader")
def _(b):
    # The reader of stdout goes away (`| head -1`): the program meets the closed pipe as it would without
    # culprit (yes dies of SIGPIPE), and culprit ends the same way instead of hanging or dying first.
    yes = shutil.which("yes")
    if not yes:
        raise CaseSkipped("no yes(1) on this machine")
    for cmd in ([yes], [b.cli, "run", "--dir", b.newdir("reports"), "--", yes]):
        proc = subprocess.Popen(cmd, env=_base_env(b, None), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, cwd=b.newdir("cli"))
        proc.stdout.read(100000)
        proc.stdout.close()
        try:
            proc.wait(timeout=RUN_TIMEOUT)
        except subprocess.TimeoutExpired:
            proc.kill()
            raise CaseFailed("%s did not end after its reader went away" % cmd)
        proc.stderr.close()
        check(proc.returncode == -signal.SIGPIPE, "%s ended with %s, expected death by SIGPIPE" % (
            " ".join(cmd), proc.returncode))


TTY_PROBE = r'''
import os, signal, sys, time
print("isatty", os.isatty(1), os.isatty(2), "size", tuple(os.get_terminal_size(1)))
print("tty", os.ttyname(1), os.ttyname(2))
sys.stderr.write("to stderr\n")
print("tab\tand\r\ncrlf")
sys.stdout.flush()
if len(sys.argv) > 1:
    got = []
    signal.signal(signal.SIGWINCH, lambda s, f: got.append(tuple(os.get_terminal_size(1))))
    print("ready", flush=True)
    end = time.time() + 20
    while (not got or got[-1] != (101, 33)) and time.time() < end:
        time.sleep(0.02)
    print("resized", got[-1] if got else None, flush=True)
'''


def run_on_pty(b, argv, env=None, resize=False):
    """Runs argv with stdout and stderr on a fresh pseudo-terminal (80x24), stdin /dev/null; returns (exit
    status, bytes read from the terminal, the terminal's name). With resize, once "ready" shows the
    terminal becomes 101x33 and SIGWINCH goes to the process (as a terminal would send it)."""
    import fcntl
    import select
    import struct
    import termios
    import time
    try:
        master, slave = os.openpty()
    except OSError as e:
        raise CaseSkipped("no pseudo-terminals here: %s" % e)
    name = os.ttyname(slave)
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 80, 0, 0))
    proc = subprocess.Popen(argv, env=_base_env(b, env), stdin=subprocess.DEVNULL, stdout=slave, stderr=slave,
                            cwd=b.newdir("tty"), preexec_fn=_no_core)
    os.close(slave)
    data, resized, end = b"", False, time.time() + RUN_TIMEOUT
    while True:
        r, _, _ = select.select([master], [], [], 0.5)
        if time.time() > end:
            proc.kill()
            raise CaseFailed("%s did not finish on a terminal\n%r" % (argv, data))
        if not r:
            continue
        try:
            chunk = os.read(master, 65536)
        except OSError:
            break
        if not chunk:
            break
        data += chunk
        if resize and not resized and b"ready" in data:
            resized = True
            fcntl.ioctl(master, termios.TIOCSWINSZ, struct.pack("HHHH", 33, 101, 0, 0))
            os.kill(proc.pid, signal.SIGWINCH)
    proc.wait(timeout=RUN_TIMEOUT)
    os.close(master)
    return proc.returncode, data, name


@case("watch_tty")
def _(b):
    # stdout and stderr are a terminal: the program still sees one (same size, same output processing), its
    # bytes reach the terminal as they would without culprit, and a resize reaches it.
    argv = python_prog(b, TTY_PROBE)
    rc0, base, _ = run_on_pty(b, argv)
    check(rc0 == 0 and b"isatty True True size (80, 24)" in base, "scenario broken: %r" % base)
    rdir = b.newdir("reports")
    rc, got, _ = run_on_pty(b, [b.cli, "run", "--dir", rdir, "--"] + argv)
    check(rc == 0, "exit status %s: %r" % (rc, got))
    check(b"isatty True True size (80, 24)" in got, "under culprit run the program does not see a terminal of "
          "the same size: %r" % got)
    strip = lambda d: re.sub(rb"tty \S+ \S+", b"tty T T", d)
    prog_part = got[:len(base)]
    check(strip(prog_part) == strip(base), "the terminal saw other bytes\n--- without\n%r\n--- with\n%r" % (
        base, got))
    check(all(l.startswith(b"culprit:") for l in got[len(base):].split(b"\r\n") if l),
          "more than culprit's lines after the program's output: %r" % got[len(base):])
    check(re.search(rb"tty (\S+) \1", got), "stdout and stderr are different terminals: %r" % got)
    # A resize of the user's terminal reaches the program's terminal.
    rc, got, _ = run_on_pty(b, [b.cli, "run", "--dir", rdir, "--"] + argv + ["wait"], resize=True)
    check(rc == 0 and b"resized (101, 33)" in got, "the program did not see the new size: %r" % got)
    # --no-watch: the program gets the very same terminal.
    rc, got, name3 = run_on_pty(b, [b.cli, "run", "--no-watch", "--dir", rdir, "--"] + argv)
    check(("tty %s %s" % (name3, name3)).encode() in got, "--no-watch: the program is not on culprit's own "
          "terminal %s: %r" % (name3, got))


@case("watch_no_watch")
def _(b):
    # --no-watch: plain inheritance; the assert still reaches stdout but the report knows nothing of it.
    env = {"FAKECUDA_FAULT": "launch=3,code=710"}
    argv = [b.prog("linked"), "legacy", "ctxsync"]
    base = plain(b, argv, env)
    rdir = b.newdir("reports")
    res = cli_run(b, argv, env, rdir, ["--no-watch"])
    check(res.rc == base.rc and res.out == base.out, "behaviour changed\n%s\n%s" % (base.describe(),
                                                                                    res.describe()))
    rep = load_report(rdir)
    check("device_asserts" not in rep, "--no-watch, yet the report has device_asserts: %r" %
          rep.get("device_asserts"))
    check("device assert:" not in res.err_text, "--no-watch, yet the verdict shows an assert\n" + res.err_text)
    # The program writes into culprit's own stdout: the same pipe, not one of culprit's.
    probe = [sys.executable, "-c", "import os; print(os.readlink('/proc/self/fd/1'))"]
    for opts, same in ((["--no-watch"], True), ([], False)):
        cmd = [b.cli, "run", "--dir", b.newdir("reports")] + opts + ["--"] + probe
        proc = subprocess.Popen(cmd, env=_base_env(b, None), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=subprocess.DEVNULL)
        mine = "pipe:[%d]" % os.fstat(proc.stdout.fileno()).st_ino
        out, _ = proc.communicate(timeout=RUN_TIMEOUT)
        theirs = out.decode().split()[0]
        check((theirs == mine) == same, "%s: the program's stdout is %s, culprit's %s" % (
            opts or "watching", theirs, mine))


# ---------------------------------------------------------------------------------------------------------------

if __name__ == "__main__":
    sys.exit(cases.main())
