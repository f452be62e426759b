/* Unit test: the launcher's environment gives rank, local rank, world size and job for torchrun, Slurm, Open MPI
 * and MPICH; the innermost launcher wins; bad values are left out, never guessed. */
#include "../../src/core/launcher.h"
#include "check.h"

#include <string.h>

static const char *const *g_env; /* NULL-terminated name, value pairs */

static const char *fake_getenv(const char *name) {
  for (const char *const *p = g_env; p && *p; p += 2)
    if (!strcmp(p[0], name)) return p[1];
  return NULL;
}

static int parse(const char *const *env, struct launcher_info *li) {
  g_env = env;
  return launcher_parse(li, fake_getenv);
}

int main(void) {
  struct launcher_info li;

  const char *none[] = {"HOME", "/root", NULL};
  CHECK(parse(none, &li) == 0 && li.launcher == NULL && li.rank == -1 && li.world_size == -1);
  CHECK(li.job[0] == '\0' && li.run_id[0] == '\0');

  const char *torch[] = {"RANK",
                         "3",
                         "LOCAL_RANK",
                         "1",
                         "WORLD_SIZE",
                         "8",
                         "TORCHELASTIC_RUN_ID",
                         "abc-12",
                         "CULPRIT_RUN_ID",
                         "vm-42-1700000000",
                         NULL};
  CHECK(parse(torch, &li) == 1 && !strcmp(li.launcher, "torchrun"));
  CHECK(li.rank == 3 && li.local_rank == 1 && li.world_size == 8, "%d %d %d", li.rank, li.local_rank, li.world_size);
  CHECK(!strcmp(li.job, "torchrun:abc-12"), "job %s", li.job);
  CHECK(!strcmp(li.run_id, "vm-42-1700000000"), "run id %s", li.run_id);

  /* torchrun's default run id names no job; a restart is a job of its own */
  const char *torch_none[] = {"RANK", "0", "WORLD_SIZE", "2", "TORCHELASTIC_RUN_ID", "none", NULL};
  CHECK(parse(torch_none, &li) == 1 && li.job[0] == '\0' && li.local_rank == -1);
  const char *restart[] = {"RANK", "0", "WORLD_SIZE", "2", "TORCHELASTIC_RUN_ID", "j7", "TORCHELASTIC_RESTART_COUNT",
                           "2",    NULL};
  CHECK(parse(restart, &li) == 1 && !strcmp(li.job, "torchrun:j7.2"), "job %s", li.job);

  /* RANK alone is too common a name to mean torchrun */
  const char *rank_only[] = {"RANK", "2", NULL};
  CHECK(parse(rank_only, &li) == 0 && li.launcher == NULL);

  const char *slurm[] = {"SLURM_PROCID",
                         "5",
                         "SLURM_LOCALID",
                         "1",
                         "SLURM_NTASKS",
                         "6",
                         "SLURM_JOB_ID",
                         "991",
                         "SLURM_STEP_ID",
                         "0",
                         NULL};
  CHECK(parse(slurm, &li) == 1 && !strcmp(li.launcher, "slurm") && li.rank == 5 && li.local_rank == 1 &&
        li.world_size == 6);
  CHECK(!strcmp(li.job, "slurm:991.0"), "job %s", li.job);

  const char *ompi[] = {
      "OMPI_COMM_WORLD_RANK", "0", "OMPI_COMM_WORLD_LOCAL_RANK", "0", "OMPI_COMM_WORLD_SIZE", "4", "PMIX_NAMESPACE",
      "prterun-vm-123@1",     NULL};
  CHECK(parse(ompi, &li) == 1 && !strcmp(li.launcher, "openmpi") && li.world_size == 4);
  CHECK(!strcmp(li.job, "openmpi:prterun-vm-123@1"), "job %s", li.job);

  const char *mpich[] = {"PMI_RANK", "7", "PMI_SIZE", "8", "MPI_LOCALRANKID", "3", NULL};
  CHECK(parse(mpich, &li) == 1 && !strcmp(li.launcher, "mpich") && li.rank == 7 && li.local_rank == 3 &&
        li.world_size == 8 && li.job[0] == '\0');

  /* torchrun workers of an srun job see Slurm's variables too (one value per node): torchrun's are the rank's;
   * Open MPI under Slurm names the Slurm step when it has no job name of its own */
  const char *nested[] = {"SLURM_PROCID", "1", "SLURM_NTASKS",  "2", "RANK", "6", "WORLD_SIZE", "8",
                          "SLURM_JOB_ID", "5", "SLURM_STEP_ID", "1", NULL};
  CHECK(parse(nested, &li) == 1 && !strcmp(li.launcher, "torchrun") && li.rank == 6 && li.world_size == 8);
  CHECK(!strcmp(li.job, "slurm:5.1"), "job %s", li.job);
  const char *mpi_slurm[] = {
      "OMPI_COMM_WORLD_RANK", "3", "SLURM_PROCID", "3", "SLURM_JOB_ID", "5", "SLURM_STEP_ID", "2", NULL};
  CHECK(parse(mpi_slurm, &li) == 1 && !strcmp(li.launcher, "openmpi") && !strcmp(li.job, "slurm:5.2"));

  /* bad values: a bad rank is no launcher (the next one is tried); other bad fields are left out */
  const char *bad_rank[] = {"RANK", "two", "WORLD_SIZE", "4", "SLURM_PROCID", "1", NULL};
  CHECK(parse(bad_rank, &li) == 1 && !strcmp(li.launcher, "slurm") && li.rank == 1);
  const char *bad[] = {"RANK", "-1", "WORLD_SIZE", "4", NULL};
  CHECK(parse(bad, &li) == 0);
  const char *big[] = {"RANK", "99999999999999999999", "WORLD_SIZE", "4", NULL};
  CHECK(parse(big, &li) == 0);
  const char *spaces[] = {"RANK", " 1", "WORLD_SIZE", "4", NULL};
  CHECK(parse(spaces, &li) == 0);
  const char *empty[] = {"RANK", "", "WORLD_SIZE", "", NULL};
  CHECK(parse(empty, &li) == 0);
  const char *bad_world[] = {"RANK", "1", "LOCAL_RANK", "x", "WORLD_SIZE", "lots", NULL};
  CHECK(parse(bad_world, &li) == 1 && li.rank == 1 && li.local_rank == -1 && li.world_size == -1);
  const char *over[] = {"RANK", "4", "LOCAL_RANK", "0", "WORLD_SIZE", "4", NULL};
  CHECK(parse(over, &li) == 1 && li.rank == 4 && li.world_size == -1, "a rank not below the world size");
  const char *local_over[] = {"RANK", "1", "LOCAL_RANK", "9", "WORLD_SIZE", "4", NULL};
  CHECK(parse(local_over, &li) == 1 && li.local_rank == -1 && li.world_size == 4);
  const char *bad_ids[] = {"RANK",           "0",      "WORLD_SIZE", "1", "TORCHELASTIC_RUN_ID", "a b\"c",
                           "CULPRIT_RUN_ID", "x/../y", NULL};
  CHECK(parse(bad_ids, &li) == 1 && li.job[0] == '\0' && li.run_id[0] == '\0', "job %s run %s", li.job, li.run_id);
  char longid[300];
  memset(longid, 'a', sizeof longid - 1);
  longid[sizeof longid - 1] = '\0';
  const char *long_id[] = {"CULPRIT_RUN_ID", longid, NULL};
  CHECK(parse(long_id, &li) == 0 && li.run_id[0] == '\0');

  char out[8];
  launcher_clean_id("abc", out, sizeof out);
  CHECK(!strcmp(out, "abc"));
  launcher_clean_id("abcdefgh", out, sizeof out);
  CHECK(out[0] == '\0', "too long for the buffer");
  launcher_clean_id(NULL, out, sizeof out);
  CHECK(out[0] == '\0');
  return CHECK_DONE();
}
