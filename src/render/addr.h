/* What a faulting address touched, from a report's allocation table ("allocations", written by the library): the
 * allocation holding it and the offset inside, or the nearest allocations below and above and how far it lies past
 * the end or before the start, a range freed before the faulting launch (use after free), addresses reserved but
 * not mapped. As text (addr_text.c: addr_render, a few lines of the verdict) and as the report's "fault_address" object
 * (addr_annotate). It reads only the report; where the address comes from is the caller's business (the GPU core
 * dump's "coredump.address", or `culprit report --address`). */
#ifndef CULPRIT_REPORT_ADDR_H
#define CULPRIT_REPORT_ADDR_H

#include <stddef.h>
#include <stdint.h>

struct json;
struct render_buf;

#define ADDR_NEAR (1ull << 30) /* an allocation further than this from the address is not "near" it */
#define ADDR_NULL 0x10000ull   /* an address below this is a null pointer plus an offset */
#define ADDR_FREED_ARGS_MAX 64 /* candidates whose arguments addr_render_freed_args looks at */

/* Where the address lies, the answer's headline. */
enum addr_where {
    ADDR_NO_TABLE,     /* the report has no allocation table: nothing is known */
    ADDR_INSIDE,       /* inside an allocation live at the faulting launch */
    ADDR_OVERRUN,      /* it starts inside one, but the access runs past its end */
    ADDR_FREED,        /* inside a range freed before the faulting launch (use after free) */
    ADDR_UNMAPPED,     /* inside addresses reserved (virtual memory API) where nothing was mapped */
    ADDR_OUTSIDE,      /* in no allocation; an allocation lies near it */
    ADDR_NOTHING_NEAR, /* in no allocation, and none within ADDR_NEAR */
};

/* One range of the table, as the answer names it. */
struct addr_range {
    const struct json *obj; /* its entry in allocations.ranges; NULL: no such range */
    uint64_t base;          /* first byte */
    uint64_t size;          /* bytes */
    long long seq;          /* launch number when it was allocated */
    long long freed_seq;    /* launch number when it was freed, -1 while live */
    uint64_t run_base;      /* a mapping (kind "vm"): the adjacent live mappings it is one of, as one range */
    uint64_t run_size;      /* bytes of that run */
    int run_pieces;         /* mappings in it (0 for other kinds) */
};

struct addr_answer {
    uint64_t address;           /* the address asked about */
    uint64_t access;            /* bytes accessed there, 0 when unknown */
    long long fault_seq;        /* the faulting launch (the report's exact culprit); -1: the table is taken as it was
                                 * when the report was written */
    enum addr_where where;      /* the headline */
    struct addr_range in;       /* ADDR_INSIDE, ADDR_OVERRUN: the allocation holding it */
    struct addr_range freed;    /* a range freed before the fault that held it (the latest freed) */
    int freed_others;           /* more freed ranges that held it */
    struct addr_range later;    /* a range allocated after the faulting launch was made that holds it now */
    struct addr_range reserved; /* a reservation holding it */
    struct addr_range below;    /* nearest allocation ending at or below it, within ADDR_NEAR */
    struct addr_range above;    /* nearest allocation starting above it, within ADDR_NEAR */
    size_t nranges;             /* ranges the table lists */
    long long forgotten;        /* the table's count of freed ranges it dropped (it overflowed) */
    long long not_recorded;     /* the table's count of allocations it could not keep */
};

/* What a pointer into r reaches, [*base, *end): for a mapping, the run of adjacent live mappings it is one of (a
 * piece of an expandable segment reaches the rest); else r itself. */
void addr_reach(const struct addr_range *r, uint64_t *base, uint64_t *end);
/* Reads an address written as the report writes them ("0x7f12...", hex) or as a decimal number. 0 or -1. */
int addr_parse(const char *text, uint64_t *out);
/* The answer for address (access: bytes accessed, 0 when unknown) in report doc. Never fails: a report without a
 * table, or with missing or malformed fields, gives ADDR_NO_TABLE or leaves those ranges out. */
