"""culprit for Python programs: scoped control of the preloaded culprit library and access to its report.

culprit names the CUDA kernel that really failed. It lives in a C library that `culprit run` preloads into the
program; this package only talks to that library (through ctypes) and never loads it. Importing it never fails,
and without the library every scope below does nothing (it warns once), so the same program runs with or
without culprit:

    $ culprit run -- python train.py

    import culprit

    with culprit.blocking("*nll_loss*"):     # synchronize after each matching launch: exact, slow
        loss = criterion(out, target)

    @culprit.blocking(launches=range(1200, 1300))
    def step(batch):
        ...

    with culprit.paused():                    # don't record this region (errors are still reported)
        warmup()

    culprit.mode()          # "record", "precise", "blocking", "off", or None without the library
    culprit.last_report()   # the report (a dict) after a CUDA error, or None

The mode stack is process-wide, as in the C API (include/culprit.h): a scope opened in one thread also governs
the kernels that other threads (and asyncio tasks) launch while it is open. Scopes are pushed and popped under
a lock; when threads close their scopes out of order, the scopes still open are put back, so the mode in force
is always that of the most recently opened scope that is still open.
"""

import atexit
import contextlib
import functools
import inspect
import json
import operator
import os
import sys
import threading
import warnings

from . import _lib
from . import diagnose as _diagnose

__version__ = "0.1.0"

__all__ = [
    "blocking", "paused", "recording", "precise", "diagnosing", "Scope", "mode", "loaded", "status", "depth", "launches",
    "last_report", "last_report_path", "CulpritWarning",
]


class CulpritWarning(RuntimeWarning):
    """Warned (once per process) when a scope does nothing because the library is not loaded or disabled."""


# ---- state of the library --------------------------------------------------------------------------------------


def status():
    """"active" (preloaded and working), "disabled" (preloaded, but off: CULPRIT_MODE=off or a bad CULPRIT_*
    setting) or "absent" (not preloaded).

    >>> culprit.status()
    'active'
    """
    a = _lib.api()
    if a is None:
        return "absent"
    return "active" if a.mode() >= 0 else "disabled"


def loaded():
    """True when the library is preloaded into this process and active.

    >>> if not culprit.loaded():
    ...     print("run me as: culprit run -- python train.py")
    """
    return status() == "active"


def mode():
    """The mode in force: "record", "precise", "blocking" or "off"; None when the library is not loaded or disabled.

    >>> with culprit.blocking():
    ...     culprit.mode()
    'blocking'
    """
    a = _lib.api()
    if a is None:
        return None
    return _lib.MODE_NAMES.get(a.mode())


def depth():
    """How many modes are pushed on the process-wide stack (0: the configured mode), or None without the library."""
    a = _lib.api()
    if a is None:
        return None
    d = a.depth()
    return d if d >= 0 else None


def launches():
    """Kernel launches the library has seen in this process so far, or None without the library."""
    a = _lib.api()
    if a is None or a.mode() < 0:
        return None
    return int(a.launches())


def last_report_path():
    """Path of the JSON report the library wrote in this process (after a sticky CUDA error), or None.

    >>> culprit.last_report_path()
    '/home/me/run/culprit-reports/culprit-4242.json'
    """
    return _lib.last_report_path()


def last_report():
    """The report the library wrote in this process, parsed (schema culprit.report/1, see docs/report.md), or
    None when there is none (no error yet, no library). When there is one but it cannot be read (removed,
    unreadable, not a report), this also returns None and warns (CulpritWarning) with its path and why.

    >>> try:
    ...     loss.item()
    ... except RuntimeError:
    ...     r = culprit.last_report()
    ...     if r and r["culprit"]:
    ...         print("faulted:", r["culprit"]["kernel"], "launch", r["culprit"]["seq"])
    ...     raise
    """
    path = last_report_path()
    if path is None:
        return None
    try:
        with open(path, "rb") as f:
            doc = json.loads(f.read().decode("utf-8", "replace"))
    except OSError as e:
        _warn("culprit: the report %s cannot be read: %s" % (path, e.strerror or e))
        return None
    except ValueError as e:
        _warn("culprit: %s is not a culprit report (not JSON: %s)" % (path, e))
        return None
    if not isinstance(doc, dict):
        _warn("culprit: %s is not a culprit report (JSON, but not an object)" % path)
        return None
    return doc


