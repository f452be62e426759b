/* One rank of a data-parallel training job, as a launcher starts it (tests/fake/ranklaunch.py plays torchrun;
 * mpirun and srun start it in launcher_cases.py; a test may also set a launcher's variables by hand): each step
 * launches the rank's own kernels and then the gradient all-reduce NCCL would launch, and synchronizes. Which rank
 * faults (FAKECUDA_FAULT) and which wait in the all-reduce for ever (FAKECUDA_HANG) is scripted from outside, like
 * every fault of these tests: in each rank's environment, or for a launcher that gives every rank the same one in
 * RANKJOB_SCRIPT="RANKS:NAME=VALUE ..." (RANKS as in "0-1,3"; the entries for its own rank are set before the
 * program starts over, so the simulated driver reads them from the start). The rank is RANK, OMPI_COMM_WORLD_RANK,
 * PMI_RANK or SLURM_PROCID. The program also stands in for NCCL's debug output: when the error comes back it
 * writes the warning NCCL would, into NCCL_DEBUG_FILE (with %h and %p expanded as NCCL does) or, with NCCL_DEBUG
 * alone, on stdout. With RANKJOB_READY=PREFIX it creates PREFIX-<rank>, holding its pid and its parent's, before
 * its first synchronize, so a launcher can tell that every rank has queued its work (and which process each is).
 * It works on device 0, or with RANKJOB_OWN_DEVICE=1 on device LOCAL_RANK, as a torch rank on cuda:LOCAL_RANK.
 * Usage: rankjob STEPS [plain|thread|fork|early|quick]. */
#define _GNU_SOURCE
#include <pthread.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common.h"

#define K_ALLREDUCE "ncclDevKernel_AllReduce_Sum_f32_RING_LL"

static CUcontext ctx;                          /* primary context of its device */
static CUfunction f_step, f_loss, f_allreduce; /* the rank's kernels and NCCL's */
static CUdeviceptr dbuf;                       /* NELEM floats of device memory */
static int nelem = NELEM;                      /* kernel argument */
static void *args[] = {&dbuf, &nelem};         /* kernel parameters shared by every launch */
static int rank = -1;                          /* the launcher's rank variable, or -1 */

/* What NCCL prints with NCCL_DEBUG=WARN when a CUDA call it makes fails. */
static void nccl_warn(CUresult rc)
{
    const char *file = getenv("NCCL_DEBUG_FILE"), *name = NULL;
    char host[256] = "", path[4096];
    FILE *out = NULL;
    if (!getenv("NCCL_DEBUG"))
        return;
    gethostname(host, sizeof host - 1);
    host[strcspn(host, ".")] = '\0'; /* NCCL's %h and its line prefix use the name up to the first dot */
    if (file) {
        size_t n = 0;
        for (const char *p = file; *p && n + 64 < sizeof path; p++) {
            if (p[0] == '%' && p[1] == 'h') {
                n += (size_t)snprintf(path + n, sizeof path - n, "%s", host);
                p++;
            } else if (p[0] == '%' && p[1] == 'p') {
                n += (size_t)snprintf(path + n, sizeof path - n, "%d", (int)getpid());
                p++;
            } else {
                path[n++] = *p;
            }
        }
        path[n] = '\0';
        out = fopen(path, "a");
    }
    cuGetErrorName(rc, &name);
    fprintf(out ? out : stdout, "%s:%d:%d [0] enqueue.cc:1556 NCCL WARN Cuda failure '%s'\n", host, (int)getpid(), (int)getpid(), name ? name : "?");
    fprintf(out ? out : stdout, "%s:%d:%d [0] NCCL INFO group.cc:68 -> 1\n", host, (int)getpid(), (int)getpid());
    if (out)
        fclose(out);
    else
        fflush(stdout);
}

