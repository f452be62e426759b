#!/usr/bin/env python3
"""Scenario tests of culprit over the simulated CUDA driver: the verdict where users already look. The text of the
sticky error (the CUDA runtime's cudaGetErrorString, the driver's cuGetErrorString however it was reached) gets the
verdict's line once the report is written, the code and every other text untouched; torchrun's error file is
written for a worker that wrote none; `culprit run --on-report` and `--events` deliver each report. The harness is
cases.py's.

    python3 verdict_cases.py --build BUILD CASE     run one case: exit 0 pass, 1 fail (with the reason), 77 skip
    python3 verdict_cases.py --list                 the case names, one a line
    python3 verdict_cases.py --check-list NAME...   check NAME... (CMake's list) is exactly the list of cases

Standard library only.
"""

import json
import os
import re
import shutil
import socket
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cases  # noqa: E402
from cases import CaseSkipped, check, cli_run, load_report, no_report, plain, preloaded, same_as_plain  # noqa: E402

cases.CASES.clear()  # this file's cases only
case = cases.case

DOC = {700: "an illegal memory access was encountered", 710: "device-side assert triggered"}
TEXTS = ("runtime", "driver", "driver-procaddr", "driver-dlsym")


def texts(res):
    """The program's labelled texts (errtext.c prints each between << and >>, newlines as \\n)."""
    return {m.group(1): m.group(2).replace("\\n", "\n")
            for m in re.finditer(r"^([\w-]+): <<(.*)>>$", res.out_text, re.M)}


def fault_env(code):
    return {"FAKECUDA_FAULT": "launch=2,code=%d" % code}


def process_gone(pid, tries, pause):
    """Whether process pid is gone (or a zombie), polling up to tries times pause seconds apart."""
    for _ in range(tries):
        try:
            with open("/proc/%d/stat" % pid) as f:
                if f.read().split(") ")[-1].startswith("Z"):
                    return True
        except OSError:
            return True
        time.sleep(pause)
    return False


def verdict_line(rep):
    """What the line must say for this report: the culprit's kernel, and the report's path."""
    return "culprit: the kernel that faulted: write_oob(int*, int), launched at ", "; report: " + rep["_path"]


def check_decorated(text, code, rep, what):
    head, tail = verdict_line(rep)
    first, _, line = text.partition("\n")
    check(first == DOC[code], "%s: the first line must stay the documented text %r: %r" % (what, DOC[code], text))
    check(line.startswith(head) and line.endswith(tail) and "\n" not in line,
          "%s: the second line must name write_oob and the report %s: %r" % (what, rep["_path"], line))


@case("errtext_print")
def _(b):
    """Every way a framework reads the error's text gives the documented text and the verdict's line, for a device
    assert (the runtime's own table) and an illegal address (the runtime asks the driver: the line comes once); the
    error's name, the code and other codes' texts stay as they were; the text is static (the same pointer twice)."""
    argv = [b.prog("errtext"), "print"]
    for code in (710, 700):
        base = plain(b, argv, fault_env(code))
        got = texts(base)
        check(base.rc == 1 and all(got.get(k) == DOC[code] for k in TEXTS),
              "without culprit the texts must be the documented ones\n%s" % base.describe())
        rdir = b.newdir("reports")
        res = preloaded(b, argv, fault_env(code), rdir)
        check(res.rc == base.rc and ("rc=%d" % code) in res.out_text, "the program's error changed\n%s" %
              res.describe())
        rep = load_report(rdir)
        got = texts(res)
        for k in TEXTS:
            check_decorated(got.get(k, ""), code, rep, "%s (%d)" % (k, code))
        check(got.get("name") == texts(base).get("name"), "the error's name changed: %r" % got.get("name"))
        check(got.get("runtime-other") == "invalid argument", "another code's text changed: %r" %
              got.get("runtime-other"))
        check("same pointer: 1" in res.out_text, "the text is not static\n%s" % res.describe())


