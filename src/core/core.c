/* Core of the library: configuration at start, the launch path (record, breadcrumb, blocking sync), sticky
 * error detection, the scoped mode stack behind include/culprit.h, fork and exit handling. No CUDA headers:
 * driver calls go through cp_drv, filled by intercept with the real entry points; what happens after an error, at
 * a hang or at exit is the floor above's, reached through cp_upcalls (upcalls.h). */
#define _GNU_SOURCE
#include "core.h"

#include "clock.h"
#include "chains.h"
#include "../base/config.h"
#include "crumb.h"
#include "graphs.h"
#include "driver.h"
#include "launcher.h"
#include "markplan.h"
#include "modes.h"
#include "names.h"
#include "ring.h"
#include "stats.h"
#include "ticks.h"
#include "upcalls.h"
#include "../base/demangle.h"
#include "../stack/pystack.h"
#include "../stack/pywait.h"
#include "../stack/stack.h"

#include <errno.h>
#include <fnmatch.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

struct cp_driver cp_drv;
int cp_state;

static struct cp_config g_cfg; /* as read at start */
static pthread_once_t g_once = PTHREAD_ONCE_INIT;
static _Atomic uint64_t g_seq;      /* last launch number handed out */
static _Atomic uint64_t g_fork_seq; /* launches up to this belong to the parent (after fork) */
static _Atomic int g_captures;      /* stream captures in progress */
static _Atomic int g_launched;      /* this process made its first recorded launch (first_launch) */
static _Atomic int g_exit_armed;    /* the at-exit upcall is registered (arm_exit) */
static pthread_key_t g_thread_key;  /* releases a thread's ring at exit */

/* Blocking mode runs matching launches one at a time across threads, so that a synchronize that reports the
 * error names the launch it followed and not a kernel another thread had in flight. The lock is only ever
 * waited for a bounded time: kernels that wait for each other (collectives, spin-waits on another stream)
 * must not deadlock; past the bound a launch goes ahead unserialized. */
static pthread_mutex_t g_blocking_lock = PTHREAD_MUTEX_INITIALIZER;
#define BLOCKING_WAIT_NS (200 * 1000 * 1000)
/* Under CUDA_LAUNCH_BLOCKING=1 every launch that returns success has completed: a synchronize for free. The
 * driver reads the variable when it initializes, so culprit reads it at the first launch, not at load time (a
 * Python program may set or clear it before importing torch). */
static int g_launch_blocking;
static pthread_once_t g_clb_once = PTHREAD_ONCE_INIT;
static void read_clb(void) {
  const char *clb = getenv("CUDA_LAUNCH_BLOCKING");
  g_launch_blocking = clb && clb[0] == '1';
}

static __thread int tls_tid;
static __thread struct cp_ring *tls_ring;

static inline int my_tid(void) {
  if (__builtin_expect(!tls_tid, 0)) tls_tid = (int)syscall(SYS_gettid);
  return tls_tid;
}

/* Launches culprit did not track (recording paused, no ring, no stream entry) are counted; each stream keeps
 * the count at its newest one (crumb_note_untracked), and those on no known stream share g_untracked_loose. A
 * successful synchronize covers the ones counted before it began: of its stream, or all for a context-wide one
 * (their context is not known: as for recorded launches, any context's synchronize counts). A verdict that
 * cannot rule one out is not exact. */
static _Atomic uint64_t g_untracked_n;     /* untracked launches so far */
static _Atomic uint64_t g_untracked_loose; /* g_untracked_n at the newest one on no known stream (0: none) */
static _Atomic uint64_t g_untracked_done;  /* g_untracked_n when the newest successful context sync began */
static _Atomic uint64_t g_sync_epoch;      /* successful host synchronizes that covered launches (cp_sync_end) */

/* D: the launch, when its stream can be looked up (the driver is in use); NULL: none known. The stream's entry
 * is made if need be (without its breadcrumb slot, which the first recorded launch there allocates), so that a
 * synchronize of it can cover the launch. */
static void note_untracked(const struct cp_launch_desc *d) {
  uint64_t n = atomic_fetch_add_explicit(&g_untracked_n, 1, memory_order_relaxed) + 1;
  struct cp_stream *s = d ? crumb_stream(d->stream, d->ptds, my_tid(), 0) : NULL;
  if (s)
    crumb_note_untracked(s, n);
  else
    atomic_max_u64(&g_untracked_loose, n);
}

/* Whether an untracked launch may still have been running at the fault. */
static int untracked_pending(void) {
  uint64_t done = atomic_load_explicit(&g_untracked_done, memory_order_relaxed);
  return atomic_load_explicit(&g_untracked_loose, memory_order_relaxed) > done || crumb_untracked_pending(done);
}

