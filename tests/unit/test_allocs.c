/* The allocation table (src/core/allocs.c) and its JSON (src/aftermath/emit_allocs.c): frees and reuse of the same
 * address, host memory by its device address, the virtual memory API (a reservation mapped in pieces, unmapped in
 * one call), a full table (the oldest freed entry goes first, then allocations are counted and dropped), threads
 * allocating while a reader snapshots, a signal handler allocating on a thread that is writing, fork (the child's
 * table is its own, and a child forked while other threads write does not hang), and the report's "allocations"
 * object with its shared sites. The launch counter, the stacks and the frames' JSON are this test's own (below). */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "aftermath/emit.h"
#include "aftermath/emit_allocs.h"
#include "core/allocs.h"
#include "core/core.h"
#include "core/driver.h"
#include "render/json.h"
#include "base/jsonw.h"
#include "stack/stack.h"

struct cp_driver cp_drv;

static uint64_t g_launches; /* what cp_view reports as the last launch number */
void cp_view(struct cp_view *v) {
  memset(v, 0, sizeof *v);
  v->seq = __atomic_load_n(&g_launches, __ATOMIC_SEQ_CST);
}
static void launch(void) { __atomic_add_fetch(&g_launches, 1, __ATOMIC_SEQ_CST); }

/* The "call site" of the calling thread: its stack is one frame at 0x1000 + site, its Python one code object. */
static __thread int t_site = 1;
int stack_capture(void **pcs, int max) {
  if (max < 1) return 0;
  pcs[0] = (void *)(uintptr_t)(0x1000 + t_site);
  return 1;
}
int pystack_capture(struct pystack_ref *out, int max) {
  if (max < 1) return 0;
  out[0].code = (uint32_t)t_site;
  out[0].lasti = 2;
  return 1;
}
void emit_frames(struct jw *w, void *const *pcs, int n) {
  jw_arr_begin(w);
  for (int i = 0; i < n; i++) {
    jw_obj_begin(w);
    jw_key(w, "pc");
    jw_hex(w, (uintptr_t)pcs[i]);
    jw_obj_end(w);
  }
  jw_arr_end(w);
}
void emit_python(struct jw *w, const struct pystack_ref *py, int n) {
  jw_arr_begin(w);
  for (int i = 0; i < n; i++) jw_uint(w, py[i].code);
  jw_arr_end(w);
}

/* The snapshot's entry with this base that is live (want_live) or freed, else NULL; *count gets how many match. */
static const struct allocs_entry *find(const struct allocs_entry *e, size_t n, uint64_t base, int want_live,
                                       int *count) {
  const struct allocs_entry *hit = NULL;
  int c = 0;
  for (size_t i = 0; i < n; i++)
    if (e[i].base == base && !(e[i].flags & ALLOCS_FREED) == !!want_live) {
      hit = &e[i];
      c++;
    }
  if (count) *count = c;
  return hit;
}

static size_t count_live(const struct allocs_entry *e, size_t n) {
  size_t c = 0;
  for (size_t i = 0; i < n; i++) c += !(e[i].flags & ALLOCS_FREED);
  return c;
}

