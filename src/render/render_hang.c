/* Rendering of hang reports ("kind": "hang"): what stopped the process, the launch in flight with its launch
 * site, what is queued behind it, every stream and every thread where it waits; full and brief. The fault
 * verdict and the pieces both use are render.c's. */
#define _GNU_SOURCE
#include "render.h"
#include "render_int.h"
#include "../base/demangle.h"
#include "json.h"
#include "report_keys.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* "SIGTERM (sent by pid 4711) stopped the process" or "no progress for 5 s (--hang-timeout 5)". */
static void render_hang_head(struct render_buf *b, const struct json *doc)
{
    const struct json *hang = json_get(doc, RK_HANG);
    const char *trig = json_get_str(hang, RK_TRIGGER);
    long long sender = json_get_int(hang, RK_SENDER_PID, -1);
    long long stalled = json_get_int(hang, RK_STALLED_MS, -1);
    double timeout = 0;
    char since[64] = "";

    if (stalled >= 0)
        snprintf(since, sizeof since, "%lld.%01lld s", stalled / 1000, stalled % 1000 / 100);
    if (trig && strcmp(trig, "timeout") == 0) {
        json_num(json_get(hang, RK_TIMEOUT_S), &timeout);
        render_line(b,
                    "hang report: no progress for %s with work unfinished (--hang-timeout %g); the process was "
                    "left running",
                    since[0] ? since : "a while", timeout);
        return;
    }
    {
        char who[48] = "";
        int stops = trig && (strcmp(trig, "SIGTERM") == 0 || strcmp(trig, "SIGINT") == 0 ||
                             strcmp(trig, "SIGQUIT") == 0 || strcmp(trig, "SIGABRT") == 0);
        if (sender > 0)
            snprintf(who, sizeof who, " (sent by pid %lld)", sender);
        /* under a second the watcher's sampling (once a second without a timeout) cannot tell */
        render_line(b, "hang report: %s%s %s%s%s", trig ? trig : "a signal", who,
                    stops ? "stopped the process" : "asked for it, and the process carries on",
                    stalled >= 1000 ? "; no progress for " : "", stalled >= 1000 ? since : "");
    }
}

/* "sleeping" for the state letter of /proc. */
static const char *render_thread_state(const char *s)
{
    if (!s)
        return "state unknown";
    switch (s[0]) {
    case 'R':
        return "running";
    case 'S':
        return "sleeping";
    case 'D':
        return "waiting uninterruptibly";
    case 'T':
        return "stopped";
    case 't':
        return "stopped by a tracer";
    case 'Z':
        return "exited";
    default:
        return s;
    }
}

/* "cuCtxSynchronize (libcuda.so.1)": a library frame by its function and module. */
static const char *render_hang_frame_name(const struct json *f, char *out, size_t outsz)
{
    const char *fn = json_get_str(f, RK_FUNCTION), *mod = render_base(json_get_str(f, RK_MODULE));
    char *dm = fn && strncmp(fn, "_Z", 2) == 0 ? demangle_name(fn) : NULL;
    if (fn)
        snprintf(out, outsz, "%s (%s)", dm ? dm : fn, mod ? mod : "?");
    else
        render_frame(f, out, outsz);
    free(dm);
    return out;
}

