// The completion-mark study: every way found to leave a mark after a kernel that the host might still read
// after the context died, side by side on one GPU in one run, without culprit. For each mark it measures
// (a) its GPU cost between short back-to-back kernels (about 10 and 30 us, GPU time per kernel from events,
// against "no mark" interleaved in the same process), (b) whether the driver accepts it, (c) whether it appears
// only after the kernel before it finished (a 50 ms kernel, then the mark; the host polls), and (d) whether the
// marks that landed before a faulting kernel can be read after the fault killed the context. It replaces the
// earlier bench_crumb_cost (its "fenced" and "unfenced" writes are the write64 and write64_nobarrier rows).
//
// Each mark runs in a child process of its own (a refused call, a crash, a hang or the deliberate fault cannot
// touch the next one; the child has an alarm and the parent a deadline), and the parent prints one line per
// mark: "mark NAME key=value ..." (keys in README order below, "-" where not measured). bench/bench.py --marks
// runs it and turns those lines into a table.
#undef NDEBUG // the assert fault kind needs a device assert even in release builds
#include <cassert>
#include <cerrno>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <string>
#include <utility>
#include <vector>

#include <dlfcn.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cuda.h>
#include <cuda_runtime.h>

// ---- what is measured ----

enum Kind {
  K_WRITE64,   // cuStreamWriteValue64 into a host-mapped word
  K_WRITE32,   // cuStreamWriteValue32 into a host-mapped word
  K_BATCH64,   // cuStreamBatchMemOp with one CU_STREAM_MEM_OP_WRITE_VALUE_64
  K_BATCH32,   // cuStreamBatchMemOp with one CU_STREAM_MEM_OP_WRITE_VALUE_32
  K_BATCH_GPU, // cuStreamBatchMemOp: a GPU-scope CU_STREAM_MEM_OP_BARRIER, then WRITE_VALUE_64
  K_KERNEL,    // a 1-thread kernel that stores the mark into the host-mapped word
  K_MEMSET,    // cuMemsetD32Async of the host-mapped word (through its device pointer)
  K_MEMCPY,    // cuMemcpyDtoHAsync of 8 bytes from a device table of values into the host-mapped word
  K_HOSTFN,    // cuLaunchHostFunc: a host function that stores the mark (the "too costly" baseline)
  K_EVENT,     // cuEventRecord of an ordinary event (DISABLE_TIMING), queried by this process
  K_IPC,       // cuEventRecord of an interprocess event, queried by another process with its own context
};

enum How {
  H_NONE, // not a memory operation: no entry point to pick
  H_V2,   // dlsym of NAME_v2 on libcuda.so.1: what cuda.h's NAME resolves to in CUDA 12 and 13
  H_V1,   // dlsym of NAME itself: the pre-_v2 entry point
  H_GPA,  // cuGetProcAddress_v2(NAME, version): what a program built for that CUDA version gets
};

struct Mech {
  const char *name; // row name
  Kind kind;        // mechanism
  How how;          // entry point, for the memory operations
  int version;      // cudaVersion asked of cuGetProcAddress (H_GPA)
  unsigned flags;   // write flags (0 or CU_STREAM_WRITE_VALUE_NO_MEMORY_BARRIER)
  bool graph;       // captured into a CUDA graph (the mark becomes a memory-op node), the baseline too
  const char *what; // one line for --list
};

static const unsigned NB = CU_STREAM_WRITE_VALUE_NO_MEMORY_BARRIER;

