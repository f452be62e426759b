#!/usr/bin/env python3
"""Scenario tests of jobs of several processes over the simulated CUDA driver: rank fields from the launcher's
environment (torchrun, Slurm), report names that carry the host, exit records of ranks that saw no fault, the
merged view of a job at the end of `culprit run` and from `culprit report DIR` (text and --json), several
`culprit run` commands sharing one --dir, and NCCL's warnings kept in the reports.

The job is progs/rankjob.c started by ranklaunch.py (a stand-in for torchrun). Same harness and command line as
cases.py (`--build BUILD CASE`, `--list`, `--check-list NAME...`).
"""

import json
import os
import re
import shutil
import socket
import subprocess
import sys
import time
import signal

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cases as h  # noqa: E402  (the harness: running programs, loading and checking reports)

h.CASES.clear()  # this file's cases only
case, check = h.case, h.check
HERE = os.path.dirname(os.path.abspath(__file__))
LAUNCHER = os.path.join(HERE, "ranklaunch.py")
RANKJOB_SRC = os.path.join(h.PROG_SRC, "rankjob.c")
ALLREDUCE = "ncclDevKernel_AllReduce_Sum_f32_RING_LL"
# Rank 2's loss kernel faults in its first step; the others' first all-reduce never completes (it waits for
# rank 2, which is gone), as a real job's ranks wait in the collective for a rank that died.
FAULT = "FAKECUDA_FAULT=kernel=%s" % h.BAD
HANG = "FAKECUDA_HANG=kernel=%s" % ALLREDUCE
LAUNCHER_VARS = ("RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "GROUP_RANK", "TORCHELASTIC_RUN_ID",
                 "TORCHELASTIC_RESTART_COUNT", "NCCL_DEBUG", "NCCL_DEBUG_FILE")
LAUNCHER_PREFIXES = ("SLURM_", "OMPI_", "PMI_", "PMIX_", "MPI_LOCALRANKID")


def host_part():
    """The host name as the library writes it into file names."""
    return re.sub(r"[^A-Za-z0-9.-]", "_", socket.gethostname()) or "unknown-host"


def env_of(b, extra=None):
    """The harness's environment without any launcher's variables the tests themselves may run under."""
    env = h._base_env(b, None)
    for k in list(env):
        if k in LAUNCHER_VARS or k.startswith(LAUNCHER_PREFIXES):
            del env[k]
    env.update(extra or {})
    return env


def run(b, argv, env, cwd=None):
    return h._execute(b, argv, env, cwd or b.newdir("cwd"))


def job_argv(b, nproc=4, steps=3, extra=(), mode="plain"):
    return [sys.executable, LAUNCHER, "--nproc", str(nproc)] + list(extra) + ["--", b.prog("rankjob"), str(steps),
                                                                               mode]


def reports(rdir):
    """{file name: report} of the directory."""
    out = {}
    for path in h.report_files(rdir):
        with open(path) as f:
            try:
                out[os.path.basename(path)] = json.load(f)
            except ValueError as e:
                raise h.CaseFailed("report %s is not valid JSON: %s" % (path, e))
    return out


def by_rank(reps):
    """{rank: [(file name, report)]}."""
    out = {}
    for name, rep in reps.items():
        out.setdefault(rep.get("process", {}).get("rank"), []).append((name, rep))
    return out


def check_names(reps, where, own_host=False):
    """Every file is culprit-<host>-<pid><tag>.json, its tag the report's kind and its pid the report's; the
    host is this machine's, or with own_host the one the report names (a process in a namespace of its own)."""
    for name, rep in reps.items():
        proc = rep.get("process", {})
        tag = {"fault": "", "hang": "-hang", "exit": "-exit"}.get(rep.get("kind"), "?")
        host = re.sub(r"[^A-Za-z0-9.-]", "_", proc.get("hostname", "?")) if own_host else host_part()
        want = "culprit-%s-%d%s.json" % (host, proc.get("pid", -1), tag)
        check(name == want, "%s: report %s should be named %s" % (where, name, want))
        check(isinstance(proc.get("time_unix_ns"), int) and proc["time_unix_ns"] > 0,
              "%s: %s has no process.time_unix_ns" % (where, name))


def check_ranks(reps, world, launcher, where):
    for name, rep in reps.items():
        proc = rep["process"]
        check(proc.get("launcher") == launcher and proc.get("world_size") == world and
              proc.get("local_rank") == proc.get("rank") and 0 <= proc.get("rank", -1) < world,
              "%s: %s has rank fields %r" % (where, name, {k: proc.get(k) for k in
                                                         ("rank", "local_rank", "world_size", "launcher")}))


def joined(lines, i, indent):
    """lines[i] with the lines after it that continue it (indented by indent after "culprit: ") joined."""
    out = lines[i][len("culprit: "):].strip()
    for cont in lines[i + 1:]:
        if not cont.startswith("culprit: " + indent):
            break
        out += " " + cont[len("culprit: " + indent):]
    return out


def verdict_line(text):
    """The merged view's verdict line, its continuation lines joined."""
    lines = text.splitlines()
    for i, l in enumerate(lines):
        if l.startswith("culprit: job of "):
            return joined(lines, i, "    ")
    raise h.CaseFailed("no merged view (a 'culprit: job of' line) in\n" + text)


def rank_lines(text):
    """{rank: its line in the merged view, continuation lines joined}."""
    lines, out = text.splitlines(), {}
    for i, l in enumerate(lines):
        m = re.match(r"culprit:   rank (\d+)[ :]", l)
        if m:
            out[int(m.group(1))] = joined(lines, i, "      ")
    return out


def loss_line():
    return h.marker_line(RANKJOB_SRC, "loss")


