/* culprit run's question to the device at a hang (devquery.h): the watch of the run directory, the debugger
 * attached to a live process (coredump.c finds it, subproc.c runs it, bounded), its kernel table, and the tie of
 * the running kernels to the hang report's launches in flight. */
#define _GNU_SOURCE
#include "devquery.h"
#include "../cli/cli.h"
#include "coredump.h"
#include "promote.h"
#include "../render/json.h"
#include "../report/subproc.h"
#include "../report/symbolize.h"
#include "../render/report_keys.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define DEVQ_POLL_MS 100            /* the run directory is looked at this often while the program runs */
#define DEVQ_OUTPUT_MAX (256 << 10) /* the debugger's output read; past it, it is stopped */
#define DEVQ_KEPT 4000              /* bytes of that output kept in the report */
#define DEVQ_SEEN 512               /* report versions remembered (name and inode) */
#define DEVQ_ANCESTRY 64            /* parents followed to find this process among a pid's ancestors */
#define DEVQ_AT_ONCE 8              /* processes asked at the same time (a node's ranks), each by its own debugger */
#define DEVQ_WAITING 64             /* reports waiting for their turn considered at one look (the rest at the next) */

struct devq_seen {
    char name[NAME_MAX + 1]; /* the report's file name */
    ino_t ino;               /* the version of it already looked at */
};

/* One question, on a thread of its own: a process's report is asked about, tied and rewritten. */
struct devq_job {
    struct devq *q;          /* the watch */
    char name[NAME_MAX + 1]; /* the report's file name */
    uint64_t devices;        /* the devices its process works on (devq_devices): no other question on them */
    ino_t ino;               /* the report's inode; the rewritten report's once saved (not asked about again) */
    pthread_t thread;        /* the job's thread */
    int busy;                /* the slot holds a job not yet reaped (the watch's) */
    atomic_int done;         /* the job's thread has ended: it can be joined without waiting */
};

struct devq {
    pthread_t thread;                   /* the watch */
    pthread_mutex_t lock;               /* guards stop */
    pthread_cond_t cond;                /* signalled by devq_stop */
    int stop;                           /* the program ended: one last look, then the thread ends */
    char dir[PATH_MAX];                 /* the run directory */
    double timeout_s;                   /* the debugger's time on one process */
    pid_t self;                         /* this command */
    char host[256];                     /* this host, as reports name it */
    char run_id[160];                   /* culprit run's id for its run (process.run_id of its reports) */
    char gdb[PATH_MAX];                 /* the debugger asked with ("": none, nogdb says why) */
    char nogdb[600];                    /* why there is no debugger */
    struct devq_seen seen[DEVQ_SEEN];   /* report versions looked at (the thread's) */
    size_t nseen;                       /* entries in seen */
    struct devq_job jobs[DEVQ_AT_ONCE]; /* the questions under way, one process each */
};

const char *devq_debugger(char *why, size_t whylen)
{
    const char *gdb = coredump_debugger();
    char path[PATH_MAX];
    if (strchr(gdb, '/')) {
        if (access(gdb, X_OK) == 0)
            return gdb;
        snprintf(why, whylen, "%s cannot be run: %s", gdb, strerror(errno));
        return NULL;
    }
    for (const char *p = getenv("PATH") ? getenv("PATH") : ""; *p;) {
        size_t len = strcspn(p, ":");
        if (len && (size_t)snprintf(path, sizeof path, "%.*s/%s", (int)len, p, gdb) < sizeof path &&
            access(path, X_OK) == 0)
            return gdb;
        p += len + (p[len] == ':');
    }
    snprintf(why, whylen, "%s was not found (install the CUDA toolkit's debugger, or set CULPRIT_CUDA_GDB)", gdb);
    return NULL;
}

const char *devq_plan(const char *opt, double *timeout_s, const char **wait)
{
    static char pid[32];
    char why[600];
    const char *env = getenv("CULPRIT_DEVICE_WAIT");
    *timeout_s = opt ? strtod(opt, NULL) : DEVQ_TIMEOUT_S;
    *wait = NULL;
    if (*timeout_s <= 0 || !devq_debugger(why, sizeof why))
        return NULL;
    snprintf(pid, sizeof pid, "%ld", (long)getpid());
    *wait = env && *env ? env : DEVQ_WAIT_S;
    return pid;
}

/* ---- the debugger's answer ---- */

/* The kernel's own name in a demangled signature or an invocation: the arguments at the end, template arguments,
 * qualifiers and a return type left out ("void at::(anonymous namespace)::spin<long>(long)" -> "spin"). */
