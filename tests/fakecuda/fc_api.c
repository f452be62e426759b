/* The exported driver entry points of the simulated CUDA driver, each under the exact symbol name and prototype
 * of the real libcuda.so.1. Each is a thin shell: fc_begin/fc_end (lock, trace, FAKECUDA_FAIL) around a static
 * helper shared by its legacy and per-thread (_ptsz/_ptds) twins. Memory and copies are in fc_memory.c, stream
 * capture and graphs in fc_graph.c, modules, libraries and kernels in fc_module.c, lookup and error names in
 * fc_lookup.c. */
#include "fc_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- helpers ---------------------------------------------------------------------------------------------- */

static CUresult fc_dev_ok(CUdevice dev)
{
    CUresult rc = fc_ready();
    if (rc)
        return rc;
    return dev >= 0 && dev < fc_g.ndev ? CUDA_SUCCESS : CUDA_ERROR_INVALID_DEVICE;
}

/* ---- init, devices ---------------------------------------------------------------------------------------- */

FC_API CUresult cuInit(unsigned int Flags)
{
    FC_BEGIN();
    if (Flags)
        FC_RETURN(CUDA_ERROR_INVALID_VALUE);
    if (fc_g.ndev == 0)
        FC_RETURN(CUDA_ERROR_NO_DEVICE);
    fc_g.inited = 1;
    FC_RETURN(CUDA_SUCCESS);
}

FC_API CUresult cuDriverGetVersion(int *driverVersion)
{
    FC_BEGIN();
    if (!driverVersion)
        FC_RETURN(CUDA_ERROR_INVALID_VALUE);
    *driverVersion = 13000;
    FC_RETURN(CUDA_SUCCESS);
}

FC_API CUresult cuDeviceGet(CUdevice *device, int ordinal)
{
    FC_BEGIN();
    CUresult rc = fc_dev_ok(ordinal);
    if (!rc && !device)
        rc = CUDA_ERROR_INVALID_VALUE;
    if (!rc)
        *device = ordinal;
    FC_RETURN(rc);
}

FC_API CUresult cuDeviceGetCount(int *count)
{
    FC_BEGIN();
    CUresult rc = fc_ready();
    if (!rc && !count)
        rc = CUDA_ERROR_INVALID_VALUE;
    if (!rc)
        *count = fc_g.ndev;
    FC_RETURN(rc);
}

FC_API CUresult cuDeviceGetName(char *name, int len, CUdevice dev)
{
    FC_BEGIN();
    CUresult rc = fc_dev_ok(dev);
    if (!rc && (!name || len <= 0))
        rc = CUDA_ERROR_INVALID_VALUE;
    if (!rc)
        snprintf(name, (size_t)len, "Fake CUDA Device %d", dev);
    FC_RETURN(rc);
}

FC_API CUresult cuDeviceGetAttribute(int *pi, CUdevice_attribute attrib, CUdevice dev)
{
    FC_BEGIN();
    CUresult rc = fc_dev_ok(dev);
    if (!rc && !pi)
        rc = CUDA_ERROR_INVALID_VALUE;
    if (!rc)
        *pi = attrib == CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT ? 132 : 1;
    FC_RETURN(rc);
}

/* ---- contexts --------------------------------------------------------------------------------------------- */

static CUresult fc_primary_retain(CUcontext *pctx, CUdevice dev)
{
    CUresult rc = fc_dev_ok(dev);
    if (rc)
        return rc;
    if (!pctx)
        return CUDA_ERROR_INVALID_VALUE;
    if (!fc_g.primary[dev] && (rc = fc_ctx_new(dev, 1, &fc_g.primary[dev])))
        return rc;
    fc_g.primary[dev]->refs++;
    *pctx = (CUcontext)fc_g.primary[dev];
    return CUDA_SUCCESS;
}

/* Brings the primary context back to a clean state, as the driver does when it tears it down. */
static void fc_primary_clear(struct fc_ctx *c, int drop_streams)
{
    if (!c->sticky)
        fc_drain_ctx(c);
    fc_ctx_discard(c);
    c->sticky = CUDA_SUCCESS;
    if (drop_streams) {
        for (struct fc_stream *s = c->streams; s; s = s->next)
            if (s->kind == FC_STREAM_CREATED)
                s->destroyed = 1;
        fc_mem_free_owned(c);
    }
}

