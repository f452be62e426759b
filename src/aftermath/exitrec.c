/* The exit record of a ranked process (see exitrec.h). It is written by whichever of two exit steps runs second:
 * core's at-exit upcall (after the last look) and an on_exit handler that learns the exit status. */
#define _GNU_SOURCE
#include "exitrec.h"

#include "emit.h"
#include "rank.h"
#include "../base/config.h"
#include "../core/crumb.h"
#include "../core/ring.h"
#include "../base/jsonw.h"
#include "../render/report_keys.h"

#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static const struct cp_config *g_cfg; /* the report directory, for the exit record */
static time_t g_start;                /* when the library started, to tell a hang report of this process from an
                                       * old one of an earlier process with the same pid */
static int g_status = -1;             /* the status exit() was given, -1 until known */
static int g_exit_steps;              /* of note_status and exitrec_at_exit, how many ran (exit runs one thread) */
static int g_exit_fault;              /* what exitrec_at_exit was told: fault.c's report state */
static uint64_t g_exit_launches;      /* ...and the launches recorded */

static void write_exit_record(void);

/* The exit status reaches only on_exit handlers, and this one, registered at library start, runs late: a
 * preloaded library's constructor runs before the program's start code registers the dynamic linker's
 * finalizer, so this runs after it, after every library's destructors (the last look at exit, registered at the
 * first launch, runs before them). Whichever of the two runs second writes the record; it needs only libc and
 * culprit's own memory, which stays mapped. */
static void note_status(int status, void *arg) {
  (void)arg;
  g_status = status & 0xff;
  if (++g_exit_steps == 2) write_exit_record();
}

void exitrec_start(const struct cp_config *cfg) {
  if (!rank_file_host()) return; /* not started by a launcher */
  g_cfg = cfg;
  g_start = time(NULL);
  on_exit(note_status, NULL);
}

/* A hang report this process wrote (its watcher or a signal handler did, before the program chose to exit). */
static int wrote_hang_report(void) {
  char path[CFG_DIR_MAX + RANK_HOST_MAX + 48];
  struct stat sb;
  snprintf(path, sizeof path, "%s/culprit-%s-%d-hang.json", g_cfg->dir, rank_file_host(), (int)getpid());
  return stat(path, &sb) == 0 && sb.st_mtime >= g_start;
}

void exitrec_at_exit(int fault_state, uint64_t launches) {
  if (!g_cfg) return;
  g_exit_fault = fault_state;
  g_exit_launches = launches;
  if (++g_exit_steps == 2) write_exit_record();
}

static void write_exit_record(void) {
  uint64_t launches = g_exit_launches;
  if (g_exit_fault != 0 || launches == 0 || wrote_hang_report()) return;
  struct jw w;
  char path[CFG_DIR_MAX + 128];
  jw_init(&w);
  jw_obj_begin(&w);
  emit_head(&w, "exit");
  jw_key(&w, RK_CONFIG);
  jw_obj_begin(&w);
  jw_key(&w, RK_MODE);
  jw_str(&w, cfg_mode_name(g_cfg->mode));
  jw_obj_end(&w);
  jw_key(&w, RK_EXIT);
  jw_obj_begin(&w);
  if (g_status >= 0) {
    jw_key(&w, RK_STATUS);
    jw_int(&w, g_status);
  }
  jw_obj_end(&w);
  jw_key(&w, RK_STATS);
  jw_obj_begin(&w);
  jw_key(&w, RK_LAUNCHES);
  jw_uint(&w, launches);
  jw_key(&w, RK_CRUMBS);
  jw_uint(&w, crumb_written());
  jw_key(&w, RK_CRUMB_FAILURES);
  jw_uint(&w, crumb_failures());
  jw_key(&w, RK_RING_OVERWRITTEN);
  jw_uint(&w, ring_total_overwritten());
  jw_key(&w, RK_THREADS);
  jw_int(&w, ring_count());
  jw_obj_end(&w);
  jw_obj_end(&w);
  /* silent: the record says nothing went wrong; `culprit run` and `culprit report` show it in the job's view */
  if (!w.err) emit_write_file(g_cfg->dir, "-exit", w.buf, w.len, path, sizeof path);
  jw_free(&w);
}
