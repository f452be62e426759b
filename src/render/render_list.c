/* Launches in a list, shared by the fault verdict (render.c) and the hang report (render_hang.c): one launch's
 * line with where it ran and what it was asked, runs of identical launches, the device asserts that fit a launch
 * and NCCL's words about its kernels. Declared in render_int.h. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "render.h"
#include "render_int.h"
#include "../base/demangle.h"
#include "json.h"
#include "nccl.h"
#include "report_keys.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Whether device assert a may come from launch (kernel `name`): its "launches" (the launches it fits, by name and
 * indices) hold the launch's number; in a report without them, the bare names are the same. */
static int render_assert_fits(const struct json *a, const struct json *launch, const char *name)
{
    const struct json *seqs = json_get(a, RK_LAUNCHES);
    const char *k = json_get_str(a, RK_KERNEL), *want, *got;
    long long seq = json_get_int(launch, RK_SEQ, -1), v;
    size_t wl, i;
    if (json_is(seqs, JSON_ARR)) {
        for (i = 0; seq >= 0 && i < json_len(seqs); i++)
            if (json_int(json_at(seqs, i), &v) == 0 && v == seq)
                return 1;
        return 0;
    }
    wl = demangle_base_name(name, &want);
    return wl && k && demangle_base_name(k, &got) == wl && memcmp(got, want, wl) == 0;
}

/* Shows the first device assert (from the report's "device_asserts") that may come from launch (kernel `name`),
 * and with more the count of the others. Nothing when none does. */
void render_asserts(struct render_buf *b, const struct json *asserts, const struct json *launch, const char *name,
                    const char *indent, int count_more)
{
    size_t i, hits = 0;
    for (i = 0; i < json_len(asserts); i++) {
        const struct json *a = json_at(asserts, i);
        const char *expr = json_get_str(a, RK_ASSERTION);
        const char *file = json_get_str(a, RK_FILE);
        char blk[64], thr[64], line[32] = "";
        if (!render_assert_fits(a, launch, name))
            continue;
        if (hits++)
            continue;
        if (json_get_int(a, RK_LINE, -1) >= 0)
            snprintf(line, sizeof line, ":%lld", json_get_int(a, RK_LINE, -1));
        render_dims(json_get(a, RK_BLOCK), blk, sizeof blk);
        render_dims(json_get(a, RK_THREAD), thr, sizeof thr);
        render_line(b, "%sdevice assert: `%s` failed at %s%s%s%s%s%s", indent, expr ? expr : "?", file ? file : "?",
                    line, blk[0] ? ", block " : "", blk, thr[0] ? ", thread " : "", thr);
    }
    if (count_more && hits > 1)
        render_line(b, "%s(%zu more device assert%s in this kernel, listed in the report)", indent, hits - 1,
                    hits == 2 ? "" : "s");
}

/* An NCCL kernel also gets the collective it runs, "NCCL AllReduce (sum, f32, ring, LL)", on a line of its own. */
void render_nccl_kernel(struct render_buf *b, const char *name, const char *indent)
{
    char what[160];
    if (nccl_describe_name(name, what, sizeof what))
        render_line(b, "%s%s", indent, what);
}

#define RENDER_NCCL_WARNS 4 /* NCCL warnings shown under a verdict; the rest are counted */

/* NCCL's warnings in this process (`culprit run` keeps the end of NCCL's log in "nccl_log"): the first few WARN
 * lines, which usually name the cause, and a count of the others. */
void render_nccl_log(struct render_buf *b, const struct json *doc)
{
    const struct json *log = json_get(doc, RK_NCCL_LOG);
    size_t i, n = json_len(log), warns = 0, shown = 0;
    for (i = 0; i < n; i++)
        if (json_str(json_at(log, i)) && strstr(json_str(json_at(log, i)), "NCCL WARN"))
            warns++;
    if (!warns)
        return;
    render_add(b, "culprit:\n");
    render_line(b, "NCCL warned in this process (its log is in the report's nccl_log):");
    for (i = 0; i < n && shown < RENDER_NCCL_WARNS; i++) {
        const char *l = json_str(json_at(log, i));
        if (l && strstr(l, "NCCL WARN")) {
            render_line(b, "  %.300s", l);
            shown++;
        }
    }
    if (warns > shown)
        render_line(b, "  (%zu more NCCL warning%s in the report)", warns - shown, warns - shown == 1 ? "" : "s");
}

