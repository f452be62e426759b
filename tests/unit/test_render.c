/* Unit tests of the text renderer (src/render/render.c) and the symbolizer (src/report/symbolize.c): the full
 * and brief forms of exact, candidates and unknown verdicts, reports with fields missing or of the wrong type,
 * and a symbolize round trip on a program compiled here with -g (skipped with 77 when there is no C compiler
 * or addr2line; everything else still runs first). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "../../src/base/demangle.h"
#include "../../src/render/json.h"
#include "../../src/base/jsonw.h"
#include "../../src/render/render.h"
#include "../../src/report/symbolize.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "termsafe.h"

static const char exact_report[] =
    "{\"schema\":\"culprit.report/1\",\"tool\":{\"name\":\"culprit\",\"version\":\"0.1.0\"},"
    "\"process\":{\"pid\":4242,\"argv\":[\"./app\",\"--x\"]},"
    "\"error\":{\"code\":700,\"name\":\"CUDA_ERROR_ILLEGAL_ADDRESS\","
    "\"message\":\"an illegal memory access was encountered\",\"api\":\"cuMemcpyDtoH_v2\",\"thread\":4242,"
    "\"stack\":[{\"pc\":\"0x7f0000001000\",\"module\":\"/usr/lib/x86_64-linux-gnu/"
    "libcuda.so.1\",\"offset\":\"0x1000\"},"
    "{\"pc\":\"0x55555555a1b2\",\"module\":\"/path/to/app\",\"offset\":\"0x11b2\",\"function\":\"main\","
    "\"file\":\"demo.cu\",\"line\":51}]},"
    "\"verdict\":{\"certainty\":\"exact\",\"reason\":\"stream 0x0 completed launch #11; #12 is the next launch on "
    "it\"},"
    "\"culprit\":{\"seq\":12,\"api\":\"cuLaunchKernel\",\"kind\":\"kernel\",\"kernel\":\"write_oob(int*, int)\","
    "\"mangled\":\"_Z9write_oobPii\",\"grid\":[4,1,1],\"block\":[256,1,1],\"shared_mem\":0,\"stream\":\"0x0\","
    "\"stream_kind\":\"legacy\",\"device\":0,\"thread\":4242,"
    "\"stack\":[{\"module\":\"/usr/local/cuda/lib64/"
    "libcudart.so.13\",\"offset\":\"0x5000\",\"function\":\"cudaLaunchKernel\"},"
    "{\"module\":\"/path/to/app\",\"offset\":\"0x1100\",\"function\":\"launch_it\"},"
    "{\"module\":\"/path/to/app\",\"offset\":\"0x11a0\",\"function\":\"main\",\"file\":\"demo.cu\",\"line\":47},"
    "{\"module\":\"/lib/x86_64-linux-gnu/libc.so.6\",\"offset\":\"0x271ca\",\"function\":\"__libc_start_main\"}]},"
    "\"candidates\":[],"
    "\"history\":[{\"seq\":10,\"kernel\":\"fill(int*, int)\",\"grid\":[4,1,1],\"block\":[256,1,1]},"
    "{\"seq\":11,\"kernel\":\"void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>, "
    "std::array<char*, 3ul> >(int, at::native::CUDAFunctor_add<float>, std::array<char*, 3ul>)\","
    "\"grid\":[65535,1,1],\"block\":[1024,1,1]}],"
    "\"streams\":[{\"stream\":\"0x0\",\"kind\":\"legacy\"}],\"stats\":{\"launches\":120}}";

static const char candidates_report[] =
    "{\"schema\":\"culprit.report/1\",\"process\":{\"argv\":[\"python\",\"train.py\",\"--tag\",\"it's x\"]},"
    "\"error\":{\"code\":710,\"name\":\"CUDA_ERROR_ASSERT\",\"api\":\"cuStreamSynchronize\"},"
    "\"verdict\":{\"certainty\":\"candidates\",\"reason\":\"breadcrumbs were off for stream 0x7f01\"},"
    "\"culprit\":null,"
    "\"candidates\":[{\"seq\":40,\"mangled\":\"_Z6reducePfi\",\"stream\":\"0x7f01\",\"stream_kind\":\"created\","
    "\"stack\":[{\"module\":\"/path/to/app\",\"offset\":\"0x10\",\"function\":\"step\",\"file\":\"t.cu\",\"line\":9}]},"
    "{\"seq\":37,\"kernel\":\"scale(float*)\",\"stream\":\"0x0\",\"stream_kind\":\"per-thread\"},"
    "{\"seq\":44,\"kind\":\"graph\",\"stream\":\"0x7f01\"}]}";

static const char unknown_report[] =
    "{\"schema\":\"culprit.report/1\",\"error\":{\"code\":719,\"name\":\"CUDA_ERROR_LAUNCH_FAILED\"},"
    "\"verdict\":{\"certainty\":\"unknown\",\"reason\":\"no launch was recorded before the error\"},\"culprit\":null}";

/* Every line starts with "culprit:" and ends with a newline. Returns the number of lines. */
static int lines_ok(const char *text, size_t maxcol, const char *what) {
  const char *p = text;
  int n = 0;
  while (*p) {
    const char *nl = strchr(p, '\n');
    CHECK(nl != NULL, "%s: the last line ends with a newline", what);
    if (!nl) break;
    CHECK(strncmp(p, "culprit: ", 9) == 0 || (nl - p == 8 && strncmp(p, "culprit:", 8) == 0),
          "%s: line without the prefix: %.*s", what, (int)(nl - p), p);
    CHECK(maxcol == 0 || (size_t)(nl - p) <= maxcol, "%s: line longer than %zu: %.*s", what, maxcol, (int)(nl - p), p);
    CHECK(nl == p || nl[-1] != ' ', "%s: trailing space: %.*s", what, (int)(nl - p), p);
    n++;
    p = nl + 1;
  }
  return n;
}

static const char *find(const char *hay, const char *needle) { return hay ? strstr(hay, needle) : NULL; }

