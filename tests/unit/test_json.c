/* Unit tests of the JSON parser and DOM (src/render/json.c): valid documents, escapes, numbers, malformed input
 * with error offsets, the depth limit, accessors on missing fields, mutation and a dump/parse round trip. */
#include "../../src/render/json.h"
#include "../../src/base/jsonw.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

static struct json *parse(const char *s) {
  struct json *doc = NULL;
  struct json_error err;
  int rc = json_parse(s, strlen(s), &doc, &err);
  CHECK(rc == JSON_OK, "parsing %s failed: %s at %zu", s, err.msg, err.offset);
  return doc;
}

static void test_basic(void) {
  struct json *doc = parse(" {\"b\": 1, \"a\": [true, false, null, \"x\"], \"c\": {\"d\": -2.5e1}} ");
  long long v = 0;
  double d = 0;
  if (!doc) return;
  CHECK(json_is(doc, JSON_OBJ), "root is an object");
  CHECK(json_len(doc) == 3, "three members, got %zu", json_len(doc));
  CHECK(strcmp(json_key_at(doc, 0), "b") == 0 && strcmp(json_key_at(doc, 1), "a") == 0 &&
            strcmp(json_key_at(doc, 2), "c") == 0,
        "key order kept");
  CHECK(json_int(json_get(doc, "b"), &v) == 0 && v == 1, "b == 1");
  CHECK(json_len(json_get(doc, "a")) == 4, "array of 4");
  CHECK(json_at(json_get(doc, "a"), 0)->boolean == 1, "true");
  CHECK(json_is(json_at(json_get(doc, "a"), 1), JSON_BOOL) && json_at(json_get(doc, "a"), 1)->boolean == 0, "false");
  CHECK(json_is(json_at(json_get(doc, "a"), 2), JSON_NULL), "null");
  CHECK(strcmp(json_str(json_at(json_get(doc, "a"), 3)), "x") == 0, "string x");
  CHECK(json_num(json_get(json_get(doc, "c"), "d"), &d) == 0 && d == -25.0, "-2.5e1 == -25, got %g", d);
  CHECK(json_int(json_get(json_get(doc, "c"), "d"), &v) != 0, "-2.5e1 is not written as an integer");
  json_free(doc);
}

static void test_numbers(void) {
  struct json *doc = parse("[0, -0, 9223372036854775807, -9223372036854775808, 9223372036854775808, 1.5, 1E3, "
                           "0.000001, 4096]");
  long long v = 0;
  double d = 0;
  if (!doc) return;
  CHECK(json_int(json_at(doc, 0), &v) == 0 && v == 0, "0");
  CHECK(json_int(json_at(doc, 2), &v) == 0 && v == 9223372036854775807LL, "LLONG_MAX exact");
  CHECK(json_int(json_at(doc, 3), &v) == 0 && v == -9223372036854775807LL - 1, "LLONG_MIN exact");
  CHECK(json_int(json_at(doc, 4), &v) != 0, "2^63 does not fit a long long");
  CHECK(json_num(json_at(doc, 4), &d) == 0 && d > 9.2e18, "2^63 as a double");
  CHECK(json_num(json_at(doc, 5), &d) == 0 && d == 1.5, "1.5");
  CHECK(json_num(json_at(doc, 6), &d) == 0 && d == 1000.0, "1E3");
  CHECK(json_int(json_at(doc, 8), &v) == 0 && v == 4096, "4096");
  CHECK(json_get_int(doc, "x", 7) == 7, "json_get_int on an array gives the fallback");
  json_free(doc);
}

static void test_escapes(void) {
  struct json *doc = parse("[\"a\\\"b\\\\c\\/d\\b\\f\\n\\r\\t\", \"\\u00e9\\u20AC\", \"\\ud83d\\ude00\", "
                           "\"x\\u0000y\", \"\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\"]");
  const struct json *nul;
  if (!doc) return;
  CHECK(strcmp(json_str(json_at(doc, 0)), "a\"b\\c/d\b\f\n\r\t") == 0, "simple escapes");
  CHECK(strcmp(json_str(json_at(doc, 1)), "\xc3\xa9\xe2\x82\xac") == 0, "\\u00e9\\u20AC to UTF-8");
  CHECK(strcmp(json_str(json_at(doc, 2)), "\xf0\x9f\x98\x80") == 0, "surrogate pair to one 4-byte character");
  nul = json_at(doc, 3);
  CHECK(nul && nul->len == 3 && memcmp(nul->str, "x\0y", 3) == 0, "\\u0000 kept with the length");
  CHECK(strcmp(json_str(json_at(doc, 4)), "\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80") == 0, "raw UTF-8 kept");
  json_free(doc);
}

