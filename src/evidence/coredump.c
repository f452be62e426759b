/* `culprit run --coredump`: the driver's GPU core dump on exception, automated. culprit asks the driver for a
 * small dump (no memory contents) into the run's report directory; after the process died it runs cuda-gdb in
 * batch mode on each dump (without a shell, time-bounded) and reads what it says of the exception (kernel, PC,
 * source line with -lineinfo, the focus: block, thread, warp, lane, and every lane's registers, which give the
 * faulting access). Tying that to the report of the process that wrote the dump is coredump_attach.c's. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "coredump.h"
#include "../cli/cli.h"
#include "coredump_elf.h"
#include "sass.h"
#include "stages.h"
#include "../render/json.h"
#include "../report/subproc.h"
#include "../render/report_keys.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define COREDUMP_OUTPUT_MAX (1 << 20) /* bytes of the debugger's output kept (32 lanes' registers: ~140 KB) */
#define COREDUMP_FLAGS "skip_global_memory,skip_shared_memory,skip_local_memory,skip_constbank_memory"

/* Whether the user chose core dump settings of their own, which culprit leaves alone. */
static int coredump_users_own(void)
{
    return getenv("CUDA_ENABLE_COREDUMP_ON_EXCEPTION") || getenv("CUDA_COREDUMP_FILE");
}

int coredump_prepare(const char *run_dir, char *out, size_t outsz)
{
    struct stat sb;
    out[0] = '\0';
    if (coredump_users_own())
        return 0;
    if ((size_t)snprintf(out, outsz, "%s/coredumps-XXXXXX", run_dir) >= outsz) {
        out[0] = '\0';
        return ENAMETOOLONG;
    }
    /* mkdtemp makes a new directory (never one already there), mode 0700 */
    if (!mkdtemp(out) || lstat(out, &sb) != 0 || !S_ISDIR(sb.st_mode) || sb.st_uid != geteuid()) {
        int e = errno ? errno : EEXIST;
        out[0] = '\0';
        return e;
    }
    return 0;
}

int coredump_setenv(const char *dir)
{
    char path[PATH_MAX];
    if (coredump_users_own() || !dir || !*dir)
        return 0; /* the user's own settings win */
    if ((size_t)snprintf(path, sizeof path, "%s/gpucore-%%h-%%p.nvcudmp", dir) >= sizeof path)
        return ENAMETOOLONG;
    if (setenv("CUDA_ENABLE_COREDUMP_ON_EXCEPTION", "1", 1) || setenv("CUDA_COREDUMP_FILE", path, 1))
        return errno ? errno : ENOMEM;
    if (!getenv("CUDA_COREDUMP_GENERATION_FLAGS") && setenv("CUDA_COREDUMP_GENERATION_FLAGS", COREDUMP_FLAGS, 1))
        return errno ? errno : ENOMEM;
    return 0;
}

void coredump_free(struct coredump_info *ci)
{
    free(ci->exception);
    free(ci->pc);
    free(ci->kernel);
    free(ci->file);
    free(ci->insn);
    free(ci->regs);
    free(ci->address_unknown);
    free(ci->debugger_error);
    for (int i = 0; ci->lanes && i < COREDUMP_LANES; i++)
        free(ci->lanes[i].regs);
    free(ci->lanes);
    memset(ci, 0, sizeof *ci);
}

/* "... LOC)" where LOC is "file:line": fills file and line from the last such group of s[0..n). */
static void coredump_location(const char *s, size_t n, struct coredump_info *ci)
{
    const char *open = NULL, *colon;
    for (size_t i = n; i-- > 0;)
        if (s[i] == '(') {
            open = s + i;
            break;
        }
    if (!open || s[n - 1] != ')')
        return;
    colon = memrchr(open, ':', (size_t)(s + n - open));
    if (!colon || colon == open + 1 || !isdigit((unsigned char)colon[1]))
        return;
    free(ci->file);
    ci->file = strndup(open + 1, (size_t)(colon - open - 1));
    ci->line = strtol(colon + 1, NULL, 10);
}

