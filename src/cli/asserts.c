/* Device-assert lines: parsing what the device printed ("FILE:LINE: KERNEL: block: [x,y,z], thread: [x,y,z]
 * Assertion `EXPR` failed."), and tying the asserts a run printed to its reports: they are added to each report,
 * and a verdict of candidates is narrowed to the one launch the asserts single out (by the kernel's name, by
 * block and thread indices that must fit the launch's grid and block, and by the source file). The relaying of
 * the output the lines come from is watch.c's. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "asserts.h"
#include "cli.h"
#include "promote.h"
#include "../report/demangle.h"
#include "../report/jsonw.h"
#include "../report/json.h"
#include "../report/render.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void asserts_add(struct dev_asserts *as, const char *line, size_t len, const char *stream)
{
    struct dev_assert a;
    if (asserts_parse(line, len, &a) != 0)
        return;
    as->seen++;
    if (as->n >= ASSERTS_MAX) {
        free(a.file);
        free(a.kernel);
        free(a.expr);
        return;
    }
    a.stream = stream;
    as->a[as->n++] = a;
}

void asserts_free(struct dev_asserts *as)
{
    size_t i;
    for (i = 0; i < as->n; i++) {
        free(as->a[i].file);
        free(as->a[i].kernel);
        free(as->a[i].expr);
    }
    as->n = 0;
}

static const char *asserts_memrmem(const char *hay, size_t n, const char *needle)
{
    size_t m = strlen(needle);
    const char *p;
    if (n < m)
        return NULL;
    for (p = hay + n - m;; p--) {
        if (memcmp(p, needle, m) == 0)
            return p;
        if (p == hay)
            return NULL;
    }
}

/* The device prints "FILE:LINE: SIGNATURE: block: [x,y,z], thread: [x,y,z] Assertion `EXPR` failed." */
int asserts_parse(const char *text, size_t len, struct dev_assert *a)
{
    static const char tail[] = "` failed.";
    const size_t tl = sizeof tail - 1;
    char *copy = strndup(text, len);  /* NUL-terminated, so the string functions below stay inside it */
    const char *s = copy, *end, *blk, *p, *q, *colon = NULL, *sig = NULL, *expr;
    long lineno = 0;
    int rc = -1;

    memset(a, 0, sizeof *a);
    if (!copy)
        return -1;
    end = copy + strlen(copy);
    while (end > s && (end[-1] == '\r' || end[-1] == ' ' || end[-1] == '\t'))
        end--;
    /* text before a carriage return was overwritten on the screen (a progress bar); the line starts after it */
    for (p = s; p < end; p++)
        if (*p == '\r')
            s = p + 1;
    if ((size_t)(end - s) <= tl || memcmp(end - tl, tail, tl) != 0)
        goto out;
    blk = asserts_memrmem(s, (size_t)(end - s), ": block: ");
    if (!blk)
        goto out;
    p = blk + 9;
    if (cli_parse_triple(&p, a->block, '[', ']') != 0 || strncmp(p, ", thread: ", 10) != 0)
        goto out;
    p += 10;
    if (cli_parse_triple(&p, a->thread, '[', ']') != 0 || strncmp(p, " Assertion `", 12) != 0)
        goto out;
    expr = p + 12;
    if (expr > end - tl)
        goto out;
    /* FILE ends at the last ":LINE: " before the signature (a log prefix such as a time stamp comes first) */
    for (q = s; q < blk; q++) {
        const char *d = q + 1;
        if (*q != ':' || !isdigit((unsigned char)*d))
            continue;
        while (d < blk && isdigit((unsigned char)*d))
            d++;
        if (d + 2 < blk && d[0] == ':' && d[1] == ' ') {
            colon = q;
            sig = d + 2;
            lineno = strtol(q + 1, NULL, 10);
        }
    }
    if (!colon || colon == s)
        goto out;
    a->line = lineno;
    a->file = strndup(s, (size_t)(colon - s));
    a->kernel = strndup(sig, (size_t)(blk - sig));
    a->expr = strndup(expr, (size_t)(end - tl - expr));
    if (a->file && a->kernel && a->expr) {
        rc = 0;
    } else {
        free(a->file);
        free(a->kernel);
        free(a->expr);
        memset(a, 0, sizeof *a);
    }
out:
    free(copy);
    return rc;
}

