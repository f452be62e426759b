/* A stream in a report (emit_streams.h). "marks" says how breadcrumbs were spent on the stream: how many were
 * queued, the spacing record mode's plan had come to (core/markplan.h) and the share of the stream's time they
 * are estimated to have taken, so a reader can tell a window left by a dense stream from one the plan chose. */
#include "emit_streams.h"

#include "emit.h"

#include "../core/crumb.h"
#include "../core/markplan.h"
#include "../base/jsonw.h"
#include "../render/report_keys.h"

void emit_stream_fields(struct jw *w, const struct cp_stream *st, uint64_t last) {
  emit_stream_place(w, RK_KIND, st->handle, st->kind, st->ctx, st->device);
  jw_key(w, RK_LAUNCHES);
  jw_uint(w, atomic_load_explicit(&st->launches, memory_order_relaxed));
  jw_key(w, RK_LAST_LAUNCHED);
  jw_uint(w, last);
  jw_key(w, RK_CRUMBS);
  jw_bool(w, st->slot != NULL);
  if (!st->slot) return;
  jw_key(w, RK_MARKS);
  jw_obj_begin(w);
  jw_key(w, RK_QUEUED);
  jw_uint(w, atomic_load_explicit(&st->marks, memory_order_relaxed));
  uint32_t gap = atomic_load_explicit(&st->plan_gap, memory_order_relaxed);
  if (gap) {
    jw_key(w, RK_SPACING);
    jw_uint(w, gap);
  }
  int64_t bp = markplan_share_bp(st);
  if (bp >= 0) {
    jw_key(w, RK_EST_SHARE);
    jw_double(w, (double)bp / 10000.0);
  }
  jw_obj_end(w);
}
