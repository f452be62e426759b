/* Unit test: the JSON writer escapes every string so the output parses, puts commas where they belong, and
 * never emits invalid UTF-8. */
#include "../../src/base/jsonw.h"
#include "check.h"

#include <string.h>

int main(void) {
  struct jw w;
  jw_init(&w);
  jw_obj_begin(&w);
  jw_key(&w, "a");
  jw_arr_begin(&w);
  jw_int(&w, -3);
  jw_uint(&w, 18446744073709551615ull);
  jw_hex(&w, 255);
  jw_bool(&w, 1);
  jw_null(&w);
  jw_str(&w, NULL);
  jw_arr_end(&w);
  jw_key(&w, "s");
  jw_str(&w, "q\"b\\n\n\t\x01\x7f");
  jw_key(&w, "u");
  jw_str(&w, "h\xc3\xa9llo \xff\xfe end \xe2\x82");
  jw_key(&w, "e");
  jw_obj_begin(&w);
  jw_obj_end(&w);
  jw_key(&w, "d");
  jw_double(&w, 0.5);
  jw_obj_end(&w);
  CHECK(!w.err);
  const char *want = "{\"a\":[-3,18446744073709551615,\"0xff\",true,null,null],"
                     "\"s\":\"q\\\"b\\\\n\\n\\t\\u0001\\u007f\","
                     "\"u\":\"h\xc3\xa9llo \\u00ff\\u00fe end \\u00e2\\u0082\",\"e\":{},\"d\":0.5}";
  CHECK(w.buf && !strcmp(w.buf, want));
  if (w.buf && strcmp(w.buf, want)) fprintf(stderr, "got  %s\nwant %s\n", w.buf, want);
  jw_free(&w);

  /* Unbalanced closing is an error, not a crash. */
  jw_init(&w);
  jw_arr_end(&w);
  CHECK(w.err);
  jw_free(&w);

  /* Nesting deeper than the limit is refused. */
  jw_init(&w);
  for (int i = 0; i < JW_MAX_DEPTH + 1; i++) jw_arr_begin(&w);
  CHECK(w.err);
  jw_free(&w);
  return CHECK_DONE();
}
