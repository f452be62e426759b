"""culprit.verdict.summary on the report fixtures of the GPU suite's checker (tests/gpu/fixtures, and copies edited
here): the kernel, the launch, the Python line, where it surfaced, the device assert, the operator and the
diagnosis, candidates with the command that pins them, hang and exit reports, ranks, and reports with fields of the
wrong type. No library needed."""

import copy
import glob
import json
import os

import pytest

from conftest import REPO
from culprit import verdict

FIXTURES = os.path.join(REPO, "tests", "gpu", "fixtures")
FW = "/opt/culprit/tests/gpu/frameworks/"


def fixture(name):
    with open(os.path.join(FIXTURES, name)) as f:
        return json.load(f)


def lines_of(report, **kw):
    text = verdict.summary(report, **kw)
    lines = text.splitlines()
    assert lines and all(l.startswith("culprit: ") for l in lines), text
    return [l[len("culprit: "):] for l in lines]


def test_exact_python_fault():
    assert lines_of(fixture("py_xent_exact.json"), path="r/culprit-5001.json") == [
        "the kernel that faulted: void at::native::(anonymous namespace)::nll_loss2d_forward_kernel<float, float>(...)",
        "  launch #102 via cuLaunchKernel, grid [4,1,1] block [128,1,1], stream 0x0",
        "  launched from %sxent_seg3d.py:32 in main" % FW,
        "  CUDA_ERROR_ASSERT (710): device-side assert triggered; it surfaced in cuMemcpyDtoHAsync_v2 at "
        "%sxent_seg3d.py:33 in main" % FW,
        "  how culprit knows: stream 0x0 completed launch #101; #102 is the next launch on it",
        "report: r/culprit-5001.json",
    ]


def test_blocking_report_surfaces_at_the_launch_line():
    lines = lines_of(fixture("py_package_blocking.json"))
    assert lines[3] == ("  CUDA_ERROR_ASSERT (710): device-side assert triggered; it surfaced in cuLaunchKernel at "
                        "%sxent_seg3d.py:32 in main" % FW)


def test_rank_device_assert_and_the_users_frame():
    lines = lines_of(fixture("ddp_rank1_fault.json"))
    assert lines[0].startswith("rank 1: the kernel that faulted: void at::native::(anonymous namespace)::"
                               "nll_loss_forward_reduce_cuda_kernel_2d<float, float, long>(")
    assert "  launched from %sddp_gloo_fault.py:48 in main" % FW in lines
    assert ("  device assert: `t >= 0 && t < n_classes` failed at /pytorch/aten/src/ATen/native/cuda/Loss.cu:242, "
            "block [0,0,0], thread [17,0,0]") in lines
    assert lines_of(fixture("ddp_rank1_fault.json"), rank=5)[0].startswith("rank 5: the kernel that faulted: ")


def test_native_program():
    lines = lines_of(fixture("oob_exact.json"))
    assert lines[0] == "the kernel that faulted: scatter_grad(float*, long const*, int, int)"
    # past the static CUDA runtime and nvcc's launch stub, to the user's line
    assert lines[2] == "  launched from main at oob.cu:80"
    assert lines[3].endswith("it surfaced in cuMemcpyDtoH_v2 at main at oob.cu:82")


def test_graph_node():
    lines = lines_of(fixture("graph_node.json"))
    assert ("  the graph's node that faulted: scatter_tokens(float*, float const*, long long const*, int) "
            "(launch #3), captured at main at graph.cu:50") in lines


def test_candidates_and_the_command_that_pins_them():
    lines = lines_of(fixture("py_index_select_candidates.json"))
    assert lines[0] == "one of 2 candidate launches (#40..#41) faulted; culprit could not tell which:"
    assert lines[1].startswith("  #40 void at::native::vectorized_elementwise_kernel<")
    assert lines[2].endswith(", launched from %sindex_select_oob.py:25 in main" % FW)
    assert lines[-1] == ("  to pin it, run it again with blocking launches there: culprit run --mode blocking "
                         "--launches 40:41 -- python3 %sindex_select_oob.py" % FW)


def test_many_candidates_are_counted():
    lines = lines_of(fixture("cd_streams4.json"))
    assert lines[0].startswith("one of 40 candidate launches (#1..#40)")
    assert "  (34 more in the report)" in lines


def test_unknown():
    lines = lines_of(fixture("oob_unknown.json"))
    assert lines[0] == "culprit could not name the kernel that faulted: no launch was pending on any stream"


def test_hang_and_exit_reports():
    assert lines_of(fixture("spin_hang_timeout.json"))[0] == (
        "hang report (no progress for 3 s): the launch in flight: spin_until_flag(int const volatile*, int*, "
        "unsigned long long)")
    assert lines_of(fixture("spin_hang_candidates.json")) == [
        "hang report (SIGTERM): one of 2 launches (#6..#7) was in flight"]
    assert lines_of(fixture("ddp_rank0_hang.json"))[0].startswith("rank 0: hang report (SIGTERM): no launch was "
                                                                  "unfinished")
    assert lines_of(fixture("ddp_rank2_exit.json")) == ["rank 2: this process saw no CUDA error (an exit record)"]