/* ---- tying asserts to reports ---- */

/* The launch's kernel name in readable form (malloc'd), or NULL. */
static char *asserts_launch_name(const struct json *launch)
{
    const char *k = json_get_str(launch, "kernel");
    const char *m = json_get_str(launch, "mangled");
    char *d;
    if (k && *k && strncmp(k, "_Z", 2) != 0)
        return strdup(k);
    if ((d = demangle_name(m ? m : k)) != NULL)
        return d;
    if (k && *k)
        return strdup(k);
    return m && *m ? strdup(m) : NULL;
}

/* The device prints "operator()" for the lambda or functor a templated kernel runs (PyTorch's elementwise,
 * scatter/gather and index kernels), and Triton's tl.device_assert (Inductor's too) prints `unknown`: neither
 * can be compared with the launch's name. */
static int asserts_generic(const struct dev_assert *a)
{
    const char *s;
    size_t n = demangle_base_name(a->kernel, &s);
    return n == 0 || (n == 8 && memcmp(s, "operator", 8) == 0) || strcmp(a->kernel, "unknown") == 0;
}

/* Whether the launch's grid and block can hold the assert's block and thread indices; a launch without them
 * (a graph launch) cannot rule anything out. */
static int asserts_fit_dims(const struct dev_assert *a, const struct json *launch)
{
    const struct json *grid = json_get(launch, "grid"), *block = json_get(launch, "block");
    long long g[3], b[3];
    int i;
    if (json_len(grid) != 3 || json_len(block) != 3)
        return 1;
    for (i = 0; i < 3; i++)
        if (json_int(json_at(grid, i), &g[i]) != 0 || json_int(json_at(block, i), &b[i]) != 0 || g[i] <= 0 ||
            b[i] <= 0)
            return 1;
    for (i = 0; i < 3; i++)
        if (a->block[i] >= g[i] || a->thread[i] >= b[i])
            return 0;
    return 1;
}

/* Whether assert a may come from launch: the same kernel name (unless the device printed a generic one), and
 * indices that fit its grid and block. *by_name tells whether the name took part. */
static int asserts_consistent(const struct dev_assert *a, const struct json *launch, int *by_name)
{
    char *name;
    int same;
    *by_name = !asserts_generic(a);
    if (!asserts_fit_dims(a, launch))
        return 0;
    if (!*by_name)
        return 1;
    name = asserts_launch_name(launch);
    same = name && demangle_same_kernel(name, a->kernel);
    free(name);
    return same;
}

#define ASSERTS_WORDS 8                /* words taken from a source file's name */

/* The words of a source file's name that the kernels defined there tend to carry ("ScatterGatherKernel.cu":
 * scatter, gather; "nll_loss2d.cu": nll, loss), lower case, without the generic ones. Returns how many. */
static int asserts_file_words(const char *file, char words[ASSERTS_WORDS][32])
{
    static const char *const generic[] = {"kernel", "kernels", "cuda", "impl", "utils", "ops", "native", "aten",
                                          "src", "common", "device", "launch"};
    const char *base = strrchr(file, '/'), *p;
    int n = 0;
    base = base ? base + 1 : file;
    for (p = base; *p && *p != '.' && n < ASSERTS_WORDS;) {
        char w[32];
        size_t k = 0, g;
        int skip = 0;
        while (*p && !isalpha((unsigned char)*p) && *p != '.')
            p++;
        /* a word: letters, split where a lower-case letter is followed by a capital (CamelCase) */
        while (isalpha((unsigned char)*p)) {
            if (k + 1 < sizeof w)
                w[k++] = (char)tolower((unsigned char)*p);
            if (islower((unsigned char)p[0]) && isupper((unsigned char)p[1])) {
                p++;
                break;
            }
            p++;
        }
        w[k] = '\0';
        for (g = 0; g < sizeof generic / sizeof generic[0]; g++)
            skip |= strcmp(w, generic[g]) == 0;
        if (k >= 3 && !skip)
            memcpy(words[n++], w, k + 1);
    }
    return n;
}

