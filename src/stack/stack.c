/* Native stack capture. With libunwind (opened privately, see open_unwinder), unw_backtrace walks .eh_frame with
 * cached unwind info (a fraction of a microsecond for a deep stack); without it glibc's backtrace() is used,
 * which is correct but far slower.
 * Frames inside libculprit are dropped by address range so reports start at the caller's code.
 *
 * Launch stacks repeat: a training step launches from the same few hundred call chains over and over. Each
 * launching thread keeps the chains it saw (stack_capture_launch): a chain is the return addresses and the
 * stack slots they were read from, keyed by the stack pointer at the capture. When the stack pointer is the same
 * and every slot still holds its return address, the caller's frames are the same ones (each frame's place
 * follows from the one inside it and its return address), so the chain is copied instead of unwound: a few
 * dozen loads from the thread's own stack instead of a walk of the unwind tables. */
#define _GNU_SOURCE
#include "stack.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>

#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <unwind.h>

#include <execinfo.h>

#ifndef CULPRIT_UNWIND_SONAME
#define CULPRIT_UNWIND_SONAME "libunwind.so.8"
#endif

#define SELF_SKIP_MAX 12 /* culprit frames above the caller: wrapper, core, capture */

static uintptr_t g_self_lo, g_self_hi;       /* address range of libculprit's loaded segments */
static int (*g_unw_backtrace)(void **, int); /* libunwind's, opened RTLD_LOCAL; NULL: glibc's backtrace */
static int g_unw_pipe[2] = {-1, -1};         /* the pipe libunwind keeps (see unwinder_pipe_kept), or -1 */
static dev_t g_unw_pipe_dev;                 /* ...its device */
static ino_t g_unw_pipe_ino;                 /* ...and inode, one for both ends */
static _Atomic int g_unw_lost;               /* the program closed or reused the pipe: libunwind is not used */
static uintptr_t g_main_base;                /* lowest mapped address of the main program */
static pthread_once_t g_once = PTHREAD_ONCE_INIT;

/* The main program comes first in dl_iterate_phdr's order; libculprit is found by an address inside it. */
static int find_self(struct dl_phdr_info *info, size_t size, void *data) {
  (void)size;
  uintptr_t me = (uintptr_t)data;
  uintptr_t lo = UINTPTR_MAX, hi = 0;
  for (int i = 0; i < info->dlpi_phnum; i++) {
    const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
    if (ph->p_type != PT_LOAD) continue;
    uintptr_t a = info->dlpi_addr + ph->p_vaddr;
    if (a < lo) lo = a;
    if (a + ph->p_memsz > hi) hi = a + ph->p_memsz;
  }
  if (!g_main_base) g_main_base = lo;
  if (me >= lo && me < hi) {
    g_self_lo = lo;
    g_self_hi = hi;
    return 1;
  }
  return 0;
}

/* libunwind keeps a non-blocking pipe for its whole life (opened at its first walk): when a frame has no unwind
 * information it checks an address by writing the byte there into the pipe and reading one back. A program that
 * closes every descriptor it did not open (a daemon, a task runner) and opens its own would hand libunwind its
 * pipe or file under the same numbers: libunwind would eat the program's bytes and write bytes of memory into
 * its file. So the pipe is learned at the first walk (the lowest two free numbers, where pipe2 puts it) and
 * checked before every walk; once it is not libunwind's any more, glibc's backtrace (no descriptor) is used.
 * The first walk comes with the first stack culprit takes, never at start (a process that launches nothing gets
 * no pipe), and a closed stdin, stdout or stderr is held meanwhile, so the pipe never takes their numbers. */
