"""An Inductor kernel's device assert inside a CUDA graph replay: torch.compile(mode="reduce-overhead") (710).

The compiled step gathers rows by token id and reduces them; reduce-overhead mode records its kernels into a
CUDA graph (CUDA graph trees) on the second call and replays it from the third. The fourth call's ids hold one
past the table, so the graph's Inductor kernel asserts (`/tmp/torchinductor_USER/xx/c....py:LINE: unknown:
...`) inside the replay. The culprit is the graph launch at the call, and the assert names the captured node
that runs that kernel. A torch that does not use CUDA graphs here skips the case.
"""
import sys

import torch

ROWS, DIM, BATCH = 1000, 32, 256  # vocabulary, width, ids per call

if not hasattr(torch, "compile"):
    print("skipped: this torch (%s) has no torch.compile" % torch.__version__, file=sys.stderr)
    sys.exit(77)


@torch.compile(mode="reduce-overhead")
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
    total = 0.0
    for _ in range(3):  # warm-up, recording, a first replay
        ids = torch.randint(0, ROWS, (BATCH,), device=dev)
        total += score(table, ids, w).sum().item()
    from torch._dynamo.utils import counters
    skips = dict(counters["inductor"]).get("cudagraph_skips", 0)
    if skips:
        print("skipped: torch did not use CUDA graphs here (cudagraph_skips %d)" % skips, file=sys.stderr)
        return 77
    print("warm %.4f" % total)

    ids = torch.randint(0, ROWS, (BATCH,), device=dev)
    ids[77] = ROWS + 5  # a padded batch: the pad id is past the table
    out = score(table, ids, w)  # CULPRIT-LAUNCH
    torch.cuda.synchronize()  # CULPRIT-SURFACE
    print("scored %.4f" % out.sum().item())
    return 0


if __name__ == "__main__":
    sys.exit(main())
