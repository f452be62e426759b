/* The launch path's clock (ticks.h): which source, and the conversion of ticks to nanoseconds. */
#define _GNU_SOURCE
#include "ticks.h"

#if defined(__x86_64__)
#include <cpuid.h>
#endif

int ticks_tsc;
static uint64_t g_t0, g_ns0; /* the anchor: ticks and CLOCK_MONOTONIC read together at start */

/* Whether the processor says its TSC runs at a constant rate in every power state (CPUID 0x80000007, EDX bit
 * 8): only then do ticks measure time. */
static int tsc_invariant(void) {
#if defined(__x86_64__)
  unsigned a, b, c, d;
  if (!__get_cpuid(0x80000000u, &a, &b, &c, &d) || a < 0x80000007u) return 0;
  if (!__get_cpuid(0x80000007u, &a, &b, &c, &d)) return 0;
  return (d >> 8) & 1;
#else
  return 0;
#endif
}

void ticks_init(void) {
  ticks_tsc = tsc_invariant();
  g_ns0 = cp_mono_ns();
  g_t0 = ticks_now();
}

/* Nanoseconds per tick from the anchor to (t1, ns1); 0 when too little time has passed to tell. */
static double rate(uint64_t t1, uint64_t ns1) {
  if (t1 <= g_t0 || ns1 <= g_ns0) return 0;
  return (double)(ns1 - g_ns0) / (double)(t1 - g_t0);
}

uint64_t ticks_to_mono_ns(uint64_t t) {
  if (!ticks_tsc) return t;
  uint64_t ns1 = cp_mono_ns(), t1 = ticks_now();
  double r = rate(t1, ns1);
  if (r <= 0) return ns1;
  if (t <= t1) {
    uint64_t back = (uint64_t)((double)(t1 - t) * r);
    return back < ns1 ? ns1 - back : 0;
  }
  return ns1 + (uint64_t)((double)(t - t1) * r);
}

double ticks_ns_per_tick(void) {
  if (!ticks_tsc) return 1.0;
  uint64_t ns1 = cp_mono_ns(), t1 = ticks_now();
  if (ns1 < g_ns0 + TICKS_RATE_MIN_NS) return 0; /* too short a time to measure the rate to a fraction of 1% */
  return rate(t1, ns1);
}

double ticks_to_ns(uint64_t d) {
  if (!ticks_tsc) return (double)d;
  double r = rate(ticks_now(), cp_mono_ns());
  return r > 0 ? (double)d * r : 0;
}
