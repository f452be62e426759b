/* Running a helper program after the run (addr2line for symbols, cuda-gdb for a GPU core dump) and keeping what
 * it prints: within a time limit and a size limit, with the environment less LD_PRELOAD (a preloaded culprit
 * has no business in a helper). Used by the command line only, never inside the target. */
#ifndef CULPRIT_REPORT_SUBPROC_H
#define CULPRIT_REPORT_SUBPROC_H

#include <stddef.h>

struct subproc_opts {
    int in_fd;           /* its standard input; -1 for /dev/null */
    int with_stderr;     /* 1: its standard error goes into the output too; 0: to /dev/null */
    const char *set_env; /* "NAME=VALUE" to add to its environment, or NULL */
    double timeout_s;    /* it is killed once this has passed */
    size_t max_output;   /* bytes of output kept; past them it is killed */
};

struct subproc_result {
    char *out;     /* what it printed, NUL-terminated, malloc'd (never NULL after a 0 return) */
    size_t len;    /* bytes in out */
    int exited;    /* it exited (status holds its exit status); 0 when killed or signalled */
    int status;    /* exit status when exited */
    int timed_out; /* killed at the time limit */
    int truncated; /* killed for printing more than max_output */
};

/* Runs argv[0] (looked up on PATH) with argv. Returns 0 with *res filled (what it printed up to its end, or up
 * to the limit that stopped it), -1 when it could not be run for want of a pipe, memory or a process, -2 when
 * the program could not be started (not found, not executable: also when it exits 127 having printed nothing,
 * the shell's code for that). */
int subproc_capture(char *const argv[], const struct subproc_opts *o, struct subproc_result *res);
/* subproc_capture with the program in a process group of its own, so that a terminal's ^C to the caller's group
 * (meant for the program culprit runs) does not reach it. */
int subproc_capture_alone(char *const argv[], const struct subproc_opts *o, struct subproc_result *res);

#endif
