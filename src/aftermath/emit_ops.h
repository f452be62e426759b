/* Operator notes in a report (emit_ops.c): the note each launch belongs to, and the notes whose inputs were wrong
 * (the diagnosis). The notes themselves are core's (core/ops.h). */
#ifndef CULPRIT_EMIT_OPS_H
#define CULPRIT_EMIT_OPS_H

#include <stdint.h>

struct jw;

/* Writes "op": {name, args, problem?} for launch seq of thread tid, when a note holds it. */
void emit_ops_for(struct jw *w, uint64_t seq, int32_t tid);
/* Writes "diagnosis": [this process's notes with a problem, oldest first, each with first/last/thread], when
 * there is one. */
void emit_ops_diagnosis(struct jw *w);

#endif