static void devq_base(const char *s, char *out, size_t n)
{
    size_t len = strlen(s);
    while (len && isspace((unsigned char)s[len - 1]))
        len--;
    for (int pass = 0; pass < 2; pass++) {
        char close = pass ? '>' : ')', open = pass ? '<' : '(';
        if (len && s[len - 1] == close) {
            int depth = 0;
            size_t i = len;
            while (i-- > 0) {
                depth += s[i] == close ? 1 : s[i] == open ? -1 : 0;
                if (!depth)
                    break;
            }
            if (!depth)
                len = i;
        }
        while (len && isspace((unsigned char)s[len - 1]))
            len--;
    }
    size_t start = 0;
    for (size_t i = 0; i < len; i++)
        if (s[i] == ' ' || (s[i] == ':' && i + 1 < len && s[i + 1] == ':'))
            start = i + (s[i] == ':' ? 2 : 1);
    snprintf(out, n, "%.*s", (int)(len - start), s + start);
}

int devq_parse(const char *text, struct devq_kernel *k, int max)
{
    int n = 0, table = 0, rows = 0;
    for (const char *s = text; *s;) {
        const char *nl = strchr(s, '\n');
        size_t len = nl ? (size_t)(nl - s) : strlen(s);
        char line[1024];
        snprintf(line, sizeof line, "%.*s", (int)(len < sizeof line ? len : sizeof line - 1), s);
        s += len + (nl != NULL);
        if (strstr(line, "No CUDA kernels"))
            table = 1;
        if (strstr(line, "Kernel") && strstr(line, "GridDim") && strstr(line, "Invocation")) {
            table = 1;
            continue;
        }
        /* a row: "*      0      -   0    1 Active 0x00000001 (4,1,1) (64,1,1) step(x=0x7f0000000000, n=20)",
         * the focus's marked with "*"; the columns before GridDim are read by position where there are six
         * (Kernel Parent Dev Grid Status SMs-Mask), and only the two triples and the invocation are required */
        const char *p = line;
        while (*p == ' ' || *p == '*')
            p++;
        if (!table || !isdigit((unsigned char)*p))
            continue;
        rows++;
        const char *g = strchr(p, '(');
        if (!g || n >= max)
            continue;
        char head[256], *tok[8], *save = NULL;
        int ntok = 0;
        snprintf(head, sizeof head, "%.*s", (int)(g - p < (long)sizeof head ? g - p : (long)sizeof head - 1), p);
        for (char *w = strtok_r(head, " \t", &save); w && ntok < 8; w = strtok_r(NULL, " \t", &save))
            tok[ntok++] = w;
        struct devq_kernel *kk = &k[n];
        if (cli_parse_triple(&g, kk->grid, '(', ')') != 0)
            continue;
        while (*g == ' ')
            g++;
        if (cli_parse_triple(&g, kk->block, '(', ')') != 0)
            continue;
        while (*g == ' ')
            g++;
        snprintf(kk->invocation, sizeof kk->invocation, "%s", g);
        for (size_t e = strlen(kk->invocation); e && isspace((unsigned char)kk->invocation[e - 1]);)
            kk->invocation[--e] = '\0';
        devq_base(kk->invocation, kk->name, sizeof kk->name);
        snprintf(kk->status, sizeof kk->status, "%s", ntok == 6 ? tok[4] : "");
        kk->device = ntok == 6 && isdigit((unsigned char)tok[2][0]) ? strtol(tok[2], NULL, 10) : -1;
        if (kk->name[0])
            n++;
    }
    /* a table whose rows could not be read says nothing: that is not "no kernel runs" */
    return table && !(rows && !n) ? n : -1;
}

/* ---- the tie ---- */

/* Whether launch l runs kernel k: the same name, grid and block. */
static int devq_runs(const struct json *l, const struct devq_kernel *k)
{
    const char *name = json_get_str(l, RK_KERNEL);
    char base[256];
    if (!name || !strcmp(k->status, "Terminated"))
        return 0;
    devq_base(name, base, sizeof base);
    if (strcmp(base, k->name) != 0)
        return 0;
    for (int d = 0; d < 3; d++) {
        long long g = -1, b = -1;
        json_int(json_at(json_get(l, RK_GRID), (size_t)d), &g);
        json_int(json_at(json_get(l, RK_BLOCK), (size_t)d), &b);
        if (g != k->grid[d] || b != k->block[d])
            return 0;
    }
    return 1;
}

/* The running kernel launch l is, or -1. */
static int devq_which(const struct json *l, const struct devq_kernel *k, int n)
{
    for (int i = 0; i < n; i++)
        if (devq_runs(l, &k[i]))
            return i;
    return -1;
}

