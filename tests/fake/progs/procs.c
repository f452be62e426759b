/* A driver-API program (linked with libcuda) that does to its process what daemons, shells and task pools do:
 * after its first launches it closes every descriptor it did not open and opens its own (pipes, files), or forks
 * children that do no CUDA work. culprit must keep out of its way: hold no descriptor a program can lose or be
 * given, and do nothing in a child that never launches.
 *   procs closefds-pipe DIR    close fds 3..1023, write into a new pipe, allocate (from a frame without unwind
 *                              tables) and read the pipe back
 *   procs closefds-signal DIR  close fds 3..1023, open 16 files in DIR, send itself SIGUSR1, check the files
 *   procs forks N              fork N children that _exit at once, one after the other
 *   procs stdout-closed -      started with fd 1 closed: says on stderr whether fd 1 is still closed after the
 *                              first launches (nothing of culprit's may take its number)
 *   procs child-threads        fork a child that reports its threads, the files it holds and the page faults its
 *                              fork handlers took, then exits
 * Each variant launches 3 kernels and synchronizes first; the closefds variants launch 2 more and synchronize
 * at the end (a fault scripted at launch 4 or 5 surfaces there). */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common.h"

CUresult procs_alloc_unwound(CUdeviceptr *p, size_t size); /* procs_nounwind.c: a frame without unwind tables */

static CUfunction f_step;
static CUdeviceptr dbuf;

static void launch_steps(int n)
{
    int nelem = NELEM;
    void *args[] = {&dbuf, &nelem};
    for (int i = 0; i < n; i++)
        CK_DRIVER(cuLaunchKernel(f_step, 4, 1, 1, 64, 1, 1, 0, NULL, args, NULL)); /* procs-step */ /* CULPRIT-LAUNCH */
}

/* The descriptors above 2 this process holds, but the one reading the list. */
static int count_fds(void)
{
    DIR *d = opendir("/proc/self/fd");
    struct dirent *e;
    int n = 0;
    if (!d)
        return -1;
    while ((e = readdir(d)) != NULL) {
        int fd = atoi(e->d_name);
        if (e->d_name[0] != '.' && fd > 2 && fd != dirfd(d))
            n++;
    }
    closedir(d);
    return n;
}

/* The threads this process runs, from /proc/self/status. */
static int count_threads(void)
{
    char line[256];
    int n = -1;
    FILE *f = fopen("/proc/self/status", "r");
    if (!f)
        return -1;
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "Threads: %d", &n) == 1)
            break;
    fclose(f);
    return n;
}

static void close_from_3(void)
{
    for (int fd = 3; fd < 1024; fd++)
        close(fd);
}

static int closefds_pipe(void)
{
    static const char msg[] = "ping through the program's own pipe";
    char back[sizeof msg];
    size_t got = 0;
    int p[2];
    close_from_3();
    if (pipe(p) != 0) {
        perror("pipe");
        return 1;
    }
    printf("procs: pipe %d %d\n", p[0], p[1]);
    if (write(p[1], msg, sizeof msg) != (ssize_t)sizeof msg) {
        perror("write");
        return 1;
    }
    {
        /* an allocation's stack is taken at once, through a frame that has no unwind tables */
        CUdeviceptr more;
        CK_DRIVER(procs_alloc_unwound(&more, 4096));
    }
    /* bounded, so that a lost message ends the program with a word rather than blocking it forever */
    while (got < sizeof msg) {
        struct pollfd pf = {p[0], POLLIN, 0};
        ssize_t r;
        if (poll(&pf, 1, 10000) <= 0)
            break;
        r = read(p[0], back + got, sizeof msg - got);
        if (r <= 0)
            break;
        got += (size_t)r;
    }
    if (got == sizeof msg && memcmp(back, msg, sizeof msg) == 0)
        printf("procs: read back the pipe's message\n");
    else
        printf("procs: the pipe's message was lost (%zu of %zu bytes came back)\n", got, sizeof msg);
    return 0;
}

