#!/usr/bin/env bash
# run.sh --jobs where every case skips (no GPU visible, on any machine): each group of each mode runs as a part of
# its own and says when it ended, the parts' total is what one process finds, and a bad --jobs is refused.
# usage: bash tests/gpu/parts_smoke.sh BUILD_DIR
set -u
build=$1
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/culprit-parts.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
export CUDA_VISIBLE_DEVICES=""
sel=(--only healthy oob spin_sigterm)
passed=0 failed=0
check() { # CONDITION-STATUS MESSAGE
  if [ "$1" -eq 0 ]; then passed=$((passed + 1)); else failed=$((failed + 1)); echo "FAIL: $2"; fi
}

bash "$here/run.sh" --build "$build" --logs "$tmp/one" --mode all "${sel[@]}" >"$tmp/one.txt" 2>&1
check $? "run.sh --mode all in one process failed: $(tail -n 5 "$tmp/one.txt")"
bash "$here/run.sh" --build "$build" --logs "$tmp/parts" --mode all --jobs 3 "${sel[@]}" >"$tmp/parts.txt" 2>&1
check $? "run.sh --mode all --jobs 3 failed: $(tail -n 5 "$tmp/parts.txt")"
one=$(tail -n 1 "$tmp/one.txt") parts=$(tail -n 1 "$tmp/parts.txt")
[ "$one" = "$parts" ]
check $? "the parts' total '$parts' is not the one process's '$one'"
[ "$parts" = "0 passed, 0 failed, 12 skipped" ]
check $? "3 cases of 2 runtimes in 2 modes must skip without a GPU: '$parts'"
for name in record-c precise-c record-hangs precise-hangs; do
  grep -q "^run.sh: $name ended after [0-9]* s: 0 passed, 0 failed, [0-9]* skipped$" "$tmp/parts.txt"
  check $? "no line saying the part $name ended"
  grep -q "^=== $name$" "$tmp/parts.txt" && [ -d "$tmp/parts/$name" ]
  check $? "the part $name has no table or no logs of its own"
done
# The order and the hangs group's solitude are read from what run.sh's own shell wrote at each start (the part's
# place in the start order and the parts that had ended then), not from where lines of parts running at once
# landed in the output.
start_of() { cat "$tmp/parts/suite-$1.txt.start" 2>/dev/null; }
[ "$(start_of record-c)" = 1 ] && [ "$(start_of precise-c | cut -d' ' -f1)" = 2 ]
check $? "the c group (the longer of the two) must start first, in both modes: record-c '$(start_of record-c)', precise-c '$(start_of precise-c)'"
# the hangs group last and alone: each of its parts starts after every part before it ended
ended_before() { # PART SEQ NAME...: PART started SEQ-th, after every NAME had ended
  local line=" $(start_of "$1") " n
  case "$line" in " $2 "*) ;; *) return 1 ;; esac
  shift 2
  for n in "$@"; do case "$line" in *" $n "*) ;; *) return 1 ;; esac; done
}
ended_before record-hangs 3 record-c precise-c && ended_before precise-hangs 4 record-c precise-c record-hangs
check $? "the hangs parts must start alone, after the others ended: record-hangs '$(start_of record-hangs)', precise-hangs '$(start_of precise-hangs)'"
for bad in 0 x -1; do
  bash "$here/run.sh" --build "$build" --jobs "$bad" "${sel[@]}" >/dev/null 2>&1
  [ $? -eq 2 ]
  check $? "--jobs $bad must be refused with status 2"
done
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
