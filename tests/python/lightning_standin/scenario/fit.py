"""One Lightning run for the tests of culprit.lightning.CulpritCallback, on the stand-in Lightning or on the real one
(whichever `lightning.pytorch` imports here; torch is used only with the real one).

Each phase of each batch notes the phase, the global step, the batch index, culprit.mode() and culprit.depth(),
and launches a kernel named after the phase on the simulated driver (fakegpu); a CUDA fault or a plain exception
can be scripted into one phase of one step. Prints one JSON line: what was seen, the exception (its type, message,
culprit_report's culprit, culprit_verdict, notes), what the logger got, and culprit's mode and depth after the run.

    python fit.py '{"callback": {"blocking": "backward", "steps": [1]}, "steps": 3, "fault": "backward@1"}'

Config keys: callback (CulpritCallback's keywords; steps and batches as a list, meaning a set, or {"range": [a, b]}),
steps (training batches, default 3), val (validation batches after the epoch, default 0), manual (manual
optimization), fault ("PHASE@STEP": that phase launches kernel `bad`, which FAKECUDA_FAULT=kernel=bad makes fault,
and waits for it), raise ("PHASE@STEP": raises raise_type, ValueError by default, with raise_message there), logger
(text, tensorboard, hparams, broken or none), gpu (false: no kernels, for a process without the simulated driver),
stage (fit or validate), probe_diagnosing (culprit.diagnosing replaced by a probe that notes its opening and
closing), no_diagnosing (culprit.diagnosing removed), rank and world (the stand-in's trainer only).
"""

import json
import sys

import culprit

try:
    import lightning.pytorch as pl
    from lightning.pytorch.loggers import Logger
except ImportError:
    import pytorch_lightning as pl
    from pytorch_lightning.loggers import Logger

from culprit.lightning import CulpritCallback

REAL = not str(getattr(pl, "__version__", "")).endswith("standin")
if REAL:
    import torch

cfg = json.loads(sys.argv[1])
if cfg.get("gpu", True):
    import fakegpu
    gpu = fakegpu.Gpu()
    kernels = gpu.kernels("training_step", "backward", "optimizer_step", "validation_step", "after_backward",
                          "after_optimizer_step", "bad")
else:
    gpu = None
seen = []


def phase(tag, trainer, batch_idx):
    step = trainer.global_step
    seen.append({"tag": tag, "step": step, "batch": batch_idx, "mode": culprit.mode(), "depth": culprit.depth(),
                 "diagnosing": ProbeScope.depth})
    if gpu is not None:
        gpu.launch(kernels[tag])
    here = "%s@%d" % (tag, step)
    if cfg.get("fault") == here:
        rc = gpu.fn["cuLaunchKernel"](kernels["bad"], 1, 1, 1, 32, 1, 1, 0, None, None, None)  # FAULT-LAUNCH
        if rc == 0:
            rc = gpu.sync()
        raise RuntimeError("CUDA error: an illegal memory access was encountered (driver error %d)" % rc)
    if cfg.get("raise") == here:
        kind = {"ValueError": ValueError, "RuntimeError": RuntimeError, "KeyboardInterrupt": KeyboardInterrupt}
        raise kind[cfg.get("raise_type", "ValueError")](cfg.get("raise_message", "a bad batch at step %d" % step))


class ProbeScope:
    """Stands for culprit.diagnosing() (probe_diagnosing): notes when it opens and closes, with culprit.depth()."""

    depth = 0

    def __enter__(self):
        ProbeScope.depth += 1
        events.append(["diagnosing-open", culprit.depth()])
        return self

    def __exit__(self, *exc):
        ProbeScope.depth -= 1
        events.append(["diagnosing-close", culprit.depth()])
        return False


events = []
if cfg.get("probe_diagnosing"):
    culprit.diagnosing = ProbeScope
if cfg.get("no_diagnosing") and hasattr(culprit, "diagnosing"):
    del culprit.diagnosing


