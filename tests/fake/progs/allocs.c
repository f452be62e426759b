/* A driver-API program that allocates memory every way the driver offers, frees some of it, then launches a
 * kernel the tests make fault (FAKECUDA_FAULT) and synchronizes. It prints what it got ("name=0x..." lines on
 * stdout), so the tests can ask culprit about addresses inside, around and after those allocations. Allocation
 * lines the tests look for in the report's sites are marked CULPRIT-ALLOC. Usage: allocs SCENARIO. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common.h"

#define CK(call) CK_DRIVER(call)

static CUcontext ctx;                 /* primary context of device 0 */
static CUfunction f_step, f_bad;      /* kernels of the module */
static CUdeviceptr arg;               /* the kernels' buffer */
static int nelem = 16;                /* kernel argument */
static void *args[] = {&arg, &nelem}; /* kernel parameters */

static void setup(void)
{
    CUdevice dev;
    CUmodule mod;
    CK(cuInit(0));
    CK(cuDeviceGet(&dev, 0));
    CK(cuDevicePrimaryCtxRetain(&ctx, dev));
    CK(cuCtxSetCurrent(ctx));
    CK(cuModuleLoadData(&mod, MODULE_IMAGE));
    CK(cuModuleGetFunction(&f_step, mod, K_STEP));
    CK(cuModuleGetFunction(&f_bad, mod, K_BAD));
}

static void step(void)
{
    CK(cuLaunchKernel(f_step, 1, 1, 1, 32, 1, 1, 0, NULL, args, NULL));
}

/* The faulting launch, then the synchronize that reports it. */
static void fault(void)
{
    CK(cuLaunchKernel(f_bad, 1, 1, 1, 32, 1, 1, 0, NULL, args, NULL));
    CK(cuCtxSynchronize());
}

static void say(const char *name, uint64_t v)
{
    printf("%s=0x%llx\n", name, (unsigned long long)v);
    fflush(stdout);
}

/* Every kind, some freed after launch #2; calls the driver refuses are not allocations. */
static int kinds(void)
{
    CUdeviceptr dev, pitched, managed, async, pool_mem, bogus = 0;
    size_t pitch = 0;
    void *host;
    CUmemoryPool pool;
    CUmemPoolProps pp;
    setup();
    CK(cuMemAlloc(&dev, 4096));                        /* CULPRIT-ALLOC dev */
    CK(cuMemAllocPitch(&pitched, &pitch, 1000, 3, 4)); /* CULPRIT-ALLOC pitched */
    CK(cuMemAllocManaged(&managed, 256, CU_MEM_ATTACH_GLOBAL));
    CK(cuMemAllocAsync(&async, 512, NULL));
    memset(&pp, 0, sizeof pp);
    pp.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
    pp.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    CK(cuMemPoolCreate(&pool, &pp));
    CK(cuMemAllocFromPoolAsync(&pool_mem, 1024, pool, NULL));
    CK(cuMemHostAlloc(&host, 64, CU_MEMHOSTALLOC_DEVICEMAP));
    if (cuMemAllocManaged(&bogus, 256, 0) == CUDA_SUCCESS || cuMemFree(0x1234) == CUDA_SUCCESS) {
        fprintf(stderr, "the driver took a bad allocation\n");
        return 2;
    }
    say("dev", dev);
    say("pitched", pitched);
    printf("pitch=%zu\n", pitch);
    say("managed", managed);
    say("async", async);
    say("pool", pool_mem);
    say("host", (uint64_t)(uintptr_t)host);
    arg = dev;
    step();
    step();
    CK(cuMemFree(managed));
    CK(cuMemFreeAsync(async, NULL));
    CK(cuMemFreeHost(host));
    fault(); /* launch #3 */
    return 0;
}

/* Addresses handed out again: device memory freed and allocated anew (the allocator usually gives the same block
 * back), and a piece of reserved addresses unmapped and another piece mapped at the very same address. */
