/* Python frames of the launching thread, read straight from CPython's memory with hard-coded per-version offsets
 * (64-bit release builds of 3.10 to 3.13; anything else reports itself unsupported rather than guessing). This
 * file is not a debugger: it only reads the calling thread's own frames, which are alive and stable while that
 * thread sits in a C call, and it keeps private copies of what a report needs because code objects may be gone by
 * the time a report is written.
 *
 * Code table protocol (one writer at a time under g_lock, any number of lock-free readers):
 *
 *   writer (slow path, g_lock held)          reader (capture, no lock)
 *   copy names + line table into arena       h = hash(code)
 *   g_entries[id-1] = e     (release)  ...   c = slot[h].code          (acquire, pairs with the writer's release)
 *   slot.sig = sig; slot.id = id             c == 0    -> miss: take the slow path
 *   slot.code = code        (release) ---->  c == code && slot.sig == sig -> slot.id
 *
 * A slot, once published, never changes; a reused code object address gets a new slot because its signature
 * (filename, name, first line, line table object) differs.
 *
 * Each thread also keeps a memo of the code objects its last walks met (pys_memo): a code object that has not
 * been freed since is the same object, so its id is reused without reading the object again. To know that,
 * pystack makes its one write into the interpreter: at start it wraps the code type's deallocator so that
 * every code object freed is counted (pys_code_dealloc). A memo entry holds while that count is what it was
 * when the entry was made; any code object freed anywhere makes every entry stale. The memo holds 4 code objects
 * per set of addresses (256 in all, 8 KiB). */
#define _GNU_SOURCE
#include "pystack.h"

#include "pystack_int.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <unistd.h>

#define PYS_SLOTS (1u << 15)              /* hash slots; power of two */
#define PYS_MAX_CODES (PYS_SLOTS / 4 * 3) /* ids handed out before the table counts as full (75% load) */
#define PYS_MAX_LINKS 256                 /* frame links followed per capture, in case the chain is corrupt or cyclic */
#define PYS_ARENA_CHUNK (256u << 10)      /* bytes per mmap'd arena chunk */
#define PYS_FILE_MAX 1023                 /* longest file name kept, bytes */
#define PYS_NAME_MAX 255                  /* longest function name kept, bytes */
#define PYS_TABLE_MAX 65536               /* longest line table kept, bytes (longer ones are cut: late lines unknown) */
#define PYS_OWNED_BY_GENERATOR 1          /* _frameowner values, 3.11-3.13 */
#define PYS_OWNED_BY_CSTACK 3             /* 3.12+: the eval loop's entry shim, never a user frame */
#define PYS_MEMO_SETS 64                  /* sets of a thread's memo of code objects, by code address; power of two */
#define PYS_MEMO_WAYS 4                   /* code objects per set (a set is two cache lines) */
/* PyTypeObject, the same in every supported version (64-bit): the object head, then tp_name, tp_basicsize,
 * tp_itemsize and tp_dealloc. */
#define PYS_TP_NAME 24
#define PYS_TP_BASICSIZE 32
#define PYS_TP_DEALLOC 48

/* Offsets, in bytes, into CPython's structures for one minor version (64-bit release build). Checked against
 * offsetof() on each version's own headers. -1 = the field does not exist in that version. */
struct pys_layout {
  int minor;             /* 3.<minor> */
  int ts_frame;          /* PyThreadState: 3.10 frame, 3.11/3.12 cframe, 3.13 current_frame */
  int ts_thread_id;      /* PyThreadState.thread_id (unsigned long): threading.get_ident() of the thread */
  int ts_native_id;      /* PyThreadState.native_thread_id (unsigned long, the kernel's id), -1 in 3.10 */
  int cf_current;        /* _PyCFrame.current_frame (3.11/3.12), -1 when the thread state points at frames */
  int fr_code;           /* frame: f_code (3.10 PyFrameObject, 3.11/3.12), f_executable (3.13) */
  int fr_previous;       /* frame: f_back (3.10) or previous */
  int fr_instr;          /* 3.10 int f_lasti in code units; 3.11/3.12 prev_instr; 3.13 instr_ptr */
  int fr_owner;          /* _PyInterpreterFrame.owner (char), -1 in 3.10 */
  int co_filename;       /* PyCodeObject.co_filename */
  int co_name;           /* co_qualname where it exists (3.11+), else co_name */
  int co_firstlineno;    /* PyCodeObject.co_firstlineno (int) */
  int co_linetable;      /* PyCodeObject.co_linetable (bytes) */
  int co_code;           /* 3.11+: co_code_adaptive (inline code units); 3.10: -1 (co_code is a bytes object) */
  int co_firsttraceable; /* PyCodeObject._co_firsttraceable (int, code units), -1 in 3.10 */
  int uni_ascii_size;    /* sizeof(PyASCIIObject): inline ASCII data starts here */
  int uni_utf8_length;   /* PyCompactUnicodeObject.utf8_length */
  int uni_utf8;          /* PyCompactUnicodeObject.utf8 */
};

/* Shared by every supported version: PyObject_HEAD, PyVarObject, PyBytesObject and the PyASCIIObject head. */
#define PYS_OB_TYPE 8         /* PyObject.ob_type */
#define PYS_OB_SIZE 16        /* PyVarObject.ob_size (code units for 3.11+ code objects, bytes for bytes) */
#define PYS_BYTES_DATA 32     /* PyBytesObject.ob_sval */
#define PYS_UNI_LENGTH 16     /* PyASCIIObject.length (code points) */
#define PYS_UNI_STATE 32      /* PyASCIIObject.state bit field, as a uint32 */
#define PYS_UNI_COMPACT 0x20u /* state.compact */
#define PYS_UNI_ASCII 0x40u   /* state.ascii */

