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
#include "json.h"
#include "render_int.h"

#include <errno.h>
#include <inttypes.h>
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
static int addr_field(const struct json *obj, const char *key, uint64_t *out)
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
    if (!json_is(r, JSON_OBJ) || addr_field(r, "base", &out->base) != 0 || json_int(json_get(r, "size"), &size) != 0 ||
        size <= 0)
        return -1;
    out->obj = r;
    out->size = (uint64_t)size;
    out->seq = json_get_int(r, "seq", 0);
    out->freed_seq = json_int(json_get(r, "freed_seq"), &freed) == 0 && freed >= 0 ? freed : -1;
    return 0;
}

static int addr_holds(const struct addr_range *r, uint64_t a)
{
    return a >= r->base && a - r->base < r->size;
}

static int addr_is_kind(const struct addr_range *r, const char *kind)
{
    const char *k = json_get_str(r->obj, "kind");
    return k && strcmp(k, kind) == 0;
}

/* Whether range r was live when launch fault_seq was made (fault_seq < 0: when the report was written). */
static int addr_live(const struct addr_range *r, long long fault_seq)
{
    if (fault_seq < 0)
        return r->freed_seq < 0;
    return r->seq < fault_seq && (r->freed_seq < 0 || r->freed_seq >= fault_seq);
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
    const struct json *culprit = json_get(doc, "culprit");
    addr_answer_at(doc, address, access, json_is(culprit, JSON_OBJ) ? json_get_int(culprit, "seq", -1) : -1, a);
}

void addr_answer_at(const struct json *doc, uint64_t address, uint64_t access, long long seq, struct addr_answer *a)
{
    const struct json *table = json_get(doc, "allocations");
    const struct json *ranges = json_get(table, "ranges");
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
    a->forgotten = json_get_int(table, "forgotten", 0);
    a->not_recorded = json_get_int(table, "not_recorded", 0);

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
    const struct json *fa = json_get(doc, "fault_address"), *cd = json_get(doc, "coredump");
    long long n;
    if (json_is(fa, JSON_OBJ) && addr_field(fa, "address", address) == 0) {
        *access = json_int(json_get(fa, "access_size"), &n) == 0 && n > 0 ? (uint64_t)n : 0;
        *source = json_get_str(fa, "source") ? json_get_str(fa, "source") : "command line";
        return 1;
    }
    if (json_is(cd, JSON_OBJ) && addr_field(cd, "address", address) == 0) {
        *access = json_int(json_get(cd, "access_size"), &n) == 0 && n > 0 ? (uint64_t)n : 0;
        *source = "coredump";
        return 1;
    }
    return 0;
}

/* ---- the answer as JSON ---- */

static const char *const addr_where_names[] = {
    [ADDR_NO_TABLE] = "no_table",         [ADDR_INSIDE] = "inside",
    [ADDR_OVERRUN] = "overrun",           [ADDR_FREED] = "freed",
    [ADDR_UNMAPPED] = "unmapped",         [ADDR_OUTSIDE] = "outside",
    [ADDR_NOTHING_NEAR] = "nothing_near",
};

