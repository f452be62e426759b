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

/* A report file present before the run, so reports left over in a reused --dir are not shown again. */
struct cli_seen {
    char *path;            /* full path of the report */
    ino_t ino;             /* its inode then */
    off_t size;            /* its size then */
    struct timespec mtime; /* its modification time then */
};

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

/* Counts and removes the files by which the run's processes said they launched kernels with culprit loaded
 * (cfg_launched_prefix): how many processes of the run culprit saw launch. */
static int cli_take_launched(const char *dir)
{
    char prefix[96];
    struct dirent *e;
    int n = 0, dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    DIR *d = dfd >= 0 ? fdopendir(dfd) : NULL;
    if (!d) {
        if (dfd >= 0)
            close(dfd);
        return 0;
    }
    cfg_launched_prefix(cli_run_id, prefix, sizeof prefix);
    while ((e = readdir(d)) != NULL)
        if (strncmp(e->d_name, prefix, strlen(prefix)) == 0 && unlinkat(dirfd(d), e->d_name, 0) == 0)
            n++;
    closedir(d);
    return n;
}

static int cli_snapshot(const char *dir, struct cli_seen **seen, size_t *nseen)
{
    char **paths;
    size_t n, i;
    *seen = NULL;
    *nseen = 0;
    if (cli_list_reports(dir, &paths, &n) != 0 || n == 0)
        return 0;
    *seen = calloc(n, sizeof **seen);
    if (!*seen) {
        cli_free_list(paths, n);
        return ENOMEM;
    }
    for (i = 0; i < n; i++) {
        struct stat sb;
        (*seen)[i].path = paths[i];
        if (stat(paths[i], &sb) == 0) {
            (*seen)[i].ino = sb.st_ino;
            (*seen)[i].size = sb.st_size;
            (*seen)[i].mtime = sb.st_mtim;
        }
    }
    free(paths); /* the strings now belong to seen */
    *nseen = n;
    return 0;
}

static int cli_is_old(const struct cli_seen *seen, size_t nseen, const char *path)
{
    struct stat sb;
    size_t i;
    if (stat(path, &sb) != 0)
        return 1;
    for (i = 0; i < nseen; i++)
        if (strcmp(seen[i].path, path) == 0)
            return seen[i].ino == sb.st_ino && seen[i].size == sb.st_size &&
                   seen[i].mtime.tv_sec == sb.st_mtim.tv_sec && seen[i].mtime.tv_nsec == sb.st_mtim.tv_nsec;
    return 0;
}

/* Whether a report names a framework operator anywhere (an "op" on a launch it lists, or a "diagnosis"). */
static int cli_report_has_ops(const struct json *doc)
{
    static const char *const lists[] = {"candidates", "history"};
    if (json_len(json_get(doc, "diagnosis")) || json_get(json_get(doc, "culprit"), "op"))
        return 1;
    for (size_t k = 0; k < sizeof lists / sizeof lists[0]; k++) {
        const struct json *l = json_get(doc, lists[k]);
        for (size_t i = 0; i < json_len(l); i++)
            if (json_get(json_at(l, i), "op"))
                return 1;
    }
    return 0;
}

/* Files named like reports in the run directory that `culprit run` did not show, said once at the end. */
struct cli_skipped {
    size_t foreign;               /* reports that carry no run id (written outside culprit run's environment) */
    size_t unowned;               /* links, and files of another user */
    char first_foreign[PATH_MAX]; /* the first of each, to name */
    char first_unowned[PATH_MAX];
};

/* Says what cli_show_report passed over, in at most two lines. */
static void cli_skip_say(const struct cli_skipped *skip)
{
    if (skip->unowned)
        cli_err("%zu file(s) named like reports were not read (symbolic links, or files of another user: nothing "
                "culprit wrote for this run), such as %s",
                skip->unowned, skip->first_unowned);
    if (skip->foreign)
        cli_err("%zu report(s) carry no run id of this culprit run (written outside its environment, or put there "
                "by someone else) and are not shown as its verdict; 'culprit report %s' shows one",
                skip->foreign, skip->first_foreign);
}

