/* The fault report's trigger: once per process, with the surfacing thread's own stacks (see fault.h). */
#define _GNU_SOURCE
#include "fault.h"

#include "printflush.h"
#include "verdict.h"
#include "../core/clock.h"
#include "../base/config.h"
#include "../core/core.h"
#include "../stack/pystack.h"
#include "../stack/stack.h"

#include <pthread.h>
#include <stdatomic.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static const struct cp_config *g_cfg; /* the process's configuration (core's, lives forever) */
static _Atomic int g_state;           /* 0 none, 1 being written, 2 written */
static char g_path[CFG_DIR_MAX + 64]; /* the report written, "" if it could not be */
static pthread_once_t g_fork_once = PTHREAD_ONCE_INIT;

/* A forked child's faults are its own: its report is another file. */
static void after_fork_child(void) {
  atomic_store(&g_state, 0);
  g_path[0] = '\0';
}

static void register_fork(void) { pthread_atfork(NULL, NULL, after_fork_child); }

void fault_start(const struct cp_config *cfg) {
  g_cfg = cfg;
  pthread_once(&g_fork_once, register_fork);
}

void fault_report(int code, const char *api, uint64_t exact_seq) {
  int expect = 0;
  if (!g_cfg) return;
  if (!atomic_compare_exchange_strong(&g_state, &expect, 1)) {
    for (int i = 0; i < 2000 && atomic_load(&g_state) == 1; i++) {
      struct timespec ts = {0, 5 * 1000 * 1000};
      nanosleep(&ts, NULL);
    }
    return;
  }
  void *frames[64];
  struct pystack_ref py[PYSTACK_MAX];
  struct printflush pf;
  printflush_after_fault(code, api, &pf); /* first: the command reads the assert's text while the report is made */
  int npy = pystack_capture(py, PYSTACK_MAX);
  struct cp_view v;
  cp_view(&v);
  struct verdict_input in = {
      .code = code,
      .api = api,
      .exact_seq = exact_seq,
      .after_seq = v.after_seq,
      .tid = (int)syscall(SYS_gettid),
      .time_ns = cp_mono_ns(),
      .time_unix_ns = cp_wall_ns(),
      .frames = frames,
      .nframes = stack_capture(frames, g_cfg->stack_depth > 0 ? g_cfg->stack_depth : 24),
      .py = py,
      .npy = npy,
      .cfg = g_cfg,
      .mode = v.mode,
      .launches = v.seq - v.after_seq,
      .launch_blocking = v.launch_blocking,
      .untracked_pending = cp_untracked_pending(),
      .printf_flush = &pf,
  };
  verdict_emit(&in, g_path, sizeof g_path);
  atomic_store(&g_state, 2);
}

int fault_state(void) { return atomic_load_explicit(&g_state, memory_order_acquire); }

const char *fault_report_path(void) { return fault_state() == 2 && g_path[0] ? g_path : NULL; }
