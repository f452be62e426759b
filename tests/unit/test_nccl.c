/* Unit test: NCCL kernel names, current and older, mangled, demangled and as device asserts spell them, decode
 * into collective, reduction, type, algorithm and protocol; other names are not NCCL's. */
#include "render/nccl.h"
#include "check.h"

#include <string.h>

static int same(const struct nccl_kernel *k, const char *coll, const char *op, const char *ty, const char *algo,
                const char *proto) {
  return !strcmp(k->collective, coll) && !strcmp(k->op, op) && !strcmp(k->dtype, ty) && !strcmp(k->algorithm, algo) &&
         !strcmp(k->protocol, proto);
}

#define SHOW(k) "%s|%s|%s|%s|%s", (k).collective, (k).op, (k).dtype, (k).algorithm, (k).protocol

int main(void) {
  struct nccl_kernel k;
  char out[160];

  CHECK(nccl_decode("ncclDevKernel_AllReduce_Sum_f32_RING_LL", &k) == 0 &&
            same(&k, "AllReduce", "sum", "f32", "ring", "LL"),
        SHOW(k));
  CHECK(!strcmp(nccl_describe(&k, out, sizeof out), "NCCL AllReduce (sum, f32, ring, LL)"), "%s", out);
  /* as the report holds it: demangled with its argument list, or mangled */
  CHECK(nccl_decode("ncclDevKernel_AllReduce_Sum_bf16_TREE_LL128(ncclDevKernelArgsStorage<4096ul>)", &k) == 0 &&
            same(&k, "AllReduce", "sum", "bf16", "tree", "LL128"),
        SHOW(k));
  CHECK(nccl_decode("_Z39ncclDevKernel_AllReduce_Sum_f32_RING_LL24ncclDevKernelArgsStorageILm4096EE", &k) == 0 &&
            same(&k, "AllReduce", "sum", "f32", "ring", "LL"),
        SHOW(k));
  CHECK(nccl_decode("void ncclDevKernel_ReduceScatter_PreMulSum_f16_PAT_SIMPLE(ncclDevKernelArgsStorage<4096UL>)",
                    &k) == 0 &&
            same(&k, "ReduceScatter", "premulsum", "f16", "pat", "Simple"),
        SHOW(k));
  CHECK(nccl_decode("ncclDevKernel_AllGather_RING_LL", &k) == 0 && same(&k, "AllGather", "", "", "ring", "LL"),
        SHOW(k));
  CHECK(!strcmp(nccl_describe(&k, out, sizeof out), "NCCL AllGather (ring, LL)"), "%s", out);
  CHECK(nccl_decode("ncclDevKernel_Broadcast_RING_SIMPLE", &k) == 0 && same(&k, "Broadcast", "", "", "ring", "Simple"),
        SHOW(k));
  CHECK(nccl_decode("ncclDevKernel_AllReduce_MinMax_i32_COLLNET_DIRECT_SIMPLE", &k) == 0 &&
            same(&k, "AllReduce", "min/max", "i32", "collnet_direct", "Simple"),
        SHOW(k));
  CHECK(nccl_decode("ncclDevKernel_AllReduce_Sum_f8e4m3_NVLS_TREE_SIMPLE", &k) == 0 &&
            same(&k, "AllReduce", "sum", "f8e4m3", "nvls_tree", "Simple"),
        SHOW(k));
  CHECK(nccl_decode("ncclDevKernel_AllReduce_Sum_u64_NVLS_SIMPLE", &k) == 0 &&
            same(&k, "AllReduce", "sum", "u64", "nvls", "Simple"),
        SHOW(k));
  CHECK(nccl_decode("ncclDevKernel_Reduce_Prod_f64_RING_LL", &k) == 0 &&
            same(&k, "Reduce", "prod", "f64", "ring", "LL"),
        SHOW(k));
  CHECK(nccl_decode("ncclDevKernel_SendRecv(ncclDevKernelArgsStorage<4096ul>)", &k) == 0 &&
            same(&k, "SendRecv", "", "", "", ""),
        SHOW(k));
  CHECK(!strcmp(nccl_describe(&k, out, sizeof out), "NCCL SendRecv"), "%s", out);
  CHECK(nccl_decode("ncclDevKernel_Generic_4", &k) == 0 && same(&k, "Generic", "", "", "", ""), SHOW(k));
  CHECK(nccl_decode("ncclDevKernel_Generic", &k) == 0 && !strcmp(k.collective, "Generic"));
  CHECK(strstr(nccl_describe(&k, out, sizeof out), "any collective") != NULL, "%s", out);

  /* older releases: ncclKernel_<Coll>_<ALGO>_<PROTO>_<Op>_<type>, the type in C spelling */
  CHECK(nccl_decode("ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm*, unsigned long, ncclWork*)", &k) == 0 &&
            same(&k, "AllReduce", "sum", "f32", "ring", "LL"),
        SHOW(k));
  CHECK(nccl_decode("_Z40ncclKernel_AllReduce_TREE_LL128_Sum_halfP11ncclDevCommmP8ncclWork", &k) == 0 &&
            same(&k, "AllReduce", "sum", "f16", "tree", "LL128"),
        SHOW(k));
  CHECK(nccl_decode("ncclKernel_ReduceScatter_RING_SIMPLE_Max___nv_bfloat16", &k) == 0 &&
            same(&k, "ReduceScatter", "max", "bf16", "ring", "Simple"),
        SHOW(k));
  CHECK(nccl_decode("ncclKernel_AllReduce_COLLNET_CHAIN_SIMPLE_Min_uint64_t", &k) == 0 &&
            same(&k, "AllReduce", "min", "u64", "collnet_chain", "Simple"),
        SHOW(k));
  /* the dummy reduction and type of collectives that only move data are left out */
  CHECK(nccl_decode("ncclKernel_AllGather_RING_LL_Sum_int8_t", &k) == 0 && same(&k, "AllGather", "", "", "ring", "LL"),
        SHOW(k));
  CHECK(nccl_decode("ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_t", &k) == 0 &&
            same(&k, "SendRecv", "", "", "ring", "Simple"),
        SHOW(k));

  /* pieces it does not know are left out rather than guessed */
  CHECK(nccl_decode("ncclDevKernel_AllReduce_Sum_f32_WARP_LL", &k) == 0 && same(&k, "AllReduce", "sum", "f32", "", ""),
        SHOW(k));
  CHECK(!strcmp(nccl_describe(&k, out, sizeof out), "NCCL AllReduce (sum, f32)"), "%s", out);

  /* not NCCL's */
  const char *others[] = {"write_oob(int*, int)",
                          "_Z9write_oobPii",
                          "ncclDevFunc_AllReduce_Sum_f32_RING_LL",
                          "",
                          "ncclDevKernel_",
                          "ncclDevKernel_lower_case",
                          "_Z",
                          "_Z999ncclDevKernel_X",
                          "void at::native::vectorized_elementwise_kernel<4>(int)",
                          "nccl",
                          NULL};
  for (int i = 0; others[i]; i++) CHECK(nccl_decode(others[i], &k) == -1, "%s decoded as %s", others[i], k.collective);
  CHECK(nccl_decode(NULL, &k) == -1);
  CHECK(nccl_describe_name("step(float*, int)", out, sizeof out) == NULL);
  CHECK(nccl_describe_name("ncclDevKernel_AllReduce_Sum_f32_RING_LL", out, sizeof out) != NULL &&
        !strcmp(out, "NCCL AllReduce (sum, f32, ring, LL)"));
  /* a small buffer is cut, never overrun */
  char tiny[12];
  nccl_decode("ncclDevKernel_AllReduce_Sum_f32_RING_LL", &k);
  nccl_describe(&k, tiny, sizeof tiny);
  CHECK(strlen(tiny) == sizeof tiny - 1 && !strncmp(tiny, "NCCL AllRed", 11), "%s", tiny);
  return CHECK_DONE();
}
