/* Stream table and breadcrumb slots. Lookups are lock-free probes of an open-addressing table (plus a
 * one-entry per-thread cache); a stream seen for the first time takes a mutex, gets one 8-byte slot from its
 * context's pool of host-mapped memory, and is published by storing its key last. Entries are never removed:
 * a destroyed stream's entry is retired (its history stays for the verdict) and a reused handle gets a new one. */
#define _GNU_SOURCE
#include "crumb.h"

#include "../base/config.h"

#include "driver.h"
#include "errors.h"
#include "markplan.h"
#include "ring.h"
#include "zero.h"

#include <pthread.h>
#include <string.h>

#define STREAM_SLOTS 16384 /* power of two */
#define POOL_BYTES 4096    /* host-mapped bytes per pool chunk: 512 breadcrumbs */
#define MAX_POOLS 256
#define RETIRED ((uintptr_t)-1)

struct crumb_pool {
  void *ctx;                     /* owning context */
  int device;                    /* its device, -1 if unknown */
  volatile uint64_t *spare_host; /* a chunk allocated ahead (outside any capture), or NULL */
  uint64_t spare_dev;            /* its device view */
  volatile uint64_t *host;       /* current chunk, host view */
  uint64_t dev;                  /* current chunk, device view */
  uint32_t used;                 /* slots handed out of the current chunk */
  int broken;                    /* allocation failed once: no breadcrumbs in this context */
};

static struct cp_stream g_tab[STREAM_SLOTS];
static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static struct crumb_pool g_pools[MAX_POOLS]; /* under g_lock */
static struct {
  _Atomic(void *) ctx;   /* context; NULL = free */
  _Atomic uint64_t upto; /* launches up to this seq completed in it */
} g_ctx_synced[MAX_POOLS];
static int g_npools;                /* under g_lock */
static _Atomic uint32_t g_used;     /* entries taken */
static _Atomic uint64_t g_failures; /* breadcrumb writes the driver refused */

#define EVENT_SLOTS 4096 /* power of two; an event recorded again replaces its entry */
static struct {
  void *event;           /* key, NULL = empty */
  uint32_t stream;       /* stream table index */
  uint64_t seq;          /* newest launch on it when the event was recorded */
} g_events[EVENT_SLOTS]; /* under g_event_lock */
static pthread_mutex_t g_event_lock = PTHREAD_MUTEX_INITIALIZER;
static _Atomic uint64_t g_written;                /* breadcrumb writes queued */
#define RECENT_STREAMS 256                        /* power of two */
static _Atomic uint32_t g_recent[RECENT_STREAMS]; /* indexes + 1 of the streams made last (0: none), for
                                               * crumb_tails_ctx; a stream made since overwrites the oldest */
static _Atomic uint32_t g_recent_next;            /* next place in g_recent */

/* Last stream this thread launched to: most programs launch to the same stream again and again. */
static __thread struct {
  struct cp_stream *s; /* cached entry */
  void *handle;        /* handle it was looked up by */
  uintptr_t ctx;       /* context for default streams */
  int ptds;            /* entry-point semantics */
} tls_last;

uint32_t crumb_capacity(void) { return STREAM_SLOTS; }
uint32_t crumb_index(const struct cp_stream *s) { return (uint32_t)(s - g_tab); }
struct cp_stream *crumb_at(uint32_t idx) {
  return idx < STREAM_SLOTS ? &g_tab[idx] : NULL;
}
uint64_t crumb_failures(void) { return atomic_load_explicit(&g_failures, memory_order_relaxed); }
uint64_t crumb_written(void) { return atomic_load_explicit(&g_written, memory_order_relaxed); }

static size_t hash3(uintptr_t a, uintptr_t b, int c) {
  uint64_t x = (uint64_t)a * 0x9E3779B97F4A7C15ULL ^ (uint64_t)b * 0xC2B2AE3D27D4EB4FULL ^ (uint64_t)(unsigned)c;
  x ^= x >> 31;
  x *= 0xff51afd7ed558ccdULL;
  x ^= x >> 29;
  return (size_t)x & (STREAM_SLOTS - 1);
}

