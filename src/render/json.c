/* The JSON parser, DOM accessors and DOM writer declared in json.h. Parsing is recursive descent with an
 * explicit depth limit; strings are validated as UTF-8 and unescaped (\uXXXX, surrogate pairs included) as they
 * are read. Output goes through the jw writer so that escaping lives in one place (jsonw.c). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "json.h"
#include "../base/jsonw.h"

#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Parser state: a cursor over the input and the first error met. */
struct json_parser {
    const char *start;      /* first byte of the input, for offsets */
    const char *p;          /* next byte to read */
    const char *end;        /* one past the last byte */
    int depth;              /* arrays/objects currently open */
    struct json_error *err; /* where to describe a failure; may be NULL */
};

static int json__fail(struct json_parser *ps, const char *at, int rc, const char *fmt, ...)
{
    if (ps->err) {
        va_list ap;
        ps->err->offset = (size_t)(at - ps->start);
        va_start(ap, fmt);
        vsnprintf(ps->err->msg, sizeof ps->err->msg, fmt, ap);
        va_end(ap);
    }
    return rc;
}

/* Names a byte for an error message: printable characters quoted, others in hex. */
static const char *json__show(const struct json_parser *ps, char *buf, size_t n)
{
    if (ps->p >= ps->end)
        snprintf(buf, n, "end of input");
    else if ((unsigned char)*ps->p >= 0x20 && (unsigned char)*ps->p < 0x7f)
        snprintf(buf, n, "'%c'", *ps->p);
    else
        snprintf(buf, n, "byte 0x%02x", (unsigned char)*ps->p);
    return buf;
}

static void json__ws(struct json_parser *ps)
{
    while (ps->p < ps->end && (*ps->p == ' ' || *ps->p == '\t' || *ps->p == '\n' || *ps->p == '\r'))
        ps->p++;
}

struct json *json_new(enum json_type type)
{
    struct json *n = calloc(1, sizeof *n);
    if (n)
        n->type = type;
    return n;
}

void json_free(struct json *node)
{
    size_t i;
    if (!node)
        return;
    for (i = 0; i < node->len && node->kids; i++) {
        json_free(node->kids[i]);
        if (node->keys)
            free(node->keys[i]);
    }
    free(node->kids);
    free(node->keys);
    free(node->str);
    free(node);
}

/* Makes room for one more child; objects also get a key slot. */
static int json__grow(struct json *n)
{
    size_t cap;
    struct json **kids;
    if (n->len < n->cap)
        return JSON_OK;
    cap = n->cap ? n->cap * 2 : 4;
    kids = realloc(n->kids, cap * sizeof *kids);
    if (!kids)
        return JSON_ENOMEM;
    n->kids = kids;
    if (n->type == JSON_OBJ) {
        char **keys = realloc(n->keys, cap * sizeof *keys);
        if (!keys)
            return JSON_ENOMEM;
        n->keys = keys;
    }
    n->cap = cap;
    return JSON_OK;
}

static int json__hex4(const char *s, unsigned *out)
{
    unsigned v = 0;
    int i;
    for (i = 0; i < 4; i++) {
        char c = s[i];
        v <<= 4;
        if (c >= '0' && c <= '9')
            v |= (unsigned)(c - '0');
        else if (c >= 'a' && c <= 'f')
            v |= (unsigned)(c - 'a' + 10);
        else if (c >= 'A' && c <= 'F')
            v |= (unsigned)(c - 'A' + 10);
        else
            return -1;
    }
    *out = v;
    return 0;
}