/* A value after "name " in a focus line ("device 0, sm 3, warp 1, lane 12"). */
static long coredump_field(const char *line, const char *name)
{
    const char *p = strstr(line, name);
    size_t n = strlen(name);
    if (!p || p[n] != ' ' || !isdigit((unsigned char)p[n + 1]))
        return -1;
    return strtol(p + n + 1, NULL, 10);
}

/* A line of `info registers`: "R2             0x77e00600          2011170304", "pc  0x7f..  0x7f.. <f+144>". The
 * registers are the focus lane's until the first `cuda lane N`, then the lane switched to. */
static void coredump_register(const char *line, struct coredump_info *ci)
{
    char name[16];
    unsigned long long v;
    int at = 0;
    struct coredump_lane *l = ci->cur_lane >= 0 && ci->lanes ? &ci->lanes[ci->cur_lane] : NULL;
    int *nregs = l ? &l->nregs : &ci->nregs;
    struct coredump_reg **regs = l ? &l->regs : &ci->regs;
    if (sscanf(line, "%15s 0x%llx%n", name, &v, &at) != 2 || at == 0)
        return;
    if (ci->cur_lane < -1 && strcmp(name, "errorpc") != 0)
        return; /* a lane that could not be told: its registers are no one's */
    if (!strcmp(name, "pc")) {
        *(l ? &l->pc : &ci->pc_value) = v;
        *(l ? &l->have_pc : &ci->have_pc) = 1;
    } else if (!strcmp(name, "errorpc")) {
        ci->errorpc_value = v; /* the warp's, the same from every lane */
        ci->have_errorpc = 1;
    } else if ((name[0] == 'R' || (name[0] == 'U' && name[1] == 'R')) && strlen(name) < sizeof ci->regs[0].name &&
               isdigit((unsigned char)name[name[0] == 'U' ? 2 : 1]) && *nregs < 512) {
        struct coredump_reg *r = realloc(*regs, (size_t)(*nregs + 1) * sizeof *r);
        if (!r)
            return;
        *regs = r;
        snprintf(r[*nregs].name, sizeof r[*nregs].name, "%s", name);
        r[(*nregs)++].value = v;
    }
}

/* The registers sass_address reads: a focus lane's or another lane's. */
struct coredump_regset {
    const struct coredump_reg *regs; /* the lane's registers */
    int nregs;                       /* how many */
};

static int coredump_reg_value(void *arg, const char *name, uint64_t *value)
{
    const struct coredump_regset *rs = arg;
    for (int i = 0; i < rs->nregs; i++)
        if (!strcmp(rs->regs[i].name, name)) {
            *value = rs->regs[i].value;
            return 0;
        }
    return -1;
}

/* "[Switching focus to CUDA kernel 0, grid 12, block (0,0,0), thread (97,0,0), device 0, sm 124, warp 2, lane 1]"
 * (`cuda lane 1`), or "CUDA focus unchanged." (the lane asked for is the focus lane, or it could not be switched
 * to: either way the registers shown next are the focus lane's): the registers that follow are that lane's. */
static void coredump_switch(const char *line, struct coredump_info *ci)
{
    long lane = strstr(line, "CUDA focus unchanged") ? ci->lane : coredump_field(line, "lane");
    ci->cur_lane = -2; /* registers of a lane not known: kept nowhere (coredump_register) */
    if (lane < 0 || lane >= COREDUMP_LANES)
        return;
    if (!ci->lanes && !(ci->lanes = calloc(COREDUMP_LANES, sizeof *ci->lanes)))
        return;
    struct coredump_lane *l = &ci->lanes[lane];
    free(l->regs);
    memset(l, 0, sizeof *l);
    l->seen = 1;
    l->block[0] = l->thread[0] = -1;
    if (strstr(line, "CUDA focus unchanged")) {
        memcpy(l->block, ci->block, sizeof l->block);
        memcpy(l->thread, ci->thread, sizeof l->thread);
    } else {
        const char *b = strstr(line, "block "), *t = strstr(line, "thread ");
        if (b && (b += 6, cli_parse_triple(&b, l->block, '(', ')') != 0))
            l->block[0] = -1;
        if (t && (t += 7, cli_parse_triple(&t, l->thread, '(', ')') != 0))
            l->thread[0] = -1;
    }
    ci->cur_lane = (int)lane;
}

