/* Operator notes as JSON (see emit_ops.h). */
#include "emit_ops.h"

#include "../core/ops.h"
#include "../base/jsonw.h"

#include <stdlib.h>

static void emit_note(struct jw *w, const struct ops_note *n) {
  jw_key(w, "name");
  jw_str(w, n->name);
  if (n->args[0]) {
    jw_key(w, "args");
    jw_str(w, n->args);
  }
  if (n->problem[0]) {
    jw_key(w, "problem");
    jw_str(w, n->problem);
  }
  if (n->nbuf > 0) {
    jw_key(w, "buffers");
    jw_arr_begin(w);
    for (int i = 0; i < n->nbuf && i < OPS_BUFFERS; i++) {
      jw_obj_begin(w);
      jw_key(w, "label");
      jw_str(w, n->buf[i].label);
      jw_key(w, "base");
      jw_hex(w, n->buf[i].base);
      jw_key(w, "size");
      jw_uint(w, n->buf[i].size);
      jw_obj_end(w);
    }
    jw_arr_end(w);
  }
}

void emit_ops_for(struct jw *w, uint64_t seq, int32_t tid) {
  if (!ops_any()) return;
  struct ops_note n;
  if (!ops_find(seq, tid, &n)) return;
  jw_key(w, "op");
  jw_obj_begin(w);
  emit_note(w, &n);
  jw_obj_end(w);
}

void emit_ops_diagnosis(struct jw *w) {
  /* on the heap: OPS_PROBLEMS notes are tens of kilobytes, and the faulting thread's stack may be small */
  struct ops_note *notes = malloc(OPS_PROBLEMS * sizeof *notes);
  int k = notes ? ops_problems(notes, OPS_PROBLEMS) : 0;
  if (k > 0) {
    jw_key(w, "diagnosis");
    jw_arr_begin(w);
    for (int i = 0; i < k; i++) {
      const struct ops_note *n = &notes[i];
      jw_obj_begin(w);
      emit_note(w, n);
      jw_key(w, "first");
      jw_uint(w, n->first);
      jw_key(w, "last");
      if (n->running)
        jw_null(w);
      else
        jw_uint(w, n->last);
      jw_key(w, "thread");
      jw_int(w, n->tid);
      jw_obj_end(w);
    }
    jw_arr_end(w);
  }
  free(notes);
}
