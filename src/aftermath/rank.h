/* The process's place in a job (rank.c): the launcher's rank fields in every report, the host name in report
 * file names of ranked processes, and the exit record a ranked process leaves when it saw no fault. */
#ifndef CULPRIT_RANK_H
#define CULPRIT_RANK_H

#include <stdint.h>

struct cp_config;
struct jw;

/* At library start, once configuration was read (not when culprit is off): reads the launcher's environment. */
void rank_init(const struct cp_config *cfg);
/* The host name for report file names (culprit-<host>-<pid>.json), or NULL when no launcher started the
 * process (then the name is culprit-<pid>.json). */
const char *rank_file_host(void);
/* The fields of "process" that say where in a job the process is: rank, local_rank, world_size, launcher, job
 * (the launcher's), and run_id (the `culprit run` command's), each only when known. */
void rank_emit(struct jw *w);
/* At exit, after culprit's last look for an error: report_state is core.c's fault report state (0: none
 * written or being written), launches the launches this process recorded. A ranked process that launched
 * kernels and wrote no other report writes culprit-<host>-<pid>-exit.json, with the exit status once that is
 * known (rank.c registers for it at start). */
void rank_at_exit(int report_state, uint64_t launches);

/* The process's rank from its launcher, or -1 (not started by one, or rank unknown). */
long long rank_of_process(void);

#endif
