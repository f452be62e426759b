/* A verdict of candidates settled by the page of the faulting address (faultpage.h). The page is only the page:
 * the allocations it is held against are those within FAULTPAGE_ADJACENT of it on either side (or the freed range
 * holding it), and the verdict changes only when exactly one candidate may have been passed a pointer into them,
 * or only one stream's candidates may (argmatch.c: a candidate whose recorded parameters do not cover its whole
 * buffer stays possible, so it blocks the narrowing rather than being ruled out). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "faultpage.h"
#include "kernlog.h"
#include "promote.h"
#include "stages.h"
#include "../render/addr.h"
#include "../render/argmatch.h"
#include "../render/json.h"
#include "../render/report_keys.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The candidates of one stream (same: those on launch's stream; else those on any other), for argmatch_find. */
struct faultpage_on {
    const struct json *launch; /* a launch of the stream */
    int same;                  /* 1: its stream's launches; 0: every other stream's */
};

/* Whether two launches ran on one stream: the same stream handle on the same device. */
static int faultpage_same_stream(const struct json *a, const struct json *b)
{
    const char *x = json_get_str(a, RK_STREAM), *y = json_get_str(b, RK_STREAM);
    return x && y && !strcmp(x, y) && json_get_int(a, RK_DEVICE, -1) == json_get_int(b, RK_DEVICE, -1);
}

static int faultpage_fits(void *arg, const struct json *launch)
{
    const struct faultpage_on *on = arg;
    return faultpage_same_stream(launch, on->launch) == on->same;
}

/* More than one candidate may have been passed the allocation: when they are all on one stream, and every other
 * stream's candidate is ruled out (its whole parameter buffer kept, none of it pointing there), the window shrinks
 * to that stream's unfinished launches; the other candidates go to candidates_before_fault_page. When one of them
 * alone points there (the others' parameters not all kept), it is the likeliest ("verdict.likeliest"), not
 * proven. Returns 0 or ENOMEM. */
static int faultpage_by_stream(struct json *doc, const struct argmatch_range *ranges, int n, const char *const *how,
                               const char *at, int *narrowed)
{
    struct json *cands = (struct json *)json_get(doc, RK_CANDIDATES),
                *verdict = (struct json *)json_get(doc, RK_VERDICT);
    const struct json *stream = NULL;
    struct argmatch_result in, out;
    size_t i;
    for (i = 0; i < json_len(cands) && !stream; i++) {
        const struct json *l = json_at(cands, i);
        struct faultpage_on on = {.launch = l, .same = 1}, off = {.launch = l, .same = 0};
        if (!json_get_str(l, RK_STREAM))
            continue;
        argmatch_find(doc, ranges, n, faultpage_fits, &on, &in);
        if (in.hits == 0)
            continue;
        argmatch_find(doc, ranges, n, faultpage_fits, &off, &out);
        if (out.possible == 0)
            stream = l; /* another stream's candidate that may hold a pointer there keeps the window whole */
        else
            return 0;
    }
    if (!stream || !json_is(cands, JSON_ARR) || !json_is(verdict, JSON_OBJ))
        return 0;
    const struct json *likely = NULL;
    long long first = -1, last = -1;
    int shrink = in.fitting < cands->len;
    for (i = 0; i < cands->len; i++) {
        const struct json *l = cands->kids[i];
        long long q = json_get_int(l, RK_SEQ, -1);
        if (!faultpage_same_stream(l, stream))
            continue;
        if (first < 0 || q < first)
            first = q;
        if (q > last)
            last = q;
        if (in.hits == 1 && i == in.hit)
            likely = l;
    }
    if (!shrink && !likely)
        return 0; /* one stream's launches already, several pointing there: the page says no more */
    char *why = NULL, *text = NULL;
    const char *reason = json_get_str(verdict, RK_REASON);
    if (asprintf(&why,
                 "%s%s the kernel's log puts the GPU's memory fault in the page at %s, %s 0x%llx..0x%llx, which only "
                 "launches of stream %s were passed%s%s",
                 shrink ? "narrowed by the page of the faulting address to the " : "",
                 shrink ? "unfinished launches of one stream:" : "by the page of the faulting address:", at,
                 how[in.range], (unsigned long long)ranges[in.range].base, (unsigned long long)ranges[in.range].end,
                 json_get_str(stream, RK_STREAM), shrink ? " (no other stream's candidate was)" : "",
                 likely ? "; of them launch #" : "") < 0)
        return ENOMEM;
    if (likely) {
        char *more = NULL;
        if (asprintf(&more,
                     "%s%lld is the likeliest, not proven: its parameter bytes %d..%d hold 0x%llx, which points into "
                     "it, and the others' recorded parameters do not, but they were not all kept",
                     why, json_get_int(likely, RK_SEQ, -1), in.word * 8, in.word * 8 + 7,
                     (unsigned long long)in.value) < 0) {
            free(why);
            return ENOMEM;
        }
        free(why);
        why = more;
    }
    int rc = asprintf(&text, "%s%s%s", reason ? reason : "", reason ? "; " : "", why) < 0 ? ENOMEM : 0;
    free(why);
    if (rc || json_put(verdict, RK_REASON, json_new_str(text))) {
        free(text);
        return ENOMEM;
    }
    free(text);
    *narrowed = 1;
    if (likely && json_put(verdict, RK_LIKELIEST, json_new_int(json_get_int(likely, RK_SEQ, -1))))
        return ENOMEM;
    if (!shrink)
        return 0;
    /* the other streams' candidates move out, in their order */
    struct json *others = json_new(JSON_ARR), *win = json_new(JSON_OBJ);
    if (!others || !win || json_put(win, RK_FIRST, json_new_int(first)) || json_put(win, RK_LAST, json_new_int(last))) {
        json_free(others);
        json_free(win);
        return ENOMEM;
    }
    size_t keep = 0;
    for (i = 0; i < cands->len; i++) {
        struct json *l = cands->kids[i];
        if (faultpage_same_stream(l, stream))
            cands->kids[keep++] = l;
        else if (json_append(others, l) != 0)
            cands->kids[keep++] = l; /* out of memory: kept a candidate rather than lost */
    }
    cands->len = keep;
    if (json_set(doc, RK_CANDIDATES_BEFORE_FAULT_PAGE, others) != 0) {
        json_free(others);
        json_free(win);
        return ENOMEM;
    }
    if (json_set(verdict, RK_WINDOW, win) != 0) {
        json_free(win);
        return ENOMEM;
    }
    return 0;
}