static const struct pys_layout g_layouts[] = {
    {10, 24, 176, -1, -1, 32, 24, 96, -1, 104, 112, 40, 120, -1, -1, 48, 48, 56},
    {11, 56, 152, 160, 8, 32, 48, 56, 69, 112, 128, 72, 136, 184, 168, 48, 48, 56},
    {12, 56, 136, 144, 0, 0, 8, 56, 70, 112, 128, 68, 136, 192, 176, 40, 40, 48},
    {13, 72, 152, 160, -1, 0, 8, 56, 70, 112, 128, 68, 136, 200, 184, 40, 40, 48},
};

enum pys_state {
  PYS_NONE = 0,        /* no Python in this process */
  PYS_READY = 1,       /* supported version, offsets chosen */
  PYS_UNSUPPORTED = 2, /* Python present, but not a version/build whose layout we know */
};

/* What pystack keeps of one code object; lives in the arena forever. */
struct pys_code {
  int32_t firstlineno;  /* co_firstlineno */
  uint32_t table_len;   /* bytes of the copied line table */
  const char *file;     /* NUL-terminated UTF-8 copy of co_filename ("?" if unreadable) */
  const char *func;     /* NUL-terminated copy of co_qualname / co_name */
  const uint8_t *table; /* copy of co_linetable's bytes */
};

struct pys_slot {
  _Atomic uintptr_t code; /* code object address; 0 = empty. Release-stored last by the writer */
  uintptr_t sig;          /* signature of that code object, guards against address reuse */
  uint32_t id;            /* 1-based index into g_entries */
};

typedef const char *(*pys_str_fn)(void);
typedef int (*pys_int_fn)(void);
typedef void *(*pys_tstate_fn)(void);

static pthread_once_t g_once = PTHREAD_ONCE_INIT;
static int g_state;                                     /* enum pys_state; written once inside g_once */
static const struct pys_layout *g_lay;                  /* layout in use when PYS_READY */
static char g_status[96] = "no Python in this process"; /* pystack_status's phrase, written once in g_once */
static pys_int_fn g_is_initialized;                     /* Py_IsInitialized */
static pys_tstate_fn g_this_tstate;                     /* PyGILState_GetThisThreadState */
static void *(*g_interp_head)(void);                    /* PyInterpreterState_Head */
static void *(*g_thread_head)(void *);                  /* PyInterpreterState_ThreadHead */
static uintptr_t g_code_type;                           /* &PyCode_Type: every frame's code object must carry it */
static uintptr_t g_frame_type;                          /* &PyFrame_Type (3.10 frame objects) */
static uintptr_t g_unicode_type;                        /* &PyUnicode_Type */
static uintptr_t g_bytes_type;                          /* &PyBytes_Type */

static struct pys_slot *g_slots;              /* PYS_SLOTS slots, mmap'd once */
static _Atomic(struct pys_code *) *g_entries; /* PYS_MAX_CODES entries by id-1; release-stored before the slot */
static uint32_t g_ncodes;                     /* ids handed out; only under g_lock */
static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER; /* serializes inserts and the arena */
static char *g_arena, *g_arena_end;                        /* current arena chunk's free part; only under g_lock */

/* Code objects freed since pys_probe wrapped PyCode_Type's deallocator; only ever grows. */
static _Atomic uint64_t g_code_frees;
static void (*g_code_dealloc)(void *); /* the interpreter's own deallocator, called by the wrapper */
static bool g_frees_counted;           /* the wrapper is in place: memos may be used */

/* What a thread's walks learned about one code object, valid while g_code_frees == frees. */
struct pys_memo_entry {
  uintptr_t code;      /* code object address; 0 = empty */
  uint64_t frees;      /* g_code_frees when it was made */
  uint32_t code_bytes; /* 3.11+: bytes of its inline code units (2 * ob_size) */
  uint32_t traceable;  /* 3.11+: byte offset of its first traceable instruction */
  uint32_t id;         /* its id in the shared table */
};
/* Set-associative: a walk of a PyTorch model meets a few dozen code objects, two of them (the module call
 * wrappers) at every other frame; in a direct-mapped memo any two of them sharing a slot evict each other
 * over and over within each walk. */
struct pys_memo {
  struct pys_memo_entry e[PYS_MEMO_SETS][PYS_MEMO_WAYS];
  uint8_t next[PYS_MEMO_SETS]; /* the way a full set replaces next (in turn) */
  int busy;                    /* a walk is using it: a signal handler's walk meanwhile goes without */
};
static __thread struct pys_memo *tls_memo;
static __thread int tls_memo_state; /* 0: not made yet, 1: made, -1: not for this thread */
static pthread_key_t g_memo_key;    /* unmaps a thread's memo when it exits */
static bool g_memo_key_ok;

/* Guarded reads of another thread's memory (pystack_int.h) */
pid_t g_pys_pid;
__thread int tls_safe;
__thread int tls_fault;

static int pys_safe_read(uintptr_t addr, void *dst, size_t n) {
  struct iovec local = {dst, n}, remote = {(void *)addr, n};
  if (!addr || process_vm_readv(g_pys_pid, &local, 1, &remote, 1, 0) != (ssize_t)n) {
    memset(dst, 0, n);
    tls_fault = 1;
    return -1;
  }
  return 0;
}

