/* Merging the reports of a job. Every process of a run under culprit writes its own reports (a fault, a hang
 * report when it was stopped or asked, an exit record when it saw nothing); this file puts the reports of one
 * job side by side, gives every rank one status, and says in one line which rank faulted first, by the wall
 * clock of each error, and which ranks only suffered from it. Clocks of different hosts are trusted as they
 * are (NTP keeps them within milliseconds; a fault that surfaces on its own rank first is the usual case). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "merge.h"
#include "json.h"
#include "nccl.h"
#include "render.h"
#include "render_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MERGE_NAME_MAX 80   /* a kernel name in a phrase is cut in the middle beyond this */

/* ---- reading the reports ---- */

/* Reports written before hang reports and exit records existed have no kind: they are all faults. */
static const char *merge_kind(const struct json *doc)
{
    const char *k = json_get_str(doc, "kind");
    return k ? k : "fault";
}

static unsigned long long merge_uint(const struct json *obj, const char *key)
{
    long long v = json_get_int(obj, key, 0);
    return v > 0 ? (unsigned long long)v : 0;
}

static int merge_same_dir(const char *a, const char *b)
{
    const char *sa = strrchr(a, '/'), *sb = strrchr(b, '/');
    size_t la = sa ? (size_t)(sa - a) : 0, lb = sb ? (size_t)(sb - b) : 0;
    return la == lb && strncmp(a, b, la) == 0;
}

static int merge_streq(const char *a, const char *b)
{
    return a && b && strcmp(a, b) == 0;
}

/* Whether two reports belong to one job: the launcher's job name when both have one (several `culprit run`
 * commands of one srun step share it; two torchrun jobs under one `culprit run` do not), else the run id of the
 * `culprit run` command, else for ranked reports without either the directory, launcher and world size. */
static int merge_same_job(const struct merge_report *a, const struct merge_report *b)
{
    const struct json *pa = json_get(a->doc, "process"), *pb = json_get(b->doc, "process");
    const char *ja = json_get_str(pa, "job"), *jb = json_get_str(pb, "job");
    const char *ra = json_get_str(pa, "run_id"), *rb = json_get_str(pb, "run_id");
    if (ja && jb)
        return strcmp(ja, jb) == 0;
    if (ra && rb)
        return strcmp(ra, rb) == 0;
    if (ja || jb || ra || rb)
        return 0;
    if (!json_get(pa, "rank") || !json_get(pb, "rank"))
        return 0;
    return merge_same_dir(a->path, b->path) &&
           merge_streq(json_get_str(pa, "launcher"), json_get_str(pb, "launcher")) &&
           json_get_int(pa, "world_size", -1) == json_get_int(pb, "world_size", -1);
}

static size_t merge_root(size_t *parent, size_t i)
{
    while (parent[i] != i) {
        parent[i] = parent[parent[i]];
        i = parent[i];
    }
    return i;
}

/* ---- phrases ---- */

/* A launch as a phrase: "write_oob(int*, int)", or for NCCL's kernels the collective ("NCCL AllReduce (sum,
 * f32, ring, LL)"), then " launched at train.py:42" when the report says where. */
static void merge_launch_phrase(const struct json *launch, char *out, size_t outsz)
{
    char *owned = NULL, cut[MERGE_NAME_MAX + 1], nccl[160], site[300];
    const char *name = render_launch_name(launch, &owned);
    const char *shown = nccl_describe_name(name, nccl, sizeof nccl);
    if (!shown)
        shown = render_elide(name, cut, sizeof cut, MERGE_NAME_MAX);
    render_launch_site(launch, site, sizeof site);
    snprintf(out, outsz, "%s%s%s", shown, site[0] ? " launched at " : "", site);
    free(owned);
}

/* What faulted, as far as the fault report can tell. */
static void merge_fault_launch(const struct json *doc, char *out, size_t outsz)
{
    const struct json *culprit = json_get(doc, "culprit"), *cands = json_get(doc, "candidates");
    char one[600];
    if (json_is(culprit, JSON_OBJ)) {
        merge_launch_phrase(culprit, out, outsz);
    } else if (json_len(cands) > 0) {
        long long lo = -1, hi = -1;
        for (size_t i = 0; i < json_len(cands); i++) {
            long long s = json_get_int(json_at(cands, i), "seq", -1);
            if (s >= 0 && (lo < 0 || s < lo))
                lo = s;
            if (s > hi)
                hi = s;
        }
        merge_launch_phrase(json_at(cands, 0), one, sizeof one);
        if (json_len(cands) == 1)
            snprintf(out, outsz, "probably %s", one);
        else
            snprintf(out, outsz, "one of %zu launches (#%lld..#%lld), the first %s", json_len(cands), lo, hi, one);
    } else {
        snprintf(out, outsz, "a kernel culprit could not name");
    }
}

