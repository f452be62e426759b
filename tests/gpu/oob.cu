// Out-of-bounds write (700). A label-lookup training step: the third batch carries a corrupt label and the
// gradient scatter trusts it, writing far outside its buffer. Nothing fails at the launch; the error surfaces
// later, at the cudaMemcpy that fetches the step's loss (or, if the GPU is quick, at a following launch).
#include "gpu_test.cuh"

#include <cstdint>
#include <vector>

static const int kBatch = 256;    // samples per step
static const int kClasses = 16;   // logits per sample
static const int kSteps = 5;      // steps the program would run
static const int kBadStep = 3;    // the step whose batch holds the corrupt label
static const int kBadSample = 123; // the sample with the corrupt label

__global__ void make_logits(float *logits, int n, int step) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n)
    logits[i] = 0.01f * (float)((i * 7 + step) % 97);
}

// Picks each sample's logit by comparing classes, so a bad label only makes its loss wrong here.
__global__ void pick_loss(const float *logits, const int64_t *labels, float *loss, int batch, int classes) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  float picked = 0.0f;
  if (i >= batch)
    return;
  for (int c = 0; c < classes; c++)
    if (c == labels[i])
      picked = logits[i * classes + c];
  loss[i] = -picked;
}

// Indexes the gradient row by the label without checking it: the faulty kernel.
__global__ void scatter_grad(float *grad, const int64_t *labels, int batch, int classes) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < batch)
    grad[(int64_t)i * classes + labels[i]] -= 1.0f; // CULPRIT-FAULT
}

__global__ void sum_loss(const float *loss, float *total, int batch) {
  __shared__ float part[256];
  float s = 0.0f;
  for (int i = threadIdx.x; i < batch; i += blockDim.x)
    s += loss[i];
  part[threadIdx.x] = s;
  __syncthreads();
  for (int w = blockDim.x / 2; w > 0; w /= 2) {
    if ((int)threadIdx.x < w)
      part[threadIdx.x] += part[threadIdx.x + w];
    __syncthreads();
  }
  if (threadIdx.x == 0)
    *total = part[0];
}

int main(void) {
  std::vector<int64_t> labels(kBatch);
  float *logits, *loss, *grad, *total;
  int64_t *dlabels;

  gt_start("gpu_oob");
  GT_CHECK(cudaMalloc(&logits, sizeof(float) * kBatch * kClasses));
  GT_CHECK(cudaMalloc(&grad, sizeof(float) * kBatch * kClasses));
  GT_CHECK(cudaMalloc(&loss, sizeof(float) * kBatch));
  GT_CHECK(cudaMalloc(&total, sizeof(float)));
  GT_CHECK(cudaMalloc(&dlabels, sizeof(int64_t) * kBatch));
  GT_CHECK(cudaMemset(grad, 0, sizeof(float) * kBatch * kClasses));

  for (int step = 1; step <= kSteps; step++) {
    float host_total = 0.0f;

    for (int i = 0; i < kBatch; i++)
      labels[i] = (i * 5 + step) % kClasses;
    if (step == kBadStep)
      labels[kBadSample] = (int64_t)1 << 40; // a corrupt record in the data set
    GT_CHECK(cudaMemcpy(dlabels, labels.data(), sizeof(int64_t) * kBatch, cudaMemcpyHostToDevice));

    make_logits<<<(kBatch * kClasses + 255) / 256, 256>>>(logits, kBatch * kClasses, step);
    pick_loss<<<(kBatch + 127) / 128, 128>>>(logits, dlabels, loss, kBatch, kClasses);
    scatter_grad<<<(kBatch + 127) / 128, 128>>>(grad, dlabels, kBatch, kClasses); // CULPRIT-LAUNCH
    sum_loss<<<1, 256>>>(loss, total, kBatch);
    GT_CHECK(cudaMemcpy(&host_total, total, sizeof(float), cudaMemcpyDeviceToHost));
    printf("step %d loss %.4f\n", step, host_total / kBatch);
  }
  GT_CHECK(cudaFree(logits));
  GT_CHECK(cudaFree(grad));
  GT_CHECK(cudaFree(loss));
  GT_CHECK(cudaFree(total));
  GT_CHECK(cudaFree(dlabels));
  return 0;
}