static void say(const char *msg) {
  char buf[600];
  int n = snprintf(buf, sizeof buf, "culprit: %s\n", msg);
  if (n > 0) {
    ssize_t w = write(2, buf, (size_t)n < sizeof buf ? (size_t)n : sizeof buf - 1);
    (void)w;
  }
}

/* Thread exit: the ring goes to whoever needs one next; a launch from a later destructor of this thread makes
 * (or adopts) another rather than writing into one a new owner already uses. */
static void thread_gone(void *ring) {
  tls_ring = NULL;
  ring_release(ring);
}

static void after_fork_child(void) {
  tls_tid = 0;
  tls_ring = NULL;
  ring_after_fork(my_tid());
  crumb_after_fork();
  names_after_fork();
  graph_after_fork();
  stats_after_fork(); /* CULPRIT_STATS counts the child's own launches (and ring.c's) */
  atomic_store(&g_fork_seq, atomic_load(&g_seq));
  atomic_store(&g_captures, 0);
  atomic_store(&g_untracked_n, 0);
  atomic_store(&g_untracked_loose, 0);
  atomic_store(&g_untracked_done, 0);
  atomic_store(&g_launched, 0);
  mode_after_fork();
  pthread_mutex_init(&g_blocking_lock, NULL);
}

static const char *env_get(const char *name) { return getenv(name); }

static void first_launch(void);

/* A sticky error surfaced: the floor above writes the report (once per process). */
static void report(int code, const char *api, uint64_t exact_seq) {
  if (cp_upcalls.sticky) cp_upcalls.sticky(code, api, exact_seq);
}

static void init_once(void) {
  char err[400];
  if (cfg_parse(&g_cfg, env_get, err, sizeof err)) {
    char msg[460];
    snprintf(msg, sizeof msg, "%s; culprit is off for this process", err);
    say(msg);
    cp_state = -1;
    return;
  }
  if (g_cfg.mode == CP_MODE_OFF) {
    cp_state = -1;
    return;
  }
  ticks_init();
  crumb_set_mark(g_cfg.mark);
  markplan_init(g_cfg.mark_budget_bp, g_cfg.crumb_every);
  /* The report directory is fixed now: the program may chdir later. */
  if (g_cfg.dir[0] != '/') {
    char cwd[CFG_DIR_MAX];
    size_t lc, ld = strlen(g_cfg.dir);
    if (getcwd(cwd, sizeof cwd) && (lc = strlen(cwd)) + 1 + ld < sizeof g_cfg.dir) {
      memmove(g_cfg.dir + lc + 1, g_cfg.dir, ld + 1);
      memcpy(g_cfg.dir, cwd, lc);
      g_cfg.dir[lc] = '/';
    }
  }
  const char *ring_env = getenv("CULPRIT_RING");
  ring_configure(g_cfg.ring, g_cfg.stack_depth, ring_env && *ring_env);
  /* A rerun of a job (culprit run --rerun) gives each rank its own blocking window; a rank it names none has
   * no launch in its window. */
  if (g_cfg.rank_launches[0]) {
    struct launcher_info li;
    long long rank = launcher_parse(&li, env_get) ? li.rank : -1;
    if (cfg_rank_window(g_cfg.rank_launches, rank, &g_cfg.launch_lo, &g_cfg.launch_hi) != 1)
      g_cfg.launch_lo = g_cfg.launch_hi = UINT64_MAX;
  }
  mode_init(&g_cfg);
  stack_init(); /* the dlopen of libunwind happens here, not inside a launch */
  if (g_cfg.stats) pystack_wait_counting(1);
  pthread_key_create(&g_thread_key, thread_gone);
  pthread_atfork(NULL, NULL, after_fork_child);
  if (cp_upcalls.started) cp_upcalls.started(&g_cfg);
  __atomic_store_n(&cp_state, 1, __ATOMIC_RELEASE);
}

void cp_init(void) { pthread_once(&g_once, init_once); }

__attribute__((constructor)) static void cp_ctor(void) { cp_init(); }

static struct cp_ring *my_ring(void) {
  if (__builtin_expect(tls_ring != NULL, 1)) return tls_ring;
  tls_ring = ring_mine(my_tid());
  if (tls_ring) pthread_setspecific(g_thread_key, tls_ring);
  return tls_ring;
}

static int names_lookup(void *func, const char **name) {
  if (cp_drv.func_get_name && !cp_drv.func_get_name(name, func) && *name) return 0;
  /* cudart may hand a CUkernel (library kernel) to cuLaunchKernel. */
  if (cp_drv.kernel_get_name && !cp_drv.kernel_get_name(name, func) && *name) return 0;
  return -1;
}

