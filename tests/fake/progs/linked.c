/* A driver-API program linked against libcuda (-lcuda) that calls the driver directly, as hand-written CUDA C
 * does. The scenario is chosen on the command line; faults are scripted from outside (FAKECUDA_FAULT), so
 * the program itself is an ordinary, correct-looking application. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common.h"

#define CK(call)                                                                                                                                               \
    do {                                                                                                                                                       \
        CUresult rc_ = (call);                                                                                                                                 \
        if (rc_ != CUDA_SUCCESS)                                                                                                                               \
            report_error(cuGetErrorName, #call, rc_, 0);                                                                                                       \
    } while (0)

static CUcontext ctx;                    /* primary context of device 0 */
static CUmodule mod;                     /* the module loaded into it */
static CUfunction f_step, f_bad, f_fill; /* kernels of the module */
static CUdeviceptr dbuf;                 /* NELEM ints/floats of device memory */
static int nelem = NELEM;                /* kernel argument */
static void *args[] = {&dbuf, &nelem};   /* kernel parameters shared by every launch */

static void setup(void)
{
    CUdevice dev;
    CK(cuInit(0));
    CK(cuDeviceGet(&dev, 0));
    CK(cuDevicePrimaryCtxRetain(&ctx, dev));
    CK(cuCtxSetCurrent(ctx));
    CK(cuModuleLoadData(&mod, MODULE_IMAGE));
    CK(cuModuleGetFunction(&f_step, mod, K_STEP));
    CK(cuModuleGetFunction(&f_bad, mod, K_BAD));
    CK(cuModuleGetFunction(&f_fill, mod, K_FILL));
    CK(cuMemAlloc(&dbuf, NELEM * sizeof(float)));
}

static pid_t thread_id(void)
{
    return (pid_t)syscall(SYS_gettid);
}

/* `count` launches of step on the legacy default stream (fault scripted as launch=N), then the error is made to
 * surface at the call named by `how`. */
static int legacy(const char *how, int count, int pace_us)
{
    float host[NELEM];
    CUevent ev;
    setup();
    CK(cuEventCreate(&ev, CU_EVENT_DEFAULT));
    for (int i = 0; i < count; i++) {
        if (pace_us > 0)
            usleep((useconds_t)pace_us);                                                 /* launches far apart, as long kernels make them */
        CK(cuLaunchKernel(f_step, 4, 1, 1, 64, 1, 1, 0, NULL, args, NULL)); /* legacy */ /* CULPRIT-LAUNCH */
    }
    if (strcmp(how, "ctxsync") == 0) {
        CK(cuCtxSynchronize());
    } else if (strcmp(how, "dtoh") == 0) {
        CK(cuMemcpyDtoH(host, dbuf, sizeof host));
    } else if (strcmp(how, "streamsync") == 0) {
        CK(cuStreamSynchronize(NULL));
    } else if (strcmp(how, "memfree") == 0) {
        CK(cuMemFree(dbuf));
        dbuf = 0;
    } else if (strcmp(how, "eventsync") == 0) {
        CK(cuEventRecord(ev, NULL));
        CK(cuEventSynchronize(ev));
    } else if (strcmp(how, "nextlaunch") == 0) {
        /* The GPU ran ahead (FAKECUDA_RUN_AHEAD): the fault is already known when the program launches more. */
        for (int i = 0; i < count; i++)
            CK(cuLaunchKernel(f_step, 4, 1, 1, 64, 1, 1, 0, NULL, args, NULL));
        CK(cuCtxSynchronize());
    } else if (strcmp(how, "abort") == 0) {
        CUresult rc = cuCtxSynchronize();
        if (rc != CUDA_SUCCESS)
            report_error(cuGetErrorName, "cuCtxSynchronize()", rc, 1);
    } else if (strcmp(how, "unwrapped") == 0) {
        /* The error comes back from a call culprit does not wrap (as the CUDA runtime's own checks do). */
        CUevent e2;
        CK(cuEventCreate(&e2, CU_EVENT_DEFAULT));
    } else if (strcmp(how, "unwrapped_reset") == 0) {
        /* The same, and the program recovers by resetting the device, which clears the error, then exits 0. */
        CUevent e2;
        CUresult rc = cuEventCreate(&e2, CU_EVENT_DEFAULT);
        if (rc != CUDA_SUCCESS) {
            printf("cuEventCreate failed (%d): resetting the device\n", (int)rc);
            CUdevice dev;
            CK(cuCtxGetDevice(&dev));
            CK(cuDevicePrimaryCtxReset(dev));
        }
        return 0;
    } else if (strcmp(how, "forkidle") == 0) {
        /* A child forked after the launches makes no CUDA call and fails while the parent's fault is already
         * known: whatever runs in it at exit must leave the inherited CUDA state alone. The parent then
         * meets the error itself. CHILD_STDERR names a file for the child's stderr. */
        fflush(stdout);
        pid_t pid = fork();
        if (pid == 0) {
            const char *path = getenv("CHILD_STDERR");
            if (path && !freopen(path, "w", stderr))
                _exit(2);
            printf("child exiting\n");
            fflush(stdout);
            exit(1);
        }
        int st = 0;
        if (pid < 0 || waitpid(pid, &st, 0) != pid)
            return 2;
        printf("child exited with status %d\n", WIFEXITED(st) ? WEXITSTATUS(st) : -1);
        CK(cuCtxSynchronize());
    } else if (strcmp(how, "exit") == 0) {
        /* Leave at once, with the faulty work still queued and nothing synchronized. */
        printf("leaving without synchronizing\n");
        exit(3);
    } else {
        fprintf(stderr, "unknown way to surface the error: %s\n", how);
        return 2;
    }
    printf("legacy: %d launches completed\n", count);
    return 0;
}

