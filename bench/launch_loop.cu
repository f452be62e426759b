// Launch-cost benchmark: a loop of tiny kernel launches on one stream, then one synchronization, timed on the
// host with clock_gettime. Prints one machine-readable line, launch_us=<microseconds per launch>. bench/bench.py
// runs it without a tool, under CUDA_LAUNCH_BLOCKING=1 and under culprit's modes.
#include <cstdio>
#include <cstdlib>
#include <ctime>

#include <cuda_runtime.h>

static const long kDefaultLaunches = 200000; // launches timed
static const int kWarmup = 2000;             // launches before timing (module load, first-launch costs)

__global__ void tiny(int *slot) {
  if (threadIdx.x == 0)
    *slot += 1;
}

static double now_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static int check(cudaError_t err, const char *what) {
  if (err == cudaSuccess)
    return 0;
  fprintf(stderr, "bench_launch_loop: %s: %s\n", what, cudaGetErrorString(err));
  return 1;
}

int main(int argc, char **argv) {
  long launches = argc > 1 ? atol(argv[1]) : kDefaultLaunches;
  cudaStream_t st;
  int *slot, count = 0, result = 0;
  double t0, t1;

  if (launches <= 0) {
    fprintf(stderr, "usage: bench_launch_loop [launches]\n");
    return 2;
  }
  if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
    fprintf(stderr, "bench_launch_loop: skipped: no CUDA device\n");
    return 77;
  }
  if (check(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking), "cudaStreamCreate") ||
      check(cudaMalloc(&slot, sizeof(int)), "cudaMalloc") ||
      check(cudaMemset(slot, 0, sizeof(int)), "cudaMemset"))
    return 1;

  for (int i = 0; i < kWarmup; i++)
    tiny<<<1, 1, 0, st>>>(slot);
  if (check(cudaGetLastError(), "warm-up launch") || check(cudaStreamSynchronize(st), "warm-up sync"))
    return 1;

  t0 = now_us();
  for (long i = 0; i < launches; i++)
    tiny<<<1, 1, 0, st>>>(slot);
  if (check(cudaStreamSynchronize(st), "cudaStreamSynchronize"))
    return 1;
  t1 = now_us();

  if (check(cudaGetLastError(), "launch") ||
      check(cudaMemcpy(&result, slot, sizeof(int), cudaMemcpyDeviceToHost), "cudaMemcpy"))
    return 1;
  if (result != (int)(launches + kWarmup)) {
    fprintf(stderr, "bench_launch_loop: counted %d kernel runs, expected %ld\n", result, launches + kWarmup);
    return 1;
  }
  printf("launches=%ld\n", launches);
  printf("launch_us=%.4f\n", (t1 - t0) / (double)launches);
  return 0;
}
