/* Entry-point lookup of the simulated CUDA driver (cuGetProcAddress, cuGetProcAddress_v2), its error names and
 * messages, and the opaque export table. The lookup table follows the real driver: for a base name and a
 * requested CUDA version it answers the newest versioned symbol not newer than that version, and the per-thread
 * default stream variant when asked for with CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM. */
#include "fc_internal.h"

#include <string.h>

struct fc_proc {
    const char *name; /* base name a caller asks for */
    int since;        /* first CUDA version (1000*major + 10*minor) for which this row is the answer */
    void *legacy;     /* symbol for legacy-stream lookups */
    void *per_thread; /* symbol for per-thread-default-stream lookups, NULL when the function has no variant */
};

#define R(base, since, fn)                                                                                             \
    {                                                                                                                  \
#base, since, (void *)(fn), NULL                                                                               \
    }
#define RP(base, since, fn, ptfn)                                                                                      \
    {                                                                                                                  \
#base, since, (void *)(fn), (void *)(ptfn)                                                                     \
    }

/* Versions are those of the real driver's typed entry points (cudaTypedefs.h, PFN_<name>_v<version>). */
static const struct fc_proc fc_procs[] = {
    R(cuInit, 2000, cuInit),
    R(cuDriverGetVersion, 2020, cuDriverGetVersion),
    R(cuGetProcAddress, 11030, cuGetProcAddress),
    R(cuGetProcAddress, 12000, cuGetProcAddress_v2),
    R(cuGetExportTable, 3000, cuGetExportTable),
    R(cuGetErrorName, 6000, cuGetErrorName),
    R(cuGetErrorString, 6000, cuGetErrorString),
    R(cuDeviceGet, 2000, cuDeviceGet),
    R(cuDeviceGetCount, 2000, cuDeviceGetCount),
    R(cuDeviceGetName, 2000, cuDeviceGetName),
    R(cuDeviceGetAttribute, 2000, cuDeviceGetAttribute),
    R(cuDevicePrimaryCtxRetain, 7000, cuDevicePrimaryCtxRetain),
    R(cuDevicePrimaryCtxRelease, 7000, cuDevicePrimaryCtxRelease),
    R(cuDevicePrimaryCtxRelease, 11000, cuDevicePrimaryCtxRelease_v2),
    R(cuDevicePrimaryCtxReset, 7000, cuDevicePrimaryCtxReset),
    R(cuDevicePrimaryCtxReset, 11000, cuDevicePrimaryCtxReset_v2),
    R(cuCtxCreate, 3020, cuCtxCreate_v2),
    R(cuCtxCreate, 11040, cuCtxCreate_v3),
    R(cuCtxCreate, 12050, cuCtxCreate_v4),
    R(cuCtxDestroy, 4000, cuCtxDestroy_v2),
    R(cuCtxSetCurrent, 4000, cuCtxSetCurrent),
    R(cuCtxGetCurrent, 4000, cuCtxGetCurrent),
    R(cuCtxPushCurrent, 4000, cuCtxPushCurrent_v2),
    R(cuCtxPopCurrent, 4000, cuCtxPopCurrent_v2),
    R(cuCtxGetDevice, 2000, cuCtxGetDevice),
    R(cuCtxGetDevice, 13000, cuCtxGetDevice_v2),
    R(cuCtxSynchronize, 2000, cuCtxSynchronize),
    R(cuCtxSynchronize, 13000, cuCtxSynchronize_v2),
    R(cuStreamCreate, 2000, cuStreamCreate),
    R(cuStreamCreateWithPriority, 5050, cuStreamCreateWithPriority),
    R(cuStreamDestroy, 2000, cuStreamDestroy),
    R(cuStreamDestroy, 4000, cuStreamDestroy_v2),
    RP(cuStreamSynchronize, 2000, cuStreamSynchronize, cuStreamSynchronize_ptsz),
    RP(cuStreamQuery, 2000, cuStreamQuery, cuStreamQuery_ptsz),
    RP(cuStreamGetCtx, 9020, cuStreamGetCtx, cuStreamGetCtx_ptsz),
    RP(cuStreamGetCtx, 12050, cuStreamGetCtx_v2, cuStreamGetCtx_v2_ptsz),
    RP(cuStreamWaitEvent, 3020, cuStreamWaitEvent, cuStreamWaitEvent_ptsz),
    RP(cuStreamWriteValue32, 8000, cuStreamWriteValue32, cuStreamWriteValue32_ptsz),
    RP(cuStreamWriteValue32, 11070, cuStreamWriteValue32_v2, cuStreamWriteValue32_v2_ptsz),
    RP(cuStreamWriteValue64, 9000, cuStreamWriteValue64, cuStreamWriteValue64_ptsz),
    RP(cuStreamWriteValue64, 11070, cuStreamWriteValue64_v2, cuStreamWriteValue64_v2_ptsz),
    RP(cuStreamBeginCapture, 10000, cuStreamBeginCapture, cuStreamBeginCapture_ptsz),
    RP(cuStreamBeginCapture, 10010, cuStreamBeginCapture_v2, cuStreamBeginCapture_v2_ptsz),
    RP(cuStreamEndCapture, 10000, cuStreamEndCapture, cuStreamEndCapture_ptsz),
    RP(cuStreamIsCapturing, 10000, cuStreamIsCapturing, cuStreamIsCapturing_ptsz),
    RP(cuLaunchKernel, 4000, cuLaunchKernel, cuLaunchKernel_ptsz),
    RP(cuLaunchKernelEx, 11060, cuLaunchKernelEx, cuLaunchKernelEx_ptsz),
    RP(cuLaunchCooperativeKernel, 9000, cuLaunchCooperativeKernel, cuLaunchCooperativeKernel_ptsz),
    RP(cuLaunchHostFunc, 10000, cuLaunchHostFunc, cuLaunchHostFunc_ptsz),
    R(cuGraphInstantiate, 11000, cuGraphInstantiate_v2),
    R(cuGraphInstantiateWithFlags, 11040, cuGraphInstantiateWithFlags),
    RP(cuGraphLaunch, 10000, cuGraphLaunch, cuGraphLaunch_ptsz),
    R(cuGraphExecDestroy, 10000, cuGraphExecDestroy),
    R(cuGraphDestroy, 10000, cuGraphDestroy),
    R(cuEventCreate, 2000, cuEventCreate),
    RP(cuEventRecord, 2000, cuEventRecord, cuEventRecord_ptsz),
    RP(cuEventRecordWithFlags, 11010, cuEventRecordWithFlags, cuEventRecordWithFlags_ptsz),
    R(cuEventSynchronize, 2000, cuEventSynchronize),
    R(cuEventQuery, 2000, cuEventQuery),
    R(cuEventDestroy, 2000, cuEventDestroy),
    R(cuEventDestroy, 4000, cuEventDestroy_v2),
    R(cuEventElapsedTime, 2000, cuEventElapsedTime),
    R(cuEventElapsedTime, 12080, cuEventElapsedTime_v2),
    /* not modelled (fc_unmodelled.c): reachable, failing as FAKECUDA_FAIL says, else not supported */
    RP(cuMemcpy2D, 3020, cuMemcpy2D_v2, cuMemcpy2D_v2_ptds),
    RP(cuMemcpy2DAsync, 3020, cuMemcpy2DAsync_v2, cuMemcpy2DAsync_v2_ptsz),
    RP(cuMemcpy2DUnaligned, 3020, cuMemcpy2DUnaligned_v2, cuMemcpy2DUnaligned_v2_ptds),
    RP(cuMemcpy3D, 3020, cuMemcpy3D_v2, cuMemcpy3D_v2_ptds),
    RP(cuMemcpy3DAsync, 3020, cuMemcpy3DAsync_v2, cuMemcpy3DAsync_v2_ptsz),
    RP(cuMemcpy3DPeer, 4000, cuMemcpy3DPeer, cuMemcpy3DPeer_ptds),
    RP(cuMemcpy3DPeerAsync, 4000, cuMemcpy3DPeerAsync, cuMemcpy3DPeerAsync_ptsz),
    RP(cuMemsetD2D8, 3020, cuMemsetD2D8_v2, cuMemsetD2D8_v2_ptds),
    RP(cuMemsetD2D16, 3020, cuMemsetD2D16_v2, cuMemsetD2D16_v2_ptds),
    RP(cuMemsetD2D32, 3020, cuMemsetD2D32_v2, cuMemsetD2D32_v2_ptds),
    RP(cuMemsetD2D8Async, 3020, cuMemsetD2D8Async, cuMemsetD2D8Async_ptsz),
    RP(cuMemsetD2D16Async, 3020, cuMemsetD2D16Async, cuMemsetD2D16Async_ptsz),
    RP(cuMemsetD2D32Async, 3020, cuMemsetD2D32Async, cuMemsetD2D32Async_ptsz),
    R(cuMemGetInfo, 3020, cuMemGetInfo_v2),
    R(cuMemAllocPitch, 3020, cuMemAllocPitch_v2),
    R(cuMemHostRegister, 6050, cuMemHostRegister_v2),
    R(cuMemHostUnregister, 4000, cuMemHostUnregister),
    R(cuMemAllocManaged, 6000, cuMemAllocManaged),
    RP(cuMemAllocFromPoolAsync, 11020, cuMemAllocFromPoolAsync, cuMemAllocFromPoolAsync_ptsz),
    R(cuMemPoolTrimTo, 11020, cuMemPoolTrimTo),
    R(cuMemPoolCreate, 11020, cuMemPoolCreate),
    R(cuMemPoolDestroy, 11020, cuMemPoolDestroy),
    R(cuMemGetAllocationGranularity, 10020, cuMemGetAllocationGranularity),
    R(cuMemAddressReserve, 10020, cuMemAddressReserve),
    R(cuMemAddressFree, 10020, cuMemAddressFree),
    R(cuMemCreate, 10020, cuMemCreate),
    R(cuMemRelease, 10020, cuMemRelease),
    R(cuMemMap, 10020, cuMemMap),
    R(cuMemUnmap, 10020, cuMemUnmap),
    R(cuMemSetAccess, 10020, cuMemSetAccess),
    RP(cuGraphUpload, 11010, cuGraphUpload, cuGraphUpload_ptsz),
    RP(cuStreamAddCallback, 5000, cuStreamAddCallback, cuStreamAddCallback_ptsz),
    RP(cuGraphInstantiateWithParams, 12000, cuGraphInstantiateWithParams, cuGraphInstantiateWithParams_ptsz),
    RP(cuStreamBeginCaptureToGraph, 12030, cuStreamBeginCaptureToGraph, cuStreamBeginCaptureToGraph_ptsz),
    R(cuMemAlloc, 3020, cuMemAlloc_v2),
    R(cuMemFree, 3020, cuMemFree_v2),
    R(cuMemAllocHost, 3020, cuMemAllocHost_v2),
    R(cuMemHostAlloc, 2020, cuMemHostAlloc),
    R(cuMemFreeHost, 2000, cuMemFreeHost),
    R(cuMemHostGetDevicePointer, 3020, cuMemHostGetDevicePointer_v2),
    RP(cuMemAllocAsync, 11020, cuMemAllocAsync, cuMemAllocAsync_ptsz),
    RP(cuMemFreeAsync, 11020, cuMemFreeAsync, cuMemFreeAsync_ptsz),
    RP(cuMemcpy, 4000, cuMemcpy, cuMemcpy_ptds),
    RP(cuMemcpyAsync, 4000, cuMemcpyAsync, cuMemcpyAsync_ptsz),
    RP(cuMemcpyHtoD, 3020, cuMemcpyHtoD_v2, cuMemcpyHtoD_v2_ptds),
    RP(cuMemcpyDtoH, 3020, cuMemcpyDtoH_v2, cuMemcpyDtoH_v2_ptds),
    RP(cuMemcpyDtoD, 3020, cuMemcpyDtoD_v2, cuMemcpyDtoD_v2_ptds),
    RP(cuMemcpyHtoDAsync, 3020, cuMemcpyHtoDAsync_v2, cuMemcpyHtoDAsync_v2_ptsz),
    RP(cuMemcpyDtoHAsync, 3020, cuMemcpyDtoHAsync_v2, cuMemcpyDtoHAsync_v2_ptsz),
    RP(cuMemcpyDtoDAsync, 3020, cuMemcpyDtoDAsync_v2, cuMemcpyDtoDAsync_v2_ptsz),
    RP(cuMemcpyPeer, 4000, cuMemcpyPeer, cuMemcpyPeer_ptds),
    RP(cuMemcpyPeerAsync, 4000, cuMemcpyPeerAsync, cuMemcpyPeerAsync_ptsz),
    RP(cuMemsetD8, 3020, cuMemsetD8_v2, cuMemsetD8_v2_ptds),
    RP(cuMemsetD16, 3020, cuMemsetD16_v2, cuMemsetD16_v2_ptds),
    RP(cuMemsetD32, 3020, cuMemsetD32_v2, cuMemsetD32_v2_ptds),
    RP(cuMemsetD8Async, 3020, cuMemsetD8Async, cuMemsetD8Async_ptsz),
    RP(cuMemsetD16Async, 3020, cuMemsetD16Async, cuMemsetD16Async_ptsz),
    RP(cuMemsetD32Async, 3020, cuMemsetD32Async, cuMemsetD32Async_ptsz),
    R(cuModuleLoad, 2000, cuModuleLoad),
    R(cuModuleLoadData, 2000, cuModuleLoadData),
    R(cuModuleLoadDataEx, 2010, cuModuleLoadDataEx),
    R(cuModuleUnload, 2000, cuModuleUnload),
    R(cuModuleGetFunction, 2000, cuModuleGetFunction),
    R(cuFuncGetName, 12030, cuFuncGetName),
    R(cuFuncGetParamInfo, 12040, cuFuncGetParamInfo),
    R(cuLibraryLoadData, 12000, cuLibraryLoadData),
    R(cuLibraryUnload, 12000, cuLibraryUnload),
    R(cuLibraryGetKernel, 12000, cuLibraryGetKernel),
    R(cuKernelGetFunction, 12000, cuKernelGetFunction),
    R(cuKernelGetName, 12030, cuKernelGetName),
    R(cuKernelGetParamInfo, 12040, cuKernelGetParamInfo),
};

