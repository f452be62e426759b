/* Settling a verdict after the fact (promote.c): one candidate of a report, singled out by a fact the library
 * could not see (a blocking rerun, a GPU core dump), becomes its exact culprit. */
#ifndef CULPRIT_CLI_PROMOTE_H
#define CULPRIT_CLI_PROMOTE_H

#include <stddef.h>

struct json;

/* Makes candidates[hit] of doc the culprit: verdict.certainty "exact", verdict.window that launch alone, the
 * other candidates moved to doc[others_key] (e.g. "candidates_before_rerun"), "candidates" left empty, and
 * "history" rebuilt (promote_extend_history). The verdict's reason is the caller's to extend. Returns 0, EINVAL
 * when hit is not a candidate, or ENOMEM. */
int promote_candidate(struct json *doc, size_t hit, const char *others_key);

/* promote_candidate with the fact that singled it out: verdict.reason gets "; " + why after what it said, and
 * the culprit gets "by": by when by is not NULL. Returns 0, EINVAL, or ENOMEM. */
int promote_because(struct json *doc, size_t hit, const char *others_key, const char *by, const char *why);

/* After a candidate became the culprit: the former candidates launched before it on its stream are launches
 * before it, so "history" gets them (oldest first, the last REPORT_HISTORY kept), and history launches that are
 * not before it on its stream leave. Returns 0 or ENOMEM. */
int promote_extend_history(struct json *doc, const struct json *chosen, const struct json *others);

/* A copy of a JSON subtree (through its text: reports are small and this runs once per report), or NULL. */
struct json *promote_copy(const struct json *n);

#endif
