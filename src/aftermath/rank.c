/* The process's place in a job. The launcher's environment (launcher.c) is read once at library start; reports
 * then carry the rank fields in "process", ranked processes name their report files after the host as well as
 * the pid (several hosts may share one report directory), and at exit a ranked process that launched kernels
 * but wrote no report leaves an exit record ("kind": "exit"), so a merged view of the job can tell a rank that
 * saw no fault from one that is missing. */
#define _GNU_SOURCE
#include "rank.h"

#include "../core/config.h"
#include "../core/crumb.h"
#include "emit.h"
#include "../core/launcher.h"
#include "../core/ring.h"
#include "../report/jsonw.h"
#include "../stack/stack.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define RANK_HOST_MAX 65              /* host name bytes kept for file names, with the NUL */

static struct launcher_info g_li;     /* as read at start; launcher NULL: not started by a launcher */
static const struct cp_config *g_cfg; /* the report directory, for the exit record */
static char g_host[RANK_HOST_MAX];    /* the host name, made safe for a file name */
static time_t g_start;                /* when the library started, to tell a hang report of this process from an
                                       * old one of an earlier process with the same pid */
static int g_status = -1;             /* the status exit() was given, -1 until known */
static int g_exit_steps;              /* of note_status and rank_at_exit, how many ran (exit runs one thread) */
static int g_exit_report;             /* what rank_at_exit was told: core.c's fault report state */
static uint64_t g_exit_launches;      /* ...and the launches recorded */

static const char *env_get(const char *name) { return getenv(name); }

static void write_exit_record(void);

/* The exit status reaches only on_exit handlers, and this one, registered at library start, runs late: a
 * preloaded library's constructor runs before the program's start code registers the dynamic linker's
 * finalizer, so this runs after it, after every library's destructors (core.c's last look at exit, registered
 * at the first launch, runs before them). Whichever of the two runs second writes the record; it needs only
 * libc and culprit's own memory, which stays mapped. */
static void note_status(int status, void *arg) {
  (void)arg;
  g_status = status & 0xff;
  if (++g_exit_steps == 2) write_exit_record();
}

void rank_init(const struct cp_config *cfg) {
  char host[256] = "";
  g_cfg = cfg;
  g_start = time(NULL);
  if (!launcher_parse(&g_li, env_get)) return;
  gethostname(host, sizeof host - 1);
  size_t n = 0;
  for (const char *p = host; *p && n + 1 < sizeof g_host; p++) {
    char c = *p;
    int ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '-';
    g_host[n++] = ok ? c : '_';
  }
  g_host[n] = '\0';
  if (!g_host[0]) snprintf(g_host, sizeof g_host, "unknown-host");
  on_exit(note_status, NULL);
}

long long rank_of_process(void) { return g_li.launcher ? g_li.rank : -1; }

const char *rank_file_host(void) { return g_li.launcher ? g_host : NULL; }

void rank_emit(struct jw *w) {
  if (g_li.launcher) {
    if (g_li.rank >= 0) {
      jw_key(w, "rank");
      jw_int(w, g_li.rank);
    }
    if (g_li.local_rank >= 0) {
      jw_key(w, "local_rank");
      jw_int(w, g_li.local_rank);
    }
    if (g_li.world_size > 0) {
      jw_key(w, "world_size");
      jw_int(w, g_li.world_size);
    }
    jw_key(w, "launcher");
    jw_str(w, g_li.launcher);
    if (g_li.job[0]) {
      jw_key(w, "job");
      jw_str(w, g_li.job);
    }
  }
  if (g_li.run_id[0]) {
    jw_key(w, "run_id");
    jw_str(w, g_li.run_id);
  }
}

/* A hang report this process wrote (its watcher or a signal handler did, before the program chose to exit). */
static int wrote_hang_report(void) {
  char path[CFG_DIR_MAX + RANK_HOST_MAX + 48];
  struct stat sb;
  snprintf(path, sizeof path, "%s/culprit-%s-%d-hang.json", g_cfg->dir, g_host, (int)getpid());
  return stat(path, &sb) == 0 && sb.st_mtime >= g_start;
}

void rank_at_exit(int report_state, uint64_t launches) {
  if (!g_li.launcher || !g_cfg) return;
  g_exit_report = report_state;
  g_exit_launches = launches;
  if (++g_exit_steps == 2) write_exit_record();
}

static void write_exit_record(void) {
  uint64_t launches = g_exit_launches;
  if (g_exit_report != 0 || launches == 0 || wrote_hang_report()) return;
  struct jw w;
  char path[CFG_DIR_MAX + 128];
  jw_init(&w);
  jw_obj_begin(&w);
  emit_head(&w, "exit");
  jw_key(&w, "config");
  jw_obj_begin(&w);
  jw_key(&w, "mode");
  jw_str(&w, cfg_mode_name(g_cfg->mode));
  jw_obj_end(&w);
  jw_key(&w, "exit");
  jw_obj_begin(&w);
  if (g_status >= 0) {
    jw_key(&w, "status");
    jw_int(&w, g_status);
  }
  jw_obj_end(&w);
  jw_key(&w, "stats");
  jw_obj_begin(&w);
  jw_key(&w, "launches");
  jw_uint(&w, launches);
  jw_key(&w, "crumbs");
  jw_uint(&w, crumb_written());
  jw_key(&w, "crumb_failures");
  jw_uint(&w, crumb_failures());
  jw_key(&w, "ring_overwritten");
  jw_uint(&w, ring_total_overwritten());
  jw_key(&w, "threads");
  jw_int(&w, ring_count());
  jw_obj_end(&w);
  jw_obj_end(&w);
  /* silent: the record says nothing went wrong; `culprit run` and `culprit report` show it in the job's view */
  if (!w.err) emit_write_file(g_cfg->dir, "-exit", w.buf, w.len, path, sizeof path);
  jw_free(&w);
}
