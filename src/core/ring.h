/* Per-thread launch rings: each launching thread owns one bounded ring of launch records that only it writes;
 * the reporter reads every ring when a fault surfaces. No locks or allocation on the launch path. */
#ifndef CULPRIT_RING_H
#define CULPRIT_RING_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "stats.h"
#include "../stack/pystack.h"

struct cp_kname;

enum { CP_KIND_KERNEL = 0, CP_KIND_COOP = 1, CP_KIND_GRAPH = 2 };
enum { CP_STREAM_CREATED = 0, CP_STREAM_LEGACY = 1, CP_STREAM_PER_THREAD = 2 };
enum {
  CP_REC_CRUMB_FAILED = 1,   /* its breadcrumb could not be queued: completion is unknown */
  CP_REC_RETURNED_ERROR = 2, /* the launch call itself returned a sticky error */
  CP_REC_CAPTURED = 4,       /* launched into a stream being captured into a graph */
  CP_REC_UNCRUMBED = 8,      /* no breadcrumb by design (CULPRIT_CRUMB_EVERY > 1): completion unknown */
  CP_REC_RACY = 16,          /* another thread launched on the same stream at the same time: the order of
                                   * launch numbers may differ from the order on the stream */
  CP_REC_PY_WAITING = 32,    /* the launching thread runs no Python: py holds the frames of the Python thread
                                   * py_thread, which waited on it (PyTorch's autograd engine during backward()) */
  CP_REC_PARAMS = 64         /* params holds the first bytes of its parameter buffer, params_size its size */
};

struct cp_chain;
struct cp_chains;

/* What a record says of its launch, the same in the ring's slot and in a reader's copy (the fields once: struct
 * cp_launch is embedded in both, its fields reached by name through the anonymous struct beside it, and a reader
 * copies it whole). */
#define CP_LAUNCH_FIELDS                                                                                               \
  uint64_t prev;               /* seq of the previous launch on the same stream, 0 if none */                          \
  uint64_t ticks;              /* time stamp at launch (ticks.h; emit makes it CLOCK_MONOTONIC ns) */                  \
  const struct cp_kname *name; /* interned kernel name, NULL for graphs */                                             \
  void *func;                  /* CUfunction/CUkernel, or CUgraphExec for graph launches */                            \
  void *stream;                /* stream handle as the program passed it */                                            \
  void *ctx;                   /* context of the stream */                                                             \
  uint32_t stream_idx;         /* index in the stream table, UINT32_MAX if untracked */                                \
  uint32_t grid[3];            /* grid dimensions */                                                                   \
  uint32_t block[3];           /* block dimensions */                                                                  \
  uint32_t smem;               /* dynamic shared memory bytes */                                                       \
  int32_t device;              /* device ordinal, -1 if unknown */                                                     \
  int32_t tid;                 /* launching thread (gettid) */                                                         \
  const char *api;             /* driver entry point used (static string) */                                           \
  uint8_t kind;                /* CP_KIND_* */                                                                         \
  uint8_t stream_kind;         /* CP_STREAM_* */                                                                       \
  uint8_t flags;               /* CP_REC_* */                                                                          \
  uint8_t params_len;          /* with CP_REC_PARAMS: bytes of params that hold the buffer's */                        \
  uint32_t params_size;        /* with CP_REC_PARAMS: bytes of the whole parameter buffer */
struct cp_launch {
  CP_LAUNCH_FIELDS
};

/* A launch as its ring keeps it: three cache lines, written on every launch (the third holds the first bytes of
 * what it passed its kernel). Its stacks are a chain of the ring's store (chains.h), kept once for every launch
 * from the same call chain. */
