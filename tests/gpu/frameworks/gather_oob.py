"""Re-ranking step that gathers candidate scores by position; one position equals the row length.

torch.gather runs the scatter/gather elementwise kernel, whose device assert ("index out of bounds") fires (710).
Nothing else is launched before the synchronize, where the error surfaces.
"""
import sys

import torch

QUERIES, CANDIDATES, TOPK = 32, 50, 5  # rows, scores per row, positions picked per row


def main():
    if not torch.cuda.is_available():
        print("skipped: no CUDA device", file=sys.stderr)
        return 77
    torch.manual_seed(0)
    dev = torch.device("cuda")
    scores = torch.randn(QUERIES, CANDIDATES, device=dev).softmax(dim=1)
    g = torch.Generator().manual_seed(2)
    positions = torch.randint(0, CANDIDATES, (QUERIES, TOPK), generator=g)
    positions[7, 2] = CANDIDATES  # a 1-based position from the retrieval service
    positions = positions.to(dev)
    picked = torch.gather(scores, 1, positions)  # CULPRIT-LAUNCH
    torch.cuda.synchronize()  # CULPRIT-SURFACE
    print("picked %.4f" % picked.sum().item())
    return 0


if __name__ == "__main__":
    sys.exit(main())