/* cudart may hand a CUkernel to cuLaunchKernel, as for names. Asked once per function, with its name (under the
 * names table's lock), parameter by parameter: the form that described parameter 0 describes the rest, since past
 * the last parameter either form answers an error. Parameter 0 is asked of the kernel form whenever the function
 * form refused it, whatever the error: a driver may answer a CUkernel given as a CUfunction with an invalid value,
 * as it answers a function without parameters. */
static int params_lookup(void *func, size_t i, size_t *offset, size_t *size) {
  static __thread int kernel_form; /* parameter 0 came from cuKernelGetParamInfo */
  if (i == 0) {
    kernel_form = 0;
    if (cp_drv.func_get_param_info && cp_drv.func_get_param_info(func, 0, offset, size) == 0) return 0;
    kernel_form = cp_drv.kernel_get_param_info && cp_drv.kernel_get_param_info(func, 0, offset, size) == 0;
    return kernel_form ? 0 : -1;
  }
  if (kernel_form) return cp_drv.kernel_get_param_info(func, i, offset, size) == 0 ? 0 : -1;
  return cp_drv.func_get_param_info && cp_drv.func_get_param_info(func, i, offset, size) == 0 ? 0 : -1;
}

/* The first CP_PARAMS_KEPT bytes of what the launch passed its kernel, packed as the kernel sees them: from the
 * array of pointers to each parameter (kernelParams), placed by the layout the kernel's name entry holds, or
 * from the buffer `extra` hands over whole (CU_LAUNCH_PARAM_BUFFER_POINTER and _SIZE). A launch whose layout is
 * unknown keeps none, and so does one whose `extra` is not that pair (the driver refuses it). */
static void take_params(struct cp_slot *rec, const struct cp_launch_desc *d) {
  const struct cp_params_layout *l = &rec->name->params;
  unsigned char *b = (unsigned char *)rec->params;
  if (d->params) {
    if (!l->known) return;
    memset(rec->params, 0, sizeof rec->params);
    for (unsigned i = 0; i < l->n; i++) {
      const void *src = d->params[i];
      unsigned char *dst = b + l->off[i];
      /* pointers and ints, the usual parameters, copied by a load and a store instead of a call */
      if (!src) continue;
      if (l->len[i] == 8)
        memcpy(dst, src, 8);
      else if (l->len[i] == 4)
        memcpy(dst, src, 4);
      else
        memcpy(dst, src, l->len[i]);
    }
    rec->params_size = l->size;
  } else if (d->extra) {
    const void *buf = NULL;
    const size_t *size = NULL;
    for (int i = 0; i < 16 && d->extra[i] != (void *)CP_CU_LAUNCH_PARAM_END; i += 2) {
      if (d->extra[i] == (void *)CP_CU_LAUNCH_PARAM_BUFFER_POINTER)
        buf = d->extra[i + 1];
      else if (d->extra[i] == (void *)CP_CU_LAUNCH_PARAM_BUFFER_SIZE)
        size = d->extra[i + 1];
      else
        return;
    }
    if (!buf || !size || *size > UINT32_MAX) return;
    memset(rec->params, 0, sizeof rec->params);
    memcpy(b, buf, *size < CP_PARAMS_KEPT ? *size : CP_PARAMS_KEPT);
    rec->params_size = (uint32_t)*size;
  } else {
    return;
  }
  rec->params_len = (uint8_t)(rec->params_size < CP_PARAMS_KEPT ? rec->params_size : CP_PARAMS_KEPT);
  rec->flags |= CP_REC_PARAMS;
}

static int stream_capturing(const struct cp_launch_desc *d) {
  int status = 0;
  if (!atomic_load_explicit(&g_captures, memory_order_relaxed)) return 0;
  if (d->ptds && cp_drv.stream_is_capturing_ptsz) {
    if (cp_drv.stream_is_capturing_ptsz(d->stream, &status)) return 1;
  } else if (cp_drv.stream_is_capturing) {
    if (cp_drv.stream_is_capturing(d->stream, &status)) return 1; /* unsure: leave the stream alone */
  }
  return status != 0;
}

static int blocking_applies(const struct mode_frame *m, const struct cp_slot *rec, uint64_t seq);
static int crumbs_everywhere(void);

static void blocking_lock(struct cp_launch_ctx *lc) {
  struct timespec until;
  clock_gettime(CLOCK_REALTIME, &until);
  until.tv_nsec += BLOCKING_WAIT_NS;
  if (until.tv_nsec >= 1000000000L) {
    until.tv_sec++;
    until.tv_nsec -= 1000000000L;
  }
  if (pthread_mutex_timedlock(&g_blocking_lock, &until) == 0)
    lc->serialized = 1;
  else
    stats_unserialized();
}

