/* A report as a timeline: the launches a report holds (the culprit, candidates, the launches before it, graph
 * nodes, launches queued behind a hang) as Chrome trace events (the JSON that Perfetto and chrome://tracing
 * open), one track per GPU stream and one per host thread, the culprit and candidates marked, each event with its
 * kernel, grid, launch number, Python line and native frame; the moment the error surfaced (or the hang was
 * seen) on the thread that met it. A launch's run time is not known, only when the host launched it, so launches
 * are instant events. */
#define _GNU_SOURCE
#include "trace.h"

#include "../render/json.h"
#include "../base/jsonw.h"
#include "../render/format_keys.h"
#include "../render/report_keys.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TRACE_MAX_LAUNCHES 1024 /* launches a report can hold, all roles together */
#define TRACE_MAX_STREAMS 128   /* stream tracks */
#define TRACE_PID_STREAMS 1     /* the trace's "process" holding the stream tracks */
#define TRACE_PID_THREADS 2     /* ... and the host thread tracks */

struct trace_item {
    const struct json *launch; /* the launch in the report */
    const char *role;          /* culprit, candidate, ruled out, before, graph node, queued */
};

struct trace_set {
    struct trace_item items[TRACE_MAX_LAUNCHES]; /* every launch once, the first role it was found in */
    size_t n;                                    /* items in use */
    const char *streams[TRACE_MAX_STREAMS];      /* "device:stream" keys of the stream tracks, tid = index + 1 */
    char stream_keys[TRACE_MAX_STREAMS][64];     /* storage of those keys */
    size_t nstreams;                             /* tracks in use */
};

static void trace_add(struct trace_set *s, const struct json *l, const char *role)
{
    long long seq = json_get_int(l, RK_SEQ, -1);
    if (!json_is(l, JSON_OBJ) || s->n == TRACE_MAX_LAUNCHES)
        return;
    for (size_t i = 0; i < s->n; i++)
        if (json_get_int(s->items[i].launch, RK_SEQ, -2) == seq)
            return;
    s->items[s->n].launch = l;
    s->items[s->n++].role = role;
    if (json_is(json_get(l, RK_GRAPH_NODES), JSON_ARR))
        for (size_t i = 0; i < json_len(json_get(l, RK_GRAPH_NODES)); i++)
            trace_add(s, json_at(json_get(l, RK_GRAPH_NODES), i), "graph node");
}

static void trace_add_all(struct trace_set *s, const struct json *arr, const char *role)
{
    for (size_t i = 0; i < json_len(arr); i++)
        trace_add(s, json_at(arr, i), role);
}

/* The track of a launch's stream (tid), made on first sight. */
static int trace_stream_tid(struct trace_set *s, const struct json *l)
{
    char key[64];
    snprintf(key, sizeof key, "%lld:%s", json_get_int(l, RK_DEVICE, -1),
             json_get_str(l, RK_STREAM) ? json_get_str(l, RK_STREAM) : "?");
    for (size_t i = 0; i < s->nstreams; i++)
        if (strcmp(s->streams[i], key) == 0)
            return (int)i + 1;
    if (s->nstreams == TRACE_MAX_STREAMS)
        return TRACE_MAX_STREAMS;
    memcpy(s->stream_keys[s->nstreams], key, sizeof key);
    s->streams[s->nstreams] = s->stream_keys[s->nstreams];
    return (int)++s->nstreams;
}

/* "file:line in function" of the innermost Python frame outside installed packages, else the innermost. */
static void trace_python_line(const struct json *py, char *out, size_t n)
{
    const struct json *pick = NULL;
    out[0] = '\0';
    for (size_t i = 0; i < json_len(py) && !pick; i++) {
        const char *f = json_get_str(json_at(py, i), RK_FILE);
        if (f && !strstr(f, "site-packages/") && !strstr(f, "dist-packages/") && !strstr(f, "/lib/python") &&
            !strstr(f, "/culprit/diagnose.py"))
            pick = json_at(py, i);
    }
    if (!pick && json_len(py))
        pick = json_at(py, 0);
    if (pick)
        snprintf(out, n, "%s:%lld in %s", json_get_str(pick, RK_FILE) ? json_get_str(pick, RK_FILE) : "?",
                 json_get_int(pick, RK_LINE, 0),
                 json_get_str(pick, RK_FUNCTION) ? json_get_str(pick, RK_FUNCTION) : "?");
}

