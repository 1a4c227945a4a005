-- gen/isa/x86_64.lua: the x86_64 backend (SysV ABI, Intel syntax).
--
-- Variants: avx2 (AVX2 + FMA: a canonical vector is a ymm pair), avx512 (AVX-512 F/BW/VL: one
-- zmm), avx512bf16 (the fast tier: avx512 plus VDPBF16PS) and avx512vnni (the quantized forms'
-- fast tier: avx512 plus VPDPBUSD). Hooks are named after IR ops
-- (gen/ir.lua, ORDER OP) and are the same set as gen/isa/aarch64.lua's.
--
-- Lowering conventions:
--   * a bf16 value lives in the high half of an f32 lane (low half zero), so widening is a
--     shift and RNE results feed f32 math directly;
--   * tail lanes are never touched in memory: AVX-512 masks (k7, computed per op) suppress
--     faults, AVX2 uses vmaskmovps for f32 and lane-by-lane inserts/extracts for 16-bit data;
--   * rax, the top vector registers, k6 and k7 are scratch, outside the allocator.

local C = require("compat")

local M = {
  isa = "x86_64",
  abi = "SysV x86-64",
  comment = "//",
  -- gen/bump.lua: a packed stream's index (i * c) costs an imul per tile, on a port the FMAs'
  -- loads share in llvm-mca's Intel models (bench/results/gemm-analysis.md); the quantized
  -- records' ((i * 9) >> 2: six integer ops per tile) held the fast q4 GEMV near 0.85 of the
  -- read probe on an Intel core (bench/results/quant-fast-analysis.md)
  bump_pointers = true,
}

