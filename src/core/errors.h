/* The library's error codes, in one namespace: 0 is success, a failure is a negative code with a name. The codes
 * the public API returns are include/culprit.h's CULPRIT_E* (CULPRIT_EINVAL, CULPRIT_ESTACK, ...), used as they
 * are inside the library too, so a call the API passes through needs no translation; python/culprit/_lib.py's copy
 * of them is checked against culprit.h by the test unit_error_codes. The library's private codes follow them here,
 * below the public ones. No positive errno is returned from the library: a system call's errno is carried as
 * CP_ESYS(errno), a negative code below CP_ESYS_BASE that never meets a named one, and read back with
 * CP_SYS_ERRNO (or the 0/-1 of a helper whose callers only ask whether it worked). Only culprit.h's codes are
 * included from it: its inline functions are for programs, not for the library. */
#ifndef CULPRIT_ERRORS_H
#define CULPRIT_ERRORS_H

#include "culprit.h"

/* Private codes, never returned through the public API. */
#define CP_ELATER (-5) /* not now, ask again later (a breadcrumb slot wanted during a stream capture) */

/* A system call's errno e as a code: CP_ESYS(e) is -(CP_ESYS_BASE + e), below every named code. */
#define CP_ESYS_BASE 1000
#define CP_ESYS(e) (-(CP_ESYS_BASE + (e)))
#define CP_IS_ESYS(rc) ((rc) < -CP_ESYS_BASE)
#define CP_SYS_ERRNO(rc) (-(rc)-CP_ESYS_BASE) /* the errno a CP_ESYS code carries */

/* The private codes stay below the public ones and above the errno range, so no two meanings share a number. */
_Static_assert((CP_ELATER < CULPRIT_EDISABLED) && (CP_ELATER > CP_ESYS(0)), "a private code meets another code");

#endif
