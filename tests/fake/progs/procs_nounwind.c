/* Built without unwind tables (tests/fake/CMakeLists.txt): a frame an unwinder can only guess, as JIT-compiled
 * code is. libunwind checks the addresses it reads in such a frame through a pipe of its own. */
#include <cuda.h>

CUresult procs_alloc_unwound(CUdeviceptr *p, size_t size);

CUresult procs_alloc_unwound(CUdeviceptr *p, size_t size)
{
    return cuMemAlloc(p, size);
}
