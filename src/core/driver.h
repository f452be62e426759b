/* The real driver functions core needs, as plain C types so core compiles without cuda.h. intercept fills
 * this table with the driver's own entry points (never with culprit's wrappers); unit tests fill it with fakes. */
#ifndef CULPRIT_DRIVER_H
#define CULPRIT_DRIVER_H

#include <stddef.h>
#include <stdint.h>

struct cp_driver {
  int (*ctx_get_current)(void **ctx);                                              /* cuCtxGetCurrent */
  int (*ctx_get_device)(int *dev);                                                 /* cuCtxGetDevice */
  int (*stream_get_ctx)(void *stream, void **ctx);                                 /* cuStreamGetCtx */
  int (*write_value64)(void *stream, uint64_t dptr, uint64_t v, unsigned f);       /* cuStreamWriteValue64_v2 */
  int (*write_value64_ptsz)(void *stream, uint64_t dptr, uint64_t v, unsigned f);  /* ..._v2_ptsz */
  int (*memset_d32_async)(uint64_t dptr, unsigned v, size_t n, void *stream);      /* cuMemsetD32Async */
  int (*memset_d32_async_ptsz)(uint64_t dptr, unsigned v, size_t n, void *stream); /* ..._ptsz */
  int (*host_alloc)(void **p, size_t n, unsigned flags);                           /* cuMemHostAlloc */
  int (*host_get_dptr)(uint64_t *dptr, void *p, unsigned flags);                   /* cuMemHostGetDevicePointer_v2 */
  int (*func_get_name)(const char **name, void *func);                             /* cuFuncGetName */
  int (*kernel_get_name)(const char **name, void *kernel);                         /* cuKernelGetName */
  int (*func_get_param_info)(void *func, size_t i, size_t *off, size_t *size);     /* cuFuncGetParamInfo (12.4) */
  int (*kernel_get_param_info)(void *kernel, size_t i, size_t *off, size_t *size); /* cuKernelGetParamInfo */
  int (*stream_sync)(void *stream);                                                /* cuStreamSynchronize */
  int (*stream_sync_ptsz)(void *stream);                                           /* cuStreamSynchronize_ptsz */
  int (*get_error_name)(int code, const char **s);                                 /* cuGetErrorName */
  int (*get_error_string)(int code, const char **s);                               /* cuGetErrorString */
  int (*stream_is_capturing)(void *stream, int *status);                           /* cuStreamIsCapturing */
  int (*stream_is_capturing_ptsz)(void *stream, int *status);                      /* cuStreamIsCapturing_ptsz */
  int (*stream_query)(void *stream);                                               /* cuStreamQuery */
  int (*stream_query_ptsz)(void *stream);                                          /* cuStreamQuery_ptsz */
  int (*ctx_push_current)(void *ctx);                                              /* cuCtxPushCurrent_v2 */
  int (*ctx_pop_current)(void **ctx);                                              /* cuCtxPopCurrent_v2 */
  int (*ctx_sync)(void);                                                           /* cuCtxSynchronize */
};

extern struct cp_driver cp_drv;

/* The errors that stay with a context once a kernel faulted, every later call returning them too: 700 illegal
 * address, 702 launch timeout, 710 assert, 714 hardware stack error, 715 illegal instruction, 716 misaligned
 * address, 717 invalid address space, 718 invalid pc, 719 launch failure. */
static inline int cp_is_sticky(int rc) { return rc == 700 || rc == 702 || rc == 710 || (rc >= 714 && rc <= 719); }

/* CUDA constants core uses, with their cuda.h values (checked against cuda.h in intercept.c). */
#define CP_CU_STREAM_LEGACY ((void *)0x1)
#define CP_CU_STREAM_PER_THREAD ((void *)0x2)
#define CP_CU_MEMHOSTALLOC_PORTABLE 0x01
#define CP_CU_MEMHOSTALLOC_DEVICEMAP 0x02
#define CP_CU_ERROR_INVALID_VALUE 1
#define CP_CU_LAUNCH_PARAM_END 0x00
#define CP_CU_LAUNCH_PARAM_BUFFER_POINTER 0x01
#define CP_CU_LAUNCH_PARAM_BUFFER_SIZE 0x02

#endif
