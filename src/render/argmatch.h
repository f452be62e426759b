/* Telling apart candidate launches of one kernel by what they passed it: a launch record keeps the first bytes of
 * its kernel's parameter buffer ("params", 8-byte words), and the faulting instruction touched some allocations.
 * Among the candidates that may be the faulting launch, the one whose parameters point into those allocations is
 * the one that ran the instruction. It reads the report only; making the verdict exact is the caller's. */
#ifndef CULPRIT_REPORT_ARGMATCH_H
#define CULPRIT_REPORT_ARGMATCH_H

#include <stddef.h>
#include <stdint.h>

struct json;

/* Addresses the faulting instruction touched: [base, end). */
struct argmatch_range {
    uint64_t base; /* first byte */
    uint64_t end;  /* one past the last byte */
};

/* Whether a candidate launch may be the faulting one at all (its kernel and shape, say); 1 or 0. */
typedef int (*argmatch_fits_fn)(void *arg, const struct json *launch);

/* What the candidates' parameters say. A candidate is ruled out only when its whole parameter buffer was kept
 * and no word of it points into a range; one without parameters, or whose buffer is longer than what was kept
 * (a pointer may lie beyond), stays possible. */
struct argmatch_result {
    size_t fitting;  /* candidates fits accepts */
    size_t possible; /* of those, the ones not ruled out */
    size_t hits;     /* of those, the ones with a word pointing into a range */
    size_t hit;      /* hits == 1: its index in "candidates" (of the first, when more) */
    int word;        /* hits == 1: its first such word (its byte offset is word * 8) */
    int range;       /* hits == 1: the range that word points into */
    uint64_t value;  /* hits == 1: that word */
};

/* Judges doc's "candidates" (those fits accepts; fits NULL: all) against the n ranges. Returns 1 when exactly
 * one candidate remains possible and its parameters point into a range: out->hit names it. Returns 0 otherwise
 * (none ruled in, several possible, no candidates): the verdict must stay as it is; never narrows to zero. */
int argmatch_find(const struct json *doc, const struct argmatch_range *ranges, int n, argmatch_fits_fn fits, void *arg,
                  struct argmatch_result *out);

/* The recorded parameter words of a launch: up to max of them into words; returns how many, -1 when the launch
 * carries none (graphs, a kernel whose layout the driver did not give, older reports). *size gets params_size. */
int argmatch_words(const struct json *launch, uint64_t *words, int max, uint64_t *size);

#endif
