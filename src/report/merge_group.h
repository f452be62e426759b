/* Which reports are of one job: the first step of merging (merge.h), sorted, never compared in pairs, so that the
 * reports of thousands of ranks group in a fraction of a second. */
#ifndef CULPRIT_REPORT_MERGE_GROUP_H
#define CULPRIT_REPORT_MERGE_GROUP_H

#include "merge.h"

#include <stddef.h>

/* Fills first[0..n): for each report, the index of the first report of its job (itself for a job's first report).
 * Two reports are of one job when both name the launcher's job and it is the same (several `culprit run` commands
 * of one srun step share it; two torchrun jobs under one `culprit run` do not); else when they carry the same run
 * id of `culprit run`; else, ranked reports without either (older versions), when they share directory, launcher
 * and world size. Returns 0 or ENOMEM. */
int merge_group(const struct merge_report *reps, size_t n, size_t *first);

/* strcmp with NULL (a field a report lacks) as the empty string. */
int merge_strcmp0(const char *a, const char *b);

#endif
