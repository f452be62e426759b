/* The hang report's decision (hang_pick.h): a stream is pending when its last launch is newer than the last one
 * known complete; the launches after that one are its suspects, and one pending stream with one suspect names the
 * launch in flight exactly. */
#define _GNU_SOURCE
#include "hang_pick.h"

#include "../base/config.h"
#include "../core/core.h"
#include "../core/crumb.h"
#include "../core/ring.h"
#include "emit.h"
#include "suspects.h"

#include <stdio.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

int hang_in_use(const struct cp_stream *st, uint64_t after) {
  return atomic_load_explicit(&st->key_stream, memory_order_acquire) &&
         !atomic_load_explicit(&st->gone, memory_order_relaxed) &&
         atomic_load_explicit(&st->last_launched, memory_order_relaxed) > after;
}

/* A stream's breadcrumb, read without trusting its memory to still be there: the program may destroy the stream's
 * context (and the slot with it) at any moment, so the read goes through the kernel, which answers EFAULT for
 * memory that is gone rather than faulting. */
int hang_read_slot(const struct cp_stream *st, uint64_t *v) {
  volatile uint64_t *slot = st->slot;
  if (!slot || atomic_load_explicit(&st->gone, memory_order_relaxed)) return -1;
  struct iovec local = {v, sizeof *v}, remote = {(void *)slot, sizeof *v};
  return process_vm_readv(getpid(), &local, 1, &remote, 1, 0) == (ssize_t)sizeof *v ? 0 : -1;
}

/* The highest launch known complete on st (crumb_done), with the breadcrumb read guardedly: crumb_done is given a
 * copy of the entry whose slot points at that value. */
uint64_t hang_done_of(const struct cp_stream *st) {
  struct cp_stream copy;
  volatile uint64_t value = 0;
  uint64_t v;
  memcpy(&copy, st, sizeof copy);
  copy.slot = hang_read_slot(st, &v) == 0 ? (value = v, &value) : NULL;
  return crumb_done(&copy);
}

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
int hang_queued_after(const struct emit_snap *s, const struct cp_rec *r, uint64_t upto, const struct cp_rec **out,
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
void hang_look(uint64_t after, struct hang_pick *p) {
  memset(p, 0, sizeof *p);
  for (uint32_t i = 0; i < crumb_capacity(); i++) {
    struct cp_stream *st = crumb_at(i);
    if (!hang_in_use(st, after)) continue;
    uint64_t last = atomic_load_explicit(&st->last_launched, memory_order_relaxed);
    uint64_t done = hang_done_of(st);
    if (done >= last) continue; /* all its work completed */
    p->pending++;
    if (p->nstreams == MAX_STREAMS) continue;
    struct hang_stream *hs = &p->streams[p->nstreams++];
    hs->idx = i;
    hs->done = done;
    hs->newest = last;
  }
}

void hang_decide(const struct cp_config *cfg, const struct emit_snap *s, int mode, struct hang_pick *p) {
  int lost = 0;
  char lost_note[200] = "";
  for (int k = 0; k < p->nstreams; k++) {
    struct hang_stream *hs = &p->streams[k];
    struct cp_stream *st = crumb_at(hs->idx);
    uint64_t done = hs->done;
    struct add_ctx a = {p, hs};
    struct suspects_recs sr = {s->recs, s->n, s->rs};
    suspects_of_stream(&sr, hs->idx, st, done, add_suspect, &a, &hs->lost);
    if (hs->last) hs->queued = hang_queued_after(s, hs->last, hs->newest, NULL, 0);
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
               (unsigned long long)done, (unsigned long)(uintptr_t)st->handle, cfg->ring);
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
               "record mode's breadcrumbs (as sparse as every %u%s launch where a stream's launches are dense) "
               "cannot tell which; precise mode names it",
               cfg->crumb_every, ordinal(cfg->crumb_every));
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
