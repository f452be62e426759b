// A program that never synchronizes after its faulty kernel: a counter update trusts its slot index and writes
// far outside its buffer (700), and main returns 0 right after the launch. Without culprit the process exits with
// status 0 and nothing tells the user; under culprit the fault is found at exit (or when the runtime tears the
// context down) and reported, and `culprit run` says that the command exited 0 although a kernel faulted.
#include "gpu_test.cuh"

static const int kN = 4096;   // elements of the data buffer
static const int kSlots = 16; // counters

__global__ void fill(float *x, int n, float v) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n)
    x[i] = v;
}

// Adds one to counts[slot]; slot comes from the host and is not checked.
__global__ void bump_counter(int *counts, long long slot) {
  if (blockIdx.x == 0 && threadIdx.x == 0)
    counts[slot] += 1;
}

int main(void) {
  float *x, first = 0.0f;
  int *counts;

  gt_start("gpu_nosync");
  GT_CHECK(cudaMalloc(&x, sizeof(float) * kN));
  GT_CHECK(cudaMalloc(&counts, sizeof(int) * kSlots));
  GT_CHECK(cudaMemset(counts, 0, sizeof(int) * kSlots));
  fill<<<kN / 256, 256>>>(x, kN, 1.5f);
  GT_CHECK(cudaMemcpy(&first, x, sizeof first, cudaMemcpyDeviceToHost)); // the last call that waits for the GPU
  printf("first value %.1f\n", first);

  bump_counter<<<1, 32>>>(counts, 1LL << 40); // CULPRIT-LAUNCH
  printf("counter update queued; exiting without waiting for it\n");
  return 0;
}
