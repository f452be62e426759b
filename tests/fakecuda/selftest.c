/* Self-test of the simulated CUDA driver: a plain driver-API program, linked with -lcuda against the fake and run
 * without culprit, that checks the behaviour SPEC.md promises. Each case runs in its own process (the fake reads
 * its FAKECUDA_* variables once per process): with no argument the program re-executes itself once per case with
 * that case's environment and prints "N passed, N failed". */
#define _GNU_SOURCE
#include <cuda.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define CHECK(cond)                                                                                                    \
    do {                                                                                                               \
        if (!(cond)) {                                                                                                 \
            fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond);                                   \
            exit(1);                                                                                                   \
        }                                                                                                              \
    } while (0)
#define EXPECT(call, code)                                                                                             \
    do {                                                                                                               \
        CUresult rc_ = (call);                                                                                         \
        if (rc_ != (code)) {                                                                                           \
            fprintf(stderr, "%s:%d: %s returned %d, expected %d\n", __FILE__, __LINE__, #call, (int)rc_, (int)(code)); \
            exit(1);                                                                                                   \
        }                                                                                                              \
    } while (0)
#define OK(call) EXPECT(call, CUDA_SUCCESS)

typedef CUresult (*stream_fn)(CUstream);
typedef CUresult (*write64_fn)(CUstream, CUdeviceptr, cuuint64_t, unsigned int);
typedef CUresult (*launch_fn)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                              CUstream, void **, void **);

/* What most cases start from: the primary context of device 0 current, a module with a good and a bad kernel,
 * and one host-mapped breadcrumb page. */
struct env {
    CUcontext ctx;                     /* primary context of device 0 */
    CUfunction good;                   /* "good_kernel" */
    CUfunction bad;                    /* "_Z9write_oobPii" */
    volatile unsigned long long *slot; /* host view of the mapped page (8 slots) */
    CUdeviceptr dslot;                 /* device view of the same page */
};

static void setup(struct env *e)
{
    CUmodule mod;
    OK(cuInit(0));
    OK(cuDevicePrimaryCtxRetain(&e->ctx, 0));
    OK(cuCtxSetCurrent(e->ctx));
    OK(cuModuleLoadData(&mod, "fakecubin:good_kernel, _Z9write_oobPii"));
    OK(cuModuleGetFunction(&e->good, mod, "good_kernel"));
    OK(cuModuleGetFunction(&e->bad, mod, "_Z9write_oobPii"));
    void *p;
    OK(cuMemHostAlloc(&p, 64, CU_MEMHOSTALLOC_DEVICEMAP | CU_MEMHOSTALLOC_PORTABLE));
    e->slot = p;
    OK(cuMemHostGetDevicePointer(&e->dslot, p, 0));
}

static CUresult launch(CUfunction f, CUstream s)
{
    return cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, s, NULL, NULL);
}

static void *lookup(const char *name, int version, int per_thread)
{
    void *p = NULL;
    CUdriverProcAddressQueryResult st;
    OK(cuGetProcAddress(name, &p, version, per_thread ? CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM : 0, &st));
    CHECK(st == CU_GET_PROC_ADDRESS_SUCCESS && p);
    return p;
}

/* Redirects fd (1 or 2) into a temporary file; returns the file to read back. */
static FILE *capture_fd(int fd)
{
    FILE *f = tmpfile();
    CHECK(f);
    fflush(NULL);
    CHECK(dup2(fileno(f), fd) == fd);
    return f;
}

static int file_has(FILE *f, const char *needle)
{
    char buf[8192];
    fflush(NULL);
    rewind(f);
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    buf[n] = 0;
    return strstr(buf, needle) != NULL;
}

/* ---- cases ------------------------------------------------------------------------------------------------ */