static void test_exact(void) {
  struct render_opts o = {.brief = 0, .path = "/tmp/r/culprit-4242.json"};
  char *t = render_text_opts(exact_report, strlen(exact_report), &o, NULL, 0);
  const char *user, *lib;
  CHECK(t != NULL, "renders: %s", render_error());
  if (!t) return;
  lines_ok(t, 100, "exact");
  CHECK(find(t, "CUDA_ERROR_ILLEGAL_ADDRESS (700): an illegal memory access was encountered"), "error line:\n%s", t);
  CHECK(find(t, "cuMemcpyDtoH_v2 on thread 4242"), "where it surfaced");
  CHECK(find(t, "why there: a copy to the host waits"), "says why the copy is where it surfaced:\n%s", t);
  CHECK(find(t, "main at demo.cu:51"), "error stack frame with file:line");
  CHECK(find(t, "the kernel that faulted: write_oob(int*, int)"), "culprit named");
  CHECK(find(t, "launch #12 via cuLaunchKernel"), "launch number and api");
  CHECK(find(t, "grid [4,1,1] block [256,1,1], 0 bytes of shared memory"), "geometry");
  CHECK(find(t, "stream 0x0 (legacy default stream), device 0, thread 4242"), "stream, device, thread");
  CHECK(find(t, "completed launch #11"), "reason shown");
  CHECK(find(t, "launch_it (app+0x1100)"), "frame without file shows module+offset");
  user = find(t, "main at demo.cu:47");
  lib = find(t, "frames in CUDA, system and interpreter libraries: libcudart.so.13, libc.so.6");
  CHECK(user && lib && user < lib, "user frames first, library frames folded after:\n%s", t);
  CHECK(!find(t, "cudaLaunchKernel"), "library frames are folded, not listed");
  CHECK(find(t, "launches before it on stream 0x0"), "history header");
  CHECK(find(t, "#10 fill(int*, int)"), "history entry");
  CHECK(find(t, "#11 void at::native::"), "long history name kept at the start");
  CHECK(find(t, "culprit: report: /tmp/r/culprit-4242.json\n"), "report path at the end");
  CHECK(!find(t, "could not tell"), "no candidates text for an exact verdict");
  free(t);

  t = render_text_opts(exact_report, strlen(exact_report), &(struct render_opts){.brief = 1, .path = "/tmp/r/x.json"},
                       NULL, 0);
  CHECK(t && lines_ok(t, 0, "brief") == 1, "brief is one line: %s", t ? t : "(null)");
  CHECK(find(t, "CUDA_ERROR_ILLEGAL_ADDRESS (700)") && find(t, "cuMemcpyDtoH_v2") && find(t, "write_oob(int*, int)") &&
            find(t, "#12") && find(t, "/tmp/r/x.json"),
        "brief has error, api, kernel, launch and path: %s", t ? t : "(null)");
  free(t);
  t = render_text(exact_report, strlen(exact_report), 0);
  CHECK(t && !find(t, "report:"), "no path line without a path");
  CHECK(find(t, "culprit:   cuda-gdb -ex run --args ./app --x\n"), "the cuda-gdb hand-off:\n%s", t ? t : "");
  free(t);
  t = render_text_opts(exact_report, strlen(exact_report), &(struct render_opts){.no_debugger = 1}, NULL, 0);
  CHECK(t && find(t, "the kernel that faulted") && !find(t, "cuda-gdb"), "no_debugger leaves cuda-gdb out:\n%s",
        t ? t : "");
  free(t);
}

/* A launch made by a thread without Python (the autograd engine) carries the frames of the thread waiting on it. */
static void test_waiting_thread(void) {
  static const char report[] =
      "{\"schema\":\"culprit.report/1\",\"error\":{\"code\":710,\"name\":\"CUDA_ERROR_ASSERT\","
      "\"api\":\"cuStreamSynchronize\",\"thread\":693},"
      "\"verdict\":{\"certainty\":\"exact\",\"reason\":\"the device assert names indexFuncLargeIndex\"},"
      "\"culprit\":{\"seq\":27,\"api\":\"cuLaunchKernel\",\"kind\":\"kernel\",\"kernel\":\"indexFuncLargeIndex\","
      "\"stream\":\"0x0\",\"stream_kind\":\"legacy\",\"device\":0,\"thread\":719,"
      "\"flags\":[\"python-of-waiting-thread\"],\"python_thread\":139910125058112,"
      "\"python\":[{\"file\":\"/home/u/train.py\",\"function\":\"main\",\"line\":46}],\"stack\":[]},"
      "\"candidates\":[],\"history\":[]}";
  char *t = render_text(report, strlen(report), 0);
  CHECK(t != NULL, "renders: %s", render_error());
  if (!t) return;
  lines_ok(t, 100, "waiting thread");
  CHECK(find(t, "launched from (Python, of thread 139910125058112, which waited on it):"),
        "names the thread whose frames these are:\n%s", t);
  CHECK(find(t, "/home/u/train.py:46 in main"), "the waiting line:\n%s", t);
  CHECK(find(t, "thread 719"), "the launching thread stays named:\n%s", t);
  free(t);
}

/* A program built with the static CUDA runtime launching a captured graph (as on the GPU): the runtime's own
 * functions and nvcc's launch stubs sit in the program's module but are folded with the libraries, and the
 * faulting node is said to be launched from the line that launched it, not from the kernel's host stub. */