static struct cp_stream *probe(uintptr_t ks, uintptr_t kc, int kt) {
  for (size_t i = hash3(ks, kc, kt), n = 0; n < STREAM_SLOTS; i = (i + 1) & (STREAM_SLOTS - 1), n++) {
    /* acquire: pairs with the release store of key_stream in crumb_stream; the entry's fields are visible. */
    uintptr_t s = atomic_load_explicit(&g_tab[i].key_stream, memory_order_acquire);
    if (!s) return NULL;
    if (s == ks && atomic_load_explicit(&g_tab[i].key_ctx, memory_order_relaxed) == kc &&
        atomic_load_explicit(&g_tab[i].key_tid, memory_order_relaxed) == kt)
      return &g_tab[i];
  }
  return NULL;
}

/* A new chunk of host-mapped memory; 0 or -1. */
static int pool_chunk(volatile uint64_t **host, uint64_t *dev) {
  void *h = NULL;
  uint64_t d = 0;
  if (!cp_drv.host_alloc || !cp_drv.host_get_dptr ||
      cp_drv.host_alloc(&h, POOL_BYTES, CP_CU_MEMHOSTALLOC_PORTABLE | CP_CU_MEMHOSTALLOC_DEVICEMAP) || !h ||
      cp_drv.host_get_dptr(&d, h, 0) || !d)
    return -1;
  memset(h, 0, POOL_BYTES);
  *host = h;
  *dev = d;
  return 0;
}

/* One slot of host-mapped memory in ctx's pool; called with g_lock held and ctx current. may_alloc is 0 while
 * a stream capture is under way: allocating pinned memory then is a call the driver forbids during a global
 * capture and it would invalidate the program's graph, so the slot comes from memory allocated earlier or not
 * at all (CP_ELATER: try again later). A spare chunk is allocated ahead, outside captures, to make that rare. */
static int pool_slot(void *ctx, volatile uint64_t **host, uint64_t *dev, int may_alloc) {
  struct crumb_pool *p = NULL;
  for (int i = 0; i < g_npools; i++)
    if (g_pools[i].ctx == ctx) p = &g_pools[i];
  if (!p) {
    if (g_npools == MAX_POOLS) return -1;
    p = &g_pools[g_npools++];
    memset(p, 0, sizeof *p);
    p->ctx = ctx;
    p->device = -1;
    if (cp_drv.ctx_get_device && cp_drv.ctx_get_device(&p->device)) p->device = -1;
    p->used = POOL_BYTES / 8; /* forces a chunk below */
  }
  if (p->broken) return -1;
  if (p->used == POOL_BYTES / 8) {
    if (p->spare_host) {
      p->host = p->spare_host;
      p->dev = p->spare_dev;
      p->spare_host = NULL;
    } else if (!may_alloc) {
      return CP_ELATER;
    } else if (pool_chunk(&p->host, &p->dev)) {
      p->broken = 1;
      return -1;
    }
    p->used = 0;
  }
  *host = p->host + p->used;
  *dev = p->dev + 8u * p->used;
  p->used++;
  if (may_alloc && !p->spare_host && p->used > POOL_BYTES / 8 * 3 / 4 && pool_chunk(&p->spare_host, &p->spare_dev))
    p->spare_host = NULL;
  return 0;
}

/* The identity of the stream a handle names for the calling thread; -1 when there is no current context. */
static int stream_key(void *handle, int ptds, int tid, int *kind, void **ctx, uintptr_t *ks, uintptr_t *kc, int *kt) {
  if (handle == NULL)
    *kind = ptds ? CP_STREAM_PER_THREAD : CP_STREAM_LEGACY;
  else if (handle == CP_CU_STREAM_LEGACY)
    *kind = CP_STREAM_LEGACY;
  else if (handle == CP_CU_STREAM_PER_THREAD)
    *kind = CP_STREAM_PER_THREAD;
  else
    *kind = CP_STREAM_CREATED;
  *ctx = NULL;
  if (*kind != CP_STREAM_CREATED && (!cp_drv.ctx_get_current || cp_drv.ctx_get_current(ctx) || !*ctx)) return -1;
  *ks = *kind == CP_STREAM_CREATED ? (uintptr_t)handle : (uintptr_t)*kind;
  *kc = (uintptr_t)*ctx;
  *kt = *kind == CP_STREAM_PER_THREAD ? tid : 0;
  return 0;
}

struct cp_stream *crumb_find(void *handle, int ptds, int tid) {
  int kind, kt;
  void *ctx;
  uintptr_t ks, kc;
  if (stream_key(handle, ptds, tid, &kind, &ctx, &ks, &kc, &kt)) return NULL;
  return probe(ks, kc, kt);
}

