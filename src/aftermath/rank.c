/* The process's place in a job. The launcher's environment (launcher.c) is read once at library start; reports
 * then carry the rank fields in "process", and ranked processes name their report files after the host as well
 * as the pid (several hosts may share one report directory). The exit record is exitrec.c's. */
#define _GNU_SOURCE
#include "rank.h"

#include "../core/launcher.h"
#include "../base/jsonw.h"
#include "../render/report_keys.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static struct launcher_info g_li;  /* as read at start; launcher NULL: not started by a launcher */
static char g_host[RANK_HOST_MAX]; /* the host name, made safe for a file name */

static const char *env_get(const char *name) { return getenv(name); }

void rank_init(void) {
  char host[256] = "";
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
}

const char *rank_run_id(void) { return g_li.run_id; }

long long rank_of_process(void) { return g_li.launcher ? g_li.rank : -1; }

const char *rank_file_host(void) { return g_li.launcher ? g_host : NULL; }

void rank_emit(struct jw *w) {
  if (g_li.launcher) {
    if (g_li.rank >= 0) {
      jw_key(w, RK_RANK);
      jw_int(w, g_li.rank);
    }
    if (g_li.local_rank >= 0) {
      jw_key(w, RK_LOCAL_RANK);
      jw_int(w, g_li.local_rank);
    }
    if (g_li.world_size > 0) {
      jw_key(w, RK_WORLD_SIZE);
      jw_int(w, g_li.world_size);
    }
    jw_key(w, RK_LAUNCHER);
    jw_str(w, g_li.launcher);
    if (g_li.job[0]) {
      jw_key(w, RK_JOB);
      jw_str(w, g_li.job);
    }
  }
  if (g_li.run_id[0]) {
    jw_key(w, RK_RUN_ID);
    jw_str(w, g_li.run_id);
  }
}
