#!/usr/bin/env python3
"""Runs culprit's GPU test programs and checks what culprit reports about them.

`check.py suite --build DIR --logs DIR` runs every case (built against the static and the shared CUDA runtime)
once without culprit and once under `culprit run`, judges each report against what the program is known to do,
and prints one table and a closing `N passed, N failed` line. tests/gpu/run.sh calls it after building.
The C programs (their cases in c_cases.py) come in two groups: c (faults, and one program that exits 0 without
synchronizing) and hangs (a kernel that spins until the harness stops the program with SIGTERM; its hang report is
judged). Then comes the
frameworks group (frameworks_group.py): the Python scripts in tests/gpu/frameworks (torch, Triton, CuPy, JAX,
Lightning, torch.profiler, compute-sanitizer, transformers), whose reports are judged by their `python` frames; and the
jobs group (jobs_group.py): scripts run by torchrun with several ranks, judged by every rank's report and
culprit's merged view; and the diagnose group (diagnose_group.py): PyTorch faults under `culprit run --diagnose`. A case whose
module the interpreter lacks is skipped. Select groups or cases with --only (c, hangs, frameworks, jobs,
diagnose). With --coredump, every faulty C case and two PyTorch cases run once more as `culprit run
--coredump` (the driver's GPU core dump, read by cuda-gdb after the process died): that report must name the
faulting kernel (for a C case also the line marked `// CULPRIT-FAULT`), and the table says which cases were
exact in one run without the dump and with it; for an illegal or misaligned address, the faulting lane the dump
gave is compared with compute-sanitizer's memcheck on the same program (sanitizer_agreement.py). Running a
program (its process group, timeout, the stop of a hang case, what it left behind) is runner.py's.
`check.py --selftest` runs check_selftest.py: the judges against the reports in tests/gpu/fixtures/ (no GPU
needed).

Standard library only; Python 3.8 or later.
"""

import argparse
import copy
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURES = os.path.join(HERE, "fixtures")
MARKER = "// CULPRIT-LAUNCH"
CAPTURE_MARKER = "// CULPRIT-CAPTURE"  # graph cases: the line where the faulting node was captured
SKIP_STATUS = 77  # what a test program returns where there is no CUDA device
SCHEMA = "culprit.report/1"
# The line a test program prints when a runtime or driver call fails: "...: CUDA error at <call> (...): <message>"
PROGRAM_ERROR = re.compile(r"CUDA error at .*\): (?P<message>.+?)\s*$")

from c_cases import CASE_BY_NAME, CASES, STICKY, Case  # noqa: E402,F401 - the C groups' cases (c_cases.py)

CUDARTS = ("static", "shared")
WAIT_MARKER = "// CULPRIT-WAIT"  # hang cases: the line where the host waits for the spinning kernel
SPIN_READY = b"spinning:"  # what a hang case prints once its kernel spins (the harness then stops it: runner.py)

# Running the programs (runner.py): the suite, its groups and its self-test use these names from here.
from runner import (  # noqa: E402,F401
    COREDUMP_ENV, HANG_BOUND_S, HANG_GRACE_S, HANG_HOLD_S, RUN_TOKEN, Run, Stop, clean_env, descendants, execute,
    fresh_dir, kill_tree, report_files, save_logs, sweep)

# ---------------------------------------------------------------------------------------------------------------
# The frameworks group (Python scripts in tests/gpu/frameworks, frameworks_group.py), the jobs group (torchrun
# jobs, jobs_group.py) and the diagnose group (PyTorch faults under `culprit run --diagnose`, diagnose_group.py)
# live in files of their own.
import sanitizer_agreement  # noqa: E402
from sanitizer_agreement import (  # noqa: E402,F401 - the suite and its self-test use these names
    sanitizer_accesses, address_agreement, judge_address, judge_fault_page, run_sanitizer_case)
import frameworks_group  # noqa: E402
from frameworks_group import (  # noqa: E402,F401 - the suite, its self-test and the jobs group use these names
    FRAMEWORKS, PY_LAUNCH, PY_SURFACE, PY_LINE, LIBRARY_KERNEL, EXCEPTION_LINE, CUDA_EXCEPTION, NO_STICKY,
    EXITED_ZERO, PyCase, PY_CASES, PY_CASE_BY_NAME, py_markers, python_problems, python_where,
    py_launch_problems, graph_note, exception_line, py_skip_reason, py_check_process, check_library_history,
    judge_py, surfaced_note, judge_py_again, judge_py_rerun, SANITIZER_WRITE, SANITIZER_SUMMARY,
    SANITIZER_UNSUPPORTED, judge_sanitizer, judge_py_coredump, find_sanitizer, frameworks_suite,
    run_py_coredump, run_py_case)
import jobs_group  # noqa: E402
from jobs_group import (  # noqa: E402,F401 - the suite and its self-test use them by these names
    JOB_CASE_BY_NAME, JOB_CASES, JobCase, culprit_paragraphs, job_env, job_skip_reason, jobs_suite, judge_job,
    judge_job_fault, judge_stuck, merged_view_problems, nccl_problems, rank_problems, run_job_case, run_stuck_case,
    torchrun_cmd, JOB_FAULT, STUCK_READY,
    LAUNCHER_ENV, NCCL_KERNEL, RANK_LINE)
import diagnose_group  # noqa: E402
import verdict_group  # noqa: E402
# the verdict group (the exception's text, torchrun's Root Cause, verdict_group.py) is run and listed with it
DIAG_CASES = diagnose_group.DIAG_CASES + verdict_group.VERDICT_CASES
DIAG_CASE_BY_NAME = dict(diagnose_group.DIAG_CASE_BY_NAME, **verdict_group.VERDICT_CASE_BY_NAME)
GROUPS = {}
for _c in CASES + PY_CASES + JOB_CASES + DIAG_CASES:
    GROUPS.setdefault(_c.group, []).append(_c.name)
assert len(CASE_BY_NAME) + len(PY_CASE_BY_NAME) + len(JOB_CASE_BY_NAME) + len(DIAG_CASE_BY_NAME) == \
    len(set(CASE_BY_NAME) | set(PY_CASE_BY_NAME) | set(JOB_CASE_BY_NAME) | set(DIAG_CASE_BY_NAME)), \
    "case names must be unique across groups"
# The order run.sh --jobs starts the groups in: the longest first (on an H200, four suites at once: frameworks
# about 340 s, jobs with diagnose 280 s, c with hangs 60-70 s a mode), so the last to start is a short one.
GROUP_ORDER = ["frameworks", "diagnose", "jobs", "verdict", "c", "hangs"]
assert not set(GROUPS) & (set(CASE_BY_NAME) | set(PY_CASE_BY_NAME) | set(JOB_CASE_BY_NAME) | set(DIAG_CASE_BY_NAME))


class Outcome:
    """The judgement of one case: a table row, a status and the reasons for it."""

    def __init__(self, case, cudart):
        self.case = case
        self.cudart = cudart
        self.status = "pass"   # pass | fail | skip | rerun (a blocking rerun must settle a candidates verdict)
        self.reasons = []      # why it failed or was skipped
        self.named = "-"       # kernel culprit named
        self.certainty = "-"   # verdict certainty as shown
        self.line = "-"        # launching frame as file:line
        self.surfaced = "-"    # error.api and error.code
        self.seq = None        # the named launch's seq
        self.window = None     # (first, last) seq of the candidates, for the rerun
        self.path = ""         # how an accepted verdict was reached (exact, or candidates then blocking)
        self.notes = []        # facts worth a line under the table (the sticky code a trap gave)
        self.plain = None      # the run without culprit, which a --coredump row is judged against
        self.coredump_of = None  # a --coredump row: the Outcome of the same case's run without --coredump
        self.report = None     # the report judged (a run without --coredump)

    def fail(self, reason):
        self.status = "fail"
        self.reasons.append(reason)

    def skip(self, reason):
        self.status = "skip"
        self.reasons.append(reason)