static const Mech kMechs[] = {
    {"write64", K_WRITE64, H_V2, 0, 0, false, "today's breadcrumb: cuStreamWriteValue64 (_v2), fenced"},
    {"write64_nobarrier", K_WRITE64, H_V2, 0, NB, false, "the same, NO_MEMORY_BARRIER"},
    {"write64_v1", K_WRITE64, H_V1, 0, 0, false, "pre-_v2 cuStreamWriteValue64 from dlsym, fenced"},
    {"write64_v1_nobarrier", K_WRITE64, H_V1, 0, NB, false, "pre-_v2 from dlsym, NO_MEMORY_BARRIER"},
    {"write64_gpa9000_nobarrier", K_WRITE64, H_GPA, 9000, NB, false,
     "cuGetProcAddress(cuStreamWriteValue64, 9000), NO_MEMORY_BARRIER"},
    {"write64_gpa11000", K_WRITE64, H_GPA, 11000, 0, false, "cuGetProcAddress(cuStreamWriteValue64, 11000), fenced"},
    {"write64_gpa11000_nobarrier", K_WRITE64, H_GPA, 11000, NB, false,
     "cuGetProcAddress(cuStreamWriteValue64, 11000), NO_MEMORY_BARRIER"},
    {"write32", K_WRITE32, H_V2, 0, 0, false, "cuStreamWriteValue32 (_v2), fenced"},
    {"write32_nobarrier", K_WRITE32, H_V2, 0, NB, false, "cuStreamWriteValue32 (_v2), NO_MEMORY_BARRIER"},
    {"write32_v1", K_WRITE32, H_V1, 0, 0, false, "pre-_v2 cuStreamWriteValue32 from dlsym, fenced"},
    {"write32_v1_nobarrier", K_WRITE32, H_V1, 0, NB, false, "pre-_v2 cuStreamWriteValue32, NO_MEMORY_BARRIER"},
    {"write32_gpa11000_nobarrier", K_WRITE32, H_GPA, 11000, NB, false,
     "cuGetProcAddress(cuStreamWriteValue32, 11000), NO_MEMORY_BARRIER"},
    {"batch64", K_BATCH64, H_V2, 0, 0, false, "cuStreamBatchMemOp (_v2), one WRITE_VALUE_64, fenced"},
    {"batch64_nobarrier", K_BATCH64, H_V2, 0, NB, false, "cuStreamBatchMemOp (_v2), WRITE_VALUE_64 unfenced"},
    {"batch64_v1", K_BATCH64, H_V1, 0, 0, false, "pre-_v2 cuStreamBatchMemOp from dlsym, WRITE_VALUE_64"},
    {"batch64_v1_nobarrier", K_BATCH64, H_V1, 0, NB, false, "pre-_v2 cuStreamBatchMemOp, WRITE_VALUE_64 unfenced"},
    {"batch64_gpa11000_nobarrier", K_BATCH64, H_GPA, 11000, NB, false,
     "cuGetProcAddress(cuStreamBatchMemOp, 11000), WRITE_VALUE_64 unfenced"},
    {"batch64_gpubarrier_nobarrier", K_BATCH_GPU, H_V2, 0, NB, false,
     "cuStreamBatchMemOp (_v2): GPU-scope MEM_OP_BARRIER, then WRITE_VALUE_64 unfenced"},
    {"batch32", K_BATCH32, H_V2, 0, 0, false, "cuStreamBatchMemOp (_v2), one WRITE_VALUE_32, fenced"},
    {"batch32_nobarrier", K_BATCH32, H_V2, 0, NB, false, "cuStreamBatchMemOp (_v2), WRITE_VALUE_32 unfenced"},
    {"batch32_v1_nobarrier", K_BATCH32, H_V1, 0, NB, false, "pre-_v2 cuStreamBatchMemOp, WRITE_VALUE_32 unfenced"},
    {"graph_write64", K_WRITE64, H_V2, 0, 0, true,
     "the fenced write captured into a CUDA graph (a memory-op node); baseline: a graph of the kernels alone"},
    {"graph_write64_v1_nobarrier", K_WRITE64, H_V1, 0, NB, true,
     "the pre-_v2 unfenced write captured into a CUDA graph (culprit's breadcrumbs are captured too)"},
    {"kernel_store", K_KERNEL, H_NONE, 0, 0, false, "a <<<1,1>>> kernel storing the mark into the host word"},
    {"memset32", K_MEMSET, H_NONE, 0, 0, false, "cuMemsetD32Async of the host word's device pointer"},
    {"memcpy_dtoh8", K_MEMCPY, H_NONE, 0, 0, false, "cuMemcpyDtoHAsync of 8 bytes into the host word"},
    {"host_func", K_HOSTFN, H_NONE, 0, 0, false, "cuLaunchHostFunc storing the mark (the too-costly baseline)"},
    {"event", K_EVENT, H_NONE, 0, 0, false, "cuEventRecord (DISABLE_TIMING), a pool of 64 round-robin"},
    {"ipc_event", K_IPC, H_NONE, 0, 0, false,
     "cuEventRecord of INTERPROCESS events (pool of 64), queried by another process"},
};
static const int kNumMechs = sizeof kMechs / sizeof kMechs[0];

// The keys of a row, in the order printed; a key no phase set prints "-".
static const char *const kKeys[] = {
    "accepted", "rc", "entry", "works", "ordered", "mark_ms", "kernel_ms", "host_ns",
    "none_ns_10us", "ns_per_kernel_10us", "ratio_10us", "none_ns_30us", "ns_per_kernel_30us", "ratio_30us",
    "refused", "fault", "sync_rc", "survives", "landed", "after_fault", "read", "survives_after_exit", "error",
};

// Host-mapped words (8192 bytes, 1024 words): what each slot is for.
static const int kCostSlot = 0;    // the cost series overwrite one word, as culprit's breadcrumb does
static const int kOrderSlot = 1;   // the ordering test's mark
static const int kAcceptSlot = 2;  // the acceptance test's mark
static const int kFaultBase = 64;  // the fault test's marks, one word each
static const int kDoneBase = 256;  // the 50 ms kernel's per-block "finished" flags
static const int kWords = 1024;
static const int kPool = 64;       // events per pool (event kinds): cost round-robin, fault test one each
static const int kFaultBefore = 32; // marked kernels before the faulting one
static const int kFaultAfter = 8;   // marked kernels after it (their marks must not land)
static const int kValues = 8192;    // device table of values for memcpy_dtoh8: a mark's value is below this
static const int kHostMarks = 256;  // marks timed on the host while the stream is held by a long kernel

struct Opts {
  int reps = 3;          // interleaved repetitions of each cost series
  int kernels = 3000;    // kernels per cost series
  int timeout = 90;      // seconds per mark (child process)
  const char *fault = "oob"; // oob (illegal address), trap, assert
  const char *only = nullptr; // comma-separated row names
};

// ---- small helpers ----

static double now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

static const char *drv_err(CUresult rc) {
  const char *s = nullptr;
  if (rc == CUDA_SUCCESS)
    return nullptr;
  if (cuGetErrorName(rc, &s) != CUDA_SUCCESS || !s)
    return "CUDA_ERROR_UNKNOWN_CODE";
  return s;
}

static const char *rt_err(cudaError_t rc) { return rc == cudaSuccess ? nullptr : cudaGetErrorName(rc); }

// One "part key=value ..." line to stdout in a single write (the IPC reader shares the pipe).
static void emit(const char *fmt, ...) {
  char buf[2048];
  int n = snprintf(buf, sizeof buf, "part ");
  va_list ap;
  va_start(ap, fmt);
  n += vsnprintf(buf + n, sizeof buf - n - 1, fmt, ap);
  va_end(ap);
  if (n > (int)sizeof buf - 2)
    n = (int)sizeof buf - 2;
  buf[n++] = '\n';
  ssize_t w = write(1, buf, n);
  (void)w;
}