@case("errtext_compare")
def _(b):
    """Comparisons programs make: the first line and a prefix comparison with the documented text hold; an exact
    strcmp holds only with the text off (CULPRIT_EXCEPTION_TEXT=0, culprit run --no-exception-text), which leaves
    every text as the runtime and the driver word it."""
    argv = [b.prog("errtext"), "compare"]
    base = plain(b, argv, fault_env(710))
    for k in ("runtime equal", "runtime prefix", "driver equal", "driver prefix"):
        check("%s: 1" % k in base.out_text, "without culprit, %s must hold\n%s" % (k, base.describe()))
    res = preloaded(b, argv, fault_env(710), b.newdir("reports"))
    for k, want in (("runtime equal", 0), ("runtime prefix", 1), ("runtime first line", 1), ("driver equal", 0),
                    ("driver prefix", 1)):
        check("%s: %d" % (k, want) in res.out_text, "under culprit, %s must be %d\n%s" % (k, want, res.describe()))
    off = preloaded(b, argv, dict(fault_env(710), CULPRIT_EXCEPTION_TEXT="0"), b.newdir("reports"))
    check(off.out_text == base.out_text, "CULPRIT_EXCEPTION_TEXT=0 must leave the texts alone\n%s" % off.describe())
    rdir = b.newdir("reports")
    cli = cli_run(b, [b.prog("errtext"), "print"], fault_env(710), rdir, ["--no-exception-text"])
    got = texts(cli)
    check(cli.rc == 1 and all(got.get(k) == DOC[710] for k in TEXTS),
          "--no-exception-text must leave the texts alone\n%s" % cli.describe())
    bad = preloaded(b, argv, dict(fault_env(710), CULPRIT_EXCEPTION_TEXT="maybe"), b.newdir("reports"))
    check("CULPRIT_EXCEPTION_TEXT" in bad.err_text and "use 1 or 0" in bad.err_text,
          "a bad CULPRIT_EXCEPTION_TEXT must be named\n%s" % bad.describe())


@case("errtext_healthy")
def _(b):
    """A program without a fault gets every text as before, and its output is unchanged."""
    argv = [b.prog("errtext"), "print"]
    base = plain(b, argv)
    check(base.rc == 0 and texts(base).get("runtime-710") == DOC[710], "the healthy run\n%s" % base.describe())
    rdir = b.newdir("reports")
    res = preloaded(b, argv, None, rdir)
    same_as_plain(base, res, "a healthy program under culprit")
    no_report(rdir, "a healthy program")


@case("errtext_threads_fork")
def _(b):
    """Threads asking at once all get the whole text; a child forked after the error gets the runtime's own text
    (the verdict was its parent's, and its own culprit saw no fault)."""
    res = preloaded(b, [b.prog("errtext"), "threads"], fault_env(700), b.newdir("reports"))
    check("threads agree: 1" in res.out_text and "\nculprit: " in texts(res).get("runtime", ""),
          "threads must all get the decorated text\n%s" % res.describe())
    res = preloaded(b, [b.prog("errtext"), "fork"], fault_env(700), b.newdir("reports"))
    got = texts(res)
    check("\nculprit: " in got.get("parent", "") and got.get("child") == DOC[700] and "child status 0" in res.out_text,
          "the parent's text names the culprit, the child's is the runtime's\n%s" % res.describe())


# torchrun's error file -------------------------------------------------------------------------------------------

def torchrun_summary(path):
    """What torchrun's summary shows of a worker's error file: its reading (ProcessFailure) and its formatting of
    the root cause (ChildFailedError), done the way torch does them."""
    with open(path) as f:
        data = json.load(f)
    message = data["message"]
    if isinstance(message, str):
        int(data.get("timestamp", 0))
        return message
    int(message["extraInfo"]["timestamp"])
    return message.get("extraInfo", {}).get("py_callstack", message.get("message", "<N/A>")).replace("\n", "\n  ")


