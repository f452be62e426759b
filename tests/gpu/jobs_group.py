"""The jobs group of the GPU suite: scripts in tests/gpu/frameworks run by torchrun with several ranks, once
without culprit and once as `culprit run -- torchrun --standalone --nproc-per-node N script`, or as two torchrun
"nodes" on this machine (c10d rendezvous on localhost), each under a `culprit run` of its own sharing one
report directory, as on two hosts; each rank's report is judged by its JSON fields and culprit's merged job view
by a few stable phrases. check.py runs these cases and adds them to its table; its helpers (runs, outcomes, the
frameworks group's frame checks) are reached as `h`, which check.py binds when it is loaded.
"""

import json
import os
import re
import shutil
import socket
import threading
import time

class _Check:
    """check.py's names, read live from its globals (check.py may be loaded under any module name)."""

    def __init__(self, names):
        self.__dict__["_names"] = names

    def __getattr__(self, name):
        try:
            return self._names[name]
        except KeyError:
            raise AttributeError("check.py has no %r" % name) from None


h = None  # check.py's names, bound by check.py (bind)


def bind(check_globals):
    global h
    h = _Check(check_globals)


# ---------------------------------------------------------------------------------------------------------------
# The jobs group: scripts in tests/gpu/frameworks run by torchrun, once without culprit and once as
# `culprit run -- torchrun --standalone --nproc-per-node N script`. Each rank's report is judged by its JSON
# fields (rank, kind, the faulting rank's culprit), and culprit's merged job view by a few stable phrases.

JOB_FAULT = re.compile(r"faulted first")  # how the merged view's verdict line names the first faulting rank
NCCL_KERNEL = re.compile(r"\bnccl(?:Dev)?Kernel_([A-Za-z]+)")  # NCCL kernels and their collective
# launcher variables of an enclosing job (a Slurm allocation, an MPI run) that the job cases must not inherit
LAUNCHER_ENV = re.compile(r"^(RANK|LOCAL_RANK|WORLD_SIZE|LOCAL_WORLD_SIZE|GROUP_RANK|MASTER_ADDR|MASTER_PORT|"
                          r"TORCHELASTIC_\w+|SLURM_\w+|OMPI_\w+|PMI_\w+|PMIX_\w+|MPI_LOCALRANKID)$")


class JobCase:
    """One script run by torchrun with N ranks under `culprit run`, and what must come out of it."""

    group = "jobs"
    kind = "job"
    healthy = False
    coredump = False  # no --coredump run

    def __init__(self, name, script, nproc, fault_rank, kernel, codes=(710,), modules=("torch",), timeout=150,
                 nccl=False, env=None, note="", nnodes=1, stuck=None):
        self.name = name            # case name in the table
        self.script = script        # file in tests/gpu/frameworks
        self.src = script           # where the markers are
        self.nproc = nproc          # torchrun --nproc-per-node
        self.nnodes = nnodes        # torchrun processes ("nodes"), each under a culprit run of its own
        self.world = nproc * nnodes  # ranks in the job
        self.fault_rank = fault_rank  # the rank whose kernel faults
        self.kernel = kernel        # regular expression the faulting rank's culprit kernel must match
        self.codes = tuple(codes)   # accepted error.code values of the faulting rank
        self.modules = tuple(modules)  # modules the script needs; missing means skipped
        self.timeout = timeout      # limit of one run in seconds (the suite's --timeout when that is larger)
        self.nccl = nccl            # NCCL backend: NCCL kernels among the listed launches must read as collectives
        self.env = dict(env or {})  # extra environment, with and without culprit
        self.note = note            # what the case is about
        self.graph = False          # py_launch_problems reads it: a graph launch is no culprit here
        self.stuck = stuck          # a hang job: the rank stuck in a kernel of its own (fault_rank unused), which
                                    # the device must name; the job is stopped by SIGTERM once it printed "stuck:"


