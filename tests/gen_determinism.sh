#!/usr/bin/env bash
# tests/gen_determinism.sh: the generator run in fresh processes, twice under LuaJIT and twice
# under Lua 5.4 (both seed their string hashes per process, so pairs() order differs from run to
# run; .ci/run's own restamp is one more LuaJIT run), writes byte-identical trees, equal to the
# committed generated/.
set -u
src=${FK_SOURCE_DIR:-$(cd "$(dirname "$0")/.." && pwd)}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
for lua in luajit lua5.4; do
  command -v "$lua" >/dev/null || { echo "FAIL: $lua not installed"; fail=1; continue; }
  for i in 1 2; do
    out="$tmp/$lua.$i"
    mkdir -p "$out"
    if ! "$lua" "$src/gen/fkgen.lua" --root "$src" --out "$out" >/dev/null 2>"$tmp/err"; then
      echo "FAIL: $lua run $i:"; cat "$tmp/err"; fail=1; continue
    fi
    # CENSUS.md is written by tools/census.lua (make census), not by the generator
    if ! diff -r -x CENSUS.md "$src/generated" "$out" >"$tmp/diff"; then
      echo "FAIL: $lua run $i differs from generated/:"; head -20 "$tmp/diff"; fail=1
    fi
  done
done
[ $fail = 0 ] && echo "4 runs (luajit, lua5.4 x 2) identical to generated/"
exit $fail
