/* Demangling of Itanium C++ names (CUDA kernel names are mangled this way). */
#ifndef CULPRIT_DEMANGLE_H
#define CULPRIT_DEMANGLE_H

#include <stddef.h>

/* Returns a malloc'd demangled name, or NULL when the name is not mangled or no demangler is available in the
 * process (the C++ runtime is looked up at run time, so a pure C process simply gets NULL). */
char *demangle_name(const char *mangled);

/* The bare name of a kernel, from a device's signature ("void ns::k<int>(const int *) [with T = int]") or a
 * demangled name ("ns::k<int>(int const*)"): "k". The two spell parameters differently, so only the name itself
 * can be compared. Returns its length and sets *start. */
size_t demangle_base_name(const char *s, const char **start);
/* Whether two spellings of kernel names have the same bare name. */
int demangle_same_kernel(const char *a, const char *b);

/* Finds __cxa_demangle now (dlsym, dlopen: the loader's lock), so that later demangling takes no lock: for a
 * thread that may demangle while another holds that lock. */
void demangle_ready(void);

#endif
