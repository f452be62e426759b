// A device buffer with unmapped address space on one side, for the GPU test programs whose stray accesses must
// fault on every GPU: mapped with the driver's virtual memory API in one half of a reservation of two, the other
// half reserved and left unmapped (a cudaMalloc'd buffer may have another allocation's memory beside it, where a
// stray write corrupts it silently). Programs that include this link the driver (CUDA::cuda_driver).
#pragma once

#include <cstring>

#include <cuda.h>

#include "gpu_test.cuh"

// A failed driver call ends the program like gt_check: one line naming the call and the driver's text.
static inline void gt_drv_check(CUresult rc, const char *what, const char *file, int line) {
  const char *msg = NULL;
  if (rc == CUDA_SUCCESS) return;
  if (cuGetErrorString(rc, &msg) != CUDA_SUCCESS || !msg) msg = "unknown error";
  fprintf(stderr, "%s: CUDA error at %s (%s:%d): %s\n", gt_prog, what, gt_basename(file), line, msg);
  exit(1);
}
#define DRV_CHECK(call) gt_drv_check((call), #call, __FILE__, __LINE__)

// The allocation properties of device memory on the current context's device.
static inline CUmemAllocationProp gt_fenced_prop(void) {
  CUdevice dev;
  CUmemAllocationProp prop;
  GT_CHECK(cudaFree(0)); // the runtime's context, current for the driver calls
  DRV_CHECK(cuCtxGetDevice(&dev));
  memset(&prop, 0, sizeof prop);
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = (int)dev;
  return prop;
}

// want bytes rounded up to the mapping granularity: what a fenced buffer of at least want bytes holds.
static inline size_t gt_fenced_bytes(size_t want) {
  CUmemAllocationProp prop = gt_fenced_prop();
  size_t gran = 0;
  DRV_CHECK(cuMemGetAllocationGranularity(&gran, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
  return ((want + gran - 1) / gran) * gran;
}

// A buffer of bytes (a multiple of the granularity: gt_fenced_bytes) in one half of a reservation of two: the
// lower half when unmapped_after (what lies after the buffer is unmapped), else the upper (what lies before it).
static inline void *gt_fenced_buffer(size_t bytes, int unmapped_after) {
  CUmemAllocationProp prop = gt_fenced_prop();
  CUmemGenericAllocationHandle h;
  CUmemAccessDesc access;
  CUdeviceptr reserved;
  DRV_CHECK(cuMemAddressReserve(&reserved, 2 * bytes, 0, 0, 0));
  CUdeviceptr at = unmapped_after ? reserved : reserved + bytes;
  DRV_CHECK(cuMemCreate(&h, bytes, &prop, 0));
  DRV_CHECK(cuMemMap(at, bytes, 0, h, 0));
  access.location = prop.location;
  access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  DRV_CHECK(cuMemSetAccess(at, bytes, &access, 1));
  return (void *)at;
}
