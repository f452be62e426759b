/* What the renderers of src/report share (render.c, render_hang.c, render_op.c, merge.c; not for other rooms):
 * the text buffer they append to and the pieces the fault verdict, the hang report and the job view are written
 * with (most of them in render_parts.c). render.h is the interface. */
#ifndef CULPRIT_REPORT_RENDER_INT_H
#define CULPRIT_REPORT_RENDER_INT_H

#include <stddef.h>

struct json;
struct render_opts;

#define RENDER_WIDTH 100     /* lists and wrapped sentences are kept within this many columns */
#define RENDER_NAME_MIN 32   /* ...but a kernel name in a list keeps at least this many bytes */
#define RENDER_BRIEF_NAME 60 /* the one-line form shortens kernel names beyond this */

/* A growable text buffer with printf-style appends. */
struct render_buf {
    char *p;    /* the text, NUL-terminated */
    size_t len; /* bytes used */
    size_t cap; /* bytes allocated */
    int oom;    /* an allocation failed; the text is unusable */
};

/* Appends fmt formatted, terminal-safe: fmt's own newlines stay, anything unsafe from the arguments (render.h)
 * is escaped. render_line: one line, "culprit: " + fmt + '\n'. */
__attribute__((format(printf, 2, 3))) void render_add(struct render_buf *b, const char *fmt, ...);
/* Appends text a renderer made (render_doc, merge_render: already terminal-safe) as it is. */
void render_raw(struct render_buf *b, const char *text);
/* What every verdict's text reads of a report (a fault's and a hang's, full and brief). */
struct render_verdict {
    const struct json *culprit; /* "culprit" as the report has it: a launch, null or absent */
    const struct json *cands;   /* "candidates" */
    const char *certainty;      /* verdict.certainty, or NULL */
    const char *reason;         /* verdict.reason, or NULL */
};
struct render_verdict render_verdict_of(const struct json *doc);
void render_command(struct render_buf *b, const struct json *process);
void render_run_again(struct render_buf *b, const struct json *process, const char *intro, const char *cmd);
const char *render_brief_kernel(const struct json *launch, char *out, size_t outsz);
const char *render_dims(const struct json *arr, char *out, size_t outsz); /* "[4,1,1]", empty when absent */
const char *render_errname(const struct json *err, char *out, size_t outsz);
const char *render_frame(const struct json *frame, char *out, size_t outsz);
const char *render_geometry(const struct json *launch, char *out, size_t outsz);
int render_is_lib_frame(const struct json *frame);
const char *render_kernel(const struct json *launch, char **owned);
const char *render_lib_name(const struct json *frame);
__attribute__((format(printf, 2, 3))) void render_line(struct render_buf *b, const char *fmt, ...);
void render_origin(struct render_buf *b, const struct json *obj, const char *head);
void render_para(struct render_buf *b, const char *head, const char *indent, const char *text);
const char *render_place(const struct json *launch, char *out, size_t outsz);
const char *render_pyframe(const struct json *frame, char *out, size_t outsz);
int render_python(struct render_buf *b, const struct json *py, const char *indent);
void render_stack(struct render_buf *b, const struct json *stack, const char *indent);
void render_stack_max(struct render_buf *b, const struct json *stack, const char *indent, size_t max);
const char *render_stream_kind(const char *kind);
const struct json *render_user_frame(const struct json *launch); /* the launch's first frame of the user's */
const struct json *render_user_pyframe(const struct json *py);   /* the first Python frame of the user's */

/* Launches in a list (render_list.c): one launch's line ("#11 scale(float*, int)  grid [4,1,1] block [256,1,1]";
 * with where, also where it ran, where it was launched from and a device assert that names its kernel), whether
 * two launches differ only in their number, the span of launch numbers in arr[from..to), the device asserts that
 * may come from a launch, an NCCL kernel's collective and NCCL's warnings. */
void render_launch_item(struct render_buf *b, const struct json *launch, const char *indent, int where,
                        const struct json *asserts, char *last_place, size_t last_len, long long upto);
int render_same_launch(const struct json *a, const struct json *c);
void render_seq_span(const struct json *arr, size_t from, size_t to, long long *lo, long long *hi);
void render_asserts(struct render_buf *b, const struct json *asserts, const struct json *launch, const char *name,
                    const char *indent, int count_more);
void render_nccl_kernel(struct render_buf *b, const char *name, const char *indent);
void render_nccl_log(struct render_buf *b, const struct json *doc);

/* The operator behind a launch ("op"): "operator: NAME(ARGS)" (full) or its name, and what was wrong with its
 * arguments (render_op.c). */
#define RENDER_OP_TEXT 1400
#define RENDER_OP_NAME 128
void render_op(struct render_buf *b, const struct json *launch, const char *indent, int full);
/* The report's "diagnosis": the operators whose arguments broke their contract, but the culprit's own. */
void render_diagnosis(struct render_buf *b, const struct json *doc);

/* A hang report ("kind": "hang"), full or brief (render_hang.c). */
void render_hang(struct render_buf *b, const struct json *doc, const struct render_opts *o);

#endif