static void render_hang_thread(struct render_buf *b, const struct json *t, long long pid)
{
    const struct json *stack = json_get(t, RK_STACK);
    const char *note = json_get_str(t, RK_STACK_NOTE);
    long long tid = json_get_int(t, RK_TID, -1);
    char text[1024], cut[RENDER_WIDTH + 1];

    /* a thread in culprit's handler waits for this very report: where the signal found it is what counts */
    render_line(b, "  thread %lld \"%s\"%s, %s:", tid, json_get_str(t, RK_NAME) ? json_get_str(t, RK_NAME) : "?",
                tid == pid ? " (the main thread)" : "",
                json_get(t, RK_SIGNAL_HANDLER) ? "where the signal found it"
                                               : render_thread_state(json_get_str(t, RK_STATE)));
    size_t i, n = json_len(stack), user = 0;
    for (i = 0; i < n; i++)
        user += !render_is_lib_frame(json_at(stack, i));
    if (n && render_is_lib_frame(json_at(stack, 0))) {
        /* where it waits, even inside libraries (the stack below folds them): the innermost frame, and the
         * entry point of the CUDA driver (or else of the library the program's code called) it is inside */
        size_t u = 0, e = 0;
        char inner[300], entry[300];
        while (u < n && render_is_lib_frame(json_at(stack, u)))
            u++;
        for (i = 0; i < n; i++) {
            const char *mod = render_base(json_get_str(json_at(stack, i), RK_MODULE));
            if (mod && strncmp(mod, "libcuda.so", 10) == 0 && json_get_str(json_at(stack, i), RK_FUNCTION))
                e = i + 1;
        }
        if (!e && u < n) {
            /* culprit's own wrappers of the driver's entry points are no one's place to wait */
            e = u;
            while (e > 1 && render_lib_name(json_at(stack, e - 1)) &&
                   strncmp(render_lib_name(json_at(stack, e - 1)), "libculprit.so", 13) == 0)
                e--;
        }
        render_hang_frame_name(json_at(stack, 0), inner, sizeof inner);
        snprintf(text, sizeof text, "%s", inner);
        if (e > 1 && json_get_str(json_at(stack, e - 1), RK_FUNCTION)) {
            render_hang_frame_name(json_at(stack, e - 1), entry, sizeof entry);
            if (strcmp(entry, inner) != 0)
                snprintf(text, sizeof text, "%s, at %s", entry, inner);
        }
        render_line(b, "    waits in %s", render_elide(text, cut, sizeof cut, RENDER_WIDTH - 22));
    }
    if (render_python(b, json_get(t, RK_PYTHON), "    ")) {
        /* the Python lines say where; the native frames matter when they are the program's own */
        if (user) {
            render_line(b, "    native stack:");
            render_stack_max(b, stack, "      ", 3);
        } else if (n) {
            render_line(b, "    (%zu native frames, all in libraries and the interpreter, in the report)", n);
        }
    } else if (n) {
        render_stack_max(b, stack, "    ", 6);
    }
    if (note)
        render_para(b, "    ", "    ", note);
}

/* The launch in flight, like the culprit of a fault report. */
static void render_hang_launch(struct render_buf *b, const struct json *launch, const char *reason)
{
    char *owned = NULL;
    const char *name = render_kernel(launch, &owned);
    const char *api = json_get_str(launch, RK_API);
    long long seq = json_get_int(launch, RK_SEQ, -1), shmem = json_get_int(launch, RK_SHARED_MEM, -1);
    char geo[160], place[200];

    render_line(b, "the launch in flight: %s", name);
    render_nccl_kernel(b, name, "  ");
    if (seq >= 0)
        render_line(b, "  launch #%lld%s%s", seq, api ? " via " : "", api ? api : "");
    render_geometry(launch, geo, sizeof geo);
    if (geo[0])
        render_line(b, "  %s%s%lld bytes of shared memory", geo, shmem >= 0 ? ", " : "", shmem >= 0 ? shmem : 0);
    render_place(launch, place, sizeof place);
    if (place[0])
        render_line(b, "  on %s", place);
    if (reason)
        render_para(b, "  how culprit knows: ", "    ", reason);
    render_origin(b, launch, "  launched from");
    render_op(b, launch, "  ", 1);
    free(owned);
}

/* A list of launches, runs of the same launch on one line. */
static void render_hang_list(struct render_buf *b, const struct json *list, int where)
{
    char last_place[200] = "";
    size_t i, n = json_len(list);
    for (i = 0; i < n; i++) {
        size_t j = i;
        while (j + 1 < n && render_same_launch(json_at(list, j), json_at(list, j + 1)))
            j++;
        render_launch_item(b, json_at(list, i), "  ", where, NULL, where ? last_place : NULL, sizeof last_place,
                           j > i ? json_get_int(json_at(list, j), RK_SEQ, -1) : -1);
        i = j;
    }
}

