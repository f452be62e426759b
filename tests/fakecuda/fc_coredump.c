/* The simulated driver's GPU core dump (SPEC.md): on a scripted fault with CUDA_ENABLE_COREDUMP_ON_EXCEPTION=1, an
 * ELF file shaped like the driver's (a device table, grid, CTA, warp and lane tables of the driver's section
 * types, zeroed entries of the sizes the H200's dumps declared), holding in a note section the short text a test's
 * stand-in debugger reads back; then the process aborts, as the driver aborts it. */
#include "fc_internal.h"
#include "fc_dumpfile.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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
    const struct fc_dump_table tables[] = {
        {SHT_LOUSER + 9, 88, 88},               /* devices */
        {SHT_LOUSER + 12, warps * 136, 136},    /* grids */
        {SHT_LOUSER + 13, warps * 56, 56},      /* CTAs */
        {SHT_LOUSER + 14, warps * 40, 40},      /* warps */
        {SHT_LOUSER + 15, warps * 32 * 48, 48}, /* lanes */
    };
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd >= 0) { /* the abort below happens all the same */
        if (fc_dumpfile_write(fd, text, (size_t)n + 1, tables, (int)(sizeof tables / sizeof tables[0]), 0)) {
        }
        close(fd);
    }
    static const char msg[] = "Starting GPU coredump generation (simulated)\n";
    if (write(2, msg, sizeof msg - 1) < 0) { /* nothing to do */
    }
    abort();
}
