"""A fault that surfaces at torch.cuda.empty_cache().

An evaluation phase frees its large workspace (the caching allocator keeps the block), looks up rows with an id
past the end (indexSelect device assert, 710) and then returns cached memory to the driver before the next phase.
The cudaFree that empty_cache() issues for the freed block is the first call to see the error.
"""
import sys

import torch

ROWS, DIM = 4096, 128  # lookup table size
WORKSPACE = 64 << 20  # bytes: large enough for a segment of its own


def evaluate(dev):
    workspace = torch.empty(WORKSPACE, dtype=torch.uint8, device=dev)
    workspace.zero_()
    checksum = workspace[:1024].sum()
    del workspace  # cached by the allocator, not yet returned to the driver
    return checksum


def main():
    if not torch.cuda.is_available():
        print("skipped: no CUDA device", file=sys.stderr)
        return 77
    torch.manual_seed(0)
    dev = torch.device("cuda")
    table = torch.randn(ROWS, DIM, device=dev)
    ids = torch.arange(0, ROWS, 97)
    ids[-1] = ROWS  # off by one at the end of the id range
    ids = ids.to(dev)
    print("eval checksum %d" % evaluate(dev).item())
    rows = table.index_select(0, ids)  # CULPRIT-LAUNCH
    torch.cuda.empty_cache()  # CULPRIT-SURFACE
    print("rows %.4f" % rows.sum().item())
    return 0


if __name__ == "__main__":
    sys.exit(main())
