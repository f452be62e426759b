/* What the operator diagnosis adds to a verdict: the framework operator behind a launch ("op": its name, its
 * arguments, what broke its contract) and the operators whose arguments were found wrong ("diagnosis"). The
 * notes come from ops.c in the library; culprit's Python package makes them for PyTorch operators. */
#include <stdio.h>
#include <string.h>

#include "json.h"
#include "render.h"
#include "render_int.h"
#include "report_keys.h"

void render_op(struct render_buf *b, const struct json *launch, const char *indent, int full)
{
    const struct json *op = json_get(launch, RK_OP);
    const char *name = json_get_str(op, RK_NAME);
    const char *args = json_get_str(op, RK_ARGS);
    const char *problem = json_get_str(op, RK_PROBLEM);
    char head[96], more[96], text[RENDER_OP_TEXT];

    if (!name)
        return;
    snprintf(head, sizeof head, "%soperator: ", indent);
    snprintf(more, sizeof more, "%s    ", indent);
    if (full && args && *args)
        snprintf(text, sizeof text, "%s(%s)", name, args);
    else
        snprintf(text, sizeof text, "%s", name);
    render_para(b, head, more, text);
    if (problem && *problem) {
        snprintf(head, sizeof head, "%swhat was wrong: ", indent);
        render_para(b, head, more, problem);
    }
}

/* Whether entry d of "diagnosis" is the operator of launch (already shown with it). */
static int render_same_op(const struct json *d, const struct json *launch)
{
    const struct json *op = json_get(launch, RK_OP);
    const char *a = json_get_str(op, RK_PROBLEM), *c = json_get_str(d, RK_PROBLEM);
    long long seq = json_get_int(launch, RK_SEQ, -1), first = json_get_int(d, RK_FIRST, -1);
    long long last = json_get_int(d, RK_LAST, -1);
    if (!a || !c || strcmp(a, c) != 0)
        return 0;
    return seq >= first && (json_is(json_get(d, RK_LAST), JSON_NULL) || seq <= last);
}

/* The first of the candidates that entry d of "diagnosis" holds, or -1. */
static long long render_op_candidate(const struct json *d, const struct json *cands)
{
    long long first = json_get_int(d, RK_FIRST, -1), last = json_get_int(d, RK_LAST, -1);
    int running = json_is(json_get(d, RK_LAST), JSON_NULL);
    for (size_t k = 0; k < json_len(cands); k++) {
        long long s = json_get_int(json_at(cands, k), RK_SEQ, -1);
        if (s >= 0 && s >= first && (running || s <= last))
            return s;
    }
    return -1;
}

void render_diagnosis(struct render_buf *b, const struct json *doc)
{
    const struct json *list = json_get(doc, RK_DIAGNOSIS);
    const struct json *culprit = json_get(doc, RK_CULPRIT);
    const struct json *cands = rk_candidates(doc);
    size_t n = json_len(list);

    for (size_t i = 0; i < n; i++) {
        const struct json *d = json_at(list, i);
        const char *name = json_get_str(d, RK_NAME);
        const char *problem = json_get_str(d, RK_PROBLEM);
        long long first = json_get_int(d, RK_FIRST, -1), last = json_get_int(d, RK_LAST, -1);
        long long cand = render_op_candidate(d, cands);
        int running = json_is(json_get(d, RK_LAST), JSON_NULL);
        char head[RENDER_OP_NAME + 128], span[64], text[RENDER_OP_TEXT];
        if (!name || !problem)
            continue;
        if (json_is(culprit, JSON_OBJ) && render_same_op(d, culprit))
            continue;
        render_add(b, "culprit:\n");
        if (cand >= 0) {
            /* its problem is already printed under the candidate */
            snprintf(text, sizeof text,
                     "launch #%lld: it belongs to %s, whose arguments broke its contract (see "
                     "above), so it is the likely culprit",
                     cand, name);
            render_para(b, "the diagnosis points at ", "  ", text);
            continue;
        }
        if (running)
            snprintf(span, sizeof span, "launches from #%lld", first);
        else if (last < first)
            snprintf(span, sizeof span, "no launch");
        else if (first == last)
            snprintf(span, sizeof span, "launch #%lld", first);
        else
            snprintf(span, sizeof span, "launches #%lld..#%lld", first, last);
        snprintf(head, sizeof head, "the diagnosis found %s (%s): ", name, span);
        render_para(b, head, "  ", problem);
    }
}
