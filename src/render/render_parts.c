/* The pieces every culprit verdict is written with (the fault verdict in render.c, hang reports in
 * render_hang.c, the operator lines in render_op.c, the job view in merge.c): the text buffer and its wrapped
 * paragraphs, kernel names, launch geometry and places, native and Python frames and which of them are the
 * user's, the command line and error names. Declared in render_int.h. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "render.h"
#include "render_int.h"
#include "../base/demangle.h"
#include "json.h"
#include "report_keys.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- terminal safety ----
 * Every string a verdict shows comes from a report or from a program (kernel names, argv, file and function
 * names, thread names, NCCL's log lines), and a report is only a file. A terminal obeys escape sequences and a
 * newline starts a line of its own, so what is shown goes through render_safe_char: control characters (C0, DEL,
 * C1), bytes that are not UTF-8 and the Unicode controls that reorder text are shown as escapes. */

/* The character at s[0..n) (n > 0): returns 1 when it must be escaped, and in *span its length in bytes (1 for a
 * byte that does not start a valid UTF-8 sequence); *cp gets the code point of a valid multi-byte one, else 0. */
static int render_unsafe_char(const unsigned char *s, size_t n, size_t *span, unsigned *cp)
{
    unsigned c = s[0], v, lo = 0x80, hi = 0xbf;
    size_t k, need;

    *span = 1;
    *cp = 0;
    if (c < 0x20 || c == 0x7f)
        return 1;
    if (c < 0x80)
        return 0;
    if (c >= 0xc2 && c <= 0xdf) {
        need = 1;
        v = c & 0x1f;
    } else if (c >= 0xe0 && c <= 0xef) {
        need = 2;
        v = c & 0x0f;
        if (c == 0xe0)
            lo = 0xa0; /* overlong */
        else if (c == 0xed)
            hi = 0x9f; /* surrogates */
    } else if (c >= 0xf0 && c <= 0xf4) {
        need = 3;
        v = c & 0x07;
        if (c == 0xf0)
            lo = 0x90; /* overlong */
        else if (c == 0xf4)
            hi = 0x8f; /* beyond U+10FFFF */
    } else {
        return 1; /* a continuation byte alone, or never valid (C0, C1, F5..FF) */
    }
    if (n < need + 1)
        return 1;
    for (k = 1; k <= need; k++) {
        unsigned d = s[k];
        if (d < (k == 1 ? lo : 0x80) || d > (k == 1 ? hi : 0xbf))
            return 1;
        v = v << 6 | (d & 0x3f);
    }
    *span = need + 1;
    *cp = v;
    /* C1 controls (U+0080..U+009F: 8-bit CSI and friends) and the bidirectional overrides and isolates, which
     * make a terminal show text in another order than it is */
    return v <= 0x9f || v == 0x061c || v == 0x200e || v == 0x200f || (v >= 0x202a && v <= 0x202e) ||
           (v >= 0x2066 && v <= 0x2069);
}

/* Appends s[0..n) to out (which has room for RENDER_SAFE_GROWTH times n bytes and a NUL), escaping what
 * render_unsafe_char refuses; a '\n' at a position where keep[i] is set (keep may be NULL: none) stays. Returns
 * the bytes written. */
#define RENDER_SAFE_GROWTH 6 /* "\u202e" from 3 bytes, "\x1b" from 1: at most 4 out per byte in, with room */
static size_t render_escape(char *out, const char *s, size_t n, const char *keep)
{
    const unsigned char *u = (const unsigned char *)s;
    size_t i = 0, o = 0, span;
    unsigned cp;
    while (i < n) {
        if (!render_unsafe_char(u + i, n - i, &span, &cp)) {
            memcpy(out + o, s + i, span);
            o += span;
        } else if (u[i] == '\n' && keep && keep[i]) {
            out[o++] = '\n';
        } else if (cp) {
            o += (size_t)sprintf(out + o, "\\u%04x", cp);
        } else if (u[i] == '\n' || u[i] == '\t' || u[i] == '\r') {
            out[o++] = '\\';
            out[o++] = u[i] == '\n' ? 'n' : u[i] == '\t' ? 't' : 'r';
        } else {
            o += (size_t)sprintf(out + o, "\\x%02x", u[i]);
        }
        i += span;
    }
    out[o] = '\0';
    return o;
}