struct cp_slot {
  _Atomic uint64_t seq;                 /* launch number; 0 while the record is being written or unused */
  const struct cp_chain *_Atomic chain; /* its stacks, NULL while none were taken (release-stored after chain_no,
                                         * which blocking mode may do after the record is published) */
  uint64_t chain_no;                    /* the chain's number when the record took it (the chain may be rewritten) */
  union {
    struct cp_launch launch; /* the launch, as one piece */
    struct {
      CP_LAUNCH_FIELDS
    }; /* the same, field by field */
  };
  uint64_t params[7] __attribute__((aligned(64))); /* with CP_REC_PARAMS: the packed buffer's first bytes, the
                                                    * rest zero (as the kernel sees them: little-endian words) */
} __attribute__((aligned(64)));

/* A launch as a reader sees it (ring_snapshot): the record with its stacks copied in. */
struct cp_rec {
  _Atomic uint64_t seq; /* launch number */
  uint64_t py_thread;   /* with CP_REC_PY_WAITING: Python thread id of the frames in py */
  union {
    struct cp_launch launch; /* the launch, as one piece */
    struct {
      CP_LAUNCH_FIELDS
    }; /* the same, field by field */
  };
  uint8_t nframes;                    /* valid entries in frames */
  uint8_t npy;                        /* valid entries in py */
  uint64_t params[7];                 /* with CP_REC_PARAMS: the packed buffer's first bytes, the rest zero */
  struct pystack_ref py[PYSTACK_MAX]; /* Python frames of the launching thread (or, with CP_REC_PY_WAITING, of
                                       * the thread waiting on it), innermost first */
  void *frames[];                     /* native return addresses, innermost first */
};

struct cp_ring {
  struct cp_ring *next;         /* all rings, newest first; never unlinked */
  _Atomic int owner;            /* tid of the owning thread, 0 when orphaned and adoptable */
  uint32_t mask;                /* capacity - 1 (capacity is a power of two) */
  int depth;                    /* native frames its chains hold */
  uint64_t head;                /* records written; only the owner touches it */
  _Atomic uint64_t overwritten; /* published records lost to wrap-around */
  struct cp_chains *chains;     /* the stacks its records point at; NULL if memory was short (no stacks) */
  struct cp_ring_stats stats;   /* CULPRIT_STATS of its launches; only the owner writes them */
  struct cp_slot slots[];       /* capacity records */
};

/* Sets sizes for rings made from now on. Unless the capacity was chosen explicitly (CULPRIT_RING), threads
 * beyond the first RING_FULL_THREADS get smaller rings, so that programs with many launching threads stay
 * within a bounded amount of memory. */
#define RING_FULL_THREADS 8
#define RING_MIN_CAPACITY 256
void ring_configure(uint32_t capacity, int stack_depth, int explicit_capacity);
/* The calling thread's ring, made or adopted on first use; NULL if memory is short. */
struct cp_ring *ring_mine(int tid);
/* The record the next launch of this thread will fill; it stays invisible until ring_publish. */
struct cp_slot *ring_claim(struct cp_ring *r);
void ring_publish(struct cp_ring *r, struct cp_slot *rec, uint64_t seq);
/* Marks the calling thread's ring adoptable (thread exit). */
void ring_release(struct cp_ring *r);

/* Copies every consistent published record with seq > after, with its stacks, into a malloc'd array of
 * *rec_size-byte records sorted by seq. *out_n gets the count; returns NULL (and 0) when there are none or
 * memory is short. */
struct cp_rec *ring_snapshot(uint64_t after, size_t *out_n, size_t *rec_size);
/* Sum of overwritten records over all rings. */
uint64_t ring_total_overwritten(void);
/* Number of rings (launching threads seen). */
int ring_count(void);
/* The CULPRIT_STATS counts of every ring added up into *out; returns the call chains their stores kept. */
uint64_t ring_stats_sum(struct cp_ring_stats *out);
/* After fork in the child: every ring but the caller's is orphaned. */
void ring_after_fork(int tid);
/* Bytes per record of a snapshot, for the configured depth. */
size_t ring_rec_size(void);

#endif
