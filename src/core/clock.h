/* The two clocks the library reads: CLOCK_MONOTONIC for durations and the order of events within a process,
 * CLOCK_REALTIME to order the reports of a job's processes (they share no monotonic clock). */
#ifndef CULPRIT_CLOCK_H
#define CULPRIT_CLOCK_H

#include <stdint.h>
#include <time.h>

static inline uint64_t cp_mono_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static inline uint64_t cp_wall_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

#endif