/* Whether the launch's kernel name (mangled and readable) carries every word of the assert's source file. */
static int asserts_mentions_file(const struct dev_assert *a, const struct json *launch)
{
    char words[ASSERTS_WORDS][32], *lower = NULL;
    const char *m = json_get_str(launch, "mangled"), *k = json_get_str(launch, "kernel");
    int n = asserts_file_words(a->file, words), i, all = n > 0;
    if (!all || asprintf(&lower, "%s %s", m ? m : "", k ? k : "") < 0)
        return 0;
    for (char *c = lower; *c; c++)
        *c = (char)tolower((unsigned char)*c);
    for (i = 0; i < n && all; i++)
        all = strstr(lower, words[i]) != NULL;
    free(lower);
    return all;
}

/* Whether an assert's kernel name alone also matches a launch of arr other than hit: then its block and thread
 * indices are what singled hit out. */
static int asserts_narrowed_by_dims(const struct dev_asserts *as, const struct json *arr, size_t hit)
{
    size_t i, j;
    for (i = 0; i < json_len(arr); i++) {
        char *name;
        int same = 0;
        if (i == hit || !json_is(json_at(arr, i), JSON_OBJ))
            continue;
        name = asserts_launch_name(json_at(arr, i));
        for (j = 0; name && !same && j < as->n; j++)
            same = !asserts_generic(&as->a[j]) && demangle_same_kernel(name, as->a[j].kernel);
        free(name);
        if (same)
            return 1;
    }
    return 0;
}

/* The one launch of arr the asserts single out, in *hit, with the sentence saying why in *why (malloc'd).
 * First by every fact an assert carries (name, indices); when asserts with a generic name leave several, by
 * their source file's name against the kernels' names. Returns 1 when exactly one is singled out, 0 when not,
 * -1 when out of memory. Never picks a launch the facts do not single out. */
static int asserts_pick(const struct dev_asserts *as, const struct json *arr, size_t *hit, char **why)
{
    size_t i, j, hits = 0, file_hits = 0, file_hit = 0, named_any = 0;
    const struct dev_assert *by = NULL, *file_by = NULL;
    int generic_only = 1;
    char *name;

    *why = NULL;
    for (i = 0; i < json_len(arr); i++) {
        const struct json *l = json_at(arr, i);
        int hit_here = 0, file_here = 0;
        if (!json_is(l, JSON_OBJ))
            continue;
        for (j = 0; j < as->n; j++) {
            int by_name;
            if (!asserts_consistent(&as->a[j], l, &by_name))
                continue;
            if (!hit_here)
                by = &as->a[j];
            hit_here = 1;
            generic_only &= !by_name;
            named_any |= by_name;
            if (!by_name && !file_here && asserts_mentions_file(&as->a[j], l)) {
                file_here = 1;
                file_by = &as->a[j];
            }
        }
        if (hit_here) {
            hits++;
            *hit = i;
        }
        if (file_here) {
            file_hits++;
            file_hit = i;
        }
    }
    if (hits == 1) {
        long long seq = json_get_int(json_at(arr, *hit), "seq", -1);
        int rc;
        name = asserts_launch_name(json_at(arr, *hit));
        if (!name)
            return -1;
        if (!asserts_generic(by) && asserts_narrowed_by_dims(as, arr, *hit))
            rc = asprintf(why, "the device assert names %s, and its block [%ld,%ld,%ld] and thread [%ld,%ld,%ld] "
                          "fit the grid and block of launch #%lld alone", name, by->block[0], by->block[1],
                          by->block[2], by->thread[0], by->thread[1], by->thread[2], seq);
        else if (!asserts_generic(by))
            rc = asprintf(why, "the device assert names %s", name);
        else
            rc = asprintf(why, "the device assert from %s (in %s) has block [%ld,%ld,%ld] and thread "
                          "[%ld,%ld,%ld], which fit the grid and block of launch #%lld alone", by->file,
                          by->kernel, by->block[0], by->block[1], by->block[2], by->thread[0], by->thread[1],
                          by->thread[2], seq);
        free(name);
        return rc < 0 ? -1 : 1;
    }
    if (hits > 1 && generic_only && !named_any && file_hits == 1) {
        *hit = file_hit;
        name = asserts_launch_name(json_at(arr, *hit));
        if (!name || asprintf(why, "the device assert comes from %s (in %s) and of the launches its block and "
                                   "thread fit, only %s carries that file's name",
                              file_by->file, file_by->kernel, name) < 0) {
            free(name);
            return -1;
        }
        free(name);
        return 1;
    }
    return 0;
}