class Module(pl.LightningModule):
    def __init__(self, manual):
        super().__init__()
        self.automatic_optimization = not manual
        self.batch_idx = None
        if REAL:
            self.layer = torch.nn.Linear(2, 1)

    def loss(self, batch):
        return self.layer(batch[0]).sum() if REAL else 0.0

    def training_step(self, batch, batch_idx):
        self.batch_idx = batch_idx
        phase("training_step", self.trainer, batch_idx)
        loss = self.loss(batch)
        if self.automatic_optimization:
            return loss
        opt = self.optimizers()
        self.manual_backward(loss)
        phase("after_backward", self.trainer, batch_idx)
        opt.step()
        phase("after_optimizer_step", self.trainer, batch_idx)
        opt.zero_grad()
        return loss

    def backward(self, loss, *args, **kwargs):
        phase("backward", self.trainer, self.batch_idx)
        super().backward(loss, *args, **kwargs)

    def validation_step(self, batch, batch_idx):
        phase("validation_step", self.trainer, batch_idx)

    def configure_optimizers(self):
        return make_optimizer(self)


if REAL:
    def make_optimizer(module):
        class Probe(torch.optim.SGD):
            def step(self, closure=None):
                loss = closure() if closure is not None else None
                phase("optimizer_step", module.trainer, module.batch_idx)
                super().step()
                return loss
        return Probe(module.parameters(), lr=0.01)
else:
    def make_optimizer(module):
        class Probe(pl.Optimizer):
            def step(self, closure=None):
                loss = closure() if closure is not None else None
                phase("optimizer_step", module.trainer, module.batch_idx)
                return loss
        return Probe()


class Base(Logger):
    def __init__(self):
        super().__init__()
        self.calls = []

    @property
    def name(self):
        return "probe"

    @property
    def version(self):
        return 0

    def log_metrics(self, metrics, step=None):
        pass

    def log_hyperparams(self, params, *args, **kwargs):
        if isinstance(params, dict) and any(str(k).startswith("culprit/") for k in params):
            self.calls.append(["log_hyperparams", params])

    def finalize(self, status):
        self.calls.append(["finalize", status])


class TextLogger(Base):
    def log_text(self, key, columns=None, data=None, dataframe=None, step=None):
        self.calls.append(["log_text", key, columns, data])


class Board:
    def __init__(self, calls):
        self.calls = calls

    def add_text(self, tag, text, global_step=None):
        self.calls.append(["add_text", tag, text, global_step])


class TensorBoardLogger(Base):
    @property
    def experiment(self):
        return Board(self.calls)


class BrokenLogger(Base):
    def log_text(self, key, columns=None, data=None, dataframe=None, step=None):
        raise RuntimeError("the logging server is down")


LOGGERS = {"text": TextLogger, "tensorboard": TensorBoardLogger, "hparams": Base, "broken": BrokenLogger}


def selection(v):
    if isinstance(v, list):
        return set(v)
    if isinstance(v, dict) and "range" in v:
        return range(*v["range"])
    return v


def main():
    kw = dict(cfg.get("callback") or {})
    for k in ("steps", "batches"):
        if k in kw:
            kw[k] = selection(kw[k])
    callback = CulpritCallback(**kw)
    logger = LOGGERS[cfg["logger"]]() if cfg.get("logger", "none") != "none" else None
    steps, val = cfg.get("steps", 3), cfg.get("val", 0)
    args = dict(callbacks=[callback], logger=logger if logger is not None else False, max_steps=steps, max_epochs=1,
                limit_val_batches=val, num_sanity_val_steps=0)
    if REAL:
        args.update(accelerator="cpu", devices=1, enable_checkpointing=False, enable_progress_bar=False,
                    enable_model_summary=False)
        data = torch.utils.data.TensorDataset(torch.randn(max(steps, val, 1), 2))
        train = torch.utils.data.DataLoader(data, batch_size=1)
        valid = torch.utils.data.DataLoader(data, batch_size=1) if val else None
    else:
        args.update(global_rank=cfg.get("rank", 0), world_size=cfg.get("world", 1))
        train, valid = list(range(steps)), (list(range(val)) if val else None)
    trainer = pl.Trainer(**args)
    model = Module(cfg.get("manual", False))
    result = {"real": REAL, "error": None}
    try:
        if cfg.get("stage", "fit") == "fit":
            trainer.fit(model, train, valid)
        else:
            trainer.validate(model, valid)
    except BaseException as e:  # noqa: BLE001 - reported, whatever it is
        report = getattr(e, "culprit_report", "unset")
        result["error"] = {
            "type": type(e).__name__, "message": str(e), "verdict": getattr(e, "culprit_verdict", "unset"),
            "report": report if report in ("unset", None) else (report.get("culprit") or {}).get("kernel"),
            "notes": list(getattr(e, "__notes__", [])),
        }
    result.update(seen=seen, events=events, mode_after=culprit.mode(), depth_after=culprit.depth(),
                  logger=logger.calls if logger is not None else None)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
