"""PyTorch Lightning with culprit.lightning.CulpritCallback (the package from this checkout's python/ folder): a
LightningModule whose batch at global step 3 holds a label equal to the number of classes.

The callback opens a blocking scope (kernels *nll_loss*) and the operator diagnosis around training_step at
global step 3 only, so the launch of nll_loss's kernel returns the device assert (710) and torch raises at the loss
line itself; Lightning calls the callback's on_exception, which attaches culprit's verdict to the exception before
Lightning re-raises it. The script prints the callback's log lines ("culprit-log: ...") and, catching the
exception at the top, the verdict it carries ("culprit-verdict: ...", one line each), then re-raises it. Without
culprit the callback opens nothing, says so, the exception carries no verdict ("culprit-verdict: none") and the
error surfaces later in Lightning's loop.
"""
import logging
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "..", "python"))

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

try:
    import lightning.pytorch as pl  # noqa: E402
except ImportError:
    import pytorch_lightning as pl  # noqa: E402

import culprit.lightning  # noqa: E402
from culprit.lightning import CulpritCallback  # noqa: E402

FEATURES, CLASSES = 16, 5  # input width, classes
BATCH, STEPS, BAD_STEP = 8, 6, 3  # samples per batch, training steps, the step whose labels hold one past the end


class Classifier(pl.LightningModule):
    def __init__(self):
        super().__init__()
        self.net = torch.nn.Sequential(torch.nn.Linear(FEATURES, 32), torch.nn.ReLU(), torch.nn.Linear(32, CLASSES))

    def training_step(self, batch, batch_idx):
        x, labels = batch
        return F.cross_entropy(self.net(x), labels)  # CULPRIT-LAUNCH

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.1)


def make_loader():
    g = torch.Generator().manual_seed(11)
    x = torch.randn(BATCH * STEPS, FEATURES, generator=g)
    labels = torch.randint(0, CLASSES, (BATCH * STEPS,), generator=g)
    labels[BAD_STEP * BATCH + 5] = CLASSES  # step 3: a class the model does not have
    data = torch.utils.data.TensorDataset(x, labels)
    return torch.utils.data.DataLoader(data, batch_size=BATCH, shuffle=False, num_workers=0)


def main():
    if not torch.cuda.is_available():
        print("skipped: no CUDA device", file=sys.stderr)
        return 77
    torch.manual_seed(0)
    out = logging.StreamHandler(sys.stdout)
    out.setFormatter(logging.Formatter("culprit-log: %(message)s"))
    culprit.lightning.log.addHandler(out)
    callback = CulpritCallback(blocking="training_step", kernels="*nll_loss*", diagnosing="training_step",
                               steps={BAD_STEP})
    trainer = pl.Trainer(accelerator="gpu", devices=1, max_steps=STEPS, logger=False, enable_checkpointing=False,
                         enable_progress_bar=False, enable_model_summary=False, callbacks=[callback])
    try:
        trainer.fit(Classifier(), make_loader())
    except Exception as e:
        # exc.culprit_verdict, or, for an exception type that takes no attributes, what the callback kept of it
        text = culprit.lightning.verdict_of(e)
        for line in (text or "none").splitlines():
            print("culprit-verdict: " + line)
        sys.stdout.flush()
        raise
    print("trained %d steps" % trainer.global_step)
    return 0


if __name__ == "__main__":
    sys.exit(main())
