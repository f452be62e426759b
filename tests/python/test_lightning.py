"""culprit.lightning.CulpritCallback on the stand-in Lightning (tests/python/lightning_standin: Lightning's hook
order, no torch), with the library preloaded over the simulated driver: scopes open only in the chosen phases of
the chosen batches and are always closed (culprit.mode() and culprit.depth() seen inside each phase, and after a
step that raised), the status line of each rank, the verdict attached to the exception from a real report, loggers
(and a failing one), the library absent, and bad arguments. lightning_standin/scenario/fit.py is the run."""

import importlib.util
import json
import os
import re
import sys

import pytest

from conftest import HERE, PKG_DIR, REPO

STANDIN = os.path.join(HERE, "lightning_standin")
FIT = os.path.join(STANDIN, "scenario", "fit.py")
FAULT = {"FAKECUDA_FAULT": "kernel=bad"}
TRAIN = ["training_step", "backward", "optimizer_step"]

sys.path.insert(0, STANDIN)  # for the argument tests, in this process
import lightning.pytorch as standin  # noqa: E402
from culprit import verdict  # noqa: E402
from culprit.lightning import CulpritCallback  # noqa: E402

assert standin.__version__.endswith("standin"), "the stand-in must be the Lightning these tests import"


def fit(run_py, cfg, preload=True, env=None):
    """Runs fit.py with cfg under the library (or not); returns (its JSON, the child)."""
    e = dict(FAULT)
    e.update(env or {})
    r = run_py(args=[FIT, json.dumps(cfg)], preload=preload, env=e, pythonpath=[PKG_DIR, HERE, STANDIN]).ok()
    assert "CulpritWarning" not in r.err, r.err
    return json.loads(r.out.splitlines()[-1]), r


def modes(res):
    """{(tag, batch): (mode, depth)} of what each phase saw."""
    return {(s["tag"], s["batch"]): (s["mode"], s["depth"]) for s in res["seen"]}


def fault_line():
    with open(FIT) as f:
        return next(i for i, line in enumerate(f, 1) if line.rstrip().endswith("# FAULT-LAUNCH"))


def status_lines(r):
    return [l for l in r.err.splitlines() if re.match(r"culprit: rank \S+ of \d+: ", l)]


# ---- scopes ----------------------------------------------------------------------------------------------------


def test_blocking_in_one_phase_of_one_step(run_py):
    res, r = fit(run_py, {"callback": {"blocking": "backward", "steps": [1]}, "steps": 3})
    assert res["error"] is None
    seen = modes(res)
    assert len(seen) == 9  # three phases of three batches
    for (tag, batch), got in seen.items():
        assert got == (("blocking", 1) if (tag, batch) == ("backward", 1) else ("record", 0)), (tag, batch, got)
    assert (res["mode_after"], res["depth_after"]) == ("record", 0)
    assert status_lines(r) == ["culprit: rank 0 of 1: culprit loaded, mode record; scopes: blocking in backward for "
                               "global step 1"]


def test_precise_whole_batches_by_index(run_py):
    res, _ = fit(run_py, {"callback": {"precise": "train_batch", "batches": {"range": [1, 3]}}, "steps": 4})
    seen = modes(res)
    assert {k for k, v in seen.items() if v == ("precise", 1)} == {(t, b) for t in TRAIN for b in (1, 2)}
    assert {k for k, v in seen.items() if v == ("record", 0)} == {(t, b) for t in TRAIN for b in (0, 3)}


def test_steps_and_batches_both_must_match(run_py):
    res, _ = fit(run_py, {"callback": {"blocking": "optimizer_step", "steps": {"range": [0, 2]}, "batches": [1, 2]},
                          "steps": 3})
    assert [k for k, v in modes(res).items() if v != ("record", 0)] == [("optimizer_step", 1)]


