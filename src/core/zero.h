/* Emptying a large zero-initialized table in a forked child without touching its pages. A child's fork handlers
 * used to memset the stream table and its neighbours (megabytes): every page written was a page fault and a
 * copy of the parent's page, about 8 ms per child, paid by programs that fork a child per task and never launch
 * in it. The kernel gives zero pages back for private anonymous memory dropped with MADV_DONTNEED, which costs
 * only the pages the parent had touched. Not a general memset: p must lie in private anonymous memory (.bss, an
 * anonymous mmap), which the page-aligned middle is handed back as. */
#ifndef CULPRIT_CORE_ZERO_H
#define CULPRIT_CORE_ZERO_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>

#define CP_ZERO_PAGE 4096u /* a smaller alignment than the page size makes madvise fail: memset then */

static inline void cp_zero_table(void *p, size_t n) {
  uintptr_t a = (uintptr_t)p, e = a + n;
  uintptr_t pa = (a + CP_ZERO_PAGE - 1) & ~(uintptr_t)(CP_ZERO_PAGE - 1), pe = e & ~(uintptr_t)(CP_ZERO_PAGE - 1);
  if (pe < pa + 4 * CP_ZERO_PAGE) {
    memset(p, 0, n); /* a few pages: not worth a system call */
    return;
  }
  memset(p, 0, pa - a);
  memset((void *)pe, 0, e - pe);
  if (madvise((void *)pa, pe - pa, MADV_DONTNEED) != 0) memset((void *)pa, 0, pe - pa);
}

#endif