/* Work still unfinished (or a fault unseen) when the program ends, FAKECUDA_FAULT/FAKECUDA_HANG scripting it:
 *   return0   `count` launches of step, then main returns 0 without synchronizing
 *   otherctx  the launches go to device 1's primary context; device 0's is current when main returns 0
 *   thread    a worker thread launches on a stream of its own and meets the error in a call culprit does not
 *             wrap (as cuBLAS does inside its own calls); the main thread, with no context current, fails */
struct exits_worker {
    int count;   /* launches */
    CUresult rc; /* what the unwrapped call returned */
};

static void *exits_thread(void *arg)
{
    struct exits_worker *w = arg;
    CUstream s;
    CUevent e;
    CK(cuCtxSetCurrent(ctx));
    CK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    for (int i = 0; i < w->count; i++)
        CK(cuLaunchKernel(f_step, 4, 1, 1, 64, 1, 1, 0, s, args, NULL)); /* thread */ /* CULPRIT-LAUNCH */
    w->rc = cuEventCreate(&e, CU_EVENT_DEFAULT);
    return NULL;
}

static int exits(const char *how, int count)
{
    if (strcmp(how, "return0") == 0) {
        setup();
        for (int i = 0; i < count; i++)
            CK(cuLaunchKernel(f_step, 4, 1, 1, 64, 1, 1, 0, NULL, args, NULL)); /* return0 */ /* CULPRIT-LAUNCH */
        printf("returning without synchronizing\n");
        return 0;
    }
    if (strcmp(how, "otherctx") == 0) {
        CUdevice d1;
        CUcontext c1;
        CUmodule m1;
        CUfunction step1;
        CUdeviceptr buf1;
        setup();
        CK(cuDeviceGet(&d1, 1));
        CK(cuDevicePrimaryCtxRetain(&c1, d1));
        CK(cuCtxSetCurrent(c1));
        CK(cuModuleLoadData(&m1, MODULE_IMAGE));
        CK(cuModuleGetFunction(&step1, m1, K_STEP));
        CK(cuMemAlloc(&buf1, NELEM * sizeof(float)));
        void *a1[] = {&buf1, &nelem};
        for (int i = 0; i < count; i++)
            CK(cuLaunchKernel(step1, 4, 1, 1, 64, 1, 1, 0, NULL, a1, NULL)); /* otherctx */ /* CULPRIT-LAUNCH */
        CK(cuCtxSetCurrent(ctx));
        printf("returning with device 0 current\n");
        return 0;
    }
    if (strcmp(how, "thread") == 0) {
        pthread_t t;
        struct exits_worker w = {count, CUDA_SUCCESS};
        setup();
        CK(cuCtxSetCurrent(NULL));
        if (pthread_create(&t, NULL, exits_thread, &w) != 0 || pthread_join(t, NULL) != 0)
            return 2;
        if (w.rc != CUDA_SUCCESS) {
            printf("the worker's cuEventCreate failed (%d)\n", (int)w.rc);
            return 1;
        }
        printf("the worker finished\n");
        return 0;
    }
    fprintf(stderr, "unknown way to end: %s\n", how);
    return 2;
}

