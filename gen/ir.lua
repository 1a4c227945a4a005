-- gen/ir.lua: the ISA-neutral IR between templates and backends.
--
-- A proc is one leaf form of one tier: its argument struct, a prologue, a body (a list of
-- ops, with loop and case ops holding nested bodies). Values are typed:
--   i  64-bit integer / pointer (a general register)
--   v  16 32-bit lanes, the canonical vector (1 zmm, 2 ymm or 4 q registers): f32 values, or
--      "raw" pairs of bf16 (lane l = halfwords 2l, 2l+1) from load_raw
--   s  one f32 in lane 0 (1 register on every ISA)
--   c  a 32-bit pattern in every lane of one vector register (1 register on every ISA): a
--      constant a backend holds in a register for the ops of a loop (gen/kregs.lua)
-- Temps are single-assignment. Accumulators ("vars") are updated in place by *_acc ops, which
-- is what FMLA, VFMADD231PS, BFDOT and VDPBF16PS do; their live range spans every loop that
-- touches them.
--
-- A lane group ({ rem = i value, base = n, step = 1 | 2 }) on a memory or accumulate op selects
-- the lanes l with base + step * l < rem (for load_raw: halfwords h with base + h < rem). The
-- other lanes are neither read nor written, and accumulate nothing; a masked load gives them
-- +0, or the pattern of its attr.fill (0x80000000: -0). Backends materialise the mask themselves
-- (k registers, vector masks, or lane-by-lane code), outside the allocator.
--
-- Stack slots (spill, reload) hold vectors across a pass that needs their registers; the stamp's
-- frame holds proc.frame_slots of them, 64 bytes each. They move bits, never change them.
--
-- ORDER OP: every op kind is listed here with its operand shape; validate() checks each op
-- against this table and every backend must implement every kind (gen/fkgen.lua checks).

local M = {}

