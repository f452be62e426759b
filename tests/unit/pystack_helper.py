"""Checks culprit's Python stack capture (src/stack/pystack.c) from inside a real interpreter.

Usage: python3 pystack_helper.py path/to/libpystack_probe.so
Loads the probe twice, through ctypes.CDLL (the GIL is released around the call, as at a CUDA launch) and
ctypes.PyDLL (GIL held), calls it from nested Python code and compares the frames it reports with the
interpreter's own view and with marker comments in this file. Exit 0 pass, 1 fail, 77 skip (unsupported Python).
It is not a benchmark; the cost it prints is a rough figure.
"""
import ctypes
import gc
import inspect
import os
import sys
import threading

HERE = __file__  # what the interpreter records as this file's co_filename
FAILS = []


def marker_line(tag, source=None):
    """Line number of the line carrying the comment '# @tag' in source (default: this file)."""
    if source is None:
        with open(__file__, encoding="utf-8") as f:
            source = f.read()
    hits = [i + 1 for i, text in enumerate(source.splitlines()) if text.rstrip().endswith("# @" + tag)]
    if len(hits) != 1:
        raise RuntimeError("marker @%s found %d times" % (tag, len(hits)))
    return hits[0]


def func_name(code):
    """What pystack should report as the function: the qualified name where the version has one."""
    return getattr(code, "co_qualname", code.co_name)


class Probe:
    def __init__(self, lib, label):
        self.lib = lib
        self.label = label
        lib.pystack_probe.argtypes = [ctypes.c_char_p, ctypes.c_int]
        lib.pystack_probe.restype = ctypes.c_int
        lib.pystack_probe_keep.restype = ctypes.c_int
        lib.pystack_probe_describe_kept.argtypes = [ctypes.c_char_p, ctypes.c_int]
        lib.pystack_probe_describe_kept.restype = ctypes.c_int
        lib.pystack_probe_status.restype = ctypes.c_char_p
        lib.pystack_probe_bench.argtypes = [ctypes.c_int]
        lib.pystack_probe_bench.restype = ctypes.c_double
        lib.pystack_probe_frees.restype = ctypes.c_ulonglong
        lib.pystack_probe_signal_storm.argtypes = [ctypes.c_int, ctypes.POINTER(ctypes.c_int)]
        lib.pystack_probe_signal_storm.restype = ctypes.c_int
        lib.pystack_probe_key.argtypes = [ctypes.c_char_p, ctypes.c_int, ctypes.POINTER(ctypes.c_ulonglong)]
        lib.pystack_probe_key.restype = ctypes.c_int

    def key(self):
        """(pystack_key's count, its key, the frames a capture from the same place describes)."""
        buf = ctypes.create_string_buffer(1 << 16)
        k = ctypes.c_ulonglong(0)
        n = self.lib.pystack_probe_key(buf, len(buf), ctypes.byref(k))  # @key
        if n == -2:
            raise AssertionError("%s: pystack_probe_key could not describe its capture" % self.label)
        return n, k.value, buf.value

    def take(self):
        """Captures the caller's stack; returns (pystack's frames, the interpreter's own frames), innermost first.
        The innermost frame is this function itself, stopped at the marked line."""
        buf = ctypes.create_string_buffer(1 << 16)
        # The interpreter's view of the callers, read before the call; their lines do not move during it.
        truth = [(HERE, marker_line("take"), func_name(self.take.__func__.__code__))]
        f = sys._getframe(1)
        while f is not None:
            truth.append((f.f_code.co_filename, f.f_lineno, func_name(f.f_code)))
            f = f.f_back
        n = self.lib.pystack_probe(buf, len(buf))  # @take
        if n < 0:
            raise AssertionError("%s: pystack_probe failed (%d)" % (self.label, n))
        return parse(buf.value), truth


def parse(raw):
    frames = []
    for text in raw.decode("utf-8", "replace").splitlines():
        where, func = text.rsplit(" ", 1)
        file, line = where.rsplit(":", 1)
        frames.append((file, int(line), func))
    return frames


def check(cond, what):
    if not cond:
        FAILS.append(what)
        print("FAIL: " + what)


def compare(label, got, truth, expect_inner=()):
    """got must equal the interpreter's view (up to the capture limit); expect_inner lists (index, line, func)
    facts known independently from markers."""
    want = truth[: len(got)]
    check(len(got) > 0, "%s: no frames captured" % label)
    check(len(got) == min(len(truth), 24), "%s: %d frames, expected %d" % (label, len(got), min(len(truth), 24)))
    for i, (g, w) in enumerate(zip(got, want)):
        if g != w:
            check(False, "%s: frame %d is %s:%d %s, expected %s:%d %s" % ((label, i) + g + w))
            break
    for i, line, func in expect_inner:
        if i < len(got):
            check(got[i][1:] == (line, func),
                  "%s: frame %d is line %d %s, expected line %d %s" % (label, i, got[i][1], got[i][2], line, func))