int render_is_safe(const char *s, size_t n, int keep_newlines)
{
    const unsigned char *u = (const unsigned char *)s;
    size_t i = 0, span;
    unsigned cp;
    while (i < n) {
        if (render_unsafe_char(u + i, n - i, &span, &cp) && !(keep_newlines && u[i] == '\n'))
            return 0;
        i += span;
    }
    return 1;
}

char *render_safe(const char *s, size_t n, int keep_newlines)
{
    char *out, *keep = NULL;
    if (n > ((size_t)-1 - 1) / RENDER_SAFE_GROWTH)
        return NULL;
    out = malloc(n * RENDER_SAFE_GROWTH + 1);
    if (!out)
        return NULL;
    if (keep_newlines) {
        keep = malloc(n ? n : 1);
        if (!keep) {
            free(out);
            return NULL;
        }
        memset(keep, 1, n);
    }
    render_escape(out, s, n, keep);
    free(keep);
    return out;
}

/* Appends s[0..n) as it is. */
static void render_put(struct render_buf *b, const char *s, size_t n)
{
    if (b->oom)
        return;
    if (!b->p || b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 1024;
        char *p;
        while (cap < b->len + n + 1)
            cap *= 2;
        p = realloc(b->p, cap);
        if (!p) {
            b->oom = 1;
            return;
        }
        b->p = p;
        b->cap = cap;
    }
    memcpy(b->p + b->len, s, n);
    b->len += n;
    b->p[b->len] = '\0';
}

void render_raw(struct render_buf *b, const char *text)
{
    render_put(b, text, strlen(text));
}

struct render_verdict render_verdict_of(const struct json *doc)
{
    const struct json *verdict = rk_verdict(doc);
    struct render_verdict v = {.culprit = json_get(doc, RK_CULPRIT),
                               .cands = rk_candidates(doc),
                               .certainty = json_get_str(verdict, RK_CERTAINTY),
                               .reason = json_get_str(verdict, RK_REASON)};
    return v;
}

/* Formats fmt and appends it, terminal-safe: the newlines of fmt itself stay, everything unsafe that came in
 * through the arguments is escaped. Where the text holds something to escape, fmt is formatted a second time with
 * its own newlines made spaces: the positions where the two differ are fmt's newlines, exactly. */
static void render_vadd(struct render_buf *b, const char *fmt, va_list ap)
{
    va_list aq;
    char *s = NULL, *s2 = NULL, *fmt2 = NULL, *keep = NULL, *out = NULL;
    size_t lit = 0, nl = 0, i;
    int n, n2;
    if (b->oom)
        return;
    va_copy(aq, ap);
    n = vasprintf(&s, fmt, aq);
    va_end(aq);
    if (n < 0) {
        b->oom = 1;
        return;
    }
    for (i = 0; fmt[i]; i++)
        lit += fmt[i] == '\n';
    for (i = 0; i < (size_t)n; i++)
        nl += s[i] == '\n';
    if (nl == lit && render_is_safe(s, (size_t)n, 1)) {
        render_put(b, s, (size_t)n); /* the usual case: nothing to escape, and every newline is fmt's */
        free(s);
        return;
    }
    fmt2 = strdup(fmt);
    keep = calloc((size_t)n + 1, 1);
    out = malloc((size_t)n * RENDER_SAFE_GROWTH + 1);
    if (!fmt2 || !keep || !out)
        goto oom;
    for (i = 0; fmt2[i]; i++)
        if (fmt2[i] == '\n')
            fmt2[i] = ' ';
    va_copy(aq, ap);
    n2 = vasprintf(&s2, fmt2, aq);
    va_end(aq);
    if (n2 < 0)
        s2 = NULL; /* undefined after a failure */
    if (n2 != n)
        goto oom;
    for (i = 0; i < (size_t)n; i++)
        keep[i] = s[i] == '\n' && s2[i] == ' ';
    render_put(b, out, render_escape(out, s, (size_t)n, keep));
    goto done;
oom:
    b->oom = 1;
done:
    free(s);
    free(s2);
    free(fmt2);
    free(keep);
    free(out);
}

void render_add(struct render_buf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    render_vadd(b, fmt, ap);
    va_end(ap);
}

