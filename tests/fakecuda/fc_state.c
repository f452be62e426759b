/* State of the simulated CUDA driver: the global lock, environment (FAKECUDA_*), contexts, streams and their
 * lazily run work queues, scripted faults, events. Memory is fc_memory.c's, modules fc_module.c's, graphs
 * fc_graph.c's, the GPU core dump fc_coredump.c's; the exported entry points live in fc_api.c and those files;
 * this file exports nothing. All functions here expect the global lock held (fc_begin takes it). */
#define _GNU_SOURCE
#include "fc_internal.h"

#include <ctype.h>
#include <errno.h>
#include <pthread.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

struct fc_global fc_g;

/* Recursive, because a host function queued with cuLaunchHostFunc runs under the lock and may call back in. */
static pthread_mutex_t fc_mu;
static pthread_once_t fc_once = PTHREAD_ONCE_INIT;

/* Current-context stack of this thread, and its per-thread default stream in each context (by context id). */
static __thread struct fc_ctx *tl_stack[32];
static __thread int tl_depth;
static __thread struct fc_stream *tl_pts[FC_MAX_CTX];
static __thread int tl_locked; /* depth of this thread's hold on fc_mu (it is recursive) */

/* ---- environment ------------------------------------------------------------------------------------------ */

static void fc_warn(const char *var, const char *what, const char *value)
{
    char buf[512];
    int n = snprintf(buf, sizeof buf, "fakecuda: bad %s %s '%s' (ignored)\n", var, what, value);
    if (n > (int)sizeof buf - 1)
        n = (int)sizeof buf - 1;
    if (n > 0 && write(2, buf, (size_t)n) < 0) { /* nothing sensible to do */
    }
}

/* Parses a whole string as an unsigned decimal number; returns 0 on success. */
static int fc_parse_u64(const char *s, unsigned long long *out)
{
    char *end;
    if (!s || !isdigit((unsigned char)*s))
        return -1;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || *end)
        return -1;
    *out = v;
    return 0;
}

static int fc_parse_code(const char *s, CUresult *out)
{
    unsigned long long v;
    if (fc_parse_u64(s, &v) || v == 0 || v > 100000)
        return -1;
    *out = (CUresult)v;
    return 0;
}

/* One FAKECUDA_FAULT spec (hang 0) or FAKECUDA_HANG spec (hang 1): comma-separated key=value; a fault takes
 * code=, a hang ms=. Returns 0 when it is complete and valid. */
static int fc_parse_spec(char *spec, struct fc_fault *f, int hang)
{
    memset(f, 0, sizeof *f);
    f->code = CUDA_ERROR_ILLEGAL_ADDRESS;
    f->ms = FC_NEVER;
    f->nth = 1;
    f->write = 1;
    int have_nth = 0;
    for (char *save = NULL, *kv = strtok_r(spec, ",", &save); kv; kv = strtok_r(NULL, ",", &save)) {
        char *eq = strchr(kv, '=');
        if (!eq)
            return -1;
        *eq = 0;
        const char *k = kv, *v = eq + 1;
        if (!strcmp(k, "launch")) {
            if (fc_parse_u64(v, &f->launch) || f->launch == 0)
                return -1;
        } else if (!strcmp(k, "kernel")) {
            if (!*v || strlen(v) >= sizeof f->kernel)
                return -1;
            strcpy(f->kernel, v);
        } else if (!strcmp(k, "nth")) {
            if (fc_parse_u64(v, &f->nth) || f->nth == 0)
                return -1;
            have_nth = 1;
        } else if (!strcmp(k, "code") && !hang) {
            if (fc_parse_code(v, &f->code))
                return -1;
        } else if (!strcmp(k, "offset") && !hang) {
            char *end;
            errno = 0;
            f->offset = strtoll(v, &end, 0);
            if (!*v || *end || errno)
                return -1;
            f->has_offset = 1;
        } else if (!strcmp(k, "access") && !hang) {
            if (strcmp(v, "read") && strcmp(v, "write"))
                return -1;
            f->write = !strcmp(v, "write");
        } else if (!strcmp(k, "ms") && hang) {
            if (fc_parse_u64(v, &f->ms) || f->ms == 0 || f->ms > 86400000ULL)
                return -1;
        } else {
            return -1;
        }
    }
    /* Exactly one way of choosing the launch; nth only means something with kernel=. */
    if ((f->launch != 0) == (f->kernel[0] != 0))
        return -1;
    if (have_nth && f->launch)
        return -1;
    return 0;
}

