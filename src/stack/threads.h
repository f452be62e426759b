/* Every host thread of the process, for a hang report: its name and scheduler state from /proc/self/task, and
 * its native stack where it waits, taken by the thread itself in a handler of a real-time signal (SIGRTMAX-3)
 * that the snapshot sends it. Python frames are pystack.h's; this file knows nothing of reports. */
#ifndef CULPRIT_THREADS_H
#define CULPRIT_THREADS_H

#include <stdint.h>

#define THREADS_MAX 256  /* threads a snapshot lists; more are counted */
#define THREADS_DEPTH 48 /* native frames kept per thread */

struct threads_info {
  int tid;                       /* kernel thread id */
  char name[16];                 /* its name (comm), as the kernel keeps it */
  char state;                    /* scheduler state letter of /proc: R, S, D, T, t, Z... ('?' unknown) */
  unsigned long long pthread_id; /* its pthread_self(), which Python calls the thread's ident; 0 = unknown */
  int in_handler;                /* it was in culprit's signal handler: the stack is where the signal found it */
  int nframes;                   /* frames taken, innermost first; 0 when note says why there are none */
  const char *note;              /* why the stack is missing or partial (a static sentence), or NULL */
  void *frames[THREADS_DEPTH];   /* return addresses, the innermost being where the thread was interrupted */
};

/* Fills out[0..max) with the threads of the process other than the caller, in /proc order (the main thread
 * first), and takes their stacks: each thread is sent the capture signal (tgkill) and answers within wait_ms
 * in all, or goes without. The signal is used only while its disposition is the default or culprit's own (the
 * first snapshot installs the handler, SA_RESTART, and leaves it); a thread that blocks it, or waits for
 * signals (sigwaitinfo, sigsuspend, pause), is not sent it. A thread inside a culprit signal handler
 * (threads_handler_enter) shows the place the handler interrupted. *more gets the threads left out. Returns
 * the count. One caller at a time; not for signal handlers. */
int threads_snapshot(struct threads_info *out, int max, int wait_ms, int *more);

/* In a signal handler of culprit's (async-signal-safe): takes the calling thread's stack from where the signal
 * interrupted it (uc: the handler's ucontext_t), so that a snapshot taken while the handler waits shows that
 * place; leave ends it. At most 8 threads at once; more are sent the capture signal like the others. */
void threads_handler_enter(const void *uc);
void threads_handler_leave(void);

/* The capture signal's number (SIGRTMAX-3). */
int threads_capture_signal(void);

/* After fork, in the child: no capture is under way and no handler is entered. */
void threads_after_fork(void);

#endif
