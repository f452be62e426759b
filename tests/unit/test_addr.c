/* What a faulting address touched (src/render/addr.c), on reports written here by hand: inside an allocation, an
 * access running past its end, before the start and after the end (the nearer neighbour first), a range freed
 * before the faulting launch (use after free) and one freed only after it, an address reused by a later
 * allocation, an allocation made after the faulting launch, a reservation of the virtual memory API mapped in
 * pieces, nothing near, no table, an overflowed table, and reports with missing or malformed fields (nothing
 * crashes, malformed ranges are left out). Both forms are checked: the "fault_address" object and the text. */
#define _GNU_SOURCE
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "parse_doc.h"
#include "render/addr.h"
#include "render/json.h"
#include "render/render.h"

/* A fault report whose exact culprit is launch culprit_seq (0: candidates, no culprit) and whose allocation table
 * holds ranges (JSON array members, without the brackets); extra is more top-level members (or ""). */
static struct json *report(long long culprit_seq, const char *ranges, const char *extra) {
  static char text[16384];
  char culprit[128] = "null";
  if (culprit_seq > 0) snprintf(culprit, sizeof culprit, "{\"seq\": %lld, \"kernel\": \"k\"}", culprit_seq);
  snprintf(text, sizeof text,
           "{\"kind\": \"fault\", \"error\": {\"code\": 700, \"name\": \"CUDA_ERROR_ILLEGAL_ADDRESS\"},"
           " \"verdict\": {\"certainty\": \"%s\"}, \"culprit\": %s, \"candidates\": [],"
           " \"allocations\": {\"capacity\": 4096, \"recorded\": 9, \"forgotten\": 0, \"not_recorded\": 0,"
           " \"ranges\": [%s], \"sites\": [{\"python\": [{\"file\": \"/w/train.py\", \"function\": \"main\","
           " \"line\": 42}], \"stack\": []}, {\"stack\": [{\"pc\": \"0x1\", \"function\": \"setup\","
           " \"file\": \"/w/app.c\", \"line\": 35}]}]}%s%s}",
           culprit_seq > 0 ? "exact" : "candidates", culprit, ranges, *extra ? ", " : "", extra);
  return parse(text);
}

/* The text lines about the address, as `culprit report` shows them, with the wrapped lines joined again (a
 * line break, the prefix and the continuation indent become one space). */
static char *text_of(const struct json *doc) {
  struct render_opts o = {.brief = 0};
  char *t = render_doc(doc, &o);
  char *at = t ? strstr(t, "the faulting address") : NULL;
  char *out = strdup(at ? at : "");
  free(t);
  static const char wrap[] = "\nculprit:     ";
  char *w = out;
  for (const char *r = out; *r;) {
    if (!strncmp(r, wrap, sizeof wrap - 1)) {
      *w++ = ' ';
      r += sizeof wrap - 1;
    } else {
      *w++ = *r++;
    }
  }
  *w = '\0';
  return out;
}

/* fault_address as addr_annotate writes it. */
static const struct json *annotated(struct json *doc, uint64_t address, uint64_t access) {
  CHECK(addr_annotate(doc, address, access, "command line") == 0, "annotate");
  return json_get(doc, "fault_address");
}

/* A range member: base, size, seq, and optionally freed_seq (< 0: live), kind, site. */
static const char *range(char *buf, size_t n, uint64_t base, uint64_t size, long long seq, long long freed,
                         const char *kind, int site) {
  int k = snprintf(buf, n,
                   "{\"base\": \"0x%" PRIx64 "\", \"size\": %" PRIu64 ", \"kind\": \"%s\", \"api\": "
                   "\"%s\", \"seq\": %lld, \"thread\": 7",
                   base, size, kind,
                   !strcmp(kind, "vm")         ? "cuMemMap"
                   : !strcmp(kind, "reserved") ? "cuMemAddressReserve"
                                               : "cuMemAlloc_v2",
                   seq);
  if (freed >= 0)
    k += snprintf(buf + k, n - (size_t)k, ", \"freed_seq\": %lld, \"freed_api\": \"cuMemFree_v2\"", freed);
  if (site >= 0) k += snprintf(buf + k, n - (size_t)k, ", \"site\": %d", site);
  snprintf(buf + k, n - (size_t)k, "}");
  return buf;
}

#define A 0x7f0000000000ull

static void test_parse(void) {
  uint64_t v = 0;
  CHECK(addr_parse("0x7f00", &v) == 0 && v == 0x7f00);
  CHECK(addr_parse("  4096 ", &v) == 0 && v == 4096);
  CHECK(addr_parse("0XFF", &v) == 0 && v == 255);
  CHECK(addr_parse("0xffffffffffffffff", &v) == 0 && v == UINT64_MAX);
  uint64_t keep = v = 99;
  CHECK(addr_parse("0x", &v) && addr_parse("", &v) && addr_parse("-1", &v) && addr_parse("12abc", &v) &&
            addr_parse("0x1ffffffffffffffff", &v) && addr_parse(NULL, &v) && addr_parse("+5", &v) && v == keep,
        "bad addresses are refused and leave the output alone");
}

