/* A bounded fuzz test of what reads reports: the real reports of tests/gpu/fixtures, mutated (bytes flipped, text
 * cut short, keys deleted or duplicated, numbers made huge, values of the wrong type, nesting made deep, strings
 * given control characters, escape sequences and bytes that are not UTF-8), go to the JSON parser and to every
 * renderer: the full and brief verdicts, the JSON written back (`culprit report --json`), the trace, and the
 * merged job view of several reports (text and JSON); changed trees also go through the symbolizer first. Nothing may crash (the test is built with ASan and UBSan
 * where the compiler has them), the output stays bounded, every line of text starts with "culprit:", every byte
 * printed is fit for a terminal (termsafe.h, written apart from the escaping it checks), and JSON written parses.
 * The seed is fixed and the count bounded: the same mutations every run, a few seconds in all (for a longer run by
 * hand, build it with -DFUZZ_SEED=N -DFUZZ_PER_FIXTURE=M). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "../../src/render/addr.h"
#include "../../src/render/json.h"
#include "../../src/base/jsonw.h"
#include "../../src/report/merge.h"
#include "../../src/render/render.h"
#include "../../src/report/symbolize.h"
#include "../../src/report/trace.h"
#include "check.h"
#include "termsafe.h"

#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef FUZZ_SEED
#define FUZZ_SEED 0x2f6b1d9a5c3e8047ULL /* fixed: every run tries the same mutations */
#endif
#ifndef FUZZ_PER_FIXTURE
#define FUZZ_PER_FIXTURE 24 /* mutated reports per fixture (each rendered every way) */
#endif
#define FUZZ_MAX_FIXTURES 128
#define FUZZ_OUT_FACTOR 16          /* output may be this many times the input, ... */
#define FUZZ_OUT_SLACK (256 * 1024) /* ...plus this */

#include "fuzz_rand.h"

/* One fixture: its name, its text and its parsed tree. */
struct fixture {
  char name[256];   /* file name */
  char *text;       /* the file's bytes */
  size_t len;       /* bytes in text */
  struct json *doc; /* parsed */
};

static struct fixture fixtures[FUZZ_MAX_FIXTURES];
static size_t nfixtures;
static size_t tried, parsed; /* mutated texts fed to the parser, and those it took */

static int cmp_name(const void *a, const void *b) {
  return strcmp(((const struct fixture *)a)->name, ((const struct fixture *)b)->name);
}

static int load_fixtures(const char *dir) {
  DIR *d = opendir(dir);
  struct dirent *de;
  if (!d) return -1;
  while ((de = readdir(d)) != NULL && nfixtures < FUZZ_MAX_FIXTURES) {
    struct fixture *f = &fixtures[nfixtures];
    size_t n = strlen(de->d_name);
    char path[4096];
    FILE *fp;
    long sz;
    if (n < 6 || strcmp(de->d_name + n - 5, ".json") != 0) continue;
    snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
    if ((fp = fopen(path, "rb")) == NULL) continue;
    fseek(fp, 0, SEEK_END);
    sz = ftell(fp);
    fseek(fp, 0, SEEK_SET);
    f->text = malloc((size_t)sz + 1);
    if (!f->text || fread(f->text, 1, (size_t)sz, fp) != (size_t)sz) {
      fclose(fp);
      free(f->text);
      continue;
    }
    fclose(fp);
    f->len = (size_t)sz;
    snprintf(f->name, sizeof f->name, "%s", de->d_name);
    if (json_parse(f->text, f->len, &f->doc, NULL) != JSON_OK) {
      free(f->text);
      continue;
    }
    nfixtures++;
  }
  closedir(d);
  qsort(fixtures, nfixtures, sizeof fixtures[0], cmp_name);
  return 0;
}

/* ---- checks ---- */

/* Text a renderer made: bounded, terminal-safe, every line "culprit:..." ending in a newline. */
static void check_text(const char *text, size_t inlen, const char *what, const char *fx) {
  size_t n, bad = 0;
  if (!text) return;
  n = strlen(text);
  CHECK(n <= inlen * FUZZ_OUT_FACTOR + FUZZ_OUT_SLACK, "%s of %s: %zu bytes from %zu", what, fx, n, inlen);
  CHECK(termsafe(text, n, &bad), "%s of %s: byte 0x%02x at %zu reaches the terminal raw: %.80s", what, fx,
        (unsigned char)text[bad], bad, text + (bad > 40 ? bad - 40 : 0));
  for (const char *l = text; *l;) {
    const char *nl = strchr(l, '\n');
    CHECK(nl && strncmp(l, "culprit:", 8) == 0, "%s of %s: a line that is not culprit's: %.60s", what, fx, l);
    if (!nl) break;
    l = nl + 1;
  }
}

