#!/usr/bin/env bash
# tests/dsl_ops.sh: DSL conformance. Stamps tests/dsl_ops/opcheck.lua (ops the library's leaves
# do not use: max, fma, f32 vector stores with tails, scalar f32 memory ops, isub, cvt) for every
# variant into a temp dir, links each ISA's stamps with tests/dsl_ops/driver.c and checks them
# against C: natively on x86_64, under qemu-aarch64 (-cpu max and neoverse-n1) on AArch64.
set -eu
src=${FK_SOURCE_DIR:-$(cd "$(dirname "$0")/.." && pwd)}
lua=$(command -v luajit || command -v lua5.4)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$lua" "$src/gen/fkgen.lua" --root "$src" --templates tests/dsl_ops --out "$tmp/gen" >/dev/null
flags=(-std=c11 -O1 -ffp-contract=off -Wall -Wextra -Werror -I"$tmp/gen")
gcc "${flags[@]}" -o "$tmp/x86" "$src/tests/dsl_ops/driver.c" "$tmp"/gen/x86_64/*.S -lm
"$tmp/x86"
aarch64-linux-gnu-gcc "${flags[@]}" -static -o "$tmp/a64" "$src/tests/dsl_ops/driver.c" "$tmp"/gen/aarch64/*.S -lm
for cpu in max neoverse-n1; do qemu-aarch64 -cpu "$cpu" "$tmp/a64"; done
