-- tools/census.lua: the stamp census, generated/CENSUS.md (`make census`; CI fails when stale).
--
-- For every stamp in generated/MANIFEST:
--   * instructions by class (load, store, FMA, shuffle, convert, branch, other), counted from the
--     stamp's own tagged instruction lines (a load-op instruction counts as a load and as its op);
--   * code bytes (the function's ELF symbol size) and constant bytes (its read-only section),
--     from the stamp assembled with its manifest flags;
--   * registers used (GPR, vector, mask), callee-saved registers saved and stack bytes, from the
--     instructions and the frame op [0];
--   * the ISA extensions it requires: each extension of its variant is removed in turn from the
--     assembler's -march and the stamp assembled again; the ones whose removal fails are listed;
--   * llvm-mca's predicted cycles per iteration of each region the generator marked
--     (LLVM-MCA-BEGIN/END: the innermost full-tile loops), on two models per ISA, next to the ideal
--     bound of that loop: max(loads / L, stores / S, FMAs / F) with the model's per-cycle widths.
-- One table row per stamp, with its main loop (the marked region with the most FMAs, then the
-- most instructions); `--stamp SYMBOL` prints every region of one stamp.
--
-- Usage: lua5.4 tools/census.lua --root DIR [--out FILE] [--check] [--only LUAPATTERN] [--stamp SYMBOL]
--   --check: exit 1 (and say so) when FILE differs from what would be written.
--   --only: only the stamps whose symbol matches (a partial census, for tests).
-- Needs gcc, aarch64-linux-gnu-gcc, binutils for both, and llvm-mca-16 (LLVM_MCA overrides).

-- compat.lua from the generator's folder (one copy, not two)
local SELF = ((debug.getinfo(1, "S") or {}).source or ""):match("^@(.*)$") or "tools/census.lua"
package.path = (SELF:match("^(.*)/[^/]*$") or ".") .. "/../gen/?.lua;" .. package.path
local C = require("compat")

local M = {}

local MCA = os.getenv("LLVM_MCA") or "llvm-mca-16"

-- The models, and the per-cycle widths of their ideal bound (loads, stores, FMAs per cycle, in
-- the stamps' vector width), from the vendors' optimization guides.
M.MODELS = {
  x86_64 = {
    { cpu = "skylake-avx512", short = "SKX", L = 2, S = 1, F = 2 },
    { cpu = "icelake-server", short = "ICX", L = 2, S = 1, F = 2 },
  },
  aarch64 = {
    { cpu = "apple-a14", short = "A14", L = 3, S = 2, F = 4, attr_bf16 = true },
    { cpu = "neoverse-n2", short = "N2", L = 3, S = 2, F = 2 },
  },
}

-- Extensions a variant may require, as the assembler names them.
local X86_EXT = { "avx2", "fma", "avx512f", "avx512bw", "avx512vl", "avx512_bf16" }
local A64_EXT = { "simd", "bf16" }

---------------------------------------------------------------------------------------------
-- Shell helpers

local sh_quote, run = C.sh_quote, C.run -- compat.lua: both interpreters

local function die(msg)
  io.stderr:write("census: " .. msg .. "\n")
  os.exit(2)
end

---------------------------------------------------------------------------------------------
-- Parsing a stamp

-- Instruction lines: "    <text>   // [id]". Returns { {text, op}, ... }, the marked regions
-- { {name, first, last} } (instruction index ranges) and the banner fields.
function M.parse(text)
  local ins, regions, open = {}, {}, nil
  for line in text:gmatch("[^\n]*") do
    local name = line:match("^%s*// LLVM%-MCA%-BEGIN (%S+)")
    if name then
      open = { name = name, first = #ins + 1 }
    elseif line:match("^%s*// LLVM%-MCA%-END") then
      if open then
        open.last = #ins
        regions[#regions + 1] = open
        open = nil
      end
    else
      local body, id = line:match("^%s+(%S.-)%s*// %[(%d+)%]%s*$")
      if body then ins[#ins + 1] = { text = body, op = tonumber(id) } end
    end
  end
  return ins, regions
end

local function mnemonic(t) return (t:match("^([%w%.]+)") or ""):lower() end

-- Instruction classes -------------------------------------------------------------------------

local function x86_class(t)
  local m = mnemonic(t)
  local ops = t:sub(#m + 1)
  local first = ops:match("^%s*([^,]*)") or ""
  local mem = ops:find("%[") ~= nil and m ~= "lea"
  local dst_mem = first:find("%[") ~= nil
  local c = {}
  if m:match("^j") or m == "ret" then c.branch = true
  elseif m:match("^v?fn?m[as][du][db]") or m:match("^vfmadd") or m:match("^vfnmadd") or m:match("^vfmsub")
    or m == "vdpbf16ps" then c.fma = true
  elseif m:match("^vcvt") or m:match("^vpmov[sz]x") or m:match("^vpmovu?s?[dq][wb]$") or m:match("^vpmov[dq]w")
    or m:match("^vpmovdb") or m:match("^vpmovqd") or m:match("^cvt") then c.convert = true
  elseif m:match("^vperm") or m:match("^vshuf") or m:match("^vpshuf") or m:match("^v?p?unpck") or m:match("^valign")
    or m:match("^vinsert") or m:match("^vextract") or m:match("^vbroadcast") or m:match("^vpbroadcast")
    or m:match("^vpack") or m:match("^vmovs[lh]dup") or m:match("^vmovddup") or m:match("^vpalignr")
    or m:match("^vcompress") or m:match("^vexpand") then c.shuffle = true
  end
  if m:match("^prefetch") then c.prefetch = true; mem = false end
  if mem and dst_mem and not c.branch then c.store = true
  elseif mem then c.load = true end
  return c
end

local function a64_class(t)
  local m = mnemonic(t)
  local c = {}
  if m == "b" or m:match("^b%.") or m == "cbz" or m == "cbnz" or m == "tbz" or m == "tbnz" or m == "ret"
    or m == "br" then c.branch = true
  elseif m:match("^ld") then c.load = true
    if m == "ldp" or m == "ldnp" then c.pair = true end
  elseif m:match("^st") then c.store = true
    if m == "stp" or m == "stnp" then c.pair = true end
  elseif m == "prfm" then c.prefetch = true
  elseif m == "fmla" or m == "fmls" or m == "fmadd" or m == "fmsub" or m == "fnmadd" or m == "fnmsub"
    or m == "bfdot" or m:match("^bfmlal") or m == "bfmmla" then c.fma = true
  elseif m:match("^fcvt") or m:match("^bfcvt") or m == "scvtf" or m == "ucvtf" or m:match("^[su]xtl")
    or m:match("^xtn") or m:match("^shll") or m:match("^[su]qxtn") or m:match("^frint") then c.convert = true
  elseif m:match("^zip") or m:match("^uzp") or m:match("^trn") or m == "ext" or m == "tbl" or m == "tbx"
    or m == "dup" or m == "ins" or m:match("^rev") or m:match("^ld%dr") then c.shuffle = true
  elseif m == "mov" and t:match("%.[bhsd]%[") then c.shuffle = true -- element move
  end
  return c
end

local CLASSES = { "load", "store", "fma", "shuffle", "convert", "branch", "other" }

-- Counts of one instruction list (or a range of it).
local function count(ins, isa, first, last)
  local n = { total = 0 }
  for _, k in ipairs(CLASSES) do n[k] = 0 end
  local classify = isa == "x86_64" and x86_class or a64_class
  for i = first or 1, last or #ins do
    local c = classify(ins[i].text)
    n.total = n.total + 1
    local w = c.pair and 2 or 1
    if c.load then n.load = n.load + w end
    if c.store then n.store = n.store + w end
    if c.fma then n.fma = n.fma + 1 end
    if c.shuffle then n.shuffle = n.shuffle + 1 end
    if c.convert then n.convert = n.convert + 1 end
    if c.branch then n.branch = n.branch + 1 end
    if not (c.load or c.store or c.fma or c.shuffle or c.convert or c.branch) then n.other = n.other + 1 end
  end
  return n
end
M.count = count

-- Registers ------------------------------------------------------------------------------------

local X86_GPR = {
  rax = "rax", eax = "rax", ax = "rax", al = "rax", rbx = "rbx", ebx = "rbx", rcx = "rcx", ecx = "rcx", cl = "rcx",
  rdx = "rdx", edx = "rdx", rsi = "rsi", esi = "rsi", rdi = "rdi", edi = "rdi", rbp = "rbp", ebp = "rbp",
}
for i = 8, 15 do
  local r = "r" .. i
  X86_GPR[r], X86_GPR[r .. "d"], X86_GPR[r .. "w"], X86_GPR[r .. "b"] = r, r, r, r
end

local function strip_symbols(t)
  return (t:gsub("FK_%u+%b()", " "):gsub("#%S+", " "))
end

function M.registers(ins, isa)
  local gpr, vec, mask = {}, {}, {}
  for _, l in ipairs(ins) do
    local t = strip_symbols(l.text)
    t = t:sub(#mnemonic(t) + 1)
    if isa == "x86_64" then
      for w in t:gmatch("[%a%d]+") do
        local v = w:match("^[xyz]mm(%d+)$")
        if v then vec["v" .. v] = true end
        local k = w:match("^k([0-7])$")
        if k then mask["k" .. k] = true end
        if X86_GPR[w] then gpr[X86_GPR[w]] = true end
      end
    else
      for w in t:gmatch("[%a%d]+") do
        local x = w:match("^[xw](%d+)$")
        if x and tonumber(x) <= 30 then gpr["x" .. x] = true end
        local v = w:match("^[vqdsbh](%d+)$")
        if v and tonumber(v) <= 31 then vec["v" .. v] = true end
      end
    end
  end
  local function n(t) local c = 0; for _ in pairs(t) do c = c + 1 end; return c end
  return n(gpr), n(vec), n(mask)
end

-- The frame: callee-saved registers saved, stack bytes.
function M.frame(ins, isa)
  local saved, stack = 0, 0
  for _, l in ipairs(ins) do
    if l.op == 0 then
      local t = l.text
      if isa == "x86_64" then
        if t:match("^push ") then saved = saved + 1; stack = stack + 8 end
        local sub = t:match("^sub rsp, (%d+)")
        if sub then stack = stack + tonumber(sub) end
      else
        local dec = t:match("^stp %w+, %w+, %[sp, #%-(%d+)%]!")
        if dec then saved = saved + 2; stack = stack + tonumber(dec) end
        local r, d = t:match("^str (%w+), %[sp, #%-(%d+)%]!")
        if r then saved = saved + 1; stack = stack + tonumber(d) end
        local sub = t:match("^sub sp, sp, #(%d+)")
        if sub then stack = stack + tonumber(sub) end
      end
    end
  end
  return saved, stack
end

---------------------------------------------------------------------------------------------
-- Tools: assemble, extensions, llvm-mca

local TMP

local function tmpdir()
  if not TMP then
    local ok, out = run("mktemp -d")
    if not ok then die("mktemp -d failed: " .. out) end
    TMP = out:gsub("%s+$", "")
  end
  return TMP
end

local function tools(isa)
  if isa == "x86_64" then return "gcc", "nm", "size" end
  return "aarch64-linux-gnu-gcc", "aarch64-linux-gnu-nm", "aarch64-linux-gnu-size"
end

local function assemble(root, isa, src, flags, obj)
  local cc = tools(isa)
  return run(string.format("%s %s -c -I%s %s -o %s", cc, flags, sh_quote(root .. "/generated"), sh_quote(src),
    sh_quote(obj)))
end

local function code_bytes(isa, obj, symbol)
  local _, nm, size = tools(isa)
  local ok, out = run(nm .. " -S " .. sh_quote(obj))
  if not ok then die("nm failed on " .. obj .. ": " .. out) end
  local code
  for line in out:gmatch("[^\n]+") do
    local sz, name = line:match("^%x+ (%x+) %a (%S+)$")
    if name == symbol then code = tonumber(sz, 16) end
  end
  if not code then die("no sized symbol " .. symbol .. " in " .. obj) end
  local ok2, out2 = run(size .. " -A " .. sh_quote(obj))
  if not ok2 then die("size failed: " .. out2) end
  local ro = 0
  for line in out2:gmatch("[^\n]+") do
    local sz = line:match("^%.rodata%S*%s+(%d+)")
    if sz then ro = ro + tonumber(sz) end
  end
  return code, ro
end

-- The extensions whose removal from the variant's -march makes the stamp fail to assemble.
local function required_exts(root, isa, src, asflags, obj)
  local req = {}
  if isa == "x86_64" then
    local march = asflags:match("%-Wa,%-march=(%S+)")
    if not march then return "?" end
    for _, e in ipairs(X86_EXT) do
      if march:find("+" .. e, 1, true) then
        local ok = assemble(root, isa, src, "-Wa,-march=" .. march .. "+no" .. e, obj)
        if not ok then req[#req + 1] = e end
      end
    end
  else
    local march = asflags:match("%-march=(%S+)")
    if not march then return "?" end
    for _, e in ipairs(A64_EXT) do
      local ok = assemble(root, isa, src, "-march=" .. march .. "+no" .. e, obj)
      if not ok then req[#req + 1] = e end
    end
  end
  return #req > 0 and table.concat(req, " ") or "base"
end

-- llvm-mca over the stamp's marked regions: { [region] = cycles per iteration }.
local function mca(root, isa, src, model, uses_bf16)
  local dir = tmpdir()
  local text = assert(C.read_file(src))
  -- the markers are comments, which the preprocessor drops: carry them through as words
  text = text:gsub("\n%s*// LLVM%-MCA%-(%u+) (%S+)", "\nFKMCA_%1 %2")
  local s_in, s_out = dir .. "/mca.S", dir .. "/mca.s"
  local f = assert(io.open(s_in, "w"))
  f:write(text)
  f:close()
  local cc = tools(isa)
  local ok, out = run(string.format("%s -E -P -x assembler-with-cpp -I%s %s -o %s", cc,
    sh_quote(root .. "/generated"), sh_quote(s_in), sh_quote(s_out)))
  if not ok then die("preprocessing " .. src .. ": " .. out) end
  local pre = assert(C.read_file(s_out)):gsub("FKMCA_(%u+) (%S+)", "# LLVM-MCA-%1 %2")
  f = assert(io.open(s_out, "w"))
  f:write(pre)
  f:close()
  local attr = (uses_bf16 and model.attr_bf16) and " -mattr=+bf16" or ""
  local triple = isa == "x86_64" and "x86_64-linux-gnu" or "aarch64-linux-gnu"
  local ok2, res = run(string.format("%s -mtriple=%s -mcpu=%s%s -iterations=100 -all-views=false -summary-view %s",
    MCA, triple, model.cpu, attr, sh_quote(s_out)))
  if not ok2 then die("llvm-mca (" .. model.cpu .. ") on " .. src .. ": " .. res:sub(1, 400)) end
  local cycles, name = {}, nil
  for line in res:gmatch("[^\n]+") do
    local r = line:match("^%[%d+%] Code Region %- (%S+)")
    if r then name = r end
    local it = line:match("^Iterations:%s+(%d+)")
    if it then cycles.it = tonumber(it) end
    local tc = line:match("^Total Cycles:%s+(%d+)")
    if tc then cycles[name or "(whole)"] = tonumber(tc) / cycles.it end
  end
  cycles.it = nil
  return cycles
end

local function mca_version()
  local ok, out = run(MCA .. " --version")
  if not ok then die(MCA .. " not found (apt-get install llvm-16, or set LLVM_MCA): " .. out) end
  return out:match("LLVM version ([%d%.]+)") or "?"
end

---------------------------------------------------------------------------------------------
-- The census

local function fmt(x)
  if x == nil then return "-" end
  return string.format("%.2f", x)
end

local function bound(n, model)
  return math.max(n.load / model.L, n.store / model.S, n.fma / model.F)
end

local function main_region(ins, isa, regions)
  local best, bn
  for _, r in ipairs(regions) do
    local n = count(ins, isa, r.first, r.last)
    if not best or n.fma > bn.fma or (n.fma == bn.fma and n.total > bn.total) then best, bn = r, n end
  end
  return best, bn
end

local function manifest(root)
  local text = C.read_file(root .. "/generated/MANIFEST")
  if not text then die("cannot read " .. root .. "/generated/MANIFEST") end
  local rows = {}
  for line in text:gmatch("[^\n]+") do
    if not line:match("^#") then
      local symbol, file, tier, asflags = line:match("^(%S+) (%S+) (%S+) %S+ %S+ %S+ (.*)$")
      if symbol then
        rows[#rows + 1] = { symbol = symbol, file = file, tier = tier, asflags = asflags,
                            isa = file:match("^([^/]+)/") }
      end
    end
  end
  table.sort(rows, function(a, b) return a.symbol < b.symbol end)
  return rows
end

local function census_stamp(root, row)
  local src = root .. "/generated/" .. row.file
  local text = C.read_file(src)
  if not text then die("cannot read " .. src) end
  local ins, regions = M.parse(text)
  local obj = tmpdir() .. "/stamp.o"
  local ok, out = assemble(root, row.isa, src, row.asflags, obj)
  if not ok then die(row.symbol .. " does not assemble with " .. row.asflags .. ": " .. out) end
  local code, ro = code_bytes(row.isa, obj, row.symbol)
  local exts = required_exts(root, row.isa, src, row.asflags, tmpdir() .. "/trial.o")
  local g, v, k = M.registers(ins, row.isa)
  local saved, stack = M.frame(ins, row.isa)
  local st = { row = row, n = count(ins, row.isa), code = code, ro = ro, exts = exts, gpr = g, vec = v, mask = k,
               saved = saved, stack = stack, regions = regions, ins = ins, mca = {} }
  local uses_bf16 = exts:find("bf16") ~= nil
  for i, model in ipairs(M.MODELS[row.isa]) do st.mca[i] = mca(root, row.isa, src, model, uses_bf16) end
  st.main, st.main_n = main_region(ins, row.isa, regions)
  return st
end

local function render(stamps, version)
  local out = {}
  local function w(s) out[#out + 1] = s end
  w("# Stamp census")
  w("")
  -- the committed CENSUS.md names the tool's old path; a new path here rewrites generated/CENSUS.md
  w("Generated by `make census` (`gen/census.lua`) from `generated/`: do not edit; CI fails when it is stale.")
  w("Per stamp: instructions by class (a load-op instruction counts as a load and as its op; an LDP/STP as two")
  w("loads/stores), code and constant bytes (ELF, assembled with the manifest's flags), registers used,")
  w("callee-saved registers saved and stack bytes (frame op [0]), and the extensions the assembler requires")
  w("(each of the variant's extensions removed from `-march` in turn: the ones whose removal fails).")
  w("")
  w("`loops`: regions the generator marked (innermost full-tile loops). The main loop is the marked loop with")
  w("the most FMAs (then instructions); `c/it` is llvm-mca " .. version .. "'s predicted cycles per iteration")
  w("(100 iterations), `ideal` the loop's bound max(loads/L, stores/S, FMAs/F) for that model. Models and widths")
  w("(L, S, F per cycle):")
  for _, isa in ipairs({ "x86_64", "aarch64" }) do
    for _, m in ipairs(M.MODELS[isa]) do
      w(string.format("- %s: `-mcpu=%s`, L %d, S %d, F %d%s", m.short, m.cpu, m.L, m.S, m.F,
        m.attr_bf16 and " (no BF16 in the core: bf16 stamps run with `-mattr=+bf16` and the model's default "
        .. "timing for BFDOT)" or ""))
    end
  end
  w("")
  w("Stamps without a marked loop (straight-line code: the iFFT and the frame's passes) show the whole")
  w("function's cycles per call under `c/it`.")
  for _, isa in ipairs({ "x86_64", "aarch64" }) do
    local ms = M.MODELS[isa]
    w("")
    w("## " .. isa)
    w("")
    local head = "| stamp | ins | ld | st | fma | shuf | cvt | br | other | code B | const B | gpr | vec"
      .. (isa == "x86_64" and " | k" or "") .. " | saved | stack B | requires | loops | main loop | ins"
    local sep = "|---" .. string.rep("|---:", 12) .. (isa == "x86_64" and "|---:" or "")
      .. "|---:|---:|---|---:|---|---:"
    for _, m in ipairs(ms) do
      head = head .. " | " .. m.short .. " c/it | ideal"
      sep = sep .. "|---:|---:"
    end
    w(head .. " |")
    w(sep .. "|")
    for _, st in ipairs(stamps) do
      if st.row.isa == isa then
        local n = st.n
        local cells = { "`" .. st.row.symbol .. "`", n.total, n.load, n.store, n.fma, n.shuffle, n.convert,
                        n.branch, n.other, st.code, st.ro, st.gpr, st.vec }
        if isa == "x86_64" then cells[#cells + 1] = st.mask end
        for _, x in ipairs({ st.saved, st.stack, st.exts, #st.regions }) do cells[#cells + 1] = x end
        if st.main then
          cells[#cells + 1] = st.main.name
          cells[#cells + 1] = st.main_n.total
          for i, m in ipairs(ms) do
            cells[#cells + 1] = fmt(st.mca[i][st.main.name])
            cells[#cells + 1] = fmt(bound(st.main_n, m))
          end
        else
          cells[#cells + 1] = "(whole)"
          cells[#cells + 1] = n.total
          for i in ipairs(ms) do
            cells[#cells + 1] = fmt(st.mca[i]["(whole)"])
            cells[#cells + 1] = "-"
          end
        end
        for i, c in ipairs(cells) do
          if type(c) == "number" then cells[i] = C.int(c) end
        end
        w("| " .. table.concat(cells, " | ") .. " |")
      end
    end
  end
  return table.concat(out, "\n") .. "\n"
end

local function regions_report(st)
  local ms = M.MODELS[st.row.isa]
  print(st.row.symbol .. ": " .. C.int(#st.regions) .. " marked loops")
  for _, r in ipairs(st.regions) do
    local n = count(st.ins, st.row.isa, r.first, r.last)
    local cells = {}
    for i, m in ipairs(ms) do
      cells[#cells + 1] = string.format("%s %s c/it (ideal %s)", m.short, fmt(st.mca[i][r.name]), fmt(bound(n, m)))
    end
    print(string.format("  %-10s ins %3d ld %2d st %2d fma %2d  %s", r.name, n.total, n.load, n.store, n.fma,
      table.concat(cells, ", ")))
  end
end

function M.main(argv)
  local root, out, check, only, pattern = ".", nil, false, nil, nil
  local i = 1
  while i <= #argv do
    local a = argv[i]
    if a == "--root" then root = argv[i + 1]; i = i + 1
    elseif a == "--out" then out = argv[i + 1]; i = i + 1
    elseif a == "--check" then check = true
    elseif a == "--stamp" then only = argv[i + 1]; i = i + 1
    elseif a == "--only" then pattern = argv[i + 1]; i = i + 1
    elseif a == "--help" then
      print("usage: census.lua --root DIR [--out FILE] [--check] [--only LUAPATTERN] [--stamp SYMBOL]")
      return 0
    else die("unknown argument '" .. tostring(a) .. "' (see --help)") end
    i = i + 1
  end
  if not root then die("--root needs a directory") end
  out = out or (root .. "/generated/CENSUS.md")
  local version = mca_version()
  local rows = manifest(root)
  local stamps = {}
  for _, row in ipairs(rows) do
    if (not only or row.symbol == only) and (not pattern or row.symbol:match(pattern)) then
      stamps[#stamps + 1] = census_stamp(root, row)
    end
  end
  if #stamps == 0 then die("no stamp in generated/MANIFEST matches " .. tostring(only or pattern)) end
  if TMP then run("rm -rf " .. sh_quote(TMP)) end
  if only then
    regions_report(stamps[1])
    return 0
  end
  local text = render(stamps, version)
  if check then
    local old = C.read_file(out)
    if old ~= text then
      io.stderr:write("census: " .. out .. " is stale: run `make census` (or lua5.4 tools/census.lua "
        .. "--root .) and commit it\n")
      return 1
    end
    print("census: " .. out .. " is fresh (" .. C.int(#stamps) .. " stamps)")
    return 0
  end
  local tmp = out .. ".tmp"
  local f = io.open(tmp, "w")
  if not f then die("cannot write " .. tmp) end
  f:write(text)
  f:close()
  local ok, err = os.rename(tmp, out)
  if not ok then die("cannot rename " .. tmp .. ": " .. tostring(err)) end
  print("census: wrote " .. out .. " (" .. C.int(#stamps) .. " stamps)")
  return 0
end

if arg and arg[0] and arg[0]:match("census%.lua$") then
  os.exit(M.main(arg))
end

return M
