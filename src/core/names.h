/* Kernel names, looked up once per function handle and interned for the life of the process, so a launch
 * record holds a pointer and the launch path does a lock-free hash probe instead of a driver call. */
#ifndef CULPRIT_NAMES_H
#define CULPRIT_NAMES_H

#include <stdatomic.h>
#include <stdint.h>

struct cp_kname {
  const char *mangled;    /* as the driver reports it (Itanium-mangled for C++ kernels) */
  _Atomic uint64_t match; /* blocking mode's filter, remembered: (mode frame's generation << 1) | matched;
                                   * 0 = not asked yet. Written by the launch path (the only mutable field) */
};

/* Asks the driver for a name; returns 0 and sets *name, or nonzero. */
typedef int (*names_lookup_fn)(void *func, const char **name);

/* The interned name of func; looks it up through fn the first time. Never NULL: unknown functions get a
 * name that says so, and so do functions met once 6144 entries (over all module loads) are taken. */
const struct cp_kname *names_get(void *func, names_lookup_fn fn);
/* Forgets every handle (module unload: handles may be reused); interned names stay valid. */
void names_forget_all(void);
/* After fork in the child: the lock may have been held by a thread that does not exist there. */
void names_after_fork(void);
/* Copies s into the never-freed arena; NULL if memory is short. */
const char *names_intern(const char *s);

#endif
