-- gen/isa/aarch64.lua: the AArch64 backend (AAPCS64, GNU/LLVM syntax, ELF and Mach-O).
--
-- Variants: neon (ASIMD, Armv8.0-A), bfcvt (neon plus BFCVTN, exact), bf16 (the fast tier: neon
-- plus BFDOT) and dotprod (the quantized forms' fast tier: neon plus SDOT). A canonical
-- vector is four q registers (lanes 0-3, 4-7, 8-11, 12-15), a scalar lane 0 of one v register.
-- Hooks are named after IR ops (gen/ir.lua, ORDER OP) and are the same set as
-- gen/isa/x86_64.lua's.
--
-- Lowering conventions:
--   * a bf16 value lives in the high half of an f32 lane: ZIP1/ZIP2 or TRN1/TRN2 with a zero
--     register widen (SHLL #16 where the loop holds no zero register), UZP2 narrows, and a tail
--     load of one bf16 writes halfword 2l+1 of a zeroed register;
--   * the hot loops are written for the vector pipes of the cores the census models: no shift
--     where a permute or a logic op does the same (N2 issues SHL/SHLL/USHR/SHRN on one of its two
--     vector pipes only), constants held in registers per loop (gen/kregs.lua, M.constants),
--     pointers bumped per tile (gen/bump.lua) and immediate offsets, broadcasts in one register;
--   * NEON has no masked memory access, so tail lanes are loaded and stored one by one up to
--     the remainder: nothing past the end is touched;
--   * x16, x17 and v28-v31 are scratch, outside the allocator; d8-d15 are saved when used.

local C = require("compat")
local IR = require("ir")

local M = {
  isa = "aarch64",
  abi = "AAPCS64",
  comment = "//",
  bump_pointers = true,   -- gen/bump.lua: an address costs an instruction here
}

-- tuning: the schedule parameters templates read (gen/dsl.lua TUNING says what each means); a
-- canonical 16-lane vector takes four of NEON's 128-bit registers, so little stays live.
-- int8_dot: the integer dot product a variant has (dotprod: SDOT, signed bytes both); stream_hw:
-- unmeasured here (no AArch64 hardware), so every pass prefetches; lone_groups, exact_groups: one
-- group (two do not fit the registers); stream_ahead: unmeasured here, x86's Zen 4 value (18 KiB); q4_lut and
-- scales_once off: a 16-entry lookup takes eight instructions per q register here (TBL and its
-- byte indices), and a broadcast reload five (the slot's address, LD1R, three moves); stream_l1
-- off (x86's measure; none here); byte_shift: USHR .16b takes q4's high nibbles in one
-- instruction per q register where a 32-bit shift and a mask take two
local function tune(int8_dot)
  return { accumulators = 6, hold_operands = false, head_group = 1, int8_dot = int8_dot, stream_hw = 0,
           stream_ahead = 18432, lone_compact = true, lone_groups = 1, exact_groups = 1, q4_lut = false,
           scales_once = false, stream_l1 = false, byte_shift = true }
end
local TUNE = tune("none")
M.variants = {
  -- asflags: the narrowest assembler setting that must accept the stamp (tests/scan_stamps.sh)
  { name = "neon", tier = "exact", features = { "asimd" }, features_doc = "Armv8.0-A ASIMD",
    asflags = "-march=armv8-a", tuning = TUNE },
  -- the exact tier on FEAT_BF16: rounds with BFCVTN/BFCVTN2 (under the Linux default FPCR, which
  -- readiness checks, equal to the integer RNE: tests/rne_exhaustive.sh), NaNs made canonical after
  { name = "bfcvt", tier = "exact", features = { "asimd", "bf16" },
    features_doc = "ASIMD + FEAT_BF16 (BFCVTN rounding)", asflags = "-march=armv8.2-a+bf16", tuning = TUNE },
  { name = "bf16", tier = "fast", features = { "asimd", "bf16" }, features_doc = "ASIMD + FEAT_BF16 (BFDOT)",
    asflags = "-march=armv8.2-a+bf16", tuning = TUNE },
  -- the quantized forms' fast tier: SDOT (integer dot products, exact; Armv8.2-A DotProd: Neoverse
  -- N1, Cortex-A76, Apple M1 and later)
  { name = "dotprod", tier = "fast", features = { "asimd", "dotprod" },
    features_doc = "ASIMD + FEAT_DotProd (SDOT)", asflags = "-march=armv8.2-a+dotprod", tuning = tune("s8s8") },
}

local T0, T1, T2, T3 = "v28", "v29", "v30", "v31"

-- the ops that read a value bfcvt's vrne_st left narrowed (bfcvt_narrow)
local NARROW_READERS = { store_bf16 = true, bf16_pairs = true }

-- Constants the ops read, held in registers per loop where they fit (gen/kregs.lua, M.constants)
local K_B16, K_BIAS, K_NAN, K_ZERO = 0x00010000, 0x00007fff, 0x7fc00000, 0
-- the bfcvt variant's, per halfword: |h| mask, +inf, the canonical bf16 NaN
local K_ABS16, K_INF16, K_NAN16 = 0x7fff7fff, 0x7f807f80, 0x7fc07fc0

local function n(r) return r:match("%d+$") end
local function q(r) return "q" .. n(r) end
local function s(r) return "s" .. n(r) end
local function h(r) return "h" .. n(r) end
local function v4s(r) return "v" .. n(r) .. ".4s" end
local function v16b(r) return "v" .. n(r) .. ".16b" end

-- Ops whose result may take a dying operand's registers (regalloc.lua): FMLA accumulates into
-- its destination, so vfma may take only the addend's; binary ops are three-operand.
-- The RNE and the widenings read each source part before writing the result part.
local REUSE = { dot_s8s8 = { 1 }, dot_s8s7 = { 1 }, dot_u7s8 = { 1 }, vfma = { 3 }, vadd = { 1, 2 },
                vmul = { 1, 2 }, vsub = { 1, 2 },
                viadd = { 1, 2 },
                visub = { 1, 2 }, vimin = { 1, 2 }, vimax = { 1, 2 }, vand = { 1, 2 }, vor = { 1, 2 },
                vxor = { 1, 2 }, vishl = { 1 }, visra = { 1 }, vushr8 = { 1 }, vrint = { 1 }, vcvt_f2i = { 1 },
                vcvt_i2f = { 1 },
                vigt = { 1, 2 }, vcanon = { 1 }, vcanon_raw = { 1 }, vrne = { 1 }, vrne_st = { 1 }, srne = { 1 },
                bf16_even = { 1 }, bf16_odd = { 1 }, bf16_pairs = { 1, 2 }, vneg = { 1 } }
-- A class h select of two broadcasts (M.class_of) takes their two registers where both die there:
-- no move at all.
function M.reuse(op)
  if op.op == "vsel128" then return M.class_of(op.dst) == "h" and { join = { 1, 2 } } or nil end
  return REUSE[op.op]
end

function M.registers()
  local gpr, vec, saved = {}, {}, {}
  for i = 1, 15 do gpr[#gpr + 1] = "x" .. C.int(i) end
  gpr[#gpr + 1] = "x0"
  for i = 19, 28 do gpr[#gpr + 1] = "x" .. C.int(i); saved["x" .. C.int(i)] = true end
  for i = 0, 7 do vec[#vec + 1] = "v" .. C.int(i) end
  for i = 16, 27 do vec[#vec + 1] = "v" .. C.int(i) end
  for i = 8, 15 do vec[#vec + 1] = "v" .. C.int(i); saved["v" .. C.int(i)] = true end
  return { pools = { gpr = gpr, vec = vec }, callee_saved = saved, argp = "x0", reuse = M.reuse,
           scratch = { "x16", "x17", "v28-v31" }, class_of = M.class_of,
           classes = { i = { pool = "gpr", n = 1 }, v = { pool = "vec", n = 4 }, s = { pool = "vec", n = 1 },
                       c = { pool = "vec", n = 1 }, u = { pool = "vec", n = 1, expand = 4 },
                       h = { pool = "vec", n = 2, expand = { 1, 1, 2, 2 } },
                       e = { pool = "vec", n = 1, expand = 4 } } }
end

-- A broadcast (the same 32 bits in all 16 lanes) is one q register that stands for all four parts
-- of the canonical vector: no copies, three registers fewer. Accumulators (updated in place)
-- keep four. A vector whose lanes 0-7 are one value and 8-15 another (two broadcasts' 128-bit
-- select, a pair spread by pair_split, and the lane-wise arithmetic of such vectors and
-- broadcasts) is two q registers, parts 1-2 and 3-4 (class h): half the moves, DUPs and products.
local UNIFORM = { bcast = true, load_bcast_f32 = true, load_pair_bcast = true, load_bcast_f16 = true, vconst = true }
local HALVES_ARITH = { vmul = true, vadd = true, vsub = true }
function M.class_of(v)
  if v.type ~= "v" or v.var or not v.def then return v.type end
  local op = v.def.op
  if UNIFORM[op] then return "u" end
  if op == "load_f16x4q" and v.by_element then return "e" end
  if op == "vpair_split" then return "h" end
  if op == "vsel128" or HALVES_ARITH[op] then
    local a, b = M.class_of(v.def.src[1]), M.class_of(v.def.src[2])
    if op == "vsel128" then return (a == "u" and b == "u") and "h" or "v" end
    if (a == "u" or a == "h") and (b == "u" or b == "h") and (a == "h" or b == "h") then return "h" end
  end
  return "v"
end

-- Four scales, part p (lanes 4p .. 4p + 3) lane p's (load_f16x4q), are one q register read by
-- element (class e) where only vmul reads them (M.annotate): FMUL by element, no DUP.
local E_READERS = { vmul = true }
function M.annotate(proc)
  local seen, other = {}, {}
  IR.walk_proc(proc, function(op)
    for _, v in ipairs(op.src or {}) do
      if type(v) == "table" and v.def and v.def.op == "load_f16x4q" then
        seen[#seen + 1] = v
        if not E_READERS[op.op] then other[v] = true end
      end
    end
  end)
  for _, v in ipairs(seen) do v.by_element = not other[v] end
end

-- The distinct registers of a result's parts, each with its first part: a class h result's
-- parts 1 and 3 (its sources' parts 2 and 4 equal those, by their class), else every part.
local function distinct(d)
  local seen, out = {}, {}
  for p = 1, #d do
    if not seen[d[p]] then seen[d[p]] = true; out[#out + 1] = p end
  end
  return out
end

local function imm(x) return "#" .. C.int(x) end

-- Bumped pointers (gen/bump.lua) inside their loop's body: a pointer may move forward mid-body
-- (rebase) when an access lies beyond an instruction's immediate; ctx.disp[value] = { d = bytes
-- moved so far this iteration, depth = the nesting depth of the body that may move it }, and the
-- back edge adds the rest of the tile's bytes. Nested bodies (a dispatch's arms, inner loops,
-- the tail) read a pointer with its displacement but never move it: straight-line code only.
local add_imm
local function disp_of(ctx, v)
  local e = ctx.disp and ctx.disp[v]
  return e and e.d or 0
end

-- An access's base register and byte offset from its loop's pointer; `fits(o)` says whether the
-- instruction's immediate takes o. Returns (register, offset that fits). Moves the pointer
-- (rebase) when it may, else x16 = pointer + offset.
local function from_ptr(ctx, op, pos, o, fits)
  local v = op.src[pos]
  local r = ctx:reg(v)
  o = o - disp_of(ctx, v)
  if fits(o) then return r, o end
  local e = ctx.disp and ctx.disp[v]
  if e and e.depth == ctx.depth then
    add_imm(ctx, r, r, o)
    e.d = e.d + o
    return r, 0
  end
  add_imm(ctx, "x16", r, o)
  return "x16", 0
end

-- The address of element idx + off of an op's array, as (register, byte offset) for the access
-- [register, #offset]: x16 = base + idx * size, or the op's own pointer where a loop bumps it
-- (attr.at, gen/bump.lua: no instruction). The offset moves into the register (and 0 is returned)
-- when the instruction's immediate could not reach offset + 32 (LDP/STP of q registers:
-- -1024..1008, a multiple of 16), or with `scalar`, the offset itself (a single LDR/LDRSW/STR of
-- one element: unsigned, a multiple of size, up to 4095 elements), or with `qreg`, a single LDR/STR of a
-- q register (an unsigned multiple of 16 up to 65520) or LDUR/STUR (-256..255).
local SHIFT = { [1] = 0, [2] = 1, [4] = 2, [8] = 3 }
local function elem_addr(ctx, op, size, scalar, qreg)
  local function fits(o)
    if type(scalar) == "function" then return scalar(o) end
    if scalar then return o >= 0 and o <= 4095 * size and o % size == 0 end
    if qreg then return (o >= 0 and o <= 65520 and o % 16 == 0) or (o >= -256 and o <= 255) end
    return o >= -1024 and o + 32 <= 1008 and o % 16 == 0
  end
  local o = op.attr.off * size
  if op.attr.at then return from_ptr(ctx, op, 1, o, fits) end
  ctx:wline("add x16, " .. ctx:reg(op.src[1]) .. ", " .. ctx:reg(op.src[2]) .. ", lsl " .. imm(SHIFT[size]))
  if not fits(o) then
    add_imm(ctx, "x16", "x16", o)
    return "x16", 0
  end
  return "x16", o
end
local function q_addr(ctx, op, size) return elem_addr(ctx, op, size, false, true) end

add_imm = function(ctx, d, a, x)
  if x == 0 then
    if d ~= a then ctx:wline("mov " .. d .. ", " .. a) end
  elseif x > 0 and x < 4096 then
    ctx:wline("add " .. d .. ", " .. a .. ", " .. imm(x))
  elseif x < 0 and x > -4096 then
    ctx:wline("sub " .. d .. ", " .. a .. ", " .. imm(-x))
  else
    if x < -65535 or x > 65535 then error("internal: immediate out of range: " .. C.int(x)) end
    ctx:wline("mov x17, " .. imm(x))
    ctx:wline("add " .. d .. ", " .. a .. ", x17")
  end
end

local function const_addr(ctx, reg, sym)
  ctx:wline("adrp " .. reg .. ", FK_PAGE(FK_SYM(" .. sym .. "))")
  ctx:wline("add " .. reg .. ", " .. reg .. ", FK_PAGEOFF(FK_SYM(" .. sym .. "))")
end

-- A 32-bit pattern in every lane of q register `reg`: one MOVI/MVNI when an immediate form
-- encodes it, else MOVZ/MOVK into w16 and DUP.
local function const_lines(reg, bits)
  local v = "v" .. n(reg)
  local function fits(x)
    for sh = 0, 24, 8 do
      if x == C.shl(C.band(C.shr(x, sh), 0xff), sh) then return C.shr(x, sh), sh end
    end
    return nil
  end
  local function fits_msl(x)
    if C.band(x, 0xffff00ff) == 0x000000ff then return C.shr(x, 8), 8 end
    if C.band(x, 0xff00ffff) == 0x0000ffff then return C.shr(x, 16), 16 end
    return nil
  end
  if bits == 0 then return { "movi " .. v .. ".2d, #0" } end
  if bits == 0xffffffff then return { "movi " .. v .. ".2d, #0xffffffffffffffff" } end
  local b, sh = fits(bits)
  if b then return { string.format("movi %s.4s, #0x%02x, lsl #%d", v, b, sh) } end
  b, sh = fits(C.bnot(bits))
  if b then return { string.format("mvni %s.4s, #0x%02x, lsl #%d", v, b, sh) } end
  b, sh = fits_msl(bits)
  if b then return { string.format("movi %s.4s, #0x%02x, msl #%d", v, b, sh) } end
  b, sh = fits_msl(C.bnot(bits))
  if b then return { string.format("mvni %s.4s, #0x%02x, msl #%d", v, b, sh) } end
  local lo, hi = C.band(bits, 0xffff), C.shr(bits, 16)
  if lo == hi and (C.band(lo, 0xff00) == 0 or C.band(lo, 0xff) == 0) then
    local sh16 = C.band(lo, 0xff) == 0 and 8 or 0
    return { string.format("movi %s.8h, #0x%02x, lsl #%d", v, C.shr(lo, sh16), sh16) }
  end
  if lo == hi then          -- halfword patterns: MVNI of one byte, or MOVI + ORR of two
    local nlo = C.band(C.bnot(lo), 0xffff)
    if C.band(nlo, 0xff) == 0 then return { string.format("mvni %s.8h, #0x%02x, lsl #8", v, C.shr(nlo, 8)) } end
    if C.band(nlo, 0xff00) == 0 then return { string.format("mvni %s.8h, #0x%02x", v, nlo) } end
    return { string.format("movi %s.8h, #0x%02x, lsl #8", v, C.shr(lo, 8)),
             string.format("orr %s.8h, #0x%02x", v, C.band(lo, 0xff)) }
  end
  -- two nonzero bytes: MOVI of one, ORR of the other (0x7fc00000: the canonical NaN)
  local nz = {}
  for sh2 = 0, 24, 8 do
    local byte = C.band(C.shr(bits, sh2), 0xff)
    if byte ~= 0 then nz[#nz + 1] = { byte, sh2 } end
  end
  if #nz == 2 then
    return { string.format("movi %s.4s, #0x%02x, lsl #%d", v, nz[2][1], nz[2][2]),
             string.format("orr %s.4s, #0x%02x, lsl #%d", v, nz[1][1], nz[1][2]) }
  end
  local out = { string.format("movz w16, #0x%04x", lo) }
  if hi ~= 0 then out[#out + 1] = string.format("movk w16, #0x%04x, lsl #16", hi) end
  out[#out + 1] = "dup " .. v .. ".4s, w16"
  return out
end

local function materialize(ctx, reg, bits)
  for _, l in ipairs(const_lines(reg, bits)) do ctx:wline(l) end
end

-- The register holding constant `bits` for op: the loop's held one (gen/kregs.lua), else
-- `scratch` with the constant made in it now.
local function konst(ctx, op, bits, scratch)
  local r = ctx:kreg(op, bits)
  if r then return r end
  materialize(ctx, scratch, bits)
  return scratch
end

---------------------------------------------------------------------------------------------
-- Function frame

function M.preamble() return {} end
function M.const_section() return { "    FK_RODATA" } end
function M.postamble() return { "    FK_GNU_STACK", "    FK_AARCH64_FEATURE_NOTE" } end

-- Callee-saved registers as save-pair lines: x registers, then d registers (low halves).
local function save_list(ctx)
  local xs, ds = {}, {}
  for _, r in ipairs(ctx.saved) do
    if r:sub(1, 1) == "x" then xs[#xs + 1] = r else ds[#ds + 1] = "d" .. n(r) end
  end
  local all = {}
  for _, r in ipairs(xs) do all[#all + 1] = r end
  for _, r in ipairs(ds) do all[#all + 1] = r end
  return all
end

-- Broadcast bf16 pairs that only BFDOT reads (as its x operand) and whose aligned group of four
-- pairs the same block loads too: each is loaded as the q register of its group (LDR, no
-- vector-pipe work) and read by BFDOT by element, lane = pair index mod 4. The group's 16
-- bytes are all read by the template anyway: no new memory is touched. value -> lane.
local function pair_lanes(proc)
  local uses, ok = {}, {}
  IR.walk_proc(proc, function(o)
    for i, v in ipairs(o.src) do
      uses[v] = (uses[v] or 0) + 1
      if o.op == "dot_bf16_acc" and i == 3 then ok[v] = (ok[v] or 0) + 1 end
    end
  end)
  local lanes = {}
  local function visit(list)
    local seen = {}
    for _, o in ipairs(list) do
      if o.op == "load_pair_bcast" and o.attr.off % 2 == 0 then
        local key = tostring(o.src[1].id) .. ":" .. tostring(o.src[2].id) .. ":" .. tostring(o.attr.at)
        seen[key] = seen[key] or {}
        seen[key][o.attr.off] = true
      end
      for _, b in ipairs(IR.sub_blocks(o)) do visit(b) end
    end
    for _, o in ipairs(list) do
      if o.op == "load_pair_bcast" and o.attr.off % 2 == 0 and uses[o.dst] and uses[o.dst] == ok[o.dst] then
        local key = tostring(o.src[1].id) .. ":" .. tostring(o.src[2].id) .. ":" .. tostring(o.attr.at)
        local o0, all = o.attr.off - o.attr.off % 8, true
        for k = 0, 6, 2 do all = all and seen[key][o0 + k] == true end
        if all then lanes[o.dst] = (o.attr.off % 8) / 2 end
      end
    end
  end
  visit(proc.prologue)
  visit(proc.body)
  return lanes
end

function M.begin(ctx)
  ctx.pair_lane = pair_lanes(ctx.proc)
  local sym = ctx.symbol
  ctx:wraw("    FK_TEXT")
  ctx:wraw("    .p2align 6")
  ctx:wraw("    .globl FK_SYM(" .. sym .. ")")
  ctx:wraw("    FK_HIDDEN(" .. sym .. ")")
  ctx:wraw("    FK_TYPE_FUNC(" .. sym .. ")")
  ctx:wraw("FK_SYM(" .. sym .. "):")
  ctx:wline("FK_BTI_C")
  local regs = save_list(ctx)
  for i = 1, #regs, 2 do
    if regs[i + 1] and regs[i]:sub(1, 1) == regs[i + 1]:sub(1, 1) then
      ctx:wline("stp " .. regs[i] .. ", " .. regs[i + 1] .. ", [sp, #-16]!")
    else
      ctx:wline("str " .. regs[i] .. ", [sp, #-16]!")
      if regs[i + 1] then ctx:wline("str " .. regs[i + 1] .. ", [sp, #-16]!") end
    end
  end
  ctx.save_regs = regs
  -- stack slots (spill, reload): 64 bytes each, below the saved registers
  ctx.frame_bytes = 64 * (ctx.proc.frame_slots or 0)
  if ctx.frame_bytes > 0 then ctx:wline("sub sp, sp, " .. imm(ctx.frame_bytes)) end
end

function M.finish(ctx)
  if ctx.frame_bytes > 0 then ctx:wline("add sp, sp, " .. imm(ctx.frame_bytes)) end
  local regs = ctx.save_regs
  local groups = {}
  for i = 1, #regs, 2 do
    if regs[i + 1] and regs[i]:sub(1, 1) == regs[i + 1]:sub(1, 1) then
      groups[#groups + 1] = { "ldp " .. regs[i] .. ", " .. regs[i + 1] .. ", [sp], #16" }
    else
      local g = { "ldr " .. regs[i] .. ", [sp], #16" }
      if regs[i + 1] then g = { "ldr " .. regs[i + 1] .. ", [sp], #16", g[1] } end
      groups[#groups + 1] = g
    end
  end
  for i = #groups, 1, -1 do
    for _, l in ipairs(groups[i]) do ctx:wline(l) end
  end
  ctx:wline("ret")
  ctx:wraw("    FK_SIZE(" .. ctx.symbol .. ")")
end

---------------------------------------------------------------------------------------------
-- Hooks

local ops = {}
M.ops = ops

function ops.entry() end

function ops.arg(ctx, op)
  ctx:wline("ldr " .. ctx:reg(op.dst) .. ", [" .. ctx:reg(op.src[1]) .. ", " .. imm(op.attr.field.offset) .. "]")
end

function ops.arg_f32(ctx, op)
  ctx:wline("ldr " .. s(ctx:reg(op.dst)) .. ", [" .. ctx:reg(op.src[1]) .. ", " .. imm(op.attr.field.offset) .. "]")
end

function ops.iconst(ctx, op)
  local x = op.attr.imm
  if x < -65535 or x > 65535 then error("internal: constant out of range: " .. C.int(x)) end
  ctx:wline("mov " .. ctx:reg(op.dst) .. ", " .. imm(x))
end

function ops.iadd(ctx, op)
  ctx:wline("add " .. ctx:reg(op.dst) .. ", " .. ctx:reg(op.src[1]) .. ", " .. ctx:reg(op.src[2]))
end

function ops.iaddi(ctx, op)
  add_imm(ctx, ctx:reg(op.dst), ctx:reg(op.src[1]), op.attr.imm)
end

function ops.isub(ctx, op)
  ctx:wline("sub " .. ctx:reg(op.dst) .. ", " .. ctx:reg(op.src[1]) .. ", " .. ctx:reg(op.src[2]))
end

-- a & imm: AND with the immediate where the logical-immediate encoding holds it (a run of ones
-- at the bottom or at the top: 2^k - 1, -2^k), else through x16.
function ops.iandi(ctx, op)
  local x = op.attr.imm
  local low = x > 0 and x < 2 ^ 62 and (x + 1) == 2 ^ math.floor(math.log(x + 1, 2) + 0.5)
  local high = x < 0 and x > -(2 ^ 62) and -x == 2 ^ math.floor(math.log(-x, 2) + 0.5)
  if low or high then
    ctx:wline("and " .. ctx:reg(op.dst) .. ", " .. ctx:reg(op.src[1]) .. ", " .. imm(x))
    return
  end
  ctx:wline("mov x16, " .. imm(x))
  ctx:wline("and " .. ctx:reg(op.dst) .. ", " .. ctx:reg(op.src[1]) .. ", x16")
end

-- a * imm: a shift for a power of two, an add of a shifted copy for 2^k + 1, else MOV + MUL.
function ops.imuli(ctx, op)
  local d, a, x = ctx:reg(op.dst), ctx:reg(op.src[1]), op.attr.imm
  local function log2(v)
    if v < 1 then return nil end
    local k = math.floor(math.log(v, 2) + 0.5)
    return (2 ^ k == v) and k or nil
  end
  local k = log2(x)
  if k and k <= 63 then
    ctx:wline("lsl " .. d .. ", " .. a .. ", " .. imm(k))
    return
  end
  k = log2(x - 1)
  if k and k >= 1 and k <= 4 then
    ctx:wline("add " .. d .. ", " .. a .. ", " .. a .. ", lsl " .. imm(k))
    return
  end
  ctx:wline("mov x16, " .. imm(x))
  ctx:wline("mul " .. d .. ", " .. a .. ", x16")
end

function ops.imul(ctx, op)
  ctx:wline("mul " .. ctx:reg(op.dst) .. ", " .. ctx:reg(op.src[1]) .. ", " .. ctx:reg(op.src[2]))
end

-- MOVZ + MOVK: the four 16-bit chunks, low first
function ops.iconst64(ctx, op)
  local d = ctx:reg(op.dst)
  local chunks = { op.attr.lo % 65536, math.floor(op.attr.lo / 65536), op.attr.hi % 65536,
                   math.floor(op.attr.hi / 65536) }
  ctx:wline(string.format("movz %s, #0x%04x", d, chunks[1]))
  for i = 2, 4 do ctx:wline(string.format("movk %s, #0x%04x, lsl #%d", d, chunks[i], 16 * (i - 1))) end
end

function ops.ixor(ctx, op)
  ctx:wline("eor " .. ctx:reg(op.dst) .. ", " .. ctx:reg(op.src[1]) .. ", " .. ctx:reg(op.src[2]))
end

function ops.ishri(ctx, op)
  ctx:wline("lsr " .. ctx:reg(op.dst) .. ", " .. ctx:reg(op.src[1]) .. ", " .. imm(op.attr.imm))
end

function ops.imin(ctx, op)
  local d, a, b = ctx:reg(op.dst), ctx:reg(op.src[1]), ctx:reg(op.src[2])
  ctx:wline("cmp " .. a .. ", " .. b)
  ctx:wline("csel " .. d .. ", " .. a .. ", " .. b .. ", lt")
end

-- a >= w ? a - w : a
function ops.iwrap(ctx, op)
  local d, a, w = ctx:reg(op.dst), ctx:reg(op.src[1]), ctx:reg(op.src[2])
  ctx:wline("sub x16, " .. a .. ", " .. w)
  ctx:wline("cmp " .. a .. ", " .. w)
  ctx:wline("csel " .. d .. ", x16, " .. a .. ", ge")
end

function ops.addr(ctx, op)
  local sh = ({ [1] = 0, [2] = 1, [4] = 2, [8] = 3 })[op.attr.scale]
  ctx:wline("add " .. ctx:reg(op.dst) .. ", " .. ctx:reg(op.src[1]) .. ", " .. ctx:reg(op.src[2]) ..
            ", lsl " .. imm(sh))
end

function ops.zero(ctx, op)
  for _, p in ipairs(ctx:regs(op.dst)) do ctx:wline("movi v" .. n(p) .. ".2d, #0") end
end

function ops.sconst(ctx, op)
  const_addr(ctx, "x17", ctx:const(string.format("f%08x", op.attr.bits), { op.attr.bits }))
  ctx:wline("ldr " .. s(ctx:reg(op.dst)) .. ", [x17]")
end

function ops.cvt_i2s(ctx, op)
  ctx:wline("scvtf " .. s(ctx:reg(op.dst)) .. ", " .. ctx:reg(op.src[1]))
end

-- Tail lane groups. NEON has no masked memory access: the valid elements of a group move one at
-- a time in a short loop, nothing past the end is touched. x17 = their count (elements j with
-- base + step * j < rem, at most `count`); 0 skips the move, `count` takes the whole-vector
-- path (a lane group of a full block, t:lanes).
local function lane_count(ctx, op, count, done, whole)
  local l = op.lanes
  add_imm(ctx, "x17", ctx:reg(l.rem), -l.base)
  if l.step == 2 then
    ctx:wline("add x17, x17, #1")
    ctx:wline("asr x17, x17, #1")
  end
  ctx:wline("cmp x17, " .. imm(count))
  ctx:wline("b.ge " .. whole)
  ctx:wline("cmp x17, #0")
  ctx:wline("b.le " .. done)
end

-- Loads the valid elements of the op's lane group into d (four q registers, already filled):
-- from the last one down, each step moves the register quadruple up by one element (`esz`
-- bytes of the registers) and inserts the next element at element 0 with `ins` (an LD1 of one
-- lane from [x16]). `size`: the element's bytes in memory. whole(): the full-vector load.
local function tail_load(ctx, op, d, count, size, esz, ins, whole)
  local done, loop, full = ctx:new_label("tail_ld_end"), ctx:new_label("tail_ld"), ctx:new_label("tail_ld_all")
  local sh = ({ [2] = 1, [4] = 2 })[size]
  local b, o = elem_addr(ctx, op, size)
  add_imm(ctx, "x16", b, o)
  lane_count(ctx, op, count, done, full)
  ctx:wline("add x16, x16, x17, lsl " .. imm(sh))              -- one past the last valid element
  ctx:wlabel(loop)
  for p = 4, 2, -1 do
    ctx:wline("ext " .. v16b(d[p]) .. ", " .. v16b(d[p - 1]) .. ", " .. v16b(d[p]) .. ", " .. imm(16 - esz))
  end
  ctx:wline("ext " .. v16b(d[1]) .. ", " .. v16b(d[1]) .. ", " .. v16b(d[1]) .. ", " .. imm(16 - esz))
  ctx:wline("sub x16, x16, " .. imm(size))
  ctx:wline(ins)
  ctx:wline("subs x17, x17, #1")
  ctx:wline("b.ne " .. loop)
  ctx:wline("b " .. done)
  ctx:wlabel(full)
  whole()
  ctx:wlabel(done)
end

-- Stores the valid elements of the op's lane group from the scratch registers t (prep() fills
-- them): after each store of element 0 (`ins`, post-incrementing x16) they move down by one
-- element (`esz` bytes). whole(): the full-vector store to [x16].
local function tail_store(ctx, op, t, count, size, esz, ins, prep, whole)
  local done, loop, full = ctx:new_label("tail_st_end"), ctx:new_label("tail_st"), ctx:new_label("tail_st_all")
  local b, o = elem_addr(ctx, op, size)
  add_imm(ctx, "x16", b, o)
  lane_count(ctx, op, count, done, full)
  prep()
  ctx:wlabel(loop)
  ctx:wline(ins)
  for p = 1, #t - 1 do
    ctx:wline("ext " .. v16b(t[p]) .. ", " .. v16b(t[p]) .. ", " .. v16b(t[p + 1]) .. ", " .. imm(esz))
  end
  ctx:wline("ext " .. v16b(t[#t]) .. ", " .. v16b(t[#t]) .. ", " .. v16b(t[#t]) .. ", " .. imm(esz))
  ctx:wline("subs x17, x17, #1")
  ctx:wline("b.ne " .. loop)
  ctx:wline("b " .. done)
  ctx:wlabel(full)
  whole()
  ctx:wlabel(done)
end

-- v30 = rem - base in every lane and x17 = the lane index table of the op's lane group (x17 is
-- the only general register it writes); then part_mask(p) gives v31 = the lanes of part p (1..4)
-- as all-ones lanes.
local function mask_setup(ctx, op)
  local l = op.lanes
  local w = {}
  for i = 0, 15 do w[i + 1] = l.step * i end
  add_imm(ctx, "x17", ctx:reg(l.rem), -l.base)
  ctx:wline("dup " .. v4s(T2) .. ", w17")
  const_addr(ctx, "x17", ctx:const(l.step == 1 and "iota" or "iota" .. C.int(l.step), w))
end

local function part_mask(ctx, p)
  ctx:wline("ldr " .. q(T3) .. ", [x17, " .. imm(16 * (p - 1)) .. "]")
  ctx:wline("cmgt " .. v4s(T3) .. ", " .. v4s(T2) .. ", " .. v4s(T3))
  return T3
end

local function tail_addr(ctx, op, size)
  local b, o = elem_addr(ctx, op, size)
  add_imm(ctx, "x16", b, o)
end

-- A register holding the element's address for an access without offset (LD1R, ST1 lane): the
-- loop's bumped pointer itself when the offset is 0, else x16.
local function exact_addr(ctx, op, size)
  if op.attr.at then
    local r, o = from_ptr(ctx, op, 1, op.attr.off * size, function(o) return o == 0 end)
    return r, o
  end
  tail_addr(ctx, op, size)
  return "x16"
end

local function fill_parts(ctx, d, fill)
  for _, p in ipairs(d) do
    if fill == 0x80000000 then ctx:wline("movi " .. v4s(p) .. ", #0x80, lsl #24")
    else ctx:wline("movi v" .. n(p) .. ".2d, #0") end
  end
end

-- Parts 2-4 of a broadcast made in part 1: nothing for a uniform value (one register, M.class_of),
-- copies for an accumulator.
local function copies(ctx, d)
  for p = 2, 4 do
    if d[p] ~= d[1] then ctx:wline("mov " .. v16b(d[p]) .. ", " .. v16b(d[1])) end
  end
end

local function load4(ctx, d)            -- four q registers from [x16]
  ctx:wline("ldp " .. q(d[1]) .. ", " .. q(d[2]) .. ", [x16]")
  ctx:wline("ldp " .. q(d[3]) .. ", " .. q(d[4]) .. ", [x16, #32]")
end

function ops.load_f32(ctx, op)
  local d = ctx:regs(op.dst)
  if op.lanes then
    fill_parts(ctx, d, op.attr.fill or 0)
    tail_load(ctx, op, d, 16, 4, 4, "ld1 {v" .. n(d[1]) .. ".s}[0], [x16]", function() load4(ctx, d) end)
    return
  end
  local b, o = elem_addr(ctx, op, 4)
  ctx:wline("ldp " .. q(d[1]) .. ", " .. q(d[2]) .. ", [" .. b .. ", " .. imm(o) .. "]")
  ctx:wline("ldp " .. q(d[3]) .. ", " .. q(d[4]) .. ", [" .. b .. ", " .. imm(o + 32) .. "]")
end

function ops.load_bf16(ctx, op)
  local d = ctx:regs(op.dst)
  -- 16 halfwords into d3, d4; widen into d1..d4 in an order that reads each source first: ZIP1/2
  -- with zero halfwords (lane l = (0, h[l])) where a zero register is held, else SHLL #16
  local function widen(b, o)
    ctx:wline("ldp " .. q(d[3]) .. ", " .. q(d[4]) .. ", [" .. b .. ", " .. imm(o) .. "]")
    local z = ctx:kreg(op, K_ZERO)
    if z then
      local function zip(ins, dd, src)
        ctx:wline(ins .. " v" .. n(dd) .. ".8h, v" .. n(z) .. ".8h, v" .. n(src) .. ".8h")
      end
      zip("zip1", d[1], d[3]); zip("zip2", d[2], d[3]); zip("zip1", d[3], d[4]); zip("zip2", d[4], d[4])
      return
    end
    ctx:wline("shll " .. v4s(d[1]) .. ", v" .. n(d[3]) .. ".4h, #16")
    ctx:wline("shll2 " .. v4s(d[2]) .. ", v" .. n(d[3]) .. ".8h, #16")
    ctx:wline("shll " .. v4s(d[3]) .. ", v" .. n(d[4]) .. ".4h, #16")
    ctx:wline("shll2 " .. v4s(d[4]) .. ", v" .. n(d[4]) .. ".8h, #16")
  end
  if op.lanes then
    -- the valid halfwords straight into the high halves of zeroed lanes
    fill_parts(ctx, d, 0)
    tail_load(ctx, op, d, 16, 2, 4, "ld1 {v" .. n(d[1]) .. ".h}[1], [x16]", function() widen("x16", 0) end)
    return
  end
  widen(elem_addr(ctx, op, 2))
end

-- 32 bf16 as they lie in memory: lane l holds halfwords 2l (low) and 2l + 1 (high).
function ops.load_raw(ctx, op)
  local d = ctx:regs(op.dst)
  if op.lanes then
    fill_parts(ctx, d, 0)
    tail_load(ctx, op, d, 32, 2, 2, "ld1 {v" .. n(d[1]) .. ".h}[0], [x16]", function() load4(ctx, d) end)
    return
  end
  local b, o = elem_addr(ctx, op, 2)
  ctx:wline("ldp " .. q(d[1]) .. ", " .. q(d[2]) .. ", [" .. b .. ", " .. imm(o) .. "]")
  ctx:wline("ldp " .. q(d[3]) .. ", " .. q(d[4]) .. ", [" .. b .. ", " .. imm(o + 32) .. "]")
end

-- The 8 f32 at an element address in lanes 0-7 and again in 8-15: the same LDP twice.
function ops.load_bcast8(ctx, op)
  local d = ctx:regs(op.dst)
  local b, o = elem_addr(ctx, op, 4)
  for p = 1, 3, 2 do
    ctx:wline("ldp " .. q(d[p]) .. ", " .. q(d[p + 1]) .. ", [" .. b .. ", " .. imm(o) .. "]")
  end
end

-- PRFM with its offset as an immediate (unsigned, a multiple of 8, up to 32760; PRFUM: -256..255),
-- from the loop's bumped pointer or x16 = base + idx * size.
function ops.prefetch(ctx, op)
  local o, b = op.attr.off * op.attr.size, "x16"
  if op.attr.at then
    b, o = ctx:reg(op.src[1]), o - disp_of(ctx, op.src[1])
  else
    ctx:wline("add x16, " .. ctx:reg(op.src[1]) .. ", " .. ctx:reg(op.src[2]) .. ", lsl " .. imm(SHIFT[op.attr.size]))
  end
  local hint = op.attr.level == 2 and "pldl2keep" or "pldl1keep"
  if o >= 0 and o <= 32760 and o % 8 == 0 then
    ctx:wline("prfm " .. hint .. ", [" .. b .. (o ~= 0 and (", " .. imm(o)) or "") .. "]")
  elseif o >= -256 and o < 256 then
    ctx:wline("prfum " .. hint .. ", [" .. b .. ", " .. imm(o) .. "]")
  else
    add_imm(ctx, "x16", b, o)
    ctx:wline("prfm " .. hint .. ", [x16]")
  end
end

function ops.store_f32(ctx, op)
  local v = ctx:regs(op.src[3])
  if op.lanes then
    local t = { T0, T1, T2, T3 }
    tail_store(ctx, op, t, 16, 4, 4, "st1 {v" .. n(T0) .. ".s}[0], [x16], #4", function()
      for p = 1, 4 do ctx:wline("mov " .. v16b(t[p]) .. ", " .. v16b(v[p])) end
    end, function()
      ctx:wline("stp " .. q(v[1]) .. ", " .. q(v[2]) .. ", [x16]")
      ctx:wline("stp " .. q(v[3]) .. ", " .. q(v[4]) .. ", [x16, #32]")
    end)
    return
  end
  local b, o = elem_addr(ctx, op, 4)
  ctx:wline("stp " .. q(v[1]) .. ", " .. q(v[2]) .. ", [" .. b .. ", " .. imm(o) .. "]")
  ctx:wline("stp " .. q(v[3]) .. ", " .. q(v[4]) .. ", [" .. b .. ", " .. imm(o + 32) .. "]")
end

function ops.store_bf16(ctx, op)
  local v = ctx:regs(op.src[3])
  local s1, s2 = T0, T1
  if ctx.narrow and ctx.narrow[op.src[3]] then            -- already the 16 halfwords (bfcvt_narrow)
    s1, s2 = v[1], v[2]
    if op.lanes then                                     -- (the tail's moves shift their registers)
      ctx:wline("mov " .. v16b(T0) .. ", " .. v16b(s1))
      ctx:wline("mov " .. v16b(T1) .. ", " .. v16b(s2))
      s1, s2 = T0, T1
    end
  else
    -- the high halfwords of parts 1, 2 and of 3, 4 (UZP2: no shift, either vector pipe)
    ctx:wline("uzp2 v" .. n(T0) .. ".8h, v" .. n(v[1]) .. ".8h, v" .. n(v[2]) .. ".8h")
    ctx:wline("uzp2 v" .. n(T1) .. ".8h, v" .. n(v[3]) .. ".8h, v" .. n(v[4]) .. ".8h")
  end
  if op.lanes then
    tail_store(ctx, op, { T0, T1 }, 16, 2, 2, "st1 {v" .. n(T0) .. ".h}[0], [x16], #2", function() end,
               function() ctx:wline("stp " .. q(T0) .. ", " .. q(T1) .. ", [x16]") end)
    return
  end
  local b, o = elem_addr(ctx, op, 2)
  ctx:wline("stp " .. q(s1) .. ", " .. q(s2) .. ", [" .. b .. ", " .. imm(o) .. "]")
end

-- 32 halfwords from 16 raw pairs (as load_raw reads them).
function ops.store_raw(ctx, op)
  local v = ctx:regs(op.src[3])
  local b, o = elem_addr(ctx, op, 2)
  ctx:wline("stp " .. q(v[1]) .. ", " .. q(v[2]) .. ", [" .. b .. ", " .. imm(o) .. "]")
  ctx:wline("stp " .. q(v[3]) .. ", " .. q(v[4]) .. ", [" .. b .. ", " .. imm(o + 32) .. "]")
end

-- int32 lanes (each in -128..127) as 16 bytes: XTN/XTN2 to halfwords, again to bytes, one STR q.
function ops.store_i8(ctx, op)
  local v = ctx:regs(op.src[3])
  ctx:wline("xtn v" .. n(T0) .. ".4h, " .. v4s(v[1]))
  ctx:wline("xtn2 v" .. n(T0) .. ".8h, " .. v4s(v[2]))
  ctx:wline("xtn v" .. n(T1) .. ".4h, " .. v4s(v[3]))
  ctx:wline("xtn2 v" .. n(T1) .. ".8h, " .. v4s(v[4]))
  ctx:wline("xtn v" .. n(T0) .. ".8b, v" .. n(T0) .. ".8h")
  ctx:wline("xtn2 v" .. n(T0) .. ".16b, v" .. n(T1) .. ".8h")
  local b, o = q_addr(ctx, op, 1)
  local st = (o >= 0 and o % 16 == 0) and "str " or "stur "
  ctx:wline(st .. q(T0) .. ", [" .. b .. (o ~= 0 and (", " .. imm(o)) or "") .. "]")
end

function ops.load1_bf16(ctx, op)
  local b, o = elem_addr(ctx, op, 2)
  local d = ctx:reg(op.dst)
  ctx:wline("ldr " .. h(d) .. ", [" .. b .. ", " .. imm(o) .. "]")
  ctx:wline("shl v" .. n(d) .. ".2s, v" .. n(d) .. ".2s, #16")
end

function ops.load1_f32(ctx, op)
  local b, o = elem_addr(ctx, op, 4)
  ctx:wline("ldr " .. s(ctx:reg(op.dst)) .. ", [" .. b .. ", " .. imm(o) .. "]")
end

-- one int32 element, sign-extended to 64 bits (a gather's row index), and one uint64 element
local function scalar_addr(ctx, op, size)
  local b, o = elem_addr(ctx, op, size, true)
  return "[" .. b .. (o ~= 0 and (", " .. imm(o)) or "") .. "]"
end

function ops.load1_i32(ctx, op)
  ctx:wline("ldrsw " .. ctx:reg(op.dst) .. ", " .. scalar_addr(ctx, op, 4))
end

function ops.load1_u64(ctx, op)
  ctx:wline("ldr " .. ctx:reg(op.dst) .. ", " .. scalar_addr(ctx, op, 8))
end

function ops.store1_u64(ctx, op)
  ctx:wline("str " .. ctx:reg(op.src[3]) .. ", " .. scalar_addr(ctx, op, 8))
end

function ops.store1_bf16(ctx, op)
  local b = exact_addr(ctx, op, 2)
  ctx:wline("st1 {v" .. n(ctx:reg(op.src[3])) .. ".h}[1], [" .. b .. "]")
end

function ops.store1_f32(ctx, op)
  local b, o = elem_addr(ctx, op, 4)
  ctx:wline("str " .. s(ctx:reg(op.src[3])) .. ", [" .. b .. ", " .. imm(o) .. "]")
end

-- A masked accumulate computes aside (v28) and blends the group's lanes back (v31: the part's
-- mask), so lanes outside the group keep their value.
function ops.fma_acc(ctx, op)
  local acc, a, b = ctx:regs(op.src[1]), ctx:regs(op.src[2]), ctx:regs(op.src[3])
  if op.lanes then mask_setup(ctx, op) end
  for p = 1, 4 do
    if op.lanes then
      local m = part_mask(ctx, p)
      ctx:wline("mov " .. v16b(T0) .. ", " .. v16b(acc[p]))
      ctx:wline("fmla " .. v4s(T0) .. ", " .. v4s(a[p]) .. ", " .. v4s(b[p]))
      ctx:wline("bit " .. v16b(acc[p]) .. ", " .. v16b(T0) .. ", " .. v16b(m))
    else
      ctx:wline("fmla " .. v4s(acc[p]) .. ", " .. v4s(a[p]) .. ", " .. v4s(b[p]))
    end
  end
end

-- acc += a * [memory]: the multiplicand loaded into scratch right before its FMLAs, by two LDPs
-- (v28-v31) for a whole vector; with a lane group, one LDR per part (v29) beside its mask.
function ops.fma_acc_mem(ctx, op)
  local acc, a = ctx:regs(op.src[1]), ctx:regs(op.src[2])
  local b, o                     -- the base register (x16, or the loop's bumped pointer) and offset
  if op.attr.at then
    b, o = ctx:reg(op.src[3]), op.attr.off * 4 - disp_of(ctx, op.src[3])
  else
    ctx:wline("add x16, " .. ctx:reg(op.src[3]) .. ", " .. ctx:reg(op.src[4]) .. ", lsl #2")
    b, o = "x16", op.attr.off * 4
  end
  if not op.lanes then
    if o < -1024 or o + 32 > 1008 or o % 16 ~= 0 then
      add_imm(ctx, "x16", b, o)
      b, o = "x16", 0
    end
    local t = { T0, T1, T2, T3 }
    for p = 1, 4, 2 do
      ctx:wline("ldp " .. q(t[p]) .. ", " .. q(t[p + 1]) .. ", [" .. b .. ", " .. imm(o + 16 * (p - 1)) .. "]")
      for k = p, p + 1 do ctx:wline("fmla " .. v4s(acc[k]) .. ", " .. v4s(a[k]) .. ", " .. v4s(t[k])) end
    end
    return
  end
  add_imm(ctx, "x16", b, o)      -- the group's first element (before mask_setup takes x17)
  mask_setup(ctx, op)
  for p = 1, 4 do
    local m = part_mask(ctx, p)
    ctx:wline("ldr " .. q(T1) .. ", [x16, " .. imm(16 * (p - 1)) .. "]")
    ctx:wline("mov " .. v16b(T0) .. ", " .. v16b(acc[p]))
    ctx:wline("fmla " .. v4s(T0) .. ", " .. v4s(a[p]) .. ", " .. v4s(T1))
    ctx:wline("bit " .. v16b(acc[p]) .. ", " .. v16b(T0) .. ", " .. v16b(m))
  end
end

-- acc[l] += w[2l] * x[2l] + w[2l+1] * x[2l+1]: BFDOT (without FEAT_EBF16: round-to-odd
-- intermediate, flush-to-zero, default NaN).
function ops.dot_bf16_acc(ctx, op)
  if ctx.variant.name ~= "bf16" then error("internal: dot_bf16_acc needs the bf16 variant") end
  local acc, w, x = ctx:regs(op.src[1]), ctx:regs(op.src[2]), ctx:regs(op.src[3])
  local lane = ctx.pair_lane[op.src[3]]
  for p = 1, 4 do
    local xs = lane and ("v" .. n(x[p]) .. ".2h[" .. C.int(lane) .. "]") or ("v" .. n(x[p]) .. ".8h")
    ctx:wline("bfdot " .. v4s(acc[p]) .. ", v" .. n(w[p]) .. ".8h, " .. xs)
  end
end

-- No AArch64 variant has dot_u8s8: the quantized fast tier reads t.tune.int8_dot and uses
-- dot_s8s8 here (USDOT, FEAT_I8MM, would be its instruction; SDOT reaches more CPUs).
function ops.dot_u8s8(ctx)
  ctx:fail("dot_u8s8: no AArch64 variant has it; the dotprod variant has dot_s8s8 (t.tune.int8_dot == \"s8s8\")")
end

-- src1 + the dot products of s8 src2 and s8 src3, four bytes per lane: SDOT per q register
-- (FEAT_DotProd: wrapping int32 sums, exact in every use here), into a copy of src1 unless the
-- result took src1's registers (REUSE).
-- dot_s8s7 (src3's bytes in -127..127) and dot_u7s8 (src2's in 0..127, which read the same signed)
-- are exact in SDOT for every byte: the same lowering, the refusal naming the op asked for.
function ops.dot_s8s8(ctx, op)
  if ctx.variant.name ~= "dotprod" then
    ctx:fail(op.op .. " needs the dotprod variant (SDOT): give the form " ..
             "variants = { fast = { \"avx512vnni\", \"dotprod\" } }")
  end
  local d, a, w, x = ctx:regs(op.dst), ctx:regs(op.src[1]), ctx:regs(op.src[2]), ctx:regs(op.src[3])
  for p = 1, 4 do
    if d[p] ~= a[p] then ctx:wline("mov " .. v16b(d[p]) .. ", " .. v16b(a[p])) end
    ctx:wline("sdot " .. v4s(d[p]) .. ", " .. v16b(w[p]) .. ", " .. v16b(x[p]))
  end
end

ops.dot_s8s7 = ops.dot_s8s8
ops.dot_u7s8 = ops.dot_s8s8

-- The bf16 pair at an element address, in every 32-bit lane (LD1R, copied to the other parts);
-- or, for BFDOT by element (pair_lanes), the q register of its group of four pairs.
function ops.load_pair_bcast(ctx, op)
  local d = ctx:regs(op.dst)
  local lane = ctx.pair_lane[op.dst]
  if lane then
    local size, o0 = 2, (op.attr.off - 2 * lane) * 2
    local b, o
    local function fits(x) return x >= 0 and x <= 65520 and x % 16 == 0 end
    if op.attr.at then
      b, o = from_ptr(ctx, op, 1, o0, fits)
    else
      ctx:wline("add x16, " .. ctx:reg(op.src[1]) .. ", " .. ctx:reg(op.src[2]) .. ", lsl " .. imm(SHIFT[size]))
      b, o = "x16", o0
      if not fits(o) then
        add_imm(ctx, "x16", "x16", o)
        o = 0
      end
    end
    ctx:wline("ldr " .. q(d[1]) .. ", [" .. b .. (o ~= 0 and (", " .. imm(o)) or "") .. "]")
    return
  end
  local b = exact_addr(ctx, op, 2)
  ctx:wline("ld1r {v" .. n(d[1]) .. ".4s}, [" .. b .. "]")
  copies(ctx, d)
end

-- Quantized weights: the 16 bytes at an element address, lane l = byte l, widened to int32 by two
-- steps of SXTL/SXTL2 (UXTL/UXTL2 for u8), each register read before it is written. One LDR q
-- (an unsigned offset, a multiple of 16, up to 65520) or LDUR q (-256..255: odd offsets too), else
-- the address in x16.
local function load_bytes(ext)
  return function(ctx, op)
    local d = ctx:regs(op.dst)
    local function fits(o) return (o >= 0 and o <= 65520 and o % 16 == 0) or (o >= -256 and o <= 255) end
    local b, o
    if op.attr.at then
      b, o = from_ptr(ctx, op, 1, op.attr.off, fits)
    else
      ctx:wline("add x16, " .. ctx:reg(op.src[1]) .. ", " .. ctx:reg(op.src[2]))
      b, o = "x16", op.attr.off
      if not fits(o) then
        add_imm(ctx, "x16", "x16", o)
        o = 0
      end
    end
    local ld = (o >= 0 and o % 16 == 0) and "ldr " or "ldur "
    ctx:wline(ld .. q(d[4]) .. ", [" .. b .. (o ~= 0 and (", " .. imm(o)) or "") .. "]")
    local function x(two, dd, dt, src, st)
      ctx:wline(ext .. two .. " v" .. n(dd) .. dt .. ", v" .. n(src) .. st)
    end
    x("", d[1], ".8h", d[4], ".8b")       -- bytes 0-7 -> halfwords
    x("2", d[3], ".8h", d[4], ".16b")     -- bytes 8-15 -> halfwords
    x("2", d[2], ".4s", d[1], ".8h")      -- lanes 4-7
    x("", d[1], ".4s", d[1], ".4h")       -- lanes 0-3
    x("2", d[4], ".4s", d[3], ".8h")      -- lanes 12-15
    x("", d[3], ".4s", d[3], ".4h")       -- lanes 8-11
  end
end
ops.load_i8, ops.load_u8 = load_bytes("sxtl"), load_bytes("uxtl")

-- The 8 binary16 at an element address, widened exactly, in lanes 0-7: LDR q, FCVTL / FCVTL2 (as
-- load_bcast_f16: FPCR.AHP = 0); lanes 8-15 zeroed.
function ops.load_f16x8(ctx, op)
  local d = ctx:regs(op.dst)
  local b, o = q_addr(ctx, op, 2)
  local ld = (o >= 0 and o % 16 == 0) and "ldr " or "ldur "
  ctx:wline(ld .. q(T0) .. ", [" .. b .. (o ~= 0 and (", " .. imm(o)) or "") .. "]")
  ctx:wline("fcvtl " .. v4s(d[1]) .. ", v" .. n(T0) .. ".4h")
  ctx:wline("fcvtl2 " .. v4s(d[2]) .. ", v" .. n(T0) .. ".8h")
  ctx:wline("movi v" .. n(d[3]) .. ".2d, #0")
  ctx:wline("movi v" .. n(d[4]) .. ".2d, #0")
end

-- The 4 binary16 at an element address: LDR d (LDUR for a small negative offset), FCVTL, then
-- lane c DUP'ed into part c + 1 (lanes 4c .. 4c + 3); class e (read by element), the FCVTL alone.
function ops.load_f16x4q(ctx, op)
  local d = ctx:regs(op.dst)
  local b, o = elem_addr(ctx, op, 2,
                         function(x) return (x >= 0 and x <= 32760 and x % 8 == 0) or (x >= -256 and x < 256) end)
  local ld = (o >= 0 and o % 8 == 0) and "ldr " or "ldur "
  ctx:wline(ld .. "d" .. n(T0) .. ", [" .. b .. (o ~= 0 and (", " .. imm(o)) or "") .. "]")
  if M.class_of(op.dst) == "e" then
    ctx:wline("fcvtl " .. v4s(d[1]) .. ", v" .. n(T0) .. ".4h")
    return
  end
  ctx:wline("fcvtl " .. v4s(T0) .. ", v" .. n(T0) .. ".4h")
  for p = 1, 4 do ctx:wline("dup " .. v4s(d[p]) .. ", v" .. n(T0) .. ".s[" .. C.int(p - 1) .. "]") end
end

-- lanes 0-7 <- lane 2i, 8-15 <- lane 2i + 1: DUP by element, per q register.
function ops.vpair_split(ctx, op)
  local d, v, i = ctx:regs(op.dst), ctx:regs(op.src[1]), op.attr.imm
  for _, p in ipairs(distinct(d)) do
    local l = 2 * i + (p >= 3 and 1 or 0)
    ctx:wline("dup " .. v4s(d[p]) .. ", v" .. n(v[math.floor(l / 4) + 1]) .. ".s[" .. C.int(l % 4) .. "]")
  end
end

-- The IEEE binary16 at an element address, widened exactly to f32, in every lane: LD1R of the
-- halfword, then FCVTL (base ASIMD; it reads IEEE binary16 under FPCR.AHP = 0, the Linux default:
-- docs/design.md, "Floating-point environment"). One register for all four parts (M.class_of).
function ops.load_bcast_f16(ctx, op)
  local d = ctx:regs(op.dst)
  local b = exact_addr(ctx, op, 2)
  ctx:wline("ld1r {v" .. n(d[1]) .. ".4h}, [" .. b .. "]")
  ctx:wline("fcvtl " .. v4s(d[1]) .. ", v" .. n(d[1]) .. ".4h")
  copies(ctx, d)
end

-- Raw pairs -> f32: the even halfword moved up (TRN1 with zero halfwords: lane l = (h[2l], 0)
-- read as 32 bits), the odd one kept (TRN2: (h[2l+1], 0)); without a held zero register, a shift
-- and a mask.
function ops.bf16_even(ctx, op)
  local d, r, z = ctx:regs(op.dst), ctx:regs(op.src[1]), ctx:kreg(op, K_ZERO)
  for p = 1, 4 do
    if z then
      ctx:wline("trn1 v" .. n(d[p]) .. ".8h, v" .. n(z) .. ".8h, v" .. n(r[p]) .. ".8h")
    else
      ctx:wline("shl " .. v4s(d[p]) .. ", " .. v4s(r[p]) .. ", #16")
    end
  end
end

function ops.bf16_odd(ctx, op)
  local d, r, z = ctx:regs(op.dst), ctx:regs(op.src[1]), ctx:kreg(op, K_ZERO)
  if not z then ctx:wline("mvni " .. v4s(T0) .. ", #0xff, msl #8") end      -- 0xffff0000
  for p = 1, 4 do
    if z then
      ctx:wline("trn2 v" .. n(d[p]) .. ".8h, v" .. n(z) .. ".8h, v" .. n(r[p]) .. ".8h")
    else
      ctx:wline("and " .. v16b(d[p]) .. ", " .. v16b(r[p]) .. ", " .. v16b(T0))
    end
  end
end

-- Raw pairs from two rounded vectors: TRN2 on halfwords takes the high half of each 32-bit lane
-- of the first operand, then of the second.
function ops.bf16_pairs(ctx, op)
  local d, e, o = ctx:regs(op.dst), ctx:regs(op.src[1]), ctx:regs(op.src[2])
  local nw = ctx.narrow or {}
  if nw[op.src[1]] or nw[op.src[2]] then
    if not (nw[op.src[1]] and nw[op.src[2]]) then error("internal: bf16_pairs of a narrowed and a lane-form value") end
    -- halfwords e0..e15, o0..o15 interleaved by ZIP1/ZIP2 of each half. d may be e or o (REUSE,
    -- index for index): the second halves first (into d[3], d[4], which no source occupies),
    -- then d[2] (e[2], o[2] read by then), then d[1] (may be e[1] or o[1]: its last read)
    local function zip(ins, dd, a, b)
      ctx:wline(ins .. " v" .. n(dd) .. ".8h, v" .. n(a) .. ".8h, v" .. n(b) .. ".8h")
    end
    zip("zip1", d[3], e[2], o[2]); zip("zip2", d[4], e[2], o[2])
    zip("zip2", d[2], e[1], o[1]); zip("zip1", d[1], e[1], o[1])
    return
  end
  for p = 1, 4 do
    ctx:wline("trn2 v" .. n(d[p]) .. ".8h, v" .. n(e[p]) .. ".8h, v" .. n(o[p]) .. ".8h")
  end
end

-- Even or odd elements of the 32 in (a, b): UZP1 / UZP2 of neighbouring q registers.
local function uzp(ins)
  return function(ctx, op)
    local d, a, b = ctx:regs(op.dst), ctx:regs(op.src[1]), ctx:regs(op.src[2])
    local srcs = { { a[1], a[2] }, { a[3], a[4] }, { b[1], b[2] }, { b[3], b[4] } }
    for p = 1, 4 do
      ctx:wline(ins .. " " .. v4s(d[p]) .. ", " .. v4s(srcs[p][1]) .. ", " .. v4s(srcs[p][2]))
    end
  end
end
ops.uzp_even, ops.uzp_odd = uzp("uzp1"), uzp("uzp2")

local function binary(ins)
  return function(ctx, op)
    local d, a, b = ctx:regs(op.dst), ctx:regs(op.src[1]), ctx:regs(op.src[2])
    for _, p in ipairs(distinct(d)) do ctx:wline(ins .. " " .. v4s(d[p]) .. ", " .. v4s(a[p]) .. ", " .. v4s(b[p])) end
  end
end

-- a product with a class e operand: part p times that register's lane p - 1, by element
local function mul_by_element(ctx, op)
  local e1, e2 = M.class_of(op.src[1]) == "e", M.class_of(op.src[2]) == "e"
  if not (e1 or e2) then return false end
  if e1 and e2 then error("internal: vmul of two class e values") end
  local d, a, e = ctx:regs(op.dst), ctx:regs(op.src[e1 and 2 or 1]), ctx:regs(op.src[e1 and 1 or 2])[1]
  for p = 1, 4 do
    ctx:wline("fmul " .. v4s(d[p]) .. ", " .. v4s(a[p]) .. ", v" .. n(e) .. ".s[" .. C.int(p - 1) .. "]")
  end
  return true
end
ops.vadd = binary("fadd")
do
  local plain = binary("fmul")
  function ops.vmul(ctx, op)
    if not mul_by_element(ctx, op) then plain(ctx, op) end
  end
end
ops.vsub = binary("fsub")
ops.vdiv = binary("fdiv")
ops.viadd = binary("add")
ops.visub = binary("sub")
ops.vimin = binary("smin")
ops.vimax = binary("smax")
ops.vigt = binary("cmgt")         -- signed a > b: all ones, else 0

local function bitwise(ins)
  return function(ctx, op)
    local d, a, b = ctx:regs(op.dst), ctx:regs(op.src[1]), ctx:regs(op.src[2])
    for p = 1, #d do ctx:wline(ins .. " " .. v16b(d[p]) .. ", " .. v16b(a[p]) .. ", " .. v16b(b[p])) end
  end
end
ops.vand, ops.vor, ops.vxor = bitwise("and"), bitwise("orr"), bitwise("eor")

local function shift(ins)
  return function(ctx, op)
    local d, a = ctx:regs(op.dst), ctx:regs(op.src[1])
    for p = 1, #d do ctx:wline(ins .. " " .. v4s(d[p]) .. ", " .. v4s(a[p]) .. ", " .. imm(op.attr.imm)) end
  end
end
ops.vishl, ops.visra = shift("shl"), shift("sshr")

-- bytes shifted right logically: USHR on .16b
function ops.vushr8(ctx, op)
  local d, a = ctx:regs(op.dst), ctx:regs(op.src[1])
  for p = 1, #d do ctx:wline("ushr " .. v16b(d[p]) .. ", " .. v16b(a[p]) .. ", " .. imm(op.attr.imm)) end
end

local function unary(ins)
  return function(ctx, op)
    local d, a = ctx:regs(op.dst), ctx:regs(op.src[1])
    for p = 1, #d do ctx:wline(ins .. " " .. v4s(d[p]) .. ", " .. v4s(a[p])) end
  end
end
ops.vrint = unary("frintn")      -- ties to even, whatever FPCR says
ops.vcvt_f2i = unary("fcvtzs")
ops.vcvt_i2f = unary("scvtf")

-- min(a, b) = a < b ? a : b (NaN or equal -> b), the x86 (v)minps rule; FMIN differs.
function ops.vmin(ctx, op)
  local d, a, b = ctx:regs(op.dst), ctx:regs(op.src[1]), ctx:regs(op.src[2])
  for p = 1, #d do
    ctx:wline("fcmgt " .. v4s(d[p]) .. ", " .. v4s(b[p]) .. ", " .. v4s(a[p]))
    ctx:wline("bsl " .. v16b(d[p]) .. ", " .. v16b(a[p]) .. ", " .. v16b(b[p]))
  end
end

local function zip(half)
  return function(ctx, op)
    local d, a, b, g = ctx:regs(op.dst), ctx:regs(op.src[1]), ctx:regs(op.src[2]), op.attr.g
    local a1, a2, b1, b2 = a[2 * half + 1], a[2 * half + 2], b[2 * half + 1], b[2 * half + 2]
    if g == 1 or g == 2 then
      local t = g == 1 and ".4s" or ".2d"
      local function z(ins, dd, x, y)
        ctx:wline(ins .. " v" .. n(dd) .. t .. ", v" .. n(x) .. t .. ", v" .. n(y) .. t)
      end
      z("zip1", d[1], a1, b1)
      z("zip2", d[2], a1, b1)
      z("zip1", d[3], a2, b2)
      z("zip2", d[4], a2, b2)
      return
    end
    local src = g == 4 and { a1, b1, a2, b2 } or { a1, a2, b1, b2 }
    for p = 1, 4 do ctx:wline("mov " .. v16b(d[p]) .. ", " .. v16b(src[p])) end
  end
end
ops.vzip_lo, ops.vzip_hi = zip(0), zip(1)

-- Chunks of 4 lanes are the q registers: a 128-bit shuffle is four register moves; the moves
-- within a chunk are ZIP1/ZIP2 (on .4s or .2d) and UZP1/UZP2 per register.
function ops.vsel128(ctx, op)
  local d, a, b, sel = ctx:regs(op.dst), ctx:regs(op.src[1]), ctx:regs(op.src[2]), op.attr.imm
  local src = { a[sel % 4 + 1], a[math.floor(sel / 4) % 4 + 1], b[math.floor(sel / 16) % 4 + 1],
                b[math.floor(sel / 64) % 4 + 1] }
  for _, p in ipairs(distinct(d)) do
    if d[p] ~= src[p] then ctx:wline("mov " .. v16b(d[p]) .. ", " .. v16b(src[p])) end
  end
end

local function in_chunks(ins, arr)
  return function(ctx, op)
    local d, a, b = ctx:regs(op.dst), ctx:regs(op.src[1]), ctx:regs(op.src[2])
    local t = arr or (op.attr.g == 1 and ".4s" or ".2d")
    for p = 1, 4 do ctx:wline(ins .. " v" .. n(d[p]) .. t .. ", v" .. n(a[p]) .. t .. ", v" .. n(b[p]) .. t) end
  end
end
ops.vunpk_lo, ops.vunpk_hi = in_chunks("zip1"), in_chunks("zip2")
ops.vuzp4_even, ops.vuzp4_odd = in_chunks("uzp1", ".4s"), in_chunks("uzp2", ".4s")

-- A 16-entry lookup: the table's 64 bytes in the scratch v28-v31 (TBL's four-register list), and
-- per part the byte indices 4 (idx & 15) + 0..3 of each lane (SHL/USHR: the low 4 bits times 4;
-- SLI: that byte in all four; ORR: + 1, 2, 3 in bytes 1-3, whose low 2 bits are clear), one TBL.
function ops.vlut16(ctx, op)
  local d, tab, idx = ctx:regs(op.dst), ctx:regs(op.src[1]), ctx:regs(op.src[2])
  local tt = { T0, T1, T2, T3 }
  for p = 1, 4 do ctx:wline("mov " .. v16b(tt[p]) .. ", " .. v16b(tab[p])) end
  for p = 1, 4 do
    local r = v4s(d[p])
    ctx:wline("shl " .. r .. ", " .. v4s(idx[p]) .. ", #28")
    ctx:wline("ushr " .. r .. ", " .. r .. ", #26")
    ctx:wline("sli " .. r .. ", " .. r .. ", #8")
    ctx:wline("sli " .. r .. ", " .. r .. ", #16")
    for b = 1, 3 do ctx:wline("orr " .. r .. ", " .. imm(b) .. ", lsl #" .. C.int(8 * b)) end
    ctx:wline("tbl " .. v16b(d[p]) .. ", {" .. v16b(T0) .. ", " .. v16b(T1) .. ", " .. v16b(T2) .. ", " ..
              v16b(T3) .. "}, " .. v16b(d[p]))
  end
end

-- lanes reversed: each q register reversed (REV64 then EXT by 8 bytes), the registers in
-- reverse order
function ops.vrev(ctx, op)
  local d, a = ctx:regs(op.dst), ctx:regs(op.src[1])
  for p = 1, 4 do
    ctx:wline("rev64 " .. v4s(d[p]) .. ", " .. v4s(a[5 - p]))
    ctx:wline("ext " .. v16b(d[p]) .. ", " .. v16b(d[p]) .. ", " .. v16b(d[p]) .. ", #8")
  end
end

-- A table of 16 words as a vector: its address in the scratch x16, four q registers from there.
function ops.vtable(ctx, op)
  const_addr(ctx, "x16", ctx:const("t_" .. op.attr.table.name, op.attr.table.words))
  load4(ctx, ctx:regs(op.dst))
end

function ops.const_addr(ctx, op)
  const_addr(ctx, ctx:reg(op.dst), ctx:const("t_" .. op.attr.table.name, op.attr.table.words))
end

function ops.load_bcast_f32(ctx, op)
  local d = ctx:regs(op.dst)
  local b = exact_addr(ctx, op, 4)
  ctx:wline("ld1r {v" .. n(d[1]) .. ".4s}, [" .. b .. "]")
  copies(ctx, d)
end

function ops.vconst(ctx, op)
  local d = ctx:regs(op.dst)
  materialize(ctx, d[1], op.attr.bits)
  copies(ctx, d)
end

-- max(a, b) = a > b ? a : b (NaN or equal -> b), the x86 (v)maxps rule; FMAX differs.
function ops.vmax(ctx, op)
  local d, a, b = ctx:regs(op.dst), ctx:regs(op.src[1]), ctx:regs(op.src[2])
  for p = 1, #d do
    ctx:wline("fcmgt " .. v4s(d[p]) .. ", " .. v4s(a[p]) .. ", " .. v4s(b[p]))
    ctx:wline("bsl " .. v16b(d[p]) .. ", " .. v16b(a[p]) .. ", " .. v16b(b[p]))
  end
end

-- The sign bit flipped (FNEG: exact, NaN payloads kept).
function ops.vneg(ctx, op)
  local d, a = ctx:regs(op.dst), ctx:regs(op.src[1])
  for p = 1, #d do ctx:wline("fneg " .. v4s(d[p]) .. ", " .. v4s(a[p])) end
end

function ops.vfma(ctx, op)
  local d, a, b, c = ctx:regs(op.dst), ctx:regs(op.src[1]), ctx:regs(op.src[2]), ctx:regs(op.src[3])
  for p = 1, #d do
    if d[p] ~= c[p] then ctx:wline("mov " .. v16b(d[p]) .. ", " .. v16b(c[p])) end
    ctx:wline("fmla " .. v4s(d[p]) .. ", " .. v4s(a[p]) .. ", " .. v4s(b[p]))
  end
end

-- Integer RNE to bf16 in the high half of each lane of q register d, from q register v (d may be
-- v: REUSE): u + 0x7fff + ((u >> 16) & 1), as CMTST (-1 where bit 16 is set), SUB (so +1), ADD
-- (the bias); NaN lanes (FCMEQ v, v false) take the canonical quiet NaN 0x7fc00000 by BSL;
-- `clear` zeroes the low half (vrne, srne: TRN2 with the zero register; rne_store leaves it).
-- 5 instructions per 4 lanes (6 with the clear), every one on either vector pipe of the cores
-- the census models (no shift: N2 issues those on one pipe only), the four constants held in
-- registers for a loop.
local function rne_consts(ctx, op)
  return { b16 = konst(ctx, op, K_B16, T2), bias = konst(ctx, op, K_BIAS, T3),
           nan = konst(ctx, op, K_NAN, T1), zero = ctx:kreg(op, K_ZERO) }
end

local function rne(ctx, k, d, v, clear)
  ctx:wline("cmtst " .. v4s(T0) .. ", " .. v4s(v) .. ", " .. v4s(k.b16))
  ctx:wline("sub " .. v4s(T0) .. ", " .. v4s(v) .. ", " .. v4s(T0))
  ctx:wline("add " .. v4s(T0) .. ", " .. v4s(T0) .. ", " .. v4s(k.bias))
  -- v's last read: d may be v
  ctx:wline("fcmeq " .. v4s(d) .. ", " .. v4s(v) .. ", " .. v4s(v))   -- all ones unless NaN
  ctx:wline("bsl " .. v16b(d) .. ", " .. v16b(T0) .. ", " .. v16b(k.nan))
  if not clear then return end
  if k.zero then     -- the high halfwords kept, zeros below them (TRN2 with the zero register)
    ctx:wline("trn2 v" .. n(d) .. ".8h, v" .. n(k.zero) .. ".8h, v" .. n(d) .. ".8h")
  else
    ctx:wline("bic " .. v4s(d) .. ", #0xff")
    ctx:wline("bic " .. v4s(d) .. ", #0xff, lsl #8")
  end
end

-- The bfcvt variant's RNE: BFCVTN and BFCVTN2 round 8 lanes into 8 halfwords (RNE under the
-- default FPCR: no flush, no default NaN, which readiness checks); bfcvt_canon then makes a NaN
-- halfword (|h| > 0x7f80: AND, CMHI) 0x7fc0 (BIT). vrne and srne (bfcvt_rne) put the halfwords back
-- in the high halves of the lanes over zero halfwords (ZIP1/ZIP2); vrne_st leaves them narrowed
-- (bfcvt_narrow). 7 instructions per 8 lanes (5 narrowed); BFCVTN issues on one vector pipe of N2,
-- the others on either.
local function h8(r) return "v" .. n(r) .. ".8h" end

local function bfcvt_canon(ctx, op, r)
  ctx:wline("and " .. v16b(T1) .. ", " .. v16b(r) .. ", " .. v16b(konst(ctx, op, K_ABS16, T2)))
  ctx:wline("cmhi " .. h8(T1) .. ", " .. h8(T1) .. ", " .. h8(konst(ctx, op, K_INF16, T3)))
  ctx:wline("bit " .. v16b(r) .. ", " .. v16b(konst(ctx, op, K_NAN16, T2)) .. ", " .. v16b(T1))
end

-- parts a, b (b nil: a alone) into d1, d2 (nil: only d1), rounded in T0
local function bfcvt_rne(ctx, op, d1, d2, a, b)
  ctx:wline("bfcvtn v" .. n(T0) .. ".4h, " .. v4s(a))
  if b then ctx:wline("bfcvtn2 " .. h8(T0) .. ", " .. v4s(b)) end
  bfcvt_canon(ctx, op, T0)
  local zero = konst(ctx, op, K_ZERO, T3)
  ctx:wline("zip1 " .. h8(d1) .. ", " .. h8(zero) .. ", " .. h8(T0))
  if d2 then ctx:wline("zip2 " .. h8(d2) .. ", " .. h8(zero) .. ", " .. h8(T0)) end
end

-- vrne_st on bfcvt leaves its value narrowed: parts 1, 2 hold the 16 rounded halfwords in
-- order (8 each), parts 3, 4 nothing. Its readers (NARROW_READERS) know it; any other op
-- reading it is an internal error (checked as the ops lower: the wrappers at the end).
local function bfcvt_narrow(ctx, op)
  local d, v = ctx:regs(op.dst), ctx:regs(op.src[1])
  for p = 1, 2 do
    -- d may be v (REUSE, index for index): d[1] = v[1] is written by the BFCVTN reading it, and
    -- d[2] = v[2] only after the first pair's BFCVTN2 has read it
    ctx:wline("bfcvtn v" .. n(d[p]) .. ".4h, " .. v4s(v[2 * p - 1]))
    ctx:wline("bfcvtn2 " .. h8(d[p]) .. ", " .. v4s(v[2 * p]))
  end
  for p = 1, 2 do bfcvt_canon(ctx, op, d[p]) end
  ctx.narrow = ctx.narrow or {}
  ctx.narrow[op.dst] = true
end

function ops.vrne(ctx, op)
  local d, v = ctx:regs(op.dst), ctx:regs(op.src[1])
  if ctx.variant.name == "bfcvt" then
    for p = 1, 3, 2 do bfcvt_rne(ctx, op, d[p], d[p + 1], v[p], v[p + 1]) end
    return
  end
  local k = rne_consts(ctx, op)
  for p = 1, 4 do rne(ctx, k, d[p], v[p], true) end
end

-- the same, the low half left as it is (its only readers take the high half)
function ops.vrne_st(ctx, op)
  if ctx.variant.name == "bfcvt" then return bfcvt_narrow(ctx, op) end
  local d, v, k = ctx:regs(op.dst), ctx:regs(op.src[1]), rne_consts(ctx, op)
  for p = 1, 4 do rne(ctx, k, d[p], v[p], false) end
end

function ops.srne(ctx, op)
  if ctx.variant.name == "bfcvt" then
    return bfcvt_rne(ctx, op, ctx:reg(op.dst), nil, ctx:reg(op.src[1]), nil)
  end
  rne(ctx, rne_consts(ctx, op), ctx:reg(op.dst), ctx:reg(op.src[1]), true)
end

-- The constants an op reads from registers when its loop holds them (gen/kregs.lua): RNE's,
-- and the zero register of the widenings (TRN and ZIP with zero halfwords).
function M.constants(op, variant)
  local o = op.op
  if variant and variant.name == "bfcvt" and (o == "vrne" or o == "srne" or o == "vrne_st") then
    return o == "vrne_st" and { K_ABS16, K_INF16, K_NAN16 } or { K_ABS16, K_INF16, K_NAN16, K_ZERO }
  end
  if o == "vrne" or o == "srne" then return { K_B16, K_BIAS, K_NAN, K_ZERO } end
  if o == "vrne_st" then return { K_B16, K_BIAS, K_NAN } end
  if o == "bf16_even" or o == "bf16_odd" or (o == "load_bf16" and not op.lanes) then return { K_ZERO } end
  return nil
end

function ops.kconst(ctx, op)
  materialize(ctx, ctx:reg(op.dst), op.attr.bits)
end

-- The canonical NaN: NaN lanes become 0x7fc00000 (T1), the others are kept. FCMEQ x, x is all
-- ones unless x is a NaN; d may be v (then the mask waits in T0 and BIF inserts T1 where it is
-- zero), else the mask is built in d and BSL selects.
local function canon_const(ctx)
  ctx:wline("movi " .. v4s(T1) .. ", #0x7f, lsl #24")
  ctx:wline("orr " .. v4s(T1) .. ", #0xc0, lsl #16")                 -- 0x7fc00000
end

local function canon(ctx, d, v)
  if d == v then
    ctx:wline("fcmeq " .. v4s(T0) .. ", " .. v4s(v) .. ", " .. v4s(v))
    ctx:wline("bif " .. v16b(d) .. ", " .. v16b(T1) .. ", " .. v16b(T0))
  else
    ctx:wline("fcmeq " .. v4s(d) .. ", " .. v4s(v) .. ", " .. v4s(v))
    ctx:wline("bsl " .. v16b(d) .. ", " .. v16b(v) .. ", " .. v16b(T1))
  end
end

function ops.vcanon(ctx, op)
  local d, v = ctx:regs(op.dst), ctx:regs(op.src[1])
  canon_const(ctx)
  for p = 1, 4 do canon(ctx, d[p], v[p]) end
end

function ops.scanon(ctx, op)
  canon_const(ctx)
  canon(ctx, ctx:reg(op.dst), ctx:reg(op.src[1]))
end

-- Raw bf16 pairs: every NaN halfword becomes 0x7fc0 (T1), the others are kept. h << 1 above
-- 0xff00 (T0; CMHI: unsigned) is a NaN; the mask is built in d (BSL selects) or, when d is v,
-- in T2 (BIT inserts T1 where it is set).
function ops.vcanon_raw(ctx, op)
  local d, v = ctx:regs(op.dst), ctx:regs(op.src[1])
  local function v8h(r) return "v" .. n(r) .. ".8h" end
  ctx:wline("movi " .. v8h(T0) .. ", #0xff, lsl #8")                  -- 0xff00
  ctx:wline("movi " .. v8h(T1) .. ", #0x7f, lsl #8")
  ctx:wline("orr " .. v8h(T1) .. ", #0xc0")                          -- 0x7fc0
  for p = 1, 4 do
    local m = d[p] == v[p] and T2 or d[p]
    ctx:wline("shl " .. v8h(m) .. ", " .. v8h(v[p]) .. ", #1")
    ctx:wline("cmhi " .. v8h(m) .. ", " .. v8h(m) .. ", " .. v8h(T0))
    if m == T2 then
      ctx:wline("bit " .. v16b(d[p]) .. ", " .. v16b(T1) .. ", " .. v16b(T2))
    else
      ctx:wline("bsl " .. v16b(d[p]) .. ", " .. v16b(T1) .. ", " .. v16b(v[p]))
    end
  end
end

function ops.bcast(ctx, op)
  local src, d = ctx:reg(op.src[1]), ctx:regs(op.dst)
  ctx:wline("dup " .. v4s(d[1]) .. ", v" .. n(src) .. ".s[0]")
  copies(ctx, d)
end

-- acc = a > acc ? a : acc (NaN or equal -> acc, the x86 (v)maxps rule), in place.
function ops.max_acc(ctx, op)
  local acc, a = ctx:regs(op.src[1]), ctx:regs(op.src[2])
  for p = 1, #acc do
    ctx:wline("fcmgt " .. v4s(T0) .. ", " .. v4s(a[p]) .. ", " .. v4s(acc[p]))
    ctx:wline("bit " .. v16b(acc[p]) .. ", " .. v16b(a[p]) .. ", " .. v16b(T0))
  end
end

-- Halving tree by the vmax rule: lane i = (lane i > lane i + s) ? lane i : lane i + s for
-- s = 8, 4, 2, 1 (FMAX/FMAXP differ on NaN: compare and select).
function ops.reduce_max(ctx, op)
  local v, d = ctx:regs(op.src[1]), ctx:reg(op.dst)
  local function sel(dst, a, b, w)
    local t = w == 4 and ".4s" or ".2s"
    local bt = w == 4 and ".16b" or ".8b"
    ctx:wline("fcmgt v" .. n(dst) .. t .. ", v" .. n(a) .. t .. ", v" .. n(b) .. t)
    ctx:wline("bsl v" .. n(dst) .. bt .. ", v" .. n(a) .. bt .. ", v" .. n(b) .. bt)
  end
  sel(T0, v[1], v[3], 4)
  sel(T1, v[2], v[4], 4)
  sel(d, T0, T1, 4)
  ctx:wline("ext " .. v16b(T0) .. ", " .. v16b(d) .. ", " .. v16b(d) .. ", #8")
  sel(T1, d, T0, 2)
  ctx:wline("ext v" .. n(T0) .. ".8b, v" .. n(T1) .. ".8b, v" .. n(T1) .. ".8b, #4")
  ctx:wline("fcmgt " .. s(d) .. ", " .. s(T1) .. ", " .. s(T0))
  ctx:wline("bsl v" .. n(d) .. ".8b, v" .. n(T1) .. ".8b, v" .. n(T0) .. ".8b")
end

-- Halving tree: lane i += lane i + s for s = 8, 4, 2, 1; lower lanes are the first operand.
function ops.reduce_add(ctx, op)
  local v, d = ctx:regs(op.src[1]), ctx:reg(op.dst)
  ctx:wline("fadd " .. v4s(T0) .. ", " .. v4s(v[1]) .. ", " .. v4s(v[3]))
  ctx:wline("fadd " .. v4s(T1) .. ", " .. v4s(v[2]) .. ", " .. v4s(v[4]))
  ctx:wline("fadd " .. v4s(d) .. ", " .. v4s(T0) .. ", " .. v4s(T1))
  ctx:wline("ext " .. v16b(T0) .. ", " .. v16b(d) .. ", " .. v16b(d) .. ", #8")
  ctx:wline("fadd v" .. n(d) .. ".2s, v" .. n(d) .. ".2s, v" .. n(T0) .. ".2s")
  ctx:wline("faddp " .. s(d) .. ", v" .. n(d) .. ".2s")
end

-- The halving tree over lanes 8 half .. 8 half + 7 (parts 2 half + 1, 2 half + 2): reduce_add's
-- last three levels.
function ops.reduce_add8(ctx, op)
  local v, d, p = ctx:regs(op.src[1]), ctx:reg(op.dst), 2 * op.attr.half
  ctx:wline("fadd " .. v4s(d) .. ", " .. v4s(v[p + 1]) .. ", " .. v4s(v[p + 2]))
  ctx:wline("ext " .. v16b(T0) .. ", " .. v16b(d) .. ", " .. v16b(d) .. ", #8")
  ctx:wline("fadd v" .. n(d) .. ".2s, v" .. n(d) .. ".2s, v" .. n(T0) .. ".2s")
  ctx:wline("faddp " .. s(d) .. ", v" .. n(d) .. ".2s")
end

local function sbinary(ins)
  return function(ctx, op)
    ctx:wline(ins .. " " .. s(ctx:reg(op.dst)) .. ", " .. s(ctx:reg(op.src[1])) .. ", " .. s(ctx:reg(op.src[2])))
  end
end
ops.sadd = sbinary("fadd")

function ops.sadd_acc(ctx, op)
  local acc = s(ctx:reg(op.src[1]))
  ctx:wline("fadd " .. acc .. ", " .. acc .. ", " .. s(ctx:reg(op.src[2])))
end
ops.smul = sbinary("fmul")
ops.sdiv = sbinary("fdiv")

function ops.ssqrt(ctx, op)
  ctx:wline("fsqrt " .. s(ctx:reg(op.dst)) .. ", " .. s(ctx:reg(op.src[1])))
end

function ops.vset(ctx, op)
  local d, v = ctx:regs(op.src[1]), ctx:regs(op.src[2])
  for p = 1, 4 do
    if d[p] ~= v[p] then ctx:wline("mov " .. v16b(d[p]) .. ", " .. v16b(v[p])) end
  end
end

-- Stack slots: 64 bytes each at sp (the frame reserves them, M.begin).
local function slot_at(ctx, op)
  local o = 64 * op.attr.slot
  if o + 32 <= 1008 then return "[sp, " .. imm(o) .. "]", "[sp, " .. imm(o + 32) .. "]" end
  add_imm(ctx, "x16", "sp", o)
  return "[x16]", "[x16, #32]"
end

function ops.spill(ctx, op)
  local v = ctx:regs(op.src[1])
  local a, b = slot_at(ctx, op)
  ctx:wline("stp " .. q(v[1]) .. ", " .. q(v[2]) .. ", " .. a)
  ctx:wline("stp " .. q(v[3]) .. ", " .. q(v[4]) .. ", " .. b)
end

function ops.reload(ctx, op)
  local d = ctx:regs(op.dst)
  local a, b = slot_at(ctx, op)
  ctx:wline("ldp " .. q(d[1]) .. ", " .. q(d[2]) .. ", " .. a)
  ctx:wline("ldp " .. q(d[3]) .. ", " .. q(d[4]) .. ", " .. b)
end

-- Lane `lane` of a slot, broadcast from memory (LD1R).
function ops.reload_bcast(ctx, op)
  local d = ctx:regs(op.dst)
  add_imm(ctx, "x16", "sp", 64 * op.attr.slot + 4 * op.attr.lane)
  ctx:wline("ld1r {v" .. n(d[1]) .. ".4s}, [x16]")
  copies(ctx, d)
end

-- Loops -------------------------------------------------------------------------------------

function ops.for_rows(ctx, op)
  local r, first, last = ctx:reg(op.attr.ivar), ctx:reg(op.src[1]), ctx:reg(op.src[2])
  local g = op.attr.group
  local lg, ls, le = ctx:new_label("rows"), ctx:new_label("row"), ctx:new_label("rows_end")
  ctx:wline("mov " .. r .. ", " .. first)
  ctx:wlabel(lg)
  ctx:wline("add x16, " .. r .. ", " .. imm(g))
  ctx:wline("cmp x16, " .. last)
  ctx:wline("b.gt " .. (g > 1 and ls or le))
  ctx.depth = (ctx.depth or 0) + 1   -- (an enclosing loop's pointers are not moved in here)
  ctx:lower(op.attr.grouped)
  ctx:wline("add " .. r .. ", " .. r .. ", " .. imm(g))
  ctx:wline("b " .. lg)
  if g > 1 then
    ctx:wlabel(ls)
    ctx:wline("cmp " .. r .. ", " .. last)
    ctx:wline("b.ge " .. le)
    ctx:lower(op.attr.single)
    ctx:wline("add " .. r .. ", " .. r .. ", #1")
    ctx:wline("b " .. ls)
  end
  ctx:wlabel(le)
  ctx.depth = ctx.depth - 1
end

-- Full tiles in a bottom-tested loop (one taken branch per tile), then the tail.
function ops.for_tiles(ctx, op)
  local i, cnt, rem = ctx:reg(op.attr.ivar), ctx:reg(op.src[1]), ctx:reg(op.attr.rem)
  local tile = op.attr.tile
  local lt, lc, ltail, le = ctx:new_label("tiles"), ctx:new_label("tiles_check"), ctx:new_label("tail"),
                            ctx:new_label("tiles_end")
  ctx:wline("mov " .. i .. ", " .. (op.attr.start and ctx:reg(op.src[2]) or "#0"))
  ctx:wline("b " .. lc)
  ctx:wraw("    .p2align 4")
  ctx:wlabel(lt)
  ctx:mca_begin(op)
  -- pointers bumped per tile (gen/bump.lua): moved mid-body where an offset needs it, the rest of
  -- the tile's bytes at the back edge
  local saved = ctx.disp
  ctx.disp = setmetatable({}, { __index = saved })
  ctx.depth = (ctx.depth or 0) + 1
  for _, bp in ipairs(op.attr.bumps or {}) do ctx.disp[bp.value] = { d = 0, depth = ctx.depth } end
  ctx:lower(op.attr.full)
  for _, bp in ipairs(op.attr.bumps or {}) do
    local r = ctx:reg(bp.value)
    add_imm(ctx, r, r, bp.bytes - ctx.disp[bp.value].d)
    ctx.disp[bp.value].d = 0
  end
  ctx:wline("add " .. i .. ", " .. i .. ", " .. imm(tile))
  ctx:wlabel(lc)
  ctx:wline("add x16, " .. i .. ", " .. imm(tile))
  ctx:wline("cmp x16, " .. cnt)
  ctx:wline("b.le " .. lt)
  ctx:mca_end(op)
  ctx:wlabel(ltail)
  ctx.depth = ctx.depth + 1          -- the tail reads the pointers, never moves them
  if not op.attr.whole then
    ctx:wline("subs " .. rem .. ", " .. cnt .. ", " .. i)
    ctx:wline("b.le " .. le)
    ctx:lower(op.attr.tail)
    ctx:wlabel(le)
  end
  ctx.depth = ctx.depth - 2
  ctx.disp = saved
end

-- Dispatch: compare and branch to each arm; no arm for other values.
function ops.cases(ctx, op)
  local v, done = ctx:reg(op.src[1]), ctx:new_label("cases_end")
  for _, arm in ipairs(op.attr.arms) do
    local next_ = ctx:new_label("case")
    ctx:wline("cmp " .. v .. ", " .. imm(arm.value))
    ctx:wline("b.ne " .. next_)
    ctx.depth = (ctx.depth or 0) + 1
    ctx:lower(arm.body)
    ctx.depth = ctx.depth - 1
    ctx:wline("b " .. done)
    ctx:wlabel(next_)
  end
  ctx:wlabel(done)
end

-- A value bfcvt's vrne_st left narrowed is read only by the ops that know its layout; a class e
-- value (M.class_of) only by vmul.
for name, hook in pairs(ops) do
  local narrow_ok, e_ok = NARROW_READERS[name], E_READERS[name]
  ops[name] = function(ctx, op)
    for _, v in ipairs(op.src or {}) do
      if not narrow_ok and ctx.narrow and ctx.narrow[v] then
        error("internal: op " .. name .. " reads a narrowed vrne_st value (bfcvt)")
      end
      if not e_ok and type(v) == "table" and v.type == "v" and M.class_of(v) == "e" then
        error("internal: op " .. name .. " reads a class e value (load_f16x4q: only vmul reads it by element)")
      end
    end
    return hook(ctx, op)
  end
end
return M
