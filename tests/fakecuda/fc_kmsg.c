/* The simulated driver's part of the kernel's log (SPEC.md): when a scripted fault with an offset= fires and
 * FAKECUDA_KMSG names a file, the line the NVIDIA kernel module logs for a GPU memory fault (Xid 31) is appended to
 * it as a /dev/kmsg record, with this process's pid and name, the access, and the 4 KiB page of arg0 + offset, in
 * the words the H200's driver used. */
#include "fc_internal.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

void fc_kmsg(const struct fc_op *op)
{
    const char *path = getenv("FAKECUDA_KMSG");
    char comm[32] = "", line[600];
    struct timespec ts;
    const char *any = getenv("FAKECUDA_KMSG_ANY"); /* a line whatever the fault: one that is not the error's */
    if (!path || !*path || !op->spec || !op->spec->has_offset ||
        (op->fault != CUDA_ERROR_ILLEGAL_ADDRESS && !(any && !strcmp(any, "1"))))
        return;
    int fd = open("/proc/self/comm", O_RDONLY | O_CLOEXEC);
    ssize_t n = fd >= 0 ? read(fd, comm, sizeof comm - 1) : 0;
    if (fd >= 0)
        close(fd);
    while (n > 0 && comm[n - 1] == '\n')
        n--;
    comm[n > 0 ? n : 0] = '\0';
    unsigned long long page = (op->arg0 + (unsigned long long)op->spec->offset) & ~0xfffULL;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    int len = snprintf(line, sizeof line,
                       "3,%d,%lld,-;NVRM: Xid (PCI:0000:00:06): 31, pid=%d, name=%s, channel 0x0000000a, intr "
                       "00000000. MMU Fault: ENGINE GRAPHICS GPC1 GPCCLIENT_T1_8 faulted @ 0x%llx_%08llx. Fault is of "
                       "type FAULT_PDE ACCESS_TYPE_VIRT_%s\n",
                       (int)getpid(), (long long)ts.tv_sec * 1000000 + ts.tv_nsec / 1000, (int)getpid(), comm,
                       page >> 32, page & 0xffffffffULL, op->spec->write ? "WRITE" : "READ");
    if (len <= 0 || len >= (int)sizeof line)
        return;
    fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0)
        return;
    if (write(fd, line, (size_t)len) < 0) { /* a test that cannot write its log sees no line */
    }
    close(fd);
}
