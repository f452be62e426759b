/* The report's schema: every key of culprit's JSON report (culprit.report/1, docs/report.md) and of the job view
 * (culprit.job/1), one macro each, grouped by the object where it first appears, and a few typed accessors for
 * what many readers ask of a report. Every reader (json_get...) and writer (jw_key, json_set...) names a key
 * through these macros, never as a string of its own (the test style_schema checks it). The other JSON formats
 * the command writes (the Chrome trace, the events line, torch's error file) keep their keys in format_keys.h.
 * A key used by several objects is defined once, where it first appears; its comment names the others. */
#ifndef CULPRIT_RENDER_REPORT_KEYS_H
#define CULPRIT_RENDER_REPORT_KEYS_H

/* ---- The top level of a report (fault, hang and exit alike) ---- */
/* the format's name and version: "culprit.report/1" (a job view: "culprit.job/1") */
#define RK_SCHEMA "schema"
/* "fault", "hang" or "exit" (reports of old versions have none: faults); in a launch, a stream, a range: its kind */
#define RK_KIND "kind"
/* object: the writer's name, version and unwinder */
#define RK_TOOL "tool"
/* object: the process that wrote the report (pid, exe, argv, host, rank fields) */
#define RK_PROCESS "process"
/* the interpreter seen, or why Python frames are missing */
#define RK_PYTHON_STATUS "python_status"
/* object: the options the library ran with (mode, ring, stack_depth, kernels, launches, mark) */
#define RK_CONFIG "config"
/* object: the sticky error and where it surfaced; in a job view's first fault, the error's name */
#define RK_ERROR "error"
/* object: the call made to flush the device's printf buffer after an assert, and its result */
#define RK_PRINTF_FLUSH "printf_flush"
/* object: certainty, reason, window (a job view: its one-line verdict, a string) */
#define RK_VERDICT "verdict"
/* LAUNCH (or null): the launch that faulted, or for a hang the one in flight */
#define RK_CULPRIT "culprit"
/* array of LAUNCH: every launch that may have faulted when the verdict is "candidates" */
#define RK_CANDIDATES "candidates"
/* array of LAUNCH: the launches before the culprit on its stream, oldest first */
#define RK_HISTORY "history"
/* hang: array of LAUNCH behind the one in flight on its stream; a stream entry: how many */
#define RK_QUEUED "queued"
/* array: one entry per stream the process launched on */
#define RK_STREAMS "streams"
/* object: counters of the library (launches, records, breadcrumbs, threads) */
#define RK_STATS "stats"
/* array of OPNOTE: operators whose arguments broke their contract */
#define RK_DIAGNOSIS "diagnosis"
/* array of {id, python}: other Python threads' frames */
#define RK_PYTHON_THREADS "python_threads"
/* hang: array of every thread's state and stack; in stats: threads that launched */
#define RK_THREADS "threads"
/* hang: threads not listed (over 256) */
#define RK_THREADS_LEFT_OUT "threads_left_out"
/* object: what stopped or asked a hang report (trigger, signal, times) */
#define RK_HANG "hang"
/* exit record: object with the status given to exit() */
#define RK_EXIT "exit"
/* array of strings: the last lines of NCCL's log of the process */
#define RK_NCCL_LOG "nccl_log"

/* ---- Added to a report by the command (culprit run, culprit report) ---- */
/* array of ASSERT: device-assert lines the process printed; [] on a device assert's report (RK_ERROR_ASSERT) when
 * culprit run read all of the output and saw none */
