/* Device-assert lines: parsing what the device printed ("FILE:LINE: KERNEL: block: [x,y,z], thread: [x,y,z]
 * Assertion `EXPR` failed."), and tying the asserts a run printed to its reports: they are added to each report,
 * and a verdict of candidates is narrowed to the one launch the asserts single out (by the kernel's name, or for
 * Triton's form by the @triton.jit function its file holds at that line; by block and thread indices that must
 * fit the launch's grid and block; and by the source file), a graph launch by the kernels captured into it. The
 * relaying of the output the lines come from is watch.c's. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "asserts.h"
#include "../cli/cli.h"
#include "promote.h"
#include "stages.h"
#include "../cli/watch.h"
#include "tritonsrc.h"
#include "../base/demangle.h"
#include "../base/jsonw.h"
#include "../render/json.h"
#include "../render/render.h"
#include "../render/report_keys.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void asserts_free_one(struct dev_assert *a)
{
    free(a->file);
    free(a->kernel);
    free(a->expr);
    free(a->function);
    free(a->kernels);
    free(a->unfound);
    memset(a, 0, sizeof *a);
}

/* Triton's and Inductor's tl.device_assert print `unknown` where the kernel's name goes. */
static int asserts_triton_form(const struct dev_assert *a)
{
    return strcmp(a->kernel, "unknown") == 0;
}

/* An assert in Triton's form: the function its file holds at its line, from an earlier assert of the same line
 * or from the file. A file name that cannot be opened may carry a log prefix ("[rank1]: /path/k.py"): then the
 * name after its last blank is tried as well. */
static void asserts_lookup(const struct dev_asserts *as, struct dev_assert *a)
{
    struct tritonsrc_found f;
    char why[256];
    const char *blank;
    size_t i;
    int rc;

    for (i = 0; i < as->n; i++) {
        const struct dev_assert *o = &as->a[i];
        if (o->line != a->line || strcmp(o->file, a->file) != 0 || !asserts_triton_form(o))
            continue;
        a->function = o->function ? strdup(o->function) : NULL;
        a->kernels = o->kernels ? strdup(o->kernels) : NULL;
        a->unfound = o->unfound ? strdup(o->unfound) : NULL;
        if (!a->function != !a->kernels) { /* out of memory: the assert is read by its indices alone */
            free(a->function);
            free(a->kernels);
            a->function = a->kernels = NULL;
        }
        return;
    }
    rc = tritonsrc_find(a->file, a->line, &f, why, sizeof why);
    if (rc != 0 && rc != ENOMEM && (blank = strrchr(a->file, ' ')) != NULL && blank[1]) {
        char first[256];
        snprintf(first, sizeof first, "%s", why);
        if ((rc = tritonsrc_find(blank + 1, a->line, &f, why, sizeof why)) == ENOENT)
            snprintf(why, sizeof why, "%s", first);
    }
    if (rc == 0) {
        a->function = f.function;
        a->kernels = f.kernels;
    } else if (rc != ENOMEM) {
        a->unfound = strdup(why);
    }
}

void asserts_add(struct dev_asserts *as, const char *line, size_t len, const char *stream)
{
    struct dev_assert a;
    if (asserts_parse(line, len, &a) != 0)
        return;
    as->seen++;
    if (as->n >= ASSERTS_MAX) {
        asserts_free_one(&a);
        return;
    }
    a.stream = stream;
    if (asserts_triton_form(&a))
        asserts_lookup(as, &a);
    as->a[as->n++] = a;
}

