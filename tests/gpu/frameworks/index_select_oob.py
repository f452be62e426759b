"""Negative sampling that draws rows of an item table by id; one sampled id is one past the end.

Tensor.index_select runs an indexSelect kernel whose device assert fires (710). The scoring ops after it are
launched before the host waits, so the error surfaces at one of them or at .item().
"""
import sys

import torch

ITEMS, DIM, SAMPLES = 5000, 64, 512  # table rows, row width, negatives per step


def main():
    if not torch.cuda.is_available():
        print("skipped: no CUDA device", file=sys.stderr)
        return 77
    torch.manual_seed(0)
    dev = torch.device("cuda")
    table = torch.randn(ITEMS, DIM, device=dev)
    query = torch.randn(DIM, device=dev)
    g = torch.Generator().manual_seed(3)
    negatives = torch.randint(0, ITEMS, (SAMPLES,), generator=g)
    negatives[300] = ITEMS  # the sampler's upper bound is inclusive
    negatives = negatives.to(dev)
    rows = table.index_select(0, negatives)  # CULPRIT-LAUNCH
    score = (rows * query).sum(dim=1)
    print("score %.4f" % score.mean().item())
    return 0


if __name__ == "__main__":
    sys.exit(main())
