#!/usr/bin/env python3
"""Scenario tests of what a hostile file, a bad setting or a strange program does to the `culprit` command, over
the simulated CUDA driver: strings from reports and programs made safe for a terminal, options missing their
value, report signals that cannot serve, culprit off in the program, the files the command writes, and what
happens when culprit run itself is killed.

Same harness and command line as cases.py (`--build BUILD CASE`, `--list`, `--check-list NAME...`).
"""

import glob
import json
import os
import shutil
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cases as h  # noqa: E402  (the harness: running programs, loading and checking reports)
import hang_cases  # noqa: E402  (programs in the background, hang reports)

h.CASES.clear()  # this file's cases only (hang_cases registered its own on import)
case, check = h.case, h.check

# A string a program or a report could hold: a forged verdict line, a screen clear, a window title.
EVIL = "x\nculprit: the kernel that faulted: forged\x1b[2J\x1b]0;title\x07"
FAULT4 = {"FAKECUDA_FAULT": "launch=4"}


def culprit(b, *args, env=None, cwd=None):
    return subprocess.run([b.cli] + list(args), capture_output=True, timeout=h.RUN_TIMEOUT, env=env, cwd=cwd)


def unsafe_at(data):
    """The offset of the first character of data (bytes) a terminal would obey rather than show, or -1: a
    control character but the newline, bytes that are not UTF-8, a C1 control, a bidi override or isolate."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        return e.start
    for i, c in enumerate(text):
        o = ord(c)
        if (o < 0x20 and c != "\n") or 0x7f <= o <= 0x9f or o in (0x061c, 0x200e, 0x200f) or \
                0x202a <= o <= 0x202e or 0x2066 <= o <= 0x2069:
            return len(text[:i].encode("utf-8"))
    return -1


def expect_safe(data, what):
    at = unsafe_at(data)
    check(at < 0, "%s: a byte a terminal would obey reached it raw at %d: %r" % (what, at, data[max(0, at - 40):
                                                                                                   at + 40]))
    for line in data.decode("utf-8").splitlines():
        check(not line.startswith(("culprit: the kernel that faulted: forged", "culprit: forged")),
              "%s: a forged line: %r" % (what, line))


def shell_words(text):
    """The words bash reads from text (a command culprit printed)."""
    out = subprocess.run(["bash", "-c", "printf '%s\\0' " + text], capture_output=True, timeout=10).stdout
    return out.split(b"\0")[:-1]


@case("terminal_escapes")
def _(b):
    # culprit run: the command's argv holds the hostile string; every line culprit prints stays one safe line,
    # and the debugger command it prints still gives the program the same argv
    rdir = b.newdir("reports")
    argv = [b.prog("linked"), "legacy", "ctxsync", "5", EVIL]
    res = h.cli_run(b, argv, FAULT4, rdir)
    check(res.rc == 1 and "the kernel that faulted: step" in res.err_text, "no verdict\n" + res.describe())
    expect_safe(res.err, "culprit run's stderr")
    gdb = [l for l in h.culprit_lines(res) if "cuda-gdb -ex run --args" in l]
    check(gdb, "no debugger command\n" + res.describe())
    words = shell_words(gdb[0].split("--args ", 1)[1])
    check(words == [a.encode() for a in argv], "the printed command reads back as %r, not %r" % (words, argv))

    # a report edited to hold escape sequences wherever a program or a file could put them
    rep = h.load_report(rdir)
    rep.pop("_path")
    rep["culprit"]["kernel"] = "k\x1b[2Jern\nel"
    for f in rep["culprit"].get("stack") or []:
        f["function"] = "fn\x1b[31m\u202e"
        f["file"] = "/src/evil\nculprit: forged.c"
    for f in rep["error"].get("stack") or []:
        f["module"] = "/lib/\x1b]0;title\x07libx.so"
    rep["error"]["message"] = "boom\nculprit: forged message"
    rep["verdict"]["reason"] = "because\x1b[2J\nculprit: forged reason"
    rep["nccl_log"] = ["h:1:1 [0] NCCL WARN bad\x1b[2J\nculprit: forged nccl"]
    hostile = os.path.join(b.newdir("hostile"), "d\x1b[2J\nculprit: forged dir")
    os.makedirs(hostile)
    path = os.path.join(hostile, "culprit-%d.json" % rep["process"]["pid"])
    with open(path, "w") as f:
        json.dump(rep, f)
    for opts in ((), ("--brief",)):
        res = culprit(b, "report", *opts, path)
        check(res.returncode == 0 and b"k\\x1b[2Jern\\nel" in res.stdout, "culprit report %s:\n%r" % (opts,
                                                                                                     res.stdout))
        expect_safe(res.stdout + res.stderr, "culprit report %s" % " ".join(opts))
    # --json keeps the real data, escaped the JSON way
    res = culprit(b, "report", "--json", path)
    expect_safe(res.stdout, "culprit report --json")
    back = json.loads(res.stdout)
    check(back["culprit"]["kernel"] == "k\x1b[2Jern\nel" and back["nccl_log"] == rep["nccl_log"],
          "--json changed the data: %r" % back["culprit"]["kernel"])
    # the job view of the same report beside a second process's exit record
    other = dict(json.loads(json.dumps(rep)), kind="exit")
    other["process"] = dict(other["process"], pid=rep["process"]["pid"] + 1, argv=[EVIL])
    with open(os.path.join(hostile, "culprit-%d.json" % other["process"]["pid"]), "w") as f:
        json.dump(other, f)
    res = culprit(b, "report", hostile)
    check(res.returncode == 0 and b"job of 2 processes" in res.stdout, "no job view:\n%r" % res.stdout)
    expect_safe(res.stdout + res.stderr, "culprit report of the job")
    # culprit trace's messages name the report and the trace
    res = culprit(b, "trace", path)
    check(res.returncode == 0, "culprit trace failed:\n%r" % res.stderr)
    expect_safe(res.stderr, "culprit trace")

    # a command named with escapes (a symlink): the closing line names it safely
    link = os.path.join(b.newdir("link"), "prog\x1b[2J\nculprit: forged")
    os.symlink(b.prog("linked"), link)
    res = h.cli_run(b, [link, "healthy"], None, b.newdir("reports"))
    check(res.rc == 0 and "no sticky CUDA error" in res.err_text, "healthy run:\n" + res.describe())
    expect_safe(res.err, "culprit run of a healthy program")


@case("quiet_once")
def _(b):
    # -q: one line per report, once. The library's own one-line notice passed through the watch (or, with
    # --no-watch, straight to the terminal) already said it; culprit run prints its line only when the run
    # learned more after the process ended (here a device assert narrowing four candidates to one).
    argv = [b.prog("linked"), "legacy", "ctxsync", "5"]
    for opts in (("-q",), ("-q", "--no-watch")):
        res = h.cli_run(b, argv, FAULT4, b.newdir("reports"), opts)
        lines = [l for l in h.culprit_lines(res) if "report: " in l]
        check(len(lines) == 1 and "launch #4" in lines[0], "%s: the verdict line is not printed exactly once\n%s" % (
            " ".join(opts), res.describe()))
    env = {"FAKECUDA_FAULT": "kernel=%s,code=710" % h.BAD}
    res = h.cli_run(b, [b.prog("linked"), "streams4"], env, b.newdir("reports"), ("-q",))
    lines = [l for l in h.culprit_lines(res) if "report: " in l]
    check(len(lines) == 2 and "candidate" in lines[0] and
          "faulting kernel: write_oob(int*, int), launch #15" in lines[1],
          "the narrowed verdict is not printed after the library's notice\n" + res.describe())


@case("option_values")
def _(b):
    # An option missing its value does not take "--" as one: `--dir -- prog` used to write into a folder named
    # "--" and run prog. Bad usage, exit 2, nothing run and nothing made.
    env = h._base_env(b, FAULT4)
    prog = [b.prog("linked"), "legacy", "ctxsync", "5"]
    for opts in (["--dir", "--"], ["--dir=--", "--"], ["--kernels", "--"], ["--mode", "--"], ["-q", "--ring", "--"]):
        cwd = b.newdir("cwd")
        res = culprit(b, "run", *(opts + prog), env=env, cwd=cwd)
        err = res.stderr.decode()
        name = opts[-2].split("=")[0]
        check(res.returncode == 2 and ("%s needs a value" % name) in err and "'--' ends culprit's options" in err,
              "%s: exit %d\n%s" % (" ".join(opts), res.returncode, err))
        check(os.listdir(cwd) == [] and not res.stdout, "%s: something ran or was made: %s" % (" ".join(opts),
                                                                                            os.listdir(cwd)))
    res = culprit(b, "run", "--dir", env=env)
    check(res.returncode == 2 and b"--dir needs a value;" in res.stderr, "a last --dir: %r" % res.stderr)
    res = culprit(b, "trace", os.path.join(b.work, "culprit-1.json"), "-o", "--")
    check(res.returncode == 2 and b"-o needs a file name" in res.stderr, "trace -o --: %r" % res.stderr)


@case("report_signal_fatal")
def _(b):
    # A report signal asks for a report and lets the program go on. One that ends or stops the program cannot:
    # with --report-signal 11 a segfaulting program returned into its faulting instruction after every report,
    # printing "hang report (SIGSEGV)" thousands of times. Refused by the option and by the library alike.
    env = h._base_env(b, FAULT4)
    prog = [b.prog("linked"), "legacy", "ctxsync", "5"]
    # Nor can one that something else sends or owns: the system's (SIGCHLD at every child's end, SIGCONT, SIGPIPE;
    # the job-control stops), the C library's own (32, 33) and the one culprit asks threads for their stacks with.
    ends = "ends or stops the program that gets it"
    for val, name, why in (("11", "SIGSEGV", ends), ("SEGV", "SIGSEGV", ends), ("sigbus", "SIGBUS", ends),
                           ("FPE", "SIGFPE", ends), ("ILL", "SIGILL", ends), ("ABRT", "SIGABRT", ends),
                           ("KILL", "SIGKILL", ends), ("19", "SIGSTOP", ends), ("TRAP", "SIGTRAP", ends),
                           ("SYS", "SIGSYS", ends), ("TSTP", "SIGTSTP", ends),
                           ("CHLD", "SIGCHLD", "is sent by the system for its own reasons"),
                           ("18", "SIGCONT", "is sent by the system for its own reasons"),
                           ("PIPE", "SIGPIPE", "is sent by the system for its own reasons"),
                           ("32", "signal 32", "is the C library's own"), ("33", "signal 33", "is the C library's own"),
                           (str(signal.SIGRTMAX - 3), "signal %d" % (signal.SIGRTMAX - 3), "is culprit's own")):
        cwd = b.newdir("cwd")
        res = culprit(b, "run", "--report-signal", val, "--", *prog, env=env, cwd=cwd)
        err = res.stderr.decode()
        check(res.returncode == 2 and ("%s %s" % (name, why)) in err and
              len(err.splitlines()) == 1 and not os.listdir(cwd),
              "--report-signal %s was not refused with one line\n%s" % (val, err))
    for val in ("CHLD", "32"):
        rdir = b.newdir("reports")
        res = h.preloaded(b, prog, dict(FAULT4, CULPRIT_REPORT_SIGNAL=val), rdir)
        check(("CULPRIT_REPORT_SIGNAL='%s' is not valid (" % val) in res.err_text and
              "culprit is off for this process" in res.err_text,
              "the library took CULPRIT_REPORT_SIGNAL=%s\n%s" % (val, res.describe()))
        h.no_report(rdir, "CULPRIT_REPORT_SIGNAL=" + val)
    # 0 is no signal: taken as none, and said so
    res = h.cli_run(b, prog, FAULT4, b.newdir("reports"), ("--report-signal", "0"))
    check(res.rc == 1 and "--report-signal 0 means none: no signal asks CMD for a hang report" in res.err_text and
          "the kernel that faulted: step" in res.err_text, "--report-signal 0\n" + res.describe())
    # the library's own parser: CULPRIT_REPORT_SIGNAL=SEGV turns it off with its one line
    rdir = b.newdir("reports")
    res = h.preloaded(b, prog, dict(FAULT4, CULPRIT_REPORT_SIGNAL="SEGV"), rdir)
    check("CULPRIT_REPORT_SIGNAL='SEGV' is not valid (SIGSEGV ends or stops the program" in res.err_text,
          "the library took CULPRIT_REPORT_SIGNAL=SEGV\n" + res.describe())
    h.no_report(rdir, "CULPRIT_REPORT_SIGNAL=SEGV")


@case("trace_files")
def _(b):
    # The files the command writes: a private file renamed into place, mode 0600 as the reports, never through a
    # symbolic link planted where it goes; an exit record has nothing to trace and gets no file.
    os.umask(0o022)
    rdir = b.newdir("reports")
    h.cli_run(b, [b.prog("linked"), "legacy", "ctxsync", "5"], FAULT4, rdir)
    rep = h.load_report(rdir)
    want = os.path.join(rdir, "trace-%d.json" % rep["process"]["pid"])
    for _ in range(2):  # written, then replaced (it is the caller's own file)
        res = culprit(b, "trace", rep["_path"])
        check(res.returncode == 0 and os.path.isfile(want), "no trace:\n%r" % res.stderr)
        mode = os.stat(want).st_mode & 0o777
        check(mode == 0o600, "the trace has mode %o, not 0600 as the reports" % mode)
        check(json.load(open(want)).get("traceEvents"), "the trace is not a trace")
    # a symbolic link planted where the trace goes: left alone, and what it points at too
    victim = os.path.join(b.newdir("victim"), "precious")
    with open(victim, "w") as f:
        f.write("precious\n")
    os.unlink(want)
    os.symlink(victim, want)
    res = culprit(b, "trace", rep["_path"])
    err = res.stderr.decode()
    check(res.returncode == 1 and "is not a regular file of yours (a symbolic link)" in err and
          "no trace written" in err, "a planted link was not refused: exit %d\n%s" % (res.returncode, err))
    check(open(victim).read() == "precious\n" and os.path.islink(want), "the planted link was followed")
    dangling = os.path.join(b.newdir("out"), "t.json")
    os.symlink(os.path.join(os.path.dirname(dangling), "made-through-the-link"), dangling)
    res = culprit(b, "trace", rep["_path"], "-o", dangling)
    check(res.returncode == 1 and not os.path.exists(os.path.join(os.path.dirname(dangling), "made-through-the-link")),
          "-o through a dangling link created its target:\n%r" % res.stderr)
    # an exit record: said so, no file
    ex = {k: v for k, v in rep.items() if k in ("schema", "tool", "process", "python_status", "config")}
    ex.update(kind="exit", exit={"status": 0}, stats={"launches": 0})
    xdir = b.newdir("exit")
    xpath = os.path.join(xdir, "culprit-%d.json" % rep["process"]["pid"])
    with open(xpath, "w") as f:
        json.dump(ex, f)
    res = culprit(b, "trace", xpath)
    err = res.stderr.decode()
    check(res.returncode == 1 and "is an exit record (its process saw no CUDA error): it holds no launches and no "
          "fault, so there is no trace to write" in err and os.listdir(xdir) == [os.path.basename(xpath)],
          "trace of an exit record: exit %d, files %s\n%s" % (res.returncode, os.listdir(xdir), err))
    # NCCL's log file is opened by NCCL with fopen(..., "w"): culprit points it into its own private run
    # directory only, never into one others may write into (where a link could be planted under the next pid)
    show = ["sh", "-c", "echo \"[$NCCL_DEBUG_FILE]\""]
    shared = b.newdir("shared")
    os.chmod(shared, 0o777)
    res = h.cli_run(b, show, None, shared)
    check(res.rc == 0 and "[]" in res.out_text, "NCCL_DEBUG_FILE set into a world-writable directory:\n" +
          res.describe())
    mine = b.newdir("mine")
    res = h.cli_run(b, show, None, mine)
    check(res.rc == 0 and "[%s/nccl-%%h-%%p.log]" % os.path.realpath(mine) in res.out_text,
          "NCCL_DEBUG_FILE not set into a private directory:\n" + res.describe())


def children(pid):
    """The pids whose parent is pid."""
    out = []
    for d in os.listdir("/proc"):
        try:
            with open("/proc/%s/stat" % d) as f:
                st = f.read()
        except (OSError, ValueError):
            continue
        if int(st.rsplit(")", 1)[1].split()[1]) == pid:
            out.append(int(d))
    return out


def gone(pid, seconds):
    """Whether pid is gone (or a zombie) within seconds."""
    until = time.monotonic() + seconds
    while time.monotonic() < until:
        try:
            with open("/proc/%d/stat" % pid) as f:
                if f.read().rsplit(")", 1)[1].split()[0] == "Z":
                    return True
        except OSError:
            return True
        time.sleep(0.05)
    return False


@case("killed_run")
def _(b):
    # kill -KILL of culprit run used to leave the program running unwatched, its output going nowhere. The
    # program now gets SIGTERM as culprit dies (as from a job scheduler): the library writes a hang report of
    # where it stood, and the program ends.
    rdir = b.newdir("reports")
    p = hang_cases.start(b, "cli", ["sync", 20], {"FAKECUDA_HANG": "launch=18"}, rdir, opts=("--mode", "precise"))
    p.wait_for(b"ready\n", "culprit run")
    kids = [c for c in children(p.pid) if os.path.realpath("/proc/%d/exe" % c) == os.path.realpath(b.prog("hang"))]
    check(len(kids) == 1, "the program is not culprit run's child: %r" % children(p.pid))
    p.send(signal.SIGKILL)
    ok = gone(kids[0], 10)
    if not ok:
        os.kill(kids[0], signal.SIGKILL)
    check(ok, "the program outlived the killed culprit run by 10 s")
    p.finish()
    files = hang_cases.hang_files(rdir)
    check(len(files) == 1, "no hang report of the program's end: %s" % files)
    rep = hang_cases.read_json(files[0])
    check((rep.get("hang") or {}).get("trigger") == "SIGTERM", "hang report trigger %r" % rep.get("hang"))

    # a relay for what processes the command left behind still write: it dies with a killed culprit run...
    slow = os.path.join(b.newdir("bin"), "slow-addr2line")
    with open(slow, "w") as f:
        f.write("#!/bin/sh\nsleep 30\n")
    os.chmod(slow, 0o755)
    script = "%s legacy ctxsync 5; (sleep 20; echo late) &" % b.prog("linked")
    p = hang_cases.Bg([b.cli, "run", "--dir", b.newdir("reports"), "--", "sh", "-c", script],
                      h._base_env(b, dict(FAULT4, CULPRIT_ADDR2LINE=slow)), b.newdir("cwd"))
    p.wait_for(b"what they write is passed on after culprit run ends", "culprit run", on_stderr=True)
    until = time.monotonic() + 10
    relay = []
    while not relay and time.monotonic() < until:
        relay = [c for c in children(p.pid) if os.path.realpath("/proc/%d/exe" % c) == os.path.realpath(b.cli)]
        time.sleep(0.05)
    check(len(relay) == 1, "no relay process: %r" % children(p.pid))
    p.send(signal.SIGKILL)
    ok = gone(relay[0], 5)
    p.kill()
    if not ok:
        os.kill(relay[0], signal.SIGKILL)
    check(ok, "the relay outlived the killed culprit run by 5 s")
    p.finish()
    # ...and carries on after culprit run ends as it should, for as long as they write
    res = h.cli_run(b, ["sh", "-c", "(sleep 2; echo late) & echo early"], None, b.newdir("reports"))
    check(res.rc == 0 and res.out_text == "early\nlate\n" and "passed on after culprit run ends" in res.err_text,
          "the relay did not carry on after a normal end\n" + res.describe())


@case("culprit_off")
def _(b):
    # The program faulted, culprit was off or absent in it, and culprit run ended with "no sticky CUDA error".
    # What the library would refuse is refused up front (its own parser reads the environment CMD will get);
    # what turns it off on purpose, or a library the loader does not take, is said at the end instead.
    prog = [b.prog("linked"), "legacy", "ctxsync", "5"]
    off_end = "culprit was off in %s: " % prog[0]

    def refused(opts, env, want, what):
        cwd = b.newdir("cwd")
        res = culprit(b, "run", *(list(opts) + ["--"] + prog), env=h._base_env(b, dict(FAULT4, **env)), cwd=cwd)
        err = res.stderr.decode()
        check(res.returncode == 2 and all(w in err for w in want) and len(err.splitlines()) == 1 and
              not res.stdout and "error: cu" not in err, "%s was not refused up front\n%s" % (what, err))
        return cwd

    # an inherited bad value: the library would be off
    refused((), {"CULPRIT_RING": "bogus"}, ["CULPRIT_RING='bogus' is not valid", "in the environment culprit run "
                                            "was given", "fix or unset CULPRIT_RING"], "CULPRIT_RING=bogus")
    # (culprit run sets CULPRIT_QUIET itself but under --verbose, which leaves the inherited one to the library)
    refused(("--verbose",), {"CULPRIT_QUIET": "sometimes"}, ["CULPRIT_QUIET='sometimes' is not valid"], "CULPRIT_QUIET")
    # values of culprit's options beyond the library's limits
    refused(("--kernels", "k" * 300), {}, ["--kernels: CULPRIT_KERNELS=", "at most 255 characters",
                                           "the library would be off"], "a 300-character --kernels glob")
    deep = os.path.join(b.newdir("deep"), *(["d" * 200] * 6))
    cwd = refused(("--dir", deep), {}, ["--dir: CULPRIT_DIR=", "path too long"], "a --dir over 1023 bytes")
    check(not os.path.exists(deep), "the refused --dir was left behind")
    # culprit's library itself: not a file the loader can preload
    bad = os.path.join(b.newdir("lib"), "libnot.so")
    with open(bad, "w") as f:
        f.write("not a library\n")
    refused((), {"CULPRIT_LIB": bad}, ["CULPRIT_LIB names %s, which is not an ELF shared library" % bad],
            "CULPRIT_LIB naming a text file")
    cut = os.path.join(os.path.dirname(bad), "libcut.so")
    with open(b.lib, "rb") as f, open(cut, "wb") as g:
        g.write(f.read(8192))  # preloaded, this crashed the loader with SIGBUS in the program
    refused((), {"CULPRIT_LIB": cut}, ["which is cut short"], "a truncated CULPRIT_LIB")

    # off on purpose: said at the end (and, from the environment, at the start too)
    res = h.cli_run(b, prog, dict(FAULT4, CULPRIT_MODE="off"), b.newdir("reports"))
    lines = h.culprit_lines(res)
    check(res.rc == 1 and "error: cuCtxSynchronize returned CUDA_ERROR_ILLEGAL_ADDRESS" in res.err_text and
          lines and lines[0].startswith("culprit: CULPRIT_MODE=off in the environment: culprit records nothing") and
          lines[-1].startswith("culprit: " + off_end + "CULPRIT_MODE=off, in the environment") and
          "no sticky CUDA error" not in res.err_text, "inherited CULPRIT_MODE=off\n" + res.describe())
    res = h.cli_run(b, prog, FAULT4, b.newdir("reports"), ("--mode", "off"))
    check(h.culprit_lines(res) == ["culprit: " + off_end + "--mode off; a fault there would not show here"],
          "--mode off\n" + res.describe())
    # a library the loader refuses for a reason culprit's own check does not look at (its OS ABI byte): the
    # loader's line in the program's output says culprit was off there
    abi = os.path.join(os.path.dirname(bad), "libabi.so")
    with open(b.lib, "rb") as f:
        data = bytearray(f.read())
    data[7] = 0x61
    with open(abi, "wb") as f:
        f.write(data)
    res = h.cli_run(b, prog, dict(FAULT4, CULPRIT_LIB=abi), b.newdir("reports"))
    check(res.rc == 1 and h.culprit_lines(res)[-1] == "culprit: %sthe dynamic loader could not preload libabi.so "
          "(ELF file OS ABI invalid); a fault there would not show here" % off_end,
          "a library the loader refused\n" + res.describe())
    # a library whose own dependency is missing: the loader stops the program before it runs
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc:
        d = b.newdir("dep")
        for name, src, extra in (("libgone.so", "int gone(void){return 1;}", []),
                                 ("libneeds.so", "int gone(void); int needs(void){return gone();}",
                                  ["-L" + d, "-lgone"])):
            with open(os.path.join(d, name + ".c"), "w") as f:
                f.write(src + "\n")
            subprocess.run([cc, "-shared", "-fPIC", "-o", os.path.join(d, name), os.path.join(d, name + ".c")] +
                           extra, check=True, capture_output=True)
        os.unlink(os.path.join(d, "libgone.so"))
        res = h.cli_run(b, prog, dict(FAULT4, CULPRIT_LIB=os.path.join(d, "libneeds.so")), b.newdir("reports"))
        check(res.rc == 127 and h.culprit_lines(res)[-1].startswith(
            "culprit: the dynamic loader stopped %s before it ran (libgone.so: cannot open shared object file" %
            prog[0]) and "no sticky CUDA error" not in res.err_text, "a library with a missing dependency\n" +
            res.describe())


ODD = [None, True, [], {}, "", 0, -1, 1e308, -9223372036854775808, 18446744073709551616, 0.5, [None], "x",
       {"kernel": {}}, "k\x1b[2Jern\nculprit: the kernel that faulted: forged\x9b31m\u202e\x07", "\x00nul",
       ["\x1b]0;title\x07", "\nculprit: forged"], "a" * 5000]


def mutate(rng, node, changes):
    """changes random edits of a report's tree in place: values of the wrong type, control characters, deletions,
    deep nesting."""
    for _ in range(changes):
        slots = []

        def walk(n):
            items = list(n.items()) if isinstance(n, dict) else list(enumerate(n)) if isinstance(n, list) else []
            for k, v in items:
                slots.append((n, k))
                walk(v)
        walk(node)
        if not slots:
            return
        parent, key = slots[rng.randrange(len(slots))]
        r = rng.random()
        if r < 0.2:
            del parent[key]
        elif r < 0.25:
            deep = 1
            for _ in range(rng.randrange(20, 200)):
                deep = [deep]
            parent[key] = deep
        else:
            parent[key] = ODD[rng.randrange(len(ODD))]


@case("fuzz_cli")
def _(b):
    # The command itself on mutated real reports (the in-process fuzz, unit_fuzz_reports, covers the renderers
    # under the sanitizers; this one, culprit report's and trace's own paths): no crash, a status of 0 or 1,
    # bounded output, and every byte it prints fit for a terminal. Fixed seed, bounded count.
    import random
    rng = random.Random(24)
    fixtures = sorted(glob.glob(os.path.join(h.REPO, "tests", "gpu", "fixtures", "*.json")))
    check(len(fixtures) >= 10, "the report fixtures are missing: %s" % fixtures)
    job = b.newdir("job")
    for n, path in enumerate(rng.sample(fixtures, 12)):
        with open(path) as f:
            rep = json.load(f)
        mutate(rng, rep, rng.randrange(1, 8))
        d = b.newdir("one")
        out = os.path.join(d, "culprit-%d.json" % (100 + n))
        with open(out, "w") as f:
            json.dump(rep, f)
        shutil.copy(out, job)
        size = os.path.getsize(out)
        for args in (["report", out], ["report", "--brief", out], ["report", "--json", out],
                     ["trace", out, "-o", "-"]):
            res = culprit(b, *args)
            what = "culprit %s on a mutation of %s" % (" ".join(args[:-1]), os.path.basename(path))
            check(res.returncode in (0, 1), "%s: exit %d\n%r" % (what, res.returncode, res.stderr[-2000:]))
            check(len(res.stdout) + len(res.stderr) < 16 * size + 256 * 1024, "%s: %d bytes of output" % (
                what, len(res.stdout) + len(res.stderr)))
            at = unsafe_at(res.stdout + res.stderr)
            check(at < 0, "%s: a raw byte at %d: %r" % (what, at, (res.stdout + res.stderr)[max(0, at - 40):at + 40]))
    for args in (["report", job], ["report", "--brief", job], ["report", "--json", job]):
        res = culprit(b, *args)
        check(res.returncode in (0, 1) and unsafe_at(res.stdout + res.stderr) < 0,
              "culprit %s of 12 mutated reports: exit %d\n%r" % (" ".join(args[:-1]), res.returncode, res.stderr))


if __name__ == "__main__":
    sys.exit(h.main())
