/* Per-thread launch rings. A record is three cache lines; its stacks live in the ring's chain store (chains.h).
 *
 *   launching thread (sole producer)          reporter (any thread, at fault time)
 *   rec = ring_claim(r)                       for each ring, each slot:
 *     rec->seq = 0        (relaxed)             s1 = rec->seq            (acquire)
 *     fence               (release)  ----.      copy the record
 *     fill fields                         `-->  fence                    (acquire)
 *   ring_publish: rec->seq = N (release) ---->  s2 = rec->seq (relaxed); keep if s1 == s2 != 0
 *
 * A record torn by a concurrent overwrite fails the s1 == s2 test and is skipped; its chain is read with a test
 * of its own (chains_read). Rings live in mmap'd
 * memory, are never freed, and are adopted by new threads when their owner exits, so the history of a thread
 * that launched the culprit and then ended is still there. */
#define _GNU_SOURCE
#include "ring.h"

#include "chains.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

static uint32_t g_capacity = 4096;        /* records per ring, power of two */
static int g_explicit;                    /* the capacity was chosen by the user: every ring gets it */
static int g_depth = 24;                  /* native frames per chain */
static _Atomic(struct cp_ring *) g_rings; /* list head; pushes are lock-free */
static _Atomic int g_count;               /* rings made */

void ring_configure(uint32_t capacity, int stack_depth, int explicit_capacity) {
  uint32_t c = 16;
  while (c < capacity && c < (1u << 20)) c <<= 1;
  g_capacity = c;
  g_explicit = explicit_capacity;
  g_depth = stack_depth < 0 ? 0 : stack_depth > 64 ? 64 : stack_depth;
}

/* Capacity of the next ring: the configured one for the first threads, then a quarter, then the minimum
 * (8 threads x 4096 + 56 x 1024 + the rest x 256 records: about 50 MiB for 64 launching threads). */
static uint32_t next_capacity(int made) {
  uint32_t c = g_capacity;
  if (g_explicit || made < RING_FULL_THREADS) return c;
  c = made < 64 ? c / 4 : RING_MIN_CAPACITY;
  return c < RING_MIN_CAPACITY ? (g_capacity < RING_MIN_CAPACITY ? g_capacity : RING_MIN_CAPACITY) : c;
}

_Static_assert(sizeof(struct cp_slot) == 192, "a ring record is three cache lines");

size_t ring_rec_size(void) {
  size_t s = sizeof(struct cp_rec) + (size_t)g_depth * sizeof(void *);
  return (s + 15) & ~(size_t)15;
}

static struct cp_ring *ring_new(int tid) {
  uint32_t cap = next_capacity(atomic_load_explicit(&g_count, memory_order_relaxed));
  size_t bytes = sizeof(struct cp_ring) + sizeof(struct cp_slot) * cap;
  void *m = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (m == MAP_FAILED) return NULL;
  struct cp_ring *r = m; /* mmap memory is zeroed: every seq starts at 0 */
  r->mask = cap - 1;
  r->depth = g_depth;
  r->chains = chains_new(cap, g_depth); /* NULL: its records keep no stacks */
  atomic_store_explicit(&r->owner, tid, memory_order_relaxed);
  struct cp_ring *head = atomic_load_explicit(&g_rings, memory_order_relaxed);
  do {
    r->next = head;
    /* release: a reporter that sees r in the list sees its initialized header. Pairs with the acquire load in
     * ring_snapshot. */
  } while (!atomic_compare_exchange_weak_explicit(&g_rings, &head, r, memory_order_release, memory_order_relaxed));
  atomic_fetch_add_explicit(&g_count, 1, memory_order_relaxed);
  return r;
}

struct cp_ring *ring_mine(int tid) {
  /* Adopt an orphan of the current depth first (whatever its capacity): bounded memory with thread churn. */
  for (struct cp_ring *r = atomic_load_explicit(&g_rings, memory_order_acquire); r; r = r->next) {
    int zero = 0;
    if (r->depth != g_depth) continue;
    /* acq_rel: the adopter must see the previous owner's head; pairs with the release store in ring_release. */
    if (atomic_load_explicit(&r->owner, memory_order_relaxed) == 0 &&
        atomic_compare_exchange_strong_explicit(&r->owner, &zero, tid, memory_order_acq_rel, memory_order_relaxed))
      return r;
  }
  return ring_new(tid);
}

struct cp_slot *ring_claim(struct cp_ring *r) {
  struct cp_slot *rec = &r->slots[r->head & r->mask];
  if (atomic_load_explicit(&rec->seq, memory_order_relaxed))
    atomic_fetch_add_explicit(&r->overwritten, 1, memory_order_relaxed);
  atomic_store_explicit(&rec->seq, 0, memory_order_relaxed);
  /* release fence: the zero above is visible before any field below changes (see the diagram). */
  atomic_thread_fence(memory_order_release);
  return rec;
}

void ring_publish(struct cp_ring *r, struct cp_slot *rec, uint64_t seq) {
  /* release: fields written before are visible to a reporter that acquires this seq. */
  atomic_store_explicit(&rec->seq, seq, memory_order_release);
  r->head++;
  /* The next record's lines, for writing (a hint; nothing depends on it): a ring is too large to stay in the
   * caches while the program works between launches, and fetched now they arrive meanwhile, instead of one
   * after another inside the next launch, whose first step reads the old record's seq. */
  const unsigned char *next = (const unsigned char *)&r->slots[r->head & r->mask];
  __builtin_prefetch(next, 1, 3);
  __builtin_prefetch(next + 64, 1, 3);
  __builtin_prefetch(next + 128, 1, 3);
}

