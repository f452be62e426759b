/* The program's sigaction() and signal(), exported so that a handler installed after culprit's (Python's signal
 * module, torch, NCCL, the program itself) is kept as the one culprit's handler chains to rather than replacing
 * it (aftermath/signals.c). For every other signal, and before culprit installed any handler, the call goes straight
 * to libc's. Nothing here decides anything. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <signal.h>
#include <stdatomic.h>

#include "../aftermath/signals.h"
#include "export.h"

typedef void (*handler_fn)(int);
typedef handler_fn (*signal_fn)(int, handler_fn);

/* glibc's own, exported under a name culprit does not take: the answer when the lookup is not done yet. */
extern int __sigaction(int sig, const struct sigaction *act, struct sigaction *old);

static _Atomic(signals_sigaction_fn) g_real_sigaction; /* the next sigaction after culprit's */
static _Atomic(signal_fn) g_real_signal;               /* the next signal after culprit's */
static __thread int tls_resolving;                     /* a lookup is under way on this thread */

/* libc's functions, looked up once by version (dlvsym, not culprit's own dlsym, and nothing that allocates on
 * success); a call made while the lookup runs on the same thread gets glibc's sigaction directly. */
static void resolve(void) {
  if (atomic_load_explicit(&g_real_sigaction, memory_order_acquire) || tls_resolving) return;
  tls_resolving = 1;
  signals_sigaction_fn sa = (signals_sigaction_fn)dlvsym(RTLD_NEXT, "sigaction", "GLIBC_2.2.5");
  signal_fn sg = (signal_fn)dlvsym(RTLD_NEXT, "signal", "GLIBC_2.2.5");
  if (!sa) sa = (signals_sigaction_fn)dlsym(RTLD_NEXT, "sigaction");
  if (!sg) sg = (signal_fn)dlsym(RTLD_NEXT, "signal");
  if (!sa) sa = __sigaction;
  if (sg) atomic_store_explicit(&g_real_signal, sg, memory_order_release);
  atomic_store_explicit(&g_real_sigaction, sa, memory_order_release);
  tls_resolving = 0;
}

static signals_sigaction_fn real_sigaction(void) {
  resolve();
  signals_sigaction_fn f = atomic_load_explicit(&g_real_sigaction, memory_order_acquire);
  return f ? f : __sigaction;
}

/* aftermath/signals.c installs its handlers with libc's sigaction, known from load on */
__attribute__((constructor)) static void sigaction_init(void) { signals_real_sigaction = real_sigaction(); }

CP_EXPORT int sigaction(int sig, const struct sigaction *act, struct sigaction *old) {
  if (signals_owned(sig)) return signals_sigaction(sig, act, old);
  return real_sigaction()(sig, act, old);
}

/* signal() with glibc's (BSD) meaning: the signal blocked while its handler runs, system calls restarted. */
CP_EXPORT handler_fn signal(int sig, handler_fn h) {
  if (signals_owned(sig)) {
    struct sigaction act = {0}, old;
    if (h == SIG_ERR) {
      errno = EINVAL;
      return SIG_ERR;
    }
    act.sa_handler = h;
    sigemptyset(&act.sa_mask);
    sigaddset(&act.sa_mask, sig);
    act.sa_flags = SA_RESTART;
    if (signals_sigaction(sig, &act, &old)) return SIG_ERR;
    return old.sa_handler;
  }
  resolve();
  signal_fn real = atomic_load_explicit(&g_real_signal, memory_order_acquire);
  if (real) return real(sig, h);
  /* no libc signal() found (cannot happen with glibc): the same through sigaction */
  struct sigaction act = {0}, old;
  act.sa_handler = h;
  sigemptyset(&act.sa_mask);
  sigaddset(&act.sa_mask, sig);
  act.sa_flags = SA_RESTART;
  return real_sigaction()(sig, &act, &old) ? SIG_ERR : old.sa_handler;
}
