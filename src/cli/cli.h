/* Shared declarations of the `culprit` command: one entry point per verb, the run machinery that `run` and
 * `demo` share, and small helpers (messages, paths, report listing). Nothing here is used by libculprit. */
#ifndef CULPRIT_CLI_H
#define CULPRIT_CLI_H

#include <stddef.h>
#include <stdio.h>
#include <sys/types.h>

#ifndef CULPRIT_VERSION
#define CULPRIT_VERSION "0.1.0"
#endif

/* Exit codes of the command itself (a program run under culprit passes its own status through). */
enum {
    CLI_EXIT_OK = 0,
    CLI_EXIT_FAIL = 1,      /* the verb could not do its job (unreadable report, ...) */
    CLI_EXIT_USAGE = 2,     /* bad command line or setup (unknown option, library not found, ...) */
    CLI_EXIT_NOEXEC = 126,  /* the command exists but could not be executed */
    CLI_EXIT_NOTFOUND = 127 /* the command was not found */
};

/* How to run a command under culprit; filled by `run` from its options and by `demo`. */
struct cli_run_opts {
    const char *mode;           /* CULPRIT_MODE, or NULL to leave the library's default */
    const char *kernels;        /* CULPRIT_KERNELS glob, or NULL */
    const char *launches;       /* CULPRIT_LAUNCHES "A:B", or NULL */
    const char *rank_launches;  /* CULPRIT_RANK_LAUNCHES "R=A:B,..." (a job's rerun), or NULL */
    const char *ring;           /* CULPRIT_RING, already validated, or NULL */
    const char *crumb_every;    /* CULPRIT_CRUMB_EVERY, already validated, or NULL */
    const char *mark_budget;    /* CULPRIT_MARK_BUDGET, already validated, or NULL */
    const char *mark;           /* CULPRIT_MARK ("write" or "memset"), or NULL */
    const char *stack_depth;    /* CULPRIT_STACK_DEPTH, already validated, or NULL */
    const char *exit_wait;      /* CULPRIT_EXIT_WAIT seconds, already validated, or NULL */
    const char *hang_timeout;   /* CULPRIT_HANG_TIMEOUT seconds, already validated, or NULL */
    const char *report_signal;  /* CULPRIT_REPORT_SIGNAL, already validated, or NULL */
    const char *device_timeout; /* --device-timeout seconds for the device query at a hang (devquery.c), or NULL */
    int error_exitcode;         /* exit status when CMD exited 0 although a kernel faulted; -1: CMD's own */
    int rerun;                  /* settle a verdict of candidates by a blocking rerun over its window (rerun.c) */
    int is_rerun;               /* this is that rerun: what its reports lack is said by the first run's verdict */
    int coredump;               /* the driver's GPU core dump on exception, read after the run (coredump.c) */
    const char *boot;           /* --diagnose: culprit/_boot, put on PYTHONPATH with CULPRIT_DIAGNOSE=1; or NULL */
    const char *dir;            /* report directory chosen by the user, or NULL for a fresh run directory */
    int quiet;                  /* print one line per report instead of the full verdict */
    int verbose;                /* let the library print its own full verdict too */
    int stats;                  /* CULPRIT_STATS=1 */
    int no_watch;               /* let the command inherit stdout/stderr instead of watching them for asserts */
    int no_exception_text;      /* CULPRIT_EXCEPTION_TEXT=0: the error's text stays the runtime's and driver's own */
    const char *on_report;      /* --on-report: a shell command run with each new report's path, or NULL */
    unsigned on_report_ms;      /* how long it may run before it is killed */
    const char *events;         /* --events: a file or unix socket that gets a line of JSON per report, or NULL */
    const char *ld_path;        /* directory to prepend to LD_LIBRARY_PATH (the simulated driver), or NULL */
    int simulated;              /* CMD runs on culprit's simulated driver: no cuda-gdb command in the verdict */
    char **argv;                /* the command and its arguments, NULL-terminated */
};

/* Verbs: each takes the arguments after the verb name (argv[0] is the verb) and returns the exit status. */
int cli_run_main(int argc, char **argv);
int cli_report_main(int argc, char **argv);
int cli_demo_main(int argc, char **argv);
int cli_trace_main(int argc, char **argv);

