/* The hang watcher and the hang report (kind "hang", culprit-<pid>-hang.json): a thread started at the first
 * recorded launch writes a snapshot of what the GPU and every host thread are doing when a signal handler asks
 * for one (signals.c) or when launches stay pending without progress for CULPRIT_HANG_TIMEOUT. */
#ifndef CULPRIT_HANG_H
#define CULPRIT_HANG_H

#include <stdatomic.h>

struct cp_config;

/* Non-zero once hang_start ran in this process (a forked child starts at 0 again). */
extern _Atomic int hang_started;

/* Installs the signal handlers and starts the watcher, once per process; cfg must live as long as the process.
 * No thread is started when there is nothing to watch (no signals and no timeout). */
void hang_start(const struct cp_config *cfg);

/* Called for every recorded launch: the first one starts the watcher. */
static inline void hang_at_launch(const struct cp_config *cfg) {
  /* relaxed: a launch racing the first one only calls hang_start, which starts once */
  if (__builtin_expect(!atomic_load_explicit(&hang_started, memory_order_relaxed), 0)) hang_start(cfg);
}

/* From culprit's signal handler, async-signal-safe: asks the watcher for a report of signal sig (sent by
 * sender_pid, 0 if unknown) and waits for it, a few seconds at most. uc is the handler's context (where the
 * signal interrupted this thread). stop: the process is about to end (SIGTERM, SIGINT, SIGQUIT, SIGABRT), so
 * only the first such signal gets a report and later ones wait for it. Nothing happens while a fault report is
 * being written (it is waited for) or once one was written, in the watcher thread itself, or without a watcher. */
void hang_request(int sig, int sender_pid, int stop, const void *uc);

/* Hang reports this process wrote (for the exit record: a process that wrote one has said its piece). */
int hang_written(void);

#endif
