/* `culprit run`: runs a command with libculprit.so preloaded and a report directory prepared, forwards signals
 * to it while it runs and watches its output for device asserts (watch.c), then symbolizes and prints every
 * report it left and exits the way the command did. `culprit demo` uses the same machinery through
 * cli_run_command. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "cli.h"
#include "../evidence/coredump.h"
#include "deliver.h"
#include "../evidence/devquery.h"
#include "../render/addr.h"
#include "../evidence/faultpage.h"
#include "../evidence/kernlog.h"
#include "../evidence/nccllog.h"
#include "../evidence/rerun.h"
#include "../evidence/stages.h"
#include "watch.h"
#include "../base/config.h"
#include "../render/json.h"
#include "../report/merge.h"
#include "../render/render.h"
#include "../report/symbolize.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>

/* Signals a user or a job system sends to stop or poke a program; culprit passes them on to the child and
 * survives them itself so it can still print the verdict. */
static const int cli_fwd_signals[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2};
#define CLI_NFWD (sizeof cli_fwd_signals / sizeof cli_fwd_signals[0])

static volatile sig_atomic_t cli_child_pid; /* the running child, 0 when none */
static pid_t cli_parent_pid;                /* this process, as the child it forks knows its parent */
/* This command's name for its run, given to CMD as CULPRIT_RUN_ID and written into every report it leads to:
 * several `culprit run` commands sharing one --dir (srun culprit run ...) each show their own reports. */
static char cli_run_id[160];

static void cli_forward(int sig, siginfo_t *si, void *uc)
{
    int saved = errno;
    pid_t child = (pid_t)cli_child_pid;
    (void)uc;
    /* A signal from the terminal (Ctrl-C, hangup) already went to the whole foreground process group, child
     * included; sending it again would deliver it twice. Everything else (kill, a job scheduler) is passed on. */
    if (child > 0 && (si == NULL || si->si_code != SI_KERNEL || getpgid(child) != getpgrp()))
        kill(child, sig);
    errno = saved;
}

static int cli_valid_launches(const char *s)
{
    const char *colon = strchr(s, ':');
    long long a = 0, b = 0;
    char left[32];
    size_t llen;

    if (!colon)
        return cli_parse_int(s, 1, LLONG_MAX, &a) == 0;
    llen = (size_t)(colon - s);
    if (llen >= sizeof left || strchr(colon + 1, ':'))
        return 0;
    memcpy(left, s, llen);
    left[llen] = '\0';
    if (llen && cli_parse_int(left, 1, LLONG_MAX, &a) != 0)
        return 0;
    if (colon[1] && cli_parse_int(colon + 1, 1, LLONG_MAX, &b) != 0)
        return 0;
    return !(llen && colon[1] && a > b);
}

/* A variable of the library's that culprit run sets for CMD, and where its value comes from. */
struct cli_setting {
    const char *name;  /* CULPRIT_... */
    const char *value; /* its value in CMD's environment */
    const char *from;  /* the option that gave it ("--kernels"), or NULL: culprit run sets it itself */
};

#define CLI_SETTINGS 20
/* What culprit run sets for CMD (cli_settings_make): the child puts them into its environment, and the parent reads
 * them, with the rest of the environment, through the library's own parser before CMD starts. */
static struct cli_setting cli_settings[CLI_SETTINGS];
static size_t cli_nsettings;

static void cli_setting(const char *name, const char *value, const char *from)
{
    if (value && cli_nsettings < CLI_SETTINGS)
        cli_settings[cli_nsettings++] = (struct cli_setting){name, value, from};
}

static double cli_devq_timeout; /* the device query's bound at a hang, 0 when it is not made */

static void cli_settings_make(const struct cli_run_opts *o, const char *dir)
{
    const char *wait = NULL;
    cli_nsettings = 0;
    cli_setting("CULPRIT_DIR", dir, o->dir ? "--dir" : NULL);
    cli_setting("CULPRIT_QUIET", o->verbose ? NULL : "1", NULL);
    cli_setting("CULPRIT_MODE", o->mode, "--mode");
    cli_setting("CULPRIT_KERNELS", o->kernels, "--kernels");
    cli_setting("CULPRIT_LAUNCHES", o->launches, "--launches");
    cli_setting("CULPRIT_RANK_LAUNCHES", o->rank_launches, "--rerun");
    cli_setting("CULPRIT_RING", o->ring, "--ring");
    cli_setting("CULPRIT_CRUMB_EVERY", o->crumb_every, "--crumb-every");
    cli_setting("CULPRIT_MARK_BUDGET", o->mark_budget, "--mark-budget");
    cli_setting("CULPRIT_MARK", o->mark, "--mark");
    cli_setting("CULPRIT_STACK_DEPTH", o->stack_depth, "--stack-depth");
    cli_setting("CULPRIT_EXIT_WAIT", o->exit_wait, "--exit-wait");
    cli_setting("CULPRIT_HANG_TIMEOUT", o->hang_timeout, "--hang-timeout");
    cli_setting("CULPRIT_REPORT_SIGNAL", o->report_signal, "--report-signal");
    cli_setting("CULPRIT_STATS", o->stats ? "1" : NULL, "--stats");
    cli_setting("CULPRIT_EXCEPTION_TEXT", o->no_exception_text ? "0" : NULL, "--no-exception-text");
    cli_setting("CULPRIT_RUN_ID", cli_run_id, NULL);
    /* the device query at a hang: the library allows this command to attach, a stopping process waits for it */
    cli_setting("CULPRIT_RUN_PID", devq_plan(o->device_timeout, &cli_devq_timeout, &wait), NULL);
    cli_setting("CULPRIT_DEVICE_WAIT", wait, NULL);
}