def test_validation_with_a_kernel_glob(run_py):
    res, r = fit(run_py, {"callback": {"blocking": "validation_step", "kernels": "*valid*"}, "steps": 2, "val": 2})
    seen = modes(res)
    assert {k: v for k, v in seen.items() if k[0] == "validation_step"} == {
        ("validation_step", 0): ("blocking", 1), ("validation_step", 1): ("blocking", 1)}
    assert all(v == ("record", 0) for k, v in seen.items() if k[0] != "validation_step")
    assert "scopes: blocking (kernels '*valid*') in validation_step for every batch" in status_lines(r)[0]


def test_validate_stage(run_py):
    res, r = fit(run_py, {"callback": {"precise": "validation_step", "batches": [1]}, "val": 3, "stage": "validate"})
    assert [(s["batch"], s["mode"]) for s in res["seen"]] == [(0, "record"), (1, "precise"), (2, "record")]
    assert len(status_lines(r)) == 1


def test_manual_optimization(run_py):
    # training_step resumes after manual_backward; optimizer_step runs from the step to the end of the batch
    res, _ = fit(run_py, {"callback": {"blocking": "training_step", "precise": "optimizer_step", "steps": [0]},
                          "steps": 1, "manual": True})
    assert [(s["tag"], s["mode"], s["depth"]) for s in res["seen"]] == [
        ("training_step", "blocking", 1), ("backward", "record", 0), ("after_backward", "blocking", 1),
        ("optimizer_step", "precise", 1), ("after_optimizer_step", "precise", 1)]
    assert (res["mode_after"], res["depth_after"]) == ("record", 0)


def test_diagnosing_opens_outside_blocking(run_py):
    res, _ = fit(run_py, {"callback": {"diagnosing": ["training_step", "backward"], "blocking": "backward"},
                          "steps": 1, "probe_diagnosing": True})
    assert [(s["tag"], s["diagnosing"], s["mode"]) for s in res["seen"]] == [
        ("training_step", 1, "record"), ("backward", 1, "blocking"), ("optimizer_step", 0, "record")]
    # opened before the blocking scope is pushed, closed after it is popped: never leaks past its phase
    assert res["events"] == [["diagnosing-open", 0], ["diagnosing-close", 0],
                             ["diagnosing-open", 0], ["diagnosing-close", 0]]


def test_diagnosing_unavailable(run_py):
    res, r = fit(run_py, {"callback": {"diagnosing": "training_step"}, "steps": 2, "no_diagnosing": True})
    assert res["error"] is None and len(res["seen"]) == 6
    assert status_lines(r) == ["culprit: rank 0 of 1: culprit loaded, mode record; scopes: diagnosing in "
                               "training_step (unavailable: this culprit package has no culprit.diagnosing()) for "
                               "every batch"]


def test_scopes_closed_when_a_step_raises(run_py):
    res, r = fit(run_py, {"callback": {"blocking": "train_batch", "precise": [], "steps": [1]}, "steps": 3,
                          "raise": "backward@1"})
    err = res["error"]
    assert err["type"] == "ValueError" and err["message"] == "a bad batch at step 1"
    assert res["seen"][-1] == {"tag": "backward", "step": 1, "batch": 1, "mode": "blocking", "depth": 1,
                               "diagnosing": 0}
    assert (res["mode_after"], res["depth_after"]) == ("record", 0)
    # no report: nothing attached but None, no note, one line saying why
    assert (err["report"], err["verdict"], err["notes"]) == (None, None, [])
    assert "culprit: rank 0: no report for this ValueError: culprit saw no sticky CUDA error in this process, so " \
           "it was not a CUDA fault here" in r.err


# ---- status and loggers ------------------------------------------------------------------------------------------


def test_status_line_per_rank_and_to_the_logger(run_py):
    cfg = {"callback": {"blocking": "backward", "kernels": "*nll*", "precise": "optimizer_step",
                        "steps": {"range": [1, 3]}}, "steps": 1, "rank": 2, "world": 4, "logger": "text"}
    res, r = fit(run_py, cfg)
    want = ("culprit: rank 2 of 4: culprit loaded, mode record; scopes: blocking (kernels '*nll*') in backward; "
            "precise in optimizer_step for global steps 1..2")
    assert status_lines(r) == [want]
    assert res["logger"] == [["log_text", "culprit/status", ["rank", "text"], [[2, want]]], ["finalize", "success"]]


