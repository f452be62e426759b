/* The table of hooked driver entry points, as an X-macro so one list drives the real-function table, the
 * wrappers, the dlsym filter and the cuGetProcAddress mapping. Not the wrappers themselves (intercept.c).
 *
 * Columns: exported symbol, base name that cuGetProcAddress is asked for, 1 if it is the per-thread default
 * stream variant (_ptsz/_ptds), the lowest requested cudaVersion for which the driver hands out this ABI (where
 * a base name has several rows, the one with the highest such version not above the request applies), the
 * parameter list, the argument list.
 *
 * SURFACE rows get a generic wrapper: call the real function and report a sticky error it returns.
 * CUSTOM rows have a hand-written wrapper in intercept.c (launches, stream life, capture, module unload,
 * allocations and frees). */
#ifndef CULPRIT_HOOKS_H
#define CULPRIT_HOOKS_H

/* one row a line, its columns aligned by hand */
// clang-format off
#define CP_HOOKS(SURFACE, CUSTOM)                                                                              \
  /* launches */                                                                                               \
  CUSTOM(cuLaunchKernel, cuLaunchKernel, 0, 4000, LAUNCH_P, LAUNCH_A)                                          \
  CUSTOM(cuLaunchKernel_ptsz, cuLaunchKernel, 1, 7000, LAUNCH_P, LAUNCH_A)                                     \
  CUSTOM(cuLaunchKernelEx, cuLaunchKernelEx, 0, 11060, LAUNCHEX_P, LAUNCHEX_A)                                 \
  CUSTOM(cuLaunchKernelEx_ptsz, cuLaunchKernelEx, 1, 11060, LAUNCHEX_P, LAUNCHEX_A)                            \
  CUSTOM(cuLaunchCooperativeKernel, cuLaunchCooperativeKernel, 0, 9000, COOP_P, COOP_A)                        \
  CUSTOM(cuLaunchCooperativeKernel_ptsz, cuLaunchCooperativeKernel, 1, 9000, COOP_P, COOP_A)                   \
  CUSTOM(cuGraphLaunch, cuGraphLaunch, 0, 10000, (CUgraphExec g, CUstream s), (g, s))                          \
  CUSTOM(cuGraphLaunch_ptsz, cuGraphLaunch, 1, 10000, (CUgraphExec g, CUstream s), (g, s))                     \
  /* stream life and capture */                                                                                \
  CUSTOM(cuStreamCreate, cuStreamCreate, 0, 2000, (CUstream * ps, unsigned int fl), (ps, fl))                  \
  CUSTOM(cuStreamCreateWithPriority, cuStreamCreateWithPriority, 0, 5050,                                      \
         (CUstream * ps, unsigned int fl, int pri), (ps, fl, pri))                                             \
  CUSTOM(cuStreamDestroy_v2, cuStreamDestroy, 0, 4000, (CUstream s), (s))                                      \
  CUSTOM(cuStreamBeginCapture_v2, cuStreamBeginCapture, 0, 10010, (CUstream s, CUstreamCaptureMode m), (s, m)) \
  CUSTOM(cuStreamBeginCapture_v2_ptsz, cuStreamBeginCapture, 1, 10010, (CUstream s, CUstreamCaptureMode m),   \
         (s, m))                                                                                               \
  CUSTOM(cuStreamBeginCaptureToGraph, cuStreamBeginCaptureToGraph, 0, 12030, CAPTOG_P, CAPTOG_A)               \
  CUSTOM(cuStreamBeginCaptureToGraph_ptsz, cuStreamBeginCaptureToGraph, 1, 12030, CAPTOG_P, CAPTOG_A)          \
  CUSTOM(cuStreamEndCapture, cuStreamEndCapture, 0, 10000, (CUstream s, CUgraph * g), (s, g))                  \
  CUSTOM(cuStreamEndCapture_ptsz, cuStreamEndCapture, 1, 10000, (CUstream s, CUgraph * g), (s, g))             \
  CUSTOM(cuGraphInstantiateWithFlags, cuGraphInstantiateWithFlags, 0, 11040,                                   \
         (CUgraphExec * e, CUgraph g, unsigned long long f), (e, g, f))                                        \
  CUSTOM(cuGraphInstantiateWithParams, cuGraphInstantiateWithParams, 0, 12000,                                 \
         (CUgraphExec * e, CUgraph g, CUDA_GRAPH_INSTANTIATE_PARAMS * p), (e, g, p))                          \
  CUSTOM(cuGraphInstantiateWithParams_ptsz, cuGraphInstantiateWithParams, 1, 12000,                            \
         (CUgraphExec * e, CUgraph g, CUDA_GRAPH_INSTANTIATE_PARAMS * p), (e, g, p))                          \
  CUSTOM(cuModuleUnload, cuModuleUnload, 0, 2000, (CUmodule m), (m))                                           \
  CUSTOM(cuLibraryUnload, cuLibraryUnload, 0, 12000, (CUlibrary l), (l))                                       \
  /* synchronization */                                                                                        \
  CUSTOM(cuCtxSynchronize, cuCtxSynchronize, 0, 2000, (void), ())                                              \
  CUSTOM(cuCtxSynchronize_v2, cuCtxSynchronize, 0, 13000, (CUcontext c), (c))                                  \
  CUSTOM(cuStreamSynchronize, cuStreamSynchronize, 0, 2000, (CUstream s), (s))                                 \
  CUSTOM(cuStreamSynchronize_ptsz, cuStreamSynchronize, 1, 7000, (CUstream s), (s))                            \
  CUSTOM(cuStreamQuery, cuStreamQuery, 0, 2000, (CUstream s), (s))                                             \
  CUSTOM(cuStreamQuery_ptsz, cuStreamQuery, 1, 7000, (CUstream s), (s))                                        \
  /* capture queries: the CUDA runtime asks them inside its own calls (a copy to pageable memory must not be     \
   * captured), so a sticky error can come back here first */                                                  \
  SURFACE(cuStreamIsCapturing, cuStreamIsCapturing, 0, 10000, (CUstream s, CUstreamCaptureStatus * st), (s, st)) \
  SURFACE(cuStreamIsCapturing_ptsz, cuStreamIsCapturing, 1, 10000, (CUstream s, CUstreamCaptureStatus * st),   \
          (s, st))                                                                                             \
  SURFACE(cuStreamGetCaptureInfo_v2, cuStreamGetCaptureInfo, 0, 11030, CAPINFO2_P, CAPINFO2_A)                 \
  SURFACE(cuStreamGetCaptureInfo_v2_ptsz, cuStreamGetCaptureInfo, 1, 11030, CAPINFO2_P, CAPINFO2_A)            \
  SURFACE(cuStreamGetCaptureInfo_v3, cuStreamGetCaptureInfo, 0, 12030, CAPINFO3_P, CAPINFO3_A)                 \
  SURFACE(cuStreamGetCaptureInfo_v3_ptsz, cuStreamGetCaptureInfo, 1, 12030, CAPINFO3_P, CAPINFO3_A)            \
  SURFACE(cuStreamWaitEvent, cuStreamWaitEvent, 0, 3020, (CUstream s, CUevent e, unsigned int f), (s, e, f))   \
  SURFACE(cuStreamWaitEvent_ptsz, cuStreamWaitEvent, 1, 7000, (CUstream s, CUevent e, unsigned int f),        \
          (s, e, f))                                                                                           \
  CUSTOM(cuEventSynchronize, cuEventSynchronize, 0, 2000, (CUevent e), (e))                                    \
  CUSTOM(cuEventQuery, cuEventQuery, 0, 2000, (CUevent e), (e))                                                \
  CUSTOM(cuEventRecord, cuEventRecord, 0, 2000, (CUevent e, CUstream s), (e, s))                               \
  CUSTOM(cuEventRecord_ptsz, cuEventRecord, 1, 7000, (CUevent e, CUstream s), (e, s))                          \
  CUSTOM(cuEventRecordWithFlags, cuEventRecordWithFlags, 0, 11010, (CUevent e, CUstream s, unsigned int f),    \
         (e, s, f))                                                                                            \
  CUSTOM(cuEventRecordWithFlags_ptsz, cuEventRecordWithFlags, 1, 11010,                                        \
         (CUevent e, CUstream s, unsigned int f), (e, s, f))                                                   \
  CUSTOM(cuEventDestroy_v2, cuEventDestroy, 0, 4000, (CUevent e), (e))                                         \
  SURFACE(cuLaunchHostFunc, cuLaunchHostFunc, 0, 10000, (CUstream s, CUhostFn fn, void *u), (s, fn, u))        \
  SURFACE(cuLaunchHostFunc_ptsz, cuLaunchHostFunc, 1, 10000, (CUstream s, CUhostFn fn, void *u), (s, fn, u))   \
  /* copies */                                                                                                 \
  SURFACE(cuMemcpy, cuMemcpy, 0, 4000, (CUdeviceptr d, CUdeviceptr s, size_t n), (d, s, n))                    \
  SURFACE(cuMemcpy_ptds, cuMemcpy, 1, 7000, (CUdeviceptr d, CUdeviceptr s, size_t n), (d, s, n))               \
  SURFACE(cuMemcpyAsync, cuMemcpyAsync, 0, 4000, (CUdeviceptr d, CUdeviceptr s, size_t n, CUstream st),        \
          (d, s, n, st))                                                                                       \
  SURFACE(cuMemcpyAsync_ptsz, cuMemcpyAsync, 1, 7000, (CUdeviceptr d, CUdeviceptr s, size_t n, CUstream st),   \
          (d, s, n, st))                                                                                       \
  SURFACE(cuMemcpyHtoD_v2, cuMemcpyHtoD, 0, 3020, (CUdeviceptr d, const void *s, size_t n), (d, s, n))         \
  SURFACE(cuMemcpyHtoD_v2_ptds, cuMemcpyHtoD, 1, 7000, (CUdeviceptr d, const void *s, size_t n), (d, s, n))    \
  CUSTOM(cuMemcpyDtoH_v2, cuMemcpyDtoH, 0, 3020, (void *d, CUdeviceptr s, size_t n), (d, s, n))                \
  CUSTOM(cuMemcpyDtoH_v2_ptds, cuMemcpyDtoH, 1, 7000, (void *d, CUdeviceptr s, size_t n), (d, s, n))           \
  SURFACE(cuMemcpyDtoD_v2, cuMemcpyDtoD, 0, 3020, (CUdeviceptr d, CUdeviceptr s, size_t n), (d, s, n))         \
  SURFACE(cuMemcpyDtoD_v2_ptds, cuMemcpyDtoD, 1, 7000, (CUdeviceptr d, CUdeviceptr s, size_t n), (d, s, n))    \
  SURFACE(cuMemcpyHtoDAsync_v2, cuMemcpyHtoDAsync, 0, 3020,                                                    \
          (CUdeviceptr d, const void *s, size_t n, CUstream st), (d, s, n, st))                                \
  SURFACE(cuMemcpyHtoDAsync_v2_ptsz, cuMemcpyHtoDAsync, 1, 7000,                                               \
          (CUdeviceptr d, const void *s, size_t n, CUstream st), (d, s, n, st))                                \
  SURFACE(cuMemcpyDtoHAsync_v2, cuMemcpyDtoHAsync, 0, 3020, (void *d, CUdeviceptr s, size_t n, CUstream st),   \
          (d, s, n, st))                                                                                       \
  SURFACE(cuMemcpyDtoHAsync_v2_ptsz, cuMemcpyDtoHAsync, 1, 7000,                                               \
          (void *d, CUdeviceptr s, size_t n, CUstream st), (d, s, n, st))                                      \
  SURFACE(cuMemcpyDtoDAsync_v2, cuMemcpyDtoDAsync, 0, 3020,                                                    \
          (CUdeviceptr d, CUdeviceptr s, size_t n, CUstream st), (d, s, n, st))                                \
  SURFACE(cuMemcpyDtoDAsync_v2_ptsz, cuMemcpyDtoDAsync, 1, 7000,                                               \
          (CUdeviceptr d, CUdeviceptr s, size_t n, CUstream st), (d, s, n, st))                                \
  SURFACE(cuMemcpy2D_v2, cuMemcpy2D, 0, 3020, (const CUDA_MEMCPY2D *p), (p))                                   \
  SURFACE(cuMemcpy2D_v2_ptds, cuMemcpy2D, 1, 7000, (const CUDA_MEMCPY2D *p), (p))                              \
  SURFACE(cuMemcpy2DAsync_v2, cuMemcpy2DAsync, 0, 3020, (const CUDA_MEMCPY2D *p, CUstream st), (p, st))        \
  SURFACE(cuMemcpy2DAsync_v2_ptsz, cuMemcpy2DAsync, 1, 7000, (const CUDA_MEMCPY2D *p, CUstream st), (p, st))   \
  SURFACE(cuMemcpy3D_v2, cuMemcpy3D, 0, 3020, (const CUDA_MEMCPY3D *p), (p))                                   \
  SURFACE(cuMemcpy3D_v2_ptds, cuMemcpy3D, 1, 7000, (const CUDA_MEMCPY3D *p), (p))                              \
  SURFACE(cuMemcpy3DAsync_v2, cuMemcpy3DAsync, 0, 3020, (const CUDA_MEMCPY3D *p, CUstream st), (p, st))        \
  SURFACE(cuMemcpy3DAsync_v2_ptsz, cuMemcpy3DAsync, 1, 7000, (const CUDA_MEMCPY3D *p, CUstream st), (p, st))   \
  SURFACE(cuMemcpyPeer, cuMemcpyPeer, 0, 4000, PEER_P, PEER_A)                                                 \
  SURFACE(cuMemcpyPeer_ptds, cuMemcpyPeer, 1, 7000, PEER_P, PEER_A)                                            \
  SURFACE(cuMemcpyPeerAsync, cuMemcpyPeerAsync, 0, 4000, PEERA_P, PEERA_A)                                     \
  SURFACE(cuMemcpyPeerAsync_ptsz, cuMemcpyPeerAsync, 1, 7000, PEERA_P, PEERA_A)                                \
  /* sets */                                                                                                   \
  SURFACE(cuMemsetD8_v2, cuMemsetD8, 0, 3020, (CUdeviceptr d, unsigned char v, size_t n), (d, v, n))           \
  SURFACE(cuMemsetD8_v2_ptds, cuMemsetD8, 1, 7000, (CUdeviceptr d, unsigned char v, size_t n), (d, v, n))      \
  SURFACE(cuMemsetD16_v2, cuMemsetD16, 0, 3020, (CUdeviceptr d, unsigned short v, size_t n), (d, v, n))        \
  SURFACE(cuMemsetD16_v2_ptds, cuMemsetD16, 1, 7000, (CUdeviceptr d, unsigned short v, size_t n), (d, v, n))   \
  SURFACE(cuMemsetD32_v2, cuMemsetD32, 0, 3020, (CUdeviceptr d, unsigned int v, size_t n), (d, v, n))          \
  SURFACE(cuMemsetD32_v2_ptds, cuMemsetD32, 1, 7000, (CUdeviceptr d, unsigned int v, size_t n), (d, v, n))     \
  SURFACE(cuMemsetD8Async, cuMemsetD8Async, 0, 3020, (CUdeviceptr d, unsigned char v, size_t n, CUstream s),   \
          (d, v, n, s))                                                                                        \
  SURFACE(cuMemsetD8Async_ptsz, cuMemsetD8Async, 1, 7000,                                                      \
          (CUdeviceptr d, unsigned char v, size_t n, CUstream s), (d, v, n, s))                                \
  SURFACE(cuMemsetD16Async, cuMemsetD16Async, 0, 3020,                                                         \
          (CUdeviceptr d, unsigned short v, size_t n, CUstream s), (d, v, n, s))                               \
  SURFACE(cuMemsetD16Async_ptsz, cuMemsetD16Async, 1, 7000,                                                    \
          (CUdeviceptr d, unsigned short v, size_t n, CUstream s), (d, v, n, s))                               \
  SURFACE(cuMemsetD32Async, cuMemsetD32Async, 0, 3020,                                                         \
          (CUdeviceptr d, unsigned int v, size_t n, CUstream s), (d, v, n, s))                                 \
  SURFACE(cuMemsetD32Async_ptsz, cuMemsetD32Async, 1, 7000,                                                    \
          (CUdeviceptr d, unsigned int v, size_t n, CUstream s), (d, v, n, s))                                 \
  SURFACE(cuMemsetD2D8_v2, cuMemsetD2D8, 0, 3020, MSET2D_P(unsigned char), MSET2D_A)                          \
  SURFACE(cuMemsetD2D8_v2_ptds, cuMemsetD2D8, 1, 7000, MSET2D_P(unsigned char), MSET2D_A)                     \
  SURFACE(cuMemsetD2D16_v2, cuMemsetD2D16, 0, 3020, MSET2D_P(unsigned short), MSET2D_A)                        \
  SURFACE(cuMemsetD2D16_v2_ptds, cuMemsetD2D16, 1, 7000, MSET2D_P(unsigned short), MSET2D_A)                   \
  SURFACE(cuMemsetD2D32_v2, cuMemsetD2D32, 0, 3020, MSET2D_P(unsigned int), MSET2D_A)                          \
  SURFACE(cuMemsetD2D32_v2_ptds, cuMemsetD2D32, 1, 7000, MSET2D_P(unsigned int), MSET2D_A)                     \
  SURFACE(cuMemsetD2D8Async, cuMemsetD2D8Async, 0, 3020, MSET2DA_P(unsigned char), MSET2DA_A)                  \
  SURFACE(cuMemsetD2D8Async_ptsz, cuMemsetD2D8Async, 1, 7000, MSET2DA_P(unsigned char), MSET2DA_A)             \
  SURFACE(cuMemsetD2D16Async, cuMemsetD2D16Async, 0, 3020, MSET2DA_P(unsigned short), MSET2DA_A)               \
  SURFACE(cuMemsetD2D16Async_ptsz, cuMemsetD2D16Async, 1, 7000, MSET2DA_P(unsigned short), MSET2DA_A)          \
  SURFACE(cuMemsetD2D32Async, cuMemsetD2D32Async, 0, 3020, MSET2DA_P(unsigned int), MSET2DA_A)                 \
  SURFACE(cuMemsetD2D32Async_ptsz, cuMemsetD2D32Async, 1, 7000, MSET2DA_P(unsigned int), MSET2DA_A)            \
  /* more copies and stream work */                                                                          \
  SURFACE(cuMemcpy2DUnaligned_v2, cuMemcpy2DUnaligned, 0, 3020, (const CUDA_MEMCPY2D *p), (p))                 \
  SURFACE(cuMemcpy2DUnaligned_v2_ptds, cuMemcpy2DUnaligned, 1, 7000, (const CUDA_MEMCPY2D *p), (p))            \
  SURFACE(cuMemcpy3DPeer, cuMemcpy3DPeer, 0, 4000, (const CUDA_MEMCPY3D_PEER *p), (p))                         \
  SURFACE(cuMemcpy3DPeer_ptds, cuMemcpy3DPeer, 1, 7000, (const CUDA_MEMCPY3D_PEER *p), (p))                    \
  SURFACE(cuMemcpy3DPeerAsync, cuMemcpy3DPeerAsync, 0, 4000, (const CUDA_MEMCPY3D_PEER *p, CUstream s), (p, s)) \
  SURFACE(cuMemcpy3DPeerAsync_ptsz, cuMemcpy3DPeerAsync, 1, 7000, (const CUDA_MEMCPY3D_PEER *p, CUstream s),  \
          (p, s))                                                                                              \
  SURFACE(cuGraphUpload, cuGraphUpload, 0, 11010, (CUgraphExec g, CUstream s), (g, s))                         \
  SURFACE(cuGraphUpload_ptsz, cuGraphUpload, 1, 11010, (CUgraphExec g, CUstream s), (g, s))                    \
  SURFACE(cuStreamAddCallback, cuStreamAddCallback, 0, 5000,                                                   \
          (CUstream s, CUstreamCallback cb, void *u, unsigned int f), (s, cb, u, f))                           \
  SURFACE(cuStreamAddCallback_ptsz, cuStreamAddCallback, 1, 7000,                                              \
          (CUstream s, CUstreamCallback cb, void *u, unsigned int f), (s, cb, u, f))                           \
  /* memory: allocations and frees go to the allocation table (core/allocs.c) */                               \
  CUSTOM(cuMemAlloc_v2, cuMemAlloc, 0, 3020, (CUdeviceptr * p, size_t n), (p, n))                              \
  CUSTOM(cuMemFree_v2, cuMemFree, 0, 3020, (CUdeviceptr p), (p))                                               \
  CUSTOM(cuMemAllocAsync, cuMemAllocAsync, 0, 11020, (CUdeviceptr * p, size_t n, CUstream s), (p, n, s))       \
  CUSTOM(cuMemAllocAsync_ptsz, cuMemAllocAsync, 1, 11020, (CUdeviceptr * p, size_t n, CUstream s), (p, n, s))  \
  CUSTOM(cuMemFreeAsync, cuMemFreeAsync, 0, 11020, (CUdeviceptr p, CUstream s), (p, s))                        \
  CUSTOM(cuMemFreeAsync_ptsz, cuMemFreeAsync, 1, 11020, (CUdeviceptr p, CUstream s), (p, s))                   \
  CUSTOM(cuMemFreeHost, cuMemFreeHost, 0, 2000, (void *p), (p))                                                \
  SURFACE(cuMemGetInfo_v2, cuMemGetInfo, 0, 3020, (size_t * fr, size_t * to), (fr, to))                        \
  CUSTOM(cuMemAllocPitch_v2, cuMemAllocPitch, 0, 3020,                                                         \
         (CUdeviceptr * p, size_t * pitch, size_t w, size_t h, unsigned int e), (p, pitch, w, h, e))           \
  CUSTOM(cuMemAllocHost_v2, cuMemAllocHost, 0, 3020, (void **p, size_t n), (p, n))                             \
  CUSTOM(cuMemHostAlloc, cuMemHostAlloc, 0, 2020, (void **p, size_t n, unsigned int f), (p, n, f))             \
  SURFACE(cuMemHostRegister_v2, cuMemHostRegister, 0, 6050, (void *p, size_t n, unsigned int f), (p, n, f))    \
  SURFACE(cuMemHostUnregister, cuMemHostUnregister, 0, 4000, (void *p), (p))                                   \
  CUSTOM(cuMemAllocManaged, cuMemAllocManaged, 0, 6000, (CUdeviceptr * p, size_t n, unsigned int f),           \
         (p, n, f))                                                                                            \
  CUSTOM(cuMemAllocFromPoolAsync, cuMemAllocFromPoolAsync, 0, 11020,                                           \
         (CUdeviceptr * p, size_t n, CUmemoryPool pool, CUstream s), (p, n, pool, s))                          \
  CUSTOM(cuMemAllocFromPoolAsync_ptsz, cuMemAllocFromPoolAsync, 1, 11020,                                      \
         (CUdeviceptr * p, size_t n, CUmemoryPool pool, CUstream s), (p, n, pool, s))                          \
  SURFACE(cuMemPoolTrimTo, cuMemPoolTrimTo, 0, 11020, (CUmemoryPool pool, size_t keep), (pool, keep))          \
  /* the virtual memory API (PyTorch's expandable segments): addresses reserved, memory created and mapped */  \
  CUSTOM(cuMemAddressReserve, cuMemAddressReserve, 0, 10020, RESERVE_P, RESERVE_A)                             \
  CUSTOM(cuMemAddressFree, cuMemAddressFree, 0, 10020, (CUdeviceptr p, size_t n), (p, n))                      \
  CUSTOM(cuMemCreate, cuMemCreate, 0, 10020, CREATE_P, CREATE_A)                                               \
  CUSTOM(cuMemRelease, cuMemRelease, 0, 10020, (CUmemGenericAllocationHandle h), (h))                          \
  CUSTOM(cuMemMap, cuMemMap, 0, 10020, MAP_P, MAP_A)                                                           \
  CUSTOM(cuMemUnmap, cuMemUnmap, 0, 10020, (CUdeviceptr p, size_t n), (p, n))                                  \
  /* modules and contexts */                                                                                   \
  SURFACE(cuModuleLoad, cuModuleLoad, 0, 2000, (CUmodule * m, const char *f), (m, f))                          \
  SURFACE(cuModuleLoadData, cuModuleLoadData, 0, 2000, (CUmodule * m, const void *i), (m, i))                  \
  SURFACE(cuModuleLoadDataEx, cuModuleLoadDataEx, 0, 2010,                                                     \
          (CUmodule * m, const void *i, unsigned int n, CUjit_option *o, void **v), (m, i, n, o, v))           \
  SURFACE(cuModuleGetFunction, cuModuleGetFunction, 0, 2000, (CUfunction * f, CUmodule m, const char *n),      \
          (f, m, n))                                                                                           \
  CUSTOM(cuCtxDestroy_v2, cuCtxDestroy, 0, 4000, (CUcontext c), (c))                                           \
  SURFACE(cuCtxPushCurrent_v2, cuCtxPushCurrent, 0, 4000, (CUcontext c), (c))                                  \
  SURFACE(cuCtxPopCurrent_v2, cuCtxPopCurrent, 0, 4000, (CUcontext * c), (c))                                  \
  CUSTOM(cuDevicePrimaryCtxRelease_v2, cuDevicePrimaryCtxRelease, 0, 11000, (CUdevice d), (d))                 \
  CUSTOM(cuDevicePrimaryCtxReset_v2, cuDevicePrimaryCtxReset, 0, 11000, (CUdevice d), (d))
