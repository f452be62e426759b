#!/usr/bin/env python3
"""Runs culprit's GPU test programs and checks what culprit reports about them.

`check.py suite --build DIR --logs DIR` runs every case (built against the static and the shared CUDA runtime)
once without culprit and once under `culprit run`, judges each report against what the program is known to do,
and prints one table and a closing `N passed, N failed` line. tests/gpu/run.sh calls it after building.
After the C programs comes the frameworks group: the Python scripts in tests/gpu/frameworks (torch, Triton,
CuPy, JAX, Lightning, torch.profiler, compute-sanitizer), whose reports are judged by their `python` frames;
a case whose module the interpreter lacks is skipped. Select groups or cases with --only (c, frameworks).
`check.py --selftest` judges the hand-made reports in tests/gpu/fixtures/ (no GPU needed).

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
STICKY = tuple(range(700, 720))  # CUDA's sticky (context-corrupting) error codes
SCHEMA = "culprit.report/1"
# The line a test program prints when a runtime or driver call fails: "...: CUDA error at <call> (...): <message>"
PROGRAM_ERROR = re.compile(r"CUDA error at .*\): (?P<message>.+?)\s*$")


class Case:
    """One scenario: a program (with arguments and environment), how culprit runs it, and what must come out."""

    def __init__(self, name, prog, kernel=None, codes=(700,), api=r"Launch", args=(), env=None, mode=None,
                 stream_kind=None, rerun=None, same_as=None, healthy=False, src=None, graph=False, note=""):
        self.name = name            # case name in the table
        self.prog = prog            # program gpu_<prog>_<cudart>, source tests/gpu/<prog>.cu
        self.src = src or prog + ".cu"  # source file holding the CULPRIT-LAUNCH marker
        self.kernel = kernel        # the faulty kernel's name (substring of the demangled name)
        self.codes = tuple(codes)   # accepted error.code values
        self.api = api              # regular expression error.api must match
        self.args = list(args)      # program arguments
        self.env = dict(env or {})  # extra environment, with and without culprit
        self.mode = mode            # culprit --mode, None for the default (record)
        self.stream_kind = stream_kind  # the culprit's expected stream_kind, None for any
        self.rerun = rerun          # None: exact verdict required; "window": a candidates verdict may be settled
                                    # by a blocking rerun over the candidates' seq window; "full": by a blocking
                                    # rerun of the whole program (launch numbers differ between runs)
        self.same_as = same_as      # another case whose culprit seq this case must repeat
        self.healthy = healthy      # no fault: identical stdout, exit 0, no report
        self.graph = graph          # the fault is in a node of a replayed graph: the culprit is the graph launch
                                    # (at the marker), and `kernel` is the faulting node's, captured at the
                                    # CULPRIT-CAPTURE line
        self.need_node = mode in ("precise", "blocking")  # graph cases: the report must name the node itself
        self.capture_line = 0       # graph cases: the CULPRIT-CAPTURE line, filled in by the suite
        self.note = note            # what the case is about


CASES = [
    Case("oob", "oob", "scatter_grad", api=r"Memcpy|Launch|Synchronize", stream_kind="legacy",
         note="out-of-bounds write, surfaces at a later cudaMemcpy"),
    Case("oob_blocking", "oob", "scatter_grad", api=r".", mode="blocking", stream_kind="legacy", same_as="oob",
         note="--mode blocking must name the same launch, exactly"),
    Case("oob_clb", "oob", "scatter_grad", api=r".", env={"CUDA_LAUNCH_BLOCKING": "1"}, stream_kind="legacy",
         same_as="oob", note="CUDA_LAUNCH_BLOCKING=1 set as well"),
    Case("assert", "assert", "histogram_checked", codes=(710,), api=r"Synchronize|Launch", stream_kind="legacy",
         note="device-side assert()"),
    Case("misaligned", "misaligned", "read_field", codes=(716,), api=r"Synchronize|Launch",
         stream_kind="legacy", note="misaligned 4-byte load"),
    Case("trap", "trap", "check_weights", codes=STICKY, api=r"Synchronize|Launch", stream_kind="legacy",
         note="__trap(); any sticky code is accepted and shown"),
    Case("streams4", "streams4", "gather_rows", api=r"Synchronize|Launch|WriteValue", stream_kind="created",
         rerun="window", note="fault on one of four concurrent streams"),
    Case("threads8", "threads8", "tile_lookup", api=r"Synchronize|Launch|WriteValue", stream_kind="created",
         rerun="full", note="eight host threads with a stream each"),
    Case("surface_sync", "surface", "relax_step", api=r"Synchronize", args=["sync"], stream_kind="created",
         note="surfaces at cudaDeviceSynchronize"),
    Case("surface_memcpy", "surface", "relax_step", api=r"Memcpy", args=["memcpy"], stream_kind="created",
         note="surfaces at cudaMemcpy"),
    Case("surface_streamsync", "surface", "relax_step", api=r"StreamSynchronize", args=["streamsync"],
         stream_kind="created", note="surfaces at cudaStreamSynchronize"),
    Case("surface_free", "surface", "relax_step", api=r"Free", args=["free"], stream_kind="created",
         note="surfaces at cudaFree"),
    Case("ptds", "ptds", "segment_add", api=r"Synchronize|Launch", stream_kind="per-thread",
         note="built with --default-stream per-thread"),
    Case("driver_api", "driver_api", "drv_scatter", api=r"Memcpy|Launch", stream_kind="created",
         src="driver_api.cpp",
         note="driver API (cuModuleLoadData + cuLaunchKernel), linked with -lcuda"),
    Case("launch_ex", "launch_ex", "tile_copy", api=r"Synchronize|Launch", stream_kind="created",
         note="cudaLaunchKernelEx with a cluster attribute"),
    Case("graph", "graph", "scatter_tokens", api=r"Synchronize|Launch", stream_kind="created", graph=True,
         note="fault in a node of a replayed CUDA graph (stream capture)"),
    Case("graph_precise", "graph", "scatter_tokens", api=r"Synchronize|Launch", stream_kind="created", graph=True,
         mode="precise", note="the same in precise mode: graph breadcrumbs name the faulting node"),
    Case("healthy", "healthy", healthy=True, note="no fault: same stdout, exit 0, no report"),
]
CASE_BY_NAME = {c.name: c for c in CASES}
CUDARTS = ("static", "shared")
Case.group = "c"  # the C programs' group, for --only

# ---------------------------------------------------------------------------------------------------------------
# The frameworks group: Python scripts in tests/gpu/frameworks, run with the test machine's interpreter. The
# faulty call carries a trailing "# CULPRIT-LAUNCH", and where the error surfaces at a known line that line
# carries "# CULPRIT-SURFACE"; the report's `python` frames must hold those lines (basename and line number).

FRAMEWORKS = os.path.join(HERE, "frameworks")
PY_LAUNCH = "# CULPRIT-LAUNCH"
PY_SURFACE = "# CULPRIT-SURFACE"
PY_LINE = "python line"  # in the text of every Python-frame problem, so partial support shows as FAIL(py)
# Kernel names cuBLAS and cuDNN use (checked loosely): GEMMs (gemm, gemv, nvjet on Hopper with recent cuBLAS,
# cutlass, xmma, sm90_...), convolutions (conv, fprop, implicit, winograd, cudnn) and cuDNN's layout transforms.
LIBRARY_KERNEL = re.compile(r"gemm|gemv|nvjet|cutlass|xmma|cublas|cudnn|conv|fprop|implicit|winograd|"
                            r"nchwToNhwc|nhwcToNchw|sm\d\d_", re.I)
# The last line of a Python traceback: "module.ErrorName: message".
EXCEPTION_LINE = re.compile(r"^[A-Za-z_][\w.]*(?:Error|Exception)(?::.*)?$")


class PyCase:
    """One Python script run under `culprit run`, and what must come out of it."""

    group = "frameworks"
    mode = None       # the first run's mode is the suite's --mode (default: culprit's own, record)
    api = r"."        # any surfacing driver call
    args = ()         # script arguments
    rerun = "window"  # a candidates verdict is settled by a blocking rerun over the candidates' window

    def __init__(self, name, script, kernel=None, codes=(710,), modules=("torch",), kind="fault", env=None,
                 graph=False, library_history=False, stdout_count=None, stdout_expect=(), surface_at_launch=False,
                 note=""):
        self.name = name            # case name in the table
        self.script = script        # file in tests/gpu/frameworks (the sanitizer case: none)
        self.src = script           # where the markers are
        self.kernel = kernel        # regular expression the culprit's kernel name must match
        self.codes = tuple(codes)   # accepted error.code values
        self.modules = tuple(modules)  # modules the script needs ("a|b": either); missing means skipped
        self.kind = kind            # fault | healthy | sanitizer
        self.env = dict(env or {})  # extra environment, with and without culprit
        self.graph = graph          # a CUDA graph launch at the marked line is an accepted culprit
        self.library_history = library_history  # history must hold a cuBLAS/cuDNN kernel
        self.stdout_count = stdout_count  # healthy: regular expression whose group 1 must be a count > 0
        # regular expressions each of which must match a line of stdout under culprit; {report_name} stands for
        # the file name of the report culprit wrote
        self.stdout_expect = tuple(stdout_expect)
        self.surface_at_launch = surface_at_launch  # the error must surface at the marked launch line itself
        self.note = note            # what the case is about
        self.healthy = kind == "healthy"


PY_CASES = [
    PyCase("torch_xent3d", "xent_seg3d.py", r"nll_loss",
           note="cross_entropy on 3D segmentation logits, one label == C; surfaces at loss.item()"),
    PyCase("torch_embedding", "embedding_oob.py", r"indexSelect|vectorized_gather",
           note="nn.Embedding id == vocabulary size (forward is index_select)"),
    PyCase("torch_gather", "gather_oob.py", r"gather", note="torch.gather position == row length"),
    PyCase("torch_index_select", "index_select_oob.py", r"indexSelect|vectorized_gather", note="index_select id past the end"),
    PyCase("torch_backward", "backward_index_add.py", r"indexFunc|index_?add",
           note="index_add_ in backward on the autograd engine thread; line = loss.backward()"),
    PyCase("torch_empty_cache", "empty_cache_surface.py", r"indexSelect|vectorized_gather",
           note="fault surfaces at torch.cuda.empty_cache()"),
    PyCase("triton_store", "triton_store_oob.py", r"dispatch_tokens_kernel", codes=(700,),
           modules=("torch", "triton"), note="unmasked Triton store through a slot of 1 << 34 rows"),
    PyCase("cupy_rawkernel", "cupy_rawkernel_oob.py", r"scatter_rows", codes=(700,), modules=("cupy",),
           note="CuPy RawKernel write through a row of 1 << 34"),
    PyCase("jax_healthy", "jax_healthy.py", kind="healthy", modules=("jax",),
           env={"XLA_PYTHON_CLIENT_PREALLOCATE": "false"}, note="jitted matmul + softmax: same stdout, no report"),
    PyCase("torch_library_history", "library_history.py", r"indexSelect|vectorized_gather", library_history=True,
           note="cuDNN conv and cuBLAS GEMM kernels named in the history"),
    PyCase("torch_cuda_graph", "cuda_graph_replay.py", r"index", graph=True,
           note="fault inside a replayed torch.cuda.CUDAGraph; line = replay()"),
    PyCase("torch_profiler", "profiler_healthy.py", kind="healthy", stdout_count=r"cuda kernel events: (\d+)",
           note="torch.profiler (CUPTI) still sees CUDA kernels"),
    PyCase("sanitizer_memcheck", None, kind="sanitizer", modules=(),
           note="culprit run -- compute-sanitizer --tool memcheck gpu_oob_static"),
    PyCase("lightning_embedding", "lightning_embedding.py", r"indexSelect|vectorized_gather",
           modules=("torch", "lightning|pytorch_lightning"),
           note="Lightning training_step embedding error at step 3"),
    PyCase("package_scopes", "package_scopes.py", r"nll_loss", surface_at_launch=True,
           stdout_expect=(r"^loaded True$", r"^mode while paused off$", r"^mode in scope blocking$",
                          r"^mode after the exception record$", r"^last report \S*/{report_name}$"),
           note="the culprit package: paused() warm-up, blocking(kernels='*nll*') reports at the launch"),
]
PY_CASE_BY_NAME = {c.name: c for c in PY_CASES}
GROUPS = {"c": [c.name for c in CASES], "frameworks": [c.name for c in PY_CASES]}
assert not set(CASE_BY_NAME) & set(PY_CASE_BY_NAME), "case names must be unique across groups"


class Run:
    """What one execution of a program left behind."""

    def __init__(self, rc=0, stdout=b"", stderr="", timed_out=False, reports=None, argv=None):
        self.rc = rc                  # exit status (negative: killed by that signal)
        self.stdout = stdout          # stdout bytes
        self.stderr = stderr          # stderr text
        self.timed_out = timed_out    # killed by the per-run timeout
        self.reports = reports or []  # [(path, parsed JSON or an error string)]
        self.argv = argv or []        # the command line, for the logs


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


def judge(case, cudart, want_line, base, run, ref_seq=None):
    """Judges one case from its run without culprit (base) and under culprit (run)."""
    out = Outcome(case, cudart)
    if base.rc == SKIP_STATUS or run.rc == SKIP_STATUS:
        out.skip("no CUDA device")
        return out
    if base.rc == 127 and "libcuda.so" in base.stderr:
        out.skip("no CUDA driver (libcuda.so.1 not found)")
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

    verdict = report.get("verdict") or {}
    certainty = verdict.get("certainty")
    out.certainty = str(certainty)
    if certainty == "exact":
        culprit = report.get("culprit")
        out.named = str((culprit or {}).get("kernel", "-"))
        out.line = launch_where(culprit, case, want_line)
        out.seq = (culprit or {}).get("seq")
        if case.graph:
            graph_note(out, culprit)
        problems = launch_problems(culprit, case, want_line)
        for p in problems:
            out.fail("culprit: " + p)
        if ref_seq is not None and out.seq != ref_seq:
            out.fail("culprit is launch #%s, %s named #%s" % (out.seq, case.same_as, ref_seq))
        out.path = "exact"
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
# Judging the frameworks group


def py_markers(text, src="script", healthy=False):
    """(launch line, surface line or None) of a script: one CULPRIT-LAUNCH (none if healthy), at most one
    CULPRIT-SURFACE."""
    lines = text.splitlines()
    launch = [i + 1 for i, line in enumerate(lines) if line.rstrip().endswith(PY_LAUNCH)]
    surface = [i + 1 for i, line in enumerate(lines) if line.rstrip().endswith(PY_SURFACE)]
    if len(launch) != (0 if healthy else 1):
        raise ValueError("%s: expected %d %r line, found %d" % (src, 0 if healthy else 1, PY_LAUNCH, len(launch)))
    if len(surface) > 1:
        raise ValueError("%s: expected at most one %r line, found %d" % (src, PY_SURFACE, len(surface)))
    return (launch[0] if launch else 0), (surface[0] if surface else None)


def python_problems(frames, script, want_line, what, status=None):
    """What keeps a `python` frame list from holding script:want_line; every text holds PY_LINE."""
    frames = [f for f in frames or [] if isinstance(f, dict)]
    if not frames:
        return ["%s missing: the %s has no python frames%s" % (
            PY_LINE, what, " (python_status %r)" % status if status else "")]
    mine = [f for f in frames if frame_file(f) == script]
    if not mine:
        inner = frames[0]
        return ["%s missing: no %s frame in %s (innermost %s:%s)" % (PY_LINE, what, script, frame_file(inner),
                                                                    inner.get("line"))]
    if not any(f.get("line") == want_line for f in mine):
        return ["%s wrong: %s frames at %s, expected %s:%d" % (
            PY_LINE, what, ", ".join("%s:%s" % (script, f.get("line")) for f in mine), script, want_line)]
    return []


def python_where(frames, script, want_line):
    """The script frame as file:line: the marked one if present, else the innermost in the script."""
    mine = [f for f in frames or [] if isinstance(f, dict) and frame_file(f) == script]
    for f in mine:
        if f.get("line") == want_line:
            return "%s:%d" % (script, want_line)
    return "%s:%s" % (script, mine[0].get("line")) if mine else "-"


def py_launch_problems(launch, case, want_line, status=None, threads=None):
    """What is wrong with a LAUNCH object as the culprit of a Python case; empty when it is the faulty launch.
    A launch made by a thread without Python (the autograd engine) may have its line in the report's
    python_threads instead: where the Python thread waiting on it was when the error surfaced."""
    if not isinstance(launch, dict):
        return ["no launch object"]
    problems = []
    kernel = str(launch.get("kernel") or launch.get("mangled") or "")
    if not (case.graph and launch.get("kind") == "graph") and not re.search(case.kernel, kernel):
        problems.append("kernel %r does not match %r" % (kernel, case.kernel))
    if not launch.get("python"):
        for t in threads or []:
            if isinstance(t, dict) and not python_problems(t.get("python"), case.script, want_line, "thread", status):
                return problems
    return problems + python_problems(launch.get("python"), case.script, want_line, "launch", status)


def graph_note(out, launch):
    """For the graph case: whether culprit named the graph launch or a node inside it."""
    if not isinstance(launch, dict):
        return
    node = launch.get("node")
    if launch.get("kind") == "graph" and isinstance(node, dict):
        # past nvcc's launch stubs (toolkit headers) and the kernel's own host function, as the report says it
        where = [f for f in (node.get("python") or []) + (node.get("stack") or [])
                 if isinstance(f, dict) and f.get("line") and "/include/crt/" not in str(f.get("file"))
                 and not str(f.get("file")).endswith(".stub.c") and f.get("function") != node.get("kernel")]
        out.notes.append("node-level: graph launch #%s, node #%s %s%s (%s)" % (
            launch.get("seq"), node.get("seq"), str(node.get("kernel") or node.get("mangled") or "?")[:60],
            ", captured at %s:%s" % (frame_file(where[0]) or where[0].get("file"), where[0].get("line"))
            if where else "", launch.get("node_source") or "?"))
    elif launch.get("kind") == "graph":
        out.notes.append("graph-level: the culprit is the graph launch %r" % launch.get("kernel"))
    else:
        out.notes.append("node-level: the culprit is kernel %r (kind %r)" % (launch.get("kernel"), launch.get("kind")))


def exception_line(stderr):
    """The last line of the Python traceback in stderr, or None."""
    found = [line.strip() for line in stderr.splitlines() if EXCEPTION_LINE.match(line.strip())]
    return found[-1] if found else None


def py_skip_reason(run):
    """Why a script did not run here (no device, a module missing), or None."""
    lines = [line for line in run.stderr.splitlines() if line.strip()]
    if run.rc == SKIP_STATUS:
        return lines[-1].strip() if lines else "the script skipped itself"
    for line in lines:
        if "ModuleNotFoundError:" in line:
            return line.strip()
    return None


def py_check_process(out, base, run, what):
    """Exit status, timeout and the script's own exception under culprit, compared with the plain run."""
    if not check_exit(out, base, run, what):
        return
    wanted = exception_line(base.stderr)
    if wanted and wanted not in run.stderr:
        out.fail("%s: the script's own exception %r is missing from stderr" % (what, shorten(wanted, 80)))


