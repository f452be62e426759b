/* NCCL's own warnings, kept with the reports (nccllog.c): `culprit run` points NCCL's debug output at a file per
 * process in the report directory, so the terminal gets nothing new, and afterwards gives each report the end
 * of its process's log. */
#ifndef CULPRIT_CLI_NCCLLOG_H
#define CULPRIT_CLI_NCCLLOG_H

#include <stddef.h>

struct json;

#define NCCLLOG_LINES 64 /* log lines a report keeps, the last ones */

/* In the child before exec: when the user set neither NCCL_DEBUG nor NCCL_DEBUG_FILE and dir is the caller's own
 * and writable by no one else, sets NCCL_DEBUG=WARN and NCCL_DEBUG_FILE=<dir>/nccl-%h-%p.log (NCCL puts in the
 * host and the pid). Returns 0, or -1 (errno set). */
int nccllog_env(const char *dir);

/* Adds "nccl_log" (its last NCCLLOG_LINES lines) to a report whose process has a log in dir; *added is set when
 * the report changed. Returns 0, or ENOMEM. */
int nccllog_attach(const char *dir, struct json *doc, int *added);

/* Removes the empty logs in dir (NCCL makes one for every process that initializes it). */
void nccllog_tidy(const char *dir);

#endif