static CUresult fc_primary_release(CUdevice dev)
{
    CUresult rc = fc_dev_ok(dev);
    if (rc)
        return rc;
    struct fc_ctx *c = fc_g.primary[dev];
    if (!c || c->refs == 0)
        return CUDA_ERROR_INVALID_CONTEXT;
    if (--c->refs == 0)
        fc_primary_clear(c, 1);
    return CUDA_SUCCESS;
}

static CUresult fc_primary_reset(CUdevice dev)
{
    CUresult rc = fc_dev_ok(dev);
    if (rc)
        return rc;
    if (fc_g.primary[dev])
        fc_primary_clear(fc_g.primary[dev], 1);
    return CUDA_SUCCESS;
}

FC_API CUresult cuDevicePrimaryCtxRetain(CUcontext *pctx, CUdevice dev)
{
    FC_BEGIN();
    FC_RETURN(fc_primary_retain(pctx, dev));
}

FC_API CUresult cuDevicePrimaryCtxRelease(CUdevice dev)
{
    FC_BEGIN();
    FC_RETURN(fc_primary_release(dev));
}

FC_API CUresult cuDevicePrimaryCtxRelease_v2(CUdevice dev)
{
    FC_BEGIN();
    FC_RETURN(fc_primary_release(dev));
}

FC_API CUresult cuDevicePrimaryCtxReset(CUdevice dev)
{
    FC_BEGIN();
    FC_RETURN(fc_primary_reset(dev));
}

FC_API CUresult cuDevicePrimaryCtxReset_v2(CUdevice dev)
{
    FC_BEGIN();
    FC_RETURN(fc_primary_reset(dev));
}

/* Every cuCtxCreate version makes a new context on the device and pushes it, as the driver does. */
static CUresult fc_ctx_create(CUcontext *pctx, CUdevice dev)
{
    CUresult rc = fc_dev_ok(dev);
    struct fc_ctx *c;
    if (rc)
        return rc;
    if (!pctx)
        return CUDA_ERROR_INVALID_VALUE;
    if ((rc = fc_ctx_new(dev, 0, &c)))
        return rc;
    if (fc_ctx_push(c))
        return CUDA_ERROR_OUT_OF_MEMORY;
    *pctx = (CUcontext)c;
    return CUDA_SUCCESS;
}

FC_API CUresult cuCtxCreate_v2(CUcontext *pctx, unsigned int flags, CUdevice dev)
{
    FC_BEGIN();
    FC_RETURN(fc_ctx_create(pctx, dev));
}

FC_API CUresult cuCtxCreate_v3(CUcontext *pctx, CUexecAffinityParam *paramsArray, int numParams, unsigned int flags,
                               CUdevice dev)
{
    FC_BEGIN();
    FC_RETURN(fc_ctx_create(pctx, dev));
}

FC_API CUresult cuCtxCreate_v4(CUcontext *pctx, CUctxCreateParams *ctxCreateParams, unsigned int flags, CUdevice dev)
{
    FC_BEGIN();
    FC_RETURN(fc_ctx_create(pctx, dev));
}

FC_API CUresult cuCtxDestroy_v2(CUcontext ctx)
{
    FC_BEGIN();
    struct fc_ctx *c;
    CUresult rc = fc_ready();
    if (!rc)
        rc = fc_ctx_valid(ctx, &c);
    if (!rc && c->primary)
        rc = CUDA_ERROR_INVALID_CONTEXT;
    if (rc)
        FC_RETURN(rc);
    /* Destroying is how a program recovers from a sticky error, so it works on a sticky context too. */
    if (!c->sticky)
        fc_drain_ctx(c);
    fc_ctx_discard(c);
    fc_mem_free_owned(c);
    c->alive = 0;
    fc_ctx_forget_current(c);
    FC_RETURN(CUDA_SUCCESS);
}

FC_API CUresult cuCtxSetCurrent(CUcontext ctx)
{
    FC_BEGIN();
    struct fc_ctx *c = NULL;
    CUresult rc = fc_ready();
    if (!rc && ctx)
        rc = fc_ctx_valid(ctx, &c);
    if (!rc)
        fc_ctx_set_current(c);
    FC_RETURN(rc);
}

FC_API CUresult cuCtxGetCurrent(CUcontext *pctx)
{
    FC_BEGIN();
    CUresult rc = fc_ready();
    if (!rc && !pctx)
        rc = CUDA_ERROR_INVALID_VALUE;
    if (!rc) {
        struct fc_ctx *c = fc_ctx_current();
        *pctx = c && c->alive ? (CUcontext)c : NULL;
    }
    FC_RETURN(rc);
}

