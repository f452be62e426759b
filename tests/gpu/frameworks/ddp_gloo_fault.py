"""A DDP job of several ranks on one GPU where one rank's batch holds a label one past the classes.

Run as `torchrun --standalone --nproc-per-node 3 ddp_gloo_fault.py`. Every rank trains the same small classifier
on cuda:0 with the gloo backend (NCCL refuses two ranks on one GPU). At step 3 rank 1's (or DDP_BAD_RANK's) labels
hold CLASSES, so its cross_entropy's nll_loss kernel asserts (710). It learns it when DDP copies its gradients
for the all_reduce, or at the next launch; the other ranks wait in that all_reduce for it until it is gone
(gloo sees the closed connection) or torchrun stops them. gloo's own timeout is 30 s, so the job always ends.
"""
import datetime
import os
import sys

import torch
import torch.distributed as dist
import torch.nn.functional as F

CLASSES, FEATURES, HIDDEN, BATCH = 10, 32, 64, 128  # classifier shape and samples per rank and step
STEPS, BAD_STEP, BAD_RANK = 5, 3, int(os.environ.get("DDP_BAD_RANK", "1"))  # steps, the bad label's step, rank


def main():
    if "RANK" not in os.environ:
        print("usage: torchrun --standalone --nproc-per-node 3 ddp_gloo_fault.py", file=sys.stderr)
        return 2
    if not torch.cuda.is_available():
        print("skipped: no CUDA device", file=sys.stderr)
        return 77
    if not dist.is_gloo_available():
        print("skipped: torch.distributed has no gloo backend", file=sys.stderr)
        return 77
    rank = int(os.environ["RANK"])
    dev = torch.device("cuda", 0)  # every rank on the one GPU
    torch.cuda.set_device(dev)
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=30))
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(FEATURES, HIDDEN), torch.nn.ReLU(),
                                torch.nn.Linear(HIDDEN, CLASSES)).to(dev)
    ddp = torch.nn.parallel.DistributedDataParallel(model, device_ids=[0])
    opt = torch.optim.SGD(ddp.parameters(), lr=0.1)
    g = torch.Generator().manual_seed(100 + rank)  # each rank its own shard

    for step in range(1, STEPS + 1):
        x = torch.randn(BATCH, FEATURES, generator=g)
        y = torch.randint(0, CLASSES, (BATCH,), generator=g)
        if rank == BAD_RANK and step == BAD_STEP:
            y[17] = CLASSES  # this shard was labelled with one class more than the model has
        x, y = x.to(dev), y.to(dev)
        loss = F.cross_entropy(ddp(x), y)  # CULPRIT-LAUNCH
        opt.zero_grad()
        loss.backward()  # DDP all_reduces the gradients here
        opt.step()
        print("rank %d step %d loss %.4f" % (rank, step, loss.item()), flush=True)
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
