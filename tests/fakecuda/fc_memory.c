/* Memory in the simulated driver: cuMemAlloc and its kin (device, host, pinned, async), and the copies and sets
 * between them, each a thin shell of fc_begin/fc_end around a static helper shared by its legacy and per-thread
 * twins, as in fc_api.c; then the allocations behind them (fc_mem_alloc, the address lookups, frees). Pitched and managed memory, pools and the virtual memory API are in fc_vmm.c. */
#include "fc_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

/* ---- memory ----------------------------------------------------------------------------------------------- */

/* A pinned allocation while any global-mode capture is under way is prohibited: like the driver, the fake
 * refuses it and invalidates those captures (their end returns CUDA_ERROR_STREAM_CAPTURE_INVALIDATED). */
static CUresult fc_capture_forbids_alloc(void)
{
    int hit = 0;
    for (unsigned i = 0; i < fc_g.nctx; i++)
        for (struct fc_stream *s = fc_g.ctx[i]->streams; s; s = s->next)
            if (s->capture && s->capture->global) {
                s->capture->invalidated = 1;
                hit = 1;
            }
    return hit ? CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED : CUDA_SUCCESS;
}

static CUresult fc_alloc(enum fc_memkind kind, size_t size, void **host, CUdeviceptr *dptr)
{
    struct fc_ctx *c;
    struct fc_mem *m;
    CUresult rc = fc_live(&c);
    if (rc)
        return rc;
    if (!host && !dptr)
        return CUDA_ERROR_INVALID_VALUE;
    if ((rc = fc_mem_alloc(kind, size, &m)))
        return rc;
    if (kind == FC_MEM_HOST)
        m->owner = c;
    if (host)
        *host = m->host;
    if (dptr)
        *dptr = m->dptr;
    return CUDA_SUCCESS;
}

/* Frees run all queued work first, so that no queued write or copy lands in freed memory. */
static CUresult fc_free(enum fc_memkind kind, CUdeviceptr d, const void *host)
{
    struct fc_ctx *c;
    CUresult rc = fc_live(&c);
    if (rc)
        return rc;
    if (kind == FC_MEM_DEVICE && d == 0)
        return CUDA_SUCCESS;
    fc_drain_all();
    if (c->sticky)
        return c->sticky;
    struct fc_mem *m = kind == FC_MEM_DEVICE ? fc_mem_by_dptr(d, 1) : fc_mem_by_host(host);
    if (!m || m->kind != kind || (kind == FC_MEM_DEVICE ? m->dptr != d : m->host != host))
        return CUDA_ERROR_INVALID_VALUE;
    fc_mem_free(m);
    return CUDA_SUCCESS;
}

static CUresult fc_host_dptr(CUdeviceptr *pd, void *p, unsigned flags)
{
    struct fc_ctx *c;
    struct fc_mem *m;
    CUresult rc = fc_live(&c);
    if (rc)
        return rc;
    if (!pd || flags || !(m = fc_mem_by_host(p)))
        return CUDA_ERROR_INVALID_VALUE;
    *pd = m->dptr + (CUdeviceptr)((char *)p - m->host);
    return CUDA_SUCCESS;
}

static CUresult fc_alloc_async(CUdeviceptr *d, size_t size, CUstream h, int pt)
{
    struct fc_stream *s;
    struct fc_mem *m;
    CUresult rc = fc_work_stream(h, pt, &s);
    if (rc)
        return rc;
    if (s->capture)
        return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED; /* not modelled */
    if (!d)
        return CUDA_ERROR_INVALID_VALUE;
    if ((rc = fc_mem_alloc(FC_MEM_DEVICE, size, &m)))
        return rc;
    *d = m->dptr;
    return CUDA_SUCCESS;
}

static CUresult fc_free_async(CUdeviceptr d, CUstream h, int pt)
{
    struct fc_stream *s;
    struct fc_mem *m;
    struct fc_op *op;
    CUresult rc = fc_work_stream(h, pt, &s);
    if (rc)
        return rc;
    if (s->capture)
        return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    if (!(m = fc_mem_by_dptr(d, 1)) || m->dptr != d || m->kind != FC_MEM_DEVICE)
        return CUDA_ERROR_INVALID_VALUE;
    if ((rc = fc_new_op(FC_OP_FREE, &op)))
        return rc;
    op->user = m;
    return fc_enqueue(s, op);
}

