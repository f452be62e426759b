/* The verdict and the report. After a sticky error every driver call fails, but host memory is still
 * readable: each stream's breadcrumb holds the last launch that completed on it, and each launch record links to
 * the previous launch on its stream, so the first launch after the breadcrumb is the one that was running.
 * One stream with unfinished work gives an exact culprit; several give candidates. */
#define _GNU_SOURCE
#include "verdict.h"

#include "config.h"
#include "crumb.h"
#include "graphs.h"
#include "driver.h"
#include "names.h"
#include "ring.h"
#include "../report/demangle.h"
#include "../report/jsonw.h"
#include "../report/render.h"
#include "../stack/pystack.h"
#include "../stack/stack.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define MAX_CANDIDATES 64
#define MAX_STREAMS_LISTED 64

extern char **environ;

struct snap {
  struct cp_rec *recs;            /* records sorted by seq */
  size_t n;                       /* count */
  size_t rs;                      /* bytes per record */
};

static struct cp_rec *rec_at(const struct snap *s, size_t i) {
  return (struct cp_rec *)((unsigned char *)s->recs + i * s->rs);
}

static uint64_t rseq(const struct cp_rec *r) { return atomic_load_explicit(&r->seq, memory_order_relaxed); }

static struct cp_rec *find_seq(const struct snap *s, uint64_t seq) {
  size_t lo = 0, hi = s->n;
  while (lo < hi) {
    size_t mid = (lo + hi) / 2;
    uint64_t v = rseq(rec_at(s, mid));
    if (v == seq) return rec_at(s, mid);
    if (v < seq) lo = mid + 1;
    else hi = mid;
  }
  return NULL;
}

static const char *stream_kind_name(int k) {
  return k == CP_STREAM_LEGACY ? "legacy" : k == CP_STREAM_PER_THREAD ? "per-thread" : "created";
}

static const char *kind_name(int k) {
  return k == CP_KIND_COOP ? "cooperative" : k == CP_KIND_GRAPH ? "graph" : "kernel";
}

static void emit_frames(struct jw *w, void *const *pcs, int n) {
  jw_arr_begin(w);
  for (int i = 0; i < n; i++) {
    struct stack_frame_info fi;
    stack_describe((uintptr_t)pcs[i], &fi);
    jw_obj_begin(w);
    jw_key(w, "pc");
    jw_hex(w, fi.pc);
    if (fi.module[0]) {
      jw_key(w, "module");
      jw_str(w, fi.module);
      jw_key(w, "offset");
      jw_hex(w, fi.offset);
    }
    if (fi.function[0]) {
      char *dn = demangle_name(fi.function);
      jw_key(w, "function");
      jw_str(w, dn ? dn : fi.function);
      free(dn);
    }
    jw_obj_end(w);
  }
  jw_arr_end(w);
}

static void emit_python(struct jw *w, const struct pystack_ref *py, int n) {
  jw_arr_begin(w);
  for (int i = 0; i < n; i++) {
    char file[1100], func[300];
    int line = -1;
    if (pystack_describe(&py[i], file, sizeof file, func, sizeof func, &line)) continue;
    jw_obj_begin(w);
    jw_key(w, "file");
    jw_str(w, file);
    jw_key(w, "function");
    jw_str(w, func);
    if (line > 0) {
      jw_key(w, "line");
      jw_int(w, line);
    }
    jw_obj_end(w);
  }
  jw_arr_end(w);
}

static const struct snap *g_snap;             /* the snapshot being reported (graph nodes are looked up in it) */

static void emit_launch(struct jw *w, const struct cp_rec *r);

/* The kernels captured into the graph a graph launch replayed, in capture order (at most MAX_NODES). */
#define MAX_NODES 64
static void emit_graph_nodes(struct jw *w, const struct cp_rec *r) {
  uint64_t after, upto, done;
  const struct cp_rec *faulted = NULL;
  int n = 0;
  if (!g_snap || !graph_window(r->func, &after, &upto, &done)) return;
  jw_key(w, "graph_nodes");
  jw_arr_begin(w);
  for (size_t i = 0; i < g_snap->n && n < MAX_NODES; i++) {
    const struct cp_rec *c = rec_at(g_snap, i);
    uint64_t q = rseq(c);
    if (q > after && q <= upto && (c->flags & CP_REC_CAPTURED) && c->kind != CP_KIND_GRAPH) {
      emit_launch(w, c);
      /* The graph's own breadcrumb names the last node that completed; the next one was running. */
      if (!faulted && done != UINT64_MAX && q > done) faulted = c;
      n++;
    }
  }
  jw_arr_end(w);
  if (faulted) {
    jw_key(w, "node");
    emit_launch(w, faulted);
    jw_key(w, "node_source");
    jw_str(w, "graph breadcrumbs");
  }
}

