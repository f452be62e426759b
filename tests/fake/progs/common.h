/* Pieces shared by the scenario programs: the simulated module image, the kernels in it, and error handling
 * the way an application does it (print the driver's error name, exit 1). Not a wrapper around the driver. */
#ifndef FAKE_PROGS_COMMON_H
#define FAKE_PROGS_COMMON_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <cuda.h>

/* The simulated driver loads "fakecubin:" images: a list of kernel names, mangled like nvcc does it. */
#define K_STEP "_Z4stepPfi"       /* step(float*, int): the ordinary kernel */
#define K_BAD "_Z9write_oobPii"   /* write_oob(int*, int): the one the tests make fault */
#define K_FILL "vec_fill"         /* an extern "C" kernel, name not mangled */
#define K_LATE "_Z10late_writePf" /* late_write(float*): a second faulty kernel (fork test) */
#define MODULE_IMAGE "fakecubin:" K_STEP "," K_BAD "," K_FILL "," K_LATE

#define NELEM 1024 /* elements of the device buffer every program allocates */

typedef CUresult (*error_name_fn)(CUresult, const char **);

/* Waits for a forked child and prints "child status N" (its exit status, -1 when a signal ended it), which the
 * tests read. */
static inline void wait_child(pid_t pid)
{
    int st = 0;
    waitpid(pid, &st, 0);
    printf("child status %d\n", WIFEXITED(st) ? WEXITSTATUS(st) : -1);
}

/* Print "error: API returned NAME (CODE)" for a failed call and leave like an application would. `call` is the
 * source text of the call; only the function name before the '(' is printed. */
static inline void report_error(error_name_fn get_name, const char *call, CUresult rc, int do_abort)
{
    const char *name = NULL;
    if (get_name == NULL || get_name(rc, &name) != CUDA_SUCCESS || name == NULL)
        name = "unrecognized error";
    size_t len = strcspn(call, "( ");
    for (size_t i = len; i > 0; i--)
        if (call[i - 1] == '.') { /* "D.cuMemFree" -> "cuMemFree" */
            call += i;
            len -= i;
            break;
        }
    fprintf(stderr, "error: %.*s returned %s (%d)\n", (int)len, call, name, (int)rc);
    fflush(stdout);
    if (do_abort)
        abort();
    exit(1);
}

/* Checks a driver call of a program linked with -lcuda; on failure prints the error and exits like an
 * application would. A program that aliases it (#define CK(call) CK_DRIVER(call)) prints the call as cuda.h's
 * macros expand it (cuMemcpyDtoH_v2); the programs whose tests expect the name as written (cuMemcpyDtoH) define
 * their CK with the same body instead. */
#define CK_DRIVER(call)                                                                                                                                        \
    do {                                                                                                                                                       \
        CUresult rc_ = (call);                                                                                                                                 \
        if (rc_ != CUDA_SUCCESS)                                                                                                                               \
            report_error(cuGetErrorName, #call, rc_, 0);                                                                                                       \
    } while (0)

#endif
