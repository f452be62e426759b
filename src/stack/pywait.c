/* The frames of the Python thread waiting on a launch made by a thread that runs no Python (pywait.h). The
 * choice is made by walking every other Python thread (pystack.c's walk, with guarded reads) and is kept per
 * launching thread with the words of the chosen thread's memory its walk depended on; what a launch pays to
 * trust it, cheapest first: the chosen thread's CPU-time clock (it has not run: its frames are as they were), a
 * read of those words in one system call (they hold what they held), a new walk (rate-limited). */
#define _GNU_SOURCE
#include "pywait.h"

#include "pystack_int.h"

#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/uio.h>
#include <time.h>

#define PYS_WAIT_REWALK_NS 1000000ull    /* a calling thread walks the other threads once a millisecond on average, */
#define PYS_WAIT_REWALK_BURST 8          /* with up to this many walks in a row */
#define PYS_WAIT_RECHOOSE_NS 10000000ull /* a choice made by default is made again after 10 ms */

static bool g_wait_counting; /* CULPRIT_STATS: count how each pystack_waiting call knew its frames */
static _Atomic uint64_t g_wc_clock, g_wc_checked, g_wc_walked, g_wc_none;
#define PYS_WC(c)                                                                                                      \
  do {                                                                                                                 \
    if (g_wait_counting) atomic_fetch_add_explicit(&(c), 1, memory_order_relaxed);                                     \
  } while (0)

void pystack_wait_counting(int on) { g_wait_counting = on != 0; }

void pystack_wait_counts(struct pystack_wait_counts *out) {
  out->by_clock = atomic_load_explicit(&g_wc_clock, memory_order_relaxed);
  out->checked = atomic_load_explicit(&g_wc_checked, memory_order_relaxed);
  out->walked = atomic_load_explicit(&g_wc_walked, memory_order_relaxed);
  out->none = atomic_load_explicit(&g_wc_none, memory_order_relaxed);
}

/* One launching thread's choice of waiting thread; allocated on its first launch without Python. */
struct pys_wait {
  unsigned long long id; /* the chosen thread's Python thread id */
  int n;                 /* frames in refs; 0 = no choice */
  bool autograd;         /* chosen because it waits in torch.autograd */
  uint64_t chosen_ns;    /* when the choice was made */
  clockid_t clock;       /* the chosen thread's CPU-time clock; 0 where unknown (3.10) */
  uint64_t cpu_ns;       /* its CPU time when its frames were last known to be as cached; 0 = none */
  uint64_t walk_tat;     /* rate of walks (GCRA): the time at which the walk budget is spent */
  struct pystack_ref refs[PYSTACK_MAX];
  struct pys_watch watch;               /* what the chosen thread's walk depended on */
  struct pys_watch cand_watch;          /* scratch for the walk */
  struct pystack_thread cand;           /* scratch for the walk */
  unsigned char check[PYS_CHECK_BYTES]; /* what a check reads */
};
static __thread struct pys_wait *tls_wait;

/* A forked child forgets the forking thread's choice: the thread it waited on stayed behind. Registered by the
 * first launching thread that keeps a choice, so a process that never needs one registers nothing. */
static void pywait_atfork_child(void) {
  if (tls_wait) tls_wait->n = 0;
}
static pthread_once_t g_wait_fork_once = PTHREAD_ONCE_INIT;
static void pywait_register_fork(void) { pthread_atfork(NULL, NULL, pywait_atfork_child); }

static uint64_t pys_now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

/* Groups the watched words into a few ranges read by one system call. Every page a range covers holds a
 * watched word (the gaps are shorter than a page), so it was mapped when the walk read it. */
static void pys_watch_plan(struct pys_watch *wt) {
  int order[PYS_WATCH_MAX];
  wt->nr = 0;
  if (wt->n <= 0) return;
  for (int i = 0; i < wt->n; i++) { /* insertion sort by address: a few dozen entries, once per walk */
    int j = i;
    for (; j > 0 && wt->addr[order[j - 1]] > wt->addr[i]; j--) order[j] = order[j - 1];
    order[j] = i;
  }
  uint32_t base = 0; /* where the current range starts in the check's buffer */
  for (int k = 0; k < wt->n; k++) {
    uintptr_t a = wt->addr[order[k]];
    int r = wt->nr - 1;
    if (r >= 0 && a < wt->rlo[r] + wt->rlen[r] + PYS_RANGE_GAP) {
      uint32_t len = (uint32_t)(a + sizeof(uintptr_t) - wt->rlo[r]);
      if (len > wt->rlen[r]) wt->rlen[r] = len;
    } else {
      if (wt->nr == PYS_RANGES_MAX) goto unplanned;
      if (r >= 0) base += wt->rlen[r];
      r = wt->nr++;
      wt->rlo[r] = a;
      wt->rlen[r] = sizeof(uintptr_t);
    }
    if (base + wt->rlen[r] > PYS_CHECK_BYTES) goto unplanned;
    wt->off[order[k]] = base + (uint32_t)(a - wt->rlo[r]);
  }
  return;
unplanned:
  wt->nr = 0;
}

