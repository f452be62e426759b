"""The one line at exit when blocking mode made a run much slower than needed: blocking scopes (matching every
kernel) covered more than half of more than 1000 launches, or blocking mode was still on at exit."""

import re

import pytest

PREFIX = "culprit: blocking mode"

LAUNCHER = """
import ctypes, culprit, fakegpu
gpu = fakegpu.Gpu()
K = gpu.kernels("k1", "k2")
def launch(n, name="k1"):
    for _ in range(n):
        assert gpu.launch(K[name]) == 0
"""


def exit_lines(r):
    r.ok()
    return r.culprit_lines(PREFIX)


def test_most_launches_blocking(run_py):
    r = run_py(LAUNCHER + """
launch(300)
with culprit.blocking():
    launch(1200)
""")
    lines = exit_lines(r)
    assert lines == ["culprit: blocking mode covered 80% of the 1500 kernel launches of this run; it synchronizes "
                     "after each of them, so this run was much slower than it needed to be; narrow it with "
                     "culprit.blocking(kernels=..., launches=...)"]


def test_decorated_steps_add_up(run_py):
    r = run_py(LAUNCHER + """
@culprit.blocking()
def step():
    launch(10)
for _ in range(150):
    step()
    launch(2)
""")
    lines = exit_lines(r)
    assert len(lines) == 1 and "covered 83% of the 1800 kernel launches" in lines[0]


@pytest.mark.parametrize("body", [
    # short run
    """
with culprit.blocking():
    launch(900)
""",
    # less than half
    """
launch(700)
with culprit.blocking():
    launch(600)
""",
    # a kernel filter: only matching launches synchronize, not counted
    """
with culprit.blocking("k1"):
    launch(1500)
""",
    # record and off scopes inside a blocking one do not count
    """
with culprit.blocking():
    launch(500)
    with culprit.recording():
        launch(700)
    with culprit.paused():
        launch(300)
""",
    # a launch window: only launches inside it count
    """
with culprit.blocking(launches=(1, 400)):
    launch(1500)
""",
], ids=["short", "under_half", "filtered", "nested_record", "window"])
def test_no_warning(run_py, body):
    assert exit_lines(run_py(LAUNCHER + body)) == []


def test_still_pushed_through_c_api(run_py):
    r = run_py(LAUNCHER + """
api = ctypes.CDLL(None)
api.culprit_api_push.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_ulonglong, ctypes.c_ulonglong]
api.culprit_api_push(1, b"*", 1, 2**64 - 1)
launch(5)
""")
    lines = exit_lines(r)
    assert len(lines) == 1 and lines[0].startswith("culprit: blocking mode was still on at exit")


def test_unfinished_generator(run_py):
    r = run_py(LAUNCHER + """
def batches():
    with culprit.blocking():
        while True:
            launch(1)
            yield
it = batches()
for _ in range(1500):
    next(it)
""")
    lines = exit_lines(r)
    assert len(lines) == 1
    assert re.match(r"culprit: blocking mode covered 100% of the 1500 kernel launches .*"
                    r"\(and it was still on at exit: a scope was never closed\)", lines[0]), lines[0]


def test_configured_blocking_is_not_blamed(run_py):
    # CULPRIT_MODE=blocking is the user's explicit choice for the whole run.
    r = run_py(LAUNCHER + "launch(1500)\n", env={"CULPRIT_MODE": "blocking"})
    assert exit_lines(r) == []
