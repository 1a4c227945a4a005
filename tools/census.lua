-- tools/census.lua: the stamp census, generated/CENSUS.md (`make census`; CI fails when stale).
--
-- For every stamp in generated/MANIFEST:
--   * llvm-mca's predicted cycles per iteration of each region the generator marked
--     (LLVM-MCA-BEGIN/END: the innermost full-tile loops; the whole function when none is marked),
--     on two models per ISA (census/models.lua), next to that loop's bound on the model: the
--     fewest cycles per iteration the model's resources allow for the loop's instructions, each
--     on the pipes the model lets it use (census/pipes.lua has the method), and the resource that
--     sets it; the same bound over the loop's loads, stores and FMAs alone (the floor);
--   * instructions by class (memory access, FMA, and the vector pipes' other work: widening,
--     shifts, logic, selects, compares, converts, shuffles, broadcasts, integer and FP arithmetic,
--     moves; general-purpose work, branches, prefetches), counted from the stamp's own tagged
--     instruction lines (a load-op instruction counts as a load and as its operation);
--   * code bytes (the function's ELF symbol size) and constant bytes (its read-only section),
--     from the stamp assembled with its manifest flags;
--   * registers used (GPR, vector, mask), callee-saved registers saved and stack bytes, from the
--     instructions and the frame op [0];
--   * the ISA extensions it requires: each extension of its variant is removed in turn from the
--     assembler's -march and the stamp assembled again; the ones whose removal fails are listed.
-- One summary row per stamp, with its main loop (the marked region with the most FMAs, then the
-- most instructions); `--stamp SYMBOL` prints every region of one stamp.
--
-- Usage: lua5.4 tools/census.lua --root DIR [--out FILE] [--check] [--only LUAPATTERN] [--stamp SYMBOL] [--rows]
--   --check: exit 1 (and say so) when FILE differs from what would be written.
--   --only: only the stamps whose symbol matches (a partial census, for tests).
--   --rows: per model, every distinct llvm-mca pressure row of the main loops and how it was cut.
-- Needs gcc, aarch64-linux-gnu-gcc, binutils for both, and llvm-mca-16 (LLVM_MCA overrides).
--
-- The modules, by job:
--   census/count.lua      a stamp's text: instruction classes, registers, frame, main loop
--   census/pipes.lua      a loop's bound from llvm-mca's instruction tables (the method)
--   census/models.lua     the llvm-mca models per ISA and their resource groups (from the .td)
--   census/toolchain.lua  the assembler (bytes, required extensions) and llvm-mca
--   census/markdown.lua   CENSUS.md, the --stamp report and the --rows audit
-- This file owns the options, the MANIFEST rows, one record per stamp, and --check / --out.

local SELF = ((debug.getinfo(1, "S") or {}).source or ""):match("^@(.*)$") or "tools/census.lua"
local TOOLS_DIR = SELF:match("^(.*)/[^/]*$") or "."
-- the modules beside this file; compat.lua from the generator's folder (one copy, not two)
package.path = TOOLS_DIR .. "/?.lua;" .. TOOLS_DIR .. "/../gen/?.lua;" .. package.path
local C = require("compat")
local K = require("census.count")
local T = require("census.toolchain")
local D = require("census.markdown")
local P = require("census.pipes")
local Mo = require("census.models")

local M = {}

-- The library (tests/census_test.sh): the models and the counting functions.
M.MODELS, M.parse, M.count, M.registers, M.frame = T.MODELS, K.parse, K.count, K.registers, K.frame
M.classify, M.pipes, M.models, M.cleanup = K.classify, P, Mo, T.cleanup

local die = T.die

-- generated/MANIFEST's rows, by symbol: { symbol, file, tier, asflags, isa }.
local function manifest(root)
  local text = C.read_file(root .. "/generated/MANIFEST")
  if not text then die("cannot read " .. root .. "/generated/MANIFEST") end
  local rows = {}
  for line in text:gmatch("[^\n]+") do
    if not line:match("^#") then
      local symbol, file, tier, asflags = line:match("^(%S+) (%S+) (%S+) %S+ %S+ %S+ (.*)$")
      if symbol then
        rows[#rows + 1] = { symbol = symbol, file = file, tier = tier, asflags = asflags,
                            isa = file:match("^([^/]+)/") }
      end
    end
  end
  table.sort(rows, function(a, b) return a.symbol < b.symbol end)
  return rows
end

-- The resource analysis of one region on one model (pipes.lua): rows of llvm-mca's instruction
-- tables, the stamp's instructions of the region (paired with the rows), the model's resource sets;
-- `used` collects the names of the resources the rows use. Returns { use, bound, limit, list, floor,
-- sig, cut, rows }: sig[i] is row i's resources ("V1", "L+V" ...) for the pipe map, cut[i] the same
-- with cycles ("L 1, V 1") for --rows; or nil, a message.
local function analyse(rows, ins, isa, sets, uops, width, where, used)
  local use, floor_use, sig, cut = {}, {}, {}, {}
  for i, row in ipairs(rows) do
    local u, err = P.decompose(row.p, sets)
    if not u then
      return nil, where .. ": llvm-mca's pressure row '" .. row.text .. "' is no sum of the model's resources ("
        .. err .. "): a ProcResGroup missing from tools/census/models.lua?"
    end
    local c = K.classify(ins[i].text, isa)
    local names, parts = {}, {}
    for _, s in ipairs(sets) do
      local x = u[s.key]
      if x then
        use[s.key] = (use[s.key] or 0) + x
        if c.load or c.store or c.op == "fma" then floor_use[s.key] = (floor_use[s.key] or 0) + x end
        names[#names + 1] = s.name
        used[s.name] = true
        parts[#parts + 1] = s.name .. " " .. (x == math.floor(x) and C.int(x) or string.format("%.2f", x))
      end
    end
    table.sort(names)
    table.sort(parts)
    sig[i], cut[i] = table.concat(names, "+"), table.concat(parts, ", ")
  end
  local r = { use = use, sig = sig, cut = cut, rows = rows }
  r.bound, r.limit, r.list = P.bound(use, sets, uops, width)
  r.floor = P.bound(floor_use, sets)
  return r
end

-- The stamp's instructions of a region when they pair one to one with llvm-mca's rows (the same
-- count: each tagged line is one instruction; the mnemonics may differ by alias, `vcmpps k, a, b, 3`
-- is vcmpunordps), else nil.
local function paired(ins, sp, rows)
  if #rows ~= sp.last - sp.first + 1 then return nil end
  local list = {}
  for j = sp.first, sp.last do list[#list + 1] = ins[j] end
  return list
end

-- llvm-mca on a preprocessed stamp (or probe), one model: { [span name] = analysis (analyse, with
-- cycles: llvm-mca's cycles per iteration, and ins: the span's instructions) } for the spans
-- { name, first, last } of `ins`; infos[i] keeps the model's resources for CENSUS.md. Or nil, a message.
local function measure(s_out, isa, model, spans, ins, exts, infos, i, label)
  local regs, tables = T.mca(s_out, isa, model, exts)
  local res = P.resources(tables)
  local short = function(name) return Mo.short_name(model, name) end
  local sets = P.resource_sets(res, model, short)
  local rows = P.parse_tables(tables, #res.units)
  infos[i] = infos[i] or { res = res, sets = sets, width = nil, used = {}, short = short }
  local out = {}
  for _, sp in ipairs(spans) do
    local rg, rr = regs[sp.name], rows[sp.name]
    if not rg or not rg.cycles or not rr then
      return nil, label .. ": llvm-mca (" .. model.cpu .. ") has no region " .. sp.name
    end
    local where = label .. " " .. sp.name .. " (" .. model.short .. ")"
    local span_ins = paired(ins, sp, rr)
    if not span_ins then
      return nil, where .. ": " .. C.int(sp.last - sp.first + 1) .. " tagged instructions, llvm-mca lists "
        .. C.int(#rr)
    end
    local a, err = analyse(rr, span_ins, isa, sets, rg.uops, rg.width, where, infos[i].used)
    if not a then return nil, err end
    a.cycles, a.ins = rg.cycles, span_ins
    infos[i].width = infos[i].width or rg.width
    out[sp.name] = a
  end
  return out
end

-- One stamp's record: counts, bytes, extensions, registers, frame, llvm-mca per model, main loop.
local function census_stamp(root, row, infos)
  local src = root .. "/generated/" .. row.file
  local text = C.read_file(src)
  if not text then die("cannot read " .. src) end
  local ins, regions = K.parse(text)
  local obj = T.tmpdir() .. "/stamp.o"
  local ok, out = T.assemble(root, row.isa, src, row.asflags, obj)
  if not ok then die(row.symbol .. " does not assemble with " .. row.asflags .. ": " .. out) end
  local code, ro = T.code_bytes(row.isa, obj, row.symbol)
  local exts = T.required_exts(root, row.isa, src, row.asflags, T.tmpdir() .. "/trial.o")
  local g, v, k = K.registers(ins, row.isa)
  local saved, stack = K.frame(ins, row.isa)
  local st = { row = row, n = K.count(ins, row.isa), code = code, ro = ro, exts = exts, gpr = g, vec = v, mask = k,
               saved = saved, stack = stack, regions = regions, ins = ins, mca = {} }
  local s_out = T.mca_source(root, row.isa, src)
  -- the regions llvm-mca reports: the marked loops, or the whole function when none is marked
  local spans = {}
  for _, r in ipairs(regions) do spans[#spans + 1] = { name = r.name, first = r.first, last = r.last } end
  if #spans == 0 then spans[1] = { name = "(whole)", first = 1, last = #ins } end
  for i, model in ipairs(T.MODELS[row.isa]) do
    infos[row.isa] = infos[row.isa] or {}
    local err
    st.mca[i], err = measure(s_out, row.isa, model, spans, ins, exts, infos[row.isa], i, row.symbol)
    if not st.mca[i] then die(err) end
  end
  st.main, st.main_n = K.main_region(ins, row.isa, regions)
  return st
end

-- A loop of `lines` (assembly text, one instruction per line) on the model `short` of `isa`, as the
-- census measures a marked loop: its analysis (cycles, bound, limit, floor, list: see analyse), or
-- nil, a message. For tests (tests/census_test.sh).
function M.probe(isa, short, lines, bf16)
  local model
  for _, m in ipairs(T.MODELS[isa]) do
    if m.short == short then model = m end
  end
  if not model then return nil, "no model " .. tostring(short) .. " for " .. tostring(isa) end
  local ins = {}
  for _, l in ipairs(lines) do ins[#ins + 1] = { text = l } end
  local s = T.tmpdir() .. "/probe.s"
  local f = assert(io.open(s, "w"))
  f:write((isa == "x86_64" and ".intel_syntax noprefix\n" or "") .. "# LLVM-MCA-BEGIN probe\n"
    .. table.concat(lines, "\n") .. "\n# LLVM-MCA-END probe\n")
  f:close()
  local out, err = measure(s, isa, model, { { name = "probe", first = 1, last = #ins } }, ins, bf16 and "bf16" or "",
                           {}, 1, "probe")
  if not out then return nil, err end
  return out.probe
end

-- One stamp's record by symbol (as the census makes it: see census_stamp), for tests.
function M.stamp(root, symbol)
  for _, row in ipairs(manifest(root)) do
    if row.symbol == symbol then return census_stamp(root, row, {}) end
  end
  return nil
end

-- Entry point: the exit status (0 done, 1 when --check finds FILE stale; bad input exits 2).
function M.main(argv)
  local root, out, check, only, pattern, rows_report = ".", nil, false, nil, nil, false
  local i = 1
  while i <= #argv do
    local a = argv[i]
    if a == "--root" then root = argv[i + 1]; i = i + 1
    elseif a == "--out" then out = argv[i + 1]; i = i + 1
    elseif a == "--check" then check = true
    elseif a == "--stamp" then only = argv[i + 1]; i = i + 1
    elseif a == "--only" then pattern = argv[i + 1]; i = i + 1
    elseif a == "--rows" then rows_report = true
    elseif a == "--help" then
      print("usage: census.lua --root DIR [--out FILE] [--check] [--only LUAPATTERN] [--stamp SYMBOL] [--rows]")
      return 0
    else die("unknown argument '" .. tostring(a) .. "' (see --help)") end
    i = i + 1
  end
  if not root then die("--root needs a directory") end
  out = out or (root .. "/generated/CENSUS.md")
  local version = T.mca_version()
  local rows = manifest(root)
  local stamps, infos = {}, {}
  for _, row in ipairs(rows) do
    if (not only or row.symbol == only) and (not pattern or row.symbol:match(pattern)) then
      stamps[#stamps + 1] = census_stamp(root, row, infos)
    end
  end
  if #stamps == 0 then die("no stamp in generated/MANIFEST matches " .. tostring(only or pattern)) end
  T.cleanup()
  if rows_report then
    D.rows_report(stamps, infos)
    return 0
  end
  if only then
    D.regions_report(stamps[1])
    return 0
  end
  local text = D.render(stamps, version, infos)
  if check then
    local old = C.read_file(out)
    if old ~= text then
      io.stderr:write("census: " .. out .. " is stale: run `make census` (or lua5.4 tools/census.lua "
        .. "--root .) and commit it\n")
      return 1
    end
    print("census: " .. out .. " is fresh (" .. C.int(#stamps) .. " stamps)")
    return 0
  end
  local tmp = out .. ".tmp"
  local f = io.open(tmp, "w")
  if not f then die("cannot write " .. tmp) end
  f:write(text)
  f:close()
  local ok, err = os.rename(tmp, out)
  if not ok then die("cannot rename " .. tmp .. ": " .. tostring(err)) end
  print("census: wrote " .. out .. " (" .. C.int(#stamps) .. " stamps)")
  return 0
end

if arg and arg[0] and arg[0]:match("census%.lua$") then
  os.exit(M.main(arg))
end

return M