JOB_CASES = [
    # gloo on the loopback interface: every rank is on this host, and the host name need not resolve
    JobCase("ddp_gloo", "ddp_gloo_fault.py", 3, 1, r"nll_loss", env={"GLOO_SOCKET_IFNAME": "lo"},
            note="torchrun, 3 DDP ranks on one GPU (gloo): rank 1's label past the classes, the others wait in "
                 "the all_reduce; every rank's report, one merged verdict naming rank 1"),
    JobCase("nccl_one_rank", "nccl_one_rank_fault.py", 1, 0, r"indexSelect|vectorized_gather|index", nccl=True,
            note="torchrun, one NCCL rank: index_select past the end between two all_reduce calls"),
    # two torchrun "nodes" of two gloo ranks each; which node gets ranks 2 and 3 is the rendezvous' choice
    JobCase("ddp_gloo_2nodes", "ddp_gloo_fault.py", 2, 2, r"nll_loss", nnodes=2,
            env={"GLOO_SOCKET_IFNAME": "lo", "DDP_BAD_RANK": "2"},
            note="torchrun --nnodes 2 (c10d rendezvous on localhost), 2 gloo ranks per node on one GPU, a culprit "
                 "run per node sharing --dir: rank 2's label past the classes; culprit report DIR merges the "
                 "nodes' reports into one job naming rank 2"),
]
JOB_CASES.append(
    JobCase("gloo_stuck_kernel", "ddp_gloo_stuck.py", 2, -1, r"spin_kernel", stuck=0,
            env={"GLOO_SOCKET_IFNAME": "lo"},
            note="torchrun, 2 gloo ranks on one GPU: rank 0 spins in a kernel of its own (torch.cuda._sleep), rank 1 "
                 "waits for it in the all_reduce; stopped by SIGTERM, culprit run asks the device of each rank's "
                 "hang report, and the merged view names rank 0 and its kernel first"))
JOB_CASE_BY_NAME = {c.name: c for c in JOB_CASES}
STUCK_READY = b"stuck:"  # what a hang job prints once a rank is about to wait (the suite then stops it)


# ---------------------------------------------------------------------------------------------------------------
# Judging the jobs group


def job_skip_reason(run):
    """Why a job did not run here: a rank skipped itself ("skipped: ..." on stderr, status 77, which torchrun
    turns into its own failure), or a module is missing."""
    for line in run.stderr.splitlines():
        if "skipped: " in line:
            return line[line.index("skipped: "):].strip()
    for line in run.stderr.splitlines():
        if "ModuleNotFoundError:" in line or "No module named" in line:
            return line.strip()
    return None


def rank_problems(path, report, case):
    """The launcher fields every report of a torchrun job carries, and its file name."""
    proc = report.get("process") or {}
    problems = h.name_problems(path, report)
    if not h.is_count(proc.get("rank")):
        return problems + ["%s: process.rank is %r" % (os.path.basename(path), proc.get("rank"))]
    who = "rank %d" % proc["rank"]
    if proc.get("launcher") != "torchrun":
        problems.append("%s: process.launcher %r, expected 'torchrun'" % (who, proc.get("launcher")))
    if proc.get("world_size") != case.world:
        problems.append("%s: process.world_size %r, expected %d" % (who, proc.get("world_size"), case.world))
    if proc.get("local_rank") != proc["rank"] % case.nproc:  # torchrun numbers the ranks node by node
        problems.append("%s: process.local_rank %r, expected %d" % (who, proc.get("local_rank"),
                                                                   proc["rank"] % case.nproc))
    if not h.is_count(proc.get("time_unix_ns")):
        problems.append("%s: process.time_unix_ns is %r, not a count" % (who, proc.get("time_unix_ns")))
    return problems


RANK_LINE = re.compile(r"^culprit:\s+rank \d+\b")  # a line of the merged view about one rank


def culprit_paragraphs(stderr):
    """culprit's lines on stderr joined into paragraphs: the text is wrapped, and a wrapped line goes on indented.
    A paragraph starts at an unindented line ("culprit: ..."), at a line about one rank, or after a blank one."""
    paragraphs = []
    for line in stderr.splitlines():
        if not line.startswith("culprit:"):
            continue
        body = line[len("culprit:"):]
        if not body.strip():
            paragraphs.append("")
        elif not body.startswith("  ") or RANK_LINE.match(line) or not paragraphs or not paragraphs[-1]:
            paragraphs.append(body.strip())  # "culprit: text" starts one; wrapped lines are indented further
        else:
            paragraphs[-1] += " " + body.strip()
    return [p for p in paragraphs if p]