static void merge_errname(const struct json *err, char *out, size_t outsz)
{
    const char *name = json_get_str(err, "name");
    long long code = json_get_int(err, "code", -1);
    if (name && code >= 0)
        snprintf(out, outsz, "%s (%lld)", name, code);
    else if (name)
        snprintf(out, outsz, "%s", name);
    else
        snprintf(out, outsz, "a sticky CUDA error");
}

/* torch.distributed's collectives, as their Python functions are named: a thread waiting in one of them. */
static const char *const merge_py_collectives[] = {
    "all_reduce", "all_gather", "all_gather_into_tensor", "reduce_scatter", "reduce_scatter_tensor", "broadcast",
    "reduce", "all_to_all", "all_to_all_single", "barrier", "monitored_barrier", "gather", "scatter", "send", "recv",
    "all_gather_object", "broadcast_object_list", "_all_gather_base", "_reduce_scatter_base",
};

/* The collective a Python thread of a hang report waits in (its frames in torch.distributed), or NULL. */
static const char *merge_py_collective(const struct json *threads)
{
    for (size_t i = 0; i < json_len(threads); i++) {
        const struct json *py = json_get(json_at(threads, i), "python");
        for (size_t k = 0; k < json_len(py); k++) {
            const char *file = json_get_str(json_at(py, k), "file");
            const char *fn = json_get_str(json_at(py, k), "function");
            const char *dot = fn ? strrchr(fn, '.') : NULL;
            if (!file || !fn || !strstr(file, "distributed"))
                continue;
            if (dot)
                fn = dot + 1;
            for (size_t c = 0; c < sizeof merge_py_collectives / sizeof merge_py_collectives[0]; c++)
                if (strcmp(fn, merge_py_collectives[c]) == 0)
                    return merge_py_collectives[c];
        }
    }
    return NULL;
}

/* The NCCL kernel among a hang report's in-flight launch, candidates and queued launches, or NULL. */
static const struct json *merge_nccl_launch(const struct json *doc, struct nccl_kernel *k)
{
    static const char *const keys[] = {"candidates", "queued"};
    const struct json *culprit = json_get(doc, "culprit");
    char *owned = NULL;
    int hit = 0;
    if (json_is(culprit, JSON_OBJ)) {
        hit = nccl_decode(render_launch_name(culprit, &owned), k) == 0;
        free(owned);
        if (hit)
            return culprit;
    }
    for (size_t i = 0; i < 2; i++) {
        const struct json *list = json_get(doc, keys[i]);
        for (size_t j = 0; j < json_len(list); j++) {
            owned = NULL;
            hit = nccl_decode(render_launch_name(json_at(list, j), &owned), k) == 0;
            free(owned);
            if (hit)
                return json_at(list, j);
        }
    }
    return NULL;
}