static void test_static_runtime_graph(void) {
#define APP "\"module\":\"/w/app\""
#define CRT "\"file\":\"/usr/local/cuda/include/crt/device_functions.h\",\"line\":2963"
  static const char report[] =
      "{\"schema\":\"culprit.report/1\",\"error\":{\"code\":700,\"name\":\"CUDA_ERROR_ILLEGAL_ADDRESS\","
      "\"api\":\"cuStreamSynchronize\",\"thread\":77,\"stack\":["
      "{" APP ",\"offset\":\"0xcf93\",\"function\":\"libcudart_static_141dba54\"},"
      "{" APP ",\"offset\":\"0x70710\",\"function\":\"cudaStreamSynchronize\"},"
      "{" APP ",\"offset\":\"0x9000\",\"function\":\"main\",\"file\":\"graph.cu\",\"line\":61}]},"
      "\"verdict\":{\"certainty\":\"exact\",\"reason\":\"launch #6 was the only unfinished work\"},"
      "\"culprit\":{\"seq\":6,\"api\":\"cuGraphLaunch\",\"kind\":\"graph\",\"kernel\":\"CUDA graph 0x5566\","
      "\"stream\":\"0x5500\",\"stream_kind\":\"created\",\"device\":0,\"thread\":77,\"stack\":["
      "{" APP ",\"offset\":\"0x1ac9b\",\"function\":\"libcudart_static_9bbdd5ca\"},"
      "{" APP ",\"offset\":\"0x7262b\",\"function\":\"cudaGraphLaunch\"},"
      "{" APP ",\"offset\":\"0x8e00\",\"function\":\"main\",\"file\":\"graph.cu\",\"line\":60}],"
      "\"node_source\":\"graph breadcrumbs\",\"node\":{\"seq\":2,\"api\":\"cuLaunchKernel\",\"kind\":\"kernel\","
      "\"kernel\":\"scatter_tokens(float*, int)\",\"stream\":\"0x5500\",\"stream_kind\":\"created\",\"device\":0,"
      "\"thread\":77,\"stack\":["
      "{" APP ",\"offset\":\"0xe514\",\"function\":\"libcudart_static_4d8b33a1\"},"
      "{" APP ",\"offset\":\"0x709f3\",\"function\":\"cudaLaunchKernel\"},"
      "{" APP ",\"offset\":\"0x94a4\",\"function\":\"__device_stub__Z14scatter_tokensPfi(float*, int)\"," CRT "},"
      "{" APP ",\"offset\":\"0x94a4\",\"function\":\"__device_stub__Z14scatter_tokensPfi(float*, int)\","
      "\"file\":\"/tmp/tmpxft_54ef-6_graph.cudafe1.stub.c\",\"line\":1,\"inlined\":true},"
      "{" APP ",\"offset\":\"0x8d9f\",\"function\":\"scatter_tokens(float*, int)\",\"file\":\"graph.cu\",\"line\":23},"
      "{" APP ",\"offset\":\"0x8d9f\",\"function\":\"main\",\"file\":\"graph.cu\",\"line\":50,\"inlined\":true}]}},"
      "\"candidates\":[],\"history\":[]}";
#undef APP
#undef CRT
  char *t = render_text(report, strlen(report), 0);
  CHECK(t != NULL, "renders: %s", render_error());
  if (!t) return;
  lines_ok(t, 100, "static runtime graph");
  CHECK(!find(t, "libcudart_static_"), "the static runtime's functions are folded:\n%s", t);
  CHECK(!find(t, "cudaGraphLaunch") && !find(t, "cudaStreamSynchronize ("), "runtime entry points folded:\n%s", t);
  CHECK(find(t, "static CUDA runtime"), "the folded frames are said to be the runtime's:\n%s", t);
  CHECK(find(t, "main at graph.cu:60"), "the graph's launch line:\n%s", t);
  CHECK(find(t, "main at graph.cu:61"), "the line where the error surfaced:\n%s", t);
  CHECK(find(t, "launched from main at graph.cu:50"), "the node's launch line, past the stubs:\n%s", t);
  CHECK(!find(t, "launched from __device_stub") && !find(t, "launched from scatter_tokens"),
        "neither nvcc's stub nor the kernel's host function is the launch site:\n%s", t);
  free(t);
}

static void test_candidates(void) {
  char *t = render_text(candidates_report, strlen(candidates_report), 0);
  CHECK(t != NULL, "renders: %s", render_error());
  if (!t) return;
  lines_ok(t, 100, "candidates");
  CHECK(find(t, "CUDA_ERROR_ASSERT (710)"), "error without message");
  CHECK(find(t, "could not tell which of these 3 launches faulted"), "says it could not tell:\n%s", t);
  CHECK(find(t, "#40 reduce(float*, int)") || find(t, "#40 _Z6reducePfi"), "candidate 40 listed");
  CHECK(find(t, "#37 scale(float*)"), "candidate 37 listed");
  CHECK(find(t, "#44 (CUDA graph)"), "graph candidate without a name");
  CHECK(find(t, "launched from step at t.cu:9"), "candidate's user frame");
  CHECK(find(t, "per-thread default stream"), "per-thread stream kind");
  CHECK(find(t, "breadcrumbs were off"), "reason shown");
  CHECK(find(t, "culprit run --mode blocking --launches 37:44 -- python train.py --tag 'it'\\''s x'"),
        "pin command spans the candidates and quotes argv:\n%s", t);
  free(t);
  t = render_text(candidates_report, strlen(candidates_report), 1);
  CHECK(t && lines_ok(t, 0, "brief candidates") == 1 && find(t, "3 candidate launches (#37..#44)"),
        "brief candidates: %s", t ? t : "(null)");
  free(t);
}

/* A command line the report could not keep whole is never printed as a command: it would be another one. */
static void test_argv_left_out(void) {
  char *doc = strdup(candidates_report), *at = strstr(doc, "\"process\":{");
  const char *more = "\"process\":{\"argv_left_out\":7,";
  size_t n = strlen(doc) + strlen(more);
  char *cut = malloc(n + 1);
  CHECK(at && cut, "fixture");
  if (!at || !cut) return;
  snprintf(cut, n + 1, "%.*s%s%s", (int)(at - doc), doc, more, at + strlen("\"process\":{"));
  char *t = render_text(cut, strlen(cut), 0);
  CHECK(t &&
            find(t, "culprit run --mode blocking --launches 37:44 -- <your command: its 7 last arguments are "
                    "not in the report>") &&
            !find(t, "python train.py"),
        "a cut command line printed as a command:\n%s", t ? t : "(null)");
  free(t);
  free(cut);
  free(doc);
}