static double median(std::vector<double> v) {
  if (v.empty())
    return 0;
  for (size_t i = 1; i < v.size(); i++)
    for (size_t j = i; j > 0 && v[j - 1] > v[j]; j--)
      std::swap(v[j - 1], v[j]);
  size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

// Reads exactly len bytes within timeout_ms; 0, or -1 on EOF, error or timeout.
static int read_full(int fd, void *p, size_t len, int timeout_ms) {
  char *c = (char *)p;
  double deadline = now_ms() + timeout_ms;
  while (len) {
    struct pollfd pf = {fd, POLLIN, 0};
    int left = (int)(deadline - now_ms());
    if (left <= 0 || poll(&pf, 1, left) <= 0)
      return -1;
    ssize_t r = read(fd, c, len);
    if (r < 0 && errno == EINTR)
      continue;
    if (r <= 0)
      return -1;
    c += r;
    len -= (size_t)r;
  }
  return 0;
}

static int write_full(int fd, const void *p, size_t len) {
  const char *c = (const char *)p;
  while (len) {
    ssize_t w = write(fd, c, len);
    if (w < 0 && errno == EINTR)
      continue;
    if (w <= 0)
      return -1;
    c += w;
    len -= (size_t)w;
  }
  return 0;
}

// ---- kernels ----

__global__ void spin(long long cycles, int *sink) {
  long long t0 = clock64();
  while (clock64() - t0 < cycles) {
  }
  if (threadIdx.x == 0 && blockIdx.x == 0)
    sink[0] = 1;
}

// Spins, then each block says it finished in its own host-mapped flag.
__global__ void spin_flag(long long cycles, volatile unsigned long long *done) {
  long long t0 = clock64();
  while (clock64() - t0 < cycles) {
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    __threadfence_system();
    done[blockIdx.x] = 1;
  }
}

__global__ void store_mark(volatile unsigned long long *word, unsigned long long value) { *word = value; }

__global__ void fault_kernel(int *p, int kind) {
  if (threadIdx.x == 0 && blockIdx.x == 0) {
    if (kind == 0)
      ((volatile int *)p)[1ll << 36] = 1; // 256 GiB past a small allocation: an illegal address
    else if (kind == 1)
      __trap();
    else
      assert(p == nullptr);
  }
}

// ---- one mark's process ----

typedef CUresult (*write64_fn)(CUstream, CUdeviceptr, cuuint64_t, unsigned);
typedef CUresult (*write32_fn)(CUstream, CUdeviceptr, cuuint32_t, unsigned);
typedef CUresult (*batch_fn)(CUstream, unsigned, CUstreamBatchMemOpParams *, unsigned);
typedef CUresult (*gpa_fn)(const char *, void **, int, cuuint64_t, CUdriverProcAddressQueryResult *);

struct Ctx {
  const Mech *m = nullptr;          // the mark measured
  void *fn = nullptr;               // its entry point (memory operations)
  int sms = 0;                      // multiprocessors
  int clock_khz = 0;                // SM clock, for the spin kernels
  cudaStream_t st = nullptr;        // the stream everything runs on
  volatile uint64_t *words = nullptr; // host view of the mapped words
  CUdeviceptr dwords = 0;           // their device view
  CUdeviceptr dvals = 0;            // device table: dvals[k] = k (memcpy_dtoh8's sources)
  int *sink = nullptr;              // device int the kernels write
  CUevent ev[kPool] = {};           // event pool (event kinds)
  cudaEvent_t a = nullptr, b = nullptr; // timing events around a series
  std::vector<cudaGraphExec_t> execs; // graphs launched and not yet destroyed
};

static volatile uint64_t *g_words; // for the host function

static void CUDA_CB host_mark(void *p) {
  uint64_t u = (uint64_t)(uintptr_t)p;
  g_words[u >> 32] = u & 0xffffffffu;
}

static long long cycles_for_us(const Ctx &c, double us) { return (long long)(c.clock_khz * us / 1000.0); }

static int is_event(const Ctx &c) { return c.m->kind == K_EVENT || c.m->kind == K_IPC; }

// The slot of the i-th mark of a cost series: one word for the host-memory marks, a round-robin event otherwise.
static int cost_slot(const Ctx &c, int i) { return is_event(c) ? i % kPool : kCostSlot; }

// Enqueues one mark of VALUE into SLOT after what the stream already holds; NULL or the error's name.
static const char *mark(Ctx &c, int slot, uint64_t value) {
  const Mech &m = *c.m;
  CUdeviceptr addr = c.dwords + 8ull * (unsigned)slot;
  CUstream st = (CUstream)c.st;
  CUstreamBatchMemOpParams ops[2];
  memset(ops, 0, sizeof ops);
  switch (m.kind) {
  case K_WRITE64:
    return drv_err(((write64_fn)c.fn)(st, addr, value, m.flags));
  case K_WRITE32:
    return drv_err(((write32_fn)c.fn)(st, addr, (cuuint32_t)value, m.flags));
  case K_BATCH64:
  case K_BATCH32:
    ops[0].writeValue.operation = m.kind == K_BATCH64 ? CU_STREAM_MEM_OP_WRITE_VALUE_64 : CU_STREAM_MEM_OP_WRITE_VALUE_32;
    ops[0].writeValue.address = addr;
    if (m.kind == K_BATCH64)
      ops[0].writeValue.value64 = value;
    else
      ops[0].writeValue.value = (cuuint32_t)value;
    ops[0].writeValue.flags = m.flags;
    return drv_err(((batch_fn)c.fn)(st, 1, ops, 0));
  case K_BATCH_GPU:
    ops[0].memoryBarrier.operation = CU_STREAM_MEM_OP_BARRIER;
    ops[0].memoryBarrier.flags = CU_STREAM_MEMORY_BARRIER_TYPE_GPU;
    ops[1].writeValue.operation = CU_STREAM_MEM_OP_WRITE_VALUE_64;
    ops[1].writeValue.address = addr;
    ops[1].writeValue.value64 = value;
    ops[1].writeValue.flags = m.flags;
    return drv_err(((batch_fn)c.fn)(st, 2, ops, 0));
  case K_KERNEL:
    store_mark<<<1, 1, 0, c.st>>>((volatile unsigned long long *)addr, (unsigned long long)value);
    return rt_err(cudaGetLastError());
  case K_MEMSET:
    return drv_err(cuMemsetD32Async(addr, (unsigned)value, 1, st));
  case K_MEMCPY:
    return drv_err(cuMemcpyDtoHAsync((void *)(c.words + slot), c.dvals + 8ull * (value % kValues), 8, st));
  case K_HOSTFN:
    return drv_err(cuLaunchHostFunc(st, host_mark, (void *)(uintptr_t)(((uint64_t)slot << 32) | (value & 0xffffffffu))));
  case K_EVENT:
  case K_IPC:
    return drv_err(cuEventRecord(c.ev[slot], st));
  }
  return "unknown_kind";
}

// Whether the mark of VALUE is in SLOT: 1 landed, 0 not yet, -1 the read failed (*why says how).
static int landed(Ctx &c, int slot, uint64_t value, const char **why) {
  if (!is_event(c))
    return c.words[slot] == value;
  CUresult rc = cuEventQuery(c.ev[slot]);
  if (rc == CUDA_SUCCESS)
    return 1;
  if (rc == CUDA_ERROR_NOT_READY)
    return 0;
  if (why)
    *why = drv_err(rc);
  return -1;
}

// A short gate kernel in front of a timed series, so that the host has queued work before the first event.
static void gate(Ctx &c) { spin<<<1, 32, 0, c.st>>>(cycles_for_us(c, 2000), c.sink); }

// Puts BODY's work on the stream: directly, or captured into a graph that is then launched. TIMED: with a
// gate and the timing events around it (for a graph, around the launch only). NULL or the first error.
template <class F> static const char *submit(Ctx &c, F body, bool timed) {
  const char *e;
  if (!c.m->graph) {
    if (timed) {
      gate(c);
      if ((e = rt_err(cudaEventRecord(c.a, c.st))))
        return e;
    }
    if ((e = body()))
      return e;
    return timed ? rt_err(cudaEventRecord(c.b, c.st)) : nullptr;
  }
  cudaGraph_t g = nullptr;
  cudaGraphExec_t x = nullptr;
  if ((e = rt_err(cudaStreamBeginCapture(c.st, cudaStreamCaptureModeRelaxed))))
    return e;
  const char *be = body();
  e = rt_err(cudaStreamEndCapture(c.st, &g));
  if (be || e) {
    if (g)
      cudaGraphDestroy(g);
    return be ? be : e;
  }
  e = rt_err(cudaGraphInstantiate(&x, g, 0));
  cudaGraphDestroy(g);
  if (e)
    return e;
  c.execs.push_back(x);
  if (timed) {
    gate(c);
    if ((e = rt_err(cudaEventRecord(c.a, c.st))))
      return e;
  }
  if ((e = rt_err(cudaGraphLaunch(x, c.st))))
    return e;
  return timed ? rt_err(cudaEventRecord(c.b, c.st)) : nullptr;
}

static const char *sync_stream(Ctx &c) {
  const char *e = rt_err(cudaStreamSynchronize(c.st));
  if (!e) {
    for (cudaGraphExec_t x : c.execs)
      cudaGraphExecDestroy(x);
    c.execs.clear();
  }
  return e;
}

static const char *setup(Ctx &c) {
  const char *e;
  void *h = nullptr;
  if ((e = rt_err(cudaFree(0))) || (e = rt_err(cudaDeviceGetAttribute(&c.sms, cudaDevAttrMultiProcessorCount, 0))) ||
      (e = rt_err(cudaDeviceGetAttribute(&c.clock_khz, cudaDevAttrClockRate, 0))) ||
      (e = rt_err(cudaStreamCreateWithFlags(&c.st, cudaStreamNonBlocking))) ||
      (e = rt_err(cudaMalloc(&c.sink, sizeof(int)))) || (e = rt_err(cudaEventCreate(&c.a))) ||
      (e = rt_err(cudaEventCreate(&c.b))))
    return e;
  if ((e = drv_err(cuMemHostAlloc(&h, 8 * kWords, CU_MEMHOSTALLOC_DEVICEMAP | CU_MEMHOSTALLOC_PORTABLE))))
    return e;
  memset(h, 0, 8 * kWords);
  c.words = (volatile uint64_t *)h;
  g_words = c.words;
  if ((e = drv_err(cuMemHostGetDevicePointer(&c.dwords, h, 0))))
    return e;
  if (c.m->kind == K_MEMCPY) {
    std::vector<uint64_t> vals(kValues);
    for (int k = 0; k < kValues; k++)
      vals[k] = (uint64_t)k;
    if ((e = drv_err(cuMemAlloc(&c.dvals, 8 * kValues))) ||
        (e = drv_err(cuMemcpyHtoD(c.dvals, vals.data(), 8 * kValues))))
      return e;
  }
  if (is_event(c)) {
    unsigned flags = CU_EVENT_DISABLE_TIMING | (c.m->kind == K_IPC ? CU_EVENT_INTERPROCESS : 0);
    for (int i = 0; i < kPool; i++)
      if ((e = drv_err(cuEventCreate(&c.ev[i], flags))))
        return e;
  }
  return nullptr;
}

// Picks the entry point of a memory operation; 0, or -1 after emitting why there is none.
static int resolve(Ctx &c) {
  const Mech &m = *c.m;
  if (m.how == H_NONE)
    return 0;
  const char *base = m.kind == K_WRITE64 ? "cuStreamWriteValue64" : m.kind == K_WRITE32 ? "cuStreamWriteValue32"
                                                                                        : "cuStreamBatchMemOp";
  void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    emit("accepted=0 rc=no_libcuda error=dlopen_failed");
    return -1;
  }
  std::string v2name = std::string(base) + "_v2";
  void *v2 = dlsym(lib, v2name.c_str()), *v1 = dlsym(lib, base);
  char entry[96];
  if (m.how == H_V2) {
    c.fn = v2;
    snprintf(entry, sizeof entry, "dlsym:%s", v2name.c_str());
  } else if (m.how == H_V1) {
    c.fn = v1;
    snprintf(entry, sizeof entry, "dlsym:%s", base);
  } else {
    gpa_fn gpa = (gpa_fn)dlsym(lib, "cuGetProcAddress_v2");
    CUdriverProcAddressQueryResult status = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    void *fn = nullptr;
    if (!gpa) {
      emit("accepted=0 rc=no_cuGetProcAddress_v2 entry=gpa%d error=symbol_missing", m.version);
      return -1;
    }
    CUresult rc = gpa(base, &fn, m.version, CU_GET_PROC_ADDRESS_DEFAULT, &status);
    if (rc != CUDA_SUCCESS || status != CU_GET_PROC_ADDRESS_SUCCESS || !fn) {
      emit("accepted=0 rc=%s entry=gpa%d:status%d error=not_resolved", rc ? drv_err(rc) : "CUDA_SUCCESS",
           m.version, (int)status);
      return -1;
    }
    c.fn = fn;
    snprintf(entry, sizeof entry, "gpa%d:%s", m.version, fn == v1 ? "v1" : fn == v2 ? "v2" : "other");
  }
  if (!c.fn) {
    emit("accepted=0 rc=symbol_missing entry=%s error=symbol_missing", entry);
    return -1;
  }
  emit("entry=%s", entry);
  return 0;
}