/* A collateral process: what stopped it and where it was. */
static void merge_hang_phrase(struct merge_proc *p)
{
    const struct json *doc = p->hang->doc, *hang = json_get(doc, "hang");
    const struct json *culprit = json_get(doc, "culprit"), *cands = json_get(doc, "candidates");
    const char *trig = json_get_str(hang, "trigger");
    const char *certainty = json_get_str(json_get(doc, "verdict"), "certainty");
    char cause[96], where[400] = "", nccl[160];
    struct nccl_kernel k;
    double secs;

    if (!trig)
        snprintf(cause, sizeof cause, "a hang report");
    else if (strcmp(trig, "timeout") == 0 && json_num(json_get(hang, "timeout_s"), &secs) == 0)
        snprintf(cause, sizeof cause, "no progress for %g s", secs);
    else if (strcmp(trig, "timeout") == 0)
        snprintf(cause, sizeof cause, "no progress (hang timeout)");
    else if (strcmp(trig, "SIGABRT") == 0)
        snprintf(cause, sizeof cause, "aborted (SIGABRT)");
    else if (!strcmp(trig, "SIGTERM") || !strcmp(trig, "SIGINT") || !strcmp(trig, "SIGQUIT") ||
             !strcmp(trig, "SIGHUP"))
        snprintf(cause, sizeof cause, "stopped by %s", trig);
    else
        snprintf(cause, sizeof cause, "a snapshot on %s", trig);

    if (merge_nccl_launch(doc, &k)) {
        snprintf(p->collective, sizeof p->collective, "%s", k.collective);
        snprintf(where, sizeof where, " while waiting in %s", nccl_describe(&k, nccl, sizeof nccl));
    } else {
        const char *py = merge_py_collective(json_get(doc, "threads"));
        if (py) {
            snprintf(p->collective, sizeof p->collective, "%s", py);
            snprintf(where, sizeof where, " while waiting in torch.distributed.%s", py);
        } else if (json_is(culprit, JSON_OBJ) || json_len(cands) > 0) {
            char launch[360];
            merge_launch_phrase(json_is(culprit, JSON_OBJ) ? culprit : json_at(cands, 0), launch, sizeof launch);
            snprintf(where, sizeof where, " with %s in flight", launch);
        } else if (certainty && strcmp(certainty, "idle") == 0) {
            snprintf(where, sizeof where, " with no kernel in flight");
        }
    }
    snprintf(p->what, sizeof p->what, "%s%s", cause, where);
    if (p->collective[0])
        snprintf(p->why, sizeof p->why, "%s while waiting in %s", cause, p->collective);
    else
        snprintf(p->why, sizeof p->why, "%s", cause);
}

static void merge_clean_phrase(struct merge_proc *p)
{
    const struct json *doc = p->exit->doc;
    long long status = json_get_int(json_get(doc, "exit"), "status", -1);
    long long launches = json_get_int(json_get(doc, "stats"), "launches", -1);
    size_t used = (size_t)snprintf(p->what, sizeof p->what, "saw no fault");
    if (status >= 0)
        used += (size_t)snprintf(p->what + used, sizeof p->what - used, "; it exited with status %lld", status);
    if (launches >= 0 && used < sizeof p->what)
        snprintf(p->what + used, sizeof p->what - used, "%s after %lld launch%s", status >= 0 ? "" : "; it exited",
                 launches, launches == 1 ? "" : "es");
}

/* ---- the job ---- */

static int merge_cmp_proc(const void *a, const void *b)
{
    const struct merge_proc *x = a, *y = b;
    int hs;
    if ((x->rank < 0) != (y->rank < 0))
        return x->rank < 0 ? 1 : -1;
    if (x->rank != y->rank)
        return x->rank < y->rank ? -1 : 1;
    hs = strcmp(x->host, y->host);
    if (hs)
        return hs;
    return x->pid < y->pid ? -1 : x->pid > y->pid;
}

int merge_rank_shared(const struct merge_job *j, const struct merge_proc *p)
{
    for (size_t i = 0; i < j->nprocs && p->rank >= 0; i++)
        if (&j->procs[i] != p && j->procs[i].rank == p->rank)
            return 1;
    return 0;
}

void merge_label(const struct merge_job *j, const struct merge_proc *p, char *out, size_t outsz)
{
    if (p->rank >= 0 && p->pid >= 0 && merge_rank_shared(j, p))
        snprintf(out, outsz, "rank %d (pid %lld)", p->rank, p->pid);
    else if (p->rank >= 0)
        snprintf(out, outsz, "rank %d", p->rank);
    else
        snprintf(out, outsz, "process %lld", p->pid);
}

/* Appends the processes of sel (indexes into j->procs) as "rank 3", "ranks 0, 1, 3", "ranks 0-5, 7", or, with
 * processes without a rank or sharing one, by their labels. */
