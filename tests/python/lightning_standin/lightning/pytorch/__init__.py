"""A stand-in for `lightning.pytorch`, for culprit's CPU tests of culprit.lightning where PyTorch Lightning is not
installed: a Callback base with Lightning 2.x's hooks, a LightningModule and optimizer base, a Logger base
(loggers.py), and a Trainer whose fit/validate/test/predict call the callbacks' hooks in the order Lightning 2.x
does (src/lightning/pytorch/loops: the closure of automatic optimization runs training_step, zero_grad, backward,
then on_before_optimizer_step, inside optimizer.step), and on an exception call every callback's on_exception and
the loggers' finalize("failed") before re-raising it (trainer/call.py). It is only what culprit.lightning and its
tests touch: no torch, no devices, no data loading, no checkpoints. The same test script runs on the real Lightning
where it is installed (tests/python/test_lightning_real.py), which keeps this one honest.
"""

import logging

__version__ = "0.0-standin"

# Lightning's own logger: INFO lines on stderr unless the program configured logging (lightning/pytorch/__init__.py)
_logger = logging.getLogger(__name__)
_logger.setLevel(logging.INFO)
if not logging.getLogger().hasHandlers():
    _logger.addHandler(logging.StreamHandler())
    _logger.propagate = False


class Callback:
    """Lightning's callback base: every hook does nothing."""

    @property
    def state_key(self):
        return self.__class__.__qualname__

    def setup(self, trainer, pl_module, stage):
        pass

    def teardown(self, trainer, pl_module, stage):
        pass

    def on_fit_start(self, trainer, pl_module):
        pass

    def on_fit_end(self, trainer, pl_module):
        pass

    def on_train_start(self, trainer, pl_module):
        pass

    def on_train_end(self, trainer, pl_module):
        pass

    def on_train_epoch_start(self, trainer, pl_module):
        pass

    def on_train_epoch_end(self, trainer, pl_module):
        pass

    def on_train_batch_start(self, trainer, pl_module, batch, batch_idx):
        pass

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx):
        pass

    def on_before_zero_grad(self, trainer, pl_module, optimizer):
        pass

    def on_before_backward(self, trainer, pl_module, loss):
        pass

    def on_after_backward(self, trainer, pl_module):
        pass

    def on_before_optimizer_step(self, trainer, pl_module, optimizer):
        pass

    def on_validation_epoch_start(self, trainer, pl_module):
        pass

    def on_validation_epoch_end(self, trainer, pl_module):
        pass

    def on_validation_batch_start(self, trainer, pl_module, batch, batch_idx, dataloader_idx=0):
        pass

    def on_validation_batch_end(self, trainer, pl_module, outputs, batch, batch_idx, dataloader_idx=0):
        pass

    def on_test_batch_start(self, trainer, pl_module, batch, batch_idx, dataloader_idx=0):
        pass

    def on_test_batch_end(self, trainer, pl_module, outputs, batch, batch_idx, dataloader_idx=0):
        pass

    def on_predict_batch_start(self, trainer, pl_module, batch, batch_idx, dataloader_idx=0):
        pass

    def on_predict_batch_end(self, trainer, pl_module, outputs, batch, batch_idx, dataloader_idx=0):
        pass

    def on_exception(self, trainer, pl_module, exception):
        pass


class Optimizer:
    """What an optimizer offers the loop: step(closure) runs the closure first, as torch's optimizers do."""

    def step(self, closure=None):
        return closure() if closure is not None else None

    def zero_grad(self):
        pass


class _LightningOptimizer:
    """What LightningModule.optimizers() returns for manual optimization: step() goes through the trainer, which
    calls on_before_optimizer_step after the closure, as Lightning's precision plugin does."""

    def __init__(self, trainer, optimizer):
        self._trainer = trainer
        self.optimizer = optimizer

    def step(self, closure=None):
        return self._trainer._optimizer_step(self.optimizer, closure or (lambda: None))

    def zero_grad(self):
        self.optimizer.zero_grad()


class LightningModule:
    automatic_optimization = True

    def __init__(self):
        self.trainer = None

    @property
    def global_step(self):
        return self.trainer.global_step if self.trainer else 0

    def training_step(self, batch, batch_idx):
        raise NotImplementedError("training_step")

    def validation_step(self, batch, batch_idx):
        return None

    def test_step(self, batch, batch_idx):
        return None

    def predict_step(self, batch, batch_idx):
        return batch

    def configure_optimizers(self):
        return Optimizer()

    def backward(self, loss, *args, **kwargs):
        if hasattr(loss, "backward"):
            loss.backward()

    def manual_backward(self, loss):
        self.trainer._backward(loss)

    def optimizers(self):
        return _LightningOptimizer(self.trainer, self.trainer._optimizer)

    def optimizer_zero_grad(self, epoch, batch_idx, optimizer):
        optimizer.zero_grad()

    def optimizer_step(self, epoch, batch_idx, optimizer, optimizer_closure=None):
        optimizer.step(closure=optimizer_closure)


