// Write before the start of an allocation (700). A shift kernel moves each element `shift` places to the left
// and forgets that the first `shift` elements have nowhere to go: threads 0-3 of block 0 write 4 to 1 elements
// before the buffer. The buffer is mapped with the virtual memory API at the upper half of a reservation, so the
// bytes before it are reserved and unmapped and the stray writes fault on every GPU (a buffer of cudaMalloc may
// have another allocation's memory right before it, where the write would corrupt it silently).
#include "gpu_test.cuh"

#include <cuda.h>

static const int kN = 1 << 16; // elements shifted
static const int kShift = 4;   // places to the left

static void drv_check(CUresult rc, const char *what, int line) {
  const char *msg = NULL;
  if (rc == CUDA_SUCCESS) return;
  if (cuGetErrorString(rc, &msg) != CUDA_SUCCESS || !msg) msg = "unknown error";
  fprintf(stderr, "gpu_underrun: CUDA error at %s (underrun.cu:%d): %s\n", what, line, msg);
  exit(1);
}
#define DRV_CHECK(call) drv_check((call), #call, __LINE__)

__global__ void fill(float *x, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] = (float)i;
}

// The faulty kernel: element i goes to i - shift, also for i < shift.
__global__ void shift_left(float *dst, const float *src, int n, int shift) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) dst[i - shift] = src[i]; // CULPRIT-FAULT
}

int main(void) {
  CUdevice dev;
  CUmemGenericAllocationHandle h;
  CUmemAllocationProp prop;
  CUmemAccessDesc access;
  CUdeviceptr reserved;
  size_t gran = 0, bytes;
  float *src, *dst, host = 0.0f;

  gt_start("gpu_underrun");
  GT_CHECK(cudaFree(0)); // the runtime's context, current for the driver calls below
  DRV_CHECK(cuCtxGetDevice(&dev));
  memset(&prop, 0, sizeof prop);
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = (int)dev;
  DRV_CHECK(cuMemGetAllocationGranularity(&gran, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
  bytes = ((sizeof(float) * kN + gran - 1) / gran) * gran;
  // reserve two pieces, map the upper one: what lies before the buffer is reserved and unmapped
  DRV_CHECK(cuMemAddressReserve(&reserved, 2 * bytes, 0, 0, 0));
  DRV_CHECK(cuMemCreate(&h, bytes, &prop, 0));
  DRV_CHECK(cuMemMap(reserved + bytes, bytes, 0, h, 0));
  access.location = prop.location;
  access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  DRV_CHECK(cuMemSetAccess(reserved + bytes, bytes, &access, 1));
  dst = (float *)(reserved + bytes);
  GT_CHECK(cudaMalloc(&src, sizeof(float) * kN));

  fill<<<kN / 256, 256>>>(src, kN);
  shift_left<<<kN / 256, 256>>>(dst, src, kN, kShift); // CULPRIT-LAUNCH
  GT_CHECK(cudaMemcpy(&host, dst, sizeof host, cudaMemcpyDeviceToHost));
  printf("first element %.1f\n", host);
  return 0;
}