/* The first native frame with a source line, else with a function name. */
static void trace_native_frame(const struct json *stack, char *out, size_t n)
{
    const struct json *pick = NULL;
    out[0] = '\0';
    for (size_t i = 0; i < json_len(stack) && !pick; i++)
        if (json_get_str(json_at(stack, i), RK_FILE))
            pick = json_at(stack, i);
    for (size_t i = 0; i < json_len(stack) && !pick; i++)
        if (json_get_str(json_at(stack, i), RK_FUNCTION))
            pick = json_at(stack, i);
    if (!pick)
        return;
    if (json_get_str(pick, RK_FILE))
        snprintf(out, n, "%s at %s:%lld", json_get_str(pick, RK_FUNCTION) ? json_get_str(pick, RK_FUNCTION) : "?",
                 json_get_str(pick, RK_FILE), json_get_int(pick, RK_LINE, 0));
    else
        snprintf(out, n, "%s", json_get_str(pick, RK_FUNCTION));
}

/* An event's "python" and "native" args: where obj (a launch, or the thread the error surfaced on) was, as far
 * as the report knows. */
static void trace_where(struct jw *w, const struct json *obj)
{
    char line[1200];
    trace_python_line(json_get(obj, RK_PYTHON), line, sizeof line);
    if (line[0]) {
        jw_key(w, TK_PYTHON);
        jw_str(w, line);
    }
    trace_native_frame(json_get(obj, RK_STACK), line, sizeof line);
    if (line[0]) {
        jw_key(w, TK_NATIVE);
        jw_str(w, line);
    }
}

static void trace_dims(struct jw *w, const char *key, const struct json *arr)
{
    char buf[96];
    long long v[3] = {0, 0, 0};
    for (int i = 0; i < 3; i++)
        if (json_int(json_at(arr, (size_t)i), &v[i]) != 0)
            v[i] = 0;
    snprintf(buf, sizeof buf, "[%lld,%lld,%lld]", v[0], v[1], v[2]);
    jw_key(w, key);
    jw_str(w, buf);
}

/* In doubles: a report's times are whatever its file says, and their difference may not fit a long long. */
static double trace_us(long long ns, long long t0)
{
    return ((double)ns - (double)t0) / 1000.0;
}

/* One instant event of a launch on track (pid, tid). */
static void trace_launch_event(struct jw *w, const struct trace_item *it, int pid, long long tid, long long t0)
{
    const struct json *l = it->launch;
    const char *kernel = json_get_str(l, RK_KERNEL);
    char name[320];
    snprintf(name, sizeof name, "#%lld %.200s%s%s%s", json_get_int(l, RK_SEQ, -1), kernel ? kernel : "?",
             strcmp(it->role, "before") ? " [" : "", strcmp(it->role, "before") ? it->role : "",
             strcmp(it->role, "before") ? "]" : "");
    jw_obj_begin(w);
    jw_key(w, TK_NAME);
    jw_str(w, name);
    jw_key(w, TK_CAT);
    jw_str(w, it->role);
    jw_key(w, TK_PH);
    jw_str(w, "i");
    jw_key(w, TK_S);
    jw_str(w, "t");
    jw_key(w, TK_TS);
    jw_double(w, trace_us(json_get_int(l, RK_TIME_NS, t0), t0));
    jw_key(w, TK_PID);
    jw_int(w, pid);
    jw_key(w, TK_TID);
    jw_int(w, tid);
    jw_key(w, TK_ARGS);
    jw_obj_begin(w);
    jw_key(w, TK_SEQ);
    jw_int(w, json_get_int(l, RK_SEQ, -1));
    jw_key(w, TK_ROLE);
    jw_str(w, it->role);
    jw_key(w, TK_KERNEL);
    jw_str(w, kernel ? kernel : "?");
    trace_dims(w, TK_GRID, json_get(l, RK_GRID));
    trace_dims(w, TK_BLOCK, json_get(l, RK_BLOCK));
    jw_key(w, TK_STREAM);
    jw_str(w, json_get_str(l, RK_STREAM) ? json_get_str(l, RK_STREAM) : "?");
    jw_key(w, TK_DEVICE);
    jw_int(w, json_get_int(l, RK_DEVICE, -1));
    jw_key(w, TK_THREAD);
    jw_int(w, json_get_int(l, RK_THREAD, -1));
    trace_where(w, l);
    const struct json *op = json_get(l, RK_OP); /* the framework operator behind it (--diagnose) */
    if (json_get_str(op, RK_NAME)) {
        jw_key(w, TK_OPERATOR);
        jw_str(w, json_get_str(op, RK_NAME));
        if (json_get_str(op, RK_PROBLEM)) {
            jw_key(w, TK_WHAT_WAS_WRONG);
            jw_str(w, json_get_str(op, RK_PROBLEM));
        }
    }
    jw_obj_end(w);
    jw_obj_end(w);
}