static struct json *addr_hex(uint64_t v)
{
    char s[24];
    snprintf(s, sizeof s, "0x%" PRIx64, v);
    return json_new_str(s);
}

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
    static const char *const keys[] = {"base",      "size",      "kind",        "api",    "host", "seq",
                                       "freed_seq", "freed_api", "free_unseen", "thread", "site"};
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
        if (json_put(c, "mapped_run", run) || json_put(run, "base", addr_hex(r->run_base)) ||
            json_put(run, "size", json_new_int((long long)r->run_size)) ||
            json_put(run, "pieces", json_new_int(r->run_pieces)))
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
    if (json_put(o, "address", addr_hex(address)) ||
        (access && json_put(o, "access_size", json_new_int((long long)access))) ||
        json_put(o, "source", json_new_str(source ? source : "command line")) ||
        (a.fault_seq >= 0 && json_put(o, "fault_seq", json_new_int(a.fault_seq))) ||
        json_put(o, "answer", json_new_str(addr_where_names[a.where])) ||
        (address < ADDR_NULL && json_put(o, "near_null", addr_bool())) ||
        addr_put_range(o, "in", &a.in, "offset", x - a.in.base) ||
        addr_put_range(o, "freed", &a.freed, "offset", x - a.freed.base) ||
        (a.freed_others && json_put(o, "freed_others", json_new_int(a.freed_others))) ||
        addr_put_range(o, "later", &a.later, "offset", x - a.later.base) ||
        addr_put_range(o, "reserved", &a.reserved, "offset", x - a.reserved.base) ||
        addr_put_range(o, "below", &a.below, "past_end", x - (a.below.base + a.below.size)) ||
        addr_put_range(o, "above", &a.above, "before_start", a.above.base - x) ||
        (a.where != ADDR_NO_TABLE && (a.forgotten > 0 || a.not_recorded > 0) &&
         json_put(o, "table_overflowed", addr_bool())) ||
        json_put(doc, "fault_address", o)) {
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
    return json_put(cd, "address_unknown", json_new_str(why)) ? -1 : 0;
}

/* The one address with these low 32 bits that lies inside an allocation live at the faulting launch, for a lane
 * whose access overwrote the high half of its own address. Returns 1 and sets *out when exactly one such address
 * exists (several allocations, or none, leave it unknown). */