/* A window over a loop: consecutive launches of one kernel from one site read as one line; a different
 * kernel, a different launch site or a gap in the numbers starts a new line. */
static const char window_report[] =
    "{\"schema\":\"culprit.report/1\",\"error\":{\"code\":700,\"api\":\"cuCtxSynchronize\"},"
    "\"verdict\":{\"certainty\":\"candidates\"},\"culprit\":null,\"candidates\":["
    "{\"seq\":5,\"kernel\":\"step(float*)\",\"stream\":\"0x0\",\"grid\":[4,1,1],\"block\":[64,1,1],"
    "\"stack\":[{\"function\":\"loop\",\"file\":\"a.c\",\"line\":7}]},"
    "{\"seq\":6,\"kernel\":\"step(float*)\",\"stream\":\"0x0\",\"grid\":[4,1,1],\"block\":[64,1,1],"
    "\"stack\":[{\"function\":\"loop\",\"file\":\"a.c\",\"line\":7}]},"
    "{\"seq\":7,\"kernel\":\"step(float*)\",\"stream\":\"0x0\",\"grid\":[4,1,1],\"block\":[64,1,1],"
    "\"stack\":[{\"function\":\"loop\",\"file\":\"a.c\",\"line\":7}]},"
    "{\"seq\":8,\"kernel\":\"step(float*)\",\"stream\":\"0x0\",\"grid\":[4,1,1],\"block\":[64,1,1],"
    "\"stack\":[{\"function\":\"loop\",\"file\":\"a.c\",\"line\":9}]},"
    "{\"seq\":10,\"kernel\":\"step(float*)\",\"stream\":\"0x0\",\"grid\":[4,1,1],\"block\":[64,1,1],"
    "\"stack\":[{\"function\":\"loop\",\"file\":\"a.c\",\"line\":9}]},"
    "{\"seq\":11,\"kernel\":\"scale(float*)\",\"stream\":\"0x0\",\"grid\":[4,1,1],\"block\":[64,1,1],"
    "\"stack\":[{\"function\":\"loop\",\"file\":\"a.c\",\"line\":9}]}]}";

static void test_window_runs(void) {
  char *t = render_text(window_report, strlen(window_report), 0);
  CHECK(t != NULL, "renders: %s", render_error());
  if (!t) return;
  CHECK(find(t, "#5..#7 step(float*)"), "identical consecutive launches grouped:\n%s", t);
  CHECK(find(t, "#8 step(float*)") && !find(t, "#8..#10"), "another launch site or a gap is not grouped:\n%s", t);
  CHECK(find(t, "#10 step(float*)") && find(t, "#11 scale(float*)"), "other kernels stay apart:\n%s", t);
  CHECK(find(t, "could not tell which of these 6 launches faulted"), "the count is of launches:\n%s", t);
  CHECK(find(t, "--launches 5:11"), "the rerun window spans every candidate:\n%s", t);
  free(t);
}

static void test_unknown_and_missing(void) {
  static const char *const docs[] = {
      "{}",
      "{\"culprit\":null}",
      "{\"error\":{}}",
      "{\"error\":{\"code\":\"x\",\"name\":5,\"stack\":{}},\"verdict\":[],\"culprit\":7,\"history\":\"no\"}",
      "{\"verdict\":{\"certainty\":\"candidates\"},\"candidates\":[{},null,3,{\"seq\":\"x\"}]}",
      "{\"culprit\":{},\"history\":[{},[],null],\"verdict\":{\"certainty\":\"exact\"}}",
      "{\"culprit\":{\"grid\":[1,\"a\",null],\"block\":{},\"stack\":[null,{},{\"module\":5},{\"offset\":\"0x1\"}]}}",
      "{\"verdict\":{\"certainty\":\"exact\"}}",
  };
  size_t i;
  char *t = render_text(unknown_report, strlen(unknown_report), 0);
  CHECK(t && find(t, "could not name the kernel that faulted: no launch was recorded before the error"),
        "unknown verdict says why:\n%s", t ? t : "(null)");
  if (t) lines_ok(t, 100, "unknown");
  free(t);
  t = render_text(unknown_report, strlen(unknown_report), 1);
  CHECK(t && find(t, "faulting kernel unknown"), "brief unknown");
  free(t);
  for (i = 0; i < sizeof docs / sizeof docs[0]; i++) {
    t = render_text(docs[i], strlen(docs[i]), 0);
    CHECK(t != NULL, "'%s' renders", docs[i]);
    if (t) lines_ok(t, 0, docs[i]);
    free(t);
    t = render_text(docs[i], strlen(docs[i]), 1);
    CHECK(t != NULL, "'%s' renders brief", docs[i]);
    free(t);
  }
  {
    /* a long reason is wrapped at spaces within 100 columns, and a newline in it cannot break the prefix */
    char doc[1024];
    snprintf(doc, sizeof doc, "{\"verdict\":{\"certainty\":\"unknown\",\"reason\":\"%s\"}}",
             "the breadcrumb of stream 0x7f00aa was not readable because the host-mapped page was lost "
             "when the context was destroyed by another thread\\nbefore the error surfaced, so no launch "
             "can be named; rerun with --mode blocking to find it");
    t = render_text(doc, strlen(doc), 0);
    CHECK(t && lines_ok(t, 100, "wrapped reason") >= 3, "reason wrapped:\n%s", t ? t : "(null)");
    CHECK(find(t, "host-mapped") && find(t, "thread before") && find(t, "to find it"), "words kept whole:\n%s",
          t ? t : "(null)");
    free(t);
  }
  t = render_text("{\"a\":", 5, 0);
  CHECK(t == NULL && find(render_error(), "not valid JSON") && find(render_error(), "byte 5"), "parse error reason: %s",
        render_error());
  t = render_text("[1]", 3, 0);
  CHECK(t == NULL && find(render_error(), "not a JSON object"), "array refused: %s", render_error());
  {
    char why[128] = "";
    t = render_text_opts("nope", 4, NULL, why, sizeof why);
    CHECK(t == NULL && why[0], "reason copied to the caller");
  }
}