/* The faulting access, from the instruction at the error PC and the focus lane's registers. A GPU reports an
 * illegal or misaligned address as the warp's exception ("Warp Illegal Address"): cuda-gdb's focus is then a lane
 * of the warp, not necessarily the one whose access faulted (seen on an H200: lane 0 of a warp whose lane 27 had
 * loaded out of bounds, all 32 lanes at the same instruction, lane 0's own address in bounds). So the focus
 * lane's address is taken only where it proves itself: a misaligned exception whose focus lane made a misaligned
 * access at the faulting instruction. Otherwise the access is described and the address said unknown. */
/* Why the focus lane's registers are not the faulting access's: it did something else (what). */
static const char *coredump_other_lane(const struct coredump_info *ci, const char *what, char *buf, size_t n)
{
    if (ci->lane < 0)
        return "the dump does not say which lane's access faulted (the exception is the warp's)";
    snprintf(buf, n,
             "the dump does not say which lane's access faulted (the exception is the warp's; lane %ld, "
             "which it shows, %s)",
             ci->lane, what);
    return buf;
}

/* Why a dump without the faulting warp gives no thread and no address: none of the faulting kernel's warps (or
 * not the faulting one) was left when the GPU raised the error, as when a store faults after its warp has moved
 * on. One tail, three heads. */
#define COREDUMP_GONE_TAIL                                                                                             \
    " when the GPU raised the error (a faulting store is reported after its warp has moved on), so the faulting "      \
    "thread and the address it accessed are not in it; the error PC still gives the instruction and its line"
#define COREDUMP_NO_WARPS "the dump holds no warp of any kernel: the faulting kernel had finished" COREDUMP_GONE_TAIL
#define COREDUMP_WARP_GONE "the dump holds %ld warp%s, none of them the faulting one: it had exited" COREDUMP_GONE_TAIL
#define COREDUMP_NO_WARPS_GRID "the dump holds no warp: the faulting warps had exited" COREDUMP_GONE_TAIL
#define COREDUMP_OVERWRITTEN                                                                                           \
    "the faulting instruction wrote over a register its address is made of, so the registers no longer give it"

/* Whether a lane at pc is at the faulting instruction: stopped on it or right after it (16 bytes on). */
static int coredump_at_fault(const struct coredump_info *ci, unsigned long long pc)
{
    return ci->have_errorpc && (pc == ci->errorpc_value || pc == ci->errorpc_value + 16);
}

/* Every lane's address, where the dump shows the lanes: a lane stopped at the faulting instruction, whose access
 * did not overwrite its own address registers, gives the address it accessed. For a misaligned exception the
 * first lane whose address is not a multiple of the access size is the faulting one; for an illegal address,
 * which lane's address was bad takes the allocation table, which the report holds (report/addr.c chooses, from
 * "coredump.lanes"). Returns 1 when it settled the address or why it is unknown, 0 when no lane gave an address
 * (the focus lane's rule then applies). */