static inline void rd_bytes(uintptr_t addr, void *dst, size_t n) {
  if (__builtin_expect(tls_safe, 0))
    pys_safe_read(addr, dst, n);
  else
    memcpy(dst, (const void *)addr, n);
}

static inline uintptr_t rd_ptr(uintptr_t base, int off) {
  uintptr_t v;
  rd_bytes(base + (uintptr_t)off, &v, sizeof v);
  return v;
}

static inline int rd_int(uintptr_t base, int off) {
  int v;
  rd_bytes(base + (uintptr_t)off, &v, sizeof v);
  return v;
}

/* A forked child inherits the lock in whatever state another thread left it; a half-made insert is harmless
 * because its slot was never published. */
static void pys_atfork_child(void) {
  pthread_mutex_init(&g_lock, NULL);
  g_pys_pid = getpid();
}

void *pys_map(size_t len) {
  void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  return p == MAP_FAILED ? NULL : p;
}

/* Every code object freed passes here first. The count is raised before the object's memory can be reused: a
 * walk that later finds another code object at that address sees the new count (the interpreter's lock orders
 * the free before the allocation that reuses the address, and both before the frames the walk reads). */
static void pys_code_dealloc(void *op) {
  atomic_fetch_add_explicit(&g_code_frees, 1, memory_order_release); /* pairs with pys_memo_begin's acquire */
  g_code_dealloc(op);
}

static void pys_memo_gone(void *memo) {
  tls_memo = NULL;
  tls_memo_state = -1; /* a later destructor of this thread launching: walks without a memo */
  if (memo) munmap(memo, sizeof(struct pys_memo));
}

/* Wraps PyCode_Type's tp_dealloc, after checking that the type looks as this file expects (its name and size),
 * so that a layout it does not know is never written to. One aligned pointer store: a deallocation running
 * meanwhile calls either the old or the new function, both correct. */
static void pys_count_frees(void) {
  const char *name = (const char *)*(const uintptr_t *)(g_code_type + PYS_TP_NAME);
  intptr_t basic = *(const intptr_t *)(g_code_type + PYS_TP_BASICSIZE);
  void **slot = (void **)(g_code_type + PYS_TP_DEALLOC);
  void *orig = __atomic_load_n(slot, __ATOMIC_ACQUIRE);
  if (!name || strcmp(name, "code") || basic < 64 || basic > 1024 || !orig || orig == (void *)pys_code_dealloc) return;
  g_memo_key_ok = pthread_key_create(&g_memo_key, pys_memo_gone) == 0;
  if (!g_memo_key_ok) return;
  *(void **)&g_code_dealloc = orig;
  __atomic_store_n(slot, (void *)pys_code_dealloc, __ATOMIC_RELEASE);
  g_frees_counted = true;
}

static void pys_probe(void) {
  pys_str_fn get_version = (pys_str_fn)dlsym(RTLD_DEFAULT, "Py_GetVersion");
  g_is_initialized = (pys_int_fn)dlsym(RTLD_DEFAULT, "Py_IsInitialized");
  g_this_tstate = (pys_tstate_fn)dlsym(RTLD_DEFAULT, "PyGILState_GetThisThreadState");
  if (!get_version || !g_is_initialized || !g_this_tstate) return; /* PYS_NONE */
  *(void **)&g_interp_head = dlsym(RTLD_DEFAULT, "PyInterpreterState_Head");
  *(void **)&g_thread_head = dlsym(RTLD_DEFAULT, "PyInterpreterState_ThreadHead");
  g_code_type = (uintptr_t)dlsym(RTLD_DEFAULT, "PyCode_Type");
  g_frame_type = (uintptr_t)dlsym(RTLD_DEFAULT, "PyFrame_Type");
  g_unicode_type = (uintptr_t)dlsym(RTLD_DEFAULT, "PyUnicode_Type");
  g_bytes_type = (uintptr_t)dlsym(RTLD_DEFAULT, "PyBytes_Type");

  /* Py_GetVersion formats a static buffer from constants; the GIL is not needed for that. */
  const char *v = get_version();
  int major = 0, minor = -1;
  if (!v || sscanf(v, "%d.%d", &major, &minor) != 2) {
    g_state = PYS_UNSUPPORTED;
    snprintf(g_status, sizeof g_status, "CPython of unknown version is not supported: no Python stacks");
    return;
  }
  /* Free-threaded builds (3.13t) change PyObject's header and every offset after it. */
  bool free_threaded = strstr(v, "free-threading") != NULL;
  for (size_t i = 0; i < sizeof g_layouts / sizeof g_layouts[0]; i++)
    if (major == 3 && g_layouts[i].minor == minor) g_lay = &g_layouts[i];
  if (!g_lay || free_threaded || sizeof(void *) != 8 || !g_code_type || !g_unicode_type || !g_bytes_type ||
      (minor == 10 && !g_frame_type)) {
    g_lay = NULL;
    g_state = PYS_UNSUPPORTED;
    snprintf(g_status, sizeof g_status, "CPython %d.%d%s is not supported: no Python stacks", major, minor,
             free_threaded ? " (free-threading build)" : "");
    return;
  }
  g_slots = pys_map(sizeof(struct pys_slot) * PYS_SLOTS);
  g_entries = pys_map(sizeof(*g_entries) * PYS_MAX_CODES);
  if (!g_slots || !g_entries) {
    g_state = PYS_UNSUPPORTED;
    snprintf(g_status, sizeof g_status, "CPython %d.%d: no memory for Python stacks", major, minor);
    return;
  }
  g_pys_pid = getpid();
  pthread_atfork(NULL, NULL, pys_atfork_child);
  pys_count_frees();
  snprintf(g_status, sizeof g_status, "CPython %d.%d", major, minor);
  g_state = PYS_READY;
}