def fake_torchrun(b, rdir, errfile, env=None, opts=()):
    """A launcher as torchrun starts a worker: its rank variables and TORCHELASTIC_ERROR_FILE; the worker runs
    under culprit run."""
    e = {"RANK": "0", "LOCAL_RANK": "0", "WORLD_SIZE": "1", "TORCHELASTIC_RUN_ID": "job42",
         "TORCHELASTIC_ERROR_FILE": errfile}
    e.update(fault_env(700))
    e.update(env or {})
    return cli_run(b, [b.prog("errtext"), "print"], e, rdir, opts)


@case("errfile_torchrun")
def _(b):
    """A worker without @record that dies with a verdict: culprit writes its error file in torch's format, and the
    summary torchrun builds from it names the culprit and the report. A file already there (the worker's @record
    wrote it) is left alone; a link there is not followed; a healthy worker or one off culprit writes none."""
    work = b.newdir("torchrun")
    errfile = os.path.join(work, "error.json")
    rdir = b.newdir("reports")
    res = fake_torchrun(b, rdir, errfile)
    check(res.rc == 1, "the worker's exit status changed\n%s" % res.describe())
    check(os.path.isfile(errfile), "no error file was written\n%s" % res.describe())
    report = [f for f in os.listdir(rdir) if f.startswith("culprit-") and f.endswith(".json")]
    check(len(report) == 1, "one report expected: %r" % report)
    summary = torchrun_summary(errfile)
    with open(errfile) as f:
        message = json.load(f)["message"]["message"]
    check(message.startswith("CUDA_ERROR_ILLEGAL_ADDRESS (700): " + DOC[700] + "\nculprit: the kernel that faulted: "
                             "write_oob(int*, int)") and report[0] in message,
          "the error file's message must name the error, the culprit and the report: %r" % message)
    check("write_oob" in summary and "the kernel that faulted" in summary and report[0] in summary,
          "torchrun's summary must name the culprit and the report:\n%s" % summary)
    # the worker's own @record wrote the file first: it stays as it was
    with open(errfile, "w") as f:
        f.write('{"message": "the worker\'s own"}')
    fake_torchrun(b, b.newdir("reports"), errfile)
    with open(errfile) as f:
        check(f.read() == '{"message": "the worker\'s own"}', "an existing error file was overwritten")
    # a link where the file would be: not followed
    target = os.path.join(work, "target.json")
    link = os.path.join(work, "link.json")
    os.symlink(target, link)
    fake_torchrun(b, b.newdir("reports"), link)
    check(not os.path.exists(target) and os.path.islink(link), "culprit followed a link to write the error file")
    # a worker that aborts after the fault (no exit handlers run): written as the signal ends it
    aborted = os.path.join(work, "aborted.json")
    res = cli_run(b, [b.prog("errtext"), "abort"], {"RANK": "0", "LOCAL_RANK": "0", "WORLD_SIZE": "1",
                                                      "TORCHELASTIC_ERROR_FILE": aborted, "FAKECUDA_FAULT": "launch=2"},
                  b.newdir("reports"))
    check(res.rc == -6 and os.path.isfile(aborted) and "the kernel that faulted" in torchrun_summary(aborted),
          "a worker aborted after its fault must leave the error file\n%s" % res.describe())
    # a healthy worker, and a faulting one with culprit off, write none
    healthy = os.path.join(work, "healthy.json")
    fake_torchrun(b, b.newdir("reports"), healthy, {"FAKECUDA_FAULT": ""})
    check(not os.path.exists(healthy), "a healthy worker got an error file")
    off = os.path.join(work, "off.json")
    fake_torchrun(b, b.newdir("reports"), off, None, ["--mode", "off"])
    check(not os.path.exists(off), "a worker with culprit off got an error file")


# --on-report and --events ----------------------------------------------------------------------------------------

