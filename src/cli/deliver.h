/* Delivering a run's reports to the fleet's tools (deliver.c): `--on-report CMD` runs CMD with each new report's
 * path, as a core-dump handler would be run, bounded in time; `--events PATH` appends one line of JSON per
 * report (host, rank, job, kernel, launch line, error, report path) to a file or sends it to a unix socket a
 * collector reads. Both run in the command, after the program's processes ended, never inside them. */
#ifndef CULPRIT_CLI_DELIVER_H
#define CULPRIT_CLI_DELIVER_H

#include <stddef.h>

struct cli_run_opts;
struct json;

/* The event line of one report (doc, read from path): malloc'd, one line of JSON ending in '\n', or NULL when out
 * of memory or when the report is not one of a fault or a hang. */
char *deliver_event_line(const char *path, const struct json *doc);

/* Delivers one report as o asks (--on-report, --events); each failure is said on stderr in one sentence and is
 * never fatal. */
void deliver_report(const struct cli_run_opts *o, const char *path, const struct json *doc);

#endif