/* Reads a str object's UTF-8 into dst (NUL-terminated, at most max bytes kept). Only compact strings are read:
 * ASCII ones hold their bytes inline; others only if CPython already cached a UTF-8 copy (making one would
 * allocate). Long names keep their tail, the informative end of a path. */
/* Where a str object's UTF-8 bytes are (in the process that owns it) and how many, or NULL: compact ASCII
 * strings hold them inline; others only where CPython already cached a UTF-8 copy (making one would allocate). */
static inline const char *pys_str_bytes(uintptr_t s, size_t *len) {
  *len = 0;
  if (!s || rd_ptr(s, PYS_OB_TYPE) != g_unicode_type) return NULL;
  uint32_t state;
  rd_bytes(s + PYS_UNI_STATE, &state, sizeof state);
  if ((state & PYS_UNI_COMPACT) && (state & PYS_UNI_ASCII)) {
    *len = (size_t)rd_ptr(s, PYS_UNI_LENGTH);
    return (const char *)(s + (uintptr_t)g_lay->uni_ascii_size);
  }
  if (state & PYS_UNI_COMPACT) {
    const char *src = (const char *)rd_ptr(s, g_lay->uni_utf8); /* read once: another thread may be setting it */
    *len = (size_t)rd_ptr(s, g_lay->uni_utf8_length);
    return src;
  }
  return NULL;
}

static void pys_copy_str(uintptr_t s, char *dst, size_t max) {
  size_t len;
  const char *src = pys_str_bytes(s, &len);
  if (!src) {
    memcpy(dst, "?", 2);
    return;
  }
  if (len > max) {
    size_t cut = len - (max - 3);
    char c;
    /* start on a character boundary */
    for (rd_bytes((uintptr_t)src + cut, &c, 1); cut < len && ((unsigned char)c & 0xC0) == 0x80; cut++)
      rd_bytes((uintptr_t)src + cut + 1, &c, 1);
    memcpy(dst, "...", 3);
    rd_bytes((uintptr_t)src + cut, dst + 3, len - cut);
    dst[3 + len - cut] = 0;
    return;
  }
  rd_bytes((uintptr_t)src, dst, len);
  dst[len] = 0;
}

static void *pys_arena_alloc(size_t n) {
  n = (n + 7) & ~(size_t)7;
  if ((size_t)(g_arena_end - g_arena) < n) {
    size_t chunk = n > PYS_ARENA_CHUNK ? n : PYS_ARENA_CHUNK;
    char *c = pys_map(chunk);
    if (!c) return NULL;
    g_arena = c;
    g_arena_end = c + chunk;
  }
  void *p = g_arena;
  g_arena += n;
  return p;
}

/* A file name's text, reduced to a word: its length and first and last 8 bytes. Frames of one module share
 * one file name object, so a walk remembers the last few it reduced (reset at each walk: within one walk the
 * names are alive, held by the code objects of the frames being walked). */
#define PYS_FILE_MEMO 4
static __thread struct { uintptr_t str, sig; } tls_files[PYS_FILE_MEMO];
static __thread unsigned tls_files_next;

static uintptr_t pys_file_sig(uintptr_t file) {
  for (unsigned i = 0; i < PYS_FILE_MEMO; i++)
    if (tls_files[i].str == file && file) return tls_files[i].sig;
  size_t len;
  uintptr_t sig = 0;
  const char *text = pys_str_bytes(file, &len);
  if (text && len > 0 && len < (1u << 20)) {
    uint64_t head = 0, tail = 0;
    if (len >= 8) {
      head = rd_ptr((uintptr_t)text, 0);
      tail = rd_ptr((uintptr_t)text + len - 8, 0);
    } else {
      rd_bytes((uintptr_t)text, &head, len);
    }
    sig = ((uintptr_t)len * 0x9E3779B97F4A7C15ull + head) * 0x9E3779B97F4A7C15ull + tail;
  }
  unsigned i = tls_files_next++ % PYS_FILE_MEMO;
  tls_files[i].str = 0; /* a signal handler's walk meanwhile sees no entry rather than half of one */
  __atomic_signal_fence(__ATOMIC_SEQ_CST);
  tls_files[i].sig = sig;
  __atomic_signal_fence(__ATOMIC_SEQ_CST);
  tls_files[i].str = file;
  return sig;
}

/* What a code object looks like, to tell it from one that lived at the same address before: the addresses of
 * its file name, name and line table, its first line, and the file name's text (pys_file_sig). The text
 * matters: code made and freed over and over (a notebook's cells, exec'd or generated code) gets the freed
 * object's address and often its strings' addresses too, while its file name differs ("<ipython-input-6-...>",
 * "<eval_with_key>.13"). */
static inline uintptr_t pys_sig(uintptr_t code) {
  const struct pys_layout *l = g_lay;
  uintptr_t file = rd_ptr(code, l->co_filename);
  uintptr_t s = file * 31u + rd_ptr(code, l->co_name);
  s = s * 31u + rd_ptr(code, l->co_linetable);
  s = s * 31u + (uint32_t)rd_int(code, l->co_firstlineno);
  return s * 0x9E3779B97F4A7C15ull + pys_file_sig(file);
}