from . import loggers  # noqa: E402,F401 - lightning.pytorch.loggers.Logger, as in Lightning


class Trainer:
    def __init__(self, callbacks=None, logger=None, max_steps=-1, max_epochs=None, limit_val_batches=None,
                 num_sanity_val_steps=0, global_rank=0, world_size=1, **_ignored):
        self.callbacks = list(callbacks or [])
        self.loggers = [] if logger in (None, False) else (list(logger) if isinstance(logger, (list, tuple))
                                                            else [logger])
        self.max_steps = max_steps
        self.max_epochs = max_epochs if max_epochs is not None else (1 if max_steps == -1 else 1000)
        self.limit_val_batches = limit_val_batches
        self.num_sanity_val_steps = num_sanity_val_steps
        self.global_rank = global_rank
        self.local_rank = global_rank
        self.world_size = world_size
        self.global_step = 0
        self.current_epoch = 0
        self.lightning_module = None
        self._optimizer = None

    @property
    def logger(self):
        return self.loggers[0] if self.loggers else None

    # ---- hooks ---------------------------------------------------------------------------------------------------

    def _call(self, hook, *args, **kwargs):
        for cb in self.callbacks:
            getattr(cb, hook)(self, self.lightning_module, *args, **kwargs)

    def _run(self, stage, model, body):
        """trainer/call.py's _call_and_handle_interrupt around a stage."""
        self.lightning_module = model
        model.trainer = self
        try:
            self._call("setup", stage=stage)
            body()
            self._call("teardown", stage=stage)
            for lg in self.loggers:
                lg.finalize("success")
        except BaseException as exc:
            self._call("on_exception", exc)
            for lg in self.loggers:
                lg.finalize("failed")
            raise

    # ---- the loops -----------------------------------------------------------------------------------------------

    def fit(self, model, train_dataloaders, val_dataloaders=None):
        def body():
            self._optimizer = model.configure_optimizers()
            self._call("on_fit_start")
            if val_dataloaders is not None and self.num_sanity_val_steps:
                self._eval("validation", model, list(val_dataloaders)[:self.num_sanity_val_steps])
            self._call("on_train_start")
            done = False
            for epoch in range(self.max_epochs):
                self.current_epoch = epoch
                self._call("on_train_epoch_start")
                for batch_idx, batch in enumerate(train_dataloaders):
                    if 0 <= self.max_steps <= self.global_step:
                        done = True
                        break
                    self._train_batch(model, batch, batch_idx)
                if val_dataloaders is not None:
                    self._eval("validation", model, val_dataloaders)
                self._call("on_train_epoch_end")
                if done or 0 <= self.max_steps <= self.global_step:
                    break
            self._call("on_train_end")
            self._call("on_fit_end")
        self._run("fit", model, body)

    def _train_batch(self, model, batch, batch_idx):
        self._call("on_train_batch_start", batch, batch_idx)
        if model.automatic_optimization:
            out = {}

            def closure():
                out["loss"] = loss = model.training_step(batch, batch_idx)
                self._call("on_before_zero_grad", self._optimizer)
                model.optimizer_zero_grad(self.current_epoch, batch_idx, self._optimizer)
                self._backward(loss)
                return loss

            model.optimizer_step(self.current_epoch, batch_idx, self._optimizer, self._wrap(self._optimizer, closure))
            self.global_step += 1
            outputs = out.get("loss")
        else:
            outputs = model.training_step(batch, batch_idx)
        self._call("on_train_batch_end", outputs, batch, batch_idx)

    def _backward(self, loss):
        self._call("on_before_backward", loss)
        self.lightning_module.backward(loss)
        self._call("on_after_backward")

    def _wrap(self, optimizer, closure):
        """The precision plugin's closure: on_before_optimizer_step after the training step and backward, before
        the optimizer's own work."""
        def wrapped():
            result = closure()
            self._call("on_before_optimizer_step", optimizer)
            return result
        return wrapped

    def _optimizer_step(self, optimizer, closure):
        """Manual optimization's LightningOptimizer.step()."""
        result = optimizer.step(closure=self._wrap(optimizer, closure))
        self.global_step += 1
        return result

    def _eval(self, kind, model, batches):
        step = getattr(model, {"validation": "validation_step"}.get(kind, kind + "_step"))
        limit = self.limit_val_batches if kind == "validation" else None
        results = []
        for batch_idx, batch in enumerate(batches):
            if limit is not None and batch_idx >= limit:
                break
            self._call("on_%s_batch_start" % kind, batch, batch_idx, 0)
            out = step(batch, batch_idx)
            results.append(out)
            self._call("on_%s_batch_end" % kind, out, batch, batch_idx, 0)
        return results

    def validate(self, model, dataloaders):
        self._run("validate", model, lambda: self._eval("validation", model, dataloaders))

    def test(self, model, dataloaders):
        self._run("test", model, lambda: self._eval("test", model, dataloaders))

    def predict(self, model, dataloaders):
        box = []
        self._run("predict", model, lambda: box.append(self._eval("predict", model, dataloaders)))
        return box[0] if box else None
