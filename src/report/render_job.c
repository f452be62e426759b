/* A merged job shown: the text (the verdict line, a line per rank, the featured report in full) and the JSON
 * (schema "culprit.job/1"). What the job is, which rank faulted first and what happened to each, is merge.c's. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "merge.h"
#include "json.h"
#include "jsonw.h"
#include "nccl.h"
#include "render.h"
#include "render_int.h"

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

char *merge_render(const struct merge_job *j, const struct merge_report *reps, const struct render_opts *o)
{
    struct render_buf b = {0};
    const struct merge_proc *feat = merge_featured(j);
    (void)reps;
    /* the verdict's own lines are indented deeper than the rank lines that follow */
    render_para(&b, "", "    ", j->verdict);   /* wrapped within RENDER_WIDTH */
    for (size_t i = 0; i < j->nprocs; i++) {
        const struct merge_proc *p = &j->procs[i];
        const struct merge_report *r = p->fault ? p->fault : p->hang ? p->hang : p->exit;
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
        snprintf(text, sizeof text, "%s%s%s%s%s", named ? merge_status_names[p->status] : "", named ? ": " : "",
                 p->what, r ? "; report " : "", r ? render_base(r->path) : "");
        render_para(&b, head, "      ", text);
    }
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
    jw_key(w, "kernel");
    jw_str(w, name);
    if (json_get(launch, "seq")) {
        jw_key(w, "seq");
        jw_int(w, json_get_int(launch, "seq", 0));
    }
    render_launch_site(launch, site, sizeof site);
    if (site[0]) {
        jw_key(w, "launched_at");
        jw_str(w, site);
    }
    if (nccl_decode(name, &k) == 0) {
        const char *keys[] = {"collective", "op", "dtype", "algorithm", "protocol"};
        const char *vals[] = {k.collective, k.op, k.dtype, k.algorithm, k.protocol};
        jw_key(w, "nccl");
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

void merge_write_json(const struct merge_job *j, const struct merge_report *reps, struct jw *w)
{
    jw_obj_begin(w);
    jw_key(w, "schema");
    jw_str(w, "culprit.job/1");
    jw_key(w, "verdict");
    jw_str(w, j->verdict);
    if (j->launcher) {
        jw_key(w, "launcher");
        jw_str(w, j->launcher);
    }
    if (j->world_size > 0) {
        jw_key(w, "world_size");
        jw_int(w, j->world_size);
    }
    jw_key(w, "hosts");
    jw_arr_begin(w);
    for (size_t i = 0; i < j->nprocs; i++) {
        int seen = !j->procs[i].host[0];
        for (size_t k = 0; k < i && !seen; k++)
            seen = strcmp(j->procs[k].host, j->procs[i].host) == 0;
        if (!seen)
            jw_str(w, j->procs[i].host);
    }
    jw_arr_end(w);
    jw_key(w, "first_fault");
    if (j->first >= 0) {
        const struct merge_proc *f = &j->procs[j->first];
        const struct json *doc = f->fault->doc, *err = json_get(doc, "error");
        const struct json *culprit = json_get(doc, "culprit");
        jw_obj_begin(w);
        if (f->rank >= 0) {
            jw_key(w, "rank");
            jw_int(w, f->rank);
        }
        jw_key(w, "host");
        jw_str(w, f->host);
        jw_key(w, "pid");
        jw_int(w, f->pid);
        jw_key(w, "report");
        jw_str(w, f->fault->path);
        jw_key(w, "error");
        jw_str(w, json_get_str(err, "name"));
        if (json_get(err, "code")) {
            jw_key(w, "code");
            jw_int(w, json_get_int(err, "code", 0));
        }
        if (f->fault_ns) {
            jw_key(w, "time_unix_ns");
            jw_uint(w, f->fault_ns);
        }
        jw_key(w, "certainty");
        jw_str(w, json_get_str(json_get(doc, "verdict"), "certainty"));
        const struct json *win = json_get(json_get(doc, "verdict"), "window");
        if (json_is(win, JSON_OBJ)) {
            jw_key(w, "window");
            jw_obj_begin(w);
            jw_key(w, "first");
            jw_int(w, json_get_int(win, "first", 0));
            jw_key(w, "last");
            jw_int(w, json_get_int(win, "last", 0));
            jw_obj_end(w);
        }
        if (json_is(culprit, JSON_OBJ))
            merge_json_launch(w, culprit);
        jw_obj_end(w);
    } else {
        jw_null(w);
    }
    jw_key(w, "processes");
    jw_arr_begin(w);
    for (size_t i = 0; i < j->nprocs; i++) {
        const struct merge_proc *p = &j->procs[i];
        jw_obj_begin(w);
        if (p->rank >= 0) {
            jw_key(w, "rank");
            jw_int(w, p->rank);
        }
        if (p->local_rank >= 0) {
            jw_key(w, "local_rank");
            jw_int(w, p->local_rank);
        }
        if (p->pid >= 0) {
            jw_key(w, "host");
            jw_str(w, p->host);
            jw_key(w, "pid");
            jw_int(w, p->pid);
        }
        jw_key(w, "status");
        jw_str(w, merge_status_names[p->status]);
        if (p->status == MERGE_FAULTED) {
            jw_key(w, "first");
            jw_bool(w, p->first);
            if (p->fault_ns) {
                jw_key(w, "time_unix_ns");
                jw_uint(w, p->fault_ns);
            }
        }
        if (p->hang) {
            jw_key(w, "trigger");
            jw_str(w, json_get_str(json_get(p->hang->doc, "hang"), "trigger"));
        }
        if (p->collective[0]) {
            jw_key(w, "collective");
            jw_str(w, p->collective);
        }
        jw_key(w, "what");
        jw_str(w, p->what);
        jw_key(w, "reports");
        jw_arr_begin(w);
        for (size_t k = 0; k < j->nreports && p->pid >= 0; k++) {
            const struct json *proc = json_get(reps[j->reports[k]].doc, "process");
            const char *host = json_get_str(proc, "hostname");
            if (json_get_int(proc, "pid", -2) == p->pid && strcmp(host ? host : "", p->host) == 0)
                jw_str(w, reps[j->reports[k]].path);
        }
        jw_arr_end(w);
        jw_obj_end(w);
    }
    jw_arr_end(w);
    jw_obj_end(w);
}
