// Misaligned address (716). A packed-record reader computes a field offset in bytes and then loads it as a
// 4-byte int; one record header gives an odd offset. The error surfaces at cudaDeviceSynchronize.
#include "gpu_test.cuh"

static const int kRecords = 1024; // records in the buffer
static const int kStride = 16;    // bytes per record

__global__ void write_records(unsigned char *buf, int records) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < records)
    for (int b = 0; b < kStride; b++)
      buf[i * kStride + b] = (unsigned char)(i + b);
}

__global__ void read_field(const unsigned char *buf, int *out, int records, int field_offset) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < records)
    out[i] = *(const int *)(buf + (size_t)i * kStride + field_offset); // CULPRIT-FAULT
}

__global__ void sum_field(const int *vals, long long *sum, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n)
    atomicAdd((unsigned long long *)sum, (unsigned long long)(long long)vals[i]);
}

int main(int argc, char **argv) {
  unsigned char *buf;
  int *vals;
  long long *sum, host_sum = 0;
  int bad_offset = argc > 1 ? atoi(argv[1]) : 6; // the header's field offset: 6 is not a multiple of 4

  gt_start("gpu_misaligned");
  GT_CHECK(cudaMalloc(&buf, (size_t)kRecords * kStride));
  GT_CHECK(cudaMalloc(&vals, sizeof(int) * kRecords));
  GT_CHECK(cudaMalloc(&sum, sizeof(long long)));
  GT_CHECK(cudaMemset(sum, 0, sizeof(long long)));

  write_records<<<kRecords / 128, 128>>>(buf, kRecords);
  read_field<<<kRecords / 128, 128>>>(buf, vals, kRecords, 4);
  sum_field<<<kRecords / 128, 128>>>(vals, sum, kRecords);
  GT_CHECK(cudaMemcpy(&host_sum, sum, sizeof host_sum, cudaMemcpyDeviceToHost));
  printf("aligned field sum %lld\n", host_sum);

  read_field<<<kRecords / 128, 128>>>(buf, vals, kRecords, bad_offset); // CULPRIT-LAUNCH
  sum_field<<<kRecords / 128, 128>>>(vals, sum, kRecords);
  GT_CHECK(cudaDeviceSynchronize());
  printf("unaligned field read done\n");
  return 0;
}
