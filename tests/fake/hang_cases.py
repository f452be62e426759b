#!/usr/bin/env python3
"""Scenario tests of culprit's hang reports over the simulated CUDA driver (tests/fakecuda, FAKECUDA_HANG).

progs/hang.c launches kernels of which one keeps running, prints "ready" and waits; each case sends it signals
(or lets --hang-timeout fire) with and without culprit and checks how the program ended (exit status, its own
output, its own signal handlers) and the hang report culprit wrote (docs/report.md, "Hang reports"). The harness
is cases.py's.

    python3 hang_cases.py --build BUILD CASE     run one case: exit 0 pass, 1 fail (with the reason), 77 skip
    python3 hang_cases.py --list                 the case names, one a line
    python3 hang_cases.py --check-list NAME...   check NAME... (CMake's list) is exactly the list of cases

Standard library only.
"""

import glob
import json
import os
import signal
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cases  # noqa: E402
from cases import STEP, CaseFailed, CaseSkipped, check  # noqa: E402

HANG_SRC = os.path.join(cases.PROG_SRC, "hang.c")
STOP_SIGNALS = {signal.SIGTERM: "SIGTERM", signal.SIGINT: "SIGINT", signal.SIGQUIT: "SIGQUIT",
                signal.SIGABRT: "SIGABRT"}

cases.CASES.clear()  # this file's cases only
CASES, case = cases.CASES, cases.case


# ---------------------------------------------------------------------------------------------------------------
# Programs running in the background


class Bg:
    """A program started in its own session, its output collected as it comes, its stdin kept open."""

    def __init__(self, argv, env, cwd):
        def start():
            cases._no_core()
            os.setsid()
        self.argv = argv
        self.proc = subprocess.Popen(argv, env=env, cwd=cwd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, preexec_fn=start)
        self.pid = self.proc.pid
        self._out, self._err = [], []
        self._readers = [threading.Thread(target=self._pump, args=(self.proc.stdout, self._out), daemon=True),
                         threading.Thread(target=self._pump, args=(self.proc.stderr, self._err), daemon=True)]
        for t in self._readers:
            t.start()

    @staticmethod
    def _pump(f, into):
        for chunk in iter(lambda: f.read1(4096), b""):
            into.append(chunk)

    def out(self):
        return b"".join(self._out)

    def err(self):
        return b"".join(self._err)

    def wait_for(self, text, what, on_stderr=False):
        """Waits until stdout (or stderr) holds text (bytes); fails if the program ends first."""
        until = time.monotonic() + cases.RUN_TIMEOUT
        while text not in (self.err() if on_stderr else self.out()):
            if self.proc.poll() is not None or time.monotonic() > until:
                self.kill()
                raise CaseFailed("%s: the program never printed %r\n--- stdout\n%s--- stderr\n%s" % (
                    what, text, self.out().decode("utf-8", "replace"), self.err().decode("utf-8", "replace")))
            time.sleep(0.02)

    def send(self, sig, pid=None):
        os.kill(pid or self.pid, sig)

    def close_stdin(self):
        self.proc.stdin.close()

    def kill(self):
        try:
            os.killpg(self.pid, signal.SIGKILL)
        except OSError:
            pass

    def alive(self):
        return self.proc.poll() is None

    def finish(self):
        """Waits for the end; returns a cases.Result."""
        try:
            self.proc.wait(timeout=cases.RUN_TIMEOUT)
        except subprocess.TimeoutExpired:
            self.kill()
            self.proc.wait()
            raise CaseFailed("%s did not end (hang?)\n--- stderr\n%s" % (" ".join(self.argv),
                                                                           self.err().decode("utf-8", "replace")))
        for t in self._readers:
            t.join(timeout=10)
        try:
            self.proc.stdin.close()
        except (OSError, ValueError):
            pass
        return cases.Result(self.argv, self.proc, self.out(), self.err())


def start(b, how, args, env=None, rdir=None, opts=()):
    """progs/hang ARGS in the background: how is "plain", "preload" or "cli" (culprit run --dir rdir OPTS)."""
    argv = [b.prog("hang")] + [str(a) for a in args]
    e = cases._base_env(b, env)
    if how == "preload":
        e["LD_PRELOAD"] = b.lib
        e.setdefault("CULPRIT_DIR", rdir)
    elif how == "cli":
        argv = [b.cli, "run", "--dir", rdir] + list(opts) + ["--"] + argv
    return Bg(argv, e, b.newdir(how))


def signalled(b, how, args, sig, env=None, rdir=None, opts=(), ready=b"ready\n"):
    """Starts the program, sends sig once it is ready, and returns its result."""
    p = start(b, how, args, env, rdir, opts)
    p.wait_for(ready, how)
    p.send(sig)
    return p.finish()


# ---------------------------------------------------------------------------------------------------------------
# Reports


def hang_files(rdir):
    return sorted(glob.glob(os.path.join(rdir, "**", "culprit-*-hang.json"), recursive=True))


def wait_hang_file(rdir, p, what):
    until = time.monotonic() + cases.RUN_TIMEOUT
    while not hang_files(rdir):
        if not p.alive() or time.monotonic() > until:
            p.kill()
            raise CaseFailed("%s: no hang report appeared\n--- stderr\n%s" % (what, p.err().decode("utf-8",
                                                                                                  "replace")))
        time.sleep(0.05)


def read_json(path):
    try:
        with open(path) as f:
            return json.load(f)
    except ValueError as e:
        raise CaseFailed("report %s is not valid JSON: %s" % (path, e))


