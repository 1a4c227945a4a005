#!/usr/bin/env bash
# tests/lib_only.sh: the library alone, as a packager builds it.
#   1. host: this tree configured in a scratch folder with the lib preset's options (tests, cross
#      build, bench and examples off) under `cmake --trace`: the configure fails the test if it looks
#      up anything but the threads library and (optionally) Lua (no Criterion, zstd, xxhash, qemu,
#      cross compiler, oneDNN, OpenBLAS, FFTW, OpenMP, Python, valgrind, luacheck); then built
#      without -Werror and installed.
#   2. arm64: the same library-only configure with the AArch64 toolchain file, as a native arm64
#      build is configured; built, installed, and the C host (tests/install/host.c) built against
#      the install (static and shared, through flashkern-static.pc and flashkern.pc) and run under
#      qemu-aarch64: the same stamps per phase as an AArch64 plan has, the same checksum as the
#      host build's run of it.
# A negative control first: the trace check must fail on a configure that looks up a test library.
set -eu
src=${FK_SOURCE_DIR:-$(cd "$(dirname "$0")/.." && pwd)}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
opts=(-DCMAKE_BUILD_TYPE=Release -DFK_BUILD_TESTS=OFF -DFK_BUILD_CROSS=OFF -DFK_BUILD_BENCH=OFF -DFK_BUILD_EXAMPLES=OFF)

# lookups a trace (cmake --trace-format=json-v1) makes from this tree's own files, but the allowed
lookups() {
  python3 - "$1" "$src" <<'PY'
import json, sys
trace, src = sys.argv[1], sys.argv[2]
bad = 0
for line in open(trace):
    try:
        e = json.loads(line)
    except ValueError:
        continue
    if e.get("cmd", "").lower() not in ("find_package", "find_library", "find_path", "find_program", "find_file"):
        continue
    if not e.get("file", "").startswith(src + "/"):
        continue  # CMake's own modules (FindThreads) look up what they need
    args = e.get("args", [])
    what = args[0] if args else ""
    if (e["cmd"].lower(), what) in (("find_package", "Threads"), ("find_program", "FK_LUA")):
        continue
    print("%s:%s: %s(%s)" % (e["file"][len(src) + 1:], e.get("line"), e["cmd"], " ".join(args)))
    bad += 1
sys.exit(1 if bad else 0)
PY
}

# negative control: a scratch copy whose library-only configure looks up Criterion
mkdir -p "$tmp/control"
tar -C "$src" --exclude=./.git --exclude='./build*' --exclude=./fixtures -cf - . | tar -C "$tmp/control" -xf -
echo 'find_library(FK_CONTROL criterion)' >> "$tmp/control/CMakeLists.txt"
cmake -S "$tmp/control" -B "$tmp/control/b" "${opts[@]}" --trace-format=json-v1 --trace-redirect="$tmp/control.json" \
  > "$tmp/control.log" 2>&1 || { cat "$tmp/control.log"; fail "the control's configure"; }
src_saved=$src
src=$tmp/control
if lookups "$tmp/control.json" > "$tmp/control.out"; then fail "negative control: a criterion lookup went unseen"; fi
echo "negative control caught: $(cat "$tmp/control.out")"
src=$src_saved

echo "== host: library-only configure, build, install"
cmake -S "$src" -B "$tmp/host" "${opts[@]}" --trace-format=json-v1 --trace-redirect="$tmp/host.json" \
  > "$tmp/host.log" 2>&1 || { cat "$tmp/host.log"; fail "configure"; }
lookups "$tmp/host.json" || fail "the library-only configure looks up the dependencies above"
grep -q -- "-Werror" "$tmp/host/CMakeCache.txt" && fail "-Werror in a library-only build"
cmake --build "$tmp/host" -j2 > "$tmp/host-build.log" 2>&1 || { tail -30 "$tmp/host-build.log"; fail "build"; }
cmake --install "$tmp/host" --prefix "$tmp/host-prefix" > /dev/null || fail "install"
[ -f "$tmp/host-prefix/lib/libflashkern.a" ] && [ -f "$tmp/host-prefix/include/flashkern/flashkern.h" ] || fail "install"
ls "$tmp/host/" | grep -qE '^(test_|fk_bench_|fk_hello$)' && fail "tests, benches or examples were built"
echo "ok: configured with no lookup but threads and Lua, built (no -Werror), installed; no test, bench or example"

