-- tools/asmdiff.lua: a reviewer's view of stamps, op by op.
--
--   lua5.4 tools/asmdiff.lua [--root DIR] LEAF [--form FORM] [--variant PAIR] [--strict-ids]
--                            [--html FILE] [--color|--no-color]
--       the x86_64 and AArch64 stamps of each form side by side, aligned on template op groups;
--   lua5.4 tools/asmdiff.lua [--root DIR] --rev A..B LEAF [--form FORM] [--isa ISA] [--variant V]
--                            [--regen] [--html FILE] [--color|--no-color]
--       what changed in each stamp of LEAF between two revisions (B may be WORKTREE), op by op;
--   lua5.4 tools/asmdiff.lua --files LEFT.S RIGHT.S [--strict-ids] [--html FILE] ...
--       two stamp files side by side;
--   lua5.4 tools/asmdiff.lua [--root DIR] --list        leaves, forms and their stamps
--   lua5.4 tools/asmdiff.lua --help
--
-- Runs under Lua 5.4 and LuaJIT 2.1 alike (gen/compat.lua rules: numbers reach output through
-- %d only, no pairs() order reaches output). Loaded with dofile() it is a library: it returns
-- its table and runs nothing.
--
-- A stamp is read into { symbol, isa, variant, tier, leaf, form, groups, consts }: a group is
-- one run of lines of one template op (the writer prints a `// [id] op ...` header whenever the
-- op changes, so one op may own several groups, e.g. a loop's head and its back edge), holding
-- its instructions and, in order, the labels, directives and llvm-mca markers among them.
--
-- Alignment. Between ISAs, groups are aligned by a longest common subsequence whose key is the
-- op (name and details, e.g. `arg m`, `load_bf16 (tail lanes 16+)`) and its template line. The
-- op ids themselves are not in the key: DSL.build sees the register file (t.caps), so one ISA's
-- schedule may hold ops the other's has not (shortconv reloads raw loads on AArch64) and every
-- later id shifts; where ids differ the middle column shows both ([43|44]). --strict-ids keys
-- on (id, op) instead. Between revisions, groups equal in content are matched first (a
-- longest common subsequence), then the groups left between two matches are paired by op with a
-- preference for equal ids and lines; a paired group whose lines differ is shown as a
-- line-level diff. The LCS is Myers' O((N+M)D) bisection in linear space.

local M = {}

local SELF = ((debug.getinfo(1, "S") or {}).source or ""):match("^@(.*)$") or "tools/asmdiff.lua"
local TOOLS_DIR = SELF:match("^(.*)/[^/]*$") or "."
local C = dofile(TOOLS_DIR .. "/../gen/compat.lua")   -- the generator's compat module, not a copy

local WIDTH = 160          -- text output never exceeds this many columns
local ABSENT = "--- absent ---"

---------------------------------------------------------------------------------------------
-- Errors: a bad input is one line on stderr and exit status 2.

local Fail = {}
Fail.__index = Fail
Fail.__tostring = function(e) return e.msg end

local function fail(msg) error(setmetatable({ msg = msg }, Fail), 0) end
M.fail = fail
M.is_failure = function(e) return getmetatable(e) == Fail end

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

local shell_quote, execute_ok = C.sh_quote, C.execute_ok -- compat.lua: both interpreters

local function html_escape(s)
  return (s:gsub("[&<>\"]", { ["&"] = "&amp;", ["<"] = "&lt;", [">"] = "&gt;", ['"'] = "&quot;" }))
end
M.html_escape = html_escape

---------------------------------------------------------------------------------------------
-- Parser: stamp text -> stamp table.

local DIRECTIVE_SIZE = {
  [".byte"] = 1, [".short"] = 2, [".hword"] = 2, [".2byte"] = 2, [".long"] = 4, [".int"] = 4,
  [".4byte"] = 4, [".quad"] = 8, [".xword"] = 8, [".8byte"] = 8, [".dword"] = 8,
}

local HEXDIGITS = "0123456789abcdef"

-- One integer token of a data directive -> `size` little-endian bytes (a string), or nil.
local function value_bytes(tok, size)
  tok = trim(tok)
  local neg = false
  if tok:sub(1, 1) == "-" then neg, tok = true, trim(tok:sub(2)) end
  local hex
  if tok:match("^0[xX]%x+$") then
    hex = tok:sub(3):lower()
  elseif tok:match("^%d+$") then
    local v = tonumber(tok)
    if not v or v >= 2 ^ 53 then return nil end
    hex = ""
    repeat
      local d = v % 16
      hex = HEXDIGITS:sub(d + 1, d + 1) .. hex
      v = (v - d) / 16
    until v == 0
  else
    return nil
  end
  hex = hex:gsub("^0+(.)", "%1")
  if #hex > 2 * size then return nil end
  hex = string.rep("0", 2 * size - #hex) .. hex
  local bytes = {}
  for i = size, 1, -1 do bytes[#bytes + 1] = tonumber(hex:sub(2 * i - 1, 2 * i), 16) end
  if neg then   -- two's complement, little-endian
    local carry = 1
    for i = 1, size do
      local b = 255 - bytes[i] + carry
      carry = b >= 256 and 1 or 0
      bytes[i] = b % 256
    end
  end
  local chars = {}
  for i = 1, size do chars[i] = string.char(bytes[i]) end
  return table.concat(chars)
end
M.value_bytes = value_bytes

-- FK_L(<symbol>_tiles_check5) -> tiles_check: label numbers come from a per-stamp counter.
local function label_key(text, symbol)
  local inner = text:match("^FK_L%((.*)%)$") or text
  if inner:sub(1, #symbol + 1) == symbol .. "_" then inner = inner:sub(#symbol + 2) end
  return "L\0" .. (inner:gsub("%d+$", ""))
end

local function new_group(id, name, detail, src, line)
  return { id = id, name = name, detail = detail, src = src, line = line,
           instrs = {}, labels = {}, items = {} }
end

-- Parse a stamp's text. `origin` names it in messages. Returns the stamp table (see the header).
function M.parse(text, origin)
  origin = origin or "stamp"
  local st = { origin = origin, groups = {}, consts = {}, const_order = {}, ninstr = 0 }
  local lines = split_lines(text)
  -- banner fields
  for _, l in ipairs(lines) do
    local key, val = l:match("^//%s*(%a+):%s+(.-)%s*$")
    if key == "Symbol" then st.symbol = val
    elseif key == "Leaf" then st.leaf, st.form = val:match("^(%S+), form (%S+)$")
    elseif key == "Variant" then st.isa, st.variant = val:match("^(%S+)%s+(%S+)")
    elseif key == "Tier" then st.tier = val
    elseif key == "Template" then st.template, st.template_blob = val:match("^(%S+)%s*%(git blob (%x+)%)")
      st.template = st.template or val
    end
    if l:match("^FK_SYM%(") then break end
  end
  if not st.symbol then   -- no banner: the first function-like symbol that is not a table
    for _, l in ipairs(lines) do
      local s = l:match("^FK_SYM%((.-)%):%s*$")
      if s and not s:find("_k_", 1, true) then st.symbol = s; break end
    end
  end
  if not st.symbol then fail(origin .. ": not a stamp (no Symbol: banner line and no FK_SYM(...) function)") end
  if not st.isa then
    local isa, variant, tier = st.symbol:match("__(x86_64)_(.+)_(%a+)$")
    if not isa then isa, variant, tier = st.symbol:match("__(aarch64)_(.+)_(%a+)$") end
    st.isa, st.variant, st.tier = isa or "?", variant or "?", st.tier or tier
  end
  local entry = "FK_SYM(" .. st.symbol .. "):"
  local kprefix = st.symbol .. "_k_"
  local abbrev = st.symbol .. "_"

  local state = "pre"           -- pre, body, post
  local cur, pending = nil, {}
  local cur_const
  local function flush_pending(g)
    for _, it in ipairs(pending) do
      g.items[#g.items + 1] = it
      if it.kind == "label" then g.labels[#g.labels + 1] = it.text end
    end
    pending = {}
  end
  -- Lines between two groups: a label the group before branches to (a lane loop's exit) stays
  -- with it; from the first other line on, they lead the next group (a loop head and its
  -- alignment and markers).
  local function refers(g, label)
    for _, t in ipairs(g.instrs) do if t:find(label, 1, true) then return true end end
    return false
  end
  local function open_group(g)
    if cur then
      local k = 1
      while pending[k] and pending[k].kind == "label" and refers(cur, pending[k].text) do k = k + 1 end
      if k > 1 then
        local rest = {}
        for i = k, #pending do rest[#rest + 1] = pending[i] end
        for i = #pending, k, -1 do pending[i] = nil end
        flush_pending(cur)
        pending = rest
      end
    end
    st.groups[#st.groups + 1] = g
    cur = g
    flush_pending(g)
  end
  for _, raw in ipairs(lines) do
    local l = raw:find("\t", 1, true) and raw:gsub("\t", " ") or raw
    if state == "pre" then
      if trim(l) == entry then state = "body" end
    elseif state == "body" then
      -- an instruction is text, blanks, then its tag "// [id]" (one find, then C-side matching)
      local cpos = l:find("//", 1, true)
      local itext, tid
      if cpos and l:find("%S", 1) < cpos then
        tid = l:match("^//%s*%[(%d+)%]%s*$", cpos)
        if tid then itext = l:sub(1, cpos - 1):match("^%s*(.-)%s*$") end
      end
      local t = itext and "" or trim(l)
      if itext then
        local id = tonumber(tid)
        if not cur or cur.id ~= id then   -- a tagged line without its header: a group of its own
          open_group(new_group(id, "?", nil, nil, nil))
        end
        flush_pending(cur)
        local it = { kind = "instr", text = itext, disp = replace_plain(itext, abbrev, "@") }
        cur.items[#cur.items + 1] = it
        cur.instrs[#cur.instrs + 1] = itext
        st.ninstr = st.ninstr + 1
      elseif t:match("^FK_SIZE%(") then
        if #pending > 0 then
          if not cur then open_group(new_group(-1, "(no op)", nil, nil, nil)) else flush_pending(cur) end
        end
        state = "post"
      elseif t:match("^//%s*%[%d+%]") then
        local id, rest = t:match("^//%s*%[(%d+)%]%s*(.-)$")
        local name, src, line = rest:match("^(.-)%s%s+(%S+):(%d+)$")
        local detail
        if not name then
          local abi = rest:match("^frame%s*%((.*)%)$")
          if abi then name, detail = "frame", abi else name = rest end
        end
        open_group(new_group(tonumber(id), name, detail, src, line and tonumber(line)))
      elseif t:match("^//%s*LLVM%-MCA%-") then
        pending[#pending + 1] = { kind = "mca", text = t, key = "M\0" .. t, disp = t }
      elseif t:match("^[%w_.$]+%b():$") or t:match("^[%w_.$]+:$") then
        local name = t:sub(1, -2)
        pending[#pending + 1] = { kind = "label", text = name, key = label_key(name, st.symbol),
                                  disp = replace_plain(name, abbrev, "@") .. ":" }
      elseif t ~= "" then
        pending[#pending + 1] = { kind = "raw", text = t, key = "R\0" .. t, disp = replace_plain(t, abbrev, "@") }
      end
    else   -- after the function: constant tables
      local t = trim(l)
      local sym = t:match("^FK_SYM%((.-)%):$")
      if sym then
        cur_const = nil
        if sym:sub(1, #kprefix) == kprefix then
          local name = sym:sub(#kprefix + 1)
          if not st.consts[name] then st.const_order[#st.const_order + 1] = name end
          cur_const = { name = name, parts = {} }
          st.consts[name] = cur_const
        end
      elseif cur_const and t:match("^%.[%w]+%s") then
        local dir, args = t:match("^(%.[%w]+)%s+(.*)$")
        local size = DIRECTIVE_SIZE[dir]
        if dir == ".word" then size = (st.isa == "aarch64") and 4 or 2 end
        if dir == ".p2align" or dir == ".balign" or dir == ".align" then
          cur_const = nil
        elseif size then
          for tok in (args .. ","):gmatch("([^,]*),") do
            local b = value_bytes(tok, size)
            if not b then
              fail(origin .. ": constant " .. cur_const.name .. ": cannot read value '" .. trim(tok) .. "'")
            end
            cur_const.parts[#cur_const.parts + 1] = b
          end
        else
          cur_const.parts[#cur_const.parts + 1] = t   -- unknown data directive: compared as text
        end
      elseif t == "" or not cur_const then
        cur_const = nil
      end
    end
  end
  if state == "pre" then fail(origin .. ": not a stamp (no function body " .. entry .. ")") end
  for _, name in ipairs(st.const_order) do
    st.consts[name] = table.concat(st.consts[name].parts)
  end
  return st
end

---------------------------------------------------------------------------------------------
-- Longest common subsequence (Myers' bisection, linear space). a, b: arrays of keys compared
-- with ==. Returns the matched index pairs { {i, j}, ... }, both increasing.

local function bisect(a, b, a0, n1, b0, n2)
  local max_d = math.floor((n1 + n2 + 1) / 2)
  local v_off, v_len = max_d, 2 * max_d
  local v1, v2 = {}, {}
  for i = 0, v_len - 1 do v1[i] = -1; v2[i] = -1 end
  v1[v_off + 1], v2[v_off + 1] = 0, 0
  local delta = n1 - n2
  local front = delta % 2 ~= 0
  local k1s, k1e, k2s, k2e = 0, 0, 0, 0
  for d = 0, max_d - 1 do
    for k1 = -d + k1s, d - k1e, 2 do
      local k1o = v_off + k1
      local x1
      if k1 == -d or (k1 ~= d and v1[k1o - 1] < v1[k1o + 1]) then x1 = v1[k1o + 1] else x1 = v1[k1o - 1] + 1 end
      local y1 = x1 - k1
      while x1 < n1 and y1 < n2 and a[a0 + x1 + 1] == b[b0 + y1 + 1] do x1, y1 = x1 + 1, y1 + 1 end
      v1[k1o] = x1
      if x1 > n1 then k1e = k1e + 2
      elseif y1 > n2 then k1s = k1s + 2
      elseif front then
        local k2o = v_off + delta - k1
        if k2o >= 0 and k2o < v_len and v2[k2o] ~= -1 and x1 >= n1 - v2[k2o] then return x1, y1 end
      end
    end
    for k2 = -d + k2s, d - k2e, 2 do
      local k2o = v_off + k2
      local x2
      if k2 == -d or (k2 ~= d and v2[k2o - 1] < v2[k2o + 1]) then x2 = v2[k2o + 1] else x2 = v2[k2o - 1] + 1 end
      local y2 = x2 - k2
      while x2 < n1 and y2 < n2 and a[a0 + n1 - x2] == b[b0 + n2 - y2] do x2, y2 = x2 + 1, y2 + 1 end
      v2[k2o] = x2
      if x2 > n1 then k2e = k2e + 2
      elseif y2 > n2 then k2s = k2s + 2
      elseif not front then
        local k1o = v_off + delta - k2
        if k1o >= 0 and k1o < v_len and v1[k1o] ~= -1 then
          local x1 = v1[k1o]
          if x1 >= n1 - x2 then return x1, v_off + x1 - k1o end
        end
      end
    end
  end
  return nil
end

local function lcs_range(a, b, a0, a1, b0, b1, out)
  while a0 < a1 and b0 < b1 and a[a0 + 1] == b[b0 + 1] do
    a0, b0 = a0 + 1, b0 + 1
    out[#out + 1] = { a0, b0 }
  end
  local s = 0
  while a1 - s > a0 and b1 - s > b0 and a[a1 - s] == b[b1 - s] do s = s + 1 end
  local e1, e2 = a1 - s, b1 - s
  if e1 > a0 and e2 > b0 then
    local x, y = bisect(a, b, a0, e1 - a0, b0, e2 - b0)
    if x and (x > 0 or y > 0) and (x < e1 - a0 or y < e2 - b0) then
      lcs_range(a, b, a0, a0 + x, b0, b0 + y, out)
      lcs_range(a, b, a0 + x, e1, b0 + y, e2, out)
    end
  end
  for i = 1, s do out[#out + 1] = { e1 + i, e2 + i } end
end

function M.lcs(a, b)
  -- keys -> small integers first: long strings compare by content, integers at once
  local code, ca, cb, n = {}, {}, {}, 0
  for i = 1, #a do
    local c = code[a[i]]
    if not c then n = n + 1; c = n; code[a[i]] = c end
    ca[i] = c
  end
  local inb = {}
  for i = 1, #b do
    local c = code[b[i]]
    if c then inb[c] = true end
    cb[i] = c or false
  end
  -- keys only one side has can never match: drop them, then map the indices back
  local fa, fb, ia, ib = {}, {}, {}, {}
  for i = 1, #ca do if inb[ca[i]] then fa[#fa + 1] = ca[i]; ia[#ia + 1] = i end end
  for i = 1, #cb do if cb[i] then fb[#fb + 1] = cb[i]; ib[#ib + 1] = i end end
  local out = {}
  lcs_range(fa, fb, 0, #fa, 0, #fb, out)
  for _, m in ipairs(out) do m[1], m[2] = ia[m[1]], ib[m[2]] end
  return out
end

-- Merge matches into one sequence of { l = i | nil, r = j | nil }: unmatched left items of a
-- gap first, then unmatched right items.
local function merge(na, nb, matches)
  local seq, i, j = {}, 1, 1
  local function gap(ti, tj)
    while i < ti do seq[#seq + 1] = { l = i }; i = i + 1 end
    while j < tj do seq[#seq + 1] = { r = j }; j = j + 1 end
  end
  for _, m in ipairs(matches) do
    gap(m[1], m[2])
    seq[#seq + 1] = { l = m[1], r = m[2] }
    i, j = m[1] + 1, m[2] + 1
  end
  gap(na + 1, nb + 1)
  return seq
end
M.merge = merge

---------------------------------------------------------------------------------------------
-- Aligner: groups of two stamps -> { {l = group|nil, r = group|nil}, ... } in both stamps' order.

local function op_key(g) return g.name .. "\0" .. (g.src or "") .. ":" .. (g.line and int(g.line) or "") end

function M.align_groups(gl, gr, opts)
  opts = opts or {}
  local ka, kb = {}, {}
  for i, g in ipairs(gl) do ka[i] = opts.strict_ids and (int(g.id) .. "\0" .. g.name) or op_key(g) end
  for i, g in ipairs(gr) do kb[i] = opts.strict_ids and (int(g.id) .. "\0" .. g.name) or op_key(g) end
  local out = {}
  for _, p in ipairs(merge(#gl, #gr, M.lcs(ka, kb))) do
    out[#out + 1] = { l = p.l and gl[p.l], r = p.r and gr[p.r] }
  end
  return out
end

-- Rows of one aligned group pair. Non-instruction items (labels, directives, markers) are
-- matched by key and get rows of their own; instructions between two such anchors are paired
-- line by line, the shorter side padded with blank cells.
local function item_rows(li, ri)
  local al, ar, kl, kr = {}, {}, {}, {}
  for i, it in ipairs(li) do if it.kind ~= "instr" then al[#al + 1] = i; kl[#kl + 1] = it.key end end
  for i, it in ipairs(ri) do if it.kind ~= "instr" then ar[#ar + 1] = i; kr[#kr + 1] = it.key end end
  local rows, pl, pr = {}, 1, 1
  local function gap(tl, tr)
    while pl < tl or pr < tr do
      local l = pl < tl and li[pl] or nil
      local r = pr < tr and ri[pr] or nil
      if l and l.kind ~= "instr" then rows[#rows + 1] = { l = l }; pl = pl + 1
      elseif r and r.kind ~= "instr" then rows[#rows + 1] = { r = r }; pr = pr + 1
      else
        rows[#rows + 1] = { l = l, r = r }
        if l then pl = pl + 1 end
        if r then pr = pr + 1 end
      end
    end
  end
  for _, m in ipairs((#kl > 0 and #kr > 0) and M.lcs(kl, kr) or {}) do
    local il, ir = al[m[1]], ar[m[2]]
    gap(il, ir)
    rows[#rows + 1] = { l = li[il], r = ri[ir] }
    pl, pr = il + 1, ir + 1
  end
  gap(#li + 1, #ri + 1)
  return rows
end

-- "[id] op  template:line" ("[idL|idR]" when the ids differ); `short` drops the folder.
local function group_title(g, other, short)
  local id = int(g.id)
  if other and other.id ~= g.id then id = int(g.id) .. "|" .. int(other.id) end
  local s = "[" .. id .. "] " .. g.name
  if g.src then
    s = s .. "  " .. (short and basename(g.src) or g.src) .. ":" .. int(g.line)
    if other and other.line and other.line ~= g.line then s = s .. "|" .. int(other.line) end   -- --strict-ids
  end
  return s
end
M.group_title = group_title

-- Constant tables of two stamps, by table name.
function M.compare_consts(cl, cr)
  local names, seen = {}, {}
  for _, t in ipairs({ cl, cr }) do
    for _, k in ipairs(C.sorted_keys(t)) do
      if not seen[k] then seen[k] = true; names[#names + 1] = k end
    end
  end
  table.sort(names)
  local res = {}
  for _, name in ipairs(names) do
    local a, b = cl[name], cr[name]
    local e = { name = name }
    if a and b then
      if a == b then
        e.status, e.bytes = "equal", #a
      else
        local off = math.min(#a, #b)
        for i = 1, math.min(#a, #b) do
          if a:byte(i) ~= b:byte(i) then off = i - 1; break end
        end
        e.status, e.offset, e.lbytes, e.rbytes = "differ", off, #a, #b
      end
    elseif a then
      e.status, e.bytes = "left", #a
    else
      e.status, e.bytes = "right", #b
    end
    res[#res + 1] = e
  end
  return res
end

local function const_line(e, lname, rname)
  if e.status == "equal" then return "equal (" .. int(e.bytes) .. " bytes)"
  elseif e.status == "differ" then
    local s = "differ at byte offset " .. int(e.offset)
    if e.lbytes ~= e.rbytes then s = s .. " (" .. int(e.lbytes) .. " vs " .. int(e.rbytes) .. " bytes)" end
    return s
  elseif e.status == "left" then return "only in " .. lname .. " (" .. int(e.bytes) .. " bytes)"
  else return "only in " .. rname .. " (" .. int(e.bytes) .. " bytes)" end
end

-- The side-by-side model of two stamps: rows (each { l = item, r = item, mid, mark, side,
-- first }), per-side names, statistics and constant tables.
function M.side_by_side(sl, sr, opts)
  opts = opts or {}
  local model = { left = sl, right = sr, rows = {},
                  lname = opts.lname or sl.isa, rname = opts.rname or sr.isa,
                  stats = { aligned = 0, only_l = 0, only_r = 0, id_differ = 0,
                            instr_l = sl.ninstr, instr_r = sr.ninstr } }
  if model.lname == model.rname then   -- two variants of one ISA
    model.lname, model.rname = sl.isa .. "_" .. sl.variant, sr.isa .. "_" .. sr.variant
    if model.lname == model.rname then model.lname, model.rname = "left", "right" end
  end
  local st = model.stats
  for _, p in ipairs(M.align_groups(sl.groups, sr.groups, opts)) do
    local rows
    local side = (p.l and p.r) and "both" or (p.l and "left" or "right")
    if side == "both" then
      st.aligned = st.aligned + 1
      if p.l.id ~= p.r.id then st.id_differ = st.id_differ + 1 end
      rows = item_rows(p.l.items, p.r.items)
    elseif side == "left" then
      st.only_l = st.only_l + 1
      rows = item_rows(p.l.items, {})
    else
      st.only_r = st.only_r + 1
      rows = item_rows({}, p.r.items)
    end
    if #rows == 0 then rows[1] = {} end
    if side == "left" then rows[1].r = { kind = "absent", text = ABSENT } end
    if side == "right" then rows[1].l = { kind = "absent", text = ABSENT } end
    local g = p.l or p.r
    rows[1].mid = group_title(g, p.l and p.r, true)
    rows[1].tail = g.src and rows[1].mid:match("(  [^ ]+)$") or nil
    rows[1].title = group_title(g, p.l and p.r, false)
    rows[1].first = true
    if #rows > 1 then
      local nl, nr = p.l and #p.l.instrs, p.r and #p.r.instrs
      if nl and nr then rows[2].mid = int(nl) .. " : " .. int(nr) .. " instrs"
      else rows[2].mid = int(nl or nr) .. " instrs" end
    end
    for i, row in ipairs(rows) do
      row.side, row.group_l, row.group_r = side, p.l, p.r
      row.idd = p.l and p.r and p.l.id ~= p.r.id
      if #rows == 1 then row.mark = "["
      elseif i == 1 then row.mark = "/"
      elseif i == #rows then row.mark = "\\"
      else row.mark = "|" end
      model.rows[#model.rows + 1] = row
    end
  end
  model.consts = M.compare_consts(sl.consts, sr.consts)
  st.c_equal, st.c_differ, st.c_left, st.c_right = 0, 0, 0, 0
  for _, e in ipairs(model.consts) do
    if e.status == "equal" then st.c_equal = st.c_equal + 1
    elseif e.status == "differ" then st.c_differ = st.c_differ + 1
    elseif e.status == "left" then st.c_left = st.c_left + 1
    else st.c_right = st.c_right + 1 end
  end
  return model
end

-- One line (<= 160 columns for any real stamp pair): left and right are the two sides as the
-- header names them.
function M.summary_line(model)
  local s = model.stats
  return string.format("summary: op groups %d aligned, %d only left, %d only right; instrs left %d, right %d;"
    .. " const tables %d equal, %d differ, %d only left, %d only right",
    s.aligned, s.only_l, s.only_r, s.instr_l, s.instr_r, s.c_equal, s.c_differ, s.c_left, s.c_right)
end

---------------------------------------------------------------------------------------------
-- Renderers.

local ANSI = { red = "\27[31m", green = "\27[32m", yellow = "\27[33m", blue = "\27[34m",
               magenta = "\27[35m", cyan = "\27[36m", bold = "\27[1m", dim = "\27[2m" }
local RESET = "\27[0m"

local function painter(on)
  return function(s, col)
    if not on or not col or s == "" then return s end
    return ANSI[col] .. s .. RESET
  end
end

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
M.fit = fit

local function clip(s) return #s > WIDTH and s:sub(1, WIDTH - 3) .. "..." or s end

-- Display text of an item (the parser caches it: its stamp's symbol abbreviated to @).
local function item_text(it, sym)
  if not it then return "" end
  if it.disp then return it.disp end
  local s = it.text
  if it.kind ~= "absent" and sym then s = replace_plain(s, sym .. "_", "@") end
  if it.kind == "label" then s = s .. ":" end
  return s
end
M.item_text = item_text

local function cell_colour(it, side)
  if not it then return nil end
  if it.kind == "absent" then return "dim" end
  if it.kind == "label" then return "cyan" end
  if it.kind ~= "instr" then return "dim" end
  if side == "left" then return "red" end
  if side == "right" then return "green" end
  return nil
end

function M.render_text(model, opts)
  opts = opts or {}
  local paint = painter(opts.color)
  local sl, sr = model.left, model.right
  local out = {}
  local function put(s, col) out[#out + 1] = paint(clip(s), col) end
  local title = opts.title or ((sl.leaf or "?") .. " " .. (sl.form or "?"))
  local lhead, rhead = sl.isa .. " " .. sl.variant, sr.isa .. " " .. sr.variant
  put("==== " .. title .. ": " .. lhead .. " vs " .. rhead .. " ====", "bold")
  put("left:  " .. lhead .. "  " .. sl.symbol .. "  (" .. sl.origin .. ")")
  put("right: " .. rhead .. "  " .. sr.symbol .. "  (" .. sr.origin .. ")")
  put("@ = each side's own symbol followed by _; [a|b] = an op whose id differs between the sides")
  -- column widths
  local nl, nm, nr = #lhead, 10, #rhead
  for _, row in ipairs(model.rows) do
    nl = math.max(nl, #item_text(row.l, sl.symbol))
    nr = math.max(nr, #item_text(row.r, sr.symbol))
    if row.mid then nm = math.max(nm, #row.mid + 2) end
  end
  local mw = math.max(20, math.min(nm, 56))
  local avail = WIDTH - 6 - mw
  local lw = math.min(nl, math.max(math.floor(avail / 2), avail - nr))
  local rw = avail - lw
  put(fit(lhead, lw) .. " | " .. fit("op group", mw) .. " | " .. rhead)
  local rule = string.rep("-", lw + 1) .. "+" .. string.rep("-", mw + 2) .. "+"
    .. string.rep("-", math.min(rw, nr) + 1)
  put(rule)
  for _, row in ipairs(model.rows) do
    local lt = fit(item_text(row.l, sl.symbol), lw)
    local mt = row.mark .. " " .. (row.mid or "")
    if #mt > mw and row.first and row.tail then   -- keep "template:line" whole
      mt = fit(mt:sub(1, #mt - #row.tail), mw - #row.tail) .. row.tail
    end
    mt = fit(mt, mw)
    local rt = item_text(row.r, sr.symbol)
    if #rt > rw then rt = fit(rt, rw) end
    local mcol = row.first and (row.idd and "magenta" or "yellow") or "dim"
    if row.first and row.side ~= "both" then mcol = row.side == "left" and "red" or "green" end
    out[#out + 1] = paint(lt, cell_colour(row.l, row.side)) .. " | " .. paint(mt, mcol)
      .. (rt == "" and " |" or (" | " .. paint(rt, cell_colour(row.r, row.side))))
  end
  put(rule)
  if #model.consts > 0 then
    put("constant tables (" .. model.lname .. " vs " .. model.rname .. "):")
    local w = 8
    for _, e in ipairs(model.consts) do w = math.max(w, #e.name + 2) end
    for _, e in ipairs(model.consts) do
      local col = e.status == "equal" and "green" or (e.status == "differ" and "red" or "yellow")
      out[#out + 1] = "  " .. fit("k_" .. e.name, math.min(w, 60)) .. " "
        .. paint(clip(const_line(e, model.lname, model.rname)), col)
    end
  else
    put("constant tables: none on either side")
  end
  put(M.summary_line(model), "bold")
  put("")
  return table.concat(out, "\n") .. "\n"
end

local CSS = [[
body { font-family: sans-serif; margin: 1.5em; color: #222; }
h1 { font-size: 1.3em; } h2 { font-size: 1.1em; margin-top: 2em; }
table { border-collapse: collapse; font-family: monospace; font-size: 12px; }
td, th { padding: 0 0.6em; white-space: pre; vertical-align: top; text-align: left; }
th { background: #eee; border-bottom: 1px solid #999; }
tbody.grp { border-top: 1px solid #bbb; }
td.mid { background: #fafae8; color: #664; border-left: 1px solid #ccc; border-right: 1px solid #ccc; }
td.idd { color: #a0a; }
tbody.left td.l, tbody.left td.mid { background: #fde8e8; }
tbody.right td.r, tbody.right td.mid { background: #e6f6e6; }
td.absent { color: #999; font-style: italic; }
td.label { color: #067; } td.raw { color: #888; }
tr.del td { background: #fde8e8; } tr.add td { background: #e6f6e6; }
tr.hunk td { background: #e8eefa; color: #335; } tr.skip td { color: #888; font-style: italic; }
tr.file td { font-weight: bold; } tr.const td { color: #a60; }
.equal { color: #070; } .differ { color: #b00; font-weight: bold; } .only { color: #a60; }
p.summary { font-weight: bold; }
]]

local function html_page(title, body)
  return "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>"
    .. html_escape(title) .. "</title>\n<style>\n" .. CSS .. "</style>\n</head>\n<body>\n<h1>"
    .. html_escape(title) .. "</h1>\n" .. body .. "</body>\n</html>\n"
end
M.html_page = html_page

local function td(cls, text) return "<td class=\"" .. cls .. "\">" .. html_escape(text) .. "</td>" end

function M.render_html_section(model, opts)
  opts = opts or {}
  local sl, sr = model.left, model.right
  local h = {}
  local title = opts.title or ((sl.leaf or "?") .. " " .. (sl.form or "?"))
  local lhead, rhead = sl.isa .. " " .. sl.variant, sr.isa .. " " .. sr.variant
  h[#h + 1] = "<h2>" .. html_escape(title .. ": " .. lhead .. " vs " .. rhead) .. "</h2>\n"
  h[#h + 1] = "<p>left: <code>" .. html_escape(sl.symbol) .. "</code>, right: <code>" .. html_escape(sr.symbol)
    .. "</code>; @ = each side's own symbol followed by _; [a|b] = op ids that differ between the sides</p>\n"
  h[#h + 1] = "<table class=\"sbs\">\n<thead><tr><th>" .. html_escape(lhead)
    .. "</th><th>op group</th><th>" .. html_escape(rhead) .. "</th></tr></thead>\n"
  local function cls(it, side)
    if not it then return side end
    if it.kind == "absent" then return side .. " absent" end
    if it.kind == "label" then return side .. " label" end
    if it.kind ~= "instr" then return side .. " raw" end
    return side
  end
  for _, row in ipairs(model.rows) do
    if row.first then
      if _ ~= 1 then h[#h + 1] = "</tbody>\n" end
      h[#h + 1] = "<tbody class=\"grp " .. row.side .. "\">\n"
    end
    h[#h + 1] = "<tr>" .. td(cls(row.l, "l"), item_text(row.l, sl.symbol))
      .. td(row.idd and row.first and "mid idd" or "mid", row.title or row.mid or "")
      .. td(cls(row.r, "r"), item_text(row.r, sr.symbol)) .. "</tr>\n"
  end
  if #model.rows > 0 then h[#h + 1] = "</tbody>\n" end
  h[#h + 1] = "</table>\n"
  if #model.consts > 0 then
    h[#h + 1] = "<table class=\"consts\">\n<thead><tr><th>constant table</th><th>"
      .. html_escape(model.lname .. " vs " .. model.rname) .. "</th></tr></thead>\n<tbody>\n"
    for _, e in ipairs(model.consts) do
      local c = e.status == "equal" and "equal" or (e.status == "differ" and "differ" or "only")
      h[#h + 1] = "<tr>" .. td("", "k_" .. e.name) .. td(c, const_line(e, model.lname, model.rname)) .. "</tr>\n"
    end
    h[#h + 1] = "</tbody>\n</table>\n"
  else
    h[#h + 1] = "<p>constant tables: none on either side</p>\n"
  end
  h[#h + 1] = "<p class=\"summary\">" .. html_escape(M.summary_line(model)) .. "</p>\n"
  return table.concat(h)
end

---------------------------------------------------------------------------------------------
-- Between revisions: group diff of two versions of one stamp.

local function group_content(g, sym)
  local parts = { g.name }
  for _, it in ipairs(g.items) do parts[#parts + 1] = item_text(it, sym) end
  return table.concat(parts, "\n")
end

-- Weighted pairing of the groups of one gap: same op required; equal id and equal line preferred.
local function pair_gap(ga, gb)
  local n, m = #ga, #gb
  local pairs_out = {}
  if n == 0 or m == 0 then return pairs_out end
  if n * m > 250000 then
    local ka, kb = {}, {}
    for i, g in ipairs(ga) do ka[i] = g.name end
    for i, g in ipairs(gb) do kb[i] = g.name end
    return M.lcs(ka, kb)
  end
  local S = {}           -- S[i * (m + 1) + j]
  local W = m + 1
  for j = 0, m do S[j] = 0 end
  for i = 1, n do
    S[i * W] = 0
    local a = ga[i]
    for j = 1, m do
      local best = S[(i - 1) * W + j]
      local left = S[i * W + j - 1]
      if left > best then best = left end
      local b = gb[j]
      if a.name == b.name then
        local w = 1 + (a.id == b.id and 1 or 0) + (a.line == b.line and 1 or 0)
        local diag = S[(i - 1) * W + j - 1] + w
        if diag > best then best = diag end
      end
      S[i * W + j] = best
    end
  end
  local i, j, rev = n, m, {}
  while i > 0 and j > 0 do
    local a, b = ga[i], gb[j]
    local cur = S[i * W + j]
    if cur == S[(i - 1) * W + j] then i = i - 1
    elseif cur == S[i * W + j - 1] then j = j - 1
    else
      if a.name ~= b.name then error("internal: gap pairing") end
      rev[#rev + 1] = { i, j }
      i, j = i - 1, j - 1
    end
  end
  for k = #rev, 1, -1 do pairs_out[#pairs_out + 1] = rev[k] end
  return pairs_out
end

-- Line-level diff of two groups' items -> { {op = " "|"-"|"+", text, kind}, ... }.
local function item_list(g, sym)
  local t = {}
  for i, it in ipairs(g.items) do t[i] = { text = item_text(it, sym), kind = it.kind } end
  return t
end

local function texts(list)
  local t = {}
  for i, x in ipairs(list) do t[i] = x.text end
  return t
end

local function line_diff(la, lb)
  local lines = {}
  for _, p in ipairs(merge(#la, #lb, M.lcs(texts(la), texts(lb)))) do
    if p.l and p.r then lines[#lines + 1] = { op = " ", text = la[p.l].text, kind = la[p.l].kind }
    elseif p.l then lines[#lines + 1] = { op = "-", text = la[p.l].text, kind = la[p.l].kind }
    else lines[#lines + 1] = { op = "+", text = lb[p.r].text, kind = lb[p.r].kind } end
  end
  return lines
end

-- The diff model of two versions of a stamp (either may be nil: added or removed). Instruction
-- counts (+/-) count instructions only; labels and directives are shown but not counted.
function M.diff_stamps(a, b)
  local d = { a = a, b = b, entries = {},
              stats = { changed = 0, added = 0, removed = 0, same = 0, renumbered = 0, plus = 0, minus = 0 } }
  local st = d.stats
  if not a or not b then
    d.kind = a and "removed" or "added"
    return d
  end
  local ka, kb = {}, {}
  for i, g in ipairs(a.groups) do ka[i] = group_content(g, a.symbol) end
  for i, g in ipairs(b.groups) do kb[i] = group_content(g, b.symbol) end
  -- groups equal in content first, then the groups between two of those paired by op
  local matches, pi, pj = {}, 0, 0
  local function fill(ti, tj)
    local ga, gb = {}, {}
    for i = pi + 1, ti - 1 do ga[#ga + 1] = a.groups[i] end
    for j = pj + 1, tj - 1 do gb[#gb + 1] = b.groups[j] end
    for _, p in ipairs(pair_gap(ga, gb)) do matches[#matches + 1] = { pi + p[1], pj + p[2] } end
  end
  for _, m in ipairs(M.lcs(ka, kb)) do
    fill(m[1], m[2])
    matches[#matches + 1] = { m[1], m[2] }
    pi, pj = m[1], m[2]
  end
  fill(#a.groups + 1, #b.groups + 1)
  for _, p in ipairs(merge(#a.groups, #b.groups, matches)) do
    local ga, gb = p.l and a.groups[p.l], p.r and b.groups[p.r]
    local e = { ga = ga, gb = gb }
    if ga and gb then
      if ka[p.l] == kb[p.r] then
        e.kind = "same"
        st.same = st.same + 1
        if ga.id ~= gb.id or ga.line ~= gb.line then st.renumbered = st.renumbered + 1; e.renumbered = true end
      else
        e.kind = "changed"
        st.changed = st.changed + 1
        e.lines = line_diff(item_list(ga, a.symbol), item_list(gb, b.symbol))
      end
    elseif ga then
      e.kind = "removed"
      st.removed = st.removed + 1
      e.lines = line_diff(item_list(ga, a.symbol), {})
    else
      e.kind = "added"
      st.added = st.added + 1
      e.lines = line_diff({}, item_list(gb, b.symbol))
    end
    for _, l in ipairs(e.lines or {}) do
      if l.kind == "instr" and l.op == "-" then st.minus = st.minus + 1 end
      if l.kind == "instr" and l.op == "+" then st.plus = st.plus + 1 end
    end
    d.entries[#d.entries + 1] = e
  end
  d.consts = M.compare_consts(a.consts, b.consts)
  d.consts_changed = 0
  for _, c in ipairs(d.consts) do if c.status ~= "equal" then d.consts_changed = d.consts_changed + 1 end end
  d.kind = (st.changed + st.added + st.removed + d.consts_changed == 0) and "same" or "changed"
  return d
end

local function hunk_title(e)
  local g, o = e.gb or e.ga, e.gb and e.ga
  local s = "[" .. int(g.id) .. "] " .. g.name
  if g.src then s = s .. " " .. g.src .. ":" .. int(g.line) end
  if o and (o.id ~= g.id or o.line ~= g.line) then
    s = s .. " (was [" .. int(o.id) .. "]" .. (o.line and (" :" .. int(o.line)) or "") .. ")"
  end
  if e.kind == "added" then s = s .. " (added)" elseif e.kind == "removed" then s = s .. " (removed)" end
  return s
end

function M.diff_summary(d)
  local s = d.stats
  local sym = (d.b or d.a).symbol
  if d.kind == "added" then return "summary " .. sym .. ": stamp added (" .. int(#d.b.groups) .. " op groups, "
    .. int(d.b.ninstr) .. " instructions)" end
  if d.kind == "removed" then return "summary " .. sym .. ": stamp removed (" .. int(#d.a.groups) .. " op groups, "
    .. int(d.a.ninstr) .. " instructions)" end
  if d.kind == "same" then
    return "summary " .. sym .. ": no changes (" .. int(#d.b.groups) .. " op groups, " .. int(d.b.ninstr)
      .. " instructions" .. (s.renumbered > 0 and (", " .. int(s.renumbered) .. " renumbered") or "") .. ")"
  end
  return string.format("summary %s: op groups changed %d (added %d, removed %d), unchanged %d; "
    .. "instructions +%d -%d; constant tables changed %d", sym, s.changed + s.added + s.removed,
    s.added, s.removed, s.same, s.plus, s.minus, d.consts_changed)
end

local function const_diff_line(c)
  if c.status == "differ" then
    local s = "differ at byte offset " .. int(c.offset)
    if c.lbytes ~= c.rbytes then s = s .. " (" .. int(c.lbytes) .. " -> " .. int(c.rbytes) .. " bytes)" end
    return s
  elseif c.status == "left" then return "removed (" .. int(c.bytes) .. " bytes)"
  elseif c.status == "right" then return "added (" .. int(c.bytes) .. " bytes)" end
  return "equal (" .. int(c.bytes) .. " bytes)"
end

local function skip_text(n, renum)
  return "    ... " .. int(n) .. " op group" .. (n == 1 and "" or "s") .. " unchanged"
    .. (renum > 0 and (" (" .. int(renum) .. " renumbered)") or "")
end

-- Walk the entries, calling emit(kind, text) with kind in hunk, del, add, ctx, skip.
local function walk_diff(d, emit)
  local run, renum = 0, 0
  local function flush()
    if run > 0 then emit("skip", skip_text(run, renum)) end
    run, renum = 0, 0
  end
  for _, e in ipairs(d.entries) do
    if e.kind == "same" then
      run = run + 1
      if e.renumbered then renum = renum + 1 end
    else
      flush()
      emit("hunk", "@@ " .. hunk_title(e) .. " @@")
      for _, l in ipairs(e.lines) do
        emit(l.op == "-" and "del" or (l.op == "+" and "add" or "ctx"), l.op .. "    " .. l.text)
      end
    end
  end
  flush()
  for _, c in ipairs(d.consts or {}) do
    if c.status ~= "equal" then emit("const", "constant table k_" .. c.name .. ": " .. const_diff_line(c)) end
  end
end

function M.render_diff_text(d, opts)
  opts = opts or {}
  local paint = painter(opts.color)
  local out = {}
  local function put(s, col) out[#out + 1] = paint(clip(s), col) end
  local sym = (d.b or d.a).symbol
  local ra, rb = opts.rev_a or "A", opts.rev_b or "B"
  if d.kind == "added" then
    put("=== " .. sym .. ": added in " .. rb, "bold")
  elseif d.kind == "removed" then
    put("=== " .. sym .. ": removed in " .. rb, "bold")
  elseif d.kind == "same" then
    put("=== " .. sym .. ": no changes", "bold")
  else
    put("=== " .. sym .. " ===", "bold")
    put("--- " .. ra .. ":" .. (opts.file or sym), "red")
    put("+++ " .. rb .. ":" .. (opts.file or sym), "green")
    walk_diff(d, function(kind, text)
      local col = ({ hunk = "cyan", del = "red", add = "green", skip = "dim", const = "yellow" })[kind]
      put(text, col)
    end)
  end
  put(M.diff_summary(d), "bold")
  return table.concat(out, "\n") .. "\n"
end

function M.render_diff_html(d, opts)
  opts = opts or {}
  local sym = (d.b or d.a).symbol
  local what = ({ added = "added in " .. (opts.rev_b or "B"), removed = "removed in " .. (opts.rev_b or "B"),
                  same = "no changes", changed = "changed" })[d.kind]
  local h = { "<h2>" .. html_escape(sym .. ": " .. what) .. "</h2>\n" }
  if d.kind == "changed" then
    h[#h + 1] = "<table class=\"diff\">\n<tbody>\n"
    local file = opts.file or sym
    h[#h + 1] = "<tr class=\"file\"><td>" .. html_escape("--- " .. (opts.rev_a or "A") .. ":" .. file)
      .. "</td></tr>\n<tr class=\"file\"><td>" .. html_escape("+++ " .. (opts.rev_b or "B") .. ":" .. file)
      .. "</td></tr>\n"
    walk_diff(d, function(kind, text)
      h[#h + 1] = "<tr class=\"" .. kind .. "\"><td>" .. html_escape(text) .. "</td></tr>\n"
    end)
    h[#h + 1] = "</tbody>\n</table>\n"
  end
  h[#h + 1] = "<p class=\"summary\">" .. html_escape(M.diff_summary(d)) .. "</p>\n"
  return table.concat(h)
end

---------------------------------------------------------------------------------------------
-- MANIFEST and stamp sources.

function M.parse_manifest(text)
  local list = {}
  for _, line in ipairs(split_lines(text)) do
    if not line:match("^#") and line:match("%S") then
      local symbol, file, tier, template = line:match("^(%S+)%s+(%S+)%s+(%S+)%s+(%S+)")
      if symbol then
        local leaf = template:match("([^/]+)%.lua$")
        local base, isa, variant = symbol:match("^(.-)__(x86_64)_(.+)_" .. tier .. "$")
        if not base then base, isa, variant = symbol:match("^(.-)__(aarch64)_(.+)_" .. tier .. "$") end
        local form = base and leaf and base:match("^fk_" .. leaf:gsub("%p", "%%%0") .. "_(.+)$")
        if form then
          list[#list + 1] = { symbol = symbol, file = file, tier = tier, template = template, leaf = leaf,
                              form = form, isa = isa, variant = variant }
        end
      end
    end
  end
  return list
end

local function worktree_source(root, gendir, label)
  gendir = gendir or (root .. "/generated")
  return {
    label = label or "WORKTREE",
    read = function(rel)
      local s, err = C.read_file(gendir .. "/" .. rel)
      if not s then
        local where = label and (label .. " (regenerated): generated/" .. rel) or (gendir .. "/" .. rel)
        fail("cannot read " .. where .. " (" .. tostring(err):gsub("^[^:]*: ", "") .. ")")
      end
      return s
    end,
  }
end

local function make_tmpdir()
  return C.make_tmpdir() or fail("cannot create a temporary directory (mktemp -d)")
end

local function git_source(root, rev, tmpdir)
  local tmpfile = tmpdir .. "/show"
  return {
    label = rev,
    read = function(rel)
      -- "REV:./path" is relative to --root, which need not be the repository's top
      local cmd = "git -C " .. shell_quote(root) .. " show " .. shell_quote(rev .. ":./generated/" .. rel)
        .. " > " .. shell_quote(tmpfile) .. " 2>/dev/null"
      if not execute_ok(cmd) then fail("revision " .. rev .. " has no generated/" .. rel) end
      return C.read_file(tmpfile) or fail("cannot read " .. tmpfile)
    end,
  }
end

local function interpreter()
  local env = os.getenv("FK_LUA")
  if env and env ~= "" then return env end
  if arg then
    local lo = 0
    while arg[lo - 1] do lo = lo - 1 end
    if lo < 0 and arg[lo] then return arg[lo] end
  end
  return "lua5.4"
end

-- Stamp revisions' own trees with their own generators, all at once (one process each, in
-- parallel). `jobs`: { {rev =, label =}, ... }; returns one source per job.
local function regen_sources(root, jobs, tmpdir)
  local lua = interpreter()
  local parts, outs = {}, {}
  for k, job in ipairs(jobs) do
    local out = tmpdir .. "/regen-" .. job.label:gsub("[^%w]", "_")
    local log = out .. ".log"
    local cmd
    if job.rev == "WORKTREE" then
      cmd = "mkdir -p " .. shell_quote(out .. "/generated") .. " && " .. shell_quote(lua) .. " "
        .. shell_quote(root .. "/gen/fkgen.lua") .. " --root " .. shell_quote(root) .. " --out "
        .. shell_quote(out .. "/generated")
    else
      -- the tree under --root at that revision (archived from the top: git archive run in a
      -- subfolder refuses a tree)
      cmd = "mkdir -p " .. shell_quote(out) .. " && top=$(git -C " .. shell_quote(root)
        .. " rev-parse --show-toplevel) && prefix=$(git -C " .. shell_quote(root)
        .. " rev-parse --show-prefix) && git -C \"$top\" archive " .. shell_quote(job.rev) .. ":\"$prefix\""
        .. " | tar -x -C " .. shell_quote(out) .. " && rm -rf "
        .. shell_quote(out .. "/generated") .. " && " .. shell_quote(lua) .. " "
        .. shell_quote(out .. "/gen/fkgen.lua") .. " --root " .. shell_quote(out)
    end
    parts[#parts + 1] = "( " .. cmd .. " ) > " .. shell_quote(log) .. " 2>&1 & p" .. int(k) .. "=$!"
    outs[k] = { out = out, log = log }
  end
  local waits = {}
  for k = 1, #jobs do
    waits[#waits + 1] = "wait $p" .. int(k) .. " || echo " .. int(k) .. " >> " .. shell_quote(tmpdir .. "/regen.failed")
  end
  os.execute(table.concat(parts, "; ") .. "; " .. table.concat(waits, "; "))
  local failed = C.read_file(tmpdir .. "/regen.failed") or ""
  local sources = {}
  for k, job in ipairs(jobs) do
    if failed:find("%f[%d]" .. int(k) .. "%f[^%d]") then
      local msg = (C.read_file(outs[k].log) or ""):match("[^\n]+") or "no output"
      fail("regenerating " .. job.rev .. " failed: " .. msg)
    end
    sources[k] = worktree_source(outs[k].out, outs[k].out .. "/generated", job.rev)
  end
  return sources
end

local function git_rev(root, rev)
  local p = io.popen("git -C " .. shell_quote(root) .. " rev-parse --verify --quiet --short "
    .. shell_quote(rev .. "^{commit}") .. " 2>/dev/null")
  local h = p and p:read("*l")
  if p then p:close() end
  if not h or not h:match("^%x+$") then fail("unknown git revision '" .. rev .. "'") end
  return h
end

---------------------------------------------------------------------------------------------
-- Command line.

M.USAGE = [[
usage:
  asmdiff.lua [--root DIR] LEAF [--form FORM] [--variant PAIR] [--strict-ids] [--html FILE] [--color|--no-color]
      x86_64 and AArch64 stamps of each form of LEAF side by side, aligned on template op groups.
      PAIR: exact (default: x86_64 avx512 vs aarch64 neon), avx2 (avx2 vs neon), fast
      (avx512bf16 vs bf16), or ISA_VARIANT:ISA_VARIANT (e.g. x86_64_avx2:x86_64_avx512).
  asmdiff.lua [--root DIR] --rev A..B LEAF [--form FORM] [--isa ISA] [--variant V] [--regen] [--html FILE]
      changes of each stamp of LEAF from git revision A to B (B may be WORKTREE), op group by op group.
      Stamps are read with git show REV:generated/...; --regen stamps each revision's own tree instead.
      V: a variant (avx512, neon, ...), a tier (exact, fast) or ISA_VARIANT.
  asmdiff.lua --files LEFT.S RIGHT.S [--strict-ids] [--html FILE]   two stamp files side by side
  asmdiff.lua [--root DIR] --list                                     leaves, forms and their stamps
  asmdiff.lua --help
  --strict-ids   align on (op id, op) instead of (op, template line)
  --html FILE    write a self-contained HTML page instead of text (replaced only on success)
  --color, --no-color   ANSI colour (default: only when stdout is a terminal and NO_COLOR is unset)
exit status: 0 done, 2 bad input (one line on stderr, nothing written)
]]

local function parse_args(argv)
  local o = { positional = {} }
  local i = 1
  local function value(name)
    local v = argv[i + 1]
    if v == nil or (v:sub(1, 2) == "--" and v ~= "--") then fail("option " .. name .. " needs a value") end
    i = i + 2
    return v
  end
  while argv[i] ~= nil do
    local a = argv[i]
    if a == "--root" then o.root = value(a)
    elseif a == "--form" then o.form = value(a)
    elseif a == "--variant" then o.variant = value(a)
    elseif a == "--isa" then o.isa = value(a)
    elseif a == "--rev" then o.rev = value(a)
    elseif a == "--html" then o.html = value(a)
    elseif a == "--files" then
      o.files = { argv[i + 1], argv[i + 2] }
      if not o.files[1] or not o.files[2] then fail("option --files needs two files: --files LEFT.S RIGHT.S") end
      i = i + 3
    elseif a == "--regen" then o.regen = true; i = i + 1
    elseif a == "--strict-ids" then o.strict_ids = true; i = i + 1
    elseif a == "--color" or a == "--colour" then o.color = true; i = i + 1
    elseif a == "--no-color" or a == "--no-colour" then o.color = false; i = i + 1
    elseif a == "--list" then o.list = true; i = i + 1
    elseif a == "--help" or a == "-h" then o.help = true; i = i + 1
    elseif a:sub(1, 1) == "-" then fail("unknown option '" .. a .. "' (see --help)")
    else o.positional[#o.positional + 1] = a; i = i + 1 end
  end
  return o
end

local function default_root()
  if TOOLS_DIR == "." then return ".." end
  return TOOLS_DIR:match("^(.*)/[^/]*$") or "."
end

local function stdout_is_tty()
  if os.getenv("NO_COLOR") and os.getenv("NO_COLOR") ~= "" then return false end
  if os.getenv("TERM") == "dumb" then return false end
  return execute_ok("test -t 1")
end

local function leaf_index(manifest)
  local leaves, by_leaf = {}, {}
  for _, e in ipairs(manifest) do
    local L = by_leaf[e.leaf]
    if not L then
      L = { name = e.leaf, template = e.template, forms = {}, by_form = {} }
      by_leaf[e.leaf] = L
      leaves[#leaves + 1] = L
    end
    local F = L.by_form[e.form]
    if not F then
      F = { name = e.form, stamps = {} }
      L.by_form[e.form] = F
      L.forms[#L.forms + 1] = F
    end
    F.stamps[#F.stamps + 1] = e
  end
  return leaves, by_leaf
end

local function names_of(list)
  local t = {}
  for _, x in ipairs(list) do t[#t + 1] = x.name end
  return table.concat(t, ", ")
end

local function read_manifest(src)
  return M.parse_manifest(src.read("MANIFEST"))
end

local function resolve_pairing(v, manifest)
  local known = {}
  for _, e in ipairs(manifest) do known[e.isa .. "_" .. e.variant] = true end
  local function side(s)
    local isa, variant = s:match("^(x86_64)_(.+)$")
    if not isa then isa, variant = s:match("^(aarch64)_(.+)$") end
    if not isa or not known[s] then fail("unknown variant '" .. s .. "' in --variant (e.g. x86_64_avx512)") end
    return { isa = isa, variant = variant }
  end
  if v == nil or v == "exact" or v == "avx512" or v == "neon" then
    return { isa = "x86_64", variant = "avx512" }, { isa = "aarch64", variant = "neon" }
  elseif v == "avx2" then
    return { isa = "x86_64", variant = "avx2" }, { isa = "aarch64", variant = "neon" }
  elseif v == "fast" or v == "bf16" or v == "avx512bf16" then
    return { isa = "x86_64", variant = "avx512bf16" }, { isa = "aarch64", variant = "bf16" }
  elseif v:find(":", 1, true) then
    local a, b = v:match("^([^:]+):([^:]+)$")
    if not a then fail("bad --variant '" .. v .. "' (expected ISA_VARIANT:ISA_VARIANT)") end
    return side(a), side(b)
  end
  fail("unknown --variant '" .. v .. "' (exact, avx2, fast or ISA_VARIANT:ISA_VARIANT)")
end

local function find_stamp(F, want)
  for _, e in ipairs(F.stamps) do
    if e.isa == want.isa and e.variant == want.variant then return e end
  end
  return nil
end

local function cmd_list(o, out)
  local src = worktree_source(o.root)
  local leaves = leaf_index(read_manifest(src))
  out[#out + 1] = "leaf / form            stamps (isa_variant by tier)\n"
  for _, L in ipairs(leaves) do
    out[#out + 1] = L.name .. "  (" .. L.template .. ")\n"
    for _, F in ipairs(L.forms) do
      local by_tier, tiers = {}, {}
      for _, e in ipairs(F.stamps) do
        if not by_tier[e.tier] then by_tier[e.tier] = {}; tiers[#tiers + 1] = e.tier end
        local t = by_tier[e.tier]
        t[#t + 1] = e.isa .. "_" .. e.variant
      end
      local parts = {}
      for _, tier in ipairs(tiers) do parts[#parts + 1] = tier .. ": " .. table.concat(by_tier[tier], " ") end
      out[#out + 1] = clip("  " .. fit(F.name, 20) .. " " .. table.concat(parts, "  ")) .. "\n"
    end
  end
end

local function cmd_isa(o, out, html)
  if #o.positional ~= 1 then fail(#o.positional == 0 and "no LEAF given (see --help)"
    or ("one LEAF expected, got '" .. table.concat(o.positional, " ") .. "'")) end
  local leafname = o.positional[1]
  if o.isa then fail("--isa applies to --rev mode only") end
  local src = worktree_source(o.root)
  local manifest = read_manifest(src)
  local leaves, by_leaf = leaf_index(manifest)
  local L = by_leaf[leafname]
  if not L then fail("unknown leaf '" .. leafname .. "' (leaves: " .. names_of(leaves) .. ")") end
  local wl, wr = resolve_pairing(o.variant, manifest)
  local forms = L.forms
  if o.form then
    if not L.by_form[o.form] then
      fail("unknown form '" .. o.form .. "' of leaf '" .. leafname .. "' (forms: " .. names_of(L.forms) .. ")")
    end
    forms = { L.by_form[o.form] }
  end
  local jobs, skipped = {}, {}
  for _, F in ipairs(forms) do
    local el, er = find_stamp(F, wl), find_stamp(F, wr)
    if el and er then jobs[#jobs + 1] = { form = F.name, el = el, er = er }
    else
      local missing = (not el) and (wl.isa .. "_" .. wl.variant) or (wr.isa .. "_" .. wr.variant)
      if o.form then fail("form '" .. F.name .. "' of leaf '" .. leafname .. "' has no " .. missing .. " stamp") end
      skipped[#skipped + 1] = "form " .. F.name .. ": skipped (no " .. missing .. " stamp)"
    end
  end
  if #jobs == 0 then
    fail("leaf '" .. leafname .. "' has no form stamped for both " .. wl.isa .. "_" .. wl.variant .. " and "
      .. wr.isa .. "_" .. wr.variant)
  end
  for _, j in ipairs(jobs) do
    local sl = M.parse(src.read(j.el.file), "generated/" .. j.el.file)
    local sr = M.parse(src.read(j.er.file), "generated/" .. j.er.file)
    local model = M.side_by_side(sl, sr, { strict_ids = o.strict_ids })
    local title = leafname .. " " .. j.form
    if html then html[#html + 1] = M.render_html_section(model, { title = title })
    else out[#out + 1] = M.render_text(model, { color = o.color, title = title }) end
  end
  for _, s in ipairs(skipped) do
    if html then html[#html + 1] = "<p>" .. html_escape(s) .. "</p>\n" else out[#out + 1] = s .. "\n" end
  end
  return leafname .. ": " .. wl.isa .. " " .. wl.variant .. " vs " .. wr.isa .. " " .. wr.variant
end

local function cmd_files(o, out, html)
  if #o.positional > 0 then fail("--files takes no LEAF (got '" .. o.positional[1] .. "')") end
  local st = {}
  for k = 1, 2 do
    local text, err = C.read_file(o.files[k])
    if not text then fail("cannot read " .. o.files[k] .. " (" .. tostring(err):gsub("^[^:]*: ", "") .. ")") end
    st[k] = M.parse(text, o.files[k])
  end
  local model = M.side_by_side(st[1], st[2], { strict_ids = o.strict_ids })
  local title = basename(o.files[1]) .. " vs " .. basename(o.files[2])
  if html then html[#html + 1] = M.render_html_section(model, { title = title })
  else out[#out + 1] = M.render_text(model, { color = o.color, title = title }) end
  return title
end

local function cmd_rev(o, out, html, cleanup)
  if #o.positional ~= 1 then fail(#o.positional == 0 and "no LEAF given (see --help)"
    or ("one LEAF expected, got '" .. table.concat(o.positional, " ") .. "'")) end
  local leafname = o.positional[1]
  local ra, rb = o.rev:match("^(.+)%.%.(.+)$")
  if not ra or ra:find("..", 1, true) or rb:find("..", 1, true) or ra:match("%.$") or rb:match("^%.") then
    fail("bad --rev '" .. o.rev .. "' (expected A..B, e.g. HEAD~1..HEAD or HEAD..WORKTREE)")
  end
  if ra == "WORKTREE" then fail("bad --rev '" .. o.rev .. "': only B may be WORKTREE") end
  if o.isa and o.isa ~= "x86_64" and o.isa ~= "aarch64" then
    fail("unknown --isa '" .. o.isa .. "' (x86_64, aarch64)")
  end
  if not execute_ok("git -C " .. shell_quote(o.root) .. " rev-parse --git-dir > /dev/null 2>&1") then
    fail("--rev: " .. o.root .. " is not a git repository")
  end
  local ha = git_rev(o.root, ra)
  local hb = rb == "WORKTREE" and "WORKTREE" or git_rev(o.root, rb)
  local tmp = make_tmpdir()
  cleanup[#cleanup + 1] = tmp
  local sa, sb
  if o.regen then
    local srcs = regen_sources(o.root, { { rev = ra, label = "A" }, { rev = rb, label = "B" } }, tmp)
    sa, sb = srcs[1], srcs[2]
  else
    sa = git_source(o.root, ra, tmp)
    sb = rb == "WORKTREE" and worktree_source(o.root) or git_source(o.root, rb, tmp)
  end
  local function manifest_of(src, rev)
    local ok, res = pcall(read_manifest, src)
    if not ok then
      if M.is_failure(res) then
        fail("revision " .. rev .. " has no generated/MANIFEST" .. (o.regen and "" or " (try --regen)"))
      end
      error(res, 0)
    end
    return res
  end
  local ma, mb = manifest_of(sa, ra), manifest_of(sb, rb)
  local function select(list)
    local sel, any_leaf, any_form = {}, false, false
    for _, e in ipairs(list) do
      if e.leaf == leafname then
        any_leaf = true
        if not o.form or e.form == o.form then
          any_form = true
          local v = o.variant
          if (not o.isa or e.isa == o.isa)
              and (not v or v == e.variant or v == e.tier or v == e.isa .. "_" .. e.variant) then
            sel[#sel + 1] = e
          end
        end
      end
    end
    return sel, any_leaf, any_form
  end
  local la, leaf_a, form_a = select(ma)
  local lb, leaf_b, form_b = select(mb)
  if not leaf_a and not leaf_b then fail("unknown leaf '" .. leafname .. "' at " .. ra .. " and " .. rb) end
  if o.form and not form_a and not form_b then
    fail("unknown form '" .. o.form .. "' of leaf '" .. leafname .. "' at " .. ra .. " and " .. rb)
  end
  if #la == 0 and #lb == 0 then
    fail("no stamp of leaf '" .. leafname .. "' matches" .. (o.isa and (" --isa " .. o.isa) or "")
      .. (o.variant and (" --variant " .. o.variant) or ""))
  end
  local in_a, order = {}, {}
  for _, e in ipairs(la) do in_a[e.symbol] = e end
  local seen = {}
  for _, e in ipairs(lb) do order[#order + 1] = e.symbol; seen[e.symbol] = e end
  for _, e in ipairs(la) do if not seen[e.symbol] then order[#order + 1] = e.symbol end end
  local tot = { stamps = 0, changed = 0, added = 0, removed = 0, same = 0 }
  local label_a = ra .. " (" .. ha .. ")"
  local label_b = rb == "WORKTREE" and "WORKTREE" or (rb .. " (" .. hb .. ")")
  for _, sym in ipairs(order) do
    local ea, eb = in_a[sym], seen[sym]
    local ta = ea and sa.read(ea.file)
    local tb = eb and sb.read(eb.file)
    local pa = ta and M.parse(ta, ra .. ":generated/" .. ea.file)
    local pb = tb and M.parse(tb, rb .. ":generated/" .. eb.file)
    local d = M.diff_stamps(pa, pb)
    tot.stamps = tot.stamps + 1
    tot[d.kind] = tot[d.kind] + 1
    local ropts = { color = o.color, rev_a = label_a, rev_b = label_b, file = "generated/" .. (eb or ea).file }
    if html then html[#html + 1] = M.render_diff_html(d, ropts)
    else out[#out + 1] = M.render_diff_text(d, ropts) end
  end
  local total = "total " .. leafname .. " " .. label_a .. " -> " .. label_b .. ": "
  if tot.changed + tot.added + tot.removed == 0 then
    total = total .. "no changes (stamps " .. int(tot.stamps) .. ")"
  else
    total = total .. string.format("stamps %d, changed %d, added %d, removed %d, unchanged %d",
      tot.stamps, tot.changed, tot.added, tot.removed, tot.same)
  end
  if html then html[#html + 1] = "<p class=\"summary\">" .. html_escape(total) .. "</p>\n"
  else out[#out + 1] = painter(o.color)(clip(total), "bold") .. "\n" end
  return leafname .. " " .. label_a .. " -> " .. label_b
end

-- Write a file atomically: a temporary file beside it, renamed at the end.
local function write_atomic(path, content)
  local tmp = path .. ".tmp" .. int(os.time() % 100000) .. int(math.random(0, 99999))
  local f, err = io.open(tmp, "wb")
  if not f then fail("cannot write " .. path .. " (" .. tostring(err):gsub("^[^:]*: ", "") .. ")") end
  local ok = f:write(content)
  f:close()
  if not ok then os.remove(tmp); fail("cannot write " .. path) end
  local rok, rerr = os.rename(tmp, path)
  if not rok then os.remove(tmp); fail("cannot write " .. path .. " (" .. tostring(rerr) .. ")") end
end

-- Entry point: returns the exit status; writes nothing unless everything succeeded.
function M.main(argv)
  local cleanup = {}
  local ok, res = xpcall(function()
    local o = parse_args(argv or {})
    if o.help then return { text = M.USAGE } end
    o.root = o.root or default_root()
    if o.color == nil and not o.html then o.color = stdout_is_tty() end
    if o.html and o.html:match("/$") then fail("--html " .. o.html .. ": a directory") end
    local out, html = {}, (o.html and {} or nil)
    local title
    if o.list then
      if #o.positional > 0 or o.rev or o.files then fail("--list takes no other arguments") end
      cmd_list(o, out)
      html = nil
    elseif o.files then
      if o.rev then fail("--files and --rev exclude each other") end
      title = cmd_files(o, out, html)
    elseif o.rev then
      title = cmd_rev(o, out, html, cleanup)
    else
      if o.regen then fail("--regen applies to --rev mode only") end
      title = cmd_isa(o, out, html)
    end
    if html then
      return { html = html_page("asmdiff: " .. title, table.concat(html)), path = o.html }
    end
    return { text = table.concat(out) }
  end, function(e)
    if M.is_failure(e) then return e end
    return { internal = tostring(e), trace = debug.traceback() }
  end)
  for _, dir in ipairs(cleanup) do os.execute("rm -rf " .. shell_quote(dir)) end
  if not ok then
    if M.is_failure(res) then
      io.stderr:write("asmdiff: error: ", res.msg, "\n")
      return 2
    end
    io.stderr:write("asmdiff: internal error: ", res.internal, "\n", res.trace or "", "\n")
    return 1
  end
  if res.html then
    local wok, werr = pcall(write_atomic, res.path, res.html)
    if not wok then
      io.stderr:write("asmdiff: error: ", M.is_failure(werr) and werr.msg or tostring(werr), "\n")
      return 2
    end
    io.stdout:write("asmdiff: wrote ", res.path, "\n")
  else
    io.stdout:write(res.text)
  end
  return 0
end

if arg and type(arg[0]) == "string" and arg[0]:match("asmdiff%.lua$") and arg[0] == SELF then
  local argv = {}
  for i = 1, #arg do argv[i] = arg[i] end
  io.stdout:setvbuf("full")
  os.exit(M.main(argv))
end

return M
