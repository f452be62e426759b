/* The error's text as programs read it: a driver-API program linked with the CUDA runtime (the simulated one,
 * fakecudart.c) and the driver, whose kernel faults (FAKECUDA_FAULT); it prints the text of the error its
 * synchronize returned through every way a framework asks for it, and how the comparisons programs make with
 * the documented text come out. Each text is printed between "<<" and ">>" with its newlines as "\n", so a test
 * reads it back whole.
 *
 *   errtext print     the texts: runtime, driver (linked), driver (cuGetProcAddress), driver (dlsym), name
 *   errtext compare   strcmp and prefix comparisons of the runtime's and the driver's text with the documented one
 *   errtext threads   8 threads ask for both texts at once, 2000 times each: "threads agree: 1" when every answer
 *                     was the first one's text
 *   errtext fork      a child forked after the error prints the runtime's text of it ("child: <<...>>")
 *   errtext abort     prints the runtime's text and aborts, as a program that cannot go on after the error does
 * Without a fault the texts of no error, 700 and 710 are printed and it exits 0.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <unistd.h>

#include "common.h"

const char *cudaGetErrorString(int error); /* the runtime's (fakecudart.c), as cuda_runtime_api.h declares it */

#define CK(call)                                                                                                                                               \
    do {                                                                                                                                                       \
        CUresult rc_ = (call);                                                                                                                                 \
        if (rc_ != CUDA_SUCCESS)                                                                                                                               \
            report_error(cuGetErrorName, #call, rc_, 0);                                                                                                       \
    } while (0)

typedef CUresult (*errstr_fn)(CUresult, const char **);

static void show(const char *label, const char *s)
{
    printf("%s: <<", label);
    for (; s && *s; s++)
        if (*s == '\n')
            fputs("\\n", stdout);
        else
            putchar(*s);
    printf(">>\n");
}

static CUresult g_rc;      /* the error the synchronize returned */
static const char *g_want; /* the text every thread must get */
static int g_disagree;     /* a thread got another text */

static void *ask(void *arg)
{
    (void)arg;
    for (int i = 0; i < 2000; i++) {
        const char *s = NULL;
        cuGetErrorString(g_rc, &s);
        if (strcmp(cudaGetErrorString((int)g_rc), g_want) || !s || strcmp(s, g_want))
            __atomic_store_n(&g_disagree, 1, __ATOMIC_RELAXED);
    }
    return NULL;
}

/* The documented text of a code: what the runtime and the driver say for it without culprit. */
static const char *documented(CUresult rc)
{
    return rc == CUDA_ERROR_ASSERT ? "device-side assert triggered" : "an illegal memory access was encountered";
}

int main(int argc, char **argv)
{
    CUdevice dev;
    CUcontext ctx;
    CUmodule mod;
    CUfunction f;
    CUdeviceptr d;
    int n = NELEM;
    void *args[] = {&d, &n};
    const char *s = NULL, *again = NULL;
    errstr_fn by_gpa = NULL, by_dlsym = NULL;

    if (argc < 2)
        return 2;
    CK(cuInit(0));
    CK(cuDeviceGet(&dev, 0));
    CK(cuDevicePrimaryCtxRetain(&ctx, dev));
    CK(cuCtxSetCurrent(ctx));
    CK(cuModuleLoadData(&mod, MODULE_IMAGE));
    CK(cuModuleGetFunction(&f, mod, K_BAD));
    CK(cuMemAlloc(&d, NELEM * sizeof(int)));
    for (int i = 0; i < 3; i++)
        CK(cuLaunchKernel(f, 4, 1, 1, 64, 1, 1, 0, NULL, args, NULL)); /* CULPRIT-LAUNCH */
    CUresult rc = cuCtxSynchronize();
    printf("rc=%d\n", (int)rc);
    if (rc == CUDA_SUCCESS) {
        show("runtime-0", cudaGetErrorString(0));
        show("runtime-700", cudaGetErrorString(700));
        show("runtime-710", cudaGetErrorString(710));
        cuGetErrorString(CUDA_ERROR_ILLEGAL_ADDRESS, &s);
        show("driver-700", s);
        return 0;
    }
    if (strcmp(argv[1], "threads") == 0) {
        pthread_t t[8];
        g_rc = rc;
        g_want = cudaGetErrorString((int)rc);
        show("runtime", g_want);
        for (int i = 0; i < 8; i++)
            pthread_create(&t[i], NULL, ask, NULL);
        for (int i = 0; i < 8; i++)
            pthread_join(t[i], NULL);
        printf("threads agree: %d\n", !g_disagree);
    } else if (strcmp(argv[1], "abort") == 0) {
        show("runtime", cudaGetErrorString((int)rc));
        fflush(stdout);
        abort();
    } else if (strcmp(argv[1], "fork") == 0) {
        show("parent", cudaGetErrorString((int)rc));
        fflush(stdout);
        pid_t pid = fork();
        if (pid == 0) {
            show("child", cudaGetErrorString((int)rc));
            fflush(stdout);
            _exit(0);
        }
        wait_child(pid);
    } else if (strcmp(argv[1], "print") == 0) {
        show("runtime", cudaGetErrorString((int)rc));
        show("runtime-other", cudaGetErrorString(1));
        cuGetErrorString(rc, &s);
        show("driver", s);
        cuGetProcAddress("cuGetErrorString", (void **)&by_gpa, 13000, 0, NULL);
        if (by_gpa && by_gpa(rc, &s) == CUDA_SUCCESS)
            show("driver-procaddr", s);
        by_dlsym = (errstr_fn)dlsym(RTLD_DEFAULT, "cuGetErrorString");
        if (by_dlsym && by_dlsym(rc, &s) == CUDA_SUCCESS)
            show("driver-dlsym", s);
        cuGetErrorName(rc, &s);
        show("name", s);
        s = cudaGetErrorString((int)rc);
        again = cudaGetErrorString((int)rc);
        printf("same pointer: %d\n", s == again);
    } else {
        const char *doc = documented(rc);
        const char *rt = cudaGetErrorString((int)rc);
        cuGetErrorString(rc, &s);
        printf("runtime equal: %d\n", strcmp(rt, doc) == 0);
        printf("runtime prefix: %d\n", strncmp(rt, doc, strlen(doc)) == 0);
        printf("runtime first line: %d\n", strcspn(rt, "\n") == strlen(doc));
        printf("driver equal: %d\n", strcmp(s, doc) == 0);
        printf("driver prefix: %d\n", strncmp(s, doc, strlen(doc)) == 0);
    }
    fflush(stdout);
    return 1; /* as a program that met the error leaves */
}
