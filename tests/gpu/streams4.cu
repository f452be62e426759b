// A fault on one of four concurrent streams (700). Each stream runs its own chain of short kernels, round after
// round, so kernels of all four streams are in flight together; in round 3 the gather on stream 2 reads a bad
// row index and writes far outside its output. The error surfaces at cudaDeviceSynchronize (or at a launch).
#include "gpu_test.cuh"

static const int kStreams = 4;    // concurrent streams
static const int kRounds = 5;     // rounds of each stream's chain
static const int kBadRound = 3;   // the round in which stream kBadStream faults
static const int kBadStream = 2;  // the stream that faults
static const int kN = 1024;       // elements per stream buffer
static const unsigned long long kSpinNs = 20000; // each kernel stays busy ~20 us so streams overlap

__global__ void scale_rows(float *x, int n, float f) {
  gt_spin_ns(kSpinNs);
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
    x[i] *= f;
}

__global__ void shift_rows(float *x, int n, float d) {
  gt_spin_ns(kSpinNs);
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
    x[i] += d;
}

__global__ void square_rows(float *x, int n) {
  gt_spin_ns(kSpinNs);
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
    x[i] *= x[i];
}

// Copies row[idx] of x into out; trusts idx. Only stream kBadStream runs it.
__global__ void gather_rows(float *out, const float *x, int n, long long idx) {
  gt_spin_ns(kSpinNs);
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n)
    out[idx + i] = x[i]; // CULPRIT-FAULT
}

int main(void) {
  cudaStream_t streams[kStreams];
  float *bufs[kStreams], *gathered;

  gt_start("gpu_streams4");
  for (int s = 0; s < kStreams; s++) {
    GT_CHECK(cudaStreamCreateWithFlags(&streams[s], cudaStreamNonBlocking));
    GT_CHECK(cudaMalloc(&bufs[s], sizeof(float) * kN));
    GT_CHECK(cudaMemset(bufs[s], 0, sizeof(float) * kN));
  }
  GT_CHECK(cudaMalloc(&gathered, sizeof(float) * kN));
  GT_CHECK(cudaDeviceSynchronize());

  for (int round = 1; round <= kRounds; round++) {
    for (int s = 0; s < kStreams; s++) {
      cudaStream_t st = streams[s];
      switch (s) {
      case 0:
        scale_rows<<<4, 128, 0, st>>>(bufs[s], kN, 1.5f);
        shift_rows<<<4, 128, 0, st>>>(bufs[s], kN, 1.0f);
        break;
      case 1:
        shift_rows<<<4, 128, 0, st>>>(bufs[s], kN, 2.0f);
        square_rows<<<4, 128, 0, st>>>(bufs[s], kN);
        break;
      case kBadStream: {
        long long idx = round == kBadRound ? (1LL << 40) : 0; // a stale index from a freed table
        shift_rows<<<4, 128, 0, st>>>(bufs[s], kN, 0.5f);
        gather_rows<<<kN / 128, 128, 0, st>>>(gathered, bufs[s], kN, idx); // CULPRIT-LAUNCH
        break;
      }
      default:
        square_rows<<<4, 128, 0, st>>>(bufs[s], kN);
        scale_rows<<<4, 128, 0, st>>>(bufs[s], kN, 0.25f);
        break;
      }
    }
  }
  GT_CHECK(cudaDeviceSynchronize());
  printf("all rounds done\n");
  return 0;
}
