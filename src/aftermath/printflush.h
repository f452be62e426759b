/* Getting a device assert's text out (printflush.c): the device prints it into a buffer that the driver empties
 * onto the process's stdout only at a synchronize, so an assert whose error surfaced at a launch leaves no text
 * unless something synchronizes. Once per process, after the fault, culprit asks for that flush itself. */
#ifndef CULPRIT_PRINTFLUSH_H
#define CULPRIT_PRINTFLUSH_H

struct printflush {
  const char *call; /* the driver call made ("cuCtxSynchronize"), NULL when none was */
  int result;       /* what it returned */
};

/* For a device assert (710) that surfaced in api, a call that is not a synchronize: makes the driver flush the
 * device's printf buffer (the call is chosen here, in one place) and fills *pf. On a faulted context the call
 * returns at once with the sticky error; nothing is called for any other error or a synchronize. */
void printflush_after_fault(int code, const char *api, struct printflush *pf);

#endif