static int unwinder_pipe_learn(void) {
  int probe[2], fl[2], held[3] = {-1, -1, -1};
  void *pcs[4];
  struct stat a, b;
  for (int fd = 0; fd < 3; fd++)
    if (fcntl(fd, F_GETFD) < 0) held[fd] = open("/dev/null", O_RDWR | O_CLOEXEC | O_NOCTTY);
  int rc = pipe2(probe, O_CLOEXEC);
  if (rc == 0) {
    close(probe[0]);
    close(probe[1]);
    g_unw_backtrace(pcs, 4);
  }
  for (int k = 0; k < 3; k++)
    if (held[k] >= 0) close(held[k]);
  if (rc != 0) return -1; /* no descriptor free now: libunwind would open one later, anywhere */
  int open0 = fstat(probe[0], &a) == 0, open1 = fstat(probe[1], &b) == 0;
  if (!open0 && !open1) return 0; /* this libunwind keeps no pipe */
  fl[0] = fcntl(probe[0], F_GETFL);
  fl[1] = fcntl(probe[1], F_GETFL);
  if (!open0 || !open1 || !S_ISFIFO(a.st_mode) || a.st_ino != b.st_ino || a.st_dev != b.st_dev || fl[0] < 0 ||
      fl[1] < 0 || !(fl[0] & O_NONBLOCK) || (fl[0] & O_ACCMODE) != O_RDONLY || (fl[1] & O_ACCMODE) != O_WRONLY)
    return -1; /* another thread opened something there meanwhile: which is libunwind's cannot be told */
  g_unw_pipe[0] = probe[0];
  g_unw_pipe[1] = probe[1];
  g_unw_pipe_dev = a.st_dev;
  g_unw_pipe_ino = a.st_ino;
  return 0;
}

static pthread_once_t g_learn_once = PTHREAD_ONCE_INIT;
static void learn_once(void) {
  if (unwinder_pipe_learn() != 0) atomic_store_explicit(&g_unw_lost, 1, memory_order_relaxed);
}

/* Whether libunwind may walk: its pipe is still its own (two fstat calls, on a walk that costs microseconds
 * anyway). The first call makes libunwind's first walk. */
static int unwinder_pipe_kept(void) {
  struct stat a, b;
  pthread_once(&g_learn_once, learn_once);
  if (atomic_load_explicit(&g_unw_lost, memory_order_relaxed)) return 0;
  if (g_unw_pipe[0] < 0) return 1;
  if (fstat(g_unw_pipe[0], &a) == 0 && fstat(g_unw_pipe[1], &b) == 0 && a.st_ino == g_unw_pipe_ino &&
      b.st_ino == g_unw_pipe_ino && a.st_dev == g_unw_pipe_dev && b.st_dev == g_unw_pipe_dev)
    return 1;
  atomic_store_explicit(&g_unw_lost, 1, memory_order_relaxed);
  return 0;
}

/* libunwind comes from beside libculprit.so (the build copies it there) or from the system, always RTLD_LOCAL:
 * in the global scope its _Unwind_* and backtrace exports would replace the C++ runtime's for the whole process. */
static void open_unwinder(void) {
  Dl_info di;
  void *h = NULL;
  if (dladdr((void *)&stack_capture, &di) && di.dli_fname) {
    char path[1024];
    const char *slash = strrchr(di.dli_fname, '/');
    if (slash && (size_t)(slash - di.dli_fname) + sizeof "/" CULPRIT_UNWIND_SONAME < sizeof path) {
      snprintf(path, sizeof path, "%.*s/%s", (int)(slash - di.dli_fname), di.dli_fname, CULPRIT_UNWIND_SONAME);
      h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    }
  }
  if (!h) h = dlopen(CULPRIT_UNWIND_SONAME, RTLD_NOW | RTLD_LOCAL);
  if (h) *(void **)&g_unw_backtrace = dlsym(h, "unw_backtrace");
}

static pthread_key_t g_cache_key; /* unmaps a thread's chain cache when it exits */
static int g_cache_key_ok;
static void sc_thread_gone(void *cache);

static void init_self(void) {
  dl_iterate_phdr(find_self, (void *)(uintptr_t)&stack_capture);
  open_unwinder();
  g_cache_key_ok = pthread_key_create(&g_cache_key, sc_thread_gone) == 0;
}

const char *stack_unwinder(void) {
  pthread_once(&g_once, init_self);
  return g_unw_backtrace && !atomic_load_explicit(&g_unw_lost, memory_order_relaxed) ? "libunwind" : "glibc-backtrace";
}

void stack_init(void) { pthread_once(&g_once, init_self); }

