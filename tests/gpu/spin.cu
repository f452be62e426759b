// A hang (no error at all). After a few healthy kernels, a kernel spins until a flag in mapped host memory is set,
// which nothing ever does, and a second kernel is queued behind it; the host then waits in cudaDeviceSynchronize.
// The GPU suite stops the program with SIGTERM and expects a hang report naming the spinning launch as the one
// in flight. The kernel gives up after kSpinLimitNs only so that a GPU is never kept busy by a lost test process.
#include "gpu_test.cuh"

static const int kN = 1 << 14;                                   // elements of the work buffer
static const int kWarmups = 4;                                   // healthy launches before the spinning one
static const unsigned long long kSpinLimitNs = 120ull * 1000000000ull; // safety bound of the spin (120 s)

__global__ void scale(float *x, int n, float f) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n)
    x[i] = x[i] * f + 1.0f;
}

// Waits for *flag to become nonzero (a producer on the host that never comes); *gave_up says whether it stopped
// at the safety bound instead.
__global__ void spin_until_flag(const volatile int *flag, int *gave_up, unsigned long long limit_ns) {
  unsigned long long t0 = gt_globaltimer();
  while (*flag == 0 && gt_globaltimer() - t0 < limit_ns)
    __nanosleep(1000);
  if (blockIdx.x == 0 && threadIdx.x == 0)
    *gave_up = *flag == 0;
}

// Would consume what the producer handed over; it only ever sits in the queue behind spin_until_flag.
__global__ void consume_after_flag(float *x, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n)
    x[i] -= 1.0f;
}

int main(void) {
  cudaStream_t st;
  int *flag, *dflag, *gave_up, host_gave_up = 0;
  float *x, first = 0.0f;

  gt_start("gpu_spin");
  GT_CHECK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
  GT_CHECK(cudaHostAlloc(&flag, sizeof(int), cudaHostAllocMapped));
  *flag = 0;
  GT_CHECK(cudaHostGetDevicePointer(&dflag, flag, 0));
  GT_CHECK(cudaMalloc(&gave_up, sizeof(int)));
  GT_CHECK(cudaMalloc(&x, sizeof(float) * kN));
  GT_CHECK(cudaMemsetAsync(x, 0, sizeof(float) * kN, st));

  for (int i = 0; i < kWarmups; i++)
    scale<<<kN / 256, 256, 0, st>>>(x, kN, 0.5f);
  GT_CHECK(cudaMemcpyAsync(&first, x, sizeof first, cudaMemcpyDeviceToHost, st));
  GT_CHECK(cudaStreamSynchronize(st));
  printf("warm-up done: x[0] = %.4f\n", first);

  spin_until_flag<<<1, 32, 0, st>>>(dflag, gave_up, kSpinLimitNs); // CULPRIT-LAUNCH
  consume_after_flag<<<kN / 256, 256, 0, st>>>(x, kN);
  printf("spinning: waiting for a flag that nothing sets\n");
  fflush(stdout);
  GT_CHECK(cudaDeviceSynchronize()); // CULPRIT-WAIT

  GT_CHECK(cudaMemcpy(&host_gave_up, gave_up, sizeof host_gave_up, cudaMemcpyDeviceToHost));
  printf("the spin ended (%s)\n", host_gave_up ? "gave up at its safety bound" : "the flag was set");
  return 3; // nobody stopped the program: the harness was meant to
}