static void t_lookup(void)
{
    static const struct {
        const char *base;   /* name asked for */
        int version;        /* CUDA version asked for */
        int per_thread;     /* flag CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM */
        const char *symbol; /* exported symbol expected */
    } rows[] = {
        {"cuMemcpyHtoD", 13000, 0, "cuMemcpyHtoD_v2"},
        {"cuMemcpyHtoD", 13000, 1, "cuMemcpyHtoD_v2_ptds"},
        {"cuMemcpyHtoDAsync", 13000, 1, "cuMemcpyHtoDAsync_v2_ptsz"},
        {"cuMemsetD32Async", 13000, 1, "cuMemsetD32Async_ptsz"},
        {"cuStreamWriteValue64", 12000, 0, "cuStreamWriteValue64_v2"},
        {"cuStreamWriteValue64", 13000, 1, "cuStreamWriteValue64_v2_ptsz"},
        {"cuStreamWriteValue64", 11000, 0, "cuStreamWriteValue64"},
        {"cuCtxCreate", 13000, 0, "cuCtxCreate_v4"},
        {"cuCtxCreate", 11040, 0, "cuCtxCreate_v3"},
        {"cuCtxCreate", 11000, 0, "cuCtxCreate_v2"},
        {"cuCtxSynchronize", 13000, 0, "cuCtxSynchronize_v2"},
        {"cuCtxSynchronize", 12080, 0, "cuCtxSynchronize"},
        {"cuLaunchKernel", 13000, 1, "cuLaunchKernel_ptsz"},
        {"cuLaunchKernel", 13000, 0, "cuLaunchKernel"},
        {"cuStreamSynchronize", 13000, 1, "cuStreamSynchronize_ptsz"},
        {"cuStreamDestroy", 13000, 0, "cuStreamDestroy_v2"},
        {"cuStreamBeginCapture", 13000, 1, "cuStreamBeginCapture_v2_ptsz"},
        {"cuMemHostGetDevicePointer", 13000, 0, "cuMemHostGetDevicePointer_v2"},
        {"cuDevicePrimaryCtxRelease", 13000, 0, "cuDevicePrimaryCtxRelease_v2"},
        {"cuInit", 13000, 1, "cuInit"},
        {"cuMemAlloc", 13000, 1, "cuMemAlloc_v2"},
        {"cuGetProcAddress", 11030, 0, "cuGetProcAddress"},
        {"cuGetProcAddress", 12000, 0, "cuGetProcAddress_v2"},
    };
    void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    CHECK(lib);
    /* Before cuInit on purpose: lookup must not need it. */
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        void *want = dlsym(lib, rows[i].symbol), *got = lookup(rows[i].base, rows[i].version, rows[i].per_thread);
        if (!want || got != want) {
            fprintf(stderr, "lookup %s %d %d: expected %s\n", rows[i].base, rows[i].version, rows[i].per_thread,
                    rows[i].symbol);
            exit(1);
        }
    }
    CHECK(lookup("cuStreamSynchronize", 13000, 0) != lookup("cuStreamSynchronize", 13000, 1));
    /* As the real driver: _v2 reports a miss through the status with CUDA_SUCCESS, v1 with CUDA_ERROR_NOT_FOUND. */
    typedef CUresult (*gpa1_fn)(const char *, void **, int, cuuint64_t);
    gpa1_fn gpa1 = (gpa1_fn)dlsym(lib, "cuGetProcAddress");
    void *p = (void *)1;
    CUdriverProcAddressQueryResult st;
    OK(cuGetProcAddress("cuNoSuchThing", &p, 13000, 0, &st));
    CHECK(p == NULL && st == CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND);
    OK(cuGetProcAddress("cuLibraryLoadData", &p, 11080, 0, &st));
    CHECK(p == NULL && st == CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT);
    OK(cuGetProcAddress("cuLaunchKernel", &p, 5000, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM, &st));
    CHECK(p == NULL && st == CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT);
    EXPECT(cuGetProcAddress("cuLaunchKernel", &p, 13000, 4, &st), CUDA_ERROR_INVALID_VALUE);
    OK(cuGetProcAddress("cuLaunchKernel", &p, 13000, 3, &st));
    CHECK(p == dlsym(lib, "cuLaunchKernel_ptsz"));
    p = (void *)1;
    EXPECT(gpa1("cuNoSuchThing", &p, 13000, 0), CUDA_ERROR_NOT_FOUND);
    EXPECT(gpa1("cuMemcpyHtoD_v2", &p, 13000, 0), CUDA_ERROR_NOT_FOUND); /* base names only */
    CHECK(p == (void *)1);
    OK(gpa1("cuMemcpyHtoD", &p, 13000, 0));
    CHECK(p == dlsym(lib, "cuMemcpyHtoD_v2"));
    /* Only driver entry points are exported. */
    CHECK(dlsym(lib, "fc_begin") == NULL && dlsym(lib, "fc_g") == NULL);
    EXPECT(cuCtxSynchronize(), CUDA_ERROR_NOT_INITIALIZED);
}

static void t_canary(void)
{
    const void *table = NULL;
    CUuuid id;
    memset(&id, 0x5a, sizeof id);
    OK(cuGetExportTable(&table, &id));
    CHECK(table && *(const unsigned long long *)table == 0xC0FFEE0DDBA11ULL);
}

static void t_lazy(void)
{
    struct env e;
    CUstream s;
    setup(&e);
    CHECK(e.dslot != (CUdeviceptr)(uintptr_t)e.slot);
    OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    OK(launch(e.good, s));
    OK(cuStreamWriteValue64(s, e.dslot, 41, 0));
    CHECK(e.slot[0] == 0);
    OK(cuStreamSynchronize(s));
    CHECK(e.slot[0] == 41);
    OK(cuStreamWriteValue64(s, e.dslot + 8, 42, 0));
    CHECK(e.slot[1] == 0);
    OK(cuCtxSynchronize());
    CHECK(e.slot[1] == 42);
    OK(cuStreamWriteValue32(s, e.dslot + 16, 43, 0));
    OK(cuStreamQuery(s));
    CHECK(e.slot[2] == 43);
    /* A host pointer is not a device address; neither is a misaligned one. */
    EXPECT(cuStreamWriteValue64(s, (CUdeviceptr)(uintptr_t)e.slot, 1, 0), CUDA_ERROR_INVALID_VALUE);
    EXPECT(cuStreamWriteValue64(s, e.dslot + 4, 1, 0), CUDA_ERROR_INVALID_VALUE);

    /* The per-thread default stream is a different queue from the legacy one. */
    write64_fn write_pt = (write64_fn)lookup("cuStreamWriteValue64", 13000, 1);
    stream_fn sync_pt = (stream_fn)lookup("cuStreamSynchronize", 13000, 1);
    OK(write_pt(NULL, e.dslot + 24, 44, 0));
    OK(cuStreamSynchronize(NULL));
    CHECK(e.slot[3] == 0);
    OK(cuStreamSynchronize(CU_STREAM_PER_THREAD));
    CHECK(e.slot[3] == 44);
    OK(write_pt(NULL, e.dslot + 24, 45, 0));
    OK(sync_pt(NULL));
    CHECK(e.slot[3] == 45);

    /* Device memory round trip, synchronous and queued. */
    CUdeviceptr d;
    unsigned buf[4] = {1, 2, 3, 4}, out[4] = {0};
    OK(cuMemAlloc(&d, sizeof buf));
    CHECK(d != 0);
    OK(cuMemcpyHtoD(d, buf, sizeof buf));
    OK(cuMemcpyDtoH(out, d, sizeof out));
    CHECK(out[3] == 4);
    OK(cuMemsetD32Async(d, 9, 4, s));
    OK(cuMemcpyDtoHAsync(out, d, sizeof out, s));
    CHECK(out[0] == 1);
    OK(cuStreamSynchronize(s));
    CHECK(out[0] == 9 && out[3] == 9);
    OK(cuMemFree(d));
    EXPECT(cuMemFree(d), CUDA_ERROR_INVALID_VALUE);
    OK(cuStreamDestroy(s));
    EXPECT(cuStreamSynchronize(s), CUDA_ERROR_INVALID_HANDLE);
}

