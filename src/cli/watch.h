/* Watching a command's stdout and stderr for device-assert lines while passing every byte through unchanged
 * (what is done with the lines is asserts.c's). Used by `culprit run` only; the preloaded library never
 * sees these lines (the driver prints them into the process's own descriptors). */
#ifndef CULPRIT_CLI_WATCH_H
#define CULPRIT_CLI_WATCH_H

#include <stddef.h>
#include <sys/types.h>

#include "../evidence/asserts.h"

#define WATCH_LINE_MAX 8192 /* longer lines are passed through but not scanned */
#define WATCH_CHANNELS 2    /* one per watched descriptor, or one for both when they are the same file */

/* One descriptor (or both) of the child, routed through a pipe or a pseudo-terminal. */
struct watch_chan {
    int fd;                    /* our end (pipe read end or pty master); -1 once at end of file */
    int peer;                  /* the child's end (pipe write end or pty slave); -1 once closed here */
    int out;                   /* where the bytes go: the original descriptor, 1 or 2 */
    int targets;               /* the child descriptors peer becomes: bit 0 stdout, bit 1 stderr */
    int is_pty;                /* peer is a pty slave (the original was a terminal) */
    int out_dead;              /* out refused a write (EPIPE): the channel was closed so the child sees it too */
    const char *name;          /* "stdout", "stderr" or "stdout+stderr" */
    char line[WATCH_LINE_MAX]; /* the current line, not NUL-terminated */
    size_t llen;               /* bytes in line */
    int skip;                  /* the current line outgrew line: pass it through unscanned until its end */
};

/* A descriptor of the child that is a regular file written through its own offset (not O_APPEND): inherited
 * as it is (so seeking and truncating behave as without culprit) and read back after the run, from where its
 * offset stood at the start to where it stands at the end, which culprit's descriptor shares. */
struct watch_file {
    int rd;      /* the file opened again for reading */
    off_t start; /* where the command's writes began */
    int fds;     /* culprit's descriptors sharing the child's offsets: bit 0 fd 1, bit 1 fd 2 */
    dev_t dev;   /* the file, to join stdout and stderr when both lead to it */
    ino_t ino;
    const char *name; /* "stdout", "stderr" or "stdout+stderr" */
};

#define WATCH_FILE_SCAN_MAX (64LL << 20) /* bytes of a file read back at most: the end of the run's output */
#define WATCH_SAID_MAX 64                /* the library's one-line notices remembered, at most */

/* The watch over one run. */
struct cli_watch {
    struct watch_chan ch[WATCH_CHANNELS];    /* the channels in use, first nch of them */
    int nch;                                 /* channels in use; 0 means the child simply inherits fd 1 and 2 */
    struct watch_file files[WATCH_CHANNELS]; /* regular files among fd 1 and 2, first nfiles of them */
    int nfiles;                              /* entries of files in use */
    struct dev_asserts asserts;              /* the device-assert lines seen (asserts.c) */
    char *said[WATCH_SAID_MAX]; /* the library's one-line notices ("culprit: ...; report: PATH") that passed */
    int nsaid;                  /* entries of said in use */
    const char *lib;            /* the library culprit run preloads, or NULL */
    char preload_error[200];    /* why the dynamic loader could not preload lib into a process, "" if it never said */
    char load_error[200];       /* why the loader stopped a process before it ran ("error while loading shared
                                 * libraries: ..."), "" if it never said */
    int unwritten;              /* the library's lines saying a fault's report could not be written (its verdict
                                 * printed instead): a fault no report in the directory shows */
};

/* Before fork: sets up a channel for fd 1 and fd 2 where they are open (a pty for a terminal, else a pipe;
 * a regular file not in append mode is left to the child and read back afterwards).
 * When a channel cannot be made, that descriptor is inherited as it is and one note says so. Returns 0, or
 * an errno value when out of memory. */
int watch_setup(struct cli_watch *w);

/* Whether the watch reads everything the command writes to both fd 1 and fd 2 (through its channels or files read
 * back): only then does seeing no device-assert line mean the command printed none there. */
static inline int watch_covers_output(const struct cli_watch *w)
{
    int k, seen = 0;
    for (k = 0; k < w->nch; k++)
        seen |= w->ch[k].targets;
    for (k = 0; k < w->nfiles; k++)
        seen |= w->files[k].fds;
    return seen == 3;
}

/* In the child after fork: installs the channels as fd 1 and 2. Returns 0 or an errno value. */
int watch_child(const struct cli_watch *w);

/* In the parent after fork: relays and scans until the child pid has exited and its output is drained, and
 * returns its wait status in *status. SIGPIPE is ignored meanwhile (a closed reader is passed on to the child
 * by closing its channel) and SIGWINCH is forwarded when a pty is in use. */
void watch_relay(struct cli_watch *w, pid_t pid, int *status);

/* After the child exited: scans what it wrote into regular files among fd 1 and 2 (bounded by
 * WATCH_FILE_SCAN_MAX) and closes them. */
void watch_scan_files(struct cli_watch *w);

/* After watch_relay: channels still held open by processes the child left running are handed to a small
 * background relay so their later output still arrives (one line says so); then everything is released. The relay
 * carries on after culprit run ends normally (watch_release_relay, at exit) and stops at once if it is killed. */
void watch_finish(struct cli_watch *w);

/* Tells the background relay, if there is one, that culprit run ends normally, so it carries on; called at exit
 * and before culprit dies of its command's signal. */
void watch_release_relay(void);

/* Moves fd above 2 (close-on-exec), closing the original, so that a descriptor culprit opens never takes the
 * place of a closed stdout or stderr. Returns the new descriptor, fd itself when already above 2, or -1. */
int watch_high(int fd);

/* Whether line (one line, its newline optional) passed through the watch as one of the library's one-line
 * notices, or was noted with watch_note_said: `culprit run -q` does not print it a second time. */
int watch_said(const struct cli_watch *w, const char *line);
/* Notes line as said (without a watch, the notice the library printed straight to the terminal). */
void watch_note_said(struct cli_watch *w, const char *line, size_t len);

/* Frees the assert texts and the notices, and closes what watch_scan_files did not. */
void watch_free(struct cli_watch *w);

#endif