static const struct cli_setting *cli_setting_of(const char *name)
{
    for (size_t i = 0; i < cli_nsettings; i++)
        if (strcmp(cli_settings[i].name, name) == 0)
            return &cli_settings[i];
    return NULL;
}

/* A variable as CMD will see it: culprit run's setting, else the environment culprit run was given. */
static const char *cli_child_getenv(const char *name)
{
    const struct cli_setting *s = cli_setting_of(name);
    return s ? s->value : getenv(name);
}

/* Whether cmd (found as execvp finds it) runs in the loader's secure mode, which ignores LD_PRELOAD: set-user-ID
 * or set-group-ID to someone else, or with file capabilities, on a file system that honours them. Says why in
 * why, which is left alone otherwise. */
static void cli_secure_exec(const char *cmd, char *why, size_t len)
{
    char path[PATH_MAX];
    const char *dirs = getenv("PATH");
    struct stat sb;
    struct statvfs vfs;
    int found = 0;
    if (strchr(cmd, '/'))
        found = snprintf(path, sizeof path, "%s", cmd) < (int)sizeof path && stat(path, &sb) == 0;
    for (const char *d = dirs ? dirs : "/usr/bin:/bin"; !found && d;) {
        const char *end = strchr(d, ':');
        int n = end ? (int)(end - d) : (int)strlen(d);
        found = snprintf(path, sizeof path, "%.*s/%s", n, n ? d : ".", cmd) < (int)sizeof path &&
                stat(path, &sb) == 0 && S_ISREG(sb.st_mode) && access(path, X_OK) == 0;
        d = end ? end + 1 : NULL;
    }
    if (!found || !S_ISREG(sb.st_mode) || (statvfs(path, &vfs) == 0 && (vfs.f_flag & ST_NOSUID)))
        return;
    if ((sb.st_mode & S_ISUID) && sb.st_uid != geteuid())
        snprintf(why, len, "it is set-user-ID, and the dynamic loader ignores LD_PRELOAD for such a program");
    else if ((sb.st_mode & S_ISGID) && sb.st_gid != getegid())
        snprintf(why, len, "it is set-group-ID, and the dynamic loader ignores LD_PRELOAD for such a program");
    else if (getxattr(path, "security.capability", NULL, 0) > 0)
        snprintf(why, len, "it has file capabilities, and the dynamic loader ignores LD_PRELOAD for such a program");
}

/* Reads CMD's environment with the library's own parser before CMD starts. A value it refuses would leave
 * culprit off in CMD, so the run is refused (CLI_EXIT_USAGE, one line saying which value, where it came from and
 * what to do). Settings that turn culprit off on purpose (CULPRIT_MODE=off) are not refused: off gets why, said
 * again at the end in place of "no sticky CUDA error", and said now when it came from the environment. */
static int cli_check_settings(const struct cli_run_opts *o, char *off, size_t offsz)
{
    struct cp_config c;
    char err[400], name[64];
    const struct cli_setting *s;
    off[0] = '\0';
    if (cfg_parse(&c, cli_child_getenv, err, sizeof err) != 0) {
        size_t n = strcspn(err, "=");
        snprintf(name, sizeof name, "%.*s", (int)(n < sizeof name ? n : sizeof name - 1), err);
        s = cli_setting_of(name);
        if (s && s->from)
            cli_err("%s: %s; the library would be off in %s with it", s->from, err, o->argv[0]);
        else if (s && strcmp(name, "CULPRIT_DIR") == 0)
            cli_err("the report directory is a path longer than the library takes (%s); run culprit from a "
                    "shorter directory or give --dir",
                    err);
        else if (s)
            cli_err("%s; the library would be off in %s with it", err, o->argv[0]);
        else
            cli_err("%s, in the environment culprit run was given; the library would be off in %s with it: fix or "
                    "unset %s",
                    err, o->argv[0], name);
        return CLI_EXIT_USAGE;
    }
    if (c.mode == CP_MODE_OFF) {
        s = cli_setting_of("CULPRIT_MODE");
        snprintf(off, offsz, "%s", s ? "--mode off" : "CULPRIT_MODE=off, in the environment culprit run was given");
        if (!s)
            cli_err("CULPRIT_MODE=off in the environment: culprit records nothing in %s (unset it, or give --mode, "
                    "to record)",
                    o->argv[0]);
    }
    return 0;
}

