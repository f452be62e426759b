/* The hang report's decision (hang_pick.c): which streams had unfinished work as they were looked at, and which
 * of their recorded launches may be the one in flight, with one sentence saying why. Also the guarded readers of a
 * stream's state that the watcher (hang.c) and the report (hang_report.c) share. Runs in the watcher thread. */
#ifndef CULPRIT_HANG_PICK_H
#define CULPRIT_HANG_PICK_H

#include <stdint.h>

struct cp_config;
struct cp_rec;
struct cp_stream;
struct emit_snap;

#define MAX_CANDIDATES 64 /* launches a report lists as possibly in flight */
#define MAX_STREAMS 64    /* streams a report lists */

struct hang_stream {
  uint32_t idx;               /* stream table index */
  uint64_t done;              /* the highest launch known complete on it */
  uint64_t newest;            /* its last launch when it was looked at (before the rings were copied) */
  const struct cp_rec *first; /* its first suspect: the launch in flight when it is the only one */
  const struct cp_rec *last;  /* its last suspect: what follows it had not started */
  int nsusp;                  /* suspects */
  int lost;                   /* the first unfinished launch is no longer in the ring */
  int queued;                 /* launches on it after the last suspect */
};

struct hang_pick {
  struct hang_stream streams[MAX_STREAMS];   /* streams with unfinished work */
  int nstreams;                              /* entries in streams */
  int pending;                               /* streams with unfinished work, listed or not */
  const struct cp_rec *cand[MAX_CANDIDATES]; /* every suspect, stream by stream */
  int ncand;                                 /* entries in cand */
  int truncated;                             /* more suspects than cand holds */
  uint64_t lo, hi;                           /* launch numbers spanned by the suspects */
  const struct cp_rec *culprit;              /* the launch in flight when exact */
  const char *certainty;                     /* exact | candidates | unknown | idle */
  char reason[512];                          /* one sentence for the user */
};

/* Whether st is a live stream with a launch after after (records up to after are a parent process's). */
int hang_in_use(const struct cp_stream *st, uint64_t after);
/* st's breadcrumb into *v, read through the kernel (the memory may be gone); 0, or -1 when it cannot be read. */
int hang_read_slot(const struct cp_stream *st, uint64_t *v);
/* The highest launch known complete on st. */
uint64_t hang_done_of(const struct cp_stream *st);

/* The streams with unfinished work, as they are now: called before the rings are copied. */
void hang_look(uint64_t after, struct hang_pick *p);
/* Fills p's suspects, culprit, certainty and reason from the copied rings s (cfg: the process's settings). */
void hang_decide(const struct cp_config *cfg, const struct emit_snap *s, int mode, struct hang_pick *p);
/* The launches after r on its stream up to upto, oldest first: up to max into out (may be NULL); returns how many
 * there are. */
int hang_queued_after(const struct emit_snap *s, const struct cp_rec *r, uint64_t upto, const struct cp_rec **out,
                      int max);

#endif
