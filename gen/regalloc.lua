-- gen/regalloc.lua: linear-scan register allocation over the IR's live intervals.
--
-- A backend describes its register files as pools (ordered: caller-saved first, so callee-saved
-- registers are only touched when the caller-saved ones run out) and, per IR value type, how
-- many registers of which pool a value occupies (an AVX2 vector is two ymm, a NEON vector four
-- q registers). There is no spilling: a template that needs more live values than a variant
-- holds fails to generate, naming the op, the variant and what was live.

local IR = require("ir")
local C = require("compat")

local M = {}

-- The operands of def whose registers its result (cls registers) takes: a list of them, or nil.
-- dies(s): the registers operand s holds when it dies at def in the result's pool, else nil.
local function reuse_of(def, regs, cls, dies)
  local r = regs.reuse and regs.reuse(def)
  if not r then return nil end
  if r.join then
    local got, seen, total = {}, {}, 0
    for _, i in ipairs(r.join) do
      local s = def.src[i]
      local n = s and not seen[s] and dies(s)
      if not n then return nil end
      seen[s], got[#got + 1], total = true, s, total + n
    end
    return total == cls.n and got or nil
  end
  for _, i in ipairs(r) do
    local s = def.src[i]
    if s and dies(s) == cls.n then return { s } end
  end
  return nil
end

-- backend.regs = { pools = { name = { "r1", "r2", ... } },
--                  callee_saved = { reg = true },
--                  classes = { i = { pool = "gpr", n = 1 }, v = ..., s = ..., k = ... },
--                  argp = "rdi" }   -- where the value marked `fixed` (the argument pointer) lives
-- backend.regs.reuse(op) (optional) lists the operand indexes whose registers op's result may
-- take when that operand dies at op (the backend's lowering of op reads its operands before it
-- writes the result, or handles the aliasing); or, as { join = { i, j, ... } }, operands whose
-- registers, in that order, make up the result's when all of them die at op (distinct values of
-- the result's pool whose registers add up to the result's).
-- Returns assignment (value -> { regs }), used callee-saved registers (sorted by pool order),
-- or raises { msg, op_line } through fail(msg, line).
function M.allocate(proc, regs, fail)
  local intervals = IR.liveness(proc)
  local free = {}          -- pool -> { reg -> true }
  for _, pname in ipairs(C.sorted_keys(regs.pools)) do
    free[pname] = {}
    for _, r in ipairs(regs.pools[pname]) do free[pname][r] = true end
  end

  local active = {}        -- intervals holding registers, any order
  local used = {}
  local assign = {}

  local function expire(pos)
    local keep = {}
    for _, iv in ipairs(active) do
      if iv.to < pos then
        for _, r in ipairs(assign[iv.value]) do free[iv.pool][r] = true end
      else
        keep[#keep + 1] = iv
      end
    end
    active = keep
  end

  -- values holding registers of one pool, as type+id@template line
  local function describe_live(pool)
    local names = {}
    for _, iv in ipairs(active) do
      if iv.pool == pool then
        names[#names + 1] = string.format("%s%d@%d%s", iv.value.type, iv.value.id, iv.value.line or 0,
                                          iv.value.name and ("(" .. iv.value.name .. ")") or "")
      end
    end
    table.sort(names)
    return table.concat(names, " ")
  end

  -- a backend may give some values a class of their own (regs.class_of: a NEON broadcast is
  -- one q register read as all four parts of a vector)
  local function class_of(v)
    local name = regs.class_of and regs.class_of(v) or v.type
    return regs.classes[name]
  end

  for _, iv in ipairs(intervals) do
    expire(iv.from)
    local cls = class_of(iv.value)
    local pool = regs.pools[cls.pool]
    local got = {}
    -- a result may take the registers of an operand that dies here, where the backend allows
    local def = iv.value.def
    if def and not iv.value.fixed then
      local take = reuse_of(def, regs, cls, function(s)
        local siv = s.interval
        if siv and siv.to == iv.from and assign[s] and siv.pool == cls.pool and not s.fixed then return #assign[s] end
      end)
      for _, s in ipairs(take or {}) do
        local keep = {}
        for _, a in ipairs(active) do if a ~= s.interval then keep[#keep + 1] = a end end
        active = keep
        for _, r in ipairs(assign[s]) do got[#got + 1] = r; free[cls.pool][r] = true end
      end
    end
    if iv.value.fixed then
      -- the argument struct pointer arrives in the ABI's first argument register
      if not free[cls.pool][regs.argp] then error("internal: argument register taken at entry") end
      got[1] = regs.argp
    end
    for _, r in ipairs(pool) do
      if #got == cls.n then break end
      if free[cls.pool][r] then got[#got + 1] = r end
    end
    if #got < cls.n then
      fail(string.format("out of %s registers for a %s value (live: %s)", cls.pool, iv.value.type,
                         describe_live(cls.pool)), iv.value.line)
    end
    for _, r in ipairs(got) do
      free[cls.pool][r] = false
      if regs.callee_saved[r] then used[r] = true end
    end
    iv.pool = cls.pool
    assign[iv.value] = got
    active[#active + 1] = iv
  end

  -- a class with `expand`: a number n, its one register stands for each of the value's n parts;
  -- a list, part i is its register expand[i] (two registers for four parts: { 1, 1, 2, 2 })
  for _, iv in ipairs(intervals) do
    local cls = class_of(iv.value)
    if cls.expand then
      local got, parts = assign[iv.value], {}
      if type(cls.expand) == "number" then
        for i = 1, cls.expand do parts[i] = got[1] end
      else
        for i, k in ipairs(cls.expand) do parts[i] = got[k] end
      end
      assign[iv.value] = parts
    end
  end

  local saved = {}
  for _, pname in ipairs(C.sorted_keys(regs.pools)) do
    for _, r in ipairs(regs.pools[pname]) do if used[r] then saved[#saved + 1] = r end end
  end
  return assign, saved
end

-- The register pressure of a proc as allocate would meet it, without choosing registers: for
-- every interval start, the registers of its pool in use once the value has its own (the same
-- expiry and operand reuse as allocate). Returns { { pos, pool, used } ... } in position order and
-- each pool's size: what gen/kregs.lua needs to see which loops have room for a held constant.
function M.pressure(proc, regs)
  local intervals = IR.liveness(proc)
  local function class_of(v)
    local name = regs.class_of and regs.class_of(v) or v.type
    return regs.classes[name]
  end
  local active, used, n_of, events = {}, {}, {}, {}
  for _, iv in ipairs(intervals) do
    local keep = {}
    for _, a in ipairs(active) do
      if a.to < iv.from then used[a.pool] = used[a.pool] - n_of[a.value] else keep[#keep + 1] = a end
    end
    active = keep
    local cls = class_of(iv.value)
    used[cls.pool] = used[cls.pool] or 0
    local def = iv.value.def
    if def and not iv.value.fixed then
      local take = reuse_of(def, regs, cls, function(src)
        local siv = src.interval
        if siv and siv.to == iv.from and n_of[src] and siv.pool == cls.pool and not src.fixed then return n_of[src] end
      end)
      for _, src in ipairs(take or {}) do
        local k2 = {}
        for _, a in ipairs(active) do if a ~= src.interval then k2[#k2 + 1] = a end end
        if #k2 < #active then used[cls.pool] = used[cls.pool] - n_of[src] end
        active = k2
      end
    end
    iv.pool = cls.pool
    n_of[iv.value] = cls.n
    used[cls.pool] = used[cls.pool] + cls.n
    active[#active + 1] = iv
    events[#events + 1] = { pos = iv.from, pool = cls.pool, used = used[cls.pool] }
  end
  local size = {}
  for _, pname in ipairs(C.sorted_keys(regs.pools)) do size[pname] = #regs.pools[pname] end
  return events, size
end

return M