static int coredump_lanes(struct coredump_info *ci, const struct sass_access *a, int misaligned)
{
    int bad = 0, overwritten = 0, seen = 0, rc, moved = -1;
    struct coredump_regset none = {NULL, 0};
    uint64_t addr;
    for (int i = 0; ci->lanes && i < COREDUMP_LANES; i++) {
        struct coredump_lane *l = &ci->lanes[i];
        struct coredump_regset rs = {l->regs, l->nregs};
        seen += l->seen;
        if (l->seen && l->have_pc && !coredump_at_fault(ci, l->pc) && moved < 0)
            moved = i;
        if (!l->seen || !l->have_pc || !coredump_at_fault(ci, l->pc))
            continue;
        if ((rc = sass_address(a, coredump_reg_value, &rs, &addr)) != 0) {
            uint32_t low;
            overwritten += rc == -2;
            /* a load into the high half of its own address pair: the low half still says whether the lane's
             * access was aligned, and the allocation table may place it (report/addr.c) */
            if (rc == -2 && misaligned && sass_address_low32(a, coredump_reg_value, &rs, &low) == 0) {
                l->have_low32 = 1;
                l->low32 = low;
                ci->lanes_low32++;
            }
            continue;
        }
        l->have_address = 1;
        l->address = addr;
        ci->lanes_read++;
        if (misaligned && a->size > 1 && addr % a->size != 0 && !bad++) {
            ci->have_address = 1;
            ci->address = addr;
            ci->address_lane = i;
        }
    }
    /* whether the instruction overwrites its own address registers does not depend on the lane */
    if (!ci->lanes_read && (overwritten || (seen && sass_address(a, coredump_reg_value, &none, &addr) == -2))) {
        if (ci->lanes_low32 &&
            asprintf(&ci->address_unknown,
                     "%s; the low 32 bits of %d lanes' addresses are known, which say which lanes were misaligned",
                     COREDUMP_OVERWRITTEN, ci->lanes_low32) >= 0)
            return 1;
        ci->address_unknown = strdup(COREDUMP_OVERWRITTEN);
        return 1;
    }
    if (!ci->lanes_read && moved >= 0 && ci->have_errorpc) {
        /* on the H200 a lane whose load's result was not needed at once ran on past it (pc 0x30 after it) */
        if (asprintf(&ci->address_unknown,
                     "none of the %d lanes the dump shows stopped at the faulting instruction or the one after it "
                     "(lane %d is %lld bytes from it): the instructions they ran since may have changed the "
                     "registers its address is made of",
                     seen, moved, (long long)(ci->lanes[moved].pc - ci->errorpc_value)) < 0)
            ci->address_unknown = NULL;
        return 1;
    }
    if (!ci->lanes_read)
        return 0;
    if (misaligned && !bad &&
        asprintf(&ci->address_unknown, "none of the %d lanes whose address the dump gives made a misaligned access",
                 ci->lanes_read) < 0)
        ci->address_unknown = NULL;
    if (!misaligned && asprintf(&ci->address_unknown,
                                "the exception is the warp's: which of the %d lanes whose address the dump gives "
                                "made the faulting access, only the allocation table can tell",
                                ci->lanes_read) < 0)
        ci->address_unknown = NULL;
    return 1;
}

/* Whether the dump's exception is about an address (illegal, misaligned, out of range, ...): one whose faulting
 * access has an address to give or to explain. */
static int coredump_is_address(const struct coredump_info *ci)
{
    return ci->exception && strstr(ci->exception, "Address") != NULL;
}

static void coredump_address(struct coredump_info *ci)
{
    struct sass_access a;
    const char *why = NULL;
    char buf[200];
    int rc;
    if (!ci->insn && coredump_is_address(ci)) {
        /* an address exception whose instruction the debugger did not show (it died, or had no error PC) */
        ci->address_unknown = strdup("the debugger did not show the instruction at the error PC, so neither the "
                                     "access nor its address is known");
        return;
    }
    if (!ci->insn || sass_parse(ci->insn, &a) != 0)
        return; /* no instruction, or not a memory access: nothing to say */
    ci->access = sass_kind_name(a.kind);
    ci->space = sass_space_name(a.space);
    ci->access_size = a.size;
    uint64_t addr;
    int misaligned = ci->exception && strstr(ci->exception, "Misaligned") != NULL;
    struct coredump_regset focus = {ci->regs, ci->nregs};
    if (coredump_lanes(ci, &a, misaligned))
        return;
    if (!misaligned) {
        why = "the exception is the warp's, and the dump does not say which of its lanes made the faulting access";
    } else if (!ci->have_errorpc || !ci->have_pc) {
        why = "the dump does not give the focus lane's program counter";
    } else if (!coredump_at_fault(ci, ci->pc_value)) {
        why = coredump_other_lane(ci, "was elsewhere in the kernel", buf, sizeof buf);
    } else if ((rc = sass_address(&a, coredump_reg_value, &focus, &addr)) != 0) {
        why = rc == -2 ? COREDUMP_OVERWRITTEN : "the dump lacks a register the address is made of";
    } else if (a.size > 1 && addr % a.size == 0) {
        why = coredump_other_lane(ci, "made an aligned access", buf, sizeof buf);
    } else {
        ci->have_address = 1;
        ci->address = addr;
        return;
    }
    ci->address_unknown = strdup(why);
}

static const char coredump_terminate[] = "terminate called after throwing an instance of '";