/* Inside, past the end of an access, before the start, after the end; the nearer neighbour comes first. */
static void test_outside_inside(void) {
  char r1[512], r2[512], r3[512], all[2048];
  snprintf(all, sizeof all, "%s, %s, %s", range(r1, sizeof r1, A, 4096, 1, -1, "device", 1),
           range(r2, sizeof r2, A + 0x10000, 1024, 2, -1, "pitched", 0),
           range(r3, sizeof r3, A - 0x100000, 256, 0, -1, "managed", -1));
  struct json *doc = report(5, all, "");
  struct addr_answer a;

  addr_answer(doc, A + 100, 4, &a);
  CHECK(a.where == ADDR_INSIDE && a.in.base == A && a.fault_seq == 5, "inside (%d)", a.where);
  addr_answer(doc, A + 4094, 4, &a);
  CHECK(a.where == ADDR_OVERRUN && a.in.base == A, "a 4-byte access at 4094 of 4096 runs past the end");
  addr_answer(doc, A + 4094, 0, &a);
  CHECK(a.where == ADDR_INSIDE, "without the access size it is inside");

  const struct json *fa = annotated(doc, A + 4096 + 16, 4);
  CHECK(!strcmp(json_get_str(fa, "answer"), "outside") && json_get_int(fa, "fault_seq", 0) == 5 &&
            json_get_int(fa, "access_size", 0) == 4 && !strcmp(json_get_str(fa, "address"), "0x7f0000001010") &&
            !strcmp(json_get_str(fa, "source"), "command line"),
        "the object's headline fields");
  const struct json *below = json_get(fa, "below"), *above = json_get(fa, "above");
  CHECK(below && json_get_int(below, "past_end", -1) == 16 && !strcmp(json_get_str(below, "base"), "0x7f0000000000") &&
            json_get_int(below, "size", 0) == 4096 && json_get_int(below, "site", -1) == 1,
        "16 bytes past the end of the allocation below");
  CHECK(above && json_get_int(above, "before_start", -1) == 0x10000 - 4096 - 16 &&
            !strcmp(json_get_str(above, "kind"), "pitched"),
        "the allocation above and how far");
  char *t = text_of(doc);
  CHECK(strstr(t, "the faulting address 0x7f0000001010 (an access of 4 bytes, given on the command line)") &&
            strstr(t, "16 bytes after the end of the allocation of 4096 bytes at 0x7f0000000000") &&
            strstr(t, "allocated at setup at /w/app.c:35") && strstr(t, "before the start of the allocation of 1024"),
        "the text:\n%s", t);
  CHECK(strstr(t, "16 bytes after") < strstr(t, "before the start"), "the nearer neighbour first:\n%s", t);
  free(t);

  fa = annotated(doc, A - 8, 0);
  CHECK(json_get_int(json_get(fa, "above"), "before_start", -1) == 8 && !json_get(fa, "access_size"),
        "8 bytes before the start");
  t = text_of(doc);
  CHECK(strstr(t, "8 bytes before the start of the allocation of 4096 bytes") &&
            strstr(t, "allocated at setup at /w/app.c:35") &&
            strstr(t, "allocated at /w/train.py:42 in main") == NULL &&
            strstr(t, "8 bytes before the start") < strstr(t, "after the end of the allocation of 256"),
        "the text, the Python line of the site:\n%s", t);
  free(t);

  fa = annotated(doc, A + 4096, 1);
  t = text_of(doc);
  CHECK(json_get_int(json_get(fa, "below"), "past_end", -1) == 0 && strstr(t, "right after the end of"),
        "the first byte after the end:\n%s", t);
  free(t);

  fa = annotated(doc, A + 4090, 8);
  t = text_of(doc);
  CHECK(!strcmp(json_get_str(fa, "answer"), "overrun") && json_get_int(json_get(fa, "in"), "offset", 0) == 4090 &&
            strstr(t, "at offset 4090 of the allocation of 4096 bytes") && strstr(t, "runs 2 bytes past its end"),
        "an overrun:\n%s", t);
  free(t);
  json_free(doc);
}