// (b) Accepted: one mark on an idle stream; works: it landed once the stream was synchronized.
static int accept_phase(Ctx &c) {
  const char *e = submit(c, [&]() { return mark(c, kAcceptSlot, 1); }, false);
  if (e) {
    sync_stream(c);
    emit("accepted=0 rc=%s", e);
    return -1;
  }
  if ((e = sync_stream(c))) {
    emit("accepted=1 rc=CUDA_SUCCESS error=sync_after_accept:%s", e);
    return -1;
  }
  const char *why = nullptr;
  int l = landed(c, kAcceptSlot, 1, &why);
  emit("accepted=1 rc=CUDA_SUCCESS works=%d%s%s", l == 1, why ? " error=read:" : "", why ? why : "");
  return 0;
}

// (c) Ordered: a 50 ms kernel whose blocks flag their end in host memory, then the mark; the host polls both
// (mark first) and says whether the mark appeared before every block had finished.
static int order_phase(Ctx &c) {
  int nb = 2 * c.sms;
  if (nb > kWords - kDoneBase)
    nb = kWords - kDoneBase;
  for (int i = 0; i < nb; i++)
    c.words[kDoneBase + i] = 0;
  c.words[kOrderSlot] = 0;
  volatile unsigned long long *done = (volatile unsigned long long *)(c.dwords + 8ull * kDoneBase);
  const char *e = submit(c, [&]() {
    spin_flag<<<nb, 128, 0, c.st>>>(cycles_for_us(c, 50000), done);
    const char *le = rt_err(cudaGetLastError());
    return le ? le : mark(c, kOrderSlot, 7);
  }, false);
  double t0 = now_ms(), mark_ms = -1, kernel_ms = -1;
  int done_at_mark = -1;
  const char *why = nullptr;
  while (!e && now_ms() - t0 < 2000) {
    int seen = landed(c, kOrderSlot, 7, &why);
    int n = 0;
    for (int i = 0; i < nb; i++)
      n += c.words[kDoneBase + i] == 1;
    double t = now_ms() - t0;
    if (seen == 1 && mark_ms < 0) {
      mark_ms = t;
      done_at_mark = n;
    }
    if (n == nb && kernel_ms < 0)
      kernel_ms = t;
    if ((mark_ms >= 0 && kernel_ms >= 0) || seen < 0)
      break;
  }
  const char *se = sync_stream(c);
  if (e || se) {
    emit("ordered=- error=order:%s", e ? e : se);
    return -1;
  }
  if (mark_ms < 0) {
    int after = landed(c, kOrderSlot, 7, &why);
    emit("ordered=- kernel_ms=%.3f error=order_mark_%s%s%s", kernel_ms,
         after == 1 ? "seen_only_after_sync" : "never_seen", why ? ":" : "", why ? why : "");
    return 0;
  }
  emit("ordered=%d mark_ms=%.3f kernel_ms=%.3f", done_at_mark == nb, mark_ms, kernel_ms);
  return 0;
}

