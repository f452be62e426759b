/* A verdict of candidates settled by the page of the faulting address (faultpage.h). The page is only the page:
 * the allocations it is held against are those within FAULTPAGE_ADJACENT of it on either side (or the freed range
 * holding it), and the verdict changes only when exactly one candidate may have been passed a pointer into them
 * (argmatch.c: a candidate whose recorded parameters do not cover its whole buffer stays possible, so it blocks
 * the narrowing rather than being ruled out). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "faultpage.h"
#include "promote.h"
#include "../report/addr.h"
#include "../report/argmatch.h"
#include "../report/json.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The range a fault_address neighbour ("below", "above", "freed", "in") stands for: a mapping's whole run when it
 * is one, since a pointer into any piece of it reaches the rest. 1 when r was filled. */
static int faultpage_range(const struct json *n, struct argmatch_range *r)
{
    const struct json *run = json_get(n, "mapped_run");
    const char *b = json_get_str(run ? run : n, "base");
    long long size = json_get_int(run ? run : n, "size", -1);
    uint64_t base;
    if (!b || addr_parse(b, &base) != 0 || size <= 0)
        return 0;
    r->base = base;
    r->end = base + (uint64_t)size;
    return 1;
}

int faultpage_narrow(struct json *doc, int *narrowed)
{
    struct json *verdict = (struct json *)json_get(doc, "verdict");
    const struct json *fa = json_get(doc, "fault_address");
    const char *certainty = json_get_str(verdict, "certainty");
    const char *src = json_get_str(fa, "source"), *answer = json_get_str(fa, "answer");
    struct argmatch_range ranges[2];
    const char *how[2];
    long long granule = json_get_int(fa, "granule", 0), d;
    int n = 0;
    *narrowed = 0;
    if (!verdict || !certainty || strcmp(certainty, "candidates") != 0 || !src || strcmp(src, "kernel log") != 0 ||
        !answer || granule <= 0)
        return 0;
    if (!strcmp(answer, "freed") || !strcmp(answer, "inside")) {
        if (faultpage_range(json_get(fa, !strcmp(answer, "freed") ? "freed" : "in"), &ranges[n]))
            how[n++] = !strcmp(answer, "freed") ? "in memory freed before the launch, of the allocation"
                                                : "inside the allocation";
    } else {
        const struct json *below = json_get(fa, "below"), *above = json_get(fa, "above");
        d = json_get_int(below, "past_end", -1);
        if (d >= 0 && (uint64_t)d < FAULTPAGE_ADJACENT && faultpage_range(below, &ranges[n]))
            how[n++] = "just past the end of the allocation";
        d = json_get_int(above, "before_start", -1);
        if (d >= 0 && (uint64_t)d < FAULTPAGE_ADJACENT + (uint64_t)granule && faultpage_range(above, &ranges[n]))
            how[n++] = "just before the start of the allocation";
    }
    struct argmatch_result m;
    if (n == 0 || !argmatch_find(doc, ranges, n, NULL, NULL, &m))
        return 0;
    long long seq = json_get_int(json_at(json_get(doc, "candidates"), m.hit), "seq", -1);
    char *why = NULL;
    if (asprintf(&why,
                 "named by the page of the faulting address: the kernel's log puts the GPU's memory fault in the page "
                 "at %s, %s 0x%llx..0x%llx; launch #%lld's parameter bytes %d..%d hold 0x%llx, which points into it, "
                 "and the arguments of no other candidate do",
                 json_get_str(fa, "address"), how[m.range], (unsigned long long)ranges[m.range].base,
                 (unsigned long long)ranges[m.range].end, seq, m.word * 8, m.word * 8 + 7,
                 (unsigned long long)m.value) < 0)
        return ENOMEM;
    int rc = promote_because(doc, m.hit, "candidates_before_fault_page", "fault page", why);
    free(why);
    if (rc)
        return rc == ENOMEM ? ENOMEM : 0;
    *narrowed = 1;
    return 0;
}