/* Use after free, a free after the faulting launch, reuse of one address, an allocation after the fault. */
static void test_freed_and_reuse(void) {
  char r1[512], r2[512], r3[512], r4[512], all[4096];
  /* B: allocated after #1, freed after #4; the same address again after #6 (live). C: freed after #9 only. D:
   * allocated after #8. */
  const uint64_t B = A + 0x100000, C = A + 0x200000, D = A + 0x300000;
  snprintf(all, sizeof all, "%s, %s, %s, %s", range(r1, sizeof r1, B, 512, 1, 4, "device", 0),
           range(r2, sizeof r2, B, 256, 6, -1, "async", 1), range(r3, sizeof r3, C, 64, 2, 9, "device", 1),
           range(r4, sizeof r4, D, 64, 8, -1, "device", 1));
  struct addr_answer a;

  struct json *doc = report(5, all, ""); /* the faulting launch is #5 */
  addr_answer(doc, B + 100, 0, &a);
  CHECK(a.where == ADDR_FREED && a.freed.base == B && a.freed.size == 512 && a.freed.freed_seq == 4 && a.later.obj &&
            a.later.seq == 6,
        "#5 ran after B's first allocation was freed, before the address was handed out again (%d)", a.where);
  const struct json *fa = annotated(doc, B + 100, 0);
  CHECK(!strcmp(json_get_str(fa, "answer"), "freed") && json_get_int(json_get(fa, "freed"), "freed_seq", 0) == 4 &&
            json_get_int(json_get(fa, "freed"), "offset", 0) == 100 &&
            !strcmp(json_get_str(json_get(fa, "freed"), "freed_api"), "cuMemFree_v2") && json_get(fa, "later"),
        "the use after free as JSON");
  char *t = text_of(doc);
  CHECK(strstr(t, "in memory freed before the faulting launch #5 was made, a use after free: offset 100 of the "
                  "allocation of 512 bytes") &&
            strstr(t, "freed by cuMemFree_v2 after launch #4") && strstr(t, "allocated at /w/train.py:42") &&
            strstr(t, "holds it now, made after the faulting launch"),
        "the text:\n%s", t);
  free(t);
  addr_answer(doc, C + 8, 0, &a);
  CHECK(a.where == ADDR_INSIDE && a.in.base == C && a.in.freed_seq == 9, "C was still allocated when #5 was made");
  annotated(doc, C + 8, 0);
  t = text_of(doc);
  CHECK(strstr(t, "freed only after launch #9"), "and the text says it was freed later:\n%s", t);
  free(t);
  addr_answer(doc, D + 8, 0, &a);
  CHECK(a.where != ADDR_INSIDE && a.later.obj && a.later.base == D, "D did not exist when #5 was made");
  json_free(doc);

  doc = report(7, all, ""); /* the faulting launch is #7: B's second allocation */
  addr_answer(doc, B + 100, 0, &a);
  CHECK(a.where == ADDR_INSIDE && a.in.seq == 6 && a.in.size == 256 && !a.freed.obj,
        "a live range reusing a freed address is the answer, not the freed one");
  addr_answer(doc, B + 300, 0, &a);
  CHECK(a.where == ADDR_OUTSIDE && a.below.obj && a.below.base == B && a.below.size == 256 && a.freed.obj &&
            a.freed.size == 512,
        "past the reuse's end, inside only the freed one's: out of bounds of the live one, the same pointer (%d)",
        a.where);
  fa = annotated(doc, B + 300, 0);
  t = text_of(doc);
  CHECK(!strcmp(json_get_str(fa, "answer"), "outside") && json_get_int(json_get(fa, "below"), "past_end", -1) == 44 &&
            strstr(t, "44 bytes after the end of the allocation of 256 bytes") &&
            strstr(t, "(the allocation of 512 bytes at 0x7f0000100000 (cuMemAlloc_v2 after launch #1; freed by "
                      "cuMemFree_v2 after launch #4), at the same base, held it before)"),
        "the reuse and the range it reused:\n%s", t);
  free(t);
  json_free(doc);

  doc = report(0, all, ""); /* no exact culprit: the table as the report has it */
  addr_answer(doc, B + 100, 0, &a);
  CHECK(a.fault_seq == -1 && a.where == ADDR_INSIDE && a.in.seq == 6, "the live one when the report was written");
  addr_answer(doc, C + 8, 0, &a);
  CHECK(a.where == ADDR_FREED && a.freed.base == C, "freed when the report was written");
  annotated(doc, C + 8, 0);
  t = text_of(doc);
  CHECK(strstr(t, "a use after free if the kernel ran after the free (the faulting launch is not known exactly)"),
        "without a culprit it says what it cannot know:\n%s", t);
  free(t);
  json_free(doc);
}

/* Expandable segments: a reservation mapped in three pieces; past the mapped part, inside the reservation. */
static void test_reserved(void) {
  char rr[512], m1[512], m2[512], m3[512], all[4096];
  const uint64_t R = 0x4000000000000ull, P = 2ull << 20;
  snprintf(all, sizeof all, "%s, %s, %s, %s", range(rr, sizeof rr, R, 512 * P, 0, -1, "reserved", 1),
           range(m1, sizeof m1, R, P, 1, -1, "vm", 0), range(m2, sizeof m2, R + P, P, 2, -1, "vm", 0),
           range(m3, sizeof m3, R + 2 * P, P, 3, -1, "vm", 1));
  struct json *doc = report(9, all, "");
  struct addr_answer a;
  addr_answer(doc, R + 3 * P + 64, 0, &a);
  CHECK(a.where == ADDR_UNMAPPED && a.reserved.base == R && a.below.base == R + 2 * P && a.below.run_pieces == 3 &&
            a.below.run_base == R && a.below.run_size == 3 * P,
        "in the reservation, past its three mapped pieces (%d)", a.where);
  const struct json *fa = annotated(doc, R + 3 * P + 64, 0);
  CHECK(!strcmp(json_get_str(fa, "answer"), "unmapped") &&
            json_get_int(json_get(fa, "reserved"), "offset", 0) == (long long)(3 * P + 64) &&
            json_get_int(json_get(json_get(fa, "below"), "mapped_run"), "pieces", 0) == 3 &&
            json_get_int(json_get(fa, "below"), "past_end", -1) == 64,
        "the reservation, and the mapped run below it");
  char *t = text_of(doc);
  CHECK(strstr(t, "in addresses reserved but not mapped: offset 6291520 of the reservation of 1073741824 bytes "
                  "(1 GiB)") &&
            strstr(t, "64 bytes after the end of the mapping of 2097152 bytes (2 MiB)") &&
            strstr(t, "one of 3 adjacent mappings, 6291456 bytes (6 MiB) from 0x4000000000000), mapped at setup") &&
            strstr(t, "(cuMemAddressReserve before any launch), reserved at setup at /w/app.c:35"),
        "the text:\n%s", t);
  free(t);
  addr_answer(doc, R + P + 5, 0, &a);
  CHECK(a.where == ADDR_INSIDE && a.in.base == R + P && a.in.run_pieces == 3, "inside the middle piece");
  json_free(doc);
}

