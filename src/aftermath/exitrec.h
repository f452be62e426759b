/* The exit record (exitrec.c): at exit, a process that a launcher started (a rank of a job), launched kernels
 * and wrote no other report leaves culprit-<host>-<pid>-exit.json ("kind": "exit"), so that the merged view of
 * the job can tell a rank that saw no fault from one that is missing. */
#ifndef CULPRIT_EXITREC_H
#define CULPRIT_EXITREC_H

#include <stdint.h>

struct cp_config;

/* At library start, after rank_init: registers for the exit status (a ranked process only). */
void exitrec_start(const struct cp_config *cfg);
/* At exit, after culprit's last look for an error: fault_state is fault.c's (0: no fault report written or being
 * written), launches the launches this process recorded. */
void exitrec_at_exit(int fault_state, uint64_t launches);

#endif