def marker_line(text, src="source", marker=MARKER):
    """Returns the 1-based line holding the marker (CULPRIT-LAUNCH unless told); exactly one must exist."""
    lines = [i + 1 for i, line in enumerate(text.splitlines()) if line.rstrip().endswith(marker)]
    if len(lines) != 1:
        raise ValueError("%s: expected one %r line, found %d" % (src, marker, len(lines)))
    return lines[0]


def program_messages(stderr):
    """The error messages a test program printed about failed CUDA calls."""
    return [m.group("message") for m in map(PROGRAM_ERROR.search, stderr.splitlines()) if m]


def frame_file(frame):
    return os.path.basename(str(frame.get("file") or ""))


def line_problems(launch, case, line, what="launch"):
    """Whether LAUNCH's native stack has a frame in the case's source at LINE."""
    frames = launch.get("stack") or []
    in_src = [f for f in frames if isinstance(f, dict) and frame_file(f) == case.src]
    if not in_src:
        return ["no %s frame in %s" % ("stack" if what == "launch" else what, case.src)]
    if not any(f.get("line") == line for f in in_src):
        return ["%s line %s:%s, expected %s:%d" % (what, case.src, in_src[0].get("line"), case.src, line)]
    return []


def graph_node_problems(launch, case):
    """A graph case: the faulting node (named by the report, or found among the graph's nodes unless the case
    needs it named) must be the case's kernel, captured at the CULPRIT-CAPTURE line."""
    if launch.get("kind") != "graph":
        return ["kind %r, expected the graph launch" % launch.get("kind")]
    node = launch.get("node")
    if not isinstance(node, dict):
        if case.need_node:
            return ["the faulting node is not named (no \"node\")"]
        nodes = [n for n in launch.get("graph_nodes") or [] if isinstance(n, dict)
                 and case.kernel in str(n.get("kernel") or n.get("mangled") or "")]
        if not nodes:
            return ["no node of kernel %s among the graph's nodes" % case.kernel]
        node = nodes[0]
    kernel = str(node.get("kernel") or node.get("mangled") or "")
    if case.kernel not in kernel:
        return ["node kernel %r is not %s" % (kernel, case.kernel)]
    return line_problems(node, case, case.capture_line, "capture")


def launch_problems(launch, case, want_line):
    """What is wrong with a LAUNCH object as the culprit of case; an empty list when it is the faulty launch."""
    problems = []
    if not isinstance(launch, dict):
        return ["no launch object"]
    if case.graph:
        problems += graph_node_problems(launch, case)
    else:
        kernel = str(launch.get("kernel") or launch.get("mangled") or "")
        if case.kernel not in kernel:
            problems.append("kernel %r is not %s" % (kernel, case.kernel))
    problems += line_problems(launch, case, want_line)
    if case.stream_kind and launch.get("stream_kind") != case.stream_kind:
        problems.append("stream_kind %r, expected %r" % (launch.get("stream_kind"), case.stream_kind))
    return problems


def launch_where(launch, case, want_line):
    """The launching frame as file:line: the one at the marker line if present, else the first in the source."""
    frames = [f for f in (launch or {}).get("stack") or [] if isinstance(f, dict) and frame_file(f) == case.src]
    for f in frames:
        if f.get("line") == want_line:
            return "%s:%s" % (case.src, want_line)
    if frames:
        return "%s:%s" % (case.src, frames[0].get("line"))
    return "-"


def one_report(run, what):
    """The single parsed report of a run, or (None, reason)."""
    if not run.reports:
        return None, "%s: no report written" % what
    path, report = run.reports[0]
    if not isinstance(report, dict):
        return None, "%s: report %s unreadable: %s" % (what, os.path.basename(path), report)
    if report.get("schema") != SCHEMA:
        return None, "%s: schema %r, expected %r" % (what, report.get("schema"), SCHEMA)
    if len(run.reports) > 1:
        return report, "%s: %d reports for one process" % (what, len(run.reports))
    return report, None


def check_exit(out, base, run, what):
    """Timeout and exit status under culprit, compared with the plain run. False when it timed out."""
    if run.timed_out:
        out.fail("%s: timed out" % what)
        return False
    if run.rc != base.rc:
        out.fail("%s: exit status %d, %d without culprit" % (what, run.rc, base.rc))
    return True


def check_process(out, base, run, what):
    """Exit status, timeout and the program's own error message under culprit, compared with the plain run."""
    if not check_exit(out, base, run, what):
        return
    wanted = program_messages(base.stderr)
    got = program_messages(run.stderr)
    if wanted and wanted[-1] not in got:
        out.fail("%s: the program's own error message %r is missing from stderr" % (what, wanted[-1]))


def check_error(out, case, report):
    """error.code and error.api of a report."""
    error = report.get("error") or {}
    code = error.get("code")
    api = str(error.get("api") or "")
    out.surfaced = "%s (%s)" % (api or "?", code)
    if code not in case.codes:
        if case.codes == STICKY:
            out.fail("error.code %r is not a sticky code 700-719" % (code,))
        else:
            out.fail("error.code %r, expected %s" % (code, "/".join(map(str, case.codes))))
    if not re.search(case.api, api):
        out.fail("error.api %r does not match %r" % (api, case.api))
    if len(case.codes) > 1:
        out.notes.append("error.code %s (%s)" % (code, error.get("name", "?")))


def checked_report(out, case, run):
    """The single report of a faulty run under culprit, its error checked; None when there is none."""
    report, problem = one_report(run, "under culprit")
    if problem:
        if not run.reports and NO_STICKY in run.stderr:
            problem += " (culprit said %r)" % NO_STICKY
        out.fail(problem)
    if report is not None:
        check_error(out, case, report)
    return report


def judge_healthy(out, base, run, check_proc):
    """A healthy program: it succeeds without culprit, behaves the same under it (check_proc is the group's
    process check), prints the same stdout, and gets no report."""
    out.certainty = "none"
    if base.rc != 0:
        out.fail("exit status %d without culprit" % base.rc)
    check_proc(out, base, run, "under culprit")
    if run.stdout != base.stdout:
        out.fail("stdout differs under culprit (%d bytes vs %d)" % (len(run.stdout), len(base.stdout)))
    if run.reports:
        out.fail("a report was written for a healthy program: %s" % os.path.basename(run.reports[0][0]))


def judge_script_start(case, base, run, words, healthy_check=None):
    """The start of the PyTorch script groups' judges (verdict_group, diagnose_group), their Outcome and whether it
    is done: skipped where the script found no CUDA device, failed where the run under culprit timed out, and a
    healthy case judged whole (no report, exit status 0 without culprit and under it, the same stdout, then
    healthy_check(outcome, run) where the group has more to ask). words names the run in the group's messages: run
    ("culprit run"), under (how the exit statuses' line says under it), stdout_under (the same for stdout) and
    label (the stdout under culprit's label)."""
    o = Outcome(case, "python")
    if base.rc == SKIP_STATUS or run.rc == SKIP_STATUS:
        o.skip("the script found no CUDA device")
        return o, True
    if run.timed_out:
        o.fail("timed out under %s" % words["run"])
        return o, True
    if not case.healthy:
        return o, False
    if run.reports:
        o.fail("a healthy run wrote %d report(s)" % len(run.reports))
    if base.rc != 0 or run.rc != 0:
        o.fail("exit status %d without culprit, %d %s" % (base.rc, run.rc, words["under"]))
    if base.stdout != run.stdout:
        pad = " " * (len(words["label"]) - len("plain"))
        o.fail("stdout differs %s:\n  plain:%s %r\n  %s: %r" % (words["stdout_under"], pad, base.stdout[-300:],
                                                                words["label"], run.stdout[-300:]))
    if healthy_check:
        healthy_check(o, run)
    o.named, o.certainty = "-", "healthy"
    return o, True


def judge_exact(out, case, culprit, where, problems):
    """The part of every group's judge that reads an exact verdict: the named kernel, where it was launched
    (where(culprit): the table's launch line), its launch number, what is wrong with it (problems(culprit), each
    a failure) and, for a graph case, whether the graph launch or a node inside it was named."""
    out.named = str((culprit or {}).get("kernel", "-"))
    out.line = where(culprit)
    out.seq = (culprit or {}).get("seq")
    for p in problems(culprit):
        out.fail("culprit: " + p)
    if case.graph:
        graph_note(out, culprit)
    out.path = "exact"


