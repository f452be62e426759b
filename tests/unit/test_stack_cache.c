/* The launching thread's chain cache (stack_capture_launch): whatever the call chain, a launch's stack must be
 * the one a fresh unwind gives, and a chain seen before must be reused. Scenarios: one site again and again,
 * two sites whose frames have the same size, recursion of every depth, variable-length frames, the same stack
 * pointer reached through different outer callers, six chains at one stack pointer (all kept) and ten (more
 * than a set holds: counted as replacing each other), chains deeper
 * than the limit, many distinct chains (the cache gives way to plain unwinds, and says so), threads, thread exit (the cache is unmapped), fork, signal handlers on the
 * thread's stack and on an alternate one, and a timer signal capturing while the thread is inside a capture.
 *
 * Each capture is taken twice through one call instruction, once through the cache and once afresh, so both
 * see the same frames. */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "stack/stack.h"

#define DEPTH 24

int probe_launch(void **pcs, int max, int *hit);
int probe_fresh(void **pcs, int max, int *hit);
void probe_counts(struct stack_cache_counts *out);

typedef int (*cap_fn)(void **, int, int *);
static cap_fn volatile g_fns[2] = {probe_launch, probe_fresh};
static volatile int g_twice = 2;

struct cap {
  int n[2];
  int hit;
  void *pcs[2][DEPTH];
};

/* One indirect call instruction for both captures. */
__attribute__((noinline)) static void leaf(int which, struct cap *c) {
  int hit = 0;
  c->n[which] = g_fns[which](c->pcs[which], DEPTH, &hit);
  if (which == 0) c->hit = hit;
}

/* Both captures from one call instruction here too (the loop is not unrolled: its count is volatile). */
__attribute__((noinline)) static void both(struct cap *c) {
  for (int which = 0; which < g_twice; which++) leaf(which, c);
  __asm__ volatile("" ::: "memory");
}

static int same(const struct cap *c) {
  return c->n[0] == c->n[1] && c->n[0] > 0 && !memcmp(c->pcs[0], c->pcs[1], sizeof(void *) * (size_t)c->n[0]);
}

static void explain(const char *what, const struct cap *c) {
  fprintf(stderr, "%s: cached %d frames, fresh %d\n", what, c->n[0], c->n[1]);
  for (int i = 0; i < c->n[0] || i < c->n[1]; i++)
    fprintf(stderr, "  %2d %p %p\n", i, i < c->n[0] ? c->pcs[0][i] : NULL, i < c->n[1] ? c->pcs[1][i] : NULL);
}

/* Captures at the end of a chain and checks it; returns whether the cache answered. */
static int check_cap(const char *what, struct cap *c) {
  int ok = same(c);
  CHECK(ok, "%s: the cached capture differs from a fresh one", what);
  if (!ok) explain(what, c);
  return c->hit;
}

/* ---- chains ---- */

__attribute__((noinline)) static int site_a(struct cap *c) {
  volatile char pad[96];
  pad[0] = 1;
  both(c);
  return pad[0];
}

__attribute__((noinline)) static int site_b(struct cap *c) {
  volatile char pad[96];
  pad[0] = 2;
  both(c);
  return pad[0];
}

__attribute__((noinline)) static int recurse(int d, struct cap *c) {
  volatile char pad[48];
  pad[0] = (char)d;
  if (d > 0) return recurse(d - 1, c) + pad[0];
  both(c);
  return pad[0];
}

__attribute__((noinline)) static int vla(int size, struct cap *c) {
  volatile char buf[size];
  buf[0] = 1;
  both(c);
  return buf[0];
}

/* Same frame size, different callers: the inner frames sit at the same addresses. */
__attribute__((noinline)) static int middle(struct cap *c) {
  volatile int x = 1;
  both(c);
  return x;
}
__attribute__((noinline)) static int outer_1(struct cap *c) {
  volatile char pad[64];
  pad[0] = 1;
  return middle(c) + pad[0];
}
__attribute__((noinline)) static int outer_2(struct cap *c) {
  volatile char pad[64];
  pad[0] = 2;
  return middle(c) + pad[0];
}

/* Call sites whose frames are alike, called from one place: as many chains at one stack pointer. */
#define SAME_SP_SITE(k)                                                                                                \
  __attribute__((noinline)) static int same_sp_##k(struct cap *c) {                                                    \
    volatile char pad[80];                                                                                             \
    pad[0] = k;                                                                                                        \
    both(c);                                                                                                           \
    return pad[0];                                                                                                     \
  }
