/* `culprit demo`: runs a small program whose kernel faults on purpose, under the same machinery as
 * `culprit run`. On a machine with a usable GPU it runs the real CUDA demo; otherwise (or with --sim) the
 * simulated-driver demo, so that anyone can see what a verdict looks like. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "cli.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define CLI_GPU_PROBE_TIMEOUT_S 30 /* a driver that hangs in cuInit counts as no GPU */

typedef int (*cli_cuinit_fn)(unsigned int);
typedef int (*cli_cucount_fn)(int *);

/* Child side of the probe: exit 0 when libcuda loads, initializes and sees a device. */
static void cli_probe_child(void)
{
    void *h;
    cli_cuinit_fn init;
    cli_cucount_fn count;
    int n = 0, fd = open("/dev/null", O_WRONLY);

    /* the driver may print to stdout/stderr when it fails; the probe must stay silent */
    if (fd >= 0) {
        dup2(fd, 1);
        dup2(fd, 2);
    }
    h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!h)
        _exit(1);
    init = (cli_cuinit_fn)dlsym(h, "cuInit");
    count = (cli_cucount_fn)dlsym(h, "cuDeviceGetCount");
    if (!init || !count || init(0) != 0 || count(&n) != 0 || n <= 0)
        _exit(1);
    _exit(0);
}

/* Whether a GPU is usable. The probe runs in a child so the CLI itself never holds a CUDA context (and never
 * maps the driver into itself). */
static int cli_gpu_usable(void)
{
    struct timespec tick = {0, 20 * 1000 * 1000};
    time_t start = time(NULL);
    int status;
    pid_t pid, done;

    fflush(NULL);
    pid = fork();
    if (pid < 0)
        return 0;
    if (pid == 0)
        cli_probe_child();
    for (;;) {
        done = waitpid(pid, &status, WNOHANG);
        if (done == pid)
            return WIFEXITED(status) && WEXITSTATUS(status) == 0;
        if (done < 0 && errno != EINTR)
            return 0;
        if (time(NULL) - start > CLI_GPU_PROBE_TIMEOUT_S) {
            kill(pid, SIGKILL);
            while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
                ;
            return 0;
        }
        nanosleep(&tick, NULL);
    }
}

static int cli_is_exec(const char *path)
{
    struct stat sb;
    return stat(path, &sb) == 0 && S_ISREG(sb.st_mode) && access(path, X_OK) == 0;
}

int cli_demo_main(int argc, char **argv)
{
    struct cli_run_opts o;
    char bindir[PATH_MAX], prog[PATH_MAX + 32], simlib[PATH_MAX + 32];
    char *cargv[2];
    int i, sim = 0, verbose = 0, rc, wstatus = 0, faulted = 0;

    for (i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--sim") == 0)
            sim = 1;
        else if (strcmp(argv[i], "--verbose") == 0 || strcmp(argv[i], "-v") == 0)
            verbose = 1;
        else if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
            cli_help_verb(stdout, "demo");
            return CLI_EXIT_OK;
        } else {
            cli_err("demo has no option '%s'; see 'culprit help demo'", argv[i]);
            return CLI_EXIT_USAGE;
        }
    }
    if (cli_exe_dir(bindir, sizeof bindir) != 0) {
        cli_err("cannot tell where the culprit executable lives, so the demo program cannot be found");
        return CLI_EXIT_FAIL;
    }
    memset(&o, 0, sizeof o);
    o.verbose = verbose;
    /* The demo shows culprit naming the exact launch, so it runs in precise mode (a breadcrumb after every
     * launch); record mode, the default for real runs, may name a short window instead (docs/performance.md). */
    o.mode = "precise";
    if (!sim && cli_gpu_usable()) {
        snprintf(prog, sizeof prog, "%s/culprit-demo-cuda", bindir);
        if (!cli_is_exec(prog)) {
            cli_err("the GPU demo %s is not built: it needs nvcc when culprit is configured "
                    "(cmake -DCULPRIT_BUILD_GPU=ON, then cmake --build build --target culprit-demo-cuda); "
                    "'culprit demo --sim' runs without it",
                    prog);
            return CLI_EXIT_FAIL;
        }
    } else {
        if (!sim)
            cli_err("no usable GPU was found, so the demo runs on culprit's simulated CUDA driver");
        snprintf(prog, sizeof prog, "%s/culprit-demo-sim", bindir);
        snprintf(simlib, sizeof simlib, "%s/../lib/culprit-sim", bindir);
        if (!cli_is_exec(prog)) {
            cli_err("the simulated demo %s is not built; build it with: "
                    "cmake --build build --target culprit-demo-sim",
                    prog);
            return CLI_EXIT_FAIL;
        }
        o.ld_path = simlib;
        o.simulated = 1; /* cuda-gdb needs a real driver: the verdict does not offer it here */
    }
    cargv[0] = prog;
    cargv[1] = NULL;
    o.argv = cargv;
    cli_err("the demo runs in precise mode (culprit run --mode precise), which names the exact launch; "
            "plain culprit run uses record mode, which costs less and may name a short window instead");
    rc = cli_run_command(&o, &wstatus, &faulted);
    if (rc)
        return rc;
    if (WIFEXITED(wstatus) && WEXITSTATUS(wstatus) != 0)
        cli_err("the demo exited with status %d; that is expected, its kernel faults on purpose", WEXITSTATUS(wstatus));
    else if (WIFSIGNALED(wstatus))
        cli_err("the demo was ended by signal %d (%s); its kernel faults on purpose", WTERMSIG(wstatus),
                strsignal(WTERMSIG(wstatus)));
    cli_exit_like(wstatus);
}
