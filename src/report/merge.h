/* The reports of one job merged into one view (merge.c; shown by render_job.c): every rank (or process) of a run with one status,
 * which rank faulted first, which ones are collateral, which saw no fault and which left no report at all, as
 * text with one verdict line on top and as JSON (schema "culprit.job/1"). Reports are read, never changed. */
#ifndef CULPRIT_REPORT_MERGE_H
#define CULPRIT_REPORT_MERGE_H

#include <stddef.h>

struct json;
struct jw;
struct render_opts;

/* One report file and its parsed content (both the caller's, and kept alive while a job refers to them). */
struct merge_report {
    const char *path;       /* the file, as the user named it */
    const struct json *doc; /* its content */
};

/* How the job's first fault was told from the others (merge_job.order). Where the reports allow, it does not
 * rest on clocks: a fault inside a collective (an NCCL kernel) is what a rank suffers when another rank failed,
 * so a fault in a rank's own kernel comes first whatever the clocks say. */
enum merge_order {
    MERGE_ORDER_NONE,   /* no fault */
    MERGE_ORDER_ONLY,   /* one process faulted */
    MERGE_ORDER_KERNEL, /* the only fault outside a collective: the others faulted inside one */
    MERGE_ORDER_CLOCK,  /* by the error times of one host's clock */
    MERGE_ORDER_CLOCKS, /* by the error times of several hosts' clocks, which may disagree */
};

enum merge_status {
    MERGE_FAULTED,    /* it wrote a fault report */
    MERGE_COLLATERAL, /* a hang report: stopped, aborted, timed out, or asked for a snapshot */
    MERGE_CLEAN,      /* an exit record: it saw no fault */
    MERGE_MISSING,    /* ranks below the world size that left no report */
};

/* One process of the job (a rank, or a process without rank fields), or a run of missing ranks: one entry for
 * every gap between the ranks present, so that what one report claims as its world size costs no memory. */
struct merge_proc {
    const char *host;                 /* process.hostname, "" when the report lacks it */
    long long pid;                    /* process.pid, -1 for missing ranks */
    int rank;                         /* process.rank, -1 when it has none; missing: the first of the run */
    int rank_last;                    /* missing: the last rank of the run; otherwise rank */
    int local_rank;                   /* process.local_rank, -1 when it has none */
    const struct merge_report *fault; /* its fault report (the first by time), or NULL */
    const struct merge_report *hang;  /* its hang report (the newest), or NULL */
    const struct merge_report *exit;  /* its exit record, or NULL */
    int status;                       /* enum merge_status */
    int first;                        /* the job's first fault */
    int in_collective;                /* faulted: in a collective's kernel (every launch it may be is NCCL's) */
    int rank_shared;                  /* another process of the job has its rank (a forked child inherits it) */
    unsigned long long fault_ns;      /* error.time_unix_ns of its fault; 0 when unknown */
    size_t rep_first, rep_count;      /* its reports: merge_job.proc_reports[rep_first .. rep_first + rep_count) */
    char what[1024];                  /* what happened to it, one phrase ("stopped by SIGTERM while waiting in ...") */
    char why[160];                    /* the short form processes are grouped by: in the verdict line (collateral)
                                     * and in the lines of a large job (every status) */
    char collective[40];              /* collateral: the collective it waited in ("AllReduce"); faulted: the one
                                     * whose kernel faulted; "" none known */
    int device_stuck;                 /* hang: it runs a kernel of its own, not a collective's, and waits in no
                                     * collective: the device said so, or its breadcrumbs name the launch */
    const char *stuck_by;             /* how that is known: "the device" or "its breadcrumbs"; NULL when not */
};

/* One job: reports that share the launcher's job name or `culprit run`'s run id, or (reports written without
 * either) ranked reports in one directory. Each report of other versions without any of these is a job alone. */
struct merge_job {
    size_t *reports;          /* indexes into the merged reports, in their order */
    size_t *proc_reports;     /* the same indexes grouped by process (merge_proc.rep_first) */
    size_t nreports;          /* entries in reports and proc_reports */
    struct merge_proc *procs; /* its processes by rank, then host and pid; missing ranks included */
    size_t nprocs;            /* entries in procs */
    int ranked;               /* some report carries a rank */
    long long world_size;     /* the largest world size a report gives; -1 unknown */
    const char *launcher;     /* the launcher the reports name; NULL when none (or they differ) */
    size_t nhosts;            /* distinct host names */
    long first;               /* index in procs of the first fault, -1 none */
    int order;                /* enum merge_order: what tells the first fault from the others */
    size_t order_hosts;       /* MERGE_ORDER_CLOCKS: the hosts whose clocks were compared */
    char verdict[2048];       /* the verdict line, without the "culprit: " prefix */
};

/* Groups reps into jobs and works out each job's view. Returns 0 and *jobs (free with merge_free), or ENOMEM. */
int merge_jobs(const struct merge_report *reps, size_t n, struct merge_job **jobs, size_t *njobs);
void merge_free(struct merge_job *jobs, size_t njobs);

/* Whether the job is worth a merged view: reports of more than one process, or with rank fields. */
int merge_is_job(const struct merge_job *j);

/* Whether another process of the job has p's rank (a forked child inherits its parent's). */
int merge_rank_shared(const struct merge_job *j, const struct merge_proc *p);
/* How a process is named in lists: "rank 2", "process 4242"; with its pid when another process has its rank;
 * missing ranks "ranks 5-9999999". */
void merge_label(const struct merge_job *j, const struct merge_proc *p, char *out, size_t outsz);
/* How many ranks (or processes) the entries sel[0..n) of j->procs stand for: a run of missing ranks counts all. */
size_t merge_count(const struct merge_job *j, const size_t *sel, size_t n);

struct render_buf;
/* Appends the processes sel[0..n) (indexes into j->procs, in order) as "rank 3", "ranks 0-511, 513-1023", or by
 * their labels when some have no rank of their own; after MERGE_LIST_MAX pieces, "and N more". */
#define MERGE_LIST_MAX 24
void merge_list(struct render_buf *b, const struct merge_job *j, const size_t *sel, size_t n);

/* render_job.c */
/* The text: the verdict line, one line per rank or process (in a job of more than MERGE_LINES_MAX processes,
 * one line per group of processes with the same status and phrase), then (unless brief) the full verdict of the
 * first faulting one, or of the hang that stands out when none faulted. malloc'd, or NULL when out of memory. */
#define MERGE_LINES_MAX 16
char *merge_render(const struct merge_job *j, const struct merge_report *reps, const struct render_opts *o);

/* The job as JSON (schema "culprit.job/1", docs/report.md) through w. */
void merge_write_json(const struct merge_job *j, const struct merge_report *reps, struct jw *w);

#endif