/* One launch in a list: "#11 scale(float*, int)  grid [4,1,1] block [256,1,1]"; with where, also where it
 * ran and was launched from, and a device assert that names its kernel (asserts may be NULL). */
/* Two candidates that differ only in their launch number (next to each other): same kernel, shape, stream,
 * thread and launch site. Shown as one line, so a window of a loop's launches stays short. */
int render_same_launch(const struct json *a, const struct json *c)
{
    static const char *const keys[] = {RK_KERNEL, RK_STREAM, RK_STREAM_KIND, RK_API};
    char ga[160], gc[160], fa[1400], fc[1400];
    const struct json *ua, *uc;
    if (json_get_int(a, RK_SEQ, -1) + 1 != json_get_int(c, RK_SEQ, -2) ||
        json_get_int(a, RK_THREAD, -1) != json_get_int(c, RK_THREAD, -1))
        return 0;
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
        const char *x = json_get_str(a, keys[i]), *y = json_get_str(c, keys[i]);
        if ((x || y) && (!x || !y || strcmp(x, y) != 0))
            return 0;
    }
    if (strcmp(render_geometry(a, ga, sizeof ga), render_geometry(c, gc, sizeof gc)) != 0)
        return 0;
    ua = render_user_pyframe(json_get(a, RK_PYTHON));
    uc = render_user_pyframe(json_get(c, RK_PYTHON));
    if (ua || uc)
        return ua && uc && strcmp(render_pyframe(ua, fa, sizeof fa), render_pyframe(uc, fc, sizeof fc)) == 0;
    ua = render_user_frame(a);
    uc = render_user_frame(c);
    if (!ua || !uc)
        return ua == uc;
    return strcmp(render_frame(ua, fa, sizeof fa), render_frame(uc, fc, sizeof fc)) == 0;
}

void render_launch_item(struct render_buf *b, const struct json *launch, const char *indent, int where,
                        const struct json *asserts, char *last_place, size_t last_len, long long upto)
{
    char *owned = NULL;
    const char *name = render_kernel(launch, &owned);
    char shortname[RENDER_WIDTH + 1], geo[160], seq[48] = "#?";
    long long s = json_get_int(launch, RK_SEQ, -1);
    size_t room;

    if (s >= 0 && upto > s)
        snprintf(seq, sizeof seq, "#%lld..#%lld", s, upto); /* a run of identical launches */
    else if (s >= 0)
        snprintf(seq, sizeof seq, "#%lld", s);
    render_geometry(launch, geo, sizeof geo);
    /* the name gets what is left of the line after prefix, number and geometry, but never less than a
     * readable minimum */
    room = strlen("culprit: ") + strlen(indent) + strlen(seq) + 1 + (geo[0] ? 2 + strlen(geo) : 0);
    room = room + RENDER_NAME_MIN < RENDER_WIDTH ? RENDER_WIDTH - room : RENDER_NAME_MIN;
    render_elide(name, shortname, sizeof shortname, room);
    render_line(b, "%s%s %s%s%s", indent, seq, shortname, geo[0] ? "  " : "", geo);
    if (where) {
        char place[200], text[1024];
        const struct json *uf = render_user_frame(launch);
        snprintf(text, sizeof text, "%s    ", indent);
        render_nccl_kernel(b, name, text);
        render_place(launch, place, sizeof place);
        /* candidates on one stream are the common case: say where they ran once */
        if (place[0] && !(last_place && strcmp(last_place, place) == 0))
            render_line(b, "%s    on %s", indent, place);
        if (last_place)
            snprintf(last_place, last_len, "%s", place);
        const struct json *pf = render_user_pyframe(json_get(launch, RK_PYTHON));
        if (pf)
            render_line(b, "%s    launched from %s", indent, render_pyframe(pf, text, sizeof text));
        else if (uf)
            render_line(b, "%s    launched from %s", indent, render_frame(uf, text, sizeof text));
        snprintf(text, sizeof text, "%s    ", indent);
        render_asserts(b, asserts, launch, name, text, 0);
        render_op(b, launch, text, 0);
    }
    free(owned);
}

/* Widens lo..hi (-1: nothing yet) to the launch numbers of arr[from..to). */
void render_seq_span(const struct json *arr, size_t from, size_t to, long long *lo, long long *hi)
{
    for (size_t k = from; k < to; k++) {
        long long s = json_get_int(json_at(arr, k), RK_SEQ, -1);
        if (s >= 0 && (*lo < 0 || s < *lo))
            *lo = s;
        if (s > *hi)
            *hi = s;
    }
}