/* Prepends item to the colon-separated list in variable name, in this (child) process. */
static int cli_prepend_env(const char *name, const char *item)
{
    const char *old = getenv(name);
    char *val;
    int rc;
    if (!old || !*old)
        return setenv(name, item, 1);
    if (asprintf(&val, "%s:%s", item, old) < 0)
        return -1;
    rc = setenv(name, val, 1);
    free(val);
    return rc;
}

/* --diagnose: CULPRIT_DIAGNOSE=1 (GPU operators), unless the caller asked for all operators (=all). */
static int cli_diagnose_env(void)
{
    const char *v = getenv("CULPRIT_DIAGNOSE");
    return v && strcmp(v, "all") == 0 ? 0 : setenv("CULPRIT_DIAGNOSE", "1", 1);
}

/* Child side of fork: set the environment and exec. On failure the errno goes back through errfd. */
static void cli_child_exec(const struct cli_run_opts *o, const char *lib, const char *dir, const char *core_dir,
                           int errfd, const sigset_t *oldmask, const struct sigaction *old,
                           const struct sigaction *oldchld, const struct cli_watch *w)
{
    size_t i;
    int e;
    /* The command starts with the dispositions culprit was given: a signal ignored by nohup stays ignored,
     * and so does SIGCHLD if the caller ignored it. */
    for (i = 0; i < CLI_NFWD; i++)
        signal(cli_fwd_signals[i], old[i].sa_handler == SIG_IGN ? SIG_IGN : SIG_DFL);
    signal(SIGCHLD, oldchld->sa_handler == SIG_IGN ? SIG_IGN : SIG_DFL);
    sigprocmask(SIG_SETMASK, oldmask, NULL);
    /* When culprit run itself is killed (kill -KILL, the OOM killer) the command must not go on unwatched, its
     * output going nowhere: it gets SIGTERM, as from a job scheduler, and the library writes a hang report of
     * where it stood before it ends. A culprit already gone before this line leaves the command unstarted. */
    if (prctl(PR_SET_PDEATHSIG, SIGTERM) != 0 || getppid() != cli_parent_pid)
        _exit(CLI_EXIT_NOEXEC);
    e = watch_child(w);
    for (i = 0; e == 0 && i < cli_nsettings; i++)
        if (setenv(cli_settings[i].name, cli_settings[i].value, 1) != 0)
            e = errno ? errno : ENOMEM;
    if (e == 0 && (cli_prepend_env("LD_PRELOAD", lib) || nccllog_env(dir) ||
                   (o->coredump && (errno = coredump_setenv(core_dir)) != 0) ||
                   (o->boot && (cli_diagnose_env() || cli_prepend_env("PYTHONPATH", o->boot))) ||
                   (o->ld_path && cli_prepend_env("LD_LIBRARY_PATH", o->ld_path)))) {
        e = errno ? errno : ENOMEM;
    } else if (e == 0) {
        execvp(o->argv[0], o->argv);
        e = errno;
    }
    if (write(errfd, &e, sizeof e) < 0) {
        /* nothing more can be said; the exit code still tells the parent */
    }
    _exit(e == ENOENT ? CLI_EXIT_NOTFOUND : CLI_EXIT_NOEXEC);
}

/* Whether path is a directory of this user's: itself, or a link of this user's to one. */
static int cli_own_dir(const char *path)
{
    struct stat ls, sb;
    uid_t me = geteuid();
    if (lstat(path, &ls) != 0 || ls.st_uid != me || (!S_ISDIR(ls.st_mode) && !S_ISLNK(ls.st_mode)))
        return 0;
    return stat(path, &sb) == 0 && S_ISDIR(sb.st_mode) && sb.st_uid == me;
}

/* Creates (or checks) the report directory and returns its absolute path in abs. */
static int cli_prepare_dir(const struct cli_run_opts *o, char *abs, size_t abssz, int *created, int *created_parent,
                           char *rel, size_t relsz)
{
    struct stat sb;
    int err;

    *created = *created_parent = 0;
    if (o->dir) {
        snprintf(rel, relsz, "%s", o->dir);
        if (stat(o->dir, &sb) == 0) {
            if (!S_ISDIR(sb.st_mode)) {
                cli_err("--dir %s exists and is not a directory", o->dir);
                return CLI_EXIT_USAGE;
            }
            if (access(o->dir, W_OK | X_OK) != 0) {
                cli_err("cannot write reports into %s: %s", o->dir, strerror(errno));
                return CLI_EXIT_USAGE;
            }
        } else if ((err = cli_mkdirs(o->dir, 0700, created)) != 0) {
            cli_err("cannot create the report directory %s: %s", o->dir, strerror(err));
            return CLI_EXIT_USAGE;
        }
    } else {
        char stamp[32];
        time_t now = time(NULL);
        struct tm tm;
        localtime_r(&now, &tm);
        strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", &tm);
        snprintf(rel, relsz, "culprit-reports/run-%s-%ld", stamp, (long)getpid());
        if (mkdir("culprit-reports", 0777) == 0)
            *created_parent = 1;
        else if (errno != EEXIST) {
            cli_err("cannot create the report directory culprit-reports in the current directory: %s", strerror(errno));
            return CLI_EXIT_USAGE;
        } else if (!cli_own_dir("culprit-reports")) {
            /* in a directory others write into (/tmp), a culprit-reports of theirs, or a link of theirs, would
             * send the run's reports and dumps where they chose */
            cli_err("culprit-reports in the current directory is not a directory of yours (another user's, or a link "
                    "of another user's): reports are not written there; remove it, or give --dir");
            return CLI_EXIT_USAGE;
        }
        /* the run's own directory is made here, never one found already there under its name */
        if (mkdir(rel, 0700) != 0) {
            cli_err("cannot create the report directory %s: %s", rel, strerror(errno));
            if (*created_parent)
                rmdir("culprit-reports");
            return CLI_EXIT_USAGE;
        }
        *created = 1;
    }
    if (!realpath(rel, abs) || strlen(abs) >= abssz) {
        cli_err("cannot resolve the report directory %s: %s", rel, strerror(errno));
        return CLI_EXIT_USAGE;
    }
    return 0;
}

