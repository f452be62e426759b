/* Entry points the simulation does not model (pitched and 3D copies, 2D sets, host registration, graph upload,
 * stream callbacks). They exist so that programs and tests can reach every entry point culprit hooks: each applies
 * FAKECUDA_FAIL and the current context's sticky error like the others, and otherwise answers
 * CUDA_ERROR_NOT_SUPPORTED without touching its arguments. */
#include "fc_internal.h"

static CUresult fc_unmodelled(void)
{
    struct fc_ctx *c;
    CUresult rc = fc_cur(&c);
    if (rc)
        return rc;
    return c->sticky ? c->sticky : CUDA_ERROR_NOT_SUPPORTED;
}

#define UNMODELLED(sym, params)                                                                                        \
    FC_API CUresult sym params                                                                                         \
    {                                                                                                                  \
        FC_BEGIN();                                                                                                    \
        FC_RETURN(fc_unmodelled());                                                                                    \
    }

UNMODELLED(cuMemcpy2D_v2, (const CUDA_MEMCPY2D *p))
UNMODELLED(cuMemcpy2D_v2_ptds, (const CUDA_MEMCPY2D *p))
UNMODELLED(cuMemcpy2DAsync_v2, (const CUDA_MEMCPY2D *p, CUstream s))
UNMODELLED(cuMemcpy2DAsync_v2_ptsz, (const CUDA_MEMCPY2D *p, CUstream s))
UNMODELLED(cuMemcpy2DUnaligned_v2, (const CUDA_MEMCPY2D *p))
UNMODELLED(cuMemcpy2DUnaligned_v2_ptds, (const CUDA_MEMCPY2D *p))
UNMODELLED(cuMemcpy3D_v2, (const CUDA_MEMCPY3D *p))
UNMODELLED(cuMemcpy3D_v2_ptds, (const CUDA_MEMCPY3D *p))
UNMODELLED(cuMemcpy3DAsync_v2, (const CUDA_MEMCPY3D *p, CUstream s))
UNMODELLED(cuMemcpy3DAsync_v2_ptsz, (const CUDA_MEMCPY3D *p, CUstream s))
UNMODELLED(cuMemcpy3DPeer, (const CUDA_MEMCPY3D_PEER *p))
UNMODELLED(cuMemcpy3DPeer_ptds, (const CUDA_MEMCPY3D_PEER *p))
UNMODELLED(cuMemcpy3DPeerAsync, (const CUDA_MEMCPY3D_PEER *p, CUstream s))
UNMODELLED(cuMemcpy3DPeerAsync_ptsz, (const CUDA_MEMCPY3D_PEER *p, CUstream s))
UNMODELLED(cuMemsetD2D8_v2, (CUdeviceptr d, size_t pitch, unsigned char v, size_t w, size_t h))
UNMODELLED(cuMemsetD2D8_v2_ptds, (CUdeviceptr d, size_t pitch, unsigned char v, size_t w, size_t h))
UNMODELLED(cuMemsetD2D16_v2, (CUdeviceptr d, size_t pitch, unsigned short v, size_t w, size_t h))
UNMODELLED(cuMemsetD2D16_v2_ptds, (CUdeviceptr d, size_t pitch, unsigned short v, size_t w, size_t h))
UNMODELLED(cuMemsetD2D32_v2, (CUdeviceptr d, size_t pitch, unsigned int v, size_t w, size_t h))
UNMODELLED(cuMemsetD2D32_v2_ptds, (CUdeviceptr d, size_t pitch, unsigned int v, size_t w, size_t h))
UNMODELLED(cuMemsetD2D8Async, (CUdeviceptr d, size_t pitch, unsigned char v, size_t w, size_t h, CUstream s))
UNMODELLED(cuMemsetD2D8Async_ptsz, (CUdeviceptr d, size_t pitch, unsigned char v, size_t w, size_t h, CUstream s))
UNMODELLED(cuMemsetD2D16Async, (CUdeviceptr d, size_t pitch, unsigned short v, size_t w, size_t h, CUstream s))
UNMODELLED(cuMemsetD2D16Async_ptsz, (CUdeviceptr d, size_t pitch, unsigned short v, size_t w, size_t h, CUstream s))
UNMODELLED(cuMemsetD2D32Async, (CUdeviceptr d, size_t pitch, unsigned int v, size_t w, size_t h, CUstream s))
UNMODELLED(cuMemsetD2D32Async_ptsz, (CUdeviceptr d, size_t pitch, unsigned int v, size_t w, size_t h, CUstream s))
UNMODELLED(cuMemGetInfo_v2, (size_t * free_, size_t *total))
UNMODELLED(cuMemHostRegister_v2, (void *p, size_t n, unsigned int f))
UNMODELLED(cuMemHostUnregister, (void *p))
UNMODELLED(cuGraphUpload, (CUgraphExec g, CUstream s))
UNMODELLED(cuGraphUpload_ptsz, (CUgraphExec g, CUstream s))
UNMODELLED(cuStreamAddCallback, (CUstream s, CUstreamCallback cb, void *u, unsigned int f))
UNMODELLED(cuStreamAddCallback_ptsz, (CUstream s, CUstreamCallback cb, void *u, unsigned int f))
UNMODELLED(cuGraphInstantiateWithParams, (CUgraphExec * e, CUgraph g, CUDA_GRAPH_INSTANTIATE_PARAMS *p))
UNMODELLED(cuGraphInstantiateWithParams_ptsz, (CUgraphExec * e, CUgraph g, CUDA_GRAPH_INSTANTIATE_PARAMS *p))
UNMODELLED(cuStreamBeginCaptureToGraph, (CUstream s, CUgraph g, const CUgraphNode *deps, const CUgraphEdgeData *edata,
                                         size_t n, CUstreamCaptureMode m))
UNMODELLED(cuStreamBeginCaptureToGraph_ptsz, (CUstream s, CUgraph g, const CUgraphNode *deps,
                                              const CUgraphEdgeData *edata, size_t n, CUstreamCaptureMode m))