/* FAKECUDA_FAULT=launch=3 */
static void t_fault(void)
{
    struct env e;
    CUstream s;
    setup(&e);
    OK(cuStreamCreate(&s, 0));
    for (unsigned i = 1; i <= 5; i++) {
        OK(launch(e.good, s));
        OK(cuStreamWriteValue64(s, e.dslot, i, 0));
    }
    CHECK(e.slot[0] == 0);
    EXPECT(cuStreamSynchronize(s), CUDA_ERROR_ILLEGAL_ADDRESS);
    CHECK(e.slot[0] == 2); /* the last completed launch; the writes after launch 3 were discarded */
    EXPECT(launch(e.good, s), CUDA_ERROR_ILLEGAL_ADDRESS);
    EXPECT(cuStreamSynchronize(s), CUDA_ERROR_ILLEGAL_ADDRESS);
    EXPECT(cuCtxSynchronize(), CUDA_ERROR_ILLEGAL_ADDRESS);
    CUdeviceptr d;
    EXPECT(cuMemAlloc(&d, 16), CUDA_ERROR_ILLEGAL_ADDRESS);
    EXPECT(cuStreamWriteValue64(s, e.dslot, 9, 0), CUDA_ERROR_ILLEGAL_ADDRESS);
    CHECK(e.slot[0] == 2);
    /* Calls that do not touch device state keep working. */
    const char *name;
    OK(cuGetErrorName(CUDA_ERROR_ILLEGAL_ADDRESS, &name));
    CHECK(!strcmp(name, "CUDA_ERROR_ILLEGAL_ADDRESS"));
    OK(cuGetErrorString(CUDA_ERROR_ILLEGAL_ADDRESS, &name));
    CHECK(!strcmp(name, "an illegal memory access was encountered"));
    OK(cuFuncGetName(&name, e.good));
    CHECK(!strcmp(name, "good_kernel"));
    CUcontext cur, sctx;
    OK(cuCtxGetCurrent(&cur));
    CHECK(cur == e.ctx);
    OK(cuStreamGetCtx(s, &sctx));
    CHECK(sctx == e.ctx);
    int v;
    OK(cuDriverGetVersion(&v));
    CHECK(v == 13000);
    /* Another device's context is not affected. */
    CUcontext other;
    CUstream s2;
    OK(cuCtxCreate(&other, NULL, 0, 1));
    OK(cuStreamCreate(&s2, 0));
    OK(cuStreamWriteValue64(s2, e.dslot + 8, 7, 0));
    OK(cuStreamSynchronize(s2));
    CHECK(e.slot[1] == 7);
    OK(cuCtxDestroy(other));
    /* Resetting the primary context clears the error. */
    OK(cuDevicePrimaryCtxReset(0));
    OK(cuCtxSynchronize());
}

/* FAKECUDA_FAULT=kernel=write_oob,nth=2,code=710 */
static void t_assert(void)
{
    struct env e;
    setup(&e);
    FILE *out = capture_fd(1);
    CUfunction seq[5] = {e.good, e.bad, e.good, e.bad, e.good};
    for (unsigned i = 0; i < 5; i++) {
        OK(launch(seq[i], NULL));
        OK(cuStreamWriteValue64(NULL, e.dslot, i + 1, 0));
    }
    CHECK(!file_has(out, "Assertion"));
    EXPECT(cuCtxSynchronize(), CUDA_ERROR_ASSERT);
    CHECK(e.slot[0] == 3);
    CHECK(file_has(out, "void write_oob(...): block: [1,0,0], thread: [3,0,0] Assertion `idx < n` failed."));
}

/* FAKECUDA_FAULT=kernel=write_oob,code=710 with FAKECUDA_RUN_AHEAD=1: the assert fires when the next launch makes
 * the queue run ahead, and the error surfaces there; its text stays in the device's printf buffer (no launch,
 * query or copy prints it) until a synchronize of the faulted context, which prints it once. */
static void t_assert_held(void)
{
    struct env e;
    setup(&e);
    FILE *out = capture_fd(1);
    OK(launch(e.bad, NULL));
    CUresult rc = launch(e.good, NULL);
    if (rc == CUDA_SUCCESS)
        rc = launch(e.good, NULL);
    EXPECT(rc, CUDA_ERROR_ASSERT);
    EXPECT(cuStreamQuery(NULL), CUDA_ERROR_ASSERT);
    EXPECT(launch(e.good, NULL), CUDA_ERROR_ASSERT);
    CHECK(!file_has(out, "Assertion"));
    EXPECT(cuCtxSynchronize(), CUDA_ERROR_ASSERT);
    CHECK(file_has(out, "void write_oob(...): block: [1,0,0], thread: [3,0,0] Assertion `idx < n` failed."));
    EXPECT(cuStreamSynchronize(NULL), CUDA_ERROR_ASSERT);
    fflush(NULL);
    char buf[8192];
    rewind(out);
    size_t n = fread(buf, 1, sizeof buf - 1, out);
    buf[n] = '\0';
    char *first = strstr(buf, "Assertion");
    CHECK(first && !strstr(first + 1, "Assertion")); /* printed once */
}

