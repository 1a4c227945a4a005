-- gen/bump.lua: pointers bumped per tile instead of addresses recomputed.
--
-- Inside a tile loop (for_tiles, induction variable i stepping by `tile`), a memory op's element
-- index is often an affine function of i: i, i * c (a packed stream), i + h, i * c + h + h (the
-- parts of a row), with c a constant and h values defined outside the loop. Without help a
-- backend recomputes base + index * size for every access of every iteration. This pass gives
-- each (base, affine index, element size) of a loop one pointer of its own: set before the loop
-- to the address at the loop's first tile, advanced by tile * c * size at the loop's back edge
-- (for_tiles attr.bumps), read by the memory ops as their address (attr.at: operand 1 already
-- points at the element, operand 2 is not read; a constant part of the index moves into the
-- op's element offset). The tail after the loop finds the pointers at its tile too. Index
-- computations left without a use are removed. Addresses only: no value and no order of any
-- arithmetic changes.
--
-- A backend asks for it with `bump_pointers = true` (gen/isa/aarch64.lua: an address costs an
-- instruction there; gen/isa/x86_64.lua: its addressing takes base + index * scale for free, but a
-- scaled index i * c still costs a multiply per tile). emit.lua takes the rewrite back when the
-- proc then runs out of general registers.

local IR = require("ir")

local M = {}

-- Memory ops: { operand holding the base, operand holding the index, the element size of the index in
-- bytes (or the attribute that holds it) }.
local ADDR = {
  load_f32 = { 1, 2, 4 }, load_bf16 = { 1, 2, 2 }, load_raw = { 1, 2, 2 }, load_pair_bcast = { 1, 2, 2 },
  load_bcast_f32 = { 1, 2, 4 }, store_f32 = { 1, 2, 4 }, store_bf16 = { 1, 2, 2 }, store_raw = { 1, 2, 2 },
  load1_bf16 = { 1, 2, 2 }, load1_f32 = { 1, 2, 4 }, load1_i32 = { 1, 2, 4 }, load1_u64 = { 1, 2, 8 },
  store1_bf16 = { 1, 2, 2 }, store1_f32 = { 1, 2, 4 }, store1_u64 = { 1, 2, 8 }, fma_acc_mem = { 3, 4, 4 },
  prefetch = { 1, 2, "size" }, load_i8 = { 1, 2, 1 }, load_u8 = { 1, 2, 1 }, load_bcast_f16 = { 1, 2, 2 },
  store_i8 = { 1, 2, 1 }, load_f16x8 = { 1, 2, 2 },
  load_f16x4q = { 1, 2, 2 }, load_bcast8 = { 1, 2, 4 },
}
M.ADDR = ADDR

-- Pure integer ops: removed when their result has no use left.
local PURE = { iadd = true, iaddi = true, imuli = true, imul = true, addr = true, iandi = true, ishri = true,
               isub = true, iconst = true }

local function copy(t)
  local c = {}
  for k, v in pairs(t) do c[k] = v end
  return c
end

-- Values defined inside a list of ops (nested bodies included), loop variables too.
local function defined_in(list)
  local d = {}
  IR.walk(list, function(op)
    if op.dst then d[op.dst] = true end
    if op.attr.ivar then d[op.attr.ivar] = true end
    if op.attr.rem then d[op.attr.rem] = true end
  end, 0)
  return d
end

-- The affine form of an index value in loop L: { c = coefficient of i, inv = { invariant
-- values added }, k = constant, sh = shift }: the value is (c * i + k) >> sh plus the invariant
-- values, or nil. Only ops of the loop's own body take part. A shift (ishri: the packed records
-- of a quantized stream, rec / 64 bytes per element of k) takes part where it is exact on every
-- tile: i runs over multiples of the tile from 0 (no start), c * tile and k are multiples of 2^sh,
-- and nothing invariant is added before it.
local function pow2(n)
  local r = 1
  for _ = 1, n do r = r * 2 end
  return r
end

