/* Unit test of the device-assert lines (src/evidence/asserts.c, tritonsrc.c): parsing lines as devices print
 * them (PyTorch's lambda kernels print "operator()", Triton's and Inductor's `unknown`), finding the @triton.jit
 * function that holds a Triton assert's line in its file, and narrowing a verdict of candidates to the one launch
 * the asserts single out, by name, by block and thread indices against each candidate's grid and block, by
 * source file, and through the kernels captured into a graph; never to a launch the facts do not single out. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "../../src/evidence/asserts.h"
#include "../../src/evidence/tritonsrc.h"
#include "../../src/render/json.h"
#include "check.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* A candidate launch: seq, kernel (readable), mangled, grid x, block x. */
static void launch_json(char *out, size_t n, int seq, const char *kernel, const char *mangled, int grid, int block) {
  snprintf(out, n,
           "{\"seq\": %d, \"kernel\": \"%s\", \"mangled\": \"%s\", \"grid\": [%d, 1, 1], \"block\": [%d, 1, 1],"
           " \"stream\": \"0x0\", \"device\": 0}",
           seq, kernel, mangled, grid, block);
}

/* A report whose verdict is candidates a and b. */
static struct json *report_of(const char *a, const char *b) {
  char text[4096];
  struct json *doc = NULL;
  snprintf(text, sizeof text,
           "{\"kind\": \"fault\", \"verdict\": {\"certainty\": \"candidates\", \"reason\": \"two streams\","
           " \"window\": {\"first\": 1, \"last\": 2}}, \"culprit\": null, \"candidates\": [%s, %s], \"history\": []}",
           a, b);
  if (json_parse(text, strlen(text), &doc, NULL) != 0) return NULL;
  return doc;
}

/* A report whose verdict is the candidates given as JSON text (launches separated by commas). */
static struct json *report_of_list(const char *list) {
  char *text = NULL;
  struct json *doc = NULL;
  if (asprintf(&text,
               "{\"kind\": \"fault\", \"verdict\": {\"certainty\": \"candidates\", \"reason\": \"two streams\","
               " \"window\": {\"first\": 1, \"last\": 40}}, \"culprit\": null, \"candidates\": [%s],"
               " \"history\": []}",
               list) < 0)
    return NULL;
  if (json_parse(text, strlen(text), &doc, NULL) != 0) doc = NULL;
  free(text);
  return doc;
}

/* A graph launch (seq) whose captured kernels are nodes (JSON text), or "" for a graph listed without them. */
static void graph_json(char *out, size_t n, int seq, const char *nodes) {
  snprintf(out, n,
           "{\"seq\": %d, \"api\": \"cuGraphLaunch\", \"kind\": \"graph\", \"kernel\": \"CUDA graph 0x6c0a1b0\","
           " \"grid\": [0, 0, 0], \"block\": [0, 0, 0], \"stream\": \"0x0\", \"device\": 0%s%s%s}",
           seq, *nodes ? ", \"graph_nodes\": [" : "", nodes, *nodes ? "]" : "");
}

static void add(struct dev_asserts *as, const char *line) {
  size_t before = as->n;
  asserts_add(as, line, strlen(line), "stdout");
  CHECK(as->n == before + 1, "not parsed as an assert: %s", line);
}

/* Writes text into dir/name; returns the path (static buffer of the caller's). */
static const char *write_file(char *path, size_t n, const char *dir, const char *name, const char *text) {
  FILE *f;
  snprintf(path, n, "%s/%s", dir, name);
  f = fopen(path, "w");
  CHECK(f != NULL, "cannot write %s", path);
  if (f) {
    fputs(text, f);
    fclose(f);
  }
  return path;
}

/* The line (from 1) of text that holds needle, 0 if none. */
static long line_of(const char *text, const char *needle) {
  const char *p = strstr(text, needle);
  long line = 1;
  if (!p) return 0;
  for (const char *q = text; q < p; q++) line += *q == '\n';
  return line;
}

/* The seqs in an assert's "launches", as "a,b,c". */
static const char *launches_of(const struct json *a, char *out, size_t n) {
  const struct json *l = json_get(a, "launches");
  size_t used = 0;
  out[0] = '\0';
  for (size_t i = 0; i < json_len(l) && used < n; i++)
    used += (size_t)snprintf(out + used, n - used, "%s%lld", i ? "," : "", json_at(l, i)->inum);
  return out;
}

/* The seq of the narrowed culprit, 0 when the verdict stayed candidates. */
static long long narrowed(struct dev_asserts *as, struct json *doc, const char **reason) {
  int changed = 0;
  CHECK(asserts_annotate(as, doc, &changed) == 0);
  const struct json *v = json_get(doc, "verdict");
  *reason = json_get_str(v, "reason");
  if (strcmp(json_get_str(v, "certainty"), "exact") != 0) return 0;
  return json_get_int(json_get(doc, "culprit"), "seq", -1);
}

/* A Python file of Triton kernels: an inlined helper holding an assert, an autotuned kernel calling it (a
 * docstring and a continuation line indented less than its body), a kernel with its own assert, and a plain
 * function. */