/* Appends one whole line with the "culprit: " prefix. */
void render_line(struct render_buf *b, const char *fmt, ...)
{
    va_list ap;
    render_add(b, "culprit: ");
    va_start(ap, fmt);
    render_vadd(b, fmt, ap);
    va_end(ap);
    render_add(b, "\n");
}

/* ---- small pieces ---- */
/* Appends head + text as lines of at most RENDER_WIDTH columns, breaking text at spaces; continuation lines
 * start with indent. A single word longer than a line is kept whole. */
void render_para(struct render_buf *b, const char *head, const char *indent, const char *text)
{
    const size_t prefix = strlen("culprit: ");
    size_t col = prefix + strlen(head);
    const char *p = text;
    int line_start = 1; /* no word on the current line yet */

    while (*p == ' ' || *p == '\n' || *p == '\t')
        p++;
    if (!*p) {
        size_t hl = strlen(head);
        while (hl && head[hl - 1] == ' ')
            hl--;
        render_add(b, "culprit: %.*s\n", (int)hl, head);
        return;
    }
    render_add(b, "culprit: %s", head);
    while (*p) {
        size_t word = strcspn(p, " \n\t");
        if (!line_start && col + 1 + word > RENDER_WIDTH) {
            render_add(b, "\nculprit: %s", indent);
            col = prefix + strlen(indent);
            line_start = 1;
        } else if (!line_start) {
            render_add(b, " ");
            col++;
        }
        line_start = 0;
        render_add(b, "%.*s", (int)word, p);
        col += word;
        p += word;
        while (*p == ' ' || *p == '\n' || *p == '\t')
            p++;
    }
    render_add(b, "\n");
}

const char *render_base(const char *path)
{
    const char *s = path ? strrchr(path, '/') : NULL;
    return s ? s + 1 : path;
}

const char *render_elide(const char *name, char *out, size_t outsz, size_t max)
{
    size_t n = strlen(name);
    if (max + 1 > outsz)
        max = outsz - 1;
    if (n <= max) {
        memcpy(out, name, n + 1);
        return out;
    }
    {
        size_t head = (max - 3) * 2 / 3, tail = max - 3 - head;
        memcpy(out, name, head);
        memcpy(out + head, "...", 3);
        memcpy(out + head + 3, name + n - tail, tail);
        out[max] = '\0';
    }
    return out;
}

/* The kernel's display name: the demangled name, else a demangling of the mangled one, else whatever there
 * is. *owned receives memory the caller frees. */
const char *render_kernel(const struct json *launch, char **owned)
{
    const char *k = json_get_str(launch, RK_KERNEL);
    const char *m = json_get_str(launch, RK_MANGLED);
    const char *kind = json_get_str(launch, RK_KIND);
    *owned = NULL;
    if (k && *k && strncmp(k, "_Z", 2) != 0)
        return k;
    if ((*owned = demangle_name(m ? m : k)) != NULL)
        return *owned;
    if (k && *k)
        return k;
    if (m && *m)
        return m;
    if (kind && strcmp(kind, "graph") == 0)
        return "(CUDA graph)";
    return "(unnamed kernel)";
}

const char *render_stream_kind(const char *kind)
{
    if (!kind)
        return NULL;
    if (strcmp(kind, "legacy") == 0)
        return "legacy default stream";
    if (strcmp(kind, "per-thread") == 0)
        return "per-thread default stream";
    if (strcmp(kind, "created") == 0)
        return "created stream";
    return kind;
}

/* Writes "[4,1,1]" for a dims array into out; empty when absent. */
const char *render_dims(const struct json *arr, char *out, size_t outsz)
{
    size_t i, n = json_len(arr), used = 0;
    out[0] = '\0';
    if (!json_is(arr, JSON_ARR) || n == 0)
        return out;
    used += (size_t)snprintf(out, outsz, "[");
    for (i = 0; i < n && used < outsz; i++) {
        long long v;
        if (json_int(json_at(arr, i), &v))
            used += (size_t)snprintf(out + used, outsz - used, "%s?", i ? "," : "");
        else
            used += (size_t)snprintf(out + used, outsz - used, "%s%lld", i ? "," : "", v);
    }
    if (used < outsz)
        snprintf(out + used, outsz - used, "]");
    return out;
}