def load_hang(b, rdir, pid, symbolize=False):
    """The one hang report of process pid in rdir; with symbolize, after `culprit report` added file:line."""
    files = hang_files(rdir)
    want = [f for f in files if os.path.basename(f) == "culprit-%d-hang.json" % pid]
    check(len(files) == 1 and want, "expected one hang report culprit-%d-hang.json in %s, found %s" % (
        pid, rdir, [os.path.basename(f) for f in files]))
    path = want[0]
    if symbolize:
        res = subprocess.run([b.cli, "report", path], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             timeout=cases.RUN_TIMEOUT)
        check(res.returncode == 0, "culprit report %s failed: %s" % (path, res.stderr.decode("utf-8", "replace")))
    rep = read_json(path)
    check(rep.get("schema") == "culprit.report/1", "schema %r" % rep.get("schema"))
    check(rep.get("kind") == "hang", "kind %r, expected hang" % rep.get("kind"))
    check((rep.get("process") or {}).get("pid") == pid, "process.pid %r, expected %d" % (
        (rep.get("process") or {}).get("pid"), pid))
    for key in ("tool", "python_status", "config", "stats", "streams", "threads", "queued", "candidates"):
        check(key in rep, "the hang report has no %r" % key)
    rep["_path"] = path
    return rep


def check_trigger(rep, sig, sender=None):
    h = rep.get("hang") or {}
    name = STOP_SIGNALS.get(sig) or "SIG" + signal.Signals(sig).name[3:]
    check(h.get("trigger") == name and h.get("signal") == int(sig), "hang trigger %r signal %r, expected %s" % (
        h.get("trigger"), h.get("signal"), name))
    if sender is not None:
        check(h.get("sender_pid") == sender, "hang.sender_pid %r, expected %d" % (h.get("sender_pid"), sender))
    for key in ("stalled_ms", "time_ns", "time_unix_ns"):
        check(isinstance(h.get(key), int), "hang.%s missing: %r" % (key, h))


def expect_in_flight(rep, seq, symbolized):
    v = rep.get("verdict") or {}
    check(v.get("certainty") == "exact", "verdict %r (%r), expected exact" % (v.get("certainty"), v.get("reason")))
    cases.check_launch(rep.get("culprit"), "launch in flight", kernel=STEP, seq=seq, stream_kind="legacy",
                       symbolized=symbolized)
    check(v.get("window") == {"first": seq, "last": seq}, "verdict.window %r" % v.get("window"))
    if symbolized:
        cases.expect_frame(rep["culprit"].get("stack"), HANG_SRC, cases.marker_line(HANG_SRC), "in-flight stack")


def thread_of(rep, tid):
    for t in rep.get("threads") or []:
        if t.get("tid") == tid:
            return t
    raise CaseFailed("thread %d is not among the report's threads %s" % (
        tid, [(t.get("tid"), t.get("name")) for t in rep.get("threads") or []]))


def starts_where_it_waits(frames, what):
    """A thread's stack begins where it was interrupted, not inside culprit's signal handler."""
    check(frames, "%s: no stack" % what)
    mod = os.path.basename(frames[0].get("module") or "")
    check(mod != "libculprit.so", "%s: the stack begins inside culprit\n%s" % (what, cases.frames_text(frames)))


def frames_in(frames, src, function):
    return any(os.path.basename(f.get("file") or "") == os.path.basename(src) and f.get("function") == function
               for f in frames or [])


def proc_status(pid):
    """SigCgt (as a set of signal numbers) and the number of threads of a running process."""
    with open("/proc/%d/status" % pid) as f:
        fields = dict(l.split(":", 1) for l in f.read().splitlines() if ":" in l)
    mask = int(fields["SigCgt"].strip(), 16)
    return {s for s in range(1, 65) if mask >> (s - 1) & 1}, int(fields["Threads"].strip())


def same_end(base, got, what):
    """The program ended the same way with culprit: status, stdout, its own stderr lines."""
    cases.same_as_plain(base, got, what)


# ---------------------------------------------------------------------------------------------------------------
# The cases

HANG18 = {"FAKECUDA_HANG": "launch=18"}


@case("hang_sigterm_precise")
def _(b):
    """SIGTERM to a process waiting on a launch that never completes: it dies of SIGTERM as without culprit, and
    the hang report names launch #18 exactly (precise mode), with the launches queued behind it, its stream, the
    main thread where it waits, and culprit's handlers and watcher thread in place."""
    env = dict(HANG18, CULPRIT_MODE="precise")
    base = signalled(b, "plain", ["sync", 20], signal.SIGTERM, env)
    check(base.rc == -signal.SIGTERM, "scenario broken\n" + base.describe())
    rdir = b.newdir("reports")
    p = start(b, "preload", ["sync", 20], env, rdir)
    p.wait_for(b"ready\n", "preload")
    caught, nthreads = proc_status(p.pid)
    p.send(signal.SIGTERM)
    res = p.finish()
    same_end(base, res, "preloaded")
    check({signal.SIGTERM, signal.SIGINT, signal.SIGQUIT, signal.SIGABRT, signal.SIGUSR1} <= caught,
          "culprit's handlers are not all installed: SigCgt %s" % sorted(caught))
    check("culprit: hang report: SIGTERM" in res.err_text, "the library did not print the report\n" + res.describe())
    rep = load_hang(b, rdir, res.pid, symbolize=True)
    check_trigger(rep, signal.SIGTERM, sender=os.getpid())
    expect_in_flight(rep, 18, True)
    check([q.get("seq") for q in rep["queued"]] == [19, 20], "queued %r" % [q.get("seq") for q in rep["queued"]])
    s = rep["streams"]
    check(len(s) == 1 and s[0].get("in_flight") == 18 and s[0].get("queued") == 2 and s[0].get("pending") is True,
          "streams %s" % s)
    main = thread_of(rep, res.pid)
    check(main.get("name") == "hang", "the main thread is named %r" % main.get("name"))
    check(frames_in(main.get("stack"), HANG_SRC, "sync_variant"),
          "the main thread's stack does not show it waiting in sync_variant\n%s" % cases.frames_text(
              main.get("stack")))
    starts_where_it_waits(main.get("stack"), "the main thread")
    check(main.get("signal_handler") is True, "the main thread took the signal, yet %s" % {
        k: v for k, v in main.items() if k != "stack"})
    check(len(rep["threads"]) == nthreads - 1, "threads listed %d, the process had %d (watcher left out)" % (
        len(rep["threads"]), nthreads))
    check(not cases.report_files(rdir) or all(f.endswith("-hang.json") for f in cases.report_files(rdir)),
          "a fault report appeared: %s" % cases.report_files(rdir))