static const char TRITON_PY[] =
    "import triton\n"
    "import triton.language as tl\n"
    "\n"
    "\n"
    "@triton.jit\n"
    "def check_slot(slot, n_slots):\n"
    "    tl.device_assert((slot >= 0) & (slot < n_slots), \"slot in range\")\n"
    "\n"
    "\n"
    "@triton.autotune(\n"
    "    configs=[triton.Config({\"BLOCK\": 64}), triton.Config({\"BLOCK\": 128})],\n"
    "    key=[\"n_cols\"],\n"
    ")\n"
    "@triton.jit(debug=True)\n"
    "def dispatch_rows_kernel(x_ptr, out_ptr, slot_ptr, n_slots, n_cols, BLOCK: tl.constexpr):\n"
    "    \"\"\"Copies each row to its slot.\n"
    "Rows whose slot is out of range trip the assert (def fake(): at column 0).\n"
    "    \"\"\"\n"
    "    row = tl.program_id(0)\n"
    "    cols = tl.arange(0, BLOCK)\n"
    "    slot = tl.load(slot_ptr + row)\n"
    "    check_slot(slot, n_slots)\n"
    "    vals = tl.load(x_ptr + row * n_cols + cols,\n"
    "  mask=cols < n_cols)  # a continuation indented less than the body\n"
    "    tl.store(out_ptr + slot * n_cols + cols, vals, mask=cols < n_cols)\n"
    "\n"
    "\n"
    "@triton.jit(debug=True)\n"
    "def gather_rows_kernel(table_ptr, idx_ptr, out_ptr, n_rows, BLOCK: tl.constexpr):\n"
    "    pid = tl.program_id(0)\n"
    "    offs = pid * BLOCK + tl.arange(0, BLOCK)\n"
    "    idx = tl.load(idx_ptr + offs)\n"
    "    if idx.dtype == tl.int64:  # '#' and \"quotes\" in a comment\n"
    "        tl.device_assert(idx < n_rows, \"idx < n_rows\")\n"
    "    tl.store(out_ptr + offs, tl.load(table_ptr + idx))\n"
    "\n"
    "\n"
    "def launch(table, idx, out):\n"
    "    grid = (triton.cdiv(idx.numel(), 128),)\n"
    "    gather_rows_kernel[grid](table, idx, out, table.shape[0], BLOCK=128)\n"
    "    assert out is not None\n";

/* One kernel file of Inductor's cache, as it writes them: its decorators (the first over several lines), then
 * the kernel, whose indirect load is checked by a device assert. */
#define INDUCTOR_KERNEL                                                                                                \
  "\n"                                                                                                                 \
  "import triton\n"                                                                                                    \
  "import triton.language as tl\n"                                                                                     \
  "\n"                                                                                                                 \
  "from torch._inductor.runtime import triton_helpers, triton_heuristics\n"                                            \
  "from torch._inductor.runtime.triton_helpers import libdevice, math as tl_math\n"                                    \
  "from torch._inductor.runtime.hints import AutotuneHint, ReductionHint, TileHint, DeviceProperties\n"                \
  "triton_helpers.set_driver_to_gpu()\n"                                                                               \
  "\n"                                                                                                                 \
  "@triton_heuristics.pointwise(\n"                                                                                    \
  "    size_hints={'x': 1024}, \n"                                                                                     \
  "    filename=__file__,\n"                                                                                           \
  "    triton_meta={'signature': {'in_ptr0': '*i64', 'in_ptr1': '*fp32', 'out_ptr0': '*fp32', 'xnumel': "              \
  "'i32', 'XBLOCK': 'constexpr'}, 'device': DeviceProperties(type='cuda', index=0, cc=90), 'constants': {}},\n"        \
  "    inductor_meta={'grid_type': 'Grid1D', 'kernel_name': 'triton_poi_fused_index_mul_0', "                          \
  "'assert_indirect_indexing': True},\n"                                                                               \
  "    min_elem_per_thread=0\n"                                                                                        \
  ")\n"                                                                                                                \
  "@triton.jit\n"                                                                                                      \
  "def triton_poi_fused_index_mul_0(in_ptr0, in_ptr1, out_ptr0, xnumel, XBLOCK : tl.constexpr):\n"                     \
  "    xnumel = 1024\n"                                                                                                \
  "    xoffset = tl.program_id(0) * XBLOCK\n"                                                                          \
  "    xindex = xoffset + tl.arange(0, XBLOCK)[:]\n"                                                                   \
  "    xmask = xindex < xnumel\n"                                                                                      \
  "    x1 = xindex // 32\n"                                                                                            \
  "    x0 = (xindex % 32)\n"                                                                                           \
  "    tmp0 = tl.load(in_ptr0 + (x1), xmask, eviction_policy='evict_last')\n"                                          \
  "    tmp1 = tl.full([XBLOCK], 1000, tl.int32)\n"                                                                     \
  "    tmp2 = tmp0 + tmp1\n"                                                                                           \
  "    tmp3 = tmp0 < 0\n"                                                                                              \
  "    tmp4 = tl.where(tmp3, tmp2, tmp0)\n"                                                                            \
  "    tl.device_assert(((0 <= tmp4) & (tmp4 < 1000)) | ~(xmask), \"index out of bounds: 0 <= tmp4 < 1000\")\n"        \
  "    tmp6 = tl.load(in_ptr1 + (x0 + 32*tmp4), xmask)\n"                                                              \
  "    tl.store(out_ptr0 + (xindex), tmp6, xmask)\n"

