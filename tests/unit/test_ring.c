/* Unit test: per-thread rings keep the newest records, count overwrites, snapshot consistently while 8
 * threads are still writing, and hand an exited thread's ring to a new thread with its history intact. Each
 * record's stacks are a chain of its ring's store (chains.h): most records share one of a few chains found by
 * their hashes, some write a chain of their own; a snapshot shows every record with its own chain's frames, or,
 * when a thread rewrote the chain meanwhile, with none, never another's. */
#include "../../src/core/chains.h"
#include "../../src/core/ring.h"
#include "check.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>

#define THREADS 8
#define PER_THREAD 5000
#define SHARED 7 /* chains each thread's records share */

static _Atomic uint64_t g_seq;
static pthread_barrier_t g_all_written; /* no ring is released before every thread has its own */

/* The chain of a record: shared ones hold {k, tid}, a record's own {seq, seq ^ 0x5555}. */
static void take_chain(struct cp_ring *r, struct cp_slot *rec, uint64_t seq, int tid) {
  uint64_t no = 0, k = seq % SHARED;
  const struct cp_chain *c = NULL;
  if (seq % 5 == 0) {
    struct cp_chain *w = chains_begin(r->chains);
    w->nframes = 2;
    w->frames[0] = (void *)(uintptr_t)seq;
    w->frames[1] = (void *)(uintptr_t)(seq ^ 0x5555);
    no = chains_publish(r->chains, w, 0, 0, 0);
    c = w;
  } else if (!(c = chains_find(r->chains, k + 1, (uint64_t)tid, &no))) {
    struct cp_chain *w = chains_begin(r->chains);
    w->nframes = 2;
    w->npy = 1;
    w->py[0].code = (uint32_t)tid;
    w->frames[0] = (void *)(uintptr_t)k;
    w->frames[1] = (void *)(uintptr_t)tid;
    no = chains_publish(r->chains, w, k + 1, (uint64_t)tid, 1);
    c = w;
  }
  rec->chain_no = no;
  atomic_store_explicit(&rec->chain, c, memory_order_release);
}

static void *writer(void *arg) {
  int tid = (int)(intptr_t)arg;
  struct cp_ring *r = ring_mine(tid);
  for (int i = 0; i < PER_THREAD; i++) {
    struct cp_slot *rec = ring_claim(r);
    uint64_t seq = atomic_fetch_add(&g_seq, 1) + 1;
    rec->tid = tid;
    rec->prev = seq * 3; /* a field derived from seq: a torn copy would break it */
    atomic_store(&rec->chain, NULL);
    take_chain(r, rec, seq, tid);
    ring_publish(r, rec, seq);
  }
  pthread_barrier_wait(&g_all_written);
  ring_release(r);
  return NULL;
}

static void check_rec(const struct cp_rec *r) {
  uint64_t seq = atomic_load(&r->seq);
  CHECK(r->prev == seq * 3);
  CHECK(r->nframes == 2);
  if (seq % 5 == 0) {
    CHECK(r->frames[0] == (void *)(uintptr_t)seq && r->frames[1] == (void *)(uintptr_t)(seq ^ 0x5555));
    CHECK(r->npy == 0);
  } else {
    CHECK(r->frames[0] == (void *)(uintptr_t)(seq % SHARED) && r->frames[1] == (void *)(uintptr_t)r->tid);
    CHECK(r->npy == 1 && r->py[0].code == (uint32_t)r->tid);
  }
}

/* A thread that writes chains faster than it publishes records (launches that failed, say) wraps its store:
 * an old record then shows no stacks, and a lookup no longer answers with the rewritten chain. */
static void churn(void) {
  struct cp_ring *r = ring_mine(4242);
  CHECK(r != NULL);
  struct cp_slot *rec = ring_claim(r);
  uint64_t seq = atomic_fetch_add(&g_seq, 1) + 1;
  rec->prev = seq * 3;
  rec->tid = 4242;
  struct cp_chain *w = chains_begin(r->chains);
  w->nframes = 1;
  w->frames[0] = (void *)0x1234;
  rec->chain_no = chains_publish(r->chains, w, 99, 99, 1);
  atomic_store(&rec->chain, (const struct cp_chain *)w);
  ring_publish(r, rec, seq);
  uint64_t no;
  CHECK(chains_find(r->chains, 99, 99, &no) == w && no == rec->chain_no);
  for (int i = 0; i < 128; i++) chains_publish(r->chains, chains_begin(r->chains), 0, 0, 0);
  CHECK(chains_find(r->chains, 99, 99, &no) == NULL); /* too old to be referred to by a new record */
  for (int i = 0; i < 200; i++) {
    struct cp_chain *x = chains_begin(r->chains);
    x->nframes = 1;
    x->frames[0] = (void *)0x9999;
    chains_publish(r->chains, x, 0, 0, 0);
  }
  size_t n = 0, rs = 0;
  struct cp_rec *s = ring_snapshot(seq - 1, &n, &rs);
  CHECK(n == 1 && s && atomic_load(&s->seq) == seq && s->prev == seq * 3);
  if (s) CHECK(s->nframes == 0); /* its chain was rewritten: no stacks rather than 0x9999 */
  free(s);
  ring_release(r);
}

int main(void) {
  ring_configure(100, 2, 1); /* rounds up to 128, for every thread */
  pthread_t t[THREADS];
  pthread_barrier_init(&g_all_written, NULL, THREADS);
  for (int i = 0; i < THREADS; i++) pthread_create(&t[i], NULL, writer, (void *)(intptr_t)(i + 1));

  /* Snapshots taken while writers run must contain only whole records, each with its own chain's frames. */
  for (int k = 0; k < 50; k++) {
    size_t n = 0, rs = 0;
    struct cp_rec *s = ring_snapshot(0, &n, &rs);
    for (size_t i = 0; i < n; i++) {
      struct cp_rec *r = (struct cp_rec *)((unsigned char *)s + i * rs);
      check_rec(r);
      if (i) CHECK(atomic_load(&((struct cp_rec *)((unsigned char *)s + (i - 1) * rs))->seq) < atomic_load(&r->seq));
    }
    free(s);
  }
  for (int i = 0; i < THREADS; i++) pthread_join(t[i], NULL);

  size_t n = 0, rs = 0;
  struct cp_rec *s = ring_snapshot(0, &n, &rs);
  CHECK(n == THREADS * 128); /* each ring holds its newest 128 */
  for (size_t i = 0; i < n; i++) check_rec((struct cp_rec *)((unsigned char *)s + i * rs));
  CHECK(ring_total_overwritten() == (uint64_t)THREADS * (PER_THREAD - 128));
  CHECK(ring_count() == THREADS);
  free(s);

  /* after: only records newer than a given seq (the fork epoch). */
  uint64_t top = atomic_load(&g_seq);
  s = ring_snapshot(top - 10, &n, &rs);
  CHECK(n == 10);
  free(s);

  /* A new thread adopts an orphaned ring: no new ring is made, old records stay readable. */
  struct cp_ring *r = ring_mine(999);
  CHECK(ring_count() == THREADS);
  CHECK(r != NULL);
  s = ring_snapshot(0, &n, &rs);
  CHECK(n == THREADS * 128);
  free(s);
  ring_release(r);

  churn();
  return CHECK_DONE();
}