int faultpage_narrow(struct json *doc, int *narrowed)
{
    struct json *verdict = (struct json *)json_get(doc, RK_VERDICT);
    const struct json *fa = json_get(doc, RK_FAULT_ADDRESS);
    const char *src = json_get_str(fa, RK_SOURCE), *at = json_get_str(fa, RK_ADDRESS);
    struct argmatch_range ranges[2];
    const char *how[2];
    long long granule = json_get_int(fa, RK_GRANULE, 0);
    struct addr_answer a;
    uint64_t page;
    int n = 0;
    *narrowed = 0;
    const char *matched = json_get_str(json_get(doc, RK_GPU_FAULT_LOG), RK_MATCHED);
    if (!verdict || !rk_is_candidates(doc) || !src || strcmp(src, "kernel log") != 0 || granule <= 0 || !at ||
        addr_parse(at, &page) != 0)
        return 0;
    /* a line tied by the process's name alone may be another process's (a pid namespace: another python), and a
     * page is this error's only when the error is the memory unit's (an assert logs none): neither narrows */
    if (!matched || strcmp(matched, "pid") != 0 || !kernlog_code_logs_page(rk_error_code(doc, -1)))
        return 0;
    /* the allocations the page lies against, as fault_address answered it (the table as the report has it: the
     * verdict names no culprit yet) */
    addr_answer(doc, page, 0, &a);
    if (a.where == ADDR_FREED || a.where == ADDR_INSIDE) {
        addr_reach(a.where == ADDR_FREED ? &a.freed : &a.in, &ranges[n].base, &ranges[n].end);
        how[n++] =
            a.where == ADDR_FREED ? "in memory freed before the launch, of the allocation" : "inside the allocation";
    } else {
        if (a.below.obj && page - (a.below.base + a.below.size) < FAULTPAGE_ADJACENT) {
            addr_reach(&a.below, &ranges[n].base, &ranges[n].end);
            how[n++] = "just past the end of the allocation";
        }
        if (a.above.obj && a.above.base - page < FAULTPAGE_ADJACENT + (uint64_t)granule) {
            addr_reach(&a.above, &ranges[n].base, &ranges[n].end);
            how[n++] = "just before the start of the allocation";
        }
    }
    if (n == 0)
        return 0;
    struct argmatch_result m;
    if (!argmatch_find(doc, ranges, n, NULL, NULL, &m))
        return m.hits ? faultpage_by_stream(doc, ranges, n, how, at, narrowed) : 0;
    const struct json *hit = json_at(rk_candidates(doc), m.hit);
    long long seq = json_get_int(hit, RK_SEQ, -1);
    struct faultpage_on on = {.launch = hit, .same = 1};
    struct argmatch_result mine;
    argmatch_find(doc, ranges, n, faultpage_fits, &on, &mine);
    char *why = NULL;
    if (asprintf(&why,
                 "named by the page of the faulting address: the kernel's log puts the GPU's memory fault in the page "
                 "at %s, %s 0x%llx..0x%llx; launch #%lld's parameter bytes %d..%d hold 0x%llx, which points into it, "
                 "and the arguments of no other candidate do%s%s%s",
                 at, how[m.range], (unsigned long long)ranges[m.range].base, (unsigned long long)ranges[m.range].end,
                 seq, m.word * 8, m.word * 8 + 7, (unsigned long long)m.value,
                 mine.fitting == 1 ? "; it is the only launch of its stream " : "",
                 mine.fitting == 1 ? json_get_str(hit, RK_STREAM) : "",
                 mine.fitting == 1 ? " left unfinished, so this is proven" : "") < 0)
        return ENOMEM;
    int rc = promote_because(doc, m.hit, RK_CANDIDATES_BEFORE_FAULT_PAGE, "fault page", why);
    free(why);
    if (rc)
        return rc == ENOMEM ? ENOMEM : 0;
    *narrowed = 1;
    return 0;
}

/* The report stage: what the faulting address touched, the GPU core dump's, else the page of the kernel's log
 * (render/addr.c). */
enum ev_next faultpage_stage_address(struct ev_ctx *c)
{
    return addr_annotate_fault(c->doc, &c->addr) != 0 ? EV_NOMEM : EV_NEXT;
}

/* The report stage: a window of candidates the page of the faulting address settles. */
enum ev_next faultpage_stage(struct ev_ctx *c)
{
    return faultpage_narrow(c->doc, &c->narrowed) != 0 ? EV_NOMEM : EV_NEXT;
}

/* The report stage after faultpage_stage: the address's answer again, as of the culprit's launch it named. */
enum ev_next faultpage_stage_readdress(struct ev_ctx *c)
{
    return c->narrowed && addr_annotate_fault(c->doc, &c->addr) != 0 ? EV_NOMEM : EV_NEXT;
}
