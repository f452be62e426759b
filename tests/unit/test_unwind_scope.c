/* Unit test: with libculprit preloaded, the process's exception-unwinding and backtrace entry points still come
 * from the C runtime (libgcc_s, libc), not from the libunwind culprit uses for its own stacks: that one must stay
 * out of the global symbol scope, or it would unwind every C++ exception of the program. */
#define _GNU_SOURCE
#include "check.h"

#include <dlfcn.h>
#include <string.h>

static const char *owner(const char *sym) {
  Dl_info di;
  void *p = dlsym(RTLD_DEFAULT, sym);
  return p && dladdr(p, &di) && di.dli_fname ? di.dli_fname : "";
}

int main(void) {
  /* libgcc_s is what C++ programs get it from; load it as a C++ runtime would be */
  CHECK(dlopen("libgcc_s.so.1", RTLD_NOW | RTLD_GLOBAL) != NULL, "libgcc_s.so.1 not loadable");
  const char *raise = owner("_Unwind_RaiseException"), *bt = owner("backtrace");
  CHECK(strstr(raise, "libgcc_s") != NULL, "_Unwind_RaiseException comes from %s", raise);
  CHECK(strstr(bt, "libc.so") != NULL, "backtrace comes from %s", bt);
  CHECK(dlsym(RTLD_DEFAULT, "unw_backtrace") == NULL, "libunwind's symbols are in the global scope");
  return CHECK_DONE();
}