#define RK_DEVICE_ASSERTS "device_asserts"
/* array of LAUNCH: the candidates an assert ruled out */
#define RK_CANDIDATES_BEFORE_ASSERT "candidates_before_assert"
/* object: what the GPU core dump says */
#define RK_COREDUMP "coredump"
/* array of LAUNCH: the candidates the core dump ruled out */
#define RK_CANDIDATES_BEFORE_COREDUMP "candidates_before_coredump"
/* object: the kernel's log line of the GPU memory fault */
#define RK_GPU_FAULT_LOG "gpu_fault_log"
/* array of LAUNCH: the candidates the fault's page ruled out */
#define RK_CANDIDATES_BEFORE_FAULT_PAGE "candidates_before_fault_page"
/* object: the blocking rerun of the window and its outcome */
#define RK_RERUN "rerun"
/* array of LAUNCH: the other candidates when a rerun confirmed one */
#define RK_CANDIDATES_BEFORE_RERUN "candidates_before_rerun"
/* hang: object: the device asked (through cuda-gdb) which kernels run */
#define RK_DEVICE_QUERY "device_query"
/* array of LAUNCH: the candidates the device's answer ruled out */
#define RK_CANDIDATES_BEFORE_DEVICE "candidates_before_device"
/* object: what the faulting address touched, from the allocation table */
#define RK_FAULT_ADDRESS "fault_address"
/* object: the allocation table (live and recently freed device ranges) */
#define RK_ALLOCATIONS "allocations"

/* ---- tool ---- */
/* tool, error, thread, op, kernel log: the name; a job view's nccl: the collective's name */
#define RK_NAME "name"
/* culprit's version */
#define RK_VERSION "version"
/* "libunwind" or "glibc-backtrace" */
#define RK_UNWINDER "unwinder"

/* ---- process ---- */
/* process id (also in a job view's process, a thread of a hang, the kernel log's line) */
#define RK_PID "pid"
/* parent's process id */
#define RK_PPID "ppid"
/* path of the executable */
#define RK_EXE "exe"
/* the kernel's name of the process (/proc/self/comm) */
#define RK_COMM "comm"
/* array of strings: the command line */
#define RK_ARGV "argv"
/* how many arguments at the end of argv were left out (over 16 MiB) */
#define RK_ARGV_LEFT_OUT "argv_left_out"
/* the host's name */
#define RK_HOSTNAME "hostname"
/* when the report was written, seconds since the epoch */
#define RK_TIME_UNIX "time_unix"
/* the same moment in nanoseconds (also error, hang, a job view's process) */
#define RK_TIME_UNIX_NS "time_unix_ns"
/* the launcher's rank of the process (also the job view's) */
#define RK_RANK "rank"
/* the rank within its host */
#define RK_LOCAL_RANK "local_rank"
/* the number of ranks of the job */
#define RK_WORLD_SIZE "world_size"
/* torchrun, openmpi, mpich or slurm */
#define RK_LAUNCHER "launcher"
/* the launcher's name for the job */
#define RK_JOB "job"
/* the `culprit run` command that ran it (CULPRIT_RUN_ID) */
#define RK_RUN_ID "run_id"

/* ---- config ---- */
/* record, precise or blocking */
#define RK_MODE "mode"
/* records per thread's ring */
#define RK_RING "ring"
/* native frames kept per launch */
#define RK_STACK_DEPTH "stack_depth"
/* the kernels recorded (CULPRIT_KERNELS); device_query: the rows of `info cuda kernels` */
#define RK_KERNELS "kernels"
/* the launch numbers recorded (CULPRIT_LAUNCHES); stats, a stream: launches counted; an ASSERT: the launches it fits */
#define RK_LAUNCHES "launches"
/* how breadcrumbs were written (memset or write) */
#define RK_MARK "mark"
/* the driver's code when it refused the memset and writes took over */
#define RK_MEMSET_REFUSED "memset_refused"

/* ---- error ---- */
/* the CUresult (700, ...); a job view's first fault too */
#define RK_CODE "code"
/* the driver's text of the error */
#define RK_MESSAGE "message"
/* the driver call that returned it; a launch or range: the entry point that made it */
#define RK_API "api"
/* error, launch, range, op: the kernel thread id; an ASSERT, a lane, a coredump: [x, y, z] thread index */
#define RK_THREAD "thread"
/* CLOCK_MONOTONIC, in nanoseconds (error, launch, hang) */
#define RK_TIME_NS "time_ns"
/* array of PYFRAME: Python frames, innermost first */
#define RK_PYTHON "python"
/* array of FRAME: native frames, innermost first */
#define RK_STACK "stack"