/* Nothing near, a null pointer, no table, an overflowed table, an address from the GPU core dump. */
static void test_unknowns(void) {
  char r1[512];
  struct addr_answer a;
  struct json *doc = report(3, range(r1, sizeof r1, A, 64, 0, -1, "device", 0), "");
  addr_answer(doc, A + (2ull << 30), 0, &a);
  CHECK(a.where == ADDR_NOTHING_NEAR && !a.below.obj && !a.above.obj, "2 GiB away is not near");
  annotated(doc, 0x10, 0);
  char *t = text_of(doc);
  CHECK(strstr(t, "in no allocation culprit recorded, and none of the 1 range it recorded lies within 1 GiB") &&
            strstr(t, "a null pointer plus 16") && json_get(json_get(doc, "fault_address"), "near_null"),
        "nothing near, a null pointer:\n%s", t);
  free(t);
  json_free(doc);

  doc = parse("{\"kind\": \"fault\", \"culprit\": {\"seq\": 4}, \"coredump\": {\"address\": \"0x7f0000000010\","
              " \"access_size\": 8}}");
  uint64_t x = 0, acc = 0;
  const char *src = NULL;
  CHECK(addr_of_report(doc, &x, &acc, &src) == 1 && x == A + 16 && acc == 8 && !strcmp(src, "coredump"),
        "the address the GPU core dump gives");
  addr_answer(doc, x, acc, &a);
  CHECK(a.where == ADDR_NO_TABLE, "no table");
  t = text_of(doc);
  CHECK(strstr(t, "the faulting address 0x7f0000000010 (an access of 8 bytes, from the GPU core dump)") &&
            strstr(t, "no allocation table") && strstr(t, "nothing is known"),
        "no table, said plainly:\n%s", t);
  free(t);
  int changed = 0;
  CHECK(addr_annotate_coredump(doc, &changed) == 0 && changed &&
            !strcmp(json_get_str(json_get(doc, "fault_address"), "answer"), "no_table") &&
            !strcmp(json_get_str(json_get(doc, "fault_address"), "source"), "coredump"),
        "the core dump's address annotated");
  json_free(doc);

  doc = parse("{\"kind\": \"fault\", \"culprit\": null}");
  CHECK(addr_annotate_coredump(doc, &changed) == 0 && !changed && !json_get(doc, "fault_address"),
        "no address, no answer");
  t = text_of(doc);
  CHECK(!*t, "and no lines");
  free(t);
  json_free(doc);

  doc = report(3, range(r1, sizeof r1, A, 64, 0, -1, "device", 0), "");
  json_set((struct json *)json_get(doc, "allocations"), "forgotten", json_new_int(12));
  annotated(doc, A + 80, 0);
  t = text_of(doc);
  CHECK(json_get(json_get(doc, "fault_address"), "table_overflowed") &&
            strstr(t, "the allocation table overflowed (12 freed ranges forgotten, 0 allocations not recorded)"),
        "an overflowed table is said:\n%s", t);
  free(t);
  json_free(doc);
}

