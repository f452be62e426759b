#!/usr/bin/env bash
# Every C file of the project as clang-format leaves it, with the style of its folder (.clang-format files: the
# library's two-space style at the root, the command's four-space style in src/cli, src/evidence, src/report,
# src/render, tests/fakecuda, tests/fake/progs and demo). Exit 0 when all are, 1 with the files that are not (and
# the first lines clang-format would change), 77 (skipped) when clang-format 14, the version the files were
# formatted with, is not installed: other versions format some constructs differently.
set -u
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root" || exit 1
cf=${CLANG_FORMAT:-}
if [ -z "$cf" ]; then
  for c in clang-format-14 clang-format; do
    if command -v "$c" >/dev/null 2>&1; then cf=$c; break; fi
  done
fi
if [ -z "$cf" ]; then echo "SKIP: clang-format is not installed (Debian: apt-get install clang-format)"; exit 77; fi
ver=$("$cf" --version | sed -n 's/.*version \([0-9][0-9]*\)\..*/\1/p')
if [ "$ver" != 14 ]; then echo "SKIP: $cf is version $ver; the files follow clang-format 14"; exit 77; fi
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  mapfile -t files < <(git ls-files '*.c' '*.h')
else
  mapfile -t files < <(find src include tests demo -name '*.c' -o -name '*.h' | sort)
fi
bad=0
for f in "${files[@]}"; do
  if ! "$cf" --dry-run --Werror "$f" >/dev/null 2>&1; then
    bad=$((bad + 1))
    echo "not formatted: $f"
    "$cf" "$f" | diff "$f" - | head -6
  fi
done
echo "${#files[@]} files checked, $bad not formatted"
[ $bad -eq 0 ]
