/* culprit's public C API: scoped control of the preloaded library from the program itself.
 *
 * Header-only. Every function looks the library up at run time, so a program built with this header runs
 * unchanged without culprit (the calls then return CULPRIT_ENOTLOADED and do nothing).
 *
 *   culprit_push(CULPRIT_BLOCKING, "*softmax*");   // synchronize after matching launches from here on
 *   train_step();
 *   culprit_pop();                                // back to the mode before the push
 *
 * The mode stack is process-wide (kernels launched by helper threads are covered too). */
#ifndef CULPRIT_H
#define CULPRIT_H

#include <dlfcn.h>

#ifdef __cplusplus
extern "C" {
#endif

enum culprit_mode {
  CULPRIT_RECORD = 0,   /* record every launch, breadcrumbs, name the culprit when an error surfaces */
  CULPRIT_BLOCKING = 1, /* also synchronize after each matching launch: the first failing launch is exact */
  CULPRIT_OFF = 2,      /* pause recording (errors are still reported) */
  CULPRIT_PRECISE = 3   /* record with a breadcrumb after every launch, whatever CULPRIT_CRUMB_EVERY says */
};

#define CULPRIT_OK 0
#define CULPRIT_ENOTLOADED (-1) /* the library is not preloaded in this process */
#define CULPRIT_EINVAL (-2)     /* bad mode, pattern or window */
#define CULPRIT_ESTACK (-3)     /* push beyond 64 levels, or pop with nothing pushed */
#define CULPRIT_EDISABLED (-4)  /* loaded but disabled (bad configuration or CULPRIT_MODE=off) */

/* The interface these calls speak; the library answers culprit_api_version() with its own. A library of
 * another interface counts as not loaded, so no call is made with a prototype it does not have. */
#define CULPRIT_API_VERSION 1

static inline void *culprit__sym(const char *name) {
  typedef int (*vfn)(void);
  vfn v = (vfn)dlsym(RTLD_DEFAULT, "culprit_api_version");
  return v && v() == CULPRIT_API_VERSION ? dlsym(RTLD_DEFAULT, name) : (void *)0;
}

/* Pushes a mode for launch numbers first..last (inclusive; 1 and ~0ULL for all) of kernels matching the
 * glob (NULL or "*" for all). */
static inline int culprit_push_window(enum culprit_mode mode, const char *kernels, unsigned long long first,
                                      unsigned long long last) {
  typedef int (*fn)(int, const char *, unsigned long long, unsigned long long);
  fn f = (fn)culprit__sym("culprit_api_push");
  return f ? f((int)mode, kernels, first, last) : CULPRIT_ENOTLOADED;
}

static inline int culprit_push(enum culprit_mode mode, const char *kernels) {
  return culprit_push_window(mode, kernels, 1ULL, ~0ULL);
}

/* Restores the mode that was in force before the matching push. */
static inline int culprit_pop(void) {
  typedef int (*fn)(void);
  fn f = (fn)culprit__sym("culprit_api_pop");
  return f ? f() : CULPRIT_ENOTLOADED;
}

/* The mode in force, or a negative CULPRIT_E* code. */
static inline int culprit_mode(void) {
  typedef int (*fn)(void);
  fn f = (fn)culprit__sym("culprit_api_mode");
  return f ? f() : CULPRIT_ENOTLOADED;
}

/* 1 when the library is preloaded and active. */
static inline int culprit_loaded(void) { return culprit_mode() >= 0; }

/* Path of the report this process wrote, or NULL. */
static inline const char *culprit_last_report(void) {
  typedef const char *(*fn)(void);
  fn f = (fn)culprit__sym("culprit_api_last_report");
  return f ? f() : (const char *)0;
}

/* Names the work behind the launches this thread makes until culprit_op_end: an operator of your framework,
 * its arguments, and (problem, may be NULL) what is wrong with them when you know. A report names the operator
 * of each launch it lists and lists the operators that came with a problem. Notes nest (eight deep per thread).
 *
 *   culprit_op_begin("lookup", "ids int32[4096] max 70000", ids_max >= rows ? "ids past the table" : NULL);
 *   lookup_kernel<<<grid, block>>>(...);
 *   culprit_op_end();
 *
 * Returns CULPRIT_OK, CULPRIT_EINVAL (no name), CULPRIT_ESTACK (too deep, or end without begin), or
 * CULPRIT_ENOTLOADED / CULPRIT_EDISABLED. */
static inline int culprit_op_begin(const char *name, const char *args, const char *problem) {
  typedef int (*fn)(const char *, const char *, const char *);
  fn f = (fn)culprit__sym("culprit_api_op_begin");
  return f ? f(name, args, problem) : CULPRIT_ENOTLOADED;
}

/* culprit_op_begin with the device buffers the operator was given, one per line: "BASE SIZE LABEL" (numbers as C
 * writes them, 0x... or decimal). A faulting address or a kernel argument inside or near one is then named by
 * its label in the verdict ("16 bytes past the end of lookup's `ids int32[4096]`"). Six are kept per operator.
 *
 *   char bufs[256];
 *   snprintf(bufs, sizeof bufs, "%p %zu ids int32[4096]\n%p %zu table float32[65536,64]", ids, ids_bytes,
 *            table, table_bytes);
 *   culprit_op_begin_buffers("lookup", "ids int32[4096]", NULL, bufs);
 *
 * Falls back to culprit_op_begin (no buffers) with a library that predates it. */
static inline int culprit_op_begin_buffers(const char *name, const char *args, const char *problem,
                                           const char *buffers) {
  typedef int (*fn)(const char *, const char *, const char *, const char *);
  fn f = (fn)culprit__sym("culprit_api_op_begin_buffers");
  return f ? f(name, args, problem, buffers) : culprit_op_begin(name, args, problem);
}

static inline int culprit_op_end(void) {
  typedef int (*fn)(void);
  fn f = (fn)culprit__sym("culprit_api_op_end");
  return f ? f() : CULPRIT_ENOTLOADED;
}

#ifdef __cplusplus
}
#endif

#endif