// Host time of one mark call while the stream is held by a long kernel (so the GPU does not drain them).
static int host_phase(Ctx &c) {
  if (c.m->graph) {
    emit("host_ns=-");
    return 0;
  }
  spin<<<1, 32, 0, c.st>>>(cycles_for_us(c, 100000), c.sink);
  const char *e = rt_err(cudaGetLastError());
  double t0 = now_ms();
  for (int i = 0; i < kHostMarks && !e; i++)
    e = mark(c, cost_slot(c, i), (uint64_t)(i + 1));
  double t1 = now_ms();
  const char *se = sync_stream(c);
  if (e || se) {
    emit("error=host:%s", e ? e : se);
    return -1;
  }
  emit("host_ns=%.0f", (t1 - t0) * 1e6 / kHostMarks);
  return 0;
}

// GPU time per kernel of KERNELS kernels of US microseconds, with or without a mark after each.
static const char *series(Ctx &c, double us, bool with, int kernels, double *ns, int *refused) {
  long long cycles = cycles_for_us(c, us);
  const char *e = submit(c, [&]() -> const char * {
    for (int i = 0; i < kernels; i++) {
      spin<<<c.sms, 128, 0, c.st>>>(cycles, c.sink);
      if (with && mark(c, cost_slot(c, i), (uint64_t)(i + 1)))
        (*refused)++;
    }
    return rt_err(cudaGetLastError());
  }, true);
  float ms = 0;
  if (e || (e = rt_err(cudaEventSynchronize(c.b))) || (e = rt_err(cudaEventElapsedTime(&ms, c.a, c.b))) ||
      (e = sync_stream(c)))
    return e;
  *ns = ms * 1e6 / kernels;
  return nullptr;
}

