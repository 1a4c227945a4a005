#!/usr/bin/env bash
# tests/census_test.sh: tools/census.lua itself, under lua5.4 and luajit.
#   * classes, registers and frame of a synthetic x86_64 and AArch64 stamp, counted by hand;
#   * the bound (tools/census/pipes.lua) on a synthetic model: rows cut into whole resources, a
#     restricted pipe raising the bound, the dispatch limit, a row no resource explains refused;
#   * the bound on llvm-mca-16's real models, on probe loops: pure shifts (SHL, SHLL) on N2 bound
#     by V1 (the model's one shift pipe), BFCVTN by V0, FMLA on A14 by VM (2 per cycle of its 3
#     vector pipes), zmm shifts on SKX by p0; llvm-mca's own cycles per iteration at the bound on
#     such loops, and never below it on every marked loop of real stamps;
#   * perturbations: each check above must fail when the census is perturbed (a shift classed
#     as logic, N2's V group missing, a restricted pipe credited to its group, A14's VM ignored,
#     rows cut without the whole-cycle rule); a check that cannot fail proves nothing;
#   * a real stamp's marked loop: the census's instruction count == the tagged lines between its
#     LLVM-MCA markers (counted here with awk), and llvm-mca gave figures for each model;
#   * --check passes on a fresh partial census and fails, naming the file, once it is altered;
#   * an unknown stamp is an error that names it.
set -u
src=${FK_SOURCE_DIR:-$(cd "$(dirname "$0")/.." && pwd)}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
bad() { echo "FAIL: $*"; fail=1; }

cat > "$tmp/unit.lua" <<'LUA'
local root = arg[1]
local M = dofile(root .. "/tools/census.lua")
local P, Mo = M.pipes, M.models
local K = package.loaded["census.count"]

