/* Demangling through the C++ runtime's __cxa_demangle, found at run time: the library must not pull libstdc++
 * into a C program, and every C++ or CUDA program already has it loaded. The CLI links libstdc++ for this. */
#define _GNU_SOURCE
#include "demangle.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

typedef char *(*cxa_demangle_fn)(const char *, char *, size_t *, int *);

static cxa_demangle_fn g_fn; /* __cxa_demangle, found once */
static pthread_once_t g_once = PTHREAD_ONCE_INIT;

static void find_demangler(void) {
  cxa_demangle_fn fn = (cxa_demangle_fn)dlsym(RTLD_DEFAULT, "__cxa_demangle");
  if (!fn) {
    /* Python loads extension modules (and so libstdc++) with RTLD_LOCAL: not in the global scope. */
    void *h = dlopen("libstdc++.so.6", RTLD_LAZY | RTLD_NOLOAD);
    /* A C program has no C++ runtime at all; the library demangles when a report is written (and for a
     * blocking-mode kernel filter), so loading it then costs the program nothing on its launch path. */
    if (!h) h = dlopen("libstdc++.so.6", RTLD_LAZY | RTLD_LOCAL);
    if (h) fn = (cxa_demangle_fn)dlsym(h, "__cxa_demangle");
  }
  g_fn = fn;
}

void demangle_ready(void) { pthread_once(&g_once, find_demangler); }

char *demangle_name(const char *mangled) {
  int status = -1;
  if (!mangled || strncmp(mangled, "_Z", 2) != 0) return NULL;
  pthread_once(&g_once, find_demangler);
  cxa_demangle_fn fn = g_fn;
  if (!fn) return NULL;
  char *out = fn(mangled, NULL, NULL, &status);
  if (status != 0) {
    free(out);
    return NULL;
  }
  return out;
}

/* Index of the bracket opening the group that closes at s[end - 1], or -1. */
static long demangle_opener(const char *s, size_t end, char open, char close) {
  size_t i = end;
  int depth = 0;
  while (i > 0) {
    i--;
    if (s[i] == close)
      depth++;
    else if (s[i] == open && --depth == 0)
      return (long)i;
  }
  return -1;
}

size_t demangle_base_name(const char *s, const char **start) {
  size_t end = strlen(s), i;
  long o;
  while (end && s[end - 1] == ' ') end--;
  if (end && s[end - 1] == ']' && (o = demangle_opener(s, end, '[', ']')) > 0) {
    end = (size_t)o;
    while (end && s[end - 1] == ' ') end--;
  }
  if (end && s[end - 1] == ')' && (o = demangle_opener(s, end, '(', ')')) > 0) end = (size_t)o;
  while (end && s[end - 1] == ' ') end--;
  if (end && s[end - 1] == '>' && (o = demangle_opener(s, end, '<', '>')) > 0) end = (size_t)o;
  i = end;
  while (i > 0 && s[i - 1] != ' ' && s[i - 1] != ':' && s[i - 1] != '*' && s[i - 1] != '&') i--;
  *start = s + i;
  return end - i;
}

int demangle_same_kernel(const char *a, const char *b) {
  const char *sa, *sb;
  size_t la, lb;
  if (!a || !b) return 0;
  la = demangle_base_name(a, &sa);
  lb = demangle_base_name(b, &sb);
  return la && la == lb && memcmp(sa, sb, la) == 0;
}
