/* The answer for a faulting address (see addr.h). Ranges are judged as they stood when the faulting launch was
 * made: a range allocated before it and not freed before it was live for that kernel; one freed before it is a
 * use after free; one allocated only after it cannot be what the kernel meant. A range's "seq" and "freed_seq" are
 * the last launch numbers handed out when it was allocated and freed, so launch M was made after the allocation
 * when seq < M and before the free when M <= freed_seq. Without an exact culprit the table is taken as it was when
 * the report was written. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "addr.h"
#include "addr_int.h"
#include "json.h"
#include "render_int.h"
#include "report_keys.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int addr_parse(const char *text, uint64_t *out)
{
    const char *p = text;
    char *end = NULL;
    unsigned long long v;
    if (!p)
        return -1;
    while (*p == ' ' || *p == '\t')
        p++;
    if (*p == '-' || *p == '+' || *p == '\0')
        return -1;
    errno = 0;
    v = strtoull(p, &end, (p[0] == '0' && (p[1] == 'x' || p[1] == 'X')) ? 16 : 10);
    if (errno || end == p || (p[0] == '0' && (p[1] == 'x' || p[1] == 'X') && end == p + 2))
        return -1;
    while (*end == ' ' || *end == '\t')
        end++;
    if (*end)
        return -1;
    *out = (uint64_t)v;
    return 0;
}

/* An address field: a hex string as the library writes them, or a non-negative integral number. */
int addr_field(const struct json *obj, const char *key, uint64_t *out)
{
    const struct json *v = json_get(obj, key);
    long long n;
    if (json_is(v, JSON_STR))
        return addr_parse(json_str(v), out);
    if (json_int(v, &n) == 0 && n >= 0) {
        *out = (uint64_t)n;
        return 0;
    }
    return -1;
}

/* Reads range r of the table; -1 when it lacks a base or a size (it is then left out). */
static int addr_read_range(const struct json *r, struct addr_range *out)
{
    long long size, freed;
    memset(out, 0, sizeof *out);
    if (!json_is(r, JSON_OBJ) || addr_field(r, RK_BASE, &out->base) != 0 ||
        json_int(json_get(r, RK_SIZE), &size) != 0 || size <= 0)
        return -1;
    out->obj = r;
    out->size = (uint64_t)size;
    out->seq = json_get_int(r, RK_SEQ, 0);
    out->freed_seq = json_int(json_get(r, RK_FREED_SEQ), &freed) == 0 && freed >= 0 ? freed : -1;
    return 0;
}

static int addr_holds(const struct addr_range *r, uint64_t a)
{
    return a >= r->base && a - r->base < r->size;
}

int addr_is_kind(const struct addr_range *r, const char *kind)
{
    const char *k = json_get_str(r->obj, RK_KIND);
    return k && strcmp(k, kind) == 0;
}

/* Whether range r was live when launch fault_seq was made (fault_seq < 0: when the report was written). */
static int addr_live(const struct addr_range *r, long long fault_seq)
{
    if (fault_seq < 0)
        return r->freed_seq < 0;
    return r->seq < fault_seq && (r->freed_seq < 0 || r->freed_seq >= fault_seq);
}

void addr_reach(const struct addr_range *r, uint64_t *base, uint64_t *end)
{
    *base = r->run_pieces ? r->run_base : r->base;
    *end = *base + (r->run_pieces ? r->run_size : r->size);
}

/* The mappings live at the fault that adjoin r, as one run (for a mapping; nothing for other kinds). */
static void addr_run(const struct json *ranges, long long fault_seq, struct addr_range *r)
{
    int grew = 1;
    if (!r->obj || !addr_is_kind(r, "vm"))
        return;
    r->run_base = r->base;
    r->run_size = r->size;
    r->run_pieces = 1;
    while (grew) {
        grew = 0;
        for (size_t i = 0; i < json_len(ranges); i++) {
            struct addr_range m;
            if (addr_read_range(json_at(ranges, i), &m) || !addr_is_kind(&m, "vm") || !addr_live(&m, fault_seq))
                continue;
            if (m.base + m.size == r->run_base) {
                r->run_base = m.base;
                r->run_size += m.size;
            } else if (m.base == r->run_base + r->run_size) {
                r->run_size += m.size;
            } else {
                continue;
            }
            r->run_pieces++;
            grew = 1;
        }
    }
}