/* The launch's native stack and Python frames, as a chain of the ring's store (chains.h). Most launches come
 * from a call chain the thread launched from before: the native chain comes from the thread's chain cache with
 * its hash, the Python frames are hashed where they lie (pystack_key), and the two hashes find the chain the
 * record points at; only a chain not seen yet (or seen too long ago) has its Python frames resolved and is
 * written. A thread without Python frames (the autograd engine) takes those of the Python thread waiting on it.
 * At the launch (AT_FAILURE 0) CULPRIT_STATS times both parts; a launch whose stacks were left for a failure
 * (blocking mode) takes them plainly, still inside the launch call, so they are the launch's own. */
static void take_stacks(struct cp_launch_ctx *lc, struct cp_slot *rec, int at_failure) {
  struct cp_chains *store = lc->ring->chains;
  if (!store) return; /* no memory for chains: the record keeps no stacks */
  uint64_t t1 = lc->t0 && !at_failure ? ticks_now() : 0;
  void *pcs[64];
  struct pystack_ref wait[PYSTACK_MAX];
  unsigned long long waiting = 0;
  uint64_t hn = 0, hp = 0, no = 0;
  int reused = 0, nframes = 0, nwait = 0;
  if (at_failure) {
    nframes = g_cfg.stack_depth ? stack_capture(pcs, g_cfg.stack_depth) : 0;
    hn = stack_hash(pcs, nframes);
  } else {
    nframes = stack_capture_launch(pcs, g_cfg.stack_depth, &reused, &hn);
  }
  uint64_t t2 = t1 ? ticks_now() : 0;
  struct cp_ring_stats *st = &lc->ring->stats;
  if (t1 && reused) {
    st->stack_reused++;
    st->t_reused += ticks_since(t1, t2);
  } else if (t1) {
    /* tells whether chains were still being learned late in the run or only at its start */
    st->last_unwound = atomic_load_explicit(&g_seq, memory_order_relaxed) + 1;
  }
  int own = pystack_key(&hp); /* > 0: this thread's frames; -1: they cannot be keyed */
  if (own == 0) {
    /* a thread without Python (the autograd engine, a library's helper): the frames of the one waiting on it */
    uint64_t t3 = t1 ? ticks_now() : 0;
    nwait = pystack_waiting(wait, PYSTACK_MAX, &waiting);
    hp = chains_mix(0x5741495445440000ull, (uint64_t)nwait);
    hp = chains_mix(hp, waiting);
    for (int i = 0; i < nwait; i++) hp = chains_mix(hp, (uint64_t)wait[i].code << 32 | (uint32_t)wait[i].lasti);
    hp = chains_end(hp);
    if (t1) st->t_py_wait += ticks_since(t3, ticks_now());
  }
  const struct cp_chain *c = own >= 0 ? chains_find(store, hn, hp, &no) : NULL;
  if (!c) {
    struct cp_chain *w = chains_begin(store);
    memcpy(w->frames, pcs, (size_t)nframes * sizeof(void *));
    w->nframes = (uint8_t)nframes;
    if (own != 0) {
      w->npy = (uint8_t)pystack_capture(w->py, PYSTACK_MAX);
    } else if (nwait) {
      memcpy(w->py, wait, (size_t)nwait * sizeof wait[0]);
      w->npy = (uint8_t)nwait;
      w->flags = CP_REC_PY_WAITING;
      w->py_thread = waiting;
    }
    no = chains_publish(store, w, hn, hp, own >= 0);
    c = w;
  }
  if (t1) {
    st->t_native += ticks_since(t1, t2);
    st->t_python += ticks_since(t2, ticks_now());
  }
  /* the chain last (release, paired with the report's acquire): a report of another thread reading this record
   * meanwhile sees no stacks or the chain's number with it */
  rec->chain_no = no;
  atomic_store_explicit(&rec->chain, c, memory_order_release);
}