/* A program that does not run the same way twice: `count` launches on the legacy stream, one of them write_oob
 * (fault it with FAKECUDA_FAULT=kernel=write_oob), then a context synchronize. The file named by FLAKY_STATE
 * counts the runs: the first run's write_oob is launch #20; later runs put it at #35 (FLAKY_LATER=elsewhere),
 * leave it out (FLAKY_LATER=none), or keep it at #20 (unset). */
static int flaky(int count)
{
    const char *state = getenv("FLAKY_STATE"), *later = getenv("FLAKY_LATER");
    long runs = 0;
    FILE *f;
    if (!state)
        return 2;
    if ((f = fopen(state, "a+")) == NULL)
        return 2;
    fseek(f, 0, SEEK_END);
    runs = ftell(f);
    fputc('x', f);
    fclose(f);
    int bad_at = 20;
    if (runs > 0 && later && strcmp(later, "elsewhere") == 0)
        bad_at = 35;
    else if (runs > 0 && later && strcmp(later, "none") == 0)
        bad_at = 0;
    setup();
    for (int i = 1; i <= count; i++) {
        CUfunction k = i == bad_at ? f_bad : f_step;
        CK(cuLaunchKernel(k, 4, 1, 1, 64, 1, 1, 0, NULL, args, NULL)); /* flaky */ /* CULPRIT-LAUNCH */
    }
    CK(cuCtxSynchronize());
    printf("flaky: run %ld, %d launches completed\n", runs + 1, count);
    return 0;
}

/* Four created streams, six rounds of one launch plus one event record per stream (records: 0, the "quiet" form,
 * leaves them out); write_oob replaces the launch of stream 2 in round 3 (launch #15). */
static int streams4(int records)
{
    CUstream s[4];
    CUevent ev[4];
    setup();
    for (int i = 0; i < 4; i++) {
        CK(cuStreamCreate(&s[i], CU_STREAM_NON_BLOCKING));
        CK(cuEventCreate(&ev[i], CU_EVENT_DISABLE_TIMING));
    }
    for (int round = 0; round < 6; round++) {
        for (int i = 0; i < 4; i++) {
            if (round == 3 && i == 2)
                CK(cuLaunchKernel(f_bad, 2, 1, 1, 32, 1, 1, 0, s[i], args, NULL)); /* streams4 */ /* CULPRIT-LAUNCH */
            else
                CK(cuLaunchKernel(f_step, 4, 1, 1, 64, 1, 1, 0, s[i], args, NULL));
            if (records)
                CK(cuEventRecord(ev[i], s[i]));
        }
    }
    CK(cuCtxSynchronize());
    printf("streams4: all rounds completed\n");
    return 0;
}

/* Launches alternate between device 0 and device 1 (six each); the fourth launch on device 1 is write_oob
 * (launch #8). Device 0 is synchronized first and is healthy; the error surfaces when device 1 is synchronized. */