/* Frees, reuse of one address, and a free culprit did not see. */
static void test_frees_and_reuse(void) {
  size_t n;
  struct allocs_counts c;
  const uint64_t A = 0x200000000ull, B = 0x200100000ull;
  allocs_alloc(ALLOCS_DEVICE, A, 4096, 0, "cuMemAlloc_v2"); /* after launch 0 */
  launch();
  allocs_alloc(ALLOCS_ASYNC, B, 512, 0, "cuMemAllocAsync"); /* after launch 1 */
  launch();
  launch();
  allocs_free_device(A, "cuMemFree_v2");     /* after launch 3 */
  allocs_free_device(0x123, "cuMemFree_v2"); /* unknown: ignored */
  launch();
  allocs_alloc(ALLOCS_DEVICE, A, 1024, 0, "cuMemAlloc_v2"); /* the same address, after launch 4 */
  launch();
  allocs_alloc(ALLOCS_POOL, B, 256, 0, "cuMemAllocFromPoolAsync"); /* B was never freed: an unseen free */
  struct allocs_entry *e = allocs_snapshot(&n, &c);
  CHECK(e && n == 4, "4 entries, got %zu", n);
  CHECK(c.recorded == 4 && c.forgotten == 0 && c.not_recorded == 0 && c.capacity == ALLOCS_CAPACITY);
  for (size_t i = 1; e && i < n; i++) CHECK(e[i - 1].order < e[i].order, "oldest allocation first");
  int k;
  const struct allocs_entry *old = find(e, n, A, 0, &k), *now = find(e, n, A, 1, NULL);
  CHECK(old && k == 1 && old->size == 4096 && old->seq == 0 && old->freed_seq == 3 && old->freed_api &&
            !strcmp(old->freed_api, "cuMemFree_v2") && !(old->flags & ALLOCS_FREE_UNSEEN),
        "the freed range keeps its size and both launch numbers");
  CHECK(now && now->size == 1024 && now->seq == 4 && !strcmp(now->api, "cuMemAlloc_v2"),
        "the reuse is an entry of its own");
  const struct allocs_entry *b0 = find(e, n, B, 0, NULL), *b1 = find(e, n, B, 1, NULL);
  CHECK(b0 && (b0->flags & ALLOCS_FREE_UNSEEN) && !b0->freed_api && b0->freed_seq == 5 && b0->kind == ALLOCS_ASYNC,
        "an address handed out again frees its holder, as not seen");
  CHECK(b1 && b1->kind == ALLOCS_POOL && b1->size == 256);
  CHECK(e && e[0].nframes == 1 && e[0].frames[0] == (void *)0x1001 && e[0].npy == 1 && e[0].tid > 0,
        "the site and the thread are kept");
  free(e);
  allocs_free_device(A, "cuMemFreeAsync");
  allocs_free_device(B, "cuMemFree_v2");
}

static int fake_host_dptr(uint64_t *d, void *p, unsigned flags) {
  (void)flags;
  *d = (uint64_t)(uintptr_t)p + (1ull << 48);
  return 0;
}
static int failing_host_dptr(uint64_t *d, void *p, unsigned flags) {
  (void)d, (void)p, (void)flags;
  return 1;
}

/* Pinned host memory is known by its device address and freed by its host pointer. */
static void test_host(void) {
  size_t n;
  static char h1[64], h2[64];
  cp_drv.host_get_dptr = fake_host_dptr;
  allocs_alloc_host(h1, sizeof h1, "cuMemHostAlloc");
  cp_drv.host_get_dptr = failing_host_dptr;
  allocs_alloc_host(h2, sizeof h2, "cuMemAllocHost_v2");
  cp_drv.host_get_dptr = NULL;
  struct allocs_entry *e = allocs_snapshot(&n, NULL);
  uint64_t d1 = (uint64_t)(uintptr_t)h1 + (1ull << 48), d2 = (uint64_t)(uintptr_t)h2;
  const struct allocs_entry *x1 = find(e, n, d1, 1, NULL), *x2 = find(e, n, d2, 1, NULL);
  CHECK(x1 && x1->kind == ALLOCS_HOST && x1->host == (uint64_t)(uintptr_t)h1, "by its device view");
  CHECK(x2 && x2->host == d2, "the host pointer where the driver gives no device view");
  free(e);
  allocs_free_device(d1, "cuMemFree_v2"); /* not a device allocation: nothing happens */
  allocs_free_host(h1, "cuMemFreeHost");
  allocs_free_host(h2, "cuMemFreeHost");
  e = allocs_snapshot(&n, NULL);
  x1 = find(e, n, d1, 0, NULL);
  x2 = find(e, n, d2, 0, NULL);
  CHECK(x1 && x2 && !strcmp(x1->freed_api, "cuMemFreeHost") && !find(e, n, d1, 1, NULL), "freed by host pointer");
  free(e);
}