def check_library_history(out, report):
    """The launches the report lists besides the culprit (history, candidates, and the candidates a device assert
    ruled out) must name at least one cuBLAS/cuDNN kernel; notes what was seen."""
    launches = [l for key in ("history", "candidates", "candidates_before_assert") for l in (report.get(key) or [])
                if isinstance(l, dict)]
    names = [str(l.get("kernel") or l.get("mangled") or "") for l in launches]
    unnamed = sum(1 for n in names if not n)
    hits = [n for n in names if LIBRARY_KERNEL.search(n)]
    if unnamed:
        out.fail("%d history launches have no kernel name" % unnamed)
    if hits:
        gemm = [n for n in hits if re.search(r"gemm|gemv|nvjet|cublas", n, re.I)]
        conv = [n for n in hits if re.search(r"conv|fprop|implicit|winograd|cudnn|nchw|nhwc", n, re.I)]
        out.notes.append("library kernels in history: %d (GEMM-like %d, conv-like %d): %s" % (
            len(hits), len(gemm), len(conv), "; ".join(shorten(n, 60) for n in hits[:4])))
    else:
        out.fail("no cuBLAS/cuDNN kernel in the history; seen: %s" % (
            "; ".join(shorten(n, 50) for n in names) or "nothing"))


def judge_py(case, want_line, surface_line, base, run):
    """Judges one Python case from its run without culprit (base) and under culprit (run)."""
    out = Outcome(case, "python")
    reason = py_skip_reason(base) or (py_skip_reason(run) if run.rc == SKIP_STATUS else None)
    if reason:
        out.skip(reason)
        return out
    if base.timed_out:
        out.fail("timed out without culprit")
        return out

    if case.healthy:
        judge_healthy(out, base, run, py_check_process)
        if case.stdout_count:
            m = re.search(case.stdout_count, base.stdout.decode("utf-8", "replace"))
            if not m or int(m.group(1)) <= 0:
                out.fail("stdout shows no %r count above 0" % case.stdout_count)
            else:
                out.notes.append(m.group(0))
        return out

    if base.rc == 0:
        out.fail("the script did not fail without culprit")
    py_check_process(out, base, run, "under culprit")
    report = checked_report(out, case, run)
    if report is None:
        return out
    if case.surface_at_launch:
        surface_line = want_line
    for pattern in case.stdout_expect:
        pattern = pattern.replace("{report_name}", re.escape(os.path.basename(run.reports[0][0])))
        if not re.search(pattern, run.stdout.decode("utf-8", "replace"), re.M):
            out.fail("stdout under culprit has no line matching %r" % pattern)
    status = report.get("python_status")
    error = report.get("error") or {}
    where = python_where(error.get("python"), case.script, surface_line or 0)
    if where != "-":  # the Python line first: the driver call is the less telling half, and may be cut
        out.surfaced = "%s (%s) %s" % (where, error.get("code"), error.get("api") or "?")
    if surface_line:
        for p in python_problems(error.get("python"), case.script, surface_line, "error", status):
            out.fail("error: " + p)
    if case.library_history:
        check_library_history(out, report)

    verdict = report.get("verdict") or {}
    certainty = verdict.get("certainty")
    out.certainty = str(certainty)
    if certainty == "exact":
        culprit = report.get("culprit")
        out.named = str((culprit or {}).get("kernel", "-"))
        out.line = python_where((culprit or {}).get("python"), case.script, want_line)
        out.seq = (culprit or {}).get("seq")
        for p in py_launch_problems(culprit, case, want_line, status, report.get("python_threads")):
            out.fail("culprit: " + p)
        if case.graph:
            graph_note(out, culprit)
        out.path = "exact"
        return out
    if certainty == "candidates":
        candidates = [c for c in report.get("candidates") or [] if isinstance(c, dict)]
        out.named = "%d candidates" % len(candidates)
        threads = report.get("python_threads")
        hits = [c for c in candidates if not py_launch_problems(c, case, want_line, status, threads)]
        if not hits:
            near = [c for c in candidates if not [p for p in py_launch_problems(c, case, want_line, status, threads)
                                                  if PY_LINE not in p]]
            if near:
                out.line = python_where(near[0].get("python"), case.script, want_line)
                out.fail("candidate #%s is the faulty kernel, but: %s" % (
                    near[0].get("seq"), "; ".join(py_launch_problems(near[0], case, want_line, status, threads))))
            else:
                out.fail("the faulty launch is not among the %d candidates" % len(candidates))
            return out
        out.line = python_where(hits[0].get("python"), case.script, want_line)
        seqs = [c.get("seq") for c in candidates if isinstance(c.get("seq"), int)]
        if len(seqs) == len(candidates) and seqs:
            out.window = (min(seqs), max(seqs))
        if out.status == "pass":
            out.status = "rerun"
        return out
    out.fail("verdict certainty %r, expected exact or candidates" % (certainty,))
    return out


