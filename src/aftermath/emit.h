/* The pieces every report file shares (emit.c): a sorted snapshot of the launch rings, launch records, native
 * and Python frames and the process as JSON, and the file written under a temporary name then renamed. */
#ifndef CULPRIT_EMIT_H
#define CULPRIT_EMIT_H

#include <stddef.h>
#include <stdint.h>

struct cp_config;
struct cp_rec;
struct jw;
struct pystack_ref;
struct pystack_thread;

struct emit_snap {
  struct cp_rec *recs; /* records sorted by seq */
  size_t n;            /* count */
  size_t rs;           /* bytes per record */
};

/* The snapshot graph launches look their captured nodes up in, while a report is made (NULL after). */
void emit_set_snap(const struct emit_snap *s);
struct cp_rec *emit_rec_at(const struct emit_snap *s, size_t i);
uint64_t emit_rseq(const struct cp_rec *r);
/* The record of launch seq in s (sorted by seq), or NULL. */
struct cp_rec *emit_find_seq(const struct emit_snap *s, uint64_t seq);
const char *emit_stream_kind_name(int kind);

void emit_frames(struct jw *w, void *const *pcs, int n);
/* The calling thread's emit_frames describe frames from m (stack_describe_maps) until called with NULL: never
 * through the dynamic loader, whose lock an interrupted thread may hold. */
struct stack_maps;
void emit_use_maps(const struct stack_maps *m);
void emit_python(struct jw *w, const struct pystack_ref *py, int n);
/* One entry of "python_threads": {"id": the thread's threading.get_ident(), "python": its frames}. */
void emit_python_thread(struct jw *w, const struct pystack_thread *t);
/* Where a launch ran, or a stream entry: "stream" (the handle), its kind under kind_key ("stream_kind" in a
 * launch, "kind" in a stream entry), "ctx" and "device". */
void emit_stream_place(struct jw *w, const char *kind_key, const void *handle, int kind, const void *ctx, int device);
void emit_launch(struct jw *w, const struct cp_rec *r);
/* The opening of every report: "schema", "kind" (fault, hang or exit), "tool", "process". */
void emit_head(struct jw *w, const char *kind);
/* "config": the mode in force and the settings a verdict depends on. */
void emit_config(struct jw *w, const struct cp_config *cfg, int mode);
/* "verdict": {certainty, reason, window {first, last}}; no window when first is 0 (no launch is named). */
void emit_verdict(struct jw *w, const char *certainty, const char *reason, uint64_t first, uint64_t last);
/* "stats": launches recorded, records snapshotted, breadcrumbs written and refused, ring overwrites, threads. */
void emit_stats(struct jw *w, uint64_t launches, size_t records);
/* "process": {pid, ppid, exe, argv (whole; past 16 MiB, argv_left_out counts the arguments left out), hostname,
 * time_unix, time_unix_ns} and the rank fields (rank.c). */
void emit_process(struct jw *w);
/* Writes text into dir (made 0700 if need be) as culprit-<pid><tag>.json (tag "", "-hang" or "-exit"; a
 * process started by a launcher: culprit-<host>-<pid><tag>.json), mode 0600, through a temporary file of a name
 * nobody can guess, made without following links and never over an existing file, then renamed into place; path
 * gets the file's path. Returns 0, or CP_ESYS(errno) of the step that failed (core/errors.h). */
int emit_write_file(const char *dir, const char *tag, const char *text, size_t len, char *path, unsigned pathlen);
/* Writes s to stderr whole (retrying short writes and EINTR). */
void emit_stderr(const char *s);

#endif