@case("hang_sigterm_record")
def _(b):
    """The same in record mode (a breadcrumb every 16th launch): launch #16's breadcrumb landed and #18 never
    finishes, so the launch in flight is one of #17..#20, and the text says how to name it exactly."""
    env = dict(HANG18, CULPRIT_CRUMB_EVERY="", CULPRIT_MARK_BUDGET="0")
    rdir = b.newdir("reports")
    res = signalled(b, "preload", ["sync", 20], signal.SIGTERM, env, rdir)
    check(res.rc == -signal.SIGTERM, "did not die of SIGTERM\n" + res.describe())
    rep = load_hang(b, rdir, res.pid)
    check_trigger(rep, signal.SIGTERM)
    v = rep["verdict"]
    seqs = [c.get("seq") for c in rep["candidates"]]
    check(v.get("certainty") == "candidates" and rep.get("culprit") is None, "verdict %s" % v)
    check(seqs == [17, 18, 19, 20] and v.get("window") == {"first": 17, "last": 20},
          "candidates %r window %r, expected #17..#20" % (seqs, v.get("window")))
    check(rep["streams"][0].get("in_flight_window") == {"first": 17, "last": 20}, "streams %s" % rep["streams"])
    check("--mode precise" in res.err_text, "the text does not say how to name it exactly\n" + res.describe())


@case("hang_record_after_sync")
def _(b):
    """Record mode, the launch that hangs being the first after a synchronize that completed: it got a breadcrumb
    (one per synchronize), so the hang report names it exactly, not a window with the two queued behind it."""
    env = dict(FAKECUDA_HANG="launch=11", CULPRIT_CRUMB_EVERY="", CULPRIT_MARK_BUDGET="0")
    rdir = b.newdir("reports")
    res = signalled(b, "preload", ["resync", 10], signal.SIGTERM, env, rdir)
    check(res.rc == -signal.SIGTERM, "did not die of SIGTERM\n" + res.describe())
    rep = load_hang(b, rdir, res.pid)
    v = rep["verdict"]
    check(v.get("certainty") == "exact" and (rep.get("culprit") or {}).get("seq") == 11,
          "verdict %s culprit %s" % (v, (rep.get("culprit") or {}).get("seq")))


@case("hang_sigterm_cli")
def _(b):
    """Under `culprit run`: SIGTERM to culprit reaches the program, which dies of it; culprit dies of it too, after
    printing the hang report with the launch in flight and its source line."""
    env = dict(HANG18)
    rdir = b.newdir("reports")
    p = start(b, "cli", ["sync", 20], env, rdir, opts=("--mode", "precise"))
    p.wait_for(b"ready\n", "culprit run")
    p.send(signal.SIGTERM)
    res = p.finish()
    check(res.rc == -signal.SIGTERM, "culprit run did not die of SIGTERM\n" + res.describe())
    text = res.err_text
    line = cases.marker_line(HANG_SRC)
    check("hang report: SIGTERM" in text and "the launch in flight: step(float*, int)" in text and
          "hang.c:%d" % line in text, "culprit run did not show the hang report\n" + res.describe())
    files = hang_files(rdir)
    check(len(files) == 1, "hang reports %s" % files)
    rep = load_hang(b, rdir, int(os.path.basename(files[0]).split("-")[1]))
    check_trigger(rep, signal.SIGTERM, sender=p.pid)
    expect_in_flight(rep, 18, True)


@case("hang_usr1_twice")
def _(b):
    """SIGUSR1 asks for a report and the program carries on: twice, the second report replaces the first; both
    threads are shown where they wait (the main thread reading its input, the other in cuCtxSynchronize)."""
    env = dict(HANG18, CULPRIT_MODE="precise")
    base = signalled(b, "plain", ["usr1", 20], signal.SIGUSR1, env)
    check(base.rc == -signal.SIGUSR1, "without culprit SIGUSR1 ends the program\n" + base.describe())
    rdir = b.newdir("reports")
    p = start(b, "preload", ["usr1", 20], env, rdir)
    p.wait_for(b"ready\n", "preload")
    p.send(signal.SIGUSR1)
    wait_hang_file(rdir, p, "first SIGUSR1")
    first = load_hang(b, rdir, p.pid)
    check_trigger(first, signal.SIGUSR1, sender=os.getpid())
    p.send(signal.SIGUSR1)
    until = time.monotonic() + cases.RUN_TIMEOUT
    while load_hang(b, rdir, p.pid)["hang"]["time_ns"] == first["hang"]["time_ns"]:
        check(p.alive() and time.monotonic() < until, "no second report\n" + p.err().decode("utf-8", "replace"))
        time.sleep(0.05)
    check(p.alive(), "the program did not carry on after SIGUSR1")
    second = load_hang(b, rdir, p.pid, symbolize=True)
    check(second["hang"]["time_ns"] > first["hang"]["time_ns"], "the second report is not newer")
    expect_in_flight(second, 18, True)
    threads = second["threads"]
    check(len(threads) == 2, "expected the main thread and the synchronizing one, got %s" % [
        (t.get("tid"), t.get("name")) for t in threads])
    check(frames_in(thread_of(second, p.pid).get("stack"), HANG_SRC, "wait_stdin"),
          "the main thread is not shown reading its input\n%s" % cases.frames_text(thread_of(second, p.pid).get(
              "stack")))
    other = [t for t in threads if t.get("tid") != p.pid][0]
    starts_where_it_waits(other.get("stack"), "the synchronizing thread")
    check(frames_in(other.get("stack"), HANG_SRC, "sync_thread"),
          "the other thread is not shown in its synchronize\n%s" % cases.frames_text(other.get("stack")))
    p.close_stdin()
    res = p.finish()
    check(res.rc == 0 and b"carried on after the report signals" in res.out, "the program did not go on\n" +
          res.describe())
    check(len(hang_files(rdir)) == 1, "hang reports %s" % hang_files(rdir))


