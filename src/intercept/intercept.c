/* The only place culprit touches the program's view of the CUDA driver: the exported dlsym filter, the
 * cuGetProcAddress wrappers, and one wrapper per hooked entry point (hooks.h). Each wrapper is a few lines:
 * find the real function, call it, hand the event to core. Nothing here decides anything. */
#define _GNU_SOURCE
#include <cuda.h>
/* cuda.h maps the name to the _v2 form; culprit must define both exports under their own names. */
#undef cuGetProcAddress
#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>

#include "../aftermath/errtext.h"
#include "../core/allocs.h"
#include "../core/core.h"
#include "../core/driver.h"
#include "../core/ring.h"
#include "export.h"
#include "hooks.h"

_Static_assert((void *)CU_STREAM_LEGACY == CP_CU_STREAM_LEGACY, "CU_STREAM_LEGACY");
_Static_assert((void *)CU_STREAM_PER_THREAD == CP_CU_STREAM_PER_THREAD, "CU_STREAM_PER_THREAD");
_Static_assert(CU_MEMHOSTALLOC_PORTABLE == CP_CU_MEMHOSTALLOC_PORTABLE, "PORTABLE");
_Static_assert(CU_MEMHOSTALLOC_DEVICEMAP == CP_CU_MEMHOSTALLOC_DEVICEMAP, "DEVICEMAP");
_Static_assert(CUDA_ERROR_INVALID_VALUE == CP_CU_ERROR_INVALID_VALUE, "CUDA_ERROR_INVALID_VALUE");
_Static_assert(CU_LAUNCH_PARAM_END_AS_INT == CP_CU_LAUNCH_PARAM_END, "CU_LAUNCH_PARAM_END");
_Static_assert(CU_LAUNCH_PARAM_BUFFER_POINTER_AS_INT == CP_CU_LAUNCH_PARAM_BUFFER_POINTER, "BUFFER_POINTER");
_Static_assert(CU_LAUNCH_PARAM_BUFFER_SIZE_AS_INT == CP_CU_LAUNCH_PARAM_BUFFER_SIZE, "BUFFER_SIZE");

/* ---- the real-function table ---- */

enum {
#define ROW(sym, base, ptds, minver, P, A) H_##sym,
  CP_HOOKS(ROW, ROW)
#undef ROW
      H_COUNT
};

struct hook_row {
  const char *sym;  /* exported symbol */
  const char *base; /* name cuGetProcAddress is asked for */
  int ptds;         /* per-thread default stream variant */
  int minver;       /* lowest cudaVersion that gets this ABI */
};

static const struct hook_row g_rows[H_COUNT] = {
#define ROW(sym, base, ptds, minver, P, A) {#sym, #base, ptds, minver},
    CP_HOOKS(ROW, ROW)
#undef ROW
};

static _Atomic(void *) g_real[H_COUNT];                     /* the driver's function for each row, set on first sight */
static void *g_wrapper[H_COUNT];                            /* culprit's function for each row (filled below) */
static _Atomic(void *) g_real_gpa;                          /* driver's cuGetProcAddress (v1) */
static _Atomic(void *) g_real_gpa2;                         /* driver's cuGetProcAddress_v2 */
void *cp__real_dlsym __attribute__((visibility("hidden"))); /* glibc's dlsym, used by the trampoline */
static void *g_libcuda;                                     /* handle of the loaded driver library */

static void init_real_dlsym(void) {
  if (cp__real_dlsym) return;
  void *p = dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.34");
  if (!p) p = dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.2.5");
  cp__real_dlsym = p;
}

typedef void *(*dlsym_fn)(void *, const char *);

static void *libcuda(void) {
  if (!g_libcuda) g_libcuda = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD);
  return g_libcuda;
}

/* True when p lies in libculprit itself: a "real" function must never be one of ours. */
static int is_ours(void *p) {
  Dl_info a, b;
  return p && dladdr(p, &a) && dladdr((void *)&is_ours, &b) && a.dli_fbase == b.dli_fbase;
}

static void *cuda_sym(const char *name) {
  void *h = libcuda();
  init_real_dlsym();
  if (!h || !cp__real_dlsym) return NULL;
  void *p = ((dlsym_fn)cp__real_dlsym)(h, name);
  return is_ours(p) ? NULL : p;
}

static void *real_of(int id) {
  void *p = atomic_load_explicit(&g_real[id], memory_order_acquire);
  if (__builtin_expect(p != NULL, 1)) return p;
  /* Reached through our export (a program linked with -lcuda): the driver's own symbol of that name. */
  p = cuda_sym(g_rows[id].sym);
  if (p) {
    void *expect = NULL;
    atomic_compare_exchange_strong(&g_real[id], &expect, p);
  }
  return atomic_load(&g_real[id]);
}

