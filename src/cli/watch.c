/* The output watch of `culprit run`: the child writes its stdout and stderr into pipes (or pseudo-terminals,
 * where the originals were terminals) that culprit relays byte for byte to the original descriptors while
 * picking out device-assert lines (kept by asserts.c, which ties them to the reports). It does not touch
 * stdin, and it never rewrites, delays or reorders a byte of the child's output. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "watch.h"
#include "cli.h"
#include "../base/demangle.h"
#include "../base/jsonw.h"
#include "../render/json.h"
#include "../render/render.h"

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

#define WATCH_CHUNK 65536         /* bytes moved per read */
#define WATCH_TICK_MS 200         /* how often the relay looks whether the child has exited */
#define WATCH_LINGER_IDLE_MS 1000 /* after the child exits, a silent channel is given up after this long... */
#define WATCH_LINGER_MAX_MS 5000  /* ...and any channel after this long (a daemon it left behind holds it) */

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
        return -1; /* appended lines of other processes (ranks sharing a log) would look like the command's */
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
        return -1; /* no /proc, or a file we may not read: watch it through a pipe like any other output */
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
            continue; /* a closed descriptor stays closed in the child */
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

static int watch_said_n(const struct cli_watch *w, const char *line, size_t len)
{
    for (int i = 0; i < w->nsaid; i++)
        if (strlen(w->said[i]) == len && memcmp(w->said[i], line, len) == 0)
            return 1;
    return 0;
}

void watch_note_said(struct cli_watch *w, const char *line, size_t len)
{
    char *copy;
    while (len && (line[len - 1] == '\n' || line[len - 1] == '\r'))
        len--;
    if (w->nsaid == WATCH_SAID_MAX || watch_said_n(w, line, len) || (copy = strndup(line, len)) == NULL)
        return;
    w->said[w->nsaid++] = copy;
}

int watch_said(const struct cli_watch *w, const char *line)
{
    size_t len = strlen(line);
    while (len && (line[len - 1] == '\n' || line[len - 1] == '\r'))
        len--;
    return watch_said_n(w, line, len);
}

/* glibc's loader says "ERROR: ld.so: object 'LIB' from LD_PRELOAD cannot be preloaded (WHY): ignored." on the
 * process's stderr when it goes on without LIB (WHY for the library culprit run preloads is kept), and
 * "PROG: error while loading shared libraries: WHY" when it stops the process before it runs (a library the
 * program or the preloaded one needs is missing). */
static void watch_loader_line(struct cli_watch *w, const char *line, size_t len)
{
    static const char mark[] = "' from LD_PRELOAD cannot be preloaded (", fatal[] = ": error while loading shared "
                                                                                    "libraries: ";
    const char *m = memmem(line, len, mark, sizeof mark - 1), *why, *end;
    size_t liblen = strlen(w->lib);
    if (!m && !w->load_error[0] && (m = memmem(line, len, fatal, sizeof fatal - 1)) != NULL) {
        why = m + sizeof fatal - 1;
        snprintf(w->load_error, sizeof w->load_error, "%.*s", (int)(line + len - why), why);
        return;
    }
    if (!m || w->preload_error[0] || (size_t)(m - line) < liblen || memcmp(m - liblen, w->lib, liblen) != 0)
        return;
    why = m + sizeof mark - 1;
    end = memmem(why, len - (size_t)(why - line), "): ignored", 10);
    if (!end)
        end = line + len;
    snprintf(w->preload_error, sizeof w->preload_error, "%.*s", (int)(end - why), why);
}

