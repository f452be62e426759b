"""The four-step diagnosis, automated: which PyTorch operator made each launch, with which arguments, and what
broke its contract.

After a device-side assert, the usual advice is to print the shapes, the dtypes, the value range and the
devices of the tensors involved. This module does it before each operator runs, from a TorchDispatchMode (the
dispatcher hands every ATen operator to it, after autograd): it tells the preloaded library the operator's
name and a summary of its arguments (culprit_api_op_begin), runs the operator, and closes the note
(culprit_api_op_end); the library attributes the launches the thread makes in between to that operator, so the
report says "aten::nll_loss2d_forward(self: float32[...], target: int64[...] ...)" next to the kernel. For the
operators behind most device asserts (culprit/rules.py: embedding, index_select, gather, scatter, index,
nll_loss, ...) it also reads the value range of their index tensors, which synchronizes with the GPU, and asks
the operator's rule whether the arguments keep its contract; a broken one ("target int64[...] holds 20, but
input float32[...] has 14 classes") goes into the report and the printed verdict.

It is on:
- for the whole program under `culprit run --diagnose` (and in `--rerun`'s rerun): culprit/_boot puts it on as
  soon as torch is imported, in the importing thread (and the threads PyTorch's autograd engine runs backward
  on, which inherit it), with no change to the program;
- inside `culprit.diagnosing()` and `culprit.blocking()` scopes, in the thread that opened them.

It never changes what an operator computes (the operator runs as it would, with the same arguments); the range
reads only add synchronizations. A problem found is not raised: the operator still runs, so the program fails
(or not) as it would have. torch.compile'd code is compiled as usual (the mode declares
ignore_compile_internals, on torch versions that know it): the launches of a compiled graph are attributed to
"compiled graph <id>" with a summary of the graph's inputs, and the graph's fallback operators to themselves.
On torch versions without ignore_compile_internals, compiled functions run eagerly while the diagnosis is on
(culprit says so once).
"""

import os
import sys
import threading

from . import _lib
from .rules import RULES, Arg, describe

__all__ = ["install", "enter", "leave", "active"]

_MAX_ARGS = 8          # arguments summarized per operator
_MAX_ITEMS = 8         # entries summarized per list argument

_state = threading.local()   # .depth: diagnosis scopes open in this thread; .mode: the mode object entered
_install_lock = threading.Lock()
_warned = set()
_torch = None
_Mode = None
_global_mode_threads = set()  # threads where the whole-program diagnosis is on
_scopes_open = 0              # diagnosis scopes open in all threads (compiled graphs are noted while any is)
# Operators on the CPU only cannot make a GPU fault, and a CPU kernel checks its own indices and raises at once:
# they pass straight through (data loading in DataLoader workers stays fast). CULPRIT_DIAGNOSE=all notes them too.
_cuda_only = os.environ.get("CULPRIT_DIAGNOSE", "1") != "all"


def _on_gpu(args, kwargs):
    """Whether a call is a GPU operator: its first tensor argument (or list of them) is not on the CPU, or it
    makes tensors on a device other than the CPU."""
    torch = _torch
    for a in args:
        if isinstance(a, torch.Tensor):
            return a.device.type != "cpu"
        if isinstance(a, (list, tuple)) and a and isinstance(a[0], torch.Tensor):
            return a[0].device.type != "cpu"
    d = kwargs.get("device")
    if d is not None:
        return str(d).split(":")[0] != "cpu"
    for v in kwargs.values():
        if isinstance(v, torch.Tensor):
            return v.device.type != "cpu"
    return False


def _warn(key, msg):
    if key in _warned:
        return
    _warned.add(key)
    try:
        sys.stderr.write("culprit: " + msg + "\n")
        sys.stderr.flush()
    except Exception:
        pass


# ---- notes to the library -------------------------------------------------------------------------------------


def _api():
    a = _lib.api()
    if a is None or not a.has_ops:
        return None
    return a


def _enc(s):
    return s.encode("utf-8", "replace") if s else b""


# ---- argument summaries ---------------------------------------------------------------------------------------


def _dtype(t):
    return str(t.dtype).replace("torch.", "")


def _readable(t):
    """Whether reading t's values is safe here: a plain dense tensor with storage, not during a graph capture."""
    torch = _torch
    if type(t) not in (torch.Tensor, torch.nn.Parameter) or t.layout != torch.strided or t.is_meta:
        return False
    if t.numel() == 0:
        return False
    if t.is_cuda:
        # A capture under way anywhere in the process (another thread's, in global capture mode, too) would be
        # broken by the read's synchronization.
        a = _lib.api()
        if a is not None and a.captures is not None and a.captures() != 0:
            return False
        try:
            if torch.cuda.is_current_stream_capturing():
                return False
        except Exception:
            return False
    return True


