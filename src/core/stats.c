/* CULPRIT_STATS: the counts (stats.h) and the line printed at exit. Reading another thread's counts while it
 * launches may be off by its last launch: they are statistics. */
#include "stats.h"

#include "crumb.h"
#include "markplan.h"
#include "ring.h"
#include "ticks.h"
#include "../stack/pywait.h"
#include "../stack/stack.h"

#include <stdatomic.h>
#include <stdio.h>
#include <unistd.h>

static _Atomic uint64_t g_blocking_syncs;    /* synchronizations blocking mode made */
static _Atomic uint64_t g_stacks_later;      /* blocking-mode launches kept without stacks: their sync succeeded */
static _Atomic uint64_t g_unserialized;      /* blocking launches that gave up waiting for the lock */
static struct pystack_wait_counts g_wc_base; /* pystack's counts a forked child inherited */
static struct stack_cache_counts g_sc_base;  /* the chain caches' counts a forked child inherited */

void stats_blocking_sync(void) { atomic_fetch_add_explicit(&g_blocking_syncs, 1, memory_order_relaxed); }
void stats_stacks_later(void) { atomic_fetch_add_explicit(&g_stacks_later, 1, memory_order_relaxed); }
void stats_unserialized(void) { atomic_fetch_add_explicit(&g_unserialized, 1, memory_order_relaxed); }

void stats_after_fork(void) {
  atomic_store(&g_blocking_syncs, 0);
  atomic_store(&g_stacks_later, 0);
  atomic_store(&g_unserialized, 0);
  stack_cache_counts(&g_sc_base);
  pystack_wait_counts(&g_wc_base);
}

#define STATS_MARK_STREAMS 4 /* streams the marks line names: those with the most launches */

/* How record mode spent its breadcrumbs on the streams with the most launches: the end of the stats line, with
 * its newline, into buf (at most cap bytes); its length. */
static size_t stats_marks(char *buf, size_t cap) {
  const struct cp_stream *top[STATS_MARK_STREAMS] = {0};
  int ntop = 0, streams = 0;
  for (uint32_t i = 0; i < crumb_capacity(); i++) {
    const struct cp_stream *st = crumb_at(i);
    if (!atomic_load_explicit(&st->key_stream, memory_order_acquire) || !st->slot) continue;
    streams++;
    uint64_t n = atomic_load_explicit(&st->launches, memory_order_relaxed);
    int at = ntop < STATS_MARK_STREAMS ? ntop++ : STATS_MARK_STREAMS;
    while (at > 0 && atomic_load_explicit(&top[at - 1]->launches, memory_order_relaxed) < n) {
      if (at < STATS_MARK_STREAMS) top[at] = top[at - 1];
      at--;
    }
    if (at < STATS_MARK_STREAMS) top[at] = st;
  }
  if (cap < 2) return 0;
  if (!ntop) return (size_t)snprintf(buf, cap, "\n");
  int k = snprintf(buf, cap, "; marks on %d stream(s)", streams);
  for (int i = 0; i < ntop && k > 0 && (size_t)k < cap; i++) {
    const struct cp_stream *st = top[i];
    int64_t bp = markplan_share_bp(st);
    char share[48] = "too short to tell";
    if (bp >= 0) snprintf(share, sizeof share, "~%.2f%% of its time", (double)bp / 100.0);
    uint32_t gap = atomic_load_explicit(&st->plan_gap, memory_order_relaxed);
    char spacing[32] = "";
    if (gap) snprintf(spacing, sizeof spacing, ", spacing %u", (unsigned)gap);
    k += snprintf(buf + k, cap - (size_t)k, "%s stream 0x%lx: %llu of %llu launches%s, %s", i ? "," : ":",
                  (unsigned long)(uintptr_t)st->handle,
                  (unsigned long long)atomic_load_explicit(&st->marks, memory_order_relaxed),
                  (unsigned long long)atomic_load_explicit(&st->launches, memory_order_relaxed), spacing, share);
  }
  if (k < 0 || (size_t)k >= cap - 1) k = (int)cap - 2; /* cut: the line still ends */
  buf[k++] = '\n';
  buf[k] = '\0';
  return (size_t)k;
}