static int reuse(void)
{
    CUdeviceptr x, y, r;
    CUmemGenericAllocationHandle h1, h2;
    CUmemAllocationProp prop;
    CUmemAccessDesc acc;
    size_t g;
    setup();
    memset(&prop, 0, sizeof prop);
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    memset(&acc, 0, sizeof acc);
    acc.location = prop.location;
    acc.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    CK(cuMemGetAllocationGranularity(&g, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
    CK(cuMemAlloc(&x, 4096));
    CK(cuMemAddressReserve(&r, 2 * g, 0, 0, 0));
    CK(cuMemCreate(&h1, g, &prop, 0));
    CK(cuMemMap(r, g, 0, h1, 0));
    CK(cuMemSetAccess(r, g, &acc, 1));
    arg = x;
    step(); /* launch #1 */
    CK(cuMemFree(x));
    CK(cuMemUnmap(r, g));
    CK(cuMemRelease(h1));
    CK(cuMemAlloc(&arg, 64)); /* the kernels' own buffer */
    CK(cuMemCreate(&h2, g, &prop, 0));
    CK(cuMemMap(r, g, 0, h2, 0));
    CK(cuMemSetAccess(r, g, &acc, 1));
    step(); /* launch #2 */
    CK(cuMemAlloc(&y, 4096));
    say("x", x);
    say("y", y);
    say("reserved", r);
    printf("granularity=%zu\n", g);
    fault(); /* launch #3 */
    return 0;
}

/* The parent allocates, then forks; the child allocates its own and faults. */
static int forked(void)
{
    CUdeviceptr a, c;
    setup();
    CK(cuMemAlloc(&a, 4096));
    say("parent", a);
    pid_t pid = fork();
    if (pid == 0) {
        CK(cuMemAlloc(&c, 128));
        say("child", c);
        arg = c;
        fault(); /* launch #1 of the process */
        _exit(0);
    }
    wait_child(pid);
    return 0;
}

/* Threads allocating at once: each makes 64 allocations of 128+k bytes and frees the even ones. */
#define THREADS 8
#define PER_THREAD 64
static void *allocator(void *p)
{
    (void)p;
    CUdeviceptr d[PER_THREAD];
    CK(cuCtxSetCurrent(ctx)); /* a thread starts without a current context */
    for (int k = 0; k < PER_THREAD; k++)
        CK(cuMemAlloc(&d[k], 128 + (size_t)k));
    for (int k = 0; k < PER_THREAD; k += 2)
        CK(cuMemFree(d[k]));
    return NULL;
}
static int threads(void)
{
    pthread_t t[THREADS];
    setup();
    for (int i = 0; i < THREADS; i++)
        pthread_create(&t[i], NULL, allocator, NULL);
    for (int i = 0; i < THREADS; i++)
        pthread_join(t[i], NULL);
    CK(cuMemAlloc(&arg, 64));
    fault();
    return 0;
}

/* PyTorch's expandable segments: 64 MiB of addresses, three 2 MiB pieces mapped as the segment grows, the first
 * unmapped and released after launch #1. */
static int expandable(void)
{
    CUdeviceptr r;
    CUmemGenericAllocationHandle h[3];
    CUmemAllocationProp prop;
    CUmemAccessDesc acc;
    size_t g;
    setup();
    memset(&prop, 0, sizeof prop);
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    CK(cuMemGetAllocationGranularity(&g, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
    CK(cuMemAddressReserve(&r, 32 * g, 0, 0, 0));
    memset(&acc, 0, sizeof acc);
    acc.location = prop.location;
    acc.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    for (int i = 0; i < 3; i++) {
        CK(cuMemCreate(&h[i], g, &prop, 0));
        CK(cuMemMap(r + (CUdeviceptr)i * g, g, 0, h[i], 0)); /* CULPRIT-ALLOC map */
        CK(cuMemSetAccess(r + (CUdeviceptr)i * g, g, &acc, 1));
    }
    say("reserved", r);
    printf("granularity=%zu\n", g);
    arg = r + g;
    step(); /* launch #1 */
    CK(cuMemUnmap(r, g));
    CK(cuMemRelease(h[0]));
    fault(); /* launch #2 */
    return 0;
}

/* More allocations than the table holds (4096): all live, then ten freed and five more made. */
static int overflow(void)
{
    enum { N = 4200 };
    static CUdeviceptr d[N];
    CUdeviceptr more;
    setup();
    for (int i = 0; i < N; i++)
        CK(cuMemAlloc(&d[i], 256));
    for (int i = 0; i < 10; i++)
        CK(cuMemFree(d[i]));
    for (int i = 0; i < 5; i++)
        CK(cuMemAlloc(&more, 256));
    say("first", d[0]);
    arg = d[N - 1];
    fault();
    return 0;
}

/* The way the CUDA runtime and PyTorch reach the driver: entry points fetched through cuGetProcAddress. */
static int lookup(void)
{
    CUresult (*alloc)(CUdeviceptr *, size_t) = NULL;
    CUresult (*reserve)(CUdeviceptr *, size_t, size_t, CUdeviceptr, unsigned long long) = NULL;
    CUresult (*create)(CUmemGenericAllocationHandle *, size_t, const CUmemAllocationProp *, unsigned long long) = NULL;
    CUresult (*map)(CUdeviceptr, size_t, size_t, CUmemGenericAllocationHandle, unsigned long long) = NULL;
    CUdriverProcAddressQueryResult q;
    CUdeviceptr d, r;
    CUmemGenericAllocationHandle hd;
    CUmemAllocationProp prop;
    setup();
    CK(cuGetProcAddress("cuMemAlloc", (void **)&alloc, 12000, 0, &q));
    CK(cuGetProcAddress("cuMemAddressReserve", (void **)&reserve, 12000, 0, &q));
    CK(cuGetProcAddress("cuMemCreate", (void **)&create, 12000, 0, &q));
    CK(cuGetProcAddress("cuMemMap", (void **)&map, 12000, 0, &q));
    memset(&prop, 0, sizeof prop);
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    CK(alloc(&d, 300));
    CK(reserve(&r, 4u << 20, 0, 0, 0));
    CK(create(&hd, 2u << 20, &prop, 0));
    CK(map(r, 2u << 20, 0, hd, 0));
    say("dev", d);
    say("reserved", r);
    arg = d;
    fault();
    return 0;
}

int main(int argc, char **argv)
{
    const char *s = argc > 1 ? argv[1] : "";
    if (!strcmp(s, "kinds"))
        return kinds();
    if (!strcmp(s, "reuse"))
        return reuse();
    if (!strcmp(s, "fork"))
        return forked();
    if (!strcmp(s, "threads"))
        return threads();
    if (!strcmp(s, "expandable"))
        return expandable();
    if (!strcmp(s, "overflow"))
        return overflow();
    if (!strcmp(s, "lookup"))
        return lookup();
    fprintf(stderr, "usage: allocs kinds|reuse|fork|threads|expandable|overflow|lookup\n");
    return 2;
}
