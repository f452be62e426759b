/* Merging the reports of a job. Every process of a run under culprit writes its own reports (a fault, a hang
 * report when it was stopped or asked, an exit record when it saw nothing); this file puts the reports of one
 * job side by side, gives every rank one status, and says in one line which rank faulted first and which ranks
 * only suffered from it. The first fault rests on what faulted before it rests on clocks: a rank whose fault
 * was inside a collective (an NCCL kernel) suffered another rank's, and hosts' clocks can be seconds apart
 * while a fault spreads in milliseconds; between faults of the same kind the wall clock of each error decides,
 * and the verdict says when those clocks are of several hosts. Everything is sorted, never compared in pairs,
 * so that thousands of ranks merge in a fraction of a second. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "merge.h"
#include "merge_group.h"
#include "merge_words.h"
#include "../render/json.h"
#include "../render/nccl.h"
#include "../render/render.h"
#include "../render/render_int.h"
#include "../render/report_keys.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int merge_cmp_int(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

/* Adds the ranks below the world size that no report names, as missing: one entry per run of them between the
 * ranks present, so that memory and time follow the reports, not the world size one of them claims. */
static int merge_add_missing(struct merge_job *j)
{
    size_t nr = 0, have_n = j->nprocs;
    struct merge_proc *np;
    long long next = 0; /* the lowest rank not yet known present or missing */
    int *ranks;
    if (!j->ranked || j->world_size <= 0)
        return 0;
    ranks = malloc((have_n ? have_n : 1) * sizeof *ranks);
    /* at most one run before each rank present and one after the last */
    np = realloc(j->procs, (have_n + have_n + 1) * sizeof *np);
    if (!ranks || !np) {
        free(ranks);
        if (np)
            j->procs = np;
        return ENOMEM;
    }
    j->procs = np;
    for (size_t k = 0; k < have_n; k++)
        if (j->procs[k].rank >= 0)
            ranks[nr++] = j->procs[k].rank;
    qsort(ranks, nr, sizeof *ranks, merge_cmp_int);
    for (size_t at = 0; at <= nr && next < j->world_size; at++) {
        long long upto = at < nr ? ranks[at] : j->world_size; /* the run is [next, upto) */
        if (upto > j->world_size)
            upto = j->world_size;
        if (upto > next) {
            struct merge_proc *p = &j->procs[j->nprocs++];
            memset(p, 0, sizeof *p);
            p->host = "";
            p->pid = -1;
            p->rank = (int)next;
            p->rank_last = (int)(upto - 1);
            p->local_rank = -1;
            p->status = MERGE_MISSING;
            snprintf(p->what, sizeof p->what,
                     "no report (it launched no kernels, or ended before culprit's exit code could run: killed, "
                     "or _exit)");
            snprintf(p->why, sizeof p->why, "missing");
        }
        if (at < nr && ranks[at] + 1 > next)
            next = ranks[at] + 1;
    }
    free(ranks);
    return 0;
}

/* The reports of one job sorted by process (host, then pid), each process's in their order. */
static const struct merge_report *g_sort_reps; /* the reports merge_cmp_report compares (qsort has no context) */

static int merge_cmp_report(const void *a, const void *b)
{
    size_t x = *(const size_t *)a, y = *(const size_t *)b;
    const struct json *px = json_get(g_sort_reps[x].doc, RK_PROCESS), *py = json_get(g_sort_reps[y].doc, RK_PROCESS);
    long long ix = json_get_int(px, RK_PID, -1), iy = json_get_int(py, RK_PID, -1);
    int c;
    /* reports without a pid are processes of their own: they sort by place alone */
    if ((ix < 0) != (iy < 0))
        return ix < 0 ? 1 : -1;
    if (ix >= 0) {
        c = merge_strcmp0(json_get_str(px, RK_HOSTNAME), json_get_str(py, RK_HOSTNAME));
        if (c)
            return c;
        if (ix != iy)
            return ix < iy ? -1 : 1;
    }
    return (x > y) - (x < y);
}