// (a) Cost: for 10 and 30 us kernels, REPS pairs of series (no mark, mark; the order flips every repetition);
// the ratio is no-mark time over mark time per pair (speed relative to no mark), median of the pairs.
static int cost_phase(Ctx &c, const Opts &o) {
  const double us_list[2] = {10, 30};
  int refused = 0;
  for (int u = 0; u < 2; u++) {
    std::vector<double> none, with, ratio;
    for (int rep = 0; rep < o.reps; rep++) {
      double ns[2] = {0, 0};
      for (int k = 0; k < 2; k++) {
        int w = rep % 2 == 0 ? k : 1 - k;
        const char *e = series(c, us_list[u], w == 1, o.kernels, &ns[w], &refused);
        if (e) {
          emit("error=cost_%gus:%s", us_list[u], e);
          return -1;
        }
      }
      none.push_back(ns[0]);
      with.push_back(ns[1]);
      ratio.push_back(ns[0] / ns[1]);
    }
    int us = (int)us_list[u];
    emit("none_ns_%dus=%.1f ns_per_kernel_%dus=%.1f ratio_%dus=%.3f", us, median(none), us, median(with), us,
         median(ratio));
  }
  emit("refused=%d", refused);
  return 0;
}

static int fault_kind(const char *s) { return !strcmp(s, "trap") ? 1 : !strcmp(s, "assert") ? 2 : 0; }

// The verdict of a fault test from one state per mark ('d' landed, 'p' not, 'e' the read failed).
static void fault_verdict(const char *states, const char *suffix) {
  int before = 0, after = 0, errors = 0;
  for (int i = 0; states[i]; i++) {
    if (states[i] == 'e')
      errors++;
    else if (states[i] == 'd')
      (i < kFaultBefore ? before : after)++;
  }
  int survives = errors == 0 && before == kFaultBefore && after == 0;
  emit("survives%s=%d landed%s=%d/%d after_fault%s=%d states%s=%s", suffix, survives, suffix, before, kFaultBefore,
       suffix, after, suffix, states);
}

// The other process of ipc_event: opens the events by their handles in a context of its own, queries them when
// told (after the marking process's synchronize failed), and again once that process has exited.
static int reader_main(int rfd, int wfd) {
  alarm(120);
  int n = 0;
  std::vector<CUipcEventHandle> handles;
  std::vector<CUevent> evs;
  const char *e = rt_err(cudaFree(0));
  if (!e && read_full(rfd, &n, sizeof n, 60000) == 0 && n > 0 && n <= kPool) {
    handles.resize(n);
    evs.resize(n);
    if (read_full(rfd, handles.data(), sizeof(CUipcEventHandle) * n, 30000))
      e = "reader_read_handles";
    for (int i = 0; i < n && !e; i++)
      e = drv_err(cuIpcOpenEventHandle(&evs[i], handles[i]));
  } else if (!e) {
    e = "reader_no_handles";
  }
  if (e) {
    emit("read=other_process error=reader:%s", e);
    write_full(wfd, "E", 1);
    return 1;
  }
  write_full(wfd, "R", 1);
  auto query = [&](const char *suffix) {
    std::string s;
    for (int i = 0; i < n; i++) {
      CUresult rc = cuEventQuery(evs[i]);
      s += rc == CUDA_SUCCESS ? 'd' : rc == CUDA_ERROR_NOT_READY ? 'p' : 'e';
    }
    fault_verdict(s.c_str(), suffix);
  };
  char cmd = 0;
  int got = read_full(rfd, &cmd, 1, 60000);
  if (got == 0 && cmd == 'Q') {
    query("");
    emit("read=other_process");
    write_full(wfd, "D", 1);
    while (read_full(rfd, &cmd, 1, 30000) == 0) {
    } // until the marking process has gone (EOF)
  }
  usleep(300 * 1000);
  query("_after_exit");
  return 0;
}

// (d) Survives: kFaultBefore short kernels each with its mark, a faulting kernel with its mark, kFaultAfter more;
// after the synchronize fails, which marks can be read.
static int fault_phase(Ctx &c, const Opts &o, const char *self) {
  int n = kFaultBefore + 1 + kFaultAfter;
  int to_r[2] = {-1, -1}, from_r[2] = {-1, -1};
  emit("fault=%s", o.fault);
  for (int i = 0; i < n; i++)
    c.words[kFaultBase + i] = 0;
  if (c.m->kind == K_IPC) {
    if (pipe(to_r) || pipe(from_r)) {
      emit("error=fault:pipe");
      return -1;
    }
    pid_t pid = fork();
    if (pid == 0) {
      close(to_r[1]);
      close(from_r[0]);
      char rfd[16], wfd[16];
      snprintf(rfd, sizeof rfd, "%d", to_r[0]);
      snprintf(wfd, sizeof wfd, "%d", from_r[1]);
      execl(self, self, "--ipc-reader", rfd, wfd, (char *)nullptr);
      _exit(127);
    }
    close(to_r[0]);
    close(from_r[1]);
    if (pid < 0) {
      emit("error=fault:fork");
      return -1;
    }
    std::vector<CUipcEventHandle> handles(n);
    const char *e = nullptr;
    for (int i = 0; i < n && !e; i++)
      e = drv_err(cuIpcGetEventHandle(&handles[i], c.ev[i]));
    char ok = 0;
    if (e || write_full(to_r[1], &n, sizeof n) || write_full(to_r[1], handles.data(), sizeof(CUipcEventHandle) * n) ||
        read_full(from_r[0], &ok, 1, 60000) || ok != 'R') {
      emit("error=fault:ipc_setup:%s", e ? e : "reader_not_ready");
      return -1;
    }
  }
  int kind = fault_kind(o.fault);
  long long cycles = cycles_for_us(c, 5);
  const char *late = nullptr; // a mark after the faulting kernel refused: the fault came first (sticky error)
  // A 20 ms gate holds the stream until everything is queued, so the fault cannot come before the last mark.
  spin<<<1, 32, 0, c.st>>>(cycles_for_us(c, 20000), c.sink);
  const char *e = submit(c, [&]() -> const char * {
    for (int i = 0; i < n; i++) {
      if (i == kFaultBefore)
        fault_kernel<<<1, 32, 0, c.st>>>(c.sink, kind);
      else
        spin<<<c.sms, 128, 0, c.st>>>(cycles, c.sink);
      const char *le = mark(c, is_event(c) ? i : kFaultBase + i, (uint64_t)(i + 1));
      if (le && i < kFaultBefore)
        return le;
      if (le && !late)
        late = le;
    }
    return (const char *)nullptr;
  }, false);
  if (late)
    emit("late_rc=%s", late);
  const char *se = rt_err(cudaStreamSynchronize(c.st));
  if (e) {
    emit("sync_rc=%s error=fault_enqueue:%s", se ? se : "cudaSuccess", e);
    return -1;
  }
  if (!se) {
    emit("sync_rc=cudaSuccess error=no_fault");
    return -1;
  }
  usleep(100 * 1000); // writes still in flight when the error was seen
  std::string s;
  for (int i = 0; i < n; i++) {
    int l = landed(c, is_event(c) ? i : kFaultBase + i, (uint64_t)(i + 1), nullptr);
    s += l == 1 ? 'd' : l == 0 ? 'p' : 'e';
  }
  emit("sync_rc=%s", se);
  if (c.m->kind == K_IPC) {
    emit("states_own=%s", s.c_str());
    char ok = 0;
    if (write_full(to_r[1], "Q", 1) || read_full(from_r[0], &ok, 1, 30000) || ok != 'D')
      emit("error=fault:reader_did_not_answer");
    close(to_r[1]); // the reader queries again once this process has gone
    close(from_r[0]);
  } else {
    fault_verdict(s.c_str(), "");
    emit("read=%s", is_event(c) ? "this_process" : "host_memory");
  }
  return 0;
}