void crumb_note_synced(struct cp_stream *s, uint64_t upto) {
  if (s) atomic_max_u64(&s->synced, upto);
}

void crumb_note_untracked(struct cp_stream *s, uint64_t n) { atomic_max_u64(&s->untracked, n); }
void crumb_note_untracked_done(struct cp_stream *s, uint64_t n) { atomic_max_u64(&s->untracked_done, n); }

int crumb_untracked_pending(uint64_t ctx_done) {
  for (uint32_t i = 0; i < STREAM_SLOTS; i++) {
    const struct cp_stream *s = &g_tab[i];
    if (!atomic_load_explicit(&s->key_stream, memory_order_acquire)) continue;
    uint64_t u = atomic_load_explicit(&s->untracked, memory_order_relaxed);
    if (u > ctx_done && u > atomic_load_explicit(&s->untracked_done, memory_order_relaxed)) return 1;
  }
  return 0;
}

void crumb_note_ctx_synced(void *ctx, uint64_t upto) {
  if (!ctx) return;
  for (int i = 0; i < MAX_POOLS; i++) {
    void *c = atomic_load_explicit(&g_ctx_synced[i].ctx, memory_order_acquire);
    if (!c) {
      void *expect = NULL;
      /* acq_rel: claim a free row; a racing claimer of the same ctx may take another row, which only means
       * crumb_done reads the larger of two. */
      if (!atomic_compare_exchange_strong_explicit(&g_ctx_synced[i].ctx, &expect, ctx, memory_order_acq_rel,
                                                   memory_order_acquire) &&
          expect != ctx)
        continue;
      c = ctx;
    }
    if (c == ctx) {
      atomic_max_u64(&g_ctx_synced[i].upto, upto);
      return;
    }
  }
}

uint64_t crumb_ctx_synced_max(void) {
  uint64_t m = 0;
  for (int i = 0; i < MAX_POOLS; i++) {
    if (!atomic_load_explicit(&g_ctx_synced[i].ctx, memory_order_acquire)) break;
    uint64_t u = atomic_load_explicit(&g_ctx_synced[i].upto, memory_order_relaxed);
    if (u > m) m = u;
  }
  return m;
}

uint64_t crumb_done(const struct cp_stream *s) {
  uint64_t d = atomic_load_explicit(&s->synced, memory_order_relaxed);
  if (s->slot) {
    uint64_t v = crumb_slot_value(s->slot, atomic_load_explicit(&s->last_launched, memory_order_relaxed));
    if (v > d) d = v;
  }
  for (int i = 0; i < MAX_POOLS; i++) {
    void *c = atomic_load_explicit(&g_ctx_synced[i].ctx, memory_order_acquire);
    if (!c) break;
    uint64_t u = atomic_load_explicit(&g_ctx_synced[i].upto, memory_order_relaxed);
    if (c == s->ctx && u > d) d = u;
  }
  return d;
}

/* Gives s its slot now if it had to wait (made during a capture); with g_lock held. */
static void late_slot(struct cp_stream *s, int may_alloc) {
  if (s->slot || !atomic_load_explicit(&s->needs_slot, memory_order_relaxed) || !s->ctx) return;
  int rc = pool_slot(s->ctx, &s->slot, &s->dslot, may_alloc);
  if (rc == -1) s->slot = NULL;
  if (rc != CP_ELATER) atomic_store_explicit(&s->needs_slot, 0, memory_order_relaxed);
}

struct cp_stream *crumb_stream(void *handle, int ptds, int tid, int may_alloc) {
  int kind, kt;
  void *ctx;
  uintptr_t ks, kc;
  if (stream_key(handle, ptds, tid, &kind, &ctx, &ks, &kc, &kt)) return NULL; /* the launch will fail too */