def judge_page_stream(out, report):
    """One kernel on several streams, the page of the kernel's log just past the faulting stream's buffer (a case
    with page_stream): a verdict of candidates must keep that stream's launches alone, the others set aside in
    candidates_before_fault_page; an exact one is left to judge_exact. Where the log gave no line tied by pid (not
    readable: not root), it is only noted."""
    log = report.get("gpu_fault_log") or {}
    verdict = report.get("verdict") or {}
    if log.get("matched") != "pid":
        out.notes.append("page not judged: the kernel's log gave no line tied by pid (%s)" %
                         shorten(str(log.get("unknown") or log.get("matched")), 100))
        return
    if verdict.get("certainty") != "candidates":
        return
    candidates = [c for c in report.get("candidates") or [] if isinstance(c, dict)]
    streams = {c.get("stream") for c in candidates}
    if len(streams) != 1 or not report.get("candidates_before_fault_page"):
        out.fail("the page did not keep one stream's candidates: %d candidates on %d streams, %d set aside" % (
            len(candidates), len(streams), len(report.get("candidates_before_fault_page") or [])))
    elif "narrowed by the page of the faulting address" not in str(verdict.get("reason")):
        out.fail("the reason does not say the page narrowed the candidates: %r" % verdict.get("reason"))
    else:
        out.notes.append("the page kept %d launches of stream %s" % (len(candidates), streams.pop()))


def no_device(out, base, run):
    """Skips out where a C program found no CUDA device or no driver, with and without culprit; True if so."""
    if base.rc == SKIP_STATUS or run.rc == SKIP_STATUS:
        out.skip("no CUDA device")
    elif base.rc == 127 and "libcuda.so" in base.stderr:
        out.skip("no CUDA driver (libcuda.so.1 not found)")
    else:
        return False
    return True


def judge(case, cudart, want_line, base, run, ref_seq=None):
    """Judges one case from its run without culprit (base) and under culprit (run)."""
    out = Outcome(case, cudart)
    if no_device(out, base, run):
        return out
    if base.timed_out:
        out.fail("timed out without culprit")
        return out

    if case.healthy:
        judge_healthy(out, base, run, check_process)
        return out

    if base.rc == 0:
        out.fail("the program did not fail without culprit")
    if not program_messages(base.stderr):
        out.fail("the program printed no CUDA error without culprit")
    check_process(out, base, run, "under culprit")
    report = checked_report(out, case, run)
    if report is None:
        return out
    out.report = report  # its --coredump row compares the page of its kernel's log with compute-sanitizer
    judge_fault_page(out, report)
    if case.page_stream:
        judge_page_stream(out, report)

    verdict = report.get("verdict") or {}
    certainty = verdict.get("certainty")
    out.certainty = str(certainty)
    if certainty == "exact":
        judge_exact(out, case, report.get("culprit"), lambda launch: launch_where(launch, case, want_line),
                    lambda launch: launch_problems(launch, case, want_line))
        if ref_seq is not None and out.seq != ref_seq:
            out.fail("culprit is launch #%s, %s named #%s" % (out.seq, case.same_as, ref_seq))
        if case.verdict_says:
            m = next((m for m in (re.search(case.verdict_says, p) for p in diagnose_group.verdict_text(run.stderr))
                      if m), None)
            if m:
                out.notes.append("the verdict says: " + m.group(0))
            else:
                out.fail("the printed verdict does not say %r" % case.verdict_says)
        return out
    if certainty == "candidates" and case.rerun and case.mode is None:
        candidates = [c for c in report.get("candidates") or [] if isinstance(c, dict)]
        out.named = "%d candidates" % len(candidates)
        hits = [c for c in candidates if not launch_problems(c, case, want_line)]
        if not hits:
            near = [c for c in candidates if case.kernel in str(c.get("kernel") or c.get("mangled") or "")
                    or (case.graph and c.get("kind") == "graph")]
            if near:
                out.line = launch_where(near[0], case, want_line)
                out.fail("candidate #%s is the faulty kernel, but: %s" % (
                    near[0].get("seq"), "; ".join(launch_problems(near[0], case, want_line))))
            else:
                out.fail("the faulty launch is not among the %d candidates" % len(candidates))
            return out
        out.line = launch_where(hits[0], case, want_line)
        seqs = [c.get("seq") for c in candidates if isinstance(c.get("seq"), int)]
        if case.rerun == "window":
            if len(seqs) != len(candidates):
                out.fail("a candidate has no seq")
                return out
            out.window = (min(seqs), max(seqs))
        if out.status == "pass":
            out.status = "rerun"
        return out
    out.fail("verdict certainty %r, expected exact" % (certainty,))
    return out


def settle_rerun(out, base, rerun, check_proc, where, problems):
    """Settles a candidates verdict with the blocking rerun: it must name the faulty launch exactly. check_proc,
    where and problems are the group's own checks of the process, of the launch site and of the launch."""
    case = out.case
    out.status = "pass"
    window = "launches %d:%d" % out.window if out.window else "all launches"
    out.path = "candidates, then a blocking rerun over %s" % window
    check_proc(out, base, rerun, "blocking rerun")
    report, problem = one_report(rerun, "blocking rerun")
    if problem:
        out.fail(problem)
    if report is None:
        out.certainty = "candidates -> ?"
        return None
    error = report.get("error") or {}
    if error.get("code") not in case.codes:
        out.fail("blocking rerun: error.code %r, expected %s" % (error.get("code"), "/".join(map(str, case.codes))))
    certainty = (report.get("verdict") or {}).get("certainty")
    out.certainty = "candidates -> %s" % certainty
    culprit = report.get("culprit")
    if certainty != "exact":
        out.fail("blocking rerun: certainty %r, expected exact" % (certainty,))
    out.named = str((culprit or {}).get("kernel", "-"))
    out.line = where(culprit)
    out.seq = (culprit or {}).get("seq")
    for p in problems(culprit, report):
        out.fail("blocking rerun culprit: " + p)
    return report


def judge_rerun(out, want_line, base, rerun):
    """The C group's blocking rerun (which, for a graph, must name the node: blocking mode adds breadcrumb nodes
    to the graphs captured under it)."""
    case = copy.copy(out.case)
    case.need_node = True
    report = settle_rerun(out, base, rerun, check_process, lambda c: launch_where(c, case, want_line),
                          lambda c, report: launch_problems(c, case, want_line))
    if report is not None and case.graph:
        graph_note(out, report.get("culprit"))
    return out


# ---------------------------------------------------------------------------------------------------------------
# Judging the hang cases and the program that exits without synchronizing

REPORT_TAGS = {"fault": "", "hang": "-hang", "exit": "-exit"}  # file-name tag of each kind of report


def is_count(value):
    """Whether a JSON value is a whole number >= 0 (not a boolean)."""
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def report_kind(report):
    """A report's kind; reports without one are faults."""
    return report.get("kind") or "fault"


def kernel_of(launch):
    return str((launch or {}).get("kernel") or (launch or {}).get("mangled") or "")


def name_problems(path, report):
    """The file name the contract gives a report: culprit-<pid><tag>.json, or culprit-<hostname>-<pid><tag>.json
    for a process started by a launcher (its process object carries a rank)."""
    proc = report.get("process") or {}
    tag = REPORT_TAGS.get(report_kind(report), "-?")
    if "rank" in proc:
        want = "culprit-%s-%s%s.json" % (proc.get("hostname"), proc.get("pid"), tag)
    else:
        want = "culprit-%s%s.json" % (proc.get("pid"), tag)
    name = os.path.basename(path)
    return [] if name == want else ["report file %s, expected %s" % (name, want)]


