/* One entry's seqlock, as the operator notes (ops.c) and the allocation table (allocs.c) keep them: a version
 * word, odd while the entry is being written, 0 while it never was. One writer at a time per entry (the caller
 * sees to it); readers take no lock and keep a copy only when the version did not change around it.
 *
 *   writer                                 reader
 *   v = seqlock_write_open(&ver)           v1 = seqlock_read_begin(&ver)   (acquire): 0 never written, odd busy
 *     ver = odd          (relaxed)           copy the fields
 *     fence              (release) --.     seqlock_read_valid(&ver, v1)
 *   write the fields                  `->    fence               (acquire)
 *   seqlock_write_close(&ver, v)             ver == v1 again     (relaxed)
 *     ver = even         (release) ---->   (read_begin's acquire load pairs with write_close)
 *
 * Not on the launch path: the helpers are inline, the same instructions each file had written out. */
#ifndef CULPRIT_SEQLOCK_H
#define CULPRIT_SEQLOCK_H

#include <stdatomic.h>
#include <stdint.h>

/* Makes the version odd and returns the even one seqlock_write_close publishes. An odd version found here is a
 * writer that never finished (a parent thread at fork): the entry is taken over. */
static inline uint32_t seqlock_write_open(_Atomic uint32_t *ver) {
  uint32_t v = atomic_load_explicit(ver, memory_order_relaxed);
  if (v & 1) v++;
  atomic_store_explicit(ver, v + 1, memory_order_relaxed);
  /* release: the odd version is visible before any field changes (pairs with seqlock_read_valid's fence) */
  atomic_thread_fence(memory_order_release);
  return v + 2;
}

/* release: the fields are visible before the even version (pairs with seqlock_read_begin's acquire load) */
static inline void seqlock_write_close(_Atomic uint32_t *ver, uint32_t v) {
  atomic_store_explicit(ver, v, memory_order_release);
}

/* The version before a copy: 0 when the entry was never written, odd while it is being written. */
static inline uint32_t seqlock_read_begin(const _Atomic uint32_t *ver) {
  return atomic_load_explicit(ver, memory_order_acquire);
}

/* Whether the copy made since seqlock_read_begin gave v1 is whole: the version did not change around it. */
static inline int seqlock_read_valid(const _Atomic uint32_t *ver, uint32_t v1) {
  /* acquire: the copy is complete before the version is read again (pairs with seqlock_write_open's fence) */
  atomic_thread_fence(memory_order_acquire);
  return atomic_load_explicit(ver, memory_order_relaxed) == v1;
}

#endif
