/* The floor above the launch path: core's upcalls (core/upcalls.h), each handing one moment of the process's life
 * to the room that deals with it: start (the process's place in a job, the fault report's set-up), the first
 * launch (the hang watcher and its signal handlers), a sticky error (the fault report), a context going away and
 * exit (the last look for an error, then the exit record and torchrun's error file). */
#include "errfile.h"
#include "errtext.h"
#include "exitrec.h"
#include "fault.h"
#include "hang.h"
#include "lastlook.h"
#include "rank.h"
#include "signals.h"
#include "../core/allocs.h"
#include "../base/config.h"
#include "../core/core.h"
#include "../core/upcalls.h"

#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static const struct cp_config *g_cfg; /* the process's configuration (core's, lives forever) */

static void started(const struct cp_config *cfg) {
  g_cfg = cfg;
  allocs_configure(cfg->stack_depth); /* allocation sites keep as many frames as launches, up to its bound */
  rank_init();
  exitrec_start(cfg);
  fault_start(cfg);
  errtext_start(cfg);
  errfile_start();
  signals_last_words(errfile_at_exit); /* an abort() after the fault runs no exit handler */
}

/* The process's first launch: the hang watcher, and under `culprit run` an empty file in the report directory
 * saying a process of the run launched kernels with culprit loaded. A run that ends with no report and no such
 * file ran its kernels, if any, where culprit was not (a process started without LD_PRELOAD), and culprit run
 * says so instead of "no sticky CUDA error". Made like a report (no link followed, nothing clobbered); an
 * existing one (a pid of an earlier process of the run) says the same. */
static void first_launch(const struct cp_config *cfg) {
  hang_start(cfg);
  const char *run = rank_run_id();
  if (!run[0]) return;
  char name[96];
  cfg_launched_prefix(run, name, sizeof name);
  size_t n = strlen(name);
  snprintf(name + n, sizeof name - n, "%d", (int)getpid());
  int dfd = open(cfg->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd < 0) return;
  int fd = openat(dfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd >= 0) close(fd);
  close(dfd);
}

/* The last look (lastlook.c). The program may meet a sticky error in a call culprit does not wrap (the CUDA
 * runtime checks the context inside cudaMemcpyAsync, say, and cuBLAS inside its own calls) and fail without
 * culprit ever seeing it, or return from main before its faulting kernel even ran. The error stays until the
 * context goes away, so before that (ctx, or a device's primary context), and when the process exits (every
 * context), the contexts are asked, waiting up to CULPRIT_EXIT_WAIT for unfinished work. Nothing is asked of
 * the driver by a process that launched nothing (a forked child, whose inherited CUDA state must not be
 * touched), after a report, or while a capture is under way (a query would break it). */
static void last_look(void *ctx, int device, const char *api) {
  struct cp_view v;
  if (!g_cfg || fault_state() != 0) return;
  cp_view(&v);
  if (v.seq == v.after_seq || v.captures) return;
  int rc = lastlook_find(ctx, device, v.after_seq, g_cfg->exit_wait_ms);
  if (rc) fault_report(rc, api, 0);
}

static void ctx_going(void *ctx, int device, const char *api) { last_look(ctx, ctx ? -1 : device, api); }

static void at_exit(void) {
  struct cp_view v;
  last_look(NULL, -1, "exit");
  cp_view(&v);
  exitrec_at_exit(fault_state(), v.seq - v.after_seq);
  errfile_at_exit();
}

const struct cp_upcalls cp_upcalls = {
    .started = started,
    .first_launch = first_launch,
    .sticky = fault_report,
    .ctx_going = ctx_going,
    .at_exit = at_exit,
};