def in_flight_problems(out, case, report, want_line, mode, what):
    """The hang verdict of a hang case: the spinning launch is in flight (exactly, or in record mode among the
    candidates), with the queued launch behind it and its stream's in_flight and queued fields."""
    verdict = report.get("verdict") or {}
    certainty = verdict.get("certainty")
    out.certainty = str(certainty)
    if case.by_device:
        dq = report.get("device_query") if isinstance(report.get("device_query"), dict) else {}
        by = (report.get("culprit") or {}).get("by") if isinstance(report.get("culprit"), dict) else None
        out.notes.append("%s: the device was asked: %s in %s ms (%s)" % (
            what, dq.get("status"), dq.get("ms"), "; ".join(shorten(str(k.get("invocation")), 60)
                                                        for k in dq.get("kernels") or [] if isinstance(k, dict))))
        if dq.get("status") != "answered":
            out.fail("%s: device_query status %r (%s), expected answered" % (what, dq.get("status"), dq.get("why")))
        elif by != "the device" and dq.get("confirms") is not True:
            out.fail("%s: the launch in flight was not named by the device (verdict %s, running %r)" % (
                what, certainty, dq.get("running")))
    if certainty == "exact":
        culprit = report.get("culprit")
        out.named = str((culprit or {}).get("kernel", "-"))
        out.line = launch_where(culprit, case, want_line)
        out.seq = (culprit or {}).get("seq")
        for p in launch_problems(culprit, case, want_line):
            out.fail("%s: in flight: %s" % (what, p))
        if not isinstance(culprit, dict):
            return
        queued = [q for q in report.get("queued") or [] if isinstance(q, dict)]
        if not any(case.queued_kernel in kernel_of(q) for q in queued):
            out.fail("%s: %s is not among the queued launches (%s)" % (
                what, case.queued_kernel, "; ".join(shorten(kernel_of(q), 40) for q in queued) or "none"))
        streams = [st for st in report.get("streams") or [] if isinstance(st, dict)
                   and st.get("stream") == culprit.get("stream")]
        if not streams:
            out.fail("%s: no streams entry for stream %s" % (what, culprit.get("stream")))
        else:
            if streams[0].get("in_flight") != culprit.get("seq"):
                out.fail("%s: stream %s has in_flight %r, expected #%s" % (
                    what, culprit.get("stream"), streams[0].get("in_flight"), culprit.get("seq")))
            if not is_count(streams[0].get("queued")) or streams[0]["queued"] < 1:
                out.fail("%s: stream %s has queued %r, expected 1 or more" % (
                    what, culprit.get("stream"), streams[0].get("queued")))
        out.path = "exact"
        return
    if certainty == "candidates" and mode == "record":
        candidates = [c for c in report.get("candidates") or [] if isinstance(c, dict)]
        out.named = "%d candidates" % len(candidates)
        if report.get("culprit") is not None:
            out.fail("%s: culprit is set although the verdict is candidates" % what)
        hits = [c for c in candidates if not launch_problems(c, case, want_line)]
        if not hits:
            near = [c for c in candidates if case.kernel in kernel_of(c)]
            if near:
                out.line = launch_where(near[0], case, want_line)
                out.fail("%s: candidate #%s is the spinning kernel, but: %s" % (
                    what, near[0].get("seq"), "; ".join(launch_problems(near[0], case, want_line))))
            else:
                out.fail("%s: the spinning launch is not among the %d candidates" % (what, len(candidates)))
            return
        out.line = launch_where(hits[0], case, want_line)
        out.path = "candidates (record mode's breadcrumb window)"
        return
    out.fail("%s: verdict certainty %r, expected exact%s" % (
        what, certainty, " or candidates" if mode == "record" else ""))


def hang_report_problems(out, case, report, want_line, mode, what):
    """Judges one hang report of a hang case against the contract (docs/report.md, "kind": "hang")."""
    if report.get("schema") != SCHEMA:
        out.fail("%s: schema %r, expected %r" % (what, report.get("schema"), SCHEMA))
    if report.get("kind") != "hang":
        out.fail("%s: kind %r, expected 'hang'" % (what, report.get("kind")))
    hang = report.get("hang")
    if not isinstance(hang, dict):
        out.fail("%s: no \"hang\" object" % what)
        return
    trigger = hang.get("trigger")
    out.surfaced = "%s (%s, stalled %s ms)" % (
        trigger, "signal %s" % hang.get("signal") if "signal" in hang else "after %s s" % hang.get("timeout_s"),
        hang.get("stalled_ms"))
    if trigger != case.trigger:
        out.fail("%s: hang.trigger %r, expected %r" % (what, trigger, case.trigger))
    if case.trigger == "timeout":
        if "signal" in hang:
            out.fail("%s: hang.signal %r in a timeout report" % (what, hang.get("signal")))
        timeout_s = hang.get("timeout_s")
        if isinstance(timeout_s, bool) or not isinstance(timeout_s, (int, float)) or \
                float(timeout_s) != float(case.hang_timeout):
            out.fail("%s: hang.timeout_s %r, expected %s" % (what, timeout_s, case.hang_timeout))
    elif hang.get("signal") != int(getattr(signal, case.trigger)):
        out.fail("%s: hang.signal %r, expected %d (%s)" % (what, hang.get("signal"),
                                                          int(getattr(signal, case.trigger)), case.trigger))
    for key in ("stalled_ms", "time_ns", "time_unix_ns"):
        if not is_count(hang.get(key)):
            out.fail("%s: hang.%s is %r, not a count" % (what, key, hang.get(key)))
    proc = report.get("process") or {}
    if not is_count(proc.get("time_unix_ns")):
        out.fail("%s: process.time_unix_ns is %r, not a count" % (what, proc.get("time_unix_ns")))
    in_flight_problems(out, case, report, want_line, mode, what)

    threads = [t for t in report.get("threads") or [] if isinstance(t, dict)]
    if not threads:
        out.fail("%s: no threads listed" % what)
        return
    if any(not is_count(t.get("tid")) for t in threads):
        out.fail("%s: a thread without a tid" % what)
    main = [t for t in threads if t.get("tid") == proc.get("pid")]
    if not main:
        out.fail("%s: the main thread (tid %s) is not among the %d threads" % (what, proc.get("pid"), len(threads)))
        return
    mine = [f for f in main[0].get("stack") or [] if isinstance(f, dict) and frame_file(f) == case.src]
    if any(f.get("line") == case.wait_line for f in mine):
        out.notes.append("%s: the main thread waits at %s:%d" % (what, case.src, case.wait_line))
    else:
        where = "frames at %s" % ", ".join("%s:%s" % (case.src, f.get("line")) for f in mine) if mine else \
            "no frame in %s" % case.src
        problem = "%s: the main thread's stack does not show where it waits (%s:%d; %s)" % (
            what, case.src, case.wait_line, where)
        # a signal-triggered report may be taken while that signal's handler runs on the main thread itself
        if case.trigger == "timeout":
            out.fail(problem)
        else:
            out.notes.append(problem)


def judge_hang(case, cudart, want_line, base, run, mode, timeout_report=None):
    """Judges a hang case: without culprit (base) the program is stopped by SIGTERM while its kernel spins; under
    culprit (run) it dies the same way and leaves one hang report, whose trigger, in-flight launch, queued launch,
    streams and threads are checked. A timeout case's report is the one seen while it ran (timeout_report,
    symbolized): the SIGTERM that ends the run may replace it by a fresh snapshot."""
    out = Outcome(case, cudart)
    if no_device(out, base, run):
        return out
    if base.timed_out:
        out.fail("without culprit: still running after SIGTERM (killed)")
        return out
    if base.stopped is None:
        out.fail("without culprit: the program ended by itself (exit status %d) before it was stopped" % base.rc)
        return out
    if base.rc != -signal.SIGTERM:
        out.fail("without culprit: exit status %d, expected death by SIGTERM (%d)" % (base.rc, -signal.SIGTERM))
    if run.stopped is None and not run.timed_out:
        out.fail("under culprit: the program ended by itself (exit status %d) before it was stopped" % run.rc)
    check_exit(out, base, run, "under culprit")
    if run.stop_note:
        out.notes.append("under culprit: " + run.stop_note)
    hangs = []
    for path, report in run.reports:
        if not isinstance(report, dict):
            out.fail("report %s unreadable: %s" % (os.path.basename(path), report))
        elif report.get("kind") == "hang":
            hangs.append((path, report))
        else:
            out.fail("a %s report was written: %s" % (report_kind(report), os.path.basename(path)))
    if len(hangs) != 1:
        out.fail("%d hang reports, expected one" % len(hangs))
    if not hangs:
        return out
    path, final = hangs[0]
    for p in name_problems(path, final):
        out.fail(p)
    if case.trigger != "timeout":
        hang_report_problems(out, case, final, want_line, mode, "hang report")
        sender = (final.get("hang") or {}).get("sender_pid")
        if sender is not None:
            out.notes.append("sender_pid %s%s" % (sender, " (culprit run, forwarding)" if sender == run.pid else ""))
        return out
    later = (final.get("hang") or {}).get("trigger")
    if later not in ("timeout", "SIGTERM"):
        out.fail("the hang file ends with trigger %r, expected the timeout's or the SIGTERM's" % (later,))
    else:
        out.notes.append("after the SIGTERM the hang file holds the %s report" % later)
    if timeout_report is None:
        out.fail("no hang report with trigger 'timeout' appeared within %d s of the spinning line" % HANG_BOUND_S)
        return out
    hang_report_problems(out, case, timeout_report, want_line, mode, "timeout report")
    return out


