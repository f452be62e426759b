/* Prints what the verdict's renderer (src/render/render_parts.c) makes of every stack in the reports it is given:
 * for each object with a "stack", whether each native frame is a library's and which frame is the user's; for each
 * with "python", which Python frame is the user's. libframes_check.py compares it with python/culprit/verdict.py's
 * rules over the same files, so the two cannot drift apart. */
#include "render/json.h"
#include "render/render_int.h"

#include <stdio.h>
#include <stdlib.h>

static long long index_of(const struct json *arr, const struct json *f) {
  for (size_t i = 0; f && i < json_len(arr); i++)
    if (json_at(arr, i) == f) return (long long)i;
  return -1;
}

/* Depth first, an object's members and an array's items in order: the walk libframes_check.py makes. */
static void walk(const struct json *node, const char *path) {
  char sub[512];
  if (json_is(node, JSON_OBJ)) {
    const struct json *stack = json_get(node, "stack"), *py = json_get(node, "python");
    if (json_is(stack, JSON_ARR)) {
      printf("%s stack lib", path);
      for (size_t i = 0; i < json_len(stack); i++) printf(" %d", render_is_lib_frame(json_at(stack, i)) ? 1 : 0);
      printf(" user %lld\n", index_of(stack, render_user_frame(node)));
    }
    if (json_is(py, JSON_ARR)) printf("%s python user %lld\n", path, index_of(py, render_user_pyframe(py)));
  }
  for (size_t i = 0; i < json_len(node); i++) {
    if (json_is(node, JSON_OBJ))
      snprintf(sub, sizeof sub, "%s/%s", path, json_key_at(node, i));
    else
      snprintf(sub, sizeof sub, "%s/%zu", path, i);
    walk(json_at(node, i), sub);
  }
}

int main(int argc, char **argv) {
  for (int a = 1; a < argc; a++) {
    FILE *f = fopen(argv[a], "rb");
    if (!f) {
      fprintf(stderr, "cannot open %s\n", argv[a]);
      return 1;
    }
    static char buf[16 << 20];
    size_t n = fread(buf, 1, sizeof buf, f);
    fclose(f);
    struct json *doc = NULL;
    struct json_error err;
    if (json_parse(buf, n, &doc, &err) != 0) continue; /* a broken fixture says nothing of frames */
    printf("file %d\n", a);
    walk(doc, "");
    json_free(doc);
  }
  return 0;
}
