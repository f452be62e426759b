/* The kernel's log of a GPU fault: what the NVIDIA kernel module logged while the command ran (Xid lines), read
 * once it ended and tied to the fault reports of its processes (kernlog.h). Measured on the H200 (driver 580):
 * every illegal-address fault of the suite logged one Xid 31 line naming the process, the access and the page,
 * stores included; a misaligned address and a device assert log Xid 13 and 43 lines without an address. Reading
 * /dev/kmsg needs root or kernel.dmesg_restrict=0; a syslog file (CULPRIT_KERNEL_LOG) serves when it does not. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "kernlog.h"
#include "stages.h"
#include "../render/json.h"
#include "../render/report_keys.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#ifndef KERNLOG_READ_MAX
#define KERNLOG_READ_MAX (64ll << 20) /* bytes of a log file read after a run (a runaway log is cut) */
#endif
#define KERNLOG_RECORDS_MAX 4000000 /* records of /dev/kmsg read after a run */

static const char kernlog_device[] = "/dev/kmsg";

void kernlog_begin(struct kernlog *k)
{
    const char *env = getenv("CULPRIT_KERNEL_LOG");
    struct stat sb;
    memset(k, 0, sizeof *k);
    k->fd = -1;
    if (env && !strcmp(env, "off")) {
        k->off = 1;
        return;
    }
    snprintf(k->path, sizeof k->path, "%s", env && *env ? env : kernlog_device);
    /* read only, never followed into a terminal, and never waiting: a FIFO or a device with nothing to say
     * answers at once */
    k->fd = open(k->path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
    if (k->fd < 0) {
        int e = errno;
        if ((e == EPERM || e == EACCES) && !strcmp(k->path, kernlog_device))
            snprintf(k->why, sizeof k->why,
                     "the kernel's log (%s) is not readable by this user (kernel.dmesg_restrict=1 needs root or "
                     "CAP_SYSLOG): run as root, set kernel.dmesg_restrict=0, or point CULPRIT_KERNEL_LOG at a file "
                     "the kernel's messages go to that you can read (/var/log/kern.log)",
                     k->path);
        else
            snprintf(k->why, sizeof k->why, "the kernel's log %s cannot be opened: %s", k->path, strerror(e));
        return;
    }
    /* /proc/kmsg hands each message to one reader only: reading it would take them from the system's logger (and
     * no file of /proc is a log the kernel appends to) */
    struct statfs fs;
    if (fstatfs(k->fd, &fs) == 0 && fs.f_type == PROC_SUPER_MAGIC) {
        snprintf(
            k->why, sizeof k->why,
            "the kernel's log %.300s is a file of /proc, which culprit does not read: /proc/kmsg gives each message "
            "to one reader only, so reading it would take the kernel's messages from the system's logger; leave "
            "CULPRIT_KERNEL_LOG unset (the kernel's record device /dev/kmsg, which every reader reads whole) or "
            "name a file the messages are appended to (/var/log/kern.log)",
            k->path);
        close(k->fd);
        k->fd = -1;
        return;
    }
    /* a character device other than the kernel's record device (1,11) could be read without end (/dev/zero) */
    if (fstat(k->fd, &sb) != 0 ||
        !(S_ISREG(sb.st_mode) || (S_ISCHR(sb.st_mode) && major(sb.st_rdev) == 1 && minor(sb.st_rdev) == 11))) {
        snprintf(k->why, sizeof k->why, "the kernel's log %s is neither a file nor the kernel's record device",
                 k->path);
        close(k->fd);
        k->fd = -1;
        return;
    }
    k->is_file = S_ISREG(sb.st_mode);
    /* the host's pid namespace has a fixed number (the kernel's PROC_PID_INIT_INO) */
    char ns[64];
    ssize_t nl = readlink("/proc/self/ns/pid", ns, sizeof ns - 1);
    k->host_pids = nl > 0 && (size_t)nl == strlen("pid:[4026531836]") && !memcmp(ns, "pid:[4026531836]", (size_t)nl);
    if (k->is_file)
        k->start = (long long)sb.st_size;
    else if (lseek(k->fd, 0, SEEK_END) < 0) /* /dev/kmsg: the next read gives the first record after this one */
        snprintf(k->why, sizeof k->why, "the kernel's log %s cannot be read from its end: %s", k->path,
                 strerror(errno));
}

/* Copies the message into x->line, each byte a terminal must not get raw made '?'. */
static void kernlog_copy_line(struct kernlog_xid *x, const char *s, size_t len)
{
    if (len >= sizeof x->line)
        len = sizeof x->line - 1;
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)s[i];
        x->line[i] = c < 0x20 || c >= 0x7f ? '?' : (char)c;
    }
    x->line[len] = '\0';
}

