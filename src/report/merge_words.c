/* The words of a job's merged view: the phrase each process gets (a fault, a hang, a clean exit), the kernel and
 * error names in them, and the verdict line that says which rank faulted first and which suffered from it.
 * merge.c groups the reports and decides each process's status; this file only says it. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "merge_words.h"

#include "merge.h"
#include "merge_group.h"
#include "../render/json.h"
#include "../render/nccl.h"
#include "../render/render.h"
#include "../render/render_int.h"
#include "../render/report_keys.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MERGE_NAME_MAX 80      /* a kernel name in a phrase is cut in the middle beyond this */
#define MERGE_VERDICT_GROUPS 8 /* collateral groups the verdict line names one by one; the rest go together */

/* ---- reading the reports ---- */

/* Reports written before hang reports and exit records existed have no kind: they are all faults. */
const char *merge_kind(const struct json *doc)
{
    const char *k = json_get_str(doc, RK_KIND);
    return k ? k : "fault";
}

unsigned long long merge_uint(const struct json *obj, const char *key)
{
    long long v = json_get_int(obj, key, 0);
    return v > 0 ? (unsigned long long)v : 0;
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
void merge_fault_launch(const struct json *doc, char *out, size_t outsz)
{
    const struct json *culprit = json_get(doc, RK_CULPRIT), *cands = rk_candidates(doc);
    char one[600];
    if (json_is(culprit, JSON_OBJ)) {
        merge_launch_phrase(culprit, out, outsz);
    } else if (json_len(cands) > 0) {
        long long lo = -1, hi = -1;
        for (size_t i = 0; i < json_len(cands); i++) {
            long long s = json_get_int(json_at(cands, i), RK_SEQ, -1);
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

void merge_errname(const struct json *err, char *out, size_t outsz)
{
    const char *name = json_get_str(err, RK_NAME);
    long long code = json_get_int(err, RK_CODE, -1);
    if (name && code >= 0)
        snprintf(out, outsz, "%s (%lld)", name, code);
    else if (name)
        snprintf(out, outsz, "%s", name);
    else
        snprintf(out, outsz, "a sticky CUDA error");
}

/* torch.distributed's collectives, as their Python functions are named: a thread waiting in one of them. */
static const char *const merge_py_collectives[] = {
    "all_reduce",
    "all_gather",
    "all_gather_into_tensor",
    "reduce_scatter",
    "reduce_scatter_tensor",
    "broadcast",
    "reduce",
    "all_to_all",
    "all_to_all_single",
    "barrier",
    "monitored_barrier",
    "gather",
    "scatter",
    "send",
    "recv",
    "all_gather_object",
    "broadcast_object_list",
    "_all_gather_base",
    "_reduce_scatter_base",
};

/* The collective a Python thread of a hang report waits in (its frames in torch.distributed), or NULL. */
static const char *merge_py_collective(const struct json *threads)
{
    for (size_t i = 0; i < json_len(threads); i++) {
        const struct json *py = json_get(json_at(threads, i), RK_PYTHON);
        for (size_t k = 0; k < json_len(py); k++) {
            const char *file = json_get_str(json_at(py, k), RK_FILE);
            const char *fn = json_get_str(json_at(py, k), RK_FUNCTION);
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
    static const char *const keys[] = {RK_CANDIDATES, RK_QUEUED};
    const struct json *culprit = json_get(doc, RK_CULPRIT);
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

/* Whether a launch is one of NCCL's kernels (a collective's). */
static int merge_is_nccl(const struct json *launch)
{
    struct nccl_kernel k;
    char *owned = NULL;
    int hit = nccl_decode(render_launch_name(launch, &owned), &k) == 0;
    free(owned);
    return hit;
}

/* ", NCCL AllReduce (sum, f32, ring, LL) queued behind it" */
static const char *merge_nccl_queued(const struct nccl_kernel *k, char *out, size_t outsz)
{
    char d[160];
    snprintf(out, outsz, ", %s queued behind it", nccl_describe(k, d, sizeof d));
    return out;
}

/* Whether a fault report's kernel was a collective's: its culprit is NCCL's, or every candidate is. A rank
 * faults there when another rank's fault broke the collective (or its memory), so its fault does not come
 * first whatever the clocks say. The collective's name goes to coll. */
int merge_fault_in_collective(const struct json *doc, char *coll, size_t collsz)
{
    const struct json *culprit = json_get(doc, RK_CULPRIT), *cands = rk_candidates(doc);
    const struct json *one = NULL;
    struct nccl_kernel k;
    char *owned = NULL;
    if (json_is(culprit, JSON_OBJ)) {
        one = culprit;
    } else if (json_len(cands) > 0) {
        for (size_t i = 0; i < json_len(cands); i++)
            if (!merge_is_nccl(json_at(cands, i)))
                return 0;
        one = json_at(cands, 0);
    } else {
        return 0;
    }
    if (nccl_decode(render_launch_name(one, &owned), &k) != 0) {
        free(owned);
        return 0;
    }
    snprintf(coll, collsz, "%s", k.collective);
    free(owned);
    return 1;
}

/* A collateral process: what stopped it and where it was. */
void merge_hang_phrase(struct merge_proc *p)
{
    const struct json *doc = p->hang->doc, *hang = json_get(doc, RK_HANG);
    const struct json *culprit = json_get(doc, RK_CULPRIT), *cands = rk_candidates(doc);
    const char *trig = json_get_str(hang, RK_TRIGGER);
    const char *certainty = rk_certainty(doc);
    char cause[96], where[600] = "", nccl[160];
    struct nccl_kernel k;
    double secs;

    if (!trig)
        snprintf(cause, sizeof cause, "a hang report");
    else if (strcmp(trig, "timeout") == 0 && json_num(json_get(hang, RK_TIMEOUT_S), &secs) == 0)
        snprintf(cause, sizeof cause, "no progress for %g s", secs);
    else if (strcmp(trig, "timeout") == 0)
        snprintf(cause, sizeof cause, "no progress (hang timeout)");
    else if (strcmp(trig, "SIGABRT") == 0)
        snprintf(cause, sizeof cause, "aborted (SIGABRT)");
    else if (!strcmp(trig, "SIGTERM") || !strcmp(trig, "SIGINT") || !strcmp(trig, "SIGQUIT") || !strcmp(trig, "SIGHUP"))
        snprintf(cause, sizeof cause, "stopped by %s", trig);
    else
        snprintf(cause, sizeof cause, "a snapshot on %s", trig);

    /* NCCL's kernel in flight, else a thread in torch.distributed's collective (gloo's are the host's), else
     * the rank's own kernel in flight (an NCCL kernel queued behind it is a collective it has not reached),
     * else NCCL's kernel among the launches that may be in flight or are queued */
    const char *py = merge_py_collective(json_get(doc, RK_THREADS));
    int own = json_is(culprit, JSON_OBJ) && !merge_is_nccl(culprit);
    const char *by = json_get_str(culprit, RK_BY);
    /* its own kernel in flight, known exactly (asked of the device, or a breadcrumb after the launch before it),
     * and no thread waiting in a collective: what the other ranks wait for */
    int exact = rk_is_exact(doc);
    p->stuck_by = !own || py                            ? NULL
                  : by && strcmp(by, "the device") == 0 ? "the device"
                  : exact                               ? "its breadcrumbs"
                                                        : NULL;
    p->device_stuck = p->stuck_by != NULL;
    if (!own && merge_nccl_launch(doc, &k)) {
        snprintf(p->collective, sizeof p->collective, "%s", k.collective);
        snprintf(where, sizeof where, " while waiting in %s", nccl_describe(&k, nccl, sizeof nccl));
    } else if (py) {
        snprintf(p->collective, sizeof p->collective, "%s", py);
        snprintf(where, sizeof where, " while waiting in torch.distributed.%s", py);
    } else if (own) {
        char launch[360];
        merge_launch_phrase(culprit, launch, sizeof launch);
        snprintf(where, sizeof where, " with %s in flight%s", launch,
                 merge_nccl_launch(doc, &k) ? merge_nccl_queued(&k, nccl, sizeof nccl) : "");
    } else if (json_len(cands) > 0) {
        char launch[360];
        merge_launch_phrase(json_at(cands, 0), launch, sizeof launch);
        snprintf(where, sizeof where, " with %s in flight", launch);
    } else if (certainty && strcmp(certainty, "idle") == 0) {
        snprintf(where, sizeof where, " with no kernel in flight");
    }
    snprintf(p->what, sizeof p->what, "%s%s", cause, where);
    if (p->collective[0])
        snprintf(p->why, sizeof p->why, "%s while waiting in %s", cause, p->collective);
    else
        snprintf(p->why, sizeof p->why, "%s", cause);
}

void merge_clean_phrase(struct merge_proc *p)
{
    const struct json *doc = p->exit->doc;
    long long status = json_get_int(json_get(doc, RK_EXIT), RK_STATUS, -1);
    long long launches = json_get_int(json_get(doc, RK_STATS), RK_LAUNCHES, -1);
    size_t used = (size_t)snprintf(p->what, sizeof p->what, "saw no fault");
    if (status >= 0)
        used += (size_t)snprintf(p->what + used, sizeof p->what - used, "; it exited with status %lld", status);
    if (launches >= 0 && used < sizeof p->what)
        snprintf(p->what + used, sizeof p->what - used, "%s after %lld launch%s", status >= 0 ? "" : "; it exited",
                 launches, launches == 1 ? "" : "es");
    if (status >= 0)
        snprintf(p->why, sizeof p->why, "saw no fault; it exited with status %lld", status);
    else
        snprintf(p->why, sizeof p->why, "saw no fault");
}

/* ---- orders ---- */

int merge_cmp_proc(const void *a, const void *b)
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
    (void)j;
    return p->rank >= 0 && p->rank_shared;
}

/* The ranks an entry stands for: a run of missing ranks all of them, anything else one. */
static size_t merge_span(const struct merge_proc *p)
{
    return p->status == MERGE_MISSING && p->rank >= 0 && p->rank_last > p->rank ? (size_t)(p->rank_last - p->rank) + 1
                                                                                : 1;
}

size_t merge_count(const struct merge_job *j, const size_t *sel, size_t n)
{
    size_t c = 0;
    for (size_t i = 0; i < n; i++)
        c += merge_span(&j->procs[sel[i]]);
    return c;
}

void merge_label(const struct merge_job *j, const struct merge_proc *p, char *out, size_t outsz)
{
    if (merge_span(p) > 1)
        snprintf(out, outsz, "ranks %d%s%d", p->rank, merge_span(p) == 2 ? ", " : "-", p->rank_last);
    else if (p->rank >= 0 && p->pid >= 0 && merge_rank_shared(j, p))
        snprintf(out, outsz, "rank %d (pid %lld)", p->rank, p->pid);
    else if (p->rank >= 0)
        snprintf(out, outsz, "rank %d", p->rank);
    else
        snprintf(out, outsz, "process %lld", p->pid);
}

void merge_list(struct render_buf *b, const struct merge_job *j, const size_t *sel, size_t n)
{
    int plain = 1; /* all have ranks of their own */
    size_t pieces = 0, i = 0;
    for (size_t k = 0; k < n; k++)
        if (j->procs[sel[k]].rank < 0 || merge_rank_shared(j, &j->procs[sel[k]]))
            plain = 0;
    if (!plain) {
        for (; i < n && pieces < MERGE_LIST_MAX; i++, pieces++) {
            char l[64];
            merge_label(j, &j->procs[sel[i]], l, sizeof l);
            render_add(b, "%s%s", i ? ", " : "", l);
        }
    } else {
        render_add(b, "rank%s ", merge_count(j, sel, n) == 1 ? "" : "s");
        /* runs of consecutive ranks, a run of missing ranks being one already */
        while (i < n && pieces < MERGE_LIST_MAX) {
            size_t k = i;
            while (k + 1 < n && j->procs[sel[k + 1]].rank == j->procs[sel[k]].rank_last + 1)
                k++;
            int lo = j->procs[sel[i]].rank, hi = j->procs[sel[k]].rank_last;
            if (hi - lo >= 2) {
                render_add(b, "%s%d-%d", i ? ", " : "", lo, hi);
                pieces++;
            } else {
                for (int r = lo; r <= hi; r++, pieces++)
                    render_add(b, "%s%d", i || r > lo ? ", " : "", r);
            }
            i = k + 1;
        }
    }
    if (i < n)
        render_add(b, " and %zu more", merge_count(j, sel + i, n - i));
}

/* Processes of one status grouped by their short phrase: sel (indexes into procs) sorted by why, then by
 * their place, so that each group is a run and lists its processes in order. */
static const struct merge_job *g_sort_job; /* the job merge_cmp_why compares in (qsort has no context) */

static int merge_cmp_why(const void *a, const void *b)
{
    size_t x = *(const size_t *)a, y = *(const size_t *)b;
    int c = strcmp(g_sort_job->procs[x].why, g_sort_job->procs[y].why);
    return c ? c : (x > y) - (x < y);
}

int merge_cmp_size(const void *a, const void *b)
{
    size_t x = *(const size_t *)a, y = *(const size_t *)b;
    return (x > y) - (x < y);
}

/* The groups of status st: fills sel with their members (group after group) and starts with where each group
 * begins in sel (in the order of their first member), and returns the number of groups. */
static size_t merge_groups(const struct merge_job *j, int st, size_t *sel, size_t *starts, size_t *firsts)
{
    size_t n = 0, ng = 0;
    for (size_t i = 0; i < j->nprocs; i++)
        if (j->procs[i].status == st && !j->procs[i].first)
            sel[n++] = i;
    g_sort_job = j;
    qsort(sel, n, sizeof *sel, merge_cmp_why);
    for (size_t i = 0; i < n; i++)
        if (i == 0 || strcmp(j->procs[sel[i]].why, j->procs[sel[i - 1]].why) != 0)
            firsts[ng++] = sel[i] * (j->nprocs + 1) + i; /* its first member's place, then where it starts */
    qsort(firsts, ng, sizeof *firsts, merge_cmp_size);
    for (size_t g = 0; g < ng; g++)
        starts[g] = firsts[g] % (j->nprocs + 1);
    starts[ng] = n;
    return ng;
}

/* The end in sel of the group that starts at starts[g]. */
static size_t merge_group_end(const struct merge_job *j, const size_t *sel, size_t n, size_t start)
{
    size_t e = start + 1;
    while (e < n && strcmp(j->procs[sel[e]].why, j->procs[sel[start]].why) == 0)
        e++;
    return e;
}

/* The working arrays of one verdict line (each of the job's size) and how many parts the line has so far. */
struct merge_line {
    struct render_buf b; /* the line being written */
    size_t *sel;         /* the processes of the part at hand */
    size_t *starts;      /* where each group starts in sel (merge_groups) */
    size_t *firsts;      /* merge_groups' scratch */
    size_t *other;       /* the collateral past MERGE_VERDICT_GROUPS */
    size_t nparts;       /* parts written after the job's head */
};

/* "job of N ranks (launcher) and M processes without a rank on H hosts: " */
static void merge_verdict_head(const struct merge_job *j, struct render_buf *b)
{
    size_t unranked = 0, distinct = 0;
    for (size_t i = 0; i < j->nprocs; i++) {
        if (j->procs[i].rank < 0)
            unranked++;
        else if (i == 0 || j->procs[i - 1].rank != j->procs[i].rank)
            distinct++;
    }
    if (j->ranked) {
        long long nr = j->world_size > 0 ? j->world_size : (long long)distinct;
        render_add(b, "job of %lld rank%s", nr, nr == 1 ? "" : "s");
        if (j->launcher)
            render_add(b, " (%s)", j->launcher);
        if (unranked)
            render_add(b, " and %zu process%s without a rank", unranked, unranked == 1 ? "" : "es");
    } else {
        render_add(b, "job of %zu processes", j->nprocs);
    }
    if (j->nhosts > 1)
        render_add(b, " on %zu hosts", j->nhosts);
    render_add(b, ": ");
}

/* The first fault, the others that faulted, and what decided the order. */
static void merge_verdict_faults(struct merge_job *j, struct merge_line *ml)
{
    struct render_buf *b = &ml->b;
    size_t *sel = ml->sel, *starts = ml->starts, n, ng;
    const struct merge_proc *f = &j->procs[j->first];
    char l[64], launch[700];
    merge_label(j, f, l, sizeof l);
    merge_fault_launch(f->fault->doc, launch, sizeof launch);
    render_add(b, "%s", l);
    if (j->nhosts > 1 && f->host[0])
        render_add(b, " (on %s)", f->host);
    render_add(b, " faulted first: %s", launch);
    ml->nparts++;
    /* the others that faulted, in their own kernels ("also faulted"), then inside each collective */
    ng = merge_groups(j, MERGE_FAULTED, sel, starts, ml->firsts);
    for (size_t g = 0; g < ng; g++) {
        size_t s = starts[g], e = merge_group_end(j, sel, starts[ng], s);
        const struct merge_proc *p = &j->procs[sel[s]];
        render_add(b, "; ");
        merge_list(b, j, sel + s, e - s);
        if (p->in_collective && p->collective[0])
            render_add(b, " also faulted, inside %s", p->collective);
        else if (p->in_collective)
            render_add(b, " also faulted, inside a collective");
        else
            render_add(b, " also faulted");
    }
    if (j->order == MERGE_ORDER_KERNEL) {
        /* say so only where the clocks would have said otherwise */
        int earlier = 0;
        for (size_t i = 0; i < j->nprocs && !earlier; i++)
            earlier = j->procs[i].status == MERGE_FAULTED && !j->procs[i].first &&
                      (!j->procs[i].fault_ns || !f->fault_ns || j->procs[i].fault_ns < f->fault_ns);
        if (earlier)
            render_add(b,
                       "; %s comes first by what faulted, not by the clocks: a collective fails after "
                       "another rank's fault",
                       l);
    } else if (j->order == MERGE_ORDER_CLOCKS) {
        n = 0;
        for (size_t i = 0; i < j->nprocs; i++)
            if (j->procs[i].status == MERGE_FAULTED && j->procs[i].in_collective == f->in_collective)
                sel[n++] = i;
        render_add(b, "; which of ");
        merge_list(b, j, sel, n);
        render_add(b, " faulted first rests on the clocks of %zu hosts", j->order_hosts);
    }
}

/* No fault: a rank the device found running a kernel of its own is what the others wait for. Returns how many. */
static size_t merge_verdict_stuck(struct merge_job *j, struct merge_line *ml)
{
    struct render_buf *b = &ml->b;
    size_t stuck = 0;
    for (size_t i = 0; i < j->nprocs; i++) {
        const struct merge_proc *p = &j->procs[i];
        char l[64], launch[700];
        if (p->status != MERGE_COLLATERAL || !p->device_stuck || !p->hang)
            continue;
        merge_label(j, p, l, sizeof l);
        merge_launch_phrase(json_get(p->hang->doc, RK_CULPRIT), launch, sizeof launch);
        render_add(b, "%s%s runs %s (%s %s so): look there first",
                   ml->nparts  ? "; "
                   : j->ranked ? "no rank faulted; "
                               : "no process faulted; ",
                   l, launch, p->stuck_by, strcmp(p->stuck_by, "the device") == 0 ? "says" : "say");
        ml->nparts++;
        stuck++;
    }
    return stuck;
}

/* Collateral, grouped by what happened to them; past MERGE_VERDICT_GROUPS the rest go together. Says whether some
 * wait inside a collective (*in_coll) and some outside one (*out_coll). */
static void merge_verdict_collateral(struct merge_job *j, struct merge_line *ml, int any_fault, int *in_coll,
                                     int *out_coll)
{
    struct render_buf *b = &ml->b;
    size_t *sel = ml->sel, *starts = ml->starts, *other = ml->other, n, ng, nall;
    ng = merge_groups(j, MERGE_COLLATERAL, sel, starts, ml->firsts);
    nall = starts[ng];
    n = 0;
    for (size_t g = 0; g < ng; g++) {
        size_t s = starts[g], e = merge_group_end(j, sel, nall, s);
        const struct merge_proc *p = &j->procs[sel[s]];
        for (size_t m = s; m < e; m++) {
            if (j->procs[sel[m]].collective[0])
                *in_coll = 1;
            else
                *out_coll = 1;
        }
        if (g >= MERGE_VERDICT_GROUPS) {
            for (size_t m = s; m < e; m++)
                other[n++] = sel[m];
            continue;
        }
        render_add(b, "%s",
                   !any_fault && ml->nparts == 0 ? (j->ranked ? "no rank faulted; " : "no process faulted; ") : "; ");
        ml->nparts++;
        merge_list(b, j, sel + s, e - s);
        if (any_fault)
            render_add(b, " %s collateral (%s)", e - s == 1 ? "is" : "are", p->why);
        else
            render_add(b, " hung (%s)", p->why);
    }
    if (n) {
        qsort(other, n, sizeof *other, merge_cmp_size);
        render_add(b, "; ");
        merge_list(b, j, other, n);
        render_add(b, " %s %s (for other reasons, below)", n == 1 ? "is" : "are", any_fault ? "collateral" : "hung");
    }
}

/* The ranks that never reached the collective, those that saw no fault, and those without a report. */
static void merge_verdict_rest(struct merge_job *j, struct merge_line *ml, int waiting_for_others)
{
    struct render_buf *b = &ml->b;
    size_t *sel = ml->sel, n;
    if (waiting_for_others) {
        /* the others wait in a collective for the ranks that never reached it */
        n = 0;
        for (size_t i = 0; i < j->nprocs; i++)
            if (j->procs[i].status == MERGE_COLLATERAL && !j->procs[i].collective[0])
                sel[n++] = i;
        render_add(b, "; ");
        merge_list(b, j, sel, n);
        render_add(b, " did not reach the collective the others wait in: look there first");
    }
    n = 0;
    for (size_t i = 0; i < j->nprocs; i++)
        if (j->procs[i].status == MERGE_CLEAN)
            sel[n++] = i;
    if (n) {
        render_add(b, "%s", ml->nparts ? "; " : j->ranked ? "no rank faulted; " : "no process faulted; ");
        ml->nparts++;
        merge_list(b, j, sel, n);
        render_add(b, " saw no fault");
    }
    n = 0;
    for (size_t i = 0; i < j->nprocs; i++)
        if (j->procs[i].status == MERGE_MISSING)
            sel[n++] = i;
    if (n) {
        render_add(b, "%s", ml->nparts ? "; " : "");
        merge_list(b, j, sel, n);
        render_add(b, " %s missing (no report)", merge_count(j, sel, n) == 1 ? "is" : "are");
    }
}

void merge_verdict_line(struct merge_job *j)
{
    struct merge_line ml = {0};
    size_t cap = j->nprocs ? j->nprocs : 1, stuck = 0;
    int any_fault = j->first >= 0, in_coll = 0, out_coll = 0;
    ml.sel = calloc(cap, sizeof *ml.sel);
    ml.starts = calloc(cap + 1, sizeof *ml.starts);
    ml.firsts = calloc(cap, sizeof *ml.firsts);
    ml.other = calloc(cap, sizeof *ml.other);
    if (ml.sel && ml.starts && ml.firsts && ml.other) {
        merge_verdict_head(j, &ml.b);
        if (any_fault)
            merge_verdict_faults(j, &ml);
        else
            stuck = merge_verdict_stuck(j, &ml);
        merge_verdict_collateral(j, &ml, any_fault, &in_coll, &out_coll);
        merge_verdict_rest(j, &ml, !any_fault && in_coll && out_coll && !stuck);
        if (ml.b.p && !ml.b.oom)
            snprintf(j->verdict, sizeof j->verdict, "%s", ml.b.p);
    }
    free(ml.b.p);
    free(ml.sel);
    free(ml.starts);
    free(ml.firsts);
    free(ml.other);
}
