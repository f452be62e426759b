/* Demangling through the C++ runtime's __cxa_demangle, found at run time: the library must not pull libstdc++
 * into a C program, and every C++ or CUDA program already has it loaded. The CLI links libstdc++ for this. */
#define _GNU_SOURCE
#include "demangle.h"

#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>

typedef char *(*cxa_demangle_fn)(const char *, char *, size_t *, int *);

char *demangle_name(const char *mangled) {
  static cxa_demangle_fn fn;
  static int looked;
  int status = -1;
  if (!mangled || strncmp(mangled, "_Z", 2) != 0) return NULL;
  if (!looked) {
    fn = (cxa_demangle_fn)dlsym(RTLD_DEFAULT, "__cxa_demangle");
    if (!fn) {
      /* Python loads extension modules (and so libstdc++) with RTLD_LOCAL: not in the global scope. */
      void *h = dlopen("libstdc++.so.6", RTLD_LAZY | RTLD_NOLOAD);
      /* A C program has no C++ runtime at all; demangling happens only when a report is written, so loading it
       * then costs the program nothing. */
      if (!h) h = dlopen("libstdc++.so.6", RTLD_LAZY | RTLD_LOCAL);
      if (h) fn = (cxa_demangle_fn)dlsym(h, "__cxa_demangle");
    }
    looked = 1;
  }
  if (!fn) return NULL;
  char *out = fn(mangled, NULL, NULL, &status);
  if (status != 0) { free(out); return NULL; }
  return out;
}
