/* A healthy driver-API workload touching every API family culprit hooks, reached through one of three lookup
 * paths (linked, cuGetProcAddress, dlsym). The fault-injection tests make one driver call fail
 * (FAKECUDA_FAIL) and check the program sees the same error with and without culprit.
 * Usage: work linked|procaddr|dlsym. */
#define _GNU_SOURCE
#include <dlfcn.h>

#include "common.h"
#include "drv.h"

static struct drv D; /* the entry points, however they were found */

#define CK(call)                                                                                                                                               \
    do {                                                                                                                                                       \
        CUresult rc_ = (call);                                                                                                                                 \
        if (rc_ != CUDA_SUCCESS)                                                                                                                               \
            report_error(D.cuGetErrorName, #call, rc_, 0);                                                                                                     \
    } while (0)

typedef CUresult (*getproc_v2_fn)(const char *, void **, int, cuuint64_t, CUdriverProcAddressQueryResult *);

static void *lib;             /* handle of libcuda.so.1 (procaddr, dlsym) */
static getproc_v2_fn getproc; /* cuGetProcAddress_v2 (procaddr) */

static void *by_dlsym(const char *name)
{
    void *p = dlsym(lib, name);
    if (p == NULL) {
        fprintf(stderr, "dlsym(%s) failed: %s\n", name, dlerror());
        exit(1);
    }
    return p;
}

static void *by_getproc(const char *name)
{
    void *p = NULL;
    CUdriverProcAddressQueryResult status;
    CUresult rc = getproc(name, &p, DRV_VERSION, CU_GET_PROC_ADDRESS_DEFAULT, &status);
    if (rc != CUDA_SUCCESS || status != CU_GET_PROC_ADDRESS_SUCCESS || p == NULL) {
        fprintf(stderr, "cuGetProcAddress(\"%s\") failed: result %d, status %d\n", name, (int)rc, (int)status);
        exit(1);
    }
    return p;
}

static int find_driver(const char *how)
{
    if (strcmp(how, "linked") == 0) {
#define DRV_DIRECT(fn) D.fn = fn;
        DRV_FUNCS(DRV_DIRECT)
#undef DRV_DIRECT
        return 0;
    }
    lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (lib == NULL) {
        fprintf(stderr, "cannot load libcuda.so.1: %s\n", dlerror());
        return -1;
    }
    if (strcmp(how, "dlsym") == 0) {
#define DRV_BY_DLSYM(fn) D.fn = (__typeof__(D.fn))by_dlsym(DRV_SYMBOL(fn));
        DRV_FUNCS(DRV_BY_DLSYM)
#undef DRV_BY_DLSYM
        return 0;
    }
    if (strcmp(how, "procaddr") == 0) {
        getproc = (getproc_v2_fn)by_dlsym("cuGetProcAddress_v2");
#define DRV_BY_PROC(fn) D.fn = (__typeof__(D.fn))by_getproc(#fn);
        DRV_FUNCS(DRV_BY_PROC)
#undef DRV_BY_PROC
        return 0;
    }
    return -1;
}

int main(int argc, char **argv)
{
    CUdevice dev;
    CUcontext ctx;
    CUmodule mod;
    CUfunction f_step, f_fill;
    CUdeviceptr dbuf;
    CUstream s;
    CUevent ev;
    CUlaunchConfig cfg;
    int nelem = NELEM;
    void *args[] = {&dbuf, &nelem};
    int host[NELEM], back[NELEM];
    long sum = 0;

    setvbuf(stdout, NULL, _IOLBF, 0);
    if (argc != 2 || find_driver(argv[1]) != 0) {
        fprintf(stderr, "usage: work linked|procaddr|dlsym\n");
        return 2;
    }
    for (int i = 0; i < NELEM; i++)
        host[i] = i % 17;
    CK(D.cuInit(0));
    CK(D.cuDeviceGet(&dev, 0));
    CK(D.cuDevicePrimaryCtxRetain(&ctx, dev));
    CK(D.cuCtxSetCurrent(ctx));
    CK(D.cuModuleLoadData(&mod, MODULE_IMAGE));
    CK(D.cuModuleGetFunction(&f_step, mod, K_STEP));
    CK(D.cuModuleGetFunction(&f_fill, mod, K_FILL));
    CK(D.cuMemAlloc(&dbuf, NELEM * sizeof(int)));
    CK(D.cuMemsetD32(dbuf, 0, NELEM));
    CK(D.cuMemcpyHtoD(dbuf, host, sizeof host));
    CK(D.cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CK(D.cuEventCreate(&ev, CU_EVENT_DEFAULT));
    for (int i = 0; i < 4; i++)
        CK(D.cuLaunchKernel(f_step, 4, 1, 1, 64, 1, 1, 0, s, args, NULL));
    for (int i = 0; i < 2; i++)
        CK(D.cuLaunchKernel(f_fill, 4, 1, 1, 64, 1, 1, 0, NULL, args, NULL));
    memset(&cfg, 0, sizeof cfg);
    cfg.gridDimX = 2, cfg.gridDimY = cfg.gridDimZ = 1;
    cfg.blockDimX = 128, cfg.blockDimY = cfg.blockDimZ = 1;
    cfg.hStream = s;
    CK(D.cuLaunchKernelEx(&cfg, f_step, args, NULL));
    CK(D.cuLaunchCooperativeKernel(f_fill, 1, 1, 1, 64, 1, 1, 0, s, args));
    CK(D.cuMemsetD32Async(dbuf, 5, 8, s));
    CK(D.cuMemcpyDtoHAsync(back, dbuf, sizeof back, s));
    CK(D.cuEventRecord(ev, s));
    CK(D.cuEventSynchronize(ev));
    CK(D.cuStreamSynchronize(s));
    CK(D.cuCtxSynchronize());
    CK(D.cuMemcpyDtoH(back, dbuf, sizeof back));
    for (int i = 0; i < NELEM; i++)
        sum += back[i];
    CK(D.cuEventDestroy(ev));
    CK(D.cuStreamDestroy(s));
    CK(D.cuMemFree(dbuf));
    CK(D.cuModuleUnload(mod));
    printf("work %s: 8 launches, checksum %ld\n", argv[1], sum);
    return 0;
}
