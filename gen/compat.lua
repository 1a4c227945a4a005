-- gen/compat.lua: the one place where LuaJIT 2.1 and Lua 5.4 differ for the generator.
--
-- Rules the rest of gen/ follows (so output is byte-identical under both):
--   * numbers reach output only through compat.int / string.format("%d") with integral values;
--   * iteration order that reaches output never comes from pairs(): use compat.sorted_keys;
--   * 32-bit bit operations go through compat.band/bor/bxor/shl/shr/rol/add32, which always
--     return a value in [0, 2^32).

local M = {}

local has_bit, bitlib = pcall(require, "bit")   -- LuaJIT (or Lua BitOp)

local TWO32 = 4294967296

local function u32(x) return x % TWO32 end

if has_bit then
  local band, bor, bxor, lshift, rshift, rol =
    bitlib.band, bitlib.bor, bitlib.bxor, bitlib.lshift, bitlib.rshift, bitlib.rol
  M.band = function(a, b) return u32(band(a, b)) end
  M.bor  = function(a, b) return u32(bor(a, b)) end
  M.bxor = function(a, b) return u32(bxor(a, b)) end
  M.bnot = function(a) return u32(bxor(a, 0xffffffff)) end
  M.shl  = function(a, n) return u32(lshift(a, n)) end
  M.shr  = function(a, n) return u32(rshift(a, n)) end
  M.rol  = function(a, n) return u32(rol(a, n)) end
else
  -- Lua 5.3+: native 64-bit integers and operators. load() keeps this file parseable by LuaJIT.
  local ops = assert(load([[
    local M, u32 = ...
    M.band = function(a, b) return (a & b) & 0xffffffff end
    M.bor  = function(a, b) return (a | b) & 0xffffffff end
    M.bxor = function(a, b) return (a ~ b) & 0xffffffff end
    M.bnot = function(a) return (~a) & 0xffffffff end
    M.shl  = function(a, n) return (a << n) & 0xffffffff end
    M.shr  = function(a, n) return (a & 0xffffffff) >> n end
    M.rol  = function(a, n) a = a & 0xffffffff; return ((a << n) | (a >> (32 - n))) & 0xffffffff end
  ]]))
  ops(M, u32)
  -- integer-valued floats would print as "3.0": normalise everything that enters bit ops.
  for _, k in ipairs({ "band", "bor", "bxor", "shl", "shr", "rol" }) do
    local f = M[k]
    M[k] = function(a, b) return f(math.tointeger(a) or error("non-integer in bit op"), b) end
  end
  local bnot = M.bnot
  M.bnot = function(a) return bnot(math.tointeger(a) or error("non-integer in bit op")) end
end

function M.add32(...)
  local s = 0
  for i = 1, select("#", ...) do s = s + select(i, ...) end
  return u32(s)
end

-- Integral number -> decimal string, identical under both interpreters.
function M.int(n)
  assert(n == math.floor(n), "compat.int: not an integer")
  return string.format("%d", n)
end

-- Keys of a table in a stable order (numbers before strings, each ascending).
function M.sorted_keys(t)
  local keys = {}
  for k in pairs(t) do keys[#keys + 1] = k end
  table.sort(keys, function(a, b)
    local ta, tb = type(a), type(b)
    if ta ~= tb then return ta < tb end
    return a < b
  end)
  return keys
end

-- Whole file as a string (binary), or nil, message.
function M.read_file(path)
  local f, err = io.open(path, "rb")
  if not f then return nil, err end
  local s = f:read("*a")
  f:close()
  return s
end

M.interpreter = has_bit and "luajit" or _VERSION

-- The f32 bit pattern of a double, rounded to nearest even (normal range and zero only: the
-- generator's tables hold twiddles and windows, |x| in [2^-126, 2^128) or 0). Plain arithmetic,
-- no string.pack: the same bits under LuaJIT and Lua 5.4.
function M.f32bits(x)
  if x == 0 then return (1 / x < 0) and 0x80000000 or 0 end
  local sign = x < 0 and 0x80000000 or 0
  local a = math.abs(x)
  local e = math.floor(math.log(a) / math.log(2))
  while 2 ^ e > a do e = e - 1 end
  while 2 ^ (e + 1) <= a do e = e + 1 end
  if e < -126 or e > 127 then error("f32bits: " .. tostring(x) .. " is outside the normal f32 range") end
  local scaled = a / 2 ^ e * 2 ^ 23             -- in [2^23, 2^24), exact in a double
  local r = math.floor(scaled)
  local frac = scaled - r
  if frac > 0.5 or (frac == 0.5 and r % 2 == 1) then r = r + 1 end
  if r == 2 ^ 24 then r, e = 2 ^ 23, e + 1 end
  if e > 127 then error("f32bits: " .. tostring(x) .. " rounds past the f32 range") end
  return sign + (e + 127) * 2 ^ 23 + (r - 2 ^ 23)
end

-- The value (a double) of an f32 bit pattern (normal numbers and zero).
function M.f32value(w)
  local sign = w >= 0x80000000 and -1 or 1
  if w >= 0x80000000 then w = w - 0x80000000 end
  local e = math.floor(w / 2 ^ 23)
  local m = w - e * 2 ^ 23
  if e == 0 then
    if m ~= 0 then error("f32value: subnormal") end
    return sign * 0.0
  end
  return sign * (1 + m / 2 ^ 23) * 2 ^ (e - 127)
end

-- ---- the shell (gen/fkgen.lua lists templates/; tools/census.lua, tools/asmdiff.lua) ----------

-- A POSIX shell word: s in single quotes.
function M.sh_quote(s) return "'" .. s:gsub("'", "'\\''") .. "'" end

-- Runs a shell command; returns success and its output (stdout and stderr). The exit status
-- travels in the output: LuaJIT's popen close() does not report it.
function M.run(cmd)
  local p = assert(io.popen("{ " .. cmd .. "; } 2>&1; echo \"__rc=$?\""))
  local out = p:read("*a")
  p:close()
  local rc = out:match("__rc=(%d+)%s*$")
  out = out:gsub("__rc=%d+%s*$", "")
  return rc == "0", out
end

-- os.execute's status under both interpreters (LuaJIT returns the raw status, Lua 5.4 a boolean).
function M.execute_ok(cmd)
  local r = os.execute(cmd)
  if type(r) == "number" then return r == 0 end
  return r == true
end

-- A fresh temporary directory (mktemp -d), or nil.
function M.make_tmpdir()
  local p = io.popen("mktemp -d 2>/dev/null")
  local dir = p and p:read("*l")
  if p then p:close() end
  if not dir or dir == "" then return nil end
  return dir
end

return M
