// Helpers shared by the GPU test programs: error reporting the way a careful CUDA program does it (one line on
// stderr naming the call and cudaGetErrorString, then exit status 1), a clean skip where no device is present,
// and a device-side wait so that a kernel faults only after the host has gone on to the call under test.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include <cuda_runtime.h>

#define GT_EXIT_SKIP 77 // the runner's "skipped" status: no device here

static const char *gt_prog = "gpu-test"; // program name used in messages, set by gt_start()

static inline const char *gt_basename(const char *path) {
  const char *slash = strrchr(path, '/');
  return slash ? slash + 1 : path;
}

// A failed runtime call ends the program the way real applications do: one message, exit status 1.
static inline void gt_check(cudaError_t err, const char *what, const char *file, int line) {
  if (err == cudaSuccess)
    return;
  fprintf(stderr, "%s: CUDA error at %s (%s:%d): %s\n", gt_prog, what, gt_basename(file), line,
          cudaGetErrorString(err));
  exit(1);
}
#define GT_CHECK(call) gt_check((call), #call, __FILE__, __LINE__)

// Names the program and skips (status 77) where there is no usable CUDA device.
static inline void gt_start(const char *prog) {
  int count = 0;
  cudaError_t err;

  gt_prog = prog;
  err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess || count == 0) {
    fprintf(stderr, "%s: skipped: no CUDA device (%s)\n", prog,
            err != cudaSuccess ? cudaGetErrorString(err) : "none found");
    exit(GT_EXIT_SKIP);
  }
}

// Nanoseconds from the GPU's global timer.
static __device__ __forceinline__ unsigned long long gt_globaltimer(void) {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

// Keeps the calling GPU thread busy for about ns nanoseconds. Tests use it so that a faulty kernel is still
// running when the host reaches the call that must surface the error; nothing measures or asserts a time.
static __device__ void gt_spin_ns(unsigned long long ns) {
  unsigned long long t0 = gt_globaltimer();
  while (gt_globaltimer() - t0 < ns) {
  }
}
