// Device-side assert (710). A bucketing pass checks its bucket index with assert(); one input value is out of
// range, the assert fires on the device, and the error surfaces at cudaDeviceSynchronize. The device prints the
// assertion text on stdout at that synchronization.
#undef NDEBUG // the assert must stay in even in release builds
#include <cassert>

#include "gpu_test.cuh"

static const int kN = 4096;     // input values
static const int kBuckets = 64; // histogram buckets

__global__ void fill_values(int *values, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n)
    values[i] = (i * 37) % kBuckets;
}

__global__ void poison_value(int *values, int at) {
  values[at] = kBuckets + 5; // one value the histogram cannot hold
}

__global__ void histogram_checked(const int *values, unsigned *hist, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n)
    return;
  int b = values[i];
  assert(b >= 0 && b < kBuckets); // CULPRIT-FAULT
  atomicAdd(&hist[b], 1u);
}

__global__ void scale_hist(unsigned *hist, unsigned factor) {
  int i = threadIdx.x;
  if (i < kBuckets)
    hist[i] *= factor;
}

int main(void) {
  int *values;
  unsigned *hist;

  gt_start("gpu_assert");
  GT_CHECK(cudaMalloc(&values, sizeof(int) * kN));
  GT_CHECK(cudaMalloc(&hist, sizeof(unsigned) * kBuckets));
  GT_CHECK(cudaMemset(hist, 0, sizeof(unsigned) * kBuckets));

  fill_values<<<kN / 256, 256>>>(values, kN);
  histogram_checked<<<kN / 256, 256>>>(values, hist, kN);
  scale_hist<<<1, kBuckets>>>(hist, 2);
  GT_CHECK(cudaDeviceSynchronize());
  printf("first pass done\n");

  poison_value<<<1, 1>>>(values, 1000);
  fill_values<<<1, 32>>>(values, 32);
  histogram_checked<<<kN / 256, 256>>>(values, hist, kN); // CULPRIT-LAUNCH
  scale_hist<<<1, kBuckets>>>(hist, 3);
  GT_CHECK(cudaDeviceSynchronize());
  printf("second pass done\n");
  return 0;
}