static void coredump_line(const char *s, size_t n, struct coredump_info *ci)
{
    static const char exc[] = "CUDA Exception: ", pc[] = "The exception was triggered at PC ";
    char *line = strndup(s, n);
    const char *p;
    if (!line)
        return;
    while (n && (line[n - 1] == '\r' || line[n - 1] == ' '))
        line[--n] = '\0';
    if (!strncmp(line, exc, sizeof exc - 1) && !ci->exception) {
        ci->exception = strdup(line + sizeof exc - 1);
    } else if (!strncmp(line, pc, sizeof pc - 1)) {
        /* "The exception was triggered at PC 0x7f2af77a0ae0  write_oob(int*, int)  (oob.cu:8)" */
        const char *v = line + sizeof pc - 1, *sp = strchr(v, ' ');
        free(ci->pc);
        ci->pc = sp ? strndup(v, (size_t)(sp - v)) : strdup(v);
        if (sp) {
            const char *k = sp;
            while (*k == ' ')
                k++;
            const char *loc = strstr(k, "  (");
            size_t kl = loc ? (size_t)(loc - k) : strlen(k);
            while (kl && k[kl - 1] == ' ')
                kl--;
            if (kl) {
                free(ci->kernel);
                ci->kernel = strndup(k, kl);
            }
            if (loc)
                coredump_location(loc, strlen(loc), ci);
        }
    } else if ((p = strstr(line, "Current focus set to CUDA kernel")) != NULL) {
        /* "[Current focus set to CUDA kernel 0, grid 6, block (3,0,0), thread (44,0,0), device 0, sm 0, warp 1,
         * lane 12]" */
        const char *b = strstr(p, "block "), *t = strstr(p, "thread ");
        if (b) {
            b += 6;
            if (cli_parse_triple(&b, ci->block, '(', ')') != 0)
                ci->block[0] = -1;
        }
        if (t) {
            t += 7;
            if (cli_parse_triple(&t, ci->thread, '(', ')') != 0)
                ci->thread[0] = -1;
        }
        ci->device = coredump_field(p, "device");
        ci->sm = coredump_field(p, "sm");
        ci->warp = coredump_field(p, "warp");
        ci->lane = coredump_field(p, "lane");
    } else if (line[0] == '#' && (p = strstr(line, " in ")) != NULL && strstr(line, "<<<")) {
        /* "#0  0x00007f... in write_oob(int*, int)<<<(8,1,1),(128,1,1)>>> () at oob.cu:8" */
        const char *k = p + 4, *e = strstr(k, "<<<"), *at = strstr(e, " at "), *d = e + 3;
        if (!ci->kernel)
            ci->kernel = strndup(k, (size_t)(e - k));
        if (ci->grid[0] < 0 && cli_parse_triple(&d, ci->grid, '(', ')') == 0 && *d == ',') {
            d++;
            if (cli_parse_triple(&d, ci->block_dim, '(', ')') != 0)
                ci->grid[0] = ci->block_dim[0] = -1;
        } else if (ci->grid[0] >= 0 && ci->block_dim[0] < 0) {
            ci->grid[0] = -1;
        }
        if (at && !ci->file) {
            const char *colon = strrchr(at + 4, ':');
            if (colon && isdigit((unsigned char)colon[1])) {
                ci->file = strndup(at + 4, (size_t)(colon - at - 4));
                ci->line = strtol(colon + 1, NULL, 10);
            }
        }
    } else if (!strcmp(line, "Assertion failed.") && !ci->exception) {
        ci->exception = strdup("Assertion failed"); /* a device assert, as cuda-gdb 13.0 words it */
    } else if (!strncmp(line, "Program terminated with signal ", 31) && !ci->exception) {
        /* "Program terminated with signal SIGTRAP, Trace/breakpoint trap." (a __trap()) */
        const char *sig = line + 31, *comma = strchr(sig, ',');
        size_t m = strlen(sig);
        if (m && sig[m - 1] == '.')
            m--;
        if (comma && asprintf(&ci->exception, "%.*s (%.*s)", (int)(comma - sig), sig,
                              (int)(m - (size_t)(comma + 2 - sig)), comma + 2) < 0)
            ci->exception = NULL;
    } else if (strstr(line, "Switching focus to CUDA kernel") || strstr(line, "CUDA focus unchanged")) {
        coredump_switch(line, ci);
    } else if (strstr(line, "Fatal signal:") || strstr(line, "A fatal error internal to GDB")) {
        ci->debugger_crashed = 1;
    } else if (!strncmp(line, coredump_terminate, sizeof coredump_terminate - 1) && !ci->debugger_error) {
        /* cuda-gdb 13.0's death on the H200: "terminate called after throwing an instance of
         * 'std::out_of_range'", then "  what():  vector::_M_range_check: ..." */
        const char *e = line + sizeof coredump_terminate - 1, *q = strchr(e, '\'');
        ci->debugger_error = strndup(e, q ? (size_t)(q - e) : strlen(e));
    } else if ((p = strstr(line, "what():")) != NULL && ci->debugger_error && !strstr(ci->debugger_error, ": ")) {
        char *both = NULL;
        p += 7;
        while (*p == ' ')
            p++;
        if (asprintf(&both, "%s: %s", ci->debugger_error, p) >= 0) {
            free(ci->debugger_error);
            ci->debugger_error = both;
        }
    } else if ((p = strstr(line, ">:\t")) != NULL && line[0] == '*') {
        /* `x/i $errorpc`: "*> 0x7f7d7f7a0c90 <_Z9bad_storePfix+400>:\tSTG.E desc[UR8][R2.64],R5" ("*" marks the
         * error PC in cuda-gdb's listings) */
        free(ci->insn);
        ci->insn = strdup(p + 3);
    } else {
        coredump_register(line, ci);
    }
    free(line);
}