# ---- the mode stack -------------------------------------------------------------------------------------------


class _Frame:
    """One mode this package pushed."""

    __slots__ = ("mode", "kernels", "first", "last", "depth", "owner")

    def __init__(self, mode, kernels, first, last):
        self.mode = mode        # _lib.RECORD / BLOCKING / OFF
        self.kernels = kernels  # glob, bytes
        self.first = first      # launch window, inclusive
        self.last = last
        self.depth = 0          # its level on the library's stack once pushed (1 = first push)
        self.owner = threading.get_ident()  # the thread that opened it

    def push(self, a):
        rc = a.push(self.mode, self.kernels, self.first, self.last)
        if rc == 0:
            self.depth = a.depth()
        return rc


_lock = threading.RLock()  # guards the library's stack against interleaving by this package, and what follows
_frames = []               # frames pushed by this package and still open, oldest first
_covered = 0               # launches that ran under a blocking scope of this package that matched every kernel
_mark = 0                  # launch count when the frame in force last changed
_counting = None           # the frame in force if it counts towards _covered, else None
_warned = False            # the "scope does nothing" warning was given
_busy = threading.local()  # .on: this thread is changing the state above (under _changing())
_deferred = []             # frames whose pop came while their thread was busy, popped right after


@contextlib.contextmanager
def _changing():
    """_lock held while the frames and counters change. The garbage collector may run in there and finish a
    decorated generator of this same thread, whose pop would then change the frames halfway through a change
    (the lock is re-entrant): such a pop waits in _deferred until the change is done."""
    with _lock:
        _busy.on = True
        try:
            yield
        finally:
            _busy.on = False
    while _deferred:
        try:
            frame = _deferred.pop()
        except IndexError:  # another thread took it
            break
        _pop(frame)


def _settle(a):
    """Adds the launches since the last change of the frame in force to _covered, if that frame counts.
    Called with _lock held, before every change and at exit."""
    global _covered, _mark
    now = int(a.launches())
    f = _counting
    if f is not None:
        lo, hi = max(_mark + 1, f.first), min(now, f.last)
        if hi >= lo:
            _covered += hi - lo + 1
    _mark = now


def _retop(a):
    """Notes which frame is in force after a change (with _lock held). Only blocking frames that match every
    kernel count: a filtered one synchronizes after the launches it matches, which this package cannot see."""
    global _counting
    _counting = None
    if _frames:
        top = _frames[-1]
        if top.mode == _lib.BLOCKING and top.kernels == b"*" and top.depth == a.depth():
            _counting = top


def _caller_level():
    """warnings.warn's stacklevel for the first frame outside this package: the user's `with` or call."""
    level, f = 2, sys._getframe(1)
    while f is not None and f.f_globals.get("__name__", "").split(".")[0] == "culprit":
        level += 1
        f = f.f_back
    return level - 1


def _warn(msg):
    """Warns as CulpritWarning, at the user's line. A warnings filter that turns it into an error (python -W error,
    pytest's filterwarnings) must not stop the user's code or replace its exception: the text goes to stderr."""
    try:
        warnings.warn(msg, CulpritWarning, stacklevel=_caller_level())
    except Exception:  # noqa: BLE001 - whatever the filter raised
        try:
            sys.stderr.write("%s\n" % msg)
        except Exception:  # noqa: BLE001 - no stderr: nothing more to do
            pass


_stack_warned = False      # the "mode stack is full" warning was given