def judge_nosync(case, cudart, want_line, base, run, strict):
    """Judges the program that exits 0 after a faulty launch: exit status 0 with and without culprit, one fault
    report naming the launch exactly (found at exit or at context teardown), culprit saying that the command
    exited 0 although a kernel faulted, and exit status 9 with --error-exitcode 9 (strict)."""
    out = Outcome(case, cudart)
    if no_device(out, base, run):
        return out
    if base.timed_out:
        out.fail("timed out without culprit")
        return out
    if base.rc != 0:
        out.fail("without culprit: exit status %d, expected 0 (nothing waits for the faulty kernel)" % base.rc)
    check_exit(out, base, run, "under culprit")
    report = checked_report(out, case, run)
    if report is not None:
        if report_kind(report) != "fault":
            out.fail("report kind %r, expected a fault" % report_kind(report))
        for p in name_problems(run.reports[0][0], report):
            out.fail(p)
        if not is_count((report.get("error") or {}).get("time_unix_ns")):
            out.fail("error.time_unix_ns is %r, not a count" % (report.get("error") or {}).get("time_unix_ns"))
        certainty = (report.get("verdict") or {}).get("certainty")
        out.certainty = str(certainty)
        culprit = report.get("culprit")
        if certainty == "exact":
            out.named = str((culprit or {}).get("kernel", "-"))
            out.line = launch_where(culprit, case, want_line)
            out.seq = (culprit or {}).get("seq")
            for p in launch_problems(culprit, case, want_line):
                out.fail("culprit: " + p)
            out.path = "exact"
        else:
            out.fail("verdict certainty %r, expected exact (the faulty launch is the only unfinished one)" % (
                certainty,))
    if not EXITED_ZERO.search(run.stderr):
        out.fail("culprit did not say that the command exited 0 although a kernel faulted")
    if strict is None:
        return out
    if strict.timed_out:
        out.fail("--error-exitcode 9: timed out")
    elif strict.rc != 9:
        out.fail("--error-exitcode 9: exit status %d, expected 9" % strict.rc)
    if not strict.reports:
        out.fail("--error-exitcode 9: no report written")
    return out


# ---------------------------------------------------------------------------------------------------------------
# Judging the frameworks group




# ---------------------------------------------------------------------------------------------------------------
# Judging the --coredump runs: `culprit run --coredump` has the driver write a GPU core dump on the exception and
# abort the process (SIGABRT); after it died, culprit reads the dump with cuda-gdb and ties it to the report.

FAULT_MARKER = "// CULPRIT-FAULT"  # C cases: the faulting statement, the line a GPU core dump names
COREDUMP_STATUS = -signal.SIGABRT  # how a process ends under --coredump: the driver aborts it after the dump
COREDUMP_ROW = " --coredump"       # a --coredump row is named after its case, with this after the name
COREDUMP_EXTRA_S = 130             # a --coredump run's time beyond --timeout: culprit gives cuda-gdb up to 120 s
DUMP_LINE = re.compile(r"GPU core dump")  # culprit's lines about a dump it could not read or tie to a report


def coredump_row(case):
    """CASE as its --coredump row: the same case under the name "<case> --coredump"."""
    row = copy.copy(case)
    row.name = case.name + COREDUMP_ROW
    return row


def dump_lines(stderr):
    """What culprit said about the GPU core dump, for a reason: its paragraphs that mention one."""
    return "; ".join(shorten(p, 200) for p in culprit_paragraphs(stderr) if DUMP_LINE.search(p)) or "nothing"


def judge_coredump(out, base, run, kernel_re, problems, where, fault_src=None, fault_line=None):
    """Judges a --coredump run (run) of a faulty case against its run without culprit (base), into out: the
    process dies of SIGABRT and leaves exactly one report, culprit-<pid>-hang.json (the abort's hang report,
    which the dump's exception turned into a fault) or culprit-<pid>.json, of kind fault, with its error code,
    a "coredump" object whose kernel matches kernel_re (and, given fault_line, whose source line is
    fault_src:fault_line; cuda-gdb 13.0 dies on some dumps before it says one: then the kernel and the verdict
    must do), and an exact verdict: problems(launch, report) and where(launch) are the group's checks of a
    launch. A candidates verdict passes only where the dump could not narrow it: several candidates run the
    kernel it names (concurrent streams or threads running the same kernel), the faulty launch among them."""
    case = out.case
    if base.timed_out:
        out.fail("timed out without culprit")
        return out
    if base.rc == 0:
        out.fail("the program did not fail without culprit")
    if run.timed_out:
        out.fail("--coredump: timed out")
        return out
    if run.rc != COREDUMP_STATUS:
        out.fail("--coredump: exit status %d, expected %d (the driver aborts the process after its core dump)" % (
            run.rc, COREDUMP_STATUS))
    if len(run.reports) != 1:
        out.fail("--coredump: %d reports, expected one (culprit on the dump: %s)" % (
            len(run.reports), dump_lines(run.stderr)))
    if not run.reports:
        return out
    path, report = run.reports[0]
    if not isinstance(report, dict):
        out.fail("--coredump: report %s unreadable: %s" % (os.path.basename(path), report))
        return out
    if report.get("schema") != SCHEMA:
        out.fail("--coredump: schema %r, expected %r" % (report.get("schema"), SCHEMA))
    pid = (report.get("process") or {}).get("pid")
    names = ("culprit-%s-hang.json" % pid, "culprit-%s.json" % pid)
    if os.path.basename(path) not in names:
        out.fail("--coredump: report file %s, expected %s or %s" % ((os.path.basename(path),) + names))
    if report_kind(report) != "fault":
        out.fail("--coredump: kind %r, expected 'fault' (the dump's exception makes the abort's hang report a "
                 "fault)" % report_kind(report))
    error = report.get("error") or {}
    if error.get("code") not in case.codes:
        out.fail("--coredump: error.code %r, expected %s" % (
            error.get("code"), "a sticky code 700-719" if case.codes == STICKY else "/".join(map(str, case.codes))))

    dump = report.get("coredump")
    if not isinstance(dump, dict):
        out.fail("--coredump: no \"coredump\" object (culprit on the dump: %s)" % dump_lines(run.stderr))
    else:
        kernel = str(dump.get("kernel") or "")
        src, line = dump.get("source_file"), dump.get("source_line")
        at = "%s:%s" % (os.path.basename(str(src)), line) if line is not None else dump.get("exception") or "?"
        out.surfaced = "dump %s (%s)" % (at, error.get("code"))
        if not kernel:
            out.fail("--coredump: the dump names no kernel (coredump.kernel missing)")
        elif not re.search(kernel_re, kernel):
            out.fail("--coredump: coredump.kernel %r does not match %r" % (shorten(kernel, 80), kernel_re))
        crashed = dump.get("debugger_crashed") is True
        if fault_line is not None:
            if line is None and crashed:
                out.notes.append("cuda-gdb crashed on the dump before it named a source line: kernel and exactness "
                                 "judged alone")
            elif os.path.basename(str(src)) != fault_src or line != fault_line:
                out.fail("--coredump: the dump's source line is %s, expected %s:%d (CULPRIT-FAULT)" % (
                    "%s:%s" % (src, line) if line is not None else "missing", fault_src, fault_line))
            elif crashed:
                out.notes.append("cuda-gdb crashed on the dump after its exception line (kernel and line from it)")
        # an address exception: the report gives the address, or says plainly why the dump does not (a culprit
        # that counted the dump's warps, warps_in_dump, always can; older reports, as the fixtures, did not)
        if "warps_in_dump" in dump and "Address" in str(dump.get("exception") or "") and \
                not dump.get("address") and not (report.get("fault_address") or {}).get("address"):
            why = dump.get("address_unknown")
            if not why:
                out.fail("--coredump: neither an address nor why the dump gives none (coredump.address_unknown); "
                         "warps in the dump: %s" % dump.get("warps_in_dump"))
            else:
                out.notes.append("no address from the dump (%s warps in it): %s" % (
                    dump.get("warps_in_dump", "?"), shorten(why, 110)))

    verdict = report.get("verdict") or {}
    certainty = verdict.get("certainty")
    out.certainty = str(certainty)
    if certainty == "exact":
        culprit = report.get("culprit")
        out.named = str((culprit or {}).get("kernel", "-"))
        out.line = where(culprit)
        out.seq = (culprit or {}).get("seq")
        for p in problems(culprit, report):
            out.fail("--coredump: culprit: " + p)
        before = report.get("candidates_before_coredump")
        if isinstance(before, list):
            out.notes.append("the dump made the verdict exact: launch #%s of %d candidates runs its kernel" % (
                out.seq, len(before) + 1))
        out.path = "exact"
        return out
    if certainty == "candidates":
        candidates = [c for c in report.get("candidates") or [] if isinstance(c, dict)]
        out.named = "%d candidates" % len(candidates)
        running = [c for c in candidates if re.search(kernel_re, kernel_of(c))]
        hits = [c for c in running if not problems(c, report)]
        if not hits and len(running) >= 2 and len(set(c.get("thread") for c in running)) > 1:
            # several host threads launching the same kernel (threads8): launch numbers and the order of the
            # threads differ from run to run, so what the default run's rerun named cannot be looked for here
            out.notes.append("%d candidates run the dump's kernel, none as the default run's culprit (%s)" % (
                len(running), "; ".join(problems(running[0], report))[:160]))
            hits = running
        if not hits:
            out.fail("--coredump: the faulty launch is not among the %d candidates" % len(candidates))
            return out
        out.line = where(hits[0])
        if len(running) == 1:
            out.fail("--coredump: candidates, but only candidate #%s runs the dump's kernel: the dump should have "
                     "made it the culprit" % running[0].get("seq"))
        else:
            out.path = "candidates: %d of the %d run the dump's kernel (%s); a dump names a kernel, not a launch" % (
                len(running), len(candidates), ", ".join("#%s" % c.get("seq") for c in running))
        return out
    out.fail("--coredump: verdict certainty %r, expected exact" % (certainty,))
    return out