/* Whether a and b are launches of one stream. */
static int devq_same_stream(const struct json *a, const struct json *b)
{
    const char *x = json_get_str(a, RK_STREAM), *y = json_get_str(b, RK_STREAM);
    const char *cx = json_get_str(a, RK_CTX), *cy = json_get_str(b, RK_CTX);
    return x && y && !strcmp(x, y) && (!cx || !cy || !strcmp(cx, cy)) &&
           json_get_int(a, RK_DEVICE, -1) == json_get_int(b, RK_DEVICE, -1);
}

/* The report's "streams" entry of launch l's stream, or NULL. */
static struct json *devq_stream_of(struct json *doc, const struct json *l)
{
    const struct json *streams = json_get(doc, RK_STREAMS);
    for (size_t i = 0; i < json_len(streams); i++) {
        struct json *s = (struct json *)json_at(streams, i);
        const char *h = json_get_str(s, RK_STREAM), *x = json_get_str(l, RK_STREAM);
        const char *c = json_get_str(s, RK_CTX), *y = json_get_str(l, RK_CTX);
        if (h && x && !strcmp(h, x) && (!c || !y || !strcmp(c, y)))
            return s;
    }
    return NULL;
}

#define DEVQ_QUEUED 8 /* launches "queued" lists, as the library's report does */

/* After the device named the launch in flight: the former candidates after it on its stream had not started, so
 * they are queued behind it, before those the library listed as queued (which came after the last candidate). */
static int devq_requeue(struct json *doc, struct json *stream)
{
    const struct json *culprit = json_get(doc, RK_CULPRIT), *before = json_get(doc, RK_CANDIDATES_BEFORE_DEVICE);
    const struct json *queued = json_get(doc, RK_QUEUED);
    struct json *arr = json_new(JSON_ARR);
    long long seq = json_get_int(culprit, RK_SEQ, -1), n = 0;
    if (!arr)
        return ENOMEM;
    for (size_t i = 0; i < json_len(before) + json_len(queued); i++) {
        int mine = i < json_len(before);
        const struct json *l = mine ? json_at(before, i) : json_at(queued, i - json_len(before));
        if (mine && (!devq_same_stream(l, culprit) || json_get_int(l, RK_SEQ, -1) <= seq))
            continue;
        n += mine;
        if (json_len(arr) >= DEVQ_QUEUED)
            continue;
        struct json *copy = promote_copy(l);
        if (!copy || json_append(arr, copy) != 0) {
            json_free(copy);
            json_free(arr);
            return ENOMEM;
        }
    }
    if (!n) {
        json_free(arr);
        return 0;
    }
    if (json_put(doc, RK_QUEUED, arr) != 0)
        return ENOMEM;
    return stream && json_put(stream, RK_QUEUED, json_new_int(json_get_int(stream, RK_QUEUED, 0) + n)) ? ENOMEM : 0;
}

static int devq_extend_reason(struct json *doc, const char *more)
{
    struct json *v = (struct json *)json_get(doc, RK_VERDICT);
    const char *r = json_get_str(v, RK_REASON);
    char *both = NULL;
    if (!json_is(v, JSON_OBJ))
        return 0;
    if (asprintf(&both, "%s; %s", r ? r : "", more) < 0)
        return ENOMEM;
    int rc = json_put(v, RK_REASON, json_new_str(both));
    free(both);
    return rc ? ENOMEM : 0;
}

/* Keeps only the candidates whose index is marked in keep; the others go to candidates_before_device. */
static int devq_narrow(struct json *doc, const char *keep)
{
    struct json *cand = (struct json *)json_get(doc, RK_CANDIDATES), *before = json_new(JSON_ARR);
    size_t i, kept = 0;
    if (!before)
        return ENOMEM;
    for (i = 0; i < cand->len; i++) {
        if (keep[i])
            cand->kids[kept++] = cand->kids[i];
        else if (json_append(before, cand->kids[i]) != 0) {
            /* memory is short: the candidates not kept yet go, with those moved to before */
            for (size_t k = i; k < cand->len; k++)
                json_free(cand->kids[k]);
            json_free(before);
            cand->len = kept;
            return ENOMEM;
        }
    }
    cand->len = kept;
    return json_put(doc, RK_CANDIDATES_BEFORE_DEVICE, before) ? ENOMEM : 0;
}

static int devq_add_seqs(struct json *dq, const char *key, const struct json *cand, const char *mark)
{
    struct json *arr = json_new(JSON_ARR);
    if (!arr)
        return ENOMEM;
    for (size_t i = 0; i < json_len(cand); i++)
        if (mark[i] && json_append(arr, json_new_int(json_get_int(json_at(cand, i), RK_SEQ, -1))) != 0) {
            json_free(arr);
            return ENOMEM;
        }
    return json_put(dq, key, arr) ? ENOMEM : 0;
}

