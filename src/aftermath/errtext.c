/* The verdict's line in the sticky error's text (see errtext.h). The line is composed once, at report time,
 * from the report's JSON; each kind's text (base, newline, line) is composed on the first call that asks for it
 * afterwards, into static storage that is never rewritten while the process lives (a forked child composes its
 * own, into the same storage, only after a fault of its own). A caller arriving while a text is being composed
 * gets the plain base text: no call waits. */
#define _GNU_SOURCE
#include "errtext.h"

#include "../base/config.h"
#include "../render/json.h"
#include "../render/render.h"
#include "../render/report_keys.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ERRTEXT_BASE_MAX 256 /* the runtime's and the driver's texts are one short sentence */

static int g_on = 1;                            /* CULPRIT_EXCEPTION_TEXT */
static _Atomic int g_code;                      /* the sticky code of the verdict; 0 before one */
static _Atomic int g_line_state;                /* 0 none, 1 being composed, 2 ready */
static char g_line[ERRTEXT_LINE_MAX];           /* the verdict's line, terminal-safe, no newline */
static _Atomic int g_text_state[ERRTEXT_KINDS]; /* 0 none, 1 being composed, 2 ready, 3 refused */
static char g_text[ERRTEXT_KINDS][ERRTEXT_BASE_MAX + ERRTEXT_LINE_MAX + 2]; /* base "\n" line */
static pthread_once_t g_fork_once = PTHREAD_ONCE_INIT;

/* A forked child's faults are its own: its verdict composes a line of its own. */
static void after_fork_child(void) {
  atomic_store(&g_code, 0);
  atomic_store(&g_line_state, 0);
  for (int i = 0; i < ERRTEXT_KINDS; i++) atomic_store(&g_text_state[i], 0);
}

static void register_fork(void) { pthread_atfork(NULL, NULL, after_fork_child); }

void errtext_start(const struct cp_config *cfg) {
  g_on = cfg->exception_text;
  pthread_once(&g_fork_once, register_fork);
}

/* Appends s (made terminal-safe: no control characters, no escape sequences) to the line. */
static void put_safe(char *out, size_t outsz, const char *s) {
  char *safe = render_safe(s, strlen(s), 0);
  size_t have = strlen(out);
  if (have + 1 < outsz) snprintf(out + have, outsz - have, "%s", safe ? safe : "?");
  free(safe);
}

/* "K, launched at SITE" for a launch of the report. */
static void put_launch(char *out, size_t outsz, const struct json *launch) {
  char *owned = NULL, cut[200], site[256];
  const char *name = render_launch_name(launch, &owned);
  put_safe(out, outsz, render_elide(name ? name : "an unnamed kernel", cut, sizeof cut, 160));
  free(owned);
  if (*render_launch_site(launch, site, sizeof site)) {
    put_safe(out, outsz, ", launched at ");
    put_safe(out, outsz, site);
  }
}

static void compose(char *out, size_t outsz, const struct json *doc, const char *path) {
  const struct json *culprit = json_get(doc, RK_CULPRIT), *cands = rk_candidates(doc);
  char n[64];
  out[0] = '\0';
  if (json_is(culprit, JSON_OBJ)) {
    put_safe(out, outsz, "culprit: the kernel that faulted: ");
    put_launch(out, outsz, culprit);
  } else if (json_len(cands) > 0) {
    snprintf(n, sizeof n, "culprit: one of %zu candidate launches faulted (the first: ", json_len(cands));
    put_safe(out, outsz, n);
    put_launch(out, outsz, json_at(cands, 0));
    put_safe(out, outsz, ")");
  } else {
    put_safe(out, outsz, "culprit: no recorded launch was unfinished");
  }
  put_safe(out, outsz, "; report: ");
  put_safe(out, outsz, path && *path ? path : "not written");
}

void errtext_verdict(int code, const char *json, size_t len, const char *path) {
  int expect = 0;
  struct json *doc = NULL;
  if (!atomic_compare_exchange_strong(&g_line_state, &expect, 1)) return;
  if (json_parse(json, len, &doc, NULL) != JSON_OK) {
    atomic_store(&g_line_state, 0);
    return;
  }
  compose(g_line, sizeof g_line, doc, path);
  json_free(doc);
  atomic_store_explicit(&g_code, code, memory_order_relaxed);
  /* release: the line and the code are whole before any reader's acquire of the state sees 2 */
  atomic_store_explicit(&g_line_state, 2, memory_order_release);
}

const char *errtext_line(void) {
  return atomic_load_explicit(&g_line_state, memory_order_acquire) == 2 ? g_line : NULL;
}

int errtext_is_ours(const char *s) {
  for (int i = 0; s && i < ERRTEXT_KINDS; i++)
    if (s == g_text[i]) return 1;
  return 0;
}

const char *errtext_decorate(int which, int code, const char *base) {
  if (!g_on || !base || which < 0 || which >= ERRTEXT_KINDS || errtext_is_ours(base)) return base;
  if (atomic_load_explicit(&g_line_state, memory_order_acquire) != 2) return base;
  if (code != atomic_load_explicit(&g_code, memory_order_relaxed)) return base;
  _Atomic int *st = &g_text_state[which];
  char *t = g_text[which];
  int s = atomic_load_explicit(st, memory_order_acquire), expect = 0;
  if (s == 0 && atomic_compare_exchange_strong(st, &expect, 1)) {
    size_t bl = strlen(base);
    if (bl >= ERRTEXT_BASE_MAX) {
      atomic_store_explicit(st, 3, memory_order_release);
      return base;
    }
    memcpy(t, base, bl);
    t[bl] = '\n';
    memcpy(t + bl + 1, g_line, strlen(g_line) + 1);
    /* release: the text is whole before a reader's acquire sees 2 */
    atomic_store_explicit(st, 2, memory_order_release);
    s = 2;
  }
  if (s != 2) return base;
  /* the text was composed from the first caller's base: another copy of the runtime wording it otherwise
   * (another version loaded beside it) gets its own words back */
  size_t bl = strlen(base);
  return strncmp(t, base, bl) == 0 && t[bl] == '\n' ? t : base;
}
