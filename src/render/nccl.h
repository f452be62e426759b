/* NCCL's kernels, read from their names: which collective, reduction, element type, algorithm and protocol a
 * kernel such as ncclDevKernel_AllReduce_Sum_f32_RING_LL runs, so reports can say "NCCL AllReduce (sum, f32,
 * ring, LL)". Names only; nothing here knows NCCL's state. */
#ifndef CULPRIT_REPORT_NCCL_H
#define CULPRIT_REPORT_NCCL_H

#include <stddef.h>

/* One decoded kernel name; a field the name does not carry is "". */
struct nccl_kernel {
    char collective[24]; /* AllReduce, AllGather, ReduceScatter, Broadcast, Reduce, SendRecv, Generic */
    char op[16];         /* sum, prod, min, max, min/max, premulsum, sumpostdiv */
    char dtype[16];      /* i8, u8, i32, u32, i64, u64, f16, f32, f64, bf16, f8e4m3, f8e5m2 */
    char algorithm[24];  /* ring, tree, collnet_direct, collnet_chain, nvls, nvls_tree, pat */
    char protocol[8];    /* LL, LL128, Simple */
};

/* Decodes a kernel name as a report holds it: demangled with or without its argument list, mangled (_Z...), or
 * as a device-assert line spells it ("void ncclDevKernel_..."). NCCL 2.19 on names its kernels
 * ncclDevKernel_<Coll>[_<Op>_<type>]_<ALGO>_<PROTO>, ncclDevKernel_SendRecv and ncclDevKernel_Generic[_N];
 * older releases ncclKernel_<Coll>_<ALGO>_<PROTO>_<Op>_<type>. Returns 0 and fills *k for an NCCL kernel,
 * -1 for any other name. */
int nccl_decode(const char *name, struct nccl_kernel *k);

/* "NCCL AllReduce (sum, f32, ring, LL)", with the parts that are known, into out. Returns out. */
const char *nccl_describe(const struct nccl_kernel *k, char *out, size_t outsz);

/* Shorthand: the description of name when it is an NCCL kernel (into out), else NULL. */
const char *nccl_describe_name(const char *name, char *out, size_t outsz);

#endif
