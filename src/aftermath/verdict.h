/* The verdict: from the breadcrumbs and the launch rings, which launch faulted; then the JSON report file
 * and the text on stderr. Runs once per process, in the thread whose driver call returned the sticky error. */
#ifndef CULPRIT_VERDICT_H
#define CULPRIT_VERDICT_H

#include <stdint.h>

struct pystack_ref;
struct printflush;

struct cp_config;

struct verdict_input {
  int code;                     /* the sticky CUresult */
  const char *api;              /* the call it surfaced in */
  uint64_t exact_seq;           /* non-zero: blocking mode proved this launch faulted */
  uint64_t after_seq;           /* records up to this seq belong to a parent process (fork) */
  int tid;                      /* surfacing thread */
  uint64_t time_ns;             /* when it surfaced (CLOCK_MONOTONIC) */
  uint64_t time_unix_ns;        /* the same moment by the wall clock, to order the reports of a job's ranks */
  void **frames;                /* surfacing stack */
  int nframes;                  /* entries in frames */
  const struct pystack_ref *py; /* surfacing thread's Python frames */
  int npy;                      /* entries in py */
  const struct cp_config *cfg;  /* configuration in force */
  int mode;                     /* mode in force when it surfaced */
  uint64_t launches;            /* launches recorded */
  int launch_blocking;          /* CUDA_LAUNCH_BLOCKING=1: a launch that returns an error is the one that faulted */
  int untracked_pending;        /* a launch culprit did not track may still have been running (core.c) */
  const struct printflush *printf_flush; /* the flush of the device's printf buffer made after it, or NULL */
};

/* Writes the report into cfg->dir and the verdict on stderr; path gets the report's path ("" if it could
 * not be written). Returns 0 when the report file was written. */
int verdict_emit(const struct verdict_input *in, char *path, unsigned pathlen);

#endif