# ---- scenarios: each calls probe.take() at a marked line and returns what came back ----

def plain(p):
    return p.take()  # @plain


def nested_outer(p):
    return nested_inner(p)  # @nested_outer


def nested_inner(p):
    return plain(p)  # @nested_inner


class Klass:
    def method(self, p):
        return p.take()  # @method


def via_lambda(p):
    fn = lambda: p.take()  # @lambda
    return fn()  # @lambda_call


def via_generator(p):
    def gen():
        yield p.take()  # @generator
    return next(gen())  # @generator_call


def via_builtin(p):
    # map() is C: the callback's frame is entered from a nested evaluation loop.
    return list(map(lambda _: p.take(), [0]))[0]  # @builtin


async def coro(p):
    return p.take()  # @coro


def via_coroutine(p):
    c = coro(p)
    try:
        c.send(None)  # @coro_send
    except StopIteration as stop:
        return stop.value
    raise AssertionError("coroutine did not finish")


def recurse(p, depth):
    if depth == 0:
        return p.take()  # @recurse_leaf
    return recurse(p, depth - 1)  # @recurse


EXEC_SOURCE = """
def exec_outer(p):
    return exec_inner(p)  # @exec_outer

def exec_inner(p):
    return p.take()  # @exec_inner
"""
EXEC_FILE = "<fake-dir/fake_module.py>"


def run_scenarios(p):
    label = p.label
    got, truth = plain(p)
    compare(label + " plain", got, truth,
            [(0, marker_line("take"), func_name(Probe.take.__code__)),
             (1, marker_line("plain"), "plain")])
    check(got and got[0][0] == HERE, "%s: innermost file %r, expected %r" % (label, got and got[0][0], HERE))

    got, truth = nested_outer(p)
    compare(label + " nested", got, truth, [(1, marker_line("plain"), "plain"),
                                            (2, marker_line("nested_inner"), "nested_inner"),
                                            (3, marker_line("nested_outer"), "nested_outer")])

    got, truth = Klass().method(p)
    compare(label + " method", got, truth, [(1, marker_line("method"), func_name(Klass.method.__code__))])

    got, truth = via_lambda(p)
    lam = [c for c in via_lambda.__code__.co_consts if inspect.iscode(c)][0]
    compare(label + " lambda", got, truth, [(1, marker_line("lambda"), func_name(lam)),
                                            (2, marker_line("lambda_call"), "via_lambda")])

    got, truth = via_generator(p)
    gen = [c for c in via_generator.__code__.co_consts if inspect.iscode(c)][0]
    compare(label + " generator", got, truth, [(1, marker_line("generator"), func_name(gen)),
                                               (2, marker_line("generator_call"), "via_generator")])

    got, truth = via_builtin(p)
    lam = [c for c in via_builtin.__code__.co_consts if inspect.iscode(c)][0]
    compare(label + " builtin callback", got, truth, [(1, marker_line("builtin"), func_name(lam)),
                                                      (2, marker_line("builtin"), "via_builtin")])

    got, truth = via_coroutine(p)
    compare(label + " coroutine", got, truth, [(1, marker_line("coro"), "coro"),
                                               (2, marker_line("coro_send"), "via_coroutine")])

    got, truth = recurse(p, 40)
    compare(label + " recursion", got, truth, [(1, marker_line("recurse_leaf"), "recurse")] +
            [(i, marker_line("recurse"), "recurse") for i in range(2, 24)])

    ns = {}
    exec(compile(EXEC_SOURCE, EXEC_FILE, "exec"), ns)
    got, truth = ns["exec_outer"](p)
    compare(label + " exec", got, truth, [(1, marker_line("exec_inner", EXEC_SOURCE), "exec_inner"),
                                          (2, marker_line("exec_outer", EXEC_SOURCE), "exec_outer")])
    check(len(got) > 2 and got[1][0] == EXEC_FILE, "%s exec: file %r, expected %r" %
          (label, got[1][0] if len(got) > 1 else None, EXEC_FILE))


def second_thread(p):
    """A call from a second thread while the main thread runs Python (and so holds the GIL most of the time):
    the capture must show the calling thread's frames, not the GIL holder's."""
    result = {}
    stop = threading.Event()

    def thread_body():
        try:
            result["frames"] = thread_inner(p)  # @thread_body
        finally:
            stop.set()

    t = threading.Thread(target=thread_body)
    t.start()
    spins = 0
    while not stop.is_set():  # the main thread keeps executing bytecode meanwhile
        spins += 1
    t.join()
    got, truth = result["frames"]
    compare(p.label + " thread", got, truth, [(1, marker_line("thread_inner"), "thread_inner"),
                                              (2, marker_line("thread_body"), func_name(thread_body.__code__))])
    check(all(f[2] != "second_thread" for f in got), p.label + " thread: main thread's frames leaked in")


