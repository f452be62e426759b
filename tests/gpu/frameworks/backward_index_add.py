"""A fault raised in backward, by a kernel that the autograd engine's device thread launches.

The forward selects rows with a valid index buffer. Before backward runs, a prefetching sampler refills that
buffer in place for the next step, through .data so autograd's version check does not see it, and the new batch
holds an id past the end. index_select's backward is index_add_ with the saved (now refilled) index; its
indexFunc kernel asserts (710). That launch comes from the autograd engine's CUDA thread, which runs no Python:
the line to name is the loss.backward() call on the main thread.
"""
import sys

import torch

ROWS, DIM, BATCH = 2000, 64, 256  # table rows, row width, ids per step


class PrefetchingSampler:
    """Draws the next step's ids into the same device buffer to save an allocation per step."""

    def __init__(self, device):
        self.g = torch.Generator().manual_seed(4)
        self.ids = torch.randint(0, ROWS, (BATCH,), generator=self.g).to(device)

    def refill(self, corrupt=False):
        nxt = torch.randint(0, ROWS, (BATCH,), generator=self.g)
        if corrupt:
            nxt[77] = ROWS  # a corrupt record in the next shard
        self.ids.data.copy_(nxt)


def main():
    if not torch.cuda.is_available():
        print("skipped: no CUDA device", file=sys.stderr)
        return 77
    torch.manual_seed(0)
    dev = torch.device("cuda")
    table = torch.randn(ROWS, DIM, device=dev, requires_grad=True)
    weight = torch.randn(DIM, device=dev)
    opt = torch.optim.SGD([table], lr=0.1)
    sampler = PrefetchingSampler(dev)

    for step in range(3):
        rows = table.index_select(0, sampler.ids)
        loss = (rows * weight).sum(dim=1).pow(2).mean()
        sampler.refill(corrupt=(step == 1))  # prefetch overlaps the backward
        opt.zero_grad()
        loss.backward()  # CULPRIT-LAUNCH
        opt.step()
        print("step %d loss %.4f" % (step, loss.item()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
