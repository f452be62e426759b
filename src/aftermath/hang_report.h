/* The hang report (hang_report.c): the JSON file culprit-<pid>-hang.json and its text on stderr, written by the
 * watcher thread (hang.c) with what every thread and every stream were doing. */
#ifndef CULPRIT_HANG_REPORT_H
#define CULPRIT_HANG_REPORT_H

#include <stddef.h>
#include <stdint.h>

struct cp_config;

/* Writes the hang report: sig 0 for a timeout (sender: the signal's sender, 0 if unknown; stalled_ms: how long no
 * progress was seen; now: CLOCK_MONOTONIC). Returns 0 when the file was written, its path in path. No report is
 * written beside a fault report. */
int hang_write(const struct cp_config *cfg, int sig, int sender, uint64_t stalled_ms, uint64_t now, char *path,
               size_t pathlen);

#endif
