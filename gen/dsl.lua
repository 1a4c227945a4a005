-- gen/dsl.lua: the template DSL. A template's body calls methods of a builder `t`; each call
-- appends one IR op (gen/ir.lua) tagged with an op id and the template line that made it.
-- The builder never knows which ISA the IR will be stamped for.

local IR = require("ir")
local C = require("compat")
local VM = require("vmath")
local EXT = require("extent")

local M = {}
local place_args

-- C types a template may declare for an argument, with their size and IR class.
-- CHECK: keep in sync with the field kinds in gen/header.lua and the harness (tests/harness).
M.CTYPES = {
  ["int64_t"]          = { size = 8, class = "i", kind = "i64" },
  ["float"]            = { size = 4, class = "s", kind = "f32" },
  ["const float *"]    = { size = 8, class = "i", kind = "ptr", elem = "f32", dir = "in" },
  ["float *"]          = { size = 8, class = "i", kind = "ptr", elem = "f32", dir = "out" },
  ["const uint16_t *"] = { size = 8, class = "i", kind = "ptr", elem = "bf16", dir = "in" },
  ["uint16_t *"]       = { size = 8, class = "i", kind = "ptr", elem = "bf16", dir = "out" },
  ["const int32_t *"]  = { size = 8, class = "i", kind = "ptr", elem = "i32", dir = "in" },
  ["int32_t *"]        = { size = 8, class = "i", kind = "ptr", elem = "i32", dir = "out" },
  ["uint64_t *"]       = { size = 8, class = "i", kind = "ptr", elem = "u64", dir = "out" },
  -- quantized weights (load_i8, load_u8; their binary16 scales through t:view(base, "f16"))
  ["const int8_t *"]   = { size = 8, class = "i", kind = "ptr", elem = "i8", dir = "in" },
  ["const uint8_t *"]  = { size = 8, class = "i", kind = "ptr", elem = "u8", dir = "in" },
}

---------------------------------------------------------------------------------------------
-- Errors: a template error carries the template line; the driver prints path:line: error: msg.

local TemplateError = {}
TemplateError.__index = TemplateError
TemplateError.__tostring = function(e) return e.path .. ":" .. C.int(e.line) .. ": error: " .. e.msg end
M.TemplateError = TemplateError

-- The innermost stack frame that belongs to the template file.
local function template_line(path)
  for level = 2, 40 do
    local info = debug.getinfo(level, "Sl")
    if not info then break end
    if info.source == "@" .. path then return info.currentline end
  end
  return 0
end

function M.raise(path, msg, line)
  error(setmetatable({ path = path, line = line or template_line(path), msg = msg }, TemplateError), 0)
end

---------------------------------------------------------------------------------------------
-- Argument struct layout (LP64 on both ISAs: natural alignment, no packing).

-- `locate(name)` gives the template line declaring an argument (for error messages).
function M.layout(form_args, path, locate)
  local fields, off, align = {}, 0, 1
  local seen = {}
  local where = function(name) return locate and locate(name) or 0 end
  for i, a in ipairs(form_args) do
    local name, ctype = a[1], a[2]
    if type(name) ~= "string" or not name:match("^[a-z][a-z0-9_]*$") then
      M.raise(path, "argument " .. i .. ": name must match [a-z][a-z0-9_]*", where(tostring(name)))
    end
    if seen[name] then M.raise(path, "argument '" .. name .. "' declared twice", where(name)) end
    seen[name] = true
    local ct = M.CTYPES[ctype]
    if not ct then
      local known = C.sorted_keys(M.CTYPES)
      M.raise(path, "argument '" .. name .. "': unsupported C type '" .. tostring(ctype) ..
              "' (known: " .. table.concat(known, ", ") .. ")", where(name))
    end
    local dir = ct.dir
    if a.inout or a.scratch then
      if dir ~= "out" then
        M.raise(path, "argument '" .. name .. "': inout and scratch need a non-const pointer", where(name))
      end
      dir = a.inout and "inout" or "scratch"
    end
    off = math.floor((off + ct.size - 1) / ct.size) * ct.size
    fields[#fields + 1] = { name = name, ctype = ctype, offset = off, size = ct.size,
                            class = ct.class, kind = ct.kind, elem = ct.elem, dir = dir,
                            doc = a.doc }
    if ct.size > align then align = ct.size end
    off = off + ct.size
  end
  local size = math.floor((off + align - 1) / align) * align
  M.layout_extents(form_args, fields, path, where)
  return fields, size
end