static int merge_cmp_str(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Which process faulted first, and on what that rests (j->order). A fault inside a collective comes after any
 * fault in a rank's own kernel; among faults of one kind the earliest error by the wall clock, reports without
 * a time after those with one. */
static void merge_first(struct merge_job *j)
{
    size_t faulted = 0, same = 0;
    int own = 0; /* some fault was in a rank's own kernel */
    const char **hosts;
    for (size_t i = 0; i < j->nprocs; i++)
        if (j->procs[i].status == MERGE_FAULTED) {
            faulted++;
            own |= !j->procs[i].in_collective;
        }
    j->order = faulted ? MERGE_ORDER_ONLY : MERGE_ORDER_NONE;
    for (size_t i = 0; i < j->nprocs; i++) {
        const struct merge_proc *p = &j->procs[i];
        if (p->status != MERGE_FAULTED || p->in_collective != !own)
            continue;
        same++;
        if (j->first < 0 ||
            (p->fault_ns && (!j->procs[j->first].fault_ns || p->fault_ns < j->procs[j->first].fault_ns)))
            j->first = (long)i;
    }
    if (faulted > 1)
        j->order = same == 1 ? MERGE_ORDER_KERNEL : MERGE_ORDER_CLOCK;
    if (same < 2)
        return;
    hosts = malloc(same * sizeof *hosts);
    if (!hosts)
        return; /* then the verdict does not say on how many hosts' clocks it rests */
    same = 0;
    for (size_t i = 0; i < j->nprocs; i++)
        if (j->procs[i].status == MERGE_FAULTED && j->procs[i].in_collective == !own && j->procs[i].host[0])
            hosts[same++] = j->procs[i].host;
    qsort(hosts, same, sizeof *hosts, merge_cmp_str);
    for (size_t i = 0; i < same; i++)
        j->order_hosts += i == 0 || strcmp(hosts[i], hosts[i - 1]) != 0;
    if (j->order_hosts > 1)
        j->order = MERGE_ORDER_CLOCKS;
    free(hosts);
}

/* What a fault other than the first says: where it faulted and when, by which clocks. */
static void merge_other_fault(struct merge_job *j, struct merge_proc *p, const char *err, const char *launch)
{
    const struct merge_proc *f = &j->procs[j->first];
    char when[160] = "";
    if (p->fault_ns && f->fault_ns) {
        unsigned long long d = p->fault_ns >= f->fault_ns ? p->fault_ns - f->fault_ns : f->fault_ns - p->fault_ns;
        snprintf(when, sizeof when, ", %.3f s %s%s", (double)d / 1e9, p->fault_ns >= f->fault_ns ? "later" : "earlier",
                 strcmp(p->host, f->host) != 0 ? " by the clocks of two hosts" : "");
    }
    /* cut to the field's size when the error and the launch line are long: it is a summary line */
    if (snprintf(p->what, sizeof p->what, "also faulted%s%s: %s in %s", p->in_collective ? ", inside a collective" : "",
                 when, err, launch) >= (int)sizeof p->what)
        p->what[sizeof p->what - 1] = '\0';
    if (p->in_collective && p->collective[0])
        snprintf(p->why, sizeof p->why, "also faulted, inside %s", p->collective);
    else
        snprintf(p->why, sizeof p->why, "also faulted%s", p->in_collective ? ", inside a collective" : "");
}

/* Works out one job from the reports idx[0..n). */
static int merge_one(struct merge_job *j, const struct merge_report *reps, const size_t *idx, size_t n)
{
    int launcher_mixed = 0;
    const char **hosts;
    size_t nh = 0;
    j->first = -1;
    j->world_size = -1;
    j->reports = malloc((n ? n : 1) * sizeof *j->reports);
    j->proc_reports = malloc((n ? n : 1) * sizeof *j->proc_reports);
    j->procs = calloc(n ? n : 1, sizeof *j->procs);
    if (!j->reports || !j->proc_reports || !j->procs)
        return ENOMEM;
    memcpy(j->reports, idx, n * sizeof *idx);
    memcpy(j->proc_reports, idx, n * sizeof *idx);
    j->nreports = n;
    g_sort_reps = reps;
    qsort(j->proc_reports, n, sizeof *j->proc_reports, merge_cmp_report);
    for (size_t i = 0; i < n; i++) {
        const struct merge_report *r = &reps[j->proc_reports[i]];
        const struct json *proc = json_get(r->doc, RK_PROCESS);
        const char *host = json_get_str(proc, RK_HOSTNAME), *kind = merge_kind(r->doc);
        const char *launcher = json_get_str(proc, RK_LAUNCHER);
        long long pid = json_get_int(proc, RK_PID, -1), rank = json_get_int(proc, RK_RANK, -1);
        long long world = json_get_int(proc, RK_WORLD_SIZE, -1);
        struct merge_proc *p = j->nprocs ? &j->procs[j->nprocs - 1] : NULL;
        if (!host)
            host = "";
        /* the reports of one process are next to each other */
        if (!p || pid < 0 || p->pid != pid || strcmp(p->host, host) != 0) {
            p = &j->procs[j->nprocs++];
            p->host = host;
            p->pid = pid;
            p->rank = p->rank_last = p->local_rank = -1;
            p->rep_first = i;
        }
        p->rep_count++;
        if (rank >= 0 && rank < 100000000) {
            p->rank = p->rank_last = (int)rank;
            j->ranked = 1;
        }
        if (json_get_int(proc, RK_LOCAL_RANK, -1) >= 0 && json_get_int(proc, RK_LOCAL_RANK, -1) < 100000000)
            p->local_rank = (int)json_get_int(proc, RK_LOCAL_RANK, -1);
        if (world > j->world_size && world < 100000000)
            j->world_size = world;
        if (launcher && !launcher_mixed) {
            if (j->launcher && strcmp(j->launcher, launcher) != 0) {
                launcher_mixed = 1;
                j->launcher = NULL;
            } else {
                j->launcher = launcher;
            }
        }
        if (strcmp(kind, "hang") == 0) {
            /* a later trigger replaces the file; of two files the newer one is the fresher snapshot */
            if (!p->hang ||
                merge_uint(proc, RK_TIME_UNIX_NS) > merge_uint(json_get(p->hang->doc, RK_PROCESS), RK_TIME_UNIX_NS))
                p->hang = r;
        } else if (strcmp(kind, "exit") == 0) {
            p->exit = r;
        } else {
            unsigned long long t = merge_uint(json_get(r->doc, RK_ERROR), RK_TIME_UNIX_NS);
            if (!p->fault || (t && (!p->fault_ns || t < p->fault_ns))) {
                p->fault = r;
                p->fault_ns = t;
            }
        }
    }
    /* the processes in job order: rank, host, pid; the reports a process's entry lists are in file order */
    for (size_t i = 0; i < j->nprocs; i++)
        qsort(j->proc_reports + j->procs[i].rep_first, j->procs[i].rep_count, sizeof *j->proc_reports, merge_cmp_size);
    if (merge_add_missing(j))
        return ENOMEM;
    qsort(j->procs, j->nprocs, sizeof *j->procs, merge_cmp_proc);
    hosts = malloc((j->nprocs ? j->nprocs : 1) * sizeof *hosts);
    if (!hosts)
        return ENOMEM;
    for (size_t i = 0; i < j->nprocs; i++) {
        struct merge_proc *p = &j->procs[i];
        p->rank_shared = p->rank >= 0 && ((i > 0 && j->procs[i - 1].rank == p->rank) ||
                                          (i + 1 < j->nprocs && j->procs[i + 1].rank == p->rank));
        if (p->host[0])
            hosts[nh++] = p->host;
        if (p->status == MERGE_MISSING)
            continue;
        if (p->fault) {
            p->status = MERGE_FAULTED;
            p->in_collective = merge_fault_in_collective(p->fault->doc, p->collective, sizeof p->collective);
        } else if (p->hang) {
            p->status = MERGE_COLLATERAL;
            merge_hang_phrase(p);
        } else {
            p->status = MERGE_CLEAN;
            merge_clean_phrase(p);
        }
    }
    qsort(hosts, nh, sizeof *hosts, merge_cmp_str);
    for (size_t i = 0; i < nh; i++)
        j->nhosts += i == 0 || strcmp(hosts[i], hosts[i - 1]) != 0;
    free(hosts);
    merge_first(j);
    for (size_t i = 0; i < j->nprocs; i++) {
        struct merge_proc *p = &j->procs[i];
        char err[200], launch[700];
        if (p->status != MERGE_FAULTED)
            continue;
        p->first = (long)i == j->first;
        merge_errname(json_get(p->fault->doc, RK_ERROR), err, sizeof err);
        merge_fault_launch(p->fault->doc, launch, sizeof launch);
        if (p->first) {
            snprintf(p->what, sizeof p->what, "faulted first: %s in %s", err, launch);
            snprintf(p->why, sizeof p->why, "faulted first");
        } else {
            merge_other_fault(j, p, err, launch);
        }
    }
    merge_verdict_line(j);
    return 0;
}

int merge_jobs(const struct merge_report *reps, size_t n, struct merge_job **jobs, size_t *njobs)
{
    size_t *first = malloc((n ? n : 1) * sizeof *first), *idx = malloc((n ? n : 1) * sizeof *idx);
    size_t *start = calloc(n + 1, sizeof *start), *fill = calloc(n ? n : 1, sizeof *fill), nj = 0;
    int rc = 0;
    *jobs = NULL;
    *njobs = 0;
    if (!first || !idx || !start || !fill || merge_group(reps, n, first) != 0) {
        rc = ENOMEM;
        goto out;
    }
    /* a job per first report (so jobs come in the order of their first file), its reports in file order:
     * counted, then placed */
    for (size_t i = 0; i < n; i++) {
        if (first[i] == i)
            nj++;
        start[first[i] + 1]++;
    }
    for (size_t i = 0; i < n; i++)
        start[i + 1] += start[i];
    for (size_t i = 0; i < n; i++)
        idx[start[first[i]] + fill[first[i]]++] = i;
    *jobs = calloc(nj ? nj : 1, sizeof **jobs);
    if (!*jobs) {
        rc = ENOMEM;
        goto out;
    }
    for (size_t i = 0; i < n && rc == 0; i++)
        if (first[i] == i)
            rc = merge_one(&(*jobs)[(*njobs)++], reps, idx + start[i], fill[i]);
out:
    free(first);
    free(idx);
    free(start);
    free(fill);
    if (rc) {
        merge_free(*jobs, *njobs);
        *jobs = NULL;
        *njobs = 0;
    }
    return rc;
}

void merge_free(struct merge_job *jobs, size_t njobs)
{
    for (size_t i = 0; jobs && i < njobs; i++) {
        free(jobs[i].reports);
        free(jobs[i].proc_reports);
        free(jobs[i].procs);
    }
    free(jobs);
}

int merge_is_job(const struct merge_job *j)
{
    return j->ranked || j->nprocs > 1;
}
