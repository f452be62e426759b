/* A stand-in for PyTorch's autograd engine: run_engine() starts a native thread (one that never runs Python),
 * which launches kernels on the simulated driver and synchronizes, while the calling Python thread waits in C
 * (ctypes released the GIL), as a thread in loss.backward() does. Built as a shared library for
 * engine_helper.py. */
#include <cuda.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>

static int g_rc;                                 /* what the engine thread's synchronize returned */

static void *engine(void *arg) {
  (void)arg;
  void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!h) return NULL;
#define GET(name) __typeof__(&name) p_##name = (__typeof__(&name))dlsym(h, #name)
  GET(cuInit);
  GET(cuDeviceGet);
  GET(cuDevicePrimaryCtxRetain);
  GET(cuCtxSetCurrent);
  GET(cuModuleLoadData);
  GET(cuModuleGetFunction);
  GET(cuLaunchKernel);
  GET(cuCtxSynchronize);
#undef GET
  CUdevice dev;
  CUcontext ctx;
  CUmodule mod;
  CUfunction f;
  if (p_cuInit(0) || p_cuDeviceGet(&dev, 0) || p_cuDevicePrimaryCtxRetain(&ctx, dev) || p_cuCtxSetCurrent(ctx) ||
      p_cuModuleLoadData(&mod, "fakecubin:_Z12grad_scatterPfi") || p_cuModuleGetFunction(&f, mod, "_Z12grad_scatterPfi"))
    return NULL;
  for (int i = 0; i < 3; i++)
    if (p_cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, NULL, NULL, NULL)) return NULL;
  g_rc = (int)p_cuCtxSynchronize();
  return NULL;
}

__attribute__((visibility("default"))) int run_engine(void) {
  pthread_t t;
  g_rc = -1;
  if (pthread_create(&t, NULL, engine, NULL)) return -1;
  pthread_join(t, NULL);
  return g_rc;
}