/* Replaces every node of a real report, one at a time, by values of the wrong type; nothing may crash. */
static void mutate_walk(struct json *root, struct json *n, int *count) {
  size_t i;
  static const char *const repl[] = {"null", "[]", "{}", "\"x\"", "-1", "1e300", "[null]"};
  if (n->type != JSON_OBJ && n->type != JSON_ARR) return;
  for (i = 0; i < n->len; i++) {
    struct json *saved = n->kids[i];
    size_t r;
    for (r = 0; r < sizeof repl / sizeof repl[0]; r++) {
      struct json *val = NULL;
      struct jw w;
      char *t;
      if (json_parse(repl[r], strlen(repl[r]), &val, NULL) != JSON_OK) continue;
      n->kids[i] = val;
      jw_init(&w);
      json_dump(root, &w);
      t = w.buf ? render_text(w.buf, w.len, (int)(r % 2)) : NULL;
      CHECK(t != NULL, "mutated report renders");
      free(t);
      jw_free(&w);
      json_free(val);
      (*count)++;
    }
    n->kids[i] = saved;
    mutate_walk(root, saved, count);
  }
}

static void test_mutations(void) {
  struct json *doc = NULL;
  int count = 0;
  if (json_parse(exact_report, strlen(exact_report), &doc, NULL) != JSON_OK) return;
  mutate_walk(doc, doc, &count);
  CHECK(count > 500, "many mutations tried (%d)", count);
  json_free(doc);
  if (json_parse(candidates_report, strlen(candidates_report), &doc, NULL) != JSON_OK) return;
  mutate_walk(doc, doc, &count);
  json_free(doc);
}

/* ---- terminal safety ---- */

static void test_render_safe(void) {
  static const struct {
    const char *in, *out;
  } cases[] = {
      {"plain text", "plain text"},
      {"\x1b[2Jclear", "\\x1b[2Jclear"},
      {"a\nculprit: forged", "a\\nculprit: forged"},
      {"tab\there\r", "tab\\there\\r"},
      {"del\x7f", "del\\x7f"},
      {"h\xc3\xa9llo \xe4\xb8\xad", "h\xc3\xa9llo \xe4\xb8\xad"}, /* UTF-8 stays */
      {"csi\xc2\x9b"
       "31m",
       "csi\\u009b31m"}, /* C1 CSI as UTF-8 */
      {"raw\x9b"
       "31m",
       "raw\\x9b31m"}, /* C1 CSI as a raw byte */
      {"rlo\xe2\x80\xae"
       "txt",
       "rlo\\u202etxt"},                         /* right-to-left override */
      {"cut\xe4\xb8", "cut\\xe4\\xb8"},          /* a character cut short */
      {"over\xc0\xaf", "over\\xc0\\xaf"},        /* overlong */
      {"sur\xed\xa0\x80", "sur\\xed\\xa0\\x80"}, /* a surrogate */
      {"back\\slash", "back\\slash"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    char *got = render_safe(cases[i].in, strlen(cases[i].in), 0);
    CHECK(got && strcmp(got, cases[i].out) == 0, "render_safe(%zu): got '%s', want '%s'", i, got ? got : "?",
          cases[i].out);
    CHECK(render_is_safe(cases[i].in, strlen(cases[i].in), 0) == (strcmp(cases[i].in, cases[i].out) == 0),
          "render_is_safe(%zu)", i);
    free(got);
  }
  {
    char *got = render_safe("two\nlines\x1b", 10, 1);
    CHECK(got && strcmp(got, "two\nlines\\x1b") == 0, "keep_newlines: %s", got ? got : "?");
    free(got);
    got = render_safe("nul\0in", 6, 0);
    CHECK(got && strcmp(got, "nul\\x00in") == 0, "a NUL inside: %s", got ? got : "?");
    free(got);
  }
}

/* A report whose every string a program or a file could set holds escape sequences and newlines: nothing of them
 * reaches the text raw, no line is forged, and the rerun and debugger commands still read back the same argv. */
static void test_hostile_strings(void) {
  static const char report[] =
      "{\"schema\":\"culprit.report/1\",\"kind\":\"fault\","
      "\"process\":{\"pid\":7,\"argv\":[\"./app\",\"x\\nculprit: the kernel that faulted: forged\\u001b[2J\","
      "\"caf\\u00e9 it's\"],\"hostname\":\"h\\u001b]0;title\\u0007\"},"
      "\"error\":{\"code\":700,\"name\":\"CUDA_ERROR_ILLEGAL_ADDRESS\\u001b[31m\",\"message\":\"m\\nculprit: fake\","
      "\"api\":\"cuCtxSynchronize\\r\",\"thread\":7,"
      "\"stack\":[{\"module\":\"/a/app\\u001b[1m\",\"offset\":\"0x1\",\"function\":\"main\\u009b31m\","
      "\"file\":\"evil\\u202e.c\",\"line\":3}],"
      "\"python\":[{\"file\":\"/x/train\\u001b[8m.py\",\"line\":4,\"function\":\"step\\n\"}]},"
      "\"verdict\":{\"certainty\":\"candidates\",\"reason\":\"why\\u001b[2J\\nculprit: forged reason\","
      "\"window\":{\"first\":3,\"last\":4}},"
      "\"culprit\":null,"
      "\"candidates\":[{\"seq\":3,\"kernel\":\"k\\u001b[2Jern\\nel\",\"stream\":\"0x0\\u001b\",\"thread\":7,"
      "\"stack\":[{\"module\":\"/a/app\",\"offset\":\"0x2\",\"function\":\"f\\u0007\",\"file\":\"a.c\\n\","
      "\"line\":2}],"
      "\"op\":{\"name\":\"aten::x\\u001b\",\"args\":\"(self: \\u001b[5m)\",\"problem\":\"p\\nculprit: q\"}},"
      "{\"seq\":4,\"mangled\":\"_Z3badPi\\u001b[2J\",\"stream\":\"0x0\"}],"
      "\"history\":[{\"seq\":2,\"kernel\":\"h\\u001b[2J\",\"grid\":[1,1,1]}],"
      "\"device_asserts\":[{\"kernel\":\"k\\u001b[2Jern\\nel\",\"assertion\":\"i \\u001b< n\",\"file\":\"f\\n.cu\","
      "\"line\":1,\"block\":[0,0,0],\"thread\":[1,0,0]}],"
      "\"nccl_log\":[\"h:1:1 [0] NCCL WARN bad\\u001b[2J\\nculprit: forged nccl\"]}";
  for (int brief = 0; brief < 2; brief++) {
    struct render_opts o = {.brief = brief, .path = "/r/culprit-\x1b[2J\n7.json"};
    char *t = render_text_opts(report, strlen(report), &o, NULL, 0);
    size_t bad = 0;
    CHECK(t != NULL, "hostile report renders: %s", render_error());
    if (!t) continue;
    CHECK(termsafe(t, strlen(t), &bad), "brief %d: unsafe byte 0x%02x at %zu:\n%s", brief, (unsigned char)t[bad], bad,
          t);
    lines_ok(t, 0, brief ? "hostile brief" : "hostile");
    for (const char *l = t; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL)
      CHECK(strncmp(l, "culprit: the kernel that faulted: forged", 40) != 0 && strncmp(l, "culprit: fake", 13) != 0 &&
                strncmp(l, "culprit: forged", 15) != 0 && strncmp(l, "culprit: q", 10) != 0,
            "a forged line: %.60s", l);
    if (!brief) {
      CHECK(find(t, "k\\x1b[2Jern\\nel"), "the kernel name is shown escaped:\n%s", t);
      CHECK(find(t, "-- ./app $'x\\nculprit: the kernel that faulted: forged\\x1b[2J' 'caf\xc3\xa9 it'\\''s'"),
            "the rerun command quotes the hostile argument with $'...':\n%s", t);
      CHECK(find(t, "NCCL WARN bad\\x1b[2J\\nculprit: forged nccl"), "NCCL's line escaped:\n%s", t);
      CHECK(find(t, "train\\x1b[8m.py:4 in step\\n"), "Python frame escaped:\n%s", t);
    }
    free(t);
  }
}

/* ---- symbolize ---- */

static int write_file(const char *path, const char *text) {
  FILE *f = fopen(path, "w");
  if (!f) return -1;
  fputs(text, f);
  return fclose(f);
}

static char *read_all(const char *path) {
  FILE *f = fopen(path, "rb");
  char *buf;
  long n;
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  n = ftell(f);
  fseek(f, 0, SEEK_SET);
  buf = malloc((size_t)n + 1);
  if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) {
    free(buf);
    buf = NULL;
  }
  if (buf) buf[n] = '\0';
  fclose(f);
  return buf;
}