def check_job_json(b, rdir, statuses, first_rank):
    """`culprit report --json DIR`: one culprit.job/1 object with these statuses by rank."""
    res = run(b, [b.cli, "report", "--json", rdir], env_of(b))
    check(res.rc == 0, "culprit report --json failed\n" + res.describe())
    try:
        job = json.loads(res.out_text)
    except ValueError as e:
        raise h.CaseFailed("culprit report --json is not JSON (%s)\n%s" % (e, res.describe()))
    check(isinstance(job, dict) and job.get("schema") == "culprit.job/1",
          "culprit report --json DIR should give one culprit.job/1 object\n" + res.out_text[:2000])
    got = {p.get("rank"): p.get("status") for p in job.get("processes", [])}
    check(got == statuses, "job statuses %r, expected %r" % (got, statuses))
    first = job.get("first_fault") or {}
    if first_rank is None:
        check(job.get("first_fault") is None, "first_fault %r, expected null" % first)
        return job
    check(first.get("rank") == first_rank and first.get("kernel") == h.DEMANGLED[h.BAD] and
          first.get("launched_at") == "rankjob.c:%d" % loss_line() and first.get("certainty") == "exact",
          "first_fault %r" % first)
    for p in job["processes"]:
        check(p.get("status") == "missing" or p.get("reports"), "process entry without its reports: %r" % p)
    return job


@case("rank_job_exit")
def _(b):
    """One culprit run around the launcher: rank 2 faults, the others finish and leave exit records; the end of
    the run and `culprit report DIR` show one merged verdict naming rank 2's kernel and launch line."""
    # the others finish on their own (stopped as they may be at any step, their output would differ by chance)
    argv = job_argv(b, extra=["--env", "2:" + FAULT, "--run-id", "job42", "--stop-signal", "NONE"])
    base = run(b, argv, env_of(b))
    check(base.rc == 1 and b"rank 2: step" not in base.out and b"rank 0: finished" in base.out,
          "scenario broken\n" + base.describe())
    check(b"NCCL WARN" not in base.out, "without NCCL_DEBUG the stand-in for NCCL must print nothing")
    rdir = b.newdir("reports")
    res = h.cli_run(b, argv, env_of(b), rdir)
    check(res.rc == base.rc, "culprit run changed the launcher's exit status\n" + res.describe())
    check(sorted(res.out_text.splitlines()) == sorted(base.out_text.splitlines()),
          "the ranks' output differs under culprit run\n" + res.describe())
    check("NCCL WARN" not in res.out_text and not any("NCCL WARN" in l for l in h.program_stderr(res)),
          "NCCL's warning reached the terminal; it belongs in the log file\n" + res.describe())
    reps = reports(rdir)
    check_names(reps, "culprit run")
    check_ranks(reps, 4, "torchrun", "culprit run")
    ranks = by_rank(reps)
    check(sorted(ranks) == [0, 1, 2, 3] and all(len(v) == 1 for v in ranks.values()),
          "expected one report per rank, found %s" % sorted(reps))
    check({r: ranks[r][0][1].get("kind") for r in ranks} == {0: "exit", 1: "exit", 2: "fault", 3: "exit"},
          "kinds %r" % {r: ranks[r][0][1].get("kind") for r in ranks})
    run_ids = {rep["process"].get("run_id") for rep in reps.values()}
    check(len(run_ids) == 1 and None not in run_ids, "the reports of one culprit run carry run ids %r" % run_ids)
    check(all(rep["process"].get("job") == "torchrun:job42" for rep in reps.values()),
          "job %r" % [rep["process"].get("job") for rep in reps.values()])
    for r in (0, 1, 3):
        rec = ranks[r][0][1]
        check(rec.get("exit") == {"status": 0} and rec.get("stats", {}).get("launches") == 9,
              "rank %d's exit record: exit %r, stats %r" % (r, rec.get("exit"), rec.get("stats")))
    fault = ranks[2][0][1]
    h.check_error(fault, 700, "cuCtxSynchronize")
    fault["_via_cli"] = True
    h.expect_exact(fault, kernel=h.BAD, seq=2)
    h.expect_frame(fault["culprit"].get("stack"), RANKJOB_SRC, loss_line(), "rank 2's culprit stack")
    check(isinstance(fault.get("error", {}).get("time_unix_ns"), int), "error.time_unix_ns missing")
    # NCCL's warning: in rank 2's report and in its verdict, not on the terminal
    log = fault.get("nccl_log")
    check(isinstance(log, list) and any("NCCL WARN Cuda failure 'CUDA_ERROR_ILLEGAL_ADDRESS'" in l for l in log),
          "rank 2's report should keep NCCL's log: %r" % log)
    check(all("nccl_log" not in ranks[r][0][1] for r in (0, 1, 3)), "a rank without NCCL output got a nccl_log")
    check(re.search(r"^culprit:   \S+ \[0\] enqueue\.cc:1556 NCCL WARN Cuda failure", res.err_text, re.M),
          "the verdict does not show NCCL's warning\n" + res.err_text)
    # the merged view at the end of the run
    line = verdict_line(res.err_text)
    want = "job of 4 ranks (torchrun): rank 2 faulted first: write_oob(int*, int) launched at rankjob.c:%d; " \
           "ranks 0, 1, 3 saw no fault" % loss_line()
    check(line == want, "verdict line\n  %s\nexpected\n  %s" % (line, want))
    lines = rank_lines(res.err_text)
    for r in (0, 1, 3):
        want_line = "rank %d (%s, pid %d): saw no fault; it exited with status 0 after 9 launches; report %s" % (
            r, socket.gethostname(), ranks[r][0][1]["process"]["pid"], ranks[r][0][0])
        check(lines.get(r) == want_line, "rank %d's line\n  %s\nexpected\n  %s" % (r, lines.get(r), want_line))
    check("culprit: rank 2, the first to fault:" in res.err_text and
          "the kernel that faulted: write_oob(int*, int)" in res.err_text,
          "the full verdict of rank 2 is missing\n" + res.err_text)
    # culprit report DIR shows the same view; --json the job
    rep = run(b, [b.cli, "report", rdir], env_of(b))
    check(rep.rc == 0 and verdict_line(rep.out_text) == want, "culprit report DIR\n" + rep.describe())
    brief = run(b, [b.cli, "report", "--brief", rdir], env_of(b))
    check(brief.rc == 0 and verdict_line(brief.out_text) == want and "the kernel that faulted" not in brief.out_text,
          "culprit report --brief DIR\n" + brief.describe())
    job = check_job_json(b, rdir, {0: "clean", 1: "clean", 2: "faulted", 3: "clean"}, 2)
    check(job.get("verdict") == want and job.get("world_size") == 4 and job.get("launcher") == "torchrun",
          "job JSON %r" % {k: job.get(k) for k in ("verdict", "world_size", "launcher")})


