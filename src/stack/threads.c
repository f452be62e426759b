/* The threads of the process where they wait (threads.h). A snapshot lists /proc/self/task and sends each thread
 * the capture signal; the thread's handler unwinds its own stack into a slot the snapshot prepared and marks it
 * done. Slots are claimed with compare-and-swap, so a thread that answers after the snapshot gave up on it finds
 * its slot abandoned and writes nothing:
 *
 *     snapshot                           thread's handler
 *     slot.tid = T, state = SENT
 *     tgkill(T) ------------------------> state SENT -> WRITING (CAS), unwind, state = DONE (release)
 *     wait for DONE (acquire), bounded
 *     late: state SENT -> ABANDONED (CAS)  (a later handler's CAS then fails: it leaves)
 *
 * Everything a handler does is async-signal-safe: gettid, getpid, pthread_self, the unwinder (stack.c), atomics. */
#define _GNU_SOURCE
#include "threads.h"

#include "stack.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

#define HSLOTS 8                 /* threads inside culprit's signal handlers at once with a stack of their own */
#define CUT_SEARCH 16            /* frames searched for the interrupted instruction */
#define LATE_WRITE_NS 50000000ll /* how long a snapshot waits for a handler already writing when time is up */

enum { SLOT_IDLE = 0, SLOT_SENT = 1, SLOT_WRITING = 2, SLOT_DONE = 3, SLOT_ABANDONED = 4 };

struct slot {
  _Atomic int tid;               /* the thread it is for; 0 = free */
  _Atomic int state;             /* SLOT_*: claimed and released with CAS (diagram above) */
  unsigned long long pthread_id; /* the thread's pthread_self(), written before DONE */
  int n;                         /* frames, written before DONE */
  void *frames[THREADS_DEPTH];   /* written before DONE */
};

static struct slot g_slots[THREADS_MAX]; /* one per thread of the snapshot under way */
static struct slot g_hslots[HSLOTS];     /* threads inside a culprit signal handler (threads_handler_enter) */
static _Atomic int g_slots_used;         /* a snapshot or a handler wrote a slot: a forked child empties them */
static _Atomic int g_installed;          /* the capture handler is installed (release after sigaction) */

static int gettid_(void) { return (int)syscall(SYS_gettid); }

int threads_capture_signal(void) { return SIGRTMAX - 3; }

/* The interrupted instruction of a handler's context. */
static uintptr_t interrupted_pc(const void *uc) {
  if (!uc) return 0;
#if defined(__x86_64__)
  return (uintptr_t)((const ucontext_t *)uc)->uc_mcontext.gregs[REG_RIP];
#elif defined(__aarch64__)
  return (uintptr_t)((const ucontext_t *)uc)->uc_mcontext.pc;
#else
  return 0;
#endif
}

/* The calling thread's stack from the instruction the signal interrupted on: the handler's own frames (culprit's
 * and the kernel's signal trampoline) are cut off. Without that instruction among the first frames (an unwinder
 * that cannot cross the signal frame) the frames are kept as the unwinder gave them. */
static int capture_from(void **out, const void *uc) {
  void *buf[THREADS_DEPTH + CUT_SEARCH];
  int n = stack_capture(buf, THREADS_DEPTH + CUT_SEARCH);
  uintptr_t pc = interrupted_pc(uc);
  int cut = 0;
  for (int i = 0; pc && i < n && i < CUT_SEARCH; i++)
    if ((uintptr_t)buf[i] == pc) {
      cut = i;
      break;
    }
  n -= cut;
  if (n > THREADS_DEPTH) n = THREADS_DEPTH;
  if (n < 0) n = 0;
  memcpy(out, buf + cut, (size_t)n * sizeof(void *));
  return n;
}

static void on_capture(int sig, siginfo_t *si, void *uc) {
  (void)sig;
  /* only the snapshot's own tgkill: another sender of this signal finds the handler doing nothing */
  if (!si || si->si_code != SI_TKILL || si->si_pid != getpid()) return;
  int saved = errno, tid = gettid_();
  for (int i = 0; i < THREADS_MAX; i++) {
    struct slot *s = &g_slots[i];
    if (atomic_load_explicit(&s->tid, memory_order_acquire) != tid) continue;
    int expect = SLOT_SENT;
    /* acquire: the snapshot's preparation of the slot is visible; a slot given up on is left alone */
    if (atomic_compare_exchange_strong_explicit(&s->state, &expect, SLOT_WRITING, memory_order_acquire,
                                                memory_order_relaxed)) {
      s->n = capture_from(s->frames, uc);
      s->pthread_id = (unsigned long long)pthread_self();
      atomic_store_explicit(&s->state, SLOT_DONE, memory_order_release); /* pairs with the snapshot's acquire */
    }
    break;
  }
  errno = saved;
}