/* The helper program: it reports a return address the way libculprit does (offset from dli_fbase). */
static const char prog_src[] =
    "#define _GNU_SOURCE\n"
    "#include <dlfcn.h>\n"
    "#include <stdio.h>\n"
    "#include <unistd.h>\n"
    "__attribute__((noinline)) static void where(int line)\n"
    "{\n"
    "    void *ra = __builtin_return_address(0);\n"
    "    Dl_info di;\n"
    "    char exe[4096];\n"
    "    ssize_t n = readlink(\"/proc/self/exe\", exe, sizeof exe - 1);\n"
    "    if (n <= 0 || !dladdr(ra, &di))\n"
    "        return;\n"
    "    exe[n] = 0;\n"
    "    printf(\"%s\\n0x%lx\\n%d\\n\", exe, (unsigned long)((char *)ra - (char *)di.dli_fbase), line);\n"
    "}\n"
    "static __attribute__((noinline)) void inner_static(void)\n"
    "{\n"
    "    where(__LINE__);\n"
    "}\n"
    "int main(void)\n"
    "{\n"
    "    inner_static();\n"
    "    return 0;\n"
    "}\n";

/* Compiles the helper with extra flags and runs it; 0 and its module/offset/line, or -1. */
static int build_and_run(const char *dir, const char *flags, char *module, size_t modsz, char *offset, size_t offsz,
                         long *line) {
  char cmd[8192], src[1100], exe[1100];
  const char *cc = getenv("CC");
  FILE *p;
  int ok;
  snprintf(src, sizeof src, "%s/prog.c", dir);
  snprintf(exe, sizeof exe, "%s/prog%s", dir, strstr(flags, "no-pie") ? "_nopie" : "");
  if (write_file(src, prog_src)) return -1;
  snprintf(cmd, sizeof cmd, "%s -g -O0 %s -o '%s' '%s' -ldl >/dev/null 2>&1", cc && *cc ? cc : "cc", flags, exe, src);
  if (system(cmd) != 0) return -1;
  p = popen(exe, "r");
  if (!p) return -1;
  ok = fgets(module, (int)modsz, p) && fgets(offset, (int)offsz, p) && fscanf(p, "%ld", line) == 1;
  pclose(p);
  if (!ok) return -1;
  module[strcspn(module, "\n")] = '\0';
  offset[strcspn(offset, "\n")] = '\0';
  return 0;
}

static int have_program(const char *name) {
  char cmd[256];
  snprintf(cmd, sizeof cmd, "command -v %s >/dev/null 2>&1", name);
  return system(cmd) == 0;
}