-- tuning: the schedule parameters templates read (gen/dsl.lua TUNING says what each means); with
-- 16 ymm registers a canonical vector takes two, so AVX2 keeps little live; AVX-512's 32 zmm hold
-- whole row groups.
-- int8_dot: the integer dot product a variant has (avx512vnni: VPDPBUSD, unsigned x signed bytes)
-- stream_hw: the core's choice (bench/results/quant-fast-analysis.md), so two variants of the same
-- bits: on Zen 4 a lone row's q8 pass over one group whose records and compact slots fit 28 KiB of
-- the 32 KiB L1 (k <= 5312) streams at 0.93-1.05 of the read probe with the hardware prefetcher
-- alone, 0.76-0.93 with the software prefetch (which, once it covers every line, holds the stream to
-- what the L1 miss buffers keep in flight; past 28 KiB the slots leave L1 between uses and the
-- hardware stream falls behind): avx512vnnihw, picked where the hwstream trait is detected; on an
-- Intel Xeon core the same pass streams at 0.79-0.82 without the software prefetch and 0.90-0.92
-- with it: avx512vnni (stream_hw = 0), every other core
-- lone_compact: avxvnni's seven ymm pairs cannot hold a lone row's correction beside a pass, so it
-- reads the full slot
-- stream_ahead: the core's choice too. Every line of a weight stream's records prefetched (into L2)
-- about 2 KiB ahead of its reads measured 4-16% faster from DRAM on an Intel Xeon core, every
-- quantized fast variant, than 8192 k ahead (q8 34 KiB, q4 18 KiB; bench/results/quant-fast-analysis.md),
-- and the exact q8 6-15%, q4 3-4% (compute-bound): 2176 bytes (q8 8 records, q4 16). avx512vnnihw
-- keeps 18432 (q4's 18 KiB as measured on Zen 4, where q8's 18.4 and 34.8 KiB measured alike)
local STREAM_AHEAD = 2176
-- lone_groups: the core's choice too. A lone row's q8 or q4 pass over two weight groups at once (two
-- streams, a group from each half of the rows) measured 2-9% faster from DRAM than one group on an
-- Intel Xeon core; two adjacent groups measured 3-10% (q8) and 3-12% (q4) slower on Zen 4 (the halves
-- are not measured there): avx512vnni 2, avx512vnnihw 1; the ymm variants 1 (registers)
-- exact_groups: the exact q8 pass for a lone row over two groups (halves; k in pieces, half the
-- chains at a time, the other half's sums parked in stack slots) read 0.97-1.04 of the probe from
-- DRAM on an Intel Xeon core where one group read 0.86-0.95 (bench/results/quant-analysis.md); the
-- template keeps q4 at one group (slower so). AVX-512 2 (Zen 4 not measured); the ymm variants 1
-- (registers: their exact passes split the chains of one group already)
-- q4_lut and scales_once (gemv's exact quantized passes): AVX-512 looks a q4 weight up with one
-- VPERMPS where the arithmetic takes four instructions (mask or shift, subtract, convert, multiply),
-- and converts a record's eight scales with one VCVTPH2PS, each then broadcast by a load, where
-- each took VPBROADCASTW and VCVTPH2PS: the exact q4 GEMV at M = 1 read 0.55-0.58 of the probe
-- before, 0.70-0.78 after (bench/results/quant-analysis.md); q8 level. The ymm variants keep
-- the arithmetic: a 16-entry lookup is two VPERMPS and a blend per ymm there, and avx2 has no F16C.
-- stream_l1: AVX-512's exact passes over a whole record (M = 1) prefetch into L1, 0-5 % faster
-- there; into L1 at M = 2 (each pass reads half the record) the q8 GEMV read 17 % less: those keep L2
-- byte_shift: x86 has no byte shift (VPSRLW and a mask from memory, where the 32-bit shift's mask
-- is a held register): off
local TUNE_AVX2 = { accumulators = 6, hold_operands = false, head_group = 1, int8_dot = "none", stream_hw = 0,
                    stream_ahead = STREAM_AHEAD, lone_compact = true, lone_groups = 1, exact_groups = 1,
                    q4_lut = false, scales_once = false, stream_l1 = false, byte_shift = false }
local TUNE_AVX2MADD = { accumulators = 6, hold_operands = false, head_group = 1, int8_dot = "s8s7", stream_hw = 0,
                        stream_ahead = STREAM_AHEAD, lone_compact = false, lone_groups = 1, exact_groups = 1,
                        q4_lut = false, scales_once = false, stream_l1 = false, byte_shift = false }
local TUNE_AVXVNNI = { accumulators = 6, hold_operands = false, head_group = 1, int8_dot = "u8s8", stream_hw = 0,
                       stream_ahead = STREAM_AHEAD, lone_compact = false, lone_groups = 1, exact_groups = 1,
                       q4_lut = false, scales_once = false, stream_l1 = false, byte_shift = false }
local function avx512_tune(int8_dot, stream_hw, lone_groups, stream_ahead)
  return { accumulators = 28, hold_operands = true, head_group = 8, int8_dot = int8_dot, stream_hw = stream_hw or 0,
           stream_ahead = stream_ahead or STREAM_AHEAD, lone_compact = true, lone_groups = lone_groups or 1,
           exact_groups = 2, q4_lut = true, scales_once = true, stream_l1 = true, byte_shift = false }
end
local TUNE_AVX512 = avx512_tune("none")
-- an AVX512-VNNI variant: its features (plus a trait it is tuned for, if any), stream_hw, lone_groups
-- and stream_ahead
local function vnni_variant(name, trait, doc, stream_hw, lone_groups, stream_ahead)
  local features = { "avx512f", "avx512bw", "avx512vl", "avx512vnni" }
  if trait then features[#features + 1] = trait end
  return { name = name, tier = "fast", features = features, features_doc = "AVX-512 F/BW/VL + VNNI" .. doc,
           asflags = "-Wa,-march=generic64+avx2+fma+avx512f+avx512bw+avx512vl+avx512_vnni",
           tuning = avx512_tune("u8s8", stream_hw, lone_groups, stream_ahead) }
end
M.variants = {
  -- asflags: the narrowest assembler setting that must accept the stamp (tests/scan_stamps.sh)
  { name = "avx2", tier = "exact", features = { "avx2", "fma" }, features_doc = "AVX2 + FMA",
    asflags = "-Wa,-march=generic64+avx2+fma", tuning = TUNE_AVX2, ymm = true },
  -- the quantized forms' fast tier on AVX2 CPUs without either VNNI (Haswell to Comet Lake, Zen 1-3):
  -- ymm pairs, the int8 dot as VPMADDUBSW and VPMADDWD (dot_s8s7: the activations' quants are in
  -- -127..127); listed before avxvnni, which the runtime prefers where both run (fk_leaf.c: the last fit)
  { name = "avx2madd", tier = "fast", features = { "avx2", "fma", "f16c" },
    features_doc = "AVX2 + FMA + F16C", asflags = "-Wa,-march=generic64+avx2+fma+f16c",
    tuning = TUNE_AVX2MADD, ymm = true },
  -- the quantized forms' fast tier where AVX-512 is absent: ymm pairs as avx2, plus the VEX
  -- VPDPBUSD of AVX-VNNI and F16C's VCVTPH2PS (every AVX-VNNI CPU has F16C; the bit is checked)
  { name = "avxvnni", tier = "fast", features = { "avx2", "fma", "f16c", "avxvnni" },
    features_doc = "AVX2 + FMA + F16C + AVX-VNNI", asflags = "-Wa,-march=generic64+avx2+fma+f16c+avx_vnni",
    tuning = TUNE_AVXVNNI, ymm = true },
  { name = "avx512", tier = "exact", features = { "avx512f", "avx512bw", "avx512vl" },
    features_doc = "AVX-512 F/BW/VL", asflags = "-Wa,-march=generic64+avx2+fma+avx512f+avx512bw+avx512vl",
    tuning = TUNE_AVX512 },
  { name = "avx512bf16", tier = "fast", features = { "avx512f", "avx512bw", "avx512vl", "avx512bf16" },
    features_doc = "AVX-512 F/BW/VL + BF16",
    asflags = "-Wa,-march=generic64+avx2+fma+avx512f+avx512bw+avx512vl+avx512_bf16", tuning = TUNE_AVX512 },
  -- the quantized forms' fast tier: avx512 plus VPDPBUSD (integer dot products, exact)
  vnni_variant("avx512vnni", nil, "", 0, 2),
  -- the same instructions, tuned for a core whose hardware prefetcher streams alone (the trait
  -- hwstream: the runtime picks it there, any AVX512-VNNI CPU runs it)
  vnni_variant("avx512vnnihw", "hwstream", ", tuned for the hwstream trait (AMD family 19h)", 28672, 1, 18432),
}

local GPR32 = { rax = "eax", rcx = "ecx", rdx = "edx", rbx = "ebx", rsi = "esi", rdi = "edi",
                rbp = "ebp", r8 = "r8d", r9 = "r9d", r10 = "r10d", r11 = "r11d", r12 = "r12d",
                r13 = "r13d", r14 = "r14d", r15 = "r15d" }

local function vnum(r) return r:match("%d+$") end
local function X(r) return "xmm" .. vnum(r) end
local function Y(r) return "ymm" .. vnum(r) end
local function Z(r) return "zmm" .. vnum(r) end

-- a ymm variant (avx2, avxvnni) holds a canonical vector in a ymm pair
local function is512(ctx) return not ctx.variant.ymm end

-- Ops whose result may take a dying operand's registers (regalloc.lua): one three-operand
-- instruction per part, or vfma's 231/213 forms chosen by which operand it took; for the integer
-- ops, the operands their lowering reads after writing the result are not listed.
local REUSE = { dot_u8s8 = { 1 }, dot_s8s7 = { 1 }, dot_u7s8 = { 1 }, vfma = { 3, 1, 2 }, vadd = { 1, 2 },
                vmul = { 1, 2 },
                vsub = { 1, 2 },
                vmin = { 1, 2 },
                viadd = { 1, 2 }, visub = { 1, 2 }, vimin = { 1, 2 }, vimax = { 1, 2 }, vand = { 1, 2 },
                vor = { 1, 2 }, vxor = { 1, 2 }, vdiv = { 1, 2 }, vishl = { 1 }, visra = { 1 }, vushr8 = { 1 },
                vrint = { 1 },
                vcvt_f2i = { 1 }, vcvt_i2f = { 1 }, vigt = { 1, 2 }, vcanon = { 1 }, vcanon_raw = { 1 },
                -- integer ops: a lea, or a mov of the first operand before the op reads the second
                iadd = { 1, 2 }, iaddi = { 1 }, addr = { 1, 2 }, imuli = { 1 }, imul = { 1 }, isub = { 1 },
                iandi = { 1 }, ishri = { 1 }, imin = { 1 }, iwrap = { 1 } }
function M.reuse(op) return REUSE[op.op] end

function M.registers(variant)
  local gpr = { "rcx", "rdx", "rsi", "r8", "r9", "r10", "r11", "rdi", "rbx", "rbp", "r12", "r13", "r14", "r15" }
  local saved = { rbx = true, rbp = true, r12 = true, r13 = true, r14 = true, r15 = true }
  local vec, scratch = {}, { "rax" }
  if not variant.ymm then
    for i = 0, 28 do vec[#vec + 1] = "zmm" .. C.int(i) end
    scratch[#scratch + 1] = "zmm29-zmm31"
    scratch[#scratch + 1] = "k6-k7"
    return { pools = { gpr = gpr, vec = vec }, callee_saved = saved, argp = "rdi", scratch = scratch, reuse = M.reuse,
             classes = { i = { pool = "gpr", n = 1 }, v = { pool = "vec", n = 1 }, s = { pool = "vec", n = 1 },
                         c = { pool = "vec", n = 1 } } }
  end
  for i = 0, 13 do vec[#vec + 1] = "ymm" .. C.int(i) end
  scratch[#scratch + 1] = "ymm14-ymm15"
  return { pools = { gpr = gpr, vec = vec }, callee_saved = saved, argp = "rdi", scratch = scratch, reuse = M.reuse,
           class_of = M.class_of,
           classes = { i = { pool = "gpr", n = 1 }, v = { pool = "vec", n = 2 }, s = { pool = "vec", n = 1 },
                       c = { pool = "vec", n = 1 }, u = { pool = "vec", n = 1, expand = 2 } } }
end

-- AVX2: a binary16 scale in every lane (load_bcast_f16) is one ymm that stands for both halves of
-- the canonical vector, as NEON holds its broadcasts (gen/isa/aarch64.lua, M.class_of): a register
-- fewer where a quantized tile loop is short of them. The other broadcasts keep two ymm (holding
-- them in one would change their stamps: a change of its own).
function M.class_of(v)
  if v.type == "v" and not v.var and v.def and v.def.op == "load_bcast_f16" then return "u" end
  return v.type
end

-- scratch vector registers
local T0, T1, T2 = "zmm29", "zmm30", "zmm31"
local function scratch(ctx, i)
  if is512(ctx) then return ({ T0, T1, T2 })[i] end
  return ({ "ymm14", "ymm15" })[i] or error("internal: avx2 has two scratch registers")
end

local function mem(base, idx, scale, disp)
  local s = "[" .. base
  if idx then s = s .. " + " .. idx .. "*" .. C.int(scale) end
  if disp > 0 then s = s .. " + " .. C.int(disp) elseif disp < 0 then s = s .. " - " .. C.int(-disp) end
  return s .. "]"
end

local function kconst(ctx, name, word, n)
  local words = {}
  for i = 1, n do words[i] = word end
  return "[rip + FK_SYM(" .. ctx:const(name, words) .. ")]"
end

-- A 32-bit constant broadcast to the vector width: {1to16} on AVX-512, a 32-byte row on AVX2.
local function bconst(ctx, name, word)
  if is512(ctx) then return "dword ptr " .. kconst(ctx, name, word, 1) .. "{1to16}" end
  return "ymmword ptr " .. kconst(ctx, name .. "_x8", word, 8)
end

-- The constants the RNE and the masks read (held in registers per loop where they fit)
local K_BIAS, K_B16, K_ONE, K_NAN, K_HI, K_SIGN = 0x7fff, 0x10000, 1, 0x7fc00000, 0xffff0000, 0x80000000

-- A 32-bit constant as the last operand of a vector instruction: the register its loop holds
-- (gen/kregs.lua), else a broadcast from memory as bconst. `xmm`: the scalar (128-bit) form.
local function kopnd(ctx, op, name, bits, xmm)
  local r = ctx:kreg(op, bits)
  if r then return xmm and X(r) or (is512(ctx) and Z(r) or Y(r)) end
  if xmm and not is512(ctx) then return "xmmword ptr " .. kconst(ctx, name .. "_x8", bits, 8) end
  return bconst(ctx, name, bits)
end

-- Lane index tables: dwords 0, step, 2*step, ... (16 lanes), or 32 halfwords 0..31.
local function iota(ctx, step)
  local w = {}
  for i = 0, 15 do w[i + 1] = step * i end
  return "FK_SYM(" .. ctx:const(step == 1 and "iota" or "iota" .. C.int(step), w) .. ")"
end

local function iota_w32(ctx)
  local w = {}
  for i = 0, 15 do w[i + 1] = (2 * i) + (2 * i + 1) * 65536 end
  return "FK_SYM(" .. ctx:const("iota_w32", w) .. ")"
end

-- k7 = the lanes of the op's lane group (AVX-512): (rem - base) > base-relative lane index.
local function kmask(ctx, op)
  local l = op.lanes
  ctx:wline("lea rax, " .. mem(ctx:reg(l.rem), nil, 1, -l.base))
  if op.op == "load_raw" then
    ctx:wline("vpbroadcastw zmm31, eax")
    ctx:wline("vpcmpw k7, zmm31, zmmword ptr [rip + " .. iota_w32(ctx) .. "], 6")
  else
    ctx:wline("vpbroadcastd zmm31, eax")
    ctx:wline("vpcmpd k7, zmm31, zmmword ptr [rip + " .. iota(ctx, l.step) .. "], 6")
  end
  return "{k7}"
end

-- ymm14 = the lanes of part `part` (1 or 2) of the op's lane group (AVX2), as all-ones lanes.
local function ymask(ctx, op, part)
  local l = op.lanes
  ctx:wline("lea rax, " .. mem(ctx:reg(l.rem), nil, 1, -l.base))
  ctx:wline("vmovd xmm14, eax")
  ctx:wline("vpbroadcastd ymm14, xmm14")
  ctx:wline("vpcmpgtd ymm14, ymm14, ymmword ptr [rip + " .. iota(ctx, l.step) .. " + " .. C.int(32 * (part - 1)) .. "]")
  return "ymm14"
end

-- Parts of a vector value: { "zmm3" } or { "ymm4", "ymm5" }.
local function parts(ctx, v)
  return ctx:regs(v)
end

-- Address of element (idx + off) of an array of `size`-byte elements.
-- (attr.at: operand 1 already points at element idx, a pointer its loop bumps: gen/bump.lua)
local function elem(ctx, op, size, extra)
  local idx = not op.attr.at and ctx:reg(op.src[2]) or nil
  return mem(ctx:reg(op.src[1]), idx, size, (op.attr.off + (extra or 0)) * size)
end

---------------------------------------------------------------------------------------------
-- Function frame

function M.preamble() return { "    .intel_syntax noprefix" } end
function M.const_section() return { "    FK_RODATA" } end
function M.postamble() return { "    FK_GNU_STACK" } end

function M.begin(ctx)
  local s = ctx.symbol
  ctx:wraw("    FK_TEXT")
  ctx:wraw("    .p2align 6")
  ctx:wraw("    .globl FK_SYM(" .. s .. ")")
  ctx:wraw("    FK_HIDDEN(" .. s .. ")")
  ctx:wraw("    FK_TYPE_FUNC(" .. s .. ")")
  ctx:wraw("FK_SYM(" .. s .. "):")
  for _, r in ipairs(ctx.saved) do ctx:wline("push " .. r) end
  -- stack slots (spill, reload): 64 bytes each, at rsp
  ctx.frame_bytes = 64 * (ctx.proc.frame_slots or 0)
  if ctx.frame_bytes > 0 then ctx:wline("sub rsp, " .. C.int(ctx.frame_bytes)) end
end

function M.finish(ctx)
  if ctx.frame_bytes > 0 then ctx:wline("add rsp, " .. C.int(ctx.frame_bytes)) end
  ctx:wline("vzeroupper")
  for i = #ctx.saved, 1, -1 do ctx:wline("pop " .. ctx.saved[i]) end
  ctx:wline("ret")
  ctx:wraw("    FK_SIZE(" .. ctx.symbol .. ")")
end

---------------------------------------------------------------------------------------------
-- Hooks

local ops = {}
M.ops = ops

function ops.entry() end

function ops.arg(ctx, op)
  ctx:wline("mov " .. ctx:reg(op.dst) .. ", qword ptr " .. mem(ctx:reg(op.src[1]), nil, 1, op.attr.field.offset))
end

function ops.arg_f32(ctx, op)
  ctx:wline("vmovss " .. X(ctx:reg(op.dst)) .. ", dword ptr " .. mem(ctx:reg(op.src[1]), nil, 1, op.attr.field.offset))
end

function ops.iconst(ctx, op)
  ctx:wline("mov " .. ctx:reg(op.dst) .. ", " .. C.int(op.attr.imm))
end

-- d = s, where the result did not take the operand's register (REUSE)
local function mov(ctx, d, s)
  if d ~= s then ctx:wline("mov " .. d .. ", " .. s) end
end

function ops.iadd(ctx, op)
  ctx:wline("lea " .. ctx:reg(op.dst) .. ", " .. mem(ctx:reg(op.src[1]), ctx:reg(op.src[2]), 1, 0))
end

function ops.iaddi(ctx, op)
  ctx:wline("lea " .. ctx:reg(op.dst) .. ", " .. mem(ctx:reg(op.src[1]), nil, 1, op.attr.imm))
end

function ops.isub(ctx, op)
  mov(ctx, ctx:reg(op.dst), ctx:reg(op.src[1]))
  ctx:wline("sub " .. ctx:reg(op.dst) .. ", " .. ctx:reg(op.src[2]))
end

function ops.iandi(ctx, op)
  mov(ctx, ctx:reg(op.dst), ctx:reg(op.src[1]))
  ctx:wline("and " .. ctx:reg(op.dst) .. ", " .. C.int(op.attr.imm))
end

function ops.imuli(ctx, op)
  ctx:wline("imul " .. ctx:reg(op.dst) .. ", " .. ctx:reg(op.src[1]) .. ", " .. C.int(op.attr.imm))
end

function ops.imul(ctx, op)
  mov(ctx, ctx:reg(op.dst), ctx:reg(op.src[1]))
  ctx:wline("imul " .. ctx:reg(op.dst) .. ", " .. ctx:reg(op.src[2]))
end

function ops.iconst64(ctx, op)
  ctx:wline(string.format("movabs %s, 0x%08x%08x", ctx:reg(op.dst), op.attr.hi, op.attr.lo))
end

function ops.ixor(ctx, op)
  local d, a, b = ctx:reg(op.dst), ctx:reg(op.src[1]), ctx:reg(op.src[2])
  if d == b then
    ctx:wline("xor " .. d .. ", " .. a)
  else
    mov(ctx, d, a)
    ctx:wline("xor " .. d .. ", " .. b)
  end
end

function ops.ishri(ctx, op)
  mov(ctx, ctx:reg(op.dst), ctx:reg(op.src[1]))
  ctx:wline("shr " .. ctx:reg(op.dst) .. ", " .. C.int(op.attr.imm))
end

function ops.imin(ctx, op)
  local d, a, b = ctx:reg(op.dst), ctx:reg(op.src[1]), ctx:reg(op.src[2])
  mov(ctx, d, a)
  ctx:wline("cmp " .. a .. ", " .. b)
  ctx:wline("cmovg " .. d .. ", " .. b)
end

-- a >= w ? a - w : a
function ops.iwrap(ctx, op)
  local d, a, w = ctx:reg(op.dst), ctx:reg(op.src[1]), ctx:reg(op.src[2])
  if d == a then                                  -- (the result took a's register: a - w in rax)
    ctx:wline("mov rax, " .. a)
    ctx:wline("sub rax, " .. w)
    ctx:wline("cmp " .. a .. ", " .. w)
    ctx:wline("cmovge " .. d .. ", rax")
    return
  end
  ctx:wline("mov " .. d .. ", " .. a)
  ctx:wline("sub " .. d .. ", " .. w)
  ctx:wline("cmp " .. a .. ", " .. w)
  ctx:wline("cmovl " .. d .. ", " .. a)
end

function ops.addr(ctx, op)
  ctx:wline("lea " .. ctx:reg(op.dst) .. ", " .. mem(ctx:reg(op.src[1]), ctx:reg(op.src[2]), op.attr.scale, 0))
end

function ops.zero(ctx, op)
  for _, p in ipairs(parts(ctx, op.dst)) do
    if is512(ctx) then ctx:wline("vpxord " .. p .. ", " .. p .. ", " .. p)
    else ctx:wline("vpxor " .. p .. ", " .. p .. ", " .. p) end
  end
end

function ops.sconst(ctx, op)
  ctx:wline("vmovss " .. X(ctx:reg(op.dst)) .. ", dword ptr " ..
            kconst(ctx, string.format("f%08x", op.attr.bits), op.attr.bits, 1))
end

function ops.cvt_i2s(ctx, op)
  local d = X(ctx:reg(op.dst))
  ctx:wline((is512(ctx) and "vpxord " or "vxorps ") .. d .. ", " .. d .. ", " .. d)  -- no false dependency
  ctx:wline("vcvtsi2ss " .. d .. ", " .. d .. ", " .. ctx:reg(op.src[1]))
end

-- Lane-by-lane walk over the valid elements of a tail lane group: emit(j) for element j
-- (base + step*j < rem), stopping at the first invalid one. Used where AVX2 has no 16-bit
-- masked move. `count` elements at most (16 lanes, or 32 halfwords for load_raw).
local function lane_walk(ctx, op, count, emit)
  local done = ctx:new_label("lanes")
  local rem, l = ctx:reg(op.lanes.rem), op.lanes
  for j = 0, count - 1 do
    ctx:wline("cmp " .. rem .. ", " .. C.int(l.base + l.step * j + 1))
    ctx:wline("jl " .. done)
    emit(j)
  end
  ctx:wlabel(done)
end

-- A masked load gives the lanes outside its group +0, or -0 with attr.fill = 0x80000000.
function ops.load_f32(ctx, op)
  local d = parts(ctx, op.dst)
  local neg = op.attr.fill == 0x80000000
  if is512(ctx) then
    local k = ""
    if op.lanes then
      k = kmask(ctx, op) .. (neg and "" or "{z}")
      if neg then ctx:wline("vpbroadcastd " .. d[1] .. ", dword ptr " .. kconst(ctx, "f80000000", 0x80000000, 1)) end
    end
    ctx:wline("vmovups " .. d[1] .. k .. ", zmmword ptr " .. elem(ctx, op, 4))
    return
  end
  for i = 1, 2 do
    local a = "ymmword ptr " .. elem(ctx, op, 4, 8 * (i - 1))
    if op.lanes then
      local m = ymask(ctx, op, i)
      ctx:wline("vmaskmovps " .. d[i] .. ", " .. m .. ", " .. a)
      if neg then                                    -- -0 where the mask is clear
        ctx:wline("vandnps ymm15, " .. m .. ", " .. bconst(ctx, "f80000000", 0x80000000))
        ctx:wline("vorps " .. d[i] .. ", " .. d[i] .. ", ymm15")
      end
    else
      ctx:wline("vmovups " .. d[i] .. ", " .. a)
    end
  end
end

function ops.load_bf16(ctx, op)
  local d = parts(ctx, op.dst)
  if is512(ctx) then
    local k = op.lanes and (kmask(ctx, op) .. "{z}") or ""
    ctx:wline("vpmovzxwd " .. d[1] .. k .. ", ymmword ptr " .. elem(ctx, op, 2))
    ctx:wline("vpslld " .. d[1] .. ", " .. d[1] .. ", 16")
    return
  end
  if op.lanes then
    -- stage the valid words in the low xmm halves, then widen in place
    for i = 1, 2 do ctx:wline("vpxor " .. d[i] .. ", " .. d[i] .. ", " .. d[i]) end
    lane_walk(ctx, op, 16, function(j)
      local x = X(d[j < 8 and 1 or 2])
      ctx:wline("vpinsrw " .. x .. ", " .. x .. ", word ptr " .. elem(ctx, op, 2, j) .. ", " .. C.int(j % 8))
    end)
    for i = 1, 2 do ctx:wline("vpmovzxwd " .. d[i] .. ", " .. X(d[i])) end
  else
    for i = 1, 2 do ctx:wline("vpmovzxwd " .. d[i] .. ", xmmword ptr " .. elem(ctx, op, 2, 8 * (i - 1))) end
  end
  for i = 1, 2 do ctx:wline("vpslld " .. d[i] .. ", " .. d[i] .. ", 16") end
end

-- 32 bf16 as they lie in memory: lane l holds halfwords 2l (low) and 2l + 1 (high).
function ops.load_raw(ctx, op)
  local d = parts(ctx, op.dst)
  if is512(ctx) then
    local k = op.lanes and (kmask(ctx, op) .. "{z}") or ""
    ctx:wline("vmovdqu16 " .. d[1] .. k .. ", zmmword ptr " .. elem(ctx, op, 2))
    return
  end
  if not op.lanes then
    for i = 1, 2 do ctx:wline("vmovdqu " .. d[i] .. ", ymmword ptr " .. elem(ctx, op, 2, 16 * (i - 1))) end
    return
  end
  -- halfwords 0-7 -> xmm(d1), 8-15 -> xmm14, 16-23 -> xmm(d2), 24-31 -> xmm15; join after
  local stage = { X(d[1]), "xmm14", X(d[2]), "xmm15" }
  for _, x in ipairs(stage) do ctx:wline("vpxor " .. x .. ", " .. x .. ", " .. x) end
  lane_walk(ctx, op, 32, function(j)
    local x = stage[math.floor(j / 8) + 1]
    ctx:wline("vpinsrw " .. x .. ", " .. x .. ", word ptr " .. elem(ctx, op, 2, j) .. ", " .. C.int(j % 8))
  end)
  ctx:wline("vinserti128 " .. d[1] .. ", " .. d[1] .. ", xmm14, 1")
  ctx:wline("vinserti128 " .. d[2] .. ", " .. d[2] .. ", xmm15, 1")
end

function ops.prefetch(ctx, op)
  -- T0: into L1; T1: into L2 (and the caches beyond it)
  ctx:wline((op.attr.level == 2 and "prefetcht1" or "prefetcht0") .. " byte ptr " .. elem(ctx, op, op.attr.size))
end

function ops.store_f32(ctx, op)
  local v = parts(ctx, op.src[3])
  if is512(ctx) then
    local k = op.lanes and kmask(ctx, op) or ""
    ctx:wline("vmovups zmmword ptr " .. elem(ctx, op, 4) .. k .. ", " .. v[1])
    return
  end
  for i = 1, 2 do
    local a = "ymmword ptr " .. elem(ctx, op, 4, 8 * (i - 1))
    if op.lanes then
      ctx:wline("vmaskmovps " .. a .. ", " .. ymask(ctx, op, i) .. ", " .. v[i])
    else
      ctx:wline("vmovups " .. a .. ", " .. v[i])
    end
  end
end

-- Stores the high halves (the bf16 bits) of 16 lanes.
function ops.store_bf16(ctx, op)
  local v = parts(ctx, op.src[3])
  if is512(ctx) then
    local k = op.lanes and kmask(ctx, op) or ""
    ctx:wline("vpsrld " .. T0 .. ", " .. v[1] .. ", 16")
    ctx:wline("vpmovdw ymmword ptr " .. elem(ctx, op, 2) .. k .. ", " .. T0)
    return
  end
  local a, b = scratch(ctx, 1), scratch(ctx, 2)
  ctx:wline("vpsrld " .. a .. ", " .. v[1] .. ", 16")
  ctx:wline("vpsrld " .. b .. ", " .. v[2] .. ", 16")
  ctx:wline("vpackusdw " .. a .. ", " .. a .. ", " .. b)     -- words 0-3 8-11 4-7 12-15
  ctx:wline("vpermq " .. a .. ", " .. a .. ", 0xd8")          -- words 0-15 in order
  if not op.lanes then
    ctx:wline("vmovdqu ymmword ptr " .. elem(ctx, op, 2) .. ", " .. a)
    return
  end
  ctx:wline("vextracti128 " .. X(b) .. ", " .. a .. ", 1")
  lane_walk(ctx, op, 16, function(j)
    ctx:wline("vpextrw word ptr " .. elem(ctx, op, 2, j) .. ", " .. X(j < 8 and a or b) .. ", " .. C.int(j % 8))
  end)
end

-- 32 halfwords from 16 raw pairs (as load_raw reads them).
function ops.store_raw(ctx, op)
  local v = parts(ctx, op.src[3])
  if is512(ctx) then
    ctx:wline("vmovdqu16 zmmword ptr " .. elem(ctx, op, 2) .. ", " .. v[1])
    return
  end
  for i = 1, 2 do ctx:wline("vmovdqu ymmword ptr " .. elem(ctx, op, 2, 16 * (i - 1)) .. ", " .. v[i]) end
end

-- int32 lanes (each in -128..127) as 16 bytes: VPMOVDB (truncating, AVX512F) straight to memory;
-- ymm pairs: VPACKSSDW of the two (words by 128-bit lane: 0-3 8-11 4-7 12-15), VPERMQ to lane order,
-- VPACKSSWB of its halves (no lane saturates: each is in range)
function ops.store_i8(ctx, op)
  local v = parts(ctx, op.src[3])
  if is512(ctx) then
    ctx:wline("vpmovdb xmmword ptr " .. elem(ctx, op, 1) .. ", " .. v[1])
    return
  end
  ctx:wline("vpackssdw ymm14, " .. v[1] .. ", " .. v[2])
  ctx:wline("vpermq ymm14, ymm14, 0xd8")
  ctx:wline("vextracti128 xmm15, ymm14, 1")
  ctx:wline("vpacksswb xmm14, xmm14, xmm15")
  ctx:wline("vmovdqu xmmword ptr " .. elem(ctx, op, 1) .. ", xmm14")
end

function ops.load1_bf16(ctx, op)
  ctx:wline("movzx eax, word ptr " .. elem(ctx, op, 2))
  ctx:wline("shl eax, 16")
  ctx:wline("vmovd " .. X(ctx:reg(op.dst)) .. ", eax")
end

function ops.load1_f32(ctx, op)
  ctx:wline("vmovss " .. X(ctx:reg(op.dst)) .. ", dword ptr " .. elem(ctx, op, 4))
end

-- an int32 element, sign-extended to 64 bits (a gather's row index)
function ops.load1_i32(ctx, op)
  ctx:wline("movsxd " .. ctx:reg(op.dst) .. ", dword ptr " .. elem(ctx, op, 4))
end

function ops.load1_u64(ctx, op)
  ctx:wline("mov " .. ctx:reg(op.dst) .. ", qword ptr " .. elem(ctx, op, 8))
end

function ops.store1_u64(ctx, op)
  ctx:wline("mov qword ptr " .. elem(ctx, op, 8) .. ", " .. ctx:reg(op.src[3]))
end

function ops.store1_bf16(ctx, op)
  ctx:wline("vpextrw word ptr " .. elem(ctx, op, 2) .. ", " .. X(ctx:reg(op.src[3])) .. ", 1")
end

function ops.store1_f32(ctx, op)
  ctx:wline("vmovss dword ptr " .. elem(ctx, op, 4) .. ", " .. X(ctx:reg(op.src[3])))
end

function ops.fma_acc(ctx, op)
  local acc, a, b = parts(ctx, op.src[1]), parts(ctx, op.src[2]), parts(ctx, op.src[3])
  if is512(ctx) then
    local k = op.lanes and kmask(ctx, op) or ""
    ctx:wline("vfmadd231ps " .. acc[1] .. k .. ", " .. a[1] .. ", " .. b[1])
    return
  end
  for i = 1, 2 do
    if op.lanes then
      local m = ymask(ctx, op, i)
      ctx:wline("vmovaps ymm15, " .. acc[i])
      ctx:wline("vfmadd231ps ymm15, " .. a[i] .. ", " .. b[i])
      ctx:wline("vblendvps " .. acc[i] .. ", " .. acc[i] .. ", ymm15, " .. m)
    else
      ctx:wline("vfmadd231ps " .. acc[i] .. ", " .. a[i] .. ", " .. b[i])
    end
  end
end

-- acc += a * [memory]: the multiplicand straight from memory (a full load, never masked).
function ops.fma_acc_mem(ctx, op)
  local acc, a = parts(ctx, op.src[1]), parts(ctx, op.src[2])
  local base, idx = ctx:reg(op.src[3]), not op.attr.at and ctx:reg(op.src[4]) or nil
  if is512(ctx) then
    local k = op.lanes and kmask(ctx, op) or ""
    ctx:wline("vfmadd231ps " .. acc[1] .. k .. ", " .. a[1] .. ", zmmword ptr " .. mem(base, idx, 4, op.attr.off * 4))
    return
  end
  for i = 1, 2 do
    local m = "ymmword ptr " .. mem(base, idx, 4, (op.attr.off + 8 * (i - 1)) * 4)
    if op.lanes then
      local mask = ymask(ctx, op, i)
      ctx:wline("vmovaps ymm15, " .. acc[i])
      ctx:wline("vfmadd231ps ymm15, " .. a[i] .. ", " .. m)
      ctx:wline("vblendvps " .. acc[i] .. ", " .. acc[i] .. ", ymm15, " .. mask)
    else
      ctx:wline("vfmadd231ps " .. acc[i] .. ", " .. a[i] .. ", " .. m)
    end
  end
end

-- acc[l] += w[2l] * x[2l] + w[2l+1] * x[2l+1]: VDPBF16PS (RNE per step, DAZ/FTZ).
function ops.dot_bf16_acc(ctx, op)
  if ctx.variant.name ~= "avx512bf16" then error("internal: dot_bf16_acc needs the avx512bf16 variant") end
  local acc, w, x = parts(ctx, op.src[1]), parts(ctx, op.src[2]), parts(ctx, op.src[3])
  ctx:wline("vdpbf16ps " .. acc[1] .. ", " .. w[1] .. ", " .. x[1])
end

-- src1 + the dot products of u8 src2 and s8 src3, four bytes per lane: VPDPBUSD (AVX512_VNNI; the
-- avxvnni variant its VEX form, per ymm: wrapping int32 sums, exact in every use here),
-- accumulating into a copy of src1 unless the result took src1's register (REUSE).
function ops.dot_u8s8(ctx, op)
  if ctx.variant.tuning.int8_dot ~= "u8s8" then
    ctx:fail("dot_u8s8 needs an avx512vnni or avxvnni variant (VPDPBUSD): give the form " ..
             "variants = { fast = { \"avxvnni\", \"avx512vnni\", \"dotprod\" } }")
  end
  local d, a, w, x = parts(ctx, op.dst), parts(ctx, op.src[1]), parts(ctx, op.src[2]), parts(ctx, op.src[3])
  if is512(ctx) then
    if d[1] ~= a[1] then ctx:wline("vmovdqa32 " .. d[1] .. ", " .. a[1]) end
    ctx:wline("vpdpbusd " .. d[1] .. ", " .. w[1] .. ", " .. x[1])
    return
  end
  for i = 1, 2 do
    if d[i] ~= a[i] then ctx:wline("vmovdqa " .. d[i] .. ", " .. a[i]) end
    ctx:wline("{vex} vpdpbusd " .. d[i] .. ", " .. w[i] .. ", " .. x[i])
  end
end

-- Per ymm of op (avx2madd): ymm14 = VPMADDUBSW of u8 and s8 bytes (adjacent pairs summed into
-- int16), VPMADDWD by ones (pairs of int16 into int32), VPADDD src1. signed: src2 is s8, so the u8
-- operand is VPABSB (|src2|: 0..128) and the s8 one VPSIGNB (src3 with src2's sign), which stays in
-- -127..127 only for src3 in -127..127 (dot_s8s7's precondition); else src2 (0..127) and src3 as
-- they are (dot_u7s8's). Either way a pair is at most 2 x 128 x 127 = 32512: no saturation, the
-- exact sums, as VPDPBUSD and SDOT give them.
local function maddubs_dot(ctx, op, signed)
  local d, a, w, x = parts(ctx, op.dst), parts(ctx, op.src[1]), parts(ctx, op.src[2]), parts(ctx, op.src[3])
  for i = 1, #d do
    local u, s = Y(w[i]), Y(x[i])
    if signed then
      ctx:wline("vpsignb ymm15, " .. s .. ", " .. u)
      ctx:wline("vpabsb ymm14, " .. u)
      u, s = "ymm14", "ymm15"
    end
    ctx:wline("vpmaddubsw ymm14, " .. u .. ", " .. s)
    ctx:wline("vpmaddwd ymm14, ymm14, ymmword ptr " .. kconst(ctx, "ones16_x8", 0x00010001, 8))
    ctx:wline("vpaddd " .. Y(d[i]) .. ", " .. Y(a[i]) .. ", ymm14")
  end
end

-- src1 + the dot products of s8 src2 and s8 src3 whose bytes are in -127..127, four bytes per
-- lane, on AVX2 alone (avx2madd): VPSIGNB, VPABSB, VPMADDUBSW, VPMADDWD, VPADDD (maddubs_dot).
function ops.dot_s8s7(ctx, op)
  if ctx.variant.tuning.int8_dot ~= "s8s7" then
    ctx:fail("dot_s8s7 needs the avx2madd variant (VPMADDUBSW): give the form " ..
             "variants = { fast = { \"avx2madd\", ... } }")
  end
  maddubs_dot(ctx, op, true)
end

-- src1 + the dot products of u8 src2 whose bytes are in 0..127 and s8 src3, four bytes per lane:
-- VPDPBUSD in the VNNI variants (dot_u8s8's lowering); on AVX2 alone (avx2madd) VPMADDUBSW,
-- VPMADDWD, VPADDD (maddubs_dot): three instructions a ymm where dot_s8s7 needs five.
function ops.dot_u7s8(ctx, op)
  if ctx.variant.tuning.int8_dot == "u8s8" then return ops.dot_u8s8(ctx, op) end
  if ctx.variant.tuning.int8_dot ~= "s8s7" then
    ctx:fail("dot_u7s8 needs a variant with an int8 dot (avx2madd, avxvnni, avx512vnni): give the form " ..
             "variants = { fast = { \"avx2madd\", ... } }")
  end
  maddubs_dot(ctx, op, false)
end

-- No x86_64 variant has dot_s8s8 (VPDPBSSD is AVX-VNNI-INT8's): the quantized fast tier reads
-- t.tune.int8_dot and uses dot_u8s8 here.
function ops.dot_s8s8(ctx)
  ctx:fail("dot_s8s8: no x86_64 variant has it; the avx512vnni variant has dot_u8s8 (t.tune.int8_dot == \"u8s8\")")
end

-- The bf16 pair at an element address, in every 32-bit lane.
function ops.load_pair_bcast(ctx, op)
  local d = parts(ctx, op.dst)
  for i = 1, #d do ctx:wline("vpbroadcastd " .. d[i] .. ", dword ptr " .. elem(ctx, op, 2)) end
end

-- Quantized weights: the 16 bytes at an element address, lane l = byte l, widened to int32 (sign- or
-- zero-extended): AVX-512 one VPMOVSXBD / VPMOVZXBD of 16 bytes, AVX2 one of 8 bytes per ymm.
local function load_bytes(ins)
  return function(ctx, op)
    local d = parts(ctx, op.dst)
    if is512(ctx) then
      ctx:wline(ins .. " " .. d[1] .. ", xmmword ptr " .. elem(ctx, op, 1))
      return
    end
    for i = 1, 2 do ctx:wline(ins .. " " .. d[i] .. ", qword ptr " .. elem(ctx, op, 1, 8 * (i - 1))) end
  end
end
ops.load_i8, ops.load_u8 = load_bytes("vpmovsxbd"), load_bytes("vpmovzxbd")

-- VCVTPH2PS: AVX-512 has it; of the ymm variants those requiring F16C (avxvnni, not avx2)
local function has_f16c(ctx)
  if is512(ctx) then return true end
  for _, f in ipairs(ctx.variant.features) do if f == "f16c" then return true end end
  return false
end

-- The F16C requirement of the quantized forms' binary16 scales
local function f16c(ctx, what)
  if has_f16c(ctx) then return end
  ctx:fail(("%s needs F16C (VCVTPH2PS): the %s variant does not require it"):format(what, ctx.variant.name))
end

-- The 8 binary16 at an element address, widened exactly, in lanes 0-7 (VCVTPH2PS from memory into
-- the ymm half: the upper lanes are zeroed; a ymm pair: the first ymm, the second zeroed).
function ops.load_f16x8(ctx, op)
  f16c(ctx, "load_f16x8")
  local d = parts(ctx, op.dst)
  ctx:wline("vcvtph2ps " .. Y(d[1]) .. ", xmmword ptr " .. elem(ctx, op, 2))
  if d[2] then ctx:wline("vxorps " .. d[2] .. ", " .. d[2] .. ", " .. d[2]) end
end

-- The lane index tables of VPERMPS: `quads` (lane l <- lane l / 4: load_f16x4q) and `pairI` (lanes
-- 0-7 <- lane 2i, 8-15 <- lane 2i + 1: pair_split). On AVX-512 a loop may hold one in a register
-- (gen/kregs.lua: M.constants); a held constant is keyed by its 32-bit pattern, never negative, so
-- a table is keyed by a negative code.
local TABLES = { quads = -1, pair0 = -2, pair1 = -3, pair2 = -4, pair3 = -5 }
local TABLE_OF = {}
for name, code in pairs(TABLES) do TABLE_OF[code] = name end   -- a lookup: no order reaches output

local function table_words(name)
  local w, i = {}, name ~= "quads" and tonumber(name:sub(5)) or nil
  for l = 0, 15 do w[l + 1] = i and 2 * i + (l >= 8 and 1 or 0) or math.floor(l / 4) end
  return w
end

-- VPERMPS by the table `name`: AVX-512 16 indices, from the register its loop holds or loaded into
-- a scratch one; a ymm pair 8 per part (index table words 8(i - 1) + 1 .. 8i for part i)
local function permute(ctx, op, name, d, src)
  local w = table_words(name)
  if is512(ctx) then
    local r = ctx:kreg(op, TABLES[name])
    if not r then
      r = T0
      ctx:wline("vmovdqa32 " .. T0 .. ", zmmword ptr [rip + FK_SYM(" .. ctx:const(name, w) .. ")]")
    end
    ctx:wline("vpermps " .. d[1] .. ", " .. r .. ", " .. src[1])
    return
  end
  local sym = ctx:const(name, w)
  for i = 1, 2 do
    ctx:wline("vmovdqu ymm15, ymmword ptr [rip + FK_SYM(" .. sym .. ") + " .. C.int(32 * (i - 1)) .. "]")
    ctx:wline("vpermps " .. d[i] .. ", ymm15, " .. src[i])
  end
end

-- The 4 binary16 at an element address, widened exactly (VCVTPH2PS from memory into an xmm: the
-- destination's, a ymm pair's scratch ymm14), lane c spread over lanes 4c .. 4c + 3 (permute).
function ops.load_f16x4q(ctx, op)
  f16c(ctx, "load_f16x4q")
  local d = parts(ctx, op.dst)
  local x = is512(ctx) and d[1] or "ymm14"
  ctx:wline("vcvtph2ps " .. X(x) .. ", qword ptr " .. elem(ctx, op, 2))
  -- a ymm pair: both parts permute the one xmm, indices taken modulo 8 (lanes 0-3 of ymm14)
  permute(ctx, op, "quads", d, is512(ctx) and d or { "ymm14", "ymm14" })
end

-- lanes 0-7 <- lane 2i, 8-15 <- lane 2i + 1 (src lanes 0-7: load_f16x8's), by permute.
function ops.vpair_split(ctx, op)
  local src = parts(ctx, op.src[1])
  permute(ctx, op, "pair" .. C.int(op.attr.imm), parts(ctx, op.dst), is512(ctx) and src or { src[1], src[1] })
end

-- The IEEE binary16 at an element address, widened exactly to f32, in every lane. AVX-512:
-- VPBROADCASTW, then VCVTPH2PS (its EVEX form is AVX512F). The avx2 variant requires AVX2 + FMA
-- only (requiring F16C too would change what FK_CPU_MASK=3 selects), so it widens without F16C's
-- VCVTPH2PS, in its one ymm (M.class_of) and the two scratch ones
-- (VPBROADCASTW fills both halves of a lane with h, so bit 31 is the sign):
--   t = (h & 0x7fff) << 13: exponent e and fraction in their f32 places, the bias 112 short;
--   x = t + (113 << 23); e >= 1: x - (1 << 23), the f32 bits (e = 31, inf and NaN: OR 0x7f800000 too);
--   e = 0 (zero, subnormal): f32(x) - 2^-14, exact (the fraction times 2^-24); the other lanes
--   subtract +0, which keeps them (x is never a NaN or -0);
--   OR the sign and the e = 31 exponent. No subnormal f32 is read or made. A NaN keeps its payload
--   (VCVTPH2PS and FCVTL quiet a signalling one: NaN scales are ISA-defined, docs/dsl.md).
function ops.load_bcast_f16(ctx, op)
  local d = parts(ctx, op.dst)
  local a = "word ptr " .. elem(ctx, op, 2)
  if is512(ctx) then
    ctx:wline("vpbroadcastw " .. Y(d[1]) .. ", " .. a)
    ctx:wline("vcvtph2ps " .. d[1] .. ", " .. Y(d[1]))
    return
  end
  if has_f16c(ctx) then                                -- a ymm variant with F16C (avxvnni)
    ctx:wline("vpbroadcastw " .. X(d[1]) .. ", " .. a)
    ctx:wline("vcvtph2ps " .. d[1] .. ", " .. X(d[1]))
    if d[2] ~= d[1] then ctx:wline("vmovaps " .. d[2] .. ", " .. d[1]) end
    return
  end
  local r, t, m = d[1], scratch(ctx, 1), scratch(ctx, 2)
  local function k(bits) return bconst(ctx, string.format("f%08x", bits), bits) end
  ctx:wline("vpbroadcastw " .. r .. ", " .. a)
  ctx:wline("vpslld " .. t .. ", " .. r .. ", 17")
  ctx:wline("vpsrld " .. t .. ", " .. t .. ", 4")                    -- t
  ctx:wline("vpand " .. r .. ", " .. r .. ", " .. k(0x80000000))     -- the sign
  ctx:wline("vpcmpgtd " .. m .. ", " .. t .. ", " .. k(0x0f7fffff))  -- e = 31
  ctx:wline("vpand " .. m .. ", " .. m .. ", " .. k(0x7f800000))
  ctx:wline("vpor " .. r .. ", " .. r .. ", " .. m)
  ctx:wline("vpcmpgtd " .. m .. ", " .. t .. ", " .. k(0x007fffff))  -- e >= 1: all ones
  ctx:wline("vpaddd " .. t .. ", " .. t .. ", " .. k(0x38800000))    -- x
  ctx:wline("vpslld " .. m .. ", " .. m .. ", 23")                   -- e >= 1: -(1 << 23)
  ctx:wline("vpaddd " .. t .. ", " .. t .. ", " .. m)
  ctx:wline("vpandn " .. m .. ", " .. m .. ", " .. k(0x38800000))    -- e = 0: 2^-14, else +0
  ctx:wline("vsubps " .. t .. ", " .. t .. ", " .. m)
  ctx:wline("vpor " .. r .. ", " .. r .. ", " .. t)
  if d[2] ~= r then ctx:wline("vmovaps " .. d[2] .. ", " .. r) end
end

-- Raw pairs -> f32: the even halfword moved up (<< 16), the odd one kept (& 0xffff0000).
function ops.bf16_even(ctx, op)
  local d, r = parts(ctx, op.dst), parts(ctx, op.src[1])
  for i = 1, #d do ctx:wline("vpslld " .. d[i] .. ", " .. r[i] .. ", 16") end
end

function ops.bf16_odd(ctx, op)
  local d, r = parts(ctx, op.dst), parts(ctx, op.src[1])
  for i = 1, #d do
    ctx:wline((is512(ctx) and "vpandd " or "vpand ") .. d[i] .. ", " .. r[i] .. ", " .. kopnd(ctx, op, "hi16", K_HI))
  end
end

-- Raw pairs from two rounded vectors: (even >> 16) | (odd & 0xffff0000).
function ops.bf16_pairs(ctx, op)
  local d, e, o = parts(ctx, op.dst), parts(ctx, op.src[1]), parts(ctx, op.src[2])
  for i = 1, #d do
    ctx:wline("vpsrld " .. d[i] .. ", " .. e[i] .. ", 16")
    if is512(ctx) then
      -- d | (o & hi16): ternary truth table 0xf8 (A = d, B = o, C = the mask)
      ctx:wline("vpternlogd " .. d[i] .. ", " .. o[i] .. ", " .. kopnd(ctx, op, "hi16", K_HI) .. ", 0xf8")
    else
      local t = scratch(ctx, 1)
      ctx:wline("vpand " .. t .. ", " .. o[i] .. ", " .. kopnd(ctx, op, "hi16", K_HI))
      ctx:wline("vpor " .. d[i] .. ", " .. d[i] .. ", " .. t)
    end
  end
end

-- Even or odd elements of the 32 in (a, b). AVX-512: one two-table permute; AVX2: an in-lane
-- shuffle of each ymm pair, then a qword permute to restore the order.
local function uzp(parity)
  return function(ctx, op)
    local d, a, b = parts(ctx, op.dst), parts(ctx, op.src[1]), parts(ctx, op.src[2])
    if is512(ctx) then
      local w = {}
      for i = 0, 15 do w[i + 1] = 2 * i + parity end
      ctx:wline("vmovdqa32 " .. d[1] .. ", zmmword ptr [rip + FK_SYM(" .. ctx:const("uzp" .. C.int(parity), w) .. ")]")
      ctx:wline("vpermi2ps " .. d[1] .. ", " .. a[1] .. ", " .. b[1])
      return
    end
    local imm = parity == 0 and "0x88" or "0xdd"
    local pairs_ = { { a[1], a[2] }, { b[1], b[2] } }
    for i = 1, 2 do
      ctx:wline("vshufps " .. d[i] .. ", " .. pairs_[i][1] .. ", " .. pairs_[i][2] .. ", " .. imm)
      ctx:wline("vpermpd " .. d[i] .. ", " .. d[i] .. ", 0xd8")
    end
  end
end
ops.uzp_even, ops.uzp_odd = uzp(0), uzp(1)

local function binary(ins)
  return function(ctx, op)
    local d, a, b = parts(ctx, op.dst), parts(ctx, op.src[1]), parts(ctx, op.src[2])
    for i = 1, #d do ctx:wline(ins .. " " .. d[i] .. ", " .. a[i] .. ", " .. b[i]) end
  end
end
ops.vadd = binary("vaddps")
ops.vmul = binary("vmulps")
ops.vsub = binary("vsubps")
ops.vdiv = binary("vdivps")
-- min(a, b) = a < b ? a : b, which is exactly (v)minps a, b (NaN or equal -> b)
ops.vmin = binary("vminps")
ops.viadd = binary("vpaddd")
ops.visub = binary("vpsubd")
ops.vimin = binary("vpminsd")
ops.vimax = binary("vpmaxsd")

-- bitwise ops: EVEX forms on AVX-512 (registers 16-31), VEX on AVX2
local function bitwise(name)
  return function(ctx, op)
    local d, a, b = parts(ctx, op.dst), parts(ctx, op.src[1]), parts(ctx, op.src[2])
    local ins = is512(ctx) and ("vp" .. name .. "d") or ("vp" .. name)
    for i = 1, #d do ctx:wline(ins .. " " .. d[i] .. ", " .. a[i] .. ", " .. b[i]) end
  end
end
ops.vand, ops.vor, ops.vxor = bitwise("and"), bitwise("or"), bitwise("xor")

-- a > b (signed int32) ? all ones : 0. AVX-512 compares into k6, then sets the selected lanes
-- of the zeroed destination to all ones (VPTERNLOGD, immediate 0xff; AVX512F only, no DQ).
function ops.vigt(ctx, op)
  local d, a, b = parts(ctx, op.dst), parts(ctx, op.src[1]), parts(ctx, op.src[2])
  if is512(ctx) then
    ctx:wline("vpcmpgtd k6, " .. a[1] .. ", " .. b[1])
    ctx:wline("vpternlogd " .. d[1] .. "{k6}{z}, " .. d[1] .. ", " .. d[1] .. ", 0xff")
  else
    for i = 1, #d do ctx:wline("vpcmpgtd " .. d[i] .. ", " .. a[i] .. ", " .. b[i]) end
  end
end

local function shift(ins)
  return function(ctx, op)
    local d, a = parts(ctx, op.dst), parts(ctx, op.src[1])
    for i = 1, #d do ctx:wline(ins .. " " .. d[i] .. ", " .. a[i] .. ", " .. C.int(op.attr.imm)) end
  end
end
ops.vishl, ops.visra = shift("vpslld"), shift("vpsrad")

-- bytes shifted right logically: the words' VPSRLW, then each byte's bits from the next byte
-- masked off (0xff >> n in every byte, from memory)
function ops.vushr8(ctx, op)
  local d, a, k = parts(ctx, op.dst), parts(ctx, op.src[1]), op.attr.imm
  local mask = math.floor(0xff / 2 ^ k) * 0x01010101
  local m = bconst(ctx, string.format("b%08x", mask), mask)
  for i = 1, #d do
    ctx:wline("vpsrlw " .. d[i] .. ", " .. a[i] .. ", " .. C.int(k))
    ctx:wline((is512(ctx) and "vpandd " or "vpand ") .. d[i] .. ", " .. d[i] .. ", " .. m)
  end
end

local function unary(ins512, ins256)
  return function(ctx, op)
    local d, a = parts(ctx, op.dst), parts(ctx, op.src[1])
    for i = 1, #d do ctx:wline((is512(ctx) and ins512 or ins256) .. " " .. d[i] .. ", " .. a[i]) end
  end
end
-- round to nearest even (immediate 0: RNE, from the immediate, not MXCSR)
function ops.vrint(ctx, op)
  local d, a = parts(ctx, op.dst), parts(ctx, op.src[1])
  for i = 1, #d do ctx:wline((is512(ctx) and "vrndscaleps " or "vroundps ") .. d[i] .. ", " .. a[i] .. ", 0") end
end
ops.vcvt_f2i = unary("vcvttps2dq", "vcvttps2dq")
ops.vcvt_i2f = unary("vcvtdq2ps", "vcvtdq2ps")

-- Lane index tables of the zips: chunk c of g lanes comes from a (c even) or b (c odd), from
-- lane (c // 2) * g (+ 8 for the high half); b's lanes are 16..31 of the two-table permute.
local function zip_index(g, half)
  local w = {}
  for i = 0, 15 do
    local c, k = math.floor(i / g), i % g
    w[i + 1] = (c % 2 == 1 and 16 or 0) + 8 * half + math.floor(c / 2) * g + k
  end
  return w
end

local function zip(half)
  return function(ctx, op)
    local d, a, b, g = parts(ctx, op.dst), parts(ctx, op.src[1]), parts(ctx, op.src[2]), op.attr.g
    if is512(ctx) then
      local sym = ctx:const("zip" .. C.int(g) .. (half == 0 and "lo" or "hi"), zip_index(g, half))
      ctx:wline("vmovdqa32 " .. d[1] .. ", zmmword ptr [rip + FK_SYM(" .. sym .. ")]")
      ctx:wline("vpermi2ps " .. d[1] .. ", " .. a[1] .. ", " .. b[1])
      return
    end
    local A, Bv = a[half + 1], b[half + 1]          -- the ymm holding lanes 0-7 (lo) or 8-15 (hi)
    if g == 8 then
      ctx:wline("vmovaps " .. d[1] .. ", " .. A)
      ctx:wline("vmovaps " .. d[2] .. ", " .. Bv)
      return
    end
    if g == 4 then
      ctx:wline("vperm2f128 " .. d[1] .. ", " .. A .. ", " .. Bv .. ", 0x20")
      ctx:wline("vperm2f128 " .. d[2] .. ", " .. A .. ", " .. Bv .. ", 0x31")
      return
    end
    local lo, hi = g == 1 and "vunpcklps " or "vunpcklpd ", g == 1 and "vunpckhps " or "vunpckhpd "
    ctx:wline(lo .. "ymm14, " .. A .. ", " .. Bv)
    ctx:wline(hi .. "ymm15, " .. A .. ", " .. Bv)
    ctx:wline("vperm2f128 " .. d[1] .. ", ymm14, ymm15, 0x20")
    ctx:wline("vperm2f128 " .. d[2] .. ", ymm14, ymm15, 0x31")
  end
end
ops.vzip_lo, ops.vzip_hi = zip(0), zip(1)

-- Chunks of 4 lanes: AVX-512 one 128-bit shuffle; AVX2 a vperm2f128 per ymm (chunks 0, 1 of a
-- vector in its first ymm, 2, 3 in its second).
function ops.vsel128(ctx, op)
  local d, a, b, imm = parts(ctx, op.dst), parts(ctx, op.src[1]), parts(ctx, op.src[2]), op.attr.imm
  if is512(ctx) then
    ctx:wline("vshuff32x4 " .. d[1] .. ", " .. a[1] .. ", " .. b[1] .. ", " .. C.int(imm))
    return
  end
  -- vperm2f128: 0, 1 the first source's halves, 2, 3 the second's; a source's own ymm whole is a move
  local function half(dst, src, s0, s1)
    if s1 == s0 + 1 and s0 % 2 == 0 then
      local r = src[math.floor(s0 / 2) + 1]
      if r ~= dst then ctx:wline("vmovaps " .. dst .. ", " .. r) end
      return
    end
    ctx:wline("vperm2f128 " .. dst .. ", " .. src[1] .. ", " .. src[2] .. ", " .. C.int(s0 + 16 * s1))
  end
  half(d[1], a, imm % 4, math.floor(imm / 4) % 4)
  half(d[2], b, math.floor(imm / 16) % 4, math.floor(imm / 64) % 4)
end

-- A 16-entry lookup: AVX-512 one VPERMPS (it reads the index's low 4 bits). A ymm pair: per part,
-- VPERMPS of each table half by the index's low 3 bits, VBLENDVPS choosing the upper half's where
-- bit 3 is set (moved to the sign bit).
function ops.vlut16(ctx, op)
  local d, tab, idx = parts(ctx, op.dst), parts(ctx, op.src[1]), parts(ctx, op.src[2])
  if is512(ctx) then
    ctx:wline("vpermps " .. d[1] .. ", " .. idx[1] .. ", " .. tab[1])
    return
  end
  local m, hi = scratch(ctx, 1), scratch(ctx, 2)
  for i = 1, 2 do
    ctx:wline("vpslld " .. m .. ", " .. idx[i] .. ", 28")
    ctx:wline("vpermps " .. hi .. ", " .. idx[i] .. ", " .. tab[2])
    ctx:wline("vpermps " .. d[i] .. ", " .. idx[i] .. ", " .. tab[1])
    ctx:wline("vblendvps " .. d[i] .. ", " .. d[i] .. ", " .. hi .. ", " .. m)
  end
end

-- Within each 128-bit lane (a chunk): the unpack and shufps instructions, per register.
local function in_chunks(ins)
  return function(ctx, op)
    local d, a, b = parts(ctx, op.dst), parts(ctx, op.src[1]), parts(ctx, op.src[2])
    local i = type(ins) == "function" and ins(op) or ins
    for p = 1, #d do ctx:wline(i .. " " .. d[p] .. ", " .. a[p] .. ", " .. b[p]) end
  end
end
ops.vunpk_lo = in_chunks(function(op) return op.attr.g == 1 and "vunpcklps" or "vunpcklpd" end)
ops.vunpk_hi = in_chunks(function(op) return op.attr.g == 1 and "vunpckhps" or "vunpckhpd" end)
local function shufps(imm)
  return function(ctx, op)
    local d, a, b = parts(ctx, op.dst), parts(ctx, op.src[1]), parts(ctx, op.src[2])
    for p = 1, #d do ctx:wline("vshufps " .. d[p] .. ", " .. a[p] .. ", " .. b[p] .. ", " .. imm) end
  end
end
ops.vuzp4_even, ops.vuzp4_odd = shufps("0x88"), shufps("0xdd")

function ops.vrev(ctx, op)
  local d, a = parts(ctx, op.dst), parts(ctx, op.src[1])
  if is512(ctx) then
    local w = {}
    for i = 0, 15 do w[i + 1] = 15 - i end
    ctx:wline("vmovdqa32 " .. d[1] .. ", zmmword ptr [rip + FK_SYM(" .. ctx:const("rev16", w) .. ")]")
    ctx:wline("vpermps " .. d[1] .. ", " .. d[1] .. ", " .. a[1])
    return
  end
  ctx:wline("vmovdqu ymm14, ymmword ptr [rip + FK_SYM(" .. ctx:const("rev8", { 7, 6, 5, 4, 3, 2, 1, 0 }) .. ")]")
  ctx:wline("vpermps " .. d[1] .. ", ymm14, " .. a[2])
  ctx:wline("vpermps " .. d[2] .. ", ymm14, " .. a[1])
end

-- A table of 16 words as a vector: one load (a ymm pair: two), RIP-relative.
function ops.vtable(ctx, op)
  local d = parts(ctx, op.dst)
  local sym = ctx:const("t_" .. op.attr.table.name, op.attr.table.words)
  if is512(ctx) then
    ctx:wline("vmovups " .. d[1] .. ", zmmword ptr [rip + FK_SYM(" .. sym .. ")]")
    return
  end
  for i = 1, 2 do
    ctx:wline("vmovups " .. d[i] .. ", ymmword ptr [rip + FK_SYM(" .. sym .. ") + " .. C.int(32 * (i - 1)) .. "]")
  end
end

function ops.const_addr(ctx, op)
  local sym = ctx:const("t_" .. op.attr.table.name, op.attr.table.words)
  ctx:wline("lea " .. ctx:reg(op.dst) .. ", [rip + FK_SYM(" .. sym .. ")]")
end

-- The 8 f32 at an element address in lanes 0-7 and again in 8-15: VBROADCASTF64X4 (AVX2: the
-- same ymm load into both parts).
function ops.load_bcast8(ctx, op)
  local d = parts(ctx, op.dst)
  if is512(ctx) then
    ctx:wline("vbroadcastf64x4 " .. d[1] .. ", ymmword ptr " .. elem(ctx, op, 4))
    return
  end
  for i = 1, 2 do ctx:wline("vmovups " .. d[i] .. ", ymmword ptr " .. elem(ctx, op, 4)) end
end

function ops.load_bcast_f32(ctx, op)
  local d = parts(ctx, op.dst)
  for i = 1, #d do ctx:wline("vbroadcastss " .. d[i] .. ", dword ptr " .. elem(ctx, op, 4)) end
end

function ops.vconst(ctx, op)
  local d = parts(ctx, op.dst)
  for i = 1, #d do
    local k = kconst(ctx, string.format("f%08x", op.attr.bits), op.attr.bits, 1)
    ctx:wline("vpbroadcastd " .. d[i] .. ", dword ptr " .. k)
  end
end
-- max(a, b) = a > b ? a : b, which is exactly (v)maxps a, b (NaN or equal -> b)
ops.vmax = binary("vmaxps")

-- The sign bit flipped: an xor with -0.0 (exact; NaN payloads kept).
function ops.vneg(ctx, op)
  local d, a = parts(ctx, op.dst), parts(ctx, op.src[1])
  for i = 1, #d do
    if is512(ctx) then
      ctx:wline("vpxord " .. d[i] .. ", " .. a[i] .. ", " .. kopnd(ctx, op, "sign", K_SIGN))
    else
      ctx:wline("vxorps " .. d[i] .. ", " .. a[i] .. ", " .. kopnd(ctx, op, "sign", K_SIGN))
    end
  end
end

-- a * b + c: in place when the result took c's registers (231) or a's or b's (213: the
-- multiplication commutes exactly); else a copy of c first.
function ops.vfma(ctx, op)
  local d, a, b, c = parts(ctx, op.dst), parts(ctx, op.src[1]), parts(ctx, op.src[2]), parts(ctx, op.src[3])
  for i = 1, #d do
    if d[i] == a[i] then
      ctx:wline("vfmadd213ps " .. d[i] .. ", " .. b[i] .. ", " .. c[i])
    elseif d[i] == b[i] then
      ctx:wline("vfmadd213ps " .. d[i] .. ", " .. a[i] .. ", " .. c[i])
    else
      if d[i] ~= c[i] then ctx:wline("vmovaps " .. d[i] .. ", " .. c[i]) end
      ctx:wline("vfmadd231ps " .. d[i] .. ", " .. a[i] .. ", " .. b[i])
    end
  end
end

-- Integer RNE to bf16 (kept in the high half): u + 0x7fff + ((u >> 16) & 1), low half cleared;
-- NaN lanes become the canonical quiet NaN 0x7fc00000, whatever their sign and payload.
-- AVX-512 uses EVEX forms only (registers 16-31 have no VEX encoding), scalars included: a
-- scalar is rounded as lane 0 of its zmm, the other lanes being don't-care. It adds the tie
-- bit under a mask (k7, free between ops: kmask sets it per op) instead of shifting it down.
-- The constants are registers where the loop holds them (gen/kregs.lua), else broadcasts from
-- memory.
local function rne(ctx, op, d, v, xmm, keep_low)
  if is512(ctx) then
    -- u + 0x7fff, plus 1 in the lanes whose bit 16 (the kept part's lowest bit) is set
    d, v = Z(d), Z(v)
    ctx:wline("vpaddd " .. d .. ", " .. v .. ", " .. kopnd(ctx, op, "rne_bias", K_BIAS))
    ctx:wline("vptestmd k7, " .. v .. ", " .. kopnd(ctx, op, "bit16", K_B16))
    ctx:wline("vpaddd " .. d .. "{k7}, " .. d .. ", " .. kopnd(ctx, op, "one", K_ONE))
    ctx:wline("vcmpps k6, " .. v .. ", " .. v .. ", 3")                 -- unordered: NaN lanes
    local kn = ctx:kreg(op, K_NAN)
    if kn then
      ctx:wline("vmovdqa32 " .. d .. "{k6}, " .. Z(kn))
    else
      ctx:wline("vpbroadcastd " .. d .. "{k6}, dword ptr " .. kconst(ctx, "qnan", K_NAN, 1))
    end
    if not keep_low then ctx:wline("vpandd " .. d .. ", " .. d .. ", " .. kopnd(ctx, op, "hi16", K_HI)) end
    return
  end
  local W = xmm and X or Y
  local t = W(scratch(ctx, 1))
  d, v = W(d), W(v)
  ctx:wline("vpsrld " .. d .. ", " .. v .. ", 16")
  ctx:wline("vpand " .. d .. ", " .. d .. ", " .. kopnd(ctx, op, "one", K_ONE, xmm))
  ctx:wline("vpaddd " .. d .. ", " .. d .. ", " .. v)
  ctx:wline("vpaddd " .. d .. ", " .. d .. ", " .. kopnd(ctx, op, "rne_bias", K_BIAS, xmm))
  ctx:wline("vcmpps " .. t .. ", " .. v .. ", " .. v .. ", 3")          -- all ones in NaN lanes
  ctx:wline("vblendvps " .. d .. ", " .. d .. ", " .. kopnd(ctx, op, "qnan", K_NAN, xmm) .. ", " .. t)
  if not keep_low then ctx:wline("vpand " .. d .. ", " .. d .. ", " .. kopnd(ctx, op, "hi16", K_HI, xmm)) end
end

-- The constants an op reads from registers when its loop holds them (gen/kregs.lua); AVX-512: the
-- permute tables too (by their negative codes, TABLES).
function M.constants(op, variant)
  local o = op.op
  if not variant.ymm and o == "load_f16x4q" then return { TABLES.quads } end
  if not variant.ymm and o == "vpair_split" then return { TABLES["pair" .. C.int(op.attr.imm)] } end
  if o == "vrne" or o == "srne" then return { K_BIAS, K_B16, K_ONE, K_NAN, K_HI } end
  if o == "vrne_st" then return { K_BIAS, K_B16, K_ONE, K_NAN } end
  if o == "bf16_odd" or o == "bf16_pairs" then return { K_HI } end
  if o == "vneg" then return { K_SIGN } end
  return nil
end

-- A held constant's name in the register map: a permute table (a negative code), else nil.
function M.constant_name(bits)
  return TABLE_OF[bits] and "table " .. TABLE_OF[bits] or nil
end

-- A held constant: a broadcast from the stamp's constant pool, zero by an xor; a permute table
-- loaded whole.
function ops.kconst(ctx, op)
  local d = ctx:reg(op.dst)
  local name = TABLE_OF[op.attr.bits]
  if name then
    ctx:wline("vmovdqa32 " .. d .. ", zmmword ptr [rip + FK_SYM(" .. ctx:const(name, table_words(name)) .. ")]")
    return
  end
  if op.attr.bits == 0 then
    ctx:wline((is512(ctx) and "vpxord " or "vpxor ") .. d .. ", " .. d .. ", " .. d)
    return
  end
  local bits = op.attr.bits
  ctx:wline("vpbroadcastd " .. d .. ", dword ptr " .. kconst(ctx, string.format("f%08x", bits), bits, 1))
end

function ops.vrne(ctx, op)
  local d, v = parts(ctx, op.dst), parts(ctx, op.src[1])
  for i = 1, #d do rne(ctx, op, d[i], v[i], false) end
end

-- the same, the low half left as it is (its only readers take the high half)
function ops.vrne_st(ctx, op)
  local d, v = parts(ctx, op.dst), parts(ctx, op.src[1])
  for i = 1, #d do rne(ctx, op, d[i], v[i], false, true) end
end

function ops.srne(ctx, op)
  rne(ctx, op, ctx:reg(op.dst), ctx:reg(op.src[1]), true)
end

-- The canonical NaN: NaN lanes become 0x7fc00000, the others are kept (d may be v). AVX-512:
-- the unordered compare into k6, then a blend from the broadcast constant; AVX2: the compare
-- into a vector mask, then vblendvps from the constant row.
local function canon(ctx, d, v, xmm)
  if is512(ctx) then
    d, v = Z(d), Z(v)
    ctx:wline("vcmpps k6, " .. v .. ", " .. v .. ", 3")                 -- unordered: NaN lanes
    ctx:wline("vblendmps " .. d .. "{k6}, " .. v .. ", " .. bconst(ctx, "qnan", 0x7fc00000))
    return
  end
  local W = xmm and X or Y
  local row = (xmm and "xmmword ptr " or "ymmword ptr ") .. kconst(ctx, "qnan_x8", 0x7fc00000, 8)
  local t = W(scratch(ctx, 1))
  d, v = W(d), W(v)
  ctx:wline("vcmpps " .. t .. ", " .. v .. ", " .. v .. ", 3")          -- all ones in NaN lanes
  ctx:wline("vblendvps " .. d .. ", " .. v .. ", " .. row .. ", " .. t)
end

function ops.vcanon(ctx, op)
  local d, v = parts(ctx, op.dst), parts(ctx, op.src[1])
  for i = 1, #d do canon(ctx, d[i], v[i], false) end
end

function ops.scanon(ctx, op)
  canon(ctx, ctx:reg(op.dst), ctx:reg(op.src[1]), true)
end

-- Raw bf16 pairs: every NaN halfword ((h & 0x7fff) > 0x7f80) becomes 0x7fc0, the others are
-- kept (d may be v). AVX-512 (BW): h << 1 above 0xff00 (unsigned) is a NaN, then a word blend
-- from a row of 0x7fc0; AVX2 (no unsigned word compare): (h & 0x7fff) > 0x7f80 signed, then a
-- byte blend (the mask is whole words).
function ops.vcanon_raw(ctx, op)
  local d, v = parts(ctx, op.dst), parts(ctx, op.src[1])
  if is512(ctx) then
    local row = function(name, word) return "zmmword ptr " .. kconst(ctx, name, word, 16) end
    ctx:wline("vpsllw " .. T0 .. ", " .. v[1] .. ", 1")
    ctx:wline("vpcmpuw k6, " .. T0 .. ", " .. row("bf16_nan_min", 0xff00ff00) .. ", 6")   -- above: NaN halfwords
    ctx:wline("vpblendmw " .. d[1] .. "{k6}, " .. v[1] .. ", " .. row("bf16_qnan", 0x7fc07fc0))
    return
  end
  local row = function(name, word) return "ymmword ptr " .. kconst(ctx, name, word, 8) end
  local t = scratch(ctx, 1)
  for i = 1, #d do
    ctx:wline("vpand " .. t .. ", " .. v[i] .. ", " .. row("bf16_abs_x8", 0x7fff7fff))
    ctx:wline("vpcmpgtw " .. t .. ", " .. t .. ", " .. row("bf16_inf_x8", 0x7f807f80))
    ctx:wline("vpblendvb " .. d[i] .. ", " .. v[i] .. ", " .. row("bf16_qnan_x8", 0x7fc07fc0) .. ", " .. t)
  end
end

function ops.bcast(ctx, op)
  local d = parts(ctx, op.dst)
  ctx:wline("vbroadcastss " .. d[1] .. ", " .. X(ctx:reg(op.src[1])))
  for i = 2, #d do ctx:wline("vmovaps " .. d[i] .. ", " .. d[1]) end
end

-- acc = a > acc ? a : acc: (v)maxps a, acc (NaN or equal -> acc), in place.
function ops.max_acc(ctx, op)
  local acc, a = parts(ctx, op.src[1]), parts(ctx, op.src[2])
  for i = 1, #acc do ctx:wline("vmaxps " .. acc[i] .. ", " .. a[i] .. ", " .. acc[i]) end
end

-- The halving tree's last three levels on the 8 lanes of the ymm src (lane i op= lane i + s for
-- s = 4, 2, 1, lower lanes the first operand), the result in d's lane 0; t a scratch register.
local function tree8(ctx, ins, sins, d, src, t, extract)
  ctx:wline(extract .. X(t) .. ", " .. Y(src) .. ", 1")
  ctx:wline(ins .. " " .. X(d) .. ", " .. X(src) .. ", " .. X(t))
  ctx:wline("vmovhlps " .. X(t) .. ", " .. X(d) .. ", " .. X(d))
  ctx:wline(ins .. " " .. X(d) .. ", " .. X(d) .. ", " .. X(t))
  ctx:wline("vmovshdup " .. X(t) .. ", " .. X(d))
  ctx:wline(sins .. " " .. X(d) .. ", " .. X(d) .. ", " .. X(t))
end

-- Halving trees: lane i op= lane i + s for s = 8, 4, 2, 1, the lower lanes the first operand
-- (reduce_max: by the vmax rule, (v)maxps lo, hi: lo > hi ? lo : hi).
local function reduce16(ins, sins)
  return function(ctx, op)
    local v, d = parts(ctx, op.src[1]), ctx:reg(op.dst)
    local t = is512(ctx) and T0 or scratch(ctx, 1)
    if is512(ctx) then
      ctx:wline("vextractf64x4 " .. Y(t) .. ", " .. v[1] .. ", 1")
      ctx:wline(ins .. " " .. Y(d) .. ", " .. Y(v[1]) .. ", " .. Y(t))
    else
      ctx:wline(ins .. " " .. Y(d) .. ", " .. v[1] .. ", " .. v[2])
    end
    tree8(ctx, ins, sins, d, d, t, is512(ctx) and "vextractf32x4 " or "vextractf128 ")
  end
end
ops.reduce_max, ops.reduce_add = reduce16("vmaxps", "vmaxss"), reduce16("vaddps", "vaddss")

-- The halving tree over lanes 8 half .. 8 half + 7: the half in a ymm (VEXTRACTF64X4 for the
-- upper one; a ymm pair's part half + 1), then reduce_add's last three levels.
function ops.reduce_add8(ctx, op)
  if not is512(ctx) then
    tree8(ctx, "vaddps", "vaddss", ctx:reg(op.dst), parts(ctx, op.src[1])[op.attr.half + 1], scratch(ctx, 1),
          "vextractf128 ")
    return
  end
  local v, d = parts(ctx, op.src[1])[1], ctx:reg(op.dst)
  local h = v
  if op.attr.half == 1 then
    ctx:wline("vextractf64x4 " .. Y(d) .. ", " .. v .. ", 1")
    h = d
  end
  tree8(ctx, "vaddps", "vaddss", d, h, T0, "vextractf32x4 ")
end

local function sbinary(ins)
  return function(ctx, op)
    ctx:wline(ins .. " " .. X(ctx:reg(op.dst)) .. ", " .. X(ctx:reg(op.src[1])) .. ", " .. X(ctx:reg(op.src[2])))
  end
end
ops.sadd = sbinary("vaddss")

function ops.sadd_acc(ctx, op)
  local acc = X(ctx:reg(op.src[1]))
  ctx:wline("vaddss " .. acc .. ", " .. acc .. ", " .. X(ctx:reg(op.src[2])))
end
ops.smul = sbinary("vmulss")
ops.sdiv = sbinary("vdivss")

function ops.ssqrt(ctx, op)
  local d = X(ctx:reg(op.dst))
  ctx:wline("vsqrtss " .. d .. ", " .. d .. ", " .. X(ctx:reg(op.src[1])))
end

function ops.vset(ctx, op)
  local d, v = parts(ctx, op.src[1]), parts(ctx, op.src[2])
  for i = 1, #d do
    if d[i] ~= v[i] then ctx:wline("vmovaps " .. d[i] .. ", " .. v[i]) end
  end
end

-- Stack slots: 64 bytes each at rsp (the frame reserves them, M.begin).
function ops.spill(ctx, op)
  local v, o = parts(ctx, op.src[1]), 64 * op.attr.slot
  if is512(ctx) then
    ctx:wline("vmovups zmmword ptr " .. mem("rsp", nil, 1, o) .. ", " .. v[1])
    return
  end
  for i = 1, 2 do ctx:wline("vmovups ymmword ptr " .. mem("rsp", nil, 1, o + 32 * (i - 1)) .. ", " .. v[i]) end
end

function ops.reload(ctx, op)
  local d, o = parts(ctx, op.dst), 64 * op.attr.slot
  if is512(ctx) then
    ctx:wline("vmovups " .. d[1] .. ", zmmword ptr " .. mem("rsp", nil, 1, o))
    return
  end
  for i = 1, 2 do ctx:wline("vmovups " .. d[i] .. ", ymmword ptr " .. mem("rsp", nil, 1, o + 32 * (i - 1))) end
end

-- Lane `lane` of a slot, broadcast from memory (VBROADCASTSS m32: a load, no shuffle).
function ops.reload_bcast(ctx, op)
  local d = parts(ctx, op.dst)
  local a = "dword ptr " .. mem("rsp", nil, 1, 64 * op.attr.slot + 4 * op.attr.lane)
  for i = 1, #d do ctx:wline("vbroadcastss " .. d[i] .. ", " .. a) end
end

-- Loops -------------------------------------------------------------------------------------

function ops.for_rows(ctx, op)
  local r, first, last = ctx:reg(op.attr.ivar), ctx:reg(op.src[1]), ctx:reg(op.src[2])
  local g = op.attr.group
  local lg, ls, le = ctx:new_label("rows"), ctx:new_label("row"), ctx:new_label("rows_end")
  ctx:wline("mov " .. r .. ", " .. first)
  ctx:wlabel(lg)
  ctx:wline("lea rax, " .. mem(r, nil, 1, g))
  ctx:wline("cmp rax, " .. last)
  ctx:wline("jg " .. (g > 1 and ls or le))
  ctx:lower(op.attr.grouped)
  ctx:wline("add " .. r .. ", " .. C.int(g))
  ctx:wline("jmp " .. lg)
  if g > 1 then
    ctx:wlabel(ls)
    ctx:wline("cmp " .. r .. ", " .. last)
    ctx:wline("jge " .. le)
    ctx:lower(op.attr.single)
    ctx:wline("add " .. r .. ", 1")
    ctx:wline("jmp " .. ls)
  end
  ctx:wlabel(le)
end

-- Full tiles in a bottom-tested loop (one taken branch per tile), then the tail.
function ops.for_tiles(ctx, op)
  local i, n, rem = ctx:reg(op.attr.ivar), ctx:reg(op.src[1]), ctx:reg(op.attr.rem)
  local tile = op.attr.tile
  local lt, lc, ltail, le = ctx:new_label("tiles"), ctx:new_label("tiles_check"), ctx:new_label("tail"),
                            ctx:new_label("tiles_end")
  if op.attr.start then ctx:wline("mov " .. i .. ", " .. ctx:reg(op.src[2]))
  else ctx:wline("xor " .. GPR32[i] .. ", " .. GPR32[i]) end
  ctx:wline("jmp " .. lc)
  ctx:wraw("    .p2align 4")
  ctx:wlabel(lt)
  ctx:mca_begin(op)
  ctx:lower(op.attr.full)
  for _, bp in ipairs(op.attr.bumps or {}) do          -- pointers bumped per tile (gen/bump.lua)
    ctx:wline("add " .. ctx:reg(bp.value) .. ", " .. C.int(bp.bytes))
  end
  ctx:wline("add " .. i .. ", " .. C.int(tile))
  ctx:wlabel(lc)
  ctx:wline("lea rax, " .. mem(i, nil, 1, tile))
  ctx:wline("cmp rax, " .. n)
  ctx:wline("jle " .. lt)
  ctx:mca_end(op)
  ctx:wlabel(ltail)
  if op.attr.whole then return end
  ctx:wline("mov " .. rem .. ", " .. n)
  ctx:wline("sub " .. rem .. ", " .. i)
  ctx:wline("jle " .. le)
  ctx:lower(op.attr.tail)
  ctx:wlabel(le)
end

-- Dispatch: compare and branch to each arm; no arm for other values.
function ops.cases(ctx, op)
  local v, done = ctx:reg(op.src[1]), ctx:new_label("cases_end")
  for _, arm in ipairs(op.attr.arms) do
    local next_ = ctx:new_label("case")
    ctx:wline("cmp " .. v .. ", " .. C.int(arm.value))
    ctx:wline("jne " .. next_)
    ctx:lower(arm.body)
    ctx:wline("jmp " .. done)
    ctx:wlabel(next_)
  end
  ctx:wlabel(done)
end

return M
