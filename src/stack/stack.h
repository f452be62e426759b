/* Native stacks: capture return addresses cheaply at launch time, describe them (module, offset, exported
 * symbol) only when a report is written. Python frames are pystack.h's. */
#ifndef CULPRIT_STACK_H
#define CULPRIT_STACK_H

#include <stddef.h>
#include <stdint.h>

struct stack_frame_info {
  uintptr_t pc;       /* the return address */
  char module[512];   /* file of the object it lies in, "" if unknown */
  uintptr_t offset;   /* pc minus the object's lowest mapped address (dladdr's dli_fbase) */
  char function[256]; /* exported symbol containing pc, "" if none */
};

/* Fills pcs with up to max return addresses of the caller's stack, innermost first, leaving out frames
 * inside culprit itself. Returns how many. Safe to call from any thread; no locks of culprit's own. */
int stack_capture(void **pcs, int max);
/* The same for a launch: a chain this thread captured before from the same stack pointer, whose return
 * addresses all still sit in their stack slots, is copied instead of unwound (see stack.c); *hit says which.
 * Frames come from the libgcc unwinder on a miss. *hash gets stack_hash of the frames (kept with a cached chain,
 * so a hit does not hash them again). */
int stack_capture_launch(void **pcs, int max, int *hit, uint64_t *hash);
/* A hash of n return addresses, the same for the same addresses in the same order. */
static inline uint64_t stack_hash(void *const *pcs, int n) {
  uint64_t h = (uint64_t)n * 0x2545F4914F6CDD1Dull, g = 0x9E3779B97F4A7C15ull;
  int i = 0;
  for (; i + 1 < n; i += 2) { /* two lanes: half as long a chain of multiplications */
    h = (h + (uint64_t)(uintptr_t)pcs[i]) * 0x9E3779B97F4A7C15ull;
    g = (g + (uint64_t)(uintptr_t)pcs[i + 1]) * 0xC2B2AE3D27D4EB4Full;
  }
  if (i < n) h = (h + (uint64_t)(uintptr_t)pcs[i]) * 0x9E3779B97F4A7C15ull;
  h ^= g + (h >> 29);
  h *= 0xBF58476D1CE4E5B9ull;
  return h ^ (h >> 31);
}
/* What the launch captures' chain caches did with the chains they did not have, over all threads since start:
 * for CULPRIT_STATS, to tell a program still being learned from a cache too small for it. */
struct stack_cache_counts {
  uint64_t learned;         /* unwound and kept in a free place */
  uint64_t evicted;         /* unwound and kept in place of another chain, */
  uint64_t evicted_same_sp; /* of which a chain captured at the same stack pointer */
  uint64_t not_kept;        /* unwound but not cacheable (a return address not found in its slot) */
  uint64_t over_budget;     /* unwound by the plain unwinder: learning walks had used their share */
  uint64_t bypassed;        /* not looked up (a capture inside a capture, a stack the cache does not cover) */
};
void stack_cache_counts(struct stack_cache_counts *out);
/* Describes one address (dladdr: it takes the dynamic loader's lock). */
void stack_describe(uintptr_t pc, struct stack_frame_info *out);
/* The same from a snapshot of /proc/self/maps, without the loader's lock (module and offset, no function name):
 * for a report written while another thread may hold that lock (a hang report a signal handler waits for, the
 * interrupted thread inside dlsym). stack_maps_read returns NULL when the file cannot be read. */
struct stack_maps;
struct stack_maps *stack_maps_read(void);
void stack_describe_maps(const struct stack_maps *m, uintptr_t pc, struct stack_frame_info *out);
void stack_maps_free(struct stack_maps *m);
/* Opens the unwinder (libunwind, privately) ahead of the first capture; captures do it too if needed. */
void stack_init(void);
/* Name of the unwinder in use, for reports. */
const char *stack_unwinder(void);

#endif
