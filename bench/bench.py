"""culprit's benchmark driver: runs every workload under every configuration, interleaved (each repetition
runs every configuration back to back, so drift of the machine hits them alike; every other repetition runs them
in reverse order), and prints one markdown table: median, min-max, the ratio of medians to "no tool" measured in
the same run, and the paired ratio (each repetition's run against the no-tool run of the same repetition: median
and min-max of those pairs), then the peak resident memory of each process and what culprit added to it.

usage: python3 bench/bench.py [--build DIR] [--reps N] [--seconds S] [--warmup S] [--workloads a,b] [--configs a,b]
                              [--extra NAME:VAR=VAL,VAR=VAL ...] [--plain NAME:VAR=VAL,VAR=VAL ...]
                              [--seed-table] [--budget S] [--ab [PAIRS]]
                              [--marks [NAMES]]

The torch workloads of one repetition and configuration run in one process, one after the other (torch is
imported once); the launch loop is a C program of its own. Configurations: none, clb (CUDA_LAUNCH_BLOCKING=1),
record, precise, blocking (culprit's modes, preloaded with the report directory in a temporary folder), and, when
named in --configs, blocking_window (blocking over launches 2000:2015 only: the targeted rerun a verdict with
candidates prints, to set beside CUDA_LAUNCH_BLOCKING, which blocks every launch). --extra
adds configurations of culprit with more variables, for exploring knobs; --plain adds configurations without
culprit, only variables (what the driver's own settings cost: CUDA_ENABLE_COREDUMP_ON_EXCEPTION, say); in both,
{tmp} in a value is the run's temporary folder. first10s (the tinygpt steps done in the first 10 s from the first
one, cold) runs in a process of its own. --seed-table also runs ResNet50 async /
sync / sync+anomaly detection (the seed article's table). --budget stops starting repetitions after S seconds;
the table then says how many ran. --warmup S runs each torch workload S seconds untimed before its measurement
(culprit learns a program's call chains in its first seconds; without it every measurement includes that).
--ab makes the torch workloads under record and precise also measure themselves against culprit.paused() in the
same process (workloads.py --ab: pairs of windows, recording and paused), and prints a table of those ratios:
the cost of recording with the drift between processes taken out. A workload that cannot run here for want of a
package (gpt2 without transformers) says so and is reported as skipped, not failed. --marks also runs the
completion-mark study (bin/bench_mark_cost, no tool) once before the repetitions and prints its table: for each
way of marking a kernel's completion, whether the driver accepts it, whether it waits for the kernel, whether it
can be read after a fault, and its GPU cost between short kernels; NAMES limits it to those marks."""
import argparse
import datetime
import re
import hashlib
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

C_WORKLOADS = {"launch_loop": ["{build}/bin/bench_launch_loop", "200000"]}
# in the order they run in one process: gpt2, the largest by far, last, so the others run as they always have
PY_WORKLOADS = ["smallop", "resnet50", "triton", "multistream", "tinygpt", "decode", "gpt2"]
# torch workloads that run alone in a process of their own (first10s measures the process's own start)
SOLO_PY_WORKLOADS = ["first10s"]
MARKS_CMD = "{build}/bin/bench_mark_cost"
MARKS_TIMEOUT = 900  # seconds for the whole mark study (one child per mark, each with a limit of its own)
# the keys of the study's "mark NAME key=value ..." lines that the table shows, with their column titles
MARK_COLUMNS = [("accepted", "accepted"), ("ordered", "waits for the kernel"), ("survives", "read after a fault"),
                ("ns_per_kernel_10us", "ns/kernel, 10 us kernels"), ("ratio_10us", "ratio"),
                ("ns_per_kernel_30us", "ns/kernel, 30 us kernels"), ("ratio_30us", "ratio"),
                ("host_ns", "host ns/mark")]
CULPRIT_MODES = {"record": {"CULPRIT_MODE": "record"}, "precise": {"CULPRIT_MODE": "precise"},
                 "blocking": {"CULPRIT_MODE": "blocking"},
                 # the rerun a verdict with candidates prints: blocking over a window of 16 launches only
                 "blocking_window": {"CULPRIT_MODE": "blocking", "CULPRIT_LAUNCHES": "2000:2015"}}