void addr_answer(const struct json *doc, uint64_t address, uint64_t access, struct addr_answer *a)
{
    const struct json *culprit = json_get(doc, RK_CULPRIT);
    addr_answer_at(doc, address, access, json_is(culprit, JSON_OBJ) ? json_get_int(culprit, RK_SEQ, -1) : -1, a);
}

void addr_answer_at(const struct json *doc, uint64_t address, uint64_t access, long long seq, struct addr_answer *a)
{
    const struct json *table = json_get(doc, RK_ALLOCATIONS);
    const struct json *ranges = json_get(table, RK_RANGES);
    uint64_t x = address;
    size_t i;

    memset(a, 0, sizeof *a);
    a->address = address;
    a->access = access;
    a->fault_seq = seq < 0 ? -1 : seq;
    a->where = ADDR_NO_TABLE;
    if (!json_is(table, JSON_OBJ) || !json_is(ranges, JSON_ARR))
        return;
    a->nranges = json_len(ranges);
    a->forgotten = json_get_int(table, RK_FORGOTTEN, 0);
    a->not_recorded = json_get_int(table, RK_NOT_RECORDED, 0);

    for (i = 0; i < json_len(ranges); i++) {
        struct addr_range r;
        if (addr_read_range(json_at(ranges, i), &r))
            continue;
        int live = addr_live(&r, a->fault_seq), holds = addr_holds(&r, x);
        if (addr_is_kind(&r, "reserved")) {
            if (live && holds)
                a->reserved = r; /* reservations do not overlap; a later one replaces a freed one */
            continue;
        }
        if (live) {
            if (holds) {
                if (!a->in.obj || r.seq >= a->in.seq)
                    a->in = r;
            } else if (r.base + r.size <= x) {
                if (!a->below.obj || r.base + r.size > a->below.base + a->below.size)
                    a->below = r;
            } else if (!a->above.obj || r.base < a->above.base) {
                a->above = r;
            }
        } else if (holds && r.freed_seq >= 0 && (a->fault_seq < 0 || r.freed_seq < a->fault_seq)) {
            if (a->freed.obj)
                a->freed_others++;
            if (!a->freed.obj || r.freed_seq >= a->freed.freed_seq)
                a->freed = r;
        } else if (holds && a->fault_seq >= 0 && r.seq >= a->fault_seq) {
            if (!a->later.obj || r.seq < a->later.seq)
                a->later = r;
        }
    }
    if (a->below.obj && x - (a->below.base + a->below.size) > ADDR_NEAR)
        memset(&a->below, 0, sizeof a->below);
    if (a->above.obj && a->above.base - x > ADDR_NEAR)
        memset(&a->above, 0, sizeof a->above);
    addr_run(ranges, a->fault_seq, &a->in);
    addr_run(ranges, a->fault_seq, &a->below);
    addr_run(ranges, a->fault_seq, &a->above);

    if (a->in.obj) {
        /* a live holder is the answer; ranges freed at that address before it are history */
        memset(&a->freed, 0, sizeof a->freed);
        a->freed_others = 0;
    }
    if (a->in.obj)
        a->where = access && (access > a->in.size || x - a->in.base > a->in.size - access) ? ADDR_OVERRUN : ADDR_INSIDE;
    else if (a->freed.obj && a->below.obj && a->below.base == a->freed.base)
        a->where = ADDR_OUTSIDE; /* the freed range's address was handed out again, shorter: the same pointer */
    else if (a->freed.obj)
        a->where = ADDR_FREED;
    else if (a->reserved.obj)
        a->where = ADDR_UNMAPPED;
    else if (a->below.obj || a->above.obj)
        a->where = ADDR_OUTSIDE;
    else
        a->where = ADDR_NOTHING_NEAR;
}

