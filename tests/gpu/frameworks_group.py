"""The frameworks group of the GPU suite: the Python scripts in tests/gpu/frameworks (torch, Triton, CuPy, JAX,
Lightning, torch.profiler, compute-sanitizer, transformers), each run once without culprit and once under
`culprit run` (and, with --coredump, the cases that say so once more under `culprit run --coredump`); a report
is judged by the culprit's kernel and its `python` frames against the lines the script marks. check.py runs
these cases and adds them to its table; its helpers are reached as `h` (check.py binds them when loaded).
"""

import json
import os
import re
import shutil
import subprocess
import sys
import time

from jobs_group import _Check

h = None  # check.py's names, bound by check.py (bind)


def bind(check_globals):
    global h
    h = _Check(check_globals)


HERE = os.path.dirname(os.path.abspath(__file__))
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
# What torch raises for a CUDA error wherever it surfaces: a CUDA call's error string, or cuBLAS's status when the
# error surfaced inside cuBLAS.
CUDA_EXCEPTION = r"CUDA error|CUDA_ERROR|CUBLAS_STATUS|cuBLAS|device-side assert|illegal memory access"
NO_STICKY = "no sticky CUDA error"  # what `culprit run` says when no report was written
EXITED_ZERO = re.compile(r"exited with status 0 although a kernel faulted")  # culprit run, CMD exited 0


class PyCase:
    """One Python script run under `culprit run`, and what must come out of it."""

    group = "frameworks"
    mode = None       # the first run's mode is the suite's --mode (default: culprit's own, record)
    api = r"."        # any surfacing driver call
    args = ()         # script arguments
    rerun = "window"  # a candidates verdict is settled by a blocking rerun over the candidates' window

    def __init__(self, name, script, kernel=None, codes=(710,), modules=("torch",), kind="fault", env=None,
                 graph=False, library_history=False, stdout_count=None, stdout_expect=(), surface_at_launch=False,
                 exception_like=None, repeat=1, coredump=False, one_run=False, need_node=False, note=""):
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
        # None: the script's last exception line must be the same under culprit; a regular expression: the error
        # may surface at different calls from run to run, so both lines need only match it
        self.exception_like = exception_like
        self.repeat = repeat        # runs under culprit (each must give a report; the first one is judged fully)
        self.coredump = coredump    # --coredump runs it once more, under `culprit run --coredump`
        self.one_run = one_run      # the verdict must be exact in the run under culprit: candidates fail (no rerun)
        self.need_node = need_node  # a graph launch as the culprit must name its faulting node (culprit.node),
                                    # whose kernel matches `kernel`
        self.note = note            # what the case is about
        self.healthy = kind == "healthy"