/* The word after key in s[0..len) (up to a comma, space, period or semicolon), or "". */
static void kernlog_word(const char *s, size_t len, const char *key, char *out, size_t outsz)
{
    const char *p = memmem(s, len, key, strlen(key));
    size_t n = 0;
    out[0] = '\0';
    if (!p)
        return;
    p += strlen(key);
    while (p < s + len && n + 1 < outsz && *p != ',' && *p != ' ' && *p != '.' && *p != ';')
        out[n++] = *p++;
    out[n] = '\0';
}

int kernlog_parse(const char *line, size_t len, struct kernlog_xid *x)
{
    static const char tag[] = "NVRM: Xid (";
    const char *m = memmem(line, len, tag, sizeof tag - 1), *end = line + len, *p;
    char word[64];
    memset(x, 0, sizeof *x);
    x->pid = -1;
    if (!m)
        return 0;
    /* the message ends at the record's end: a line, or a /dev/kmsg record's first line (continuation lines of
     * dictionary values follow) */
    for (p = m; p < end && *p != '\n'; p++)
        ;
    end = p;
    kernlog_copy_line(x, m, (size_t)(end - m));
    /* "NVRM: Xid (PCI:0000:00:06): 31, ..." */
    p = memchr(m, ')', (size_t)(end - m));
    if (!p || p + 2 >= end || p[1] != ':')
        return 0;
    p += 2;
    while (p < end && *p == ' ')
        p++;
    if (p >= end || !isdigit((unsigned char)*p))
        return 0;
    x->xid = (int)strtol(p, NULL, 10);
    size_t rest = (size_t)(end - p);
    kernlog_word(p, rest, "pid=", word, sizeof word);
    if (word[0] && isdigit((unsigned char)word[0]))
        x->pid = strtoll(word, NULL, 10);
    kernlog_word(p, rest, "name=", x->name, sizeof x->name);
    if (!strcmp(x->name, "<unknown>"))
        x->name[0] = '\0';
    /* "faulted @ 0x83ae_8fe05000" (the driver groups the digits with '_') */
    const char *at = memmem(p, rest, "faulted @ 0x", 12);
    if (at) {
        uint64_t v = 0;
        int digits = 0;
        for (at += 12; at < end && (isxdigit((unsigned char)*at) || *at == '_'); at++) {
            if (*at == '_')
                continue;
            if (++digits > 16)
                break;
            v = v << 4 | (uint64_t)(isdigit((unsigned char)*at) ? *at - '0' : (tolower((unsigned char)*at) - 'a' + 10));
        }
        if (digits > 0 && digits <= 16) {
            x->has_address = 1;
            x->address = v;
        }
    }
    /* "Fault is of type FAULT_PDE ACCESS_TYPE_VIRT_READ" (older drivers: ACCESS_TYPE_READ) */
    kernlog_word(p, rest, "of type ", x->fault_type, sizeof x->fault_type);
    kernlog_word(p, rest, "ACCESS_TYPE_", word, sizeof word);
    const char *acc = strncmp(word, "VIRT_", 5) == 0 ? word + 5 : word;
    size_t i = 0;
    for (; acc[i] && i + 1 < sizeof x->access; i++)
        x->access[i] = (char)tolower((unsigned char)acc[i]);
    x->access[i] = '\0';
    /* With the GPU core dump on, the H200 logged the fault as "UNRECOGNIZED_CLIENT faulted @ 0x1827d7_000984dc.
     * Fault is of type UNRECOGNIZED_FAULT UNRECOGNIZED_ACCESS_TYPE": a number that is no page (not even aligned
     * to one). Only a fault of a known type and access gives its page. */
    if (x->has_address && (strncmp(x->fault_type, "FAULT_", 6) != 0 || !x->access[0] || (x->address & 0xfff)))
        x->has_address = 0;
    return 1;
}

