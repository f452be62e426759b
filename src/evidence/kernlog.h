/* The kernel's log of a GPU fault (kernlog.c). When a kernel touches memory that is not mapped, the GPU's memory
 * unit raises a fault the NVIDIA kernel module logs as Xid 31, with the process, whether it was a read or a write,
 * and the 4 KiB page of the address: "NVRM: Xid (PCI:0000:00:06): 31, pid=504, name=gpu_oob_static, channel
 * 0x0000000a, intr 00000000. MMU Fault: ENGINE GRAPHICS GPC1 GPCCLIENT_T1_8 faulted @ 0x83ae_8fe05000. Fault is of
 * type FAULT_PDE ACCESS_TYPE_VIRT_READ". That is the faulting address of a store too, whose warp a GPU core dump
 * usually no longer holds, and it costs nothing while nothing faults. `culprit run` notes where the log ends before
 * the command starts, reads what was added once it ended, and gives each fault report of this host the line of its
 * process ("gpu_fault_log"). */
#ifndef CULPRIT_CLI_KERNLOG_H
#define CULPRIT_CLI_KERNLOG_H

#include <stddef.h>
#include <stdint.h>

struct json;

#define KERNLOG_PAGE 4096 /* the GPU logs the page of the faulting address, not the byte */
#define KERNLOG_KEEP                                                                                                   \
    256                       /* Xid 31 lines a run keeps: the first of each process with a page and without one
                               * (a process's first fault is its own), the first processes' */
#define KERNLOG_LINE_MAX 1024 /* a longer line is cut */
#define KERNLOG_NAME_MAX 16   /* the kernel's name of a process: 15 characters and the NUL */

/* One Xid line of the log. */
struct kernlog_xid {
    int xid;                     /* the Xid number (31: the memory unit's fault) */
    long long pid;               /* the process the kernel named, -1 when the line names none */
    char name[KERNLOG_NAME_MAX]; /* its name as the kernel keeps it (at most 15 bytes), "" when none */
    int has_address;             /* Xid 31 with "faulted @ ADDRESS" */
    uint64_t address;            /* the faulting page */
    char access[16];             /* "read", "write", "atomic", "prefetch", ... ("" when not said) */
    char fault_type[32];         /* "FAULT_PDE", "FAULT_PTE", "FAULT_RO", ... ("" when not said) */
    char line[KERNLOG_LINE_MAX]; /* the message, from "NVRM:" on, made safe for a terminal */
};

/* The log of one run: where it was read from, and what the run added to it. */
struct kernlog {
    char path[512];          /* the log read: /dev/kmsg, or the file CULPRIT_KERNEL_LOG names */
    int fd;                  /* open from kernlog_begin to kernlog_end; -1 when closed or unreadable */
    int off;                 /* CULPRIT_KERNEL_LOG=off: nothing is read and nothing attached */
    int is_file;             /* a regular file (lines appended), else the kernel's record device */
    long long start;         /* a file: its size when the run began */
    int host_pids;           /* culprit runs in the host's pid namespace: the log's pids are its processes' own,
                              * so a line is never tied by name alone (another process of that name is another) */
    char why[800];           /* when the log cannot be read: why, and what to do about it ("" otherwise) */
    struct kernlog_xid *xid; /* the Xid 31 lines the run added that a report may be given, oldest first */
    size_t n;                /* how many */
    size_t dropped;          /* Xid 31 lines past KERNLOG_KEEP, not kept */
    long long cut;           /* bytes read when culprit stopped reading with more left (the read's cap), else 0 */
};

/* Before the command starts: opens the log (CULPRIT_KERNEL_LOG: unset the kernel's record device /dev/kmsg, "off"
 * nothing, else a file the kernel's messages are appended to) and notes where it ends. Never fails: a log that
 * cannot be opened is remembered with why (k->why). */
void kernlog_begin(struct kernlog *k);
/* Once the command ended: reads what was added since kernlog_begin and keeps its Xid lines; closes the log. */
void kernlog_end(struct kernlog *k);
void kernlog_free(struct kernlog *k);

/* Reads one line of a log (a record of /dev/kmsg "PRI,SEQ,TS,FLAGS;MESSAGE", a line of dmesg "[   30.59] MESSAGE",
 * a syslog file's "Dec  3 20:22:30 host kernel: ..."): 1 and *x filled when it is an NVRM Xid line, else 0. */
int kernlog_parse(const char *line, size_t len, struct kernlog_xid *x);

/* Whether a report's CUDA error (its "error.code") is one the GPU's memory unit raises, which the kernel logs as
 * Xid 31 with the page: 700 (an illegal address) alone; asserts and misaligned addresses log no page. */
int kernlog_code_logs_page(long long code);

/* Gives a fault report of this host the Xid 31 line of its process as "gpu_fault_log" (docs/report.md): the
 * line whose pid is the report's, else, when culprit runs in a pid namespace of its own (a container: the kernel
 * writes the pid the host sees), the only one whose process name is the report's ("matched": "name": a hint, never
 * enough to narrow a verdict). Only a report whose error kernlog_code_logs_page gets a line at all; one without
 * such a line gets "gpu_fault_log" saying why (the log unreadable, no line, several).
 * *added says whether doc changed. Returns 0, or ENOMEM. */
int kernlog_attach(const struct kernlog *k, struct json *doc, int *added);

#endif
