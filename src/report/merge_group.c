/* Which reports are of one job (merge_group.h): a union-find over the reports, joined by the facts they share. */
#include "merge_group.h"
#include "../render/json.h"
#include "../render/report_keys.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static size_t merge_root(size_t *parent, size_t i)
{
    while (parent[i] != i) {
        parent[i] = parent[parent[i]];
        i = parent[i];
    }
    return i;
}

static void merge_union(size_t *parent, size_t a, size_t b)
{
    a = merge_root(parent, a);
    b = merge_root(parent, b);
    if (a != b)
        parent[a > b ? a : b] = a < b ? a : b; /* the earlier report is the root: jobs keep their file order */
}

int merge_strcmp0(const char *a, const char *b)
{
    return strcmp(a ? a : "", b ? b : "");
}

/* One report's grouping facts, sorted to find the reports that share them. */
struct merge_key {
    size_t idx;           /* the report */
    const char *job;      /* process.job, or NULL */
    const char *run;      /* process.run_id, or NULL */
    const char *path;     /* its path (the directory counts up to the last '/') */
    size_t dirlen;        /* length of the directory part of path */
    const char *launcher; /* process.launcher, or NULL */
    long long world;      /* process.world_size, -1 */
    int ranked;           /* it has process.rank */
};

static int merge_cmp_job(const void *a, const void *b)
{
    const struct merge_key *x = a, *y = b;
    int c = merge_strcmp0(x->job, y->job);
    return c ? c : (x->idx > y->idx) - (x->idx < y->idx);
}

static int merge_cmp_run(const void *a, const void *b)
{
    const struct merge_key *x = a, *y = b;
    int c = merge_strcmp0(x->run, y->run);
    return c ? c : (x->idx > y->idx) - (x->idx < y->idx);
}

static int merge_cmp_dir(const void *a, const void *b)
{
    const struct merge_key *x = a, *y = b;
    size_t n = x->dirlen < y->dirlen ? x->dirlen : y->dirlen;
    int c = strncmp(x->path, y->path, n);
    if (!c && x->dirlen != y->dirlen)
        c = x->dirlen < y->dirlen ? -1 : 1;
    if (!c)
        c = merge_strcmp0(x->launcher, y->launcher);
    if (!c && x->world != y->world)
        c = x->world < y->world ? -1 : 1;
    return c ? c : (x->idx > y->idx) - (x->idx < y->idx);
}

int merge_group(const struct merge_report *reps, size_t n, size_t *first)
{
    size_t *parent = first; /* a union-find over the reports, the earlier report the root; then each its root */
    struct merge_key *k = calloc(n ? n : 1, sizeof *k);
    if (!k)
        return ENOMEM;
    for (size_t i = 0; i < n; i++) {
        const struct json *proc = json_get(reps[i].doc, RK_PROCESS);
        const char *slash = strrchr(reps[i].path, '/');
        k[i].idx = i;
        k[i].job = json_get_str(proc, RK_JOB);
        k[i].run = json_get_str(proc, RK_RUN_ID);
        k[i].path = reps[i].path;
        k[i].dirlen = slash ? (size_t)(slash - reps[i].path) : 0;
        k[i].launcher = json_get_str(proc, RK_LAUNCHER);
        k[i].world = json_get_int(proc, RK_WORLD_SIZE, -1);
        k[i].ranked = json_get(proc, RK_RANK) != NULL;
        parent[i] = i;
    }
    /* the same job name */
    qsort(k, n, sizeof *k, merge_cmp_job);
    for (size_t i = 1; i < n; i++)
        if (k[i].job && k[i - 1].job && strcmp(k[i].job, k[i - 1].job) == 0)
            merge_union(parent, k[i].idx, k[i - 1].idx);
    /* the same run id, where at least one of the two names no job: a run id's reports all go together as soon
     * as one of them has no job name */
    qsort(k, n, sizeof *k, merge_cmp_run);
    for (size_t i = 0; i < n;) {
        size_t e = i + 1;
        int jobless = !k[i].job;
        while (e < n && k[i].run && k[e].run && strcmp(k[e].run, k[i].run) == 0)
            jobless |= !k[e++].job;
        if (k[i].run && jobless)
            for (size_t m = i + 1; m < e; m++)
                merge_union(parent, k[i].idx, k[m].idx);
        i = e;
    }
    /* ranked reports of versions that wrote neither: by directory, launcher and world size */
    size_t m = 0;
    for (size_t i = 0; i < n; i++)
        if (!k[i].job && !k[i].run && k[i].ranked && k[i].launcher)
            k[m++] = k[i];
    qsort(k, m, sizeof *k, merge_cmp_dir);
    for (size_t i = 1; i < m; i++) {
        const struct merge_key *a = &k[i - 1], *b = &k[i];
        if (a->dirlen == b->dirlen && strncmp(a->path, b->path, a->dirlen) == 0 &&
            strcmp(a->launcher, b->launcher) == 0 && a->world == b->world)
            merge_union(parent, a->idx, b->idx);
    }
    free(k);
    for (size_t i = 0; i < n; i++)
        first[i] = merge_root(parent, i);
    return 0;
}
