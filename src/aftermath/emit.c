/* The pieces every report file shares: launch records, native and Python frames, the process, written as JSON
 * (jsonw) and saved under a temporary name then renamed. The fault verdict (verdict.c) and the hang report
 * (hang.c) are made of these; deciding what to report is not done here. */
#define _GNU_SOURCE
#include "emit.h"

#define EMIT_ARGV_MAX (16u << 20) /* bytes of the command line kept in a report */

#include "../core/clock.h"
#include "../base/config.h"
#include "../core/crumb.h"
#include "../core/errors.h"
#include "../core/graphs.h"
#include "../core/names.h"
#include "emit_ops.h"
#include "rank.h"
#include "../core/ring.h"
#include "../core/ticks.h"
#include "../base/demangle.h"
#include "../base/jsonw.h"
#include "../stack/pystack.h"
#include "../stack/stack.h"
#include "../render/report_keys.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static const struct emit_snap *g_emit_snap; /* the snapshot being reported (graph nodes are looked up in it) */

void emit_set_snap(const struct emit_snap *s) { g_emit_snap = s; }

struct cp_rec *emit_rec_at(const struct emit_snap *s, size_t i) {
  return (struct cp_rec *)((unsigned char *)s->recs + i * s->rs);
}

uint64_t emit_rseq(const struct cp_rec *r) { return atomic_load_explicit(&r->seq, memory_order_relaxed); }

struct cp_rec *emit_find_seq(const struct emit_snap *s, uint64_t seq) {
  size_t lo = 0, hi = s->n;
  while (lo < hi) {
    size_t mid = (lo + hi) / 2;
    uint64_t v = emit_rseq(emit_rec_at(s, mid));
    if (v == seq) return emit_rec_at(s, mid);
    if (v < seq)
      lo = mid + 1;
    else
      hi = mid;
  }
  return NULL;
}

const char *emit_stream_kind_name(int k) {
  return k == CP_STREAM_LEGACY ? "legacy" : k == CP_STREAM_PER_THREAD ? "per-thread" : "created";
}

static const char *kind_name(int k) {
  return k == CP_KIND_COOP ? "cooperative" : k == CP_KIND_GRAPH ? "graph" : "kernel";
}

static __thread const struct stack_maps *tls_maps; /* emit_use_maps */

void emit_use_maps(const struct stack_maps *m) { tls_maps = m; }

void emit_frames(struct jw *w, void *const *pcs, int n) {
  jw_arr_begin(w);
  for (int i = 0; i < n; i++) {
    struct stack_frame_info fi;
    if (tls_maps)
      stack_describe_maps(tls_maps, (uintptr_t)pcs[i], &fi);
    else
      stack_describe((uintptr_t)pcs[i], &fi);
    jw_obj_begin(w);
    jw_key(w, RK_PC);
    jw_hex(w, fi.pc);
    if (fi.module[0]) {
      jw_key(w, RK_MODULE);
      jw_str(w, fi.module);
      jw_key(w, RK_OFFSET);
      jw_hex(w, fi.offset);
    }
    if (fi.function[0]) {
      char *dn = demangle_name(fi.function);
      jw_key(w, RK_FUNCTION);
      jw_str(w, dn ? dn : fi.function);
      free(dn);
    }
    jw_obj_end(w);
  }
  jw_arr_end(w);
}

void emit_python(struct jw *w, const struct pystack_ref *py, int n) {
  jw_arr_begin(w);
  for (int i = 0; i < n; i++) {
    char file[1100], func[300];
    int line = -1;
    if (pystack_describe(&py[i], file, sizeof file, func, sizeof func, &line)) continue;
    jw_obj_begin(w);
    jw_key(w, RK_FILE);
    jw_str(w, file);
    jw_key(w, RK_FUNCTION);
    jw_str(w, func);
    if (line > 0) {
      jw_key(w, RK_LINE);
      jw_int(w, line);
    }
    jw_obj_end(w);
  }
  jw_arr_end(w);
}

