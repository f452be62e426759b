#!/usr/bin/env python3
"""Scenario tests of culprit over the simulated CUDA driver (tests/fakecuda).

Each case runs the driver-API programs of progs/ (built into BUILD/tests/fake/progs) without culprit, then with
libculprit.so preloaded or under `culprit run`, and checks what the program shows (stdout, stderr, exit status)
and the JSON report culprit wrote (docs/report.md). Faults are scripted through the simulated driver's
environment (FAKECUDA_FAULT, FAKECUDA_FAIL, FAKECUDA_RUN_AHEAD), never by the programs themselves.

    python3 cases.py --build BUILD CASE     run one case: exit 0 pass, 1 fail (with the reason), 77 skip
    python3 cases.py --list                 the case names, one a line
    python3 cases.py --check-list NAME...   check NAME... (CMake's list) is exactly the list of cases

Standard library only.
"""

import argparse
import glob
import json
import os
import re
import resource
import shutil
import signal
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
PROG_SRC = os.path.join(HERE, "progs")
REPO = os.path.dirname(os.path.dirname(HERE))
DEMO_SRC = os.path.join(REPO, "demo", "demo_sim.c")

PASS, FAIL, SKIP = 0, 1, 77
RUN_TIMEOUT = 40  # seconds for one program run; CTest gives the whole case 60

# Kernels of progs/common.h (and of the demo), mangled as nvcc would, with the demangled names culprit must show.
STEP, BAD, FILL, LATE = "_Z4stepPfi", "_Z9write_oobPii", "vec_fill", "_Z10late_writePf"
LOSS = "_Z12softmax_lossPKfPKiPfi"
DEMANGLED = {
    STEP: "step(float*, int)",
    BAD: "write_oob(int*, int)",
    FILL: "vec_fill",
    LATE: "late_write(float*)",
    LOSS: "softmax_loss(float const*, int const*, float*, int)",
}
SHORT = {STEP: "step", BAD: "write_oob", FILL: "vec_fill", LATE: "late_write", LOSS: "softmax_loss"}
ERROR_NAMES = {700: "CUDA_ERROR_ILLEGAL_ADDRESS", 710: "CUDA_ERROR_ASSERT"}


class CaseFailed(Exception):
    pass


class CaseSkipped(Exception):
    pass


def check(cond, message):
    if not cond:
        raise CaseFailed(message)


# ---------------------------------------------------------------------------------------------------------------
# Running programs


class Result:
    def __init__(self, argv, proc, stdout, stderr):
        self.argv = argv
        self.rc = proc.returncode  # negative: killed by that signal
        self.out = stdout
        self.err = stderr
        self.pid = proc.pid

    @property
    def err_text(self):
        return self.err.decode("utf-8", "replace")

    @property
    def out_text(self):
        return self.out.decode("utf-8", "replace")

    def describe(self):
        return "%s: exit %s\n--- stdout\n%s--- stderr\n%s---" % (
            " ".join(self.argv), self.rc, self.out_text, self.err_text)


class Build:
    def __init__(self, build_dir):
        self.dir = os.path.abspath(build_dir)
        self.lib = os.path.join(self.dir, "lib", "libculprit.so")
        self.sim = os.path.join(self.dir, "lib", "culprit-sim")
        self.cli = os.path.join(self.dir, "bin", "culprit")
        self.progs = os.path.join(self.dir, "tests", "fake", "progs")
        self.demo = os.path.join(self.dir, "bin", "culprit-demo-sim")
        for path, what in ((self.lib, "the preload library"), (os.path.join(self.sim, "libcuda.so.1"),
                                                                "the simulated driver"), (self.cli, "the culprit CLI")):
            check(os.path.exists(path), "%s is missing: %s (build the project first)" % (what, path))
        self.work = tempfile.mkdtemp(prefix="culprit-fake-")

    def prog(self, name):
        path = os.path.join(self.progs, name)
        check(os.access(path, os.X_OK), "test program %s is not built" % path)
        return path

    def newdir(self, label):
        path = tempfile.mkdtemp(prefix=label + "-", dir=self.work)
        return path

    def cleanup(self):
        shutil.rmtree(self.work, ignore_errors=True)


def _no_core():
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


MARK = None  # --mark: the breadcrumb kind (CULPRIT_MARK) every run of the case gets; None: the library's default


def _base_env(b, extra):
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("CULPRIT_", "FAKECUDA_")) and k not in ("LD_PRELOAD", "LD_LIBRARY_PATH")}
    env["LD_LIBRARY_PATH"] = b.sim
    env["LC_ALL"] = "C"
    # These scenarios check attribution itself, so every launch gets a breadcrumb (precise density); the sparse
    # default of record mode has cases of its own (sparse_*), which set CULPRIT_CRUMB_EVERY themselves.
    env["CULPRIT_CRUMB_EVERY"] = "1"
    # the machine's own kernel log says nothing of simulated faults; the cases of the kernel's log give a file
    env["CULPRIT_KERNEL_LOG"] = "off"
    if MARK:
        env["CULPRIT_MARK"] = MARK
    for k, v in (extra or {}).items():
        env[k] = v
    return env


def _execute(b, argv, env, cwd, preexec=None, stdout=subprocess.PIPE, stderr=subprocess.PIPE):
    """Runs argv without a core file (preexec, when given, also runs in the child before exec); stdout and
    stderr are captured unless given other destinations."""
    def start():
        _no_core()
        if preexec:
            preexec()
    proc = subprocess.Popen(argv, env=env, cwd=cwd, stdin=subprocess.DEVNULL, stdout=stdout, stderr=stderr,
                            preexec_fn=start)
    try:
        out, err = proc.communicate(timeout=RUN_TIMEOUT)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
        raise CaseFailed("%s did not finish within %d s (hang?)\n--- stderr\n%s" % (
            " ".join(argv), RUN_TIMEOUT, (err or b"").decode("utf-8", "replace")))
    return Result(argv, proc, out or b"", err or b"")


def plain(b, argv, env=None):
    """The program without culprit."""
    return _execute(b, argv, _base_env(b, env), b.newdir("plain"))


def preloaded(b, argv, env=None, rdir=None):
    """The program with libculprit.so preloaded, reports into rdir (CULPRIT_DIR)."""
    e = _base_env(b, env)
    e["LD_PRELOAD"] = b.lib
    if rdir is not None and "CULPRIT_DIR" not in (env or {}):
        e["CULPRIT_DIR"] = rdir
    return _execute(b, argv, e, b.newdir("preload"))


def cli_run(b, argv, env=None, rdir=None, opts=()):
    """The program under `culprit run --dir rdir [opts] -- argv`."""
    cmd = [b.cli, "run", "--dir", rdir] + list(opts) + ["--"] + list(argv)
    return _execute(b, cmd, _base_env(b, env), b.newdir("cli"))


def culprit_lines(res):
    return [l for l in res.err_text.splitlines() if l.startswith("culprit:")]


def joined(text):
    """culprit's printed text with its wrapped paragraphs joined: each line indented five spaces or more after
    "culprit:" (a paragraph's continuation, or a detail under a launch) is appended to the line before it with
    one space."""
    return re.sub(r" *\nculprit: {5,}", " ", text)


def program_stderr(res):
    return [l for l in res.err_text.splitlines() if not l.startswith("culprit:")]


def masked(data):
    """Process and thread ids differ between runs; everything else must not."""
    return re.sub(rb"\b(tid|pid) \d+", rb"\1 N", data)


