/* Unit test: CULPRIT_* parsing accepts what the docs promise and refuses everything else with a sentence. */
#include "../../src/base/config.h"
#include "check.h"

#include <stdint.h>
#include <signal.h>
#include <string.h>

static const char *const *g_env; /* NULL-terminated name, value pairs */

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
  CHECK(c.exit_wait_ms == 2000 && c.hang_timeout_ms == 0 && c.report_signal == SIGUSR1 && c.hang_signals == 1);

  const char *good[] = {"CULPRIT_MODE",
                        "blocking",
                        "CULPRIT_KERNELS",
                        "*nll*",
                        "CULPRIT_LAUNCHES",
                        "10:20",
                        "CULPRIT_RING",
                        "16",
                        "CULPRIT_STACK_DEPTH",
                        "0",
                        "CULPRIT_DIR",
                        "/tmp/x",
                        "CULPRIT_QUIET",
                        "1",
                        "CULPRIT_STATS",
                        "yes",
                        NULL};
  CHECK(parse(good, &c, err) == 0);
  CHECK(c.mode == CP_MODE_BLOCKING && !strcmp(c.kernels, "*nll*"));
  CHECK(c.launch_lo == 10 && c.launch_hi == 20 && c.ring == 16 && c.stack_depth == 0);
  CHECK(!strcmp(c.dir, "/tmp/x") && c.quiet == 1 && c.stats == 1);

  const char *hang[] = {"CULPRIT_EXIT_WAIT",
                        "0.25",
                        "CULPRIT_HANG_TIMEOUT",
                        "30",
                        "CULPRIT_REPORT_SIGNAL",
                        "SIGUSR2",
                        "CULPRIT_HANG_SIGNALS",
                        "0",
                        NULL};
  CHECK(parse(hang, &c, err) == 0);
  CHECK(c.exit_wait_ms == 250 && c.hang_timeout_ms == 30000 && c.report_signal == SIGUSR2 && c.hang_signals == 0);
  const char *nosig[] = {"CULPRIT_REPORT_SIGNAL", "none", "CULPRIT_EXIT_WAIT", "0", NULL};
  CHECK(parse(nosig, &c, err) == 0 && c.report_signal == 0 && c.exit_wait_ms == 0);

  CHECK(parse(none, &c, err) == 0 && c.mark == CP_MARK_MEMSET, "the 32-bit memset is the default breadcrumb");
  const char *memset_mark[] = {"CULPRIT_MARK", "memset", NULL};
  CHECK(parse(memset_mark, &c, err) == 0 && c.mark == CP_MARK_MEMSET);
  const char *write_mark[] = {"CULPRIT_MARK", "write", NULL};
  CHECK(parse(write_mark, &c, err) == 0 && c.mark == CP_MARK_WRITE);

  const char *off[] = {"CULPRIT_MODE", "off", NULL};
  CHECK(parse(off, &c, err) == 0 && c.mode == CP_MODE_OFF);

  /* Each bad value is refused and the sentence names the variable. */
  const char *bad[][3] = {{"CULPRIT_MODE", "fast", NULL},
                          {"CULPRIT_RING", "abc", NULL},
                          {"CULPRIT_MARK", "event", NULL},
                          {"CULPRIT_MARK", "MEMSET", NULL},
                          {"CULPRIT_RING", "15", NULL},
                          {"CULPRIT_RING", "1048577", NULL},
                          {"CULPRIT_RING", "-5", NULL},
                          {"CULPRIT_RING", "99999999999999999999999", NULL},
                          {"CULPRIT_STACK_DEPTH", "65", NULL},
                          {"CULPRIT_LAUNCHES", "0", NULL},
                          {"CULPRIT_LAUNCHES", "9:3", NULL},
                          {"CULPRIT_LAUNCHES", "0:3", NULL},
                          {"CULPRIT_LAUNCHES", "1:2:3", NULL},
                          {"CULPRIT_LAUNCHES", "a:b", NULL},
                          {"CULPRIT_QUIET", "maybe", NULL},
                          {"CULPRIT_STATS", "2", NULL},
                          {"CULPRIT_EXIT_WAIT", "-1", NULL},
                          {"CULPRIT_EXIT_WAIT", "1.2345", NULL},
                          {"CULPRIT_EXIT_WAIT", "86401", NULL},
                          {"CULPRIT_EXIT_WAIT", "2s", NULL},
                          {"CULPRIT_HANG_TIMEOUT", ".5", NULL},
                          {"CULPRIT_HANG_TIMEOUT", "5.", NULL},
                          {"CULPRIT_REPORT_SIGNAL", "SIGFOO", NULL},
                          {"CULPRIT_REPORT_SIGNAL", "9", NULL},
                          {"CULPRIT_REPORT_SIGNAL", "65", NULL},
                          {"CULPRIT_HANG_SIGNALS", "sometimes", NULL}};
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

  uint32_t ms;
  int sig;
  CHECK(cfg_parse_seconds("86400", CFG_SECONDS_MAX, &ms) == 0 && ms == 86400000u);
  CHECK(cfg_parse_seconds("86400.001", CFG_SECONDS_MAX, &ms) != 0);
  CHECK(cfg_parse_seconds("0.001", CFG_SECONDS_MAX, &ms) == 0 && ms == 1);
  CHECK(cfg_parse_seconds("1.5", CFG_SECONDS_MAX, &ms) == 0 && ms == 1500);
  CHECK(cfg_parse_seconds("99999999999999999999", CFG_SECONDS_MAX, &ms) != 0);
  CHECK(cfg_parse_signal("usr1", &sig) == 0 && sig == SIGUSR1);
  CHECK(cfg_parse_signal("10", &sig) == 0 && sig == 10);
  CHECK(cfg_parse_signal("SIGSTOP", &sig) != 0 && cfg_parse_signal("19", &sig) != 0);
  /* a report signal lets the program go on: those that end or stop it are refused (-2), by name and by number */
  static const char *const fatal[] = {"SEGV", "sigbus", "SIGFPE", "ill", "TRAP", "SYS", "ABRT", "IOT", "KILL", "STOP",
                                      "11",   "7",      "8",      "4",   "5",    "31",  "6",    "9",   "19"};
  for (size_t i = 0; i < sizeof fatal / sizeof fatal[0]; i++) {
    sig = 0;
    CHECK(cfg_parse_signal(fatal[i], &sig) == -2 && sig > 0 && cfg_signal_name(sig), "%s refused as fatal", fatal[i]);
  }
  CHECK(cfg_parse_signal("0", &sig) == 0 && sig == 0 && cfg_parse_signal("none", &sig) == 0 && sig == 0);
  CHECK(cfg_parse_signal("65", &sig) == -1 && cfg_parse_signal("SIGNOPE", &sig) == -1);
  CHECK(cfg_parse_signal("USR2", &sig) == 0 && sig == SIGUSR2 && cfg_parse_signal("TERM", &sig) == 0);
  const char *segv[] = {"CULPRIT_REPORT_SIGNAL", "SIGSEGV", NULL};
  CHECK(parse(segv, &c, err) == -1 && strstr(err, "CULPRIT_REPORT_SIGNAL='SIGSEGV'") &&
            strstr(err, "SIGSEGV ends or stops the program"),
        "%s", err);

  /* A rerun's windows by rank: the named rank's window, none for another, malformed specs refused. */
  CHECK(cfg_rank_window("2=17:32,5=40", 5, &lo, &hi) == 1 && lo == 40 && hi == 40);
  CHECK(cfg_rank_window("2=17:32,5=40", 2, &lo, &hi) == 1 && lo == 17 && hi == 32);
  CHECK(cfg_rank_window("2=17:32,5=40", 3, &lo, &hi) == 0 && cfg_rank_window("2=17:32", -1, &lo, &hi) == 0);
  CHECK(cfg_rank_window("2=17:32,", 2, &lo, &hi) == -1 && cfg_rank_window("x=1:2", 0, &lo, &hi) == -1);
  CHECK(cfg_rank_window("2=9:3", 2, &lo, &hi) == -1 && cfg_rank_window("2", 2, &lo, &hi) == -1);
  const char *rl[] = {"CULPRIT_RANK_LAUNCHES", "1=4:9", NULL};
  CHECK(parse(rl, &c, err) == 0 && !strcmp(c.rank_launches, "1=4:9"));
  const char *rlbad[] = {"CULPRIT_RANK_LAUNCHES", "1=4:9,,", NULL};
  CHECK(parse(rlbad, &c, err) == -1 && strstr(err, "CULPRIT_RANK_LAUNCHES"));
  return CHECK_DONE();
}
