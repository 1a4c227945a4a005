-- gen/extent.lua: the extent expressions templates write next to pointer arguments.
--
-- An extent says how many elements, from the pointer on, a leaf may touch, as an expression of
-- the form's int64_t scalar arguments:
--
--   extent = "span(rows, x_stride, n)"                 -- rows of n elements, x_stride apart
--   extent = "kv_heads * group * 64"
--   extent = "frame == 0 ? 0 : frame == 1 ? 160 : 320"
--
-- Grammar (C's precedence and meaning, int64 arithmetic, / truncating):
--   expr    := or [ "?" expr ":" expr ]
--   or      := and { "||" and }          and := cmp { "&&" cmp }
--   cmp     := sum [ ("<" | "<=" | ">" | ">=" | "==" | "!=") sum ]
--   sum     := term { ("+" | "-") term }  term := unary { ("*" | "/") unary }
--   unary   := "-" unary | primary
--   primary := integer | name | fn "(" expr { "," expr } ")" | "(" expr ")"
-- Functions: min(a, b), max(a, b), round_up(a, m) (m a positive integer constant), and
-- span(rows, stride, width) = rows > 0 ? (rows - 1) * stride + width : 0, the elements of
-- `rows` rows of `width` elements `stride` apart.
--
-- parse() checks every name against the form's scalar arguments and returns a tree; c() writes
-- the tree as one C expression over `a` (the form's argument struct pointer), with no commas
-- outside parentheses, so it can travel as one X-macro argument; eval() computes it in Lua.

local C = require("compat")

local M = {}

local FUNCS = { min = 2, max = 2, round_up = 2, span = 3 }

local function tokens(src)
  local out, i = {}, 1
  while i <= #src do
    local c = src:sub(i, i)
    if c:match("%s") then
      i = i + 1
    elseif c:match("%d") then
      local num = src:match("^%d+", i)
      out[#out + 1] = { k = "int", v = tonumber(num), at = i }
      i = i + #num
    elseif c:match("[%a_]") then
      local name = src:match("^[%a_][%w_]*", i)
      out[#out + 1] = { k = "name", v = name, at = i }
      i = i + #name
    else
      local two = src:sub(i, i + 1)
      if two == "<=" or two == ">=" or two == "==" or two == "!=" or two == "&&" or two == "||" then
        out[#out + 1] = { k = two, at = i }
        i = i + 2
      elseif ("+-*/()?:<>,"):find(c, 1, true) then
        out[#out + 1] = { k = c, at = i }
        i = i + 1
      else
        return nil, "unexpected character '" .. c .. "' at column " .. C.int(i)
      end
    end
  end
  out[#out + 1] = { k = "end", at = #src + 1 }
  return out
end

-- Parses `src`; `names` maps each allowed name to true. Returns the tree, or nil and a message.
function M.parse(src, names)
  if type(src) ~= "string" or src:match("^%s*$") then return nil, "an extent must be a non-empty string" end
  local toks, terr = tokens(src)
  if not toks then return nil, terr end
  local pos = 1
  local function peek() return toks[pos] end
  local function fail(msg) error({ extent = msg .. " (column " .. C.int(toks[pos].at) .. ")" }, 0) end
  local function take(k)
    if toks[pos].k ~= k then fail("expected '" .. k .. "'") end
    pos = pos + 1
  end
  local expr
  local function primary()
    local t = peek()
    if t.k == "int" then
      pos = pos + 1
      return { k = "int", v = t.v }
    elseif t.k == "name" then
      pos = pos + 1
      if peek().k == "(" then
        local want = FUNCS[t.v]
        if not want then fail("unknown function '" .. t.v .. "' (min, max, round_up, span)") end
        take("(")
        local args = { expr() }
        while peek().k == "," do
          pos = pos + 1
          args[#args + 1] = expr()
        end
        take(")")
        if #args ~= want then fail(t.v .. " takes " .. C.int(want) .. " arguments") end
        if t.v == "round_up" and (args[2].k ~= "int" or args[2].v < 1) then
          fail("round_up's multiple must be a positive integer constant")
        end
        return { k = "call", fn = t.v, args = args }
      end
      if not names[t.v] then
        local known = C.sorted_keys(names)
        fail("'" .. t.v .. "' is not an int64_t argument of this form (" .. table.concat(known, ", ") .. ")")
      end
      return { k = "name", v = t.v }
    elseif t.k == "(" then
      pos = pos + 1
      local e = expr()
      take(")")
      return e
    end
    fail("expected a number, a name or '('")
  end
  local function unary()
    if peek().k == "-" then
      pos = pos + 1
      return { k = "neg", a = unary() }
    end
    return primary()
  end
  local function binary(sub, ops)
    return function()
      local l = sub()
      while ops[peek().k] do
        local op = peek().k
        pos = pos + 1
        l = { k = "bin", op = op, a = l, b = sub() }
      end
      return l
    end
  end
  local term = binary(unary, { ["*"] = true, ["/"] = true })
  local sum = binary(term, { ["+"] = true, ["-"] = true })
  local function cmp()
    local l = sum()
    local op = peek().k
    if op == "<" or op == "<=" or op == ">" or op == ">=" or op == "==" or op == "!=" then
      pos = pos + 1
      return { k = "bin", op = op, a = l, b = sum() }
    end
    return l
  end
  local conj = binary(cmp, { ["&&"] = true })
  local disj = binary(conj, { ["||"] = true })
  expr = function()
    local c = disj()
    if peek().k == "?" then
      pos = pos + 1
      local a = expr()
      take(":")
      return { k = "cond", c = c, a = a, b = expr() }
    end
    return c
  end
  local ok, tree = pcall(function()
    local e = expr()
    if peek().k ~= "end" then fail("unexpected '" .. peek().k .. "' after the expression") end
    return e
  end)
  if not ok then
    if type(tree) == "table" and tree.extent then return nil, tree.extent end
    error(tree, 0)
  end
  return tree
end

-- The tree as a C expression over `a`. Arithmetic goes through FK_EXT_ADD, FK_EXT_SUB, FK_EXT_MUL,
-- FK_EXT_DIV and FK_EXT_NEG (fk_leaves.h defines them as the plain operators; fk_leaf_check
-- redefines them to detect overflow); comparisons, && || and ?: stay C's.
local ARITH = { ["+"] = "FK_EXT_ADD", ["-"] = "FK_EXT_SUB", ["*"] = "FK_EXT_MUL", ["/"] = "FK_EXT_DIV" }
function M.c(e)
  if e.k == "int" then return C.int(e.v) end
  if e.k == "name" then return "a->" .. e.v end
  if e.k == "neg" then return "FK_EXT_NEG(" .. M.c(e.a) .. ")" end
  if e.k == "bin" then
    if ARITH[e.op] then return ARITH[e.op] .. "(" .. M.c(e.a) .. ", " .. M.c(e.b) .. ")" end
    return "(" .. M.c(e.a) .. " " .. e.op .. " " .. M.c(e.b) .. ")"
  end
  if e.k == "cond" then return "(" .. M.c(e.c) .. " ? " .. M.c(e.a) .. " : " .. M.c(e.b) .. ")" end
  local x = {}
  for i, arg in ipairs(e.args) do x[i] = M.c(arg) end
  if e.fn == "min" then return "(" .. x[1] .. " < " .. x[2] .. " ? " .. x[1] .. " : " .. x[2] .. ")" end
  if e.fn == "max" then return "(" .. x[1] .. " > " .. x[2] .. " ? " .. x[1] .. " : " .. x[2] .. ")" end
  if e.fn == "round_up" then
    local sum = "FK_EXT_ADD(" .. x[1] .. ", " .. C.int(e.args[2].v - 1) .. ")"
    return "FK_EXT_MUL(FK_EXT_DIV(" .. sum .. ", " .. x[2] .. "), " .. x[2] .. ")"
  end
  -- span
  return "(" .. x[1] .. " > 0 ? FK_EXT_ADD(FK_EXT_MUL(FK_EXT_SUB(" .. x[1] .. ", 1), " .. x[2] .. "), " .. x[3] ..
         ") : 0)"
end

-- C's integer division: the quotient truncated toward zero.
function M.idiv(a, b)
  local q = a / b
  return q >= 0 and math.floor(q) or -math.floor(-q)
end

-- The tree's value for the scalars in `env` (name -> integer); C's truncating division.
function M.eval(e, env)
  if e.k == "int" then return e.v end
  if e.k == "name" then return env[e.v] end
  if e.k == "neg" then return -M.eval(e.a, env) end
  if e.k == "cond" then
    if M.eval(e.c, env) ~= 0 then return M.eval(e.a, env) end
    return M.eval(e.b, env)
  end
  if e.k == "bin" then
    local a, b = M.eval(e.a, env), M.eval(e.b, env)
    local op = e.op
    if op == "+" then return a + b elseif op == "-" then return a - b elseif op == "*" then return a * b end
    if op == "/" then return M.idiv(a, b) end
    local r
    if op == "<" then r = a < b elseif op == "<=" then r = a <= b elseif op == ">" then r = a > b
    elseif op == ">=" then r = a >= b elseif op == "==" then r = a == b elseif op == "!=" then r = a ~= b
    elseif op == "&&" then r = a ~= 0 and b ~= 0 else r = a ~= 0 or b ~= 0 end
    return r and 1 or 0
  end
  local x = {}
  for i, arg in ipairs(e.args) do x[i] = M.eval(arg, env) end
  if e.fn == "min" then return math.min(x[1], x[2]) end
  if e.fn == "max" then return math.max(x[1], x[2]) end
  if e.fn == "round_up" then return M.idiv(x[1] + x[2] - 1, x[2]) * x[2] end
  return x[1] > 0 and (x[1] - 1) * x[2] + x[3] or 0
end

return M
