/* Streaming JSON writer: commas and nesting are tracked so callers only say what comes next. Strings are
 * escaped per RFC 8259; bytes that are not valid UTF-8 are written as \u00XX so the output always parses, and
 * the characters a terminal would obey (C0 and C1 controls, DEL, bidi overrides) as \uXXXX. */
#include "jsonw.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void jw_init(struct jw *w) { memset(w, 0, sizeof *w); }

void jw_free(struct jw *w) {
  free(w->buf);
  memset(w, 0, sizeof *w);
}

static void put(struct jw *w, const char *s, size_t n) {
  if (w->err) return;
  if (w->len + n + 1 > w->cap) {
    size_t cap = w->cap ? w->cap : 1024;
    while (cap < w->len + n + 1) cap *= 2;
    char *nb = realloc(w->buf, cap);
    if (!nb) {
      w->err = 1;
      return;
    }
    w->buf = nb;
    w->cap = cap;
  }
  memcpy(w->buf + w->len, s, n);
  w->len += n;
  w->buf[w->len] = '\0';
}

static void newline(struct jw *w) {
  if (!w->pretty) return;
  put(w, "\n", 1);
  for (int i = 0; i < w->depth; i++) put(w, "  ", 2);
}

/* Called before every value or key: writes the separating comma unless this is the first element. */
static void sep(struct jw *w) {
  if (w->after_key) {
    w->after_key = 0;
    return;
  }
  if (w->depth == 0) return;
  if (!w->first[w->depth - 1]) put(w, ",", 1);
  w->first[w->depth - 1] = 0;
  newline(w);
}

static void open(struct jw *w, char c) {
  sep(w);
  put(w, &c, 1);
  if (w->depth >= JW_MAX_DEPTH) {
    w->err = 1;
    return;
  }
  w->first[w->depth++] = 1;
}

static void close_(struct jw *w, char c) {
  if (w->depth == 0) {
    w->err = 1;
    return;
  }
  int empty = w->first[w->depth - 1];
  w->depth--;
  if (!empty) newline(w);
  put(w, &c, 1);
}

void jw_obj_begin(struct jw *w) { open(w, '{'); }
void jw_obj_end(struct jw *w) { close_(w, '}'); }
void jw_arr_begin(struct jw *w) { open(w, '['); }
void jw_arr_end(struct jw *w) { close_(w, ']'); }

/* Length of the valid UTF-8 sequence at s (at most n bytes), or 0 if it is not valid. */
static size_t utf8_len(const unsigned char *s, size_t n) {
  size_t len;
  unsigned min;
  unsigned cp;
  if (s[0] < 0x80) return 1;
  if ((s[0] & 0xE0) == 0xC0) {
    len = 2;
    cp = s[0] & 0x1F;
    min = 0x80;
  } else if ((s[0] & 0xF0) == 0xE0) {
    len = 3;
    cp = s[0] & 0x0F;
    min = 0x800;
  } else if ((s[0] & 0xF8) == 0xF0) {
    len = 4;
    cp = s[0] & 0x07;
    min = 0x10000;
  } else
    return 0;
  if (len > n) return 0;
  for (size_t i = 1; i < len; i++) {
    if ((s[i] & 0xC0) != 0x80) return 0;
    cp = (cp << 6) | (s[i] & 0x3F);
  }
  if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
  return len;
}

/* The code point of the valid UTF-8 sequence s[0..len) of 2 to 4 bytes. */
static unsigned utf8_cp(const unsigned char *s, size_t len) {
  unsigned cp = s[0] & (len == 2 ? 0x1F : len == 3 ? 0x0F : 0x07);
  for (size_t i = 1; i < len; i++) cp = (cp << 6) | (s[i] & 0x3F);
  return cp;
}

void jw_strn(struct jw *w, const char *s, size_t n) {
  sep(w);
  put(w, "\"", 1);
  const unsigned char *p = (const unsigned char *)s;
  size_t i = 0;
  while (i < n) {
    unsigned char c = p[i];
    char esc[8];
    if (c == '"' || c == '\\') {
      esc[0] = '\\';
      esc[1] = (char)c;
      put(w, esc, 2);
      i++;
      continue;
    }
    if (c == '\n') {
      put(w, "\\n", 2);
      i++;
      continue;
    }
    if (c == '\t') {
      put(w, "\\t", 2);
      i++;
      continue;
    }
    if (c == '\r') {
      put(w, "\\r", 2);
      i++;
      continue;
    }
    if (c < 0x20 || c == 0x7F) {
      snprintf(esc, sizeof esc, "\\u%04x", c);
      put(w, esc, 6);
      i++;
      continue;
    }
    size_t l = utf8_len(p + i, n - i);
    if (l == 0) {
      snprintf(esc, sizeof esc, "\\u%04x", c);
      put(w, esc, 6);
      i++;
      continue;
    }
    /* the same character written as an escape when a terminal showing the JSON would obey it: C1 controls
     * (U+0080..U+009F) and the bidirectional overrides and isolates */
    unsigned cp = l > 1 ? utf8_cp(p + i, l) : 0x20;
    if ((cp >= 0x80 && cp <= 0x9F) || cp == 0x061C || cp == 0x200E || cp == 0x200F || (cp >= 0x202A && cp <= 0x202E) ||
        (cp >= 0x2066 && cp <= 0x2069)) {
      snprintf(esc, sizeof esc, "\\u%04x", cp);
      put(w, esc, 6);
      i += l;
      continue;
    }
    put(w, s + i, l);
    i += l;
  }
  put(w, "\"", 1);
}

void jw_str(struct jw *w, const char *s) {
  if (!s) {
    jw_null(w);
    return;
  }
  jw_strn(w, s, strlen(s));
}

void jw_key(struct jw *w, const char *key) {
  jw_str(w, key);
  put(w, w->pretty ? ": " : ":", w->pretty ? 2 : 1);
  w->after_key = 1;
}

static void raw(struct jw *w, const char *s) {
  sep(w);
  put(w, s, strlen(s));
}

void jw_int(struct jw *w, long long v) {
  char b[32];
  snprintf(b, sizeof b, "%lld", v);
  raw(w, b);
}

void jw_uint(struct jw *w, unsigned long long v) {
  char b[32];
  snprintf(b, sizeof b, "%llu", v);
  raw(w, b);
}

void jw_double(struct jw *w, double v) {
  char b[40];
  if (v != v || v > 1.7e308 || v < -1.7e308) {
    raw(w, "null");
    return;
  } /* JSON has no NaN/Inf */
  snprintf(b, sizeof b, "%.17g", v);
  raw(w, b);
}

void jw_hex(struct jw *w, unsigned long long v) {
  char b[32];
  snprintf(b, sizeof b, "0x%llx", v);
  jw_str(w, b);
}

void jw_bool(struct jw *w, int v) { raw(w, v ? "true" : "false"); }
void jw_null(struct jw *w) { raw(w, "null"); }
