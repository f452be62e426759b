#!/usr/bin/env bash
# Launch-cost benchmark: runs bench_launch_loop without a tool, under CUDA_LAUNCH_BLOCKING=1, under culprit's
# record mode and under its blocking mode, interleaved (each rep runs all four in that order, so drift in the
# machine hits every mode alike), and prints a markdown table of microseconds per launch.
#
# usage: bash bench/run.sh [--build DIR] [--reps N] [--launches N]
set -u

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
build=build
reps=5
launches=200000

usage() {
  echo "usage: bash bench/run.sh [--build DIR] [--reps N] [--launches N]" >&2
  exit 2
}

while [ $# -gt 0 ]; do
  case "$1" in
  --build) [ $# -ge 2 ] || usage; build=$2; shift 2 ;;
  --reps) [ $# -ge 2 ] || usage; reps=$2; shift 2 ;;
  --launches) [ $# -ge 2 ] || usage; launches=$2; shift 2 ;;
  -h | --help) usage ;;
  *) echo "bench/run.sh: unknown argument: $1" >&2; usage ;;
  esac
done
case "$reps" in '' | *[!0-9]* | 0) echo "bench/run.sh: --reps needs a positive number" >&2; exit 2 ;; esac
case "$launches" in '' | *[!0-9]* | 0) echo "bench/run.sh: --launches needs a positive number" >&2; exit 2 ;; esac

cd "$root" || exit 1
case "$build" in /*) ;; *) build="$root/$build" ;; esac
bench="$build/bin/bench_launch_loop"
lib="$build/lib/libculprit.so"

if [ -x "$bench" ] && [ -f "$lib" ]; then
  echo "using the build in $build" >&2
elif [ -f "$build/CMakeCache.txt" ]; then
  cmake --build "$build" -j || exit 1
else
  cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo >&2 || exit 1
  cmake --build "$build" -j >&2 || exit 1
fi
if [ ! -x "$bench" ] || [ ! -f "$lib" ]; then
  echo "bench/run.sh: $bench or $lib is missing after the build" >&2
  exit 1
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/culprit-bench.XXXXXX") || exit 1
trap 'rm -rf "$work"' EXIT
modes="none clb record blocking"
failed=0

# Runs one mode once; appends its microseconds per launch to $work/<mode>.
run_mode() {
  local mode=$1 out rc us
  local -a env=(env -u CULPRIT_MODE -u CULPRIT_KERNELS -u CULPRIT_LAUNCHES -u CUDA_LAUNCH_BLOCKING)
  case "$mode" in
  none) ;;
  clb) env+=(CUDA_LAUNCH_BLOCKING=1) ;;
  record | blocking)
    mkdir -p "$work/reports"
    env+=(LD_PRELOAD="$lib" CULPRIT_MODE="$mode" CULPRIT_DIR="$work/reports")
    ;;
  esac
  out=$(timeout 300 "${env[@]}" "$bench" "$launches" 2>"$work/stderr")
  rc=$?
  us=$(printf '%s\n' "$out" | sed -n 's/^launch_us=//p')
  if [ $rc -ne 0 ] || [ -z "$us" ]; then
    echo "bench/run.sh: $mode run failed (exit status $rc):" >&2
    cat "$work/stderr" >&2
    failed=1
    return
  fi
  echo "$us" >>"$work/$mode"
  printf '  %-9s %s us/launch\n' "$mode" "$us" >&2
}

for rep in $(seq 1 "$reps"); do
  echo "rep $rep/$reps" >&2
  for mode in $modes; do
    run_mode "$mode"
  done
done

if ls "$work/reports"/culprit-*.json >/dev/null 2>&1; then
  echo "bench/run.sh: culprit wrote a report for the healthy benchmark:" >&2
  ls "$work/reports" >&2
  failed=1
fi

gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -n 1)
driver=$(nvidia-smi --query-gpu=driver_version --format=csv,noheader 2>/dev/null | head -n 1)
echo
echo "launch loop, $(date -u '+%Y-%m-%d %H:%M UTC'), ${gpu:-unknown GPU}, driver ${driver:-unknown}," \
  "$reps reps x $launches launches, interleaved"
echo
python3 - "$work" $modes <<'PY'
import os, statistics, sys

work, modes = sys.argv[1], sys.argv[2:]
names = {"none": "no tool", "clb": "CUDA_LAUNCH_BLOCKING=1", "record": "culprit record",
         "blocking": "culprit blocking"}
data = {}
for m in modes:
    path = os.path.join(work, m)
    if os.path.exists(path):
        with open(path) as f:
            data[m] = [float(x) for x in f.read().split()]
base = statistics.median(data["none"]) if data.get("none") else None
print("| mode | median µs/launch | min–max | ratio to no tool | added µs/launch |")
print("|---|---|---|---|---|")
for m in modes:
    v = data.get(m)
    if not v:
        print("| %s | failed | - | - | - |" % names[m])
        continue
    med = statistics.median(v)
    ratio = "%.2f" % (base / med) if base else "-"
    added = "%+.2f" % (med - base) if base is not None else "-"
    print("| %s | %.2f | %.2f–%.2f | %s | %s |" % (names[m], med, min(v), max(v), ratio, added))
PY
exit $failed
