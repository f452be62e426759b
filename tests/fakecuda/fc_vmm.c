/* Allocations beyond cuMemAlloc in the simulated driver: pitched and managed memory, memory pools, and the virtual
 * memory API (addresses reserved, physical memory created, mapped piece by piece and unmapped, as PyTorch's
 * expandable segments use it). Mapped pieces are device memory like cuMemAlloc's to every copy and set; access
 * rights (cuMemSetAccess) are checked for a mapped range but not modelled. SPEC.md is the contract. */
#include "fc_internal.h"

#include <stdlib.h>
#include <string.h>

#define FC_GRANULARITY (2ull << 20)   /* cuMemGetAllocationGranularity's answer, as on an H200 */
#define FC_VA_BASE 0x4000000000000ULL /* reserved addresses start here, above every other device address */
#define FC_VA_END 0x8000000000000ULL  /* and end here */
#define FC_PITCH 512                  /* row alignment of pitched allocations */

/* A pool made by cuMemPoolCreate (its allocations are ordinary device memory). */
struct fc_pool {
    int alive;            /* 0 after cuMemPoolDestroy; kept so stale handles are recognised */
    struct fc_pool *next; /* registry link */
};

/* Addresses reserved by cuMemAddressReserve. */
struct fc_reserve {
    CUdeviceptr base;        /* first address */
    size_t size;             /* bytes */
    struct fc_reserve *next; /* registry link */
};

/* A physical allocation made by cuMemCreate; its handle is this struct's address. */
struct fc_phys {
    char *mem;            /* the backing store, zeroed */
    size_t size;          /* bytes */
    int released;         /* cuMemRelease was called: it goes once no mapping shows it */
    int maps;             /* mappings showing it */
    struct fc_phys *next; /* registry link */
};

static struct fc_pool *fc_pools;            /* every pool ever made */
static struct fc_reserve *fc_reserves;      /* live reservations */
static struct fc_phys *fc_physs;            /* live physical allocations */
static CUdeviceptr fc_va_next = FC_VA_BASE; /* where the next reservation without a usable hint goes */

static CUresult fc_device_alloc(CUdeviceptr *d, size_t size)
{
    struct fc_mem *m;
    CUresult rc = fc_mem_alloc(FC_MEM_DEVICE, size, &m);
    if (rc)
        return rc;
    *d = m->dptr;
    return CUDA_SUCCESS;
}

/* ---- pitched, managed, pools ------------------------------------------------------------------------------ */

FC_API CUresult cuMemAllocPitch_v2(CUdeviceptr *dptr, size_t *pitch, size_t w, size_t h, unsigned int elem)
{
    FC_BEGIN();
    CUresult rc = fc_live(NULL);
    if (rc)
        FC_RETURN(rc);
    if (!dptr || !pitch || !w || !h || (elem != 4 && elem != 8 && elem != 16))
        FC_RETURN(CUDA_ERROR_INVALID_VALUE);
    size_t p = (w + FC_PITCH - 1) / FC_PITCH * FC_PITCH;
    if (h > SIZE_MAX / p)
        FC_RETURN(CUDA_ERROR_OUT_OF_MEMORY);
    if ((rc = fc_device_alloc(dptr, p * h)))
        FC_RETURN(rc);
    *pitch = p;
    FC_RETURN(CUDA_SUCCESS);
}

FC_API CUresult cuMemAllocManaged(CUdeviceptr *dptr, size_t bytesize, unsigned int flags)
{
    FC_BEGIN();
    CUresult rc = fc_live(NULL);
    if (rc)
        FC_RETURN(rc);
    if (!dptr || (flags != CU_MEM_ATTACH_GLOBAL && flags != CU_MEM_ATTACH_HOST))
        FC_RETURN(CUDA_ERROR_INVALID_VALUE);
    FC_RETURN(fc_device_alloc(dptr, bytesize));
}

static struct fc_pool *fc_pool_valid(CUmemoryPool h)
{
    for (struct fc_pool *p = fc_pools; p; p = p->next)
        if ((CUmemoryPool)p == h)
            return p->alive ? p : NULL;
    return NULL;
}