CONFIG_TITLES = {"none": "none", "clb": "CUDA_LAUNCH_BLOCKING=1", "clb_anomaly": "CLB + anomaly detection",
                 "record": "culprit record", "precise": "culprit precise", "blocking": "culprit blocking",
                 "blocking_window": "culprit blocking, launches 2000:2015"}


AB_CONFIGS = ("record", "precise")  # the configurations --ab measures against culprit.paused()


def group_cmd(workloads, build, seconds, warmup, ab=0):
    """The command running WORKLOADS (one C workload, or any number of torch ones) in one process; AB > 0: with
    that many pairs of windows against culprit.paused() (torch workloads only)."""
    if len(workloads) == 1 and workloads[0] in C_WORKLOADS:
        return [a.format(build=build) for a in C_WORKLOADS[workloads[0]]]
    return [sys.executable, os.path.join(HERE, "workloads.py"), ",".join(workloads), "--seconds", str(seconds),
            "--warmup", str(warmup)] + (["--ab", str(ab)] if ab else [])


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
    if name in extras and extras[name].get("_plain"):
        env.update({k: v.replace("{tmp}", tmp) for k, v in extras[name].items() if k != "_plain"})
        return env
    env["LD_PRELOAD"] = lib
    env["CULPRIT_DIR"] = os.path.join(tmp, "reports")
    if name in CULPRIT_MODES:
        env.update(CULPRIT_MODES[name])
    elif name in extras:
        env.update({k: v.replace("{tmp}", tmp) for k, v in extras[name].items()})
    else:
        raise SystemExit("unknown configuration %s" % name)
    return env


def split_vars(kvs):
    """{VAR: VAL} from "VAR=VAL,VAR=VAL": a comma starts a new variable only before NAME=, so a value may hold
    commas (CUDA_COREDUMP_GENERATION_FLAGS=skip_a,skip_b)."""
    return dict(kv.split("=", 1) for kv in re.split(r",(?=[A-Za-z_][A-Za-z0-9_]*=)", kvs) if kv)


def parse(out, workloads):
    """{workload: (value, unit, better)} from a run's stdout; a workload that said it was skipped (`skipped
    workload=NAME reason=TEXT`) maps to (None, TEXT, "skipped")."""
    found = {}
    for line in out.splitlines():
        if line.startswith("skipped ") and " workload=" in line:
            head, _, reason = line.partition(" reason=")
            found[head.split("workload=", 1)[1].split()[0]] = (None, reason.strip() or "no reason given", "skipped")
        elif line.startswith("launch_us="):
            found[workloads[0]] = (float(line.split("=", 1)[1]), "us/launch", "lower")
        elif line.startswith("metric="):
            f = dict(p.split("=", 1) for p in line.split() if "=" in p)
            found[f.get("workload", workloads[0])] = (float(f["value"]), f["unit"], f["better"])
    return found


def parse_ab(out):
    """{workload: (median, min, max)} of the recording/paused ratios a run under --ab printed."""
    found = {}
    for line in out.splitlines():
        if line.startswith("metric=") and " ab_ratio=" in line:
            f = dict(p.split("=", 1) for p in line.split() if "=" in p)
            found[f["workload"]] = (float(f["ab_ratio"]), float(f["ab_min"]), float(f["ab_max"]))
    return found


def ab_rows(ab):
    """The A/B table's rows from {(workload, config): [(median, min, max) per repetition]}: the median of the
    repetitions' medians and the range of everything seen."""
    rows = []
    for (w, c), per_rep in sorted(ab.items()):
        meds = [m for m, _, _ in per_rep]
        rows.append("| %s | %s | %.3f | %.3f-%.3f | %d |" % (w, CONFIG_TITLES.get(c, c), statistics.median(meds),
                                                           min(lo for _, lo, _ in per_rep),
                                                           max(hi for _, _, hi in per_rep), len(per_rep)))
    return rows


def parse_marks(out):
    """The mark study's output: ({key: value} of its "marks ..." header, [(name, {key: value})] of its rows)."""
    head, rows = {}, []
    for line in out.splitlines():
        words = line.split()
        if len(words) >= 2 and words[0] == "mark":
            rows.append((words[1], dict(w.split("=", 1) for w in words[2:] if "=" in w)))
        elif words[:1] == ["marks"] and words[1:2] != ["done"]:
            head = dict(w.split("=", 1) for w in words[1:] if "=" in w)
    return head, rows


