-- tools/asmdiff/common.lua: what the asmdiff modules share: the error a bad input raises (one
-- line on stderr, exit status 2), string helpers, and the text width with its fit and clip.

local C = require("compat")

local U = {}

U.WIDTH = 160          -- text output never exceeds this many columns
local WIDTH = U.WIDTH

---------------------------------------------------------------------------------------------
-- Errors: a bad input is one line on stderr and exit status 2.

local Fail = {}
Fail.__index = Fail
Fail.__tostring = function(e) return e.msg end

local function fail(msg) error(setmetatable({ msg = msg }, Fail), 0) end
U.fail = fail
U.is_failure = function(e) return getmetatable(e) == Fail end

---------------------------------------------------------------------------------------------
-- Small helpers.

-- Leading and trailing blanks off (byte loops: no backtracking over the padding before a tag).
local function trim(s)
  local a, n = 1, #s
  while a <= n do
    local c = s:byte(a)
    if c ~= 32 and c ~= 9 and c ~= 13 then break end
    a = a + 1
  end
  while n >= a do
    local c = s:byte(n)
    if c ~= 32 and c ~= 9 and c ~= 13 then break end
    n = n - 1
  end
  return s:sub(a, n)
end

local function split_lines(text)
  local out, pos, n = {}, 1, #text
  while pos <= n do
    local e = text:find("\n", pos, true)
    if not e then out[#out + 1] = text:sub(pos); break end
    out[#out + 1] = text:sub(pos, e - 1)   -- a trailing \r goes with trim()
    pos = e + 1
  end
  return out
end

-- Replace every plain occurrence of `find` in s.
local function replace_plain(s, find, repl)
  if find == "" then return s end
  local out, pos = {}, 1
  while true do
    local a, b = s:find(find, pos, true)
    if not a then break end
    out[#out + 1] = s:sub(pos, a - 1)
    out[#out + 1] = repl
    pos = b + 1
  end
  out[#out + 1] = s:sub(pos)
  return table.concat(out)
end

local function int(n) return C.int(n) end

local function basename(p) return (p:match("([^/]+)$")) or p end

U.trim, U.split_lines, U.replace_plain, U.int, U.basename = trim, split_lines, replace_plain, int, basename

---------------------------------------------------------------------------------------------
-- Text layout.

-- Truncate (with an ellipsis) and pad to exactly w columns.
local SPACES = string.rep(" ", WIDTH)
local function fit(s, w)
  if #s > w then
    if w <= 3 then return s:sub(1, w) end
    return s:sub(1, w - 3) .. "..."
  end
  if w - #s <= WIDTH then return s .. SPACES:sub(1, w - #s) end
  return s .. string.rep(" ", w - #s)
end
U.fit = fit

-- One output line cut (with an ellipsis) at WIDTH columns.
local function clip(s) return #s > WIDTH and s:sub(1, WIDTH - 3) .. "..." or s end
U.clip = clip

return U