static void cli_remove_dir(const char *abs, int created, int created_parent)
{
    if (created && rmdir(abs) == 0 && created_parent)
        rmdir("culprit-reports");
}

/* This command's run id: host, pid, start time and 64 random bits, in the characters the library accepts for one.
 * Host, pid and start time can be read from /proc by anyone; the random part cannot (the variable is in CMD's
 * environment, which only its user may read, and in reports of mode 0600), so a report planted in a shared
 * directory cannot pass for one of this run's. */
static void cli_make_run_id(void)
{
    char host[64] = "";
    unsigned long long token = 0;
    size_t i;
    gethostname(host, sizeof host - 1);
    for (i = 0; host[i]; i++)
        if (!((host[i] >= 'a' && host[i] <= 'z') || (host[i] >= 'A' && host[i] <= 'Z') ||
              (host[i] >= '0' && host[i] <= '9') || host[i] == '.' || host[i] == '-'))
            host[i] = '_';
    if (cli_random(&token, sizeof token) != 0) {
        /* no source of random bytes: the clock's nanoseconds and addresses, far weaker, but never none */
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        token = (unsigned long long)ts.tv_nsec * 0x9e3779b97f4a7c15ull ^ (unsigned long long)(uintptr_t)&ts;
    }
    snprintf(cli_run_id, sizeof cli_run_id, "%s-%ld-%lld-%016llx", host[0] ? host : "host", (long)getpid(),
             (long long)time(NULL), token);
}

/* Puts back the dispositions cli_run_command found for the forwarded signals and SIGCHLD. */
static void cli_restore_signals(const struct sigaction *old, const struct sigaction *oldchld)
{
    size_t i;
    for (i = 0; i < CLI_NFWD; i++)
        sigaction(cli_fwd_signals[i], &old[i], NULL);
    sigaction(SIGCHLD, oldchld, NULL);
}

/* After the watch, which looks at what fd 1 and 2 are, and above them should either be closed: the pipe by which the
 * child says why it could not exec. Returns 0, or an errno value with neither end left open. */
static int cli_open_errpipe(int errpipe[2])
{
    int e;
    size_t i;
    errpipe[0] = errpipe[1] = -1;
    if (pipe2(errpipe, O_CLOEXEC) != 0 || (errpipe[0] = watch_high(errpipe[0])) < 0 ||
        (errpipe[1] = watch_high(errpipe[1])) < 0) {
        e = errno;
        for (i = 0; i < 2; i++)
            if (errpipe[i] >= 0)
                close(errpipe[i]);
        return e;
    }
    return 0;
}

/* The handlers go in before fork with the signals blocked, so no signal can find the child pid unset in the parent
 * or the parent's handler in the child. Leaves the forwarded signals blocked (the mask before in *oldmask) and the
 * dispositions found in old and *oldchld. */
static void cli_forward_signals(sigset_t *oldmask, struct sigaction *old, struct sigaction *oldchld)
{
    struct sigaction sa, dfl;
    sigset_t block;
    size_t i;
    sigemptyset(&block);
    for (i = 0; i < CLI_NFWD; i++)
        sigaddset(&block, cli_fwd_signals[i]);
    sigprocmask(SIG_BLOCK, &block, oldmask);
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = cli_forward;
    sa.sa_flags = SA_SIGINFO | SA_RESTART;
    sigemptyset(&sa.sa_mask);
    for (i = 0; i < CLI_NFWD; i++) {
        sigaction(cli_fwd_signals[i], NULL, &old[i]);
        /* A signal the caller ignores (nohup) is not forwarded: the command ignores it too. */
        if (old[i].sa_handler != SIG_IGN)
            sigaction(cli_fwd_signals[i], &sa, NULL);
    }
    /* With SIGCHLD ignored the kernel reaps the child itself and its exit status would be lost. */
    memset(&dfl, 0, sizeof dfl);
    dfl.sa_handler = SIG_DFL;
    sigemptyset(&dfl.sa_mask);
    sigaction(SIGCHLD, &dfl, oldchld);
}

