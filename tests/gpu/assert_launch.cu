// A device assert deep in a dense stream that surfaces at a launch (710). A training-like loop launches two short
// kernels per step and, every 50 steps, a label check whose assert fires on one bad label at step 700. The
// program checks cudaGetLastError after every launch, as PyTorch does, and launches on long after the assert:
// the driver answers a launch with the error at the latest when its queue is full, so it surfaces at a launch,
// not at the synchronize after the loop. By then the stream is old and dense (record mode marks only every few
// launches), so the window of unfinished launches holds several; the assert's text names the check kernel, the
// only one of its name in the window, and the run that faulted names it exactly.
#undef NDEBUG // the assert must stay in even in release builds
#include <cassert>

#include "gpu_test.cuh"

static const int kN = 1 << 12;     // labels and activations
static const int kClasses = 100;   // valid labels are 0..kClasses-1
static const int kSteps = 1600;    // steps of the loop: after the bad step, more launches than the driver's queue
                                   // holds (about 1000 on the H100), so the error surfaces at a launch
static const int kCheckEvery = 50; // a label check every this many steps
static const int kBadStep = 700;   // the step whose labels hold a bad one

__global__ void forward_step(float *act, const int *labels, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) act[i] = 0.99f * act[i] + 0.01f * (float)labels[i];
}

__global__ void update_step(float *act, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) act[i] = act[i] > 50.0f ? 50.0f : act[i];
}

__global__ void check_labels(const int *labels, int n, int classes) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) assert(labels[i] >= 0 && labels[i] < classes); // CULPRIT-FAULT
}

__global__ void corrupt_label(int *labels, int at, int value) { labels[at] = value; }

static void launched(void) { GT_CHECK(cudaGetLastError()); }

int main(void) {
  int *labels, *h = (int *)malloc(sizeof(int) * kN);
  float *act;
  cudaStream_t s;

  gt_start("gpu_assert_launch");
  GT_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  GT_CHECK(cudaMalloc(&labels, sizeof(int) * kN));
  GT_CHECK(cudaMalloc(&act, sizeof(float) * kN));
  for (int i = 0; i < kN; i++) h[i] = (i * 13) % kClasses;
  GT_CHECK(cudaMemcpy(labels, h, sizeof(int) * kN, cudaMemcpyHostToDevice));
  GT_CHECK(cudaMemset(act, 0, sizeof(float) * kN));
  for (int step = 0; step < kSteps; step++) {
    if (step == kBadStep) {
      corrupt_label<<<1, 1, 0, s>>>(labels, 2024, kClasses + 7); // the loader's off-by-one class
      launched();
    }
    forward_step<<<kN / 256, 256, 0, s>>>(act, labels, kN);
    launched();
    update_step<<<kN / 256, 256, 0, s>>>(act, kN);
    launched();
    if (step % kCheckEvery == 0) {
      check_labels<<<kN / 256, 256, 0, s>>>(labels, kN, kClasses); // CULPRIT-LAUNCH
      launched();
    }
  }
  GT_CHECK(cudaStreamSynchronize(s));
  printf("done after %d steps\n", kSteps);
  free(h);
  return 0;
}
