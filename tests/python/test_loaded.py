"""With libculprit.so preloaded: scopes change the library's mode, nest, restore the previous mode (also on
exceptions), work as decorators, and keep the process-wide stack right across threads."""

import json


def run_json(run_py, code, warnings_ok=False, **kw):
    r = run_py(code, **kw).ok()
    if not warnings_ok:
        assert "CulpritWarning" not in r.err, r.err
    return json.loads(r.out.splitlines()[-1]), r


def test_state(run_py):
    res, r = run_json(run_py, """
        import json, culprit
        print(json.dumps([culprit.loaded(), culprit.status(), culprit.mode(), culprit.depth(), culprit.launches(),
                          culprit.last_report(), culprit.last_report_path()]))
    """)
    assert res == [True, "active", "record", 0, 0, None, None]


def test_configured_mode(run_py):
    res, _ = run_json(run_py, """
        import json, culprit
        print(json.dumps([culprit.mode(), culprit.depth()]))
    """, env={"CULPRIT_MODE": "blocking"})
    assert res == ["blocking", 0]


def test_configured_precise_mode(run_py):
    res, _ = run_json(run_py, """
        import json, culprit
        print(json.dumps([culprit.mode(), culprit.depth()]))
    """, env={"CULPRIT_MODE": "precise"})
    assert res == ["precise", 0]


def test_precise_scope(run_py):
    res, _ = run_json(run_py, """
        import json, culprit
        seen = [culprit.mode()]
        with culprit.precise():
            seen.append(culprit.mode())
        seen.append(culprit.mode())
        print(json.dumps(seen))
    """)
    assert res == ["record", "precise", "record"]


def test_nesting_and_exceptions(run_py):
    res, r = run_json(run_py, """
        import json, culprit
        seen = []
        def note(): seen.append((culprit.mode(), culprit.depth()))
        note()
        with culprit.blocking("*nll*") as s:
            note()
            with culprit.paused():
                note()
                with culprit.recording():
                    note()
                note()
            note()
        note()
        try:
            with culprit.blocking():
                with culprit.paused():
                    note()
                    raise ZeroDivisionError
        except ZeroDivisionError:
            note()
        seen.append(repr(s))
        seen.append(list(s.launches))
        print(json.dumps(seen))
    """)
    assert res[:-2] == [["record", 0], ["blocking", 1], ["off", 2], ["record", 3], ["off", 2], ["blocking", 1],
                        ["record", 0], ["off", 2], ["record", 0]]
    assert res[-2] == "culprit.blocking(kernels='*nll*', launches=(1, None))"
    assert res[-1] == [1, None]
    assert "culprit:" not in r.err


def test_decorators(run_py):
    res, _ = run_json(run_py, """
        import asyncio, json, culprit
        seen = []

        @culprit.blocking
        def bare():
            seen.append(("bare", culprit.mode(), culprit.depth()))

        @culprit.paused()
        def fails():
            seen.append(("fails", culprit.mode()))
            raise RuntimeError("x")

        scope = culprit.blocking(kernels="k*", launches=(5, 9))
        @scope
        def recurse(n):
            seen.append(("recurse", culprit.mode(), culprit.depth()))
            return recurse(n - 1) if n else 0

        @culprit.blocking()
        def gen():
            seen.append(("gen", culprit.mode()))
            yield 1
            seen.append(("gen", culprit.mode()))
            yield 2

        @culprit.paused()
        async def coro():
            seen.append(("coro", culprit.mode()))
            await asyncio.sleep(0)
            seen.append(("coro", culprit.mode()))
            return 5

        bare()
        try:
            fails()
        except RuntimeError:
            seen.append(("after", culprit.mode(), culprit.depth()))
        recurse(2)
        seen.append(("list", list(gen())))
        seen.append(("coro result", asyncio.run(coro())))
        seen.append(("end", culprit.mode(), culprit.depth(), bare.__name__, recurse.__name__))
        print(json.dumps(seen))
    """)
    assert [tuple(x) for x in res] == [
        ("bare", "blocking", 1), ("fails", "off"), ("after", "record", 0),
        ("recurse", "blocking", 1), ("recurse", "blocking", 2), ("recurse", "blocking", 3),
        ("gen", "blocking"), ("gen", "blocking"), ("list", [1, 2]),
        ("coro", "off"), ("coro", "off"), ("coro result", 5),
        ("end", "record", 0, "bare", "recurse")]


