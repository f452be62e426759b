/* The last look: before the process exits and before a context is destroyed, reset or released, every context
 * the process launched on is asked, through non-blocking queries of its streams, for a sticky error, waiting a
 * bounded time for work still unfinished. It finds the faults a program never met in a call culprit wraps (the
 * CUDA runtime or a library such as cuBLAS checked the context itself) and the faults of kernels that had not
 * even run yet when the program returned from main. Deciding whether to look, and reporting, is aftermath.c's. */
#define _GNU_SOURCE
#include "lastlook.h"

#include "../core/clock.h"
#include "../core/crumb.h"
#include "../core/driver.h"
#include "../core/ring.h"

#include <stdint.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define LOOK_MAX_CTX 64        /* contexts looked at (a process rarely has more than one per device) */
#define CU_ERROR_NOT_READY 600 /* cuda.h's CUDA_ERROR_NOT_READY: the stream still has work */

/* Whether entry s belongs to what is being looked at: one context, one device's contexts, or (ctx NULL and
 * device -1) every context; and has launches of this process (after_seq: a parent's, after fork). */
static int look_wanted(const struct cp_stream *s, void *ctx, int device, uint64_t after_seq) {
  if (!atomic_load_explicit(&s->key_stream, memory_order_acquire)) return 0;
  if (atomic_load_explicit(&s->gone, memory_order_relaxed) || !s->ctx) return 0;
  if (atomic_load_explicit(&s->last_launched, memory_order_relaxed) <= after_seq) return 0;
  if (ctx) return s->ctx == ctx;
  return device < 0 || s->device == device;
}

/* One round over the streams of ctx (current on this thread): returns a sticky code found, else 0, and sets
 * *pending when a stream still had work. The legacy stream is always asked: a sticky error the context already
 * holds shows there at once. A per-thread default stream can only be asked by its own thread. */
static int look_round(void *ctx, uint64_t after_seq, int tid, int *pending) {
  int rc = cp_drv.stream_query(NULL);
  if (cp_is_sticky(rc)) return rc;
  if (rc == CU_ERROR_NOT_READY) *pending = 1;
  for (uint32_t i = 0; i < crumb_capacity(); i++) {
    struct cp_stream *s = crumb_at(i);
    if (!look_wanted(s, ctx, -1, after_seq) || atomic_load_explicit(&s->dead, memory_order_relaxed)) continue;
    if (crumb_done(s) >= atomic_load_explicit(&s->last_launched, memory_order_relaxed)) continue; /* complete */
    if (s->kind == CP_STREAM_LEGACY) continue;                                                    /* asked above */
    if (s->kind == CP_STREAM_PER_THREAD) {
      if (atomic_load_explicit(&s->key_tid, memory_order_relaxed) != tid || !cp_drv.stream_query_ptsz) continue;
      rc = cp_drv.stream_query_ptsz(NULL);
    } else {
      rc = cp_drv.stream_query(s->handle);
    }
    if (cp_is_sticky(rc)) return rc;
    if (rc == CU_ERROR_NOT_READY) *pending = 1;
  }
  return 0;
}

int lastlook_find(void *ctx, int device, uint64_t after_seq, uint32_t wait_ms) {
  void *ctxs[LOOK_MAX_CTX];
  int n = 0, found = 0;
  if (!cp_drv.stream_query || !cp_drv.ctx_get_current) return 0;
  for (uint32_t i = 0; i < crumb_capacity() && n < LOOK_MAX_CTX; i++) {
    struct cp_stream *s = crumb_at(i);
    if (!look_wanted(s, ctx, device, after_seq)) continue;
    int seen = 0;
    for (int k = 0; k < n && !seen; k++) seen = ctxs[k] == s->ctx;
    if (!seen) ctxs[n++] = s->ctx;
  }
  void *cur = NULL;
  if (cp_drv.ctx_get_current(&cur)) cur = NULL;
  /* No stream entry (launches culprit could not follow): the current context, as it is. */
  if (n == 0 && cur && (!ctx || ctx == cur)) ctxs[n++] = cur;
  int tid = (int)syscall(SYS_gettid);
  uint64_t deadline = cp_mono_ns() / 1000000u + wait_ms;
  for (int k = 0; k < n && !found; k++) {
    int pushed = 0;
    if (ctxs[k] != cur) {
      if (!cp_drv.ctx_push_current || !cp_drv.ctx_pop_current || cp_drv.ctx_push_current(ctxs[k])) continue;
      pushed = 1;
    }
    /* Polls back off from 1 to 16 ms: an exit of a program whose work is done costs one round. */
    for (unsigned nap_ms = 1;; nap_ms = nap_ms < 16 ? nap_ms * 2 : 16) {
      int pending = 0;
      found = look_round(ctxs[k], after_seq, tid, &pending);
      if (found || !pending || cp_mono_ns() / 1000000u >= deadline) break;
      struct timespec ts = {0, (long)nap_ms * 1000000L};
      nanosleep(&ts, NULL);
    }
    if (pushed) {
      void *popped;
      cp_drv.ctx_pop_current(&popped);
    }
  }
  return found;
}