int devq_tie(struct json *doc, const struct devq_kernel *k, int n, struct json *dq, int *changed)
{
    const struct json *culprit = json_get(doc, RK_CULPRIT), *cand = json_get(doc, RK_CANDIDATES);
    size_t nc = json_len(cand), i, j;
    char why[700], *hit = NULL, *dup = NULL;
    int rc = 0, streams = 0, only = -1;

    *changed = 0;
    if (json_put(doc, RK_DEVICE_QUERY, dq) != 0)
        return ENOMEM;
    if (strcmp(json_get_str(dq, RK_STATUS) ? json_get_str(dq, RK_STATUS) : "", "answered") != 0)
        return 0; /* not asked: the report only says why */
    if (json_is(culprit, JSON_OBJ)) {
        /* already exact from the breadcrumbs: the device confirms it, or says otherwise */
        int which = devq_which(culprit, k, n);
        struct json *yes = json_new(JSON_BOOL);
        if (yes)
            yes->boolean = which >= 0;
        return json_put(dq, RK_CONFIRMS, yes) ? ENOMEM : 0;
    }
    if (!nc)
        return 0;
    hit = calloc(nc, 1);
    dup = calloc(nc, 1);
    if (!hit || !dup) {
        rc = ENOMEM;
        goto out;
    }
    /* candidates are listed stream by stream, oldest first: a stream's first that runs a running kernel is the
     * one in flight on it (what came before it finished; what follows it has not started), unless a later one
     * of the stream runs the same kernel with the same shape, which the device cannot tell apart from it */
    for (i = 0; i < nc; i++) {
        const struct json *c = json_at(cand, i);
        int which = devq_which(c, k, n), earlier = 0;
        if (which < 0)
            continue;
        for (j = 0; j < i && !earlier; j++)
            earlier = hit[j] && devq_same_stream(json_at(cand, j), c);
        if (!earlier) {
            hit[i] = 1;
            streams++;
            only = (int)i;
            continue;
        }
        for (j = 0; j < i; j++)
            if (hit[j] && devq_same_stream(json_at(cand, j), c) && devq_which(json_at(cand, j), k, n) == which)
                dup[i] = dup[j] = 1;
    }
    if (devq_add_seqs(dq, RK_RUNNING, cand, hit) != 0) {
        rc = ENOMEM;
        goto out;
    }
    if (!streams) {
        char names[300] = "";
        for (int q = 0; q < n && strlen(names) < sizeof names - 80; q++)
            snprintf(names + strlen(names), sizeof names - strlen(names), "%s%s", q ? ", " : "", k[q].name);
        snprintf(why, sizeof why,
                 n ? "the device was running %s, none of them a launch listed here"
                   : "the device was running no "
                     "kernel when asked%s",
                 names);
        rc = devq_extend_reason(doc, why);
        *changed = 1;
        goto out;
    }
    if (streams == 1 && !dup[only]) {
        const struct json *c = json_at(cand, (size_t)only);
        int which = devq_which(c, k, n);
        snprintf(why, sizeof why,
                 "the device was running %s <<<(%ld,%ld,%ld),(%ld,%ld,%ld)>>> when asked, and of the unfinished "
                 "launches of stream %s, #%lld is the first that runs it: it is the one in flight",
                 k[which].name, k[which].grid[0], k[which].grid[1], k[which].grid[2], k[which].block[0],
                 k[which].block[1], k[which].block[2], json_get_str(c, RK_STREAM) ? json_get_str(c, RK_STREAM) : "?",
                 json_get_int(c, RK_SEQ, -1));
        long long seq = json_get_int(c, RK_SEQ, -1);
        struct json *stream = devq_stream_of(doc, c);
        rc = promote_because(doc, (size_t)only, RK_CANDIDATES_BEFORE_DEVICE, "the device", why);
        /* its stream's entry names it as the breadcrumbs would have */
        if (!rc && stream &&
            (json_put(stream, RK_IN_FLIGHT, json_new_int(seq)) ||
             json_put(stream, RK_IN_FLIGHT_BY, json_new_str("the device"))))
            rc = ENOMEM;
        if (!rc && stream) {
            for (i = 0; i < stream->len; i++)
                if (!strcmp(stream->keys[i], RK_IN_FLIGHT_WINDOW)) {
                    json_free(stream->kids[i]);
                    memmove(stream->kids + i, stream->kids + i + 1, (stream->len - i - 1) * sizeof *stream->kids);
                    free(stream->keys[i]);
                    memmove(stream->keys + i, stream->keys + i + 1, (stream->len - i - 1) * sizeof *stream->keys);
                    stream->len--;
                    break;
                }
        }
        if (!rc)
            rc = devq_requeue(doc, stream);
        *changed = rc == 0;
        goto out;
    }
    /* several streams each run one, or one stream runs a kernel that several of its launches run: the device
     * narrows the candidates to those */
    for (i = 0; i < nc; i++)
        dup[i] |= hit[i];
    rc = devq_narrow(doc, dup);
    if (!rc) {
        snprintf(why, sizeof why,
                 streams > 1 ? "the device was running a kernel of %d streams when asked; the candidates are the "
                               "launch in flight on each"
                             : "the device was running the kernel of %d stream's candidates, which several of its "
                               "launches run with the same shape; one of them is in flight",
                 streams);
        rc = devq_extend_reason(doc, why);
        *changed = 1;
    }
out:
    free(hit);
    free(dup);
    return rc;
}