/* PyTorch's expandable segments: a large reservation mapped piece by piece as it grows, unmapped in one call. */
static void test_expandable_segment(void) {
  size_t n;
  struct allocs_counts c;
  const uint64_t R = 0x7000000000ull, P = 2ull << 20;
  allocs_alloc(ALLOCS_RESERVED, R, 64 * P, 0, "cuMemAddressReserve");
  for (int i = 0; i < 3; i++) {
    allocs_handle(1, P);
    allocs_alloc(ALLOCS_VM, R + (uint64_t)i * P, P, 0, "cuMemMap");
    launch();
  }
  allocs_handle(0, 0);
  allocs_unmap(R, 2 * P, "cuMemUnmap"); /* the first two pieces at once */
  struct allocs_entry *e = allocs_snapshot(&n, &c);
  CHECK(c.handles_created == 3 && c.handles_released == 1 && c.handle_bytes == 3 * P);
  const struct allocs_entry *res = NULL, *m[3] = {0};
  for (size_t i = 0; e && i < n; i++) {
    if (e[i].kind == ALLOCS_RESERVED && e[i].base == R) res = &e[i];
    for (int k = 0; k < 3; k++)
      if (e[i].kind == ALLOCS_VM && e[i].base == R + (uint64_t)k * P) m[k] = &e[i];
  }
  CHECK(res && !(res->flags & ALLOCS_FREED) && res->size == 64 * P, "a mapping at the reservation's start "
                                                                    "leaves the reservation alone");
  CHECK(m[0] && m[1] && m[2] && (m[0]->flags & ALLOCS_FREED) && (m[1]->flags & ALLOCS_FREED) &&
            !(m[2]->flags & ALLOCS_FREED),
        "one unmap of two pieces frees both, and only them");
  CHECK(m[0] && m[2] && m[0]->seq + 2 == m[2]->seq, "each piece keeps when it was mapped");
  free(e);
  allocs_unmap(R + 2 * P, P, "cuMemUnmap");
  allocs_unreserve(R, "cuMemAddressFree");
  e = allocs_snapshot(&n, NULL);
  CHECK(e && !find(e, n, R, 1, NULL) && !find(e, n, R + 2 * P, 1, NULL), "all of it freed");
  free(e);
}

/* A full table: the entry freed longest ago goes first, then nothing is dropped silently. */
static void test_overflow(void) {
  size_t n;
  struct allocs_counts c0, c;
  free(allocs_snapshot(&n, &c0));
  const uint64_t base = 0x100000000000ull;
  size_t live0 = 0;
  struct allocs_entry *e = allocs_snapshot(&n, NULL);
  live0 = count_live(e, n);
  free(e);
  /* every entry taken, the earlier tests' freed entries first */
  for (uint64_t i = 0; i < ALLOCS_CAPACITY - live0; i++) allocs_alloc(ALLOCS_DEVICE, base + i * 256, 256, 0, "a");
  e = allocs_snapshot(&n, &c);
  CHECK(n == ALLOCS_CAPACITY && count_live(e, n) == ALLOCS_CAPACITY, "the table is full of live entries: %zu", n);
  CHECK(c.not_recorded == c0.not_recorded, "no allocation dropped yet");
  free(e);
  allocs_alloc(ALLOCS_DEVICE, base - 256, 256, 0, "a"); /* no room: counted */
  free(allocs_snapshot(&n, &c));
  CHECK(c.not_recorded == c0.not_recorded + 1, "an allocation with every entry live is counted");
  /* free three in an order that is not their allocation order, then allocate two: the first two freed go */
  const uint64_t f1 = base + 7 * 256, f2 = base + 3 * 256, f3 = base + 11 * 256;
  allocs_free_device(f1, "cuMemFree_v2");
  allocs_free_device(f2, "cuMemFree_v2");
  allocs_free_device(f3, "cuMemFree_v2");
  uint64_t forgotten0 = c.forgotten;
  allocs_alloc(ALLOCS_DEVICE, base - 512, 256, 0, "b");
  allocs_alloc(ALLOCS_DEVICE, base - 768, 256, 0, "b");
  e = allocs_snapshot(&n, &c);
  CHECK(c.forgotten == forgotten0 + 2, "two freed entries were forgotten");
  CHECK(!find(e, n, f1, 0, NULL) && !find(e, n, f2, 0, NULL) && find(e, n, f3, 0, NULL),
        "the oldest frees went first, the latest is kept");
  CHECK(find(e, n, base - 512, 1, NULL) && find(e, n, base - 768, 1, NULL), "the new ones are in");
  free(e);
  /* leave room for the tests after this one */
  for (uint64_t i = 0; i < ALLOCS_CAPACITY; i++) allocs_free_device(base + i * 256, "cuMemFree_v2");
  allocs_free_device(base - 512, "x");
  allocs_free_device(base - 768, "x");
}