void asserts_free(struct dev_asserts *as)
{
    size_t i;
    for (i = 0; i < as->n; i++)
        asserts_free_one(&as->a[i]);
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
    char *copy = strndup(text, len); /* NUL-terminated, so the string functions below stay inside it */
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

#define ASSERTS_GRAPH_NODES 64 /* graph_nodes a report lists at most: a list this long may have been cut */

/* How an assert names the kernel it came from. */
enum asserts_how {
    ASSERTS_SIGNATURE, /* by the kernel's signature, as the device printed it */
    ASSERTS_FUNCTION,  /* Triton's form: by the @triton.jit function its file holds at its line */
    ASSERTS_INDICES,   /* not at all: "operator()" (a lambda), `unknown` that the file did not explain */
};

static enum asserts_how asserts_how(const struct dev_assert *a)
{
    const char *s;
    size_t n;
    if (a->function)
        return ASSERTS_FUNCTION;
    n = demangle_base_name(a->kernel, &s);
    if (n == 0 || (n == 8 && memcmp(s, "operator", 8) == 0) || asserts_triton_form(a))
        return ASSERTS_INDICES;
    return ASSERTS_SIGNATURE;
}

/* The launch's kernel name in readable form (malloc'd), or NULL. */
static char *asserts_launch_name(const struct json *launch)
{
    const char *k = json_get_str(launch, RK_KERNEL);
    const char *m = json_get_str(launch, RK_MANGLED);
    char *d;
    if (k && *k && strncmp(k, "_Z", 2) != 0)
        return strdup(k);
    if ((d = demangle_name(m ? m : k)) != NULL)
        return d;
    if (k && *k)
        return strdup(k);
    return m && *m ? strdup(m) : NULL;
}

static int asserts_is_graph(const struct json *launch)
{
    const char *kind = json_get_str(launch, RK_KIND);
    return kind && strcmp(kind, "graph") == 0;
}

/* Whether the launch's grid and block can hold the assert's block and thread indices; a launch without them
 * cannot rule anything out. */
static int asserts_fit_dims(const struct dev_assert *a, const struct json *launch)
{
    const struct json *grid = json_get(launch, RK_GRID), *block = json_get(launch, RK_BLOCK);
    long long g[3], b[3];
    int i;
    if (json_len(grid) != 3 || json_len(block) != 3)
        return 1;
    for (i = 0; i < 3; i++)
        if (json_int(json_at(grid, i), &g[i]) != 0 || json_int(json_at(block, i), &b[i]) != 0 || g[i] <= 0 || b[i] <= 0)
            return 1;
    for (i = 0; i < 3; i++)
        if (a->block[i] >= g[i] || a->thread[i] >= b[i])
            return 0;
    return 1;
}

/* Whether the kernel name name (readable) is one that assert a names: the same bare name as the signature the
 * device printed, or (Triton's form) that of one of the functions a->kernels lists. 0 for an assert that names
 * no kernel. */
static int asserts_same_name(const struct dev_assert *a, const char *name)
{
    const char *base, *p;
    size_t n;
    switch (asserts_how(a)) {
    case ASSERTS_SIGNATURE:
        return demangle_same_kernel(name, a->kernel);
    case ASSERTS_FUNCTION:
        n = demangle_base_name(name, &base);
        for (p = a->kernels; n && *p;) {
            const char *e = strchr(p, ' ');
            size_t m = e ? (size_t)(e - p) : strlen(p);
            char *one = strndup(p, m);
            int same = one && tritonsrc_same_kernel(base, n, one);
            free(one);
            if (same)
                return 1;
            p += m + (e != NULL);
        }
        return 0;
    default:
        return 0;
    }
}

/* Whether assert a may come from a kernel launch (not a graph launch): indices that fit its grid and block, and
 * its name where the assert names one. *by_name tells whether the name took part. */
static int asserts_fit_kernel(const struct dev_assert *a, const struct json *launch, int *by_name)
{
    char *name;
    int same;
    *by_name = asserts_how(a) != ASSERTS_INDICES;
    if (!asserts_fit_dims(a, launch))
        return 0;
    if (!*by_name)
        return 1;
    name = asserts_launch_name(launch);
    same = name && asserts_same_name(a, name);
    free(name);
    return same;
}

/* Whether assert a may come from launch: 1 when it fits (a graph launch: when it fits one of the kernels captured
 * into the graph), 0 when it cannot, 2 for a graph launch whose kernels are not all known (none listed, or as
 * many as a report lists at most): it cannot be ruled out, nor singled out. *by_name tells whether a name took
 * part in a fit. */
static int asserts_consistent(const struct dev_assert *a, const struct json *launch, int *by_name)
{
    const struct json *nodes = json_get(launch, RK_GRAPH_NODES);
    size_t i, n = json_len(nodes);
    int fits = 0, bn;
    if (!asserts_is_graph(launch))
        return asserts_fit_kernel(a, launch, by_name);
    *by_name = 0;
    if (!json_is(nodes, JSON_ARR) || n == 0 || n >= ASSERTS_GRAPH_NODES)
        return 2;
    for (i = 0; i < n; i++)
        if (asserts_fit_kernel(a, json_at(nodes, i), &bn)) {
            fits = 1;
            *by_name |= bn;
        }
    return fits;
}

#define ASSERTS_WORDS 8 /* words taken from a source file's name */

/* The words of a source file's name that the kernels defined there tend to carry ("ScatterGatherKernel.cu":
 * scatter, gather; "nll_loss2d.cu": nll, loss), lower case, without the generic ones. Returns how many. */
static int asserts_file_words(const char *file, char words[ASSERTS_WORDS][32])
{
    static const char *const generic[] = {"kernel", "kernels", "cuda", "impl",   "utils",  "ops",
                                          "native", "aten",    "src",  "common", "device", "launch"};
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

/* Whether the launch's kernel name (mangled and readable) carries every word of the assert's source file. Only
 * for a lambda's assert ("operator()"): the kernels of Triton's files need not carry their names (Inductor's
 * files are named by a hash). */
static int asserts_mentions_file(const struct dev_assert *a, const struct json *launch)
{
    char words[ASSERTS_WORDS][32], *lower = NULL;
    const char *m = json_get_str(launch, RK_MANGLED), *k = json_get_str(launch, RK_KERNEL);
    int n, i, all;
    if (asserts_triton_form(a) || asserts_is_graph(launch))
        return 0;
    n = asserts_file_words(a->file, words);
    all = n > 0;
    if (!all || asprintf(&lower, "%s %s", m ? m : "", k ? k : "") < 0)
        return 0;
    for (char *c = lower; *c; c++)
        *c = (char)tolower((unsigned char)*c);
    for (i = 0; i < n && all; i++)
        all = strstr(lower, words[i]) != NULL;
    free(lower);
    return all;
}

/* Whether some assert's name alone (whatever the indices) also matches a launch of arr other than hit (a graph
 * launch: one of its kernels): then the block and thread indices are what singled hit out. */
static int asserts_narrowed_by_dims(const struct dev_asserts *as, const struct json *arr, size_t hit)
{
    size_t i, j, k;
    for (i = 0; i < json_len(arr); i++) {
        const struct json *l = json_at(arr, i), *nodes = json_get(l, RK_GRAPH_NODES);
        int same = 0;
        if (i == hit || !json_is(l, JSON_OBJ))
            continue;
        for (k = 0; !same && k < (asserts_is_graph(l) ? json_len(nodes) : 1); k++) {
            char *name = asserts_launch_name(asserts_is_graph(l) ? json_at(nodes, k) : l);
            for (j = 0; name && !same && j < as->n; j++)
                same = asserts_same_name(&as->a[j], name);
            free(name);
        }
        if (same)
            return 1;
    }
    return 0;
}

/* The sentence saying why launch l (arr[hit]) alone may have printed assert by: how the assert names a kernel
 * and, when names alone do not tell the launches of arr apart, its indices. Returns it malloc'd, or NULL. */
static char *asserts_why(const struct dev_asserts *as, const struct dev_assert *by, const struct json *arr, size_t hit)
{
    const struct json *l = json_at(arr, hit);
    long long seq = json_get_int(l, RK_SEQ, -1);
    char *name = asserts_launch_name(l), *what = NULL, *why = NULL, dims[160];
    enum asserts_how how = asserts_how(by);
    int graph = asserts_is_graph(l), rc;

    snprintf(dims, sizeof dims, "block [%ld,%ld,%ld] and thread [%ld,%ld,%ld]", by->block[0], by->block[1],
             by->block[2], by->thread[0], by->thread[1], by->thread[2]);
    if (!name)
        return NULL;
    if (how == ASSERTS_SIGNATURE) {
        const char *base;
        size_t n = demangle_base_name(by->kernel, &base);
        rc = graph ? asprintf(&what, "the device assert names %.*s", (int)n, base)
                   : asprintf(&what, "the device assert names %s", name);
    } else if (how == ASSERTS_FUNCTION) {
        rc = asprintf(&what, "the device assert at %s:%ld is in the @triton.jit function %s", by->file, by->line,
                      by->function);
    } else {
        rc = asprintf(&what, "the device assert from %s (in %s) has %s", by->file, by->kernel, dims);
    }
    if (rc < 0) {
        free(name);
        return NULL;
    }
    if (graph)
        rc = asprintf(&why, "%s, and of these launches only graph launch #%lld replays a kernel that fits it", what,
                      seq);
    else if (how == ASSERTS_INDICES)
        rc = asprintf(&why, "%s, which fit the grid and block of launch #%lld alone%s%s%s", what, seq,
                      by->unfound ? " (its file did not tell its kernel: " : "", by->unfound ? by->unfound : "",
                      by->unfound ? ")" : "");
    else if (asserts_narrowed_by_dims(as, arr, hit))
        rc = asprintf(&why, "%s, and its %s fit the grid and block of launch #%lld alone", what, dims, seq);
    else if (how == ASSERTS_SIGNATURE)
        rc = asprintf(&why, "%s", what);
    else {
        const char *base;
        size_t n = demangle_base_name(name, &base);
        rc = tritonsrc_same_kernel(base, n, by->function)
                 ? asprintf(&why, "%s, which launch #%lld alone runs", what, seq)
                 : asprintf(&why, "%s, which launch #%lld alone runs (its kernel %s calls it)", what, seq, name);
    }
    free(what);
    free(name);
    return rc < 0 ? NULL : why;
}

/* The one launch of arr the asserts single out, in *hit, with the sentence saying why in *why (malloc'd).
 * First by every fact an assert carries (name, indices, a graph's kernels); when asserts that name no kernel
 * leave several, by their source file's name against the kernels' names. Returns 1 when exactly one is singled
 * out, 0 when not, -1 when out of memory. Never picks a launch the facts do not single out: a graph launch whose
 * kernels are not known counts among those an assert may come from, but is never picked. */
static int asserts_pick(const struct dev_asserts *as, const struct json *arr, size_t *hit, char **why)
{
    size_t i, j, hits = 0, file_hits = 0, file_hit = 0;
    const struct dev_assert *by = NULL, *file_by = NULL;
    int state = 0, generic_only = 1, named_any = 0, graphs = 0;
    char *name;

    *why = NULL;
    for (i = 0; i < json_len(arr); i++) {
        const struct json *l = json_at(arr, i);
        const struct dev_assert *by_here = NULL;
        int here = 0, file_here = 0;
        if (!json_is(l, JSON_OBJ))
            continue;
        for (j = 0; j < as->n; j++) {
            int by_name, c = asserts_consistent(&as->a[j], l, &by_name);
            if (!c)
                continue;
            here = here == 1 || c == 1 ? 1 : 2;
            if (c != 1)
                continue;
            if (!by_here)
                by_here = &as->a[j];
            generic_only &= !by_name;
            named_any |= by_name;
            if (!by_name && !file_here && asserts_mentions_file(&as->a[j], l)) {
                file_here = 1;
                file_by = &as->a[j];
            }
        }
        if (here) {
            hits++;
            *hit = i;
            state = here;
            by = by_here;
            graphs += asserts_is_graph(l);
        }
        if (file_here) {
            file_hits++;
            file_hit = i;
        }
    }
    if (hits == 1 && state == 1)
        return (*why = asserts_why(as, by, arr, *hit)) != NULL ? 1 : -1;
    if (hits > 1 && generic_only && !named_any && !graphs && file_hits == 1) {
        *hit = file_hit;
        name = asserts_launch_name(json_at(arr, *hit));
        if (!name || asprintf(why,
                              "the device assert comes from %s (in %s) and of the launches its block and "
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

/* Appends to seqs the launch number of l when assert a fits it (a graph launch: of each captured kernel it
 * fits). Returns 0 or ENOMEM. */
static int asserts_fitting_seqs(const struct dev_assert *a, const struct json *l, struct json *seqs)
{
    const struct json *nodes = json_get(l, RK_GRAPH_NODES);
    size_t i, k, n = asserts_is_graph(l) ? json_len(nodes) : 1;
    for (i = 0; json_is(l, JSON_OBJ) && i < n; i++) {
        const struct json *kernel = asserts_is_graph(l) ? json_at(nodes, i) : l;
        long long seq = json_get_int(kernel, RK_SEQ, -1), old;
        int by_name, dup = 0;
        struct json *v;
        if (seq < 0 || !asserts_fit_kernel(a, kernel, &by_name))
            continue;
        for (k = 0; k < json_len(seqs); k++)
            dup |= json_int(json_at(seqs, k), &old) == 0 && old == seq;
        if (dup)
            continue;
        v = json_new_int(seq);
        if (json_append(seqs, v) != 0) {
            json_free(v);
            return ENOMEM;
        }
    }
    return 0;
}

/* An assert as the report keeps it, with the launch numbers of the report's culprit and candidates (and of the
 * kernels captured into their graphs) it fits as the report reads it (eff: asserts_effective), in "launches". */
static struct json *asserts_json(const struct dev_assert *a, const struct dev_assert *eff, const struct json *doc)
{
    struct json *o = json_new(JSON_OBJ), *seqs = json_new(JSON_ARR), *callers = NULL;
    const struct json *cands = json_get(doc, RK_CANDIDATES);
    size_t j;
    int rc = !o || !seqs;

    if (!rc &&
        (json_put(o, RK_FILE, json_new_str(a->file)) || json_put(o, RK_LINE, json_new_int(a->line)) ||
         json_put(o, RK_KERNEL, json_new_str(a->kernel)) || json_put(o, RK_BLOCK, asserts_triple_json(a->block)) ||
         json_put(o, RK_THREAD, asserts_triple_json(a->thread)) || json_put(o, RK_ASSERTION, json_new_str(a->expr)) ||
         json_put(o, RK_STREAM, json_new_str(a->stream))))
        rc = 1;
    if (!rc && a->function) {
        const char *p = strchr(a->kernels, ' ');
        rc = json_put(o, RK_FUNCTION, json_new_str(a->function));
        if (!rc && p) {
            rc = !(callers = json_new(JSON_ARR));
            while (!rc && p && *++p) {
                const char *e = strchr(p, ' ');
                char *one = strndup(p, e ? (size_t)(e - p) : strlen(p));
                struct json *s = one ? json_new_str(one) : NULL;
                free(one);
                if (!s || json_append(callers, s) != 0) {
                    json_free(s);
                    rc = 1;
                }
                p = e;
            }
            if (!rc && json_set(o, RK_INLINED_INTO, callers) == 0)
                callers = NULL;
            else
                rc = 1;
        }
    }
    if (!rc && a->unfound)
        rc = json_put(o, RK_FUNCTION_UNKNOWN, json_new_str(a->unfound));
    for (j = 0; !rc && j <= json_len(cands); j++)
        rc = asserts_fitting_seqs(eff, j == 0 ? json_get(doc, RK_CULPRIT) : json_at(cands, j - 1), seqs);
    if (!rc && json_set(o, RK_LAUNCHES, seqs) == 0)
        seqs = NULL;
    else
        rc = 1;
    json_free(callers);
    json_free(seqs);
    if (rc) {
        json_free(o);
        return NULL;
    }
    return o;
}

/* Whether assert a may come from the culprit or one of the candidates. */
static int asserts_relevant(const struct dev_assert *a, const struct json *doc)
{
    const struct json *cands = json_get(doc, RK_CANDIDATES);
    size_t j;
    int by_name;
    for (j = 0; j <= json_len(cands); j++) {
        const struct json *l = j == 0 ? json_get(doc, RK_CULPRIT) : json_at(cands, j - 1);
        if (json_is(l, JSON_OBJ) && asserts_consistent(a, l, &by_name))
            return 1;
    }
    return 0;
}

/* Appends "; " and more to the verdict's reason (or makes it the reason). Returns 0 or ENOMEM. */
static int asserts_add_reason(struct json *verdict, const char *more)
{
    const char *reason = json_get_str(verdict, RK_REASON);
    char *why = NULL;
    if (asprintf(&why, "%s%s%s", reason ? reason : "", reason ? "; " : "", more) < 0)
        return ENOMEM;
    if (json_put(verdict, RK_REASON, json_new_str(why))) {
        free(why);
        return ENOMEM;
    }
    free(why);
    return 0;
}

/* The culprit is a graph launch and the asserts single out one of the kernels captured into that graph:
 * that node goes into culprit.node (the graph launch stays the culprit: it is what the stream ran). */
static int asserts_narrow_node(const struct dev_asserts *as, struct json *doc, int *changed)
{
    struct json *culprit = (struct json *)json_get(doc, RK_CULPRIT);
    struct json *verdict = (struct json *)json_get(doc, RK_VERDICT);
    const struct json *nodes = json_get(culprit, RK_GRAPH_NODES);
    size_t hit = 0;
    struct json *node;
    char *name, *why = NULL;
    int rc;

    if (!as || !asserts_is_graph(culprit) || !json_is(nodes, JSON_ARR) || json_get(culprit, RK_NODE))
        return 0; /* the library already named the node from the graph's breadcrumbs */
    switch (asserts_pick(as, nodes, &hit, &why)) {
    case -1:
        return ENOMEM;
    case 0:
        return 0;
    }
    free(why); /* a node's reason says it in its own words */
    why = NULL;
    node = promote_copy(json_at(nodes, hit));
    name = asserts_launch_name(json_at(nodes, hit));
    if (!node || !name || json_set(culprit, RK_NODE, node) != 0 ||
        json_put(culprit, RK_NODE_SOURCE, json_new_str("device assert"))) {
        json_free(node);
        free(name);
        return ENOMEM;
    }
    *changed = 1;
    if (asprintf(&why, "the device assert names the graph's node #%lld %s", json_get_int(node, RK_SEQ, -1), name) < 0) {
        free(name);
        return ENOMEM;
    }
    free(name);
    rc = asserts_add_reason(verdict, why);
    free(why);
    return rc;
}

/* A verdict of candidates that the asserts did not narrow: when an assert of Triton's form that may come from
 * one of them did not get its kernel from its file, the reason says why (once). */
static int asserts_say_unfound(const struct dev_asserts *as, struct json *doc, int *changed)
{
    size_t i;
    for (i = 0; i < as->n; i++) {
        const struct dev_assert *a = &as->a[i];
        char *more = NULL;
        int rc;
        if (!a->unfound || !asserts_relevant(a, doc))
            continue;
        if (asprintf(&more,
                     "the device assert at %s:%ld prints no kernel name (`unknown`, as Triton's do) and "
                     "its file did not tell it: %s",
                     a->file, a->line, a->unfound) < 0)
            return ENOMEM;
        rc = asserts_add_reason((struct json *)json_get(doc, RK_VERDICT), more);
        free(more);
        *changed = 1;
        return rc;
    }
    return 0;
}

/* verdict "candidates" and exactly one candidate named by an assert: that one becomes the culprit (promote.c),
 * the others go to candidates_before_assert, and the reason says which facts did it. */
static int asserts_narrow(const struct dev_asserts *as, struct json *doc, int *changed)
{
    struct json *verdict = (struct json *)json_get(doc, RK_VERDICT);
    const struct json *cands = rk_candidates(doc);
    char *fact;
    size_t hit = 0;
    int rc;

    if (!as || !rk_is_candidates(doc) || !json_is(cands, JSON_ARR))
        return 0;
    switch (asserts_pick(as, cands, &hit, &fact)) {
    case -1:
        return ENOMEM;
    case 0:
        return asserts_say_unfound(as, doc, changed);
    }
    *changed = 1;
    rc = promote_candidate(doc, hit, RK_CANDIDATES_BEFORE_ASSERT);
    if (!rc)
        rc = asserts_add_reason(verdict, fact);
    free(fact);
    return rc;
}

/* Whether some launch of the report (culprit, candidates, the kernels captured into their graphs) has a name that
 * assert a names. */
static int asserts_named_in(const struct dev_assert *a, const struct json *doc)
{
    const struct json *cands = json_get(doc, RK_CANDIDATES);
    size_t j, k;
    for (j = 0; j <= json_len(cands); j++) {
        const struct json *l = j == 0 ? json_get(doc, RK_CULPRIT) : json_at(cands, j - 1);
        const struct json *nodes = json_get(l, RK_GRAPH_NODES);
        for (k = 0; json_is(l, JSON_OBJ) && k < (asserts_is_graph(l) ? json_len(nodes) : 1); k++) {
            char *name = asserts_launch_name(asserts_is_graph(l) ? json_at(nodes, k) : l);
            int same = name && asserts_same_name(a, name);
            free(name);
            if (same)
                return 1;
        }
    }
    return 0;
}

/* The asserts as this report reads them: one of Triton's form whose function no launch of the report runs by
 * that name counts by its indices, as when its file told nothing (the driver may name the kernel otherwise, or
 * the function may be a helper inlined into a kernel of another file). A copy sharing as's texts, but for the
 * sentences it makes (free them with asserts_effective_free); NULL when out of memory. */
static struct dev_asserts *asserts_effective(const struct dev_asserts *as, const struct json *doc)
{
    struct dev_asserts *eff = malloc(sizeof *eff);
    size_t i;
    if (!eff)
        return NULL;
    *eff = *as;
    for (i = 0; i < as->n; i++) {
        struct dev_assert *a = &eff->a[i];
        if (!a->function || asserts_named_in(a, doc))
            continue;
        if (asprintf(&a->unfound, "line %ld is in %s, which no launch listed runs under that name", a->line,
                     a->function) < 0)
            a->unfound = NULL;
        a->function = a->kernels = NULL;
    }
    return eff;
}

static void asserts_effective_free(const struct dev_asserts *as, struct dev_asserts *eff)
{
    size_t i;
    for (i = 0; eff && i < eff->n; i++)
        if (eff->a[i].unfound != as->a[i].unfound)
            free(eff->a[i].unfound);
    free(eff);
}

int asserts_annotate(const struct dev_asserts *as, struct json *doc, int *changed)
{
    struct dev_asserts *eff;
    struct json *arr;
    size_t i;
    int pass, rc = 0;

    if (!as || as->n == 0 || !json_is(doc, JSON_OBJ))
        return 0;
    arr = json_new(JSON_ARR);
    eff = asserts_effective(as, doc);
    if (!arr || !eff) {
        json_free(arr);
        free(eff);
        return ENOMEM;
    }
    /* first the asserts that name this report's culprit or candidates, then the rest, each in arrival order */
    for (pass = 1; !rc && pass >= 0; pass--)
        for (i = 0; !rc && i < as->n; i++) {
            struct json *o;
            if (asserts_relevant(&eff->a[i], doc) != pass)
                continue;
            o = asserts_json(&as->a[i], &eff->a[i], doc);
            if (!o || json_append(arr, o) != 0) {
                json_free(o);
                rc = ENOMEM;
            }
        }
    if (!rc && json_set(doc, RK_DEVICE_ASSERTS, arr) != 0)
        rc = ENOMEM;
    if (rc) {
        json_free(arr);
        asserts_effective_free(as, eff);
        return rc;
    }
    *changed = 1;
    rc = asserts_narrow(eff, doc, changed);
    if (!rc)
        rc = asserts_narrow_node(eff, doc, changed);
    asserts_effective_free(as, eff);
    return rc;
}

int asserts_note_none(struct json *doc, int *changed)
{
    const char *kind = json_get_str(doc, RK_KIND);
    struct json *arr;

    if (!json_is(doc, JSON_OBJ) || (kind && strcmp(kind, "fault") != 0) || rk_error_code(doc, 0) != RK_ERROR_ASSERT ||
        json_get(doc, RK_DEVICE_ASSERTS))
        return 0;
    arr = json_new(JSON_ARR);
    if (!arr || json_set(doc, RK_DEVICE_ASSERTS, arr) != 0) {
        json_free(arr);
        return ENOMEM;
    }
    *changed = 1;
    return 0;
}

/* The report stage: the device asserts the watch saw, tied to the report; or, when the watch read all of the
 * command's output and saw no assert line, an empty device_asserts on a device assert's report. */
enum ev_next asserts_stage(struct ev_ctx *c)
{
    int added = 0;
    int rc = asserts_annotate(c->w ? &c->w->asserts : NULL, c->doc, &added);
    if (!rc && c->w && c->w->asserts.seen == 0 && watch_covers_output(c->w))
        rc = asserts_note_none(c->doc, &added);
    if (added)
        c->changed = 1;
    return rc != 0 ? EV_NOMEM : EV_NEXT;
}
