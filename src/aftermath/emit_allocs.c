/* The allocation table as JSON: every range the table holds, oldest allocation first, and the places they were
 * allocated from, each written once ("sites") however many ranges share it, so a program that allocates in a loop
 * does not repeat one stack thousands of times. Frames are written as every report's "stack" and "python" arrays
 * (emit.c), so the command's symbolization resolves them too. */
#include "emit_allocs.h"

#include "emit.h"
#include "../core/allocs.h"
#include "../base/jsonw.h"
#include "../render/report_keys.h"

#include <stdlib.h>
#include <string.h>

/* The identity of a site: its native and Python frames. */
static uint64_t site_hash(const struct allocs_entry *e) {
  uint64_t h = 0x243F6A8885A308D3ull ^ ((uint64_t)e->nframes << 8 | e->npy);
  for (int i = 0; i < e->nframes; i++) h = (h ^ (uint64_t)(uintptr_t)e->frames[i]) * 0x100000001B3ull;
  for (int i = 0; i < e->npy; i++)
    h = (h ^ ((uint64_t)e->py[i].code << 32 | (uint32_t)e->py[i].lasti)) * 0x100000001B3ull;
  return h ^ (h >> 31);
}

static int same_site(const struct allocs_entry *a, const struct allocs_entry *b) {
  return a->nframes == b->nframes && a->npy == b->npy &&
         !memcmp(a->frames, b->frames, (size_t)a->nframes * sizeof a->frames[0]) &&
         !memcmp(a->py, b->py, (size_t)a->npy * sizeof a->py[0]);
}

/* site[i]: the index in "sites" of entry i's site, -1 for none; rep gets the first entry of each site. Returns the
 * number of sites, or -1 when memory is short. */
static int number_sites(const struct allocs_entry *e, size_t n, int *site, size_t *rep) {
  size_t cap = 16;
  while (cap < 2 * n) cap <<= 1;
  int32_t *tab = malloc(cap * sizeof *tab); /* open addressing: a site's number plus one, 0 = empty */
  if (!tab) return -1;
  memset(tab, 0, cap * sizeof *tab);
  int nsites = 0;
  for (size_t i = 0; i < n; i++) {
    site[i] = -1;
    if (!e[i].nframes && !e[i].npy) continue;
    for (size_t j = site_hash(&e[i]) & (cap - 1);; j = (j + 1) & (cap - 1)) {
      if (!tab[j]) {
        rep[nsites] = i;
        tab[j] = ++nsites;
        site[i] = nsites - 1;
        break;
      }
      if (same_site(&e[rep[tab[j] - 1]], &e[i])) {
        site[i] = tab[j] - 1;
        break;
      }
    }
  }
  free(tab);
  return nsites;
}

static void emit_range(struct jw *w, const struct allocs_entry *e, int site) {
  jw_obj_begin(w);
  jw_key(w, RK_BASE);
  jw_hex(w, e->base);
  jw_key(w, RK_SIZE);
  jw_uint(w, e->size);
  jw_key(w, RK_KIND);
  jw_str(w, allocs_kind_name(e->kind));
  jw_key(w, RK_API);
  jw_str(w, e->api);
  if (e->kind == ALLOCS_HOST && e->host != e->base) {
    jw_key(w, RK_HOST);
    jw_hex(w, e->host);
  }
  jw_key(w, RK_SEQ);
  jw_uint(w, e->seq);
  if (e->flags & ALLOCS_FREED) {
    jw_key(w, RK_FREED_SEQ);
    jw_uint(w, e->freed_seq);
    if (e->freed_api) {
      jw_key(w, RK_FREED_API);
      jw_str(w, e->freed_api);
    }
    if (e->flags & ALLOCS_FREE_UNSEEN) {
      jw_key(w, RK_FREE_UNSEEN);
      jw_bool(w, 1);
    }
  }
  jw_key(w, RK_THREAD);
  jw_int(w, e->tid);
  if (site >= 0) {
    jw_key(w, RK_SITE);
    jw_int(w, site);
  }
  jw_obj_end(w);
}

void emit_allocs(struct jw *w) {
  struct allocs_counts c;
  size_t n = 0;
  struct allocs_entry *e = allocs_snapshot(&n, &c);
  int *site = n ? malloc(n * sizeof *site) : NULL;
  size_t *rep = n ? malloc(n * sizeof *rep) : NULL;
  int nsites = site && rep ? number_sites(e, n, site, rep) : -1;
  if (nsites < 0) { /* memory is short: the ranges without their sites */
    nsites = 0;
    free(site);
    site = NULL;
  }
  jw_key(w, RK_ALLOCATIONS);
  jw_obj_begin(w);
  jw_key(w, RK_CAPACITY);
  jw_uint(w, c.capacity);
  jw_key(w, RK_RECORDED);
  jw_uint(w, c.recorded);
  jw_key(w, RK_FORGOTTEN);
  jw_uint(w, c.forgotten);
  jw_key(w, RK_NOT_RECORDED);
  jw_uint(w, c.not_recorded);
  if (c.forgotten || c.not_recorded) {
    jw_key(w, RK_OVERFLOWED);
    jw_bool(w, 1);
  }
  if (c.handles_created) {
    jw_key(w, RK_VM_HANDLES);
    jw_obj_begin(w);
    jw_key(w, RK_CREATED);
    jw_uint(w, c.handles_created);
    jw_key(w, RK_RELEASED);
    jw_uint(w, c.handles_released);
    jw_key(w, RK_BYTES);
    jw_uint(w, c.handle_bytes);
    jw_obj_end(w);
  }
  jw_key(w, RK_RANGES);
  jw_arr_begin(w);
  for (size_t i = 0; i < n; i++) emit_range(w, &e[i], site ? site[i] : -1);
  jw_arr_end(w);
  jw_key(w, RK_SITES);
  jw_arr_begin(w);
  for (int s = 0; s < nsites; s++) {
    const struct allocs_entry *r = &e[rep[s]];
    jw_obj_begin(w);
    if (r->npy) {
      jw_key(w, RK_PYTHON);
      emit_python(w, r->py, r->npy);
    }
    jw_key(w, RK_STACK);
    emit_frames(w, r->frames, r->nframes);
    jw_obj_end(w);
  }
  jw_arr_end(w);
  jw_obj_end(w);
  free(rep);
  free(site);
  free(e);
}
