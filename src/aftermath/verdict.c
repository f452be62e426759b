/* The verdict and the report. After a sticky error every driver call fails, but host memory is still
 * readable: each stream's breadcrumb holds the last launch that completed on it, and each launch record links to
 * the previous launch on its stream, so the first launch after the breadcrumb is the one that was running.
 * One stream with unfinished work gives an exact culprit; several give candidates. */
#define _GNU_SOURCE
#include "verdict.h"

#include "printflush.h"

#include "../base/config.h"
#include "../core/crumb.h"
#include "../core/errors.h"
#include "../core/graphs.h"
#include "../core/driver.h"
#include "emit.h"
#include "emit_streams.h"
#include "emit_allocs.h"
#include "../core/names.h"
#include "emit_ops.h"
#include "errfile.h"
#include "errtext.h"
#include "../core/ring.h"
#include "suspects.h"
#include "../base/demangle.h"
#include "../base/jsonw.h"
#include "../render/render.h"
#include "../stack/pystack.h"
#include "../stack/stack.h"
#include "../render/report_keys.h"

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
  uint64_t q = emit_rseq(r);
  for (int i = 0; i < p->ncand; i++)
    if (p->cand[i] == r) return;
  if (!p->win_lo || q < p->win_lo) p->win_lo = q;
  if (q > p->win_hi) p->win_hi = q;
  p->nsuspects++;
  if (p->ncand < MAX_CANDIDATES)
    p->cand[p->ncand++] = r;
  else
    p->truncated = 1;
}

static void add_suspect(void *arg, const struct cp_rec *r) { add_cand(arg, r); }

/* The suspects of one stream, by the rule in suspects.c. Returns how many were added; sets *lost when the first
 * suspect's record was overwritten. */
static int stream_suspects(const struct emit_snap *s, uint32_t idx, const struct cp_stream *st, uint64_t done,
                           struct pick *p, int *lost) {
  struct suspects_recs sr = {s->recs, s->n, s->rs};
  return suspects_of_stream(&sr, idx, st, done, add_suspect, p, lost);
}

