/* Configuration of the library, read once from CULPRIT_* environment variables and validated. Parsing is
 * separate from the process so the unit tests can feed it strings. */
#ifndef CULPRIT_CONFIG_H
#define CULPRIT_CONFIG_H

#include <stddef.h>
#include <stdint.h>

/* record: launches and breadcrumbs (every CULPRIT_CRUMB_EVERY-th launch of a stream); precise: a breadcrumb
 * after every launch whatever CULPRIT_CRUMB_EVERY says; blocking: also synchronize after matching launches;
 * off: record nothing. The numbers are part of the public C API (include/culprit.h). */
enum cp_mode { CP_MODE_RECORD = 0, CP_MODE_BLOCKING = 1, CP_MODE_OFF = 2, CP_MODE_PRECISE = 3 };

#define CFG_PATTERN_MAX 256
#define CFG_DIR_MAX 1024

struct cp_config {
  int mode;                            /* enum cp_mode */
  char kernels[CFG_PATTERN_MAX];       /* fnmatch glob for blocking mode; "*" = all */
  uint64_t launch_lo;                  /* first launch number blocking applies to (1-based) */
  uint64_t launch_hi;                  /* last one, UINT64_MAX = no end */
  uint32_t ring;                       /* launch records kept per thread */
  int stack_depth;                     /* native frames kept per launch */
  char dir[CFG_DIR_MAX];               /* report directory */
  int quiet;                           /* one-line notice instead of the full verdict */
  int stats;                           /* summary line at exit */
  uint32_t crumb_every;                /* record mode's widest breadcrumb spacing (1 = every launch) */
  uint32_t mark_budget_bp;             /* record mode's mark budget, basis points of a stream's time; 0: marks
                                        * every crumb_every launches */
  uint32_t exit_wait_ms;               /* at exit and before a context goes: wait up to this for unfinished work */
  uint32_t hang_timeout_ms;            /* hang report after this long with work pending and no progress; 0 = off */
  int report_signal;                   /* signal that asks for a hang report and lets the program go on; 0 = none */
  int hang_signals;                    /* a hang report when SIGTERM, SIGINT, SIGQUIT or SIGABRT stops the process */
  char rank_launches[CFG_PATTERN_MAX]; /* CULPRIT_RANK_LAUNCHES "R=A:B,...": blocking windows by rank, "" none */
  int mark;                            /* enum cp_mark: how a breadcrumb is written */
  int exception_text;                  /* the verdict's line in the sticky error's text (CULPRIT_EXCEPTION_TEXT) */
  int run_pid;                         /* CULPRIT_RUN_PID: the `culprit run` that asks the device about hangs; 0 none */
  uint32_t device_wait_ms; /* CULPRIT_DEVICE_WAIT: a stop signal's hang report waits this long at most for it */
};

/* CULPRIT_MARK: the breadcrumb a stream gets after a launch. memset (the default): a cuMemsetD32Async of the
 * launch number's low 32 bits, which cost the H200 a fifth less GPU time between short kernels than the write in
 * the completion-mark study (docs/performance.md); where the driver refuses it, breadcrumbs fall back to the write
 * for the rest of the process. write: a fenced cuStreamWriteValue64 of the launch number. */
enum cp_mark { CP_MARK_WRITE = 0, CP_MARK_MEMSET = 1 };

#define CFG_SECONDS_MAX 86400 /* the longest CULPRIT_EXIT_WAIT or CULPRIT_HANG_TIMEOUT, in seconds */

/* Looks up one variable; the process uses getenv, tests a table. */
typedef const char *(*cfg_getenv_fn)(const char *name);

/* Fills *c from the variables. Returns 0, or -1 with one sentence in err naming the variable and its value. */
int cfg_parse(struct cp_config *c, cfg_getenv_fn get, char *err, size_t errlen);
/* Parses "A:B" (either side may be empty) or "N" (N:N) into an inclusive window; returns 0 or -1. */
int cfg_parse_window(const char *s, uint64_t *lo, uint64_t *hi);
/* Parses seconds as a decimal with at most 3 places ("2", "0.5", "30.25") up to max_s into milliseconds;
 * returns 0 or -1. */
int cfg_parse_seconds(const char *s, uint32_t max_s, uint32_t *ms);
/* A percentage from 0 to 100 ("1", "0.5", "2.5%") as basis points (1% = 100); 0 or -1. */
int cfg_parse_percent(const char *s, uint32_t *bp);
/* Parses a report signal: a name (USR1, SIGUSR1, usr1) or number (1..64) into its number; "none", "off" or "0"
 * give 0 (no report signal). Returns 0; -1 when s is not a signal; -2 with *sig set when it is one that cannot
 * serve (cfg_signal_why says why): one that ends or stops the program, one the system sends for its own reasons
 * (SIGCHLD, SIGCONT, SIGPIPE), the C library's own (32, 33) or culprit's (SIGRTMAX-3). */
int cfg_parse_signal(const char *s, int *sig);
/* One sentence naming sig and why it cannot be a report signal ("SIGSEGV ends or stops the program ..."). */
void cfg_signal_why(int sig, char *buf, size_t len);
/* The name prefix of the empty files that say a process of culprit run's run launched a kernel with culprit
 * loaded (".culprit-launched-<16 hex digits of the run id's hash>-"; the library adds its pid): the library
 * makes one at its first launch, culprit run counts and removes them. */
void cfg_launched_prefix(const char *run_id, char *out, size_t len);
/* The name of a signal the parser knows, without "SIG" ("USR1"), or NULL. */
const char *cfg_signal_name(int sig);
/* The window spec gives rank (CULPRIT_RANK_LAUNCHES "R=A:B[,R=A:B...]", each A:B as in CULPRIT_LAUNCHES):
 * 1 and *lo..*hi when it names rank, 0 when it does not, -1 when spec is malformed. */
int cfg_rank_window(const char *spec, long long rank, uint64_t *lo, uint64_t *hi);
/* Mode name for reports. */
const char *cfg_mode_name(int mode);

#endif
