/* Candidates told apart by their arguments (src/render/argmatch.c), on reports written here by hand: one
 * candidate's parameters point into the faulting allocation (it is named), two do (they stay candidates), none
 * does, a pointer one past the range's end (ranges are half-open), candidates without parameters or with a
 * buffer longer than what was kept (never ruled out), the candidates the caller's filter leaves out, several
 * ranges, and malformed params. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "parse_doc.h"
#include "render/argmatch.h"
#include "render/json.h"

/* A report whose candidates are the given launch objects (JSON array members, without the brackets). */
static struct json *report(const char *cands) {
  static char text[8192];
  snprintf(text, sizeof text, "{\"verdict\": {\"certainty\": \"candidates\"}, \"culprit\": null, \"candidates\": [%s]}",
           cands);
  return parse(text);
}

/* A launch of kernel k with parameter words params (JSON strings, without brackets; NULL: no params) and size. */
static const char *launch(char *buf, size_t n, int seq, const char *k, const char *params, int size) {
  if (params)
    snprintf(buf, n, "{\"seq\": %d, \"kernel\": \"%s\", \"params\": [%s], \"params_size\": %d}", seq, k, params, size);
  else
    snprintf(buf, n, "{\"seq\": %d, \"kernel\": \"%s\"}", seq, k);
  return buf;
}

static const struct argmatch_range A = {0x7f0000100000ull, 0x7f0000101000ull}; /* 4096 bytes */

/* Finds with the one range A; returns argmatch_find's answer. */
static int find(const char *cands, struct argmatch_result *m) {
  struct json *doc = report(cands);
  int rc = doc ? argmatch_find(doc, &A, 1, NULL, NULL, m) : -1;
  json_free(doc);
  return rc;
}

static int only_k(void *arg, const struct json *l) {
  (void)arg;
  const char *k = json_get_str(l, "kernel");
  return k && !strcmp(k, "k");
}