SAME_SP_SITE(1)
SAME_SP_SITE(2)
SAME_SP_SITE(3)
SAME_SP_SITE(4)
SAME_SP_SITE(5)
SAME_SP_SITE(6)
SAME_SP_SITE(7)
SAME_SP_SITE(8)
SAME_SP_SITE(9)
SAME_SP_SITE(10)
static int (*volatile g_same_sp[10])(struct cap *) = {same_sp_1, same_sp_2, same_sp_3, same_sp_4, same_sp_5,
                                                      same_sp_6, same_sp_7, same_sp_8, same_sp_9, same_sp_10};

/* ---- scenarios ---- */

/* Learning a chain is rate-limited (it takes the slow unwinder), so a scenario's set of chains is captured round
 * after round until one round is answered from the cache almost entirely, for at most 10 s. */
struct round {
  int ok, hits, total;
};
typedef void (*round_fn)(struct round *);

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void note(struct round *r, struct cap *c, const char *what) {
  int ok = same(c);
  if (!ok && r->ok) explain(what, c);
  r->ok &= ok;
  r->hits += c->hit;
  r->total++;
}

/* Returns whether a round had at least share (in percent) of its captures answered from the cache; *ok says
 * whether every capture of every round agreed with a fresh one. */
static int g_rounds; /* rounds the last rounds_until_learned took */
static int rounds_until_learned(round_fn fn, int share, int *ok) {
  double deadline = now_s() + 10;
  *ok = 1;
  for (g_rounds = 1;; g_rounds++) {
    struct round r = {1, 0, 0};
    fn(&r);
    *ok &= r.ok;
    if (r.hits * 100 >= r.total * share) return 1;
    if (now_s() > deadline) return 0;
  }
}

static void round_one_site(struct round *r) {
  struct cap c;
  for (int i = 0; i < 200; i++) {
    site_a(&c);
    note(r, &c, "one site");
  }
}

static void round_two_sites(struct round *r) {
  struct cap c;
  for (int i = 0; i < 200; i++) {
    if (i & 1)
      site_b(&c);
    else
      site_a(&c);
    note(r, &c, "two sites");
  }
}

static void round_depths(struct round *r) {
  struct cap c;
  for (int d = 0; d < 40; d++) {
    recurse(d, &c);
    note(r, &c, "recursion");
  }
}

static void repeated(void) {
  int ok;
  CHECK(rounds_until_learned(round_one_site, 99, &ok), "one site: the chain was never reused");
  CHECK(ok, "one site: a capture differed");
  CHECK(rounds_until_learned(round_two_sites, 99, &ok), "two sites: the chains were never reused");
  CHECK(ok, "two sites: a capture differed");
}

static void depths(void) {
  int ok;
  CHECK(rounds_until_learned(round_depths, 95, &ok), "recursion: the chains were never reused");
  CHECK(ok, "recursion: a capture differed");
  struct cap c;
  recurse(100, &c);
  check_cap("deeper than the limit", &c);
  CHECK(c.n[0] == DEPTH, "a deep chain gave %d frames, not the limit %d", c.n[0], DEPTH);
}

static void variable_frames(void) {
  struct cap c;
  int ok = 1;
  for (int round = 0; round < 3; round++)
    for (int size = 16; size < 2048; size += 37) {
      vla(size, &c);
      ok &= same(&c);
    }
  CHECK(ok, "variable-length frames: a capture differed");
}

static void different_callers(void) {
  struct cap c1, c2;
  int ok = 1, differ = 0;
  for (int i = 0; i < 50; i++) {
    outer_1(&c1);
    ok &= same(&c1);
    outer_2(&c2);
    ok &= same(&c2);
    differ += memcmp(c1.pcs[0], c2.pcs[0], sizeof(void *) * (size_t)(c1.n[0] < c2.n[0] ? c1.n[0] : c2.n[0])) != 0;
  }
  CHECK(ok, "two callers at the same depth: a capture differed");
  CHECK(differ == 50, "two callers: their chains matched %d times", 50 - differ);
}

static void round_same_sp(struct round *r) {
  struct cap c;
  for (int i = 0; i < 240; i++) {
    g_same_sp[i % 6](&c);
    note(r, &c, "six chains at one stack pointer");
  }
}

/* A PyTorch thread reaches its launch from many call chains at the same depth; a set of the cache must hold
 * more of them than that, or they evict each other in turn and every launch is unwound afresh. */