def marks_rows(rows):
    """The mark table's rows; the last column says why a mark was refused or failed, and through which entry
    point it was called."""
    out = []
    for name, f in rows:
        cells = [f.get(k, "-") for k, _ in MARK_COLUMNS]
        note = []
        if f.get("accepted") == "0" and f.get("rc", "-") != "-":
            note.append("refused: " + f["rc"])
        if f.get("entry", "-") != "-":
            note.append("entry " + f["entry"])
        if f.get("read", "-") != "-":
            note.append("read by " + f["read"].replace("_", " "))
        if f.get("survives_after_exit", "-") != "-":
            note.append("after its exit: %s" % f["survives_after_exit"])
        if f.get("error", "-") != "-":
            note.append("error: " + f["error"])
        out.append("| %s | %s | %s |" % (name, " | ".join(cells), "; ".join(note)))
    return out


def run_marks(build, names, env, timeout, tmp):
    """Runs the mark study once (all marks, or the comma-separated NAMES); returns (header, rows, error or None).
    Rows printed before a timeout or crash are kept."""
    cmd = [MARKS_CMD.format(build=build)] + ([] if names == "all" else ["--only", names])
    try:
        code, _, out, err_tail = run_cmd(cmd, env, timeout, tmp)
    except OSError as e:
        return {}, [], "cannot run %s: %s" % (cmd[0], e.strerror)
    head, rows = parse_marks(out)
    if code is None:
        return head, rows, "timed out after %g s" % timeout
    if code == 77:
        return head, rows, "skipped: no CUDA device"
    if code != 0 or not rows:
        return head, rows, "exit %d, %d rows: %s" % (code, len(rows), err_tail)
    return head, rows, None


def run_cmd(cmd, env, timeout, tmp):
    """Runs CMD in a session of its own, stdout and stderr to files in TMP, and kills the whole session after
    TIMEOUT seconds. Returns (exit code, or None when it timed out; its resource usage, or None; its stdout; the
    last line of its stderr as a list). OSError when it cannot start."""
    out_path, err_path = os.path.join(tmp, "stdout"), os.path.join(tmp, "stderr")
    with open(out_path, "w") as out, open(err_path, "w") as err:
        p = subprocess.Popen(cmd, env=env, stdout=out, stderr=err, start_new_session=True)

    def kill():
        os.killpg(p.pid, signal.SIGKILL)
        os.wait4(p.pid, 0)
        p.returncode = -signal.SIGKILL  # reaped here (wait4 gives its resource usage): Popen must not wait

    deadline = time.monotonic() + timeout
    code, usage = None, None
    try:
        while True:
            pid, status, usage = os.wait4(p.pid, os.WNOHANG)
            if pid:
                code = p.returncode = os.waitstatus_to_exitcode(status)
                break
            if time.monotonic() > deadline:
                kill()
                usage = None
                break
            time.sleep(0.05)
    except Stopped:
        kill()
        raise
    with open(out_path) as f:
        out = f.read()
    with open(err_path) as f:
        err_tail = f.read().strip().splitlines()[-1:]
    return code, usage, out, err_tail


def run_one(cmd, env, timeout, workloads, tmp):
    """Runs CMD; returns ({workload: result}, peak RSS in MiB or None, error or None)."""
    try:
        code, usage, out, err_tail = run_cmd(cmd, env, timeout, tmp)
    except OSError as e:
        return {}, None, "cannot run %s: %s" % (cmd[0], e.strerror)
    if code is None:
        return {}, None, "timed out after %g s" % timeout
    found = parse(out, workloads)
    rss = usage.ru_maxrss / 1024.0  # kilobytes on Linux
    missing = [w for w in workloads if w not in found]
    if code != 0 or missing:
        return found, rss, "exit %d, no result for %s: %s" % (code, ",".join(missing) or "-", err_tail)
    return found, rss, None


def gpu_line():
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"],
                             stdout=subprocess.PIPE, text=True, timeout=30).stdout.strip().splitlines()
        return out[0] if out else "unknown GPU"
    except (OSError, subprocess.TimeoutExpired):
        return "unknown GPU"