static inline uint32_t pys_hash(uintptr_t code) {
  return (uint32_t)(((code >> 4) * 0x9E3779B97F4A7C15ull) >> 49) & (PYS_SLOTS - 1);
}

/* Finds the slot for (code, sig) starting at h: the matching one, or the first empty one. Lock-free. */
static inline struct pys_slot *pys_find(uintptr_t code, uintptr_t sig, uint32_t h) {
  for (uint32_t i = 0; i < PYS_SLOTS; i++) {
    struct pys_slot *sl = &g_slots[(h + i) & (PYS_SLOTS - 1)];
    uintptr_t c = atomic_load_explicit(&sl->code, memory_order_acquire); /* pairs with pys_insert's release */
    if (c == 0 || (c == code && sl->sig == sig)) return sl;
  }
  return NULL;
}

/* Slow path: copy what a report needs from a code object seen for the first time. Returns its id, 0 if full. */
static uint32_t pys_insert(uintptr_t code, uintptr_t sig, uint32_t h) {
  const struct pys_layout *l = g_lay;
  uint32_t id = 0;
  pthread_mutex_lock(&g_lock);
  struct pys_slot *sl = pys_find(code, sig, h); /* another thread may have added it meanwhile */
  if (!sl) goto out;
  if (atomic_load_explicit(&sl->code, memory_order_relaxed) != 0) { /* relaxed: we hold the writers' lock */
    id = sl->id;
    goto out;
  }
  if (g_ncodes >= PYS_MAX_CODES) goto out;

  char file[PYS_FILE_MAX + 1], func[PYS_NAME_MAX + 1];
  pys_copy_str(rd_ptr(code, l->co_filename), file, PYS_FILE_MAX);
  pys_copy_str(rd_ptr(code, l->co_name), func, PYS_NAME_MAX);
  uintptr_t lt = rd_ptr(code, l->co_linetable);
  size_t lt_len = 0;
  if (lt && rd_ptr(lt, PYS_OB_TYPE) == g_bytes_type) {
    intptr_t n = (intptr_t)rd_ptr(lt, PYS_OB_SIZE);
    lt_len = n < 0 ? 0 : n > PYS_TABLE_MAX ? PYS_TABLE_MAX : (size_t)n;
  }
  size_t flen = strlen(file) + 1, nlen = strlen(func) + 1;
  char *mem = pys_arena_alloc(sizeof(struct pys_code) + flen + nlen + lt_len);
  if (!mem) goto out;
  struct pys_code *e = (struct pys_code *)mem;
  char *p = mem + sizeof *e;
  memcpy(p, file, flen);
  e->file = p;
  memcpy(p + flen, func, nlen);
  e->func = p + flen;
  if (lt_len) rd_bytes(lt + PYS_BYTES_DATA, p + flen + nlen, lt_len);
  e->table = (const uint8_t *)(p + flen + nlen);
  e->table_len = (uint32_t)lt_len;
  e->firstlineno = rd_int(code, l->co_firstlineno);

  id = ++g_ncodes;
  atomic_store_explicit(&g_entries[id - 1], e, memory_order_release); /* pairs with pystack_describe's acquire */
  sl->sig = sig;
  sl->id = id;
  atomic_store_explicit(&sl->code, code, memory_order_release); /* pairs with pys_find's acquire */
out:
  pthread_mutex_unlock(&g_lock);
  return id;
}

static inline uint32_t pys_code_id(uintptr_t code) {
  uintptr_t sig = pys_sig(code);
  uint32_t h = pys_hash(code);
  struct pys_slot *sl = pys_find(code, sig, h);
  /* relaxed: pys_find already loaded this slot with acquire, and a published slot never changes */
  if (sl && atomic_load_explicit(&sl->code, memory_order_relaxed) == code) return sl->id;
  return pys_insert(code, sig, h);
}

static inline uintptr_t pys_watched(struct pys_watch *wt, uintptr_t base, int off) {
  uintptr_t v = rd_ptr(base, off);
  if (wt && wt->n >= 0) {
    if (wt->n == PYS_WATCH_MAX) {
      wt->n = -1;
    } else {
      wt->addr[wt->n] = base + (uintptr_t)off;
      wt->val[wt->n++] = v;
    }
  }
  return v;
}

/* The calling thread's memo for one walk of its own frames, or NULL (no deallocator wrapper, no memory, or a
 * walk of this thread is already under way: a signal handler's capture). *frees gets the count to match. */
static struct pys_memo *pys_memo_begin(uint64_t *frees) {
  struct pys_memo *m = tls_memo;
  if (__builtin_expect(!m, 0)) {
    if (!g_frees_counted || tls_memo_state != 0) return NULL;
    tls_memo_state = -1;
    m = pys_map(sizeof *m);
    if (!m) return NULL;
    if (pthread_setspecific(g_memo_key, m)) {
      munmap(m, sizeof *m);
      return NULL;
    }
    tls_memo = m;
    tls_memo_state = 1;
  }
  if (m->busy) return NULL;
  /* Someone else may have put their own deallocator in the slot since (a tool that restores what it saw
   * before us): frees would then go uncounted, so the memo is not used while the wrapper is not in place. */
  if (__atomic_load_n((void **)(g_code_type + PYS_TP_DEALLOC), __ATOMIC_RELAXED) != (void *)pys_code_dealloc)
    return NULL;
  m->busy = 1;
  __atomic_signal_fence(__ATOMIC_SEQ_CST);
  *frees = atomic_load_explicit(&g_code_frees, memory_order_acquire); /* pairs with pys_code_dealloc */
  return m;
}

