/* Reading the launcher's environment: which launcher started the process and its rank fields. Pure parsing
 * over a getenv function, so the unit tests can feed it tables; rank.c applies it to the process once. */
#include "launcher.h"

#include <stdio.h>
#include <string.h>

#define LAUNCHER_COUNT_MAX 100000000 /* more ranks than any job has: a larger number is a bad value */

/* Strict decimal from 0 to LAUNCHER_COUNT_MAX: digits only, no sign, no spaces. Returns the value or -1. */
static int parse_count(const char *s) {
  long v = 0;
  if (!s || !*s) return -1;
  for (const char *p = s; *p; p++) {
    if (*p < '0' || *p > '9') return -1;
    v = v * 10 + (*p - '0');
    if (v > LAUNCHER_COUNT_MAX) return -1;
  }
  return (int)v;
}

void launcher_clean_id(const char *s, char *out, size_t outsz) {
  size_t n = s ? strlen(s) : 0;
  out[0] = '\0';
  if (n == 0 || n >= outsz) return;
  for (size_t i = 0; i < n; i++) {
    char c = s[i];
    int ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || strchr("._-:+@", c);
    if (!ok) return;
  }
  memcpy(out, s, n + 1);
}

/* The variables of one launcher. */
struct launcher_vars {
  const char *name;       /* the launcher's name in reports */
  const char *rank;       /* its global rank variable */
  const char *local_rank; /* its rank-on-this-host variable */
  const char *world_size; /* its world size variable */
};

/* Innermost first: a launcher started under another sees both sets of variables, and the one that started the
 * process itself is the more specific. torchrun workers of an srun or mpirun job carry the outer launcher's
 * variables too (one value per node), and Open MPI or MPICH under Slurm carry Slurm's (those of the job step). */
static const struct launcher_vars launchers[] = {
    {"torchrun", "RANK", "LOCAL_RANK", "WORLD_SIZE"},
    {"openmpi", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_SIZE"},
    {"mpich", "PMI_RANK", "MPI_LOCALRANKID", "PMI_SIZE"},
    {"slurm", "SLURM_PROCID", "SLURM_LOCALID", "SLURM_NTASKS"},
};

/* The job's name as the launcher gives it, so reports of one job written under several `culprit run` commands
 * (one per node or rank) are merged as one. */
static void job_id(struct launcher_info *li, launcher_getenv_fn get) {
  char id[LAUNCHER_ID_MAX] = "";
  const char *run = NULL, *job, *step;
  if (!strcmp(li->launcher, "torchrun")) {
    run = get("TORCHELASTIC_RUN_ID");
    if (run && !strcmp(run, "none")) run = NULL; /* torchrun's default without --rdzv-id: names no job */
    if (run) {
      /* the workers of each restart are a job of their own */
      const char *restart = get("TORCHELASTIC_RESTART_COUNT");
      if (restart && parse_count(restart) > 0)
        snprintf(id, sizeof id, "torchrun:%s.%s", run, restart);
      else
        snprintf(id, sizeof id, "torchrun:%s", run);
    }
  } else if (!strcmp(li->launcher, "openmpi")) {
    run = get("PMIX_NAMESPACE");
    if (!run) run = get("OMPI_MCA_ess_base_jobid");
    if (run) snprintf(id, sizeof id, "openmpi:%s", run);
  }
  if (!id[0] && (job = get("SLURM_JOB_ID")) != NULL && (step = get("SLURM_STEP_ID")) != NULL)
    snprintf(id, sizeof id, "slurm:%s.%s", job, step);
  launcher_clean_id(id, li->job, sizeof li->job);
}

int launcher_parse(struct launcher_info *li, launcher_getenv_fn get) {
  memset(li, 0, sizeof *li);
  li->rank = li->local_rank = li->world_size = -1;
  launcher_clean_id(get("CULPRIT_RUN_ID"), li->run_id, sizeof li->run_id);
  for (size_t i = 0; i < sizeof launchers / sizeof launchers[0]; i++) {
    const struct launcher_vars *v = &launchers[i];
    int rank = parse_count(get(v->rank));
    if (rank < 0) continue;
    if (!strcmp(v->name, "torchrun") && !get(v->world_size)) continue;
    li->launcher = v->name;
    li->rank = rank;
    li->local_rank = parse_count(get(v->local_rank));
    li->world_size = parse_count(get(v->world_size));
    if (li->world_size <= rank) li->world_size = -1; /* contradicts the rank: which one is wrong is unknown */
    if (li->world_size > 0 && li->local_rank >= li->world_size) li->local_rank = -1;
    job_id(li, get);
    return 1;
  }
  return 0;
}