def test_status_line_with_the_mode_configured(run_py):
    _, r = fit(run_py, {"steps": 1}, env={"CULPRIT_MODE": "precise"})
    assert status_lines(r) == ["culprit: rank 0 of 1: culprit loaded, mode precise; no scopes (the verdict comes "
                               "with an exception)"]


def test_library_not_loaded(run_py):
    cfg = {"callback": {"blocking": "training_step"}, "steps": 2, "gpu": False, "raise": "training_step@1",
           "raise_type": "RuntimeError", "raise_message": "CUDA error: device-side assert triggered"}
    res, r = fit(run_py, cfg, preload=False)
    assert {s["mode"] for s in res["seen"]} == {None}  # no scope was opened, nothing warned
    (line,) = status_lines(r)
    assert line.startswith("culprit: rank 0 of 1: culprit not loaded (run the program as: culprit run -- python ")
    assert line.endswith("; no scopes and no verdict (asked for: blocking in training_step for every batch)")
    err = res["error"]
    assert err["type"] == "RuntimeError" and err["report"] is None and err["verdict"] is None
    # a CUDA error without culprit: the traceback says how to get the verdict
    assert len(err["notes"]) == 1
    assert err["notes"][0].startswith("culprit: rank 0: no report for this RuntimeError: culprit is not loaded in this "
                                      "process; to name the kernel that faulted, run the program as: culprit run")


def test_library_not_loaded_plain_error_gets_no_note(run_py):
    res, r = fit(run_py, {"steps": 2, "gpu": False, "raise": "training_step@0"}, preload=False)
    assert res["error"]["type"] == "ValueError" and res["error"]["notes"] == []
    assert "culprit: rank 0: no report for this ValueError: culprit is not loaded in this process" in r.err


# ---- the verdict ---------------------------------------------------------------------------------------------------


def check_verdict(text, tmp_path, api):
    lines = text.splitlines()
    assert all(l.startswith("culprit: ") for l in lines), text
    assert lines[0] == "culprit: rank 0: the kernel that faulted: bad"
    assert lines[1].startswith("culprit:   launch #") and "via cuLaunchKernel" in lines[1]
    assert lines[2] == "culprit:   launched from %s:%d in phase" % (FIT, fault_line())
    assert lines[3].startswith("culprit:   CUDA_ERROR_ILLEGAL_ADDRESS (700): an illegal memory access was "
                               "encountered; it surfaced in %s at " % api)
    assert re.match(r"culprit: report: %s/culprit-\d+\.json$" % re.escape(str(tmp_path / "reports")), lines[-1])
    return lines


def test_fault_verdict_on_the_exception(run_py, tmp_path):
    res, r = fit(run_py, {"steps": 3, "fault": "training_step@1", "logger": "tensorboard"})
    err = res["error"]
    assert err["type"] == "RuntimeError" and err["message"].startswith("CUDA error: an illegal memory access")
    assert err["report"] == "bad"  # exc.culprit_report is the report: its culprit is the faulting kernel
    lines = check_verdict(err["verdict"], tmp_path, "cuCtxSynchronize")
    assert "culprit:   how culprit knows: " in "\n".join(lines)
    assert err["notes"] == [err["verdict"]]  # the traceback shows it
    assert err["verdict"] in r.err  # logged by the rank
    # TensorBoard gets it as text (indented: Markdown keeps the lines), at the step it happened
    (text_call,) = [c for c in res["logger"] if c[:2] == ["add_text", "culprit/verdict"]]
    assert text_call[2] == "\n".join("    " + l for l in lines) and text_call[3] == 1
    assert res["logger"][-1] == ["finalize", "failed"]


