/* The flush of the device's printf buffer after a device assert (printflush.h). Which call flushes it on a faulted
 * context is the driver's business: the choice is PRINTFLUSH_CALL alone. */
#include "printflush.h"

#include "../core/driver.h"

#include <string.h>

#define CU_ERROR_ASSERT 710
#define PRINTFLUSH_CALL "cuCtxSynchronize" /* the synchronize of the calling thread's current context */

/* Whether the error surfaced at a call that empties the printf buffer itself (any synchronize). */
static int printflush_flushed_by(const char *api) { return api && strstr(api, "Synchronize") != NULL; }

void printflush_after_fault(int code, const char *api, struct printflush *pf) {
  pf->call = NULL;
  pf->result = 0;
  if (code != CU_ERROR_ASSERT || printflush_flushed_by(api) || !cp_drv.ctx_sync) return;
  /* the context is faulted (710 is sticky): the synchronize does not wait for work, it returns the error */
  pf->result = cp_drv.ctx_sync();
  pf->call = PRINTFLUSH_CALL;
}
