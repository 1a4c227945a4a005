#!/usr/bin/env bash
# tests/api/headers.sh: the installed headers (flashkern.h, fk_models.h, fk_leaves.h, and
# fk_checkpoint.h, libflashkern_ckpt's, which builds may install: copied alone
# into a fresh include directory, as `cmake --install` lays them out) in every language a host
# compiles them in: gcc and clang -std=c99 and c11, g++ and clang++ -std=c++11, c++14, c++17 and
# c++20, each with -Wall -Wextra -pedantic -Werror (and -Wundef -Wredundant-decls -Wshadow
# -Wconversion, which hosts use too).
#   * each header alone in a translation unit compiles (it includes what it needs);
#   * tests/api/host_cxx.c (the plan API, the bf16 helpers, fk_leaf_resolve, one stamp called by
#     its prototype) compiles, links against the build's libflashkern.a and runs, in every mode:
#     the C++ builds link only because fk_leaves.h declares the stamps extern "C". A sanitizer
#     build's archive (FK_C_FLAGS with -fsanitize) links with those flags, by the compiler family
#     that built it (FK_C_COMPILER_ID: GNU or Clang); the other family then compiles only;
#   * the version lines are each `#define FK_VERSION_<PART> <value>` (CMake reads them) and agree;
# Negative controls prove each check can fail: fk_leaves.h without its extern "C" (the C++ host
# must not link); with _Static_assert in place of FK_STATIC_ASSERT (g++ and clang++ must refuse
# it); a false FK_STATIC_ASSERT (every mode must stop).
set -u
src=${FK_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}
build=${FK_BUILD_DIR:-$src/build}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
lib=$build/libflashkern.a
[ -f "$lib" ] || { echo "FAIL: no $lib (build first)"; exit 1; }

inc=$tmp/include
mkdir -p "$inc"
cp "$src/runtime/include/flashkern.h" "$src/runtime/include/fk_models.h" "$src/generated/fk_leaves.h" \
  "$src/runtime/include/fk_checkpoint.h" "$inc/"

MODES=("gcc -std=c99" "gcc -std=c11" "clang -std=c99" "clang -std=c11"
       "g++ -std=c++11" "g++ -std=c++14" "g++ -std=c++17" "g++ -std=c++20"
       "clang++ -std=c++11" "clang++ -std=c++14" "clang++ -std=c++17" "clang++ -std=c++20")
WARN="-Wall -Wextra -pedantic -Werror -Wundef -Wredundant-decls -Wshadow -Wconversion"
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

# lang_of "cc -std=x" -> c or c++
lang_of() { case $1 in *++*) echo c++ ;; *) echo c ;; esac; }

# compile MODE INCDIR FILE [extra...] -> the compiler's output in $tmp/out; status of the compiler
compile() {
  local mode=$1 dir=$2 file=$3
  shift 3
  # shellcheck disable=SC2086  # the mode and flags are word lists
  $mode $WARN -I"$dir" -x "$(lang_of "$mode")" "$file" "$@" > "$tmp/out" 2>&1
}

# a sanitizer build: the flags its archive needs, and the family whose runtime they name
san=$(echo "${FK_C_FLAGS:-}" | tr ' ' '\n' | grep -E '^-fsanitize|^-fno-sanitize|^-fno-omit-frame-pointer' | tr '\n' ' ')
family=${FK_C_COMPILER_ID:-GNU}

# links MODE: 0 when MODE can link the archive (always, but for a sanitizer build of the other family)
links() {
  [ -z "$san" ] && return 0
  case $1 in clang*) [ "$family" = Clang ] ;; *) [ "$family" = GNU ] ;; esac
}

# build_host MODE INCDIR EXE: compile and link tests/api/host_cxx.c against libflashkern.a
build_host() {
  # shellcheck disable=SC2086  # the sanitizer flags are a word list
  compile "$1" "$2" "$src/tests/api/host_cxx.c" $san -x none "$lib" -lpthread -o "$3"
}

echo "== each installed header alone, in ${#MODES[@]} modes"
n=0
for mode in "${MODES[@]}"; do
  for h in flashkern.h fk_models.h fk_leaves.h fk_checkpoint.h; do
    printf '#include <%s>\nint fk_unit_%s;\n' "$h" "${h%.h}" > "$tmp/alone.c"
    if compile "$mode" "$inc" "$tmp/alone.c" -c -o "$tmp/alone.o"; then
      n=$((n + 1))
    else
      fail "$mode: $h alone:"; sed 's/^/    /' "$tmp/out" | head -8
    fi
  done
done
echo "ok: $n of $((3 * ${#MODES[@]})) compiles"

