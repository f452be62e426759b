/* The output watch of `culprit run`: the child writes its stdout and stderr into pipes (or pseudo-terminals,
 * where the originals were terminals) that culprit relays byte for byte to the original descriptors while
 * picking out device-assert lines; afterwards the asserts are written into the reports. It does not touch
 * stdin, and it never rewrites, delays or reorders a byte of the child's output. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "watch.h"
#include "cli.h"
#include "../report/demangle.h"
#include "../report/jsonw.h"
#include "../report/json.h"
#include "../report/render.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#define WATCH_CHUNK 65536          /* bytes moved per read */
#define WATCH_TICK_MS 200          /* how often the relay looks whether the child has exited */
#define WATCH_LINGER_IDLE_MS 1000  /* after the child exits, a silent channel is given up after this long... */
#define WATCH_LINGER_MAX_MS 5000   /* ...and any channel after this long (a daemon it left behind holds it) */

/* Read by the SIGWINCH handler: the ptys to resize and the child to tell. */
static struct cli_watch *volatile watch_winch_w;
static volatile pid_t watch_winch_pid;

/* ---- setting up ---- */

/* Moves fd above 2 (close-on-exec), so that a closed stdout or stderr in culprit never gets reused by a pipe
 * end and culprit's own messages cannot land in the child's channel. */
int watch_high(int fd)
{
    int hi;
    if (fd < 0 || fd > 2)
        return fd;
    hi = fcntl(fd, F_DUPFD_CLOEXEC, 3);
    close(fd);
    return hi;
}

/* Whether fd 1 and fd 2 lead to the same place (one terminal, one pipe, the same open file): they then share
 * one channel, so the order of the child's stdout and stderr writes is kept exactly. */
static int watch_same(const struct stat *a, const struct stat *b)
{
    if (a->st_dev != b->st_dev || a->st_ino != b->st_ino || a->st_rdev != b->st_rdev)
        return 0;
    if (S_ISREG(a->st_mode)) {
        /* two separate opens of one file have their own offsets; writing both into fd 1 would change that */
        off_t p1 = lseek(1, 0, SEEK_CUR), p2 = lseek(2, 0, SEEK_CUR);
        return p1 == p2 && fcntl(1, F_GETFL) == fcntl(2, F_GETFL);
    }
    return 1;
}

/* A pty whose slave looks like the terminal at tty: same modes and window size. Output post-processing is the
 * one exception: it stays on in the real terminal, which still sees every byte, so it is switched off in the
 * slave or a newline would be expanded twice ("\r\r\n"). Returns 0 or an errno value. */
static int watch_open_pty(int tty, int *master, int *slave)
{
    struct termios t;
    struct winsize ws;
    const char *name;
    int m, s, e;

    *master = *slave = -1;
    m = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
    if (m < 0)
        return errno;
    if (grantpt(m) != 0 || unlockpt(m) != 0 || (name = ptsname(m)) == NULL)
        goto fail;
    s = open(name, O_RDWR | O_NOCTTY | O_CLOEXEC);
    if (s < 0)
        goto fail;
    if (tcgetattr(tty, &t) == 0) {
        t.c_oflag &= ~(tcflag_t)OPOST;
        if (tcsetattr(s, TCSANOW, &t) != 0) {
            e = errno;
            close(s);
            close(m);
            return e;
        }
    }
    if (ioctl(tty, TIOCGWINSZ, &ws) == 0)
        ioctl(s, TIOCSWINSZ, &ws);
    *master = watch_high(m);
    *slave = watch_high(s);
    if (*master < 0 || *slave < 0) {
        e = errno;
        if (*master >= 0)
            close(*master);
        if (*slave >= 0)
            close(*slave);
        *master = *slave = -1;
        return e;
    }
    return 0;
fail:
    e = errno;
    close(m);
    return e;
}

static int watch_open_pipe(int *rd, int *wr)
{
    int p[2];
    *rd = *wr = -1;
    if (pipe2(p, O_CLOEXEC) != 0)
        return errno;
    *rd = watch_high(p[0]);
    *wr = watch_high(p[1]);
    if (*rd < 0 || *wr < 0) {
        int e = errno;
        if (*rd >= 0)
            close(*rd);
        if (*wr >= 0)
            close(*wr);
        *rd = *wr = -1;
        return e;
    }
    return 0;
}