/* FAKECUDA_FAULT=launch=2: launches are counted in enqueue order across streams; other streams' ops are dropped. */
static void t_fault_streams(void)
{
    struct env e;
    CUstream a, b;
    setup(&e);
    OK(cuStreamCreate(&a, 0));
    OK(cuStreamCreate(&b, 0));
    OK(launch(e.good, a));
    OK(cuStreamWriteValue64(a, e.dslot, 1, 0));
    OK(launch(e.good, b));
    OK(cuStreamWriteValue64(b, e.dslot + 8, 2, 0));
    OK(launch(e.good, a));
    OK(cuStreamWriteValue64(a, e.dslot, 3, 0));
    OK(cuStreamSynchronize(a));
    CHECK(e.slot[0] == 3);
    OK(launch(e.good, a));
    OK(cuStreamWriteValue64(a, e.dslot, 4, 0));
    EXPECT(cuStreamSynchronize(b), CUDA_ERROR_ILLEGAL_ADDRESS);
    CHECK(e.slot[1] == 0 && e.slot[0] == 3);
    EXPECT(cuStreamQuery(a), CUDA_ERROR_ILLEGAL_ADDRESS);
    CHECK(e.slot[0] == 3);
}

/* FAKECUDA_RUN_AHEAD=1 and FAKECUDA_FAULT=launch=3: work runs without a sync, and the fault surfaces at the
 * next call. */
static void t_run_ahead(void)
{
    struct env e;
    setup(&e);
    OK(launch(e.good, NULL));
    OK(cuStreamWriteValue64(NULL, e.dslot, 1, 0));
    CHECK(e.slot[0] == 0);
    OK(launch(e.good, NULL));
    CHECK(e.slot[0] == 1);
    OK(cuStreamWriteValue64(NULL, e.dslot, 2, 0));
    OK(launch(e.good, NULL));
    CHECK(e.slot[0] == 2);
    OK(cuStreamWriteValue64(NULL, e.dslot, 3, 0)); /* launch 3 runs here and faults */
    EXPECT(launch(e.good, NULL), CUDA_ERROR_ILLEGAL_ADDRESS);
    CHECK(e.slot[0] == 2);
}

