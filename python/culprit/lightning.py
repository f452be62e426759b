"""PyTorch Lightning integration: CulpritCallback, a Lightning callback that opens culprit's scopes around chosen
steps and hooks of training, and names the kernel that faulted on the exception Lightning re-raises.

    import lightning.pytorch as pl
    from culprit.lightning import CulpritCallback

    trainer = pl.Trainer(callbacks=[CulpritCallback(blocking="training_step", kernels="*nll_loss*",
                                                    steps=range(1200, 1210))])
    trainer.fit(model, loader)          # run as: culprit run -- python train.py

It is pure Python over the culprit package (culprit.blocking(), precise(), diagnosing(), last_report()); it
imports lightning.pytorch, or pytorch_lightning where only that is installed. Without the culprit library in
the process it opens no scope and says so once per rank; it never replaces the user's exception. It is not a
Lightning plugin or strategy: it changes nothing Lightning does.
"""

import collections
import logging
import operator
import os
import sys

import culprit
from culprit import verdict as _verdict

try:
    import lightning.pytorch as _pl
except ImportError as _e1:
    try:
        import pytorch_lightning as _pl
    except ImportError as _e2:
        raise ImportError(
            "culprit.lightning needs PyTorch Lightning, and neither lightning.pytorch (%s) nor pytorch_lightning "
            "(%s) can be imported; install one of them (package 'lightning' or 'pytorch-lightning') or use the "
            "culprit scopes directly" % (_e1, _e2)) from None

__all__ = ["CulpritCallback", "PHASES", "verdict_of", "report_of"]

# The parts of a batch a scope can cover, and the callback hooks that start them (see CulpritCallback).
TRAIN_PHASES = ("training_step", "backward", "optimizer_step")
EVAL_PHASES = ("validation_step", "test_step", "predict_step")
PHASES = TRAIN_PHASES + EVAL_PHASES
ALIASES = {"train_batch": TRAIN_PHASES}  # the whole training batch

# Records go to the logger under Lightning's own, which Lightning prints at INFO (its "GPU available" lines).
log = logging.getLogger(_pl.__name__ + ".callbacks.culprit")

# What torch's CUDA errors say: an exception like this without a report is worth a hint.
_CUDA_WORDS = ("CUDA error", "CUDA_ERROR", "device-side assert", "illegal memory access", "misaligned address",
               "CUBLAS_STATUS", "cuDNN error")


def _phases(arg, value):
    """A set of phase names from a name or an iterable of names (ValueError naming a bad one)."""
    if value is None:
        return frozenset()
    names = [value] if isinstance(value, str) else value
    try:
        names = list(names)
    except TypeError:
        raise ValueError("CulpritCallback: %s=%r: give a phase name or a list of them (%s, or train_batch for the "
                         "first three)" % (arg, value, ", ".join(PHASES))) from None
    out = set()
    for n in names:
        if n in ALIASES:
            out.update(ALIASES[n])
        elif isinstance(n, str) and n in PHASES:
            out.add(n)
        else:
            raise ValueError("CulpritCallback: %s=%r: %r is not a phase; the phases are %s, and train_batch (all "
                             "three of training)" % (arg, value, n, ", ".join(PHASES)))
    return frozenset(out)


def _selection(arg, value):
    """None (every one), or a container of numbers >= 0 from an int, a range or a set/list of ints."""
    what = "global step" if arg == "steps" else "batch index"
    hint = ("give an int, a range (range(100, 110): %ss 100..109) or a set of ints ({3, 7})" % what)
    if value is None:
        return None
    if isinstance(value, bool):
        raise ValueError("CulpritCallback: %s=%r: %s" % (arg, value, hint))
    if isinstance(value, range):
        if value.step < 1 or len(value) == 0 or value.start < 0:
            raise ValueError("CulpritCallback: %s=%r selects no %s: use a non-empty range of numbers from 0 up"
                             % (arg, value, what))
        return value
    if isinstance(value, tuple):
        raise ValueError("CulpritCallback: %s=%r: a tuple could mean a pair (first, last) or a set; %s"
                         % (arg, value, hint))
    if isinstance(value, (set, frozenset, list)):
        items = list(value)
    else:
        try:
            items = [operator.index(value)]
        except TypeError:
            raise ValueError("CulpritCallback: %s=%r: %s" % (arg, value, hint)) from None
    out = set()
    for v in items:
        try:
            if isinstance(v, bool):
                raise TypeError
            v = operator.index(v)
        except TypeError:
            raise ValueError("CulpritCallback: %s=%r: %r is not an integer; %s" % (arg, value, v, hint)) from None
        if v < 0:
            raise ValueError("CulpritCallback: %s=%r: %d is negative (%ss count from 0)" % (arg, value, v, what))
        out.add(v)
    if not out:
        raise ValueError("CulpritCallback: %s=%r selects no %s; leave it None for every one" % (arg, value, what))
    return frozenset(out)


