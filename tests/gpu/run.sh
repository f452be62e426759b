#!/usr/bin/env bash
# culprit's GPU test suite: builds (if needed), shows the GPU, runs every C case in tests/gpu against the static
# and the shared CUDA runtime (groups c and hangs: the hang cases stop a spinning kernel's program with SIGTERM
# and kill it at a bound), then the frameworks group (the Python scripts in tests/gpu/frameworks: torch, Triton,
# CuPy, JAX, Lightning, torch.profiler, compute-sanitizer, transformers), the jobs group (torchrun jobs of
# those scripts; a case whose module is missing is skipped) and the diagnose group (PyTorch faults under
# `culprit run --diagnose`, diagnose_group.py) and the verdict group (a PyTorch fault's exception text and
# torchrun's Root Cause naming the culprit, verdict_group.py), each without and under `culprit run`, and prints
# one table ending in "N passed, N failed[, N skipped]".
# Needs an NVIDIA GPU; where there is none every case is skipped.
#
# usage: bash tests/gpu/run.sh [--build DIR] [--logs DIR] [--timeout SECONDS] [--budget SECONDS] [--python PY]
#                              [--mode record|precise|all] [--coredump] [--jobs N]
#                              [--only CASE...]
#   --build DIR      build directory (default build); built here unless it holds bin/culprit and lib/libculprit.so
#   --logs DIR       where each run's stdout/stderr and report JSON go (default a new temporary directory)
#   --timeout S      limit for one program run (default 60; a --coredump run gets 130 s more for cuda-gdb)
#   --budget S       limit for the whole suite (with --jobs, for each part); cases not started by then fail
#                    (default 480, 720 with --coredump). On an H200 one after another, 520 s took the suite
#                    through the jobs group and the first diagnose cases: use --jobs where a command is limited
#   --python PY      interpreter for the frameworks group (default python3)
#   --mode M         culprit mode (record or precise) for cases that set none; default: culprit's own (record);
#                    all: the whole suite in record, then in precise, and one line adding both up
#   --coredump       also run every faulty C case (not graph, healthy, nosync, spin, or the blocking and
#                    CUDA_LAUNCH_BLOCKING variants) and the PyTorch cases torch_xent3d and torch_gather once more,
#                    as `culprit run --coredump` (in the same mode): the driver writes a GPU core dump on the
#                    exception and aborts the process (SIGABRT), and culprit reads the dump with cuda-gdb (PATH,
#                    CULPRIT_CUDA_GDB, or the toolkit's; without one these rows skip). Its report must be a fault
#                    with an exact culprit and a "coredump" object naming the kernel and, for a C case, the line
#                    marked `// CULPRIT-FAULT`. The table gets a "CASE --coredump" row for each, and a line
#                    "one run: default exact N/M, --coredump exact N/M" before the closing one. For an illegal
#                    or misaligned address, compute-sanitizer (PATH or the toolkit's) runs the same program and
#                    the lane culprit names must be one of its threads, with the same access, size and kind
#                    ("address agrees with compute-sanitizer" under the table, or why not)
#   --jobs N         run the suite in parts at the same time, N at most: each group (c, hangs, frameworks,
#                    jobs, diagnose, verdict) of each mode in a check.py process of its own, the longest first (the
#                    hangs group last, alone: its spinning kernels would slow the others' GPU work); every
#                    part's table is printed when all have ended, then one line adding them up (default 1: one
#                    process, its table as it goes). The cases share the GPU; the groups' timings hold: on an
#                    H200 four suites at once passed (frameworks about 340 s, jobs and diagnose 280 s, c and
#                    hangs 60-70 s a mode). LOGS/suite-PART.txt.start says the part's place in the start
#                    order and the parts that had ended when it started
#   --only CASE...   run only these cases (names as in the table) or groups: c, hangs, frameworks, jobs,
#                    diagnose, verdict
# CULPRIT_MARK=write in the environment runs every case under culprit with that breadcrumb (--mark write; the
# default is memset).
set -u

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
build=build
logs=
timeout=60
budget=
python=python3
mode=
coredump=0
jobs=1
only=()