int cp_launch_begin(struct cp_launch_ctx *lc, const struct cp_launch_desc *d) {
  struct mode_frame *m = mode_now();
  if (!m || m->mode == CP_MODE_OFF) {
    note_untracked(m ? d : NULL);
    return 0;
  }
  struct cp_ring *r = my_ring();
  if (!r) {
    note_untracked(d);
    return 0;
  }
  pystack_prefetch(); /* the walk of Python frames comes later: its loads start now */
  pthread_once(&g_clb_once, read_clb);
  lc->t0 = g_cfg.stats ? ticks_now() : 0;
  lc->ring = r;
  lc->d = d;
  struct cp_slot *rec = lc->rec = ring_claim(r);
  rec->ticks = lc->t0 ? lc->t0 : ticks_now();
  rec->func = d->func;
  rec->stream = d->stream;
  rec->api = d->api;
  rec->kind = d->kind;
  rec->flags = 0;
  rec->tid = my_tid();
  memcpy(rec->grid, d->grid, sizeof rec->grid);
  memcpy(rec->block, d->block, sizeof rec->block);
  rec->smem = d->smem;
  rec->name = NULL;
  if (d->kind != CP_KIND_GRAPH) {
    rec->name = names_get(d->func, names_lookup, params_lookup);
    take_params(rec, d);
  }
  atomic_store_explicit(&rec->chain, NULL, memory_order_relaxed);
  struct cp_stream *s = lc->stream =
      crumb_stream(d->stream, d->ptds, rec->tid, !atomic_load_explicit(&g_captures, memory_order_relaxed));
  if (s) {
    rec->stream_idx = crumb_index(s);
    rec->ctx = s->ctx;
    rec->device = s->device;
    rec->stream_kind = (uint8_t)s->kind;
  } else {
    note_untracked(NULL); /* recorded, but on no stream the verdict can follow */
    rec->stream_idx = UINT32_MAX;
    rec->ctx = NULL;
    rec->device = -1;
    rec->stream_kind = d->stream ? CP_STREAM_CREATED : (d->ptds ? CP_STREAM_PER_THREAD : CP_STREAM_LEGACY);
  }
  if (stream_capturing(d)) {
    /* Captured launches run later, inside a graph: they must not move the stream's chain (breadcrumbs inside
     * graphs, in precise and blocking modes only, go to the capture's own slot). */
    rec->flags |= CP_REC_CAPTURED;
    lc->stream = NULL;
  }
  /* Two threads launching on one stream at once: launch numbers are taken after the launch, so their order
   * may not be the stream's. Both records are marked and the verdict does not trust the order between them. */
  /* A launch that begins while another is in flight marks itself and bumps the stream's overlap count, which the
   * other one checks when it ends: a launch whose whole call falls inside another's is caught from both sides. */
  lc->inflight = 0;
  if (lc->stream) {
    lc->inflight = 1;
    lc->overlaps0 = atomic_load_explicit(&lc->stream->overlaps, memory_order_seq_cst);
    if (atomic_fetch_add_explicit(&lc->stream->inflight, 1, memory_order_seq_cst) > 0) {
      rec->flags |= CP_REC_RACY;
      atomic_fetch_add_explicit(&lc->stream->overlaps, 1, memory_order_seq_cst);
    }
  }
  lc->serialized = 0;
  lc->stacks_later = 0;
  /* The launch number is not known before the launch; the next one is the best guess for the window. A launch
   * blocking mode synchronizes after leaves its stacks for a failure: a synchronize that succeeds proves it
   * completed, so no verdict will name it (it may still be listed among the launches before a culprit, which
   * show no launch lines), and one that fails comes back while the launch call is still on the stack. */
  if (m->mode == CP_MODE_BLOCKING && blocking_applies(m, rec, atomic_load_explicit(&g_seq, memory_order_relaxed) + 1)) {
    blocking_lock(lc);
    lc->stacks_later = 1;
  } else {
    take_stacks(lc, rec, 0);
  }
  if (lc->t0) lc->spent = ticks_since(lc->t0, ticks_now()); /* the driver's own launch time is not culprit's */
  return 1;
}

static int blocking_applies(const struct mode_frame *m, const struct cp_slot *rec, uint64_t seq) {
  if (m->mode != CP_MODE_BLOCKING || seq < m->lo || seq > m->hi) return 0;
  if (rec->flags & CP_REC_CAPTURED) return 0;
  if (atomic_load_explicit(&g_captures, memory_order_relaxed)) return 0; /* a sync would break a capture */
  if (!strcmp(m->kernels, "*")) return 1;
  if (rec->kind == CP_KIND_GRAPH) return 0;
  /* The answer is remembered per kernel name and pattern (frame generation): demangling a template-heavy
   * PyTorch name on every launch costs microseconds. Interned names are writable; only match is written. */
  struct cp_kname *k = (struct cp_kname *)rec->name;
  if (k) {
    uint64_t c = atomic_load_explicit(&k->match, memory_order_relaxed);
    if (c >> 1 == m->gen) return (int)(c & 1);
  }
  const char *name = k ? k->mangled : "";
  int hit = fnmatch(m->kernels, name, 0) == 0;
  if (!hit) {
    /* Also try the demangled name, so "*nll_loss*" or "softmax*" work as a user would write them. */
    char *dn = demangle_name(name);
    hit = dn && fnmatch(m->kernels, dn, 0) == 0;
    free(dn);
  }
  if (k) atomic_store_explicit(&k->match, m->gen << 1 | (uint64_t)hit, memory_order_relaxed);
  return hit;
}

