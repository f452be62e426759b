// Per-thread default stream (700). Built with --default-stream per-thread, so every launch without a stream
// goes to the calling thread's own default stream; a prefix-sum pass writes past its buffer through a bad
// segment offset. The error surfaces at cudaStreamSynchronize(cudaStreamPerThread).
#include "gpu_test.cuh"

static const int kN = 4096; // elements

__global__ void iota(int *x, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n)
    x[i] = i;
}

// Adds x into y starting at segment offset `seg`; trusts seg.
__global__ void segment_add(int *y, const int *x, int n, long long seg) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n)
    y[seg + i] += x[i]; // CULPRIT-FAULT
}

__global__ void halve(int *x, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n)
    x[i] /= 2;
}

int main(void) {
  int *x, *y, probe = 0;

  gt_start("gpu_ptds");
  GT_CHECK(cudaMalloc(&x, sizeof(int) * kN));
  GT_CHECK(cudaMalloc(&y, sizeof(int) * kN));
  GT_CHECK(cudaMemsetAsync(y, 0, sizeof(int) * kN, 0));

  iota<<<kN / 256, 256>>>(x, kN);
  segment_add<<<kN / 256, 256>>>(y, x, kN, 0);
  halve<<<kN / 256, 256>>>(y, kN);
  GT_CHECK(cudaMemcpyAsync(&probe, y + 10, sizeof probe, cudaMemcpyDeviceToHost, 0));
  GT_CHECK(cudaStreamSynchronize(cudaStreamPerThread));
  printf("first pass y[10] = %d\n", probe);

  segment_add<<<kN / 256, 256>>>(y, x, kN, 1LL << 40); // CULPRIT-LAUNCH
  halve<<<kN / 256, 256>>>(y, kN);
  GT_CHECK(cudaStreamSynchronize(cudaStreamPerThread));
  printf("second pass done\n");
  return 0;
}
