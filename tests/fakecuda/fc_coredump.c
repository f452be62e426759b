/* The simulated driver's GPU core dump (SPEC.md): on a scripted fault with CUDA_ENABLE_COREDUMP_ON_EXCEPTION=1, an
 * ELF file shaped like the driver's (a device table, grid, CTA, warp and lane tables of the driver's section
 * types, zeroed entries of the sizes the H200's dumps declared), holding in a note section the short text a test's
 * stand-in debugger reads back; then the process aborts, as the driver aborts it. */
#include "fc_internal.h"

#include <elf.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* One section the dump holds after the ELF header: its type and size (entries of entsize bytes, or bytes). */
struct fc_dump_section {
    unsigned type;
    unsigned long long size;
    unsigned entsize;
};

/* The dump file's name: CUDA_COREDUMP_FILE with %h (host name) and %p (pid) expanded. */
static void fc_dump_path(char *path, size_t cap)
{
    const char *pat = getenv("CUDA_COREDUMP_FILE");
    char host[256] = "";
    size_t k = 0;
    gethostname(host, sizeof host - 1);
    if (!pat || !*pat)
        pat = "core_%h_%p.nvcudmp";
    for (const char *p = pat; *p && k + 300 < cap; p++) {
        if (p[0] == '%' && (p[1] == 'h' || p[1] == 'p')) {
            k += p[1] == 'h' ? (size_t)snprintf(path + k, cap - k, "%s", host)
                             : (size_t)snprintf(path + k, cap - k, "%d", (int)getpid());
            p++;
        } else {
            path[k++] = *p;
        }
    }
    path[k] = '\0';
}

static int fc_write_all(int fd, const void *buf, size_t n)
{
    for (size_t done = 0; done < n;) {
        ssize_t w = write(fd, (const char *)buf + done, n - done);
        if (w <= 0)
            return -1;
        done += (size_t)w;
    }
    return 0;
}

/* Writes the ELF file: header, the note (text), each table's zeroed entries, then the section headers. */
static void fc_write_dump(int fd, const char *text, size_t textlen, const struct fc_dump_section *t, int n)
{
    static const char zeros[4096];
    Elf64_Ehdr eh = {0};
    memcpy(eh.e_ident, ELFMAG, SELFMAG);
    eh.e_ident[EI_CLASS] = ELFCLASS64;
    eh.e_ident[EI_DATA] = ELFDATA2LSB;
    eh.e_ident[EI_VERSION] = EV_CURRENT;
    eh.e_type = ET_CORE;
    eh.e_version = EV_CURRENT;
    eh.e_ehsize = sizeof eh;
    eh.e_shentsize = sizeof(Elf64_Shdr);
    eh.e_shnum = (Elf64_Half)(n + 2); /* the empty section 0 and the note */
    unsigned long long off = sizeof eh + textlen;
    for (int i = 0; i < n; i++)
        off += t[i].size;
    eh.e_shoff = off;
    if (fc_write_all(fd, &eh, sizeof eh) || fc_write_all(fd, text, textlen))
        return;
    for (int i = 0; i < n; i++)
        for (unsigned long long left = t[i].size; left;) {
            size_t m = left < sizeof zeros ? (size_t)left : sizeof zeros;
            if (fc_write_all(fd, zeros, m))
                return;
            left -= m;
        }
    Elf64_Shdr sh[2 + 8] = {{0}};
    sh[1].sh_type = SHT_NOTE;
    sh[1].sh_offset = sizeof eh;
    sh[1].sh_size = textlen;
    off = sizeof eh + textlen;
    for (int i = 0; i < n && i < 8; i++) {
        sh[2 + i].sh_type = t[i].type;
        sh[2 + i].sh_offset = off;
        sh[2 + i].sh_size = t[i].size;
        sh[2 + i].sh_entsize = t[i].entsize;
        off += t[i].size;
    }
    fc_write_all(fd, sh, sizeof(Elf64_Shdr) * (size_t)(n + 2));
}

void fc_coredump(const struct fc_op *op)
{
    const char *on = getenv("CUDA_ENABLE_COREDUMP_ON_EXCEPTION"), *w = getenv("FAKECUDA_COREDUMP_WARPS");
    char path[4096], text[512];
    if (!on || strcmp(on, "1") != 0)
        return;
    fc_dump_path(path, sizeof path);
    /* the faulting warp and its 32 lanes; FAKECUDA_COREDUMP_WARPS=0: no warp at all (the kernel had finished);
     * =others: 3 warps of other work, the faulting one gone */
    int none = w && !strcmp(w, "0"), others = w && !strcmp(w, "others");
    unsigned long long warps = none ? 0 : others ? 3 : 1;
    int n = snprintf(text, sizeof text,
                     "fakecuda-coredump\nexception %s\nkernel %s\ngrid %u,%u,%u\nblock %u,%u,%u\narg0 0x%llx\n"
                     "faulting-warp %d\n",
                     op->fault == CUDA_ERROR_ASSERT               ? "Warp Assert"
                     : op->fault == CUDA_ERROR_MISALIGNED_ADDRESS ? "Warp Misaligned Address"
                                                                  : "Warp Illegal Address",
                     op->func ? op->func->name : "kernel", op->grid[0], op->grid[1], op->grid[2], op->block[0],
                     op->block[1], op->block[2], op->arg0, !none && !others);
    if (n < 0 || n >= (int)sizeof text)
        n = (int)sizeof text - 1;
    const struct fc_dump_section tables[] = {
        {SHT_LOUSER + 9, 88, 88},               /* devices */
        {SHT_LOUSER + 12, warps * 136, 136},    /* grids */
        {SHT_LOUSER + 13, warps * 56, 56},      /* CTAs */
        {SHT_LOUSER + 14, warps * 40, 40},      /* warps */
        {SHT_LOUSER + 15, warps * 32 * 48, 48}, /* lanes */
    };
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd >= 0) { /* the abort below happens all the same */
        fc_write_dump(fd, text, (size_t)n + 1, tables, (int)(sizeof tables / sizeof tables[0]));
        close(fd);
    }
    static const char msg[] = "Starting GPU coredump generation (simulated)\n";
    if (write(2, msg, sizeof msg - 1) < 0) { /* nothing to do */
    }
    abort();
}
