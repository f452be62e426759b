/* Unit test: culprit's signal handlers in front of the program's (aftermath/signals.c), with the hang watcher's
 * request stubbed. The program's handler is chained to (plain and SA_SIGINFO), its previous one is what it is
 * shown, SIG_IGN goes to the kernel, SA_RESETHAND is one-shot, the report signal's default carries on, a stop
 * signal's default still kills with that signal, and a handler installed before culprit's keeps running. */
#define _GNU_SOURCE
#include "../../src/base/config.h"
#include "../../src/aftermath/signals.h"
#include "check.h"

#include <errno.h>
#include <signal.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static volatile sig_atomic_t g_requests, g_last_stop, g_a, g_b, g_c;
static volatile int g_b_signo, g_sender;
static int g_pipe = -1; /* a forked child reports its requests through it */

/* The watcher's side, stubbed: counts, and in a child writes the request down before anything else happens. */
static void hang_request(int sig, int sender_pid, int stop, const void *uc) {
  (void)uc;
  g_requests++;
  g_last_stop = stop;
  g_sender = sender_pid;
  if (g_pipe >= 0) {
    char c = (char)sig;
    ssize_t w = write(g_pipe, &c, 1);
    (void)w;
  }
}

static void on_a(int sig) {
  (void)sig;
  g_a++;
}
static void on_b(int sig, siginfo_t *si, void *uc) {
  (void)sig, (void)uc;
  g_b++;
  g_b_signo = si ? si->si_signo : 0;
}
static void on_c(int sig) {
  (void)sig;
  g_c++;
}
static void on_int_exit(int sig) {
  (void)sig;
  _exit(43);
}

static struct sigaction plain_act(void (*h)(int), int flags) {
  struct sigaction a;
  memset(&a, 0, sizeof a);
  a.sa_handler = h;
  a.sa_flags = flags;
  sigemptyset(&a.sa_mask);
  return a;
}

static void kernel_disposition(int sig, struct sigaction *out) { sigaction(sig, NULL, out); }

/* In a child: culprit's handlers for the stop signals; raise sig with the program's disposition given. Returns the
 * child's wait status; *asked gets the signal the child asked a report for (0 for none). */
static int child_run(int sig, void (*prog)(int), int *asked) {
  int fds[2];
  if (pipe(fds)) return -1;
  pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    g_pipe = fds[1];
    if (prog) {
      struct sigaction a = plain_act(prog, 0);
      sigaction(sig, &a, NULL);
    }
    struct cp_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.hang_signals = 1;
    signals_install(&cfg, hang_request);
    raise(sig);
    _exit(0); /* not reached when the signal kills */
  }
  close(fds[1]);
  int status = 0;
  waitpid(pid, &status, 0);
  char c = 0;
  *asked = read(fds[0], &c, 1) == 1 ? c : 0;
  close(fds[0]);
  return status;
}

int main(void) {
  struct sigaction a, old, k;
  char name[32];
  signals_real_sigaction = sigaction;

  /* a stop signal with the default disposition: a report, then death by that very signal */
  int asked = 0, st = child_run(SIGTERM, NULL, &asked);
  CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGTERM, "status %#x", st);
  CHECK(asked == SIGTERM);
  st = child_run(SIGABRT, NULL, &asked);
  CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGABRT && asked == SIGABRT, "status %#x", st);
  /* a handler installed before culprit's still runs after the report */
  st = child_run(SIGINT, on_int_exit, &asked);
  CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 43 && asked == SIGINT, "status %#x", st);

  /* the report signal, with a handler of the program's installed first */
  a = plain_act(on_a, 0);
  sigaction(SIGUSR2, &a, NULL);
  a = plain_act(SIG_IGN, 0);
  sigaction(SIGPIPE, &a, NULL);
  struct cp_config cfg;
  memset(&cfg, 0, sizeof cfg);
  cfg.report_signal = SIGUSR2;
  CHECK(signals_install(&cfg, hang_request) == 0);
  CHECK(signals_owned(SIGUSR2) && !signals_owned(SIGTERM) && !signals_owned(SIGPIPE) && !signals_owned(0) &&
        !signals_owned(99));
  kernel_disposition(SIGUSR2, &k);
  CHECK(k.sa_handler != on_a && (k.sa_flags & SA_SIGINFO), "culprit's handler is in the kernel");
  CHECK(signals_sigaction(SIGUSR2, NULL, &old) == 0 && old.sa_handler == on_a, "the program sees its own");
  raise(SIGUSR2);
  CHECK(g_requests == 1 && !g_last_stop && g_a == 1 && g_sender == getpid());

  /* a later handler with SA_SIGINFO: chained to with its siginfo; the old one shown is the program's */
  memset(&a, 0, sizeof a);
  a.sa_sigaction = on_b;
  a.sa_flags = SA_SIGINFO;
  sigemptyset(&a.sa_mask);
  CHECK(signals_sigaction(SIGUSR2, &a, &old) == 0 && old.sa_handler == on_a);
  raise(SIGUSR2);
  CHECK(g_requests == 2 && g_b == 1 && g_b_signo == SIGUSR2 && g_a == 1);

  /* the report signal's default: report and carry on */
  a = plain_act(SIG_DFL, 0);
  CHECK(signals_sigaction(SIGUSR2, &a, &old) == 0 && (old.sa_flags & SA_SIGINFO) && old.sa_sigaction == on_b);
  raise(SIGUSR2);
  CHECK(g_requests == 3 && g_b == 1, "still alive, one more request");

  /* SIG_IGN goes to the kernel: the signal is ignored as without culprit, no report */
  a = plain_act(SIG_IGN, 0);
  CHECK(signals_sigaction(SIGUSR2, &a, NULL) == 0);
  kernel_disposition(SIGUSR2, &k);
  CHECK(k.sa_handler == SIG_IGN);
  raise(SIGUSR2);
  CHECK(g_requests == 3);

  /* SA_RESETHAND: one run of the program's handler, then the default (culprit shows it too) */
  a = plain_act(on_c, SA_RESETHAND);
  CHECK(signals_sigaction(SIGUSR2, &a, &old) == 0 && old.sa_handler == SIG_IGN);
  kernel_disposition(SIGUSR2, &k);
  CHECK(k.sa_handler != on_c && k.sa_handler != SIG_IGN, "culprit's handler is back in front");
  raise(SIGUSR2);
  CHECK(g_c == 1 && g_requests == 4);
  kernel_disposition(SIGUSR2, &k);
  CHECK(k.sa_handler == SIG_DFL, "the kernel reset it");
  CHECK(signals_sigaction(SIGUSR2, NULL, &old) == 0 && old.sa_handler == SIG_DFL, "and the program sees that");

  /* a signal culprit does not own is refused by signals_sigaction (intercept passes it to libc instead) */
  errno = 0;
  CHECK(signals_sigaction(SIGTERM, NULL, &old) == -1 && errno == EINVAL);

  CHECK(!strcmp(signals_name(SIGTERM, name, sizeof name), "SIGTERM"));
  CHECK(!strcmp(signals_name(SIGUSR1, name, sizeof name), "SIGUSR1"));
  CHECK(!strcmp(signals_name(SIGRTMIN + 2, name, sizeof name), "SIGRTMIN+2"), "%s", name);
  CHECK(!strcmp(signals_name(SIGRTMAX - 3, name, sizeof name), "SIGRTMAX-3"), "%s", name);
  return CHECK_DONE();
}