def judge_c_coredump(case, cudart, want_line, base, run):
    """A C case's --coredump run (case: its --coredump row, fault_line filled in)."""
    out = Outcome(case, cudart)
    if no_device(out, base, run):
        return out
    return judge_coredump(out, base, run, re.escape(case.kernel),
                          lambda c, report: launch_problems(c, case, want_line),
                          lambda c: launch_where(c, case, want_line), case.fault_src, case.fault_line)




def one_run_line(outcomes, mode=None):
    """The line saying how many of the cases run with --coredump were exact in one run (passing, with no blocking
    rerun) without the dump and with it; None when there is no --coredump row."""
    rows = [o for o in outcomes if o.coredump_of is not None and o.status != "skip"]
    if not rows:
        return None
    plain = sum(o.coredump_of.status == "pass" and o.coredump_of.path == "exact" for o in rows)
    dumped = sum(o.status == "pass" and o.certainty == "exact" for o in rows)
    return "one run%s: default exact %d/%d, --coredump exact %d/%d" % (
        " (--mode %s)" % mode if mode else "", plain, len(rows), dumped, len(rows))


# ---------------------------------------------------------------------------------------------------------------
# Output


def shorten(text, width):
    text = str(text)
    return text if len(text) <= width else text[: width - 3] + "..."


def table(outcomes, mode=None):
    """The result table and the closing line, as a list of lines; with --coredump rows, the line comparing them
    with the runs without the dump (one_run_line) comes before the closing line."""
    head = ["case", "cudart", "expected kernel", "named kernel", "certainty", "launch line", "surfaced at",
            "result"]
    rows = []
    for o in outcomes:
        result = {"pass": "pass", "fail": "FAIL", "skip": "skip", "rerun": "FAIL"}[o.status]
        if o.status == "fail" and all(PY_LINE in r for r in o.reasons):
            result = "FAIL(py)"  # right kernel and code; only the Python line is missing or wrong
        rows.append([o.case.name, o.cudart, o.case.kernel or "-", shorten(o.named, 48), o.certainty, o.line,
                     shorten(o.surfaced, 36), result])
    widths = [max(len(r[i]) for r in rows + [head]) for i in range(len(head))]
    fmt = "| " + " | ".join("%%-%ds" % w for w in widths) + " |"
    lines = [fmt % tuple(head), "|" + "|".join("-" * (w + 2) for w in widths) + "|"]
    lines += [fmt % tuple(r) for r in rows]
    notes = []
    for o in outcomes:
        if o.path and o.path != "exact" and o.status == "pass":
            notes.append("%s/%s: %s" % (o.case.name, o.cudart, o.path))
        for note in o.notes:
            notes.append("%s/%s: %s" % (o.case.name, o.cudart, note))
        for reason in o.reasons:
            notes.append("%s/%s: %s" % (o.case.name, o.cudart, reason))
    if notes:
        lines.append("")
        lines += notes
    passed = sum(o.status == "pass" for o in outcomes)
    failed = sum(o.status in ("fail", "rerun") for o in outcomes)
    skipped = sum(o.status == "skip" for o in outcomes)
    closing = "%d passed, %d failed" % (passed, failed)
    if skipped:
        closing += ", %d skipped" % skipped
    one_run = one_run_line(outcomes, mode)
    if one_run:
        lines += ["", one_run]
    lines.append(closing)
    return lines