int cp_launch_end(struct cp_launch_ctx *lc, int rc) {
  uint64_t t_end = lc->t0 ? ticks_now() : 0;
  struct cp_slot *rec = lc->rec;
  uint64_t seq;
  if (lc->inflight && rc != 0) atomic_fetch_sub_explicit(&lc->stream->inflight, 1, memory_order_seq_cst);
  if (rc != 0) {
    if (!cp_is_sticky(rc)) {
      if (lc->serialized) pthread_mutex_unlock(&g_blocking_lock);
      return rc; /* nothing was queued; the record slot is reused */
    }
    /* The launch call itself returned a sticky error: under CUDA_LAUNCH_BLOCKING this launch faulted; else
     * an earlier one did and the verdict finds it through the breadcrumbs. Its stacks are taken and it is
     * published before blocking mode's lock is let go, so another thread's report cannot miss them. */
    rec->flags |= CP_REC_RETURNED_ERROR;
    rec->prev = 0;
    if (lc->stacks_later) take_stacks(lc, rec, 1);
    seq = atomic_fetch_add_explicit(&g_seq, 1, memory_order_relaxed) + 1;
    ring_publish(lc->ring, rec, seq);
    if (lc->serialized) pthread_mutex_unlock(&g_blocking_lock);
    report(rc, lc->d->api, 0);
    return rc;
  }
  seq = atomic_fetch_add_explicit(&g_seq, 1, memory_order_relaxed) + 1;
  struct cp_stream *s = lc->stream;
  rec->prev = 0;
  if ((rec->flags & CP_REC_CAPTURED) && crumbs_everywhere()) {
    uint64_t dslot = graph_capture_slot(lc->d->stream);
    if (dslot && crumb_write_to(lc->d->stream, lc->d->ptds, dslot, seq)) rec->flags |= CP_REC_CRUMB_FAILED;
  }
  struct mode_frame *m = mode_now();
  /* blocking mode synchronizes after this launch: that is its completion bound, so no breadcrumb is queued (it
   * would make the GPU drain the stream once more for nothing). A launch that synchronizes without the lock (it
   * gave up waiting: another thread's synchronize held it past the bound on a slow or shared GPU) gets one all
   * the same: its synchronize runs beside other threads' launches, and a fault surfacing meanwhile finds it
   * complete or not by its breadcrumb, as precise mode would. */
  int sync_after = m && blocking_applies(m, rec, seq);
  int crumb_instead = sync_after && !lc->serialized;
  if (lc->stacks_later && !sync_after) take_stacks(lc, rec, 1); /* the guessed launch number was not this one */
  if (s) {
    rec->prev = atomic_exchange_explicit(&s->last_launched, seq, memory_order_relaxed);
    uint64_t nth = atomic_fetch_add_explicit(&s->launches, 1, memory_order_relaxed) + 1;
    int every = m && m->mode != CP_MODE_RECORD ? 1 : (int)g_cfg.crumb_every;
    /* a stream's first launch gets one whatever the plan: a stream with fewer launches than the spacing would
     * otherwise leave them all unfinished as far as the verdict can tell; so does its first launch after the host
     * waited for work to finish (one mark per synchronize): the GPU starts a new burst there, and a fault or a
     * hang in that launch is then told from the ones queued behind it. Record mode's others follow the mark plan
     * (markplan.h): every launch of a young stream or of one whose launches are far apart, sparser in a dense
     * stream of short kernels. */
    uint64_t epoch = atomic_load_explicit(&g_sync_epoch, memory_order_relaxed);
    int after_sync = epoch != atomic_load_explicit(&s->sync_epoch, memory_order_relaxed);
    if (after_sync) atomic_store_explicit(&s->sync_epoch, epoch, memory_order_relaxed);
    if (s->slot && (!sync_after || crumb_instead) && (every == 1 || nth == 1 || after_sync || markplan_due(s, nth))) {
      if (crumb_write(s, lc->d->stream, lc->d->ptds, seq))
        rec->flags |= CP_REC_CRUMB_FAILED;
      else if (every != 1)
        markplan_marked(s, nth, rec->ticks); /* record mode: where the next one goes */
    } else if (s->slot) {
      rec->flags |= CP_REC_UNCRUMBED;
    }
    if (g_launch_blocking) crumb_note_synced(s, seq);
    /* seq_cst with the increments in cp_launch_begin: whoever overlapped us either sees us in flight or left
     * its mark in overlaps */
    if (atomic_fetch_sub_explicit(&s->inflight, 1, memory_order_seq_cst) > 1 ||
        atomic_load_explicit(&s->overlaps, memory_order_seq_cst) != lc->overlaps0)
      rec->flags |= CP_REC_RACY;
  }
  ring_publish(lc->ring, rec, seq);
  if (__builtin_expect(!atomic_load_explicit(&g_launched, memory_order_relaxed), 0)) first_launch();

  if (sync_after) {
    int src = lc->d->ptds && cp_drv.stream_sync_ptsz ? cp_drv.stream_sync_ptsz(lc->d->stream)
                                                     : cp_drv.stream_sync(lc->d->stream);
    stats_blocking_sync();
    if (src == 0 && s) crumb_note_synced(s, seq); /* everything on the stream up to this launch completed */
    /* It may yet be named: it gets its stacks before the lock is let go, or the next thread's launch, refused
     * with the same sticky error, could write the report first and name this launch without them. */
    if (src && lc->stacks_later)
      take_stacks(lc, rec, 1);
    else if (lc->stacks_later)
      stats_stacks_later();
    if (lc->serialized) pthread_mutex_unlock(&g_blocking_lock);
    if (src && cp_is_sticky(src)) {
      report(src, lc->d->api, seq);
      rc = src;
    }
  } else if (lc->serialized) {
    pthread_mutex_unlock(&g_blocking_lock);
  }
  if (lc->t0) lc->ring->stats.t_in_culprit += lc->spent + ticks_since(t_end, ticks_now());
  return rc;
}

