/* A verdict of candidates settled by the page of the faulting address (faultpage.c): the kernel's log gives the
 * 4 KiB page a GPU memory fault hit (kernlog.c, "fault_address" with source "kernel log"); when that page lies just
 * past an allocation's end, just before its start, or in memory freed before the launch, the faulting access was
 * most likely made through a pointer into that allocation: a candidate alone in being passed one is named, and
 * candidates of one stream alone in being passed one are kept. */
#ifndef CULPRIT_CLI_FAULTPAGE_H
#define CULPRIT_CLI_FAULTPAGE_H

struct json;

/* How near the page must lie to an allocation for the allocation to count as the one the access ran out of:
 * the GPU maps memory in 2 MiB pieces, so an access that runs off a buffer's end faults within the next ones. */
#define FAULTPAGE_ADJACENT (2ull << 20)

/* When doc's verdict is candidates, its error an illegal address, and its fault_address came from a line of the
 * kernel's log tied to it by pid (never by name alone): the allocations the page lies against (faultpage.c), and
 * the one candidate whose recorded parameters point into them, made the exact culprit ("by": "fault page"; the
 * others kept in "candidates_before_fault_page"; "proven" said when it is its stream's only unfinished launch).
 * When several point there, all on one stream, and no other stream's candidate may: the candidates shrink to that
 * stream's (the others to "candidates_before_fault_page", verdict.window with them), and one of them alone
 * pointing there is "verdict.likeliest". *narrowed says whether doc changed. Returns 0, or ENOMEM. */
int faultpage_narrow(struct json *doc, int *narrowed);

#endif