FC_API CUresult cuCtxPushCurrent_v2(CUcontext ctx)
{
    FC_BEGIN();
    struct fc_ctx *c;
    CUresult rc = fc_ready();
    if (!rc)
        rc = fc_ctx_valid(ctx, &c);
    if (!rc && fc_ctx_push(c))
        rc = CUDA_ERROR_OUT_OF_MEMORY;
    FC_RETURN(rc);
}

FC_API CUresult cuCtxPopCurrent_v2(CUcontext *pctx)
{
    FC_BEGIN();
    CUresult rc = fc_ready();
    if (rc)
        FC_RETURN(rc);
    if (!fc_ctx_current())
        FC_RETURN(CUDA_ERROR_INVALID_CONTEXT);
    struct fc_ctx *c = fc_ctx_pop();
    if (pctx)
        *pctx = (CUcontext)c;
    FC_RETURN(CUDA_SUCCESS);
}

/* ctx NULL means the current context (the _v2 forms take one explicitly). */
static CUresult fc_ctx_or_current(CUcontext ctx, struct fc_ctx **c)
{
    CUresult rc = fc_ready();
    if (rc)
        return rc;
    return ctx ? fc_ctx_valid(ctx, c) : fc_cur(c);
}

static CUresult fc_ctx_get_device(CUdevice *device, CUcontext ctx)
{
    struct fc_ctx *c;
    CUresult rc = fc_ctx_or_current(ctx, &c);
    if (!rc && !device)
        rc = CUDA_ERROR_INVALID_VALUE;
    if (!rc)
        *device = c->device;
    return rc;
}

static CUresult fc_ctx_sync(CUcontext ctx)
{
    struct fc_ctx *c;
    CUresult rc = fc_ctx_or_current(ctx, &c);
    if (rc)
        return rc;
    rc = fc_drain_ctx(c);
    fc_printf_flush(c);
    return rc;
}

FC_API CUresult cuCtxGetDevice(CUdevice *device)
{
    FC_BEGIN();
    FC_RETURN(fc_ctx_get_device(device, NULL));
}

FC_API CUresult cuCtxGetDevice_v2(CUdevice *device, CUcontext ctx)
{
    FC_BEGIN();
    FC_RETURN(fc_ctx_get_device(device, ctx));
}

FC_API CUresult cuCtxSynchronize(void)
{
    FC_BEGIN();
    FC_RETURN(fc_ctx_sync(NULL));
}

FC_API CUresult cuCtxSynchronize_v2(CUcontext ctx)
{
    FC_BEGIN();
    FC_RETURN(fc_ctx_sync(ctx));
}

/* ---- streams ---------------------------------------------------------------------------------------------- */

static CUresult fc_stream_create(CUstream *ph, unsigned flags, int priority)
{
    struct fc_ctx *c;
    struct fc_stream *s;
    CUresult rc = fc_live(&c);
    if (!rc && !ph)
        rc = CUDA_ERROR_INVALID_VALUE;
    if (!rc)
        rc = fc_stream_new(c, FC_STREAM_CREATED, &s);
    if (rc)
        return rc;
    s->flags = flags;
    s->priority = priority;
    *ph = (CUstream)s;
    return CUDA_SUCCESS;
}

/* The handle dies at once; work already queued still runs when the context is drained, as on the device. */
static CUresult fc_stream_destroy(CUstream h)
{
    struct fc_stream *s;
    CUresult rc = fc_ready();
    if (rc)
        return rc;
    if (h == NULL || h == CU_STREAM_LEGACY || h == CU_STREAM_PER_THREAD)
        return CUDA_ERROR_INVALID_HANDLE;
    if ((rc = fc_work_stream(h, 0, &s)))
        return rc;
    s->destroyed = 1;
    return CUDA_SUCCESS;
}

/* Synchronize and query both run the stream to its end: the fake's GPU does nothing until asked. A launch still
 * running (FAKECUDA_HANG) makes a synchronize wait and a query (wait 0) answer CUDA_ERROR_NOT_READY. */