/* Symbolizes a report, adds the device asserts the watch saw (w may be NULL), settles a verdict of candidates
 * by a rerun when o asks for one (o NULL: never; run_dir is the run's report directory), and prints it on
 * stderr. Returns 0 when it was shown. With keep, the report also gets the end of its process's NCCL log and
 * is not printed but handed back in *keep (for cli_show_reports). */
static int cli_show_report(const char *path, int brief, struct cli_watch *w, int *faulted, const struct cli_run_opts *o,
                           const char *run_dir, const struct kernlog *klog, struct json **keep,
                           struct cli_skipped *skip)
{
    long long lo, hi;
    struct render_opts ro = {.brief = brief, .path = brief ? path : NULL, .no_debugger = o && o->simulated};
    struct json *doc = NULL;
    char why[1024];
    char *text;
    const char *run;
    int changed = 0, asserts = 0, nccl = 0, addr = 0, klogged = 0, narrowed = 0, rc;

    /* the run directory may be shared: a link or another user's file named like a report is no report of this
     * run's (reading it followed the link: another file's content was shown as the verdict) */
    rc = (keep ? symbolize_load_own : symbolize_load)(path, &doc, why, sizeof why);
    if (rc == SYMBOLIZE_EFOREIGN && skip) {
        if (!skip->unowned++)
            snprintf(skip->first_unowned, sizeof skip->first_unowned, "%s", path);
        return 1;
    }
    if (rc != 0) {
        cli_err("%s", why);
        return -1;
    }
    /* A report of another culprit command sharing the directory is that command's to show and annotate. One
     * without this command's run id was written outside its environment, or planted: not shown as its verdict. */
    run = json_get_str(json_get(doc, "process"), "run_id");
    if (keep && (!run || strcmp(run, cli_run_id) != 0)) {
        if (!run && skip && !skip->foreign++)
            snprintf(skip->first_foreign, sizeof skip->first_foreign, "%s", path);
        json_free(doc);
        return 1;
    }
    /* Without a watch the library's one-line notice went straight to the terminal: it is the report's brief
     * text as written, which -q then does not repeat (with a watch, the watch saw the very line pass). */
    if (o && o->quiet && w && o->no_watch) {
        struct render_opts bro = {.brief = 1, .path = path};
        char *said = render_doc(doc, &bro);
        if (said)
            watch_note_said(w, said, strlen(said));
        free(said);
    }
    if (symbolize_doc(doc, &changed) != 0)
        changed = 0;
    if (asserts_annotate(w ? &w->asserts : NULL, doc, &asserts) != 0)
        cli_err("out of memory adding the device asserts to %s", path);
    if (keep && nccllog_attach(run_dir, doc, &nccl) != 0)
        cli_err("out of memory adding NCCL's log to %s", path);
    if (klog && kernlog_attach(klog, doc, &klogged) != 0)
        cli_err("out of memory adding the kernel's log of the GPU fault to %s", path);
    /* what the faulting address touched: the GPU core dump's, else the page of the kernel's log (report/addr.c) */
    if (addr_annotate_fault(doc, &addr) != 0)
        cli_err("out of memory answering the faulting address in %s", path);
    /* a window of candidates the page of the faulting address settles, then the answer as of the culprit's launch */
    if (faultpage_narrow(doc, &narrowed) != 0)
        cli_err("out of memory settling the verdict of %s by the page of its faulting address", path);
    if (narrowed && addr_annotate_fault(doc, &addr) != 0)
        cli_err("out of memory answering the faulting address in %s", path);
    if ((changed || asserts || nccl || addr || klogged || narrowed) && symbolize_save(path, doc, why, sizeof why) != 0)
        cli_err("%s (the verdict below is complete, only the file keeps its old content)", why);
    if (o && o->rerun && rerun_needed(doc, &lo, &hi)) {
        json_free(doc);
        doc = NULL;
        rerun_settle(o, path, run_dir);
        if (symbolize_load_own(path, &doc, why, sizeof why) != 0) {
            cli_err("%s", why);
            return -1;
        }
        /* the rerun may have named the culprit, whose launch the address's answer is judged at */
        if (addr_annotate_fault(doc, &addr) == 0 && addr && symbolize_save(path, doc, why, sizeof why) != 0)
            cli_err("%s", why);
    }
    if (keep) {
        *keep = doc;
        return 0;
    }
    text = render_doc(doc, &ro);
    /* reports written before hang reports existed have no kind: they are all faults */
    if (!json_get_str(doc, "kind") || strcmp(json_get_str(doc, "kind"), "fault") == 0)
        *faulted = 1;
    json_free(doc);
    if (!text) {
        cli_err("out of memory rendering %s", path);
        return -1;
    }
    fflush(stdout);
    fputs(text, stderr);
    if (!brief)
        cli_say(stderr, "report: %s", path);
    free(text);
    return 0;
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

int cli_run_command(const struct cli_run_opts *o, int *wstatus, int *faulted)
{
    char lib[PATH_MAX], abs[PATH_MAX], rel[PATH_MAX], off[400], core_dir[PATH_MAX] = "";
    struct sigaction sa, old[CLI_NFWD], oldchld, dfl;
    struct cli_watch *w = NULL;
    struct cli_seen *seen = NULL;
    size_t nseen = 0, i, n = 0, shown = 0, nmine = 0;
    char **reports = NULL;
    struct merge_report *mine = NULL;
    sigset_t block, oldmask;
    int created = 0, created_parent = 0, errpipe[2], rc, e = 0, status = 0, verdicts, launched;
    ssize_t got;
    pid_t pid;
    struct kernlog klog = {.fd = -1};

    rc = cli_find_lib(lib, sizeof lib);
    if (rc)
        return rc;
    rc = cli_prepare_dir(o, abs, sizeof abs, &created, &created_parent, rel, sizeof rel);
    if (rc)
        return rc;
    if (!cli_run_id[0])
        cli_make_run_id(); /* once per culprit command: a rerun (rerun.c) runs under the same id */
    cli_settings_make(o, abs);
    rc = cli_check_settings(o, off, sizeof off);
    if (rc) {
        cli_remove_dir(abs, created, created_parent);
        return rc;
    }
    if (!off[0])
        cli_secure_exec(o->argv[0], off, sizeof off);
    if (cli_snapshot(abs, &seen, &nseen) != 0) {
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
    /* after the watch, which looks at what fd 1 and 2 are, and above them should either be closed */
    errpipe[0] = errpipe[1] = -1;
    if (pipe2(errpipe, O_CLOEXEC) != 0 || (errpipe[0] = watch_high(errpipe[0])) < 0 ||
        (errpipe[1] = watch_high(errpipe[1])) < 0) {
        e = errno;
        for (i = 0; i < 2; i++)
            if (errpipe[i] >= 0)
                close(errpipe[i]);
        cli_err("cannot start %s: %s", o->argv[0], strerror(e));
        goto not_started;
    }

    /* The handlers go in before fork with the signals blocked, so no signal can find the child pid unset in
     * the parent or the parent's handler in the child. */
    sigemptyset(&block);
    for (i = 0; i < CLI_NFWD; i++)
        sigaddset(&block, cli_fwd_signals[i]);
    sigprocmask(SIG_BLOCK, &block, &oldmask);
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
    sigaction(SIGCHLD, &dfl, &oldchld);

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

    /* The pipe closes on a successful exec; otherwise the child sends its errno first. */
    do
        got = read(errpipe[0], &e, sizeof e);
    while (got < 0 && errno == EINTR);
    close(errpipe[0]);
    w->lib = lib; /* the loader's line when it cannot preload it says culprit was off */
    if (w->nch)
        watch_relay(w, pid, &status);
    else
        while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
            ;
    cli_child_pid = 0;
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
    /* before the reports are shown: a dump may make a verdict exact */
    if (o->coredump)
        coredump_attach_all(core_dir, abs, cli_run_id);

    if (o->rerun && cli_list_reports(abs, &reports, &n) == 0 && n) {
        /* a job's ranks are rerun together, each over its own window, before any report is shown */
        size_t fresh = 0;
        for (i = 0; i < n; i++)
            if (!cli_is_old(seen, nseen, reports[i]))
                reports[fresh++] = reports[i];
            else
                free(reports[i]);
        n = fresh;
        rerun_settle_job(o, reports, n, abs);
        cli_free_list(reports, n);
        reports = NULL;
        n = 0;
    }
    if (cli_list_reports(abs, &reports, &n) == 0 && n && (mine = calloc(n, sizeof *mine)) != NULL) {
        struct cli_skipped skip = {0};
        for (i = 0; i < n; i++) {
            struct json *doc = NULL;
            if (cli_is_old(seen, nseen, reports[i]) ||
                cli_show_report(reports[i], o->quiet, w, faulted, o, abs, &klog, &doc, &skip) != 0)
                continue;
            mine[nmine].path = reports[i];
            mine[nmine++].doc = doc;
        }
        cli_skip_say(&skip);
        fflush(stdout);
        verdicts = cli_show_reports(mine, nmine, o->quiet, stderr, "culprit:\n", rel, o->simulated, w, faulted);
        /* --diagnose that named nothing: say why it may not have, rather than leave the user to wonder */
        for (i = 0; o->boot && !o->is_rerun && i < nmine; i++) {
            const struct json *d = mine[i].doc;
            const char *kind = json_get_str(d, "kind");
            const char *py = json_get_str(d, "python_status");
            if ((!kind || strcmp(kind, "fault") == 0) && !cli_report_has_ops(d)) {
                if (py && strncmp(py, "no Python", 9) == 0)
                    cli_err("--diagnose named no operator: the process that faulted ran no Python (its report says "
                            "\"%s\"), and --diagnose names the PyTorch operators of Python programs",
                            py);
                else
                    cli_err("--diagnose named no operator for this fault: the launches it lists were made outside "
                            "the PyTorch operators it saw (a program that never imported torch, a thread that did "
                            "not import it, or kernels a library launched on its own)");
                break;
            }
        }
        /* exit records say no error was seen; a report that could not be shown may still hold one */
        shown = verdicts < 0 ? nmine : (size_t)verdicts;
        for (i = 0; !o->is_rerun && i < nmine; i++) /* --on-report, --events */
            deliver_report(o, mine[i].path, mine[i].doc);
        for (i = 0; i < nmine; i++)
            json_free((struct json *)mine[i].doc);
        free(mine);
    } else if (n) {
        cli_err("out of memory");
    }
    if (created)
        nccllog_tidy(abs);
    launched = cli_take_launched(abs);
    /* "no sticky CUDA error" is true only where culprit was there to see one */
    if (!off[0] && w->preload_error[0])
        snprintf(off, sizeof off, "the dynamic loader could not preload %s (%s)", render_base(lib), w->preload_error);
    if (w->unwritten) {
        /* a fault was met and its verdict printed by the library, but no file holds it: it counts as one */
        *faulted = 1;
        if (!shown)
            cli_err("%s met a sticky CUDA error whose report culprit could not write (the verdict and why are "
                    "printed above)",
                    o->argv[0]);
        cli_remove_dir(abs, created, created_parent);
    } else if (!shown && off[0]) {
        cli_err("culprit was off in %s: %s; a fault there would not show here", o->argv[0], off);
        cli_remove_dir(abs, created, created_parent);
    } else if (!shown && w->load_error[0]) {
        cli_err("the dynamic loader stopped %s before it ran (%s), so culprit never ran in it", o->argv[0],
                w->load_error);
        cli_remove_dir(abs, created, created_parent);
    } else if (!shown && !launched) {
        cli_err("no sticky CUDA error in %s, and culprit saw no kernel launched in it: if it launches kernels, they "
                "ran in a process culprit was not loaded in (one started without culprit's LD_PRELOAD, as `env -u "
                "LD_PRELOAD` starts one, or a set-user-ID program)",
                o->argv[0]);
        cli_remove_dir(abs, created, created_parent);
    } else if (!shown) {
        cli_err("no sticky CUDA error in %s", o->argv[0]);
        cli_remove_dir(abs, created, created_parent);
    } else if (w->preload_error[0]) {
        cli_err("the dynamic loader could not preload %s into a process of %s (%s): culprit was off there",
                render_base(lib), o->argv[0], w->preload_error);
    }
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
    cli_free_list(reports, n);
    for (i = 0; i < nseen; i++)
        free(seen[i].path);
    free(seen);
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

int cli_run_main(int argc, char **argv)
{
    struct cli_run_opts o;
    static char boot[PATH_MAX];
    int i, rc, wstatus = 0, faulted = 0;
    long long v;

    memset(&o, 0, sizeof o);
    o.error_exitcode = -1;
    o.on_report_ms = 10000;
    for (i = 1; i < argc; i++) {
        const char *a = argv[i], *val, *missing = NULL;
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
        if (strcmp(a, "--quiet") == 0 || strcmp(a, "-q") == 0) {
            o.quiet = 1;
            continue;
        }
        if (strcmp(a, "--verbose") == 0 || strcmp(a, "-v") == 0) {
            o.verbose = 1;
            continue;
        }
        if (strcmp(a, "--stats") == 0) {
            o.stats = 1;
            continue;
        }
        if (strcmp(a, "--no-watch") == 0) {
            o.no_watch = 1;
            continue;
        }
        if (strcmp(a, "--no-exception-text") == 0) {
            o.no_exception_text = 1;
            continue;
        }
        if (strcmp(a, "--coredump") == 0) {
            o.coredump = 1;
            continue;
        }
        if (strcmp(a, "--rerun") == 0) {
            o.rerun = 1;
            continue;
        }
        if (strcmp(a, "--diagnose") == 0) {
            o.boot = boot;
            if (cli_find_boot(boot, sizeof boot, 0) != 0)
                return CLI_EXIT_USAGE;
            continue;
        }
        if ((val = cli_optval(argc, argv, &i, "--mode", &missing)) != NULL) {
            if (strcmp(val, "record") && strcmp(val, "precise") && strcmp(val, "blocking") && strcmp(val, "off")) {
                cli_err("--mode must be record, precise, blocking or off, not '%s'", val);
                return CLI_EXIT_USAGE;
            }
            o.mode = val;
        } else if ((val = cli_optval(argc, argv, &i, "--kernels", &missing)) != NULL) {
            if (!*val) {
                cli_err("--kernels needs a kernel name pattern such as '*softmax*'");
                return CLI_EXIT_USAGE;
            }
            o.kernels = val;
        } else if ((val = cli_optval(argc, argv, &i, "--launches", &missing)) != NULL) {
            if (!cli_valid_launches(val)) {
                cli_err("--launches must be A:B with 1 <= A <= B, either side optional (100:120, 100:, :50), "
                        "not '%s'",
                        val);
                return CLI_EXIT_USAGE;
            }
            o.launches = val;
        } else if ((val = cli_optval(argc, argv, &i, "--ring", &missing)) != NULL) {
            if (cli_parse_int(val, 16, 1048576, &v) != 0) {
                cli_err("--ring must be a whole number of launches from 16 to 1048576, not '%s'", val);
                return CLI_EXIT_USAGE;
            }
            o.ring = val;
        } else if ((val = cli_optval(argc, argv, &i, "--crumb-every", &missing)) != NULL) {
            if (cli_parse_int(val, 1, 4096, &v) != 0) {
                cli_err("--crumb-every must be a whole number of launches from 1 to 4096, not '%s'", val);
                return CLI_EXIT_USAGE;
            }
            o.crumb_every = val;
        } else if ((val = cli_optval(argc, argv, &i, "--mark-budget", &missing)) != NULL) {
            uint32_t bp;
            if (cfg_parse_percent(val, &bp) != 0) {
                cli_err("--mark-budget must be a percentage from 0 to 100 (e.g. 1 or 0.5; 0: fixed spacing), not "
                        "'%s'",
                        val);
                return CLI_EXIT_USAGE;
            }
            o.mark_budget = val;
        } else if ((val = cli_optval(argc, argv, &i, "--mark", &missing)) != NULL) {
            if (strcmp(val, "write") && strcmp(val, "memset")) {
                cli_err("--mark must be write or memset, not '%s'", val);
                return CLI_EXIT_USAGE;
            }
            o.mark = val;
        } else if ((val = cli_optval(argc, argv, &i, "--stack-depth", &missing)) != NULL) {
            if (cli_parse_int(val, 0, 64, &v) != 0) {
                cli_err("--stack-depth must be a whole number of frames from 0 to 64, not '%s'", val);
                return CLI_EXIT_USAGE;
            }
            o.stack_depth = val;
        } else if ((val = cli_optval(argc, argv, &i, "--exit-wait", &missing)) != NULL) {
            uint32_t ms;
            if (cfg_parse_seconds(val, CFG_SECONDS_MAX, &ms) != 0) {
                cli_err("--exit-wait must be seconds from 0 to %d (at most 3 decimals, e.g. 2 or 0.5), not '%s'",
                        CFG_SECONDS_MAX, val);
                return CLI_EXIT_USAGE;
            }
            o.exit_wait = val;
        } else if ((val = cli_optval(argc, argv, &i, "--on-report", &missing)) != NULL) {
            if (!*val) {
                cli_err("--on-report needs a command, run with each report's path as its last argument");
                return CLI_EXIT_USAGE;
            }
            o.on_report = val;
        } else if ((val = cli_optval(argc, argv, &i, "--on-report-timeout", &missing)) != NULL) {
            uint32_t ms;
            if (cfg_parse_seconds(val, 3600, &ms) != 0 || ms == 0) {
                cli_err("--on-report-timeout must be seconds from 0.001 to 3600 (e.g. 10 or 0.5), not '%s'", val);
                return CLI_EXIT_USAGE;
            }
            o.on_report_ms = ms;
        } else if ((val = cli_optval(argc, argv, &i, "--events", &missing)) != NULL) {
            if (!*val) {
                cli_err("--events needs a file or a unix socket to deliver a line of JSON per report to");
                return CLI_EXIT_USAGE;
            }
            o.events = val;
        } else if ((val = cli_optval(argc, argv, &i, "--hang-timeout", &missing)) != NULL) {
            uint32_t ms;
            if (cfg_parse_seconds(val, CFG_SECONDS_MAX, &ms) != 0) {
                cli_err("--hang-timeout must be seconds from 0 (off) to %d (e.g. 60 or 2.5), not '%s'", CFG_SECONDS_MAX,
                        val);
                return CLI_EXIT_USAGE;
            }
            o.hang_timeout = val;
        } else if ((val = cli_optval(argc, argv, &i, "--device-timeout", &missing)) != NULL) {
            uint32_t ms;
            if (cfg_parse_seconds(val, 3600, &ms) != 0) {
                cli_err("--device-timeout must be seconds from 0 (do not ask) to 3600 (e.g. 60), not '%s'", val);
                return CLI_EXIT_USAGE;
            }
            o.device_timeout = val;
        } else if ((val = cli_optval(argc, argv, &i, "--report-signal", &missing)) != NULL) {
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
            o.report_signal = val;
        } else if ((val = cli_optval(argc, argv, &i, "--error-exitcode", &missing)) != NULL) {
            if (cli_parse_int(val, 0, 255, &v) != 0) {
                cli_err("--error-exitcode must be an exit status from 0 to 255, not '%s'", val);
                return CLI_EXIT_USAGE;
            }
            o.error_exitcode = (int)v;
        } else if ((val = cli_optval(argc, argv, &i, "--dir", &missing)) != NULL) {
            if (!*val) {
                cli_err("--dir needs a directory name");
                return CLI_EXIT_USAGE;
            }
            o.dir = val;
        } else if (missing) {
            cli_err("%s needs a value%s; see 'culprit help run'", missing,
                    strchr(a, '=') || i + 1 < argc ? " ('--' ends culprit's options, it is not a value)" : "");
            return CLI_EXIT_USAGE;
        } else {
            cli_err("run has no option '%s'; see 'culprit help run'", a);
            return CLI_EXIT_USAGE;
        }
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