FC_API CUresult cuMemAlloc_v2(CUdeviceptr *dptr, size_t bytesize)
{
    FC_BEGIN();
    FC_RETURN(dptr ? fc_alloc(FC_MEM_DEVICE, bytesize, NULL, dptr) : CUDA_ERROR_INVALID_VALUE);
}

FC_API CUresult cuMemFree_v2(CUdeviceptr dptr)
{
    FC_BEGIN();
    FC_RETURN(fc_free(FC_MEM_DEVICE, dptr, NULL));
}

FC_API CUresult cuMemAllocHost_v2(void **pp, size_t bytesize)
{
    FC_BEGIN();
    CUresult rc = fc_capture_forbids_alloc();
    FC_RETURN(rc ? rc : pp ? fc_alloc(FC_MEM_HOST, bytesize, pp, NULL) : CUDA_ERROR_INVALID_VALUE);
}

FC_API CUresult cuMemHostAlloc(void **pp, size_t bytesize, unsigned int Flags)
{
    FC_BEGIN();
    CUresult rc = fc_capture_forbids_alloc();
    FC_RETURN(rc ? rc : pp ? fc_alloc(FC_MEM_HOST, bytesize, pp, NULL) : CUDA_ERROR_INVALID_VALUE);
}

FC_API CUresult cuMemFreeHost(void *p)
{
    FC_BEGIN();
    FC_RETURN(fc_free(FC_MEM_HOST, 0, p));
}

FC_API CUresult cuMemHostGetDevicePointer_v2(CUdeviceptr *pdptr, void *p, unsigned int Flags)
{
    FC_BEGIN();
    FC_RETURN(fc_host_dptr(pdptr, p, Flags));
}

FC_API CUresult cuMemAllocAsync(CUdeviceptr *dptr, size_t bytesize, CUstream hStream)
{
    FC_BEGIN();
    FC_RETURN(fc_alloc_async(dptr, bytesize, hStream, 0));
}

FC_API CUresult cuMemAllocAsync_ptsz(CUdeviceptr *dptr, size_t bytesize, CUstream hStream)
{
    FC_BEGIN();
    FC_RETURN(fc_alloc_async(dptr, bytesize, hStream, 1));
}

FC_API CUresult cuMemFreeAsync(CUdeviceptr dptr, CUstream hStream)
{
    FC_BEGIN();
    FC_RETURN(fc_free_async(dptr, hStream, 0));
}

FC_API CUresult cuMemFreeAsync_ptsz(CUdeviceptr dptr, CUstream hStream)
{
    FC_BEGIN();
    FC_RETURN(fc_free_async(dptr, hStream, 1));
}

/* ---- memcpy and memset ------------------------------------------------------------------------------------ */

/* How a memcpy argument is addressed: a plain host pointer, a device address, or either (unified addressing). */
enum fc_addr { FC_A_HOST, FC_A_DEV, FC_A_ANY };

static CUresult fc_xlate(CUdeviceptr a, enum fc_addr kind, size_t n, void **out)
{
    if (kind == FC_A_HOST) {
        *out = (void *)(uintptr_t)a;
        return a ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
    }
    return fc_dev_addr(a, n, kind == FC_A_ANY, out);
}

/* Synchronous forms run the whole context first and copy at once; Async forms queue a copy that happens when
 * the op runs (so a host source is read then, as the device would). */
static CUresult fc_memcpy(CUdeviceptr dst, enum fc_addr dk, CUdeviceptr src, enum fc_addr sk, size_t n, int async,
                          CUstream h, int pt)
{
    struct fc_stream *s = NULL;
    struct fc_ctx *c;
    struct fc_op *op;
    void *d, *sp;
    CUresult rc;
    if (async)
        rc = fc_work_stream(h, pt, &s);
    else if (!(rc = fc_live(&c)))
        rc = fc_drain_ctx(c);
    if (rc || n == 0)
        return rc;
    if ((rc = fc_xlate(dst, dk, n, &d)) || (rc = fc_xlate(src, sk, n, &sp)))
        return rc;
    if (!async) {
        memmove(d, sp, n);
        return CUDA_SUCCESS;
    }
    if ((rc = fc_new_op(FC_OP_COPY, &op)))
        return rc;
    op->dst = d;
    op->src = sp;
    op->n = n;
    return fc_enqueue(s, op);
}

