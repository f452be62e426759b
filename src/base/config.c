/* CULPRIT_* environment parsing. Every value is checked; a bad one yields a sentence for the user and the
 * library then stays out of the way (the program runs untraced) rather than guessing. */
#include "config.h"

#include <errno.h>
#include <signal.h>
#include <strings.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The names of CULPRIT_MODE's and CULPRIT_MARK's values, by the value they stand for. */
static const char *const cfg_modes[] = {
    [CP_MODE_RECORD] = "record", [CP_MODE_BLOCKING] = "blocking", [CP_MODE_OFF] = "off", [CP_MODE_PRECISE] = "precise"};
static const char *const cfg_marks[] = {[CP_MARK_WRITE] = "write", [CP_MARK_MEMSET] = "memset"};

const char *cfg_mode_name(int mode) {
  return mode >= 0 && mode < (int)(sizeof cfg_modes / sizeof cfg_modes[0]) ? cfg_modes[mode] : "?";
}

/* The value whose name is v among names[0..n), or -1. */
static int cfg_pick(const char *v, const char *const *names, int n) {
  for (int i = 0; i < n; i++)
    if (!strcmp(v, names[i])) return i;
  return -1;
}

/* Strict unsigned decimal: digits only, no sign, no overflow. */
static int parse_u64(const char *s, uint64_t *out) {
  if (!s || !*s) return -1;
  uint64_t v = 0;
  for (const char *p = s; *p; p++) {
    if (*p < '0' || *p > '9') return -1;
    uint64_t d = (uint64_t)(*p - '0');
    if (v > (UINT64_MAX - d) / 10) return -1;
    v = v * 10 + d;
  }
  *out = v;
  return 0;
}

int cfg_parse_window(const char *s, uint64_t *lo, uint64_t *hi) {
  const char *colon = strchr(s, ':');
  char a[32], b[32];
  if (!colon) {
    /* "N" is the single launch N */
    if (parse_u64(s, lo) || *lo == 0) return -1;
    *hi = *lo;
    return 0;
  }
  if (strchr(colon + 1, ':')) return -1;
  size_t la = (size_t)(colon - s), lb = strlen(colon + 1);
  if (la >= sizeof a || lb >= sizeof b) return -1;
  memcpy(a, s, la);
  a[la] = '\0';
  memcpy(b, colon + 1, lb + 1);
  *lo = 1;
  *hi = UINT64_MAX;
  if (la && parse_u64(a, lo)) return -1;
  if (lb && parse_u64(b, hi)) return -1;
  if (*lo == 0 || *lo > *hi) return -1;
  return 0;
}

int cfg_parse_seconds(const char *s, uint32_t max_s, uint32_t *ms) {
  uint64_t whole = 0, frac = 0;
  int places = 0;
  const char *p = s;
  if (!s || !*s || *s == '.') return -1;
  for (; *p && *p != '.'; p++) {
    if (*p < '0' || *p > '9' || whole > max_s) return -1;
    whole = whole * 10 + (uint64_t)(*p - '0');
  }
  if (*p == '.') {
    for (p++; *p; p++) {
      if (*p < '0' || *p > '9' || ++places > 3) return -1;
      frac = frac * 10 + (uint64_t)(*p - '0');
    }
    if (!places) return -1;
  }
  for (; places < 3; places++) frac *= 10;
  if (whole > max_s || (whole == max_s && frac)) return -1;
  *ms = (uint32_t)(whole * 1000 + frac);
  return 0;
}

int cfg_parse_percent(const char *s, uint32_t *bp) {
  char num[16];
  size_t n = s ? strlen(s) : 0;
  if (n && s[n - 1] == '%') n--; /* "1%" reads as "1" */
  if (!n || n >= sizeof num) return -1;
  memcpy(num, s, n);
  num[n] = '\0';
  uint32_t thousandths; /* cfg_parse_seconds reads up to three places: thousandths of a percent */
  if (cfg_parse_seconds(num, 100, &thousandths)) return -1;
  if (thousandths && thousandths < 10) return -1; /* under a hundredth of a percent would read as off */
  *bp = (thousandths + 5) / 10;
  return 0;
}

