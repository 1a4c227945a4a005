#!/usr/bin/env bash
# tests/scan_stamps.sh: every stamp in generated/MANIFEST
#   * assembles under the narrowest setting of its variant (the manifest's asflags: -march=armv8-a
#     for neon, gas generic64+avx2+fma for avx2, ...), so it uses no instruction outside it;
#   * is a leaf: no call / branch-and-link / indirect branch / system call in its disassembly;
#   * avx2 stamps: no zmm, no opmask, no EVEX-only register (x/ymm16-31), no embedded broadcast.
# Negative controls at the end prove each check can fail.
set -u
src=${FK_SOURCE_DIR:-$(cd "$(dirname "$0")/.." && pwd)}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# scan_one symbol source asflags -> prints FAIL lines, returns 1 on any failure
scan_one() {
  local symbol=$1 s=$2 asflags=$3 cc=gcc od=objdump bad rc=0
  case "$symbol" in *__aarch64_*) cc=aarch64-linux-gnu-gcc od=aarch64-linux-gnu-objdump ;; esac
  # shellcheck disable=SC2086  # asflags is a list of flags
  if ! $cc -c -I"$src/generated" $asflags "$s" -o "$tmp/o.o" 2>"$tmp/err"; then
    echo "FAIL $symbol: does not assemble with $asflags:"; sed 's/^/    /' "$tmp/err" | head -5; return 1
  fi
  $od -d --no-show-raw-insn "$tmp/o.o" > "$tmp/dis" || { echo "FAIL $symbol: objdump"; return 1; }
  case "$symbol" in
    *__aarch64_*) bad='\s(bl|blr|br|blraa|svc|hvc|smc)\s' ;;
    *) bad='\s(call|callq|syscall|sysenter|int|int3)\s|\sjmp\s+\*' ;;
  esac
  if grep -Eq "$bad" "$tmp/dis"; then
    echo "FAIL $symbol: calls out or traps:"; grep -E "$bad" "$tmp/dis" | head -3; rc=1
  fi
  if [[ $symbol == *_avx2_* ]] && grep -Eq '%zmm|%k[0-7]|%[xy]mm(1[6-9]|2[0-9]|3[01])|\{1to' "$tmp/dis"; then
    echo "FAIL $symbol: AVX-512 register or EVEX form in an avx2 stamp:"
    grep -E '%zmm|%k[0-7]|%[xy]mm(1[6-9]|2[0-9]|3[01])|\{1to' "$tmp/dis" | head -3; rc=1
  fi
  return $rc
}

fail=0 n=0
while read -r symbol file tier template blob features asflags; do
  case "$symbol" in fk_*) ;; *) continue ;; esac
  scan_one "$symbol" "$src/generated/$file" "$asflags" || fail=1
  n=$((n + 1))
done < "$src/generated/MANIFEST"
[ "$n" -gt 0 ] || { echo "FAIL: no stamps in generated/MANIFEST"; exit 1; }
echo "scanned $n stamps"

# negative controls: each must be rejected
control() { # name symbol asflags body
  printf '#include "fk_asm.h"\n%s\n' "$4" > "$tmp/c.S"
  if scan_one "$2" "$tmp/c.S" "$3" >/dev/null; then echo "FAIL control [$1]: not rejected"; fail=1; else echo "control [$1]: rejected"; fi
}
control "x86 call" fk_c__x86_64_avx2_exact "-Wa,-march=generic64+avx2+fma" $'.intel_syntax noprefix\nf: call f\n ret'
control "zmm in avx2" fk_c__x86_64_avx2_exact "-Wa,-march=generic64+avx2+fma+avx512f" $'.intel_syntax noprefix\nvpxord zmm1, zmm1, zmm1\n ret'
control "avx512 outside avx2" fk_c__x86_64_avx2_exact "-Wa,-march=generic64+avx2+fma" $'.intel_syntax noprefix\nvpxord zmm1, zmm1, zmm1\n ret'
control "aarch64 bl" fk_c__aarch64_neon_exact "-march=armv8-a" $'f: bl f\n ret'
control "bf16 outside neon" fk_c__aarch64_neon_exact "-march=armv8-a" $'bfdot v0.4s, v1.8h, v2.8h\n ret'
exit $fail
