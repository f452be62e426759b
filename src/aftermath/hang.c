/* The hang watcher and the hang report (hang.h). The watcher is a detached thread that blocks every signal and
 * sleeps on a pipe: culprit's signal handlers write one byte into it (the only thing they do besides waiting,
 * bounded, for the report), and with CULPRIT_HANG_TIMEOUT it also wakes a few times a second to look for
 * progress. Requests and reports are counted:
 *
 *     handler: ticket = ++requested (acq_rel), write(pipe), wait until served >= ticket (acquire), bounded
 *     watcher: wake, report, served = requested (release)   (requests made meanwhile share that report)
 *
 * so a report being written is never cut short by the signal that asked for it, and two signals at once get
 * one report. Progress is any move of a stream's breadcrumb, synchronized mark or last launch, or a new launch;
 * a stream is pending when its last launch is newer than the last one known complete. Before a timeout report
 * the pending streams are asked (cuStreamQuery, with their context pushed on the watcher) whether they really
 * are busy: record mode's sparse breadcrumbs make finished work look pending. */
#define _GNU_SOURCE
#include "hang.h"

#include "fault.h"

#include "../core/clock.h"
#include "../base/config.h"
#include "../core/core.h"
#include "../core/crumb.h"
#include "../core/driver.h"
#include "emit.h"
#include "emit_allocs.h"
#include "../core/ring.h"
#include "signals.h"
#include "suspects.h"
#include "../base/demangle.h"
#include "../base/jsonw.h"
#include "../render/render.h"
#include "../stack/pystack.h"
#include "../stack/stack.h"
#include "../stack/threads.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#define HANDLER_WAIT_MS 5000 /* a signal handler waits this long at most for its report */
#define FAULT_WAIT_MS 10000  /* ... and this long for a fault report being written (core's own bound) */
#define CAPTURE_WAIT_MS 500  /* the threads have this long in all to answer the capture signal */
#define TICK_MIN_MS 50       /* the watcher looks for progress at most this often, */
#define TICK_MAX_MS 1000     /* and at least this often */
#define LISTED_MAX 1024      /* streams the watcher follows between rescans of the stream table */
#define MAX_CANDIDATES 64    /* launches a report lists as possibly in flight */
#define MAX_STREAMS 64       /* streams a report lists */
#define MAX_QUEUED 8         /* launches listed behind the one in flight */
#define MAX_PY_THREADS 64    /* Python threads looked at */
#define CU_NOT_READY 600     /* CUDA_ERROR_NOT_READY: the stream is still busy */

static _Atomic int hang_started;      /* hang_start ran in this process (a forked child starts at 0 again) */
static const struct cp_config *g_cfg; /* the process's configuration (core's, lives forever) */
static _Atomic int g_wfd = -1;        /* write end of the watcher's pipe; -1 while there is no watcher */
static int g_rfd = -1;                /* read end, the watcher's */
static _Atomic int g_watcher_tid;     /* the watcher's thread id; 0 before it runs */
static _Atomic uint64_t g_requested;  /* reports asked for by signal handlers */
static _Atomic uint64_t g_served;     /* requests up to this one were answered (release by the watcher) */
static _Atomic int g_req_sig;         /* the newest request's signal */
static _Atomic int g_req_pid;         /* ... and its sender, 0 if unknown */
static _Atomic int g_stop_state;      /* a stop signal's report: 0 none yet, 1 under way, 2 done */
static _Atomic int g_written;         /* hang reports written */
static pthread_once_t g_fork_once = PTHREAD_ONCE_INIT;

int hang_written(void) { return atomic_load_explicit(&g_written, memory_order_relaxed); }

static void nap_ms(long ms) {
  struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
  nanosleep(&ts, NULL);
}

/* ---- requests from signal handlers (async-signal-safe) ---- */