-- Every pointer argument states how far the leaf may reach from it: `extent`, an expression of
-- the form's int64_t arguments in elements (gen/extent.lua), or `data_extent`, the reason it
-- depends on the data (a gather's table); `alias` lists the pointer arguments an output may be
-- (swiglu's h may be g or u); nothing else may overlap an output. Scalars take none of these.
function M.layout_extents(form_args, fields, path, where)
  local scalars, by_name = {}, {}
  for _, f in ipairs(fields) do
    by_name[f.name] = f
    if f.kind == "i64" then scalars[f.name] = true end
  end
  for i, a in ipairs(form_args) do
    local f = fields[i]
    local function bad(msg) M.raise(path, "argument '" .. f.name .. "': " .. msg, where(f.name)) end
    if f.kind ~= "ptr" then
      if a.extent ~= nil or a.data_extent ~= nil or a.alias ~= nil then
        bad("extent, data_extent and alias belong to pointer arguments")
      end
    else
      if (a.extent == nil) == (a.data_extent == nil) then
        bad("a pointer argument states its extent (elements, an expression of the int64_t arguments) " ..
            "or its data_extent (why it depends on the data), one of the two")
      end
      if a.extent ~= nil then
        local tree, msg = EXT.parse(a.extent, scalars)
        if not tree then bad("extent \"" .. tostring(a.extent) .. "\": " .. msg) end
        f.extent, f.extent_src = tree, a.extent
      else
        if type(a.data_extent) ~= "string" or a.data_extent == "" then
          bad("data_extent must be a reason (a string)")
        end
        f.data_extent = a.data_extent
      end
      if a.alias ~= nil then
        if f.dir == "in" then bad("alias: an input may be read by anything; only an output declares what it may be") end
        if type(a.alias) ~= "table" or #a.alias == 0 then bad("alias must be a list of pointer argument names") end
        for _, other in ipairs(a.alias) do
          local o = by_name[other]
          if not o or o.kind ~= "ptr" or o == f then
            bad("alias: '" .. tostring(other) .. "' is not another pointer argument")
          end
          if o.elem ~= f.elem then
            bad("alias: '" .. other .. "' holds " .. o.elem .. ", '" .. f.name .. "' " .. f.elem)
          end
        end
        f.alias = a.alias
      end
    end
  end
end

---------------------------------------------------------------------------------------------
-- The builder.

local B = {}
B.__index = B

local function new_value(b, vtype, var)
  b.nvalues = b.nvalues + 1
  return { id = b.nvalues, type = vtype, var = var or nil }
end

function B:_emit(kind, dst_type, src, attr, lanes)
  self.nops = self.nops + 1
  local op = { id = self.nops, op = kind, src = src or {}, attr = attr or {},
               lanes = lanes, line = template_line(self.path) }
  if dst_type then
    op.dst = new_value(self, dst_type)
    op.dst.line = op.line
    op.dst.def = op          -- the defining op (the allocator may let it reuse a dying source)
  end
  local list = self.cur[#self.cur]
  list[#list + 1] = op
  return op
end

function B:_fail(msg) M.raise(self.path, msg) end

-- Edit distance of two short names (for "did you mean").
local function distance(a, b)
  local prev = {}
  for j = 0, #b do prev[j] = j end
  for i = 1, #a do
    local cur = { [0] = i }
    for j = 1, #b do
      local cost = a:sub(i, i) == b:sub(j, j) and 0 or 1
      cur[j] = math.min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + cost)
    end
    prev = cur
  end
  return prev[#b]
end

-- The nearest names of `names` to `name`: " (did you mean 'x'?)", or "".
function M.nearest(name, names)
  local best, bd = nil, math.huge
  for _, n in ipairs(names) do
    local d = distance(name, n)
    if d < bd then best, bd = n, d end
  end
  if best and bd <= math.max(2, math.floor(#name / 3)) then return " (did you mean '" .. best .. "'?)" end
  return ""
end

-- The public ops of the builder, sorted (docs/dsl.md documents each one: tests/dsl_ops.sh).
function M.ops()
  local ops = {}
  for _, k in ipairs(C.sorted_keys(B)) do
    if type(k) == "string" and not k:match("^_") and type(rawget(B, k)) == "function" then ops[#ops + 1] = k end
  end
  return ops
end

-- The builder whose template body is running: an unknown op is reported against its template.
local running
setmetatable(B, { __index = function(_, key)
  if type(key) ~= "string" or key:match("^_") or not running then return nil end
  M.raise(running.path, "no DSL op named '" .. key .. "'" .. M.nearest(key, M.ops()) .. " (docs/dsl.md lists them)")
end })

local function is(v, vtype) return type(v) == "table" and v.type == vtype end
function B._is(_, v, vtype) return is(v, vtype) end

-- What a value is, in words: its kind, the argument it was loaded from or the line that made it.
local KINDS = { i = "an integer (an address, index or count)", v = "a vector (16 f32 or int32 lanes)",
                s = "a scalar f32" }
local function describe(v)
  if type(v) ~= "table" or not v.type then
    return type(v) == "nil" and "nothing (nil)" or ("a Lua " .. type(v) .. " (" .. tostring(v) .. ")")
  end
  local from = v.name and (" (argument a." .. v.name .. ")")
               or (v.line and v.line > 0 and (" (from line " .. C.int(v.line) .. ")") or "")
  return (KINDS[v.type] or v.type) .. from
end
M.describe = describe

-- v must be a value of type vtype: operand `which` of `what`.
function B:_want(v, vtype, what, which)
  if not self:_is(v, vtype) then
    self:_fail(what .. ": operand " .. (which or "?") .. " must be " .. KINDS[vtype] .. ", got " .. describe(v))
  end
  return v
end

function B:_int(n, what)
  if type(n) ~= "number" or n ~= math.floor(n) then self:_fail(what .. ": expected an integer constant") end
  return n
end

function B:_lanes(lanes, what)
  if lanes == nil then return nil end
  if type(lanes) ~= "table" or lanes.kind ~= "lanes" then
    self:_fail(what .. ": the last argument must be a lane group (tail(base[, step]) or t:lanes) or nil")
  end
  return { rem = lanes.rem, base = lanes.base, step = lanes.step }
end

-- Integer arithmetic ---------------------------------------------------------------------

-- Pointers remember the argument (or constant table) they point into, through addr and add, so
-- that every load and store is checked against its element type and constness. f16 (IEEE binary16,
-- load_bcast_f16) is a view only: no C type declares it (a scale lies inside a block of bytes).
local ELEM_SIZE = { f32 = 4, i32 = 4, bf16 = 2, u64 = 8, f16 = 2, i8 = 1, u8 = 1 }

-- dst inherits the pointer of whichever operand is one (an integer plus a pointer is a pointer).
function B._derived(_, dst, a, b)
  dst.ptr = (a and a.ptr) or (b and b.ptr) or nil
  return dst
end

function B:_ival(a, what)
  if type(a) == "number" then
    return self:_emit("iconst", "i", {}, { imm = self:_int(a, what) }).dst
  end
  return self:_want(a, "i", what, "a")
end

function B:iconst(n)
  return self:_ival(n, "iconst")
end

function B:add(a, b)
  if self:_is(a, "i") then
    if b == 0 then return a end
    if type(b) == "number" then
      return self:_derived(self:_emit("iaddi", "i", { a }, { imm = self:_int(b, "add") }).dst, a)
    end
    return self:_derived(self:_emit("iadd", "i", { a, self:_want(b, "i", "add", "b") }).dst, a, b)
  elseif self:_is(a, "v") then
    return self:_emit("vadd", "v", { a, self:_want(b, "v", "add", "b") }).dst
  elseif self:_is(a, "s") then
    return self:_emit("sadd", "s", { a, self:_want(b, "s", "add", "b") }).dst
  end
  self:_fail("add: operands must be integers, vectors or scalars of one type")
end

function B:sub(a, b)
  if self:_is(a, "v") then return self:vsub(a, b) end
  if type(b) == "number" then return self:add(a, -b) end
  return self:_emit("isub", "i", { self:_want(a, "i", "sub", "a"), self:_want(b, "i", "sub", "b") }).dst
end

-- a >= w ? a - w : a: one step of a ring index (slot + j mod w for slot < w, j <= w; w = 0
-- leaves a unchanged, a linear index).
function B:wrap(a, w)
  return self:_emit("iwrap", "i", { self:_want(a, "i", "wrap", "a"), self:_ival(w, "wrap") }).dst
end

-- min(a, b), signed.
function B:imin(a, b)
  return self:_emit("imin", "i", { self:_want(a, "i", "imin", "a"), self:_ival(b, "imin") }).dst
end

-- A 64-bit constant given as a hex string of up to 16 digits ("0x9e3779b97f4a7c15"): Lua 5.4
-- integers and LuaJIT doubles disagree above 2^53, so the pattern travels as two 32-bit halves.
function B:iconst64(hex)
  local digits = type(hex) == "string" and hex:match("^0[xX](%x+)$")
  if not digits or #digits > 16 then self:_fail("iconst64: give the constant as \"0x\" and 1..16 hex digits") end
  digits = string.rep("0", 16 - #digits) .. digits
  local hi, lo = tonumber(digits:sub(1, 8), 16), tonumber(digits:sub(9, 16), 16)
  return self:_emit("iconst64", "i", {}, { hi = hi, lo = lo }).dst
end

-- a ^ b, 64 bits.
function B:ixor(a, b)
  return self:_emit("ixor", "i", { self:_want(a, "i", "ixor", "a"), self:_want(b, "i", "ixor", "b") }).dst
end

-- a >> n, logical (zeros shifted in), 64 bits, n a constant 0..63.
function B:ishr(a, n)
  n = self:_int(n, "ishr")
  if n < 0 or n > 63 then self:_fail("ishr: shift count must be 0..63") end
  return self:_emit("ishri", "i", { self:_want(a, "i", "ishr", "a") }, { imm = n }).dst
end

-- a & imm (imm a Lua integer, e.g. -64 to round down to a multiple of 64).
function B:iand(a, imm)
  return self:_emit("iandi", "i", { self:_want(a, "i", "iand", "a") }, { imm = self:_int(imm, "iand") }).dst
end

function B:mul(a, b)
  if self:_is(a, "i") then
    if type(b) == "number" then
      self:_int(b, "mul")
      if b == 0 then return self:iconst(0) end
      if b == 1 then return a end
      return self:_emit("imuli", "i", { a }, { imm = b }).dst
    end
    return self:_emit("imul", "i", { a, self:_want(b, "i", "mul", "b") }).dst
  elseif self:_is(a, "v") then
    return self:_emit("vmul", "v", { a, self:_want(b, "v", "mul", "b") }).dst
  elseif self:_is(a, "s") then
    return self:_emit("smul", "s", { a, self:_want(b, "s", "mul", "b") }).dst
  end
  self:_fail("mul: operands must be integers, vectors or scalars of one type")
end

-- base + index * scale: the address of element `index` of an array of `scale`-byte elements.
-- A constant index folds into an immediate add.
-- A pointer read as another element type (the fast tier's bf16 copy of x in its f32 scratch): no
-- instruction; the view serves as the base of addr and of loads and stores, checked as `elem`.
function B:view(base, elem)
  self:_want(base, "i", "view", "base")
  if not ELEM_SIZE[elem] then self:_fail("view: elem must be f32, i32, bf16, u64, f16, i8 or u8") end
  local p = base.ptr
  if not p then self:_fail("view: the base must point into an argument or a table") end
  return { kind = "view", value = base,
           ptr = { what = p.what .. " (viewed as " .. elem .. ")", ctype = p.ctype, elem = elem, dir = p.dir } }
end

-- A base operand: a pointer value, or a view of one (its value, and the provenance to check).
local function base_of(self, base, what)
  if type(base) == "table" and base.kind == "view" then return base.value, base.ptr end
  self:_want(base, "i", what, "base")
  return base, base.ptr
end

function B:addr(base, index, scale)
  local given = base
  local p
  base, p = base_of(self, base, "addr")
  scale = self:_int(scale, "addr")
  if p and scale ~= ELEM_SIZE[p.elem] then
    self:_fail("addr: " .. p.what .. " holds " .. C.int(ELEM_SIZE[p.elem]) .. "-byte elements (" .. p.ctype ..
               "), not " .. C.int(scale) .. "-byte ones")
  end
  local dst
  if type(index) == "number" then
    dst = self:add(base, self:_int(index, "addr") * scale)
    if dst == base then return given end   -- a zero offset: the base (or the view) itself
  else
    dst = self:_emit("addr", "i", { base, self:_want(index, "i", "addr", "index") }, { scale = scale }).dst
  end
  dst.ptr = p
  return dst
end

-- Float arithmetic ------------------------------------------------------------------------

function B:max(a, b)
  return self:_emit("vmax", "v", { self:_want(a, "v", "max", "a"), self:_want(b, "v", "max", "b") }).dst
end

function B:div(a, b)
  if self:_is(a, "v") then return self:_emit("vdiv", "v", { a, self:_want(b, "v", "div", "b") }).dst end
  return self:_emit("sdiv", "s", { self:_want(a, "s", "div", "a"), self:_want(b, "s", "div", "b") }).dst
end

function B:sqrt(a)
  return self:_emit("ssqrt", "s", { self:_want(a, "s", "sqrt", "a") }).dst
end

-- a * b + c, fused (one rounding).
function B:fma(a, b, c)
  return self:_emit("vfma", "v", { self:_want(a, "v", "fma", "a"), self:_want(b, "v", "fma", "b"),
                                   self:_want(c, "v", "fma", "c") }).dst
end

-- -a: the sign bit flipped (exact; a NaN keeps its payload).
function B:neg(a)
  return self:_emit("vneg", "v", { self:_want(a, "v", "neg", "a") }).dst
end

-- acc += a * b, fused, in place; lanes outside `lanes` keep their value.
function B:fma_acc(acc, a, b, lanes)
  self:_want(acc, "v", "fma_acc", "acc")
  if not acc.var then self:_fail("fma_acc: the accumulator must come from t:zero()") end
  lanes = self:_lanes(lanes, "fma_acc")
  self:_emit("fma_acc", false, { acc, self:_want(a, "v", "fma_acc", "a"), self:_want(b, "v", "fma_acc", "b") },
             {}, lanes)
  acc.updated = true
end

-- acc = a > acc ? a : acc lane by lane (the vmax rule: NaN or equal keeps acc), in place.
function B:max_acc(acc, a)
  self:_want(acc, "v", "max_acc", "acc")
  if not acc.var then self:_fail("max_acc: the accumulator must come from t:zero() or t:fill()") end
  self:_emit("max_acc", false, { acc, self:_want(a, "v", "max_acc", "a") })
  acc.updated = true
end

-- var = v, in place: a vector carried from one iteration of a loop to the next (var from
-- t:zero() or t:fill(), defined before the loop).
function B:set(var, v)
  self:_want(var, "v", "set", "var")
  if not var.var then self:_fail("set: the target must come from t:zero() or t:fill()") end
  self:_emit("vset", false, { var, self:_want(v, "v", "set", "v") })
end

-- acc[l] += w[2l] * x[2l] + w[2l+1] * x[2l+1] on raw bf16 pairs, with the CPU's bf16 dot
-- instruction (VDPBF16PS, BFDOT): its rounding differs between ISAs, so fast tier only.
function B:dot_bf16_acc(acc, w, x)
  self:_want(acc, "v", "dot_bf16_acc", "acc")
  if not acc.var then self:_fail("dot_bf16_acc: the accumulator must come from t:zero()") end
  self:_emit("dot_bf16_acc", false,
             { acc, self:_want(w, "v", "dot_bf16_acc", "w"), self:_want(x, "v", "dot_bf16_acc", "x") })
  acc.updated = true
end

-- Raw bf16 pairs -> f32: halfwords 2l (even) or 2l + 1 (odd) of the 32 loaded, exactly.
function B:bf16_even(raw) return self:_emit("bf16_even", "v", { self:_want(raw, "v", "bf16_even", "raw") }).dst end
function B:bf16_odd(raw) return self:_emit("bf16_odd", "v", { self:_want(raw, "v", "bf16_odd", "raw") }).dst end

-- The inverse of bf16_even/bf16_odd on rounded values: raw pairs whose lane l holds the bf16
-- bits (high halves) of even[l] then odd[l], for store_raw.
function B:bf16_pairs(even, odd)
  return self:_emit("bf16_pairs", "v",
                    { self:_want(even, "v", "bf16_pairs", "even"), self:_want(odd, "v", "bf16_pairs", "odd") }).dst
end

-- De-interleave the 32 elements of (a, b): even ones, odd ones.
function B:uzp_even(a, b)
  return self:_emit("uzp_even", "v", { self:_want(a, "v", "uzp_even", "a"), self:_want(b, "v", "uzp_even", "b") }).dst
end
function B:uzp_odd(a, b)
  return self:_emit("uzp_odd", "v", { self:_want(a, "v", "uzp_odd", "a"), self:_want(b, "v", "uzp_odd", "b") }).dst
end

-- Round to bf16 by the integer RNE rule; the result stays an f32 vector/scalar whose low 16
-- bits are zero, so it feeds f32 math unchanged and store_bf16 keeps its high halves.
function B:rne(a)
  if self:_is(a, "v") then return self:_emit("vrne", "v", { a }).dst end
  return self:_emit("srne", "s", { self:_want(a, "s", "rne", "a") }).dst
end

-- rne() for a value that is only stored (store_bf16, bf16_pairs): the low half is left as the
-- rounding leaves it, one instruction less; anything else reading it is a generation error.
function B:rne_store(a)
  return self:_emit("vrne_st", "v", { self:_want(a, "v", "rne_store", "a") }).dst
end

-- The canonical NaN: every NaN lane becomes 0x7fc00000, every other lane keeps its bits. What an
-- exact form stores must be canonical (docs/design.md, NaN policy; store_op below checks it).
function B:canon(a)
  if self:_is(a, "v") then return self:_emit("vcanon", "v", { a }).dst end
  return self:_emit("scanon", "s", { self:_want(a, "s", "canon", "a") }).dst
end

-- canon() for raw bf16 pairs (load_raw): every NaN halfword becomes 0x7fc0, the others are kept.
function B:canon_raw(raw)
  return self:_emit("vcanon_raw", "v", { self:_want(raw, "v", "canon_raw", "raw") }).dst
end

-- Vector math building blocks (gen/vmath.lua builds exp, sin and cos from them) -------------

local function vbinary(kind, what)
  return function(self, a, b)
    return self:_emit(kind, "v", { self:_want(a, "v", what, "a"), self:_want(b, "v", what, "b") }).dst
  end
end
B.vsub = vbinary("vsub", "vsub")
B.min = vbinary("vmin", "min")          -- a < b ? a : b
B.iadd_v = vbinary("viadd", "iadd_v")   -- int32 lanes
B.isub_v = vbinary("visub", "isub_v")
B.imin_v = vbinary("vimin", "imin_v")
B.imax_v = vbinary("vimax", "imax_v")
B.band = vbinary("vand", "band")
B.bor = vbinary("vor", "bor")
B.bxor = vbinary("vxor", "bxor")
B.igt_v = vbinary("vigt", "igt_v")      -- int32 lanes: a > b (signed) ? all ones : 0

local function vunary(kind, what)
  return function(self, a) return self:_emit(kind, "v", { self:_want(a, "v", what, "a") }).dst end
end
B.rint = vunary("vrint", "rint")        -- to an integral value, ties to even
B.f2i = vunary("vcvt_f2i", "f2i")       -- integral f32 -> int32 (sanitize NaN and range first)
B.i2f = vunary("vcvt_i2f", "i2f")

function B:ishl_v(a, n)
  return self:_emit("vishl", "v", { self:_want(a, "v", "ishl_v", "a") }, { imm = self:_int(n, "ishl_v") }).dst
end
function B:isra_v(a, n)
  return self:_emit("visra", "v", { self:_want(a, "v", "isra_v", "a") }, { imm = self:_int(n, "isra_v") }).dst
end
-- each byte of a's 64 shifted right by n (1..7, checked with the other shifts' counts: ir.lua),
-- zeros in: q4's high nibbles as ushr8_v(v, 4)
function B:ushr8_v(a, n)
  return self:_emit("vushr8", "v", { self:_want(a, "v", "ushr8_v", "a") }, { imm = self:_int(n, "ushr8_v") }).dst
end

-- Interleave chunks of g lanes of a and b (lanes 0-7 of each: zip_lo; 8-15: zip_hi).
function B:zip_lo(a, b, g)
  return self:_emit("vzip_lo", "v", { self:_want(a, "v", "zip_lo", "a"), self:_want(b, "v", "zip_lo", "b") },
                    { g = self:_int(g, "zip_lo") }).dst
end
function B:zip_hi(a, b, g)
  return self:_emit("vzip_hi", "v", { self:_want(a, "v", "zip_hi", "a"), self:_want(b, "v", "zip_hi", "b") },
                    { g = self:_int(g, "zip_hi") }).dst
end
B.rev = vunary("vrev", "rev")           -- lanes reversed

-- Lane moves within and between the four chunks of 4 lanes (AVX-512 and AVX2: one shuffle with an
-- immediate per register; NEON: per q register). sel128: chunks a[s0], a[s1], b[s2], b[s3] for
-- imm = s0 + 4 s1 + 16 s2 + 64 s3; unpack_lo / _hi: per chunk, lanes 0..g-1 (lo) or 2..1+g (hi)
-- of a, then of b, interleaved by g (g = 1: a0 b0 a1 b1; g = 2: a0 a1 b0 b1); uzp4_even / _odd: per
-- chunk, lanes 0, 2 (1, 3) of a, then of b.
function B:sel128(a, b, imm)
  return self:_emit("vsel128", "v", { self:_want(a, "v", "sel128", "a"), self:_want(b, "v", "sel128", "b") },
                    { imm = self:_int(imm, "sel128") }).dst
end
function B:unpack_lo(a, b, g)
  return self:_emit("vunpk_lo", "v", { self:_want(a, "v", "unpack_lo", "a"), self:_want(b, "v", "unpack_lo", "b") },
                    { g = self:_int(g, "unpack_lo") }).dst
end
function B:unpack_hi(a, b, g)
  return self:_emit("vunpk_hi", "v", { self:_want(a, "v", "unpack_hi", "a"), self:_want(b, "v", "unpack_hi", "b") },
                    { g = self:_int(g, "unpack_hi") }).dst
end
B.uzp4_even = vbinary("vuzp4_even", "uzp4_even")
B.uzp4_odd = vbinary("vuzp4_odd", "uzp4_odd")

-- A 16-entry table lookup: lane l <- lane (idx[l] & 15) of tab (idx int32 lanes, their bits above
-- the low 4 ignored; tab's bits moved, never changed).
function B:lut16(tab, idx)
  return self:_emit("vlut16", "v", { self:_want(tab, "v", "lut16", "tab"), self:_want(idx, "v", "lut16", "idx") }).dst
end

-- a constant table's name and words, checked (what: the op, for the message)
local function table_attr(self, what, name, words)
  if type(name) ~= "string" or not name:match("^[a-z][a-z0-9_]*$") then self:_fail(what .. ": bad name") end
  if type(words) ~= "table" then self:_fail(what .. " " .. name .. ": give the words as a list") end
  for i, w in ipairs(words) do
    if type(w) ~= "number" or w ~= math.floor(w) or w < 0 or w > 0xffffffff then
      self:_fail(what .. " " .. name .. ": word " .. i .. " is not a 32-bit pattern")
    end
  end
  return { table = { name = name, words = words } }
end

-- A read-only table of 32-bit words in the stamp (name unique per stamp); returns its address.
function B:table(name, words)
  local dst = self:_emit("const_addr", "i", {}, table_attr(self, "table", name, words)).dst
  dst.ptr = { what = "table " .. name, ctype = "a read-only table of 32-bit words", elem = "f32", dir = "in" }
  return dst
end

-- A vector of 16 lane constants: lane l = word l of a read-only table of the stamp (name unique per
-- stamp, as t:table's), loaded where used (no general register holds its address).
function B:vtable(name, words)
  local attr = table_attr(self, "vtable", name, words)
  if #words ~= 16 then self:_fail("vtable " .. name .. ": give 16 words") end
  return self:_emit("vtable", "v", {}, attr).dst
end

-- A 32-bit pattern in every lane (an f32 constant as its bits, or an int32).
function B:vconst(bits)
  if type(bits) == "string" then bits = tonumber(bits) end
  if type(bits) ~= "number" or bits ~= math.floor(bits) or bits < -0x80000000 or bits > 0xffffffff then
    self:_fail("vconst: give a 32-bit pattern")
  end
  if bits < 0 then bits = bits + 0x100000000 end
  return self:_emit("vconst", "v", {}, { bits = bits }).dst
end

-- exp, and sin and cos of one argument, over f32 lanes (gen/vmath.lua: the algorithms).
function B:exp(x) return VM.exp(self, self:_want(x, "v", "exp", "x")) end
function B:sincos(x) return VM.sincos(self, self:_want(x, "v", "sincos", "x")) end

function B:bcast(s)
  return self:_emit("bcast", "v", { self:_want(s, "s", "bcast", "s") }).dst
end

function B:reduce_add(v, tree)
  if type(tree) ~= "string" then self:_fail("reduce_add: name the tree (e.g. \"halving\")") end
  return self:_emit("reduce_add", "s", { self:_want(v, "v", "reduce_add", "v") }, { tree = tree }).dst
end

-- The halving tree over one half of the lanes alone (half 0: lanes 0-7; 1: lanes 8-15): lane i +=
-- lane i + s for s = 4, 2, 1 (the last three levels of reduce_add's), lower lanes first.
function B:reduce_add8(v, half, tree)
  if type(tree) ~= "string" then self:_fail("reduce_add8: name the tree (e.g. \"halving\")") end
  return self:_emit("reduce_add8", "s", { self:_want(v, "v", "reduce_add8", "v") },
                    { tree = tree, half = self:_int(half, "reduce_add8") }).dst
end

-- reduce_add of 16 vectors at once, transposed: lane l of the result is reduce_add(v(l), tree),
-- bit for bit. The halving tree adds lane i to lane i + 8, then i + 4, i + 2, i + 1 (the lower
-- lane first). The pairing tree below takes two vectors at each node, and each of its levels is
-- one of those steps for every vector under it, as two lane moves and an add:
--   1. sel128 0x44 + 0xEE: chunks (x0, x1, y0, y1) + (x2, x3, y2, y3): x's lane i + i + 8 in
--      lanes 0-7, y's in 8-15;
--   2. sel128 0x88 + 0xDD: (x0, x2, y0, y2) + (x1, x3, y1, y3): lane i + i + 4, one vector per chunk;
--   3. unpack_lo + unpack_hi, g = 2: per chunk, lanes 0, 1 + lanes 2, 3 (i + i + 2), two vectors
--      per chunk;
--   4. uzp4_even + uzp4_odd: per chunk, lane 0 + lane 1, four vectors per chunk.
-- The result's lane 4c + q then holds input slot 4q + c: slot s is given v(4 (s mod 4) + s div 4),
-- so lane l is v(l)'s sum. 15 adds and 30 single-instruction moves (AVX-512) for 16 sums. v is
-- called depth first (in that slot order), so that few vectors are live at once.
function B:reduce_add_rows(v, tree)
  if tree ~= "halving" then self:_fail("reduce_add_rows: the tree must be \"halving\"") end
  if type(v) ~= "function" then self:_fail("reduce_add_rows: give a function of the lane (0..15) to its vector") end
  local function level(x, y, size)
    if size == 2 then return self:add(self:sel128(x, y, 0x44), self:sel128(x, y, 0xEE)) end
    if size == 4 then return self:add(self:sel128(x, y, 0x88), self:sel128(x, y, 0xDD)) end
    if size == 8 then return self:add(self:unpack_lo(x, y, 2), self:unpack_hi(x, y, 2)) end
    return self:add(self:uzp4_even(x, y), self:uzp4_odd(x, y))
  end
  local function node(lo, size)
    if size == 1 then
      local l = 4 * (lo % 4) + math.floor(lo / 4)
      return self:_want(v(l), "v", "reduce_add_rows", "v(" .. C.int(l) .. ")")
    end
    local half = math.floor(size / 2)
    return level(node(lo, half), node(lo + half, half), size)
  end
  return node(0, 16)
end

-- The lanes' maximum along a named tree, each pair by the vmax rule (lower lanes first).
function B:reduce_max(v, tree)
  if type(tree) ~= "string" then self:_fail("reduce_max: name the tree (e.g. \"halving\")") end
  return self:_emit("reduce_max", "s", { self:_want(v, "v", "reduce_max", "v") }, { tree = tree }).dst
end

function B:cvt_f32(i)
  return self:_emit("cvt_i2s", "s", { self:_want(i, "i", "cvt_f32", "i") }).dst
end

-- An f32 constant, given as its bit pattern (integer or "0x..." string).
function B:f32(bits)
  if type(bits) == "string" then bits = tonumber(bits) end
  if type(bits) ~= "number" or bits < 0 or bits > 0xffffffff or bits ~= math.floor(bits) then
    self:_fail("f32: give the constant as a 32-bit pattern")
  end
  return self:_emit("sconst", "s", {}, { bits = bits }).dst
end

-- A zeroed accumulator (+0.0 in every lane), updated in place by fma_acc.
function B:zero()
  local op = self:_emit("zero", "v", {})
  op.dst.var = true
  return op.dst
end

-- An accumulator holding a 32-bit pattern in every lane (e.g. -inf for max_acc), updated in
-- place by the *_acc ops.
function B:fill(bits)
  local v = self:vconst(bits)
  v.var = true
  return v
end

-- A scalar accumulator holding an f32 bit pattern, updated in place by sadd_acc.
function B:sfill(bits)
  local v = self:f32(bits)
  v.var = true
  return v
end

-- acc = acc + a (one f32 addition, RNE), in place: a running sum in a scalar loop.
function B:sadd_acc(acc, a)
  self:_want(acc, "s", "sadd_acc", "acc")
  if not acc.var then self:_fail("sadd_acc: the accumulator must come from t:sfill()") end
  self:_emit("sadd_acc", false, { acc, self:_want(a, "s", "sadd_acc", "a") })
  acc.updated = true
end

-- Memory ----------------------------------------------------------------------------------

-- The element each memory op moves: its width must be the pointer's element width (32-bit lanes
-- serve f32 and int32 arrays alike), and a store needs a pointer that is not const.
local MEM_ELEM = {
  load_f32 = "f32", load_bcast_f32 = "f32", load_bcast8 = "f32", load1_f32 = "f32", store_f32 = "f32",
  store1_f32 = "f32",
  load_bf16 = "bf16", load_raw = "bf16", load_pair_bcast = "bf16", load1_bf16 = "bf16",
  store_bf16 = "bf16", store_raw = "bf16", store1_bf16 = "bf16",
  load1_i32 = "i32", load1_u64 = "u64", store1_u64 = "u64",
  load_i8 = "i8", load_u8 = "u8", load_bcast_f16 = "f16",   -- i8 and u8 arrays serve both byte loads
  store_i8 = "i8", load_f16x8 = "f16", load_f16x4q = "f16",
}

local function check_mem(self, kind, p, store)
  if not p then return end
  local want = MEM_ELEM[kind]
  if ELEM_SIZE[want] ~= ELEM_SIZE[p.elem] then
    self:_fail(kind .. (store and " into " or " from ") .. p.what .. ", which is " .. p.ctype .. " (" .. p.elem ..
               " elements; " .. kind .. " moves " .. want .. ")")
  end
  if store and p.dir == "in" then
    self:_fail(kind .. " into " .. p.what .. ", which is " .. p.ctype)
  end
end

local function mem_op(self, kind, vtype, what, base, idx, off, lanes)
  local p
  base, p = base_of(self, base, what)
  check_mem(self, kind, p, vtype == false)
  return self:_emit(kind, vtype, { base, self:_ival(idx, what) },
                    { off = self:_int(off or 0, what) }, self:_lanes(lanes, what))
end

-- The memory ops share one shape: base pointer, element index, constant element offset, and
-- (vector ops) an optional tail lane group.
local function loader(kind, vtype)
  return function(self, base, idx, off, lanes) return mem_op(self, kind, vtype, kind, base, idx, off, lanes).dst end
end
B.load_bf16, B.load_raw = loader("load_bf16", "v"), loader("load_raw", "v")
-- 16 f32 lanes; with a lane group, the lanes outside it hold +0, or `fill`: -0 (0x80000000), the
-- one addend that leaves every accumulator as it is (x + -0 = x for every x, -0 and NaN included)
function B:load_f32(base, idx, off, lanes, fill)
  local op = mem_op(self, "load_f32", "v", "load_f32", base, idx, off, lanes)
  if fill ~= nil then
    if type(fill) == "string" then fill = tonumber(fill) end
    if fill ~= 0 and fill ~= 0x80000000 then self:_fail("load_f32: fill is 0 (+0) or 0x80000000 (-0)") end
    if not lanes then self:_fail("load_f32: a fill needs a lane group (the lanes it fills)") end
    op.attr.fill = fill
  end
  return op.dst
end
-- the f32 at element idx + off of an array, in every lane
B.load_bcast_f32 = loader("load_bcast_f32", "v")
-- the 8 f32 at element idx + off in lanes 0-7 and again in 8-15 (a half-width operand both halves
-- of a vector read: the quantized fast tier's q4 activations)
function B:load_bcast8(base, idx, off)
  return mem_op(self, "load_bcast8", "v", "load_bcast8", base, idx, off).dst
end
-- the bf16 pair (32 bits) at element idx + off of a bf16 array, in every lane (for an outer product)
B.load_pair_bcast = loader("load_pair_bcast", "v")
B.load1_f32, B.load1_bf16 = loader("load1_f32", "s"), loader("load1_bf16", "s")
-- the int32 at element idx + off of an int32 array, sign-extended into an integer value (a row
-- index for a gather: the template scales it into an address with mul/addr)
B.load1_i32 = loader("load1_i32", "i")
-- the uint64 at element idx + off of a uint64 array (persistent state: a PRNG's seed, counter)
B.load1_u64 = loader("load1_u64", "i")

-- Quantized weights (GGUF-style blocks, padded to whole blocks: these take no lane group).
-- load_i8 / load_u8: the 16 bytes at byte idx + off of an int8 or uint8 array (or a 1-byte view),
-- lane l = byte l, sign- or zero-extended to int32 (t:i2f makes them f32, exactly).
-- load_bcast_f16: the IEEE binary16 at element idx + off of a 2-byte array (a scale inside a block
-- of bytes: t:view(w, "f16")), widened exactly to f32 (subnormals become normal f32), in every
-- lane; a NaN comes out as the ISA's conversion makes it (templates must not rely on NaN scales).
local function whole_loader(kind)
  return function(self, base, idx, off, lanes)
    if lanes ~= nil then
      self:_fail(kind .. ": takes no lane group (quantized layouts are padded to whole blocks: load the " ..
                 "whole block, and give the lane group to the ops that consume it)")
    end
    return mem_op(self, kind, "v", kind, base, idx, off).dst
  end
end
B.load_i8, B.load_u8 = whole_loader("load_i8"), whole_loader("load_u8")
-- load_f16x8: the 8 binary16 at element idx + off of a 2-byte array (a record's scales), widened
-- exactly to f32 in lanes 0-7 (lanes 8-15 +0); pair_split(v, i) then spreads the pair (2i, 2i + 1)
B.load_f16x8 = whole_loader("load_f16x8")
-- load_f16x4q: the 4 binary16 at element idx + off (two q4 rows' scales, row r's blocks at 2r,
-- 2r + 1), widened exactly, each spread over a quarter: lanes 4c .. 4c + 3 take the c-th
B.load_f16x4q = whole_loader("load_f16x4q")
function B:pair_split(v, i)
  return self:_emit("vpair_split", "v", { self:_want(v, "v", "pair_split", "v") },
                    { imm = self:_int(i, "pair_split") }).dst
end

-- Integer dot products: int32 lane l of acc plus the sum over bytes 4l..4l+3 of u8(w) * s8(x)
-- (dot_u8s8: VPDPBUSD) or s8(w) * s8(x) (dot_s8s8: SDOT) (byte vectors from load_raw
-- or bit ops on them), wrapping like the instructions, exact while every sum stays inside int32.
-- The same bits on every ISA; only the variants whose t.tune.int8_dot names one have it (x86_64
-- avx512vnni: u8s8, AArch64 dotprod: s8s8; a form using them lists those: `variants`).
-- dot_s8s7: dot_s8s8 with x's bytes in -127..127 (the activations' quants: avx2madd's VPMADDUBSW).
-- dot_u7s8: dot_u8s8 with w's bytes in 0..127 (q4's nibbles): every variant with an int8 dot has it.
for _, name in ipairs({ "dot_u8s8", "dot_s8s8", "dot_s8s7", "dot_u7s8" }) do
  B[name] = function(self, acc, w, x)
    return self:_emit(name, "v", { self:_want(acc, "v", name, "acc"), self:_want(w, "v", name, "w"),
                                   self:_want(x, "v", name, "x") }).dst
  end
end
B.load_bcast_f16 = whole_loader("load_bcast_f16")

-- An accumulator loaded from 16 f32 lanes at element idx + off (partial sums an earlier pass
-- left in scratch: the chain goes on from them), updated in place by the *_acc ops.
function B:load_acc(base, idx, off)
  local v = mem_op(self, "load_f32", "v", "load_acc", base, idx, off).dst
  v.var = true
  return v
end

-- The NaN rule of the exact tier, checked where a value is stored: a float stored into an output
-- (out or inout: not scratch, not an integer array) must be canonical, i.e. provably free of
-- NaN payloads, which differ between ISAs where NaNs meet or are made. Canonical: the results of
-- canon, canon_raw and rne (rne_store), a zero or constant whose bits are not another NaN, an
-- int32 -> f32 conversion, lane moves of canonical values, and integer lane ops and byte loads
-- (integer data, e.g. int16 PCM, int8 quants). Float loads, arithmetic, bit operations and
-- updated accumulators are not.
local CANON = { vcanon = true, scanon = true, vcanon_raw = true, vrne = true, vrne_st = true, srne = true,
                zero = true, vcvt_i2f = true, vcvt_f2i = true, viadd = true, visub = true, vimin = true,
                vimax = true, vigt = true, vishl = true, visra = true, vushr8 = true, load_i8 = true,
                load_u8 = true }
local MOVES = { vzip_lo = true, vzip_hi = true, uzp_even = true, uzp_odd = true, vrev = true, bf16_pairs = true,
                vsel128 = true, vunpk_lo = true, vunpk_hi = true, vuzp4_even = true, vuzp4_odd = true,
                bcast = true }
local function nan_bits(b) return b % 0x80000000 > 0x7f800000 and b ~= 0x7fc00000 end
local function canonical(v)
  if v.updated or not v.def then return false end
  local op = v.def
  if CANON[op.op] then return true end
  if op.op == "vconst" or op.op == "sconst" then return not nan_bits(op.attr.bits) end
  if MOVES[op.op] then
    for _, s in ipairs(op.src) do if not canonical(s) then return false end end
    return true
  end
  return false
end

local function store_op(self, kind, vtype, what, base, idx, off, val, lanes)
  local _, p = base_of(self, base, what)
  local op = mem_op(self, kind, false, what, base, idx, off, lanes)
  op.src[3] = self:_want(val, vtype, what, "value")
  if self.tier == "exact" and vtype ~= "i" and p and (p.dir == "out" or p.dir == "inout") and
     (p.elem == "f32" or p.elem == "bf16" or p.elem == "f16") and not canonical(val) then
    self:_fail(what .. " into " .. p.what .. ": the value may be a NaN whose bits differ between ISAs; " ..
               "an exact form stores canonical NaNs only: store t:canon(v) (t:canon_raw for raw pairs) " ..
               "or a value from rne")
  end
end

-- int32 lanes, each in -128..127 (clamped first: the ISAs narrow out-of-range values
-- differently), stored as the 16 bytes at byte idx + off of an int8 array (or a 1-byte view)
-- (no lane group: validate() refuses one)

-- A read hint for the cache line holding element idx + off of an array of `size`-byte elements;
-- never faults, so it may point past the end of a row or buffer. `level` is the cache it fills:
-- 1 (the default: the data is used soon) or 2 (a stream read well ahead: the line waits in L2
-- and the demand load fills L1, so the hint does not hold an L1 line or fill buffer for long).
function B:prefetch(base, idx, off, size, level)
  level = level == nil and 1 or self:_int(level, "prefetch")
  if level ~= 1 and level ~= 2 then self:_fail("prefetch: level is 1 or 2, not " .. tostring(level)) end
  self:_emit("prefetch", false, { self:_want(base, "i", "prefetch", "base"), self:_ival(idx, "prefetch") },
             { off = self:_int(off, "prefetch"), size = self:_int(size, "prefetch"), level = level })
end

local function storer(kind, vtype)
  return function(self, base, idx, off, v, lanes) store_op(self, kind, vtype, kind, base, idx, off, v, lanes) end
end
B.store_f32, B.store_bf16 = storer("store_f32", "v"), storer("store_bf16", "v")
B.store_raw = storer("store_raw", "v")   -- 32 bf16 (16 raw pairs), never masked
B.store_i8 = storer("store_i8", "v")     -- the int32 lanes as bytes (above)
B.store1_f32, B.store1_bf16 = storer("store1_f32", "s"), storer("store1_bf16", "s")
B.store1_u64 = storer("store1_u64", "i")   -- an integer value to a uint64 element

-- The lane group of the lanes l with base + step * l < rem, for any integer rem (a tile
-- loop's tail gives the same for rem = n - i): the last block of a loop whose every iteration
-- runs one body.
function B:lanes(rem, base, step)
  base, step = self:_int(base or 0, "lanes"), step or 1
  if base < 0 or base > 63 then self:_fail("lanes(rem, base): base must be 0..63") end
  if step ~= 1 and step ~= 2 then self:_fail("lanes(rem, base, step): step must be 1 or 2") end
  return { kind = "lanes", rem = self:_want(rem, "i", "lanes", "rem"), base = base, step = step }
end

-- Stack slots: a vector kept in the stamp's frame while a later pass needs its registers (a
-- partial sum across passes over other chains). spill(v) returns a handle, reload(handle) the
-- vector, once; a slot is reused after its reload. Bits are moved, never changed.
-- (the lowest free slot, now open)
local function open_slot(self)
  local slot = 0
  while self.slots_live[slot] do slot = slot + 1 end
  self.slots_live[slot] = true
  if slot + 1 > self.nslots then self.nslots = slot + 1 end
  return { kind = "spill", slot = slot, open = true }
end

function B:spill(v)
  self:_want(v, "v", "spill", "v")
  local h = open_slot(self)
  self:_emit("spill", false, { v }, { slot = h.slot })
  return h
end

-- The slot of an open spill handle (what: the op, for its message); close: the slot is freed.
local function spilled(self, h, what, close)
  if type(h) ~= "table" or h.kind ~= "spill" then self:_fail(what .. ": give the handle t:spill returned") end
  if not h.open then self:_fail(what .. ": this spill was reloaded or dropped already") end
  if close then
    h.open = false
    self.slots_live[h.slot] = nil
  end
  return h.slot
end

function B:reload(h)
  return self:_emit("reload", "v", {}, { slot = spilled(self, h, "reload", true) }).dst
end

-- Lane `lane` (0..15) of a spilled vector in every lane, read from its slot (any number of times:
-- the slot stays open until reload or drop). A broadcast load: no shuffle, bits moved.
function B:reload_bcast(h, lane)
  local slot = spilled(self, h, "reload_bcast")
  lane = self:_int(lane, "reload_bcast")
  if lane < 0 or lane > 15 then self:_fail("reload_bcast: lane must be 0..15") end
  return self:_emit("reload_bcast", "v", {}, { slot = slot, lane = lane }).dst
end

-- Frees a spill's slot without reloading it (after its reload_bcast reads, or a slot's last use).
function B:drop(h) spilled(self, h, "drop", true) end

-- A stack slot held open across loop iterations (partial sums a pass parks while another pass
-- over other chains runs, tile after tile): slot() opens it, unwritten; spill_to(h, v) writes v
-- into it and reload_acc(h) reads it back as an accumulator (the *_acc ops go on from it), any
-- number of times, in program order; drop(h) frees it. Bits are moved, never changed.
function B:slot() return open_slot(self) end

function B:spill_to(h, v)
  self:_emit("spill", false, { self:_want(v, "v", "spill_to", "v") }, { slot = spilled(self, h, "spill_to") })
end

function B:reload_acc(h)
  local v = self:_emit("reload", "v", {}, { slot = spilled(self, h, "reload_acc") }).dst
  v.var = true
  return v
end

-- Loops -----------------------------------------------------------------------------------

local function capture(self, fn, ...)
  local list = {}
  self.cur[#self.cur + 1] = list
  fn(...)
  self.cur[#self.cur] = nil
  return list
end

-- for (r = begin; r < end; ) : body(r, group) while group rows remain, then body(r, 1) for
-- the rest. A row's work must not depend on the group it ran in (the template's promise;
-- the tests check rows computed in a group against rows computed alone).
function B:for_rows(first, last, group, body)
  group = self:_int(group, "for_rows")
  if group < 1 or group > 8 then self:_fail("for_rows: group must be 1..8") end
  local op = self:_emit("for_rows", false,
                        { self:_want(first, "i", "for_rows", "first"), self:_want(last, "i", "for_rows", "last") },
                        { group = group })
  local r = new_value(self, "i")
  r.line = op.line
  op.attr.ivar = r
  op.attr.grouped = capture(self, body, r, group)
  op.attr.single = group > 1 and capture(self, body, r, 1) or {}
end

-- for (i = 0; i + tile <= n; i += tile) body(i, nil); then, if n - i > 0, body(i, tail) once,
-- tail(base[, step]) giving the lane group of lanes l with i + base + step * l < n (for load_raw,
-- the halfwords h with i + base + h < n): the other lanes are neither loaded nor stored, and
-- accumulate nothing.
-- opts.whole: n is known to be a multiple of the tile (no tail is emitted).
function B:for_tiles(n, tile, body, start, opts)
  tile = self:_int(tile, "for_tiles")
  if opts and opts.whole then
    -- no tail: any step (a loop over groups of rows whose count is a multiple of the step)
    if tile < 1 then self:_fail("for_tiles: the step must be >= 1") end
  elseif tile < 16 or tile % 16 ~= 0 then
    self:_fail("for_tiles: the tile must be a multiple of 16 lanes (any step >= 1 with opts.whole)")
  end
  local op = self:_emit("for_tiles", false, { self:_want(n, "i", "for_tiles", "n") }, { tile = tile })
  if start ~= nil then
    -- i runs from `start` instead of 0: a second operand, read once at the loop's entry
    op.src[2] = self:_want(start, "i", "for_tiles", "start")
    op.attr.start = true
  end
  local i, rem = new_value(self, "i"), new_value(self, "i")
  i.line, rem.line = op.line, op.line
  op.attr.ivar, op.attr.rem = i, rem
  op.attr.full = capture(self, body, i, nil)
  local function tail(base, step)
    base, step = self:_int(base, "tail"), step or 1
    if base < 0 or base >= tile then self:_fail("tail(base): base must lie inside the tile") end
    if step ~= 1 and step ~= 2 then self:_fail("tail(base, step): step must be 1 or 2") end
    return { kind = "lanes", rem = rem, base = base, step = step }
  end
  if opts and opts.whole then
    op.attr.whole = true
    op.attr.tail = {}
  else
    op.attr.tail = capture(self, body, i, tail)
  end
end

-- Dispatch on an integer value known to be one of `values`: body(v) is emitted once per value
-- and runs when the value equals v; any other value runs nothing (callers validate it).
function B:cases(value, values, body)
  local op = self:_emit("cases", false, { self:_want(value, "i", "cases", "value") }, { arms = {} })
  for _, v in ipairs(values) do
    op.attr.arms[#op.attr.arms + 1] = { value = self:_int(v, "cases"), body = capture(self, body, v) }
  end
end

---------------------------------------------------------------------------------------------

-- Places each argument load right before the first op of the innermost block that holds all
-- of the argument's uses: loop-invariant fields load once, per-row fields load per row.
local sub_blocks = IR.sub_blocks

place_args = function(self)
  local paths = {}      -- value -> list of paths; a path is a list of { block, index }
  local function walk(block, prefix)
    for idx, op in ipairs(block) do
      local here = {}
      for i = 1, #prefix do here[i] = prefix[i] end
      here[#here + 1] = { block = block, index = idx }
      local used = {}
      for _, s in ipairs(op.src) do used[#used + 1] = s end
      if op.lanes then used[#used + 1] = op.lanes.rem end
      for _, v in ipairs(used) do
        if not paths[v] then paths[v] = {} end
        paths[v][#paths[v] + 1] = here
      end
      for _, b in ipairs(sub_blocks(op)) do walk(b, here) end
    end
  end
  walk(self.body, {})
  local inserts = {}    -- block -> list of { index, op }
  -- replace value `from` by `to` in every op of a block tree
  local function substitute(block, from, to)
    for _, op in ipairs(block) do
      for i, v in ipairs(op.src) do if v == from then op.src[i] = to end end
      if op.lanes and op.lanes.rem == from then op.lanes.rem = to end
      for _, b in ipairs(sub_blocks(op)) do substitute(b, from, to) end
    end
  end
  local function clone_of(op)
    self.nops = self.nops + 1
    local c = { id = self.nops, op = op.op, src = { op.src[1] }, attr = op.attr, line = op.line }
    c.dst = new_value(self, op.dst.type)
    c.dst.line, c.dst.name = op.dst.line, op.dst.name
    return c
  end
  local function is_loop(o) return o.op == "for_tiles" or o.op == "for_rows" end
  -- a row loop, a dispatch, or an outer tile loop (one holding another loop) whose body holds
  -- every use: place inside it, per body, so the field is reloaded per row rather than held
  -- across the loop; an innermost tile loop keeps it in a register
  local function holds_loop(list)
    for _, o in ipairs(list) do
      if is_loop(o) then return true end
      for _, b in ipairs(IR.sub_blocks(o)) do if holds_loop(b) then return true end end
    end
    return false
  end
  local function descends(o)
    if o.op == "for_rows" or o.op == "cases" then return true end
    return o.op == "for_tiles" and holds_loop(o.attr.full)
  end

  local place
  place = function(op, ps)
    -- longest common prefix of blocks
    local depth = 1
    while true do
      local b = ps[1][depth] and ps[1][depth].block
      local same = b ~= nil
      for _, p in ipairs(ps) do if not p[depth] or p[depth].block ~= b then same = false end end
      if not same then break end
      depth = depth + 1
    end
    depth = depth - 1
    -- never inside an innermost tile loop: loaded before it, the field stays in a register
    -- across its iterations
    for d = 2, depth do
      local parent = ps[1][d - 1].block[ps[1][d - 1].index]
      if parent.op == "for_tiles" and not holds_loop(parent.attr.full) then
        depth = d - 1
        break
      end
    end
    local block = ps[1][depth].block
    -- group the uses by their op in this block, in order
    local by_index, idxs = {}, {}
    for _, p in ipairs(ps) do
      local k = p[depth].index
      if not by_index[k] then by_index[k] = {}; idxs[#idxs + 1] = k end
      by_index[k][#by_index[k] + 1] = p
    end
    table.sort(idxs)
    -- the uses in order: per op, its own operands (a loop's bounds, read once at its entry), then
    -- the uses inside its bodies; a row loop or dispatch used both ways is two entries, so that
    -- its bounds do not keep the field in a register across the loop
    local entries = {}
    for _, k in ipairs(idxs) do
      local direct, deep = {}, {}
      for _, p in ipairs(by_index[k]) do
        if p[depth + 1] then deep[#deep + 1] = p else direct[#direct + 1] = p end
      end
      if descends(block[k]) and #direct > 0 and #deep > 0 then
        entries[#entries + 1] = { k = k, paths = direct, part = "direct" }
        entries[#entries + 1] = { k = k, paths = deep, part = "deep", own = true }
      else
        entries[#entries + 1] = { k = k, paths = by_index[k], own = descends(block[k]) and #direct == 0 }
      end
    end
    -- runs of uses not separated by a loop share one load; a use that is (inside) a row loop or
    -- a dispatch, with every use of its run inside, is placed within it instead
    local segments, cur = {}, nil
    for _, e in ipairs(entries) do
      local k = e.k
      local split = e.own or not cur or cur.own or (cur.last < k and is_loop(block[cur.last]))
      if not split then
        for q = cur.last + 1, k - 1 do split = split or is_loop(block[q]) end
      end
      if split then
        cur = { first = k, last = k, own = e.own, paths = {}, deep_first = e.part == "deep" }
        segments[#segments + 1] = cur
      end
      cur.last = k
      cur.direct_last = e.part == "direct"
      for _, p in ipairs(e.paths) do cur.paths[#cur.paths + 1] = p end
    end
    for si, seg in ipairs(segments) do
      local clone = op
      if si > 1 then
        clone = clone_of(op)
        for q = seg.first, seg.last do
          local o = block[q]
          if q == seg.last and seg.direct_last then
            -- the op's own operands only, not its bodies (a later segment's)
            for i, v in ipairs(o.src) do if v == op.dst then o.src[i] = clone.dst end end
            if o.lanes and o.lanes.rem == op.dst then o.lanes.rem = clone.dst end
          elseif q == seg.first and seg.deep_first then
            for _, b in ipairs(sub_blocks(o)) do substitute(b, op.dst, clone.dst) end
          else
            substitute({ o }, op.dst, clone.dst)
          end
        end
      end
      if seg.own then
        -- one load per body (arm, grouped rows, remainder rows), each placed inside it
        local subs, order = {}, {}
        for _, p in ipairs(seg.paths) do
          local b = p[depth + 1].block
          if not subs[b] then subs[b] = {}; order[#order + 1] = b end
          subs[b][#subs[b] + 1] = p
        end
        for bi, b in ipairs(order) do
          local c = clone
          if bi > 1 then
            c = clone_of(op)
            substitute(b, clone.dst, c.dst)
          end
          place(c, subs[b])
        end
      else
        if not inserts[block] then inserts[block] = {} end
        local l = inserts[block]
        l[#l + 1] = { index = seg.first, op = clone }
      end
    end
  end
  for _, op in ipairs(self.pending) do
    if paths[op.dst] then place(op, paths[op.dst]) end
  end
  local function apply(block)
    for _, op in ipairs(block) do for _, b in ipairs(sub_blocks(op)) do apply(b) end end
    local l = inserts[block]
    if not l then return end
    -- stable: by index, then by first access (op id)
    table.sort(l, function(a, b)
      if a.index ~= b.index then return a.index < b.index end
      return a.op.id < b.op.id
    end)
    for k = #l, 1, -1 do table.insert(block, l[k].index, l[k].op) end
  end
  apply(self.body)
end

-- Folds a full (unmasked) f32 load whose only use is the multiplicand of the next fma_acc in
-- the same block into that fma_acc (fma_acc_mem), when no store lies between them: the value
-- and the order of every operation are unchanged; a backend with memory operands (x86) saves
-- the load and its register, others load into a scratch register at the fma.
local function fold_loads(self)
  local uses = {}
  IR.walk_proc({ prologue = self.prologue, body = self.body }, function(op)
    for _, v in ipairs(op.src) do uses[v] = (uses[v] or 0) + 1 end
    if op.lanes then uses[op.lanes.rem] = (uses[op.lanes.rem] or 0) + 1 end
  end)
  local function pass(block)
    local out, pending = {}, {}       -- pending: load dst -> index in out
    for _, op in ipairs(block) do
      for _, b in ipairs(IR.sub_blocks(op)) do pass(b) end
      if op.op == "store_f32" or op.op == "store_bf16" or op.op == "store1_f32" or op.op == "store1_bf16" then
        pending = {}
      end
      local folded = false
      if op.op == "fma_acc" then
        local x = op.src[3]
        local at = pending[x]
        if at and uses[x] == 1 then
          local load = out[at]
          op.op = "fma_acc_mem"
          op.src = { op.src[1], op.src[2], load.src[1], load.src[2] }
          op.attr = { off = load.attr.off }
          out[at] = false
          folded = true
        end
      end
      out[#out + 1] = op
      if not folded and op.op == "load_f32" and not op.lanes then pending[op.dst] = #out end
    end
    local j = 0
    for i = 1, #out do
      if out[i] then j = j + 1; block[j] = out[i] end
    end
    for i = #block, j + 1, -1 do block[i] = nil end
  end
  pass(self.body)
end

-- The tuning parameters every backend variant supplies (gen/isa/*.lua `tuning`). A template reads
-- them as t.tune.<name> to size its schedule (rows in flight, activation rows per pass, what stays
-- in registers), never its arithmetic order; the stamp's banner prints those it read.
M.TUNING = {
  accumulators = { kind = "number", doc = "canonical 16-lane vectors one pass may keep live as accumulators " ..
                   "and weight tiles, one more operand in flight beside them" },
  hold_operands = { kind = "boolean", doc = "keep loop-invariant operands and loaded tiles in registers " ..
                    "across passes (true), or reload them / pass them through memory (false)" },
  head_group = { kind = "number", doc = "heads whose two-pass norms run interleaved (qkprep)" },
  int8_dot = { kind = "string", doc = "the integer dot product of the variant's CPUs: 'u8s8' (dot_u8s8), " ..
               "'s8s8' (dot_s8s8), 's8s7' (dot_s8s7) or 'none'; a choice of exact integer instructions, " ..
               "never of a result" },
  lone_groups = { kind = "number", doc = "weight groups a lone activation row's pass reads at once (gemv's " ..
                  "quantized fast tier): 1, one stream, or 2, two streams (a group from each half of the rows), " ..
                  "where the registers allow; a choice of schedule, never of a result" },
  exact_groups = { kind = "number", doc = "weight groups a lone activation row's exact quantized pass reads " ..
                   "at once (gemv): 1, one stream, or 2, two streams (a group from each half of the rows) in " ..
                   "pieces of k, chains (0, 1) of both then (2, 3), the other chains' sums parked in stack " ..
                   "slots; a choice of schedule, never of a result" },
  lone_compact = { kind = "boolean", doc = "a lone activation row's q8 slots (gemv's fast tier): compact, " ..
                   "the quants and scales (72 bytes a tile, the correction computed by each pass: registers " ..
                   "to spare), or the full slot (256 bytes, the correction read)" },
  q4_lut = { kind = "boolean", doc = "gemv's exact q4 passes dequantize through a 16-entry table per " ..
             "block ((i - 8) d, one multiply; lut16 by the nibble) rather than mask or shift, subtract, " ..
             "convert and multiply per vector: the same exact products; a choice of instructions" },
  scales_once = { kind = "boolean", doc = "gemv's exact quantized passes over a whole 4-row group convert " ..
                  "a record's 8 binary16 scales at once (load_f16x8, into a stack slot) and broadcast each " ..
                  "from there (reload_bcast) rather than load_bcast_f16 per use; needs F16C on x86" },
  byte_shift = { kind = "boolean", doc = "the variant shifts bytes in one instruction (NEON USHR .16b): " ..
                 "gemv's q4 fast passes take the high nibbles by ushr8_v rather than a 32-bit shift and a " ..
                 "mask; the same bytes, a choice of instructions" },
  stream_l1 = { kind = "boolean", doc = "gemv's exact quantized passes that read a whole record (a 4-row " ..
                "group) prefetch its stream into L1 (true) rather than L2; a choice of schedule, never of a result" },
  stream_ahead = { kind = "number", doc = "bytes: how far ahead of its reads a quantized weight stream's " ..
                   "software prefetch runs (gemv's quantized forms, both tiers), rounded up to whole records " ..
                   "of the format; a choice of schedule, never of a result" },
  stream_hw = { kind = "number", doc = "bytes: a lone activation row's pass over one weight group whose " ..
                "weights and activation slots span at most this many bytes leaves the weight stream to the " ..
                "CPU's hardware prefetcher (no software prefetch; gemv q8); 0: always prefetch" },
}

-- Builds the IR of one form in one tier. `template` is the loaded template table, `form` one
-- of its forms, `tuning` the variant's tuning parameters (M.TUNING).
function M.build(path, template, form, params, tier, tuning)
  local fields, size = M.layout(form.args, path)   -- fkgen has validated the layout already
  local self = setmetatable({ path = path, nops = 0, nvalues = 0, prologue = {}, body = {},
                              pending = {}, tier = tier, slots_live = {}, nslots = 0 }, B)
  local used = {}
  self.tune = setmetatable({}, {
    __index = function(_, name)
      if not M.TUNING[name] then
        self:_fail("no tuning parameter '" .. tostring(name) .. "'" ..
                   M.nearest(tostring(name), C.sorted_keys(M.TUNING)))
      end
      used[name] = tuning[name]
      return tuning[name]
    end,
    __newindex = function() self:_fail("t.tune is read-only") end,
  })
  self.cur = { self.prologue }
  local by_name = {}
  for _, f in ipairs(fields) do by_name[f.name] = f end
  -- The argument struct pointer is an ordinary value (precoloured to the ABI register); each
  -- argument is loaded where its uses meet (see place_args), so a field needed only per row
  -- does not hold a register for the whole leaf.
  local entry = self:_emit("entry", "i", {})
  self.argp = entry.dst
  self.argp.fixed = true
  self.argp.name = "a"
  self.cur = { self.body }
  local loaded = {}
  self.arg = setmetatable({}, {
    __index = function(_, name)
      local f = by_name[name]
      if not f then
        local names = {}
        for _, g in ipairs(fields) do names[#names + 1] = g.name end
        self:_fail("no argument named '" .. tostring(name) .. "' in form '" .. form.name .. "'" ..
                   M.nearest(tostring(name), names))
      end
      if not loaded[name] then
        self.nops = self.nops + 1
        local op = { id = self.nops, op = f.class == "s" and "arg_f32" or "arg", src = { self.argp },
                     attr = { field = f }, line = template_line(self.path) }
        op.dst = new_value(self, f.class)
        op.dst.line, op.dst.name = op.line, name
        if f.kind == "ptr" then op.dst.ptr = { what = "a." .. name, ctype = f.ctype, elem = f.elem, dir = f.dir } end
        loaded[name] = op
        self.pending[#self.pending + 1] = op
      end
      return loaded[name].dst
    end,
    __newindex = function() self:_fail("t.arg is read-only") end,
  })
  running = self
  local ok, err = xpcall(template.body, function(e)
    if type(e) == "table" then return e end
    return { internal = tostring(e), trace = debug.traceback() }   -- as gen/fkgen.lua reports it
  end, self, params, form)
  running = nil
  if not ok then error(err, 0) end
  fold_loads(self)
  place_args(self)
  local proc = { leaf = template.leaf, form = form.name, fields = fields, struct_size = size,
                 prologue = self.prologue, body = self.body, nops = self.nops, path = path, tier = tier,
                 tuning_used = used, frame_slots = self.nslots }
  local msg, op = IR.validate(proc)
  if msg then M.raise(path, msg, op and op.line or 0) end
  return proc
end

return M
