/* Memory under many launching threads: N threads (argv[1]) each make a stream and launch 20000 kernels, then the
 * program prints how much its resident set grew, in KiB. cases.py runs it with and without culprit. */
#include <cuda.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"

#define CK(call) CK_DRIVER(call)

static CUfunction f_step;
static CUcontext g_ctx;

static void *worker(void *arg)
{
    CUstream s;
    (void)arg;
    CK(cuCtxSetCurrent(g_ctx));
    CK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    for (int i = 0; i < 20000; i++) {
        CK(cuLaunchKernel(f_step, 1, 1, 1, 32, 1, 1, 0, s, NULL, NULL));
        if (i % 500 == 499)
            CK(cuStreamSynchronize(s));
    }
    CK(cuStreamSynchronize(s));
    CK(cuStreamDestroy(s));
    return NULL;
}

static long rss_kib(void)
{
    FILE *fp = fopen("/proc/self/status", "r");
    char line[256];
    long v = -1;
    while (fp && fgets(line, sizeof line, fp))
        if (strncmp(line, "VmRSS:", 6) == 0)
            v = atol(line + 6);
    if (fp)
        fclose(fp);
    return v;
}

int main(int argc, char **argv)
{
    int n = argc > 1 ? atoi(argv[1]) : 32;
    pthread_t t[256];
    CUdevice dev;
    CUmodule mod;
    if (n < 1 || n > 256)
        return 2;
    CK(cuInit(0));
    CK(cuDeviceGet(&dev, 0));
    CK(cuDevicePrimaryCtxRetain(&g_ctx, dev));
    CK(cuCtxSetCurrent(g_ctx));
    CK(cuModuleLoadData(&mod, MODULE_IMAGE));
    CK(cuModuleGetFunction(&f_step, mod, K_STEP));
    long before = rss_kib();
    for (int i = 0; i < n; i++)
        pthread_create(&t[i], NULL, worker, NULL);
    for (int i = 0; i < n; i++)
        pthread_join(t[i], NULL);
    printf("rss_growth_kib=%ld\n", rss_kib() - before);
    return 0;
}
