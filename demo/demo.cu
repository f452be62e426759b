// culprit's bundled demo: a tiny classifier trained for six steps on the GPU. Each step runs four kernels
// (logits, cross-entropy loss, its gradient, a bias update); the loss is fetched every second step. The batch
// of step 3 holds one record whose label field was never filled in, and the gradient kernel trusts the label:
// it writes far outside its buffer. CUDA says nothing at that launch. The error shows up at the cudaMemcpy of
// step 4, in code that has nothing to do with it -- run it under `culprit run` to see the real culprit.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include <cuda_runtime.h>

static const int kBatch = 512;     // samples per step
static const int kFeatures = 32;   // input features per sample
static const int kClasses = 100;   // output classes
static const int kSteps = 6;       // training steps
static const int kBadStep = 3;     // the step whose batch holds the broken record
static const int kBadRecord = 301; // the broken record in that batch
static const float kLearningRate = 0.5f;

// Stops the program with the message a careful CUDA program prints.
static void check(cudaError_t err, const char *what, int line) {
  if (err == cudaSuccess)
    return;
  fprintf(stderr, "demo: CUDA error at demo.cu:%d in %s: %s\n", line, what, cudaGetErrorString(err));
  exit(1);
}
#define CHECK(call) check((call), #call, __LINE__)

// logits[i][c] = bias[c] + sum_f x[i][f] * w[f][c]
__global__ void logits_forward(const float *x, const float *w, const float *bias, float *logits) {
  int i = blockIdx.x, c = threadIdx.x;
  float acc;
  if (c >= kClasses)
    return;
  acc = bias[c];
  for (int f = 0; f < kFeatures; f++)
    acc += x[i * kFeatures + f] * w[f * kClasses + c];
  logits[i * kClasses + c] = acc;
}

// Cross-entropy of each sample. The label is only compared with class numbers here, so a bad label just
// leaves the sample without a target and is not noticed.
__global__ void xent_forward(const float *logits, const int64_t *labels, float *loss) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  float mx = -INFINITY, sum = 0.0f, target = 0.0f;
  if (i >= kBatch)
    return;
  for (int c = 0; c < kClasses; c++)
    mx = fmaxf(mx, logits[i * kClasses + c]);
  for (int c = 0; c < kClasses; c++) {
    sum += expf(logits[i * kClasses + c] - mx);
    if (c == labels[i])
      target = logits[i * kClasses + c];
  }
  loss[i] = logf(sum) + mx - target;
}

// d loss / d logits = softmax - one_hot(label). The one-hot part indexes the row by the label, unchecked.
__global__ void xent_backward(const float *logits, const int64_t *labels, float *grad) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  float mx = -INFINITY, sum = 0.0f;
  if (i >= kBatch)
    return;
  for (int c = 0; c < kClasses; c++)
    mx = fmaxf(mx, logits[i * kClasses + c]);
  for (int c = 0; c < kClasses; c++)
    sum += expf(logits[i * kClasses + c] - mx);
  for (int c = 0; c < kClasses; c++)
    grad[i * kClasses + c] = expf(logits[i * kClasses + c] - mx) / sum / kBatch;
  grad[i * kClasses + labels[i]] -= 1.0f / kBatch;
}

// bias[c] -= lr * sum_i grad[i][c], and the batch's mean loss into *mean_loss.
__global__ void bias_update(const float *grad, const float *loss, float *bias, float *mean_loss) {
  int c = threadIdx.x;
  float g = 0.0f;
  if (c < kClasses) {
    for (int i = 0; i < kBatch; i++)
      g += grad[i * kClasses + c];
    bias[c] -= kLearningRate * g;
  }
  if (c == 0) {
    float l = 0.0f;
    for (int i = 0; i < kBatch; i++)
      l += loss[i];
    *mean_loss = l / kBatch;
  }
}

// The data loader: features and labels of one batch. One record of step kBadStep has an unfilled label field.
static void load_batch(int step, std::vector<float> &x, std::vector<int64_t> &labels) {
  for (int i = 0; i < kBatch; i++) {
    labels[i] = (i * 37 + step * 11) % kClasses;
    for (int f = 0; f < kFeatures; f++)
      x[i * kFeatures + f] = (float)(((i + 3 * f + step) % 17) - 8) / 8.0f + (f == labels[i] % kFeatures);
  }
  if (step == kBadStep)
    labels[kBadRecord] = (int64_t)1 << 40; // garbage from an unfilled field
}

struct Model {
  float *x, *w, *bias, *logits, *loss, *grad, *mean_loss; // device buffers
  int64_t *labels;                                         // device labels of the current batch
};

// One training step: upload the batch, then four kernel launches on the default stream.
static void train_step(Model &m, int step, std::vector<float> &x, std::vector<int64_t> &labels) {
  load_batch(step, x, labels);
  CHECK(cudaMemcpy(m.x, x.data(), sizeof(float) * x.size(), cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(m.labels, labels.data(), sizeof(int64_t) * labels.size(), cudaMemcpyHostToDevice));
  logits_forward<<<kBatch, 128>>>(m.x, m.w, m.bias, m.logits);
  xent_forward<<<(kBatch + 127) / 128, 128>>>(m.logits, m.labels, m.loss);
  xent_backward<<<(kBatch + 127) / 128, 128>>>(m.logits, m.labels, m.grad);
  bias_update<<<1, 128>>>(m.grad, m.loss, m.bias, m.mean_loss);
}

int main(void) {
  std::vector<float> x(kBatch * kFeatures), w(kFeatures * kClasses);
  std::vector<int64_t> labels(kBatch);
  Model m;
  int count = 0;

  if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
    fprintf(stderr, "demo: no CUDA device found\n");
    return 77;
  }
  for (size_t k = 0; k < w.size(); k++)
    w[k] = 0.01f * (float)((k * 7) % 13) - 0.06f;
  CHECK(cudaMalloc(&m.x, sizeof(float) * kBatch * kFeatures));
  CHECK(cudaMalloc(&m.w, sizeof(float) * kFeatures * kClasses));
  CHECK(cudaMalloc(&m.bias, sizeof(float) * kClasses));
  CHECK(cudaMalloc(&m.logits, sizeof(float) * kBatch * kClasses));
  CHECK(cudaMalloc(&m.loss, sizeof(float) * kBatch));
  CHECK(cudaMalloc(&m.grad, sizeof(float) * kBatch * kClasses));
  CHECK(cudaMalloc(&m.mean_loss, sizeof(float)));
  CHECK(cudaMalloc(&m.labels, sizeof(int64_t) * kBatch));
  CHECK(cudaMemcpy(m.w, w.data(), sizeof(float) * w.size(), cudaMemcpyHostToDevice));
  CHECK(cudaMemset(m.bias, 0, sizeof(float) * kClasses));

  printf("training %d steps, batch %d, %d classes\n", kSteps, kBatch, kClasses);
  for (int step = 1; step <= kSteps; step++) {
    train_step(m, step, x, labels);
    if (step % 2 == 0) {
      float mean_loss = 0.0f;
      CHECK(cudaMemcpy(&mean_loss, m.mean_loss, sizeof(float), cudaMemcpyDeviceToHost));
      printf("step %d: loss %.4f\n", step, mean_loss);
    } else {
      printf("step %d: launched\n", step);
    }
    fflush(stdout);
  }
  CHECK(cudaDeviceSynchronize());
  printf("training done\n");
  return 0;
}