@case("hang_timeout")
def _(b):
    """culprit run --hang-timeout 1: with launch #18 never completing, the report comes without any signal
    (record mode: a window holding #18); the program is left running, and the test kills it."""
    env = dict(HANG18, CULPRIT_CRUMB_EVERY="", CULPRIT_MARK_BUDGET="0")
    rdir = b.newdir("reports")
    p = start(b, "cli", ["sync", 20], env, rdir, opts=("--hang-timeout", "1"))
    p.wait_for(b"ready\n", "culprit run")
    wait_hang_file(rdir, p, "--hang-timeout 1")
    pid = int(os.path.basename(hang_files(rdir)[0]).split("-")[1])
    rep = load_hang(b, rdir, pid)
    h = rep["hang"]
    check(h.get("trigger") == "timeout" and h.get("timeout_s") == 1 and "signal" not in h,
          "hang %s, expected a timeout of 1 s" % h)
    check(h.get("stalled_ms", 0) >= 1000, "reported after %r ms without progress, before the timeout" % h)
    check(18 in [c.get("seq") for c in rep["candidates"]], "#18 is not among %s" % [
        c.get("seq") for c in rep["candidates"]])
    check(p.alive(), "the program did not keep running after the timeout report")
    p.send(signal.SIGKILL, pid)
    res = p.finish()
    check(res.rc == -signal.SIGKILL, "culprit run did not pass the death on\n" + res.describe())
    check("hang report: no progress for" in res.err_text and "--hang-timeout 1" in res.err_text,
          "culprit run did not show the hang report\n" + res.describe())


@case("hang_timeout_again")
def _(b):
    """After a timeout report the next one waits for progress and a new stall: launch #5 runs 1.5 s and #10 never
    completes, so with --hang-timeout 0.5 the first report names #5 and, once #5..#9 completed, a second one names
    #10 (it replaces the file)."""
    env = {"FAKECUDA_HANG": "launch=5,ms=1500;launch=10", "CULPRIT_MODE": "precise", "CULPRIT_HANG_TIMEOUT": "0.5",
           "CULPRIT_QUIET": "1"}
    rdir = b.newdir("reports")
    p = start(b, "preload", ["sync", 12], env, rdir)
    p.wait_for(b"ready\n", "preload")
    until = time.monotonic() + cases.RUN_TIMEOUT
    while True:
        check(p.alive() and time.monotonic() < until, "no report naming #10\n" + p.err().decode("utf-8", "replace"))
        files = hang_files(rdir)
        if files and ((read_json(files[0]).get("culprit") or {}).get("seq")) == 10:
            break
        time.sleep(0.05)
    rep = load_hang(b, rdir, p.pid)
    check(rep["hang"].get("trigger") == "timeout", "trigger %r" % rep["hang"].get("trigger"))
    p.kill()
    res = p.finish()
    lines = [l for l in res.err_text.splitlines() if l.startswith("culprit: hang report")]
    check(len(lines) == 2 and "launch #5 " in lines[0] and "launch #10 " in lines[1],
          "expected a report of #5, then one of #10:\n%s" % "\n".join(lines))


@case("hang_report_signal")
def _(b):
    """CULPRIT_REPORT_SIGNAL=USR2: SIGUSR2 asks for the report and the program carries on."""
    env = dict(HANG18, CULPRIT_REPORT_SIGNAL="USR2")
    rdir = b.newdir("reports")
    p = start(b, "preload", ["usr1", 20], env, rdir)
    p.wait_for(b"ready\n", "preload")
    p.send(signal.SIGUSR2)
    wait_hang_file(rdir, p, "SIGUSR2")
    check_trigger(load_hang(b, rdir, p.pid), signal.SIGUSR2, sender=os.getpid())
    p.close_stdin()
    res = p.finish()
    check(res.rc == 0 and b"carried on" in res.out, "the program did not carry on\n" + res.describe())


@case("hang_timeout_quiet")
def _(b):
    """--hang-timeout with work that only looks unfinished (record mode, no breadcrumb after the last launches,
    never synchronized): the watcher's query (the simulated driver's trace shows it) finds the stream done, so no
    timeout report comes; a SIGTERM then gets a report that says nothing was in flight."""
    env = {"CULPRIT_CRUMB_EVERY": "", "CULPRIT_MARK_BUDGET": "0", "CULPRIT_HANG_TIMEOUT": "0.2", "FAKECUDA_TRACE": "1"}
    rdir = b.newdir("reports")
    p = start(b, "preload", ["quiet", 5], env, rdir)
    p.wait_for(b"ready\n", "preload")
    # the program itself never queries: this is the watcher's, after the timeout
    p.wait_for(b"fakecuda: cuStreamQuery -> 0 CUDA_SUCCESS", "the watcher's query", on_stderr=True)
    time.sleep(0.5)  # a few more looks of the watcher (every 50 ms): a wrong report would come now
    check(not hang_files(rdir), "a timeout report for finished work: %s" % hang_files(rdir))
    p.send(signal.SIGTERM)
    res = p.finish()
    check(res.rc == -signal.SIGTERM, "did not die of SIGTERM\n" + res.describe())
    rep = load_hang(b, rdir, res.pid)
    check(rep["verdict"].get("certainty") == "idle", "verdict %s, expected idle" % rep["verdict"])


@case("hang_idle")
def _(b):
    """A signal when nothing is pending: the report says no launch was in flight (idle) and the process dies of
    the signal."""
    rdir = b.newdir("reports")
    res = signalled(b, "preload", ["idle", 5], signal.SIGTERM, {}, rdir)
    check(res.rc == -signal.SIGTERM, "did not die of SIGTERM\n" + res.describe())
    rep = load_hang(b, rdir, res.pid)
    v = rep["verdict"]
    check(v.get("certainty") == "idle" and rep.get("culprit") is None and rep["candidates"] == [] and
          rep["queued"] == [] and "window" not in v, "verdict %s, culprit %r" % (v, rep.get("culprit")))
    check("no launch was in flight" in res.err_text, "the text does not say so\n" + res.describe())