local failures
local function expect(what, got, want)
  local ok
  if type(want) == "number" and type(got) == "number" then ok = math.abs(got - want) < 0.005
  else ok = got == want end
  if not ok then
    failures[#failures + 1] = what .. ": got " .. tostring(got) .. ", want " .. tostring(want)
  end
end
local function I(list)
  local ins = {}
  for i, t in ipairs(list) do ins[i] = { text = t[1], op = t[2] } end
  return ins
end

-- classes, registers, frame ------------------------------------------------------------------
local function check_classes()
  local x = I({
    { "push rbx", 0 }, { "sub rsp, 32", 0 },                                   -- gpr 2
    { "vmovups zmm0, [rdi + 64]", 3 },                                        -- load
    { "vfmadd231ps zmm1, zmm0, [rsi]", 4 },                                   -- load + fma
    { "vmovups [rdx], zmm1", 5 },                                             -- store
    { "vpermt2ps zmm2, zmm3, zmm4", 6 },                                      -- shuffle
    { "vcvtneps2bf16 ymm5, zmm1", 7 },                                        -- convert
    { "lea rax, [rdi + 8]", 8 },                                              -- gpr (no memory access)
    { "prefetcht0 [rdi + 4096]", 8 },                                         -- prefetch
    { "kmovw k1, eax", 9 },                                                   -- mask
    { "vpslld zmm6, zmm0, 16", 9 }, { "vpsrld zmm6, zmm6, 16", 9 },           -- shift 2
    { "vpmovzxwd zmm7, ymm0", 9 },                                            -- widen
    { "vpternlogd zmm1, zmm2, zmm3, 0xca", 9 },                               -- logic
    { "vpblendmd zmm1{k1}, zmm2, zmm3", 9 }, { "vmovaps zmm1{k1}, zmm2", 9 }, -- select 2
    { "vpcmpd k2, zmm1, zmm2, 1", 9 },                                        -- compare
    { "vpbroadcastd zmm8, dword ptr [rip + k]", 9 },                          -- load + broadcast
    { "vpaddd zmm9, zmm1, dword ptr [rip + k]{1to16}", 9 },                   -- load + int
    { "vmulps zmm9, zmm9, zmm1", 9 },                                         -- fp
    { "vmovaps zmm1, zmm2", 9 },                                              -- vmove
    { "jle .Lx", 10 },                                                        -- branch
  })
  local n = M.count(x, "x86_64")
  expect("x86 total", n.total, 22)
  expect("x86 load", n.load, 4); expect("x86 store", n.store, 1); expect("x86 fma", n.fma, 1)
  expect("x86 shuffle", n.shuffle, 1); expect("x86 convert", n.convert, 1); expect("x86 branch", n.branch, 1)
  expect("x86 scalar", n.scalar, 3); expect("x86 prefetch", n.prefetch, 1); expect("x86 mask", n.mask, 1)
  expect("x86 shift", n.shift, 2); expect("x86 widen", n.widen, 1); expect("x86 logic", n.logic, 1)
  expect("x86 select", n.select, 2); expect("x86 compare", n.compare, 1); expect("x86 broadcast", n.broadcast, 1)
  expect("x86 iarith", n.iarith, 1); expect("x86 fp", n.fp, 1); expect("x86 vmove", n.vmove, 1)
  local g, v, k = M.registers(x, "x86_64")
  expect("x86 gpr (rbx rdi rsi rdx rax)", g, 5); expect("x86 vec (0-9)", v, 10); expect("x86 mask (k1 k2)", k, 2)
  local saved, stack = M.frame(x, "x86_64")
  expect("x86 saved", saved, 1); expect("x86 stack", stack, 40)
  local a = I({
    { "stp d8, d9, [sp, #-16]!", 0 }, { "stp x19, x20, [sp, #-16]!", 0 },  -- 4 stores
    { "ldp q0, q1, [x1, #0]", 3 },                -- 2 loads
    { "ld1 {v2.4s}, [x2]", 3 },                   -- load
    { "ld1r {v3.4s}, [x3]", 3 },                  -- load + broadcast
    { "fmla v4.4s, v0.4s, v1.4s", 4 },            -- fma
    { "bfdot v5.4s, v0.8h, v1.8h", 4 },           -- fma
    { "str q4, [x3]", 5 },                        -- store
    { "uzp1 v6.8h, v4.8h, v5.8h", 6 },            -- shuffle
    { "mov v6.s[1], w2", 6 },                     -- shuffle (element)
    { "bfcvtn v7.4h, v4.4s", 7 },                 -- convert
    { "add x16, x1, x2, lsl #1", 8 },             -- gpr (x16 x1 x2)
    { "movi v28.4s, #0x7f, msl #8", 8 },          -- vmove
    { "mov v27.16b, v28.16b", 8 },                -- vmove
    { "shl v8.4s, v0.4s, #16", 8 }, { "ushr v9.4s, v0.4s, #16", 8 },  -- shift 2
    { "shll v10.4s, v0.4h, #16", 8 },             -- widen
    { "and v11.16b, v0.16b, v1.16b", 8 },         -- logic
    { "bif v11.16b, v0.16b, v1.16b", 8 },         -- select
    { "fcmeq v12.4s, v4.4s, v4.4s", 8 }, { "cmtst v12.4s, v4.4s, v1.4s", 8 },  -- compare 2
    { "dup v13.4s, w1", 8 },                      -- broadcast
    { "add v14.4s, v0.4s, v1.4s", 8 }, { "raddhn v14.4h, v0.4s, v1.4s", 8 },  -- int 2
    { "fmul v15.4s, v0.4s, v1.4s", 8 },           -- fp
    { "prfm pldl2keep, [x1, #256]", 8 },          -- prefetch
    { "b.le .Lx", 10 },                           -- branch
  })
  n = M.count(a, "aarch64")
  expect("a64 total", n.total, 27)
  expect("a64 load", n.load, 4); expect("a64 store", n.store, 5); expect("a64 fma", n.fma, 2)
  expect("a64 shuffle", n.shuffle, 2); expect("a64 convert", n.convert, 1); expect("a64 branch", n.branch, 1)
  expect("a64 scalar", n.scalar, 1); expect("a64 vmove", n.vmove, 2); expect("a64 shift", n.shift, 2)
  expect("a64 widen", n.widen, 1); expect("a64 logic", n.logic, 1); expect("a64 select", n.select, 1)
  expect("a64 compare", n.compare, 2); expect("a64 broadcast", n.broadcast, 2); expect("a64 iarith", n.iarith, 2)
  expect("a64 fp", n.fp, 1); expect("a64 prefetch", n.prefetch, 1)
  g, v = M.registers(a, "aarch64")
  expect("a64 gpr (x19 x20 x1 x2 x3 x16)", g, 6); expect("a64 vec (0-15, 27, 28)", v, 18)
  saved, stack = M.frame(a, "aarch64")
  expect("a64 saved", saved, 4); expect("a64 stack", stack, 32)
end

-- the bound on a synthetic model ---------------------------------------------------------------
local SYNTH = [[
Resources:
[0]   - N2UnitL2
[1.0] - N2UnitL01
[1.1] - N2UnitL01
[2]   - N2UnitV0
[3]   - N2UnitV1
]]
local SYNTH_MODEL = { prefixes = { "N2Unit" }, groups = { { name = "V", kinds = { "V0", "V1" } },
                                                       { name = "L", kinds = { "L01", "L2" } } } }
local X86 = [[
Resources:
[0]   - SKXPort0
[1]   - SKXPort1
[2]   - SKXPort5
]]
local X86_MODEL = { prefixes = { "SKXPort" }, groups = { { name = "p01", kinds = { "p0", "p1" } },
                                                     { name = "p015", kinds = { "p0", "p1", "p5" } } } }

local function loop(res, model, rows, uops, width)
  local sets = P.resource_sets(res, model, function(n) return Mo.short_name(model, n) end)
  local use = {}
  for _, p in ipairs(rows) do
    local u, err = P.decompose(p, sets)
    if not u then return nil, err end
    for k, c in pairs(u) do use[k] = (use[k] or 0) + c end
  end
  return P.bound(use, sets, uops, width)
end

local function check_synthetic()
  local res = P.resources(SYNTH)
  expect("synthetic units", #res.units, 5)
  local fmul, shl, ldr = { 0, 0, 0, 0.5, 0.5 }, { 0, 0, 0, 0, 1 }, { 0.33, 0.33, 0.33, 0, 0 }
  local b, lim = loop(res, SYNTH_MODEL, { fmul, fmul, shl, shl, shl, shl })
  expect("2 fmul + 4 shl: bound", b, 4); expect("2 fmul + 4 shl: limit", lim, "V1")
  b, lim = loop(res, SYNTH_MODEL, { fmul, fmul, fmul, fmul, fmul, fmul, shl, shl })
  expect("6 fmul + 2 shl: bound", b, 4); expect("6 fmul + 2 shl: limit", lim, "V")
  b, lim = loop(res, SYNTH_MODEL, { ldr, ldr, ldr, ldr, ldr, ldr, fmul })
  expect("6 ldr + fmul: bound", b, 2); expect("6 ldr + fmul: limit", lim, "L")
  b, lim = loop(res, SYNTH_MODEL, { fmul, fmul }, 50, 10)
  expect("dispatch: bound", b, 5); expect("dispatch: limit", lim, "dispatch")
  -- a row of V and V1: V 1 and V1 1, so two of them are bound by V1 (2) and V (4 / 2)
  b, lim = loop(res, SYNTH_MODEL, { { 0, 0, 0, 0.5, 1.5 }, { 0, 0, 0, 0.5, 1.5 } })
  expect("mixed rows: bound", b, 2); expect("mixed rows: limit", lim, "V1")
  b = loop(res, SYNTH_MODEL, { { 0, 0.5, 0, 0, 0 } })
  expect("half an L01 pair is refused", b, nil)
  -- whole cycles: 0.5 on p0 and p1 with 2 on p5 is p01 1 and p5 2 (two rows: p5 4)
  local xres = P.resources(X86)
  b, lim = loop(xres, X86_MODEL, { { 0.5, 0.5, 2 }, { 0.5, 0.5, 2 } })
  expect("whole cycles: bound", b, 4); expect("whole cycles: limit", lim, "p5")
end

-- the bound on llvm-mca-16's models ------------------------------------------------------------
local function eight(t)
  local l = {}
  for i = 0, 7 do l[#l + 1] = (t:gsub("N", tostring(i)):gsub("M", tostring(i + 8))) end
  return l
end
local function mix(a, na, b, nb)
  local l = {}
  for i = 0, na - 1 do l[#l + 1] = (a:gsub("N", tostring(i)):gsub("M", tostring(i + 16))) end
  for i = na, na + nb - 1 do l[#l + 1] = (b:gsub("N", tostring(i)):gsub("M", tostring(i + 16))) end
  return l
end
local function probe(what, isa, short, lines, bound, limit)
  local a, err = M.probe(isa, short, lines)
  if not a then failures[#failures + 1] = what .. ": " .. tostring(err); return end
  expect(what .. ": bound", a.bound, bound)
  expect(what .. ": limit", a.limit, limit)
  -- independent instructions: llvm-mca's simulation runs at the bound (within 5%)
  if not (a.cycles >= a.bound * 0.99 and a.cycles <= a.bound * 1.05) then
    failures[#failures + 1] = what .. ": llvm-mca " .. a.cycles .. " c/it is not at the bound " .. a.bound
  end
end

local function check_models()
  probe("N2 8 shl", "aarch64", "N2", eight("shl vN.4s, vM.4s, #1"), 8, "V1")
  probe("N2 8 shll", "aarch64", "N2", eight("shll vN.4s, vM.4h, #16"), 8, "V1")
  probe("N2 8 bfcvtn", "aarch64", "N2", eight("bfcvtn vN.4h, vM.4s"), 8, "V0")
  probe("N2 8 fmul", "aarch64", "N2", eight("fmul vN.4s, vM.4s, vM.4s"), 4, "V")
  -- a restricted pipe raises the bound: 6 shifts and 2 adds take 6, 6 adds and 2 adds 4
  probe("N2 6 shl + 2 add", "aarch64", "N2", mix("shl vN.4s, vM.4s, #1", 6, "add vN.4s, vM.4s, vM.4s", 2), 6, "V1")
  probe("N2 6 orr + 2 add", "aarch64", "N2", mix("orr vN.16b, vM.16b, vM.16b", 6, "add vN.4s, vM.4s, vM.4s", 2),
    4, "V")
  probe("A14 8 fmla", "aarch64", "A14", eight("fmla vN.4s, vM.4s, vM.4s"), 4, "VM")
  probe("A14 8 add", "aarch64", "A14", eight("add vN.4s, vM.4s, vM.4s"), 8 / 3, "V")
  probe("SKX 8 vpslld", "x86_64", "SKX", eight("vpslld zmmN, zmmM, 16"), 8, "p0")
  probe("SKX 8 vpaddd", "x86_64", "SKX", eight("vpaddd zmmN, zmmM, zmmM"), 8 / 3, "p015")
  local a = M.probe("aarch64", "A14", eight("fmla vN.4s, vM.4s, vM.4s"))
  expect("A14 8 fmla: floor", a and a.floor, 4)
end

-- every marked loop of real stamps: llvm-mca's cycles never below the bound, floor <= bound
local function check_stamps()
  for _, sym in ipairs({ "fk_shortconv_bf16__aarch64_neon_exact", "fk_shortconv_bf16__x86_64_avx512_exact",
                         "fk_attn_decode32__aarch64_neon_exact" }) do
    local st = M.stamp(root, sym)
    if not st then failures[#failures + 1] = "no stamp " .. sym
    else
      for i, per in ipairs(st.mca) do
        for _, name in ipairs(require("compat").sorted_keys(per)) do
          local a = per[name]
          if a.cycles < a.bound * 0.99 then
            failures[#failures + 1] = sym .. " " .. name .. " model " .. i .. ": c/it " .. a.cycles .. " < bound " .. a.bound
          end
          if a.floor > a.bound + 1e-9 then failures[#failures + 1] = sym .. " " .. name .. ": floor above bound" end
        end
      end
    end
  end
end

local function run(stamps)
  failures = {}
  check_classes()
  check_synthetic()
  check_models()
  if stamps then check_stamps() end
  return failures
end

local got = run(true)
for _, f in ipairs(got) do print("FAIL " .. f) end
if #got > 0 then os.exit(1) end
print("unit: classes, registers, frame, bounds (synthetic, llvm-mca models, real stamps) ok")

-- perturbations: each must make some check fail
local perturbations = {
  { "a shift classed as logic", function()
      local classify = K.classify
      K.classify = function(t, isa)
        local c = classify(t, isa)
        if c.op == "shift" then c.op = "logic" end
        return c
      end
      return function() K.classify = classify end
    end },
  { "N2's V group missing", function()
      local n2 = M.MODELS.aarch64[2]
      local groups = n2.groups
      local kept = {}
      for _, g in ipairs(groups) do if g.name ~= "V" then kept[#kept + 1] = g end end
      n2.groups = kept
      return function() n2.groups = groups end
    end },
  { "a restricted pipe's cycles credited to the largest resource around it", function()
      local bound = P.bound
      P.bound = function(use, sets, uops, width)
        local moved = {}
        for _, s in ipairs(sets) do
          local x = use[s.key]
          if x then
            local to = s
            for _, g in ipairs(sets) do -- largest first
              local inside = true
              for _, u in ipairs(s.units) do
                local found = false
                for _, v in ipairs(g.units) do if v == u then found = true end end
                if not found then inside = false end
              end
              if inside then to = g; break end
            end
            moved[to.key] = (moved[to.key] or 0) + x
          end
        end
        return bound(moved, sets, uops, width)
      end
      return function() P.bound = bound end
    end },
  { "A14's VM ignored", function()
      local decompose = P.decompose
      P.decompose = function(p, sets)
        local u, err = decompose(p, sets)
        if u then
          for _, s in ipairs(sets) do if s.name == "VM" then u[s.key] = nil end end
        end
        return u, err
      end
      return function() P.decompose = decompose end
    end },
  { "rows cut without the whole-cycle rule", function()
      local decompose = P.decompose
      P.decompose = function(p, sets)
        local r, use = {}, {}
        for i, x in ipairs(p) do r[i] = x end
        for _, s in ipairs(sets) do
          local level = math.huge
          for _, u in ipairs(s.units) do level = math.min(level, r[u]) end
          if level > 0.015 then
            use[s.key] = (use[s.key] or 0) + level * s.n
            for _, u in ipairs(s.units) do r[u] = r[u] - level end
          end
        end
        return use
      end
      return function() P.decompose = decompose end
    end },
}
local missed = 0
for _, p in ipairs(perturbations) do
  local restore = p[2]()
  local f = run(false)
  restore()
  if #f == 0 then print("FAIL perturbation not caught: " .. p[1]); missed = missed + 1
  else print("perturbation caught: " .. p[1] .. " (" .. #f .. " checks fail, first: " .. f[1] .. ")") end
end
M.cleanup()
if missed > 0 then os.exit(1) end
LUA

stamp=fk_shortconv_bf16__x86_64_avx512_exact
want=$(awk '/LLVM-MCA-BEGIN loop14/{on=1; next} /LLVM-MCA-END loop14/{on=0} on && /\/\/ \[[0-9]+\]$/{n++} END{print n}' \
  "$src/generated/x86_64/$stamp.S")
for lua in lua5.4 luajit; do
  command -v "$lua" >/dev/null || { bad "$lua not installed"; continue; }
  (cd "$src" && "$lua" "$tmp/unit.lua" "$src") || bad "$lua: unit checks"
  out=$(cd "$src" && "$lua" tools/census.lua --root "$src" --stamp "$stamp") || bad "$lua: --stamp $stamp"
  echo "$out" | head -4
  echo "$out" | grep -Eq "^  loop14 +ins +$want " || bad "$lua: loop14 should count $want instructions: $out"
  echo "$out" | grep -Eq "SKX +[0-9]+\.[0-9]{2} c/it, bound [0-9]+\.[0-9]{2} \(p[0-9]+\)" || bad "$lua: no SKX figures"
  echo "$out" | grep -Eq "ICX +[0-9]+\.[0-9]{2} c/it, bound [0-9]+\.[0-9]{2} \(p[0-9]+\)" || bad "$lua: no ICX figures"
  (cd "$src" && "$lua" tools/census.lua --root "$src" --only "^fk_shortconv_bf16__" --out "$tmp/c.md") >/dev/null ||
    bad "$lua: partial census"
  (cd "$src" && "$lua" tools/census.lua --root "$src" --only "^fk_shortconv_bf16__" --out "$tmp/c.md" --check) \
    >/dev/null || bad "$lua: --check on a fresh census"
  grep -q "| loop14 | $want |" "$tmp/c.md" || bad "$lua: the summary lacks loop14's $want instructions"
  sed -i "s/| loop14 | $want |/| loop14 | $((want + 1)) |/" "$tmp/c.md"   # the loop's instruction count, whatever it is
  if (cd "$src" && "$lua" tools/census.lua --root "$src" --only "^fk_shortconv_bf16__" --out "$tmp/c.md" --check) \
    2>"$tmp/err" >/dev/null; then bad "$lua: --check passed on an altered census"
  else grep -q "c.md is stale" "$tmp/err" || bad "$lua: the stale message does not name the file: $(cat "$tmp/err")"; fi
  if (cd "$src" && "$lua" tools/census.lua --root "$src" --stamp fk_nope) 2>"$tmp/err" >/dev/null; then
    bad "$lua: an unknown stamp was accepted"
  else grep -q "fk_nope" "$tmp/err" || bad "$lua: the error does not name the stamp"; fi
done
[ $fail = 0 ] && echo "census tool: ok (lua5.4, luajit)"
exit $fail