void hang_request(int sig, int sender_pid, int stop, const void *uc) {
  int fd = atomic_load_explicit(&g_wfd, memory_order_acquire);
  if (fd < 0) return;
  if ((int)syscall(SYS_gettid) == atomic_load_explicit(&g_watcher_tid, memory_order_relaxed)) return;
  uint64_t until = cp_mono_ns() + FAULT_WAIT_MS * 1000000ull;
  if (fault_state() == 1) {
    /* the fault report is the one that counts: it must not be cut short, and no hang report follows it */
    while (fault_state() == 1 && cp_mono_ns() < until) nap_ms(5);
    return;
  }
  if (fault_state() == 2) return;
  until = cp_mono_ns() + HANDLER_WAIT_MS * 1000000ull;
  if (stop) {
    int expect = 0;
    if (!atomic_compare_exchange_strong_explicit(&g_stop_state, &expect, 1, memory_order_acq_rel,
                                                 memory_order_acquire)) {
      /* a stop signal already asked: its report is the process's last; wait for it, do not write another */
      while (atomic_load_explicit(&g_stop_state, memory_order_acquire) == 1 && cp_mono_ns() < until) nap_ms(2);
      return;
    }
  }
  threads_handler_enter(uc);
  atomic_store_explicit(&g_req_sig, sig, memory_order_relaxed);
  atomic_store_explicit(&g_req_pid, sender_pid, memory_order_relaxed);
  /* acq_rel: the watcher, acquiring requested, sees the signal and sender stored above */
  uint64_t ticket = atomic_fetch_add_explicit(&g_requested, 1, memory_order_acq_rel) + 1;
  char c = 1;
  ssize_t w = write(fd, &c, 1); /* EAGAIN: the pipe is full of wake-ups already */
  (void)w;
  while (atomic_load_explicit(&g_served, memory_order_acquire) < ticket && cp_mono_ns() < until) nap_ms(2);
  threads_handler_leave();
  if (stop) atomic_store_explicit(&g_stop_state, 2, memory_order_release);
}

/* ---- the streams the watcher follows ---- */

struct followed {
  uint32_t idx[LISTED_MAX]; /* stream table indexes in use */
  int n;                    /* entries in idx */
  int valid;                /* idx is up to date (no launch since the scan) */
  int overflow;             /* more streams than idx holds: every look scans the whole table */
  uint64_t seq;             /* the launch number at the last look */
  uint64_t mark;            /* the sum of the followed streams' marks at the last look */
};

static struct followed g_follow; /* the watcher's */

static int in_use(const struct cp_stream *st, uint64_t after) {
  return atomic_load_explicit(&st->key_stream, memory_order_acquire) &&
         !atomic_load_explicit(&st->gone, memory_order_relaxed) &&
         atomic_load_explicit(&st->last_launched, memory_order_relaxed) > after;
}

static void rescan(struct followed *f, uint64_t after) {
  f->n = 0;
  f->overflow = 0;
  for (uint32_t i = 0; i < crumb_capacity(); i++) {
    if (!in_use(crumb_at(i), after)) continue;
    if (f->n == LISTED_MAX) {
      f->overflow = 1;
      break;
    }
    f->idx[f->n++] = i;
  }
  f->valid = 1;
}

/* A stream's breadcrumb, read without trusting its memory to still be there: the program may destroy the stream's
 * context (and the slot with it) at any moment, so the read goes through the kernel, which answers EFAULT for
 * memory that is gone rather than faulting. */
static int read_slot(const struct cp_stream *st, uint64_t *v) {
  volatile uint64_t *slot = st->slot;
  if (!slot || atomic_load_explicit(&st->gone, memory_order_relaxed)) return -1;
  struct iovec local = {v, sizeof *v}, remote = {(void *)slot, sizeof *v};
  return process_vm_readv(getpid(), &local, 1, &remote, 1, 0) == (ssize_t)sizeof *v ? 0 : -1;
}

/* The highest launch known complete on st (crumb_done), with the breadcrumb read guardedly: crumb_done is given a
 * copy of the entry whose slot points at that value. */
static uint64_t done_of(const struct cp_stream *st) {
  struct cp_stream copy;
  volatile uint64_t value = 0;
  uint64_t v;
  memcpy(&copy, st, sizeof copy);
  copy.slot = read_slot(st, &v) == 0 ? (value = v, &value) : NULL;
  return crumb_done(&copy);
}

/* Whether work made progress since the last look: a new launch, or a followed stream's breadcrumb, synchronized
 * mark or last launch moving (all only grow; a context going away drops its streams, which counts too). *pending
 * gets the streams with unfinished work. While the program launches, that alone is progress and the stream table
 * is not read; it is listed again at the first look after the launches stopped. */