/* "grid [4,1,1] block [256,1,1]" or the parts that are known. */
const char *render_geometry(const struct json *launch, char *out, size_t outsz)
{
    char g[64], bl[64];
    const char *kind = json_get_str(launch, RK_KIND);
    if (kind && strcmp(kind, "graph") == 0) { /* a graph launch has no shape of its own; its nodes do */
        out[0] = '\0';
        return out;
    }
    render_dims(json_get(launch, RK_GRID), g, sizeof g);
    render_dims(json_get(launch, RK_BLOCK), bl, sizeof bl);
    snprintf(out, outsz, "%s%s%s%s%s", g[0] ? "grid " : "", g, g[0] && bl[0] ? " " : "", bl[0] ? "block " : "", bl);
    return out;
}

static int render_ends(const char *s, const char *suffix)
{
    size_t n = strlen(s), k = strlen(suffix);
    return n >= k && strcmp(s + n - k, suffix) == 0;
}

/* The CUDA runtime linked into the program itself (cudart_static: its internal symbols are named after the
 * library or live in its cudart namespace, its entry points cuda* without line information) and the launch stubs
 * nvcc writes for <<<...>>> (inlined from the toolkit's headers): the program's module, but not the user's code. */
static int render_is_cuda_code(const struct json *frame)
{
    const char *fn = json_get_str(frame, RK_FUNCTION), *file = json_get_str(frame, RK_FILE);
    if (fn && (strncmp(fn, "libcudart_static_", 17) == 0 || strncmp(fn, "__device_stub__", 15) == 0 ||
               strncmp(fn, "cudart::", 8) == 0))
        return 1;
    if (fn && !file && strncmp(fn, "cuda", 4) == 0 && fn[4] >= 'A' && fn[4] <= 'Z')
        return 1;
    return file && (strstr(file, "/include/crt/") || render_ends(file, "/cuda_runtime.h") ||
                    render_ends(file, "/cuda_runtime_api.h") || render_ends(file, ".stub.c"));
}

/* Frames inside the CUDA runtime/driver, culprit itself and the C runtime say nothing about the user's code;
 * they are folded into one line so the user's own frames come first. */
static int render_is_lib_module(const struct json *frame)
{
    static const char *const libs[] = {
        "libcuda.so",
        "libcudart.so",
        "libcudart_static",
        "libculprit.so",
        "libnvidia-",
        "libc.so",
        "libc-",
        "libpthread.so",
        "libpthread-",
        "libdl.so",
        "ld-linux",
        "ld64.so",
        "libgcc_s.so",
        /* the interpreter's own frames: the Python frames above say where in the program this was */
        "libpython",
        "python3",
        "libffi.so",
        "_ctypes.",
    };
    const char *mod = render_base(json_get_str(frame, RK_MODULE));
    size_t i;
    if (!mod)
        return 0;
    for (i = 0; i < sizeof libs / sizeof libs[0]; i++)
        if (strncmp(mod, libs[i], strlen(libs[i])) == 0)
            return 1;
    return 0;
}

int render_is_lib_frame(const struct json *frame)
{
    return render_is_lib_module(frame) || render_is_cuda_code(frame);
}

/* How a folded frame is named in the line that counts them. */
const char *render_lib_name(const struct json *frame)
{
    const char *fn = json_get_str(frame, RK_FUNCTION);
    if (render_is_lib_module(frame) || !render_is_cuda_code(frame))
        return render_base(json_get_str(frame, RK_MODULE));
    if (json_get_str(frame, RK_FILE) || (fn && strncmp(fn, "__device_stub__", 15) == 0))
        return "nvcc launch stubs";
    return "static CUDA runtime";
}