/* One FAKECUDA_FAIL spec: API:N[:CODE], N a count from 1 or '*'. */
static int fc_parse_fail(char *spec, struct fc_fail *f)
{
    memset(f, 0, sizeof *f);
    f->code = CUDA_ERROR_OUT_OF_MEMORY;
    char *c1 = strchr(spec, ':');
    if (!c1)
        return -1;
    *c1 = 0;
    char *n = c1 + 1, *c2 = strchr(n, ':');
    if (c2) {
        *c2 = 0;
        if (fc_parse_code(c2 + 1, &f->code))
            return -1;
    }
    if (strncmp(spec, "cu", 2) || strlen(spec) >= sizeof f->api)
        return -1;
    strcpy(f->api, spec);
    if (!strcmp(n, "*"))
        f->nth = 0;
    else if (fc_parse_u64(n, &f->nth) || f->nth == 0)
        return -1;
    return 0;
}

/* Splits a ';'-separated variable and hands each non-empty piece to parse; bad pieces are reported and dropped. */
static int fc_parse_list(const char *var, void *arr, size_t elem, int max, int (*parse)(char *, void *))
{
    const char *v = getenv(var);
    if (!v || !*v)
        return 0;
    char *copy = strdup(v);
    int n = 0;
    if (!copy)
        return 0;
    for (char *save = NULL, *p = strtok_r(copy, ";", &save); p; p = strtok_r(NULL, ";", &save)) {
        char orig[512];
        snprintf(orig, sizeof orig, "%s", p);
        if (n == max) {
            fc_warn(var, "spec (too many)", orig);
            continue;
        }
        if (parse(p, (char *)arr + (size_t)n * elem))
            fc_warn(var, "spec", orig);
        else
            n++;
    }
    free(copy);
    return n;
}

static int fc_parse_fault_v(char *s, void *f)
{
    return fc_parse_spec(s, f, 0);
}
static int fc_parse_hang_v(char *s, void *f)
{
    return fc_parse_spec(s, f, 1);
}
static int fc_parse_fail_v(char *s, void *f)
{
    return fc_parse_fail(s, f);
}

static void fc_read_env(void)
{
    unsigned long long v;
    const char *s;

    fc_g.ndev = 2;
    if ((s = getenv("FAKECUDA_DEVICES")) && *s) {
        if (fc_parse_u64(s, &v) || v > FC_MAX_DEVICES)
            fc_warn("FAKECUDA_DEVICES", "value", s);
        else
            fc_g.ndev = (int)v;
    }
    if ((s = getenv("FAKECUDA_RUN_AHEAD")) && *s) {
        if (fc_parse_u64(s, &v))
            fc_warn("FAKECUDA_RUN_AHEAD", "value", s);
        else
            fc_g.run_ahead = v;
    }
    if ((s = getenv("FAKECUDA_TRACE")) && *s) {
        if (strcmp(s, "0") && strcmp(s, "1"))
            fc_warn("FAKECUDA_TRACE", "value", s);
        else
            fc_g.trace = s[0] == '1';
    }
    fc_g.nfaults = fc_parse_list("FAKECUDA_FAULT", fc_g.faults, sizeof fc_g.faults[0], FC_MAX_FAULTS, fc_parse_fault_v);
    fc_g.nhangs = fc_parse_list("FAKECUDA_HANG", fc_g.hangs, sizeof fc_g.hangs[0], FC_MAX_FAULTS, fc_parse_hang_v);
    fc_g.nfails = fc_parse_list("FAKECUDA_FAIL", fc_g.fails, sizeof fc_g.fails[0], FC_MAX_FAILS, fc_parse_fail_v);
}

/* ---- lock, fork, entry/exit ------------------------------------------------------------------------------- */

static void fc_mutex_init(void)
{
    pthread_mutexattr_t a;
    pthread_mutexattr_init(&a);
    pthread_mutexattr_settype(&a, PTHREAD_MUTEX_RECURSIVE);
    pthread_mutex_init(&fc_mu, &a);
    pthread_mutexattr_destroy(&a);
}

