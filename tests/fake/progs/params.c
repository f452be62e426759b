/* A driver-API program whose kernels declare their parameters (the simulated driver answers cuFuncGetParamInfo
 * for them): it launches them with arguments of every shape, in every launch form, from two streams, a forked
 * child and eight threads, then makes one launch fault. It prints what it passed ("name=0x..." lines on stdout),
 * so the tests can check each launch's recorded parameters against it. Usage: params SCENARIO. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common.h"

#define CK(call) CK_DRIVER(call)

/* The kernels, with their parameters' sizes: step(float*, int), write_oob(int*, int) (the one made to fault),
 * mixed(int, float*, struct {long long; int*}), wide(nine long longs: 72 bytes, more than a record keeps), and
 * step's twin without a declared list (nothing known of its parameters). */
#define K_MIXED "_Z5mixedlPf4pair"
#define K_WIDE "_Z4widexxxxxxxxx"
#define PARAMS_IMAGE "fakecubin:" K_STEP "(8,4)," K_BAD "(8,4)," K_MIXED "(4,8,16)," K_WIDE "(8,8,8,8,8,8,8,8,8),_Z7unknownPf"
/* The same kernels, none declaring its parameters (a driver that cannot describe them). */
#define PLAIN_IMAGE "fakecubin:" K_STEP "," K_BAD "," K_MIXED "," K_WIDE ",_Z7unknownPf"

struct pair {
    long long n; /* a count */
    void *p;     /* a pointer inside a struct */
};

static CUcontext ctx;
static CUfunction f_step, f_bad, f_mixed, f_wide, f_unknown;

static const char *image = PARAMS_IMAGE;

/* Device 0's primary context, made current. */
static void use_device0(void)
{
    CUdevice dev;
    CK(cuInit(0));
    CK(cuDeviceGet(&dev, 0));
    CK(cuDevicePrimaryCtxRetain(&ctx, dev));
    CK(cuCtxSetCurrent(ctx));
}

static void setup(void)
{
    CUmodule mod;
    use_device0();
    CK(cuModuleLoadData(&mod, image));
    CK(cuModuleGetFunction(&f_step, mod, K_STEP));
    CK(cuModuleGetFunction(&f_bad, mod, K_BAD));
    CK(cuModuleGetFunction(&f_mixed, mod, K_MIXED));
    CK(cuModuleGetFunction(&f_wide, mod, K_WIDE));
    CK(cuModuleGetFunction(&f_unknown, mod, "_Z7unknownPf"));
}

static void say(const char *name, uint64_t v)
{
    printf("%s=0x%llx\n", name, (unsigned long long)v);
    fflush(stdout);
}

/* write_oob(buf, n) on stream s. */
static void bad(CUstream s, CUdeviceptr buf, int n)
{
    void *args[] = {&buf, &n};
    CK(cuLaunchKernel(f_bad, 2, 1, 1, 128, 1, 1, 0, s, args, NULL));
}

/* Every shape and launch form, then write_oob faults. */
static int record(void)
{
    CUdeviceptr a, b;
    setup();
    CK(cuMemAlloc(&a, 4096));
    CK(cuMemAlloc(&b, 8192));
    say("a", a);
    say("b", b);
    int n = 77;
    void *step_args[] = {&a, &n};
    CK(cuLaunchKernel(f_step, 1, 1, 1, 32, 1, 1, 0, NULL, step_args, NULL));
    int i = -5;
    struct pair pr = {0x1234567890LL, (void *)(uintptr_t)b};
    void *mixed_args[] = {&i, &a, &pr};
    CK(cuLaunchKernel(f_mixed, 1, 1, 1, 32, 1, 1, 0, NULL, mixed_args, NULL));
    long long w[9];
    void *wide_args[9];
    for (int k = 0; k < 9; k++) {
        w[k] = 0x1000 + k;
        wide_args[k] = &w[k];
    }
    CK(cuLaunchKernel(f_wide, 1, 1, 1, 32, 1, 1, 0, NULL, wide_args, NULL));
    /* the packed buffer handed over whole */
    struct {
        CUdeviceptr p;
        int n;
        int pad;
    } packed = {b, 99, 0};
    size_t packed_size = 12;
    void *extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, &packed, CU_LAUNCH_PARAM_BUFFER_SIZE, &packed_size, CU_LAUNCH_PARAM_END};
    CK(cuLaunchKernel(f_step, 1, 1, 1, 64, 1, 1, 0, NULL, NULL, extra));
    /* cuLaunchKernelEx */
    CUlaunchConfig cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.gridDimX = cfg.gridDimY = cfg.gridDimZ = 1;
    cfg.blockDimX = 96, cfg.blockDimY = cfg.blockDimZ = 1;
    int m = 3;
    void *ex_args[] = {&b, &m};
    CK(cuLaunchKernelEx(&cfg, f_step, ex_args, NULL));
    void *unknown_args[] = {&a};
    CK(cuLaunchKernel(f_unknown, 1, 1, 1, 32, 1, 1, 0, NULL, unknown_args, NULL));
    bad(NULL, a, 16);
    CK(cuCtxSynchronize());
    return 0;
}