int coredump_parse(const char *text, struct coredump_info *ci)
{
    memset(ci, 0, sizeof *ci);
    ci->line = ci->block[0] = ci->thread[0] = -1;
    ci->device = ci->sm = ci->warp = ci->lane = -1;
    ci->grid[0] = ci->block_dim[0] = -1;
    ci->cur_lane = -1;
    ci->address_lane = -1;
    ci->warps_in_dump = -1;
    for (const char *s = text; *s;) {
        const char *nl = strchr(s, '\n');
        size_t n = nl ? (size_t)(nl - s) : strlen(s);
        coredump_line(s, n, ci);
        s += n + (nl != NULL);
    }
    coredump_address(ci);
    return ci->exception || ci->kernel ? 0 : -1;
}

void coredump_note_census(struct coredump_info *ci, const struct coredump_census *cs)
{
    char *why = NULL;
    ci->warps_in_dump = cs->warps;
    /* only a faulting access's address is at stake; a lane that gave one, or a focus (the debugger found the
     * faulting warp), says the dump holds it */
    if (!coredump_is_address(ci) || ci->have_address || ci->lanes_read || (cs->warps > 0 && ci->warp >= 0))
        return;
    /* seen on the H200 for the out-of-bounds stores of the GPU suite: no focus, cuda-gdb 13.0 dying where it
     * looked for the faulting warp, and either empty grid, block and warp tables or only other warps */
    if (cs->warps == 0 && !ci->debugger_crashed && ci->warp >= 0)
        return; /* a focus without warps: a dump this reader does not understand; the debugger's answer stands */
    if (cs->warps == 0)
        why = strdup(cs->grids > 0 ? COREDUMP_NO_WARPS_GRID : COREDUMP_NO_WARPS);
    else if (asprintf(&why, COREDUMP_WARP_GONE, cs->warps, cs->warps == 1 ? "" : "s") < 0)
        why = NULL;
    if (!why)
        return;
    free(ci->address_unknown);
    ci->address_unknown = why;
}

/* Whether dir/name is a file this process may run. */
static int coredump_runnable(const char *dir, size_t dirlen, const char *name, char *out, size_t n)
{
    if ((size_t)snprintf(out, n, "%.*s/%s", (int)dirlen, dir, name) >= n)
        return 0;
    return access(out, X_OK) == 0;
}