@case("hang_own_handlers")
def _(b):
    """The program's own SIGTERM and SIGINT handlers still run and its exit status is unchanged; the report is
    written before them."""
    for variant, sig, status, line in (("handler-term", signal.SIGTERM, 42, b"the program's SIGTERM handler ran"),
                                       ("handler-int", signal.SIGINT, 43, b"the program's SIGINT handler ran")):
        base = signalled(b, "plain", [variant, 20], sig, HANG18)
        check(base.rc == status and line in base.out, "scenario broken\n" + base.describe())
        rdir = b.newdir("reports")
        res = signalled(b, "preload", [variant, 20], sig, HANG18, rdir)
        same_end(base, res, "preloaded " + variant)
        check_trigger(load_hang(b, rdir, res.pid), sig)


@case("hang_handler_after_launch")
def _(b):
    """A handler installed after culprit's (sigaction with SA_SIGINFO, or signal()) is the one that runs, with
    its siginfo; the program is shown its own handlers as the old ones and by a query, never culprit's."""
    for variant, status in (("handler-late", 44), ("handler-signal", 45)):
        base = signalled(b, "plain", [variant, 20], signal.SIGTERM, HANG18)
        check(base.rc == status and b": no" not in base.out, "scenario broken\n" + base.describe())
        rdir = b.newdir("reports")
        res = signalled(b, "preload", [variant, 20], signal.SIGTERM, HANG18, rdir)
        same_end(base, res, "preloaded " + variant)
        check(res.out.count(b": yes") == 2, "the program was shown culprit's handler\n" + res.describe())
        check_trigger(load_hang(b, rdir, res.pid), signal.SIGTERM)


@case("hang_stop_signals")
def _(b):
    """SIGINT, SIGQUIT and SIGABRT, like SIGTERM: a report, then death by that very signal."""
    for sig in (signal.SIGINT, signal.SIGQUIT, signal.SIGABRT):
        base = signalled(b, "plain", ["sync", 20], sig, HANG18)
        check(base.rc == -sig, "scenario broken\n" + base.describe())
        rdir = b.newdir("reports")
        res = signalled(b, "preload", ["sync", 20], sig, HANG18, rdir)
        same_end(base, res, "preloaded, %s" % STOP_SIGNALS[sig])
        rep = load_hang(b, rdir, res.pid)
        check_trigger(rep, sig)


@case("hang_after_fault")
def _(b):
    """A process that wrote a fault report writes no hang report: SIGTERM then just ends it."""
    env = {"FAKECUDA_FAULT": "launch=2"}
    base = signalled(b, "plain", ["fault", 5], signal.SIGTERM, env)
    check(base.rc == -signal.SIGTERM and b"CUDA_ERROR_ILLEGAL_ADDRESS" in base.out,
          "scenario broken\n" + base.describe())
    rdir = b.newdir("reports")
    res = signalled(b, "preload", ["fault", 5], signal.SIGTERM, env, rdir)
    same_end(base, res, "preloaded")
    check(not hang_files(rdir), "a hang report beside the fault report: %s" % hang_files(rdir))
    rep = cases.load_report(rdir, res.pid)
    cases.check_error(rep, 700, "cuCtxSynchronize")


@case("hang_fork")
def _(b):
    """A forked child starts a watcher of its own at its first launch: SIGTERM to the child gets the child's
    report (its launch #4 in flight), the child dies of it, and the parent, which writes none, sees that."""
    env = {"FAKECUDA_HANG": "launch=4", "CULPRIT_MODE": "precise"}
    rdir = b.newdir("reports")
    p = start(b, "preload", ["fork", 5], env, rdir)
    p.wait_for(b"ready\n", "preload")
    child = int(p.out().split(b"child pid ")[1].split(b"\n")[0])
    p.send(signal.SIGTERM, child)
    res = p.finish()
    check(res.rc == 0 and b"the child was killed by signal %d" % signal.SIGTERM in res.out,
          "the child did not die of SIGTERM\n" + res.describe())
    rep = load_hang(b, rdir, child)
    check(rep["process"].get("ppid") == res.pid, "ppid %r" % rep["process"].get("ppid"))
    expect_in_flight(rep, 4, False)
    check([t.get("tid") for t in rep["threads"]] == [child], "threads %s" % rep["threads"])


# ---------------------------------------------------------------------------------------------------------------
# The device asked which kernels run (culprit run attaches the debugger; fake_cuda_gdb.py reads what the simulated
# driver runs from FAKECUDA_RUNNING)

GDB = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fake_cuda_gdb.py")


def device_env(b, extra=None):
    """spin 3: three steps (#1..#3), vec_fill (#4) that never ends, two steps behind it; record mode's breadcrumbs
    with the fixed spacing leave the window #2..#6 (a breadcrumb after the stream's first launch only)."""
    d = b.newdir("device")
    env = {"FAKECUDA_HANG": "kernel=vec_fill", "FAKECUDA_RUNNING": d, "CULPRIT_CUDA_GDB": GDB,
           "CULPRIT_CRUMB_EVERY": "", "CULPRIT_MARK_BUDGET": "0", "FAKE_CUDA_GDB_LOG": os.path.join(d, "attached")}
    env.update(extra or {})
    return env


def attached(env):
    try:
        with open(env["FAKE_CUDA_GDB_LOG"]) as f:
            return [int(l) for l in f.read().split()]
    except OSError:
        return []


def program_of(p):
    """The pid of culprit run's child (the program), and its environment."""
    with open("/proc/%d/task/%d/children" % (p.pid, p.pid)) as f:
        kids = [int(x) for x in f.read().split()]
    check(len(kids) == 1, "culprit run's children: %r" % kids)
    with open("/proc/%d/environ" % kids[0], "rb") as f:
        env = dict(e.split(b"=", 1) for e in f.read().split(b"\0") if b"=" in e)
    return kids[0], env