/* FAKECUDA_FAULT=launch=2: captured launches are not counted; each graph launch queues (and counts) them anew. */
static void t_graph(void)
{
    struct env e;
    CUstream s;
    CUgraph g;
    CUgraphExec ge;
    CUstreamCaptureStatus st;
    setup(&e);
    OK(cuStreamCreate(&s, 0));
    OK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    OK(cuStreamIsCapturing(s, &st));
    CHECK(st == CU_STREAM_CAPTURE_STATUS_ACTIVE);
    OK(launch(e.good, s));
    OK(cuStreamWriteValue64(s, e.dslot, 7, 0));
    EXPECT(cuStreamSynchronize(s), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
    OK(cuStreamEndCapture(s, &g));
    OK(cuStreamIsCapturing(s, &st));
    CHECK(st == CU_STREAM_CAPTURE_STATUS_NONE);
    OK(cuStreamSynchronize(s));
    CHECK(e.slot[0] == 0);
    OK(cuGraphInstantiate(&ge, g, 0));
    OK(cuGraphLaunch(ge, s));
    CHECK(e.slot[0] == 0);
    OK(cuStreamSynchronize(s));
    CHECK(e.slot[0] == 7);
    e.slot[0] = 0;
    OK(cuGraphLaunch(ge, s)); /* its kernel is launch 2 */
    EXPECT(cuStreamSynchronize(s), CUDA_ERROR_ILLEGAL_ADDRESS);
    CHECK(e.slot[0] == 0);
    OK(cuGraphExecDestroy(ge));
    OK(cuGraphDestroy(g));
}

static void t_events(void)
{
    struct env e;
    CUstream a, b;
    CUevent ev, ev2;
    float ms = 0;
    setup(&e);
    OK(cuStreamCreate(&a, 0));
    OK(cuStreamCreate(&b, 0));
    OK(cuEventCreate(&ev, 0));
    OK(cuEventCreate(&ev2, 0));
    OK(cuEventQuery(ev)); /* never recorded: complete */
    OK(cuEventRecord(ev2, a));
    OK(launch(e.good, a));
    OK(cuStreamWriteValue64(a, e.dslot, 1, 0));
    OK(cuEventRecord(ev, a));
    OK(cuStreamWriteValue64(a, e.dslot + 16, 3, 0));
    OK(cuStreamWaitEvent(b, ev, 0));
    OK(cuStreamWriteValue64(b, e.dslot + 8, 2, 0));
    OK(cuStreamSynchronize(b));
    CHECK(e.slot[0] == 1 && e.slot[1] == 2 && e.slot[2] == 0); /* a ran up to the event, no further */
    EXPECT(cuEventElapsedTime(&ms, ev2, ev), CUDA_SUCCESS);
    CHECK(ms == 1.0f);
    OK(cuEventSynchronize(ev));
    OK(cuStreamWriteValue64(a, e.dslot + 24, 4, 0));
    OK(cuEventRecord(ev, a));
    OK(cuEventQuery(ev));
    CHECK(e.slot[2] == 3 && e.slot[3] == 4);
    OK(cuEventDestroy(ev));
    OK(cuEventDestroy(ev2));
    EXPECT(cuEventQuery(ev), CUDA_ERROR_INVALID_HANDLE);
}

static void host_fn(void *p)
{
    *(int *)p += 1;
}

static void t_modules(void)
{
    CUmodule mod;
    CUfunction f;
    CUlibrary lib;
    CUkernel k;
    const char *name;
    int calls = 0;
    EXPECT(cuModuleLoadData(&mod, "fakecubin:k"), CUDA_ERROR_NOT_INITIALIZED);
    struct env e;
    setup(&e);
    EXPECT(cuModuleLoadData(&mod, "\x7f"
                                  "ELF"),
           CUDA_ERROR_INVALID_IMAGE);
    EXPECT(cuModuleLoadData(&mod, "fakecubin: , "), CUDA_ERROR_INVALID_IMAGE);
    char path[] = "/tmp/fakecuda-selftest-XXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0 && write(fd, "fakecubin:_ZN2ns6kernelEv\n", 26) == 26);
    close(fd);
    OK(cuModuleLoad(&mod, path));
    unlink(path);
    EXPECT(cuModuleLoad(&mod, path), CUDA_ERROR_FILE_NOT_FOUND);
    EXPECT(cuModuleGetFunction(&f, mod, "kernel"), CUDA_ERROR_NOT_FOUND);
    OK(cuModuleGetFunction(&f, mod, "_ZN2ns6kernelEv"));
    OK(cuFuncGetName(&name, f));
    CHECK(!strcmp(name, "_ZN2ns6kernelEv"));
    EXPECT(cuLaunchKernel(f, 0, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL), CUDA_ERROR_INVALID_VALUE);
    EXPECT(cuLaunchKernel((CUfunction)&calls, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL), CUDA_ERROR_INVALID_HANDLE);
    OK(launch(f, NULL));
    OK(cuModuleUnload(mod));
    EXPECT(launch(f, NULL), CUDA_ERROR_INVALID_HANDLE);

    /* parameter lists: offsets aligned to the largest power of two dividing each size, 8 at most */
    size_t off = 99, size = 99;
    OK(cuModuleLoadData(&mod, "fakecubin: _Z1kiPfS_ (4, 8,12) , nolist, none()"));
    OK(cuModuleGetFunction(&f, mod, "_Z1kiPfS_"));
    OK(cuFuncGetName(&name, f));
    CHECK(!strcmp(name, "_Z1kiPfS_"));
    OK(cuFuncGetParamInfo(f, 0, &off, &size));
    CHECK(off == 0 && size == 4);
    OK(cuFuncGetParamInfo(f, 1, &off, &size));
    CHECK(off == 8 && size == 8);
    OK(cuFuncGetParamInfo(f, 2, &off, &size));
    CHECK(off == 16 && size == 12);
    EXPECT(cuFuncGetParamInfo(f, 3, &off, &size), CUDA_ERROR_INVALID_VALUE);
    OK(cuModuleGetFunction(&f, mod, "nolist"));
    EXPECT(cuFuncGetParamInfo(f, 0, &off, &size), CUDA_ERROR_NOT_SUPPORTED);
    OK(cuModuleGetFunction(&f, mod, "none"));
    EXPECT(cuFuncGetParamInfo(f, 0, &off, &size), CUDA_ERROR_INVALID_VALUE);
    EXPECT(cuFuncGetParamInfo((CUfunction)&calls, 0, &off, &size), CUDA_ERROR_INVALID_HANDLE);
    OK(cuModuleUnload(mod));
    EXPECT(cuModuleLoadData(&mod, "fakecubin:bad(4,x)"), CUDA_ERROR_INVALID_IMAGE);
    EXPECT(cuModuleLoadData(&mod, "fakecubin:bad(0)"), CUDA_ERROR_INVALID_IMAGE);

    OK(cuLibraryLoadData(&lib, "fakecubin:lib_kernel, lib_args(8)", NULL, NULL, 0, NULL, NULL, 0));
    OK(cuLibraryGetKernel(&k, lib, "lib_args"));
    OK(cuKernelGetParamInfo(k, 0, &off, &size));
    CHECK(off == 0 && size == 8);
    OK(cuLibraryGetKernel(&k, lib, "lib_kernel"));
    OK(cuKernelGetName(&name, k));
    CHECK(!strcmp(name, "lib_kernel"));
    OK(cuKernelGetFunction(&f, k));
    CUlaunchConfig cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.gridDimX = cfg.gridDimY = cfg.gridDimZ = 1;
    cfg.blockDimX = cfg.blockDimY = cfg.blockDimZ = 1;
    OK(cuLaunchKernelEx(&cfg, f, NULL, NULL));
    OK(cuLaunchHostFunc(NULL, host_fn, &calls));
    CHECK(calls == 0);
    OK(cuCtxSynchronize());
    CHECK(calls == 1);
    OK(cuLibraryUnload(lib));
}

/* FAKECUDA_DEVICES=3 */
static void t_contexts(void)
{
    CUcontext p0, p1, p0b, c, cur;
    CUdevice dev;
    int n;
    char name[64];
    OK(cuInit(0));
    OK(cuDeviceGetCount(&n));
    CHECK(n == 3);
    EXPECT(cuDeviceGet(&dev, 3), CUDA_ERROR_INVALID_DEVICE);
    OK(cuDeviceGetName(name, sizeof name, 2));
    OK(cuDeviceGetAttribute(&n, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, 0));
    CHECK(n == 132);
    EXPECT(cuCtxSynchronize(), CUDA_ERROR_INVALID_CONTEXT);
    OK(cuDevicePrimaryCtxRetain(&p0, 0));
    OK(cuDevicePrimaryCtxRetain(&p1, 1));
    OK(cuDevicePrimaryCtxRetain(&p0b, 0));
    CHECK(p0 == p0b && p0 != p1);
    OK(cuCtxPushCurrent(p1));
    OK(cuCtxGetDevice(&dev));
    CHECK(dev == 1);
    OK(cuCtxPushCurrent(p0));
    OK(cuCtxGetDevice(&dev));
    CHECK(dev == 0);
    OK(cuCtxPopCurrent(&cur));
    CHECK(cur == p0);
    OK(cuCtxGetCurrent(&cur));
    CHECK(cur == p1);
    OK(cuCtxCreate(&c, NULL, 0, 2));
    OK(cuCtxGetCurrent(&cur));
    CHECK(cur == c);
    OK(cuCtxGetDevice(&dev));
    CHECK(dev == 2);
    OK(cuCtxDestroy(c));
    OK(cuCtxGetCurrent(&cur));
    CHECK(cur == p1);
    EXPECT(cuCtxDestroy(p0), CUDA_ERROR_INVALID_CONTEXT); /* primary contexts are released, not destroyed */
    OK(cuDevicePrimaryCtxRelease(0));
    OK(cuDevicePrimaryCtxRelease(0));
    EXPECT(cuDevicePrimaryCtxRelease(0), CUDA_ERROR_INVALID_CONTEXT);
}

/* FAKECUDA_FAIL=cuMemHostAlloc:2;cuStreamWriteValue64_v2:*:999;cuMemAlloc_v2:1:1 */
static void t_fail(void)
{
    struct env e;
    void *p;
    CUdeviceptr d;
    setup(&e); /* its cuMemHostAlloc is call 1 */
    EXPECT(cuMemHostAlloc(&p, 64, 0), CUDA_ERROR_OUT_OF_MEMORY);
    OK(cuMemHostAlloc(&p, 64, 0));
    EXPECT(cuMemAlloc(&d, 64), CUDA_ERROR_INVALID_VALUE);
    OK(cuMemAlloc(&d, 64));
    EXPECT(cuStreamWriteValue64(NULL, e.dslot, 5, 0), CUDA_ERROR_UNKNOWN);
    EXPECT(cuStreamWriteValue64(NULL, e.dslot, 5, 0), CUDA_ERROR_UNKNOWN);
    OK(cuStreamWriteValue32(NULL, e.dslot, 6, 0)); /* another symbol: not injected */
    OK(cuCtxSynchronize());
    CHECK(e.slot[0] == 6);
}

/* FAKECUDA_RUN_AHEAD=abc, FAKECUDA_FAULT=launch=0;launch=1,nth=2;kernel=x,bogus=1;launch=2 */
static void t_bad_env(void)
{
    FILE *err = capture_fd(2);
    struct env e;
    setup(&e);
    CHECK(file_has(err, "fakecuda: bad FAKECUDA_RUN_AHEAD"));
    CHECK(file_has(err, "fakecuda: bad FAKECUDA_FAULT"));
    OK(cuStreamWriteValue64(NULL, e.dslot, 1, 0));
    OK(launch(e.good, NULL));
    OK(cuStreamWriteValue64(NULL, e.dslot, 2, 0));
    CHECK(e.slot[0] == 0);    /* run-ahead stayed off */
    OK(launch(e.good, NULL)); /* the one good spec: launch 2 */
    EXPECT(cuCtxSynchronize(), CUDA_ERROR_ILLEGAL_ADDRESS);
    CHECK(e.slot[0] == 2);
}

struct worker {
    struct env *e; /* shared setup */
    int index;     /* slot it writes */
    int ok;        /* result */
};

static void *worker_main(void *arg)
{
    struct worker *w = arg;
    launch_fn launch_pt = (launch_fn)lookup("cuLaunchKernel", 13000, 1);
    write64_fn write_pt = (write64_fn)lookup("cuStreamWriteValue64", 13000, 1);
    stream_fn sync_pt = (stream_fn)lookup("cuStreamSynchronize", 13000, 1);
    w->ok = cuCtxSetCurrent(w->e->ctx) == CUDA_SUCCESS;
    for (unsigned i = 1; w->ok && i <= 200; i++) {
        w->ok = launch_pt(w->e->good, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL) == CUDA_SUCCESS &&
                write_pt(NULL, w->e->dslot + 8 * (CUdeviceptr)w->index, i, 0) == CUDA_SUCCESS;
    }
    w->ok = w->ok && w->e->slot[w->index] == 0 && sync_pt(NULL) == CUDA_SUCCESS && w->e->slot[w->index] == 200;
    return NULL;
}

static void t_threads(void)
{
    struct env e;
    pthread_t t[4];
    struct worker w[4];
    setup(&e);
    for (int i = 0; i < 4; i++) {
        w[i] = (struct worker){&e, i, 0};
        CHECK(pthread_create(&t[i], NULL, worker_main, &w[i]) == 0);
    }
    for (int i = 0; i < 4; i++) {
        pthread_join(t[i], NULL);
        CHECK(w[i].ok);
    }
}

static void t_fork(void)
{
    struct env e;
    int status;
    setup(&e);
    OK(cuStreamWriteValue64(NULL, e.dslot, 5, 0));
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
        int ok = cuStreamSynchronize(NULL) == CUDA_SUCCESS && e.slot[0] == 5;
        _exit(ok ? 0 : 1);
    }
    CHECK(waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0);
    CHECK(e.slot[0] == 0); /* the child's run did not touch the parent's memory */
    OK(cuStreamSynchronize(NULL));
    CHECK(e.slot[0] == 5);
}