const char *coredump_debugger(void)
{
    static char found[PATH_MAX];
    const char *gdb = getenv("CULPRIT_CUDA_GDB"), *path = getenv("PATH"), *home = getenv("CUDA_HOME");
    if (gdb && *gdb)
        return gdb;
    for (const char *p = path ? path : ""; *p;) {
        size_t len = strcspn(p, ":");
        if (len && coredump_runnable(p, len, "cuda-gdb", found, sizeof found))
            return "cuda-gdb"; /* on PATH: named as the user would */
        p += len + (p[len] == ':');
    }
    /* the toolkit's, where PATH does not hold it */
    if (home && *home && coredump_runnable(home, strlen(home), "bin/cuda-gdb", found, sizeof found))
        return found;
    if (coredump_runnable("/usr/local/cuda", 15, "bin/cuda-gdb", found, sizeof found))
        return found;
    return "cuda-gdb";
}

char *coredump_run_gdb(const char *dump, char *why, size_t whylen)
{
    const char *gdb = coredump_debugger();
    char target[PATH_MAX + 32];
    struct subproc_result res;

    snprintf(target, sizeof target, "target cudacore %s", dump);
    /* the faulting instruction and the focus lane's registers last: a dump without an error PC (an assert) makes
     * `x/i $errorpc` fail, and what came before is kept; then every lane of the warp's registers (a lane that is
     * not active answers with an error and the next command runs): about 4 KB a lane */
    static const char *const tail[] = {"-ex", "info cuda kernels", "-ex", "bt 1",           "-ex", "x/i $errorpc",
                                       "-ex", "info registers",    "-ex", "info cuda lanes"};
    char lane_cmd[COREDUMP_LANES][16];
    char *argv[5 + sizeof tail / sizeof tail[0] + 4 * COREDUMP_LANES + 1];
    size_t n = 0;
    argv[n++] = (char *)gdb;
    argv[n++] = (char *)"-batch";
    argv[n++] = (char *)"-nx";
    argv[n++] = (char *)"-ex";
    argv[n++] = target;
    for (size_t i = 0; i < sizeof tail / sizeof tail[0]; i++)
        argv[n++] = (char *)tail[i];
    for (int i = 0; i < COREDUMP_LANES; i++) {
        snprintf(lane_cmd[i], sizeof lane_cmd[i], "cuda lane %d", i);
        argv[n++] = (char *)"-ex";
        argv[n++] = lane_cmd[i];
        argv[n++] = (char *)"-ex";
        argv[n++] = (char *)"info registers";
    }
    argv[n] = NULL;
    struct subproc_opts o = {-1, 1, "TERM=dumb", COREDUMP_TIMEOUT_S, COREDUMP_OUTPUT_MAX};
    int rc = subproc_capture(argv, &o, &res);
    if (rc == -2) {
        snprintf(why, whylen, "%s was not found (install the CUDA toolkit's debugger, or set CULPRIT_CUDA_GDB)", gdb);
        return NULL;
    }
    if (rc != 0) {
        snprintf(why, whylen, "cannot run %s: %s", gdb, strerror(errno ? errno : ENOMEM));
        return NULL;
    }
    return res.out;
}

static struct json *coredump_triple_json(const long v[3])
{
    struct json *a = json_new(JSON_ARR);
    for (int i = 0; a && i < 3; i++) {
        struct json *n = json_new_int(v[i]);
        if (json_append(a, n) != 0) {
            json_free(n);
            json_free(a);
            return NULL;
        }
    }
    return a;
}

static struct json *coredump_true(void)
{
    struct json *b = json_new(JSON_BOOL);
    if (b)
        b->boolean = 1;
    return b;
}

/* "lanes": each lane whose address the dump gives, with its block and thread (of a lane whose access overwrote
 * the high half of its address, the low half: "address_low32"). */
static struct json *coredump_lanes_json(const struct coredump_info *ci)
{
    struct json *arr = json_new(JSON_ARR);
    for (int i = 0; arr && ci->lanes && i < COREDUMP_LANES; i++) {
        const struct coredump_lane *l = &ci->lanes[i];
        struct json *o;
        char low[16];
        if (!l->have_address && !l->have_low32)
            continue;
        snprintf(low, sizeof low, "0x%08x", l->low32);
        o = json_new(JSON_OBJ);
        if (json_append(arr, o) != 0 || json_put(o, RK_LANE, json_new_int(i)) ||
            (l->block[0] >= 0 && json_put(o, RK_BLOCK, coredump_triple_json(l->block))) ||
            (l->thread[0] >= 0 && json_put(o, RK_THREAD, coredump_triple_json(l->thread))) ||
            (l->have_address && json_put(o, RK_ADDRESS, json_new_hex(l->address))) ||
            (!l->have_address && json_put(o, RK_ADDRESS_LOW32, json_new_str(low)))) {
            json_free(arr);
            return NULL;
        }
    }
    return arr;
}

