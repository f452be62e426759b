/* Unit test of a verdict of candidates settled by the page of the faulting address (src/cli/faultpage.c), on
 * reports written here by hand: the page lies just past buffer b. One candidate passed b: it is named (proven
 * when it is its stream's only unfinished launch). Several on one stream passed b and no other stream's did: the
 * candidates shrink to that stream's, and one alone pointing there among launches whose parameters were not all
 * kept is the likeliest. Nothing changes when another stream's candidate may hold such a pointer, when both
 * streams passed b, when the log's line was tied by the process's name alone, or when the error is an assert. */
#include "evidence/faultpage.h"
#include "check.h"
#include "parse_doc.h"
#include "render/json.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define A "0x7f0000100000"    /* buffer a: 4096 bytes */
#define B "0x7f0000200000"    /* buffer b: 4096 bytes */
#define PAGE "0x7f0000204000" /* 12 KiB past b's end */

/* A launch of k on stream s with its first parameter word p (NULL: no parameters kept). */
static const char *launch(char *buf, size_t n, int seq, const char *s, const char *p) {
  if (p)
    snprintf(buf, n,
             "{\"seq\": %d, \"kernel\": \"k\", \"stream\": \"%s\", \"device\": 0, \"params\": [\"%s\", \"0x10\"], "
             "\"params_size\": 12}",
             seq, s, p);
  else
    snprintf(buf, n, "{\"seq\": %d, \"kernel\": \"k\", \"stream\": \"%s\", \"device\": 0}", seq, s);
  return buf;
}

/* A fault report (error code) whose candidates are cands and whose kernel-log line was matched by matched. */
static struct json *report(int code, const char *matched, const char *cands) {
  static char text[16384];
  snprintf(text, sizeof text,
           "{\"kind\": \"fault\", \"error\": {\"code\": %d}, \"verdict\": {\"certainty\": \"candidates\", \"reason\": "
           "\"several streams had unfinished launches\", \"window\": {\"first\": 3, \"last\": 9}}, \"culprit\": null, "
           "\"candidates\": [%s], \"allocations\": {\"capacity\": 64, \"recorded\": 2, \"forgotten\": 0, "
           "\"not_recorded\": 0, \"ranges\": [{\"base\": \"" A "\", \"size\": 4096, \"kind\": \"device\", \"api\": "
           "\"cuMemAlloc_v2\", \"seq\": 0, \"thread\": 7}, {\"base\": \"" B "\", \"size\": 4096, \"kind\": \"device\", "
           "\"api\": \"cuMemAlloc_v2\", \"seq\": 0, \"thread\": 7}], \"sites\": []}, \"gpu_fault_log\": {\"xid\": 31, "
           "\"address\": \"" PAGE "\", \"granule\": 4096, \"matched\": \"%s\"}, \"fault_address\": {\"source\": "
           "\"kernel log\", \"address\": \"" PAGE "\", \"granule\": 4096}}",
           code, cands, matched);
  return parse(text);
}

/* The seqs of doc[key] as "3,4". */
static const char *seqs(const struct json *doc, const char *key) {
  static char out[256];
  const struct json *l = json_get(doc, key);
  size_t n = 0;
  out[0] = '\0';
  for (size_t i = 0; i < json_len(l) && n + 24 < sizeof out; i++)
    n += (size_t)snprintf(out + n, sizeof out - n, "%s%lld", i ? "," : "", json_get_int(json_at(l, i), "seq", -1));
  return out;
}

static const char *reason(const struct json *doc) {
  const char *r = json_get_str(json_get(doc, "verdict"), "reason");
  return r ? r : "";
}

static const char *certainty(const struct json *doc) {
  const char *c = json_get_str(json_get(doc, "verdict"), "certainty");
  return c ? c : "";
}