FC_API CUresult cuMemPoolCreate(CUmemoryPool *pool, const CUmemPoolProps *props)
{
    FC_BEGIN();
    CUresult rc = fc_live(NULL);
    if (rc)
        FC_RETURN(rc);
    if (!pool || !props || props->allocType != CU_MEM_ALLOCATION_TYPE_PINNED ||
        props->location.type != CU_MEM_LOCATION_TYPE_DEVICE || props->location.id < 0 ||
        props->location.id >= fc_g.ndev)
        FC_RETURN(CUDA_ERROR_INVALID_VALUE);
    struct fc_pool *p = calloc(1, sizeof *p);
    if (!p)
        FC_RETURN(CUDA_ERROR_OUT_OF_MEMORY);
    p->alive = 1;
    p->next = fc_pools;
    fc_pools = p;
    *pool = (CUmemoryPool)p;
    FC_RETURN(CUDA_SUCCESS);
}

FC_API CUresult cuMemPoolDestroy(CUmemoryPool pool)
{
    FC_BEGIN();
    struct fc_pool *p = fc_pool_valid(pool);
    if (!p)
        FC_RETURN(CUDA_ERROR_INVALID_VALUE);
    p->alive = 0;
    FC_RETURN(CUDA_SUCCESS);
}

FC_API CUresult cuMemPoolTrimTo(CUmemoryPool pool, size_t minBytesToKeep)
{
    FC_BEGIN();
    (void)minBytesToKeep;
    CUresult rc = fc_live(NULL);
    if (rc)
        FC_RETURN(rc);
    FC_RETURN(fc_pool_valid(pool) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE);
}

/* Allocates at once, as cuMemAllocAsync does in the fake; the stream must be able to take work. */
static CUresult fc_pool_alloc(CUdeviceptr *d, size_t size, CUmemoryPool pool, CUstream h, int pt)
{
    struct fc_stream *s;
    CUresult rc = fc_stream_get(h, pt, &s);
    if (rc || (rc = s->ctx->sticky))
        return rc;
    if (s->capture)
        return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED; /* not modelled */
    if (!d || !fc_pool_valid(pool))
        return CUDA_ERROR_INVALID_VALUE;
    return fc_device_alloc(d, size);
}

FC_API CUresult cuMemAllocFromPoolAsync(CUdeviceptr *dptr, size_t bytesize, CUmemoryPool pool, CUstream hStream)
{
    FC_BEGIN();
    FC_RETURN(fc_pool_alloc(dptr, bytesize, pool, hStream, 0));
}

FC_API CUresult cuMemAllocFromPoolAsync_ptsz(CUdeviceptr *dptr, size_t bytesize, CUmemoryPool pool, CUstream hStream)
{
    FC_BEGIN();
    FC_RETURN(fc_pool_alloc(dptr, bytesize, pool, hStream, 1));
}

/* ---- the virtual memory API ------------------------------------------------------------------------------- */

FC_API CUresult cuMemGetAllocationGranularity(size_t *granularity, const CUmemAllocationProp *prop,
                                              CUmemAllocationGranularity_flags option)
{
    FC_BEGIN();
    (void)option;
    if (!fc_g.inited)
        FC_RETURN(CUDA_ERROR_NOT_INITIALIZED);
    if (!granularity || !prop)
        FC_RETURN(CUDA_ERROR_INVALID_VALUE);
    *granularity = FC_GRANULARITY;
    FC_RETURN(CUDA_SUCCESS);
}

static int fc_overlaps(CUdeviceptr a, size_t n, CUdeviceptr b, size_t m)
{
    return a < b + m && b < a + n;
}

static int fc_va_free(CUdeviceptr base, size_t size)
{
    if (base < FC_VA_BASE || base >= FC_VA_END || size > FC_VA_END - base)
        return 0;
    for (struct fc_reserve *r = fc_reserves; r; r = r->next)
        if (fc_overlaps(base, size, r->base, r->size))
            return 0;
    return 1;
}