/* Threads allocating and freeing at once while another snapshots: every copy is whole, nothing is lost. */
#define THREADS 6
#define ROUNDS 3000
static _Atomic int g_stop;
static void *allocator(void *arg) {
  uint64_t id = (uint64_t)(uintptr_t)arg;
  t_site = (int)id + 10;
  for (uint64_t i = 0; i < ROUNDS; i++) {
    uint64_t b = (id + 1) << 40 | (i % 64) << 12;
    allocs_alloc(ALLOCS_DEVICE, b, (b >> 12) + id, 0, "cuMemAlloc_v2"); /* size tied to base: torn copies show */
    if (i % 3 != 2) allocs_free_device(b, "cuMemFree_v2");
  }
  return NULL;
}
static _Atomic int g_torn;
static void *reader(void *arg) {
  (void)arg;
  while (!atomic_load(&g_stop)) {
    size_t n;
    struct allocs_entry *e = allocs_snapshot(&n, NULL);
    for (size_t i = 0; i < n; i++) {
      uint64_t id = (e[i].base >> 40) - 1;
      if (id < THREADS && (e[i].size != (e[i].base >> 12) + id || e[i].frames[0] != (void *)(0x1000 + 10 + id)))
        atomic_fetch_add(&g_torn, 1);
    }
    free(e);
  }
  return NULL;
}
static void test_threads(void) {
  pthread_t t[THREADS], r;
  struct allocs_counts c0, c;
  size_t n;
  free(allocs_snapshot(&n, &c0));
  pthread_create(&r, NULL, reader, NULL);
  for (int i = 0; i < THREADS; i++) pthread_create(&t[i], NULL, allocator, (void *)(uintptr_t)i);
  for (int i = 0; i < THREADS; i++) pthread_join(t[i], NULL);
  atomic_store(&g_stop, 1);
  pthread_join(r, NULL);
  struct allocs_entry *e = allocs_snapshot(&n, &c);
  CHECK(atomic_load(&g_torn) == 0, "%d torn entries seen", atomic_load(&g_torn));
  CHECK(c.recorded + c.not_recorded - c0.recorded - c0.not_recorded == (uint64_t)THREADS * ROUNDS,
        "every allocation recorded or counted");
  /* each thread's last round of every base it left allocated: 64 bases, live exactly once each */
  int wrong = 0;
  for (uint64_t id = 0; id < THREADS; id++)
    for (uint64_t s = 0; s < 64; s++) {
      uint64_t b = (id + 1) << 40 | s << 12;
      int k;
      find(e, n, b, 1, &k);
      /* round i uses slot i % 64; the last round on slot s decides: kept when that round was i % 3 == 2 */
      uint64_t last = (ROUNDS - 1 - s) / 64 * 64 + s;
      if (k != (last % 3 == 2 ? 1 : 0)) wrong++;
    }
  CHECK(wrong == 0, "%d bases with the wrong live count", wrong);
  free(e);
  for (uint64_t id = 0; id < THREADS; id++)
    for (uint64_t s = 0; s < 64; s++) allocs_free_device((id + 1) << 40 | s << 12, "cuMemFree_v2");
}

/* A signal handler allocating on a thread that is in the middle of a write gives up instead of waiting for
 * itself. */
static _Atomic uint64_t g_sig_allocs;
static void on_alarm(int sig) {
  (void)sig;
  uint64_t k = atomic_fetch_add(&g_sig_allocs, 1);
  allocs_alloc(ALLOCS_DEVICE, 0x300000000000ull + k * 64, 64, 0, "handler");
}
static void test_signal_reentry(void) {
  struct allocs_counts c0, c;
  size_t n;
  free(allocs_snapshot(&n, &c0));
  signal(SIGALRM, on_alarm);
  struct itimerval it = {{0, 200}, {0, 200}};
  setitimer(ITIMER_REAL, &it, NULL);
  uint64_t mine = 0;
  for (int round = 0; round < 200 || atomic_load(&g_sig_allocs) < 50; round++) {
    for (uint64_t i = 0; i < 100; i++, mine++) {
      allocs_alloc(ALLOCS_DEVICE, 0x310000000000ull + (mine % 256) * 64, 64, 0, "main");
      allocs_free_device(0x310000000000ull + (mine % 256) * 64, "cuMemFree_v2");
    }
    if (round > 100000) break;
  }
  struct itimerval off = {{0, 0}, {0, 0}};
  setitimer(ITIMER_REAL, &off, NULL);
  signal(SIGALRM, SIG_DFL);
  free(allocs_snapshot(&n, &c));
  uint64_t tries = mine + atomic_load(&g_sig_allocs);
  CHECK(atomic_load(&g_sig_allocs) >= 50, "the handler ran");
  CHECK(c.recorded + c.not_recorded - c0.recorded - c0.not_recorded == tries,
        "every allocation recorded or counted, the handler's included (%llu of %llu)",
        (unsigned long long)(c.recorded + c.not_recorded - c0.recorded - c0.not_recorded), (unsigned long long)tries);
  for (uint64_t k = 0; k < atomic_load(&g_sig_allocs); k++)
    allocs_free_device(0x300000000000ull + k * 64, "cuMemFree_v2");
}