static int addr_infer_high(const struct json *doc, uint32_t low, uint64_t access, uint64_t *out)
{
    const struct json *ranges = json_get(json_get(doc, "allocations"), "ranges");
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
    const char *exc = json_get_str(cd, "exception");
    const struct json *table = json_get(doc, "allocations");
    int misaligned = exc && strstr(exc, "Misaligned") != NULL;
    long long n, nlanes = (long long)json_len(lanes), bad = 0;
    uint64_t access = json_int(json_get(cd, "access_size"), &n) == 0 && n > 0 ? (uint64_t)n : 0;
    const struct json *chosen = NULL;
    uint64_t chosen_addr = 0;
    char why[400];

    if (!misaligned && !json_is(json_get(table, "ranges"), JSON_ARR)) {
        snprintf(why, sizeof why,
                 "the exception is the warp's, and the report has no allocation table to tell which of the %lld "
                 "lanes whose address the dump gives made the faulting access",
                 nlanes);
        return addr_no_lane(cd, why, changed);
    }
    if (!misaligned && (json_get_int(table, "forgotten", 0) > 0 || json_get_int(table, "not_recorded", 0) > 0)) {
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
        const char *low = json_get_str(l, "address_low32");
        if (addr_field(l, "address", &x) == 0) {
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
    if (chosen && !json_get(chosen, "address")) {
        char place[320];
        uint32_t low = (uint32_t)chosen_addr;
        inferred = addr_infer_high(doc, low, access, &chosen_addr);
        if (!inferred) {
            snprintf(place, sizeof place,
                     "lane %lld made a misaligned access (its address ends in 0x%08x, not a multiple of %llu), but "
                     "its access overwrote the high half of the address and no single allocation holds an address "
                     "ending so",
                     json_get_int(chosen, "lane", -1), low, (unsigned long long)access);
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
    struct json *fa = (struct json *)json_get(doc, "fault_address"), *touched = json_new(JSON_ARR);
    if (!touched || json_put(fa, "lane", json_new_int(json_get_int(chosen, "lane", -1))) ||
        (json_get(chosen, "block") && json_put(fa, "block", addr_triple(json_get(chosen, "block")))) ||
        (json_get(chosen, "thread") && json_put(fa, "thread", addr_triple(json_get(chosen, "thread")))) ||
        json_put(fa, "lanes_read", json_new_int(nlanes)) || json_put(fa, "lanes_bad", json_new_int(bad)) ||
        (inferred && json_put(fa, "high_half", json_new_str("inferred")))) {
        json_free(touched);
        return -1;
    }
    for (size_t i = 0; i < json_len(lanes); i++) {
        struct addr_answer a;
        uint64_t x;
        if (addr_field(json_at(lanes, i), "address", &x) != 0 || addr_lane_bad(doc, x, access, misaligned, &a) ||
            !a.in.obj)
            continue;
        struct json *t = NULL;
        for (size_t k = 0; k < json_len(touched) && !t; k++) {
            uint64_t base;
            if (addr_field(json_at(touched, k), "base", &base) == 0 && base == a.in.base)
                t = (struct json *)json_at(touched, k);
        }
        if (t) {
            if (json_put(t, "lanes", json_new_int(json_get_int(t, "lanes", 0) + 1)))
                goto fail;
            continue;
        }
        t = json_new(JSON_OBJ);
        if (json_append(touched, t) || json_put(t, "base", addr_hex(a.in.base)) ||
            json_put(t, "size", json_new_int((long long)a.in.size)) || json_put(t, "lanes", json_new_int(1)))
            goto fail;
    }
    if (json_put(fa, "touched", touched))
        return -1;
    return 0;
fail:
    json_free(touched);
    return -1;
}

int addr_annotate_coredump(struct json *doc, int *changed)
{
    struct json *cd = (struct json *)json_get(doc, "coredump");
    const struct json *lanes = json_get(cd, "lanes");
    uint64_t address, access = 0;
    long long n;
    *changed = 0;
    if (json_is(cd, JSON_OBJ) && json_len(lanes) > 0)
        return addr_annotate_lanes(doc, cd, lanes, changed);
    if (!json_is(cd, JSON_OBJ) || addr_field(cd, "address", &address) != 0)
        return 0;
    if (json_int(json_get(cd, "access_size"), &n) == 0 && n > 0)
        access = (uint64_t)n;
    if (addr_annotate(doc, address, access, "coredump"))
        return -1;
    *changed = 1;
    return 0;
}

/* ---- the answer as text ---- */

/* "4096 bytes", or "20971520 bytes (20 MiB)" from a mebibyte on. */
static const char *addr_size(uint64_t n, char *out, size_t outsz)
{
    static const char *const unit[] = {"MiB", "GiB", "TiB"};
    double v = (double)n / (1024.0 * 1024.0);
    int u = 0;
    if (n < 1024 * 1024) {
        snprintf(out, outsz, "%" PRIu64 " byte%s", n, n == 1 ? "" : "s");
        return out;
    }
    while (v >= 1024.0 && u < 2) {
        v /= 1024.0;
        u++;
    }
    snprintf(out, outsz, "%" PRIu64 " bytes (%.*f %s)", n, v == (double)(uint64_t)v ? 0 : 1, v, unit[u]);
    return out;
}

/* "launch #12", or "the first launch" for 0 ("after" it reads: made after launch #12). */
static const char *addr_launch(long long seq, char *out, size_t outsz)
{
    if (seq <= 0)
        snprintf(out, outsz, "before any launch");
    else
        snprintf(out, outsz, "after launch #%lld", seq);
    return out;
}

/* "allocation of 4096 bytes at 0x7f.. (cuMemAlloc_v2 after launch #3)": what, where and when, in one phrase; for a
 * mapping, also the run of adjacent mappings it belongs to, and for a freed range the free. */
static void addr_describe(const struct addr_range *r, char *out, size_t outsz)
{
    const char *api = json_get_str(r->obj, "api"), *fapi = json_get_str(r->obj, "freed_api");
    const char *kind = json_get_str(r->obj, "kind"), *what = "allocation";
    char sz[64], when[48], fwhen[48];
    size_t used;
    if (kind && strcmp(kind, "vm") == 0)
        what = "mapping";
    else if (kind && strcmp(kind, "reserved") == 0)
        what = "reservation";
    else if (kind && strcmp(kind, "host") == 0)
        what = "pinned host allocation";
    used = (size_t)snprintf(out, outsz, "%s of %s at 0x%" PRIx64 " (%s %s", what, addr_size(r->size, sz, sizeof sz),
                            r->base, api ? api : "allocated", addr_launch(r->seq, when, sizeof when));
    if (used < outsz && r->run_pieces > 1)
        used += (size_t)snprintf(out + used, outsz - used, "; one of %d adjacent mappings, %s from 0x%" PRIx64,
                                 r->run_pieces, addr_size(r->run_size, sz, sizeof sz), r->run_base);
    if (used < outsz && r->freed_seq >= 0 && fapi)
        used += (size_t)snprintf(out + used, outsz - used, "; freed by %s %s", fapi,
                                 addr_launch(r->freed_seq, fwhen, sizeof fwhen));
    else if (used < outsz && r->freed_seq >= 0)
        used += (size_t)snprintf(out + used, outsz - used,
                                 "; freed %s, by a call culprit did not see (its address "
                                 "was handed out again)",
                                 addr_launch(r->freed_seq, fwhen, sizeof fwhen));
    if (used < outsz)
        snprintf(out + used, outsz - used, ")");
}

/* ", allocated at train.py:42 in main" (mapped, reserved): the allocation site's innermost frame of the user's
 * (the table's "sites"), or "" when the report has none. */
static const char *addr_site(const struct json *doc, const struct addr_range *r, char *out, size_t outsz)
{
    long long idx = json_get_int(r->obj, "site", -1);
    const struct json *site = idx >= 0 ? json_at(json_get(json_get(doc, "allocations"), "sites"), (size_t)idx) : NULL;
    const struct json *pf = render_user_pyframe(json_get(site, "python")), *uf;
    const char *verb = addr_is_kind(r, "vm") ? "mapped" : addr_is_kind(r, "reserved") ? "reserved" : "allocated";
    char text[1400];
    out[0] = '\0';
    if (pf)
        snprintf(out, outsz, ", %s at %s", verb, render_pyframe(pf, text, sizeof text));
    else if ((uf = render_user_frame(site)) != NULL)
        snprintf(out, outsz, ", %s at %s", verb, render_frame(uf, text, sizeof text));
    return out;
}

/* "16 bytes after the end of the allocation of ..." or "... before the start of ...", prefixed with lead. */
static void addr_neighbour(struct render_buf *b, const struct json *doc, const struct addr_range *r, int below,
                           uint64_t address, const char *lead)
{
    char d[600], site[1500], text[2400];
    uint64_t end = r->run_pieces > 1 ? r->run_base + r->run_size : r->base + r->size;
    if (!r->obj)
        return;
    addr_describe(r, d, sizeof d);
    addr_site(doc, r, site, sizeof site);
    if (below && address == end)
        snprintf(text, sizeof text, "%sright after the end of the %s%s", lead, d, site);
    else if (below)
        snprintf(text, sizeof text, "%s%" PRIu64 " byte%s after the end of the %s%s", lead, address - end,
                 address - end == 1 ? "" : "s", d, site);
    else
        snprintf(text, sizeof text, "%s%" PRIu64 " byte%s before the start of the %s%s", lead, r->base - address,
                 r->base - address == 1 ? "" : "s", d, site);
    render_para(b, "  ", "    ", text);
}

/* A block or thread index as the debugger writes it, "(123,0,0)"; NULL when it is not three integers. */
static const char *addr_dims(const struct json *v, char *out, size_t n)
{
    long long x[3];
    for (size_t i = 0; i < 3; i++)
        if (json_len(v) != 3 || json_int(json_at(v, i), &x[i]) != 0)
            return NULL;
    snprintf(out, n, "(%lld,%lld,%lld)", x[0], x[1], x[2]);
    return out;
}

/* Which lane of the warp made the faulting access, and what the others touched (fault_address.lane, written by
 * addr_annotate_lanes): "lane 27 (thread (123,0,0), block (0,0,0)) made it: 1 of the 32 lanes whose address the
 * dump gives was out of bounds; the other 31 accessed the allocation of 512 bytes at 0x7f5b7fe00000 (...)". */
static void addr_render_lanes(struct render_buf *b, const struct json *doc, const struct json *fa)
{
    const struct json *cd = json_get(doc, "coredump"), *touched = json_get(fa, "touched");
    const char *exc = json_get_str(cd, "exception");
    long long lane = json_get_int(fa, "lane", -1), nread = json_get_int(fa, "lanes_read", 0),
              nbad = json_get_int(fa, "lanes_bad", 0);
    char text[3000], thr[64], blk[64], d[600], site[1500];
    size_t used;
    if (lane < 0)
        return;
    used = (size_t)snprintf(text, sizeof text, "lane %lld", lane);
    if (addr_dims(json_get(fa, "thread"), thr, sizeof thr) && addr_dims(json_get(fa, "block"), blk, sizeof blk))
        used += (size_t)snprintf(text + used, sizeof text - used, " (thread %s, block %s)", thr, blk);
    used += (size_t)snprintf(
        text + used, sizeof text - used, " made it: %lld of the %lld lanes whose address the dump gives %s %s", nbad,
        nread, nbad == 1 ? "was" : "were", exc && strstr(exc, "Misaligned") ? "misaligned" : "out of bounds");
    if (json_get_str(fa, "high_half") && used < sizeof text)
        used += (size_t)snprintf(text + used, sizeof text - used,
                                 " (its access overwrote the high half of its address: the address above is the only "
                                 "one with its low 32 bits inside an allocation live at the faulting launch)");
    long long shown = 0;
    for (size_t i = 0; i < json_len(touched) && used < sizeof text; i++) {
        const struct json *t = json_at(touched, i);
        struct addr_answer a;
        uint64_t base;
        long long k = json_get_int(t, "lanes", 0);
        if (addr_field(t, "base", &base) != 0)
            continue;
        addr_answer(doc, base, 0, &a);
        if (!a.in.obj)
            continue;
        addr_describe(&a.in, d, sizeof d);
        addr_site(doc, &a.in, site, sizeof site);
        if (nbad + k == nread && !shown)
            used += (size_t)snprintf(text + used, sizeof text - used, "; the other %lld accessed the %s%s", k, d, site);
        else
            used += (size_t)snprintf(text + used, sizeof text - used, "%s%lld accessed the %s%s",
                                     shown ? "; " : "; of the others, ", k, d, site);
        shown += k;
    }
    render_para(b, "  ", "    ", text);
}

static const char *addr_size(uint64_t n, char *out, size_t outsz);

int addr_describe_op_buffer(const struct json *launch, uint64_t value, int near, char *out, size_t outsz)
{
    const struct json *op = json_get(launch, "op"), *bufs = json_get(op, "buffers");
    const char *opname = json_get_str(op, "name");
    const struct json *best = NULL;
    uint64_t best_dist = ADDR_NEAR + 1, best_base = 0, best_size = 0;
    int best_where = 0; /* 0 inside, 1 past the end, -1 before the start */
    for (size_t i = 0; i < json_len(bufs); i++) {
        const struct json *b = json_at(bufs, i);
        uint64_t base;
        long long size;
        if (addr_field(b, "base", &base) != 0 || json_int(json_get(b, "size"), &size) != 0 || size <= 0)
            continue;
        uint64_t end = base + (uint64_t)size, dist;
        int where;
        if (value >= base && value < end)
            dist = 0, where = 0;
        else if (!near)
            continue;
        else if (value >= end)
            dist = value - end, where = 1;
        else
            dist = base - value, where = -1;
        if (dist < best_dist) {
            best = b, best_dist = dist, best_base = base, best_size = (uint64_t)size, best_where = where;
        }
    }
    if (!best)
        return 0;
    const char *label = json_get_str(best, "label");
    char what[400], sz[64];
    snprintf(what, sizeof what, "%s's `%s` (%s at 0x%" PRIx64 ")", opname ? opname : "the operator",
             label && *label ? label : "buffer", addr_size(best_size, sz, sizeof sz), best_base);
    if (best_where == 0)
        snprintf(out, outsz, "offset %" PRIu64 " of %s", value - best_base, what);
    else if (best_where > 0)
        snprintf(out, outsz, "%" PRIu64 " byte%s past the end of %s", best_dist, best_dist == 1 ? "" : "s", what);
    else
        snprintf(out, outsz, "%" PRIu64 " byte%s before the start of %s", best_dist, best_dist == 1 ? "" : "s", what);
    return 1;
}

int addr_describe_pointer(const struct json *doc, uint64_t value, long long seq, char *out, size_t outsz)
{
    struct addr_answer a;
    char d[600], site[1500];
    if (value < ADDR_NULL)
        return 0;
    addr_answer_at(doc, value, 0, seq, &a);
    if (a.where == ADDR_INSIDE || a.where == ADDR_OVERRUN) {
        addr_describe(&a.in, d, sizeof d);
        addr_site(doc, &a.in, site, sizeof site);
        snprintf(out, outsz, "offset %" PRIu64 " of the %s%s", value - a.in.base, d, site);
        return 1;
    }
    if (a.where == ADDR_FREED) {
        addr_describe(&a.freed, d, sizeof d);
        addr_site(doc, &a.freed, site, sizeof site);
        snprintf(out, outsz, "offset %" PRIu64 " of memory freed before this launch (a use after free): the %s%s",
                 value - a.freed.base, d, site);
        return 2;
    }
    return 0;
}

void addr_render_freed_args(struct render_buf *b, const struct json *doc, const struct json *launches)
{
    /* each word is answered against the whole table: the first candidates only, which a reader can take in */
    for (size_t i = 0; i < json_len(launches) && i < ADDR_FREED_ARGS_MAX; i++) {
        const struct json *l = json_at(launches, i), *p = json_get(l, "params");
        long long seq = json_get_int(l, "seq", -1);
        for (size_t k = 0; seq >= 0 && k < json_len(p); k++) {
            uint64_t v;
            char what[2200], text[2600];
            if (addr_parse(json_str(json_at(p, k)), &v) != 0 ||
                addr_describe_pointer(doc, v, seq, what, sizeof what) != 2)
                continue;
            snprintf(text, sizeof text,
                     "launch #%lld was passed memory freed before it was made, the likeliest of these to have "
                     "faulted: its word %zu points to %s",
                     seq, k, what);
            render_para(b, "  ", "    ", text);
            break; /* one line per launch */
        }
    }
}

void addr_render(struct render_buf *b, const struct json *doc)
{
    struct addr_answer a;
    uint64_t address, access;
    const char *source;
    char acc[64] = "", text[2400], d[600], site[1500], when[48];
    long long m;

    if (!addr_of_report(doc, &address, &access, &source))
        return;
    addr_answer(doc, address, access, &a);
    m = a.fault_seq;
    if (access)
        snprintf(acc, sizeof acc, "an access of %" PRIu64 " byte%s, ", access, access == 1 ? "" : "s");
    render_add(b, "culprit:\n");
    render_line(b, "the faulting address 0x%" PRIx64 " (%s%s):", address, acc,
                strcmp(source, "coredump") == 0 ? "from the GPU core dump" : "given on the command line");
    if (strcmp(source, "coredump") == 0)
        addr_render_lanes(b, doc, json_get(doc, "fault_address"));
    /* the faulting launch's operator (--diagnose) knows its tensors: shape and dtype, not only the segment */
    if (addr_describe_op_buffer(json_get(doc, "culprit"), address, 1, d, sizeof d)) {
        snprintf(text, sizeof text, "%s", d);
        render_para(b, "  ", "    ", text);
    }

    switch (a.where) {
    case ADDR_NO_TABLE:
        render_para(b, "  ", "    ",
                    "the report has no allocation table (it was written by a culprit that kept "
                    "none), so nothing is known of what the address touched");
        return;
    case ADDR_INSIDE:
    case ADDR_OVERRUN:
        addr_describe(&a.in, d, sizeof d);
        addr_site(doc, &a.in, site, sizeof site);
        if (a.where == ADDR_INSIDE) {
            snprintf(text, sizeof text, "at offset %" PRIu64 " inside the %s%s", address - a.in.base, d, site);
        } else {
            uint64_t over = address - a.in.base + access - a.in.size;
            snprintf(text, sizeof text,
                     "at offset %" PRIu64 " of the %s%s; the access runs %" PRIu64 " byte%s past "
                     "its end",
                     address - a.in.base, d, site, over, over == 1 ? "" : "s");
        }
        render_para(b, "  ", "    ", text);
        if (m >= 0 && a.in.freed_seq >= m) {
            snprintf(text, sizeof text,
                     "it was allocated when the faulting launch #%lld was made, and freed only "
                     "%s",
                     m, addr_launch(a.in.freed_seq, when, sizeof when));
            render_para(b, "  ", "    ", text);
        }
        break;
    case ADDR_FREED:
        addr_describe(&a.freed, d, sizeof d);
        addr_site(doc, &a.freed, site, sizeof site);
        if (m >= 0)
            snprintf(text, sizeof text,
                     "in memory freed before the faulting launch #%lld was made, a use after "
                     "free: offset %" PRIu64 " of the %s%s",
                     m, address - a.freed.base, d, site);
        else
            snprintf(text, sizeof text,
                     "in memory freed by the time the report was written, a use after free if "
                     "the kernel ran after the free (the faulting launch is not known exactly): offset %" PRIu64
                     " of the %s%s",
                     address - a.freed.base, d, site);
        render_para(b, "  ", "    ", text);
        if (a.freed_others) {
            snprintf(text, sizeof text, "(%d earlier allocation%s held it too)", a.freed_others,
                     a.freed_others == 1 ? "" : "s");
            render_para(b, "  ", "    ", text);
        }
        break;
    case ADDR_UNMAPPED:
        addr_describe(&a.reserved, d, sizeof d);
        addr_site(doc, &a.reserved, site, sizeof site);
        snprintf(text, sizeof text, "in addresses reserved but not mapped: offset %" PRIu64 " of the %s%s",
                 address - a.reserved.base, d, site);
        render_para(b, "  ", "    ", text);
        break;
    case ADDR_OUTSIDE:
        break;
    case ADDR_NOTHING_NEAR:
        snprintf(text, sizeof text,
                 "in no allocation culprit recorded, and none of the %zu range%s it recorded lies "
                 "within %llu GiB of it",
                 a.nranges, a.nranges == 1 ? "" : "s", ADDR_NEAR >> 30);
        render_para(b, "  ", "    ", text);
        break;
    }
    if (a.where == ADDR_OUTSIDE || a.where == ADDR_UNMAPPED) {
        /* the nearer neighbour first: the one the kernel most likely meant */
        int below_first =
            a.below.obj && (!a.above.obj || address - (a.below.base + a.below.size) <= a.above.base - address);
        const char *lead = a.where == ADDR_OUTSIDE ? "in no allocation culprit recorded: "
                                                   : "the nearest mapped "
                                                     "memory: ";
        addr_neighbour(b, doc, below_first ? &a.below : &a.above, below_first, address, lead);
        addr_neighbour(b, doc, below_first ? &a.above : &a.below, !below_first, address, "and ");
    }
    if (a.where == ADDR_OUTSIDE && a.freed.obj) {
        addr_describe(&a.freed, d, sizeof d);
        snprintf(text, sizeof text, "(the %s, at the same base, held it before)", d);
        render_para(b, "  ", "    ", text);
    }
    if (a.later.obj) {
        addr_describe(&a.later, d, sizeof d);
        snprintf(text, sizeof text, "(the %s holds it now, made after the faulting launch)", d);
        render_para(b, "  ", "    ", text);
    }
    if (address < ADDR_NULL)
        render_line(b, "  an address this low is a null pointer plus %" PRIu64, address);
    if (a.forgotten > 0 || a.not_recorded > 0) {
        snprintf(text, sizeof text,
                 "the allocation table overflowed (%lld freed range%s forgotten, %lld "
                 "allocation%s not recorded): a range it lacks may be the one",
                 a.forgotten, a.forgotten == 1 ? "" : "s", a.not_recorded, a.not_recorded == 1 ? "" : "s");
        render_para(b, "  ", "    ", text);
    }
}
