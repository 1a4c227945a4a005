#!/usr/bin/env bash
# tests/gen_determinism.sh: the generator run in fresh processes, three times under LuaJIT and
# three times under Lua 5.4, writes byte-identical trees, equal to the committed generated/.
set -u
src=${FK_SOURCE_DIR:-$(cd "$(dirname "$0")/.." && pwd)}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
for lua in luajit lua5.4; do
  command -v "$lua" >/dev/null || { echo "FAIL: $lua not installed"; fail=1; continue; }
  for i in 1 2 3; do
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
[ $fail = 0 ] && echo "6 runs (luajit, lua5.4 x 3) identical to generated/"
exit $fail