/* A launch that never completes (FAKECUDA_HANG=launch=2): what is queued before it runs, it and what follows do
 * not; queries say not ready, other streams and other threads keep working while a synchronize waits on it. */
struct hang_sync {
    CUcontext ctx;     /* context to make current */
    volatile int done; /* the synchronize returned */
};

static void *hang_sync_main(void *arg)
{
    struct hang_sync *h = arg;
    if (cuCtxSetCurrent(h->ctx) == CUDA_SUCCESS)
        cuCtxSynchronize();
    h->done = 1;
    return NULL;
}

static void t_hang(void)
{
    struct env e;
    CUstream other;
    pthread_t t;
    setup(&e);
    OK(cuStreamCreate(&other, 0));
    OK(launch(e.good, NULL));
    OK(cuStreamWriteValue64(NULL, e.dslot, 1, 0));
    OK(launch(e.good, NULL)); /* launch 2: runs forever */
    OK(cuStreamWriteValue64(NULL, e.dslot, 2, 0));
    EXPECT(cuStreamQuery(NULL), CUDA_ERROR_NOT_READY);
    CHECK(e.slot[0] == 1);
    struct hang_sync h = {e.ctx, 0};
    CHECK(pthread_create(&t, NULL, hang_sync_main, &h) == 0);
    usleep(20000);
    OK(launch(e.good, other)); /* while the other thread waits in cuCtxSynchronize */
    OK(cuStreamWriteValue64(other, e.dslot + 8, 7, 0));
    OK(cuStreamSynchronize(other));
    CHECK(e.slot[1] == 7);
    EXPECT(cuStreamQuery(NULL), CUDA_ERROR_NOT_READY);
    CUevent ev;
    OK(cuEventCreate(&ev, 0));
    OK(cuEventRecord(ev, NULL));
    EXPECT(cuEventQuery(ev), CUDA_ERROR_NOT_READY);
    CHECK(!h.done && e.slot[0] == 1);
    pthread_detach(t); /* the process ends with the synchronize still waiting, as it would on a GPU */
}

