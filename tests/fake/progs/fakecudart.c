/* A stand-in for the CUDA runtime's error text, built as libcudart.so.13 with its symbols under the version node
 * "libcudart.so.13" as NVIDIA's shared runtime has them, so that the test programs linked with it make the same
 * versioned reference PyTorch's libraries make (cudaGetErrorString@libcudart.so.13). Its own words for no error and
 * the device assert, as the runtime has a table of its own; for every other code the driver's words, fetched
 * through cuGetProcAddress as the runtime fetches the driver's entry points. */
#define _GNU_SOURCE
#include <cuda.h>
#include <dlfcn.h>
#include <stddef.h>

typedef CUresult (*gpa_fn)(const char *, void **, int, cuuint64_t, CUdriverProcAddressQueryResult *);
typedef CUresult (*errstr_fn)(CUresult, const char **);

const char *cudaGetErrorString(int error)
{
    if (error == 0)
        return "no error";
    if (error == 710)
        return "device-side assert triggered";
    void *h = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD);
    gpa_fn gpa = h ? (gpa_fn)dlsym(h, "cuGetProcAddress_v2") : NULL;
    errstr_fn fn = NULL;
    const char *s = NULL;
    if (gpa && gpa("cuGetErrorString", (void **)&fn, 13000, 0, NULL) == CUDA_SUCCESS && fn && fn((CUresult)error, &s) == CUDA_SUCCESS && s)
        return s;
    return "unrecognized error code";
}