static void fill_driver(void) {
#define GET(field, name) *(void **)&cp_drv.field = cuda_sym(name)
  GET(ctx_get_current, "cuCtxGetCurrent");
  GET(ctx_get_device, "cuCtxGetDevice");
  GET(stream_get_ctx, "cuStreamGetCtx");
  GET(write_value64, "cuStreamWriteValue64_v2");
  GET(write_value64_ptsz, "cuStreamWriteValue64_v2_ptsz");
  GET(memset_d32_async, "cuMemsetD32Async");
  GET(memset_d32_async_ptsz, "cuMemsetD32Async_ptsz");
  GET(host_alloc, "cuMemHostAlloc");
  GET(host_get_dptr, "cuMemHostGetDevicePointer_v2");
  GET(func_get_name, "cuFuncGetName");
  GET(kernel_get_name, "cuKernelGetName");
  GET(func_get_param_info, "cuFuncGetParamInfo");
  GET(kernel_get_param_info, "cuKernelGetParamInfo");
  GET(stream_sync, "cuStreamSynchronize");
  GET(stream_sync_ptsz, "cuStreamSynchronize_ptsz");
  GET(get_error_name, "cuGetErrorName");
  GET(get_error_string, "cuGetErrorString");
  GET(stream_is_capturing, "cuStreamIsCapturing");
  GET(stream_is_capturing_ptsz, "cuStreamIsCapturing_ptsz");
  GET(stream_query, "cuStreamQuery");
  GET(stream_query_ptsz, "cuStreamQuery_ptsz");
  GET(ctx_push_current, "cuCtxPushCurrent_v2");
  GET(ctx_pop_current, "cuCtxPopCurrent_v2");
  GET(ctx_sync, "cuCtxSynchronize");
#undef GET
}

/* The table is filled once libcuda is loaded; a call that comes earlier (none should) leaves it for the next. */
static _Atomic int g_drv_filled;
static pthread_mutex_t g_drv_lock = PTHREAD_MUTEX_INITIALIZER;

static inline void driver_ready(void) {
  if (__builtin_expect(atomic_load_explicit(&g_drv_filled, memory_order_acquire), 1)) return;
  pthread_mutex_lock(&g_drv_lock);
  if (!atomic_load_explicit(&g_drv_filled, memory_order_relaxed) && libcuda()) {
    fill_driver();
    /* release: the filled table is visible to the fast path's acquire above */
    atomic_store_explicit(&g_drv_filled, 1, memory_order_release);
  }
  pthread_mutex_unlock(&g_drv_lock);
}

/* ---- generic wrappers: call, and report a sticky error ---- */

