"""A healthy training loop (embedding, MLP, cross_entropy, AdamW, a torch.compile'd scoring function), printed
to 6 decimals: its output must not change under `culprit run --diagnose`, and the compiled function must still
be compiled (not run eagerly) while the diagnosis is on.
"""
import sys

import torch
import torch.nn.functional as F

VOCAB, DIM, CLASSES = 500, 64, 10

if not hasattr(torch, "compile"):
    print("skipped: this torch (%s) has no torch.compile" % torch.__version__, file=sys.stderr)
    sys.exit(77)


@torch.compile
def head(h, w):
    return torch.tanh(h @ w)


def main():
    if not torch.cuda.is_available():
        print("skipped: no CUDA device", file=sys.stderr)
        return 77
    torch.manual_seed(0)
    torch.use_deterministic_algorithms(True)
    dev = torch.device("cuda")
    emb = torch.nn.Embedding(VOCAB, DIM).to(dev)
    mlp = torch.nn.Sequential(torch.nn.Linear(DIM, DIM), torch.nn.ReLU(), torch.nn.Linear(DIM, CLASSES)).to(dev)
    w = torch.randn(DIM, DIM, device=dev) * 0.1
    opt = torch.optim.AdamW(list(emb.parameters()) + list(mlp.parameters()), lr=1e-3)
    g = torch.Generator(device="cpu").manual_seed(1)
    for step in range(5):
        ids = torch.randint(0, VOCAB, (32, 8), generator=g).to(dev)
        y = torch.randint(0, CLASSES, (32,), generator=g).to(dev)
        h = emb(ids).mean(1)
        loss = F.cross_entropy(mlp(head(h, w)), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        print("step %d loss %.6f" % (step, loss.item()))
    frames = torch._dynamo.utils.counters["stats"]["unique_graphs"]
    print("compiled graphs %d" % frames, file=sys.stderr)
    print("compiled", "yes" if frames > 0 else "no")
    return 0


if __name__ == "__main__":
    sys.exit(main())
