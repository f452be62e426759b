/* The mode stack behind include/culprit.h's scopes (see modes.h). Pushes and pops are rare and take a lock; the
 * launch path only loads the top. */
#include "modes.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>

#define MODE_FRAMES 256 /* snapshots cycled by push/pop */
#define MODE_DEPTH 64   /* deepest nesting of push */

_Atomic(struct mode_frame *) mode_top;
static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static struct mode_frame g_frames[MODE_FRAMES];    /* cycled; a frame is reused only MODE_FRAMES pushes later */
static unsigned g_frame_next;                      /* next frame to fill, under g_lock */
static struct mode_frame *g_stack[MODE_DEPTH + 1]; /* g_stack[0] is the configured mode */
static int g_depth;                                /* under g_lock */
static uint64_t g_frame_gen;                       /* generations handed to frames, under g_lock */

void mode_init(const struct cp_config *cfg) {
  pthread_mutex_lock(&g_lock);
  struct mode_frame *f = &g_frames[g_frame_next++];
  f->gen = ++g_frame_gen;
  f->mode = cfg->mode;
  snprintf(f->kernels, sizeof f->kernels, "%s", cfg->kernels);
  f->lo = cfg->launch_lo;
  f->hi = cfg->launch_hi;
  g_stack[0] = f;
  atomic_store_explicit(&mode_top, f, memory_order_release);
  pthread_mutex_unlock(&g_lock);
}

int mode_push(int mode, const char *kernels, uint64_t first, uint64_t last) {
  if (mode < CP_MODE_RECORD || mode > CP_MODE_PRECISE || first == 0 || first > last) return CULPRIT_EINVAL;
  if (kernels && strlen(kernels) >= CFG_PATTERN_MAX) return CULPRIT_EINVAL;
  pthread_mutex_lock(&g_lock);
  if (g_depth == MODE_DEPTH) {
    pthread_mutex_unlock(&g_lock);
    return CULPRIT_ESTACK;
  }
  /* Take the next frame that is not on the stack (at most MODE_DEPTH + 1 of the MODE_FRAMES are): a frame is
   * only reused once no launch can still be reading it through mode_top, and never while it is pushed. */
  struct mode_frame *f;
  for (;;) {
    int used = 0;
    f = &g_frames[g_frame_next++ % MODE_FRAMES];
    for (int i = 0; i <= g_depth && !used; i++) used = g_stack[i] == f;
    if (!used) break;
  }
  f->gen = ++g_frame_gen;
  f->mode = mode;
  snprintf(f->kernels, sizeof f->kernels, "%s", kernels && *kernels ? kernels : "*");
  f->lo = first;
  f->hi = last;
  g_stack[++g_depth] = f;
  /* release: the frame's fields are visible to launches that acquire the pointer. */
  atomic_store_explicit(&mode_top, f, memory_order_release);
  pthread_mutex_unlock(&g_lock);
  return 0;
}

int mode_pop(void) {
  pthread_mutex_lock(&g_lock);
  if (g_depth == 0) {
    pthread_mutex_unlock(&g_lock);
    return CULPRIT_ESTACK;
  }
  g_depth--;
  atomic_store_explicit(&mode_top, g_stack[g_depth], memory_order_release);
  pthread_mutex_unlock(&g_lock);
  return 0;
}

int mode_depth(void) {
  pthread_mutex_lock(&g_lock);
  int d = g_depth;
  pthread_mutex_unlock(&g_lock);
  return d;
}

void mode_after_fork(void) { pthread_mutex_init(&g_lock, NULL); }
