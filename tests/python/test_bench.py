"""The benchmark driver (bench/bench.py) without a GPU: its parsing, configurations and process handling, and
whole runs against a stand-in launch loop (a shell script in a build folder of its own) whose speed depends on
the configuration, so the table's medians, spreads, ratios and failure lines can be checked exactly; a workload
that reports itself skipped (gpt2 without transformers, through a stand-in module), and --marks against a
stand-in mark study."""

import os
import signal
import stat
import subprocess
import sys
import time

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
BENCH_DIR = os.path.join(REPO, "bench")
sys.path.insert(0, BENCH_DIR)

import bench  # noqa: E402


def test_parse_reads_both_result_forms():
    out = "noise\nlaunch_us=4.25\n"
    assert bench.parse(out, ["launch_loop"]) == {"launch_loop": (4.25, "us/launch", "lower")}
    out = ("metric=images_per_s value=1599.3301 unit=images/s better=higher workload=resnet50\n"
           "culprit: stats: ...\n"
           "metric=steps_per_s value=12.5 unit=steps/s better=higher workload=smallop\n")
    assert bench.parse(out, ["resnet50", "smallop"]) == {"resnet50": (1599.3301, "images/s", "higher"),
                                                         "smallop": (12.5, "steps/s", "higher")}


def test_ratio_is_speed_relative_to_no_tool():
    assert bench.ratio_text(800.0, 1000.0, "higher") == "0.800"
    assert bench.ratio_text(5.0, 4.0, "lower") == "0.800 (+1.00 us)"
    assert bench.ratio_text(3.0, 4.0, "lower") == "1.333 (-1.00 us)"
    assert bench.ratio_text(5.0, None, "lower") == ""


def test_configurations_set_only_their_own_variables(tmp_path, monkeypatch):
    monkeypatch.setenv("CULPRIT_MODE", "blocking")
    monkeypatch.setenv("LD_PRELOAD", "/elsewhere/lib.so")
    monkeypatch.setenv("CUDA_LAUNCH_BLOCKING", "1")
    build, tmp = str(tmp_path / "b"), str(tmp_path / "t")
    none = bench.config_env("none", build, {}, tmp)
    assert not any(k.startswith("CULPRIT_") for k in none)
    assert "LD_PRELOAD" not in none and "CUDA_LAUNCH_BLOCKING" not in none
    clb = bench.config_env("clb", build, {}, tmp)
    assert clb["CUDA_LAUNCH_BLOCKING"] == "1" and "LD_PRELOAD" not in clb
    window = bench.config_env("blocking_window", build, {}, tmp)
    assert window["CULPRIT_MODE"] == "blocking" and window["CULPRIT_LAUNCHES"] == "2000:2015"
    rec = bench.config_env("precise", build, {}, tmp)
    assert rec["LD_PRELOAD"] == os.path.join(build, "lib", "libculprit.so")
    assert rec["CULPRIT_MODE"] == "precise" and rec["CULPRIT_DIR"] == os.path.join(tmp, "reports")
    extra = bench.config_env("d0", build, {"d0": {"CULPRIT_STACK_DEPTH": "0"}}, tmp)
    assert extra["CULPRIT_STACK_DEPTH"] == "0" and "CULPRIT_MODE" not in extra
    with pytest.raises(SystemExit):
        bench.config_env("bogus", build, {}, tmp)


