/* What a faulting address touched, as text (see addr.h): the verdict's lines about the address the report asks
 * about, which lane made the access and what the others touched, and what each argument word of a launch
 * points into (the operator's buffers, the allocation table's ranges, a use after free). The answers come from
 * addr.c. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "addr.h"
#include "addr_int.h"
#include "json.h"
#include "render_int.h"
#include "report_keys.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
    const char *api = json_get_str(r->obj, RK_API), *fapi = json_get_str(r->obj, RK_FREED_API);
    const char *kind = json_get_str(r->obj, RK_KIND), *what = "allocation";
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
    long long idx = json_get_int(r->obj, RK_SITE, -1);
    const struct json *site = idx >= 0 ? json_at(json_get(json_get(doc, RK_ALLOCATIONS), RK_SITES), (size_t)idx) : NULL;
    const struct json *pf = render_user_pyframe(json_get(site, RK_PYTHON)), *uf;
    const char *verb = addr_is_kind(r, "vm") ? "mapped" : addr_is_kind(r, "reserved") ? "reserved" : "allocated";
    char text[1400];
    out[0] = '\0';
    if (pf)
        snprintf(out, outsz, ", %s at %s", verb, render_pyframe(pf, text, sizeof text));
    else if ((uf = render_user_frame(site)) != NULL)
        snprintf(out, outsz, ", %s at %s", verb, render_frame(uf, text, sizeof text));
    return out;
}

/* "16 bytes after the end of the allocation of ..." or "... before the start of ...", prefixed with lead. For a
 * page (granule > 0, the kernel's log): where the page lies, "the page begins 4096 bytes after the end of ...",
 * "the page ends right before the start of ...". */
