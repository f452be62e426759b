// A fault among long kernels deep in a run (700). A solver runs 40 steps of 20 relaxation sweeps, each sweep a
// kernel of about 250 us, and reads the residual back after each step. Sweep 7 of step 33 (launch 667, past a
// stream's young launches) reads a corrupt neighbour index. The error surfaces at that step's cudaMemcpy.
// A stream whose launches are this long gets a mark after each one, so the run that faulted names it exactly.
#include "gpu_test.cuh"

#include <cstdint>
#include <vector>

static const int kN = 1 << 16;                     // cells
static const int kSteps = 40;                      // steps
static const int kSweeps = 20;                     // kernels per step
static const int kBadStep = 33;                    // the step (from 1) with the corrupt index
static const int kBadSweep = 7;                    // its sweep (from 1)
static const unsigned long long kSweepNs = 250000; // GPU time per sweep

__global__ void relax_sweep(float *u, const int64_t *nbr, int n, int bad, unsigned long long ns) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i == 0) gt_spin_ns(ns); // a long kernel: one thread keeps the block busy
  if (i < n) {
    int64_t j = bad && i == 12345 ? (int64_t)1 << 40 : nbr[i];
    u[i] = 0.5f * (u[i] + u[j]); // CULPRIT-FAULT
  }
}

__global__ void residual(const float *u, float *out, int n) {
  if (blockIdx.x == 0 && threadIdx.x == 0) *out = u[0] + u[n - 1];
}

int main(void) {
  float *u, *res;
  int64_t *nbr;
  std::vector<int64_t> h(kN);

  gt_start("gpu_longk");
  GT_CHECK(cudaMalloc(&u, sizeof(float) * kN));
  GT_CHECK(cudaMalloc(&res, sizeof(float)));
  GT_CHECK(cudaMalloc(&nbr, sizeof(int64_t) * kN));
  GT_CHECK(cudaMemset(u, 0, sizeof(float) * kN));
  for (int i = 0; i < kN; i++) h[i] = (i + 1) % kN;
  GT_CHECK(cudaMemcpy(nbr, h.data(), sizeof(int64_t) * kN, cudaMemcpyHostToDevice));
  for (int step = 1; step <= kSteps; step++) {
    float r = 0.0f;
    for (int sweep = 1; sweep <= kSweeps; sweep++) {
      int bad = step == kBadStep && sweep == kBadSweep;
      relax_sweep<<<kN / 256, 256>>>(u, nbr, kN, bad, kSweepNs); // CULPRIT-LAUNCH
    }
    residual<<<1, 1>>>(u, res, kN);
    GT_CHECK(cudaMemcpy(&r, res, sizeof(float), cudaMemcpyDeviceToHost));
    if (step % 10 == 0) printf("step %d residual %.3f\n", step, r);
  }
  return 0;
}
