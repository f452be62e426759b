/* The mode in force (modes.c): the configured mode at the bottom of a stack that include/culprit.h's scopes push
 * and pop (blocking with a kernel filter and a launch window, precise, record, off). Every launch reads the top
 * with one acquire load; a frame is never rewritten while a launch can still be reading it. */
#ifndef CULPRIT_MODES_H
#define CULPRIT_MODES_H

#include <stdatomic.h>
#include <stdint.h>

#include "../base/config.h"
#include "errors.h"

struct mode_frame {
  uint64_t gen;                  /* unique per push: keys the kernel filter's cached answers (names.h) */
  int mode;                      /* enum cp_mode */
  char kernels[CFG_PATTERN_MAX]; /* blocking filter ("*": every kernel) */
  uint64_t lo, hi;               /* blocking launch window, inclusive */
};

extern _Atomic(struct mode_frame *) mode_top; /* in force; NULL until mode_init */

/* The mode in force (acquire: pairs with the release of a push or pop; the frame's fields are visible). */
static inline struct mode_frame *mode_now(void) { return atomic_load_explicit(&mode_top, memory_order_acquire); }

/* At library start: the configured mode, kernel filter and window become the bottom frame. */
void mode_init(const struct cp_config *cfg);
/* Pushes a scope. Returns 0, CULPRIT_EINVAL for a bad argument (mode, window, or a filter too long),
 * CULPRIT_ESTACK when the stack is full (MODE_DEPTH). */
int mode_push(int mode, const char *kernels, uint64_t first, uint64_t last);
/* Pops the innermost scope. Returns 0, or CULPRIT_ESTACK when only the configured mode is left. */
int mode_pop(void);
/* Scopes pushed and not popped. */
int mode_depth(void);
/* After fork in the child: the lock may have been held by a thread that does not exist there. */
void mode_after_fork(void);

#endif
