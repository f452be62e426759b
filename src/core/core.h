/* What the intercept layer hands to core: launches (before and after the real call), results of every other
 * hooked call, and stream/capture/module life events. Core decides what to record and when to report. */
#ifndef CULPRIT_CORE_H
#define CULPRIT_CORE_H

#include <stdint.h>

#include "driver.h"

struct cp_slot;
struct cp_ring;
struct cp_stream;

struct cp_launch_desc {
  const char *api;   /* exported symbol used */
  void *func;        /* CUfunction/CUkernel, or CUgraphExec */
  void *stream;      /* stream handle as passed */
  uint32_t grid[3];  /* grid dimensions (zeros for graphs) */
  uint32_t block[3]; /* block dimensions */
  uint32_t smem;     /* dynamic shared memory */
  uint8_t ptds;      /* per-thread default stream entry point */
  uint8_t kind;      /* CP_KIND_* */
  void **params;     /* kernelParams: a pointer to each parameter, NULL if none (graphs, `extra` launches) */
  void **extra;      /* `extra`: CU_LAUNCH_PARAM_* pairs, NULL if none */
};

struct cp_launch_ctx {
  struct cp_ring *ring;           /* the launching thread's ring */
  struct cp_slot *rec;            /* claimed record, published after the real call */
  struct cp_stream *stream;       /* stream entry, NULL if untracked */
  const struct cp_launch_desc *d; /* the launch */
  uint64_t t0;                    /* start of culprit's own work, for CULPRIT_STATS */
  uint64_t spent;                 /* CULPRIT_STATS: time culprit spent before the real launch */
  int serialized;                 /* blocking mode: holds the launch lock until the synchronize is done */
  int stacks_later;               /* blocking mode: stacks are taken only if the launch or its synchronize fails */
  int inflight;                   /* counted in stream->inflight, to be released in cp_launch_end */
  uint64_t overlaps0;             /* stream->overlaps when this launch began */
};

/* Set once configuration is read: 1 = active, 0 = not yet read, -1 = disabled (bad config or mode off). */
extern int cp_state;
void cp_init(void);
static inline int cp_active(void) {
  if (__builtin_expect(cp_state == 0, 0)) cp_init();
  return cp_state > 0;
}

/* Before the real launch: returns 1 when the launch is being recorded (then call cp_launch_end). */
int cp_launch_begin(struct cp_launch_ctx *lc, const struct cp_launch_desc *d);
/* After it: publishes the record, queues the breadcrumb, synchronizes in blocking mode. Returns the code to
 * give the program (the real one, or the sticky error blocking mode found). */
int cp_launch_end(struct cp_launch_ctx *lc, int rc);

/* A non-launch hooked call returned rc != 0: reports when it is a sticky error. */
void cp_result(int rc, const char *api);

/* Around a synchronize: when it succeeds, every launch it covered is known complete (a lower bound that the
 * verdict uses where breadcrumbs are missing). */
struct cp_sync {
  struct cp_stream *stream; /* synchronized stream, NULL for a context synchronize */
  void *ctx;                /* synchronized context */
  uint64_t upto;            /* newest launch covered */
  uint64_t untracked;       /* untracked launches it covers if it succeeds (count of the newest), 0 none */
};
void cp_sync_begin(struct cp_sync *c, void *stream, int ptds, int whole_ctx);
void cp_sync_end(const struct cp_sync *c, int rc);

/* Events as completion bounds: c from cp_sync_begin on the recording stream before the record call (launches
 * already queued then are surely before the event), noted once the record succeeded; then found complete. */
void cp_event_recorded(void *event, const struct cp_sync *c);
void cp_event_completed(void *event);
void cp_event_destroying(void *event);

void cp_stream_destroying(void *stream);
/* Before a context is destroyed (ctx), or a device's primary context reset or released (ctx NULL, device), by
 * the driver call api. A sticky error still unreported is reported first, as having surfaced there. */
void cp_ctx_going(void *ctx, int device, const char *api);
void cp_capture_prepare(void); /* before the real begin-capture call */
void cp_capture_begun(void *stream, int ptds);
void cp_capture_ended(void *stream, void *graph);
void cp_graph_instantiated(void *exec, void *graph);
void cp_module_unloaded(void);

/* What the floor above (src/aftermath) and the public API read of core's state. */
struct cp_view {
  uint64_t seq;        /* the last launch number handed out */
  uint64_t after_seq;  /* launches up to this one belong to a parent process (fork) */
  int mode;            /* enum cp_mode in force */
  int captures;        /* stream captures under way: no driver query may be made then */
  int launch_blocking; /* CUDA_LAUNCH_BLOCKING=1 as the driver read it: a launch that returns an
                                   * error is the one that faulted */
};
void cp_view(struct cp_view *v);
/* Whether a launch culprit did not record may still be running (scans the stream table). */
int cp_untracked_pending(void);

#endif
