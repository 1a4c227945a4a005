#!/usr/bin/env bash
# tests/install_host.sh: `cmake --install` of the build into a fresh prefix, then the README's link
# recipes ("Linking from a host"), run as the README writes them, against that prefix only:
#   * the pkg-config lines (a C host shared and static, a C++ host) with CC/CXX = gcc/g++ and
#     clang/clang++; each shared host must load the installed libflashkern.so.0.<minor>, each
#     static host none; the C++ host also built static (FK_HOST_STATIC: a stamp called by symbol);
#   * the CMake recipe (find_package(flashkern <major.minor>)), as flashkern::flashkern and
#     flashkern::flashkern_shared;
#   * the installed headers are flashkern.h, fk_models.h and fk_leaves.h only (no fk_asm.h, no
#     fk_tables.h); LICENSE and CHANGELOG.md are installed; the package and pkg-config versions are
#     the library's;
#   * with FK_BUILD_CHECKPOINTS in the build: fk_checkpoint.h, libflashkern_ckpt.a and .so.0.<minor>
#     installed, and tests/install/host_ckpt.c built by find_package against
#     flashkern::flashkern_ckpt (static: jansson linked by name) and flashkern::flashkern_ckpt_shared.
# Every C host runs the same plan and prints the same stamps and checksum.
set -eu
src=${FK_SOURCE_DIR:-$(cd "$(dirname "$0")/.." && pwd)}
build=${FK_BUILD_DIR:?FK_BUILD_DIR is the configured build directory}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
PREFIX=$tmp/prefix
fail() { echo "FAIL: $*"; exit 1; }

version=$(awk '/^#define FK_VERSION_(MAJOR|MINOR|PATCH) /{ v = v (v == "" ? "" : ".") $3 } END { print v }' \
  "$src/runtime/include/flashkern.h")
minor=${version%.*}
echo "== flashkern $version: cmake --install $build --prefix $PREFIX"
cmake --install "$build" --prefix "$PREFIX" > "$tmp/install.log" || { cat "$tmp/install.log"; fail "cmake --install"; }
libdir=$PREFIX/lib
inc=$PREFIX/include/flashkern
for f in "$inc/flashkern.h" "$inc/fk_models.h" "$inc/fk_leaves.h" "$libdir/libflashkern.a" "$libdir/libflashkern.so" \
         "$libdir/libflashkern.so.$minor" "$libdir/libflashkern.so.$version" "$libdir/pkgconfig/flashkern.pc" \
         "$libdir/pkgconfig/flashkern-static.pc" "$libdir/cmake/flashkern/flashkernConfig.cmake" \
         "$libdir/cmake/flashkern/flashkernConfigVersion.cmake" "$PREFIX/share/doc/flashkern/LICENSE" \
         "$PREFIX/share/doc/flashkern/CHANGELOG.md"; do
  [ -e "$f" ] || fail "not installed: ${f#"$PREFIX"/}"
