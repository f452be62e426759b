/* Operator notes (ops.c): a framework's own name for the work behind launches. Before an operator runs, its
 * caller (culprit's Python package, culprit/diagnose.py, for each PyTorch operator; or a program through
 * include/culprit.h) says the operator's name, its arguments and, when its inputs break the operator's
 * contract, what is wrong; the launches the calling thread makes until the operator ends belong to it. Notes
 * nest per thread (a compiled region holds the operators it falls back to). A report names the operator of
 * each launch it lists, and lists the operators whose inputs were wrong. */
#ifndef CULPRIT_OPS_H
#define CULPRIT_OPS_H

#include <stdint.h>

#include "errors.h"

#define OPS_PROBLEMS 32 /* notes with a problem kept apart */
#define OPS_NAME 128    /* bytes kept of a name, an argument list and a problem */
#define OPS_ARGS 640
#define OPS_PROBLEM 512
#define OPS_BUFFERS 6 /* buffers kept per note (the operator's tensors: the first ones named) */
#define OPS_LABEL 96  /* bytes kept of a buffer's label */

/* A buffer the operator was given: device memory its kernels may touch, and what it is to the operator. */
struct ops_buffer {
  uint64_t base;         /* first byte */
  uint64_t size;         /* bytes */
  char label[OPS_LABEL]; /* "index: int64[4096] cuda:0" (culprit/diagnose.py: the argument and its summary) */
};

struct ops_note {
  uint64_t first; /* first launch number (seq) that can belong to it */
  uint64_t last;  /* last one, once it ended (below first when none) */
  int32_t tid;    /* the thread that ran it */
  int32_t pid;    /* the process (a forked child's notes are its own) */
  int running;    /* 1 until it ended: it holds every later launch of its thread */
  char name[OPS_NAME];
  char args[OPS_ARGS];
  char problem[OPS_PROBLEM];
  int nbuf;                           /* entries of buf */
  struct ops_buffer buf[OPS_BUFFERS]; /* the buffers it was given */
};

/* Opens a note on the calling thread (problem may be NULL or empty). Returns 0, CULPRIT_EINVAL for a NULL or
 * empty name, CULPRIT_ESTACK when eight notes are already open on this thread (the notes live in fixed slots: nothing
 * is allocated, so nothing else can fail). */
int ops_begin(const char *name, const char *args, const char *problem);
/* The same with the buffers the operator was given: one per line, "BASE SIZE LABEL" (BASE and SIZE in C's
 * integer syntax, 0x... or decimal; LABEL the rest of the line). Lines that do not parse, a zero size and those
 * past OPS_BUFFERS are left out; buffers NULL or empty: none. */
int ops_begin_buffers(const char *name, const char *args, const char *problem, const char *buffers);
/* Closes the innermost open note of the calling thread. Returns 0, or CULPRIT_ESTACK when none is open. */
int ops_end(void);
/* Copies into *out the innermost note of thread tid that holds launch seq; returns 1, or 0 when none does. */
int ops_find(uint64_t seq, int32_t tid, struct ops_note *out);
/* Whether any note was ever opened (a report skips the lookups otherwise). */
int ops_any(void);
/* Copies into out (max entries) this process's notes with a problem that are still kept, oldest first; returns
 * how many. */
int ops_problems(struct ops_note *out, int max);

#endif