static int child_main(const Opts &o, const Mech &m, const char *self) {
  alarm(o.timeout > 10 ? o.timeout - 5 : o.timeout);
  Ctx c;
  c.m = &m;
  emit("phase=setup");
  const char *e = setup(c);
  if (e) {
    emit("error=setup:%s", e);
    return 1;
  }
  if (resolve(c)) {
    emit("phase=done");
    return 0;
  }
  emit("phase=accept");
  if (accept_phase(c)) {
    emit("phase=done");
    return 0;
  }
  emit("phase=order");
  if (order_phase(c))
    return 1;
  emit("phase=host");
  if (host_phase(c))
    return 1;
  emit("phase=cost");
  if (cost_phase(c, o))
    return 1;
  emit("phase=fault");
  fault_phase(c, o, self);
  emit("phase=done");
  return 0;
}

// ---- the parent: one child per mark, one row each ----

struct Row {
  std::vector<std::pair<std::string, std::string>> kv; // key, value; a later part replaces an earlier one

  void set(const std::string &k, const std::string &v) {
    for (auto &p : kv)
      if (p.first == k) {
        p.second = v;
        return;
      }
    kv.emplace_back(k, v);
  }
  const std::string *get(const std::string &k) const {
    for (auto &p : kv)
      if (p.first == k)
        return &p.second;
    return nullptr;
  }
};

// Runs ARGV (this program again) with stdout to a pipe; returns its output, or kills its process group after
// TIMEOUT seconds. *how: "" for a clean exit, else what happened.
static std::string run_child(std::vector<std::string> args, int timeout, std::string *how) {
  std::string out;
  int p[2];
  if (pipe(p)) {
    *how = "pipe_failed";
    return out;
  }
  fflush(stdout);
  pid_t parent = getpid();
  pid_t pid = fork();
  if (pid == 0) {
    setpgid(0, 0);
    // A group of its own lets the deadline below kill the child with its IPC reader; the death signal ends it
    // when this process is killed (a benchmark driver's deadline kills only this process's group).
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent)
      _exit(127);
    dup2(p[1], 1);
    close(p[0]);
    close(p[1]);
    std::vector<char *> argv;
    for (auto &a : args)
      argv.push_back((char *)a.c_str());
    argv.push_back(nullptr);
    execv(argv[0], argv.data());
    _exit(127);
  }
  close(p[1]);
  if (pid < 0) {
    close(p[0]);
    *how = "fork_failed";
    return out;
  }
  setpgid(pid, pid); // both sides, so the kill below reaches the child's own children whoever runs first
  double deadline = now_ms() + timeout * 1000.0;
  bool timed_out = false;
  char buf[4096];
  for (;;) {
    int left = (int)(deadline - now_ms());
    if (left <= 0) {
      timed_out = true;
      break;
    }
    struct pollfd pf = {p[0], POLLIN, 0};
    int r = poll(&pf, 1, left);
    if (r < 0 && errno == EINTR)
      continue;
    if (r <= 0) {
      timed_out = r == 0;
      break;
    }
    ssize_t n = read(p[0], buf, sizeof buf);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      break; // EOF: the child and anything it started are done with the pipe
    out.append(buf, (size_t)n);
  }
  close(p[0]);
  if (timed_out)
    kill(-pid, SIGKILL);
  int status = 0;
  waitpid(pid, &status, 0);
  if (timed_out)
    *how = "timed_out";
  else if (WIFSIGNALED(status))
    *how = "killed_by_signal_" + std::to_string(WTERMSIG(status));
  else if (WIFEXITED(status) && WEXITSTATUS(status))
    *how = "exit_" + std::to_string(WEXITSTATUS(status));
  else
    how->clear();
  return out;
}

static Row parse_parts(const std::string &out) {
  Row row;
  size_t pos = 0;
  while (pos < out.size()) {
    size_t eol = out.find('\n', pos);
    if (eol == std::string::npos)
      eol = out.size();
    std::string line = out.substr(pos, eol - pos);
    pos = eol + 1;
    if (line.compare(0, 5, "part ") != 0)
      continue;
    size_t i = 5;
    while (i < line.size()) {
      size_t sp = line.find(' ', i);
      if (sp == std::string::npos)
        sp = line.size();
      std::string tok = line.substr(i, sp - i);
      size_t eq = tok.find('=');
      if (eq != std::string::npos && eq > 0)
        row.set(tok.substr(0, eq), tok.substr(eq + 1));
      i = sp + 1;
    }
  }
  return row;
}