static void emit_launch(struct jw *w, const struct cp_rec *r) {
  jw_obj_begin(w);
  jw_key(w, "seq");
  jw_uint(w, rseq(r));
  jw_key(w, "api");
  jw_str(w, r->api);
  jw_key(w, "kind");
  jw_str(w, kind_name(r->kind));
  if (r->kind == CP_KIND_GRAPH) {
    char g[48];
    snprintf(g, sizeof g, "CUDA graph %p", r->func);
    jw_key(w, "kernel");
    jw_str(w, g);
  } else if (r->name) {
    char *dn = demangle_name(r->name->mangled);
    jw_key(w, "kernel");
    jw_str(w, dn ? dn : r->name->mangled);
    jw_key(w, "mangled");
    jw_str(w, r->name->mangled);
    free(dn);
  }
  jw_key(w, "grid");
  jw_arr_begin(w);
  for (int i = 0; i < 3; i++) jw_uint(w, r->grid[i]);
  jw_arr_end(w);
  jw_key(w, "block");
  jw_arr_begin(w);
  for (int i = 0; i < 3; i++) jw_uint(w, r->block[i]);
  jw_arr_end(w);
  jw_key(w, "shared_mem");
  jw_uint(w, r->smem);
  jw_key(w, "stream");
  jw_hex(w, (uintptr_t)r->stream);
  jw_key(w, "stream_kind");
  jw_str(w, stream_kind_name(r->stream_kind));
  jw_key(w, "ctx");
  jw_hex(w, (uintptr_t)r->ctx);
  jw_key(w, "device");
  jw_int(w, r->device);
  jw_key(w, "thread");
  jw_int(w, r->tid);
  jw_key(w, "time_ns");
  jw_uint(w, r->time_ns);
  if (r->flags) {
    jw_key(w, "flags");
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
    jw_key(w, "python");
    emit_python(w, r->py, npy);
    if (r->flags & CP_REC_PY_WAITING) {
      jw_key(w, "python_thread");
      jw_uint(w, r->py_thread);
    }
  }
  jw_key(w, "stack");
  emit_frames(w, r->frames, nframes);
  if (r->kind == CP_KIND_GRAPH) emit_graph_nodes(w, r);
  jw_obj_end(w);
}

struct pick {
  const struct cp_rec *culprit;              /* exact culprit, or the first candidate */
  const struct cp_rec *cand[MAX_CANDIDATES]; /* candidates when not exact */
  int ncand;                                 /* entries in cand */
  uint64_t win_lo, win_hi;                   /* launch numbers spanned by the candidates */
  int truncated;                             /* more candidates than cand holds */
  int nsuspects;                             /* candidates found, listed or not */
  const char *certainty;                     /* exact | candidates | unknown */
  char reason[512];                          /* one sentence for the user */
};

static void add_cand(struct pick *p, const struct cp_rec *r) {
  uint64_t q = rseq(r);
  for (int i = 0; i < p->ncand; i++)
    if (p->cand[i] == r) return;
  if (!p->win_lo || q < p->win_lo) p->win_lo = q;
  if (q > p->win_hi) p->win_hi = q;
  p->nsuspects++;
  if (p->ncand < MAX_CANDIDATES) p->cand[p->ncand++] = r;
  else p->truncated = 1;
}

static int usable(const struct cp_rec *r) { return !(r->flags & (CP_REC_CAPTURED | CP_REC_RETURNED_ERROR)); }

/* The suspects of one stream: its launches after the last one known complete, up to and including the first
 * whose breadcrumb was queued (had that one completed, its breadcrumb would show it). Without breadcrumbs every
 * launch after the last successful synchronize is a suspect. Returns how many were added; sets *lost when the
 * first suspect's record was overwritten. */
