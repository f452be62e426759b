"""The merge at scale: how long `culprit report DIR` takes and how much memory it needs on the reports of a job of
N ranks, made by real processes on the simulated driver (tests/fake/scalejob.py: one rank faults, a few lag, one
is killed, the others wait in the all-reduce until SIGTERM stops them). No GPU needed.

usage: python3 bench/merge_scale.py [--build DIR] [--ranks 1024,4096] [--reps 5] [--parallel 4]

For each N the reports are made once, then `culprit report DIR` (text) and `culprit report --json DIR` run REPS
times each on a fresh copy of them (the first look at reports as the library wrote them: culprit symbolizes them
all, one addr2line per module, and merges them), and REPS times more on the copy already looked at. Each run is a
child process of its own: wall time by the monotonic clock around it, user and system time and peak resident
memory from getrusage(RUSAGE_CHILDREN) (wait4). Prints one markdown table: median and min-max of each."""
import argparse
import datetime
import os
import platform
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "tests", "fake"))
import scalejob  # noqa: E402


def measure(argv):
    """Runs argv (output discarded); returns (wall s, user+sys s, peak RSS MiB)."""
    t0 = time.monotonic()
    p = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, ru = os.wait4(p.pid, 0)
    wall = time.monotonic() - t0
    p.returncode = os.waitstatus_to_exitcode(status)
    if p.returncode != 0:
        raise RuntimeError("%s exited with %d" % (" ".join(argv), p.returncode))
    return wall, ru.ru_utime + ru.ru_stime, ru.ru_maxrss / 1024.0


def summary(values, fmt):
    return "%s (%s-%s)" % (fmt % statistics.median(values), fmt % min(values), fmt % max(values))


def machine():
    cpus = os.cpu_count() or 0
    try:
        with open("/etc/os-release") as f:
            osname = dict(l.rstrip("\n").split("=", 1) for l in f if "=" in l).get("PRETTY_NAME", "").strip('"')
    except OSError:
        osname = platform.system()
    return "%d CPUs, %s, %s" % (cpus, osname, platform.machine())


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--ranks", default="1024,4096")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--parallel", type=int, default=4)
    a = ap.parse_args()
    cli = os.path.join(os.path.abspath(a.build), "bin", "culprit")
    if not os.access(cli, os.X_OK):
        print("merge_scale: %s is missing (build first)" % cli, file=sys.stderr)
        return 1
    work = tempfile.mkdtemp(prefix="culprit-merge-scale-")
    rows = []
    try:
        for n in [int(x) for x in a.ranks.split(",")]:
            made = os.path.join(work, "made-%d" % n)
            os.makedirs(made)
            t0 = time.monotonic()
            lost = scalejob.make(a.build, made, n, a.parallel)
            print("merge_scale: %d ranks' reports (%d files, %.1f MiB) made in %.1f s%s" % (
                n, len(os.listdir(made)), sum(os.path.getsize(os.path.join(made, f)) for f in os.listdir(made))
                / 2 ** 20, time.monotonic() - t0, "; without a hang report: %s" % lost if lost else ""),
                file=sys.stderr, flush=True)
            for what, extra in (("text", []), ("--json", ["--json"])):
                fresh, again = [], []
                for _ in range(a.reps):
                    copy = os.path.join(work, "copy")
                    shutil.rmtree(copy, ignore_errors=True)
                    shutil.copytree(made, copy)
                    fresh.append(measure([cli, "report"] + extra + [copy]))
                    again.append(measure([cli, "report"] + extra + [copy]))
                for label, runs in (("as written", fresh), ("looked at before", again)):
                    rows.append((n, what, label, summary([r[0] for r in runs], "%.2f"),
                                 summary([r[1] for r in runs], "%.2f"), summary([r[2] for r in runs], "%.0f")))
            shutil.rmtree(made)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print("culprit report DIR on N ranks' reports, %s, %d runs each (median (min-max)); %s" % (
        datetime.date.today().isoformat(), a.reps, machine()))
    print()
    print("| ranks | output | reports | wall s | CPU s (user+sys) | peak RSS MiB |")
    print("|---|---|---|---|---|---|")
    for row in rows:
        print("| %d | %s | %s | %s | %s | %s |" % row)
    return 0


if __name__ == "__main__":
    sys.exit(main())
