#!/usr/bin/env bash
# tests/scan_archive.sh: what libflashkern.a (host and AArch64) holds, and does not.
#   * no contract-model (fkc_*) or test-harness (fkh_*, fkt_*, fkp_*) symbol, nothing named
#     scalar / reference / contract: the library has one implementation of each leaf, the stamp;
#   * no libm: no undefined sqrt/exp/log/sin/cos/pow/fma... in any object (tables are built
#     libm-free at readiness);
#   * every stamp the manifest lists for the ISA is defined, and no other stamp symbol is;
#   * the stamp objects reference no symbol at all (they are leaves).
# Negative controls at the end prove each check can fail.
set -u
src=${FK_SOURCE_DIR:-$(cd "$(dirname "$0")/.." && pwd)}
build=${FK_BUILD_DIR:-$src/build}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
libm='^(sqrt|cbrt|exp|exp2|expm1|log|log2|log10|log1p|sin|cos|tan|sincos|asin|acos|atan|atan2|sinh|cosh|tanh|pow|fma|hypot|erf|lgamma|tgamma|ldexp|frexp|modf|fmod|remainder|round|lround|floor|ceil|trunc|rint|nearbyint)(f|l)?$'

# check archive nm isa -> prints FAIL lines, returns 1 on any failure
check() {
  local ar=$1 nm=$2 isa=$3 rc=0
  [ -f "$ar" ] || { echo "FAIL $ar: missing"; return 1; }
  "$nm" -A "$ar" > "$tmp/nm" 2>/dev/null || { echo "FAIL $ar: nm"; return 1; }
  local defined undefined
  defined=$(awk '$(NF-1) ~ /^[TDRBtdrb]$/ {print $NF}' "$tmp/nm" | sort -u)
  global=$(awk '$(NF-1) == "T" {print $NF}' "$tmp/nm" | sort -u)
  undefined=$(awk '$(NF-1) == "U" {print $NF}' "$tmp/nm" | sort -u)
  bad=$(echo "$defined" | grep -E '^(fkc|fkh|fkt|fkp)_|scalar|reference|contract' || true)
  if [ -n "$bad" ]; then echo "FAIL $ar: test-only symbols:"; echo "$bad" | head -5 | sed 's/^/    /'; rc=1; fi
  bad=$(echo "$undefined" | grep -E "$libm" || true)
  if [ -n "$bad" ]; then echo "FAIL $ar: libm calls:"; echo "$bad" | head -5 | sed 's/^/    /'; rc=1; fi
  awk -v isa="$isa" '$1 ~ /^fk_/ && $2 ~ "^" isa "/" {print $1}' "$src/generated/MANIFEST" | sort -u > "$tmp/want"
  echo "$global" | grep -E '^fk_[a-z0-9_]+__(x86_64|aarch64)_' | sort -u > "$tmp/have"
  if ! cmp -s "$tmp/want" "$tmp/have"; then
    echo "FAIL $ar: stamps differ from generated/MANIFEST ($isa):"; diff "$tmp/want" "$tmp/have" | head -5 | sed 's/^/    /'
    rc=1
  fi
  bad=$(grep -E '__(x86_64|aarch64)_[a-z0-9]+_(exact|fast)\.S\.o:.* U ' "$tmp/nm" || true)
  if [ -n "$bad" ]; then echo "FAIL $ar: a stamp object references symbols:"; echo "$bad" | head -3 | sed 's/^/    /'; rc=1; fi
  return $rc
}

fail=0
check "$build/libflashkern.a" nm x86_64 && echo "ok   $build/libflashkern.a: $(wc -l < "$tmp/have") stamps, no test symbols, no libm" || fail=1
check "$build/aarch64/libflashkern.a" aarch64-linux-gnu-nm aarch64 &&
  echo "ok   $build/aarch64/libflashkern.a: $(wc -l < "$tmp/have") stamps, no test symbols, no libm" || fail=1

# negative controls: an archive with a contract symbol and a libm call, one missing a stamp
cat > "$tmp/bad.c" <<'C'
float sqrtf(float);
float fkc_model(float x) { return sqrtf(x); }
C
gcc -O1 -c "$tmp/bad.c" -o "$tmp/bad.o" && cp "$build/libflashkern.a" "$tmp/bad.a" && ar q "$tmp/bad.a" "$tmp/bad.o" 2>/dev/null
out=$(check "$tmp/bad.a" nm x86_64)
echo "$out" | grep -q "test-only symbols" || { echo "FAIL negative control: a contract symbol was not seen"; fail=1; }
echo "$out" | grep -q "libm calls" || { echo "FAIL negative control: a libm call was not seen"; fail=1; }
victim=$(ar t "$build/libflashkern.a" | grep -m1 '__x86_64_avx2_exact\.S\.o$')
cp "$build/libflashkern.a" "$tmp/short.a" && ar d "$tmp/short.a" "$victim"
check "$tmp/short.a" nm x86_64 | grep -q "stamps differ" || { echo "FAIL negative control: a missing stamp was not seen"; fail=1; }
[ $fail -eq 0 ] && echo "negative controls: a contract symbol, a libm call and a missing stamp are each caught"
exit $fail