def test_threads_close_out_of_order(run_py):
    # A opens blocking, B opens paused on top, A closes first: B's scope must stay in force, then B closes.
    res, _ = run_json(run_py, """
        import json, threading, culprit
        seen = []
        a_in, b_in, a_out = threading.Event(), threading.Event(), threading.Event()
        def a():
            with culprit.blocking():
                a_in.set(); b_in.wait()
            a_out.set()
        def b():
            a_in.wait()
            with culprit.paused():
                b_in.set(); a_out.wait()
                seen.append((culprit.mode(), culprit.depth()))
        ts = [threading.Thread(target=a), threading.Thread(target=b)]
        [t.start() for t in ts]; [t.join() for t in ts]
        seen.append((culprit.mode(), culprit.depth()))
        print(json.dumps(seen))
    """)
    assert res == [["off", 1], ["record", 0]]


def test_foreign_pushes(run_py):
    # A push through the C API left open inside a scope is popped with the scope (with a warning); a scope whose
    # frame was popped through the C API does not pop again.
    r = run_py("""
        import ctypes, json, warnings, culprit
        warnings.simplefilter("always")
        api = ctypes.CDLL(None)
        api.culprit_api_push.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_ulonglong, ctypes.c_ulonglong]
        seen = []
        with culprit.blocking():
            api.culprit_api_push(2, b"*", 1, 2**64 - 1)
            api.culprit_api_push(0, b"*", 1, 2**64 - 1)
            seen.append((culprit.mode(), culprit.depth()))
        seen.append((culprit.mode(), culprit.depth()))
        api.culprit_api_push(2, b"*", 1, 2**64 - 1)
        with culprit.blocking():
            api.culprit_api_pop()
            seen.append((culprit.mode(), culprit.depth()))
        seen.append((culprit.mode(), culprit.depth()))
        print(json.dumps(seen))
    """).ok()
    assert json.loads(r.out) == [["record", 3], ["record", 0], ["off", 1], ["off", 1]]
    assert "2 mode(s) pushed after this scope opened" in r.err
    assert "popped by someone else" in r.err


def test_stack_full(run_py):
    res, r = run_json(run_py, """
        import json, culprit
        from contextlib import ExitStack
        seen = []
        with ExitStack() as st:
            for i in range(64):
                st.enter_context(culprit.paused())
            seen.append(culprit.depth())
            for _ in range(2):
                with culprit.blocking():  # runs, in the mode in force, with one warning
                    seen.append([culprit.mode(), culprit.depth()])
            seen.append(culprit.depth())
        seen.append(culprit.depth())
        print(json.dumps(seen))
    """, warnings_ok=True)
    assert res == [64, ["off", 64], ["off", 64], 64, 0]
    assert r.err.count("mode stack is full") == 1, r.err


def test_scopes_never_break_the_program(run_py):
    # -W error turns warnings into exceptions; a generator's block left on another thread; an async callable
    # that is not an async function; 80 concurrent tasks in a decorated async function; @paused bare.
    res, r = run_json(run_py, """
        import asyncio, json, threading, warnings, culprit
        warnings.simplefilter("error")
        seen = []

        def gen():
            with culprit.blocking():
                yield culprit.mode()
                raise KeyError("mine")
        g = gen()
        seen.append(next(g))
        box = []
        def finish():
            try:
                next(g)
            except KeyError as e:
                box.append("KeyError " + str(e))
        t = threading.Thread(target=finish)
        t.start()
        t.join()
        seen += box + [culprit.mode(), culprit.depth()]

        class Job:
            async def __call__(self):
                await asyncio.sleep(0)
                return culprit.mode()
        seen.append(asyncio.run(culprit.blocking()(Job())()))

        @culprit.paused()
        async def task(i):
            await asyncio.sleep(0.01)
            return i
        async def many():
            return await asyncio.gather(*(task(i) for i in range(80)))
        seen.append(sum(asyncio.run(many())))
        seen.append(culprit.depth())

        @culprit.paused
        def bare():
            return culprit.mode()
        seen += [bare(), culprit.mode()]
        print(json.dumps(seen))
    """, warnings_ok=True)
    assert res == ["blocking", "KeyError 'mine'", "record", 0, "blocking", sum(range(80)), 0, "off", "record"], r.err
    assert r.err.count("mode stack is full") == 1, r.err


def test_main_diagnostic(run_py):
    r = run_py(args=["-m", "culprit"])
    assert r.rc == 0, r.err
    assert "library loaded and active" in r.out
    assert "mode: record (0 pushed)" in r.out
    assert "last report: none" in r.out