def same_as_plain(base, got, what, exact_stderr=True):
    """The program behaved the same with culprit: exit status, stdout byte for byte, and its own stderr lines
    (all of stderr minus culprit's lines when preloaded; under `culprit run`, in the same order among the CLI's)."""
    check(got.rc == base.rc, "%s: exit status %s with culprit, %s without\n%s" % (what, got.rc, base.rc,
                                                                                  got.describe()))
    check(masked(got.out) == masked(base.out), "%s: stdout differs with culprit\n--- without\n%s--- with\n%s" % (
        what, base.out_text, got.out_text))
    mine = [l for l in base.err_text.splitlines()]
    if exact_stderr:
        theirs = program_stderr(got)
        check(theirs == mine, "%s: the program's stderr differs with culprit\n--- without\n%s\n--- with\n%s" % (
            what, "\n".join(mine), got.err_text))
    else:
        lines = got.err_text.splitlines()
        pos = 0
        for line in mine:
            while pos < len(lines) and lines[pos] != line:
                pos += 1
            check(pos < len(lines), "%s: the program's stderr line %r is missing under culprit run\n%s" % (
                what, line, got.describe()))
            pos += 1


def failed_api(res):
    """The API the program printed as failing ("error: API returned NAME (CODE)"), or None."""
    m = re.search(r"^error: (\w+) returned (\w+) \((\d+)\)$", res.err_text, re.M)
    return (m.group(1), m.group(2), int(m.group(3))) if m else None


def expect_plain_failure(res, api, code):
    """Sanity of the simulated scenario itself: without culprit the program fails where and how we scripted."""
    got = failed_api(res)
    check(got is not None and got[2] == code and (api is None or got[0] == api),
          "the scenario did not fail as scripted without culprit (wanted %s -> %d)\n%s" % (api, code,
                                                                                           res.describe()))


# ---------------------------------------------------------------------------------------------------------------
# Reports


def report_files(rdir):
    return sorted(glob.glob(os.path.join(rdir, "**", "culprit-*.json"), recursive=True))


class Unaddressed:
    """A run's result with the addresses in its output masked (they differ from run to run)."""
    def __init__(self, res):
        mask = re.compile(rb"0x[0-9a-f]+")
        self.rc, self.out, self.err = res.rc, mask.sub(b"0x?", res.out), mask.sub(b"0x?", res.err)
        self.out_text, self.err_text = self.out.decode("utf-8", "replace"), self.err.decode("utf-8", "replace")
        self.describe = res.describe


def printed(res):
    """The program's "name=0x..." lines (the addresses it allocated and passed), by name."""
    return {m.group(1): int(m.group(2), 16) for m in re.finditer(r"^(\w+)=0x([0-9a-f]+)$", res.out_text, re.M)}


def load_report(rdir, pid=None):
    files = report_files(rdir)
    if pid is not None:
        want = [f for f in files if os.path.basename(f) == "culprit-%d.json" % pid]
        check(want, "no report culprit-%d.json in %s (found %s)" % (pid, rdir, [os.path.basename(f) for f in files]))
        path = want[0]
    else:
        check(len(files) == 1, "expected one report in %s, found %s" % (rdir, [os.path.basename(f) for f in files]))
        path = files[0]
    try:
        with open(path) as f:
            rep = json.load(f)
    except ValueError as e:
        raise CaseFailed("report %s is not valid JSON: %s" % (path, e))
    check(rep.get("schema") == "culprit.report/1", "report %s has schema %r" % (path, rep.get("schema")))
    m = re.match(r"culprit-(\d+)\.json$", os.path.basename(path))
    check(rep.get("process", {}).get("pid") == int(m.group(1)),
          "report %s says pid %r" % (path, rep.get("process", {}).get("pid")))
    rep["_path"] = path
    return rep


def no_report(rdir, what):
    files = report_files(rdir)
    check(not files, "%s: culprit wrote a report where it must not: %s" % (what, files))


def base_api(name):
    """cuMemcpyDtoH_v2 -> cuMemcpyDtoH, cuLaunchKernel_ptsz -> cuLaunchKernel."""
    return re.sub(r"(_v\d+)?(_ptsz|_ptds)?$", "", name or "")


def brief(launch):
    if not isinstance(launch, dict):
        return repr(launch)
    return "#%s %s %s on %s stream %s (device %s, thread %s)" % (
        launch.get("seq"), launch.get("api"), launch.get("kernel"), launch.get("stream_kind"), launch.get("stream"),
        launch.get("device"), launch.get("thread"))


def check_launch(launch, what, kernel=None, seq=None, stream_kind=None, device=None, thread=None, kind=None,
                 api=None, grid=None, block=None, shared_mem=None, symbolized=True):
    """symbolized: the report went through the CLI, which demangles. The library itself demangles only where the
    process has a C++ runtime loaded, which these C programs do not, so there "kernel" may stay mangled."""
    check(isinstance(launch, dict), "%s: no launch record (%r)" % (what, launch))
    if kernel is not None:
        check(launch.get("mangled") == kernel or (kernel == FILL and launch.get("kernel") == FILL),
              "%s: mangled name %r, expected %r (%s)" % (what, launch.get("mangled"), kernel, brief(launch)))
        names = (DEMANGLED[kernel],) if symbolized else (DEMANGLED[kernel], kernel)
        check(launch.get("kernel") in names,
              "%s: kernel %r, expected %r" % (what, launch.get("kernel"), DEMANGLED[kernel]))
    for field, want in (("seq", seq), ("stream_kind", stream_kind), ("device", device), ("thread", thread),
                        ("kind", kind), ("grid", grid), ("block", block), ("shared_mem", shared_mem)):
        if want is not None:
            check(launch.get(field) == want, "%s: %s is %r, expected %r (%s)" % (what, field, launch.get(field),
                                                                                  want, brief(launch)))
    if api is not None:
        check(base_api(launch.get("api")) == api, "%s: api %r, expected %s" % (what, launch.get("api"), api))


def check_error(rep, code, api=None):
    err = rep.get("error") or {}
    check(err.get("code") == code, "error.code is %r, expected %d" % (err.get("code"), code))
    if code in ERROR_NAMES:
        check(err.get("name") == ERROR_NAMES[code], "error.name is %r" % err.get("name"))
    check(isinstance(err.get("message"), str) and err.get("message"), "error.message missing")
    if api is not None:
        check(base_api(err.get("api")) == api, "error.api is %r, expected %s" % (err.get("api"), api))


def expect_exact(rep, **want):
    v = rep.get("verdict") or {}
    check(v.get("certainty") == "exact", "verdict is %r (%r), expected exact; culprit %s, candidates %s" % (
        v.get("certainty"), v.get("reason"), brief(rep.get("culprit")),
        [brief(c) for c in rep.get("candidates") or []]))
    check(isinstance(v.get("reason"), str) and v["reason"], "verdict.reason missing")
    check_launch(rep.get("culprit"), "culprit", symbolized=rep.get("_via_cli", False), **want)
    return rep["culprit"]


def find_candidate(rep, seq):
    for c in rep.get("candidates") or []:
        if isinstance(c, dict) and c.get("seq") == seq:
            return c
    raise CaseFailed("launch #%s is not among the candidates %s (verdict %r)" % (
        seq, [brief(c) for c in rep.get("candidates") or []], rep.get("verdict")))