/* ---- printf_flush ---- */
/* the call made so that the driver prints the device's printf buffer */
#define RK_CALL "call"
/* its CUresult */
#define RK_RESULT "result"

/* ---- verdict (and the windows it and others carry) ---- */
/* exact, candidates, unknown (a hang: also idle) */
#define RK_CERTAINTY "certainty"
/* one sentence: why the verdict is what it is */
#define RK_REASON "reason"
/* object {first, last}: the launch numbers spanned by the culprit or candidates */
#define RK_WINDOW "window"
/* a window's first launch number; OPNOTE: the first its operator could make; a job's process: it faulted first */
#define RK_FIRST "first"
/* a window's last launch number; OPNOTE: the last (null while it ran) */
#define RK_LAST "last"
/* a candidate the fault's page points to, not proven */
#define RK_LIKELIEST "likeliest"

/* ---- LAUNCH ---- */
/* the launch number (also of a range: the last launch before its allocation) */
#define RK_SEQ "seq"
/* the kernel's demangled name (also an ASSERT's, a coredump's, a job view's) */
#define RK_KERNEL "kernel"
/* the kernel's mangled name */
#define RK_MANGLED "mangled"
/* array: the grid's dimensions */
#define RK_GRID "grid"
/* array: the block's dimensions (an ASSERT, a lane: the block index) */
#define RK_BLOCK "block"
/* array of hex words: the first 56 bytes of the launch's parameter buffer */
#define RK_PARAMS "params"
/* the whole parameter buffer's size in bytes */
#define RK_PARAMS_SIZE "params_size"
/* dynamic shared memory in bytes */
#define RK_SHARED_MEM "shared_mem"
/* the stream's handle (an ASSERT: stdout, stderr or stdout+stderr) */
#define RK_STREAM "stream"
/* legacy, per-thread or created */
#define RK_STREAM_KIND "stream_kind"
/* the context's handle */
#define RK_CTX "ctx"
/* the device's ordinal */
#define RK_DEVICE "device"
/* array of strings: no-breadcrumb, captured, ... */
#define RK_FLAGS "flags"
/* the waiting Python thread whose frames a launch carries */
#define RK_PYTHON_THREAD "python_thread"
/* OPNOTE: the framework operator the launch belongs to */
#define RK_OP "op"
/* graph launch: array of LAUNCH captured into the graph */
#define RK_GRAPH_NODES "graph_nodes"
/* graph launch: the node (a LAUNCH) that faulted */
#define RK_NODE "node"
/* how the node was found: graph breadcrumbs or device assert */
#define RK_NODE_SOURCE "node_source"
/* how an exact culprit was named (arguments, fault page, the device); device_query: the debugger used */
#define RK_BY "by"

/* ---- OPNOTE ---- */
/* a summary of the operator's arguments */
#define RK_ARGS "args"
/* what was wrong with them */
#define RK_PROBLEM "problem"
/* array of {label, base, size}: the device memory its kernels were given */
#define RK_BUFFERS "buffers"
/* a buffer's tensor, as the operator named it */
#define RK_LABEL "label"

/* ---- FRAME and PYFRAME ---- */
/* the instruction's address (hex) */
#define RK_PC "pc"
/* the module holding it */
#define RK_MODULE "module"
/* the address within the module (hex); a fault_address range: the address's offset in it */
#define RK_OFFSET "offset"
/* the function's name */
#define RK_FUNCTION "function"
/* source file (an ASSERT's, a coredump's dump file) */
#define RK_FILE "file"
/* source line (the kernel log: the line itself) */
#define RK_LINE "line"
/* true for an outer level of inlined code */
#define RK_INLINED "inlined"