PY_CASES = [
    PyCase("torch_xent3d", "xent_seg3d.py", r"nll_loss", coredump=True,
           note="cross_entropy on 3D segmentation logits, one label == C; surfaces at loss.item()"),
    PyCase("torch_embedding", "embedding_oob.py", r"indexSelect|vectorized_gather",
           note="nn.Embedding id == vocabulary size (forward is index_select)"),
    PyCase("torch_gather", "gather_oob.py", r"gather", coredump=True, note="torch.gather position == row length"),
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
    # the callback's status line, and the verdict it attached to the exception Lightning re-raised (the script
    # prints both): blocking at step 3 makes the nll_loss launch itself report the assert
    PyCase("lightning_callback", "lightning_callback.py", r"nll_loss", surface_at_launch=True,
           modules=("torch", "lightning|pytorch_lightning"),
           stdout_expect=(r"^culprit-log: culprit: rank 0 of 1: culprit loaded, mode \w+; scopes: blocking "
                          r"\(kernels '\*nll_loss\*'\) in training_step; diagnosing in training_step for global "
                          r"step 3$",
                          r"^culprit-verdict: culprit: rank 0: the kernel that faulted: \S.*nll_loss",
                          r"^culprit-verdict: culprit:   launched from \S*lightning_callback\.py:\d+ in "
                          r"(Classifier\.)?training_step$",
                          r"^culprit-verdict: culprit:   CUDA_ERROR_ASSERT \(710\): .*; it surfaced in cuLaunch\w* "
                          r"at \S*lightning_callback\.py:\d+ in (Classifier\.)?training_step$",
                          r"^culprit-verdict: culprit: report: \S*/{report_name}$"),
           note="culprit.lightning.CulpritCallback: blocking + diagnosis around training_step at step 3; the "
                "exception carries culprit's verdict"),
    PyCase("package_scopes", "package_scopes.py", r"nll_loss", surface_at_launch=True,
           stdout_expect=(r"^loaded True$", r"^mode while paused off$", r"^mode in scope blocking$",
                          r"^mode after the exception record$", r"^last report \S*/{report_name}$"),
           note="the culprit package: paused() warm-up, blocking(kernels='*nll*') reports at the launch"),
    # device asserts of every form read into an exact verdict in one run (docs/usage.md, "Device asserts")
    PyCase("triton_assert", "triton_device_assert.py", r"gather_rows", modules=("torch", "triton"), one_run=True,
           note="tl.device_assert (debug=True) in program 200 of a gather over 256 programs; the same kernel ran "
                "over 16 just before (the Triton form: the file names the kernel, the block index the launch)"),
    PyCase("inductor_assert", "inductor_index_assert.py", r"triton_", one_run=True,
           note="torch.compile: Inductor's bounds assert on an indirect index (the file in Inductor's cache names "
                "the kernel)"),
    PyCase("inductor_graph_assert", "inductor_graph_assert.py", r"triton_", graph=True, need_node=True,
           one_run=True,
           note="torch.compile(mode='reduce-overhead'): Inductor's bounds assert inside a CUDA graph replay; the "
                "assert names the graph's node"),
    PyCase("torch_assert_deep", "assert_deep_launch.py", r"indexSelect|vectorized_gather|index", one_run=True,
           exception_like=CUDA_EXCEPTION,
           note="an embedding's index assert at step 50 of a training loop that never waits: the stream is old and "
                "dense, the error surfaces at a later launch, and the assert's text makes the run exact"),
    PyCase("gpt2_vocab", "gpt2_vocab_oob.py", r"indexSelect|vectorized_gather|[Ee]mbedding|index",
           modules=("torch", "transformers"), exception_like=CUDA_EXCEPTION, repeat=2,
           env={"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "TRANSFORMERS_NO_ADVISORY_WARNINGS": "1"},
           note="transformers GPT-2 training step with a token id past the vocabulary; surfaces anywhere "
                "(cuBLAS on the autograd thread, a launch, exit): a report every time"),
]
PY_CASE_BY_NAME = {c.name: c for c in PY_CASES}


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
    mine = [f for f in frames if h.frame_file(f) == script]
    if not mine:
        inner = frames[0]
        return ["%s missing: no %s frame in %s (innermost %s:%s)" % (PY_LINE, what, script, h.frame_file(inner),
                                                                    inner.get("line"))]
    if not any(f.get("line") == want_line for f in mine):
        return ["%s wrong: %s frames at %s, expected %s:%d" % (
            PY_LINE, what, ", ".join("%s:%s" % (script, f.get("line")) for f in mine), script, want_line)]
    return []


def python_where(frames, script, want_line):
    """The script frame as file:line: the marked one if present, else the innermost in the script."""
    mine = [f for f in frames or [] if isinstance(f, dict) and h.frame_file(f) == script]
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


def node_problems(launch, case):
    """For a case that needs the node: what keeps a graph launch culprit from naming its faulting node (a kernel
    launch culprit is judged by its own name)."""
    if not isinstance(launch, dict) or launch.get("kind") != "graph":
        return []
    node = launch.get("node")
    if not isinstance(node, dict):
        return ["graph launch #%s names no node (%d captured kernels listed)" % (
            launch.get("seq"), len(launch.get("graph_nodes") or []))]
    kernel = str(node.get("kernel") or node.get("mangled") or "")
    if not re.search(case.kernel, kernel):
        return ["node #%s kernel %r does not match %r" % (node.get("seq"), kernel, case.kernel)]
    return []


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
            ", captured at %s:%s" % (h.frame_file(where[0]) or where[0].get("file"), where[0].get("line"))
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
    if run.rc == h.SKIP_STATUS:
        return lines[-1].strip() if lines else "the script skipped itself"
    for line in lines:
        if "ModuleNotFoundError:" in line:
            return line.strip()
    return None


def py_check_process(out, base, run, what):
    """Exit status, timeout and the script's own exception under culprit, compared with the plain run."""
    if not h.check_exit(out, base, run, what):
        return
    wanted = exception_line(base.stderr)
    like = getattr(out.case, "exception_like", None)
    if like and wanted:
        # the error surfaces at different calls from run to run: the same kind of exception is what must hold
        got = exception_line(run.stderr)
        if not re.search(like, wanted):
            out.fail("without culprit: the script's exception %r is not a CUDA error" % h.shorten(wanted, 80))
        if not got or not re.search(like, got):
            out.fail("%s: the script's exception %r is not a CUDA error like %r" % (
                what, h.shorten(got, 80), h.shorten(wanted, 80)))
        elif got != wanted:
            out.notes.append("%s: exception %r (without culprit %r)" % (what, h.shorten(got, 70), h.shorten(wanted, 70)))
        return
    if wanted and wanted not in run.stderr:
        out.fail("%s: the script's own exception %r is missing from stderr" % (what, h.shorten(wanted, 80)))


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
            len(hits), len(gemm), len(conv), "; ".join(h.shorten(n, 60) for n in hits[:4])))
    else:
        out.fail("no cuBLAS/cuDNN kernel in the history; seen: %s" % (
            "; ".join(h.shorten(n, 50) for n in names) or "nothing"))