/* Inductor's output code: each kernel's source held in a string, compiled from there. */
static const char INDUCTOR_WRAPPER[] =
    "from torch._inductor.async_compile import AsyncCompile\n"
    "async_compile = AsyncCompile()\n"
    "\n"
    "# kernel path: /tmp/torchinductor_u/ab/cabcdefgh.py\n"
    "triton_poi_fused_index_mul_0 = async_compile.triton('triton_poi_fused_index_mul_0', '''" INDUCTOR_KERNEL
    "''', device_str='cuda')\n"
    "\n"
    "\n"
    "def call(args):\n"
    "    arg0_1, arg1_1 = args\n"
    "    return (arg0_1, )\n";

int main(void) {
  struct dev_assert a;
  char l1[1024], l2[1024], l3[1024];
  const char *reason;

  /* Parsing: a lambda kernel's line, a named kernel's, a log prefix, a line that is not one. */
  const char *lam = "/pytorch/aten/src/ATen/native/cuda/ScatterGatherKernel.cu:163: operator(): block: [31,0,0], "
                    "thread: [0,0,0] Assertion `idx_dim >= 0 && idx_dim < index_size && \"index out of bounds\"` "
                    "failed.";
  CHECK(asserts_parse(lam, strlen(lam), &a) == 0);
  CHECK(!strcmp(a.kernel, "operator()") && a.line == 163 && a.block[0] == 31 && a.thread[0] == 0);
  CHECK(strstr(a.file, "ScatterGatherKernel.cu") != NULL);
  free(a.file), free(a.kernel), free(a.expr);
  const char *named = "[rank1]: /pytorch/aten/src/ATen/native/cuda/Indexing.cu:1553: void at::native::"
                      "vectorized_gather_kernel(char *, char *, T *, int64_t, int64_t, int64_t, int64_t, bool) "
                      "[with T = long, int64_t = long]: block: [81,0,0], thread: [64,0,0] Assertion `ind >= 0 && "
                      "ind < ind_dim_size && \"vectorized gather kernel index out of bounds\"` failed.";
  CHECK(asserts_parse(named, strlen(named), &a) == 0);
  CHECK(a.block[0] == 81 && a.thread[0] == 64 && strstr(a.kernel, "vectorized_gather_kernel") != NULL);
  CHECK(!strncmp(a.file, "[rank1]: /pytorch", 17));
  free(a.file), free(a.kernel), free(a.expr);
  CHECK(asserts_parse("loss 0.25", 9, &a) == -1);

  /* Two vectorized_gather_kernel candidates (token and position embeddings): only the first grid holds block
   * 81. */
  struct dev_asserts as;
  memset(&as, 0, sizeof as);
  add(&as, named);
  launch_json(l1, sizeof l1, 7,
              "void at::native::vectorized_gather_kernel<16, long>(char*, char*, long*, long, "
              "long, long, long, bool)",
              "_ZN2at6native24vectorized_gather_kernelILi16ElEEvPcS2_PT0_lllllb", 96, 128);
  launch_json(l2, sizeof l2, 9,
              "void at::native::vectorized_gather_kernel<16, long>(char*, char*, long*, long, "
              "long, long, long, bool)",
              "_ZN2at6native24vectorized_gather_kernelILi16ElEEvPcS2_PT0_lllllb", 8, 128);
  struct json *doc = report_of(l1, l2);
  CHECK(doc != NULL);
  CHECK(narrowed(&as, doc, &reason) == 7, "the grid that holds block 81 was not chosen");
  CHECK(reason && strstr(reason, "fit the grid and block of launch #7 alone"), "reason: %s", reason);
  CHECK(json_len(json_get(doc, "candidates_before_assert")) == 1);
  json_free(doc);

  /* Both grids hold the block: the facts do not single one out. */
  launch_json(l2, sizeof l2, 9,
              "void at::native::vectorized_gather_kernel<16, long>(char*, char*, long*, long, "
              "long, long, long, bool)",
              "_ZN2at6native24vectorized_gather_kernelILi16ElEEvPcS2_PT0_lllllb", 96, 128);
  doc = report_of(l1, l2);
  CHECK(narrowed(&as, doc, &reason) == 0, "narrowed between two launches the assert fits equally");
  json_free(doc);

  /* The thread index must fit the block too: a 64-thread block cannot hold thread 64. */
  launch_json(l2, sizeof l2, 9,
              "void at::native::vectorized_gather_kernel<16, long>(char*, char*, long*, long, "
              "long, long, long, bool)",
              "_ZN2at6native24vectorized_gather_kernelILi16ElEEvPcS2_PT0_lllllb", 96, 64);
  doc = report_of(l1, l2);
  CHECK(narrowed(&as, doc, &reason) == 7);
  json_free(doc);
  asserts_free(&as);

  /* operator() from ScatterGatherKernel.cu: of two elementwise launches whose grids both hold block 31, the one
   * whose name carries "scatter" and "gather". */
  add(&as, lam);
  launch_json(l1, sizeof l1, 3,
              "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>,"
              " std::array<char*, 1ul> >(int, at::native::FillFunctor<float>, std::array<char*, 1ul>)",
              "_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_11FillFunctorIfEESt5arrayIPcLm1EEEEviT0_T1_", 64,
              128);
  launch_json(l2, sizeof l2, 4,
              "void at::native::_scatter_gather_elementwise_kernel<128, 4, "
              "at::native::_cuda_scatter_gather_internal_kernel<true, float>::operator()(...)::{lambda(int)#1}>(int,"
              " {lambda(int)#1})",
              "_ZN2at6native32_scatter_gather_elementwise_kernelILi128ELi4EZNS0_x", 40, 128);
  doc = report_of(l1, l2);
  CHECK(narrowed(&as, doc, &reason) == 4, "the scatter/gather launch was not chosen by the assert's file");
  CHECK(reason && strstr(reason, "ScatterGatherKernel.cu") && strstr(reason, "carries that file's name"), "reason: %s",
        reason);
  json_free(doc);

  /* The same assert, but the fill kernel's grid cannot hold block 31: chosen by the indices alone. */
  launch_json(l1, sizeof l1, 3,
              "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>,"
              " std::array<char*, 1ul> >(int, at::native::FillFunctor<float>, std::array<char*, 1ul>)",
              "_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_11FillFunctorIfEESt5arrayIPcLm1EEEEviT0_T1_", 64,
              128);
  launch_json(l2, sizeof l2, 4, "void at::native::index_elementwise_kernel<128, 4>(long, {lambda(int)#1})",
              "_ZN2at6native24index_elementwise_kernelILi128ELi4EZx", 16, 128);
  doc = report_of(l1, l2);
  CHECK(narrowed(&as, doc, &reason) == 3, "the only grid that holds block 31 was not chosen");
  CHECK(reason && strstr(reason, "which fit the grid and block of launch #3 alone"), "reason: %s", reason);
  json_free(doc);

  /* Neither name carries the file's words and both grids fit: no narrowing. */
  launch_json(l2, sizeof l2, 4, "void at::native::index_elementwise_kernel<128, 4>(long, {lambda(int)#1})",
              "_ZN2at6native24index_elementwise_kernelILi128ELi4EZx", 64, 128);
  doc = report_of(l1, l2);
  CHECK(narrowed(&as, doc, &reason) == 0, "narrowed without a fact that singles a launch out");
  json_free(doc);
  asserts_free(&as);

  /* A named assert whose kernel is among the candidates once is chosen by name, as before. */
  add(&as, "fake.cu:8: void write_oob(...): block: [1,0,0], thread: [3,0,0] Assertion `idx < n` failed.");
  launch_json(l1, sizeof l1, 5, "step(float*, int)", "_Z4stepPfi", 4, 64);
  launch_json(l2, sizeof l2, 6, "write_oob(int*, int)", "_Z9write_oobPii", 4, 64);
  doc = report_of(l1, l2);
  CHECK(narrowed(&as, doc, &reason) == 6);
  CHECK(reason && strstr(reason, "the device assert names write_oob(int*, int)"), "reason: %s", reason);
  json_free(doc);
  asserts_free(&as);

  /* Triton's tl.device_assert prints `unknown` where the kernel's name goes: that is no name, so the indices
   * decide. Block 200 fits the grid of 256 programs only (the file is not there to read: no name from it). */
  add(&as, "/nonexistent/moe_dispatch.py:8: unknown: block: [200,0,0], thread: [64,0,0] Assertion `slot in "
           "range` failed.");
  launch_json(l1, sizeof l1, 11, "scale_rows_kernel", "", 16, 128);
  launch_json(l2, sizeof l2, 12, "gather_rows_kernel", "", 256, 128);
  doc = report_of(l1, l2);
  CHECK(narrowed(&as, doc, &reason) == 12, "the only grid that holds block 200 was not chosen: %s", reason);
  CHECK(reason && strstr(reason, "(in unknown) has block [200,0,0] and thread [64,0,0], which fit the grid and block "
                                 "of launch #12 alone"),
        "reason: %s", reason);
  json_free(doc);
  asserts_free(&as);

  /* The same assert in JSON: no function, and why not. */
  add(&as, "/nonexistent/moe_dispatch.py:8: unknown: block: [200,0,0], thread: [64,0,0] Assertion `slot in "
           "range` failed.");
  CHECK(as.a[0].function == NULL && as.a[0].unfound && strstr(as.a[0].unfound, "could not be read"), "unfound: %s",
        as.a[0].unfound ? as.a[0].unfound : "(null)");
  launch_json(l1, sizeof l1, 11, "scale_rows_kernel", "", 256, 128);
  doc = report_of(l1, l2);
  /* both grids hold block 200 now: the verdict stays, and says why the file did not help */
  CHECK(narrowed(&as, doc, &reason) == 0, "narrowed without a fact that singles a launch out");
  CHECK(reason && strstr(reason, "the device assert at /nonexistent/moe_dispatch.py:8 prints no kernel name") &&
            strstr(reason, "it could not be read (No such file or directory)"),
        "reason: %s", reason);
  {
    const struct json *a0 = json_at(json_get(doc, "device_asserts"), 0);
    char seqs[64];
    CHECK(a0 && json_get_str(a0, "function_unknown") && !json_get(a0, "function"));
    CHECK(!strcmp(launches_of(a0, seqs, sizeof seqs), "11,12"), "launches %s", seqs);
  }
  json_free(doc);
  asserts_free(&as);

  /* ---- Triton's form with its file: the @triton.jit function holding the line ---- */
  char dir[] = "/tmp/culprit-test-asserts-XXXXXX", py[512], line[1024], text[16384];
  struct tritonsrc_found found;
  char why[256];
  CHECK(mkdtemp(dir) != NULL);
  write_file(py, sizeof py, dir, "moe_kernels.py", TRITON_PY);

  /* the scanner itself: a nested block, an inlined helper and its caller, a continuation line, a plain
   * function, module level, a line past the end */
  CHECK(tritonsrc_find(py, line_of(TRITON_PY, "tl.device_assert(idx"), &found, why, sizeof why) == 0, "%s", why);
  CHECK(found.function && !strcmp(found.function, "gather_rows_kernel") && !strcmp(found.kernels, "gather_rows_kernel"),
        "function %s kernels %s", found.function, found.kernels);
  tritonsrc_free(&found);
  CHECK(tritonsrc_find(py, line_of(TRITON_PY, "tl.device_assert((slot"), &found, why, sizeof why) == 0, "%s", why);
  CHECK(found.function && !strcmp(found.function, "check_slot") &&
            !strcmp(found.kernels, "check_slot dispatch_rows_kernel"),
        "kernels %s", found.kernels);
  tritonsrc_free(&found);
  CHECK(tritonsrc_find(py, line_of(TRITON_PY, "  mask=cols"), &found, why, sizeof why) == 0 && found.function &&
            !strcmp(found.function, "dispatch_rows_kernel"),
        "%s", why);
  tritonsrc_free(&found);
  CHECK(tritonsrc_find(py, line_of(TRITON_PY, "    tl.store(out_ptr + slot"), &found, why, sizeof why) == 0 &&
            found.function && !strcmp(found.function, "dispatch_rows_kernel"),
        "after a docstring: %s", why);
  tritonsrc_free(&found);
  CHECK(tritonsrc_find(py, line_of(TRITON_PY, "assert out is"), &found, why, sizeof why) == ESRCH &&
            strstr(why, "is in launch, which is not a @triton.jit function"),
        "%s", why);
  CHECK(tritonsrc_find(py, 1, &found, why, sizeof why) == ESRCH && strstr(why, "not inside a function"), "%s", why);
  CHECK(tritonsrc_find(py, 999, &found, why, sizeof why) == ESRCH && strstr(why, "changed after"), "%s", why);
  CHECK(tritonsrc_find("/nonexistent/k.py", 3, &found, why, sizeof why) == ENOENT, "%s", why);
  /* a FIFO named by an assert line is refused, not waited on for a writer that never comes */
  char fifo[PATH_MAX];
  snprintf(fifo, sizeof fifo, "%s/fifo.py", dir);
  CHECK(mkfifo(fifo, 0600) == 0, "mkfifo: %s", strerror(errno));
  CHECK(tritonsrc_find(fifo, 3, &found, why, sizeof why) == EINVAL && strstr(why, "not a regular file"), "%s", why);
  unlink(fifo);
  /* Triton 2 appended the arguments' specialization to the name; nothing else passes for the function's name */
  CHECK(tritonsrc_same_kernel("gather_rows_kernel", 18, "gather_rows_kernel"));
  CHECK(tritonsrc_same_kernel("gather_rows_kernel_0d1d2de", 26, "gather_rows_kernel"));
  CHECK(tritonsrc_same_kernel("k_0d1c2d3", 9, "k"));
  CHECK(!tritonsrc_same_kernel("gather_rows_kernel_2", 20, "gather_rows_kernel"));
  CHECK(!tritonsrc_same_kernel("gather_rows_kernel_v2", 21, "gather_rows_kernel"));
  CHECK(!tritonsrc_same_kernel("gather_rows", 11, "gather_rows_kernel"));

  /* The seen case: block 200 of a Triton assert, the kernel's two launches with grids 256 and 16 (and another
   * kernel): the name leaves two, the block index one. */
  snprintf(line, sizeof line,
           "%s:%ld: unknown: block: [200,0,0], thread: [64,0,0] Assertion `idx < n_rows` "
           "failed.",
           py, line_of(TRITON_PY, "tl.device_assert(idx"));
  add(&as, line);
  CHECK(as.a[0].function && !strcmp(as.a[0].function, "gather_rows_kernel") && !as.a[0].unfound);
  launch_json(l1, sizeof l1, 21, "gather_rows_kernel", "", 16, 128);
  launch_json(l2, sizeof l2, 23, "gather_rows_kernel", "", 256, 128);
  launch_json(l3, sizeof l3, 22, "scale_rows_kernel", "", 256, 128);
  snprintf(text, sizeof text, "%s, %s, %s", l1, l3, l2);
  doc = report_of_list(text);
  CHECK(narrowed(&as, doc, &reason) == 23, "the grid that holds block 200 was not chosen: %s", reason);
  CHECK(reason && strstr(reason, "is in the @triton.jit function gather_rows_kernel, and its block [200,0,0] and "
                                 "thread [64,0,0] fit the grid and block of launch #23 alone"),
        "reason: %s", reason);
  {
    const struct json *a0 = json_at(json_get(doc, "device_asserts"), 0);
    char seqs[64];
    CHECK(!strcmp(json_get_str(a0, "function"), "gather_rows_kernel") && !json_get(a0, "inlined_into"));
    CHECK(!strcmp(launches_of(a0, seqs, sizeof seqs), "23"), "launches %s", seqs);
  }
  json_free(doc);

  /* Two launches of that kernel whose grids both hold the block (a side stream's first and later launch): the
   * name must never single one out; the assert fits both, and is listed with both. */
  launch_json(l1, sizeof l1, 21, "gather_rows_kernel", "", 256, 128);
  snprintf(text, sizeof text, "%s, %s, %s", l1, l3, l2);
  doc = report_of_list(text);
  CHECK(narrowed(&as, doc, &reason) == 0, "one of two equal launches of the named kernel was chosen");
  {
    char seqs[64];
    CHECK(!strcmp(launches_of(json_at(json_get(doc, "device_asserts"), 0), seqs, sizeof seqs), "21,23"), "launches %s",
          seqs);
  }
  json_free(doc);

  /* By the name alone, when one launch runs it; Triton 2's suffixed name is the same kernel. */
  launch_json(l1, sizeof l1, 21, "scale_rows_kernel", "", 256, 128);
  launch_json(l2, sizeof l2, 23, "gather_rows_kernel_0d1d2d3de", "", 256, 128);
  doc = report_of(l1, l2);
  CHECK(narrowed(&as, doc, &reason) == 23, "reason: %s", reason);
  CHECK(reason && strstr(reason, "function gather_rows_kernel, which launch #23 alone runs") &&
            !strstr(reason, "calls it"),
        "reason: %s", reason);
  json_free(doc);

  /* No launch runs the function under its name (a driver naming it otherwise, a helper inlined into a kernel of
   * another file): the assert counts by its indices, as when the file told nothing. */
  launch_json(l1, sizeof l1, 21, "moe_scale", "", 16, 128);
  launch_json(l2, sizeof l2, 23, "moe_gather", "", 256, 128);
  doc = report_of(l1, l2);
  CHECK(narrowed(&as, doc, &reason) == 23, "reason: %s", reason);
  snprintf(text, sizeof text, "line %ld is in gather_rows_kernel, which no launch listed runs under that name",
           line_of(TRITON_PY, "tl.device_assert(idx"));
  CHECK(reason && strstr(reason, "(in unknown) has block [200,0,0]") && strstr(reason, text), "reason: %s", reason);
  {
    const struct json *a0 = json_at(json_get(doc, "device_asserts"), 0);
    char seqs[64];
    CHECK(!strcmp(json_get_str(a0, "function"), "gather_rows_kernel"), "the file's answer is still reported");
    CHECK(!strcmp(launches_of(a0, seqs, sizeof seqs), "23"), "launches %s", seqs);
  }
  json_free(doc);
  asserts_free(&as);

  /* An inlined helper's assert: the kernel that calls it ran it. */
  snprintf(line, sizeof line, "%s:%ld: unknown: block: [5,0,0], thread: [0,0,0] Assertion `slot in range` failed.", py,
           line_of(TRITON_PY, "tl.device_assert((slot"));
  add(&as, line);
  launch_json(l1, sizeof l1, 31, "gather_rows_kernel", "", 64, 128);
  launch_json(l2, sizeof l2, 32, "dispatch_rows_kernel", "", 64, 128);
  doc = report_of(l1, l2);
  CHECK(narrowed(&as, doc, &reason) == 32, "reason: %s", reason);
  CHECK(reason && strstr(reason, "function check_slot, which launch #32 alone runs (its kernel "
                                 "dispatch_rows_kernel calls it)"),
        "reason: %s", reason);
  CHECK(json_len(json_get(json_at(json_get(doc, "device_asserts"), 0), "inlined_into")) == 1);
  json_free(doc);
  asserts_free(&as);

  /* A log prefix before the file's name ("[rank1]: "): the name after it is read. A second assert of the same
   * line takes the first one's answer (the file is gone by then). */
  snprintf(line, sizeof line,
           "[rank1]: %s:%ld: unknown: block: [1,0,0], thread: [2,0,0] Assertion `idx < n_rows` "
           "failed.",
           py, line_of(TRITON_PY, "tl.device_assert(idx"));
  add(&as, line);
  CHECK(as.a[0].function && !strcmp(as.a[0].function, "gather_rows_kernel"), "unfound: %s", as.a[0].unfound);
  unlink(py);
  add(&as, line);
  CHECK(as.a[1].function && !strcmp(as.a[1].function, "gather_rows_kernel"));
  asserts_free(&as);
  /* gone before the line came: the indices alone, and the reason says why */
  snprintf(line, sizeof line, "%s:%ld: unknown: block: [40,0,0], thread: [2,0,0] Assertion `idx < n_rows` failed.", py,
           line_of(TRITON_PY, "tl.device_assert(idx"));
  add(&as, line);
  launch_json(l1, sizeof l1, 31, "gather_rows_kernel", "", 64, 128);
  launch_json(l2, sizeof l2, 32, "dispatch_rows_kernel", "", 32, 128);
  doc = report_of(l1, l2);
  CHECK(narrowed(&as, doc, &reason) == 31, "reason: %s", reason);
  CHECK(reason && strstr(reason, "(in unknown) has block [40,0,0]") &&
            strstr(reason, "(its file did not tell its kernel: it could not be read (No such file or directory))"),
        "reason: %s", reason);
  json_free(doc);
  asserts_free(&as);

  /* ---- Inductor: a kernel file of its cache, and its output code holding the kernels in strings ---- */
  write_file(py, sizeof py, dir, "cq7hdo3ecbwr2b4gtn5clj7ov2xbkgaj6zvh2f7fq4l5yxjxh4ao.py", INDUCTOR_KERNEL);
  snprintf(line, sizeof line,
           "%s:%ld: unknown: block: [3,0,0], thread: [17,0,0] Assertion `index out of bounds: "
           "0 <= tmp4 < 1000` failed.",
           py, line_of(INDUCTOR_KERNEL, "tl.device_assert"));
  add(&as, line);
  CHECK(as.a[0].function && !strcmp(as.a[0].function, "triton_poi_fused_index_mul_0"), "unfound %s", as.a[0].unfound);
  CHECK(!strcmp(as.a[0].expr, "index out of bounds: 0 <= tmp4 < 1000") && as.a[0].block[0] == 3);
  launch_json(l1, sizeof l1, 41, "triton_red_fused_sum_1", "", 64, 64);
  launch_json(l2, sizeof l2, 40, "triton_poi_fused_index_mul_0", "", 8, 128);
  launch_json(l3, sizeof l3, 42,
              "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>,"
              " std::array<char*, 1ul> >(int, at::native::FillFunctor<float>, std::array<char*, 1ul>)",
              "_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_11FillFunctorIfEESt5arrayIPcLm1EEEEviT0_T1_", 16,
              128);
  snprintf(text, sizeof text, "%s, %s, %s", l2, l1, l3);
  doc = report_of_list(text);
  CHECK(narrowed(&as, doc, &reason) == 40, "reason: %s", reason);
  CHECK(reason && strstr(reason, "is in the @triton.jit function triton_poi_fused_index_mul_0, which launch #40 "
                                 "alone runs"),
        "reason: %s", reason);
  json_free(doc);
  asserts_free(&as);
  write_file(py, sizeof py, dir, "output_code.py", INDUCTOR_WRAPPER);
  CHECK(tritonsrc_find(py, line_of(INDUCTOR_WRAPPER, "tl.device_assert"), &found, why, sizeof why) == 0 &&
            !strcmp(found.function, "triton_poi_fused_index_mul_0"),
        "in a string: %s", why);
  tritonsrc_free(&found);
  CHECK(tritonsrc_find(py, line_of(INDUCTOR_WRAPPER, "arg0_1, arg1_1"), &found, why, sizeof why) == ESRCH &&
            strstr(why, "is in call, which is not"),
        "%s", why);

  /* ---- graphs: the captured kernels tell a graph launch's asserts ---- */
  write_file(py, sizeof py, dir, "moe_kernels.py", TRITON_PY);
  snprintf(line, sizeof line, "%s:%ld: unknown: block: [2,0,0], thread: [9,0,0] Assertion `idx < n_rows` failed.", py,
           line_of(TRITON_PY, "tl.device_assert(idx"));
  add(&as, line);
  char nodes[3200], g[8192];
  launch_json(l1, sizeof l1, 51, "scale_rows_kernel", "", 4, 128);
  launch_json(l2, sizeof l2, 52, "gather_rows_kernel", "", 4, 128);
  launch_json(l3, sizeof l3, 53, "scale_rows_kernel", "", 4, 128);
  snprintf(nodes, sizeof nodes, "%s, %s, %s", l1, l2, l3);
  /* the culprit is the graph launch: the node that runs the asserting kernel is named */
  graph_json(g, sizeof g, 60, nodes);
  snprintf(text, sizeof text,
           "{\"kind\": \"fault\", \"verdict\": {\"certainty\": \"exact\", \"reason\": \"stream 0x0 "
           "completed launch #59; #60 is the next launch on it\"}, \"culprit\": %s, \"candidates\": []}",
           g);
  doc = NULL;
  CHECK(json_parse(text, strlen(text), &doc, NULL) == 0);
  int changed = 0;
  CHECK(asserts_annotate(&as, doc, &changed) == 0 && changed);
  {
    const struct json *c = json_get(doc, "culprit");
    char seqs[64];
    CHECK(json_get_int(json_get(c, "node"), "seq", -1) == 52 &&
              !strcmp(json_get_str(c, "node_source"), "device assert"),
          "node %lld", json_get_int(json_get(c, "node"), "seq", -1));
    reason = json_get_str(json_get(doc, "verdict"), "reason");
    CHECK(reason && strstr(reason, "; the device assert names the graph's node #52 gather_rows_kernel"), "reason: %s",
          reason);
    CHECK(!strcmp(launches_of(json_at(json_get(doc, "device_asserts"), 0), seqs, sizeof seqs), "52"), "%s", seqs);
  }
  json_free(doc);

  /* a graph launch among candidates: it runs the kernel the assert names, the other candidates do not; it
   * becomes the culprit, and its node is named */
  launch_json(l1, sizeof l1, 58, "scale_rows_kernel", "", 4, 128);
  snprintf(text, sizeof text, "%s, %s", l1, g);
  doc = report_of_list(text);
  CHECK(narrowed(&as, doc, &reason) == 60, "reason: %s", reason);
  CHECK(reason && strstr(reason, "of these launches only graph launch #60 replays a kernel that fits it; the device "
                                 "assert names the graph's node #52"),
        "reason: %s", reason);
  CHECK(json_get_int(json_get(json_get(doc, "culprit"), "node"), "seq", -1) == 52);
  json_free(doc);

  /* the kernel ran outside the graph as well: by name both may have asserted (a kernel launch is never preferred
   * to a graph that runs the same kernel) */
  launch_json(l1, sizeof l1, 58, "gather_rows_kernel", "", 4, 128);
  snprintf(text, sizeof text, "%s, %s", l1, g);
  doc = report_of_list(text);
  CHECK(narrowed(&as, doc, &reason) == 0, "narrowed between a launch and a graph running the same kernel");
  json_free(doc);

  /* a graph launch whose kernels are not known cannot be ruled out, nor picked */
  graph_json(g, sizeof g, 60, "");
  snprintf(text, sizeof text, "%s, %s", l1, g);
  doc = report_of_list(text);
  CHECK(narrowed(&as, doc, &reason) == 0, "narrowed to a launch while a graph of unknown kernels was a candidate");
  json_free(doc);
  launch_json(l1, sizeof l1, 58, "scale_rows_kernel", "", 4, 128);
  snprintf(text, sizeof text, "%s, %s", l1, g);
  doc = report_of_list(text);
  CHECK(narrowed(&as, doc, &reason) == 0, "picked a graph launch whose kernels are not known");
  json_free(doc);

  /* two nodes of the graph run the kernel: the graph launch is the culprit, but no node is named */
  launch_json(l3, sizeof l3, 53, "gather_rows_kernel", "", 4, 128);
  snprintf(nodes, sizeof nodes, "%s, %s", l2, l3);
  graph_json(g, sizeof g, 60, nodes);
  snprintf(text, sizeof text, "%s, %s", l1, g);
  doc = report_of_list(text);
  CHECK(narrowed(&as, doc, &reason) == 60, "reason: %s", reason);
  CHECK(!json_get(json_get(doc, "culprit"), "node") && !strstr(reason, "graph's node"), "reason: %s", reason);
  json_free(doc);
  asserts_free(&as);

  /* A named assert (the device's own signature) inside a graph replay: the node is named by it. */
  add(&as, "fake.cu:8: void write_oob(...): block: [1,0,0], thread: [3,0,0] Assertion `idx < n` failed.");
  launch_json(l1, sizeof l1, 2, "step(float*, int)", "_Z4stepPfi", 4, 64);
  launch_json(l2, sizeof l2, 3, "write_oob(int*, int)", "_Z9write_oobPii", 4, 64);
  snprintf(nodes, sizeof nodes, "%s, %s", l1, l2);
  graph_json(g, sizeof g, 6, nodes);
  launch_json(l3, sizeof l3, 5, "step(float*, int)", "_Z4stepPfi", 4, 64);
  snprintf(text, sizeof text, "%s, %s", l3, g);
  doc = report_of_list(text);
  CHECK(narrowed(&as, doc, &reason) == 6, "reason: %s", reason);
  CHECK(reason && strstr(reason, "the device assert names write_oob, and of these launches only graph launch #6") &&
            strstr(reason, "graph's node #3 write_oob(int*, int)"),
        "reason: %s", reason);
  json_free(doc);
  asserts_free(&as);

  unlink(py);
  snprintf(py, sizeof py, "%s/cq7hdo3ecbwr2b4gtn5clj7ov2xbkgaj6zvh2f7fq4l5yxjxh4ao.py", dir);
  unlink(py);
  snprintf(py, sizeof py, "%s/output_code.py", dir);
  unlink(py);
  CHECK(rmdir(dir) == 0, "%s left behind", dir);

  /* No asserts at all: nothing to add, nothing changed. */
  changed = 0;
  doc = report_of(l1, l2);
  CHECK(asserts_annotate(NULL, doc, &changed) == 0 && !changed);
  json_free(doc);

  /* The output held none: a device assert's fault report gets an empty device_asserts, nothing else does. */
  static const struct {
    const char *text; /* the report */
    int added;        /* 1: device_asserts becomes [] */
  } none[] = {
      {"{\"kind\": \"fault\", \"error\": {\"code\": 710}}", 1},
      {"{\"error\": {\"code\": 710}}", 1}, /* a report from before kinds: a fault */
      {"{\"kind\": \"fault\", \"error\": {\"code\": 700}}", 0},
      {"{\"kind\": \"hang\", \"error\": {\"code\": 710}}", 0},
      {"{\"kind\": \"fault\", \"error\": {\"code\": 710}, \"device_asserts\": [{\"kernel\": \"k\"}]}", 0},
  };
  for (size_t i = 0; i < sizeof none / sizeof none[0]; i++) {
    const struct json *got;
    changed = 0;
    doc = NULL;
    CHECK(json_parse(none[i].text, strlen(none[i].text), &doc, NULL) == 0);
    CHECK(asserts_note_none(doc, &changed) == 0 && changed == none[i].added, "%s: changed %d", none[i].text, changed);
    got = json_get(doc, "device_asserts");
    CHECK(none[i].added ? json_is(got, JSON_ARR) && json_len(got) == 0 : !changed, "%s", none[i].text);
    CHECK(i != 4 || json_len(got) == 1, "an existing device_asserts was replaced");
    json_free(doc);
  }
  return CHECK_DONE();
}