def _describe(sel, what):
    if isinstance(sel, range):
        if sel.step == 1:
            return "%ss %d..%d" % (what, sel.start, sel.stop - 1) if len(sel) > 1 else "%s %d" % (what, sel.start)
        return "%ss %r" % (what, sel)
    items = sorted(sel)
    shown = ", ".join(str(i) for i in items[:8]) + (", ..." if len(items) > 8 else "")
    return "%s%s %s" % (what, "s" if len(items) > 1 else "", shown)


def _rank(trainer):
    """(global rank, world size) from the trainer, else from the launcher's variables; (None, None) if unknown."""
    rank, world = getattr(trainer, "global_rank", None), getattr(trainer, "world_size", None)
    if not isinstance(rank, int):
        try:
            rank = int(os.environ.get("RANK", ""))
        except ValueError:
            rank = None
    if not isinstance(world, int):
        try:
            world = int(os.environ.get("WORLD_SIZE", ""))
        except ValueError:
            world = None
    return rank, world


def _loggers(trainer):
    lgs = getattr(trainer, "loggers", None)
    if lgs is None:
        lg = getattr(trainer, "logger", None)
        lgs = [lg] if lg else []
    try:
        return [lg for lg in lgs if lg is not None]
    except TypeError:
        return []


def _to_logger(lg, key, text, rank, step):
    """Hands text to one of the Trainer's loggers by what it offers: log_text (Weights & Biases' signature), else
    its experiment's add_text (TensorBoard), else log_hyperparams. Returns the way taken. Raises what it raised."""
    fn = getattr(lg, "log_text", None)
    if callable(fn):
        try:
            fn(key=key, columns=["rank", "text"], data=[[rank, text]])
            return "log_text"
        except TypeError:
            pass  # another signature: try the next way
    try:
        exp = lg.experiment
    except Exception:  # noqa: BLE001 - a logger whose experiment cannot be made here: use its own methods
        exp = None
    add = getattr(exp, "add_text", None)
    if callable(add):
        # TensorBoard renders text as Markdown: indented lines stay as they are
        add(key, "\n".join("    " + line for line in text.splitlines()), global_step=step)
        return "add_text"
    lg.log_hyperparams({key: text})
    return "log_hyperparams"


def _note(exc, text):
    """exc.add_note(text) (Python 3.11+) unless that text is there already; never raises."""
    add = getattr(exc, "add_note", None)
    if callable(add) and text not in (getattr(exc, "__notes__", None) or ()):
        try:
            add(text)
        except Exception:  # noqa: BLE001
            pass


def _set(exc, name, value):
    try:
        setattr(exc, name, value)
    except Exception:  # noqa: BLE001 - an exception type that takes no attributes: verdict_of() has it
        pass


_attached = collections.OrderedDict()  # id(exception) -> (exception, report, verdict), the last few explained
_ATTACHED_MAX = 16


def _remember(exc, report, text):
    _attached[id(exc)] = (exc, report, text)
    _attached.move_to_end(id(exc))
    while len(_attached) > _ATTACHED_MAX:
        _attached.popitem(last=False)


def _lookup_one(exc, name, index):
    value = getattr(exc, name, None)
    if value is not None:
        return value
    hit = _attached.get(id(exc))
    if hit is not None and hit[0] is exc:
        return hit[index]
    notes = getattr(exc, "__notes__", None) or ()   # another object carrying the verdict note
    for kept in reversed(list(_attached.values())):
        if kept[2] in notes:
            return kept[index]
    return None


def _lookup(exc, name, index):
    """What the callback attached to exc or to an exception exc was raised while handling: Lightning's teardown
    moves the module to the CPU after on_exception, which raises a new CUDA error on a dead context, and that
    is the one that reaches the caller (its __context__ is the one the callback saw)."""
    seen = set()
    while exc is not None and id(exc) not in seen and len(seen) < 16:
        seen.add(id(exc))
        value = _lookup_one(exc, name, index)
        if value is not None:
            return value
        exc = exc.__cause__ or exc.__context__
    return None


def verdict_of(exc):
    """The verdict text CulpritCallback attached to exc, or None: exc.culprit_verdict, or, for an exception type
    that takes no attributes, what the callback remembered of it; also through the exceptions exc was raised while
    handling (Lightning's teardown raises a second CUDA error after the first, and that one reaches the caller)."""
    return _lookup(exc, "culprit_verdict", 2)