/* Reports with missing and malformed fields: no crash, malformed ranges left out, the rest still answered. */
static void test_malformed(void) {
  static const char *const bad[] = {
      "{\"allocations\": 5}",
      "{\"allocations\": {\"ranges\": {}}}",
      "{\"allocations\": {\"ranges\": [1, \"x\", null, [], {}]}}",
      "{\"allocations\": {\"ranges\": [{\"base\": \"0xzz\", \"size\": 10}, {\"base\": \"0x10\", \"size\": -4},"
      " {\"base\": \"0x10\", \"size\": \"big\"}, {\"base\": true, \"size\": 1}, {\"size\": 5}]}}",
      "{\"culprit\": {\"seq\": \"nine\"}, \"allocations\": {\"ranges\": [{\"base\": 4096, \"size\": 100,"
      " \"site\": 99, \"seq\": \"x\", \"freed_seq\": null, \"kind\": 3}], \"sites\": 7}}",
      "{\"culprit\": 1, \"allocations\": {\"ranges\": [{\"base\": \"0x1000\", \"size\": 100, \"site\": -2,"
      " \"freed_api\": 5}], \"sites\": [null, 3, {\"stack\": 1, \"python\": {}}]}}",
      "{\"allocations\": {\"forgotten\": \"many\", \"ranges\": [{\"base\": \"0x1000\", \"size\": "
      "18446744073709551615}]}}",
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    struct json *doc = parse(bad[i]);
    struct addr_answer a;
    CHECK(doc != NULL, "case %zu parses", i);
    addr_answer(doc, 0x1010, 4, &a);
    CHECK(addr_annotate(doc, 0x1010, 4, NULL) == 0 && json_get(doc, "fault_address"), "case %zu annotates", i);
    char *t = text_of(doc);
    CHECK(strstr(t, "the faulting address 0x1010"), "case %zu renders:\n%s", i, t);
    free(t);
    if (i == 4)
      CHECK(a.where == ADDR_INSIDE && a.in.base == 4096 && a.fault_seq == -1,
            "a numeric base is read, a bad seq is not a culprit (%d)", a.where);
    if (i == 3) CHECK(a.where == ADDR_NOTHING_NEAR && a.nranges == 5, "malformed ranges are left out (%d)", a.where);
    if (i == 0 || i == 1) CHECK(a.where == ADDR_NO_TABLE, "case %zu: no usable table", i);
    json_free(doc);
  }
  struct json *doc = parse("{\"coredump\": {\"address\": \"near the end\"}, \"fault_address\": {\"address\": -3}}");
  uint64_t x, acc;
  const char *src;
  CHECK(addr_of_report(doc, &x, &acc, &src) == 0, "unreadable addresses are no address");
  json_free(doc);
  doc = parse("{\"coredump\": {\"address\": \"0x40\"}, \"fault_address\": {\"address\": 4096, \"access_size\": -1}}");
  CHECK(addr_of_report(doc, &x, &acc, &src) == 1 && x == 4096 && acc == 0 && !strcmp(src, "command line"),
        "the command line's address wins over the dump's, a bad access size is unknown");
  json_free(doc);
}

/* The lanes of tests/gpu/oob.cu's faulting warp as cuda-gdb 13.0 showed them on an H200 (test_coredump.c reads
 * them from tests/unit/fixtures/coredump-oob-lanes.txt): lane 27 (thread (123,0,0)) loaded 2^40 floats past the
 * 16 KiB gradient, the others inside it. */
static const char oob_lanes[] =
    "\"coredump\": {\"exception\": \"Warp Illegal Address\", \"access\": \"load\", \"access_size\": 4, "
    "\"address_unknown\": \"only the allocation table can tell\", \"lanes\": ["
    "{\"lane\": 0, \"block\": [0,0,0], \"thread\": [96,0,0], \"address\": \"0x7f5b7fe0580c\"},"
    "{\"lane\": 1, \"block\": [0,0,0], \"thread\": [97,0,0], \"address\": \"0x7f5b7fe05860\"},"
    "{\"lane\": 26, \"block\": [0,0,0], \"thread\": [122,0,0], \"address\": \"0x7f5b7fe05e94\"},"
    "{\"lane\": 27, \"block\": [0,0,0], \"thread\": [123,0,0], \"address\": \"0x835b7fe05ec0\"},"
    "{\"lane\": 28, \"block\": [0,0,0], \"thread\": [124,0,0], \"address\": \"0x7f5b7fe05f04\"}]}";

/* The faulting lane of a warp: the first whose address lies outside every live allocation (an illegal address)
 * or is not a multiple of the access size (misaligned); with no table, an overflowed one, or none outside, no
 * lane is named and coredump.address_unknown says why. */