/* ---- asking ---- */

/* Whether pid is this process's descendant (the program, a worker of its launcher, a forked child). */
static int devq_descendant(long pid, pid_t self)
{
    for (int depth = 0; depth < DEVQ_ANCESTRY && pid > 1; depth++) {
        char path[64], buf[512];
        snprintf(path, sizeof path, "/proc/%ld/stat", pid);
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
            return 0;
        ssize_t got = read(fd, buf, sizeof buf - 1);
        close(fd);
        if (got <= 0)
            return 0;
        buf[got] = '\0';
        const char *close_paren = strrchr(buf, ')');
        long ppid;
        if (!close_paren || sscanf(close_paren + 1, " %*c %ld", &ppid) != 1)
            return 0;
        if (ppid == self)
            return 1;
        pid = ppid;
    }
    return 0;
}

static int devq_alive(long pid)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%ld", pid);
    return access(path, F_OK) == 0;
}

/* Whether the debugger's output says the process ended before or while it attached (gdb's words). */
static int devq_ended(const char *out)
{
    return strstr(out, "ptrace: No such process") || strstr(out, "The program no longer exists") ||
           strstr(out, "Program terminated with signal");
}

static double devq_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static int devq_put_str(struct json *o, const char *key, const char *v)
{
    return json_put(o, key, json_new_str(v)) ? ENOMEM : 0;
}

/* Asks the device about process pid; returns the report's "device_query" object (NULL when memory is short), and
 * the kernels found in k (*n, 0 when none or not asked). */
static struct json *devq_ask(const struct devq *q, long pid, struct devq_kernel *k, int *n)
{
    struct json *dq = json_new(JSON_OBJ);
    char why[PATH_MAX + 128], pidtxt[32];
    const char *status = "answered";
    struct subproc_result res = {0};
    int rc = -1;
    double t0 = devq_now();

