/* Capture sessions and executable graphs, in two small tables under one mutex: captures, instantiations and
 * verdicts are rare next to launches, and nothing here is on the launch path. A session is the launch-number
 * window of one capture; launches recorded as captured within it are the graph's kernels (launches captured
 * into the same graph from other streams that joined the capture fall in the same window). */
#define _GNU_SOURCE
#include "graphs.h"

#include "crumb.h"

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define SESSIONS 256 /* most recent captures kept */
#define EXECS 1024   /* most recent instantiations kept */

struct session {
  void *stream;            /* capturing stream */
  void *graph;             /* graph produced, NULL while open or if capture failed */
  uint64_t after;          /* last launch number before the capture began */
  uint64_t upto;           /* last launch number when it ended */
  int tid;                 /* capturing thread */
  int open;                /* capture in progress */
  volatile uint64_t *slot; /* precise mode: the graph's own breadcrumb (host view), or NULL */
  uint64_t dslot;          /* its device view */
};

static struct session g_sessions[SESSIONS]; /* ring, under g_lock */
static unsigned g_next;                     /* next session slot, under g_lock */
static struct {
  void *exec;                /* executable graph */
  void *graph;               /* graph it came from */
} g_execs[EXECS];            /* under g_lock */
static unsigned g_exec_next; /* next exec slot (oldest is replaced), under g_lock */
static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;

/* The newest open session of stream, with g_lock held. */
static struct session *open_session(void *stream) {
  for (unsigned k = 0; k < SESSIONS; k++) {
    struct session *s = &g_sessions[(g_next - 1 - k) % SESSIONS];
    if (s->open && s->stream == stream) return s;
  }
  return NULL;
}

void graph_capture_begun(void *stream, int tid, uint64_t seq) {
  pthread_mutex_lock(&g_lock);
  struct session *s = &g_sessions[g_next++ % SESSIONS];
  memset(s, 0, sizeof *s);
  s->stream = stream;
  s->tid = tid;
  s->after = seq;
  s->open = 1;
  pthread_mutex_unlock(&g_lock);
}

void graph_capture_ended(void *stream, void *graph, uint64_t seq) {
  pthread_mutex_lock(&g_lock);
  struct session *s = open_session(stream);
  if (s) {
    s->open = 0;
    s->graph = graph;
    s->upto = seq;
  }
  pthread_mutex_unlock(&g_lock);
}

void graph_capture_set_slot(void *stream, volatile uint64_t *slot, uint64_t dslot) {
  pthread_mutex_lock(&g_lock);
  struct session *s = open_session(stream);
  if (s) {
    s->slot = slot;
    s->dslot = dslot;
  }
  pthread_mutex_unlock(&g_lock);
}

uint64_t graph_capture_slot(void *stream) {
  uint64_t d = 0;
  pthread_mutex_lock(&g_lock);
  struct session *s = open_session(stream);
  if (s && s->slot) d = s->dslot;
  pthread_mutex_unlock(&g_lock);
  return d;
}

int graph_capture_abandoned(void *stream) {
  pthread_mutex_lock(&g_lock);
  struct session *s = open_session(stream);
  if (s) s->open = 0;
  pthread_mutex_unlock(&g_lock);
  return s != NULL;
}

void graph_instantiated(void *exec, void *graph) {
  if (!exec || !graph) return;
  pthread_mutex_lock(&g_lock);
  unsigned i;
  for (i = 0; i < EXECS && g_execs[i].exec != exec; i++) {
  }
  if (i == EXECS) i = g_exec_next++ % EXECS;
  g_execs[i].exec = exec;
  g_execs[i].graph = graph;
  pthread_mutex_unlock(&g_lock);
}

int graph_window(void *exec, uint64_t *after, uint64_t *upto, uint64_t *done) {
  int found = 0;
  pthread_mutex_lock(&g_lock);
  void *graph = NULL;
  for (unsigned i = 0; i < EXECS && !graph; i++)
    if (g_execs[i].exec == exec) graph = g_execs[i].graph;
  for (unsigned k = 0; graph && k < SESSIONS && !found; k++) {
    struct session *s = &g_sessions[(g_next - 1 - k) % SESSIONS];
    if (!s->open && s->graph == graph) {
      *after = s->after;
      *upto = s->upto;
      *done = s->slot ? crumb_slot_value(s->slot, s->upto) : UINT64_MAX;
      found = 1;
    }
  }
  pthread_mutex_unlock(&g_lock);
  return found;
}

void graph_forget_slots(void) {
  pthread_mutex_lock(&g_lock);
  for (unsigned i = 0; i < SESSIONS; i++) g_sessions[i].slot = NULL;
  pthread_mutex_unlock(&g_lock);
}

void graph_after_fork(void) {
  memset(g_sessions, 0, sizeof g_sessions);
  memset(g_execs, 0, sizeof g_execs);
  g_next = g_exec_next = 0;
  pthread_mutex_init(&g_lock, NULL);
}