struct json *coredump_json(const struct coredump_info *ci, const char *dump_path)
{
    struct json *o = json_new(JSON_OBJ);
    if (!o || json_put(o, RK_FILE, json_new_str(dump_path)) ||
        (ci->exception && json_put(o, RK_EXCEPTION, json_new_str(ci->exception))) ||
        (ci->kernel && json_put(o, RK_KERNEL, json_new_str(ci->kernel))) ||
        (ci->pc && json_put(o, RK_PC, json_new_str(ci->pc))) ||
        (ci->file && json_put(o, RK_SOURCE_FILE, json_new_str(ci->file))) ||
        (ci->line > 0 && json_put(o, RK_SOURCE_LINE, json_new_int(ci->line))) ||
        (ci->block[0] >= 0 && json_put(o, RK_BLOCK, coredump_triple_json(ci->block))) ||
        (ci->thread[0] >= 0 && json_put(o, RK_THREAD, coredump_triple_json(ci->thread))) ||
        (ci->device >= 0 && json_put(o, RK_DEVICE, json_new_int(ci->device))) ||
        (ci->sm >= 0 && json_put(o, RK_SM, json_new_int(ci->sm))) ||
        (ci->warp >= 0 && json_put(o, RK_WARP, json_new_int(ci->warp))) ||
        (ci->lane >= 0 && json_put(o, RK_LANE, json_new_int(ci->lane))) ||
        (ci->grid[0] >= 0 && json_put(o, RK_LAUNCH_GRID, coredump_triple_json(ci->grid))) ||
        (ci->grid[0] >= 0 && json_put(o, RK_LAUNCH_BLOCK, coredump_triple_json(ci->block_dim))) ||
        (ci->debugger_crashed && json_put(o, RK_DEBUGGER_CRASHED, coredump_true())) ||
        (ci->debugger_crashed && ci->debugger_error &&
         json_put(o, RK_DEBUGGER_ERROR, json_new_str(ci->debugger_error))) ||
        (ci->insn && ci->access && json_put(o, RK_INSTRUCTION, json_new_str(ci->insn))) ||
        (ci->access && json_put(o, RK_ACCESS, json_new_str(ci->access))) ||
        (ci->access && json_put(o, RK_SPACE, json_new_str(ci->space))) ||
        (ci->access_size && json_put(o, RK_ACCESS_SIZE, json_new_int((long long)ci->access_size))) ||
        (ci->have_address && json_put(o, RK_ADDRESS, json_new_hex(ci->address))) ||
        (ci->have_address && ci->exception && strstr(ci->exception, "Misaligned") &&
         json_put(o, RK_ALIGNMENT, json_new_int((long long)ci->access_size))) ||
        (ci->have_address && ci->address_lane >= 0 && json_put(o, RK_ADDRESS_LANE, json_new_int(ci->address_lane))) ||
        ((ci->lanes_read || ci->lanes_low32) && json_put(o, RK_LANES, coredump_lanes_json(ci))) ||
        (ci->address_unknown && json_put(o, RK_ADDRESS_UNKNOWN, json_new_str(ci->address_unknown))) ||
        (ci->warps_in_dump >= 0 && json_put(o, RK_WARPS_IN_DUMP, json_new_int(ci->warps_in_dump)))) {
        json_free(o);
        return NULL;
    }
    return o;
}

void coredump_where(const struct coredump_info *ci, char *out, size_t n)
{
    if (ci->file && ci->line > 0)
        snprintf(out, n, " at %s:%ld", ci->file, ci->line);
    else
        out[0] = '\0';
}

/* The run's stage: before the reports are shown, a dump may make a verdict exact. */
enum ev_next coredump_stage(struct ev_ctx *c)
{
    if (c->o->coredump)
        coredump_attach_all(c->core_dir, c->dir, c->run_id);
    return EV_NEXT;
}