/* ---- ASSERT ---- */
/* the failed expression */
#define RK_ASSERTION "assertion"
/* why the @triton.jit function could not be read */
#define RK_FUNCTION_UNKNOWN "function_unknown"
/* array: the @triton.jit functions calling the assert's function */
#define RK_INLINED_INTO "inlined_into"

/* ---- streams ---- */
/* the last launch number on the stream */
#define RK_LAST_LAUNCHED "last_launched"
/* whether breadcrumbs were set up for it (stats: breadcrumbs written) */
#define RK_CRUMBS "crumbs"
/* the last launch known complete on it */
#define RK_LAST_COMPLETED "last_completed"
/* unfinished work behind the last completed launch */
#define RK_PENDING "pending"
/* object: breadcrumbs queued on the stream, spacing, estimated share */
#define RK_MARKS "marks"
/* record mode's breadcrumb spacing at the last one */
#define RK_SPACING "spacing"
/* the estimated share of the stream's time the breadcrumbs took */
#define RK_EST_SHARE "est_share"
/* the stream was destroyed */
#define RK_DESTROYED "destroyed"
/* hang: the launch in flight on the stream, when known exactly */
#define RK_IN_FLIGHT "in_flight"
/* hang: object {first, last} of the launches that may be in flight */
#define RK_IN_FLIGHT_WINDOW "in_flight_window"
/* who said which launch is in flight ("the device") */
#define RK_IN_FLIGHT_BY "in_flight_by"

/* ---- stats ---- */
/* records still held by the rings */
#define RK_RECORDS_IN_RINGS "records_in_rings"
/* breadcrumbs the driver refused */
#define RK_CRUMB_FAILURES "crumb_failures"
/* records overwritten before a report */
#define RK_RING_OVERWRITTEN "ring_overwritten"

/* ---- hang ---- */
/* SIGTERM, SIGINT, SIGQUIT, SIGABRT, the report signal's name or "timeout" */
#define RK_TRIGGER "trigger"
/* the signal's number */
#define RK_SIGNAL "signal"
/* who sent the signal */
#define RK_SENDER_PID "sender_pid"
/* milliseconds since progress was last seen */
#define RK_STALLED_MS "stalled_ms"
/* the hang timeout that fired */
#define RK_TIMEOUT_S "timeout_s"
/* a thread's kernel id */
#define RK_TID "tid"
/* a thread's letter from /proc (R, S, D, ...) */
#define RK_STATE "state"
/* the thread took the signal and waited in culprit's handler */
#define RK_SIGNAL_HANDLER "signal_handler"
/* why a thread has no stack */
#define RK_STACK_NOTE "stack_note"
/* a Python thread's threading.get_ident() */
#define RK_ID "id"

/* ---- exit ---- */
/* the status given to exit(); device_query, a job's process: how it went */
#define RK_STATUS "status"

/* ---- device_query ---- */
/* how long the question took */
#define RK_MS "ms"
/* when not answered: one sentence */
#define RK_WHY "why"
/* whether the device runs the exact culprit's kernel */
#define RK_CONFIRMS "confirms"
/* the debugger program run (absent when none was found) */
#define RK_DEBUGGER "debugger"
/* what the debugger printed (its first 4000 bytes) */
#define RK_OUTPUT "output"
/* a kernels row: the kernel's call with its arguments, as the debugger prints it */
#define RK_INVOCATION "invocation"
/* array: the candidates found running (seq), one per stream at most */
#define RK_RUNNING "running"