done
soname=$(readelf -d "$libdir/libflashkern.so" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
[ "$soname" = "libflashkern.so.$minor" ] || fail "soname '$soname', want libflashkern.so.$minor (README: Versions and ABI)"
echo "installed: $(cd "$PREFIX" && find . -type f -o -type l | sed 's|^\./||' | sort | tr '\n' ' ')"
for f in fk_asm.h fk_tables.h; do
  if find "$PREFIX" -name "$f" | grep -q .; then fail "private header $f is installed"; fi
done
echo "ok: soname $soname; no fk_asm.h, no fk_tables.h under the prefix"

# run_host NAME EXE KIND(shared|static): runs it (no LD_LIBRARY_PATH), checks what it loads
run_host() {
  local name=$1 exe=$2 kind=$3
  if ! "$exe" > "$tmp/$name.out" 2>&1; then sed 's/^/    /' "$tmp/$name.out"; fail "$name did not run"; fi
  local so
  so=$(ldd "$exe" | awk '$1 ~ /^libflashkern\.so/ { print $3 }')
  if [ "$kind" = shared ]; then
    if [ -z "$so" ] || [ "$(realpath "$so")" != "$(realpath "$libdir/libflashkern.so.$minor")" ]; then
      fail "$name loads libflashkern from '${so:-nowhere}', not $libdir"
    fi
  else
    [ -z "$so" ] || fail "$name (static) loads $so"
  fi
  echo "ok: $name ($kind${so:+, $so}): $(tail -1 "$tmp/$name.out")"
}

# the README's blocks: the first ```LANG block after the marker line <!-- install_host: WHAT -->
readme_block() {
  awk -v mark="<!-- install_host: $1 -->" -v lang="$2" '
    $0 == mark { armed = 1; next }
    armed && $0 == "```" lang { on = 1; next }
    on && $0 == "```" { exit }
    on' "$src/README.md"
}
readme_block "link recipes" sh > "$tmp/recipes.sh"
readme_block "cmake recipe" cmake > "$tmp/recipe.cmake"
[ "$(grep -c . "$tmp/recipes.sh")" -ge 3 ] || fail "README: no link recipes after <!-- install_host: link recipes -->"
[ "$(grep -c . "$tmp/recipe.cmake")" -ge 2 ] || fail "README: no CMake recipe after <!-- install_host: cmake recipe -->"
grep -q "find_package(flashkern $minor REQUIRED)" "$tmp/recipe.cmake" ||
  fail "README's CMake recipe must ask for flashkern $minor (the version's major.minor)"

for pair in gcc:g++ clang:clang++; do
  CC=${pair%%:*} CXX=${pair#*:}
  w=$tmp/$CC
  mkdir -p "$w"
  cp "$src/tests/install/host.c" "$src/tests/install/host.cpp" "$w/"
  echo "== README link recipes, CC=$CC CXX=$CXX"
  if ! (cd "$w" && export PREFIX CC CXX && bash -eu "$tmp/recipes.sh") > "$tmp/$CC.log" 2>&1; then
    sed 's/^/    /' "$tmp/$CC.log"; fail "the README's link recipes with $CC / $CXX"
  fi
  run_host "$CC-host" "$w/host" shared
  run_host "$CC-host_static" "$w/host_static" static
  run_host "$CXX-host_cxx" "$w/host_cxx" shared
  grep -q "^flashkern $version (C++ " "$tmp/$CXX-host_cxx.out" || fail "$CXX host: fk_version() is not $version"
  # the C++ host static too: a stamp called by its symbol, through fk_leaves.h's extern "C" prototype
  # shellcheck disable=SC2046  # flag lists
  (cd "$w" && export PKG_CONFIG_PATH="$libdir/pkgconfig" &&
    "$CXX" -DFK_HOST_STATIC host.cpp -o host_cxx_static $(pkg-config --cflags --libs flashkern-static)) ||
    fail "$CXX: the static C++ host"
  run_host "$CXX-host_cxx_static" "$w/host_cxx_static" static
  grep -q "by its symbol" "$tmp/$CXX-host_cxx_static.out" || fail "$CXX static host did not call the stamp by symbol"
done

echo "== README CMake recipe (find_package), static and shared"
for target in flashkern::flashkern flashkern::flashkern_shared; do
  w=$tmp/cmake-${target#flashkern::}
  mkdir -p "$w"
  cp "$src/tests/install/host.c" "$w/"
  { echo "cmake_minimum_required(VERSION 3.25)"; echo "project(host C)"; sed "s/flashkern::flashkern)/$target)/" "$tmp/recipe.cmake"; } \
    > "$w/CMakeLists.txt"
  if ! { cmake -S "$w" -B "$w/build" -DCMAKE_PREFIX_PATH="$PREFIX" -DCMAKE_BUILD_TYPE=Release &&
         cmake --build "$w/build"; } > "$tmp/cmake.log" 2>&1; then
    sed 's/^/    /' "$tmp/cmake.log"; fail "the README's CMake recipe with $target"
  fi
  kind=static
  [ "$target" = flashkern::flashkern_shared ] && kind=shared
  run_host "cmake-$kind" "$w/build/host" "$kind"
done
# the checkpoint loader, when the build has it
if grep -q '^FK_BUILD_CHECKPOINTS:BOOL=ON$' "$build/CMakeCache.txt"; then
  for f in "$inc/fk_checkpoint.h" "$libdir/libflashkern_ckpt.a" "$libdir/libflashkern_ckpt.so.$minor"; do
    [ -e "$f" ] || fail "not installed (FK_BUILD_CHECKPOINTS): ${f#"$PREFIX"/}"
  done
  for target in flashkern::flashkern_ckpt flashkern::flashkern_ckpt_shared; do
    w=$tmp/cmake-${target#flashkern::}
    mkdir -p "$w"
    cp "$src/tests/install/host_ckpt.c" "$w/"
    printf 'cmake_minimum_required(VERSION 3.25)\nproject(host C)\nfind_package(flashkern %s REQUIRED)\nadd_executable(host host_ckpt.c)\ntarget_link_libraries(host PRIVATE %s)\n' \
      "$minor" "$target" > "$w/CMakeLists.txt"
    if ! { cmake -S "$w" -B "$w/build" -DCMAKE_PREFIX_PATH="$PREFIX" -DCMAKE_BUILD_TYPE=Release &&
           cmake --build "$w/build"; } > "$tmp/cmake-ckpt.log" 2>&1; then
      sed 's/^/    /' "$tmp/cmake-ckpt.log"; fail "a host of $target"
    fi
    "$w/build/host" > "$tmp/ckpt.out" 2>&1 || { sed 's/^/    /' "$tmp/ckpt.out"; fail "the host of $target did not run"; }
    so=$(ldd "$w/build/host" | awk '$1 ~ /^libflashkern_ckpt\.so/ { print $3 }')
    if [ "$target" = flashkern::flashkern_ckpt_shared ]; then
      [ "$(realpath "${so:-/none}")" = "$(realpath "$libdir/libflashkern_ckpt.so.$minor")" ] ||
        fail "the $target host loads libflashkern_ckpt from '${so:-nowhere}', not $libdir"
    else
      [ -z "$so" ] || fail "the static $target host loads $so"
    fi
    echo "ok: $target: $(cat "$tmp/ckpt.out")"
  done
fi
# an older minor version is not accepted in 0.x (SameMinorVersion)
w=$tmp/cmake-old
mkdir -p "$w"
printf 'cmake_minimum_required(VERSION 3.25)\nproject(old NONE)\nfind_package(flashkern 0.1 REQUIRED)\n' > "$w/CMakeLists.txt"
if cmake -S "$w" -B "$w/build" -DCMAKE_PREFIX_PATH="$PREFIX" > "$tmp/old.log" 2>&1; then
  fail "find_package(flashkern 0.1) accepted $version: 0.x minor versions are not compatible"
fi
echo "ok: find_package(flashkern 0.1) refused ($version: another minor version)"
PKG_CONFIG_PATH=$libdir/pkgconfig pkg-config --modversion flashkern | grep -qx "$version" || fail "pkg-config version"

# every C host ran the same plan: the same stamps and the same checksum
for h in clang-host clang-host_static gcc-host_static cmake-static cmake-shared; do
  cmp -s "$tmp/gcc-host.out" "$tmp/$h.out" || fail "$h printed other stamps or another checksum than gcc-host"
done
echo "ok: the C hosts print the same stamps and checksum; the C++ hosts ran under g++ and clang++"