def _summary(t, want_range=False, exclude=None):
    torch = _torch
    if t is None:
        return None
    if isinstance(t, (list, tuple)):
        return Arg(items=[_summary(x, want_range) for x in t[:_MAX_ITEMS]])
    if not isinstance(t, torch.Tensor):
        return Arg(value=t if isinstance(t, (int, float, bool, str)) else str(t))
    try:
        a = Arg(dtype=_dtype(t), shape=tuple(t.shape), device=str(t.device))
    except Exception:
        return Arg(value="<%s>" % type(t).__name__)
    try:
        b = t._base
        if b is not None:
            a.base = tuple(b.shape)
    except Exception:
        pass
    if want_range and a.is_integer and _readable(t):
        # The read's own launches are named as culprit's, so a report does not pin them on the program.
        api = _api()
        opened = api is not None and api.op_begin(b"culprit::read_range", _enc(describe(a)), b"") == 0
        try:
            x = t
            if exclude is not None and isinstance(exclude, int):
                x = t[t != exclude]
                a.excluded = exclude
            if x.numel() > 0:
                lo, hi = torch.aminmax(x.reshape(-1))
                a.lo, a.hi = (int(v) for v in torch.stack((lo, hi)).tolist())
        except Exception:
            # A sticky error of an earlier kernel surfaces here: the operator runs next and raises it as the
            # program would have; nothing is said about a range that could not be read.
            a.lo = a.hi = None
        finally:
            if opened:
                api.op_end()
    return a


def _schema_names(func):
    try:
        return [arg.name for arg in func._schema.arguments]
    except Exception:
        return []


class _Op:
    """What is known of one operator overload, computed once."""

    __slots__ = ("name", "args", "rule")

    def __init__(self, func):
        schema = getattr(func, "_schema", None)
        if schema is not None:
            self.name = schema.name
            overload = getattr(func, "_overloadname", "")
        else:  # a higher-order operator (torch.cond, flex_attention, ...)
            self.name = getattr(func, "__name__", None) or str(func)
            overload = ""
        self.rule = RULES.get(self.name)
        if overload and overload != "default":
            self.name += "." + overload
        self.args = _schema_names(func)


_ops = {}


def _op_of(func):
    op = _ops.get(func)
    if op is None:
        op = _ops[func] = _Op(func)
    return op


def _bind(op, args, kwargs):
    named = {}
    for i, v in enumerate(args):
        named[op.args[i] if i < len(op.args) else "arg%d" % i] = v
    named.update(kwargs)
    return named


def _describe_call(named, summaries):
    parts = []
    for k, (name, v) in enumerate(named.items()):
        if k == _MAX_ARGS:
            parts.append("...")
            break
        a = summaries.get(name)
        if a is None:
            a = _summary(v)
        parts.append("%s: %s" % (name, describe(a)))
    return ", ".join(parts)


_MAX_BUFFERS = 6  # the library keeps this many buffers per operator (ops.h, OPS_BUFFERS)


def _buffers_for(named):
    """The device memory the operator was given, for the library's note: one line per CUDA tensor (the first
    _MAX_BUFFERS, lists of tensors included), "BASE SIZE LABEL" with the tensor's whole storage (what its
    kernels may touch: a view reaches into its base) and its argument name and summary."""
    torch = _torch
    lines = []

    def add(name, t):
        if len(lines) >= _MAX_BUFFERS or not isinstance(t, torch.Tensor) or not t.is_cuda:
            return
        try:
            st = t.untyped_storage()
            base, size = st.data_ptr(), st.nbytes()
        except Exception:  # tensors without storage (sparse, nested, wrapper subclasses): nothing to name
            return
        if base and size:
            label = "%s: %s" % (name, describe(_summary(t)))
            lines.append("%d %d %s" % (base, size, label.replace("\n", " ")))

    for name, v in named.items():
        if isinstance(v, (list, tuple)):
            for i, x in enumerate(v[:_MAX_ITEMS]):
                add("%s[%d]" % (name, i), x)
        else:
            add(name, v)
    return "\n".join(lines)


def _note_for(op, named):
    """(args text, problem text) for one call, its arguments bound to their names (_bind)."""
    summaries = {}
    problem = ""
    rule = op.rule
    if rule is not None:
        for name in rule.ranges:
            if name in named:
                ex = rule.exclude.get(name)
                summaries[name] = _summary(named[name], True, named.get(ex, -100) if ex else None)
        for name, v in named.items():
            if name not in summaries:
                summaries[name] = _summary(v)
        try:
            problem = rule.check(summaries) or ""
        except Exception as e:  # a rule's own bug must not cost the program anything
            _warn("rule:" + op.name, "the diagnosis rule of %s failed: %r" % (op.name, e))
    return _describe_call(named, summaries), problem


