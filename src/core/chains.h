/* A launch's stacks, kept once per distinct call chain of its thread (chains.c). A training loop launches
 * from a few hundred call chains over and over; each ring keeps a store of chains, and its records point at one
 * instead of carrying two dozen native frames and Python frames each. The launch path finds a chain by two
 * 64-bit hashes (its native frames, its Python frames), so a launch whose chain is known reads and writes a
 * couple of cache lines of culprit's own, not ten.
 *
 *   owner (the ring's thread)                   reader (a report, any thread)
 *   c = chains_begin(s)                         n1 = c->no                (acquire)
 *     c->no = 0           (relaxed)              n1 == the record's number, else no stacks
 *     fence               (release)  ----.      copy the chain
 *     fill frames                         `-->  fence                    (acquire)
 *   chains_publish: c->no = N (release) ---->  n2 = c->no (relaxed); keep if n1 == n2
 *
 * A chain is rewritten only when the store has wrapped around to it, and a record refers only to a chain written
 * less than a ring's capacity of chains ago (older ones are written again), so a chain outlives every record that
 * refers to it unless a thread writes more chains than it publishes launches; the reader's check covers that. */
#ifndef CULPRIT_CHAINS_H
#define CULPRIT_CHAINS_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "../stack/pystack.h"

struct cp_chain {
  _Atomic uint64_t no;                /* its number in the store (1, 2, ...); 0 while it is being written */
  uint64_t py_thread;                 /* with CP_REC_PY_WAITING in flags: the Python thread id of the frames in py */
  uint8_t nframes;                    /* valid entries in frames */
  uint8_t npy;                        /* valid entries in py */
  uint8_t flags;                      /* CP_REC_PY_WAITING or 0: what the chain adds to its records' flags */
  struct pystack_ref py[PYSTACK_MAX]; /* Python frames, innermost first */
  void *frames[];                     /* native return addresses, innermost first (the store's depth of them) */
};

struct cp_chains;

/* A store for a ring of capacity records whose chains hold up to depth native frames; NULL if memory is short.
 * Memory is reserved for twice capacity chains but touched only as chains are written. */
struct cp_chains *chains_new(uint32_t capacity, int depth);
/* The owner's lookup: the chain kept for these hashes, and its number, when it can still be referred to; else
 * NULL (write it anew with chains_begin). */
const struct cp_chain *chains_find(struct cp_chains *s, uint64_t hnative, uint64_t hpython, uint64_t *no);
/* The chain the next chains_publish makes visible: claimed (number 0), to be filled by the owner. */
struct cp_chain *chains_begin(struct cp_chains *s);
/* Publishes the chain chains_begin gave and returns its number; with keep, it is found by these hashes from
 * now on (a chain that is not the same for every launch with those hashes is published without keep). */
uint64_t chains_publish(struct cp_chains *s, struct cp_chain *c, uint64_t hnative, uint64_t hpython, int keep);
/* The reader: copies chain c into out (room for depth frames) when it still holds number no. Returns 0, or -1
 * when it was rewritten since (out's counts are then zero). */
int chains_read(const struct cp_chain *c, uint64_t no, struct cp_chain *out, int depth);
/* Chains written so far (CULPRIT_STATS: how many distinct call chains a thread launched from, with rewrites). */
uint64_t chains_count(const struct cp_chains *s);
/* Bytes of one chain with depth native frames. */
size_t chains_size(int depth);

/* Hashing a chain's words: h = chains_mix(h, word) for each, then chains_end(h). */
static inline uint64_t chains_mix(uint64_t h, uint64_t v) { return (h + v) * 0x9E3779B97F4A7C15ull; }
static inline uint64_t chains_end(uint64_t h) {
  h ^= h >> 33;
  h *= 0xff51afd7ed558ccdull;
  h ^= h >> 33;
  h *= 0xc4ceb9fe1a85ec53ull;
  return h ^ (h >> 33);
}

#endif