/* fork() while another thread holds the lock would leave the child's copy locked forever: hold it across the
 * fork. The child keeps every object; its lock is made afresh because the owner recorded in it is a thread id
 * that no longer exists there. */
static void fc_atfork_prepare(void)
{
    pthread_mutex_lock(&fc_mu);
}
static void fc_atfork_parent(void)
{
    pthread_mutex_unlock(&fc_mu);
}
static void fc_atfork_child(void)
{
    fc_mutex_init();
}

static void fc_init_once(void)
{
    fc_mutex_init();
    fc_read_env();
    pthread_atfork(fc_atfork_prepare, fc_atfork_parent, fc_atfork_child);
}

static void fc_trace(const char *api, CUresult rc)
{
    char buf[200];
    int n = snprintf(buf, sizeof buf, "fakecuda: %s -> %d %s\n", api, (int)rc, fc_error_name(rc));
    if (n > (int)sizeof buf - 1)
        n = (int)sizeof buf - 1;
    if (write(2, buf, (size_t)n) < 0) { /* tracing is best effort */
    }
}

/* The driver's own teardown: once its destructor ran (the process is exiting and the library is finalized),
 * every call answers CUDA_ERROR_DEINITIALIZED, as the driver's do. */
static int fc_gone;
__attribute__((destructor)) static void fc_fini(void)
{
    fc_gone = 1;
}

CUresult fc_begin(const char *api)
{
    pthread_once(&fc_once, fc_init_once);
    pthread_mutex_lock(&fc_mu);
    tl_locked++;
    CUresult rc = fc_gone ? CUDA_ERROR_DEINITIALIZED : CUDA_SUCCESS;
    for (int i = 0; i < fc_g.nfails; i++) {
        struct fc_fail *f = &fc_g.fails[i];
        if (strcmp(f->api, api))
            continue;
        f->calls++;
        if (rc == CUDA_SUCCESS && (f->nth == 0 || f->calls == f->nth))
            rc = f->code;
    }
    return rc;
}

CUresult fc_end(const char *api, CUresult rc)
{
    if (fc_g.trace)
        fc_trace(api, rc);
    tl_locked--;
    pthread_mutex_unlock(&fc_mu);
    return rc;
}

static unsigned long long fc_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (unsigned long long)ts.tv_sec * 1000000000ULL + (unsigned long long)ts.tv_nsec;
}

/* A caller that must wait for a running launch (FAKECUDA_HANG) lets go of the lock for a millisecond, so other
 * threads (and a tool querying from its own thread) keep working, as they would with a busy GPU. Held more
 * than once (a host function calling back in), the lock cannot be let go: the wait just sleeps. */
static void fc_wait_a_little(void)
{
    struct timespec ms = {0, 1000000};
    int depth = tl_locked;
    if (depth == 1) {
        tl_locked = 0;
        pthread_mutex_unlock(&fc_mu);
    }
    nanosleep(&ms, NULL);
    if (depth == 1) {
        pthread_mutex_lock(&fc_mu);
        tl_locked = 1;
    }
}

/* ---- contexts and streams --------------------------------------------------------------------------------- */

struct fc_ctx *fc_ctx_current(void)
{
    return tl_depth ? tl_stack[tl_depth - 1] : NULL;
}

void fc_ctx_set_current(struct fc_ctx *ctx)
{
    if (tl_depth)
        tl_stack[tl_depth - 1] = ctx;
    else if (ctx)
        tl_stack[tl_depth++] = ctx;
}

int fc_ctx_push(struct fc_ctx *ctx)
{
    if (tl_depth == (int)(sizeof tl_stack / sizeof tl_stack[0]))
        return -1;
    tl_stack[tl_depth++] = ctx;
    return 0;
}

struct fc_ctx *fc_ctx_pop(void)
{
    return tl_depth ? tl_stack[--tl_depth] : NULL;
}

/* A destroyed context leaves this thread's stack; other threads' stacks keep the pointer, which fc_cur rejects
 * because the context is no longer alive (contexts are never freed, so that read is safe). */
void fc_ctx_forget_current(struct fc_ctx *ctx)
{
    int j = 0;
    for (int i = 0; i < tl_depth; i++)
        if (tl_stack[i] != ctx)
            tl_stack[j++] = tl_stack[i];
    tl_depth = j;
}

