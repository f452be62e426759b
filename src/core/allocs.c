/* The allocation table: a fixed array of entries, each a seqlock, written by allocating and freeing threads one at
 * a time and read without any lock by whoever writes a report. Not on the launch path: only allocation and free
 * wrappers (intercept.c) write it, after the driver succeeded.
 *
 *   writer (any thread; the writers' lock)             reader (a report, any thread, no lock)
 *   lock: CAS owner 0 -> tid          (acquire)         n = used                    (acquire)
 *   slot->ver = odd                   (relaxed)         for each slot below n:
 *   fence                             (release) --.       v1 = slot->ver            (acquire)
 *   slot->e = the new entry                        `-->   skip if 0 or odd; copy slot->e
 *   slot->ver = even                  (release) ----->    fence                     (acquire)
 *   used = i + 1 when i was new       (release) ----->    keep if slot->ver == v1   (relaxed)
 *   unlock: owner = 0                 (release)
 *
 * The writers' lock is a word holding the owner's thread id: a thread that finds its own id there is a signal
 * handler interrupting its own write and gives up instead of waiting for itself, and a forked child starts with
 * the lock free and an empty table of its own (pthread_atfork). Frees find their entry through an index of live
 * entries (open addressing, written under the lock only). When every entry is taken, the entry freed longest ago
 * is reused (a queue of freed entries in the order of their frees); when none is freed, the allocation is counted
 * and not recorded. */
#define _GNU_SOURCE
#include "allocs.h"

#include "core.h"
#include "driver.h"
#include "zero.h"
#include "seqlock.h"
#include "../stack/stack.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#define INDEX_SLOTS (2 * ALLOCS_CAPACITY) /* power of two; at most half full (live entries only) */

/* Where a free looks an entry up: cuMemFree takes device addresses, cuMemFreeHost host pointers, cuMemUnmap
 * mapped addresses, cuMemAddressFree reserved ones (a mapping may begin where its reservation does). */
enum { SPACE_DEVICE, SPACE_HOST, SPACE_VM, SPACE_RESERVED };

struct slot {
  _Atomic uint32_t ver;  /* seqlock: odd while written, 0 never written */
  struct allocs_entry e; /* the range */
};

struct index_slot {
  uint64_t key;  /* base (device, mapped, reserved) or host pointer (host memory) */
  uint32_t idx1; /* entry index plus one; 0 = empty */
  uint8_t space; /* SPACE_* */
};

static struct slot g_slots[ALLOCS_CAPACITY];
static _Atomic uint32_t g_used;                /* entries written since start: readers look at [0, g_used) */
static _Atomic int g_owner;                    /* tid of the writing thread, 0 when none */
static struct index_slot g_index[INDEX_SLOTS]; /* live entries by key; under the lock */
static uint32_t g_fifo[ALLOCS_CAPACITY];       /* freed entries, oldest free first; under the lock */
static uint64_t g_fifo_head, g_fifo_tail;      /* the queue's ends (counts, taken modulo its size); under the lock */
static uint64_t g_order;                       /* allocations recorded; under the lock */
static _Atomic int g_depth = ALLOCS_FRAMES;    /* native frames per site (relaxed: a setting read once per event) */
/* Counters (relaxed: statistics for the report, written under the lock or by the handle wrappers) */
static _Atomic uint64_t g_recorded, g_forgotten, g_not_recorded;
static _Atomic uint64_t g_handles_created, g_handles_released, g_handle_bytes;
static pthread_once_t g_fork_once = PTHREAD_ONCE_INIT;
static __thread int t_tid; /* this thread's id, 0 until asked */

static int self_tid(void) {
  if (!t_tid) t_tid = (int)syscall(SYS_gettid);
  return t_tid;
}

/* A forked child's table is its own: the parent's entries are left behind (readers look only below g_used) and
 * the lock, which another thread of the parent may have held, is free. Single-threaded here. */