static void pys_memo_end(struct pys_memo *m) {
  __atomic_signal_fence(__ATOMIC_SEQ_CST);
  if (m) m->busy = 0;
}

static inline unsigned pys_memo_set(uintptr_t code) {
  return (unsigned)(((code >> 4) * 0x9E3779B97F4A7C15ull) >> 58) & (PYS_MEMO_SETS - 1);
}

/* The memo's entry for CODE if it still holds (no code object freed since it was made), else NULL. */
static inline struct pys_memo_entry *pys_memo_hit(struct pys_memo *m, uintptr_t code, uint64_t frees) {
  if (!m || !code) return NULL;
  struct pys_memo_entry *e = m->e[pys_memo_set(code)];
  for (int w = 0; w < PYS_MEMO_WAYS; w++)
    if (e[w].code == code) return e[w].frees == frees ? &e[w] : NULL;
  return NULL;
}

static inline void pys_memo_put(struct pys_memo *m, uintptr_t code, uint64_t frees, uint32_t id, uintptr_t code_bytes,
                                uintptr_t traceable) {
  if (!m || !id || code_bytes > UINT32_MAX || traceable > UINT32_MAX) return;
  unsigned set = pys_memo_set(code);
  struct pys_memo_entry *e = NULL;
  /* the code's own stale entry, else a free or stale way, else the set's next in turn */
  for (int w = 0; w < PYS_MEMO_WAYS && !e; w++)
    if (m->e[set][w].code == code) e = &m->e[set][w];
  for (int w = 0; w < PYS_MEMO_WAYS && !e; w++)
    if (!m->e[set][w].code || m->e[set][w].frees != frees) e = &m->e[set][w];
  if (!e) e = &m->e[set][m->next[set]++ % PYS_MEMO_WAYS];
  e->code = 0; /* a signal handler's walk meanwhile (were it to use the memo) sees no entry, not half of one */
  __atomic_signal_fence(__ATOMIC_SEQ_CST);
  e->frees = frees;
  e->id = id;
  e->code_bytes = (uint32_t)code_bytes;
  e->traceable = (uint32_t)traceable;
  __atomic_signal_fence(__ATOMIC_SEQ_CST);
  e->code = code;
}

/* 3.10: tstate->frame is a chain of PyFrameObjects; f_lasti counts code units, -1 before the first one.
 * With WT, the words the walk depended on are noted there. */
static int pys_walk_310(uintptr_t tstate, struct pystack_ref *out, int max, struct pys_watch *wt, struct pys_memo *memo,
                        uint64_t frees) {
  const struct pys_layout *l = g_lay;
  uintptr_t f = pys_watched(wt, tstate, l->ts_frame);
  int n = 0;
  for (int links = 0; f && n < max && links < PYS_MAX_LINKS && !tls_fault; links++) {
    if (rd_ptr(f, PYS_OB_TYPE) != g_frame_type) break;
    uintptr_t code = rd_ptr(f, l->fr_code);
    struct pys_memo_entry *known = pys_memo_hit(memo, code, frees);
    if (!known && (!code || rd_ptr(code, PYS_OB_TYPE) != g_code_type)) break;
    int lasti = rd_int(f, l->fr_instr);
    if (wt) pys_watched(wt, f, l->fr_instr);
    if (known) {
      out[n].code = known->id;
    } else {
      out[n].code = pys_code_id(code);
      pys_memo_put(memo, code, frees, out[n].code, 0, 0);
    }
    out[n].lasti = lasti >= 0 && lasti < (1 << 29) ? lasti * 2 : -1;
    n++;
    f = pys_watched(wt, f, l->fr_previous);
  }
  return n;
}

/* 3.11-3.13: _PyInterpreterFrame chain. Frames owned by the C stack (3.12+ entry shims) and incomplete frames
 * (still running their prologue) are skipped, as CPython's own traceback code skips them. */
static int pys_walk_311(uintptr_t tstate, struct pystack_ref *out, int max, struct pys_watch *wt, struct pys_memo *memo,
                        uint64_t frees) {
  const struct pys_layout *l = g_lay;
  uintptr_t f = pys_watched(wt, tstate, l->ts_frame);
  if (l->cf_current >= 0 && f) f = pys_watched(wt, f, l->cf_current);
  int n = 0, seen = 0;
  /* the window is the first max frames that are not entry shims, complete or not, as pystack_key's */
  for (int links = 0; f && seen < max && links < PYS_MAX_LINKS && !tls_fault; links++) {
    char owner;
    rd_bytes(f + (uintptr_t)l->fr_owner, &owner, 1);
    if (owner != PYS_OWNED_BY_CSTACK) {
      seen++;
      uintptr_t code = rd_ptr(f, l->fr_code);
      struct pys_memo_entry *known = pys_memo_hit(memo, code, frees);
      if (!known && (!code || rd_ptr(code, PYS_OB_TYPE) != g_code_type)) break;
      uintptr_t start = code + (uintptr_t)l->co_code;
      uintptr_t instr = pys_watched(wt, f, l->fr_instr);
      /* both fixed for the life of the code object */
      uintptr_t code_bytes = known ? known->code_bytes : 2u * (uintptr_t)rd_ptr(code, PYS_OB_SIZE);
      uintptr_t traceable = known ? known->traceable : 2u * (uintptr_t)rd_int(code, l->co_firsttraceable);
      bool incomplete = owner != PYS_OWNED_BY_GENERATOR && instr < start + traceable;
      if (!incomplete) {
        if (known) {
          out[n].code = known->id;
        } else {
          out[n].code = pys_code_id(code);
          pys_memo_put(memo, code, frees, out[n].code, code_bytes, traceable);
        }
        out[n].lasti = instr >= start && instr < start + code_bytes ? (int32_t)(instr - start) : -1;
        n++;
      }
    }
    f = pys_watched(wt, f, l->fr_previous);
  }
  return n;
}