static CUresult fc_memcpy_peer(CUdeviceptr dst, CUcontext dctx, CUdeviceptr src, CUcontext sctx, size_t n, int async,
                               CUstream h, int pt)
{
    struct fc_ctx *dc, *sc;
    CUresult rc = fc_ready();
    if (!rc)
        rc = fc_ctx_valid(dctx, &dc);
    if (!rc)
        rc = fc_ctx_valid(sctx, &sc);
    if (!rc && !async)
        rc = fc_drain_ctx(dc);
    if (!rc && !async)
        rc = fc_drain_ctx(sc);
    if (!rc)
        rc = dc->sticky ? dc->sticky : sc->sticky;
    if (rc)
        return rc;
    if (!async) {
        void *d, *sp;
        if (n == 0)
            return CUDA_SUCCESS;
        if ((rc = fc_xlate(dst, FC_A_DEV, n, &d)) || (rc = fc_xlate(src, FC_A_DEV, n, &sp)))
            return rc;
        memmove(d, sp, n);
        return CUDA_SUCCESS;
    }
    return fc_memcpy(dst, FC_A_DEV, src, FC_A_DEV, n, 1, h, pt);
}

static CUresult fc_memset(CUdeviceptr dst, unsigned value, unsigned width, size_t n, int async, CUstream h, int pt)
{
    struct fc_stream *s = NULL;
    struct fc_ctx *c;
    struct fc_op *op;
    void *d;
    CUresult rc;
    if (async)
        rc = fc_work_stream(h, pt, &s);
    else if (!(rc = fc_live(&c)))
        rc = fc_drain_ctx(c);
    if (rc || n == 0)
        return rc;
    if (dst % width || n > SIZE_MAX / width || fc_dev_addr(dst, n * width, 0, &d))
        return CUDA_ERROR_INVALID_VALUE;
    if (!async) {
        unsigned long long v = value;
        for (size_t i = 0; i < n; i++)
            memcpy((char *)d + i * width, &v, width);
        return CUDA_SUCCESS;
    }
    if ((rc = fc_new_op(FC_OP_SET, &op)))
        return rc;
    op->dst = d;
    op->n = n;
    op->value = value;
    op->width = width;
    return fc_enqueue(s, op);
}

#define H(p) ((CUdeviceptr)(uintptr_t)(p))

FC_API CUresult cuMemcpy(CUdeviceptr dst, CUdeviceptr src, size_t ByteCount)
{
    FC_BEGIN();
    FC_RETURN(fc_memcpy(dst, FC_A_ANY, src, FC_A_ANY, ByteCount, 0, NULL, 0));
}

FC_API CUresult cuMemcpy_ptds(CUdeviceptr dst, CUdeviceptr src, size_t ByteCount)
{
    FC_BEGIN();
    FC_RETURN(fc_memcpy(dst, FC_A_ANY, src, FC_A_ANY, ByteCount, 0, NULL, 1));
}

FC_API CUresult cuMemcpyAsync(CUdeviceptr dst, CUdeviceptr src, size_t ByteCount, CUstream hStream)
{
    FC_BEGIN();
    FC_RETURN(fc_memcpy(dst, FC_A_ANY, src, FC_A_ANY, ByteCount, 1, hStream, 0));
}

FC_API CUresult cuMemcpyAsync_ptsz(CUdeviceptr dst, CUdeviceptr src, size_t ByteCount, CUstream hStream)
{
    FC_BEGIN();
    FC_RETURN(fc_memcpy(dst, FC_A_ANY, src, FC_A_ANY, ByteCount, 1, hStream, 1));
}

FC_API CUresult cuMemcpyHtoD_v2(CUdeviceptr dstDevice, const void *srcHost, size_t ByteCount)
{
    FC_BEGIN();
    FC_RETURN(fc_memcpy(dstDevice, FC_A_DEV, H(srcHost), FC_A_HOST, ByteCount, 0, NULL, 0));
}

FC_API CUresult cuMemcpyHtoD_v2_ptds(CUdeviceptr dstDevice, const void *srcHost, size_t ByteCount)
{
    FC_BEGIN();
    FC_RETURN(fc_memcpy(dstDevice, FC_A_DEV, H(srcHost), FC_A_HOST, ByteCount, 0, NULL, 1));
}