static void after_fork_child(void) {
  t_tid = 0;
  atomic_store_explicit(&g_owner, 0, memory_order_relaxed);
  if (atomic_load_explicit(&g_used, memory_order_relaxed)) cp_zero_table(g_index, sizeof g_index);
  atomic_store_explicit(&g_used, 0, memory_order_relaxed);
  g_fifo_head = g_fifo_tail = 0;
  g_order = 0;
  atomic_store_explicit(&g_recorded, 0, memory_order_relaxed);
  atomic_store_explicit(&g_forgotten, 0, memory_order_relaxed);
  atomic_store_explicit(&g_not_recorded, 0, memory_order_relaxed);
  atomic_store_explicit(&g_handles_created, 0, memory_order_relaxed);
  atomic_store_explicit(&g_handles_released, 0, memory_order_relaxed);
  atomic_store_explicit(&g_handle_bytes, 0, memory_order_relaxed);
}

static void register_fork(void) { pthread_atfork(NULL, NULL, after_fork_child); }

/* 0 with the lock held, or -1: this thread already holds it (a signal handler interrupted its own write). Other
 * writers hold it for a few hundred instructions and make no call meanwhile, so waiting for them ends. */
static int lock_take(void) {
  int me = self_tid();
  for (unsigned spins = 0;; spins++) {
    int owner = 0;
    /* acquire: pairs with the release in lock_drop; the previous writer's changes to the table are visible */
    if (atomic_compare_exchange_weak_explicit(&g_owner, &owner, me, memory_order_acquire, memory_order_relaxed))
      return 0;
    if (owner == me) return -1;
    if (spins > 64) sched_yield();
  }
}

/* release: pairs with the acquire in lock_take */
static void lock_drop(void) { atomic_store_explicit(&g_owner, 0, memory_order_release); }

static int space_of(int kind) {
  return kind == ALLOCS_HOST       ? SPACE_HOST
         : kind == ALLOCS_VM       ? SPACE_VM
         : kind == ALLOCS_RESERVED ? SPACE_RESERVED
                                   : SPACE_DEVICE;
}

static uint32_t hash_key(uint64_t key, int space) {
  uint64_t x = (key ^ (uint64_t)space << 61) * 0x9E3779B97F4A7C15ull;
  x ^= x >> 29;
  return (uint32_t)x & (INDEX_SLOTS - 1);
}

/* The index position of the live entry keyed (space, key), or -1. */
static int index_find(int space, uint64_t key) {
  for (uint32_t i = hash_key(key, space), n = 0; n < INDEX_SLOTS; i = (i + 1) & (INDEX_SLOTS - 1), n++) {
    if (!g_index[i].idx1) return -1;
    if (g_index[i].key == key && g_index[i].space == space) return (int)i;
  }
  return -1;
}

static void index_put(int space, uint64_t key, uint32_t idx) {
  uint32_t i = hash_key(key, space);
  while (g_index[i].idx1) i = (i + 1) & (INDEX_SLOTS - 1); /* never full: at most ALLOCS_CAPACITY live */
  g_index[i].key = key;
  g_index[i].space = (uint8_t)space;
  g_index[i].idx1 = idx + 1;
}

/* Removes position pos, moving later members of its probe run back so that no lookup stops short. */
static void index_del(uint32_t pos) {
  uint32_t hole = pos;
  g_index[hole].idx1 = 0;
  for (uint32_t i = (hole + 1) & (INDEX_SLOTS - 1); g_index[i].idx1; i = (i + 1) & (INDEX_SLOTS - 1)) {
    uint32_t home = hash_key(g_index[i].key, g_index[i].space);
    /* the member at i may fill the hole unless its home lies cyclically in (hole, i] */
    if (((i - home) & (INDEX_SLOTS - 1)) >= ((i - hole) & (INDEX_SLOTS - 1))) {
      g_index[hole] = g_index[i];
      g_index[i].idx1 = 0;
      hole = i;
    }
  }
}

