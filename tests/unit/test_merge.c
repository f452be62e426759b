/* Unit test: merging the reports of a job. Fixture reports (abridged, as the library and older versions write
 * them) go through merge_jobs: the first fault by what faulted, then by the wall clock (with hosts' clocks skewed
 * on purpose), collateral ranks and the collective they wait in, clean ranks, missing ranks, jobs told apart by
 * run id and job name, old reports left alone; then the text (grouped in a job of many ranks) and the
 * culprit.job/1 JSON. */
#include "render/json.h"
#include "base/jsonw.h"
#include "report/merge.h"
#include "render/render.h"
#include "check.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAXR 64

static struct merge_report g_reps[MAXR]; /* the fixtures of the current case */
static struct json *g_docs[MAXR];        /* their trees */
static char g_paths[MAXR][96];           /* their file names */
static size_t g_n;                       /* fixtures in use */

static void reset(void) {
  for (size_t i = 0; i < g_n; i++) json_free(g_docs[i]);
  g_n = 0;
}

static void add(const char *path, const char *text) {
  struct json_error e;
  int rc = json_parse(text, strlen(text), &g_docs[g_n], &e);
  CHECK(rc == 0, "fixture %s: %s at %zu", path, e.msg, e.offset);
  if (rc) return;
  snprintf(g_paths[g_n], sizeof g_paths[g_n], "%s", path);
  g_reps[g_n].path = g_paths[g_n];
  g_reps[g_n].doc = g_docs[g_n];
  g_n++;
}

/* "process" of a ranked report. */
static const char *proc(char *buf, size_t n, int pid, const char *host, int rank, int world, const char *extra) {
  snprintf(buf, n,
           "\"process\":{\"pid\":%d,\"ppid\":1,\"exe\":\"/usr/bin/python3\",\"argv\":[\"python3\",\"train.py\"],"
           "\"hostname\":\"%s\",\"time_unix\":1,\"time_unix_ns\":1000000000,\"rank\":%d,\"local_rank\":%d,"
           "\"world_size\":%d,\"launcher\":\"torchrun\"%s}",
           pid, host, rank, rank, world, extra);
  return buf;
}

static void fault(const char *path, const char *process, unsigned long long t, const char *kernel, const char *file,
                  int line) {
  char text[4096];
  snprintf(
      text, sizeof text,
      "{\"schema\":\"culprit.report/1\",\"kind\":\"fault\",%s,\"error\":{\"code\":700,"
      "\"name\":\"CUDA_ERROR_ILLEGAL_ADDRESS\",\"message\":\"an illegal memory access was encountered\","
      "\"api\":\"cuStreamSynchronize\",\"thread\":1,\"time_ns\":5,\"time_unix_ns\":%llu,\"stack\":[]},"
      "\"verdict\":{\"certainty\":\"exact\",\"reason\":\"launch #5 was the only unfinished work\","
      "\"window\":{\"first\":5,\"last\":5}},\"culprit\":{\"seq\":5,\"api\":\"cuLaunchKernel\",\"kind\":\"kernel\","
      "\"kernel\":\"%s\",\"grid\":[4,1,1],\"block\":[64,1,1],\"python\":[{\"file\":\"/w/%s\",\"function\":\"step\","
      "\"line\":%d}],\"stack\":[]},\"candidates\":[],\"history\":[],\"streams\":[]}",
      process, t, kernel, file, line);
  add(path, text);
}

/* A hang report; launch is the in-flight culprit's kernel (NULL: idle), threads extra "threads" JSON. */
static void hang(const char *path, const char *process, const char *trigger, const char *launch, const char *threads) {
  char text[4096], culprit[600] = "null";
  if (launch)
    snprintf(culprit, sizeof culprit,
             "{\"seq\":9,\"api\":\"cuLaunchKernel\",\"kind\":\"kernel\",\"kernel\":\"%s\",\"python\":[{\"file\":"
             "\"/w/train.py\",\"function\":\"step\",\"line\":50}],\"stack\":[]}",
             launch);
  snprintf(text, sizeof text,
           "{\"schema\":\"culprit.report/1\",\"kind\":\"hang\",%s,\"hang\":{\"trigger\":\"%s\",%s\"stalled_ms\":9000,"
           "\"time_ns\":1,\"time_unix_ns\":9},\"verdict\":{\"certainty\":\"%s\",\"reason\":\"r\"},\"culprit\":%s,"
           "\"candidates\":[],\"queued\":[],\"streams\":[],\"threads\":%s}",
           process, trigger, strcmp(trigger, "timeout") == 0 ? "\"timeout_s\":60," : "\"signal\":15,",
           launch ? "exact" : "idle", culprit, threads ? threads : "[]");
  add(path, text);
}