void emit_python_thread(struct jw *w, const struct pystack_thread *t) {
  jw_obj_begin(w);
  jw_key(w, RK_ID);
  jw_uint(w, t->id);
  jw_key(w, RK_PYTHON);
  emit_python(w, t->refs, t->n);
  jw_obj_end(w);
}

void emit_stream_place(struct jw *w, const char *kind_key, const void *handle, int kind, const void *ctx, int device) {
  jw_key(w, RK_STREAM);
  jw_hex(w, (uintptr_t)handle);
  jw_key(w, kind_key);
  jw_str(w, emit_stream_kind_name(kind));
  jw_key(w, RK_CTX);
  jw_hex(w, (uintptr_t)ctx);
  jw_key(w, RK_DEVICE);
  jw_int(w, device);
}

/* The kernels captured into the graph a graph launch replayed, in capture order (at most MAX_NODES). */
#define MAX_NODES 64
static void emit_graph_nodes(struct jw *w, const struct cp_rec *r) {
  uint64_t after, upto, done;
  const struct cp_rec *faulted = NULL;
  int n = 0;
  if (!g_emit_snap || !graph_window(r->func, &after, &upto, &done)) return;
  jw_key(w, RK_GRAPH_NODES);
  jw_arr_begin(w);
  for (size_t i = 0; i < g_emit_snap->n && n < MAX_NODES; i++) {
    const struct cp_rec *c = emit_rec_at(g_emit_snap, i);
    uint64_t q = emit_rseq(c);
    if (q > after && q <= upto && (c->flags & CP_REC_CAPTURED) && c->kind != CP_KIND_GRAPH) {
      emit_launch(w, c);
      /* The graph's own breadcrumb names the last node that completed; the next one was running. */
      if (!faulted && done != UINT64_MAX && q > done) faulted = c;
      n++;
    }
  }
  jw_arr_end(w);
  if (faulted) {
    jw_key(w, RK_NODE);
    emit_launch(w, faulted);
    jw_key(w, RK_NODE_SOURCE);
    jw_str(w, "graph breadcrumbs");
  }
}

void emit_launch(struct jw *w, const struct cp_rec *r) {
  jw_obj_begin(w);
  jw_key(w, RK_SEQ);
  jw_uint(w, emit_rseq(r));
  jw_key(w, RK_API);
  jw_str(w, r->api);
  jw_key(w, RK_KIND);
  jw_str(w, kind_name(r->kind));
  if (r->kind == CP_KIND_GRAPH) {
    char g[48];
    snprintf(g, sizeof g, "CUDA graph %p", r->func);
    jw_key(w, RK_KERNEL);
    jw_str(w, g);
  } else if (r->name) {
    char *dn = demangle_name(r->name->mangled);
    jw_key(w, RK_KERNEL);
    jw_str(w, dn ? dn : r->name->mangled);
    jw_key(w, RK_MANGLED);
    jw_str(w, r->name->mangled);
    free(dn);
  }
  jw_key(w, RK_GRID);
  jw_arr_begin(w);
  for (int i = 0; i < 3; i++) jw_uint(w, r->grid[i]);
  jw_arr_end(w);
  jw_key(w, RK_BLOCK);
  jw_arr_begin(w);
  for (int i = 0; i < 3; i++) jw_uint(w, r->block[i]);
  jw_arr_end(w);
  if (r->flags & CP_REC_PARAMS) {
    /* what it passed its kernel: the packed buffer's first bytes as 8-byte little-endian words, and its size */
    jw_key(w, RK_PARAMS);
    jw_arr_begin(w);
    for (int i = 0; i < (r->params_len + 7) / 8; i++) jw_hex(w, r->params[i]);
    jw_arr_end(w);
    jw_key(w, RK_PARAMS_SIZE);
    jw_uint(w, r->params_size);
  }
  jw_key(w, RK_SHARED_MEM);
  jw_uint(w, r->smem);
  emit_stream_place(w, RK_STREAM_KIND, r->stream, r->stream_kind, r->ctx, r->device);
  jw_key(w, RK_THREAD);
  jw_int(w, r->tid);
  jw_key(w, RK_TIME_NS);
  jw_uint(w, ticks_to_mono_ns(r->ticks));
  if (r->flags & ~CP_REC_PARAMS) {
    jw_key(w, RK_FLAGS);
    jw_arr_begin(w);
    if (r->flags & CP_REC_CRUMB_FAILED) jw_str(w, "breadcrumb-refused");
    if (r->flags & CP_REC_RETURNED_ERROR) jw_str(w, "launch-returned-error");
    if (r->flags & CP_REC_CAPTURED) jw_str(w, "captured");
    if (r->flags & CP_REC_UNCRUMBED) jw_str(w, "no-breadcrumb");
    if (r->flags & CP_REC_RACY) jw_str(w, "concurrent-launch");
    if (r->flags & CP_REC_PY_WAITING) jw_str(w, "python-of-waiting-thread");
    jw_arr_end(w);
  }
  /* acquire: blocking mode may fill a published record's stacks when its synchronize fails (core.c,
   * take_stacks), frames first and counts last */
  uint8_t npy = __atomic_load_n(&r->npy, __ATOMIC_ACQUIRE);
  uint8_t nframes = __atomic_load_n(&r->nframes, __ATOMIC_ACQUIRE);
  if (npy) {
    jw_key(w, RK_PYTHON);
    emit_python(w, r->py, npy);
    if (r->flags & CP_REC_PY_WAITING) {
      jw_key(w, RK_PYTHON_THREAD);
      jw_uint(w, r->py_thread);
    }
  }
  jw_key(w, RK_STACK);
  emit_frames(w, r->frames, nframes);
  emit_ops_for(w, emit_rseq(r), r->tid);
  if (r->kind == CP_KIND_GRAPH) emit_graph_nodes(w, r);
  jw_obj_end(w);
}

