/* A stand-in for PyTorch's autograd engine: run_engine(sync) starts a native thread (one that never runs Python),
 * which launches kernels on the simulated driver (and synchronizes, if SYNC), while the calling Python thread
 * waits in C (ctypes released the GIL), as a thread in loss.backward() does. sync_now() then synchronizes from
 * the calling thread, as loss.item() does after backward() returned. Built as a shared library for
 * engine_helper.py. */
#include <cuda.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>

static int g_rc;        /* what the engine thread's launches or synchronize returned */
static CUcontext g_ctx; /* the engine's context, for sync_now */
static __typeof__(&cuCtxSetCurrent) g_set_current;
static __typeof__(&cuCtxSynchronize) g_synchronize;

static CUfunction g_f; /* the kernel every launch runs */
static __typeof__(&cuLaunchKernel) g_launch;

/* Loads the driver, makes the primary context current on the calling thread and finds the kernel. */
static int engine_setup(void) {
  void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!h) return -1;
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
  CUmodule mod;
  if (p_cuInit(0) || p_cuDeviceGet(&dev, 0) || p_cuDevicePrimaryCtxRetain(&g_ctx, dev) || p_cuCtxSetCurrent(g_ctx) ||
      p_cuModuleLoadData(&mod, "fakecubin:_Z12grad_scatterPfi") ||
      p_cuModuleGetFunction(&g_f, mod, "_Z12grad_scatterPfi"))
    return -1;
  g_launch = p_cuLaunchKernel;
  g_set_current = p_cuCtxSetCurrent;
  g_synchronize = p_cuCtxSynchronize;
  return 0;
}

/* What the first launch that failed returned (blocking mode's launches return the fault themselves), else 0. */
static int launch_n(int n) {
  for (int i = 0; i < n; i++) {
    int rc = (int)g_launch(g_f, 1, 1, 1, 32, 1, 1, 0, NULL, NULL, NULL);
    if (rc) return rc;
  }
  return 0;
}

static void *engine(void *arg) {
  int sync = arg != NULL;
  if (engine_setup()) return NULL;
  int rc = launch_n(3);
  g_rc = rc ? rc : sync ? (int)g_synchronize() : 0;
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

/* A persistent engine thread, as PyTorch's device threads are: engine_run(n) hands it n launches and waits in C
 * until they are made. The same native thread serves every call, so what it remembers between calls is tested. */
static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t g_cv = PTHREAD_COND_INITIALIZER;
static int g_todo, g_done, g_result, g_started;

static void *persistent(void *arg) {
  (void)arg;
  int setup_failed = engine_setup();
  pthread_mutex_lock(&g_mu);
  for (;;) {
    while (g_todo == 0) pthread_cond_wait(&g_cv, &g_mu);
    int n = g_todo;
    pthread_mutex_unlock(&g_mu);
    int rc = setup_failed ? -1 : launch_n(n);
    pthread_mutex_lock(&g_mu);
    g_result = rc;
    g_todo = 0;
    g_done = 1;
    pthread_cond_broadcast(&g_cv);
  }
  return NULL;
}

__attribute__((visibility("default"))) int engine_run(int n) {
  pthread_mutex_lock(&g_mu);
  if (!g_started) {
    pthread_t t;
    if (pthread_create(&t, NULL, persistent, NULL)) {
      pthread_mutex_unlock(&g_mu);
      return -1;
    }
    pthread_detach(t);
    g_started = 1;
  }
  g_done = 0;
  g_todo = n > 0 ? n : 1;
  pthread_cond_broadcast(&g_cv);
  while (!g_done) pthread_cond_wait(&g_cv, &g_mu);
  int rc = g_result;
  pthread_mutex_unlock(&g_mu);
  return rc;
}