/* ---- allocations and RANGE ---- */
/* entries the table holds */
#define RK_CAPACITY "capacity"
/* allocations recorded since the process started */
#define RK_RECORDED "recorded"
/* freed ranges dropped to make room */
#define RK_FORGOTTEN "forgotten"
/* allocations not recorded: the table was full of live ranges */
#define RK_NOT_RECORDED "not_recorded"
/* present when forgotten or not_recorded is not 0 */
#define RK_OVERFLOWED "overflowed"
/* object: cuMemCreate/cuMemRelease counts and bytes */
#define RK_VM_HANDLES "vm_handles"
/* physical memory handles created */
#define RK_CREATED "created"
/* physical memory handles released */
#define RK_RELEASED "released"
/* physical memory held */
#define RK_BYTES "bytes"
/* array of RANGE, oldest allocation first */
#define RK_RANGES "ranges"
/* array of {python, stack}: where ranges were allocated */
#define RK_SITES "sites"
/* a range's first device address (hex) */
#define RK_BASE "base"
/* bytes */
#define RK_SIZE "size"
/* kind host: the host pointer; a job view's process: its host */
#define RK_HOST "host"
/* the last launch number when it was freed */
#define RK_FREED_SEQ "freed_seq"
/* the entry point that freed it */
#define RK_FREED_API "freed_api"
/* freed by a call culprit did not see */
#define RK_FREE_UNSEEN "free_unseen"
/* index into sites */
#define RK_SITE "site"

/* ---- gpu_fault_log ---- */
/* the log read (fault_address: coredump, kernel log or command line) */
#define RK_SOURCE "source"
/* the Xid number (31) */
#define RK_XID "xid"
/* the page of the faulting address (fault_address, coredump: the address) */
#define RK_ADDRESS "address"
/* the page's size */
#define RK_GRANULE "granule"
/* read, write, ... (a coredump: load, store or atomic) */
#define RK_ACCESS "access"
/* FAULT_PDE, FAULT_PTE, ... */
#define RK_FAULT_TYPE "fault_type"
/* pid or name: how the line was tied to the report */
#define RK_MATCHED "matched"
/* why there is no line */
#define RK_UNKNOWN "unknown"

/* ---- fault_address ---- */
/* bytes accessed */
#define RK_ACCESS_SIZE "access_size"
/* the faulting launch the ranges are judged at */
#define RK_FAULT_SEQ "fault_seq"
/* inside, overrun, freed, unmapped, outside, nothing_near or no_table */
#define RK_ANSWER "answer"
/* RANGE holding it (inside, overrun) */
#define RK_IN "in"
/* RANGE freed before the faulting launch that held it */
#define RK_FREED "freed"
/* more freed ranges that held it */
#define RK_FREED_OTHERS "freed_others"
/* RANGE made after the faulting launch that holds it now */
#define RK_LATER "later"
/* RANGE of the reservation holding it (unmapped) */
#define RK_RESERVED "reserved"
/* the nearest RANGE ending at or below it */
#define RK_BELOW "below"
/* the nearest RANGE starting above it */
#define RK_ABOVE "above"
/* bytes from a range's end to the address */
#define RK_PAST_END "past_end"
/* bytes from the address to a range's start */
#define RK_BEFORE_START "before_start"
/* object {base, size, pieces}: adjacent live mapped pieces as one range */
#define RK_MAPPED_RUN "mapped_run"
/* how many pieces a mapped_run joins */
#define RK_PIECES "pieces"
/* the address is below 64 KiB */
#define RK_NEAR_NULL "near_null"
/* the table dropped ranges */
#define RK_TABLE_OVERFLOWED "table_overflowed"
/* the lane whose access faulted (a coredump: cuda-gdb's focus lane) */
#define RK_LANE "lane"
/* lanes whose address the dump gave */
#define RK_LANES_READ "lanes_read"
/* lanes whose access was bad */
#define RK_LANES_BAD "lanes_bad"
/* "inferred": the address's high half came from the table */
#define RK_HIGH_HALF "high_half"
/* array of {base, size, lanes}: what the good lanes accessed */
#define RK_TOUCHED "touched"
/* coredump: array of every lane's address; touched: how many lanes */
#define RK_LANES "lanes"

