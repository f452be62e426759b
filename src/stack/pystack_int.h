/* What the walk of Python frames (pystack.c) shares with the choice of a waiting thread's frames (pywait.c).
 * Internal to src/stack: nothing outside these two files includes it. */
#ifndef CULPRIT_PYSTACK_INT_H
#define CULPRIT_PYSTACK_INT_H

#include "pystack.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* The words of another thread's memory that a walk of its frames depended on (frame links and instruction
 * pointers) and what they held: while they hold the same, the walk would give the same frames. */
#define PYS_WATCH_MAX 128
#define PYS_RANGES_MAX 16  /* a check reads the watched words in at most this many ranges, */
#define PYS_RANGE_GAP 1024 /* merging words closer than this (frames sit together in their chunk), */
#define PYS_CHECK_BYTES                                                                                                \
  (32u << 10) /* and this many bytes in all: one system call of a few ranges costs about
                                       * what one word does, each extra range a third of that */
struct pys_watch {
  int n; /* entries; -1 when the walk needed more than PYS_WATCH_MAX */
  uintptr_t addr[PYS_WATCH_MAX];
  uintptr_t val[PYS_WATCH_MAX];
  uint32_t off[PYS_WATCH_MAX]; /* where each word lands in the check's buffer */
  int nr;                      /* ranges; 0 = not planned or not possible */
  uintptr_t rlo[PYS_RANGES_MAX];
  uint32_t rlen[PYS_RANGES_MAX];
};

#define PYS_MAX_THREADS 256 /* thread states followed, in case the list is corrupt or cyclic */

/* Reading another thread's frames goes through process_vm_readv on this process: a frame that thread frees
 * meanwhile makes a read fail instead of crashing the program. The calling thread's own frames are alive and are
 * read directly. */
extern pid_t g_pys_pid;        /* this process, for process_vm_readv (getpid is a system call) */
extern __thread int tls_safe;  /* reads go through process_vm_readv */
extern __thread int tls_fault; /* a guarded read failed: the walk stops */

/* Probes the interpreter once; true when its version is supported, it is initialized and its thread list can be
 * followed (what reading another thread's frames needs). */
bool pys_others_readable(void);
void *pys_map(size_t len);
struct pys_memo;
/* The frames of thread state TS, innermost first; with WT, what the walk depended on; with MEMO (the calling
 * thread's own frames only), code objects met before are known by address while FREES holds. */
int pys_walk(uintptr_t ts, struct pystack_ref *out, int max, struct pys_watch *wt, struct pys_memo *memo,
             uint64_t frees);
/* The thread states of the interpreter other than the caller's, newest first (the list's order): fills out with
 * up to max and returns the count. Guarded reads must be on; a list that cannot be read ends there. */
int pys_other_states(uintptr_t *out, int max);
/* Whether any of these frames runs code from torch.autograd (where backward() waits for the engine). */
bool pys_in_autograd(const struct pystack_ref *refs, int n);
/* A thread state's kernel thread id (0 where the version does not keep it: 3.10) and Python thread id. Guarded
 * reads must be on. */
unsigned long pys_ts_native_id(uintptr_t ts);
unsigned long long pys_ts_thread_id(uintptr_t ts);

#endif