void ring_release(struct cp_ring *r) {
  if (r) atomic_store_explicit(&r->owner, 0, memory_order_release);
}

static int cmp_seq(const void *a, const void *b, void *rs) {
  (void)rs;
  uint64_t x = atomic_load_explicit(&((const struct cp_rec *)a)->seq, memory_order_relaxed);
  uint64_t y = atomic_load_explicit(&((const struct cp_rec *)b)->seq, memory_order_relaxed);
  return x < y ? -1 : x > y;
}

/* The reader's copy of one record into dst (a snapshot record of rs bytes); 0 when it was consistent. */
static int copy_rec(const struct cp_ring *r, const struct cp_slot *src, uint64_t s1, struct cp_rec *dst,
                    struct cp_chain *chain) {
  struct cp_slot slot;
  memcpy(&slot, src, sizeof slot);
  /* acquire: a chain published after the record (blocking mode) is seen whole; pairs with core's release */
  const struct cp_chain *c = atomic_load_explicit(&src->chain, memory_order_acquire);
  uint64_t no = slot.chain_no;
  atomic_thread_fence(memory_order_acquire);
  if (atomic_load_explicit(&src->seq, memory_order_relaxed) != s1) return -1;
  atomic_store_explicit(&dst->seq, s1, memory_order_relaxed);
  dst->launch = slot.launch;
  if (slot.flags & CP_REC_PARAMS) memcpy(dst->params, slot.params, sizeof dst->params);
  /* its stacks, if the chain still holds them (a record of a thread that wrote chains faster than launches may
   * outlive its chain: it is then shown without stacks) */
  if (c && chains_read(c, no, chain, r->depth) == 0) {
    dst->nframes = chain->nframes;
    dst->npy = chain->npy;
    dst->flags |= chain->flags;
    dst->py_thread = chain->py_thread;
    memcpy(dst->frames, chain->frames, (size_t)chain->nframes * sizeof(void *));
    memcpy(dst->py, chain->py, (size_t)chain->npy * sizeof(struct pystack_ref));
  }
  return 0;
}

struct cp_rec *ring_snapshot(uint64_t after, size_t *out_n, size_t *rec_size) {
  size_t rs = 0, total = 0, n = 0;
  int depth = 0;
  *out_n = 0;
  for (struct cp_ring *r = atomic_load_explicit(&g_rings, memory_order_acquire); r; r = r->next) {
    total += (size_t)r->mask + 1;
    if (r->depth > depth) depth = r->depth;
  }
  rs = (sizeof(struct cp_rec) + (size_t)depth * sizeof(void *) + 15) & ~(size_t)15;
  if (rec_size) *rec_size = rs;
  if (!total) return NULL;
  unsigned char *out = malloc(total * rs);
  struct cp_chain *chain = malloc(chains_size(depth));
  if (!out || !chain) {
    free(out);
    free(chain);
    return NULL;
  }
  /* Rings made since the sizes were summed are not in the buffer: the copy stops at total records. */
  for (struct cp_ring *r = atomic_load_explicit(&g_rings, memory_order_acquire); r && n < total; r = r->next) {
    for (uint32_t i = 0; i <= r->mask && n < total; i++) {
      const struct cp_slot *rec = &r->slots[i];
      uint64_t s1 = atomic_load_explicit(&rec->seq, memory_order_acquire);
      if (s1 == 0 || s1 <= after) continue;
      struct cp_rec *dst = (struct cp_rec *)(out + n * rs);
      memset(dst, 0, rs);
      if (copy_rec(r, rec, s1, dst, chain) == 0) n++;
    }
  }
  free(chain);
  if (!n) {
    free(out);
    return NULL;
  }
  qsort_r(out, n, rs, cmp_seq, NULL);
  *out_n = n;
  return (struct cp_rec *)out;
}

uint64_t ring_total_overwritten(void) {
  uint64_t t = 0;
  for (struct cp_ring *r = atomic_load_explicit(&g_rings, memory_order_acquire); r; r = r->next)
    t += atomic_load_explicit(&r->overwritten, memory_order_relaxed);
  return t;
}

int ring_count(void) { return atomic_load_explicit(&g_count, memory_order_relaxed); }

uint64_t ring_stats_sum(struct cp_ring_stats *out) {
  uint64_t chains = 0;
  memset(out, 0, sizeof *out);
  for (struct cp_ring *r = atomic_load_explicit(&g_rings, memory_order_acquire); r; r = r->next) {
    out->t_in_culprit += r->stats.t_in_culprit;
    out->t_native += r->stats.t_native;
    out->t_python += r->stats.t_python;
    out->t_py_wait += r->stats.t_py_wait;
    out->stack_reused += r->stats.stack_reused;
    out->t_reused += r->stats.t_reused;
    if (r->stats.last_unwound > out->last_unwound) out->last_unwound = r->stats.last_unwound;
    if (r->chains) chains += chains_count(r->chains);
  }
  return chains;
}

void ring_after_fork(int tid) {
  (void)tid;
  /* The child has one thread; rings of the parent's other threads become adoptable. The caller's ring keeps
   * its owner field but the child re-reads its tid, so orphan all and let the child adopt afresh. */
  for (struct cp_ring *r = atomic_load_explicit(&g_rings, memory_order_acquire); r; r = r->next) {
    atomic_store_explicit(&r->owner, 0, memory_order_relaxed);
    memset(&r->stats, 0, sizeof r->stats); /* CULPRIT_STATS counts the child's own launches */
  }
}
