/* The help of the `culprit` command: the usage of every verb, printed by `culprit help [VERB]`, `--help` and a
 * verb's own -h. A room of its own so that the verbs reach their help without reaching main.c. */
#include "cli.h"

#include <string.h>

static const char cli_usage_text[] =
    "usage: culprit <command> [options]\n"
    "\n"
    "culprit names the CUDA kernel that really faulted, instead of the later call that reported the error.\n"
    "\n"
    "commands:\n"
    "  run [options] [--] CMD [ARGS...]  run CMD with culprit loaded; print the verdict if a kernel faults\n"
    "  report [--json|--brief] PATH...   show reports (files, or directories of culprit-*.json);\n"
    "                                    --address ADDR: what that address touched\n"
    "  trace REPORT [-o FILE]            a report's launches as a Perfetto/Chrome trace\n"
    "  demo [--sim] [--verbose]          watch culprit catch a faulting kernel (simulated without a GPU)\n"
    "  version                           print the version\n"
    "  help [COMMAND]                    this text, or the details of one command\n"
    "\n"
    "run options:\n"
    "  --mode MODE                 record (default): every launch recorded, a breadcrumb every 16th launch\n"
    "                              of a stream; names the culprit or a short window of suspects\n"
    "                              precise: a breadcrumb after every launch, always the exact culprit\n"
    "                              blocking: synchronize after each matching launch (exact, slow)\n"
    "                              off: load but record nothing\n"
    "  --crumb-every N             record mode: a breadcrumb every Nth launch of a stream, 1..4096 (16)\n"
    "  --mark memset|write         how a breadcrumb is written (default memset; write: the fenced write)\n"
    "  --kernels GLOB              blocking mode: only kernels whose name matches GLOB (default *)\n"
    "  --launches A:B              blocking mode: only launches A..B (1-based, either side optional)\n"
    "  --ring N                    launches remembered per thread, 16..1048576 (default 4096)\n"
    "  --stack-depth N             native frames kept per launch, 0..64 (default 24)\n"
    "  --dir DIR                   report directory (default culprit-reports/run-DATE-TIME-PID)\n"
    "  --quiet                     print one line per report instead of the full verdict\n"
    "  --verbose                   let the library print its own verdict as it happens, too\n"
    "  --stats                     have the library print its counters at exit\n"
    "  --exit-wait S               wait up to S seconds at exit for unfinished work (default 2)\n"
    "  --error-exitcode N          exit N when CMD exited 0 although a kernel faulted\n"
    "  --rerun                     settle a verdict of candidates by a blocking rerun over its window\n"
    "  --coredump                  the driver's GPU core dump on exception, read with cuda-gdb afterwards\n"
    "  --diagnose                  PyTorch: name each launch's operator and check its index arguments\n"
    "  --hang-timeout S            write a hang report when work stays unfinished S seconds (default off)\n"
    "  --report-signal SIG         the signal that asks for a hang report, CMD carrying on (default USR1)\n"
    "  --no-watch                  do not relay CMD's output (device-assert lines are then not tied in)\n"
    "\n"
    "environment read by libculprit.so (culprit run sets them from the options):\n"
    "  CULPRIT_MODE, CULPRIT_CRUMB_EVERY, CULPRIT_MARK, CULPRIT_KERNELS, CULPRIT_LAUNCHES,\n"
    "  CULPRIT_RING, CULPRIT_STACK_DEPTH, CULPRIT_DIR (report directory), CULPRIT_QUIET=1 (one-line notice),\n"
    "  CULPRIT_EXIT_WAIT (seconds), CULPRIT_HANG_TIMEOUT (seconds), CULPRIT_REPORT_SIGNAL (USR1, or none),\n"
    "  CULPRIT_HANG_SIGNALS=0 (no hang report on SIGTERM, SIGINT, SIGQUIT, SIGABRT),\n"
    "  CULPRIT_STATS=1, CULPRIT_RUN_ID (set by culprit run); and the launchers' rank variables (torchrun,\n"
    "  Slurm, Open MPI, MPICH)\n"
    "environment read by culprit:\n"
    "  CULPRIT_LIB        path of libculprit.so (default: ../lib/libculprit.so beside this program)\n"
    "  CULPRIT_ADDR2LINE  addr2line program used for file:line (default: addr2line from PATH)\n"
    "  CULPRIT_CUDA_GDB   cuda-gdb program that reads --coredump's dumps (default: cuda-gdb from PATH)\n"
    "  CULPRIT_PYTHON     directory holding culprit's Python package, for --diagnose (default:\n"
    "                     ../lib/python beside this program)\n"
    "\n"
    "exit status: that of CMD for run and demo; 1 when a report cannot be read; 2 for bad usage;\n"
    "126/127 when CMD cannot be run or is not found.\n";