/* Marks entry i freed and queues it for reuse; under the lock. */
static void mark_freed(uint32_t i, uint64_t seq, const char *api, uint8_t flags) {
  struct slot *s = &g_slots[i];
  uint32_t v = seqlock_write_open(&s->ver);
  s->e.flags |= (uint8_t)(ALLOCS_FREED | flags);
  s->e.freed_seq = seq;
  s->e.freed_api = api;
  seqlock_write_close(&s->ver, v);
  g_fifo[g_fifo_tail++ % ALLOCS_CAPACITY] = i;
}

static uint64_t last_seq(void) {
  struct cp_view v;
  cp_view(&v);
  return v.seq;
}

void allocs_configure(int stack_depth) {
  pthread_once(&g_fork_once, register_fork);
  int d = stack_depth < 0 ? 0 : stack_depth > ALLOCS_FRAMES ? ALLOCS_FRAMES : stack_depth;
  atomic_store_explicit(&g_depth, d, memory_order_relaxed);
}

void allocs_alloc(int kind, uint64_t base, uint64_t size, uint64_t host, const char *api) {
  if (kind < 0 || kind >= ALLOCS_NKINDS || !base || !size) return;
  pthread_once(&g_fork_once, register_fork);
  /* the site first, outside the lock: unwinding and reading Python frames are the slow part */
  struct allocs_entry ne;
  memset(&ne, 0, sizeof ne);
  int depth = atomic_load_explicit(&g_depth, memory_order_relaxed);
  ne.nframes = (uint8_t)(depth ? stack_capture(ne.frames, depth) : 0);
  ne.npy = (uint8_t)pystack_capture(ne.py, ALLOCS_PY);
  ne.base = base;
  ne.size = size;
  ne.host = kind == ALLOCS_HOST ? host : 0;
  ne.seq = last_seq();
  ne.api = api;
  ne.tid = self_tid();
  ne.kind = (uint8_t)kind;

  if (lock_take()) {
    atomic_fetch_add_explicit(&g_not_recorded, 1, memory_order_relaxed);
    return;
  }
  int space = space_of(kind);
  uint64_t key = kind == ALLOCS_HOST ? host : base;
  int pos = index_find(space, key);
  if (pos >= 0) {
    /* the address is handed out again, so its previous holder was freed by a call culprit did not see */
    mark_freed(g_index[pos].idx1 - 1, ne.seq, NULL, ALLOCS_FREE_UNSEEN);
    index_del((uint32_t)pos);
  }
  uint32_t used = atomic_load_explicit(&g_used, memory_order_relaxed), i;
  if (used < ALLOCS_CAPACITY) {
    i = used;
  } else if (g_fifo_head != g_fifo_tail) {
    i = g_fifo[g_fifo_head++ % ALLOCS_CAPACITY];
    atomic_fetch_add_explicit(&g_forgotten, 1, memory_order_relaxed);
  } else {
    lock_drop();
    atomic_fetch_add_explicit(&g_not_recorded, 1, memory_order_relaxed);
    return;
  }
  ne.order = ++g_order;
  struct slot *s = &g_slots[i];
  uint32_t v = seqlock_write_open(&s->ver);
  s->e = ne;
  seqlock_write_close(&s->ver, v);
  index_put(space, key, i);
  /* release: pairs with the acquire in allocs_snapshot; the entry's first version is published with it */
  if (i == used) atomic_store_explicit(&g_used, used + 1, memory_order_release);
  atomic_fetch_add_explicit(&g_recorded, 1, memory_order_relaxed);
  lock_drop();
}

void allocs_alloc_host(void *host, uint64_t size, const char *api) {
  uint64_t d = 0;
  if (!host) return;
  if (!cp_drv.host_get_dptr || cp_drv.host_get_dptr(&d, host, 0) || !d) d = (uint64_t)(uintptr_t)host;
  allocs_alloc(ALLOCS_HOST, d, size, (uint64_t)(uintptr_t)host, api);
}