static void merge_list(struct render_buf *b, const struct merge_job *j, const size_t *sel, size_t n)
{
    int plain = 1;  /* all have ranks of their own */
    for (size_t i = 0; i < n; i++)
        if (j->procs[sel[i]].rank < 0 || merge_rank_shared(j, &j->procs[sel[i]]))
            plain = 0;
    if (!plain) {
        for (size_t i = 0; i < n; i++) {
            char l[64];
            merge_label(j, &j->procs[sel[i]], l, sizeof l);
            render_add(b, "%s%s", i ? ", " : "", l);
        }
        return;
    }
    render_add(b, "rank%s ", n == 1 ? "" : "s");
    for (size_t i = 0; i < n;) {
        size_t k = i;
        while (k + 1 < n && j->procs[sel[k + 1]].rank == j->procs[sel[k]].rank + 1)
            k++;
        if (k - i >= 2)
            render_add(b, "%s%d-%d", i ? ", " : "", j->procs[sel[i]].rank, j->procs[sel[k]].rank);
        else
            for (size_t m = i; m <= k; m++)
                render_add(b, "%s%d", m ? ", " : "", j->procs[sel[m]].rank);
        i = k + 1;
    }
}

static void merge_verdict_line(struct merge_job *j)
{
    struct render_buf b = {0};
    size_t *sel = calloc(j->nprocs ? j->nprocs : 1, sizeof *sel), n, unranked = 0, distinct = 0, nparts = 0;
    int any_fault = j->first >= 0, in_coll = 0, out_coll = 0;
    if (!sel)
        return;
    for (size_t i = 0; i < j->nprocs; i++) {
        if (j->procs[i].rank < 0)
            unranked++;
        else if (i == 0 || j->procs[i - 1].rank != j->procs[i].rank)
            distinct++;
    }
    if (j->ranked) {
        long long nr = j->world_size > 0 ? j->world_size : (long long)distinct;
        render_add(&b, "job of %lld rank%s", nr, nr == 1 ? "" : "s");
        if (j->launcher)
            render_add(&b, " (%s)", j->launcher);
        if (unranked)
            render_add(&b, " and %zu process%s without a rank", unranked, unranked == 1 ? "" : "es");
    } else {
        render_add(&b, "job of %zu processes", j->nprocs);
    }
    if (j->nhosts > 1)
        render_add(&b, " on %zu hosts", j->nhosts);
    render_add(&b, ": ");

    if (any_fault) {
        const struct merge_proc *f = &j->procs[j->first];
        char l[64], launch[700];
        merge_label(j, f, l, sizeof l);
        merge_fault_launch(f->fault->doc, launch, sizeof launch);
        render_add(&b, "%s", l);
        if (j->nhosts > 1 && f->host[0])
            render_add(&b, " (on %s)", f->host);
        render_add(&b, " faulted first: %s", launch);
        nparts++;
        n = 0;
        for (size_t i = 0; i < j->nprocs; i++)
            if (j->procs[i].status == MERGE_FAULTED && !j->procs[i].first)
                sel[n++] = i;
        if (n) {
            render_add(&b, "; ");
            merge_list(&b, j, sel, n);
            render_add(&b, " also faulted");
        }
    }
    /* collateral, grouped by what happened to them */
    for (size_t i = 0; i < j->nprocs; i++) {
        const struct merge_proc *p = &j->procs[i];
        int seen = 0;
        if (p->status != MERGE_COLLATERAL)
            continue;
        if (p->collective[0])
            in_coll = 1;
        else
            out_coll = 1;
        for (size_t k = 0; k < i && !seen; k++)
            seen = j->procs[k].status == MERGE_COLLATERAL && strcmp(j->procs[k].why, p->why) == 0;
        if (seen)
            continue;
        n = 0;
        for (size_t k = i; k < j->nprocs; k++)
            if (j->procs[k].status == MERGE_COLLATERAL && strcmp(j->procs[k].why, p->why) == 0)
                sel[n++] = k;
        render_add(&b, "%s", !any_fault && nparts == 0 ? (j->ranked ? "no rank faulted; " : "no process faulted; ")
                                                       : "; ");
        nparts++;
        merge_list(&b, j, sel, n);
        if (any_fault)
            render_add(&b, " %s collateral (%s)", n == 1 ? "is" : "are", p->why);
        else
            render_add(&b, " hung (%s)", p->why);
    }
    if (!any_fault && in_coll && out_coll) {
        /* the others wait in a collective for the ranks that never reached it */
        n = 0;
        for (size_t i = 0; i < j->nprocs; i++)
            if (j->procs[i].status == MERGE_COLLATERAL && !j->procs[i].collective[0])
                sel[n++] = i;
        render_add(&b, "; ");
        merge_list(&b, j, sel, n);
        render_add(&b, " did not reach the collective the others wait in: look there first");
    }
    n = 0;
    for (size_t i = 0; i < j->nprocs; i++)
        if (j->procs[i].status == MERGE_CLEAN)
            sel[n++] = i;
    if (n) {
        render_add(&b, "%s", nparts ? "; " : j->ranked ? "no rank faulted; " : "no process faulted; ");
        nparts++;
        merge_list(&b, j, sel, n);
        render_add(&b, " saw no fault");
    }
    n = 0;
    for (size_t i = 0; i < j->nprocs; i++)
        if (j->procs[i].status == MERGE_MISSING)
            sel[n++] = i;
    if (n) {
        render_add(&b, "%s", nparts ? "; " : "");
        merge_list(&b, j, sel, n);
        render_add(&b, " %s missing (no report)", n == 1 ? "is" : "are");
    }
    if (!b.oom)
        snprintf(j->verdict, sizeof j->verdict, "%s", b.p);
    free(b.p);
    free(sel);
}