def _warn_noop(scope_name, disabled):
    global _warned
    with _lock:
        if _warned:
            return
        _warned = True
    if disabled:
        msg = ("culprit: %s does nothing: libculprit.so is loaded but disabled in this process (CULPRIT_MODE=off, "
               "or a bad CULPRIT_* setting: see the line 'culprit: ... culprit is off for this process' on stderr); "
               "the program runs normally without culprit" % scope_name)
    elif _lib.mismatch is not None:
        msg = ("culprit: %s does nothing: the libculprit.so in this process speaks interface %d and this package %d; "
               "use the Python package of the same culprit build" % (scope_name, _lib.mismatch, _lib.API_VERSION))
    else:
        argv = getattr(sys, "argv", None) or [""]
        script = " ".join(argv) if argv[0].endswith(".py") else "your_script.py"
        msg = ("culprit: %s does nothing: libculprit.so is not loaded in this process; to find the kernel that "
               "failed, run the program under culprit: culprit run -- python %s" % (scope_name, script))
    _warn(msg)


def _push(scope_name, frame):
    """Pushes frame and returns it, or returns None (after the one warning) when the library is not there or its
    mode stack is full."""
    global _stack_warned
    a = _lib.api()
    if a is None:
        _warn_noop(scope_name, disabled=False)
        return None
    with _changing():
        if a.mode() < 0:
            rc = _lib.EDISABLED
        else:
            _settle(a)
            rc = frame.push(a)
            if rc == 0:
                _frames.append(frame)
            _retop(a)
    if rc == 0:
        return frame
    if rc == _lib.EDISABLED:
        _warn_noop(scope_name, disabled=True)
        return None
    if rc == _lib.ESTACK:
        # Many scopes open at once (a pool of 64+ threads or asyncio tasks in decorated functions) or deep
        # nesting: the code still runs, in the mode already in force; failing the user's call is worse.
        with _lock:
            first, _stack_warned = not _stack_warned, True
        if first:
            _warn("culprit: %s runs without its mode: the library's mode stack is full (%d scopes open at once in "
                  "this process, or modes pushed and never popped); said once" % (scope_name, _lib.STACK_MAX))
        return None
    raise ValueError("culprit: %s: the library refused kernels=%r, launches %d..%d (error %d)"
                     % (scope_name, frame.kernels.decode("utf-8", "replace"), frame.first, frame.last, rc))


def _pop(frame):
    """Takes frame off the library's stack. It is normally on top; when a scope closes out of order (threads,
    asyncio tasks), the frames this package pushed above it are pushed again, so they stay in force. Frames pushed
    above it by others (the C API) and never popped are dropped with it, with a warning: the mode before the
    scope is what the scope promised to restore."""
    a = _lib.api()
    if a is None:
        return
    if getattr(_busy, "on", False):
        _deferred.append(frame)  # reached from the garbage collector inside a change of this thread
        return
    note = None
    with _changing():
        if frame not in _frames:
            return
        _settle(a)
        d = a.depth()
        i = _frames.index(frame)
        if d < 0 or frame.depth > d:
            # Someone popped it already (the C API, or a disabled library): forget it and whatever was above it.
            del _frames[i:]
            note = "the mode pushed by this scope was popped by someone else"
        else:
            above = _frames[i + 1:]
            npop = d - frame.depth + 1
            foreign = npop - 1 - len(above)
            for _ in range(npop):
                if a.pop() != 0:
                    break
            del _frames[i:]
            for f in above:
                if f.push(a) == 0:
                    _frames.append(f)
            if foreign > 0:
                note = ("%d mode(s) pushed after this scope opened (through the C API) were never popped; they were "
                        "popped with it" % foreign)
        _retop(a)
    if note:
        _warn("culprit: " + note)


# ---- scopes ---------------------------------------------------------------------------------------------------


def _check_kernels(kernels):
    if kernels is None:
        return b"*"
    if not isinstance(kernels, str):
        raise TypeError("culprit: kernels must be a glob string such as '*nll_loss*', not %r" % (kernels,))
    b = kernels.encode("utf-8")
    if len(b) > _lib.PATTERN_MAX or "\0" in kernels:
        raise ValueError("culprit: kernels must be a glob of at most %d bytes without NUL" % _lib.PATTERN_MAX)
    return b or b"*"


