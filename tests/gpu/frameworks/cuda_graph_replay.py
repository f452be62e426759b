"""A fault inside a replayed CUDA graph (torch.cuda.CUDAGraph).

The captured step gathers rows by an index held in a static tensor. The first replay uses good ids; then the
next batch's ids, one of them past the end, are copied into the static tensor and the graph is replayed again:
the captured indexSelect kernel asserts (710) inside the graph. culprit names the graph launch (or, with node
support, the node's kernel); the line is the second replay() call. The error surfaces at the synchronize.
"""
import sys

import torch

ROWS, DIM, IDS = 1024, 64, 32  # table rows, row width, ids per step


def step(table, ids, weight):
    rows = table.index_select(0, ids)
    return torch.tanh(rows @ weight).sum(dim=1)


def main():
    if not torch.cuda.is_available():
        print("skipped: no CUDA device", file=sys.stderr)
        return 77
    torch.manual_seed(0)
    dev = torch.device("cuda")
    table = torch.randn(ROWS, DIM, device=dev)
    weight = torch.randn(DIM, DIM, device=dev)
    static_ids = torch.zeros(IDS, dtype=torch.long, device=dev)

    side = torch.cuda.Stream()  # warm up on a side stream, as torch.cuda.graph requires
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(2):
            step(table, static_ids, weight)
    torch.cuda.current_stream().wait_stream(side)

    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        static_out = step(table, static_ids, weight)

    g = torch.Generator().manual_seed(6)
    static_ids.copy_(torch.randint(0, ROWS, (IDS,), generator=g))
    graph.replay()
    print("replay 1: %.4f" % static_out.sum().item())

    bad = torch.randint(0, ROWS, (IDS,), generator=g)
    bad[20] = ROWS  # the loader's last batch was padded with ROWS
    static_ids.copy_(bad)
    graph.replay()  # CULPRIT-LAUNCH
    torch.cuda.synchronize()  # CULPRIT-SURFACE
    print("replay 2: %.4f" % static_out.sum().item())
    return 0


if __name__ == "__main__":
    sys.exit(main())
