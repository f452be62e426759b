/* The hang watcher (hang.h); what a report says is hang_pick.c's, how it is written hang_report.c's. The watcher
 * is a detached thread that blocks every signal and sleeps on a futex word: culprit's signal handlers bump it and
 * wake the watcher (the only thing they do besides waiting, bounded, for the report), and with
 * CULPRIT_HANG_TIMEOUT it also wakes a few times a second to look for progress. No file descriptor: a program that
 * closes every descriptor it did not open (fds 3..1023 before an exec or a daemon's start) and opens pipes and
 * files of its own would get the numbers of a pipe, whose bytes the watcher would then eat and into which a
 * handler would write. Requests and reports are counted:
 *
 *     handler: ticket = ++requested (acq_rel), ++wake (release), futex wake, wait until served >= ticket
 *              (acquire), bounded
 *     watcher: w = wake (acquire); if requested == served: futex wait while wake == w (a tick at most);
 *              report, served = requested (release)   (requests made meanwhile share that report)
 *
 * A handler's ++wake comes after its ++requested, so a watcher that read w before it either sees the request or
 * finds the word changed (the kernel compares it before sleeping) or is woken.
 *
 * so a report being written is never cut short by the signal that asked for it, and two signals at once get
 * one report. Progress is any move of a stream's breadcrumb, synchronized mark or last launch, or a new launch;
 * a stream is pending when its last launch is newer than the last one known complete. Before a timeout report
 * the pending streams are asked (cuStreamQuery, with their context pushed on the watcher) whether they really
 * are busy: record mode's sparse breadcrumbs make finished work look pending. */
#define _GNU_SOURCE
#include "hang.h"

#include "fault.h"
#include "hang_pick.h"
#include "hang_report.h"

#include "../core/clock.h"
#include "../base/config.h"
#include "../core/core.h"
#include "../core/crumb.h"
#include "../core/driver.h"
#include "../core/ring.h"
#include "signals.h"
#include "../base/demangle.h"
#include "../stack/threads.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <linux/futex.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define HANDLER_WAIT_MS 5000 /* a signal handler waits this long at most for its report */
#define FAULT_WAIT_MS 10000  /* ... and this long for a fault report being written (core's own bound) */
#define TICK_MIN_MS 50       /* the watcher looks for progress at most this often, */
#define TICK_MAX_MS 1000     /* and at least this often */
#define LISTED_MAX 1024      /* streams the watcher follows between rescans of the stream table */
#define CU_NOT_READY 600     /* CUDA_ERROR_NOT_READY: the stream is still busy */

static _Atomic int hang_started;      /* hang_start ran in this process (a forked child starts at 0 again) */
static const struct cp_config *g_cfg; /* the process's configuration (core's, lives forever) */
static _Atomic int g_watching;        /* a watcher runs in this process (release by hang_start, acquire by handlers) */
static _Atomic uint32_t g_wake;       /* the futex word the watcher sleeps on: bumped by each request (release) */
static _Atomic int g_watcher_tid;     /* the watcher's thread id; 0 before it runs */
static _Atomic uint64_t g_requested;  /* reports asked for by signal handlers */
static _Atomic uint64_t g_served;     /* requests up to this one were answered (release by the watcher) */
static _Atomic int g_req_sig;         /* the newest request's signal */
static _Atomic int g_req_pid;         /* ... and its sender, 0 if unknown */
static _Atomic int g_stop_state;      /* a stop signal's report: 0 none yet, 1 under way, 2 done */
static _Atomic int g_written;         /* hang reports written */
static pthread_once_t g_fork_once = PTHREAD_ONCE_INIT;
static char g_last_path[CFG_DIR_MAX + 160]; /* the last hang report written (the watcher writes it) */
static _Atomic uint64_t g_last_ino;         /* its inode while culprit run is to replace it with the device's
                                             * answer (wait_for_device_query); 0 when there is nothing to wait for */

