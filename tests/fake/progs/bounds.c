/* Completion bounds without breadcrumbs: work on the legacy stream that the program itself proved complete (an
 * event it synchronized or queried, a stream query that answered "done") must drop out of record mode's
 * window of suspects; and a device reset in the middle; scoped blocking filters (filters). Usage:
 * bounds eventsync|eventquery|streamquery|reset|paused|graphglobal|filters;
 * the fault is scripted as launch=19. */
#include <cuda.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"
#include "culprit.h"

#define CK(call) CK_DRIVER(call)

static CUfunction f_step;

static void launches(int n, float *buf, int len)
{
    void *args[] = {&buf, &len};
    for (int i = 0; i < n; i++)
        CK(cuLaunchKernel(f_step, 4, 1, 1, 64, 1, 1, 0, NULL, args, NULL)); /* CULPRIT-LAUNCH */
}

int main(int argc, char **argv)
{
    CUdevice dev;
    CUcontext ctx;
    CUmodule mod;
    CUevent ev;
    CUresult rc;
    CUdeviceptr dbuf;
    float *buf;
    int len = 256;
    const char *how = argc > 1 ? argv[1] : "";
    CK(cuInit(0));
    CK(cuDeviceGet(&dev, 0));
    CK(cuDevicePrimaryCtxRetain(&ctx, dev));
    CK(cuCtxSetCurrent(ctx));
    CK(cuModuleLoadData(&mod, MODULE_IMAGE));
    CK(cuModuleGetFunction(&f_step, mod, K_STEP));
    CK(cuEventCreate(&ev, CU_EVENT_DEFAULT));
    CK(cuMemAlloc(&dbuf, NELEM * sizeof(float)));
    buf = (float *)(uintptr_t)dbuf;
    if (strcmp(how, "graphglobal") == 0) {
        /* The first work of the process is a global-mode capture on a new stream: a pinned allocation by culprit
     * now would invalidate the program's graph. */
        CUstream st;
        CUgraph g;
        CUgraphExec exec;
        void *gargs[] = {&buf, &len};
        CK(cuStreamCreate(&st, CU_STREAM_NON_BLOCKING));
        CK(cuStreamBeginCapture(st, CU_STREAM_CAPTURE_MODE_GLOBAL));
        for (int i = 0; i < 3; i++)
            CK(cuLaunchKernel(f_step, 4, 1, 1, 64, 1, 1, 0, st, gargs, NULL));
        CK(cuStreamEndCapture(st, &g));
        CK(cuGraphInstantiateWithFlags(&exec, g, 0));
        CK(cuGraphLaunch(exec, st));
        CK(cuStreamSynchronize(st));
        printf("bounds: graph captured and replayed\n");
        return 0;
    }
    if (strcmp(how, "filters") == 0) {
        /* Scoped blocking with kernel filters that change: the filter's answer, remembered per kernel name, must
     * follow each scope (launches 1-2 and 5-6 match, 3-4 do not). */
        culprit_push(CULPRIT_BLOCKING, "*step*");
        launches(2, buf, len);
        culprit_pop();
        culprit_push(CULPRIT_BLOCKING, "*nomatch*");
        launches(2, buf, len);
        culprit_pop();
        culprit_push(CULPRIT_BLOCKING, "*step*");
        launches(2, buf, len);
        culprit_pop();
        CK(cuCtxSynchronize());
        printf("bounds: done\n");
        return 0;
    }
    if (strcmp(how, "paused") == 0) {
        /* The faulting launch is made while recording is paused: culprit never saw it, so it must not blame the
     * launch after it on the same stream. */
        culprit_push(CULPRIT_OFF, NULL);
        launches(1, buf, len);
        culprit_pop();
        launches(2, buf, len);
        CK(cuCtxSynchronize());
        printf("bounds: done\n");
        return 0;
    }
    launches(18, buf, len);
    if (strcmp(how, "eventsync") == 0) {
        CK(cuEventRecord(ev, NULL));
        CK(cuEventSynchronize(ev));
    } else if (strcmp(how, "eventquery") == 0) {
        CK(cuEventRecord(ev, NULL));
        while ((rc = cuEventQuery(ev)) == CUDA_ERROR_NOT_READY) {
        }
        CK(rc);
    } else if (strcmp(how, "streamquery") == 0) {
        while ((rc = cuStreamQuery(NULL)) == CUDA_ERROR_NOT_READY) {
        }
        CK(rc);
    } else if (strcmp(how, "reset") == 0) {
        /* The program resets the device (cudaDeviceReset) and starts again: the old context's breadcrumb memory is
     * gone; culprit must not use it, nor blame a launch of the context that no longer exists. */
        CK(cuCtxSynchronize());
        CK(cuDevicePrimaryCtxReset(dev));
        CK(cuDevicePrimaryCtxRetain(&ctx, dev));
        CK(cuCtxSetCurrent(ctx));
        CK(cuModuleLoadData(&mod, MODULE_IMAGE));
        CK(cuModuleGetFunction(&f_step, mod, K_STEP));
        CK(cuMemAlloc(&dbuf, NELEM * sizeof(float)));
        buf = (float *)(uintptr_t)dbuf;
    } else {
        fprintf(stderr, "usage: bounds eventsync|eventquery|streamquery|reset|paused|graphglobal|filters\n");
        return 2;
    }
    launches(3, buf, len);
    CK(cuCtxSynchronize());
    printf("bounds: done\n");
    return 0;
}
