/* Internal state of the simulated CUDA driver (fakecuda), shared by its sources: fc_state.c (objects, queues,
 * faults, environment), fc_api.c (the exported entry points), fc_vmm.c (pitched, managed and pooled memory, the
 * virtual memory API) and fc_lookup.c (cuGetProcAddress, error names, export table). Nothing here is exported; SPEC.md is the contract. */
#ifndef FC_INTERNAL_H
#define FC_INTERNAL_H

/* The driver itself is built with this defined: cuda.h then declares every exported name under its own spelling
 * (cuMemcpyHtoD, cuMemcpyHtoD_v2, cuMemcpyHtoD_v2_ptds, ...) instead of renaming them with macros, so the
 * compiler checks each of our definitions against the real prototype of the symbol it exports. */
#define __CUDA_API_VERSION_INTERNAL 1
#include <cuda.h>

#include <stddef.h>
#include <stdint.h>

#define FC_API __attribute__((visibility("default")))

#define FC_MAX_DEVICES 16  /* FAKECUDA_DEVICES upper bound */
#define FC_MAX_CTX 256     /* contexts per process lifetime (ids are never reused) */
#define FC_QUEUE_MAX 65536 /* ops a stream holds before the oldest runs even without FAKECUDA_RUN_AHEAD */

/* Device addresses are host addresses plus one of these, so they are never valid host pointers (user space ends
 * below 2^47) and a tool that mixes the two up faults or gets CUDA_ERROR_INVALID_VALUE. */
#define FC_MAP_OFFSET 0x1000000000000ULL /* host-mapped memory: device pointer = host pointer + this */
#define FC_DEV_OFFSET 0x2000000000000ULL /* cuMemAlloc memory: device pointer = backing store + this */

enum fc_opkind {
    FC_OP_KERNEL, /* kernel launch: may fault */
    FC_OP_WRITE,  /* cuStreamWriteValue32/64: store value into dst */
    FC_OP_EVENT,  /* event record: completes the event when run */
    FC_OP_WAIT,   /* cuStreamWaitEvent: runs another stream up to a point */
    FC_OP_COPY,   /* async memcpy */
    FC_OP_SET,    /* async memset */
    FC_OP_HOSTFN, /* cuLaunchHostFunc */
    FC_OP_FREE    /* cuMemFreeAsync */
};

struct fc_func;
struct fc_stream;
struct fc_event;

struct fc_op {
    enum fc_opkind kind;         /* what running it does */
    struct fc_func *func;        /* KERNEL: launched function */
    unsigned grid[3];            /* KERNEL: grid dimensions (used in the assert line) */
    unsigned block[3];           /* KERNEL: block dimensions */
    unsigned long long arg0;     /* KERNEL: the first 8 bytes of its first parameter (a buffer, mostly), 0 none */
    CUresult fault;              /* KERNEL: code it faults with when run, 0 = none (set when queued live) */
    const struct fc_fault *spec; /* KERNEL: the FAKECUDA_FAULT spec that made it fault, NULL = none */
    unsigned long long ready_ns; /* KERNEL: CLOCK_MONOTONIC time before which it cannot complete (FAKECUDA_HANG),
                                  * 0 = at once, FC_NEVER = never */
    void *dst;                   /* WRITE/COPY/SET: host address stored to */
    const void *src;             /* COPY: host address read */
    size_t n;                    /* COPY: bytes; SET: elements */
    unsigned long long value;    /* WRITE/SET: value stored */
    unsigned width;              /* WRITE/SET: bytes per element */
    struct fc_event *event;      /* EVENT: event recorded */
    struct fc_stream *wstream;   /* WAIT: stream waited on */
    unsigned long long wtarget;  /* WAIT: ops of wstream that must have run */
    CUhostFn fn;                 /* HOSTFN: function called */
    void *user;                  /* HOSTFN: its argument; FREE: allocation freed */
    struct fc_op *next;          /* next op in the stream queue */
};

struct fc_graph {
    int exec;              /* 0 = CUgraph (capture result), 1 = CUgraphExec */
    int global;            /* captured in CU_STREAM_CAPTURE_MODE_GLOBAL */
    int invalidated;       /* a prohibited call (pinned allocation) happened during that global capture */
    struct fc_op *ops;     /* recorded ops, in capture order */
    size_t n;              /* ops used */
    size_t cap;            /* ops allocated */
    struct fc_graph *next; /* registry link */
};

enum fc_stream_kind { FC_STREAM_CREATED, FC_STREAM_LEGACY, FC_STREAM_PTDS };

struct fc_ctx;

struct fc_stream {
    struct fc_ctx *ctx;       /* owning context */
    enum fc_stream_kind kind; /* created, legacy default, or per-thread default */
    unsigned flags;           /* creation flags */
    int priority;             /* creation priority */
    int destroyed;            /* handle no longer valid; queued work still runs */
    struct fc_op *head;       /* oldest queued op */
    struct fc_op *tail;       /* newest queued op */
    size_t queued;            /* ops in the queue */
    unsigned long long enq;   /* ops ever queued live */
    unsigned long long done;  /* ops ever run to completion */
    struct fc_graph *capture; /* graph being captured into, NULL when not capturing */
    struct fc_stream *next;   /* next stream of the same context */
};