usage() {
  echo "usage: bash tests/gpu/run.sh [--build DIR] [--logs DIR] [--timeout S] [--budget S] [--python PY]" \
    "[--mode record|precise|all] [--coredump] [--jobs N] [--only CASE...]" >&2
  exit 2
}

while [ $# -gt 0 ]; do
  case "$1" in
  --build) [ $# -ge 2 ] || usage; build=$2; shift 2 ;;
  --logs) [ $# -ge 2 ] || usage; logs=$2; shift 2 ;;
  --timeout) [ $# -ge 2 ] || usage; timeout=$2; shift 2 ;;
  --budget) [ $# -ge 2 ] || usage; budget=$2; shift 2 ;;
  --python) [ $# -ge 2 ] || usage; python=$2; shift 2 ;;
  --mode) [ $# -ge 2 ] || usage; mode=$2; shift 2 ;;
  --coredump) coredump=1; shift ;;
  --jobs) [ $# -ge 2 ] || usage; jobs=$2; shift 2 ;;
  --only)
    shift
    while [ $# -gt 0 ] && [ "${1#--}" = "$1" ]; do only+=("$1"); shift; done
    ;;
  -h | --help) usage ;;
  *) echo "run.sh: unknown argument: $1" >&2; usage ;;
  esac
done

case "$mode" in "" | record | precise | all) ;; *) echo "run.sh: --mode takes record, precise or all" >&2; usage ;; esac
case "$jobs" in '' | *[!0-9]*) echo "run.sh: --jobs takes a number of parts to run at once, 1 or more" >&2; usage ;; esac
[ "$jobs" -ge 1 ] || { echo "run.sh: --jobs takes a number of parts to run at once, 1 or more" >&2; usage; }