CUresult fc_ctx_valid(CUcontext h, struct fc_ctx **out)
{
    for (unsigned i = 0; i < fc_g.nctx; i++) {
        if ((void *)fc_g.ctx[i] == (void *)h && fc_g.ctx[i]->alive) {
            *out = fc_g.ctx[i];
            return CUDA_SUCCESS;
        }
    }
    return CUDA_ERROR_INVALID_CONTEXT;
}

CUresult fc_ctx_new(int device, int primary, struct fc_ctx **out)
{
    if (fc_g.nctx == FC_MAX_CTX)
        return CUDA_ERROR_OUT_OF_MEMORY;
    struct fc_ctx *c = calloc(1, sizeof *c);
    if (!c)
        return CUDA_ERROR_OUT_OF_MEMORY;
    c->id = fc_g.nctx;
    c->alive = 1;
    c->device = device;
    c->primary = primary;
    CUresult rc = fc_stream_new(c, FC_STREAM_LEGACY, &c->legacy);
    if (rc) {
        free(c);
        return rc;
    }
    fc_g.ctx[fc_g.nctx++] = c;
    *out = c;
    return CUDA_SUCCESS;
}

CUresult fc_cur(struct fc_ctx **out)
{
    if (!fc_g.inited)
        return CUDA_ERROR_NOT_INITIALIZED;
    struct fc_ctx *c = fc_ctx_current();
    if (!c || !c->alive)
        return CUDA_ERROR_INVALID_CONTEXT;
    *out = c;
    return CUDA_SUCCESS;
}

CUresult fc_ready(void)
{
    return fc_g.inited ? CUDA_SUCCESS : CUDA_ERROR_NOT_INITIALIZED;
}

CUresult fc_live(struct fc_ctx **out)
{
    struct fc_ctx *c;
    CUresult rc = fc_cur(&c);
    if (rc)
        return rc;
    if (out)
        *out = c;
    return c->sticky;
}

CUresult fc_work_stream(CUstream h, int pt, struct fc_stream **s)
{
    CUresult rc = fc_stream_get(h, pt, s);
    return rc ? rc : (*s)->ctx->sticky;
}

CUresult fc_new_op(enum fc_opkind kind, struct fc_op **op)
{
    *op = fc_op_new(kind);
    return *op ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}

CUresult fc_stream_new(struct fc_ctx *ctx, enum fc_stream_kind kind, struct fc_stream **out)
{
    struct fc_stream *s = calloc(1, sizeof *s);
    if (!s)
        return CUDA_ERROR_OUT_OF_MEMORY;
    s->ctx = ctx;
    s->kind = kind;
    /* Appended, so that the round-robin of a context drain visits streams in creation order. */
    struct fc_stream **pp = &ctx->streams;
    while (*pp)
        pp = &(*pp)->next;
    *pp = s;
    *out = s;
    return CUDA_SUCCESS;
}

/* Resolves a stream handle as the entry point that received it sees it: NULL is the legacy default stream for
 * legacy entry points and the per-thread default stream for _ptsz/_ptds ones; CU_STREAM_LEGACY and
 * CU_STREAM_PER_THREAD mean the same everywhere. Streams are never freed, so scanning them is safe. */
CUresult fc_stream_get(CUstream h, int per_thread, struct fc_stream **out)
{
    if (!fc_g.inited)
        return CUDA_ERROR_NOT_INITIALIZED;
    if (h == NULL || h == CU_STREAM_LEGACY || h == CU_STREAM_PER_THREAD) {
        struct fc_ctx *c;
        CUresult rc = fc_cur(&c);
        if (rc)
            return rc;
        if (h == CU_STREAM_LEGACY || (h == NULL && !per_thread)) {
            *out = c->legacy;
            return CUDA_SUCCESS;
        }
        if (!tl_pts[c->id]) {
            rc = fc_stream_new(c, FC_STREAM_PTDS, &tl_pts[c->id]);
            if (rc)
                return rc;
        }
        *out = tl_pts[c->id];
        return CUDA_SUCCESS;
    }
    for (unsigned i = 0; i < fc_g.nctx; i++) {
        if (!fc_g.ctx[i]->alive)
            continue;
        for (struct fc_stream *s = fc_g.ctx[i]->streams; s; s = s->next) {
            if ((void *)s == (void *)h && s->kind == FC_STREAM_CREATED && !s->destroyed) {
                *out = s;
                return CUDA_SUCCESS;
            }
        }
    }
    return CUDA_ERROR_INVALID_HANDLE;
}