    *n = 0;
    if (!dq)
        return NULL;
    const char *gdb = q->gdb;
    devq_put_str(dq, RK_BY, "cuda-gdb");
    if (!*gdb) {
        status = "no debugger";
        snprintf(why, sizeof why, "%s", q->nogdb);
    } else if (!devq_alive(pid)) {
        status = "process gone";
        snprintf(why, sizeof why, "the process had ended before the debugger could attach");
    } else {
        snprintf(pidtxt, sizeof pidtxt, "%ld", pid);
        char *argv[] = {(char *)gdb, "-nx", "-batch", "-p", pidtxt, "-ex", "info cuda kernels", NULL};
        /* in a group of its own: a ^C meant for the program must not stop the question (the launcher's SIGINT case) */
        struct subproc_opts o = {-1, 1, "TERM=dumb", q->timeout_s, DEVQ_OUTPUT_MAX};
        devq_put_str(dq, RK_DEBUGGER, gdb);
        rc = subproc_capture_alone(argv, &o, &res);
        if (rc == -2) {
            status = "no debugger";
            snprintf(why, sizeof why, "%s could not be started", gdb);
        } else if (rc != 0) {
            status = "failed";
            snprintf(why, sizeof why, "cannot run %s: %s", gdb, strerror(errno ? errno : ENOMEM));
        } else if (res.timed_out) {
            status = "timed out";
            snprintf(why, sizeof why, "the debugger had not answered after %g s and was stopped", q->timeout_s);
            /* a debugger killed while attached can leave the process stopped: it is this run's, let it go on */
            kill((pid_t)pid, SIGCONT);
        } else if (devq_ended(res.out)) {
            status = "process gone";
            snprintf(why, sizeof why, "the process ended while the debugger attached");
        } else if (strstr(res.out, "ptrace: Operation not permitted") || strstr(res.out, "Could not attach")) {
            status = "refused";
            snprintf(why, sizeof why,
                     "the system refused to let the debugger attach (ptrace; see /proc/sys/kernel/yama/ptrace_scope)");
        } else if ((*n = devq_parse(res.out, k, DEVQ_KERNELS)) < 0) {
            *n = 0;
            if (!devq_alive(pid)) {
                status = "process gone";
                snprintf(why, sizeof why, "the process ended while the debugger attached");
            } else {
                status = "failed";
                snprintf(why, sizeof why, "the debugger gave no kernel list%s",
                         res.exited && res.status ? " and failed" : "");
            }
        } /* else answered: a table read is an answer, though the process, let go, may have ended since */
    }
    devq_put_str(dq, RK_STATUS, status);
    if (strcmp(status, "answered") != 0)
        devq_put_str(dq, RK_WHY, why);
    json_put(dq, RK_MS, json_new_int((long long)((devq_now() - t0) * 1000)));
    if (res.out && res.len) {
        char *kept = strndup(res.out, DEVQ_KEPT);
        if (kept)
            devq_put_str(dq, RK_OUTPUT, kept);
        free(kept);
    }
    free(res.out);
    struct json *arr = json_new(JSON_ARR);
    for (int i = 0; arr && i < *n; i++) {
        struct json *o = json_new(JSON_OBJ), *g = json_new(JSON_ARR), *b = json_new(JSON_ARR);
        for (int d = 0; g && b && d < 3; d++) {
            json_append(g, json_new_int(k[i].grid[d]));
            json_append(b, json_new_int(k[i].block[d]));
        }
        if (!o || devq_put_str(o, RK_KERNEL, k[i].name) || devq_put_str(o, RK_INVOCATION, k[i].invocation) ||
            json_put(o, RK_GRID, g) || json_put(o, RK_BLOCK, b) || json_put(o, RK_DEVICE, json_new_int(k[i].device)) ||
            devq_put_str(o, RK_STATUS, k[i].status) || json_append(arr, o)) {
            json_free(o);
            continue;
        }
    }
    if (arr)
        json_put(dq, RK_KERNELS, arr);
    return dq;
}

/* ---- the watch ---- */

/* Whether this version of name was looked at; remembers it. */
/* Whether name was seen already as this inode (a rewritten report is a new one), without noting it. */
static int devq_known(const struct devq *q, const char *name, ino_t ino)
{
    for (size_t i = 0; i < q->nseen; i++)
        if (strcmp(q->seen[i].name, name) == 0)
            return q->seen[i].ino == ino;
    return 0;
}

static int devq_seen(struct devq *q, const char *name, ino_t ino)
{
    for (size_t i = 0; i < q->nseen; i++) {
        if (strcmp(q->seen[i].name, name) != 0)
            continue;
        if (q->seen[i].ino == ino)
            return 1;
        q->seen[i].ino = ino;
        return 0;
    }
    if (q->nseen < DEVQ_SEEN) {
        snprintf(q->seen[q->nseen].name, sizeof q->seen[q->nseen].name, "%s", name);
        q->seen[q->nseen++].ino = ino;
    }
    return 0;
}

/* Whether the device's answer can still settle something in a hang report: a window of candidates. When more
 * reports wait than can be asked about at once, such reports go first: a job's ranks may be stopped (torchrun's
 * grace, a launcher's kill) before every one was asked. */
static int devq_unsettled(const struct json *doc)
{
    return json_len(rk_candidates(doc)) > 0 && !rk_is_exact(doc);
}

/* The devices a report's process works on, as bits of their ordinals (its streams'); every bit when it names none
 * or one past 63, so that such a process is asked about alone. */
static uint64_t devq_devices(const struct json *doc)
{
    const struct json *streams = json_get(doc, RK_STREAMS);
    uint64_t bits = 0;
    for (size_t i = 0; i < json_len(streams); i++) {
        long long dev = json_get_int(json_at(streams, i), RK_DEVICE, -1);
        if (dev < 0 || dev > 63)
            return UINT64_MAX;
        bits |= 1ull << dev;
    }
    return bits ? bits : UINT64_MAX;
}

/* Report path loaded into *doc when it is one to ask about: a hang report of this run's process on this host (a
 * directory may be shared), a descendant of this command while it lives, not asked about yet. Returns 0 (*doc
 * NULL) when it is not. */
