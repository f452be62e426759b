// The driver API used directly (linked with -lcuda, no runtime calls): a module loaded from a fatbin embedded
// at build time, kernels launched with cuLaunchKernel on a created stream; one scatter gets a bad base and
// writes out of bounds (700). The error surfaces at cuMemcpyDtoH (or at a following launch). Plain C++ built by
// the host compiler: it holds no device code (the kernels are in driver_kernels.cu).
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include <cuda.h>

#include "driver_kernels_fatbin.h" // driver_kernels_fatbin[]: generated from driver_kernels.cu

static const int kN = 4096; // elements per buffer

static void drv_check(CUresult rc, const char *what, int line) {
  const char *msg = NULL;
  if (rc == CUDA_SUCCESS)
    return;
  if (cuGetErrorString(rc, &msg) != CUDA_SUCCESS || !msg)
    msg = "unknown error";
  fprintf(stderr, "gpu_driver: CUDA error at %s (driver_api.cpp:%d): %s\n", what, line, msg);
  exit(1);
}
#define DRV_CHECK(call) drv_check((call), #call, __LINE__)

static void launch(CUfunction f, CUstream st, unsigned grid, unsigned block, void **args) {
  DRV_CHECK(cuLaunchKernel(f, grid, 1, 1, block, 1, 1, 0, st, args, NULL));
}

int main(void) {
  CUdevice dev;
  CUcontext ctx;
  CUmodule mod;
  CUfunction fill, axpy, scatter;
  CUstream st;
  CUdeviceptr x, y;
  int n = kN, count = 0;
  float v = 2.0f, a = 0.5f, probe[4];
  long long base = 0;
  CUresult rc;

  rc = cuInit(0);
  if (rc == CUDA_SUCCESS)
    rc = cuDeviceGetCount(&count);
  if (rc != CUDA_SUCCESS || count == 0) {
    fprintf(stderr, "gpu_driver: skipped: no CUDA device\n");
    return 77;
  }
  DRV_CHECK(cuDeviceGet(&dev, 0));
  DRV_CHECK(cuDevicePrimaryCtxRetain(&ctx, dev));
  DRV_CHECK(cuCtxSetCurrent(ctx));
  DRV_CHECK(cuModuleLoadData(&mod, driver_kernels_fatbin));
  DRV_CHECK(cuModuleGetFunction(&fill, mod, "drv_fill"));
  DRV_CHECK(cuModuleGetFunction(&axpy, mod, "drv_axpy"));
  DRV_CHECK(cuModuleGetFunction(&scatter, mod, "drv_scatter"));
  DRV_CHECK(cuStreamCreate(&st, CU_STREAM_DEFAULT)); // blocking: cuMemcpyDtoH waits for it
  DRV_CHECK(cuMemAlloc(&x, sizeof(float) * kN));
  DRV_CHECK(cuMemAlloc(&y, sizeof(float) * kN));

  void *fill_args[] = {&x, &n, &v};
  void *axpy_args[] = {&y, &x, &n, &a};
  void *scatter_args[] = {&y, &x, &n, &base};

  launch(fill, st, kN / 256, 256, fill_args);
  launch(scatter, st, kN / 256, 256, scatter_args);
  launch(axpy, st, kN / 256, 256, axpy_args);
  DRV_CHECK(cuMemcpyDtoH(probe, y, sizeof probe));
  printf("pass 1 y[1..3] = %.2f %.2f %.2f\n", probe[1], probe[2], probe[3]);

  base = 1LL << 40; // an offset from a corrupt header
  launch(fill, st, kN / 256, 256, fill_args);
  DRV_CHECK(cuLaunchKernel(scatter, kN / 256, 1, 1, 256, 1, 1, 0, st, scatter_args, NULL)); // CULPRIT-LAUNCH
  launch(axpy, st, kN / 256, 256, axpy_args);
  DRV_CHECK(cuMemcpyDtoH(probe, y, sizeof probe));
  printf("pass 2 y[1..3] = %.2f %.2f %.2f\n", probe[1], probe[2], probe[3]);

  DRV_CHECK(cuMemFree(x));
  DRV_CHECK(cuMemFree(y));
  DRV_CHECK(cuStreamDestroy(st));
  DRV_CHECK(cuModuleUnload(mod));
  DRV_CHECK(cuDevicePrimaryCtxRelease(dev));
  return 0;
}
