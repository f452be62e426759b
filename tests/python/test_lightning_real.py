"""culprit.lightning.CulpritCallback on the real PyTorch Lightning (lightning.pytorch or pytorch_lightning) with
torch on the CPU, where they are installed: the same run as test_lightning.py's (lightning_standin/scenario/fit.py,
kernels launched on the simulated driver), so the stand-in's hook order is checked against Lightning's own.
Skipped where Lightning or torch cannot be imported."""

import importlib
import json
import os

import pytest

from conftest import HERE, PKG_DIR

FIT = os.path.join(HERE, "lightning_standin", "scenario", "fit.py")


def _real_lightning():
    for name in ("lightning.pytorch", "pytorch_lightning"):
        try:
            mod = importlib.import_module(name)
        except ImportError:
            continue
        if "lightning_standin" not in (getattr(mod, "__file__", "") or ""):
            return mod
    return None


try:
    import torch  # noqa: F401 - needed by the real Lightning and by the run
    PL = _real_lightning()
    WHY = None if PL else "PyTorch Lightning is not installed (neither lightning.pytorch nor pytorch_lightning)"
except ImportError as e:
    PL, WHY = None, "torch is not installed (%s)" % e

pytestmark = pytest.mark.skipif(PL is None, reason=WHY or "")


def fit(run_py, cfg):
    """fit.py on the CPU under the library. Only a run with a scripted fault launches kernels (on the simulated
    driver); the others see no driver of culprit's, so torch and Lightning find the machine's own, or none."""
    env = {"FAKECUDA_FAULT": "kernel=bad", "CUDA_VISIBLE_DEVICES": ""}
    if "fault" not in cfg:
        cfg = dict(cfg, gpu=False)
        env["LD_LIBRARY_PATH"] = ""
    r = run_py(args=[FIT, json.dumps(cfg)], env=env, pythonpath=[PKG_DIR, HERE]).ok()
    res = json.loads(r.out.splitlines()[-1])
    assert res["real"] is True
    return res, r


def test_scopes_follow_lightnings_hooks(run_py):
    res, r = fit(run_py, {"callback": {"blocking": "backward", "precise": "optimizer_step", "steps": [1]},
                          "steps": 3})
    assert res["error"] is None
    got = [(s["tag"], s["batch"], s["mode"]) for s in res["seen"]]
    assert got == [(t, b, {("backward", 1): "blocking", ("optimizer_step", 1): "precise"}.get((t, b), "record"))
                   for b in range(3) for t in ("training_step", "backward", "optimizer_step")]
    assert (res["mode_after"], res["depth_after"]) == ("record", 0)
    assert "culprit: rank 0 of 1: culprit loaded, mode record; scopes: blocking in backward; precise in " \
           "optimizer_step for global step 1" in r.err


def test_manual_optimization(run_py):
    res, _ = fit(run_py, {"callback": {"blocking": "training_step", "precise": "optimizer_step"}, "steps": 1,
                          "manual": True})
    assert [(s["tag"], s["mode"]) for s in res["seen"]] == [
        ("training_step", "blocking"), ("backward", "record"), ("after_backward", "blocking"),
        ("optimizer_step", "precise"), ("after_optimizer_step", "precise")]


def test_verdict_on_lightnings_exception(run_py):
    res, _ = fit(run_py, {"callback": {"blocking": "backward", "steps": [1]}, "steps": 3, "fault": "backward@1"})
    err = res["error"]
    assert err["type"] == "RuntimeError" and err["report"] == "bad"
    assert err["verdict"].splitlines()[0] == "culprit: rank 0: the kernel that faulted: bad"
    assert err["notes"] == [err["verdict"]]
    assert (res["mode_after"], res["depth_after"]) == ("record", 0)