-- kind -> { dst type or false, { src types... }, attrs that must be present }
M.OPS = {
  entry      = { "i", {} },                         -- the argument struct pointer, at entry
  arg        = { "i", { "i" }, { "field" } },       -- integer/pointer field of the arg struct
  arg_f32    = { "s", { "i" }, { "field" } },       -- f32 field of the arg struct
  iconst     = { "i", {}, { "imm" } },
  iadd       = { "i", { "i", "i" } },
  iaddi      = { "i", { "i" }, { "imm" } },
  iandi      = { "i", { "i" }, { "imm" } },
  isub       = { "i", { "i", "i" } },
  imul       = { "i", { "i", "i" } },
  iwrap      = { "i", { "i", "i" } },                -- src1 >= src2 ? src1 - src2 : src1 (signed)
  imin       = { "i", { "i", "i" } },                -- signed minimum
  imuli      = { "i", { "i" }, { "imm" } },
  iconst64   = { "i", {}, { "hi", "lo" } },          -- hi * 2^32 + lo (two 32-bit halves)
  ixor       = { "i", { "i", "i" } },
  ishri      = { "i", { "i" }, { "imm" } },          -- logical shift right by 0..63
  addr       = { "i", { "i", "i" }, { "scale" } },   -- src1 + src2 * scale (scale 1, 2, 4, 8)
  zero       = { "v", {} },
  sconst     = { "s", {}, { "bits" } },              -- f32 constant given as its bit pattern
  cvt_i2s    = { "s", { "i" } },                     -- int64 -> f32, RNE
  load_f32   = { "v", { "i", "i" }, { "off" } },     -- [base + (idx + off) * 4], 16 lanes
  load_bf16  = { "v", { "i", "i" }, { "off" } },     -- 16 bf16 widened exactly (<< 16)
  load_raw   = { "v", { "i", "i" }, { "off" } },     -- 32 bf16 as 16 pairs (lane l = 2l, 2l+1)
  load_pair_bcast = { "v", { "i", "i" }, { "off" } }, -- the bf16 pair at [base + (idx + off) * 2] in every lane
  -- quantized weights: 16 bytes at [base + (idx + off) * 1], lane l = byte l, widened to int32;
  -- never a lane group (the layouts are padded to whole blocks)
  load_i8    = { "v", { "i", "i" }, { "off" } },     -- sign-extended (-128..127)
  load_u8    = { "v", { "i", "i" }, { "off" } },     -- zero-extended (0..255)
  -- the 8 IEEE binary16 at [base + (idx + off) * 2], widened exactly, in lanes 0-7; lanes 8-15 +0
  load_f16x8 = { "v", { "i", "i" }, { "off" } },
  -- the 4 IEEE binary16 at [base + (idx + off) * 2], widened exactly; lanes 4c..4c+3 <- the c-th
  load_f16x4q = { "v", { "i", "i" }, { "off" } },
  load_bcast_f16 = { "v", { "i", "i" }, { "off" } }, -- the IEEE binary16 at [base + (idx + off) * 2], widened
                                                     -- exactly to f32 (subnormals become normal f32), in every
                                                     -- lane; a NaN's payload is the ISA's
  prefetch   = { false, { "i", "i" }, { "off", "size", "level" } }, -- hint: line base + (idx + off) * size to L`level`
  store_f32  = { false, { "i", "i", "v" }, { "off" } },
  store_bf16 = { false, { "i", "i", "v" }, { "off" } }, -- stores the high halves (see rne)
  store_raw  = { false, { "i", "i", "v" }, { "off" } }, -- 32 bf16 from 16 pairs (lane l -> 2l, 2l+1)
  store_i8   = { false, { "i", "i", "v" }, { "off" } }, -- int32 lanes in -128..127 as 16 bytes (lane l -> byte l)
  load1_bf16 = { "s", { "i", "i" }, { "off" } },
  load1_f32  = { "s", { "i", "i" }, { "off" } },
  load1_i32  = { "i", { "i", "i" }, { "off" } },     -- int32 [base + (idx + off) * 4], sign-extended
  store1_bf16 = { false, { "i", "i", "s" }, { "off" } },
  store1_f32 = { false, { "i", "i", "s" }, { "off" } },
  load1_u64  = { "i", { "i", "i" }, { "off" } },     -- uint64 [base + (idx + off) * 8]
  store1_u64 = { false, { "i", "i", "i" }, { "off" } },
  sadd_acc   = { false, { "s", "s" } },              -- src1 += src2 (f32, RNE), in place
  fma_acc    = { false, { "v", "v", "v" } },         -- src1 += src2 * src3 (fused), in place
  fma_acc_mem = { false, { "v", "v", "i", "i" }, { "off" } }, -- src1 += src2 * f32 [src3 + (src4 + off) * 4]
  max_acc    = { false, { "v", "v" } },              -- src1 = src2 > src1 ? src2 : src1 (vmax rule), in place
  vset       = { false, { "v", "v" } },              -- src1 = src2, in place (a loop-carried vector)
  dot_bf16_acc = { false, { "v", "v", "v" } },       -- src1[l] += pair dot of raw src2, src3 (fast tier)
  -- int32 lane l of src1 + the sum over bytes 4l..4l+3 of u8(src2) * s8(src3), wrapping (exact while
  -- |sum| < 2^31): VPDPBUSD, USDOT; the variants that have one (NEEDS below)
  dot_u8s8   = { "v", { "v", "v", "v" } },
  dot_s8s8   = { "v", { "v", "v", "v" } },
  -- dot_s8s8 where src3's bytes are in -127..127 (any other src3 byte: the ISA's result): the
  -- activations' quants, clamped to +-127; AVX2's VPSIGNB / VPABSB / VPMADDUBSW (|w| x sign(w) x:
  -- pairs of products inside int16) / VPMADDWD give the exact sums there, SDOT everywhere
  dot_s8s7   = { "v", { "v", "v", "v" } },
  -- dot_u8s8 where src2's bytes are in 0..127 (any other src2 byte: the ISA's result): q4's nibbles
  -- and their offset; VPDPBUSD and SDOT as they are, AVX2's VPMADDUBSW / VPMADDWD (pairs of products
  -- at most 2 x 127 x 128 = 32512: inside int16) in every variant that has an int8 dot
  dot_u7s8   = { "v", { "v", "v", "v" } },

  bf16_even  = { "v", { "v" } },                     -- raw pairs -> f32 of halfwords 2l
  bf16_odd   = { "v", { "v" } },                     -- raw pairs -> f32 of halfwords 2l + 1
  uzp_even   = { "v", { "v", "v" } },                -- elements 0, 2, .., 30 of (src1 ++ src2)
  uzp_odd    = { "v", { "v", "v" } },                -- elements 1, 3, .., 31 of (src1 ++ src2)
  vadd       = { "v", { "v", "v" } },
  vmul       = { "v", { "v", "v" } },
  vmax       = { "v", { "v", "v" } },
  vfma       = { "v", { "v", "v", "v" } },           -- src1 * src2 + src3 (fused)
  vneg       = { "v", { "v" } },                     -- sign bit flipped (exact, NaN too)
  vsub       = { "v", { "v", "v" } },
  vdiv       = { "v", { "v", "v" } },                -- IEEE divide, correctly rounded
  vmin       = { "v", { "v", "v" } },                -- src1 < src2 ? src1 : src2 (NaN or equal -> src2)
  vconst     = { "v", {}, { "bits" } },              -- a 32-bit pattern in every lane
  vtable     = { "v", {}, { "table" } },             -- lane l = word l of a constant table of the stamp
  vrint      = { "v", { "v" } },                     -- f32 rounded to an integral value, ties to even
  vcvt_f2i   = { "v", { "v" } },                     -- integral f32 -> int32; lanes out of int32 range
                                                     -- (NaN, inf, |v| >= 2^31) are ISA-defined: sanitize first
  vcvt_i2f   = { "v", { "v" } },                     -- int32 -> f32, RNE
  -- int32 lanes (two's complement), and bitwise ops on the 32-bit patterns
  viadd      = { "v", { "v", "v" } },
  visub      = { "v", { "v", "v" } },
  vishl      = { "v", { "v" }, { "imm" } },
  visra      = { "v", { "v" }, { "imm" } },          -- arithmetic shift right
  vushr8     = { "v", { "v" }, { "imm" } },          -- each byte shifted right logically (1..7, zeros in)
  vimin      = { "v", { "v", "v" } },                -- signed
  vimax      = { "v", { "v", "v" } },
  vand       = { "v", { "v", "v" } },
  vor        = { "v", { "v", "v" } },
  vxor       = { "v", { "v", "v" } },
  vigt       = { "v", { "v", "v" } },                -- int32 src1 > src2 (signed): all ones, else 0
  -- lane movement (FFT stages)
  vzip_lo    = { "v", { "v", "v" }, { "g" } },       -- chunks of g lanes: a[0:g] b[0:g] a[g:2g] ...
                                                     -- (lanes 0-7 of a and b)
  vzip_hi    = { "v", { "v", "v" }, { "g" } },       -- the same from lanes 8-15
  vrev       = { "v", { "v" } },                     -- lane l <- lane 15 - l
  vpair_split = { "v", { "v" }, { "imm" } },         -- lanes 0-7 <- lane 2 imm, lanes 8-15 <- lane 2 imm + 1 (imm 0..3)
  -- lane movement within and between the four 4-lane chunks (the transposed reduction)
  vsel128    = { "v", { "v", "v" }, { "imm" } },     -- chunks a[imm & 3], a[imm >> 2 & 3], b[imm >> 4 & 3], b[imm >> 6]
  vunpk_lo   = { "v", { "v", "v" }, { "g" } },       -- per chunk: a[0:g] b[0:g] (g = 1: a0 b0 a1 b1; g = 2)
  vunpk_hi   = { "v", { "v", "v" }, { "g" } },       -- per chunk: the same from its lanes 2, 3
  vuzp4_even = { "v", { "v", "v" } },                -- per chunk: a0 a2 b0 b2
  vuzp4_odd  = { "v", { "v", "v" } },                -- per chunk: a1 a3 b1 b3
  vlut16     = { "v", { "v", "v" } },                -- lane l <- src1 lane (src2[l] & 15): a 16-entry table
  const_addr = { "i", {}, { "table" } },             -- the address of a constant table of the stamp
  load_bcast_f32 = { "v", { "i", "i" }, { "off" } }, -- the f32 at [base + (idx + off) * 4] in every lane
  load_bcast8 = { "v", { "i", "i" }, { "off" } },    -- the 8 f32 at [base + (idx + off) * 4] in lanes 0-7 and 8-15
  bf16_pairs = { "v", { "v", "v" } },                -- raw pairs: lane l = (hi16 src1[l], hi16 src2[l])
  vrne       = { "v", { "v" } },                     -- integer RNE to bf16, kept as f32 bits
  vrne_st    = { "v", { "v" } },                     -- vrne with the low half left unspecified: only
                                                     -- store_bf16 (the value) and bf16_pairs may read it
  bcast      = { "v", { "s" } },
  reduce_add = { "s", { "v" }, { "tree" } },
  reduce_add8 = { "s", { "v" }, { "tree", "half" } }, -- the tree over lanes 8 half .. 8 half + 7 alone
  reduce_max = { "s", { "v" }, { "tree" } },         -- the tree's pairs by the vmax rule (lower lanes first)
  sadd       = { "s", { "s", "s" } },
  smul       = { "s", { "s", "s" } },
  sdiv       = { "s", { "s", "s" } },
  ssqrt      = { "s", { "s" } },
  srne       = { "s", { "s" } },
  vcanon     = { "v", { "v" } },                     -- NaN lanes -> the canonical NaN 0x7fc00000, others kept
  scanon     = { "s", { "s" } },
  vcanon_raw = { "v", { "v" } },                     -- raw pairs: NaN halfwords -> 0x7fc0, others kept
  kconst     = { "c", {}, { "bits" } },              -- a constant held in a register (gen/kregs.lua): the
                                                     -- ops of a loop read it through op.consts
  spill      = { false, { "v" }, { "slot" } },       -- src1 to stack slot `slot` (64 bytes) of the stamp's frame
  reload     = { "v", {}, { "slot" } },              -- the vector last spilled to stack slot `slot`
  reload_bcast = { "v", {}, { "slot", "lane" } },   -- lane `lane` of the vector in stack slot `slot`, in every lane
  for_tiles  = { false, { "i" }, { "tile", "ivar", "rem", "full", "tail" } }, -- attr.start: i value or nil
  for_rows   = { false, { "i", "i" }, { "group", "ivar", "grouped", "single" } },
  cases      = { false, { "i" }, { "arms" } },       -- arms: { { value = n, body = {...} } }
}