/* The child's table is its own; a child forked while other threads write never waits for them. */
static void *churn(void *arg) {
  (void)arg;
  for (uint64_t i = 0; !atomic_load(&g_stop); i++) {
    allocs_alloc(ALLOCS_DEVICE, 0x400000000000ull + (i % 128) * 64, 64, 0, "churn");
    allocs_free_device(0x400000000000ull + (i % 128) * 64, "cuMemFree_v2");
  }
  return NULL;
}
static void test_fork(void) {
  size_t n, pn;
  struct allocs_counts pc;
  allocs_alloc(ALLOCS_DEVICE, 0x500000000000ull, 100, 0, "parent");
  struct allocs_entry *pe = allocs_snapshot(&pn, &pc);
  pid_t pid = fork();
  if (pid == 0) {
    struct allocs_counts c;
    struct allocs_entry *e = allocs_snapshot(&n, &c);
    int bad = e != NULL || n != 0 || c.recorded != 0;
    allocs_alloc(ALLOCS_DEVICE, 0x500000000000ull, 200, 0, "child");
    allocs_free_device(0x500000000000ull, "cuMemFree_v2");
    e = allocs_snapshot(&n, &c);
    bad |= n != 1 || !e || e[0].size != 200 || !(e[0].flags & ALLOCS_FREED) || c.recorded != 1;
    _exit(bad ? 3 : 0);
  }
  int st = 0;
  waitpid(pid, &st, 0);
  CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "the child saw a table of its own (status %d)", st);
  size_t n2;
  struct allocs_counts c2;
  struct allocs_entry *e2 = allocs_snapshot(&n2, &c2);
  CHECK(n2 == pn && c2.recorded == pc.recorded && find(e2, n2, 0x500000000000ull, 1, NULL) &&
            find(e2, n2, 0x500000000000ull, 1, NULL)->size == 100,
        "the parent's table is untouched by the child's");
  free(e2);
  free(pe);
  allocs_free_device(0x500000000000ull, "cuMemFree_v2");

  atomic_store(&g_stop, 0);
  pthread_t t[2];
  for (int i = 0; i < 2; i++) pthread_create(&t[i], NULL, churn, NULL);
  int hung = 0, failed = 0;
  for (int k = 0; k < 40; k++) {
    pid = fork();
    if (pid == 0) {
      alarm(5); /* a child stuck on a lock its parent's threads held dies of this */
      allocs_alloc(ALLOCS_DEVICE, 0x600000000000ull, 64, 0, "child");
      struct allocs_counts c;
      struct allocs_entry *e = allocs_snapshot(&n, &c);
      _exit(n == 1 && e && e[0].base == 0x600000000000ull && c.recorded == 1 ? 0 : 3);
    }
    waitpid(pid, &st, 0);
    if (WIFSIGNALED(st))
      hung++;
    else if (!WIFEXITED(st) || WEXITSTATUS(st))
      failed++;
  }
  atomic_store(&g_stop, 1);
  for (int i = 0; i < 2; i++) pthread_join(t[i], NULL);
  CHECK(hung == 0 && failed == 0, "children forked beside writers: %d hung, %d wrong", hung, failed);
}

