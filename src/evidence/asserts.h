/* Device-assert lines (asserts.c): parsed from what a command printed, and tied to its reports: added to each
 * report, and a verdict of candidates narrowed to the launch they single out. */
#ifndef CULPRIT_CLI_ASSERTS_H
#define CULPRIT_CLI_ASSERTS_H

#include <stddef.h>

struct json;

#define ASSERTS_MAX 64 /* assert lines kept per run; a failing kernel prints one per failing thread */

/* One device-assert line, as the device printed it. */
struct dev_assert {
    char *file;         /* source file of the assert */
    long line;          /* its line */
    char *kernel;       /* the kernel's signature as the device prints it, "void k(const int *, int)";
                                 * "operator()" for a lambda or functor run by a templated kernel */
    long block[3];      /* block index of the failing thread */
    long thread[3];     /* thread index within the block */
    char *expr;         /* the asserted expression */
    const char *stream; /* "stdout", "stderr" or "stdout+stderr" (static string) */
    /* Triton's and Inductor's asserts print `unknown` for the kernel: the file (Python) tells it instead, read
     * when the line came (tritonsrc.h). */
    char *function; /* the @triton.jit function whose body holds the line, or NULL */
    char *kernels;  /* with function: the names a kernel running the line may have, space-separated
                                 * (function, then the file's @triton.jit functions that call it) */
    char *unfound;  /* the Triton form without function: why the file did not tell it, or NULL */
};

/* The asserts of one run, in the order they came. */
struct dev_asserts {
    struct dev_assert a[ASSERTS_MAX]; /* the first ASSERTS_MAX lines */
    size_t n;                         /* entries of a in use */
    size_t seen;                      /* assert lines seen, kept or not */
};

/* Parses one line (without its newline) as a device assert. Returns 0 and fills a (texts malloc'd, stream
 * left alone, no file read), or -1 when the line is not one (or out of memory). */
int asserts_parse(const char *line, size_t len, struct dev_assert *a);
/* Keeps the line if it is a device assert (the first ASSERTS_MAX), printed on stream (a static string). An
 * assert in Triton's form (kernel `unknown`) gets its function from the file it names, read now: the file may
 * be gone once the command has exited (a relative name is taken from the current directory). */
void asserts_add(struct dev_asserts *as, const char *line, size_t len, const char *stream);
/* Frees the texts of one assert. */
void asserts_free_one(struct dev_assert *a);
/* Frees the texts. */
void asserts_free(struct dev_asserts *as);

/* Adds "device_asserts" to a report (those that fit its culprit or candidates first, each with the launches it
 * fits) and, when the verdict is "candidates" and the asserts single out exactly one candidate, narrows the
 * verdict to it; when the culprit is a graph launch, names the captured node they single out. as may be NULL
 * (nothing seen). *changed is set when the report was modified. Returns 0, or ENOMEM. */
int asserts_annotate(const struct dev_asserts *as, struct json *doc, int *changed);

/* For a fault report of a device assert (710) that has no device_asserts: sets device_asserts to [] (the run's
 * output was read whole and held no assert line; the device can lose them when thousands of threads assert at
 * once) and *changed to 1. Other reports are left alone. Returns 0, or ENOMEM. */
int asserts_note_none(struct json *doc, int *changed);

#endif