static struct json *asserts_triple_json(const long v[3])
{
    struct json *arr = json_new(JSON_ARR);
    int i;
    for (i = 0; arr && i < 3; i++) {
        struct json *n = json_new_int(v[i]);
        if (json_append(arr, n) != 0) {
            json_free(n);
            json_free(arr);
            return NULL;
        }
    }
    return arr;
}

static struct json *asserts_json(const struct dev_assert *a)
{
    struct json *o = json_new(JSON_OBJ);
    if (!o)
        return NULL;
    if (json_put(o, "file", json_new_str(a->file)) || json_put(o, "line", json_new_int(a->line)) ||
        json_put(o, "kernel", json_new_str(a->kernel)) || json_put(o, "block", asserts_triple_json(a->block)) ||
        json_put(o, "thread", asserts_triple_json(a->thread)) ||
        json_put(o, "assertion", json_new_str(a->expr)) ||
        json_put(o, "stream", json_new_str(a->stream))) {
        json_free(o);
        return NULL;
    }
    return o;
}

/* Whether assert a may come from the culprit or one of the candidates. */
static int asserts_relevant(const struct dev_assert *a, const struct json *doc)
{
    const struct json *cands = json_get(doc, "candidates");
    size_t j;
    int by_name;
    for (j = 0; j <= json_len(cands); j++) {
        const struct json *l = j == 0 ? json_get(doc, "culprit") : json_at(cands, j - 1);
        if (json_is(l, JSON_OBJ) && asserts_consistent(a, l, &by_name))
            return 1;
    }
    return 0;
}

/* The culprit is a graph launch and the asserts single out one of the kernels captured into that graph:
 * that node goes into culprit.node (the graph launch stays the culprit: it is what the stream ran). */
static int asserts_narrow_node(const struct dev_asserts *as, struct json *doc, int *changed)
{
    struct json *culprit = (struct json *)json_get(doc, "culprit");
    struct json *verdict = (struct json *)json_get(doc, "verdict");
    const struct json *nodes = json_get(culprit, "graph_nodes");
    const char *kind = json_get_str(culprit, "kind");
    const char *reason = json_get_str(verdict, "reason");
    size_t hit = 0;
    struct json *node;
    char *name, *why = NULL;

    if (!as || !kind || strcmp(kind, "graph") != 0 || !json_is(nodes, JSON_ARR) || json_get(culprit, "node"))
        return 0;  /* the library already named the node from the graph's breadcrumbs */
    switch (asserts_pick(as, nodes, &hit, &why)) {
    case -1: return ENOMEM;
    case 0: return 0;
    }
    free(why);  /* a node's reason says it in its own words */
    why = NULL;
    node = promote_copy(json_at(nodes, hit));
    name = asserts_launch_name(json_at(nodes, hit));
    if (!node || !name || json_set(culprit, "node", node) != 0 ||
        json_put(culprit, "node_source", json_new_str("device assert"))) {
        json_free(node);
        free(name);
        return ENOMEM;
    }
    *changed = 1;
    if (asprintf(&why, "%s%sthe device assert names the graph's node %s", reason ? reason : "", reason ? "; " : "",
                 name) < 0) {
        free(name);
        return ENOMEM;
    }
    free(name);
    if (json_put(verdict, "reason", json_new_str(why))) {
        free(why);
        return ENOMEM;
    }
    free(why);
    return 0;
}

