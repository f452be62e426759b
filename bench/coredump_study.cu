// The GPU core dump without the abort: what the driver does when dumps are on and a kernel faults, what having
// them on costs while nothing faults, and whether a user-triggered dump leaves a hung program running. One run
// of this program is one experiment; bench/coredump_study.sh runs them all and reads the dumps with cuda-gdb.
//
//   bench_coredump_study fault KIND [inproc FILE]   KIND: oob, misaligned or assert. A few healthy kernels, then
//       one that faults (block 3, thread 7 of a grid of 8 x 128), then cudaDeviceSynchronize and two more calls.
//       Prints "rc sync=N memcpy=N launch=N" (the codes each call returned), "sync_ms=T" (time the synchronize
//       took: the dump is written inside it) and "continued" when the process is still alive at the end.
//       inproc: dumps are asked for with cuCoredumpSetAttributeGlobal (on exception, the lightweight flags and
//       skip_abort, into FILE) before the first context, not through the environment.
//   bench_coredump_study loop N      N tiny launches on one stream, then one synchronize: launch_us=T.
//   bench_coredump_study hang PIPE   a kernel that spins on host-mapped memory; after 1 s the pipe PIPE (the
//       driver's, CU_COREDUMP_PIPE) is written to, the program waits up to 60 s for the dump file named by
//       CUDA_COREDUMP_FILE (or the in-process attribute) to appear, then releases the kernel and synchronizes:
//       "dump_ms=T" and "rc sync=N" tell whether the program went on.
#include <cuda.h>
#include <cuda_runtime.h>

#undef NDEBUG // the assert kernel must assert in every build type
#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

__global__ void fill(float *p, int n, float v) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n)
    p[i] = v * (float)i;
}

// The faulting lane: block 3, thread 7. Every other lane does the healthy work.
__global__ void bad_store(float *p, int n, long long far) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (blockIdx.x == 3 && threadIdx.x == 7)
    p[far] = 1.0f; // the out-of-bounds store
  else if (i < n)
    p[i] += 1.0f;
}

__global__ void bad_align(float *p, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (blockIdx.x == 3 && threadIdx.x == 7)
    *(float *)((char *)p + 2) = 1.0f; // the misaligned store
  else if (i < n)
    p[i] += 1.0f;
}

__global__ void bad_assert(const float *p, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  assert(!(blockIdx.x == 3 && threadIdx.x == 7) && i < n && p);
}

__global__ void tiny(int *slot) {
  if (threadIdx.x == 0)
    *slot += 1;
}

__global__ void spin(volatile int *flag) {
  while (*flag == 0) {
  }
}

static int set_attr(CUcoredumpSettings a, void *v, size_t n) {
  CUresult rc = cuCoredumpSetAttributeGlobal(a, v, &n);
  if (rc != CUDA_SUCCESS)
    printf("cuCoredumpSetAttributeGlobal(%d) = %d\n", (int)a, (int)rc);
  return rc != CUDA_SUCCESS;
}

static int inproc(const char *file, int user_pipe, const char *pipe) {
  bool on = true;
  int flags = CU_COREDUMP_SKIP_GLOBAL_MEMORY | CU_COREDUMP_SKIP_SHARED_MEMORY | CU_COREDUMP_SKIP_LOCAL_MEMORY |
              CU_COREDUMP_SKIP_CONSTBANK_MEMORY | CU_COREDUMP_SKIP_ABORT;
  if (cuInit(0) != CUDA_SUCCESS)
    return 1;
  int bad = set_attr(CU_COREDUMP_ENABLE_ON_EXCEPTION, &on, sizeof on) ||
            set_attr(CU_COREDUMP_GENERATION_FLAGS, &flags, sizeof flags) ||
            set_attr(CU_COREDUMP_FILE, (void *)file, strlen(file) + 1);
  if (!bad && user_pipe)
    bad = set_attr(CU_COREDUMP_ENABLE_USER_TRIGGER, &on, sizeof on) ||
          set_attr(CU_COREDUMP_PIPE, (void *)pipe, strlen(pipe) + 1);
  return bad;
}