def suite(args):
    build = os.path.abspath(args.build)
    logs = os.path.abspath(args.logs)
    culprit = os.path.join(build, "bin", "culprit")
    os.makedirs(logs, exist_ok=True)
    names = selected(args.only)
    if args.group:
        names &= set(GROUPS[args.group])
    cases = [c for c in CASES if c.name in names]
    py_cases = [c for c in PY_CASES if c.name in names]
    job_cases = [c for c in JOB_CASES if c.name in names]
    diag_cases = [c for c in DIAG_CASES if c.name in names]
    lines = {}
    outcomes = []
    seqs = {}  # (case, cudart) -> culprit seq, for same_as
    dumped = {c.name for c in cases if c.coredump} if args.coredump else set()  # run once more with --coredump
    total = (len(cases) + len(dumped)) * len(CUDARTS) + len(py_cases) + len(job_cases) + len(diag_cases)
    if args.coredump:
        total += sum(1 for c in py_cases if c.coredump)
        gdb = find_cuda_gdb()
        print("--coredump: cuda-gdb %s\n" % (gdb[0] or "not found: the --coredump rows skip"))
    else:
        gdb = (None, {})
    deadline = time.monotonic() + args.budget

    for case in cases:
        case = prepared(case, args.mode)
        try:
            with open(os.path.join(HERE, case.src), encoding="utf-8") as f:
                text = f.read()
            lines[case.name] = marker_line(text, case.src) if not case.healthy else 0
            if case.graph:
                case.capture_line = marker_line(text, case.src, CAPTURE_MARKER)
            if case.kind == "hang":
                case.wait_line = marker_line(text, case.src, WAIT_MARKER)
            if case.name in dumped:
                with open(os.path.join(HERE, case.fault_src), encoding="utf-8") as f:
                    case.fault_line = marker_line(f.read(), case.fault_src, FAULT_MARKER)
        except (OSError, ValueError) as e:
            for cudart in CUDARTS:
                o = Outcome(case, cudart)
                o.fail(str(e))
                outcomes.append(o)
            continue
        rows = []  # the case's --coredump rows, shown after its own
        for cudart in CUDARTS:
            stem = "%s_%s" % (case.name, cudart)
            exe = os.path.join(build, "bin", "gpu_%s_%s" % (case.prog, cudart))
            want = lines[case.name]
            print("[%2d/%d] %-20s %-6s ..." % (len(outcomes) + len(rows) + 1, total, case.name, cudart), end=" ",
                  flush=True)
            env = clean_env(case.env)
            if time.monotonic() > deadline:
                o = Outcome(case, cudart)
                o.fail("not run: the suite's time budget (%d s) was spent" % args.budget)
            elif not os.access(exe, os.X_OK):
                o = Outcome(case, cudart)
                o.fail("%s is not built" % exe)
            elif case.kind == "hang":
                o = run_hang_case(args, case, cudart, exe, want, culprit, logs, stem, env)
            elif case.kind == "nosync":
                o = run_nosync_case(args, case, cudart, exe, want, culprit, logs, stem, env)
            else:
                o = run_fault_case(args, case, cudart, exe, want, culprit, logs, stem, env, seqs)
            if o.status == "pass" and o.seq is not None and o.path == "exact":
                seqs[(case.name, cudart)] = o.seq
            outcomes.append(o)
            print(said(o))
            if case.name in dumped:
                print("[%2d/%d] %-20s %-6s ..." % (len(outcomes) + len(rows) + 1, total, case.name + COREDUMP_ROW,
                                                  cudart), end=" ", flush=True)
                rows.append(run_coredump_case(args, case, cudart, exe, want, culprit, logs, stem, env, gdb, o,
                                              deadline))
                print(said(rows[-1]))
        outcomes += rows

    outcomes += frameworks_suite(args, py_cases, culprit, logs, deadline, len(outcomes), total, gdb)
    outcomes += jobs_suite(args, job_cases, culprit, logs, deadline, len(outcomes), total)
    outcomes += diagnose_group.suite(sys.modules[__name__], args, [c for c in diag_cases if c.group == "diagnose"],
                                     culprit, logs, deadline, len(outcomes), total)
    outcomes += verdict_group.suite(sys.modules[__name__], args, [c for c in diag_cases if c.group == "verdict"],
                                    culprit, logs, deadline, len(outcomes), total)

    print("\nlogs and reports: %s\n" % logs)
    for line in table(outcomes, args.mode):
        print(line)
    return 1 if any(o.status in ("fail", "rerun") for o in outcomes) else 0


def said(o):
    """What the progress line says of a finished case: pass (and how), skip, or FAIL with its first reason (so
    that a run stopped by a time limit before its table still says why a case failed)."""
    if o.status == "pass":
        return "pass" + (" (%s)" % o.path if o.path else "")
    if o.status == "skip":
        return "skip"
    return "FAIL" + (": " + shorten(o.reasons[0], 200) if o.reasons else "")


def culprit_cmd(culprit, report_dir, case, args, extra=()):
    """`culprit run --dir DIR [--mode M] [extra...]` for a C case."""
    cmd = [culprit, "run", "--dir", report_dir]
    if case.mode or args.mode:
        cmd += ["--mode", case.mode or args.mode]
    return cmd + list(extra)


def run_fault_case(args, case, cudart, exe, want, culprit, logs, stem, env, seqs):
    """A faulty (or healthy) C case: the run without culprit, the run under it, and the blocking rerun that
    settles a candidates verdict."""
    base = execute([exe] + case.args, env, args.timeout)
    save_logs(logs, stem + ".plain", base)

    report_dir = fresh_dir(os.path.join(logs, "reports", stem))
    cmd = culprit_cmd(culprit, report_dir, case, args)
    run = execute(cmd + ["--", exe] + case.args, env, args.timeout, report_dir)
    save_logs(logs, stem + ".culprit", run)

    ref = seqs.get((case.same_as, cudart)) if case.same_as else None
    o = judge(case, cudart, want, base, run, ref)
    o.plain = base
    if o.status == "rerun":
        rerun_dir = fresh_dir(os.path.join(logs, "reports", stem + ".rerun"))
        cmd = [culprit, "run", "--dir", rerun_dir, "--mode", "blocking"]
        if o.window:
            cmd += ["--launches", "%d:%d" % o.window]
        rerun = execute(cmd + ["--", exe] + case.args, env, args.timeout, rerun_dir)
        save_logs(logs, stem + ".rerun", rerun)
        judge_rerun(o, want, base, rerun)
    return o