/* Signal names the parsers know, those that cannot serve as a report signal included (to say why not). */
static const struct {
  const char *name;
  int sig;
} cfg_signals[] = {{"HUP", SIGHUP},   {"INT", SIGINT},   {"QUIT", SIGQUIT}, {"USR1", SIGUSR1}, {"USR2", SIGUSR2},
                   {"TERM", SIGTERM}, {"ALRM", SIGALRM}, {"PWR", SIGPWR},   {"URG", SIGURG},   {"WINCH", SIGWINCH},
                   {"KILL", SIGKILL}, {"STOP", SIGSTOP}, {"SEGV", SIGSEGV}, {"BUS", SIGBUS},   {"FPE", SIGFPE},
                   {"ILL", SIGILL},   {"TRAP", SIGTRAP}, {"SYS", SIGSYS},   {"ABRT", SIGABRT}, {"IOT", SIGABRT},
                   {"TSTP", SIGTSTP}, {"TTIN", SIGTTIN}, {"TTOU", SIGTTOU}, {"CHLD", SIGCHLD}, {"CLD", SIGCHLD},
                   {"CONT", SIGCONT}, {"PIPE", SIGPIPE}};

/* Why sig cannot be a report signal, or NULL when it can. A report signal must let the program go on after its
 * report, and come only from whoever asks for one. Not so: SIGKILL and SIGSTOP, which cannot be caught; the
 * signals the kernel sends for an instruction that cannot go on (SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGTRAP,
 * SIGSYS: returning from the handler runs the instruction again, and a segfaulting program looped, writing hang
 * report after hang report); SIGABRT, abort()'s, which ends the process after its handler; the job-control stops
 * (SIGTSTP, SIGTTIN, SIGTTOU: Ctrl-Z would write a report instead of stopping the program); the signals the
 * system sends for its own reasons (SIGCHLD at every child's end or stop, SIGCONT at every resume, SIGPIPE at a
 * write into a closed pipe, which would no longer end the program); the C library's own (32 and 33, below
 * SIGRTMIN: thread cancellation and set*id broadcasts) and culprit's own (SIGRTMAX-3, threads.c's capture
 * signal). */
static const char *cfg_signal_refusal(int sig) {
  if (sig == SIGKILL || sig == SIGSTOP || sig == SIGSEGV || sig == SIGBUS || sig == SIGFPE || sig == SIGILL ||
      sig == SIGTRAP || sig == SIGSYS || sig == SIGABRT || sig == SIGTSTP || sig == SIGTTIN || sig == SIGTTOU)
    return "ends or stops the program that gets it, so it cannot ask for a hang report and let the program go on";
  if (sig == SIGCHLD || sig == SIGCONT || sig == SIGPIPE)
    return "is sent by the system for its own reasons (a child's end, a resume, a write into a closed pipe), so it "
           "cannot ask for hang reports";
  if (sig >= 32 && sig < SIGRTMIN)
    return "is the C library's own (its threads signal each other with it), so it cannot ask for a hang report";
  if (sig == SIGRTMAX - 3)
    return "is culprit's own (a hang report asks every thread for its stack with it), so it cannot ask for one";
  return NULL;
}

void cfg_launched_prefix(const char *run_id, char *out, size_t len) {
  uint64_t h = 0xcbf29ce484222325ull; /* FNV-1a: the run id holds a host name, kept out of file names */
  for (const char *p = run_id; *p; p++) h = (h ^ (unsigned char)*p) * 0x100000001b3ull;
  snprintf(out, len, ".culprit-launched-%016llx-", (unsigned long long)h);
}

const char *cfg_signal_name(int sig) {
  for (size_t i = 0; i < sizeof cfg_signals / sizeof cfg_signals[0]; i++)
    if (cfg_signals[i].sig == sig) return cfg_signals[i].name;
  return NULL;
}

void cfg_signal_why(int sig, char *buf, size_t len) {
  const char *name = cfg_signal_name(sig), *why = cfg_signal_refusal(sig);
  if (name)
    snprintf(buf, len, "SIG%s %s", name, why ? why : "can serve");
  else
    snprintf(buf, len, "signal %d %s", sig, why ? why : "can serve");
}