void emit_process(struct jw *w) {
  char exe[1024];
  ssize_t k = readlink("/proc/self/exe", exe, sizeof exe - 1);
  exe[k > 0 ? k : 0] = '\0';
  jw_key(w, RK_PROCESS);
  jw_obj_begin(w);
  jw_key(w, RK_PID);
  jw_int(w, getpid());
  jw_key(w, RK_PPID);
  jw_int(w, getppid());
  jw_key(w, RK_EXE);
  jw_str(w, exe);
  /* the kernel's name of the process (its log of a GPU fault names it so: culprit run ties the two by it when the
   * log's pid is not this one's, in a container) */
  char comm[32];
  int cfd = open("/proc/self/comm", O_RDONLY | O_CLOEXEC);
  ssize_t cl = cfd >= 0 ? read(cfd, comm, sizeof comm - 1) : -1;
  if (cfd >= 0) close(cfd);
  while (cl > 0 && comm[cl - 1] == '\n') cl--;
  if (cl > 0) {
    jw_key(w, RK_COMM);
    jw_strn(w, comm, (size_t)cl);
  }
  jw_key(w, RK_ARGV);
  jw_arr_begin(w);
  /* the whole command line, so that a command printed from the report is the one that ran; past the bound (a
   * command line can be megabytes) the arguments left out are counted */
  size_t cap = 1 << 16, n = 0, total = 0;
  char *buf = malloc(cap);
  int fd = buf ? open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC) : -1;
  int cut = 0;
  while (fd >= 0) {
    if (n == cap) {
      char *more = cap < EMIT_ARGV_MAX ? realloc(buf, cap * 2) : NULL;
      if (!more) {
        cut = 1;
        break;
      }
      buf = more;
      cap *= 2;
    }
    ssize_t got = read(fd, buf + n, cap - n);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) break;
    n += (size_t)got;
  }
  if (fd >= 0 && cut) { /* count what is left out */
    char rest[4096];
    ssize_t got;
    while ((got = read(fd, rest, sizeof rest)) > 0)
      for (ssize_t i = 0; i < got; i++) total += rest[i] == '\0';
  }
  if (fd >= 0) close(fd);
  for (size_t i = 0; buf && i < n;) {
    size_t l = strnlen(buf + i, n - i);
    if (cut && i + l >= n) { /* the last one read was cut short: it is left out too */
      total++;
      break;
    }
    jw_strn(w, buf + i, l);
    i += l + 1;
  }
  free(buf);
  jw_arr_end(w);
  if (cut) {
    jw_key(w, RK_ARGV_LEFT_OUT);
    jw_uint(w, total);
  }
  char host[256] = "";
  gethostname(host, sizeof host - 1);
  jw_key(w, RK_HOSTNAME);
  jw_str(w, host);
  jw_key(w, RK_TIME_UNIX);
  jw_int(w, (long long)time(NULL));
  jw_key(w, RK_TIME_UNIX_NS);
  jw_uint(w, cp_wall_ns());
  rank_emit(w);
  jw_obj_end(w);
}