static int devices2(void)
{
    CUdevice dev[2];
    CUcontext c[2];
    CUmodule m[2];
    CUfunction step[2], bad;
    CUdeviceptr d[2];
    void *a[2][2];
    int count = 0;
    CK(cuInit(0));
    CK(cuDeviceGetCount(&count));
    if (count < 2) {
        fprintf(stderr, "devices2 needs two devices, found %d\n", count);
        return 1;
    }
    for (int i = 0; i < 2; i++) {
        CK(cuDeviceGet(&dev[i], i));
        CK(cuDevicePrimaryCtxRetain(&c[i], dev[i]));
        CK(cuCtxSetCurrent(c[i]));
        CK(cuModuleLoadData(&m[i], MODULE_IMAGE));
        CK(cuModuleGetFunction(&step[i], m[i], K_STEP));
        CK(cuMemAlloc(&d[i], NELEM * sizeof(float)));
        a[i][0] = &d[i];
        a[i][1] = &nelem;
    }
    CK(cuModuleGetFunction(&bad, m[1], K_BAD));
    for (int round = 0; round < 6; round++) {
        CK(cuCtxSetCurrent(c[0]));
        CK(cuLaunchKernel(step[0], 4, 1, 1, 64, 1, 1, 0, NULL, a[0], NULL));
        CK(cuCtxSetCurrent(c[1]));
        if (round == 3)
            CK(cuLaunchKernel(bad, 4, 1, 1, 64, 1, 1, 0, NULL, a[1], NULL)); /* devices2 */ /* CULPRIT-LAUNCH */
        else
            CK(cuLaunchKernel(step[1], 4, 1, 1, 64, 1, 1, 0, NULL, a[1], NULL));
    }
    CK(cuCtxSetCurrent(c[0]));
    CK(cuCtxSynchronize());
    printf("devices2: device 0 synchronized\n");
    CK(cuCtxSetCurrent(c[1]));
    CK(cuCtxSynchronize());
    printf("devices2: device 1 synchronized\n");
    return 0;
}

/* Worker threads, each launching 20 kernels on its own stream at the same time. The workers that stay healthy
 * synchronize their stream, then all meet; only then does the faulty worker synchronize, so exactly one stream
 * has unfinished work when the fault is found. */
static int nthreads;                  /* number of workers */
static int bad_worker;                /* index of the worker that launches write_oob */
static pthread_barrier_t start_line;  /* all workers launch together */
static pthread_barrier_t finish_line; /* healthy workers are synchronized */

static void *worker(void *arg)
{
    int me = (int)(intptr_t)arg;
    CUstream s;
    CK(cuCtxSetCurrent(ctx));
    CK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    pthread_barrier_wait(&start_line);
    for (int i = 0; i < 20; i++) {
        if (me == bad_worker && i == 5)
            CK(cuLaunchKernel(f_bad, 1, 1, 1, 32, 1, 1, 0, s, args, NULL)); /* threads */ /* CULPRIT-LAUNCH */
        else
            CK(cuLaunchKernel(f_step, 1, 1, 1, 32, 1, 1, 0, s, args, NULL));
    }
    if (me != bad_worker) {
        CK(cuStreamSynchronize(s));
        pthread_barrier_wait(&finish_line);
    } else {
        pthread_barrier_wait(&finish_line);
        printf("worker %d tid %ld synchronizes last\n", me, (long)thread_id());
        fflush(stdout);
        CK(cuStreamSynchronize(s));
    }
    return NULL;
}

static int threads(int n)
{
    pthread_t tid[64];
    if (n < 2 || n > 64) {
        fprintf(stderr, "threads: 2..64 workers\n");
        return 2;
    }
    nthreads = n;
    bad_worker = n / 2 + 1;
    setup();
    pthread_barrier_init(&start_line, NULL, (unsigned)n);
    pthread_barrier_init(&finish_line, NULL, (unsigned)n);
    for (int i = 0; i < n; i++)
        if (pthread_create(&tid[i], NULL, worker, (void *)(intptr_t)i) != 0) {
            fprintf(stderr, "pthread_create failed\n");
            return 1;
        }
    for (int i = 0; i < n; i++)
        pthread_join(tid[i], NULL);
    printf("threads: %d workers done\n", nthreads);
    return 0;
}

/* `count` launches of step, then `count` launches of vec_fill, all on the legacy stream, then a synchronize. */
static int phases(int count)
{
    setup();
    for (int i = 0; i < count; i++)
        CK(cuLaunchKernel(f_step, 4, 1, 1, 64, 1, 1, 0, NULL, args, NULL)); /* phase-step */ /* CULPRIT-LAUNCH */
    for (int i = 0; i < count; i++)
        CK(cuLaunchKernel(f_fill, 4, 1, 1, 64, 1, 1, 0, NULL, args, NULL)); /* phase-fill */ /* CULPRIT-LAUNCH */
    CK(cuCtxSynchronize());
    printf("phases: %d + %d launches completed\n", count, count);
    return 0;
}

