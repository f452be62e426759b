/* The shape of a GPU core dump file as the simulated driver writes it (fc_coredump.c) and the unit tests of
 * culprit's dump reader build it: an ELF core file with an optional note section, then tables of the driver's
 * section types (SHT_LOUSER + n) of zeroed entries, then the section headers (section 0 empty). Header only. */
#ifndef FAKECUDA_FC_DUMPFILE_H
#define FAKECUDA_FC_DUMPFILE_H

#include <elf.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* One table section: its type (the whole sh_type) and size in bytes (entries * entsize). */
struct fc_dump_table {
    unsigned type;
    unsigned long long size;
    unsigned entsize;
};

static inline int fc_dumpfile_put(int fd, const void *buf, size_t n)
{
    for (size_t done = 0; done < n;) {
        ssize_t w = write(fd, (const char *)buf + done, n - done);
        if (w <= 0)
            return -1;
        done += (size_t)w;
    }
    return 0;
}

/* Writes the file to fd: note (notelen bytes, none when 0) and the n tables. extended: e_shnum 0 and the section
 * count in section 0's sh_size, as ELF does past 65,279 sections. Returns 0, or -1 when a write failed. */
static inline int fc_dumpfile_write(int fd, const char *note, size_t notelen, const struct fc_dump_table *t, int n,
                                    int extended)
{
    static const char zeros[4096];
    int nsec = n + 1 + (notelen > 0);
    Elf64_Ehdr eh;
    memset(&eh, 0, sizeof eh);
    memcpy(eh.e_ident, ELFMAG, SELFMAG);
    eh.e_ident[EI_CLASS] = ELFCLASS64;
    eh.e_ident[EI_DATA] = ELFDATA2LSB;
    eh.e_ident[EI_VERSION] = EV_CURRENT;
    eh.e_type = ET_CORE;
    eh.e_version = EV_CURRENT;
    eh.e_ehsize = sizeof eh;
    eh.e_shentsize = sizeof(Elf64_Shdr);
    eh.e_shnum = extended ? 0 : (Elf64_Half)nsec;
    unsigned long long off = sizeof eh + notelen;
    for (int i = 0; i < n; i++)
        off += t[i].size;
    eh.e_shoff = off;
    if (fc_dumpfile_put(fd, &eh, sizeof eh) || (notelen && fc_dumpfile_put(fd, note, notelen)))
        return -1;
    for (int i = 0; i < n; i++)
        for (unsigned long long left = t[i].size; left;) {
            size_t m = left < sizeof zeros ? (size_t)left : sizeof zeros;
            if (fc_dumpfile_put(fd, zeros, m))
                return -1;
            left -= m;
        }
    Elf64_Shdr *sh = calloc((size_t)nsec, sizeof *sh);
    if (!sh)
        return -1;
    int k = 1;
    if (extended)
        sh[0].sh_size = (Elf64_Xword)nsec;
    if (notelen) {
        sh[k].sh_type = SHT_NOTE;
        sh[k].sh_offset = sizeof eh;
        sh[k++].sh_size = notelen;
    }
    off = sizeof eh + notelen;
    for (int i = 0; i < n; i++, k++) {
        sh[k].sh_type = t[i].type;
        sh[k].sh_offset = off;
        sh[k].sh_size = t[i].size;
        sh[k].sh_entsize = t[i].entsize;
        off += t[i].size;
    }
    int rc = fc_dumpfile_put(fd, sh, sizeof *sh * (size_t)nsec);
    free(sh);
    return rc;
}

#endif
