/* A driver-API program linked with libcuda that nevertheless takes its entry points with
 * dlsym(RTLD_DEFAULT, ...) or dlsym(RTLD_NEXT, ...) from the main program, as some plugins and language
 * bindings do. Usage: rtld default|next. Ten launches on the legacy stream, then a stream synchronize. */
#define _GNU_SOURCE
#include <dlfcn.h>

#include "common.h"
#include "drv.h"

static struct drv D; /* entry points from the global scope */

#define CK(call)                                                                                                                                               \
    do {                                                                                                                                                       \
        CUresult rc_ = (call);                                                                                                                                 \
        if (rc_ != CUDA_SUCCESS)                                                                                                                               \
            report_error(D.cuGetErrorName, #call, rc_, 0);                                                                                                     \
    } while (0)

static void *scope; /* RTLD_DEFAULT or RTLD_NEXT */

static void *symbol(const char *name)
{
    void *p = dlsym(scope, name);
    if (p == NULL) {
        fprintf(stderr, "dlsym(%s) failed: %s\n", name, dlerror());
        exit(1);
    }
    return p;
}

int main(int argc, char **argv)
{
    CUdevice dev;
    CUcontext ctx;
    CUmodule mod;
    CUfunction f_step;
    CUdeviceptr dbuf;
    int nelem = NELEM;
    void *args[] = {&dbuf, &nelem};

    setvbuf(stdout, NULL, _IOLBF, 0);
    if (argc != 2 || (strcmp(argv[1], "default") != 0 && strcmp(argv[1], "next") != 0)) {
        fprintf(stderr, "usage: rtld default|next\n");
        return 2;
    }
    scope = strcmp(argv[1], "default") == 0 ? RTLD_DEFAULT : RTLD_NEXT;
#define DRV_BY_SCOPE(fn) D.fn = (__typeof__(D.fn))symbol(DRV_SYMBOL(fn));
    DRV_FUNCS(DRV_BY_SCOPE)
#undef DRV_BY_SCOPE
    CK(D.cuInit(0));
    CK(D.cuDeviceGet(&dev, 0));
    CK(D.cuDevicePrimaryCtxRetain(&ctx, dev));
    CK(D.cuCtxSetCurrent(ctx));
    CK(D.cuModuleLoadData(&mod, MODULE_IMAGE));
    CK(D.cuModuleGetFunction(&f_step, mod, K_STEP));
    CK(D.cuMemAlloc(&dbuf, NELEM * sizeof(float)));
    for (int i = 0; i < 10; i++)
        CK(D.cuLaunchKernel(f_step, 4, 1, 1, 64, 1, 1, 0, NULL, args, NULL)); /* rtld */ /* CULPRIT-LAUNCH */
    CK(D.cuStreamSynchronize(NULL));
    printf("rtld %s: synchronized\n", argv[1]);
    return 0;
}