def judge_py_rerun(out, want_line, base, rerun):
    """The frameworks group's blocking rerun: the culprit's Python line must be the marked one."""
    case = out.case
    report = settle_rerun(out, base, rerun, py_check_process,
                          lambda c: python_where((c or {}).get("python"), case.script, want_line),
                          lambda c, rep: py_launch_problems(c, case, want_line, rep.get("python_status"),
                                                            rep.get("python_threads")))
    if report is not None and case.graph:
        graph_note(out, report.get("culprit"))
    return out


SANITIZER_WRITE = "Invalid __global__ "  # read or write: the oob kernel reads out of bounds first
SANITIZER_SUMMARY = re.compile(r"ERROR SUMMARY: (\d+) error")
SANITIZER_UNSUPPORTED = re.compile(r"(device|gpu)[^\n]*not supported|unsupported (device|gpu)", re.I)


def judge_sanitizer(case, base, run):
    """compute-sanitizer under culprit must still find the C suite's out-of-bounds write and end as it does
    alone. A report from the target is noted, not required (the sanitizer may own the preload)."""
    out = Outcome(case, "static")
    out.certainty = "-"
    plain = base.stdout.decode("utf-8", "replace") + base.stderr
    under = run.stdout.decode("utf-8", "replace") + run.stderr
    if SANITIZER_WRITE not in plain:
        m = SANITIZER_UNSUPPORTED.search(plain)
        if m or base.rc == SKIP_STATUS:
            out.skip("compute-sanitizer: %s" % (m.group(0) if m else "no CUDA device"))
            return out
    if base.timed_out:
        out.fail("timed out without culprit")
        return out
    if SANITIZER_WRITE not in plain:
        out.fail("compute-sanitizer reported no %r without culprit" % SANITIZER_WRITE)
    if run.timed_out:
        out.fail("under culprit: timed out")
        return out
    if run.rc != base.rc:
        out.fail("under culprit: exit status %d, %d without culprit" % (run.rc, base.rc))
    if SANITIZER_WRITE not in under:
        out.fail("under culprit: compute-sanitizer's %r report is missing" % SANITIZER_WRITE)
    counts = [SANITIZER_SUMMARY.search(t) for t in (plain, under)]
    if not counts[1] or int(counts[1].group(1)) == 0:
        out.fail("under culprit: no nonzero ERROR SUMMARY")
    out.surfaced = "ERROR SUMMARY %s/%s" % tuple(m.group(1) if m else "?" for m in counts)
    if all(counts) and counts[0].group(1) != counts[1].group(1):
        out.notes.append("ERROR SUMMARY %s alone, %s under culprit (failing API calls are counted)" % (
            counts[0].group(1), counts[1].group(1)))
    if run.reports and isinstance(run.reports[0][1], dict):
        report = run.reports[0][1]
        culprit = report.get("culprit") or {}
        out.named = str(culprit.get("kernel", "-"))
        out.notes.append("the target also wrote a report: %s, culprit %r" % (
            (report.get("verdict") or {}).get("certainty"), culprit.get("kernel")))
    else:
        out.notes.append("no culprit report from the target under compute-sanitizer")
    return out