  struct cp_stream *s = tls_last.s;
  if (s && tls_last.handle == handle && tls_last.ptds == ptds && tls_last.ctx == kc &&
      !atomic_load_explicit(&s->dead, memory_order_relaxed) &&
      (s->slot || !may_alloc || !atomic_load_explicit(&s->needs_slot, memory_order_relaxed)))
    return s;
  s = probe(ks, kc, kt);
  if (!s) {
    pthread_mutex_lock(&g_lock);
    s = probe(ks, kc, kt);
    if (!s && atomic_load_explicit(&g_used, memory_order_relaxed) < STREAM_SLOTS * 3 / 4) {
      size_t i = hash3(ks, kc, kt);
      while (atomic_load_explicit(&g_tab[i].key_stream, memory_order_relaxed)) i = (i + 1) & (STREAM_SLOTS - 1);
      s = &g_tab[i];
      void *sctx = ctx;
      if (kind == CP_STREAM_CREATED && cp_drv.stream_get_ctx && cp_drv.stream_get_ctx(handle, &sctx)) sctx = NULL;
      if (!sctx && cp_drv.ctx_get_current) cp_drv.ctx_get_current(&sctx);
      s->kind = kind;
      s->ctx = sctx;
      s->device = -1;
      if (cp_drv.ctx_get_device && cp_drv.ctx_get_device(&s->device)) s->device = -1;
      s->handle = handle;
      /* record mode marks a young stream's every launch (markplan.h), for the program's first streams */
      s->warm = atomic_load_explicit(&g_used, memory_order_relaxed) < MARKPLAN_WARM_STREAMS ? MARKPLAN_WARM : 0;
      int prc = sctx ? pool_slot(sctx, &s->slot, &s->dslot, may_alloc) : -1;
      if (prc) {
        s->slot = NULL;
        s->dslot = 0;
        atomic_store_explicit(&s->needs_slot, prc == CP_ELATER, memory_order_relaxed);
      }
      atomic_store_explicit(&s->key_ctx, kc, memory_order_relaxed);
      atomic_store_explicit(&s->key_tid, kt, memory_order_relaxed);
      atomic_fetch_add_explicit(&g_used, 1, memory_order_relaxed);
      /* release: publishes the entry to lock-free probes (pairs with the acquire in probe). */
      atomic_store_explicit(&s->key_stream, ks, memory_order_release);
      uint32_t at = atomic_fetch_add_explicit(&g_recent_next, 1, memory_order_relaxed) & (RECENT_STREAMS - 1);
      atomic_store_explicit(&g_recent[at], (uint32_t)i + 1, memory_order_relaxed);
    }
    pthread_mutex_unlock(&g_lock);
    if (!s) return NULL;
  }
  if (!s->slot && may_alloc && atomic_load_explicit(&s->needs_slot, memory_order_relaxed)) {
    pthread_mutex_lock(&g_lock);
    late_slot(s, may_alloc);
    pthread_mutex_unlock(&g_lock);
  }
  tls_last.s = s;
  tls_last.handle = handle;
  tls_last.ptds = ptds;
  tls_last.ctx = kc;
  return s;
}

/* The default write, fenced after the kernel's own writes. CU_STREAM_WRITE_VALUE_NO_MEMORY_BARRIER is refused
 * (CUDA_ERROR_INVALID_VALUE) by the _v2 entry points that CUDA 12 and 13 resolve to. */
#define CRUMB_FLAGS 0u

int crumb_mark32;
static _Atomic int g_memset_on;      /* breadcrumbs are written by memset (cleared for good when refused) */
static _Atomic int g_memset_refused; /* what the driver answered the first refused memset; 0 = none */

void crumb_set_mark(int mark) {
  crumb_mark32 = mark == CP_MARK_MEMSET; /* slots may hold 32-bit marks from here on, even after a fallback */
  atomic_store_explicit(&g_memset_on, crumb_mark32, memory_order_relaxed);
  atomic_store_explicit(&g_memset_refused, 0, memory_order_relaxed);
}

int crumb_memset_refused(void) { return atomic_load_explicit(&g_memset_refused, memory_order_relaxed); }

/* CULPRIT_MARK=memset: the low 32 bits of value, by a memset of the slot's first word (the low half of the
 * 64-bit slot on a little-endian host; the high half is never written and stays 0). */
static int crumb_memset_to(void *handle, int ptds, uint64_t dslot, uint64_t value) {
  unsigned low = (unsigned)(value & 0xffffffffu);
  if (!cp_drv.memset_d32_async) return -1;
  if (ptds && cp_drv.memset_d32_async_ptsz) return cp_drv.memset_d32_async_ptsz(dslot, low, 1, handle);
  if (ptds && !handle) return cp_drv.memset_d32_async(dslot, low, 1, CP_CU_STREAM_PER_THREAD);
  return cp_drv.memset_d32_async(dslot, low, 1, handle);
}

