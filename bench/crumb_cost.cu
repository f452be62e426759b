// What a breadcrumb costs the GPU, and whether the unfenced kind could replace it. A breadcrumb is a
// cuStreamWriteValue64 into host-mapped memory after a launch. Two measurements, without culprit:
//  1. order: a 50 ms kernel, then a write (fenced, then with CU_STREAM_WRITE_VALUE_NO_MEMORY_BARRIER); the host
//     polls the word and says when the value appeared, or that the write was refused;
//  2. cost: 5000 short kernels (about 10 and 30 us) back to back, with nothing, a fenced write or an unfenced
//     write after each; GPU time per kernel from events (the kernels are longer than a launch takes the CPU,
//     so the GPU sets the pace).
// Prints lines starting "order " and "cost "; bench/bench.py does not run it (run it alone, no tool).
#include <cstdint>
#include <cstdio>
#include <ctime>

#include <cuda.h>
#include <cuda_runtime.h>

static const int kKernels = 5000;

static double now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

__global__ void spin(long long cycles, int *sink) {
  long long t0 = clock64();
  while (clock64() - t0 < cycles) {
  }
  if (threadIdx.x == 0 && blockIdx.x == 0)
    sink[0] = 1;
}

static int check(cudaError_t err, const char *what) {
  if (err == cudaSuccess)
    return 0;
  fprintf(stderr, "bench_crumb_cost: %s: %s\n", what, cudaGetErrorString(err));
  return 1;
}

int main(void) {
  int count = 0, clock_khz = 0, sms = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
    fprintf(stderr, "bench_crumb_cost: skipped: no CUDA device\n");
    return 77;
  }
  volatile uint64_t *host;
  CUdeviceptr dev;
  int *sink;
  cudaStream_t st;
  cudaEvent_t a, b;
  if (check(cudaSetDeviceFlags(cudaDeviceMapHost), "cudaSetDeviceFlags") ||
      check(cudaHostAlloc((void **)&host, 64, cudaHostAllocMapped), "cudaHostAlloc") ||
      check(cudaMalloc(&sink, sizeof(int)), "cudaMalloc") ||
      check(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking), "cudaStreamCreate") ||
      check(cudaEventCreate(&a), "cudaEventCreate") || check(cudaEventCreate(&b), "cudaEventCreate") ||
      check(cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, 0), "clock rate") ||
      check(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0), "SM count"))
    return 1;
  if (cuMemHostGetDevicePointer(&dev, (void *)host, 0) != CUDA_SUCCESS) {
    fprintf(stderr, "bench_crumb_cost: cuMemHostGetDevicePointer failed\n");
    return 1;
  }

  for (int rep = 0; rep < 2; rep++)
    for (unsigned flags = 0; flags < 2; flags++) {
      host[0] = 0;
      double t0 = now_ms();
      spin<<<2 * sms, 128, 0, st>>>((long long)clock_khz * 50, sink);
      CUresult rc = cuStreamWriteValue64(st, dev, 7, flags);
      double seen = -1;
      while (rc == CUDA_SUCCESS && now_ms() - t0 < 2000)
        if (host[0] == 7) {
          seen = now_ms() - t0;
          break;
        }
      if (check(cudaStreamSynchronize(st), "cudaStreamSynchronize"))
        return 1;
      const char *kind = flags ? "unfenced" : "fenced";
      if (rc != CUDA_SUCCESS)
        printf("order %s: the write was refused (CUresult %d)\n", kind, (int)rc);
      else
        printf("order %s: value seen %.2f ms after launching a 50 ms kernel (done at %.2f ms)\n", kind, seen,
               now_ms() - t0);
    }

  const char *names[3] = {"no write", "fenced write", "unfenced write"};
  for (int rep = 0; rep < 3; rep++)
    for (long long us = 10; us <= 30; us += 20)
      for (int mode = 0; mode < 3; mode++) {
        int refused = 0;
        if (check(cudaStreamSynchronize(st), "cudaStreamSynchronize") || check(cudaEventRecord(a, st), "event"))
          return 1;
        for (int i = 0; i < kKernels; i++) {
          spin<<<sms, 128, 0, st>>>((long long)clock_khz * us / 1000, sink);
          if (mode)
            refused += cuStreamWriteValue64(st, dev + 8, (uint64_t)i,
                                            mode == 2 ? CU_STREAM_WRITE_VALUE_NO_MEMORY_BARRIER : 0) !=
                       CUDA_SUCCESS;
        }
        float ms = 0;
        if (check(cudaEventRecord(b, st), "event") || check(cudaEventSynchronize(b), "event sync") ||
            check(cudaEventElapsedTime(&ms, a, b), "elapsed"))
          return 1;
        printf("cost %2lld us kernels, %-14s: %.3f us of GPU time per kernel%s\n", us, names[mode],
               ms * 1000.0 / kKernels, refused ? " (writes refused)" : "");
      }
  return check(cudaGetLastError(), "a launch");
}
