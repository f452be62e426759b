/* Triton kernels in Python source: the @triton.jit function whose body holds a line of a file (Triton's and
 * Inductor's device asserts name only FILE:LINE), and the @triton.jit functions of that file that call it. A
 * line scanner for Python (strings, brackets, backslashes, indentation, decorators), not a parser: it is asked
 * about code that Triton compiled, so the code is valid Python. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "tritonsrc.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* One line of the file as the scanner sees it. */
struct ts_line {
    const char *text;   /* its first byte in the file's text */
    size_t len;         /* its length, without the newline */
    int starts;         /* it begins a statement: not inside brackets or a string, not after a backslash */
    int blank;          /* nothing but white space or a comment */
    int indent;         /* columns of leading white space (a tab goes to the next multiple of 8) */
    int in_triple;      /* it begins inside a triple-quoted string */
    size_t string_open; /* with in_triple: the line where that string opened */
};

/* The lines of one file. */
struct ts_file {
    struct ts_line *lines; /* every line, in order */
    size_t n;              /* entries of lines */
};

__attribute__((format(printf, 3, 4))) static void ts_why(char *why, size_t whylen, const char *fmt, ...)
{
    va_list ap;
    if (!why || !whylen)
        return;
    va_start(ap, fmt);
    vsnprintf(why, whylen, fmt, ap);
    va_end(ap);
}

/* Marks lines[first..last) as code: which lines begin statements, their indentation, and which begin inside a
 * triple-quoted string. */
static void ts_scan(struct ts_file *f, size_t first, size_t last)
{
    char quote = 0; /* the quote of the string we are in, 0 outside strings */
    int triple = 0, depth = 0, cont = 0;
    size_t open = 0;

    for (size_t i = first; i < last; i++) {
        struct ts_line *l = &f->lines[i];
        const char *p = l->text, *end = l->text + l->len;
        int col = 0;

        l->in_triple = quote && triple;
        l->string_open = open;
        l->starts = !quote && depth == 0 && !cont;
        for (const char *q = p; q < end && (*q == ' ' || *q == '\t' || *q == '\f'); q++)
            col = *q == '\t' ? (col / 8 + 1) * 8 : col + 1;
        l->indent = col;
        l->blank = 1;
        for (const char *q = p; q < end; q++)
            if (!isspace((unsigned char)*q)) {
                l->blank = *q == '#';
                break;
            }
        cont = 0;
        while (p < end) {
            char c = *p;
            if (quote) {
                if (c == '\\') {
                    p += 2;
                } else if (c == quote && (!triple || (end - p >= 3 && p[1] == quote && p[2] == quote))) {
                    p += triple ? 3 : 1;
                    quote = 0;
                } else {
                    p++;
                }
                continue;
            }
            if (c == '#')
                break;
            if (c == '\'' || c == '"') {
                quote = c;
                triple = end - p >= 3 && p[1] == c && p[2] == c;
                if (triple)
                    open = i;
                p += triple ? 3 : 1;
                continue;
            }
            if (c == '(' || c == '[' || c == '{')
                depth++;
            else if ((c == ')' || c == ']' || c == '}') && depth > 0)
                depth--;
            else if (c == '\\' && p + 1 == end)
                cont = 1;
            p++;
        }
        /* a one-quote string ends with its line unless a backslash continues it */
        if (quote && !triple && !(l->len && end[-1] == '\\'))
            quote = 0;
        if (quote && !triple)
            cont = 1;
    }
}

static int ts_ident_char(char c)
{
    return isalnum((unsigned char)c) || c == '_';
}

/* The name of the function a statement line defines ("def NAME(" or "async def NAME("), or 0. */
static size_t ts_def_name(const struct ts_line *l, const char **name)
{
    const char *p = l->text, *end = l->text + l->len, *s;
    while (p < end && isspace((unsigned char)*p))
        p++;
    if (end - p > 6 && memcmp(p, "async", 5) == 0 && isspace((unsigned char)p[5])) {
        p += 5;
        while (p < end && isspace((unsigned char)*p))
            p++;
    }
    if (end - p < 5 || memcmp(p, "def", 3) != 0 || !isspace((unsigned char)p[3]))
        return 0;
    p += 3;
    while (p < end && isspace((unsigned char)*p))
        p++;
    for (s = p; p < end && ts_ident_char(*p); p++)
        ;
    if (p == s || isdigit((unsigned char)*s))
        return 0;
    *name = s;
    return (size_t)(p - s);
}

/* Whether the function defined at lines[d] is a Triton function: one of its decorators is a name whose last
 * part is jit (@triton.jit, @triton.jit(debug=True), @jit), or it is one of Inductor's (def triton_...). */
