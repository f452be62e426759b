/* The report's typed accessors (report_keys.h): the verdict's certainty, the culprit, the candidates and the
 * error's code, read the one way every reader needs them. */
#include "report_keys.h"

#include "json.h"

#include <string.h>

const struct json *rk_verdict(const struct json *doc)
{
    return json_get(doc, RK_VERDICT);
}

const char *rk_certainty(const struct json *doc)
{
    return json_get_str(rk_verdict(doc), RK_CERTAINTY);
}

int rk_is_exact(const struct json *doc)
{
    const char *c = rk_certainty(doc);
    return c && strcmp(c, "exact") == 0;
}

int rk_is_candidates(const struct json *doc)
{
    const char *c = rk_certainty(doc);
    return c && strcmp(c, "candidates") == 0;
}

const struct json *rk_culprit(const struct json *doc)
{
    const struct json *c = json_get(doc, RK_CULPRIT);
    return json_is(c, JSON_OBJ) ? c : NULL;
}

const struct json *rk_candidates(const struct json *doc)
{
    return json_get(doc, RK_CANDIDATES);
}

long long rk_error_code(const struct json *doc, long long fallback)
{
    return json_get_int(json_get(doc, RK_ERROR), RK_CODE, fallback);
}