/* Makes dir and its missing parents (0700); 0 or CP_ESYS(errno). */
static int mkdirs(const char *dir) {
  char tmp[CFG_DIR_MAX];
  snprintf(tmp, sizeof tmp, "%s", dir);
  for (char *p = tmp + 1; *p; p++) {
    if (*p != '/') continue;
    *p = '\0';
    if (mkdir(tmp, 0700) && errno != EEXIST) return CP_ESYS(errno);
    *p = '/';
  }
  if (mkdir(tmp, 0700) && errno != EEXIST) return CP_ESYS(errno);
  return 0;
}

/* A name nobody can guess ahead: the report's own name, dot-prefixed, with 64 random bits. */
static void temp_name(char *out, size_t n, const char *who, const char *tag) {
  uint64_t r = 0;
  int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
  if (fd < 0 || read(fd, &r, sizeof r) != (ssize_t)sizeof r)
    r = cp_mono_ns() * 0x9E3779B97F4A7C15ull ^ (uint64_t)(uintptr_t)&r; /* no /dev/urandom: still not the pid */
  if (fd >= 0) close(fd);
  snprintf(out, n, ".culprit-%s%s.%016llx.tmp", who, tag, (unsigned long long)r);
}

static int write_file(const char *dir, const char *tag, const char *text, size_t len, char *path, unsigned pathlen) {
  char tmp[160], name[160];
  int rc = mkdirs(dir);
  if (rc) return rc;
  /* processes of a job may share one directory across hosts, and pids repeat between hosts */
  const char *host = rank_file_host();
  char who[96];
  if (host)
    snprintf(who, sizeof who, "%s-%d", host, (int)getpid());
  else
    snprintf(who, sizeof who, "%d", (int)getpid());
  snprintf(name, sizeof name, "culprit-%s%s.json", who, tag);
  snprintf(path, pathlen, "%s/%s", dir, name);
  /* The directory may be shared with other users (one directory for a job's ranks): the file is made under a
   * name nobody can guess, never through a link and never over something already there, then renamed into place
   * (a rename replaces a link planted at the final name, never what it points to). */
  int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd < 0) return CP_ESYS(errno);
  int fd = -1;
  for (int tries = 0; fd < 0 && tries < 8; tries++) {
    temp_name(tmp, sizeof tmp, who, tag);
    fd = openat(dfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0 && errno != EEXIST) break;
  }
  if (fd < 0) {
    rc = CP_ESYS(errno);
    close(dfd);
    return rc;
  }
  size_t off = 0;
  while (off < len && !rc) {
    ssize_t n = write(fd, text + off, len - off);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0)
      rc = CP_ESYS(errno);
    else if (n == 0)
      rc = CP_ESYS(EIO);
    else
      off += (size_t)n;
  }
  if (close(fd) && !rc) rc = CP_ESYS(errno); /* a full disk may say so only now */
  if (!rc && renameat(dfd, tmp, dfd, name)) rc = CP_ESYS(errno);
  if (rc) unlinkat(dfd, tmp, 0);
  close(dfd);
  return rc;
}

/* A write past the file size limit (ulimit -f) raises SIGXFSZ, whose default ends the program with a core (status
 * 153 under a shell): the report's write would kill the process it reports on and leave its temporary file. So
 * SIGXFSZ is blocked in this thread while culprit writes; the write then fails with EFBIG, the temporary file is
 * removed, and a SIGXFSZ the write raised is taken back before the program's mask is restored. */