static void test_lanes(void) {
  char r1[512], r2[512], ranges[1200];
  snprintf(ranges, sizeof ranges, "%s, %s", range(r1, sizeof r1, 0x7f5b7fe04000ull, 16384, 0, -1, "device", 1),
           range(r2, sizeof r2, 0x7f5b7fe08000ull, 2048, 0, -1, "device", -1));
  struct json *doc = report(9, ranges, oob_lanes);
  int changed = 0;
  CHECK(doc && addr_annotate_coredump(doc, &changed) == 0 && changed);
  const struct json *fa = json_get(doc, "fault_address"), *t = json_get(fa, "touched");
  long long tx = -1;
  CHECK(!strcmp(json_get_str(fa, "address") ? json_get_str(fa, "address") : "", "0x835b7fe05ec0") &&
            json_get_int(fa, "lane", -1) == 27 && json_get_int(fa, "lanes_read", -1) == 5 &&
            json_get_int(fa, "lanes_bad", -1) == 1 && json_int(json_at(json_get(fa, "thread"), 0), &tx) == 0 &&
            tx == 123 && !strcmp(json_get_str(fa, "source"), "coredump"),
        "the faulting lane: %s lane %lld", json_get_str(fa, "address"), json_get_int(fa, "lane", -1));
  CHECK(json_len(t) == 1 && !strcmp(json_get_str(json_at(t, 0), "base"), "0x7f5b7fe04000") &&
            json_get_int(json_at(t, 0), "lanes", -1) == 4 && json_get_int(json_at(t, 0), "size", -1) == 16384,
        "the good lanes touched the gradient");
  char *text = text_of(doc);
  CHECK(strstr(text, "lane 27 (thread (123,0,0), block (0,0,0)) made it: 1 of the 5 lanes whose address the dump "
                     "gives was out of bounds; the other 4 accessed the allocation of 16384 bytes at 0x7f5b7fe04000 "
                     "(cuMemAlloc_v2 before any launch), allocated at setup at /w/app.c:35"),
        "the verdict names the lane:\n%s", text);
  free(text);
  json_free(doc);

  /* lane 27's address inside a live allocation too: every lane in bounds, the table lacks the one missed */
  snprintf(ranges, sizeof ranges, "%s, %s", range(r1, sizeof r1, 0x7f5b7fe04000ull, 16384, 0, -1, "device", 1),
           range(r2, sizeof r2, 0x835b7fe00000ull, 1 << 20, 0, -1, "device", -1));
  doc = report(9, ranges, oob_lanes);
  CHECK(doc && addr_annotate_coredump(doc, &changed) == 0 && !json_get(doc, "fault_address") &&
            strstr(json_get_str(json_get(doc, "coredump"), "address_unknown"), "every one of the 5 lanes"),
        "all lanes in bounds: no lane named");
  json_free(doc);

  /* no table: nothing to tell the lanes apart */
  char text2[2048];
  snprintf(text2, sizeof text2, "{\"kind\": \"fault\", %s}", oob_lanes);
  doc = parse(text2);
  CHECK(doc && addr_annotate_coredump(doc, &changed) == 0 && changed && !json_get(doc, "fault_address") &&
            strstr(json_get_str(json_get(doc, "coredump"), "address_unknown"), "no allocation table"),
        "no table: no lane named");
  json_free(doc);

  /* an overflowed table: a lane outside what it kept may be inside what it dropped */
  doc = report(9, range(r1, sizeof r1, 0x7f5b7fe04000ull, 16384, 0, -1, "device", 1), oob_lanes);
  struct json *table = (struct json *)json_get(doc, "allocations");
  CHECK(table && json_put(table, "not_recorded", json_new_int(3)) == 0 && addr_annotate_coredump(doc, &changed) == 0 &&
            !json_get(doc, "fault_address") &&
            strstr(json_get_str(json_get(doc, "coredump"), "address_unknown"), "overflowed"),
        "an overflowed table: no lane named");
  json_free(doc);

  /* misaligned: the first lane whose address is not a multiple of 4, with or without a table */
  doc = parse("{\"kind\": \"fault\", \"coredump\": {\"exception\": \"Warp Misaligned Address\", \"access_size\": 4, "
              "\"lanes\": [{\"lane\": 0, \"address\": \"0x1000\"}, {\"lane\": 1, \"address\": \"0x1006\"}, "
              "{\"lane\": 2, \"address\": \"0x100a\"}]}}");
  CHECK(doc && addr_annotate_coredump(doc, &changed) == 0);
  fa = json_get(doc, "fault_address");
  CHECK(json_get_int(fa, "lane", -1) == 1 && json_get_int(fa, "lanes_bad", -1) == 2 &&
            !strcmp(json_get_str(fa, "address"), "0x1006"),
        "misaligned: lane 1");
  json_free(doc);
}

/* tests/gpu/misaligned.cu on an H200 (test_coredump.c reads tests/unit/fixtures/coredump-misaligned-lanes.txt):
 * `LDG.E R5,desc[UR4][R4.64]` overwrote R5, the high half of its own address, so of each lane only the low 32
 * bits are known (R4, 0x63e00006 + 16 x lane), which alone say it was misaligned. The program's buffer is the
 * 16 KiB before its output (R2:R3 = 0x7fac63e04000). */
static const char misaligned_low[] =
    "\"coredump\": {\"exception\": \"Warp Misaligned Address\", \"access\": \"load\", \"access_size\": 4, "
    "\"address_unknown\": \"overwrote\", \"lanes\": ["
    "{\"lane\": 0, \"block\": [0,0,0], \"thread\": [0,0,0], \"address_low32\": \"0x63e00006\"},"
    "{\"lane\": 2, \"block\": [0,0,0], \"thread\": [2,0,0], \"address_low32\": \"0x63e00026\"}]}";

/* A misaligned lane known by the low half of its address: named, and its address placed by the table when exactly
 * one live allocation holds an address with those low bits; with two, the lane is named in address_unknown. */
