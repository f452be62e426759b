/* culprit's handlers in front of the program's for the stop signals and the report signal (signals.h). The
 * handler asks for a report and waits for it, bounded (the hang watcher's hang_request, given at install), then
 * does what the program
 * would have had done without culprit: calls its handler (as SA_SIGINFO or not), or for SIG_DFL restores the
 * default and raises the signal again, so the process dies of the same signal; the report signal's default
 * (usually death) becomes "report and carry on".
 *
 * The program's disposition is kept in one of a few copies per signal and published by an atomic index, so the
 * handler reads it without a lock (it may interrupt the very sigaction call that is changing it). The kernel's
 * disposition stays culprit's handler, with the program's mask and flags (SA_RESTART, SA_ONSTACK, SA_NODEFER,
 * SA_RESETHAND), so interrupted system calls, nesting and one-shot handlers behave as the program asked. */
#define _GNU_SOURCE
#include "signals.h"

#include "../base/config.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#define NSIGS 65 /* signals 1..64 */
#define COPIES 8 /* copies of a program's disposition a signal cycles through */
#define PASSED_FLAGS (SA_RESTART | SA_ONSTACK | SA_NODEFER | SA_RESETHAND | SA_NOCLDSTOP | SA_NOCLDWAIT)

struct sig_state {
  _Atomic int owned;             /* culprit's handler stands in front of the program's disposition */
  _Atomic int stop;              /* a stop signal (its report is the process's last); 0: the report signal */
  _Atomic unsigned cur;          /* the copy holding the program's disposition (release by writers) */
  _Atomic unsigned next;         /* the next copy a writer takes */
  struct sigaction prog[COPIES]; /* the program's dispositions: what the kernel would have without culprit */
};

static struct sig_state g_sig[NSIGS];
static _Atomic int g_installed;         /* signals_install ran in this process or an ancestor */
static signals_ask_fn g_ask;            /* asks for the report; set before any handler is installed */
static _Atomic(signals_last_fn) g_last; /* runs before a stop signal's default ends the process, or NULL */
signals_sigaction_fn signals_real_sigaction;

static int is_dfl(const struct sigaction *a) { return a->sa_handler == SIG_DFL; }
static int is_ign(const struct sigaction *a) { return a->sa_handler == SIG_IGN; }

void signals_last_words(signals_last_fn fn) { atomic_store_explicit(&g_last, fn, memory_order_release); }

int signals_owned(int sig) {
  return sig > 0 && sig < NSIGS && atomic_load_explicit(&g_sig[sig].owned, memory_order_acquire);
}

static void on_signal(int sig, siginfo_t *si, void *uc);

/* culprit's handler with the program's mask and flags (for SIG_DFL: SA_RESTART, as nothing ran before). */
static void ours_for(const struct sigaction *prog, struct sigaction *ours) {
  memset(ours, 0, sizeof *ours);
  ours->sa_sigaction = on_signal;
  if (is_dfl(prog)) {
    ours->sa_flags = SA_SIGINFO | SA_RESTART;
    sigemptyset(&ours->sa_mask);
  } else {
    ours->sa_flags = SA_SIGINFO | (prog->sa_flags & PASSED_FLAGS);
    ours->sa_mask = prog->sa_mask;
  }
}

/* Publishes a as the program's disposition of sig; returns the copy it replaced. Async-signal-safe. */
static unsigned publish(struct sig_state *st, const struct sigaction *a) {
  unsigned k = atomic_fetch_add_explicit(&st->next, 1, memory_order_relaxed) % COPIES;
  st->prog[k] = *a;
  /* acq_rel: readers that acquire cur see the copy written; the copy replaced is read after */
  return atomic_exchange_explicit(&st->cur, k, memory_order_acq_rel) % COPIES;
}

int signals_install(const struct cp_config *cfg, signals_ask_fn ask) {
  int sigs[6], stops[6], n = 0;
  if (!signals_real_sigaction) return -1;
  if (atomic_exchange_explicit(&g_installed, 1, memory_order_relaxed)) return 0;
  g_ask = ask; /* the handlers installed below are what publishes it (sigaction) */
  if (cfg->hang_signals) {
    static const int stop_sigs[] = {SIGTERM, SIGINT, SIGQUIT, SIGABRT};
    for (int i = 0; i < 4; i++) sigs[n] = stop_sigs[i], stops[n++] = 1;
  }
  if (cfg->report_signal > 0 && cfg->report_signal < NSIGS) {
    int i = 0;
    while (i < n && sigs[i] != cfg->report_signal) i++;
    if (i == n) n++;
    sigs[i] = cfg->report_signal;
    stops[i] = 0; /* the report signal carries on, whichever it is */
  }
  for (int i = 0; i < n; i++) {
    struct sig_state *st = &g_sig[sigs[i]];
    struct sigaction cur, ours;
    if (signals_real_sigaction(sigs[i], NULL, &cur) || is_ign(&cur)) continue; /* ignored: left alone */
    st->prog[0] = cur;
    atomic_store_explicit(&st->cur, 0, memory_order_relaxed);
    atomic_store_explicit(&st->next, 1, memory_order_relaxed);
    atomic_store_explicit(&st->stop, stops[i], memory_order_relaxed);
    /* release: the program's sigaction calls from now on see the copy above */
    atomic_store_explicit(&st->owned, 1, memory_order_release);
    ours_for(&cur, &ours);
    if (signals_real_sigaction(sigs[i], &ours, NULL)) atomic_store_explicit(&st->owned, 0, memory_order_relaxed);
  }
  return 0;
}

