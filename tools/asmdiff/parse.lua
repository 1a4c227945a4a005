-- tools/asmdiff/parse.lua: reading stamps: a stamp's text into its op groups, labels, directives,
-- llvm-mca markers and constant tables; an item's display text; generated/MANIFEST's entries.
--
-- A stamp is read into { symbol, isa, variant, tier, leaf, form, groups, consts }: a group is
-- one run of lines of one template op (the writer prints a `// [id] op ...` header whenever the
-- op changes, so one op may own several groups, e.g. a loop's head and its back edge), holding
-- its instructions and, in order, the labels, directives and llvm-mca markers among them.

local U = require("asmdiff.common")

local P = {}

local fail, trim, split_lines, replace_plain = U.fail, U.trim, U.split_lines, U.replace_plain

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
P.value_bytes = value_bytes

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
function P.parse(text, origin)
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

-- Display text of an item (the parser caches it: its stamp's symbol abbreviated to @).
local function item_text(it, sym)
  if not it then return "" end
  if it.disp then return it.disp end
  local s = it.text
  if it.kind ~= "absent" and sym then s = replace_plain(s, sym .. "_", "@") end
  if it.kind == "label" then s = s .. ":" end
  return s
end
P.item_text = item_text

-- generated/MANIFEST -> { {symbol, file, tier, template, leaf, form, isa, variant}, ... }, in its order.
function P.parse_manifest(text)
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

return P
