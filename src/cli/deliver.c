/* `--on-report CMD` and `--events PATH` (see deliver.h). The command is run through /bin/sh with the report's path
 * as its last argument, in a process group of its own, stdin from /dev/null and its output on culprit's stderr (so
 * the program's own stdout stays the program's); past its time it is killed, group and all, and so it is when a
 * signal ends culprit while it waits. The event line is one write: appended (O_APPEND, a line at a time,
 * so writers sharing the file do not interleave) to a file created without following a link, or sent to a unix
 * socket (a stream or a datagram one). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "deliver.h"

#include "cli.h"
#include "../render/json.h"
#include "../base/jsonw.h"
#include "../render/render.h"
#include "../render/format_keys.h"
#include "../render/report_keys.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* The host a report came from: a ranked process names its file culprit-HOST-PID.json; else this host. */
static void deliver_host(const char *path, const struct json *proc, char *out, size_t outsz)
{
    const char *base = render_base(path), *dash;
    out[0] = '\0';
    if (json_get(proc, RK_RANK) && strncmp(base, "culprit-", 8) == 0 && (dash = strrchr(base + 8, '-')) != NULL &&
        dash > base + 8 && (size_t)(dash - (base + 8)) < outsz)
        snprintf(out, outsz, "%.*s", (int)(dash - (base + 8)), base + 8);
    if (!out[0] && gethostname(out, outsz - 1) != 0)
        snprintf(out, outsz, "unknown-host");
    out[outsz - 1] = '\0';
}

static void deliver_int(struct jw *w, const char *key, const struct json *value)
{
    long long v;
    if (json_int(value, &v) == 0) {
        jw_key(w, key);
        jw_int(w, v);
    }
}

static void deliver_str(struct jw *w, const char *key, const char *s)
{
    if (s && *s) {
        jw_key(w, key);
        jw_str(w, s);
    }
}

char *deliver_event_line(const char *path, const struct json *doc)
{
    const char *kind = json_get_str(doc, RK_KIND);
    const struct json *proc = json_get(doc, RK_PROCESS), *err = json_get(doc, RK_ERROR), *launch;
    char host[256], site[256], *owned = NULL, *line = NULL;
    long long seq;
    struct jw w;

    if (!kind || (strcmp(kind, "fault") && strcmp(kind, "hang")))
        return NULL;
    launch = rk_culprit(doc);
    if (!launch)
        launch = json_at(rk_candidates(doc), 0);
    deliver_host(path, proc, host, sizeof host);
    jw_init(&w);
    jw_obj_begin(&w);
    jw_key(&w, EV_EVENT);
    jw_str(&w, "culprit.report");
    jw_key(&w, EV_KIND);
    jw_str(&w, kind);
    jw_key(&w, EV_TIME);
    jw_int(&w, (long long)time(NULL));
    jw_key(&w, EV_HOST);
    jw_str(&w, host);
    deliver_int(&w, EV_PID, json_get(proc, RK_PID));
    deliver_int(&w, EV_RANK, json_get(proc, RK_RANK));
    deliver_int(&w, EV_LOCAL_RANK, json_get(proc, RK_LOCAL_RANK));
    deliver_int(&w, EV_WORLD_SIZE, json_get(proc, RK_WORLD_SIZE));
    deliver_str(&w, EV_LAUNCHER, json_get_str(proc, RK_LAUNCHER));
    deliver_str(&w, EV_JOB, json_get_str(proc, RK_JOB));
    deliver_str(&w, EV_RUN_ID, json_get_str(proc, RK_RUN_ID));
    deliver_str(&w, EV_ERROR, json_get_str(err, RK_NAME));
    deliver_int(&w, EV_CODE, json_get(err, RK_CODE));
    deliver_str(&w, EV_API, json_get_str(err, RK_API));
    deliver_str(&w, EV_CERTAINTY, rk_certainty(doc));
    if (json_is(launch, JSON_OBJ)) {
        deliver_str(&w, EV_KERNEL, render_launch_name(launch, &owned));
        if (json_int(json_get(launch, RK_SEQ), &seq) == 0) {
            jw_key(&w, EV_LAUNCH);
            jw_int(&w, seq);
        }
        deliver_str(&w, EV_LAUNCHED_AT, render_launch_site(launch, site, sizeof site));
    }
    jw_key(&w, EV_REPORT);
    jw_str(&w, path);
    jw_obj_end(&w);
    free(owned);
    if (!w.err && (line = malloc(w.len + 2)) != NULL) {
        memcpy(line, w.buf, w.len); /* jw escapes every control character: the line holds no newline */
        line[w.len] = '\n';
        line[w.len + 1] = '\0';
    }
    jw_free(&w);
    return line;
}

/* Sends line to the unix socket at path: a stream socket, else a datagram one. Returns 0 or an errno value. */
static int deliver_socket(const char *path, const char *line, size_t len)
{
    static const int types[] = {SOCK_STREAM, SOCK_DGRAM};
    struct sockaddr_un sa;
    int e = ENAMETOOLONG;
    if (strlen(path) >= sizeof sa.sun_path)
        return e;
    memset(&sa, 0, sizeof sa);
    sa.sun_family = AF_UNIX;
    memcpy(sa.sun_path, path, strlen(path));
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++) {
        int fd = socket(AF_UNIX, types[i] | SOCK_CLOEXEC, 0);
        if (fd < 0)
            return errno;
        if (connect(fd, (struct sockaddr *)&sa, sizeof sa) == 0) {
            ssize_t n = send(fd, line, len, MSG_NOSIGNAL);
            e = n == (ssize_t)len ? 0 : n < 0 ? errno : EIO;
            close(fd);
            return e;
        }
        e = errno;
        close(fd);
        if (e != EPROTOTYPE)
            break;
    }
    return e;
}