/* Before anything starts: libculprit.so's path into lib, the report directory into abs (and as the user may name it
 * into rel; all three of PATH_MAX bytes), the run id, and the settings CMD gets; off says why culprit would be off
 * in CMD ("" when it would not). Returns 0, or an exit code with the reason said and nothing left made. */
static int cli_run_prepare(const struct cli_run_opts *o, char *lib, char *abs, char *rel, char *off, size_t offsz,
                           int *created, int *created_parent)
{
    int rc = cli_find_lib(lib, PATH_MAX);
    if (rc)
        return rc;
    rc = cli_prepare_dir(o, abs, PATH_MAX, created, created_parent, rel, PATH_MAX);
    if (rc)
        return rc;
    if (!cli_run_id[0])
        cli_make_run_id(); /* once per culprit command: a rerun (rerun.c) runs under the same id */
    cli_settings_make(o, abs);
    rc = cli_check_settings(o, off, offsz);
    if (rc) {
        cli_remove_dir(abs, *created, *created_parent);
        return rc;
    }
    if (!off[0])
        cli_secure_exec(o->argv[0], off, offsz);
    return 0;
}

/* Waits for the child pid to end, relaying its output through the watch w when it has one, into *status. The pipe
 * errfd (closed here) closes on a successful exec; otherwise the child sends its errno first, into *e: returns
 * what was read of it (sizeof *e when the exec failed). */
static ssize_t cli_wait_child(pid_t pid, int errfd, int *e, struct cli_watch *w, const char *lib, int *status)
{
    ssize_t got;
    do
        got = read(errfd, e, sizeof *e);
    while (got < 0 && errno == EINTR);
    close(errfd);
    w->lib = lib; /* the loader's line when it cannot preload it says culprit was off */
    if (w->nch)
        watch_relay(w, pid, status);
    else
        while (waitpid(pid, status, 0) < 0 && errno == EINTR)
            ;
    cli_child_pid = 0;
    return got;
}

int cli_run_command(const struct cli_run_opts *o, int *wstatus, int *faulted)
{
    char lib[PATH_MAX], abs[PATH_MAX], rel[PATH_MAX], off[400], core_dir[PATH_MAX] = "";
    struct sigaction old[CLI_NFWD], oldchld;
    struct cli_watch *w = NULL;
    struct ev_seen *seen = NULL;
    size_t nseen = 0;
    sigset_t oldmask;
    int created = 0, created_parent = 0, errpipe[2], rc, e = 0, status = 0;
    ssize_t got;
    pid_t pid;
    struct kernlog klog = {.fd = -1};
    struct ev_ctx ev;

    rc = cli_run_prepare(o, lib, abs, rel, off, sizeof off, &created, &created_parent);
    if (rc)
        return rc;
    if (ev_snapshot(abs, &seen, &nseen) != 0) {
        cli_err("out of memory");
        goto not_started;
    }
    if (o->coredump && (e = coredump_prepare(abs, core_dir, sizeof core_dir)) != 0) {
        cli_err("cannot create the directory for GPU core dumps in %s: %s", abs, strerror(e));
        goto not_started;
    }
    /* Device asserts reach only the process's own stdout/stderr, so culprit stands between them and the
     * original descriptors. Without a watch (--no-watch) the command simply inherits them. */
    w = calloc(1, sizeof *w);
    if (!w || (!o->no_watch && watch_setup(w) != 0)) {
        cli_err("out of memory");
        goto not_started;
    }
    if ((e = cli_open_errpipe(errpipe)) != 0) {
        cli_err("cannot start %s: %s", o->argv[0], strerror(e));
        goto not_started;
    }
    cli_forward_signals(&oldmask, old, &oldchld);

    /* where the kernel's log ends now: what the run adds to it is read once it ended (kernlog.c) */
    if (o->simulated) /* the simulated driver's faults are in no kernel's log */
        klog.off = 1;
    else
        kernlog_begin(&klog);
    fflush(NULL);
    cli_parent_pid = getpid();
    pid = fork();
    if (pid == 0) {
        close(errpipe[0]);
        cli_child_exec(o, lib, abs, core_dir, errpipe[1], &oldmask, old, &oldchld, w);
    }
    close(errpipe[1]);
    if (pid < 0) {
        e = errno;
        cli_restore_signals(old, &oldchld);
        sigprocmask(SIG_SETMASK, &oldmask, NULL);
        close(errpipe[0]);
        cli_err("cannot start %s: %s", o->argv[0], strerror(e));
        goto not_started;
    }
    cli_child_pid = pid;
    sigprocmask(SIG_SETMASK, &oldmask, NULL);
    struct devq *dq = cli_devq_timeout > 0 ? devq_start(abs, cli_devq_timeout, cli_run_id) : NULL;

    got = cli_wait_child(pid, errpipe[0], &e, w, lib, &status);
    devq_stop(dq);
    watch_scan_files(w);
    cli_restore_signals(old, &oldchld);
    watch_finish(w);
    kernlog_end(&klog);

    if (got == (ssize_t)sizeof e) {
        cli_err("cannot run '%s': %s", o->argv[0], strerror(e));
        if (core_dir[0])
            rmdir(core_dir);
        cli_remove_dir(abs, created, created_parent);
        rc = e == ENOENT ? CLI_EXIT_NOTFOUND : CLI_EXIT_NOEXEC;
        goto out;
    }
    *wstatus = status;
    *faulted = 0;
    /* the command ended: the after-run stages (evidence/stages.c) show what it left */
    ev = (struct ev_ctx){.o = o,
                         .w = w,
                         .run_id = cli_run_id,
                         .lib = lib,
                         .dir = abs,
                         .rel = rel,
                         .core_dir = core_dir,
                         .created = created,
                         .off = off,
                         .offsz = sizeof off,
                         .seen = seen,
                         .nseen = nseen,
                         .klog = &klog,
                         .faulted = faulted};
    ev_run(&ev);
    ev_free(&ev);
    if (ev.remove_dir)
        cli_remove_dir(abs, created, created_parent);
    rc = 0;
    goto out;
not_started:
    /* the command never ran: release the watch and the report directory made for it */
    if (w)
        watch_finish(w);
    if (core_dir[0])
        rmdir(core_dir);
    cli_remove_dir(abs, created, created_parent);
    rc = CLI_EXIT_FAIL;
out:
    kernlog_free(&klog);
    if (w) {
        watch_free(w);
        free(w);
    }
    ev_seen_free(seen, nseen);
    return rc;
}