static int devq_wanted(const struct devq *q, const char *path, struct json **doc)
{
    char why[1024];
    *doc = NULL;
    if (symbolize_load(path, doc, why, sizeof why) != 0)
        return 0;
    const struct json *proc = json_get(*doc, RK_PROCESS);
    const char *kind = json_get_str(*doc, RK_KIND), *host = json_get_str(proc, RK_HOSTNAME);
    const char *run = json_get_str(proc, RK_RUN_ID);
    long pid = (long)json_get_int(proc, RK_PID, -1);
    if (!kind || strcmp(kind, "hang") != 0 || json_get(*doc, RK_DEVICE_QUERY) || pid <= 1 ||
        (host && strcmp(host, q->host) != 0) || (run && q->run_id[0] && strcmp(run, q->run_id) != 0) ||
        (devq_alive(pid) ? !devq_descendant(pid, q->self) : !run)) {
        json_free(*doc);
        *doc = NULL;
        return 0;
    }
    return 1;
}

static void *devq_job_main(void *arg)
{
    struct devq_job *j = arg;
    char path[PATH_MAX + NAME_MAX + 2], why[1024];
    struct devq_kernel k[DEVQ_KERNELS];
    struct json *doc = NULL;
    int n = 0, changed = 0;
    struct stat st;

    snprintf(path, sizeof path, "%s/%s", j->q->dir, j->name);
    if (devq_wanted(j->q, path, &doc)) { /* still: the version read now is the one answered */
        long pid = (long)json_get_int(json_get(doc, RK_PROCESS), RK_PID, -1);
        struct json *dq = devq_ask(j->q, pid, k, &n);
        if (dq && devq_tie(doc, k, n, dq, &changed) != 0)
            cli_err("out of memory tying the device's answer to %s", path);
        else if (dq && symbolize_save(path, doc, why, sizeof why) != 0)
            cli_err("%s", why);
        else if (dq && lstat(path, &st) == 0)
            j->ino = st.st_ino; /* our own version */
    }
    json_free(doc);
    atomic_store_explicit(&j->done, 1, memory_order_release);
    return NULL;
}

/* The questions that have ended (all of them, waiting, with wait): their reports' versions are not asked about
 * again. Returns the devices of those still under way. */
static uint64_t devq_reap(struct devq *q, int wait)
{
    uint64_t busy = 0;
    for (size_t i = 0; i < DEVQ_AT_ONCE; i++) {
        struct devq_job *j = &q->jobs[i];
        if (!j->busy)
            continue;
        if (!wait && !atomic_load_explicit(&j->done, memory_order_acquire)) {
            busy |= j->devices;
            continue;
        }
        pthread_join(j->thread, NULL);
        devq_seen(q, j->name, j->ino); /* the rewritten version, too */
        j->busy = 0;
    }
    return busy;
}

/* A hang report waiting for its question. */
struct devq_waiting {
    char name[NAME_MAX + 1]; /* its file name */
    ino_t ino;               /* the version read */
    int unsettled;           /* the answer can settle it (devq_unsettled): asked about first */
    uint64_t devices;        /* its process's devices (devq_devices) */
};

static int devq_waiting_cmp(const void *a, const void *b)
{
    return ((const struct devq_waiting *)b)->unsettled - ((const struct devq_waiting *)a)->unsettled;
}

/* Starts one question in a free slot of q (there is one). */
static void devq_start_job(struct devq *q, const struct devq_waiting *w)
{
    struct devq_job *j = q->jobs;
    while (j->busy)
        j++;
    j->q = q;
    _Static_assert(sizeof j->name == sizeof w->name, "a waiting report's name fits its job's");
    memcpy(j->name, w->name, sizeof j->name);
    j->ino = w->ino;
    j->devices = w->devices;
    devq_seen(q, j->name, j->ino); /* under way: not asked about again at the next look */
    j->busy = 1;
    atomic_store_explicit(&j->done, 0, memory_order_relaxed);
    /* the signals stay blocked on its thread, as on the watch's */
    if (pthread_create(&j->thread, NULL, devq_job_main, j) != 0) {
        devq_job_main(j); /* no thread to be had: asked here */
        devq_seen(q, j->name, j->ino);
        j->busy = 0;
    }
}

/* One look at the directory, after the questions that ended were reaped (busy: the devices of those under way):
 * each new hang report is asked about on a thread of its own, so that no stopping process waits for another's
 * answer (a torch process took 7.6-9 s to answer on an H100, and each waits CULPRIT_DEVICE_WAIT at most), at most
 * DEVQ_AT_ONCE at a time and one at a time on a device (cuda-gdb debugs processes at once where each has its
 * devices to itself); those the answer can settle first, the others at a later look. With ask 0, the reports
 * there are noted as another run's. Returns how many questions it started. */