void threads_handler_enter(const void *uc) {
  int tid = gettid_();
  atomic_store_explicit(&g_slots_used, 1, memory_order_relaxed);
  for (int i = 0; i < HSLOTS; i++) {
    struct slot *s = &g_hslots[i];
    int expect = 0;
    /* relaxed claim: nothing in the slot is read by a snapshot before state says DONE */
    if (!atomic_compare_exchange_strong_explicit(&s->tid, &expect, tid, memory_order_relaxed, memory_order_relaxed))
      continue;
    s->n = capture_from(s->frames, uc);
    s->pthread_id = (unsigned long long)pthread_self();
    atomic_store_explicit(&s->state, SLOT_DONE, memory_order_release); /* pairs with the snapshot's acquire */
    return;
  }
}

void threads_handler_leave(void) {
  int tid = gettid_();
  for (int i = 0; i < HSLOTS; i++) {
    struct slot *s = &g_hslots[i];
    if (atomic_load_explicit(&s->tid, memory_order_relaxed) != tid) continue;
    atomic_store_explicit(&s->state, SLOT_IDLE, memory_order_relaxed);
    atomic_store_explicit(&s->tid, 0, memory_order_release); /* the slot's contents are no longer read after */
    return;
  }
}

/* Only slots ever written are emptied: writing 1.5 MB of them cost every forked child a page fault per page. */
void threads_after_fork(void) {
  if (!atomic_load_explicit(&g_slots_used, memory_order_relaxed)) return;
  memset(g_slots, 0, sizeof g_slots);
  memset(g_hslots, 0, sizeof g_hslots);
  atomic_store_explicit(&g_slots_used, 0, memory_order_relaxed);
}

/* Reads a small /proc file into buf (NUL-terminated); returns its length or -1. */
static int read_small(const char *path, char *buf, size_t len) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  size_t off = 0;
  while (off + 1 < len) {
    ssize_t k = read(fd, buf + off, len - 1 - off);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) break;
    off += (size_t)k;
  }
  close(fd);
  buf[off] = '\0';
  return (int)off;
}

/* Name and state from /proc/self/task/TID/stat: "TID (name) S ..." (the name may hold spaces and parentheses,
 * so the last ')' ends it). */
static void read_stat(int tid, struct threads_info *t) {
  char path[64], buf[512];
  snprintf(path, sizeof path, "/proc/self/task/%d/stat", tid);
  t->name[0] = '\0';
  t->state = '?';
  if (read_small(path, buf, sizeof buf) <= 0) return;
  char *open_ = strchr(buf, '('), *close_ = strrchr(buf, ')');
  if (!open_ || !close_ || close_ < open_) return;
  size_t n = (size_t)(close_ - open_ - 1);
  if (n >= sizeof t->name) n = sizeof t->name - 1;
  memcpy(t->name, open_ + 1, n);
  t->name[n] = '\0';
  if (close_[1] == ' ' && close_[2]) t->state = close_[2];
}

/* Whether the thread blocks sig (SigBlk of its status). */
static int blocks(int tid, int sig) {
  char path[64], buf[2048];
  snprintf(path, sizeof path, "/proc/self/task/%d/status", tid);
  if (read_small(path, buf, sizeof buf) <= 0) return 0;
  const char *p = strstr(buf, "\nSigBlk:");
  if (!p) return 0;
  unsigned long long mask = strtoull(p + 8, NULL, 16);
  return sig >= 1 && sig <= 64 && (mask >> (sig - 1) & 1);
}

/* For a thread waiting for signals (a signal it did not ask for would end its wait): its instruction pointer
 * from /proc/self/task/TID/syscall ("NR args... sp pc"), else 0. */
static uintptr_t waits_for_signals(int tid) {
  char path[64], buf[256];
  snprintf(path, sizeof path, "/proc/self/task/%d/syscall", tid);
  if (read_small(path, buf, sizeof buf) <= 0) return 0;
  long nr = strtol(buf, NULL, 10);
  if (nr != SYS_rt_sigtimedwait && nr != SYS_rt_sigsuspend
#ifdef SYS_pause
      && nr != SYS_pause
#endif
  )
    return 0;
  const char *pc = strrchr(buf, ' ');
  return pc ? (uintptr_t)strtoull(pc + 1, NULL, 16) : 0;
}

/* The capture handler in place, or 0 when the program has its own on that signal. */
static int capture_ready(int sig) {
  struct sigaction cur, sa;
  if (atomic_load_explicit(&g_installed, memory_order_acquire)) {
    if (sigaction(sig, NULL, &cur) == 0 && (cur.sa_flags & SA_SIGINFO) && cur.sa_sigaction == on_capture) return 1;
    return 0;
  }
  if (sigaction(sig, NULL, &cur) || (cur.sa_flags & SA_SIGINFO) || cur.sa_handler != SIG_DFL) return 0;
  memset(&sa, 0, sizeof sa);
  sa.sa_sigaction = on_capture;
  sa.sa_flags = SA_SIGINFO | SA_RESTART;
  sigfillset(&sa.sa_mask); /* the unwind runs undisturbed by the program's handlers */
  if (sigaction(sig, &sa, NULL)) return 0;
  atomic_store_explicit(&g_installed, 1, memory_order_release);
  return 1;
}

static int64_t mono_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000ll + ts.tv_nsec;
}

static void nap(long ns) {
  struct timespec ts = {0, ns};
  nanosleep(&ts, NULL);
}