/* A hang report with a launch in flight and another queued behind it (NULL: none). */
static void hangq(const char *path, const char *process, const char *trigger, const char *launch, const char *queued) {
  char text[4096], q[600] = "[]";
  if (queued)
    snprintf(q, sizeof q, "[{\"seq\":10,\"api\":\"cuLaunchKernel\",\"kind\":\"kernel\",\"kernel\":\"%s\"}]", queued);
  snprintf(text, sizeof text,
           "{\"schema\":\"culprit.report/1\",\"kind\":\"hang\",%s,\"hang\":{\"trigger\":\"%s\",\"signal\":15,"
           "\"time_ns\":1,\"time_unix_ns\":9},\"verdict\":{\"certainty\":\"exact\",\"reason\":\"r\"},\"culprit\":"
           "{\"seq\":9,\"api\":\"cuLaunchKernel\",\"kind\":\"kernel\",\"kernel\":\"%s\",\"python\":[{\"file\":"
           "\"/w/train.py\",\"function\":\"step\",\"line\":50}],\"stack\":[]},\"candidates\":[],\"queued\":%s,"
           "\"streams\":[],\"threads\":[]}",
           process, trigger, launch, q);
  add(path, text);
}

static void exitrec(const char *path, const char *process, int status) {
  char text[2048];
  snprintf(
      text, sizeof text,
      "{\"schema\":\"culprit.report/1\",\"kind\":\"exit\",%s,\"exit\":{\"status\":%d},\"stats\":{\"launches\":12}}",
      process, status);
  add(path, text);
}

static struct merge_job *g_jobs; /* merged jobs of the current case */
static size_t g_nj;              /* their count */

static void merge(void) {
  merge_free(g_jobs, g_nj);
  g_jobs = NULL;
  g_nj = 0;
  CHECK(merge_jobs(g_reps, g_n, &g_jobs, &g_nj) == 0);
}

static const struct merge_proc *rank_of(const struct merge_job *j, int rank) {
  for (size_t i = 0; i < j->nprocs; i++)
    if (j->procs[i].rank == rank) return &j->procs[i];
  return NULL;
}

#define HAS(s, sub) (strstr((s), (sub)) != NULL)

static const char C10D[] =
    "[{\"tid\":7,\"name\":\"python3\",\"state\":\"S\",\"stack\":[],\"python\":[{\"file\":"
    "\"/usr/lib/python3/dist-packages/torch/distributed/distributed_c10d.py\",\"function\":\"all_reduce\",\"line\":"
    "2501},{\"file\":\"/w/train.py\",\"function\":\"step\",\"line\":44}]}]";

static const char ALLREDUCE[] = "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)";
#define SEC 1000000000ull

/* The job as culprit.job/1, parsed back; NULL when it does not parse. */
static struct json *job_json(const struct merge_job *j) {
  struct jw w;
  struct json *doc = NULL;
  jw_init(&w);
  merge_write_json(j, g_reps, &w);
  CHECK(!w.err && json_parse(w.buf, w.len, &doc, NULL) == 0);
  jw_free(&w);
  return doc;
}

static int str_is(const char *s, const char *want) { return s && strcmp(s, want) == 0; }

/* Hosts whose clocks disagree by seconds while a fault spreads in milliseconds: what faulted decides before the
 * clocks do, and the verdict says when the order rests on the clocks of several hosts. */
