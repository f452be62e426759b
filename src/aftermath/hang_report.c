/* The hang report (hang_report.h): where every thread is, the streams with unfinished work, the launch in flight
 * or the window of them (hang_pick.c), the allocations and the counters, as JSON and as text. */
#define _GNU_SOURCE
#include "hang_report.h"

#include "fault.h"
#include "hang_pick.h"

#include "../core/clock.h"
#include "../base/config.h"
#include "../core/core.h"
#include "../core/crumb.h"
#include "../core/errors.h"
#include "emit.h"
#include "emit_allocs.h"
#include "emit_streams.h"
#include "../core/ring.h"
#include "signals.h"
#include "../base/jsonw.h"
#include "../render/render.h"
#include "../stack/pystack.h"
#include "../stack/stack.h"
#include "../stack/threads.h"
#include "../render/report_keys.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CAPTURE_WAIT_MS 500 /* the threads have this long in all to answer the capture signal */
#define MAX_QUEUED 8        /* launches listed behind the one in flight */
#define MAX_PY_THREADS 64   /* Python threads looked at */

static void emit_seconds(struct jw *w, uint32_t ms) {
  if (ms % 1000 == 0)
    jw_uint(w, ms / 1000);
  else
    jw_double(w, ms / 1000.0);
}

static void emit_streams(struct jw *w, const struct hang_pick *p, uint64_t after) {
  int listed = 0;
  jw_key(w, RK_STREAMS);
  jw_arr_begin(w);
  for (uint32_t i = 0; i < crumb_capacity() && listed < MAX_STREAMS; i++) {
    struct cp_stream *st = crumb_at(i);
    if (!hang_in_use(st, after)) continue;
    const struct hang_stream *hs = NULL;
    for (int k = 0; k < p->nstreams; k++)
      if (p->streams[k].idx == i) hs = &p->streams[k];
    /* a stream with unfinished work as it was looked at, like its in-flight launch */
    uint64_t last = hs ? hs->newest : atomic_load_explicit(&st->last_launched, memory_order_relaxed), slot = 0;
    listed++;
    jw_obj_begin(w);
    emit_stream_fields(w, st, last);
    if (hang_read_slot(st, &slot) == 0) {
      jw_key(w, RK_LAST_COMPLETED);
      jw_uint(w, slot);
      jw_key(w, RK_PENDING);
      jw_bool(w, hs != NULL);
    }
    jw_key(w, RK_DESTROYED);
    jw_bool(w, atomic_load_explicit(&st->dead, memory_order_relaxed));
    if (hs && hs->nsusp == 1) {
      jw_key(w, RK_IN_FLIGHT);
      jw_uint(w, emit_rseq(hs->first));
    } else if (hs && hs->nsusp > 1) {
      jw_key(w, RK_IN_FLIGHT_WINDOW);
      jw_obj_begin(w);
      jw_key(w, RK_FIRST);
      jw_uint(w, emit_rseq(hs->first));
      jw_key(w, RK_LAST);
      jw_uint(w, emit_rseq(hs->last));
      jw_obj_end(w);
    }
    if (hs) {
      jw_key(w, RK_QUEUED);
      jw_int(w, hs->queued);
    }
    jw_obj_end(w);
  }
  jw_arr_end(w);
}

static struct threads_info g_threads[THREADS_MAX]; /* the watcher's, one report at a time */
static struct pystack_thread g_py[MAX_PY_THREADS]; /* the watcher's */

struct taken_threads {
  int n;    /* threads in g_threads */
  int more; /* threads left out */
  int npy;  /* Python threads in g_py */
};

/* Where every thread is, first of all: the rest of the report takes a while, and the threads go on meanwhile. */
static void take_threads(struct taken_threads *tt) {
  tt->n = threads_snapshot(g_threads, THREADS_MAX, CAPTURE_WAIT_MS, &tt->more);
  tt->npy = pystack_other_threads(g_py, MAX_PY_THREADS);
}

static void emit_threads(struct jw *w, const struct taken_threads *tt) {
  int more = tt->more, n = tt->n, npy = tt->npy;
  char used[MAX_PY_THREADS] = {0};
  jw_key(w, RK_THREADS);
  jw_arr_begin(w);
  for (int i = 0; i < n; i++) {
    const struct threads_info *t = &g_threads[i];
    char state[2] = {t->state, 0};
    jw_obj_begin(w);
    jw_key(w, RK_TID);
    jw_int(w, t->tid);
    jw_key(w, RK_NAME);
    jw_str(w, t->name);
    jw_key(w, RK_STATE);
    jw_str(w, state);
    if (t->in_handler) {
      jw_key(w, RK_SIGNAL_HANDLER);
      jw_bool(w, 1);
    }
    if (t->nframes) {
      jw_key(w, RK_STACK);
      emit_frames(w, t->frames, t->nframes);
    }
    if (t->note) {
      jw_key(w, RK_STACK_NOTE);
      jw_str(w, t->note);
    }
    for (int k = 0; t->pthread_id && k < npy; k++) {
      if (used[k] || g_py[k].id != t->pthread_id) continue;
      used[k] = 1;
      jw_key(w, RK_PYTHON);
      emit_python(w, g_py[k].refs, g_py[k].n);
      break;
    }
    jw_obj_end(w);
  }
  jw_arr_end(w);
  if (more) {
    jw_key(w, RK_THREADS_LEFT_OUT);
    jw_int(w, more);
  }
  /* Python threads whose native thread was not matched (its stack could not be taken) */
  int left = 0;
  for (int k = 0; k < npy; k++) left += !used[k];
  if (left) {
    jw_key(w, RK_PYTHON_THREADS);
    jw_arr_begin(w);
    for (int k = npy - 1; k >= 0; k--) { /* the interpreter lists the newest first; the main thread last */
      if (used[k]) continue;
      emit_python_thread(w, &g_py[k]);
    }
    jw_arr_end(w);
  }
}