/* Adds the ranks below the world size that no report names, as missing. */
static int merge_add_missing(struct merge_job *j)
{
    size_t missing = 0;
    if (!j->ranked || j->world_size <= 0)
        return 0;
    for (int pass = 0; pass < 2; pass++) {
        size_t have_n = j->nprocs;
        for (long long r = 0; r < j->world_size; r++) {
            int have = 0;
            for (size_t k = 0; k < have_n && !have; k++)
                have = j->procs[k].rank == r;
            if (have)
                continue;
            if (pass == 0) {
                missing++;
                continue;
            }
            struct merge_proc *p = &j->procs[j->nprocs++];
            memset(p, 0, sizeof *p);
            p->host = "";
            p->pid = -1;
            p->rank = (int)r;
            p->local_rank = -1;
            p->status = MERGE_MISSING;
            snprintf(p->what, sizeof p->what,
                     "no report (it launched no kernels, or ended before culprit's exit code could run: killed, "
                     "or _exit)");
        }
        if (pass == 0) {
            struct merge_proc *np;
            if (!missing)
                return 0;
            np = realloc(j->procs, (j->nprocs + missing) * sizeof *np);
            if (!np)
                return ENOMEM;
            j->procs = np;
        }
    }
    return 0;
}

/* Works out one job from the reports idx[0..n). */
static int merge_one(struct merge_job *j, const struct merge_report *reps, const size_t *idx, size_t n)
{
    int launcher_mixed = 0;
    j->first = -1;
    j->world_size = -1;
    j->reports = malloc((n ? n : 1) * sizeof *j->reports);
    j->procs = calloc(n ? n : 1, sizeof *j->procs);
    if (!j->reports || !j->procs)
        return ENOMEM;
    memcpy(j->reports, idx, n * sizeof *idx);
    j->nreports = n;
    for (size_t i = 0; i < n; i++) {
        const struct merge_report *r = &reps[idx[i]];
        const struct json *proc = json_get(r->doc, "process");
        const char *host = json_get_str(proc, "hostname"), *kind = merge_kind(r->doc);
        const char *launcher = json_get_str(proc, "launcher");
        long long pid = json_get_int(proc, "pid", -1), rank = json_get_int(proc, "rank", -1);
        long long world = json_get_int(proc, "world_size", -1);
        struct merge_proc *p = NULL;
        if (!host)
            host = "";
        for (size_t k = 0; k < j->nprocs && pid >= 0; k++)
            if (j->procs[k].pid == pid && strcmp(j->procs[k].host, host) == 0)
                p = &j->procs[k];
        if (!p) {
            p = &j->procs[j->nprocs++];
            p->host = host;
            p->pid = pid;
            p->rank = p->local_rank = -1;
        }
        if (rank >= 0 && rank < 100000000) {
            p->rank = (int)rank;
            j->ranked = 1;
        }
        if (json_get_int(proc, "local_rank", -1) >= 0 && json_get_int(proc, "local_rank", -1) < 100000000)
            p->local_rank = (int)json_get_int(proc, "local_rank", -1);
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
            if (!p->hang || merge_uint(proc, "time_unix_ns") >
                                merge_uint(json_get(p->hang->doc, "process"), "time_unix_ns"))
                p->hang = r;
        } else if (strcmp(kind, "exit") == 0) {
            p->exit = r;
        } else {
            unsigned long long t = merge_uint(json_get(r->doc, "error"), "time_unix_ns");
            if (!p->fault || (t && (!p->fault_ns || t < p->fault_ns))) {
                p->fault = r;
                p->fault_ns = t;
            }
        }
    }
    if (merge_add_missing(j))
        return ENOMEM;
    qsort(j->procs, j->nprocs, sizeof *j->procs, merge_cmp_proc);
    for (size_t i = 0; i < j->nprocs; i++) {
        struct merge_proc *p = &j->procs[i];
        if (p->host[0]) {
            int seen = 0;
            for (size_t k = 0; k < i && !seen; k++)
                seen = strcmp(j->procs[k].host, p->host) == 0;
            if (!seen)
                j->nhosts++;
        }
        if (p->status == MERGE_MISSING)
            continue;
        if (p->fault) {
            p->status = MERGE_FAULTED;
            /* the earliest error by the wall clock; reports without one (other versions) count after those with */
            if (j->first < 0 ||
                (p->fault_ns && (!j->procs[j->first].fault_ns || p->fault_ns < j->procs[j->first].fault_ns)))
                j->first = (long)i;
        } else if (p->hang) {
            p->status = MERGE_COLLATERAL;
            merge_hang_phrase(p);
        } else {
            p->status = MERGE_CLEAN;
            merge_clean_phrase(p);
        }
    }
    for (size_t i = 0; i < j->nprocs; i++) {
        struct merge_proc *p = &j->procs[i];
        char err[200], launch[700];
        if (p->status != MERGE_FAULTED)
            continue;
        p->first = (long)i == j->first;
        merge_errname(json_get(p->fault->doc, "error"), err, sizeof err);
        merge_fault_launch(p->fault->doc, launch, sizeof launch);
        if (p->first) {
            snprintf(p->what, sizeof p->what, "faulted first: %s in %s", err, launch);
        } else {
            const struct merge_proc *f = &j->procs[j->first];
            if (p->fault_ns && f->fault_ns && p->fault_ns >= f->fault_ns)
                snprintf(p->what, sizeof p->what, "also faulted, %.3f s later: %s in %s",
                         (double)(p->fault_ns - f->fault_ns) / 1e9, err, launch);
            else
                snprintf(p->what, sizeof p->what, "also faulted: %s in %s", err, launch);
        }
    }
    merge_verdict_line(j);
    return 0;
}