static void clocks_cases(void) {
  char p[8][600];
  const char *job = ",\"job\":\"torchrun:77\"";

  /* rank 2 on nodeB faults in its own kernel at 10 s by nodeB's clock; its fault breaks the all-reduce, in which
   * rank 0 on nodeA faults 5 ms later, but nodeA's clock is 3 s behind: by the clocks rank 0 was first */
  fault("k/culprit-nodeB-20.json", proc(p[2], sizeof p[2], 20, "nodeB", 2, 4, job), 10 * SEC, "write_oob(int*, int)",
        "train.py", 42);
  fault("k/culprit-nodeA-10.json", proc(p[0], sizeof p[0], 10, "nodeA", 0, 4, job), 7 * SEC + 5000000, ALLREDUCE,
        "train.py", 60);
  hang("k/culprit-nodeA-11-hang.json", proc(p[1], sizeof p[1], 11, "nodeA", 1, 4, job), "SIGTERM", ALLREDUCE, NULL);
  hang("k/culprit-nodeB-21-hang.json", proc(p[3], sizeof p[3], 21, "nodeB", 3, 4, job), "SIGTERM", ALLREDUCE, NULL);
  merge();
  CHECK(g_nj == 1);
  if (g_nj == 1) {
    const struct merge_job *j = &g_jobs[0];
    CHECK(j->first >= 0 && j->procs[j->first].rank == 2 && j->order == MERGE_ORDER_KERNEL, "first %ld, order %d",
          j->first, j->order);
    CHECK(HAS(j->verdict, "job of 4 ranks (torchrun) on 2 hosts: rank 2 (on nodeB) faulted first: write_oob(int*, int) "
                          "launched at train.py:42; rank 0 also faulted, inside AllReduce; rank 2 comes first by what "
                          "faulted, not by the clocks: a collective fails after another rank's fault; ranks 1, 3 are "
                          "collateral (stopped by SIGTERM while waiting in AllReduce)"),
          "%s", j->verdict);
    CHECK(rank_of(j, 0) && rank_of(j, 0)->in_collective && !strcmp(rank_of(j, 0)->collective, "AllReduce"));
    CHECK(rank_of(j, 0) && HAS(rank_of(j, 0)->what, "also faulted, inside a collective, 2.995 s earlier by the clocks "
                                                    "of two hosts: CUDA_ERROR_ILLEGAL_ADDRESS (700) in NCCL AllReduce"),
          "%s", rank_of(j, 0)->what);
    struct json *doc = job_json(j);
    const struct json *ff = json_get(doc, "first_fault"), *procs = json_get(doc, "processes");
    CHECK(json_get_int(ff, "rank", -1) == 2 && str_is(json_get_str(ff, "order"), "kernel") &&
          str_is(json_get_str(ff, "host"), "nodeB"));
    CHECK(json_len(procs) == 4 && str_is(json_get_str(json_at(procs, 0), "status"), "faulted") &&
          str_is(json_get_str(json_at(procs, 0), "collective"), "AllReduce"));
    const struct json *hosts = json_get(doc, "hosts");
    CHECK(json_len(hosts) == 2 && str_is(json_at(hosts, 0)->str, "nodeA") && str_is(json_at(hosts, 1)->str, "nodeB"),
          "hosts in the order of their first rank");
    json_free(doc);
  }
  reset();

  /* the same, but the collective's fault also comes later by the clocks: nothing to explain */
  fault("k/culprit-nodeB-20.json", proc(p[2], sizeof p[2], 20, "nodeB", 2, 2, job), 10 * SEC, "write_oob(int*, int)",
        "train.py", 42);
  fault("k/culprit-nodeA-10.json", proc(p[0], sizeof p[0], 10, "nodeA", 0, 2, job), 10 * SEC + 5000000, ALLREDUCE,
        "train.py", 60);
  merge();
  CHECK(g_nj == 1 && g_jobs[0].order == MERGE_ORDER_KERNEL && g_jobs[0].procs[g_jobs[0].first].rank == 2);
  if (g_nj == 1) {
    CHECK(!HAS(g_jobs[0].verdict, "comes first") && HAS(g_jobs[0].verdict, "rank 0 also faulted, inside AllReduce"),
          "%s", g_jobs[0].verdict);
    CHECK(HAS(rank_of(&g_jobs[0], 0)->what, "also faulted, inside a collective, 0.005 s later by the clocks of two "
                                            "hosts"),
          "%s", rank_of(&g_jobs[0], 0)->what);
  }
  reset();

  /* two ranks fault in their own kernels on two hosts whose clocks are 2 s apart: the clocks decide, and the
   * verdict says so; move one clock and the other rank comes first */
  for (int skew = 0; skew < 2; skew++) {
    unsigned long long t1 = 5 * SEC, t0 = skew ? 3 * SEC : 6 * SEC;
    fault("c/culprit-nodeA-10.json", proc(p[0], sizeof p[0], 10, "nodeA", 0, 3, job), t0, "scale(float*)", "train.py",
          61);
    fault("c/culprit-nodeB-20.json", proc(p[1], sizeof p[1], 20, "nodeB", 1, 3, job), t1, "softmax(float*)", "train.py",
          62);
    exitrec("c/culprit-nodeB-21-exit.json", proc(p[2], sizeof p[2], 21, "nodeB", 2, 3, job), 0);
    merge();
    CHECK(g_nj == 1);
    if (g_nj == 1) {
      const struct merge_job *j = &g_jobs[0];
      int want = skew ? 0 : 1;
      CHECK(j->first >= 0 && j->procs[j->first].rank == want && j->order == MERGE_ORDER_CLOCKS && j->order_hosts == 2,
            "skew %d: first rank %d, order %d", skew, j->first >= 0 ? j->procs[j->first].rank : -1, j->order);
      CHECK(HAS(j->verdict, "; which of ranks 0, 1 faulted first rests on the clocks of 2 hosts"), "%s", j->verdict);
      CHECK(HAS(j->verdict, want ? "rank 1 (on nodeB) faulted first: softmax(float*)"
                                 : "rank 0 (on nodeA) faulted first: scale(float*)"),
            "%s", j->verdict);
      struct json *doc = job_json(j);
      CHECK(str_is(json_get_str(json_get(doc, "first_fault"), "order"), "clocks") &&
            json_get_int(json_get(doc, "first_fault"), "clock_hosts", -1) == 2);
      json_free(doc);
    }
    reset();
  }

  /* every fault inside a collective (the rank that broke it left no fault report): the clocks decide */
  fault("n/culprit-nodeA-10.json", proc(p[0], sizeof p[0], 10, "nodeA", 0, 2, job), 4 * SEC, ALLREDUCE, "train.py", 60);
  fault("n/culprit-nodeB-20.json", proc(p[1], sizeof p[1], 20, "nodeB", 1, 2, job), 2 * SEC, ALLREDUCE, "train.py", 60);
  merge();
  CHECK(g_nj == 1 && g_jobs[0].procs[g_jobs[0].first].rank == 1 && g_jobs[0].order == MERGE_ORDER_CLOCKS);
  if (g_nj == 1)
    CHECK(HAS(g_jobs[0].verdict, "rank 0 also faulted, inside AllReduce; which of ranks 0, 1 faulted first rests on "
                                 "the clocks of 2 hosts"),
          "%s", g_jobs[0].verdict);
  reset();

  /* a candidate window that holds the rank's own kernel is not a fault inside a collective */
  add("w/culprit-nodeA-10.json",
      "{\"schema\":\"culprit.report/1\",\"kind\":\"fault\",\"process\":{\"pid\":10,\"hostname\":\"nodeA\","
      "\"rank\":0,\"world_size\":2,\"launcher\":\"torchrun\",\"job\":\"torchrun:77\"},\"error\":{\"code\":700,"
      "\"time_unix_ns\":9000000000},\"verdict\":{\"certainty\":\"candidates\"},\"culprit\":null,\"candidates\":"
      "[{\"seq\":3,\"kernel\":\"step(float*, "
      "int)\"},{\"seq\":4,\"kernel\":\"ncclDevKernel_AllReduce_Sum_f32_RING_LL\"}]}");
  fault("w/culprit-nodeB-20.json", proc(p[1], sizeof p[1], 20, "nodeB", 1, 2, job), 1 * SEC, ALLREDUCE, "train.py", 60);
  merge();
  CHECK(g_nj == 1 && g_jobs[0].procs[g_jobs[0].first].rank == 0 && g_jobs[0].order == MERGE_ORDER_KERNEL, "%s",
        g_nj ? g_jobs[0].verdict : "");
  reset();
}