def merged_view_problems(stderr, case, want_line, others, stopped=()):
    """culprit's merged job view at the end of the run: a paragraph naming the faulting rank as "faulted
    first" with its kernel and the marked script line, one about every other rank, and the word "collateral"
    when a rank left a hang report (stopped). Its wording is judged only by these phrases."""
    paragraphs = culprit_paragraphs(stderr)
    rank_re = re.compile(r"\brank %d\b" % case.fault_rank)
    first = [i for i, p in enumerate(paragraphs) if JOB_FAULT.search(p) and rank_re.search(p)]
    if not first:
        return ["merged view: no line says rank %d faulted first" % case.fault_rank]
    problems = []
    verdict = paragraphs[first[0]]
    if not re.search(case.kernel, verdict):
        problems.append("merged view: the faulted-first line does not name a kernel like %r: %r" % (
            case.kernel, h.shorten(verdict, 200)))
    if "%s:%d" % (case.script, want_line) not in verdict:
        problems.append("merged view: the faulted-first line does not say %s:%d: %r" % (
            case.script, want_line, h.shorten(verdict, 200)))
    rest = "\n".join(paragraphs[first[0]:])
    for r in others:
        if not re.search(r"\brank %d\b" % r, rest):
            problems.append("merged view: no line for rank %d" % r)
    if stopped and "collateral" not in rest:
        problems.append("merged view: rank %s left a hang report but no rank is called collateral" % (
            ", ".join(map(str, stopped))))
    return problems


def nccl_problems(out, report, stderr):
    """NCCL kernels among the launches a fault report lists (history, candidates) must read as collectives in
    culprit's text ("NCCL AllReduce ..."); a one-rank collective may launch none, which is only noted."""
    listed = [l for key in ("culprit", "history", "candidates", "candidates_before_assert")
              for l in ([report.get(key)] if key == "culprit" else report.get(key) or []) if isinstance(l, dict)]
    nccl = [(h.kernel_of(l), NCCL_KERNEL.search(h.kernel_of(l))) for l in listed]
    nccl = [(name, m.group(1)) for name, m in nccl if m]
    streams = [st for st in report.get("streams") or [] if isinstance(st, dict)]
    out.notes.append("NCCL kernels among the listed launches: %d; streams in the report: %d" % (
        len(nccl), len(streams)))
    for name, collective in nccl:
        if "NCCL %s" % collective not in stderr:
            out.fail("NCCL kernel %s is not shown as the collective NCCL %s" % (h.shorten(name, 60), collective))