static int progressed(struct followed *f, uint64_t after, int *pending) {
  struct cp_view v;
  cp_view(&v);
  *pending = 0;
  if (v.seq != f->seq) {
    f->seq = v.seq;
    f->valid = 0;
    return 1;
  }
  if (!f->valid || f->overflow) rescan(f, after);
  uint64_t mark = crumb_ctx_synced_max();
  for (int i = 0; i < f->n; i++) {
    const struct cp_stream *st = crumb_at(f->idx[i]);
    if (atomic_load_explicit(&st->gone, memory_order_relaxed)) {
      mark += 7;
      continue;
    }
    uint64_t last = atomic_load_explicit(&st->last_launched, memory_order_relaxed);
    uint64_t slot = 0, done = done_of(st);
    read_slot(st, &slot);
    mark += last + slot + atomic_load_explicit(&st->synced, memory_order_relaxed);
    if (last > after && done < last) (*pending)++;
  }
  int moved = mark != f->mark;
  f->mark = mark;
  return moved;
}

/* Asks the driver whether each pending stream is still busy. Returns 1 when one is (or cannot be asked and its
 * breadcrumbs say so), 0 when none is (a stream found done is marked complete, as a query that said so would),
 * -1 when the driver cannot be asked now (a capture is under way, or a sticky error: the program will meet it). */
static int confirm_pending(struct followed *f, uint64_t after) {
  struct cp_view v;
  cp_view(&v);
  if (v.captures || !cp_drv.stream_query || !cp_drv.ctx_push_current || !cp_drv.ctx_pop_current) return -1;
  int busy = 0;
  for (int i = 0; i < f->n; i++) {
    struct cp_stream *st = crumb_at(f->idx[i]);
    if (!in_use(st, after)) continue;
    uint64_t last = atomic_load_explicit(&st->last_launched, memory_order_relaxed);
    if (done_of(st) >= last) continue;
    /* a per-thread default stream is the launching thread's own: no other thread can name it */
    if (st->kind == CP_STREAM_PER_THREAD || atomic_load_explicit(&st->dead, memory_order_relaxed) || !st->ctx) {
      busy = 1;
      continue;
    }
    void *popped = NULL;
    if (cp_drv.ctx_push_current(st->ctx)) continue;
    int rc = cp_drv.stream_query(st->kind == CP_STREAM_LEGACY ? CP_CU_STREAM_LEGACY : st->handle);
    cp_drv.ctx_pop_current(&popped);
    if (rc == 0)
      crumb_note_synced(st, last); /* everything queued before the query completed */
    else if (rc == CU_NOT_READY)
      busy = 1;
    else if (cp_is_sticky(rc))
      return -1;
  }
  return busy;
}

/* ---- the report ---- */

struct hang_stream {
  uint32_t idx;               /* stream table index */
  uint64_t done;              /* the highest launch known complete on it */
  uint64_t newest;            /* its last launch when it was looked at (before the rings were copied) */
  const struct cp_rec *first; /* its first suspect: the launch in flight when it is the only one */
  const struct cp_rec *last;  /* its last suspect: what follows it had not started */
  int nsusp;                  /* suspects */
  int lost;                   /* the first unfinished launch is no longer in the ring */
  int queued;                 /* launches on it after the last suspect */
};

struct hang_pick {
  struct hang_stream streams[MAX_STREAMS];   /* streams with unfinished work */
  int nstreams;                              /* entries in streams */
  int pending;                               /* streams with unfinished work, listed or not */
  const struct cp_rec *cand[MAX_CANDIDATES]; /* every suspect, stream by stream */
  int ncand;                                 /* entries in cand */
  int truncated;                             /* more suspects than cand holds */
  uint64_t lo, hi;                           /* launch numbers spanned by the suspects */
  const struct cp_rec *culprit;              /* the launch in flight when exact */
  const char *certainty;                     /* exact | candidates | unknown | idle */
  char reason[512];                          /* one sentence for the user */
};

struct add_ctx {
  struct hang_pick *p;    /* where suspects go */
  struct hang_stream *hs; /* the stream they are of */
};

