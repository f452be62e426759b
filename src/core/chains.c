/* The chain store of one ring (see chains.h): chains in a circle of twice the ring's capacity, written in turn,
 * and an open-addressed map from a chain's two hashes to its number, which only the owner reads and writes. */
#define _GNU_SOURCE
#include "chains.h"

#include <string.h>
#include <sys/mman.h>

#define CHAINS_PROBES 8 /* map entries looked at for one pair of hashes */

struct chains_key {
  uint64_t hn, hp; /* the chain's hashes: native frames, Python frames */
  uint64_t no;     /* its number; 0 = empty entry */
};

struct cp_chains {
  uint32_t capacity;      /* records of the ring: a chain older than this many chains is written anew */
  uint32_t kmask;         /* chains kept - 1 (a power of two, twice capacity) */
  uint32_t mmask;         /* map entries - 1 (a power of two) */
  int depth;              /* native frames a chain holds */
  size_t csize;           /* bytes per chain */
  uint64_t written;       /* chains published; the owner's alone */
  struct chains_key *map; /* mmask + 1 entries */
  unsigned char *data;    /* kmask + 1 chains of csize bytes */
};

uint64_t chains_count(const struct cp_chains *s) { return s->written; }

size_t chains_size(int depth) { return (sizeof(struct cp_chain) + (size_t)depth * sizeof(void *) + 15) & ~(size_t)15; }

struct cp_chains *chains_new(uint32_t capacity, int depth) {
  uint32_t kept = capacity * 2, entries = capacity * 2;
  size_t csize = chains_size(depth);
  size_t head = (sizeof(struct cp_chains) + 63) & ~(size_t)63;
  size_t mapb = (size_t)entries * sizeof(struct chains_key);
  void *m = mmap(NULL, head + mapb + (size_t)kept * csize, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (m == MAP_FAILED) return NULL;
  struct cp_chains *s = m; /* zeroed: every map entry empty, every chain number 0 */
  s->capacity = capacity;
  s->kmask = kept - 1;
  s->mmask = entries - 1;
  s->depth = depth;
  s->csize = csize;
  s->map = (struct chains_key *)((unsigned char *)m + head);
  s->data = (unsigned char *)m + head + mapb;
  return s;
}

static inline struct cp_chain *chain_at(struct cp_chains *s, uint64_t no) {
  return (struct cp_chain *)(s->data + (size_t)((no - 1) & s->kmask) * s->csize);
}

static inline uint32_t first_entry(const struct cp_chains *s, uint64_t hn, uint64_t hp) {
  return (uint32_t)((hn ^ (hp * 0x9E3779B97F4A7C15ull)) >> 32) & s->mmask;
}

const struct cp_chain *chains_find(struct cp_chains *s, uint64_t hn, uint64_t hp, uint64_t *no) {
  uint32_t i = first_entry(s, hn, hp);
  for (int k = 0; k < CHAINS_PROBES; k++) {
    const struct chains_key *e = &s->map[(i + (uint32_t)k) & s->mmask];
    if (!e->no) return NULL;
    if (e->hn == hn && e->hp == hp) {
      /* a record made now lives until the ring wraps: the chain must not be rewritten before, and it is
       * rewritten once twice capacity chains were written after it */
      if (s->written - e->no >= s->capacity) return NULL;
      *no = e->no;
      return chain_at(s, e->no);
    }
  }
  return NULL;
}

struct cp_chain *chains_begin(struct cp_chains *s) {
  struct cp_chain *c = chain_at(s, s->written + 1);
  atomic_store_explicit(&c->no, 0, memory_order_relaxed);
  /* release fence: the zero is visible before any field below changes (the diagram in chains.h) */
  atomic_thread_fence(memory_order_release);
  c->nframes = c->npy = c->flags = 0;
  c->py_thread = 0;
  return c;
}

uint64_t chains_publish(struct cp_chains *s, struct cp_chain *c, uint64_t hn, uint64_t hp, int keep) {
  uint64_t no = ++s->written;
  /* release: the chain's fields are visible to a reader that acquires its number */
  atomic_store_explicit(&c->no, no, memory_order_release);
  if (!keep) return no;
  /* this pair's entry, else an empty one, else one no record may refer to, else the first looked at */
  uint32_t i = first_entry(s, hn, hp);
  struct chains_key *pick = NULL, *stale = NULL;
  for (int k = 0; k < CHAINS_PROBES && !pick; k++) {
    struct chains_key *e = &s->map[(i + (uint32_t)k) & s->mmask];
    if (!e->no || (e->hn == hn && e->hp == hp))
      pick = e;
    else if (!stale && no - e->no >= s->capacity)
      stale = e;
  }
  if (!pick) pick = stale ? stale : &s->map[i];
  pick->hn = hn;
  pick->hp = hp;
  pick->no = no;
  return no;
}

int chains_read(const struct cp_chain *c, uint64_t no, struct cp_chain *out, int depth) {
  out->nframes = out->npy = out->flags = 0;
  out->py_thread = 0;
  if (!c || !no || atomic_load_explicit(&c->no, memory_order_acquire) != no) return -1;
  int nf = c->nframes < depth ? c->nframes : depth, np = c->npy < PYSTACK_MAX ? c->npy : PYSTACK_MAX;
  memcpy(out->frames, c->frames, (size_t)nf * sizeof(void *));
  memcpy(out->py, c->py, (size_t)np * sizeof(struct pystack_ref));
  uint64_t py_thread = c->py_thread;
  uint8_t flags = c->flags;
  /* acquire fence: the copy is ordered before the second look at the number */
  atomic_thread_fence(memory_order_acquire);
  if (atomic_load_explicit(&c->no, memory_order_relaxed) != no) return -1;
  out->nframes = (uint8_t)nf;
  out->npy = (uint8_t)np;
  out->flags = flags;
  out->py_thread = py_thread;
  return 0;
}
