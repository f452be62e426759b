"""The operator diagnosis (culprit/rules.py, culprit/diagnose.py, culprit/_boot, `culprit run --diagnose`, and the
library's operator notes in the report).

The rules run on argument summaries, without torch. The dispatch hook runs on CPU tensors where torch is
installed (skipped where it is not). The end-to-end cases run `culprit run --diagnose` over the simulated driver:
the operator notes reach the report and the printed verdict, the start-up hook keeps the program's own
sitecustomize, and bad configuration is refused.
"""

import glob
import json
import os
import subprocess
import sys
import textwrap

import pytest

from conftest import HERE, PKG_DIR, build_dir, library_paths

from culprit import rules
from culprit.rules import Arg, describe

# The GPU suite's reader of a printed verdict (wrapped lines joined), shared rather than copied.
sys.path.insert(0, os.path.join(HERE, "..", "gpu"))
from diagnose_group import verdict_text  # noqa: E402
sys.path.pop(0)


def t(dtype, shape, lo=None, hi=None, device="cuda:0", base=None):
    return Arg(dtype=dtype, shape=shape, device=device, lo=lo, hi=hi, base=base)


def v(value):
    return Arg(value=value)


def check(op, **args):
    return rules.RULES[op].check(args)


# ---- the rules, on summaries ----------------------------------------------------------------------------------


def test_embedding_index_past_the_table():
    p = check("aten::embedding", weight=t("float32", (50257, 768)), indices=t("int64", (8, 128), 0, 50300))
    assert p == ("indices int64[8,128] cuda:0 holds 50300, but weight float32[50257,768] cuda:0 has 50257 rows "
                 "(valid 0..50256)")
    assert check("aten::embedding", weight=t("float32", (10, 4)), indices=t("int64", (3,), 0, 9)) == ""
    assert "holds -1" in check("aten::embedding", weight=t("float32", (10, 4)), indices=t("int64", (3,), -1, 2))
    # a range that was not read says nothing
    assert check("aten::embedding", weight=t("float32", (10, 4)), indices=t("int64", (3,))) == ""


def test_nll_loss_targets_against_classes_and_ignore_index():
    logits = t("float32", (2, 14, 1, 4096), base=(2, 14, 16, 16, 16))
    target = t("int64", (2, 1, 4096), 0, 20, base=(2, 16, 16, 16))
    p = check("aten::nll_loss2d_forward", self=logits, target=target, weight=None, reduction=v(1),
              ignore_index=v(-100))
    assert p.startswith("target int64[2,1,4096] cuda:0 (a view of int64[2,16,16,16]) holds 20, but input "
                        "float32[2,14,1,4096] cuda:0 (a view of float32[2,14,16,16,16]) has 14 classes")
    assert "valid 0..13, ignore_index -100" in p
    # the ignored label is the only value outside the classes: no problem
    ok = t("int64", (4,), -100, 13)
    assert check("aten::nll_loss_forward", self=t("float32", (4, 14)), target=ok, ignore_index=v(-100)) == ""
    # a one-dimensional input has its classes in dimension 0
    p = check("aten::nll_loss_forward", self=t("float32", (5,)), target=t("int64", (), 7, 7),
              ignore_index=v(-100))
    assert "holds 7" in p and "has 5 classes" in p


def test_gather_scatter_index_select_along_their_dim():
    p = check("aten::gather", self=t("float32", (4, 6)), dim=v(1), index=t("int64", (4, 2), 0, 6))
    assert p == ("index int64[4,2] cuda:0 holds 6, but self float32[4,6] cuda:0 has 6 entries along dim 1 "
                 "(valid 0..5)")
    assert check("aten::gather", self=t("float32", (4, 6)), dim=v(-1), index=t("int64", (4, 2), 0, 5)) == ""
    p = check("aten::scatter_add_", self=t("bfloat16", (3, 8)), dim=v(0), index=t("int64", (5, 8), 0, 3),
              src=t("bfloat16", (5, 8)))
    assert "index int64[5,8] cuda:0 holds 3" in p and "has 3 entries along dim 0" in p
    p = check("aten::index_select", self=t("float32", (100, 16)), dim=v(0), index=t("int64", (7,), -2, 50))
    assert "holds -2" in p


