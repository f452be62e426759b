/* A driver-API program (linked with libcuda) that forks. The child does its own launches, one of which faults;
 * after the child has exited the parent carries on, healthy, and later faults in a launch of its own. The real
 * driver forbids CUDA in a forked child; the simulated one allows it so fork handling can be exercised. */
#define _GNU_SOURCE
#include <sys/wait.h>
#include <unistd.h>

#include "common.h"

#define CK(call)                                                                                                                                               \
    do {                                                                                                                                                       \
        CUresult rc_ = (call);                                                                                                                                 \
        if (rc_ != CUDA_SUCCESS)                                                                                                                               \
            report_error(cuGetErrorName, #call, rc_, 0);                                                                                                       \
    } while (0)

int main(void)
{
    CUdevice dev;
    CUcontext ctx;
    CUmodule mod;
    CUfunction f_step, f_bad, f_late;
    CUdeviceptr dbuf;
    int nelem = NELEM, status = 0;
    void *args[] = {&dbuf, &nelem};

    setvbuf(stdout, NULL, _IOLBF, 0);
    CK(cuInit(0));
    CK(cuDeviceGet(&dev, 0));
    CK(cuDevicePrimaryCtxRetain(&ctx, dev));
    CK(cuCtxSetCurrent(ctx));
    CK(cuModuleLoadData(&mod, MODULE_IMAGE));
    CK(cuModuleGetFunction(&f_step, mod, K_STEP));
    CK(cuModuleGetFunction(&f_bad, mod, K_BAD));
    CK(cuModuleGetFunction(&f_late, mod, K_LATE));
    CK(cuMemAlloc(&dbuf, NELEM * sizeof(float)));
    for (int i = 0; i < 3; i++)
        CK(cuLaunchKernel(f_step, 4, 1, 1, 64, 1, 1, 0, NULL, args, NULL));
    CK(cuCtxSynchronize());
    printf("parent: warm-up done\n");

    pid_t child = fork();
    if (child < 0) {
        perror("fork");
        return 1;
    }
    if (child == 0) {
        for (int i = 0; i < 6; i++)
            CK(cuLaunchKernel(i == 3 ? f_bad : f_step, 2, 1, 1, 32, 1, 1, 0, NULL, args, NULL)); /* fork-child */ /* CULPRIT-LAUNCH */
        CK(cuCtxSynchronize());
        printf("child: synchronized\n");
        return 0;
    }
    if (waitpid(child, &status, 0) != child) {
        perror("waitpid");
        return 1;
    }
    printf("parent: child pid %ld exited with status %d\n", (long)child, WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
    for (int i = 0; i < 2; i++)
        CK(cuLaunchKernel(f_step, 4, 1, 1, 64, 1, 1, 0, NULL, args, NULL));
    CK(cuCtxSynchronize());
    printf("parent: healthy after the child\n");
    for (int i = 0; i < 4; i++)
        CK(cuLaunchKernel(i == 1 ? f_late : f_step, 4, 1, 1, 64, 1, 1, 0, NULL, args, NULL)); /* fork-parent */ /* CULPRIT-LAUNCH */
    CK(cuCtxSynchronize());
    printf("parent: synchronized\n");
    return 0;
}