/* A job of many ranks: the text stays a few lines, ranks grouped by status and by what they waited in. */
static void scale_cases(void) {
  static char procs[MAXR][600];
  const char *job = ",\"job\":\"torchrun:big\"";
  const int world = 48; /* more than MERGE_LINES_MAX */
  for (int r = 0; r < world; r++) {
    char path[64];
    if (r == 30) continue; /* killed: no report */
    proc(procs[r], sizeof procs[r], 100 + r, r < 24 ? "nodeA" : "nodeB", r, world, job);
    if (r == 17) {
      snprintf(path, sizeof path, "g/culprit-nodeA-%d.json", 100 + r);
      fault(path, procs[r], 5 * SEC, "write_oob(int*, int)", "train.py", 42);
    } else if (r >= 5 && r <= 7) {
      snprintf(path, sizeof path, "g/culprit-nodeA-%d-hang.json", 100 + r);
      hangq(path, procs[r], "SIGTERM", "step(float*, int)", "ncclDevKernel_AllReduce_Sum_f32_RING_LL");
    } else {
      snprintf(path, sizeof path, "g/culprit-%s-%d-hang.json", r < 24 ? "nodeA" : "nodeB", 100 + r);
      hang(path, procs[r], "SIGTERM", ALLREDUCE, NULL);
    }
  }
  merge();
  CHECK(g_nj == 1);
  if (g_nj == 1) {
    const struct merge_job *j = &g_jobs[0];
    struct render_opts ro = {.brief = 1};
    CHECK(HAS(j->verdict, "job of 48 ranks (torchrun) on 2 hosts: rank 17 (on nodeA) faulted first: write_oob(int*, "
                          "int) launched at train.py:42; ranks 0-4, 8-16, 18-29, 31-47 are collateral (stopped by "
                          "SIGTERM while waiting in AllReduce); ranks 5-7 are collateral (stopped by SIGTERM); rank 30 "
                          "is missing (no report)"),
          "%s", j->verdict);
    char *text = merge_render(j, g_reps, &ro);
    CHECK(text != NULL);
    if (text) {
      size_t lines = 0;
      for (const char *c = text; *c; c++) lines += *c == '\n';
      CHECK(lines == 14, "%zu lines, for 48 ranks:\n%s", lines, text);
      CHECK(HAS(text,
                "\nculprit:   ranks 0-4, 8-16, 18-29, 31-47 (43 ranks on 2 hosts): collateral: stopped by SIGTERM "
                "while\nculprit:       waiting in NCCL AllReduce (sum, f32, ring, LL); reports such as\n"
                "culprit:       culprit-nodeA-100-hang.json\n"),
            "%s", text);
      CHECK(HAS(text,
                "\nculprit:   ranks 5-7 (3 ranks): collateral: stopped by SIGTERM with step(float*, int) launched "
                "at\nculprit:       train.py:50 in flight, NCCL AllReduce (sum, f32, ring, LL) queued behind it; "
                "reports\nculprit:       such as culprit-nodeA-105-hang.json\n"),
            "%s", text);
      CHECK(HAS(text, "\nculprit:   rank 17 (nodeA, pid 117): faulted first:"), "%s", text);
      CHECK(HAS(text, "\nculprit:   rank 30: missing: no report"), "%s", text);
      /* in the order of each group's first rank */
      const char *g1 = strstr(text, "\nculprit:   ranks 0-4, 8-16"), *g2 = strstr(text, "\nculprit:   ranks 5-7 (");
      const char *g3 = strstr(text, "\nculprit:   rank 17 ("), *g4 = strstr(text, "\nculprit:   rank 30:");
      CHECK(g1 && g1 < g2 && g2 < g3 && g3 < g4, "%s", text);
      free(text);
    }
    CHECK(rank_of(j, 6) && rank_of(j, 6)->collective[0] == '\0', "rank 6 has not reached the all-reduce");
    struct json *doc = job_json(j);
    const struct json *procs_j = json_get(doc, "processes");
    CHECK(json_len(procs_j) == 48, "%zu entries", json_len(procs_j));
    for (size_t i = 0; i < json_len(procs_j); i++) {
      const struct json *e = json_at(procs_j, i);
      size_t want = json_get_int(e, "rank", -1) == 30 ? 0 : 1;
      CHECK(json_len(json_get(e, "reports")) == want, "rank %lld: %zu reports", json_get_int(e, "rank", -1),
            json_len(json_get(e, "reports")));
    }
    json_free(doc);
  }
  reset();

  /* a list too long to read is cut: every other rank collateral, the others clean */
  for (int r = 0; r < 60; r++) {
    char path[64];
    proc(procs[r], sizeof procs[r], 300 + r, "vm", r, 60, job);
    snprintf(path, sizeof path, "l/culprit-vm-%d%s.json", 300 + r, r % 2 ? "-exit" : "-hang");
    if (r % 2)
      exitrec(path, procs[r], 0);
    else
      hang(path, procs[r], "SIGTERM", ALLREDUCE, NULL);
  }
  merge();
  CHECK(g_nj == 1);
  if (g_nj == 1)
    CHECK(HAS(g_jobs[0].verdict,
              "no rank faulted; ranks 0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30, 32, "
              "34, 36, 38, 40, 42, 44, 46 and 6 more hung (stopped by SIGTERM while waiting in "
              "AllReduce); ranks 1, 3,"),
          "%s", g_jobs[0].verdict);
  reset();
}