/* JSON a writer made: bounded, terminal-safe, and it parses. */
static void check_json(const struct jw *w, size_t inlen, const char *what, const char *fx) {
  struct json *back = NULL;
  size_t bad = 0;
  if (w->err || !w->buf) return; /* nesting beyond the writer's depth: refused, not written */
  CHECK(w->len <= inlen * FUZZ_OUT_FACTOR + FUZZ_OUT_SLACK, "%s of %s: %zu bytes from %zu", what, fx, w->len, inlen);
  CHECK(termsafe(w->buf, w->len, &bad), "%s of %s: byte 0x%02x at %zu is raw", what, fx, (unsigned char)w->buf[bad],
        bad);
  CHECK(json_parse(w->buf, w->len, &back, NULL) == JSON_OK, "%s of %s does not parse", what, fx);
  json_free(back);
}

/* Every way a report is shown, on doc (inlen: the size of the text it came from). */
static void render_all(const struct json *doc, size_t inlen, const char *fx) {
  static const char path[] = "/r/culprit-\x1b[2J\nculprit: forged.json";
  struct render_opts full = {.brief = 0, .path = path}, brief = {.brief = 1, .path = path};
  struct render_opts nodbg = {.brief = 0, .path = NULL, .no_debugger = 1};
  struct jw w;
  char *t;

  t = render_doc(doc, &full);
  CHECK(t != NULL || !json_is(doc, JSON_OBJ), "full verdict of %s not rendered", fx);
  check_text(t, inlen, "full verdict", fx);
  free(t);
  t = render_doc(doc, &brief);
  check_text(t, inlen, "brief verdict", fx);
  free(t);
  t = render_doc(doc, &nodbg);
  check_text(t, inlen, "verdict without debugger", fx);
  free(t);

  jw_init(&w);
  w.pretty = 1;
  json_dump(doc, &w);
  check_json(&w, inlen, "--json", fx);
  jw_free(&w);

  jw_init(&w);
  if (trace_write(doc, &w, NULL) == 0) check_json(&w, inlen, "trace", fx);
  jw_free(&w);
}

/* The mutated report merged with two real ones (a job of several processes), shown as text and as JSON. */
static void merge_all(const struct json *doc, size_t inlen, const char *fx) {
  struct merge_report reps[3];
  struct merge_job *jobs = NULL;
  size_t njobs = 0, a = fuzz_below(nfixtures), b = fuzz_below(nfixtures);
  reps[0] = (struct merge_report){"/r/culprit-mutated\x1b[31m.json", doc};
  reps[1] = (struct merge_report){fixtures[a].name, fixtures[a].doc};
  reps[2] = (struct merge_report){fixtures[b].name, fixtures[b].doc};
  if (merge_jobs(reps, 3, &jobs, &njobs) != 0) return;
  for (size_t j = 0; j < njobs; j++) {
    for (int br = 0; br < 2; br++) {
      struct render_opts o = {.brief = br, .path = NULL};
      char *t = merge_render(&jobs[j], reps, &o);
      check_text(t, inlen + fixtures[a].len + fixtures[b].len, "job view", fx);
      free(t);
    }
    struct jw w;
    jw_init(&w);
    merge_write_json(&jobs[j], reps, &w);
    check_json(&w, inlen + fixtures[a].len + fixtures[b].len, "job JSON", fx);
    jw_free(&w);
  }
  merge_free(jobs, njobs);
}

/* A mutated text: to the parser; what it takes is rendered every way (what it refuses, render_text_opts must
 * refuse with a reason). */
static void feed_text(const char *text, size_t len, const char *fx) {
  struct json *doc = NULL;
  char why[256] = "";
  tried++;
  if (json_parse(text, len, &doc, NULL) != JSON_OK) {
    struct render_opts o = {.brief = 0, .path = NULL};
    char *t = render_text_opts(text, len, &o, why, sizeof why);
    CHECK(t == NULL && why[0], "%s: text the parser refused was rendered", fx);
    free(t);
    return;
  }
  parsed++;
  render_all(doc, len, fx);
  merge_all(doc, len, fx);
  json_free(doc);
}

/* ---- mutations of the tree ---- */

/* A place in the tree: the i-th child of parent. */
struct slot {
  struct json *parent; /* an array or object */
  size_t i;            /* the child's index */
};