static CUresult fc_stream_sync(CUstream h, int pt, int wait)
{
    struct fc_stream *s = NULL;
    CUresult rc = fc_work_stream(h, pt, &s);
    if (!rc && s->capture)
        return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    if (!rc)
        rc = fc_drain_stream(s, wait);
    if (wait && s)
        fc_printf_flush(s->ctx); /* a synchronize, faulted or not, empties the printf buffer */
    return rc;
}

static CUresult fc_stream_ctx(CUstream h, int pt, CUcontext *pctx, CUgreenCtx *pgreen)
{
    struct fc_stream *s;
    CUresult rc = fc_stream_get(h, pt, &s);
    if (!rc && !pctx)
        rc = CUDA_ERROR_INVALID_VALUE;
    if (rc)
        return rc;
    *pctx = (CUcontext)s->ctx;
    if (pgreen)
        *pgreen = NULL;
    return CUDA_SUCCESS;
}

static CUresult fc_stream_wait(CUstream h, int pt, CUevent hev)
{
    struct fc_stream *s;
    struct fc_event *ev;
    struct fc_op *op;
    CUresult rc = fc_work_stream(h, pt, &s);
    if (rc)
        return rc;
    if (!(ev = fc_event_valid(hev)))
        return CUDA_ERROR_INVALID_HANDLE;
    if (!ev->stream)
        return CUDA_SUCCESS; /* never recorded: nothing to wait for */
    if ((rc = fc_new_op(FC_OP_WAIT, &op)))
        return rc;
    op->wstream = ev->stream;
    op->wtarget = ev->target;
    return fc_enqueue(s, op);
}

/* cuStreamWriteValue32/64: the address must be a device address (a host pointer is refused, as the tool under
 * test must use cuMemHostGetDevicePointer), aligned to the width. */
static CUresult fc_write(CUstream h, int pt, CUdeviceptr addr, unsigned long long value, unsigned width)
{
    struct fc_stream *s;
    struct fc_op *op;
    void *dst;
    CUresult rc = fc_work_stream(h, pt, &s);
    if (rc)
        return rc;
    if (addr % width || fc_dev_addr(addr, width, 0, &dst))
        return CUDA_ERROR_INVALID_VALUE;
    if ((rc = fc_new_op(FC_OP_WRITE, &op)))
        return rc;
    op->dst = dst;
    op->value = value;
    op->width = width;
    return fc_enqueue(s, op);
}

FC_API CUresult cuStreamCreate(CUstream *phStream, unsigned int Flags)
{
    FC_BEGIN();
    FC_RETURN(fc_stream_create(phStream, Flags, 0));
}

FC_API CUresult cuStreamCreateWithPriority(CUstream *phStream, unsigned int flags, int priority)
{
    FC_BEGIN();
    FC_RETURN(fc_stream_create(phStream, flags, priority));
}

FC_API CUresult cuStreamDestroy(CUstream hStream)
{
    FC_BEGIN();
    FC_RETURN(fc_stream_destroy(hStream));
}

FC_API CUresult cuStreamDestroy_v2(CUstream hStream)
{
    FC_BEGIN();
    FC_RETURN(fc_stream_destroy(hStream));
}

FC_API CUresult cuStreamSynchronize(CUstream hStream)
{
    FC_BEGIN();
    FC_RETURN(fc_stream_sync(hStream, 0, 1));
}

FC_API CUresult cuStreamSynchronize_ptsz(CUstream hStream)
{
    FC_BEGIN();
    FC_RETURN(fc_stream_sync(hStream, 1, 1));
}

FC_API CUresult cuStreamQuery(CUstream hStream)
{
    FC_BEGIN();
    FC_RETURN(fc_stream_sync(hStream, 0, 0));
}

FC_API CUresult cuStreamQuery_ptsz(CUstream hStream)
{
    FC_BEGIN();
    FC_RETURN(fc_stream_sync(hStream, 1, 0));
}

FC_API CUresult cuStreamGetCtx(CUstream hStream, CUcontext *pctx)
{
    FC_BEGIN();
    FC_RETURN(fc_stream_ctx(hStream, 0, pctx, NULL));
}

FC_API CUresult cuStreamGetCtx_ptsz(CUstream hStream, CUcontext *pctx)
{
    FC_BEGIN();
    FC_RETURN(fc_stream_ctx(hStream, 1, pctx, NULL));
}

FC_API CUresult cuStreamGetCtx_v2(CUstream hStream, CUcontext *pCtx, CUgreenCtx *pGreenCtx)
{
    FC_BEGIN();
    FC_RETURN(fc_stream_ctx(hStream, 0, pCtx, pGreenCtx));
}

