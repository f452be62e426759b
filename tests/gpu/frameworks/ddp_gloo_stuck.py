"""A job of two ranks on one GPU where one rank is stuck in a kernel of its own while the other waits for it in
the all_reduce.

Run as `torchrun --standalone --nproc-per-node 2 ddp_gloo_stuck.py`. Both ranks (gloo, on cuda:0) run a few steps
of a small computation; then rank 0 (or STUCK_RANK) launches a kernel that spins for minutes
(torch.cuda._sleep: at::cuda::spin_kernel) with a few kernels queued behind it, and both all_reduce a CUDA
tensor: gloo copies it to the host, so rank 0's host waits for its spinning kernel and rank 1 waits in gloo for
rank 0. Each rank prints "stuck:" once it is about to wait; the suite then stops the job with SIGTERM. gloo's own
timeout (60 s) ends the job if nobody stops it.
"""
import datetime
import os
import sys

import torch
import torch.distributed as dist

STEPS, STUCK_RANK, SPIN_CYCLES = 3, int(os.environ.get("STUCK_RANK", "0")), 1 << 42  # the spin: many minutes


def main():
    if "RANK" not in os.environ:
        print("usage: torchrun --standalone --nproc-per-node 2 ddp_gloo_stuck.py", file=sys.stderr)
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
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=60))
    x = torch.randn(256, 256, device=dev)
    for step in range(1, STEPS + 1):
        x = torch.tanh(x @ x.T / 256)
        dist.all_reduce(x)
        print("rank %d step %d sum %.4f" % (rank, step, x.sum().item()), flush=True)
    dist.barrier()
    if rank == STUCK_RANK:
        torch.cuda._sleep(SPIN_CYCLES)  # CULPRIT-LAUNCH
        x = torch.tanh(x) * 2  # queued behind the spinning kernel
    print("stuck: rank %d waits in the all_reduce" % rank, flush=True)
    dist.all_reduce(x)
    print("rank %d: the all_reduce returned (nobody stopped the job)" % rank, flush=True)
    dist.destroy_process_group()
    return 3


if __name__ == "__main__":
    sys.exit(main())
