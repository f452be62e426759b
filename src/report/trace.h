/* A report as Chrome trace events (trace.c), the JSON Perfetto and chrome://tracing open. */
#ifndef CULPRIT_REPORT_TRACE_H
#define CULPRIT_REPORT_TRACE_H

#include <stddef.h>

struct json;
struct jw;

/* Writes the trace of report doc (a fault or hang report) into w: one track per GPU stream and one per host
 * thread, every launch the report holds as an instant event marked with its role (culprit, in flight, candidate,
 * queued, before, ruled out, graph node), and the moment the error surfaced or the hang was seen. *nlaunches
 * (when not NULL) gets the number of launches in it. Returns 0, or -1 when doc is not a report or the writer
 * failed. */
int trace_write(const struct json *doc, struct jw *w, size_t *nlaunches);

#endif
