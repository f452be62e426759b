/* Operator notes: see ops.h. Notes live in a ring of fixed slots (no allocation, so a note can be made from any
 * thread at any time) and, when they carry a problem, also in a small ring of their own, so that the hundreds
 * of operators a program runs between a bad one and the moment its error surfaces cannot push it out. Each slot
 * is a seqlock: its version is odd while it is written, and a reader keeps a copy only when the version was even
 * and unchanged across the copy. */
#include "ops.h"

#include <errno.h>

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "core.h"
#include "seqlock.h"

#define OPS_RING 512 /* notes kept */
#define OPS_DEPTH 8  /* notes open at once on one thread */

struct slot {
  _Atomic uint32_t ver;
  uint64_t order; /* when it was opened (the count of notes opened before it, plus one) */
  struct ops_note n;
};

static struct slot g_ring[OPS_RING];
static struct slot g_prob[OPS_PROBLEMS];
static _Atomic uint64_t g_opened; /* notes opened */
static _Atomic uint64_t g_probs;  /* notes with a problem opened */

struct open_note {
  struct slot *s, *p;  /* its ring slot, and its problem slot or NULL */
  uint32_t sver, pver; /* their versions after it was written */
};
static __thread struct open_note t_open[OPS_DEPTH];
static __thread int t_depth;
static __thread int t_tid;

static int32_t self_tid(void) {
  if (!t_tid) t_tid = (int)syscall(SYS_gettid);
  return t_tid;
}

static void put(struct slot *s, uint64_t order, const struct ops_note *n, uint32_t *ver) {
  uint32_t v = seqlock_write_open(&s->ver);
  s->order = order;
  s->n = *n;
  seqlock_write_close(&s->ver, v);
  *ver = v;
}

/* Copies slot s into *out; returns its order, or 0 when it is empty or was being written. */
static uint64_t get(const struct slot *s, struct ops_note *out) {
  for (int tries = 0; tries < 4; tries++) {
    uint32_t v1 = seqlock_read_begin(&s->ver);
    if (v1 == 0) return 0;
    if (v1 & 1) continue;
    uint64_t order = s->order;
    memcpy(out, &s->n, sizeof *out);
    if (seqlock_read_valid(&s->ver, v1)) return order;
  }
  return 0;
}

static void copy_text(char *dst, size_t cap, const char *src) {
  if (!src) src = "";
  size_t n = strlen(src);
  if (n >= cap) { /* cut on a UTF-8 character boundary, and say it was cut */
    n = cap - 4;
    while (n > 0 && ((unsigned char)src[n] & 0xC0) == 0x80) n--;
    memcpy(dst, src, n);
    memcpy(dst + n, "...", 4);
    return;
  }
  memcpy(dst, src, n + 1);
}

/* Fills n's buffers from text (ops_begin_buffers). A line's numbers are read where they stand (strtoull stops at
 * the space after each, and at the line's end at the latest); its label is cut to fit. */
static void parse_buffers(struct ops_note *n, const char *text) {
  n->nbuf = 0;
  for (const char *p = text; p && *p && n->nbuf < OPS_BUFFERS;) {
    const char *eol = strchr(p, '\n');
    if (!eol) eol = p + strlen(p);
    char *end;
    errno = 0;
    unsigned long long base = strtoull(p, &end, 0);
    const char *q = end;
    unsigned long long size = end != p && end < eol && *q == ' ' ? strtoull(q, &end, 0) : 0;
    if (!errno && size && end != q && end <= eol && (*end == ' ' || end == eol) && base + size > base) {
      struct ops_buffer *b = &n->buf[n->nbuf++];
      const char *label = end < eol ? end + 1 : eol;
      char tmp[OPS_LABEL + 4];
      size_t len = (size_t)(eol - label) < sizeof tmp - 1 ? (size_t)(eol - label) : sizeof tmp - 1;
      memcpy(tmp, label, len);
      tmp[len] = '\0';
      b->base = base;
      b->size = size;
      copy_text(b->label, sizeof b->label, tmp);
    }
    p = *eol ? eol + 1 : NULL;
  }
}

