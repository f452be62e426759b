// Eight host threads, each launching a chain of kernels on its own stream; worker 5 launches a lookup with a
// bad slot in its third iteration (700). Workers stop at their first error; the main thread then reports the
// sticky error at cudaDeviceSynchronize, so the program's own message does not depend on thread timing.
#include "gpu_test.cuh"

#include <thread>
#include <vector>

static const int kThreads = 8;  // host threads, one stream each
static const int kIters = 6;    // iterations per thread
static const int kBadThread = 5; // the worker that faults
static const int kBadIter = 3;  // in this iteration
static const int kN = 2048;     // elements per worker buffer
static const unsigned long long kSpinNs = 20000; // keeps kernels of different threads overlapping

__global__ void tile_fill(int *x, int n, int v) {
  gt_spin_ns(kSpinNs);
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
    x[i] = v + i;
}

__global__ void tile_mix(int *x, int n) {
  gt_spin_ns(kSpinNs);
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
    x[i] = x[i] * 3 + 1;
}

// Writes into slot `slot` of a table; trusts the slot.
__global__ void tile_lookup(int *table, long long slot, int v) {
  gt_spin_ns(kSpinNs);
  if (threadIdx.x == 0)
    table[slot] = v; // CULPRIT-FAULT
}

static void worker(int id, cudaError_t *result) {
  cudaStream_t st;
  int *buf;
  cudaError_t err;

  err = cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking);
  if (!err)
    err = cudaMalloc(&buf, sizeof(int) * kN);
  for (int it = 1; it <= kIters && !err; it++) {
    tile_fill<<<4, 128, 0, st>>>(buf, kN, id * 100 + it);
    tile_mix<<<4, 128, 0, st>>>(buf, kN);
    if (id == kBadThread && it == kBadIter)
      tile_lookup<<<1, 32, 0, st>>>(buf, 1LL << 40, id); // CULPRIT-LAUNCH
    else
      tile_lookup<<<1, 32, 0, st>>>(buf, it, id);
    err = cudaStreamSynchronize(st);
  }
  *result = err;
}

int main(void) {
  std::vector<std::thread> threads;
  cudaError_t results[kThreads];
  int failed = 0;

  gt_start("gpu_threads8");
  GT_CHECK(cudaFree(0)); // create the context before the workers start
  for (int i = 0; i < kThreads; i++)
    threads.emplace_back(worker, i, &results[i]);
  for (auto &t : threads)
    t.join();
  for (int i = 0; i < kThreads; i++)
    failed += results[i] != cudaSuccess;
  GT_CHECK(cudaDeviceSynchronize());
  printf("%d workers done, %d failed\n", kThreads, failed);
  return 0;
}
