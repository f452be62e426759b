/* A driver-API program that reaches the driver the way cudart does: dlopen("libcuda.so.1"), one dlsym of
 * cuGetProcAddress (v2 or v1), then every entry point through it, including cuGetProcAddress itself and the
 * per-thread-default-stream variants. Usage: procaddr LOOKUP SCENARIO, where LOOKUP says how the lookup function
 * is obtained and SCENARIO what the program does (faults are scripted from outside with FAKECUDA_FAULT). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdint.h>

#include "common.h"
#include "drv.h"

typedef CUresult (*getproc_v2_fn)(const char *, void **, int, cuuint64_t, CUdriverProcAddressQueryResult *);
typedef CUresult (*getproc_v1_fn)(const char *, void **, int, cuuint64_t);

static struct drv D;           /* entry points fetched with flags 0 (legacy default stream) */
static getproc_v2_fn getproc2; /* the lookup function in use when it has the v2 form */
static getproc_v1_fn getproc1; /* ... or when it has the v1 form */

#define CK(call)                                                                                                                                               \
    do {                                                                                                                                                       \
        CUresult rc_ = (call);                                                                                                                                 \
        if (rc_ != CUDA_SUCCESS)                                                                                                                               \
            report_error(D.cuGetErrorName, #call, rc_, 0);                                                                                                     \
    } while (0)

static void *lookup_version(const char *name, int version, cuuint64_t flags)
{
    void *p = NULL;
    CUresult rc;
    CUdriverProcAddressQueryResult status = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    if (getproc2 != NULL) {
        rc = getproc2(name, &p, version, flags, &status);
    } else {
        rc = getproc1(name, &p, version, flags);
        status = CU_GET_PROC_ADDRESS_SUCCESS;
    }
    if (rc != CUDA_SUCCESS || status != CU_GET_PROC_ADDRESS_SUCCESS || p == NULL) {
        fprintf(stderr, "cuGetProcAddress(\"%s\") failed: result %d, status %d\n", name, (int)rc, (int)status);
        exit(1);
    }
    return p;
}

static void *lookup(const char *name, cuuint64_t flags)
{
    return lookup_version(name, DRV_VERSION, flags);
}

/* Obtain the lookup function: v2 and v1 straight from dlsym, or v2self/v1self by asking cuGetProcAddress_v2
 * for "cuGetProcAddress" at version 12000 (the v2 form) or 11030 (the v1 form), as cudart does. */
static int open_driver(const char *how)
{
    void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (lib == NULL) {
        fprintf(stderr, "cannot load libcuda.so.1: %s\n", dlerror());
        return -1;
    }
    if (strcmp(how, "v1") == 0) {
        getproc1 = (getproc_v1_fn)dlsym(lib, "cuGetProcAddress");
        return getproc1 ? 0 : -1;
    }
    getproc2 = (getproc_v2_fn)dlsym(lib, "cuGetProcAddress_v2");
    if (getproc2 == NULL)
        return -1;
    if (strcmp(how, "v2") == 0)
        return 0;
    void *p = NULL;
    CUdriverProcAddressQueryResult status;
    int version = strcmp(how, "v2self") == 0 ? 12000 : strcmp(how, "v1self") == 0 ? 11030 : -1;
    if (version < 0)
        return -1;
    if (getproc2("cuGetProcAddress", &p, version, 0, &status) != CUDA_SUCCESS || p == NULL) {
        fprintf(stderr, "cuGetProcAddress(\"cuGetProcAddress\", %d) failed\n", version);
        exit(1);
    }
    if (version == 12000) {
        getproc2 = (getproc_v2_fn)p;
    } else {
        getproc2 = NULL;
        getproc1 = (getproc_v1_fn)p;
    }
    return 0;
}

static CUcontext ctx;                  /* primary context of device 0 */
static CUmodule mod;                   /* the module */
static CUfunction f_step, f_bad;       /* its kernels */
static CUdeviceptr dbuf;               /* device buffer */
static int nelem = NELEM;              /* kernel argument */
static void *args[] = {&dbuf, &nelem}; /* kernel parameters */

static void setup(void)
{
#define DRV_BY_PROC(fn) D.fn = (__typeof__(D.fn))lookup(#fn, CU_GET_PROC_ADDRESS_DEFAULT);
    DRV_FUNCS(DRV_BY_PROC)
#undef DRV_BY_PROC
    CUdevice dev;
    CK(D.cuInit(0));
    CK(D.cuDeviceGet(&dev, 0));
    CK(D.cuDevicePrimaryCtxRetain(&ctx, dev));
    CK(D.cuCtxSetCurrent(ctx));
    CK(D.cuModuleLoadData(&mod, MODULE_IMAGE));
    CK(D.cuModuleGetFunction(&f_step, mod, K_STEP));
    CK(D.cuModuleGetFunction(&f_bad, mod, K_BAD));
    CK(D.cuMemAlloc(&dbuf, NELEM * sizeof(float)));
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

/* Stream NULL means the legacy stream through the entry points fetched with flags 0 and this thread's default
 * stream through those fetched with CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM. Launches alternate; the
 * fourth per-thread launch is write_oob (launch #8). The legacy stream is synchronized first and is healthy. */
static int ptds_flag(void)
{
    struct drv pt; /* the per-thread-default-stream variants */
    pt.cuLaunchKernel = (__typeof__(pt.cuLaunchKernel))lookup("cuLaunchKernel", CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM);
    pt.cuStreamSynchronize = (__typeof__(pt.cuStreamSynchronize))lookup("cuStreamSynchronize", CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM);
    for (int i = 0; i < 6; i++) {
        CK(D.cuLaunchKernel(f_step, 4, 1, 1, 64, 1, 1, 0, NULL, args, NULL));
        CK(pt.cuLaunchKernel(i == 3 ? f_bad : f_step, 4, 1, 1, 64, 1, 1, 0, NULL, args, NULL)); /* ptds-flag */ /* CULPRIT-LAUNCH */
    }
    CK(D.cuStreamSynchronize(NULL));
    printf("ptds-flag: legacy stream synchronized\n");
    CK(pt.cuStreamSynchronize(NULL));
    printf("ptds-flag: per-thread stream synchronized\n");
    return 0;
}

/* The same with the explicit handles CU_STREAM_LEGACY and CU_STREAM_PER_THREAD through the legacy entry points. */
static int ptds_handle(void)
{
    for (int i = 0; i < 6; i++) {
        CK(D.cuLaunchKernel(f_step, 4, 1, 1, 64, 1, 1, 0, CU_STREAM_LEGACY, args, NULL));
        CK(D.cuLaunchKernel(i == 3 ? f_bad : f_step, 4, 1, 1, 64, 1, 1, 0, CU_STREAM_PER_THREAD, args, NULL)); /* ptds-handle */ /* CULPRIT-LAUNCH */
    }
    CK(D.cuStreamSynchronize(CU_STREAM_LEGACY));
    printf("ptds-handle: legacy stream synchronized\n");
    CK(D.cuStreamSynchronize(CU_STREAM_PER_THREAD));
    printf("ptds-handle: per-thread stream synchronized\n");
    return 0;
}

/* Five cuLaunchKernelEx launches on a created stream (grid 8x2x1, block 32x4x1, 256 bytes of shared memory);
 * the third is write_oob (launch #3). */
static int launch_ex(void)
{
    CUstream s;
    CUlaunchConfig cfg;
    CK(D.cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    memset(&cfg, 0, sizeof cfg);
    cfg.gridDimX = 8, cfg.gridDimY = 2, cfg.gridDimZ = 1;
    cfg.blockDimX = 32, cfg.blockDimY = 4, cfg.blockDimZ = 1;
    cfg.sharedMemBytes = 256;
    cfg.hStream = s;
    for (int i = 0; i < 5; i++)
        CK(D.cuLaunchKernelEx(&cfg, i == 2 ? f_bad : f_step, args, NULL)); /* launchex */ /* CULPRIT-LAUNCH */
    CK(D.cuStreamSynchronize(s));
    printf("launchex: synchronized\n");
    return 0;
}

/* Five cooperative launches on a created stream; the third is write_oob (launch #3). */
static int cooperative(void)
{
    CUstream s;
    CK(D.cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    for (int i = 0; i < 5; i++)
        CK(D.cuLaunchCooperativeKernel(i == 2 ? f_bad : f_step, 2, 1, 1, 128, 1, 1, 0, s, args)); /* coop */ /* CULPRIT-LAUNCH */
    CK(D.cuStreamSynchronize(s));
    printf("coop: synchronized\n");
    return 0;
}

/* A graph captured from a stream (step, write_oob, step) and launched three times; the fault is scripted for
 * the second execution of write_oob, i.e. the second graph launch. */
static int graph(void)
{
    CUstream s;
    CUgraph g;
    CUgraphExec exec;
    CK(D.cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CK(D.cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL));
    CK(D.cuLaunchKernel(f_step, 4, 1, 1, 64, 1, 1, 0, s, args, NULL));
    CK(D.cuLaunchKernel(f_bad, 4, 1, 1, 64, 1, 1, 0, s, args, NULL)); /* graph-node */ /* CULPRIT-LAUNCH */
    CK(D.cuLaunchKernel(f_step, 4, 1, 1, 64, 1, 1, 0, s, args, NULL));
    CK(D.cuStreamEndCapture(s, &g));
    CK(D.cuGraphInstantiateWithFlags(&exec, g, 0));
    for (int i = 0; i < 3; i++)
        CK(D.cuGraphLaunch(exec, s)); /* graph */ /* CULPRIT-LAUNCH */
    CK(D.cuStreamSynchronize(s));
    printf("graph: three replays synchronized\n");
    CK(D.cuGraphExecDestroy(exec));
    CK(D.cuGraphDestroy(g));
    return 0;
}

/* A healthy run touching every family, plus the export table check (cudart asks for export tables first). */
static int healthy(void)
{
    static const CUuuid id = {{0x42, 0xd8, 0x5a, 0x81, 0x23, 0xf6, 0xcb, 0x47, 0x82, 0x98, 0xf6, 0xe7, 0x8a, 0x3a, 0xec, 0xdc}};
    const void *table = NULL;
    uint64_t canary;
    Dl_info info;
    int host[NELEM], back[NELEM];
    long sum = 0;
    CUstream s;
    CUevent ev;
    CUlaunchConfig cfg;
    CUgraph g;
    CUgraphExec exec;

    CK(D.cuGetExportTable(&table, &id));
    memcpy(&canary, table, sizeof canary);
    if (dladdr(table, &info) == 0 || info.dli_fname == NULL) {
        printf("export table: not inside any loaded object\n");
        return 1;
    }
    const char *base = strrchr(info.dli_fname, '/');
    printf("export table: canary %s, held by %s\n", canary == 0xC0FFEE0DDBA11ULL ? "intact" : "WRONG", base ? base + 1 : info.dli_fname);

    for (int i = 0; i < NELEM; i++)
        host[i] = 3 * i;
    CK(D.cuStreamCreate(&s, CU_STREAM_DEFAULT));
    CK(D.cuEventCreate(&ev, CU_EVENT_DISABLE_TIMING));
    CK(D.cuMemsetD32(dbuf, 1, NELEM));
    CK(D.cuMemcpyHtoD(dbuf, host, sizeof host));
    for (int i = 0; i < 4; i++)
        CK(D.cuLaunchKernel(f_step, 4, 1, 1, 64, 1, 1, 0, s, args, NULL));
    memset(&cfg, 0, sizeof cfg);
    cfg.gridDimX = cfg.gridDimY = cfg.gridDimZ = 1;
    cfg.blockDimX = 64, cfg.blockDimY = cfg.blockDimZ = 1;
    cfg.hStream = s;
    CK(D.cuLaunchKernelEx(&cfg, f_step, args, NULL));
    CK(D.cuLaunchCooperativeKernel(f_step, 1, 1, 1, 32, 1, 1, 0, s, args));
    CK(D.cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    CK(D.cuLaunchKernel(f_step, 1, 1, 1, 32, 1, 1, 0, s, args, NULL));
    CK(D.cuStreamEndCapture(s, &g));
    CK(D.cuGraphInstantiateWithFlags(&exec, g, 0));
    CK(D.cuGraphLaunch(exec, s));
    CK(D.cuMemsetD32Async(dbuf, 2, 16, s));
    CK(D.cuEventRecord(ev, s));
    CK(D.cuEventSynchronize(ev));
    CK(D.cuStreamSynchronize(s));
    CK(D.cuCtxSynchronize());
    /* A CUDA 13 program gets the form of cuCtxSynchronize that takes the context. */
    CUresult (*ctx_sync13)(CUcontext) = (CUresult(*)(CUcontext))lookup_version("cuCtxSynchronize", 13000, 0);
    CK(ctx_sync13(ctx));
    CK(D.cuMemcpyDtoH(back, dbuf, sizeof back));
    for (int i = 0; i < NELEM; i++)
        sum += back[i];
    CK(D.cuGraphExecDestroy(exec));
    CK(D.cuGraphDestroy(g));
    CK(D.cuEventDestroy(ev));
    CK(D.cuStreamDestroy(s));
    CK(D.cuMemFree(dbuf));
    CK(D.cuModuleUnload(mod));
    printf("healthy: checksum %ld\n", sum);
    return 0;
}

int main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (argc != 3 || open_driver(argv[1]) != 0) {
        fprintf(stderr, "usage: procaddr v2|v2self|v1|v1self legacy|ptds-flag|ptds-handle|launchex|coop|graph|healthy\n");
        return 2;
    }
    setup();
    const char *what = argv[2];
    if (strcmp(what, "legacy") == 0)
        return legacy();
    if (strcmp(what, "ptds-flag") == 0)
        return ptds_flag();
    if (strcmp(what, "ptds-handle") == 0)
        return ptds_handle();
    if (strcmp(what, "launchex") == 0)
        return launch_ex();
    if (strcmp(what, "coop") == 0)
        return cooperative();
    if (strcmp(what, "graph") == 0)
        return graph();
    if (strcmp(what, "healthy") == 0)
        return healthy();
    fprintf(stderr, "unknown scenario %s\n", what);
    return 2;
}
