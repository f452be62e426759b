/* A driver-API program (linked with libcuda) that hangs: it launches N kernels, one of which the simulated driver
 * keeps running (FAKECUDA_HANG), makes sure the work before it has run (a query answers "not ready"), prints
 * "ready" and then waits on the GPU or on its stdin until a signal ends it. The variants install signal
 * handlers of their own, keep running after a report signal, fault first, go idle or fork. The tests send the
 * signals (hang_cases.py).
 * Usage: hang VARIANT N, VARIANT one of
 *   sync            N launches on the legacy stream, then cuCtxSynchronize
 *   resync          N launches, cuCtxSynchronize (they complete), then 3 more (the hang is scripted in the first
 *                   of them), then cuCtxSynchronize
 *   streams         N launches on created stream A (one hangs), 2 on stream B, then cuStreamSynchronize(A)
 *   handler-term    sync, with a SIGTERM handler installed before the first launch: it prints and exits 42
 *   handler-int     sync, with such a SIGINT handler (exits 43)
 *   handler-late    sync; a SIGTERM handler installed before the first launch is replaced after it by another
 *                   (sigaction; it exits 44), and the program checks what sigaction shows it
 *   handler-signal  the same with signal() (exits 45)
 *   usr1            a thread waits in cuCtxSynchronize; the main thread reads stdin until it closes, then exits 0
 *   idle            N launches, cuCtxSynchronize (completes), then waits on stdin
 *   quiet           N launches, never synchronized, then waits on stdin
 *   fault           N launches, one faults (FAKECUDA_FAULT); the synchronize fails, then waits on stdin
 *   fork            one launch, then a child does sync; the parent waits for it and says how it ended
 *   loader-lock     N launches (one hangs), then a thread loads HANG_BLOCKER_LIB with dlopen, whose constructor
 *                   prints "ready" and waits there: that thread holds the dynamic loader's lock, and it is the only
 *                   thread SIGTERM can reach (the main thread blocks it) */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common.h"

