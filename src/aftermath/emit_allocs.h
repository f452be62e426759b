/* The allocation table in a report (emit_allocs.c): the "allocations" object of fault and hang reports, which
 * src/render/addr.c reads to say what a faulting address touched. The table itself is core's (core/allocs.h). */
#ifndef CULPRIT_EMIT_ALLOCS_H
#define CULPRIT_EMIT_ALLOCS_H

struct jw;

/* Writes "allocations": {capacity, recorded, forgotten, not_recorded, overflowed?, vm_handles?, ranges, sites}
 * (docs/report.md), also when the process allocated nothing. */
void emit_allocs(struct jw *w);

#endif
