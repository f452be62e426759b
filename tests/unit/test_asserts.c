/* Unit test of the device-assert lines (src/cli/asserts.c): parsing lines as devices print them (PyTorch's
 * lambda kernels print "operator()"), and narrowing a verdict of candidates to the one launch the asserts single
 * out, by name, by block and thread indices against each candidate's grid and block, and by source file; never
 * to a launch the facts do not single out. */
#include "../../src/cli/asserts.h"
#include "../../src/report/json.h"
#include "check.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

static void add(struct dev_asserts *as, const char *line) {
  size_t before = as->n;
  asserts_add(as, line, strlen(line), "stdout");
  CHECK(as->n == before + 1, "not parsed as an assert: %s", line);
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

int main(void) {
  struct dev_assert a;
  char l1[1024], l2[1024];
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
  launch_json(l1, sizeof l1, 7, "void at::native::vectorized_gather_kernel<16, long>(char*, char*, long*, long, "
              "long, long, long, bool)", "_ZN2at6native24vectorized_gather_kernelILi16ElEEvPcS2_PT0_lllllb", 96, 128);
  launch_json(l2, sizeof l2, 9, "void at::native::vectorized_gather_kernel<16, long>(char*, char*, long*, long, "
              "long, long, long, bool)", "_ZN2at6native24vectorized_gather_kernelILi16ElEEvPcS2_PT0_lllllb", 8, 128);
  struct json *doc = report_of(l1, l2);
  CHECK(doc != NULL);
  CHECK(narrowed(&as, doc, &reason) == 7, "the grid that holds block 81 was not chosen");
  CHECK(reason && strstr(reason, "fit the grid and block of launch #7 alone"), "reason: %s", reason);
  CHECK(json_len(json_get(doc, "candidates_before_assert")) == 1);
  json_free(doc);

  /* Both grids hold the block: the facts do not single one out. */
  launch_json(l2, sizeof l2, 9, "void at::native::vectorized_gather_kernel<16, long>(char*, char*, long*, long, "
              "long, long, long, bool)", "_ZN2at6native24vectorized_gather_kernelILi16ElEEvPcS2_PT0_lllllb", 96, 128);
  doc = report_of(l1, l2);
  CHECK(narrowed(&as, doc, &reason) == 0, "narrowed between two launches the assert fits equally");
  json_free(doc);

  /* The thread index must fit the block too: a 64-thread block cannot hold thread 64. */
  launch_json(l2, sizeof l2, 9, "void at::native::vectorized_gather_kernel<16, long>(char*, char*, long*, long, "
              "long, long, long, bool)", "_ZN2at6native24vectorized_gather_kernelILi16ElEEvPcS2_PT0_lllllb", 96, 64);
  doc = report_of(l1, l2);
  CHECK(narrowed(&as, doc, &reason) == 7);
  json_free(doc);
  asserts_free(&as);

  /* operator() from ScatterGatherKernel.cu: of two elementwise launches whose grids both hold block 31, the one
   * whose name carries "scatter" and "gather". */
  add(&as, lam);
  launch_json(l1, sizeof l1, 3, "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>,"
              " std::array<char*, 1ul> >(int, at::native::FillFunctor<float>, std::array<char*, 1ul>)",
              "_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_11FillFunctorIfEESt5arrayIPcLm1EEEEviT0_T1_",
              64, 128);
  launch_json(l2, sizeof l2, 4, "void at::native::_scatter_gather_elementwise_kernel<128, 4, "
              "at::native::_cuda_scatter_gather_internal_kernel<true, float>::operator()(...)::{lambda(int)#1}>(int,"
              " {lambda(int)#1})", "_ZN2at6native32_scatter_gather_elementwise_kernelILi128ELi4EZNS0_x", 40, 128);
  doc = report_of(l1, l2);
  CHECK(narrowed(&as, doc, &reason) == 4, "the scatter/gather launch was not chosen by the assert's file");
  CHECK(reason && strstr(reason, "ScatterGatherKernel.cu") && strstr(reason, "carries that file's name"),
        "reason: %s", reason);
  json_free(doc);

  /* The same assert, but the fill kernel's grid cannot hold block 31: chosen by the indices alone. */
  launch_json(l1, sizeof l1, 3, "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>,"
              " std::array<char*, 1ul> >(int, at::native::FillFunctor<float>, std::array<char*, 1ul>)",
              "_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_11FillFunctorIfEESt5arrayIPcLm1EEEEviT0_T1_",
              64, 128);
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
   * decide. Block 200 fits the grid of 256 programs only. */
  add(&as, "/nonexistent/moe_dispatch.py:8: unknown: block: [200,0,0], thread: [64,0,0] Assertion `slot in "
           "range` failed.");
  launch_json(l1, sizeof l1, 11, "scale_rows_kernel", "", 16, 128);
  launch_json(l2, sizeof l2, 12, "gather_rows_kernel", "", 256, 128);
  doc = report_of(l1, l2);
  CHECK(narrowed(&as, doc, &reason) == 12, "the only grid that holds block 200 was not chosen: %s", reason);
  CHECK(reason && strstr(reason, "(in unknown) has block [200,0,0] and thread [64,0,0], which fit the grid and block "
                                 "of launch #12 alone"), "reason: %s", reason);
  json_free(doc);
  asserts_free(&as);

  /* No asserts at all: nothing to add, nothing changed. */
  int changed = 0;
  doc = report_of(l1, l2);
  CHECK(asserts_annotate(NULL, doc, &changed) == 0 && !changed);
  json_free(doc);
  return CHECK_DONE();
}