def judge_job(case, want_line, base, run, job_json, merged=None):
    """Judges a torchrun job from its run without culprit (base), under `culprit run` (run) and the output of
    `culprit report --json DIR` (job_json, text): the faulting rank's fault report names its kernel and launch
    line, every other rank left one hang report or exit record, every report carries the launcher's fields, and
    culprit's merged view names the faulting rank. The merged view is read from merged (the text of `culprit
    report DIR`: the nodes' culprit runs each saw their own ranks only), else from the run's stderr."""
    out = h.Outcome(case, "python")
    reason = job_skip_reason(base)
    if reason:
        out.skip(reason)
        return out
    if base.timed_out:
        out.fail("timed out without culprit")
        return out
    if base.rc == 0:
        out.fail("the job did not fail without culprit")
    h.py_check_process(out, base, run, "under culprit")
    for r, what in ((base, "without culprit"), (run, "under culprit")):
        if r.stop_note:
            out.notes.append("%s: %s" % (what, r.stop_note))
    faults, others = [], {}
    for path, report in run.reports:
        if not isinstance(report, dict):
            out.fail("report %s unreadable: %s" % (os.path.basename(path), report))
            continue
        if report.get("schema") != h.SCHEMA:
            out.fail("%s: schema %r" % (os.path.basename(path), report.get("schema")))
        for p in rank_problems(path, report, case):
            out.fail(p)
        rank = (report.get("process") or {}).get("rank")
        kind = h.report_kind(report)
        if kind == "fault":
            faults.append((rank, path, report))
        elif kind in ("hang", "exit"):
            others.setdefault(rank, []).append(report)
        else:
            out.fail("rank %s: report kind %r" % (rank, kind))
    if not run.reports and h.NO_STICKY in run.stderr:
        out.fail("culprit said %r" % h.NO_STICKY)
    mine = [f for f in faults if f[0] == case.fault_rank]
    for rank, path, _ in faults:
        if rank != case.fault_rank:
            out.fail("rank %s wrote a fault report too: %s" % (rank, os.path.basename(path)))
    if len(mine) != 1:
        out.fail("%d fault reports from rank %d, expected one" % (len(mine), case.fault_rank))
    other_ranks = [r for r in range(case.world) if r != case.fault_rank]
    for r in other_ranks:
        # a rank stopped by torchrun's SIGTERM after its exit record was written may leave both
        got = others.get(r, [])
        kinds = [h.report_kind(x) for x in got]
        if not got:
            out.fail("rank %d: no report, expected a hang report or an exit record" % r)
        elif len(set(kinds)) != len(kinds):
            out.fail("rank %d: %d reports of kind %s" % (r, len(kinds), "/".join(kinds)))
        for report in got:
            if h.report_kind(report) == "hang":
                hang = report.get("hang") or {}
                if not re.match(r"^(SIG[A-Z0-9]+|timeout)$", str(hang.get("trigger"))):
                    out.fail("rank %d: hang.trigger %r" % (r, hang.get("trigger")))
                out.notes.append("rank %d: hang report (%s)" % (r, hang.get("trigger")))
            else:
                out.notes.append("rank %d: exit record (status %s)" % (r, (report.get("exit") or {}).get("status")))
    for r in sorted(set(others) - set(other_ranks), key=str):
        out.fail("rank %s: unexpected %s report" % (r, h.report_kind(others[r][0])))
    if mine:
        judge_job_fault(out, case, want_line, mine[0][2])
        if case.nccl:
            nccl_problems(out, mine[0][2], run.stderr)
    if faults:
        stopped = [r for r in other_ranks if any(h.report_kind(x) == "hang" for x in others.get(r, []))]
        for p in merged_view_problems(run.stderr if merged is None else merged, case, want_line, other_ranks,
                                      stopped):
            out.fail(p)
    try:
        job = json.loads(job_json)
    except ValueError as e:
        out.fail("culprit report --json DIR: not JSON (%s)" % e)
    else:
        if not isinstance(job, dict) or job.get("schema") != "culprit.job/1":
            out.fail("culprit report --json DIR: schema %r, expected 'culprit.job/1'" % (
                job.get("schema") if isinstance(job, dict) else type(job).__name__))
        elif isinstance(job.get("first_fault"), dict) and job["first_fault"].get("rank") != case.fault_rank:
            out.fail("culprit report --json DIR: first_fault.rank %r, expected %d" % (
                job["first_fault"].get("rank"), case.fault_rank))
        elif case.nnodes > 1:
            # the nodes' reports are one job: every rank has an entry, none missing
            procs = [p for p in job.get("processes") or [] if isinstance(p, dict)]
            seen = sorted(p["rank"] for p in procs if isinstance(p.get("rank"), int) and p.get("status") != "missing")
            if seen != list(range(case.world)):
                out.fail("culprit report --json DIR: ranks %s in the job, expected 0..%d from both nodes" % (
                    seen, case.world - 1))
    return out


def judge_job_fault(out, case, want_line, report):
    """The faulting rank's fault report: its error, and the culprit (exact: the device assert names the kernel)."""
    error = report.get("error") or {}
    out.surfaced = "%s (%s)" % (error.get("api") or "?", error.get("code"))
    if error.get("code") not in case.codes:
        out.fail("error.code %r, expected %s" % (error.get("code"), "/".join(map(str, case.codes))))
    if not h.is_count(error.get("time_unix_ns")):
        out.fail("error.time_unix_ns is %r, not a count" % (error.get("time_unix_ns"),))
    verdict = report.get("verdict") or {}
    out.certainty = str(verdict.get("certainty"))
    culprit = report.get("culprit")
    if verdict.get("certainty") != "exact":
        out.fail("rank %d: verdict certainty %r, expected exact (the device assert names the kernel)" % (
            case.fault_rank, verdict.get("certainty")))
        return
    out.named = str((culprit or {}).get("kernel", "-"))
    out.line = h.python_where((culprit or {}).get("python"), case.script, want_line)
    out.seq = (culprit or {}).get("seq")
    for p in h.py_launch_problems(culprit, case, want_line, report.get("python_status"), report.get("python_threads")):
        out.fail("rank %d culprit: %s" % (case.fault_rank, p))
    out.path = "exact"


