"""A CuPy RawKernel that writes through a corrupt destination row (illegal address, 700).

The kernel scatters rows to a permutation; one permutation entry is garbage (1 << 34), so its block writes far
outside the destination. The error surfaces at cupy.cuda.runtime.deviceSynchronize().
"""
import sys

import cupy
import numpy

ROWS, COLS = 64, 128  # rows scattered, row width (one block per row, one thread per column)

SOURCE = r"""
extern "C" __global__ void scatter_rows(const float *src, float *dst, const long long *dst_row, int n_cols) {
    int r = blockIdx.x;
    int c = threadIdx.x;
    if (c < n_cols)
        dst[dst_row[r] * n_cols + c] = src[(long long)r * n_cols + c];
}
"""


def main():
    try:
        devices = cupy.cuda.runtime.getDeviceCount()
    except cupy.cuda.runtime.CUDARuntimeError:
        devices = 0
    if devices == 0:
        print("skipped: no CUDA device", file=sys.stderr)
        return 77
    scatter_rows = cupy.RawKernel(SOURCE, "scatter_rows")
    src = cupy.arange(ROWS * COLS, dtype=cupy.float32).reshape(ROWS, COLS)
    dst = cupy.zeros((ROWS, COLS), dtype=cupy.float32)
    perm = numpy.random.default_rng(0).permutation(ROWS).astype(numpy.int64)
    perm[9] = 1 << 34  # uninitialized entry of a host-side table
    dst_row = cupy.asarray(perm)
    scatter_rows((ROWS,), (COLS,), (src, dst, dst_row, numpy.int32(COLS)))  # CULPRIT-LAUNCH
    cupy.cuda.runtime.deviceSynchronize()  # CULPRIT-SURFACE
    print("scattered %.1f" % float(dst.sum()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
