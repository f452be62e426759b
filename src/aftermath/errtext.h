/* The verdict where the program's own error handling looks (errtext.c): the text of the sticky error, as the
 * CUDA runtime's cudaGetErrorString and the driver's cuGetErrorString give it, gets one more line naming the
 * culprit once the report was written. The error code is never touched; only the text that frameworks put into
 * their exceptions (PyTorch's "CUDA error: ...", Triton's, CuPy's, JAX's) carries the line. */
#ifndef CULPRIT_ERRTEXT_H
#define CULPRIT_ERRTEXT_H

#include <stddef.h>

struct cp_config;

/* Whose text is decorated: each gets its own buffer, since each returns its own base text. */
enum { ERRTEXT_RUNTIME = 0, ERRTEXT_DRIVER = 1, ERRTEXT_KINDS = 2 };

#define ERRTEXT_LINE_MAX 768 /* the verdict's line, with its NUL */

/* At library start (culprit on): CULPRIT_EXCEPTION_TEXT=0 (cfg->exception_text) leaves every text alone. */
void errtext_start(const struct cp_config *cfg);
/* The report of a sticky error (code) was written: its JSON is json[0..len), its file path ("" or NULL when it
 * could not be written). Composes the line once per process (a forked child's fault composes its own). Runs at
 * report time (it may allocate). */
void errtext_verdict(int code, const char *json, size_t len, const char *path);
/* What a caller of the error-string function of kind `which` should get for code, whose text is base: base and
 * the verdict's line when code is the sticky error of this process's verdict, else base itself. The text returned
 * lives as long as the process (callers keep the pointer). Never allocates or locks. */
const char *errtext_decorate(int which, int code, const char *base);
/* Whether s is one of the texts errtext_decorate handed out (a runtime that asks the driver for its text gets the
 * decorated one already and must not get the line twice). */
int errtext_is_ours(const char *s);
/* The verdict's line alone ("culprit: the kernel that faulted: ..."), or NULL before a verdict. */
const char *errtext_line(void);

#endif
