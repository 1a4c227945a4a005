-- tools/census/pipes.lua: a loop's resource bound on one llvm-mca model, from llvm-mca's own
-- scheduling model (no external tool runs here: toolchain.lua runs llvm-mca, this file reads it).
--
-- The method:
--   1. llvm-mca -instruction-tables prints, per instruction of the loop, the cycles it takes on
--      each unit of the model ("Resource pressure by instruction"): a use of a resource with N
--      interchangeable units (a ProcResource<N>, or a ProcResGroup of several resources) is
--      spread evenly over those units, so the table alone hides which units were a choice.
--   2. Each row is cut back into the model's resources (its kinds: ProcResource<N> as llvm-mca
--      lists them; its groups: ProcResGroup, from the model's .td source, models.lua) by levels:
--      the largest resource first takes the even share all of its units still carry when that
--      share makes whole cycles (the models' resource cycles are whole numbers), and so on down
--      to single units; a row that does not come apart into whole resources is an error (a group
--      missing from models.lua). The result: cycles per iteration on each resource. The table
--      cannot tell one micro-op pinned to each of two pipes from two free on both (p0 1 and p4 1
--      reads as the group p04 2 where the model has one): the cut takes the group, the freer.
--   3. The bound is the least number of cycles per iteration any assignment of those cycles to
--      units allows: max over unit sets S of (cycles of the uses confined to S) / |S| (the sets
--      S worth trying are the unions of overlapping used resources), and the dispatch limit
--      (micro-ops per iteration / the model's dispatch width). The set that attains it is the
--      loop's limiting resource. Latency chains and llvm-mca's own pipe choices are not in the
--      bound: they are what `c/it / bound` above 1 measures.

local C = require("compat")

local P = {}

-- The model's units and kinds from llvm-mca's "Resources:" list: { units = { {kind, name} },
-- kinds = { name = {unit indices} }, kind_names = { ... in order } }.
function P.resources(text)
  local units, kinds, order = {}, {}, {}
  local on = false
  for line in (text .. "\n"):gmatch("(.-)\n") do
    if line:match("^Resources:") then on = true
    elseif on then
      local k, name = line:match("^%[(%d+)[%.%d]*%]%s+%-%s+(%S+)")
      if not k then break end
      units[#units + 1] = { kind = name, name = name }
      if not kinds[name] then kinds[name] = {}; order[#order + 1] = name end
      kinds[name][#kinds[name] + 1] = #units
    end
  end
  return { units = units, kinds = kinds, kind_names = order }
end

-- A set of unit indices: sorted list, key string.
local function make_set(list)
  table.sort(list)
  local parts = {}
  for i, u in ipairs(list) do parts[i] = C.int(u) end
  return { units = list, key = table.concat(parts, ","), n = #list }
end

-- The resources of a model to cut rows into: every kind, and every group of models.lua whose kinds
-- all appear in llvm-mca's list, each { name, units, key, n }; largest first, then by name.
-- `model` is a models.lua entry, `short(name)` the census's name of an llvm-mca resource.
function P.resource_sets(res, model, short)
  local sets, seen = {}, {}
  local function add(name, units, members)
    local s = make_set(units)
    if not seen[s.key] then
      seen[s.key] = true
      s.name, s.group, s.members = name, members ~= nil, members
      sets[#sets + 1] = s
    end
  end
  local by_short = {}
  for _, kname in ipairs(res.kind_names) do by_short[short(kname)] = res.kinds[kname] end
  for _, g in ipairs(model.groups or {}) do
    local units, ok = {}, true
    for _, kname in ipairs(g.kinds) do
      local ku = by_short[kname]
      if not ku then ok = false; break end
      for _, u in ipairs(ku) do units[#units + 1] = u end
    end
    if ok then add(g.name, units, table.concat(g.kinds, "+")) end
  end
  for _, kname in ipairs(res.kind_names) do
    local units = {}
    for i, u in ipairs(res.kinds[kname]) do units[i] = u end
    add(short(kname), units)
  end
  table.sort(sets, function(a, b)
    if a.n ~= b.n then return a.n > b.n end
    return a.name < b.name
  end)
  return sets
end

-- llvm-mca -instruction-tables output: { [region] = { {text, p = {per unit cycles}}, ... } }
-- ("(whole)" when the file has no marked region).
function P.parse_tables(text, nunits)
  local regions, name, rows, on = {}, "(whole)", nil, false
  for line in (text .. "\n"):gmatch("(.-)\n") do
    local r = line:match("^%[%d+%] Code Region %- (%S+)")
    if r then name = r; on = false
    elseif line:match("^Resource pressure by instruction:") then
      rows = {}
      regions[name] = rows
      on = true
    elseif on then
      if line:match("^%s*$") then on = false
      elseif not line:match("^%[") then -- not the column header
        local p, rest = {}, line
        for i = 1, nunits do
          local cell, tail = rest:match("^%s*(%S+)(.*)$")
          if not cell then break end
          p[i] = cell == "-" and 0 or tonumber(cell)
          rest = tail
        end
        if #p == nunits then rows[#rows + 1] = { p = p, text = rest:gsub("^%s+", "") } end
      end
    end
  end
  return regions
end

local EPS = 0.03 -- the table prints 2 decimals

-- One row's cycles cut into the model's resources: { [set key] = cycles }; nil, message when a
-- unit keeps cycles no whole resource explains. Resource cycles are whole numbers in the models
-- (ReleaseAtCycles / ResourceCycles), so a resource takes its level only when that makes whole
-- cycles: 0.50 on p0 and p1 with 2.00 on p5 is p01 1 and p5 2, not p015 1.5 and p5 1.5.
function P.decompose(p, sets)
  local r, use = {}, {}
  for i, x in ipairs(p) do r[i] = x end
  for _, s in ipairs(sets) do
    local level = math.huge
    for _, u in ipairs(s.units) do level = math.min(level, r[u]) end
    local cycles = level * s.n
    local whole = math.floor(cycles + 0.5)
    if whole >= 1 and math.abs(cycles - whole) < EPS * s.n then
      use[s.key] = (use[s.key] or 0) + whole
      for _, u in ipairs(s.units) do r[u] = r[u] - whole / s.n end
    end
  end
  for i, x in ipairs(r) do
    if math.abs(x) > EPS then return nil, "unit " .. C.int(i) .. " keeps " .. string.format("%.2f", x) end
  end
  return use
end

-- The display name of a unit set: the resource's name when it is one, else the names of the
-- largest resources that tile it, joined by "+".
function P.set_name(set, sets)
  local want = {}
  for _, u in ipairs(set.units) do want[u] = true end
  for _, s in ipairs(sets) do
    if s.key == set.key then return s.name end
  end
  local names = {}
  for _, s in ipairs(sets) do
    local inside = true
    for _, u in ipairs(s.units) do
      if not want[u] then inside = false; break end
    end
    if inside then
      names[#names + 1] = s.name
      for _, u in ipairs(s.units) do want[u] = nil end
    end
  end
  table.sort(names)
  return table.concat(names, "+")
end

local function union(a, b)
  local seen, list = {}, {}
  for _, u in ipairs(a.units) do seen[u] = true; list[#list + 1] = u end
  for _, u in ipairs(b.units) do
    if not seen[u] then list[#list + 1] = u end
  end
  return make_set(list)
end

local function overlaps(a, b)
  local seen = {}
  for _, u in ipairs(a.units) do seen[u] = true end
  for _, u in ipairs(b.units) do
    if seen[u] then return true end
  end
  return false
end

local function inside(a, b) -- a within b
  local seen = {}
  for _, u in ipairs(b.units) do seen[u] = true end
  for _, u in ipairs(a.units) do
    if not seen[u] then return false end
  end
  return true
end

-- The bound of a loop: use = { [set key] = cycles per iteration } over `sets`; uops and width:
-- micro-ops per iteration and dispatch width (nil: not counted). Returns bound, the limiting set's
-- name, and the list of used resources { {name, cycles, n} } (most cycles per unit first).
function P.bound(use, sets, uops, width)
  local used = {}
  for _, s in ipairs(sets) do
    if use[s.key] and use[s.key] > 0 then used[#used + 1] = s end
  end
  -- the unions of overlapping used resources (a union of disjoint parts never beats its best part)
  local cand, seen = {}, {}
  for _, s in ipairs(used) do
    if not seen[s.key] then seen[s.key] = true; cand[#cand + 1] = s end
  end
  local i = 1
  while i <= #cand do
    local a = cand[i]
    for _, s in ipairs(used) do
      if overlaps(a, s) and not inside(s, a) then
        local u = union(a, s)
        if not seen[u.key] then seen[u.key] = true; cand[#cand + 1] = u end
      end
    end
    i = i + 1
  end
  local best, best_set = 0, nil
  for _, S in ipairs(cand) do
    local work = 0
    for _, s in ipairs(used) do
      if inside(s, S) then work = work + use[s.key] end
    end
    local b = work / S.n
    -- ties: the smaller set names the restriction, then the lower key
    if b > best + 1e-9 or (best_set and math.abs(b - best) <= 1e-9
        and (S.n < best_set.n or (S.n == best_set.n and S.key < best_set.key))) then
      best, best_set = b, S
    end
  end
  local limit = best_set and P.set_name(best_set, sets) or "-"
  if uops and width and uops / width > best + 1e-9 then best, limit = uops / width, "dispatch" end
  local list = {}
  for _, s in ipairs(used) do list[#list + 1] = { name = s.name, cycles = use[s.key], n = s.n } end
  table.sort(list, function(a, b)
    local x, y = a.cycles / a.n, b.cycles / b.n
    if math.abs(x - y) > 1e-9 then return x > y end
    return a.name < b.name
  end)
  return best, limit, list
end

return P
