// Where the error surfaces. The same faulty kernel (700) is followed by healthy launches and then by the call
// named on the command line: `sync` (cudaDeviceSynchronize), `memcpy` (cudaMemcpy to the host),
// `streamsync` (cudaStreamSynchronize) or `free` (cudaFree). The faulty kernel waits ~100 ms on the GPU before
// its bad write, so the host is already inside that call when the fault happens.
#include "gpu_test.cuh"

static const int kN = 4096; // elements per buffer
static const unsigned long long kFaultDelayNs = 100ull * 1000 * 1000; // GPU-side wait before the bad write

// One relaxation step; writes dst[offset + i] and trusts offset.
__global__ void relax_step(float *dst, const float *src, int n, long long offset, unsigned long long delay_ns) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (delay_ns)
    gt_spin_ns(delay_ns);
  if (i > 0 && i < n - 1)
    dst[offset + i] = 0.5f * src[i] + 0.25f * (src[i - 1] + src[i + 1]); // CULPRIT-FAULT
}

__global__ void damp(float *x, int n, float f) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n)
    x[i] *= f;
}

static int usage(void) {
  fprintf(stderr, "usage: gpu_surface sync|memcpy|streamsync|free\n");
  return 2;
}

int main(int argc, char **argv) {
  const char *how = argc > 1 ? argv[1] : "";
  cudaStream_t st;
  float *a, *b, host[4] = {0, 0, 0, 0};

  if (strcmp(how, "sync") && strcmp(how, "memcpy") && strcmp(how, "streamsync") && strcmp(how, "free"))
    return usage();
  gt_start("gpu_surface");
  GT_CHECK(cudaStreamCreate(&st)); // a blocking stream: cudaMemcpy on the legacy stream waits for it
  GT_CHECK(cudaMalloc(&a, sizeof(float) * kN));
  GT_CHECK(cudaMalloc(&b, sizeof(float) * kN));
  GT_CHECK(cudaMemsetAsync(a, 0, sizeof(float) * kN, st));

  relax_step<<<kN / 256, 256, 0, st>>>(b, a, kN, 0, 0);
  damp<<<kN / 256, 256, 0, st>>>(b, kN, 0.9f);
  GT_CHECK(cudaStreamSynchronize(st));
  printf("warm-up done\n");
  fflush(stdout);

  relax_step<<<kN / 256, 256, 0, st>>>(a, b, kN, 1LL << 40, kFaultDelayNs); // CULPRIT-LAUNCH
  damp<<<kN / 256, 256, 0, st>>>(a, kN, 0.9f);
  damp<<<kN / 256, 256, 0, st>>>(b, kN, 0.9f);

  if (!strcmp(how, "sync"))
    GT_CHECK(cudaDeviceSynchronize());
  else if (!strcmp(how, "memcpy"))
    GT_CHECK(cudaMemcpy(host, a, sizeof host, cudaMemcpyDeviceToHost));
  else if (!strcmp(how, "streamsync"))
    GT_CHECK(cudaStreamSynchronize(st));
  else
    GT_CHECK(cudaFree(b));
  GT_CHECK(cudaDeviceSynchronize()); // in case the call above did not surface it
  printf("no error surfaced (%s)\n", how);
  return 0;
}
