/* Unit test: CULPRIT_* parsing accepts what the docs promise and refuses everything else with a sentence. */
#include "../../src/core/config.h"
#include "check.h"

#include <stdint.h>
#include <string.h>

static const char *const *g_env;             /* NULL-terminated name, value pairs */

static const char *fake_getenv(const char *name) {
  for (const char *const *p = g_env; p && *p; p += 2)
    if (!strcmp(p[0], name)) return p[1];
  return NULL;
}

static int parse(const char *const *env, struct cp_config *c, char *err) {
  g_env = env;
  return cfg_parse(c, fake_getenv, err, 300);
}

int main(void) {
  struct cp_config c;
  char err[300];

  const char *none[] = {NULL};
  CHECK(parse(none, &c, err) == 0);
  CHECK(c.mode == CP_MODE_RECORD && c.ring == 4096 && c.stack_depth == 24);
  CHECK(!strcmp(c.kernels, "*") && c.launch_lo == 1 && c.launch_hi == UINT64_MAX);
  CHECK(!strcmp(c.dir, "culprit-reports") && !c.quiet && !c.stats);

  const char *good[] = {"CULPRIT_MODE", "blocking", "CULPRIT_KERNELS", "*nll*", "CULPRIT_LAUNCHES", "10:20",
                        "CULPRIT_RING", "16", "CULPRIT_STACK_DEPTH", "0", "CULPRIT_DIR", "/tmp/x",
                        "CULPRIT_QUIET", "1", "CULPRIT_STATS", "yes", NULL};
  CHECK(parse(good, &c, err) == 0);
  CHECK(c.mode == CP_MODE_BLOCKING && !strcmp(c.kernels, "*nll*"));
  CHECK(c.launch_lo == 10 && c.launch_hi == 20 && c.ring == 16 && c.stack_depth == 0);
  CHECK(!strcmp(c.dir, "/tmp/x") && c.quiet == 1 && c.stats == 1);

  const char *off[] = {"CULPRIT_MODE", "off", NULL};
  CHECK(parse(off, &c, err) == 0 && c.mode == CP_MODE_OFF);

  /* Each bad value is refused and the sentence names the variable. */
  const char *bad[][3] = {{"CULPRIT_MODE", "fast", NULL},       {"CULPRIT_RING", "abc", NULL},
                          {"CULPRIT_RING", "15", NULL},         {"CULPRIT_RING", "1048577", NULL},
                          {"CULPRIT_RING", "-5", NULL},         {"CULPRIT_RING", "99999999999999999999999", NULL},
                          {"CULPRIT_STACK_DEPTH", "65", NULL},  {"CULPRIT_LAUNCHES", "0", NULL},
                          {"CULPRIT_LAUNCHES", "9:3", NULL},    {"CULPRIT_LAUNCHES", "0:3", NULL},
                          {"CULPRIT_LAUNCHES", "1:2:3", NULL},  {"CULPRIT_LAUNCHES", "a:b", NULL},
                          {"CULPRIT_QUIET", "maybe", NULL},     {"CULPRIT_STATS", "2", NULL}};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    err[0] = '\0';
    int rc = parse(bad[i], &c, err);
    CHECK(rc == -1);
    CHECK(strstr(err, bad[i][0]) != NULL);
    if (rc != -1) fprintf(stderr, "  accepted %s=%s\n", bad[i][0], bad[i][1]);
  }

  uint64_t lo, hi;
  CHECK(cfg_parse_window(":7", &lo, &hi) == 0 && lo == 1 && hi == 7);
  CHECK(cfg_parse_window("7:", &lo, &hi) == 0 && lo == 7 && hi == UINT64_MAX);
  CHECK(cfg_parse_window(":", &lo, &hi) == 0 && lo == 1 && hi == UINT64_MAX);
  CHECK(cfg_parse_window("3:3", &lo, &hi) == 0 && lo == 3 && hi == 3);
  CHECK(cfg_parse_window("42", &lo, &hi) == 0 && lo == 42 && hi == 42);
  CHECK(cfg_parse_window("0", &lo, &hi) != 0);
  CHECK(cfg_parse_window("4x", &lo, &hi) != 0);
  return CHECK_DONE();
}
