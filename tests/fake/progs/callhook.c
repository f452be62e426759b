/* Calls one driver entry point by name, as a program that dlsym()s the driver would, with every argument zero,
 * and prints what it returned. With FAKECUDA_FAIL making that entry point fail, the simulated driver touches no
 * argument, so every hooked function can be exercised the same way. Usage: callhook SYMBOL */
#include <cuda.h>
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>

typedef CUresult (*any_fn)(uintptr_t, uintptr_t, uintptr_t, uintptr_t, uintptr_t, uintptr_t, uintptr_t, uintptr_t, uintptr_t, uintptr_t, uintptr_t);

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: callhook SYMBOL\n");
        return 2;
    }
    void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        fprintf(stderr, "callhook: %s\n", dlerror());
        return 2;
    }
    CUresult (*init)(unsigned) = (CUresult(*)(unsigned))dlsym(h, "cuInit");
    void *fn = dlsym(h, argv[1]);
    if (!init || !fn) {
        printf("missing\n");
        return 0;
    }
    if (init(0) != CUDA_SUCCESS && *argv[1] && argv[1][2] != 'I') {
        fprintf(stderr, "callhook: cuInit failed\n");
        return 2;
    }
    /* x86-64: extra integer arguments are ignored by a callee that takes fewer, and none of the hooked entry
   * points takes a floating-point argument. */
    CUresult rc = ((any_fn)fn)(0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0);
    printf("rc=%d\n", (int)rc);
    return 0;
}