/* Returns 1 when the round trip ran, 0 when it had to be skipped. */
static int test_symbolize(void) {
  char tmpl[] = "/tmp/culprit-test-XXXXXX";
  char *dir, path[1100], module[1024], offset[64], text[12288];
  const char *cc = getenv("CC");
  static const char *const flags[] = {"", "-no-pie -fno-pie"};
  size_t f;
  int ran = 0;
  long line;

  if (!have_program(cc && *cc ? cc : "cc") || !have_program("addr2line")) return 0;
  dir = mkdtemp(tmpl);
  if (!dir) return 0;
  snprintf(path, sizeof path, "%s/culprit-1.json", dir);

  for (f = 0; f < sizeof flags / sizeof flags[0]; f++) {
    struct json *doc = NULL;
    const struct json *fr, *cul;
    char why[512];
    struct stat sb;
    char *before, *after, *dm;
    int rc;

    if (build_and_run(dir, flags[f], module, sizeof module, offset, sizeof offset, &line) != 0) {
      if (f == 0) break; /* no working compiler after all */
      continue;          /* this toolchain cannot build without PIE; the PIE case still counts */
    }
    ran = 1;
    snprintf(text, sizeof text,
             "{\"schema\":\"culprit.report/1\",\"error\":{\"code\":700,\"stack\":["
             "{\"module\":\"%s\",\"offset\":\"%s\",\"function\":\"_init\"},"
             "{\"module\":\"/nonexistent/lib.so\",\"offset\":\"0x10\"},"
             "{\"module\":\"%s\",\"offset\":\"0x0\"}]},"
             "\"culprit\":{\"seq\":3,\"kernel\":\"_Z9write_oobPii\",\"mangled\":\"_Z9write_oobPii\","
             "\"stack\":[{\"module\":\"%s\",\"offset\":\"%s\"}]},"
             "\"history\":[{\"seq\":2,\"mangled\":\"_Z4fillPfi\"}]}",
             module, offset, module, module, offset);
    CHECK(write_file(path, text) == 0, "write the test report");

    /* addr2line missing: success, and frames are left alone */
    setenv(SYMBOLIZE_ADDR2LINE_ENV, "/nonexistent/addr2line", 1);
    rc = symbolize_file(path, why, sizeof why);
    unsetenv(SYMBOLIZE_ADDR2LINE_ENV);
    CHECK(rc == SYMBOLIZE_OK, "missing addr2line is not an error (rc %d: %s)", rc, why);
    before = read_all(path);
    CHECK(before && !strstr(before, "\"line\""), "no lines without addr2line");
    free(before);

    CHECK(chmod(path, 0640) == 0, "chmod the test report");
    rc = symbolize_report(path);
    CHECK(rc == SYMBOLIZE_OK, "symbolize_report rc %d", rc);
    CHECK(stat(path, &sb) == 0 && (sb.st_mode & 0777) == 0640, "report keeps its mode 0640 (%o)",
          (unsigned)(sb.st_mode & 0777));
    CHECK(symbolize_load(path, &doc, why, sizeof why) == SYMBOLIZE_OK, "symbolized report loads: %s", why);
    fr = json_at(json_get(json_get(doc, "error"), "stack"), 0);
    CHECK(json_get_int(fr, "line", 0) == line, "[%s] line %lld, expected %ld", flags[f], json_get_int(fr, "line", 0),
          line);
    CHECK(json_get_str(fr, "file") && strstr(json_get_str(fr, "file"), "prog.c"), "[%s] file %s", flags[f],
          json_get_str(fr, "file") ? json_get_str(fr, "file") : "(none)");
    CHECK(json_get_str(fr, "function") && strcmp(json_get_str(fr, "function"), "inner_static") == 0,
          "[%s] the static function's name replaces the dynamic-symbol guess: %s", flags[f],
          json_get_str(fr, "function") ? json_get_str(fr, "function") : "(none)");
    fr = json_at(json_get(json_get(doc, "error"), "stack"), 1);
    CHECK(fr && !json_get(fr, "file") && !json_get(fr, "function"), "a missing module is skipped");
    cul = json_get(doc, "culprit");
    fr = json_at(json_get(cul, "stack"), 0);
    CHECK(json_get_int(fr, "line", 0) == line, "culprit stack symbolized too");
    if ((dm = demangle_name("_Z1fv")) != NULL) {
      free(dm);
      CHECK(json_get_str(cul, "kernel") && strcmp(json_get_str(cul, "kernel"), "write_oob(int*, int)") == 0,
            "kernel demangled: %s", json_get_str(cul, "kernel") ? json_get_str(cul, "kernel") : "(none)");
      CHECK(json_get_str(json_at(json_get(doc, "history"), 0), "kernel") &&
                strcmp(json_get_str(json_at(json_get(doc, "history"), 0), "kernel"), "fill(float*, int)") == 0,
            "missing kernel filled from mangled");
    } else {
      CHECK(0, "no demangler in this test: link it with -Wl,--no-as-needed -lstdc++");
    }
    json_free(doc);

    /* a second pass has nothing to add and leaves the file as it is */
    before = read_all(path);
    CHECK(symbolize_report(path) == SYMBOLIZE_OK, "second pass");
    after = read_all(path);
    CHECK(before && after && strcmp(before, after) == 0, "second pass changes nothing");
    free(before);
    free(after);
  }

  /* bad inputs give clear codes and reasons */
  {
    char why[512] = "";
    char bad[1100];
    snprintf(bad, sizeof bad, "%s/culprit-bad.json", dir);
    CHECK(symbolize_file("/nonexistent/culprit-1.json", why, sizeof why) == SYMBOLIZE_EREAD &&
              strstr(why, "cannot read"),
          "unreadable: %s", why);
    write_file(bad, "{\"schema\":\"culprit.report/1\",");
    CHECK(symbolize_file(bad, why, sizeof why) == SYMBOLIZE_EPARSE && strstr(why, "byte"), "truncated: %s", why);
    write_file(bad, "{\"schema\":\"other\"}");
    CHECK(symbolize_file(bad, why, sizeof why) == SYMBOLIZE_ESCHEMA, "not a culprit report: %s", why);
    unlink(bad);

    /* a FIFO named like a report is refused at once instead of waiting for a writer */
    CHECK(mkfifo(bad, 0600) == 0, "mkfifo: %s", strerror(errno));
    CHECK(symbolize_file(bad, why, sizeof why) == SYMBOLIZE_EREAD && strstr(why, "not a regular file"), "fifo: %s",
          why);
    unlink(bad);

    /* a report naming a FIFO as a module: the module is passed over at once (opening it blocking waited for a
     * writer forever), the frame left as it was */
    {
      char fifo[1100], rep[1400];
      struct json *doc = NULL;
      snprintf(fifo, sizeof fifo, "%s/libfifo.so", dir);
      CHECK(mkfifo(fifo, 0600) == 0, "mkfifo: %s", strerror(errno));
      snprintf(rep, sizeof rep,
               "{\"schema\":\"culprit.report/1\",\"error\":{\"stack\":[{\"module\":\"%s\",\"offset\":\"0x10\"}]}}",
               fifo);
      write_file(bad, rep);
      CHECK(symbolize_file(bad, why, sizeof why) == SYMBOLIZE_OK, "a FIFO as a module: %s", why);
      CHECK(symbolize_load(bad, &doc, why, sizeof why) == SYMBOLIZE_OK &&
                !json_get(json_at(json_get(json_get(doc, "error"), "stack"), 0), "line"),
            "the FIFO's frame got a line");
      json_free(doc);
      unlink(fifo);
      unlink(bad);
    }

    /* a symlink to a report: the report it names is rewritten, the link stays a link */
    {
      struct json *doc = NULL;
      struct stat sb;
      char *saved;
      CHECK(symlink(path, bad) == 0, "symlink: %s", strerror(errno));
      CHECK(symbolize_load(bad, &doc, why, sizeof why) == SYMBOLIZE_OK, "load through a symlink: %s", why);
      CHECK(doc && json_set(doc, "marker", json_new_str("through the link")) == 0, "mark the report");
      CHECK(doc && symbolize_save(bad, doc, why, sizeof why) == SYMBOLIZE_OK, "save through a symlink: %s", why);
      CHECK(lstat(bad, &sb) == 0 && S_ISLNK(sb.st_mode), "the symlink stays a symlink");
      saved = read_all(path);
      CHECK(saved && strstr(saved, "through the link"), "the report the link names was rewritten");
      free(saved);
      json_free(doc);
      unlink(bad);
      /* a dangling link is not turned into a file either */
      CHECK(symlink("/nonexistent/culprit-x.json", bad) == 0, "symlink: %s", strerror(errno));
      doc = json_new(JSON_OBJ);
      CHECK(doc && symbolize_save(bad, doc, why, sizeof why) == SYMBOLIZE_EWRITE &&
                strstr(why, "not a regular file of yours") && lstat(bad, &sb) == 0 && S_ISLNK(sb.st_mode),
            "save through a dangling link refused: %s", why);
      json_free(doc);
      unlink(bad);
    }
  }

  snprintf(text, sizeof text, "rm -rf '%s'", dir);
  if (system(text) != 0) fprintf(stderr, "note: could not remove %s\n", dir);
  return ran;
}

