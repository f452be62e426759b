/* A merged job shown: the text (the verdict line, a line per rank, or per group of ranks in a large job, the
 * featured report in full) and the JSON (schema "culprit.job/1"). What the job is, which rank faulted first and
 * what happened to each, is merge.c's. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "merge.h"
#include "../render/json.h"
#include "../base/jsonw.h"
#include "../render/nccl.h"
#include "../render/render.h"
#include "../render/render_int.h"
#include "../render/report_keys.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The report to show in full under the lines: the first fault; else a hang outside the collective the others
 * wait in, else the first hang. */
static const struct merge_proc *merge_featured(const struct merge_job *j)
{
    const struct merge_proc *hang = NULL, *odd = NULL;
    int in_coll = 0;
    if (j->first >= 0)
        return &j->procs[j->first];
    for (size_t i = 0; i < j->nprocs; i++) {
        const struct merge_proc *p = &j->procs[i];
        if (p->status != MERGE_COLLATERAL)
            continue;
        if (!hang)
            hang = p;
        if (p->collective[0])
            in_coll = 1;
        else if (!odd)
            odd = p;
    }
    return in_coll && odd ? odd : hang;
}

static const char *const merge_status_names[] = {"faulted", "collateral", "clean", "missing"};

/* The report a process's line names: its fault, else its hang report, else its exit record. */
static const struct merge_report *merge_shown(const struct merge_proc *p)
{
    return p->fault ? p->fault : p->hang ? p->hang : p->exit;
}

/* One process's line: "rank 2 (vm, pid 14503): faulted first: ...; report culprit-vm-14503.json". */
static void merge_proc_line(struct render_buf *b, const struct merge_job *j, const struct merge_proc *p)
{
    const struct merge_report *r = merge_shown(p);
    char head[200], text[1400];
    size_t used;
    snprintf(head, sizeof head, "  ");
    merge_label(j, p, head + 2, sizeof head - 2);
    used = strlen(head);
    if (p->pid >= 0 && p->rank >= 0 && !merge_rank_shared(j, p))
        snprintf(head + used, sizeof head - used, " (%s%spid %lld): ", p->host, p->host[0] ? ", " : "", p->pid);
    else if (p->host[0] && j->nhosts > 1)
        snprintf(head + used, sizeof head - used, " (%s): ", p->host);
    else
        snprintf(head + used, sizeof head - used, ": ");
    /* a fault and a clean exit say what they are; collateral and missing ranks are named so */
    int named = p->status == MERGE_COLLATERAL || p->status == MERGE_MISSING;
    snprintf(text, sizeof text, "%s%s%s%s%s", named ? merge_status_names[p->status] : "", named ? ": " : "", p->what,
             r ? "; report " : "", r ? render_base(r->path) : "");
    render_para(b, head, "      ", text);
}

static const struct merge_job *g_group_job; /* the job merge_cmp_group compares in (qsort has no context) */

/* Processes by status, then short phrase, then place: each group a run of the sorted list. */
static int merge_cmp_group(const void *a, const void *b)
{
    const struct merge_proc *x = &g_group_job->procs[*(const size_t *)a], *y = &g_group_job->procs[*(const size_t *)b];
    int c = x->status - y->status;
    if (!c)
        c = strcmp(x->why, y->why);
    return c ? c : (*(const size_t *)a > *(const size_t *)b) - (*(const size_t *)a < *(const size_t *)b);
}

