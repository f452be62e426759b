/* A driver-API program that loads the driver with dlopen and takes every entry point with dlsym by its
 * versioned symbol name, as Triton's launcher, XLA and CuPy do. Usage: dlsym legacy|ptsz|healthy|return0. */
#define _GNU_SOURCE
#include <dlfcn.h>

#include "common.h"
#include "drv.h"

static struct drv D; /* entry points taken with dlsym */

#define CK(call)                                                                                                                                               \
    do {                                                                                                                                                       \
        CUresult rc_ = (call);                                                                                                                                 \
        if (rc_ != CUDA_SUCCESS)                                                                                                                               \
            report_error(D.cuGetErrorName, #call, rc_, 0);                                                                                                     \
    } while (0)

static void *lib; /* handle of libcuda.so.1 */

static void *symbol(const char *name)
{
    void *p = dlsym(lib, name);
    if (p == NULL) {
        fprintf(stderr, "dlsym(%s) failed: %s\n", name, dlerror());
        exit(1);
    }
    return p;
}

static CUmodule mod;                   /* the module */
static CUfunction f_step, f_bad;       /* its kernels */
static CUdeviceptr dbuf;               /* device buffer */
static int nelem = NELEM;              /* kernel argument */
static void *args[] = {&dbuf, &nelem}; /* kernel parameters */

static int setup(void)
{
    CUdevice dev;
    CUcontext ctx;
    lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (lib == NULL) {
        fprintf(stderr, "cannot load libcuda.so.1: %s\n", dlerror());
        return -1;
    }
#define DRV_BY_DLSYM(fn) D.fn = (__typeof__(D.fn))symbol(DRV_SYMBOL(fn));
    DRV_FUNCS(DRV_BY_DLSYM)
#undef DRV_BY_DLSYM
    CK(D.cuInit(0));
    CK(D.cuDeviceGet(&dev, 0));
    CK(D.cuDevicePrimaryCtxRetain(&ctx, dev));
    CK(D.cuCtxSetCurrent(ctx));
    CK(D.cuModuleLoadData(&mod, MODULE_IMAGE));
    CK(D.cuModuleGetFunction(&f_step, mod, K_STEP));
    CK(D.cuModuleGetFunction(&f_bad, mod, K_BAD));
    CK(D.cuMemAlloc(&dbuf, NELEM * sizeof(float)));
    return 0;
}

/* Ten launches on the legacy default stream; the error surfaces at the copy back. */
static int legacy(void)
{
    float host[NELEM];
    for (int i = 0; i < 10; i++)
        CK(D.cuLaunchKernel(f_step, 4, 1, 1, 64, 1, 1, 0, NULL, args, NULL)); /* legacy */ /* CULPRIT-LAUNCH */
    CK(D.cuMemcpyDtoH(host, dbuf, sizeof host));
    printf("legacy: copied back\n");
    return 0;
}

/* The _ptsz symbols taken by name: stream NULL there is this thread's default stream. Healthy launches on the
 * legacy stream alternate with per-thread ones; the fourth per-thread launch is write_oob (launch #8). */
static int ptsz(void)
{
    struct drv pt; /* the _ptsz entry points */
    pt.cuLaunchKernel = (__typeof__(pt.cuLaunchKernel))symbol("cuLaunchKernel_ptsz");
    pt.cuStreamSynchronize = (__typeof__(pt.cuStreamSynchronize))symbol("cuStreamSynchronize_ptsz");
    for (int i = 0; i < 6; i++) {
        CK(D.cuLaunchKernel(f_step, 4, 1, 1, 64, 1, 1, 0, NULL, args, NULL));
        CK(pt.cuLaunchKernel(i == 3 ? f_bad : f_step, 4, 1, 1, 64, 1, 1, 0, NULL, args, NULL)); /* ptsz */ /* CULPRIT-LAUNCH */
    }
    CK(D.cuStreamSynchronize(NULL));
    printf("ptsz: legacy stream synchronized\n");
    CK(pt.cuStreamSynchronize(NULL));
    printf("ptsz: per-thread stream synchronized\n");
    return 0;
}

/* Ten launches, then main returns 0 with nothing synchronized; the driver was opened with dlopen, as PyTorch
 * opens it, and is finalized with the other libraries at exit. */
static int return0(void)
{
    for (int i = 0; i < 10; i++)
        CK(D.cuLaunchKernel(f_step, 4, 1, 1, 64, 1, 1, 0, NULL, args, NULL)); /* return0 */ /* CULPRIT-LAUNCH */
    printf("return0: returning without synchronizing\n");
    return 0;
}

static int healthy(void)
{
    int host[NELEM], back[NELEM];
    long sum = 0;
    CUstream s;
    CUevent ev;
    for (int i = 0; i < NELEM; i++)
        host[i] = NELEM - i;
    CK(D.cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CK(D.cuEventCreate(&ev, CU_EVENT_DEFAULT));
    CK(D.cuMemcpyHtoD(dbuf, host, sizeof host));
    for (int i = 0; i < 6; i++)
        CK(D.cuLaunchKernel(f_step, 4, 1, 1, 64, 1, 1, 0, s, args, NULL));
    CK(D.cuEventRecord(ev, s));
    CK(D.cuEventSynchronize(ev));
    CK(D.cuMemcpyDtoHAsync(back, dbuf, sizeof back, s));
    CK(D.cuStreamSynchronize(s));
    for (int i = 0; i < NELEM; i++)
        sum += back[i];
    CK(D.cuEventDestroy(ev));
    CK(D.cuStreamDestroy(s));
    CK(D.cuMemFree(dbuf));
    printf("healthy: checksum %ld\n", sum);
    return 0;
}

int main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    const char *what = argc > 1 ? argv[1] : "";
    if (strcmp(what, "legacy") != 0 && strcmp(what, "ptsz") != 0 && strcmp(what, "healthy") != 0 && strcmp(what, "return0") != 0) {
        fprintf(stderr, "usage: dlsym legacy|ptsz|healthy|return0\n");
        return 2;
    }
    if (setup() != 0)
        return 1;
    if (strcmp(what, "legacy") == 0)
        return legacy();
    if (strcmp(what, "ptsz") == 0)
        return ptsz();
    if (strcmp(what, "return0") == 0)
        return return0();
    return healthy();
}