def torchrun_cmd(python):
    """The torchrun of python's installation (the script beside the interpreter), else `python -m
    torch.distributed.run`, which is what that script runs."""
    beside = os.path.join(os.path.dirname(shutil.which(python) or python), "torchrun")
    if os.access(beside, os.X_OK):
        return [beside]
    return [python, "-m", "torch.distributed.run"]


def job_env(extra):
    """clean_env without the variables of a launcher around the suite (Slurm, MPI, torchrun): the job's ranks
    must be torchrun's own."""
    return {k: v for k, v in h.clean_env(extra).items() if not LAUNCHER_ENV.match(k)}


def jobs_suite(args, cases, culprit, logs, deadline, done, total):
    """Runs the torchrun cases (each once without culprit and once under it) and judges them."""
    outcomes = []
    for case in cases:
        print("[%2d/%d] %-20s %-6s ..." % (done + len(outcomes) + 1, total, case.name, "python"), end=" ",
              flush=True)
        o = run_job_case(args, case, culprit, logs, deadline)
        outcomes.append(o)
        if o.status == "pass":
            print("pass" + (" (%s)" % o.path if o.path else ""))
        else:
            print({"skip": "skip"}.get(o.status, "FAIL"))
    return outcomes


def run_job_case(args, case, culprit, logs, deadline):
    """One torchrun case: skip checks, the run without culprit, the run under it, `culprit report --json` of
    its report directory, and the judgement."""
    o = h.Outcome(case, "python")
    if h.not_runnable(o, args, args.python, case.modules + ("torch.distributed.run",), deadline):
        return o
    script = os.path.join(h.FRAMEWORKS, case.script)
    try:
        with open(script, encoding="utf-8") as f:
            want, _ = h.py_markers(f.read(), case.script)
    except (OSError, ValueError) as e:
        o.fail(str(e))
        return o
    env = job_env(case.env)
    work = h.fresh_dir(os.path.join(logs, "work", case.name))
    limit = max(args.timeout, case.timeout)
    if case.nnodes > 1:
        return run_nodes_case(args, case, culprit, logs, script, want, env, work, limit)
    cmd = torchrun_cmd(args.python) + ["--standalone", "--nproc-per-node", str(case.nproc), script]
    if case.stuck is not None:
        return run_stuck_case(args, case, culprit, logs, cmd, want, env, work, limit)
    base = h.execute(cmd, env, limit, cwd=work)
    h.save_logs(logs, case.name + ".plain", base)
    report_dir = h.fresh_dir(os.path.join(logs, "reports", case.name))
    mode = ["--mode", args.mode] if args.mode else []
    run = h.execute([culprit, "run", "--dir", report_dir] + mode + ["--"] + cmd, env, limit, report_dir, cwd=work)
    h.save_logs(logs, case.name + ".culprit", run)
    shown = h.execute([culprit, "report", "--json", report_dir], os.environ.copy(), 60)
    h.save_logs(logs, case.name + ".job", shown)
    return judge_job(case, want, base, run, shown.stdout.decode("utf-8", "replace"))


def run_stuck_case(args, case, culprit, logs, cmd, want, env, work, limit):
    """A hang job: stopped by SIGTERM (to torchrun, or to culprit run, which forwards it) once a rank printed that
    it waits, without culprit and under it; then judged."""
    stop = h.Stop(STUCK_READY, grace=60.0)  # each rank's report waits for the device's answer before it dies
    base = h.execute(cmd, env, limit, cwd=work, stop=stop)
    h.save_logs(logs, case.name + ".plain", base)
    report_dir = h.fresh_dir(os.path.join(logs, "reports", case.name))
    mode = ["--mode", args.mode] if args.mode else []
    run = h.execute([culprit, "run", "--dir", report_dir] + mode + ["--"] + cmd, env, limit, report_dir, cwd=work,
                    stop=stop)
    h.save_logs(logs, case.name + ".culprit", run)
    shown = h.execute([culprit, "report", "--json", report_dir], os.environ.copy(), 60)
    h.save_logs(logs, case.name + ".job", shown)
    return judge_stuck(case, want, base, run, shown.stdout.decode("utf-8", "replace"))