FC_API CUresult cuMemAddressReserve(CUdeviceptr *ptr, size_t size, size_t alignment, CUdeviceptr addr,
                                    unsigned long long flags)
{
    FC_BEGIN();
    CUresult rc = fc_live(NULL);
    if (rc)
        FC_RETURN(rc);
    if (!ptr || !size || size % FC_GRANULARITY || flags || (alignment & (alignment - 1)))
        FC_RETURN(CUDA_ERROR_INVALID_VALUE);
    CUdeviceptr align = alignment > FC_GRANULARITY ? alignment : FC_GRANULARITY, base;
    if (addr && addr % align == 0 && fc_va_free(addr, size)) {
        base = addr; /* the hint is taken when those addresses are free */
    } else {
        base = (fc_va_next + align - 1) / align * align;
        while (!fc_va_free(base, size)) {
            if (base >= FC_VA_END || size > FC_VA_END - base)
                FC_RETURN(CUDA_ERROR_OUT_OF_MEMORY);
            base += align;
        }
        fc_va_next = base + size;
    }
    struct fc_reserve *r = calloc(1, sizeof *r);
    if (!r)
        FC_RETURN(CUDA_ERROR_OUT_OF_MEMORY);
    r->base = base;
    r->size = size;
    r->next = fc_reserves;
    fc_reserves = r;
    *ptr = base;
    FC_RETURN(CUDA_SUCCESS);
}

/* A mapped piece lying in [base, base+size) at all: the registry's first. */
static struct fc_mem *fc_mapped_in(CUdeviceptr base, size_t size)
{
    for (struct fc_mem *m = fc_g.mems; m; m = m->next)
        if (m->kind == FC_MEM_MAPPED && fc_overlaps(base, size, m->dptr, m->size))
            return m;
    return NULL;
}

FC_API CUresult cuMemAddressFree(CUdeviceptr ptr, size_t size)
{
    FC_BEGIN();
    CUresult rc = fc_live(NULL);
    if (rc)
        FC_RETURN(rc);
    for (struct fc_reserve **pp = &fc_reserves; *pp; pp = &(*pp)->next) {
        struct fc_reserve *r = *pp;
        if (r->base != ptr || r->size != size)
            continue;
        if (fc_mapped_in(ptr, size))
            FC_RETURN(CUDA_ERROR_INVALID_VALUE); /* still mapped: unmap first */
        *pp = r->next;
        free(r);
        FC_RETURN(CUDA_SUCCESS);
    }
    FC_RETURN(CUDA_ERROR_INVALID_VALUE);
}

static struct fc_phys *fc_phys_valid(CUmemGenericAllocationHandle h)
{
    for (struct fc_phys *p = fc_physs; p; p = p->next)
        if ((CUmemGenericAllocationHandle)(uintptr_t)p == h)
            return p->released ? NULL : p;
    return NULL;
}

static void fc_phys_drop(struct fc_phys *p)
{
    if (!p->released || p->maps)
        return;
    for (struct fc_phys **pp = &fc_physs; *pp; pp = &(*pp)->next)
        if (*pp == p) {
            *pp = p->next;
            free(p->mem);
            free(p);
            return;
        }
}

FC_API CUresult cuMemCreate(CUmemGenericAllocationHandle *handle, size_t size, const CUmemAllocationProp *prop,
                            unsigned long long flags)
{
    FC_BEGIN();
    CUresult rc = fc_live(NULL);
    if (rc)
        FC_RETURN(rc);
    if (!handle || !prop || !size || size % FC_GRANULARITY || flags || prop->type != CU_MEM_ALLOCATION_TYPE_PINNED ||
        prop->location.type != CU_MEM_LOCATION_TYPE_DEVICE || prop->location.id < 0 || prop->location.id >= fc_g.ndev)
        FC_RETURN(CUDA_ERROR_INVALID_VALUE);
    struct fc_phys *p = calloc(1, sizeof *p);
    if (!p || !(p->mem = calloc(1, size))) {
        free(p);
        FC_RETURN(CUDA_ERROR_OUT_OF_MEMORY);
    }
    p->size = size;
    p->next = fc_physs;
    fc_physs = p;
    *handle = (CUmemGenericAllocationHandle)(uintptr_t)p;
    FC_RETURN(CUDA_SUCCESS);
}