int main(void) {
  char a[256], b[256], c[256], all[1024];
  struct argmatch_result m;

  /* one match: the second candidate's word 1 points 16 bytes into A */
  snprintf(all, sizeof all, "%s, %s", launch(a, sizeof a, 3, "k", "\"0x5\", \"0x7f0000200000\"", 12),
           launch(b, sizeof b, 4, "k", "\"0x5\", \"0x7f0000100010\"", 12));
  CHECK(find(all, &m) == 1 && m.hit == 1 && m.word == 1 && m.range == 0 && m.value == 0x7f0000100010ull,
        "hit %zu word %d value %llx", m.hit, m.word, (unsigned long long)m.value);
  CHECK(m.fitting == 2 && m.possible == 1 && m.hits == 1);

  /* two match: both stay */
  snprintf(all, sizeof all, "%s, %s", launch(a, sizeof a, 3, "k", "\"0x7f0000100000\"", 8),
           launch(b, sizeof b, 4, "k", "\"0x7f0000100ff8\", \"0x1\"", 12));
  CHECK(find(all, &m) == 0 && m.hits == 2 && m.possible == 2);

  /* none matches: nothing is named, and nothing is ruled in */
  snprintf(all, sizeof all, "%s, %s", launch(a, sizeof a, 3, "k", "\"0x10\"", 8),
           launch(b, sizeof b, 4, "k", "\"0x7f0000000000\"", 8));
  CHECK(find(all, &m) == 0 && m.hits == 0 && m.possible == 0);

  /* a pointer at the range's end is past it (half-open); at its base it is in */
  snprintf(all, sizeof all, "%s, %s", launch(a, sizeof a, 3, "k", "\"0x7f0000101000\"", 8),
           launch(b, sizeof b, 4, "k", "\"0x7f0000100000\"", 8));
  CHECK(find(all, &m) == 1 && m.hit == 1 && m.word == 0);
  snprintf(all, sizeof all, "%s, %s", launch(a, sizeof a, 3, "k", "\"0x7f0000101000\"", 8),
           launch(b, sizeof b, 4, "k", "\"0x7f0000101001\"", 8));
  CHECK(find(all, &m) == 0 && m.hits == 0);

  /* a candidate without params may still be the one: no verdict */
  snprintf(all, sizeof all, "%s, %s", launch(a, sizeof a, 3, "k", NULL, 0),
           launch(b, sizeof b, 4, "k", "\"0x7f0000100000\"", 8));
  CHECK(find(all, &m) == 0 && m.hits == 1 && m.possible == 2);
  /* params absent everywhere */
  snprintf(all, sizeof all, "%s, %s", launch(a, sizeof a, 3, "k", NULL, 0), launch(b, sizeof b, 4, "k", NULL, 0));
  CHECK(find(all, &m) == 0 && m.hits == 0 && m.possible == 2);

  /* a buffer longer than the words kept (72 bytes, 7 words): a pointer may lie beyond, so it stays possible */
  snprintf(all, sizeof all, "%s, %s",
           launch(a, sizeof a, 3, "k", "\"0x1\", \"0x2\", \"0x3\", \"0x4\", \"0x5\", \"0x6\", \"0x7\"", 72),
           launch(b, sizeof b, 4, "k", "\"0x7f0000100000\"", 8));
  CHECK(find(all, &m) == 0 && m.possible == 2 && m.hits == 1);
  /* ... and the truncated one is named when it is the one whose kept words point there */
  snprintf(all, sizeof all, "%s, %s",
           launch(a, sizeof a, 3, "k", "\"0x1\", \"0x7f0000100800\", \"0x3\", \"0x4\", \"0x5\", \"0x6\", \"0x7\"", 72),
           launch(b, sizeof b, 4, "k", "\"0x9\"", 8));
  CHECK(find(all, &m) == 1 && m.hit == 0 && m.word == 1);

  /* the caller's filter: a candidate of another kernel is not judged at all, params or not */
  snprintf(all, sizeof all, "%s, %s, %s", launch(a, sizeof a, 3, "other", NULL, 0),
           launch(b, sizeof b, 4, "k", "\"0x7f0000100000\"", 8), launch(c, sizeof c, 5, "k", "\"0x20\"", 8));
  struct json *doc = report(all);
  CHECK(doc && argmatch_find(doc, &A, 1, only_k, NULL, &m) == 1 && m.hit == 1 && m.fitting == 2);
  /* several ranges: the word points into the second */
  struct argmatch_range two[2] = {A, {0x7f0000300000ull, 0x7f0000300100ull}};
  json_free(doc);
  snprintf(all, sizeof all, "%s, %s", launch(a, sizeof a, 3, "k", "\"0x7f0000300010\"", 8),
           launch(b, sizeof b, 4, "k", "\"0x7f0000400000\"", 8));
  doc = report(all);
  CHECK(doc && argmatch_find(doc, two, 2, NULL, NULL, &m) == 1 && m.hit == 0 && m.range == 1);
  CHECK(doc && argmatch_find(doc, two, 0, NULL, NULL, &m) == 0 && m.hits == 0, "no ranges: nothing named");
  json_free(doc);

  /* malformed params count as none: the launch stays possible */
  snprintf(all, sizeof all, "%s, %s", launch(a, sizeof a, 3, "k", "\"zz\"", 8),
           launch(b, sizeof b, 4, "k", "\"0x7f0000100000\"", 8));
  CHECK(find(all, &m) == 0 && m.possible == 2);
  /* no candidates */
  CHECK(find("", &m) == 0 && m.fitting == 0);

  /* argmatch_words */
  uint64_t w[7], size = 0;
  doc = parse("{\"params\": [\"0x7f5b7fe00000\", \"0x100\"], \"params_size\": 12}");
  CHECK(doc && argmatch_words(doc, w, 7, &size) == 2 && w[0] == 0x7f5b7fe00000ull && w[1] == 0x100 && size == 12);
  json_free(doc);
  doc = parse("{\"kernel\": \"k\"}");
  CHECK(doc && argmatch_words(doc, w, 7, &size) == -1);
  json_free(doc);
  return CHECK_DONE();
}