local function affine(v, L, inside)
  if v == L.attr.ivar then return { c = 1, inv = {}, k = 0, sh = 0 } end
  if not inside[v] then return { c = 0, inv = { v }, k = 0, sh = 0 } end
  local d = v.def
  if not d then return nil end
  if d.op == "imuli" then
    local a = affine(d.src[1], L, inside)
    if not a or #a.inv > 0 then return nil end
    return { c = a.c * d.attr.imm, inv = {}, k = a.k * d.attr.imm, sh = a.sh }
  elseif d.op == "iaddi" then
    local a = affine(d.src[1], L, inside)
    if not a then return nil end
    return { c = a.c, inv = a.inv, k = a.k + d.attr.imm * pow2(a.sh), sh = a.sh }
  elseif d.op == "ishri" then
    local a = affine(d.src[1], L, inside)
    if not a or #a.inv > 0 or L.attr.start or a.c < 0 or a.k < 0 then return nil end
    local sh = a.sh + d.attr.imm
    if sh > 30 or (a.c * L.attr.tile) % pow2(sh) ~= 0 or a.k % pow2(sh) ~= 0 then return nil end
    return { c = a.c, inv = {}, k = a.k, sh = sh }
  elseif d.op == "iadd" then
    local a, b = affine(d.src[1], L, inside), affine(d.src[2], L, inside)
    if not a or not b then return nil end
    -- a shifted part joins an unshifted one scaled by 2^sh (exact: its value is a whole number)
    if a.sh < b.sh then a, b = b, a end
    if b.sh ~= 0 or (a.sh > 0 and #a.inv > 0) then return nil end
    local m = pow2(a.sh)
    local inv = {}
    for _, x in ipairs(a.inv) do inv[#inv + 1] = x end
    for _, x in ipairs(b.inv) do inv[#inv + 1] = x end
    return { c = a.c + b.c * m, inv = inv, k = a.k + b.k * m, sh = a.sh }
  end
  return nil
end

local function index_of(list, op)
  for i, o in ipairs(list) do if o == op then return i end end
  error("internal: op not found in its block")
end

-- The direct ops of a loop's full body and its tail (not those of nested loops: their own
-- loop bumps them), with the block each one is in.
local function direct_ops(L)
  local out = {}
  local function visit(list)
    for _, op in ipairs(list) do
      out[#out + 1] = op
      if op.op == "cases" then
        for _, arm in ipairs(op.attr.arms) do visit(arm.body) end
      end
    end
  end
  visit(L.attr.full)
  visit(L.attr.tail)
  return out
end

-- Rewrites one tile loop L standing in `block`; `fresh()` makes value ids.
local function rewrite_loop(L, block, fresh)
  local inside = defined_in({ L })
  local groups, order = {}, {}
  for _, op in ipairs(direct_ops(L)) do
    local a = ADDR[op.op]
    if a then
      local size = a[3] == "size" and op.attr.size or a[3]
      local base, idx = op.src[a[1]], op.src[a[2]]
      local f = (not inside[base]) and not op.attr.at and affine(idx, L, inside)
      if f and f.c > 0 then
        -- bytes per unit of i: c * size / 2^sh, reduced (one pointer for the streams of a record
        -- read in elements of different sizes); the op's element index at i = 0: k / 2^sh
        local cs, sh = f.c * size, f.sh
        while sh > 0 and cs % 2 == 0 do cs, sh = math.floor(cs / 2), sh - 1 end
        local ids = {}
        for _, x in ipairs(f.inv) do ids[#ids + 1] = x.id end
        table.sort(ids)
        local key = table.concat({ base.id, cs, sh, #ids > 0 and size or 0, table.concat(ids, ",") }, ":")
        local g = groups[key]
        if not g then
          g = { base = base, c = f.c, inv = f.inv, size = size,
                bytes = math.floor(L.attr.tile * cs / pow2(sh)), ops = {} }
          groups[key] = g
          order[#order + 1] = g
        end
        g.ops[#g.ops + 1] = { op = op, pos = a, k = math.floor(f.k / pow2(f.sh)) }
      end
    end
  end
  if #order == 0 then return false end
  local new_ops, bumps = {}, {}
  local function emit(kind, src, attr)
    attr.pointer = true
    local op = { id = L.id, op = kind, src = src, attr = attr, line = L.line }
    op.dst = { id = fresh(), type = "i", line = L.line }
    op.dst.def = op
    new_ops[#new_ops + 1] = op
    return op.dst
  end
  for _, g in ipairs(order) do
    -- the pointer at the loop's first tile: base + (c * start + the invariant parts) * size
    local p = g.base
    for _, x in ipairs(g.inv) do p = emit("addr", { p, x }, { scale = g.size }) end
    if L.attr.start then
      local s = L.src[2]
      if g.c ~= 1 then s = emit("imuli", { s }, { imm = g.c }) end
      p = emit("addr", { p, s }, { scale = g.size })
    end
    if p == g.base then p = emit("iaddi", { p }, { imm = 0 }) end   -- a copy: the base may live on
    bumps[#bumps + 1] = { value = p, bytes = g.bytes }
    for _, e in ipairs(g.ops) do
      local src = {}
      for k, v in ipairs(e.op.src) do src[k] = v end
      src[e.pos[1]], src[e.pos[2]] = p, L.attr.ivar
      local attr = copy(e.op.attr)
      attr.at, attr.off = true, attr.off + e.k
      e.op.src, e.op.attr = src, attr
    end
  end
  local at = index_of(block, L)
  for k = #new_ops, 1, -1 do table.insert(block, at, new_ops[k]) end
  local attr = copy(L.attr)
  attr.bumps = bumps
  L.attr = attr
  return true
end

-- Removes pure integer ops whose result nothing reads, until none is left.
local function prune(proc)
  repeat
    local uses = {}
    IR.walk_proc(proc, function(op)
      for _, v in ipairs(op.src) do uses[v] = true end
      if op.lanes then uses[op.lanes.rem] = true end
      for _, b in ipairs(op.attr.bumps or {}) do uses[b.value] = true end
    end)
    local removed = false
    local function sweep(list)
      local j = 0
      for _, op in ipairs(list) do
        if PURE[op.op] and op.dst and not uses[op.dst] then
          removed = true
        else
          j = j + 1
          list[j] = op
          for _, b in ipairs(IR.sub_blocks(op)) do sweep(b) end
        end
      end
      for i = #list, j + 1, -1 do list[i] = nil end
    end
    sweep(proc.prologue)
    sweep(proc.body)
  until not removed
end

-- Rewrites every tile loop of a proc; returns the function that takes it all back, or nil when
-- no loop had anything to bump.
function M.apply(proc)
  local undo = IR.snapshot(proc)
  local n = 0
  local function fresh()
    n = n + 1
    return 2000000 + n
  end
  local any = false
  local function visit(list)
    local i = 1
    while i <= #list do
      local op = list[i]
      for _, b in ipairs(IR.sub_blocks(op)) do visit(b) end
      if op.op == "for_tiles" and rewrite_loop(op, list, fresh) then
        any = true
        i = index_of(list, op)
      end
      i = i + 1
    end
  end
  visit(proc.prologue)
  visit(proc.body)
  if not any then return nil end
  prune(proc)
  return undo
end

return M
