-- gen/fkgen.lua: the generator driver.
--
--   luajit gen/fkgen.lua [--root DIR] [--out DIR] [--templates DIR] [--check]
--
-- Reads templates/registry.lua, builds each form's IR from its template, lowers it with every
-- backend variant of the template's tier and writes generated/ (stamps, fk_leaves.h, fk_asm.h,
-- fk_tables.h, MANIFEST, LEAVES.md). Output is buffered: on any error nothing is written and the exit status is 1,
-- the message being `templates/x.lua:LINE: error: ...`. A file is rewritten only when its
-- content changes. --check writes nothing and fails when generated/ differs from the output.
-- --templates names another template folder under the root (the DSL conformance test uses it).

local script = arg and arg[0] or "gen/fkgen.lua"
local gen_dir = script:match("^(.*)/[^/]*$") or "."
package.path = gen_dir .. "/?.lua;" .. package.path

-- Every module the generator loads, in load order; their contents make the generator hash.
local MODULES = { "compat", "sha1", "ir", "extent", "vmath", "vfft", "dsl", "regalloc", "kregs", "bump", "emit",
                  "header", "isa.aarch64", "isa.x86_64" }
local loaded = {}
for _, name in ipairs(MODULES) do loaded[name] = require(name) end

local C, SHA1, DSL, EMIT, HDR = loaded.compat, loaded.sha1, loaded.dsl, loaded.emit, loaded.header
local BACKENDS = { loaded["isa.aarch64"], loaded["isa.x86_64"] }

local TIERS = { "exact", "fast" }   -- stamping order

local function werror(msg)
  io.stderr:write(msg, "\n")
end

local function usage()
  werror("usage: fkgen.lua [--root DIR] [--out DIR] [--templates DIR] [--check]")
  os.exit(2)
end

local opts = { root = (gen_dir == "." and ".." or gen_dir:match("^(.*)/[^/]*$") or ".") }
do
  local i = 1
  while arg and arg[i] do
    local a = arg[i]
    if a == "--root" then opts.root = arg[i + 1] or usage(); i = i + 2
    elseif a == "--out" then opts.out = arg[i + 1] or usage(); i = i + 2
    elseif a == "--templates" then opts.templates = arg[i + 1] or usage(); i = i + 2
    elseif a == "--check" then opts.check = true; i = i + 1
    else werror("fkgen: unknown argument '" .. a .. "'"); usage() end
  end
end
opts.out = opts.out or (opts.root .. "/generated")
opts.templates = opts.templates or "templates"

---------------------------------------------------------------------------------------------

local function read(rel)
  local s, err = C.read_file(opts.root .. "/" .. rel)
  if not s then error({ plain = rel .. ": error: cannot read (" .. tostring(err) .. ")" }, 0) end
  return s
end