/* Keeps the Xid line in s[0..len) if it is one. */
static void kernlog_take(struct kernlog *k, const char *s, size_t len)
{
    struct kernlog_xid x;
    /* only a process's first memory fault (Xid 31) can be tied to a report, the first with a page and the first
     * without one (kernlog_attach): other Xids and a process's later faults take no place of the KERNLOG_KEEP */
    if (!kernlog_parse(s, len, &x) || x.xid != 31)
        return;
    for (size_t i = 0; i < k->n; i++)
        if (k->xid[i].pid == x.pid && k->xid[i].has_address == x.has_address && !strcmp(k->xid[i].name, x.name))
            return;
    if (k->n >= KERNLOG_KEEP) {
        k->dropped++;
        return;
    }
    if (!k->xid && !(k->xid = calloc(KERNLOG_KEEP, sizeof *k->xid))) {
        k->dropped++;
        return;
    }
    k->xid[k->n++] = x;
}

/* /dev/kmsg: one record per read; a record the ring buffer overwrote meanwhile is skipped (EPIPE). */
static void kernlog_read_records(struct kernlog *k)
{
    char buf[8192];
    long long bytes = 0;
    for (long records = 0;; records++) {
        if (records >= KERNLOG_RECORDS_MAX) {
            k->cut = bytes > 0 ? bytes : 1; /* records may be left: what they hold is not known */
            break;
        }
        ssize_t got = read(k->fd, buf, sizeof buf);
        if (got < 0 && (errno == EINTR || errno == EPIPE))
            continue;
        if (got <= 0)
            break; /* EAGAIN: no record left */
        bytes += got;
        kernlog_take(k, buf, (size_t)got);
    }
}

/* A log file: the lines appended since the run began (the first partial one, if the file was cut, dropped). */
static void kernlog_read_file(struct kernlog *k)
{
    struct stat sb;
    if (fstat(k->fd, &sb) != 0 || (long long)sb.st_size < k->start)
        k->start = 0; /* the file was rotated or cut during the run: read it from its start */
    if (lseek(k->fd, (off_t)k->start, SEEK_SET) < 0)
        return;
    char *buf = malloc(KERNLOG_LINE_MAX * 4);
    size_t have = 0, cap = KERNLOG_LINE_MAX * 4;
    long long total = 0;
    if (!buf)
        return;
    for (;;) {
        ssize_t got = have < cap && total < KERNLOG_READ_MAX ? read(k->fd, buf + have, cap - have) : 0;
        if (got < 0 && errno == EINTR)
            continue;
        if (got > 0) {
            have += (size_t)got;
            total += got;
        }
        size_t used = 0;
        for (;;) {
            char *nl = memchr(buf + used, '\n', have - used);
            if (!nl)
                break;
            kernlog_take(k, buf + used, (size_t)(nl - (buf + used)));
            used = (size_t)(nl - buf) + 1;
        }
        if (used == 0 && have == cap) { /* a line longer than the buffer: its start is enough */
            kernlog_take(k, buf, have);
            used = have;
        }
        memmove(buf, buf + used, have - used);
        have -= used;
        if (got <= 0) {
            if (have)
                kernlog_take(k, buf, have);
            break;
        }
    }
    /* stopped at the cap with more in the file: what was not read is not known */
    if (total >= KERNLOG_READ_MAX && fstat(k->fd, &sb) == 0 && (long long)sb.st_size > k->start + total)
        k->cut = total;
    free(buf);
}