static int hang_write_report(const struct cp_config *cfg, int sig, int sender, uint64_t stalled_ms, uint64_t now,
                             char *path, size_t pathlen);

int hang_write(const struct cp_config *cfg, int sig, int sender, uint64_t stalled_ms, uint64_t now, char *path,
               size_t pathlen) {
  /* The request may come from a signal handler whose thread was interrupted inside the dynamic loader (dlsym,
   * dladdr, dlopen), holding its lock until the handler returns, which waits for this report: nothing below may
   * take that lock. Frames are described from /proc/self/maps (module and offset: the command names their
   * functions when it symbolizes the report), the demangler was found at start. */
  struct stack_maps *maps = sig ? stack_maps_read() : NULL; /* a timeout's report interrupted no one */
  emit_use_maps(maps);
  int rc = hang_write_report(cfg, sig, sender, stalled_ms, now, path, pathlen);
  emit_use_maps(NULL);
  stack_maps_free(maps);
  return rc;
}

static int hang_write_report(const struct cp_config *cfg, int sig, int sender, uint64_t stalled_ms, uint64_t now,
                             char *path, size_t pathlen) {
  struct emit_snap s = {0};
  static struct hang_pick p; /* the watcher's */
  struct jw w;
  struct cp_view v;
  char name[32];

  /* a fault report is the one that counts; none is written beside it (hang_request waited for it) */
  if (fault_state() != 0) return -1;
  struct taken_threads tt;
  take_threads(&tt);
  cp_view(&v);
  hang_look(v.after_seq, &p);
  s.recs = ring_snapshot(v.after_seq, &s.n, &s.rs);
  hang_decide(cfg, &s, v.mode, &p);

  jw_init(&w);
  jw_obj_begin(&w);
  emit_head(&w, "hang");
  jw_key(&w, RK_PYTHON_STATUS);
  jw_str(&w, pystack_status());
  emit_config(&w, cfg, v.mode);

  jw_key(&w, RK_HANG);
  jw_obj_begin(&w);
  jw_key(&w, RK_TRIGGER);
  jw_str(&w, sig ? signals_name(sig, name, sizeof name) : "timeout");
  if (sig) {
    jw_key(&w, RK_SIGNAL);
    jw_int(&w, sig);
    if (sender > 0) {
      jw_key(&w, RK_SENDER_PID);
      jw_int(&w, sender);
    }
  } else {
    jw_key(&w, RK_TIMEOUT_S);
    emit_seconds(&w, cfg->hang_timeout_ms);
  }
  jw_key(&w, RK_STALLED_MS);
  jw_uint(&w, stalled_ms);
  jw_key(&w, RK_TIME_NS);
  jw_uint(&w, now);
  jw_key(&w, RK_TIME_UNIX_NS);
  jw_uint(&w, cp_wall_ns());
  jw_obj_end(&w);

  emit_verdict(&w, p.certainty, p.reason,
               !p.lo       ? 0
               : p.culprit ? emit_rseq(p.culprit)
                           : p.lo,
               p.culprit ? emit_rseq(p.culprit) : p.hi);
  jw_key(&w, RK_CULPRIT);
  if (p.culprit)
    emit_launch(&w, p.culprit);
  else
    jw_null(&w);
  jw_key(&w, RK_CANDIDATES);
  jw_arr_begin(&w);
  for (int i = 0; !p.culprit && i < p.ncand; i++) emit_launch(&w, p.cand[i]);
  jw_arr_end(&w);

  /* behind the launch in flight (or the window's last) on its stream */
  const struct cp_rec *queued[MAX_QUEUED];
  int nq = 0;
  const struct hang_stream *first = p.nstreams ? &p.streams[0] : NULL;
  if (first && first->last) {
    nq = hang_queued_after(&s, p.culprit ? p.culprit : first->last, first->newest, queued, MAX_QUEUED);
    if (nq > MAX_QUEUED) nq = MAX_QUEUED;
  }
  jw_key(&w, RK_QUEUED);
  jw_arr_begin(&w);
  for (int i = 0; i < nq; i++) emit_launch(&w, queued[i]);
  jw_arr_end(&w);

  emit_streams(&w, &p, v.after_seq);
  emit_threads(&w, &tt);
  emit_allocs(&w); /* a GPU core dump turns the abort it causes into a fault with an address */

  emit_stats(&w, v.seq - v.after_seq, s.n);
  jw_obj_end(&w);

  int rc = -1;
  /* a fault report that began meanwhile wins: this one is dropped rather than written beside it */
  if (!w.err && fault_state() == 0) rc = emit_write_file(cfg->dir, "-hang", w.buf, w.len, path, (unsigned)pathlen);
  if (!w.err && (rc == 0 || fault_state() == 0)) {
    int err = CP_IS_ESYS(rc) ? CP_SYS_ERRNO(rc) : ENOMEM;
    struct render_opts ro = {.brief = cfg->quiet, .path = rc ? NULL : path};
    char *text = render_text_opts(w.buf, w.len, &ro, NULL, 0);
    if (text) {
      emit_stderr(text);
      free(text);
    }
    if (rc) {
      char line[CFG_DIR_MAX + 160];
      snprintf(line, sizeof line, "culprit: could not write the hang report into %s: %s\n", cfg->dir, strerror(err));
      emit_stderr(line);
    }
  }
  jw_free(&w);
  free(s.recs);
  return rc;
}
