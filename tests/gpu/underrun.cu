// Write before the start of an allocation (700). A shift kernel moves each element `shift` places to the left
// and forgets that the first `shift` elements have nowhere to go: threads 0-3 of block 0 write 4 to 1 elements
// before the buffer. The buffer is mapped with the virtual memory API at the upper half of a reservation, so the
// bytes before it are reserved and unmapped and the stray writes fault on every GPU (a buffer of cudaMalloc may
// have another allocation's memory right before it, where the write would corrupt it silently).
#include "gpu_fenced.cuh"

static const int kN = 1 << 16; // elements shifted
static const int kShift = 4;   // places to the left

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
  float *src, *dst, host = 0.0f;

  gt_start("gpu_underrun");
  // the upper half of the reservation: what lies before the buffer is reserved and unmapped
  dst = (float *)gt_fenced_buffer(gt_fenced_bytes(sizeof(float) * kN), 0);
  GT_CHECK(cudaMalloc(&src, sizeof(float) * kN));

  fill<<<kN / 256, 256>>>(src, kN);
  shift_left<<<kN / 256, 256>>>(dst, src, kN, kShift); // CULPRIT-LAUNCH
  GT_CHECK(cudaMemcpy(&host, dst, sizeof host, cudaMemcpyDeviceToHost));
  printf("first element %.1f\n", host);
  return 0;
}