def named_seqs(rep):
    """Launch numbers the report names: the culprit's, or every candidate's."""
    return [c.get("seq") for c in rep.get("candidates") or []] + [(rep.get("culprit") or {}).get("seq")]


def marker_line(src, tag=None):
    """The line of `src` marked as the expected culprit launch (optionally with the tag comment /* tag */)."""
    with open(src) as f:
        lines = f.read().splitlines()
    hits = [i + 1 for i, l in enumerate(lines)
            if "/* CULPRIT-LAUNCH */" in l and (tag is None or "/* %s */" % tag in l)]
    check(len(hits) == 1, "expected one CULPRIT-LAUNCH marker%s in %s, found lines %s" % (
        "" if tag is None else " tagged " + tag, src, hits))
    return hits[0]


def frames_text(frames):
    return "\n".join("    %s %s %s:%s" % (f.get("pc"), f.get("function"), f.get("file"), f.get("line"))
                     for f in frames or [])


def expect_frame(frames, src, line, what):
    """A symbolized frame at src:line (basename) is among the frames."""
    base = os.path.basename(src)
    frames = frames or []
    check(frames, "%s: the stack is empty" % what)
    if not any(f.get("file") for f in frames) and shutil.which("addr2line") is None:
        raise CaseSkipped("no addr2line on this machine, so frames carry no file/line")
    hit = [f for f in frames if os.path.basename(f.get("file") or "") == base and f.get("line") == line]
    check(hit, "%s: no frame at %s:%d among\n%s" % (what, base, line, frames_text(frames)))


def expect_verdict_text(res, kernel):
    check(SHORT[kernel] in res.err_text, "the printed verdict does not name %s\n%s" % (SHORT[kernel], res.err_text))


# ---------------------------------------------------------------------------------------------------------------
# The cases

CASES = {}


def case(name):
    def register(fn):
        CASES[name] = fn
        return fn
    return register


def fault_run(b, prog, args, env, fail_api, code=700, src=None, tag=None, cli=True, opts=()):
    """Run a faulting scenario without culprit (must fail at fail_api with code) and with it; returns
    (result, report). Under `culprit run` the culprit's stack must point at the marked launch line."""
    argv = [b.prog(prog)] + list(args)
    base = plain(b, argv, env)
    expect_plain_failure(base, fail_api, code)
    rdir = b.newdir("reports")
    if cli:
        res = cli_run(b, argv, env, rdir, opts)
        same_as_plain(base, res, "culprit run", exact_stderr=False)
    else:
        res = preloaded(b, argv, env, rdir)
        same_as_plain(base, res, "preloaded")
        check(culprit_lines(res), "no culprit: verdict lines on stderr\n%s" % res.describe())
    rep = load_report(rdir)
    rep["_via_cli"] = cli
    check_error(rep, code, fail_api)
    err = rep["error"]
    check(err.get("thread") is not None, "error.thread missing")
    return res, rep


def check_stack(rep, prog, tag):
    src = os.path.join(PROG_SRC, prog + ".c")
    expect_frame((rep.get("culprit") or {}).get("stack"), src, marker_line(src, tag), "culprit stack")
    check(any(os.path.basename(f.get("file") or "") == prog + ".c" for f in rep["error"].get("stack") or []),
          "error stack has no frame in %s.c\n%s" % (prog, frames_text(rep["error"].get("stack"))))


SIGNAL_CHILD = r"""
import signal, sys, time
def term(*_):
    print("child got SIGTERM", flush=True)
    sys.exit(7)
signal.signal(signal.SIGTERM, term)
print("ready", flush=True)
time.sleep(30)
print("not interrupted", flush=True)
"""


def signal_run(b, sig, opts=()):
    """culprit run with a child that waits; the signal goes to culprit, which must pass it on."""
    cmd = [b.cli, "run", "--dir", b.newdir("reports")] + list(opts) + ["--", sys.executable, "-c", SIGNAL_CHILD]
    proc = subprocess.Popen(cmd, env=_base_env(b, None), cwd=b.newdir("cli"), stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, preexec_fn=os.setsid)
    try:
        first = proc.stdout.readline()
        check(first.strip() == b"ready", "the child did not start: %r" % first)
        os.kill(proc.pid, sig)
        out, err = proc.communicate(timeout=RUN_TIMEOUT)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        raise CaseFailed("culprit run did not end after the signal (hang?)")
    return proc.returncode, first + out, err


@case("cli_signal_forward")
def _(b):
    """SIGTERM sent to culprit reaches the program, whose own handler and exit status count."""
    for opts in ((), ("--no-watch",)):
        rc, out, err = signal_run(b, signal.SIGTERM, opts)
        check(b"child got SIGTERM" in out and b"not interrupted" not in out,
              "the program did not receive SIGTERM (%s): %r %r" % (opts, out, err))
        check(rc == 7, "exit status %r, expected the program's 7 (%s)" % (rc, opts))


@case("cli_signal_death")
def _(b):
    """A signal that kills the program kills culprit the same way (the shell sees the same death)."""
    rc, out, err = signal_run(b, signal.SIGINT)
    check(rc == -signal.SIGINT, "culprit ended with %r, expected death by SIGINT (%r)" % (rc, err))
    check(b"not interrupted" not in out, "the program was not interrupted: %r" % out)


@case("assert_710")
def _(b):
    env = {"FAKECUDA_FAULT": "launch=3,code=710"}
    res, rep = fault_run(b, "linked", ["legacy", "ctxsync"], env, "cuCtxSynchronize", code=710)
    check(b"Assertion" in res.out, "the device assert line is not on stdout\n%s" % res.describe())
    expect_exact(rep, kernel=STEP, seq=3, stream_kind="legacy")
    check_stack(rep, "linked", "legacy")


@case("streams4_exact")
def _(b):
    # FAKECUDA_RUN_AHEAD=1: every stream's work up to its last event record has run when the fault is found, so
    # only the faulting stream has an unfinished launch.
    env = {"FAKECUDA_FAULT": "kernel=%s" % BAD, "FAKECUDA_RUN_AHEAD": "1"}
    argv = [b.prog("linked"), "streams4"]
    base = plain(b, argv, env)
    check(base.rc == 1 and "CUDA_ERROR_ILLEGAL_ADDRESS" in base.err_text, "scenario broken\n" + base.describe())
    rdir = b.newdir("reports")
    res = cli_run(b, argv, env, rdir)
    # Where the error shows depends on how far the queues ran, which culprit's own writes change; the program
    # must still see the same error and exit the same way.
    check(res.rc == base.rc and res.out == base.out, "behaviour changed\n%s\n%s" % (base.describe(),
                                                                                    res.describe()))
    check(failed_api(res) and failed_api(res)[1] == "CUDA_ERROR_ILLEGAL_ADDRESS", res.describe())
    rep = load_report(rdir)
    rep["_via_cli"] = True
    check_error(rep, 700)
    expect_exact(rep, kernel=BAD, seq=15, stream_kind="created", device=0, grid=[2, 1, 1], block=[32, 1, 1])
    created = [s for s in rep.get("streams") or [] if s.get("kind") == "created"]
    check(len(created) == 4, "report lists %d created streams, expected 4: %s" % (len(created), rep.get("streams")))
    check_stack(rep, "linked", "streams4")