/* The report's object: every range with its fields, sites written once, counters. */
static void test_json(void) {
  struct jw w;
  allocs_configure(ALLOCS_FRAMES);
  t_site = 77;
  allocs_alloc(ALLOCS_PITCHED, 0x800000000000ull, 3000, 0, "cuMemAllocPitch_v2");
  allocs_alloc(ALLOCS_MANAGED, 0x800000100000ull, 100, 0, "cuMemAllocManaged");
  t_site = 78;
  launch();
  allocs_alloc(ALLOCS_DEVICE, 0x800000200000ull, 10, 0, "cuMemAlloc_v2");
  allocs_free_device(0x800000100000ull, "cuMemFree_v2");
  allocs_configure(0); /* --stack-depth 0: no native frames */
  allocs_alloc(ALLOCS_DEVICE, 0x800000300000ull, 10, 0, "cuMemAlloc_v2");
  allocs_configure(ALLOCS_FRAMES);
  jw_init(&w);
  jw_obj_begin(&w);
  emit_allocs(&w);
  jw_obj_end(&w);
  struct json *doc = NULL;
  CHECK(!w.err && json_parse(w.buf, w.len, &doc, NULL) == 0, "the JSON parses");
  const struct json *a = json_get(doc, "allocations"), *ranges = json_get(a, "ranges"), *sites = json_get(a, "sites");
  CHECK(json_get_int(a, "capacity", 0) == ALLOCS_CAPACITY && json_get_int(a, "recorded", 0) > 0 &&
            json_get_int(a, "not_recorded", -1) >= 1 && json_get(a, "overflowed") && json_get(a, "vm_handles"),
        "the counters, and the overflow of test_overflow");
  const struct json *pitched = NULL, *managed = NULL, *dev = NULL, *nostack = NULL;
  for (size_t i = 0; i < json_len(ranges); i++) {
    const struct json *r = json_at(ranges, i);
    const char *b = json_get_str(r, "base");
    if (b && !strcmp(b, "0x800000000000")) pitched = r;
    if (b && !strcmp(b, "0x800000100000")) managed = r;
    if (b && !strcmp(b, "0x800000200000")) dev = r;
    if (b && !strcmp(b, "0x800000300000")) nostack = r;
  }
  CHECK(pitched && json_get_int(pitched, "size", 0) == 3000 && !strcmp(json_get_str(pitched, "kind"), "pitched") &&
            !strcmp(json_get_str(pitched, "api"), "cuMemAllocPitch_v2") && !json_get(pitched, "freed_seq") &&
            json_get_int(pitched, "thread", 0) > 0,
        "a live range");
  CHECK(managed && !strcmp(json_get_str(managed, "kind"), "managed") &&
            json_get_int(managed, "freed_seq", -1) == json_get_int(managed, "seq", -2) + 1 &&
            !strcmp(json_get_str(managed, "freed_api"), "cuMemFree_v2"),
        "a freed range");
  long long s1 = json_get_int(pitched, "site", -1), s2 = json_get_int(managed, "site", -1);
  long long s3 = json_get_int(dev, "site", -1), s4 = json_get_int(nostack, "site", -1);
  CHECK(s1 >= 0 && s1 == s2 && s3 >= 0 && s3 != s1, "one site per call site (%lld %lld %lld)", s1, s2, s3);
  CHECK(s4 >= 0 && s4 != s3 && json_len(json_get(json_at(sites, (size_t)s4), "stack")) == 0,
        "without native frames, the Python ones still make a site");
  const struct json *site = json_at(sites, (size_t)s1);
  const char *pc = json_get_str(json_at(json_get(site, "stack"), 0), "pc");
  long long code = -1;
  json_int(json_at(json_get(site, "python"), 0), &code);
  CHECK(pc && !strcmp(pc, "0x104d") && code == 77 && json_len(json_get(site, "python")) == 1,
        "the site's frames, as every report's stack arrays");
  size_t users = 0;
  for (size_t i = 0; i < json_len(ranges); i++) users += json_get_int(json_at(ranges, i), "site", -1) == s1;
  CHECK(users == 2 && json_len(sites) < json_len(ranges), "sites are shared, not repeated");
  json_free(doc);
  jw_free(&w);
}

int main(void) {
  allocs_configure(ALLOCS_FRAMES);
  size_t n;
  struct allocs_counts c;
  CHECK(allocs_snapshot(&n, &c) == NULL && n == 0 && c.recorded == 0, "empty at start");
  CHECK(!strcmp(allocs_kind_name(ALLOCS_VM), "vm") && !strcmp(allocs_kind_name(99), "unknown"));
  allocs_alloc(ALLOCS_DEVICE, 0, 16, 0, "x"); /* no address, or no size: not a range */
  allocs_alloc(ALLOCS_DEVICE, 0x10, 0, 0, "x");
  allocs_alloc(ALLOCS_NKINDS, 0x10, 16, 0, "x");
  CHECK(allocs_snapshot(&n, &c) == NULL && c.recorded == 0, "nothing recorded of them");
  test_frees_and_reuse();
  test_host();
  test_expandable_segment();
  test_threads();
  test_signal_reentry();
  test_fork();
  test_overflow();
  test_json();
  return CHECK_DONE();
}