def judge_stuck(case, want_line, base, run, job_json):
    """A hang job: every rank left a hang report; the stuck rank's spinning launch is named exactly, by the device
    (cuda-gdb attached to the live rank, "by": "the device") or by its breadcrumbs (a young stream's launches are
    each marked), and the device was asked of every rank whose report it could still settle; the merged view says
    first that the stuck rank runs that kernel, and the job JSON marks it stuck_in_kernel."""
    out = h.Outcome(case, "python")
    reason = job_skip_reason(base)
    if reason:
        out.skip(reason)
        return out
    if base.stopped is None:
        out.fail("without culprit: the job ended by itself (status %s) before it was stopped" % base.rc)
    if run.stopped is None:
        out.fail("under culprit: the job ended by itself (status %s) before it was stopped" % run.rc)
    hangs = {}
    for path, report in run.reports:
        if not isinstance(report, dict):
            out.fail("report %s unreadable: %s" % (os.path.basename(path), report))
            continue
        for p in rank_problems(path, report, case):
            out.fail(p)
        rank = (report.get("process") or {}).get("rank")
        if h.report_kind(report) == "hang":
            hangs[rank] = report
        else:
            out.fail("rank %s: a %s report" % (rank, h.report_kind(report)))
    if sorted(hangs, key=str) != list(range(case.world)):
        out.fail("hang reports of ranks %s, expected 0..%d" % (sorted(hangs, key=str), case.world - 1))
    for r, report in sorted(hangs.items(), key=lambda x: str(x[0])):
        dq = report.get("device_query") if isinstance(report.get("device_query"), dict) else {}
        out.notes.append("rank %s: the device was asked: %s in %s ms (%s)" % (
            r, dq.get("status"), dq.get("ms"), "; ".join(h.shorten(str(k.get("invocation")), 60)
                                                      for k in dq.get("kernels") or [] if isinstance(k, dict))))
        unsettled = (report.get("verdict") or {}).get("certainty") != "exact" and report.get("candidates")
        if unsettled and dq.get("status") != "answered":
            out.fail("rank %s: device_query status %r (%s)" % (r, dq.get("status"), dq.get("why")))
    stuck = hangs.get(case.stuck) or {}
    culprit = stuck.get("culprit") if isinstance(stuck.get("culprit"), dict) else {}
    verdict = stuck.get("verdict") or {}
    out.certainty = str(verdict.get("certainty"))
    out.named = str(culprit.get("kernel", "-"))
    if verdict.get("certainty") != "exact":
        out.fail("rank %d: the launch in flight was not named exactly (verdict %s: %s)" % (
            case.stuck, verdict.get("certainty"), h.shorten(str(verdict.get("reason")), 200)))
    if not re.search(case.kernel, str(culprit.get("kernel"))):
        out.fail("rank %d: the launch in flight is %r, expected a kernel like %r" % (
            case.stuck, culprit.get("kernel"), case.kernel))
    for p in h.python_problems(culprit.get("python"), case.script, want_line, "rank %d's launch" % case.stuck):
        out.fail(p)
    text = " ".join(culprit_paragraphs(run.stderr))
    if not re.search(r"rank %d runs [^;]*%s[^;]*\((the device says|its breadcrumbs say) so\): look there first" % (
            case.stuck, case.kernel), text):
        out.fail("merged view: no line says rank %d runs %s (the device or its breadcrumbs say so): %r" % (
            case.stuck, case.kernel, h.shorten(text, 300)))
    try:
        job = json.loads(job_json)
    except ValueError as e:
        out.fail("culprit report --json DIR: not JSON (%s)" % e)
    else:
        marked = [p.get("rank") for p in (job.get("processes") or []) if isinstance(p, dict)
                  and p.get("stuck_in_kernel")] if isinstance(job, dict) else None
        if marked != [case.stuck]:
            out.fail("culprit report --json DIR: stuck_in_kernel on ranks %r, expected [%d]" % (marked, case.stuck))
    out.path = culprit.get("by") or "breadcrumbs"
    return out