@case("streams4_candidates")
def _(b):
    # Without run-ahead nothing ran before cuCtxSynchronize, which runs the streams round-robin: when write_oob
    # faults every stream still has launches queued, so culprit cannot tell and must list one per stream.
    env = {"FAKECUDA_FAULT": "kernel=%s" % BAD}
    res, rep = fault_run(b, "linked", ["streams4"], env, "cuCtxSynchronize")
    v = rep.get("verdict") or {}
    check(v.get("certainty") == "candidates", "verdict %r (%r), expected candidates" % (v.get("certainty"),
                                                                                       v.get("reason")))
    cands = rep.get("candidates") or []
    check_launch(find_candidate(rep, 15), "candidate #15", kernel=BAD, stream_kind="created", symbolized=True)
    streams = set(c.get("stream") for c in cands)
    check(len(streams) == 4, "candidates cover %d streams, expected the 4 with unfinished work: %s" % (
        len(streams), [brief(c) for c in cands]))
    for c in cands:
        check(c.get("stream_kind") == "created", "candidate on a stream that had no work: %s" % brief(c))


@case("devices2")
def _(b):
    env = {"FAKECUDA_FAULT": "launch=8", "FAKECUDA_DEVICES": "2"}
    res, rep = fault_run(b, "linked", ["devices2"], env, "cuCtxSynchronize")
    check(b"device 0 synchronized" in res.out, res.describe())
    expect_exact(rep, kernel=BAD, seq=8, stream_kind="legacy", device=1)
    check_stack(rep, "linked", "devices2")


