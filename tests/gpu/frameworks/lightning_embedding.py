"""PyTorch Lightning: a tiny LightningModule whose training_step hits an embedding index error at step 3.

The data set's fourth batch (batch_idx 3) holds a token id equal to the vocabulary size; the embedding lookup's
indexSelect kernel asserts (710). The error surfaces later in Lightning's loop; culprit must name the kernel and
the training_step line.
"""
import sys

import torch
import torch.nn.functional as F

try:
    import lightning.pytorch as pl
except ImportError:
    import pytorch_lightning as pl

VOCAB, DIM, CLASSES = 500, 16, 3  # vocabulary, embedding width, classes
BATCH, LENGTH, STEPS = 8, 12, 5  # sequences per batch, tokens per sequence, training steps


class BagOfTokens(pl.LightningModule):
    def __init__(self):
        super().__init__()
        self.embed = torch.nn.Embedding(VOCAB, DIM)
        self.head = torch.nn.Linear(DIM, CLASSES)

    def training_step(self, batch, batch_idx):
        ids, labels = batch
        pooled = self.embed(ids).mean(dim=1)  # CULPRIT-LAUNCH
        return F.cross_entropy(self.head(pooled), labels)

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.1)


def make_loader():
    g = torch.Generator().manual_seed(7)
    ids = torch.randint(0, VOCAB, (BATCH * STEPS, LENGTH), generator=g)
    ids[3 * BATCH + 2, 5] = VOCAB  # step 3: a token the vocabulary does not have
    labels = torch.randint(0, CLASSES, (BATCH * STEPS,), generator=g)
    data = torch.utils.data.TensorDataset(ids, labels)
    return torch.utils.data.DataLoader(data, batch_size=BATCH, shuffle=False, num_workers=0)


def main():
    if not torch.cuda.is_available():
        print("skipped: no CUDA device", file=sys.stderr)
        return 77
    torch.manual_seed(0)
    trainer = pl.Trainer(accelerator="gpu", devices=1, max_steps=STEPS, logger=False, enable_checkpointing=False,
                         enable_progress_bar=False, enable_model_summary=False)
    trainer.fit(BagOfTokens(), make_loader())
    print("trained %d steps" % trainer.global_step)
    return 0


if __name__ == "__main__":
    sys.exit(main())