int stack_capture(void **pcs, int max) {
  void *buf[64 + SELF_SKIP_MAX];
  int want = max + SELF_SKIP_MAX, n, skip = 0;
  if (max <= 0) return 0;
  pthread_once(&g_once, init_self);
  if (want > (int)(sizeof buf / sizeof buf[0])) want = (int)(sizeof buf / sizeof buf[0]);
  n = g_unw_backtrace && unwinder_pipe_kept() ? g_unw_backtrace(buf, want) : backtrace(buf, want);
  if (n < 0) n = 0;
  while (skip < n && (uintptr_t)buf[skip] >= g_self_lo && (uintptr_t)buf[skip] < g_self_hi) skip++;
  n -= skip;
  if (n > max) n = max;
  memcpy(pcs, buf + skip, (size_t)n * sizeof(void *));
  return n;
}

/* ---- the launching thread's chain cache ---- */

#define SC_SETS 256                   /* sets of the cache, by stack pointer */
#define SC_WAYS 8                     /* chains per set: a free way, else one picked at random */
#define SC_DEPTH_MAX 64               /* deepest chain cached */
#define SC_WALK_SHARE 50              /* walks that learn a chain take at most 1/this of the thread's time */
#define SC_WALK_BURST_NS 100000000ull /* beyond a first 100 ms of them (a PyTorch model's chains) */

struct sc_entry {
  uint32_t n; /* frames */
  uint32_t pad;
  uint64_t hash; /* stack_hash of the frames */
  /* then n pc words, then n uint32_t slot offsets above the capture's stack pointer (its tag) */
};

struct sc_cache {
  uintptr_t lo, hi;                /* this thread's stack */
  int depth;                       /* frames an entry holds */
  size_t esize;                    /* bytes per entry */
  int busy;                        /* a capture is inside the cache (a signal handler's waits) */
  uint64_t walk_tat;               /* rate of learning walks (GCRA): when their budget is spent */
  uint32_t rng;                    /* picks the way to replace when a set is full */
  uintptr_t tag[SC_SETS][SC_WAYS]; /* each entry's capture sp, side by side (a lookup reads one cache
                                              * line); 0 while the entry is empty or being written */
  uint64_t entries[];              /* SC_SETS * SC_WAYS entries of esize bytes */
};

static _Atomic uint64_t g_sc_learned, g_sc_evicted, g_sc_evicted_same, g_sc_not_kept, g_sc_over_budget,
    g_sc_bypassed; /* stack_cache_counts; touched on misses only */
#define SC_COUNT(c) atomic_fetch_add_explicit(&(c), 1, memory_order_relaxed)

static __thread struct sc_cache *tls_cache;
static __thread int tls_cache_state; /* 0: not made yet, 1: made, -1: not for this thread */

static void sc_thread_gone(void *cache) {
  struct sc_cache *c = cache;
  tls_cache = NULL;
  tls_cache_state = -1; /* a later destructor of this thread launching: unwound afresh */
  if (c) munmap(c, sizeof *c + (size_t)SC_SETS * SC_WAYS * c->esize);
}

static struct sc_cache *sc_make(int depth) {
  pthread_attr_t attr;
  void *addr;
  size_t size;
  if (!g_cache_key_ok || pthread_getattr_np(pthread_self(), &attr)) return NULL;
  int bad = pthread_attr_getstack(&attr, &addr, &size);
  pthread_attr_destroy(&attr);
  if (bad || !size) return NULL;
  size_t esize = (sizeof(struct sc_entry) + (size_t)depth * (sizeof(uintptr_t) + sizeof(uint32_t)) + 7) & ~(size_t)7;
  size_t len = sizeof(struct sc_cache) + (size_t)SC_SETS * SC_WAYS * esize;
  struct sc_cache *c = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (c == MAP_FAILED) return NULL;
  c->lo = (uintptr_t)addr;
  c->hi = (uintptr_t)addr + size;
  c->depth = depth;
  c->esize = esize;
  if (pthread_setspecific(g_cache_key, c)) {
    munmap(c, len);
    return NULL;
  }
  return c;
}