static void trace_meta(struct jw *w, const char *what, int pid, long long tid, const char *name)
{
    jw_obj_begin(w);
    jw_key(w, TK_NAME);
    jw_str(w, what);
    jw_key(w, TK_PH);
    jw_str(w, "M");
    jw_key(w, TK_PID);
    jw_int(w, pid);
    if (tid >= 0) {
        jw_key(w, TK_TID);
        jw_int(w, tid);
    }
    jw_key(w, TK_ARGS);
    jw_obj_begin(w);
    jw_key(w, TK_NAME);
    jw_str(w, name);
    jw_obj_end(w);
    jw_obj_end(w);
}

/* The faulting address on the error's mark (the report's "fault_address"): the address, what it touched, and
 * for a GPU core dump's the lane, thread and block that made the access. */
static void trace_fault_address(struct jw *w, const struct json *fa)
{
    const char *addr = json_get_str(fa, RK_ADDRESS), *answer = json_get_str(fa, RK_ANSWER);
    char dims[64];
    if (!addr)
        return;
    jw_key(w, TK_FAULT_ADDRESS);
    jw_str(w, addr);
    if (answer) {
        jw_key(w, TK_FAULT_ADDRESS_ANSWER);
        jw_str(w, answer);
    }
    if (json_get_int(fa, RK_LANE, -1) >= 0) {
        jw_key(w, TK_FAULT_LANE);
        jw_int(w, json_get_int(fa, RK_LANE, -1));
    }
    static const char *const keys[][2] = {{RK_THREAD, TK_FAULT_THREAD}, {RK_BLOCK, TK_FAULT_BLOCK}};
    for (size_t i = 0; i < 2; i++) {
        const struct json *v = json_get(fa, keys[i][0]);
        if (json_len(v) != 3)
            continue;
        long long x[3];
        for (size_t k = 0; k < 3; k++)
            if (json_int(json_at(v, k), &x[k]) != 0)
                x[k] = -1;
        snprintf(dims, sizeof dims, "(%lld,%lld,%lld)", x[0], x[1], x[2]);
        jw_key(w, keys[i][1]);
        jw_str(w, dims);
    }
}

/* Adds thread th to the threads named in the trace, once (at most TRACE_MAX_LAUNCHES + 1 of them). */
static void trace_note_thread(long long *tids, size_t *nt, long long th)
{
    size_t k = 0;
    while (k < *nt && tids[k] != th)
        k++;
    if (k == *nt && *nt <= TRACE_MAX_LAUNCHES)
        tids[(*nt)++] = th;
}

/* The instant the error surfaced (err) or the hang report was written (hang), on the thread it happened in, with
 * its Python line, native frame and, for an error, the faulting address. Returns that thread. */
static long long trace_surfaced(struct jw *w, const struct json *doc, const struct json *err, const struct json *hang,
                                long long tsurf, long long t0)
{
    const struct json *who = err ? err : hang;
    long long th = json_get_int(who, RK_THREAD, json_get_int(json_get(doc, RK_PROCESS), RK_PID, 0));
    char name[256];
    if (err)
        snprintf(name, sizeof name, "%s surfaced in %s",
                 json_get_str(err, RK_NAME) ? json_get_str(err, RK_NAME) : "CUDA error",
                 json_get_str(err, RK_API) ? json_get_str(err, RK_API) : "?");
    else
        snprintf(name, sizeof name, "hang report (%s)",
                 json_get_str(hang, RK_TRIGGER) ? json_get_str(hang, RK_TRIGGER) : "?");
    jw_obj_begin(w);
    jw_key(w, TK_NAME);
    jw_str(w, name);
    jw_key(w, TK_CAT);
    jw_str(w, err ? "error" : "hang");
    jw_key(w, TK_PH);
    jw_str(w, "i");
    jw_key(w, TK_S);
    jw_str(w, "p");
    jw_key(w, TK_TS);
    jw_double(w, trace_us(tsurf, t0));
    jw_key(w, TK_PID);
    jw_int(w, TRACE_PID_THREADS);
    jw_key(w, TK_TID);
    jw_int(w, th);
    jw_key(w, TK_ARGS);
    jw_obj_begin(w);
    trace_where(w, who);
    if (err)
        trace_fault_address(w, json_get(doc, RK_FAULT_ADDRESS));
    jw_obj_end(w);
    jw_obj_end(w);
    return th;
}

