-- gen/emit.lua: lowering driver and the .S writer.
--
-- The driver walks a proc's IR in program order and hands each op to the backend hook of the
-- same name; hooks append instructions through the context (wline), which tags every line
-- with the id of the op being lowered. The writer then prints the banner, the register map,
-- the function and its constants, buffering everything: nothing reaches disk from here.

local C = require("compat")
local IR = require("ir")
local RA = require("regalloc")
local KR = require("kregs")
local BUMP = require("bump")

local M = {}

local Ctx = {}
Ctx.__index = Ctx

-- One instruction line, tagged with the current op.
function Ctx:wline(text)
  self.lines[#self.lines + 1] = { text = text, op = self.cur_op }
end

-- A label line (not indented, not tagged).
function Ctx:wlabel(name)
  self.lines[#self.lines + 1] = { label = name }
end

-- A fresh local label name, unique within this stamp.
function Ctx:new_label(tag)
  self.nlabels = self.nlabels + 1
  return "FK_L(" .. self.symbol .. "_" .. tag .. C.int(self.nlabels) .. ")"
end

-- Registers of a value; `i`-th register when the value spans several.
function Ctx:reg(v, i)
  local r = self.assign[v]
  if not r then error("internal: value " .. v.type .. C.int(v.id) .. " has no register") end
  return r[i or 1]
end

function Ctx:regs(v)
  return self.assign[v]
end

-- The register holding constant `bits` for op (gen/kregs.lua), or nil when the op's loop does
-- not hold it (the backend then makes the constant itself, as without held constants).
function Ctx:kreg(op, bits)
  for _, k in ipairs(op.consts or {}) do
    if k.bits == bits then return self.assign[k.value][1] end
  end
  return nil
end

-- A read-only constant table shared by the stamp. `words` are u32 values; identical
-- (name, words) requests return the same label. Returns the table's symbol.
function Ctx:const(name, words)
  local key = name
  if self.consts_by_name[key] then return self.consts_by_name[key].sym end
  local sym = self.symbol .. "_k_" .. name
  local c = { name = name, sym = sym, words = words }
  self.consts[#self.consts + 1] = c
  self.consts_by_name[key] = c
  return sym
end

-- Lower a list of ops (loop hooks call back into this for their bodies).
-- A template error found while lowering (an op the variant lacks): reported at the op's template
-- line, as every generation error is (no file written).
function Ctx:fail(msg)
  self.fail_cb(msg, self.cur_op and self.cur_op.line or 0)
  error("internal: the fail callback returned", 0)
end

function Ctx:lower(list)
  for _, op in ipairs(list) do
    local hook = self.backend.ops[op.op]
    if not hook then
      error("internal: backend " .. self.backend.isa .. " has no hook for op '" .. op.op .. "'")
    end
    local saved = self.cur_op
    self.cur_op = op
    self.ops_seen[op] = true
    hook(self, op)
    self.cur_op = saved
  end
end

-- Lower one proc for one variant. Returns the stamp text. `meta` carries banner fields.
-- Register allocation with constants held per loop (gen/kregs.lua): the placements that fit the
-- proc's register pressure; if the allocation then fails after all, the placements tried one by
-- one (hottest loops first); none held when the proc does not fit even without them (the
-- allocator's error then names what was live).
local function allocate(proc, backend, variant, regs, fail)
  local placements = KR.plan(proc, backend, variant)
  if #placements == 0 then return RA.allocate(proc, regs, fail) end
  local nofit = {}
  local function try(enabled)
    local undo = KR.apply(proc, placements, enabled)
    local ok, assign, saved = pcall(RA.allocate, proc, regs, function() error(nofit, 0) end)
    if ok then return assign, saved end
    undo()
    return nil
  end
  local events, size = RA.pressure(proc, regs)
  local chosen = KR.choose(placements, events, size, function(p)
    local cls = regs.classes[p.move and (regs.class_of and regs.class_of(p.move.dst) or "v") or "c"]
    return cls.pool, cls.n
  end)
  local assign, saved = try(chosen)
  if assign then return assign, saved end
  local enabled = {}
  for _, p in ipairs(KR.priority(placements)) do
    enabled[p] = true
    local undo = KR.apply(proc, placements, enabled)
    if not pcall(RA.allocate, proc, regs, function() error(nofit, 0) end) then enabled[p] = nil end
    undo()
  end
  KR.apply(proc, placements, enabled)
  return RA.allocate(proc, regs, fail)
end

function M.stamp(proc, backend, variant, meta, fail)
  local regs = backend.registers(variant)
  -- a backend may look at the whole proc before choosing its values' register classes
  if backend.annotate then backend.annotate(proc) end
  -- pointers bumped per tile where the backend asks (gen/bump.lua), taken back when the proc
  -- then runs out of registers
  local unbump = backend.bump_pointers and BUMP.apply(proc)
  local assign, saved
  if unbump then
    local nofit = {}
    local ok, a, s = pcall(allocate, proc, backend, variant, regs, function() error(nofit, 0) end)
    if ok then
      assign, saved = a, s
    else
      if a ~= nofit then error(a, 0) end
      unbump()
    end
  end
  if not assign then assign, saved = allocate(proc, backend, variant, regs, fail) end
  local ctx = setmetatable({
    proc = proc, backend = backend, variant = variant, symbol = meta.symbol,
    assign = assign, saved = saved, regs_desc = regs,
    lines = {}, nlabels = 0, consts = {}, consts_by_name = {}, ops_seen = {}, fail_cb = fail,
  }, Ctx)
  -- op 0 is the frame: ABI prologue and epilogue, which no template op asks for
  local frame = { id = 0, op = "frame", line = 0, src = {}, attr = {} }
  ctx.cur_op = frame
  backend.begin(ctx)
  ctx.cur_op = nil
  ctx:lower(proc.prologue)
  ctx:lower(proc.body)
  ctx.cur_op = frame
  backend.finish(ctx)
  ctx.cur_op = nil
  return M.write(ctx, meta)
end

---------------------------------------------------------------------------------------------
-- The writer.

local PAD = 44

local function pad(s, n)
  if #s >= n then return s .. " " end
  return s .. string.rep(" ", n - #s)
end

local function op_summary(op)
  local s = op.op
  if op.op == "arg" or op.op == "arg_f32" then s = s .. " " .. op.attr.field.name end
  if op.op == "reduce_add" then s = s .. " " .. op.attr.tree end
  if op.lanes then s = s .. " (tail lanes " .. C.int(op.lanes.base) .. "+)" end
  -- the schedule passes' ops (gen/kregs.lua, gen/bump.lua) carry their loop's id; their summary
  -- names no ISA-specific detail, so that tools/asmdiff.lua pairs them across the ISAs
  if op.op == "kconst" then s = "kconst (a constant held for the loop)" end
  if op.attr.pointer then s = s .. " (a pointer bumped by the loop)" end
  return s
end

local function register_map(ctx, out)
  local proc, regs = ctx.proc, ctx.regs_desc
  out[#out + 1] = "// Register map (" .. ctx.backend.abi .. "):"
  out[#out + 1] = "//   " .. pad(regs.argp, 12) .. "a, the argument struct, until its last field is loaded"
  local by_field = {}
  IR.walk_proc(proc, function(op)
    if op.op == "arg" or op.op == "arg_f32" then by_field[op.attr.field.name] = op.dst end
  end)
  for _, f in ipairs(proc.fields) do
    local v = by_field[f.name]
    local where = v and table.concat(ctx.assign[v], ",") or "-"
    out[#out + 1] = string.format("//   %s a->%s (+%d, %s)", pad(where, 12), f.name, f.offset, f.ctype)
  end
  IR.walk_proc(proc, function(op)
    if op.op == "zero" or (op.op == "vconst" and op.dst.var) then
      out[#out + 1] = string.format("//   %s accumulator [%d] (%s:%d)",
        pad(table.concat(ctx.assign[op.dst], ","), 12), op.id, proc.path, op.line)
    end
  end)
  IR.walk_proc(proc, function(op)
    if op.op == "kconst" then
      -- a backend's constant that is not a 32-bit pattern (a negative code) by its own name
      local named = op.attr.bits < 0 and ctx.backend.constant_name and ctx.backend.constant_name(op.attr.bits)
      out[#out + 1] = string.format("//   %s %s held for loop [%d] (%s:%d)",
        pad(table.concat(ctx.assign[op.dst], ","), 12),
        named or string.format("constant 0x%08x", op.attr.bits), op.id, proc.path, op.line)
    end
  end)
  out[#out + 1] = "//   callee-saved used: " .. (#ctx.saved > 0 and table.concat(ctx.saved, ", ") or "none")
  out[#out + 1] = "//   scratch (not allocated): " .. table.concat(regs.scratch, ", ")
end

function M.write(ctx, meta)
  local out = {}
  local cs = ctx.backend.comment
  local function banner(s) out[#out + 1] = cs .. (s ~= "" and " " .. s or "") end
  banner("Auto-generated by flashkern gen/ - DO NOT EDIT.")
  banner("Template:  " .. meta.template_path .. " (git blob " .. meta.template_hash .. ")")
  banner("Generator: gen/ (sha1 " .. meta.generator_hash .. ")")
  banner("Symbol:    " .. meta.symbol)
  banner("Leaf:      " .. ctx.proc.leaf .. ", form " .. ctx.proc.form)
  banner("Variant:   " .. ctx.backend.isa .. " " .. ctx.variant.name .. " (" .. ctx.variant.features_doc .. ")")
  banner("Tier:      " .. meta.tier)
  banner("Params:    " .. meta.params_doc)
  if meta.tuning_doc ~= "" then
    banner("Tuning:    " .. meta.tuning_doc .. " (gen/isa/" .. ctx.backend.isa .. ".lua)")
  end
  banner("")
  banner("void " .. meta.symbol .. "(const " .. meta.struct_name .. " *a);")
  register_map(ctx, out)
  banner("")
  banner("Each instruction ends with the id of the template op it implements: // [id]; [0] is the frame.")
  banner("")
  out[#out + 1] = '#include "fk_asm.h"'
  for _, l in ipairs(ctx.backend.preamble(ctx)) do out[#out + 1] = l end
  out[#out + 1] = ""
  local last_op
  for _, l in ipairs(ctx.lines) do
    if l.label then
      out[#out + 1] = l.label .. ":"
    elseif l.raw then
      out[#out + 1] = l.raw
    else
      if l.op and l.op ~= last_op then
        if l.op.id == 0 then
          out[#out + 1] = string.format("    %s [0] frame (%s prologue/epilogue)", cs, ctx.backend.abi)
        else
          out[#out + 1] = string.format("    %s [%d] %s  %s:%d", cs, l.op.id, op_summary(l.op),
                                        ctx.proc.path, l.op.line)
        end
        last_op = l.op
      end
      local tag = l.op and (cs .. " [" .. C.int(l.op.id) .. "]") or ""
      out[#out + 1] = (tag ~= "" and pad("    " .. l.text, PAD) .. tag) or ("    " .. l.text)
    end
  end
  if #ctx.consts > 0 then
    out[#out + 1] = ""
    for _, l in ipairs(ctx.backend.const_section(ctx)) do out[#out + 1] = l end
    for _, c in ipairs(ctx.consts) do
      out[#out + 1] = "    .p2align 6"
      out[#out + 1] = "FK_SYM(" .. c.sym .. "):"
      for i = 1, #c.words, 8 do
        local row = {}
        for j = i, math.min(i + 7, #c.words) do row[#row + 1] = string.format("0x%08x", c.words[j]) end
        out[#out + 1] = "    .long " .. table.concat(row, ", ")
      end
    end
  end
  out[#out + 1] = ""
  for _, l in ipairs(ctx.backend.postamble(ctx)) do out[#out + 1] = l end
  return table.concat(out, "\n") .. "\n"
end

-- llvm-mca region markers around an innermost loop (a for_tiles whose full-tile body holds no
-- loop): the census (tools/census.lua) predicts cycles per iteration for each marked region. The
-- region is named after the loop op's id, so both ISAs' stamps of a form name it alike.
local function holds_loop(list)
  local found = false
  IR.walk(list, function(o) if o.op == "for_tiles" or o.op == "for_rows" then found = true end end, 0)
  return found
end

function Ctx:mca_begin(op)
  if holds_loop(op.attr.full) then return end
  self:wraw("    " .. self.backend.comment .. " LLVM-MCA-BEGIN loop" .. C.int(op.id))
end

function Ctx:mca_end(op)
  if holds_loop(op.attr.full) then return end
  self:wraw("    " .. self.backend.comment .. " LLVM-MCA-END loop" .. C.int(op.id))
end

-- Raw (untagged) line, for directives inside the function body.
function Ctx:wraw(text)
  self.lines[#self.lines + 1] = { raw = text }
end

return M