void kernlog_end(struct kernlog *k)
{
    if (k->fd < 0)
        return;
    if (!k->why[0]) {
        if (k->is_file)
            kernlog_read_file(k);
        else
            kernlog_read_records(k);
    }
    close(k->fd);
    k->fd = -1;
}

void kernlog_free(struct kernlog *k)
{
    if (k->fd >= 0)
        close(k->fd);
    k->fd = -1;
    free(k->xid);
    k->xid = NULL;
    k->n = 0;
}

int kernlog_code_logs_page(long long code)
{
    /* CUDA_ERROR_ILLEGAL_ADDRESS. Not 710 (an assert: Xid 43), 716 (a misaligned address: Xid 13) nor 715 (an
     * illegal instruction: Xid 13); 719 (a launch failure) has many causes and none was seen with Xid 31. */
    return code == 700;
}

/* Whether the kernel's name of a process (at most 15 bytes of it) is the name nm, a path's last part or a
 * name. */
static int kernlog_same_name(const char *kname, const char *nm)
{
    if (!kname[0] || !nm || !*nm)
        return 0;
    const char *slash = strrchr(nm, '/');
    if (slash)
        nm = slash + 1;
    return strncmp(kname, nm, KERNLOG_NAME_MAX - 1) == 0 &&
           (strlen(kname) >= KERNLOG_NAME_MAX - 1 || !nm[strlen(kname)]);
}

/* Whether an Xid line names the report's process by its name (the report's "comm", its executable, argv[0]). */
static int kernlog_names_process(const struct kernlog_xid *x, const struct json *proc)
{
    const struct json *argv = json_get(proc, RK_ARGV);
    return kernlog_same_name(x->name, json_get_str(proc, RK_COMM)) ||
           kernlog_same_name(x->name, json_get_str(proc, RK_EXE)) ||
           kernlog_same_name(x->name, json_len(argv) ? json_str(json_at(argv, 0)) : NULL);
}

/* Puts "gpu_fault_log" with the line x (matched: "pid" or "name") into doc. */
static int kernlog_put_line(const struct kernlog *k, struct json *doc, const struct kernlog_xid *x, const char *matched)
{
    struct json *o = json_new(JSON_OBJ);
    if (!o || json_put(o, RK_SOURCE, json_new_str(k->path)) || json_put(o, RK_XID, json_new_int(x->xid)) ||
        json_put(o, RK_ADDRESS, json_new_hex(x->address)) || json_put(o, RK_GRANULE, json_new_int(KERNLOG_PAGE)) ||
        (x->access[0] && json_put(o, RK_ACCESS, json_new_str(x->access))) ||
        (x->fault_type[0] && json_put(o, RK_FAULT_TYPE, json_new_str(x->fault_type))) ||
        (x->pid >= 0 && json_put(o, RK_PID, json_new_int(x->pid))) ||
        (x->name[0] && json_put(o, RK_NAME, json_new_str(x->name))) || json_put(o, RK_MATCHED, json_new_str(matched)) ||
        json_put(o, RK_LINE, json_new_str(x->line))) {
        json_free(o);
        return ENOMEM;
    }
    return json_set(doc, RK_GPU_FAULT_LOG, o) ? (json_free(o), ENOMEM) : 0;
}

/* Puts "gpu_fault_log" saying why no line is given into doc. */
static int kernlog_put_why(const struct kernlog *k, struct json *doc, const char *why)
{
    struct json *o = json_new(JSON_OBJ);
    if (!o || json_put(o, RK_SOURCE, json_new_str(k->path)) || json_put(o, RK_UNKNOWN, json_new_str(why))) {
        json_free(o);
        return ENOMEM;
    }
    return json_set(doc, RK_GPU_FAULT_LOG, o) ? (json_free(o), ENOMEM) : 0;
}