int addr_of_report(const struct json *doc, uint64_t *address, uint64_t *access, const char **source)
{
    const struct json *fa = json_get(doc, RK_FAULT_ADDRESS), *cd = json_get(doc, RK_COREDUMP);
    long long n;
    if (json_is(fa, JSON_OBJ) && addr_field(fa, RK_ADDRESS, address) == 0) {
        *access = json_int(json_get(fa, RK_ACCESS_SIZE), &n) == 0 && n > 0 ? (uint64_t)n : 0;
        *source = json_get_str(fa, RK_SOURCE) ? json_get_str(fa, RK_SOURCE) : "command line";
        return 1;
    }
    if (json_is(cd, JSON_OBJ) && addr_field(cd, RK_ADDRESS, address) == 0) {
        *access = json_int(json_get(cd, RK_ACCESS_SIZE), &n) == 0 && n > 0 ? (uint64_t)n : 0;
        *source = "coredump";
        return 1;
    }
    const struct json *kl = json_get(doc, RK_GPU_FAULT_LOG);
    if (json_is(kl, JSON_OBJ) && addr_field(kl, RK_ADDRESS, address) == 0) {
        *access = 0;
        *source = "kernel log";
        return 1;
    }
    return 0;
}

uint64_t addr_granule(const struct json *doc)
{
    const struct json *fa = json_get(doc, RK_FAULT_ADDRESS);
    const char *source;
    uint64_t x, access;
    long long g;
    /* the object addr_of_report took the address from: fault_address when it has one, else the kernel's log */
    if (!addr_of_report(doc, &x, &access, &source) || strcmp(source, "kernel log") != 0)
        return 0;
    if (!json_is(fa, JSON_OBJ) || addr_field(fa, RK_ADDRESS, &x) != 0)
        fa = json_get(doc, RK_GPU_FAULT_LOG);
    return json_int(json_get(fa, RK_GRANULE), &g) == 0 && g > 0 ? (uint64_t)g : 0;
}

/* ---- the answer as JSON ---- */

static const char *const addr_where_names[] = {
    [ADDR_NO_TABLE] = "no_table",         [ADDR_INSIDE] = "inside",
    [ADDR_OVERRUN] = "overrun",           [ADDR_FREED] = "freed",
    [ADDR_UNMAPPED] = "unmapped",         [ADDR_OUTSIDE] = "outside",
    [ADDR_NOTHING_NEAR] = "nothing_near",
};

static struct json *addr_bool(void)
{
    struct json *t = json_new(JSON_BOOL);
    if (t)
        t->boolean = 1;
    return t;
}

/* A copy of range r's fields (those the table writes), with extra = value when extra is not NULL. */
static int addr_put_range(struct json *o, const char *key, const struct addr_range *r, const char *extra,
                          uint64_t value)
{
    static const char *const keys[] = {RK_BASE,      RK_SIZE,      RK_KIND,        RK_API,    RK_HOST, RK_SEQ,
                                       RK_FREED_SEQ, RK_FREED_API, RK_FREE_UNSEEN, RK_THREAD, RK_SITE};
    struct json *c;
    if (!r->obj)
        return 0;
    if (!(c = json_new(JSON_OBJ)))
        return -1;
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
        const struct json *v = json_get(r->obj, keys[i]);
        struct json *k = NULL;
        long long n;
        if (json_is(v, JSON_STR))
            k = json_new_str(json_str(v));
        else if (json_int(v, &n) == 0)
            k = json_new_int(n);
        else if (json_is(v, JSON_BOOL) && v->boolean)
            k = addr_bool();
        else
            continue;
        if (json_put(c, keys[i], k))
            goto fail;
    }
    if (extra && json_put(c, extra, json_new_int((long long)value)))
        goto fail;
    if (r->run_pieces > 1) {
        struct json *run = json_new(JSON_OBJ);
        if (json_put(c, RK_MAPPED_RUN, run) || json_put(run, RK_BASE, json_new_hex(r->run_base)) ||
            json_put(run, RK_SIZE, json_new_int((long long)r->run_size)) ||
            json_put(run, RK_PIECES, json_new_int(r->run_pieces)))
            goto fail;
    }
    if (json_put(o, key, c) == 0)
        return 0;
    return -1;
fail:
    json_free(c);
    return -1;
}