static inline struct sc_entry *sc_at(struct sc_cache *c, unsigned set, unsigned way) {
  return (struct sc_entry *)((char *)c->entries + ((size_t)set * SC_WAYS + way) * c->esize);
}
static inline uintptr_t *sc_pcs(struct sc_entry *e) { return (uintptr_t *)(e + 1); }
static inline uint32_t *sc_slots(struct sc_cache *c, struct sc_entry *e) { return (uint32_t *)(sc_pcs(e) + c->depth); }
static inline unsigned sc_set(uintptr_t sp) {
  return (unsigned)(((sp >> 3) * 0x9E3779B97F4A7C15ull) >> 56) & (SC_SETS - 1);
}

/* A walk with the libgcc unwinder, which also tells where each return address was read: the word below the
 * canonical frame address of the frame that returns there (the CFA its context carries). */
struct sc_walk {
  int n, max;
  uintptr_t pc[SC_DEPTH_MAX + SELF_SKIP_MAX];
  uintptr_t slot[SC_DEPTH_MAX + SELF_SKIP_MAX]; /* 0: not known (a frame a signal interrupted) */
};

static _Unwind_Reason_Code sc_step(struct _Unwind_Context *ctx, void *arg) {
  struct sc_walk *w = arg;
  int before = 0;
  uintptr_t ip = _Unwind_GetIPInfo(ctx, &before);
  if (!ip || w->n >= w->max) return _URC_END_OF_STACK;
  uintptr_t cfa = _Unwind_GetCFA(ctx);
  w->pc[w->n] = ip;
  w->slot[w->n] = cfa && !before ? cfa - sizeof(uintptr_t) : 0;
  w->n++;
  return _URC_NO_REASON;
}

/* Unwinds afresh and keeps the chain in the cache when every slot checks out. */
static __attribute__((noinline)) int sc_miss(struct sc_cache *c, uintptr_t sp, void **pcs, int max) {
  struct sc_walk w;
  w.n = 0;
  w.max = max + SELF_SKIP_MAX;
  _Unwind_Backtrace(sc_step, &w);
  int skip = 0;
  while (skip < w.n && w.pc[skip] >= g_self_lo && w.pc[skip] < g_self_hi) skip++;
  int n = w.n - skip;
  if (n > max) n = max;
  if (n <= 0) return 0;
  memcpy(pcs, w.pc + skip, (size_t)n * sizeof(void *));
  /* every slot must lie above this frame, inside the thread's stack, in order, and hold its return address */
  uintptr_t below = sp;
  for (int i = 0; i < n; i++) {
    uintptr_t a = w.slot[skip + i];
    if (!a || a <= below || a + sizeof(uintptr_t) > c->hi || a - sp > UINT32_MAX ||
        *(const uintptr_t *)a != w.pc[skip + i]) {
      SC_COUNT(g_sc_not_kept);
      return n;
    }
    below = a;
  }
  /* a free way, else one at random: a program cycling through more chains than a set holds keeps some of
   * them, where replacing in turn would keep none */
  unsigned set = sc_set(sp), way = 0;
  while (way < SC_WAYS && c->tag[set][way]) way++;
  if (way == SC_WAYS) {
    c->rng = c->rng * 1664525u + 1013904223u;
    way = (c->rng >> 16) % SC_WAYS;
  }
  struct sc_entry *e = sc_at(c, set, way);
  if (!c->tag[set][way]) {
    SC_COUNT(g_sc_learned);
  } else {
    SC_COUNT(g_sc_evicted);
    if (c->tag[set][way] == sp) SC_COUNT(g_sc_evicted_same);
  }
  c->tag[set][way] = 0;
  __atomic_signal_fence(__ATOMIC_SEQ_CST);
  e->n = (uint32_t)n;
  e->hash = stack_hash(pcs, n);
  memcpy(sc_pcs(e), w.pc + skip, (size_t)n * sizeof(uintptr_t));
  uint32_t *off = sc_slots(c, e);
  for (int i = 0; i < n; i++) off[i] = (uint32_t)(w.slot[skip + i] - sp);
  __atomic_signal_fence(__ATOMIC_SEQ_CST);
  c->tag[set][way] = sp;
  return n;
}

