/* Which launcher started this process (torchrun, Slurm, Open MPI, MPICH) and its rank, local rank and world size,
 * parsed from environment variables the launcher sets. Parsing only: the process's state is rank.c's; the unit
 * tests feed it tables. */
#ifndef CULPRIT_LAUNCHER_H
#define CULPRIT_LAUNCHER_H

#include <stddef.h>

#define LAUNCHER_ID_MAX 128 /* longest job or run id kept, with its NUL */

struct launcher_info {
  const char *launcher;         /* "torchrun", "slurm", "openmpi", "mpich"; NULL: not started by a launcher */
  int rank;                     /* global rank; -1 when the launcher gave none usable */
  int local_rank;               /* rank on this host; -1 when absent or bad */
  int world_size;               /* ranks in the job; -1 when absent or bad */
  char job[LAUNCHER_ID_MAX];    /* the launcher's name for the job (Slurm job.step, torchrun run id); "" none */
  char run_id[LAUNCHER_ID_MAX]; /* CULPRIT_RUN_ID, the `culprit run` command this process runs under; "" none */
};

typedef const char *(*launcher_getenv_fn)(const char *name);

/* Fills *li from the variables. A launcher counts when its rank variable is a number from 0 (for torchrun,
 * whose RANK is a common name, WORLD_SIZE must be set too); a field with a bad value (not a number, out of
 * range, a rank not below the world size) is left out, never guessed. Returns 1 when a launcher was found. */
int launcher_parse(struct launcher_info *li, launcher_getenv_fn get);

/* Copies s into out when it is 1..outsz-1 printable ASCII characters without quotes or backslashes, so that it
 * can go into file names and JSON as it is; else out is "". */
void launcher_clean_id(const char *s, char *out, size_t outsz);

#endif