# ---- the dispatch mode ----------------------------------------------------------------------------------------


def _make_mode_class(torch):
    from torch.utils._python_dispatch import TorchDispatchMode

    class CulpritDiagnosis(TorchDispatchMode):
        """Names each operator's launches to culprit and checks the contracts of index operators."""

        # Higher-order operators (torch.cond, checkpointing, flex_attention) are passed on as they are; a mode
        # that does not say so makes them raise.
        supports_higher_order_operators = True

        @classmethod
        def ignore_compile_internals(cls):
            return True   # torch.compile compiles as usual; the compiled artifact runs under the mode

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            if kwargs is None:
                kwargs = {}
            a = _api()
            if a is None or (_cuda_only and not _on_gpu(args, kwargs)):
                return func(*args, **kwargs)
            try:
                op = _op_of(func)
                named = _bind(op, args, kwargs)
                text, problem = _note_for(op, named)
                with_buffers = getattr(a, "op_begin_buffers", None)
                buffers = _buffers_for(named) if with_buffers is not None else ""
                if buffers:
                    opened = with_buffers(_enc(op.name), _enc(text), _enc(problem), _enc(buffers)) == 0
                else:
                    opened = a.op_begin(_enc(op.name), _enc(text), _enc(problem)) == 0
            except Exception as e:  # noqa: BLE001 - the operator runs whatever happens here
                _warn("note", "the diagnosis could not summarize an operator: %r" % (e,))
                opened = False
            try:
                return func(*args, **kwargs)
            finally:
                if opened:
                    a.op_end()

    return CulpritDiagnosis


def _ensure_torch():
    """Imports what the mode needs from an already imported torch; returns False when it cannot."""
    global _torch, _Mode
    if _Mode is not None:
        return True
    torch = sys.modules.get("torch")
    if torch is None:
        return False
    with _install_lock:
        if _Mode is None:
            try:
                _Mode = _make_mode_class(torch)
                _torch = torch
            except Exception as e:  # noqa: BLE001
                _warn("mode", "the operator diagnosis needs torch.utils._python_dispatch, which this torch "
                              "(%s) does not offer: %r" % (getattr(torch, "__version__", "?"), e))
                return False
            from torch.utils._python_dispatch import TorchDispatchMode
            if hasattr(torch, "compile") and not hasattr(TorchDispatchMode, "ignore_compile_internals"):
                _warn("compile", "torch %s cannot compile under a dispatch mode: torch.compile'd functions run "
                                 "eagerly while the diagnosis is on" % torch.__version__)
            _patch_compiled_graphs()
    return True


def active():
    """Whether the diagnosis is on in this thread."""
    return getattr(_state, "depth", 0) > 0 or threading.get_ident() in _global_mode_threads


def enter():
    """Turns the diagnosis on in this thread until the matching leave(token); a no-op (token None) when torch is
    not imported, the library is not loaded, or the diagnosis is already on here."""
    if "torch" not in sys.modules or _api() is None:
        return None
    if active():
        _state.depth = getattr(_state, "depth", 0) + 1
        return ("nested", threading.get_ident())
    if not _ensure_torch():
        return None
    try:
        mode = _Mode()
        mode.__enter__()
    except Exception as e:  # noqa: BLE001
        _warn("enter", "the operator diagnosis could not start: %r" % (e,))
        return None
    global _scopes_open
    _state.depth = 1
    _scopes_open += 1
    return (mode, threading.get_ident())


def leave(token):
    """Ends what enter() began (in the thread that began it)."""
    if token is None:
        return
    what, tid = token
    if tid != threading.get_ident():
        _warn("thread", "a diagnosis scope was closed on another thread than the one that opened it; the "
                        "diagnosis stays on in the opening thread")
        return
    _state.depth = max(0, getattr(_state, "depth", 0) - 1)
    if what == "nested":
        return
    global _scopes_open
    _scopes_open = max(0, _scopes_open - 1)
    try:
        from torch.utils._python_dispatch import _get_current_dispatch_mode
        if _get_current_dispatch_mode() is what:
            what.__exit__(None, None, None)
        else:
            _warn("order", "another dispatch mode opened inside a diagnosis scope is still open; the diagnosis "
                           "stays on in this thread")
    except Exception as e:  # noqa: BLE001
        _warn("leave", "the operator diagnosis could not stop: %r" % (e,))