int merge_jobs(const struct merge_report *reps, size_t n, struct merge_job **jobs, size_t *njobs)
{
    size_t *parent = malloc((n ? n : 1) * sizeof *parent), *idx = malloc((n ? n : 1) * sizeof *idx);
    size_t nj = 0;
    int rc = 0;
    *jobs = NULL;
    *njobs = 0;
    if (!parent || !idx) {
        free(parent);
        free(idx);
        return ENOMEM;
    }
    for (size_t i = 0; i < n; i++)
        parent[i] = i;
    for (size_t i = 0; i < n; i++)
        for (size_t k = i + 1; k < n; k++)
            if (merge_root(parent, i) != merge_root(parent, k) && merge_same_job(&reps[i], &reps[k]))
                parent[merge_root(parent, k)] = merge_root(parent, i);
    for (size_t i = 0; i < n; i++)
        if (merge_root(parent, i) == i)
            nj++;
    *jobs = calloc(nj ? nj : 1, sizeof **jobs);
    if (!*jobs) {
        free(parent);
        free(idx);
        return ENOMEM;
    }
    /* jobs in the order of their first report */
    for (size_t i = 0; i < n && rc == 0; i++) {
        size_t root = merge_root(parent, i), m = 0;
        int first = 1;
        for (size_t k = 0; k < i && first; k++)
            first = merge_root(parent, k) != root;
        if (!first)
            continue;
        for (size_t k = i; k < n; k++)
            if (merge_root(parent, k) == root)
                idx[m++] = k;
        rc = merge_one(&(*jobs)[(*njobs)++], reps, idx, m);
    }
    free(parent);
    free(idx);
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
        free(jobs[i].procs);
    }
    free(jobs);
}

int merge_is_job(const struct merge_job *j)
{
    return j->ranked || j->nprocs > 1;
}