#define CK(call)                                                                                                                                               \
    do {                                                                                                                                                       \
        CUresult rc_ = (call);                                                                                                                                 \
        if (rc_ != CUDA_SUCCESS)                                                                                                                               \
            report_error(cuGetErrorName, #call, rc_, 0);                                                                                                       \
    } while (0)

static CUfunction f_step, f_fill;
static CUdeviceptr dbuf;
static int nelem = NELEM;
static CUcontext ctx;

static void say(const char *s)
{
    ssize_t w = write(1, s, strlen(s));
    (void)w;
}

static void on_term(int sig)
{
    (void)sig;
    say("hang: the program's SIGTERM handler ran\n");
    _exit(42);
}

static void on_int(int sig)
{
    (void)sig;
    say("hang: the program's SIGINT handler ran\n");
    _exit(43);
}

static void on_term_late(int sig, siginfo_t *si, void *uc)
{
    (void)sig, (void)uc;
    say(si && si->si_signo == SIGTERM ? "hang: the program's second SIGTERM handler ran with its siginfo\n"
                                      : "hang: the program's second SIGTERM handler ran without siginfo\n");
    _exit(44);
}

static void on_term_signal(int sig)
{
    (void)sig;
    say("hang: the program's signal() handler ran\n");
    _exit(45);
}

static void launch_steps(int n, CUstream s)
{
    void *args[] = {&dbuf, &nelem};
    for (int i = 0; i < n; i++)
        CK(cuLaunchKernel(f_step, 4, 1, 1, 64, 1, 1, 0, s, args, NULL)); /* CULPRIT-LAUNCH */
}

/* The work queued before the launch that hangs runs (its breadcrumbs land); the launch itself keeps running. */
static void settle(CUstream s)
{
    CUresult rc = cuStreamQuery(s);
    if (rc != CUDA_ERROR_NOT_READY && rc != CUDA_SUCCESS)
        report_error(cuGetErrorName, "cuStreamQuery", rc, 0);
}

static void wait_stdin(void)
{
    char buf[64];
    while (read(0, buf, sizeof buf) > 0) {
    }
}

static void *sync_thread(void *arg)
{
    (void)arg;
    CK(cuCtxSetCurrent(ctx));
    CK(cuCtxSynchronize());
    say("hang: the synchronize returned\n");
    return NULL;
}

static void *load_blocker(void *arg)
{
    if (!dlopen((const char *)arg, RTLD_NOW))
        fprintf(stderr, "hang: dlopen %s: %s\n", (const char *)arg, dlerror());
    return NULL;
}

/* What sigaction shows for SIGTERM is the program's own handler h, never culprit's. */
static void expect_shown(void (*h)(int), const char *when)
{
    struct sigaction cur;
    sigaction(SIGTERM, NULL, &cur);
    printf("hang: sigaction shows the program's handler %s: %s\n", when, cur.sa_handler == h ? "yes" : "no");
}

static int sync_variant(int n)
{
    launch_steps(n, NULL);
    settle(NULL);
    say("ready\n");
    CK(cuCtxSynchronize());
    say("hang: the synchronize returned\n");
    return 0;
}

int main(int argc, char **argv)
{
    CUdevice dev;
    CUmodule mod;

    setvbuf(stdout, NULL, _IOLBF, 0);
    if (argc != 3) {
        fprintf(stderr, "usage: hang VARIANT N\n");
        return 2;
    }
    const char *v = argv[1];
    int n = atoi(argv[2]);
    if (!strcmp(v, "handler-term") || !strcmp(v, "handler-late") || !strcmp(v, "handler-signal")) {
        struct sigaction sa = {0};
        sa.sa_handler = on_term;
        sigemptyset(&sa.sa_mask);
        sigaction(SIGTERM, &sa, NULL);
    } else if (!strcmp(v, "handler-int")) {
        signal(SIGINT, on_int);
    }
    CK(cuInit(0));
    CK(cuDeviceGet(&dev, 0));
    CK(cuDevicePrimaryCtxRetain(&ctx, dev));
    CK(cuCtxSetCurrent(ctx));
    CK(cuModuleLoadData(&mod, MODULE_IMAGE));
    CK(cuModuleGetFunction(&f_step, mod, K_STEP));
    CK(cuModuleGetFunction(&f_fill, mod, K_FILL));
    CK(cuMemAlloc(&dbuf, NELEM * sizeof(float)));

    if (!strcmp(v, "sync") || !strcmp(v, "handler-term") || !strcmp(v, "handler-int"))
        return sync_variant(n);
    if (!strcmp(v, "spin")) {
        /* a kernel of another name (FAKECUDA_HANG=kernel=vec_fill keeps it running) behind n steps, two behind it */
        void *args[] = {&dbuf, &nelem};
        launch_steps(n, NULL);
        CK(cuLaunchKernel(f_fill, 2, 1, 1, 128, 1, 1, 0, NULL, args, NULL));
        launch_steps(2, NULL);
        return sync_variant(0);
    }
    if (!strcmp(v, "resync")) {
        launch_steps(n, NULL);
        CK(cuCtxSynchronize());
        return sync_variant(3);
    }
    if (!strcmp(v, "handler-late")) {
        struct sigaction sa = {0}, old;
        launch_steps(1, NULL); /* culprit's handlers are in front from here on */
        expect_shown(on_term, "after the first launch");
        sa.sa_sigaction = on_term_late;
        sa.sa_flags = SA_SIGINFO;
        sigemptyset(&sa.sa_mask);
        sigaction(SIGTERM, &sa, &old);
        printf("hang: the old handler sigaction gave back is the program's: %s\n", old.sa_handler == on_term ? "yes" : "no");
        return sync_variant(n - 1);
    }
    if (!strcmp(v, "handler-signal")) {
        launch_steps(1, NULL);
        void (*old)(int) = signal(SIGTERM, on_term_signal);
        printf("hang: the old handler signal gave back is the program's: %s\n", old == on_term ? "yes" : "no");
        expect_shown(on_term_signal, "after signal()");
        return sync_variant(n - 1);
    }
    if (!strcmp(v, "streams")) {
        CUstream a, b;
        CK(cuStreamCreate(&a, CU_STREAM_NON_BLOCKING));
        CK(cuStreamCreate(&b, CU_STREAM_NON_BLOCKING));
        launch_steps(n, a);
        launch_steps(2, b);
        CK(cuStreamSynchronize(b));
        settle(a);
        say("ready\n");
        CK(cuStreamSynchronize(a));
        say("hang: the synchronize returned\n");
        return 0;
    }
    if (!strcmp(v, "usr1")) {
        pthread_t t;
        launch_steps(n, NULL);
        settle(NULL);
        pthread_create(&t, NULL, sync_thread, NULL);
        say("ready\n");
        wait_stdin();
        say("hang: carried on after the report signals\n");
        _exit(0); /* the thread still waits on the GPU */
    }
    if (!strcmp(v, "idle")) {
        launch_steps(n, NULL);
        CK(cuCtxSynchronize());
        say("ready\n");
        wait_stdin();
        return 0;
    }
    if (!strcmp(v, "quiet")) {
        launch_steps(n, NULL);
        say("ready\n");
        wait_stdin();
        return 0;
    }
    if (!strcmp(v, "fault")) {
        launch_steps(n, NULL);
        CUresult rc = cuCtxSynchronize();
        const char *name = NULL;
        cuGetErrorName(rc, &name);
        printf("hang: cuCtxSynchronize returned %s\n", name ? name : "?");
        say("ready\n");
        wait_stdin();
        return 0;
    }
    if (!strcmp(v, "loader-lock")) {
        pthread_t t;
        sigset_t term;
        const char *lib = getenv("HANG_BLOCKER_LIB");
        launch_steps(n, NULL);
        settle(NULL);
        sigemptyset(&term);
        sigaddset(&term, SIGTERM);
        pthread_sigmask(SIG_BLOCK, &term, NULL); /* the thread made next unblocks it */
        pthread_create(&t, NULL, load_blocker, (void *)(lib ? lib : "missing"));
        pthread_join(t, NULL);
        return 0;
    }
    if (!strcmp(v, "fork")) {
        int status = 0;
        launch_steps(1, NULL);
        CK(cuCtxSynchronize());
        pid_t child = fork();
        if (child < 0) {
            perror("fork");
            return 1;
        }
        if (child == 0)
            return sync_variant(n);
        printf("hang: child pid %ld\n", (long)child);
        if (waitpid(child, &status, 0) != child) {
            perror("waitpid");
            return 1;
        }
        if (WIFSIGNALED(status))
            printf("hang: the child was killed by signal %d\n", WTERMSIG(status));
        else
            printf("hang: the child exited with status %d\n", WEXITSTATUS(status));
        return 0;
    }
    fprintf(stderr, "hang: unknown variant %s\n", v);
    return 2;
}
