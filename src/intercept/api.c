/* The public C API's exports (include/culprit.h reaches them through dlsym, so a program built with the header
 * runs without the library). Each is a guard and one call into the room that answers it: the mode stack and the
 * counters (core), operator notes (core/ops.c), the last report (aftermath/fault.c). */
#include "export.h"

#include "../../include/culprit.h"
#include "../aftermath/fault.h"
#include "../core/core.h"
#include "../core/errors.h"
#include "../core/modes.h"
#include "../core/ops.h"

CP_EXPORT int culprit_api_version(void) { return CULPRIT_API_VERSION; }

CP_EXPORT int culprit_api_push(int mode, const char *kernels, unsigned long long first, unsigned long long last) {
  if (!cp_active()) return CULPRIT_EDISABLED;
  return mode_push(mode, kernels, first, last);
}

CP_EXPORT int culprit_api_pop(void) {
  if (!cp_active()) return CULPRIT_EDISABLED;
  return mode_pop();
}

CP_EXPORT int culprit_api_mode(void) {
  if (!cp_active()) return CULPRIT_EDISABLED;
  struct mode_frame *m = mode_now();
  return m ? m->mode : CULPRIT_EDISABLED;
}

CP_EXPORT int culprit_api_depth(void) {
  if (!cp_active()) return CULPRIT_EDISABLED;
  return mode_depth();
}

CP_EXPORT const char *culprit_api_last_report(void) { return fault_report_path(); }

/* Stream captures under way in the process: while one is, a synchronizing call from any thread may break it
 * (global capture mode), so the Python diagnosis reads no tensor then. */
CP_EXPORT int culprit_api_captures(void) {
  if (!cp_active()) return CULPRIT_EDISABLED;
  struct cp_view v;
  cp_view(&v);
  return v.captures;
}

CP_EXPORT unsigned long long culprit_api_launches(void) {
  struct cp_view v;
  cp_view(&v);
  return (unsigned long long)(v.seq - v.after_seq);
}

CP_EXPORT int culprit_api_op_begin(const char *name, const char *args, const char *problem) {
  if (!cp_active()) return CULPRIT_EDISABLED;
  return ops_begin(name, args, problem);
}

CP_EXPORT int culprit_api_op_begin_buffers(const char *name, const char *args, const char *problem,
                                           const char *buffers) {
  if (!cp_active()) return CULPRIT_EDISABLED;
  return ops_begin_buffers(name, args, problem, buffers);
}

CP_EXPORT int culprit_api_op_end(void) {
  if (!cp_active()) return CULPRIT_EDISABLED;
  return ops_end();
}