def judge_py(case, want_line, surface_line, base, run):
    """Judges one Python case from its run without culprit (base) and under culprit (run)."""
    out = h.Outcome(case, "python")
    reason = py_skip_reason(base) or (py_skip_reason(run) if run.rc == h.SKIP_STATUS else None)
    if reason:
        out.skip(reason)
        return out
    if base.timed_out:
        out.fail("timed out without culprit")
        return out

    if case.healthy:
        h.judge_healthy(out, base, run, py_check_process)
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
    report = h.checked_report(out, case, run)
    if report is None:
        return out
    h.judge_fault_page(out, report)  # an illegal address: the kernel's log of it (sanitizer_agreement.py)
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
    if case.repeat > 1:
        out.notes.append("run 1 under culprit: surfaced in %s" % surfaced_note(report))

    verdict = report.get("verdict") or {}
    certainty = verdict.get("certainty")
    out.certainty = str(certainty)
    if certainty == "exact":
        h.judge_exact(out, case, report.get("culprit"),
                      lambda launch: python_where((launch or {}).get("python"), case.script, want_line),
                      lambda launch: py_launch_problems(launch, case, want_line, status, report.get("python_threads"))
                      + (node_problems(launch, case) if case.need_node else []))
        return out
    if certainty == "candidates":
        candidates = [c for c in report.get("candidates") or [] if isinstance(c, dict)]
        out.named = "%d candidates" % len(candidates)
        if case.one_run:
            out.fail("verdict candidates (%d launches), expected exact in one run: %s" % (
                len(candidates), h.shorten(str(verdict.get("reason")), 160)))
            return out
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


def surfaced_note(report):
    """Where a report's error surfaced, in a few words: the call, the code and the thread (main or another)."""
    error = report.get("error") or {}
    pid = (report.get("process") or {}).get("pid")
    thread = error.get("thread")
    return "%s (%s) on %s" % (error.get("api") or "?", error.get("code"),
                              "the main thread" if thread == pid else "thread %s, not the main thread" % thread)