int cfg_parse_signal(const char *s, int *sig) {
  uint64_t n;
  int found = -1;
  if (!s || !*s) return -1;
  if (!strcasecmp(s, "none") || !strcasecmp(s, "off")) {
    *sig = 0;
    return 0;
  }
  if (s[0] >= '0' && s[0] <= '9') {
    if (parse_u64(s, &n) || n > 64 || (int)n > SIGRTMAX) return -1;
    found = (int)n;
  } else {
    if (!strncasecmp(s, "SIG", 3)) s += 3;
    for (size_t i = 0; i < sizeof cfg_signals / sizeof cfg_signals[0] && found < 0; i++)
      if (!strcasecmp(s, cfg_signals[i].name)) found = cfg_signals[i].sig;
    if (found < 0) return -1;
  }
  *sig = found;
  return cfg_signal_refusal(found) ? -2 : 0;
}

int cfg_rank_window(const char *spec, long long rank, uint64_t *lo, uint64_t *hi) {
  char item[96];
  int found = 0;
  for (const char *p = spec; p && *p;) {
    const char *comma = strchr(p, ','), *eq;
    size_t n = comma ? (size_t)(comma - p) : strlen(p);
    uint64_t r, a, b;
    if (n == 0 || n >= sizeof item) return -1;
    memcpy(item, p, n);
    item[n] = '\0';
    eq = strchr(item, '=');
    if (!eq) return -1;
    item[eq - item] = '\0';
    if (parse_u64(item, &r) || cfg_parse_window(eq + 1, &a, &b)) return -1;
    if (!found && (long long)r == rank) {
      *lo = a;
      *hi = b;
      found = 1;
    }
    p = comma ? comma + 1 : NULL;
    if (p && !*p) return -1; /* a trailing comma */
  }
  return found;
}

static int bad(char *err, size_t errlen, const char *name, const char *val, const char *want) {
  snprintf(err, errlen, "%s='%.80s' is not valid (%s)", name, val, want);
  return -1;
}

static int parse_bool(const char *v, int *out) {
  if (!strcmp(v, "1") || !strcmp(v, "yes") || !strcmp(v, "true") || !strcmp(v, "on")) {
    *out = 1;
    return 0;
  }
  if (!strcmp(v, "0") || !strcmp(v, "no") || !strcmp(v, "false") || !strcmp(v, "off") || !*v) {
    *out = 0;
    return 0;
  }
  return -1;
}