static void same_stack_pointer(void) {
  int ok = 1, all = 1, rounds[3];
  struct stack_cache_counts before[3], after[3];
  /* from one call site each time (a chain includes its callers): learned, then held whole (other chains in the
   * set give way first), then held with nothing more learned or replaced */
  for (int k = 0; k < 3; k++) {
    int ok_k;
    probe_counts(&before[k]);
    all &= rounds_until_learned(round_same_sp, k ? 100 : 99, &ok_k);
    probe_counts(&after[k]);
    rounds[k] = g_rounds;
    ok &= ok_k;
  }
  CHECK(all, "six chains at one stack pointer: never all reused");
  CHECK(ok, "six chains at one stack pointer: a capture differed");
  CHECK(rounds[2] == 1 && after[2].evicted == before[2].evicted && after[2].learned == before[2].learned,
        "six chains at one stack pointer, once held: %d rounds, %llu more learned, %llu more evicted", rounds[2],
        (unsigned long long)(after[2].learned - before[2].learned),
        (unsigned long long)(after[2].evicted - before[2].evicted));
  /* ten are more than a set holds: they replace each other, and the counts say so */
  struct stack_cache_counts c0, c1;
  probe_counts(&c0);
  c1 = c0;
  double deadline = now_s() + 5;
  struct cap c;
  ok = 1;
  for (int i = 0; c1.evicted_same_sp == c0.evicted_same_sp && now_s() < deadline; i++) {
    g_same_sp[i % 10](&c);
    ok &= same(&c);
    probe_counts(&c1);
  }
  CHECK(ok, "ten chains at one stack pointer: a capture differed");
  CHECK(c1.evicted_same_sp > c0.evicted_same_sp && c1.evicted > c0.evicted,
        "ten chains at one stack pointer: none counted as replacing another at the same stack pointer");
}

static void many_chains(void) {
  struct stack_cache_counts before, after;
  probe_counts(&before);
  struct cap c;
  int ok = 1;
  /* more distinct chains than the cache holds, most of them missing: learning walks run out of their budget */
  for (int round = 0; round < 2; round++)
    for (int d = 0; d < 1500; d++) {
      vla(16 + 16 * d, &c);
      ok &= same(&c);
    }
  CHECK(ok, "many chains: a capture differed");
  /* the counts say what happened: the cache filled, chains replaced others, and learning ran out of time */
  probe_counts(&after);
  CHECK(after.learned + after.evicted > before.learned + before.evicted && after.over_budget > before.over_budget,
        "many chains: learned %llu, evicted %llu, over budget %llu (kept ones and over budget should have grown)",
        (unsigned long long)(after.learned - before.learned), (unsigned long long)(after.evicted - before.evicted),
        (unsigned long long)(after.over_budget - before.over_budget));
  /* and comes back */
  CHECK(rounds_until_learned(round_one_site, 99, &ok), "after many chains: the cache never answered again");
  CHECK(ok, "after many chains: a capture differed");
}

/* ---- threads ---- */

static void round_mixed(struct round *r) {
  struct cap c;
  for (int i = 0; i < 300; i++) {
    if (i % 3 == 0)
      site_b(&c);
    else if (i % 3 == 1)
      recurse(i % 7, &c);
    else
      site_a(&c);
    note(r, &c, "thread");
  }
}

struct thread_result {
  int ok, learned;
};

static void *thread_body(void *arg) {
  struct thread_result *r = arg;
  r->learned = rounds_until_learned(round_mixed, 95, &r->ok);
  return NULL;
}

static void threads(void) {
  pthread_t t[8];
  struct thread_result r[8];
  memset(r, 0, sizeof r);
  for (int i = 0; i < 8; i++) pthread_create(&t[i], NULL, thread_body, &r[i]);
  for (int i = 0; i < 8; i++) pthread_join(t[i], NULL);
  for (int i = 0; i < 8; i++) {
    CHECK(r[i].ok, "thread %d: a capture differed", i);
    CHECK(r[i].learned, "thread %d: its chains were never reused", i);
  }
}

/* The process's address space in KiB (VmSize): adjacent anonymous mappings merge, so counting them proves
 * nothing; their total does. */
static long vm_kib(void) {
  FILE *f = fopen("/proc/self/status", "r");
  char line[256];
  long kib = -1;
  if (!f) return -1;
  while (fgets(line, sizeof line, f))
    if (!strncmp(line, "VmSize:", 7)) kib = strtol(line + 7, NULL, 10);
  fclose(f);
  return kib;
}