def _check_window(launches):
    """Launch window (first, last), inclusive, 1-based, from None, a range or a (first, last) pair."""
    if launches is None:
        return 1, _lib.LAUNCH_MAX
    if isinstance(launches, range):
        # (no len(): it overflows for ranges beyond 2**63)
        if launches.step != 1 or launches.stop <= launches.start or launches.start < 1 \
                or launches.stop - 1 > _lib.LAUNCH_MAX:
            raise ValueError("culprit: launches=%r: use a non-empty range with step 1 starting at 1 or later "
                             "(launch numbers count from 1, up to %d)" % (launches, _lib.LAUNCH_MAX))
        return launches.start, launches.stop - 1
    if isinstance(launches, (tuple, list)) and len(launches) == 2:
        first, last = launches
        if first is None:
            first = 1
        if last is None:
            last = _lib.LAUNCH_MAX
        if isinstance(first, bool) or isinstance(last, bool):
            raise TypeError("culprit: launches=%r: the bounds must be integers (or None)" % (launches,))
        try:  # any integer type (numpy, torch scalars) through __index__
            first, last = operator.index(first), operator.index(last)
        except TypeError:
            raise TypeError("culprit: launches=%r: the bounds must be integers (or None)" % (launches,)) from None
        if not 1 <= first <= last <= _lib.LAUNCH_MAX:
            raise ValueError("culprit: launches=%r: need 1 <= first <= last (launch numbers count from 1; both "
                             "ends are included)" % (launches,))
        return first, last
    raise TypeError("culprit: launches must be None, a range (range(100, 200): launches 100..199) or a pair "
                    "(first, last) with both ends included, not %r" % (launches,))


class Scope:
    """A mode held for a block of code: a context manager and a decorator (for plain functions, generator
    functions and async functions). Made by blocking(), paused() and recording().

    Each `with` (or call of a decorated function) pushes the mode on the library's process-wide stack and pops
    it on the way out, also when the block raises, so the mode in force before is restored exactly. Scopes nest,
    and one Scope object may be entered again while it is open (recursion, several threads).
    """

    def __init__(self, name, mode, kernels=b"*", window=(1, _lib.LAUNCH_MAX)):
        self._name = name
        self._mode = mode
        self._kernels = kernels
        self._first, self._last = window
        self._open = []  # (thread id, frame) of the `with` statements open on this object, oldest first

    @property
    def kernels(self):
        return self._kernels.decode("utf-8")

    @property
    def launches(self):
        """The launch window as (first, last), both included; last is None when open-ended."""
        return self._first, (None if self._last == _lib.LAUNCH_MAX else self._last)

    def _enter(self):
        frame = _push(self._name, _Frame(self._mode, self._kernels, self._first, self._last))
        # A blocking scope is slow anyway: it diagnoses the PyTorch operators it runs too (culprit/diagnose.py).
        token = _diagnose.enter() if frame is not None and self._mode == _lib.BLOCKING else None
        return frame, token

    @staticmethod
    def _leave(entered):
        frame, token = entered if entered is not None else (None, None)
        try:
            _diagnose.leave(token)
        finally:
            if frame is not None:
                _pop(frame)

    def __enter__(self):
        frame = self._enter()
        with _lock:
            self._open.append((threading.get_ident(), frame))
        return self

    def __exit__(self, exc_type, exc, tb):
        # The newest `with` of this thread; a generator suspended inside the block may be resumed (and the block
        # left) on another thread, and then the newest one open at all is the one closing.
        me = threading.get_ident()
        with _lock:
            k = next((i for i in range(len(self._open) - 1, -1, -1) if self._open[i][0] == me),
                     len(self._open) - 1)
            frame = self._open.pop(k)[1] if k >= 0 else None
        try:
            self._leave(frame)
        except Exception as e:  # noqa: BLE001 - never replace the block's own exception or result
            _warn("culprit: %s could not restore the previous mode: %r" % (self._name, e))
        return False

    def __call__(self, func):
        if not callable(func):
            raise TypeError("culprit: %s decorates functions, not %r" % (self._name, func))
        if inspect.iscoroutinefunction(func):
            @functools.wraps(func)
            async def run_async(*args, **kwargs):
                frame = self._enter()
                try:
                    return await func(*args, **kwargs)
                finally:
                    self._leave(frame)
            return run_async
        if inspect.isasyncgenfunction(func):
            raise TypeError("culprit: %s cannot decorate an async generator; use `with` inside it" % self._name)
        if inspect.isgeneratorfunction(func):
            # The scope stays open while the generator is suspended, until it finishes or is closed.
            @functools.wraps(func)
            def run_gen(*args, **kwargs):
                frame = self._enter()
                try:
                    return (yield from func(*args, **kwargs))
                finally:
                    self._leave(frame)
            return run_gen

        @functools.wraps(func)
        def run(*args, **kwargs):
            frame = self._enter()
            try:
                result = func(*args, **kwargs)
            finally:
                self._leave(frame)
            if inspect.isawaitable(result) and not inspect.isgenerator(result):
                # An async callable that is not an async function (an object with `async def __call__`, or one
                # wrapped by a plain decorator): the work runs when the result is awaited, so the scope holds
                # then too.
                return self._awaiting(result)
            return result
        return run

    async def _awaiting(self, awaitable):
        frame = self._enter()
        try:
            return await awaitable
        finally:
            self._leave(frame)

    def __repr__(self):
        if self._mode == _lib.BLOCKING:
            first, last = self.launches
            return "culprit.blocking(kernels=%r, launches=(%d, %s))" % (self.kernels, first, last)
        return "culprit.%s" % self._name


