/* The assertion helper of the unit tests: each test is its own process; CHECK(cond) or CHECK(cond, fmt, ...)
 * counts the check and, when it fails, prints the condition with its line and the optional message;
 * CHECK_DONE() prints "N passed, N failed" and gives the exit status. */
#ifndef CULPRIT_TEST_CHECK_H
#define CULPRIT_TEST_CHECK_H

#include <stdarg.h>
#include <stdio.h>

static int check_failures; /* failed checks */
static int check_count;    /* checks made */

/* fmt starts with '|' (see CHECK): alone, there is no message. */
__attribute__((format(printf, 1, 2), unused)) static void check_note(const char *fmt, ...) {
  va_list ap;
  if (fmt[1]) {
    fputs(": ", stderr);
    va_start(ap, fmt);
    vfprintf(stderr, fmt + 1, ap);
    va_end(ap);
  }
  fputc('\n', stderr);
}

/* "|" before the message: with no message the call is check_note("|"), with one it is one literal. */
#define CHECK(cond, ...)                                                                                               \
  do {                                                                                                                 \
    check_count++;                                                                                                     \
    if (!(cond)) {                                                                                                     \
      check_failures++;                                                                                                \
      fprintf(stderr, "FAIL %s:%d: %s", __FILE__, __LINE__, #cond);                                                    \
      check_note("|" __VA_ARGS__);                                                                                     \
    }                                                                                                                  \
  } while (0)

#define CHECK_DONE()                                                                                                   \
  (printf("%d passed, %d failed\n", check_count - check_failures, check_failures), check_failures ? 1 : 0)

#endif
