"""A tagger trained for 120 steps; the batch of step 50 holds a token id equal to the vocabulary size.

The loop never waits for the GPU (no .item() until the end), so by step 50 its stream is old and dense: record
mode marks only every few launches there. nn.Embedding's forward runs an index kernel whose device assert fires
(710); PyTorch checks every launch and the loop launches on long after it (more than the driver's queue holds),
so the error surfaces at a later launch (forward, the autograd thread's backward, or the optimizer), not at the
final .item(). The window of unfinished launches then holds several; only the assert's text, naming the index
kernel, makes the run that faulted exact.
"""
import sys

import torch
import torch.nn.functional as F

VOCAB, DIM, CLASSES = 1000, 64, 8  # vocabulary, embedding width, output classes
BATCH, LENGTH = 32, 48  # sequences per batch, tokens per sequence
STEPS, BAD_STEP = 120, 50  # training steps (after the bad one, more launches than the driver's queue holds); the
# step whose batch holds the bad id


class Tagger(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = torch.nn.Embedding(VOCAB, DIM)
        self.mix = torch.nn.Linear(DIM, DIM)
        self.proj = torch.nn.Linear(DIM, CLASSES)

    def forward(self, ids):
        h = self.embed(ids)  # CULPRIT-LAUNCH
        h = torch.relu(self.mix(h)) + h
        return self.proj(h).mean(dim=1)


def main():
    if not torch.cuda.is_available():
        print("skipped: no CUDA device", file=sys.stderr)
        return 77
    torch.manual_seed(0)
    dev = torch.device("cuda")
    g = torch.Generator().manual_seed(5)
    batches = [torch.randint(0, VOCAB, (BATCH, LENGTH), generator=g) for _ in range(STEPS)]
    batches[BAD_STEP][7, 30] = VOCAB  # a token the tokenizer gained after the model was built
    targets = torch.randint(0, CLASSES, (STEPS, BATCH), generator=g).to(dev)
    batches = [b.to(dev) for b in batches]
    model = Tagger().to(dev)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    torch.cuda.synchronize()
    total = torch.zeros((), device=dev)
    for step in range(STEPS):
        loss = F.cross_entropy(model(batches[step]), targets[step])
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        total += loss.detach()
    print("mean loss %.4f" % (total / STEPS).item())
    return 0


if __name__ == "__main__":
    sys.exit(main())
