/* Decoding one disassembled GPU instruction's memory operand (see sass.h). SASS spells an access as an opcode with
 * dot-separated modifiers, then operands; the memory operand is the bracketed one, optionally after a descriptor
 * ("desc[UR8]"): "[R2.64+UR4+0x10]". Sizes come from the type modifiers (.U8, .S16, .64, .128; 32 bits without
 * one), the space from the opcode (LDG/STG/ATOMG/RED global, LDS/STS/ATOMS shared, LDL/STL local, LD/ST/ATOM
 * generic). */
#include "sass.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The opcodes that touch memory, by their stem (what precedes the first dot). */
static const struct {
    const char *stem;
    enum sass_kind kind;
    enum sass_space space;
} sass_ops[] = {
    {"LDG", SASS_LOAD, SASS_GLOBAL},     {"STG", SASS_STORE, SASS_GLOBAL},    {"ATOMG", SASS_ATOMIC, SASS_GLOBAL},
    {"RED", SASS_ATOMIC, SASS_GLOBAL},   {"REDG", SASS_ATOMIC, SASS_GLOBAL},  {"LDS", SASS_LOAD, SASS_SHARED},
    {"STS", SASS_STORE, SASS_SHARED},    {"ATOMS", SASS_ATOMIC, SASS_SHARED}, {"LDL", SASS_LOAD, SASS_LOCAL},
    {"STL", SASS_STORE, SASS_LOCAL},     {"LD", SASS_LOAD, SASS_GENERIC},     {"ST", SASS_STORE, SASS_GENERIC},
    {"ATOM", SASS_ATOMIC, SASS_GENERIC},
};

const char *sass_kind_name(enum sass_kind k)
{
    return k == SASS_LOAD ? "load" : k == SASS_STORE ? "store" : k == SASS_ATOMIC ? "atomic" : "access";
}

const char *sass_space_name(enum sass_space s)
{
    return s == SASS_GLOBAL ? "global" : s == SASS_SHARED ? "shared" : s == SASS_LOCAL ? "local" : "generic";
}

/* Bytes per lane from the opcode's modifiers ("LDG.E.64.CONSTANT" -> 8). */
static unsigned sass_size(const char *mods, size_t n)
{
    unsigned size = 4;
    for (size_t i = 0; i < n;) {
        size_t j = i;
        while (j < n && mods[j] != '.')
            j++;
        size_t l = j - i;
        const char *m = mods + i;
        if ((l == 2 && (!strncmp(m, "U8", 2) || !strncmp(m, "S8", 2))))
            size = 1;
        else if (l == 3 && (!strncmp(m, "U16", 3) || !strncmp(m, "S16", 3) || !strncmp(m, "F16", 3)))
            size = 2;
        else if ((l == 2 && !strncmp(m, "64", 2)) ||
                 (l == 3 && (!strncmp(m, "U64", 3) || !strncmp(m, "S64", 3) || !strncmp(m, "F64", 3))))
            size = 8;
        else if (l == 3 && !strncmp(m, "128", 3))
            size = 16;
        i = j + (j < n);
    }
    return size;
}

/* Copies a register name ("R2", "UR4", "RZ") at *p into out; 0, or -1 when *p holds none. */
static int sass_reg(const char **p, char out[SASS_REG_NAME])
{
    const char *s = *p;
    size_t n = 0;
    if (s[0] == 'U' && s[1] == 'R')
        n = 2;
    else if (s[0] == 'R')
        n = 1;
    else
        return -1;
    if (s[n] == 'Z') {
        n++;
    } else {
        if (!isdigit((unsigned char)s[n]))
            return -1;
        while (isdigit((unsigned char)s[n]))
            n++;
    }
    if (n >= SASS_REG_NAME)
        return -1;
    memcpy(out, s, n);
    out[n] = '\0';
    *p = s + n;
    return 0;
}

/* offset + sign * v, as the 64-bit address arithmetic the GPU does: modulo 2^64 ("[R2-0x8000000000000000]" has no
 * signed value, and a sum of immediates may pass INT64_MAX), never a signed overflow. */
static int64_t sass_add(int64_t offset, int sign, unsigned long long v)
{
    uint64_t sum = (uint64_t)offset + (sign < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v);
    int64_t out;
    memcpy(&out, &sum, sizeof out); /* the same bits, without an out-of-range conversion */
    return out;
}