static void *one_capture(void *arg) {
  struct cap c;
  site_a(&c);
  *(int *)arg = same(&c);
  return NULL;
}

/* Runs n threads one after the other, each capturing once; returns whether every capture agreed. */
static int short_threads(int n) {
  int ok = 1;
  for (int i = 0; i < n; i++) {
    pthread_t t;
    int r = 0;
    pthread_create(&t, NULL, one_capture, &r);
    pthread_join(t, NULL);
    ok &= r;
  }
  return ok;
}

static void thread_exit(void) {
  /* a few threads first, so that the thread stacks glibc keeps for reuse exist before measuring */
  int ok = short_threads(20);
  long before = vm_kib();
  ok &= short_threads(300);
  long after = vm_kib();
  CHECK(ok, "short-lived threads: a capture differed");
  /* a cache is some hundreds of KiB: 300 left behind would be tens of MiB */
  CHECK(before > 0 && after - before < 8192, "300 threads that exited left %ld KiB more address space (%ld, then %ld)",
        after - before, before, after);
}

static void forked(void) {
  pid_t pid = fork();
  if (pid == 0) {
    int ok, ok2, learned = rounds_until_learned(round_one_site, 99, &ok);
    learned &= rounds_until_learned(round_depths, 95, &ok2);
    _exit(ok && ok2 && learned ? 0 : 1);
  }
  int st = 0;
  CHECK(pid > 0 && waitpid(pid, &st, 0) == pid, "fork or wait failed");
  CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "forked child: captures differed or missed (status %d)", st);
}

/* ---- signals ---- */

static struct cap g_sig_cap;
static volatile sig_atomic_t g_sig_ok = 1, g_sig_count;

static void on_signal(int sig) {
  (void)sig;
  site_b(&g_sig_cap);
  if (!same(&g_sig_cap)) g_sig_ok = 0;
  g_sig_count++;
}

static void signals(void) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_signal;
  sigaction(SIGUSR1, &sa, NULL);
  for (int i = 0; i < 100; i++) raise(SIGUSR1);
  CHECK(g_sig_count == 100 && g_sig_ok, "handler on the thread's stack: %d of 100 ran, captures %s", (int)g_sig_count,
        g_sig_ok ? "agreed" : "differed");

  /* an alternate signal stack lies outside the thread's: captured afresh */
  struct stack_cache_counts before, after;
  probe_counts(&before);
  stack_t ss;
  ss.ss_sp = malloc(1 << 16);
  ss.ss_size = 1 << 16;
  ss.ss_flags = 0;
  sigaltstack(&ss, NULL);
  sa.sa_flags = SA_ONSTACK;
  sigaction(SIGUSR1, &sa, NULL);
  g_sig_count = 0;
  for (int i = 0; i < 100; i++) raise(SIGUSR1);
  CHECK(g_sig_count == 100 && g_sig_ok, "handler on an alternate stack: %d of 100 ran, captures %s", (int)g_sig_count,
        g_sig_ok ? "agreed" : "differed");
  probe_counts(&after);
  CHECK(after.bypassed - before.bypassed == 100,
        "handler on an alternate stack: %llu of 100 captures counted as "
        "not looked up",
        (unsigned long long)(after.bypassed - before.bypassed));
  ss.ss_flags = SS_DISABLE;
  sigaltstack(&ss, NULL);

  /* a timer signal that captures while the thread may be inside a capture of its own */
  sa.sa_flags = SA_RESTART;
  sigaction(SIGPROF, &sa, NULL);
  struct itimerval it = {{0, 200}, {0, 200}};
  g_sig_count = 0;
  setitimer(ITIMER_PROF, &it, NULL);
  struct cap c;
  int ok = 1;
  for (int i = 0; i < 200000 || g_sig_count < 20; i++) {
    if (i & 1)
      site_a(&c);
    else
      recurse(i % 5, &c);
    ok &= same(&c);
    if (i > 20000000) break;
  }
  memset(&it, 0, sizeof it);
  setitimer(ITIMER_PROF, &it, NULL);
  signal(SIGPROF, SIG_IGN);
  CHECK(ok, "captures interrupted by a capturing signal handler differed");
  CHECK(g_sig_ok, "captures inside the timer's handler differed");
  CHECK(g_sig_count >= 20, "the timer's handler ran only %d times", (int)g_sig_count);
}

int main(void) {
  repeated();
  depths();
  variable_frames();
  different_callers();
  same_stack_pointer();
  many_chains();
  threads();
  thread_exit();
  forked();
  signals();
  return CHECK_DONE();
}