def hang_job(b, opts, extra):
    """rank 2 faults, the others wait in their first all-reduce until the launcher stops them (by default once
    every rank has queued its first step, so that the others are surely in the all-reduce)."""
    ready = os.path.join(b.newdir("ready"), "rank")
    extra = list(extra) or ["--wait-for", ready + "-*:4"]
    argv = job_argv(b, extra=["--env", "2:" + FAULT] + sum((["--env", "%d:%s" % (r, HANG)] for r in (0, 1, 3)), [])
                    + extra)
    rdir = b.newdir("reports")
    res = h.cli_run(b, [a.replace("@RDIR@", rdir) for a in argv], env_of(b, {"RANKJOB_READY": ready}), rdir, opts)
    check(res.rc == 1, "the launcher should fail (a worker failed)\n" + res.describe())
    reps = reports(rdir)
    check_names(reps, "culprit run")
    check_ranks(reps, 4, "torchrun", "culprit run")
    ranks = by_rank(reps)
    check(sorted(ranks) == [0, 1, 2, 3] and all(len(v) == 1 for v in ranks.values()),
          "expected one report per rank, found %s" % sorted(reps))
    check({r: ranks[r][0][1].get("kind") for r in ranks} == {0: "hang", 1: "hang", 2: "fault", 3: "hang"},
          "kinds %r (no exit record where a hang report was written)" % {r: ranks[r][0][1].get("kind")
                                                                          for r in ranks})
    return res, rdir, ranks


@case("rank_job_sigterm")
def _(b):
    """As torchrun does, the launcher stops the others with SIGTERM once rank 2 failed: their hang reports say
    they were waiting in NCCL's AllReduce, and the merged view calls them collateral."""
    res, rdir, ranks = hang_job(b, (), ())
    for r in (0, 1, 3):
        check(ranks[r][0][1].get("hang", {}).get("trigger") == "SIGTERM", "rank %d: hang %r" % (
            r, ranks[r][0][1].get("hang")))
    line = verdict_line(res.err_text)
    want = "job of 4 ranks (torchrun): rank 2 faulted first: write_oob(int*, int) launched at rankjob.c:%d; " \
           "ranks 0, 1, 3 are collateral (stopped by SIGTERM while waiting in AllReduce)" % loss_line()
    check(line == want, "verdict line\n  %s\nexpected\n  %s" % (line, want))
    line0 = rank_lines(res.err_text).get(0) or ""
    check(re.match(r"rank 0 \(.*\): collateral: stopped by SIGTERM while waiting in NCCL AllReduce \(sum, f32, "
                   r"ring, LL\); report culprit-.*-hang\.json$", line0), "rank 0's line %r" % line0)
    job = check_job_json(b, rdir, {0: "collateral", 1: "collateral", 2: "faulted", 3: "collateral"}, 2)
    check(all(p.get("collective") == "AllReduce" and p.get("trigger") == "SIGTERM"
              for p in job["processes"] if p.get("status") == "collateral"), "collateral entries %r" % job)


