/* Operator notes (src/core/ops.c): which note holds a launch (innermost of its thread, ended or running), the
 * depth limit, notes of another thread, a long run of operators after a bad one (its problem is kept), text cut
 * at its bound, and the JSON a report gets. The launch counter is this test's own (cp_view below). */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "check.h"
#include "core/core.h"
#include "aftermath/emit_ops.h"
#include "core/ops.h"
#include "base/jsonw.h"

static uint64_t g_launches; /* what cp_view reports as the last launch number */
void cp_view(struct cp_view *v) {
  memset(v, 0, sizeof *v);
  v->seq = __atomic_load_n(&g_launches, __ATOMIC_SEQ_CST);
}

static void launch(void) { __atomic_add_fetch(&g_launches, 1, __ATOMIC_SEQ_CST); }
static int32_t me(void) { return (int32_t)syscall(SYS_gettid); }

static const char *name_of(uint64_t seq, int32_t tid) {
  static struct ops_note n;
  return ops_find(seq, tid, &n) ? n.name : NULL;
}

static int32_t g_other_tid;
static void *other_thread(void *arg) {
  (void)arg;
  g_other_tid = me();
  CHECK(ops_begin("other::op", "", "") == 0);
  launch(); /* launch 4 */
  CHECK(ops_end() == 0);
  return NULL;
}

static char *json_of_diagnosis(void) {
  struct jw w;
  jw_init(&w);
  jw_obj_begin(&w);
  emit_ops_diagnosis(&w);
  jw_obj_end(&w);
  char *s = strdup(w.buf ? w.buf : "");
  jw_free(&w);
  return s;
}

