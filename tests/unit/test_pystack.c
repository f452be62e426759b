/* Test probe for stack/pystack.c, built as libpystack_probe.so and driven from Python by pystack_helper.py:
 * it captures the calling thread's Python stack exactly as a launch would and describes it. It is not a
 * standalone test program; the checks live in the helper. */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>

#include "stack/pystack.h"

#define PROBE_EXPORT __attribute__((visibility("default")))

static struct pystack_ref g_kept[PYSTACK_MAX]; /* frames held by pystack_probe_keep for a later describe */
static int g_nkept;                            /* how many of g_kept are valid */

static int describe_into(const struct pystack_ref *refs, int n, char *buf, int len) {
  int used = 0;
  if (len <= 0) return -1;
  buf[0] = 0;
  for (int i = 0; i < n; i++) {
    char file[1024], func[256];
    int line = 0;
    if (pystack_describe(&refs[i], file, sizeof file, func, sizeof func, &line)) return -1;
    int w = snprintf(buf + used, (size_t)(len - used), "%s:%d %s\n", file, line, func);
    if (w < 0 || w >= len - used) return -1;
    used += w;
  }
  return n;
}

/* Captures and describes the calling thread's Python frames into buf, one "file:line function" line each,
 * innermost first. Returns the number of frames, or -1 if buf is too small or a frame cannot be described. */
PROBE_EXPORT int pystack_probe(char *buf, int len) {
  struct pystack_ref refs[PYSTACK_MAX];
  int n = pystack_capture(refs, PYSTACK_MAX);
  return describe_into(refs, n, buf, len);
}

/* The key of the calling thread's frames (pystack_key) and, from the same place, their capture described into buf.
 * Returns what pystack_key returned. */
PROBE_EXPORT int pystack_probe_key(char *buf, int len, unsigned long long *key) {
  uint64_t k = 0;
  int n = pystack_key(&k);
  *key = k;
  struct pystack_ref refs[PYSTACK_MAX];
  if (describe_into(refs, pystack_capture(refs, PYSTACK_MAX), buf, len) < 0) return -2;
  return n;
}

/* Captures now and describes later (pystack_probe_describe_kept), as a report does after the code objects of
 * the captured frames may have been freed. Returns the number of frames. */
PROBE_EXPORT int pystack_probe_keep(void) {
  g_nkept = pystack_capture(g_kept, PYSTACK_MAX);
  return g_nkept;
}

PROBE_EXPORT int pystack_probe_describe_kept(char *buf, int len) { return describe_into(g_kept, g_nkept, buf, len); }

static void *c_thread_body(void *arg) {
  struct pystack_ref refs[PYSTACK_MAX];
  *(int *)arg = pystack_capture(refs, PYSTACK_MAX);
  return NULL;
}

/* Captures from a fresh native thread that has never run Python: must find no frames (and not crash).
 * Returns the count it found, or -1 if the thread could not be started. */
PROBE_EXPORT int pystack_probe_c_thread(void) {
  pthread_t t;
  int n = -1;
  if (pthread_create(&t, NULL, c_thread_body, &n)) return -1;
  pthread_join(t, NULL);
  return n;
}

/* Code objects freed so far, as pystack counts them. */
PROBE_EXPORT unsigned long long pystack_probe_frees(void) { return pystack_code_frees(); }

/* Captures made while a profiling timer keeps interrupting: the handler captures too, on top of the same Python
 * frames (the thread is inside this C call), sometimes in the middle of the loop's own capture. Every capture,
 * the loop's and the handler's, must equal the one made before the timer started. */
static struct pystack_ref g_storm_ref[PYSTACK_MAX]; /* the capture everything is compared with */
static int g_storm_n;                               /* its frame count */
static volatile sig_atomic_t g_storm_bad;           /* captures that differed from it */
static volatile sig_atomic_t g_storm_caught;        /* handler captures made */

static int storm_same(const struct pystack_ref *refs, int n) {
  return n == g_storm_n && !memcmp(refs, g_storm_ref, sizeof(struct pystack_ref) * (size_t)n);
}

static void storm_handler(int sig) {
  (void)sig;
  struct pystack_ref refs[PYSTACK_MAX];
  int n = pystack_capture(refs, PYSTACK_MAX);
  if (!storm_same(refs, n)) g_storm_bad = g_storm_bad + 1;
  g_storm_caught = g_storm_caught + 1;
}

/* Captures until the handler has captured WANT times (or 5 s have passed: the timer ticks with the kernel's
 * clock, a few milliseconds). Returns the number of captures that differed (0 is a pass), or -1 if the timer
 * could not be set up; *caught gets how many the handler made. */
PROBE_EXPORT int pystack_probe_signal_storm(int want, int *caught) {
  struct sigaction sa, old;
  struct itimerval tv = {{0, 200}, {0, 200}}, off = {{0, 0}, {0, 0}};
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = storm_handler;
  sa.sa_flags = SA_RESTART;
  g_storm_n = pystack_capture(g_storm_ref, PYSTACK_MAX);
  g_storm_bad = 0;
  g_storm_caught = 0;
  if (g_storm_n <= 0 || sigaction(SIGPROF, &sa, &old) || setitimer(ITIMER_PROF, &tv, NULL)) return -1;
  int bad = 0;
  struct timespec t0, t;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  do {
    for (int i = 0; i < 1000; i++) {
      struct pystack_ref refs[PYSTACK_MAX];
      int n = pystack_capture(refs, PYSTACK_MAX);
      if (!storm_same(refs, n)) bad++;
    }
    clock_gettime(CLOCK_MONOTONIC, &t);
  } while (g_storm_caught < want && t.tv_sec - t0.tv_sec < 5);
  setitimer(ITIMER_PROF, &off, NULL);
  sigaction(SIGPROF, &old, NULL);
  *caught = g_storm_caught;
  return bad + g_storm_bad;
}

/* pystack_status's phrase, so the helper can tell "unsupported" (skip) from a failure. */
PROBE_EXPORT const char *pystack_probe_status(void) { return pystack_status(); }

/* Average nanoseconds per capture over iters captures of the current stack (all code objects already known
 * after the first), for a rough cost check. */
PROBE_EXPORT double pystack_probe_bench(int iters) {
  struct pystack_ref refs[PYSTACK_MAX];
  struct timespec a, b;
  volatile int sink = 0;
  pystack_capture(refs, PYSTACK_MAX);
  clock_gettime(CLOCK_MONOTONIC, &a);
  for (int i = 0; i < iters; i++) sink += pystack_capture(refs, PYSTACK_MAX);
  clock_gettime(CLOCK_MONOTONIC, &b);
  (void)sink;
  return iters > 0 ? ((double)(b.tv_sec - a.tv_sec) * 1e9 + (double)(b.tv_nsec - a.tv_nsec)) / iters : 0.0;
}
