/* Kernel name cache: an open-addressing table from function handle to interned name. Readers probe without
 * locks; inserts take a mutex. Forgetting bumps a generation, so stale entries simply stop matching. */
#define _GNU_SOURCE
#include "names.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>

#define NAMES_SLOTS 8192 /* power of two */
#define ARENA_CHUNK (256 * 1024)

struct names_slot {
  _Atomic(void *) func;        /* key; NULL = empty; stored last (release) */
  _Atomic uint32_t gen;        /* generation the entry belongs to */
  const struct cp_kname *name; /* value */
};

static struct names_slot g_slots[NAMES_SLOTS];
static _Atomic uint32_t g_gen = 1; /* current generation */
static _Atomic uint32_t g_used;    /* slots taken in any generation */
static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static char *g_arena; /* current chunk, under g_lock */
static size_t g_arena_left;

static void *arena_alloc(size_t n) {
  n = (n + 7) & ~(size_t)7;
  if (n > ARENA_CHUNK) return NULL;
  if (n > g_arena_left) {
    void *m = mmap(NULL, ARENA_CHUNK, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) return NULL;
    g_arena = m;
    g_arena_left = ARENA_CHUNK;
  }
  void *p = g_arena;
  g_arena += n;
  g_arena_left -= n;
  return p;
}

static const char *intern_locked(const char *s) {
  size_t n = strlen(s) + 1;
  char *p = arena_alloc(n);
  if (p) memcpy(p, s, n);
  return p;
}

const char *names_intern(const char *s) {
  pthread_mutex_lock(&g_lock);
  const char *p = intern_locked(s);
  pthread_mutex_unlock(&g_lock);
  return p;
}

static size_t hash_ptr(void *p) {
  uint64_t x = (uint64_t)(uintptr_t)p;
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdULL;
  x ^= x >> 33;
  return (size_t)x & (NAMES_SLOTS - 1);
}

static const struct cp_kname *probe(void *func, uint32_t gen) {
  for (size_t i = hash_ptr(func), k = 0; k < NAMES_SLOTS; i = (i + 1) & (NAMES_SLOTS - 1), k++) {
    /* acquire: pairs with the release store of func in names_get, so name and gen are visible. */
    void *f = atomic_load_explicit(&g_slots[i].func, memory_order_acquire);
    if (!f) return NULL;
    if (f == func && atomic_load_explicit(&g_slots[i].gen, memory_order_relaxed) == gen) return g_slots[i].name;
  }
  return NULL;
}

/* not const: the launch path caches the blocking filter's answer in them too */
static struct cp_kname g_unknown = {.mangled = "<unnamed kernel>"};
static struct cp_kname g_full = {.mangled = "<kernel name table full: more than 6144 kernels>"};

/* The layout of func's parameters, asked parameter by parameter until the driver says there are no more. A
 * driver without the entry point, or one that fails at the first parameter, leaves it unknown: a kernel without
 * parameters cannot be told from one the driver cannot describe, and neither gets a record's parameters. */
static void params_lookup(void *func, names_param_fn pfn, struct cp_params_layout *l) {
  size_t off = 0, size = 0, i;
  uint64_t end = 0;
  memset(l, 0, sizeof *l);
  if (!pfn) return;
  for (i = 0; i < 4096 && pfn(func, i, &off, &size) == 0; i++) {
    if (off + size > end) end = off + size;
    if (off < CP_PARAMS_KEPT && l->n < CP_PARAMS_KEPT) {
      l->off[l->n] = (uint8_t)off;
      l->len[l->n++] = (uint8_t)(size < CP_PARAMS_KEPT - off ? size : CP_PARAMS_KEPT - off);
    }
  }
  if (i == 0 || end > UINT32_MAX) return;
  l->size = (uint32_t)end;
  l->known = 1;
}

const struct cp_kname *names_get(void *func, names_lookup_fn fn, names_param_fn pfn) {
  uint32_t gen = atomic_load_explicit(&g_gen, memory_order_acquire);
  const struct cp_kname *k = probe(func, gen);
  if (k) return k;

  pthread_mutex_lock(&g_lock);
  k = probe(func, gen);
  if (k) goto out;
  /* A full table does not look names up any more: interning on every launch would grow without bound. */
  if (atomic_load_explicit(&g_used, memory_order_relaxed) >= NAMES_SLOTS * 3 / 4) {
    k = &g_full;
    goto out;
  }
  const char *raw = NULL;
  char fallback[48];
  if (!fn || fn(func, &raw) || !raw) {
    snprintf(fallback, sizeof fallback, "<function %p>", func);
    raw = fallback;
  }
  struct cp_kname *nk = arena_alloc(sizeof *nk);
  const char *s = nk ? intern_locked(raw) : NULL;
  if (!nk || !s) {
    k = &g_unknown;
    goto out;
  }
  nk->mangled = s;
  atomic_init(&nk->match, 0);
  params_lookup(func, pfn, &nk->params);
  k = nk;
  /* Only empty slots are filled: an entry of an older generation is never rewritten under a reader's feet (it
   * just stops matching), so a reader that matches func and gen reads the name stored with them. */
  for (size_t i = hash_ptr(func);; i = (i + 1) & (NAMES_SLOTS - 1)) {
    if (atomic_load_explicit(&g_slots[i].func, memory_order_relaxed)) continue;
    g_slots[i].name = k;
    atomic_store_explicit(&g_slots[i].gen, gen, memory_order_relaxed);
    atomic_fetch_add_explicit(&g_used, 1, memory_order_relaxed);
    /* release: publishes name and gen to lock-free readers (probe). */
    atomic_store_explicit(&g_slots[i].func, func, memory_order_release);
    break;
  }
out:
  pthread_mutex_unlock(&g_lock);
  return k ? k : &g_full;
}

void names_forget_all(void) {
  /* release: later probes see the new generation and miss every older entry. */
  atomic_fetch_add_explicit(&g_gen, 1, memory_order_release);
}

void names_after_fork(void) { pthread_mutex_init(&g_lock, NULL); }