void stats_print(uint64_t n, uint64_t fork_seq) {
  char msg[1800];
  struct cp_ring_stats rs;
  uint64_t chains = ring_stats_sum(&rs);
  double us = 1000.0 * (double)n; /* ns totals to microseconds per launch */
  uint64_t reused = rs.stack_reused;
  double ns_native = ticks_to_ns(rs.t_native), ns_reused = ticks_to_ns(rs.t_reused);
  double ns_culprit = ticks_to_ns(rs.t_in_culprit), ns_python = ticks_to_ns(rs.t_python);
  double ns_py_wait = ticks_to_ns(rs.t_py_wait);
  /* launches kept without stacks (blocking mode, synchronize succeeded) were neither reused nor unwound */
  uint64_t later = atomic_load(&g_stacks_later);
  if (later > n - reused) later = n - reused;
  uint64_t last_unwound = rs.last_unwound;
  struct stack_cache_counts sc;
  stack_cache_counts(&sc);
  struct pystack_wait_counts wc;
  pystack_wait_counts(&wc);
  uint64_t clock = wc.by_clock - g_wc_base.by_clock, checked = wc.checked - g_wc_base.checked;
  uint64_t walked = wc.walked - g_wc_base.walked, none = wc.none - g_wc_base.none;
  uint64_t found = clock + checked + walked, tries = found + none;
  int k = snprintf(msg, sizeof msg, "culprit: ");
  snprintf(msg + k, sizeof msg - (size_t)k,
           "stats: pid %d: %llu launches, %llu breadcrumbs (%llu refused), %llu blocking syncs (%llu not "
           "serialized, %llu with stacks left out), %llu records overwritten, %d threads, %llu call chains kept, "
           "%.2f us per launch in culprit (native stack %.2f, Python frames %.2f; %llu launches with a waiting "
           "thread's frames, %llu looked for them at %.2f us (%llu by its clock, %llu checked, %llu walked, %llu "
           "none); native stacks: %llu reused at %.2f us, %llu unwound at %.2f us (%llu learned, %llu in place of "
           "another, %llu of them at the same stack pointer, %llu not cacheable, %llu over the walk budget, %llu "
           "not looked up), the last at launch %llu)\n",
           (int)getpid(), (unsigned long long)n, (unsigned long long)crumb_written(),
           (unsigned long long)crumb_failures(), (unsigned long long)atomic_load(&g_blocking_syncs),
           (unsigned long long)atomic_load(&g_unserialized), (unsigned long long)later,
           (unsigned long long)ring_total_overwritten(), ring_count(), (unsigned long long)chains, ns_culprit / us,
           ns_native / us, ns_python / us, (unsigned long long)found, (unsigned long long)tries,
           tries ? ns_py_wait / 1000.0 / (double)tries : 0.0, (unsigned long long)clock, (unsigned long long)checked,
           (unsigned long long)walked, (unsigned long long)none, (unsigned long long)reused,
           reused ? ns_reused / 1000.0 / (double)reused : 0.0, (unsigned long long)(n - reused - later),
           n > reused + later ? (ns_native - ns_reused) / 1000.0 / (double)(n - reused - later) : 0.0,
           (unsigned long long)(sc.learned - g_sc_base.learned), (unsigned long long)(sc.evicted - g_sc_base.evicted),
           (unsigned long long)(sc.evicted_same_sp - g_sc_base.evicted_same_sp),
           (unsigned long long)(sc.not_kept - g_sc_base.not_kept),
           (unsigned long long)(sc.over_budget - g_sc_base.over_budget),
           (unsigned long long)(sc.bypassed - g_sc_base.bypassed),
           (unsigned long long)(last_unwound > fork_seq ? last_unwound - fork_seq : 0));
  size_t len = 0;
  while (msg[len]) len++;
  if (len && msg[len - 1] == '\n') len--; /* the marks close the same line */
  len += stats_marks(msg + len, sizeof msg - len);
  ssize_t w = write(2, msg, len);
  (void)w;
}
