#!/usr/bin/env bash
# tests/assemble_stamps.sh: every stamp assembles as ELF with GNU as (through gcc) and with
# clang, and every AArch64 stamp also as Mach-O (clang -target arm64-apple-macos11). In every
# object the stamp's symbol comes out with the right name and visibility, and is the only
# global one (its constant tables stay local):
#   ELF (readelf):  <symbol>  FUNC GLOBAL HIDDEN, sized;
#   Mach-O (nm -m): _<symbol> "private external" in (__TEXT,__text), tables "non-external".
# AArch64 stamps are also assembled by clang, which checks features, under the issue's -march:
# armv8-a for neon, armv8.6-a+bf16 for bf16 and bfcvt, armv8.2-a+dotprod for dotprod (x86 clang checks
# none: the gas audit is tests/scan_stamps.sh). Negative controls at the end prove each symbol check can fail.
set -u
src=${FK_SOURCE_DIR:-$(cd "$(dirname "$0")/.." && pwd)}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0 n=0
try() { # label, command...
  local label=$1; shift
  if ! "$@" 2>"$tmp/err"; then echo "FAIL $label"; sed 's/^/    /' "$tmp/err" | head -5; fail=1; fi
}
# elf_sym OBJECT SYMBOL LABEL: the symbol is FUNC GLOBAL HIDDEN with a size, the only global
elf_sym() {
  local o=$1 sym=$2 label=$3 line globals
  [ -f "$o" ] || return 0
  line=$(readelf -sW "$o" | awk -v s="$sym" '$8 == s')
  if ! echo "$line" | awk '{ exit !($4 == "FUNC" && $5 == "GLOBAL" && $6 == "HIDDEN" && $3 > 0) }'; then
    echo "FAIL $label: $sym is not FUNC GLOBAL HIDDEN with a size: '${line:-absent}'"; fail=1
  fi
  globals=$(readelf -sW "$o" | awk '$5 == "GLOBAL" && $7 != "UND" { print $8 }' | grep -vx "$sym")
  [ -z "$globals" ] || { echo "FAIL $label: other global symbols: $globals"; fail=1; }
}
# macho_sym OBJECT SYMBOL LABEL: _SYMBOL private external in __text, everything else non-external
macho_sym() {
  local o=$1 sym=$2 label=$3 nm
  [ -f "$o" ] || return 0
  nm=$(llvm-nm-14 -m "$o" 2>&1)
  echo "$nm" | grep -q "(__TEXT,__text) private external _$sym\$" ||
    { echo "FAIL $label: no private external _$sym in __text"; fail=1; }
  if echo "$nm" | grep -v " _$sym\$" | grep -q " external "; then
    echo "FAIL $label: other external symbols:"; echo "$nm" | grep -v " _$sym\$" | grep " external " | head -3; fail=1
  fi
}

while read -r symbol file _tier _template _blob _features asflags; do
  case "$symbol" in fk_*) ;; *) continue ;; esac
  s="$src/generated/$file" o="$tmp/$symbol"
  if [ "${file%%/*}" = aarch64 ]; then
    # shellcheck disable=SC2086  # asflags: the variant's -march, understood by gcc and clang alike
    try "$symbol gas elf" aarch64-linux-gnu-gcc $asflags -c -I"$src/generated" "$s" -o "$o.gas.o"
    # shellcheck disable=SC2086
    try "$symbol clang elf" clang -target aarch64-linux-gnu $asflags -c -I"$src/generated" "$s" -o "$o.clang.o"
    # shellcheck disable=SC2086
    try "$symbol clang mach-o" clang -target arm64-apple-macos11 $asflags -c -I"$src/generated" "$s" -o "$o.macho.o"
    case "$symbol" in
      *_bf16_fast | *_bfcvt_exact) march=armv8.6-a+bf16 ;;
      *_dotprod_fast) march=armv8.2-a+dotprod ;;
      *) march=armv8-a ;;
    esac
    try "$symbol clang -march=$march" clang -target aarch64-linux-gnu -march=$march -c -I"$src/generated" "$s" -o "$o.m.o"
    elf_sym "$o.gas.o" "$symbol" "$symbol gas elf"
    elf_sym "$o.clang.o" "$symbol" "$symbol clang elf"
    macho_sym "$o.macho.o" "$symbol" "$symbol mach-o"
    file "$o.macho.o" 2>/dev/null | grep -q "Mach-O 64-bit arm64" || { echo "FAIL $symbol: not a Mach-O arm64 object"; fail=1; }
  else
    # shellcheck disable=SC2086
    try "$symbol gas elf" gcc $asflags -c -I"$src/generated" "$s" -o "$o.gas.o"
    try "$symbol clang elf" clang -c -I"$src/generated" "$s" -o "$o.clang.o"
    elf_sym "$o.gas.o" "$symbol" "$symbol gas elf"
    elf_sym "$o.clang.o" "$symbol" "$symbol clang elf"
  fi
  n=$((n + 1))
done < "$src/generated/MANIFEST"
[ "$n" -gt 0 ] || { echo "FAIL: no stamps"; exit 1; }
echo "assembled $n stamps; symbols checked in every object"

# negative controls: a symbol left default-visible, an extra global, a Mach-O symbol not private
ctl=0
printf '#include "fk_asm.h"\n    FK_TEXT\n    .globl FK_SYM(fk_c)\n    FK_TYPE_FUNC(fk_c)\nFK_SYM(fk_c):\n    ret\n    FK_SIZE(fk_c)\n' > "$tmp/c1.S"
gcc -c -I"$src/generated" "$tmp/c1.S" -o "$tmp/c1.o"
saved=$fail; fail=0; elf_sym "$tmp/c1.o" fk_c "control" >/dev/null; [ $fail = 1 ] || { echo "FAIL control [default visibility]: not caught"; ctl=1; }
printf '#include "fk_asm.h"\n    FK_TEXT\n    .globl FK_SYM(fk_c)\n    FK_HIDDEN(fk_c)\n    FK_TYPE_FUNC(fk_c)\n    .globl FK_SYM(fk_c_k_t)\nFK_SYM(fk_c_k_t):\nFK_SYM(fk_c):\n    ret\n    FK_SIZE(fk_c)\n' > "$tmp/c2.S"
gcc -c -I"$src/generated" "$tmp/c2.S" -o "$tmp/c2.o"
fail=0; elf_sym "$tmp/c2.o" fk_c "control" >/dev/null; [ $fail = 1 ] || { echo "FAIL control [extra global]: not caught"; ctl=1; }
clang -target arm64-apple-macos11 -c -I"$src/generated" "$tmp/c1.S" -o "$tmp/c3.o"
fail=0; macho_sym "$tmp/c3.o" fk_c "control" >/dev/null; [ $fail = 1 ] || { echo "FAIL control [Mach-O external]: not caught"; ctl=1; }
fail=$saved
[ $ctl = 0 ] && echo "controls: default visibility, an extra global, a Mach-O external symbol: each caught"
[ $ctl = 0 ] || fail=1
exit $fail
