/* Record mode's mark plan (core/markplan.c): the spacing the budget allows for a stream's pace, and the plan a
 * stream follows as it ages: every launch while it is young, every launch while its launches are far apart,
 * the widest spacing once they come close together, and the share its marks are estimated to have taken. */
#include <stdint.h>
#include <string.h>
#include <time.h>

#include "check.h"
#include "core/crumb.h"
#include "core/markplan.h"
#include "core/ticks.h"

/* Plays n launches of s, dt ticks apart from t, marking where the plan says; returns the marks made. */
static uint64_t play(struct cp_stream *s, uint64_t *nth, uint64_t *t, uint64_t n, uint64_t dt) {
  uint64_t marks = 0;
  for (uint64_t i = 0; i < n; i++) {
    ++*nth;
    *t += dt;
    if (*nth == 1 || markplan_due(s, *nth)) {
      atomic_fetch_add(&s->marks, 1); /* crumb_write's count */
      markplan_marked(s, *nth, *t);
      marks++;
    }
  }
  return marks;
}

int main(void) {
  /* The spacing: cost over budget x time per launch, rounded up, within 1..max. */
  CHECK(markplan_gap(0, 0, 1000, 16) == 16, "nothing measured: the widest spacing");
  CHECK(markplan_gap(1000 * 100, 100, 1000, 16) == 1, "launches as long as the threshold: every one");
  CHECK(markplan_gap(5000 * 100, 100, 1000, 16) == 1, "longer: every one");
  CHECK(markplan_gap(500 * 100, 100, 1000, 16) == 2, "half the threshold: every other one");
  CHECK(markplan_gap(300 * 100, 100, 1000, 16) == 4, "a third of it, rounded up: %u",
        markplan_gap(30000, 100, 1000, 16));
  CHECK(markplan_gap(10 * 100, 100, 1000, 16) == 16, "dense: the widest spacing, not 100");
  CHECK(markplan_gap(10 * 100, 100, 1000, 4) == 4, "the widest spacing is the setting");
  CHECK(markplan_gap(10 * 100, 100, 1000, 1) == 1, "a widest spacing of 1 marks every launch");
  CHECK(markplan_gap(1, 512, (uint64_t)1 << 40, 4096) == 4096, "no overflow for a long threshold");

  ticks_init();
  CHECK(markplan_gap(1000, 1, 0, 16) == 16, "before the ticks' rate is known: the widest spacing");
  /* the plan's threshold waits for the ticks' rate to be measured over 10 ms; the test waits longer, so that
   * its own conversion below and the plan's agree to a small fraction */
  struct timespec nap = {0, 3 * (long)TICKS_RATE_MIN_NS};
  nanosleep(&nap, NULL);
  double ns_per_tick = ticks_ns_per_tick();
  CHECK(ns_per_tick > 0, "the rate is known after 30 ms");
  if (ns_per_tick <= 0) ns_per_tick = 1;
  uint64_t us = (uint64_t)(1000.0 / ns_per_tick + 0.5); /* ticks in a microsecond */
  if (!us) us = 1;

  /* 1% of the time, 2 us a mark: launches 200 us apart or more may each have one. */
  markplan_init(100, 16);
  static struct cp_stream s;
  memset(&s, 0, sizeof s);
  s.warm = MARKPLAN_WARM;
  uint64_t nth = 0, t = 1000000 * us;
  uint64_t m = play(&s, &nth, &t, MARKPLAN_WARM, 3 * us);
  CHECK(m == MARKPLAN_WARM, "a young stream: every launch marked, however dense (%llu of %d)", (unsigned long long)m,
        MARKPLAN_WARM);
  m = play(&s, &nth, &t, 1600, 3 * us);
  CHECK(m >= 100 && m <= 120, "dense, past its youth: one mark in 16 (%llu of 1600)", (unsigned long long)m);
  CHECK(atomic_load(&s.plan_gap) == 16, "spacing %u", atomic_load(&s.plan_gap));
  m = play(&s, &nth, &t, 100, 1000 * us);
  CHECK(m >= 50, "launches 1 ms apart: the plan follows within the window (%llu of the first 100)",
        (unsigned long long)m);
  m = play(&s, &nth, &t, 400, 1000 * us);
  CHECK(m == 400, "launches 1 ms apart: every one marked (%llu of 400)", (unsigned long long)m);
  CHECK(atomic_load(&s.plan_gap) == 1, "spacing %u", atomic_load(&s.plan_gap));
  play(&s, &nth, &t, 500, 60 * us);
  m = play(&s, &nth, &t, 2000, 60 * us);
  CHECK(m >= 2000 / 4 - 5 && m <= 2000 / 4 + 5, "60 us apart: one in 4 (%llu of 2000)", (unsigned long long)m);
  int64_t share = markplan_share_bp(&s);
  CHECK(share > 0 && share < 400, "the share is estimated, within a few percent: %lld bp", (long long)share);

  /* An old stream (past the program's first streams) gets no youth; a budget of 0 is the fixed spacing. */
  static struct cp_stream old;
  memset(&old, 0, sizeof old);
  nth = 0;
  m = play(&old, &nth, &t, 320, 3 * us);
  CHECK(m >= 20 && m <= 22, "no youth: the first launch, then one in 16 (%llu)", (unsigned long long)m);
  markplan_init(0, 16);
  static struct cp_stream fixed;
  memset(&fixed, 0, sizeof fixed);
  fixed.warm = MARKPLAN_WARM;
  nth = 0;
  m = play(&fixed, &nth, &t, 320, 1000 * us);
  CHECK(m == 21, "budget 0: the first launch and every 16th, far apart or not (%llu)", (unsigned long long)m);
  CHECK(markplan_share_bp(&fixed) >= 0, "the share is still estimated");
  return CHECK_DONE();
}
