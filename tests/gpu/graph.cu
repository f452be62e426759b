// A fault inside a replayed CUDA graph (700). Three kernels are captured from a stream into a graph, which is
// replayed once per step; before step 3 a corrupt token index reaches the index buffer the captured scatter
// reads, and the scatter writes far outside its output during that replay. The error surfaces at the
// cudaStreamSynchronize after the replay. culprit must name the graph launch (its replay line), the faulting
// node's kernel and the line where that node was captured.
#include "gpu_test.cuh"

static const int kN = 1024;        // tokens
static const int kSteps = 4;       // replays
static const int kBadStep = 3;     // the replay that faults

__global__ void normalize(float *x, int n, float s) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
    x[i] *= s;
}

__global__ void bias_add(float *x, int n, float b) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
    x[i] += b;
}

// Scatters token i to slot idx[i] of out; trusts idx.
__global__ void scatter_tokens(float *out, const float *x, const long long *idx, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n)
    out[idx[i]] = x[i];
}

int main(void) {
  cudaStream_t st;
  cudaGraph_t graph;
  cudaGraphExec_t exec;
  float *x, *out;
  long long *idx;
  long long host_idx[kN];

  gt_start("gpu_graph");
  GT_CHECK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
  GT_CHECK(cudaMalloc(&x, sizeof(float) * kN));
  GT_CHECK(cudaMalloc(&out, sizeof(float) * kN));
  GT_CHECK(cudaMalloc(&idx, sizeof(long long) * kN));
  for (int i = 0; i < kN; i++)
    host_idx[i] = kN - 1 - i;
  GT_CHECK(cudaMemcpy(idx, host_idx, sizeof host_idx, cudaMemcpyHostToDevice));
  GT_CHECK(cudaMemset(x, 0, sizeof(float) * kN));
  GT_CHECK(cudaDeviceSynchronize());

  GT_CHECK(cudaStreamBeginCapture(st, cudaStreamCaptureModeGlobal));
  normalize<<<4, 256, 0, st>>>(x, kN, 0.5f);
  scatter_tokens<<<kN / 256, 256, 0, st>>>(out, x, idx, kN); // CULPRIT-CAPTURE
  bias_add<<<4, 256, 0, st>>>(out, kN, 1.0f);
  GT_CHECK(cudaStreamEndCapture(st, &graph));
  GT_CHECK(cudaGraphInstantiate(&exec, graph, 0));

  for (int step = 1; step <= kSteps; step++) {
    if (step == kBadStep) {
      host_idx[77] = 1LL << 36; // a corrupt record in the next batch
      GT_CHECK(cudaMemcpy(idx, host_idx, sizeof host_idx, cudaMemcpyHostToDevice));
    }
    GT_CHECK(cudaGraphLaunch(exec, st)); // CULPRIT-LAUNCH
    GT_CHECK(cudaStreamSynchronize(st));
    printf("step %d done\n", step);
  }
  return 0;
}
