"""A torch.compile'd lookup-and-score step whose token ids include one past the table. Inductor compiles the
embedding into a Triton kernel with a bounds assert, which fires (710) inside the compiled graph.
"""
import sys

import torch

ROWS, DIM = 1000, 32

if not hasattr(torch, "compile"):
    print("skipped: this torch (%s) has no torch.compile" % torch.__version__, file=sys.stderr)
    sys.exit(77)


@torch.compile
def score(table, ids, w):
    return (table[ids] * w).sum(-1).relu()


def main():
    if not torch.cuda.is_available():
        print("skipped: no CUDA device", file=sys.stderr)
        return 77
    torch.manual_seed(0)
    dev = torch.device("cuda")
    table = torch.randn(ROWS, DIM, device=dev)
    w = torch.randn(DIM, device=dev)
    ids = torch.randint(0, ROWS, (64, 16), device=dev)
    print("warm %.3f" % score(table, ids, w).sum().item())
    ids[5, 3] = ROWS + 7
    out = score(table, ids, w)  # CULPRIT-LAUNCH
    torch.cuda.synchronize()  # CULPRIT-SURFACE
    print("scored %.3f" % out.sum().item())
    return 0


if __name__ == "__main__":
    sys.exit(main())
