// A device assert on a side stream with few launches (710). The main stream runs a long loop of short kernels
// while a side stream applies a mask three times, with the same kernel and grid; the second mask holds an
// out-of-range index and the kernel's assert fires. The error surfaces at cudaDeviceSynchronize. The assert text
// names the kernel but not which of its three launches: the side stream is young, so each launch has its mark,
// and the run that faulted names the second exactly.
#undef NDEBUG // the assert must stay in even in release builds
#include <cassert>

#include "gpu_test.cuh"

#include <vector>

static const int kN = 1 << 14;        // elements
static const int kMainLaunches = 600; // short kernels on the main stream
static const int kMasks = 3;          // masks applied on the side stream
static const int kBadMask = 1;        // the mask (from 0) with the bad index

__global__ void axpy_step(float *y, const float *x, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = y[i] + 0.001f * x[i];
}

__global__ void apply_mask(float *v, const int *mask, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    int m = mask[i];
    assert(m >= 0 && m < n); // CULPRIT-FAULT
    v[m] = 0.0f;
  }
}

int main(void) {
  float *x, *y, *v;
  int *masks;
  cudaStream_t main_s, side_s;
  std::vector<int> h(kN * kMasks);

  gt_start("gpu_side");
  GT_CHECK(cudaStreamCreateWithFlags(&main_s, cudaStreamNonBlocking));
  GT_CHECK(cudaStreamCreateWithFlags(&side_s, cudaStreamNonBlocking));
  GT_CHECK(cudaMalloc(&x, sizeof(float) * kN));
  GT_CHECK(cudaMalloc(&y, sizeof(float) * kN));
  GT_CHECK(cudaMalloc(&v, sizeof(float) * kN));
  GT_CHECK(cudaMalloc(&masks, sizeof(int) * kN * kMasks));
  GT_CHECK(cudaMemset(x, 0, sizeof(float) * kN));
  GT_CHECK(cudaMemset(y, 0, sizeof(float) * kN));
  for (int k = 0; k < kMasks; k++)
    for (int i = 0; i < kN; i++) h[k * kN + i] = (i * 7 + k) % kN;
  h[kBadMask * kN + 4321] = kN + 99; // one bad index in the second mask
  GT_CHECK(cudaMemcpy(masks, h.data(), sizeof(int) * kN * kMasks, cudaMemcpyHostToDevice));
  GT_CHECK(cudaDeviceSynchronize());
  for (int i = 0; i < kMainLaunches; i++) {
    axpy_step<<<kN / 256, 256, 0, main_s>>>(y, x, kN);
    if (i % 200 == 100) apply_mask<<<kN / 256, 256, 0, side_s>>>(v, masks + (i / 200) * kN, kN); // CULPRIT-LAUNCH
  }
  GT_CHECK(cudaDeviceSynchronize());
  printf("done\n");
  return 0;
}
