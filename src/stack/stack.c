/* Native stack capture. With libunwind (opened privately, see open_unwinder), unw_backtrace walks .eh_frame with
 * cached unwind info (a fraction of a microsecond for a deep stack); without it glibc's backtrace() is used,
 * which is correct but far slower.
 * Frames inside libculprit are dropped by address range so reports start at the caller's code. */
#define _GNU_SOURCE
#include "stack.h"

#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <execinfo.h>

#ifndef CULPRIT_UNWIND_SONAME
#define CULPRIT_UNWIND_SONAME "libunwind.so.8"
#endif

#define SELF_SKIP_MAX 12                    /* culprit frames above the caller: wrapper, core, capture */

static uintptr_t g_self_lo, g_self_hi;      /* address range of libculprit's loaded segments */
static int (*g_unw_backtrace)(void **, int); /* libunwind's, opened RTLD_LOCAL; NULL: glibc's backtrace */
static uintptr_t g_main_base;               /* lowest mapped address of the main program */
static pthread_once_t g_once = PTHREAD_ONCE_INIT;

/* The main program comes first in dl_iterate_phdr's order; libculprit is found by an address inside it. */
static int find_self(struct dl_phdr_info *info, size_t size, void *data) {
  (void)size;
  uintptr_t me = (uintptr_t)data;
  uintptr_t lo = UINTPTR_MAX, hi = 0;
  for (int i = 0; i < info->dlpi_phnum; i++) {
    const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
    if (ph->p_type != PT_LOAD) continue;
    uintptr_t a = info->dlpi_addr + ph->p_vaddr;
    if (a < lo) lo = a;
    if (a + ph->p_memsz > hi) hi = a + ph->p_memsz;
  }
  if (!g_main_base) g_main_base = lo;
  if (me >= lo && me < hi) {
    g_self_lo = lo;
    g_self_hi = hi;
    return 1;
  }
  return 0;
}

/* libunwind comes from beside libculprit.so (the build copies it there) or from the system, always RTLD_LOCAL:
 * in the global scope its _Unwind_* and backtrace exports would replace the C++ runtime's for the whole process. */
static void open_unwinder(void) {
  Dl_info di;
  void *h = NULL;
  if (dladdr((void *)&stack_capture, &di) && di.dli_fname) {
    char path[1024];
    const char *slash = strrchr(di.dli_fname, '/');
    if (slash && (size_t)(slash - di.dli_fname) + sizeof "/" CULPRIT_UNWIND_SONAME < sizeof path) {
      snprintf(path, sizeof path, "%.*s/%s", (int)(slash - di.dli_fname), di.dli_fname, CULPRIT_UNWIND_SONAME);
      h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    }
  }
  if (!h) h = dlopen(CULPRIT_UNWIND_SONAME, RTLD_NOW | RTLD_LOCAL);
  if (h) *(void **)&g_unw_backtrace = dlsym(h, "unw_backtrace");
}

static void init_self(void) {
  dl_iterate_phdr(find_self, (void *)(uintptr_t)&stack_capture);
  open_unwinder();
}

const char *stack_unwinder(void) {
  pthread_once(&g_once, init_self);
  return g_unw_backtrace ? "libunwind" : "glibc-backtrace";
}

void stack_init(void) { pthread_once(&g_once, init_self); }

int stack_capture(void **pcs, int max) {
  void *buf[64 + SELF_SKIP_MAX];
  int want = max + SELF_SKIP_MAX, n, skip = 0;
  if (max <= 0) return 0;
  pthread_once(&g_once, init_self);
  if (want > (int)(sizeof buf / sizeof buf[0])) want = (int)(sizeof buf / sizeof buf[0]);
  n = g_unw_backtrace ? g_unw_backtrace(buf, want) : backtrace(buf, want);
  if (n < 0) n = 0;
  while (skip < n && (uintptr_t)buf[skip] >= g_self_lo && (uintptr_t)buf[skip] < g_self_hi) skip++;
  n -= skip;
  if (n > max) n = max;
  memcpy(pcs, buf + skip, (size_t)n * sizeof(void *));
  return n;
}

void stack_describe(uintptr_t pc, struct stack_frame_info *out) {
  Dl_info di;
  memset(out, 0, sizeof *out);
  out->pc = pc;
  /* pc - 1: a return address may be the first byte of the next function. */
  if (!dladdr((void *)(pc - 1), &di) || !di.dli_fbase) return;
  out->offset = pc - (uintptr_t)di.dli_fbase;
  const char *mod = di.dli_fname;
  pthread_once(&g_once, init_self);
  /* dladdr names the main program by argv[0], which may be relative or bare; /proc/self/exe is its file. */
  if (!mod || !*mod || (uintptr_t)di.dli_fbase == g_main_base) {
    ssize_t k = readlink("/proc/self/exe", out->module, sizeof out->module - 1);
    if (k > 0) out->module[k] = '\0';
  } else {
    snprintf(out->module, sizeof out->module, "%s", mod);
  }
  if (di.dli_sname) snprintf(out->function, sizeof out->function, "%s", di.dli_sname);
}