void cli_exit_like(int wstatus)
{
    fflush(NULL);
    watch_release_relay(); /* before a raise, which runs no atexit handler */
    if (WIFSIGNALED(wstatus)) {
        int sig = WTERMSIG(wstatus);
        struct rlimit none = {0, 0};
        sigset_t set;
        /* Die of the same signal so the shell reports the same death, but without a core file of our own:
         * the child's core (if any) is the one that matters. */
        setrlimit(RLIMIT_CORE, &none);
        signal(sig, SIG_DFL);
        sigemptyset(&set);
        sigaddset(&set, sig);
        sigprocmask(SIG_UNBLOCK, &set, NULL);
        raise(sig);
        exit(128 + sig);
    }
    exit(WIFEXITED(wstatus) ? WEXITSTATUS(wstatus) : CLI_EXIT_FAIL);
}

/* Returns the value of option name at argv[*i] ("--name value" or "--name=value"), advancing *i, or NULL
 * when argv[*i] is another option. Sets *missing to name when the option is there without a value: at the end
 * of the command line, or before "--", which ends culprit's options and is never a value (so `--dir -- prog`
 * cannot write into a folder named "--"). */
static const char *cli_optval(int argc, char **argv, int *i, const char *name, const char **missing)
{
    size_t n = strlen(name);
    const char *a = argv[*i], *val;
    if (strncmp(a, name, n) != 0)
        return NULL;
    if (a[n] == '=')
        val = a + n + 1;
    else if (a[n] != '\0')
        return NULL;
    else if (*i + 1 >= argc)
        val = NULL;
    else
        val = argv[*i + 1];
    if (!val || strcmp(val, "--") == 0) {
        *missing = name;
        return NULL;
    }
    if (a[n] != '=')
        ++*i;
    return val;
}

/* `culprit run`'s options without a value: sets *taken when a is one (--diagnose looks for its boot directory
 * into boot). Returns CLI_EXIT_OK, or CLI_EXIT_USAGE with the reason said. */
static int cli_run_flag(const char *a, struct cli_run_opts *o, char *boot, size_t bootsz, int *taken)
{
    *taken = 1;
    if (strcmp(a, "--quiet") == 0 || strcmp(a, "-q") == 0) {
        o->quiet = 1;
        return CLI_EXIT_OK;
    }
    if (strcmp(a, "--verbose") == 0 || strcmp(a, "-v") == 0) {
        o->verbose = 1;
        return CLI_EXIT_OK;
    }
    if (strcmp(a, "--stats") == 0) {
        o->stats = 1;
        return CLI_EXIT_OK;
    }
    if (strcmp(a, "--no-watch") == 0) {
        o->no_watch = 1;
        return CLI_EXIT_OK;
    }
    if (strcmp(a, "--no-exception-text") == 0) {
        o->no_exception_text = 1;
        return CLI_EXIT_OK;
    }
    if (strcmp(a, "--coredump") == 0) {
        o->coredump = 1;
        return CLI_EXIT_OK;
    }
    if (strcmp(a, "--rerun") == 0) {
        o->rerun = 1;
        return CLI_EXIT_OK;
    }
    if (strcmp(a, "--diagnose") == 0) {
        o->boot = boot;
        if (cli_find_boot(boot, bootsz, 0) != 0)
            return CLI_EXIT_USAGE;
        return CLI_EXIT_OK;
    }
    *taken = 0;
    return CLI_EXIT_OK;
}