/* One frame: "main at demo.cu:51", "helper (app+0x11b2)", "libfoo.so+0x20", or the raw pc. */
const char *render_frame(const struct json *frame, char *out, size_t outsz)
{
    const char *fn = json_get_str(frame, RK_FUNCTION);
    const char *file = json_get_str(frame, RK_FILE);
    const char *mod = render_base(json_get_str(frame, RK_MODULE));
    const char *off = json_get_str(frame, RK_OFFSET);
    const char *pc = json_get_str(frame, RK_PC);
    long long line = json_get_int(frame, RK_LINE, 0);
    char *dm = NULL;
    char where[256];

    if (fn && strncmp(fn, "_Z", 2) == 0 && (dm = demangle_name(fn)) != NULL)
        fn = dm;
    if (mod && *mod)
        snprintf(where, sizeof where, "%s+%s", mod, off ? off : (pc ? pc : "?"));
    else
        snprintf(where, sizeof where, "pc %s", pc ? pc : "?");
    if (file && line > 0)
        snprintf(out, outsz, "%s at %s:%lld", fn ? fn : "??", file, line);
    else if (file)
        snprintf(out, outsz, "%s at %s", fn ? fn : "??", file);
    else if (fn)
        snprintf(out, outsz, "%s (%s)", fn, where);
    else
        snprintf(out, outsz, "%s", where);
    free(dm);
    return out;
}

/* Prints a stack with the user's frames first and library frames folded into one line. */
void render_stack(struct render_buf *b, const struct json *stack, const char *indent)
{
    render_stack_max(b, stack, indent, (size_t)-1);
}

/* The same, showing at most max of the user's frames (the rest are counted; the report has them all). */
void render_stack_max(struct render_buf *b, const struct json *stack, const char *indent, size_t max)
{
    size_t i, n = json_len(stack), user = 0, folded = 0;
    char text[1024];
    char libs[256] = "";
    size_t libslen = 0;

    if (!json_is(stack, JSON_ARR) || n == 0) {
        render_line(b, "%s(no stack recorded)", indent);
        return;
    }
    for (i = 0; i < n; i++)
        if (!render_is_lib_frame(json_at(stack, i)))
            user++;
    size_t shown = 0, hidden = 0;
    for (i = 0; i < n; i++) {
        const struct json *f = json_at(stack, i);
        if (user && !render_is_lib_frame(f) && shown == max) {
            hidden++;
            continue;
        }
        if (user && render_is_lib_frame(f)) {
            const char *mod = render_lib_name(f);
            folded++;
            /* name each folded library once, as long as the line stays short */
            if (mod && !strstr(libs, mod) && libslen + strlen(mod) + 3 < 60) {
                libslen += (size_t)snprintf(libs + libslen, sizeof libs - libslen, "%s%s", libslen ? ", " : "", mod);
            } else if (mod && !strstr(libs, mod) && !strstr(libs, "...") && libslen + 5 < sizeof libs) {
                libslen += (size_t)snprintf(libs + libslen, sizeof libs - libslen, ", ...");
            }
            continue;
        }
        {
            /* C++ template names run to hundreds of characters: keep the line within the width, cutting the
             * middle so the function's start and its file:line (or module) stay readable */
            char num[24], cut[RENDER_WIDTH + 1];
            size_t used = strlen("culprit: ") + strlen(indent) + (size_t)snprintf(num, sizeof num, "#%zu ", i);
            size_t room = used + RENDER_NAME_MIN < RENDER_WIDTH ? RENDER_WIDTH - used : RENDER_NAME_MIN;
            render_line(b, "%s%s%s", indent, num,
                        render_elide(render_frame(f, text, sizeof text), cut, sizeof cut, room));
        }
        shown++;
    }
    if (hidden)
        render_line(b, "%s(%zu more native frame%s in the report)", indent, hidden, hidden == 1 ? "" : "s");
    if (folded)
        render_line(b, "%s(%zu frame%s in CUDA, system and interpreter libraries: %s)", indent, folded,
                    folded == 1 ? "" : "s", libs);
}

/* A Python frame of an installed package or of the standard library rather than of the user's program. */
static int render_is_lib_pyframe(const struct json *frame)
{
    const char *file = json_get_str(frame, RK_FILE);
    return !file || strstr(file, "/site-packages/") || strstr(file, "/dist-packages/") ||
           strstr(file, "/lib/python3") || strncmp(file, "<frozen", 7) == 0 ||
           render_ends(file, "/culprit/diagnose.py");
}

