"""The GPU suite's self-test: every judge of check.py run against the report fixtures in tests/gpu/fixtures and
made-up runs, on any machine (CTest runs it on the CPU as `check.py --selftest`), so that a judge that would
pass a wrong verdict, or fail a right one, is caught before the suite meets a GPU.
"""
from check import *  # noqa: F401,F403 - the judges, cases and helpers under test

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

    def with_node(name, kernel):
        """A graph-level fixture whose culprit names a node with this kernel, as a device assert does."""
        path, report = fixture(name)
        report = copy.deepcopy(report)
        report["culprit"]["node"] = {"seq": 70, "api": "cuLaunchKernel", "kind": "kernel", "kernel": kernel,
                                     "grid": [4, 1, 1], "block": [128, 1, 1], "flags": ["captured"]}
        report["culprit"]["node_source"] = "device assert"
        return Run(rc=1, stderr=PY_ASSERT + "culprit: verdict ...\n", reports=[(path, report)])

    # the one-run and node requirements of the assert cases, on the fixtures of cases with the same scripts
    select_once, xent_once = copy.copy(select), copy.copy(xent)
    select_once.one_run = xent_once.one_run = True
    graph_node = copy.copy(graph)
    graph_node.need_node = True
    index_kernel = ("void at::native::(anonymous namespace)::indexSelectSmallIndex<float, long, unsigned int, 2, "
                    "2, -2>(...)")

    return [
        ("python: exact in one run wanted and given", xent_once, 32, 33, base, under("py_xent_exact.json"), None,
         "pass", "", "pass", ""),
        ("python: exact in one run wanted, candidates are not settled by a rerun", select_once, 25, None, base,
         under("py_index_select_candidates.json"), under("py_index_select_rerun.json"), "fail",
         "expected exact in one run", "FAIL", ""),
        ("python: the node wanted, the graph launch names none", graph_node, 49, 50, base,
         under("py_graph_level.json"), None, "fail", "names no node", "FAIL", ""),
        ("python: the node wanted and named by the device assert", graph_node, 49, 50, base,
         with_node("py_graph_level.json", index_kernel), None, "pass", "", "pass", "node #70"),
        ("python: the node wanted, another kernel named", graph_node, 49, 50, base,
         with_node("py_graph_level.json", "void at::native::vectorized_elementwise_kernel<4>(...)"), None, "fail",
         "does not match 'index'", "FAIL", ""),
        ("python: the node wanted, the culprit is the kernel itself", graph_node, 49, 50, base,
         under("py_graph_node.json"), None, "pass", "", "pass", "node-level"),
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
    for c in PY_CASES + JOB_CASES:
        if c.script is None:
            continue
        try:
            with open(os.path.join(FRAMEWORKS, c.script), encoding="utf-8") as f:
                py_markers(f.read(), c.script, c.healthy)
        except (OSError, ValueError) as e:
            bad.append(str(e))
    results.append(("every framework script exists and has its markers", not bad, "; ".join(bad)))
    c_names = {c.name for c in CASES if c.group == "c"}
    ok = selected(["frameworks"]) == set(PY_CASE_BY_NAME) and selected(["c", "torch_gather"]) == \
        c_names | {"torch_gather"} and selected(["hangs"]) == {"spin_timeout", "spin_sigterm", "spin_device"} and \
        selected(["jobs", "nosync"]) == set(JOB_CASE_BY_NAME) | {"nosync"} and "nosync" in c_names and \
        not c_names & set(GROUPS["hangs"]) and selected([]) == set(CASE_BY_NAME) | set(PY_CASE_BY_NAME) | \
        set(JOB_CASE_BY_NAME) | set(DIAG_CASE_BY_NAME) and \
        selected(["diagnose", "verdict"]) == set(DIAG_CASE_BY_NAME) and \
        selected(["verdict"]) == {"exc_python", "exc_pool", "exc_torchrun", "exc_torchrun_record", "exc_healthy"}
    results.append(("--only takes groups (c, hangs, frameworks, jobs, diagnose, verdict) and case names", ok, ""))
    # the verdict group finds culprit's line after the runtime's text: in Python's traceback, and indented in
    # torchrun's Root Cause summary; not in the library's own notice or a line elsewhere
    import verdict_group
    exc = ("torch.AcceleratorError: CUDA error: device-side assert triggered\nculprit: the kernel that faulted: "
           "void at::native::nll_loss_forward_reduce_cuda_kernel_2d<float, float, long>(...), launched at "
           "rank_fault.py:14; report: /r/culprit-1.json\nCUDA kernel errors might be asynchronously reported\n")
    root = ("  traceback : CUDA_ERROR_ASSERT (710): device-side assert triggered\n  culprit: one of 2 candidate "
            "launches faulted (the first: k(int), launched at rank_fault.py:14); report: /r/x.json\n")
    notice = ("culprit: CUDA_ERROR_ASSERT (710) surfaced in cuStreamSynchronize; report: /r/x.json\n"
              "culprit: the kernel that faulted: k(int), launched at a.py:1; report: /r/x.json\n")
    a, b = verdict_group.exception_lines(exc), verdict_group.exception_lines(root)
    ok = len(a) == 1 and a[0].group("site") == "rank_fault.py:14" and a[0].group("path") == "/r/culprit-1.json" and \
        "nll_loss" in a[0].group("k") and len(b) == 1 and b[0].group("k2") == "k(int)" and \
        not verdict_group.exception_lines(notice)
    results.append(("the verdict group reads culprit's line in an exception and in torchrun's Root Cause", ok, ""))
    results += script_start_selftests(verdict_group)
    return results


def script_start_selftests(verdict_group):
    """The start the verdict and diagnose groups' judges share (check.py's judge_script_start): no device, a run
    that timed out, and the healthy case, each group with its own words."""
    import diagnose_group
    import check as h
    results = []
    for group, healthy, fail, label, pad in ((verdict_group, "exc_healthy", "exc_python", "culprit", "  "),
                                             (diagnose_group, "diag_healthy", "diag_xent3d", "diagnose",
                                              "   ")):
        name = group.__name__
        good = Run(rc=0, stdout=b"ok\ncompiled yes\n")
        o = group.judge(h, DIAG_CASE_BY_NAME[fail], Run(rc=SKIP_STATUS), Run(rc=SKIP_STATUS))
        results.append(("%s: a script without a device is skipped" % name,
                        o.status == "skip" and o.reasons == ["the script found no CUDA device"], repr(o.reasons)))
        o = group.judge(h, DIAG_CASE_BY_NAME[fail], Run(rc=1), Run(rc=-15, timed_out=True))
        results.append(("%s: a run that timed out fails, and is judged no further" % name,
                        o.status == "fail" and len(o.reasons) == 1 and
                        o.reasons[0].startswith("timed out under culprit run"), repr(o.reasons)))
        o = group.judge(h, DIAG_CASE_BY_NAME[healthy], good, good)
        results.append(("%s: a healthy script passes as healthy" % name,
                        o.status == "pass" and o.certainty == "healthy" and o.named == "-", repr(o.reasons)))
        bad = Run(rc=3, stdout=b"other\n", reports=[fixture("oob_exact.json")])
        o = group.judge(h, DIAG_CASE_BY_NAME[healthy], good, bad)
        want = "stdout differs under %s:\n  plain:%s %r\n  %s: %r" % (
            "culprit" if label == "culprit" else "--diagnose", pad, good.stdout, label, bad.stdout)
        ok = o.status == "fail" and o.reasons[0] == "a healthy run wrote 1 report(s)" and \
            o.reasons[1].startswith("exit status 0 without culprit, 3 under ") and o.reasons[2] == want and \
            o.certainty == "healthy"
        if group is diagnose_group:
            ok = ok and o.reasons[3:] == ["the torch.compile'd function was not compiled under --diagnose"]
        else:
            ok = ok and len(o.reasons) == 3
        results.append(("%s: a healthy script with a report, another status and stdout fails on each" % name, ok,
                        repr(o.reasons)))
    return results


def fixture_at(name, filename, change=None):
    """A fixture as a run's report file of another name (report names carry pid, host and kind), optionally
    changed by change(report) first."""
    path, report = fixture(name)
    if change is not None and isinstance(report, dict):
        report = copy.deepcopy(report)
        change(report)
    return (os.path.join("/reports", filename), report)


def _set(path, value):
    """A change for fixture_at: sets the value at a key path ("hang.timeout_s"); None deletes it."""
    def change(report):
        keys = path.split(".")
        node = report
        for key in keys[:-1]:
            node = node[int(key)] if isinstance(node, list) else node[key]
        if value is None:
            del node[keys[-1]]
        else:
            node[keys[-1]] = value
    return change


SPIN_OUT = b"warm-up done: x[0] = 1.8750\nspinning: waiting for a flag that nothing sets\n"


def hang_selftests():
    """(title, case, base, run, timeout report or None, mode, expected status, reason text)."""
    term, timeout = copy.copy(CASE_BY_NAME["spin_sigterm"]), copy.copy(CASE_BY_NAME["spin_timeout"])
    term.wait_line = timeout.wait_line = 58
    base = Run(rc=-15, stdout=SPIN_OUT, stopped=signal.SIGTERM)
    name = "culprit-6100-hang.json"

    def under(fixture_name, rc=-15, change=None, filename=name, extra=()):
        return Run(rc=rc, stdout=SPIN_OUT, stderr="culprit: hang report ...\n", stopped=signal.SIGTERM, pid=6099,
                   reports=[fixture_at(fixture_name, filename, change)] + list(extra))

    def snap(fixture_name, change=None):
        return fixture_at(fixture_name, name, change)[1]

    no_wait = _set("threads.0.stack", [])
    device = copy.copy(CASE_BY_NAME["spin_device"])
    device.wait_line = 58
    answered = {"by": "cuda-gdb", "status": "answered", "ms": 900, "running": [6],
                "kernels": [{"kernel": "spin_until_flag", "invocation": "spin_until_flag(flag=0x7f0000000000)"}]}

    def asked(dq, by):
        def change(report):
            report["device_query"] = dq
            if by and isinstance(report.get("culprit"), dict):
                report["culprit"]["by"] = by
        return change
    return [
        ("hang: the device named the spinning launch", device, base,
         under("spin_hang_sigterm.json", change=asked(answered, "the device")), None, "record", "pass",
         "the device was asked: answered in 900 ms (spin_until_flag(flag=0x7f0000000000))"),
        ("hang: the device could not be asked", device, base,
         under("spin_hang_candidates.json", change=asked({"status": "no debugger", "why": "cuda-gdb was not found"},
                                                         None)), None, "record", "fail",
         "device_query status 'no debugger' (cuda-gdb was not found), expected answered"),
        ("hang: exact, but not by the device", device, base,
         under("spin_hang_sigterm.json", change=asked(dict(answered, running=[]), None)), None, "record", "fail",
         "the launch in flight was not named by the device"),
        ("hang: SIGTERM, the spinning launch exactly in flight", term, base, under("spin_hang_sigterm.json"), None,
         "precise", "pass", "the main thread waits at spin.cu:58"),
        ("hang: record mode's candidates hold the spinning launch", term, base, under("spin_hang_candidates.json"),
         None, "record", "pass", "candidates (record mode"),
        ("hang: precise mode must be exact", term, base, under("spin_hang_candidates.json"), None, "precise",
         "fail", "verdict certainty 'candidates', expected exact"),
        ("hang: nothing in flight", term, base, under("spin_hang_idle.json"), None, "record", "fail",
         "certainty 'idle', expected exact or candidates"),
        ("hang: the in-flight launch at another line", term, base,
         under("spin_hang_sigterm.json", change=_set("culprit.stack.1.line", 55)), None, "precise", "fail",
         "in flight: launch line spin.cu:55, expected spin.cu:54"),
        ("hang: the queued launch missing", term, base, under("spin_hang_sigterm.json", change=_set("queued", [])),
         None, "precise", "fail", "consume_after_flag is not among the queued launches"),
        ("hang: the stream's in_flight is another launch", term, base,
         under("spin_hang_sigterm.json", change=_set("streams.0.in_flight", 7)), None, "precise", "fail",
         "has in_flight 7, expected #6"),
        ("hang: the wrong signal", term, base, under("spin_hang_sigterm.json", change=_set("hang.signal", 2)), None,
         "precise", "fail", "hang.signal 2, expected 15"),
        ("hang: no time_unix_ns in the process", term, base,
         under("spin_hang_sigterm.json", change=_set("process.time_unix_ns", None)), None, "precise", "fail",
         "process.time_unix_ns is None"),
        ("hang: SIGTERM report taken in the handler may miss the wait", term, base,
         under("spin_hang_sigterm.json", change=no_wait), None, "precise", "pass", ""),
        ("hang: no main thread", term, base, under("spin_hang_sigterm.json", change=_set("threads.0.tid", 6107)),
         None, "precise", "fail", "the main thread (tid 6100) is not among the 2 threads"),
        ("hang: timeout report seen, then replaced by the SIGTERM one", timeout, base,
         under("spin_hang_sigterm.json"), snap("spin_hang_timeout.json"), "precise", "pass",
         "holds the SIGTERM report"),
        ("hang: timeout report kept after the SIGTERM", timeout, base, under("spin_hang_timeout.json"),
         snap("spin_hang_timeout.json"), "record", "pass", "holds the timeout report"),
        ("hang: no timeout report appeared", timeout, base, under("spin_hang_sigterm.json"), None, "precise",
         "fail", "no hang report with trigger 'timeout' appeared"),
        ("hang: a SIGTERM report where a timeout one is expected", timeout, base, under("spin_hang_sigterm.json"),
         snap("spin_hang_sigterm.json"), "precise", "fail", "hang.trigger 'SIGTERM', expected 'timeout'"),
        ("hang: another timeout than asked", timeout, base, under("spin_hang_sigterm.json"),
         snap("spin_hang_timeout.json", _set("hang.timeout_s", 5)), "precise", "fail",
         "hang.timeout_s 5, expected 3"),
        ("hang: a timeout report without where the main thread waits", timeout, base,
         under("spin_hang_sigterm.json"), snap("spin_hang_timeout.json", no_wait), "precise", "fail",
         "does not show where it waits (spin.cu:58; no frame in spin.cu)"),
        ("hang: it did not die of SIGTERM under culprit", term, base, under("spin_hang_sigterm.json", rc=0), None,
         "precise", "fail", "exit status 0, -15 without culprit"),
        ("hang: it ended by itself without culprit", term, Run(rc=1, stderr=MSG_700), under("spin_hang_sigterm.json"),
         None, "precise", "fail", "ended by itself (exit status 1)"),
        ("hang: a fault report as well", term, base,
         under("spin_hang_sigterm.json", extra=[fixture_at("oob_exact.json", "culprit-6100.json")]), None,
         "precise", "fail", "a fault report was written: culprit-6100.json"),
        ("hang: no report", term, base, Run(rc=-15, stopped=signal.SIGTERM), None, "precise", "fail",
         "0 hang reports, expected one"),
        ("hang: the report file misnamed", term, base, under("spin_hang_sigterm.json", filename="culprit-6100.json"),
         None, "precise", "fail", "report file culprit-6100.json, expected culprit-6100-hang.json"),
        ("hang: still running after SIGTERM under culprit", term, base,
         Run(rc=-9, stopped=signal.SIGTERM, timed_out=True), None, "precise", "fail", "under culprit: timed out"),
        ("hang: no device", term, Run(rc=SKIP_STATUS), Run(rc=SKIP_STATUS), None, "precise", "skip",
         "no CUDA device"),
    ]


NOSYNC_SAYS = ("culprit: gpu_nosync_shared exited with status 0 although a kernel faulted (--error-exitcode N makes "
               "culprit exit N then)\n")


def nosync_selftests():
    """(title, base, run, strict run, expected status, reason text)."""
    name = "culprit-6200.json"

    def under(rc=0, stderr=NOSYNC_SAYS, change=None, filename=name):
        return Run(rc=rc, stderr="culprit: CUDA_ERROR_ILLEGAL_ADDRESS ...\n" + stderr,
                   reports=[fixture_at("nosync_exit.json", filename, change)])

    base = Run(rc=0, stdout=b"first value 1.5\ncounter update queued; exiting without waiting for it\n")
    return [
        ("nosync: exit 0 kept, the fault found at exit, --error-exitcode 9 exits 9", base, under(), under(rc=9),
         "pass", ""),
        ("nosync: found at the primary context's release", base,
         under(change=_set("error.api", "cuDevicePrimaryCtxRelease_v2")), under(rc=9), "pass", ""),
        ("nosync: surfaced somewhere the program never calls", base,
         under(change=_set("error.api", "cuStreamSynchronize")), under(rc=9), "fail", "does not match"),
        ("nosync: --error-exitcode ignored", base, under(), under(rc=0), "fail",
         "--error-exitcode 9: exit status 0, expected 9"),
        ("nosync: culprit says nothing of the exit status", base, under(stderr=""), under(rc=9), "fail",
         "did not say that the command exited 0"),
        ("nosync: no report", base, Run(rc=0, stderr="culprit: no sticky CUDA error in gpu_nosync_shared\n"),
         Run(rc=0), "fail", "no report written (culprit said 'no sticky CUDA error')"),
        ("nosync: exit status changed by culprit", base, under(rc=1), under(rc=9), "fail",
         "exit status 1, 0 without culprit"),
        ("nosync: failed without culprit", Run(rc=1, stderr=MSG_700), under(), under(rc=9), "fail",
         "without culprit: exit status 1, expected 0"),
        ("nosync: candidates for a single unfinished launch", base,
         under(change=_set("verdict.certainty", "candidates")), under(rc=9), "fail", "expected exact"),
        ("nosync: the culprit at another line", base, under(change=_set("culprit.stack.1.line", 30)), under(rc=9),
         "fail", "launch line nosync.cu:30, expected nosync.cu:34"),
        ("nosync: no wall-clock time of the error", base, under(change=_set("error.time_unix_ns", None)),
         under(rc=9), "fail", "error.time_unix_ns is None"),
    ]


TORCHRUN_ERR = ("[rank1]: Traceback (most recent call last):\n"
                "[rank1]: torch.AcceleratorError: CUDA error: device-side assert triggered\n"
                "E1201 12:00:03.123000 7000 torch/distributed/elastic/multiprocessing/api.py:882] failed "
                "(exitcode: 1) local_rank: 1 (pid: 7101) of binary: /usr/bin/python3.12\n"
                "Traceback (most recent call last):\n"
                "torch.distributed.elastic.multiprocessing.errors.ChildFailedError: \n"
                "============================================================\n"
                "ddp_gloo_fault.py FAILED\n")
MERGED = ("culprit: job of 3 ranks (torchrun): rank 1 faulted first: void at::native::(anonymous\n"
          "culprit:   namespace)::nll_loss_forward_reduce_cuda_kernel_2d<float, float, long>(...) launched at\n"
          "culprit:   ddp_gloo_fault.py:48; ranks 0, 2 are collateral (stopped by SIGTERM)\n"
          "culprit:   rank 0 (gpu-node, pid 7100): collateral: stopped by SIGTERM; report\n"
          "culprit:       culprit-gpu-node-7100-hang.json\n"
          "culprit:   rank 1 (gpu-node, pid 7101): faulted first: CUDA_ERROR_ASSERT (710) in\n"
          "culprit:       void at::native::(anonymous namespace)::nll_loss_forward_reduce_cuda_kernel_2d<float,\n"
          "culprit:       float, long>(...) launched at ddp_gloo_fault.py:48; report culprit-gpu-node-7101.json\n"
          "culprit:   rank 2 (gpu-node, pid 7102): exited with status 1; report culprit-gpu-node-7102-exit.json\n"
          "culprit:\n"
          "culprit: rank 1, the first to fault:\n")
JOB_JSON = '{"schema": "culprit.job/1", "first_fault": {"rank": 1}, "processes": []}'


STUCK_MERGED = ("culprit: job of 2 ranks (torchrun): no rank faulted; rank 0 runs at::cuda::(anonymous\n"
                "culprit:   namespace)::spin_kernel(long) launched at ddp_gloo_stuck.py:42 (the device says so):\n"
                "culprit:   look there first; rank 0 hung (stopped by SIGTERM); rank 1 hung (stopped by SIGTERM)\n")
STUCK_JSON = ('{"schema": "culprit.job/1", "first_fault": null, "processes": [{"rank": 0, "stuck_in_kernel": true},'
              ' {"rank": 1}]}')


def stuck_selftests():
    """(title, case, base, run, `culprit report --json` output, expected status, reason text) for the hang job."""
    case = JOB_CASE_BY_NAME["gloo_stuck_kernel"]
    base = Run(rc=1, stopped=signal.SIGTERM)
    answered = {"by": "cuda-gdb", "status": "answered", "ms": 4100,
                "kernels": [{"invocation": "spin_kernel(cycles=4398046511104)"}]}
    spin = {"seq": 40, "kernel": "at::cuda::(anonymous namespace)::spin_kernel(long)", "by": "the device",
            "python": [{"file": "/opt/culprit/tests/gpu/frameworks/ddp_gloo_stuck.py", "function": "main",
                        "line": 42}]}

    def rank(r, culprit, dq=answered, window=None):
        def change(report):
            report["process"].update(rank=r, local_rank=r, world_size=2, pid=7100 + r)
            report["device_query"] = dq
            report["culprit"] = culprit
            report["verdict"] = {"certainty": "exact" if culprit else "candidates" if window else "idle",
                                 "reason": "..."}
            report["candidates"] = window or []
        return fixture_at("ddp_rank0_hang.json", "culprit-gpu-node-%d-hang.json" % (7100 + r), change)

    by_crumbs = STUCK_MERGED.replace("(the device says so)", "(its breadcrumbs say so)")
    window = [dict(spin, by=None), dict(spin, seq=41, by=None)]

    def under(reports, stderr=STUCK_MERGED):
        return Run(rc=1, stderr=stderr, reports=reports, stopped=signal.SIGTERM)

    return [
        ("stuck job: the device names rank 0's spinning kernel, the merged view says so first", case, base,
         under([rank(0, spin), rank(1, None)]), STUCK_JSON, "pass", "rank 0: the device was asked: answered"),
        ("stuck job: rank 0's breadcrumbs name its spinning kernel, the device answered for it too late", case, base,
         under([rank(0, dict(spin, by=None), {"status": "process gone"}), rank(1, None)], stderr=by_crumbs),
         STUCK_JSON, "pass", "rank 0: the device was asked: process gone"),
        ("stuck job: rank 0's launch not named exactly", case, base,
         under([rank(0, None, window=window), rank(1, None)]), STUCK_JSON, "fail",
         "rank 0: the launch in flight was not named exactly"),
        ("stuck job: the device could not be asked where it could settle a window", case, base,
         under([rank(0, None, {"status": "refused", "why": "ptrace"}, window), rank(1, None)]), STUCK_JSON, "fail",
         "rank 0: device_query status 'refused'"),
        ("stuck job: the merged view does not name rank 0 first", case, base,
         under([rank(0, spin), rank(1, None)], stderr="culprit: job of 2 ranks (torchrun): no rank faulted\n"),
         STUCK_JSON, "fail", "merged view: no line says rank 0 runs spin_kernel"),
        ("stuck job: a rank left no report", case, base, under([rank(0, spin)]), STUCK_JSON, "fail",
         "hang reports of ranks [0], expected 0..1"),
    ]


def job_selftests():
    """(title, case, launch line, base, run, `culprit report --json` output, expected status, reason text)."""
    ddp, nccl = JOB_CASE_BY_NAME["ddp_gloo"], JOB_CASE_BY_NAME["nccl_one_rank"]
    base = Run(rc=1, stderr=TORCHRUN_ERR)
    f1 = lambda change=None, name="culprit-gpu-node-7101.json": fixture_at("ddp_rank1_fault.json", name, change)
    h0 = fixture_at("ddp_rank0_hang.json", "culprit-gpu-node-7100-hang.json")
    e2 = fixture_at("ddp_rank2_exit.json", "culprit-gpu-node-7102-exit.json")

    def under(reports, stderr=TORCHRUN_ERR + MERGED, rc=1):
        return Run(rc=rc, stderr=stderr, reports=reports)

    nccl_err = TORCHRUN_ERR.replace("ddp_gloo_fault", "nccl_one_rank_fault").replace("rank1", "rank0")
    nccl_merged = ("culprit: job of 1 rank: rank 0 faulted first: void at::native::(anonymous namespace)::"
                   "indexSelectSmallIndex<float, long, unsigned int, 2, 2, -2>(...) launched at "
                   "nccl_one_rank_fault.py:40\nculprit:   rank 0 (pid 7301 on gpu-node): faulted first\n")
    nccl_json = JOB_JSON.replace('"rank": 1', '"rank": 0')
    n0 = fixture_at("nccl_rank0_fault.json", "culprit-gpu-node-7301.json")
    n0h = fixture_at("nccl_rank0_fault_nccl_history.json", "culprit-gpu-node-7301.json")
    nccl_line = "culprit:   #12 ncclDevKernel_AllReduce_Sum_f32_RING_LL(...)  NCCL AllReduce (sum, f32, ring, LL)\n"
    return [
        ("job: rank 1 faulted first, rank 0 stopped, rank 2 exited; merged view", ddp, 48, base,
         under([f1(), h0, e2]), JOB_JSON, "pass", ""),
        ("job: a rank left no report", ddp, 48, base, under([f1(), h0]), JOB_JSON, "fail",
         "rank 2: no report, expected a hang report or an exit record"),
        ("job: a rank's exit record, then its hang report when torchrun stopped it", ddp, 48, base,
         under([f1(), h0, fixture_at("ddp_rank2_exit.json", "culprit-gpu-node-7100-exit.json",
                                     lambda r: r["process"].update(rank=0, local_rank=0, pid=7100)), e2]),
         JOB_JSON, "pass", "rank 0: exit record (status 1)"),
        ("job: a rank with two hang reports", ddp, 48, base,
         under([f1(), h0, fixture_at("ddp_rank0_hang.json", "culprit-gpu-node-7100-hang.json"), e2]), JOB_JSON,
         "fail", "rank 0: 2 reports of kind hang/hang"),
        ("job: the faulting rank wrote a hang report too", ddp, 48, base,
         under([f1(), h0, e2, fixture_at("ddp_rank0_hang.json", "culprit-gpu-node-7101-hang.json",
                                         lambda r: r["process"].update(rank=1, local_rank=1, pid=7101))]),
         JOB_JSON, "fail", "rank 1: unexpected hang report"),
        ("job: no fault report", ddp, 48, base, under([h0, e2], stderr=TORCHRUN_ERR), JOB_JSON, "fail",
         "0 fault reports from rank 1, expected one"),
        ("job: another rank faulted too", ddp, 48, base,
         under([f1(), f1(_set("process.rank", 0), "culprit-gpu-node-7100.json"), h0, e2]), JOB_JSON, "fail",
         "rank 0 wrote a fault report too"),
        ("job: the merged view does not name the first fault", ddp, 48, base, under([f1(), h0, e2], TORCHRUN_ERR),
         JOB_JSON, "fail", "merged view: no line says rank 1 faulted first"),
        ("job: the merged view names another line", ddp, 48, base,
         under([f1(), h0, e2], TORCHRUN_ERR + MERGED.replace("ddp_gloo_fault.py:48", "ddp_gloo_fault.py:50")),
         JOB_JSON, "fail", "merged view: the faulted-first line does not say ddp_gloo_fault.py:48"),
        ("job: the merged view names another kernel", ddp, 48, base,
         under([f1(), h0, e2], TORCHRUN_ERR + MERGED.replace("nll_loss_forward_reduce", "cunn_SoftMaxForward")),
         JOB_JSON, "fail", "merged view: the faulted-first line does not name a kernel like 'nll_loss'"),
        ("job: the line on another paragraph than the faulted-first one", ddp, 48, base,
         under([f1(), h0, e2], TORCHRUN_ERR + MERGED.replace("culprit:   ddp_gloo_fault.py:48;", "culprit: x;")),
         JOB_JSON, "fail", "merged view: the faulted-first line does not say ddp_gloo_fault.py:48"),
        ("job: the merged view leaves a rank out", ddp, 48, base,
         under([f1(), h0, e2], TORCHRUN_ERR + MERGED.replace("culprit:   rank 2", "culprit: ?").replace(
             "ranks 0, 2", "rank 0")), JOB_JSON, "fail", "merged view: no line for rank 2"),
        ("job: a stopped rank not called collateral", ddp, 48, base,
         under([f1(), h0, e2], TORCHRUN_ERR + MERGED.replace("collateral", "stopped")), JOB_JSON, "fail",
         "rank 0 left a hang report but no rank is called collateral"),
        ("job: ranks that ended on their own need not be collateral", ddp, 48, base,
         under([f1(), fixture_at("ddp_rank2_exit.json", "culprit-gpu-node-7100-exit.json",
                                 lambda r: r["process"].update(rank=0, local_rank=0, pid=7100)), e2],
               TORCHRUN_ERR + MERGED.replace("collateral", "clean")), JOB_JSON, "pass", ""),
        ("job: a report without the host in its name", ddp, 48, base,
         under([f1(name="culprit-7101.json"), h0, e2]), JOB_JSON, "fail",
         "report file culprit-7101.json, expected culprit-gpu-node-7101.json"),
        ("job: the world size wrong", ddp, 48, base, under([f1(_set("process.world_size", 4)), h0, e2]), JOB_JSON,
         "fail", "rank 1: process.world_size 4, expected 3"),
        ("job: no launcher", ddp, 48, base, under([f1(_set("process.launcher", None)), h0, e2]), JOB_JSON, "fail",
         "process.launcher None, expected 'torchrun'"),
        ("job: no rank at all", ddp, 48, base, under([f1(_set("process.rank", None)), h0, e2]), JOB_JSON, "fail",
         "process.rank is None"),
        ("job: the faulting rank's verdict not exact", ddp, 48, base,
         under([f1(_set("verdict.certainty", "candidates")), h0, e2]), JOB_JSON, "fail",
         "rank 1: verdict certainty 'candidates', expected exact"),
        ("job: the culprit at another python line", ddp, 48, base,
         under([f1(_set("culprit.python.1.line", 50)), h0, e2]), JOB_JSON, "fail",
         "python line wrong: launch frames at ddp_gloo_fault.py:50"),
        ("job: the job view's first fault is another rank", ddp, 48, base, under([f1(), h0, e2]),
         '{"schema": "culprit.job/1", "first_fault": {"rank": 0}}', "fail", "first_fault.rank 0, expected 1"),
        ("job: culprit report --json is not the job view", ddp, 48, base, under([f1(), h0, e2]),
         '[{"schema": "culprit.report/1"}]', "fail", "schema 'list', expected 'culprit.job/1'"),
        ("job: exit status changed", ddp, 48, base, under([f1(), h0, e2], rc=0), JOB_JSON, "fail",
         "exit status 0, 1 without culprit"),
        ("job: did not fail without culprit", ddp, 48, Run(rc=0), under([f1(), h0, e2]), JOB_JSON, "fail",
         "the job did not fail without culprit"),
        ("job: skipped by the ranks", ddp, 48, Run(rc=1, stderr="skipped: no CUDA device\n" + TORCHRUN_ERR),
         Run(rc=1), "", "skip", "skipped: no CUDA device"),
        ("job: one NCCL rank, no NCCL kernel listed", nccl, 40, Run(rc=1, stderr=nccl_err),
         under([n0], nccl_err + nccl_merged), nccl_json, "pass", ""),
        ("job: an NCCL kernel listed and shown as its collective", nccl, 40, Run(rc=1, stderr=nccl_err),
         under([n0h], nccl_err + nccl_merged + nccl_line), nccl_json, "pass", ""),
        ("job: an NCCL kernel listed but not decoded", nccl, 40, Run(rc=1, stderr=nccl_err),
         under([n0h], nccl_err + nccl_merged), nccl_json, "fail",
         "is not shown as the collective NCCL AllReduce"),
    ]


MERGED_2NODES = (
    "culprit: job of 4 ranks (torchrun): rank 2 faulted first: void at::native::(anonymous\n"
    "culprit:     namespace)::nll_loss_forward_reduce_cuda_kernel_2d<float, float, long>(...) launched at\n"
    "culprit:     ddp_gloo_fault.py:48; ranks 0, 3 are collateral (stopped by SIGTERM); rank 1 saw no fault\n"
    "culprit:   rank 0 (gpu-node, pid 7100): collateral: stopped by SIGTERM; report culprit-gpu-node-7100-hang.json\n"
    "culprit:   rank 1 (gpu-node, pid 7101): saw no fault; it exited with status 1; report\n"
    "culprit:       culprit-gpu-node-7101-exit.json\n"
    "culprit:   rank 2 (gpu-node, pid 7202): faulted first: CUDA_ERROR_ASSERT (710) in void at::native::...\n"
    "culprit:       launched at ddp_gloo_fault.py:48; report culprit-gpu-node-7202.json\n"
    "culprit:   rank 3 (gpu-node, pid 7203): collateral: stopped by SIGTERM; report culprit-gpu-node-7203-hang.json\n"
    "culprit:\nculprit: rank 2, the first to fault:\n")
# what node 1's own culprit run says: only its ranks, the others missing from its run
NODE1_VIEW = ("culprit: job of 4 ranks (torchrun): rank 2 faulted first: void at::native::(anonymous\n"
              "culprit:     namespace)::nll_loss_forward_reduce_cuda_kernel_2d<float, float, long>(...) launched at\n"
              "culprit:     ddp_gloo_fault.py:48; rank 3 is collateral (stopped by SIGTERM); ranks 0, 1 are missing\n")


def job_json_of(ranks, missing=()):
    """`culprit report --json` of one job whose processes are ranks, those in missing without a report."""
    procs = [{"rank": r, "status": "missing" if r in missing else "collateral"} for r in ranks]
    return json.dumps({"schema": "culprit.job/1", "first_fault": {"rank": 2}, "processes": procs})


def nodes_selftests():
    """(title, case, launch line, base, run, `culprit report --json` output, `culprit report` text, expected
    status, reason text) for the job of two torchrun nodes, each under a culprit run of its own."""
    case = JOB_CASE_BY_NAME["ddp_gloo_2nodes"]
    base = Run(rc=1, stderr=TORCHRUN_ERR.replace("rank1", "rank2") + TORCHRUN_ERR.replace("rank1", "rank0"))

    def proc(rank, local, pid):
        return lambda r: r["process"].update(rank=rank, local_rank=local, pid=pid, world_size=4,
                                             job="torchrun:ddp_gloo_2nodes.1.culprit")

    f2 = fixture_at("ddp_rank1_fault.json", "culprit-gpu-node-7202.json", proc(2, 0, 7202))
    h0 = fixture_at("ddp_rank0_hang.json", "culprit-gpu-node-7100-hang.json", proc(0, 0, 7100))
    e1 = fixture_at("ddp_rank2_exit.json", "culprit-gpu-node-7101-exit.json", proc(1, 1, 7101))
    h3 = fixture_at("ddp_rank0_hang.json", "culprit-gpu-node-7203-hang.json", proc(3, 1, 7203))
    runs = [Run(rc=1, stderr=TORCHRUN_ERR.replace("rank1", "rank2") + NODE1_VIEW),
            Run(rc=1, stderr=TORCHRUN_ERR.replace("rank1", "rank0"))]
    good = Run(rc=1, stderr=runs[0].stderr + runs[1].stderr, reports=[f2, h0, e1, h3])
    whole = job_json_of(range(4))
    return [
        ("job of 2 nodes: one job of 4 ranks, rank 2 first in the merged view", case, 48, base, good, whole,
         MERGED_2NODES, "pass", ""),
        ("job of 2 nodes: culprit report --json saw only one node's ranks", case, 48, base, good,
         job_json_of(range(4), missing=(0, 1)), MERGED_2NODES, "fail",
         "ranks [2, 3] in the job, expected 0..3 from both nodes"),
        ("job of 2 nodes: the nodes' reports not merged into one job", case, 48, base, good,
         "[" + job_json_of((0, 1)) + ", " + job_json_of((2, 3)) + "]", MERGED_2NODES, "fail",
         "schema 'list', expected 'culprit.job/1'"),
        ("job of 2 nodes: only a node's own view names the first fault", case, 48, base, good, whole,
         "culprit: job of 2 ranks ...\n", "fail", "merged view: no line says rank 2 faulted first"),
        ("job of 2 nodes: the merged view leaves a rank of the other node out", case, 48, base, good, whole,
         MERGED_2NODES.replace("culprit:   rank 1 ", "culprit: x ").replace("rank 1 saw", "x saw"), "fail",
         "merged view: no line for rank 1"),
        ("job of 2 nodes: a local rank counted across nodes", case, 48, base,
         Run(rc=1, stderr=good.stderr, reports=[f2, h0, e1, fixture_at(
             "ddp_rank0_hang.json", "culprit-gpu-node-7203-hang.json", proc(3, 3, 7203))]), whole, MERGED_2NODES,
         "fail", "rank 3: process.local_rank 3, expected 1"),
        ("job of 2 nodes: a rank of the other node left nothing", case, 48, base,
         Run(rc=1, stderr=good.stderr, reports=[f2, h0, h3]), whole, MERGED_2NODES, "fail",
         "rank 1: no report, expected a hang report or an exit record"),
    ]


def nodes_command_selftests():
    """The two nodes' torchrun commands and the nodes' runs seen as one, as (title, ok, detail)."""
    case = JOB_CASE_BY_NAME["ddp_gloo_2nodes"]
    cmds = jobs_group.node_cmds(case, sys.executable, "/x/ddp_gloo_fault.py", 29611, "rid")

    def opt(cmd, name):
        return cmd[cmd.index(name) + 1] if name in cmd else None

    ok = len(cmds) == 2 and all(
        opt(c, "--nnodes") == "2" and opt(c, "--node-rank") == str(k) and opt(c, "--nproc-per-node") == "2" and
        opt(c, "--rdzv-backend") == "c10d" and opt(c, "--rdzv-endpoint") == "localhost:29611" and
        opt(c, "--rdzv-id") == "rid" and opt(c, "--rdzv-conf") == "is_host=%d" % (k == 0) and
        opt(c, "--local-addr") == "127.0.0.1" and c[-1] == "/x/ddp_gloo_fault.py" for k, c in enumerate(cmds))
    results = [("job of 2 nodes: one torchrun per node, one rendezvous, node 0 hosts its store", ok, repr(cmds))]
    one = jobs_group.nodes_as_one([Run(rc=0, stderr="a\n"), Run(rc=-15, stderr="b\n", timed_out=True)])
    results.append(("job of 2 nodes: the runs as one fail when a node failed, with both outputs",
                    one.rc == 1 and one.stderr == "a\nb\n" and one.timed_out, repr(vars(one))))
    one = jobs_group.nodes_as_one([Run(rc=0), Run(rc=0)])
    results.append(("job of 2 nodes: the runs as one pass when both did", one.rc == 0 and not one.timed_out,
                    repr(vars(one))))
    return results


GPT2_CUBLAS = ("Traceback (most recent call last):\n  File \"gpt2_vocab_oob.py\", line 37, in main\n"
               "RuntimeError: CUDA error: CUBLAS_STATUS_INTERNAL_ERROR when calling `cublasLtMatmul( ... )`\n")
GPT2_ASSERT = ("Traceback (most recent call last):\n  File \"gpt2_vocab_oob.py\", line 39, in main\n"
               "torch.AcceleratorError: CUDA error: device-side assert triggered\n")


def gpt2_selftests():
    """(title, base, first run, second run, expected status, reason text, note text) for the GPT-2 case."""
    base = Run(rc=1, stderr=GPT2_CUBLAS)

    def under(name, stderr=GPT2_ASSERT, rc=1):
        return Run(rc=rc, stderr=stderr + "culprit: verdict ...\n", reports=[fixture(name)])

    no_report = Run(rc=1, stderr=GPT2_CUBLAS + "culprit: no sticky CUDA error in python3\n")
    return [
        ("gpt2: a report each run, surfacing in cuBLAS's launch and at exit", base,
         under("gpt2_cublas_thread.json"), under("gpt2_at_exit.json", GPT2_CUBLAS), "pass", "",
         "surfaced in cuLaunchKernelEx (710) on thread 8033, not the main thread"),
        ("gpt2: no report in the second run", base, under("gpt2_cublas_thread.json"), no_report, "fail",
         "run 2 under culprit: no report written (culprit said 'no sticky CUDA error')", ""),
        ("gpt2: the exception is no CUDA error under culprit", base,
         under("gpt2_cublas_thread.json", "Traceback (most recent call last):\nKeyError: 'loss'\n"),
         under("gpt2_at_exit.json"), "fail", "is not a CUDA error like", ""),
        ("gpt2: exit status changed in the second run", base, under("gpt2_cublas_thread.json"),
         under("gpt2_at_exit.json", rc=-6), "fail", "run 2 under culprit: exit status -6, 1 without culprit", ""),
        ("gpt2: the culprit is not the embedding", base, under("gpt2_cublas_thread.json"),
         under("py_xent_exact.json"), "fail", "run 2 under culprit: culprit: kernel", ""),
    ]


MSG_ASSERT = "gpu-test: CUDA error at cudaDeviceSynchronize() (assert.cu:56): device-side assert triggered\n"
MSG_MISALIGNED = "gpu-test: CUDA error at cudaDeviceSynchronize() (misaligned.cu:47): misaligned address\n"
DUMP_STARTS = ("Starting GPU coredump generation, set the CUDA_COREDUMP_SHOW_PROGRESS environment variable to 1 to "
               "enable more detailed output\n")


def _gone(pid, wait=30.0):
    """Whether process pid is gone (or a zombie) within wait seconds."""
    end = time.monotonic() + wait
    while True:
        try:
            with open("/proc/%d/stat" % pid, encoding="utf-8", errors="replace") as f:
                if f.read().rsplit(")", 1)[1].split()[0] == "Z":
                    return True
        except (OSError, IndexError):
            return True
        if time.monotonic() > end:
            return False
        time.sleep(0.1)


def run_new_selftests():
    """The hang, no-synchronize, job and GPT-2 self-tests, as (title, ok, detail)."""
    results = []
    for title, case, base, run, timeout_report, mode, want_status, want_text in hang_selftests():
        o = judge_hang(case, "static", 54, base, run, mode, timeout_report)
        text = " ".join(o.reasons + o.notes + [o.path])
        results.append((title, o.status == want_status and want_text in text,
                        "got %s: %s" % (o.status, text)))
    case = CASE_BY_NAME["nosync"]
    for title, base, run, strict, want_status, want_text in nosync_selftests():
        o = judge_nosync(case, "shared", 34, base, run, strict)
        text = " ".join(o.reasons + [o.path])
        results.append((title, o.status == want_status and want_text in text,
                        "got %s: %s" % (o.status, text)))
    for title, case, line, base, run, job_json, want_status, want_text in job_selftests():
        o = judge_job(case, line, base, run, job_json)
        text = " ".join(o.reasons + o.notes + [o.path])
        results.append((title, o.status == want_status and want_text in text,
                        "got %s: %s" % (o.status, text)))
    for title, case, base, run, job_json, want_status, want_text in stuck_selftests():
        o = judge_stuck(case, 42, base, run, job_json)
        text = " ".join(o.reasons + o.notes + [o.path])
        results.append((title, o.status == want_status and want_text in text,
                        "got %s: %s" % (o.status, text)))
    for title, case, line, base, run, job_json, merged, want_status, want_text in nodes_selftests():
        o = judge_job(case, line, base, run, job_json, merged=merged)
        text = " ".join(o.reasons + o.notes + [o.path])
        results.append((title, o.status == want_status and want_text in text,
                        "got %s: %s" % (o.status, text)))
    results += nodes_command_selftests()
    gpt2 = PY_CASE_BY_NAME["gpt2_vocab"]
    for title, base, first, second, want_status, want_text, want_note in gpt2_selftests():
        o = judge_py(gpt2, 35, None, base, first)
        judge_py_again(o, 35, base, second, 2)
        text = " ".join(o.reasons + [o.path])
        ok = o.status == want_status and want_text in text and want_note in " ".join(o.notes)
        results.append((title, ok, "got %s: %s; notes: %s" % (o.status, text, o.notes)))

    # a child in a session of its own whose own child is in another one, as torchrun starts its workers
    spawn = ("import subprocess, sys, time\n"
             "p = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'], start_new_session=True)\n"
             "print(p.pid, flush=True)\ntime.sleep(60)\n")
    child = subprocess.Popen([sys.executable, "-c", spawn], stdout=subprocess.PIPE, start_new_session=True)
    grandchild = int(child.stdout.readline())
    found = descendants(os.getpid())
    kill_tree(child.pid)
    ok = child.pid in found and grandchild in found and child.wait(timeout=30) == -signal.SIGKILL and \
        _gone(grandchild)
    child.stdout.close()
    results.append(("the processes below a pid are found and killed, other sessions too", ok, repr(found)))

    orphan = ("import subprocess, sys\n"
              "p = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'], start_new_session=True,\n"
              "                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)\nprint(p.pid)\n")
    run = execute([sys.executable, "-c", orphan], os.environ.copy(), 60)
    left = int(run.stdout or b"0")
    ok = left > 0 and run.rc == 0 and "1 process(es) it left behind were killed" in run.stop_note and _gone(left)
    results.append(("what a run leaves behind is found by its token and killed", ok,
                    "rc %s note %r" % (run.rc, run.stop_note)))

    script = ("import sys, time\nprint('spinning: now', flush=True)\n"
              "import signal\nsignal.signal(signal.SIGTERM, lambda *a: sys.exit(5))\ntime.sleep(60)\n")
    run = execute([sys.executable, "-c", script], os.environ.copy(), 60, stop=Stop(b"spinning:", hold=0.2))
    ok = run.stopped == signal.SIGTERM and run.rc == 5 and not run.timed_out and b"spinning: now" in run.stdout
    results.append(("a Stop run is signalled once its ready line appeared", ok,
                    "rc %s stopped %s timed out %s" % (run.rc, run.stopped, run.timed_out)))
    stubborn = "import signal, time\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\nprint('spinning:', flush=True)\n" \
               "time.sleep(60)\n"
    run = execute([sys.executable, "-c", stubborn], os.environ.copy(), 60,
                  stop=Stop(b"spinning:", hold=0.1, grace=0.5))
    ok = run.rc == -signal.SIGKILL and run.timed_out and "after SIGTERM" in run.stop_note
    results.append(("a Stop run that ignores its signal is killed at the bound", ok,
                    "rc %s timed out %s note %r" % (run.rc, run.timed_out, run.stop_note)))
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
             (not c.graph or _has_marker(c.src, CAPTURE_MARKER)) and
             (c.kind != "hang" or _has_marker(c.src, WAIT_MARKER)) for c in CASES)
    results.append(("every case's source exists and has one marker (and hang cases one wait marker)", ok, ""))
    dumped = [c for c in CASES if c.coredump]
    ok = all(_has_marker(c.fault_src, FAULT_MARKER) for c in dumped) and len(dumped) == 15 and \
        not [c for c in dumped if c.healthy or c.graph or c.kind != "fault" or c.mode or c.env or c.same_as] and \
        [c.name for c in PY_CASES if c.coredump] == ["torch_xent3d", "torch_gather"]
    results.append(("every --coredump case's faulting source has one CULPRIT-FAULT line", ok,
                    ", ".join(c.fault_src for c in dumped if not _has_marker(c.fault_src, FAULT_MARKER))))
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
    results += run_new_selftests()
    # the --coredump judges' part lives in a file of its own, which takes this file's fixtures and messages
    from check_selftest_coredump import run_coredump_selftests, address_selftests
    results += run_coredump_selftests()
    results += address_selftests()

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