def _scope(name, mode, func):
    """A Scope, or func decorated with one when the scope function was used bare (@culprit.paused)."""
    scope = Scope(name, mode)
    return scope(func) if func is not None else scope


def blocking(kernels=None, launches=None):
    """Blocking mode for a block of code: after each launch of a matching kernel the library synchronizes, so
    the first launch that fails is named exactly (and the launch call itself returns the error). It is slow:
    keep it narrow, with a kernel glob or a launch window taken from an earlier report.

    kernels: a glob (fnmatch) matched against the mangled and the demangled kernel name; None or "*" for all.
    launches: None (all), range(a, b) for launches a..b-1, or a pair (first, last) with both ends included
    (last may be None). Launch numbers count from 1 over the whole process, as in the report.

    Context manager and decorator (functions, generator functions, async functions):

        with culprit.blocking("*nll_loss*"):
            loss = F.nll_loss(out, target)

        @culprit.blocking(launches=(1200, 1300))
        def train_step(batch): ...

        @culprit.blocking
        async def evaluate(model): ...

    Without the library it does nothing (warns once). At exit, when blocking scopes that matched every kernel
    covered most of a long run (or one was never closed), culprit says so once on stderr: blocking mode left on
    is the usual reason a run got much slower.
    """
    if callable(kernels) and launches is None:  # @culprit.blocking without parentheses
        return _scope("blocking()", _lib.BLOCKING, kernels)
    return Scope("blocking()", _lib.BLOCKING, _check_kernels(kernels), _check_window(launches))


def paused(func=None):
    """Mode off for a block of code: launches in it are not recorded (sticky errors are still detected and
    reported). Context manager and decorator.

        with culprit.paused():
            warmup()          # thousands of launches not worth a record
    """
    return _scope("paused()", _lib.OFF, func)


def recording(func=None):
    """Record mode (the default) for a block of code, e.g. to leave blocking mode for a part of a blocking scope.
    Context manager and decorator.

        with culprit.blocking():
            forward()
            with culprit.recording():
                logging_hooks()   # not worth a synchronize after each launch
    """
    return _scope("recording()", _lib.RECORD, func)


def precise(func=None):
    """Precise mode for a block of code: a breadcrumb after every launch (and inside graphs captured in it), so
    a fault is named exactly without a rerun, for about a microsecond per launch. Context manager and decorator.

        with culprit.precise():
            model(batch)      # the suspect region: exact names, no synchronization
    """
    return _scope("precise()", _lib.PRECISE, func)