int cfg_parse(struct cp_config *c, cfg_getenv_fn get, char *err, size_t errlen) {
  const char *v;
  uint64_t n;
  memset(c, 0, sizeof *c);
  c->mode = CP_MODE_RECORD;
  strcpy(c->kernels, "*");
  c->launch_lo = 1;
  c->launch_hi = UINT64_MAX;
  c->ring = 4096;
  c->stack_depth = 24;
  c->crumb_every = 16;
  c->mark_budget_bp = 100;
  c->mark = CP_MARK_MEMSET;
  strcpy(c->dir, "culprit-reports");
  c->exit_wait_ms = 2000;
  c->report_signal = SIGUSR1;
  c->hang_signals = 1;
  c->exception_text = 1;

  if ((v = get("CULPRIT_MODE")) && *v) {
    int mode = cfg_pick(v, cfg_modes, (int)(sizeof cfg_modes / sizeof cfg_modes[0]));
    if (mode < 0) return bad(err, errlen, "CULPRIT_MODE", v, "use record, precise, blocking or off");
    c->mode = mode;
  }
  if ((v = get("CULPRIT_KERNELS")) && *v) {
    if (strlen(v) >= sizeof c->kernels) return bad(err, errlen, "CULPRIT_KERNELS", v, "at most 255 characters");
    strcpy(c->kernels, v);
  }
  if ((v = get("CULPRIT_LAUNCHES")) && *v) {
    if (cfg_parse_window(v, &c->launch_lo, &c->launch_hi))
      return bad(err, errlen, "CULPRIT_LAUNCHES", v,
                 "use A:B with 1 <= A <= B, either side may be empty, or N for launch N alone");
  }
  if ((v = get("CULPRIT_RING")) && *v) {
    if (parse_u64(v, &n) || n < 16 || n > 1048576)
      return bad(err, errlen, "CULPRIT_RING", v, "a number of launches per thread from 16 to 1048576");
    c->ring = (uint32_t)n;
  }
  if ((v = get("CULPRIT_STACK_DEPTH")) && *v) {
    if (parse_u64(v, &n) || n > 64) return bad(err, errlen, "CULPRIT_STACK_DEPTH", v, "a number from 0 to 64");
    c->stack_depth = (int)n;
  }
  if ((v = get("CULPRIT_MARK")) && *v) {
    int mark = cfg_pick(v, cfg_marks, (int)(sizeof cfg_marks / sizeof cfg_marks[0]));
    if (mark < 0) return bad(err, errlen, "CULPRIT_MARK", v, "use write or memset");
    c->mark = mark;
  }
  if ((v = get("CULPRIT_CRUMB_EVERY")) && *v) {
    if (parse_u64(v, &n) || n < 1 || n > 4096)
      return bad(err, errlen, "CULPRIT_CRUMB_EVERY", v, "a number of launches from 1 to 4096");
    c->crumb_every = (uint32_t)n;
  }
  if ((v = get("CULPRIT_MARK_BUDGET")) && *v && cfg_parse_percent(v, &c->mark_budget_bp))
    return bad(err, errlen, "CULPRIT_MARK_BUDGET", v, "a percentage from 0 to 100, e.g. 1 or 0.5 (0: fixed spacing)");
  if ((v = get("CULPRIT_DIR")) && *v) {
    if (strlen(v) >= sizeof c->dir) return bad(err, errlen, "CULPRIT_DIR", v, "path too long");
    strcpy(c->dir, v);
  }
  if ((v = get("CULPRIT_QUIET")) && parse_bool(v, &c->quiet)) return bad(err, errlen, "CULPRIT_QUIET", v, "use 1 or 0");
  if ((v = get("CULPRIT_STATS")) && parse_bool(v, &c->stats)) return bad(err, errlen, "CULPRIT_STATS", v, "use 1 or 0");
  if ((v = get("CULPRIT_EXIT_WAIT")) && *v && cfg_parse_seconds(v, CFG_SECONDS_MAX, &c->exit_wait_ms))
    return bad(err, errlen, "CULPRIT_EXIT_WAIT", v, "seconds from 0 to 86400, e.g. 2 or 0.5");
  if ((v = get("CULPRIT_HANG_TIMEOUT")) && *v && cfg_parse_seconds(v, CFG_SECONDS_MAX, &c->hang_timeout_ms))
    return bad(err, errlen, "CULPRIT_HANG_TIMEOUT", v, "seconds from 0 (off) to 86400, e.g. 60");
  if ((v = get("CULPRIT_REPORT_SIGNAL")) && *v) {
    int sig = 0, rc = cfg_parse_signal(v, &sig);
    char why[300];
    if (rc == -2) {
      size_t k;
      cfg_signal_why(sig, why, sizeof why);
      k = strlen(why);
      snprintf(why + k, sizeof why - k, "; use USR1, USR2 or another signal the program does not use, or none");
      return bad(err, errlen, "CULPRIT_REPORT_SIGNAL", v, why);
    }
    if (rc)
      return bad(err, errlen, "CULPRIT_REPORT_SIGNAL", v, "a signal name such as USR1 or USR2, a number, or none");
    c->report_signal = sig;
  }
  if ((v = get("CULPRIT_RANK_LAUNCHES")) && *v) {
    uint64_t lo, hi;
    if (strlen(v) >= sizeof c->rank_launches || cfg_rank_window(v, -1, &lo, &hi) < 0)
      return bad(err, errlen, "CULPRIT_RANK_LAUNCHES", v, "use R=A:B for each rank, comma-separated, e.g. 2=17:32");
    strcpy(c->rank_launches, v);
  }
  if ((v = get("CULPRIT_EXCEPTION_TEXT")) && parse_bool(v, &c->exception_text))
    return bad(err, errlen, "CULPRIT_EXCEPTION_TEXT", v, "use 1 or 0");
  if ((v = get("CULPRIT_HANG_SIGNALS")) && parse_bool(v, &c->hang_signals))
    return bad(err, errlen, "CULPRIT_HANG_SIGNALS", v, "use 1 or 0");
  /* set by culprit run when it will ask the device which kernels run at a hang (its pid; how long to wait) */
  if ((v = get("CULPRIT_RUN_PID")) && *v) {
    if (parse_u64(v, &n) || n < 1 || n > 4194304)
      return bad(err, errlen, "CULPRIT_RUN_PID", v, "a process id (culprit run sets it)");
    c->run_pid = (int)n;
  }
  if ((v = get("CULPRIT_DEVICE_WAIT")) && *v && cfg_parse_seconds(v, 600, &c->device_wait_ms))
    return bad(err, errlen, "CULPRIT_DEVICE_WAIT", v, "seconds from 0 (no wait) to 600, e.g. 10");
  return 0;
}