void cp_result(int rc, const char *api) {
  if (!cp_is_sticky(rc) || !cp_active()) return;
  report(rc, api, 0);
}

/* Tail marks (crumb_tail) before the host synchronizes, records an event or queries a stream: in record mode
 * a stream's newest launches usually have no breadcrumb, and a fault surfacing in this very call then leaves them
 * all candidates. Not while a capture is under way anywhere: the mark could enter the program's graph. */
static int tails_wanted(void) {
  struct mode_frame *m = mode_now();
  return m && m->mode == CP_MODE_RECORD && !atomic_load_explicit(&g_captures, memory_order_relaxed);
}

void cp_sync_begin(struct cp_sync *c, void *stream, int ptds, int whole_ctx) {
  c->stream = NULL;
  c->ctx = NULL;
  c->upto = 0;
  c->untracked = 0;
  if (!cp_active()) return;
  if (whole_ctx) {
    if (cp_drv.ctx_get_current && !cp_drv.ctx_get_current(&c->ctx)) {
      c->upto = atomic_load_explicit(&g_seq, memory_order_relaxed);
      if (c->ctx && tails_wanted()) crumb_tails_ctx(c->ctx, my_tid());
    }
    c->untracked = atomic_load_explicit(&g_untracked_n, memory_order_relaxed);
    return;
  }
  c->stream = crumb_find(stream, ptds, my_tid());
  if (c->stream) {
    if (tails_wanted()) crumb_tail(c->stream, stream, ptds);
    c->upto = atomic_load_explicit(&c->stream->last_launched, memory_order_relaxed);
    c->untracked = atomic_load_explicit(&c->stream->untracked, memory_order_relaxed);
  }
}

void cp_sync_end(const struct cp_sync *c, int rc) {
  if (rc == 0 && c->untracked) {
    if (c->stream)
      crumb_note_untracked_done(c->stream, c->untracked);
    else
      atomic_max_u64(&g_untracked_done, c->untracked);
  }
  if (rc != 0 || !c->upto) return;
  atomic_fetch_add_explicit(&g_sync_epoch, 1, memory_order_relaxed);
  if (c->stream)
    crumb_note_synced(c->stream, c->upto);
  else
    crumb_note_ctx_synced(c->ctx, c->upto);
}

void cp_event_recorded(void *event, const struct cp_sync *c) {
  /* An event recorded into a capture completes with a graph replay, not with the stream's own launches. */
  if (atomic_load_explicit(&g_captures, memory_order_relaxed)) {
    crumb_event_forget(event);
    return;
  }
  if (c->stream && c->upto)
    crumb_event_recorded(event, c->stream, c->upto);
  else
    crumb_event_forget(event); /* re-recorded on a stream culprit does not follow: no bound */
}

void cp_event_destroying(void *event) {
  if (cp_active()) crumb_event_forget(event);
}

void cp_event_completed(void *event) {
  if (cp_active()) crumb_event_completed(event);
}

/* At exit, the floor above looks for an error one last time (the driver is still there) and leaves its exit
 * record. The handler is registered at the first recorded launch, not when the library starts: an atexit handler
 * of a preloaded library registered from its constructor runs from the library's own finalizer, after the
 * destructors of every library loaded later (the driver that PyTorch opens, cudart's), so the driver would
 * already be gone. Registered once the program runs, it runs among the program's exit handlers, before the
 * libraries' destructors. A forked child inherits the registration. */