/* Measured on the real driver (580, CUDA 13.0): cuGetProcAddress_v2 answers CUDA_SUCCESS even for an unknown
 * name or a version too old, with *pfn = NULL and the reason in *status; the v1 form answers
 * CUDA_ERROR_NOT_FOUND and leaves *pfn alone. Per-thread variants exist from CUDA 7.0 on: asked for by an older
 * version they are "version not sufficient", not the legacy symbol. Flags other than the two stream bits are
 * CUDA_ERROR_INVALID_VALUE; with both bits, per-thread wins. */
static CUresult fc_proc_lookup(const char *symbol, void **pfn, int version, cuuint64_t flags, int v2,
                               CUdriverProcAddressQueryResult *status)
{
    const struct fc_proc *best = NULL;
    int known = 0, pt = (flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) != 0;
    if (!symbol || !pfn)
        return CUDA_ERROR_INVALID_VALUE;
    if (flags & ~(cuuint64_t)(CU_GET_PROC_ADDRESS_LEGACY_STREAM | CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM))
        return CUDA_ERROR_INVALID_VALUE;
    for (size_t i = 0; i < sizeof fc_procs / sizeof fc_procs[0]; i++) {
        const struct fc_proc *p = &fc_procs[i];
        if (strcmp(p->name, symbol))
            continue;
        known = 1;
        if (p->since <= version && (!best || p->since > best->since))
            best = p;
    }
    if (best && pt && best->per_thread && version < 7000)
        best = NULL;
    if (!best) {
        if (!v2)
            return CUDA_ERROR_NOT_FOUND;
        *pfn = NULL;
        if (status)
            *status = known ? CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT : CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
        return CUDA_SUCCESS;
    }
    *pfn = pt && best->per_thread ? best->per_thread : best->legacy;
    if (status)
        *status = CU_GET_PROC_ADDRESS_SUCCESS;
    return CUDA_SUCCESS;
}

