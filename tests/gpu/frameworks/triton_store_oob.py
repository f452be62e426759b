"""A Triton kernel with an unmasked store through a corrupt routing slot (illegal address, 700).

Token dispatch as in a mixture-of-experts layer: each program copies one token row to the slot the router chose.
The store trusts the slot, and one slot is garbage (1 << 34 rows), so that program writes terabytes past the
buffer. The error surfaces at the synchronize.
"""
import sys

import torch
import triton
import triton.language as tl

TOKENS, WIDTH = 64, 64  # token rows, row width (a power of two: the store needs no column mask)


@triton.jit
def dispatch_tokens_kernel(x_ptr, out_ptr, slot_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    slot = tl.load(slot_ptr + row)
    vals = tl.load(x_ptr + row * n_cols + cols)
    tl.store(out_ptr + slot * n_cols + cols, vals)


def main():
    if not torch.cuda.is_available():
        print("skipped: no CUDA device", file=sys.stderr)
        return 77
    torch.manual_seed(0)
    dev = torch.device("cuda")
    x = torch.randn(TOKENS, WIDTH, device=dev)
    out = torch.zeros(TOKENS, WIDTH, device=dev)
    slots = torch.randperm(TOKENS, generator=torch.Generator().manual_seed(5))
    slots[13] = 1 << 34  # the router's slot table was read before it was written
    slots = slots.to(dev)
    grid = (TOKENS,)
    dispatch_tokens_kernel[grid](x, out, slots, WIDTH, BLOCK=WIDTH)  # CULPRIT-LAUNCH
    torch.cuda.synchronize()  # CULPRIT-SURFACE
    print("dispatched %.4f" % out.sum().item())
    return 0


if __name__ == "__main__":
    sys.exit(main())
