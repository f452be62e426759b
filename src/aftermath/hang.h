/* The hang watcher and the hang report (kind "hang", culprit-<pid>-hang.json): a thread started at the first
 * recorded launch writes a snapshot of what the GPU and every host thread are doing when a signal handler asks
 * for one (signals.c) or when launches stay pending without progress for CULPRIT_HANG_TIMEOUT. */
#ifndef CULPRIT_HANG_H
#define CULPRIT_HANG_H

struct cp_config;

/* At the process's first recorded launch: installs the signal handlers and starts the watcher, once per process;
 * cfg must live as long as the process. No thread is started when there is nothing to watch (no signals and no
 * timeout). */
void hang_start(const struct cp_config *cfg);

/* From culprit's signal handler, async-signal-safe: asks the watcher for a report of signal sig (sent by
 * sender_pid, 0 if unknown) and waits for it, a few seconds at most. uc is the handler's context (where the
 * signal interrupted this thread). stop: the process is about to end (SIGTERM, SIGINT, SIGQUIT, SIGABRT), so
 * only the first such signal gets a report and later ones wait for it. Nothing happens while a fault report is
 * being written (it is waited for) or once one was written, in the watcher thread itself, or without a watcher. */
void hang_request(int sig, int sender_pid, int stop, const void *uc);

/* Hang reports this process wrote (for the exit record: a process that wrote one has said its piece). */
int hang_written(void);

#endif
