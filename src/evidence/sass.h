/* The memory access of one GPU instruction as a debugger disassembles it (sass.c): "STG.E desc[UR8][R2.64+0x2],R5"
 * is a 4-byte store to global memory at R2:R3 + 2. With the faulting lane's registers, the address it touched.
 * Reads text only; knows the load, store and atomic forms of global, shared, local and generic memory. */
#ifndef CULPRIT_CLI_SASS_H
#define CULPRIT_CLI_SASS_H

#include <stdint.h>

enum sass_kind { SASS_NONE = 0, SASS_LOAD, SASS_STORE, SASS_ATOMIC };
enum sass_space { SASS_GENERIC = 0, SASS_GLOBAL, SASS_SHARED, SASS_LOCAL };

#define SASS_REG_NAME 8 /* longest register name kept, with its NUL ("UR63") */

/* The access an instruction makes, as its text says (no register values yet). */
struct sass_access {
    enum sass_kind kind;         /* load, store or atomic; SASS_NONE: not a memory access */
    enum sass_space space;       /* where the address points */
    unsigned size;               /* bytes per lane: 1, 2, 4, 8 or 16 */
    char base[SASS_REG_NAME];    /* the address register ("R2"), "" when none ([0x10] alone) */
    int wide;                    /* base is a 64-bit pair (R2.64: R2 low, R3 high) */
    char uniform[SASS_REG_NAME]; /* a uniform register added to it ("UR4"), "" when none */
    int uniform_wide;            /* the uniform register is a 64-bit pair (UR4.64) */
    int64_t offset;              /* the immediate added to it */
    char dest[SASS_REG_NAME];    /* a load's or atomic's first destination register ("R5"), "" none */
    unsigned ndest;              /* registers it writes from dest on (an 8-byte load writes two) */
};

/* Parses one instruction ("@P0 LDG.E.64 R4, desc[UR6][R2.64+0x10]"). Returns 0 when it is a memory access the
 * decoder knows, -1 when not (the struct then says SASS_NONE). */
int sass_parse(const char *insn, struct sass_access *a);

/* Looks up a register's value for sass_address; 0 when known. */
typedef int (*sass_reg_fn)(void *arg, const char *name, uint64_t *value);

/* The address access a makes with the registers reg gives; 0, -1 when a register it needs is unknown, -2 when
 * the access writes a register its address is made of (a load into its own address register: "LDG.E
 * R5,desc[UR4][R4.64]"), whose value after the access is not the address any more. */
int sass_address(const struct sass_access *a, sass_reg_fn reg, void *arg, uint64_t *address);

/* The low 32 bits of that address, which the low registers alone give: enough to tell a misaligned access when
 * the access overwrote the high half of its own address pair ("LDG.E R5,desc[UR4][R4.64]"); 0, -1 as above, -2
 * when it overwrote the low register too. */
int sass_address_low32(const struct sass_access *a, sass_reg_fn reg, void *arg, uint32_t *low);

/* "load", "store", "atomic" (or "access"); "global", "shared", "local", "generic". */
const char *sass_kind_name(enum sass_kind k);
const char *sass_space_name(enum sass_space s);

#endif