static void add_suspect(void *arg, const struct cp_rec *r) {
  struct add_ctx *a = arg;
  uint64_t q = emit_rseq(r);
  /* launched after the stream was looked at: it cannot be what was running then (the process is alive, and its
   * threads may still be launching while the report is made) */
  if (q > a->hs->newest) return;
  if (!a->hs->first) a->hs->first = r;
  a->hs->last = r;
  a->hs->nsusp++;
  if (!a->p->lo || q < a->p->lo) a->p->lo = q;
  if (q > a->p->hi) a->p->hi = q;
  if (a->p->ncand < MAX_CANDIDATES)
    a->p->cand[a->p->ncand++] = r;
  else
    a->p->truncated = 1;
}

/* The launches after r on its stream up to upto, oldest first: up to max into out (may be NULL); returns how many
 * there are. */
static int queued_after(const struct emit_snap *s, const struct cp_rec *r, uint64_t upto, const struct cp_rec **out,
                        int max) {
  int n = 0;
  uint64_t after = emit_rseq(r);
  for (size_t i = 0; i < s->n; i++) {
    const struct cp_rec *q = emit_rec_at(s, i);
    if (q->stream_idx != r->stream_idx || emit_rseq(q) <= after || emit_rseq(q) > upto || !suspects_usable(q)) continue;
    if (out && n < max) out[n] = q;
    n++;
  }
  return n;
}

/* "st", "nd", "rd" or "th" after n. */
static const char *ordinal(unsigned n) {
  if (n % 100 >= 11 && n % 100 <= 13) return "th";
  return n % 10 == 1 ? "st" : n % 10 == 2 ? "nd" : n % 10 == 3 ? "rd" : "th";
}

/* The streams with unfinished work, as they are now: looked at before the rings are copied, so that the copy
 * holds every launch up to each one's newest (the process goes on launching meanwhile). */
static void look_at_streams(uint64_t after, struct hang_pick *p) {
  memset(p, 0, sizeof *p);
  for (uint32_t i = 0; i < crumb_capacity(); i++) {
    struct cp_stream *st = crumb_at(i);
    if (!in_use(st, after)) continue;
    uint64_t last = atomic_load_explicit(&st->last_launched, memory_order_relaxed);
    uint64_t done = done_of(st);
    if (done >= last) continue; /* all its work completed */
    p->pending++;
    if (p->nstreams == MAX_STREAMS) continue;
    struct hang_stream *hs = &p->streams[p->nstreams++];
    hs->idx = i;
    hs->done = done;
    hs->newest = last;
  }
}

