/* culprit's signal handlers: for the signals that stop a process (SIGTERM, SIGINT, SIGQUIT, SIGABRT, when
 * CULPRIT_HANG_SIGNALS is on) and for the report signal (CULPRIT_REPORT_SIGNAL). Installed at the first recorded
 * launch in front of whatever the program has; each asks for a report (the hang watcher, hang.c), then does what
 * the program asked for. The program's own later sigaction() and signal() calls for these signals come here
 * (src/intercept/sigaction.c) and are kept as the disposition to chain to. */
#ifndef CULPRIT_SIGNALS_H
#define CULPRIT_SIGNALS_H

#include <signal.h>

struct cp_config;

typedef int (*signals_sigaction_fn)(int sig, const struct sigaction *act, struct sigaction *old);
/* libc's sigaction (the next one after culprit in the search order), filled by intercept at load. */
extern signals_sigaction_fn signals_real_sigaction;

/* What a handler calls, async-signal-safe: asks for a report of signal sig (sent by sender_pid, 0 if unknown)
 * and waits for it, bounded. stop: the signal stops the process. uc: the handler's context. */
typedef void (*signals_ask_fn)(int sig, int sender_pid, int stop, const void *uc);

/* Installs the handlers the configuration asks for, once per process (a forked child keeps its parent's); each
 * calls ask, then does what the program asked for. A signal the program ignores (SIG_IGN) is left alone. Returns
 * 0, or -1 when libc's sigaction is unknown. */
int signals_install(const struct cp_config *cfg, signals_ask_fn ask);
/* What a stop signal's handler runs (async-signal-safe) just before the signal's default ends the process: the
 * last words of a dying process that exit handlers would otherwise have written (aftermath.c gives errfile's). */
typedef void (*signals_last_fn)(void);
void signals_last_words(signals_last_fn fn);
/* Whether culprit stands in front of the program's disposition of sig (async-signal-safe, lock-free). */
int signals_owned(int sig);
/* The program's sigaction for an owned signal: act (if any) becomes the disposition culprit's handler chains to
 * (SIG_IGN goes to the kernel as it is, so the signal stays ignored, across exec too), and old gets the
 * program's previous one, never culprit's. Returns 0, or -1 with errno. */
int signals_sigaction(int sig, const struct sigaction *act, struct sigaction *old);
/* The name of a signal for reports: "SIGTERM", "SIGUSR1", "SIGRTMIN+2", or "signal N". */
const char *signals_name(int sig, char *buf, unsigned len);

#endif