static void render_hang_streams(struct render_buf *b, const struct json *streams)
{
    size_t i, n = json_len(streams);
    if (!n)
        return;
    render_add(b, "culprit:\n");
    render_line(b, "streams:");
    for (i = 0; i < n; i++) {
        const struct json *s = json_at(streams, i);
        const struct json *win = json_get(s, RK_IN_FLIGHT_WINDOW);
        const char *kind = render_stream_kind(json_get_str(s, RK_KIND));
        long long done = json_get_int(s, RK_LAST_COMPLETED, -1), fl = json_get_int(s, RK_IN_FLIGHT, -1);
        long long q = json_get_int(s, RK_QUEUED, -1);
        char state[160] = "";
        int pending = json_get(s, RK_QUEUED) != NULL; /* only streams with unfinished work count what waits */
        char behind[48] = "nothing";
        if (q > 0)
            snprintf(behind, sizeof behind, "%lld", q);
        if (fl >= 0)
            snprintf(state, sizeof state, "#%lld in flight, %s queued behind it", fl, behind);
        else if (win)
            snprintf(state, sizeof state, "one of #%lld..#%lld in flight, %s queued behind them",
                     json_get_int(win, RK_FIRST, -1), json_get_int(win, RK_LAST, -1), behind);
        else if (pending)
            snprintf(state, sizeof state, "unfinished work");
        else
            snprintf(state, sizeof state, "all its work completed");
        render_line(b, "  stream %s%s%s%s, device %lld, %lld launch%s:%s%s",
                    json_get_str(s, RK_STREAM) ? json_get_str(s, RK_STREAM) : "?", kind ? " (" : "", kind ? kind : "",
                    kind ? ")" : "", json_get_int(s, RK_DEVICE, -1), json_get_int(s, RK_LAUNCHES, 0),
                    json_get_int(s, RK_LAUNCHES, 0) == 1 ? "" : "es", pending ? "" : " ", pending ? "" : state);
        if (pending && done > 0)
            render_line(b, "    %s (its breadcrumb shows #%lld completed)", state, done);
        else if (pending)
            render_line(b, "    %s", state);
    }
}

