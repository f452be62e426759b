/* `culprit run --coredump` (coredump.c): the driver's GPU core dump on exception, written into the run's report
 * directory, read after the process died (cuda-gdb in batch mode) for the faulting kernel, its source line, PC
 * and, where the debugger says, block, thread, warp and lane; tied to the process's report. */
#ifndef CULPRIT_CLI_COREDUMP_H
#define CULPRIT_CLI_COREDUMP_H

#include <stddef.h>

struct json;
struct argmatch_range;

#define COREDUMP_TIMEOUT_S 120 /* cuda-gdb is stopped after this long on one dump */
#define COREDUMP_LANES 32      /* lanes of a warp, each asked for its registers */

/* What a dump says about the fault (strings malloc'd; absent ones NULL, numbers -1). */
struct coredump_info {
    char *exception;             /* "Warp Illegal Address", "Assertion failed", "SIGTRAP (Trace/breakpoint trap)" */
    char *pc;                    /* "0x7f2af77a0ae0" */
    char *kernel;                /* the faulting kernel, as the debugger spells it: "write_oob(int*, int)" */
    char *file;                  /* source file of the faulting instruction (needs -lineinfo or -G) */
    long line;                   /* its line, -1 unknown */
    long block[3];               /* block of the faulting thread, block[0] -1 unknown */
    long thread[3];              /* thread within the block, thread[0] -1 unknown */
    long device, sm, warp, lane; /* where it ran, -1 unknown */
    long grid[3];                /* the faulting launch's grid, from the backtrace's <<<grid,block>>>; -1 unknown */
    long block_dim[3];           /* and its block dimensions */
    int debugger_crashed;        /* the debugger died while reading the dump (what it said before is kept) */
    char *debugger_error;        /* what it said of its death ("std::out_of_range: vector::_M_range_check: ..."),
                                  * NULL when nothing */
    char *insn;                  /* the instruction at the error PC, as disassembled ("STG.E desc[UR8][R2.64],R5") */
    int have_pc, have_errorpc;   /* the focus lane's pc and the error PC were read */
    unsigned long long pc_value, errorpc_value; /* their values */
    int nregs;                                  /* entries in regs */
    struct coredump_reg {
        char name[8];             /* "R2", "UR4" */
        unsigned long long value; /* as the debugger printed it */
    } * regs;                     /* the focus lane's registers (malloc'd) */
    /* every lane of the focus warp the debugger showed (`cuda lane N` then `info registers`, lanes 0..31):
     * where the warp's exception is an illegal address, the focus lane is seldom the one that faulted */
    struct coredump_lane {
        int seen;                   /* the debugger switched to this lane and showed its registers */
        long block[3];              /* its block, block[0] -1 unknown */
        long thread[3];             /* its thread within the block */
        int have_pc;                /* its pc was read */
        unsigned long long pc;      /* that pc */
        int nregs;                  /* entries in regs */
        struct coredump_reg *regs;  /* its registers (malloc'd) */
        int have_address;           /* address is what this lane's faulting instruction accessed */
        unsigned long long address; /* that address */
        int have_low32;             /* only the low half is known (the access overwrote the high one): low32 */
        unsigned low32;             /* the low 32 bits of the address, which alone say whether it is aligned */
    } * lanes;                      /* COREDUMP_LANES entries indexed by lane (malloc'd), NULL when none shown */
    int cur_lane;                   /* while parsing: the lane whose registers come next, -1 the focus's */
    int lanes_read;                 /* lanes whose address is known */
    int lanes_low32;                /* lanes of which only the address's low 32 bits are known */
    long address_lane;              /* the lane whose access address is (misaligned), -1 the focus's or none */
    /* what the faulting access was, from insn and the registers (coredump_address) */
    const char *access;         /* "load", "store", "atomic", NULL: not a memory access or not read */
    const char *space;          /* "global", "shared", "local", "generic" */
    unsigned access_size;       /* bytes per lane, 0 unknown */
    int have_address;           /* address holds the address the faulting lane accessed */
    unsigned long long address; /* that address */
    char *address_unknown;      /* why the address is not known (set when the instruction is an access) */
    long warps_in_dump;         /* warps whose state the dump file holds (coredump_elf.h), -1 not counted */
};