/* verdict "candidates" and exactly one candidate named by an assert: that one becomes the culprit. */
static int asserts_narrow(const struct dev_asserts *as, struct json *doc, int *changed)
{
    struct json *verdict = (struct json *)json_get(doc, "verdict");
    struct json *cands = (struct json *)json_get(doc, "candidates");
    struct json *others, *chosen, *window;
    const char *certainty = json_get_str(verdict, "certainty");
    const char *reason = json_get_str(verdict, "reason");
    char *why = NULL, *fact;
    size_t i, hit = 0;
    long long seq;
    int rc;

    if (!as || !certainty || strcmp(certainty, "candidates") != 0 || !json_is(cands, JSON_ARR))
        return 0;
    switch (asserts_pick(as, cands, &hit, &fact)) {
    case -1: return ENOMEM;
    case 0: return 0;
    }
    chosen = cands->kids[hit];
    rc = asprintf(&why, "%s%s%s", reason ? reason : "", reason ? "; " : "", fact);
    free(fact);
    if (rc < 0)
        return ENOMEM;
    others = json_new(JSON_ARR);
    for (i = 0; others && i < cands->len; i++)
        if (i != hit && json_append(others, cands->kids[i]) != 0) {
            others->len = 0;  /* the launches are still the candidates' */
            json_free(others);
            others = NULL;
        }
    if (!others || json_set(doc, "candidates_before_assert", others) != 0) {
        if (others)
            others->len = 0;
        json_free(others);
        free(why);
        return ENOMEM;
    }
    cands->len = 0;  /* every candidate now belongs to others, except chosen, which is ours */
    *changed = 1;
    if (json_set(doc, "culprit", chosen) != 0) {
        json_free(chosen);
        free(why);
        return ENOMEM;
    }
    seq = json_get_int(chosen, "seq", -1);
    if (json_put(verdict, "certainty", json_new_str("exact")) || json_put(verdict, "reason", json_new_str(why))) {
        free(why);
        return ENOMEM;
    }
    free(why);
    if (promote_extend_history(doc, chosen, others) != 0)
        return ENOMEM;
    if (seq >= 0) {
        /* the window spans the verdict's launches, now just this one */
        window = json_new(JSON_OBJ);
        if (!window || json_put(window, "first", json_new_int(seq)) ||
            json_put(window, "last", json_new_int(seq))) {
            json_free(window);
            return ENOMEM;
        }
        if (json_put(verdict, "window", window))
            return ENOMEM;
    }
    return 0;
}

int asserts_annotate(const struct dev_asserts *as, struct json *doc, int *changed)
{
    struct json *arr;
    size_t i;
    int pass;

    if (!as || as->n == 0 || !json_is(doc, JSON_OBJ))
        return 0;
    arr = json_new(JSON_ARR);
    if (!arr)
        return ENOMEM;
    /* first the asserts that name this report's culprit or candidates, then the rest, each in arrival order */
    for (pass = 1; pass >= 0; pass--)
        for (i = 0; i < as->n; i++) {
            struct json *o;
            if (asserts_relevant(&as->a[i], doc) != pass)
                continue;
            o = asserts_json(&as->a[i]);
            if (!o || json_append(arr, o) != 0) {
                json_free(o);
                json_free(arr);
                return ENOMEM;
            }
        }
    if (json_set(doc, "device_asserts", arr) != 0) {
        json_free(arr);
        return ENOMEM;
    }
    *changed = 1;
    int rc = asserts_narrow(as, doc, changed);
    return rc ? rc : asserts_narrow_node(as, doc, changed);
}
