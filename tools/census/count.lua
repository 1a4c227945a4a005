-- tools/census/count.lua: what the census reads from a stamp's own text: its tagged instructions
-- and marked regions, the instructions by class (load, store, FMA, shuffle, convert, branch,
-- other), the registers used, the frame (callee-saved registers saved, stack bytes), the main
-- loop and a loop's ideal bound on a model. No external tool runs here.

local K = {}

-- Instruction lines: "    <text>   // [id]". Returns { {text, op}, ... }, the marked regions
-- { {name, first, last} } (instruction index ranges) and the banner fields.
function K.parse(text)
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
K.count = count

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

function K.registers(ins, isa)
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
function K.frame(ins, isa)
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

-- The ideal bound of a loop on a model: max(loads / L, stores / S, FMAs / F) cycles per iteration.
local function bound(n, model)
  return math.max(n.load / model.L, n.store / model.S, n.fma / model.F)
end
K.bound = bound

-- The main loop: the marked region with the most FMAs, then the most instructions.
local function main_region(ins, isa, regions)
  local best, bn
  for _, r in ipairs(regions) do
    local n = count(ins, isa, r.first, r.last)
    if not best or n.fma > bn.fma or (n.fma == bn.fma and n.total > bn.total) then best, bn = r, n end
  end
  return best, bn
end
K.main_region = main_region

return K