static int fault(const char *kind) {
  const int n = 8 * 128;
  float *p;
  cudaMalloc(&p, n * sizeof(float));
  for (int k = 0; k < 4; k++)
    fill<<<8, 128>>>(p, n, (float)k);
  cudaDeviceSynchronize();
  double t0 = now_ms();
  if (!strcmp(kind, "oob"))
    bad_store<<<8, 128>>>(p, n, 1LL << 34);
  else if (!strcmp(kind, "misaligned"))
    bad_align<<<8, 128>>>(p, n);
  else
    bad_assert<<<8, 128>>>(p, n);
  int launch = (int)cudaGetLastError();
  int sync = (int)cudaDeviceSynchronize();
  double t1 = now_ms();
  float host[4];
  int memcpy_rc = (int)cudaMemcpy(host, p, sizeof host, cudaMemcpyDeviceToHost);
  printf("rc sync=%d memcpy=%d launch=%d\n", sync, memcpy_rc, launch);
  printf("sync_ms=%.1f\n", t1 - t0);
  printf("continued\n");
  fflush(stdout);
  return sync ? 3 : 0;
}

static int loop(long launches) {
  int *slot;
  cudaStream_t st;
  cudaMalloc(&slot, sizeof(int));
  cudaStreamCreate(&st);
  for (int i = 0; i < 2000; i++)
    tiny<<<1, 32, 0, st>>>(slot);
  cudaStreamSynchronize(st);
  double t0 = now_ms();
  for (long i = 0; i < launches; i++)
    tiny<<<1, 32, 0, st>>>(slot);
  int rc = (int)cudaStreamSynchronize(st);
  double t1 = now_ms();
  printf("launch_us=%.4f\n", (t1 - t0) * 1e3 / (double)launches);
  return rc != 0;
}

static int hang(const char *pipe) {
  volatile int *flag;
  cudaHostAlloc((void **)&flag, sizeof(int), cudaHostAllocMapped);
  *flag = 0;
  int *dflag;
  cudaHostGetDevicePointer((void **)&dflag, (void *)flag, 0);
  spin<<<1, 1>>>(dflag);
  sleep(1);
  const char *file = getenv("STUDY_DUMP_FILE");
  double t0 = now_ms();
  int fd = open(pipe, O_WRONLY | O_NONBLOCK);
  if (fd < 0) {
    printf("pipe %s: cannot open: %s\n", pipe, strerror(errno));
  } else {
    ssize_t w = write(fd, "1", 1);
    printf("pipe written: %zd\n", w);
    close(fd);
  }
  fflush(stdout);
  struct stat sb;
  double t1 = -1;
  off_t last = -1;
  while (now_ms() - t0 < 60000) {
    if (file && stat(file, &sb) == 0) {
      if (sb.st_size == last && sb.st_size > 0) { // stopped growing
        t1 = now_ms();
        break;
      }
      last = sb.st_size;
    }
    usleep(200000);
  }
  printf("dump_ms=%.1f size=%lld\n", t1 < 0 ? -1.0 : t1 - t0, (long long)last);
  *flag = 1;
  int sync = (int)cudaDeviceSynchronize();
  printf("rc sync=%d\ncontinued\n", sync);
  return sync != 0;
}

int main(int argc, char **argv) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  if (argc >= 3 && !strcmp(argv[1], "fault")) {
    if (argc >= 5 && !strcmp(argv[3], "inproc") && inproc(argv[4], 0, NULL))
      return 1;
    return fault(argv[2]);
  }
  if (argc >= 3 && !strcmp(argv[1], "loop"))
    return loop(atol(argv[2]));
  if (argc >= 3 && !strcmp(argv[1], "hang")) {
    if (argc >= 5 && !strcmp(argv[3], "inproc") && inproc(argv[4], 1, argv[2]))
      return 1;
    return hang(argv[2]);
  }
  fprintf(stderr, "usage: bench_coredump_study fault oob|misaligned|assert [inproc FILE] | loop N | "
                  "hang PIPE [inproc FILE]\n");
  return 2;
}
