-- tools/census/models.lua: the llvm-mca-16 models the census runs, per ISA, and what the census
-- needs of each beyond llvm-mca's own output: the model's resource groups (ProcResGroup), copied
-- from the scheduling model's .td source, since llvm-mca prints units, not groups. The units and
-- their counts (ProcResource<N>) come from llvm-mca's "Resources:" list at run time; a group
-- whose resources llvm-mca does not list is ignored, and a pressure row no resource explains is
-- an error (pipes.lua), so a group missing here shows up as a failure, not as a wrong bound.
--
--   prefixes  the models' resource name prefixes, dropped in the census's names (x86 ports: p0..p9)
--   td      the scheduling model's source (llvm/lib/Target/...), for the reader
--   groups  { name, kinds }: each ProcResGroup of the .td, by its resources' names (no prefix)
--   lacks   extensions the model's CPU has not, { ext = the assembler's name, attr = llvm's }: a stamp
--           needing one runs with -mattr=+<attr> (its instructions timed as the model's defaults)

local M = {}

local SKX_GROUPS = {
  { name = "p01", kinds = { "p0", "p1" } }, { name = "p23", kinds = { "p2", "p3" } },
  { name = "p237", kinds = { "p2", "p3", "p7" } }, { name = "p04", kinds = { "p0", "p4" } },
  { name = "p05", kinds = { "p0", "p5" } }, { name = "p06", kinds = { "p0", "p6" } },
  { name = "p15", kinds = { "p1", "p5" } }, { name = "p16", kinds = { "p1", "p6" } },
  { name = "p56", kinds = { "p5", "p6" } }, { name = "p015", kinds = { "p0", "p1", "p5" } },
  { name = "p056", kinds = { "p0", "p5", "p6" } }, { name = "p0156", kinds = { "p0", "p1", "p5", "p6" } },
}

local ICX_GROUPS = {}
for _, g in ipairs(SKX_GROUPS) do ICX_GROUPS[#ICX_GROUPS + 1] = g end
ICX_GROUPS[#ICX_GROUPS + 1] = { name = "p49", kinds = { "p4", "p9" } }
ICX_GROUPS[#ICX_GROUPS + 1] = { name = "p78", kinds = { "p7", "p8" } }

M.MODELS = {
  x86_64 = {
    { cpu = "skylake-avx512", short = "SKX", prefixes = { "SKXPort", "SKX" }, td = "X86/X86SchedSkylakeServer.td",
      groups = SKX_GROUPS, vector = "p015",
      lacks = { { ext = "avx512_vnni", attr = "avx512vnni", what = "AVX512-VNNI", op = "VPDPBUSD" } } },
    { cpu = "icelake-server", short = "ICX", prefixes = { "ICXPort", "ICX" }, td = "X86/X86SchedIceLake.td",
      groups = ICX_GROUPS, vector = "p015" },
  },
  aarch64 = {
    -- Apple A14 is llvm-mca-16's Cyclone model: no ProcResGroup, sub-resources by `Super` (a use of
    -- VM also uses V, as llvm-mca simulates it: VM is 2 of the 3 V pipes)
    { cpu = "apple-a14", short = "A14", prefixes = { "CyUnit" }, td = "AArch64/AArch64SchedCyclone.td",
      groups = {}, vector = "V",
      lacks = { { ext = "bf16", attr = "bf16", what = "BF16", op = "BFDOT" } } },
    { cpu = "neoverse-n2", short = "N2", prefixes = { "N2Unit" }, td = "AArch64/AArch64SchedNeoverseN2.td",
      groups = {
        { name = "V", kinds = { "V0", "V1" } }, { name = "M", kinds = { "M0", "M1" } },
        { name = "L", kinds = { "L01", "L2" } }, { name = "I", kinds = { "S", "M0", "M1" } },
      }, vector = "V" },
  },
}

-- The census's name of a model's resource (llvm-mca's name less the prefix; x86 ports p0..p9),
-- and llvm-mca's name of one of the census's ("" when none).
function M.short_name(model, name)
  for _, p in ipairs(model.prefixes) do
    if name:sub(1, #p) == p then
      local rest = name:sub(#p + 1)
      if rest:match("^%d+$") then return "p" .. rest end
      return rest
    end
  end
  return name
end

function M.mca_name(model, short)
  local port = short:match("^p(%d+)$")
  if port and model.prefixes[1]:match("Port$") then return model.prefixes[1] .. port end
  return model.prefixes[1] .. short
end

return M
