/* The native stack capture built into a library of its own, so that the test program's frames are the
 * "caller's" ones, as a program's are for libculprit (frames inside the library are left out of a capture). */
#include "stack/stack.h"

#define PROBE __attribute__((visibility("default")))

PROBE int probe_launch(void **pcs, int max, int *hit) {
  uint64_t hash;
  int n = stack_capture_launch(pcs, max, hit, &hash);
  return hash == stack_hash(pcs, n) ? n : -1; /* the hash kept with a cached chain is its frames' */
}

PROBE int probe_fresh(void **pcs, int max, int *hit) {
  *hit = 0;
  return stack_capture(pcs, max);
}

PROBE void probe_counts(struct stack_cache_counts *out) { stack_cache_counts(out); }