static int ts_is_triton(const struct ts_file *f, size_t first, size_t d, const char *name, size_t n)
{
    if (n > 7 && memcmp(name, "triton_", 7) == 0)
        return 1;
    for (size_t k = d; k-- > first;) {
        const struct ts_line *l = &f->lines[k];
        const char *p = l->text, *end = l->text + l->len, *last;
        if (!l->starts || l->blank)
            continue; /* a decorator's continuation lines, blank lines and comments between decorators */
        while (p < end && isspace((unsigned char)*p))
            p++;
        if (l->indent != f->lines[d].indent || p == end || *p != '@')
            return 0;
        for (p++, last = p; p < end && (ts_ident_char(*p) || *p == '.' || *p == ' '); p++)
            if (*p == '.')
                last = p + 1;
        while (p > last && p[-1] == ' ')
            p--;
        if (p - last == 3 && memcmp(last, "jit", 3) == 0)
            return 1;
    }
    return 0;
}

/* The line after the body of the function defined at lines[d] (the body ends before the next statement that is
 * indented no deeper than the def). */
static size_t ts_body_end(const struct ts_file *f, size_t d, size_t last)
{
    size_t k;
    for (k = d + 1; k < last; k++)
        if (f->lines[k].starts && !f->lines[k].blank && f->lines[k].indent <= f->lines[d].indent)
            break;
    return k;
}

/* Whether lines[from..to) call name ("name(" with no identifier character before it). */
static int ts_calls(const struct ts_file *f, size_t from, size_t to, const char *name, size_t n)
{
    for (size_t k = from; k < to; k++) {
        const struct ts_line *l = &f->lines[k];
        const char *p = l->text, *end = l->text + l->len;
        while ((p = memmem(p, (size_t)(end - p), name, n)) != NULL) {
            const char *q = p + n;
            int before = p > l->text && ts_ident_char(p[-1]);
            while (q < end && (*q == ' ' || *q == '\t'))
                q++;
            if (!before && q < end && *q == '(')
                return 1;
            p += n;
        }
    }
    return 0;
}

/* Whether the space-separated list names holds name. */
static int ts_listed(const char *names, const char *name, size_t n)
{
    for (const char *p = names; *p;) {
        const char *e = strchr(p, ' ');
        size_t m = e ? (size_t)(e - p) : strlen(p);
        if (m == n && memcmp(p, name, n) == 0)
            return 1;
        p += m + (e != NULL);
    }
    return 0;
}

/* function, then the Triton functions of lines[first..last) that call one of the names already listed, until
 * no more join (at most TRITONSRC_MAX_NAMES). */
static char *ts_kernels(const struct ts_file *f, size_t first, size_t last, const char *function)
{
    size_t cap = strlen(function) + 1, used = strlen(function), count = 1;
    char *names = malloc(cap);
    int grew = 1;
    if (!names)
        return NULL;
    memcpy(names, function, used + 1);
    while (grew && count < TRITONSRC_MAX_NAMES) {
        grew = 0;
        for (size_t d = first; d < last && count < TRITONSRC_MAX_NAMES; d++) {
            const char *name, *p;
            size_t n, end;
            int calls = 0;
            char *more;
            if (!f->lines[d].starts || f->lines[d].blank || !(n = ts_def_name(&f->lines[d], &name)) ||
                ts_listed(names, name, n) || !ts_is_triton(f, first, d, name, n))
                continue;
            end = ts_body_end(f, d, last);
            for (p = names; *p && !calls;) {
                const char *e = strchr(p, ' ');
                size_t m = e ? (size_t)(e - p) : strlen(p);
                calls = ts_calls(f, d + 1, end, p, m);
                p += m + (e != NULL);
            }
            if (!calls)
                continue;
            if (!(more = realloc(names, used + n + 2))) {
                free(names);
                return NULL;
            }
            names = more;
            names[used++] = ' ';
            memcpy(names + used, name, n);
            used += n;
            names[used] = '\0';
            count++;
            grew = 1;
        }
    }
    return names;
}

/* Finds the Triton function holding lines[t] among lines[first..last), already scanned as code. nested: how many
 * strings deep this is (Inductor's output code holds each kernel's source in a string). */
static int ts_find(struct ts_file *f, size_t first, size_t last, size_t t, long line, int nested,
                   struct tritonsrc_found *out, char *why, size_t whylen)
{
    size_t s = t, j, d = 0, n = 0;
    const char *name = NULL;
    int limit, found = 0;

