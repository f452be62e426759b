/* What addr.c (the answers) shares with addr_text.c (the answers as text). */
#ifndef CULPRIT_REPORT_ADDR_INT_H
#define CULPRIT_REPORT_ADDR_INT_H

#include <stdint.h>

struct json;
struct addr_range;

/* An address field of obj ("0x7f..." or a number) into *out; 0, or -1 when absent or malformed. */
int addr_field(const struct json *obj, const char *key, uint64_t *out);
/* Whether range r is of this kind ("vm", "reserved", "host", ...). */
int addr_is_kind(const struct addr_range *r, const char *kind);

#endif
