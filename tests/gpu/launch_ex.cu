// cudaLaunchKernelEx (700). Kernels launched with an extended launch configuration and a thread-block cluster
// attribute (sm_90); one tile copy gets a bad destination offset and writes out of bounds. The error surfaces
// at cudaStreamSynchronize (or at a following launch).
#include "gpu_test.cuh"

static const int kN = 8192; // elements

__global__ void tile_init(float *x, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n)
    x[i] = (float)(i & 255);
}

// Copies src into dst at dst[offset + i]; trusts offset.
__global__ void tile_copy(float *dst, const float *src, int n, long long offset) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n)
    dst[offset + i] = src[i]; // CULPRIT-FAULT
}

static cudaLaunchConfig_t cluster_config(cudaStream_t st, cudaLaunchAttribute *attr) {
  cudaLaunchConfig_t cfg;

  memset(&cfg, 0, sizeof cfg);
  cfg.gridDim = dim3(kN / 256);
  cfg.blockDim = dim3(256);
  cfg.dynamicSmemBytes = 0;
  cfg.stream = st;
  attr->id = cudaLaunchAttributeClusterDimension;
  attr->val.clusterDim.x = 2;
  attr->val.clusterDim.y = 1;
  attr->val.clusterDim.z = 1;
  cfg.attrs = attr;
  cfg.numAttrs = 1;
  return cfg;
}

int main(void) {
  cudaStream_t st;
  cudaLaunchAttribute attr;
  cudaLaunchConfig_t cfg;
  float *a, *b, probe = 0.0f;

  gt_start("gpu_launch_ex");
  GT_CHECK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
  GT_CHECK(cudaMalloc(&a, sizeof(float) * kN));
  GT_CHECK(cudaMalloc(&b, sizeof(float) * kN));
  cfg = cluster_config(st, &attr);

  GT_CHECK(cudaLaunchKernelEx(&cfg, tile_init, a, kN));
  GT_CHECK(cudaLaunchKernelEx(&cfg, tile_copy, b, (const float *)a, kN, 0LL));
  GT_CHECK(cudaMemcpyAsync(&probe, b + 7, sizeof probe, cudaMemcpyDeviceToHost, st));
  GT_CHECK(cudaStreamSynchronize(st));
  printf("copy 1 b[7] = %.1f\n", probe);

  GT_CHECK(cudaLaunchKernelEx(&cfg, tile_init, b, kN));
  GT_CHECK(cudaLaunchKernelEx(&cfg, tile_copy, a, (const float *)b, kN, 1LL << 40)); // CULPRIT-LAUNCH
  GT_CHECK(cudaLaunchKernelEx(&cfg, tile_init, b, kN));
  GT_CHECK(cudaStreamSynchronize(st));
  printf("copy 2 done\n");
  return 0;
}