int emit_write_file(const char *dir, const char *tag, const char *text, size_t len, char *path, unsigned pathlen) {
  sigset_t xfsz, old, before, after;
  sigemptyset(&xfsz);
  sigaddset(&xfsz, SIGXFSZ);
  pthread_sigmask(SIG_BLOCK, &xfsz, &old);
  sigpending(&before);
  int rc = write_file(dir, tag, text, len, path, pathlen);
  sigpending(&after);
  if (sigismember(&after, SIGXFSZ) && !sigismember(&before, SIGXFSZ)) {
    struct timespec none = {0, 0};
    sigtimedwait(&xfsz, NULL, &none);
  }
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  return rc;
}

void emit_stderr(const char *s) {
  size_t len = strlen(s), off = 0;
  while (off < len) {
    ssize_t n = write(2, s + off, len - off);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    off += (size_t)n;
  }
}

void emit_head(struct jw *w, const char *kind) {
  jw_key(w, RK_SCHEMA);
  jw_str(w, "culprit.report/1");
  jw_key(w, RK_KIND);
  jw_str(w, kind);
  jw_key(w, RK_TOOL);
  jw_obj_begin(w);
  jw_key(w, RK_NAME);
  jw_str(w, "culprit");
  jw_key(w, RK_VERSION);
  jw_str(w, CULPRIT_VERSION);
  jw_key(w, RK_UNWINDER);
  jw_str(w, stack_unwinder());
  jw_obj_end(w);
  emit_process(w);
}

void emit_config(struct jw *w, const struct cp_config *cfg, int mode) {
  char win[64];
  jw_key(w, RK_CONFIG);
  jw_obj_begin(w);
  jw_key(w, RK_MODE);
  jw_str(w, cfg_mode_name(mode));
  jw_key(w, RK_RING);
  jw_uint(w, cfg->ring);
  jw_key(w, RK_STACK_DEPTH);
  jw_int(w, cfg->stack_depth);
  jw_key(w, RK_KERNELS);
  jw_str(w, cfg->kernels);
  if (cfg->launch_hi == UINT64_MAX)
    snprintf(win, sizeof win, "%llu:", (unsigned long long)cfg->launch_lo);
  else
    snprintf(win, sizeof win, "%llu:%llu", (unsigned long long)cfg->launch_lo, (unsigned long long)cfg->launch_hi);
  jw_key(w, RK_LAUNCHES);
  jw_str(w, win);
  int refused = cfg->mark == CP_MARK_MEMSET ? crumb_memset_refused() : 0;
  jw_key(w, RK_MARK);
  jw_str(w, cfg->mark == CP_MARK_MEMSET && !refused ? "memset" : "write");
  if (refused) {
    jw_key(w, RK_MEMSET_REFUSED); /* the driver refused the memset mark: writes from then on */
    jw_int(w, refused);
  }
  jw_obj_end(w);
}

void emit_stats(struct jw *w, uint64_t launches, size_t records) {
  jw_key(w, RK_STATS);
  jw_obj_begin(w);
  jw_key(w, RK_LAUNCHES);
  jw_uint(w, launches);
  jw_key(w, RK_RECORDS_IN_RINGS);
  jw_uint(w, records);
  jw_key(w, RK_CRUMBS);
  jw_uint(w, crumb_written());
  jw_key(w, RK_CRUMB_FAILURES);
  jw_uint(w, crumb_failures());
  jw_key(w, RK_RING_OVERWRITTEN);
  jw_uint(w, ring_total_overwritten());
  jw_key(w, RK_THREADS);
  jw_int(w, ring_count());
  jw_obj_end(w);
}

void emit_verdict(struct jw *w, const char *certainty, const char *reason, uint64_t first, uint64_t last) {
  jw_key(w, RK_VERDICT);
  jw_obj_begin(w);
  jw_key(w, RK_CERTAINTY);
  jw_str(w, certainty);
  jw_key(w, RK_REASON);
  jw_str(w, reason);
  if (first) {
    jw_key(w, RK_WINDOW);
    jw_obj_begin(w);
    jw_key(w, RK_FIRST);
    jw_uint(w, first);
    jw_key(w, RK_LAST);
    jw_uint(w, last);
    jw_obj_end(w);
  }
  jw_obj_end(w);
}