def build_line(build):
    """Which build was measured: the library's SHA-256 (its first 12 hex digits) and the tool's version line."""
    lib = os.path.join(build, "lib", "libculprit.so")
    try:
        with open(lib, "rb") as f:
            text = "libculprit.so sha256 %s" % hashlib.sha256(f.read()).hexdigest()[:12]
    except OSError:
        text = "no libculprit.so in %s" % build
    try:
        out = subprocess.run([os.path.join(build, "bin", "culprit"), "version"], stdout=subprocess.PIPE,
                             stderr=subprocess.DEVNULL, text=True, timeout=30).stdout.strip()
        if out:
            text += " (%s)" % out.splitlines()[0]
    except (OSError, subprocess.TimeoutExpired):
        pass
    return text


def ratio_text(med, bmed, better):
    if not bmed:
        return ""
    text = "%.3f" % speed_ratio(med, bmed, better)
    if better == "lower":
        text += " (%+.2f us)" % (med - bmed)
    return text


def speed_ratio(value, base, better):
    return value / base if better == "higher" else base / value


def paired_text(rs, base):
    """Median and min-max of the ratios of each repetition's run to the no-tool run of the same repetition:
    drift of the machine between repetitions cancels in each pair. Empty without a pair."""
    by_rep = {rep: v for v, _, _, rep in base or []}
    pairs = [speed_ratio(v, by_rep[rep], better) for v, _, better, rep in rs if by_rep.get(rep)]
    if not pairs:
        return ""
    return "%.3f (%.3f-%.3f)" % (statistics.median(pairs), min(pairs), max(pairs))


class Stopped(Exception):
    """SIGTERM or SIGINT arrived: the table is printed from the runs made so far."""


