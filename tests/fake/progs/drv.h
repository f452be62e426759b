/* A table of driver entry points for the programs that do not link libcuda but look the driver up at run time
 * (dlsym, cuGetProcAddress), the way cudart, Triton or CuPy do. Each field has the type of the cuda.h prototype
 * that its name maps to (cuMemcpyDtoH -> cuMemcpyDtoH_v2), so calls through the table are type-checked. */
#ifndef FAKE_PROGS_DRV_H
#define FAKE_PROGS_DRV_H

#include <cuda.h>

/* The CUDA version the programs ask cuGetProcAddress for: a program built with CUDA 12 headers. (At 13000 some
 * entry points change form, e.g. cuCtxSynchronize takes a context; procaddr asks for that one explicitly.) */
#define DRV_VERSION 12000

/* one driver function a name, kept as written */
// clang-format off
#define DRV_FUNCS(X)                                                                               \
    X(cuInit) X(cuDeviceGet) X(cuDevicePrimaryCtxRetain) X(cuCtxSetCurrent) X(cuCtxSynchronize)   \
    X(cuModuleLoadData) X(cuModuleGetFunction) X(cuModuleUnload)                                   \
    X(cuMemAlloc) X(cuMemFree) X(cuMemcpyHtoD) X(cuMemcpyDtoH) X(cuMemcpyDtoHAsync)                \
    X(cuMemsetD32) X(cuMemsetD32Async)                                                             \
    X(cuStreamCreate) X(cuStreamDestroy) X(cuStreamSynchronize)                                    \
    X(cuEventCreate) X(cuEventRecord) X(cuEventSynchronize) X(cuEventDestroy)                      \
    X(cuLaunchKernel) X(cuLaunchKernelEx) X(cuLaunchCooperativeKernel)                             \
    X(cuStreamBeginCapture) X(cuStreamEndCapture) X(cuGraphInstantiateWithFlags) X(cuGraphLaunch)  \
    X(cuGraphExecDestroy) X(cuGraphDestroy) X(cuGetErrorName) X(cuGetExportTable)
// clang-format on

/* The field is named after the versioned symbol (the macro expands), e.g. `drv.cuMemFree` is `drv.cuMemFree_v2`. */
#define DRV_FIELD(fn) __typeof__(&fn) fn;
struct drv {
    DRV_FUNCS(DRV_FIELD)
};
#undef DRV_FIELD

/* The symbol a name maps to in cuda.h, as a string: DRV_SYMBOL(cuMemFree) is "cuMemFree_v2". */
#define DRV_STR_(x) #x
#define DRV_SYMBOL(fn) DRV_STR_(fn)

#endif