/* Runs o->argv under culprit and prints the verdicts. Returns 0 and the child's wait status in *wstatus once it
 * ran (*faulted: a report of the run says a kernel faulted), or an exit code (CLI_EXIT_*) when it could not be
 * started; the message is already printed. */
int cli_run_command(const struct cli_run_opts *o, int *wstatus, int *faulted);

/* Ends the culprit process the way the child ended: same exit code, or death by the same signal
 * (falling back to 128+signal). Does not return. */
void cli_exit_like(int wstatus) __attribute__((noreturn));

/* Usage text: all verbs, or one verb's details. Returns 0, or nonzero for an unknown verb. */
void cli_usage(FILE *out);
int cli_help_verb(FILE *out, const char *verb);

/* Prints "culprit: " + message + newline on stderr, as one line: control characters and other bytes a terminal
 * must not get raw (a newline in a path, an escape sequence in a report's text) are escaped (render_safe). */
void cli_err(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* The same on out, without flushing stdout first. */
void cli_say(FILE *out, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* The directory holding the culprit executable (from /proc/self/exe). Returns 0 on success. */
int cli_exe_dir(char *out, size_t outsz);

/* Locates libculprit.so: $CULPRIT_LIB, <exe dir>/../lib/libculprit.so, <exe dir>/libculprit.so. Returns 0 and
 * the absolute path, or prints why it is missing and returns CLI_EXIT_USAGE. */
int cli_find_lib(char *out, size_t outsz);

/* Locates the start-up hook of culprit's Python package (culprit/_boot, which `--diagnose` puts on the
 * command's PYTHONPATH): in $CULPRIT_PYTHON, <exe dir>/../lib/python (CMake's trees) or <exe dir>/../../..
 * (a wheel's). Returns 0 and its absolute path, or CLI_EXIT_USAGE (the reason printed unless quiet). */
int cli_find_boot(char *out, size_t outsz, int quiet);

/* Creates path and any missing parents (parents with mode 0777 minus umask, the last one with leaf_mode).
 * *created_leaf tells whether the last component was made here. Returns 0 or an errno value. */
int cli_mkdirs(const char *path, mode_t leaf_mode, int *created_leaf);

/* Fills buf[0..n) with random bytes from the kernel. Returns 0, or an errno value when there are none. */
int cli_random(void *buf, size_t n);

/* Lists the culprit-*.json files directly in dir, sorted by name, as malloc'd "dir/name" paths. Returns 0 and
 * the list (free with cli_free_list), or an errno value. */
int cli_list_reports(const char *dir, char ***paths, size_t *n);
void cli_free_list(char **list, size_t n);

struct merge_report;
struct cli_watch;

/* Prints reports as text on out: the reports of a job (more than one process, or rank fields) as one merged
 * view, each other report on its own, sep between them (NULL: nothing). run_dir: the end of `culprit run`,
 * whose reports from a single ranked process are shown on their own (the job's other ranks may run under
 * other culprit commands sharing run_dir), with a hint to merge them. no_debugger: the verdicts leave out the
 * cuda-gdb command (render_opts). said (NULL: none): the one-line notices
 * already on the terminal (watch_said), which brief does not print again. *faulted is set when one is a fault
 * report. Returns how many of them are faults or hangs (exit records say nothing went wrong), or -1 when
 * something could not be shown (the message is printed). */
int cli_show_reports(const struct merge_report *reps, size_t n, int brief, FILE *out, const char *sep,
                     const char *run_dir, int no_debugger, const struct cli_watch *said, int *faulted);

/* Parses "[x,y,z]" (open '[' and close ']', or any other pair; spaces allowed) at *p into v, advancing *p past
 * it: the block and thread indices devices and debuggers print. Returns 0 or -1. */
int cli_parse_triple(const char **p, long v[3], char open, char close);

/* Parses a decimal integer in [lo, hi]; returns 0 and *out, or -1. */
int cli_parse_int(const char *s, long long lo, long long hi, long long *out);

#endif
