/* Python stacks: at launch time, record the calling thread's Python frames as (code id, instruction offset)
 * pairs by reading the interpreter's frame chain directly, without the GIL and without calling Python; at report
 * time, turn them into file, function and line from pystack's own copies. It does not see native frames (stack.h
 * does). Its one write into the interpreter is made once, at start: the code type's deallocator is wrapped so
 * that code objects freed are counted (see pystack.c); nothing else of the interpreter's is ever written. */
#ifndef CULPRIT_PYSTACK_H
#define CULPRIT_PYSTACK_H

#include <stddef.h>
#include <stdint.h>

#define PYSTACK_MAX 24

struct pystack_ref {
  uint32_t code; /* 1-based id of the code object in pystack's table; 0 = unused (or the table was full) */
  int32_t lasti; /* byte offset of the current instruction in the code, -1 if unknown */
};

/* Fills out[0..max) with the calling thread's Python frames, innermost first. Returns the count (0 when the
 * thread runs no Python, the process has no Python, or the version is unsupported). Never blocks, never takes the
 * GIL, never allocates on the fast path (a new code object is remembered once: that may take a mutex and copy a
 * few hundred bytes). */
int pystack_capture(struct pystack_ref *out, int max);
/* The identity of the calling thread's Python frames, cheaply: a hash of each frame's code object and
 * instruction, and of the interpreter's count of freed code objects (an address names one code object only while
 * none is freed), over the frames pystack_capture would look at. Two calls with the same key and count would
 * capture the same frames. Returns the number of frames hashed (*key set), 0 when the thread runs no Python, or
 * -1 when it does but code objects cannot be told apart by address (their frees are not counted): capture then. */
int pystack_key(uint64_t *key);
/* Asks the CPU to fetch the frames the calling thread's last pystack_key read, ahead of the next one: a launch
 * calls it first thing, so that the walk's chain of dependent loads finds them in the cache rather than waiting for
 * each in turn. Reads nothing itself. */
void pystack_prefetch(void);
/* At report time: file, function (qualified name where the version has it) and line of one captured frame.
 * Returns 0, or -1 if unknown. Reads only pystack's own copies. *line is -1 when the instruction has no line. */
int pystack_describe(const struct pystack_ref *r, char *file, size_t filelen, char *func, size_t funclen, int *line);
/* The Python frames of every other thread of the interpreter, for a launch made by a thread that runs no Python
 * (PyTorch's autograd engine during backward(), say): at report time, the thread waiting on that work shows the
 * line that started it. Reads other threads' memory defensively (a failed read ends that thread's walk, it cannot
 * crash) and is meant for report time only. Returns the number of threads filled in. */
struct pystack_thread {
  unsigned long long id;                /* the thread's Python thread id (threading.get_ident()) */
  int n;                                /* frames in refs */
  struct pystack_ref refs[PYSTACK_MAX]; /* innermost first */
};
int pystack_other_threads(struct pystack_thread *out, int max);
/* Code objects the interpreter has freed since pystack first looked at it (0 where it cannot count them). A
 * thread's memo of code objects is valid while this stays the same; tests and statistics read it. */
unsigned long long pystack_code_frees(void);
/* One short phrase for the report: "CPython 3.12", "no Python in this process", or
 * "CPython 3.14 is not supported: no Python stacks". */
const char *pystack_status(void);

#endif