/* `culprit run`'s options with a value for the launch path (--mode, --kernels, --launches, --ring, --crumb-every,
 * --mark-budget, --mark) at argv[*i] ("--name value" or "--name=value", advancing *i): sets *taken when argv[*i] is
 * one, and *missing as cli_optval does. Returns CLI_EXIT_OK, or CLI_EXIT_USAGE with the reason said. */
static int cli_run_launch_opt(int argc, char **argv, int *i, struct cli_run_opts *o, const char **missing, int *taken)
{
    const char *val;
    long long v;
    *taken = 1;
    if ((val = cli_optval(argc, argv, i, "--mode", missing)) != NULL) {
        if (strcmp(val, "record") && strcmp(val, "precise") && strcmp(val, "blocking") && strcmp(val, "off")) {
            cli_err("--mode must be record, precise, blocking or off, not '%s'", val);
            return CLI_EXIT_USAGE;
        }
        o->mode = val;
    } else if ((val = cli_optval(argc, argv, i, "--kernels", missing)) != NULL) {
        if (!*val) {
            cli_err("--kernels needs a kernel name pattern such as '*softmax*'");
            return CLI_EXIT_USAGE;
        }
        o->kernels = val;
    } else if ((val = cli_optval(argc, argv, i, "--launches", missing)) != NULL) {
        if (!cli_valid_launches(val)) {
            cli_err("--launches must be A:B with 1 <= A <= B, either side optional (100:120, 100:, :50), "
                    "not '%s'",
                    val);
            return CLI_EXIT_USAGE;
        }
        o->launches = val;
    } else if ((val = cli_optval(argc, argv, i, "--ring", missing)) != NULL) {
        if (cli_parse_int(val, 16, 1048576, &v) != 0) {
            cli_err("--ring must be a whole number of launches from 16 to 1048576, not '%s'", val);
            return CLI_EXIT_USAGE;
        }
        o->ring = val;
    } else if ((val = cli_optval(argc, argv, i, "--crumb-every", missing)) != NULL) {
        if (cli_parse_int(val, 1, 4096, &v) != 0) {
            cli_err("--crumb-every must be a whole number of launches from 1 to 4096, not '%s'", val);
            return CLI_EXIT_USAGE;
        }
        o->crumb_every = val;
    } else if ((val = cli_optval(argc, argv, i, "--mark-budget", missing)) != NULL) {
        uint32_t bp;
        if (cfg_parse_percent(val, &bp) != 0) {
            cli_err("--mark-budget must be a percentage from 0 to 100 (e.g. 1 or 0.5; 0: fixed spacing), not "
                    "'%s'",
                    val);
            return CLI_EXIT_USAGE;
        }
        o->mark_budget = val;
    } else if ((val = cli_optval(argc, argv, i, "--mark", missing)) != NULL) {
        if (strcmp(val, "write") && strcmp(val, "memset")) {
            cli_err("--mark must be write or memset, not '%s'", val);
            return CLI_EXIT_USAGE;
        }
        o->mark = val;
    } else {
        *taken = 0;
    }
    return CLI_EXIT_OK;
}

/* `culprit run`'s other options with a value (stacks, waits, reports, hangs, --error-exitcode, --dir), as
 * cli_run_launch_opt. */
