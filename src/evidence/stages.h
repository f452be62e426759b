/* `culprit run`'s after-run steps as tables of stages (stages.c): once the command ended, cli_run_command hands one
 * context to ev_run, which walks the run's stages in order (GPU core dumps, a job's rerun, the reports, the verdict,
 * --diagnose's note, delivery, NCCL's logs, the launch marks, what to say when nothing was shown); the reports stage
 * walks a second table over each report of the run (kernel log, asserts, NCCL log, faulting address and page, a
 * rerun). A stage lives in the file of the evidence it gathers, the others in stages.c. */
#ifndef CULPRIT_EVIDENCE_STAGES_H
#define CULPRIT_EVIDENCE_STAGES_H

#include <limits.h>
#include <stddef.h>
#include <sys/types.h>
#include <time.h>

struct cli_run_opts;
struct cli_watch;
struct json;
struct kernlog;
struct merge_report;

/* What a stage tells the walker. */
enum ev_next {
    EV_NEXT = 0,   /* go on with the next stage */
    EV_NOMEM = 1,  /* out of memory: the walker says so with the stage's words, then goes on */
    EV_PASSED = 2, /* a report stage: this report is not the run's to show (passed over, said at the end) */
    EV_FAILED = 3  /* a report stage: this report cannot be shown, why already said */
};

/* A report file present before the run, so reports left over in a reused --dir are not shown again. */
struct ev_seen {
    char *path;            /* full path of the report */
    ino_t ino;             /* its inode then */
    off_t size;            /* its size then */
    struct timespec mtime; /* its modification time then */
};

/* Files named like reports in the run directory that `culprit run` did not show, said once at the end. */
struct ev_skipped {
    size_t foreign;               /* reports that carry no run id (written outside culprit run's environment) */
    size_t unowned;               /* links, and files of another user */
    char first_foreign[PATH_MAX]; /* the first of each, to name */
    char first_unowned[PATH_MAX];
};

/* Everything the after-run stages read and hand on: filled by cli_run_command, then by the stages in turn. */
struct ev_ctx {
    const struct cli_run_opts *o; /* the command's options */
    struct cli_watch *w;          /* the watch of its output: device asserts, the loader's errors, unwritten reports */
    const char *run_id;           /* this command's run id (CULPRIT_RUN_ID), written into each of its reports */
    const char *lib;              /* the path of libculprit.so that was preloaded */
    const char *dir;              /* the report directory, absolute */
    const char *rel;              /* the report directory as the user may name it, for the verdict's last line */
    const char *core_dir;         /* where the driver wrote GPU core dumps, "" without --coredump */
    int created;                  /* culprit made the report directory for this run */
    char *off;                    /* why culprit was off in the command, "" when it was on (a stage may add one) */
    size_t offsz;                 /* the size of off */
    const struct ev_seen *seen;   /* the reports in dir before the run (ev_snapshot) */
    size_t nseen;                 /* how many */
    const struct kernlog *klog;   /* what the run added to the kernel's log */
    int *faulted;                 /* set to 1 when a report shown is of a fault */
    struct merge_report *mine;    /* the run's own reports, annotated (the reports stage), NULL when none */
    size_t nmine;                 /* how many */
    size_t shown;                 /* how many verdicts were shown (all of mine when that is not known) */
    int launched;                 /* how many processes of the run said they launched kernels with culprit loaded */
    int remove_dir;               /* the run left nothing to keep: cli_run_command removes the directory it made */
    /* The report the report stages work on: */
    const char *path;          /* its file */
    struct json *doc;          /* its content, loaded by the first report stage */
    int changed;               /* a stage changed doc: it is saved */
    int addr;                  /* the last answer for the faulting address changed doc */
    int narrowed;              /* the page of its faulting address narrowed its verdict */
    struct ev_skipped skipped; /* the files the report stages passed over */
};

/* One step: run does it on the context and says how to go on. When run answers EV_NOMEM the walker says "out of
 * memory " nomem[0] path nomem[1] (report stages; NULL: "out of memory"). */
struct ev_stage {
    const char *name; /* what the step is called, for a reader of the table */
    enum ev_next (*run)(struct ev_ctx *c);
    const char *nomem[2]; /* the words around the report's path when it ran out of memory */
};

/* Runs the after-run stages over c in order. */
void ev_run(struct ev_ctx *c);
/* Frees what the stages left in c. */
void ev_free(struct ev_ctx *c);

/* Before the run: the reports already in dir, so they are not taken for this run's. Returns 0 or ENOMEM. */
int ev_snapshot(const char *dir, struct ev_seen **seen, size_t *nseen);
/* Whether the report at path is one ev_snapshot saw, unchanged (a file that cannot be read counts as old). */
int ev_is_old(const struct ev_seen *seen, size_t nseen, const char *path);
void ev_seen_free(struct ev_seen *seen, size_t nseen);

/* The stages, each in the file of the evidence it gathers. */
enum ev_next coredump_stage(struct ev_ctx *c);            /* coredump.c: dumps tied to reports (--coredump) */
enum ev_next rerun_stage_job(struct ev_ctx *c);           /* rerun.c: a job's candidates run again (--rerun) */
enum ev_next nccllog_stage_tidy(struct ev_ctx *c);        /* nccllog.c: NCCL's logs culprit asked for, removed */
enum ev_next asserts_stage(struct ev_ctx *c);             /* asserts.c: the device asserts the watch saw, tied */
enum ev_next nccllog_stage(struct ev_ctx *c);             /* nccllog.c: the end of the process's NCCL log */
enum ev_next kernlog_stage(struct ev_ctx *c);             /* kernlog.c: the kernel log's line of the fault */
enum ev_next faultpage_stage_address(struct ev_ctx *c);   /* faultpage.c: what the faulting address touched */
enum ev_next faultpage_stage(struct ev_ctx *c);           /* faultpage.c: candidates the faulting page settles */
enum ev_next faultpage_stage_readdress(struct ev_ctx *c); /* faultpage.c: the address again, once narrowed */
enum ev_next rerun_stage(struct ev_ctx *c);               /* rerun.c: candidates settled by running again (--rerun) */

#endif
