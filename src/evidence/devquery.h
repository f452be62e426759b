/* `culprit run` asks the device at a hang (devquery.c): when a process of the run writes a hang report, its context
 * is alive, so the command attaches cuda-gdb to it for a moment (`info cuda kernels`, then the debugger detaches)
 * to learn which kernels are running, ties them to the report's launches in flight and rewrites the report. A
 * thread of the command watches the run directory while the program runs; nothing of this runs in the program. */
#ifndef CULPRIT_CLI_DEVQUERY_H
#define CULPRIT_CLI_DEVQUERY_H

#include <stddef.h>

struct json;

#define DEVQ_TIMEOUT_S 60 /* the debugger is stopped after this long on one process (--device-timeout) */
/* CULPRIT_DEVICE_WAIT: how long a stopping process waits for the answer. A torch process took 7.6-9 s to answer
 * on an H100 (the debugger reads its libraries' symbols); launchers give a stopped worker 30 s before SIGKILL
 * (torchrun, Slurm's KillWait) */
#define DEVQ_WAIT_S "20"
#define DEVQ_KERNELS 64 /* running kernels kept from one answer */

/* One kernel the debugger said the device runs (a row of `info cuda kernels`). */
struct devq_kernel {
    char name[256];       /* the kernel's name, without its arguments: "spin" */
    char invocation[512]; /* the row's Invocation as printed: "spin(flag=0x7f0000000000, n=3)" */
    char status[32];      /* "Active", ... */
    long grid[3];         /* GridDim */
    long block[3];        /* BlockDim */
    long device;          /* the debugger's Dev */
};

struct devq;

/* The debugger culprit run would attach, or NULL when there is none to ask (why filled). */
const char *devq_debugger(char *why, size_t whylen);

/* culprit run's plan, from --device-timeout opt (NULL: DEVQ_TIMEOUT_S): *timeout_s the debugger's bound (0: no
 * query at all). Returns the library's CULPRIT_RUN_PID (this process) and sets *wait to its CULPRIT_DEVICE_WAIT
 * (the environment's, else DEVQ_WAIT_S) when a debugger is there to ask; NULL for both otherwise. */
const char *devq_plan(const char *opt, double *timeout_s, const char **wait);

/* Starts watching dir for hang reports of processes descended from this one, of run run_id (reports already there
 * are left alone); each is asked about within timeout_s. Returns NULL when the watch could not start (nothing is
 * asked then). */
struct devq *devq_start(const char *dir, double timeout_s, const char *run_id);
/* After the program ended: the reports written meanwhile get their answer (the process being gone, that it could
 * not be asked), then the watch ends and q is freed. NULL is fine. */
void devq_stop(struct devq *q);

/* Parses the debugger's `info cuda kernels` rows into k (at most max). Returns how many, or -1 when the output
 * holds no kernel table and does not say that no kernel runs, or holds rows none of which could be read. */
int devq_parse(const char *text, struct devq_kernel *k, int max);

/* Ties the running kernels to hang report doc, whose "device_query" object dq (taken over) gets what was found (a
 * dq whose status is not "answered" is only added):
 * among the unfinished launches of each stream, the one in flight is the oldest whose kernel, grid and block are a
 * running kernel's; one such launch in all becomes the culprit ("by": "the device"), several narrow the candidates.
 * *changed is set when the verdict moved. Returns 0 or ENOMEM. */
int devq_tie(struct json *doc, const struct devq_kernel *k, int n, struct json *dq, int *changed);

#endif
