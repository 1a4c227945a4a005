#!/usr/bin/env bash
# tests/dsl_ops.sh: DSL conformance. Checks that docs/dsl.md documents exactly the builder's ops, stamps tests/dsl_ops/opcheck.lua (ops the library's leaves
# do not use: max, fma, f32 vector stores with tails, scalar f32 memory ops, isub, cvt; canon and
# canon_raw over every kind of NaN) for every variant into a temp dir, links each ISA's stamps
# with tests/dsl_ops/driver.c and checks them
# against C: natively on x86_64, under qemu-aarch64 (-cpu max and neoverse-n1) on AArch64.
set -eu
src=${FK_SOURCE_DIR:-$(cd "$(dirname "$0")/.." && pwd)}
lua=$(command -v luajit || command -v lua5.4)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# docs/dsl.md names every op of the builder (`t:<op>(`), and no op the builder lacks
"$lua" -e "package.path = '$src/gen/?.lua;' .. package.path
  for _, op in ipairs(require('dsl').ops()) do print(op) end" | sort >"$tmp/ops"
grep -o 't:[a-z0-9_]*(' "$src/docs/dsl.md" | sed 's/^t://; s/($//' | sort -u >"$tmp/documented"
if ! cmp -s "$tmp/ops" "$tmp/documented"; then
  echo "dsl_ops: docs/dsl.md and the builder's ops differ (< only in gen/dsl.lua, > only in the page):" >&2
  diff "$tmp/ops" "$tmp/documented" >&2
  exit 1
fi
echo "dsl_ops: docs/dsl.md documents all $(wc -l <"$tmp/ops") ops"
"$lua" "$src/gen/fkgen.lua" --root "$src" --templates tests/dsl_ops --out "$tmp/gen" >/dev/null
flags=(-std=c11 -O1 -ffp-contract=off -Wall -Wextra -Werror -I"$tmp/gen")
gcc "${flags[@]}" -o "$tmp/x86" "$src/tests/dsl_ops/driver.c" "$tmp"/gen/x86_64/*.S -lm
"$tmp/x86"
aarch64-linux-gnu-gcc "${flags[@]}" -static -o "$tmp/a64" "$src/tests/dsl_ops/driver.c" "$tmp"/gen/aarch64/*.S -lm
for cpu in max neoverse-n1; do qemu-aarch64 -cpu "$cpu" "$tmp/a64"; done