static int crumb_write64_to(void *handle, int ptds, uint64_t dslot, uint64_t value) {
  if (!cp_drv.write_value64) return -1;
  if (ptds && cp_drv.write_value64_ptsz) return cp_drv.write_value64_ptsz(handle, dslot, value, CRUMB_FLAGS);
  if (ptds && !handle) return cp_drv.write_value64(CP_CU_STREAM_PER_THREAD, dslot, value, CRUMB_FLAGS);
  return cp_drv.write_value64(handle, dslot, value, CRUMB_FLAGS);
}

int crumb_write_to(void *handle, int ptds, uint64_t dslot, uint64_t value) {
  int rc;
  if (atomic_load_explicit(&g_memset_on, memory_order_relaxed)) {
    rc = crumb_memset_to(handle, ptds, dslot, value);
    /* A driver that refuses a memset into host-mapped memory (or has none) still takes the write: it serves
     * every later breadcrumb. A sticky error is the program's fault surfacing, not a refusal. */
    if (rc && !cp_is_sticky(rc)) {
      int none = 0;
      atomic_compare_exchange_strong_explicit(&g_memset_refused, &none, rc, memory_order_relaxed, memory_order_relaxed);
      atomic_store_explicit(&g_memset_on, 0, memory_order_relaxed);
      rc = crumb_write64_to(handle, ptds, dslot, value);
    }
  } else {
    rc = crumb_write64_to(handle, ptds, dslot, value);
  }
  if (rc)
    atomic_fetch_add_explicit(&g_failures, 1, memory_order_relaxed);
  else
    atomic_fetch_add_explicit(&g_written, 1, memory_order_relaxed);
  return rc;
}

int crumb_write(struct cp_stream *s, void *handle, int ptds, uint64_t seq) {
  if (!s->slot) return -1;
  int rc = crumb_write_to(handle, ptds, s->dslot, seq);
  if (!rc) {
    atomic_max_u64(&s->crumbed, seq);
    atomic_fetch_add_explicit(&s->marks, 1, memory_order_relaxed);
  }
  return rc;
}

int crumb_tail(struct cp_stream *s, void *handle, int ptds) {
  uint64_t last = atomic_load_explicit(&s->last_launched, memory_order_relaxed);
  if (!s->slot || !last || atomic_load_explicit(&s->crumbed, memory_order_relaxed) >= last ||
      atomic_load_explicit(&s->dead, memory_order_relaxed) || atomic_load_explicit(&s->gone, memory_order_relaxed))
    return 0;
  /* Only in the stream's own context: a memset on a stream of another context than the calling thread's current
   * one may be refused, and a refused memset turns every later breadcrumb into the slower write. */
  void *cur = NULL;
  if (!cp_drv.ctx_get_current || cp_drv.ctx_get_current(&cur) || !cur || cur != s->ctx) return 0;
  /* A launch of another thread on this stream meanwhile may come before the mark: the mark then says less than
   * it could (last completed), never more. */
  int rc = crumb_write(s, handle, ptds, last);
  if (!rc) atomic_max_u64(&s->tail_crumb, last);
  return rc;
}

void crumb_tails_ctx(void *ctx, int tid) {
  for (uint32_t i = 0; i < RECENT_STREAMS; i++) {
    uint32_t idx = atomic_load_explicit(&g_recent[i], memory_order_relaxed);
    if (!idx) continue;
    struct cp_stream *s = &g_tab[idx - 1];
    /* acquire: pairs with the release that published the entry; an entry being remade is skipped */
    uintptr_t ks = atomic_load_explicit(&s->key_stream, memory_order_acquire);
    if (!ks || s->ctx != ctx) continue;
    if (s->kind == CP_STREAM_PER_THREAD) {
      /* another thread's per-thread default stream cannot be named from here */
      if (atomic_load_explicit(&s->key_tid, memory_order_relaxed) != tid) continue;
      crumb_tail(s, NULL, 1);
    } else {
      crumb_tail(s, s->kind == CP_STREAM_LEGACY ? CP_CU_STREAM_LEGACY : s->handle, 0);
    }
  }
}

int crumb_alloc_slot(volatile uint64_t **host, uint64_t *dev, int may_alloc) {
  void *ctx = NULL;
  int rc = -1;
  if (!cp_drv.ctx_get_current || cp_drv.ctx_get_current(&ctx) || !ctx) return -1;
  pthread_mutex_lock(&g_lock);
  rc = pool_slot(ctx, host, dev, may_alloc);
  pthread_mutex_unlock(&g_lock);
  return rc;
}