def test_advanced_index_counts_dims_past_none_and_masks():
    x = t("float32", (4, 5, 6))
    idx = Arg(items=[None, t("int64", (3,), 0, 5)])
    assert "indices[1] int64[3] cuda:0 holds 5" in check("aten::index", self=x, indices=idx)
    idx = Arg(items=[t("bool", (4, 5)), t("int64", (2,), -6, 5)])
    assert check("aten::index", self=x, indices=idx) == ""          # the mask covers dims 0 and 1
    idx = Arg(items=[t("int64", (2,), -5, 0)])
    assert "holds -5" in check("aten::index_put_", self=x, indices=idx, values=t("float32", (2,)))


def test_take_embedding_bag_bincount_histc():
    assert "holds 24" in check("aten::take", self=t("float32", (4, 6)), index=t("int64", (3,), 0, 24))
    p = check("aten::_embedding_bag", weight=t("float32", (10, 3)), indices=t("int64", (6,), 0, 9),
              offsets=t("int64", (3,), 0, 7))
    assert p.startswith("offsets int64[3] cuda:0 holds 7, but indices int64[6] cuda:0 has 6 entries")
    assert "non-negative" in check("aten::bincount", self=t("int64", (5,), -3, 4))
    assert "at least one bin" in check("aten::histc", self=t("float32", (5,)), bins=v(0), min=v(0), max=v(1))
    assert "above max" in check("aten::histc", self=t("float32", (5,)), bins=v(10), min=v(2), max=v(1))


def test_every_rule_survives_missing_arguments():
    for name, rule in rules.RULES.items():
        assert rule.check({}) == "", name


def test_describe():
    assert describe(t("int64", (2, 3), 0, 9)) == "int64[2,3] cuda:0 [0, 9]"
    assert describe(t("float32", (), device="cpu")) == "float32[] cpu"
    assert describe(None) == "None" and describe(v(3)) == "3"
    assert describe(Arg(items=[None, t("int64", (2,))])) == "[None, int64[2] cuda:0]"


# ---- the dispatch hook, with CPU tensors ----------------------------------------------------------------------


def _torch():
    try:
        import torch  # noqa: F401
    except Exception as e:  # noqa: BLE001
        pytest.skip("torch is not installed for %s (%r)" % (sys.executable, e))
    import torch
    try:
        from torch.utils._python_dispatch import TorchDispatchMode  # noqa: F401
    except Exception:
        pytest.skip("this torch has no TorchDispatchMode")
    return torch


class FakeApi:
    """Stands in for the library: records the notes."""
    has_ops = True

    def __init__(self):
        self.notes, self.open = [], 0

    def op_begin(self, name, args, problem):
        self.notes.append((name.decode(), args.decode(), problem.decode()))
        self.open += 1
        return 0

    def op_end(self):
        self.open -= 1
        return 0


@pytest.fixture
def hooked(monkeypatch):
    torch = _torch()
    from culprit import diagnose
    api = FakeApi()
    monkeypatch.setattr(diagnose, "_api", lambda: api)
    monkeypatch.setattr(diagnose, "_cuda_only", False)     # these tests run CPU operators
    token = diagnose.enter()
    assert token is not None and diagnose.active()
    yield torch, api
    diagnose.leave(token)
    assert not diagnose.active()


def test_hook_names_operators_and_finds_the_bad_label(hooked):
    torch, api = hooked
    import torch.nn.functional as F
    w = torch.randn(10, 4)
    out = F.embedding(torch.tensor([[1, 2], [3, 9]]), w)
    assert out.shape == (2, 2, 4)
    name, args, problem = next(n for n in api.notes if n[0] == "aten::embedding")
    assert "weight: float32[10,4] cpu" in args and "indices: int64[2,2] cpu [1, 9]" in args and problem == ""

    logits = torch.randn(2, 3, 4, 4, 4)
    labels = torch.randint(0, 3, (2, 4, 4, 4))
    labels[1, 2, 3, 0] = 5
    with pytest.raises((IndexError, RuntimeError)):
        F.cross_entropy(logits, labels)   # the CPU kernel checks on the host; the rule spoke before it ran
    bad = [n for n in api.notes if n[2]]
    assert bad and bad[-1][0].startswith("aten::nll_loss")
    assert "holds 5" in bad[-1][2] and "has 3 classes" in bad[-1][2] and "ignore_index -100" in bad[-1][2]
    assert api.open == 0

    api.notes.clear()
    labels[1, 2, 3, 0] = -100                # ignored: nothing to say
    F.cross_entropy(logits, labels)
    assert not [n for n in api.notes if n[2]]