int main(void) {
  char p[8][600];
  const char *run = ",\"run_id\":\"vm-77-1\"";

  /* 4 ranks: rank 2 faults; 0 and 1 time out in NCCL's AllReduce, 3 in torch.distributed.all_reduce */
  fault("r/culprit-vm-102.json", proc(p[2], sizeof p[2], 102, "vm", 2, 4, run), 5000, "write_oob(int*, int)",
        "train.py", 42);
  hang("r/culprit-vm-100-hang.json", proc(p[0], sizeof p[0], 100, "vm", 0, 4, run), "timeout",
       "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)", NULL);
  hang("r/culprit-vm-101-hang.json", proc(p[1], sizeof p[1], 101, "vm", 1, 4, run), "timeout",
       "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)", NULL);
  hang("r/culprit-vm-103-hang.json", proc(p[3], sizeof p[3], 103, "vm", 3, 4, run), "timeout", NULL, C10D);
  merge();
  CHECK(g_nj == 1, "%zu jobs", g_nj);
  if (g_nj == 1) {
    const struct merge_job *j = &g_jobs[0];
    CHECK(merge_is_job(j) && j->ranked && j->world_size == 4 && j->nprocs == 4 && j->nhosts == 1);
    CHECK(j->launcher && !strcmp(j->launcher, "torchrun"));
    CHECK(j->first >= 0 && j->procs[j->first].rank == 2 && j->procs[j->first].first);
    CHECK(HAS(j->verdict, "job of 4 ranks (torchrun): rank 2 faulted first: write_oob(int*, int) launched at "
                          "train.py:42"),
          "%s", j->verdict);
    CHECK(HAS(j->verdict, "ranks 0, 1 are collateral (no progress for 60 s while waiting in AllReduce)"), "%s",
          j->verdict);
    CHECK(HAS(j->verdict, "rank 3 is collateral (no progress for 60 s while waiting in all_reduce)"), "%s", j->verdict);
    CHECK(rank_of(j, 0) && rank_of(j, 0)->status == MERGE_COLLATERAL &&
          !strcmp(rank_of(j, 0)->collective, "AllReduce"));
    CHECK(rank_of(j, 0) && HAS(rank_of(j, 0)->what, "NCCL AllReduce (sum, f32, ring, LL)"), "%s", rank_of(j, 0)->what);
    CHECK(rank_of(j, 3) && !strcmp(rank_of(j, 3)->collective, "all_reduce"));
    struct render_opts ro = {.brief = 0, .path = NULL};
    char *text = merge_render(j, g_reps, &ro);
    CHECK(text != NULL);
    if (text) {
      CHECK(!strncmp(text, "culprit: job of 4 ranks", 23), "%s", text);
      CHECK(HAS(text, "culprit:   rank 0 (vm, pid 100): collateral: no progress for 60 s while waiting in NCCL"), "%s",
            text);
      CHECK(HAS(text, "culprit-vm-103-hang.json"), "%s", text);
      CHECK(HAS(text, "culprit: rank 2, the first to fault:\nculprit: CUDA_ERROR_ILLEGAL_ADDRESS (700)"), "%s", text);
      CHECK(HAS(text, "the kernel that faulted: write_oob(int*, int)"), "%s", text);
      CHECK(HAS(text, "report: r/culprit-vm-102.json"), "%s", text);
      for (char *l = text; *l; l = strchr(l, '\n') + 1)
        CHECK(!strncmp(l, "culprit:", 8), "a line without the prefix: %.60s", l);
      free(text);
    }
    ro.brief = 1;
    text = merge_render(j, g_reps, &ro);
    CHECK(text && !HAS(text, "the kernel that faulted"), "brief shows no full verdict");
    free(text);

    /* the JSON, read back */
    struct jw w;
    struct json *doc = NULL;
    jw_init(&w);
    merge_write_json(j, g_reps, &w);
    CHECK(!w.err && json_parse(w.buf, w.len, &doc, NULL) == 0);
    CHECK(!strcmp(json_get_str(doc, "schema") ? json_get_str(doc, "schema") : "", "culprit.job/1"));
    CHECK(json_get_int(doc, "world_size", -1) == 4);
    CHECK(json_get_int(json_get(doc, "first_fault"), "rank", -1) == 2);
    CHECK(json_get_int(json_get(doc, "first_fault"), "seq", -1) == 5);
    CHECK(!strcmp(json_get_str(json_get(doc, "first_fault"), "launched_at")
                      ? json_get_str(json_get(doc, "first_fault"), "launched_at")
                      : "",
                  "train.py:42"));
    const struct json *procs = json_get(doc, "processes");
    CHECK(json_len(procs) == 4);
    CHECK(!strcmp(json_get_str(json_at(procs, 0), "status"), "collateral") &&
          !strcmp(json_get_str(json_at(procs, 0), "trigger"), "timeout") &&
          !strcmp(json_get_str(json_at(procs, 0), "collective"), "AllReduce"));
    CHECK(!strcmp(json_get_str(json_at(procs, 2), "status"), "faulted") &&
          json_is(json_get(json_at(procs, 2), "first"), JSON_BOOL) && json_get(json_at(procs, 2), "first")->boolean);
    CHECK(json_len(json_get(json_at(procs, 2), "reports")) == 1);
    json_free(doc);
    jw_free(&w);
  }
  reset();

  /* between faults in the ranks' own kernels on one host, the first is the earliest by the wall clock, not the
   * lowest rank or the first file */
  fault("r/culprit-vm-201.json", proc(p[1], sizeof p[1], 201, "vm", 1, 3, run), 1000, "softmax(float*)", "train.py",
        60);
  fault("r/culprit-vm-200.json", proc(p[0], sizeof p[0], 200, "vm", 0, 3, run), 2500000000ull, "scale(float*)",
        "train.py", 61);
  exitrec("r/culprit-vm-202-exit.json", proc(p[2], sizeof p[2], 202, "vm", 2, 3, run), 0);
  merge();
  CHECK(g_nj == 1 && g_jobs[0].first >= 0 && g_jobs[0].procs[g_jobs[0].first].rank == 1);
  if (g_nj == 1) {
    const struct merge_job *j = &g_jobs[0];
    CHECK(HAS(j->verdict, "rank 1 faulted first: softmax(float*) launched at train.py:60"), "%s", j->verdict);
    CHECK(HAS(j->verdict, "rank 0 also faulted") && HAS(j->verdict, "rank 2 saw no fault"), "%s", j->verdict);
    CHECK(j->order == MERGE_ORDER_CLOCK && !HAS(j->verdict, "clocks"), "one host's clock: %s", j->verdict);
    CHECK(rank_of(j, 0) && HAS(rank_of(j, 0)->what, "also faulted, 2.500 s later"), "%s", rank_of(j, 0)->what);
    CHECK(rank_of(j, 2) && rank_of(j, 2)->status == MERGE_CLEAN && HAS(rank_of(j, 2)->what, "status 0 after 12"), "%s",
          rank_of(j, 2)->what);
  }
  reset();

  /* missing ranks, and a forked child that inherited its parent's rank */
  fault("r/culprit-vm-300.json", proc(p[0], sizeof p[0], 300, "vm", 0, 6, run), 10, "k(int)", "a.py", 1);
  exitrec("r/culprit-vm-301-exit.json", proc(p[1], sizeof p[1], 301, "vm", 1, 6, run), 3);
  exitrec("r/culprit-vm-309-exit.json", proc(p[2], sizeof p[2], 309, "vm", 1, 6, run), 0);
  merge();
  CHECK(g_nj == 1);
  if (g_nj == 1) {
    const struct merge_job *j = &g_jobs[0];
    CHECK(j->nprocs == 4, "%zu entries (3 processes, one run of 4 missing ranks)", j->nprocs);
    CHECK(rank_of(j, 2) && rank_of(j, 2)->status == MERGE_MISSING && rank_of(j, 2)->pid == -1 &&
          rank_of(j, 2)->rank_last == 5);
    CHECK(HAS(j->verdict, "ranks 2-5 are missing (no report)"), "%s", j->verdict);
    CHECK(HAS(j->verdict, "rank 1 (pid 301), rank 1 (pid 309) saw no fault"), "%s", j->verdict);
    CHECK(rank_of(j, 1) && HAS(rank_of(j, 1)->what, "status 3"), "%s", rank_of(j, 1)->what);
  }
  reset();

  /* one report claiming a world of ten million: the missing ranks are two runs, not ten million entries (which
   * took 61 s and 12.9 GB), and the text and JSON name them as runs */
  fault("r/culprit-vm-310.json", proc(p[0], sizeof p[0], 310, "vm", 4, 10000000, run), 10, "k(int)", "a.py", 1);
  exitrec("r/culprit-vm-311-exit.json", proc(p[1], sizeof p[1], 311, "vm", 2, 3, run), 0);
  merge();
  CHECK(g_nj == 1);
  if (g_nj == 1) {
    const struct merge_job *j = &g_jobs[0];
    struct render_opts ro = {.brief = 1};
    CHECK(j->nprocs == 5, "%zu entries (2 processes, runs 0-1, 3, 5-9999999)", j->nprocs);
    CHECK(HAS(j->verdict, "job of 10000000 ranks (torchrun): rank 4 faulted first") &&
              HAS(j->verdict, "; ranks 0, 1, 3, 5-9999999 are missing (no report)"),
          "%s", j->verdict);
    char *text = merge_render(j, g_reps, &ro);
    CHECK(text && HAS(text, "\nculprit:   ranks 5-9999999: missing: no report") &&
              HAS(text, "\nculprit:   ranks 0, 1: missing: no report") && HAS(text, "\nculprit:   rank 3: missing:"),
          "%s", text ? text : "(null)");
    free(text);
    struct json *doc = job_json(j);
    const struct json *procs = json_get(doc, "processes");
    CHECK(json_len(procs) == 5, "%zu JSON entries", json_len(procs));
    CHECK(json_get_int(json_at(procs, 4), "rank", -1) == 5 &&
              json_get_int(json_at(procs, 4), "last_rank", -1) == 9999999 && !json_get(json_at(procs, 2), "last_rank"),
          "the runs in JSON");
    json_free(doc);
  }
  reset();

  /* no rank faulted: the one not waiting in the collective stands out, named with the kernel its breadcrumbs
   * say it runs, and its report is the one shown */
  for (int r = 0; r < 4; r++) {
    char path[64];
    snprintf(path, sizeof path, "r/culprit-vm-%d-hang.json", 400 + r);
    hang(path, proc(p[r], sizeof p[r], 400 + r, "vm", r, 4, run), "SIGTERM",
         r == 2 ? "step(float*, int)" : "ncclDevKernel_AllReduce_Sum_f32_RING_LL", NULL);
  }
  merge();
  CHECK(g_nj == 1);
  if (g_nj == 1) {
    const struct merge_job *j = &g_jobs[0];
    CHECK(j->first == -1);
    CHECK(HAS(j->verdict, "no rank faulted; rank 2 runs step(float*, int) launched at train.py:50 (its breadcrumbs "
                          "say so): look there first; ranks 0, 1, 3 hung (stopped by SIGTERM while waiting in "
                          "AllReduce)"),
          "%s", j->verdict);
    CHECK(rank_of(j, 2) && HAS(rank_of(j, 2)->what, "with step(float*, int) launched at train.py:50 in flight"), "%s",
          rank_of(j, 2)->what);
    struct render_opts ro = {.brief = 0, .path = NULL};
    char *text = merge_render(j, g_reps, &ro);
    CHECK(text && HAS(text, "culprit: rank 2's hang report:"), "%s", text ? text : "");
    free(text);
  }
  reset();

  /* jobs apart: two `culprit run` commands of one Slurm step on two hosts are one job; two torchrun jobs under
   * one `culprit run`, two runs reusing a directory, and reports of other versions are not */
  {
    char a[600], b[600];
    snprintf(a, sizeof a,
             "\"process\":{\"pid\":10,\"hostname\":\"n1\",\"rank\":0,\"world_size\":2,\"launcher\":\"slurm\","
             "\"job\":\"slurm:9.0\",\"run_id\":\"n1-5-1\"}");
    snprintf(b, sizeof b,
             "\"process\":{\"pid\":10,\"hostname\":\"n2\",\"rank\":1,\"world_size\":2,\"launcher\":\"slurm\","
             "\"job\":\"slurm:9.0\",\"run_id\":\"n2-5-1\"}");
    fault("s/culprit-n2-10.json", b, 77, "k(int)", "t.py", 3);
    exitrec("s/culprit-n1-10-exit.json", a, 0);
  }
  merge();
  CHECK(g_nj == 1 && g_jobs[0].nprocs == 2 && g_jobs[0].nhosts == 2, "same pid on two hosts: two processes");
  if (g_nj == 1)
    CHECK(HAS(g_jobs[0].verdict, "job of 2 ranks (slurm) on 2 hosts: rank 1 (on n2) faulted first"), "%s",
          g_jobs[0].verdict);
  reset();

  fault("t/culprit-vm-1.json", proc(p[0], sizeof p[0], 1, "vm", 0, 1, ",\"job\":\"torchrun:A\",\"run_id\":\"x\""), 1,
        "k(int)", "t.py", 1);
  fault("t/culprit-vm-2.json", proc(p[1], sizeof p[1], 2, "vm", 0, 1, ",\"job\":\"torchrun:B\",\"run_id\":\"x\""), 2,
        "k(int)", "t.py", 1);
  fault("t/culprit-vm-3.json", proc(p[2], sizeof p[2], 3, "vm", 0, 1, ",\"run_id\":\"y\""), 3, "k(int)", "t.py", 1);
  merge();
  CHECK(g_nj == 3, "%zu jobs: two torchrun jobs and another run", g_nj);
  reset();

  /* reports of other versions: no kind, no rank, no run id; each is shown on its own as before */
  add("o/culprit-11.json",
      "{\"schema\":\"culprit.report/1\",\"process\":{\"pid\":11,\"hostname\":\"vm\"},"
      "\"error\":{\"code\":700,\"name\":\"CUDA_ERROR_ILLEGAL_ADDRESS\"},\"verdict\":{\"certainty\":"
      "\"unknown\",\"reason\":\"r\"},\"culprit\":null,\"candidates\":[]}");
  add("o/culprit-12.json", "{\"schema\":\"culprit.report/1\",\"process\":{\"pid\":12},\"error\":{\"code\":710}}");
  merge();
  CHECK(g_nj == 2 && !merge_is_job(&g_jobs[0]) && !merge_is_job(&g_jobs[1]));
  CHECK(g_nj == 2 && g_jobs[0].nprocs == 1 && g_jobs[0].procs[0].status == MERGE_FAULTED);
  /* ...and several of one run without a rank are merged as processes, the first fault by file order */
  reset();
  add("o/culprit-21.json", "{\"schema\":\"culprit.report/1\",\"process\":{\"pid\":21,\"run_id\":\"z\"},"
                           "\"error\":{\"code\":700}}");
  add("o/culprit-22.json", "{\"schema\":\"culprit.report/1\",\"process\":{\"pid\":22,\"run_id\":\"z\"},"
                           "\"error\":{\"code\":700},\"verdict\":{\"certainty\":\"candidates\"},\"culprit\":null,"
                           "\"candidates\":[{\"seq\":3,\"kernel\":\"a(int)\"},{\"seq\":4,\"kernel\":\"b(int)\"}]}");
  merge();
  CHECK(g_nj == 1 && merge_is_job(&g_jobs[0]) && !g_jobs[0].ranked);
  if (g_nj == 1) {
    CHECK(HAS(g_jobs[0].verdict, "job of 2 processes: process 21 faulted first: a kernel culprit could not name; "
                                 "process 22 also faulted"),
          "%s", g_jobs[0].verdict);
    CHECK(g_jobs[0].procs[1].status == MERGE_FAULTED && HAS(g_jobs[0].procs[1].what, "one of 2 launches (#3..#4)"),
          "%s", g_jobs[0].procs[1].what);
  }
  /* ranked reports of a version without run ids: grouped by directory */
  reset();
  fault("d1/culprit-vm-1.json", proc(p[0], sizeof p[0], 1, "vm", 0, 2, ""), 1, "k(int)", "t.py", 1);
  exitrec("d1/culprit-vm-2-exit.json", proc(p[1], sizeof p[1], 2, "vm", 1, 2, ""), 0);
  exitrec("d2/culprit-vm-3-exit.json", proc(p[2], sizeof p[2], 3, "vm", 1, 2, ""), 0);
  merge();
  CHECK(g_nj == 2 && g_jobs[0].nreports == 2 && g_jobs[1].nreports == 1);
  reset();

  /* the text of one report: an exit record, an NCCL culprit and NCCL's warnings */
  exitrec("x/culprit-vm-5-exit.json", proc(p[0], sizeof p[0], 5, "vm", 1, 3, ""), 0);
  {
    struct render_opts ro = {.brief = 0, .path = "x/culprit-vm-5-exit.json"};
    char *text = render_doc(g_docs[0], &ro);
    CHECK(text && !strcmp(text, "culprit: rank 1 of 3 (torchrun) on host vm, pid 5, saw no CUDA error; it exited "
                                "with status 0 after 12 launches\nculprit: report: x/culprit-vm-5-exit.json\n"),
          "%s", text ? text : "");
    free(text);
    ro.brief = 1;
    text = render_doc(g_docs[0], &ro);
    CHECK(text && HAS(text, "after 12 launches; report: x/culprit-vm-5-exit.json\n") && !HAS(text, "\nculprit:"), "%s",
          text ? text : "");
    free(text);
  }
  reset();
  fault("x/culprit-vm-6.json", proc(p[0], sizeof p[0], 6, "vm", 0, 1, ""), 1,
        "ncclDevKernel_AllGather_RING_LL(ncclDevKernelArgsStorage<4096ul>)", "t.py", 9);
  {
    struct json *log = json_new(JSON_ARR);
    for (int i = 0; i < 7; i++) {
      char l[128];
      snprintf(l, sizeof l, "vm:6:6 [0] x.cc:%d NCCL %s line %d", i, i == 3 ? "INFO" : "WARN", i);
      json_append(log, json_new_str(l));
    }
    json_set(g_docs[0], "nccl_log", log);
    struct render_opts ro = {.brief = 0, .path = NULL};
    char *text = render_doc(g_docs[0], &ro);
    CHECK(text && HAS(text, "culprit: the kernel that faulted: ncclDevKernel_AllGather_RING_LL(ncclDevKernelArgsStorage"
                            "<4096ul>)\nculprit:   NCCL AllGather (ring, LL)\n"),
          "%s", text ? text : "");
    CHECK(text && HAS(text, "culprit: NCCL warned in this process (its log is in the report's nccl_log):\n"
                            "culprit:   vm:6:6 [0] x.cc:0 NCCL WARN line 0\n"),
          "%s", text ? text : "");
    CHECK(text && HAS(text, "x.cc:4 NCCL WARN line 4\nculprit:   (2 more NCCL warnings in the report)\n") &&
              !HAS(text, "NCCL INFO"),
          "the first 4 warnings, the rest counted: %s", text ? text : "");
    free(text);
  }
  reset();

  clocks_cases();
  scale_cases();

  merge();
  CHECK(g_nj == 0, "no reports, no jobs");
  merge_free(g_jobs, g_nj);
  return CHECK_DONE();
}