/* "train.py:42 in forward" */
const char *render_pyframe(const struct json *frame, char *out, size_t outsz)
{
    const char *file = json_get_str(frame, RK_FILE), *fn = json_get_str(frame, RK_FUNCTION);
    long long line = json_get_int(frame, RK_LINE, 0);
    if (line > 0)
        snprintf(out, outsz, "%s:%lld in %s", file ? file : "?", line, fn ? fn : "?");
    else
        snprintf(out, outsz, "%s in %s", file ? file : "?", fn ? fn : "?");
    return out;
}

/* The Python frames, innermost first, the user's own code shown and installed packages folded into a count
 * (they are in the report). Returns 1 when there were any. */
int render_python(struct render_buf *b, const struct json *py, const char *indent)
{
    size_t i, n = json_len(py), user = 0, folded = 0;
    char text[1400];
    if (!json_is(py, JSON_ARR) || n == 0)
        return 0;
    for (i = 0; i < n; i++)
        if (!render_is_lib_pyframe(json_at(py, i)))
            user++;
    for (i = 0; i < n; i++) {
        const struct json *f = json_at(py, i);
        if (user && render_is_lib_pyframe(f)) {
            folded++;
            continue;
        }
        render_line(b, "%s%s", indent, render_pyframe(f, text, sizeof text));
    }
    if (folded)
        render_line(b, "%s(%zu frame%s in installed Python packages)", indent, folded, folded == 1 ? "" : "s");
    return 1;
}

/* The user's innermost Python frame, or NULL. */
const struct json *render_user_pyframe(const struct json *py)
{
    for (size_t i = 0; i < json_len(py); i++)
        if (!render_is_lib_pyframe(json_at(py, i)))
            return json_at(py, i);
    return json_len(py) ? json_at(py, 0) : NULL;
}

/* Where a launch or an error came from: its Python frames first when it has them, then the native stack. */
void render_origin(struct render_buf *b, const struct json *obj, const char *head)
{
    if (json_len(json_get(obj, RK_PYTHON))) {
        /* for a Python program the C++ frames matter less: the innermost few, the rest are in the report */
        if (json_get(obj, RK_PYTHON_THREAD))
            /* the launching thread runs no Python (PyTorch's autograd engine): the thread that waited on it */
            render_line(b, "%s (Python, of thread %lld, which waited on it):", head,
                        json_get_int(obj, RK_PYTHON_THREAD, 0));
        else
            render_line(b, "%s (Python):", head);
        render_python(b, json_get(obj, RK_PYTHON), "    ");
        render_line(b, "  native stack:");
        render_stack_max(b, json_get(obj, RK_STACK), "    ", 3);
        return;
    }
    render_line(b, "%s:", head);
    render_stack(b, json_get(obj, RK_STACK), "    ");
}

/* The first frame of a launch's stack that belongs to the user's code, or NULL. For a <<<...>>> launch that is
 * past the host-side function nvcc names after the kernel (its line is the kernel's definition): the launch
 * site is where that was called. */
const struct json *render_user_frame(const struct json *launch)
{
    const struct json *stack = json_get(launch, RK_STACK);
    const char *kernel = json_get_str(launch, RK_KERNEL);
    size_t i;
    for (i = 0; i < json_len(stack); i++) {
        const struct json *f = json_at(stack, i);
        const char *fn = json_get_str(f, RK_FUNCTION);
        if (render_is_lib_frame(f) || (kernel && fn && strcmp(fn, kernel) == 0 && i + 1 < json_len(stack)))
            continue;
        return f;
    }
    return NULL;
}

/* "stream 0x0 (legacy default stream), device 0, thread 4242", with the parts that are present. */
const char *render_place(const struct json *launch, char *out, size_t outsz)
{
    const char *stream = json_get_str(launch, RK_STREAM);
    const char *kind = render_stream_kind(json_get_str(launch, RK_STREAM_KIND));
    long long dev = json_get_int(launch, RK_DEVICE, -1), tid = json_get_int(launch, RK_THREAD, -1);
    size_t used = 0;
    out[0] = '\0';
    if (stream)
        used += (size_t)snprintf(out, outsz, "stream %s%s%s%s", stream, kind ? " (" : "", kind ? kind : "",
                                 kind ? ")" : "");
    else if (kind)
        used += (size_t)snprintf(out, outsz, "the %s", kind);
    if (dev >= 0 && used < outsz)
        used += (size_t)snprintf(out + used, outsz - used, "%sdevice %lld", used ? ", " : "", dev);
    if (tid >= 0 && used < outsz)
        snprintf(out + used, outsz - used, "%sthread %lld", used ? ", " : "", tid);
    return out;
}