def threads_case(b, n):
    env = {"FAKECUDA_FAULT": "kernel=%s" % BAD}
    res, rep = fault_run(b, "linked", ["threads", str(n)], env, "cuStreamSynchronize")
    m = re.search(rb"worker (\d+) tid (\d+) synchronizes last", res.out)
    check(m and int(m.group(1)) == n // 2 + 1, "the faulting worker did not report itself\n" + res.describe())
    tid = int(m.group(2))
    expect_exact(rep, kernel=BAD, stream_kind="created", device=0, thread=tid)
    check(rep["error"]["thread"] == tid, "error.thread %r, expected the faulting worker %d" % (
        rep["error"]["thread"], tid))
    stats = rep.get("stats") or {}
    check(stats.get("launches") == 20 * n, "stats.launches %r, expected %d" % (stats.get("launches"), 20 * n))
    check((stats.get("threads") or 0) >= n, "stats.threads %r, expected at least %d" % (stats.get("threads"), n))
    check(1 <= rep["culprit"]["seq"] <= 20 * n, "culprit seq %r out of range" % rep["culprit"]["seq"])
    check_stack(rep, "linked", "threads")


@case("threads8")
def _(b):
    threads_case(b, 8)


@case("threads32")
def _(b):
    threads_case(b, 32)


@case("threads_blocking")
def _(b):
    # Blocking mode with 16 workers waiting on its lock: the faulting launch's synchronize fails, and the next
    # worker's launch, refused with the same sticky error, may write the report. The culprit it names must carry
    # its own launch line, which blocking mode takes only at the failure (seen on a GPU: "no stack recorded"
    # when the lock was let go before). Several runs, since the order of the threads varies.
    argv = [b.prog("linked"), "threads", "16"]
    env = {"FAKECUDA_FAULT": "kernel=%s" % BAD}
    for _ in range(4):
        rdir = b.newdir("reports")
        res = cli_run(b, argv, env, rdir, ["--mode", "blocking"])
        check(res.rc == 1, "exit status %s\n%s" % (res.rc, res.describe()))
        rep = load_report(rdir)
        rep["_via_cli"] = True
        expect_exact(rep, kernel=BAD, stream_kind="created")
        src = os.path.join(PROG_SRC, "linked.c")
        expect_frame(rep["culprit"].get("stack"), src, marker_line(src, "threads"), "culprit stack")


@case("blocking_unserialized")
def _(b):
    # Blocking mode's lock is waited for 200 ms at most: past that a launch goes ahead and synchronizes without it
    # (kernels of different threads may wait on each other). Such a launch gets a breadcrumb, so that a fault
    # surfacing while its synchronize runs beside other launches finds it complete or not (seen on a shared GPU:
    # three unserialized launches, none known complete, made a blocking rerun give candidates). Here the first
    # launch runs for 700 ms, and its synchronize holds the lock meanwhile.
    argv = [b.prog("linked"), "threads", "4"]
    env = {"CULPRIT_MODE": "blocking", "CULPRIT_STATS": "1", "FAKECUDA_HANG": "launch=1,ms=700"}
    res = preloaded(b, argv, env, b.newdir("reports"))
    check(res.rc == 0 and b"4 workers done" in res.out, "the healthy threads run failed\n" + res.describe())
    line = " ".join(l for l in culprit_lines(res) if "stats:" in l)
    m = re.search(r"(\d+) launches, (\d+) breadcrumbs \((\d+) refused\), (\d+) blocking syncs \((\d+) not serialized",
                  line)
    check(m, "no stats line: %r" % line)
    launches, crumbs, refused, syncs, unserialized = (int(m.group(i)) for i in range(1, 6))
    check(launches == 80 and syncs == 80, "80 launches, each synchronized after, expected: %r" % line)
    check(unserialized >= 1, "no launch gave up waiting for the lock while the first one ran: %r" % line)
    check(crumbs == unserialized and refused == 0,
          "each launch that synchronized without the lock, and only those, must get a breadcrumb: %r" % line)


# Launch kinds --------------------------------------------------------------------------------------------------

@case("launch_ex")
def _(b):
    res, rep = fault_run(b, "procaddr", ["v2self", "launchex"], {"FAKECUDA_FAULT": "kernel=%s" % BAD},
                         "cuStreamSynchronize")
    expect_exact(rep, kernel=BAD, seq=3, stream_kind="created", kind="kernel", api="cuLaunchKernelEx",
                 grid=[8, 2, 1], block=[32, 4, 1], shared_mem=256)
    check_stack(rep, "procaddr", "launchex")


@case("cooperative")
def _(b):
    res, rep = fault_run(b, "procaddr", ["v2", "coop"], {"FAKECUDA_FAULT": "kernel=%s" % BAD},
                         "cuStreamSynchronize")
    expect_exact(rep, kernel=BAD, seq=3, stream_kind="created", kind="cooperative",
                 api="cuLaunchCooperativeKernel", grid=[2, 1, 1], block=[128, 1, 1])
    check_stack(rep, "procaddr", "coop")


@case("graph")
def _(b):
    # The captured graph holds write_oob once; its second execution (the second graph launch) faults.
    res, rep = fault_run(b, "procaddr", ["v2", "graph"], {"FAKECUDA_FAULT": "kernel=%s,nth=2" % BAD},
                         "cuStreamSynchronize")
    c = expect_exact(rep, stream_kind="created", kind="graph", api="cuGraphLaunch")
    earlier = [h for h in rep.get("history") or [] if h.get("kind") == "graph" and h.get("stream") == c["stream"]]
    check(len(earlier) == 1 and earlier[0].get("seq", 0) < c["seq"],
          "the culprit should be the second graph launch; graph launches before it: %s" % [brief(h) for h in earlier])
    check_stack(rep, "procaddr", "graph")
    # The kernels captured into the graph come with it, in capture order, each with the line that captured it.
    nodes = c.get("graph_nodes") or []
    check([n.get("mangled") for n in nodes] == [STEP, BAD, STEP], "graph_nodes %s" % [brief(n) for n in nodes])
    src = os.path.join(PROG_SRC, "procaddr.c")
    expect_frame(nodes[1].get("stack"), src, marker_line(src, "graph-node"), "the faulting node's capture stack")
    check(all(n.get("kind") == "kernel" and "captured" in (n.get("flags") or []) for n in nodes),
          "graph nodes must be the captured kernel launches: %s" % nodes)


@case("graph_node_precise")
def _(b):
    """Precise mode puts breadcrumbs inside captured graphs: a fault in a replay names the node from them, no
    assert needed, with the line that captured it; the program's own result is unchanged."""
    env = {"FAKECUDA_FAULT": "kernel=%s,nth=2" % BAD}
    res, rep = fault_run(b, "procaddr", ["v2", "graph"], env, "cuStreamSynchronize", opts=("--mode", "precise"))
    c = expect_exact(rep, kind="graph", api="cuGraphLaunch")
    node = c.get("node") or {}
    check(node.get("mangled") == BAD and c.get("node_source") == "graph breadcrumbs",
          "culprit.node %s (%r), expected the write_oob node from the graph's breadcrumbs" % (
              brief(node), c.get("node_source")))
    src = os.path.join(PROG_SRC, "procaddr.c")
    expect_frame(node.get("stack"), src, marker_line(src, "graph-node"), "the node's capture stack")
    check("from the graph's breadcrumbs" in res.err_text, "the verdict must name the node\n%s" % res.err_text)


@case("graph_node_assert")
def _(b):
    """A device assert in a replayed graph names the node: culprit.node is that kernel, with its capture line."""
    env = {"FAKECUDA_FAULT": "kernel=%s,nth=2,code=710" % BAD}
    res, rep = fault_run(b, "procaddr", ["v2", "graph"], env, "cuStreamSynchronize", code=710)
    c = expect_exact(rep, kind="graph", api="cuGraphLaunch")
    node = c.get("node") or {}
    check(node.get("mangled") == BAD, "culprit.node %s, expected the write_oob node" % brief(node))
    src = os.path.join(PROG_SRC, "procaddr.c")
    expect_frame(node.get("stack"), src, marker_line(src, "graph-node"), "the node's capture stack")
    check("node" in rep["verdict"].get("reason", ""), "the reason must say the assert named the node")
    check("the node that faulted" in res.err_text, "the printed verdict must show the node\n%s" % res.err_text)


# Healthy programs are left alone --------------------------------------------------------------------------------

def healthy_case(b, argv):
    base = plain(b, argv)
    check(base.rc == 0, "the healthy program fails without culprit\n" + base.describe())
    rdir = b.newdir("reports")
    res = preloaded(b, argv, None, rdir)
    check(res.rc == 0 and res.out == base.out and res.err == base.err,
          "preloaded run is not byte-identical\n--- without\n%s\n--- with\n%s" % (base.describe(), res.describe()))
    no_report(rdir, "healthy run")
    rdir = b.newdir("reports")
    res = cli_run(b, argv, None, rdir)
    check(res.rc == 0 and res.out == base.out, "culprit run changed exit status or stdout\n" + res.describe())
    check(all(l.startswith("culprit:") or l in base.err_text.splitlines() for l in res.err_text.splitlines()) or
          not res.err_text.strip(), "culprit run printed unexpected text\n" + res.describe())
    no_report(rdir, "healthy run under culprit run")
    return base


@case("healthy_linked")
def _(b):
    healthy_case(b, [b.prog("linked"), "healthy"])


@case("healthy_procaddr")
def _(b):
    for how in ("v2", "v2self", "v1", "v1self"):
        healthy_case(b, [b.prog("procaddr"), how, "healthy"])


@case("healthy_dlsym")
def _(b):
    healthy_case(b, [b.prog("dlsym"), "healthy"])
    healthy_case(b, [b.prog("rtld"), "next"])
    healthy_case(b, [b.prog("rtld"), "default"])


@case("export_table")
def _(b):
    for argv in ([b.prog("linked"), "healthy"], [b.prog("procaddr"), "v2", "healthy"],
                 [b.prog("procaddr"), "v1self", "healthy"]):
        res = preloaded(b, argv, None, b.newdir("reports"))
        check(b"export table: canary intact, held by libcuda.so.1\n" in res.out,
              "cuGetExportTable did not pass through untouched\n" + res.describe())


# Process life: fork, early exit, abort ----------------------------------------------------------------------------

@case("fork")
def _(b):
    env = {"FAKECUDA_FAULT": "kernel=%s;kernel=%s" % (BAD, LATE)}
    argv = [b.prog("forker")]
    base = plain(b, argv, env)
    expect_plain_failure(base, "cuCtxSynchronize", 700)
    check(re.search(rb"child pid \d+ exited with status 1", base.out), "scenario broken\n" + base.describe())
    rdir = b.newdir("reports")
    res = preloaded(b, argv, env, rdir)
    same_as_plain(base, res, "preloaded")
    child = int(re.search(rb"child pid (\d+)", res.out).group(1))
    check(b"parent: healthy after the child" in res.out, "the parent was disturbed by its child's fault")
    files = sorted(os.path.basename(f) for f in report_files(rdir))
    check(files == sorted(["culprit-%d.json" % child, "culprit-%d.json" % res.pid]),
          "expected reports of the child %d and the parent %d, found %s" % (child, res.pid, files))
    crep = load_report(rdir, child)
    check_error(crep, 700, "cuCtxSynchronize")
    check(crep["process"].get("ppid") == res.pid, "child report ppid %r" % crep["process"].get("ppid"))
    expect_exact(crep, kernel=BAD, stream_kind="legacy", thread=child)
    prep = load_report(rdir, res.pid)
    check_error(prep, 700, "cuCtxSynchronize")
    expect_exact(prep, kernel=LATE, stream_kind="legacy", thread=res.pid)
    check(all(h.get("mangled") != BAD for h in prep.get("history") or []),
          "the parent's history contains the child's launch")


@case("early_exit")
def _(b):
    # The faulty launch is the last thing the program does before exit(3); nothing is synchronized. The program
    # behaves as without culprit, and culprit's last look at exit finds the fault the program never asked about.
    argv = [b.prog("linked"), "legacy", "exit"]
    for extra in ({}, {"FAKECUDA_RUN_AHEAD": "1"}):
        env = dict(extra, FAKECUDA_FAULT="launch=10")
        base = plain(b, argv, env)
        check(base.rc == 3, "scenario broken\n" + base.describe())
        rdir = b.newdir("reports")
        res = preloaded(b, argv, env, rdir)
        same_as_plain(base, res, "preloaded")
        check_error(load_report(rdir), 700, "exit")
        rdir = b.newdir("reports")
        res = cli_run(b, argv, env, rdir)
        same_as_plain(base, res, "culprit run", exact_stderr=False)
        rep = load_report(rdir)
        check_error(rep, 700, "exit")
        check(10 in named_seqs(rep), "the faulty launch #10 is not named: %r" % named_seqs(rep))


@case("unwrapped_surface")
def _(b):
    # The program meets the sticky error in a call culprit does not wrap (as the CUDA runtime's own context
    # checks return it) and fails, or recovers by resetting the device: culprit finds the error it never saw
    # returned, at exit or before the reset clears it, and names the window holding the faulty launch #9.
    # (The library's default breadcrumb density: none among 10 launches, so the fake GPU runs ahead the same way
    # with culprit as without, and launch #9 faults when #10 is queued.)
    env = {"FAKECUDA_FAULT": "launch=9", "FAKECUDA_RUN_AHEAD": "1", "CULPRIT_CRUMB_EVERY": "", "CULPRIT_MARK_BUDGET": "0"}
    for how, rc, api in (("unwrapped", 1, "exit"), ("unwrapped_reset", 0, "cuDevicePrimaryCtxReset")):
        argv = [b.prog("linked"), "legacy", how]
        base = plain(b, argv, env)
        check(base.rc == rc and "cuEventCreate" in base.err_text + base.out_text,
              "scenario broken (%s)\n" % how + base.describe())
        rdir = b.newdir("reports")
        res = cli_run(b, argv, env, rdir)
        same_as_plain(base, res, "culprit run (%s)" % how, exact_stderr=False)
        rep = load_report(rdir)
        check_error(rep, 700, api)
        check(9 in named_seqs(rep), "%s: the faulty launch #9 is not named: %r" % (how, named_seqs(rep)))
    # A forked child that launched nothing must not touch the CUDA state it inherited, even with the parent's
    # fault known when it exits: no driver call from it at all (the simulated driver traces every call), no
    # report from it; the parent's own synchronize then reports the fault.
    argv = [b.prog("linked"), "legacy", "forkidle"]
    rdir = b.newdir("reports")
    child_err = os.path.join(b.newdir("child"), "stderr")
    res = preloaded(b, argv, dict(env, FAKECUDA_TRACE="1", CHILD_STDERR=child_err), rdir)
    check(res.rc == 1 and b"child exited with status 1" in res.out, "scenario broken (forkidle)\n" + res.describe())
    with open(child_err, errors="replace") as f:
        calls = [l for l in f.read().splitlines() if l.startswith("fakecuda:")]
    check(not calls, "the forked child called the driver: %r" % calls[:5])
    check([os.path.basename(f) for f in report_files(rdir)] == ["culprit-%d.json" % res.pid],
          "expected the parent's report alone, found %s" % [os.path.basename(f) for f in report_files(rdir)])
    check_error(load_report(rdir), 700, "cuCtxSynchronize")
    # culprit off (by mode or by a bad setting) records nothing and so asks nothing at exit.
    argv = [b.prog("linked"), "legacy", "unwrapped"]
    base = plain(b, argv, env)
    for extra in ({"CULPRIT_MODE": "off"}, {"CULPRIT_RING": "lots"}):
        rdir = b.newdir("reports")
        res = preloaded(b, argv, dict(env, **extra), rdir)
        same_as_plain(base, res, "culprit off (%s)" % extra)
        check(not report_files(rdir), "culprit off (%s) wrote a report" % extra)
    # Healthy, the last look finds nothing and says nothing.
    argv = [b.prog("linked"), "healthy"]
    base = plain(b, argv)
    rdir = b.newdir("reports")
    res = preloaded(b, argv, {}, rdir)
    same_as_plain(base, res, "healthy, preloaded")
    check(not report_files(rdir) and not culprit_lines(res), "a healthy run got a report or culprit lines:\n" +
          res.err_text)


@case("abort")
def _(b):
    env = {"FAKECUDA_FAULT": "launch=2"}
    argv = [b.prog("linked"), "legacy", "abort"]
    base = plain(b, argv, env)
    check(base.rc == -signal.SIGABRT, "scenario broken\n" + base.describe())
    rdir = b.newdir("reports")
    res = cli_run(b, argv, env, rdir)
    check(res.rc == -signal.SIGABRT, "culprit run did not pass the SIGABRT death through\n" + res.describe())
    check(res.out == base.out, "stdout differs\n" + res.describe())
    rep = load_report(rdir)
    check_error(rep, 700, "cuCtxSynchronize")
    expect_exact(rep, kernel=STEP, seq=2)
    check_stack(rep, "linked", "legacy")
    rdir = b.newdir("reports")
    res = preloaded(b, argv, env, rdir)
    check(res.rc == -signal.SIGABRT, "preloaded run did not die of SIGABRT\n" + res.describe())
    check_error(load_report(rdir), 700, "cuCtxSynchronize")


# The launch ring ------------------------------------------------------------------------------------------------

@case("ring_end")
def _(b):
    env = {"FAKECUDA_FAULT": "launch=1000", "CULPRIT_RING": "16"}
    res, rep = fault_run(b, "linked", ["legacy", "ctxsync", "1000"], env, "cuCtxSynchronize", cli=False)
    check((rep.get("config") or {}).get("ring") == 16, "config.ring %r" % (rep.get("config") or {}).get("ring"))
    expect_exact(rep, kernel=STEP, seq=1000, stream_kind="legacy")
    check((rep.get("stats") or {}).get("launches") == 1000, "stats.launches %r" % rep.get("stats"))


@case("ring_overwritten")
def _(b):
    # Launch #10 faults but 990 launches follow before the error surfaces: its record left the 16-entry ring.
    env = {"FAKECUDA_FAULT": "launch=10", "CULPRIT_RING": "16"}
    res, rep = fault_run(b, "linked", ["legacy", "ctxsync", "1000"], env, "cuCtxSynchronize", cli=False)
    v = rep.get("verdict") or {}
    check(re.search(r"overwr|no longer in the ring|evicted", v.get("reason") or "", re.I),
          "the verdict does not say the record was overwritten: %r" % v)
    c = rep.get("culprit")
    if c is not None:
        check(c.get("seq") == 10, "culprit names launch #%r, expected #10 or none" % c.get("seq"))
        check(c.get("mangled") in (None, STEP), "culprit names kernel %r" % c.get("mangled"))
    for cand in rep.get("candidates") or []:
        check(cand.get("seq") == 10 or cand.get("seq") is None, "candidate %s is not launch #10" % brief(cand))
    # The printed verdict may wrap the reason over several lines; its words must all be there, in order.
    printed = " ".join(l[len("culprit:"):].strip() for l in culprit_lines(res))
    check(" ".join(v["reason"].split()) in " ".join(printed.split()),
          "the printed verdict does not give the reason %r\n%s" % (v["reason"], res.err_text))
    # `culprit report` renders the same verdict from the file.
    out = _execute(b, [b.cli, "report", rep["_path"]], _base_env(b, None), b.work)
    printed = " ".join(l[len("culprit:"):].strip() if l.startswith("culprit:") else l
                       for l in (out.out_text + out.err_text).splitlines())
    check(out.rc == 0 and " ".join(v["reason"].split()) in " ".join(printed.split()),
          "culprit report does not give the reason %r\n%s" % (v["reason"], out.describe()))


# Modes --------------------------------------------------------------------------------------------------------

def phases_fault(b, env, fault):
    """linked phases: launches 1-10 are step, 11-20 vec_fill, then cuCtxSynchronize."""
    env = dict(env, FAKECUDA_FAULT=fault)
    argv = [b.prog("linked"), "phases", "10"]
    base = plain(b, argv, env)
    expect_plain_failure(base, "cuCtxSynchronize", 700)
    rdir = b.newdir("reports")
    res = preloaded(b, argv, env, rdir)
    check(res.out == base.out and res.rc == 1, "behaviour changed\n" + res.describe())
    return res, load_report(rdir)


def expect_surfaced_at_launch(res, rep, seq, kernel):
    check(failed_api(res) and failed_api(res)[0] == "cuLaunchKernel",
          "in blocking mode the launch call itself must return the error\n" + res.describe())
    check_error(rep, 700, "cuLaunchKernel")
    expect_exact(rep, kernel=kernel, seq=seq)


def expect_not_blocked(res, rep, seq):
    """The faulting launch was not synchronized: the error surfaced at the program's own synchronize, and culprit
    still does not blame another launch."""
    check(failed_api(res) and failed_api(res)[0] == "cuCtxSynchronize",
          "a launch outside the filter was synchronized\n" + res.describe())
    check_error(rep, 700, "cuCtxSynchronize")
    if (rep.get("verdict") or {}).get("certainty") == "exact":
        check(rep["culprit"].get("seq") == seq, "culprit #%s, expected #%d" % (rep["culprit"].get("seq"), seq))
    else:
        find_candidate(rep, seq)


@case("blocking")
def _(b):
    res, rep = phases_fault(b, {"CULPRIT_MODE": "blocking"}, "kernel=vec_fill,nth=3")
    expect_surfaced_at_launch(res, rep, 13, FILL)
    check(rep["config"].get("mode") == "blocking", "config.mode %r" % rep["config"].get("mode"))
    # The same through `culprit run --mode blocking`, which also points at the line of the launch.
    env = {"FAKECUDA_FAULT": "kernel=vec_fill,nth=3"}
    argv = [b.prog("linked"), "phases", "10"]
    rdir = b.newdir("reports")
    res = cli_run(b, argv, env, rdir, ["--mode", "blocking"])
    check(res.rc == 1, "exit status %s\n%s" % (res.rc, res.describe()))
    rep = load_report(rdir)
    expect_surfaced_at_launch(res, rep, 13, FILL)
    check_stack(rep, "linked", "phase-fill")
    # The launches before it on its stream were synchronized after and found complete: blocking mode kept them
    # without stacks (their synchronize proved them innocent); the culprit got its stacks when its synchronize
    # failed, inside its launch call (checked above). Precise mode keeps every launch's stacks.
    hist = rep.get("history") or []
    check(hist and all(not h.get("stack") for h in hist),
          "blocking mode kept stacks for launches whose synchronize succeeded: %r" % [h.get("stack") for h in hist])
    res, rep = phases_fault(b, {"CULPRIT_MODE": "precise"}, "kernel=vec_fill,nth=3")
    hist = rep.get("history") or []
    check(hist and all(h.get("stack") for h in hist), "precise mode must keep every launch's stack: %r" % hist)
    # CULPRIT_STATS counts them, and its native stack counts add up with them.
    res = preloaded(b, argv, {"CULPRIT_MODE": "blocking", "CULPRIT_STATS": "1"}, b.newdir("reports"))
    check(res.rc == 0, "the healthy phases run failed\n" + res.describe())
    line = " ".join(l for l in culprit_lines(res) if "stats:" in l)
    m = re.search(r"(\d+) launches, .* (\d+) blocking syncs \((\d+) not serialized, (\d+) with stacks left out\)"
                  r".*native stacks: (\d+) reused at [\d.]+ us, (\d+) unwound", line)
    check(m and [int(m.group(i)) for i in (1, 2, 3, 4)] == [20, 20, 0, 20] and int(m.group(5)) + int(m.group(6)) == 0,
          "20 blocking launches, all synchronized without error, must all be kept without stacks: %r" % line)


SYNC_APIS = ("cuStreamSynchronize", "cuStreamQuery", "cuCtxSynchronize", "cuEventSynchronize", "cuEventQuery")


def launches_followed_by(b, env, apis, count=10):
    """Run the healthy phases program with FAKECUDA_TRACE=1 and return the set of launch numbers that were
    followed by a call of one of APIS before the next launch (the last launch is left out: the program's own
    cuCtxSynchronize follows it)."""
    argv = [b.prog("linked"), "phases", str(count)]
    res = preloaded(b, argv, dict(env, FAKECUDA_TRACE="1"), b.newdir("reports"))
    check(res.rc == 0, "the healthy phases run failed\n" + res.describe())
    launches, followed = traced_launches(res, apis)
    check(launches == 2 * count, "the trace shows %d launches, expected %d" % (launches, 2 * count))
    followed.discard(2 * count)
    return followed


def traced_launches(res, apis):
    """From a FAKECUDA_TRACE=1 run: the number of launches, and the set of launch numbers followed by a call of
    one of APIS before the next launch."""
    launches, followed = 0, set()
    for line in res.err_text.splitlines():
        m = re.match(r"fakecuda: (\w+) -> ", line)
        if not m:
            continue
        api = base_api(m.group(1))
        if api == "cuLaunchKernel":
            launches += 1
        elif api in apis and launches:
            followed.add(launches)
    return launches, followed


def synchronized_launches(b, env, count=10):
    """The launches culprit (or the program) synchronized after."""
    return launches_followed_by(b, env, SYNC_APIS, count)


@case("blocking_kernels")
def _(b):
    env = {"CULPRIT_MODE": "blocking", "CULPRIT_KERNELS": "*step*"}
    res, rep = phases_fault(b, env, "kernel=vec_fill,nth=3")
    expect_not_blocked(res, rep, 13)
    res, rep = phases_fault(b, env, "kernel=%s,nth=4" % STEP)
    expect_surfaced_at_launch(res, rep, 4, STEP)
    res, rep = phases_fault(b, dict(env, CULPRIT_KERNELS="vec_*"), "kernel=vec_fill,nth=2")
    expect_surfaced_at_launch(res, rep, 12, FILL)
    # The driver's own trace shows which launches culprit synchronized: the step kernels (1-10) only.
    synced = synchronized_launches(b, env)
    check(synced == set(range(1, 11)), "with CULPRIT_KERNELS=*step* culprit synchronized after launches %s, "
          "expected 1-10" % sorted(synced))
    synced = synchronized_launches(b, {"CULPRIT_MODE": "blocking"})
    check(synced == set(range(1, 20)), "in blocking mode culprit synchronized after launches %s, expected all"
          % sorted(synced))
    # A launch blocking mode synchronizes after needs no breadcrumb (the synchronize is its completion bound);
    # the others get one after every launch, as in precise mode.
    crumbed = launches_followed_by(b, env, ("cuStreamWriteValue64", "cuMemsetD32Async"))
    check(crumbed == set(range(11, 20)), "with CULPRIT_KERNELS=*step* breadcrumbs followed launches %s, expected "
          "11-19 (the fill kernels)" % sorted(crumbed))


@case("blocking_scoped_filters")
def _(b):
    # Each scope's filter decides, though the answer for a kernel name is remembered between launches.
    res = preloaded(b, [b.prog("bounds"), "filters"], {"FAKECUDA_TRACE": "1"}, b.newdir("reports"))
    check(res.rc == 0, "the run failed\n" + res.describe())
    launches, synced = traced_launches(res, ("cuStreamSynchronize",))
    check(launches == 6, "the trace shows %d launches, expected 6" % launches)
    check(synced == {1, 2, 5, 6}, "culprit synchronized after launches %s, expected 1, 2, 5 and 6" % sorted(synced))


@case("blocking_launches")
def _(b):
    env = {"CULPRIT_MODE": "blocking"}
    res, rep = phases_fault(b, dict(env, CULPRIT_LAUNCHES="1:12"), "launch=13")
    expect_not_blocked(res, rep, 13)
    for window in ("13:", ":13", "13:13", "12:14"):
        res, rep = phases_fault(b, dict(env, CULPRIT_LAUNCHES=window), "launch=13")
        expect_surfaced_at_launch(res, rep, 13, FILL)
    synced = synchronized_launches(b, dict(env, CULPRIT_LAUNCHES="5:8"))
    check(synced == {5, 6, 7, 8}, "with CULPRIT_LAUNCHES=5:8 culprit synchronized after launches %s" % sorted(synced))
    synced = synchronized_launches(b, dict(env, CULPRIT_LAUNCHES="6"))
    check(synced == {6}, "with CULPRIT_LAUNCHES=6 culprit synchronized after launches %s" % sorted(synced))
    synced = synchronized_launches(b, dict(env, CULPRIT_LAUNCHES="17:"))
    check(synced == {17, 18, 19}, "with CULPRIT_LAUNCHES=17: culprit synchronized after launches %s" % sorted(synced))
    synced = synchronized_launches(b, {"CULPRIT_MODE": "record"})
    check(not synced, "record mode synchronized after launches %s" % sorted(synced))


# CULPRIT_STATS's account of launches without Python frames: found, looked, by clock, checked, walked, none
WAIT_COUNTS = re.compile(r"(\d+) launches with a waiting thread's frames, (\d+) looked for them at [\d.]+ us "
                         r"\((\d+) by its clock, (\d+) checked, (\d+) walked, (\d+) none\)")


@case("stats")
def _(b):
    argv = [b.prog("linked"), "healthy"]
    base = plain(b, argv)
    res = preloaded(b, argv, {"CULPRIT_STATS": "1"}, b.newdir("reports"))
    same_as_plain(base, res, "CULPRIT_STATS=1")
    lines = culprit_lines(res)
    check(len(lines) == 1, "CULPRIT_STATS=1 must print one summary line at exit, printed:\n" + res.err_text)
    check(re.search(r"\b12\b", lines[0]), "the summary does not count the 12 launches: %r" % lines[0])
    # The program launches from a few call chains over and over: they are learned in its first launches, and
    # the summary says when the last one was (what tells learning at the start from misses all along).
    m = re.search(r"(\d+) unwound at [\d.]+ us \((\d+) learned, (\d+) in place of another, (\d+) of them at the "
                  r"same stack pointer, (\d+) not cacheable, (\d+) over the walk budget, (\d+) not looked up\), "
                  r"the last at launch (\d+)\)", lines[0])
    check(m and 0 < int(m.group(1)) < 12 and int(m.group(1)) <= int(m.group(8)) < 12,
          "the summary must say at which launch the last chain was unwound (early here): %r" % lines[0])
    # a program without Python: every launch looked for a waiting Python thread's frames and found none
    w = WAIT_COUNTS.search(lines[0])
    check(w and [int(g) for g in w.groups()] == [0, 12, 0, 0, 0, 12],
          "12 launches without Python must each look for a waiting thread's frames and find none: %r" % lines[0])
    # what became of each unwound chain: every one is counted once (the same stack pointer is a part of "in place")
    parts = [int(m.group(i)) for i in (2, 3, 5, 6, 7)] if m else []
    check(m and sum(parts) == int(m.group(1)) and int(m.group(4)) <= int(m.group(3)) and int(m.group(2)) > 0,
          "the unwound chains' fates do not add up to the unwound count: %r" % lines[0])
    # Processes that launch nothing (the shell around the program, its helpers) print no summary: one line
    # per process that used the GPU, not one per process of the job.
    argv = ["/bin/sh", "-c", '/bin/true; "$0" healthy; /bin/true', b.prog("linked")]
    res = preloaded(b, argv, {"CULPRIT_STATS": "1"}, b.newdir("reports"))
    lines = culprit_lines(res)
    check(len(lines) == 1 and re.search(r"\b12 launches\b", lines[0]),
          "a shell running the program and two launch-less commands must give one summary line, printed:\n" +
          res.err_text)
    # A forked child counts its own launches: its native stacks, reused and unwound, add up to them (counts
    # carried over from the parent once made this line say 18446744073709551615 unwound).
    res = preloaded(b, [b.prog("forker")], {"CULPRIT_STATS": "1", "CULPRIT_QUIET": "1"}, b.newdir("reports"))
    stats = [l for l in culprit_lines(res) if "stats:" in l]
    check(len(stats) == 2, "parent and child must each print a summary line, printed:\n" + res.err_text)
    for line in stats:
        m = re.search(r"(\d+) launches, (\d+) breadcrumbs.*native stacks: (\d+) reused at [\d.]+ us, (\d+) unwound",
                      line)
        check(m and int(m.group(3)) + int(m.group(4)) == int(m.group(1)),
              "reused and unwound stacks do not add up to the launches: %r" % line)
        last = re.search(r"the last at launch (\d+)\)", line)
        check(last and (int(last.group(1)) == 0) == (int(m.group(4)) == 0) and int(last.group(1)) <= int(m.group(1)),
              "the last unwound launch must be counted in the process's own launches: %r" % line)
        check(m and int(m.group(2)) <= int(m.group(1)), "more breadcrumbs than launches: %r" % line)
        w = WAIT_COUNTS.search(line)
        check(m and w and [int(g) for g in w.groups()] == [0, int(m.group(1)), 0, 0, 0, int(m.group(1))],
              "each of the process's own launches (no Python) must look for a waiting thread once and find none: %r"
              % line)


# ---------------------------------------------------------------------------------------------------------------

def main():
    ap = argparse.ArgumentParser(description="Scenario tests of culprit over the simulated CUDA driver.")
    ap.add_argument("--build", help="the CMake build directory")
    ap.add_argument("--list", action="store_true", help="print the case names")
    ap.add_argument("--check-list", nargs="*", metavar="NAME", help="check NAME... equals the case list")
    ap.add_argument("--mark", choices=("write", "memset"), help="run the case with CULPRIT_MARK set to this")
    ap.add_argument("case", nargs="?")
    a = ap.parse_args()
    global MARK
    MARK = a.mark
    me = os.path.basename(sys.argv[0])  # cases.py, or a file of more cases that runs this main
    if a.list:
        print("\n".join(CASES))
        return PASS
    if a.check_list is not None:
        given, mine = list(a.check_list), list(CASES)
        if sorted(given) == sorted(mine) and len(set(given)) == len(given):
            print("%d cases, CMake list and %s agree" % (len(mine), me))
            return PASS
        print("FAIL: the CMake list and %s disagree: only in CMake %s, only in %s %s, duplicates %s" % (
            me, sorted(set(given) - set(mine)), me, sorted(set(mine) - set(given)),
            sorted(n for n in set(given) if given.count(n) > 1)))
        return FAIL
    if not a.build or not a.case:
        ap.error("--build BUILD CASE is required")
    if a.case not in CASES:
        print("FAIL: no case named %r (see --list)" % a.case)
        return FAIL
    b = None
    try:
        b = Build(a.build)
        CASES[a.case](b)
    except CaseSkipped as e:
        print("SKIP %s: %s" % (a.case, e))
        return SKIP
    except CaseFailed as e:
        print("FAIL %s: %s" % (a.case, e))
        return FAIL
    finally:
        if b is not None:
            b.cleanup()
    print("PASS %s" % a.case)
    return PASS


if __name__ == "__main__":
    sys.exit(main())