def _start_for_program():
    """The whole-program diagnosis (culprit run --diagnose): on in the thread that imported torch, for good."""
    if threading.get_ident() in _global_mode_threads:
        return
    if _api() is None:
        a = _lib.api()
        if a is not None and not a.has_ops:
            _warn("lib", "the preloaded libculprit.so has no operator notes (an older build): no diagnosis")
        return
    if not _ensure_torch():
        return
    try:
        mode = _Mode()
        mode.__enter__()
    except Exception as e:  # noqa: BLE001
        _warn("enter", "the operator diagnosis could not start: %r" % (e,))
        return
    _global_mode_threads.add(threading.get_ident())


# ---- compiled graphs ------------------------------------------------------------------------------------------


def _patch_compiled_graphs():
    """Once torch._inductor's output code is imported, wraps CompiledFxGraph.__call__ so that the launches of a
    compiled graph are attributed to it, with a summary of the graph's inputs."""
    mod = sys.modules.get("torch._inductor.output_code")
    if mod is None:
        _after_import("torch._inductor.output_code", lambda m: _patch_compiled_graphs())
        return
    cls = getattr(mod, "CompiledFxGraph", None)
    call = getattr(cls, "__call__", None) if cls is not None else None
    if call is None or getattr(call, "_culprit", False):
        return

    def __call__(self, inputs, *rest, **kw):
        a = _api()
        if a is None or not (_global_mode_threads or _scopes_open):
            return call(self, inputs, *rest, **kw)
        opened = False
        try:
            gid = getattr(self, "fx_kwargs", {}).get("graph_id")
            name = "compiled graph %s" % (gid if gid is not None else hex(id(self)))
            region = getattr(self, "compile_region_name", None)
            if region:
                name += " (%s)" % region
            items = list(inputs)[:_MAX_ARGS]
            text = "inputs: " + ", ".join(describe(_summary(x, want_range=True)) for x in items)
            if len(inputs) > _MAX_ARGS:
                text += ", ... (%d inputs)" % len(inputs)
            opened = a.op_begin(_enc(name), _enc(text), b"") == 0
        except Exception as e:  # noqa: BLE001
            _warn("graph", "the diagnosis could not summarize a compiled graph: %r" % (e,))
        try:
            return call(self, inputs, *rest, **kw)
        finally:
            if opened:
                a.op_end()

    __call__._culprit = True
    __call__.__wrapped__ = call
    try:
        cls.__call__ = __call__
    except Exception:
        pass


# ---- waiting for an import ------------------------------------------------------------------------------------

_waiting = {}   # module name -> callbacks run once it has been imported


class _ImportWatch:
    """A meta path finder that finds nothing itself: when a watched module is about to be imported, it lets the
    other finders find it and wraps the loader so that the callbacks run right after the module executed."""

    def find_spec(self, fullname, path=None, target=None):
        if fullname not in _waiting:
            return None
        import importlib.util
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            try:
                spec = finder.find_spec(fullname, path, target)
            except Exception:
                continue
            if spec is not None and spec.loader is not None and hasattr(spec.loader, "exec_module"):
                spec.loader = _Loader(spec.loader, fullname)
                return spec
            if spec is not None:
                return spec
        return None


class _Loader:
    def __init__(self, real, name):
        self._real = real
        self._name = name

    def create_module(self, spec):
        return self._real.create_module(spec)

    def exec_module(self, module):
        # The module's own loader is put back, so nothing of the watch stays visible on it.
        try:
            module.__spec__.loader = self._real
            module.__loader__ = self._real
        except Exception:
            pass
        self._real.exec_module(module)
        for cb in _waiting.pop(self._name, []):
            try:
                cb(module)
            except Exception as e:  # noqa: BLE001 - an import must succeed whatever culprit does after it
                _warn("after:" + self._name, "could not set up after importing %s: %r" % (self._name, e))

    def __getattr__(self, name):
        return getattr(self._real, name)


_watch = _ImportWatch()


def _after_import(name, callback):
    """Runs callback(module) now if name is imported, else right after it is."""
    mod = sys.modules.get(name)
    if mod is not None:
        callback(mod)
        return
    _waiting.setdefault(name, []).append(callback)
    if _watch not in sys.meta_path:
        sys.meta_path.insert(0, _watch)


def install():
    """The whole-program diagnosis: on as soon as torch is imported (now, if it already is)."""
    if os.environ.get("CULPRIT_DIAGNOSE", "1") == "0":
        return
    _after_import("torch", lambda m: _start_for_program())