int ops_begin(const char *name, const char *args, const char *problem) {
  return ops_begin_buffers(name, args, problem, NULL);
}

int ops_begin_buffers(const char *name, const char *args, const char *problem, const char *buffers) {
  if (!name || !*name) return CULPRIT_EINVAL;
  if (t_depth >= OPS_DEPTH) return CULPRIT_ESTACK;
  struct cp_view v;
  cp_view(&v);
  struct ops_note n;
  n.first = v.seq + 1;
  n.last = 0;
  n.running = 1;
  n.tid = self_tid();
  n.pid = (int32_t)getpid();
  copy_text(n.name, sizeof n.name, name);
  copy_text(n.args, sizeof n.args, args);
  copy_text(n.problem, sizeof n.problem, problem);
  parse_buffers(&n, buffers);
  uint64_t order = atomic_fetch_add_explicit(&g_opened, 1, memory_order_relaxed) + 1;
  struct open_note *o = &t_open[t_depth];
  o->s = &g_ring[order % OPS_RING];
  put(o->s, order, &n, &o->sver);
  o->p = NULL;
  if (n.problem[0]) {
    uint64_t k = atomic_fetch_add_explicit(&g_probs, 1, memory_order_relaxed);
    o->p = &g_prob[k % OPS_PROBLEMS];
    put(o->p, order, &n, &o->pver);
  }
  t_depth++;
  return 0;
}

/* Sets the last launch of the note in slot s, if the slot still holds it. */
static void close_in(struct slot *s, uint32_t *ver, uint64_t last) {
  if (!s || atomic_load_explicit(&s->ver, memory_order_relaxed) != *ver) return;
  uint32_t v = seqlock_write_open(&s->ver);
  s->n.last = last;
  s->n.running = 0;
  seqlock_write_close(&s->ver, v);
  *ver = v;
}

int ops_end(void) {
  if (t_depth == 0) return CULPRIT_ESTACK;
  struct open_note *o = &t_open[--t_depth];
  struct cp_view v;
  cp_view(&v);
  close_in(o->s, &o->sver, v.seq);
  close_in(o->p, &o->pver, v.seq);
  return 0;
}

/* Whether note n holds launch seq of thread tid. */
static int holds(const struct ops_note *n, uint64_t seq, int32_t tid) {
  return n->tid == tid && n->pid == (int32_t)getpid() && n->first <= seq && (n->running || seq <= n->last);
}

int ops_find(uint64_t seq, int32_t tid, struct ops_note *out) {
  uint64_t best = 0;
  struct ops_note n;
  for (int pass = 0; pass < 2; pass++) {
    const struct slot *slots = pass ? g_prob : g_ring;
    int count = pass ? OPS_PROBLEMS : OPS_RING;
    for (int i = 0; i < count; i++) {
      uint64_t order = get(&slots[i], &n);
      if (order > best && holds(&n, seq, tid)) { /* the innermost: the one opened last */
        best = order;
        *out = n;
      }
    }
  }
  return best != 0;
}

int ops_any(void) { return atomic_load_explicit(&g_opened, memory_order_relaxed) != 0; }

int ops_problems(struct ops_note *out, int max) {
  if (atomic_load_explicit(&g_probs, memory_order_relaxed) == 0) return 0;
  uint64_t order[OPS_PROBLEMS];
  int idx[OPS_PROBLEMS], k = 0, got = 0;
  struct ops_note n;
  for (int i = 0; i < OPS_PROBLEMS; i++) {
    uint64_t o = get(&g_prob[i], &n);
    if (!o || n.pid != (int32_t)getpid()) continue; /* empty, or a parent process's (fork) */
    int j = k++;
    for (; j > 0 && order[j - 1] > o; j--) { /* oldest first */
      order[j] = order[j - 1];
      idx[j] = idx[j - 1];
    }
    order[j] = o;
    idx[j] = i;
  }
  for (int i = 0; i < k && got < max; i++)
    if (get(&g_prob[idx[i]], &out[got]) == order[i]) got++; /* else reused meanwhile */
  return got;
}
