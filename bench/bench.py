"""culprit's benchmark driver: runs every workload under every configuration, interleaved (each repetition
runs all configurations of a workload back to back, so drift of the machine hits them alike), and prints one
markdown table: median, min-max and the ratio to "no tool" measured in the same run.

usage: python3 bench/bench.py [--build DIR] [--reps N] [--seconds S] [--workloads a,b] [--configs a,b]
                              [--extra NAME:VAR=VAL,VAR=VAL ...] [--seed-table]

Configurations: none, clb (CUDA_LAUNCH_BLOCKING=1), record, precise, blocking (culprit's modes, preloaded with
the report directory in a temporary folder). --extra adds configurations of culprit with more variables, for
exploring knobs. --seed-table also runs ResNet50 async / sync / sync+anomaly detection (the seed article's table)."""
import argparse
import datetime
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

C_WORKLOADS = {"launch_loop": ["{build}/bin/bench_launch_loop", "200000"]}
PY_WORKLOADS = ["resnet50", "smallop", "triton", "multistream"]
CULPRIT_MODES = {"record": {"CULPRIT_MODE": "record"}, "precise": {"CULPRIT_MODE": "precise"},
                 "blocking": {"CULPRIT_MODE": "blocking"}}


def workload_cmd(name, build, seconds):
    if name in C_WORKLOADS:
        return [a.format(build=build) for a in C_WORKLOADS[name]]
    return [sys.executable, os.path.join(HERE, "workloads.py"), name, "--seconds", str(seconds)]


def config_env(name, build, extras, tmp):
    env = dict(os.environ)
    for k in list(env):
        if k.startswith("CULPRIT_") or k in ("CUDA_LAUNCH_BLOCKING", "LD_PRELOAD", "BENCH_ANOMALY"):
            del env[k]
    lib = os.path.join(build, "lib", "libculprit.so")
    if name == "none":
        return env
    if name == "clb":
        env["CUDA_LAUNCH_BLOCKING"] = "1"
        return env
    if name == "clb_anomaly":
        env["CUDA_LAUNCH_BLOCKING"] = "1"
        env["BENCH_ANOMALY"] = "1"
        return env
    env["LD_PRELOAD"] = lib
    env["CULPRIT_DIR"] = os.path.join(tmp, "reports")
    if name in CULPRIT_MODES:
        env.update(CULPRIT_MODES[name])
    elif name in extras:
        env.update(extras[name])
    else:
        raise SystemExit("unknown configuration %s" % name)
    return env


def parse(out):
    for line in out.splitlines():
        if line.startswith("launch_us="):
            return float(line.split("=", 1)[1]), "us/launch", "lower"
        if line.startswith("metric="):
            f = dict(p.split("=", 1) for p in line.split())
            return float(f["value"]), f["unit"], f["better"]
    return None


def run_one(cmd, env, timeout):
    try:
        p = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                           timeout=timeout)
    except subprocess.TimeoutExpired:
        return None, "timed out"
    r = parse(p.stdout)
    if p.returncode != 0 or r is None:
        return None, "exit %d: %s" % (p.returncode, p.stderr.strip().splitlines()[-1:] if p.stderr else "")
    return r, None


def gpu_line():
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"],
                             stdout=subprocess.PIPE, text=True, timeout=30).stdout.strip().splitlines()
        return out[0] if out else "unknown GPU"
    except (OSError, subprocess.TimeoutExpired):
        return "unknown GPU"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--seconds", type=float, default=5.0)
    ap.add_argument("--workloads", default="launch_loop,smallop,resnet50,triton,multistream")
    ap.add_argument("--configs", default="none,clb,record,precise,blocking")
    ap.add_argument("--extra", nargs="*", default=[])
    ap.add_argument("--seed-table", action="store_true")
    ap.add_argument("--timeout", type=float, default=240)
    a = ap.parse_args()
    build = os.path.abspath(a.build)
    extras = {}
    for e in a.extra:
        name, _, kvs = e.partition(":")
        extras[name] = dict(kv.split("=", 1) for kv in kvs.split(",") if kv)
    configs = a.configs.split(",") + list(extras)
    if configs[0] != "none":
        raise SystemExit("the first configuration must be none (ratios are taken against it)")
    tmp = tempfile.mkdtemp(prefix="culprit-bench.")
    results = {}
    failures = []
    plan = [(w, configs) for w in a.workloads.split(",")]
    if a.seed_table:
        plan.append(("resnet50", ["none", "clb", "clb_anomaly"]))
    try:
        for w, cfgs in plan:
            for rep in range(a.reps):
                for c in cfgs:
                    cmd = workload_cmd(w, build, a.seconds)
                    r, err = run_one(cmd, config_env(c, build, extras, tmp), a.timeout)
                    key = (w, c, tuple(cfgs))
                    if r is None:
                        failures.append("%s/%s rep %d: %s" % (w, c, rep + 1, err))
                        print("  %s %s rep %d: FAILED %s" % (w, c, rep + 1, err), file=sys.stderr)
                        continue
                    results.setdefault(key, []).append(r)
                    print("  %s %s rep %d: %.4g %s" % (w, c, rep + 1, r[0], r[1]), file=sys.stderr)
                    shutil.rmtree(os.path.join(tmp, "reports"), ignore_errors=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

    print("culprit benchmark, %s, %s, %d interleaved reps, median (min-max), ratio = speed relative to no tool"
          % (datetime.datetime.utcnow().strftime("%Y-%m-%d %H:%M UTC"), gpu_line(), a.reps))
    print()
    print("| workload | config | median | min-max | unit | ratio to no tool |")
    print("|---|---|---|---|---|---|")
    for w, cfgs in plan:
        base = results.get((w, "none", tuple(cfgs)))
        bmed = statistics.median(v for v, _, _ in base) if base else None
        for c in cfgs:
            rs = results.get((w, c, tuple(cfgs)))
            if not rs:
                print("| %s | %s | failed | | | |" % (w, c))
                continue
            vals = [v for v, _, _ in rs]
            med = statistics.median(vals)
            unit, better = rs[0][1], rs[0][2]
            ratio = ""
            if bmed:
                ratio = "%.3f" % ((med / bmed) if better == "higher" else (bmed / med))
                if better == "lower":
                    ratio += " (%+.2f us)" % (med - bmed)
            print("| %s | %s | %.4g | %.4g-%.4g | %s | %s |" % (w, c, med, min(vals), max(vals), unit, ratio))
    if failures:
        print()
        print("failed runs:")
        for f in failures:
            print("- " + f)
    print()
    print("%d passed, %d failed" % (sum(len(v) for v in results.values()), len(failures)))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