def run_faulting(b, opts, env=None):
    rdir = b.newdir("reports")
    e = dict(fault_env(700))
    e.update(env or {})
    base = plain(b, [b.prog("errtext"), "print"], e)
    res = cli_run(b, [b.prog("errtext"), "print"], e, rdir, opts)
    check(res.rc == base.rc == 1 and res.out_text.split("\n")[0] == "rc=700",
          "the program's exit status or output changed\n%s" % res.describe())
    files = [os.path.join(rdir, f) for f in os.listdir(rdir) if f.startswith("culprit-") and f.endswith(".json")]
    check(len(files) == 1, "one report expected in %s: %r" % (rdir, files))
    with open(files[0]) as f:
        rep = json.load(f)
    rep["_path"] = files[0]
    return res, rep


@case("on_report")
def _(b):
    """--on-report runs the command with the report's path; one that fails is said and changes nothing else; one
    that hangs (and its children) is stopped at --on-report-timeout and said; bad values are refused."""
    work = b.newdir("onreport")
    got = os.path.join(work, "got")
    res, rep = run_faulting(b, ["--on-report", "sh -c 'printf \"%%s\\n\" \"$1\" >> %s' on-report" % got])
    with open(got) as f:
        check(f.read() == rep["_path"] + "\n", "the command did not get the report's path")
    res, rep = run_faulting(b, ["--on-report", "sh -c 'exit 3' x"])
    check("--on-report: 'sh -c 'exit 3' x' exited with status 3 (report %s)" % rep["_path"] in res.err_text,
          "a failing command must be said\n%s" % res.describe())
    pidfile = os.path.join(work, "pid")
    res, rep = run_faulting(b, ["--on-report-timeout", "0.2", "--on-report",
                                "sh -c 'sleep 600 & echo $! > %s; wait' x" % pidfile])
    check("was still running after 0.200 s and was stopped" in res.err_text,
          "a hanging command must be stopped and said\n%s" % res.describe())
    with open(pidfile) as f:
        child = int(f.read())
    # the killed sleep is reaped by init; wait for it to disappear, however long that takes
    check(process_gone(child, 500, 0.02), "the hanging command's own child was left running")
    for opts, why in ((["--on-report", ""], "needs a command"), (["--on-report-timeout", "0"], "seconds from"),
                      (["--events", ""], "needs a file")):
        bad = cli_run(b, ["true"], None, b.newdir("reports"), opts)
        check(bad.rc == 2 and why in bad.err_text, "%r must be refused\n%s" % (opts, bad.describe()))


