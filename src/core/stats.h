/* CULPRIT_STATS (stats.c): what the launch path spent and how, counted per launching thread without atomics (each
 * ring keeps its own counts, written only by its owner, summed when read), and the one line printed at exit. */
#ifndef CULPRIT_STATS_H
#define CULPRIT_STATS_H

#include <stdint.h>

/* One thread's counts; the times are in ticks (ticks.h), made nanoseconds when printed. */
struct cp_ring_stats {
  uint64_t t_in_culprit; /* time spent in the launch path */
  uint64_t t_native;     /* of which in native stack capture */
  uint64_t t_python;     /* of which in Python frames, the chain lookup and any chain written */
  uint64_t t_py_wait;    /* of which in looking for a waiting thread's frames (pystack counts them) */
  uint64_t stack_reused; /* launches whose native chain was still the cached one */
  uint64_t t_reused;     /* native stack time of those launches */
  uint64_t last_unwound; /* launch number around the last unwound native chain */
};

/* Blocking mode's counts (rare: global atomics). */
void stats_blocking_sync(void); /* a synchronize after a launch */
void stats_stacks_later(void);  /* a launch kept without stacks: its synchronize succeeded */
void stats_unserialized(void);  /* a launch that gave up waiting for the blocking lock */
/* A forked child counts its own: the counts it inherited become the base. */
void stats_after_fork(void);
/* The line at exit, for a process that made launches (after fork_seq, up to seq). */
void stats_print(uint64_t launches, uint64_t fork_seq);

#endif
