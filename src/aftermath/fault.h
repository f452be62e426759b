/* The fault report of a process (fault.c): written once, by the first thread that meets a sticky error; the
 * others wait for it. What it says is the verdict's (verdict.c); this file decides when, and gathers the surfacing
 * thread's stacks and core's state for it. */
#ifndef CULPRIT_FAULT_H
#define CULPRIT_FAULT_H

#include <stdint.h>

struct cp_config;

/* At library start (culprit on): keeps cfg (which lives as long as the process) and registers the fork handler. */
void fault_start(const struct cp_config *cfg);
/* A sticky error (code) surfaced in the driver call api; exact_seq non-zero: blocking mode proved that launch
 * faulted. The first call writes the report and the verdict; a call while it is being written waits for it
 * (bounded), so that no thread returns the error and lets the program exit with the report cut short. */
void fault_report(int code, const char *api, uint64_t exact_seq);
/* 0: no fault report; 1: being written; 2: written. Async-signal-safe. */
int fault_state(void);
/* The report file written, or NULL (none yet, or it could not be written). */
const char *fault_report_path(void);

#endif