int main(void) {
  char l1[256], l2[256], l3[256], l4[256], all[2048];
  struct json *doc;
  int narrowed;

  /* two streams, one unfinished launch each: the one that passed b is named, and proven */
  snprintf(all, sizeof all, "%s, %s", launch(l1, sizeof l1, 3, "0x1", A), launch(l2, sizeof l2, 4, "0x2", B));
  doc = report(700, "pid", all);
  CHECK(faultpage_narrow(doc, &narrowed) == 0 && narrowed && !strcmp(certainty(doc), "exact") &&
            json_get_int(json_get(doc, "culprit"), "seq", -1) == 4 &&
            !strcmp(seqs(doc, "candidates_before_fault_page"), "3"),
        "exact: %s %s", certainty(doc), reason(doc));
  CHECK(strstr(reason(doc), "named by the page of the faulting address") &&
            strstr(reason(doc), "the only launch of its stream 0x2 left unfinished, so this is proven"),
        "%s", reason(doc));
  json_free(doc);

  /* the same, tied by the process's name alone (a pid namespace: perhaps another process's line): a hint only */
  doc = report(700, "name", all);
  CHECK(faultpage_narrow(doc, &narrowed) == 0 && !narrowed && !strcmp(certainty(doc), "candidates") &&
            !strcmp(seqs(doc, "candidates"), "3,4") && !json_get(doc, "candidates_before_fault_page"),
        "a line matched by name narrows nothing: %s", reason(doc));
  json_free(doc);
  /* an assert (710) or a misaligned address (716) logs no page: a page beside it is another fault's */
  for (int code = 710; code <= 716; code += 6) {
    doc = report(code, "pid", all);
    CHECK(faultpage_narrow(doc, &narrowed) == 0 && !narrowed && !strcmp(seqs(doc, "candidates"), "3,4"),
          "error %d: nothing narrowed", code);
    json_free(doc);
  }

  /* stream 0x2 has three unfinished launches of the kernel, all on b; stream 0x1's one passed a: the candidates
   * shrink to stream 0x2's, the window with them, and none is singled out */
  snprintf(all, sizeof all, "%s, %s, %s, %s", launch(l1, sizeof l1, 3, "0x1", A), launch(l2, sizeof l2, 4, "0x2", B),
           launch(l3, sizeof l3, 6, "0x2", B), launch(l4, sizeof l4, 9, "0x2", B));
  doc = report(700, "pid", all);
  CHECK(faultpage_narrow(doc, &narrowed) == 0 && narrowed && !strcmp(certainty(doc), "candidates") &&
            !strcmp(seqs(doc, "candidates"), "4,6,9") && !strcmp(seqs(doc, "candidates_before_fault_page"), "3") &&
            !json_is(json_get(doc, "culprit"), JSON_OBJ) && !json_get(json_get(doc, "verdict"), "likeliest"),
        "one stream's launches: %s / %s", seqs(doc, "candidates"), reason(doc));
  const struct json *w = json_get(json_get(doc, "verdict"), "window");
  CHECK(json_get_int(w, "first", -1) == 4 && json_get_int(w, "last", -1) == 9, "the window spans stream 0x2's");
  CHECK(strstr(reason(doc), "several streams had unfinished launches; narrowed by the page of the faulting address "
                            "to the unfinished launches of one stream: the kernel's log puts the GPU's memory fault "
                            "in the page at " PAGE ", just past the end of the allocation 0x7f0000200000..") &&
            strstr(reason(doc), "which only launches of stream 0x2 were passed (no other stream's candidate was)") &&
            !strstr(reason(doc), "likeliest"),
        "%s", reason(doc));
  json_free(doc);

  /* the same, but two of stream 0x2's launches kept no parameters: the one that points there is the likeliest */
  snprintf(all, sizeof all, "%s, %s, %s, %s", launch(l1, sizeof l1, 3, "0x1", A), launch(l2, sizeof l2, 4, "0x2", NULL),
           launch(l3, sizeof l3, 6, "0x2", B), launch(l4, sizeof l4, 9, "0x2", NULL));
  doc = report(700, "pid", all);
  CHECK(faultpage_narrow(doc, &narrowed) == 0 && narrowed && !strcmp(certainty(doc), "candidates") &&
            !strcmp(seqs(doc, "candidates"), "4,6,9") && json_get_int(json_get(doc, "verdict"), "likeliest", -1) == 6 &&
            strstr(reason(doc), "of them launch #6 is the likeliest, not proven"),
        "likeliest: %s", reason(doc));
  json_free(doc);

  /* one stream only, several candidates: nothing to shrink, the likeliest said */
  snprintf(all, sizeof all, "%s, %s", launch(l1, sizeof l1, 3, "0x2", B), launch(l2, sizeof l2, 4, "0x2", NULL));
  doc = report(700, "pid", all);
  CHECK(faultpage_narrow(doc, &narrowed) == 0 && narrowed && !strcmp(seqs(doc, "candidates"), "3,4") &&
            !json_get(doc, "candidates_before_fault_page") &&
            json_get_int(json_get(doc, "verdict"), "likeliest", -1) == 3 &&
            strstr(reason(doc), "; by the page of the faulting address:"),
        "one stream: %s", reason(doc));
  json_free(doc);

  /* stream 0x1's candidate kept no parameters (it may hold a pointer to b): the window stays whole */
  snprintf(all, sizeof all, "%s, %s, %s", launch(l1, sizeof l1, 3, "0x1", NULL), launch(l2, sizeof l2, 4, "0x2", B),
           launch(l3, sizeof l3, 6, "0x2", B));
  doc = report(700, "pid", all);
  CHECK(faultpage_narrow(doc, &narrowed) == 0 && !narrowed && !strcmp(seqs(doc, "candidates"), "3,4,6"),
        "another stream's possible candidate: %s", reason(doc));
  json_free(doc);

  /* both streams passed b: nothing is said */
  snprintf(all, sizeof all, "%s, %s, %s", launch(l1, sizeof l1, 3, "0x1", B), launch(l2, sizeof l2, 4, "0x2", B),
           launch(l3, sizeof l3, 6, "0x2", B));
  doc = report(700, "pid", all);
  CHECK(faultpage_narrow(doc, &narrowed) == 0 && !narrowed && !strcmp(seqs(doc, "candidates"), "3,4,6") &&
            !strcmp(reason(doc), "several streams had unfinished launches"),
        "both streams: %s", reason(doc));
  json_free(doc);
  return CHECK_DONE();
}
