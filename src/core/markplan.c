/* Record mode's mark plan (markplan.h): the spacing of a stream's breadcrumbs from the time its recent launches
 * took. The share a mark takes of a stream's time is its cost over the time between launches times the spacing,
 * so the spacing that keeps marks within the budget is cost / (budget x time per launch), rounded up. The time
 * per launch is the stream's wall time between launches as the host made them: it is the GPU's time per kernel
 * where the GPU is the bottleneck (the host waits for it, sooner or later) and the host's where the host is, and
 * in both cases what a mark's cost is measured against. */
#include "markplan.h"

#include "crumb.h"
#include "ticks.h"

static uint32_t g_budget_bp;          /* CULPRIT_MARK_BUDGET in basis points; 0: fixed spacing */
static uint32_t g_max_gap = 16;       /* CULPRIT_CRUMB_EVERY: the widest spacing */
static _Atomic uint64_t g_long_ticks; /* a launch this long may have a mark each; 0 until first needed */

void markplan_init(uint32_t budget_bp, uint32_t max_gap) {
  g_budget_bp = budget_bp;
  g_max_gap = max_gap ? max_gap : 1;
  atomic_store_explicit(&g_long_ticks, 0, memory_order_relaxed);
}

uint32_t markplan_gap(uint64_t win_ticks, uint64_t win_n, uint64_t long_ticks, uint32_t max_gap) {
  if (max_gap <= 1) return 1;
  if (!win_n || !win_ticks || !long_ticks) return max_gap;
  /* ceil(long_ticks / (win_ticks / win_n)); 128 bits: long_ticks is up to ~1e12 and win_n any caller's */
  unsigned __int128 num = (unsigned __int128)long_ticks * win_n;
  unsigned __int128 gap = (num + win_ticks - 1) / win_ticks;
  if (gap < 1) return 1;
  return gap > max_gap ? max_gap : (uint32_t)gap;
}

/* The time per launch at or above which every launch may have a mark: cost / budget, in ticks. Made once the
 * ticks' rate is known (ticks_ns_per_tick: 10 ms after start); 0 before, which plans the widest spacing (a
 * stream past its 512 young launches within 10 ms of start is a dense one). */
static uint64_t long_ticks(void) {
  uint64_t lt = atomic_load_explicit(&g_long_ticks, memory_order_relaxed);
  if (lt) return lt;
  double per_ns = ticks_ns_per_tick(); /* nanoseconds per tick */
  if (per_ns <= 0) return 0;
  lt = (uint64_t)((double)MARKPLAN_COST_NS * 10000.0 / (double)g_budget_bp / per_ns);
  if (!lt) lt = 1;
  atomic_store_explicit(&g_long_ticks, lt, memory_order_relaxed);
  return lt;
}

int markplan_due(const struct cp_stream *s, uint64_t nth) {
  if (!g_budget_bp) return nth % g_max_gap == 0;
  return nth >= atomic_load_explicit(&s->plan_next, memory_order_relaxed);
}

void markplan_marked(struct cp_stream *s, uint64_t nth, uint64_t t) {
  uint64_t n0 = atomic_load_explicit(&s->plan_nth, memory_order_relaxed);
  uint64_t t0 = atomic_load_explicit(&s->plan_ticks, memory_order_relaxed);
  atomic_store_explicit(&s->plan_nth, nth, memory_order_relaxed);
  atomic_store_explicit(&s->plan_ticks, t, memory_order_relaxed);
  if (!n0) atomic_store_explicit(&s->plan_first, t, memory_order_relaxed);
  if (!g_budget_bp) return; /* fixed spacing: the times serve the share alone */
  uint64_t wt = atomic_load_explicit(&s->win_ticks, memory_order_relaxed);
  uint64_t wn = atomic_load_explicit(&s->win_n, memory_order_relaxed);
  if (n0 && nth > n0) {
    wt += ticks_since(t0, t);
    wn += nth - n0;
    while (wn > MARKPLAN_WINDOW) { /* the older half weighs half: the plan follows a stream that changes pace */
      wt /= 2;
      wn /= 2;
    }
    atomic_store_explicit(&s->win_ticks, wt, memory_order_relaxed);
    atomic_store_explicit(&s->win_n, wn, memory_order_relaxed);
  }
  uint32_t gap = nth < (uint64_t)s->warm ? 1 : markplan_gap(wt, wn, long_ticks(), g_max_gap);
  atomic_store_explicit(&s->plan_gap, gap, memory_order_relaxed);
  atomic_store_explicit(&s->plan_next, nth + gap, memory_order_relaxed);
}

int64_t markplan_share_bp(const struct cp_stream *s) {
  uint64_t first = atomic_load_explicit(&s->plan_first, memory_order_relaxed);
  uint64_t last = atomic_load_explicit(&s->plan_ticks, memory_order_relaxed);
  uint64_t marks = atomic_load_explicit(&s->marks, memory_order_relaxed);
  double span = ticks_to_ns(ticks_since(first, last));
  if (!first || span < 1000.0 * MARKPLAN_COST_NS) return -1; /* under a thousand marks' worth of time */
  return (int64_t)((double)marks * MARKPLAN_COST_NS * 10000.0 / span + 0.5);
}