def judge_py_again(out, want_line, base, run, number):
    """Another run under culprit of a case whose error surfaces differently from run to run (case.repeat): the
    same exit and exception, a report every time (never "no sticky CUDA error"), its error code, and the faulty
    launch named (exactly, or among the candidates: the first run already proved the rerun)."""
    case = out.case
    what = "run %d under culprit" % number
    py_check_process(out, base, run, what)
    report, problem = h.one_report(run, what)
    if problem:
        if not run.reports and NO_STICKY in run.stderr:
            problem += " (culprit said %r)" % NO_STICKY
        out.fail(problem)
    if report is None:
        return
    error = report.get("error") or {}
    if error.get("code") not in case.codes:
        out.fail("%s: error.code %r, expected %s" % (what, error.get("code"), "/".join(map(str, case.codes))))
    out.notes.append("%s: surfaced in %s" % (what, surfaced_note(report)))
    status, threads = report.get("python_status"), report.get("python_threads")
    certainty = (report.get("verdict") or {}).get("certainty")
    if certainty == "exact":
        for p in py_launch_problems(report.get("culprit"), case, want_line, status, threads):
            out.fail("%s: culprit: %s" % (what, p))
    elif certainty == "candidates":
        candidates = [c for c in report.get("candidates") or [] if isinstance(c, dict)]
        if not any(not py_launch_problems(c, case, want_line, status, threads) for c in candidates):
            out.fail("%s: the faulty launch is not among the %d candidates" % (what, len(candidates)))
    else:
        out.fail("%s: verdict certainty %r, expected exact or candidates" % (what, certainty))