static void decide(const struct emit_snap *s, int mode, struct hang_pick *p) {
  int lost = 0;
  char lost_note[200] = "";
  for (int k = 0; k < p->nstreams; k++) {
    struct hang_stream *hs = &p->streams[k];
    struct cp_stream *st = crumb_at(hs->idx);
    uint64_t done = hs->done;
    struct add_ctx a = {p, hs};
    struct suspects_recs sr = {s->recs, s->n, s->rs};
    suspects_of_stream(&sr, hs->idx, st, done, add_suspect, &a, &hs->lost);
    if (hs->last) hs->queued = queued_after(s, hs->last, hs->newest, NULL, 0);
    if (!hs->lost && !hs->nsusp) {
      /* its newest launch was being made as the stream was looked at (the record is published after the stream
       * moved on): work being launched right now is not what the process waits for */
      p->streams[k--] = p->streams[--p->nstreams];
      p->pending--;
      continue;
    }
    if (hs->lost) {
      lost++;
      snprintf(lost_note, sizeof lost_note,
               "the launch after #%llu on stream 0x%lx is no longer in the ring (CULPRIT_RING=%u per thread)",
               (unsigned long long)done, (unsigned long)(uintptr_t)st->handle, g_cfg->ring);
    }
  }
  if (p->pending == 0) {
    p->certainty = "idle";
    snprintf(p->reason, sizeof p->reason,
             "no recorded launch was unfinished: every stream had completed its last launch, so the GPU was not "
             "running culprit's launches; the threads show where the host waits");
    return;
  }
  int k = 0;
  const struct hang_stream *one = &p->streams[0];
  const struct cp_stream *st = crumb_at(one->idx);
  if (lost) {
    p->certainty = "unknown";
    k = snprintf(p->reason, sizeof p->reason, "%s", lost_note);
  } else if (p->pending == 1 && one->nsusp == 1) {
    p->certainty = "exact";
    p->culprit = one->first;
    /* prev, the launch before it on its stream, is complete (done is at least that; it may be a launch number of
     * another stream's, from a synchronize of the whole context) */
    if (one->first->prev)
      k = snprintf(p->reason, sizeof p->reason,
                   "stream 0x%lx completed launch #%llu and not #%llu, the next launch on it, which had "
                   "started: it is the one in flight",
                   (unsigned long)(uintptr_t)st->handle, (unsigned long long)one->first->prev,
                   (unsigned long long)emit_rseq(one->first));
    else
      k = snprintf(p->reason, sizeof p->reason,
                   "launch #%llu, the first launch on stream 0x%lx, had not completed: it is the one in flight",
                   (unsigned long long)emit_rseq(one->first), (unsigned long)(uintptr_t)st->handle);
  } else if (p->pending == 1) {
    char why[160];
    if (mode == CP_MODE_RECORD)
      snprintf(why, sizeof why,
               "record mode's breadcrumbs (on every %u%s launch of a stream) cannot tell which; precise mode "
               "names it",
               g_cfg->crumb_every, ordinal(g_cfg->crumb_every));
    else
      snprintf(why, sizeof why, "their breadcrumbs could not be queued, so culprit cannot tell which");
    p->certainty = p->truncated ? "unknown" : "candidates";
    char since[160];
    if (one->first->prev)
      snprintf(since, sizeof since,
               "completed launch #%llu; the one in flight is the first of the %d launches "
               "after it, #%llu..#%llu,",
               (unsigned long long)one->first->prev, one->nsusp, (unsigned long long)emit_rseq(one->first),
               (unsigned long long)emit_rseq(one->last));
    else
      snprintf(since, sizeof since,
               "had completed none of its launches; the one in flight is the first of "
               "#%llu..#%llu",
               (unsigned long long)emit_rseq(one->first), (unsigned long long)emit_rseq(one->last));
    k = snprintf(p->reason, sizeof p->reason, "stream 0x%lx %s that had not finished, and %s",
                 (unsigned long)(uintptr_t)st->handle, since, why);
  } else {
    p->certainty = p->truncated ? "unknown" : "candidates";
    k = snprintf(p->reason, sizeof p->reason,
                 "%d streams had unfinished work; what may be in flight on each is listed (one may be waiting "
                 "for another, on the GPU or through the host)",
                 p->pending);
  }
  if (p->truncated && k > 0 && k < (int)sizeof p->reason)
    k += snprintf(p->reason + k, sizeof p->reason - (size_t)k, "; only the first %d suspects are listed",
                  MAX_CANDIDATES);
  if (cp_untracked_pending() && k > 0 && k < (int)sizeof p->reason) {
    if (p->culprit) {
      p->cand[0] = p->culprit;
      p->ncand = 1;
      p->culprit = NULL;
      p->certainty = "candidates";
    }
    snprintf(p->reason + k, sizeof p->reason - (size_t)k,
             "; launches culprit did not record (made while recording was paused, or on a stream it could not "
             "track) may be the ones running");
  }
}

static void emit_seconds(struct jw *w, uint32_t ms) {
  if (ms % 1000 == 0)
    jw_uint(w, ms / 1000);
  else
    jw_double(w, ms / 1000.0);
}