int sass_parse(const char *insn, struct sass_access *a)
{
    memset(a, 0, sizeof *a);
    if (!insn)
        return -1;
    const char *p = insn;
    while (*p == ' ' || *p == '\t')
        p++;
    if (*p == '@') { /* a predicate: "@P0 ", "@!P1 " */
        while (*p && *p != ' ' && *p != '\t')
            p++;
        while (*p == ' ' || *p == '\t')
            p++;
    }
    const char *op = p;
    while (*p && *p != ' ' && *p != '\t')
        p++;
    size_t oplen = (size_t)(p - op), stem = 0;
    while (stem < oplen && op[stem] != '.')
        stem++;
    for (size_t i = 0; i < sizeof sass_ops / sizeof sass_ops[0]; i++)
        if (strlen(sass_ops[i].stem) == stem && !strncmp(op, sass_ops[i].stem, stem)) {
            a->kind = sass_ops[i].kind;
            a->space = sass_ops[i].space;
        }
    if (a->kind == SASS_NONE)
        return -1;
    a->size = sass_size(op + stem, oplen - stem);
    /* a load's or an atomic's destination: the first general register before the memory operand, not "PT" or
     * "RZ" ("LDG.E.64 R4, desc[...]", "ATOMG.E.ADD PT, R0, desc[...]") */
    if (a->kind == SASS_LOAD || a->kind == SASS_ATOMIC) {
        for (const char *d = p; *d && *d != '['; d++) {
            if (*d == 'R' && (d == p || d[-1] == ' ' || d[-1] == ',') && isdigit((unsigned char)d[1])) {
                const char *e = d;
                if (sass_reg(&e, a->dest) == 0) {
                    a->ndest = a->size > 4 ? a->size / 4 : 1;
                    break;
                }
            }
            if (!strncmp(d, "desc", 4))
                break;
        }
    }
    /* the memory operand: the first bracket that does not open a descriptor ("desc[UR8]") */
    const char *br = p;
    for (;;) {
        br = strchr(br, '[');
        if (!br)
            goto not_memory;
        if (br >= p + 4 && !strncmp(br - 4, "desc", 4)) {
            br = strchr(br, ']');
            if (!br)
                goto not_memory;
            continue;
        }
        break;
    }
    const char *q = br + 1;
    int sign = 1;
    while (*q && *q != ']') {
        if (*q == ' ' || *q == '+') {
            q++;
            sign = 1;
        } else if (*q == '-') {
            q++;
            sign = -1;
        } else if (q[0] == 'U' && q[1] == 'R') {
            if (sass_reg(&q, a->uniform) != 0)
                goto not_memory;
            if (!strncmp(q, ".64", 3)) {
                a->uniform_wide = 1;
                q += 3;
            }
        } else if (*q == 'R') {
            if (sass_reg(&q, a->base) != 0)
                goto not_memory;
            if (!strncmp(q, ".64", 3)) {
                a->wide = 1;
                q += 3;
            } else if (!strncmp(q, ".U32", 4)) {
                q += 4;
            }
        } else if (q[0] == '0' && (q[1] == 'x' || q[1] == 'X')) {
            char *end;
            unsigned long long v = strtoull(q, &end, 16);
            a->offset = sass_add(a->offset, sign, v);
            q = end;
        } else if (isdigit((unsigned char)*q)) {
            char *end;
            unsigned long long v = strtoull(q, &end, 10);
            a->offset = sass_add(a->offset, sign, v);
            q = end;
        } else {
            goto not_memory; /* an operand form the decoder does not know */
        }
    }
    if (*q != ']')
        goto not_memory;
    if (!strcmp(a->base, "RZ"))
        a->base[0] = '\0';
    return 0;
not_memory:
    memset(a, 0, sizeof *a);
    return -1;
}

/* A register's value, and for a wide base the pair's high half from the next register. */
static int sass_value(const char *name, int wide, sass_reg_fn reg, void *arg, uint64_t *v)
{
    uint64_t lo = 0, hi = 0;
    if (reg(arg, name, &lo) != 0)
        return -1;
    lo &= 0xffffffffu;
    if (wide) {
        char next[32];
        const char *digits = name + (name[0] == 'U' ? 2 : 1);
        long n = strtol(digits, NULL, 10) + 1;
        if (n > 999 || snprintf(next, sizeof next, "%.*s%ld", (int)(digits - name), name, n) >= (int)sizeof next)
            return -1;
        if (reg(arg, next, &hi) != 0)
            return -1;
        hi &= 0xffffffffu;
    }
    *v = hi << 32 | lo;
    return 0;
}

/* Whether register r (a general register "Rn") is among the n from first on. */
static int sass_among(const char *r, const char *first, unsigned n)
{
    if (r[0] != 'R' || first[0] != 'R' || !isdigit((unsigned char)r[1]) || !isdigit((unsigned char)first[1]))
        return 0;
    long x = strtol(r + 1, NULL, 10), f = strtol(first + 1, NULL, 10);
    return x >= f && x < f + (long)n;
}

/* The address, or with low_only only its low 32 bits, which need only the low registers: a load into the high half
 * of its own address pair leaves them. */
static int sass_operand(const struct sass_access *a, sass_reg_fn reg, void *arg, int low_only, uint64_t *out)
{
    uint64_t base = 0, u = 0;
    if (a->kind == SASS_NONE)
        return -1;
    if (a->dest[0] && a->base[0]) {
        char hi[32];
        snprintf(hi, sizeof hi, "R%ld", strtol(a->base + 1, NULL, 10) % 1000 + 1);
        if (sass_among(a->base, a->dest, a->ndest) || (!low_only && a->wide && sass_among(hi, a->dest, a->ndest)))
            return -2;
    }
    if (a->base[0] && sass_value(a->base, a->wide && !low_only, reg, arg, &base) != 0)
        return -1;
    if (a->uniform[0] && sass_value(a->uniform, a->uniform_wide && !low_only, reg, arg, &u) != 0)
        return -1;
    *out = base + u + (uint64_t)a->offset;
    return 0;
}

int sass_address(const struct sass_access *a, sass_reg_fn reg, void *arg, uint64_t *address)
{
    return sass_operand(a, reg, arg, 0, address);
}

int sass_address_low32(const struct sass_access *a, sass_reg_fn reg, void *arg, uint32_t *low)
{
    uint64_t v;
    int rc = sass_operand(a, reg, arg, 1, &v);
    if (rc == 0)
        *low = (uint32_t)v;
    return rc;
}
