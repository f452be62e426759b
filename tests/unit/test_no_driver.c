/* Unit test: with libculprit preloaded into a process that has no CUDA driver loaded, probing for driver entry
 * points finds nothing (as without culprit): a program checking "is CUDA here?" must not get culprit's own
 * wrappers. Other lookups are unaffected. */
#define _GNU_SOURCE
#include "check.h"

#include <dlfcn.h>
#include <stdio.h>

int main(void) {
  CHECK(dlsym(RTLD_DEFAULT, "cuLaunchKernel") == NULL, "cuLaunchKernel found without a driver");
  CHECK(dlsym(RTLD_DEFAULT, "cuGetProcAddress_v2") == NULL, "cuGetProcAddress_v2 found without a driver");
  CHECK(dlsym(RTLD_NEXT, "cuStreamSynchronize") == NULL, "cuStreamSynchronize found through RTLD_NEXT");
  CHECK(dlsym(RTLD_DEFAULT, "cuNotAFunction") == NULL, "an unknown cu name resolved");
  CHECK(dlsym(RTLD_DEFAULT, "printf") == (void *)printf, "ordinary lookups still work");
  CHECK(dlsym(RTLD_NEXT, "puts") != NULL, "RTLD_NEXT still works");
  return CHECK_DONE();
}