/* Each malformed input must fail with JSON_ESYNTAX (or the given code) at the given byte offset (-1: any). */
static void test_malformed(void) {
  static const struct {
    const char *text;
    long offset;
  } bad[] = {
      {"", 0},
      {"   ", 3},
      {"{", 1},
      {"[1,]", 3},
      {"{\"a\":1,}", 7},
      {"[1 2]", 3},
      {"{\"a\" 1}", 5},
      {"{1:2}", 1},
      {"01", 0},
      {"1.", 2},
      {".5", 0},
      {"-", 0},
      {"+1", 0},
      {"1e", 2},
      {"tru", 0},
      {"nul", 0},
      {"truex", 4},
      {"NaN", 0},
      {"Infinity", 0},
      {"1e999", 0},
      {"\"abc", 0},
      {"\"\\x\"", 1},
      {"\"\\u12\"", 1},
      {"\"\\u12g4\"", 1},
      {"\"\\ud800\"", 1},
      {"\"\\ud800\\u0041\"", 1},
      {"\"\\udc00\"", 1},
      {"\"a\tb\"", 2},
      {"\"\xff\"", 1},
      {"\"\xc0\xaf\"", 1},
      {"\"\xed\xa0\x80\"", 1},
      {"\"\xe2\x82\"", 1},
      {"1 2", 2},
      {"{}}", 2},
      {"[", 1},
      {"[\"a\"", 4},
      {"{\"a\":}", 5},
  };
  size_t i;
  for (i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    struct json *doc = (struct json *)1;
    struct json_error err;
    int rc = json_parse(bad[i].text, strlen(bad[i].text), &doc, &err);
    CHECK(rc == JSON_ESYNTAX, "'%s' should be a syntax error, got rc %d", bad[i].text, rc);
    CHECK(doc == NULL, "'%s' leaves no tree", bad[i].text);
    CHECK(err.msg[0] != '\0', "'%s' has a message", bad[i].text);
    CHECK(bad[i].offset < 0 || err.offset == (size_t)bad[i].offset, "'%s': offset %zu, expected %ld (%s)", bad[i].text,
          err.offset, bad[i].offset, err.msg);
    json_free(doc);
  }
  {
    /* a NUL byte inside the given length is data, and data outside a string is an error */
    struct json *doc = NULL;
    struct json_error err;
    CHECK(json_parse("[1]\0", 4, &doc, &err) == JSON_ESYNTAX && err.offset == 3, "NUL after the value");
    CHECK(json_parse("[1]xyz", 3, &doc, &err) == JSON_OK, "only len bytes are read");
    json_free(doc);
    CHECK(json_parse(NULL, 0, &doc, NULL) == JSON_ESYNTAX, "NULL input without an error struct");
  }
}

static void test_depth(void) {
  size_t n = 100000, i;
  char *s = malloc(2 * n + 1);
  struct json *doc = NULL;
  struct json_error err;
  if (!s) return;
  /* exactly at the limit parses */
  for (i = 0; i < JSON_MAX_DEPTH; i++) s[i] = '[';
  for (i = 0; i < JSON_MAX_DEPTH; i++) s[JSON_MAX_DEPTH + i] = ']';
  CHECK(json_parse(s, 2 * JSON_MAX_DEPTH, &doc, &err) == JSON_OK, "depth %d parses: %s", JSON_MAX_DEPTH, err.msg);
  json_free(doc);
  /* one more is refused, and a huge depth does not overflow the stack */
  memmove(s + 1, s, 2 * JSON_MAX_DEPTH);
  s[0] = '[';
  s[2 * JSON_MAX_DEPTH + 1] = ']';
  CHECK(json_parse(s, 2 * JSON_MAX_DEPTH + 2, &doc, &err) == JSON_EDEPTH, "depth %d refused", JSON_MAX_DEPTH + 1);
  CHECK(err.offset == JSON_MAX_DEPTH, "depth error at offset %zu", err.offset);
  memset(s, '[', n);
  CHECK(json_parse(s, n, &doc, &err) == JSON_EDEPTH, "100000 '[' refused");
  for (i = 0; i < n; i += 5) memcpy(s + i, "{\"a\":", 5);
  CHECK(json_parse(s, n, &doc, &err) == JSON_EDEPTH, "deep objects refused");
  free(s);
}

