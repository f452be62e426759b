/* A streaming JSON writer into a growable buffer. It is the only place in culprit that escapes JSON text;
 * the report writer in the library and the CLI's DOM dump both go through it. Not a parser (see json.h). */
#ifndef CULPRIT_JSONW_H
#define CULPRIT_JSONW_H

#include <stddef.h>

#define JW_MAX_DEPTH 32

struct jw {
  char *buf;                         /* the text so far, NUL-terminated when len > 0 */
  size_t len;                        /* bytes used, without the NUL */
  size_t cap;                        /* bytes allocated */
  int err;                           /* set once an allocation failed or nesting broke; output is then unusable */
  int depth;                         /* open objects/arrays */
  int pretty;                        /* non-zero: newline and two-space indent per level */
  unsigned char first[JW_MAX_DEPTH]; /* per level: no element written yet */
  unsigned char after_key;           /* a key was just written: the next value needs no comma */
};

void jw_init(struct jw *w);
void jw_free(struct jw *w);
void jw_obj_begin(struct jw *w);
void jw_obj_end(struct jw *w);
void jw_arr_begin(struct jw *w);
void jw_arr_end(struct jw *w);
void jw_key(struct jw *w, const char *key);
void jw_str(struct jw *w, const char *s); /* NULL writes null */
void jw_strn(struct jw *w, const char *s, size_t n);
void jw_int(struct jw *w, long long v);
void jw_uint(struct jw *w, unsigned long long v);
void jw_double(struct jw *w, double v);
void jw_hex(struct jw *w, unsigned long long v); /* as a string "0x..." */
void jw_bool(struct jw *w, int v);
void jw_null(struct jw *w);

#endif
