#!/usr/bin/env bash
# The GPU core dump study: runs bench_coredump_study's experiments (see coredump_study.cu) and prints what each
# showed. Needs a GPU and, to read the dumps, cuda-gdb (PATH or the toolkit's).
#   1. a fault with dumps on through the environment, the lightweight flags and skip_abort: is the dump written,
#      does the program get its error back and go on; then the same asked for inside the process
#      (cuCoredumpSetAttributeGlobal), for an out-of-bounds store, a misaligned one and a device assert;
#   2. what cuda-gdb says of each dump (kernels, backtrace with arguments, the faulting instruction, registers);
#   3. the cost of having dumps on while nothing faults: the tiny-kernel launch loop, PAIRS interleaved pairs;
#   4. a user-triggered dump of a spinning kernel: written, and does the program go on.
# usage: bash bench/coredump_study.sh [--build DIR] [--out DIR] [--pairs N]
set -u
build=build
out=$(mktemp -d)
pairs=7
while [ $# -gt 0 ]; do
  case "$1" in
    --build) build=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --pairs) pairs=$2; shift 2 ;;
    *) echo "usage: bash bench/coredump_study.sh [--build DIR] [--out DIR] [--pairs N]" >&2; exit 2 ;;
  esac
done
prog=$build/bin/bench_coredump_study
[ -x "$prog" ] || { echo "coredump_study: $prog is not built" >&2; exit 2; }
mkdir -p "$out"
gdb=$(command -v cuda-gdb || ls /usr/local/cuda/bin/cuda-gdb 2>/dev/null || true)
flags=skip_global_memory,skip_shared_memory,skip_local_memory,skip_constbank_memory
unset CUDA_ENABLE_COREDUMP_ON_EXCEPTION CUDA_COREDUMP_FILE CUDA_COREDUMP_GENERATION_FLAGS
unset CUDA_ENABLE_USER_TRIGGERED_COREDUMP CUDA_COREDUMP_PIPE

read_dump() {  # FILE: what cuda-gdb says of it
  [ -n "$gdb" ] || { echo "  (no cuda-gdb)"; return; }
  [ -s "$1" ] || { echo "  (no dump at $1)"; return; }
  timeout 180 "$gdb" -nx -batch -ex "target cudacore $1" -ex "info cuda kernels" -ex "bt" -ex "x/4i \$pc" \
    -ex "x/i \$errorpc" -ex "p \$errorpc" -ex "info registers" -ex "info cuda lanes" 2>&1 | sed 's/^/  | /'
}

echo "== 1. faults with dumps on, without the abort"
for kind in oob misaligned assert; do
  for how in env inproc; do
    dump=$out/$kind-$how.nvcudmp
    rm -f "$dump"
    t0=$(date +%s.%N)
    if [ $how = env ]; then
      CUDA_ENABLE_COREDUMP_ON_EXCEPTION=1 CUDA_COREDUMP_GENERATION_FLAGS=$flags,skip_abort \
        CUDA_COREDUMP_FILE=$dump "$prog" fault $kind >"$out/$kind-$how.log" 2>&1
    else
      "$prog" fault $kind inproc "$dump" >"$out/$kind-$how.log" 2>&1
    fi
    st=$?
    t1=$(date +%s.%N)
    size=$(stat -c %s "$dump" 2>/dev/null || echo none)
    echo "-- $kind, $how: exit $st, $(python3 -c "print('%.2f' % ($t1 - $t0))") s, dump $size bytes"
    sed 's/^/  > /' "$out/$kind-$how.log"
    read_dump "$dump"
  done
done
echo "-- for comparison, oob without skip_abort (the driver aborts):"
CUDA_ENABLE_COREDUMP_ON_EXCEPTION=1 CUDA_COREDUMP_GENERATION_FLAGS=$flags CUDA_COREDUMP_FILE=$out/abort.nvcudmp \
  "$prog" fault oob 2>&1 | sed 's/^/  > /'
echo "  exit ${PIPESTATUS[0]}"

echo "== 3. the cost of dumps on, nothing faulting (launch_us, $pairs interleaved pairs)"
for i in $(seq "$pairs"); do
  for cfg in none dumps; do
    if [ $cfg = none ]; then v=$("$prog" loop 200000); else
      v=$(CUDA_ENABLE_COREDUMP_ON_EXCEPTION=1 CUDA_COREDUMP_GENERATION_FLAGS=$flags,skip_abort \
        CUDA_COREDUMP_FILE=$out/cost.nvcudmp "$prog" loop 200000); fi
    echo "pair $i $cfg $v"
  done
done | tee "$out/cost.log"
python3 - "$out/cost.log" <<'PY'
import statistics, sys
vals = {}
for line in open(sys.argv[1]):
    _, i, cfg, v = line.split()
    vals.setdefault(cfg, []).append(float(v.split("=")[1]))
ratios = [d / n for n, d in zip(vals["none"], vals["dumps"])]
print("median launch_us: none %.4f, dumps on %.4f; paired ratio dumps/none median %.4f (%.4f-%.4f)"
      % (statistics.median(vals["none"]), statistics.median(vals["dumps"]), statistics.median(ratios),
         min(ratios), max(ratios)))
PY

echo "== 4. user-triggered dump of a spinning kernel"
for how in env inproc; do
  pipe=$out/pipe-$how
  dump=$out/hang-$how.nvcudmp
  rm -f "$pipe" "$dump"
  if [ $how = env ]; then
    STUDY_DUMP_FILE=$dump CUDA_ENABLE_USER_TRIGGERED_COREDUMP=1 CUDA_COREDUMP_PIPE=$pipe \
      CUDA_COREDUMP_GENERATION_FLAGS=$flags,skip_abort CUDA_COREDUMP_FILE=$dump \
      timeout 120 "$prog" hang "$pipe" 2>&1 | sed 's/^/  > /'
  else
    STUDY_DUMP_FILE=$dump timeout 120 "$prog" hang "$pipe" inproc "$dump" 2>&1 | sed 's/^/  > /'
  fi
  echo "-- hang, $how: exit ${PIPESTATUS[0]}, dump $(stat -c %s "$dump" 2>/dev/null || echo none) bytes"
  read_dump "$dump"
done