FC_API CUresult cuStreamGetCtx_v2_ptsz(CUstream hStream, CUcontext *pCtx, CUgreenCtx *pGreenCtx)
{
    FC_BEGIN();
    FC_RETURN(fc_stream_ctx(hStream, 1, pCtx, pGreenCtx));
}

FC_API CUresult cuStreamWaitEvent(CUstream hStream, CUevent hEvent, unsigned int Flags)
{
    FC_BEGIN();
    FC_RETURN(fc_stream_wait(hStream, 0, hEvent));
}

FC_API CUresult cuStreamWaitEvent_ptsz(CUstream hStream, CUevent hEvent, unsigned int Flags)
{
    FC_BEGIN();
    FC_RETURN(fc_stream_wait(hStream, 1, hEvent));
}

FC_API CUresult cuStreamWriteValue32(CUstream stream, CUdeviceptr addr, cuuint32_t value, unsigned int flags)
{
    FC_BEGIN();
    FC_RETURN(fc_write(stream, 0, addr, value, 4));
}

FC_API CUresult cuStreamWriteValue32_ptsz(CUstream stream, CUdeviceptr addr, cuuint32_t value, unsigned int flags)
{
    FC_BEGIN();
    FC_RETURN(fc_write(stream, 1, addr, value, 4));
}

FC_API CUresult cuStreamWriteValue32_v2(CUstream stream, CUdeviceptr addr, cuuint32_t value, unsigned int flags)
{
    FC_BEGIN();
    FC_RETURN(fc_write(stream, 0, addr, value, 4));
}

FC_API CUresult cuStreamWriteValue32_v2_ptsz(CUstream stream, CUdeviceptr addr, cuuint32_t value, unsigned int flags)
{
    FC_BEGIN();
    FC_RETURN(fc_write(stream, 1, addr, value, 4));
}

FC_API CUresult cuStreamWriteValue64(CUstream stream, CUdeviceptr addr, cuuint64_t value, unsigned int flags)
{
    FC_BEGIN();
    FC_RETURN(fc_write(stream, 0, addr, value, 8));
}

FC_API CUresult cuStreamWriteValue64_ptsz(CUstream stream, CUdeviceptr addr, cuuint64_t value, unsigned int flags)
{
    FC_BEGIN();
    FC_RETURN(fc_write(stream, 1, addr, value, 8));
}

FC_API CUresult cuStreamWriteValue64_v2(CUstream stream, CUdeviceptr addr, cuuint64_t value, unsigned int flags)
{
    FC_BEGIN();
    FC_RETURN(fc_write(stream, 0, addr, value, 8));
}

FC_API CUresult cuStreamWriteValue64_v2_ptsz(CUstream stream, CUdeviceptr addr, cuuint64_t value, unsigned int flags)
{
    FC_BEGIN();
    FC_RETURN(fc_write(stream, 1, addr, value, 8));
}

/* ---- launches --------------------------------------------------------------------------------------------- */

/* Every launch form comes here. A sticky context fails the launch at once, before the arguments are looked at. */
static CUresult fc_launch(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                          CUstream h, int pt, void **params)
{
    struct fc_stream *s;
    struct fc_func *fn;
    struct fc_op *op;
    CUresult rc = fc_work_stream(h, pt, &s);
    if (rc)
        return rc;
    if (!(fn = fc_func_valid(f)))
        return CUDA_ERROR_INVALID_HANDLE;
    if (!gx || !gy || !gz || !bx || !by || !bz)
        return CUDA_ERROR_INVALID_VALUE;
    if ((rc = fc_new_op(FC_OP_KERNEL, &op)))
        return rc;
    op->func = fn;
    op->grid[0] = gx, op->grid[1] = gy, op->grid[2] = gz;
    op->block[0] = bx, op->block[1] = by, op->block[2] = bz;
    if (params && params[0])
        memcpy(&op->arg0, params[0], sizeof op->arg0); /* the tests' kernels take a pointer first */
    return fc_enqueue(s, op);
}

static CUresult fc_launch_ex(const CUlaunchConfig *c, CUfunction f, int pt, void **params)
{
    if (!c)
        return CUDA_ERROR_INVALID_VALUE;
    return fc_launch(f, c->gridDimX, c->gridDimY, c->gridDimZ, c->blockDimX, c->blockDimY, c->blockDimZ, c->hStream, pt,
                     params);
}