int hang_written(void) { return atomic_load_explicit(&g_written, memory_order_relaxed); }

static void nap_ms(long ms) {
  struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
  nanosleep(&ts, NULL);
}

/* ---- requests from signal handlers (async-signal-safe) ---- */

/* A stop signal's report is the process's last while its context is alive: culprit run, which said it will ask
 * (CULPRIT_RUN_PID, CULPRIT_DEVICE_WAIT), attaches a debugger to ask the device which kernels are running and
 * replaces the report with the answer, a new file at the same path. The handler waits for that replacement,
 * CULPRIT_DEVICE_WAIT at most, and not at all when no such culprit run is there (gone, or never said so), so that
 * nothing can hold the program's own handling for long. stat, kill and nanosleep are async-signal-safe. */
static void wait_for_device_query(void) {
  uint64_t ino = atomic_load_explicit(&g_last_ino, memory_order_acquire);
  if (!ino) return;
  int saved = errno;
  uint64_t until = cp_mono_ns() + (uint64_t)g_cfg->device_wait_ms * 1000000ull;
  while (cp_mono_ns() < until) {
    struct stat st;
    if (stat(g_last_path, &st) != 0 || (uint64_t)st.st_ino != ino) break;
    if (kill(g_cfg->run_pid, 0) != 0 && errno == ESRCH) break;
    nap_ms(10);
  }
  errno = saved;
}