/* A device assert is shown under the launches `culprit run` found it fits ("launches"): of two launches of one
 * kernel, only the one whose grid holds its block; a report without "launches" shows it under every launch of
 * the kernel it names. */
static void test_assert_launches(void) {
#define GATHER "\"kernel\":\"gather_rows(int*, int)\",\"stream\":\"0x0\",\"block\":[128,1,1]"
#define ASSERT                                                                                                         \
  "{\"file\":\"k.cu\",\"line\":8,\"kernel\":\"void gather_rows(int *, int)\",\"block\":[40,0,0],"                      \
  "\"thread\":[3,0,0],\"assertion\":\"i < n\",\"stream\":\"stderr\""
  static const char fits[] =
      "{\"schema\":\"culprit.report/1\",\"error\":{\"code\":710,\"name\":\"CUDA_ERROR_ASSERT\"},"
      "\"verdict\":{\"certainty\":\"candidates\",\"reason\":\"two streams\"},\"culprit\":null,"
      "\"candidates\":[{\"seq\":7,\"grid\":[16,1,1]," GATHER "},{\"seq\":12,\"grid\":[64,1,1]," GATHER "}],"
      "\"device_asserts\":[" ASSERT ",\"launches\":[12]}]}";
  static const char by_name[] =
      "{\"schema\":\"culprit.report/1\",\"error\":{\"code\":710,\"name\":\"CUDA_ERROR_ASSERT\"},"
      "\"verdict\":{\"certainty\":\"candidates\",\"reason\":\"two streams\"},\"culprit\":null,"
      "\"candidates\":[{\"seq\":7,\"grid\":[16,1,1]," GATHER "},{\"seq\":12,\"grid\":[64,1,1]," GATHER "}],"
      "\"device_asserts\":[" ASSERT "}]}";
#undef GATHER
#undef ASSERT
  const char *first, *second;
  char *t = render_text(fits, strlen(fits), 0);
  CHECK(t != NULL, "renders: %s", render_error());
  if (!t) return;
  first = find(t, "#7 gather_rows");
  second = find(t, "#12 gather_rows");
  CHECK(first && second && first < second, "both candidates listed:\n%s", t);
  if (first && second) {
    const char *at = find(first, "device assert: `i < n` failed at k.cu:8");
    CHECK(at && at > second && !find(at + 1, "device assert:"), "the assert under #12 alone:\n%s", t);
  }
  free(t);
  t = render_text(by_name, strlen(by_name), 0);
  CHECK(t != NULL, "renders: %s", render_error());
  if (!t) return;
  first = find(t, "device assert: `i < n`");
  CHECK(first && find(first + 1, "device assert: `i < n`"), "by name, under both:\n%s", t);
  free(t);
}

int main(void) {
  int symbolized;
  test_exact();
  test_waiting_thread();
  test_static_runtime_graph();
  test_candidates();
  test_argv_left_out();
  test_window_runs();
  test_assert_launches();
  test_unknown_and_missing();
  test_mutations();
  test_render_safe();
  test_hostile_strings();
  symbolized = test_symbolize();
  if (CHECK_DONE()) return 1;
  if (!symbolized) {
    printf("skipped: symbolize round trip (no C compiler or addr2line)\n");
    return 77;
  }
  return 0;
}
