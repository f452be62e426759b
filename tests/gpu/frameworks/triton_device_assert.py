"""A Triton kernel's own tl.device_assert (built with debug=True) fires among kernels whose grids differ (710).

A mixture-of-experts step gathers token rows by their expert slot with one @triton.jit kernel, twice: over the
16 shared-expert rows (grid 16) and over the 256 routed tokens (grid 256), with a scaling kernel (grid 64) in
between and no synchronize. One routed slot is past the table, so program 200 of the second gather asserts.
Triton prints `FILE.py:LINE: unknown: block: [200,0,0], thread: [...] Assertion `slot in range` failed.`: the
line is in gather_rows of this file, which both gathers run, and block 200 fits the grid of 256 alone. The
error surfaces at the synchronize.
"""
import sys

import torch
import triton
import triton.language as tl

ROWS, WIDTH = 512, 64      # expert table rows, row width (a power of two: no column mask)
SHARED, ROUTED = 16, 256   # rows gathered for the shared experts, tokens routed


@triton.jit(debug=True)
def gather_rows(table_ptr, slot_ptr, out_ptr, n_rows, WIDTH: tl.constexpr):
    row = tl.program_id(0)
    slot = tl.load(slot_ptr + row)
    tl.device_assert((slot >= 0) & (slot < n_rows), "slot in range")
    cols = tl.arange(0, WIDTH)
    tl.store(out_ptr + row * WIDTH + cols, tl.load(table_ptr + slot * WIDTH + cols))


@triton.jit
def scale_rows(x_ptr, n, factor, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=mask) * factor, mask=mask)


def main():
    if not torch.cuda.is_available():
        print("skipped: no CUDA device", file=sys.stderr)
        return 77
    torch.manual_seed(0)
    dev = torch.device("cuda")
    table = torch.randn(ROWS, WIDTH, device=dev)
    shared_slots = torch.randint(0, ROWS, (SHARED,), device=dev, dtype=torch.int32)
    routed_slots = torch.randint(0, ROWS, (ROUTED,), device=dev, dtype=torch.int32)
    shared = torch.empty(SHARED, WIDTH, device=dev)
    routed = torch.empty(ROUTED, WIDTH, device=dev)
    scale_block = 256
    scale_grid = (triton.cdiv(shared.numel(), scale_block),)  # 64 programs

    # one good step compiles both kernels
    gather_rows[(SHARED,)](table, shared_slots, shared, ROWS, WIDTH=WIDTH)
    scale_rows[scale_grid](shared, shared.numel(), 0.5, BLOCK=scale_block)
    gather_rows[(ROUTED,)](table, routed_slots, routed, ROWS, WIDTH=WIDTH)
    torch.cuda.synchronize()
    print("warm %.4f" % (shared.sum() + routed.sum()).item())

    routed_slots[200] = ROWS + 3  # the router's slot for token 200 was never clamped to the table
    gather_rows[(SHARED,)](table, shared_slots, shared, ROWS, WIDTH=WIDTH)
    scale_rows[scale_grid](shared, shared.numel(), 0.5, BLOCK=scale_block)
    gather_rows[(ROUTED,)](table, routed_slots, routed, ROWS, WIDTH=WIDTH)  # CULPRIT-LAUNCH
    torch.cuda.synchronize()  # CULPRIT-SURFACE
    print("gathered %.4f" % (shared.sum() + routed.sum()).item())
    return 0


if __name__ == "__main__":
    sys.exit(main())
