/* Triton kernels in Python source (tritonsrc.c): which @triton.jit function holds a given line of a file, since
 * a device assert from Triton or Inductor names only FILE:LINE (its function is printed as `unknown`). */
#ifndef CULPRIT_CLI_TRITONSRC_H
#define CULPRIT_CLI_TRITONSRC_H

#include <stddef.h>

#define TRITONSRC_MAX_BYTES (16L << 20) /* files larger than this are not read */
#define TRITONSRC_MAX_NAMES 16          /* names kept in tritonsrc_found.kernels */

/* What the file says of the line. */
struct tritonsrc_found {
    char *function; /* the @triton.jit function (Inductor's def triton_...) whose body holds the line */
    char *kernels;  /* the names a kernel running that line may have, space-separated: function first,
                                 * then the @triton.jit functions of the same file that call it, directly or
                                 * through others (Triton inlines calls into the kernel that is launched) */
};

/* Reads the Python file path and finds the @triton.jit function whose body holds line (from 1). Returns 0 and
 * fills *f (malloc'd texts; free them with tritonsrc_free); otherwise an errno value (ENOENT, EACCES, EFBIG:
 * the file could not be read; ESRCH: no @triton.jit function holds the line; ENOMEM) with a sentence in why
 * ("it could not be read (No such file or directory)", "line 3 is not inside a function", ...). */
int tritonsrc_find(const char *path, long line, struct tritonsrc_found *f, char *why, size_t whylen);

/* The same on a file's text (len bytes, need not end in NUL). */
int tritonsrc_find_text(const char *text, size_t len, long line, struct tritonsrc_found *f, char *why, size_t whylen);

/* Frees the texts of *f and clears it. */
void tritonsrc_free(struct tritonsrc_found *f);

/* Whether a kernel name as the driver reports it (name, n bytes: a bare name) is that of the Triton function
 * function: the same name, or the name followed by the suffix Triton 2 appended for the specialization of the
 * arguments ("_0d1d2de": each argument's index from 0, then c, d or e). */
int tritonsrc_same_kernel(const char *name, size_t n, const char *function);

#endif
