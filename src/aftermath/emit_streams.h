/* A stream in a report (emit_streams.c): the fields every report's "streams" entry shares, the fault's and the
 * hang's, with how record mode spent its breadcrumbs there. The stream table itself is core's (core/crumb.h). */
#ifndef CULPRIT_EMIT_STREAMS_H
#define CULPRIT_EMIT_STREAMS_H

#include <stdint.h>

struct jw;
struct cp_stream;

/* Writes the keys stream, kind, ctx, device, launches, last_launched (last, as the caller read it), crumbs and
 * marks into the open object of st's entry. */
void emit_stream_fields(struct jw *w, const struct cp_stream *st, uint64_t last);

#endif