int addr_annotate(struct json *doc, uint64_t address, uint64_t access, const char *source)
{
    struct addr_answer a;
    struct json *o;
    uint64_t x = address;
    if (!json_is(doc, JSON_OBJ))
        return -1;
    addr_answer(doc, address, access, &a);
    if (!(o = json_new(JSON_OBJ)))
        return -1;
    if (json_put(o, RK_ADDRESS, json_new_hex(address)) ||
        (access && json_put(o, RK_ACCESS_SIZE, json_new_int((long long)access))) ||
        json_put(o, RK_SOURCE, json_new_str(source ? source : "command line")) ||
        (a.fault_seq >= 0 && json_put(o, RK_FAULT_SEQ, json_new_int(a.fault_seq))) ||
        json_put(o, RK_ANSWER, json_new_str(addr_where_names[a.where])) ||
        (address < ADDR_NULL && json_put(o, RK_NEAR_NULL, addr_bool())) ||
        addr_put_range(o, RK_IN, &a.in, RK_OFFSET, x - a.in.base) ||
        addr_put_range(o, RK_FREED, &a.freed, RK_OFFSET, x - a.freed.base) ||
        (a.freed_others && json_put(o, RK_FREED_OTHERS, json_new_int(a.freed_others))) ||
        addr_put_range(o, RK_LATER, &a.later, RK_OFFSET, x - a.later.base) ||
        addr_put_range(o, RK_RESERVED, &a.reserved, RK_OFFSET, x - a.reserved.base) ||
        addr_put_range(o, RK_BELOW, &a.below, RK_PAST_END, x - (a.below.base + a.below.size)) ||
        addr_put_range(o, RK_ABOVE, &a.above, RK_BEFORE_START, a.above.base - x) ||
        (a.where != ADDR_NO_TABLE && (a.forgotten > 0 || a.not_recorded > 0) &&
         json_put(o, RK_TABLE_OVERFLOWED, addr_bool())) ||
        json_put(doc, RK_FAULT_ADDRESS, o)) {
        json_free(o);
        return -1;
    }
    return 0;
}

/* Whether a lane's access at address was a bad one: for a misaligned exception, not a multiple of the access
 * size; otherwise outside every allocation live at the faulting launch (or running past its end). */
static int addr_lane_bad(const struct json *doc, uint64_t address, uint64_t access, int misaligned,
                         struct addr_answer *a)
{
    addr_answer(doc, address, access, a);
    if (misaligned)
        return access > 1 && address % access != 0;
    return a->where != ADDR_INSIDE;
}

/* A copy of a block or thread index ([x, y, z]); NULL when it is not three integers. */
static struct json *addr_triple(const struct json *v)
{
    struct json *a = json_len(v) == 3 ? json_new(JSON_ARR) : NULL;
    for (size_t i = 0; a && i < 3; i++) {
        long long n;
        struct json *k = json_int(json_at(v, i), &n) == 0 ? json_new_int(n) : NULL;
        if (json_append(a, k)) {
            json_free(k);
            json_free(a);
            return NULL;
        }
    }
    return a;
}

/* Says in coredump.address_unknown why no lane is named. */
static int addr_no_lane(struct json *cd, const char *why, int *changed)
{
    *changed = 1;
    return json_put(cd, RK_ADDRESS_UNKNOWN, json_new_str(why)) ? -1 : 0;
}

/* The one address with these low 32 bits that lies inside an allocation live at the faulting launch, for a lane
 * whose access overwrote the high half of its own address. Returns 1 and sets *out when exactly one such address
 * exists (several allocations, or none, leave it unknown). */
static int addr_infer_high(const struct json *doc, uint32_t low, uint64_t access, uint64_t *out)
{
    const struct json *ranges = json_get(json_get(doc, RK_ALLOCATIONS), RK_RANGES);
    int found = 0;
    for (size_t i = 0; i < json_len(ranges); i++) {
        struct addr_range r;
        if (addr_read_range(json_at(ranges, i), &r) != 0)
            continue;
        uint64_t lo_hi = r.base >> 32, hi_hi = (r.base + r.size - 1) >> 32;
        for (uint64_t hi = lo_hi; hi <= hi_hi && hi - lo_hi < 2; hi++) {
            uint64_t c = hi << 32 | low;
            struct addr_answer a;
            if (!addr_holds(&r, c))
                continue;
            addr_answer(doc, c, access, &a);
            if (a.where != ADDR_INSIDE || (found && *out == c))
                continue;
            if (found++)
                return 0;
            *out = c;
        }
    }
    return found == 1;
}