void hang_request(int sig, int sender_pid, int stop, const void *uc) {
  if (!atomic_load_explicit(&g_watching, memory_order_acquire)) return;
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
  /* release: a watcher that reads the new word (acquire) sees the request; the wake is a system call, which a
   * signal handler may make */
  atomic_fetch_add_explicit(&g_wake, 1, memory_order_release);
  syscall(SYS_futex, &g_wake, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
  while (atomic_load_explicit(&g_served, memory_order_acquire) < ticket && cp_mono_ns() < until) nap_ms(2);
  threads_handler_leave();
  if (stop && atomic_load_explicit(&g_served, memory_order_acquire) >= ticket) wait_for_device_query();
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

static void rescan(struct followed *f, uint64_t after) {
  f->n = 0;
  f->overflow = 0;
  for (uint32_t i = 0; i < crumb_capacity(); i++) {
    if (!hang_in_use(crumb_at(i), after)) continue;
    if (f->n == LISTED_MAX) {
      f->overflow = 1;
      break;
    }
    f->idx[f->n++] = i;
  }
  f->valid = 1;
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
    uint64_t slot = 0, done = hang_done_of(st);
    hang_read_slot(st, &slot);
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
    if (!hang_in_use(st, after)) continue;
    uint64_t last = atomic_load_explicit(&st->last_launched, memory_order_relaxed);
    if (hang_done_of(st) >= last) continue;
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

/* ---- the watcher ---- */

/* After hang_write (rc its result), in the watcher: counts the report and, when culprit run said it will ask the
 * device about it, keeps its inode for wait_for_device_query (0: nothing to wait for). */
static void written(int rc) {
  uint64_t ino = 0;
  struct stat st;
  if (rc == 0) atomic_fetch_add_explicit(&g_written, 1, memory_order_relaxed);
  if (rc == 0 && g_cfg->run_pid > 0 && g_cfg->device_wait_ms && stat(g_last_path, &st) == 0) ino = (uint64_t)st.st_ino;
  /* release: a handler that acquires the inode sees the path written with it (and served's release follows) */
  atomic_store_explicit(&g_last_ino, ino, memory_order_release);
}

static int tick_ms(void) {
  uint32_t t = g_cfg->hang_timeout_ms / 8;
  if (!g_cfg->hang_timeout_ms || t > TICK_MAX_MS) return TICK_MAX_MS;
  return t < TICK_MIN_MS ? TICK_MIN_MS : (int)t;
}

/* Sleeps until a handler bumps the wake word from seen, or ms pass. */
static void sleep_on_wake(uint32_t seen, int ms) {
  struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
  syscall(SYS_futex, &g_wake, FUTEX_WAIT_PRIVATE, seen, &ts, NULL, 0);
}

static void *watch(void *arg) {
  (void)arg;
  uint64_t timeout_ns = (uint64_t)g_cfg->hang_timeout_ms * 1000000ull;
  struct cp_view v;
  int pending = 0, stall_reported = 0;
  atomic_store_explicit(&g_watcher_tid, (int)syscall(SYS_gettid), memory_order_relaxed);
  pthread_setname_np(pthread_self(), "culprit-watch");
  cp_view(&v);
  progressed(&g_follow, v.after_seq, &pending);
  uint64_t last_progress = cp_mono_ns();
  for (;;) {
    /* acquire: pairs with the handlers' bump; read before requested, so no request falls between the two */
    uint32_t seen = atomic_load_explicit(&g_wake, memory_order_acquire);
    if (atomic_load_explicit(&g_requested, memory_order_acquire) <=
        atomic_load_explicit(&g_served, memory_order_relaxed))
      sleep_on_wake(seen, tick_ms());
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
      written(hang_write(g_cfg, atomic_load_explicit(&g_req_sig, memory_order_relaxed),
                         atomic_load_explicit(&g_req_pid, memory_order_relaxed), stalled_ms, now, g_last_path,
                         sizeof g_last_path));
      /* release: the handlers waiting see the report done; requests made meanwhile share this report */
      atomic_store_explicit(&g_served, atomic_load_explicit(&g_requested, memory_order_acquire), memory_order_release);
      continue;
    }
    if (timeout_ns && pending && !stall_reported && now - last_progress >= timeout_ns && fault_state() == 0 &&
        confirm_pending(&g_follow, v.after_seq) == 1) {
      written(hang_write(g_cfg, 0, 0, stalled_ms, now, g_last_path, sizeof g_last_path));
      stall_reported = 1; /* the next one waits for progress and another stall */
    }
  }
  return NULL;
}

static void after_fork_child(void) {
  /* the watcher did not come along: the child starts its own at its first launch */
  atomic_store_explicit(&g_watching, 0, memory_order_relaxed);
  atomic_store_explicit(&g_wake, 0, memory_order_relaxed);
  atomic_store_explicit(&g_watcher_tid, 0, memory_order_relaxed);
  atomic_store_explicit(&g_requested, 0, memory_order_relaxed);
  atomic_store_explicit(&g_served, 0, memory_order_relaxed);
  atomic_store_explicit(&g_stop_state, 0, memory_order_relaxed);
  atomic_store_explicit(&g_written, 0, memory_order_relaxed);
  atomic_store_explicit(&g_last_ino, 0, memory_order_relaxed);
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
  /* where ptrace is restricted to descendants (Yama's ptrace_scope 1), culprit run and the debugger it starts may
   * attach only if this process says so; without Yama the call fails and changes nothing */
  if (cfg->run_pid > 0) prctl(PR_SET_PTRACER, (unsigned long)cfg->run_pid, 0, 0, 0);
  demangle_ready(); /* a hang report must not need the loader (hang_write) */
  if (!cfg->hang_signals && !cfg->report_signal && !cfg->hang_timeout_ms) return; /* nothing to watch */
  {
    pthread_attr_t attr;
    pthread_t t;
    sigset_t all, old;
    /* the watcher blocks every signal (it inherits this mask): they are the program's threads' business */
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    int rc = pthread_create(&t, &attr, watch, NULL);
    pthread_attr_destroy(&attr);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    /* release: a handler that sees the watcher sees its state set up */
    if (rc == 0) atomic_store_explicit(&g_watching, 1, memory_order_release);
  }
  /* the handlers come after the watcher: one that runs now finds someone to ask */
  signals_install(cfg, hang_request);
}
