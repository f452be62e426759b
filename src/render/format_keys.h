/* The keys of the JSON formats culprit writes besides its report (whose keys are in report_keys.h): the Chrome
 * trace of `culprit trace` (report/trace.c), the events line of `culprit run --events` (cli/deliver.c) and
 * torch's error file (aftermath/errfile.c). Each format has its own prefix; a key the report also has is
 * spelled again here, since the two formats change apart. */
#ifndef CULPRIT_RENDER_FORMAT_KEYS_H
#define CULPRIT_RENDER_FORMAT_KEYS_H

/* The Chrome trace (Trace Event Format, chrome://tracing and Perfetto): the top level */
#define TK_TRACE_EVENTS "traceEvents"          /* array of events */
#define TK_DISPLAY_TIME_UNIT "displayTimeUnit" /* "ms" */
#define TK_OTHER_DATA "otherData"              /* object: the report's verdict, reason and launch count */
#define TK_VERDICT "verdict"                   /* otherData: the report's verdict.certainty */
#define TK_REASON "reason"                     /* otherData: the report's verdict.reason */
#define TK_LAUNCHES "launches"                 /* otherData: the launches drawn */

/* The Chrome trace: one event */
#define TK_NAME "name" /* the event's name (a metadata event's args: the process's or thread's name) */
#define TK_CAT "cat"   /* its category */
#define TK_PH "ph"     /* its phase: X (a span), i (an instant), M (metadata) */
#define TK_S "s"       /* an instant's scope */
#define TK_TS "ts"     /* its time in microseconds from the first launch */
#define TK_PID "pid"   /* the row group: GPU streams or host threads */
#define TK_TID "tid"   /* the row: a stream or a thread */
#define TK_ARGS "args" /* object: what the event shows when picked */

/* The Chrome trace: a launch event's args */
#define TK_SEQ "seq"                       /* the launch number */
#define TK_ROLE "role"                     /* culprit, candidate, in flight, queued, before, ruled out */
#define TK_KERNEL "kernel"                 /* the kernel's name */
#define TK_GRID "grid"                     /* the grid, "(x,y,z)" */
#define TK_BLOCK "block"                   /* the block, "(x,y,z)" */
#define TK_STREAM "stream"                 /* the stream's handle */
#define TK_DEVICE "device"                 /* the device */
#define TK_THREAD "thread"                 /* the launching thread */
#define TK_PYTHON "python"                 /* the innermost Python line, "file:line in function" */
#define TK_NATIVE "native"                 /* the innermost native frame with a name */
#define TK_OPERATOR "operator"             /* the framework operator behind the launch */
#define TK_WHAT_WAS_WRONG "what_was_wrong" /* the operator's problem */

/* The Chrome trace: the error's mark's args */
#define TK_FAULT_ADDRESS "fault_address"               /* the faulting address */
#define TK_FAULT_ADDRESS_ANSWER "fault_address_answer" /* what it touched (fault_address.answer) */
#define TK_FAULT_LANE "fault_lane"                     /* the lane that faulted */
#define TK_FAULT_THREAD "fault_thread"                 /* its thread index, "(x,y,z)" */
#define TK_FAULT_BLOCK "fault_block"                   /* its block index, "(x,y,z)" */

/* The events line (`culprit run --events`, docs/usage.md): one JSON object per report, on one line */
#define EV_EVENT "event"             /* "culprit.report" */
#define EV_KIND "kind"               /* the report's kind: fault or hang */
#define EV_TIME "time"               /* when the line was written, seconds since the epoch */
#define EV_HOST "host"               /* the host the report came from */
#define EV_PID "pid"                 /* process.pid */
#define EV_RANK "rank"               /* process.rank */
#define EV_LOCAL_RANK "local_rank"   /* process.local_rank */
#define EV_WORLD_SIZE "world_size"   /* process.world_size */
#define EV_LAUNCHER "launcher"       /* process.launcher */
#define EV_JOB "job"                 /* process.job */
#define EV_RUN_ID "run_id"           /* process.run_id */
#define EV_ERROR "error"             /* error.name */
#define EV_CODE "code"               /* error.code */
#define EV_API "api"                 /* error.api */
#define EV_CERTAINTY "certainty"     /* verdict.certainty */
#define EV_KERNEL "kernel"           /* the culprit's (or first candidate's) kernel */
#define EV_LAUNCH "launch"           /* its launch number */
#define EV_LAUNCHED_AT "launched_at" /* where it was launched */
#define EV_REPORT "report"           /* the report's path */

/* torch's error file (TORCHELASTIC_ERROR_FILE), as torch.distributed.elastic writes it */
#define EF_MESSAGE "message"           /* the outer object, and the text inside it */
#define EF_EXTRA_INFO "extraInfo"      /* object: the call stack and the time */
#define EF_PY_CALLSTACK "py_callstack" /* the text torchrun prints as the traceback */
#define EF_TIMESTAMP "timestamp"       /* seconds since the epoch, as a string */

#endif