static size_t devq_scan(struct devq *q, int ask, uint64_t busy)
{
    struct devq_waiting waiting[DEVQ_WAITING];
    size_t nwait = 0, nbusy = 0, started = 0;
    DIR *d;
    struct dirent *de;
    struct stat st;

    for (size_t i = 0; i < DEVQ_AT_ONCE; i++)
        nbusy += q->jobs[i].busy != 0;
    if ((ask && nbusy == DEVQ_AT_ONCE) || !(d = opendir(q->dir)))
        return 0;
    while ((de = readdir(d)) != NULL && nwait < DEVQ_WAITING) {
        char path[PATH_MAX + NAME_MAX + 2];
        struct json *doc;
        if (fnmatch("culprit-*-hang.json", de->d_name, 0) != 0 ||
            fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(st.st_mode) ||
            st.st_uid != geteuid() || devq_known(q, de->d_name, st.st_ino))
            continue;
        snprintf(path, sizeof path, "%s/%s", q->dir, de->d_name);
        if (!ask || !devq_wanted(q, path, &doc)) {
            devq_seen(q, de->d_name, st.st_ino); /* nothing to ask, as long as it is this version */
            continue;
        }
        struct devq_waiting *w = &waiting[nwait++];
        snprintf(w->name, sizeof w->name, "%s", de->d_name);
        w->ino = st.st_ino;
        w->unsettled = devq_unsettled(doc);
        w->devices = devq_devices(doc);
        json_free(doc);
    }
    closedir(d);
    qsort(waiting, nwait, sizeof waiting[0], devq_waiting_cmp);
    for (size_t i = 0; i < nwait && nbusy < DEVQ_AT_ONCE; i++) {
        if (waiting[i].devices & busy)
            continue; /* its device is being asked about: at a later look */
        devq_start_job(q, &waiting[i]);
        busy |= waiting[i].devices;
        nbusy++;
        started++;
    }
    return started;
}

static void *devq_main(void *arg)
{
    struct devq *q = arg;
    for (;;) {
        struct timespec until;
        int stop;
        devq_scan(q, 1, devq_reap(q, 0));
        pthread_mutex_lock(&q->lock);
        clock_gettime(CLOCK_MONOTONIC, &until);
        until.tv_nsec += DEVQ_POLL_MS * 1000000L;
        if (until.tv_nsec >= 1000000000L) {
            until.tv_sec++;
            until.tv_nsec -= 1000000000L;
        }
        while (!q->stop && pthread_cond_timedwait(&q->cond, &q->lock, &until) == 0) {
        }
        stop = q->stop;
        pthread_mutex_unlock(&q->lock);
        if (stop) {
            /* the questions under way end, and the reports written in the program's last moments are asked about */
            do
                devq_reap(q, 1);
            while (devq_scan(q, 1, 0));
            return NULL;
        }
    }
}

struct devq *devq_start(const char *dir, double timeout_s, const char *run_id)
{
    struct devq *q = calloc(1, sizeof *q);
    pthread_condattr_t ca;
    sigset_t all, old;
    if (!q)
        return NULL;
    snprintf(q->dir, sizeof q->dir, "%s", dir);
    q->timeout_s = timeout_s;
    snprintf(q->run_id, sizeof q->run_id, "%s", run_id ? run_id : "");
    q->self = getpid();
    if (gethostname(q->host, sizeof q->host) != 0)
        q->host[0] = '\0';
    q->host[sizeof q->host - 1] = '\0';
    const char *gdb = devq_debugger(q->nogdb, sizeof q->nogdb); /* the same for the whole run */
    snprintf(q->gdb, sizeof q->gdb, "%s", gdb ? gdb : "");
    devq_scan(q, 0, 0); /* reports already there are another run's */
    pthread_mutex_init(&q->lock, NULL);
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&q->cond, &ca);
    pthread_condattr_destroy(&ca);
    /* the watch takes no signal: the command's forwarding handlers run on its main thread */
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    int rc = pthread_create(&q->thread, NULL, devq_main, q);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc != 0) {
        pthread_cond_destroy(&q->cond);
        pthread_mutex_destroy(&q->lock);
        free(q);
        return NULL;
    }
    return q;
}

void devq_stop(struct devq *q)
{
    if (!q)
        return;
    pthread_mutex_lock(&q->lock);
    q->stop = 1;
    pthread_cond_signal(&q->cond);
    pthread_mutex_unlock(&q->lock);
    pthread_join(q->thread, NULL);
    pthread_cond_destroy(&q->cond);
    pthread_mutex_destroy(&q->lock);
    free(q);
}
