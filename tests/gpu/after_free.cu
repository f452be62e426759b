// Use after free (700). A pipeline frees its large staging buffer once the full pass is done, and the short tail
// pass after it (64 elements) still reads from it. A large allocation's memory is unmapped by cudaFree (a small one may
// stay mapped inside the allocator's pool and be read silently), so the read faults. The error surfaces at the
// cudaMemcpy that fetches the result.
#include "gpu_test.cuh"

static const size_t kStaging = (size_t)256 << 20; // bytes of the staging buffer: its own mapping
static const int kN = 1 << 20;                    // elements of the full pass
static const int kTail = 64;                      // elements of the tail pass

__global__ void stage(float *staging, int n, float v) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) staging[i] = v * (float)i;
}

// The faulty kernel in its second launch (the tail): staging was freed in between.
__global__ void consume(const float *staging, float *out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] += staging[i]; // CULPRIT-FAULT
}

int main(void) {
  float *staging, *out, host = 0.0f;

  gt_start("gpu_after_free");
  GT_CHECK(cudaMalloc(&out, sizeof(float) * kN));
  GT_CHECK(cudaMemset(out, 0, sizeof(float) * kN));
  GT_CHECK(cudaMalloc(&staging, kStaging));

  stage<<<kN / 256, 256>>>(staging, kN, 1.0f);
  consume<<<kN / 256, 256>>>(staging, out, kN);
  GT_CHECK(cudaMemcpy(&host, out + 1, sizeof host, cudaMemcpyDeviceToHost));
  printf("full pass: out[1] = %.1f\n", host);

  GT_CHECK(cudaFree(staging));                // too early: the tail pass below still reads it
  consume<<<1, kTail>>>(staging, out, kTail); // CULPRIT-LAUNCH
  GT_CHECK(cudaMemcpy(&host, out + 1, sizeof host, cudaMemcpyDeviceToHost));
  printf("tail pass: out[1] = %.1f\n", host);
  return 0;
}
