/* Operator notes as JSON (see emit_ops.h). */
#include "emit_ops.h"

#include "../core/ops.h"
#include "../base/jsonw.h"
#include "../render/report_keys.h"

#include <stdlib.h>

static void emit_note(struct jw *w, const struct ops_note *n) {
  jw_key(w, RK_NAME);
  jw_str(w, n->name);
  if (n->args[0]) {
    jw_key(w, RK_ARGS);
    jw_str(w, n->args);
  }
  if (n->problem[0]) {
    jw_key(w, RK_PROBLEM);
    jw_str(w, n->problem);
  }
  if (n->nbuf > 0) {
    jw_key(w, RK_BUFFERS);
    jw_arr_begin(w);
    for (int i = 0; i < n->nbuf && i < OPS_BUFFERS; i++) {
      jw_obj_begin(w);
      jw_key(w, RK_LABEL);
      jw_str(w, n->buf[i].label);
      jw_key(w, RK_BASE);
      jw_hex(w, n->buf[i].base);
      jw_key(w, RK_SIZE);
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
  jw_key(w, RK_OP);
  jw_obj_begin(w);
  emit_note(w, &n);
  jw_obj_end(w);
}

void emit_ops_diagnosis(struct jw *w) {
  /* on the heap: OPS_PROBLEMS notes are tens of kilobytes, and the faulting thread's stack may be small */
  struct ops_note *notes = malloc(OPS_PROBLEMS * sizeof *notes);
  int k = notes ? ops_problems(notes, OPS_PROBLEMS) : 0;
  if (k > 0) {
    jw_key(w, RK_DIAGNOSIS);
    jw_arr_begin(w);
    for (int i = 0; i < k; i++) {
      const struct ops_note *n = &notes[i];
      jw_obj_begin(w);
      emit_note(w, n);
      jw_key(w, RK_FIRST);
      jw_uint(w, n->first);
      jw_key(w, RK_LAST);
      if (n->running)
        jw_null(w);
      else
        jw_uint(w, n->last);
      jw_key(w, RK_THREAD);
      jw_int(w, n->tid);
      jw_obj_end(w);
    }
    jw_arr_end(w);
  }
  free(notes);
}