int pys_walk(uintptr_t ts, struct pystack_ref *out, int max, struct pys_watch *wt, struct pys_memo *memo,
             uint64_t frees) {
  if (wt) wt->n = 0;
  for (unsigned i = 0; i < PYS_FILE_MEMO; i++) tls_files[i].str = 0; /* names of an earlier walk may be gone */
  return g_lay->minor == 10 ? pys_walk_310(ts, out, max, wt, memo, frees) : pys_walk_311(ts, out, max, wt, memo, frees);
}

#define PYS_TS_NEXT 8 /* PyThreadState.next, the second pointer in every supported version */

bool pys_others_readable(void) {
  pthread_once(&g_once, pys_probe);
  return g_state == PYS_READY && g_interp_head && g_thread_head && g_is_initialized();
}

unsigned long pys_ts_native_id(uintptr_t ts) {
  return g_lay->ts_native_id >= 0 ? (unsigned long)rd_ptr(ts, g_lay->ts_native_id) : 0;
}

unsigned long long pys_ts_thread_id(uintptr_t ts) { return rd_ptr(ts, g_lay->ts_thread_id); }

int pys_other_states(uintptr_t *out, int max) {
  void *interp = g_interp_head();
  uintptr_t self = (uintptr_t)g_this_tstate();
  uintptr_t ts = interp ? (uintptr_t)g_thread_head(interp) : 0;
  int n = 0;
  tls_fault = 0;
  for (int k = 0; ts && n < max && k < PYS_MAX_THREADS; k++) {
    uintptr_t next = rd_ptr(ts, PYS_TS_NEXT);
    if (tls_fault) break;
    if (ts != self) out[n++] = ts;
    ts = next;
  }
  tls_fault = 0;
  return n;
}

int pystack_other_threads(struct pystack_thread *out, int max) {
  if (max <= 0 || !pys_others_readable()) return 0;
  uintptr_t states[PYS_MAX_THREADS];
  int n = 0;
  tls_safe = 1;
  int nts = pys_other_states(states, PYS_MAX_THREADS);
  for (int i = 0; i < nts && n < max; i++) {
    out[n].id = pys_ts_thread_id(states[i]);
    out[n].n = pys_walk(states[i], out[n].refs, PYSTACK_MAX, NULL, NULL, 0);
    tls_fault = 0; /* a torn walk of one thread does not end the list */
    if (out[n].n > 0) n++;
  }
  tls_safe = 0;
  return n;
}

bool pys_in_autograd(const struct pystack_ref *refs, int n) {
  for (int i = 0; i < n; i++) {
    if (!refs[i].code || refs[i].code > PYS_MAX_CODES) continue;
    const struct pys_code *e = atomic_load_explicit(&g_entries[refs[i].code - 1], memory_order_acquire);
    if (e && strstr(e->file, "/torch/autograd/")) return true;
  }
  return false;
}

unsigned long long pystack_code_frees(void) { return atomic_load_explicit(&g_code_frees, memory_order_relaxed); }

/* The frames the calling thread's last pystack_key visited, innermost first: its next launch most likely has its
 * frames at the same addresses (the interpreter's frame stack reuses its memory), so they are fetched ahead. */
#define PYS_PREFETCH_MAX 32
static __thread uintptr_t tls_key_frames[PYS_PREFETCH_MAX];
static __thread int tls_key_n;

void pystack_prefetch(void) {
  /* a prefetch of an address no longer mapped is dropped, never a fault */
  for (int i = 0; i < tls_key_n; i++) {
    __builtin_prefetch((const void *)tls_key_frames[i], 0, 3);
    __builtin_prefetch((const void *)(tls_key_frames[i] + 64), 0, 3);
  }
}

int pystack_key(uint64_t *key) {
  pthread_once(&g_once, pys_probe);
  *key = 0;
  if (g_state != PYS_READY || !g_is_initialized()) return 0;
  uintptr_t f = (uintptr_t)g_this_tstate();
  if (!f) return 0;
  /* Code objects are known by address only while none is freed (the count is part of the key); without the
   * count, an address says nothing. */
  if (!g_frees_counted ||
      __atomic_load_n((void **)(g_code_type + PYS_TP_DEALLOC), __ATOMIC_RELAXED) != (void *)pys_code_dealloc)
    return -1;
  const struct pys_layout *l = g_lay;
  uint64_t h = atomic_load_explicit(&g_code_frees, memory_order_acquire) * 0x2545F4914F6CDD1Dull + 1, g = 7;
  int seen = 0, kept = 0;
  /* the calling thread's own frames: alive and still while it sits in this call, read directly */
  if (l->minor == 10) {
    f = *(const uintptr_t *)(f + (uintptr_t)l->ts_frame);
    for (int links = 0; f && seen < PYSTACK_MAX && links < PYS_MAX_LINKS; links++) {
      if (kept < PYS_PREFETCH_MAX) tls_key_frames[kept++] = f;
      if (*(const uintptr_t *)(f + PYS_OB_TYPE) != g_frame_type) break;
      h = (h + *(const uintptr_t *)(f + (uintptr_t)l->fr_code)) * 0x9E3779B97F4A7C15ull;
      g = (g + (uint64_t)(uint32_t) * (const int *)(f + (uintptr_t)l->fr_instr)) * 0xC2B2AE3D27D4EB4Full;
      seen++;
      f = *(const uintptr_t *)(f + (uintptr_t)l->fr_previous);
    }
  } else {
    f = *(const uintptr_t *)(f + (uintptr_t)l->ts_frame);
    if (l->cf_current >= 0 && f) f = *(const uintptr_t *)(f + (uintptr_t)l->cf_current);
    for (int links = 0; f && seen < PYSTACK_MAX && links < PYS_MAX_LINKS; links++) {
      if (kept < PYS_PREFETCH_MAX) tls_key_frames[kept++] = f;
      if (*(const char *)(f + (uintptr_t)l->fr_owner) != PYS_OWNED_BY_CSTACK) {
        h = (h + *(const uintptr_t *)(f + (uintptr_t)l->fr_code)) * 0x9E3779B97F4A7C15ull;
        g = (g + *(const uintptr_t *)(f + (uintptr_t)l->fr_instr)) * 0xC2B2AE3D27D4EB4Full;
        seen++;
      }
      f = *(const uintptr_t *)(f + (uintptr_t)l->fr_previous);
    }
  }
  tls_key_n = kept;
  if (!seen) return 0;
  h ^= g + (h >> 29) + (uint64_t)seen;
  h *= 0xBF58476D1CE4E5B9ull;
  *key = h ^ (h >> 31);
  return seen;
}