def many_threads(p, nthreads=6, nfuncs=150):
    """Threads racing to remember new code objects: every capture must still describe its own frames."""
    src = "def fresh_%d_%d(p):\n    return p.take()\n"
    errors = []

    def body(t):
        for i in range(nfuncs):
            ns = {}
            name = "fresh_%d_%d" % (t, i)
            exec(compile(src % (t, i), "<race-%d-%d>" % (t, i), "exec"), ns)
            got, truth = ns[name](p)
            if len(got) < 2 or got[1] != ("<race-%d-%d>" % (t, i), 2, name) or got != truth[: len(got)]:
                errors.append((t, i, got[:2]))
                return

    threads = [threading.Thread(target=body, args=(t,)) for t in range(nthreads)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    check(not errors, "%s threads: wrong frames %r" % (p.label, errors[:3]))


def thread_inner(p):
    return p.take()  # @thread_inner


def kept_after_free(p):
    """Capture now, free the code objects, describe later: pystack must use its own copies."""
    src = "def gone_function(lib):\n    return lib.pystack_probe_keep()  # @gone\n"
    ns = {}
    exec(compile(src, "<gone-file>", "exec"), ns)
    n = ns["gone_function"](p.lib)
    del ns
    gc.collect()
    # Make and drop many code objects so the freed addresses are likely reused.
    for i in range(2000):
        exec(compile("def f%d(x):\n    return x + %d\n" % (i, i), "<churn>", "exec"), {})
    buf = ctypes.create_string_buffer(1 << 16)
    m = p.lib.pystack_probe_describe_kept(buf, len(buf))
    got = parse(buf.value)
    check(n == m and n >= 2, "%s kept: captured %d, described %d" % (p.label, n, m))
    if got:
        check(got[0] == ("<gone-file>", marker_line("gone", src), "gone_function"),
              "%s kept: innermost is %r" % (p.label, got[0]))


CHURN_SOURCE = "def churn_fn(p):\n    return p.take()  # @churn\n"


def churn_call(fn, p):
    return fn(p)  # @churn_call


def churned_code(p):
    """Code objects made, called from one place (so their frames sit at one address) and freed, over and over:
    a freed code object's address is soon another's, and each capture must name the code running now."""
    wrong = []
    for i in range(300):
        ns = {}
        exec(compile(CHURN_SOURCE, "<churn-%d>" % i, "exec"), ns)
        got, truth = churn_call(ns["churn_fn"], p)
        if len(got) < 2 or got[1][0] != "<churn-%d>" % i:
            wrong.append((i, got[1] if len(got) > 1 else None))
        del ns, got, truth
        gc.collect()
    check(not wrong, "%s churned code: %d of 300 captures named another code object, e.g. %r" %
          (p.label, len(wrong), wrong[:3]))


def alternate_a(p):
    return p.take()  # @alt_a


def alternate_b(p):
    first = p.take()  # @alt_b1
    return first, p.take()  # @alt_b2


def memo_repeats(p):
    """The same code objects met again and again, from different lines, as a training loop's launches do: each
    thread remembers them by address while none is freed, and every capture must still be exact."""
    gc.collect()
    frees0 = p.lib.pystack_probe_frees()
    for i in range(200):
        got, truth = alternate_a(p)
        compare("%s memo a %d" % (p.label, i), got, truth, [(1, marker_line("alt_a"), "alternate_a")])
        (got1, truth1), (got2, truth2) = alternate_b(p)
        compare("%s memo b1 %d" % (p.label, i), got1, truth1, [(1, marker_line("alt_b1"), "alternate_b")])
        compare("%s memo b2 %d" % (p.label, i), got2, truth2, [(1, marker_line("alt_b2"), "alternate_b")])
        got, truth = recurse(p, i % 30)
        compare("%s memo recursion %d" % (p.label, i), got, truth)
        if FAILS:
            return
    # Nothing made or freed code meanwhile, so nothing was counted (the memo stayed valid the whole time).
    check(p.lib.pystack_probe_frees() == frees0,
          "%s memo: %d code objects counted as freed in a loop that freed none"
          % (p.label, p.lib.pystack_probe_frees() - frees0))


def key_a(p):
    return p.key()  # @key_a


def key_b(p):
    return p.key()  # @key_b


def key_recurse(p, depth):
    return key_recurse(p, depth - 1) if depth else p.key()  # @key_rec


def keys_name_frames(p):
    """pystack_key, which a launch uses to find the chain it kept for the same frames: equal keys always mean the
    same frames (a capture from the same place describes them alike), different frames different keys, and a
    freed code object changes every key (its address may come back as another's)."""
    seen = {}
    for i in range(300):
        for n, key, frames in (key_a(p), key_b(p), key_recurse(p, i % 23), key_recurse(p, 30)):
            check(n > 0, "%s key: pystack_key found no frames (%d)" % (p.label, n))
            check(seen.setdefault(key, frames) == frames, "%s key %x names two different stacks:\n%s\n%s"
                  % (p.label, key, seen.get(key, b"").decode(), frames.decode()))
        if FAILS:
            return
    by_frames = {}
    for key, frames in seen.items():
        by_frames.setdefault(frames, set()).add(key)
    check(all(len(k) == 1 for k in by_frames.values()), "%s key: the same stack got several keys" % p.label)
    # 23 recursion depths (capped at 24 frames), the deep one, and two sites: every stack seen has its own key
    check(len(seen) >= 20, "%s key: only %d distinct keys for the stacks of the loop" % (p.label, len(seen)))
    got = []
    for i in range(2):
        got.append(key_a(p))  # the same frames both times
        ns = {}
        exec(compile("def short_lived(x):\n    return x\n", "<short-lived-key>", "exec"), ns)
        del ns
        gc.collect()
    check(got[0][2] == got[1][2] and got[0][1] != got[1][1],
          "%s key: a freed code object must change the key of the same frames" % p.label)


def frees_counted(p):
    """Freeing a code object is counted: that is what makes every thread's memo stale."""
    gc.collect()
    before = p.lib.pystack_probe_frees()
    ns = {}
    exec(compile("def short_lived(x):\n    return x\n", "<short-lived>", "exec"), ns)
    del ns
    gc.collect()
    after = p.lib.pystack_probe_frees()
    check(after >= before + 2, "%s frees: %d -> %d after freeing a module's and a function's code"
          % (p.label, before, after))


def signal_storm_inner(p, caught):
    return p.lib.pystack_probe_signal_storm(50, ctypes.byref(caught))  # @storm


def signal_storm(p):
    """A profiling timer's handler capturing on top of captures in progress (the memo is busy then): all
    captures, the interrupted ones and the handler's, must be the same frames."""
    caught = ctypes.c_int(0)
    bad = signal_storm_inner(p, caught)
    check(bad == 0, "%s signal storm: %d captures differed (handler captured %d times)" % (p.label, bad, caught.value))
    check(caught.value >= 50, "%s signal storm: the handler captured %d times, wanted 50" % (p.label, caught.value))


def forked_child(p):
    """A child forked after captures (its memo and the count come from the parent): still exact there."""
    failed_before = len(FAILS)
    pid = os.fork()
    if pid == 0:
        try:
            memo_repeats(p)
            churned_code(p)
        finally:
            sys.stdout.flush()
            os._exit(1 if len(FAILS) > failed_before else 0)
    _, status = os.waitpid(pid, 0)
    check(os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0, "%s fork: the child's captures failed (see above)"
          % p.label)


def main():
    if len(sys.argv) != 2:
        print("usage: pystack_helper.py libpystack_probe.so")
        return 1
    cdll = Probe(ctypes.CDLL(sys.argv[1]), "CDLL")
    status = cdll.lib.pystack_probe_status().decode()
    print("pystack status: %s (running %s)" % (status, sys.version.split()[0]))
    if "not supported" in status:
        print("SKIP: " + status)
        return 77
    if not status.startswith("CPython %d.%d" % sys.version_info[:2]):
        print("FAIL: status %r does not match the running interpreter" % status)
        return 1
    pydll = Probe(ctypes.PyDLL(sys.argv[1]), "PyDLL")
    for p in (cdll, pydll):
        run_scenarios(p)
        churned_code(p)
        second_thread(p)
        many_threads(p)
        memo_repeats(p)
        signal_storm(p)
        keys_name_frames(p)
    frees_counted(cdll)
    forked_child(cdll)
    kept_after_free(cdll)
    cdll.lib.pystack_probe_c_thread.restype = ctypes.c_int
    n = cdll.lib.pystack_probe_c_thread()
    check(n == 0, "native thread without Python: %d frames, expected 0" % n)
    cost = recurse_bench(cdll, 18)
    print("capture of ~20 frames: %.0f ns" % cost)
    if FAILS:
        print("%d failed" % len(FAILS))
        return 1
    print("all pystack checks passed")
    return 0


def recurse_bench(p, depth):
    if depth == 0:
        return p.lib.pystack_probe_bench(200000)
    return recurse_bench(p, depth - 1)


if __name__ == "__main__":
    sys.exit(main())