def stop(signum, frame):
    raise Stopped(signal.Signals(signum).name)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--seconds", type=float, default=5.0)
    ap.add_argument("--warmup", type=float, default=0.0, help="untimed seconds before each torch measurement")
    ap.add_argument("--workloads", default=",".join(list(C_WORKLOADS) + PY_WORKLOADS + SOLO_PY_WORKLOADS))
    ap.add_argument("--configs", default="none,clb,record,precise,blocking")
    ap.add_argument("--extra", nargs="*", default=[])
    ap.add_argument("--plain", nargs="*", default=[],
                    help="NAME:VAR=VAL[,VAR=VAL...]: a configuration without culprit, with these variables")
    ap.add_argument("--seed-table", action="store_true")
    ap.add_argument("--timeout", type=float, default=300)
    ap.add_argument("--budget", type=float, default=0, help="seconds after which no repetition starts (0: none)")
    ap.add_argument("--ab", type=int, nargs="?", const=6, default=0, metavar="PAIRS",
                    help="torch workloads under record/precise also measured against culprit.paused(), in process")
    ap.add_argument("--marks", nargs="?", const="all", default=None, metavar="NAMES",
                    help="also run the completion-mark study once, before the repetitions (NAMES: only those marks)")
    a = ap.parse_args()
    if a.ab < 0:
        ap.error("--ab takes a positive number of window pairs")
    if a.reps < 1 or a.seconds <= 0 or a.timeout <= 0 or a.budget < 0 or a.warmup < 0:
        ap.error("--reps, --seconds and --timeout must be positive, --budget and --warmup not negative")
    build = os.path.abspath(a.build)
    extras = {}
    for e in a.extra:
        name, _, kvs = e.partition(":")
        if not name or not kvs:
            ap.error("--extra takes NAME:VAR=VAL[,VAR=VAL...], not %r" % e)
        extras[name] = split_vars(kvs)
    plains = {}
    for e in a.plain:
        name, _, kvs = e.partition(":")
        if not name or not kvs or name in extras:
            ap.error("--plain takes NAME:VAR=VAL[,VAR=VAL...] with a name of its own, not %r" % e)
        plains[name] = split_vars(kvs)
    extras.update({name: dict(kv, _plain="1") for name, kv in plains.items()})
    configs = a.configs.split(",") + list(extras)
    if configs[0] != "none":
        ap.error("the first configuration must be none (ratios are taken against it)")
    workloads = a.workloads.split(",")
    known = list(C_WORKLOADS) + PY_WORKLOADS + SOLO_PY_WORKLOADS
    unknown = [w for w in workloads if w not in known]
    if unknown:
        ap.error("unknown workload %s (known: %s)" % (", ".join(unknown), ", ".join(known)))

    # Groups of workloads sharing a process, each with the configurations it runs under.
    groups = [((w,), tuple(configs)) for w in workloads if w in C_WORKLOADS]
    py = tuple(w for w in PY_WORKLOADS if w in workloads)
    if py:
        groups.append((py, tuple(configs)))
    groups += [((w,), tuple(configs)) for w in SOLO_PY_WORKLOADS if w in workloads]
    if a.seed_table:
        if "resnet50" not in workloads or "clb" not in configs:
            ap.error("--seed-table takes its async and sync rows from resnet50 under none and clb: keep both")
        # only the third row runs on its own; its ratio is taken against the torch group's no-tool resnet50
        groups.append((("resnet50",), ("clb_anomaly",)))

    tmp = tempfile.mkdtemp(prefix="culprit-bench.")
    results, rss, failures, ab, skipped = {}, {}, [], {}, {}
    marks_head, marks = {}, None
    t_start, reps_done = time.monotonic(), 0
    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    try:
        if a.marks:
            # first, on a quiet machine; no tool: it measures the driver, not culprit
            marks_head, marks, err = run_marks(build, a.marks, config_env("none", build, extras, tmp),
                                               max(a.timeout, MARKS_TIMEOUT), tmp)
            print("  marks: %d rows%s" % (len(marks), ", " + err if err else ""), file=sys.stderr)
            if err:
                failures.append("marks: " + err)
            t_start = time.monotonic()  # the budget is for the repetitions
        for rep in range(a.reps):
            if rep and a.budget and time.monotonic() - t_start > a.budget:
                print("budget of %g s spent: stopping after %d repetitions" % (a.budget, rep), file=sys.stderr)
                break
            for wl, cfgs in groups:
                # every other repetition runs the configurations in reverse order (none last), so a machine
                # that speeds up or slows down during a repetition does not favour the configurations run first
                for c in (cfgs if rep % 2 == 0 else cfgs[::-1]):
                    pairs = a.ab if c in AB_CONFIGS else 0
                    found, peak, err = run_one(group_cmd(list(wl), build, a.seconds, a.warmup, pairs),
                                               config_env(c, build, extras, tmp), a.timeout, list(wl), tmp)
                    if pairs:
                        with open(os.path.join(tmp, "stdout")) as f:
                            for w, r in parse_ab(f.read()).items():
                                ab.setdefault((w, c), []).append(r)
                    if peak is not None and not err:
                        rss.setdefault((wl, cfgs, c), []).append(peak)
                    for w, r in found.items():
                        if r[0] is None:  # the workload said it cannot run here
                            skipped.setdefault((w, cfgs, c), []).append(r[1])
                            print("  rep %d %s %s: skipped: %s" % (rep + 1, w, c, r[1]), file=sys.stderr)
                            continue
                        results.setdefault((w, cfgs, c), []).append(r + (rep,))
                        print("  rep %d %s %s: %.4g %s" % (rep + 1, w, c, r[0], r[1]), file=sys.stderr)
                    if err:
                        failures.append("%s/%s rep %d: %s" % ("+".join(wl), c, rep + 1, err))
                        print("  rep %d %s %s: FAILED %s" % (rep + 1, "+".join(wl), c, err), file=sys.stderr)
                    reports = os.path.join(tmp, "reports")
                    if os.path.isdir(reports) and os.listdir(reports):
                        failures.append("%s/%s rep %d: culprit wrote a report for a healthy workload: %s"
                                        % ("+".join(wl), c, rep + 1, ", ".join(sorted(os.listdir(reports)))))
                    shutil.rmtree(reports, ignore_errors=True)
            reps_done = rep + 1
    except Stopped as e:
        failures.append("stopped by %s during repetition %d" % (e, reps_done + 1))
        print("stopped by %s: the table holds the runs made so far" % e, file=sys.stderr)
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        shutil.rmtree(tmp, ignore_errors=True)

    print("culprit benchmark, %s, %s, build: %s, %d interleaved reps, %g s measured after %g s of warm-up, "
          "median (min-max), ratio = speed relative to no tool"
          % (datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"), gpu_line(),
             build_line(build), reps_done, a.seconds, a.warmup))
    print()
    print("| workload | config | median | min-max | unit | ratio to no tool | paired ratio (min-max) |")
    print("|---|---|---|---|---|---|---|")
    py_cfgs = tuple(configs)
    for wl, cfgs in groups:
        for w in wl:
            base = results.get((w, cfgs, "none")) or results.get((w, py_cfgs, "none"))
            bmed = statistics.median(v for v, _, _, _ in base) if base else None
            for c in cfgs:
                title = CONFIG_TITLES.get(c, c)
                rs = results.get((w, cfgs, c))
                if not rs:
                    why = skipped.get((w, cfgs, c))
                    print("| %s | %s | %s | | | | |" % (w, title, "skipped: " + why[-1] if why else "failed"))
                    continue
                vals = [v for v, _, _, _ in rs]
                med = statistics.median(vals)
                print("| %s | %s | %.4g | %.4g-%.4g | %s | %s | %s |"
                      % (w, title, med, min(vals), max(vals), rs[0][1], ratio_text(med, bmed, rs[0][2]),
                         paired_text(rs, base)))
    if a.seed_table:
        print()
        print("Seed table (ResNet50 bs32 fp32 training, images/s; async and sync are the rows above):")
        print()
        print("| setting | median | ratio to async |")
        print("|---|---|---|")
        base = results.get(("resnet50", py_cfgs, "none"))
        bmed = statistics.median(v for v, _, _, _ in base) if base else None
        for title, key in (("async (no tool)", ("resnet50", py_cfgs, "none")),
                           ("sync (CUDA_LAUNCH_BLOCKING=1)", ("resnet50", py_cfgs, "clb")),
                           ("sync + anomaly detection", ("resnet50", ("clb_anomaly",), "clb_anomaly"))):
            rs = results.get(key)
            if rs:
                med = statistics.median(v for v, _, _, _ in rs)
                print("| %s | %.4g | %s |" % (title, med, ratio_text(med, bmed, "higher")))
    print()
    print("| process | config | peak RSS MiB (median) | added to no tool |")
    print("|---|---|---|---|")
    for wl, cfgs in groups:
        base = rss.get((wl, cfgs, "none"))
        bmed = statistics.median(base) if base else None
        if bmed is None:
            continue  # a group without its own no-tool run (the seed table's third row)
        for c in cfgs:
            vals = rss.get((wl, cfgs, c))
            if not vals:
                continue
            med = statistics.median(vals)
            added = "%+.1f" % (med - bmed) if bmed is not None else ""
            print("| %s | %s | %.1f | %s |" % ("+".join(wl), CONFIG_TITLES.get(c, c), med, added))
    if ab:
        print()
        print("In-process A/B (speed while recording / speed while culprit.paused(), window pairs in one process):")
        print()
        print("| workload | config | median of the repetitions' medians | min-max of all pairs | repetitions |")
        print("|---|---|---|---|---|")
        for row in ab_rows(ab):
            print(row)
    if marks is not None:
        print()
        print("Completion marks (bench_mark_cost, no tool, %s, driver %s, one process per mark; GPU time per kernel "
              "between back-to-back kernels, ratio = speed relative to no mark in the same process; read after a "
              "fault: the marks before a faulting %s kernel read back, and none after it):"
              % (marks_head.get("device", "unknown GPU").replace("_", " "), marks_head.get("driver", "?"),
                 marks_head.get("fault", "?")))
        print()
        print("| mark | %s | note |" % " | ".join(t for _, t in MARK_COLUMNS))
        print("|---|%s---|" % ("---|" * len(MARK_COLUMNS)))
        for row in marks_rows(marks):
            print(row)
    if failures:
        print()
        print("failed runs:")
        for f in failures:
            print("- " + f)
    print()
    n_skipped = sum(len(v) for v in skipped.values())
    print("%d passed, %d failed%s" % (sum(len(v) for v in results.values()), len(failures),
                                      ", %d skipped" % n_skipped if n_skipped else ""))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