def test_hook_changes_no_result(monkeypatch):
    torch = _torch()
    from culprit import diagnose
    api = FakeApi()
    monkeypatch.setattr(diagnose, "_api", lambda: api)
    monkeypatch.setattr(diagnose, "_cuda_only", False)
    torch.manual_seed(0)
    x = torch.randn(6, 5)
    idx = torch.tensor([[0, 4], [1, 3], [2, 2], [3, 1], [4, 0], [0, 0]])

    def work():
        return (torch.gather(x, 1, idx), x.index_select(0, idx[:, 0]),
                torch.zeros(6, 5).scatter_add_(1, idx, x[:, :2]), x[idx[:, 0], idx[:, 1]],
                torch.nn.functional.cross_entropy(x, idx[:, 0]))

    plain = work()
    assert api.notes == []
    token = diagnose.enter()
    try:
        under = work()
    finally:
        diagnose.leave(token)
    for a, b in zip(under, plain):
        assert torch.equal(a, b)
    names = {n[0] for n in api.notes}
    assert {"aten::gather", "aten::index_select", "aten::scatter_add_"} <= names, names
    assert not [n for n in api.notes if n[2]]      # all in range: no problem said


def test_scope_in_one_thread_only(hooked):
    torch, api = hooked
    import threading
    seen = []

    def other():
        from culprit import diagnose
        seen.append(diagnose.active())
        torch.ones(3) + 1

    n = len(api.notes)
    th = threading.Thread(target=other)
    th.start()
    th.join()
    assert seen == [False] and len(api.notes) == n


# ---- end to end, under culprit run --diagnose ------------------------------------------------------------------


def culprit_run(tmp_path, args, code, env=None, pythonpath=None, python=None):
    lib, sim = library_paths()
    exe = os.path.join(build_dir(), "bin", "culprit")
    script = tmp_path / "prog.py"
    script.write_text(textwrap.dedent(code))
    e = {k: x for k, x in os.environ.items()
         if not k.startswith(("CULPRIT_", "FAKECUDA_")) and k not in ("LD_PRELOAD", "PYTHONPATH")}
    e["LD_LIBRARY_PATH"] = sim
    e["PYTHONDONTWRITEBYTECODE"] = "1"
    e["CULPRIT_CRUMB_EVERY"] = "1"
    if pythonpath:
        e["PYTHONPATH"] = os.pathsep.join(pythonpath)
    if env:
        e.update(env)
    argv = [exe, "run", "--dir", str(tmp_path / "reports")] + args + ["--", python or sys.executable, str(script)]
    return subprocess.run(argv, env=e, cwd=str(tmp_path), capture_output=True, text=True, timeout=120)


def only_report(tmp_path):
    paths = glob.glob(str(tmp_path / "reports" / "culprit-*.json"))
    assert len(paths) == 1, paths
    with open(paths[0]) as f:
        return json.load(f)


NOTES = """
    import sys
    sys.path.insert(0, %r)
    import culprit, fakegpu
    from culprit import _lib
    print("diagnose-env", __import__("os").environ.get("CULPRIT_DIAGNOSE"), culprit.__file__)
    a = _lib.api()
    gpu = fakegpu.Gpu()
    k = gpu.kernels("embed_rows", "add_one")
    assert a.op_begin(b"aten::embedding", b"weight: float32[100,8] cuda:0, indices: int64[4] cuda:0 [0, 120]",
                      b"indices int64[4] cuda:0 holds 120, but weight float32[100,8] cuda:0 has 100 rows") == 0
    gpu.launch(k["embed_rows"])
    assert a.op_end() == 0
    assert a.op_begin(b"compiled graph 0", b"inputs: float32[4] cuda:0", b"") == 0
    assert a.op_begin(b"aten::add.Tensor", b"self: float32[4] cuda:0", b"") == 0
    gpu.launch(k["add_one"])
    assert a.op_end() == 0
    gpu.launch(k["add_one"])           # the compiled graph's own launch, after its fallback operator
    assert a.op_end() == 0
    assert a.op_end() == -3            # nothing open
    print("sync", gpu.sync())
""" % HERE