static void test_missing(void) {
  struct json *doc = parse("{\"a\": {\"b\": [1]}, \"s\": \"str\"}");
  long long v;
  double d;
  if (!doc) return;
  CHECK(json_get(NULL, "a") == NULL, "get on NULL");
  CHECK(json_get(doc, "zz") == NULL, "missing key");
  CHECK(json_get(json_get(doc, "s"), "a") == NULL, "get on a string");
  CHECK(json_at(json_get(doc, "s"), 0) == NULL, "index into a string");
  CHECK(json_at(json_get(json_get(doc, "a"), "b"), 1) == NULL, "index past the end");
  CHECK(json_str(json_get(doc, "a")) == NULL, "object is not a string");
  CHECK(json_num(NULL, &d) != 0 && json_int(json_get(doc, "s"), &v) != 0, "numbers of non-numbers");
  CHECK(json_len(NULL) == 0 && json_len(json_get(doc, "s")) == 0, "length of non-containers");
  CHECK(json_key_at(json_get(json_get(doc, "a"), "b"), 0) == NULL, "keys of an array");
  CHECK(json_get_str(doc, "zz") == NULL && json_get_int(NULL, "x", -4) == -4, "shorthands on missing");
  CHECK(strcmp(json_get_str(doc, "s"), "str") == 0, "shorthand string");
  json_free(doc);
  json_free(NULL);
}

static char *dump(const struct json *doc, int pretty) {
  struct jw w;
  char *out;
  jw_init(&w);
  w.pretty = pretty;
  if (json_dump(doc, &w) != JSON_OK) {
    jw_free(&w);
    return NULL;
  }
  out = strdup(w.buf ? w.buf : "");
  jw_free(&w);
  return out;
}

static void test_roundtrip_and_mutation(void) {
  const char *text = "{\"schema\":\"culprit.report/1\",\"n\":[1,-2,3.25,true,false,null],"
                     "\"s\":\"q\\\"uote\\\\ \\n \xc3\xa9 \\u0001\",\"o\":{},\"a\":[]}";
  struct json *doc = parse(text), *again = NULL;
  struct json_error err;
  char *one, *two, *pretty;
  if (!doc) return;
  one = dump(doc, 0);
  CHECK(one != NULL, "dump works");
  if (!one) goto out;
  CHECK(json_parse(one, strlen(one), &again, &err) == JSON_OK, "dump parses again: %s", err.msg);
  two = dump(again, 0);
  CHECK(two && strcmp(one, two) == 0, "dump is stable:\n%s\n%s", one, two ? two : "(null)");
  free(two);
  json_free(again);
  again = NULL;
  pretty = dump(doc, 1);
  CHECK(pretty && strchr(pretty, '\n'), "pretty output has newlines");
  CHECK(pretty && json_parse(pretty, strlen(pretty), &again, &err) == JSON_OK, "pretty output parses");
  free(pretty);
  json_free(again);

  /* json_set replaces in place (order kept) and appends new keys at the end */
  CHECK(json_set(doc, "n", json_new_int(5)) == 0, "replace");
  CHECK(json_get_int(doc, "n", 0) == 5 && strcmp(json_key_at(doc, 1), "n") == 0, "replaced in place");
  CHECK(json_set(doc, "new", json_new_str("v")) == 0, "append");
  CHECK(strcmp(json_key_at(doc, json_len(doc) - 1), "new") == 0 && strcmp(json_get_str(doc, "new"), "v") == 0,
        "appended at the end");
  CHECK(json_append((struct json *)json_get(doc, "a"), json_new_int(1)) == 0 && json_len(json_get(doc, "a")) == 1,
        "append to array");
  {
    struct json *kid = json_new_int(1);
    CHECK(json_append(doc, kid) != 0, "append to an object refused");
    json_free(kid); /* a refused child stays the caller's */
  }
out:
  free(one);
  json_free(doc);
}

int main(void) {
  test_basic();
  test_numbers();
  test_escapes();
  test_malformed();
  test_depth();
  test_missing();
  test_roundtrip_and_mutation();
  return CHECK_DONE();
}
