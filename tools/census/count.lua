-- tools/census/count.lua: what the census reads from a stamp's own text: its tagged instructions
-- and marked regions, each instruction's class (memory access and operation), the counts by class,
-- the registers used, the frame (callee-saved registers saved, stack bytes) and the main loop.
-- No external tool runs here.

local K = {}

-- Instruction lines: "    <text>   // [id]". Returns { {text, op}, ... } and the marked regions
-- { {name, first, last} } (instruction index ranges).
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
--
-- Every instruction has at most one memory access (load or store; LDP/STP count as two) and one
-- operation class, in the order of OPS; a load-op instruction (x86) is a load and its operation,
-- a plain load or store has no operation class. The vector classes name the work the vector
-- pipes do besides the FMAs; `scalar` is general-purpose register work (addresses, counters).

K.OPS = { "fma", "fp", "widen", "shift", "logic", "select", "compare", "convert", "shuffle", "broadcast",
          "iarith", "vmove", "mask", "scalar", "branch", "prefetch" }

-- Column titles of the classes (CENSUS.md).
K.OP_TITLE = { fma = "fma", fp = "fp", widen = "widen", shift = "shift", logic = "logic", select = "sel",
               compare = "cmp", convert = "cvt", shuffle = "shuf", broadcast = "bcast", iarith = "int",
               vmove = "vmov", mask = "k", scalar = "gpr", branch = "br", prefetch = "prf" }

local function any(m, patterns)
  for _, p in ipairs(patterns) do
    if m:match(p) then return true end
  end
  return false
end

local X86_OPS = {
  { "fma", { "^vfn?m[as]", "^vfmaddsub", "^vfmsubadd", "^vdpbf16ps$", "^vpdpw", "^vpdpb" } },
  { "widen", { "^vpmov[sz]x" } },
  { "shift", { "^vps[lr][la]", "^vpro[lr]", "^vpsh[lr]d" } },
  { "logic", { "^vpandn?", "^vpx?or", "^vpternlog", "^vandn?p", "^vx?orp" } },
  { "select", { "^vblend", "^vpblend" } },
  { "compare", { "^vcmp", "^vpcmp", "^vptestn?m", "^vfpclass" } },
  { "convert", { "^vcvt", "^vpmovu?s?[dqw][bwd]$", "^vround", "^vrndscale", "^vpack", "^cvt" } },
  { "shuffle", { "^vperm", "^vshuf", "^vpshuf", "^vp?unpck", "^valign", "^vinsert", "^vextract", "^vmovs[lh]dup$",
                 "^vmovddup$", "^vmovhlps$", "^vmovlhps$", "^vpalignr$", "^vpinsr", "^vpextr", "^vcompress",
                 "^vexpand", "^vpermt2", "^vpermi2" } },
  { "broadcast", { "^vbroadcast", "^vpbroadcast" } },
  { "iarith", { "^vpadd", "^vpsub", "^vpmin", "^vpmax", "^vpabs", "^vpavg", "^vpmul", "^vpsign", "^vpmadd" } },
  { "fp", { "^vadd[ps][sd]$", "^vsub[ps][sd]$", "^vmul[ps][sd]$", "^vdiv[ps][sd]$", "^vsqrt", "^vmax", "^vmin",
            "^vrcp", "^vrsqrt", "^vhadd", "^vhsub", "^vaddsub", "^vscalef", "^vgetexp", "^vgetmant" } },
  { "vmove", { "^vmov", "^vzero" } },
  { "mask", { "^k" } },
}

