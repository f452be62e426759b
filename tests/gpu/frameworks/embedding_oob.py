"""Token classifier fed a token id equal to the vocabulary size (the tokenizer grew, the embedding did not).

nn.Embedding's forward is index_select on its weight; the indexSelect kernel's device assert fires (710). More
kernels follow before the host waits, so the error surfaces at one of them or at the synchronize.
"""
import sys

import torch
import torch.nn.functional as F

VOCAB, DIM, CLASSES = 1000, 32, 4  # vocabulary, embedding width, output classes
BATCH, LENGTH = 16, 24  # sequences per batch, tokens per sequence


class Tagger(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = torch.nn.Embedding(VOCAB, DIM)
        self.proj = torch.nn.Linear(DIM, CLASSES)

    def forward(self, ids):
        h = self.embed(ids)  # CULPRIT-LAUNCH
        return self.proj(torch.tanh(h)).mean(dim=1)


def main():
    if not torch.cuda.is_available():
        print("skipped: no CUDA device", file=sys.stderr)
        return 77
    torch.manual_seed(0)
    dev = torch.device("cuda")
    g = torch.Generator().manual_seed(1)
    ids = torch.randint(0, VOCAB, (BATCH, LENGTH), generator=g)
    ids[5, 11] = VOCAB  # a token added to the tokenizer after the model was built
    targets = torch.randint(0, CLASSES, (BATCH,), generator=g)
    model = Tagger().to(dev)
    with torch.no_grad():
        logits = model(ids.to(dev))
        loss = F.cross_entropy(logits, targets.to(dev))
    torch.cuda.synchronize()
    print("loss %.4f" % loss.item())
    return 0


if __name__ == "__main__":
    sys.exit(main())
