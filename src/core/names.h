/* Kernel names, looked up once per function handle and interned for the life of the process, so a launch
 * record holds a pointer and the launch path does a lock-free hash probe instead of a driver call. */
#ifndef CULPRIT_NAMES_H
#define CULPRIT_NAMES_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

/* Bytes of a launch's packed parameter buffer its record keeps (ring.h: seven 8-byte words). */
#define CP_PARAMS_KEPT 56

/* Where a kernel's parameters lie in its packed buffer, as far as a record keeps it: the parameters that start
 * within the first CP_PARAMS_KEPT bytes, each with the bytes of it that fall there. */
struct cp_params_layout {
  uint32_t size;               /* bytes of the whole buffer (the last parameter's offset plus its size) */
  uint8_t known;               /* 1 when the driver described the parameters; 0: no record keeps any */
  uint8_t n;                   /* parameters in off and len */
  uint8_t off[CP_PARAMS_KEPT]; /* offset of each in the buffer */
  uint8_t len[CP_PARAMS_KEPT]; /* bytes of each within the first CP_PARAMS_KEPT */
};

struct cp_kname {
  const char *mangled;            /* as the driver reports it (Itanium-mangled for C++ kernels) */
  _Atomic uint64_t match;         /* blocking mode's filter, remembered: (mode frame's generation << 1) | matched;
                                   * 0 = not asked yet. Written by the launch path (the only mutable field) */
  struct cp_params_layout params; /* its parameters, asked once with the name */
};

/* Asks the driver for a name; returns 0 and sets *name, or nonzero. */
typedef int (*names_lookup_fn)(void *func, const char **name);
/* Asks the driver for the offset and size of parameter i of func (cuFuncGetParamInfo); returns 0, or nonzero
 * past the last parameter or when the driver cannot say. */
typedef int (*names_param_fn)(void *func, size_t i, size_t *offset, size_t *size);

/* The interned name of func; looks it up through fn, and its parameters through pfn (NULL: none), the first
 * time. Never NULL: unknown functions get a name that says so, and so do functions met once 6144 entries (over
 * all module loads) are taken; those keep no parameter layout. */
const struct cp_kname *names_get(void *func, names_lookup_fn fn, names_param_fn pfn);
/* Forgets every handle (module unload: handles may be reused); interned names stay valid. */
void names_forget_all(void);
/* After fork in the child: the lock may have been held by a thread that does not exist there. */
void names_after_fork(void);
/* Copies s into the never-freed arena; NULL if memory is short. */
const char *names_intern(const char *s);

#endif