void addr_answer(const struct json *doc, uint64_t address, uint64_t access, struct addr_answer *a);
/* The same as of launch seq (what was live and what freed when it was made) rather than the report's culprit;
 * seq < 0: the table as it was when the report was written. */
void addr_answer_at(const struct json *doc, uint64_t address, uint64_t access, long long seq, struct addr_answer *a);
/* The address the report asks about: its "fault_address" (set by addr_annotate), else what the GPU core dump
 * said ("coredump.address", "coredump.access_size"), else the page the kernel's log of the GPU's memory fault gave
 * ("gpu_fault_log.address", written by culprit run). Returns 1 and fills the outputs (source: "command line",
 * "coredump" or "kernel log"), or 0 when it names none. */
int addr_of_report(const struct json *doc, uint64_t *address, uint64_t *access, const char **source);
/* How precise that address is: 0 for a byte, else the size of the page it stands for (the kernel's log gives
 * the 4 KiB page of the faulting address, not the byte). */
uint64_t addr_granule(const struct json *doc);
/* Sets doc's "fault_address" to the answer for address (docs/report.md). Returns 0, or -1 when memory is short. */
int addr_annotate(struct json *doc, uint64_t address, uint64_t access, const char *source);
/* The same for the address the GPU core dump gave ("coredump.address"), when it gave one: *changed says whether
 * doc was changed. Returns 0, or -1 when memory is short. */
int addr_annotate_coredump(struct json *doc, int *changed);
/* addr_annotate_coredump, and when the dump gave no address, the page of the kernel's log ("gpu_fault_log"):
 * "fault_address" then has source "kernel log", "granule" (the page's size) and "access" ("read", "write", ...).
 * Returns 0, or -1 when memory is short. */
int addr_annotate_fault(struct json *doc, int *changed);
/* What a value launch seq passed its kernel points into, for the verdict's argument lines: "offset 16 of the
 * allocation of 4096 bytes at 0x7f.. (cuMemAlloc_v2 before any launch), allocated at train.py:12" for an
 * allocation live when the launch was made (returns 1), or "offset 16 of memory freed before this launch (a use
 * after free): ..." for one freed before it (returns 2). Returns 0 when the value points into nothing recorded
 * (or the report has no table). */
int addr_describe_pointer(const struct json *doc, uint64_t value, long long seq, char *out, size_t outsz);
/* What word k of launch's recorded parameters ("params") points into: the buffer of the launch's operator
 * holding it (returns 1, addr_describe_op_buffer), else addr_describe_pointer's answer as of that launch (1, or 2
 * for memory freed before it); 0 when the word is malformed or points into nothing known. */
int addr_describe_word(const struct json *doc, const struct json *launch, size_t k, char *out, size_t outsz);
/* For a verdict of candidates: one line for each of launches (the first ADDR_FREED_ARGS_MAX) that was passed
 * memory freed before it was made (the likeliest to have faulted: any access through that word does), nothing
 * for the others. */
void addr_render_freed_args(struct render_buf *b, const struct json *doc, const struct json *launches);
/* What value is to the buffers the launch's operator was given ("op.buffers", culprit/diagnose.py's tensors):
 * "offset 16 of aten::index.Tensor's `index: int64[512] cuda:0` (4096 bytes at 0x7f..)" for one holding it, and
 * with near, else the nearest within ADDR_NEAR: "16 bytes past the end of ..." or "... before the start of ...".
 * Returns 1 with out filled, 0 when none does. */
int addr_describe_op_buffer(const struct json *launch, uint64_t value, int near, char *out, size_t outsz);
/* The verdict's lines about the address the report asks about (addr_of_report); nothing when it names none. */
void addr_render(struct render_buf *b, const struct json *doc);

#endif
