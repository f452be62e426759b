/* The last look (lastlook.c): ask the contexts a process launched on for a sticky error, waiting a bounded time
 * for their unfinished work, at exit and before a context goes away. */
#ifndef CULPRIT_LASTLOOK_H
#define CULPRIT_LASTLOOK_H

#include <stdint.h>

/* Looks at context ctx, or (ctx NULL) at every context on device (or, device -1, every context) that has
 * launches after after_seq; with none known, the calling thread's current context. Waits up to wait_ms while
 * streams still have work. Returns the sticky error found (the first), or 0. Leaves the thread's current
 * context as it was. */
int lastlook_find(void *ctx, int device, uint64_t after_seq, uint32_t wait_ms);

#endif
