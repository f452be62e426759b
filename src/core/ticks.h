/* The launch path's clock: the CPU's time-stamp counter where it is invariant (x86-64), read in a few
 * nanoseconds, else CLOCK_MONOTONIC. Every launch takes a time stamp, and CULPRIT_STATS times every part of the
 * launch path; clock_gettime is a system call wherever the kernel's clocksource has no vDSO path (some virtual
 * machines), so ticks are taken on the launch path and made nanoseconds only when a report or the statistics
 * read them. Not for waiting or deadlines (clock.h). */
#ifndef CULPRIT_TICKS_H
#define CULPRIT_TICKS_H

#include <stdint.h>

#include "clock.h"

#if defined(__x86_64__)
#include <x86intrin.h>
#endif

extern int ticks_tsc; /* 1: ticks are TSC cycles (set once by ticks_init); 0: nanoseconds */

/* Decides the source and takes the anchor later conversions measure the rate from; once, at library start. */
void ticks_init(void);

static inline uint64_t ticks_now(void) {
#if defined(__x86_64__)
  if (__builtin_expect(ticks_tsc, 1)) return __rdtsc();
#endif
  return cp_mono_ns();
}

/* Elapsed ticks between a and b (b taken after a), 0 if b reads earlier (two cores' counters may differ). */
static inline uint64_t ticks_since(uint64_t a, uint64_t b) { return b > a ? b - a : 0; }

/* A time stamp as CLOCK_MONOTONIC nanoseconds: anchored at this moment, with the rate measured since start, so
 * the error is about the jitter of one clock read whatever the rate's error, for stamps of the recent past. */
uint64_t ticks_to_mono_ns(uint64_t t);
/* A duration in ticks as nanoseconds (the rate measured since start). */
double ticks_to_ns(uint64_t d);
/* Nanoseconds per tick, once the rate has been measured over TICKS_RATE_MIN_NS since start; 0 before. */
#define TICKS_RATE_MIN_NS 10000000ull
double ticks_ns_per_tick(void);

#endif