#define CK(call)                                                                                                                                               \
    do {                                                                                                                                                       \
        CUresult rc_ = (call);                                                                                                                                 \
        if (rc_ != CUDA_SUCCESS) {                                                                                                                             \
            nccl_warn(rc_);                                                                                                                                    \
            report_error(cuGetErrorName, #call, rc_, 0);                                                                                                       \
        }                                                                                                                                                      \
    } while (0)

static void setup(void)
{
    CUdevice dev;
    CUmodule mod;
    CK(cuInit(0));
    const char *own = getenv("RANKJOB_OWN_DEVICE"), *local = getenv("LOCAL_RANK");
    CK(cuDeviceGet(&dev, own && strcmp(own, "1") == 0 && local ? atoi(local) : 0));
    CK(cuDevicePrimaryCtxRetain(&ctx, dev));
    CK(cuCtxSetCurrent(ctx));
    CK(cuModuleLoadData(&mod, MODULE_IMAGE "," K_ALLREDUCE));
    CK(cuModuleGetFunction(&f_step, mod, K_STEP));
    CK(cuModuleGetFunction(&f_loss, mod, K_BAD));
    CK(cuModuleGetFunction(&f_allreduce, mod, K_ALLREDUCE));
    CK(cuMemAlloc(&dbuf, NELEM * sizeof(float)));
}

/* The file appears whole ("PID PPID\n"): written beside it, then renamed. */
static void ready(void)
{
    const char *prefix = getenv("RANKJOB_READY");
    char path[4096], tmp[4200];
    FILE *f;
    if (!prefix)
        return;
    snprintf(path, sizeof path, "%s-%d", prefix, rank);
    snprintf(tmp, sizeof tmp, "%s.%d.tmp", path, (int)getpid());
    if ((f = fopen(tmp, "w")) == NULL)
        return;
    fprintf(f, "%d %d\n", (int)getpid(), (int)getppid());
    if (fclose(f) == 0)
        rename(tmp, path);
}

static void train(int steps)
{
    for (int s = 1; s <= steps; s++) {
        CK(cuLaunchKernel(f_step, 4, 1, 1, 64, 1, 1, 0, NULL, args, NULL));
        CK(cuLaunchKernel(f_loss, 4, 1, 1, 64, 1, 1, 0, NULL, args, NULL)); /* CULPRIT-LAUNCH */       /* loss */
        CK(cuLaunchKernel(f_allreduce, 8, 1, 1, 256, 1, 1, 0, NULL, args, NULL)); /* CULPRIT-LAUNCH */ /* allreduce */
        if (s == 1)
            ready();
        CK(cuCtxSynchronize());
        printf("rank %d: step %d done\n", rank, s);
    }
}

static void *train_thread(void *arg)
{
    CK(cuCtxSetCurrent(ctx));
    train(*(int *)arg);
    return NULL;
}

/* Whether rank r is in RANKS ("2", "0-1,3"), which ends at end. */
static int in_ranks(const char *s, const char *end, int r)
{
    while (s < end) {
        char *stop;
        long lo = strtol(s, &stop, 10), hi = lo;
        if (stop == s)
            return 0;
        if (*stop == '-')
            hi = strtol(stop + 1, &stop, 10);
        if (r >= lo && r <= hi)
            return 1;
        s = *stop == ',' ? stop + 1 : end;
    }
    return 0;
}

/* Sets this rank's entries of RANKJOB_SCRIPT and starts the program over, once, so that the simulated driver
 * reads them at its start like any other environment. */
static void apply_script(char **argv)
{
    const char *script = getenv("RANKJOB_SCRIPT");
    char *copy, *save = NULL;
    int set = 0;
    if (!script || rank < 0)
        return;
    copy = strdup(script);
    for (char *e = copy ? strtok_r(copy, " ", &save) : NULL; e; e = strtok_r(NULL, " ", &save)) {
        char *colon = strchr(e, ':'), *eq = colon ? strchr(colon, '=') : NULL;
        if (!eq || !in_ranks(e, colon, rank))
            continue;
        *eq = '\0';
        setenv(colon + 1, eq + 1, 1);
        set = 1;
    }
    free(copy);
    unsetenv("RANKJOB_SCRIPT");
    if (set) {
        char self[4096];
        ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
        if (n > 0) {
            self[n] = '\0';
            execv(self, argv); /* by its own name, which the new image keeps as its thread name */
        }
        perror("rankjob: execv");
        exit(2);
    }
}

/* The rank the launcher gave: torchrun's, Open MPI's, MPICH's or Slurm's, the innermost first. */
static int launcher_rank(void)
{
    static const char *const vars[] = {"RANK", "OMPI_COMM_WORLD_RANK", "PMI_RANK", "SLURM_PROCID"};
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++)
        if (getenv(vars[i]))
            return atoi(getenv(vars[i]));
    return -1;
}

int main(int argc, char **argv)
{
    const char *how = argc > 2 ? argv[2] : "plain";
    int steps = argc > 1 ? atoi(argv[1]) : 0;

    setvbuf(stdout, NULL, _IOLBF, 0);
    if (steps < 1) {
        fprintf(stderr, "usage: rankjob STEPS [plain|thread|fork|early|quick]\n");
        return 2;
    }
    rank = launcher_rank();
    apply_script(argv);
    if (strcmp(how, "early") == 0) { /* leaves before its first launch */
        printf("rank %d: nothing to do\n", rank);
        return 0;
    }
    setup();
    if (strcmp(how, "thread") == 0) { /* the steps run on another thread; main exits after joining it */
        pthread_t t;
        pthread_create(&t, NULL, train_thread, &steps);
        pthread_join(t, NULL);
    } else if (strcmp(how, "fork") == 0) { /* a child (a data loader, say) launches on its own, then the parent */
        fflush(NULL);
        pid_t pid = fork();
        if (pid == 0) {
            train(1);
            exit(4);
        }
        int st = 0;
        waitpid(pid, &st, 0);
        printf("rank %d: child pid %d exited with status %d\n", rank, (int)pid, WEXITSTATUS(st));
        train(steps);
    } else {
        train(steps);
    }
    printf("rank %d: finished\n", rank);
    if (strcmp(how, "quick") == 0) /* ends without exit handlers */
        _exit(0);
    return 0;
}