// clang-format on

#define LAUNCH_P                                                                                                       \
  (CUfunction f, unsigned int gx, unsigned int gy, unsigned int gz, unsigned int bx, unsigned int by, unsigned int bz, \
   unsigned int smem, CUstream s, void **params, void **extra)
#define LAUNCH_A (f, gx, gy, gz, bx, by, bz, smem, s, params, extra)
#define COOP_P                                                                                                         \
  (CUfunction f, unsigned int gx, unsigned int gy, unsigned int gz, unsigned int bx, unsigned int by, unsigned int bz, \
   unsigned int smem, CUstream s, void **params)
#define COOP_A (f, gx, gy, gz, bx, by, bz, smem, s, params)
#define LAUNCHEX_P (const CUlaunchConfig *cfg, CUfunction f, void **params, void **extra)
#define LAUNCHEX_A (cfg, f, params, extra)
#define CAPTOG_P                                                                                                       \
  (CUstream s, CUgraph g, const CUgraphNode *deps, const CUgraphEdgeData *edata, size_t n, CUstreamCaptureMode m)
#define CAPTOG_A (s, g, deps, edata, n, m)
#define CAPINFO2_P                                                                                                     \
  (CUstream s, CUstreamCaptureStatus * st, cuuint64_t * id, CUgraph * g, const CUgraphNode **deps, size_t *n)