/* Tells how to run the program again: intro on a line of its own, then cmd followed by the program's command line
 * (render_command) on the next, indented under it. */
void render_run_again(struct render_buf *b, const struct json *process, const char *intro, const char *cmd)
{
    render_line(b, "%s", intro);
    render_add(b, "culprit:   %s", cmd);
    render_command(b, process);
    render_add(b, "\n");
}

/* A kernel's name for the one-line form, shortened beyond RENDER_BRIEF_NAME characters (out: at least
 * RENDER_BRIEF_NAME + 1 bytes). */
const char *render_brief_kernel(const struct json *launch, char *out, size_t outsz)
{
    char *owned = NULL;
    render_elide(render_kernel(launch, &owned), out, outsz, RENDER_BRIEF_NAME);
    free(owned);
    return out;
}

/* Appends a report's command line (process's argv) as a command a shell would read back the same way: plain
 * words as they are, others in single quotes; an argument holding characters a terminal must not get raw (a
 * newline, an escape sequence) is written in bash's $'...' form with escapes, which still reads back as the same
 * bytes. A command line the report could not keep whole (argv_left_out) is not shown as a command: it would be
 * another one. */
void render_command(struct render_buf *b, const struct json *process)
{
    const struct json *argv = json_get(process, RK_ARGV);
    size_t i, n = json_len(argv);
    long long left_out = json_get_int(process, RK_ARGV_LEFT_OUT, 0);
    if (!json_is(argv, JSON_ARR) || n == 0) {
        render_add(b, "<your command>");
        return;
    }
    if (left_out > 0) {
        render_add(b, "<your command: its %lld last arguments are not in the report>", left_out);
        return;
    }
    for (i = 0; i < n; i++) {
        const struct json *node = json_at(argv, i);
        const char *a = json_str(node);
        size_t len = a ? node->len : 0, k;
        if (!a)
            a = "";
        if (i)
            render_add(b, " ");
        if (len && strlen(a) == len &&
            strspn(a, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_@%+=:,./-") == len) {
            render_add(b, "%s", a);
            continue;
        }
        /* quoted whole into q, then added in one piece (a UTF-8 character must reach render_add whole) */
        char *q = malloc(len * 4 + 4), *o = q;
        if (!q) {
            b->oom = 1;
            return;
        }
        if (render_is_safe(a, len, 0)) {
            *o++ = '\'';
            for (k = 0; k < len; k++) {
                if (a[k] == '\'') {
                    memcpy(o, "'\\''", 4);
                    o += 4;
                } else {
                    *o++ = a[k];
                }
            }
        } else {
            *o++ = '$';
            *o++ = '\'';
            for (k = 0; k < len; k++) {
                unsigned char c = (unsigned char)a[k];
                if (c == '\'' || c == '\\') {
                    *o++ = '\\';
                    *o++ = (char)c;
                } else if (c == '\n' || c == '\t' || c == '\r') {
                    *o++ = '\\';
                    *o++ = c == '\n' ? 'n' : c == '\t' ? 't' : 'r';
                } else if (c < 0x20 || c >= 0x7f) {
                    o += sprintf(o, "\\x%02x", c); /* UTF-8 too, byte by byte: exact, whatever it holds */
                } else {
                    *o++ = (char)c;
                }
            }
        }
        *o++ = '\'';
        *o = '\0';
        render_add(b, "%s", q);
        free(q);
    }
}

/* "CUDA_ERROR_ILLEGAL_ADDRESS (700)", or what is known of it. */
const char *render_errname(const struct json *err, char *out, size_t outsz)
{
    const char *name = json_get_str(err, RK_NAME);
    long long code;
    int has_code = json_int(json_get(err, RK_CODE), &code) == 0;
    if (name && has_code)
        snprintf(out, outsz, "%s (%lld)", name, code);
    else if (name)
        snprintf(out, outsz, "%s", name);
    else if (has_code)
        snprintf(out, outsz, "CUDA error %lld", code);
    else
        snprintf(out, outsz, "a sticky CUDA error");
    return out;
}