/* A slow launch that faults when it completes (FAKECUDA_HANG=launch=1,ms=300 with FAKECUDA_FAULT=launch=1): a
 * query right after the launch is not ready yet; a synchronize waits and returns the fault; until the launch
 * completes no sticky error is visible. */
static void t_slow_fault(void)
{
    FILE *err = capture_fd(2);
    struct env e;
    setup(&e);
    CHECK(file_has(err, "fakecuda: bad FAKECUDA_HANG spec 'kernel=x,ms=0'"));
    OK(launch(e.bad, NULL));
    EXPECT(cuStreamQuery(NULL), CUDA_ERROR_NOT_READY);
    OK(launch(e.good, NULL));
    EXPECT(cuCtxSynchronize(), CUDA_ERROR_ILLEGAL_ADDRESS);
    EXPECT(cuStreamQuery(NULL), CUDA_ERROR_ILLEGAL_ADDRESS);
}

/* Pitched, managed and pooled memory, and the virtual memory API: addresses reserved (the hint honoured when
 * free), physical memory mapped in pieces that copies reach, unmapped in one call, released only once unmapped. */
static void t_memory_kinds(void)
{
    struct env e;
    setup(&e);
    CUdeviceptr d, m, q;
    size_t pitch = 0;
    OK(cuMemAllocPitch(&d, &pitch, 1000, 3, 4));
    CHECK(pitch == 1024);
    int in[4] = {1, 2, 3, 4}, out[4] = {0};
    OK(cuMemcpyHtoD(d + 2 * pitch, in, sizeof in)); /* the last row is there */
    OK(cuMemcpyDtoH(out, d + 2 * pitch, sizeof out));
    CHECK(out[3] == 4);
    EXPECT(cuMemcpyHtoD(d + 3 * pitch, in, 4), CUDA_ERROR_INVALID_VALUE);
    EXPECT(cuMemAllocPitch(&d, &pitch, 10, 1, 3), CUDA_ERROR_INVALID_VALUE);
    OK(cuMemAllocManaged(&m, 64, CU_MEM_ATTACH_GLOBAL));
    EXPECT(cuMemAllocManaged(&m, 64, 0), CUDA_ERROR_INVALID_VALUE);
    OK(cuMemFree(m));

    CUmemoryPool pool;
    CUmemPoolProps pp;
    memset(&pp, 0, sizeof pp);
    pp.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
    pp.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    OK(cuMemPoolCreate(&pool, &pp));
    OK(cuMemAllocFromPoolAsync(&q, 256, pool, NULL));
    OK(cuMemsetD32Async(q, 7, 64, NULL));
    OK(cuMemFreeAsync(q, NULL));
    OK(cuStreamSynchronize(NULL));
    OK(cuMemPoolTrimTo(pool, 0));
    OK(cuMemPoolDestroy(pool));
    EXPECT(cuMemAllocFromPoolAsync(&q, 256, pool, NULL), CUDA_ERROR_INVALID_VALUE);

    CUmemAllocationProp prop;
    memset(&prop, 0, sizeof prop);
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    size_t g = 0;
    OK(cuMemGetAllocationGranularity(&g, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
    CHECK(g == 2u << 20);
    CUdeviceptr r, r2, again;
    OK(cuMemAddressReserve(&r, 8 * g, 0, 0, 0));
    OK(cuMemAddressReserve(&r2, 2 * g, 0, r, 0)); /* a hint inside r is not free */
    CHECK(r2 >= r + 8 * g || r2 + 2 * g <= r);
    OK(cuMemAddressFree(r2, 2 * g));
    EXPECT(cuMemAddressReserve(&r2, g + 1, 0, 0, 0), CUDA_ERROR_INVALID_VALUE);
    CUmemGenericAllocationHandle h1, h2;
    OK(cuMemCreate(&h1, 2 * g, &prop, 0));
    OK(cuMemCreate(&h2, g, &prop, 0));
    OK(cuMemMap(r, g, 0, h1, 0)); /* h1 in two pieces, then h2 */
    OK(cuMemMap(r + g, g, g, h1, 0));
    OK(cuMemMap(r + 2 * g, g, 0, h2, 0));
    EXPECT(cuMemMap(r + g, g, 0, h2, 0), CUDA_ERROR_INVALID_VALUE);     /* already mapped */
    EXPECT(cuMemMap(r + 8 * g, g, 0, h2, 0), CUDA_ERROR_INVALID_VALUE); /* not reserved */
    CUmemAccessDesc acc;
    memset(&acc, 0, sizeof acc);
    acc.location = prop.location;
    acc.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    OK(cuMemSetAccess(r, 3 * g, &acc, 1));
    EXPECT(cuMemSetAccess(r, 4 * g, &acc, 1), CUDA_ERROR_INVALID_VALUE);
    OK(cuMemcpyHtoD(r + g - 8, in, sizeof in)); /* across two pieces of h1 */
    memset(out, 0, sizeof out);
    OK(cuMemcpyDtoH(out, r + g - 8, sizeof out));
    CHECK(out[0] == 1 && out[3] == 4);
    EXPECT(cuMemcpyHtoD(r + 3 * g, in, 4), CUDA_ERROR_INVALID_VALUE); /* reserved, not mapped */
    OK(cuMemRelease(h1));                                             /* still mapped: the memory stays */
    OK(cuMemcpyDtoH(out, r, 4));
    EXPECT(cuMemFree(r), CUDA_ERROR_INVALID_VALUE);               /* not cuMemAlloc's */
    EXPECT(cuMemAddressFree(r, 8 * g), CUDA_ERROR_INVALID_VALUE); /* still mapped */
    EXPECT(cuMemUnmap(r, g + g / 2), CUDA_ERROR_INVALID_VALUE);   /* half a piece */
    OK(cuMemUnmap(r, 2 * g));                                     /* both pieces of h1 */
    EXPECT(cuMemcpyDtoH(out, r, 4), CUDA_ERROR_INVALID_VALUE);
    OK(cuMemcpyDtoH(out, r + 2 * g, 4));
    EXPECT(cuMemUnmap(r, g), CUDA_ERROR_INVALID_VALUE); /* nothing mapped there */
    OK(cuMemUnmap(r + 2 * g, g));
    OK(cuMemRelease(h2));
    EXPECT(cuMemRelease(h2), CUDA_ERROR_INVALID_VALUE);
    OK(cuMemAddressFree(r, 8 * g));
    OK(cuMemAddressReserve(&again, 8 * g, 0, r, 0)); /* freed addresses can be had again */
    CHECK(again == r);
}

/* ---- runner ----------------------------------------------------------------------------------------------- */

static const struct {
    const char *name; /* case name, also the argument that runs it */
    const char *env;  /* FAKECUDA_* settings, ';'-free pieces separated by '|' */
    void (*fn)(void); /* the case */
} cases[] = {
    {"lookup", "", t_lookup},
    {"canary", "", t_canary},
    {"lazy", "", t_lazy},
    {"fault", "FAKECUDA_FAULT=launch=3", t_fault},
    {"assert", "FAKECUDA_FAULT=kernel=write_oob,nth=2,code=710", t_assert},
    {"assert_held", "FAKECUDA_FAULT=kernel=write_oob,code=710|FAKECUDA_RUN_AHEAD=1", t_assert_held},
    {"fault_streams", "FAKECUDA_FAULT=launch=2", t_fault_streams},
    {"run_ahead", "FAKECUDA_RUN_AHEAD=1|FAKECUDA_FAULT=launch=3", t_run_ahead},
    {"graph", "FAKECUDA_FAULT=launch=2", t_graph},
    {"events", "", t_events},
    {"modules", "", t_modules},
    {"contexts", "FAKECUDA_DEVICES=3", t_contexts},
    {"fail", "FAKECUDA_FAIL=cuMemHostAlloc:2;cuStreamWriteValue64_v2:*:999;cuMemAlloc_v2:1:1", t_fail},
    {"bad_env", "FAKECUDA_RUN_AHEAD=abc|FAKECUDA_FAULT=launch=0;launch=1,nth=2;kernel=x,bogus=1;launch=2", t_bad_env},
    {"threads", "", t_threads},
    {"fork", "", t_fork},
    {"hang", "FAKECUDA_HANG=launch=2", t_hang},
    {"slow_fault", "FAKECUDA_HANG=launch=1,ms=300;kernel=x,ms=0|FAKECUDA_FAULT=launch=1", t_slow_fault},
    {"memory_kinds", "", t_memory_kinds},
};

static int run_case(const char *self, size_t i)
{
    int status;
    pid_t pid = fork();
    if (pid < 0)
        return 0;
    if (pid == 0) {
        static const char *vars[] = {"FAKECUDA_FAULT",   "FAKECUDA_FAIL",  "FAKECUDA_RUN_AHEAD",
                                     "FAKECUDA_DEVICES", "FAKECUDA_TRACE", "FAKECUDA_HANG"};
        for (size_t v = 0; v < sizeof vars / sizeof vars[0]; v++)
            unsetenv(vars[v]);
        char env[512];
        snprintf(env, sizeof env, "%s", cases[i].env);
        for (char *save = NULL, *kv = strtok_r(env, "|", &save); kv; kv = strtok_r(NULL, "|", &save)) {
            char *eq = strchr(kv, '=');
            *eq = 0;
            setenv(kv, eq + 1, 1);
        }
        execl(self, self, cases[i].name, (char *)NULL);
        _exit(127);
    }
    return waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

int main(int argc, char **argv)
{
    size_t ncases = sizeof cases / sizeof cases[0];
    if (argc == 2) {
        for (size_t i = 0; i < ncases; i++) {
            if (!strcmp(argv[1], cases[i].name)) {
                cases[i].fn();
                return 0;
            }
        }
        fprintf(stderr, "unknown case %s\n", argv[1]);
        return 2;
    }
    char self[4096];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n <= 0)
        return 2;
    self[n] = 0;
    int passed = 0, failed = 0;
    for (size_t i = 0; i < ncases; i++) {
        int ok = run_case(self, i);
        printf("%s %s\n", ok ? "ok  " : "FAIL", cases[i].name);
        fflush(stdout);
        ok ? passed++ : failed++;
    }
    printf("%d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}
