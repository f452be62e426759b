/* Candidate launches told apart by their parameters (see argmatch.h). A word is taken as a pointer when it lies
 * in a range; a kernel that reaches an allocation only through a pointer held in memory (a table of pointers in
 * device memory) is not seen this way, which is why a candidate is ruled in by a match and never ruled out unless
 * its whole parameter buffer was kept and none of it points there. */
#include "argmatch.h"
#include "json.h"
#include "report_keys.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define ARGMATCH_WORDS 7 /* words a record keeps (56 bytes) */

/* A word as the report writes it: "0x" and hex digits. 0 or -1. */
static int argmatch_hex(const char *s, uint64_t *out)
{
    char *end = NULL;
    if (!s || s[0] != '0' || (s[1] != 'x' && s[1] != 'X') || !s[2])
        return -1;
    errno = 0;
    unsigned long long v = strtoull(s + 2, &end, 16);
    if (errno || *end || s[2] == '-' || s[2] == '+' || s[2] == ' ')
        return -1;
    *out = (uint64_t)v;
    return 0;
}

int argmatch_words(const struct json *launch, uint64_t *words, int max, uint64_t *size)
{
    const struct json *p = json_get(launch, RK_PARAMS);
    long long sz;
    int n = 0;
    if (!json_is(p, JSON_ARR) || json_int(json_get(launch, RK_PARAMS_SIZE), &sz) != 0 || sz < 0)
        return -1;
    for (size_t i = 0; i < json_len(p) && n < max; i++)
        if (argmatch_hex(json_str(json_at(p, i)), &words[n++]) != 0)
            return -1;
    *size = (uint64_t)sz;
    return n;
}

/* The first word of w[0..n) in a range: its index (and *range), or -1. */
static int argmatch_word_in(const uint64_t *w, int n, const struct argmatch_range *ranges, int nr, int *range)
{
    for (int i = 0; i < n; i++)
        for (int r = 0; r < nr; r++)
            if (w[i] >= ranges[r].base && w[i] < ranges[r].end) {
                *range = r;
                return i;
            }
    return -1;
}

int argmatch_find(const struct json *doc, const struct argmatch_range *ranges, int n, argmatch_fits_fn fits, void *arg,
                  struct argmatch_result *out)
{
    const struct json *cands = rk_candidates(doc);
    memset(out, 0, sizeof *out);
    out->word = out->range = -1;
    for (size_t i = 0; i < json_len(cands); i++) {
        const struct json *l = json_at(cands, i);
        uint64_t w[ARGMATCH_WORDS], size = 0;
        int range = -1, nw, at;
        if (!json_is(l, JSON_OBJ) || (fits && !fits(arg, l)))
            continue;
        out->fitting++;
        nw = argmatch_words(l, w, ARGMATCH_WORDS, &size);
        at = nw > 0 ? argmatch_word_in(w, nw, ranges, n, &range) : -1;
        if (at < 0 && nw >= 0 && size <= (uint64_t)nw * 8)
            continue; /* its whole buffer is known and points nowhere the fault touched */
        out->possible++;
        if (at < 0)
            continue;
        if (out->hits++ == 0) {
            out->hit = i;
            out->word = at;
            out->range = range;
            out->value = w[at];
        }
    }
    return out->possible == 1 && out->hits == 1;
}
