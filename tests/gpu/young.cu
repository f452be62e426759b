// A fault among the first launches of a stream (700). A preprocessing pass on a stream of its own normalizes an
// image in six row chunks; the fourth chunk's row table holds a corrupt offset and the kernel writes far outside
// the image. The error surfaces at cudaStreamSynchronize. The stream has had six launches: record mode marks a
// young stream's every launch, so the run that faulted names the fourth exactly.
#include "gpu_test.cuh"

#include <cstdint>
#include <vector>

static const int kRows = 1024;  // image rows
static const int kCols = 256;   // pixels per row
static const int kChunks = 6;   // launches, one per chunk of rows
static const int kBadChunk = 3; // the chunk (from 0) whose row table is corrupt

__global__ void normalize_rows(float *img, const int64_t *row_start, int rows, int cols) {
  int r = blockIdx.x;
  int c = threadIdx.x;
  if (r < rows && c < cols) {
    float *row = img + row_start[r]; // CULPRIT-FAULT
    row[c] = row[c] * 0.5f + 0.25f;
  }
}

int main(void) {
  const int per = kRows / kChunks;
  float *img;
  int64_t *dstart;
  cudaStream_t s;
  std::vector<int64_t> start(kRows);

  gt_start("gpu_young");
  GT_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  GT_CHECK(cudaMalloc(&img, sizeof(float) * kRows * kCols));
  GT_CHECK(cudaMalloc(&dstart, sizeof(int64_t) * kRows));
  GT_CHECK(cudaMemset(img, 0, sizeof(float) * kRows * kCols));
  for (int r = 0; r < kRows; r++) start[r] = (int64_t)r * kCols;
  start[kBadChunk * per + 7] = (int64_t)1 << 40; // a corrupt entry in the row table
  GT_CHECK(cudaMemcpy(dstart, start.data(), sizeof(int64_t) * kRows, cudaMemcpyHostToDevice));
  for (int k = 0; k < kChunks; k++)
    normalize_rows<<<per, kCols, 0, s>>>(img, dstart + k * per, per, kCols); // CULPRIT-LAUNCH
  GT_CHECK(cudaStreamSynchronize(s));
  printf("normalized %d rows\n", kRows);
  return 0;
}