/* Whether every word the walk of the choice depended on still holds what it held: one system call. */
static bool pys_watch_same(const struct pys_watch *wt, unsigned char *buf) {
  struct iovec remote[PYS_RANGES_MAX];
  size_t total = 0;
  if (wt->n <= 0 || wt->nr <= 0) return false;
  for (int r = 0; r < wt->nr; r++) {
    remote[r] = (struct iovec){(void *)wt->rlo[r], wt->rlen[r]};
    total += wt->rlen[r];
  }
  struct iovec local = {buf, total};
  if (process_vm_readv(g_pys_pid, &local, 1, remote, (unsigned long)wt->nr, 0) != (ssize_t)total) return false;
  for (int i = 0; i < wt->n; i++)
    if (memcmp(buf + wt->off[i], &wt->val[i], sizeof wt->val[i])) return false;
  return true;
}

/* CPU time consumed so far by the thread with this clock, or 0 if it cannot be read (the thread is gone). A
 * thread whose CPU time has not moved has not run, so its frames cannot have changed: reading this clock is a
 * third of the cost of reading the frames. */
static uint64_t pys_cpu_ns(clockid_t clock) {
  struct timespec t;
  if (!clock || clock_gettime(clock, &t)) return 0;
  return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec + 1; /* +1: never 0 once read */
}

/* The CPU-time clock of the thread with kernel id TID (what pthread_getcpuclockid makes, without touching the
 * thread's pthread structure, which may be gone). */
static clockid_t pys_thread_clock(unsigned long tid) {
  if (!tid || tid > 0x3fffffff) return 0;
  return (clockid_t)((~(unsigned)tid << 3) | 6u); /* CPUCLOCK_PERTHREAD_MASK | CPUCLOCK_SCHED */
}

/* Walks every other Python thread and makes a new choice in w. Guarded reads (tls_safe) are on. */
static void pys_choose(struct pys_wait *w) {
  struct pystack_thread *cand = &w->cand;
  uintptr_t states[PYS_MAX_THREADS];
  int nts = pys_other_states(states, PYS_MAX_THREADS);
  w->n = 0;
  w->autograd = false;
  for (int i = 0; i < nts; i++) {
    uintptr_t ts = states[i];
    clockid_t clock = pys_thread_clock(pys_ts_native_id(ts));
    uint64_t cpu = pys_cpu_ns(clock);
    cand->n = pys_walk(ts, cand->refs, PYSTACK_MAX, &w->cand_watch, NULL, 0);
    if (cand->n > 0 && !tls_fault && w->cand_watch.n > 0) {
      bool autograd = pys_in_autograd(cand->refs, cand->n);
      /* the list runs newest first: a later thread without autograd frames is older, a better default */
      if (autograd || !w->autograd) {
        w->watch = w->cand_watch;
        pys_watch_plan(&w->watch);
        w->clock = clock;
        /* the CPU time vouches for the frames only if the thread did not run while they were read */
        w->cpu_ns = cpu && pys_cpu_ns(clock) == cpu ? cpu : 0;
        w->id = pys_ts_thread_id(ts);
        w->n = cand->n;
        w->autograd = autograd;
        memcpy(w->refs, cand->refs, sizeof(struct pystack_ref) * (size_t)cand->n);
      }
      if (autograd) break;
    }
    tls_fault = 0;
  }
}

int pystack_waiting(struct pystack_ref *out, int max, unsigned long long *thread_id) {
  struct pys_wait *w = tls_wait;
  if (max <= 0 || !pys_others_readable()) goto none;
  if (!w) {
    w = pys_map(sizeof *w); /* once per launching thread without Python; never freed (~40 KiB, touched as used) */
    if (!w) goto none;
    pthread_once(&g_wait_fork_once, pywait_register_fork);
    tls_wait = w;
  }
  bool same = false, by_clock = false, walked = false;
  if (w->n > 0) {
    uint64_t cpu = pys_cpu_ns(w->clock);
    if (cpu && cpu == w->cpu_ns) {
      same = by_clock = true; /* it has not run since its frames were read or checked */
    } else {
      same = pys_watch_same(&w->watch, w->check);
      w->cpu_ns = same ? cpu : 0; /* read before the check: if it ran during it, the next call checks again */
    }
  }
  /* The clock only where the answer needs it (it can be a system call): a choice of a thread waiting in
   * torch.autograd that still holds is neither looked at again nor walked. */
  uint64_t now = same && w->autograd ? 0 : pys_now_ns();
  /* a choice made by default (no thread in torch.autograd) is looked at again now and then, in case another
   * thread starts waiting there */
  bool due = same && !w->autograd && now - w->chosen_ns >= PYS_WAIT_RECHOOSE_NS;
  tls_safe = 1;
  tls_fault = 0;
  if (!same || due) {
    if (now + (PYS_WAIT_REWALK_BURST - 1) * PYS_WAIT_REWALK_NS >= w->walk_tat) {
      w->walk_tat = (w->walk_tat > now ? w->walk_tat : now) + PYS_WAIT_REWALK_NS;
      pys_choose(w);
      walked = true;
      w->chosen_ns = now;
    } else if (!same) {
      w->n = 0; /* walks used up (a thread running Python moves all the time): no frames rather than stale ones */
    }
  }
  tls_safe = 0;
  tls_fault = 0;
  if (w->n <= 0) goto none;
  if (walked)
    PYS_WC(g_wc_walked);
  else if (by_clock)
    PYS_WC(g_wc_clock);
  else
    PYS_WC(g_wc_checked);
  int n = w->n < max ? w->n : max;
  memcpy(out, w->refs, sizeof(struct pystack_ref) * (size_t)n);
  if (thread_id) *thread_id = w->id;
  return n;
none:
  PYS_WC(g_wc_none);
  return 0;
}