def test_fault_in_a_blocking_scope_raises_at_the_launch(run_py, tmp_path):
    res, _ = fit(run_py, {"callback": {"blocking": "backward", "steps": [1]}, "steps": 3, "fault": "backward@1",
                          "logger": "hparams"})
    err = res["error"]
    lines = check_verdict(err["verdict"], tmp_path, "cuLaunchKernel")
    assert lines[3].endswith("at %s:%d in phase" % (FIT, fault_line()))  # the launch line itself
    assert (res["mode_after"], res["depth_after"]) == ("record", 0)  # the blocking scope was closed
    hp = [c for c in res["logger"] if c[0] == "log_hyperparams"]
    assert [list(c[1]) for c in hp] == [["culprit/status"], ["culprit/verdict"]]
    assert hp[1][1]["culprit/verdict"] == err["verdict"]


def test_a_failing_logger_does_not_replace_the_exception(run_py, tmp_path):
    res, r = fit(run_py, {"steps": 3, "fault": "optimizer_step@0", "logger": "broken"})
    err = res["error"]
    assert err["type"] == "RuntimeError" and err["message"].startswith("CUDA error")
    check_verdict(err["verdict"], tmp_path, "cuCtxSynchronize")
    assert err["notes"] == [err["verdict"]]
    for key in ("culprit/status", "culprit/verdict"):
        assert ("culprit: the logger BrokenLogger could not take %s: RuntimeError('the logging server is down')" % key
                in r.err)
    assert res["logger"] == [["finalize", "failed"]]  # Lightning went on to finalize it


# ---- arguments and imports ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("kwargs, named", [
    ({"blocking": "forward"}, "'forward'"),
    ({"precise": ["training_step", 3]}, "3"),
    ({"diagnosing": 7}, "7"),
    ({"blocking": "backward", "precise": "train_batch"}, "backward"),
    ({"kernels": "*nll*"}, "'*nll*'"),
    ({"blocking": "backward", "kernels": 5}, "5"),
    ({"blocking": "backward", "kernels": "x" * 300}, "'xxx"),
    ({"blocking": "backward", "steps": -1}, "-1"),
    ({"blocking": "backward", "steps": (1, 2)}, "(1, 2)"),
    ({"blocking": "backward", "steps": range(5, 5)}, "range(5, 5)"),
    ({"blocking": "backward", "steps": set()}, "set()"),
    ({"blocking": "backward", "steps": True}, "True"),
    ({"blocking": "backward", "steps": "3"}, "'3'"),
    ({"blocking": "backward", "batches": [1, "a"]}, "'a'"),
    ({"steps": 3}, "steps"),
])
def test_bad_arguments(kwargs, named):
    with pytest.raises(ValueError) as e:
        CulpritCallback(**kwargs)
    msg = str(e.value)
    assert msg.startswith("CulpritCallback: ") and named in msg, msg


def test_good_arguments():
    cb = CulpritCallback(blocking="train_batch", diagnosing=("validation_step",), kernels="*gather*",
                         steps=range(10, 20, 2), batches=[0, 3])
    assert isinstance(cb, standin.Callback)
    assert cb.blocking == frozenset(TRAIN) and cb.precise == frozenset() and cb.diagnosing == {"validation_step"}
    assert 12 in cb.steps and 13 not in cb.steps and cb.batches == {0, 3}
    assert CulpritCallback(steps=None).steps is None


def test_import_without_lightning(run_py):
    r = run_py("""
        try:
            import culprit.lightning
        except ImportError as e:
            print(e)
    """, preload=False, pythonpath=[PKG_DIR]).ok()
    assert r.out.startswith("culprit.lightning needs PyTorch Lightning, and neither lightning.pytorch (No module "
                            "named 'lightning') nor pytorch_lightning (No module named 'pytorch_lightning') can be "
                            "imported; install one of them"), r.out


