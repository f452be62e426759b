/* The CUDA runtime's error text (cudaGetErrorString), the one export culprit has outside the driver's names.
 * PyTorch builds its exception from "CUDA error: " and this text (c10/cuda's check), with the shared runtime it
 * ships; preloaded, culprit's definition comes first in the search order, whatever symbol version the caller
 * asks for (a definition without version information satisfies a versioned reference). The text for the sticky
 * error of culprit's verdict gets the verdict's line (aftermath/errtext.c); the code, and every other text, are
 * the runtime's own. A program linked with the static runtime calls its own copy and is not reached here. */
#define _GNU_SOURCE
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <dlfcn.h>

#include "../aftermath/errtext.h"
#include "export.h"

/* The sticky codes the runtime names alike: the verdict's driver code is the runtime's code for its text. */
_Static_assert((int)cudaErrorIllegalAddress == (int)CUDA_ERROR_ILLEGAL_ADDRESS, "700");
_Static_assert((int)cudaErrorLaunchTimeout == (int)CUDA_ERROR_LAUNCH_TIMEOUT, "702");
_Static_assert((int)cudaErrorAssert == (int)CUDA_ERROR_ASSERT, "710");
_Static_assert((int)cudaErrorHardwareStackError == (int)CUDA_ERROR_HARDWARE_STACK_ERROR, "714");
_Static_assert((int)cudaErrorIllegalInstruction == (int)CUDA_ERROR_ILLEGAL_INSTRUCTION, "715");
_Static_assert((int)cudaErrorMisalignedAddress == (int)CUDA_ERROR_MISALIGNED_ADDRESS, "716");
_Static_assert((int)cudaErrorInvalidAddressSpace == (int)CUDA_ERROR_INVALID_ADDRESS_SPACE, "717");
_Static_assert((int)cudaErrorInvalidPc == (int)CUDA_ERROR_INVALID_PC, "718");
_Static_assert((int)cudaErrorLaunchFailure == (int)CUDA_ERROR_LAUNCH_FAILED, "719");

void *cp__next_sym(void *scope, const char *name); /* intercept.c */

typedef const char *(*errstr_fn)(cudaError_t);

/* The runtime the caller uses: looked up among the calling library's own dependencies first (a process may hold
 * several runtimes, one loaded RTLD_LOCAL by a Python extension, outside the global search order), then after
 * culprit in the global order. */
static errstr_fn runtime_of(void *caller) {
  Dl_info di;
  void *p = NULL;
  if (dladdr(caller, &di) && di.dli_fname && di.dli_fname[0]) {
    void *h = dlopen(di.dli_fname, RTLD_LAZY | RTLD_NOLOAD);
    if (h) {
      p = cp__next_sym(h, "cudaGetErrorString");
      dlclose(h);
    }
  }
  if (!p) p = cp__next_sym(NULL, "cudaGetErrorString");
  return (errstr_fn)p;
}

CP_EXPORT const char *CUDARTAPI cudaGetErrorString(cudaError_t error) {
  errstr_fn real = runtime_of(__builtin_return_address(0));
  /* no runtime at all (a program probing the global scope for one): the runtime's words for an unknown code */
  const char *s = real ? real(error) : "unrecognized error code";
  /* a runtime that asked the driver for the text got the decorated one already */
  return errtext_is_ours(s) ? s : errtext_decorate(ERRTEXT_RUNTIME, (int)error, s);
}