static uint64_t sc_now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* A launch capture the cache does not take: unwound plainly, and counted as not looked up. */
static int sc_bypass(void **pcs, int max) {
  SC_COUNT(g_sc_bypassed);
  return stack_capture(pcs, max);
}

static int sc_capture(void **pcs, int max, int *hit, uint64_t *hash);

int stack_capture_launch(void **pcs, int max, int *hit, uint64_t *hash) {
  int n = sc_capture(pcs, max, hit, hash);
  if (!*hit) *hash = stack_hash(pcs, n);
  return n;
}

static int sc_capture(void **pcs, int max, int *hit, uint64_t *hash) {
  *hit = 0;
  if (max <= 0) return 0;
  struct sc_cache *c = tls_cache;
  if (__builtin_expect(!c, 0)) {
    pthread_once(&g_once, init_self);
    if (tls_cache_state != 0 || max > SC_DEPTH_MAX) return sc_bypass(pcs, max);
    tls_cache_state = -1; /* first: a signal handler's launch meanwhile must not make one too */
    c = tls_cache = sc_make(max);
    if (!c) return sc_bypass(pcs, max);
    tls_cache_state = 1;
  }
  uintptr_t sp = (uintptr_t)__builtin_frame_address(0);
  if (c->busy || max != c->depth || sp < c->lo || sp >= c->hi) return sc_bypass(pcs, max);
  /* busy from here on: a signal handler launching meanwhile must not replace the entry being read or written */
  c->busy = 1;
  __atomic_signal_fence(__ATOMIC_SEQ_CST);
  int n = -1;
  unsigned set = sc_set(sp);
  for (unsigned way = 0; way < SC_WAYS && n < 0; way++) {
    if (c->tag[set][way] != sp) continue;
    struct sc_entry *e = sc_at(c, set, way);
    const uintptr_t *pc = sc_pcs(e);
    const uint32_t *off = sc_slots(c, e);
    uint32_t k = e->n, i = 0;
    while (i < k && *(const volatile uintptr_t *)(sp + off[i]) == pc[i]) i++;
    if (i == k) {
      memcpy(pcs, pc, (size_t)k * sizeof(void *));
      *hit = 1;
      *hash = e->hash;
      n = (int)k;
    }
  }
  if (n < 0) {
    /* Learning a chain takes the libgcc unwinder, which rereads the unwind tables every time: tens of
     * microseconds for a PyTorch stack against about one for libunwind's cached unwind. Learning walks are held
     * to a share of the thread's time after a first allowance; past it, a miss is unwound by libunwind and not
     * learned, so a program whose chains never repeat pays that share and a lookup per launch, no more. */
    uint64_t now = sc_now_ns();
    if (now + SC_WALK_BURST_NS >= c->walk_tat) {
      n = sc_miss(c, sp, pcs, max);
      uint64_t took = sc_now_ns() - now;
      c->walk_tat = (c->walk_tat > now ? c->walk_tat : now) + took * SC_WALK_SHARE;
    } else {
      SC_COUNT(g_sc_over_budget);
      n = stack_capture(pcs, max);
    }
  }
  __atomic_signal_fence(__ATOMIC_SEQ_CST);
  c->busy = 0;
  return n;
}

void stack_cache_counts(struct stack_cache_counts *out) {
  out->learned = atomic_load_explicit(&g_sc_learned, memory_order_relaxed);
  out->evicted = atomic_load_explicit(&g_sc_evicted, memory_order_relaxed);
  out->evicted_same_sp = atomic_load_explicit(&g_sc_evicted_same, memory_order_relaxed);
  out->not_kept = atomic_load_explicit(&g_sc_not_kept, memory_order_relaxed);
  out->over_budget = atomic_load_explicit(&g_sc_over_budget, memory_order_relaxed);
  out->bypassed = atomic_load_explicit(&g_sc_bypassed, memory_order_relaxed);
}

