#!/usr/bin/env bash
# tests/rne_exhaustive.sh: the exact tier's rounding to bf16 over every f32 bit pattern (2^32), for
# every backend variant of the exact tier: stamps tests/rne_exhaustive/rnecheck.lua (y = RNE(x) as
# bf16, z = RNE(x) widened) into a temp dir and runs tests/rne_exhaustive/driver.c against the
# contract's fkc_rne_bits: natively for x86_64 (avx2, avx512) over every pattern; under qemu-aarch64
# for AArch64 (neon: the integer RNE, on -cpu neoverse-n1; bfcvt: BFCVTN/BFCVTN2 and the canonical
# NaN, which equals the integer RNE only under the Linux default FPCR that readiness checks, on -cpu
# max) over every chunk of 64 Ki patterns whose exponent is 0, 0xfe or 0xff and one chunk in 16 of
# the others (each chunk holds ties of both parities): qemu's emulation of the whole sweep costs
# about 4 CPU-minutes. FK_RNE_STRIDE=1 sweeps every pattern on AArch64 too (run at stop 33 on
# 2026-12-03: 0 mismatching of 2^32 for neon and bfcvt, as in every CI run before it). qemu proves
# bits, not hardware: it implements BFCVTN from the Arm pseudocode.
set -eu
src=${FK_SOURCE_DIR:-$(cd "$(dirname "$0")/.." && pwd)}
lua=$(command -v luajit || command -v lua5.4)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$lua" "$src/gen/fkgen.lua" --root "$src" --templates tests/rne_exhaustive --out "$tmp/gen" >/dev/null
flags=(-std=c11 -O2 -ffp-contract=off -Wall -Wextra -Werror -pthread -I"$tmp/gen" -I"$src/tests")
gcc "${flags[@]}" -o "$tmp/x86" "$src/tests/rne_exhaustive/driver.c" "$src/tests/contract/rne.c" "$tmp"/gen/x86_64/*.S
"$tmp/x86" --threads 2
aarch64-linux-gnu-gcc "${flags[@]}" -march=armv8.2-a+bf16 -static -o "$tmp/a64" "$src/tests/rne_exhaustive/driver.c" \
  "$src/tests/contract/rne.c" "$tmp"/gen/aarch64/*.S
qemu-aarch64 -cpu max "$tmp/a64" --variant bfcvt --threads 2 --stride "${FK_RNE_STRIDE:-16}"
qemu-aarch64 -cpu neoverse-n1 "$tmp/a64" --variant neon --threads 2 --stride "${FK_RNE_STRIDE:-16}"
echo "rne_exhaustive: ok"