def expect_window(rep, what):
    v = rep["verdict"]
    seqs = [c.get("seq") for c in rep["candidates"]]
    check(v.get("certainty") == "candidates" and rep.get("culprit") is None and seqs == [2, 3, 4, 5, 6],
          "%s: verdict %s, candidates %r: expected the breadcrumbs' window #2..#6" % (what, v, seqs))


@case("hang_device_sigterm")
def _(b):
    """Record mode leaves a window of 5 launches; SIGTERM to culprit run reaches the program, whose report waits
    (bounded) while culprit run attaches the debugger: the device runs vec_fill, which only #4 of the window runs, so
    the launch in flight is named exactly, "by" the device, and the report keeps what the debugger said."""
    env = device_env(b)
    rdir = b.newdir("reports")
    p = start(b, "cli", ["spin", 3], env, rdir)
    p.wait_for(b"ready\n", "culprit run")
    pid, penv = program_of(p)
    check(penv.get(b"CULPRIT_RUN_PID") == str(p.pid).encode() and penv.get(b"CULPRIT_DEVICE_WAIT") == b"20",
          "the program was not told that culprit run asks: %r" % {k: v for k, v in penv.items()
                                                                  if k.startswith(b"CULPRIT_")})
    p.send(signal.SIGTERM)
    res = p.finish()
    check(res.rc == -signal.SIGTERM, "culprit run did not die of SIGTERM\n" + res.describe())
    check(attached(env) == [pid], "the debugger attached to %r, expected [%d]" % (attached(env), pid))
    rep = load_hang(b, rdir, pid)
    dq = rep.get("device_query") or {}
    check(dq.get("status") == "answered" and dq.get("by") == "cuda-gdb" and dq.get("running") == [4],
          "device_query %r" % dq)
    k = (dq.get("kernels") or [{}])[0]
    check(k.get("kernel") == "vec_fill" and k.get("grid") == [2, 1, 1] and k.get("block") == [128, 1, 1] and
          "info cuda kernels" not in dq.get("output", "x") and "vec_fill(" in dq.get("output", ""),
          "device_query kernels %r output %r" % (dq.get("kernels"), dq.get("output")))
    v = rep["verdict"]
    c = rep.get("culprit") or {}
    check(v.get("certainty") == "exact" and c.get("seq") == 4 and c.get("by") == "the device" and
          v.get("window") == {"first": 4, "last": 4}, "verdict %s culprit %r" % (v, {k: c.get(k) for k in (
              "seq", "kernel", "by")}))
    check("the device was running vec_fill" in v.get("reason", ""), "reason %r" % v.get("reason"))
    check([x.get("seq") for x in rep.get("candidates_before_device") or []] == [2, 3, 5, 6] and
          not rep["candidates"], "candidates %r before %r" % (rep["candidates"], rep.get("candidates_before_device")))
    st = rep["streams"][0]
    check(st.get("in_flight") == 4 and "in_flight_window" not in st and st.get("queued") == 2,
          "streams %r" % rep["streams"])
    check([q.get("seq") for q in rep.get("queued") or []] == [5, 6], "queued %r" % rep.get("queued"))
    text = cases.joined(res.err_text)
    check("the launch in flight: vec_fill" in text and "the device was running vec_fill" in text,
          "culprit run did not show the device's answer\n" + res.describe())


@case("hang_device_timeout")
def _(b):
    """--hang-timeout: the process goes on after its report, so the debugger attaches to a running program; the
    launch in flight is named, and the program is left running (not stopped by the attach)."""
    env = device_env(b)
    rdir = b.newdir("reports")
    p = start(b, "cli", ["spin", 3], env, rdir, opts=("--hang-timeout", "0.5"))
    p.wait_for(b"ready\n", "culprit run")
    pid, _ = program_of(p)
    until = time.monotonic() + cases.RUN_TIMEOUT
    rep = None
    while time.monotonic() < until and p.alive():
        files = hang_files(rdir)
        rep = read_json(files[0]) if files else None
        if rep and rep.get("device_query"):
            break
        time.sleep(0.05)
    check(rep and rep.get("device_query"), "no hang report with the device's answer appeared\n" + p.err().decode())
    check((rep.get("culprit") or {}).get("seq") == 4 and rep["culprit"].get("by") == "the device",
          "verdict %s" % rep.get("verdict"))
    check(p.alive(), "the program did not keep running")
    with open("/proc/%d/status" % pid) as f:
        state = [l for l in f.read().splitlines() if l.startswith("State:")][0]
    check(" T " not in state + " " and "stopped" not in state and "tracing" not in state,
          "the program was left %s" % state)
    p.send(signal.SIGKILL, pid)
    p.finish()