static void emit_streams(struct jw *w, const struct hang_pick *p, uint64_t after) {
  int listed = 0;
  jw_key(w, "streams");
  jw_arr_begin(w);
  for (uint32_t i = 0; i < crumb_capacity() && listed < MAX_STREAMS; i++) {
    struct cp_stream *st = crumb_at(i);
    if (!in_use(st, after)) continue;
    const struct hang_stream *hs = NULL;
    for (int k = 0; k < p->nstreams; k++)
      if (p->streams[k].idx == i) hs = &p->streams[k];
    /* a stream with unfinished work as it was looked at, like its in-flight launch */
    uint64_t last = hs ? hs->newest : atomic_load_explicit(&st->last_launched, memory_order_relaxed), slot = 0;
    listed++;
    jw_obj_begin(w);
    jw_key(w, "stream");
    jw_hex(w, (uintptr_t)st->handle);
    jw_key(w, "kind");
    jw_str(w, emit_stream_kind_name(st->kind));
    jw_key(w, "ctx");
    jw_hex(w, (uintptr_t)st->ctx);
    jw_key(w, "device");
    jw_int(w, st->device);
    jw_key(w, "launches");
    jw_uint(w, atomic_load_explicit(&st->launches, memory_order_relaxed));
    jw_key(w, "last_launched");
    jw_uint(w, last);
    jw_key(w, "crumbs");
    jw_bool(w, st->slot != NULL);
    if (read_slot(st, &slot) == 0) {
      jw_key(w, "last_completed");
      jw_uint(w, slot);
      jw_key(w, "pending");
      jw_bool(w, hs != NULL);
    }
    jw_key(w, "destroyed");
    jw_bool(w, atomic_load_explicit(&st->dead, memory_order_relaxed));
    if (hs && hs->nsusp == 1) {
      jw_key(w, "in_flight");
      jw_uint(w, emit_rseq(hs->first));
    } else if (hs && hs->nsusp > 1) {
      jw_key(w, "in_flight_window");
      jw_obj_begin(w);
      jw_key(w, "first");
      jw_uint(w, emit_rseq(hs->first));
      jw_key(w, "last");
      jw_uint(w, emit_rseq(hs->last));
      jw_obj_end(w);
    }
    if (hs) {
      jw_key(w, "queued");
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
  jw_key(w, "threads");
  jw_arr_begin(w);
  for (int i = 0; i < n; i++) {
    const struct threads_info *t = &g_threads[i];
    char state[2] = {t->state, 0};
    jw_obj_begin(w);
    jw_key(w, "tid");
    jw_int(w, t->tid);
    jw_key(w, "name");
    jw_str(w, t->name);
    jw_key(w, "state");
    jw_str(w, state);
    if (t->in_handler) {
      jw_key(w, "signal_handler");
      jw_bool(w, 1);
    }
    if (t->nframes) {
      jw_key(w, "stack");
      emit_frames(w, t->frames, t->nframes);
    }
    if (t->note) {
      jw_key(w, "stack_note");
      jw_str(w, t->note);
    }
    for (int k = 0; t->pthread_id && k < npy; k++) {
      if (used[k] || g_py[k].id != t->pthread_id) continue;
      used[k] = 1;
      jw_key(w, "python");
      emit_python(w, g_py[k].refs, g_py[k].n);
      break;
    }
    jw_obj_end(w);
  }
  jw_arr_end(w);
  if (more) {
    jw_key(w, "threads_left_out");
    jw_int(w, more);
  }
  /* Python threads whose native thread was not matched (its stack could not be taken) */
  int left = 0;
  for (int k = 0; k < npy; k++) left += !used[k];
  if (left) {
    jw_key(w, "python_threads");
    jw_arr_begin(w);
    for (int k = npy - 1; k >= 0; k--) { /* the interpreter lists the newest first; the main thread last */
      if (used[k]) continue;
      jw_obj_begin(w);
      jw_key(w, "id");
      jw_uint(w, g_py[k].id);
      jw_key(w, "python");
      emit_python(w, g_py[k].refs, g_py[k].n);
      jw_obj_end(w);
    }
    jw_arr_end(w);
  }
}

/* Writes the hang report: sig 0 for a timeout. */
static void hang_write_report(int sig, int sender, uint64_t stalled_ms, uint64_t now);

static void hang_write(int sig, int sender, uint64_t stalled_ms, uint64_t now) {
  /* The request may come from a signal handler whose thread was interrupted inside the dynamic loader (dlsym,
   * dladdr, dlopen), holding its lock until the handler returns, which waits for this report: nothing below may
   * take that lock. Frames are described from /proc/self/maps (module and offset: the command names their
   * functions when it symbolizes the report), the demangler was found at start. */
  struct stack_maps *maps = sig ? stack_maps_read() : NULL; /* a timeout's report interrupted no one */
  emit_use_maps(maps);
  hang_write_report(sig, sender, stalled_ms, now);
  emit_use_maps(NULL);
  stack_maps_free(maps);
}

static void hang_write_report(int sig, int sender, uint64_t stalled_ms, uint64_t now) {
  struct emit_snap s = {0};
  static struct hang_pick p; /* the watcher's */
  struct jw w;
  struct cp_view v;
  char path[CFG_DIR_MAX + 160], name[32];

  /* a fault report is the one that counts; none is written beside it (hang_request waited for it) */
  if (fault_state() != 0) return;
  struct taken_threads tt;
  take_threads(&tt);
  cp_view(&v);
  look_at_streams(v.after_seq, &p);
  s.recs = ring_snapshot(v.after_seq, &s.n, &s.rs);
  decide(&s, v.mode, &p);

  jw_init(&w);
  jw_obj_begin(&w);
  emit_head(&w, "hang");
  jw_key(&w, "python_status");
  jw_str(&w, pystack_status());
  emit_config(&w, g_cfg, v.mode);

  jw_key(&w, "hang");
  jw_obj_begin(&w);
  jw_key(&w, "trigger");
  jw_str(&w, sig ? signals_name(sig, name, sizeof name) : "timeout");
  if (sig) {
    jw_key(&w, "signal");
    jw_int(&w, sig);
    if (sender > 0) {
      jw_key(&w, "sender_pid");
      jw_int(&w, sender);
    }
  } else {
    jw_key(&w, "timeout_s");
    emit_seconds(&w, g_cfg->hang_timeout_ms);
  }
  jw_key(&w, "stalled_ms");
  jw_uint(&w, stalled_ms);
  jw_key(&w, "time_ns");
  jw_uint(&w, now);
  jw_key(&w, "time_unix_ns");
  jw_uint(&w, cp_wall_ns());
  jw_obj_end(&w);

  emit_verdict(&w, p.certainty, p.reason,
               !p.lo       ? 0
               : p.culprit ? emit_rseq(p.culprit)
                           : p.lo,
               p.culprit ? emit_rseq(p.culprit) : p.hi);
  jw_key(&w, "culprit");
  if (p.culprit)
    emit_launch(&w, p.culprit);
  else
    jw_null(&w);
  jw_key(&w, "candidates");
  jw_arr_begin(&w);
  for (int i = 0; !p.culprit && i < p.ncand; i++) emit_launch(&w, p.cand[i]);
  jw_arr_end(&w);

  /* behind the launch in flight (or the window's last) on its stream */
  const struct cp_rec *queued[MAX_QUEUED];
  int nq = 0;
  const struct hang_stream *first = p.nstreams ? &p.streams[0] : NULL;
  if (first && first->last) {
    nq = queued_after(&s, p.culprit ? p.culprit : first->last, first->newest, queued, MAX_QUEUED);
    if (nq > MAX_QUEUED) nq = MAX_QUEUED;
  }
  jw_key(&w, "queued");
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
  if (!w.err && fault_state() == 0) rc = emit_write_file(g_cfg->dir, "-hang", w.buf, w.len, path, sizeof path);
  if (rc == 0) atomic_fetch_add_explicit(&g_written, 1, memory_order_relaxed);
  if (!w.err && (rc == 0 || fault_state() == 0)) {
    int err = rc > 0 ? rc : ENOMEM;
    struct render_opts ro = {.brief = g_cfg->quiet, .path = rc ? NULL : path};
    char *text = render_text_opts(w.buf, w.len, &ro, NULL, 0);
    if (text) {
      emit_stderr(text);
      free(text);
    }
    if (rc) {
      char line[CFG_DIR_MAX + 160];
      snprintf(line, sizeof line, "culprit: could not write the hang report into %s: %s\n", g_cfg->dir, strerror(err));
      emit_stderr(line);
    }
  }
  jw_free(&w);
  free(s.recs);
}

/* ---- the watcher ---- */

static int tick_ms(void) {
  uint32_t t = g_cfg->hang_timeout_ms / 8;
  if (!g_cfg->hang_timeout_ms || t > TICK_MAX_MS) return TICK_MAX_MS;
  return t < TICK_MIN_MS ? TICK_MIN_MS : (int)t;
}

static void *watch(void *arg) {
  (void)arg;
  int rfd = g_rfd;
  uint64_t timeout_ns = (uint64_t)g_cfg->hang_timeout_ms * 1000000ull;
  struct cp_view v;
  int pending = 0, stall_reported = 0;
  atomic_store_explicit(&g_watcher_tid, (int)syscall(SYS_gettid), memory_order_relaxed);
  pthread_setname_np(pthread_self(), "culprit-watch");
  cp_view(&v);
  progressed(&g_follow, v.after_seq, &pending);
  uint64_t last_progress = cp_mono_ns();
  for (;;) {
    struct pollfd pf = {rfd, POLLIN, 0};
    char drain[64];
    if (poll(&pf, 1, tick_ms()) > 0)
      while (read(rfd, drain, sizeof drain) > 0) {
      }
    cp_view(&v);
    uint64_t now = cp_mono_ns();
    if (progressed(&g_follow, v.after_seq, &pending)) {
      last_progress = now;
      stall_reported = 0;
    }
    uint64_t stalled_ms = (now - last_progress) / 1000000ull;
    /* acquire: pairs with the handlers' fetch_add; their signal and sender are visible */
    uint64_t asked = atomic_load_explicit(&g_requested, memory_order_acquire);
    if (asked > atomic_load_explicit(&g_served, memory_order_relaxed)) {
      hang_write(atomic_load_explicit(&g_req_sig, memory_order_relaxed),
                 atomic_load_explicit(&g_req_pid, memory_order_relaxed), stalled_ms, now);
      /* release: the handlers waiting see the report done; requests made meanwhile share this report */
      atomic_store_explicit(&g_served, atomic_load_explicit(&g_requested, memory_order_acquire), memory_order_release);
      continue;
    }
    if (timeout_ns && pending && !stall_reported && now - last_progress >= timeout_ns && fault_state() == 0 &&
        confirm_pending(&g_follow, v.after_seq) == 1) {
      hang_write(0, 0, stalled_ms, now);
      stall_reported = 1; /* the next one waits for progress and another stall */
    }
  }
  return NULL;
}

static void after_fork_child(void) {
  /* the watcher did not come along: the child starts its own at its first launch */
  int w = atomic_exchange_explicit(&g_wfd, -1, memory_order_relaxed);
  if (w >= 0) close(w);
  if (g_rfd >= 0) close(g_rfd);
  g_rfd = -1;
  atomic_store_explicit(&g_watcher_tid, 0, memory_order_relaxed);
  atomic_store_explicit(&g_requested, 0, memory_order_relaxed);
  atomic_store_explicit(&g_served, 0, memory_order_relaxed);
  atomic_store_explicit(&g_stop_state, 0, memory_order_relaxed);
  atomic_store_explicit(&g_written, 0, memory_order_relaxed);
  memset(&g_follow, 0, sizeof g_follow);
  threads_after_fork();
  atomic_store_explicit(&hang_started, 0, memory_order_relaxed);
}

static void register_fork(void) { pthread_atfork(NULL, NULL, after_fork_child); }

void hang_start(const struct cp_config *cfg) {
  int expect = 0;
  if (!atomic_compare_exchange_strong_explicit(&hang_started, &expect, 1, memory_order_acq_rel, memory_order_relaxed))
    return;
  g_cfg = cfg;
  pthread_once(&g_fork_once, register_fork);
  demangle_ready(); /* a hang report must not need the loader (hang_write) */
  if (!cfg->hang_signals && !cfg->report_signal && !cfg->hang_timeout_ms) return; /* nothing to watch */
  int fds[2];
  if (pipe2(fds, O_CLOEXEC | O_NONBLOCK) == 0) {
    pthread_attr_t attr;
    pthread_t t;
    sigset_t all, old;
    g_rfd = fds[0];
    /* the watcher blocks every signal (it inherits this mask): they are the program's threads' business */
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    int rc = pthread_create(&t, &attr, watch, NULL);
    pthread_attr_destroy(&attr);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc == 0) {
      /* release: a handler that sees the pipe sees the watcher's state set up */
      atomic_store_explicit(&g_wfd, fds[1], memory_order_release);
    } else {
      close(fds[0]);
      close(fds[1]);
      g_rfd = -1;
    }
  }
  /* the handlers come after the watcher: one that runs now finds someone to ask */
  signals_install(cfg, hang_request);
}