int main(void) {
  CHECK(ops_end() == -3, "nothing open");
  CHECK(ops_begin(NULL, "", "") == -2 && ops_begin("", "", "") == -2, "a name is needed");
  char *empty = json_of_diagnosis();
  CHECK(strcmp(empty, "{}") == 0, "no problem yet: no diagnosis key (%s)", empty);
  free(empty);

  /* a compiled region holding one fallback operator, then its own launch */
  CHECK(ops_begin("compiled graph 0", "inputs: int64[4]", NULL) == 0);
  launch(); /* 1: the region's */
  CHECK(ops_begin("aten::add.Tensor", "self: float32[4]", "") == 0);
  launch(); /* 2: the fallback operator's */
  CHECK(ops_end() == 0);
  launch(); /* 3: the region's again */
  CHECK(name_of(3, me()) && strcmp(name_of(3, me()), "compiled graph 0") == 0, "running region holds #3");
  pthread_t t;
  pthread_create(&t, NULL, other_thread, NULL);
  pthread_join(t, NULL);
  CHECK(ops_end() == 0);
  CHECK(strcmp(name_of(1, me()), "compiled graph 0") == 0);
  CHECK(strcmp(name_of(2, me()), "aten::add.Tensor") == 0, "the innermost note holds #2");
  CHECK(strcmp(name_of(3, me()), "compiled graph 0") == 0);
  CHECK(name_of(4, g_other_tid) && strcmp(name_of(4, g_other_tid), "other::op") == 0,
        "another thread's launch belongs to that thread's operator");
  launch(); /* 5: after every note ended */
  CHECK(name_of(5, me()) == NULL, "a launch outside any operator has none");

  /* the JSON a launch of the report gets */
  struct jw w;
  jw_init(&w);
  jw_obj_begin(&w);
  emit_ops_for(&w, 2, me());
  jw_obj_end(&w);
  CHECK(strcmp(w.buf, "{\"op\":{\"name\":\"aten::add.Tensor\",\"args\":\"self: float32[4]\"}}") == 0, "%s", w.buf);
  jw_free(&w);
  /* eight deep at most, and the ninth is refused without disturbing the others */
  for (int i = 0; i < 8; i++) CHECK(ops_begin("deep", "", "") == 0);
  CHECK(ops_begin("too deep", "", "") == -3);
  for (int i = 0; i < 8; i++) CHECK(ops_end() == 0);
  CHECK(ops_end() == -3);

  /* a bad operator, then a thousand more: its problem is still listed and found for its launch, while the
   * ring of all notes has forgotten the early ones */
  CHECK(ops_begin("aten::embedding", "indices: int64[8] [0, 120]",
                  "indices int64[8] holds 120, but weight has 100 rows") == 0);
  uint64_t bad = g_launches + 1;
  launch();
  CHECK(ops_end() == 0);
  for (int i = 0; i < 1000; i++) {
    CHECK(ops_begin("aten::mul.Tensor", "", "") == 0);
    launch();
    CHECK(ops_end() == 0);
  }
  CHECK(name_of(bad, me()) && strcmp(name_of(bad, me()), "aten::embedding") == 0, "the problem note outlives the ring");
  CHECK(name_of(2, me()) == NULL, "the ring keeps the last 512 notes");
  char *d = json_of_diagnosis();
  CHECK(strstr(d, "\"diagnosis\":[{\"name\":\"aten::embedding\"") != NULL, "%s", d);
  CHECK(strstr(d, "holds 120") && strstr(d, "\"first\":") && strstr(d, "\"thread\":"), "%s", d);
  free(d);

  /* text longer than its room is cut and says so */
  char big[2000];
  memset(big, 'x', sizeof big - 1);
  big[sizeof big - 1] = '\0';
  CHECK(ops_begin("aten::long", big, big) == 0);
  launch();
  struct ops_note n;
  CHECK(ops_find(g_launches, me(), &n) == 1);
  CHECK(strlen(n.args) == OPS_ARGS - 1 && strcmp(n.args + OPS_ARGS - 4, "...") == 0, "args cut with ...");
  CHECK(strlen(n.problem) == OPS_PROBLEM - 1, "problem cut");
  CHECK(ops_end() == 0);

  /* the buffers an operator was given: good lines kept (hex and decimal, a label with spaces, one without),
   * bad ones left out (no size, a zero size, garbage, a range that wraps), a long label cut, at most
   * OPS_BUFFERS, and the JSON */
  char lines[4096];
  snprintf(lines, sizeof lines,
           "0x7f0000001000 4096 index: int64[512] cuda:0\n"
           "12345\n"
           "0x7f0000009000 0 empty\n"
           "nonsense here\n"
           "0xffffffffffffff00 512 wraps\n"
           "139637976743936 256\n"
           "0x7f0000020000 0x800 %s\n"
           "0x1000 16 four\n0x2000 16 five\n0x3000 16 six\n0x4000 16 seven",
           big);
  CHECK(ops_begin_buffers("aten::index.Tensor", "self: float32[100]", NULL, lines) == 0);
  launch();
  CHECK(ops_find(g_launches, me(), &n) == 1);
  CHECK(n.nbuf == OPS_BUFFERS, "buffers kept: %d", n.nbuf);
  CHECK(n.buf[0].base == 0x7f0000001000ull && n.buf[0].size == 4096 &&
            strcmp(n.buf[0].label, "index: int64[512] cuda:0") == 0,
        "first buffer %llx %llu '%s'", (unsigned long long)n.buf[0].base, (unsigned long long)n.buf[0].size,
        n.buf[0].label);
  CHECK(n.buf[1].base == 139637976743936ull && n.buf[1].size == 256 && n.buf[1].label[0] == '\0', "decimal");
  CHECK(n.buf[2].size == 0x800 && strlen(n.buf[2].label) == OPS_LABEL - 1 &&
            strcmp(n.buf[2].label + OPS_LABEL - 4, "...") == 0,
        "a long label is cut: %zu", strlen(n.buf[2].label));
  CHECK(strcmp(n.buf[5].label, "six") == 0, "the seventh is past the room: %s", n.buf[5].label);
  jw_init(&w);
  jw_obj_begin(&w);
  emit_ops_for(&w, g_launches, me());
  jw_obj_end(&w);
  CHECK(strstr(w.buf, "\"buffers\":[{\"label\":\"index: int64[512] cuda:0\",\"base\":\"0x7f0000001000\","
                      "\"size\":4096}") != NULL,
        "%s", w.buf);
  jw_free(&w);
  CHECK(ops_end() == 0);
  CHECK(ops_begin_buffers("aten::none", "", NULL, NULL) == 0 && ops_find(g_launches + 1, me(), &n) == 1 && n.nbuf == 0,
        "no buffers");
  CHECK(ops_end() == 0);

  return CHECK_DONE();
}
