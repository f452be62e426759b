/* What a GPU core dump file holds, read from its own tables without a debugger (coredump_elf.c): the driver writes
 * an ELF file whose sections of private types are tables of devices, grids, blocks (CTAs), warps and lanes. Their
 * sizes alone say whether any thread's state is in the dump: a faulting store is often reported after its warp
 * (and its whole kernel) has exited, and such a dump holds no warp whose registers could give the address. */
#ifndef CULPRIT_CLI_COREDUMP_ELF_H
#define CULPRIT_CLI_COREDUMP_ELF_H

/* Entries of each kind of table, summed over the dump's sections of that kind. */
struct coredump_census {
    long devices; /* device table entries */
    long grids;   /* grid table entries: kernels resident when the dump was written */
    long blocks;  /* CTA table entries */
    long warps;   /* warp table entries */
    long lanes;   /* lane table entries */
};

/* Reads path's section headers (a regular file, links not followed). Returns 0 with *c filled, or -1 with errno:
 * ENOEXEC when the file is not a 64-bit little-endian ELF file with a device table (not a GPU core dump, or cut
 * short), EFBIG when its section table is implausibly large, else the open or read's error. */
int coredump_census(const char *path, struct coredump_census *c);

#endif
