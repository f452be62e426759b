"""The C programs' cases (the c and hangs groups of check.py): each program, how culprit runs it, and what must
come out of it. check.py judges them; the sources are tests/gpu/*.cu.

Standard library only; Python 3.8 or later.
"""

STICKY = tuple(range(700, 720))  # CUDA's sticky (context-corrupting) error codes


class Case:
    """One scenario: a program (with arguments and environment), how culprit runs it, and what must come out."""

    def __init__(self, name, prog, kernel=None, codes=(700,), api=r"Launch", args=(), env=None, mode=None,
                 stream_kind=None, rerun=None, same_as=None, healthy=False, src=None, graph=False, kind="fault",
                 group="c", trigger=None, hang_timeout=None, queued_kernel=None, coredump=False, fault_src=None,
                 verdict_says=None, page_stream=False, by_device=False, note=""):
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
        self.kind = kind            # fault | hang (stopped while a kernel spins) | nosync (exits 0 after a fault)
        self.group = group          # the --only group: c, or hangs for the hang cases
        self.trigger = trigger      # hang cases: the hang.trigger expected ("timeout" or "SIGTERM")
        self.hang_timeout = hang_timeout  # hang cases: culprit run --hang-timeout S, None for none
        self.queued_kernel = queued_kernel  # hang cases: the kernel queued behind the one in flight
        self.wait_line = 0          # hang cases: the CULPRIT-WAIT line (where the host waits), filled in by the suite
        self.coredump = coredump    # --coredump runs it once more, under `culprit run --coredump`
        self.fault_src = fault_src or self.src  # the source holding the faulting statement (its CULPRIT-FAULT line)
        # an illegal or misaligned address: the --coredump row's faulting lane is compared with compute-sanitizer's
        self.sanitize = coredump and kind == "fault" and set(self.codes) <= {700, 716}
        self.fault_line = 0         # that line, filled in by the suite
        self.verdict_says = verdict_says  # a pattern a paragraph of an exact verdict's printed text must hold
        self.page_stream = page_stream  # one kernel on several streams: the kernel log's page must keep the
                                        # candidates to the faulting stream's (or name the launch)
        self.by_device = by_device  # hang cases: culprit run must have asked the device (cuda-gdb attached to the
                                    # live process) and named the launch in flight by its answer
        self.note = note            # what the case is about