    if (f->lines[t].in_triple && f->lines[t].string_open >= first && nested < 2) {
        /* inside a string: code held as text (a kernel's source in a module that compiles it); scan it as code */
        size_t open = f->lines[t].string_open, end = open + 1;
        while (end < last && f->lines[end].in_triple && f->lines[end].string_open == open)
            end++;
        ts_scan(f, open + 1, end);
        return ts_find(f, open + 1, end, t, line, nested + 1, out, why, whylen);
    }
    while (s > first && !f->lines[s].starts)
        s--;
    limit = f->lines[s].indent;
    for (j = s; limit > 0 && j-- > first;) {
        const struct ts_line *l = &f->lines[j];
        if (!l->starts || l->blank || l->indent >= limit)
            continue;
        if ((n = ts_def_name(l, &name)) != 0) {
            d = j;
            found = 1;
            break;
        }
        limit = l->indent; /* a block (if, for, with, class) that holds the line: its function is further up */
    }
    if (!found) {
        ts_why(why, whylen, "line %ld is not inside a function", line);
        return ESRCH;
    }
    if (!ts_is_triton(f, first, d, name, n)) {
        ts_why(why, whylen, "line %ld is in %.*s, which is not a @triton.jit function", line, (int)n, name);
        return ESRCH;
    }
    if (!(out->function = strndup(name, n)) || !(out->kernels = ts_kernels(f, first, last, out->function))) {
        tritonsrc_free(out);
        return ENOMEM;
    }
    return 0;
}

int tritonsrc_find_text(const char *text, size_t len, long line, struct tritonsrc_found *out, char *why, size_t whylen)
{
    struct ts_file f = {NULL, 0};
    size_t cap = 0, i;
    int rc;

    memset(out, 0, sizeof *out);
    for (i = 0; i < len;) {
        const char *nl = memchr(text + i, '\n', len - i);
        size_t e = nl ? (size_t)(nl - text) : len;
        if (f.n == cap) {
            struct ts_line *more = realloc(f.lines, (cap = cap ? 2 * cap : 256) * sizeof *more);
            if (!more) {
                free(f.lines);
                return ENOMEM;
            }
            f.lines = more;
        }
        memset(&f.lines[f.n], 0, sizeof f.lines[f.n]);
        f.lines[f.n].text = text + i;
        f.lines[f.n].len = e - i - (e > i && text[e - 1] == '\r');
        f.n++;
        i = e + 1;
    }
    if (line < 1 || (size_t)line > f.n) {
        ts_why(why, whylen, "it has %zu lines, not %ld (it changed after the kernel was compiled)", f.n, line);
        free(f.lines);
        return ESRCH;
    }
    ts_scan(&f, 0, f.n);
    rc = ts_find(&f, 0, f.n, (size_t)line - 1, line, 0, out, why, whylen);
    free(f.lines);
    return rc;
}

int tritonsrc_find(const char *path, long line, struct tritonsrc_found *out, char *why, size_t whylen)
{
    /* the path comes from a program's output: non-blocking, so that a FIFO or a terminal named there is refused
     * below rather than waited on, and only a regular file is read */
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
    struct stat sb;
    FILE *fp = NULL;
    char *text;
    long size;
    size_t got;
    int rc;

    memset(out, 0, sizeof *out);
    if (fd >= 0 && (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode))) {
        close(fd);
        ts_why(why, whylen, "it is not a regular file");
        return EINVAL;
    }
    if (fd < 0 || !(fp = fdopen(fd, "rb"))) {
        rc = errno;
        if (fd >= 0)
            close(fd);
        ts_why(why, whylen, "it could not be read (%s)", strerror(rc));
        return rc;
    }
    if (fseek(fp, 0, SEEK_END) != 0 || (size = ftell(fp)) < 0 || fseek(fp, 0, SEEK_SET) != 0) {
        rc = errno ? errno : EIO;
        fclose(fp);
        ts_why(why, whylen, "it could not be read (%s)", strerror(rc));
        return rc;
    }
    if (size > TRITONSRC_MAX_BYTES) {
        fclose(fp);
        ts_why(why, whylen, "it is larger than %ld MiB", TRITONSRC_MAX_BYTES >> 20);
        return EFBIG;
    }
    if (!(text = malloc((size_t)size + 1))) {
        fclose(fp);
        return ENOMEM;
    }
    got = fread(text, 1, (size_t)size, fp);
    if (ferror(fp)) {
        rc = errno ? errno : EIO;
        fclose(fp);
        free(text);
        ts_why(why, whylen, "it could not be read (%s)", strerror(rc));
        return rc;
    }
    fclose(fp);
    rc = tritonsrc_find_text(text, got, line, out, why, whylen);
    free(text);
    return rc;
}

void tritonsrc_free(struct tritonsrc_found *f)
{
    free(f->function);
    free(f->kernels);
    f->function = f->kernels = NULL;
}

int tritonsrc_same_kernel(const char *name, size_t n, const char *function)
{
    size_t m = strlen(function), i;
    long want = 0;
    if (!m || n < m || memcmp(name, function, m) != 0)
        return 0;
    if (n == m)
        return 1;
    if (name[m] != '_' || n == m + 1)
        return 0;
    for (i = m + 1; i < n;) {
        size_t from = i;
        long v = 0;
        while (i < n && isdigit((unsigned char)name[i]) && i - from < 6)
            v = v * 10 + (name[i++] - '0');
        if (i == from || v != want++)
            return 0;
        while (i < n && (name[i] == 'c' || name[i] == 'd' || name[i] == 'e'))
            i++;
    }
    return 1;
}