static int cli_run_other_opt(int argc, char **argv, int *i, struct cli_run_opts *o, const char **missing, int *taken)
{
    const char *val;
    long long v;
    *taken = 1;
    if ((val = cli_optval(argc, argv, i, "--stack-depth", missing)) != NULL) {
        if (cli_parse_int(val, 0, 64, &v) != 0) {
            cli_err("--stack-depth must be a whole number of frames from 0 to 64, not '%s'", val);
            return CLI_EXIT_USAGE;
        }
        o->stack_depth = val;
    } else if ((val = cli_optval(argc, argv, i, "--exit-wait", missing)) != NULL) {
        uint32_t ms;
        if (cfg_parse_seconds(val, CFG_SECONDS_MAX, &ms) != 0) {
            cli_err("--exit-wait must be seconds from 0 to %d (at most 3 decimals, e.g. 2 or 0.5), not '%s'",
                    CFG_SECONDS_MAX, val);
            return CLI_EXIT_USAGE;
        }
        o->exit_wait = val;
    } else if ((val = cli_optval(argc, argv, i, "--on-report", missing)) != NULL) {
        if (!*val) {
            cli_err("--on-report needs a command, run with each report's path as its last argument");
            return CLI_EXIT_USAGE;
        }
        o->on_report = val;
    } else if ((val = cli_optval(argc, argv, i, "--on-report-timeout", missing)) != NULL) {
        uint32_t ms;
        if (cfg_parse_seconds(val, 3600, &ms) != 0 || ms == 0) {
            cli_err("--on-report-timeout must be seconds from 0.001 to 3600 (e.g. 10 or 0.5), not '%s'", val);
            return CLI_EXIT_USAGE;
        }
        o->on_report_ms = ms;
    } else if ((val = cli_optval(argc, argv, i, "--events", missing)) != NULL) {
        if (!*val) {
            cli_err("--events needs a file or a unix socket to deliver a line of JSON per report to");
            return CLI_EXIT_USAGE;
        }
        o->events = val;
    } else if ((val = cli_optval(argc, argv, i, "--hang-timeout", missing)) != NULL) {
        uint32_t ms;
        if (cfg_parse_seconds(val, CFG_SECONDS_MAX, &ms) != 0) {
            cli_err("--hang-timeout must be seconds from 0 (off) to %d (e.g. 60 or 2.5), not '%s'", CFG_SECONDS_MAX,
                    val);
            return CLI_EXIT_USAGE;
        }
        o->hang_timeout = val;
    } else if ((val = cli_optval(argc, argv, i, "--device-timeout", missing)) != NULL) {
        uint32_t ms;
        if (cfg_parse_seconds(val, 3600, &ms) != 0) {
            cli_err("--device-timeout must be seconds from 0 (do not ask) to 3600 (e.g. 60), not '%s'", val);
            return CLI_EXIT_USAGE;
        }
        o->device_timeout = val;
    } else if ((val = cli_optval(argc, argv, i, "--report-signal", missing)) != NULL) {
        int sig = 0, bad = cfg_parse_signal(val, &sig);
        if (bad == -2) {
            char why[300];
            cfg_signal_why(sig, why, sizeof why);
            cli_err("--report-signal %s: %s; use USR1, USR2 or another signal CMD does not use, or none", val, why);
            return CLI_EXIT_USAGE;
        }
        if (bad) {
            cli_err("--report-signal must be a signal name such as USR1 or USR2, a number, or none, not '%s'", val);
            return CLI_EXIT_USAGE;
        }
        /* 0 is no signal at all, as kill -0 is: taken as none (as --hang-timeout 0 is off), said so */
        if (strcmp(val, "0") == 0)
            cli_err("--report-signal 0 means none: no signal asks CMD for a hang report");
        o->report_signal = val;
    } else if ((val = cli_optval(argc, argv, i, "--error-exitcode", missing)) != NULL) {
        if (cli_parse_int(val, 0, 255, &v) != 0) {
            cli_err("--error-exitcode must be an exit status from 0 to 255, not '%s'", val);
            return CLI_EXIT_USAGE;
        }
        o->error_exitcode = (int)v;
    } else if ((val = cli_optval(argc, argv, i, "--dir", missing)) != NULL) {
        if (!*val) {
            cli_err("--dir needs a directory name");
            return CLI_EXIT_USAGE;
        }
        o->dir = val;
    } else {
        *taken = 0;
    }
    return CLI_EXIT_OK;
}

int cli_run_main(int argc, char **argv)
{
    struct cli_run_opts o;
    static char boot[PATH_MAX];
    int i, rc, taken, wstatus = 0, faulted = 0;

    memset(&o, 0, sizeof o);
    o.error_exitcode = -1;
    o.on_report_ms = 10000;
    for (i = 1; i < argc; i++) {
        const char *a = argv[i], *missing = NULL;
        if (strcmp(a, "--") == 0) {
            i++;
            break;
        }
        if (a[0] != '-')
            break;
        if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
            cli_help_verb(stdout, "run");
            return CLI_EXIT_OK;
        }
        rc = cli_run_flag(a, &o, boot, sizeof boot, &taken);
        if (rc == CLI_EXIT_OK && !taken)
            rc = cli_run_launch_opt(argc, argv, &i, &o, &missing, &taken);
        if (rc == CLI_EXIT_OK && !taken)
            rc = cli_run_other_opt(argc, argv, &i, &o, &missing, &taken);
        if (rc != CLI_EXIT_OK)
            return rc;
        if (taken)
            continue;
        if (missing) {
            cli_err("%s needs a value%s; see 'culprit help run'", missing,
                    strchr(a, '=') || i + 1 < argc ? " ('--' ends culprit's options, it is not a value)" : "");
            return CLI_EXIT_USAGE;
        }
        cli_err("run has no option '%s'; see 'culprit help run'", a);
        return CLI_EXIT_USAGE;
    }
    if (i >= argc) {
        cli_err("run needs a command to run, as in: culprit run -- ./app args");
        return CLI_EXIT_USAGE;
    }
    o.argv = argv + i;
    rc = cli_run_command(&o, &wstatus, &faulted);
    if (rc)
        return rc;
    /* A program that never synchronizes can end well although a kernel faulted: say so, and let a script
     * tell (compute-sanitizer's --error-exitcode). */
    if (faulted && WIFEXITED(wstatus) && WEXITSTATUS(wstatus) == 0) {
        if (o.error_exitcode >= 0) {
            cli_err("%s exited with status 0 although a kernel faulted; exiting with %d (--error-exitcode)", o.argv[0],
                    o.error_exitcode);
            fflush(NULL);
            exit(o.error_exitcode);
        }
        cli_err("%s exited with status 0 although a kernel faulted (--error-exitcode N makes culprit exit N "
                "then)",
                o.argv[0]);
    }
    cli_exit_like(wstatus);
}