/* Drops every queued op of the context without running it: what a sticky fault does to the rest of the work. */
void fc_ctx_discard(struct fc_ctx *ctx)
{
    for (struct fc_stream *s = ctx->streams; s; s = s->next) {
        struct fc_op *op = s->head;
        while (op) {
            struct fc_op *next = op->next;
            free(op);
            op = next;
        }
        s->head = s->tail = NULL;
        s->queued = 0;
    }
}

/* ---- faults ----------------------------------------------------------------------------------------------- */

/* The failed assertion goes into the device's printf buffer, which the driver prints on the process's stdout at
 * the next synchronize (fc_printf_flush), not when the error surfaces at some other call. */
static void fc_hold_assert(struct fc_ctx *ctx, const struct fc_op *op)
{
    snprintf(ctx->held, sizeof ctx->held,
             "fake.cu:8: void %s(...): block: [1,0,0], thread: [3,0,0] Assertion `idx < n` failed.\n",
             op->func ? op->func->plain : "kernel");
}

void fc_printf_flush(struct fc_ctx *ctx)
{
    size_t n = ctx ? strlen(ctx->held) : 0;
    if (!n)
        return;
    if (write(1, ctx->held, n) < 0) { /* one write, so lines never interleave; stdout closed: no one to tell */
    }
    ctx->held[0] = '\0';
}

static CUresult fc_raise(struct fc_ctx *ctx, const struct fc_op *op)
{
    fc_kmsg(op);
    fc_coredump(op);
    ctx->sticky = op->fault;
    if (op->fault == CUDA_ERROR_ASSERT)
        fc_hold_assert(ctx, op);
    fc_ctx_discard(ctx);
    return ctx->sticky;
}

/* The first of n specs that picks the kernel op being queued live, or NULL. Every spec sees every launch so that
 * the per-kernel counts stay right when several specs are given. */
static const struct fc_fault *fc_spec_for(struct fc_fault *specs, int n, const struct fc_op *op)
{
    const struct fc_fault *first = NULL;
    for (int i = 0; i < n; i++) {
        struct fc_fault *f = &specs[i];
        int hit = 0;
        if (f->fired)
            continue;
        if (f->launch) {
            hit = fc_g.launches == f->launch;
        } else if (!strcmp(f->kernel, op->func->name) || !strcmp(f->kernel, op->func->plain)) {
            hit = ++f->seen == f->nth;
        }
        if (hit) {
            f->fired = 1;
            if (!first)
                first = f;
        }
    }
    return first;
}

/* FAKECUDA_RUNNING=DIR: a launch that never completes (FAKECUDA_HANG without ms) is what the device runs from now
 * on; it is added as a line "NAME GX,GY,GZ BX,BY,BZ DEVICE" to DIR/running-PID, which the tests' stand-in for
 * cuda-gdb reads when it is attached to this process. */
static void fc_note_running(const struct fc_op *op, int device)
{
    const char *dir = getenv("FAKECUDA_RUNNING");
    char path[4096], line[400];
    if (!dir || !*dir || !op->func)
        return;
    snprintf(path, sizeof path, "%s/running-%ld", dir, (long)getpid());
    int n = snprintf(line, sizeof line, "%s %u,%u,%u %u,%u,%u %d\n", op->func->plain, op->grid[0], op->grid[1],
                     op->grid[2], op->block[0], op->block[1], op->block[2], device);
    int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0)
        return;
    if (n > 0 && write(fd, line, (size_t)n) < 0) { /* a test's file: nothing to do about it */
    }
    close(fd);
}

/* Whether a kernel op will fault when it runs, and from when it can complete (a launch started running when
 * it was queued: a GPU does not wait for the host to ask). */
static void fc_script(struct fc_op *op)
{
    const struct fc_fault *f = fc_spec_for(fc_g.faults, fc_g.nfaults, op);
    const struct fc_fault *h = fc_spec_for(fc_g.hangs, fc_g.nhangs, op);
    op->fault = f ? f->code : CUDA_SUCCESS;
    op->spec = f;
    op->ready_ns = !h ? 0 : h->ms == FC_NEVER ? FC_NEVER : fc_now_ns() + h->ms * 1000000ULL;
}