/* cuGetExportTable must hand back the driver's own table: check its canary and which object holds it. */
static void export_table(void)
{
    static const CUuuid id = {{0x6b, 0xd5, 0xfb, 0x6c, 0x5b, 0xf4, 0xe7, 0x4a, 0x89, 0x87, 0xd9, 0x39, 0x12, 0xfd, 0x9d, 0xf9}};
    const void *table = NULL;
    uint64_t canary;
    Dl_info info;
    CK(cuGetExportTable(&table, &id));
    memcpy(&canary, table, sizeof canary);
    if (dladdr(table, &info) == 0 || info.dli_fname == NULL) {
        printf("export table: not inside any loaded object\n");
        exit(1);
    }
    const char *base = strrchr(info.dli_fname, '/');
    printf("export table: canary %s, held by %s\n", canary == 0xC0FFEE0DDBA11ULL ? "intact" : "WRONG", base ? base + 1 : info.dli_fname);
}

/* Everything a small healthy application does; prints what it read back. */
static int healthy(void)
{
    int host[NELEM], back[NELEM];
    CUstream s;
    CUevent start, stop;
    long sum = 0;
    setup();
    export_table();
    for (int i = 0; i < NELEM; i++)
        host[i] = i;
    CK(cuStreamCreate(&s, CU_STREAM_DEFAULT));
    CK(cuEventCreate(&start, CU_EVENT_DEFAULT));
    CK(cuEventCreate(&stop, CU_EVENT_DEFAULT));
    CK(cuMemsetD32(dbuf, 7, NELEM));
    CK(cuMemcpyHtoD(dbuf, host, sizeof host));
    CK(cuEventRecord(start, s));
    for (int i = 0; i < 8; i++)
        CK(cuLaunchKernel(i % 2 ? f_fill : f_step, 4, 1, 1, 64, 1, 1, 0, s, args, NULL));
    CK(cuEventRecord(stop, s));
    for (int i = 0; i < 4; i++)
        CK(cuLaunchKernel(f_step, 2, 2, 1, 16, 16, 1, 0, NULL, args, NULL));
    CK(cuStreamSynchronize(s));
    CK(cuEventSynchronize(stop));
    CK(cuCtxSynchronize());
    CK(cuMemcpyDtoH(back, dbuf, sizeof back));
    for (int i = 0; i < NELEM; i++)
        sum += back[i];
    CK(cuEventDestroy(start));
    CK(cuEventDestroy(stop));
    CK(cuStreamDestroy(s));
    CK(cuMemFree(dbuf));
    CK(cuModuleUnload(mod));
    printf("healthy: 12 launches, checksum %ld\n", sum);
    return 0;
}

int main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    const char *what = argc > 1 ? argv[1] : "";
    int n = argc > 2 ? atoi(argv[2]) : 0;
    if (strcmp(what, "legacy") == 0 && argc > 2)
        return legacy(argv[2], argc > 3 ? atoi(argv[3]) : 10, argc > 4 ? atoi(argv[4]) : 0);
    if (strcmp(what, "exits") == 0 && argc > 2)
        return exits(argv[2], argc > 3 ? atoi(argv[3]) : 10);
    if (strcmp(what, "flaky") == 0)
        return flaky(n > 0 ? n : 40);
    if (strcmp(what, "streams4") == 0)
        return streams4(1);
    if (strcmp(what, "streams4_quiet") == 0)
        return streams4(0);
    if (strcmp(what, "devices2") == 0)
        return devices2();
    if (strcmp(what, "threads") == 0)
        return threads(n);
    if (strcmp(what, "phases") == 0)
        return phases(n > 0 ? n : 10);
    if (strcmp(what, "healthy") == 0)
        return healthy();
    fprintf(stderr, "usage: linked legacy ctxsync|dtoh|streamsync|memfree|eventsync|nextlaunch|abort|exit [COUNT [PACE_US]]\n"
                    "       linked exits return0|otherctx|thread [COUNT] | flaky [COUNT]\n"
                    "       linked streams4 | devices2 | threads N | phases [COUNT] | healthy\n");
    return 2;
}