def stopped_job(b, argv, env, rdir, ready, nproc, stop):
    """Runs the job under `culprit run --dir rdir`, waits until its nproc ranks are ready (RANKJOB_READY=ready),
    sends SIGTERM to the ranks in stop, and returns (culprit run's exit status, its stderr as text)."""
    p = subprocess.Popen([b.cli, "run", "--dir", rdir, "--"] + argv, env=env, cwd=b.newdir("cwd"),
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + h.RUN_TIMEOUT
        while not all(os.path.exists("%s-%d" % (ready, r)) for r in range(nproc)) and time.monotonic() < deadline:
            time.sleep(0.05)
        for r in stop:
            with open("%s-%d" % (ready, r)) as f:
                os.kill(int(f.read().split()[0]), signal.SIGTERM)
        _, err = p.communicate(timeout=h.RUN_TIMEOUT)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    return p.returncode, err.decode("utf-8", "replace")


@case("rank_job_stuck_kernel")
def _(b):
    """2 ranks: rank 0 is stuck in its own kernel (the loss kernel never ends), rank 1 waits for it in the
    all-reduce. Stopped by SIGTERM, each rank's report is asked of the device, which names the kernel each runs;
    record mode alone could not tell (each had two launches unfinished, the all-reduce among them), and the merged
    view names rank 0, with its kernel, as the rank to look at, first."""
    ready = os.path.join(b.newdir("ready"), "rank")
    running = b.newdir("device")
    argv = job_argv(b, nproc=2, steps=3, extra=["--env", "0:FAKECUDA_HANG=kernel=%s" % h.BAD,
                                                "--env", "1:" + HANG])
    rdir = b.newdir("reports")
    env = env_of(b, {"RANKJOB_READY": ready, "CULPRIT_CRUMB_EVERY": "", "CULPRIT_MARK_BUDGET": "0", "FAKECUDA_RUNNING": running,
                     "CULPRIT_CUDA_GDB": os.path.join(HERE, "fake_cuda_gdb.py")})
    # rank 1 stopped; the launcher then stops rank 0 with SIGTERM, as torchrun does
    rc, text = stopped_job(b, argv, env, rdir, ready, 2, (1,))
    check(rc == 1, "the launcher should fail (a worker was stopped): %r\n%s" % (rc, text))
    ranks = by_rank(reports(rdir))
    check(sorted(ranks) == [0, 1] and all(len(v) == 1 for v in ranks.values()), "reports %r" % ranks)
    r0, r1 = ranks[0][0][1], ranks[1][0][1]
    for r, rep, kernel in ((0, r0, h.BAD), (1, r1, ALLREDUCE)):
        dq = rep.get("device_query") or {}
        c = rep.get("culprit") or {}
        check(rep.get("kind") == "hang" and dq.get("status") == "answered" and c.get("by") == "the device" and
              c.get("mangled") == kernel, "rank %d: device_query %r, culprit %r" % (r, dq, {
                  k: c.get(k) for k in ("seq", "mangled", "by")}))
    line = verdict_line(text)
    want = "job of 2 ranks (torchrun): no rank faulted; rank 0 runs write_oob(int*, int) launched at " \
           "rankjob.c:%d (the device says so): look there first; rank 0 hung (stopped by SIGTERM); rank 1 hung " \
           "(stopped by SIGTERM while waiting in AllReduce)" % loss_line()
    check(line == want, "verdict line\n  %s\nexpected\n  %s" % (line, want))
    job = check_job_json(b, rdir, {0: "collateral", 1: "collateral"}, None)
    check([p.get("rank") for p in job["processes"] if p.get("stuck_in_kernel")] == [0], "job JSON %r" % job)


def asked_job(b, own_device, wait):
    """4 ranks stopped by SIGTERM at once, rank 0 stuck in its own kernel, the others waiting in the all-reduce;
    the debugger takes 2 s to answer for each (as cuda-gdb reading a torch process's libraries takes 8), each rank
    waits `wait` s for its answer (CULPRIT_DEVICE_WAIT), each on a device of its own (own_device) or all on device
    0. Checks that every rank's report holds the device's answer and the job's verdict names rank 0; returns the
    attaches' spans {pid: {"start": t, "end": t}}."""
    ready = os.path.join(b.newdir("ready"), "rank")
    running = b.newdir("device")
    log = os.path.join(b.newdir("gdblog"), "attach.log")
    argv = job_argv(b, nproc=4, steps=3, extra=["--env", "0:FAKECUDA_HANG=kernel=%s" % h.BAD] +
                    sum((["--env", "%d:%s" % (r, HANG)] for r in (1, 2, 3)), []))
    rdir = b.newdir("reports")
    env = env_of(b, {"RANKJOB_READY": ready, "CULPRIT_CRUMB_EVERY": "", "CULPRIT_MARK_BUDGET": "0",
                     "FAKECUDA_RUNNING": running, "CULPRIT_CUDA_GDB": os.path.join(HERE, "fake_cuda_gdb.py"),
                     "FAKE_CUDA_GDB_DELAY": "2", "FAKE_CUDA_GDB_LOG": log, "CULPRIT_DEVICE_WAIT": str(wait),
                     "FAKECUDA_DEVICES": "4", "RANKJOB_OWN_DEVICE": "1" if own_device else "0"})
    # all at once, as torchrun stops its workers when it is stopped itself
    _, text = stopped_job(b, argv, env, rdir, ready, 4, range(4))
    ranks = by_rank(reports(rdir))
    check(sorted(ranks) == [0, 1, 2, 3] and all(len(v) == 1 for v in ranks.values()), "reports %r" % ranks)
    for r in range(4):
        rep = ranks[r][0][1]
        dq = rep.get("device_query") or {}
        c = rep.get("culprit") or {}
        want = h.BAD if r == 0 else ALLREDUCE
        check(dq.get("status") == "answered" and c.get("by") == "the device" and c.get("mangled") == want,
              "rank %d: device_query %r, culprit %r\n%s" % (r, {k: dq.get(k) for k in ("status", "why", "ms")},
                                                            {k: c.get(k) for k in ("mangled", "by")}, text))
    spans = {}
    with open(log) as f:
        for line in f:
            part = line.split()
            if len(part) == 3:
                spans.setdefault(part[0], {})[part[1]] = float(part[2])
    check(len(spans) == 4 and all(len(v) == 2 for v in spans.values()), "attaches %r" % spans)
    line = verdict_line(text)
    check(line.startswith("job of 4 ranks (torchrun): no rank faulted; rank 0 runs write_oob(int*, int)") and
          "(the device says so)" in line, "verdict line %r" % line)
    return spans


@case("rank_job_asked_at_once")
def _(b):
    """4 ranks, each on a device of its own, stopped at once; each attach takes 2 s and each rank waits 5 s for
    its answer. Asked one after the other, the third rank would be gone before its answer; culprit run asks them at
    once (their attaches overlap) and every rank's report holds the device's answer."""
    spans = asked_job(b, True, 5)
    check(max(v["start"] for v in spans.values()) < min(v["end"] for v in spans.values()),
          "the four attaches did not overlap: %r" % spans)


@case("rank_job_asked_per_device")
def _(b):
    """The same 4 ranks all on device 0 (and 12 s to wait): one question at a time on a device, so no two
    attaches overlap, and every rank's report still holds the device's answer."""
    spans = sorted(asked_job(b, False, 12).values(), key=lambda v: v["start"])
    check(all(a["end"] <= b_["start"] for a, b_ in zip(spans, spans[1:])), "attaches overlapped: %r" % spans)


@case("rank_job_rerun")
def _(b):
    """culprit run --rerun around the job: rank 2's record-mode verdict (breadcrumbs every 16th launch) is a
    window; the job runs once more with rank 2 alone blocking over its own window (CULPRIT_RANK_LAUNCHES) and
    rank 2's report is confirmed, the other ranks' reports are left as they were."""
    ready = os.path.join(b.newdir("ready"), "rank")
    argv = job_argv(b, extra=["--env", "2:" + FAULT] + sum((["--env", "%d:%s" % (r, HANG)] for r in (0, 1, 3)), [])
                    + ["--wait-for", ready + "-*:4"])
    rdir = b.newdir("reports")
    res = h.cli_run(b, argv, env_of(b, {"RANKJOB_READY": ready, "CULPRIT_CRUMB_EVERY": "", "CULPRIT_MARK_BUDGET": "0"}), rdir, ("--rerun",))
    check(res.rc == 1, "the launcher should fail (a worker failed)\n" + res.describe())
    check("each rank its own (CULPRIT_RANK_LAUNCHES=2=" in res.err_text, "no word of the job's rerun\n" +
          res.describe())
    top = {n: r for n, r in reports(rdir).items() if os.path.dirname(n) == ""}
    ranks = by_rank({n: r for n, r in top.items() if os.path.exists(os.path.join(rdir, n))})
    fault = [r for _, r in ranks.get(2, []) if r.get("kind") == "fault"]
    check(len(fault) == 1, "rank 2's fault report: %s" % sorted(top))
    rr = fault[0].get("rerun") or {}
    check(rr.get("outcome") == "confirmed" and fault[0]["verdict"]["certainty"] == "exact",
          "rank 2 after the rerun: %r, verdict %r" % (rr, fault[0]["verdict"]))
    check(h.BAD == fault[0]["culprit"].get("mangled"), "rank 2's culprit %r" % fault[0]["culprit"].get("kernel"))
    check(os.path.dirname(rr.get("report", "")).endswith("rerun-job"), "the rerun's report %r" % rr.get("report"))
    for r in (0, 1, 3):
        check(all("rerun" not in rep for _, rep in ranks.get(r, [])), "rank %d was given a rerun outcome" % r)
    check("confirmed by a rerun" in res.err_text, "the merged verdict does not say it was confirmed\n" +
          res.describe())


@case("rank_job_timeout")
def _(b):
    """4 ranks, rank 2 faults and the others time out (culprit run --hang-timeout) in the all-reduce; the
    scheduler then kills them (SIGKILL leaves the timeout reports as they are)."""
    res, rdir, ranks = hang_job(b, ("--hang-timeout", "0.5"),
                                ("--wait-for", os.path.join("@RDIR@", "culprit-*-hang.json") + ":3",
                                 "--stop-signal", "KILL"))
    for r in (0, 1, 3):
        check(ranks[r][0][1].get("hang", {}).get("trigger") == "timeout", "rank %d: hang %r" % (
            r, ranks[r][0][1].get("hang")))
    line = verdict_line(res.err_text)
    want = "job of 4 ranks (torchrun): rank 2 faulted first: write_oob(int*, int) launched at rankjob.c:%d; " \
           "ranks 0, 1, 3 are collateral (no progress for 0.5 s while waiting in AllReduce)" % loss_line()
    check(line == want, "verdict line\n  %s\nexpected\n  %s" % (line, want))
    check_job_json(b, rdir, {0: "collateral", 1: "collateral", 2: "faulted", 3: "collateral"}, 2)


@case("rank_missing")
def _(b):
    """A rank that leaves no report (it launched nothing, or ended with _exit) stands out as missing."""
    rdir = b.newdir("reports")
    env = env_of(b)
    for rank, mode in ((0, "plain"), (1, "early"), (2, "quick")):
        e = dict(env, RANK=str(rank), LOCAL_RANK=str(rank), WORLD_SIZE="3")
        r = h.preloaded(b, [b.prog("rankjob"), "1", mode], e, rdir)
        check(r.rc == 0, "rank %d (%s) failed\n%s" % (rank, mode, r.describe()))
    reps = reports(rdir)
    check(sorted(reps) == ["culprit-%s-%d-exit.json" % (host_part(), by_rank(reps)[0][0][1]["process"]["pid"])],
          "only rank 0 should leave an exit record: %s" % sorted(reps))
    res = run(b, [b.cli, "report", rdir], env)
    want = "job of 3 ranks (torchrun): no rank faulted; rank 0 saw no fault; ranks 1, 2 are missing (no report)"
    check(res.rc == 0 and verdict_line(res.out_text) == want, "verdict line, expected\n  %s\n%s" % (want,
                                                                                                  res.describe()))
    # the missing ranks are one run, one line and one JSON entry (rank .. last_rank), whatever their number
    check("\nculprit:   ranks 1, 2: missing: no report (it launched no kernels" in res.out_text,
          "the missing ranks' line\n" + res.out_text)
    job = check_job_json(b, rdir, {0: "clean", 1: "missing"}, None)
    check([p.get("last_rank") for p in job["processes"]] == [None, 2], "the run of missing ranks in JSON: %r" %
          job["processes"])


@case("rank_exit_record")
def _(b):
    """Exit records across threads and fork (the child has its own pid and record, with its own status), and
    none from a process without a launcher, with culprit off or badly configured."""
    env = env_of(b, {"RANK": "1", "LOCAL_RANK": "0", "WORLD_SIZE": "2", "SLURM_PROCID": "0"})
    # the steps on a thread of their own
    rdir = b.newdir("reports")
    res = h.preloaded(b, [b.prog("rankjob"), "2", "thread"], env, rdir)
    check(res.rc == 0, res.describe())
    reps = reports(rdir)
    check_names(reps, "thread")
    check(len(reps) == 1, "one exit record expected: %s" % sorted(reps))
    rec = list(reps.values())[0]
    check(rec.get("kind") == "exit" and rec["process"].get("rank") == 1 and rec["process"].get("launcher") ==
          "torchrun" and rec.get("stats", {}).get("launches") == 6 and rec.get("stats", {}).get("threads") >= 1,
          "torchrun's variables win over Slurm's, launches of the thread count: %r" % rec)
    # fork: the child's launches are its own
    rdir = b.newdir("reports")
    res = h.preloaded(b, [b.prog("rankjob"), "1", "fork"], env, rdir)
    check(res.rc == 0, res.describe())
    child = int(re.search(rb"child pid (\d+) exited with status 4", res.out).group(1))
    reps = reports(rdir)
    check_names(reps, "fork")
    recs = {rep["process"]["pid"]: rep for rep in reps.values()}
    check(sorted(recs) == sorted([child, res.pid]), "exit records of %s, expected the parent %d and child %d" % (
        sorted(recs), res.pid, child))
    check(recs[child]["exit"] == {"status": 4} and recs[child]["stats"]["launches"] == 3 and
          recs[child]["process"]["ppid"] == res.pid, "the child's record %r" % recs[child])
    check(recs[res.pid]["exit"] == {"status": 0} and recs[res.pid]["stats"]["launches"] == 3,
          "the parent's record %r" % recs[res.pid])
    # no launcher, culprit off, bad configuration, early exit, _exit: nothing
    for what, extra, mode in (("no launcher", {"RANK": None}, "plain"), ("off", {"CULPRIT_MODE": "off"}, "plain"),
                              ("bad config", {"CULPRIT_RING": "lots"}, "plain"), ("early exit", {}, "early"),
                              ("_exit", {}, "quick")):
        e = dict(env)
        for k, v in extra.items():
            if v is None:
                for var in ("RANK", "LOCAL_RANK", "WORLD_SIZE", "SLURM_PROCID"):
                    e.pop(var, None)
            else:
                e[k] = v
        rdir = b.newdir("reports")
        res = h.preloaded(b, [b.prog("rankjob"), "1", mode], e, rdir)
        check(res.rc == 0, "%s: %s" % (what, res.describe()))
        h.no_report(rdir, what)
        if what == "bad config":
            check("CULPRIT_RING='lots' is not valid" in res.err_text, "no line for the bad value\n" + res.describe())


@case("rank_bad_values")
def _(b):
    """Bad values of the launcher's variables are left out, never guessed, and never crash the program: the
    report then carries what was valid, and a process without a valid rank is named as before."""
    env_fault = {"FAKECUDA_FAULT": "kernel=%s" % h.BAD}
    argv = [b.prog("rankjob"), "1"]
    base = h.plain(b, argv, env_of(b, env_fault))
    h.expect_plain_failure(base, "cuCtxSynchronize", 700)
    for extra, want in (({"RANK": "two", "WORLD_SIZE": "4"}, None),
                        ({"RANK": "-1", "WORLD_SIZE": "4"}, None),
                        ({"RANK": "3", "WORLD_SIZE": "2", "LOCAL_RANK": "x"}, {"rank": 3, "launcher": "torchrun"}),
                        ({"RANK": "1", "WORLD_SIZE": "4", "LOCAL_RANK": "1" * 40},
                         {"rank": 1, "world_size": 4, "launcher": "torchrun"}),
                        ({"SLURM_PROCID": "", "SLURM_NTASKS": "8"}, None),
                        ({"SLURM_PROCID": "7", "SLURM_NTASKS": "8", "SLURM_LOCALID": "3", "SLURM_JOB_ID": "1 2"},
                         {"rank": 7, "local_rank": 3, "world_size": 8, "launcher": "slurm"}),
                        ({"OMPI_COMM_WORLD_RANK": "0x1", "PMI_RANK": "2", "PMI_SIZE": "4"},
                         {"rank": 2, "world_size": 4, "launcher": "mpich"})):
        rdir = b.newdir("reports")
        res = h.preloaded(b, argv, env_of(b, dict(env_fault, **extra)), rdir)
        h.same_as_plain(base, res, "preloaded with %r" % extra)
        reps = reports(rdir)
        check(len(reps) == 1, "%r: one report expected, found %s" % (extra, sorted(reps)))
        name, rep = list(reps.items())[0]
        proc = rep["process"]
        if want is None:
            check(name == "culprit-%d.json" % proc["pid"] and not any(
                k in proc for k in ("rank", "local_rank", "world_size", "launcher", "job")),
                "%r: no launcher, so no rank fields and the plain name: %s %r" % (extra, name, proc))
            continue
        check_names(reps, repr(extra))
        got = {k: proc[k] for k in ("rank", "local_rank", "world_size", "launcher", "job") if k in proc}
        check(got == want, "%r: rank fields %r, expected %r" % (extra, got, want))


def slurm_env(b, rank, extra=None):
    return env_of(b, dict({"SLURM_PROCID": str(rank), "SLURM_LOCALID": "0", "SLURM_NTASKS": "2",
                           "SLURM_JOB_ID": "4242", "SLURM_STEP_ID": "0"}, **(extra or {})))


def check_shared(b, shared, first_out, names):
    """The merged view of the shared directory: rank 1 faulted first, rank 0 saw no fault."""
    res = run(b, [b.cli, "report", shared], env_of(b))
    check(res.rc == 0, "culprit report SHARED failed\n" + res.describe())
    line = verdict_line(res.out_text)
    want = "job of 2 ranks (slurm)%s: rank 1%s faulted first: write_oob(int*, int) launched at rankjob.c:%d; " \
           "rank 0 saw no fault" % (first_out + (loss_line(),))
    check(line == want, "verdict line\n  %s\nexpected\n  %s" % (line, want))
    job = check_job_json(b, shared, {0: "clean", 1: "faulted"}, 1)
    check(sorted(os.path.basename(p) for e in job["processes"] for p in e["reports"]) == sorted(names),
          "the job lists %r, expected %r" % (job["processes"], names))


@case("rank_slurm_shared_dir")
def _(b):
    """srun culprit run --dir SHARED: one culprit command per rank, one directory. Each command shows its own
    rank's reports only; `culprit report SHARED` merges them into one job (the Slurm step)."""
    shared = b.newdir("shared")
    r0 = h.cli_run(b, [b.prog("rankjob"), "2"], slurm_env(b, 0), shared)
    check(r0.rc == 0, r0.describe())
    r1 = h.cli_run(b, [b.prog("rankjob"), "2"], slurm_env(b, 1, {"FAKECUDA_FAULT": "kernel=%s" % h.BAD}), shared)
    check(r1.rc == 1, r1.describe())
    # rank 0's command: its exit record, said plainly, and how to see the whole job
    check(re.search(r"^culprit: rank 0 of 2 \(slurm\) on host .*, saw no CUDA error; it exited with status 0 after "
                    r"6 launches$", r0.err_text, re.M), "rank 0's culprit run\n" + r0.describe())
    check("culprit: no sticky CUDA error in" in r0.err_text and "merges the reports of every rank" in r0.err_text,
          "rank 0's culprit run\n" + r0.describe())
    # rank 1's command shows its own fault, not rank 0's record, and no merged view of one rank
    check("the kernel that faulted: write_oob(int*, int)" in r1.err_text and "rank 0" not in r1.err_text and
          "job of" not in r1.err_text and "merges the reports of every rank" in r1.err_text,
          "rank 1's culprit run\n" + r1.describe())
    reps = reports(shared)
    check_names(reps, "srun")
    check(len({rep["process"]["run_id"] for rep in reps.values()}) == 2 and
          all(rep["process"].get("job") == "slurm:4242.0" for rep in reps.values()),
          "two commands, one Slurm step: %r" % [rep["process"] for rep in reps.values()])
    check_shared(b, shared, ("", ""), list(reps))


@case("rank_slurm_two_hosts")
def _(b):
    """The same on two hosts (each culprit command in a namespace of its own, with its own host name and pids, so
    the two ranks even have the same pid): the report names cannot collide."""
    unshare = shutil.which("unshare")
    probe = subprocess.run([unshare, "--uts", "--pid", "--fork", "--map-root-user", "hostname", "nodeA"],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL) if unshare else None
    if probe is None or probe.returncode != 0:
        raise h.CaseSkipped("no unshare with user, UTS and pid namespaces here to play two hosts")
    shared = b.newdir("shared")
    for rank, host in ((0, "nodeA"), (1, "nodeB.cluster")):
        extra = {"FAKECUDA_FAULT": "kernel=%s" % h.BAD} if rank == 1 else {}
        cmd = [unshare, "--uts", "--pid", "--fork", "--map-root-user", "sh", "-c",
               'hostname "$0" && exec "$@"', host, b.cli, "run", "--dir", shared, "--", b.prog("rankjob"), "2"]
        res = run(b, cmd, slurm_env(b, rank, extra))
        check(res.rc == rank, "rank %d on %s\n%s" % (rank, host, res.describe()))
    reps = reports(shared)
    pids = {rep["process"]["hostname"]: rep["process"]["pid"] for rep in reps.values()}
    check(sorted(pids) == ["nodeA", "nodeB.cluster"], "hosts %r" % pids)
    names = sorted(reps)
    check(names == ["culprit-nodeA-%d-exit.json" % pids["nodeA"], "culprit-nodeB.cluster-%d.json" % pids["nodeB.cluster"]],
          "report names %s" % names)
    check_shared(b, shared, (" on 2 hosts", " (on nodeB.cluster)"), names)


def host_namespace():
    """unshare's options for a process tree that sees a host of its own: its own host name (UTS namespace) and
    pids (pid namespace, with its /proc), as root, else inside a user namespace. Skips the case where neither
    is permitted."""
    unshare = shutil.which("unshare")
    tries = [[unshare, "--uts", "--pid", "--fork", "--mount-proc"]] if unshare and os.geteuid() == 0 else []
    tries += [[unshare, "--uts", "--pid", "--fork", "--mount-proc", "--map-root-user"]] if unshare else []
    for argv in tries:
        probe = subprocess.run(argv + ["hostname", "probe"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        if probe.returncode == 0:
            return argv
    raise h.CaseSkipped("unshare is missing, or not permitted to make UTS and pid namespaces here (it needs root "
                        "or user namespaces) to play several hosts")


@case("rank_hosts_one_dir")
def _(b):
    """Three hosts (each a UTS and pid namespace: its own host name, and pids that repeat across hosts) write
    the reports of two Slurm jobs into one directory, a `culprit run` per rank: no two files collide, the jobs
    are told apart by their job ids, not by host or directory, and each process keeps its host's facts (its
    host name, its pid there, NCCL's log of that host and pid)."""
    ns = host_namespace()
    shared = b.newdir("shared")
    # job 500: ranks 0, 1 on nodeA, 2, 3 on nodeB, rank 3 faults; job 501: rank 0 on nodeB, rank 1 on
    # nodeC.cluster, which faults. The first rank of each host runs alone, so its process has the same pid on
    # every host whatever the scheduler does (without that the pids repeat only by chance); the others then run
    # at once.
    hosts = {"nodeA": [("500", 0, 4, False), ("500", 1, 4, False)],
             "nodeB": [("500", 2, 4, False), ("500", 3, 4, True), ("501", 0, 2, False)],
             "nodeC.cluster": [("501", 1, 2, True)]}
    script = ('hostname "$0" || exit 9; env $1 "$CLI" run --dir "$DIR" -- "$PROG" 2; shift; '
              'for r in "$@"; do env $r "$CLI" run --dir "$DIR" -- "$PROG" 2 & done; wait')
    for host, ranks in hosts.items():
        per = []
        for job, rank, world, faults in ranks:
            per.append(" ".join(["SLURM_JOB_ID=" + job, "SLURM_STEP_ID=0", "SLURM_PROCID=%d" % rank,
                                 "SLURM_LOCALID=%d" % (rank % 2), "SLURM_NTASKS=%d" % world] +
                                (["FAKECUDA_FAULT=kernel=" + h.BAD] if faults else [])))
        res = run(b, ns + ["sh", "-c", script, host] + per,
                  env_of(b, {"CLI": b.cli, "DIR": shared, "PROG": b.prog("rankjob")}))
        check(res.rc == 0, "the ranks of %s\n%s" % (host, res.describe()))
        check(res.err_text.count("culprit: the kernel that faulted: write_oob(int*, int)") == sum(
            f for *_, f in ranks), "each faulting rank's culprit run shows its verdict\n" + res.describe())
    reps = reports(shared)
    check(len(reps) == 6, "six processes, six reports: %s" % sorted(reps))
    check_names(reps, "several hosts", own_host=True)
    check(sorted({rep["process"]["hostname"] for rep in reps.values()}) == sorted(hosts),
          "host names %r" % sorted({rep["process"]["hostname"] for rep in reps.values()}))
    seen = {}
    for name, rep in reps.items():
        proc = rep["process"]
        seen.setdefault(proc["pid"], set()).add(proc["hostname"])
    check(any(len(v) > 1 for v in seen.values()), "no pid repeats across hosts, so names were never at risk: %r" %
          seen)
    # NCCL's log of each faulting rank is its own host's, though another host has a process of the same pid
    for name, rep in reps.items():
        proc, log = rep["process"], rep.get("nccl_log")
        if rep.get("kind") == "fault":
            check(log and all(l.startswith("%s:%d:" % (proc["hostname"].split(".")[0], proc["pid"])) for l in log),
                  "%s: nccl_log %r is not its own host's" % (name, log))
        else:
            check(log is None, "%s saw no fault but carries NCCL's log %r" % (name, log))
    # one merged view per job, each naming its hosts
    res = run(b, [b.cli, "report", shared], env_of(b))
    check(res.rc == 0, "culprit report SHARED\n" + res.describe())
    lines = res.out_text.splitlines()
    views = [joined(lines, i, "    ") for i, l in enumerate(lines) if l.startswith("culprit: job of ")]
    want = ["job of 4 ranks (slurm) on 2 hosts: rank 3 (on nodeB) faulted first: write_oob(int*, int) launched at "
            "rankjob.c:%d; ranks 0-2 saw no fault" % loss_line(),
            "job of 2 ranks (slurm) on 2 hosts: rank 1 (on nodeC.cluster) faulted first: write_oob(int*, int) "
            "launched at rankjob.c:%d; rank 0 saw no fault" % loss_line()]
    check(sorted(views) == sorted(want), "the verdicts\n  %s\nexpected\n  %s" % ("\n  ".join(views),
                                                                              "\n  ".join(want)))
    res = run(b, [b.cli, "report", "--json", shared], env_of(b))
    check(res.rc == 0, "culprit report --json SHARED\n" + res.describe())
    jobs = json.loads(res.out_text)
    check(isinstance(jobs, list) and len(jobs) == 2, "two jobs expected: %s" % res.out_text[:1000])
    by_world = {j.get("world_size"): j for j in jobs}
    check(sorted(by_world) == [2, 4], "world sizes %r" % sorted(by_world))
    for world, hosts_want, first in ((4, ["nodeA", "nodeB"], (3, "nodeB")), (2, ["nodeB", "nodeC.cluster"],
                                                                           (1, "nodeC.cluster"))):
        job = by_world[world]
        check(sorted(job.get("hosts", [])) == hosts_want, "job of %d: hosts %r" % (world, job.get("hosts")))
        ff = job.get("first_fault") or {}
        check((ff.get("rank"), ff.get("host")) == first, "job of %d: first_fault %r" % (world, ff))
        for p in job["processes"]:
            check(len(p["reports"]) == 1, "job of %d: %r" % (world, p))
            rep = reps[os.path.basename(p["reports"][0])]
            check((p["host"], p["pid"], p["rank"]) == (rep["process"]["hostname"], rep["process"]["pid"],
                                                       rep["process"]["rank"]),
                  "job of %d: the entry %r is not its report's host, pid and rank" % (world, p))


@case("rank_report_progress")
def _(b):
    """`culprit report DIR` says how far it got on stderr once it passes a second (here an addr2line that takes
    1.5 s makes it), and nothing when it is quick; either way its stdout is the same merged view."""
    rdir = b.newdir("reports")
    env = env_of(b)
    for rank in range(3):
        e = dict(env, RANK=str(rank), LOCAL_RANK=str(rank), WORLD_SIZE="3", TORCHELASTIC_RUN_ID="slow")
        if rank == 1:
            e["FAKECUDA_FAULT"] = "kernel=%s" % h.BAD
        r = h.preloaded(b, [b.prog("rankjob"), "1"], e, rdir)
        check(r.rc == (1 if rank == 1 else 0), "rank %d\n%s" % (rank, r.describe()))
    slow = os.path.join(b.newdir("bin"), "addr2line")
    with open(slow, "w") as f:
        f.write("#!/bin/sh\nsleep 1.5\nexec addr2line \"$@\"\n")
    os.chmod(slow, 0o755)
    copy = b.newdir("copy")
    for name in os.listdir(rdir):
        shutil.copy(os.path.join(rdir, name), copy)
    quick = run(b, [b.cli, "report", rdir], env)
    late = run(b, [b.cli, "report", copy], dict(env, CULPRIT_ADDR2LINE=slow))
    for res in (quick, late):
        check(res.rc == 0 and verdict_line(res.out_text).startswith("job of 3 ranks (torchrun): rank 1 faulted "
                                                                    "first: write_oob(int*, int)"),
              "culprit report DIR\n" + res.describe())
    check(quick.out_text.replace(rdir, copy) == late.out_text, "the merged view differs\n--- quick\n%s--- late\n%s" % (
        quick.out_text, late.out_text))
    check(not quick.err_text, "a quick run says nothing on stderr\n" + quick.describe())
    lines = late.err_text.splitlines()
    check(len(lines) >= 2 and re.match(r"culprit: (symbolizing|writing|merging) .*\(\d+\.\d s\)$", lines[0]) and
          re.match(r"culprit: 3 reports read and shown in \d+\.\d s$", lines[-1]),
          "a run past a second says how far it got\n" + late.describe())


@case("rank_nccl_user_debug")
def _(b):
    """With NCCL_DEBUG set by the user, culprit leaves NCCL's variables alone: NCCL prints where the user asked
    (here stdout, byte for byte as without culprit) and the report keeps no log."""
    env = env_of(b, {"RANK": "0", "WORLD_SIZE": "1", "NCCL_DEBUG": "WARN", "FAKECUDA_FAULT": "kernel=%s" % h.BAD})
    argv = [b.prog("rankjob"), "1"]
    base = h.plain(b, argv, env)
    check(b"NCCL WARN Cuda failure" in base.out, "scenario broken\n" + base.describe())
    rdir = b.newdir("reports")
    res = h.cli_run(b, argv, env, rdir)
    pids = re.compile(rb":\d+:\d+ \[0\]")  # NCCL's line prefix: host:pid:tid [device]
    check(res.rc == base.rc and pids.sub(b"", res.out) == pids.sub(b"", base.out),
          "NCCL's lines on stdout differ under culprit run\n--- without\n%s--- with\n%s" % (base.out_text,
                                                                                         res.out_text))
    reps = reports(rdir)
    check(len(reps) == 1 and "nccl_log" not in list(reps.values())[0], "no nccl_log expected: %r" % sorted(reps))
    check(not [f for f in os.listdir(rdir) if f.startswith("nccl-")], "culprit made NCCL log files: %r" %
          os.listdir(rdir))
    # a run in a directory of its own removes the empty logs NCCL leaves for processes that had nothing to say
    cwd = b.newdir("cwd")
    env = env_of(b, {"RANK": "0", "WORLD_SIZE": "1"})
    res = h._execute(b, [b.cli, "run", "--", sys.executable, "-c",
                         "import os; f = os.environ['NCCL_DEBUG_FILE'].replace('%h', 'h').replace('%p', '1'); "
                         "open(f, 'w').close(); print(os.environ['NCCL_DEBUG'])"], env, cwd)
    check(res.rc == 0 and res.out_text == "WARN\n", "culprit run should set NCCL_DEBUG=WARN\n" + res.describe())
    check(not os.path.exists(os.path.join(cwd, "culprit-reports")) or
          not any(f.startswith("nccl-") for _, _, fs in os.walk(os.path.join(cwd, "culprit-reports")) for f in fs),
          "an empty NCCL log was left behind")


if __name__ == "__main__":
    sys.exit(h.main())