echo "== tests/api/host_cxx.c: compiled, linked against $lib, run, in every mode"
[ -n "$san" ] && echo "(a sanitizer build: $san; $family links and runs, the other family compiles only)"
for mode in "${MODES[@]}"; do
  exe=$tmp/host_${mode// /_}
  if ! links "$mode"; then
    if compile "$mode" "$inc" "$src/tests/api/host_cxx.c" -c -o "$tmp/host.o"; then
      echo "ok: $mode: compiles (not linked: the archive needs $family's sanitizer runtime)"
    else
      fail "$mode: host_cxx.c does not compile:"; sed 's/^/    /' "$tmp/out" | head -8
    fi
    continue
  fi
  if ! build_host "$mode" "$inc" "$exe"; then
    fail "$mode: host_cxx.c does not build:"; sed 's/^/    /' "$tmp/out" | head -8
    continue
  fi
  if ! "$exe" > "$tmp/run.out" 2>&1; then
    fail "$mode: host_cxx does not run:"; sed 's/^/    /' "$tmp/run.out" | head -8
    continue
  fi
  echo "ok: $mode: $(head -1 "$tmp/run.out")"
done

echo "== the version lines"
v=()
for part in MAJOR MINOR PATCH; do
  line=$(grep -E "^#define FK_VERSION_$part [0-9]+$" "$inc/flashkern.h")
  [ "$(echo "$line" | grep -c .)" = 1 ] || { fail "flashkern.h: not one '#define FK_VERSION_$part <number>' line"; continue; }
  v+=("${line##* }")
done
str=$(grep -E '^#define FK_VERSION_STRING "[0-9]+\.[0-9]+\.[0-9]+"$' "$inc/flashkern.h" | sed 's/.*"\(.*\)"/\1/')
if [ "${#v[@]}" = 3 ] && [ "$str" = "${v[0]}.${v[1]}.${v[2]}" ]; then
  echo "ok: FK_VERSION_STRING \"$str\" = MAJOR.MINOR.PATCH"
else
  fail "FK_VERSION_STRING '$str' and MAJOR.MINOR.PATCH '${v[*]}' disagree (or a line is not in CMake's form)"
fi

echo "== negative controls"
# 1. fk_leaves.h without extern "C": the C++ host's direct stamp call must not link
neg=$tmp/neg_extern
mkdir -p "$neg"
cp "$inc"/*.h "$neg/"
sed -i '/^extern "C" {$/d; /^} \/\* extern "C" \*\/$/d' "$neg/fk_leaves.h"
cxx="g++ -std=c++17"
links "$cxx" || cxx="clang++ -std=c++17"
if cmp -s "$inc/fk_leaves.h" "$neg/fk_leaves.h"; then
  fail "control: no extern \"C\" block found in fk_leaves.h to remove"
elif build_host "$cxx" "$neg" "$tmp/neg_host"; then
  fail "control: a C++ host linked without fk_leaves.h's extern \"C\" ($cxx)"
elif grep -q "undefined reference to .fk_rmsnorm_f32__" "$tmp/out"; then
  echo "ok: without extern \"C\" the C++ host does not link (the stamp's name is mangled)"
else
  fail "control: the C++ host failed for another reason:"; sed 's/^/    /' "$tmp/out" | head -5
fi
# 2. _Static_assert as fk_leaves.h wrote it before FK_STATIC_ASSERT: g++ and clang++ -pedantic refuse
#    it. (gcc and clang -std=c99 -pedantic would too, "a C11 extension", but in strict C99 glibc's
#    <sys/cdefs.h> defines _Static_assert as a macro of its own, which hides the keyword here; other C
#    libraries do not: FK_STATIC_ASSERT's C99 form is the one checked in every mode above.)
neg=$tmp/neg_static
mkdir -p "$neg"
cp "$inc"/*.h "$neg/"
sed -i 's/^FK_STATIC_ASSERT(/_Static_assert(/' "$neg/fk_leaves.h"
printf '#include <flashkern.h>\nint fk_unit;\n' > "$tmp/alone.c"
for mode in "g++ -std=c++17" "clang++ -std=c++11"; do
  if compile "$mode" "$neg" "$tmp/alone.c" -c -o "$tmp/neg.o"; then
    fail "control: $mode accepts _Static_assert in fk_leaves.h"
  else
    echo "ok: $mode refuses a bare _Static_assert: $(grep -m1 -E 'error' "$tmp/out" | cut -c1-110)"
  fi
done
# 3. a false FK_STATIC_ASSERT stops every mode (the C99 fallback included)
printf '#include <flashkern.h>\nFK_STATIC_ASSERT(sizeof(fk_rmsnorm_f32_args) == 1, "fk_rmsnorm_f32: wrong size");\n' \
  > "$tmp/false.c"
n=0
for mode in "${MODES[@]}"; do
  if compile "$mode" "$inc" "$tmp/false.c" -c -o "$tmp/neg.o"; then
    fail "control: $mode compiles a false FK_STATIC_ASSERT"
  elif grep -qE "wrong size|fk_static_assert_[0-9]+.* negative|negative size" "$tmp/out"; then
    n=$((n + 1))
  else
    fail "control: $mode stops on a false FK_STATIC_ASSERT for another reason:"; sed 's/^/    /' "$tmp/out" | head -4
  fi
done
echo "ok: a false FK_STATIC_ASSERT stops $n of ${#MODES[@]} modes"

if [ "$fails" -ne 0 ]; then
  echo "FAIL: $fails checks"
  exit 1
fi
echo "PASS"