static int stream_suspects(const struct snap *s, uint32_t idx, const struct cp_stream *st, uint64_t done,
                           struct pick *p, int *lost) {
  int added = 0;
  for (size_t i = 0; i < s->n; i++) {
    const struct cp_rec *r = rec_at(s, i);
    if (r->stream_idx != idx || rseq(r) <= done || !usable(r)) continue;
    if (!added && r->prev > done) {
      *lost = 1;                              /* the first unfinished launch is gone from the ring: anything */
      return 0;                               /* listed from here on would be a later, innocent launch */
    }
    add_cand(p, r);
    added++;
    /* The first launch whose breadcrumb was queued ends the list: what follows it on the stream had not
     * started. Not so when it raced another thread's launch on the same stream (their order is unknown). */
    if (st->slot && !(r->flags & (CP_REC_CRUMB_FAILED | CP_REC_UNCRUMBED | CP_REC_RACY))) break;
  }
  return added;
}

static void decide(const struct verdict_input *in, const struct snap *s, struct pick *p) {
  memset(p, 0, sizeof *p);
  int pending = 0, lost = 0, blind = 0, refused = 0;
  char lost_note[200] = "";
  for (uint32_t i = 0; i < crumb_capacity(); i++) {
    struct cp_stream *st = crumb_at(i);
    if (!atomic_load_explicit(&st->key_stream, memory_order_acquire)) continue;
    if (atomic_load_explicit(&st->gone, memory_order_relaxed)) continue; /* its context no longer exists */
    uint64_t last = atomic_load_explicit(&st->last_launched, memory_order_relaxed);
    uint64_t done = crumb_done(st);
    if (last <= in->after_seq || done >= last) continue; /* all its work completed */
    pending++;
    int was_lost = 0, before = p->ncand;
    int n = stream_suspects(s, i, st, done, p, &was_lost);
    if (!st->slot) blind++;
    for (int k = before; k < p->ncand; k++)
      if (p->cand[k]->flags & CP_REC_CRUMB_FAILED) refused++;
    if (was_lost || n == 0) {
      lost++;
      snprintf(lost_note, sizeof lost_note,
               "the launch after #%llu on stream 0x%lx is no longer in the ring (CULPRIT_RING=%u per thread)",
               (unsigned long long)done, (unsigned long)(uintptr_t)st->handle, in->cfg->ring);
    }
  }
  /* A launch culprit did not track, not proven complete since by a synchronize, may be the one. */
  if (in->untracked_pending && p->ncand >= 1) {
    p->culprit = p->cand[0];
    p->certainty = "candidates";
    snprintf(p->reason, sizeof p->reason,
             "%d launch(es) listed had unfinished work, but launches culprit did not record (made while "
             "recording was paused, or on a stream it could not track) may have faulted instead",
             p->ncand);
    return;
  }
  if (in->exact_seq) {
    /* Blocking mode synchronized right after this launch and got the error. Another stream's kernel may have
     * faulted meanwhile (the error is the context's), so the breadcrumbs still have the last word. */
    const struct cp_rec *b = find_seq(s, in->exact_seq);
    int at = -1;
    for (int i = 0; b && i < p->ncand; i++)
      if (p->cand[i] == b) at = i;
    if (b && at >= 0 && p->ncand == 1 && !lost) {
      p->culprit = b;
      p->ncand = 0;
      p->certainty = "exact";
      snprintf(p->reason, sizeof p->reason,
               "blocking mode synchronized right after launch #%llu, the device reported the error there, and "
               "no other work was unfinished",
               (unsigned long long)in->exact_seq);
      return;
    }
    if (b && at > 0) {                        /* list the synchronized launch first */
      p->cand[at] = p->cand[0];
      p->cand[0] = b;
    }
  }
  if (p->ncand == 1 && pending == 1 && !lost) {
    p->culprit = p->cand[0];
    p->ncand = 0;
    p->certainty = "exact";
    snprintf(p->reason, sizeof p->reason,
             "launch #%llu was the only unfinished work: its stream had completed launch #%llu before it",
             (unsigned long long)rseq(p->culprit), (unsigned long long)p->culprit->prev);
    return;
  }
  if (p->ncand == 0 && !lost) {
    /* No unfinished work seen: under CUDA_LAUNCH_BLOCKING the faulting launch returns the error itself.
     * Without it, a launch returning the error only reports an earlier fault culprit did not see. */
    for (size_t i = in->launch_blocking && !in->untracked_pending ? s->n : 0; i-- > 0;) {
      struct cp_rec *r = rec_at(s, i);
      if (r->flags & CP_REC_RETURNED_ERROR) {
        p->culprit = r;
        p->certainty = "exact";
        snprintf(p->reason, sizeof p->reason,
                 "no stream had unfinished work and launch #%llu itself returned the error (launches were "
                 "synchronous)",
                 (unsigned long long)rseq(r));
        return;
      }
    }
    p->certainty = "unknown";
    snprintf(p->reason, sizeof p->reason,
             "no recorded launch was unfinished; the fault may come from work culprit does not see (a library "
             "that bypasses the driver entry points, or work queued before culprit was loaded)");
    return;
  }
  p->culprit = p->ncand ? p->cand[0] : NULL;
  p->certainty = (lost || p->truncated) ? "unknown" : "candidates";
  int k = 0;
  if (blind)
    k += snprintf(p->reason + k, sizeof p->reason - (size_t)k,
                  "breadcrumbs were unavailable on %d stream(s), so every launch after the last successful "
                  "synchronize is a suspect; ",
                  blind);
  if (refused && k < (int)sizeof p->reason)
    k += snprintf(p->reason + k, sizeof p->reason - (size_t)k,
                  "%d suspect(s) had their breadcrumb refused by the driver; ", refused);
  if (p->truncated && k < (int)sizeof p->reason)
    k += snprintf(p->reason + k, sizeof p->reason - (size_t)k,
                  "%d stream(s) had unfinished work when the fault surfaced and one of %d suspect launches "
                  "(#%llu..#%llu) faulted; only the first %d are listed",
                  pending, p->nsuspects, (unsigned long long)p->win_lo, (unsigned long long)p->win_hi,
                  MAX_CANDIDATES);
  else if (k < (int)sizeof p->reason)
    k += snprintf(p->reason + k, sizeof p->reason - (size_t)k,
                  "%d stream(s) had unfinished work when the fault surfaced and one of the %d launch(es) listed "
                  "faulted",
                  pending, p->ncand);
  if (lost && k < (int)sizeof p->reason) snprintf(p->reason + k, sizeof p->reason - (size_t)k, "; %s", lost_note);
}

