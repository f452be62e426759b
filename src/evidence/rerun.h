/* `culprit run --rerun` (rerun.c): a verdict of candidates settled by running the command again with blocking
 * launches over their window, and both runs merged into the first run's report. */
#ifndef CULPRIT_CLI_RERUN_H
#define CULPRIT_CLI_RERUN_H

#include <stddef.h>

struct cli_run_opts;
struct json;

/* Whether report doc is a fault whose verdict is candidates with a window, which it returns in *lo..*hi. */
int rerun_needed(const struct json *doc, long long *lo, long long *hi);

/* When the report at path needs it: says so, runs o's command again in blocking mode over the window (its
 * reports into run_dir/rerun-PID), and merges the outcome into the report at path ("rerun": {window, outcome
 * confirmed | elsewhere | no-fault | unmatched, report, seq, kernel}; a confirmed candidate becomes the exact
 * culprit). Returns 0, or an exit code (CLI_EXIT_*) with the message printed. */
int rerun_settle(const struct cli_run_opts *o, const char *path, const char *run_dir);

/* The ranked reports among paths (a job's) whose verdicts are candidates: the job runs again once, each such
 * rank blocking over its own window (CULPRIT_RANK_LAUNCHES), and each report gets its rank's outcome as
 * rerun_settle gives it. Returns 0, or an exit code with the message printed. */
int rerun_settle_job(const struct cli_run_opts *o, char **paths, size_t n, const char *run_dir);

#endif
