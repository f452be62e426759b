/* torchrun's error file (see errfile.h). The content is composed when the report is written (the process may
 * allocate then); at exit it is only written. torch's format: {"message": {"message": TEXT, "extraInfo":
 * {"py_callstack": TEXT, "timestamp": "SECONDS"}}}, whose py_callstack torchrun's summary shows. */
#define _GNU_SOURCE
#include "errfile.h"

#include "errtext.h"
#include "../base/jsonw.h"
#include "../render/render.h"
#include "../render/format_keys.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static char g_file[PATH_MAX];     /* TORCHELASTIC_ERROR_FILE as the process started with it; "" none */
static pid_t g_pid;               /* the process torchrun started: a forked child is not the worker */
static _Atomic(char *) g_content; /* the file's content once a report was written; NULL before */

void errfile_start(void) {
  const char *f = getenv("TORCHELASTIC_ERROR_FILE");
  g_pid = getpid();
  if (f && *f && strlen(f) < sizeof g_file) snprintf(g_file, sizeof g_file, "%s", f);
}

void errfile_verdict(int code, const char *name, const char *text, const char *json, size_t len, const char *path) {
  char head[512], stamp[32];
  struct jw w;
  if (!g_file[0] || atomic_load(&g_content) || getpid() != g_pid) return;
  const char *line = errtext_line();
  snprintf(head, sizeof head, "%s (%d): %s", name ? name : "sticky CUDA error", code, text ? text : "");
  struct render_opts ro = {.brief = 0, .path = path && *path ? path : NULL};
  char *verdict = render_text_opts(json, len, &ro, NULL, 0);
  size_t vl = verdict ? strlen(verdict) : 0;
  size_t ml = strlen(head) + (line ? strlen(line) + 1 : 0) + 1;
  char *msg = malloc(ml), *stack = malloc(ml + vl + 1);
  if (msg && stack) {
    snprintf(msg, ml, "%s%s%s", head, line ? "\n" : "", line ? line : "");
    snprintf(stack, ml + vl + 1, "%s\n%s", msg, verdict ? verdict : "");
    snprintf(stamp, sizeof stamp, "%lld", (long long)time(NULL));
    jw_init(&w);
    jw_obj_begin(&w);
    jw_key(&w, EF_MESSAGE);
    jw_obj_begin(&w);
    jw_key(&w, EF_MESSAGE);
    jw_str(&w, msg);
    jw_key(&w, EF_EXTRA_INFO);
    jw_obj_begin(&w);
    jw_key(&w, EF_PY_CALLSTACK);
    jw_str(&w, stack);
    jw_key(&w, EF_TIMESTAMP);
    jw_str(&w, stamp);
    jw_obj_end(&w);
    jw_obj_end(&w);
    jw_obj_end(&w);
    if (!w.err) {
      /* release: the whole content before a reader's acquire (at exit, or in a signal handler) sees it; kept
       * for the rest of the process, which ends soon after */
      atomic_store_explicit(&g_content, w.buf, memory_order_release);
      w.buf = NULL;
    }
    jw_free(&w);
  }
  free(msg);
  free(stack);
  free(verdict);
}

void errfile_at_exit(void) {
  char *content = atomic_load_explicit(&g_content, memory_order_acquire);
  if (!content || getpid() != g_pid) return;
  int fd = open(g_file, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (fd < 0) return; /* it exists (the worker's own @record wrote it), or it cannot be made: leave it */
  size_t len = strlen(content), off = 0;
  while (off < len) {
    ssize_t n = write(fd, content + off, len - off);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    off += (size_t)n;
  }
  close(fd);
}