# ---------------------------------------------------------------------------------------------------------------
# Output


def shorten(text, width):
    text = str(text)
    return text if len(text) <= width else text[: width - 3] + "..."


def table(outcomes):
    """The result table and the closing line, as a list of lines."""
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
    lines.append(closing)
    return lines


# ---------------------------------------------------------------------------------------------------------------
# Running the programs


def clean_env(extra):
    """The caller's environment without culprit's or CUDA_LAUNCH_BLOCKING settings, plus the case's own."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("CULPRIT_") and k != "CUDA_LAUNCH_BLOCKING"}
    env.update(extra)
    return env


def execute(argv, env, timeout, report_dir=None, cwd=None):
    """Runs argv in its own process group with a timeout; collects its output and any reports."""
    run = Run(argv=list(argv))
    try:
        proc = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                start_new_session=True, cwd=cwd)
    except OSError as e:
        run.rc, run.stderr = 127, "cannot start %s: %s\n" % (argv[0], e)
        return run
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except OSError:
            pass
        out, err = proc.communicate()
        run.timed_out = True
    run.rc = proc.returncode
    run.stdout = out
    run.stderr = err.decode("utf-8", "replace")
    if report_dir and os.path.isdir(report_dir):
        for name in sorted(os.listdir(report_dir)):
            if name.startswith("culprit-") and name.endswith(".json"):
                path = os.path.join(report_dir, name)
                try:
                    with open(path, encoding="utf-8") as f:
                        run.reports.append((path, json.load(f)))
                except (OSError, ValueError) as e:
                    run.reports.append((path, str(e)))
    return run


def save_logs(logs, stem, run):
    with open(os.path.join(logs, stem + ".out"), "wb") as f:
        f.write(run.stdout)
    with open(os.path.join(logs, stem + ".err"), "w", encoding="utf-8") as f:
        f.write("$ %s\n" % " ".join(run.argv))
        f.write(run.stderr)
        f.write("\n[exit status %d%s]\n" % (run.rc, ", timed out" if run.timed_out else ""))
    for i, (path, _) in enumerate(run.reports):
        suffix = "" if i == 0 else ".%d" % i
        shutil.copyfile(path, os.path.join(logs, stem + suffix + ".json"))


def fresh_dir(path):
    """An empty directory at path (culprit writes the run's reports there)."""
    shutil.rmtree(path, ignore_errors=True)
    os.makedirs(path)
    return path


def suite(args):
    build = os.path.abspath(args.build)
    logs = os.path.abspath(args.logs)
    culprit = os.path.join(build, "bin", "culprit")
    os.makedirs(logs, exist_ok=True)
    names = selected(args.only)
    cases = [c for c in CASES if c.name in names]
    py_cases = [c for c in PY_CASES if c.name in names]
    lines = {}
    outcomes = []
    seqs = {}  # (case, cudart) -> culprit seq, for same_as
    total = len(cases) * len(CUDARTS) + len(py_cases)
    deadline = time.monotonic() + args.budget

    for case in cases:
        case = prepared(case, args.mode)
        try:
            with open(os.path.join(HERE, case.src), encoding="utf-8") as f:
                text = f.read()
            lines[case.name] = marker_line(text, case.src) if not case.healthy else 0
            if case.graph:
                case.capture_line = marker_line(text, case.src, CAPTURE_MARKER)
        except (OSError, ValueError) as e:
            for cudart in CUDARTS:
                o = Outcome(case, cudart)
                o.fail(str(e))
                outcomes.append(o)
            continue
        for cudart in CUDARTS:
            stem = "%s_%s" % (case.name, cudart)
            exe = os.path.join(build, "bin", "gpu_%s_%s" % (case.prog, cudart))
            want = lines[case.name]
            print("[%2d/%d] %-20s %-6s ..." % (len(outcomes) + 1, total, case.name, cudart), end=" ", flush=True)
            if time.monotonic() > deadline:
                o = Outcome(case, cudart)
                o.fail("not run: the suite's time budget (%d s) was spent" % args.budget)
                outcomes.append(o)
                print("FAIL")
                continue
            if not os.access(exe, os.X_OK):
                o = Outcome(case, cudart)
                o.fail("%s is not built" % exe)
                outcomes.append(o)
                print("FAIL")
                continue
            env = clean_env(case.env)
            base = execute([exe] + case.args, env, args.timeout)
            save_logs(logs, stem + ".plain", base)

            report_dir = fresh_dir(os.path.join(logs, "reports", stem))
            cmd = [culprit, "run", "--dir", report_dir]
            if case.mode or args.mode:
                cmd += ["--mode", case.mode or args.mode]
            run = execute(cmd + ["--", exe] + case.args, env, args.timeout, report_dir)
            save_logs(logs, stem + ".culprit", run)

            ref = seqs.get((case.same_as, cudart)) if case.same_as else None
            o = judge(case, cudart, want, base, run, ref)
            if o.status == "rerun":
                rerun_dir = fresh_dir(os.path.join(logs, "reports", stem + ".rerun"))
                cmd = [culprit, "run", "--dir", rerun_dir, "--mode", "blocking"]
                if o.window:
                    cmd += ["--launches", "%d:%d" % o.window]
                rerun = execute(cmd + ["--", exe] + case.args, env, args.timeout, rerun_dir)
                save_logs(logs, stem + ".rerun", rerun)
                judge_rerun(o, want, base, rerun)
            if o.status == "pass" and o.seq is not None and o.path == "exact":
                seqs[(case.name, cudart)] = o.seq
            outcomes.append(o)
            if o.status == "pass":
                print("pass" + (" (%s)" % o.path if o.path else ""))
            else:
                print({"skip": "skip"}.get(o.status, "FAIL"))

    outcomes += frameworks_suite(args, py_cases, culprit, logs, deadline, len(outcomes), total)

    print("\nlogs and reports: %s\n" % logs)
    for line in table(outcomes):
        print(line)
    return 1 if any(o.status in ("fail", "rerun") for o in outcomes) else 0


def selected(only):
    """The case names --only selects (case names or group names); all cases without it."""
    if not only:
        return set(CASE_BY_NAME) | set(PY_CASE_BY_NAME)
    names = set()
    for name in only:
        names.update(GROUPS.get(name, [name]))
    return names


_module_cache = {}


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


def find_sanitizer():
    """compute-sanitizer on PATH, else in the CUDA toolkit's bin directory; None if neither."""
    found = shutil.which("compute-sanitizer")
    if found:
        return found
    for home in (os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda"):
        if home and os.access(os.path.join(home, "bin", "compute-sanitizer"), os.X_OK):
            return os.path.join(home, "bin", "compute-sanitizer")
    return None


def frameworks_suite(args, cases, culprit, logs, deadline, done, total):
    """Runs the Python cases (each once without culprit and once under it) and judges them."""
    outcomes = []
    python = args.python
    for case in cases:
        stem = case.name
        print("[%2d/%d] %-20s %-6s ..." % (done + len(outcomes) + 1, total, case.name, "python"), end=" ",
              flush=True)
        o = run_py_case(args, case, culprit, logs, stem, python, deadline)
        outcomes.append(o)
        if o.status == "pass":
            print("pass" + (" (%s)" % o.path if o.path else ""))
        else:
            print({"skip": "skip"}.get(o.status, "FAIL"))
    return outcomes


def run_py_case(args, case, culprit, logs, stem, python, deadline):
    """One Python case: skip checks, the two runs, the judgement and, for candidates, the blocking rerun."""
    o = Outcome(case, "static" if case.kind == "sanitizer" else "python")
    if time.monotonic() > deadline:
        o.fail("not run: the suite's time budget (%d s) was spent" % args.budget)
        return o
    missing = missing_modules(python, case.modules)
    if missing:
        o.skip("%s cannot find %s" % (python, ", ".join(missing)))
        return o
    env = clean_env(case.env)
    work = fresh_dir(os.path.join(logs, "work", stem))  # the scripts' working directory (Lightning may write)

    if case.kind == "sanitizer":
        sanitizer = find_sanitizer()
        exe = os.path.join(os.path.abspath(args.build), "bin", "gpu_oob_static")
        if not sanitizer:
            o.skip("compute-sanitizer not found (PATH, CUDA_HOME/bin)")
            return o
        if not os.access(exe, os.X_OK):
            o.fail("%s is not built" % exe)
            return o
        cmd = [sanitizer, "--tool", "memcheck", exe]
        base = execute(cmd, env, args.timeout, cwd=work)
        save_logs(logs, stem + ".plain", base)
        report_dir = fresh_dir(os.path.join(logs, "reports", stem))
        run = execute([culprit, "run", "--dir", report_dir, "--"] + cmd, env, args.timeout, report_dir, cwd=work)
        save_logs(logs, stem + ".culprit", run)
        return judge_sanitizer(case, base, run)

    script = os.path.join(FRAMEWORKS, case.script)
    try:
        with open(script, encoding="utf-8") as f:
            want, surface = py_markers(f.read(), case.script, case.healthy)
    except (OSError, ValueError) as e:
        o.fail(str(e))
        return o
    cmd = [python, script] + list(case.args)
    base = execute(cmd, env, args.timeout, cwd=work)
    save_logs(logs, stem + ".plain", base)
    report_dir = fresh_dir(os.path.join(logs, "reports", stem))
    # --mode applies here too, but not to a case that checks what the package says of the default mode
    mode = ["--mode", args.mode] if args.mode and not case.stdout_expect else []
    run = execute([culprit, "run", "--dir", report_dir] + mode + ["--"] + cmd, env, args.timeout, report_dir,
                  cwd=work)
    save_logs(logs, stem + ".culprit", run)
    o = judge_py(case, want, surface, base, run)
    if o.status == "rerun":
        rerun_dir = fresh_dir(os.path.join(logs, "reports", stem + ".rerun"))
        rerun_cmd = [culprit, "run", "--dir", rerun_dir, "--mode", "blocking"]
        if o.window:
            rerun_cmd += ["--launches", "%d:%d" % o.window]
        rerun = execute(rerun_cmd + ["--"] + cmd, env, args.timeout, rerun_dir, cwd=work)
        save_logs(logs, stem + ".rerun", rerun)
        judge_py_rerun(o, want, base, rerun)
    return o


# ---------------------------------------------------------------------------------------------------------------
# Self-test against hand-made reports


def fixture(name):
    path = os.path.join(FIXTURES, name)
    try:
        with open(path, encoding="utf-8") as f:
            return (path, json.load(f))
    except ValueError as e:
        return (path, str(e))


MSG_700 = "gpu-test: CUDA error at cudaMemcpy(...) (oob.cu:82): an illegal memory access was encountered\n"
MSG_TRAP = "gpu-test: CUDA error at cudaDeviceSynchronize() (trap.cu:40): unspecified launch failure\n"
MSG_FREE = "gpu-test: CUDA error at cudaFree(b) (surface.cu:66): an illegal memory access was encountered\n"
MSG_THREADS = ("gpu-test: CUDA error at cudaDeviceSynchronize() (threads8.cu:69): an illegal memory access was "
               "encountered\n")
MSG_GRAPH = ("gpu-test: CUDA error at cudaStreamSynchronize(st) (graph.cu:61): an illegal memory access was "
             "encountered\n")
MSG_STREAMS = ("gpu-test: CUDA error at cudaDeviceSynchronize() (streams4.cu:78): an illegal memory access was "
               "encountered\n")


def prepared(case, mode):
    """CASE as the suite runs it under the suite's --mode (None: culprit's default, record). Record mode writes
    sparse breadcrumbs, so any faulty case may end as candidates and is then settled by the blocking rerun over
    their window, as a user would; in precise mode only the concurrent cases may (several streams can hold
    unfinished work at the fault), and a graph's faulting node must be named."""
    case = copy.copy(case)
    if mode in (None, "record") and not case.healthy and case.mode is None and case.rerun is None:
        case.rerun = "window"
    if mode in ("precise", "blocking"):
        case.need_node = True
    return case


def selftests():
    """(title, case, want_line, base, run, rerun or None, ref_seq, expected status, expected reason text)."""
    oob, streams, trap = CASE_BY_NAME["oob"], CASE_BY_NAME["streams4"], CASE_BY_NAME["trap"]
    threads, healthy = CASE_BY_NAME["threads8"], CASE_BY_NAME["healthy"]
    free, blocking = CASE_BY_NAME["surface_free"], CASE_BY_NAME["oob_blocking"]
    fail_base = Run(rc=1, stderr=MSG_700)
    graph, graph_precise = copy.copy(CASE_BY_NAME["graph"]), copy.copy(CASE_BY_NAME["graph_precise"])
    graph.capture_line = graph_precise.capture_line = 50
    graph_base = Run(rc=1, stderr=MSG_GRAPH)

    def under(name, rc=1, stderr=MSG_700):
        return Run(rc=rc, stderr="culprit: verdict ...\n" + stderr, reports=[fixture(name)])

    return [
        ("graph: the node named, captured at the marker", graph_precise, 60, graph_base,
         under("graph_node.json", stderr=MSG_GRAPH), None, None, "pass", ""),
        ("graph, record mode: the node found among the graph's nodes", graph, 60, graph_base,
         under("graph_no_node.json", stderr=MSG_GRAPH), None, None, "pass", ""),
        ("graph, precise mode: the node must be named", graph_precise, 60, graph_base,
         under("graph_no_node.json", stderr=MSG_GRAPH), None, None, "fail", "faulting node is not named"),
        ("graph: node captured at another line", graph_precise, 60, graph_base,
         under("graph_node_wrong_line.json", stderr=MSG_GRAPH), None, None, "fail",
         "capture line graph.cu:44, expected graph.cu:50"),
        ("graph: another node named", graph_precise, 60, graph_base,
         under("graph_node_wrong_kernel.json", stderr=MSG_GRAPH), None, None, "fail", "is not scatter_tokens"),
        ("graph: replay line wrong", graph_precise, 59, graph_base,
         under("graph_node.json", stderr=MSG_GRAPH), None, None, "fail", "launch line graph.cu:60, expected"),
        ("graph: a kernel culprit is not the graph launch", graph, 80, fail_base, under("oob_exact.json"), None,
         None, "fail", "expected the graph launch"),
        ("exact verdict at the marker line", oob, 80, fail_base, under("oob_exact.json"), None, None,
         "pass", ""),
        ("inlined wrapper frame before the launching frame", oob, 80, fail_base, under("oob_inlined.json"), None,
         None, "pass", ""),
        ("launching frame at another line", oob, 80, fail_base, under("oob_wrong_line.json"), None, None,
         "fail", "launch line oob.cu:34, expected oob.cu:80"),
        ("wrong kernel named", oob, 80, fail_base, under("oob_wrong_kernel.json"), None, None,
         "fail", "is not scatter_grad"),
        ("wrong error code", oob, 80, fail_base, under("oob_code_710.json"), None, None,
         "fail", "error.code 710, expected 700"),
        ("unknown verdict", oob, 80, fail_base, under("oob_unknown.json"), None, None,
         "fail", "certainty 'unknown'"),
        ("no report", oob, 80, fail_base, Run(rc=1, stderr=MSG_700), None, None, "fail", "no report written"),
        ("unreadable report", oob, 80, fail_base, under("broken.json"), None, None, "fail", "unreadable"),
        ("exit status changed", oob, 80, fail_base, under("oob_exact.json", rc=0), None, None,
         "fail", "exit status 0, 1 without culprit"),
        ("program's message lost", oob, 80, fail_base, under("oob_exact.json", stderr=""), None, None,
         "fail", "own error message"),
        ("did not fault without culprit", oob, 80, Run(rc=0), under("oob_exact.json"), None, None,
         "fail", "did not fail without culprit"),
        ("no device", oob, 80, Run(rc=SKIP_STATUS), Run(rc=SKIP_STATUS), None, None, "skip", "no CUDA device"),
        ("no driver library for a -lcuda program", oob, 80,
         Run(rc=127, stderr="gpu_driver_api_static: error while loading shared libraries: libcuda.so.1: cannot "
                            "open shared object file: No such file or directory\n"),
         Run(rc=127), None, None, "skip", "no CUDA driver"),
        ("timeout", oob, 80, fail_base, Run(rc=-9, stderr=MSG_700, timed_out=True), None, None,
         "fail", "timed out"),
        ("blocking mode names the same launch", blocking, 80, fail_base, under("oob_exact.json"), None, 12,
         "pass", ""),
        ("blocking mode names another launch", blocking, 80, fail_base, under("oob_exact.json"), None, 7,
         "fail", "culprit is launch #12, oob named #7"),
        ("blocking mode must be exact", blocking, 80, fail_base, under("streams4_candidates.json"), None, None,
         "fail", "expected exact"),
        ("trap with its own sticky code", trap, 31, Run(rc=1, stderr=MSG_TRAP),
         under("trap_719.json", stderr=MSG_TRAP), None, None, "pass", ""),
        ("surfacing call not plausible", free, 57, Run(rc=1, stderr=MSG_FREE),
         under("surface_free_ctxsync.json", stderr=MSG_FREE), None, None, "fail", "does not match 'Free'"),
        ("candidates settled by the blocking rerun", streams, 67, Run(rc=1, stderr=MSG_STREAMS),
         under("streams4_candidates.json", stderr=MSG_STREAMS),
         under("streams4_rerun_exact.json", stderr=MSG_STREAMS), None, "pass", "launches 21:24"),
        ("blocking rerun names another launch", streams, 67, Run(rc=1, stderr=MSG_STREAMS),
         under("streams4_candidates.json", stderr=MSG_STREAMS),
         under("streams4_rerun_wrong.json", stderr=MSG_STREAMS), None, "fail", "is not gather_rows"),
        ("candidate with the faulty kernel but the wrong line", streams, 66, Run(rc=1, stderr=MSG_STREAMS),
         under("streams4_candidates.json", stderr=MSG_STREAMS), None, None, "fail",
         "candidate #23 is the faulty kernel, but: launch line streams4.cu:67, expected streams4.cu:66"),
        ("faulty launch missing from the candidates", streams, 67, Run(rc=1, stderr=MSG_STREAMS),
         under("streams4_candidates_missing.json", stderr=MSG_STREAMS), None, None, "fail",
         "not among the 3 candidates"),
        ("threads: candidates lead to a full blocking rerun", threads, 50, Run(rc=1, stderr=MSG_THREADS),
         under("threads8_candidates.json", stderr=MSG_THREADS), None, None, "rerun", ""),
        ("threads: the full blocking rerun names the launch", threads, 50, Run(rc=1, stderr=MSG_THREADS),
         under("threads8_candidates.json", stderr=MSG_THREADS),
         under("threads8_rerun_exact.json", stderr=MSG_THREADS), None, "pass", "over all launches"),
        ("candidates where exact is required", oob, 67, fail_base, under("streams4_candidates.json"), None, None,
         "fail", "expected exact"),
        ("healthy program", healthy, 0, Run(stdout=b"ok\n"), Run(stdout=b"ok\n"), None, None, "pass", ""),
        ("healthy program's stdout changed", healthy, 0, Run(stdout=b"ok\n"), Run(stdout=b"ok\nx\n"), None, None,
         "fail", "stdout differs"),
        ("healthy program got a report", healthy, 0, Run(stdout=b"ok\n"),
         Run(stdout=b"ok\n", reports=[fixture("oob_exact.json")]), None, None, "fail", "report was written"),
    ]


PY_ASSERT = ("Traceback (most recent call last):\n  File \"x.py\", line 33, in main\n"
             "torch.AcceleratorError: CUDA error: device-side assert triggered\n"
             "Compile with `TORCH_USE_CUDA_DSA` to enable device-side assertions.\n\n")
PACKAGE_OUT = (b"loaded True\nmode while paused off\nmode in scope blocking\nmode after the exception record\n"
               b"last report /tmp/reports/py_package_blocking.json\n")
SAN_PLAIN = ("========= COMPUTE-SANITIZER\n========= Invalid __global__ write of size 4 bytes\n"
             "=========     at scatter_grad(float *, const long *, int, int)+0x1b0 in oob.cu:37\n"
             "========= ERROR SUMMARY: 2 errors\n")


def py_selftests():
    """(title, case, launch line, surface line, base, run, rerun or None, status, reason text, table result,
    note text)."""
    xent, backward = PY_CASE_BY_NAME["torch_xent3d"], PY_CASE_BY_NAME["torch_backward"]
    graph, library = PY_CASE_BY_NAME["torch_cuda_graph"], PY_CASE_BY_NAME["torch_library_history"]
    select, jax = PY_CASE_BY_NAME["torch_index_select"], PY_CASE_BY_NAME["jax_healthy"]
    profiler = PY_CASE_BY_NAME["torch_profiler"]
    # the package case's checks on the xent fixtures (its script and lines are xent_seg3d.py's here)
    package = copy.copy(PY_CASE_BY_NAME["package_scopes"])
    package.script = package.src = xent.script
    base = Run(rc=1, stderr=PY_ASSERT)

    def with_stdout(run, stdout):
        run.stdout = stdout
        return run

    def under(name, rc=1, stderr=PY_ASSERT):
        return Run(rc=rc, stderr=stderr + "culprit: verdict ...\n", reports=[fixture(name)])

    return [
        ("python: exact verdict at the marked and surface lines", xent, 32, 33, base, under("py_xent_exact.json"),
         None, "pass", "", "pass", ""),
        ("python: no python frames anywhere", xent, 32, 33, base, under("py_xent_no_python.json"), None,
         "fail", "python line missing: the launch has no python frames (python_status 'unsupported: CPython 3.14')",
         "FAIL(py)", ""),
        ("python: wrong kernel is not a python-line failure", xent, 32, 33, base,
         under("py_xent_wrong_kernel.json"), None, "fail", "does not match 'nll_loss'", "FAIL", ""),
        ("python: error surfaced at another line", xent, 32, 33, base, under("py_xent_surface_elsewhere.json"),
         None, "fail", "error: python line wrong: error frames at xent_seg3d.py:36, xent_seg3d.py:38, expected "
         "xent_seg3d.py:33",
         "FAIL(py)", ""),
        ("python: backward kernel named, engine thread has no python", backward, 46, None, base,
         under("py_backward_engine_thread.json"), None, "fail", "python line missing: the launch has no python",
         "FAIL(py)", ""),
        ("python: backward kernel at the loss.backward() line", backward, 46, None, base,
         under("py_backward_exact.json"), None, "pass", "", "pass", ""),
        ("python: engine-thread launch, the waiting thread at loss.backward()", backward, 46, None, base,
         under("py_backward_waiting_thread.json"), None, "pass", "", "pass", ""),
        ("python: graph launch at the replay line", graph, 49, 50, base, under("py_graph_level.json"), None,
         "pass", "", "pass", "graph-level"),
        ("python: graph node's kernel at the replay line", graph, 49, 50, base, under("py_graph_node.json"), None,
         "pass", "", "pass", "node-level"),
        ("python: graph launch at another line", graph, 48, 50, base, under("py_graph_level.json"), None,
         "fail", "python line wrong: launch frames at cuda_graph_replay.py:49", "FAIL(py)", ""),
        ("python: cuBLAS and cuDNN kernels in the history", library, 28, 29, base,
         under("py_library_history.json"), None, "pass", "", "pass", "library kernels in history: 3"),
        ("python: no library kernel in the history", library, 28, 29, base,
         under("py_library_history_none.json"), None, "fail", "no cuBLAS/cuDNN kernel in the history", "FAIL", ""),
        ("python: candidates settled by a blocking rerun", select, 25, None, base,
         under("py_index_select_candidates.json"), under("py_index_select_rerun.json"), "pass",
         "blocking rerun over launches 40:41", "pass", ""),
        ("python: candidates need the rerun", select, 25, None, base, under("py_index_select_candidates.json"),
         None, "rerun", "", "FAIL", ""),
        ("python: the script's exception lost under culprit", xent, 32, 33, base,
         under("py_xent_exact.json", stderr="Segmentation fault\n"), None, "fail", "own exception", "FAIL", ""),
        ("python: exit status changed", xent, 32, 33, base, under("py_xent_exact.json", rc=-6), None, "fail",
         "exit status -6, 1 without culprit", "FAIL", ""),
        ("python: did not fail without culprit", xent, 32, 33, Run(rc=0, stdout=b"loss 1.6\n"),
         under("py_xent_exact.json", rc=0, stderr=""), None, "fail", "did not fail without culprit", "FAIL", ""),
        ("python: module missing at run time", xent, 32, 33,
         Run(rc=1, stderr="ModuleNotFoundError: No module named 'torch'\n"), Run(rc=1), None, "skip",
         "No module named 'torch'", "skip", ""),
        ("python: no device", xent, 32, 33, Run(rc=SKIP_STATUS, stderr="skipped: no CUDA device\n"),
         Run(rc=SKIP_STATUS), None, "skip", "skipped: no CUDA device", "skip", ""),
        ("python: healthy JAX output unchanged", jax, 0, None, Run(stdout=b"device gpu\ntotal 1.0\n"),
         Run(stdout=b"device gpu\ntotal 1.0\n"), None, "pass", "", "pass", ""),
        ("python: healthy JAX output changed", jax, 0, None, Run(stdout=b"device gpu\ntotal 1.0\n"),
         Run(stdout=b"device gpu\ntotal 1.1\n"), None, "fail", "stdout differs", "FAIL", ""),
        ("python: healthy JAX got a report", jax, 0, None, Run(stdout=b"ok\n"),
         Run(stdout=b"ok\n", reports=[fixture("py_xent_exact.json")]), None, "fail", "report was written", "FAIL",
         ""),
        ("python: profiler sees kernels", profiler, 0, None, Run(stdout=b"cuda kernel events: 12\n"),
         Run(stdout=b"cuda kernel events: 12\n"), None, "pass", "", "pass", "cuda kernel events: 12"),
        ("python: profiler sees no kernels", profiler, 0, None, Run(stdout=b"cuda kernel events: 0\n"),
         Run(stdout=b"cuda kernel events: 0\n"), None, "fail", "count above 0", "FAIL", ""),
        ("python: the package's lines and its report path", package, 32, None, base,
         with_stdout(under("py_package_blocking.json"), PACKAGE_OUT), None, "pass", "", "pass", ""),
        ("python: the package names another report", package, 32, None, base,
         with_stdout(under("py_package_blocking.json"), PACKAGE_OUT.replace(b"py_package_blocking", b"culprit-99")),
         None,
         "fail", "no line matching '^last report", "FAIL", ""),
        ("python: the package's mode not restored after the exception", package, 32, None, base,
         with_stdout(under("py_package_blocking.json"),
                     PACKAGE_OUT.replace(b"exception record", b"exception blocking")),
         None, "fail", "mode after the exception record", "FAIL", ""),
        ("python: blocking must report at the launch line", package, 32, None, base,
         with_stdout(under("py_xent_exact.json"), PACKAGE_OUT.replace(b"py_package_blocking", b"py_xent_exact")),
         None, "fail", "error: python line wrong: error frames at xent_seg3d.py:33", "FAIL(py)", ""),
    ]


def sanitizer_selftests():
    """(title, base, run, status, reason text, note text) for the compute-sanitizer case."""
    under = SAN_PLAIN.replace("2 errors", "3 errors") + "culprit: verdict ...\n"
    return [
        ("sanitizer: still reports the write under culprit", Run(rc=1, stdout=SAN_PLAIN.encode()),
         Run(rc=1, stdout=under.encode()), "pass", "", "ERROR SUMMARY 2 alone, 3 under culprit"),
        ("sanitizer: report lost under culprit", Run(rc=1, stdout=SAN_PLAIN.encode()),
         Run(rc=1, stdout=b"========= COMPUTE-SANITIZER\n"), "fail", "report is missing", ""),
        ("sanitizer: device not supported", Run(rc=1, stdout=b"========= Error: Device not supported\n"),
         Run(rc=1), "skip", "Device not supported", ""),
    ]


def run_py_selftests():
    results = []
    for title, case, line, surface, base, run, rerun, want_status, want_text, want_result, want_note in \
            py_selftests():
        o = judge_py(case, line, surface, base, run)
        if o.status == "rerun" and rerun is not None:
            judge_py_rerun(o, line, base, rerun)
        text = " ".join(o.reasons + [o.path])
        result = table([o])[2].split("|")[-2].strip()
        ok = (o.status == want_status and want_text in text and result == want_result
              and want_note in " ".join(o.notes))
        results.append((title, ok, "got %s (%s): %s; notes: %s" % (o.status, result, text, o.notes)))
    for title, base, run, want_status, want_text, want_note in sanitizer_selftests():
        o = judge_sanitizer(PY_CASE_BY_NAME["sanitizer_memcheck"], base, run)
        text = " ".join(o.reasons)
        ok = o.status == want_status and want_text in text and want_note in " ".join(o.notes)
        results.append((title, ok, "got %s: %s; notes: %s" % (o.status, text, o.notes)))

    ok = py_markers("a\nf()  " + PY_LAUNCH + "\ng()  " + PY_SURFACE + "\n") == (2, 3)
    ok = ok and py_markers("a\nf()  " + PY_LAUNCH + "\n") == (2, None)
    for bad, healthy in (("f()  %s\ng()  %s\n" % (PY_LAUNCH, PY_LAUNCH), False), ("x\n", False),
                         ("f()  %s\n" % PY_LAUNCH, True),
                         ("f()  %s\ng()  %s\nh()  %s\n" % (PY_LAUNCH, PY_SURFACE, PY_SURFACE), False)):
        try:
            py_markers(bad, healthy=healthy)
            ok = False
        except ValueError:
            pass
    results.append(("python markers found, duplicates and misplaced ones refused", ok, ""))

    bad = []
    for c in PY_CASES:
        if c.script is None:
            continue
        try:
            with open(os.path.join(FRAMEWORKS, c.script), encoding="utf-8") as f:
                py_markers(f.read(), c.script, c.healthy)
        except (OSError, ValueError) as e:
            bad.append(str(e))
    results.append(("every framework script exists and has its markers", not bad, "; ".join(bad)))
    ok = selected(["frameworks"]) == set(PY_CASE_BY_NAME) and selected(["c", "torch_gather"]) == \
        set(CASE_BY_NAME) | {"torch_gather"}
    results.append(("--only takes groups and case names", ok, ""))
    return results


def selftest():
    failures = 0
    results = []
    try:
        marker_line("a\nb<<<1, 1>>>(); " + MARKER + "\nc\n")
        ok = marker_line("a\nb<<<1, 1>>>(); " + MARKER + "\nc\n") == 2
    except ValueError:
        ok = False
    try:
        marker_line("x\ny\n")
        ok = False
    except ValueError:
        pass
    results.append(("marker line found, missing marker refused", ok, ""))
    ok = all(os.path.exists(os.path.join(HERE, c.src)) and (c.healthy or _has_marker(c.src)) and
             (not c.graph or _has_marker(c.src, CAPTURE_MARKER)) for c in CASES)
    results.append(("every case's source exists and has one marker", ok, ""))
    # "--mode record" is culprit's default said out loud (run.sh --mode all says it): the same reruns
    oob = CASE_BY_NAME["oob"]
    got = [(prepared(oob, m).rerun, prepared(oob, m).need_node) for m in (None, "record", "precise")]
    ok = got == [("window", False), ("window", False), (None, True)] and prepared(oob, "record") is not oob
    results.append(("--mode record settles candidates by a rerun, as the default does; precise does not", ok,
                    repr(got)))

    for title, case, line, base, run, rerun, ref, want_status, want_text in selftests():
        o = judge(case, "static", line, base, run, ref)
        if o.status == "rerun" and rerun is not None:
            judge_rerun(o, line, base, rerun)
        text = " ".join(o.reasons + [o.path])
        ok = o.status == want_status and want_text in text
        results.append((title, ok, "got %s: %s" % (o.status, text)))

    sample = [judge(CASE_BY_NAME["oob"], "static", 80, Run(rc=1, stderr=MSG_700),
                    Run(rc=1, stderr=MSG_700, reports=[fixture("oob_exact.json")])),
              judge(CASE_BY_NAME["oob"], "shared", 80, Run(rc=1, stderr=MSG_700), Run(rc=1, stderr=MSG_700)),
              judge(CASE_BY_NAME["oob"], "shared", 80, Run(rc=SKIP_STATUS), Run(rc=SKIP_STATUS))]
    lines = table(sample)
    ok = lines[-1] == "1 passed, 1 failed, 1 skipped" and "| scatter_grad(float*, long const*, int, int) |" in lines[2]
    results.append(("table and closing line", ok, lines[-1]))

    results += run_py_selftests()

    for title, ok, detail in results:
        print("%s  %s%s" % ("ok  " if ok else "FAIL", title, "" if ok else "  [" + detail + "]"))
        failures += not ok
    print("%d passed, %d failed" % (len(results) - failures, failures))
    return 1 if failures else 0


def _has_marker(src, marker=MARKER):
    with open(os.path.join(HERE, src), encoding="utf-8") as f:
        try:
            marker_line(f.read(), src, marker)
            return True
        except ValueError:
            return False


def main(argv):
    parser = argparse.ArgumentParser(description="Run and check culprit's GPU tests.")
    parser.add_argument("--selftest", action="store_true", help="check the checker against tests/gpu/fixtures")
    sub = parser.add_subparsers(dest="command")
    s = sub.add_parser("suite", help="run every case and print the table")
    s.add_argument("--build", required=True, help="build directory with bin/culprit and bin/gpu_*")
    s.add_argument("--logs", required=True, help="directory for logs and copied reports")
    s.add_argument("--timeout", type=int, default=60, help="seconds allowed per program run (default 60)")
    s.add_argument("--budget", type=int, default=480,
                   help="seconds for the whole suite; cases not started by then fail as not run (default 480)")
    s.add_argument("--only", nargs="+", choices=sorted(CASE_BY_NAME) + sorted(PY_CASE_BY_NAME) + sorted(GROUPS),
                   help="run only these cases, or groups: c (the C programs), frameworks (the Python scripts)")
    s.add_argument("--mode", choices=("record", "precise"),
                   help="culprit mode for cases that set none (default: culprit's own default, record)")
    s.add_argument("--python", default=sys.executable,
                   help="interpreter for the frameworks group (default: the one running this script)")
    sub.add_parser("list", help="list the cases")
    args = parser.parse_args(argv)
    if args.selftest:
        return selftest()
    if args.command == "suite":
        return suite(args)
    if args.command == "list":
        for c in CASES + PY_CASES:
            print("%-22s %-10s %s" % (c.name, c.group, c.note))
        return 0
    parser.print_help()
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