def test_many_threads(run_py):
    # Threads open and close nested scopes in any interleaving (each sees the mode of the latest scope any thread
    # opened); no scope loses track of its frame, and at the end the stack is back to the configured mode.
    # (Few enough pushes for the library's frame cycling: see test_long_run.py.)
    res, _ = run_json(run_py, """
        import json, random, threading, time, warnings, culprit
        warnings.simplefilter("error")
        errors = []
        def work(seed):
            rnd = random.Random(seed)
            try:
                for i in range(4):
                    with culprit.blocking() if i % 2 else culprit.paused():
                        with culprit.recording():
                            time.sleep(rnd.random() / 1000)
                        time.sleep(rnd.random() / 1000)
            except Exception as e:
                errors.append(repr(e))
        ts = [threading.Thread(target=work, args=(s,)) for s in range(4)]
        [t.start() for t in ts]; [t.join() for t in ts]
        print(json.dumps([errors, culprit.mode(), culprit.depth()]))
    """)
    assert res == [[], "record", 0]


def test_fork_drops_other_threads_scopes(run_py):
    # A thread holds a blocking scope while the main thread (inside a paused scope) forks: the child keeps the
    # forking thread's scope and not the other thread's, whose thread does not exist there.
    res, r = run_json(run_py, """
        import json, os, threading, culprit
        opened, done = threading.Event(), threading.Event()
        def hold():
            with culprit.blocking():
                opened.set()
                done.wait()
        t = threading.Thread(target=hold)
        t.start()
        opened.wait()
        with culprit.paused():
            rd, wr = os.pipe()
            pid = os.fork()
            if pid == 0:
                os.write(wr, json.dumps([culprit.mode(), culprit.depth()]).encode())
                os._exit(0)
            os.close(wr)
            child = json.loads(os.read(rd, 1000))
            os.waitpid(pid, 0)
            parent = [culprit.mode(), culprit.depth()]
        done.set()
        t.join()
        print(json.dumps([child, parent, culprit.mode(), culprit.depth()]))
    """)
    assert res == [["off", 1], ["off", 2], "record", 0], r.err


def test_scope_finished_by_the_garbage_collector(run_py):
    # Decorated generators left suspended inside reference cycles are finished by the collector, which (with a
    # threshold of 1) runs in the middle of other scopes' pushes and pops: the stack must still come out right.
    res, r = run_json(run_py, """
        import gc, json, culprit

        @culprit.blocking
        def gen():
            yield culprit.mode()
            yield 2

        seen = set()
        gc.set_threshold(1)
        for i in range(300):
            g = gen()
            seen.add(next(g))
            cycle = [g]
            cycle.append(cycle)  # only the collector frees g now
            del g, cycle
            with culprit.paused():
                seen.add(culprit.mode())
                with culprit.recording():
                    pass
        gc.set_threshold(700)
        gc.collect()
        print(json.dumps([sorted(seen), culprit.mode(), culprit.depth()]))
    """)
    assert res == [["blocking", "off"], "record", 0], r.err


def test_pop_inside_a_change_waits(run_py):
    # What the collector does when it finishes a decorated generator while this thread is changing the frames:
    # the pop arrives inside the change. It must wait until the change is done, then happen.
    res, r = run_json(run_py, """
        import json, culprit
        s = culprit.blocking()
        s.__enter__()
        frame = culprit._frames[-1]
        with culprit._changing():
            culprit._pop(frame)
            inside = [culprit.mode(), culprit.depth()]
        after = [culprit.mode(), culprit.depth()]
        s.__exit__(None, None, None)  # the scope's own exit finds its frame gone and does nothing more
        print(json.dumps([inside, after, culprit.mode(), culprit.depth()]))
    """)
    assert res == [["blocking", 1], ["record", 0], "record", 0], r.err


def test_interface_mismatch(run_py):
    # A library of another interface is not called: the package runs as without it and says why once.
    r = run_py("""
        import json, culprit
        culprit._lib.API_VERSION = 99  # as if this package were of another build
        with culprit.blocking():
            inside = culprit.mode()
        print(json.dumps([culprit.status(), inside, culprit._lib.mismatch]))
    """).ok()
    assert json.loads(r.out.splitlines()[-1]) == ["absent", None, 1]
    assert r.err.count("speaks interface 1 and this package 99") == 1, r.err


def test_interface_version_agrees():
    import os
    import re
    import culprit._lib as lib
    header = os.path.join(os.path.dirname(__file__), "..", "..", "include", "culprit.h")
    with open(header) as f:
        m = re.search(r"#define CULPRIT_API_VERSION (\d+)", f.read())
    assert m and int(m.group(1)) == lib.API_VERSION
