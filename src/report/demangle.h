/* Demangling of Itanium C++ names (CUDA kernel names are mangled this way). */
#ifndef CULPRIT_DEMANGLE_H
#define CULPRIT_DEMANGLE_H

/* Returns a malloc'd demangled name, or NULL when the name is not mangled or no demangler is available in the
 * process (the C++ runtime is looked up at run time, so a pure C process simply gets NULL). */
char *demangle_name(const char *mangled);

#endif