FC_API CUresult cuMemcpyDtoH_v2(void *dstHost, CUdeviceptr srcDevice, size_t ByteCount)
{
    FC_BEGIN();
    FC_RETURN(fc_memcpy(H(dstHost), FC_A_HOST, srcDevice, FC_A_DEV, ByteCount, 0, NULL, 0));
}

FC_API CUresult cuMemcpyDtoH_v2_ptds(void *dstHost, CUdeviceptr srcDevice, size_t ByteCount)
{
    FC_BEGIN();
    FC_RETURN(fc_memcpy(H(dstHost), FC_A_HOST, srcDevice, FC_A_DEV, ByteCount, 0, NULL, 1));
}

FC_API CUresult cuMemcpyDtoD_v2(CUdeviceptr dstDevice, CUdeviceptr srcDevice, size_t ByteCount)
{
    FC_BEGIN();
    FC_RETURN(fc_memcpy(dstDevice, FC_A_DEV, srcDevice, FC_A_DEV, ByteCount, 0, NULL, 0));
}

FC_API CUresult cuMemcpyDtoD_v2_ptds(CUdeviceptr dstDevice, CUdeviceptr srcDevice, size_t ByteCount)
{
    FC_BEGIN();
    FC_RETURN(fc_memcpy(dstDevice, FC_A_DEV, srcDevice, FC_A_DEV, ByteCount, 0, NULL, 1));
}

FC_API CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr dstDevice, const void *srcHost, size_t ByteCount, CUstream hStream)
{
    FC_BEGIN();
    FC_RETURN(fc_memcpy(dstDevice, FC_A_DEV, H(srcHost), FC_A_HOST, ByteCount, 1, hStream, 0));
}

FC_API CUresult cuMemcpyHtoDAsync_v2_ptsz(CUdeviceptr dstDevice, const void *srcHost, size_t ByteCount,
                                          CUstream hStream)
{
    FC_BEGIN();
    FC_RETURN(fc_memcpy(dstDevice, FC_A_DEV, H(srcHost), FC_A_HOST, ByteCount, 1, hStream, 1));
}

FC_API CUresult cuMemcpyDtoHAsync_v2(void *dstHost, CUdeviceptr srcDevice, size_t ByteCount, CUstream hStream)
{
    FC_BEGIN();
    FC_RETURN(fc_memcpy(H(dstHost), FC_A_HOST, srcDevice, FC_A_DEV, ByteCount, 1, hStream, 0));
}

FC_API CUresult cuMemcpyDtoHAsync_v2_ptsz(void *dstHost, CUdeviceptr srcDevice, size_t ByteCount, CUstream hStream)
{
    FC_BEGIN();
    FC_RETURN(fc_memcpy(H(dstHost), FC_A_HOST, srcDevice, FC_A_DEV, ByteCount, 1, hStream, 1));
}

FC_API CUresult cuMemcpyDtoDAsync_v2(CUdeviceptr dstDevice, CUdeviceptr srcDevice, size_t ByteCount, CUstream hStream)
{
    FC_BEGIN();
    FC_RETURN(fc_memcpy(dstDevice, FC_A_DEV, srcDevice, FC_A_DEV, ByteCount, 1, hStream, 0));
}

FC_API CUresult cuMemcpyDtoDAsync_v2_ptsz(CUdeviceptr dstDevice, CUdeviceptr srcDevice, size_t ByteCount,
                                          CUstream hStream)
{
    FC_BEGIN();
    FC_RETURN(fc_memcpy(dstDevice, FC_A_DEV, srcDevice, FC_A_DEV, ByteCount, 1, hStream, 1));
}

FC_API CUresult cuMemcpyPeer(CUdeviceptr dstDevice, CUcontext dstContext, CUdeviceptr srcDevice, CUcontext srcContext,
                             size_t ByteCount)
{
    FC_BEGIN();
    FC_RETURN(fc_memcpy_peer(dstDevice, dstContext, srcDevice, srcContext, ByteCount, 0, NULL, 0));
}

FC_API CUresult cuMemcpyPeer_ptds(CUdeviceptr dstDevice, CUcontext dstContext, CUdeviceptr srcDevice,
                                  CUcontext srcContext, size_t ByteCount)
{
    FC_BEGIN();
    FC_RETURN(fc_memcpy_peer(dstDevice, dstContext, srcDevice, srcContext, ByteCount, 0, NULL, 1));
}

