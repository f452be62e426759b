/* Streams and breadcrumbs: a table of every stream launches went to, each with one 8-byte slot of host-mapped
 * memory that the stream itself overwrites with the launch number after each launch. After a fault the slot
 * holds the last launch that completed on that stream. */
#ifndef CULPRIT_CRUMB_H
#define CULPRIT_CRUMB_H

#include <stdatomic.h>
#include <stdint.h>

/* Raises *a to v if it is lower (relaxed): for "newest covered" marks (crumb.c, core.c). */
static inline void atomic_max_u64(_Atomic uint64_t *a, uint64_t v) {
  uint64_t cur = atomic_load_explicit(a, memory_order_relaxed);
  while (cur < v && !atomic_compare_exchange_weak_explicit(a, &cur, v, memory_order_relaxed, memory_order_relaxed)) {
  }
}

struct cp_stream {
  _Atomic uintptr_t key_stream;    /* identity: handle (or 1 legacy / 2 per-thread); 0 = empty slot */
  _Atomic uintptr_t key_ctx;       /* identity: context for default streams, 0 for created; ~0 = destroyed */
  _Atomic int key_tid;             /* identity: thread for per-thread default streams, else 0 */
  int kind;                        /* CP_STREAM_* */
  int device;                      /* device ordinal, -1 if unknown */
  void *ctx;                       /* context the stream belongs to */
  void *handle;                    /* handle to pass to the driver for breadcrumb writes */
  volatile uint64_t *slot;         /* host view of the breadcrumb, NULL when breadcrumbs are unavailable */
  uint64_t dslot;                  /* device view of the same slot */
  _Atomic uint64_t last_launched;  /* seq of the newest launch on this stream */
  _Atomic uint64_t launches;       /* launches on this stream */
  _Atomic int dead;                /* destroyed by the program */
  _Atomic uint64_t synced;         /* every launch up to this seq completed: a synchronize returned success */
  _Atomic int gone;                /* its context was destroyed or reset: its slot's memory is freed */
  _Atomic int needs_slot;          /* made during a capture: its slot is allocated after the capture */
  _Atomic int inflight;            /* launch calls on this stream between culprit's before and after */
  _Atomic uint64_t overlaps;       /* times a launch began while another was in flight on this stream */
  _Atomic uint64_t untracked;      /* count (core.c) at the newest launch here culprit did not track, 0: none */
  _Atomic uint64_t untracked_done; /* the newest such count a successful synchronize of this stream covered */
  _Atomic uint64_t crumbed;        /* the newest launch a breadcrumb was queued after (relaxed max) */
  _Atomic uint64_t tail_crumb;     /* the newest launch whose breadcrumb was a tail mark (crumb_tail), not queued by
                                   * its launch: its record says uncrumbed, yet its completion shows */
  _Atomic uint64_t sync_epoch;     /* core's count of successful host synchronizes at this stream's newest launch */
  _Atomic uint64_t marks;          /* breadcrumbs queued on this stream (after launches and as tail marks) */
  /* record mode's mark plan (markplan.c); relaxed: threads sharing a stream may skew the estimate, never a mark */
  _Atomic uint64_t plan_next;  /* the launch count (launches) at which the next mark is due */
  _Atomic uint64_t plan_nth;   /* the launch count at the last mark the plan saw, 0 before the first */
  _Atomic uint64_t plan_ticks; /* that launch's time stamp (ticks.h) */
  _Atomic uint64_t plan_first; /* the time stamp of the first launch the plan saw */
  _Atomic uint64_t win_ticks;  /* time between the plan's recent marks, summed (halved with win_n) */
  _Atomic uint64_t win_n;      /* launches win_ticks spans */
  _Atomic uint32_t plan_gap;   /* the spacing planned at the last mark */
  int warm;                    /* launches of this stream marked one by one from its first (0: none) */
};

/* The stream a launch goes to, made on first sight; NULL when the table is full or the context is unknown.
 * ptds: the entry point has per-thread default stream semantics. may_alloc: 0 while a capture is under way
 * (no pinned allocation then; the slot comes later). */