echo "== arm64: library-only configure with cmake/aarch64-linux-gnu.cmake, build, install, a host under qemu"
cmake -S "$src" -B "$tmp/a64" "${opts[@]}" -DCMAKE_TOOLCHAIN_FILE="$src/cmake/aarch64-linux-gnu.cmake" \
  --trace-format=json-v1 --trace-redirect="$tmp/a64.json" > "$tmp/a64.log" 2>&1 || { cat "$tmp/a64.log"; fail "configure"; }
lookups "$tmp/a64.json" || fail "the arm64 library-only configure looks up the dependencies above"
cmake --build "$tmp/a64" -j2 > "$tmp/a64-build.log" 2>&1 || { tail -30 "$tmp/a64-build.log"; fail "arm64 build"; }
prefix=$tmp/a64-prefix
cmake --install "$tmp/a64" --prefix "$prefix" > /dev/null || fail "arm64 install"
file -L "$prefix/lib/libflashkern.so" | grep -q "ARM aarch64" || fail "the installed libflashkern.so is not AArch64"
export PKG_CONFIG_PATH=$prefix/lib/pkgconfig
cc=aarch64-linux-gnu-gcc
# shellcheck disable=SC2046  # flag lists
$cc "$src/tests/install/host.c" -o "$tmp/host_a64_static" -static $(pkg-config --cflags --libs flashkern-static) -lm ||
  fail "the arm64 host (static)"
# shellcheck disable=SC2046
$cc "$src/tests/install/host.c" -o "$tmp/host_a64_shared" $(pkg-config --cflags --libs flashkern) -lm || fail "the arm64 host (shared)"
# Each run is bounded (it takes well under a second). The shared host's library path names the cross
# libc's folder after the install: with arm64 multiarch packages present (.ci/setup adds
# libjansson-dev:arm64), the host's /etc/ld.so.cache points the cross loader (2.36-8cross1) at the
# multiarch libc.so.6 (2.36-9+deb12u*), a mismatched pair that spins forever in pthread_create.
qemu=(timeout 120 qemu-aarch64 -cpu max -L /usr/aarch64-linux-gnu)
"${qemu[@]}" "$tmp/host_a64_static" > "$tmp/a64_static.out" 2>&1 || { cat "$tmp/a64_static.out"; fail "the arm64 host (static) under qemu"; }
"${qemu[@]}" -E LD_LIBRARY_PATH="$prefix/lib:/usr/aarch64-linux-gnu/lib" "$tmp/host_a64_shared" > "$tmp/a64_shared.out" 2>&1 ||
  { cat "$tmp/a64_shared.out"; fail "the arm64 host (shared) under qemu"; }
cmp -s "$tmp/a64_static.out" "$tmp/a64_shared.out" || fail "the static and shared arm64 hosts differ"
grep -q "__aarch64_neon_exact" "$tmp/a64_static.out" || fail "the arm64 host ran no AArch64 stamp"
echo "ok: arm64 host (static and shared) under qemu -cpu max: $(tail -1 "$tmp/a64_static.out")"
# the same plan on x86_64 gives the same bits (the exact tier): the host's checksum line
cc "$src/tests/install/host.c" -o "$tmp/host_x86" -I"$tmp/host-prefix/include/flashkern" \
  "$tmp/host-prefix/lib/libflashkern.a" -pthread -lm || fail "the x86_64 host"
"$tmp/host_x86" > "$tmp/x86.out" 2>&1 || { cat "$tmp/x86.out"; fail "the x86_64 host"; }
[ "$(tail -1 "$tmp/x86.out")" = "$(tail -1 "$tmp/a64_static.out")" ] ||
  fail "x86_64 and arm64 checksums differ: $(tail -1 "$tmp/x86.out") / $(tail -1 "$tmp/a64_static.out")"
echo "ok: the arm64 and x86_64 hosts print the same checksum"