class _Diagnosing(Scope):
    """The scope diagnosing() makes: the operator diagnosis on, the library's mode untouched."""

    def __init__(self):
        super().__init__("diagnosing()", _lib.RECORD)

    def _enter(self):
        token = _diagnose.enter()
        if token is None and "torch" in sys.modules:
            _warn_noop_diagnosis()
        return token

    @staticmethod
    def _leave(token):
        _diagnose.leave(token)

    def __repr__(self):
        return "culprit.diagnosing()"


_diag_warned = False


def _warn_noop_diagnosis():
    global _diag_warned
    if _diag_warned or _diagnose.active():
        return
    _diag_warned = True
    a = _lib.api()
    why = ("the culprit library is not loaded (run the program under culprit run)" if a is None else
           "the loaded libculprit.so has no operator notes (an older build)" if not a.has_ops else
           "the diagnosis could not start (see the line above)")
    _warn("culprit: diagnosing() does nothing: %s" % why)


def diagnosing(func=None):
    """The four-step diagnosis for a block of code, in this thread: each PyTorch operator it runs tells culprit
    its name and a summary of its arguments (shapes, dtypes, devices), and the operators behind most device
    asserts (embedding, index_select, gather, scatter, index, nll_loss, ...) have the value range of their
    index tensors read (a synchronization each) and checked against their contract. A report of a fault in it
    names the operator behind the culprit launch and says what was wrong with its arguments. Context manager
    and decorator; nothing happens without torch imported or without the library. Blocking scopes diagnose
    too; `culprit run --diagnose` diagnoses the whole program.

        with culprit.diagnosing():
            loss = criterion(model(x), y)
    """
    scope = _Diagnosing()
    return scope(func) if func is not None else scope


# ---- exit check -----------------------------------------------------------------------------------------------

_MANY_LAUNCHES = 1000  # below this, a run is too short for the cost of blocking mode to matter


def _exit_message():
    """The one line printed at exit, or None."""
    a = _lib.api()
    if a is None or a.mode() < 0:
        return None
    with _changing():
        _settle(a)
        covered = _covered
        total = int(a.launches())
        still_on = a.depth() > 0 and a.mode() == _lib.BLOCKING
    if total > _MANY_LAUNCHES and covered * 2 > total:
        msg = ("culprit: blocking mode covered %d%% of the %d kernel launches of this run; it synchronizes after "
               "each of them, so this run was much slower than it needed to be"
               % (min(100, covered * 100 // total), total))
        if still_on:
            msg += " (and it was still on at exit: a scope was never closed)"
        return msg + "; narrow it with culprit.blocking(kernels=..., launches=...)"
    if still_on:
        return ("culprit: blocking mode was still on at exit (pushed and never popped: a scope that was never "
                "closed, such as an unfinished generator, or a push through the C API without its pop); it "
                "synchronizes after each matching launch, so the run after it was much slower than it needed to be")
    return None


def _at_exit():
    try:
        msg = _exit_message()
    except Exception:
        return
    if not msg:
        return
    try:
        sys.stderr.write(msg + "\n")
        sys.stderr.flush()
    except Exception:
        try:
            os.write(2, (msg + "\n").encode("utf-8", "replace"))
        except OSError:
            pass


def _after_fork_in_child():
    # The library counts the child's launches from zero; so does the accounting.
    global _covered, _mark, _lock
    _lock = threading.RLock()  # another thread may have held it at the fork
    _covered = 0
    _mark = 0
    # Scopes opened by other threads never close here (those threads do not exist in the child): their modes
    # would stay in force for the child's whole life. The forking thread's own scopes stay.
    me = threading.get_ident()
    for f in [f for f in _frames if f.owner != me]:
        try:
            _pop(f)
        except Exception:  # noqa: BLE001 - the child must start whatever happens here
            pass


atexit.register(_at_exit)
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)