def test_notes_reach_the_report_and_the_verdict(tmp_path):
    p = culprit_run(tmp_path, ["--diagnose"], NOTES, env={"FAKECUDA_FAULT": "kernel=embed_rows"})
    assert "diagnose-env 1 " in p.stdout, p.stdout + p.stderr
    # the package came from beside the culprit executable (lib/python), though PYTHONPATH did not name it
    assert os.path.join(build_dir(), "lib", "python", "culprit") in p.stdout
    doc = only_report(tmp_path)
    assert doc["culprit"]["kernel"] == "embed_rows"
    assert doc["culprit"]["op"]["name"] == "aten::embedding"
    assert "holds 120" in doc["culprit"]["op"]["problem"]
    ops = {}
    for launch in doc["history"] + doc["candidates"] + [doc["culprit"]]:
        ops[launch["seq"]] = launch.get("op", {}).get("name")
    assert [d["name"] for d in doc["diagnosis"]] == ["aten::embedding"]
    assert doc["diagnosis"][0]["first"] == 1 and doc["diagnosis"][0]["last"] == 1
    assert "culprit:   operator: aten::embedding(weight: float32[100,8] cuda:0" in p.stderr
    assert "culprit:   what was wrong: indices int64[4] cuda:0 holds 120" in p.stderr


BUFFERS = """
    import sys
    sys.path.insert(0, %r)
    import fakegpu
    from culprit import _lib
    a = _lib.api()
    gpu = fakegpu.Gpu()
    k = gpu.kernels("index_kernel")
    bufs = "0x7f0000001000 4096 self: float32[1024] cuda:0\\n0x7f0000003000 4096 index: int64[512] cuda:0"
    assert a.op_begin_buffers(b"aten::index.Tensor", b"self: float32[1024] cuda:0, indices: [int64[512] cuda:0]",
                              b"", bufs.encode()) == 0
    gpu.launch(k["index_kernel"])
    assert a.op_end() == 0
    print("sync", gpu.sync())
""" % HERE


class _StubStorage:
    def __init__(self, base, size):
        self.base, self.size = base, size

    def data_ptr(self):
        return self.base

    def nbytes(self):
        return self.size


class _StubTensor:
    """What _buffers_for reads of a tensor: dtype, shape, device, its storage (no torch here)."""

    def __init__(self, dtype, shape, base, size, cuda=True, storage_fails=False):
        self.dtype, self.shape, self.device = "torch." + dtype, shape, "cuda:0" if cuda else "cpu"
        self.is_cuda, self._base = cuda, None
        self._st, self._fails = _StubStorage(base, size), storage_fails

    def untyped_storage(self):
        if self._fails:
            raise RuntimeError("no storage")
        return self._st


def test_buffers_for_lists_cuda_tensors_by_storage(monkeypatch):
    from culprit import diagnose

    class StubTorch:
        Tensor = _StubTensor

    monkeypatch.setattr(diagnose, "_torch", StubTorch)
    named = {"self": _StubTensor("float32", (4, 8), 0x7f0000001000, 4096),
             "indices": [_StubTensor("int64", (16,), 0x7f0000003000, 128), None],
             "cpu_one": _StubTensor("float32", (2,), 0x1000, 8, cuda=False),
             "wrapper": _StubTensor("float32", (2,), 0, 8, storage_fails=True),
             "alpha": 2}
    lines = diagnose._buffers_for(named).split("\n")
    assert lines == ["%d 4096 self: float32[4,8] cuda:0" % 0x7f0000001000,
                     "%d 128 indices[0]: int64[16] cuda:0" % 0x7f0000003000], lines
    many = {"t%d" % i: _StubTensor("int8", (1,), 0x10000 * (i + 1), 1) for i in range(10)}
    assert len(diagnose._buffers_for(many).split("\n")) == 6, "six at most, as the library keeps"


