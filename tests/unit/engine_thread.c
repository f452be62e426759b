/* A stand-in for PyTorch's autograd engine: run_engine(sync) starts a native thread (one that never runs Python),
 * which launches kernels on the simulated driver (and synchronizes, if SYNC), while the calling Python thread
 * waits in C (ctypes released the GIL), as a thread in loss.backward() does. sync_now() then synchronizes from
 * the calling thread, as loss.item() does after backward() returned. Built as a shared library for
 * engine_helper.py. */
#include <cuda.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>

static int g_rc;                                 /* what the engine thread's synchronize returned */
static CUcontext g_ctx;                          /* the engine's context, for sync_now */
static __typeof__(&cuCtxSetCurrent) g_set_current;
static __typeof__(&cuCtxSynchronize) g_synchronize;

static void *engine(void *arg) {
  int sync = arg != NULL;
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
  g_ctx = ctx;
  g_set_current = p_cuCtxSetCurrent;
  g_synchronize = p_cuCtxSynchronize;
  g_rc = sync ? (int)p_cuCtxSynchronize() : 0;
  return NULL;
}

__attribute__((visibility("default"))) int run_engine(int sync) {
  pthread_t t;
  g_rc = -1;
  if (pthread_create(&t, NULL, engine, sync ? &g_rc : NULL)) return -1;
  pthread_join(t, NULL);
  return g_rc;
}

__attribute__((visibility("default"))) int sync_now(void) {
  if (!g_synchronize || g_set_current(g_ctx)) return -1;
  return (int)g_synchronize();
}