FC_API CUresult cuMemcpyPeerAsync(CUdeviceptr dstDevice, CUcontext dstContext, CUdeviceptr srcDevice,
                                  CUcontext srcContext, size_t ByteCount, CUstream hStream)
{
    FC_BEGIN();
    FC_RETURN(fc_memcpy_peer(dstDevice, dstContext, srcDevice, srcContext, ByteCount, 1, hStream, 0));
}

FC_API CUresult cuMemcpyPeerAsync_ptsz(CUdeviceptr dstDevice, CUcontext dstContext, CUdeviceptr srcDevice,
                                       CUcontext srcContext, size_t ByteCount, CUstream hStream)
{
    FC_BEGIN();
    FC_RETURN(fc_memcpy_peer(dstDevice, dstContext, srcDevice, srcContext, ByteCount, 1, hStream, 1));
}

FC_API CUresult cuMemsetD8_v2(CUdeviceptr dstDevice, unsigned char uc, size_t N)
{
    FC_BEGIN();
    FC_RETURN(fc_memset(dstDevice, uc, 1, N, 0, NULL, 0));
}

FC_API CUresult cuMemsetD8_v2_ptds(CUdeviceptr dstDevice, unsigned char uc, size_t N)
{
    FC_BEGIN();
    FC_RETURN(fc_memset(dstDevice, uc, 1, N, 0, NULL, 1));
}

FC_API CUresult cuMemsetD16_v2(CUdeviceptr dstDevice, unsigned short us, size_t N)
{
    FC_BEGIN();
    FC_RETURN(fc_memset(dstDevice, us, 2, N, 0, NULL, 0));
}

FC_API CUresult cuMemsetD16_v2_ptds(CUdeviceptr dstDevice, unsigned short us, size_t N)
{
    FC_BEGIN();
    FC_RETURN(fc_memset(dstDevice, us, 2, N, 0, NULL, 1));
}

FC_API CUresult cuMemsetD32_v2(CUdeviceptr dstDevice, unsigned int ui, size_t N)
{
    FC_BEGIN();
    FC_RETURN(fc_memset(dstDevice, ui, 4, N, 0, NULL, 0));
}

FC_API CUresult cuMemsetD32_v2_ptds(CUdeviceptr dstDevice, unsigned int ui, size_t N)
{
    FC_BEGIN();
    FC_RETURN(fc_memset(dstDevice, ui, 4, N, 0, NULL, 1));
}

FC_API CUresult cuMemsetD8Async(CUdeviceptr dstDevice, unsigned char uc, size_t N, CUstream hStream)
{
    FC_BEGIN();
    FC_RETURN(fc_memset(dstDevice, uc, 1, N, 1, hStream, 0));
}

FC_API CUresult cuMemsetD8Async_ptsz(CUdeviceptr dstDevice, unsigned char uc, size_t N, CUstream hStream)
{
    FC_BEGIN();
    FC_RETURN(fc_memset(dstDevice, uc, 1, N, 1, hStream, 1));
}

FC_API CUresult cuMemsetD16Async(CUdeviceptr dstDevice, unsigned short us, size_t N, CUstream hStream)
{
    FC_BEGIN();
    FC_RETURN(fc_memset(dstDevice, us, 2, N, 1, hStream, 0));
}

FC_API CUresult cuMemsetD16Async_ptsz(CUdeviceptr dstDevice, unsigned short us, size_t N, CUstream hStream)
{
    FC_BEGIN();
    FC_RETURN(fc_memset(dstDevice, us, 2, N, 1, hStream, 1));
}

FC_API CUresult cuMemsetD32Async(CUdeviceptr dstDevice, unsigned int ui, size_t N, CUstream hStream)
{
    FC_BEGIN();
    FC_RETURN(fc_memset(dstDevice, ui, 4, N, 1, hStream, 0));
}

FC_API CUresult cuMemsetD32Async_ptsz(CUdeviceptr dstDevice, unsigned int ui, size_t N, CUstream hStream)
{
    FC_BEGIN();
    FC_RETURN(fc_memset(dstDevice, ui, 4, N, 1, hStream, 1));
}

/* ---- the allocations behind the entry points ----------------------------------------------------------------------------------------------- */