static void emit_process(struct jw *w) {
  char exe[1024];
  ssize_t k = readlink("/proc/self/exe", exe, sizeof exe - 1);
  exe[k > 0 ? k : 0] = '\0';
  jw_key(w, "process");
  jw_obj_begin(w);
  jw_key(w, "pid");
  jw_int(w, getpid());
  jw_key(w, "ppid");
  jw_int(w, getppid());
  jw_key(w, "exe");
  jw_str(w, exe);
  jw_key(w, "argv");
  jw_arr_begin(w);
  int fd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
  if (fd >= 0) {
    char buf[8192];
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    for (ssize_t i = 0; n > 0 && i < n;) {
      size_t l = strnlen(buf + i, (size_t)(n - i));
      jw_strn(w, buf + i, l);
      i += (ssize_t)l + 1;
    }
  }
  jw_arr_end(w);
  char host[256] = "";
  gethostname(host, sizeof host - 1);
  jw_key(w, "hostname");
  jw_str(w, host);
  jw_key(w, "time_unix");
  jw_int(w, (long long)time(NULL));
  jw_obj_end(w);
}

static int mkdirs(const char *dir) {
  char tmp[CFG_DIR_MAX];
  snprintf(tmp, sizeof tmp, "%s", dir);
  for (char *p = tmp + 1; *p; p++) {
    if (*p != '/') continue;
    *p = '\0';
    if (mkdir(tmp, 0700) && errno != EEXIST) return -1;
    *p = '/';
  }
  if (mkdir(tmp, 0700) && errno != EEXIST) return -1;
  return 0;
}

static int write_file(const char *dir, const char *text, size_t len, char *path, unsigned pathlen) {
  char tmp[CFG_DIR_MAX + 96];
  int rc = -1, fd;
  if (mkdirs(dir)) return -1;
  snprintf(path, pathlen, "%s/culprit-%d.json", dir, (int)getpid());
  snprintf(tmp, sizeof tmp, "%s/.culprit-%d.json.tmp", dir, (int)getpid());
  fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return -1;
  size_t off = 0;
  while (off < len) {
    ssize_t n = write(fd, text + off, len - off);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) goto out;
    off += (size_t)n;
  }
  if (rename(tmp, path) == 0) rc = 0;
