#!/usr/bin/env bash
# tests/newleaf/run.sh: a new leaf needs its template, its contract model and its case builder,
# and no other file. In a scratch copy of the tree it drops in this folder's worked example (the
# axpy leaf of docs/adding-a-leaf.md) as templates/axpy.lua, tests/contract/axpy.c and
# tests/leaves/cases_axpy.c, stamps it (fkgen, as `make gen` does), checks that nothing outside
# generated/ differs from the tree but those three files, configures and builds, then runs
#   test_axpy      the registry's suite for the new leaf: every exact stamp (x86_64 avx2 and
#                  avx512, AArch64 neon under qemu -cpu max and neoverse-n1) == its contract model
#                  over the leaf's cases, AArch64 == x86_64, the gate's own perturbation;
#   test_coverage  every form, the new ones included, has its evidence;
# and finally removes the contract model: the coverage test must then fail, naming both forms.
#   FK_SOURCE_DIR (default: this tree), FK_NEWLEAF_KEEP=1 keeps the scratch folder.
set -euo pipefail
src=${FK_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}
here=$src/tests/newleaf
tmp=$(mktemp -d)
if [ "${FK_NEWLEAF_KEEP:-0}" = 1 ]; then echo "newleaf: scratch tree in $tmp"; else trap 'rm -rf "$tmp"' EXIT; fi
tree=$tmp/tree
mkdir -p "$tree"
step() { printf 'newleaf: %s\n' "$*"; }
fail() { printf 'newleaf: FAIL: %s\n' "$*" >&2; exit 1; }

# docs/adding-a-leaf.md shows this example's template and contract model as they are
doc=$src/docs/adding-a-leaf.md
block() { awk -v lang="$1" '$0 == "```" lang { on = 1; next } on && $0 == "```" { exit } on' "$doc"; }
cmp -s <(block lua) "$here/axpy.lua" || fail "docs/adding-a-leaf.md's template differs from tests/newleaf/axpy.lua"
cmp -s <(block c) "$here/axpy.c" || fail "docs/adding-a-leaf.md's contract model differs from tests/newleaf/axpy.c"

# the tree as it stands (build folders and .git aside); fixtures are only read: linked
tar -C "$src" --exclude=./.git --exclude='./build*' --exclude=./fixtures -cf - . | tar -C "$tree" -xf -
ln -s "$src/fixtures" "$tree/fixtures"
cp -r "$tree" "$tmp/before"
cp "$here/axpy.lua" "$tree/templates/axpy.lua"
cp "$here/axpy.c" "$tree/tests/contract/axpy.c"
cp "$here/cases_axpy.c" "$tree/tests/leaves/cases_axpy.c"
lua=$(command -v luajit || command -v lua5.4)
"$lua" "$tree/gen/fkgen.lua" --root "$tree"
changed=$(diff -rq "$tmp/before" "$tree" | grep -v "generated" || true)
want="Only in $tree/templates: axpy.lua
Only in $tree/tests/contract: axpy.c
Only in $tree/tests/leaves: cases_axpy.c"
[ "$changed" = "$want" ] || fail "the tree differs in more than the three files:
$changed"
step "the three files added, generated/ restamped: $(grep -c '^fk_axpy_' "$tree/generated/MANIFEST") axpy stamps"

cmake -S "$tree" -B "$tree/build" -DCMAKE_BUILD_TYPE=Release -DFK_BUILD_TESTS=ON -DFK_BUILD_CROSS=ON \
  -DFK_WERROR=ON >"$tmp/configure.log" 2>&1 ||
  { cat "$tmp/configure.log"; fail "configure"; }
cmake --build "$tree/build" -j2 --target test_axpy test_coverage >"$tmp/build.log" 2>&1 ||
  { tail -40 "$tmp/build.log"; fail "build"; }
step "built test_axpy and test_coverage"
(cd "$tree/build" && ./test_axpy --jobs 2 --verbose) >"$tmp/axpy.log" 2>&1 || { cat "$tmp/axpy.log"; fail "test_axpy"; }
grep -E "vs|flipped|Synthesis" "$tmp/axpy.log" | sed 's/^/  /'
"$tree/build/test_coverage" "$tree/fixtures" >"$tmp/coverage.log" 2>&1 || { cat "$tmp/coverage.log"; fail "coverage"; }
grep -E "axpy|^coverage" "$tmp/coverage.log" | sed 's/^/  /'

rm "$tree/tests/contract/axpy.c"
cmake --build "$tree/build" -j2 --target test_coverage >"$tmp/build2.log" 2>&1 || { tail -40 "$tmp/build2.log"; fail "rebuild"; }
if "$tree/build/test_coverage" "$tree/fixtures" >"$tmp/coverage2.log" 2>&1; then
  cat "$tmp/coverage2.log"
  fail "the coverage test passed without the contract model"
fi
for form in axpy_f32 axpy_bf16; do
  grep -q "^FAIL $form .*no contract model (tests/contract/axpy.c: fkc_$form)" "$tmp/coverage2.log" ||
    { cat "$tmp/coverage2.log"; fail "the coverage test does not name $form's missing contract model"; }
done
step "without tests/contract/axpy.c the coverage test fails:"
grep -E "^FAIL|^coverage" "$tmp/coverage2.log" | sed 's/^/  /'
step "PASS"