def alive(pid):
    """Whether PID runs (a killed process whose parent died may linger as a zombie until reaped)."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def test_run_one_result_failure_and_timeout(tmp_path):
    env = dict(os.environ)
    found, rss, err = bench.run_one(["sh", "-c", "echo launch_us=3.5"], env, 30, ["launch_loop"], str(tmp_path))
    assert err is None and found == {"launch_loop": (3.5, "us/launch", "lower")} and rss > 0
    found, rss, err = bench.run_one(["sh", "-c", "echo oops >&2; exit 3"], env, 30, ["launch_loop"],
                                    str(tmp_path))
    assert found == {} and "exit 3" in err and "oops" in err
    # a run past its time is killed with everything it started
    pidfile = tmp_path / "child.pid"
    t0 = time.monotonic()
    found, rss, err = bench.run_one(["sh", "-c", "sleep 30 & echo $! > %s; wait" % pidfile], env, 1,
                                    ["launch_loop"], str(tmp_path))
    assert err == "timed out after 1 s" and time.monotonic() - t0 < 10
    child = int(pidfile.read_text())
    time.sleep(0.2)
    assert not alive(child), "the timed-out run's child still runs"
    found, rss, err = bench.run_one([str(tmp_path / "missing")], env, 5, ["launch_loop"], str(tmp_path))
    assert err.startswith("cannot run")


# The stand-in launch loop: µs per launch by configuration, a different value in each repetition (so median
# and spread are checked), a report written under blocking (a healthy program must not get one), and a hang
# under precise when asked.
LOOP = r"""#!/bin/sh
count="$BENCH_TEST_DIR/count.$CULPRIT_MODE$CUDA_LAUNCH_BLOCKING"
n=$(cat "$count" 2>/dev/null || echo 0); n=$((n + 1)); echo $n > "$count"
if [ "$CUDA_LAUNCH_BLOCKING" = 1 ]; then echo launch_us=8; exit 0; fi
case "$CULPRIT_MODE" in
  record) echo launch_us=5 ;;
  precise) [ -n "$BENCH_TEST_HANG" ] && exec sleep 60; echo launch_us=4.4 ;;
  blocking) mkdir -p "$CULPRIT_DIR"; : > "$CULPRIT_DIR/culprit-1.json"; echo launch_us=9 ;;
  *) case $n in 1) echo launch_us=4 ;; 2) echo launch_us=5 ;; *) echo launch_us=3 ;; esac ;;