static const char cli_help_run[] =
    "usage: culprit run [options] [--] CMD [ARGS...]\n"
    "\n"
    "Runs CMD with libculprit.so preloaded (LD_PRELOAD) and a fresh report directory. When a sticky CUDA\n"
    "error (illegal address, device assert, ...) surfaces in CMD or any process it starts, the library writes\n"
    "culprit-<pid>.json there; after CMD exits, culprit adds file:line to its frames and prints the verdict\n"
    "on stderr: the kernel launch that faulted, where it was launched, and the launches before it.\n"
    "CMD's output is relayed unchanged (through a pseudo-terminal when culprit's own is a terminal) and\n"
    "watched for device-assert lines, which are tied to the verdict; its input is left alone. Signals sent to\n"
    "culprit are passed on to CMD, and culprit exits with CMD's status (or dies of the same signal).\n"
    "\n"
    "Processes started by a launcher (torchrun, srun, mpirun) write culprit-<host>-<pid>.json with their rank,\n"
    "and an exit record when they saw no fault; the reports of a job are shown merged: which rank faulted\n"
    "first, which ones are collateral. With one culprit per rank (srun culprit run --dir SHARED ...) each\n"
    "shows its own rank; 'culprit report SHARED' merges them. Unless NCCL_DEBUG or NCCL_DEBUG_FILE is set,\n"
    "NCCL's warnings go to nccl-HOST-PID.log in the report directory and into the reports, not the terminal.\n"
    "\n"
    "options:\n"
    "  --mode record|precise|blocking|off\n"
    "                              record (default): every launch is recorded; a stream's first launch,\n"
    "                              its first after a synchronize and every 16th get a breadcrumb; the\n"
    "                              verdict names the culprit, or a window of at most 16 suspects on its\n"
    "                              stream (narrowed by synchronizes and device asserts) with the rerun\n"
    "                              that pins it; precise: a breadcrumb after every launch, always exact,\n"
    "                              costs more; blocking: synchronize after each matching launch and stop\n"
    "                              at the first that fails; off: record nothing\n"
    "  --crumb-every N             record mode's breadcrumb density, 1..4096 (default 16)\n"
    "  --mark memset|write         the breadcrumb: memset (default), a cuMemsetD32Async of the launch number's\n"
    "                              low half, which costs the GPU about a fifth less between short kernels; write,\n"
    "                              a fenced cuStreamWriteValue64 (also what a driver refusing the memset gets)\n"
    "  --kernels GLOB              blocking mode: only kernels whose name matches GLOB (default *)\n"
    "  --launches A:B              blocking mode: only launches A..B, 1-based and inclusive; 100:, :50\n"
    "                              and a single number work too\n"
    "  --ring N                    launches remembered per thread, 16..1048576 (default 4096)\n"
    "  --stack-depth N             native frames kept per launch, 0..64 (default 24)\n"
    "  --dir DIR                   write reports into DIR (created if missing) instead of\n"
    "                              culprit-reports/run-YYYYmmdd-HHMMSS-PID\n"
    "  --quiet, -q                 one line per report instead of the full verdict\n"
    "  --verbose, -v               the library also prints its verdict the moment the error surfaces\n"
    "  --stats                     the library prints its counters at exit\n"
    "  --exit-wait S               at exit and before a context goes away, wait up to S seconds (default 2;\n"
    "                              0 asks once) for unfinished work, so a fault still pending is reported\n"
    "  --error-exitcode N          exit with N (0..255) when CMD exited 0 although a kernel faulted\n"
    "  --rerun                     when the verdict is a window of candidates, run CMD again with blocking\n"
    "                              launches over that window and merge both runs into one report (repeats\n"
    "                              CMD's side effects: only when asked)\n"
    "  --coredump                  have the driver write a GPU core dump on an exception (into the report\n"
    "                              directory; the driver then aborts CMD) and read it with cuda-gdb\n"
    "                              (CULPRIT_CUDA_GDB) for the faulting kernel, line, block and thread\n"
    "  --diagnose                  Python programs: culprit's Python package is loaded into CMD (PYTHONPATH,\n"
    "                              CULPRIT_DIAGNOSE=1) and, once torch is imported, names the PyTorch operator\n"
    "                              behind each launch with its arguments, and reads the range of the index\n"
    "                              tensors of the operators behind most device asserts (embedding, gather,\n"
    "                              scatter, index, nll_loss, ...; each such read synchronizes); the verdict\n"
    "                              then says what broke the operator's contract. --rerun's rerun diagnoses\n"
    "                              by default\n"
    "  --hang-timeout S            when launches stay unfinished and nothing completes for S seconds, CMD's\n"
    "                              processes write a hang report (the launch in flight on each stream, what\n"
    "                              waits behind it, every thread's stack) and go on (default 0: off)\n"
    "  --report-signal SIG         the signal that makes a process write a hang report and carry on\n"
    "                              (default USR1; none or 0 for no such signal; not one that ends or stops\n"
    "                              the program: KILL, STOP, SEGV, BUS, FPE, ILL, TRAP, SYS, ABRT). SIGTERM,\n"
    "                              SIGINT, SIGQUIT and SIGABRT write one before the process ends as it would\n"
    "                              have\n"
    "  --no-watch                  CMD writes straight to culprit's stdout/stderr (device asserts are then\n"
    "                              not tied to the verdict)\n"
    "\n"
    "example, after a verdict listed candidates #120..#124:\n"
    "  culprit run --mode blocking --launches 120:124 -- python train.py\n";

