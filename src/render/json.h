/* A small strict JSON parser into a DOM, with accessors, a few mutators and a way back out through the jw
 * writer. It is made for culprit's own reports (docs/report.md): strict RFC 8259 input, objects that keep key
 * order, a depth limit, and errors that name the byte offset. It is not a streaming or a lenient parser. */
#ifndef CULPRIT_REPORT_JSON_H
#define CULPRIT_REPORT_JSON_H

#include <stddef.h>

struct jw;

enum json_type {
    JSON_NULL,
    JSON_BOOL,
    JSON_NUM,
    JSON_STR,
    JSON_ARR,
    JSON_OBJ,
};

/* One node of the tree. Arrays and objects own their children; objects keep keys in input order. */
struct json {
    enum json_type type; /* which of the members below mean something */
    int boolean;         /* JSON_BOOL: 0 or 1 */
    double num;          /* JSON_NUM: the value as a double */
    long long inum;      /* JSON_NUM: the exact value when is_int */
    int is_int;          /* JSON_NUM: 1 when written without fraction/exponent and it fits a long long */
    char *str;           /* JSON_STR: unescaped UTF-8, NUL-terminated (may hold NULs before len) */
    size_t len;          /* JSON_STR: bytes in str; JSON_ARR/JSON_OBJ: number of children */
    size_t cap;          /* JSON_ARR/JSON_OBJ: allocated slots in kids/keys */
    struct json **kids;  /* JSON_ARR/JSON_OBJ: the children, in order */
    char **keys;         /* JSON_OBJ: key of each child, parallel to kids */
};

/* Where and why a parse failed. */
struct json_error {
    size_t offset; /* byte offset in the input where the problem was found */
    char msg[160]; /* one sentence, without the offset */
};

#define JSON_MAX_DEPTH 256 /* deeper nesting is refused rather than risking the C stack */

/* Result codes; 0 is success. */
enum {
    JSON_OK = 0,
    JSON_ESYNTAX = 1, /* the text is not valid JSON (details in struct json_error) */
    JSON_ENOMEM = 2,  /* an allocation failed */
    JSON_EDEPTH = 3,  /* nesting deeper than JSON_MAX_DEPTH */
    JSON_EWRITE = 4,  /* the jw writer reported an error */
};

/* Parses exactly one JSON value (surrounding whitespace allowed) from text[0..len). On success *out is the
 * tree (free with json_free). On failure *out is NULL and err (if not NULL) says where and why. */
int json_parse(const char *text, size_t len, struct json **out, struct json_error *err);
void json_free(struct json *node);

/* Accessors. All accept NULL and nodes of the wrong type and then return NULL / 0 / the fallback, so a chain
 * like json_str(json_get(json_get(doc, "error"), "name")) never crashes on a missing field. */
const struct json *json_get(const struct json *obj, const char *key); /* first member with that key */
size_t json_len(const struct json *node);                             /* array/object children, else 0 */
const struct json *json_at(const struct json *arr, size_t i);         /* i-th child of array or object */
const char *json_key_at(const struct json *obj, size_t i);            /* i-th key of an object */
const char *json_str(const struct json *node);                        /* string value or NULL */
int json_num(const struct json *node, double *out);                   /* 0 and *out when a number */
int json_int(const struct json *node, long long *out);                /* 0 and *out when an integral number */
int json_is(const struct json *node, enum json_type type);
/* Shorthands for a member of an object: the string, or the integer with a fallback. */
const char *json_get_str(const struct json *obj, const char *key);
long long json_get_int(const struct json *obj, const char *key, long long fallback);

/* Builders and mutators (used when filling in a report). They return NULL / nonzero on allocation failure;
 * a child that was not taken stays the caller's to free. */
struct json *json_new(enum json_type type);
struct json *json_new_str(const char *s);
struct json *json_new_int(long long v);
struct json *json_new_hex(unsigned long long v);     /* a string "0x...", as addresses are written (jw_hex) */
int json_append(struct json *arr, struct json *kid); /* takes ownership of kid */
int json_set(struct json *obj, const char *key, struct json *kid); /* replaces or appends; takes kid */
int json_put(struct json *obj, const char *key, struct json *kid); /* json_set that also frees kid when it
                                                                        * fails, and fails for kid NULL */

/* Writes node and everything below it through the jw writer (set w->pretty first for indented text); returns
 * JSON_OK, or JSON_EWRITE when the writer failed (out of memory, or nesting beyond JW_MAX_DEPTH). */
int json_dump(const struct json *node, struct jw *w);

#endif
