/* Replacing a file the command line writes for the user (a symbolized report, a trace): the new text goes into a
 * private temporary beside the file and is renamed over it in one step, so a reader sees the old file or the new
 * one, never half of either. Only a regular file of one's own is replaced: a link planted where the file goes (in
 * a shared or world-writable directory) and anyone else's file are left as they are. The one place that does this;
 * the library's reports are written by their own code (created once, never replaced). */
#ifndef CULPRIT_REPORT_REPLACE_H
#define CULPRIT_REPORT_REPLACE_H

#include <stddef.h>

/* Writes len bytes of text and one newline to path, synced to disk before the rename. The file gets mode 0600, or
 * with keep_mode the mode of the file it replaces. Returns 0, or an errno value with why filled: EEXIST when path
 * is not a regular file of one's own, ENOMEM when memory is short, else why the write failed. */
int replace_text_file(const char *path, const char *text, size_t len, int keep_mode, char *why, size_t whylen);

#endif
