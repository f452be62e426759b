/* torchrun's error file (errfile.c). torchrun gives each worker TORCHELASTIC_ERROR_FILE and builds the "Root Cause
 * (first observed failure)" of its summary from what the worker wrote there; a worker whose main is wrapped in
 * torch's @record writes its exception (which carries the verdict's line, errtext.c), one without writes nothing
 * and the summary says "error_file: <N/A>". For that worker culprit writes the file at exit, in torch's format,
 * when a fault report was written and the file does not exist yet. */
#ifndef CULPRIT_ERRFILE_H
#define CULPRIT_ERRFILE_H

#include <stddef.h>

/* At library start (culprit on): reads TORCHELASTIC_ERROR_FILE. */
void errfile_start(void);
/* The fault report was written (json[0..len), the sticky code and its name and text): composes the file's
 * content, when the process has an error file to write. Report time only (it allocates). */
void errfile_verdict(int code, const char *name, const char *text, const char *json, size_t len, const char *path);
/* At exit, or when a stop signal ends the process (signals.c: an abort() after the fault): writes the composed
 * content into the error file, created without following a link and never over an existing file (the worker's own
 * @record wrote it, or another process did). Async-signal-safe. */
void errfile_at_exit(void);

#endif