static void addr_neighbour(struct render_buf *b, const struct json *doc, const struct addr_range *r, int below,
                           uint64_t address, uint64_t granule, const char *lead)
{
    char d[600], site[1500], text[2400];
    uint64_t start, end;
    if (!r->obj)
        return;
    addr_reach(r, &start, &end);
    addr_describe(r, d, sizeof d);
    addr_site(doc, r, site, sizeof site);
    if (granule && !below && address + granule > r->base) {
        snprintf(text, sizeof text, "%sthe page holds the start of the %s%s, %" PRIu64 " bytes into it", lead, d, site,
                 r->base - address);
    } else if (granule) {
        uint64_t gap = below ? address - end : r->base - (address + granule);
        char far[48] = "right";
        if (gap)
            snprintf(far, sizeof far, "%" PRIu64 " byte%s", gap, gap == 1 ? "" : "s");
        snprintf(text, sizeof text, "%sthe page %s %s %s the %s of the %s%s", lead, below ? "begins" : "ends", far,
                 below ? "after" : "before", below ? "end" : "start", d, site);
    } else if (below && address == end)
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
    const struct json *cd = json_get(doc, RK_COREDUMP), *touched = json_get(fa, RK_TOUCHED);
    const char *exc = json_get_str(cd, RK_EXCEPTION);
    long long lane = json_get_int(fa, RK_LANE, -1), nread = json_get_int(fa, RK_LANES_READ, 0),
              nbad = json_get_int(fa, RK_LANES_BAD, 0);
    char text[3000], thr[64], blk[64], d[600], site[1500];
    size_t used;
    if (lane < 0)
        return;
    used = (size_t)snprintf(text, sizeof text, "lane %lld", lane);
    if (addr_dims(json_get(fa, RK_THREAD), thr, sizeof thr) && addr_dims(json_get(fa, RK_BLOCK), blk, sizeof blk))
        used += (size_t)snprintf(text + used, sizeof text - used, " (thread %s, block %s)", thr, blk);
    used += (size_t)snprintf(
        text + used, sizeof text - used, " made it: %lld of the %lld lanes whose address the dump gives %s %s", nbad,
        nread, nbad == 1 ? "was" : "were", exc && strstr(exc, "Misaligned") ? "misaligned" : "out of bounds");
    if (json_get_str(fa, RK_HIGH_HALF) && used < sizeof text)
        used += (size_t)snprintf(text + used, sizeof text - used,
                                 " (its access overwrote the high half of its address: the address above is the only "
                                 "one with its low 32 bits inside an allocation live at the faulting launch)");
    long long shown = 0;
    for (size_t i = 0; i < json_len(touched) && used < sizeof text; i++) {
        const struct json *t = json_at(touched, i);
        struct addr_answer a;
        uint64_t base;
        long long k = json_get_int(t, RK_LANES, 0);
        if (addr_field(t, RK_BASE, &base) != 0)
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

int addr_describe_op_buffer(const struct json *launch, uint64_t value, int near, char *out, size_t outsz)
{
    const struct json *op = json_get(launch, RK_OP), *bufs = json_get(op, RK_BUFFERS);
    const char *opname = json_get_str(op, RK_NAME);
    const struct json *best = NULL;
    uint64_t best_dist = ADDR_NEAR + 1, best_base = 0, best_size = 0;
    int best_where = 0; /* 0 inside, 1 past the end, -1 before the start */
    for (size_t i = 0; i < json_len(bufs); i++) {
        const struct json *b = json_at(bufs, i);
        uint64_t base;
        long long size;
        if (addr_field(b, RK_BASE, &base) != 0 || json_int(json_get(b, RK_SIZE), &size) != 0 || size <= 0)
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
    const char *label = json_get_str(best, RK_LABEL);
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

int addr_describe_word(const struct json *doc, const struct json *launch, size_t k, char *out, size_t outsz)
{
    uint64_t v;
    if (addr_parse(json_str(json_at(json_get(launch, RK_PARAMS), k)), &v) != 0)
        return 0;
    if (addr_describe_op_buffer(launch, v, 0, out, outsz))
        return 1;
    return addr_describe_pointer(doc, v, json_get_int(launch, RK_SEQ, -1), out, outsz);
}

void addr_render_freed_args(struct render_buf *b, const struct json *doc, const struct json *launches)
{
    /* each word is answered against the whole table: the first candidates only, which a reader can take in */
    for (size_t i = 0; i < json_len(launches) && i < ADDR_FREED_ARGS_MAX; i++) {
        const struct json *l = json_at(launches, i);
        long long seq = json_get_int(l, RK_SEQ, -1);
        for (size_t k = 0; seq >= 0 && k < json_len(json_get(l, RK_PARAMS)); k++) {
            char what[2200], text[2600];
            if (addr_describe_word(doc, l, k, what, sizeof what) != 2)
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

/* The heading of the answer for the faulting address (a byte, or the page of the kernel's log), the lanes of the
 * dump's warp, and the faulting operator's tensor that holds it. */
static void addr_render_head(struct render_buf *b, const struct json *doc, uint64_t address, uint64_t access,
                             const char *source, uint64_t granule)
{
    char acc[64] = "", text[2400], d[600];

    if (access)
        snprintf(acc, sizeof acc, "an access of %" PRIu64 " byte%s, ", access, access == 1 ? "" : "s");
    render_add(b, "culprit:\n");
    if (granule) {
        const char *kind = json_get_str(json_get(doc, RK_FAULT_ADDRESS), RK_ACCESS);
        if (!kind)
            kind = json_get_str(json_get(doc, RK_GPU_FAULT_LOG), RK_ACCESS);
        /* a line the kernel's log ties to this process by its name alone is a hint: it may be another's */
        const char *matched = json_get_str(json_get(doc, RK_GPU_FAULT_LOG), RK_MATCHED);
        int by_name = matched && !strcmp(matched, "name");
        snprintf(text, sizeof text,
                 "the faulting address %s in the %" PRIu64 "-byte page at 0x%" PRIx64 " (%s%s%sthe kernel's log of "
                 "the GPU's memory fault gives the page, not the byte%s):",
                 by_name ? "may lie" : "lies", granule, address, kind ? "a " : "", kind ? kind : "", kind ? "; " : "",
                 by_name ? "; only a hint: the log's line names no pid of this process, only its name, and may be "
                           "another process's of that name, so it settles nothing"
                         : "");
        render_para(b, "", "  ", text);
    } else {
        render_line(b, "the faulting address 0x%" PRIx64 " (%s%s):", address, acc,
                    strcmp(source, "coredump") == 0 ? "from the GPU core dump" : "given on the command line");
    }
    if (strcmp(source, "coredump") == 0)
        addr_render_lanes(b, doc, json_get(doc, RK_FAULT_ADDRESS));
    /* the faulting launch's operator (--diagnose) knows its tensors: shape and dtype, not only the segment */
    if (addr_describe_op_buffer(json_get(doc, RK_CULPRIT), address, 1, d, sizeof d)) {
        snprintf(text, sizeof text, "%s", d);
        render_para(b, "  ", "    ", text);
    }
}

/* What the address touched, by where addr_answer placed it: inside or past an allocation, in freed or reserved
 * memory, or near none; then the neighbours of an address outside every allocation. Returns 0, or -1 when the
 * report has no allocation table (nothing more can be said). */
static int addr_render_where(struct render_buf *b, const struct json *doc, const struct addr_answer *a,
                             uint64_t address, uint64_t access, uint64_t granule)
{
    const char *at = granule ? "the page at offset" : "offset";
    char text[2400], d[600], site[1500], when[48];
    long long m = a->fault_seq;

    switch (a->where) {
    case ADDR_NO_TABLE:
        render_para(b, "  ", "    ",
                    "the report has no allocation table (it was written by a culprit that kept "
                    "none), so nothing is known of what the address touched");
        return -1;
    case ADDR_INSIDE:
    case ADDR_OVERRUN:
        addr_describe(&a->in, d, sizeof d);
        addr_site(doc, &a->in, site, sizeof site);
        if (a->where == ADDR_INSIDE) {
            snprintf(text, sizeof text, "%s %" PRIu64 " inside the %s%s",
                     granule ? "the page begins at offset" : "at offset", address - a->in.base, d, site);
        } else {
            uint64_t over = address - a->in.base + access - a->in.size;
            snprintf(text, sizeof text,
                     "at offset %" PRIu64 " of the %s%s; the access runs %" PRIu64 " byte%s past "
                     "its end",
                     address - a->in.base, d, site, over, over == 1 ? "" : "s");
        }
        render_para(b, "  ", "    ", text);
        if (m >= 0 && a->in.freed_seq >= m) {
            snprintf(text, sizeof text,
                     "it was allocated when the faulting launch #%lld was made, and freed only "
                     "%s",
                     m, addr_launch(a->in.freed_seq, when, sizeof when));
            render_para(b, "  ", "    ", text);
        }
        break;
    case ADDR_FREED:
        addr_describe(&a->freed, d, sizeof d);
        addr_site(doc, &a->freed, site, sizeof site);
        if (m >= 0)
            snprintf(text, sizeof text,
                     "in memory freed before the faulting launch #%lld was made, a use after "
                     "free: %s %" PRIu64 " of the %s%s",
                     m, at, address - a->freed.base, d, site);
        else
            snprintf(text, sizeof text,
                     "in memory freed by the time the report was written, a use after free if "
                     "the kernel ran after the free (the faulting launch is not known exactly): %s %" PRIu64
                     " of the %s%s",
                     at, address - a->freed.base, d, site);
        render_para(b, "  ", "    ", text);
        if (a->freed_others) {
            snprintf(text, sizeof text, "(%d earlier allocation%s held it too)", a->freed_others,
                     a->freed_others == 1 ? "" : "s");
            render_para(b, "  ", "    ", text);
        }
        break;
    case ADDR_UNMAPPED:
        addr_describe(&a->reserved, d, sizeof d);
        addr_site(doc, &a->reserved, site, sizeof site);
        snprintf(text, sizeof text, "in addresses reserved but not mapped: %s %" PRIu64 " of the %s%s", at,
                 address - a->reserved.base, d, site);
        render_para(b, "  ", "    ", text);
        break;
    case ADDR_OUTSIDE:
        break;
    case ADDR_NOTHING_NEAR:
        snprintf(text, sizeof text,
                 "in no allocation culprit recorded, and none of the %zu range%s it recorded lies "
                 "within %llu GiB of it",
                 a->nranges, a->nranges == 1 ? "" : "s", ADDR_NEAR >> 30);
        render_para(b, "  ", "    ", text);
        break;
    }
    if (a->where == ADDR_OUTSIDE || a->where == ADDR_UNMAPPED) {
        /* the nearer neighbour first: the one the kernel most likely meant */
        int below_first =
            a->below.obj && (!a->above.obj || address - (a->below.base + a->below.size) <= a->above.base - address);
        const char *lead = a->where == ADDR_OUTSIDE ? "in no allocation culprit recorded: "
                                                    : "the nearest mapped "
                                                      "memory: ";
        addr_neighbour(b, doc, below_first ? &a->below : &a->above, below_first, address, granule, lead);
        addr_neighbour(b, doc, below_first ? &a->above : &a->below, !below_first, address, granule, "and ");
    }
    if (a->where == ADDR_OUTSIDE && a->freed.obj) {
        addr_describe(&a->freed, d, sizeof d);
        snprintf(text, sizeof text, "(the %s, at the same base, held it before)", d);
        render_para(b, "  ", "    ", text);
    }
    return 0;
}

void addr_render(struct render_buf *b, const struct json *doc)
{
    struct addr_answer a;
    uint64_t address, access;
    const char *source;
    char text[2400], d[600];

    if (!addr_of_report(doc, &address, &access, &source)) {
        /* culprit run read the kernel's log for the page and found none: why, and what would give it */
        const char *why = json_get_str(json_get(doc, RK_GPU_FAULT_LOG), RK_UNKNOWN);
        if (why && !json_get(doc, RK_COREDUMP)) {
            render_add(b, "culprit:\n");
            snprintf(text, sizeof text, "the faulting address is not known: %s", why);
            render_para(b, "", "  ", text);
        }
        return;
    }
    uint64_t granule = addr_granule(doc);
    addr_answer(doc, address, access, &a);
    addr_render_head(b, doc, address, access, source, granule);
    if (addr_render_where(b, doc, &a, address, access, granule) != 0)
        return;
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
