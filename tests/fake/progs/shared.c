/* Eight threads launching on one stream (the legacy default stream) at the same time; one launch of one thread
 * is the faulty kernel. Whatever order their launches reach the stream in, culprit may list several suspects but
 * must never call an innocent launch exact. Usage: shared (the fault is scripted as kernel=write_oob). */
#include <cuda.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "common.h"

#define CK(call) CK_DRIVER(call)

static CUfunction f_step, f_bad;
static CUcontext g_ctx;
static pthread_barrier_t g_start;

static void *worker(void *arg)
{
    int id = (int)(intptr_t)arg;
    CK(cuCtxSetCurrent(g_ctx));
    pthread_barrier_wait(&g_start);
    for (int i = 0; i < 50; i++) {
        if (id == 3 && i == 20)
            CK(cuLaunchKernel(f_bad, 1, 1, 1, 32, 1, 1, 0, NULL, NULL, NULL)); /* CULPRIT-LAUNCH */
        else
            CK(cuLaunchKernel(f_step, 1, 1, 1, 32, 1, 1, 0, NULL, NULL, NULL));
    }
    return NULL;
}

int main(void)
{
    pthread_t t[8];
    CUdevice dev;
    CUmodule mod;
    CK(cuInit(0));
    CK(cuDeviceGet(&dev, 0));
    CK(cuDevicePrimaryCtxRetain(&g_ctx, dev));
    CK(cuCtxSetCurrent(g_ctx));
    CK(cuModuleLoadData(&mod, MODULE_IMAGE));
    CK(cuModuleGetFunction(&f_step, mod, K_STEP));
    CK(cuModuleGetFunction(&f_bad, mod, K_BAD));
    pthread_barrier_init(&g_start, NULL, 8);
    for (int i = 0; i < 8; i++)
        pthread_create(&t[i], NULL, worker, (void *)(intptr_t)i);
    for (int i = 0; i < 8; i++)
        pthread_join(t[i], NULL);
    CK(cuCtxSynchronize());
    printf("shared: done\n");
    return 0;
}
