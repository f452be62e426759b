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
  CHECK(c.run_pid == 0 && c.device_wait_ms == 0, "no device query, no wait, unless culprit run says so");
  const char *query[] = {"CULPRIT_RUN_PID", "4242", "CULPRIT_DEVICE_WAIT", "2.5", NULL};
  CHECK(parse(query, &c, err) == 0 && c.run_pid == 4242 && c.device_wait_ms == 2500);

  CHECK(parse(none, &c, err) == 0 && c.mark == CP_MARK_MEMSET, "the 32-bit memset is the default breadcrumb");
  CHECK(c.mark_budget_bp == 100 && c.crumb_every == 16, "record mode's marks: 1%% of a stream's time, every 16th");
  const char *budget[] = {"CULPRIT_MARK_BUDGET", "0.25", NULL};
  CHECK(parse(budget, &c, err) == 0 && c.mark_budget_bp == 25, "0.25%% is 25 basis points: %u", c.mark_budget_bp);
  const char *budget_pct[] = {"CULPRIT_MARK_BUDGET", "2.5%", NULL};
  CHECK(parse(budget_pct, &c, err) == 0 && c.mark_budget_bp == 250);
  const char *budget_off[] = {"CULPRIT_MARK_BUDGET", "0", NULL};
  CHECK(parse(budget_off, &c, err) == 0 && c.mark_budget_bp == 0, "0 turns the budget off");
  const char *budget_all[] = {"CULPRIT_MARK_BUDGET", "100", NULL};
  CHECK(parse(budget_all, &c, err) == 0 && c.mark_budget_bp == 10000);
  const char *bad_budgets[] = {"100.5", "-1", "0.004", "1%%", "x", "%", ".5", "1.2345"};
  for (size_t i = 0; i < sizeof bad_budgets / sizeof *bad_budgets; i++) {
    const char *bad[] = {"CULPRIT_MARK_BUDGET", bad_budgets[i], NULL};
    CHECK(parse(bad, &c, err) != 0 && strstr(err, "CULPRIT_MARK_BUDGET"), "'%s' must be refused", bad_budgets[i]);
  }
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
                          {"CULPRIT_HANG_SIGNALS", "sometimes", NULL},
                          {"CULPRIT_RUN_PID", "0", NULL},
                          {"CULPRIT_RUN_PID", "-3", NULL},
                          {"CULPRIT_RUN_PID", "99999999", NULL},
                          {"CULPRIT_DEVICE_WAIT", "601", NULL},
                          {"CULPRIT_DEVICE_WAIT", "soon", NULL}};
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
  /* ... and so are those something else sends or owns: the system (a child's end, a resume, a closed pipe), the
   * C library (32 and 33, below SIGRTMIN), culprit's thread capture (SIGRTMAX-3); each says why, by name */
  static const char *const owned[] = {"CHLD", "SIGCLD", "17", "CONT", "18", "PIPE", "13", "32", "33", "TTIN", "tstp"};
  char num[16], why[300];
  for (size_t i = 0; i < sizeof owned / sizeof owned[0]; i++) {
    sig = 0;
    CHECK(cfg_parse_signal(owned[i], &sig) == -2 && sig > 0, "%s refused", owned[i]);
    cfg_signal_why(sig, why, sizeof why);
    CHECK(strstr(why, "cannot ask for") != NULL, "%s: %s", owned[i], why);
  }
  cfg_signal_why(32, why, sizeof why);
  CHECK(!strcmp(why, "signal 32 is the C library's own (its threads signal each other with it), so it cannot ask "
                     "for a hang report"),
        "%s", why);
  cfg_signal_why(SIGCHLD, why, sizeof why);
  CHECK(!strncmp(why, "SIGCHLD is sent by the system for its own reasons", 49), "%s", why);
  snprintf(num, sizeof num, "%d", SIGRTMAX - 3);
  CHECK(cfg_parse_signal(num, &sig) == -2 && sig == SIGRTMAX - 3);
  snprintf(num, sizeof num, "%d", SIGRTMIN);
  CHECK(cfg_parse_signal(num, &sig) == 0 && sig == SIGRTMIN && cfg_parse_signal("WINCH", &sig) == 0);
  CHECK(cfg_parse_signal("0", &sig) == 0 && sig == 0 && cfg_parse_signal("none", &sig) == 0 && sig == 0);
  CHECK(cfg_parse_signal("65", &sig) == -1 && cfg_parse_signal("SIGNOPE", &sig) == -1);
  CHECK(cfg_parse_signal("USR2", &sig) == 0 && sig == SIGUSR2 && cfg_parse_signal("TERM", &sig) == 0);
  const char *chld[] = {"CULPRIT_REPORT_SIGNAL", "CHLD", NULL};
  CHECK(parse(chld, &c, err) == -1 && strstr(err, "CULPRIT_REPORT_SIGNAL='CHLD'") &&
            strstr(err, "SIGCHLD is sent by the system") && strstr(err, "or none)"),
        "%s", err);
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