def judge_py_rerun(out, want_line, base, rerun):
    """The frameworks group's blocking rerun: the culprit's Python line must be the marked one."""
    case = out.case
    report = h.settle_rerun(out, base, rerun, py_check_process,
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
    out = h.Outcome(case, "static")
    out.certainty = "-"
    plain = base.stdout.decode("utf-8", "replace") + base.stderr
    under = run.stdout.decode("utf-8", "replace") + run.stderr
    if SANITIZER_WRITE not in plain:
        m = SANITIZER_UNSUPPORTED.search(plain)
        if m or base.rc == h.SKIP_STATUS:
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


def judge_py_coredump(case, want_line, base, run):
    """A Python case's --coredump run (case: its --coredump row). PyTorch is built without device line info, so
    the dump names the kernel only."""
    out = h.Outcome(case, "python")
    reason = py_skip_reason(base) or (py_skip_reason(run) if run.rc == h.SKIP_STATUS else None)
    if reason:
        out.skip(reason)
        return out
    return h.judge_coredump(out, base, run, case.kernel,
                          lambda c, report: py_launch_problems(c, case, want_line, report.get("python_status"),
                                                               report.get("python_threads")),
                          lambda c: python_where((c or {}).get("python"), case.script, want_line))


def find_sanitizer():
    """compute-sanitizer on PATH, else in the CUDA toolkit's bin directory; None if neither."""
    found = shutil.which("compute-sanitizer")
    if found:
        return found
    for home in (os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda"):
        if home and os.access(os.path.join(home, "bin", "compute-sanitizer"), os.X_OK):
            return os.path.join(home, "bin", "compute-sanitizer")
    return None


def frameworks_suite(args, cases, culprit, logs, deadline, done, total, gdb=(None, {})):
    """Runs the Python cases (each once without culprit and once under it, and with --coredump the cases that
    say so once more under `culprit run --coredump`) and judges them."""
    outcomes = []
    python = args.python
    for case in cases:
        stem = case.name
        print("[%2d/%d] %-20s %-6s ..." % (done + len(outcomes) + 1, total, case.name, "python"), end=" ",
              flush=True)
        o = run_py_case(args, case, culprit, logs, stem, python, deadline)
        outcomes.append(o)
        print(h.said(o))
        if args.coredump and case.coredump:
            print("[%2d/%d] %-20s %-6s ..." % (done + len(outcomes) + 1, total, case.name + h.COREDUMP_ROW, "python"),
                  end=" ", flush=True)
            outcomes.append(run_py_coredump(args, case, culprit, logs, python, deadline, gdb, o))
            print(h.said(outcomes[-1]))
    return outcomes


def run_py_coredump(args, case, culprit, logs, python, deadline, gdb, default):
    """A Python case once more, as `culprit run --coredump` (the same interpreter, environment and mode as its run
    under culprit), judged against its run without culprit."""
    o = h.coredump_outcome(case, "python", default, gdb, deadline, args.budget)
    if o is not None:
        return o
    script = os.path.join(FRAMEWORKS, case.script)
    with open(script, encoding="utf-8") as f:
        want, _ = py_markers(f.read(), case.script)  # read once already by run_py_case
    work = h.fresh_dir(os.path.join(logs, "work", case.name + ".coredump"))
    report_dir = h.fresh_dir(os.path.join(logs, "reports", case.name + ".coredump"))
    mode = ["--mode", args.mode] if args.mode and not case.stdout_expect else []
    cmd = [culprit, "run", "--dir", report_dir] + mode + ["--coredump", "--", python, script] + list(case.args)
    run = h.execute(cmd, dict(h.clean_env(case.env), **gdb[1]), args.timeout + h.COREDUMP_EXTRA_S, report_dir, cwd=work)
    h.save_logs(logs, case.name + ".coredump", run)
    o = judge_py_coredump(h.coredump_row(case), want, default.plain, run)
    o.coredump_of = default
    return o


def run_py_case(args, case, culprit, logs, stem, python, deadline):
    """One Python case: skip checks, the two runs, the judgement and, for candidates, the blocking rerun."""
    o = h.Outcome(case, "static" if case.kind == "sanitizer" else "python")
    if h.not_runnable(o, args, python, case.modules, deadline):
        return o
    env = h.clean_env(case.env)
    work = h.fresh_dir(os.path.join(logs, "work", stem))  # the scripts' working directory (Lightning may write)

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
        base = h.execute(cmd, env, args.timeout, cwd=work)
        h.save_logs(logs, stem + ".plain", base)
        report_dir = h.fresh_dir(os.path.join(logs, "reports", stem))
        run = h.execute([culprit, "run", "--dir", report_dir, "--"] + cmd, env, args.timeout, report_dir, cwd=work)
        h.save_logs(logs, stem + ".culprit", run)
        return judge_sanitizer(case, base, run)

    script = os.path.join(FRAMEWORKS, case.script)
    try:
        with open(script, encoding="utf-8") as f:
            want, surface = py_markers(f.read(), case.script, case.healthy)
    except (OSError, ValueError) as e:
        o.fail(str(e))
        return o
    cmd = [python, script] + list(case.args)
    base = h.execute(cmd, env, args.timeout, cwd=work)
    h.save_logs(logs, stem + ".plain", base)
    report_dir = h.fresh_dir(os.path.join(logs, "reports", stem))
    # --mode applies here too, but not to a case that checks what the package says of the default mode
    mode = ["--mode", args.mode] if args.mode and not case.stdout_expect else []
    run = h.execute([culprit, "run", "--dir", report_dir] + mode + ["--"] + cmd, env, args.timeout, report_dir,
                  cwd=work)
    h.save_logs(logs, stem + ".culprit", run)
    o = judge_py(case, want, surface, base, run)
    o.plain = base
    if o.status == "rerun":
        rerun_dir = h.fresh_dir(os.path.join(logs, "reports", stem + ".rerun"))
        rerun_cmd = [culprit, "run", "--dir", rerun_dir, "--mode", "blocking"]
        if o.window:
            rerun_cmd += ["--launches", "%d:%d" % o.window]
        rerun = h.execute(rerun_cmd + ["--"] + cmd, env, args.timeout, rerun_dir, cwd=work)
        h.save_logs(logs, stem + ".rerun", rerun)
        judge_py_rerun(o, want, base, rerun)
    for i in range(2, case.repeat + 1):
        if o.status == "skip":
            break
        if time.monotonic() > deadline:
            o.fail("run %d under culprit not made: the suite's time budget (%d s) was spent" % (i, args.budget))
            break
        again_dir = h.fresh_dir(os.path.join(logs, "reports", "%s.run%d" % (stem, i)))
        again = h.execute([culprit, "run", "--dir", again_dir] + mode + ["--"] + cmd, env, args.timeout, again_dir,
                        cwd=work)
        h.save_logs(logs, "%s.run%d" % (stem, i), again)
        judge_py_again(o, want, base, again, i)
    return o
