/* Adds source locations to a culprit report after the fact: frames that carry module+offset get function, file
 * and line from the module's debug information through binutils' addr2line (one batched process per module,
 * run without a shell and time-bounded), and mangled kernel names get demangled. The target's code is never
 * run. When addr2line is missing or fails, frames simply keep module+offset. */
#ifndef CULPRIT_REPORT_SYMBOLIZE_H
#define CULPRIT_REPORT_SYMBOLIZE_H

#include <stddef.h>

struct json;

/* Result codes; 0 is success. A missing or failing addr2line is not an error. */
enum {
    SYMBOLIZE_OK = 0,
    SYMBOLIZE_EREAD = 1,    /* the report file could not be read */
    SYMBOLIZE_EPARSE = 2,   /* the file is not valid JSON */
    SYMBOLIZE_ESCHEMA = 3,  /* valid JSON, but not a culprit report */
    SYMBOLIZE_EWRITE = 4,   /* the improved report could not be written back */
    SYMBOLIZE_ENOMEM = 5,   /* an allocation failed */
    SYMBOLIZE_EFOREIGN = 6, /* symbolize_load_own: a symbolic link, or a file of another user */
};

#define SYMBOLIZE_TIMEOUT_S 30            /* addr2line is killed after this long */
#define SYMBOLIZE_MAX_REPORT (256u << 20) /* larger files are refused as reports */

/* Reads the report at path, symbolizes it and writes it back atomically (same directory, same mode) when
 * anything was added and the report is a regular file owned by the caller. Returns a SYMBOLIZE_* code. */
int symbolize_report(const char *path);

/* The same, and on failure writes one sentence naming the file and the problem into why[0..whylen). */
int symbolize_file(const char *path, char *why, size_t whylen);

/* The pieces, for callers that also want the tree (culprit report): load and check a report, fill in a tree
 * (*changed tells whether anything was added), and write a tree back atomically. */
int symbolize_load(const char *path, struct json **doc, char *why, size_t whylen);
/* symbolize_load for a report read back from a directory others may write into (`culprit run`'s): only a regular
 * file owned by this user, never through a symbolic link (SYMBOLIZE_EFOREIGN with why otherwise). */
int symbolize_load_own(const char *path, struct json **doc, char *why, size_t whylen);
int symbolize_doc(struct json *doc, int *changed);
/* The same for several reports at once, one addr2line per module for all of them (the reports of a job share
 * their modules and most addresses); changed[i] tells whether docs[i] gained anything. */
int symbolize_docs(struct json *const *docs, size_t ndocs, int *changed);
int symbolize_save(const char *path, const struct json *doc, char *why, size_t whylen);

/* Environment variable naming the addr2line program to run (default: addr2line found through PATH). */
#define SYMBOLIZE_ADDR2LINE_ENV "CULPRIT_ADDR2LINE"

#endif