/* Calls the driver's sym; a failure goes to the verdict (which acts on sticky codes only). Declares rc. */
#define CALL_REAL(sym, P, A)                                                                                           \
  CUresult(*real) P = (CUresult(*) P)real_of(H_##sym);                                                                 \
  if (!real) return CUDA_ERROR_NOT_FOUND;                                                                              \
  CUresult rc = real A;                                                                                                \
  if (rc != CUDA_SUCCESS) {                                                                                            \
    driver_ready();                                                                                                    \
    cp_result((int)rc, #sym);                                                                                          \
  }

#define SURFACE(sym, base, ptds, minver, P, A)                                                                         \
  CP_EXPORT CUresult CUDAAPI sym P {                                                                                   \
    CALL_REAL(sym, P, A)                                                                                               \
    return rc;                                                                                                         \
  }
#define NOTHING(sym, base, ptds, minver, P, A)
CP_HOOKS(SURFACE, NOTHING)
#undef SURFACE

/* ---- the error's text ---- */

static _Atomic(void *) g_real_errstr; /* the driver's cuGetErrorString */

/* The text of a sticky error carries the verdict's line once culprit decided (aftermath/errtext.c); the code and
 * every other text are the driver's. Triton, CuPy and JAX put this text into their exceptions. */
CP_EXPORT CUresult CUDAAPI cuGetErrorString(CUresult e, const char **s) {
  typedef CUresult (*fn)(CUresult, const char **);
  fn real = (fn)atomic_load(&g_real_errstr);
  if (!real) real = (fn)cuda_sym("cuGetErrorString");
  if (!real) return CUDA_ERROR_NOT_FOUND;
  CUresult rc = real(e, s);
  if (rc == CUDA_SUCCESS && s) *s = errtext_decorate(ERRTEXT_DRIVER, (int)e, *s);
  return rc;
}

/* Whether name is the error-text function; its real one is kept when given. */
static int errstr_answer(const char *name, void *real) {
  if (strcmp(name, "cuGetErrorString")) return 0;
  void *e = NULL;
  if (real && !is_ours(real)) atomic_compare_exchange_strong(&g_real_errstr, &e, real);
  return 1;
}

/* The next definition of a symbol after libculprit in the global search order (glibc's dlsym, called from here,
 * so RTLD_NEXT means "after libculprit"), never one of culprit's own. */
__attribute__((visibility("hidden"))) void *cp__next_sym(void *scope, const char *name) {
  init_real_dlsym();
  if (!cp__real_dlsym) return NULL;
  void *p = ((dlsym_fn)cp__real_dlsym)(scope ? scope : RTLD_NEXT, name);
  return is_ours(p) ? NULL : p;
}

/* ---- launches ---- */

static inline CUresult launch_done(int on, struct cp_launch_ctx *lc, CUresult rc, const char *api) {
  if (on) return (CUresult)cp_launch_end(lc, (int)rc);
  if (rc != CUDA_SUCCESS) cp_result((int)rc, api);
  return rc;
}

static inline int launch_start(struct cp_launch_ctx *lc, const struct cp_launch_desc *d) {
  if (!cp_active()) return 0;
  driver_ready();
  return cp_launch_begin(lc, d);
}

/* Every launch entry point: describe the launch, let core record it around the real call. */
#define DEF_LAUNCHLIKE(sym, P, A, DESC)                                                                                \
  CP_EXPORT CUresult CUDAAPI sym P {                                                                                   \
    CUresult(*real) P = (CUresult(*) P)real_of(H_##sym);                                                               \
    if (!real) return CUDA_ERROR_NOT_FOUND;                                                                            \
    struct cp_launch_desc d = DESC;                                                                                    \
    struct cp_launch_ctx lc;                                                                                           \
    int on = launch_start(&lc, &d);                                                                                    \
    return launch_done(on, &lc, real A, #sym);                                                                         \
  }

/* cuLaunchKernelEx carries its shape in a config; a NULL config still goes to the driver, which refuses it. */
static struct cp_launch_desc desc_ex(const char *api, const CUlaunchConfig *cfg, CUfunction f, void **params,
                                     void **extra, int ptds) {
  struct cp_launch_desc d = {api, f, NULL, {0, 0, 0}, {0, 0, 0}, 0, (uint8_t)ptds, CP_KIND_KERNEL, params, extra};
  if (!cfg) return d;
  d.stream = cfg->hStream;
  d.grid[0] = cfg->gridDimX, d.grid[1] = cfg->gridDimY, d.grid[2] = cfg->gridDimZ;
  d.block[0] = cfg->blockDimX, d.block[1] = cfg->blockDimY, d.block[2] = cfg->blockDimZ;
  d.smem = cfg->sharedMemBytes;
  for (unsigned i = 0; cfg->attrs && i < cfg->numAttrs; i++)
    if (cfg->attrs[i].id == CU_LAUNCH_ATTRIBUTE_COOPERATIVE && cfg->attrs[i].value.cooperative) d.kind = CP_KIND_COOP;
  return d;
}

#define KERNEL_DESC(sym, ptds, kind, extra)                                                                            \
  { #sym, f, s, {gx, gy, gz }, {bx, by, bz }, smem, ptds, kind, params, extra }
DEF_LAUNCHLIKE(cuLaunchKernel, LAUNCH_P, LAUNCH_A, KERNEL_DESC(cuLaunchKernel, 0, CP_KIND_KERNEL, extra))
DEF_LAUNCHLIKE(cuLaunchKernel_ptsz, LAUNCH_P, LAUNCH_A, KERNEL_DESC(cuLaunchKernel_ptsz, 1, CP_KIND_KERNEL, extra))
DEF_LAUNCHLIKE(cuLaunchCooperativeKernel, COOP_P, COOP_A, KERNEL_DESC(cuLaunchCooperativeKernel, 0, CP_KIND_COOP, NULL))
DEF_LAUNCHLIKE(cuLaunchCooperativeKernel_ptsz, COOP_P, COOP_A,
               KERNEL_DESC(cuLaunchCooperativeKernel_ptsz, 1, CP_KIND_COOP, NULL))
DEF_LAUNCHLIKE(cuLaunchKernelEx, LAUNCHEX_P, LAUNCHEX_A, desc_ex("cuLaunchKernelEx", cfg, f, params, extra, 0))
DEF_LAUNCHLIKE(cuLaunchKernelEx_ptsz, LAUNCHEX_P, LAUNCHEX_A,
               desc_ex("cuLaunchKernelEx_ptsz", cfg, f, params, extra, 1))
#define GRAPH_DESC(sym, ptds)                                                                                          \
  { #sym, g, s, {0, 0, 0 }, {0, 0, 0 }, 0, ptds, CP_KIND_GRAPH, NULL, NULL }
DEF_LAUNCHLIKE(cuGraphLaunch, (CUgraphExec g, CUstream s), (g, s), GRAPH_DESC(cuGraphLaunch, 0))
DEF_LAUNCHLIKE(cuGraphLaunch_ptsz, (CUgraphExec g, CUstream s), (g, s), GRAPH_DESC(cuGraphLaunch_ptsz, 1))

/* ---- stream life, capture, module unload ---- */

CP_EXPORT CUresult CUDAAPI cuStreamCreate(CUstream *ps, unsigned int fl) {
  CALL_REAL(cuStreamCreate, (CUstream *, unsigned int), (ps, fl));
  return rc;
}

CP_EXPORT CUresult CUDAAPI cuStreamCreateWithPriority(CUstream *ps, unsigned int fl, int pri) {
  CALL_REAL(cuStreamCreateWithPriority, (CUstream *, unsigned int, int), (ps, fl, pri));
  return rc;
}

CP_EXPORT CUresult CUDAAPI cuStreamDestroy_v2(CUstream s) {
  /* Retire culprit's entry first: once the driver frees the handle another thread may get it back. */
  cp_stream_destroying(s);
  CALL_REAL(cuStreamDestroy_v2, (CUstream), (s));
  return rc;
}

#define DEF_BEGIN_CAPTURE(sym, is_ptds, P, A)                                                                          \
  CP_EXPORT CUresult CUDAAPI sym P {                                                                                   \
    driver_ready();                                                                                                    \
    cp_capture_prepare();                                                                                              \
    CALL_REAL(sym, P, A);                                                                                              \
    if (rc == CUDA_SUCCESS) cp_capture_begun(s, is_ptds);                                                              \
    return rc;                                                                                                         \
  }
DEF_BEGIN_CAPTURE(cuStreamBeginCapture_v2, 0, (CUstream s, CUstreamCaptureMode m), (s, m))
DEF_BEGIN_CAPTURE(cuStreamBeginCapture_v2_ptsz, 1, (CUstream s, CUstreamCaptureMode m), (s, m))
DEF_BEGIN_CAPTURE(cuStreamBeginCaptureToGraph, 0, CAPTOG_P, CAPTOG_A)
DEF_BEGIN_CAPTURE(cuStreamBeginCaptureToGraph_ptsz, 1, CAPTOG_P, CAPTOG_A)

#define DEF_END_CAPTURE(sym)                                                                                           \
  CP_EXPORT CUresult CUDAAPI sym(CUstream s, CUgraph *g) {                                                             \
    CALL_REAL(sym, (CUstream, CUgraph *), (s, g));                                                                     \
    /* Capture ends whether or not the graph was valid. */                                                             \
    if (rc == CUDA_SUCCESS || rc == CUDA_ERROR_STREAM_CAPTURE_INVALIDATED || rc == CUDA_ERROR_STREAM_CAPTURE_UNJOINED) \
      cp_capture_ended(s, rc == CUDA_SUCCESS && g ? (void *)*g : NULL);                                                \
    return rc;                                                                                                         \
  }
DEF_END_CAPTURE(cuStreamEndCapture)
DEF_END_CAPTURE(cuStreamEndCapture_ptsz)

/* Synchronizes also tell core which launches are known complete. */
CP_EXPORT CUresult CUDAAPI cuCtxSynchronize(void) {
  struct cp_sync c;
  driver_ready();
  cp_sync_begin(&c, NULL, 0, 1);
  CALL_REAL(cuCtxSynchronize, (void), ());
  cp_sync_end(&c, (int)rc);
  return rc;
}

CP_EXPORT CUresult CUDAAPI cuCtxSynchronize_v2(CUcontext ctx) {
  struct cp_sync c;
  driver_ready();
  cp_sync_begin(&c, NULL, 0, 1);
  if (ctx) c.ctx = ctx;
  CALL_REAL(cuCtxSynchronize_v2, (CUcontext), (ctx));
  cp_sync_end(&c, (int)rc);
  return rc;
}

#define DEF_STREAM_SYNC(sym, is_ptds)                                                                                  \
  CP_EXPORT CUresult CUDAAPI sym(CUstream s) {                                                                         \
    struct cp_sync c;                                                                                                  \
    driver_ready();                                                                                                    \
    cp_sync_begin(&c, s, is_ptds, 0);                                                                                  \
    CALL_REAL(sym, (CUstream), (s));                                                                                   \
    cp_sync_end(&c, (int)rc);                                                                                          \
    return rc;                                                                                                         \
  }
DEF_STREAM_SYNC(cuStreamSynchronize, 0)
DEF_STREAM_SYNC(cuStreamSynchronize_ptsz, 1)
/* A query that answers "done" is as good as a synchronize (CUDA_ERROR_NOT_READY is not a failure here). */
DEF_STREAM_SYNC(cuStreamQuery, 0)
DEF_STREAM_SYNC(cuStreamQuery_ptsz, 1)

/* Events: where they were recorded, so that finding one complete bounds its stream's unfinished work. */
#define DEF_EVENT_RECORD(sym, is_ptds, P, A)                                                                           \
  CP_EXPORT CUresult CUDAAPI sym P {                                                                                   \
    struct cp_sync c;                                                                                                  \
    driver_ready();                                                                                                    \
    cp_sync_begin(&c, s, is_ptds, 0);                                                                                  \
    CALL_REAL(sym, P, A);                                                                                              \
    if (rc == CUDA_SUCCESS) cp_event_recorded(e, &c);                                                                  \
    return rc;                                                                                                         \
  }
DEF_EVENT_RECORD(cuEventRecord, 0, (CUevent e, CUstream s), (e, s))
DEF_EVENT_RECORD(cuEventRecord_ptsz, 1, (CUevent e, CUstream s), (e, s))
DEF_EVENT_RECORD(cuEventRecordWithFlags, 0, (CUevent e, CUstream s, unsigned int f), (e, s, f))
DEF_EVENT_RECORD(cuEventRecordWithFlags_ptsz, 1, (CUevent e, CUstream s, unsigned int f), (e, s, f))

#define DEF_EVENT_WAIT(sym)                                                                                            \
  CP_EXPORT CUresult CUDAAPI sym(CUevent e) {                                                                          \
    CALL_REAL(sym, (CUevent), (e));                                                                                    \
    if (rc == CUDA_SUCCESS) cp_event_completed(e);                                                                     \
    return rc;                                                                                                         \
  }
DEF_EVENT_WAIT(cuEventSynchronize)
DEF_EVENT_WAIT(cuEventQuery)

CP_EXPORT CUresult CUDAAPI cuEventDestroy_v2(CUevent e) {
  cp_event_destroying(e); /* before the driver may hand the handle out again */
  CALL_REAL(cuEventDestroy_v2, (CUevent), (e));
  return rc;
}

/* A device-to-host copy on the default stream returns only once the copy is done, so everything queued on
 * that stream before it completed too (the usual "read the loss back" of a training step). */
#define DEF_DTOH(sym, is_ptds)                                                                                         \
  CP_EXPORT CUresult CUDAAPI sym(void *d, CUdeviceptr s, size_t n) {                                                   \
    struct cp_sync c;                                                                                                  \
    driver_ready();                                                                                                    \
    cp_sync_begin(&c, NULL, is_ptds, 0);                                                                               \
    CALL_REAL(sym, (void *, CUdeviceptr, size_t), (d, s, n));                                                          \
    cp_sync_end(&c, (int)rc);                                                                                          \
    return rc;                                                                                                         \
  }
DEF_DTOH(cuMemcpyDtoH_v2, 0)
DEF_DTOH(cuMemcpyDtoH_v2_ptds, 1)

/* Executable graphs: which graph each came from, so a faulting replay can list the kernels captured into it. */
CP_EXPORT CUresult CUDAAPI cuGraphInstantiateWithFlags(CUgraphExec *e, CUgraph g, unsigned long long fl) {
  CALL_REAL(cuGraphInstantiateWithFlags, (CUgraphExec *, CUgraph, unsigned long long), (e, g, fl));
  if (rc == CUDA_SUCCESS && e) cp_graph_instantiated(*e, g);
  return rc;
}

#define DEF_INSTANTIATE_PARAMS(sym)                                                                                    \
  CP_EXPORT CUresult CUDAAPI sym(CUgraphExec *e, CUgraph g, CUDA_GRAPH_INSTANTIATE_PARAMS *p) {                        \
    CALL_REAL(sym, (CUgraphExec *, CUgraph, CUDA_GRAPH_INSTANTIATE_PARAMS *), (e, g, p));                              \
    if (rc == CUDA_SUCCESS && e) cp_graph_instantiated(*e, g);                                                         \
    return rc;                                                                                                         \
  }
DEF_INSTANTIATE_PARAMS(cuGraphInstantiateWithParams)
DEF_INSTANTIATE_PARAMS(cuGraphInstantiateWithParams_ptsz)

/* Contexts going away take their breadcrumb memory with them: core stops using it first. A primary context
 * released may live on (other references); its streams then just get fresh slots. */
CP_EXPORT CUresult CUDAAPI cuCtxDestroy_v2(CUcontext c) {
  driver_ready();
  cp_ctx_going(c, -1, "cuCtxDestroy_v2");
  CALL_REAL(cuCtxDestroy_v2, (CUcontext), (c));
  return rc;
}

#define DEF_PRIMARY_GOING(sym)                                                                                         \
  CP_EXPORT CUresult CUDAAPI sym(CUdevice d) {                                                                         \
    driver_ready();                                                                                                    \
    cp_ctx_going(NULL, (int)d, #sym);                                                                                  \
    CALL_REAL(sym, (CUdevice), (d));                                                                                   \
    return rc;                                                                                                         \
  }
DEF_PRIMARY_GOING(cuDevicePrimaryCtxRelease_v2)
DEF_PRIMARY_GOING(cuDevicePrimaryCtxReset_v2)

CP_EXPORT CUresult CUDAAPI cuModuleUnload(CUmodule m) {
  CALL_REAL(cuModuleUnload, (CUmodule), (m));
  if (rc == CUDA_SUCCESS) cp_module_unloaded();
  return rc;
}

CP_EXPORT CUresult CUDAAPI cuLibraryUnload(CUlibrary l) {
  CALL_REAL(cuLibraryUnload, (CUlibrary), (l));
  if (rc == CUDA_SUCCESS) cp_module_unloaded();
  return rc;
}

/* ---- allocations and frees: the allocation table (core/allocs.c) ---- */

/* Told after the driver said yes, never before: a failed call allocated or freed nothing, and its output
 * arguments may be unset. */
static inline int allocs_on(CUresult rc) { return rc == CUDA_SUCCESS && cp_active(); }

#define DEF_ALLOC(sym, P, A, kind, bytes)                                                                              \
  CP_EXPORT CUresult CUDAAPI sym P {                                                                                   \
    CALL_REAL(sym, P, A);                                                                                              \
    if (allocs_on(rc) && p) allocs_alloc(kind, (uint64_t)*p, bytes, 0, #sym);                                          \
    return rc;                                                                                                         \
  }
DEF_ALLOC(cuMemAlloc_v2, (CUdeviceptr * p, size_t n), (p, n), ALLOCS_DEVICE, n)
DEF_ALLOC(cuMemAllocAsync, (CUdeviceptr * p, size_t n, CUstream s), (p, n, s), ALLOCS_ASYNC, n)
DEF_ALLOC(cuMemAllocAsync_ptsz, (CUdeviceptr * p, size_t n, CUstream s), (p, n, s), ALLOCS_ASYNC, n)
DEF_ALLOC(cuMemAllocFromPoolAsync, (CUdeviceptr * p, size_t n, CUmemoryPool pool, CUstream s), (p, n, pool, s),
          ALLOCS_POOL, n)
DEF_ALLOC(cuMemAllocFromPoolAsync_ptsz, (CUdeviceptr * p, size_t n, CUmemoryPool pool, CUstream s), (p, n, pool, s),
          ALLOCS_POOL, n)
DEF_ALLOC(cuMemAllocManaged, (CUdeviceptr * p, size_t n, unsigned int f), (p, n, f), ALLOCS_MANAGED, n)
/* a pitched allocation is h rows of *pitch bytes (at least w each) */
DEF_ALLOC(cuMemAllocPitch_v2, (CUdeviceptr * p, size_t *pitch, size_t w, size_t h, unsigned int e), (p, pitch, w, h, e),
          ALLOCS_PITCHED, (pitch ? *pitch : w) * h)
DEF_ALLOC(cuMemAddressReserve, RESERVE_P, RESERVE_A, ALLOCS_RESERVED, n)

#define DEF_FREE_DEVICE(sym, P, A)                                                                                     \
  CP_EXPORT CUresult CUDAAPI sym P {                                                                                   \
    CALL_REAL(sym, P, A);                                                                                              \
    if (allocs_on(rc)) allocs_free_device((uint64_t)p, #sym);                                                          \
    return rc;                                                                                                         \
  }
DEF_FREE_DEVICE(cuMemFree_v2, (CUdeviceptr p), (p))
DEF_FREE_DEVICE(cuMemFreeAsync, (CUdeviceptr p, CUstream s), (p, s))
DEF_FREE_DEVICE(cuMemFreeAsync_ptsz, (CUdeviceptr p, CUstream s), (p, s))

/* Pinned host memory is known by its device address, which core asks the driver for. */
#define DEF_ALLOC_HOST(sym, P, A)                                                                                      \
  CP_EXPORT CUresult CUDAAPI sym P {                                                                                   \
    CALL_REAL(sym, P, A);                                                                                              \
    if (allocs_on(rc) && p) {                                                                                          \
      driver_ready();                                                                                                  \
      allocs_alloc_host(*p, n, #sym);                                                                                  \
    }                                                                                                                  \
    return rc;                                                                                                         \
  }
DEF_ALLOC_HOST(cuMemHostAlloc, (void **p, size_t n, unsigned int f), (p, n, f))
DEF_ALLOC_HOST(cuMemAllocHost_v2, (void **p, size_t n), (p, n))

CP_EXPORT CUresult CUDAAPI cuMemFreeHost(void *p) {
  CALL_REAL(cuMemFreeHost, (void *), (p));
  if (allocs_on(rc)) allocs_free_host(p, "cuMemFreeHost");
  return rc;
}

/* The virtual memory API: a mapping is a range the program can use, a reservation only addresses. */
CP_EXPORT CUresult CUDAAPI cuMemMap MAP_P {
  CALL_REAL(cuMemMap, MAP_P, MAP_A);
  if (allocs_on(rc)) allocs_alloc(ALLOCS_VM, (uint64_t)p, n, 0, "cuMemMap");
  return rc;
}

CP_EXPORT CUresult CUDAAPI cuMemUnmap(CUdeviceptr p, size_t n) {
  CALL_REAL(cuMemUnmap, (CUdeviceptr, size_t), (p, n));
  if (allocs_on(rc)) allocs_unmap((uint64_t)p, n, "cuMemUnmap");
  return rc;
}

CP_EXPORT CUresult CUDAAPI cuMemAddressFree(CUdeviceptr p, size_t n) {
  CALL_REAL(cuMemAddressFree, (CUdeviceptr, size_t), (p, n));
  if (allocs_on(rc)) allocs_unreserve((uint64_t)p, "cuMemAddressFree");
  return rc;
}

CP_EXPORT CUresult CUDAAPI cuMemCreate CREATE_P {
  CALL_REAL(cuMemCreate, CREATE_P, CREATE_A);
  if (allocs_on(rc)) allocs_handle(1, n);
  return rc;
}

CP_EXPORT CUresult CUDAAPI cuMemRelease(CUmemGenericAllocationHandle h) {
  CALL_REAL(cuMemRelease, (CUmemGenericAllocationHandle), (h));
  if (allocs_on(rc)) allocs_handle(0, 0);
  return rc;
}

/* ---- entry-point lookup ---- */

static void fill_wrappers(void) {
#define ROW(sym, base, ptds, minver, P, A) g_wrapper[H_##sym] = (void *)&sym;
  CP_HOOKS(ROW, ROW)
#undef ROW
}

static pthread_once_t g_wrap_once = PTHREAD_ONCE_INIT;

/* The row for a cuGetProcAddress request, or -1: among the rows of that base name and stream semantics, the
 * newest ABI the requested version gets. A function with no per-thread variant is the same function under
 * either flag. */
static int row_for(const char *base, int ptds, int version) {
  int best = -1, legacy = -1, has_ptds = 0;
  for (int i = 0; i < H_COUNT; i++) {
    if (strcmp(g_rows[i].base, base)) continue;
    if (g_rows[i].ptds) has_ptds = 1;
    if (version < g_rows[i].minver) continue;
    if (g_rows[i].ptds == ptds && (best < 0 || g_rows[i].minver > g_rows[best].minver)) best = i;
    if (!g_rows[i].ptds && (legacy < 0 || g_rows[i].minver > g_rows[legacy].minver)) legacy = i;
  }
  if (best >= 0) return best;
  return ptds && !has_ptds ? legacy : -1;
}

/* The row whose exported symbol is exactly this name, or -1. */
static int row_by_symbol(const char *sym) {
  for (int i = 0; i < H_COUNT; i++)
    if (!strcmp(g_rows[i].sym, sym)) return i;
  return -1;
}

/* Which ABI the driver handed out. The driver answers with its own exported functions, so the symbol name at
 * that exact address identifies the ABI (cuCtxSynchronize asked at 13000 is cuCtxSynchronize_v2, which takes a
 * context); only when the address has no name does the version table decide. */
static int row_for_answer(void *fn, const char *base, int ptds, int version) {
  Dl_info di;
  if (dladdr(fn, &di) && di.dli_sname && di.dli_saddr == fn) return row_by_symbol(di.dli_sname);
  return row_for(base, ptds, version);
}

CP_EXPORT CUresult CUDAAPI cuGetProcAddress(const char *symbol, void **pfn, int version, cuuint64_t flags);

/* Swaps the driver's answer for culprit's wrapper when it is a hooked entry point. */
static void wrap_answer(const char *symbol, void **pfn, int version, cuuint64_t flags) {
  if (!symbol || !pfn || !*pfn || is_ours(*pfn) || cp_state < 0) return;
  pthread_once(&g_wrap_once, fill_wrappers);
  if (!strcmp(symbol, "cuGetProcAddress")) {
    /* cudart fetches cuGetProcAddress through itself; hand back the matching wrapper. */
    if (version >= 12000) {
      void *e = NULL;
      atomic_compare_exchange_strong(&g_real_gpa2, &e, *pfn);
      *pfn = (void *)&cuGetProcAddress_v2;
    } else {
      void *e = NULL;
      atomic_compare_exchange_strong(&g_real_gpa, &e, *pfn);
      *pfn = (void *)&cuGetProcAddress;
    }
    return;
  }
  if (errstr_answer(symbol, *pfn)) {
    *pfn = (void *)&cuGetErrorString;
    return;
  }
  int id = row_for_answer(*pfn, symbol, (flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) != 0, version);
  if (id < 0) return;
  void *e = NULL;
  atomic_compare_exchange_strong(&g_real[id], &e, *pfn);
  *pfn = g_wrapper[id];
}

CP_EXPORT CUresult CUDAAPI cuGetProcAddress_v2(const char *symbol, void **pfn, int version, cuuint64_t flags,
                                               CUdriverProcAddressQueryResult *status) {
  typedef CUresult (*fn)(const char *, void **, int, cuuint64_t, CUdriverProcAddressQueryResult *);
  fn real = (fn)atomic_load(&g_real_gpa2);
  if (!real) real = (fn)cuda_sym("cuGetProcAddress_v2");
  if (!real) return CUDA_ERROR_NOT_FOUND;
  CUresult rc = real(symbol, pfn, version, flags, status);
  if (rc == CUDA_SUCCESS) {
    cp_active();
    wrap_answer(symbol, pfn, version, flags);
  }
  return rc;
}

CP_EXPORT CUresult CUDAAPI cuGetProcAddress(const char *symbol, void **pfn, int version, cuuint64_t flags) {
  typedef CUresult (*fn)(const char *, void **, int, cuuint64_t);
  fn real = (fn)atomic_load(&g_real_gpa);
  if (!real) real = (fn)cuda_sym("cuGetProcAddress");
  if (!real) return CUDA_ERROR_NOT_FOUND;
  CUresult rc = real(symbol, pfn, version, flags);
  if (rc == CUDA_SUCCESS) {
    cp_active();
    wrap_answer(symbol, pfn, version, flags);
  }
  return rc;
}

/* ---- dlsym ---- */

/* Called by the dlsym trampoline: culprit's wrapper for a hooked driver symbol, CP_DLSYM_NULL to answer NULL,
 * or NULL to let glibc answer. */
#define CP_DLSYM_NULL ((void *)1)
__attribute__((visibility("hidden"))) void *cp__dlsym_hook(void *handle, const char *name) {
  init_real_dlsym();
  if (!name || name[0] != 'c' || name[1] != 'u') return NULL;
  if (!cp_active()) return NULL;
  pthread_once(&g_wrap_once, fill_wrappers);
  int id = -1, gpa = 0;
  if (!strcmp(name, "cuGetErrorString"))
    gpa = 3; /* no lookup function, but answered the same way: a wrapper of one kept real function */
  else if (!strcmp(name, "cuGetProcAddress"))
    gpa = 1;
  else if (!strcmp(name, "cuGetProcAddress_v2"))
    gpa = 2;
  else
    id = row_by_symbol(name);
  if (id < 0 && !gpa) return NULL;
  /* Resolve the real one in the driver library: RTLD_DEFAULT/RTLD_NEXT from here would find culprit's own
   * export or depend on our position in the search order. */
  void *real = NULL;
  if (handle != RTLD_DEFAULT && handle != RTLD_NEXT && cp__real_dlsym) real = ((dlsym_fn)cp__real_dlsym)(handle, name);
  if (!real || is_ours(real)) real = cuda_sym(name);
  /* The driver lacks it (an older driver, or no libcuda in the process): glibc would otherwise find culprit's
   * own export, and a program probing for the function would take the wrapper for the driver's. */
  if (!real) return handle == RTLD_DEFAULT || handle == RTLD_NEXT ? CP_DLSYM_NULL : NULL;
  void *e = NULL;
  if (gpa == 1) {
    atomic_compare_exchange_strong(&g_real_gpa, &e, real);
    return (void *)&cuGetProcAddress;
  }
  if (gpa == 2) {
    atomic_compare_exchange_strong(&g_real_gpa2, &e, real);
    return (void *)&cuGetProcAddress_v2;
  }
  if (gpa == 3) {
    errstr_answer(name, real);
    return (void *)&cuGetErrorString;
  }
  atomic_compare_exchange_strong(&g_real[id], &e, real);
  return g_wrapper[id];
}