/* The faulting lane from every lane's address ("coredump.lanes"): the first whose access was bad. Its address is
 * answered as fault_address, with the lane, how many lanes were read and bad, and the allocations the good lanes
 * touched ("touched": each allocation's base and how many lanes). Without a table, or with one that overflowed
 * or in which no lane's address is bad, no lane is named and coredump.address_unknown says why. */
static int addr_annotate_lanes(struct json *doc, struct json *cd, const struct json *lanes, int *changed)
{
    const char *exc = json_get_str(cd, RK_EXCEPTION);
    const struct json *table = json_get(doc, RK_ALLOCATIONS);
    int misaligned = exc && strstr(exc, "Misaligned") != NULL;
    long long n, nlanes = (long long)json_len(lanes), bad = 0;
    uint64_t access = json_int(json_get(cd, RK_ACCESS_SIZE), &n) == 0 && n > 0 ? (uint64_t)n : 0;
    const struct json *chosen = NULL;
    uint64_t chosen_addr = 0;
    char why[400];

    if (!misaligned && !json_is(json_get(table, RK_RANGES), JSON_ARR)) {
        snprintf(why, sizeof why,
                 "the exception is the warp's, and the report has no allocation table to tell which of the %lld "
                 "lanes whose address the dump gives made the faulting access",
                 nlanes);
        return addr_no_lane(cd, why, changed);
    }
    if (!misaligned && (json_get_int(table, RK_FORGOTTEN, 0) > 0 || json_get_int(table, RK_NOT_RECORDED, 0) > 0)) {
        snprintf(why, sizeof why,
                 "the exception is the warp's, and the allocation table overflowed: a lane's address outside every "
                 "allocation it kept may lie in one it lacks, so no lane of the %lld is named",
                 nlanes);
        return addr_no_lane(cd, why, changed);
    }
    int inferred = 0;
    for (size_t i = 0; i < json_len(lanes); i++) {
        const struct json *l = json_at(lanes, i);
        struct addr_answer a;
        uint64_t x;
        const char *low = json_get_str(l, RK_ADDRESS_LOW32);
        if (addr_field(l, RK_ADDRESS, &x) == 0) {
            if (addr_lane_bad(doc, x, access, misaligned, &a) && !bad++) {
                chosen = l;
                chosen_addr = x;
            }
        } else if (misaligned && low && addr_parse(low, &x) == 0 && x <= 0xffffffffu && access > 1 && x % access != 0 &&
                   !bad++) {
            chosen = l; /* the low half says it was misaligned; the table may say where it was */
            chosen_addr = x;
        }
    }
    if (chosen && !json_get(chosen, RK_ADDRESS)) {
        char place[320];
        uint32_t low = (uint32_t)chosen_addr;
        inferred = addr_infer_high(doc, low, access, &chosen_addr);
        if (!inferred) {
            snprintf(place, sizeof place,
                     "lane %lld made a misaligned access (its address ends in 0x%08x, not a multiple of %llu), but "
                     "its access overwrote the high half of the address and no single allocation holds an address "
                     "ending so",
                     json_get_int(chosen, RK_LANE, -1), low, (unsigned long long)access);
            return addr_no_lane(cd, place, changed);
        }
    }
    if (!chosen) {
        snprintf(why, sizeof why,
                 misaligned ? "none of the %lld lanes whose address the dump gives made a misaligned access"
                            : "the exception is the warp's, and every one of the %lld lanes whose address the dump "
                              "gives accessed an allocation live at the faulting launch: the allocation the faulting "
                              "access missed is one the table lacks, so no lane is named",
                 nlanes);
        return addr_no_lane(cd, why, changed);
    }
    if (addr_annotate(doc, chosen_addr, access, "coredump"))
        return -1;
    *changed = 1;
    /* the lane and the warp's other lanes: which allocations the good ones touched, in the order first met */
    struct json *fa = (struct json *)json_get(doc, RK_FAULT_ADDRESS), *touched = json_new(JSON_ARR);
    if (!touched || json_put(fa, RK_LANE, json_new_int(json_get_int(chosen, RK_LANE, -1))) ||
        (json_get(chosen, RK_BLOCK) && json_put(fa, RK_BLOCK, addr_triple(json_get(chosen, RK_BLOCK)))) ||
        (json_get(chosen, RK_THREAD) && json_put(fa, RK_THREAD, addr_triple(json_get(chosen, RK_THREAD)))) ||
        json_put(fa, RK_LANES_READ, json_new_int(nlanes)) || json_put(fa, RK_LANES_BAD, json_new_int(bad)) ||
        (inferred && json_put(fa, RK_HIGH_HALF, json_new_str("inferred")))) {
        json_free(touched);
        return -1;
    }
    for (size_t i = 0; i < json_len(lanes); i++) {
        struct addr_answer a;
        uint64_t x;
        if (addr_field(json_at(lanes, i), RK_ADDRESS, &x) != 0 || addr_lane_bad(doc, x, access, misaligned, &a) ||
            !a.in.obj)
            continue;
        struct json *t = NULL;
        for (size_t k = 0; k < json_len(touched) && !t; k++) {
            uint64_t base;
            if (addr_field(json_at(touched, k), RK_BASE, &base) == 0 && base == a.in.base)
                t = (struct json *)json_at(touched, k);
        }
        if (t) {
            if (json_put(t, RK_LANES, json_new_int(json_get_int(t, RK_LANES, 0) + 1)))
                goto fail;
            continue;
        }
        t = json_new(JSON_OBJ);
        if (json_append(touched, t) || json_put(t, RK_BASE, json_new_hex(a.in.base)) ||
            json_put(t, RK_SIZE, json_new_int((long long)a.in.size)) || json_put(t, RK_LANES, json_new_int(1)))
            goto fail;
    }
    if (json_put(fa, RK_TOUCHED, touched))
        return -1;
    return 0;
fail:
    json_free(touched);
    return -1;
}

