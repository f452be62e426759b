/* Record mode's mark plan: where breadcrumbs are spent. A mark after a launch is free when the stream's launches
 * are far apart (long kernels, a host that does other work between them) and costs the GPU about 2 µs only in a
 * dense stream of short kernels. So every launch of a stream gets one while the stream is young (its first
 * MARKPLAN_WARM launches), and afterwards as often as a budget of the stream's time allows (CULPRIT_MARK_BUDGET,
 * 1% by default), never fewer than one every CULPRIT_CRUMB_EVERY launches. The plan is made when a mark is queued,
 * from the time stamps the launches already carry: no driver call and no clock read of its own; between marks a
 * launch only compares its count with the one planned. */
#ifndef CULPRIT_MARKPLAN_H
#define CULPRIT_MARKPLAN_H

#include <stdint.h>

struct cp_stream;

#define MARKPLAN_WARM 512 /* a stream's first launches are each marked... */
#define MARKPLAN_WARM_STREAMS                                                                                          \
  256                      /* ...for its first streams of this many (a program making a stream per task
                                   * does not keep every launch marked forever) */
#define MARKPLAN_WINDOW 64 /* launches the time between launches is averaged over (halved past it) */
#define MARKPLAN_COST_NS                                                                                               \
  2000 /* what a mark may cost: the GPU time of one between back-to-back kernels on
                                   * the H200 (the host's 0.5-0.9 µs per call is less) */

/* The spacing for a stream whose recent launches took win_ticks over win_n launches, where a launch of
 * long_ticks or more may have a mark each: the smallest spacing keeping marks within the budget, 1..max_gap
 * (max_gap when nothing was measured). */
uint32_t markplan_gap(uint64_t win_ticks, uint64_t win_n, uint64_t long_ticks, uint32_t max_gap);

/* The launch count nth of stream s (its nth launch) is due a mark under the plan. */
int markplan_due(const struct cp_stream *s, uint64_t nth);
/* A mark was queued after s's nth launch, stamped t (ticks): plans the next one. */
void markplan_marked(struct cp_stream *s, uint64_t nth, uint64_t t);
/* The budget (basis points of a stream's time, 0: fixed spacing) and the widest spacing; once, at start. */
void markplan_init(uint32_t budget_bp, uint32_t max_gap);
/* The estimated share of s's time its marks took, in basis points, from its first launch to its last mark;
 * -1 when too little time was seen to tell. */
int64_t markplan_share_bp(const struct cp_stream *s);

#endif