static int closefds_signal(const char *dir)
{
    int fds[16], touched = 0;
    char path[4096];
    close_from_3();
    for (int i = 0; i < 16; i++) {
        snprintf(path, sizeof path, "%s/file%d", dir, i);
        fds[i] = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
        if (fds[i] < 0) {
            perror(path);
            return 1;
        }
    }
    kill(getpid(), SIGUSR1); /* the report signal: a hang report, and the program goes on */
    for (int i = 0; i < 16; i++) {
        struct stat sb;
        if (fstat(fds[i], &sb) == 0 && sb.st_size != 0) {
            printf("procs: %lld bytes were written into file%d (fd %d)\n", (long long)sb.st_size, i, fds[i]);
            touched++;
        }
        close(fds[i]);
    }
    if (!touched)
        printf("procs: the files are untouched\n");
    return 0;
}

static int forks(int n)
{
    for (int i = 0; i < n; i++) {
        pid_t pid = fork();
        if (pid < 0) {
            perror("fork");
            return 1;
        }
        if (pid == 0)
            _exit(0);
        waitpid(pid, NULL, 0);
    }
    printf("procs: %d children ended\n", n);
    return 0;
}

static int child_threads(void)
{
    int p[2];
    pid_t pid;
    if (pipe(p) != 0)
        return 1;
    pid = fork();
    if (pid == 0) {
        char line[160];
        struct rusage ru;
        int len;
        getrusage(RUSAGE_SELF, &ru); /* first: the pages the fork handlers wrote, and nothing of the child's own */
        close(p[0]);
        len = snprintf(line, sizeof line, "procs: the child runs %d thread(s) and holds %d descriptor(s)\nprocs: page faults at fork %ld\n", count_threads(),
                       count_fds() - 1, ru.ru_minflt);
        if (write(p[1], line, (size_t)len) < 0)
            _exit(1);
        exit(0); /* through the exit handlers: a child that launched nothing has nothing to look at */
    }
    close(p[1]);
    {
        char buf[256];
        ssize_t r = read(p[0], buf, sizeof buf - 1);
        if (r > 0) {
            buf[r] = 0;
            fputs(buf, stdout);
        }
    }
    close(p[0]);
    wait_child(pid);
    return 0;
}

int main(int argc, char **argv)
{
    CUdevice dev;
    CUcontext ctx;
    CUmodule mod;
    const char *v = argc > 1 ? argv[1] : "";
    int rc;

    setvbuf(stdout, NULL, _IOLBF, 0);
    if (argc != 3 && !(argc == 2 && !strcmp(v, "child-threads"))) {
        fprintf(stderr, "usage: procs VARIANT ARG\n");
        return 2;
    }
    CK_DRIVER(cuInit(0));
    CK_DRIVER(cuDeviceGet(&dev, 0));
    CK_DRIVER(cuDevicePrimaryCtxRetain(&ctx, dev));
    CK_DRIVER(cuCtxSetCurrent(ctx));
    CK_DRIVER(cuModuleLoadData(&mod, MODULE_IMAGE));
    CK_DRIVER(cuModuleGetFunction(&f_step, mod, K_STEP));
    CK_DRIVER(cuMemAlloc(&dbuf, NELEM * sizeof(float)));
    launch_steps(3);
    CK_DRIVER(cuCtxSynchronize());
    printf("procs: %d descriptor(s) above 2 after the first launches, %d thread(s)\n", count_fds(), count_threads());

    if (!strcmp(v, "stdout-closed")) {
        fprintf(stderr, "procs: fd 1 is %s\n", fcntl(1, F_GETFD) < 0 ? "still closed" : "open");
        return 0;
    }
    if (!strcmp(v, "forks"))
        return forks(atoi(argv[2]));
    if (!strcmp(v, "child-threads"))
        return child_threads();
    if (!strcmp(v, "closefds-pipe"))
        rc = closefds_pipe();
    else if (!strcmp(v, "closefds-signal"))
        rc = closefds_signal(argv[2]);
    else {
        fprintf(stderr, "procs: unknown variant %s\n", v);
        return 2;
    }
    if (rc)
        return rc;
    launch_steps(2);
    CK_DRIVER(cuCtxSynchronize());
    printf("procs: synchronized\n");
    return 0;
}
