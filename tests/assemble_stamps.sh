#!/usr/bin/env bash
# tests/assemble_stamps.sh: every stamp assembles as ELF with GNU as (through gcc) and with
# clang, and every AArch64 stamp also as Mach-O (clang -target arm64-apple-macos11), where its
# symbol must carry the Mach-O underscore.
set -u
src=${FK_SOURCE_DIR:-$(cd "$(dirname "$0")/.." && pwd)}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0 n=0
try() { # label, command...
  local label=$1; shift
  if ! "$@" 2>"$tmp/err"; then echo "FAIL $label"; sed 's/^/    /' "$tmp/err" | head -5; fail=1; fi
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
    if [ -f "$o.macho.o" ] && ! llvm-nm-14 "$o.macho.o" 2>/dev/null | grep -q " _$symbol\$"; then
      echo "FAIL $symbol: Mach-O object lacks _$symbol"; fail=1
    fi
    file "$o.macho.o" 2>/dev/null | grep -q "Mach-O 64-bit arm64" || { echo "FAIL $symbol: not a Mach-O arm64 object"; fail=1; }
  else
    # shellcheck disable=SC2086
    try "$symbol gas elf" gcc $asflags -c -I"$src/generated" "$s" -o "$o.gas.o"
    try "$symbol clang elf" clang -c -I"$src/generated" "$s" -o "$o.clang.o"
  fi
  n=$((n + 1))
done < "$src/generated/MANIFEST"
[ "$n" -gt 0 ] || { echo "FAIL: no stamps"; exit 1; }
echo "assembled $n stamps"
exit $fail
