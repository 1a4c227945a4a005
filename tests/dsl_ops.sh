#!/usr/bin/env bash
# tests/dsl_ops.sh: DSL conformance. Checks that docs/dsl.md documents exactly the builder's ops, stamps
# tests/dsl_ops/opcheck.lua (ops the library's leaves do not use: max, fma, f32 vector stores with
# tails, scalar f32 memory ops, isub, cvt; canon and canon_raw over every kind of NaN; the
# quantized-weight loads load_i8, load_u8, load_bcast_f16; lut16, vtable, reload_bcast and drop
# (the library's AVX-512 exact q4 uses them, every other variant only here); in the fast tier's avxvnni, avx512vnni and dotprod
# variants, dot_u8s8 / dot_s8s8, load_bcast8, load_f16x8, pair_split, load_f16x4q, reduce_add8 and
# store_i8) for every variant into a temp dir, assembles each stamp under its variant's narrowest
# setting (the manifest's asflags: no instruction outside the variant's features, e.g. F16C in
# avx2), links each ISA's objects so
# assembled with tests/dsl_ops/driver.c and checks them against C: natively on x86_64, under
# qemu-aarch64 (-cpu max and neoverse-n1) on AArch64. A fast-tier stamp whose CPU features the
# machine lacks is skipped and reported (an x86 host without AVX512_VNNI or AVX-VNNI); every other stamp must run
# (the dotprod ones on both qemu CPUs). Last, the template errors of the quantized loads and of an
# int8 dot product asked of a variant without it.
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
n=0
mkdir -p "$tmp/obj/x86_64" "$tmp/obj/aarch64"
while read -r symbol file _ _ _ _ asflags; do
  case "$symbol" in fk_*) ;; *) continue ;; esac
  cc=gcc
  case "$symbol" in *__aarch64_*) cc=aarch64-linux-gnu-gcc ;; esac
  # shellcheck disable=SC2086  # asflags is a list of flags
  if ! $cc -c -I"$tmp/gen" $asflags "$tmp/gen/$file" -o "$tmp/obj/${file%.S}.o" 2>"$tmp/err"; then
    echo "dsl_ops: $symbol does not assemble with $asflags:" >&2; head -5 "$tmp/err" >&2; exit 1
  fi
  n=$((n + 1))
done <"$tmp/gen/MANIFEST"
echo "dsl_ops: $n stamps assemble under their variants' narrowest settings"
# the driver links those objects (a dotprod stamp assembles only with its own asflags); a fast-tier
# stamp whose CPU features the machine lacks is skipped
if [ "$(find "$tmp/obj" -name '*.o' | wc -l)" -ne "$n" ]; then
  echo "dsl_ops: $n stamps in the MANIFEST, but another number of objects" >&2; exit 1
fi
flags=(-std=c11 -O1 -ffp-contract=off -Wall -Wextra -Werror -I"$tmp/gen")
gcc "${flags[@]}" -o "$tmp/x86" "$src/tests/dsl_ops/driver.c" "$tmp"/obj/x86_64/*.o -lm
"$tmp/x86"
aarch64-linux-gnu-gcc "${flags[@]}" -static -o "$tmp/a64" "$src/tests/dsl_ops/driver.c" "$tmp"/obj/aarch64/*.o -lm
for cpu in max neoverse-n1; do echo "dsl_ops: qemu-aarch64 -cpu $cpu"; qemu-aarch64 -cpu "$cpu" "$tmp/a64"; done
# the quantized loads refuse a lane group and an array of another element width, at the template line
neg() { # name | sed script on opcheck.lua | expected message (regex, after "error: ")
  local root="$tmp/neg" msg
  rm -rf "$root"; mkdir -p "$root/tests"
  cp -r "$src/gen" "$root/"; cp -r "$src/tests/dsl_ops" "$root/tests/"
  sed -i "$2" "$root/tests/dsl_ops/opcheck.lua"
  if cmp -s "$src/tests/dsl_ops/opcheck.lua" "$root/tests/dsl_ops/opcheck.lua"; then
    echo "dsl_ops: [$1] the sed script changed nothing" >&2; exit 1
  fi
  if "$lua" "$root/gen/fkgen.lua" --root "$root" --templates tests/dsl_ops --out "$root/out" >/dev/null 2>"$tmp/err"; then
    echo "dsl_ops: [$1] generated without an error" >&2; exit 1
  fi
  msg=$(head -1 "$tmp/err")
  if ! grep -Eq "^tests/dsl_ops/opcheck\.lua:[1-9][0-9]*: error: .*$3" <<<"$msg"; then
    echo "dsl_ops: [$1] message '$msg' does not match 'tests/dsl_ops/opcheck.lua:LINE: error: $3'" >&2; exit 1
  fi
  echo "dsl_ops: [$1] $msg"
}
neg "lane group" 's/t:load_i8(o\[1\], i, o\[2\])/t:load_i8(o[1], i, o[2], t:lanes(a.nr, 0))/' \
  'load_i8: takes no lane group'
neg "byte load from int32" 's/t:load_u8(a.u, zero, 288)/t:load_u8(a.hb, zero, 288)/' \
  'load_u8 from a.hb, which is int32_t \* \(i32 elements; load_u8 moves u8\)'
neg "f16 from bytes" 's/t:load_bcast_f16(t:view(a.u, "f16")/t:load_bcast_f16(a.u/' \
  'load_bcast_f16 from a.u, which is const uint8_t \* \(u8 elements; load_bcast_f16 moves f16\)'
# an op only some variants have, asked of another: a template error at the op's line, no file
neg "int8 dot in bf16" 's/variants = { fast = { "avx2madd", "avxvnni", "avx512vnni", "dotprod" } }/variants = { fast = { "avx2madd", "avxvnni", "avx512vnni", "dotprod", "bf16" } }/' \
  'aarch64/bf16: dot_u8s8: no AArch64 variant has it'
