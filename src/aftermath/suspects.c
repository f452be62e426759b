/* Which launches of a stream may still be unfinished (suspects.h). Reads only the snapshot and the stream
 * entry; no allocation, no locks. */
#include "suspects.h"

#include "../core/crumb.h"
#include "../core/ring.h"

#include <stdatomic.h>

int suspects_usable(const struct cp_rec *r) { return !(r->flags & (CP_REC_CAPTURED | CP_REC_RETURNED_ERROR)); }

int suspects_of_stream(const struct suspects_recs *s, uint32_t idx, const struct cp_stream *st, uint64_t done,
                       suspects_fn fn, void *arg, int *lost) {
  int added = 0;
  for (size_t i = 0; i < s->n; i++) {
    const struct cp_rec *r = (const struct cp_rec *)((const unsigned char *)s->recs + i * s->rs);
    /* relaxed: the snapshot is a private copy, no longer written by anyone */
    uint64_t seq = atomic_load_explicit(&r->seq, memory_order_relaxed);
    if (r->stream_idx != idx || seq <= done || !suspects_usable(r)) continue;
    if (!added && r->prev > done) {
      *lost = 1; /* the first unfinished launch is gone from the ring: anything */
      return 0;  /* listed from here on would be a later, innocent launch */
    }
    fn(arg, r);
    added++;
    /* The first launch whose breadcrumb was queued ends the list: what follows it on the stream had not
     * started. Not so when it raced another thread's launch on the same stream (their order is unknown). A
     * launch without one of its own may have had a tail mark queued after it (the stream's newest is kept). */
    if (st->slot && !(r->flags & (CP_REC_CRUMB_FAILED | CP_REC_RACY)) &&
        (!(r->flags & CP_REC_UNCRUMBED) || seq == atomic_load_explicit(&st->tail_crumb, memory_order_relaxed)))
      break;
  }
  return added;
}