def test_import_falls_back_to_pytorch_lightning(run_py, tmp_path):
    pkg = tmp_path / "pl" / "pytorch_lightning"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("class Callback:\n    pass\n")
    r = run_py("""
        import culprit.lightning as cl
        print(cl._pl.__name__, cl.log.name, issubclass(cl.CulpritCallback, cl._pl.Callback))
    """, preload=False, pythonpath=[PKG_DIR, str(tmp_path / "pl")]).ok()
    assert r.out.split() == ["pytorch_lightning", "pytorch_lightning.callbacks.culprit", "True"]


def test_the_gpu_judge_reads_what_the_callback_says(run_py):
    # tests/gpu/check.py's lightning_callback case expects lines of tests/gpu/frameworks/lightning_callback.py's
    # stdout: the callback's status line with that script's arguments, and the verdict, here made from a blocking
    # report of the GPU suite moved into that script
    gpu_dir = os.path.join(REPO, "tests", "gpu")
    spec = importlib.util.spec_from_file_location("gpu_check", os.path.join(gpu_dir, "check.py"))
    check = importlib.util.module_from_spec(spec)
    sys.path.insert(0, gpu_dir)  # check.py imports its neighbours
    try:
        spec.loader.exec_module(check)
    finally:
        sys.path.remove(gpu_dir)
    patterns = check.PY_CASE_BY_NAME["lightning_callback"].stdout_expect
    _, r = fit(run_py, {"callback": {"blocking": "training_step", "kernels": "*nll_loss*",
                                     "diagnosing": "training_step", "steps": [3]}, "steps": 1})
    out = ["culprit-log: " + line for line in status_lines(r)]
    with open(os.path.join(REPO, "tests", "gpu", "fixtures", "py_package_blocking.json")) as f:
        text = f.read().replace("xent_seg3d.py", "lightning_callback.py")
    text = text.replace('"main"', '"Classifier.training_step"')
    summary = verdict.summary(json.loads(text), path="/run/culprit-reports/culprit-5001.json", rank=0)
    out += ["culprit-verdict: " + line for line in summary.splitlines()]
    for pattern in patterns:
        pattern = pattern.replace("{report_name}", re.escape("culprit-5001.json"))
        assert re.search(pattern, "\n".join(out), re.M), (pattern, out)


class _NoAttributes(RuntimeError):
    """An exception type that takes no attributes, as some C-level CUDA error types do."""

    def __setattr__(self, name, value):
        if name != "__notes__":
            raise AttributeError(name)
        super().__setattr__(name, value)


def test_verdict_of_an_exception_that_takes_no_attributes(monkeypatch):
    import culprit
    import culprit.lightning as cl
    with open(os.path.join(REPO, "tests", "gpu", "fixtures", "py_xent_exact.json")) as f:
        report = json.load(f)
    kernel = report["culprit"]["kernel"][:20]
    monkeypatch.setattr(culprit, "last_report", lambda: report)
    monkeypatch.setattr(culprit, "last_report_path", lambda: "/r/culprit-1.json")
    exc, other = _NoAttributes("CUDA error"), RuntimeError("x")
    CulpritCallback()._explain(standin.Trainer(), exc)
    assert not hasattr(exc, "culprit_verdict")
    text = cl.verdict_of(exc)
    assert text and kernel in text and cl.report_of(exc) is report
    assert cl.verdict_of(other) is None and cl.report_of(other) is None
    # another object with the same notes (an exception translated again on its way up) finds it by its note
    again = RuntimeError("CUDA error")
    again.__notes__ = list(exc.__notes__)
    assert cl.verdict_of(again) == text and cl.report_of(again) is report
    # a CUDA error raised while handling it (Lightning's teardown on a dead context) leads back to it
    try:
        try:
            raise exc
        except RuntimeError:
            raise RuntimeError("CUDA error in teardown")
    except RuntimeError as later:
        assert cl.verdict_of(later) == text and cl.report_of(later) is report
    CulpritCallback()._explain(standin.Trainer(), other)   # a plain exception carries it as attributes
    assert other.culprit_verdict == cl.verdict_of(other) and kernel in other.culprit_verdict