int pystack_capture(struct pystack_ref *out, int max) {
  pthread_once(&g_once, pys_probe);
  if (g_state != PYS_READY || max <= 0) return 0;
  /* Py_IsInitialized only reads a flag; before it is set (or after finalization) the thread-state key may not
   * exist, so PyGILState_GetThisThreadState must not be asked. */
  if (!g_is_initialized()) return 0;
  uintptr_t tstate = (uintptr_t)g_this_tstate();
  if (!tstate) return 0;
  uint64_t frees = 0;
  struct pys_memo *memo = pys_memo_begin(&frees);
  int n = pys_walk(tstate, out, max, NULL, memo, frees);
  pys_memo_end(memo);
  return n;
}

static uint32_t pys_varint(const uint8_t *p, size_t n, size_t *i) {
  uint32_t v = 0;
  for (int shift = 0; *i < n && shift < 32; shift += 6) {
    uint8_t b = p[(*i)++];
    v |= (uint32_t)(b & 63) << shift;
    if (!(b & 64)) break;
  }
  return v;
}

static int pys_svarint(const uint8_t *p, size_t n, size_t *i) {
  uint32_t v = pys_varint(p, n, i);
  return (v & 1) ? -(int)(v >> 1) : (int)(v >> 1);
}

/* 3.11+ location table (Objects/locations.md): entries of one header byte (bit 7 set, code in bits 3-6, length
 * in code units minus one in bits 0-2) and the code's extra bytes; lines are deltas from the previous start line,
 * which begins at co_firstlineno. */
static int pys_line_311(const struct pys_code *e, int lasti) {
  const uint8_t *p = e->table;
  size_t n = e->table_len, i = 0;
  int line = e->firstlineno, target = lasti / 2, addr = 0;
  while (i < n) {
    uint8_t b = p[i++];
    if (!(b & 0x80)) return -1; /* not an entry start: table corrupt or cut */
    int code = (b >> 3) & 15, len = (b & 7) + 1;
    bool has_line = true;
    if (code == 15) {
      has_line = false;
    } else if (code == 14) {
      line += pys_svarint(p, n, &i);
      for (int k = 0; k < 3; k++) pys_varint(p, n, &i); /* end line, start and end column */
    } else if (code == 13) {
      line += pys_svarint(p, n, &i);
    } else if (code >= 10) {
      line += code - 10;
      i += 2;
    } else {
      i += 1;
    }
    if (target < addr + len) return has_line ? line : -1;
    addr += len;
  }
  return -1;
}

/* 3.10 line table (Objects/lnotab_notes.txt): pairs of (byte delta, signed line delta); -128 = no line. */
static int pys_line_310(const struct pys_code *e, int lasti) {
  const uint8_t *p = e->table;
  int line = e->firstlineno, end = 0;
  for (size_t i = 0; i + 1 < e->table_len; i += 2) {
    int start = end, ldelta = (int8_t)p[i + 1], cur = -1;
    end += p[i];
    if (ldelta != -128) {
      line += ldelta;
      cur = line;
    }
    if (start <= lasti && lasti < end) return cur;
  }
  return -1;
}

int pystack_describe(const struct pystack_ref *r, char *file, size_t filelen, char *func, size_t funclen, int *line) {
  if (!r || r->code == 0 || r->code > PYS_MAX_CODES || !g_entries) return -1;
  /* acquire: pairs with the release store in pys_insert, so the entry's contents are visible */
  const struct pys_code *e = atomic_load_explicit(&g_entries[r->code - 1], memory_order_acquire);
  if (!e) return -1;
  if (file && filelen) snprintf(file, filelen, "%s", e->file);
  if (func && funclen) snprintf(func, funclen, "%s", e->func);
  if (line) {
    if (r->lasti < 0)
      *line = e->firstlineno; /* not started yet: CPython reports the first line too */
    else
      *line = g_lay->minor == 10 ? pys_line_310(e, r->lasti) : pys_line_311(e, r->lasti);
  }
  return 0;
}

const char *pystack_status(void) {
  pthread_once(&g_once, pys_probe);
  return g_status;
}