cd "$root" || exit 1
case "$build" in /*) ;; *) build="$root/$build" ;; esac
if [ -z "$logs" ]; then
  logs=$(mktemp -d "${TMPDIR:-/tmp}/culprit-gpu-tests.XXXXXX") || exit 1
fi
mkdir -p "$logs" || exit 1

# A configured build with the tool in it is used as it is; otherwise configure and build here.
if [ -x "$build/bin/culprit" ] && [ -f "$build/lib/libculprit.so" ]; then
  echo "using the build in $build"
  # Only missing test programs are built here; the tool is taken as it is. A build made on another machine
  # (carried here with everything built) is used without touching its CMake cache, whose tool paths may not
  # exist on this one.
  missing=0
  for prog in oob spin nosync; do
    [ -x "$build/bin/gpu_${prog}_static" ] || missing=1
  done
  if [ "$missing" -eq 1 ] && [ -f "$build/CMakeCache.txt" ]; then
    cmake --build "$build" -j --target culprit_gpu_tests || exit 1
  fi
else
  echo "configuring and building in $build"
  cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo || exit 1
  cmake --build "$build" -j || exit 1
fi

echo
if command -v nvidia-smi >/dev/null 2>&1; then
  nvidia-smi -L
  echo "driver $(nvidia-smi --query-gpu=driver_version --format=csv,noheader | head -n 1)"
else
  echo "nvidia-smi not found: no NVIDIA driver here, the cases will skip"
fi
command -v nvcc >/dev/null 2>&1 && nvcc --version | tail -n 1
echo

if [ -z "$budget" ]; then
  if [ "$coredump" -eq 1 ]; then budget=720; else budget=480; fi
fi
args=(suite --build "$build" --timeout "$timeout" --budget "$budget" --python "$python")
[ "$coredump" -eq 1 ] && args+=(--coredump)
[ ${#only[@]} -gt 0 ] && args+=(--only "${only[@]}")
if [ "$mode" != all ] && [ "$jobs" -le 1 ]; then
  [ -n "$mode" ] && args+=(--mode "$mode")
  exec python3 "$here/check.py" "${args[@]}" --logs "$logs"
fi

# Parts: with --mode all the suite once per mode; with --jobs N each group of each mode in a check.py process of
# its own, N at a time (the longest groups first), each with its own logs. Then every part's table, and one
# line adding them up.
modes=("$mode")
[ "$mode" = all ] && modes=(record precise)
groups=("")
if [ "$jobs" -gt 1 ]; then
  mapfile -t groups < <(python3 "$here/check.py" groups ${only[@]+--only "${only[@]}"})
  [ ${#groups[@]} -gt 0 ] || { echo "run.sh: no case selected" >&2; exit 2; }
fi
# The hangs group runs last and alone: its spinning kernels take the GPU in time slices from every other
# process's work, which can hold another part's synchronizes past blocking mode's 200 ms bound.
ordered=()
for g in "${groups[@]}"; do [ "$g" = hangs ] || ordered+=("$g"); done
for g in "${groups[@]}"; do [ "$g" = hangs ] && ordered+=("$g"); done
names=() outs=() part_modes=() part_groups=()
for g in "${ordered[@]}"; do    # a group in every mode before the next group: the longest groups start first
  for m in "${modes[@]}"; do
    name="${m:-default}${g:+-$g}"
    [ -z "$m" ] && [ -n "$g" ] && name=$g
    names+=("$name") outs+=("$logs/suite-$name.txt") part_modes+=("$m") part_groups+=("$g")
  done
done

part() { # MODE GROUP NAME: one check.py process for one part
  local a=("${args[@]}")
  [ -n "$1" ] && a+=(--mode "$1")
  [ -n "$2" ] && a+=(--group "$2")
  python3 "$here/check.py" "${a[@]}" --logs "$logs/$3"
}

status=0
if [ "$jobs" -le 1 ]; then
  for i in "${!names[@]}"; do
    echo "=== mode ${part_modes[$i]}"
    part "${part_modes[$i]}" "" "${names[$i]}" | tee "${outs[$i]}"
    rc=${PIPESTATUS[0]}
    [ "$rc" -ne 0 ] && status=$rc
    echo
  done
else
  started=$(date +%s) running=0 seq=0
  for out in "${outs[@]}"; do rm -f "$out.rc" "$out.start"; done # a reused --logs: no earlier run's ends
  for i in "${!names[@]}"; do
    name=${names[$i]} out=${outs[$i]}
    if [ "${part_groups[$i]}" = hangs ]; then wait; running=0; fi
    # OUT.start: the part's place in the start order and the parts that had ended by then (their .rc files),
    # written by this shell alone, so what it says does not depend on how the parts' output lines interleave
    seq=$((seq + 1)) ended=""
    for j in "${!names[@]}"; do [ -f "${outs[$j]}.rc" ] && ended+=" ${names[$j]}"; done
    echo "$seq$ended" >"$out.start"
    echo "run.sh: $name started"
    (
      part "${part_modes[$i]}" "${part_groups[$i]}" "$name" >"$out" 2>&1
      echo "$?" >"$out.rc"
      echo "run.sh: $name ended after $(( $(date +%s) - started )) s: $(tail -n 1 "$out")"
      # its failed cases at once: a run stopped by a time limit before the tables below still says which
      grep -E '^\[ *[0-9]+/[0-9]+\] .* FAIL' "$out" | sed "s/^/run.sh: $name: /"
    ) &
    running=$((running + 1))
    if [ "${part_groups[$i]}" = hangs ]; then wait; running=0; fi
    if [ "$running" -ge "$jobs" ]; then wait -n; running=$((running - 1)); fi
  done
  wait
  echo
  for i in "${!names[@]}"; do
    echo "=== ${names[$i]}"
    cat "${outs[$i]}"
    rc=$(cat "${outs[$i]}.rc" 2>/dev/null || echo 1)
    [ "$rc" -ne 0 ] && status=$rc
    echo
  done
fi

passed=0 failed=0 skipped=0
for i in "${!names[@]}"; do
  last=$(tail -n 1 "${outs[$i]}")
  if [[ $last =~ ^([0-9]+)\ passed,\ ([0-9]+)\ failed(,\ ([0-9]+)\ skipped)?$ ]]; then
    passed=$((passed + BASH_REMATCH[1])) failed=$((failed + BASH_REMATCH[2])) skipped=$((skipped + ${BASH_REMATCH[4]:-0}))
  else
    echo "run.sh: the part ${names[$i]} ended without its summary line" >&2
    failed=$((failed + 1)) status=1
  fi
done
echo "parts ${names[*]}:"
if [ "$skipped" -gt 0 ]; then echo "$passed passed, $failed failed, $skipped skipped"; else echo "$passed passed, $failed failed"; fi
exit "$status"