-- Ops that may carry a lane group (load_i8, load_u8 and load_bcast_f16 never do: the builder
-- refuses one at the template line, and validate() here).
M.MASKABLE = { load_f32 = true, load_bf16 = true, load_raw = true, store_f32 = true,
               store_bf16 = true, fma_acc = true, fma_acc_mem = true }

-- Ops only a fast-tier proc may use (their rounding differs between ISAs).
M.FAST_ONLY = { dot_bf16_acc = true }

-- dot_u8s8 and dot_s8s8 exist in the variants whose CPUs have the instruction (avx512vnni: u8s8,
-- dotprod: s8s8; t.tune.int8_dot) only: their bits are the same on every ISA, so any tier may use
-- them, and a template gives the forms that do `variants` (gen/fkgen.lua); a backend asked for one
-- in another variant fails the generation.

M.TREES = { halving = true }   -- lane i += lane i + s for s = 8, 4, 2, 1

M.VALUE_TYPES = { i = true, v = true, s = true, c = true }

-- The nested bodies of a structured op, in program order.
function M.sub_blocks(op)
  if op.op == "for_tiles" then return { op.attr.full, op.attr.tail } end
  if op.op == "for_rows" then return { op.attr.grouped, op.attr.single } end
  if op.op == "cases" then
    local b = {}
    for i, arm in ipairs(op.attr.arms) do b[i] = arm.body end
    return b
  end
  return {}