static void decide(const struct verdict_input *in, const struct emit_snap *s, struct pick *p) {
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
    const struct cp_rec *b = emit_find_seq(s, in->exact_seq);
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
    if (b && at > 0) { /* list the synchronized launch first */
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
             (unsigned long long)emit_rseq(p->culprit), (unsigned long long)p->culprit->prev);
    return;
  }
  if (p->ncand == 0 && !lost) {
    /* No unfinished work seen: under CUDA_LAUNCH_BLOCKING the faulting launch returns the error itself.
     * Without it, a launch returning the error only reports an earlier fault culprit did not see. */
    for (size_t i = in->launch_blocking && !in->untracked_pending ? s->n : 0; i-- > 0;) {
      struct cp_rec *r = emit_rec_at(s, i);
      if (r->flags & CP_REC_RETURNED_ERROR) {
        p->culprit = r;
        p->certainty = "exact";
        snprintf(p->reason, sizeof p->reason,
                 "no stream had unfinished work and launch #%llu itself returned the error (launches were "
                 "synchronous)",
                 (unsigned long long)emit_rseq(r));
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
                  pending, p->nsuspects, (unsigned long long)p->win_lo, (unsigned long long)p->win_hi, MAX_CANDIDATES);
  else if (k < (int)sizeof p->reason)
    k += snprintf(p->reason + k, sizeof p->reason - (size_t)k,
                  "%d stream(s) had unfinished work when the fault surfaced and one of the %d launch(es) listed "
                  "faulted",
                  pending, p->ncand);
  if (lost && k < (int)sizeof p->reason) snprintf(p->reason + k, sizeof p->reason - (size_t)k, "; %s", lost_note);
}

/* The error's object (code, name, text, the API it surfaced in, the thread and its stacks) and the flush of the
 * kernels' printf buffer when there was one. */
static void verdict_error(struct jw *w, const struct verdict_input *in, const char *ename, const char *estr) {
  jw_key(w, RK_ERROR);
  jw_obj_begin(w);
  jw_key(w, RK_CODE);
  jw_int(w, in->code);
  jw_key(w, RK_NAME);
  jw_str(w, ename ? ename : "CUDA_ERROR_UNKNOWN_STICKY");
  jw_key(w, RK_MESSAGE);
  jw_str(w, estr ? estr : "");
  jw_key(w, RK_API);
  jw_str(w, in->api);
  jw_key(w, RK_THREAD);
  jw_int(w, in->tid);
  jw_key(w, RK_TIME_NS);
  jw_uint(w, in->time_ns);
  jw_key(w, RK_TIME_UNIX_NS);
  jw_uint(w, in->time_unix_ns);
  if (in->npy) {
    jw_key(w, RK_PYTHON);
    emit_python(w, in->py, in->npy);
  }
  jw_key(w, RK_STACK);
  emit_frames(w, in->frames, in->nframes);
  jw_obj_end(w);
  if (in->printf_flush && in->printf_flush->call) {
    jw_key(w, RK_PRINTF_FLUSH);
    jw_obj_begin(w);
    jw_key(w, RK_CALL);
    jw_str(w, in->printf_flush->call);
    jw_key(w, RK_RESULT);
    jw_int(w, in->printf_flush->result);
    jw_obj_end(w);
  }
}

static void verdict_history(struct jw *w, const struct verdict_input *in, const struct emit_snap *s,
                            const struct pick *p) {
  /* History: the launches before the culprit (or first candidate) on its stream, oldest first. */
  jw_key(w, RK_HISTORY);
  jw_arr_begin(w);
  if (p->culprit) {
    const struct cp_rec *chain[REPORT_HISTORY];
    int nc = 0;
    uint64_t prev = p->culprit->prev;
    while (prev > in->after_seq && nc < REPORT_HISTORY) {
      const struct cp_rec *r = emit_find_seq(s, prev);
      if (!r) break;
      chain[nc++] = r;
      prev = r->prev;
    }
    while (nc-- > 0) emit_launch(w, chain[nc]);
  }
  jw_arr_end(w);
}

static void verdict_python_threads(struct jw *w, const struct pick *p) {
  /* A culprit launched by a thread without Python (PyTorch's autograd engine runs backward() on its own
   * threads): the Python threads' stacks at this moment show the line waiting on that work. */
  const struct cp_rec *who = p->culprit ? p->culprit : (p->ncand ? p->cand[0] : NULL);
  if (who && who->npy == 0) {
    static struct pystack_thread threads[8]; /* report time runs once per process */
    int nt = pystack_other_threads(threads, 8);
    if (nt > 0) {
      jw_key(w, RK_PYTHON_THREADS);
      jw_arr_begin(w);
      for (int i = nt - 1; i >= 0; i--) { /* the interpreter lists the newest first; the main thread last */
        emit_python_thread(w, &threads[i]);
      }
      jw_arr_end(w);
    }
  }
}

/* The streams with work launched since the process started recording, with their breadcrumbs. */
static void verdict_streams(struct jw *w, const struct verdict_input *in) {
  jw_key(w, RK_STREAMS);
  jw_arr_begin(w);
  int listed = 0;
  for (uint32_t i = 0; i < crumb_capacity() && listed < MAX_STREAMS_LISTED; i++) {
    struct cp_stream *st = crumb_at(i);
    if (!atomic_load_explicit(&st->key_stream, memory_order_acquire)) continue;
    if (atomic_load_explicit(&st->gone, memory_order_relaxed)) continue;
    uint64_t last = atomic_load_explicit(&st->last_launched, memory_order_relaxed);
    if (last <= in->after_seq) continue;
    listed++;
    jw_obj_begin(w);
    emit_stream_fields(w, st, last);
    if (st->slot) {
      uint64_t done = crumb_slot_value(st->slot, last);
      jw_key(w, RK_LAST_COMPLETED);
      jw_uint(w, done);
      jw_key(w, RK_PENDING);
      jw_bool(w, done < last);
    }
    jw_key(w, RK_DESTROYED);
    jw_bool(w, atomic_load_explicit(&st->dead, memory_order_relaxed));
    jw_obj_end(w);
  }
  jw_arr_end(w);
}

/* Says the verdict on stderr (whole, or the one-line notice with the report's path) and why no report was
 * written when none was (rc from emit_write_file). */
static void verdict_tell(const struct verdict_input *in, const struct jw *w, int rc, const char *path,
                         const char *ename) {
  /* a verdict no file holds is printed whole, even where culprit run asked for the one-line notice */
  struct render_opts ro = {.brief = in->cfg->quiet && !rc, .path = rc ? NULL : path};
  char *text = w->err ? NULL : render_text_opts(w->buf, w->len, &ro, NULL, 0);
  if (text) {
    emit_stderr(text);
    free(text);
  } else {
    char line[CFG_DIR_MAX + 256];
    snprintf(line, sizeof line, "culprit: %s (%d) surfaced in %s; report: %s\n", ename ? ename : "sticky CUDA error",
             in->code, in->api, rc ? "not written" : path);
    emit_stderr(line);
  }
  if (rc) {
    char line[CFG_DIR_MAX + 160];
    snprintf(line, sizeof line, "culprit: could not write the report into %s: %s\n", in->cfg->dir,
             CP_IS_ESYS(rc) ? strerror(CP_SYS_ERRNO(rc)) : "out of memory");
    emit_stderr(line);
  }
}

int verdict_emit(const struct verdict_input *in, char *path, unsigned pathlen) {
  struct emit_snap s = {0};
  struct pick p;
  struct jw w;
  const char *ename = NULL, *estr = NULL;
  int rc = -1;

  path[0] = '\0';
  s.recs = ring_snapshot(in->after_seq, &s.n, &s.rs);
  emit_set_snap(&s);
  decide(in, &s, &p);
  if (cp_drv.get_error_name) cp_drv.get_error_name(in->code, &ename);
  if (cp_drv.get_error_string) cp_drv.get_error_string(in->code, &estr);

  jw_init(&w);
  jw_obj_begin(&w);
  emit_head(&w, "fault");
  jw_key(&w, RK_PYTHON_STATUS);
  jw_str(&w, pystack_status());
  emit_config(&w, in->cfg, in->mode);

  verdict_error(&w, in, ename, estr);

  emit_verdict(&w, p.certainty, p.reason, p.win_lo, p.win_hi);

  jw_key(&w, RK_CULPRIT);
  if (p.culprit && !strcmp(p.certainty, "exact"))
    emit_launch(&w, p.culprit);
  else
    jw_null(&w);
  jw_key(&w, RK_CANDIDATES);
  jw_arr_begin(&w);
  for (int i = 0; i < p.ncand; i++) emit_launch(&w, p.cand[i]);
  jw_arr_end(&w);

  verdict_history(&w, in, &s, &p);

  verdict_python_threads(&w, &p);

  verdict_streams(&w, in);

  emit_ops_diagnosis(&w);
  emit_allocs(&w);
  emit_stats(&w, in->launches, s.n);
  jw_obj_end(&w);

  if (!w.err) rc = emit_write_file(in->cfg->dir, "", w.buf, w.len, path, pathlen);
  if (rc) path[0] = '\0';
  if (!w.err) { /* the verdict where the program's own error handling looks: its error text, torchrun's file */
    errtext_verdict(in->code, w.buf, w.len, path);
    errfile_verdict(in->code, ename, estr, w.buf, w.len, path);
  }

  verdict_tell(in, &w, rc, path, ename);
  jw_free(&w);
  emit_set_snap(NULL);
  free(s.recs);
  return rc;
}
