/* Settling a verdict after the fact: the candidate that a fact the library could not see singles out (a
 * blocking rerun, a GPU core dump) becomes the exact culprit, and the other candidates are kept under a key of
 * the caller's, so the report still says what the first verdict could not rule out. */
#include "promote.h"
#include "../render/json.h"
#include "../base/jsonw.h"
#include "../render/render.h"
#include "../render/report_keys.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <errno.h>

struct json *promote_copy(const struct json *n)
{
    struct jw jw;
    struct json *out = NULL;
    jw_init(&jw);
    if (json_dump(n, &jw) == JSON_OK && !jw.err)
        json_parse(jw.buf, jw.len, &out, NULL);
    jw_free(&jw);
    return out;
}

static int promote_cmp_seq(const void *a, const void *b)
{
    long long x = json_get_int(*(struct json *const *)a, RK_SEQ, -1);
    long long y = json_get_int(*(struct json *const *)b, RK_SEQ, -1);
    return x < y ? -1 : x > y;
}

/* Whether launch l ran before the culprit on the culprit's stream. */
static int promote_before(const struct json *l, const struct json *culprit)
{
    const char *s = json_get_str(l, RK_STREAM), *stream = json_get_str(culprit, RK_STREAM);
    long long q = json_get_int(l, RK_SEQ, -1);
    return s && stream && strcmp(s, stream) == 0 &&
           json_get_int(l, RK_DEVICE, -1) == json_get_int(culprit, RK_DEVICE, -1) && q >= 0 &&
           q < json_get_int(culprit, RK_SEQ, -1);
}

int promote_extend_history(struct json *doc, const struct json *chosen, const struct json *others)
{
    struct json *hist = (struct json *)json_get(doc, RK_HISTORY);
    size_t i, drop;

    if (!json_get_str(chosen, RK_STREAM) || json_get_int(chosen, RK_SEQ, -1) < 0)
        return 0;
    if (!json_is(hist, JSON_ARR)) {
        hist = json_new(JSON_ARR);
        if (!hist || json_set(doc, RK_HISTORY, hist) != 0) {
            json_free(hist);
            return ENOMEM;
        }
    }
    /* The library's history ran up to the first candidate, which may be on another stream or later than the
     * chosen one: only launches before the culprit on its stream stay. */
    for (i = drop = 0; i < hist->len; i++) {
        if (promote_before(hist->kids[i], chosen))
            hist->kids[drop++] = hist->kids[i];
        else
            json_free(hist->kids[i]);
    }
    hist->len = drop;
    for (i = 0; i < json_len(others); i++) {
        const struct json *o = json_at(others, i);
        long long q = json_get_int(o, RK_SEQ, -1);
        struct json *copy;
        size_t k;
        int dup = 0;
        if (!promote_before(o, chosen))
            continue;
        for (k = 0; k < hist->len; k++)
            dup |= json_get_int(hist->kids[k], RK_SEQ, -2) == q;
        if (dup)
            continue;
        copy = promote_copy(o);
        if (!copy || json_append(hist, copy) != 0) {
            json_free(copy);
            return ENOMEM;
        }
    }
    qsort(hist->kids, hist->len, sizeof *hist->kids, promote_cmp_seq);
    if (hist->len > REPORT_HISTORY) {
        drop = hist->len - REPORT_HISTORY;
        for (i = 0; i < drop; i++)
            json_free(hist->kids[i]);
        memmove(hist->kids, hist->kids + drop, REPORT_HISTORY * sizeof *hist->kids);
        hist->len = REPORT_HISTORY;
    }
    return 0;
}

int promote_candidate(struct json *doc, size_t hit, const char *others_key)
{
    struct json *verdict = (struct json *)json_get(doc, RK_VERDICT);
    struct json *cands = (struct json *)json_get(doc, RK_CANDIDATES);
    struct json *chosen, *others, *win;
    size_t i;
    long long seq;

    if (!json_is(cands, JSON_ARR) || hit >= cands->len || !json_is(verdict, JSON_OBJ))
        return EINVAL;
    chosen = cands->kids[hit];
    seq = json_get_int(chosen, RK_SEQ, -1);
    if (!(others = json_new(JSON_ARR)))
        return ENOMEM;
    for (i = 0; i < cands->len; i++)
        if (i != hit && json_append(others, cands->kids[i]) != 0) {
            others->len = 0; /* the launches are still the candidates' */
            json_free(others);
            return ENOMEM;
        }
    cands->len = 0; /* every candidate now belongs to others, except chosen, which is ours */
    if (json_set(doc, RK_CULPRIT, chosen) != 0) {
        json_free(chosen);
        json_free(others);
        return ENOMEM;
    }
    if (json_set(doc, others_key, others) != 0) {
        json_free(others);
        return ENOMEM;
    }
    if (promote_extend_history(doc, chosen, others) != 0)
        return ENOMEM;
    win = json_new(JSON_OBJ);
    if (!win || json_put(win, RK_FIRST, json_new_int(seq)) || json_put(win, RK_LAST, json_new_int(seq)) ||
        json_set(verdict, RK_WINDOW, win) != 0) {
        json_free(win);
        return ENOMEM;
    }
    return json_put(verdict, RK_CERTAINTY, json_new_str("exact")) ? ENOMEM : 0;
}

int promote_because(struct json *doc, size_t hit, const char *others_key, const char *by, const char *why)
{
    struct json *verdict = (struct json *)json_get(doc, RK_VERDICT);
    const char *reason = json_get_str(verdict, RK_REASON);
    size_t n = (reason ? strlen(reason) + 2 : 0) + strlen(why) + 1;
    char *text = malloc(n);
    int rc;
    if (!text)
        return ENOMEM;
    snprintf(text, n, "%s%s%s", reason ? reason : "", reason ? "; " : "", why);
    if (!verdict || json_put(verdict, RK_REASON, json_new_str(text))) {
        free(text);
        return verdict ? ENOMEM : EINVAL;
    }
    free(text);
    rc = promote_candidate(doc, hit, others_key);
    if (rc == 0 && by && json_put((struct json *)json_get(doc, RK_CULPRIT), RK_BY, json_new_str(by)))
        rc = ENOMEM;
    return rc;
}