int signals_sigaction(int sig, const struct sigaction *act, struct sigaction *old) {
  if (!signals_owned(sig) || !signals_real_sigaction) {
    errno = EINVAL;
    return -1;
  }
  struct sig_state *st = &g_sig[sig];
  struct sigaction was = st->prog[atomic_load_explicit(&st->cur, memory_order_acquire) % COPIES];
  if (act) {
    struct sigaction ours;
    int rc;
    if (is_ign(act)) {
      rc = signals_real_sigaction(sig, act, NULL);
    } else {
      ours_for(act, &ours);
      rc = signals_real_sigaction(sig, &ours, NULL);
    }
    if (rc) return rc;
    was = st->prog[publish(st, act)];
  }
  if (old) *old = was;
  return 0;
}

/* Dies of sig with its default disposition, as the process would have without culprit. Returns only if the
 * default does not end the process; culprit's handler is then put back. */
static void die_of(int sig, struct sig_state *st) {
  struct sigaction dfl, ours;
  sigset_t set;
  memset(&dfl, 0, sizeof dfl);
  dfl.sa_handler = SIG_DFL;
  sigemptyset(&dfl.sa_mask);
  signals_real_sigaction(sig, &dfl, NULL);
  sigemptyset(&set);
  sigaddset(&set, sig);
  syscall(SYS_tgkill, getpid(), (int)syscall(SYS_gettid), sig);
  pthread_sigmask(SIG_UNBLOCK, &set, NULL); /* it is delivered here, on this thread */
  struct sigaction now = st->prog[atomic_load_explicit(&st->cur, memory_order_acquire) % COPIES];
  ours_for(&now, &ours);
  signals_real_sigaction(sig, &ours, NULL);
}

static void on_signal(int sig, siginfo_t *si, void *uc) {
  int saved = errno;
  struct sig_state *st = &g_sig[sig];
  /* acquire: pairs with publish; the copy is the program's disposition at this moment */
  struct sigaction prog = st->prog[atomic_load_explicit(&st->cur, memory_order_acquire) % COPIES];
  int stop = atomic_load_explicit(&st->stop, memory_order_relaxed);
  /* kill, sigqueue and tgkill say who sent it (si_code <= 0); the kernel's own signals do not */
  int sender = si && si->si_code <= 0 ? (int)si->si_pid : 0;
  if (g_ask) g_ask(sig, sender, stop, uc);
  if (prog.sa_flags & SA_RESETHAND) {
    /* the kernel put SIG_DFL back as it delivered this one; say so to the program's next sigaction */
    struct sigaction dfl;
    memset(&dfl, 0, sizeof dfl);
    dfl.sa_handler = SIG_DFL;
    publish(st, &dfl);
  }
  if (is_dfl(&prog)) {
    if (stop) {
      signals_last_fn last = atomic_load_explicit(&g_last, memory_order_acquire);
      if (last) last(); /* the process dies of it: what must be written before (torchrun's error file) */
      die_of(sig, st);
    }
  } else if (!is_ign(&prog)) {
    if (prog.sa_flags & SA_SIGINFO)
      prog.sa_sigaction(sig, si, uc);
    else
      prog.sa_handler(sig);
  }
  errno = saved;
}

const char *signals_name(int sig, char *buf, unsigned len) {
  const char *ab = sig > 0 && sig < SIGRTMIN ? sigabbrev_np(sig) : NULL;
  if (ab)
    snprintf(buf, len, "SIG%s", ab);
  else if (sig >= SIGRTMIN && sig <= SIGRTMAX && sig - SIGRTMIN <= SIGRTMAX - sig)
    snprintf(buf, len, sig == SIGRTMIN ? "SIGRTMIN" : "SIGRTMIN+%d", sig - SIGRTMIN);
  else if (sig >= SIGRTMIN && sig <= SIGRTMAX)
    snprintf(buf, len, sig == SIGRTMAX ? "SIGRTMAX" : "SIGRTMAX-%d", SIGRTMAX - sig);
  else
    snprintf(buf, len, "signal %d", sig);
  return buf;
}
