/* Turns a culprit report (docs/report.md) into text for a person at a terminal: the full verdict, or one line.
 * The library calls it in the failing process right after writing the report; the CLI calls it for `run` and
 * `report`. It renders whatever fields are present and never fails on missing ones; only text that is not a
 * JSON object is refused. */
#ifndef CULPRIT_REPORT_RENDER_H
#define CULPRIT_REPORT_RENDER_H

#include <stddef.h>

struct json;

#define REPORT_HISTORY 8 /* launches before the culprit on its stream that a report's "history" lists, at most */

/* What to render besides the report itself. */
struct render_opts {
    int brief;        /* non-zero: one line instead of the full verdict */
    const char *path; /* the report file, named at the end when not NULL */
    int no_debugger;  /* leave out the cuda-gdb command (the program ran on culprit's simulated driver) */
};

/* Renders the report in json[0..len). Returns malloc'd NUL-terminated text (every line starts with
 * "culprit: " and ends with '\n'), or NULL when the text is not a JSON object; render_error() then says why. */
char *render_text(const char *json, size_t len, int brief);

/* The same with options; on failure a one-sentence reason is also copied into why[0..whylen) when given. */
char *render_text_opts(const char *json, size_t len, const struct render_opts *opts, char *why, size_t whylen);

/* Renders a parsed report. Returns NULL only when out of memory or when doc is not an object. */
char *render_doc(const struct json *doc, const struct render_opts *opts);

/* A launch's kernel as the text shows it (demangled where possible); *owned gets memory for the caller to free. */
const char *render_launch_name(const struct json *launch, char **owned);
/* Where a launch was made, in short: its innermost Python line of the user's ("train.py:42"), else its first
 * native frame in the user's code ("app.c:51", or the function); "" when the report does not say. */
const char *render_launch_site(const struct json *launch, char *out, size_t outsz);

/* The last component of a path ("train.py" of "/x/train.py"); path itself without a '/', NULL for NULL. */
const char *render_base(const char *path);
/* Copies name into out, cut in the middle with "..." when it is longer than max bytes. */
const char *render_elide(const char *name, char *out, size_t outsz, size_t max);

/* Terminal safety. Every renderer's text passes through the same escaping: control characters (C0 but for the
 * text's own newlines, DEL, C1), bytes that are not UTF-8 and the Unicode controls that reorder text (bidi
 * overrides and isolates) are shown as \xNN, \n, \t, \r or \uXXXX; other UTF-8 stays as it is. */
/* s[0..n) escaped so: a malloc'd NUL-terminated copy (keep_newlines: '\n' stays), or NULL when out of memory. */
char *render_safe(const char *s, size_t n, int keep_newlines);
/* Whether s[0..n) needs no escaping (keep_newlines: '\n' counts as safe). */
int render_is_safe(const char *s, size_t n, int keep_newlines);

/* Why the last render_text call of this thread returned NULL. */
const char *render_error(void);

#endif