CUresult fc_mem_alloc(enum fc_memkind kind, size_t size, struct fc_mem **out)
{
    if (size == 0)
        return CUDA_ERROR_INVALID_VALUE;
    struct fc_mem *m = calloc(1, sizeof *m);
    void *p = NULL;
    if (!m)
        return CUDA_ERROR_OUT_OF_MEMORY;
    if (kind == FC_MEM_HOST) {
        /* Pinned memory is unmapped when freed (or when its context dies): a tool still reading it faults, as
         * it would on the real driver. */
        size_t len = (size + 4095) & ~(size_t)4095;
        p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED) {
            free(m);
            return CUDA_ERROR_OUT_OF_MEMORY;
        }
        m->mapped = len;
    } else if (posix_memalign(&p, 256, size)) {
        free(m);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    memset(p, 0, size);
    m->kind = kind;
    m->host = p;
    m->size = size;
    m->dptr = (CUdeviceptr)(uintptr_t)p + (kind == FC_MEM_HOST ? FC_MAP_OFFSET : FC_DEV_OFFSET);
    m->next = fc_g.mems;
    fc_g.mems = m;
    *out = m;
    return CUDA_SUCCESS;
}

struct fc_mem *fc_mem_by_host(const void *p)
{
    uintptr_t a = (uintptr_t)p;
    for (struct fc_mem *m = fc_g.mems; m; m = m->next)
        if (m->kind == FC_MEM_HOST && a >= (uintptr_t)m->host && a - (uintptr_t)m->host < m->size)
            return m;
    return NULL;
}

/* The allocation holding [d, d+len) as a device range, or NULL. */
struct fc_mem *fc_mem_by_dptr(CUdeviceptr d, size_t len)
{
    for (struct fc_mem *m = fc_g.mems; m; m = m->next) {
        if (d < m->dptr)
            continue;
        CUdeviceptr off = d - m->dptr;
        if (off < m->size && len <= m->size - off)
            return m;
    }
    return NULL;
}

/* Translates a device address range to the host memory behind it. allow_host also accepts host pointers of
 * host-mapped memory, as unified addressing lets cuMemcpy do. */
CUresult fc_dev_addr(CUdeviceptr d, size_t len, int allow_host, void **out)
{
    struct fc_mem *m = fc_mem_by_dptr(d, len);
    if (m) {
        *out = m->host + (d - m->dptr);
        return CUDA_SUCCESS;
    }
    /* Adjacent mapped pieces of one physical allocation, mapped in its order, are one run of memory. */
    if ((m = fc_mem_by_dptr(d, 1)) != NULL && m->kind == FC_MEM_MAPPED) {
        struct fc_mem *p = m, *n;
        while ((n = fc_mem_by_dptr(p->dptr + p->size, 1)) != NULL && n->kind == FC_MEM_MAPPED &&
               n->dptr == p->dptr + p->size && n->host == p->host + p->size) {
            p = n;
            if (d + len <= p->dptr + p->size) {
                *out = m->host + (d - m->dptr);
                return CUDA_SUCCESS;
            }
        }
    }
    if (allow_host) {
        m = fc_mem_by_host((const void *)(uintptr_t)d);
        if (m && len <= m->size - ((uintptr_t)d - (uintptr_t)m->host)) {
            *out = (void *)(uintptr_t)d;
            return CUDA_SUCCESS;
        }
    }
    return CUDA_ERROR_INVALID_VALUE;
}

void fc_mem_free(struct fc_mem *m)
{
    for (struct fc_mem **pp = &fc_g.mems; *pp; pp = &(*pp)->next) {
        if (*pp == m) {
            *pp = m->next;
            if (m->mapped)
                munmap(m->host, m->mapped);
            else if (m->kind != FC_MEM_MAPPED)
                free(m->host); /* a mapping's memory is its physical allocation's */
            free(m);
            return;
        }
    }
}

void fc_mem_free_owned(struct fc_ctx *c)
{
    for (struct fc_mem **pp = &fc_g.mems; *pp;) {
        struct fc_mem *m = *pp;
        if (m->owner == c) {
            *pp = m->next;
            if (m->mapped)
                munmap(m->host, m->mapped);
            else
                free(m->host);
            free(m);
        } else {
            pp = &m->next;
        }
    }
}