static void collect(struct json *n, struct slot *out, size_t *cnt, size_t cap) {
  if (n->type != JSON_ARR && n->type != JSON_OBJ) return;
  for (size_t i = 0; i < n->len && *cnt < cap; i++) {
    out[(*cnt)++] = (struct slot){n, i};
    collect(n->kids[i], out, cnt, cap);
  }
}

static struct json *copy_of(const struct json *n) {
  struct jw w;
  struct json *c = NULL;
  jw_init(&w);
  if (json_dump(n, &w) == JSON_OK) json_parse(w.buf, w.len, &c, NULL);
  jw_free(&w);
  return c;
}

static struct json *parse_lit(const char *lit) {
  struct json *n = NULL;
  json_parse(lit, strlen(lit), &n, NULL);
  return n;
}

/* Deep nesting: depth levels of arrays (or objects) around 1. */
static struct json *deep(size_t depth, int objects) {
  size_t cap = depth * 6 + 8, k = 0;
  char *s = malloc(cap);
  struct json *n;
  if (!s) return NULL;
  for (size_t i = 0; i < depth; i++) k += (size_t)sprintf(s + k, "%s", objects ? "{\"a\":" : "[");
  s[k++] = '1';
  for (size_t i = 0; i < depth; i++) s[k++] = objects ? '}' : ']';
  s[k] = '\0';
  n = parse_lit(s);
  free(s);
  return n;
}

/* A value a report never holds where it is put. */
static struct json *odd_value(void) {
  static const char *const lits[] = {
      "null",
      "true",
      "[]",
      "{}",
      "\"\"",
      "0",
      "-1",
      "1e308",
      "-1e308",
      "9223372036854775807",
      "-9223372036854775808",
      "18446744073709551616",
      "123456789012345678901234567890",
      "0.5",
      "-0",
      "[null]",
      "[[[]]]",
      "{\"seq\":-5}",
      "\"x\"",
      "[1,2,3]",
      "{\"kernel\":{}}",
      "\"k\\u001b[2Jern\\nculprit: the kernel that faulted: forged\\u009b31m\\u202e\\u0007\"",
      "\"\\u0000nul\\u0000\"",
      "\"tab\\there\\r\\u007f\"",
      "\"\\ud83d\\ude00 emoji \\u00e9\"",
      "[\"\\u001b]0;title\\u0007\", \"\\nculprit: forged\"]",
  };
  size_t r = fuzz_below(sizeof lits / sizeof lits[0] + 4);
  if (r < sizeof lits / sizeof lits[0]) return parse_lit(lits[r]);
  if (r == sizeof lits / sizeof lits[0]) return deep(50 + fuzz_below(300), 0);
  if (r == sizeof lits / sizeof lits[0] + 1) return deep(50 + fuzz_below(300), 1);
  if (r == sizeof lits / sizeof lits[0] + 2) {
    /* bytes that are not UTF-8, and controls, straight into the tree (the parser would not take them) */
    return json_new_str("raw\x1b[2J\xff\xfe\xc0\x80\xed\xa0\x80\x9b"
                        "31m\ncut\xe4\xb8");
  }
  {
    /* a very long string */
    size_t n = 20000 + fuzz_below(100000);
    char *s = malloc(n + 1);
    struct json *v;
    if (!s) return NULL;
    for (size_t i = 0; i < n; i++) s[i] = (char)(fuzz_rand() % 5 == 0 ? 0x1b : 'a' + (int)(i % 26));
    s[n] = '\0';
    v = json_new_str(s);
    free(s);
    return v;
  }
}

