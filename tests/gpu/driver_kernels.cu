// Device code for the driver-API test, compiled at build time into a fatbin (nvcc -fatbin) that driver_api.cu
// embeds and loads with cuModuleLoadData. extern "C" keeps the names plain for cuModuleGetFunction.

extern "C" __global__ void drv_fill(float *x, int n, float v) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n)
    x[i] = v * (float)(i % 13);
}

extern "C" __global__ void drv_axpy(float *y, const float *x, int n, float a) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n)
    y[i] += a * x[i];
}

// Scatters x into y at y[base + i]; trusts base.
extern "C" __global__ void drv_scatter(float *y, const float *x, int n, long long base) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n)
    y[base + i] = x[i]; // CULPRIT-FAULT
}