static bool selected(const char *only, const char *name) {
  if (!only)
    return true;
  size_t n = strlen(name);
  for (const char *p = only; *p;) {
    const char *q = strchr(p, ',');
    size_t len = q ? (size_t)(q - p) : strlen(p);
    if (len == n && !strncmp(p, name, n))
      return true;
    if (!q)
      break;
    p = q + 1;
  }
  return false;
}

static void usage(void) {
  fprintf(stderr, "usage: bench_mark_cost [--only NAME,NAME] [--reps N] [--kernels N] [--fault oob|trap|assert]\n"
                  "                       [--timeout SECONDS] [--list]\n");
}

int main(int argc, char **argv) {
  Opts o;
  const char *child = nullptr;
  char self[4096];
  ssize_t sl = readlink("/proc/self/exe", self, sizeof self - 1);
  if (sl <= 0) {
    fprintf(stderr, "bench_mark_cost: cannot find its own executable\n");
    return 1;
  }
  self[sl] = 0;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    const char *v = i + 1 < argc ? argv[i + 1] : nullptr;
    if (!strcmp(a, "--ipc-reader") && i + 2 < argc)
      return reader_main(atoi(argv[i + 1]), atoi(argv[i + 2]));
    if (!strcmp(a, "--list")) {
      for (int k = 0; k < kNumMechs; k++)
        printf("%-30s %s\n", kMechs[k].name, kMechs[k].what);
      return 0;
    }
    if (!v) {
      usage();
      return 2;
    }
    if (!strcmp(a, "--child"))
      child = v;
    else if (!strcmp(a, "--only"))
      o.only = v;
    else if (!strcmp(a, "--reps"))
      o.reps = atoi(v);
    else if (!strcmp(a, "--kernels"))
      o.kernels = atoi(v);
    else if (!strcmp(a, "--timeout"))
      o.timeout = atoi(v);
    else if (!strcmp(a, "--fault"))
      o.fault = v;
    else {
      usage();
      return 2;
    }
    i++;
  }
  if (o.reps < 1 || o.kernels < 1 || o.kernels >= kValues || o.timeout < 5 ||
      (strcmp(o.fault, "oob") && strcmp(o.fault, "trap") && strcmp(o.fault, "assert"))) {
    fprintf(stderr, "bench_mark_cost: --reps >= 1, 1 <= --kernels < %d, --timeout >= 5, --fault oob|trap|assert\n",
            kValues);
    return 2;
  }
  if (child) {
    for (int k = 0; k < kNumMechs; k++)
      if (!strcmp(kMechs[k].name, child))
        return child_main(o, kMechs[k], self);
    fprintf(stderr, "bench_mark_cost: no mark named %s\n", child);
    return 2;
  }
  int any = 0;
  for (int k = 0; k < kNumMechs; k++)
    any |= selected(o.only, kMechs[k].name);
  if (!any) {
    fprintf(stderr, "bench_mark_cost: --only names no mark (see --list)\n");
    return 2;
  }

  // The parent only asks about the device (no context): the children make their own.
  int count = 0, drv = 0, v1ops = -1, ops64 = -1;
  char name[256] = "unknown";
  CUdevice dev = 0;
  if (cuInit(0) != CUDA_SUCCESS || cuDeviceGetCount(&count) != CUDA_SUCCESS || count == 0) {
    fprintf(stderr, "bench_mark_cost: skipped: no CUDA device\n");
    return 77;
  }
  cuDeviceGet(&dev, 0);
  cuDeviceGetName(name, sizeof name, dev);
  cuDriverGetVersion(&drv);
  cuDeviceGetAttribute(&v1ops, CU_DEVICE_ATTRIBUTE_CAN_USE_STREAM_MEM_OPS_V1, dev);
  cuDeviceGetAttribute(&ops64, CU_DEVICE_ATTRIBUTE_CAN_USE_64_BIT_STREAM_MEM_OPS, dev);
  for (char *p = name; *p; p++)
    if (*p == ' ')
      *p = '_';
  printf("marks device=%s driver=%d toolkit=%d mem_ops_v1=%d mem_ops_64=%d kernels=%d reps=%d fault=%s\n", name, drv,
         CUDA_VERSION, v1ops, ops64, o.kernels, o.reps, o.fault);
  fflush(stdout);

  int rows = 0, accepted = 0;
  for (int k = 0; k < kNumMechs; k++) {
    const Mech &m = kMechs[k];
    if (!selected(o.only, m.name))
      continue;
    std::string how;
    std::string out = run_child({self, "--child", m.name, "--reps", std::to_string(o.reps), "--kernels",
                                 std::to_string(o.kernels), "--fault", o.fault, "--timeout",
                                 std::to_string(o.timeout)},
                                o.timeout, &how);
    Row row = parse_parts(out);
    const std::string *phase = row.get("phase");
    if (!how.empty() || !phase || *phase != "done") {
      std::string err = (how.empty() ? std::string("stopped") : how) + "_in_" + (phase ? *phase : "start");
      const std::string *prev = row.get("error");
      row.set("error", prev ? *prev + "," + err : err);
    }
    std::string line = "mark " + std::string(m.name);
    for (const char *key : kKeys) {
      const std::string *v = row.get(key);
      line += std::string(" ") + key + "=" + (v && !v->empty() ? *v : "-");
    }
    for (const char *key : {"states", "states_own", "states_after_exit"}) {
      const std::string *v = row.get(key);
      if (v)
        line += std::string(" ") + key + "=" + *v;
    }
    printf("%s\n", line.c_str());
    fflush(stdout);
    rows++;
    const std::string *acc = row.get("accepted");
    accepted += acc && *acc == "1";
  }
  printf("marks done rows=%d accepted=%d\n", rows, accepted);
  return 0;
}