local function x86_class(t)
  local m = mnemonic(t)
  local ops = t:sub(#m + 1)
  local first = ops:match("^%s*([^,]*)") or ""
  local mem = ops:find("%[") ~= nil and m ~= "lea" and not m:match("^nop")
  local c = {}
  if m:match("^j") or m == "ret" or m == "call" then c.op = "branch"; mem = false
  elseif m:match("^prefetch") then c.op = "prefetch"; mem = false
  else
    for _, e in ipairs(X86_OPS) do
      if any(m, e[2]) then c.op = e[1]; break end
    end
    if not c.op and m:match("^v") then c.op = "vmove" end -- any other vector instruction: a move
    c.op = c.op or "scalar"
    -- a merge-masked register move is a select
    if c.op == "vmove" and ops:find("{k") and not mem then c.op = "select" end
  end
  if mem then
    if first:find("%[") then c.store = true else c.load = true end
    -- plain loads and stores, and moves that touch memory, have no operation of their own
    if c.op == "vmove" or (c.op == "scalar" and (m == "mov" or m:match("^movzx") or m:match("^movsx"))) then
      c.op = nil
    end
  end
  return c
end

-- AArch64: the vector (or FP) register file is in the operands.
local function a64_vector(t)
  local ops = t:sub(#mnemonic(t) + 1)
  return ops:find("%f[%w]v%d+%.") ~= nil or ops:find("%f[%w][qdshb]%d+%f[^%w]") ~= nil
end

local A64_VEC_OPS = { -- only when a vector/FP register is an operand
  { "fma", { "^fmla$", "^fmls$", "^fn?madd$", "^fn?msub$", "^bfdot$", "^bfmlal[bt]$", "^bfmmla$", "^fmlal",
             "^fmlsl" } },
  { "widen", { "^shll2?$", "^[su]shll2?$", "^[su]xtl2?$" } },
  { "shift", { "^shl$", "^[su]shr$", "^[su]?r?shrn2?$", "^s[lr]i$", "^[su]r?shl$", "^[su]r?sra$",
               "^[su]q?r?shrun?n2?$", "^[su]qshlu?$" } },
  { "logic", { "^and$", "^orr$", "^orn$", "^eor$", "^bic$", "^not$", "^mvn$" } },
  { "select", { "^bif$", "^bit$", "^bsl$", "^fcsel$" } },
  { "compare", { "^fcm", "^cm", "^fac", "^fcmpe?$", "^fccmpe?$" } },
  { "convert", { "^fcvt", "^bfcvt", "^[su]cvtf$", "^frint", "^xtn2?$", "^[su]qxtu?n2?$" } },
  { "shuffle", { "^zip[12]$", "^uzp[12]$", "^trn[12]$", "^ext$", "^tbl$", "^tbx$", "^rev%d+$", "^ins$", "^[su]mov$" } },
  { "broadcast", { "^dup$" } },
  { "iarith", { "^add$", "^sub$", "^addp$", "^r?addhn2?$", "^r?subhn2?$", "^[su]m[ai][xn]p?$", "^neg$", "^abs$",
                "^[su]add[lw]2?$", "^[su]sub[lw]2?$", "^mul$", "^ml[as]$", "^[su]q?add$", "^[su]q?sub$",
                "^[su]r?hadd$", "^[su]abd", "^cnt$", "^[su]addlv$", "^addv$" } },
  { "fp", { "^fadd", "^fsub$", "^fmul", "^fdiv$", "^fsqrt$", "^fmax", "^fmin", "^fabs$", "^fneg$", "^frecp",
            "^frsqrt", "^fabd$" } },
  { "vmove", { "^movi$", "^mvni$", "^fmov$", "^mov$" } },
}

local function a64_class(t)
  local m = mnemonic(t)
  local c = {}
  if m == "b" or m:match("^b%.") or m == "bl" or m == "blr" or m == "cbz" or m == "cbnz" or m == "tbz"
    or m == "tbnz" or m == "ret" or m == "br" then c.op = "branch"
  elseif m == "prfm" or m == "prfum" then c.op = "prefetch"
  elseif m:match("^ld") then
    c.load = true
    if m == "ldp" or m == "ldnp" then c.pair = true end
    if m:match("^ld%dr$") then c.op = "broadcast"
    elseif m:match("^ld[234]$") then c.op = "shuffle" end
  elseif m:match("^st") then
    c.store = true
    if m == "stp" or m == "stnp" then c.pair = true end
    if m:match("^st[234]$") then c.op = "shuffle" end
  elseif a64_vector(t) then
    if m == "mov" and t:match("%.[bhsd]%[") then c.op = "shuffle" -- element move (ins / umov)
    else
      for _, e in ipairs(A64_VEC_OPS) do
        if any(m, e[2]) then c.op = e[1]; break end
      end
      c.op = c.op or "vmove"
    end
  else c.op = "scalar" end
  return c
end

function K.classify(text, isa)
  if isa == "x86_64" then return x86_class(text) end
  return a64_class(text)
end

-- Counts of one instruction list (or a range of it): total, load, store, and one per class of OPS.
local function count(ins, isa, first, last)
  local n = { total = 0, load = 0, store = 0 }
  for _, k in ipairs(K.OPS) do n[k] = 0 end
  for i = first or 1, last or #ins do
    local c = K.classify(ins[i].text, isa)
    n.total = n.total + 1
    local w = c.pair and 2 or 1
    if c.load then n.load = n.load + w end
    if c.store then n.store = n.store + w end
    if c.op then n[c.op] = n[c.op] + 1 end
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
