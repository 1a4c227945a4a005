#!/usr/bin/env bash
# tests/install_host.sh: `cmake --install` of the build into a fresh prefix, then a host
# (tests/install/host.c) built against that prefix only:
#   * find_package(flashkern): host_static (flashkern::flashkern), host_shared (flashkern::flashkern_shared);
#   * pkg-config flashkern: a shared link, and a static link of libflashkern.a;
#   * the installed headers are flashkern.h, fk_models.h and fk_leaves.h only (no fk_asm.h, no fk_tables.h).
# Each host must run its plan (every call FK_OK, 480 + 480 PCM samples); each shared host must
# load the installed libflashkern.so, each static host none.
set -eu
src=${FK_SOURCE_DIR:-$(cd "$(dirname "$0")/.." && pwd)}
build=${FK_BUILD_DIR:?FK_BUILD_DIR is the configured build directory}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
prefix=$tmp/prefix
fail() { echo "FAIL: $*"; exit 1; }

echo "== cmake --install $build --prefix $prefix"
cmake --install "$build" --prefix "$prefix" > "$tmp/install.log" || { cat "$tmp/install.log"; fail "cmake --install"; }
pc=$(find "$prefix" -name flashkern.pc -path '*/pkgconfig/*' | head -1)
[ -n "$pc" ] || fail "no pkgconfig/flashkern.pc under the prefix"
libdir=$(dirname "$(dirname "$pc")")
inc=$prefix/include/flashkern
for f in "$inc/flashkern.h" "$inc/fk_models.h" "$inc/fk_leaves.h" "$libdir/libflashkern.a" "$libdir/libflashkern.so" \
         "$libdir/cmake/flashkern/flashkernConfig.cmake" "$libdir/cmake/flashkern/flashkernConfigVersion.cmake"; do
  [ -e "$f" ] || fail "not installed: ${f#"$prefix"/}"
done
echo "installed: $(cd "$prefix" && find . -type f -o -type l | sed 's|^\./||' | sort | tr '\n' ' ')"
for f in fk_asm.h fk_tables.h; do
  if find "$prefix" -name "$f" | grep -q .; then fail "private header $f is installed"; fi
done
echo "ok: no fk_asm.h, no fk_tables.h under the prefix"

# run_host NAME EXE KIND(shared|static): runs it (no LD_LIBRARY_PATH), checks what it loads
run_host() {
  local name=$1 exe=$2 kind=$3
  if ! "$exe" > "$tmp/$name.out" 2>&1; then sed 's/^/    /' "$tmp/$name.out"; fail "$name did not run its plan"; fi
  local so
  so=$(ldd "$exe" | awk '$1 ~ /^libflashkern\.so/ { print $3 }')
  if [ "$kind" = shared ]; then
    if [ -z "$so" ] || [ "$(realpath "$so")" != "$(realpath "$libdir/libflashkern.so.0")" ]; then
      fail "$name loads libflashkern from '${so:-nowhere}', not $libdir"
    fi
  else
    [ -z "$so" ] || fail "$name (static) loads $so"
  fi
  echo "ok: $name ($kind${so:+, $so}): $(tail -1 "$tmp/$name.out")"
}

echo "== find_package(flashkern): tests/install with CMAKE_PREFIX_PATH=$prefix"
if ! { cmake -S "$src/tests/install" -B "$tmp/host" -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_BUILD_TYPE=Release &&
       cmake --build "$tmp/host"; } > "$tmp/host.log" 2>&1; then
  sed 's/^/    /' "$tmp/host.log"; fail "the find_package host does not build"
fi
run_host host_static "$tmp/host/host_static" static
run_host host_shared "$tmp/host/host_shared" shared
sed 's/^/    /' "$tmp/host_shared.out"

echo "== pkg-config flashkern ($pc)"
export PKG_CONFIG_PATH=$libdir/pkgconfig
cflags=$(pkg-config --cflags flashkern)
libs=$(pkg-config --libs flashkern)
echo "pkg-config: version $(pkg-config --modversion flashkern); cflags $cflags; libs $libs"
warn="-Wall -Wextra -Wconversion -Werror"
# shellcheck disable=SC2086  # flag lists
"${CC:-cc}" $warn $cflags "$src/tests/install/host.c" -o "$tmp/host_pc" $libs -Wl,-rpath,"$libdir" \
  || fail "pkg-config shared link"
run_host host_pc_shared "$tmp/host_pc" shared
# static: libflashkern.a, then Libs.private (pkg-config --static), the C library stays shared
static_libs=$(pkg-config --static --libs flashkern)
# shellcheck disable=SC2086,SC2046  # flag lists
"${CC:-cc}" $warn $cflags "$src/tests/install/host.c" -o "$tmp/host_pc_static" \
  $(pkg-config --libs-only-L flashkern) -Wl,-Bstatic -lflashkern -Wl,-Bdynamic ${static_libs//-lflashkern/} \
  || fail "pkg-config static link"
run_host host_pc_static "$tmp/host_pc_static" static

# the four hosts ran the same plan: the same stamps and the same checksum
for h in host_shared host_pc_shared host_pc_static; do
  cmp -s "$tmp/host_static.out" "$tmp/$h.out" || fail "$h printed other stamps or another checksum than host_static"
done
echo "ok: the four hosts print the same stamps and checksum"