#define COREDUMP_MAX_DUMPS 16 /* dumps of one run given to the debugger; more are named in one line, not read */

/* Before the command starts, for --coredump: a directory of the run's own for the driver's dumps, made here
 * (mode 0700) inside run_dir as coredumps-XXXXXX, so that no link or file planted in a shared run directory is
 * written through or read. out gets its path, or "" when the user chose core dump settings of their own (then
 * culprit neither sets nor reads any). Returns 0 or an errno value. */
int coredump_prepare(const char *run_dir, char *out, size_t outsz);

/* In the child before exec, for --coredump: the driver writes a small GPU core dump into dir (coredump_prepare's)
 * on an exception (global, shared, local and constant memory left out), unless the user chose settings of their
 * own. Returns 0 or an errno value. */
int coredump_setenv(const char *dir);

/* Parses cuda-gdb's batch output for one dump. Returns 0 when it named at least the exception or the kernel. */
int coredump_parse(const char *text, struct coredump_info *ci);
void coredump_free(struct coredump_info *ci);
struct coredump_census;
/* Adds what the dump file's own tables say (coredump_census): how many warps it holds and, where it holds none
 * and the debugger gave no address, why no thread or address can come from it. */
void coredump_note_census(struct coredump_info *ci, const struct coredump_census *cs);

/* The debugger to run: CULPRIT_CUDA_GDB, else cuda-gdb on PATH, else the toolkit's ($CUDA_HOME/bin, then
 * /usr/local/cuda/bin), else "cuda-gdb" (which then is not found). */
const char *coredump_debugger(void);
/* Runs the debugger on one dump; returns its output (malloc'd, NUL-terminated) or NULL with why filled. What it
 * printed before a time or size limit stopped it is kept: the exception line comes first. */
char *coredump_run_gdb(const char *dump, char *why, size_t whylen);
/* The report's "coredump" object for a parsed dump (docs/report.md); NULL when memory is short. */
struct json *coredump_json(const struct coredump_info *ci, const char *dump_path);
/* " at FILE:LINE" of the faulting instruction for sentences, or "" when the dump does not say. */
void coredump_where(const struct coredump_info *ci, char *out, size_t n);

/* After the run: reads the dumps in dump_dir (coredump_prepare's; cuda-gdb from PATH, or CULPRIT_CUDA_GDB): only
 * regular files of this user's named gpucore-HOST-PID.nvcudmp, never through a link, those of the processes with
 * a report of run run_id first, at most COREDUMP_MAX_DUMPS. Adds "coredump" to the report in run_dir of the
 * process that wrote it (a fault or hang report of that pid carrying run_id) and, when the verdict is not exact,
 * narrows it to the one candidate the dump singles out. Prints one line per dump it could not read. Removes
 * dump_dir when it is empty. Returns how many dumps were tied to a report. */
int coredump_attach_all(const char *dump_dir, const char *run_dir, const char *run_id);

/* Ties a parsed dump to report doc (see coredump_attach_all); *changed is set when doc was modified. Returns 0
 * or ENOMEM. */
int coredump_attach(struct json *doc, const struct coredump_info *ci, const char *dump_path, int *changed);

/* The allocations the faulting instruction touched, as ranges [base, end) for narrowing by arguments: the one
 * holding the dump's faulting address and each one holding the address of a lane of the faulting warp (the
 * report's allocation table answers them), once each. Fills at most max ranges; returns how many. */
int coredump_fault_ranges(const struct json *doc, const struct coredump_info *ci, struct argmatch_range *ranges,
                          int max);
/* When several of doc's candidates run the dump's kernel with its shape, keeps the one whose parameters point
 * into ranges (report/argmatch.h): exactly one possible candidate that does becomes the culprit, marked
 * "by": "arguments", the others go to "candidates_before_coredump" and the reason says why. Anything else leaves
 * the verdict as it is. *narrowed says whether it did. Returns 0 or ENOMEM. */
int coredump_narrow_by_args(struct json *doc, const struct coredump_info *ci, const struct argmatch_range *ranges,
                            int n, int *narrowed);

#endif
