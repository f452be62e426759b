/* Unit test of the trace writer (src/report/trace.c) on reports recorded on the GPU (tests/gpu/fixtures): the
 * output is valid JSON in the trace-event format (every event has a name, a phase of the format, integer pid
 * and tid, a non-negative time stamp; instant events a scope; metadata events a name argument; every track
 * used is named), and it holds each launch of the report once per track kind with its role. */
#include "../../src/render/json.h"
#include "../../src/base/jsonw.h"
#include "../../src/report/trace.h"
#include "check.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static struct json *load(const char *dir, const char *name) {
  char path[4096];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  static char buf[1 << 20];
  size_t n = fread(buf, 1, sizeof buf, f);
  fclose(f);
  struct json *doc = NULL;
  return json_parse(buf, n, &doc, NULL) == 0 ? doc : NULL;
}

/* Events of the trace with category cat (NULL: all but metadata). */
static size_t count_cat(const struct json *events, const char *cat) {
  size_t n = 0;
  for (size_t i = 0; i < json_len(events); i++) {
    const char *c = json_get_str(json_at(events, i), "cat");
    if (c && (!cat || !strcmp(c, cat))) n++;
  }
  return n;
}

/* Checks the trace-event format; returns the parsed trace. */
static struct json *trace_of(const struct json *doc, const char *what) {
  struct jw w;
  struct json *tr = NULL;
  jw_init(&w);
  CHECK(trace_write(doc, &w, NULL) == 0, "%s: not written", what);
  CHECK(json_parse(w.buf, w.len, &tr, NULL) == 0, "%s: the trace is not valid JSON", what);
  jw_free(&w);
  const struct json *ev = json_get(tr, "traceEvents");
  CHECK(json_is(ev, JSON_ARR) && json_len(ev) > 0, "%s: no traceEvents", what);
  long long named[64][2];
  size_t nnamed = 0;
  for (size_t i = 0; i < json_len(ev); i++) {
    const struct json *e = json_at(ev, i);
    const char *ph = json_get_str(e, "ph");
    long long pid, tid;
    CHECK(json_get_str(e, "name") != NULL, "%s: event %zu has no name", what, i);
    CHECK(ph && strlen(ph) == 1 && strchr("BEXiIMCbensftPOND", ph[0]), "%s: event %zu phase %s", what, i, ph);
    CHECK(json_int(json_get(e, "pid"), &pid) == 0, "%s: event %zu pid", what, i);
    if (!strcmp(ph, "M")) {
      CHECK(json_get_str(json_get(e, "args"), "name") != NULL, "%s: metadata %zu without args.name", what, i);
      if (!strcmp(json_get_str(e, "name"), "thread_name") && json_int(json_get(e, "tid"), &tid) == 0 && nnamed < 64) {
        named[nnamed][0] = pid;
        named[nnamed++][1] = tid;
      }
      continue;
    }
    double ts;
    CHECK(json_num(json_get(e, "ts"), &ts) == 0 && ts >= 0, "%s: event %zu time stamp", what, i);
    CHECK(json_int(json_get(e, "tid"), &tid) == 0, "%s: event %zu tid", what, i);
    if (!strcmp(ph, "i")) {
      const char *s = json_get_str(e, "s");
      CHECK(s && (!strcmp(s, "g") || !strcmp(s, "p") || !strcmp(s, "t")), "%s: instant %zu scope", what, i);
    }
  }
  /* every track an event uses has a name */
  for (size_t i = 0; i < json_len(ev); i++) {
    const struct json *e = json_at(ev, i);
    long long pid, tid;
    int found = 0;
    if (!strcmp(json_get_str(e, "ph"), "M")) continue;
    json_int(json_get(e, "pid"), &pid);
    json_int(json_get(e, "tid"), &tid);
    for (size_t k = 0; k < nnamed; k++) found |= named[k][0] == pid && named[k][1] == tid;
    CHECK(found, "%s: track %lld/%lld has no thread_name", what, pid, tid);
  }
  return tr;
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: unit_trace FIXTURE_DIR\n");
    return 2;
  }
  /* Four streams with one candidate each: 4 candidates on both track kinds, four stream tracks, the error. */
  struct json *doc = load(argv[1], "streams4_candidates.json");
  CHECK(doc != NULL, "fixture streams4_candidates.json not readable");
  struct json *tr = trace_of(doc, "streams4");
  const struct json *ev = json_get(tr, "traceEvents");
  CHECK(count_cat(ev, "candidate") == 2 * json_len(json_get(doc, "candidates")), "candidates: %zu",
        count_cat(ev, "candidate"));
  CHECK(count_cat(ev, "error") == 1);
  size_t stream_tracks = 0;
  for (size_t i = 0; i < json_len(ev); i++) {
    const struct json *e = json_at(ev, i);
    if (!strcmp(json_get_str(e, "ph"), "M") && !strcmp(json_get_str(e, "name"), "thread_name") &&
        json_get_int(e, "pid", 0) == 1)
      stream_tracks++;
  }
  CHECK(stream_tracks == 4, "stream tracks: %zu", stream_tracks);
  CHECK(!strcmp(json_get_str(json_get(tr, "otherData"), "verdict"), "candidates"));
  json_free(tr);

  /* The faulting address the GPU core dump gave, on the error's mark: its lane, thread and block. */
  const char fa_text[] = "{\"address\": \"0x835b7fe05ec0\", \"source\": \"coredump\", \"answer\": \"nothing_near\", "
                         "\"lane\": 27, \"thread\": [123,0,0], \"block\": [0,0,0], \"lanes_read\": 32}";
  struct json *fa = NULL;
  CHECK(json_parse(fa_text, strlen(fa_text), &fa, NULL) == 0 && json_set(doc, "fault_address", fa) == 0);
  tr = trace_of(doc, "streams4 with a faulting address");
  ev = json_get(tr, "traceEvents");
  const struct json *mark = NULL;
  for (size_t i = 0; i < json_len(ev); i++)
    if (json_get_str(json_at(ev, i), "cat") && !strcmp(json_get_str(json_at(ev, i), "cat"), "error"))
      mark = json_get(json_at(ev, i), "args");
  CHECK(mark && !strcmp(json_get_str(mark, "fault_address"), "0x835b7fe05ec0") &&
            json_get_int(mark, "fault_lane", -1) == 27 && !strcmp(json_get_str(mark, "fault_thread"), "(123,0,0)") &&
            !strcmp(json_get_str(mark, "fault_block"), "(0,0,0)") &&
            !strcmp(json_get_str(mark, "fault_address_answer"), "nothing_near"),
        "the error's mark names the faulting address");
  json_free(tr);
  json_free(doc);

  /* A PyTorch fault: the culprit with its Python line, the launch before it. */
  doc = load(argv[1], "py_xent_exact.json");
  CHECK(doc != NULL);
  tr = trace_of(doc, "py_xent");
  ev = json_get(tr, "traceEvents");
  CHECK(count_cat(ev, "culprit") == 2 && count_cat(ev, "before") == 2 * json_len(json_get(doc, "history")));
  int py = 0;
  for (size_t i = 0; i < json_len(ev); i++) {
    const struct json *e = json_at(ev, i);
    const char *c = json_get_str(e, "cat"), *line = json_get_str(json_get(e, "args"), "python");
    if (c && !strcmp(c, "culprit") && line && strstr(line, "xent_seg3d.py:")) py = 1;
  }
  CHECK(py, "the culprit's event has no Python line of the script");
  json_free(tr);
  json_free(doc);

  /* A graph launch and the nodes captured into it. */
  doc = load(argv[1], "graph_node.json");
  CHECK(doc != NULL);
  tr = trace_of(doc, "graph");
  CHECK(count_cat(json_get(tr, "traceEvents"), "graph node") ==
        2 * json_len(json_get(json_get(doc, "culprit"), "graph_nodes")));
  json_free(tr);
  json_free(doc);

  /* Not a report: refused. */
  struct json *bad = NULL;
  struct jw w;
  jw_init(&w);
  CHECK(json_parse("{\"x\": 1}", 8, &bad, NULL) == 0 && trace_write(bad, &w, NULL) == -1);
  jw_free(&w);
  json_free(bad);
  return CHECK_DONE();
}
