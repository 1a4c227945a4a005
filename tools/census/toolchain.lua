-- tools/census/toolchain.lua: the external tools the census runs on a stamp: the assembler (code
-- and constant bytes from the object's symbol and sections; the ISA extensions it requires),
-- and llvm-mca on the regions the generator marked, on the models of MODELS (models.lua). Also the census's
-- error exit (die) and its temporary folder.
-- Needs gcc, aarch64-linux-gnu-gcc, binutils for both, and llvm-mca-16 (LLVM_MCA overrides).

local C = require("compat")

local T = {}

local MCA = os.getenv("LLVM_MCA") or "llvm-mca-16"

-- The models (models.lua): the CPUs llvm-mca runs and their resource groups.
T.MODELS = require("census.models").MODELS

-- Extensions a variant may require, as the assembler names them.
local X86_EXT = { "avx2", "fma", "avx512f", "avx512bw", "avx512vl", "avx512_bf16", "avx512_vnni" }
local A64_EXT = { "simd", "bf16", "dotprod" }

---------------------------------------------------------------------------------------------
-- Shell helpers, the error exit

local sh_quote, run = C.sh_quote, C.run -- compat.lua: both interpreters

-- A census that cannot be made: one line on stderr, exit status 2.
local function die(msg)
  io.stderr:write("census: " .. msg .. "\n")
  os.exit(2)
end
T.die = die

---------------------------------------------------------------------------------------------
-- Tools: assemble, extensions, llvm-mca

local TMP

local function tmpdir()
  if not TMP then
    local ok, out = run("mktemp -d")
    if not ok then die("mktemp -d failed: " .. out) end
    TMP = out:gsub("%s+$", "")
  end
  return TMP
end

-- The assembler driver, nm and size of an ISA.
local function tools(isa)
  if isa == "x86_64" then return "gcc", "nm", "size" end
  return "aarch64-linux-gnu-gcc", "aarch64-linux-gnu-nm", "aarch64-linux-gnu-size"
end

-- Assemble a stamp with `flags`: ok, the driver's output.
local function assemble(root, isa, src, flags, obj)
  local cc = tools(isa)
  return run(string.format("%s %s -c -I%s %s -o %s", cc, flags, sh_quote(root .. "/generated"), sh_quote(src),
    sh_quote(obj)))
end

-- The function's ELF symbol size and the object's read-only bytes.
local function code_bytes(isa, obj, symbol)
  local _, nm, size = tools(isa)
  local ok, out = run(nm .. " -S " .. sh_quote(obj))
  if not ok then die("nm failed on " .. obj .. ": " .. out) end
  local code
  for line in out:gmatch("[^\n]+") do
    local sz, name = line:match("^%x+ (%x+) %a (%S+)$")
    if name == symbol then code = tonumber(sz, 16) end
  end
  if not code then die("no sized symbol " .. symbol .. " in " .. obj) end
  local ok2, out2 = run(size .. " -A " .. sh_quote(obj))
  if not ok2 then die("size failed: " .. out2) end
  local ro = 0
  for line in out2:gmatch("[^\n]+") do
    local sz = line:match("^%.rodata%S*%s+(%d+)")
    if sz then ro = ro + tonumber(sz) end
  end
  return code, ro
end

-- The extensions whose removal from the variant's -march makes the stamp fail to assemble.
local function required_exts(root, isa, src, asflags, obj)
  local req = {}
  if isa == "x86_64" then
    local march = asflags:match("%-Wa,%-march=(%S+)")
    if not march then return "?" end
    for _, e in ipairs(X86_EXT) do
      if march:find("+" .. e, 1, true) then
        local ok = assemble(root, isa, src, "-Wa,-march=" .. march .. "+no" .. e, obj)
        if not ok then req[#req + 1] = e end
      end
    end
  else
    local march = asflags:match("%-march=(%S+)")
    if not march then return "?" end
    for _, e in ipairs(A64_EXT) do
      local ok = assemble(root, isa, src, "-march=" .. march .. "+no" .. e, obj)
      if not ok then req[#req + 1] = e end
    end
  end
  return #req > 0 and table.concat(req, " ") or "base"
end

-- The stamp preprocessed for llvm-mca, its region markers kept: the path of the .s file (made once
-- per stamp: the same for every model).
local function mca_source(root, isa, src)
  local dir = tmpdir()
  local text = assert(C.read_file(src))
  -- the markers are comments, which the preprocessor drops: carry them through as words
  text = text:gsub("\n%s*// LLVM%-MCA%-(%u+) (%S+)", "\nFKMCA_%1 %2")
  local s_in, s_out = dir .. "/mca.S", dir .. "/mca.s"
  local f = assert(io.open(s_in, "w"))
  f:write(text)
  f:close()
  local cc = tools(isa)
  local ok, out = run(string.format("%s -E -P -x assembler-with-cpp -I%s %s -o %s", cc,
    sh_quote(root .. "/generated"), sh_quote(s_in), sh_quote(s_out)))
  if not ok then die("preprocessing " .. src .. ": " .. out) end
  local pre = assert(C.read_file(s_out)):gsub("FKMCA_(%u+) (%S+)", "# LLVM-MCA-%1 %2")
  f = assert(io.open(s_out, "w"))
  f:write(pre)
  f:close()
  return s_out
end

-- llvm-mca on a preprocessed stamp (mca_source), one model (exts: the stamp's required extensions,
-- required_exts; those the model's CPU lacks are added with -mattr): { [region] = { cycles, uops, width } }
-- (cycles and micro-ops per iteration over 100 iterations, the dispatch width), and the text of
-- its instruction tables (-instruction-tables: per instruction, the cycles on each unit).
local function mca(s_out, isa, model, exts)
  local attr = ""
  for _, l in ipairs(model.lacks or {}) do
    if (" " .. exts .. " "):find(" " .. l.ext .. " ", 1, true) then
      attr = attr .. (attr == "" and " -mattr=" or ",") .. "+" .. l.attr
    end
  end
  local triple = isa == "x86_64" and "x86_64-linux-gnu" or "aarch64-linux-gnu"
  local base = string.format("%s -mtriple=%s -mcpu=%s%s", MCA, triple, model.cpu, attr)
  local ok2, res = run(base .. " -iterations=100 -all-views=false -summary-view " .. sh_quote(s_out))
  if not ok2 then die("llvm-mca (" .. model.cpu .. ") on " .. s_out .. ": " .. res:sub(1, 400)) end
  local regions, name, it = {}, nil, nil
  for line in res:gmatch("[^\n]+") do
    local r = line:match("^%[%d+%] Code Region %- (%S+)")
    if r then name = r end
    local key = name or "(whole)"
    local n = line:match("^Iterations:%s+(%d+)")
    if n then it = tonumber(n); regions[key] = {} end
    local tc = line:match("^Total Cycles:%s+(%d+)")
    if tc then regions[key].cycles = tonumber(tc) / it end
    local tu = line:match("^Total uOps:%s+(%d+)")
    if tu then regions[key].uops = tonumber(tu) / it end
    local dw = line:match("^Dispatch Width:%s+(%d+)")
    if dw then regions[key].width = tonumber(dw) end
  end
  local ok3, tables = run(base .. " -instruction-tables " .. sh_quote(s_out))
  if not ok3 then
    die("llvm-mca -instruction-tables (" .. model.cpu .. ") on " .. s_out .. ": " .. tables:sub(1, 400))
  end
  return regions, tables
end

local function mca_version()
  local ok, out = run(MCA .. " --version")
  if not ok then die(MCA .. " not found (apt-get install llvm-16, or set LLVM_MCA): " .. out) end
  return out:match("LLVM version ([%d%.]+)") or "?"
end

-- Remove the temporary folder, if one was made.
function T.cleanup()
  if TMP then run("rm -rf " .. sh_quote(TMP)) end
  TMP = nil
end

T.tmpdir, T.assemble, T.code_bytes, T.required_exts, T.mca_source, T.mca, T.mca_version =
  tmpdir, assemble, code_bytes, required_exts, mca_source, mca, mca_version

return T
