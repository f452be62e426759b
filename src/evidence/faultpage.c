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
#include "../render/addr.h"
#include "../render/argmatch.h"
#include "../render/json.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int faultpage_narrow(struct json *doc, int *narrowed)
{
    struct json *verdict = (struct json *)json_get(doc, "verdict");
    const struct json *fa = json_get(doc, "fault_address");
    const char *certainty = json_get_str(verdict, "certainty");
    const char *src = json_get_str(fa, "source"), *at = json_get_str(fa, "address");
    struct argmatch_range ranges[2];
    const char *how[2];
    long long granule = json_get_int(fa, "granule", 0);
    struct addr_answer a;
    uint64_t page;
    int n = 0;
    *narrowed = 0;
    if (!verdict || !certainty || strcmp(certainty, "candidates") != 0 || !src || strcmp(src, "kernel log") != 0 ||
        granule <= 0 || !at || addr_parse(at, &page) != 0)
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
    struct argmatch_result m;
    if (n == 0 || !argmatch_find(doc, ranges, n, NULL, NULL, &m))
        return 0;
    long long seq = json_get_int(json_at(json_get(doc, "candidates"), m.hit), "seq", -1);
    char *why = NULL;
    if (asprintf(&why,
                 "named by the page of the faulting address: the kernel's log puts the GPU's memory fault in the page "
                 "at %s, %s 0x%llx..0x%llx; launch #%lld's parameter bytes %d..%d hold 0x%llx, which points into it, "
                 "and the arguments of no other candidate do",
                 at, how[m.range], (unsigned long long)ranges[m.range].base, (unsigned long long)ranges[m.range].end,
                 seq, m.word * 8, m.word * 8 + 7, (unsigned long long)m.value) < 0)
        return ENOMEM;
    int rc = promote_because(doc, m.hit, "candidates_before_fault_page", "fault page", why);
    free(why);
    if (rc)
        return rc == ENOMEM ? ENOMEM : 0;
    *narrowed = 1;
    return 0;
}
