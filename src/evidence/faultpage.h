/* A verdict of candidates settled by the page of the faulting address (faultpage.c): the kernel's log gives the
 * 4 KiB page a GPU memory fault hit (kernlog.c, "fault_address" with source "kernel log"); when that page lies just
 * past an allocation's end, just before its start, or in memory freed before the launch, the faulting access was
 * most likely made through a pointer into that allocation, and a candidate alone in being passed one is named. */
#ifndef CULPRIT_CLI_FAULTPAGE_H
#define CULPRIT_CLI_FAULTPAGE_H

struct json;

/* How near the page must lie to an allocation for the allocation to count as the one the access ran out of:
 * the GPU maps memory in 2 MiB pieces, so an access that runs off a buffer's end faults within the next ones. */
#define FAULTPAGE_ADJACENT (2ull << 20)

/* When doc's verdict is candidates and its fault_address came from the kernel's log: the allocations the page
 * lies against (faultpage.c), and the one candidate whose recorded parameters point into them, made the exact
 * culprit ("by": "fault page"; the others kept in "candidates_before_fault_page"). *narrowed says whether it
 * was. Returns 0, or ENOMEM. */
int faultpage_narrow(struct json *doc, int *narrowed);

#endif