@case("hang_device_unavailable")
def _(b):
    """When the device cannot be asked the report says why and keeps the breadcrumbs' window, and the program ends
    as it would: no debugger (then the program is not told to wait for one), ptrace refused, the debugger failing
    or printing a kernel table of a form culprit does not read (not taken for "no kernel runs"),
    the debugger never answering (stopped at --device-timeout), the process gone when it attached or ended while
    it attached."""
    for what, extra, opts, status in (
            ("no debugger", {"CULPRIT_CUDA_GDB": "/nonexistent/cuda-gdb"}, (), "no debugger"),
            ("refused", {"FAKE_CUDA_GDB_ATTACH": "refuse"}, (), "refused"),
            ("failing", {"FAKE_CUDA_GDB_ATTACH": "fail"}, (), "failed"),
            ("garbled", {"FAKE_CUDA_GDB_ATTACH": "garbled"}, (), "failed"),
            ("hanging", {"FAKE_CUDA_GDB_ATTACH": "hang"}, ("--device-timeout", "0.5"), "timed out"),
            ("gone", {"FAKE_CUDA_GDB_ATTACH": "gone"}, (), "process gone"),
            # the process's wait (0.5 s) over while the debugger attaches (2 s): gdb says the program is gone
            ("ended", {"FAKE_CUDA_GDB_DELAY": "2", "CULPRIT_DEVICE_WAIT": "0.5"}, (), "process gone")):
        env = device_env(b, extra)
        rdir = b.newdir("reports")
        p = start(b, "cli", ["spin", 3], env, rdir, opts=opts)
        p.wait_for(b"ready\n", "culprit run")
        pid, penv = program_of(p)
        check((b"CULPRIT_RUN_PID" in penv) == (status != "no debugger"),
              "%s: CULPRIT_RUN_PID %r" % (what, penv.get(b"CULPRIT_RUN_PID")))
        p.send(signal.SIGTERM)
        res = p.finish()
        check(res.rc == -signal.SIGTERM, "%s: culprit run did not die of SIGTERM\n%s" % (what, res.describe()))
        rep = load_hang(b, rdir, pid)
        dq = rep.get("device_query") or {}
        check(dq.get("status") == status and dq.get("why"), "%s: device_query %r" % (what, dq))
        expect_window(rep, what)
        flat = " ".join(l[len("culprit:"):].strip() for l in res.err_text.splitlines() if l.startswith("culprit:"))
        check("the device could not be asked which kernels run: " + dq["why"] in flat and
              "the device was" not in rep["verdict"].get("reason", ""),
              "%s: culprit run did not say why the device was not asked\n%s" % (what, res.describe()))


@case("hang_device_wait_bounded")
def _(b):
    """The library's wait for culprit run's answer never holds the program for long: with the culprit run it names
    gone, a stop signal's report does not wait at all (CULPRIT_DEVICE_WAIT=600 would otherwise hold it past the
    harness's limit); with one that is there but never answers, it waits CULPRIT_DEVICE_WAIT and goes on. Either
    way the program dies of SIGTERM as it would, with its report."""
    gone = subprocess.Popen(["true"])
    gone.wait()
    for what, run_pid, wait in (("gone", gone.pid, "600"), ("silent", os.getpid(), "0.5")):
        env = dict(HANG18, CULPRIT_RUN_PID=str(run_pid), CULPRIT_DEVICE_WAIT=wait)
        rdir = b.newdir("reports")
        res = signalled(b, "preload", ["sync", 20], signal.SIGTERM, env, rdir)
        check(res.rc == -signal.SIGTERM, "%s: did not die of SIGTERM\n%s" % (what, res.describe()))
        rep = load_hang(b, rdir, res.pid)
        check("device_query" not in rep, "%s: no one asked the device, yet %r" % (what, rep.get("device_query")))


@case("hang_device_fork")
def _(b):
    """A forked child of the program hangs: it is culprit run's descendant, so it is the process asked (precise
    mode had named the launch in flight already: the device confirms it)."""
    env = device_env(b, {"FAKECUDA_HANG": "launch=4", "CULPRIT_MODE": "precise"})
    rdir = b.newdir("reports")
    p = start(b, "cli", ["fork", 5], env, rdir)
    p.wait_for(b"ready\n", "culprit run")
    child = int(p.out().split(b"child pid ")[1].split(b"\n")[0])
    p.send(signal.SIGTERM, child)
    res = p.finish()
    check(res.rc == 0, "the program's parent should end normally\n" + res.describe())
    check(attached(env) == [child], "the debugger attached to %r, expected the child %d" % (attached(env), child))
    rep = load_hang(b, rdir, child)
    dq = rep.get("device_query") or {}
    check(dq.get("status") == "answered" and dq.get("confirms") is True, "device_query %r" % dq)
    expect_in_flight(rep, 4, False)


def untouched(b, env, what):
    """With env, culprit installs no handler and starts no thread: the process looks as without culprit, and
    SIGTERM ends it the same way, with no report."""
    base_p = start(b, "plain", ["sync", 20], HANG18)
    base_p.wait_for(b"ready\n", "plain")
    base_caught, base_threads = proc_status(base_p.pid)
    base_p.send(signal.SIGTERM)
    base = base_p.finish()
    rdir = b.newdir("reports")
    p = start(b, "preload", ["sync", 20], dict(HANG18, **env), rdir)
    p.wait_for(b"ready\n", "preload")
    caught, threads = proc_status(p.pid)
    p.send(signal.SIGTERM)
    res = p.finish()
    same_end(base, res, what)
    check(caught == base_caught, "%s: handlers for %s, without culprit %s" % (what, sorted(caught),
                                                                              sorted(base_caught)))
    check(threads == base_threads, "%s: %d threads, without culprit %d" % (what, threads, base_threads))
    cases.no_report(rdir, what)


@case("hang_no_handlers")
def _(b):
    """CULPRIT_HANG_SIGNALS=0 and CULPRIT_REPORT_SIGNAL=none: no handlers, no watcher, behaviour as without."""
    untouched(b, {"CULPRIT_HANG_SIGNALS": "0", "CULPRIT_REPORT_SIGNAL": "none"}, "no hang signals")


@case("hang_off")
def _(b):
    """CULPRIT_MODE=off installs nothing either."""
    untouched(b, {"CULPRIT_MODE": "off"}, "culprit off")


@case("hang_streams")
def _(b):
    """Two created streams, the launch in flight on the first; the second completed its work. The report names the
    launch exactly on its stream and lists the other stream as done."""
    env = {"FAKECUDA_HANG": "launch=3", "CULPRIT_MODE": "precise"}
    rdir = b.newdir("reports")
    res = signalled(b, "preload", ["streams", 5], signal.SIGTERM, env, rdir)
    check(res.rc == -signal.SIGTERM, "did not die of SIGTERM\n" + res.describe())
    rep = load_hang(b, rdir, res.pid)
    check(rep["verdict"].get("certainty") == "exact", "verdict %s" % rep["verdict"])
    cases.check_launch(rep["culprit"], "launch in flight", kernel=STEP, seq=3, stream_kind="created",
                       symbolized=False)
    streams = {s.get("stream"): s for s in rep["streams"]}
    check(len(streams) == 2, "streams %s" % rep["streams"])
    busy = streams[rep["culprit"]["stream"]]
    idle = [s for k, s in streams.items() if k != rep["culprit"]["stream"]][0]
    check(busy.get("in_flight") == 3 and busy.get("queued") == 2, "the busy stream: %s" % busy)
    check(idle.get("pending") is False and "in_flight" not in idle, "the other stream: %s" % idle)
    check([q.get("seq") for q in rep["queued"]] == [4, 5], "queued %s" % [q.get("seq") for q in rep["queued"]])