CASES = [
    Case("oob", "oob", "scatter_grad", api=r"Memcpy|Launch|Synchronize", stream_kind="legacy", coredump=True,
         note="out-of-bounds write, surfaces at a later cudaMemcpy"),
    Case("oob_blocking", "oob", "scatter_grad", api=r".", mode="blocking", stream_kind="legacy", same_as="oob",
         note="--mode blocking must name the same launch, exactly"),
    Case("oob_clb", "oob", "scatter_grad", api=r".", env={"CUDA_LAUNCH_BLOCKING": "1"}, stream_kind="legacy",
         same_as="oob", note="CUDA_LAUNCH_BLOCKING=1 set as well"),
    Case("assert", "assert", "histogram_checked", codes=(710,), api=r"Synchronize|Launch", stream_kind="legacy",
         coredump=True, note="device-side assert()"),
    Case("misaligned", "misaligned", "read_field", codes=(716,), api=r"Synchronize|Launch",
         stream_kind="legacy", coredump=True, note="misaligned 4-byte load"),
    Case("trap", "trap", "check_weights", codes=STICKY, api=r"Synchronize|Launch", stream_kind="legacy",
         coredump=True, note="__trap(); any sticky code is accepted and shown"),
    Case("streams4", "streams4", "gather_rows", api=r"Synchronize|Launch|WriteValue", stream_kind="created",
         rerun="window", coredump=True, note="fault on one of four concurrent streams"),
    Case("threads8", "threads8", "tile_lookup", api=r"Synchronize|Launch|WriteValue", stream_kind="created",
         rerun="full", coredump=True, note="eight host threads with a stream each"),
    Case("surface_sync", "surface", "relax_step", api=r"Synchronize", args=["sync"], stream_kind="created",
         coredump=True, note="surfaces at cudaDeviceSynchronize"),
    Case("surface_memcpy", "surface", "relax_step", api=r"Memcpy", args=["memcpy"], stream_kind="created",
         coredump=True, note="surfaces at cudaMemcpy"),
    Case("surface_streamsync", "surface", "relax_step", api=r"StreamSynchronize", args=["streamsync"],
         stream_kind="created", coredump=True, note="surfaces at cudaStreamSynchronize"),
    Case("surface_free", "surface", "relax_step", api=r"Free", args=["free"], stream_kind="created",
         coredump=True, note="surfaces at cudaFree"),
    Case("ptds", "ptds", "segment_add", api=r"Synchronize|Launch", stream_kind="per-thread", coredump=True,
         note="built with --default-stream per-thread"),
    Case("driver_api", "driver_api", "drv_scatter", api=r"Memcpy|Launch", stream_kind="created",
         src="driver_api.cpp", coredump=True, fault_src="driver_kernels.cu",
         note="driver API (cuModuleLoadData + cuLaunchKernel), linked with -lcuda"),
    Case("launch_ex", "launch_ex", "tile_copy", api=r"Synchronize|Launch", stream_kind="created", coredump=True,
         note="cudaLaunchKernelEx with a cluster attribute"),
    Case("graph", "graph", "scatter_tokens", api=r"Synchronize|Launch", stream_kind="created", graph=True,
         note="fault in a node of a replayed CUDA graph (stream capture)"),
    Case("graph_precise", "graph", "scatter_tokens", api=r"Synchronize|Launch", stream_kind="created", graph=True,
         mode="precise", note="the same in precise mode: graph breadcrumbs name the faulting node"),
    Case("underrun", "underrun", "shift_left", api=r"Memcpy|Launch|Synchronize", stream_kind="legacy",
         coredump=True, note="writes a few elements before its buffer (unmapped reserved addresses before it)"),
    Case("after_free", "after_free", "consume", api=r"Memcpy|Launch|Synchronize", stream_kind="legacy",
         coredump=True, verdict_says=r"word 0 points to offset 0 of memory freed before this launch \(a use after "
         r"free\): the allocation of 268435456 bytes",
         note="reads a large buffer after cudaFree: the verdict calls its argument a use after free"),
    Case("young", "young", "normalize_rows", api=r"Synchronize|Launch", stream_kind="created",
         note="a fault among a new stream's first six launches: exact in one record run (a young stream's marks)"),
    Case("longk", "longk", "relax_sweep", api=r"Memcpy|Launch|Synchronize", stream_kind="legacy",
         note="a fault at launch 667 among 250 us kernels: exact in one record run (long launches are all marked)"),
    Case("side", "side", "apply_mask", codes=(710,), api=r"Synchronize|Launch", stream_kind="created",
         note="an assert in one of three launches of one kernel on a side stream beside a dense main stream"),
    Case("assert_launch", "assert_launch", "check_labels", codes=(710,), api=r"Launch", stream_kind="created",
         verdict_says=r"the device assert names check_labels",
         note="an assert deep in a dense stream surfaces at a launch (cudaGetLastError after each): the assert's "
         "text, printed by then, narrows the window of unfinished launches to the one check kernel"),
    Case("page_streams", "page_streams", "add_rows", api=r"Synchronize|Launch|Memcpy", stream_kind="created",
         rerun="window", page_stream=True,
         note="one kernel on two streams, a launch on one writes past its buffer: the kernel log's page keeps that "
         "stream's launches"),
    Case("healthy", "healthy", healthy=True, note="no fault: same stdout, exit 0, no report"),
    Case("nosync", "nosync", "bump_counter", api=r"^exit$|Ctx|Unload", stream_kind="legacy", kind="nosync",
         note="faulty kernel, no synchronize, main returns 0: still exit 0, a report, --error-exitcode 9 exits 9"),
    Case("spin_timeout", "spin", "spin_until_flag", stream_kind="created", kind="hang", group="hangs",
         trigger="timeout", hang_timeout=3, queued_kernel="consume_after_flag",
         note="a kernel spins forever: culprit run --hang-timeout 3 reports it, then SIGTERM stops the program"),
    Case("spin_sigterm", "spin", "spin_until_flag", stream_kind="created", kind="hang", group="hangs",
         trigger="SIGTERM", queued_kernel="consume_after_flag",
         note="the same stopped by SIGTERM: it dies of SIGTERM, the hang report names the launch in flight"),
    Case("spin_device", "spin", "spin_until_flag", stream_kind="created", kind="hang", group="hangs",
         trigger="SIGTERM", queued_kernel="consume_after_flag", mode="record", by_device=True,
         note="record mode, stopped by SIGTERM: culprit run attaches cuda-gdb to the live process, the device runs "
              "spin_until_flag, and the spinning launch behind the queue is named exactly, by the device"),
]
CASE_BY_NAME = {c.name: c for c in CASES}
