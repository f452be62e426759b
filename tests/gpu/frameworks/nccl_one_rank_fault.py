"""A one-rank NCCL job whose compute between two collectives reads past the end of a table.

Run as `torchrun --standalone --nproc-per-node 1 nccl_one_rank_fault.py`. After a first all_reduce, index_select
draws rows of an embedding table by id and one id is one past the end: the indexSelect (or vectorized gather)
kernel asserts (710). The second all_reduce and .item() come after it; the error surfaces at one of them, at a
launch, or in the watchdog thread of torch's NCCL process group (which then aborts the process).
"""
import os
import sys

import torch
import torch.distributed as dist

ROWS, DIM, IDS = 4096, 64, 256  # table rows, row width, ids drawn


def main():
    if "RANK" not in os.environ:
        print("usage: torchrun --standalone --nproc-per-node 1 nccl_one_rank_fault.py", file=sys.stderr)
        return 2
    if not torch.cuda.is_available():
        print("skipped: no CUDA device", file=sys.stderr)
        return 77
    if not dist.is_nccl_available():
        print("skipped: torch.distributed has no NCCL backend", file=sys.stderr)
        return 77
    rank = int(os.environ["RANK"])
    dev = torch.device("cuda", int(os.environ.get("LOCAL_RANK", "0")))
    torch.cuda.set_device(dev)
    dist.init_process_group("nccl")
    torch.manual_seed(0)
    table = torch.randn(ROWS, DIM, device=dev)
    scale = torch.ones(DIM, device=dev)
    dist.all_reduce(scale)  # the first collective: NCCL is set up and has run
    print("rank %d: scale %.1f after the first all_reduce" % (rank, scale[0].item()), flush=True)

    g = torch.Generator().manual_seed(2)
    ids = torch.randint(0, ROWS, (IDS,), generator=g)
    ids[200] = ROWS  # an id the table does not have
    rows = table.index_select(0, ids.to(dev))  # CULPRIT-LAUNCH
    score = (rows * scale).sum(dim=1)
    dist.all_reduce(score)
    print("rank %d: score %.4f" % (rank, score.mean().item()))
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