struct fc_ctx {
    unsigned id;               /* index into the per-thread default stream table */
    int alive;                 /* 0 after cuCtxDestroy */
    int device;                /* device ordinal */
    int primary;               /* 1 for the device's primary context */
    int refs;                  /* primary context retain count */
    CUresult sticky;           /* sticky error, 0 while healthy */
    struct fc_stream *legacy;  /* legacy default stream */
    struct fc_stream *streams; /* every stream of this context, including the default ones */
    char held[512];            /* a device assert's text not yet printed: the device's printf buffer, which the
                                * driver empties at a synchronize (fc_printf_flush), "" when empty */
};

struct fc_event {
    struct fc_ctx *ctx;        /* context it was created in */
    unsigned flags;            /* creation flags */
    struct fc_stream *stream;  /* stream of the last record, NULL if never recorded */
    unsigned long long target; /* stream->done value at which the last record has run */
    struct fc_event *next;     /* registry link */
};

struct fc_module;

#define FC_MAX_PARAMS 64 /* parameters a kernel of an image may declare */

struct fc_func {
    char *name;                  /* name as given in the image (maybe mangled) */
    char plain[128];             /* plain name: the identifier a mangled name carries */
    unsigned long long launches; /* launches of this function queued live */
    struct fc_module *mod;       /* owning module or library */
    int nparams;                 /* parameters the image declared for it, -1 when it declared none (unknown) */
    size_t poff[FC_MAX_PARAMS];  /* offset of each parameter in the packed buffer */
    size_t psize[FC_MAX_PARAMS]; /* size of each */
};

struct fc_module {
    int library;            /* 1 for cuLibrary*, 0 for cuModule* */
    int alive;              /* 0 after unload; kept so stale handles are recognised, never reused */
    struct fc_ctx *ctx;     /* context it was loaded in (NULL for libraries) */
    size_t nfunc;           /* functions in the image */
    struct fc_func *funcs;  /* the functions */
    struct fc_module *next; /* registry link */
};

enum fc_memkind { FC_MEM_DEVICE, FC_MEM_HOST, FC_MEM_MAPPED };

struct fc_mem {
    enum fc_memkind kind; /* device (cuMemAlloc), host-mapped (cuMemHostAlloc), or a piece of physical memory
                                  * mapped at reserved addresses (cuMemMap: host is the physical memory's) */
    char *host;           /* backing store / the host pointer */
    CUdeviceptr dptr;     /* device address */
    size_t size;          /* bytes */
    size_t mapped;        /* host-mapped memory: bytes mmap'ed (unmapped when freed, as the driver does) */
    struct fc_ctx *owner; /* host-mapped memory: the context it dies with, NULL if unknown */
    void *phys;           /* mapped memory: the physical allocation it shows (fc_vmm.c) */
    struct fc_mem *next;  /* registry link */
};

#define FC_NEVER (~0ULL) /* ready_ns of a launch that never completes */

/* A FAKECUDA_FAULT spec, or a FAKECUDA_HANG spec (which uses ms instead of code). */
struct fc_fault {
    unsigned long long launch; /* the Nth kernel launch of the process, 0 = match by name */
    char kernel[256];          /* kernel name (mangled or plain) when launch == 0 */
    unsigned long long nth;    /* which launch of that kernel */
    unsigned long long seen;   /* launches of that kernel seen so far */
    CUresult code;             /* FAKECUDA_FAULT: error it raises */
    long long offset;          /* FAKECUDA_FAULT offset=: the faulting address is arg0 + offset (FAKECUDA_KMSG) */
    int has_offset;            /* offset= was given */
    int write;                 /* access=write (default) or read: what the kernel's log line says */
    unsigned long long ms;     /* FAKECUDA_HANG: how long the launch runs, FC_NEVER = forever */
    int fired;                 /* already attached to an op */
};

struct fc_fail {
    char api[96];             /* exact exported symbol name */
    unsigned long long nth;   /* Nth call fails, 0 = every call */
    unsigned long long calls; /* calls seen so far */
    CUresult code;            /* error returned */
};

#define FC_MAX_FAULTS 16
#define FC_MAX_FAILS 32

struct fc_global {
    int inited;                             /* cuInit succeeded */
    int ndev;                               /* FAKECUDA_DEVICES */
    unsigned long long run_ahead;           /* FAKECUDA_RUN_AHEAD, 0 = off */
    int trace;                              /* FAKECUDA_TRACE */
    struct fc_fault faults[FC_MAX_FAULTS];  /* FAKECUDA_FAULT specs */
    int nfaults;                            /* specs used */
    struct fc_fault hangs[FC_MAX_FAULTS];   /* FAKECUDA_HANG specs */
    int nhangs;                             /* specs used */
    struct fc_fail fails[FC_MAX_FAILS];     /* FAKECUDA_FAIL specs */
    int nfails;                             /* specs used */
    unsigned long long launches;            /* kernel ops queued live, process-wide */
    struct fc_ctx *ctx[FC_MAX_CTX];         /* every context ever made, by id */
    unsigned nctx;                          /* contexts made */
    struct fc_ctx *primary[FC_MAX_DEVICES]; /* primary context per device, NULL until retained */
    struct fc_event *events;                /* live events */
    struct fc_graph *graphs;                /* live graphs and executable graphs */
    struct fc_module *modules;              /* every module and library ever loaded */
    struct fc_mem *mems;                    /* live allocations */
};

