/* The library's error codes, in one namespace: 0 is success, a failure is a negative code with a name. The codes
 * the public API returns are include/culprit.h's CULPRIT_E* (CULPRIT_EINVAL, CULPRIT_ESTACK, ...), used as they
 * are inside the library too, so a call the API passes through needs no translation; python/culprit/_lib.py's copy
 * of them is checked against culprit.h by the test unit_error_codes. No positive errno is returned from the
 * library: a system call's errno becomes one of these (or the 0/-1 of a helper whose callers only ask whether it
 * worked). Only culprit.h's codes are included from it: its inline functions are for programs, not for the library. */
#ifndef CULPRIT_ERRORS_H
#define CULPRIT_ERRORS_H

#include "culprit.h"

#endif
