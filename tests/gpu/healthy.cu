// A healthy program: several kernels on two streams joined by an event, pinned-memory copies and checksums on
// stdout. Under culprit its stdout must be byte-identical to a run without it, it must exit 0 and leave no
// report. Integer arithmetic only, so every run prints the same bytes.
#include "gpu_test.cuh"

#include <cstdint>
#include <vector>

static const int kN = 1 << 16;  // elements per vector
static const int kRounds = 8;   // rounds of the two-stream pipeline

__global__ void seed_vec(uint32_t *x, int n, uint32_t salt) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n)
    x[i] = (uint32_t)i * 2654435761u ^ salt;
}

__global__ void mix_vec(uint32_t *x, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    uint32_t v = x[i];
    v ^= v >> 13;
    v *= 0x5bd1e995u;
    x[i] = v ^ (v >> 15);
  }
}

__global__ void add_vec(uint32_t *dst, const uint32_t *a, const uint32_t *b, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n)
    dst[i] = a[i] + b[i];
}

// Wrapping sum of x into *out; unsigned addition is exact and order-independent.
__global__ void checksum(const uint32_t *x, int n, unsigned long long *out) {
  __shared__ unsigned long long part[256];
  unsigned long long s = 0;
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
    s += x[i];
  part[threadIdx.x] = s;
  __syncthreads();
  for (int w = blockDim.x / 2; w > 0; w /= 2) {
    if ((int)threadIdx.x < w)
      part[threadIdx.x] += part[threadIdx.x + w];
    __syncthreads();
  }
  if (threadIdx.x == 0)
    atomicAdd(out, part[0]);
}

int main(void) {
  cudaStream_t s1, s2;
  cudaEvent_t b_ready;
  uint32_t *a, *b, *c, *host_c;
  unsigned long long *sum, *host_sum;
  unsigned long long total = 0;

  gt_start("gpu_healthy");
  GT_CHECK(cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking));
  GT_CHECK(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking));
  GT_CHECK(cudaEventCreateWithFlags(&b_ready, cudaEventDisableTiming));
  GT_CHECK(cudaMalloc(&a, sizeof(uint32_t) * kN));
  GT_CHECK(cudaMalloc(&b, sizeof(uint32_t) * kN));
  GT_CHECK(cudaMalloc(&c, sizeof(uint32_t) * kN));
  GT_CHECK(cudaMalloc(&sum, sizeof(unsigned long long)));
  GT_CHECK(cudaMallocHost(&host_c, sizeof(uint32_t) * kN));
  GT_CHECK(cudaMallocHost(&host_sum, sizeof(unsigned long long)));

  for (int r = 0; r < kRounds; r++) {
    seed_vec<<<kN / 256, 256, 0, s1>>>(a, kN, 17u * r);
    mix_vec<<<kN / 256, 256, 0, s1>>>(a, kN);
    seed_vec<<<kN / 256, 256, 0, s2>>>(b, kN, 31u * r + 5);
    mix_vec<<<kN / 256, 256, 0, s2>>>(b, kN);
    GT_CHECK(cudaEventRecord(b_ready, s2));
    GT_CHECK(cudaStreamWaitEvent(s1, b_ready, 0));
    add_vec<<<kN / 256, 256, 0, s1>>>(c, a, b, kN);
    GT_CHECK(cudaMemsetAsync(sum, 0, sizeof(unsigned long long), s1));
    checksum<<<64, 256, 0, s1>>>(c, kN, sum);
    GT_CHECK(cudaMemcpyAsync(host_sum, sum, sizeof(unsigned long long), cudaMemcpyDeviceToHost, s1));
    GT_CHECK(cudaMemcpyAsync(host_c, c, sizeof(uint32_t) * kN, cudaMemcpyDeviceToHost, s1));
    GT_CHECK(cudaStreamSynchronize(s1));
    total += *host_sum;
    printf("round %d checksum %016llx c[0]=%08x c[%d]=%08x\n", r, *host_sum, host_c[0], kN - 1, host_c[kN - 1]);
  }
  GT_CHECK(cudaDeviceSynchronize());

  std::vector<uint32_t> check(kN);
  GT_CHECK(cudaMemcpy(check.data(), a, sizeof(uint32_t) * kN, cudaMemcpyDeviceToHost));
  unsigned long long host_side = 0;
  for (int i = 0; i < kN; i++)
    host_side += check[i];
  printf("total %016llx a-sum %016llx\n", total, host_side);

  GT_CHECK(cudaFreeHost(host_c));
  GT_CHECK(cudaFreeHost(host_sum));
  GT_CHECK(cudaFree(a));
  GT_CHECK(cudaFree(b));
  GT_CHECK(cudaFree(c));
  GT_CHECK(cudaFree(sum));
  GT_CHECK(cudaEventDestroy(b_ready));
  GT_CHECK(cudaStreamDestroy(s1));
  GT_CHECK(cudaStreamDestroy(s2));
  printf("ok\n");
  return 0;
}
