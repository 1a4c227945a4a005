#!/usr/bin/env bash
# tests/census_test.sh: tools/census.lua itself, under lua5.4 and luajit.
#   * classes, registers and frame of a synthetic x86_64 and AArch64 stamp, counted by hand;
#   * a real stamp's marked loop: the census's instruction count == the tagged lines between its
#     LLVM-MCA markers (counted here with awk), and llvm-mca gave a number for each model;
#   * --check passes on a fresh partial census and fails, naming the file, once it is altered;
#   * an unknown stamp is an error that names it.
set -u
src=${FK_SOURCE_DIR:-$(cd "$(dirname "$0")/.." && pwd)}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
bad() { echo "FAIL: $*"; fail=1; }

cat > "$tmp/unit.lua" <<'LUA'
local M = dofile(arg[1] .. "/tools/census.lua")
local function I(list)
  local ins = {}
  for i, t in ipairs(list) do ins[i] = { text = t[1], op = t[2] } end
  return ins
end
local function expect(what, got, want)
  if got ~= want then print("FAIL " .. what .. ": got " .. tostring(got) .. ", want " .. tostring(want)); os.exit(1) end
end
local x = I({
  { "push rbx", 0 }, { "sub rsp, 32", 0 },
  { "vmovups zmm0, [rdi + 64]", 3 },            -- load
  { "vfmadd231ps zmm1, zmm0, [rsi]", 4 },       -- load + fma
  { "vmovups [rdx], zmm1", 5 },                 -- store
  { "vpermt2ps zmm2, zmm3, zmm4", 6 },          -- shuffle
  { "vcvtneps2bf16 ymm5, zmm1", 7 },            -- convert
  { "lea rax, [rdi + 8]", 8 },                  -- other (no memory access)
  { "prefetcht0 [rdi + 4096]", 8 },             -- other
  { "kmovw k1, eax", 9 },                       -- other, mask k1
  { "jle .Lx", 10 },                            -- branch
})
local n = M.count(x, "x86_64")
expect("x86 total", n.total, 11)
expect("x86 load", n.load, 2); expect("x86 store", n.store, 1); expect("x86 fma", n.fma, 1)
expect("x86 shuffle", n.shuffle, 1); expect("x86 convert", n.convert, 1); expect("x86 branch", n.branch, 1)
expect("x86 other", n.other, 5)
local g, v, k = M.registers(x, "x86_64")
expect("x86 gpr (rbx rdi rsi rdx rax)", g, 5); expect("x86 vec (0-5)", v, 6); expect("x86 mask", k, 1)
local saved, stack = M.frame(x, "x86_64")
expect("x86 saved", saved, 1); expect("x86 stack", stack, 40)
local a = I({
  { "stp d8, d9, [sp, #-16]!", 0 }, { "stp x19, x20, [sp, #-16]!", 0 },
  { "ldp q0, q1, [x1, #0]", 3 },                -- 2 loads
  { "ld1 {v2.4s}, [x2]", 3 },                   -- load
  { "fmla v4.4s, v0.4s, v1.4s", 4 },            -- fma
  { "bfdot v5.4s, v0.8h, v1.8h", 4 },           -- fma
  { "str q4, [x3]", 5 },                        -- store
  { "uzp1 v6.8h, v4.8h, v5.8h", 6 },            -- shuffle
  { "bfcvtn v7.4h, v4.4s", 7 },                 -- convert
  { "add x16, x1, x2, lsl #1", 8 },             -- other (x16 x1 x2)
  { "movi v28.4s, #0x7f, msl #8", 8 },          -- other
  { "b.le .Lx", 10 },                           -- branch
})
n = M.count(a, "aarch64")
expect("a64 total", n.total, 12)
expect("a64 load", n.load, 3); expect("a64 store", n.store, 5); expect("a64 fma", n.fma, 2)
expect("a64 shuffle", n.shuffle, 1); expect("a64 convert", n.convert, 1); expect("a64 branch", n.branch, 1)
expect("a64 other", n.other, 2)
g, v = M.registers(a, "aarch64")
expect("a64 gpr (x19 x20 x1 x2 x3 x16)", g, 6); expect("a64 vec (0-9 less 3, 28)", v, 10)
saved, stack = M.frame(a, "aarch64")
expect("a64 saved", saved, 4); expect("a64 stack", stack, 32)
print("unit: classes, registers, frame ok")
LUA

stamp=fk_shortconv_bf16__x86_64_avx512_exact
want=$(awk '/LLVM-MCA-BEGIN loop14/{on=1; next} /LLVM-MCA-END loop14/{on=0} on && /\/\/ \[[0-9]+\]$/{n++} END{print n}' \
  "$src/generated/x86_64/$stamp.S")
for lua in lua5.4 luajit; do
  command -v "$lua" >/dev/null || { bad "$lua not installed"; continue; }
  "$lua" "$tmp/unit.lua" "$src" || bad "$lua: unit checks"
  out=$(cd "$src" && "$lua" tools/census.lua --root "$src" --stamp "$stamp") || bad "$lua: --stamp $stamp"
  echo "$out" | head -3
  echo "$out" | grep -Eq "^  loop14 +ins +$want " || bad "$lua: loop14 should count $want instructions: $out"
  echo "$out" | grep -Eq "SKX [0-9]+\.[0-9]{2} c/it .*ICX [0-9]+\.[0-9]{2} c/it" || bad "$lua: no llvm-mca figures"
  (cd "$src" && "$lua" tools/census.lua --root "$src" --only "^fk_shortconv_bf16__" --out "$tmp/c.md") >/dev/null ||
    bad "$lua: partial census"
  (cd "$src" && "$lua" tools/census.lua --root "$src" --only "^fk_shortconv_bf16__" --out "$tmp/c.md" --check) \
    >/dev/null || bad "$lua: --check on a fresh census"
  sed -i "s/| $want |/| $((want + 1)) |/" "$tmp/c.md"   # the loop's instruction count, whatever it is
  grep -q "| $((want + 1)) |" "$tmp/c.md" || bad "$lua: the alteration changed nothing"
  if (cd "$src" && "$lua" tools/census.lua --root "$src" --only "^fk_shortconv_bf16__" --out "$tmp/c.md" --check) \
    2>"$tmp/err" >/dev/null; then bad "$lua: --check passed on an altered census"
  else grep -q "c.md is stale" "$tmp/err" || bad "$lua: the stale message does not name the file: $(cat "$tmp/err")"; fi
  if (cd "$src" && "$lua" tools/census.lua --root "$src" --stamp fk_nope) 2>"$tmp/err" >/dev/null; then
    bad "$lua: an unknown stamp was accepted"
  else grep -q "fk_nope" "$tmp/err" || bad "$lua: the error does not name the stamp"; fi
done
[ $fail = 0 ] && echo "census tool: ok (lua5.4, luajit)"
exit $fail