/* Appends the report's event line to path (a file, or a unix socket). Returns 0 or an errno value. */
static int deliver_event(const char *path, const char *line)
{
    struct stat st;
    size_t len = strlen(line);
    if (stat(path, &st) == 0 && S_ISSOCK(st.st_mode))
        return deliver_socket(path, line, len);
    int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY, 0644);
    if (fd < 0)
        return errno;
    ssize_t n;
    do
        n = write(fd, line, len);
    while (n < 0 && errno == EINTR);
    int e = n == (ssize_t)len ? 0 : n < 0 ? errno : EIO;
    if (close(fd) != 0 && !e)
        e = errno;
    return e;
}

static volatile sig_atomic_t deliver_group; /* the running command's process group, 0 when none */
static const int deliver_signals[] = {SIGHUP, SIGINT, SIGQUIT, SIGTERM};

/* A signal that ends culprit while the command runs ends the command's whole group first, then culprit as the
 * signal would have. */
static void deliver_stop(int sig)
{
    if (deliver_group > 0)
        kill(-(pid_t)deliver_group, SIGKILL);
    signal(sig, SIG_DFL);
    raise(sig);
}

/* Runs `sh -c 'CMD "$@"' sh PATH` bounded by ms; says on stderr how it went when it did not end well. */
static void deliver_command(const char *cmd, const char *path, unsigned ms)
{
    char *script = NULL;
    int st = 0, waited = 0;
    struct timespec tick = {0, 10 * 1000 * 1000};
    if (asprintf(&script, "%s \"$@\"", cmd) < 0) {
        cli_err("--on-report: out of memory");
        return;
    }
    fflush(NULL);
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid == 0) {
        int devnull = open("/dev/null", O_RDONLY | O_CLOEXEC);
        /* culprit killed while it waits (SIGKILL, which deliver_stop cannot see): the command goes too */
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() != parent)
            _exit(127);
        setpgid(0, 0);
        if (devnull >= 0)
            dup2(devnull, 0);
        dup2(2, 1);
        signal(SIGPIPE, SIG_DFL);
        execl("/bin/sh", "sh", "-c", script, "sh", path, (char *)NULL);
        _exit(127);
    }
    free(script);
    if (pid < 0) {
        cli_err("--on-report: cannot start '%s': %s", cmd, strerror(errno));
        return;
    }
    setpgid(pid, pid); /* also here, so that the kill below finds the group whichever runs first */
    struct sigaction sa, old[sizeof deliver_signals / sizeof deliver_signals[0]];
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = deliver_stop;
    sigemptyset(&sa.sa_mask);
    deliver_group = pid;
    for (size_t i = 0; i < sizeof deliver_signals / sizeof deliver_signals[0]; i++) {
        sigaction(deliver_signals[i], NULL, &old[i]);
        if (old[i].sa_handler != SIG_IGN) /* a signal culprit's caller ignores (nohup) stays ignored */
            sigaction(deliver_signals[i], &sa, NULL);
    }
    for (;;) {
        pid_t r = waitpid(pid, &st, WNOHANG);
        if (r == pid)
            break;
        if (r < 0 && errno != EINTR) {
            st = -1;
            break;
        }
        if ((unsigned)waited * 10 >= ms) {
            kill(-pid, SIGKILL);
            kill(pid, SIGKILL);
            while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
                ;
            st = -2;
            break;
        }
        nanosleep(&tick, NULL);
        waited++;
    }
    deliver_group = 0;
    for (size_t i = 0; i < sizeof deliver_signals / sizeof deliver_signals[0]; i++)
        if (old[i].sa_handler != SIG_IGN)
            sigaction(deliver_signals[i], &old[i], NULL);
    if (st == -2)
        cli_err("--on-report: '%s' was still running after %u.%03u s and was stopped (report %s)", cmd, ms / 1000,
                ms % 1000, path);
    else if (st == -1)
        cli_err("--on-report: lost track of '%s' (report %s)", cmd, path);
    else if (WIFEXITED(st) && WEXITSTATUS(st) != 0)
        cli_err("--on-report: '%s' exited with status %d (report %s)", cmd, WEXITSTATUS(st), path);
    else if (WIFSIGNALED(st))
        cli_err("--on-report: '%s' was ended by signal %d (report %s)", cmd, WTERMSIG(st), path);
}

void deliver_report(const struct cli_run_opts *o, const char *path, const struct json *doc)
{
    const char *kind = json_get_str(doc, RK_KIND);
    if (!kind || (strcmp(kind, "fault") && strcmp(kind, "hang")))
        return; /* an exit record is no event */
    if (o->events) {
        char *line = deliver_event_line(path, doc);
        int e = line ? deliver_event(o->events, line) : ENOMEM;
        if (e)
            cli_err("--events: cannot deliver the event of %s to %s: %s", path, o->events, strerror(e));
        free(line);
    }
    if (o->on_report)
        deliver_command(o->on_report, path, o->on_report_ms);
}