static CUresult fc_host_func(CUstream h, int pt, CUhostFn fn, void *user)
{
    struct fc_stream *s;
    struct fc_op *op;
    CUresult rc = fc_work_stream(h, pt, &s);
    if (rc)
        return rc;
    if (!fn)
        return CUDA_ERROR_INVALID_VALUE;
    if ((rc = fc_new_op(FC_OP_HOSTFN, &op)))
        return rc;
    op->fn = fn;
    op->user = user;
    return fc_enqueue(s, op);
}

FC_API CUresult cuLaunchKernel(CUfunction f, unsigned int gridDimX, unsigned int gridDimY, unsigned int gridDimZ,
                               unsigned int blockDimX, unsigned int blockDimY, unsigned int blockDimZ,
                               unsigned int sharedMemBytes, CUstream hStream, void **kernelParams, void **extra)
{
    FC_BEGIN();
    FC_RETURN(fc_launch(f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ, hStream, 0, kernelParams));
}

FC_API CUresult cuLaunchKernel_ptsz(CUfunction f, unsigned int gridDimX, unsigned int gridDimY, unsigned int gridDimZ,
                                    unsigned int blockDimX, unsigned int blockDimY, unsigned int blockDimZ,
                                    unsigned int sharedMemBytes, CUstream hStream, void **kernelParams, void **extra)
{
    FC_BEGIN();
    FC_RETURN(fc_launch(f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ, hStream, 1, kernelParams));
}

FC_API CUresult cuLaunchCooperativeKernel(CUfunction f, unsigned int gridDimX, unsigned int gridDimY,
                                          unsigned int gridDimZ, unsigned int blockDimX, unsigned int blockDimY,
                                          unsigned int blockDimZ, unsigned int sharedMemBytes, CUstream hStream,
                                          void **kernelParams)
{
    FC_BEGIN();
    FC_RETURN(fc_launch(f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ, hStream, 0, kernelParams));
}

FC_API CUresult cuLaunchCooperativeKernel_ptsz(CUfunction f, unsigned int gridDimX, unsigned int gridDimY,
                                               unsigned int gridDimZ, unsigned int blockDimX, unsigned int blockDimY,
                                               unsigned int blockDimZ, unsigned int sharedMemBytes, CUstream hStream,
                                               void **kernelParams)
{
    FC_BEGIN();
    FC_RETURN(fc_launch(f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ, hStream, 1, kernelParams));
}

FC_API CUresult cuLaunchKernelEx(const CUlaunchConfig *config, CUfunction f, void **kernelParams, void **extra)
{
    FC_BEGIN();
    FC_RETURN(fc_launch_ex(config, f, 0, kernelParams));
}

FC_API CUresult cuLaunchKernelEx_ptsz(const CUlaunchConfig *config, CUfunction f, void **kernelParams, void **extra)
{
    FC_BEGIN();
    FC_RETURN(fc_launch_ex(config, f, 1, kernelParams));
}

FC_API CUresult cuLaunchHostFunc(CUstream hStream, CUhostFn fn, void *userData)
{
    FC_BEGIN();
    FC_RETURN(fc_host_func(hStream, 0, fn, userData));
}

FC_API CUresult cuLaunchHostFunc_ptsz(CUstream hStream, CUhostFn fn, void *userData)
{
    FC_BEGIN();
    FC_RETURN(fc_host_func(hStream, 1, fn, userData));
}

/* ---- events ----------------------------------------------------------------------------------------------- */

static CUresult fc_event_create(CUevent *ph, unsigned flags)
{
    struct fc_ctx *c;
    CUresult rc = fc_live(&c);
    if (rc)
        return rc;
    if (!ph)
        return CUDA_ERROR_INVALID_VALUE;
    struct fc_event *e = calloc(1, sizeof *e);
    if (!e)
        return CUDA_ERROR_OUT_OF_MEMORY;
    e->ctx = c;
    e->flags = flags;
    e->next = fc_g.events;
    fc_g.events = e;
    *ph = (CUevent)e;
    return CUDA_SUCCESS;
}