static const char cli_help_report[] =
    "usage: culprit report [--json | --brief] [--address ADDR [--access-size N]] PATH...\n"
    "\n"
    "Shows reports written by culprit. PATH is a report file or a directory: its culprit-*.json files in name\n"
    "order, or when it has none, those of its subdirectories (so 'culprit report culprit-reports' shows\n"
    "every run). Frames get function/file:line from debug information first (written back to the file).\n"
    "The reports of a job (from several processes of one run, or ranks of a launcher's job) are merged into\n"
    "one view: a verdict line, one line per rank, then the full verdict of the rank that faulted first.\n"
    "\n"
    "options:\n"
    "  --json    print the report JSON, indented (an array when there are several); a job as one\n"
    "            culprit.job/1 object\n"
    "  --brief   one line per report\n"
    "  --address ADDR     say what the device address ADDR (hex 0x..., or decimal) touched in each report's\n"
    "                     allocation table: the allocation holding it, or the nearest ones and how far, or a\n"
    "                     freed one (use after free); shown (and in --json as fault_address), not saved\n"
    "  --access-size N    with --address: the bytes the faulting access read or wrote\n"
    "\n"
    "exit status: 0, or 1 when a path cannot be read or is not a culprit report; 2 for bad usage.\n";

static const char cli_help_demo[] =
    "usage: culprit demo [--sim] [--verbose]\n"
    "\n"
    "Runs a small program whose kernel writes out of bounds, under 'culprit run', and shows the verdict.\n"
    "With a usable GPU it runs culprit-demo-cuda; without one, or with --sim, culprit-demo-sim on culprit's\n"
    "simulated CUDA driver. The demo's exit status is non-zero on purpose.\n";

static const char cli_help_trace[] =
    "usage: culprit trace REPORT [-o FILE]\n"
    "\n"
    "Writes the launches REPORT holds (the culprit or the launch in flight, candidates, the launches before it,\n"
    "graph nodes, launches queued behind a hang) as a Chrome trace, which Perfetto and chrome://tracing open:\n"
    "one track per GPU stream and one per host thread, each launch an instant event at the moment the host\n"
    "launched it (the GPU's timing is not recorded), marked with its role, with its kernel, grid, launch\n"
    "number, Python line and native frame; and the moment the error surfaced or the hang was seen.\n"
    "\n"
    "options:\n"
    "  -o FILE, --output FILE   where to write it (default: trace-PID.json beside culprit-PID.json; - for\n"
    "                           standard output)\n"
    "\n"
    "exit status: 0, 1 when the report cannot be read or the trace not written, 2 for bad usage.\n";

void cli_usage(FILE *out)
{
    fputs(cli_usage_text, out);
}

int cli_help_verb(FILE *out, const char *verb)
{
    if (strcmp(verb, "run") == 0)
        fputs(cli_help_run, out);
    else if (strcmp(verb, "report") == 0)
        fputs(cli_help_report, out);
    else if (strcmp(verb, "demo") == 0)
        fputs(cli_help_demo, out);
    else if (strcmp(verb, "trace") == 0)
        fputs(cli_help_trace, out);
    else if (strcmp(verb, "version") == 0)
        fputs("usage: culprit version\n\nPrints culprit's version.\n", out);
    else if (strcmp(verb, "help") == 0)
        fputs("usage: culprit help [COMMAND]\n\nPrints the usage of culprit, or of one command.\n", out);
    else
        return -1;
    return 0;
}