local function generator_hash()
  local rows = { "gen/fkgen.lua\0" .. SHA1.git_blob(read("gen/fkgen.lua")) }
  local names = {}
  for _, name in ipairs(MODULES) do names[#names + 1] = name end
  table.sort(names)
  for _, name in ipairs(names) do
    local rel = "gen/" .. name:gsub("%.", "/") .. ".lua"
    rows[#rows + 1] = rel .. "\0" .. SHA1.git_blob(read(rel))
  end
  return SHA1.digest(table.concat(rows, "\n"))
end

-- Template declaration checks, before anything is built. A declaration error points at the
-- line declaring the key (the first `key =` in the source), or line 1 when the key is absent.
-- First line of src matching pattern, or 1.
local function line_matching(src, pattern)
  local n = 0
  for line in (src .. "\n"):gmatch("([^\n]*)\n") do
    n = n + 1
    if line:match(pattern) then return n end
  end
  return 1
end

local function check_template(path, src, t, leaf_name)
  local function line_of(key) return line_matching(src, "^%s*" .. key .. "%s*=") end
  local function fail(msg) DSL.raise(path, msg, line_of(msg:match("^(%a+)") or "")) end
  if type(t) ~= "table" then fail("return: a template must return a table") end
  if t.leaf ~= leaf_name then
    fail("leaf: must be '" .. leaf_name .. "' (the file name), got '" .. tostring(t.leaf) .. "'")
  end
  if type(t.doc) ~= "string" then fail("doc: a one-line description is required") end
  if type(t.tiers) ~= "table" then fail("tiers: a table { exact = { variants }, fast = { variants } } is required") end
  for _, k in ipairs(C.sorted_keys(t.tiers)) do
    if k ~= "exact" and k ~= "fast" then fail("tiers: unknown tier '" .. tostring(k) .. "' (exact, fast)") end
  end
  if type(t.params) ~= "table" then fail("params: a table is required") end
  if type(t.check) ~= "function" then fail("check: a function asserting the params is required") end
  if type(t.body) ~= "function" then fail("body: a function is required") end
  if type(t.forms) ~= "table" or #t.forms == 0 then fail("forms: at least one form is required") end
  -- every listed variant must be a backend variant of that tier (the leaf's, and a form's own
  -- `variants = { <tier> = { names } }`, which replaces the leaf's list for that tier: the forms
  -- whose ops only some CPUs have, e.g. dot_u8s8)
  local function check_variants(list, what)
    for _, tier in ipairs(TIERS) do
      for _, name in ipairs(list[tier] or {}) do
        local found
        for _, be in ipairs(BACKENDS) do
          for _, v in ipairs(be.variants) do if v.name == name and v.tier == tier then found = true end end
        end
        if not found then fail(what .. ": no " .. tier .. "-tier variant named '" .. tostring(name) .. "'") end
      end
    end
  end
  check_variants(t.tiers, "tiers")
  for _, f in ipairs(t.forms) do
    if f.variants ~= nil then
      if type(f.variants) ~= "table" then
        fail("forms: '" .. tostring(f.name) .. "': variants = { <tier> = { names } }")
      end
      for _, k in ipairs(C.sorted_keys(f.variants)) do
        if not t.tiers[k] then fail("forms: '" .. tostring(f.name) .. "': variants for tier '" .. tostring(k) ..
                                    "', which the leaf does not have") end
      end
      check_variants(f.variants, "forms: '" .. tostring(f.name) .. "': variants")
    end
  end
  local seen = {}
  for i, f in ipairs(t.forms) do
    if type(f.name) ~= "string" or not f.name:match("^[a-z0-9][a-z0-9_]*$") then
      fail("forms: forms[" .. i .. "].name must match [a-z0-9][a-z0-9_]*")
    end
    if seen[f.name] then fail("forms: '" .. f.name .. "' declared twice") end
    seen[f.name] = true
    if type(f.args) ~= "table" or #f.args == 0 then fail("form '" .. f.name .. "': args required") end
  end
  -- how the leaf's fixtures run, its fast tier's tolerance class, each form's fixture evidence
  local gate = t.fixture_gate
  if gate ~= nil and gate ~= "none" and gate ~= "calls" and gate ~= "sequence" and gate ~= "stream" then
    fail("fixture_gate: 'calls' (the default), 'sequence', 'stream' or 'none'")
  end
  if t.tiers.fast then
    local tol = type(t.tolerance) == "table" and t.tolerance.fast
    if type(tol) ~= "string" or not tol:match("^[a-z0-9_]+$") then
      fail("tolerance: a leaf with a fast tier names its tolerance class: tolerance = { fast = \"<class>\" }")
    end
  elseif t.tolerance ~= nil then
    fail("tolerance: only a leaf with a fast tier has a fast-tier tolerance class")
  end
  for _, f in ipairs(t.forms) do
    local fx = f.fixtures
    if fx ~= nil then
      if type(fx) ~= "table" or (fx.via == nil) == (fx.exempt == nil) then
        fail("fixtures: form '" .. f.name .. "': { via = \"<base form>\" } or { exempt = \"<reason>\" }")
      end
      if fx.via ~= nil and (not seen[fx.via] or fx.via == f.name) then
        fail("fixtures: form '" .. f.name .. "': via '" .. tostring(fx.via) .. "' is not another form of this leaf")
      end
      if fx.exempt ~= nil and (type(fx.exempt) ~= "string" or #fx.exempt < 10) then
        fail("fixtures: form '" .. f.name .. "': exempt needs the reason, in words")
      end
    elseif gate == "none" then
      fail("fixtures: form '" .. f.name .. "': the leaf has no fixture gate, so each form says why (exempt)")
    end
  end
  -- parameters are asserted before anything is emitted
  t.check(t.params, function(ok, msg)
    if not ok then DSL.raise(path, "params: " .. tostring(msg)) end
  end)
end

local function params_doc(p)
  local parts = {}
  for _, k in ipairs(C.sorted_keys(p)) do
    local v = p[k]
    parts[#parts + 1] = k .. "=" .. (type(v) == "number" and C.int(v) or tostring(v))
  end
  return table.concat(parts, " ")
end

-- Each variant's tuning (gen/isa/*.lua), checked once: every parameter DSL.TUNING names, of its
-- kind, and accumulators (plus the one operand in flight) within the canonical vectors the
-- variant's register file holds.
local function variant_tunings()
  local out = {}
  for _, be in ipairs(BACKENDS) do
    for _, v in ipairs(be.variants) do
      local where = "gen/isa/" .. be.isa .. ".lua: error: variant " .. v.name .. ": tuning"
      local tune = v.tuning
      if type(tune) ~= "table" then error({ plain = where .. " is missing" }, 0) end
      for _, k in ipairs(C.sorted_keys(tune)) do
        if not DSL.TUNING[k] then error({ plain = where .. ": unknown parameter '" .. tostring(k) .. "'" }, 0) end
      end
      for _, k in ipairs(C.sorted_keys(DSL.TUNING)) do
        if type(tune[k]) ~= DSL.TUNING[k].kind then
          error({ plain = where .. "." .. k .. " must be a " .. DSL.TUNING[k].kind }, 0)
        end
      end
      local regs = be.registers(v)
      local vectors = math.floor(#regs.pools[regs.classes.v.pool] / regs.classes.v.n)
      if tune.accumulators < 1 or tune.accumulators + 1 > vectors then
        error({ plain = where .. ".accumulators = " .. C.int(tune.accumulators) .. ": the register file holds " ..
                C.int(vectors) .. " canonical vectors, one for the operand in flight" }, 0)
      end
      out[be.isa .. "/" .. v.name] = tune
    end
  end
  return out
end

local function run()
  local tunings = variant_tunings()
  local files, order = {}, {}
  local function put(rel, content)
    if files[rel] then error("internal: two outputs for " .. rel) end
    files[rel] = content
    order[#order + 1] = rel
  end
  local ghash = generator_hash()
  local banner = "Auto-generated by flashkern gen/ (sha1 " .. ghash .. ") - DO NOT EDIT."

  local registry_path = opts.templates .. "/registry.lua"
  local reg_chunk, err = load(read(registry_path), "@" .. registry_path)
  if not reg_chunk then error({ plain = (err:gsub("^([^:]+%.lua:%d+:)", "%1 error:")) }, 0) end
  local registry = reg_chunk()
  if type(registry) ~= "table" then
    error({ plain = registry_path .. ":1: error: must return a list of leaf names" }, 0)
  end
  -- templates not listed yet follow the listed ones in name order (listing a leaf pins its place)
  local in_registry, found = {}, {}
  for _, name in ipairs(registry) do
    if in_registry[name] then
      error({ plain = registry_path .. ":1: error: '" .. tostring(name) .. "' is listed twice" }, 0)
    end
    in_registry[name] = true
  end
  local listing_ok, out = C.run("ls " .. C.sh_quote(opts.root .. "/" .. opts.templates))
  if not listing_ok then error({ plain = opts.templates .. ": error: cannot list (" .. out .. ")" }, 0) end
  for file in out:gmatch("[^\n]+") do
    local name = file:match("^([a-z][a-z0-9_]*)%.lua$")
    if name and name ~= "registry" then found[#found + 1] = name end
  end
  table.sort(found)
  for _, name in ipairs(found) do
    if not in_registry[name] then registry[#registry + 1] = name end
  end

  local leaves, stamps = {}, {}
  for _, leaf_name in ipairs(registry) do
    local path = opts.templates .. "/" .. leaf_name .. ".lua"
    local src = read(path)
    local chunk, lerr = load(src, "@" .. path)
    if not chunk then error({ plain = (lerr:gsub("^([^:]+%.lua:%d+:)", "%1 error:")) }, 0) end
    local t = chunk()
    check_template(path, src, t, leaf_name)
    local thash = SHA1.git_blob(src)
    local leaf = { leaf = leaf_name, path = path, doc = t.doc, forms = {}, exports = {},
                   fixture_gate = t.fixture_gate or "calls", fast_tolerance = t.tolerance and t.tolerance.fast }
    -- constants the template publishes for C (a layout the runtime must honour, ...)
    for _, key in ipairs(C.sorted_keys(t.exports or {})) do
      local v = t.exports[key]
      local function int(x) return type(x) == "number" and x == math.floor(x) end
      local ok = type(key) == "string" and key:match("^[A-Z][A-Z0-9_]*$") and int(v)
      if type(v) == "table" then   -- a table of 32-bit words (twiddles, windows) for the C side
        ok = type(key) == "string" and key:match("^[A-Z][A-Z0-9_]*$") and #v > 0
        for _, w in ipairs(v) do ok = ok and int(w) and w >= 0 and w <= 0xffffffff end
      end
      if not ok then
        DSL.raise(path, "exports: " .. tostring(key) .. " must be an UPPER_CASE name with an integer value " ..
                  "or a list of 32-bit words", line_matching(src, "^%s*exports%s*="))
      end
      leaf.exports[#leaf.exports + 1] = { key = key, value = v }
    end
    leaves[#leaves + 1] = leaf
    for _, form in ipairs(t.forms) do
      local id = "fk_" .. leaf_name .. "_" .. form.name
      local fields, size = DSL.layout(form.args, path, function(name)
        return line_matching(src, '"' .. name:gsub("%p", "%%%0") .. '"')
      end)
      local tiers = {}
      for _, tier in ipairs(TIERS) do
        local listed = t.tiers[tier] ~= nil
        if listed and form.tiers then
          listed = false
          for _, ft in ipairs(form.tiers) do listed = listed or ft == tier end
        end
        tiers[tier] = listed
      end
      leaf.forms[#leaf.forms + 1] = { name = form.name, id = id, fields = fields, size = size, tiers = tiers,
                                      fixtures = form.fixtures or {} }
      for _, tier in ipairs(TIERS) do
      for _, be in ipairs(BACKENDS) do
        for _, variant in ipairs(be.variants) do
          local wanted = false
          for _, name in ipairs((form.variants and form.variants[tier]) or t.tiers[tier] or {}) do
            wanted = wanted or (name == variant.name and variant.tier == tier)
          end
          -- a form may exist in some tiers only (form.tiers)
          if wanted and form.tiers then
            local listed = false
            for _, ft in ipairs(form.tiers) do listed = listed or ft == tier end
            wanted = listed
          end
          if wanted then
            local proc = DSL.build(path, t, form, t.params, tier, tunings[be.isa .. "/" .. variant.name])
            local symbol = id .. "__" .. be.isa .. "_" .. variant.name .. "_" .. tier
            local meta = { symbol = symbol, template_path = path, template_hash = thash,
                           generator_hash = ghash, tier = tier, params_doc = params_doc(t.params),
                           tuning_doc = params_doc(proc.tuning_used),
                           struct_name = id .. "_args" }
            local text = EMIT.stamp(proc, be, variant, meta, function(msg, line)
              DSL.raise(path, be.isa .. "/" .. variant.name .. ": " .. msg, line or 0)
            end)
            local rel = be.isa .. "/" .. symbol .. ".S"
            put(rel, text)
            stamps[#stamps + 1] = { id = id, isa = be.isa, variant = variant.name, tier = tier,
                                    symbol = symbol, features = variant.features, file = rel, asflags = variant.asflags,
                                    template = path, template_hash = thash }
          end
        end
      end
      end
    end
  end
  put("fk_leaves.h", HDR.leaves_h(leaves, stamps, banner))
  put("fk_asm.h", HDR.asm_h(banner))
  put("fk_tables.h", HDR.tables_h(leaves, banner))
  put("MANIFEST", HDR.manifest(stamps, banner))
  put("LEAVES.md", HDR.leaves_md(leaves, stamps, banner))
  return files, order
end

-- Files listed by the previous MANIFEST that this run no longer produces.
local function stale(files)
  local old = C.read_file(opts.out .. "/MANIFEST")
  local out = {}
  if not old then return out end
  for line in old:gmatch("[^\n]+") do
    local file = line:match("^fk_%S+ (%S+) ")
    if file and not files[file] then out[#out + 1] = file end
  end
  return out
end

local ok, files_or_err, order = xpcall(run, function(e)
  if type(e) == "table" then return e end
  return { internal = tostring(e), trace = debug.traceback() }
end)
if not ok then
  local e = files_or_err
  if getmetatable(e) == DSL.TemplateError then
    werror(tostring(e))
  elseif e.plain then
    werror(e.plain)
  elseif type(e.internal) == "string" and e.internal:sub(1, #opts.templates + 1) == opts.templates .. "/"
      and e.internal:match("^[^:]+%.lua:%d+:") then
    werror((e.internal:gsub("^([^:]+%.lua:%d+:)", "%1 error:")))
  else
    werror("fkgen: internal error: " .. tostring(e.internal))
    werror(e.trace or "")
  end
  os.exit(1)
end

local files = files_or_err
local changed = {}
for _, rel in ipairs(order) do
  local cur = C.read_file(opts.out .. "/" .. rel)
  if cur ~= files[rel] then changed[#changed + 1] = rel end
end
local gone = stale(files)

if opts.check then
  for _, rel in ipairs(changed) do werror("fkgen: stale: generated/" .. rel) end
  for _, rel in ipairs(gone) do werror("fkgen: not produced any more: generated/" .. rel) end
  os.exit((#changed == 0 and #gone == 0) and 0 or 1)
end

for _, rel in ipairs(changed) do
  local dir = (opts.out .. "/" .. rel):match("^(.*)/[^/]*$")
  os.execute("mkdir -p '" .. dir .. "'")
  local f = assert(io.open(opts.out .. "/" .. rel, "wb"))
  f:write(files[rel])
  f:close()
end
for _, rel in ipairs(gone) do os.remove(opts.out .. "/" .. rel) end
io.stdout:write(string.format("fkgen: %d files, %d rewritten, %d removed (%s)\n",
  #order, #changed, #gone, C.interpreter))