static int merge_cmp_host(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static int merge_cmp_first(const void *a, const void *b)
{
    size_t x = *(const size_t *)a, y = *(const size_t *)b;
    return (x > y) - (x < y);
}

/* A large job's lines: one per group of processes with the same status and short phrase, in the order of each
 * group's first process ("ranks 0-511, 513-1023 (1023 ranks): collateral: stopped by SIGTERM while waiting in
 * NCCL AllReduce (...); reports such as culprit-vm-100-hang.json"); a group of one is a process's own line. */
static void merge_group_lines(struct render_buf *b, const struct merge_job *j)
{
    size_t n = j->nprocs, ng = 0;
    size_t *sel = malloc((n ? n : 1) * sizeof *sel), *heads = malloc((n ? n : 1) * sizeof *heads);
    if (!sel || !heads) {
        b->oom = 1;
        goto out;
    }
    for (size_t i = 0; i < n; i++)
        sel[i] = i;
    g_group_job = j;
    qsort(sel, n, sizeof *sel, merge_cmp_group);
    /* each group's first process (its smallest index, as sel is sorted by place within a group) and where
     * the group starts in sel, packed to sort the groups by their first process */
    for (size_t i = 0; i < n; i++)
        if (i == 0 || j->procs[sel[i]].status != j->procs[sel[i - 1]].status ||
            strcmp(j->procs[sel[i]].why, j->procs[sel[i - 1]].why) != 0)
            heads[ng++] = sel[i] * (n + 1) + i;
    qsort(heads, ng, sizeof *heads, merge_cmp_first);
    for (size_t g = 0; g < ng; g++) {
        size_t s = heads[g] % (n + 1), e = s + 1, hosts = 0;
        const struct merge_proc *p = &j->procs[sel[s]];
        const struct merge_report *r;
        struct render_buf head = {0};
        int same_what = 1, named = p->status == MERGE_COLLATERAL || p->status == MERGE_MISSING;
        char text[1400];
        while (e < n && j->procs[sel[e]].status == p->status && strcmp(j->procs[sel[e]].why, p->why) == 0)
            e++;
        if (e - s == 1 || p->first) {
            for (size_t m = s; m < e; m++)
                merge_proc_line(b, j, &j->procs[sel[m]]);
            continue;
        }
        for (size_t m = s + 1; m < e && same_what; m++)
            same_what = strcmp(j->procs[sel[m]].what, p->what) == 0;
        if (j->nhosts > 1) {
            const char **hs = malloc((e - s) * sizeof *hs);
            size_t nh = 0;
            for (size_t m = s; hs && m < e; m++)
                if (j->procs[sel[m]].host[0])
                    hs[nh++] = j->procs[sel[m]].host;
            if (hs)
                qsort(hs, nh, sizeof *hs, merge_cmp_host);
            for (size_t m = 0; hs && m < nh; m++)
                hosts += m == 0 || strcmp(hs[m], hs[m - 1]) != 0;
            free(hs);
        }
        merge_list(&head, j, sel + s, e - s);
        render_add(&head, " (%zu %s", merge_count(j, sel + s, e - s), j->ranked ? "ranks" : "processes");
        if (hosts > 1)
            render_add(&head, " on %zu hosts", hosts);
        render_add(&head, "): ");
        r = merge_shown(p);
        snprintf(text, sizeof text, "%s%s%s%s%s", named ? merge_status_names[p->status] : "", named ? ": " : "",
                 same_what ? p->what : p->why, r ? "; reports such as " : "", r ? render_base(r->path) : "");
        render_add(&head, "%s", text);
        if (head.oom)
            b->oom = 1;
        else
            render_para(b, "  ", "      ", head.p); /* the list of ranks is wrapped too */
        free(head.p);
    }
out:
    free(sel);
    free(heads);
}

char *merge_render(const struct merge_job *j, const struct merge_report *reps, const struct render_opts *o)
{
    struct render_buf b = {0};
    const struct merge_proc *feat = merge_featured(j);
    (void)reps;
    /* the verdict's own lines are indented deeper than the rank lines that follow */
    render_para(&b, "", "    ", j->verdict); /* wrapped within RENDER_WIDTH */
    if (j->nprocs > MERGE_LINES_MAX)
        merge_group_lines(&b, j);
    else
        for (size_t i = 0; i < j->nprocs; i++)
            merge_proc_line(&b, j, &j->procs[i]);
    if (feat && !(o && o->brief)) {
        const struct merge_report *r = feat->fault ? feat->fault : feat->hang;
        struct render_opts ro = {.brief = 0, .path = r->path, .no_debugger = o ? o->no_debugger : 0};
        char l[64];
        char *text = render_doc(r->doc, &ro);
        merge_label(j, feat, l, sizeof l);
        render_add(&b, "culprit:\n");
        if (feat->fault)
            render_add(&b, "culprit: %s, the first to fault:\n", l);
        else
            render_add(&b, "culprit: %s's hang report:\n", l);
        if (text)
            render_raw(&b, text);
        else
            b.oom = 1;
        free(text);
    }
    if (b.oom) {
        free(b.p);
        return NULL;
    }
    return b.p;
}

/* The first fault's launch, for tools: kernel, NCCL collective, launch number and site. */
static void merge_json_launch(struct jw *w, const struct json *launch)
{
    char *owned = NULL, site[300];
    const char *name = render_launch_name(launch, &owned);
    struct nccl_kernel k;
    jw_key(w, RK_KERNEL);
    jw_str(w, name);
    if (json_get(launch, RK_SEQ)) {
        jw_key(w, RK_SEQ);
        jw_int(w, json_get_int(launch, RK_SEQ, 0));
    }
    render_launch_site(launch, site, sizeof site);
    if (site[0]) {
        jw_key(w, RK_LAUNCHED_AT);
        jw_str(w, site);
    }
    if (nccl_decode(name, &k) == 0) {
        const char *keys[] = {RK_COLLECTIVE, RK_OP, RK_DTYPE, RK_ALGORITHM, RK_PROTOCOL};
        const char *vals[] = {k.collective, k.op, k.dtype, k.algorithm, k.protocol};
        jw_key(w, RK_NCCL);
        jw_obj_begin(w);
        for (int i = 0; i < 5; i++) {
            if (!vals[i][0])
                continue;
            jw_key(w, keys[i]);
            jw_str(w, vals[i]);
        }
        jw_obj_end(w);
    }
    free(owned);
}

static const char *const merge_order_names[] = {"none", "only", "kernel", "clock", "clocks"};

/* Processes by host name, then place. */
static int merge_cmp_by_host(const void *a, const void *b)
{
    size_t x = *(const size_t *)a, y = *(const size_t *)b;
    int c = strcmp(g_group_job->procs[x].host, g_group_job->procs[y].host);
    return c ? c : (x > y) - (x < y);
}

/* The job's host names, each once, in the order of their first process. */
static void merge_json_hosts(const struct merge_job *j, struct jw *w)
{
    size_t n = 0, m = 0, *idx = malloc((j->nprocs ? j->nprocs : 1) * sizeof *idx);
    if (!idx) {
        w->err = 1;
        return;
    }
    for (size_t i = 0; i < j->nprocs; i++)
        if (j->procs[i].host[0])
            idx[n++] = i;
    g_group_job = j;
    qsort(idx, n, sizeof *idx, merge_cmp_by_host);
    for (size_t i = 0; i < n; i++)
        if (i == 0 || strcmp(j->procs[idx[i]].host, j->procs[idx[i - 1]].host) != 0)
            idx[m++] = idx[i]; /* the first process of each name */
    qsort(idx, m, sizeof *idx, merge_cmp_first);
    for (size_t i = 0; i < m; i++)
        jw_str(w, j->procs[idx[i]].host);
    free(idx);
}

/* "first_fault"'s value: the first fault's process, error, order and launch, or null without a fault. */
static void merge_json_first_fault(const struct merge_job *j, struct jw *w)
{
    if (j->first >= 0) {
        const struct merge_proc *f = &j->procs[j->first];
        const struct json *doc = f->fault->doc, *err = json_get(doc, RK_ERROR);
        const struct json *culprit = json_get(doc, RK_CULPRIT);
        jw_obj_begin(w);
        if (f->rank >= 0) {
            jw_key(w, RK_RANK);
            jw_int(w, f->rank);
        }
        jw_key(w, RK_HOST);
        jw_str(w, f->host);
        jw_key(w, RK_PID);
        jw_int(w, f->pid);
        jw_key(w, RK_REPORT);
        jw_str(w, f->fault->path);
        jw_key(w, RK_ERROR);
        jw_str(w, json_get_str(err, RK_NAME));
        if (json_get(err, RK_CODE)) {
            jw_key(w, RK_CODE);
            jw_int(w, json_get_int(err, RK_CODE, 0));
        }
        if (f->fault_ns) {
            jw_key(w, RK_TIME_UNIX_NS);
            jw_uint(w, f->fault_ns);
        }
        jw_key(w, RK_ORDER);
        jw_str(w, merge_order_names[j->order]);
        if (j->order == MERGE_ORDER_CLOCKS) {
            jw_key(w, RK_CLOCK_HOSTS);
            jw_uint(w, j->order_hosts);
        }
        jw_key(w, RK_CERTAINTY);
        jw_str(w, rk_certainty(doc));
        const struct json *win = json_get(json_get(doc, RK_VERDICT), RK_WINDOW);
        if (json_is(win, JSON_OBJ)) {
            jw_key(w, RK_WINDOW);
            jw_obj_begin(w);
            jw_key(w, RK_FIRST);
            jw_int(w, json_get_int(win, RK_FIRST, 0));
            jw_key(w, RK_LAST);
            jw_int(w, json_get_int(win, RK_LAST, 0));
            jw_obj_end(w);
        }
        if (json_is(culprit, JSON_OBJ))
            merge_json_launch(w, culprit);
        jw_obj_end(w);
    } else {
        jw_null(w);
    }
}

/* One process of "processes": its rank, where it ran, its status and its reports. */
static void merge_json_process(const struct merge_job *j, const struct merge_report *reps, const struct merge_proc *p,
                               struct jw *w)
{
    jw_obj_begin(w);
    if (p->rank >= 0) {
        jw_key(w, RK_RANK);
        jw_int(w, p->rank);
    }
    if (p->status == MERGE_MISSING && p->rank_last > p->rank) {
        jw_key(w, RK_LAST_RANK); /* a run of missing ranks: rank .. last_rank */
        jw_int(w, p->rank_last);
    }
    if (p->local_rank >= 0) {
        jw_key(w, RK_LOCAL_RANK);
        jw_int(w, p->local_rank);
    }
    if (p->pid >= 0) {
        jw_key(w, RK_HOST);
        jw_str(w, p->host);
        jw_key(w, RK_PID);
        jw_int(w, p->pid);
    }
    jw_key(w, RK_STATUS);
    jw_str(w, merge_status_names[p->status]);
    if (p->status == MERGE_FAULTED) {
        jw_key(w, RK_FIRST);
        jw_bool(w, p->first);
        if (p->fault_ns) {
            jw_key(w, RK_TIME_UNIX_NS);
            jw_uint(w, p->fault_ns);
        }
    }
    if (p->hang) {
        jw_key(w, RK_TRIGGER);
        jw_str(w, json_get_str(json_get(p->hang->doc, RK_HANG), RK_TRIGGER));
        if (p->device_stuck) { /* the device runs a kernel of its own there: the rank to look at */
            jw_key(w, RK_STUCK_IN_KERNEL);
            jw_bool(w, 1);
        }
    }
    if (p->collective[0]) {
        jw_key(w, RK_COLLECTIVE);
        jw_str(w, p->collective);
    }
    jw_key(w, RK_WHAT);
    jw_str(w, p->what);
    jw_key(w, RK_REPORTS);
    jw_arr_begin(w);
    for (size_t k = 0; k < p->rep_count; k++)
        jw_str(w, reps[j->proc_reports[p->rep_first + k]].path);
    jw_arr_end(w);
    jw_obj_end(w);
}

void merge_write_json(const struct merge_job *j, const struct merge_report *reps, struct jw *w)
{
    jw_obj_begin(w);
    jw_key(w, RK_SCHEMA);
    jw_str(w, "culprit.job/1");
    jw_key(w, RK_VERDICT);
    jw_str(w, j->verdict);
    if (j->launcher) {
        jw_key(w, RK_LAUNCHER);
        jw_str(w, j->launcher);
    }
    if (j->world_size > 0) {
        jw_key(w, RK_WORLD_SIZE);
        jw_int(w, j->world_size);
    }
    jw_key(w, RK_HOSTS);
    jw_arr_begin(w);
    merge_json_hosts(j, w);
    jw_arr_end(w);
    jw_key(w, RK_FIRST_FAULT);
    merge_json_first_fault(j, w);
    jw_key(w, RK_PROCESSES);
    jw_arr_begin(w);
    for (size_t i = 0; i < j->nprocs; i++) {
        merge_json_process(j, reps, &j->procs[i], w);
    }
    jw_arr_end(w);
    jw_obj_end(w);
}