/* A graph captured from write_oob(a, 5) on a stream, then launched: the graph launch keeps no parameters (its
 * nodes, listed with it, keep theirs). */
static int graph(void)
{
    CUstream s;
    CUdeviceptr a;
    CUgraph g;
    CUgraphExec exec;
    setup();
    CK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CK(cuMemAlloc(&a, 4096));
    say("a", a);
    CK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    bad(s, a, 5);
    CK(cuStreamEndCapture(s, &g));
    CK(cuGraphInstantiateWithFlags(&exec, g, 0));
    CK(cuGraphLaunch(exec, s));
    CK(cuCtxSynchronize());
    return 0;
}

/* Two streams launch write_oob with the same grid, each on its own buffer (or, with "same", both on a); the test
 * makes the second fault. */
/* The set-up of the scenarios of two streams: the streams, and a buffer of 4096 bytes for each, printed. */
static void two_streams(CUstream *s1, CUstream *s2, CUdeviceptr *a, CUdeviceptr *b)
{
    setup();
    CK(cuStreamCreate(s1, CU_STREAM_NON_BLOCKING));
    CK(cuStreamCreate(s2, CU_STREAM_NON_BLOCKING));
    CK(cuMemAlloc(a, 4096));
    CK(cuMemAlloc(b, 4096));
    say("a", *a);
    say("b", *b);
}

static int streams(int same)
{
    CUstream s1, s2;
    CUdeviceptr a, b;
    two_streams(&s1, &s2, &a, &b);
    bad(s1, a, 16);
    bad(s2, same ? a : b, 16);
    CK(cuCtxSynchronize());
    return 0;
}

/* One kernel on two streams, the second stream's launches several: stream 2 runs write_oob four times on b ("several"), or on b between launches of a kernel the driver does not describe ("likely": their
 * parameters are not kept), then stream 1 six times on a; the test makes a launch on stream 2 fault past b. */
static int streams_several(int likely)
{
    CUstream s1, s2;
    CUdeviceptr a, b;
    two_streams(&s1, &s2, &a, &b);
    void *unknown_args[] = {&b};
    for (int i = 0; i < 4; i++) {
        if (likely && i != 2)
            CK(cuLaunchKernel(f_unknown, 1, 1, 1, 32, 1, 1, 0, s2, unknown_args, NULL));
        else
            bad(s2, b, 16);
    }
    /* more than a synchronize runs on stream 1 before stream 2's fault (streams are drained one op each in turn):
     * some are left unfinished, candidates too */
    for (int i = 0; i < 6; i++)
        bad(s1, a, 16);
    CK(cuCtxSynchronize());
    return 0;
}

/* The parent launches on its buffer, then forks; the child launches on its own and faults. */
static int forked(void)
{
    CUdeviceptr p, c;
    setup();
    CK(cuMemAlloc(&p, 4096));
    say("parent", p);
    bad(NULL, p, 1);
    CK(cuCtxSynchronize());
    pid_t pid = fork();
    if (pid == 0) {
        CK(cuMemAlloc(&c, 128));
        say("child", c);
        bad(NULL, c, 2);
        CK(cuCtxSynchronize());
        _exit(0);
    }
    wait_child(pid);
    return 0;
}