static void at_exit(void) {
  if (cp_upcalls.at_exit) cp_upcalls.at_exit();
}

static void arm_exit(void) {
  int expect = 0;
  /* relaxed: the flag only keeps the registration to one; atexit itself is thread-safe */
  if (atomic_compare_exchange_strong_explicit(&g_exit_armed, &expect, 1, memory_order_relaxed, memory_order_relaxed))
    atexit(at_exit);
}

/* The process's first recorded launch (a forked child's too): the exit handler, and the floor above's (the hang
 * watcher). A launch racing the first one goes on without waiting for it. */
static void first_launch(void) {
  int expect = 0;
  if (!atomic_compare_exchange_strong_explicit(&g_launched, &expect, 1, memory_order_relaxed, memory_order_relaxed))
    return;
  arm_exit();
  if (cp_upcalls.first_launch) cp_upcalls.first_launch(&g_cfg);
}

void cp_ctx_going(void *ctx, int device, const char *api) {
  if (!cp_active()) return;
  if (cp_upcalls.ctx_going) cp_upcalls.ctx_going(ctx, device, api);
  crumb_ctx_gone(ctx, device);
  graph_forget_slots();
}

static void capture_count_down(void) {
  int c = atomic_load_explicit(&g_captures, memory_order_relaxed);
  while (c > 0 &&
         !atomic_compare_exchange_weak_explicit(&g_captures, &c, c - 1, memory_order_relaxed, memory_order_relaxed)) {
  }
}

void cp_stream_destroying(void *stream) {
  if (!cp_active()) return;
  crumb_stream_destroyed(stream);
  /* A capture the program never ended: without this the count stays up and blocking mode stops syncing. */
  if (graph_capture_abandoned(stream)) capture_count_down();
}

/* Breadcrumbs inside graphs (precise and blocking modes): the capture gets a slot of its own; its first node
 * writes 0 into it and each captured kernel is followed by a node writing its launch number, so after a fault
 * inside a replay the slot names the last node that completed. */
static int crumbs_everywhere(void) {
  struct mode_frame *m = mode_now();
  return m && (m->mode == CP_MODE_PRECISE || m->mode == CP_MODE_BLOCKING);
}

/* The slot for the capture about to begin, taken before the real call: once a capture is under way, pinned
 * memory may not be allocated (in a global capture that would invalidate the program's graph). */
static __thread volatile uint64_t *tls_cap_slot;
static __thread uint64_t tls_cap_dslot;

void cp_capture_prepare(void) {
  tls_cap_slot = NULL;
  if (cp_active() && crumbs_everywhere() &&
      crumb_alloc_slot(&tls_cap_slot, &tls_cap_dslot, !atomic_load_explicit(&g_captures, memory_order_relaxed)))
    tls_cap_slot = NULL;
}

void cp_capture_begun(void *stream, int ptds) {
  atomic_fetch_add_explicit(&g_captures, 1, memory_order_relaxed);
  if (!cp_active()) return;
  graph_capture_begun(stream, my_tid(), atomic_load_explicit(&g_seq, memory_order_relaxed));
  if (tls_cap_slot && !crumb_write_to(stream, ptds, tls_cap_dslot, 0))
    graph_capture_set_slot(stream, tls_cap_slot, tls_cap_dslot);
  tls_cap_slot = NULL;
}

void cp_graph_instantiated(void *exec, void *graph) {
  if (cp_active()) graph_instantiated(exec, graph);
}

void cp_capture_ended(void *stream, void *graph) {
  if (cp_active()) graph_capture_ended(stream, graph, atomic_load_explicit(&g_seq, memory_order_relaxed));
  capture_count_down();
}

void cp_module_unloaded(void) { names_forget_all(); }

__attribute__((destructor)) static void cp_dtor(void) {
  if (cp_state <= 0 || !g_cfg.stats) return;
  uint64_t n = atomic_load(&g_seq) - atomic_load(&g_fork_seq);
  /* one line per process that launched, not one per process of the job (shells, helpers) */
  if (n) stats_print(n, atomic_load(&g_fork_seq));
}

/* ---- what the floor above reads of core (upcalls.h) ---- */

void cp_view(struct cp_view *v) {
  struct mode_frame *m = mode_now();
  v->seq = atomic_load_explicit(&g_seq, memory_order_relaxed);
  v->after_seq = atomic_load_explicit(&g_fork_seq, memory_order_relaxed);
  v->mode = m ? m->mode : g_cfg.mode;
  v->captures = atomic_load_explicit(&g_captures, memory_order_relaxed);
  v->launch_blocking = g_launch_blocking;
}

int cp_untracked_pending(void) { return untracked_pending(); }