int trace_write(const struct json *doc, struct jw *w, size_t *nlaunches)
{
    static struct trace_set s; /* large; the command writes one trace at a time */
    const struct json *err = json_get(doc, RK_ERROR), *hang = json_get(doc, RK_HANG);
    const char *kind = json_get_str(doc, RK_KIND);
    long long t0 = -1, tids[TRACE_MAX_LAUNCHES + 1];
    size_t nt = 0;

    if (!json_is(doc, JSON_OBJ) || !json_get_str(doc, RK_SCHEMA))
        return -1;
    memset(&s, 0, sizeof s);
    trace_add(&s, json_get(doc, RK_CULPRIT), kind && !strcmp(kind, "hang") ? "in flight" : "culprit");
    trace_add_all(&s, rk_candidates(doc), "candidate");
    trace_add_all(&s, json_get(doc, RK_QUEUED), "queued");
    trace_add_all(&s, json_get(doc, RK_HISTORY), "before");
    trace_add_all(&s, json_get(doc, RK_CANDIDATES_BEFORE_ASSERT), "ruled out");
    trace_add_all(&s, json_get(doc, RK_CANDIDATES_BEFORE_RERUN), "ruled out");
    trace_add_all(&s, json_get(doc, RK_CANDIDATES_BEFORE_COREDUMP), "ruled out");
    trace_add_all(&s, json_get(doc, RK_CANDIDATES_BEFORE_FAULT_PAGE), "ruled out");
    for (size_t i = 0; i < s.n; i++) {
        long long t = json_get_int(s.items[i].launch, RK_TIME_NS, -1);
        if (t >= 0 && (t0 < 0 || t < t0))
            t0 = t;
    }
    long long tsurf = json_get_int(err ? err : hang, RK_TIME_NS, -1);
    if (tsurf >= 0 && (t0 < 0 || tsurf < t0))
        t0 = tsurf;
    if (t0 < 0)
        t0 = 0;

    jw_obj_begin(w);
    jw_key(w, TK_TRACE_EVENTS);
    jw_arr_begin(w);
    trace_meta(w, "process_name", TRACE_PID_STREAMS, -1, "GPU streams");
    trace_meta(w, "process_name", TRACE_PID_THREADS, -1, "host threads (launches, where the error surfaced)");
    for (size_t i = 0; i < s.n; i++) {
        const struct json *l = s.items[i].launch;
        long long th = json_get_int(l, RK_THREAD, -1);
        int tid = trace_stream_tid(&s, l);
        trace_launch_event(w, &s.items[i], TRACE_PID_STREAMS, tid, t0);
        trace_launch_event(w, &s.items[i], TRACE_PID_THREADS, th, t0);
        trace_note_thread(tids, &nt, th);
    }
    for (size_t i = 0; i < s.nstreams; i++) {
        char name[96];
        const char *colon = strchr(s.streams[i], ':');
        snprintf(name, sizeof name, "stream %s, device %.*s", colon ? colon + 1 : s.streams[i],
                 colon ? (int)(colon - s.streams[i]) : 1, colon ? s.streams[i] : "?");
        trace_meta(w, "thread_name", TRACE_PID_STREAMS, (long long)i + 1, name);
    }
    if (tsurf >= 0)
        trace_note_thread(tids, &nt, trace_surfaced(w, doc, err, hang, tsurf, t0));
    for (size_t i = 0; i < nt; i++) {
        char name[64];
        snprintf(name, sizeof name, "thread %lld", tids[i]);
        trace_meta(w, "thread_name", TRACE_PID_THREADS, tids[i], name);
    }
    jw_arr_end(w);
    jw_key(w, TK_DISPLAY_TIME_UNIT);
    jw_str(w, "ms");
    jw_key(w, TK_OTHER_DATA);
    jw_obj_begin(w);
    jw_key(w, TK_VERDICT);
    jw_str(w, rk_certainty(doc));
    jw_key(w, TK_REASON);
    jw_str(w, json_get_str(json_get(doc, RK_VERDICT), RK_REASON));
    jw_key(w, TK_LAUNCHES);
    jw_uint(w, s.n);
    jw_obj_end(w);
    jw_obj_end(w);
    if (nlaunches)
        *nlaunches = s.n;
    return w->err ? -1 : 0;
}