#define CAPINFO2_A (s, st, id, g, deps, n)
#define CAPINFO3_P                                                                                                     \
  (CUstream s, CUstreamCaptureStatus * st, cuuint64_t * id, CUgraph * g, const CUgraphNode **deps,                     \
   const CUgraphEdgeData **edata, size_t *n)
#define CAPINFO3_A (s, st, id, g, deps, edata, n)
#define MSET2D_P(T) (CUdeviceptr d, size_t pitch, T v, size_t w, size_t h)
#define MSET2D_A (d, pitch, v, w, h)
#define MSET2DA_P(T) (CUdeviceptr d, size_t pitch, T v, size_t w, size_t h, CUstream s)
#define MSET2DA_A (d, pitch, v, w, h, s)
#define PEER_P (CUdeviceptr d, CUcontext dc, CUdeviceptr s, CUcontext sc, size_t n)
#define PEER_A (d, dc, s, sc, n)
#define PEERA_P (CUdeviceptr d, CUcontext dc, CUdeviceptr s, CUcontext sc, size_t n, CUstream st)
#define PEERA_A (d, dc, s, sc, n, st)
#define RESERVE_P (CUdeviceptr * p, size_t n, size_t align, CUdeviceptr addr, unsigned long long f)
#define RESERVE_A (p, n, align, addr, f)
#define CREATE_P (CUmemGenericAllocationHandle * h, size_t n, const CUmemAllocationProp *prop, unsigned long long f)
#define CREATE_A (h, n, prop, f)
#define MAP_P (CUdeviceptr p, size_t n, size_t off, CUmemGenericAllocationHandle h, unsigned long long f)
#define MAP_A (p, n, off, h, f)

#endif
