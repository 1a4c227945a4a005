-- gen/header.lua: the generated C header (argument structs, prototypes, registry tables),
-- the shared assembly macro header, and the stamp manifest.

local EXT = require("extent")

local M = {}

-- CPU feature bits, one list for both ISAs. A trait (trait = true) is not an instruction set: a
-- property of the core a variant is tuned for (hwstream: its hardware prefetcher alone streams a
-- lone sequential read at the bound, AMD family 19h); any CPU with the variant's other features runs
-- the stamp, the runtime picks it only where the trait is detected (FK_CPU_TRAITS).
-- CHECK: keep in sync with runtime/fk_cpu.c (detection) and runtime/include/flashkern.h.
M.FEATURES = {
  { "avx2", 0 }, { "fma", 1 }, { "avx512f", 2 }, { "avx512bw", 3 }, { "avx512vl", 4 },
  { "avx512bf16", 5 }, { "avx512vnni", 6 }, { "hwstream", 7, trait = true },
  { "avxvnni", 8 }, { "f16c", 9 },
  { "asimd", 16 }, { "bf16", 17 }, { "i8mm", 18 }, { "dotprod", 19 },
}

local function feature_expr(list)
  local parts = {}
  for _, f in ipairs(list) do parts[#parts + 1] = "FK_CPU_" .. f:upper() end
  return table.concat(parts, " | ")
end

local KIND = { i64 = "FK_FIELD_I64", f32 = "FK_FIELD_F32", ptr = "FK_FIELD_PTR" }
-- CHECK: the element of every pointer C type of gen/dsl.lua (CTYPES); appended, the values stay
local ELEM = { f32 = "FK_ELEM_F32", bf16 = "FK_ELEM_BF16", i32 = "FK_ELEM_I32", u64 = "FK_ELEM_U64",
               i8 = "FK_ELEM_I8", u8 = "FK_ELEM_U8" }
local DIR = { ["in"] = "FK_DIR_IN", out = "FK_DIR_OUT", inout = "FK_DIR_INOUT", scratch = "FK_DIR_SCRATCH" }
local GATE = { none = "FK_GATE_NONE", calls = "FK_GATE_CALLS", sequence = "FK_GATE_SEQUENCE",
               stream = "FK_GATE_STREAM" }

-- leaves: list of { leaf, path, doc, forms = { { name, id, fields, size, doc } } }
-- stamps: list of { id (form id), isa, variant, tier, symbol, features }
function M.leaves_h(leaves, stamps, banner)
  local o = {}
  local function w(s) o[#o + 1] = s end
  w("/* " .. banner .. " */")
  w("/* The leaf registry: argument structs, stamp prototypes and the tables every harness,")
  w("   the runtime and the bench are built from (templates/registry.lua, ORDER LEAF). */")
  w("#ifndef FK_LEAVES_H")
  w("#define FK_LEAVES_H")
  w("")
  w("#include <stddef.h>")
  w("#include <stdint.h>")
  w("")
  w("/* A compile-time check the header makes of itself in C99, C11 and C++11 on: C11's _Static_assert,")
  w("   C++11's static_assert, else a typedef of an array of size -1 when cond fails, named after the line")
  w("   (C99 has neither keyword, and -pedantic warns on _Static_assert there). A host may define it first. */")
  w("#ifndef FK_STATIC_ASSERT")
  w("#if defined(__cplusplus) && __cplusplus >= 201103L")
  w("#define FK_STATIC_ASSERT(cond, msg) static_assert(cond, msg)")
  w("#elif defined(__STDC_VERSION__) && __STDC_VERSION__ >= 201112L")
  w("#define FK_STATIC_ASSERT(cond, msg) _Static_assert(cond, msg)")
  w("#else")
  w("#define FK_STATIC_ASSERT_NAME_(line) fk_static_assert_##line")
  w("#define FK_STATIC_ASSERT_NAME(line) FK_STATIC_ASSERT_NAME_(line)")
  w("#define FK_STATIC_ASSERT(cond, msg) typedef char FK_STATIC_ASSERT_NAME(__LINE__)[(cond) ? 1 : -1]")
  w("#endif")
  w("#endif")
  w("")
  w("/* The stamps are C functions: extern \"C\" lets a C++ host call them by their own symbols. */")
  w("#ifdef __cplusplus")
  w("extern \"C\" {")
  w("#endif")
  w("")
  w("/* CPU features a variant needs (CHECK: keep in sync with gen/header.lua, runtime/fk_cpu.c). */")
  local traits = {}
  for _, f in ipairs(M.FEATURES) do
    w(string.format("#define FK_CPU_%-12s (UINT64_C(1) << %d)", f[1]:upper(), f[2]))
    if f.trait then traits[#traits + 1] = "FK_CPU_" .. f[1]:upper() end
  end
  w("/* The traits among them: what a variant is tuned for, not what its stamps need to run. */")
  w("#define FK_CPU_TRAITS (" .. (#traits > 0 and table.concat(traits, " | ") or "UINT64_C(0)") .. ")")
  w("")
  w("/* The arithmetic of the extents in FK_FIELDS_<id> (int64_t; fk_leaf_check counts overflows). */")
  w("#ifndef FK_EXT_ADD")
  w("#define FK_EXT_ADD(x, y) ((x) + (y))")
  w("#define FK_EXT_SUB(x, y) ((x) - (y))")
  w("#define FK_EXT_MUL(x, y) ((x) * (y))")
  w("#define FK_EXT_DIV(x, y) ((x) / (y))")
  w("#define FK_EXT_NEG(x) (-(x))")
  w("#endif")
  w("")
  w("enum fk_field_kind { FK_FIELD_I64, FK_FIELD_F32, FK_FIELD_PTR };")
  w("enum fk_field_elem { FK_ELEM_NONE, FK_ELEM_F32, FK_ELEM_BF16, FK_ELEM_I32, FK_ELEM_U64, FK_ELEM_I8, FK_ELEM_U8 };")
  w("/* Bytes of one element of a pointer field (0: not a pointer). */")
  w("#define FK_ELEM_BYTES(e) ((e) == FK_ELEM_U64 ? 8 : (e) == FK_ELEM_F32 || (e) == FK_ELEM_I32 ? 4 : " ..
    "(e) == FK_ELEM_BF16 ? 2 : (e) == FK_ELEM_I8 || (e) == FK_ELEM_U8 ? 1 : 0)")
  w("/* FK_DIR_SCRATCH: written and read by the leaf within one call, meaningless after it. */")
  w("enum fk_field_dir { FK_DIR_NONE, FK_DIR_IN, FK_DIR_OUT, FK_DIR_INOUT, FK_DIR_SCRATCH };")
  w("/* How a leaf's fixtures are run (FK_LEAVES): independent calls, sequences of calls on the leaf's own")
  w("   state, streams of frames ending in a flush; none: the leaf's accuracy is proven another way. */")
  w("enum fk_fixture_gate { FK_GATE_NONE, FK_GATE_CALLS, FK_GATE_SEQUENCE, FK_GATE_STREAM };")
  w("/* A form's fixture evidence (FK_FORMS): its own manifests; its base form's, run through it (arg: the")
  w("   base form's id); exempt (arg: the reason, from the template). */")
  w("enum fk_form_fixtures { FK_FX_OWN, FK_FX_VIA, FK_FX_EXEMPT };")
  w("/* The tiers a form is stamped in (FK_FORMS), as bits. */")
  w("enum { FK_TIERS_EXACT = 1, FK_TIERS_FAST = 2 };")
  for _, leaf in ipairs(leaves) do
    w("")
    w("/* ---- " .. leaf.leaf .. " (" .. leaf.path .. "): " .. leaf.doc .. " ---- */")
    for _, e in ipairs(leaf.exports) do
      if type(e.value) ~= "table" then w(string.format("#define FK_%s_%s %d", leaf.leaf:upper(), e.key, e.value)) end
    end
    for _, form in ipairs(leaf.forms) do
      w("")
      w("typedef struct " .. form.id .. "_args {")
      for _, f in ipairs(form.fields) do
        local decl = f.ctype:match("%*$") and (f.ctype .. f.name) or (f.ctype .. " " .. f.name)
        local notes = {}
        if f.doc then notes[#notes + 1] = f.doc end
        if f.extent_src then notes[#notes + 1] = "extent: " .. f.extent_src end
        if f.data_extent then notes[#notes + 1] = "extent: " .. f.data_extent end
        if f.alias then notes[#notes + 1] = "may be " .. table.concat(f.alias, " or ") end
        local doc = #notes > 0 and ("  /* " .. table.concat(notes, "; ") .. " */") or ""
        w("  " .. decl .. ";" .. doc)
      end
      w("} " .. form.id .. "_args;")
      for _, f in ipairs(form.fields) do
        w(string.format("FK_STATIC_ASSERT(offsetof(%s_args, %s) == %d, \"%s: stamps load %s at +%d\");",
          form.id, f.name, f.offset, form.id, f.name, f.offset))
      end
      w(string.format("FK_STATIC_ASSERT(sizeof(%s_args) == %d, \"%s: struct size\");", form.id, form.size, form.id))
      w("#define FK_FIELDS_" .. form.id:sub(4) .. "(X) \\")
      for i, f in ipairs(form.fields) do
        local extent = f.extent and EXT.c(f.extent) or (f.data_extent and "-1" or "0")
        w(string.format("  X(%s, %s, %d, %s, %s, %s, %s, \"%s\")%s", form.id:sub(4), f.name, f.offset, KIND[f.kind],
          f.elem and ELEM[f.elem] or "FK_ELEM_NONE", f.dir and DIR[f.dir] or "FK_DIR_NONE", extent,
          table.concat(f.alias or {}, "|"), i < #form.fields and " \\" or ""))
      end
    end
  end
  w("")
  w("/* Every leaf, in registry order: X(leaf, template, fixture gate, fast-tier tolerance class or \"\"). */")
  w("#define FK_LEAVES(X) \\")
  for i, leaf in ipairs(leaves) do
    w(string.format("  X(%s, \"%s\", %s, \"%s\")%s", leaf.leaf, leaf.path, GATE[leaf.fixture_gate],
      leaf.fast_tolerance or "", i < #leaves and " \\" or ""))
  end
  w("")
  w("/* Every form: X(leaf, form, id, tiers (FK_TIERS_* bits), fixtures (FK_FX_*), its argument: the base")
  w("   form's id (FK_FX_VIA), the reason (FK_FX_EXEMPT) or \"\"). Its argument table: FK_FIELDS_<id>(X),")
  w("   X(id, field, offset, kind, element, direction, extent, alias): the extent in elements from the")
  w("   pointer on, a C expression over `a` (const fk_<id>_args *), -1 where the data decides it, 0 for")
  w("   scalars; alias, the pointer fields an output may be, '|'-separated. */")
  w("#define FK_FORMS(X) \\")
  local nforms, k = 0, 0
  for _, leaf in ipairs(leaves) do nforms = nforms + #leaf.forms end
  for _, leaf in ipairs(leaves) do
    for _, form in ipairs(leaf.forms) do
      k = k + 1
      local tiers = {}
      if form.tiers.exact then tiers[#tiers + 1] = "FK_TIERS_EXACT" end
      if form.tiers.fast then tiers[#tiers + 1] = "FK_TIERS_FAST" end
      local fx = form.fixtures
      local kind, farg = "FK_FX_OWN", ""
      if fx.via then kind, farg = "FK_FX_VIA", leaf.leaf .. "_" .. fx.via end
      if fx.exempt then kind, farg = "FK_FX_EXEMPT", fx.exempt:gsub("\\", "\\\\"):gsub('"', '\\"') end
      w(string.format("  X(%s, %s, %s, %s, %s, \"%s\")%s", leaf.leaf, form.name, form.id:sub(4),
        table.concat(tiers, " | "), kind, farg, k < nforms and " \\" or ""))
    end
  end
  for _, isa in ipairs({ "aarch64", "x86_64" }) do
    local mine = {}
    for _, st in ipairs(stamps) do if st.isa == isa then mine[#mine + 1] = st end end
    w("")
    w("/* Stamps for " .. isa .. ": X(id, variant, tier, symbol, features). */")
    w("#define FK_STAMPS_" .. isa:upper() .. "(X) \\")
    for i, st in ipairs(mine) do
      w(string.format("  X(%s, %s, %s, %s, %s)%s", st.id:sub(4), st.variant, st.tier, st.symbol,
        feature_expr(st.features), i < #mine and " \\" or ""))
    end
    w("")
    w("")
    w("/* The stamps of " .. isa .. ", to call directly with the form's argument struct when linking")
    w("   libflashkern.a (libflashkern.so keeps them hidden: resolve them with fk_leaf_resolve). */")
    w("#if defined(__" .. isa .. "__)")
    w("#define FK_STAMPS_HOST(X) FK_STAMPS_" .. isa:upper() .. "(X)")
    for _, st in ipairs(mine) do w("void " .. st.symbol .. "(const " .. st.id .. "_args *a);") end
    w("#endif")
  end
  w("")
  w("#ifdef __cplusplus")
  w("} /* extern \"C\" */")
  w("#endif")
  w("")
  w("#endif /* FK_LEAVES_H */")
  return table.concat(o, "\n") .. "\n"
end

function M.asm_h(banner)
  return table.concat({
    "/* " .. banner .. " */",
    "/* The one macro header of every stamp: symbol, section and note differences between ELF",
    "   (Linux) and Mach-O (macOS), and the AArch64 branch-target landing pad. */",
    "#ifndef FK_ASM_H",
    "#define FK_ASM_H",
    "",
    "#if defined(__APPLE__)",
    "#define FK_SYM(s) _##s",
    "#define FK_L(s) L##s",
    "#define FK_TEXT .text",
    "#define FK_RODATA .section __TEXT,__const",
    "#define FK_HIDDEN(s) .private_extern FK_SYM(s)",
    "#define FK_TYPE_FUNC(s)",
    "#define FK_SIZE(s)",
    "#define FK_PAGE(s) s@PAGE",
    "#define FK_PAGEOFF(s) s@PAGEOFF",
    "#define FK_GNU_STACK",
    "#define FK_AARCH64_FEATURE_NOTE",
    "#else",
    "#define FK_SYM(s) s",
    "#define FK_L(s) .L##s",
    "#define FK_TEXT .text",
    "#define FK_RODATA .section .rodata",
    "#define FK_HIDDEN(s) .hidden s",
    "#define FK_TYPE_FUNC(s) .type s, %function",
    "#define FK_SIZE(s) .size s, .-s",
    "#define FK_PAGE(s) s",
    "#define FK_PAGEOFF(s) :lo12:s",
    "#define FK_GNU_STACK .section .note.GNU-stack, \"\", %progbits",
    "#if defined(__aarch64__)",
    "/* GNU property note: this object is BTI- and PAC-compatible (leaves never spill LR). */",
    "#define FK_AARCH64_FEATURE_NOTE \\",
    "  .pushsection .note.gnu.property, \"a\"; .balign 8; .long 4; .long 16; .long 5; \\",
    "  .asciz \"GNU\"; .long 0xc0000000; .long 4; .long 3; .long 0; .popsection",
    "#else",
    "#define FK_AARCH64_FEATURE_NOTE",
    "#endif",
    "#endif",
    "",
    "/* BTI c as its hint encoding, so Armv8.0 assemblers take it (a NOP before Armv8.5). */",
    "#define FK_BTI_C hint #34",
    "",
    "#endif /* FK_ASM_H */",
    "",
  }, "\n")
end

-- fk_tables.h: the constant tables templates export (twiddles, windows) as the stamps hold
-- them, for the contract models (tests/contract): never linked into the library.
function M.tables_h(leaves, banner)
  local o = { "/* " .. banner .. " */",
              "/* The constant tables of the stamps, as 32-bit words (f32 bit patterns), for the",
              " * contract models: the same numbers the stamps load. */",
              "#ifndef FK_TABLES_H", "#define FK_TABLES_H", "", "#include <stdint.h>" }
  for _, leaf in ipairs(leaves) do
    for _, e in ipairs(leaf.exports) do
      if type(e.value) == "table" then
        o[#o + 1] = ""
        o[#o + 1] = string.format("static const uint32_t FK_%s_%s[%d] = {", leaf.leaf:upper(), e.key, #e.value)
        for i = 1, #e.value, 8 do
          local row = {}
          for j = i, math.min(i + 7, #e.value) do row[#row + 1] = string.format("0x%08x", math.floor(e.value[j])) end
          o[#o + 1] = "  " .. table.concat(row, ", ") .. ","
        end
        o[#o + 1] = "};"
      end
    end
  end
  o[#o + 1] = ""
  o[#o + 1] = "#endif /* FK_TABLES_H */"
  return table.concat(o, "\n") .. "\n"
end

-- LEAVES.md: what every leaf computes and how each form is proven, from the templates (the README
-- points here instead of keeping a table by hand).
local GATE_DOC = { none = "none (each form says why)", calls = "independent calls",
                   sequence = "sequences of calls on the leaf's state", stream = "streams of frames, then the flush" }
function M.leaves_md(leaves, stamps, banner)
  local o = { "<!-- " .. banner .. " -->", "# Leaves and forms", "",
              "Written by `make gen` from `templates/` (each template's `doc`, tiers, fixture gate and each form's",
              "fixture evidence); the argument structs, extents and docs are in `fk_leaves.h`. Symbols read",
              "`fk_<leaf>_<form>__<isa>_<variant>_<tier>`.", "" }
  local function variants(leaf_forms, tier)
    local seen, list = {}, {}
    for _, st in ipairs(stamps) do
      if st.tier == tier and leaf_forms[st.id] and not seen[st.isa .. st.variant] then
        seen[st.isa .. st.variant] = true
        list[#list + 1] = st.variant
      end
    end
    return table.concat(list, ", ")
  end
  for _, leaf in ipairs(leaves) do
    local ids = {}
    for _, form in ipairs(leaf.forms) do ids[form.id] = true end
    o[#o + 1] = "## " .. leaf.leaf
    o[#o + 1] = ""
    o[#o + 1] = leaf.doc .. " (`" .. leaf.path .. "`)"
    o[#o + 1] = ""
    local tiers = "exact: " .. variants(ids, "exact")
    local fast = variants(ids, "fast")
    if fast ~= "" then tiers = tiers .. "; fast: " .. fast .. " (tolerance class `" .. leaf.fast_tolerance .. "`)" end
    o[#o + 1] = "Variants: " .. tiers .. ". Fixture gate: " .. GATE_DOC[leaf.fixture_gate] .. "."
    o[#o + 1] = ""
    o[#o + 1] = "| form | tiers | fixtures |"
    o[#o + 1] = "|---|---|---|"
    for _, form in ipairs(leaf.forms) do
      local t = {}
      if form.tiers.exact then t[#t + 1] = "exact" end
      if form.tiers.fast then t[#t + 1] = "fast" end
      local fx = form.fixtures.via and ("through `" .. form.fixtures.via .. "`'s")
                 or form.fixtures.exempt and ("exempt: " .. form.fixtures.exempt) or "its own"
      o[#o + 1] = "| `" .. form.name .. "` | " .. table.concat(t, ", ") .. " | " .. fx .. " |"
    end
    o[#o + 1] = ""
  end
  return table.concat(o, "\n")
end

-- One line per stamp; also the list of files the generator owns (stale ones are removed).
function M.manifest(stamps, banner)
  local o = { "# " .. banner, "# symbol file tier template template_blob features asflags" }
  for _, st in ipairs(stamps) do
    o[#o + 1] = table.concat({ st.symbol, st.file, st.tier, st.template, st.template_hash,
                               table.concat(st.features, "+"), st.asflags }, " ")
  end
  return table.concat(o, "\n") .. "\n"
end

return M