/* A thread inside a culprit signal handler: its own stack from there, copied when consistent. */
static int from_handler(int tid, struct threads_info *t) {
  for (int i = 0; i < HSLOTS; i++) {
    struct slot *s = &g_hslots[i];
    if (atomic_load_explicit(&s->tid, memory_order_relaxed) != tid) continue;
    if (atomic_load_explicit(&s->state, memory_order_acquire) != SLOT_DONE) return 0;
    int n = s->n;
    memcpy(t->frames, s->frames, (size_t)n * sizeof(void *));
    t->pthread_id = s->pthread_id;
    t->nframes = n;
    /* acquire: the copy is kept only if the handler did not leave (and another thread enter) meanwhile */
    return atomic_load_explicit(&s->tid, memory_order_acquire) == tid &&
           atomic_load_explicit(&s->state, memory_order_acquire) == SLOT_DONE;
  }
  return 0;
}

int threads_snapshot(struct threads_info *out, int max, int wait_ms, int *more) {
  int n = 0, self = gettid_(), pid = getpid(), sig = threads_capture_signal();
  *more = 0;
  if (max > THREADS_MAX) max = THREADS_MAX;
  DIR *d = opendir("/proc/self/task");
  if (!d) return 0;
  struct dirent *e;
  while ((e = readdir(d)) != NULL) {
    int tid = atoi(e->d_name);
    if (tid <= 0 || tid == self) continue;
    if (n == max) {
      (*more)++;
      continue;
    }
    struct threads_info *t = &out[n++];
    memset(t, 0, sizeof *t);
    t->tid = tid;
    read_stat(tid, t);
  }
  closedir(d);

  int ready = capture_ready(sig), sent = 0;
  atomic_store_explicit(&g_slots_used, 1, memory_order_relaxed);
  for (int i = 0; i < n; i++) {
    struct threads_info *t = &out[i];
    struct slot *s = &g_slots[i];
    if (from_handler(t->tid, t)) {
      t->in_handler = 1;
      continue;
    }
    t->nframes = 0;
    uintptr_t pc;
    if (!ready) {
      t->note = "its stack could not be taken: the program has a handler of its own for culprit's capture signal "
                "(SIGRTMAX-3)";
    } else if (t->state == 'Z' || t->state == 'X') {
      t->note = "the thread has exited";
    } else if ((pc = waits_for_signals(t->tid)) != 0) {
      t->frames[0] = (void *)pc;
      t->nframes = 1;
      t->note = "it waits for signals, so culprit did not interrupt it: only the instruction it waits at is known";
    } else if (blocks(t->tid, sig)) {
      t->note = "its stack could not be taken: the thread blocks culprit's capture signal (SIGRTMAX-3)";
    } else {
      s->n = 0;
      atomic_store_explicit(&s->state, SLOT_SENT, memory_order_relaxed);
      atomic_store_explicit(&s->tid, t->tid, memory_order_release); /* pairs with the handler's acquire */
      if (syscall(SYS_tgkill, pid, t->tid, sig) == 0) {
        sent++;
        continue;
      }
      atomic_store_explicit(&s->state, SLOT_IDLE, memory_order_relaxed);
      atomic_store_explicit(&s->tid, 0, memory_order_relaxed);
      t->note = "the thread has exited";
    }
  }

  int64_t until = mono_ns() + (int64_t)wait_ms * 1000000ll;
  while (sent) {
    int left = 0;
    for (int i = 0; i < n; i++)
      if (atomic_load_explicit(&g_slots[i].tid, memory_order_relaxed) &&
          atomic_load_explicit(&g_slots[i].state, memory_order_acquire) != SLOT_DONE)
        left++;
    if (!left || mono_ns() >= until) break;
    nap(1000000);
  }
  for (int i = 0; sent && i < n; i++) {
    struct slot *s = &g_slots[i];
    struct threads_info *t = &out[i];
    if (!atomic_load_explicit(&s->tid, memory_order_relaxed)) continue;
    int expect = SLOT_SENT;
    if (atomic_compare_exchange_strong_explicit(&s->state, &expect, SLOT_ABANDONED, memory_order_acquire,
                                                memory_order_acquire)) {
      t->note = "its stack could not be taken: the thread did not answer culprit's capture signal in time";
    } else {
      /* answered, or answering right now: the unwind takes microseconds */
      int64_t late = mono_ns() + LATE_WRITE_NS;
      while (atomic_load_explicit(&s->state, memory_order_acquire) == SLOT_WRITING && mono_ns() < late) nap(100000);
      if (atomic_load_explicit(&s->state, memory_order_acquire) == SLOT_DONE) {
        t->nframes = s->n;
        memcpy(t->frames, s->frames, (size_t)s->n * sizeof(void *));
        t->pthread_id = s->pthread_id;
      } else {
        t->note = "its stack could not be taken: the thread did not answer culprit's capture signal in time";
        continue; /* still writing: the slot stays claimed by it */
      }
    }
    atomic_store_explicit(&s->tid, 0, memory_order_relaxed);
    atomic_store_explicit(&s->state, SLOT_IDLE, memory_order_relaxed);
  }
  return n;
}