struct cp_stream *crumb_stream(void *handle, int ptds, int tid, int may_alloc);
/* The entry a handle maps to, without making one; NULL if never launched to. */
struct cp_stream *crumb_find(void *handle, int ptds, int tid);
/* A synchronize succeeded: launches up to upto on s (or on every stream of ctx) completed without error. */
void crumb_note_synced(struct cp_stream *s, uint64_t upto);
void crumb_note_ctx_synced(void *ctx, uint64_t upto);
/* An untracked launch (its count n) went to s; a synchronize of s covered those up to n. */
void crumb_note_untracked(struct cp_stream *s, uint64_t n);
void crumb_note_untracked_done(struct cp_stream *s, uint64_t n);
/* Whether a stream has an untracked launch covered neither by a synchronize of it nor by ctx_done. */
int crumb_untracked_pending(uint64_t ctx_done);
/* The highest seq a context-wide synchronize proved complete, over all contexts (0 if none). */
uint64_t crumb_ctx_synced_max(void);
/* The highest seq known complete on s: its breadcrumb, or a successful synchronize of it or its context. */
uint64_t crumb_done(const struct cp_stream *s);

/* CULPRIT_MARK (config.h): set once at start; 1 when breadcrumbs are 32-bit memsets (slots are read as such
 * also after a fallback to the 64-bit write, whose values read the same through crumb_slot_value). */
extern int crumb_mark32;
void crumb_set_mark(int mark);
/* The driver's answer to the first memset breadcrumb it refused (breadcrumbs are writes since); 0 = none. */
int crumb_memset_refused(void);

/* The launch number a breadcrumb slot holds. With 32-bit marks the slot keeps the low half of it: the number is
 * the one at or below ref (the last launch that can have written the slot) with those low bits, for no launch
 * still pending is 2^32 launches behind the last one. */
static inline uint64_t crumb_slot_value(volatile const uint64_t *slot, uint64_t ref) {
  uint64_t raw = *slot;
  if (!crumb_mark32) return raw;
  if ((raw & 0xffffffffu) == 0) return 0; /* nothing written yet (or launch k * 2^32: reads as not done) */
  uint64_t v = (ref & ~(uint64_t)0xffffffffu) | (raw & 0xffffffffu);
  if (v > ref && v >= ((uint64_t)1 << 32)) v -= (uint64_t)1 << 32;
  return v;
}
/* Completion bounds from events: an event recorded on s after launch seq; once the event is known complete
 * (synchronized, or queried successfully) every launch up to seq on s is complete too. */
void crumb_event_recorded(void *event, struct cp_stream *s, uint64_t seq);
void crumb_event_completed(void *event);
/* The event was destroyed: its handle may come back for another event. */
void crumb_event_forget(void *event);
/* A breadcrumb slot of its own (host and device views) in the current context's pool; 0 or -1. */
int crumb_alloc_slot(volatile uint64_t **host, uint64_t *dev, int may_alloc);
/* Queues a write of value into the slot at device address dslot on the given stream; the driver's code. */
int crumb_write_to(void *handle, int ptds, uint64_t dslot, uint64_t value);
/* Queues the breadcrumb for seq behind the launch just made; returns the driver's code (0 = queued). */
int crumb_write(struct cp_stream *s, void *handle, int ptds, uint64_t seq);
/* A tail mark: when the newest launch on s has no breadcrumb queued after it, queues one now (the host is about to
 * synchronize, record an event or query the stream: one mark per such call, not one per launch). handle and ptds
 * as the program passes the stream. Never during a capture (the caller checks), nor when the calling thread's
 * current context is not the stream's. Returns the driver's code, 0 when nothing was needed or done. */
int crumb_tail(struct cp_stream *s, void *handle, int ptds);
/* Tail marks on every stream of context ctx that this thread may use (created and legacy streams, and its own
 * per-thread default stream), before a context-wide synchronize. tid: the calling thread. */
void crumb_tails_ctx(void *ctx, int tid);
/* A context is about to be destroyed (ctx), or a device's primary context reset or released (ctx NULL,
 * device): its streams' breadcrumb memory is freed with it, so their entries stop using it and later launches in
 * a context with a reused handle get fresh entries and slots. */
void crumb_ctx_gone(void *ctx, int device);
/* The program destroyed a stream: later launches on a reused handle get a fresh entry. */
void crumb_stream_destroyed(void *handle);
/* Index of s in the table, and back. */
uint32_t crumb_index(const struct cp_stream *s);
struct cp_stream *crumb_at(uint32_t idx);
/* Entries in use (for iteration: indexes 0..crumb_capacity()-1 whose key_stream is non-zero). */
uint32_t crumb_capacity(void);
/* Counters for the report. */
uint64_t crumb_failures(void);
uint64_t crumb_written(void);
/* After fork in the child: every entry and pool belongs to the parent's driver state; start empty. */
void crumb_after_fork(void);

#endif