static CUresult fc_event_record(CUevent hev, CUstream h, int pt)
{
    struct fc_stream *s;
    struct fc_event *ev;
    struct fc_op *op;
    CUresult rc = fc_work_stream(h, pt, &s);
    if (rc)
        return rc;
    if (!(ev = fc_event_valid(hev)))
        return CUDA_ERROR_INVALID_HANDLE;
    if ((rc = fc_new_op(FC_OP_EVENT, &op)))
        return rc;
    op->event = ev;
    return fc_enqueue(s, op);
}

/* An event handle and its context, healthy. */
static CUresult fc_event_live(CUevent h, struct fc_event **ev)
{
    CUresult rc = fc_ready();
    if (rc)
        return rc;
    if (!(*ev = fc_event_valid(h)))
        return CUDA_ERROR_INVALID_HANDLE;
    return (*ev)->ctx->sticky;
}

/* Query and synchronize both run the recording stream up to the event (a query does not wait, wait 0). */
static CUresult fc_event_sync(CUevent h, int wait)
{
    struct fc_event *ev = NULL;
    CUresult rc = fc_event_live(h, &ev);
    if (!rc)
        rc = fc_drain_event(ev, wait);
    if (wait && ev)
        fc_printf_flush(ev->ctx);
    return rc;
}

static CUresult fc_event_destroy(CUevent h)
{
    struct fc_event *ev;
    CUresult rc = fc_event_live(h, &ev);
    if (rc)
        return rc;
    for (struct fc_event **pp = &fc_g.events; *pp; pp = &(*pp)->next) {
        if (*pp == ev) {
            *pp = ev->next;
            break;
        }
    }
    free(ev);
    return CUDA_SUCCESS;
}

static CUresult fc_event_elapsed(float *ms, CUevent a, CUevent b)
{
    struct fc_event *ea, *eb;
    CUresult rc = fc_event_live(a, &ea);
    if (!rc)
        rc = fc_event_live(b, &eb);
    if (rc)
        return rc;
    if (!ms)
        return CUDA_ERROR_INVALID_VALUE;
    if (!ea->stream || !eb->stream)
        return CUDA_ERROR_INVALID_HANDLE;
    if (!fc_event_done(ea) || !fc_event_done(eb))
        return CUDA_ERROR_NOT_READY;
    *ms = 1.0f;
    return CUDA_SUCCESS;
}

FC_API CUresult cuEventCreate(CUevent *phEvent, unsigned int Flags)
{
    FC_BEGIN();
    FC_RETURN(fc_event_create(phEvent, Flags));
}

FC_API CUresult cuEventRecord(CUevent hEvent, CUstream hStream)
{
    FC_BEGIN();
    FC_RETURN(fc_event_record(hEvent, hStream, 0));
}

FC_API CUresult cuEventRecord_ptsz(CUevent hEvent, CUstream hStream)
{
    FC_BEGIN();
    FC_RETURN(fc_event_record(hEvent, hStream, 1));
}

FC_API CUresult cuEventRecordWithFlags(CUevent hEvent, CUstream hStream, unsigned int flags)
{
    FC_BEGIN();
    FC_RETURN(fc_event_record(hEvent, hStream, 0));
}

FC_API CUresult cuEventRecordWithFlags_ptsz(CUevent hEvent, CUstream hStream, unsigned int flags)
{
    FC_BEGIN();
    FC_RETURN(fc_event_record(hEvent, hStream, 1));
}

FC_API CUresult cuEventSynchronize(CUevent hEvent)
{
    FC_BEGIN();
    FC_RETURN(fc_event_sync(hEvent, 1));
}

FC_API CUresult cuEventQuery(CUevent hEvent)
{
    FC_BEGIN();
    FC_RETURN(fc_event_sync(hEvent, 0));
}

FC_API CUresult cuEventDestroy(CUevent hEvent)
{
    FC_BEGIN();
    FC_RETURN(fc_event_destroy(hEvent));
}

FC_API CUresult cuEventDestroy_v2(CUevent hEvent)
{
    FC_BEGIN();
    FC_RETURN(fc_event_destroy(hEvent));
}

FC_API CUresult cuEventElapsedTime(float *pMilliseconds, CUevent hStart, CUevent hEnd)
{
    FC_BEGIN();
    FC_RETURN(fc_event_elapsed(pMilliseconds, hStart, hEnd));
}

FC_API CUresult cuEventElapsedTime_v2(float *pMilliseconds, CUevent hStart, CUevent hEnd)
{
    FC_BEGIN();
    FC_RETURN(fc_event_elapsed(pMilliseconds, hStart, hEnd));
}