extern struct fc_global fc_g;

/* Entry and exit of every exported function: fc_begin takes the global lock, traces, and applies FAKECUDA_FAIL;
 * fc_end traces the result and drops the lock. */
CUresult fc_begin(const char *api);
CUresult fc_end(const char *api, CUresult rc);
#define FC_BEGIN()                                                                                                     \
    CUresult fc_rc_ = fc_begin(__func__);                                                                              \
    if (fc_rc_ != CUDA_SUCCESS)                                                                                        \
    return fc_end(__func__, fc_rc_)
#define FC_RETURN(x) return fc_end(__func__, (x))

/* Contexts and streams. */
struct fc_ctx *fc_ctx_current(void);
void fc_ctx_set_current(struct fc_ctx *ctx);
int fc_ctx_push(struct fc_ctx *ctx);
struct fc_ctx *fc_ctx_pop(void);
void fc_ctx_forget_current(struct fc_ctx *ctx);
CUresult fc_ctx_valid(CUcontext h, struct fc_ctx **out);
CUresult fc_ctx_new(int device, int primary, struct fc_ctx **out);
CUresult fc_cur(struct fc_ctx **out);
CUresult fc_ready(void); /* CUDA_ERROR_NOT_INITIALIZED before cuInit */
/* The current context, healthy: most calls touch it and so report its sticky error. out may be NULL. */
CUresult fc_live(struct fc_ctx **out);
/* A stream that can take work: resolved and in a healthy context. */
CUresult fc_work_stream(CUstream h, int pt, struct fc_stream **s);
CUresult fc_stream_new(struct fc_ctx *ctx, enum fc_stream_kind kind, struct fc_stream **out);
CUresult fc_stream_get(CUstream h, int per_thread, struct fc_stream **out);
void fc_ctx_discard(struct fc_ctx *ctx);

/* Work queues. */
struct fc_op *fc_op_new(enum fc_opkind kind);
CUresult fc_new_op(enum fc_opkind kind, struct fc_op **op); /* fc_op_new, out of memory as the driver says it */
CUresult fc_enqueue(struct fc_stream *s, struct fc_op *op);
/* Drains run queued work to the end (or to the event), waiting for launches still running (FAKECUDA_HANG) with
 * the global lock released meanwhile; with wait 0 they stop there instead and answer CUDA_ERROR_NOT_READY. */
CUresult fc_drain_stream(struct fc_stream *s, int wait);
CUresult fc_drain_ctx(struct fc_ctx *ctx);
/* At a synchronize of ctx: prints what its device printf buffer holds (a device assert's text) and empties it. */
void fc_printf_flush(struct fc_ctx *ctx);
CUresult fc_drain_event(struct fc_event *ev, int wait);
CUresult fc_graph_enqueue(struct fc_stream *s, const struct fc_graph *g);
CUresult fc_drain_all(void);
int fc_event_done(const struct fc_event *ev);

/* Memory. */
CUresult fc_mem_alloc(enum fc_memkind kind, size_t size, struct fc_mem **out);
struct fc_mem *fc_mem_by_host(const void *p);
struct fc_mem *fc_mem_by_dptr(CUdeviceptr d, size_t len);
CUresult fc_dev_addr(CUdeviceptr d, size_t len, int allow_host, void **out);
void fc_mem_free(struct fc_mem *m);
/* CUDA_ENABLE_COREDUMP_ON_EXCEPTION=1: writes the GPU core dump of op's fault and aborts (fc_coredump.c); returns
 * without doing anything otherwise. */
void fc_coredump(const struct fc_op *op);
/* FAKECUDA_KMSG: appends the line the kernel logs for a memory fault (Xid 31) of op (fc_kmsg.c). */
void fc_kmsg(const struct fc_op *op);
/* A context is destroyed or its primary context reset: its host-mapped memory goes with it. */
void fc_mem_free_owned(struct fc_ctx *c);

/* Modules and kernels. */
CUresult fc_module_load(const char *image, int library, struct fc_ctx *ctx, struct fc_module **out);
struct fc_func *fc_func_valid(const void *h);
int fc_module_valid(const struct fc_module *m, int library);

/* Objects found by handle; NULL when the handle is not a live one. */
struct fc_event *fc_event_valid(CUevent h);
struct fc_graph *fc_graph_valid(const void *h, int exec);

/* Lookup table (fc_lookup.c). */
const char *fc_error_name(CUresult rc);

#endif