static size_t event_slot(void *event) {
  size_t i = hash3((uintptr_t)event, 0, 0) & (EVENT_SLOTS - 1);
  /* Bounded probe: a full neighbourhood just overwrites the oldest guess (the bound is an optimization). */
  for (size_t k = 0; k < 8; k++) {
    size_t j = (i + k) & (EVENT_SLOTS - 1);
    if (g_events[j].event == event || !g_events[j].event) return j;
  }
  return i;
}

void crumb_event_recorded(void *event, struct cp_stream *s, uint64_t seq) {
  if (!event || !s) return;
  pthread_mutex_lock(&g_event_lock);
  size_t j = event_slot(event);
  g_events[j].event = event;
  g_events[j].stream = crumb_index(s);
  g_events[j].seq = seq;
  pthread_mutex_unlock(&g_event_lock);
}

void crumb_event_completed(void *event) {
  struct cp_stream *s = NULL;
  uint64_t seq = 0;
  if (!event) return;
  pthread_mutex_lock(&g_event_lock);
  size_t j = event_slot(event);
  if (g_events[j].event == event) {
    s = crumb_at(g_events[j].stream);
    seq = g_events[j].seq;
  }
  pthread_mutex_unlock(&g_event_lock);
  if (s && seq) crumb_note_synced(s, seq);
}

void crumb_ctx_gone(void *ctx, int device) {
  pthread_mutex_lock(&g_lock);
  for (uint32_t i = 0; i < STREAM_SLOTS; i++) {
    struct cp_stream *s = &g_tab[i];
    if (!atomic_load_explicit(&s->key_stream, memory_order_acquire)) continue;
    if (ctx ? s->ctx != ctx : s->device != device) continue;
    atomic_store_explicit(&s->gone, 1, memory_order_relaxed);
    atomic_store_explicit(&s->dead, 1, memory_order_relaxed);
    s->slot = NULL; /* the memory goes with the context */
    atomic_store_explicit(&s->key_ctx, RETIRED, memory_order_relaxed);
  }
  for (int i = 0; i < g_npools;) {
    if (ctx ? g_pools[i].ctx == ctx : g_pools[i].device == device)
      g_pools[i] = g_pools[--g_npools];
    else
      i++;
  }
  pthread_mutex_unlock(&g_lock);
  /* Completion bounds keyed by a context handle that may be reused would claim too much: drop them all. */
  for (int i = 0; i < MAX_POOLS; i++) atomic_store_explicit(&g_ctx_synced[i].upto, 0, memory_order_relaxed);
  tls_last.s = NULL;
}

void crumb_event_forget(void *event) {
  if (!event) return;
  pthread_mutex_lock(&g_event_lock);
  size_t j = event_slot(event);
  if (g_events[j].event == event) g_events[j].event = NULL;
  pthread_mutex_unlock(&g_event_lock);
}

void crumb_stream_destroyed(void *handle) {
  if (!handle || handle == CP_CU_STREAM_LEGACY || handle == CP_CU_STREAM_PER_THREAD) return;
  pthread_mutex_lock(&g_lock);
  struct cp_stream *s = probe((uintptr_t)handle, 0, 0);
  if (s) {
    atomic_store_explicit(&s->dead, 1, memory_order_relaxed);
    /* The key no longer matches, so a new stream with the same handle gets its own entry and history. */
    atomic_store_explicit(&s->key_ctx, RETIRED, memory_order_relaxed);
  }
  pthread_mutex_unlock(&g_lock);
  if (tls_last.handle == handle) tls_last.s = NULL;
}

void crumb_after_fork(void) {
  /* Single-threaded here. The parent's host-mapped memory means nothing to a child's driver state. */
  cp_zero_table(g_tab, sizeof g_tab);
  memset(g_pools, 0, sizeof g_pools);
  atomic_store(&g_written, 0); /* CULPRIT_STATS counts the child's own */
  atomic_store(&g_failures, 0);
  memset(g_ctx_synced, 0, sizeof g_ctx_synced);
  cp_zero_table(g_events, sizeof g_events);
  for (uint32_t i = 0; i < RECENT_STREAMS; i++) atomic_store(&g_recent[i], 0);
  pthread_mutex_init(&g_event_lock, NULL);
  g_npools = 0;
  atomic_store(&g_used, 0);
  tls_last.s = NULL;
  pthread_mutex_init(&g_lock, NULL);
}
