/* The Python frames a launch from a thread that runs no Python gets: those of the Python thread waiting on it
 * (PyTorch's autograd engine launching during backward()), chosen and kept up to date cheaply per launching
 * thread (pywait.c). Reading another thread's frames is pystack's (pystack.h). */
#ifndef CULPRIT_PYWAIT_H
#define CULPRIT_PYWAIT_H

#include "pystack.h"

/* For a launch by a thread that runs no Python (PyTorch's autograd engine during backward(), a library's helper
 * thread): fills out[0..max) with the frames of the Python thread that waits on it, as they are at this moment,
 * and *thread_id with that thread's Python id. The waiting thread is one whose frames are in torch.autograd
 * (backward() waits there while the engine launches), else the oldest Python thread. Returns the count, 0 when
 * there is none or it could not be read cheaply. The choice is cached per calling thread with every word of
 * the chosen thread's memory its walk depended on (frame links and instruction pointers). A call first reads the
 * chosen thread's CPU-time clock (one cheap system call): unchanged means it has not run, so its frames are as
 * cached. Otherwise one guarded read of those words decides. If they moved, the other threads are walked again,
 * once a millisecond on average (up to 8 in a row), and a call over that budget gets no frames rather than
 * stale ones. Never blocks, never takes the GIL, cannot crash on a thread state or frame freed meanwhile. */
int pystack_waiting(struct pystack_ref *out, int max, unsigned long long *thread_id);
/* How pystack_waiting's calls knew the frames they returned, counted once pystack_wait_counting(1) was called
 * (CULPRIT_STATS), one count per call: by the chosen thread's clock alone, by a check of the words its walk read,
 * by a new walk made in that call; none: no frames returned. */
struct pystack_wait_counts {
  unsigned long long by_clock, checked, walked, none;
};
void pystack_wait_counting(int on);
void pystack_wait_counts(struct pystack_wait_counts *out);

#endif