static void test_lanes_low32(void) {
  char r1[512], r2[512], r3[512], ranges[1800];
  snprintf(ranges, sizeof ranges, "%s, %s", range(r1, sizeof r1, 0x7fac63e00000ull, 16384, 0, -1, "device", 1),
           range(r2, sizeof r2, 0x7fac63e04000ull, 16384, 0, -1, "device", -1));
  struct json *doc = report(9, ranges, misaligned_low);
  int changed = 0;
  CHECK(doc && addr_annotate_coredump(doc, &changed) == 0 && changed);
  const struct json *fa = json_get(doc, "fault_address");
  CHECK(!strcmp(json_get_str(fa, "address") ? json_get_str(fa, "address") : "", "0x7fac63e00006") &&
            json_get_int(fa, "lane", -1) == 0 && json_get_str(fa, "high_half") &&
            !strcmp(json_get_str(fa, "high_half"), "inferred"),
        "the misaligned lane, its address placed by the table: %s lane %lld", json_get_str(fa, "address"),
        json_get_int(fa, "lane", -1));
  char *text = text_of(doc);
  CHECK(strstr(text, "lane 0 (thread (0,0,0), block (0,0,0)) made it: 2 of the 2 lanes") &&
            strstr(text, "overwrote the high half of its address"),
        "the verdict says the high half was inferred:\n%s", text);
  free(text);
  json_free(doc);

  /* a second allocation holding an address with the same low 32 bits: the lane is named, the address is not */
  snprintf(ranges, sizeof ranges, "%s, %s, %s", range(r1, sizeof r1, 0x7fac63e00000ull, 16384, 0, -1, "device", 1),
           range(r2, sizeof r2, 0x7fac63e04000ull, 16384, 0, -1, "device", -1),
           range(r3, sizeof r3, 0x7fad63e00000ull, 4096, 0, -1, "device", -1));
  doc = report(9, ranges, misaligned_low);
  CHECK(doc && addr_annotate_coredump(doc, &changed) == 0 && !json_get(doc, "fault_address") &&
            strstr(json_get_str(json_get(doc, "coredump"), "address_unknown"),
                   "lane 0 made a misaligned access (its address ends in 0x63e00006, not a multiple of 4)"),
        "two allocations hold such an address: %s", json_get_str(json_get(doc, "coredump"), "address_unknown"));
  json_free(doc);
}

/* The operator's own buffers (--diagnose: op.buffers of the culprit): PyTorch's caching allocator hands out
 * pieces of one 2 MiB segment, so the table alone says only "inside the segment"; the operator's tensors say
 * which one, with shape and dtype. Argument words that point into them are named the same way. */
static void test_op_buffers(void) {
  char text[8192], r1[512];
  uint64_t seg = A, self = A + 0x1000, index = A + 0x3000;
  snprintf(
      text, sizeof text,
      "{\"kind\": \"fault\", \"error\": {\"code\": 700}, \"verdict\": {\"certainty\": \"exact\"},"
      " \"culprit\": {\"seq\": 9, \"kernel\": \"index_kernel\", \"params\": [\"0x%" PRIx64 "\", \"0x%" PRIx64
      "\", \"0x200\"], \"params_size\": 24, \"op\": {\"name\": \"aten::index.Tensor\", \"args\": \"...\","
      " \"buffers\": [{\"label\": \"self: float32[1024] cuda:0\", \"base\": \"0x%" PRIx64 "\", \"size\": 4096},"
      " {\"label\": \"index: int64[512] cuda:0\", \"base\": \"0x%" PRIx64 "\", \"size\": 4096},"
      " {\"label\": \"bad\", \"base\": \"zz\", \"size\": 1}, {\"label\": \"neg\", \"base\": \"0x10\", \"size\": -4}]}},"
      " \"candidates\": [], \"allocations\": {\"capacity\": 4096, \"recorded\": 1, \"forgotten\": 0,"
      " \"not_recorded\": 0, \"ranges\": [%s], \"sites\": []}}",
      self, index, self, index, range(r1, sizeof r1, seg, 2 << 20, 1, -1, "device", -1));
  struct json *doc = parse(text);
  const struct json *c = json_get(doc, "culprit");
  char out[1024];
  CHECK(addr_describe_op_buffer(c, index + 8, 0, out, sizeof out) &&
            !strcmp(out, "offset 8 of aten::index.Tensor's `index: int64[512] cuda:0` (4096 bytes at 0x7f0000003000)"),
        "inside: %s", out);
  CHECK(!addr_describe_op_buffer(c, index + 4096 + 16, 0, out, sizeof out), "past the end is not inside");
  CHECK(addr_describe_op_buffer(c, index + 4096 + 16, 1, out, sizeof out) &&
            !strcmp(out, "16 bytes past the end of aten::index.Tensor's `index: int64[512] cuda:0` (4096 bytes at "
                         "0x7f0000003000)"),
        "near: %s", out);
  CHECK(addr_describe_op_buffer(c, self - 1, 1, out, sizeof out) && strstr(out, "1 byte before the start of") &&
            strstr(out, "`self: float32[1024] cuda:0`"),
        "before: %s", out);
  CHECK(!addr_describe_op_buffer(c, self + (2ull << 30), 1, out, sizeof out), "nothing near");
  CHECK(!addr_describe_op_buffer(json_get(doc, "candidates"), self, 1, out, sizeof out), "no operator");
  /* the faulting address, 16 bytes past index: the tensor, then the segment that holds it */
  annotated(doc, index + 4096 + 16, 4);
  char *t = text_of(doc);
  CHECK(strstr(t, "16 bytes past the end of aten::index.Tensor's `index: int64[512] cuda:0` (4096 bytes at "
                  "0x7f0000003000)") &&
            strstr(t, "inside the allocation of 2097152 bytes (2 MiB)"),
        "%s", t);
  free(t);
  /* the argument words: the operator's tensors first */
  struct render_opts o = {.brief = 0};
  char *all = render_doc(doc, &o);
  CHECK(all && strstr(all, "word 0 points to offset 0 of aten::index.Tensor's `self: float32[1024] cuda:0`") &&
            strstr(all, "word 1 points to offset 0 of aten::index.Tensor's `index: int64[512]"),
        "%s", all);
  free(all);
  json_free(doc);
}