@case("on_report_signal")
def _(b):
    """culprit run ended by a signal while its --on-report command runs: the command goes with it, rather than
    outlive the bound culprit was keeping."""
    work = b.newdir("onreport")
    pidfile = os.path.join(work, "pid")
    rdir = b.newdir("reports")
    env = cases._base_env(b, fault_env(700))
    cmd = [b.cli, "run", "--dir", rdir, "--on-report-timeout", "3600", "--on-report",
           "sh -c 'echo $$ > %s.tmp; mv %s.tmp %s; exec sleep 600' x" % (pidfile, pidfile, pidfile), "--",
           b.prog("errtext"), "print"]
    proc = subprocess.Popen(cmd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    try:
        for _ in range(3000):  # until the command runs, however long the program takes
            if os.path.exists(pidfile) or proc.poll() is not None:
                break
            time.sleep(0.01)
        check(os.path.exists(pidfile), "the --on-report command never started")
        with open(pidfile) as f:
            child = int(f.read())
        proc.terminate()
        proc.wait(timeout=cases.RUN_TIMEOUT)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    gone = process_gone(child, 3000, 0.01)  # the kernel kills it when culprit ends; wait for that
    if not gone:
        os.kill(child, 9)
    check(gone, "the --on-report command outlived culprit run")


def event_of(line, rep):
    ev = json.loads(line)
    for k, want in (("event", "culprit.report"), ("kind", "fault"), ("error", "CUDA_ERROR_ILLEGAL_ADDRESS"),
                    ("code", 700), ("api", "cuCtxSynchronize"), ("kernel", "write_oob(int*, int)"),
                    ("report", rep["_path"]), ("pid", rep["process"]["pid"]), ("certainty", "exact")):
        check(ev.get(k) == want, "the event's %s is %r, not %r: %s" % (k, ev.get(k), want, line))
    check(ev.get("launch") == rep["culprit"]["seq"], "the event's launch is %r: %s" % (ev.get("launch"), line))
    check(ev.get("host") and isinstance(ev.get("time"), int) and ev.get("launched_at"),
          "the event lacks host, time or launch line: %s" % line)
    return ev


@case("events_file")
def _(b):
    """--events appends one line of JSON per report to a file, with the launcher's rank and job; a second run
    appends; a link there is not followed and is said, the run otherwise unchanged."""
    work = b.newdir("events")
    path = os.path.join(work, "events.jsonl")
    res, rep = run_faulting(b, ["--events", path])
    res2, rep2 = run_faulting(b, ["--events", path], {"RANK": "3", "LOCAL_RANK": "1", "WORLD_SIZE": "4",
                                                       "TORCHELASTIC_RUN_ID": "job42"})
    with open(path) as f:
        lines = f.read().split("\n")
    check(len(lines) == 3 and lines[2] == "", "two lines expected: %r" % lines)
    ev = event_of(lines[0], rep)
    check("rank" not in ev, "a process without launcher has no rank: %s" % lines[0])
    ev = event_of(lines[1], rep2)
    check(ev.get("rank") == 3 and ev.get("local_rank") == 1 and ev.get("world_size") == 4 and
          ev.get("launcher") == "torchrun" and ev.get("job") == "torchrun:job42", "the rank fields: %s" % lines[1])
    target = os.path.join(work, "target")
    link = os.path.join(work, "link")
    os.symlink(target, link)
    res, rep = run_faulting(b, ["--events", link])
    check(not os.path.exists(target) and "--events: cannot deliver" in res.err_text,
          "a link must not be followed, and the failure said\n%s" % res.describe())


@case("events_socket")
def _(b):
    """--events to a unix datagram socket a collector reads: the line arrives whole."""
    work = b.newdir("events")
    path = os.path.join(work, "events.sock")
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    try:
        sock.bind(path)
        res, rep = run_faulting(b, ["--events", path])
        sock.settimeout(30)
        data = sock.recv(65536).decode()
    finally:
        sock.close()
    check(data.endswith("\n") and data.count("\n") == 1, "one line expected: %r" % data)
    event_of(data, rep)


@case("events_socat")
def _(b):
    """The documented recipe (docs/usage.md): socat receives the events on a unix socket and appends them to a file
    a log shipper tails."""
    if not shutil.which("socat"):
        raise CaseSkipped("socat is not installed (Debian package socat)")
    work = b.newdir("events")
    sockpath = os.path.join(work, "events.sock")
    logpath = os.path.join(work, "events.log")
    collector = subprocess.Popen(["socat", "-u", "UNIX-RECV:%s,unlink-early" % sockpath,
                                  "OPEN:%s,creat,append" % logpath], stdin=subprocess.DEVNULL)
    try:
        for _ in range(1500):  # until the collector listens, however long it takes to start
            if os.path.exists(sockpath) or collector.poll() is not None:
                break
            time.sleep(0.02)
        check(os.path.exists(sockpath), "socat did not start")
        res, rep = run_faulting(b, ["--events", sockpath])
        for _ in range(1500):  # until the collector wrote the line out
            if os.path.exists(logpath) and open(logpath).read().endswith("\n"):
                break
            time.sleep(0.02)
        with open(logpath) as f:
            event_of(f.read(), rep)
    finally:
        collector.kill()
        collector.wait()


if __name__ == "__main__":
    sys.exit(cases.main())