/* A regular file at fd that the command writes through a plain (not O_APPEND) offset: those writes can be
 * told from anyone else's after the run, because culprit's fd shares that offset. Returns it, or -1. */
static off_t watch_file_offset(int fd)
{
    int fl = fcntl(fd, F_GETFL);
    if (fl < 0 || (fl & O_APPEND))
        return -1;  /* appended lines of other processes (ranks sharing a log) would look like the command's */
    return lseek(fd, 0, SEEK_CUR);
}

/* Takes fd (a regular file) as a file to read back after the run, or joins it to the entry of the same file.
 * Returns 0, or -1 when it must be relayed instead. */
static int watch_add_file(struct cli_watch *w, int fd, const struct stat *sb)
{
    struct watch_file *f;
    char self[64];
    off_t at = watch_file_offset(fd);
    int k, rd;

    if (at < 0)
        return -1;
    for (k = 0; k < w->nfiles; k++) {
        f = &w->files[k];
        if (f->dev == sb->st_dev && f->ino == sb->st_ino) {
            /* the same file as stdout, through the same or its own offset: one read-back over both ranges */
            if (at < f->start)
                f->start = at;
            f->fds |= 1 << (fd - 1);
            f->name = "stdout+stderr";
            return 0;
        }
    }
    snprintf(self, sizeof self, "/proc/self/fd/%d", fd);
    rd = open(self, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
    if (rd < 0 || (rd = watch_high(rd)) < 0)
        return -1;  /* no /proc, or a file we may not read: watch it through a pipe like any other output */
    f = &w->files[w->nfiles++];
    f->rd = rd;
    f->start = at;
    f->fds = 1 << (fd - 1);
    f->dev = sb->st_dev;
    f->ino = sb->st_ino;
    f->name = fd == 1 ? "stdout" : "stderr";
    return 0;
}

int watch_setup(struct cli_watch *w)
{
    struct stat sb[2];
    int open_[2], fd, noted = 0;

    memset(w, 0, sizeof *w);
    for (fd = 1; fd <= 2; fd++)
        open_[fd - 1] = fstat(fd, &sb[fd - 1]) == 0;
    for (fd = 1; fd <= 2; fd++) {
        struct watch_chan *c;
        int e, targets = 1 << (fd - 1);
        if (!open_[fd - 1])
            continue;  /* a closed descriptor stays closed in the child */
        if (S_ISREG(sb[fd - 1].st_mode) && watch_add_file(w, fd, &sb[fd - 1]) == 0)
            continue;
        if (fd == 2 && open_[0] && watch_same(&sb[0], &sb[1])) {
            if (w->nch && w->ch[0].targets == 1) {
                w->ch[0].targets |= 2;
                w->ch[0].name = "stdout+stderr";
            }
            continue;
        }
        c = &w->ch[w->nch];
        c->out = fd;
        c->targets = targets;
        c->name = fd == 1 ? "stdout" : "stderr";
        c->is_pty = isatty(fd);
        e = c->is_pty ? watch_open_pty(fd, &c->fd, &c->peer) : watch_open_pipe(&c->fd, &c->peer);
        if (e) {
            if (!noted++)
                cli_err("cannot watch the command's %s through a %s (%s); it is passed on unwatched, so device "
                        "asserts printed there will not show in the verdict",
                        c->name, c->is_pty ? "pseudo-terminal" : "pipe", strerror(e));
            memset(c, 0, sizeof *c);
            continue;
        }
        w->nch++;
    }
    return 0;
}

int watch_child(const struct cli_watch *w)
{
    int i, fd;
    for (i = 0; i < w->nch; i++)
        for (fd = 1; fd <= 2; fd++)
            if ((w->ch[i].targets & (1 << (fd - 1))) && dup2(w->ch[i].peer, fd) < 0)
                return errno;
    return 0;
}

/* ---- relaying ---- */

static long long watch_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* The terminal was resized: the ptys take the new size and the child is told. The child usually got the
 * terminal's own SIGWINCH already (it is in the foreground group), maybe before the pty had the new size, so
 * it gets a second one; handling SIGWINCH twice is harmless. */
static void watch_on_winch(int sig)
{
    int saved = errno, i;
    struct cli_watch *w = watch_winch_w;
    struct winsize ws;
    if (w) {
        for (i = 0; i < w->nch; i++)
            if (w->ch[i].is_pty && w->ch[i].fd >= 0 && ioctl(w->ch[i].out, TIOCGWINSZ, &ws) == 0)
                ioctl(w->ch[i].fd, TIOCSWINSZ, &ws);
        if (watch_winch_pid > 0)
            kill(watch_winch_pid, sig);
    }
    errno = saved;
}

/* Writes all of buf to fd. Returns 0, or an errno value (EPIPE when the reader is gone). */
static int watch_write_all(int fd, const char *buf, size_t n)
{
    while (n) {
        ssize_t put = write(fd, buf, n);
        if (put < 0 && errno == EINTR)
            continue;
        if (put < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            /* someone made the original descriptor non-blocking: wait for room as a blocking write would */
            struct pollfd p = {fd, POLLOUT, 0};
            poll(&p, 1, -1);
            continue;
        }
        if (put < 0)
            return errno;
        buf += put;
        n -= (size_t)put;
    }
    return 0;
}

static void watch_keep(struct cli_watch *w, struct watch_chan *c)
{
    struct watch_assert a;
    if (c->skip || c->llen == 0)
        return;
    if (!memmem(c->line, c->llen, "Assertion `", 11))
        return;
    if (watch_parse_assert(c->line, c->llen, &a) != 0)
        return;
    w->seen++;
    if (w->nasserts >= WATCH_MAX_ASSERTS) {
        free(a.file);
        free(a.kernel);
        free(a.expr);
        return;
    }
    a.stream = c->name;
    w->asserts[w->nasserts++] = a;
}

/* Feeds relayed bytes to the line scanner. */
static void watch_scan(struct cli_watch *w, struct watch_chan *c, const char *p, size_t n)
{
    while (n) {
        const char *nl = memchr(p, '\n', n);
        size_t part = nl ? (size_t)(nl - p) : n;
        if (!c->skip) {
            if (c->llen + part > sizeof c->line) {
                c->skip = 1;
                c->llen = 0;
            } else {
                memcpy(c->line + c->llen, p, part);
                c->llen += part;
            }
        }
        if (!nl)
            return;
        watch_keep(w, c);
        c->llen = 0;
        c->skip = 0;
        p = nl + 1;
        n -= part + 1;
    }
}

static void watch_close(struct cli_watch *w, struct watch_chan *c, int scan)
{
    if (c->fd < 0)
        return;
    if (scan)
        watch_keep(w, c);  /* a last line without its newline */
    c->llen = 0;
    close(c->fd);
    c->fd = -1;
}

/* Moves what is readable on c now. Returns the bytes moved; the channel is closed at end of file. */
static size_t watch_pump(struct cli_watch *w, struct watch_chan *c, int scan)
{
    static char buf[WATCH_CHUNK];
    ssize_t got;
    do
        got = read(c->fd, buf, sizeof buf);
    while (got < 0 && errno == EINTR);
    if (got < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
        return 0;
    if (got <= 0) {
        /* end of file; on a pty, EIO once no process has the slave open any more */
        watch_close(w, c, scan);
        return 0;
    }
    if (!c->out_dead && watch_write_all(c->out, buf, (size_t)got) == EPIPE) {
        /* the reader of the original went away: close the channel so the child meets a closed pipe too, as it
         * would have without culprit */
        c->out_dead = 1;
        watch_close(w, c, scan);
        return (size_t)got;
    }
    if (scan)
        watch_scan(w, c, buf, (size_t)got);
    return (size_t)got;
}

/* One round: waits up to timeout_ms for data and moves it. Returns the bytes moved. */
static size_t watch_round(struct cli_watch *w, int timeout_ms, int scan)
{
    struct pollfd p[WATCH_CHANNELS];
    int idx[WATCH_CHANNELS], i, k = 0, r;
    size_t moved = 0;
    for (i = 0; i < w->nch; i++) {
        if (w->ch[i].fd < 0)
            continue;
        p[k].fd = w->ch[i].fd;
        p[k].events = POLLIN;
        p[k].revents = 0;
        idx[k++] = i;
    }
    if (k == 0)
        return 0;
    r = poll(p, (nfds_t)k, timeout_ms);
    if (r <= 0)
        return 0;
    /* in channel order, so with separate channels stdout still goes first when both are ready */
    for (i = 0; i < k; i++)
        if (p[i].revents & (POLLIN | POLLHUP | POLLERR | POLLNVAL))
            moved += watch_pump(w, &w->ch[idx[i]], scan);
    return moved;
}

static int watch_open_count(const struct cli_watch *w)
{
    int i, n = 0;
    for (i = 0; i < w->nch; i++)
        n += w->ch[i].fd >= 0;
    return n;
}

void watch_relay(struct cli_watch *w, pid_t pid, int *status)
{
    struct sigaction ign, oldpipe, winch, oldwinch;
    long long exited_at = -1, last_data = 0;
    int i, any_pty = 0;

    for (i = 0; i < w->nch; i++) {
        if (w->ch[i].peer >= 0)
            close(w->ch[i].peer);  /* only the child keeps the writing ends, so its exit means end of file */
        w->ch[i].peer = -1;
        any_pty |= w->ch[i].is_pty;
    }
    memset(&ign, 0, sizeof ign);
    ign.sa_handler = SIG_IGN;
    sigemptyset(&ign.sa_mask);
    sigaction(SIGPIPE, &ign, &oldpipe);
    if (any_pty) {
        watch_winch_w = w;
        watch_winch_pid = pid;
        memset(&winch, 0, sizeof winch);
        winch.sa_handler = watch_on_winch;
        winch.sa_flags = SA_RESTART;
        sigemptyset(&winch.sa_mask);
        sigaction(SIGWINCH, &winch, &oldwinch);
    }

    for (;;) {
        long long now;
        size_t moved;
        if (exited_at < 0) {
            pid_t r = waitpid(pid, status, WNOHANG);
            if (r == pid || (r < 0 && errno == ECHILD)) {
                exited_at = last_data = watch_now_ms();
                watch_winch_pid = 0;
            }
        }
        if (watch_open_count(w) == 0)
            break;
        moved = watch_round(w, exited_at < 0 ? WATCH_TICK_MS : 50, 1);
        if (exited_at < 0)
            continue;
        now = watch_now_ms();
        if (moved)
            last_data = now;
        /* the child is gone but something it started still holds a channel */
        if (now - last_data >= WATCH_LINGER_IDLE_MS || now - exited_at >= WATCH_LINGER_MAX_MS)
            break;
    }
    if (exited_at < 0)
        while (waitpid(pid, status, 0) < 0 && errno == EINTR)
            ;

    if (any_pty) {
        sigaction(SIGWINCH, &oldwinch, NULL);
        watch_winch_w = NULL;
        watch_winch_pid = 0;
    }
    sigaction(SIGPIPE, &oldpipe, NULL);
}

void watch_finish(struct cli_watch *w)
{
    int i;
    for (i = 0; i < w->nch; i++) {
        if (w->ch[i].peer >= 0)
            close(w->ch[i].peer);  /* before the fork, or the background relay would hold a writer itself */
        w->ch[i].peer = -1;
    }
    if (watch_open_count(w) > 0) {
        pid_t pid;
        fflush(NULL);
        pid = fork();
        if (pid == 0) {
            /* the background relay: no scanning, just keep the bytes flowing until the last writer is gone */
            signal(SIGPIPE, SIG_IGN);
            while (watch_open_count(w) > 0)
                watch_round(w, -1, 0);
            _exit(0);
        }
        /* when it cannot be started, closing the channels is all that is left */
    }
    for (i = 0; i < w->nch; i++) {
        if (w->ch[i].fd >= 0)
            close(w->ch[i].fd);
        w->ch[i].fd = -1;
    }
}

static void watch_close_files(struct cli_watch *w)
{
    int i;
    for (i = 0; i < w->nfiles; i++)
        close(w->files[i].rd);
    w->nfiles = 0;
}

void watch_scan_files(struct cli_watch *w)
{
    static struct watch_chan c;  /* only its line buffer is used */
    static char buf[WATCH_CHUNK];
    int i;
    for (i = 0; i < w->nfiles; i++) {
        struct watch_file *f = &w->files[i];
        struct stat sb;
        off_t at;
        off_t end = f->start;
        int fd;
        /* the command's writes end where the shared offset stands now (the furthest, for two of them) */
        for (fd = 1; fd <= 2; fd++) {
            off_t e = (f->fds & (1 << (fd - 1))) ? lseek(fd, 0, SEEK_CUR) : -1;
            if (e > end)
                end = e;
        }
        if (fstat(f->rd, &sb) == 0 && end > sb.st_size)
            end = sb.st_size;  /* truncated meanwhile */
        if (end > f->start) {
            char prev = '\n';
            at = f->start;
            if (end - at > WATCH_FILE_SCAN_MAX)
                at = end - WATCH_FILE_SCAN_MAX;
            memset(&c, 0, sizeof c);
            c.name = f->name;
            /* a window that starts after the run's first byte may start mid-line: that piece is not a line */
            if (at != f->start && pread(f->rd, &prev, 1, at - 1) != 1)
                prev = 0;
            c.skip = prev != '\n';
            while (at < end) {
                ssize_t got = pread(f->rd, buf, (size_t)(end - at) < sizeof buf ? (size_t)(end - at) : sizeof buf,
                                    at);
                if (got < 0 && errno == EINTR)
                    continue;
                if (got <= 0)
                    break;
                watch_scan(w, &c, buf, (size_t)got);
                at += got;
            }
            watch_keep(w, &c);
        }
    }
    watch_close_files(w);
}

void watch_free(struct cli_watch *w)
{
    size_t i;
    watch_close_files(w);
    for (i = 0; i < w->nasserts; i++) {
        free(w->asserts[i].file);
        free(w->asserts[i].kernel);
        free(w->asserts[i].expr);
    }
    w->nasserts = 0;
}

/* ---- parsing ---- */

/* Parses "[x,y,z]" at *p (spaces allowed), advancing *p. Returns 0 or -1. */
static int watch_triple(const char **p, long v[3])
{
    const char *s = *p;
    char *end;
    int i;
    if (*s++ != '[')
        return -1;
    for (i = 0; i < 3; i++) {
        while (*s == ' ')
            s++;
        if (!isdigit((unsigned char)*s))
            return -1;
        v[i] = strtol(s, &end, 10);
        s = end;
        while (*s == ' ')
            s++;
        if (*s++ != (i < 2 ? ',' : ']'))
            return -1;
    }
    *p = s;
    return 0;
}

static const char *watch_memrmem(const char *hay, size_t n, const char *needle)
{
    size_t m = strlen(needle);
    const char *p;
    if (n < m)
        return NULL;
    for (p = hay + n - m;; p--) {
        if (memcmp(p, needle, m) == 0)
            return p;
        if (p == hay)
            return NULL;
    }
}

/* The device prints "FILE:LINE: SIGNATURE: block: [x,y,z], thread: [x,y,z] Assertion `EXPR` failed." */
int watch_parse_assert(const char *text, size_t len, struct watch_assert *a)
{
    static const char tail[] = "` failed.";
    const size_t tl = sizeof tail - 1;
    char *copy = strndup(text, len);  /* NUL-terminated, so the string functions below stay inside it */
    const char *s = copy, *end, *blk, *p, *q, *colon = NULL, *sig = NULL, *expr;
    long lineno = 0;
    int rc = -1;

    memset(a, 0, sizeof *a);
    if (!copy)
        return -1;
    end = copy + strlen(copy);
    while (end > s && (end[-1] == '\r' || end[-1] == ' ' || end[-1] == '\t'))
        end--;
    /* text before a carriage return was overwritten on the screen (a progress bar); the line starts after it */
    for (p = s; p < end; p++)
        if (*p == '\r')
            s = p + 1;
    if ((size_t)(end - s) <= tl || memcmp(end - tl, tail, tl) != 0)
        goto out;
    blk = watch_memrmem(s, (size_t)(end - s), ": block: ");
    if (!blk)
        goto out;
    p = blk + 9;
    if (watch_triple(&p, a->block) != 0 || strncmp(p, ", thread: ", 10) != 0)
        goto out;
    p += 10;
    if (watch_triple(&p, a->thread) != 0 || strncmp(p, " Assertion `", 12) != 0)
        goto out;
    expr = p + 12;
    if (expr > end - tl)
        goto out;
    /* FILE ends at the last ":LINE: " before the signature (a log prefix such as a time stamp comes first) */
    for (q = s; q < blk; q++) {
        const char *d = q + 1;
        if (*q != ':' || !isdigit((unsigned char)*d))
            continue;
        while (d < blk && isdigit((unsigned char)*d))
            d++;
        if (d + 2 < blk && d[0] == ':' && d[1] == ' ') {
            colon = q;
            sig = d + 2;
            lineno = strtol(q + 1, NULL, 10);
        }
    }
    if (!colon || colon == s)
        goto out;
    a->line = lineno;
    a->file = strndup(s, (size_t)(colon - s));
    a->kernel = strndup(sig, (size_t)(blk - sig));
    a->expr = strndup(expr, (size_t)(end - tl - expr));
    if (a->file && a->kernel && a->expr) {
        rc = 0;
    } else {
        free(a->file);
        free(a->kernel);
        free(a->expr);
        memset(a, 0, sizeof *a);
    }
out:
    free(copy);
    return rc;
}

/* ---- tying asserts to reports ---- */

/* The launch's kernel name in readable form (malloc'd), or NULL. */
static char *watch_launch_name(const struct json *launch)
{
    const char *k = json_get_str(launch, "kernel");
    const char *m = json_get_str(launch, "mangled");
    char *d;
    if (k && *k && strncmp(k, "_Z", 2) != 0)
        return strdup(k);
    if ((d = demangle_name(m ? m : k)) != NULL)
        return d;
    if (k && *k)
        return strdup(k);
    return m && *m ? strdup(m) : NULL;
}

/* Whether any assert names the launch's kernel. */
static int watch_named(const struct cli_watch *w, const struct json *launch)
{
    char *name = watch_launch_name(launch);
    size_t i;
    int hit = 0;
    for (i = 0; name && !hit && i < w->nasserts; i++)
        hit = demangle_same_kernel(name, w->asserts[i].kernel);
    free(name);
    return hit;
}

static struct json *watch_triple_json(const long v[3])
{
    struct json *arr = json_new(JSON_ARR);
    int i;
    for (i = 0; arr && i < 3; i++) {
        struct json *n = json_new_int(v[i]);
        if (json_append(arr, n) != 0) {
            json_free(n);
            json_free(arr);
            return NULL;
        }
    }
    return arr;
}

/* Sets obj[key] = kid, taking kid; returns nonzero (and frees kid) on failure. */
static int watch_put(struct json *obj, const char *key, struct json *kid)
{
    if (!kid)
        return -1;
    if (json_set(obj, key, kid) != 0) {
        json_free(kid);
        return -1;
    }
    return 0;
}

static struct json *watch_assert_json(const struct watch_assert *a)
{
    struct json *o = json_new(JSON_OBJ);
    if (!o)
        return NULL;
    if (watch_put(o, "file", json_new_str(a->file)) || watch_put(o, "line", json_new_int(a->line)) ||
        watch_put(o, "kernel", json_new_str(a->kernel)) || watch_put(o, "block", watch_triple_json(a->block)) ||
        watch_put(o, "thread", watch_triple_json(a->thread)) || watch_put(o, "assertion", json_new_str(a->expr)) ||
        watch_put(o, "stream", json_new_str(a->stream))) {
        json_free(o);
        return NULL;
    }
    return o;
}

/* Whether assert a names the culprit or one of the candidates. */
static int watch_relevant(const struct watch_assert *a, const struct json *doc)
{
    const struct json *cands = json_get(doc, "candidates");
    size_t j;
    for (j = 0; j <= json_len(cands); j++) {
        const struct json *l = j == 0 ? json_get(doc, "culprit") : json_at(cands, j - 1);
        char *name;
        int hit;
        if (!json_is(l, JSON_OBJ))
            continue;
        name = watch_launch_name(l);
        hit = demangle_same_kernel(name, a->kernel);
        free(name);
        if (hit)
            return 1;
    }
    return 0;
}

/* A copy of a JSON subtree (through its text: reports are small and this runs once per report). */
static struct json *watch_copy(const struct json *n)
{
    struct jw jw;
    struct json *out = NULL;
    jw_init(&jw);
    if (json_dump(n, &jw) == JSON_OK && !jw.err)
        json_parse(jw.buf, jw.len, &out, NULL);
    jw_free(&jw);
    return out;
}

/* The culprit is a graph launch and exactly one of the kernels captured into that graph is named by an assert:
 * that node goes into culprit.node (the graph launch stays the culprit: it is what the stream ran). */
static int watch_narrow_node(const struct cli_watch *w, struct json *doc, int *changed)
{
    struct json *culprit = (struct json *)json_get(doc, "culprit");
    struct json *verdict = (struct json *)json_get(doc, "verdict");
    const struct json *nodes = json_get(culprit, "graph_nodes");
    const char *kind = json_get_str(culprit, "kind");
    const char *reason = json_get_str(verdict, "reason");
    size_t i, hits = 0, hit = 0;
    struct json *node;
    char *name, *why = NULL;

    if (!kind || strcmp(kind, "graph") != 0 || !json_is(nodes, JSON_ARR) || json_get(culprit, "node"))
        return 0;  /* the library already named the node from the graph's breadcrumbs */
    for (i = 0; i < json_len(nodes); i++)
        if (json_is(json_at(nodes, i), JSON_OBJ) && watch_named(w, json_at(nodes, i))) {
            hits++;
            hit = i;
        }
    if (hits != 1)
        return 0;
    node = watch_copy(json_at(nodes, hit));
    name = watch_launch_name(json_at(nodes, hit));
    if (!node || !name || json_set(culprit, "node", node) != 0 ||
        watch_put(culprit, "node_source", json_new_str("device assert"))) {
        json_free(node);
        free(name);
        return ENOMEM;
    }
    *changed = 1;
    if (asprintf(&why, "%s%sthe device assert names the graph's node %s", reason ? reason : "", reason ? "; " : "",
                 name) < 0) {
        free(name);
        return ENOMEM;
    }
    free(name);
    if (watch_put(verdict, "reason", json_new_str(why))) {
        free(why);
        return ENOMEM;
    }
    free(why);
    return 0;
}

static int watch_cmp_seq(const void *a, const void *b)
{
    long long x = json_get_int(*(struct json *const *)a, "seq", -1);
    long long y = json_get_int(*(struct json *const *)b, "seq", -1);
    return x < y ? -1 : x > y;
}

/* Whether launch l ran before the culprit on the culprit's stream. */
static int watch_before(const struct json *l, const struct json *culprit)
{
    const char *s = json_get_str(l, "stream"), *stream = json_get_str(culprit, "stream");
    long long q = json_get_int(l, "seq", -1);
    return s && stream && strcmp(s, stream) == 0 &&
           json_get_int(l, "device", -1) == json_get_int(culprit, "device", -1) && q >= 0 &&
           q < json_get_int(culprit, "seq", -1);
}

/* After narrowing: the former candidates launched before the new culprit on its stream are launches before it,
 * so "history" gets them (oldest first, the last REPORT_HISTORY kept); they stay in candidates_before_assert. */
static int watch_extend_history(struct json *doc, const struct json *chosen, const struct json *others)
{
    struct json *hist = (struct json *)json_get(doc, "history");
    size_t i, drop;

    if (!json_get_str(chosen, "stream") || json_get_int(chosen, "seq", -1) < 0)
        return 0;
    if (!json_is(hist, JSON_ARR)) {
        hist = json_new(JSON_ARR);
        if (!hist || json_set(doc, "history", hist) != 0) {
            json_free(hist);
            return ENOMEM;
        }
    }
    /* The library's history ran up to the first candidate, which may be on another stream or later than the
     * chosen one: only launches before the culprit on its stream stay. */
    for (i = drop = 0; i < hist->len; i++) {
        if (watch_before(hist->kids[i], chosen))
            hist->kids[drop++] = hist->kids[i];
        else
            json_free(hist->kids[i]);
    }
    hist->len = drop;
    for (i = 0; i < json_len(others); i++) {
        const struct json *o = json_at(others, i);
        long long q = json_get_int(o, "seq", -1);
        struct json *copy;
        size_t k;
        int dup = 0;
        if (!watch_before(o, chosen))
            continue;
        for (k = 0; k < hist->len; k++)
            dup |= json_get_int(hist->kids[k], "seq", -2) == q;
        if (dup)
            continue;
        copy = watch_copy(o);
        if (!copy || json_append(hist, copy) != 0) {
            json_free(copy);
            return ENOMEM;
        }
    }
    qsort(hist->kids, hist->len, sizeof *hist->kids, watch_cmp_seq);
    if (hist->len > REPORT_HISTORY) {
        drop = hist->len - REPORT_HISTORY;
        for (i = 0; i < drop; i++)
            json_free(hist->kids[i]);
        memmove(hist->kids, hist->kids + drop, REPORT_HISTORY * sizeof *hist->kids);
        hist->len = REPORT_HISTORY;
    }
    return 0;
}

/* verdict "candidates" and exactly one candidate named by an assert: that one becomes the culprit. */
static int watch_narrow(const struct cli_watch *w, struct json *doc, int *changed)
{
    struct json *verdict = (struct json *)json_get(doc, "verdict");
    struct json *cands = (struct json *)json_get(doc, "candidates");
    struct json *others, *chosen, *window;
    const char *certainty = json_get_str(verdict, "certainty");
    const char *reason = json_get_str(verdict, "reason");
    char *name, *why = NULL;
    size_t i, hits = 0, hit = 0;
    long long seq;

    if (!certainty || strcmp(certainty, "candidates") != 0 || !json_is(cands, JSON_ARR))
        return 0;
    for (i = 0; i < cands->len; i++)
        if (json_is(cands->kids[i], JSON_OBJ) && watch_named(w, cands->kids[i])) {
            hits++;
            hit = i;
        }
    if (hits != 1)
        return 0;
    chosen = cands->kids[hit];
    name = watch_launch_name(chosen);
    if (!name || asprintf(&why, "%s%sthe device assert names %s", reason ? reason : "", reason ? "; " : "",
                          name) < 0) {
        free(name);
        return ENOMEM;
    }
    free(name);
    others = json_new(JSON_ARR);
    for (i = 0; others && i < cands->len; i++)
        if (i != hit && json_append(others, cands->kids[i]) != 0) {
            others->len = 0;  /* the launches are still the candidates' */
            json_free(others);
            others = NULL;
        }
    if (!others || json_set(doc, "candidates_before_assert", others) != 0) {
        if (others)
            others->len = 0;
        json_free(others);
        free(why);
        return ENOMEM;
    }
    cands->len = 0;  /* every candidate now belongs to others, except chosen, which is ours */
    *changed = 1;
    if (json_set(doc, "culprit", chosen) != 0) {
        json_free(chosen);
        free(why);
        return ENOMEM;
    }
    seq = json_get_int(chosen, "seq", -1);
    if (watch_put(verdict, "certainty", json_new_str("exact")) || watch_put(verdict, "reason", json_new_str(why))) {
        free(why);
        return ENOMEM;
    }
    free(why);
    if (watch_extend_history(doc, chosen, others) != 0)
        return ENOMEM;
    if (seq >= 0) {
        /* the window spans the verdict's launches, now just this one */
        window = json_new(JSON_OBJ);
        if (!window || watch_put(window, "first", json_new_int(seq)) || watch_put(window, "last", json_new_int(seq))) {
            json_free(window);
            return ENOMEM;
        }
        if (watch_put(verdict, "window", window))
            return ENOMEM;
    }
    return 0;
}

int watch_annotate(const struct cli_watch *w, struct json *doc, int *changed)
{
    struct json *arr;
    size_t i;
    int pass;

    if (!w || w->nasserts == 0 || !json_is(doc, JSON_OBJ))
        return 0;
    arr = json_new(JSON_ARR);
    if (!arr)
        return ENOMEM;
    /* first the asserts that name this report's culprit or candidates, then the rest, each in arrival order */
    for (pass = 1; pass >= 0; pass--)
        for (i = 0; i < w->nasserts; i++) {
            struct json *o;
            if (watch_relevant(&w->asserts[i], doc) != pass)
                continue;
            o = watch_assert_json(&w->asserts[i]);
            if (!o || json_append(arr, o) != 0) {
                json_free(o);
                json_free(arr);
                return ENOMEM;
            }
        }
    if (json_set(doc, "device_asserts", arr) != 0) {
        json_free(arr);
        return ENOMEM;
    }
    *changed = 1;
    int rc = watch_narrow(w, doc, changed);
    return rc ? rc : watch_narrow_node(w, doc, changed);
}
