/* The unit tests' reader of reports written by hand: parse(text) gives the JSON document, or NULL after saying on
 * stderr where the text stopped parsing (a test's own typo, not what is under test). */
#ifndef CULPRIT_TEST_PARSE_DOC_H
#define CULPRIT_TEST_PARSE_DOC_H

#include <stdio.h>
#include <string.h>

#include "render/json.h"

__attribute__((unused)) static struct json *parse(const char *text) {
  struct json *doc = NULL;
  struct json_error err;
  if (json_parse(text, strlen(text), &doc, &err) != 0) {
    fprintf(stderr, "test report does not parse: %s at %zu\n", err.msg, err.offset);
    return NULL;
  }
  return doc;
}

#endif
