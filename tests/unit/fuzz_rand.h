/* The fuzz tests' random numbers: xorshift64*, small, and the same sequence on every machine, so every run tries
 * the same mutations. A test defines FUZZ_SEED before including this. */
#ifndef CULPRIT_TEST_FUZZ_RAND_H
#define CULPRIT_TEST_FUZZ_RAND_H

#include <stddef.h>
#include <stdint.h>

static uint64_t fuzz_state = FUZZ_SEED;

static inline uint64_t fuzz_rand(void) {
  fuzz_state ^= fuzz_state >> 12;
  fuzz_state ^= fuzz_state << 25;
  fuzz_state ^= fuzz_state >> 27;
  return fuzz_state * 0x2545f4914f6cdd1dULL;
}

static inline size_t fuzz_below(size_t n) { return n ? (size_t)(fuzz_rand() % n) : 0; }

#endif
