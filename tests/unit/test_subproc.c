/* Running a helper program with its output kept (src/report/subproc.c): output, standard error merged or
 * dropped, standard input from a file, an added variable, LD_PRELOAD left out, a program that is not there, and
 * the time and size limits, each of which kills the program and keeps what it printed before. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "report/subproc.h"

static int run_sh(const char *script, const struct subproc_opts *o, struct subproc_result *r) {
  char *argv[] = {"sh", "-c", (char *)script, NULL};
  return subproc_capture(argv, o, r);
}

int main(void) {
  struct subproc_result r;
  struct subproc_opts o = {-1, 0, NULL, 20, 1 << 20};

  int rc = run_sh("echo out; echo err >&2; exit 3", &o, &r);
  CHECK(rc == 0 && r.out && strcmp(r.out, "out\n") == 0, "stdout only: rc %d, %s", rc, r.out ? r.out : "(null)");
  CHECK(r.exited && r.status == 3 && !r.timed_out && !r.truncated, "exit status 3: %d %d", r.exited, r.status);
  free(r.out);

  o.with_stderr = 1;
  rc = run_sh("echo out; echo err >&2", &o, &r);
  CHECK(rc == 0 && r.out && strstr(r.out, "out\n") && strstr(r.out, "err\n"), "both streams: %s",
        r.out ? r.out : "(null)");
  free(r.out);

  /* standard input: /dev/null by default, else the file given */
  rc = run_sh("cat; echo end", &o, &r);
  CHECK(rc == 0 && r.out && strcmp(r.out, "end\n") == 0, "/dev/null in: %s", r.out ? r.out : "(null)");
  free(r.out);
  char tmpl[] = "/tmp/culprit-subproc-XXXXXX";
  int fd = mkstemp(tmpl);
  CHECK(fd >= 0 && write(fd, "line\n", 5) == 5 && lseek(fd, 0, SEEK_SET) == 0);
  unlink(tmpl);
  o.in_fd = fd;
  rc = run_sh("cat", &o, &r);
  CHECK(rc == 0 && r.out && strcmp(r.out, "line\n") == 0, "file in: %s", r.out ? r.out : "(null)");
  free(r.out);
  close(fd);
  o.in_fd = -1;

  /* the environment: one variable set (replacing ours), LD_PRELOAD left out */
  setenv("SUBPROC_TEST_VAR", "ours", 1);
  setenv("LD_PRELOAD", "", 1);
  o.set_env = "SUBPROC_TEST_VAR=theirs";
  rc = run_sh("echo \"$SUBPROC_TEST_VAR ${LD_PRELOAD-unset}\"", &o, &r);
  CHECK(rc == 0 && r.out && strcmp(r.out, "theirs unset\n") == 0, "environment: %s", r.out ? r.out : "(null)");
  free(r.out);
  o.set_env = NULL;

  /* not there: -2, nothing kept */
  char *missing[] = {"culprit-no-such-program-here", NULL};
  rc = subproc_capture(missing, &o, &r);
  CHECK(rc == -2 && r.out == NULL, "a missing program: rc %d", rc);
  rc = run_sh("exit 127", &o, &r); /* what a shell or an exec failing in the child says */
  CHECK(rc == -2, "exit 127 with nothing printed: rc %d", rc);

  /* the time limit: killed, what came before kept */
  o.timeout_s = 0.5;
  rc = run_sh("echo early; exec sleep 30", &o, &r);
  CHECK(rc == 0 && r.timed_out && !r.exited && r.out && strcmp(r.out, "early\n") == 0, "timed out: rc %d, %d, %s", rc,
        r.timed_out, r.out ? r.out : "(null)");
  free(r.out);

  /* the size limit: killed, the first max_output bytes kept */
  o.timeout_s = 20;
  o.max_output = 10000;
  rc = run_sh("exec yes", &o, &r);
  CHECK(rc == 0 && r.truncated && !r.timed_out && r.len == 10000 && r.out && strncmp(r.out, "y\ny\n", 4) == 0,
        "truncated: rc %d, %d, %zu bytes", rc, r.truncated, r.len);
  free(r.out);

  /* alone: in a process group of its own (a terminal's ^C to ours does not reach it); the plain one shares ours */
  o.max_output = 1 << 20;
  char *pgid[] = {"sh", "-c", "cut -d' ' -f5 /proc/$$/stat", NULL};
  char ours[32];
  snprintf(ours, sizeof ours, "%ld\n", (long)getpgrp());
  rc = subproc_capture(pgid, &o, &r);
  CHECK(rc == 0 && r.out && strcmp(r.out, ours) == 0, "the caller's group: %s", r.out ? r.out : "(null)");
  free(r.out);
  rc = subproc_capture_alone(pgid, &o, &r);
  CHECK(rc == 0 && r.out && strcmp(r.out, ours) != 0 && atol(r.out) > 0, "its own group: %s (ours %s)",
        r.out ? r.out : "(null)", ours);
  free(r.out);
  return CHECK_DONE();
}
