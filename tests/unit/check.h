/* A minimal assertion helper for the unit tests: each test is its own process, returns 0 on success and
 * prints the failed condition with its line otherwise. */
#ifndef CULPRIT_TEST_CHECK_H
#define CULPRIT_TEST_CHECK_H

#include <stdio.h>

static int check_failures;

#define CHECK(cond)                                                                                            \
  do {                                                                                                         \
    if (!(cond)) {                                                                                             \
      fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond);                                 \
      check_failures++;                                                                                        \
    }                                                                                                          \
  } while (0)

#define CHECK_DONE() (check_failures ? (fprintf(stderr, "%d check(s) failed\n", check_failures), 1) : 0)

#endif