out:
  close(fd);
  if (rc) unlink(tmp);
  return rc;
}

static void put_stderr(const char *s) {
  size_t len = strlen(s), off = 0;
  while (off < len) {
    ssize_t n = write(2, s + off, len - off);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    off += (size_t)n;
  }
}

int verdict_emit(const struct verdict_input *in, char *path, unsigned pathlen) {
  struct snap s = {0};
  struct pick p;
  struct jw w;
  const char *ename = NULL, *estr = NULL;
  int rc = -1;

  path[0] = '\0';
  s.recs = ring_snapshot(in->after_seq, &s.n, &s.rs);
  g_snap = &s;
  decide(in, &s, &p);
  if (cp_drv.get_error_name) cp_drv.get_error_name(in->code, &ename);
  if (cp_drv.get_error_string) cp_drv.get_error_string(in->code, &estr);

  jw_init(&w);
  jw_obj_begin(&w);
  jw_key(&w, "schema");
  jw_str(&w, "culprit.report/1");
  jw_key(&w, "tool");
  jw_obj_begin(&w);
  jw_key(&w, "name");
  jw_str(&w, "culprit");
  jw_key(&w, "version");
  jw_str(&w, CULPRIT_VERSION);
  jw_key(&w, "unwinder");
  jw_str(&w, stack_unwinder());
  jw_obj_end(&w);
  emit_process(&w);
  jw_key(&w, "python_status");
  jw_str(&w, pystack_status());
  jw_key(&w, "config");
  jw_obj_begin(&w);
  jw_key(&w, "mode");
  jw_str(&w, cfg_mode_name(in->mode));
  jw_key(&w, "ring");
  jw_uint(&w, in->cfg->ring);
  jw_key(&w, "stack_depth");
  jw_int(&w, in->cfg->stack_depth);
  jw_key(&w, "kernels");
  jw_str(&w, in->cfg->kernels);
  char win[64];
  if (in->cfg->launch_hi == UINT64_MAX) snprintf(win, sizeof win, "%llu:", (unsigned long long)in->cfg->launch_lo);
  else snprintf(win, sizeof win, "%llu:%llu", (unsigned long long)in->cfg->launch_lo,
                (unsigned long long)in->cfg->launch_hi);
  jw_key(&w, "launches");
  jw_str(&w, win);
  jw_obj_end(&w);

  jw_key(&w, "error");
  jw_obj_begin(&w);
  jw_key(&w, "code");
  jw_int(&w, in->code);
  jw_key(&w, "name");
  jw_str(&w, ename ? ename : "CUDA_ERROR_UNKNOWN_STICKY");
  jw_key(&w, "message");
  jw_str(&w, estr ? estr : "");
  jw_key(&w, "api");
  jw_str(&w, in->api);
  jw_key(&w, "thread");
  jw_int(&w, in->tid);
  jw_key(&w, "time_ns");
  jw_uint(&w, in->time_ns);
  if (in->npy) {
    jw_key(&w, "python");
    emit_python(&w, in->py, in->npy);
  }
  jw_key(&w, "stack");
  emit_frames(&w, in->frames, in->nframes);
  jw_obj_end(&w);

  jw_key(&w, "verdict");
  jw_obj_begin(&w);
  jw_key(&w, "certainty");
  jw_str(&w, p.certainty);
  jw_key(&w, "reason");
  jw_str(&w, p.reason);
  if (p.win_lo) {
    jw_key(&w, "window");
    jw_obj_begin(&w);
    jw_key(&w, "first");
    jw_uint(&w, p.win_lo);
    jw_key(&w, "last");
    jw_uint(&w, p.win_hi);
    jw_obj_end(&w);
  }
  jw_obj_end(&w);

  jw_key(&w, "culprit");
  if (p.culprit && !strcmp(p.certainty, "exact")) emit_launch(&w, p.culprit);
  else jw_null(&w);
  jw_key(&w, "candidates");
  jw_arr_begin(&w);
  for (int i = 0; i < p.ncand; i++) emit_launch(&w, p.cand[i]);
  jw_arr_end(&w);

  /* History: the launches before the culprit (or first candidate) on its stream, oldest first. */
  jw_key(&w, "history");
  jw_arr_begin(&w);
  if (p.culprit) {
    const struct cp_rec *chain[REPORT_HISTORY];
    int nc = 0;
    uint64_t prev = p.culprit->prev;
    while (prev > in->after_seq && nc < REPORT_HISTORY) {
      const struct cp_rec *r = find_seq(&s, prev);
      if (!r) break;
      chain[nc++] = r;
      prev = r->prev;
    }
    while (nc-- > 0) emit_launch(&w, chain[nc]);
  }
  jw_arr_end(&w);

  /* A culprit launched by a thread without Python (PyTorch's autograd engine runs backward() on its own
   * threads): the Python threads' stacks at this moment show the line waiting on that work. */
  const struct cp_rec *who = p.culprit ? p.culprit : (p.ncand ? p.cand[0] : NULL);
  if (who && who->npy == 0) {
    static struct pystack_thread threads[8];  /* report time runs once per process */
    int nt = pystack_other_threads(threads, 8);
    if (nt > 0) {
      jw_key(&w, "python_threads");
      jw_arr_begin(&w);
      for (int i = nt - 1; i >= 0; i--) {     /* the interpreter lists the newest first; the main thread last */
        jw_obj_begin(&w);
        jw_key(&w, "id");
        jw_uint(&w, threads[i].id);
        jw_key(&w, "python");
        emit_python(&w, threads[i].refs, threads[i].n);
        jw_obj_end(&w);
      }
      jw_arr_end(&w);
    }
  }

  jw_key(&w, "streams");
  jw_arr_begin(&w);
  int listed = 0;
  for (uint32_t i = 0; i < crumb_capacity() && listed < MAX_STREAMS_LISTED; i++) {
    struct cp_stream *st = crumb_at(i);
    if (!atomic_load_explicit(&st->key_stream, memory_order_acquire)) continue;
    if (atomic_load_explicit(&st->gone, memory_order_relaxed)) continue;
    uint64_t last = atomic_load_explicit(&st->last_launched, memory_order_relaxed);
    if (last <= in->after_seq) continue;
    listed++;
    jw_obj_begin(&w);
    jw_key(&w, "stream");
    jw_hex(&w, (uintptr_t)st->handle);
    jw_key(&w, "kind");
    jw_str(&w, stream_kind_name(st->kind));
    jw_key(&w, "ctx");
    jw_hex(&w, (uintptr_t)st->ctx);
    jw_key(&w, "device");
    jw_int(&w, st->device);
    jw_key(&w, "launches");
    jw_uint(&w, atomic_load_explicit(&st->launches, memory_order_relaxed));
    jw_key(&w, "last_launched");
    jw_uint(&w, last);
    jw_key(&w, "crumbs");
    jw_bool(&w, st->slot != NULL);
    if (st->slot) {
      uint64_t done = *st->slot;
      jw_key(&w, "last_completed");
      jw_uint(&w, done);
      jw_key(&w, "pending");
      jw_bool(&w, done < last);
    }
    jw_key(&w, "destroyed");
    jw_bool(&w, atomic_load_explicit(&st->dead, memory_order_relaxed));
    jw_obj_end(&w);
  }
  jw_arr_end(&w);

  jw_key(&w, "stats");
  jw_obj_begin(&w);
  jw_key(&w, "launches");
  jw_uint(&w, in->launches);
  jw_key(&w, "records_in_rings");
  jw_uint(&w, s.n);
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

  if (!w.err) rc = write_file(in->cfg->dir, w.buf, w.len, path, pathlen);
  if (rc) path[0] = '\0';

  struct render_opts ro = {.brief = in->cfg->quiet, .path = rc ? NULL : path};
  char *text = w.err ? NULL : render_text_opts(w.buf, w.len, &ro, NULL, 0);
  if (text) {
    put_stderr(text);
    free(text);
  } else {
    char line[CFG_DIR_MAX + 256];
    snprintf(line, sizeof line, "culprit: %s (%d) surfaced in %s; report: %s\n",
             ename ? ename : "sticky CUDA error", in->code, in->api, rc ? "not written" : path);
    put_stderr(line);
  }
  if (rc) {
    char line[CFG_DIR_MAX + 160];
    snprintf(line, sizeof line, "culprit: could not write the report into %s: %s\n", in->cfg->dir,
             strerror(errno));
    put_stderr(line);
  }
  jw_free(&w);
  g_snap = NULL;
  free(s.recs);
  return rc;
}
