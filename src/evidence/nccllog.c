/* NCCL's warnings per process. The seed advice for NCCL jobs is to read NCCL_DEBUG output; printed on the
 * terminal by every rank it drowns the program's own output, so `culprit run` sends it to a file per process
 * (NCCL_DEBUG_FILE expands %h to the host name, cut at its first dot, and %p to the pid) and each report of that
 * host and pid keeps the end of it. The user's own NCCL_DEBUG settings are never touched. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "nccllog.h"
#include "stages.h"
#include "../render/json.h"
#include "../render/report_keys.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define NCCLLOG_TAIL (256 * 1024) /* bytes read from the end of a log: NCCLLOG_LINES lines fit many times */
#define NCCLLOG_LINE_MAX 1000     /* a longer line is cut */

int nccllog_env(const char *dir)
{
    struct stat sb;
    char *file;
    int rc;
    if (getenv("NCCL_DEBUG") || getenv("NCCL_DEBUG_FILE"))
        return 0;
    /* NCCL opens its file with fopen(..., "w"), which follows a symbolic link: in a directory others may write
     * into, one planted under the next pid's name would have NCCL overwrite what it points at. There NCCL's
     * warnings stay where NCCL puts them by default. */
    if (stat(dir, &sb) != 0 || sb.st_uid != geteuid() || (sb.st_mode & (S_IWGRP | S_IWOTH)))
        return 0;
    /* NCCL reads '%' as the start of a substitution: a directory holding one would be named wrongly */
    if (strchr(dir, '%'))
        return 0;
    if (asprintf(&file, "%s/nccl-%%h-%%p.log", dir) < 0)
        return -1;
    rc = setenv("NCCL_DEBUG", "WARN", 1) || setenv("NCCL_DEBUG_FILE", file, 1) ? -1 : 0;
    free(file);
    return rc;
}

/* The last NCCLLOG_LINES lines of a file, as a JSON array; NULL when the file cannot be read or is empty (then
 * *oom tells whether memory ran out). */
static struct json *nccllog_tail(const char *path, int *oom)
{
    /* The run directory may be one others write into: a link planted under a log's name would put another file's
     * lines into the report, a FIFO would block. Only a regular file of this user's, opened without following a
     * link, is NCCL's log of this run. */
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY);
    struct stat sb;
    struct json *arr = NULL;
    char *buf = NULL;
    size_t len = 0, starts[NCCLLOG_LINES], nst = 0, first;
    *oom = 0;
    if (fd < 0)
        return NULL;
    if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode) || sb.st_uid != geteuid() || sb.st_size == 0)
        goto out;
    if (sb.st_size > NCCLLOG_TAIL && lseek(fd, sb.st_size - NCCLLOG_TAIL, SEEK_SET) < 0)
        goto out;
    buf = malloc(NCCLLOG_TAIL + 1);
    if (!buf) {
        *oom = 1;
        goto out;
    }
    while (len < NCCLLOG_TAIL) {
        ssize_t got = read(fd, buf + len, NCCLLOG_TAIL - len);
        if (got < 0 && errno == EINTR)
            continue;
        if (got <= 0)
            break;
        len += (size_t)got;
    }
    /* a read that began in the middle of the file drops its first, partial line */
    first = 0;
    if (sb.st_size > NCCLLOG_TAIL) {
        char *nl = memchr(buf, '\n', len);
        first = nl ? (size_t)(nl - buf) + 1 : len;
    }
    /* the start of each of the last NCCLLOG_LINES lines, in a ring */
    for (size_t i = first; i < len;) {
        char *nl = memchr(buf + i, '\n', len - i);
        size_t end = nl ? (size_t)(nl - buf) : len;
        if (end > i)
            starts[nst++ % NCCLLOG_LINES] = i;
        i = end + 1;
    }
    if (nst == 0)
        goto out;
    arr = json_new(JSON_ARR);
    if (!arr) {
        *oom = 1;
        goto out;
    }
    for (size_t k = nst > NCCLLOG_LINES ? nst - NCCLLOG_LINES : 0; k < nst; k++) {
        size_t s = starts[k % NCCLLOG_LINES];
        char *nl = memchr(buf + s, '\n', len - s);
        size_t l = (nl ? (size_t)(nl - buf) : len) - s;
        char line[NCCLLOG_LINE_MAX + 1];
        struct json *item;
        if (l > NCCLLOG_LINE_MAX)
            l = NCCLLOG_LINE_MAX;
        memcpy(line, buf + s, l);
        line[l] = '\0';
        /* NCCL writes plain text; a NUL or invalid byte would make the string unusable in JSON */
        for (size_t c = 0; c < l; c++)
            if ((unsigned char)line[c] < 0x20 && line[c] != '\t')
                line[c] = ' ';
            else if ((unsigned char)line[c] >= 0x80)
                line[c] = '?';
        item = json_new_str(line);
        if (!item || json_append(arr, item) != 0) {
            json_free(item);
            json_free(arr);
            arr = NULL;
            *oom = 1;
            goto out;
        }
    }
out:
    free(buf);
    close(fd);
    return arr;
}

int nccllog_attach(const char *dir, struct json *doc, int *added)
{
    const struct json *proc = json_get(doc, RK_PROCESS);
    const char *host = json_get_str(proc, RK_HOSTNAME);
    long long pid = json_get_int(proc, RK_PID, -1);
    char path[4096];
    struct json *lines = NULL;
    int oom = 0;
    *added = 0;
    if (!host || pid < 0)
        return 0;
    /* NCCL cuts the host name at its first dot; try that, then the whole name */
    for (int whole = 0; whole < 2 && !lines && !oom; whole++) {
        size_t hl = whole ? strlen(host) : strcspn(host, ".");
        if (whole && hl == strcspn(host, "."))
            break;
        snprintf(path, sizeof path, "%s/nccl-%.*s-%lld.log", dir, (int)hl, host, pid);
        lines = nccllog_tail(path, &oom);
    }
    if (oom)
        return ENOMEM;
    if (!lines)
        return 0;
    if (json_set(doc, RK_NCCL_LOG, lines) != 0) {
        json_free(lines);
        return ENOMEM;
    }
    *added = 1;
    return 0;
}

void nccllog_tidy(const char *dir)
{
    DIR *d = opendir(dir);
    struct dirent *de;
    if (!d)
        return;
    while ((de = readdir(d)) != NULL) {
        struct stat sb;
        if (fnmatch("nccl-*.log", de->d_name, FNM_PERIOD) != 0)
            continue;
        if (fstatat(dirfd(d), de->d_name, &sb, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(sb.st_mode) && sb.st_size == 0)
            unlinkat(dirfd(d), de->d_name, 0);
    }
    closedir(d);
}

/* The report stage: the report gets the end of its process's NCCL log. */
enum ev_next nccllog_stage(struct ev_ctx *c)
{
    int added = 0;
    int rc = nccllog_attach(c->dir, c->doc, &added);
    if (added)
        c->changed = 1;
    return rc != 0 ? EV_NOMEM : EV_NEXT;
}

/* The run's stage: the logs culprit asked NCCL for in a directory it made go once read. */
enum ev_next nccllog_stage_tidy(struct ev_ctx *c)
{
    if (c->created)
        nccllog_tidy(c->dir);
    return EV_NEXT;
}