def test_operator_and_diagnosis():
    rep = fixture("py_xent_exact.json")
    rep["culprit"]["op"] = {"name": "aten::nll_loss2d_forward",
                            "args": "self: float32[2, 14, 4, 4, 4], target: int64[2, 4, 4, 4]",
                            "problem": "target int64[2, 4, 4, 4] holds 20, but input has 14 classes"}
    rep["diagnosis"] = [dict(rep["culprit"]["op"], first=102, last=102, thread=5001),
                        {"name": "aten::gather", "problem": "index holds 9 in a dimension of 4", "first": 90,
                         "last": 95}]
    lines = lines_of(rep)
    i = lines.index("  operator: aten::nll_loss2d_forward(self: float32[2, 14, 4, 4, 4], target: int64[2, 4, 4, 4])")
    assert lines[i + 1] == "  what was wrong: target int64[2, 4, 4, 4] holds 20, but input has 14 classes"
    # the culprit's own entry is not repeated; the other is said with its launches
    assert [l for l in lines if "diagnosis" in l] == [
        "  the diagnosis found aten::gather (launches #90..#95): index holds 9 in a dimension of 4"]


def test_diagnosis_points_at_a_candidate():
    rep = fixture("py_index_select_candidates.json")
    rep["diagnosis"] = [{"name": "aten::index_select", "problem": "index holds 500, past the 500 rows", "first": 41,
                         "last": None}]
    assert ("  the diagnosis points at launch #41: it belongs to aten::index_select, whose arguments broke its "
            "contract, so it is the likely culprit") in lines_of(rep)


def test_long_names_are_shortened():
    rep = fixture("py_xent_exact.json")
    rep["culprit"]["kernel"] = "void k<" + "x" * 400 + ">(int)"
    name = lines_of(rep)[0][len("the kernel that faulted: "):]
    assert len(name) <= verdict.NAME_WIDTH and name.startswith("void k<xxx") and "..." in name


@pytest.mark.parametrize("name", sorted(os.path.basename(p) for p in glob.glob(os.path.join(FIXTURES, "*.json"))
                                        if not p.endswith("broken.json")))
def test_every_fixture_reads(name):
    rep = fixture(name)
    lines = lines_of(rep, path="p.json", rank=0)
    assert lines[-1] == "report: p.json" and lines[0].startswith("rank 0: ")
    if (rep.get("kind") or "fault") == "fault" and isinstance(rep.get("culprit"), dict):
        assert lines[0].startswith("rank 0: the kernel that faulted: ")
        assert "#%d " % rep["culprit"]["seq"] in lines[1] + " "


@pytest.mark.parametrize("junk", [None, [], "text", {}, {"schema": "other/1"}])
def test_not_a_report(junk):
    assert verdict.summary(junk) == "culprit: not a culprit report"


def test_fields_of_the_wrong_type_do_not_break_it():
    rep = fixture("py_xent_exact.json")
    for key, value in [("culprit", "x"), ("candidates", "y"), ("verdict", 3), ("error", [1]), ("diagnosis", {}),
                       ("device_asserts", "z"), ("process", None)]:
        broken = copy.deepcopy(rep)
        broken[key] = value
        assert verdict.summary(broken).startswith("culprit: ")
    broken = copy.deepcopy(rep)
    broken["culprit"].update(python="no", stack=[1, None], grid="4", seq="102", op=[])
    assert lines_of(broken)[1] == "  launch via cuLaunchKernel, stream 0x0"


def _terminal_safe(text):
    """No control character but the newline, no C1 control, no bidi override or isolate, no lone surrogate."""
    return not any((ord(c) < 0x20 and c != "\n") or 0x7f <= ord(c) <= 0x9f or 0x202a <= ord(c) <= 0x202e or
                   0x2066 <= ord(c) <= 0x2069 or 0xd800 <= ord(c) <= 0xdfff for c in text)


def test_hostile_strings_are_escaped():
    """A report is only a file: escape sequences and newlines in its strings reach the text escaped, no line is
    forged, and the command that pins a window still reads back as the argv that ran."""
    import shlex
    import subprocess
    rep = copy.deepcopy(fixture("streams4_candidates.json"))
    evil = "x\nculprit: the kernel that faulted: forged\x1b[2J\u202e\x9b"
    rep["process"]["argv"] = ["./app", evil]
    for c in rep["candidates"]:
        c["kernel"] = "k\x1b]0;title\x07ern\nel"
    rep["error"]["api"] = "cuCtxSynchronize\nculprit: forged api"
    rep["verdict"]["reason"] = "why\x1b[2J\nculprit: forged reason"
    text = verdict.summary(rep, path="r/\x1b[2J\nculprit-1.json")
    assert _terminal_safe(text), repr(text)
    lines = text.splitlines()
    assert all(l.startswith("culprit: ") and not l.startswith("culprit: forged") and
               not l.startswith("culprit: the kernel that faulted: forged") for l in lines), text
    assert any("k\\x1b]0;title\\x07ern\\nel" in l for l in lines), text
    pin = [l for l in lines if "culprit run --mode blocking" in l]
    assert pin, text
    words = pin[0].split(" -- ", 1)[1]
    got = subprocess.run(["bash", "-c", "printf '%s\\0' " + words], capture_output=True).stdout
    assert got.split(b"\0")[:-1] == [b"./app", evil.encode()], (words, got)
