/* A helper program run with its output kept (subproc.h). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "subproc.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

static double subproc_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Ours without LD_PRELOAD and without the variable set_env replaces, then set_env. The strings are environ's. */
static char **subproc_env(const char *set_env)
{
    size_t n = 0, j = 0, name_len = 0;
    const char *eq = set_env ? strchr(set_env, '=') : NULL;
    if (eq)
        name_len = (size_t)(eq - set_env) + 1;
    while (environ && environ[n])
        n++;
    char **env = calloc(n + 2, sizeof *env);
    if (!env)
        return NULL;
    for (size_t i = 0; i < n; i++) {
        if (strncmp(environ[i], "LD_PRELOAD=", 11) == 0 || (name_len && strncmp(environ[i], set_env, name_len) == 0))
            continue;
        env[j++] = environ[i];
    }
    if (eq)
        env[j++] = (char *)set_env;
    return env;
}

/* Reads the child's output until its end, the deadline or the size limit; kills it at either limit. */
static int subproc_read(int fd, pid_t pid, const struct subproc_opts *o, struct subproc_result *res)
{
    size_t cap = 0;
    double deadline = subproc_now() + o->timeout_s;
    for (;;) {
        struct pollfd pfd = {fd, POLLIN, 0};
        double left = deadline - subproc_now();
        if (left <= 0) {
            res->timed_out = 1;
            break;
        }
        int pr = poll(&pfd, 1, (int)(left * 1000) + 1);
        if (pr <= 0)
            continue; /* EINTR, or the deadline: checked above */
        if (res->len >= o->max_output) {
            res->truncated = 1;
            break;
        }
        if (cap - res->len < 4096 && cap < o->max_output + 1) {
            size_t ncap = cap ? cap * 2 : 8192;
            if (ncap > o->max_output + 1)
                ncap = o->max_output + 1;
            char *nb = realloc(res->out, ncap);
            if (!nb)
                return -1;
            res->out = nb;
            cap = ncap;
        }
        ssize_t got = read(fd, res->out + res->len, cap - res->len - 1);
        if (got < 0 && errno == EINTR)
            continue;
        if (got <= 0)
            break;
        res->len += (size_t)got;
    }
    if (res->timed_out || res->truncated)
        kill(pid, SIGKILL);
    return 0;
}

static int subproc_spawn(char *const argv[], const struct subproc_opts *o, struct subproc_result *res, int own_group)
{
    posix_spawn_file_actions_t fa;
    int pipefd[2] = {-1, -1}, rc = -1, status = 0, fa_ok = 0;
    char **env = NULL;
    pid_t pid = -1;

    memset(res, 0, sizeof *res);
    if (pipe2(pipefd, O_CLOEXEC) != 0)
        return -1;
    env = subproc_env(o->set_env);
    if (!env || posix_spawn_file_actions_init(&fa) != 0)
        goto out;
    fa_ok = 1;
    if ((o->in_fd >= 0 ? posix_spawn_file_actions_adddup2(&fa, o->in_fd, 0)
                       : posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0)) ||
        posix_spawn_file_actions_adddup2(&fa, pipefd[1], 1) ||
        (o->with_stderr ? posix_spawn_file_actions_adddup2(&fa, pipefd[1], 2)
                        : posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0)))
        goto out;
    posix_spawnattr_t attr;
    int attr_ok = 0, spawned;
    if (own_group) {
        if (posix_spawnattr_init(&attr) != 0)
            goto out;
        attr_ok = 1;
        if (posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP) || posix_spawnattr_setpgroup(&attr, 0)) {
            posix_spawnattr_destroy(&attr);
            goto out;
        }
    }
    spawned = posix_spawnp(&pid, argv[0], &fa, attr_ok ? &attr : NULL, argv, env);
    if (attr_ok)
        posix_spawnattr_destroy(&attr);
    if (spawned != 0) {
        pid = -1;
        rc = -2;
        goto out;
    }
    close(pipefd[1]);
    pipefd[1] = -1;
    int read_rc = subproc_read(pipefd[0], pid, o, res);
    close(pipefd[0]); /* a child still writing gets SIGPIPE */
    pipefd[0] = -1;
    if (read_rc != 0)
        kill(pid, SIGKILL);
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    pid = -1;
    if (read_rc != 0)
        goto out;
    res->exited = WIFEXITED(status);
    res->status = res->exited ? WEXITSTATUS(status) : 0;
    if (res->exited && res->status == 127 && res->len == 0) {
        rc = -2;
        goto out;
    }
    if (!res->out && !(res->out = malloc(1)))
        goto out;
    res->out[res->len] = '\0';
    rc = 0;
out:
    if (fa_ok)
        posix_spawn_file_actions_destroy(&fa);
    if (pipefd[0] >= 0)
        close(pipefd[0]);
    if (pipefd[1] >= 0)
        close(pipefd[1]);
    free(env);
    if (rc != 0) {
        free(res->out);
        res->out = NULL;
        res->len = 0;
    }
    return rc;
}

int subproc_capture(char *const argv[], const struct subproc_opts *o, struct subproc_result *res)
{
    return subproc_spawn(argv, o, res, 0);
}

int subproc_capture_alone(char *const argv[], const struct subproc_opts *o, struct subproc_result *res)
{
    return subproc_spawn(argv, o, res, 1);
}