def find_cuda_gdb():
    """The cuda-gdb `culprit run --coredump` is to run, and what its environment needs for that: CULPRIT_CUDA_GDB
    unless it is the one on PATH (clean_env drops the caller's CULPRIT_ settings, so one given there is passed on
    here); else the CUDA toolkit's. (None, {}) where there is none."""
    given = os.environ.get("CULPRIT_CUDA_GDB")
    if given:
        return given, {"CULPRIT_CUDA_GDB": given}
    found = shutil.which("cuda-gdb")
    if found:
        return found, {}
    for home in (os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda"):
        path = os.path.join(home, "bin", "cuda-gdb") if home else None
        if path and os.access(path, os.X_OK):
            return path, {"CULPRIT_CUDA_GDB": path}
    return None, {}


def coredump_outcome(case, cudart, default, gdb, deadline, budget):
    """The --coredump row of a case whose run without --coredump gave DEFAULT, decided before its run: skipped
    (no device, no cuda-gdb) or failed (not run), else None: it is to be run."""
    o = Outcome(coredump_row(case), cudart)
    o.coredump_of = default
    if default.status == "skip":
        o.skip(default.reasons[0] if default.reasons else "skipped")
    elif default.plain is None:
        o.fail("not run: the case's run without culprit was not made")
    elif gdb[0] is None:
        o.skip("cuda-gdb not found (CULPRIT_CUDA_GDB, PATH, CUDA_HOME/bin, /usr/local/cuda/bin)")
    elif time.monotonic() > deadline:
        o.fail("not run: the suite's time budget (%d s) was spent" % budget)
    else:
        return None
    return o


def run_coredump_case(args, case, cudart, exe, want, culprit, logs, stem, env, gdb, default, deadline):
    """A faulty C case once more, as `culprit run --coredump` in the environment of its other runs, judged against
    its run without culprit."""
    o = coredump_outcome(case, cudart, default, gdb, deadline, args.budget)
    if o is not None:
        return o
    report_dir = fresh_dir(os.path.join(logs, "reports", stem + ".coredump"))
    cmd = culprit_cmd(culprit, report_dir, case, args, ["--coredump"])
    run = execute(cmd + ["--", exe] + case.args, dict(env, **gdb[1]), args.timeout + COREDUMP_EXTRA_S, report_dir)
    save_logs(logs, stem + ".coredump", run)
    o = judge_c_coredump(coredump_row(case), cudart, want, default.plain, run)
    o.coredump_of = default
    return run_sanitizer_case(args, case, exe, env, logs, stem, o, run)


def symbolized_copy(culprit, path, report, logs, stem):
    """A report seen while its process ran, copied into the logs and symbolized there by `culprit report` (the
    run's own file may have been replaced since, and only the end of `culprit run` symbolizes that one). Returns
    the symbolized copy, or the report as it was when that fails."""
    copy_dir = fresh_dir(os.path.join(logs, "snapshots", stem))
    copy_path = os.path.join(copy_dir, os.path.basename(path))
    with open(copy_path, "w", encoding="utf-8") as f:
        json.dump(report, f, indent=1)
    shown = execute([culprit, "report", copy_path], os.environ.copy(), 60)
    save_logs(logs, stem + ".snapshot", shown)
    try:
        with open(copy_path, encoding="utf-8") as f:
            return json.load(f)
    except (OSError, ValueError):
        return report


def is_timeout_report(report):
    return isinstance(report, dict) and report.get("kind") == "hang" and \
        (report.get("hang") or {}).get("trigger") == "timeout"


def run_hang_case(args, case, cudart, exe, want, culprit, logs, stem, env):
    """A hang case: the program stopped by SIGTERM without culprit, then under `culprit run` (with
    --hang-timeout for the timeout case, stopped once the timeout report is there)."""
    mode = case.mode or args.mode or "record"
    base = execute([exe] + case.args, env, args.timeout, stop=Stop(SPIN_READY))
    save_logs(logs, stem + ".plain", base)
    report_dir = fresh_dir(os.path.join(logs, "reports", stem))
    extra = ["--hang-timeout", str(case.hang_timeout)] if case.hang_timeout else []
    stop = Stop(SPIN_READY, want=is_timeout_report if case.trigger == "timeout" else None)
    run = execute(culprit_cmd(culprit, report_dir, case, args, extra) + ["--", exe] + case.args, env,
                  args.timeout, report_dir, stop=stop)
    save_logs(logs, stem + ".culprit", run)
    seen = [(p, r) for p, r in run.snapshots if is_timeout_report(r)]
    timeout_report = symbolized_copy(culprit, seen[0][0], seen[0][1], logs, stem) if seen else None
    return judge_hang(case, cudart, want, base, run, mode, timeout_report)


def run_nosync_case(args, case, cudart, exe, want, culprit, logs, stem, env):
    """The program that exits 0 after a faulty launch: without culprit, under it, and under it with
    --error-exitcode 9."""
    base = execute([exe] + case.args, env, args.timeout)
    save_logs(logs, stem + ".plain", base)
    report_dir = fresh_dir(os.path.join(logs, "reports", stem))
    run = execute(culprit_cmd(culprit, report_dir, case, args) + ["--", exe] + case.args, env, args.timeout,
                  report_dir)
    save_logs(logs, stem + ".culprit", run)
    strict = None
    if run.rc != SKIP_STATUS:
        strict_dir = fresh_dir(os.path.join(logs, "reports", stem + ".exitcode"))
        strict = execute(culprit_cmd(culprit, strict_dir, case, args, ["--error-exitcode", "9"]) + ["--", exe] +
                         case.args, env, args.timeout, strict_dir)
        save_logs(logs, stem + ".exitcode", strict)
    return judge_nosync(case, cudart, want, base, run, strict)


def selected(only):
    """The case names --only selects (case names or group names); all cases without it."""
    if not only:
        return set(CASE_BY_NAME) | set(PY_CASE_BY_NAME) | set(JOB_CASE_BY_NAME) | set(DIAG_CASE_BY_NAME)
    names = set()
    for name in only:
        names.update(GROUPS.get(name, [name]))
    return names


_module_cache = {}


def not_runnable(o, args, python, modules, deadline):
    """Decides a Python case's outcome o before it runs: failed once the suite's time budget is spent, skipped
    where python cannot find one of its modules. True if so (the case is not to be run)."""
    missing = None if time.monotonic() > deadline else missing_modules(python, modules)
    if missing is None:
        o.fail("not run: the suite's time budget (%d s) was spent" % args.budget)
    elif missing:
        o.skip("%s cannot find %s" % (python, ", ".join(missing)))
    else:
        return False
    return True


def missing_modules(python, modules):
    """The module specs ("a|b": either one) that python cannot find, without importing them."""
    missing = []
    for spec in modules:
        key = (python, spec)
        if key not in _module_cache:
            code = ("import importlib.util, sys\n"
                    "sys.exit(0 if any(importlib.util.find_spec(m) for m in sys.argv[1:]) else 1)")
            try:
                rc = subprocess.call([python, "-c", code] + spec.split("|"), stdout=subprocess.DEVNULL,
                                     stderr=subprocess.DEVNULL, timeout=60)
            except (OSError, subprocess.TimeoutExpired):
                rc = 1
            _module_cache[key] = rc == 0
        if not _module_cache[key]:
            missing.append(spec)
    return missing






# ---------------------------------------------------------------------------------------------------------------
# Self-test against hand-made reports


def prepared(case, mode):
    """CASE as the suite runs it under the suite's --mode (None: culprit's default, record). Record mode writes
    sparse breadcrumbs, so any faulty case may end as candidates and is then settled by the blocking rerun over
    their window, as a user would; in precise mode only the concurrent cases may (several streams can hold
    unfinished work at the fault), and a graph's faulting node must be named."""
    case = copy.copy(case)
    if mode in (None, "record") and case.kind == "fault" and not case.healthy and case.mode is None and \
            case.rerun is None:
        case.rerun = "window"
    if mode in ("precise", "blocking"):
        case.need_node = True
    return case





def main(argv):
    parser = argparse.ArgumentParser(description="Run and check culprit's GPU tests.")
    parser.add_argument("--selftest", action="store_true", help="check the checker against tests/gpu/fixtures")
    sub = parser.add_subparsers(dest="command")
    s = sub.add_parser("suite", help="run every case and print the table")
    s.add_argument("--build", required=True, help="build directory with bin/culprit and bin/gpu_*")
    s.add_argument("--logs", required=True, help="directory for logs and copied reports")
    s.add_argument("--timeout", type=int, default=60, help="seconds allowed per program run (default 60)")
    s.add_argument("--budget", type=int,
                   help="seconds for the whole suite; cases not started by then fail as not run (default 480, "
                        "720 with --coredump)")
    s.add_argument("--only", nargs="+",
                   choices=sorted(CASE_BY_NAME) + sorted(PY_CASE_BY_NAME) + sorted(JOB_CASE_BY_NAME) +
                   sorted(DIAG_CASE_BY_NAME) + sorted(GROUPS),
                   help="run only these cases, or groups: c (the C programs), hangs (the spinning C program), "
                        "frameworks (the Python scripts), jobs (the torchrun jobs), diagnose (--diagnose), verdict (the "
                        "exception's text, torchrun's Root Cause)")
    s.add_argument("--mode", choices=("record", "precise"),
                   help="culprit mode for cases that set none (default: culprit's own default, record)")
    s.add_argument("--group", choices=sorted(GROUPS),
                   help="only the cases of this group among those --only selects (run.sh --jobs runs one group "
                        "a process)")
    s.add_argument("--python", default=sys.executable,
                   help="interpreter for the frameworks group (default: the one running this script)")
    s.add_argument("--coredump", action="store_true",
                   help="run every faulty C case and the PyTorch cases torch_xent3d and torch_gather once more as "
                        "`culprit run --coredump` (needs cuda-gdb) and say which were exact in one run")
    sub.add_parser("list", help="list the cases")
    g = sub.add_parser("groups", help="the groups holding cases --only selects, the longest-running first")
    g.add_argument("--only", nargs="+", choices=sorted(CASE_BY_NAME) + sorted(PY_CASE_BY_NAME) +
                   sorted(JOB_CASE_BY_NAME) + sorted(DIAG_CASE_BY_NAME) + sorted(GROUPS))
    args = parser.parse_args(argv)
    if args.selftest:
        import check_selftest
        return check_selftest.selftest()
    if args.command == "suite":
        if args.budget is None:
            args.budget = 720 if args.coredump else 480
        return suite(args)
    if args.command == "groups":
        names = selected(args.only)
        for group in sorted(GROUPS, key=lambda g: (GROUP_ORDER.index(g) if g in GROUP_ORDER else len(GROUP_ORDER), g)):
            if names & set(GROUPS[group]):
                print(group)
        return 0
    if args.command == "list":
        for c in CASES + PY_CASES + JOB_CASES + DIAG_CASES:
            print("%-22s %-10s %s" % (c.name, c.group, c.note))
        return 0
    parser.print_help()
    return 2


jobs_group.bind(globals())
sanitizer_agreement.bind(globals())
frameworks_group.bind(globals())

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