void stack_describe(uintptr_t pc, struct stack_frame_info *out) {
  Dl_info di;
  memset(out, 0, sizeof *out);
  out->pc = pc;
  /* pc - 1: a return address may be the first byte of the next function. */
  if (!dladdr((void *)(pc - 1), &di) || !di.dli_fbase) return;
  out->offset = pc - (uintptr_t)di.dli_fbase;
  const char *mod = di.dli_fname;
  pthread_once(&g_once, init_self);
  /* dladdr names the main program by argv[0], which may be relative or bare; /proc/self/exe is its file. */
  if (!mod || !*mod || (uintptr_t)di.dli_fbase == g_main_base) {
    ssize_t k = readlink("/proc/self/exe", out->module, sizeof out->module - 1);
    if (k > 0) out->module[k] = '\0';
  } else {
    snprintf(out->module, sizeof out->module, "%s", mod);
  }
  if (di.dli_sname) snprintf(out->function, sizeof out->function, "%s", di.dli_sname);
}

/* ---- the objects of the process from /proc/self/maps ---- */

struct stack_map {
  uintptr_t lo, hi; /* the mapping */
  uintptr_t base;   /* where its object's file offset 0 is mapped (dladdr's dli_fbase) */
  const char *path; /* the object's file, in the snapshot's text */
};

struct stack_maps {
  int n;                  /* entries */
  char *text;             /* the file's text, paths cut out of it in place */
  struct stack_map map[]; /* file-backed mappings, in the file's (address) order */
};

struct stack_maps *stack_maps_read(void) {
  int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return NULL;
  size_t cap = 1 << 16, n = 0;
  char *text = malloc(cap);
  while (text) {
    if (n + 1 >= cap) {
      char *more = cap < (64u << 20) ? realloc(text, cap * 2) : NULL;
      if (!more) break;
      text = more;
      cap *= 2;
    }
    ssize_t k = read(fd, text + n, cap - n - 1);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) break;
    n += (size_t)k;
  }
  close(fd);
  if (!text) return NULL;
  text[n] = '\0';
  int lines = 0;
  for (size_t i = 0; i < n; i++) lines += text[i] == '\n';
  struct stack_maps *m = malloc(sizeof *m + (size_t)(lines + 1) * sizeof(struct stack_map));
  if (!m) {
    free(text);
    return NULL;
  }
  m->n = 0;
  m->text = text;
  for (char *line = text; line && *line;) {
    char *nl = strchr(line, '\n');
    if (nl) *nl = '\0';
    unsigned long lo, hi, off;
    int at = 0;
    if (sscanf(line, "%lx-%lx %*s %lx %*s %*s %n", &lo, &hi, &off, &at) == 3 && at > 0 && line[at] == '/') {
      struct stack_map *e = &m->map[m->n++];
      e->lo = lo;
      e->hi = hi;
      e->base = lo - off; /* until the mapping of offset 0 of the same file says better, below */
      e->path = line + at;
    }
    line = nl ? nl + 1 : NULL;
  }
  /* an object's base is where its first page lies: the mapping of offset 0 of the same file before it */
  for (int i = 0; i < m->n; i++)
    for (int j = i; j >= 0 && j > i - 64; j--)
      if (!strcmp(m->map[j].path, m->map[i].path) && m->map[j].base == m->map[j].lo) m->map[i].base = m->map[j].lo;
  return m;
}

void stack_maps_free(struct stack_maps *m) {
  if (!m) return;
  free(m->text);
  free(m);
}

void stack_describe_maps(const struct stack_maps *m, uintptr_t pc, struct stack_frame_info *out) {
  memset(out, 0, sizeof *out);
  out->pc = pc;
  if (!m) return;
  int lo = 0, hi = m->n - 1;
  while (lo <= hi) { /* pc - 1: a return address may be the first byte of the next function */
    int mid = (lo + hi) / 2;
    const struct stack_map *e = &m->map[mid];
    if (pc - 1 < e->lo)
      hi = mid - 1;
    else if (pc - 1 >= e->hi)
      lo = mid + 1;
    else {
      out->offset = pc - e->base;
      snprintf(out->module, sizeof out->module, "%s", e->path);
      return;
    }
  }
}