PY_HANG = r"""
import ctypes, signal, sys, threading
cu = ctypes.CDLL("libcuda.so.1")
u = ctypes.c_uint
dev, ctx, mod, f = ctypes.c_int(), ctypes.c_void_p(), ctypes.c_void_p(), ctypes.c_void_p()
assert cu.cuInit(0) == 0 and cu.cuDeviceGet(ctypes.byref(dev), 0) == 0
assert cu.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev) == 0 and cu.cuCtxSetCurrent(ctx) == 0
assert cu.cuModuleLoadData(ctypes.byref(mod), b"fakecubin:_Z4stepPfi") == 0
assert cu.cuModuleGetFunction(ctypes.byref(f), mod, b"_Z4stepPfi") == 0
def launch():
    return cu.cuLaunchKernel(f, u(1), u(1), u(1), u(32), u(1), u(1), u(0), None, None, None)
assert launch() == 0
def on_term(sig, frame):
    print("python handler ran", flush=True)
    sys.exit(7)
signal.signal(signal.SIGTERM, on_term)  # after the first launch: culprit's handler is in front
for _ in range(4):
    assert launch() == 0
def waiter():
    cu.cuCtxSetCurrent(ctx)
    cu.cuCtxSynchronize()  # WAIT-LINE
threading.Thread(target=waiter, daemon=True).start()
cu.cuStreamQuery(None)
print("ready", flush=True)
threading.Event().wait()  # MAIN-WAIT
"""


def py_line(tag):
    return [n for n, l in enumerate(PY_HANG.splitlines(), 1) if l.endswith("# " + tag)][0]


@case("hang_loader_lock")
def _(b):
    """SIGTERM reaches a thread inside dlopen (a library's constructor that waits), which holds the dynamic loader's
    lock until the signal handler returns; the handler waits for the hang report, so the watcher writing it must
    take no loader lock (no dladdr, no dlsym): the report is written and the process dies of SIGTERM."""
    env = dict(HANG18, CULPRIT_MODE="precise", HANG_BLOCKER_LIB=os.path.join(os.path.dirname(b.prog("hang")),
                                                                              "libblocker.so"))
    rdir = b.newdir("reports")
    res = signalled(b, "preload", ["loader-lock", 20], signal.SIGTERM, env, rdir)
    check(res.rc == -signal.SIGTERM, "the process did not die of SIGTERM\n" + res.describe())
    rep = load_hang(b, rdir, res.pid, symbolize=True)
    check_trigger(rep, signal.SIGTERM, sender=os.getpid())
    expect_in_flight(rep, 18, True)
    main = thread_of(rep, res.pid)
    check(frames_in(main.get("stack"), HANG_SRC, "main"),
          "the main thread's stack, described without the loader, does not resolve\n%s" % cases.frames_text(
              main.get("stack")))


@case("hang_python")
def _(b):
    """A Python program: its SIGTERM handler, installed with the signal module after culprit's, still runs (exit
    status 7), and the report shows both threads where they wait in Python: the main one in Event.wait, the
    other in cuCtxSynchronize."""
    script = os.path.join(b.newdir("py"), "hang_py.py")
    with open(script, "w") as f:
        f.write(PY_HANG)
    env = cases._base_env(b, {"FAKECUDA_HANG": "launch=3", "CULPRIT_MODE": "precise", "CULPRIT_EXIT_WAIT": "0"})
    base_p = Bg([sys.executable, script], env, b.newdir("plain"))
    base_p.wait_for(b"ready\n", "plain")
    base_p.send(signal.SIGTERM)
    base = base_p.finish()
    check(base.rc == 7 and b"python handler ran" in base.out, "scenario broken\n" + base.describe())
    rdir = b.newdir("reports")
    env = dict(env, LD_PRELOAD=b.lib, CULPRIT_DIR=rdir)
    p = Bg([sys.executable, script], env, b.newdir("preload"))
    p.wait_for(b"ready\n", "preload")
    p.send(signal.SIGTERM)
    res = p.finish()
    same_end(base, res, "python preloaded")
    # a report a signal handler waits for describes frames without the loader (module and offset): the command
    # names their functions when it symbolizes the report
    rep = load_hang(b, rdir, res.pid, symbolize=True)
    if not (rep.get("python_status") or "").startswith("CPython"):
        raise CaseSkipped("no Python frames here: %s" % rep.get("python_status"))
    expect_in_flight(rep, 3, False)

    def has_line(t, line):
        return any(os.path.basename(fr.get("file") or "") == "hang_py.py" and fr.get("line") == line
                   for fr in t.get("python") or [])
    threads = rep["threads"]
    main = thread_of(rep, res.pid)
    check(has_line(main, py_line("MAIN-WAIT")), "the main thread's Python frames %s" % main.get("python"))
    waiting = [t for t in threads if has_line(t, py_line("WAIT-LINE"))]
    check(len(waiting) == 1 and waiting[0].get("tid") != res.pid,
          "no other thread shown waiting at the WAIT-LINE: %s" % [(t.get("tid"), t.get("python")) for t in threads])
    check(any(fr.get("function") == "cuCtxSynchronize" for fr in waiting[0].get("stack") or []),
          "its native stack does not show cuCtxSynchronize\n%s" % cases.frames_text(waiting[0].get("stack")))


# ---------------------------------------------------------------------------------------------------------------

if __name__ == "__main__":
    sys.exit(cases.main())
