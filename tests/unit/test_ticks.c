/* The launch path's clock (src/core/ticks.c): time stamps come back as CLOCK_MONOTONIC nanoseconds between the
 * readings around them, durations in nanoseconds, in order, whichever source the processor allows. The bounds
 * are loose on purpose: these check the conversion, not how fast anything is. */
#include <stdint.h>
#include <time.h>

#include "check.h"
#include "core/ticks.h"

static void nap_ms(long ms) {
  struct timespec ts = {0, ms * 1000000L};
  while (nanosleep(&ts, &ts)) {
  }
}

static void check_source(void) {
  uint64_t m0 = cp_mono_ns();
  uint64_t t0 = ticks_now();
  nap_ms(20);
  uint64_t t1 = ticks_now();
  uint64_t m1 = cp_mono_ns();
  CHECK(t1 > t0, "ticks go forward: %llu then %llu", (unsigned long long)t0, (unsigned long long)t1);
  double d = ticks_to_ns(ticks_since(t0, t1));
  CHECK(d >= 15e6 && d <= (double)(m1 - m0) + 5e6, "20 ms of sleep measured as %.0f ns (clock said %llu ns)", d,
        (unsigned long long)(m1 - m0));
  /* Stamps taken between two clock readings convert to a time between them (a few microseconds of slack for
   * the rate measured over a short time). */
  uint64_t a = ticks_to_mono_ns(t0), b = ticks_to_mono_ns(t1);
  CHECK(a + 5000 >= m0 && a <= m1, "stamp before the nap: %llu, clock %llu..%llu", (unsigned long long)a,
        (unsigned long long)m0, (unsigned long long)m1);
  CHECK(b + 5000 >= m0 && b <= m1 + 5000, "stamp after the nap: %llu", (unsigned long long)b);
  CHECK(b > a && b - a >= 15000000ull, "the stamps are %llu ns apart", (unsigned long long)(b - a));
  CHECK(ticks_since(t1, t0) == 0, "a later reading taken first is no time, not a wrap-around");
}

int main(void) {
  ticks_init();
  check_source(); /* the processor's choice (TSC where it is invariant) */
  if (ticks_tsc) {
    ticks_tsc = 0; /* and CLOCK_MONOTONIC itself, where it is not */
    check_source();
  }
  return CHECK_DONE();
}
