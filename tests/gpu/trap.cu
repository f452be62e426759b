// Trap (__trap()). A consistency check in a kernel stops the GPU with __trap() when it finds a negative weight.
// Which sticky code the driver gives for a trap depends on the GPU; the checker accepts any and reports it.
#include "gpu_test.cuh"

static const int kN = 2048; // weights

__global__ void init_weights(float *w, int n, float bias) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n)
    w[i] = 0.5f + bias * (float)(i % 7);
}

__global__ void check_weights(const float *w, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n && w[i] < 0.0f)
    __trap(); // CULPRIT-FAULT
}

__global__ void normalize(float *w, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n)
    w[i] = w[i] / (1.0f + w[i]);
}

int main(void) {
  float *w;

  gt_start("gpu_trap");
  GT_CHECK(cudaMalloc(&w, sizeof(float) * kN));

  init_weights<<<kN / 256, 256>>>(w, kN, 0.1f);
  check_weights<<<kN / 256, 256>>>(w, kN);
  normalize<<<kN / 256, 256>>>(w, kN);
  GT_CHECK(cudaDeviceSynchronize());
  printf("round 1 ok\n");

  init_weights<<<kN / 256, 256>>>(w, kN, -0.2f);
  check_weights<<<kN / 256, 256>>>(w, kN); // CULPRIT-LAUNCH
  normalize<<<kN / 256, 256>>>(w, kN);
  GT_CHECK(cudaDeviceSynchronize());
  printf("round 2 ok\n");
  return 0;
}