FC_API CUresult cuMemRelease(CUmemGenericAllocationHandle handle)
{
    FC_BEGIN();
    CUresult rc = fc_live(NULL);
    if (rc)
        FC_RETURN(rc);
    struct fc_phys *p = fc_phys_valid(handle);
    if (!p)
        FC_RETURN(CUDA_ERROR_INVALID_VALUE);
    p->released = 1;
    fc_phys_drop(p);
    FC_RETURN(CUDA_SUCCESS);
}

FC_API CUresult cuMemMap(CUdeviceptr ptr, size_t size, size_t offset, CUmemGenericAllocationHandle handle,
                         unsigned long long flags)
{
    FC_BEGIN();
    CUresult rc = fc_live(NULL);
    if (rc)
        FC_RETURN(rc);
    struct fc_phys *p = fc_phys_valid(handle);
    int reserved = 0;
    if (!p || flags || !size || size % FC_GRANULARITY || offset % FC_GRANULARITY || offset > p->size ||
        size > p->size - offset)
        FC_RETURN(CUDA_ERROR_INVALID_VALUE);
    for (struct fc_reserve *r = fc_reserves; r; r = r->next)
        if (ptr >= r->base && size <= r->size && ptr - r->base <= r->size - size)
            reserved = 1;
    if (!reserved || fc_mapped_in(ptr, size))
        FC_RETURN(CUDA_ERROR_INVALID_VALUE);
    struct fc_mem *m = calloc(1, sizeof *m);
    if (!m)
        FC_RETURN(CUDA_ERROR_OUT_OF_MEMORY);
    m->kind = FC_MEM_MAPPED;
    m->host = p->mem + offset;
    m->dptr = ptr;
    m->size = size;
    m->phys = p;
    m->next = fc_g.mems;
    fc_g.mems = m;
    p->maps++;
    FC_RETURN(CUDA_SUCCESS);
}

/* Unmaps every piece in the range, which must hold whole pieces only; queued work runs first, as for frees. */
FC_API CUresult cuMemUnmap(CUdeviceptr ptr, size_t size)
{
    FC_BEGIN();
    CUresult rc = fc_live(NULL);
    if (rc)
        FC_RETURN(rc);
    int any = 0;
    for (struct fc_mem *m = fc_g.mems; m; m = m->next) {
        if (m->kind != FC_MEM_MAPPED || !fc_overlaps(ptr, size, m->dptr, m->size))
            continue;
        if (m->dptr < ptr || m->dptr + m->size > ptr + size)
            FC_RETURN(CUDA_ERROR_INVALID_VALUE);
        any = 1;
    }
    if (!any)
        FC_RETURN(CUDA_ERROR_INVALID_VALUE);
    fc_drain_all();
    if ((rc = fc_live(NULL)))
        FC_RETURN(rc);
    struct fc_mem *m;
    while ((m = fc_mapped_in(ptr, size)) != NULL) {
        struct fc_phys *p = m->phys;
        fc_mem_free(m);
        p->maps--;
        fc_phys_drop(p);
    }
    FC_RETURN(CUDA_SUCCESS);
}

FC_API CUresult cuMemSetAccess(CUdeviceptr ptr, size_t size, const CUmemAccessDesc *desc, size_t count)
{
    FC_BEGIN();
    CUresult rc = fc_live(NULL);
    if (rc)
        FC_RETURN(rc);
    if (!desc || !count || !size)
        FC_RETURN(CUDA_ERROR_INVALID_VALUE);
    /* every byte of the range must be mapped */
    for (CUdeviceptr at = ptr; at < ptr + size;) {
        struct fc_mem *m = fc_mem_by_dptr(at, 1);
        if (!m || m->kind != FC_MEM_MAPPED)
            FC_RETURN(CUDA_ERROR_INVALID_VALUE);
        at = m->dptr + m->size;
    }
    FC_RETURN(CUDA_SUCCESS);
}
