-- gen/kregs.lua: constants held in registers, per loop.
--
-- A backend's op may need constant vectors (a rounding bias, a mask, a zero register): without
-- help it re-creates them inside every loop iteration (a MOVI, a broadcast from memory). This pass
-- gives them registers for a whole loop instead. For every loop (for_tiles or for_rows) whose
-- body holds ops asking for constants (backend.constants(op, variant): a list of 32-bit
-- patterns, or negative codes for constants of the backend's own, such as x86's permute tables,
-- named in the register map by backend.constant_name), it inserts one `kconst` op per pattern
-- right before the loop, and the ops of the body read them through op.consts ({ bits, value }
-- pairs; IR.consts_of). A template's own `vconst` (not an accumulator) inside a loop moves before
-- the loop the same way.
--
-- Held constants cost registers for the loop's whole run, and the allocator has no spilling:
-- emit.lua keeps the placements that fit the register pressure (M.choose), the hottest first
-- (loops holding no other loop), and allocates; should that fail, it tries them one by one. A backend
-- lowers an op whose constant is not held as it would without this pass (ctx:kreg returns nil).
-- Nothing here changes the order or the value of any arithmetic.

local IR = require("ir")

local M = {}

local function is_loop(op) return op.op == "for_tiles" or op.op == "for_rows" end

-- The loop bodies of a loop op (a for_tiles' tail runs once per loop run: it is not a body).
local function bodies(op)
  if op.op == "for_tiles" then return { op.attr.full } end
  if op.op == "for_rows" then return { op.attr.grouped, op.attr.single } end
  return {}
end

local function holds_loop(list)
  local found = false
  IR.walk(list, function(o) if is_loop(o) then found = true end end, 0)
  return found
end

-- The placements of a proc for one backend variant, in program order: one per (loop, pattern)
-- { loop, block, bits, ops = { op... }, hot } and one per template vconst moved out of a loop
-- { loop, block, move = op, from = its block, hot }. `hot`: the loop holds no other loop.
function M.plan(proc, backend, variant)
  local placements, by_key = {}, {}
  local ask = backend.constants
  local function hot(loop)
    for _, b in ipairs(bodies(loop)) do if holds_loop(b) then return false end end
    return true
  end
  local function visit(list, loop, block_of_loop)
    for _, op in ipairs(list) do
      if loop then
        if op.op == "vconst" and not op.dst.var then
          placements[#placements + 1] = { loop = loop, block = block_of_loop, move = op, from = list, hot = hot(loop) }
        else
          for _, b in ipairs((ask and ask(op, variant)) or {}) do
            local key = tostring(loop.id) .. ":" .. tostring(b)
            local p = by_key[key]
            if not p then
              p = { loop = loop, block = block_of_loop, bits = b, ops = {}, hot = hot(loop) }
              by_key[key] = p
              placements[#placements + 1] = p
            end
            p.ops[#p.ops + 1] = op
          end
        end
      end
      if is_loop(op) then
        for _, b in ipairs(bodies(op)) do visit(b, op, list) end
        if op.op == "for_tiles" then visit(op.attr.tail, loop, block_of_loop) end
      elseif op.op == "cases" then
        for _, arm in ipairs(op.attr.arms) do visit(arm.body, loop, block_of_loop) end
      end
    end
  end
  visit(proc.prologue, nil, nil)
  visit(proc.body, nil, nil)
  return placements
end

local function index_of(list, op)
  for i, o in ipairs(list) do if o == op then return i end end
  error("internal: op not found in its block")
end

-- Applies the enabled placements (a set); returns the function that undoes it. Before each loop:
-- its held constants (in increasing order of the pattern), then its moved vconsts.
function M.apply(proc, placements, enabled)
  local undo = IR.snapshot(proc)
  local before, loops = {}, {}        -- loop -> { kconst ops }, { vconst ops }
  for _, p in ipairs(placements) do
    if enabled[p] then
      local b = before[p.loop]
      if not b then
        b = { block = p.block, k = {}, m = {} }
        before[p.loop] = b
        loops[#loops + 1] = p.loop
      end
      if p.move then
        table.remove(p.from, index_of(p.from, p.move))
        b.m[#b.m + 1] = p.move
      else
        proc.nkvalues = (proc.nkvalues or 0) + 1
        local v = { id = 1000000 + proc.nkvalues, type = "c", line = p.loop.line }
        local op = { id = p.loop.id, op = "kconst", src = {}, attr = { bits = p.bits }, dst = v, line = p.loop.line }
        v.def = op
        b.k[#b.k + 1] = op
        for _, o in ipairs(p.ops) do
          o.consts = o.consts or {}
          o.consts[#o.consts + 1] = { bits = p.bits, value = v }
        end
      end
    end
  end
  for _, loop in ipairs(loops) do
    local b = before[loop]
    table.sort(b.k, function(x, y) return x.attr.bits < y.attr.bits end)
    local new_ops = {}
    for _, o in ipairs(b.k) do new_ops[#new_ops + 1] = o end
    for _, o in ipairs(b.m) do new_ops[#new_ops + 1] = o end
    local at = index_of(b.block, loop)
    for k = #new_ops, 1, -1 do table.insert(b.block, at, new_ops[k]) end
  end
  return undo
end

-- The placements to try one by one when not all of them fit: the hottest loops first, then the
-- constants most ops of the loop read, then program order.
function M.priority(placements)
  local out = {}
  for i, p in ipairs(placements) do out[i] = { p = p, i = i, n = p.ops and #p.ops or 1 } end
  table.sort(out, function(a, b)
    if a.p.hot ~= b.p.hot then return a.p.hot end
    if a.n ~= b.n then return a.n > b.n end
    return a.i < b.i
  end)
  for i, e in ipairs(out) do out[i] = e.p end
  return out
end

-- The placements that fit, from the proc's register pressure without them (regalloc.pressure:
-- the registers in use at every allocation, positions from IR.liveness): in priority order, a
-- placement is kept when every allocation inside its loop (held constants live from just before
-- the loop to its end) still finds room with what was kept before it. `cost(p)` gives the pool
-- and the registers a placement holds. A moved vconst is counted over the whole loop although
-- part of that was live already: the estimate errs on the side of fitting less.
function M.choose(placements, events, size, cost)
  local extra, chosen = {}, {}
  for _, p in ipairs(M.priority(placements)) do
    local pool, n = cost(p)
    local a, b = p.loop.pos, p.loop.end_pos
    local fit = true
    for i, e in ipairs(events) do
      if e.pos > b then break end
      if e.pos >= a and e.pool == pool and e.used + (extra[i] or 0) + n > size[pool] then fit = false; break end
    end
    if fit then
      chosen[p] = true
      for i, e in ipairs(events) do
        if e.pos > b then break end
        if e.pos >= a and e.pool == pool then extra[i] = (extra[i] or 0) + n end
      end
    end
  end
  return chosen
end

return M