def test_operator_buffers_name_the_tensor_of_an_address(tmp_path):
    """The tensors an operator was given reach the report (op.buffers), and an address near one is named by it:
    which tensor, with shape and dtype, where the allocation table sees only PyTorch's segment."""
    culprit_run(tmp_path, ["--diagnose"], BUFFERS, env={"FAKECUDA_FAULT": "kernel=index_kernel"})
    doc = only_report(tmp_path)
    bufs = doc["culprit"]["op"]["buffers"]
    assert bufs == [{"label": "self: float32[1024] cuda:0", "base": "0x7f0000001000", "size": 4096},
                    {"label": "index: int64[512] cuda:0", "base": "0x7f0000003000", "size": 4096}], bufs
    exe = os.path.join(build_dir(), "bin", "culprit")
    path = glob.glob(str(tmp_path / "reports" / "culprit-*.json"))[0]
    p = subprocess.run([exe, "report", "--address", "0x7f0000004010", path], capture_output=True, text=True,
                       timeout=60)
    paragraphs = verdict_text(p.stdout + p.stderr)
    assert any("16 bytes past the end of aten::index.Tensor's `index: int64[512] cuda:0` (4096 bytes at "
               "0x7f0000003000)" in para for para in paragraphs), paragraphs


def test_nested_notes_name_the_innermost(tmp_path):
    p = culprit_run(tmp_path, ["--diagnose"], NOTES, env={"FAKECUDA_FAULT": "kernel=add_one,nth=2"})
    doc = only_report(tmp_path)
    assert doc["culprit"]["seq"] == 3 and doc["culprit"]["op"]["name"] == "compiled graph 0", p.stderr
    hist = {h["seq"]: h.get("op", {}).get("name") for h in doc["history"]}
    assert hist == {1: "aten::embedding", 2: "aten::add.Tensor"}
    # the problem of an operator before the culprit is listed on its own
    assert "the diagnosis found aten::embedding (launch #1): indices int64[4] cuda:0 holds 120" in p.stderr


def test_without_diagnose_no_hook_is_loaded(tmp_path):
    code = 'import os, sys; print("env", os.environ.get("CULPRIT_DIAGNOSE"), "culprit" in sys.modules)'
    p = culprit_run(tmp_path, [], code)
    assert "env None False" in p.stdout, p.stdout + p.stderr


def test_program_sitecustomize_still_runs(tmp_path):
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "sitecustomize.py").write_text("import sys\nsys.program_site = 'ran'\n")
    code = 'import sys; print("site", getattr(sys, "program_site", None), "diagnose" in sys.modules["culprit.diagnose"].__name__)'
    p = culprit_run(tmp_path, ["--diagnose"], code, pythonpath=[str(mine)])
    assert "site ran True" in p.stdout, p.stdout + p.stderr
    assert p.returncode == 0


def test_bad_python_package_dir_is_refused(tmp_path):
    p = culprit_run(tmp_path, ["--diagnose"], "print('ran')", env={"CULPRIT_PYTHON": str(tmp_path)})
    assert p.returncode == 2 and "ran" not in p.stdout
    assert "CULPRIT_PYTHON names %s, which does not hold culprit's Python package" % tmp_path in p.stderr


def test_diagnosing_scope_without_library_warns_and_runs(run_py):
    r = run_py("""
        import culprit
        with culprit.diagnosing():
            x = 1 + 1
        print("ran", x, culprit.diagnose.active())
    """, preload=False).ok()
    assert "ran 2 False" in r.out


def test_fork_child_lists_only_its_own_problems(tmp_path):
    code = textwrap.dedent(NOTES).replace('print("sync", gpu.sync())', textwrap.dedent("""\
        import os
        pid = os.fork()
        if pid == 0:
            g = fakegpu.Gpu()
            kk = g.kernels("child_k")
            g.launch(kk["child_k"])
            print("child sync", g.sync())
            os._exit(0)
        os.waitpid(pid, 0)
        """))
    p = culprit_run(tmp_path, ["--diagnose"], code, env={"FAKECUDA_FAULT": "kernel=child_k"})
    doc = only_report(tmp_path)
    assert doc["culprit"]["kernel"] == "child_k", p.stderr
    assert "diagnosis" not in doc and "op" not in doc["culprit"]