FC_API CUresult cuGetProcAddress(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags)
{
    FC_BEGIN();
    FC_RETURN(fc_proc_lookup(symbol, pfn, cudaVersion, flags, 0, NULL));
}

FC_API CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags,
                                    CUdriverProcAddressQueryResult *symbolStatus)
{
    FC_BEGIN();
    FC_RETURN(fc_proc_lookup(symbol, pfn, cudaVersion, flags, 1, symbolStatus));
}

/* ---- export table ----------------------------------------------------------------------------------------- */

/* The real driver hands cudart private tables of functions by UUID. The fake has one table for every UUID whose
 * first word is a canary, so a test can check that an interposer passes the pointer through untouched. */
static const unsigned long long fc_export_table[8] = {0xC0FFEE0DDBA11ULL};

FC_API CUresult cuGetExportTable(const void **ppExportTable, const CUuuid *pExportTableId)
{
    FC_BEGIN();
    if (!ppExportTable || !pExportTableId)
        FC_RETURN(CUDA_ERROR_INVALID_VALUE);
    *ppExportTable = fc_export_table;
    FC_RETURN(CUDA_SUCCESS);
}

/* ---- error names ------------------------------------------------------------------------------------------ */

struct fc_errname {
    CUresult code;    /* the error */
    const char *name; /* cuGetErrorName */
    const char *text; /* cuGetErrorString, as the driver words it */
};

