/* The rule that says which launches of one stream may still be unfinished: those after the last launch known
 * complete, up to and including the first whose breadcrumb was queued. The fault verdict (verdict.c) and the
 * hang report (hang.c) both apply it; what they make of the suspects is theirs. */
#ifndef CULPRIT_SUSPECTS_H
#define CULPRIT_SUSPECTS_H

#include <stddef.h>
#include <stdint.h>

struct cp_rec;
struct cp_stream;

/* A sorted snapshot of launch records, as ring_snapshot made it. */
struct suspects_recs {
  const struct cp_rec *recs; /* records sorted by seq */
  size_t n;                  /* count */
  size_t rs;                 /* bytes per record */
};

/* Called once per suspect, oldest first. */
typedef void (*suspects_fn)(void *arg, const struct cp_rec *r);

/* Whether a record can be a suspect at all: not captured into a graph (it ran inside a graph launch) and not a
 * launch call that itself returned the error (nothing was queued). */
int suspects_usable(const struct cp_rec *r);
/* The suspects of stream st (index idx in the stream table) given done, the highest launch known complete on it:
 * its usable launches after done, up to and including the first whose breadcrumb was queued (had that one
 * completed, its breadcrumb would show it); without breadcrumbs every launch after done. A launch that raced
 * another thread's on the same stream does not end the list (their order is unknown). Returns how many were
 * passed to fn; sets *lost (and passes none) when the first unfinished launch's record is no longer in the
 * snapshot, since anything listed after it would be a later, innocent launch. */
int suspects_of_stream(const struct suspects_recs *s, uint32_t idx, const struct cp_stream *st, uint64_t done,
                       suspects_fn fn, void *arg, int *lost);

#endif
