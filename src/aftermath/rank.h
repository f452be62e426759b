/* The process's place in a job (rank.c): the launcher's rank fields in every report and the host name in report
 * file names of ranked processes. */
#ifndef CULPRIT_RANK_H
#define CULPRIT_RANK_H

#include <stdint.h>

struct jw;

#define RANK_HOST_MAX 65 /* host name bytes kept for file names, with the NUL */

/* At library start, once configuration was read (not when culprit is off): reads the launcher's environment. */
void rank_init(void);
/* The host name for report file names (culprit-<host>-<pid>.json), or NULL when no launcher started the
 * process (then the name is culprit-<pid>.json). */
const char *rank_file_host(void);
/* The fields of "process" that say where in a job the process is: rank, local_rank, world_size, launcher, job
 * (the launcher's), and run_id (the `culprit run` command's), each only when known. */
void rank_emit(struct jw *w);
/* The `culprit run` command this process runs under (CULPRIT_RUN_ID, cleaned), or "" when none. */
const char *rank_run_id(void);
/* The process's rank from its launcher, or -1 (not started by one, or rank unknown). */
long long rank_of_process(void);

#endif