/* ---- queues ----------------------------------------------------------------------------------------------- */

struct fc_op *fc_op_new(enum fc_opkind kind)
{
    struct fc_op *op = calloc(1, sizeof *op);
    if (op)
        op->kind = kind;
    return op;
}

static CUresult fc_run_one(struct fc_stream *s);

/* Whether the oldest op of s cannot run yet: a launch still running (FAKECUDA_HANG), or a wait for such work on
 * another stream. */
static int fc_busy(const struct fc_stream *s)
{
    const struct fc_op *op = s->head;
    if (!op)
        return 0;
    if (op->kind == FC_OP_KERNEL)
        return op->ready_ns && (op->ready_ns == FC_NEVER || fc_now_ns() < op->ready_ns);
    if (op->kind == FC_OP_WAIT) {
        const struct fc_stream *w = op->wstream;
        return w->done < op->wtarget && w->head && !w->ctx->sticky && fc_busy(w);
    }
    return 0;
}

/* Runs one op of the stream: the oldest. Returns the context's sticky code if the op faulted, and
 * CUDA_ERROR_NOT_READY (running nothing) when that op cannot run yet. */
static CUresult fc_run_one(struct fc_stream *s)
{
    struct fc_op *op = s->head;
    if (!op)
        return s->ctx->sticky;
    if (fc_busy(s))
        return CUDA_ERROR_NOT_READY;
    s->head = op->next;
    if (!s->head)
        s->tail = NULL;
    s->queued--;
    CUresult rc = CUDA_SUCCESS;
    switch (op->kind) {
    case FC_OP_KERNEL:
        if (op->fault)
            rc = fc_raise(s->ctx, op);
        break;
    case FC_OP_WRITE:
        memcpy(op->dst, &op->value, op->width); /* little-endian: the low bytes for a 32-bit write */
        break;
    case FC_OP_EVENT:
        break;
    case FC_OP_WAIT: {
        /* Targets always name ops queued before this wait, so following them cannot loop. A waited-on stream
         * of another context that faulted never gets there; the wait gives up rather than hang. */
        struct fc_stream *w = op->wstream;
        while (w->done < op->wtarget && w->head && !w->ctx->sticky && fc_run_one(w) != CUDA_ERROR_NOT_READY) {
        }
        break;
    }
    case FC_OP_COPY:
        memmove(op->dst, op->src, op->n);
        break;
    case FC_OP_SET:
        for (size_t i = 0; i < op->n; i++)
            memcpy((char *)op->dst + i * op->width, &op->value, op->width);
        break;
    case FC_OP_HOSTFN:
        op->fn(op->user);
        break;
    case FC_OP_FREE:
        for (struct fc_mem *m = fc_g.mems; m; m = m->next) {
            if (m == op->user) {
                fc_mem_free(m);
                break;
            }
        }
        break;
    }
    if (!rc)
        s->done++;
    free(op);
    return rc;
}

static CUresult fc_graph_add(struct fc_graph *g, const struct fc_op *op)
{
    if (g->n == g->cap) {
        size_t cap = g->cap ? g->cap * 2 : 16;
        struct fc_op *ops = realloc(g->ops, cap * sizeof *ops);
        if (!ops)
            return CUDA_ERROR_OUT_OF_MEMORY;
        g->ops = ops;
        g->cap = cap;
    }
    g->ops[g->n] = *op;
    g->ops[g->n].next = NULL;
    g->ops[g->n].fault = CUDA_SUCCESS;
    g->n++;
    return CUDA_SUCCESS;
}

/* Queues op on s (taking ownership of op in every case). A capturing stream records it into its graph instead;
 * event records and waits are dropped there because in a capture they only order streams, which a flat graph
 * already does. */