end

-- The constants a backend holds in registers for an op (gen/kregs.lua sets op.consts, a list of
-- { bits, value }): hidden operands, read where the op is lowered. A list of values.
function M.consts_of(op)
  local out = {}
  for _, k in ipairs(op.consts or {}) do out[#out + 1] = k.value end
  return out
end

-- Visit every op in program order, nested bodies depth first; fn(op, depth).
local function walk(list, fn, depth)
  for _, op in ipairs(list) do
    fn(op, depth)
    for _, b in ipairs(M.sub_blocks(op)) do walk(b, fn, depth + 1) end
  end
end
M.walk = walk

function M.walk_proc(proc, fn)
  walk(proc.prologue, fn, 0)
  walk(proc.body, fn, 0)
end

-- A snapshot of a proc's structure for the passes that try a rewrite and may take it back
-- (gen/kregs.lua, gen/bump.lua): every block's ops, every op's operands and attribute table, and
-- no held constants. The rewrites replace an op's attr table rather than edit it. Returns the
-- function that restores the proc to this state.
function M.snapshot(proc)
  local lists, ops = {}, {}
  local function grab(list)
    local copy = {}
    for i, op in ipairs(list) do
      copy[i] = op
      local src = {}
      for k, v in ipairs(op.src) do src[k] = v end
      ops[#ops + 1] = { op = op, src = src, attr = op.attr }
      for _, b in ipairs(M.sub_blocks(op)) do grab(b) end
    end
    lists[#lists + 1] = { list = list, copy = copy }
  end
  grab(proc.prologue)
  grab(proc.body)
  return function()
    for _, l in ipairs(lists) do
      for i = #l.list, 1, -1 do l.list[i] = nil end
      for i, op in ipairs(l.copy) do l.list[i] = op end
    end
    for _, o in ipairs(ops) do
      o.op.src, o.op.attr, o.op.consts = o.src, o.attr, nil
    end
  end
end

-- Structural validation. Returns nil or (message, op) for the first problem.
function M.validate(proc)
  local defined = {}
  local problem, where
  local function fail(msg, op)
    if not problem then problem, where = msg, op end
  end
  local function check(op)
    local spec = M.OPS[op.op]
    if not spec then return fail("unknown op '" .. tostring(op.op) .. "'", op) end
    local dst_t, src_t, attrs = spec[1], spec[2], spec[3] or {}
    if op.op == "for_tiles" and op.attr.start then src_t = { "i", "i" } end
    if #op.src ~= #src_t then
      return fail(op.op .. ": expected " .. #src_t .. " operands, got " .. #op.src, op)
    end
    for i, s in ipairs(op.src) do
      if s.type ~= src_t[i] then
        return fail(op.op .. ": operand " .. i .. " must be of type " .. src_t[i] ..
                    ", got " .. tostring(s.type), op)
      end
      if not defined[s] then return fail(op.op .. ": operand " .. i .. " used before definition", op) end
    end
    for _, a in ipairs(attrs) do
      if op.attr[a] == nil then return fail(op.op .. ": missing attribute '" .. a .. "'", op) end
    end
    for _, k in ipairs(M.consts_of(op)) do
      if k.type ~= "c" or not defined[k] then return fail(op.op .. ": a held constant used before definition", op) end
    end
    if op.lanes then
      if not M.MASKABLE[op.op] then return fail(op.op .. " cannot take a lane group", op) end
      local l = op.lanes
      if not l.rem or l.rem.type ~= "i" or not defined[l.rem] then return fail(op.op .. ": bad lane group", op) end
      if l.step ~= 1 and l.step ~= 2 then return fail(op.op .. ": lane group step must be 1 or 2", op) end
      if op.op == "load_raw" and l.step ~= 1 then
        return fail("load_raw: its lane group counts halfwords (step 1)", op)
      end
    end
    if op.attr.fill ~= nil then
      if op.op ~= "load_f32" or not op.lanes then return fail(op.op .. ": only a masked load_f32 takes a fill", op) end
      if op.attr.fill ~= 0 and op.attr.fill ~= 0x80000000 then
        return fail("load_f32: the fill of lanes outside the group is +0 (0) or -0 (0x80000000)", op)
      end
    end
    if (op.op == "spill" or op.op == "reload" or op.op == "reload_bcast")
       and (op.attr.slot < 0 or op.attr.slot >= (proc.frame_slots or 0)) then
      return fail(op.op .. ": slot " .. tostring(op.attr.slot) .. " outside the frame", op)
    end
    if M.FAST_ONLY[op.op] and proc.tier ~= "fast" then
      return fail(op.op .. " rounds differently on each ISA: only a fast-tier form may use it", op)
    end
    if op.op == "reduce_add" and not M.TREES[op.attr.tree] then
      return fail("reduce_add: unknown tree '" .. tostring(op.attr.tree) .. "' (known: halving)", op)
    end
    if op.op == "reduce_add8" and not M.TREES[op.attr.tree] then
      return fail("reduce_add8: unknown tree '" .. tostring(op.attr.tree) .. "' (known: halving)", op)
    end
    if op.op == "reduce_add8" and op.attr.half ~= 0 and op.attr.half ~= 1 then
      return fail("reduce_add8: the half must be 0 or 1", op)
    end
    if op.op == "reduce_max" and not M.TREES[op.attr.tree] then
      return fail("reduce_max: unknown tree '" .. tostring(op.attr.tree) .. "' (known: halving)", op)
    end
    if op.op == "addr" then
      local sc = op.attr.scale
      if sc ~= 1 and sc ~= 2 and sc ~= 4 and sc ~= 8 then return fail("addr: scale must be 1, 2, 4 or 8", op) end
    end
    if dst_t then
      if not op.dst or op.dst.type ~= dst_t then return fail(op.op .. ": result must be of type " .. dst_t, op) end
      if defined[op.dst] then return fail(op.op .. ": value defined twice", op) end
      defined[op.dst] = true
    elseif op.dst then
      return fail(op.op .. ": has no result", op)
    end
    if op.op == "for_tiles" then
      defined[op.attr.ivar] = true
      defined[op.attr.rem] = true
    elseif op.op == "for_rows" then
      defined[op.attr.ivar] = true
    end
    if (op.op == "vunpk_lo" or op.op == "vunpk_hi") and op.attr.g ~= 1 and op.attr.g ~= 2 then
      return fail(op.op .. ": the group g must be 1 or 2", op)
    end
    if op.op == "vpair_split" and (op.attr.imm < 0 or op.attr.imm > 3 or op.attr.imm ~= math.floor(op.attr.imm)) then
      return fail("vpair_split: the pair must be 0..3", op)
    end
    if op.op == "vsel128" and (op.attr.imm < 0 or op.attr.imm > 255 or op.attr.imm ~= math.floor(op.attr.imm)) then
      return fail("vsel128: the selector must be 0..255", op)
    end
    local chunk_ok = { [1] = true, [2] = true, [4] = true, [8] = true }
    if (op.op == "vzip_lo" or op.op == "vzip_hi") and not chunk_ok[op.attr.g] then
      return fail(op.op .. ": the chunk size g must be 1, 2, 4 or 8", op)
    end
    if (op.op == "vishl" or op.op == "visra") and (op.attr.imm < 0 or op.attr.imm > 31) then
      return fail(op.op .. ": shift count must be 0..31", op)
    end
    if op.op == "vushr8" and (op.attr.imm < 1 or op.attr.imm > 7) then
      return fail("vushr8: shift count must be 1..7", op)
    end
    if op.op == "ishri" and (op.attr.imm < 0 or op.attr.imm > 63) then
      return fail("ishri: shift count must be 0..63", op)
    end
    if op.op == "iandi" or op.op == "iaddi" or op.op == "imuli" or op.op == "iconst" or op.op == "vishl"
       or op.op == "visra" or op.op == "vushr8" then
      if op.attr.imm ~= math.floor(op.attr.imm) then return fail(op.op .. ": integer immediate required", op) end
    end
  end
  M.walk_proc(proc, function(op) if not problem then check(op) end end)
  -- a vrne_st result has garbage in its low half: only ops that read the high half may use it
  if not problem then
    local st = {}
    M.walk_proc(proc, function(op)
      if op.op == "vrne_st" then st[op.dst] = true end
      for i, s in ipairs(op.src) do
        local ok = (op.op == "store_bf16" and i == 3) or op.op == "bf16_pairs"
        if st[s] and not ok and not problem then
          problem, where = op.op .. ": operand " .. i .. " comes from rne_store (its low half is unspecified): " ..
                           "only store_bf16 and bf16_pairs may read it", op
        end
      end
    end)
  end
  return problem, where
end

-- Linear positions and live intervals. Every op gets a position in program order; a loop op
-- spans [its position, the last position inside it]. A value used inside a loop it was not
-- defined in stays live to the loop's end (the back edge re-reads it). Returns the list of
-- intervals { value, from, to } sorted by start, and the ops in position order.
function M.liveness(proc)
  -- a proc may be allocated more than once (gen/kregs.lua tries held constants, then fewer):
  -- every interval is computed afresh
  M.walk_proc(proc, function(op)
    if op.dst then op.dst.interval = nil end
    if op.attr.ivar then op.attr.ivar.interval = nil end
    if op.attr.rem then op.attr.rem.interval = nil end
  end)
  local pos, order = 0, {}
  local spans = {}           -- loop op -> { from, to }
  local def_pos, use_pos = {}, {}
  local loops_of_def = {}    -- value -> innermost enclosing loop list at definition
  local stack = {}

  local function enclosing()
    local copy = {}
    for i = 1, #stack do copy[i] = stack[i] end
    return copy
  end
  local function note_use(v, p)
    if not use_pos[v] then use_pos[v] = {} end
    local u = use_pos[v]
    u[#u + 1] = { pos = p, loops = enclosing() }
  end
  local function note_def(v, p)
    if def_pos[v] == nil then
      def_pos[v] = p
      loops_of_def[v] = enclosing()
    end
  end

  local visit
  local function visit_list(list)
    for _, op in ipairs(list) do visit(op) end
  end
  visit = function(op)
    pos = pos + 1
    op.pos = pos
    order[#order + 1] = op
    for _, s in ipairs(op.src) do note_use(s, pos) end
    for _, k in ipairs(M.consts_of(op)) do note_use(k, pos) end
    if op.lanes then note_use(op.lanes.rem, pos) end
    if op.dst then note_def(op.dst, pos) end
    if op.op == "fma_acc" or op.op == "max_acc" or op.op == "sadd_acc" or op.op == "vset" then
      note_def(op.src[1], pos)
    end
    if op.op == "cases" then
      -- arms are alternatives: a value defined before the dispatch and used in an arm stays
      -- live to the end of the dispatch (a register may not be reused by another arm's temp
      -- while a later arm still needs it; linear positions would otherwise let it)
      local span = { from = pos }
      spans[op] = span
      stack[#stack + 1] = op
      for _, arm in ipairs(op.attr.arms) do visit_list(arm.body) end
      stack[#stack] = nil
      pos = pos + 1
      span.to = pos
      op.end_pos = pos
    elseif op.op == "for_tiles" or op.op == "for_rows" then
      local span = { from = pos }
      spans[op] = span
      stack[#stack + 1] = op
      note_def(op.attr.ivar, pos)
      if op.op == "for_tiles" then
        visit_list(op.attr.full)
        pos = pos + 1        -- tail entry: the remainder is computed here
        op.tail_pos = pos
        note_def(op.attr.rem, pos)
        visit_list(op.attr.tail)
      else
        visit_list(op.attr.grouped); visit_list(op.attr.single)
      end
      stack[#stack] = nil
      pos = pos + 1          -- the loop's closing position (back edge, induction update)
      span.to = pos
      op.end_pos = pos
      -- the bound is compared again on every iteration: live to the loop's end (a start value
      -- is read once, at the entry)
      note_use(op.op == "for_rows" and op.src[2] or op.src[1], pos)
    end
  end
  visit_list(proc.prologue)
  visit_list(proc.body)

  local intervals = {}
  for _, op in ipairs(order) do
    local function add(v)
      if v.interval then return end
      local from, to = def_pos[v], def_pos[v]
      local dl = {}
      for _, l in ipairs(loops_of_def[v] or {}) do dl[l] = true end
      for _, u in ipairs(use_pos[v] or {}) do
        if u.pos > to then to = u.pos end
        for _, l in ipairs(u.loops) do
          if not dl[l] and spans[l].to > to then to = spans[l].to end
        end
      end
      v.interval = { value = v, from = from, to = to }
      intervals[#intervals + 1] = v.interval
    end
    if op.dst then add(op.dst) end
    if op.op == "for_tiles" or op.op == "for_rows" then
      add(op.attr.ivar)
      -- the induction variable is stepped at the back edge: live to the loop's end
      if op.attr.ivar.interval.to < op.end_pos then op.attr.ivar.interval.to = op.end_pos end
      if op.attr.rem then add(op.attr.rem) end
    end
  end
  table.sort(intervals, function(a, b)
    if a.from ~= b.from then return a.from < b.from end
    return a.value.id < b.value.id
  end)
  return intervals, order
end

return M
