// One kernel on two streams (700): each stream runs add_rows on its own buffer, a few launches each, kept busy so
// they are in flight together; the third launch on stream B runs 64 elements past the end of its buffer. B's
// buffer is mapped with the virtual memory API at the lower half of a reservation, so the bytes after it are
// reserved and unmapped and the stray writes fault on every GPU. The kernel's log gives the page just past B's
// buffer, which only stream B's launches were passed: culprit keeps B's unfinished launches as the candidates (or
// names the launch, where a breadcrumb left it alone unfinished on B).
#include "gpu_fenced.cuh"

static const int kN = 1 << 16;                    // elements each buffer holds at least
static const int kLaunches = 5;                   // launches on each stream
static const int kBad = 2;                        // the launch on stream B (from 0) that runs past its buffer
static const int kPast = 64;                      // elements it writes past the end
static const unsigned long long kSpinNs = 200000; // each launch stays busy ~200 us so both streams are in flight

// Adds one to n + past elements of x: past > 0 runs off the end.
__global__ void add_rows(float *x, int n, int past) {
  gt_spin_ns(kSpinNs);
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n + past) x[i] += 1.0f; // CULPRIT-FAULT
}

int main(void) {
  cudaStream_t sa, sb;
  float *a, *b, host = 0.0f;

  gt_start("gpu_page_streams");
  size_t bytes = gt_fenced_bytes(sizeof(float) * kN);
  const int nb = (int)(bytes / sizeof(float)); // elements of each buffer: B's whole mapping, A's the same
  GT_CHECK(cudaMalloc(&a, bytes));             // before the reservation: A lies elsewhere, not right after B
  b = (float *)gt_fenced_buffer(bytes, 1);     // the lower half: what lies after B is reserved and unmapped
  GT_CHECK(cudaMemset(a, 0, bytes));
  GT_CHECK(cudaMemset(b, 0, bytes));
  GT_CHECK(cudaStreamCreateWithFlags(&sa, cudaStreamNonBlocking));
  GT_CHECK(cudaStreamCreateWithFlags(&sb, cudaStreamNonBlocking));
  GT_CHECK(cudaDeviceSynchronize());

  for (int k = 0; k < kLaunches; k++) {
    add_rows<<<(nb + kPast + 255) / 256, 256, 0, sb>>>(b, nb, k == kBad ? kPast : 0); // CULPRIT-LAUNCH
    add_rows<<<(nb + kPast + 255) / 256, 256, 0, sa>>>(a, nb, 0);                     // the same kernel and grid on A
  }
  GT_CHECK(cudaDeviceSynchronize());
  GT_CHECK(cudaMemcpy(&host, b, sizeof host, cudaMemcpyDeviceToHost));
  printf("first element %.1f\n", host);
  return 0;
}