# ---------------------------------------------------------------------------------------------------------------
# Several torchrun "nodes" on this machine


NODE_STAGGER_S = 1.0  # node 0 (the rendezvous store's host) starts this long before the others


def free_port():
    """A TCP port on the loopback interface that nothing listens on now."""
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]
    finally:
        s.close()


def node_cmds(case, python, script, port, rdzv_id):
    """One torchrun command per node: --nnodes N --node-rank K, the c10d rendezvous on localhost:port (node 0
    hosts its store: is_host says so, as two agents on one machine would both take themselves for its host),
    and the workers' master address on the loopback interface."""
    return [torchrun_cmd(python) + [
        "--nnodes", str(case.nnodes), "--node-rank", str(k), "--nproc-per-node", str(case.nproc),
        "--rdzv-backend", "c10d", "--rdzv-endpoint", "localhost:%d" % port, "--rdzv-id", rdzv_id,
        "--rdzv-conf", "is_host=%d" % (k == 0), "--local-addr", "127.0.0.1", script] for k in range(case.nnodes)]


def run_nodes(cmds, env, limit, cwd, report_dir=None):
    """Runs the nodes' commands at once (each h.execute in a thread of its own, node 0 first) and returns their
    Runs in node order."""
    runs = [None] * len(cmds)

    def one(k):
        runs[k] = h.execute(cmds[k], env, limit, report_dir, cwd=cwd)

    threads = []
    for k in range(len(cmds)):
        if k:
            time.sleep(NODE_STAGGER_S)  # and h.execute has taken its run token before the next one starts
        t = threading.Thread(target=one, args=(k,))
        t.start()
        threads.append(t)
    for t in threads:
        t.join()
    return runs


def nodes_as_one(runs, report_dir=None):
    """The nodes' Runs as one for the judge: failed when any node failed (the node of the faulting rank exits 1;
    the other fails as its workers lose their peers), their output one after the other, the shared directory's
    reports."""
    one = h.Run(rc=1 if any(r.rc != 0 for r in runs) else 0, stdout=b"".join(r.stdout for r in runs),
                stderr="".join(r.stderr for r in runs), timed_out=any(r.timed_out for r in runs),
                reports=h.report_files(report_dir) if report_dir else [],
                argv=[" ".join(r.argv) for r in runs])
    one.stop_note = "; ".join("node %d: %s" % (k, r.stop_note) for k, r in enumerate(runs) if r.stop_note)
    return one


def run_nodes_case(args, case, culprit, logs, script, want, env, work, limit):
    """A job of several torchrun nodes: all of them without culprit, then each under a `culprit run` of its own
    with the same --dir (a fresh rendezvous id and port each time), then `culprit report` of that directory,
    text and JSON, which must merge the nodes' reports into one job."""
    stem = "%s.%d" % (case.name, os.getpid())
    plain = run_nodes(node_cmds(case, args.python, script, free_port(), stem + ".plain"), env, limit, work)
    for k, r in enumerate(plain):
        h.save_logs(logs, "%s.plain.node%d" % (case.name, k), r)
    report_dir = h.fresh_dir(os.path.join(logs, "reports", case.name))
    mode = ["--mode", args.mode] if args.mode else []
    cmds = [[culprit, "run", "--dir", report_dir] + mode + ["--"] + c
            for c in node_cmds(case, args.python, script, free_port(), stem + ".culprit")]
    nodes = run_nodes(cmds, env, limit, work, report_dir)
    for k, r in enumerate(nodes):
        h.save_logs(logs, "%s.culprit.node%d" % (case.name, k), r)
    text = h.execute([culprit, "report", report_dir], os.environ.copy(), 60)
    h.save_logs(logs, case.name + ".merged", text)
    shown = h.execute([culprit, "report", "--json", report_dir], os.environ.copy(), 60)
    h.save_logs(logs, case.name + ".job", shown)
    return judge_job(case, want, nodes_as_one(plain), nodes_as_one(nodes, report_dir),
                     shown.stdout.decode("utf-8", "replace"), merged=text.stdout.decode("utf-8", "replace"))
