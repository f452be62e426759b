/* Settling a verdict after the fact: the candidate that a fact the library could not see singles out (a
 * blocking rerun, a GPU core dump) becomes the exact culprit, and the other candidates are kept under a key of
 * the caller's, so the report still says what the first verdict could not rule out. */
#include "promote.h"
#include "../report/json.h"

#include <errno.h>

/* Sets obj[key] = kid, taking kid; nonzero (kid freed) on failure. */
static int promote_put(struct json *obj, const char *key, struct json *kid)
{
    if (!kid)
        return -1;
    if (json_set(obj, key, kid) != 0) {
        json_free(kid);
        return -1;
    }
    return 0;
}

int promote_candidate(struct json *doc, size_t hit, const char *others_key)
{
    struct json *verdict = (struct json *)json_get(doc, "verdict");
    struct json *cands = (struct json *)json_get(doc, "candidates");
    struct json *chosen, *others, *win;
    size_t i;
    long long seq;

    if (!json_is(cands, JSON_ARR) || hit >= cands->len || !json_is(verdict, JSON_OBJ))
        return EINVAL;
    chosen = cands->kids[hit];
    seq = json_get_int(chosen, "seq", -1);
    if (!(others = json_new(JSON_ARR)))
        return ENOMEM;
    for (i = 0; i < cands->len; i++)
        if (i != hit && json_append(others, cands->kids[i]) != 0) {
            others->len = 0;  /* the launches are still the candidates' */
            json_free(others);
            return ENOMEM;
        }
    cands->len = 0;           /* every candidate now belongs to others, except chosen, which is ours */
    if (json_set(doc, "culprit", chosen) != 0) {
        json_free(chosen);
        json_free(others);
        return ENOMEM;
    }
    if (json_set(doc, others_key, others) != 0) {
        json_free(others);
        return ENOMEM;
    }
    win = json_new(JSON_OBJ);
    if (!win || promote_put(win, "first", json_new_int(seq)) || promote_put(win, "last", json_new_int(seq)) ||
        json_set(verdict, "window", win) != 0) {
        json_free(win);
        return ENOMEM;
    }
    return promote_put(verdict, "certainty", json_new_str("exact")) ? ENOMEM : 0;
}