/* ---- coredump ---- */
/* cuda-gdb's "CUDA Exception: ..." */
#define RK_EXCEPTION "exception"
/* the faulting instruction's source file */
#define RK_SOURCE_FILE "source_file"
/* its line */
#define RK_SOURCE_LINE "source_line"
/* the SM it ran on */
#define RK_SM "sm"
/* the warp */
#define RK_WARP "warp"
/* the launch's grid, from the backtrace */
#define RK_LAUNCH_GRID "launch_grid"
/* the launch's block, from the backtrace */
#define RK_LAUNCH_BLOCK "launch_block"
/* the faulting instruction */
#define RK_INSTRUCTION "instruction"
/* global, shared, local or generic */
#define RK_SPACE "space"
/* the lane whose address is address */
#define RK_ADDRESS_LANE "address_lane"
/* a lane's low 32 bits of address, when the high half was overwritten */
#define RK_ADDRESS_LOW32 "address_low32"
/* the alignment a misaligned access needed */
#define RK_ALIGNMENT "alignment"
/* why the address is not known */
#define RK_ADDRESS_UNKNOWN "address_unknown"
/* warps whose state the dump file holds */
#define RK_WARPS_IN_DUMP "warps_in_dump"
/* cuda-gdb died reading the dump */
#define RK_DEBUGGER_CRASHED "debugger_crashed"
/* what it said of its death */
#define RK_DEBUGGER_ERROR "debugger_error"

/* ---- rerun ---- */
/* confirmed, elsewhere, no-fault or unmatched */
#define RK_OUTCOME "outcome"
/* the rerun's fault report (a job's first fault: its report's path) */
#define RK_REPORT "report"

/* ---- The job view (culprit.job/1) ---- */
/* array: the hosts, in the order of their first process */
#define RK_HOSTS "hosts"
/* object: the first fault (null when none) */
#define RK_FIRST_FAULT "first_fault"
/* what made it first: only, kernel, clock or clocks */
#define RK_ORDER "order"
/* with clocks: the hosts whose clocks decided */
#define RK_CLOCK_HOSTS "clock_hosts"
/* where the culprit was launched (file:line) */
#define RK_LAUNCHED_AT "launched_at"
/* object: the NCCL collective a kernel's name spells */
#define RK_NCCL "nccl"
/* the collective's name (a process: the one it waited in) */
#define RK_COLLECTIVE "collective"
/* nccl: the collective's element type */
#define RK_DTYPE "dtype"
/* nccl: the algorithm (ring, tree, ...) */
#define RK_ALGORITHM "algorithm"
/* nccl: the protocol (LL, LL128, Simple) */
#define RK_PROTOCOL "protocol"
/* array: one per process or run of missing ranks */
#define RK_PROCESSES "processes"
/* hang: the device runs a kernel of its own there */
#define RK_STUCK_IN_KERNEL "stuck_in_kernel"
/* a process's phrase */
#define RK_WHAT "what"
/* array: the process's report files */
#define RK_REPORTS "reports"
/* a run of missing ranks: its last */
#define RK_LAST_RANK "last_rank"

/* Accessors: what many readers repeat. Like json.h's, they accept NULL and nodes of the wrong type. */
struct json;
const struct json *rk_verdict(const struct json *doc);               /* the verdict object, or NULL */
const char *rk_certainty(const struct json *doc);                    /* verdict.certainty, or NULL */
int rk_is_exact(const struct json *doc);                             /* 1 when verdict.certainty is "exact" */
int rk_is_candidates(const struct json *doc);                        /* 1 when verdict.certainty is "candidates" */
const struct json *rk_culprit(const struct json *doc);               /* the culprit when it is an object, else NULL */
const struct json *rk_candidates(const struct json *doc);            /* the candidates array (or whatever is there) */
long long rk_error_code(const struct json *doc, long long fallback); /* error.code, or fallback */

#define RK_ERROR_ASSERT 710 /* error.code of a device assert (CUDA_ERROR_ASSERT) */

#endif