/* Eight threads, each launching step(its buffer, its index) on a stream of its own; then write_oob faults. */
#define THREADS 8
#define PER_THREAD 4
static CUdeviceptr tbuf[THREADS];
static void *launcher(void *p)
{
    int idx = (int)(intptr_t)p;
    CUstream s;
    CK(cuCtxSetCurrent(ctx));
    CK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    for (int k = 0; k < PER_THREAD; k++) {
        void *args[] = {&tbuf[idx], &idx};
        CK(cuLaunchKernel(f_step, 1, 1, 1, 32, 1, 1, 0, s, args, NULL));
    }
    return NULL; /* its launches are still queued when write_oob faults: they are all candidates */
}
static int threads(void)
{
    pthread_t t[THREADS];
    char name[16];
    setup();
    for (int i = 0; i < THREADS; i++) {
        CK(cuMemAlloc(&tbuf[i], 256));
        snprintf(name, sizeof name, "t%d", i);
        say(name, tbuf[i]);
    }
    for (int i = 0; i < THREADS; i++)
        pthread_create(&t[i], NULL, launcher, (void *)(intptr_t)i);
    for (int i = 0; i < THREADS; i++)
        pthread_join(t[i], NULL);
    bad(NULL, tbuf[0], THREADS);
    CK(cuCtxSynchronize());
    return 0;
}

/* cudart's way: a kernel of a library (CUkernel), launched through cuLaunchKernel as if it were a function. step
 * on buf, then write_oob, which faults. */
static int library(void)
{
    CUlibrary lib;
    CUkernel k_step, k_bad;
    CUdeviceptr buf;
    int n = 64;
    use_device0();
    CK(cuLibraryLoadData(&lib, image, NULL, NULL, 0, NULL, NULL, 0));
    CK(cuLibraryGetKernel(&k_step, lib, K_STEP));
    CK(cuLibraryGetKernel(&k_bad, lib, K_BAD));
    CK(cuMemAlloc(&buf, 4096));
    say("buf", buf);
    void *args[] = {&buf, &n};
    CK(cuLaunchKernel((CUfunction)k_step, 1, 1, 1, 64, 1, 1, 0, NULL, args, NULL));
    CK(cuLaunchKernel((CUfunction)k_bad, 1, 1, 1, 64, 1, 1, 0, NULL, args, NULL));
    CK(cuCtxSynchronize());
    return 0;
}

/* The buffers write_oob was given: a (live, 4096 bytes) for step, then write_oob on a + 256 and, with "freed",
 * on f, a buffer freed before the launch (a use after free); write_oob faults. With "freed-then", three steps on
 * a come between the free and it, so that record mode's verdict is a window of candidates. */
static int buffers(int freed, int then)
{
    CUdeviceptr a, f;
    int n = 32;
    setup();
    CK(cuMemAlloc(&a, 4096));
    CK(cuMemAlloc(&f, 2048));
    say("a", a);
    say("f", f);
    void *args[] = {&a, &n};
    CK(cuLaunchKernel(f_step, 1, 1, 1, 32, 1, 1, 0, NULL, args, NULL));
    CK(cuCtxSynchronize());
    if (freed)
        CK(cuMemFree(f));
    for (int i = 0; i < 3 * then; i++)
        CK(cuLaunchKernel(f_step, 1, 1, 1, 32, 1, 1, 0, NULL, args, NULL));
    bad(NULL, freed ? f : a + 256, n);
    CK(cuCtxSynchronize());
    return 0;
}

int main(int argc, char **argv)
{
    const char *s = argc > 1 ? argv[1] : "";
    const char *how = argc > 2 ? argv[2] : "";
    if (!strcmp(how, "nolayout"))
        image = PLAIN_IMAGE;
    if (!strcmp(s, "record"))
        return record();
    if (!strcmp(s, "streams") && (!strcmp(how, "several") || !strcmp(how, "likely")))
        return streams_several(!strcmp(how, "likely"));
    if (!strcmp(s, "streams"))
        return streams(!strcmp(how, "same"));
    if (!strcmp(s, "fork"))
        return forked();
    if (!strcmp(s, "threads"))
        return threads();
    if (!strcmp(s, "graph"))
        return graph();
    if (!strcmp(s, "library"))
        return library();
    if (!strcmp(s, "buffers"))
        return buffers(!strncmp(how, "freed", 5), !strcmp(how, "freed-then"));
    fprintf(stderr, "usage: params record|streams|fork|threads|graph|library|buffers [nolayout|same|several|likely|freed|freed-then]\n");
    return 2;
}