static void watch_keep(struct cli_watch *w, struct watch_chan *c)
{
    if (c->skip || c->llen == 0)
        return;
    /* the dynamic loader's word that it could not preload the library, or ran nothing: culprit was off there */
    if (w->lib)
        watch_loader_line(w, c->line, c->llen);
    /* the library's one-line notice of a report (what it prints under culprit run), which -q need not repeat */
    if (c->llen > 9 && memcmp(c->line, "culprit: ", 9) == 0 && memmem(c->line, c->llen, "report: ", 8))
        watch_note_said(w, c->line, c->llen);
    /* the library's word that a fault's report could not be written (a full disk, ulimit -f): no file will show
     * that fault, so culprit run must not say there was none */
    static const char unwritten[] = "culprit: could not write the report into ";
    if (c->llen > sizeof unwritten - 1 && memcmp(c->line, unwritten, sizeof unwritten - 1) == 0)
        w->unwritten++;
    if (!memmem(c->line, c->llen, "Assertion `", 11))
        return;
    asserts_add(&w->asserts, c->line, c->llen, c->name);
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
        watch_keep(w, c); /* a last line without its newline */
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

/* Fills p (and idx, the channel of each entry) with the channels still open, in channel order. Returns how many. */
static int watch_poll_set(const struct cli_watch *w, struct pollfd *p, int *idx)
{
    int i, k = 0;
    for (i = 0; i < w->nch; i++) {
        if (w->ch[i].fd < 0)
            continue;
        p[k].fd = w->ch[i].fd;
        p[k].events = POLLIN;
        p[k].revents = 0;
        idx[k++] = i;
    }
    return k;
}

/* One round: waits up to timeout_ms for data and moves it. Returns the bytes moved. */
static size_t watch_round(struct cli_watch *w, int timeout_ms, int scan)
{
    struct pollfd p[WATCH_CHANNELS];
    int idx[WATCH_CHANNELS], i, k = watch_poll_set(w, p, idx), r;
    size_t moved = 0;
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
            close(w->ch[i].peer); /* only the child keeps the writing ends, so its exit means end of file */
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

#define WATCH_RELAYS 8 /* background relays one culprit command can start (a run, its rerun) */

/* culprit's ends of the background relays' lifelines: one byte written at culprit's normal end says "carry on";
 * end of file without it says culprit run was killed. */
static int watch_lifelines[WATCH_RELAYS];
static int watch_nlifelines;

void watch_release_relay(void)
{
    for (int i = 0; i < watch_nlifelines; i++) {
        while (write(watch_lifelines[i], "", 1) < 0 && errno == EINTR)
            ;
        close(watch_lifelines[i]);
    }
    watch_nlifelines = 0;
}

static void watch_release_at_exit(void)
{
    watch_release_relay();
}

/* The background relay: moves what is still written until the last writer is gone, or until culprit run is
 * killed (its lifeline ends without the byte of a normal end). A pipe rather than PR_SET_PDEATHSIG, which fires
 * at any end of the parent and so cannot tell a kill from culprit run finishing its work; a pipe also has no race:
 * a culprit killed before the relay looks leaves it an ended pipe. */
static void watch_background(struct cli_watch *w, int life)
{
    signal(SIGPIPE, SIG_IGN);
    while (watch_open_count(w) > 0) {
        struct pollfd p[WATCH_CHANNELS + 1];
        int idx[WATCH_CHANNELS + 1], i, k = watch_poll_set(w, p, idx), r;
        if (life >= 0) {
            p[k].fd = life;
            p[k].events = POLLIN;
            p[k].revents = 0;
            idx[k++] = -1;
        }
        r = poll(p, (nfds_t)k, -1);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0)
            break;
        for (i = 0; i < k; i++) {
            if (!(p[i].revents & (POLLIN | POLLHUP | POLLERR | POLLNVAL)))
                continue;
            if (idx[i] < 0) {
                char c;
                ssize_t got = read(life, &c, 1);
                if (got == 1) {
                    close(life); /* culprit run ended as it should: carry on for the processes left behind */
                    life = -1;
                } else if (got == 0 || (errno != EINTR && errno != EAGAIN)) {
                    _exit(0); /* culprit run was killed: nothing of it stays behind */
                }
                continue;
            }
            watch_pump(w, &w->ch[idx[i]], 0);
        }
    }
    _exit(0);
}

void watch_finish(struct cli_watch *w)
{
    int i;
    for (i = 0; i < w->nch; i++) {
        if (w->ch[i].peer >= 0)
            close(w->ch[i].peer); /* before the fork, or the background relay would hold a writer itself */
        w->ch[i].peer = -1;
    }
    if (watch_open_count(w) > 0) {
        static int registered;
        int life[2];
        pid_t pid = -1;
        /* without its lifeline the relay could outlive a killed culprit run: then the channels are just closed */
        if (watch_nlifelines < WATCH_RELAYS && pipe2(life, O_CLOEXEC) == 0) {
            life[0] = watch_high(life[0]);
            life[1] = watch_high(life[1]);
            if (life[0] >= 0 && life[1] >= 0) {
                fflush(NULL);
                pid = fork();
                if (pid == 0) {
                    close(life[1]);
                    for (i = 0; i < watch_nlifelines; i++)
                        close(watch_lifelines[i]); /* an earlier relay's: that one must see culprit's end */
                    watch_background(w, life[0]);
                }
            }
            if (life[0] >= 0)
                close(life[0]);
            if (pid > 0) {
                watch_lifelines[watch_nlifelines++] = life[1];
                if (!registered++)
                    atexit(watch_release_at_exit);
                cli_err("processes the command left running still hold its output: what they write is passed on "
                        "after culprit run ends, until they close it");
            } else if (life[1] >= 0) {
                close(life[1]);
            }
        }
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
    static struct watch_chan c; /* only its line buffer is used */
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
            end = sb.st_size; /* truncated meanwhile */
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
                ssize_t got = pread(f->rd, buf, (size_t)(end - at) < sizeof buf ? (size_t)(end - at) : sizeof buf, at);
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
    watch_close_files(w);
    asserts_free(&w->asserts);
    for (int i = 0; i < w->nsaid; i++)
        free(w->said[i]);
    w->nsaid = 0;
}