def report_of(exc):
    """The report (a dict) CulpritCallback attached to exc, or None (as verdict_of)."""
    return _lookup(exc, "culprit_report", 1)


class CulpritCallback(_pl.Callback):
    """A Lightning callback that opens culprit scopes around chosen phases of chosen batches, logs one status line
    per rank when fit (or validate, test, predict) starts, and on an exception attaches culprit's verdict to it.

    blocking: phases to run under culprit.blocking(kernels): the launch that faults returns the error itself, so
        the exception is raised at the faulty line (exact, slow: keep it to a few steps).
    precise: phases to run under culprit.precise(): a breadcrumb after every launch, exact without synchronizing.
        A phase cannot be in both.
    diagnosing: phases to run under culprit.diagnosing(): every PyTorch operator's arguments are recorded and
        index arguments checked, so the report names the operator and what was wrong with its input (where this
        culprit package has diagnosing(); the status line says when it has not).
    kernels: the kernel glob of the blocking scopes ("*nll_loss*"); None for every kernel.
    steps: which batches get the scopes, by the trainer's global step at the start of the batch (the optimizer
        steps taken before it): an int, a range or a set of ints; None for every one.
    batches: the same by the batch's index in its epoch (batch_idx, as Lightning passes it); both given: both must
        match.

    Phases and the hooks that begin them (a phase ends where the next one begins, or at the batch's end):
        training_step   on_train_batch_start (the forward, the loss, zero_grad); with manual optimization also the
                        rest of training_step after each manual_backward
        backward        on_before_backward .. on_after_backward
        optimizer_step  on_after_backward (automatic optimization: AMP's unscale, gradient clipping) and
                        on_before_optimizer_step, to the batch's end; with manual optimization, from
                        on_before_optimizer_step to the next backward or the batch's end
        validation_step, test_step, predict_step
                        on_{validation,test,predict}_batch_start .. _end
        train_batch     the three training phases

    Every scope is closed at the end of its phase, at the batch's end, on an exception (on_exception) and at
    teardown, so none outlives its batch. On an exception, the report culprit wrote in this process (if any)
    becomes exc.culprit_report (a dict; None without one) and its summary (culprit.verdict.summary)
    exc.culprit_verdict, added as a note to the traceback (Python 3.11+), logged at ERROR on the Python logger
    "<lightning>.callbacks.culprit" by every rank, and handed to the Trainer's loggers under "culprit/verdict"
    (log_text, a TensorBoard experiment's add_text, else log_hyperparams; Lightning's loggers write on rank 0).
    """

    def __init__(self, blocking=None, precise=None, diagnosing=None, kernels=None, steps=None, batches=None):
        super().__init__()
        self.blocking = _phases("blocking", blocking)
        self.precise = _phases("precise", precise)
        self.diagnosing = _phases("diagnosing", diagnosing)
        both = sorted(self.blocking & self.precise)
        if both:
            raise ValueError("CulpritCallback: %s is both in blocking and in precise; a phase gets one of them "
                             "(blocking is exact on its own)" % ", ".join(both))
        if kernels is not None:
            if not self.blocking:
                raise ValueError("CulpritCallback: kernels=%r filters blocking scopes, but blocking names no phase"
                                 % (kernels,))
            try:
                culprit.blocking(kernels)  # checks the glob; opens nothing
            except (TypeError, ValueError) as e:
                why = str(e).replace("culprit: ", "")
                raise ValueError("CulpritCallback: kernels=%r: %s" % (kernels, why)) from None
        self.kernels = kernels
        self.steps = _selection("steps", steps)
        self.batches = _selection("batches", batches)
        if (self.steps is not None or self.batches is not None) and not self._wanted():
            raise ValueError("CulpritCallback: steps/batches choose where scopes open, but blocking, precise and "
                             "diagnosing name no phase")
        self._open = []          # (kind, Scope) open now, innermost last
        self._phase = None       # the phase in progress, None between batches
        self._selected = False   # the batch in progress is one of steps/batches
        self._in_train = False   # between on_train_batch_start and on_train_batch_end
        self._manual = False     # the module optimizes manually (automatic_optimization False)
        self._active = None      # culprit's library is active in this process (known at setup)
        self._diagnose = None    # culprit.diagnosing, when this package has it
        self._said = set()       # warnings already logged, by kind

    # ---- what it does ------------------------------------------------------------------------------------------

    def _wanted(self):
        return self.blocking | self.precise | self.diagnosing

    def _plan(self):
        """ "blocking (kernels '*nll*') in training_step, backward; ... for global steps 3..5" or None."""
        parts = []
        if self.blocking:
            parts.append("blocking%s in %s" % (" (kernels %r)" % self.kernels if self.kernels else "",
                                               ", ".join(p for p in PHASES if p in self.blocking)))
        if self.precise:
            parts.append("precise in %s" % ", ".join(p for p in PHASES if p in self.precise))
        if self.diagnosing:
            parts.append("diagnosing in %s%s" % (
                ", ".join(p for p in PHASES if p in self.diagnosing),
                "" if self._diagnose is not None else
                " (unavailable: this culprit package has no culprit.diagnosing())"))
        if not parts:
            return None
        sel = [_describe(s, w) for s, w in ((self.steps, "global step"), (self.batches, "batch index"))
               if s is not None]
        return "; ".join(parts) + (" for %s" % " and ".join(sel) if sel else " for every batch")

    def status_line(self, trainer):
        """The line logged at setup: rank, the library's state and mode, the scopes this callback opens."""
        rank, world = _rank(trainer)
        who = "rank %s%s" % ("?" if rank is None else rank, "" if world is None else " of %d" % world)
        st = culprit.status()
        plan = self._plan()
        if st == "active":
            head = "culprit loaded, mode %s" % culprit.mode()
            tail = "scopes: %s" % plan if plan else "no scopes (the verdict comes with an exception)"
        else:
            argv = getattr(sys, "argv", None) or [""]
            script = " ".join(argv) if argv[0].endswith(".py") else "train.py"
            head = ("culprit loaded but disabled in this process (CULPRIT_MODE=off or a bad CULPRIT_* setting)"
                    if st == "disabled" else
                    "culprit not loaded (run the program as: culprit run -- python %s)" % script)
            tail = "no scopes and no verdict%s" % (" (asked for: %s)" % plan if plan else "")
        return "culprit: %s: %s; %s" % (who, head, tail)

    def _warn_once(self, kind, msg, *args):
        if kind not in self._said:
            self._said.add(kind)
            log.warning(msg, *args)

    def _begin(self, trainer, batch_idx):
        if self._active is None:
            self._start()
        step = getattr(trainer, "global_step", 0)
        self._selected = ((self.steps is None or step in self.steps) and
                          (self.batches is None or batch_idx in self.batches))

    def _switch(self, phase, exc=None):
        """Ends the phase in progress (closing its scopes) and begins `phase` (None: none), opening its scopes when
        the batch is selected and the library is active."""
        if phase == self._phase and exc is None:
            return
        while self._open:
            kind, scope = self._open.pop()
            try:
                if exc is None:
                    scope.__exit__(None, None, None)
                else:
                    scope.__exit__(type(exc), exc, exc.__traceback__)
            except Exception as e:  # noqa: BLE001 - never let a scope break the training loop
                self._warn_once("close", "culprit: the %s scope could not be closed: %r", kind, e)
        self._phase = phase
        if phase is None or not self._selected or not self._active:
            return
        if phase in self.diagnosing and self._diagnose is not None:
            self._enter("diagnosing", self._diagnose)
        if phase in self.blocking:
            self._enter("blocking", lambda: culprit.blocking(self.kernels))
        elif phase in self.precise:
            self._enter("precise", culprit.precise)

    def _enter(self, kind, make):
        try:
            scope = make()
            scope.__enter__()
        except Exception as e:  # noqa: BLE001 - the training runs on without this scope
            self._warn_once("open-" + kind, "culprit: the %s scope could not be opened: %r", kind, e)
            return
        self._open.append((kind, scope))

    def _start(self):
        self._active = culprit.loaded()
        self._diagnose = getattr(culprit, "diagnosing", None)

    # ---- the hooks ---------------------------------------------------------------------------------------------

    def setup(self, trainer, pl_module, stage=None):
        self._start()
        self._switch(None)
        line = self.status_line(trainer)
        log.info("%s", line)
        self._tell_loggers(trainer, "culprit/status", line)

    def teardown(self, trainer, pl_module, stage=None):
        self._switch(None)
        self._in_train = False

    def on_train_batch_start(self, trainer, pl_module, batch, batch_idx, *args, **kwargs):
        self._switch(None)
        self._begin(trainer, batch_idx)
        self._in_train = True
        self._manual = getattr(pl_module, "automatic_optimization", True) is False
        self._switch("training_step")

    def on_before_backward(self, trainer, pl_module, loss, *args, **kwargs):
        if self._in_train:
            self._switch("backward")

    def on_after_backward(self, trainer, pl_module, *args, **kwargs):
        if self._in_train:
            self._switch("training_step" if self._manual else "optimizer_step")

    def on_before_optimizer_step(self, trainer, pl_module, optimizer, *args, **kwargs):
        if self._in_train:
            self._switch("optimizer_step")

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx, *args, **kwargs):
        self._switch(None)
        self._in_train = False

    def _eval_start(self, trainer, batch_idx, phase):
        self._switch(None)
        self._in_train = False
        self._begin(trainer, batch_idx)
        self._switch(phase)

    def on_validation_batch_start(self, trainer, pl_module, batch, batch_idx, dataloader_idx=0):
        self._eval_start(trainer, batch_idx, "validation_step")

    def on_validation_batch_end(self, trainer, pl_module, outputs, batch, batch_idx, dataloader_idx=0):
        self._switch(None)

    def on_test_batch_start(self, trainer, pl_module, batch, batch_idx, dataloader_idx=0):
        self._eval_start(trainer, batch_idx, "test_step")

    def on_test_batch_end(self, trainer, pl_module, outputs, batch, batch_idx, dataloader_idx=0):
        self._switch(None)

    def on_predict_batch_start(self, trainer, pl_module, batch, batch_idx, dataloader_idx=0):
        self._eval_start(trainer, batch_idx, "predict_step")

    def on_predict_batch_end(self, trainer, pl_module, outputs, batch, batch_idx, dataloader_idx=0):
        self._switch(None)

    def on_exception(self, trainer, pl_module, exception):
        # Lightning calls this before it re-raises the exception: whatever goes wrong here must not replace it.
        try:
            self._switch(None, exc=exception)
        except Exception:  # noqa: BLE001
            pass
        self._in_train = False
        try:
            self._explain(trainer, exception)
        except Exception as e:  # noqa: BLE001
            try:
                log.warning("culprit: the verdict could not be made: %r", e)
            except Exception:  # noqa: BLE001
                pass

    # ---- the verdict -------------------------------------------------------------------------------------------

    def _explain(self, trainer, exc):
        rank, _ = _rank(trainer)
        report = culprit.last_report()
        path = culprit.last_report_path()
        hang = isinstance(report, dict) and report.get("kind") == "hang"
        # a hang report asked for by a signal or a timeout while the process carried on is not about this exception
        stale = hang and _verdict._dict(report.get("hang")).get("trigger") not in _verdict.STOP_TRIGGERS
        if isinstance(report, dict) and report.get("kind") != "exit" and not stale:
            text = _verdict.summary(report, path=path, rank=rank)
            _set(exc, "culprit_report", report)
            _set(exc, "culprit_verdict", text)
            _remember(exc, report, text)
            _note(exc, text)
            log.error("%s", text)
            self._tell_loggers(trainer, "culprit/verdict", text)
            return
        _set(exc, "culprit_report", None)
        _set(exc, "culprit_verdict", None)
        line = self._no_report_line(rank, exc, path if stale else None)
        if isinstance(exc, Exception):  # not for KeyboardInterrupt or SystemExit
            log.warning("%s", line)
            if culprit.status() != "active" and any(w in str(exc) for w in _CUDA_WORDS):
                _note(exc, line)

    def _no_report_line(self, rank, exc, older):
        who = "culprit: rank %s: " % rank if rank is not None else "culprit: "
        st = culprit.status()
        if st == "absent":
            argv = getattr(sys, "argv", None) or [""]
            script = " ".join(argv) if argv[0].endswith(".py") else "train.py"
            return ("%sno report for this %s: culprit is not loaded in this process; to name the kernel that "
                    "faulted, run the program as: culprit run -- python %s" % (who, type(exc).__name__, script))
        if st == "disabled":
            return ("%sno report for this %s: culprit is loaded but disabled in this process (CULPRIT_MODE=off or a "
                    "bad CULPRIT_* setting)" % (who, type(exc).__name__))
        return ("%sno report for this %s: culprit saw no sticky CUDA error in this process, so it was not a CUDA "
                "fault here%s" % (who, type(exc).__name__,
                                  " (the last report, %s, is a hang report from earlier)" % older if older else ""))

    def _tell_loggers(self, trainer, key, text):
        rank, _ = _rank(trainer)
        step = getattr(trainer, "global_step", 0)
        for lg in _loggers(trainer):
            try:
                _to_logger(lg, key, text, rank, step)
            except Exception as e:  # noqa: BLE001 - a logger's failure must not stop training or hide the error
                self._warn_once("logger-" + key, "culprit: the logger %s could not take %s: %r",
                                type(lg).__name__, key, e)
