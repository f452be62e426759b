/* Replacing a file of one's own in one step (replace.h). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "replace.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Writes all of buf to fd. Returns 0, or -1 with errno set. */
static int write_all(int fd, const char *buf, size_t len)
{
    size_t off = 0;
    while (off < len) {
        ssize_t put = write(fd, buf + off, len - off);
        if (put < 0 && errno == EINTR)
            continue;
        if (put < 0)
            return -1;
        off += (size_t)put;
    }
    return 0;
}

int replace_text_file(const char *path, const char *text, size_t len, int keep_mode, char *why, size_t whylen)
{
    const char *slash = strrchr(path, '/');
    char *tmp = NULL;
    struct stat sb;
    mode_t mode = 0600;
    int fd = -1, e;

    if (lstat(path, &sb) == 0) {
        if (!S_ISREG(sb.st_mode) || sb.st_uid != geteuid()) {
            snprintf(why, whylen, "%s exists and is not a regular file of yours (%s), so it is left as it is", path,
                     S_ISLNK(sb.st_mode)    ? "a symbolic link"
                     : !S_ISREG(sb.st_mode) ? "not a regular file"
                                            : "another user's");
            return EEXIST;
        }
        if (keep_mode)
            mode = sb.st_mode & 0777;
    }
    if (asprintf(&tmp, "%.*s.%s.XXXXXX", slash ? (int)(slash - path + 1) : 0, path, slash ? slash + 1 : path) < 0) {
        snprintf(why, whylen, "out of memory writing %s", path);
        return ENOMEM;
    }
    /* mkstemp: O_EXCL, mode 0600, never an existing file */
    fd = mkstemp(tmp);
    if (fd < 0) {
        e = errno;
        snprintf(why, whylen, "cannot write %s: %s", path, strerror(e));
        free(tmp);
        return e;
    }
    if (fchmod(fd, mode) != 0 || write_all(fd, text, len) != 0 || write_all(fd, "\n", 1) != 0 || fsync(fd) != 0)
        goto fail;
    e = close(fd);
    fd = -1;
    if (e != 0 || rename(tmp, path) != 0)
        goto fail;
    free(tmp);
    return 0;
fail:
    e = errno;
    snprintf(why, whylen, "cannot write %s: %s", path, strerror(e));
    if (fd >= 0)
        close(fd);
    unlink(tmp);
    free(tmp);
    return e ? e : EIO;
}
