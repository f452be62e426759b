/* Native stacks: capture return addresses cheaply at launch time, describe them (module, offset, exported
 * symbol) only when a report is written. Python frames are pystack.h's. */
#ifndef CULPRIT_STACK_H
#define CULPRIT_STACK_H

#include <stddef.h>
#include <stdint.h>

struct stack_frame_info {
  uintptr_t pc;                   /* the return address */
  char module[512];               /* file of the object it lies in, "" if unknown */
  uintptr_t offset;               /* pc minus the object's lowest mapped address (dladdr's dli_fbase) */
  char function[256];             /* exported symbol containing pc, "" if none */
};

/* Fills pcs with up to max return addresses of the caller's stack, innermost first, leaving out frames
 * inside culprit itself. Returns how many. Safe to call from any thread; no locks of culprit's own. */
int stack_capture(void **pcs, int max);
/* The same for a launch: a chain this thread captured before from the same stack pointer, whose return
 * addresses all still sit in their stack slots, is copied instead of unwound (see stack.c); *hit says which.
 * Frames come from the libgcc unwinder on a miss. */
int stack_capture_launch(void **pcs, int max, int *hit);
/* Describes one address. */
void stack_describe(uintptr_t pc, struct stack_frame_info *out);
/* Opens the unwinder (libunwind, privately) ahead of the first capture; captures do it too if needed. */
void stack_init(void);
/* Name of the unwinder in use, for reports. */
const char *stack_unwinder(void);

#endif