/* Frees the live entry keyed (space, key), if there is one. */
static void free_key(int space, uint64_t key, const char *api) {
  if (!key) return;
  uint64_t seq = last_seq();
  if (lock_take()) return;
  int pos = index_find(space, key);
  if (pos >= 0) {
    mark_freed(g_index[pos].idx1 - 1, seq, api, 0);
    index_del((uint32_t)pos);
  }
  lock_drop();
}

void allocs_free_device(uint64_t base, const char *api) { free_key(SPACE_DEVICE, base, api); }
void allocs_free_host(void *host, const char *api) { free_key(SPACE_HOST, (uint64_t)(uintptr_t)host, api); }
void allocs_unreserve(uint64_t base, const char *api) { free_key(SPACE_RESERVED, base, api); }

void allocs_unmap(uint64_t base, uint64_t size, const char *api) {
  uint64_t seq = last_seq(), end = base + size;
  if (!base || lock_take()) return;
  /* one call may unmap several adjacent mappings (the pieces of a grown segment) */
  for (uint64_t at = base; at < end;) {
    int pos = index_find(SPACE_VM, at);
    if (pos < 0) break;
    uint32_t i = g_index[pos].idx1 - 1;
    uint64_t next = g_slots[i].e.base + g_slots[i].e.size;
    mark_freed(i, seq, api, 0);
    index_del((uint32_t)pos);
    if (next <= at) break;
    at = next;
  }
  lock_drop();
}

void allocs_handle(int created, uint64_t size) {
  if (created) {
    atomic_fetch_add_explicit(&g_handles_created, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&g_handle_bytes, size, memory_order_relaxed);
  } else {
    atomic_fetch_add_explicit(&g_handles_released, 1, memory_order_relaxed);
  }
}

/* Copies slot s into *out; 1, or 0 when it was never written or kept changing. */
static int read_slot(const struct slot *s, struct allocs_entry *out) {
  for (int tries = 0; tries < 4; tries++) {
    uint32_t v1 = seqlock_read_begin(&s->ver); /* the fields of version v1 are visible */
    if (v1 == 0) return 0;
    if (v1 & 1) continue;
    memcpy(out, &s->e, sizeof *out);
    if (seqlock_read_valid(&s->ver, v1)) return 1;
  }
  return 0;
}

static int by_order(const void *a, const void *b) {
  uint64_t x = ((const struct allocs_entry *)a)->order, y = ((const struct allocs_entry *)b)->order;
  return x < y ? -1 : x > y;
}

struct allocs_entry *allocs_snapshot(size_t *n, struct allocs_counts *c) {
  /* acquire: pairs with the release in allocs_alloc; entries below used have been written once */
  uint32_t used = atomic_load_explicit(&g_used, memory_order_acquire);
  *n = 0;
  if (c) {
    c->capacity = ALLOCS_CAPACITY;
    c->recorded = atomic_load_explicit(&g_recorded, memory_order_relaxed);
    c->forgotten = atomic_load_explicit(&g_forgotten, memory_order_relaxed);
    c->not_recorded = atomic_load_explicit(&g_not_recorded, memory_order_relaxed);
    c->handles_created = atomic_load_explicit(&g_handles_created, memory_order_relaxed);
    c->handles_released = atomic_load_explicit(&g_handles_released, memory_order_relaxed);
    c->handle_bytes = atomic_load_explicit(&g_handle_bytes, memory_order_relaxed);
  }
  if (!used) return NULL;
  struct allocs_entry *out = malloc((size_t)used * sizeof *out);
  if (!out) return NULL;
  size_t k = 0;
  for (uint32_t i = 0; i < used; i++)
    if (read_slot(&g_slots[i], &out[k])) k++;
  if (!k) {
    free(out);
    return NULL;
  }
  qsort(out, k, sizeof *out, by_order);
  *n = k;
  return out;
}

const char *allocs_kind_name(int kind) {
  static const char *const names[ALLOCS_NKINDS] = {"device",  "pitched", "async", "pool",
                                                   "managed", "host",    "vm",    "reserved"};
  return kind >= 0 && kind < ALLOCS_NKINDS ? names[kind] : "unknown";
}
