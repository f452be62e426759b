"""A torch.compile'd function whose Inductor kernel asserts (710): a token id one past the embedding table.

Inductor compiles `table[ids]` with the ops around it into Triton kernels (triton_...), and because the ids are
data it checks each indirect index with a tl.device_assert ("index out of bounds: 0 <= tmpN < 1000"), which
Inductor emits by default. The device prints the kernel's file in Inductor's cache
(`/tmp/torchinductor_USER/xx/c....py:LINE: unknown: ...`): its def triton_... holds the line. The eager ops
before the call are candidates too. The error surfaces at the synchronize.
"""
import sys

import torch

ROWS, DIM, BATCH, SEQ = 1000, 32, 8, 64  # vocabulary, width, sequences, tokens per sequence

if not hasattr(torch, "compile"):
    print("skipped: this torch (%s) has no torch.compile" % torch.__version__, file=sys.stderr)
    sys.exit(77)


@torch.compile
def embed_and_pool(table, ids, pos, w):
    x = table[ids] + pos             # token rows plus positions: the indirect load
    return torch.tanh(x @ w).mean(1)  # the matmul is cuBLAS's, the rest Inductor's


def main():
    if not torch.cuda.is_available():
        print("skipped: no CUDA device", file=sys.stderr)
        return 77
    torch.manual_seed(0)
    dev = torch.device("cuda")
    table = torch.randn(ROWS, DIM, device=dev)
    pos = torch.randn(SEQ, DIM, device=dev)
    w = torch.randn(DIM, DIM, device=dev)
    ids = torch.randint(0, ROWS, (BATCH, SEQ), device=dev)
    print("warm %.4f" % embed_and_pool(table, ids, pos, w).sum().item())

    ids = torch.randint(0, ROWS, (BATCH, SEQ), device=dev)
    ids[3, 17] = ROWS  # the tokenizer's end-of-text id was never added to the table
    pooled = embed_and_pool(table, ids, pos, w)  # CULPRIT-LAUNCH
    torch.cuda.synchronize()  # CULPRIT-SURFACE
    print("pooled %.4f" % pooled.sum().item())
    return 0


if __name__ == "__main__":
    sys.exit(main())