CUresult fc_enqueue(struct fc_stream *s, struct fc_op *op)
{
    CUresult rc = s->ctx->sticky;
    if (rc) {
        free(op);
        return rc;
    }
    if (s->capture) {
        if (op->kind != FC_OP_EVENT && op->kind != FC_OP_WAIT)
            rc = fc_graph_add(s->capture, op);
        free(op);
        return rc;
    }
    if (op->kind == FC_OP_KERNEL) {
        fc_g.launches++;
        op->func->launches++;
        fc_script(op);
        if (op->ready_ns == FC_NEVER)
            fc_note_running(op, s->ctx->device);
    }
    op->next = NULL;
    if (s->tail)
        s->tail->next = op;
    else
        s->head = op;
    s->tail = op;
    s->queued++;
    s->enq++;
    if (op->kind == FC_OP_EVENT) {
        op->event->stream = s;
        op->event->target = s->enq;
    }
    /* A GPU that runs ahead of the host: a fault found here surfaces at the next call, as on the device. A
     * device queue is finite too (a launch waits when it is full), which bounds the fake's memory. */
    unsigned long long limit = fc_g.run_ahead && fc_g.run_ahead < FC_QUEUE_MAX ? fc_g.run_ahead : FC_QUEUE_MAX;
    while (s->queued > limit && !s->ctx->sticky) {
        if (fc_run_one(s) != CUDA_ERROR_NOT_READY)
            continue;
        if (s->queued <= FC_QUEUE_MAX)
            break;          /* running ahead stops at a launch still running */
        fc_wait_a_little(); /* a full device queue makes the host wait */
    }
    return CUDA_SUCCESS;
}

/* Queues a copy of every op of an executable graph, each a live op (kernels are counted and may fault). */
CUresult fc_graph_enqueue(struct fc_stream *s, const struct fc_graph *g)
{
    for (size_t i = 0; i < g->n; i++) {
        struct fc_op *op = fc_op_new(g->ops[i].kind);
        if (!op)
            return CUDA_ERROR_OUT_OF_MEMORY;
        *op = g->ops[i];
        CUresult rc = fc_enqueue(s, op);
        if (rc)
            return rc;
    }
    return CUDA_SUCCESS;
}

CUresult fc_drain_stream(struct fc_stream *s, int wait)
{
    while (s->head && !s->ctx->sticky) {
        if (fc_run_one(s) != CUDA_ERROR_NOT_READY)
            continue;
        if (!wait)
            return CUDA_ERROR_NOT_READY;
        fc_wait_a_little();
    }
    return s->ctx->sticky;
}

/* Runs all streams of the context, one op from each in turn, so that no stream's order is favoured; waits
 * while what is left cannot run yet. */
CUresult fc_drain_ctx(struct fc_ctx *ctx)
{
    int progressed = 1, busy = 0;
    while ((progressed || busy) && !ctx->sticky) {
        if (!progressed)
            fc_wait_a_little();
        progressed = busy = 0;
        for (struct fc_stream *s = ctx->streams; s && !ctx->sticky; s = s->next) {
            if (!s->head)
                continue;
            if (fc_run_one(s) == CUDA_ERROR_NOT_READY)
                busy = 1;
            else
                progressed = 1;
        }
    }
    return ctx->sticky;
}

/* Runs the work of every healthy context: done before host memory is freed, since a queued write of any
 * context may target it. */
CUresult fc_drain_all(void)
{
    for (unsigned i = 0; i < fc_g.nctx; i++)
        if (fc_g.ctx[i]->alive)
            fc_drain_ctx(fc_g.ctx[i]);
    return CUDA_SUCCESS;
}

int fc_event_done(const struct fc_event *ev)
{
    return !ev->stream || ev->stream->done >= ev->target;
}

CUresult fc_drain_event(struct fc_event *ev, int wait)
{
    struct fc_stream *s = ev->stream;
    if (!s)
        return ev->ctx->sticky;
    while (s->done < ev->target && s->head && !s->ctx->sticky) {
        if (fc_run_one(s) != CUDA_ERROR_NOT_READY)
            continue;
        if (!wait)
            return CUDA_ERROR_NOT_READY;
        fc_wait_a_little();
    }
    return s->ctx->sticky ? s->ctx->sticky : ev->ctx->sticky;
}

/* ---- events ------------------------------------------------------------------------------------------------ */

/* An event handle the program created and did not destroy, or NULL. */
struct fc_event *fc_event_valid(CUevent h)
{
    for (struct fc_event *e = fc_g.events; e; e = e->next)
        if ((void *)e == (void *)h)
            return e;
    return NULL;
}