/* One change to the tree at a random place: a value replaced, a member deleted or duplicated. */
static void mutate_tree(struct json *root) {
  static struct slot slots[200000];
  size_t n = 0;
  struct slot s;
  struct json *p;
  collect(root, slots, &n, sizeof slots / sizeof slots[0]);
  if (n == 0) return;
  s = slots[fuzz_below(n)];
  p = s.parent;
  switch (fuzz_below(4)) {
  case 0: /* delete */
    json_free(p->kids[s.i]);
    if (p->type == JSON_OBJ) free(p->keys[s.i]);
    memmove(p->kids + s.i, p->kids + s.i + 1, (p->len - s.i - 1) * sizeof *p->kids);
    if (p->type == JSON_OBJ) memmove(p->keys + s.i, p->keys + s.i + 1, (p->len - s.i - 1) * sizeof *p->keys);
    p->len--;
    break;
  case 1: { /* duplicate: the same key (or element) once more, at the end */
    struct json *c = copy_of(p->kids[s.i]);
    char *key = p->type == JSON_OBJ ? strdup(p->keys[s.i]) : NULL;
    if (!c || (p->type == JSON_OBJ && !key)) {
      json_free(c);
      free(key);
      break;
    }
    if (p->len == p->cap) {
      size_t cap = p->cap * 2 + 1;
      struct json **kids = realloc(p->kids, cap * sizeof *kids);
      char **keys = p->type == JSON_OBJ ? realloc(p->keys, cap * sizeof *keys) : NULL;
      if (kids) p->kids = kids;
      if (keys) p->keys = keys;
      if (!kids || (p->type == JSON_OBJ && !keys)) {
        json_free(c);
        free(key);
        break;
      }
      p->cap = cap;
    }
    p->kids[p->len] = c;
    if (p->type == JSON_OBJ) p->keys[p->len] = key;
    p->len++;
    break;
  }
  default: { /* replace with an odd value */
    struct json *v = odd_value();
    if (!v) break;
    json_free(p->kids[s.i]);
    p->kids[s.i] = v;
    break;
  }
  }
}

/* ---- mutations of the text ---- */

static void mutate_bytes(char *t, size_t len) {
  size_t flips = 1 + fuzz_below(8);
  for (size_t k = 0; k < flips && len; k++) {
    size_t at = fuzz_below(len);
    switch (fuzz_below(3)) {
    case 0:
      t[at] ^= (char)(1u << fuzz_below(8));
      break;
    case 1:
      t[at] = (char)fuzz_rand();
      break;
    default:
      t[at] = "\"\\{}[],:0\x1b\n\xff"[fuzz_below(13)];
      break;
    }
  }
}

static void fuzz_fixture(const struct fixture *f) {
  for (int k = 0; k < FUZZ_PER_FIXTURE; k++) {
    int kind = (int)fuzz_below(4);
    if (kind == 0) { /* bytes flipped in the file's text */
      char *t = malloc(f->len);
      if (!t) continue;
      memcpy(t, f->text, f->len);
      mutate_bytes(t, f->len);
      feed_text(t, f->len, f->name);
      free(t);
    } else if (kind == 1) { /* cut short */
      feed_text(f->text, fuzz_below(f->len), f->name);
    } else { /* changes to the tree: rendered from the tree itself (raw bytes and all) and from its text */
      struct json *doc = copy_of(f->doc);
      struct jw w;
      size_t changes = 1 + fuzz_below(kind == 2 ? 3 : 12);
      if (!doc) continue;
      for (size_t c = 0; c < changes; c++) mutate_tree(doc);
      /* what `culprit report` does first: file:line added to the frames (and kernels demangled); one tree in
             * eight, as each looks for addr2line anew (a process each time) */
      int changed = 0, addr = 0;
      if (fuzz_below(8) == 0) symbolize_doc(doc, &changed);
      /* and what an address touched: the one the report's own dump or kernel log gave, or one from the command line */
      if (fuzz_below(2) == 0)
        addr_annotate_fault(doc, &addr);
      else
        addr_annotate(doc, (uint64_t)fuzz_below(1u << 30) << 16, fuzz_below(16), "command line");
      jw_init(&w);
      json_dump(doc, &w);
      tried++;
      render_all(doc, w.len + f->len, f->name);
      merge_all(doc, w.len + f->len, f->name);
      if (!w.err) feed_text(w.buf, w.len, f->name);
      jw_free(&w);
      json_free(doc);
    }
  }
}

int main(int argc, char **argv) {
  /* the fixtures' modules are another machine's: no addr2line is run for them, and none need be looked for */
  setenv("CULPRIT_ADDR2LINE", "culprit-fuzz-no-addr2line", 1);
  if (argc < 2 || load_fixtures(argv[1]) != 0 || nfixtures < 10) {
    fprintf(stderr, "usage: %s FIXTURE_DIR (tests/gpu/fixtures, with its reports)\n", argv[0]);
    return 1;
  }
  for (size_t i = 0; i < nfixtures; i++) fuzz_fixture(&fixtures[i]);
  CHECK(parsed > tried / 4 && tried >= nfixtures * FUZZ_PER_FIXTURE,
        "the mutations mostly did not parse: %zu of "
        "%zu",
        parsed, tried);
  printf("%zu fixtures, %zu mutated reports, %zu of them parsed\n", nfixtures, tried, parsed);
  for (size_t i = 0; i < nfixtures; i++) {
    free(fixtures[i].text);
    json_free(fixtures[i].doc);
  }
  return CHECK_DONE();
}
