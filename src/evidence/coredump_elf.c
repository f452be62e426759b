/* A GPU core dump's own tables (coredump_elf.h): the section header table of the ELF file the driver wrote, each
 * section of a table type counted by its size over its entry size. Nothing but the ELF header and the section
 * headers is read; the file is untrusted (any size, cut short, not ELF at all) and every offset is checked. */
#define _GNU_SOURCE
#include "coredump_elf.h"

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The driver's section types (SHT_LOUSER + n), as its dumps declare them. */
#define CD_SHT_DEV_TABLE (SHT_LOUSER + 9)
#define CD_SHT_GRID_TABLE (SHT_LOUSER + 12)
#define CD_SHT_CTA_TABLE (SHT_LOUSER + 13)
#define CD_SHT_WP_TABLE (SHT_LOUSER + 14)
#define CD_SHT_LN_TABLE (SHT_LOUSER + 15)

/* Which count each table type adds to. */
static const struct {
    uint32_t type; /* section type */
    size_t off;    /* its count in struct coredump_census */
} cd_tables[] = {
    {CD_SHT_DEV_TABLE, offsetof(struct coredump_census, devices)},
    {CD_SHT_GRID_TABLE, offsetof(struct coredump_census, grids)},
    {CD_SHT_CTA_TABLE, offsetof(struct coredump_census, blocks)},
    {CD_SHT_WP_TABLE, offsetof(struct coredump_census, warps)},
    {CD_SHT_LN_TABLE, offsetof(struct coredump_census, lanes)},
};

#define CD_MAX_SECTIONS (1u << 24) /* 8 GPUs of 144 SMs, 64 warps of 32 lanes, two sections a lane: 4.7 million */

/* Reads exactly n bytes at off; -1 with errno (ENOEXEC when the file ends first). */
static int cd_pread(int fd, void *buf, size_t n, off_t off)
{
    size_t got = 0;
    while (got < n) {
        ssize_t r = pread(fd, (char *)buf + got, n - got, off + (off_t)got);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0)
            return -1;
        if (r == 0) {
            errno = ENOEXEC;
            return -1;
        }
        got += (size_t)r;
    }
    return 0;
}

static int cd_census_fd(int fd, struct coredump_census *c)
{
    Elf64_Ehdr eh;
    struct stat st;
    if (fstat(fd, &st) != 0)
        return -1;
    if (!S_ISREG(st.st_mode)) {
        errno = ENOEXEC;
        return -1;
    }
    if (cd_pread(fd, &eh, sizeof eh, 0) != 0)
        return -1;
    if (memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 || eh.e_ident[EI_CLASS] != ELFCLASS64 ||
        eh.e_ident[EI_DATA] != ELFDATA2LSB || eh.e_shentsize != sizeof(Elf64_Shdr) || eh.e_shoff == 0) {
        errno = ENOEXEC;
        return -1;
    }
    uint64_t n = eh.e_shnum;
    if (n == 0) { /* more sections than e_shnum holds: the count is section 0's size */
        Elf64_Shdr s0;
        if (cd_pread(fd, &s0, sizeof s0, (off_t)eh.e_shoff) != 0)
            return -1;
        n = s0.sh_size;
    }
    if (n > CD_MAX_SECTIONS) {
        errno = EFBIG;
        return -1;
    }
    if (eh.e_shoff > (uint64_t)st.st_size || n * sizeof(Elf64_Shdr) > (uint64_t)st.st_size - eh.e_shoff) {
        errno = ENOEXEC;
        return -1;
    }
    /* in chunks: a dump of a whole busy GPU has hundreds of thousands of sections (one per lane's registers) */
    enum { CHUNK = 1024 };
    Elf64_Shdr *sh = malloc(CHUNK * sizeof *sh);
    if (!sh)
        return -1;
    memset(c, 0, sizeof *c);
    for (uint64_t at = 0; at < n; at += CHUNK) {
        size_t m = n - at < CHUNK ? (size_t)(n - at) : CHUNK;
        if (cd_pread(fd, sh, m * sizeof *sh, (off_t)(eh.e_shoff + at * sizeof *sh)) != 0) {
            int saved = errno;
            free(sh);
            errno = saved;
            return -1;
        }
        for (size_t i = 0; i < m; i++)
            for (size_t k = 0; k < sizeof cd_tables / sizeof cd_tables[0]; k++)
                if (sh[i].sh_type == cd_tables[k].type && sh[i].sh_entsize &&
                    sh[i].sh_size / sh[i].sh_entsize < (uint64_t)(CD_MAX_SECTIONS * 64))
                    *(long *)((char *)c + cd_tables[k].off) += (long)(sh[i].sh_size / sh[i].sh_entsize);
    }
    free(sh);
    if (!c->devices) { /* an ELF file, but not one the driver wrote for a GPU */
        errno = ENOEXEC;
        return -1;
    }
    return 0;
}

int coredump_census(const char *path, struct coredump_census *c)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
    if (fd < 0)
        return -1;
    int rc = cd_census_fd(fd, c);
    int saved = errno;
    close(fd);
    errno = saved;
    return rc;
}
