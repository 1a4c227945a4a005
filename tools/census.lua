-- tools/census.lua: the stamp census, generated/CENSUS.md (`make census`; CI fails when stale).
--
-- For every stamp in generated/MANIFEST:
--   * instructions by class (load, store, FMA, shuffle, convert, branch, other), counted from the
--     stamp's own tagged instruction lines (a load-op instruction counts as a load and as its op);
--   * code bytes (the function's ELF symbol size) and constant bytes (its read-only section),
--     from the stamp assembled with its manifest flags;
--   * registers used (GPR, vector, mask), callee-saved registers saved and stack bytes, from the
--     instructions and the frame op [0];
--   * the ISA extensions it requires: each extension of its variant is removed in turn from the
--     assembler's -march and the stamp assembled again; the ones whose removal fails are listed;
--   * llvm-mca's predicted cycles per iteration of each region the generator marked
--     (LLVM-MCA-BEGIN/END: the innermost full-tile loops), on two models per ISA, next to the ideal
--     bound of that loop: max(loads / L, stores / S, FMAs / F) with the model's per-cycle widths.
-- One table row per stamp, with its main loop (the marked region with the most FMAs, then the
-- most instructions); `--stamp SYMBOL` prints every region of one stamp.
--
-- Usage: lua5.4 tools/census.lua --root DIR [--out FILE] [--check] [--only LUAPATTERN] [--stamp SYMBOL]
--   --check: exit 1 (and say so) when FILE differs from what would be written.
--   --only: only the stamps whose symbol matches (a partial census, for tests).
-- Needs gcc, aarch64-linux-gnu-gcc, binutils for both, and llvm-mca-16 (LLVM_MCA overrides).
--
-- The modules, by job:
--   census/count.lua      a stamp's text: instruction classes, registers, frame, main loop, bound
--   census/toolchain.lua  the assembler (bytes, required extensions) and llvm-mca; the models
--   census/markdown.lua   CENSUS.md, and the --stamp report
-- This file owns the options, the MANIFEST rows, one record per stamp, and --check / --out.

local SELF = ((debug.getinfo(1, "S") or {}).source or ""):match("^@(.*)$") or "tools/census.lua"
local TOOLS_DIR = SELF:match("^(.*)/[^/]*$") or "."
-- the modules beside this file; compat.lua from the generator's folder (one copy, not two)
package.path = TOOLS_DIR .. "/?.lua;" .. TOOLS_DIR .. "/../gen/?.lua;" .. package.path
local C = require("compat")
local K = require("census.count")
local T = require("census.toolchain")
local D = require("census.markdown")

local M = {}

-- The library (tests/census_test.sh): the models and the counting functions.
M.MODELS, M.parse, M.count, M.registers, M.frame = T.MODELS, K.parse, K.count, K.registers, K.frame

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

-- One stamp's record: counts, bytes, extensions, registers, frame, llvm-mca per model, main loop.
local function census_stamp(root, row)
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
  local uses_bf16 = exts:find("bf16") ~= nil
  for i, model in ipairs(T.MODELS[row.isa]) do st.mca[i] = T.mca(root, row.isa, src, model, uses_bf16) end
  st.main, st.main_n = K.main_region(ins, row.isa, regions)
  return st
end

-- Entry point: the exit status (0 done, 1 when --check finds FILE stale; bad input exits 2).
function M.main(argv)
  local root, out, check, only, pattern = ".", nil, false, nil, nil
  local i = 1
  while i <= #argv do
    local a = argv[i]
    if a == "--root" then root = argv[i + 1]; i = i + 1
    elseif a == "--out" then out = argv[i + 1]; i = i + 1
    elseif a == "--check" then check = true
    elseif a == "--stamp" then only = argv[i + 1]; i = i + 1
    elseif a == "--only" then pattern = argv[i + 1]; i = i + 1
    elseif a == "--help" then
      print("usage: census.lua --root DIR [--out FILE] [--check] [--only LUAPATTERN] [--stamp SYMBOL]")
      return 0
    else die("unknown argument '" .. tostring(a) .. "' (see --help)") end
    i = i + 1
  end
  if not root then die("--root needs a directory") end
  out = out or (root .. "/generated/CENSUS.md")
  local version = T.mca_version()
  local rows = manifest(root)
  local stamps = {}
  for _, row in ipairs(rows) do
    if (not only or row.symbol == only) and (not pattern or row.symbol:match(pattern)) then
      stamps[#stamps + 1] = census_stamp(root, row)
    end
  end
  if #stamps == 0 then die("no stamp in generated/MANIFEST matches " .. tostring(only or pattern)) end
  T.cleanup()
  if only then
    D.regions_report(stamps[1])
    return 0
  end
  local text = D.render(stamps, version)
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