/* The page of the kernel's log (gpu_fault_log): answered when the dump gave no byte, never over one, and said as a
 * page; a log that gave none says why in the verdict. */
static void test_kernel_log(void) {
  const char *table = "\"allocations\": {\"ranges\": [{\"base\": \"0x7f0000000000\", \"size\": 4096, \"kind\": "
                      "\"device\", \"api\": \"cuMemAlloc_v2\", \"seq\": 0}], \"sites\": []}";
  char text[1024];
  snprintf(text, sizeof text,
           "{\"kind\": \"fault\", \"culprit\": {\"seq\": 4}, %s, \"gpu_fault_log\": {\"address\": "
           "\"0x7f0000003000\", \"granule\": 4096, \"access\": \"write\"}}",
           table);
  struct json *doc = parse(text);
  uint64_t x = 0, acc = 0;
  const char *src = NULL;
  int changed = 0;
  CHECK(addr_of_report(doc, &x, &acc, &src) == 1 && x == 0x7f0000003000ull && acc == 0 && !strcmp(src, "kernel log") &&
            addr_granule(doc) == 4096,
        "the kernel log's page");
  CHECK(addr_annotate_fault(doc, &changed) == 0 && changed, "annotated");
  const struct json *fa = json_get(doc, "fault_address");
  CHECK(!strcmp(json_get_str(fa, "source"), "kernel log") && json_get_int(fa, "granule", 0) == 4096 &&
            !strcmp(json_get_str(fa, "access"), "write") && !strcmp(json_get_str(fa, "answer"), "outside") &&
            json_get_int(json_get(fa, "below"), "past_end", -1) == 8192,
        "the page's answer");
  char *t = text_of(doc);
  CHECK(strstr(t, "the faulting address lies in the 4096-byte page at 0x7f0000003000 (a write;") &&
            strstr(t, "the page begins 8192 bytes after the end of the allocation of 4096 bytes"),
        "said as a page:\n%s", t);
  free(t);
  CHECK(addr_annotate_fault(doc, &changed) == 0 && changed &&
            !strcmp(json_get_str(json_get(doc, "fault_address"), "source"), "kernel log"),
        "annotated again, the same");
  json_free(doc);

  /* a line tied by the process's name alone (culprit in a pid namespace of its own) is said as a hint */
  snprintf(text, sizeof text,
           "{\"kind\": \"fault\", \"culprit\": {\"seq\": 4}, %s, \"gpu_fault_log\": {\"address\": "
           "\"0x7f0000003000\", \"granule\": 4096, \"access\": \"write\", \"matched\": \"name\"}}",
           table);
  doc = parse(text);
  CHECK(addr_annotate_fault(doc, &changed) == 0 && changed, "annotated");
  t = text_of(doc);
  for (char *w; (w = strstr(t, "\nculprit:   ")) != NULL;) { /* the headline's own wrapping, joined */
    *w = ' ';
    memmove(w + 1, w + 12, strlen(w + 12) + 1);
  }
  CHECK(strstr(t, "the faulting address may lie in the 4096-byte page at 0x7f0000003000 (a write;") &&
            strstr(t, "only a hint: the log's line names no pid of this process, only its name, and may be "
                      "another process's of that name, so it settles nothing"),
        "a hint:\n%s", t);
  free(t);
  json_free(doc);

  snprintf(text, sizeof text,
           "{\"kind\": \"fault\", \"culprit\": {\"seq\": 4}, %s, \"coredump\": {\"address\": "
           "\"0x7f0000000ff0\", \"access_size\": 4}, \"gpu_fault_log\": {\"address\": \"0x7f0000003000\", "
           "\"granule\": 4096}}",
           table);
  doc = parse(text);
  CHECK(addr_annotate_fault(doc, &changed) == 0 && changed &&
            !strcmp(json_get_str(json_get(doc, "fault_address"), "source"), "coredump") &&
            !json_get(json_get(doc, "fault_address"), "granule") && addr_granule(doc) == 0,
        "the dump's byte wins over the page");
  json_free(doc);

  doc = parse("{\"kind\": \"fault\", \"culprit\": null, \"gpu_fault_log\": {\"source\": \"/dev/kmsg\", "
              "\"unknown\": \"the kernel's log (/dev/kmsg) is not readable by this user\"}}");
  CHECK(addr_annotate_fault(doc, &changed) == 0 && !changed && !json_get(doc, "fault_address"), "no page");
  t = text_of(doc);
  CHECK(strstr(t, "the faulting address is not known: the kernel's log (/dev/kmsg) is not readable"), "why:\n%s", t);
  free(t);
  json_free(doc);
}

int main(void) {
  test_kernel_log();
  test_op_buffers();
  test_lanes();
  test_lanes_low32();
  test_parse();
  test_outside_inside();
  test_freed_and_reuse();
  test_reserved();
  test_unknowns();
  test_malformed();
  return CHECK_DONE();
}