esac
"""


def fake_build(tmp_path):
    build = tmp_path / "build"
    (build / "bin").mkdir(parents=True, exist_ok=True)  # again for each run_bench: a test may run it twice
    (build / "lib").mkdir(exist_ok=True)
    (build / "lib" / "libculprit.so").write_bytes(b"")  # preloading it fails harmlessly: the loader says so
    loop = build / "bin" / "bench_launch_loop"
    loop.write_text(LOOP)
    loop.chmod(loop.stat().st_mode | stat.S_IXUSR)
    return str(build)


def run_bench(tmp_path, *args, **kw):
    env = dict(os.environ, BENCH_TEST_DIR=str(tmp_path), **kw.pop("env", {}))
    return subprocess.Popen([sys.executable, os.path.join(BENCH_DIR, "bench.py"), "--build", fake_build(tmp_path),
                             "--workloads", "launch_loop", "--timeout", "30"] + list(args),
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kw)


def rows(out):
    """The main table's rows by (workload, config); the memory table's rows have four columns, not seven."""
    table = {}
    for line in out.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if line.startswith("| launch_loop |") and len(cells) == 7:
            table[(cells[0], cells[1])] = cells
    return table


def test_table_from_three_repetitions(tmp_path):
    p = run_bench(tmp_path, "--reps", "3")
    out, err = p.communicate(timeout=120)
    assert p.returncode == 1, err  # blocking's reports are failures
    assert "3 interleaved reps" in out
    # the header names the build measured: the library's SHA-256 (here of an empty file)
    assert "build: libculprit.so sha256 e3b0c44298fc, 3 interleaved reps" in out
    r = rows(out)
    assert r[("launch_loop", "none")][2:6] == ["4", "3-5", "us/launch", "1.000 (+0.00 us)"]
    assert r[("launch_loop", "CUDA_LAUNCH_BLOCKING=1")][2:6] == ["8", "8-8", "us/launch", "0.500 (+4.00 us)"]
    assert r[("launch_loop", "culprit record")][5] == "0.800 (+1.00 us)"
    assert r[("launch_loop", "culprit precise")][5] == "0.909 (+0.40 us)"
    assert r[("launch_loop", "culprit blocking")][5] == "0.444 (+5.00 us)"
    # paired: no tool ran at 4, 5 and 3 us in the three repetitions, record at 5 each time: 0.8, 1.0 and 0.6
    assert r[("launch_loop", "culprit record")][6] == "0.800 (0.600-1.000)"
    assert r[("launch_loop", "CUDA_LAUNCH_BLOCKING=1")][6] == "0.500 (0.375-0.625)"
    assert r[("launch_loop", "none")][6] == "1.000 (1.000-1.000)"
    assert out.count("culprit wrote a report for a healthy workload") == 3
    assert out.rstrip().endswith("15 passed, 3 failed")
    # interleaved: each repetition ran every configuration before the next repetition began, the second one in
    # reverse order (no tool last)
    runs = [(line.split()[1], line.split()[3].rstrip(":")) for line in err.splitlines() if line.startswith("  rep ")]
    assert [rep for rep, _ in runs] == ["1"] * 5 + ["2"] * 5 + ["3"] * 5
    configs = ["none", "clb", "record", "precise", "blocking"]
    assert [c for _, c in runs] == configs + configs[::-1] + configs


def test_paired_ratio_skips_repetitions_without_a_pair():
    base = [(4.0, "us/launch", "lower", 0), (2.0, "us/launch", "lower", 2)]
    rs = [(5.0, "us/launch", "lower", 0), (9.0, "us/launch", "lower", 1), (4.0, "us/launch", "lower", 2)]
    assert bench.paired_text(rs, base) == "0.650 (0.500-0.800)"
    assert bench.paired_text(rs, []) == ""
    higher = [(900.0, "images/s", "higher", 0)]
    assert bench.paired_text(higher, [(1000.0, "images/s", "higher", 0)]) == "0.900 (0.900-0.900)"


def test_budget_stops_starting_repetitions(tmp_path):
    p = run_bench(tmp_path, "--reps", "4", "--budget", "0.001", "--configs", "none,record")
    out, err = p.communicate(timeout=120)
    assert p.returncode == 0, err
    assert "stopping after 1 repetitions" in err
    assert "1 interleaved reps" in out and out.rstrip().endswith("2 passed, 0 failed")


def test_sigterm_prints_what_ran(tmp_path):
    p = run_bench(tmp_path, "--reps", "2", "--configs", "none,clb,precise", env={"BENCH_TEST_HANG": "1"})
    deadline = time.monotonic() + 60
    while not (tmp_path / "count.precise").exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(0.2)
    p.send_signal(signal.SIGTERM)
    out, err = p.communicate(timeout=60)
    assert p.returncode == 1
    r = rows(out)
    assert r[("launch_loop", "none")][2] == "4" and r[("launch_loop", "culprit precise")][2] == "failed"
    assert "stopped by SIGTERM during repetition 1" in out
    assert out.rstrip().endswith("2 passed, 1 failed")


@pytest.mark.parametrize("args", [["--reps", "0"], ["--warmup", "-1"], ["--extra", "nocolon"],
                                  ["--configs", "record,none"], ["--workloads", "nope"]])
def test_bad_arguments_are_refused(tmp_path, args):
    p = run_bench(tmp_path, *args)
    out, err = p.communicate(timeout=60)
    assert p.returncode == 2 and "error:" in err and "| workload" not in out


# ---- --ab: recording against culprit.paused() in one process ----

import workloads  # noqa: E402


def test_run_for_stops_at_the_first_synchronize_past_its_time(monkeypatch):
    now = [0.0]
    syncs = []
    monkeypatch.setattr(workloads.time, "perf_counter", lambda: now[0])

    def step():
        now[0] += 3.0

    # 10 steps are 30 units: the check after 20 steps (60 units) is the first past 45
    assert workloads.run_for(step, 45.0, lambda: syncs.append(now[0])) == (20, 60.0)
    assert syncs == [30.0, 60.0]


def test_alternate_pairs_windows_in_flipping_order(monkeypatch):
    order = []
    state = {"paused": False}

    class Paused:
        def __enter__(self):
            state["paused"] = True

        def __exit__(self, *exc):
            state["paused"] = False

    def fake_run_for(step, seconds, sync, every=10):
        order.append(("paused" if state["paused"] else "recording", seconds))
        return (10, 1.0) if state["paused"] else (8, 1.0)  # recording runs at 0.8 of the paused speed

    monkeypatch.setattr(workloads, "run_for", fake_run_for)
    steps, taken, ratios = workloads.alternate(None, 12.0, None, 3, Paused)
    assert ratios == [0.8, 0.8, 0.8]
    assert (steps, taken) == (24, 3.0)  # the recording windows only
    assert order == [("recording", 2.0), ("paused", 2.0), ("paused", 2.0), ("recording", 2.0),
                     ("recording", 2.0), ("paused", 2.0)]


def test_parse_ab_and_its_table():
    out = ("metric=images_per_s value=1300.0 unit=images/s better=higher workload=resnet50 ab_ratio=0.9500 "
           "ab_min=0.9300 ab_max=0.9700\n"
           "metric=steps_per_s value=12.5 unit=steps/s better=higher workload=smallop\n")
    assert bench.parse_ab(out) == {"resnet50": (0.95, 0.93, 0.97)}
    # parse() keeps reading the result itself from such a line
    assert bench.parse(out, ["resnet50", "smallop"])["resnet50"] == (1300.0, "images/s", "higher")
    rows = bench.ab_rows({("resnet50", "record"): [(0.95, 0.93, 0.97), (0.91, 0.90, 0.99), (0.96, 0.94, 0.98)]})
    assert rows == ["| resnet50 | culprit record | 0.950 | 0.900-0.990 | 3 |"]


def test_ab_goes_to_torch_workloads_only():
    cmd = bench.group_cmd(["smallop", "resnet50"], "/b", 3, 2, 6)
    assert cmd[-2:] == ["--ab", "6"] and "smallop,resnet50" in cmd
    assert "--ab" not in bench.group_cmd(["smallop"], "/b", 3, 2, 0)
    assert bench.group_cmd(["launch_loop"], "/b", 3, 2, 6) == ["/b/bin/bench_launch_loop", "200000"]


def test_workloads_ab_needs_the_library(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "LD_PRELOAD"}
    p = subprocess.run([sys.executable, os.path.join(BENCH_DIR, "workloads.py"), "smallop", "--ab"], env=env,
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=60)
    assert p.returncode == 2 and "run it with libculprit.so preloaded" in p.stderr and "metric=" not in p.stdout


def test_run_for_checks_the_clock_every_n_steps(monkeypatch):
    now = [0.0]
    syncs = []
    monkeypatch.setattr(workloads.time, "perf_counter", lambda: now[0])

    def step():
        now[0] += 3.0

    # one step per check (gpt2's long steps): the first check past 5 units is after the second step
    assert workloads.run_for(step, 5.0, lambda: syncs.append(now[0]), every=1) == (2, 6.0)
    assert syncs == [3.0, 6.0]


# ---- the gpt2 workload, and workloads that cannot run here ----

def test_every_workload_is_benched_by_default():
    assert set(bench.PY_WORKLOADS) | set(bench.SOLO_PY_WORKLOADS) == set(workloads.WORKLOADS)
    assert set(bench.SOLO_PY_WORKLOADS) == set(workloads.SOLO)
    assert bench.PY_WORKLOADS[-1] == "gpt2"  # the largest runs after the others in their shared process


def test_a_solo_workload_refuses_company(capsys):
    with pytest.raises(SystemExit):
        sys.argv = ["workloads.py", "first10s,smallop"]
        workloads.main()
    assert "first10s must be the only workload of its process" in capsys.readouterr().err


def test_variables_may_hold_commas():
    assert bench.split_vars("A=1,FLAGS=skip_a,skip_b,B_2=x") == {"A": "1", "FLAGS": "skip_a,skip_b", "B_2": "x"}


def test_plain_configuration_runs_without_culprit(tmp_path):
    extras = {"dumps": {"CUDA_ENABLE_COREDUMP_ON_EXCEPTION": "1", "CUDA_COREDUMP_FILE": "{tmp}/core", "_plain": "1"}}
    env = bench.config_env("dumps", "/nowhere", extras, str(tmp_path))
    assert "LD_PRELOAD" not in env and "CULPRIT_DIR" not in env
    assert env["CUDA_ENABLE_COREDUMP_ON_EXCEPTION"] == "1"
    assert env["CUDA_COREDUMP_FILE"] == str(tmp_path) + "/core"
    assert "_plain" not in env


def test_parse_reads_a_skipped_workload():
    out = ("metric=steps_per_s value=12.5 unit=steps/s better=higher workload=smallop\n"
           "skipped workload=gpt2 reason=transformers is not installed (No module named 'transformers')\n")
    found = bench.parse(out, ["smallop", "gpt2"])
    assert found["smallop"] == (12.5, "steps/s", "higher")
    assert found["gpt2"] == (None, "transformers is not installed (No module named 'transformers')", "skipped")


def no_transformers(tmp_path):
    """A PYTHONPATH folder whose transformers fails to import as a missing one does, whatever is installed."""
    stub = tmp_path / "stub" / "transformers"
    stub.mkdir(parents=True)
    (stub / "__init__.py").write_text("raise ImportError(\"No module named 'transformers'\")\n")
    return str(tmp_path / "stub")


def test_gpt2_without_transformers_says_it_is_skipped(tmp_path):
    env = dict(os.environ, PYTHONPATH=no_transformers(tmp_path))
    env.pop("LD_PRELOAD", None)
    p = subprocess.run([sys.executable, os.path.join(BENCH_DIR, "workloads.py"), "gpt2", "--seconds", "1"], env=env,
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip() == ("skipped workload=gpt2 reason=transformers is not installed "
                                "(No module named 'transformers')")


def test_bench_reports_a_skipped_workload_as_skipped_not_failed(tmp_path):
    p = run_bench(tmp_path, "--workloads", "gpt2", "--configs", "none,record", "--reps", "1", "--seconds", "1",
                  env={"PYTHONPATH": no_transformers(tmp_path)})
    out, err = p.communicate(timeout=120)
    assert p.returncode == 0, err
    lines = [line for line in out.splitlines() if line.startswith("| gpt2 |") and line.count("|") == 8]
    assert lines == ["| gpt2 | none | skipped: transformers is not installed (No module named 'transformers') "
                     "| | | | |",
                     "| gpt2 | culprit record | skipped: transformers is not installed (No module named "
                     "'transformers') | | | | |"]
    assert "failed runs" not in out
    assert out.rstrip().endswith("0 passed, 0 failed, 2 skipped")


# ---- --marks: the completion-mark study ----

MARKS = r"""#!/bin/sh
echo "$@" > "$BENCH_TEST_DIR/marks.args"
[ -n "$BENCH_TEST_MARKS_FAIL" ] && { echo "bench_mark_cost: it broke" >&2; exit 3; }
echo "marks device=NVIDIA_H200 driver=13000 toolkit=13000 mem_ops_v1=0 mem_ops_64=1 kernels=3000 reps=3 fault=oob"
echo "mark write64 accepted=1 rc=CUDA_SUCCESS entry=dlsym:cuStreamWriteValue64_v2 works=1 ordered=1 mark_ms=50.1 kernel_ms=50.1 host_ns=700 none_ns_10us=10500.0 ns_per_kernel_10us=12500.0 ratio_10us=0.840 none_ns_30us=30500.0 ns_per_kernel_30us=32500.0 ratio_30us=0.938 refused=0 fault=oob sync_rc=cudaErrorIllegalAddress survives=1 landed=32/32 after_fault=0 read=host_memory survives_after_exit=- error=-"
echo "mark write64_nobarrier accepted=0 rc=CUDA_ERROR_INVALID_VALUE entry=dlsym:cuStreamWriteValue64_v2 works=- ordered=- error=-"
echo "mark ipc_event accepted=1 rc=CUDA_SUCCESS entry=- ordered=1 survives=0 read=other_process survives_after_exit=0 error=timed_out_in_fault"
echo "marks done rows=3 accepted=2"
"""


def marks_build(tmp_path):
    build = fake_build(tmp_path)
    prog = tmp_path / "build" / "bin" / "bench_mark_cost"
    prog.write_text(MARKS)
    prog.chmod(prog.stat().st_mode | stat.S_IXUSR)
    return build


def test_parse_marks_and_its_table():
    head, rows = bench.parse_marks("noise\nmarks device=NVIDIA_H200 driver=13000 fault=oob\n"
                                   "mark write64 accepted=1 ordered=1 survives=1 ns_per_kernel_10us=12500.0 "
                                   "ratio_10us=0.840 entry=dlsym:cuStreamWriteValue64_v2 error=-\n"
                                   "mark write64_v1 accepted=0 rc=CUDA_ERROR_NOT_SUPPORTED entry=dlsym:x\n"
                                   "marks done rows=2 accepted=1\n")
    assert head == {"device": "NVIDIA_H200", "driver": "13000", "fault": "oob"}
    assert [name for name, _ in rows] == ["write64", "write64_v1"]
    table = bench.marks_rows(rows)
    assert table[0] == ("| write64 | 1 | 1 | 1 | 12500.0 | 0.840 | - | - | - | "
                        "entry dlsym:cuStreamWriteValue64_v2 |")
    assert table[1] == ("| write64_v1 | 0 | - | - | - | - | - | - | - | "
                        "refused: CUDA_ERROR_NOT_SUPPORTED; entry dlsym:x |")


def test_marks_runs_the_study_once_and_prints_its_table(tmp_path):
    marks_build(tmp_path)
    p = run_bench(tmp_path, "--reps", "2", "--configs", "none,record", "--marks")
    out, err = p.communicate(timeout=120)
    assert p.returncode == 0, err
    assert (tmp_path / "marks.args").read_text().strip() == ""  # all marks, no tool's variables needed
    assert "Completion marks (bench_mark_cost, no tool, NVIDIA H200, driver 13000" in out
    rows = [line for line in out.splitlines() if line.startswith("| write64") or line.startswith("| ipc_event")]
    assert rows == ["| write64 | 1 | 1 | 1 | 12500.0 | 0.840 | 32500.0 | 0.938 | 700 | "
                    "entry dlsym:cuStreamWriteValue64_v2; read by host memory |",
                    "| write64_nobarrier | 0 | - | - | - | - | - | - | - | "
                    "refused: CUDA_ERROR_INVALID_VALUE; entry dlsym:cuStreamWriteValue64_v2 |",
                    "| ipc_event | 1 | 1 | 0 | - | - | - | - | - | "
                    "read by other process; after its exit: 0; error: timed_out_in_fault |"]
    assert out.rstrip().endswith("4 passed, 0 failed")  # the launch loop's runs; the study is not a run


def test_marks_names_and_failure(tmp_path):
    marks_build(tmp_path)
    p = run_bench(tmp_path, "--reps", "1", "--configs", "none", "--marks", "write64,event")
    out, err = p.communicate(timeout=120)
    assert p.returncode == 0, err
    assert (tmp_path / "marks.args").read_text().split() == ["--only", "write64,event"]
    p = run_bench(tmp_path, "--reps", "1", "--configs", "none", "--marks", env={"BENCH_TEST_MARKS_FAIL": "1"})
    out, err = p.communicate(timeout=120)
    assert p.returncode == 1
    assert "- marks: exit 3, 0 rows: ['bench_mark_cost: it broke']" in out
    assert out.rstrip().endswith("1 passed, 1 failed")