#define E(code, text)                                                                                                  \
    {                                                                                                                  \
        code, #code, text                                                                                              \
    }

static const struct fc_errname fc_errors[] = {
    E(CUDA_SUCCESS, "no error"),
    E(CUDA_ERROR_INVALID_VALUE, "invalid argument"),
    E(CUDA_ERROR_OUT_OF_MEMORY, "out of memory"),
    E(CUDA_ERROR_NOT_INITIALIZED, "initialization error"),
    E(CUDA_ERROR_DEINITIALIZED, "driver shutting down"),
    E(CUDA_ERROR_NO_DEVICE, "no CUDA-capable device is detected"),
    E(CUDA_ERROR_INVALID_DEVICE, "invalid device ordinal"),
    E(CUDA_ERROR_INVALID_IMAGE, "device kernel image is invalid"),
    E(CUDA_ERROR_INVALID_CONTEXT, "invalid device context"),
    E(CUDA_ERROR_FILE_NOT_FOUND, "file not found"),
    E(CUDA_ERROR_INVALID_HANDLE, "invalid resource handle"),
    E(CUDA_ERROR_ILLEGAL_STATE, "the operation cannot be performed in the present state"),
    E(CUDA_ERROR_NOT_FOUND, "named symbol not found"),
    E(CUDA_ERROR_NOT_READY, "device not ready"),
    E(CUDA_ERROR_ILLEGAL_ADDRESS, "an illegal memory access was encountered"),
    E(CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES, "too many resources requested for launch"),
    E(CUDA_ERROR_LAUNCH_TIMEOUT, "the launch timed out and was terminated"),
    E(CUDA_ERROR_ASSERT, "device-side assert triggered"),
    E(CUDA_ERROR_ILLEGAL_INSTRUCTION, "an illegal instruction was encountered"),
    E(CUDA_ERROR_MISALIGNED_ADDRESS, "misaligned address"),
    E(CUDA_ERROR_LAUNCH_FAILED, "unspecified launch failure"),
    E(CUDA_ERROR_NOT_SUPPORTED, "operation not supported"),
    E(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, "operation not permitted when stream is capturing"),
    E(CUDA_ERROR_UNKNOWN, "unknown error"),
};

static const struct fc_errname *fc_error(CUresult rc)
{
    for (size_t i = 0; i < sizeof fc_errors / sizeof fc_errors[0]; i++)
        if (fc_errors[i].code == rc)
            return &fc_errors[i];
    return NULL;
}

const char *fc_error_name(CUresult rc)
{
    const struct fc_errname *e = fc_error(rc);
    return e ? e->name : "CUDA_ERROR_UNKNOWN";
}

/* Unknown codes get NULL and CUDA_ERROR_INVALID_VALUE, as from the driver. */
static CUresult fc_error_lookup(CUresult error, const char **pStr, int text)
{
    const struct fc_errname *e = fc_error(error);
    if (!pStr)
        return CUDA_ERROR_INVALID_VALUE;
    *pStr = e ? (text ? e->text : e->name) : NULL;
    return e ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

FC_API CUresult cuGetErrorName(CUresult error, const char **pStr)
{
    FC_BEGIN();
    FC_RETURN(fc_error_lookup(error, pStr, 0));
}

FC_API CUresult cuGetErrorString(CUresult error, const char **pStr)
{
    FC_BEGIN();
    FC_RETURN(fc_error_lookup(error, pStr, 1));
}
