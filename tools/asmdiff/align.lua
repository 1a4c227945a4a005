-- tools/asmdiff/align.lua: matching two stamps op group by op group: the longest common
-- subsequence, the side-by-side model of two ISAs' stamps (rows, constant tables, summary) and the
-- diff model of two revisions of one stamp.
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

local C = require("compat")
local U = require("asmdiff.common")
local P = require("asmdiff.parse")

local A = {}

local int, basename, item_text = U.int, U.basename, P.item_text

local ABSENT = "--- absent ---"

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

function A.lcs(a, b)
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
A.merge = merge

---------------------------------------------------------------------------------------------
-- Aligner: groups of two stamps -> { {l = group|nil, r = group|nil}, ... } in both stamps' order.

local function op_key(g) return g.name .. "\0" .. (g.src or "") .. ":" .. (g.line and int(g.line) or "") end

function A.align_groups(gl, gr, opts)
  opts = opts or {}
  local ka, kb = {}, {}
  for i, g in ipairs(gl) do ka[i] = opts.strict_ids and (int(g.id) .. "\0" .. g.name) or op_key(g) end
  for i, g in ipairs(gr) do kb[i] = opts.strict_ids and (int(g.id) .. "\0" .. g.name) or op_key(g) end
  local out = {}
  for _, p in ipairs(merge(#gl, #gr, A.lcs(ka, kb))) do
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
  for _, m in ipairs((#kl > 0 and #kr > 0) and A.lcs(kl, kr) or {}) do
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
A.group_title = group_title

-- Constant tables of two stamps, by table name.
function A.compare_consts(cl, cr)
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

-- The side-by-side model of two stamps: rows (each { l = item, r = item, mid, mark, side,
-- first }), per-side names, statistics and constant tables.
function A.side_by_side(sl, sr, opts)
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
  for _, p in ipairs(A.align_groups(sl.groups, sr.groups, opts)) do
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
  model.consts = A.compare_consts(sl.consts, sr.consts)
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
function A.summary_line(model)
  local s = model.stats
  return string.format("summary: op groups %d aligned, %d only left, %d only right; instrs left %d, right %d;"
    .. " const tables %d equal, %d differ, %d only left, %d only right",
    s.aligned, s.only_l, s.only_r, s.instr_l, s.instr_r, s.c_equal, s.c_differ, s.c_left, s.c_right)
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
    return A.lcs(ka, kb)
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
  for _, p in ipairs(merge(#la, #lb, A.lcs(texts(la), texts(lb)))) do
    if p.l and p.r then lines[#lines + 1] = { op = " ", text = la[p.l].text, kind = la[p.l].kind }
    elseif p.l then lines[#lines + 1] = { op = "-", text = la[p.l].text, kind = la[p.l].kind }
    else lines[#lines + 1] = { op = "+", text = lb[p.r].text, kind = lb[p.r].kind } end
  end
  return lines
end

-- The diff model of two versions of a stamp (either may be nil: added or removed). Instruction
-- counts (+/-) count instructions only; labels and directives are shown but not counted.
function A.diff_stamps(a, b)
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
  for _, m in ipairs(A.lcs(ka, kb)) do
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
  d.consts = A.compare_consts(a.consts, b.consts)
  d.consts_changed = 0
  for _, c in ipairs(d.consts) do if c.status ~= "equal" then d.consts_changed = d.consts_changed + 1 end end
  d.kind = (st.changed + st.added + st.removed + d.consts_changed == 0) and "same" or "changed"
  return d
end

function A.diff_summary(d)
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

return A