static void render_hang_full(struct render_buf *b, const struct json *doc, const struct render_opts *o)
{
    const struct render_verdict v = render_verdict_of(doc);
    const struct json *queued = json_get(doc, RK_QUEUED);
    const struct json *threads = json_get(doc, RK_THREADS);
    const struct json *pythreads = json_get(doc, RK_PYTHON_THREADS);
    const char *mode = json_get_str(json_get(doc, RK_CONFIG), RK_MODE);
    long long pid = json_get_int(json_get(doc, RK_PROCESS), RK_PID, -1);
    size_t i;

    render_hang_head(b, doc);
    render_add(b, "culprit:\n");
    if (json_is(v.culprit, JSON_OBJ)) {
        render_hang_launch(b, v.culprit, v.reason);
    } else if (json_len(v.cands)) {
        size_t n = json_len(v.cands);
        render_line(b, "culprit could not tell which of these %zu launch%s is the one in flight:", n,
                    n == 1 ? "" : "es");
        render_hang_list(b, v.cands, 1);
        if (v.reason)
            render_para(b, "  why: ", "    ", v.reason);
        if (mode && strcmp(mode, "record") == 0) {
            render_run_again(b, json_get(doc, RK_PROCESS),
                             "to name it exactly, run it again in precise mode (a breadcrumb after every launch):",
                             "culprit run --mode precise -- ");
        }
    } else if (v.certainty && strcmp(v.certainty, "idle") == 0) {
        render_para(b, "no launch was in flight: ", "  ", v.reason ? v.reason : "every stream had completed its work");
    } else {
        render_para(b, "culprit could not name the launch in flight: ", "  ",
                    v.reason ? v.reason : "the report gives no reason");
    }
    /* culprit run asks the device which kernels run (devquery.c); where it could not, say why */
    const struct json *dq = json_get(doc, RK_DEVICE_QUERY);
    const char *asked = json_get_str(dq, RK_STATUS);
    if (asked && strcmp(asked, "answered") != 0)
        render_para(b, "the device could not be asked which kernels run: ", "  ",
                    json_get_str(dq, RK_WHY) ? json_get_str(dq, RK_WHY) : asked);
    if (json_len(queued)) {
        const char *stream = json_get_str(json_at(queued, 0), RK_STREAM);
        render_add(b, "culprit:\n");
        render_line(b, "queued behind it on stream %s (oldest first%s):", stream ? stream : "?",
                    json_len(queued) == 8 ? ", the first 8" : "");
        render_hang_list(b, queued, 0);
    }
    render_hang_streams(b, json_get(doc, RK_STREAMS));
    if (json_len(threads)) {
        render_add(b, "culprit:\n");
        render_line(b, "threads, where each waits:");
        for (i = 0; i < json_len(threads); i++)
            render_hang_thread(b, json_at(threads, i), pid);
        if (json_get_int(doc, RK_THREADS_LEFT_OUT, 0) > 0)
            render_line(b, "  (%lld more threads left out)", json_get_int(doc, RK_THREADS_LEFT_OUT, 0));
    }
    if (json_len(pythreads)) {
        render_line(b, "  Python threads culprit could not tie to one of those:");
        for (i = 0; i < json_len(pythreads); i++) {
            const struct json *t = json_at(pythreads, i);
            render_line(b, "    Python thread %lld:", json_get_int(t, RK_ID, 0));
            render_python(b, json_get(t, RK_PYTHON), "      ");
        }
    }
    render_nccl_log(b, doc);
    if (o && o->path)
        render_line(b, "report: %s", o->path);
}

static void render_hang_brief(struct render_buf *b, const struct json *doc, const struct render_opts *o)
{
    const struct json *hang = json_get(doc, RK_HANG);
    const struct render_verdict v = render_verdict_of(doc);
    const char *trig = json_get_str(hang, RK_TRIGGER);

    long long stalled = json_get_int(hang, RK_STALLED_MS, 0);
    if (trig && strcmp(trig, "timeout") == 0)
        render_add(b, "culprit: hang report (no progress for %lld.%01lld s)", stalled / 1000, stalled % 1000 / 100);
    else
        render_add(b, "culprit: hang report (%s)", trig ? trig : "signal");
    if (json_is(v.culprit, JSON_OBJ)) {
        char shortname[RENDER_BRIEF_NAME + 1];
        render_add(b, ": launch #%lld %s was in flight", json_get_int(v.culprit, RK_SEQ, -1),
                   render_brief_kernel(v.culprit, shortname, sizeof shortname));
    } else if (json_len(v.cands)) {
        long long lo = -1, hi = -1;
        render_seq_span(v.cands, 0, json_len(v.cands), &lo, &hi);
        render_add(b, ": one of %zu launches (#%lld..#%lld) was in flight", json_len(v.cands), lo, hi);
    } else if (v.certainty && strcmp(v.certainty, "idle") == 0) {
        render_add(b, ": no launch was in flight");
    } else {
        render_add(b, ": the launch in flight is unknown");
    }
    if (o && o->path)
        render_add(b, "; report: %s", o->path);
    render_add(b, "\n");
}

/* A hang report: what stopped the process, the launch in flight, what waits behind it, the streams, the threads. */
void render_hang(struct render_buf *b, const struct json *doc, const struct render_opts *o)
{
    if (o && o->brief)
        render_hang_brief(b, doc, o);
    else
        render_hang_full(b, doc, o);
}