int addr_annotate_coredump(struct json *doc, int *changed)
{
    struct json *cd = (struct json *)json_get(doc, RK_COREDUMP);
    const struct json *lanes = json_get(cd, RK_LANES);
    uint64_t address, access = 0;
    long long n;
    *changed = 0;
    if (json_is(cd, JSON_OBJ) && json_len(lanes) > 0)
        return addr_annotate_lanes(doc, cd, lanes, changed);
    if (!json_is(cd, JSON_OBJ) || addr_field(cd, RK_ADDRESS, &address) != 0)
        return 0;
    if (json_int(json_get(cd, RK_ACCESS_SIZE), &n) == 0 && n > 0)
        access = (uint64_t)n;
    if (addr_annotate(doc, address, access, "coredump"))
        return -1;
    *changed = 1;
    return 0;
}

int addr_annotate_fault(struct json *doc, int *changed)
{
    const struct json *kl = json_get(doc, RK_GPU_FAULT_LOG), *fa;
    const char *src, *access;
    uint64_t page;
    long long g;
    if (addr_annotate_coredump(doc, changed))
        return -1;
    /* a byte the dump (or the user) gave wins over a page */
    fa = json_get(doc, RK_FAULT_ADDRESS);
    src = json_get_str(fa, RK_SOURCE);
    if ((fa && (!src || strcmp(src, "kernel log") != 0)) || !json_is(kl, JSON_OBJ) ||
        addr_field(kl, RK_ADDRESS, &page) != 0)
        return 0;
    if (addr_annotate(doc, page, 0, "kernel log"))
        return -1;
    *changed = 1;
    fa = json_get(doc, RK_FAULT_ADDRESS);
    access = json_get_str(kl, RK_ACCESS);
    if (json_put((struct json *)fa, RK_GRANULE,
                 json_new_int(json_int(json_get(kl, RK_GRANULE), &g) == 0 && g > 0 ? g : 4096)) ||
        (access && json_put((struct json *)fa, RK_ACCESS, json_new_str(access))))
        return -1;
    return 0;
}