def test_end_to_end_with_torch_on_cpu(tmp_path):
    _torch()
    code = """
        import sys
        sys.path.insert(0, %r)
        import torch, fakegpu
        import torch.nn.functional as F
        gpu = fakegpu.Gpu()
        k = gpu.kernels("lookup_rows")
        lib = torch.library.Library("culprit_test", "DEF")
        lib.define("lookup(Tensor table, Tensor idx) -> Tensor")
        def lookup(table, idx):
            gpu.launch(k["lookup_rows"])
            return table[0:1].clone()
        lib.impl("lookup", lookup, "CPU")
        w = torch.randn(10, 4)
        i = torch.tensor([[1, 2], [3, 12]])
        try:
            F.embedding(i, w)
        except IndexError:
            pass
        torch.ops.culprit_test.lookup(w, i)
        print("sync", gpu.sync())
    """ % HERE
    # CPU operators are noted only with CULPRIT_DIAGNOSE=all: by default they pass straight through
    p = culprit_run(tmp_path, ["--diagnose"], code, env={"FAKECUDA_FAULT": "kernel=lookup_rows"})
    doc = only_report(tmp_path)
    assert "op" not in doc["culprit"] and "diagnosis" not in doc, p.stderr
    for f in glob.glob(str(tmp_path / "reports" / "*.json")):
        os.unlink(f)
    p = culprit_run(tmp_path, ["--diagnose"], code, env={"FAKECUDA_FAULT": "kernel=lookup_rows",
                                                          "CULPRIT_DIAGNOSE": "all"})
    doc = only_report(tmp_path)
    assert doc["culprit"]["op"]["name"] == "culprit_test::lookup", p.stderr
    assert doc["culprit"]["op"]["args"] == "table: float32[10,4] cpu, idx: int64[2,2] cpu"
    d = doc["diagnosis"][0]
    assert d["name"] == "aten::embedding" and "holds 12" in d["problem"] and "has 10 rows" in d["problem"]
    assert "the diagnosis found aten::embedding (no launch): indices int64[2,2] cpu holds 12" in p.stderr


def test_hang_report_names_the_operator_in_flight(tmp_path):
    code = """
        import sys
        sys.path.insert(0, %r)
        import fakegpu
        from culprit import _lib
        a = _lib.api()
        gpu = fakegpu.Gpu()
        k = gpu.kernels("ring_allreduce")
        assert a.op_begin(b"c10d::allreduce_", b"tensors: [float32[1024] cuda:0]", b"") == 0
        gpu.launch(k["ring_allreduce"])
        assert a.op_end() == 0
        print("sync", gpu.sync())
    """ % HERE
    p = culprit_run(tmp_path, ["--diagnose", "--hang-timeout", "0.5"], code,
                    env={"FAKECUDA_HANG": "kernel=ring_allreduce,ms=2500"})
    assert "sync 0" in p.stdout, p.stdout + p.stderr
    paths = glob.glob(str(tmp_path / "reports" / "culprit-*-hang.json"))
    assert len(paths) == 1, p.stderr
    with open(paths[0]) as f:
        doc = json.load(f)
    named = [l for l in [doc.get("culprit")] + (doc.get("candidates") or []) if l]
    assert named and named[0]["op"]["name"] == "c10d::allreduce_", json.dumps(doc)[:2000]
    assert "operator: c10d::allreduce_" in p.stderr


def test_report_and_trace_of_a_real_diagnosis(tmp_path):
    """A report --diagnose wrote on the GPU (fixture): `culprit report` prints the operator and what was wrong,
    `culprit trace` puts the operator on the culprit's event."""
    import shutil
    exe = os.path.join(build_dir(), "bin", "culprit")
    if not os.path.exists(exe):
        pytest.skip("culprit not built in %s" % build_dir())
    fixture = os.path.join(HERE, "..", "gpu", "fixtures", "py_diag_xent.json")
    path = str(tmp_path / "culprit-706.json")
    shutil.copyfile(fixture, path)
    p = subprocess.run([exe, "report", path], capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    text = " ".join(verdict_text(p.stdout + p.stderr))
    assert "operator: aten::nll_loss2d_forward(self: float32[2,5,1,2048] cuda:0 (a view of float32[2,5,8,16,16])" in text
    assert ("what was wrong: target int64[2,1,2048] cuda:0 (a view of int64[2,8,16,16]) holds 5, but input "
            "float32[2,5,1,2048] cuda:0 (a view of float32[2,5,8,16,16]) has 5 classes (valid 0..4, "
            "ignore_index -100)") in text
    out = str(tmp_path / "trace.json")
    p = subprocess.run([exe, "trace", path, "-o", out], capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    with open(out) as f:
        events = json.load(f)["traceEvents"]
    culprit = [e for e in events if e.get("cat") == "culprit"]
    assert culprit and all(e["args"]["operator"] == "aten::nll_loss2d_forward" for e in culprit)
    assert "holds 5" in culprit[0]["args"]["what_was_wrong"]