int kernlog_attach(const struct kernlog *k, struct json *doc, int *added)
{
    const struct json *proc = json_get(doc, RK_PROCESS), *err = json_get(doc, RK_ERROR);
    const char *kind = json_get_str(doc, RK_KIND), *host = json_get_str(proc, RK_HOSTNAME);
    long long pid = json_get_int(proc, RK_PID, -1), code = json_get_int(err, RK_CODE, -1);
    char me[256] = "", why[1000];
    const struct kernlog_xid *by_pid = NULL, *by_name = NULL;
    size_t named = 0;
    *added = 0;
    /* Xid 31 is the memory unit's fault: it is this report's only when the report's error is one the memory unit
     * raises (a device assert logs no Xid 31, a misaligned address logs Xid 13), whatever process logged it */
    if (k->off || (kind && strcmp(kind, "fault") != 0) || pid < 0 || !kernlog_code_logs_page(code) ||
        json_get(doc, RK_GPU_FAULT_LOG))
        return 0;
    /* a report another node wrote into a shared directory: this host's log says nothing of it */
    if (host && gethostname(me, sizeof me - 1) == 0 && strcmp(host, me) != 0)
        return 0;
    const struct kernlog_xid *garbled = NULL;
    for (size_t i = 0; i < k->n; i++) {
        const struct kernlog_xid *x = &k->xid[i];
        if (x->xid != 31)
            continue;
        if (!x->has_address) {
            if (x->pid == pid && !garbled)
                garbled = x;
            continue;
        }
        if (x->pid == pid && (!x->name[0] || kernlog_names_process(x, proc))) {
            by_pid = x;
            break; /* a process's first memory fault is the one; what follows comes of it */
        }
        /* by name alone only where the log's pids are not this host's own: in the host's pid namespace a line of
         * another pid is another process's, whatever its name (another user's python) */
        if (k->host_pids || !kernlog_names_process(x, proc))
            continue;
        int seen = 0; /* processes are counted, not lines: one process may log several faults */
        for (size_t j = 0; j < i && !seen; j++)
            seen = k->xid[j].xid == 31 && k->xid[j].has_address && k->xid[j].pid == x->pid &&
                   kernlog_names_process(&k->xid[j], proc);
        if (!seen && !named++)
            by_name = x;
    }
    if (by_pid || (by_name && named == 1)) {
        *added = 1;
        return kernlog_put_line(k, doc, by_pid ? by_pid : by_name, by_pid ? "pid" : "name");
    }
    if (k->why[0])
        snprintf(why, sizeof why, "%s", k->why);
    else if (garbled)
        snprintf(why, sizeof why,
                 "the kernel logged this process's memory fault without a usable address (fault type %s, access %s; "
                 "so it did on the H200 with the GPU core dump on): \"%.400s\"",
                 garbled->fault_type[0] ? garbled->fault_type : "none", garbled->access[0] ? garbled->access : "none",
                 garbled->line);
    else if (named > 1)
        snprintf(why, sizeof why,
                 "%zu processes named %s faulted during the run, and the log gives none of them this process's pid "
                 "%lld (it writes the pid the host sees: another pid namespace), so which one was this process is not "
                 "known",
                 named, by_name->name, pid);
    else if (k->cut)
        snprintf(why, sizeof why,
                 "culprit stopped reading the kernel's log after the first %lld %s the run added to it (a log that "
                 "grows more than that during one run is cut), and no memory fault (Xid 31) of this process was in "
                 "what it read",
                 k->cut >= 1 << 20 ? k->cut >> 20 : k->cut, k->cut >= 1 << 20 ? "MiB" : "bytes");
    else
        snprintf(why, sizeof why, "the kernel logged no memory fault (Xid 31) of this process during the run%s",
                 k->dropped ? " among the processes' faults kept (the run logged more than culprit keeps)" : "");
    *added = 1;
    return kernlog_put_why(k, doc, why);
}

/* The report stage: a fault report of this host gets the kernel log's line of its process. */
enum ev_next kernlog_stage(struct ev_ctx *c)
{
    int added = 0;
    int rc = c->klog ? kernlog_attach(c->klog, c->doc, &added) : 0;
    if (added)
        c->changed = 1;
    return rc != 0 ? EV_NOMEM : EV_NEXT;
}
