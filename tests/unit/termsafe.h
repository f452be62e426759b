/* The tests' own check that text is fit for a terminal, written apart from src/render's escaping so that a
 * mistake there cannot hide itself: no control character but the newline (C0, DEL), valid UTF-8 only (no
 * overlong form, surrogate or code point past U+10FFFF), no C1 control and no bidi override or isolate. */
#ifndef CULPRIT_TEST_TERMSAFE_H
#define CULPRIT_TEST_TERMSAFE_H

#include <stddef.h>

/* Returns 1 when text[0..n) is safe; else 0 with *bad the offset of the first offending byte. */
__attribute__((unused)) static int termsafe(const char *text, size_t n, size_t *bad) {
  const unsigned char *u = (const unsigned char *)text;
  for (size_t i = 0; i < n; i++) {
    unsigned c = u[i], cp, need, k;
    *bad = i;
    if (c == '\n') continue;
    if (c < 0x20 || c == 0x7f) return 0;
    if (c < 0x80) continue;
    need = c >= 0xf0 ? 3 : c >= 0xe0 ? 2 : 1;
    if (c < 0xc2 || c > 0xf4 || i + need >= n) return 0;
    cp = c & (need == 1 ? 0x1f : need == 2 ? 0x0f : 0x07);
    for (k = 1; k <= need; k++) {
      if ((u[i + k] & 0xc0) != 0x80) return 0;
      cp = cp << 6 | (u[i + k] & 0x3f);
    }
    if ((need == 2 && cp < 0x800) || (need == 3 && (cp < 0x10000 || cp > 0x10ffff)) || (cp >= 0xd800 && cp <= 0xdfff) ||
        cp <= 0x9f || cp == 0x061c || cp == 0x200e || cp == 0x200f || (cp >= 0x202a && cp <= 0x202e) ||
        (cp >= 0x2066 && cp <= 0x2069))
      return 0;
    i += need;
  }
  return 1;
}

#endif