static size_t json__utf8_put(char *o, unsigned cp)
{
    if (cp < 0x80) {
        o[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        o[0] = (char)(0xc0 | (cp >> 6));
        o[1] = (char)(0x80 | (cp & 0x3f));
        return 2;
    }
    if (cp < 0x10000) {
        o[0] = (char)(0xe0 | (cp >> 12));
        o[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
        o[2] = (char)(0x80 | (cp & 0x3f));
        return 3;
    }
    o[0] = (char)(0xf0 | (cp >> 18));
    o[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
    o[2] = (char)(0x80 | ((cp >> 6) & 0x3f));
    o[3] = (char)(0x80 | (cp & 0x3f));
    return 4;
}

/* Length of the well-formed UTF-8 sequence at s (at most n bytes), or 0 when it is malformed: overlong forms,
 * UTF-16 surrogates and code points above U+10FFFF are refused as RFC 3629 requires. */
static size_t json__utf8_len(const unsigned char *s, size_t n)
{
    unsigned cp;
    size_t len, i;
    if (s[0] < 0x80)
        return 1;
    if (s[0] >= 0xc2 && s[0] <= 0xdf)
        len = 2, cp = s[0] & 0x1fu;
    else if (s[0] >= 0xe0 && s[0] <= 0xef)
        len = 3, cp = s[0] & 0x0fu;
    else if (s[0] >= 0xf0 && s[0] <= 0xf4)
        len = 4, cp = s[0] & 0x07u;
    else
        return 0;
    if (n < len)
        return 0;
    for (i = 1; i < len; i++) {
        if ((s[i] & 0xc0) != 0x80)
            return 0;
        cp = (cp << 6) | (s[i] & 0x3fu);
    }
    if ((len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000) || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
        return 0;
    return len;
}

/* Reads a string starting at the opening quote; *out gets a malloc'd unescaped copy. */
static int json__string(struct json_parser *ps, char **out, size_t *outlen)
{
    const char *open = ps->p;
    const char *q;
    char *buf, *o;
    char what[32];

    ps->p++; /* the opening quote */
    /* First find the closing quote so the buffer can be sized: unescaping never makes a string longer. */
    for (q = ps->p; q < ps->end && *q != '"'; q++)
        if (*q == '\\' && q + 1 < ps->end)
            q++;
    if (q >= ps->end)
        return json__fail(ps, open, JSON_ESYNTAX, "unterminated string");
    buf = malloc((size_t)(q - ps->p) + 1);
    if (!buf)
        return json__fail(ps, open, JSON_ENOMEM, "out of memory");
    o = buf;
    while (*ps->p != '"') {
        unsigned char c = (unsigned char)*ps->p;
        if (c < 0x20) {
            free(buf);
            return json__fail(ps, ps->p, JSON_ESYNTAX, "unescaped control character %s in a string",
                              json__show(ps, what, sizeof what));
        }
        if (c == '\\') {
            const char *esc = ps->p;
            char e = ps->p[1];
            unsigned cp;
            ps->p += 2;
            switch (e) {
            case '"':
                *o++ = '"';
                continue;
            case '\\':
                *o++ = '\\';
                continue;
            case '/':
                *o++ = '/';
                continue;
            case 'b':
                *o++ = '\b';
                continue;
            case 'f':
                *o++ = '\f';
                continue;
            case 'n':
                *o++ = '\n';
                continue;
            case 'r':
                *o++ = '\r';
                continue;
            case 't':
                *o++ = '\t';
                continue;
            case 'u':
                break;
            default:
                free(buf);
                return json__fail(ps, esc, JSON_ESYNTAX, "invalid escape sequence in a string");
            }
            if (q - ps->p < 4 || json__hex4(ps->p, &cp)) {
                free(buf);
                return json__fail(ps, esc, JSON_ESYNTAX, "\\u must be followed by four hex digits");
            }
            ps->p += 4;
            if (cp >= 0xdc00 && cp <= 0xdfff) {
                free(buf);
                return json__fail(ps, esc, JSON_ESYNTAX, "lone low surrogate \\u%04x in a string", cp);
            }
            if (cp >= 0xd800 && cp <= 0xdbff) {
                unsigned lo;
                if (q - ps->p < 6 || ps->p[0] != '\\' || ps->p[1] != 'u' || json__hex4(ps->p + 2, &lo) || lo < 0xdc00 ||
                    lo > 0xdfff) {
                    free(buf);
                    return json__fail(ps, esc, JSON_ESYNTAX,
                                      "high surrogate \\u%04x is not followed by a low surrogate", cp);
                }
                ps->p += 6;
                cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
            }
            o += json__utf8_put(o, cp);
            continue;
        }
        if (c < 0x80) {
            *o++ = (char)c;
            ps->p++;
        } else {
            size_t n = json__utf8_len((const unsigned char *)ps->p, (size_t)(q - ps->p));
            if (!n) {
                free(buf);
                return json__fail(ps, ps->p, JSON_ESYNTAX, "invalid UTF-8 in a string");
            }
            memcpy(o, ps->p, n);
            o += n;
            ps->p += n;
        }
    }
    ps->p++; /* the closing quote */
    *o = '\0';
    *out = buf;
    *outlen = (size_t)(o - buf);
    return JSON_OK;
}

static int json__number(struct json_parser *ps, struct json *n)
{
    const char *s = ps->p;
    int integral = 1;
    char tmp[512];
    size_t len;
    char *endp;

    if (ps->p < ps->end && *ps->p == '-')
        ps->p++;
    if (ps->p >= ps->end || *ps->p < '0' || *ps->p > '9')
        return json__fail(ps, s, JSON_ESYNTAX, "invalid number");
    if (*ps->p == '0') {
        ps->p++;
        if (ps->p < ps->end && *ps->p >= '0' && *ps->p <= '9')
            return json__fail(ps, s, JSON_ESYNTAX, "numbers may not have leading zeros");
    } else {
        while (ps->p < ps->end && *ps->p >= '0' && *ps->p <= '9')
            ps->p++;
    }
    if (ps->p < ps->end && *ps->p == '.') {
        integral = 0;
        ps->p++;
        if (ps->p >= ps->end || *ps->p < '0' || *ps->p > '9')
            return json__fail(ps, ps->p, JSON_ESYNTAX, "a digit must follow the decimal point");
        while (ps->p < ps->end && *ps->p >= '0' && *ps->p <= '9')
            ps->p++;
    }
    if (ps->p < ps->end && (*ps->p == 'e' || *ps->p == 'E')) {
        integral = 0;
        ps->p++;
        if (ps->p < ps->end && (*ps->p == '+' || *ps->p == '-'))
            ps->p++;
        if (ps->p >= ps->end || *ps->p < '0' || *ps->p > '9')
            return json__fail(ps, ps->p, JSON_ESYNTAX, "a digit must follow the exponent mark");
        while (ps->p < ps->end && *ps->p >= '0' && *ps->p <= '9')
            ps->p++;
    }
    len = (size_t)(ps->p - s);
    if (len >= sizeof tmp)
        return json__fail(ps, s, JSON_ESYNTAX, "number has too many digits");
    memcpy(tmp, s, len);
    tmp[len] = '\0';
    errno = 0;
    n->num = strtod(tmp, &endp);
    if (errno == ERANGE && (n->num > 1.0 || n->num < -1.0))
        return json__fail(ps, s, JSON_ESYNTAX, "number is out of range");
    if (integral) {
        long long v;
        errno = 0;
        v = strtoll(tmp, &endp, 10);
        if (errno == 0 && *endp == '\0') {
            n->inum = v;
            n->is_int = 1;
        }
    }
    return JSON_OK;
}

static int json__literal(struct json_parser *ps, const char *word)
{
    size_t n = strlen(word);
    if ((size_t)(ps->end - ps->p) < n || memcmp(ps->p, word, n) != 0)
        return -1;
    ps->p += n;
    return 0;
}

static int json__value(struct json_parser *ps, struct json **out);

static int json__array(struct json_parser *ps, struct json *arr)
{
    char what[32];
    int rc;
    ps->p++; /* '[' */
    json__ws(ps);
    if (ps->p < ps->end && *ps->p == ']') {
        ps->p++;
        return JSON_OK;
    }
    for (;;) {
        struct json *kid = NULL;
        json__ws(ps);
        rc = json__value(ps, &kid);
        if (rc)
            return rc;
        rc = json__grow(arr);
        if (rc) {
            json_free(kid);
            return json__fail(ps, ps->p, rc, "out of memory");
        }
        arr->kids[arr->len++] = kid;
        json__ws(ps);
        if (ps->p < ps->end && *ps->p == ',') {
            ps->p++;
            json__ws(ps);
            if (ps->p < ps->end && *ps->p == ']')
                return json__fail(ps, ps->p, JSON_ESYNTAX, "trailing comma before ']'");
            continue;
        }
        if (ps->p < ps->end && *ps->p == ']') {
            ps->p++;
            return JSON_OK;
        }
        return json__fail(ps, ps->p, JSON_ESYNTAX, "expected ',' or ']' in an array but found %s",
                          json__show(ps, what, sizeof what));
    }
}

static int json__object(struct json_parser *ps, struct json *obj)
{
    char what[32];
    int rc;
    ps->p++; /* '{' */
    json__ws(ps);
    if (ps->p < ps->end && *ps->p == '}') {
        ps->p++;
        return JSON_OK;
    }
    for (;;) {
        char *key = NULL;
        size_t keylen;
        struct json *kid = NULL;
        json__ws(ps);
        if (ps->p >= ps->end || *ps->p != '"') {
            if (ps->p < ps->end && *ps->p == '}')
                return json__fail(ps, ps->p, JSON_ESYNTAX, "trailing comma before '}'");
            return json__fail(ps, ps->p, JSON_ESYNTAX, "expected a string key in an object but found %s",
                              json__show(ps, what, sizeof what));
        }
        rc = json__string(ps, &key, &keylen);
        if (rc)
            return rc;
        json__ws(ps);
        if (ps->p >= ps->end || *ps->p != ':') {
            free(key);
            return json__fail(ps, ps->p, JSON_ESYNTAX, "expected ':' after an object key but found %s",
                              json__show(ps, what, sizeof what));
        }
        ps->p++;
        json__ws(ps);
        rc = json__value(ps, &kid);
        if (rc) {
            free(key);
            return rc;
        }
        rc = json__grow(obj);
        if (rc) {
            free(key);
            json_free(kid);
            return json__fail(ps, ps->p, rc, "out of memory");
        }
        obj->keys[obj->len] = key;
        obj->kids[obj->len++] = kid;
        json__ws(ps);
        if (ps->p < ps->end && *ps->p == ',') {
            ps->p++;
            continue;
        }
        if (ps->p < ps->end && *ps->p == '}') {
            ps->p++;
            return JSON_OK;
        }
        return json__fail(ps, ps->p, JSON_ESYNTAX, "expected ',' or '}' in an object but found %s",
                          json__show(ps, what, sizeof what));
    }
}

static int json__value(struct json_parser *ps, struct json **out)
{
    struct json *n;
    char what[32];
    int rc = JSON_OK;

    *out = NULL;
    if (ps->p >= ps->end)
        return json__fail(ps, ps->p, JSON_ESYNTAX, "expected a value but the input ended");
    switch (*ps->p) {
    case '{':
    case '[':
        if (ps->depth >= JSON_MAX_DEPTH)
            return json__fail(ps, ps->p, JSON_EDEPTH, "nesting is deeper than %d levels", JSON_MAX_DEPTH);
        n = json_new(*ps->p == '{' ? JSON_OBJ : JSON_ARR);
        if (!n)
            return json__fail(ps, ps->p, JSON_ENOMEM, "out of memory");
        ps->depth++;
        rc = n->type == JSON_OBJ ? json__object(ps, n) : json__array(ps, n);
        ps->depth--;
        break;
    case '"':
        n = json_new(JSON_STR);
        if (!n)
            return json__fail(ps, ps->p, JSON_ENOMEM, "out of memory");
        rc = json__string(ps, &n->str, &n->len);
        break;
    case 't':
    case 'f':
    case 'n':
        n = json_new(*ps->p == 'n' ? JSON_NULL : JSON_BOOL);
        if (!n)
            return json__fail(ps, ps->p, JSON_ENOMEM, "out of memory");
        n->boolean = *ps->p == 't';
        if (json__literal(ps, *ps->p == 't' ? "true" : *ps->p == 'f' ? "false" : "null"))
            rc = json__fail(ps, ps->p, JSON_ESYNTAX, "unknown literal (expected true, false or null)");
        break;
    default:
        if (*ps->p == '-' || (*ps->p >= '0' && *ps->p <= '9')) {
            n = json_new(JSON_NUM);
            if (!n)
                return json__fail(ps, ps->p, JSON_ENOMEM, "out of memory");
            rc = json__number(ps, n);
            break;
        }
        return json__fail(ps, ps->p, JSON_ESYNTAX, "expected a value but found %s", json__show(ps, what, sizeof what));
    }
    if (rc) {
        json_free(n);
        return rc;
    }
    *out = n;
    return JSON_OK;
}

int json_parse(const char *text, size_t len, struct json **out, struct json_error *err)
{
    struct json_parser ps;
    struct json *root = NULL;
    int rc;

    ps.start = ps.p = text ? text : "";
    ps.end = ps.p + (text ? len : 0);
    ps.depth = 0;
    ps.err = err;
    if (err) {
        err->offset = 0;
        err->msg[0] = '\0';
    }
    *out = NULL;
    json__ws(&ps);
    if (ps.p >= ps.end)
        return json__fail(&ps, ps.p, JSON_ESYNTAX, "the input holds no JSON value");
    rc = json__value(&ps, &root);
    if (rc)
        return rc;
    json__ws(&ps);
    if (ps.p < ps.end) {
        json_free(root);
        return json__fail(&ps, ps.p, JSON_ESYNTAX, "unexpected data after the JSON value");
    }
    *out = root;
    return JSON_OK;
}

/* ---- accessors ---- */

const struct json *json_get(const struct json *obj, const char *key)
{
    size_t i;
    if (!obj || obj->type != JSON_OBJ || !key)
        return NULL;
    for (i = 0; i < obj->len; i++)
        if (strcmp(obj->keys[i], key) == 0)
            return obj->kids[i];
    return NULL;
}

size_t json_len(const struct json *node)
{
    return node && (node->type == JSON_ARR || node->type == JSON_OBJ) ? node->len : 0;
}

const struct json *json_at(const struct json *arr, size_t i)
{
    return i < json_len(arr) ? arr->kids[i] : NULL;
}

const char *json_key_at(const struct json *obj, size_t i)
{
    return obj && obj->type == JSON_OBJ && i < obj->len ? obj->keys[i] : NULL;
}

const char *json_str(const struct json *node)
{
    return node && node->type == JSON_STR ? node->str : NULL;
}

int json_num(const struct json *node, double *out)
{
    if (!node || node->type != JSON_NUM)
        return -1;
    *out = node->num;
    return 0;
}

int json_int(const struct json *node, long long *out)
{
    if (!node || node->type != JSON_NUM || !node->is_int)
        return -1;
    *out = node->inum;
    return 0;
}

int json_is(const struct json *node, enum json_type type)
{
    return node && node->type == type;
}

const char *json_get_str(const struct json *obj, const char *key)
{
    return json_str(json_get(obj, key));
}

long long json_get_int(const struct json *obj, const char *key, long long fallback)
{
    long long v;
    return json_int(json_get(obj, key), &v) == 0 ? v : fallback;
}

/* ---- builders ---- */

struct json *json_new_str(const char *s)
{
    struct json *n = json_new(JSON_STR);
    if (!n)
        return NULL;
    n->len = strlen(s);
    n->str = malloc(n->len + 1);
    if (!n->str) {
        free(n);
        return NULL;
    }
    memcpy(n->str, s, n->len + 1);
    return n;
}

struct json *json_new_hex(unsigned long long v)
{
    char s[24];
    snprintf(s, sizeof s, "0x%llx", v);
    return json_new_str(s);
}

struct json *json_new_int(long long v)
{
    struct json *n = json_new(JSON_NUM);
    if (!n)
        return NULL;
    n->num = (double)v;
    n->inum = v;
    n->is_int = 1;
    return n;
}

int json_append(struct json *arr, struct json *kid)
{
    if (!arr || arr->type != JSON_ARR || !kid)
        return JSON_ENOMEM;
    if (json__grow(arr))
        return JSON_ENOMEM;
    arr->kids[arr->len++] = kid;
    return JSON_OK;
}

int json_set(struct json *obj, const char *key, struct json *kid)
{
    size_t i;
    char *k;
    if (!obj || obj->type != JSON_OBJ || !kid)
        return JSON_ENOMEM;
    for (i = 0; i < obj->len; i++) {
        if (strcmp(obj->keys[i], key) == 0) {
            json_free(obj->kids[i]);
            obj->kids[i] = kid;
            return JSON_OK;
        }
    }
    k = strdup(key);
    if (!k || json__grow(obj)) {
        free(k);
        return JSON_ENOMEM;
    }
    obj->keys[obj->len] = k;
    obj->kids[obj->len++] = kid;
    return JSON_OK;
}

/* ---- output ---- */

static void json__dump(const struct json *n, struct jw *w)
{
    size_t i;
    switch (n->type) {
    case JSON_NULL:
        jw_null(w);
        break;
    case JSON_BOOL:
        jw_bool(w, n->boolean);
        break;
    case JSON_NUM:
        if (n->is_int)
            jw_int(w, n->inum);
        else
            jw_double(w, n->num);
        break;
    case JSON_STR:
        jw_strn(w, n->str, n->len);
        break;
    case JSON_ARR:
        jw_arr_begin(w);
        for (i = 0; i < n->len; i++)
            json__dump(n->kids[i], w);
        jw_arr_end(w);
        break;
    case JSON_OBJ:
        jw_obj_begin(w);
        for (i = 0; i < n->len; i++) {
            jw_key(w, n->keys[i]);
            json__dump(n->kids[i], w);
        }
        jw_obj_end(w);
        break;
    }
}

int json_dump(const struct json *node, struct jw *w)
{
    if (!node)
        jw_null(w);
    else
        json__dump(node, w);
    return w->err ? JSON_EWRITE : JSON_OK;
}

int json_put(struct json *obj, const char *key, struct json *kid)
{
    if (!kid)
        return -1;
    if (json_set(obj, key, kid) != 0) {
        json_free(kid);
        return -1;
    }
    return 0;
}
