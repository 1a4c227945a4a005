-- tools/census/markdown.lua: the census as text: generated/CENSUS.md (the method and models, then
-- per ISA a summary table, the main loops' work and the stamps' details, and the pipe map of
-- the models), and the report of every marked loop of one stamp (--stamp).

local C = require("compat")
local K = require("census.count")
local T = require("census.toolchain")

local D = {}

local count = K.count

-- A number of cycles with two decimals, or "-".
local function fmt(x)
  if x == nil then return "-" end
  return string.format("%.2f", x)
end

-- c/it over the bound, or "-".
local function ratio(a)
  if not a or not a.bound or a.bound <= 0 then return "-" end
  return string.format("%.2f", a.cycles / a.bound)
end

-- A resource's cycles per iteration "V1 52" or, spread over N units, "V 151/2".
local function use_cell(list, max)
  local parts = {}
  for i, u in ipairs(list) do
    if max and i > max then parts[#parts + 1] = "..."; break end
    local c = u.cycles
    local s = (c == math.floor(c)) and C.int(c) or string.format("%.2f", c)
    parts[#parts + 1] = u.name .. " " .. s .. (u.n > 1 and ("/" .. C.int(u.n)) or "")
  end
  return table.concat(parts, ", ")
end

-- Counts by class, the classes that occur: "ld 68, st 12, fma 16, shift 56, ...".
local function class_cell(n)
  local parts = { "ld " .. C.int(n.load), "st " .. C.int(n.store) }
  for _, k in ipairs(K.OPS) do
    if n[k] > 0 then parts[#parts + 1] = K.OP_TITLE[k] .. " " .. C.int(n[k]) end
  end
  return table.concat(parts, ", ")
end

-- The main loop's name and analysis on model i ("(whole)" for a stamp without a marked loop).
local function main_of(st, i)
  local name = st.main and st.main.name or "(whole)"
  return name, st.mca[i][name]
end

local function row(cells)
  for i, c in ipairs(cells) do
    if type(c) == "number" then cells[i] = C.int(c) end
  end
  return "| " .. table.concat(cells, " | ") .. " |"
end

-- The models' units as llvm-mca lists them: "V0, V1, L01 x2, ...", the groups of models.lua
-- llvm-mca's list has, and the dispatch width (from the first stamp llvm-mca ran on the model).
-- what the model's CPU lacks and how such stamps run
local function lacks_text(m)
  local parts = {}
  for _, l in ipairs(m.lacks or {}) do
    parts[#parts + 1] = string.format("no %s in the model's CPU: %s stamps run with `-mattr=+%s`, %s timed as the"
      .. " model's default vector op", l.what, l.ext, l.attr, l.op)
  end
  return #parts > 0 and " (" .. table.concat(parts, "; ") .. ")" or ""
end

local function model_line(m, info)
  local units = {}
  for _, k in ipairs(info.res.kind_names) do
    local n = #info.res.kinds[k]
    units[#units + 1] = info.short(k) .. (n > 1 and (" x" .. C.int(n)) or "")
  end
  local groups = {}
  for _, s in ipairs(info.sets) do
    if s.group and info.used[s.name] then groups[#groups + 1] = s.name .. " = " .. s.members end
  end
  return string.format("- %s: `-mcpu=%s`, llvm-mca's model from `llvm/lib/Target/%s`; dispatch width %s;"
    .. " units: %s; groups the stamps use: %s%s", m.short, m.cpu, m.td, info.width and C.int(info.width) or "?",
    table.concat(units, ", "),
    #groups > 0 and table.concat(groups, "; ") or "none",
    lacks_text(m))
end

local METHOD = {
  "Per stamp, its main loop (of the regions the generator marked, `LLVM-MCA-BEGIN`: the innermost full-tile",
  "loops, the one with the most FMAs, then instructions; `(whole)`: the whole function, for straight-line stamps)",
  "on two llvm-mca models per ISA:",
  "",
  "- `c/it`: llvm-mca's predicted cycles per iteration (100 iterations, the summary view).",
  "- `bound`: the fewest cycles per iteration the model's resources allow for the loop's instructions as they are.",
  "  `llvm-mca -instruction-tables` gives each instruction's cycles on every unit of the model (a use of a",
  "  resource with N units spread evenly over them); each row is cut back into the model's resources, largest",
  "  first: its kinds (`ProcResource<N>`, from llvm-mca's list) and groups (`ProcResGroup`, from the model's `.td`",
  "  source: `tools/census/models.lua`). The bound is the larger of max over unit sets S of (the cycles of the uses",
  "  that must run within S) / |S|, over the unions of overlapping used resources, and micro-ops / dispatch width.",
  "  It counts every instruction on the pipes the model lets it use (a shift the model keeps on one pipe loads that",
  "  pipe alone); it leaves out latency chains and llvm-mca's own choice of pipe, which `c/it / bound` above 1",
  "  measures.",
  "- `limit`: the resource set that attains the bound (`V1`: one pipe; `V`: a group; `L+V`: a union;",
  "  `dispatch`: the dispatch width).",
  "- `floor`: the same bound over the loop's loads, stores and FMAs alone: what the loop would take if nothing",
  "  else remained.",
  "",
  "AArch64 figures are llvm-mca predictions on its models, not measurements: qemu proves the stamps' bits only.",
}

-- CENSUS.md from the stamps' records (tools/census.lua), llvm-mca's version and the models' info.
local function render(stamps, version, infos)
  local out = {}
  local function w(s) out[#out + 1] = s end
  w("# Stamp census")
  w("")
  w("Generated by `make census` (`tools/census.lua`) from `generated/` with llvm-mca " .. version
    .. ": do not edit; CI fails when it is stale.")
  w("")
  for _, l in ipairs(METHOD) do w(l) end
  w("")
  w("Models (units as llvm-mca lists them, `x N`: N interchangeable units):")
  w("")
  for _, isa in ipairs({ "x86_64", "aarch64" }) do
    for i, m in ipairs(T.MODELS[isa]) do
      if infos[isa] and infos[isa][i] then w(model_line(m, infos[isa][i])) end
    end
  end
  w("")
  w("Per ISA: the summary (code bytes: the function's ELF symbol size), the main loops' work (instructions by")
  w("class: a load-op instruction counts as a load and as its operation, an LDP/STP as two; the cycles per")
  w("iteration on each resource the loop uses, most loaded first, `/N` when spread over N units), the stamps'")
  w("details (registers used, callee-saved registers saved and stack bytes: frame op [0]; constant bytes; the")
  w("extensions the assembler requires: each of the variant's extensions removed from `-march` in turn, the ones")
  w("whose removal fails), and the pipe map: the resources each mnemonic of the main loops uses on each model.")
  for _, isa in ipairs({ "x86_64", "aarch64" }) do
    local ms = T.MODELS[isa]
    local mine = {}
    for _, st in ipairs(stamps) do
      if st.row.isa == isa then mine[#mine + 1] = st end
    end
    if #mine > 0 then
      w("")
      w("## " .. isa)
      w("")
      -- the worst ratios, and how many exact main loops are above 1.3 times their bound
      for i, m in ipairs(ms) do
        local worst, ws, above, exact = nil, nil, 0, 0
        for _, st in ipairs(mine) do
          local _, a = main_of(st, i)
          local r = a.bound > 0 and a.cycles / a.bound or nil
          if r and (not worst or r > worst + 1e-9) then worst, ws = r, st end
          if st.row.tier == "exact" then
            exact = exact + 1
            if r and r > 1.3 + 1e-9 then above = above + 1 end
          end
        end
        if worst then
          w(string.format("- %s: worst `c/it / bound` %.2f (`%s`); exact main loops above 1.30: %s of %s", m.short,
            worst, ws.row.symbol, C.int(above), C.int(exact)))
        end
      end
      w("")
      w("### Summary")
      w("")
      local head, sep = "| stamp | code B | main loop | ins", "|---|---:|---|---:"
      for _, m in ipairs(ms) do
        head = head .. " | " .. m.short .. " c/it | bound | c/it / bound | limit"
        sep = sep .. "|---:|---:|---:|---"
      end
      w(head .. " |")
      w(sep .. "|")
      for _, st in ipairs(mine) do
        local name = main_of(st, 1)
        local n = st.main and st.main_n.total or st.n.total
        local cells = { "`" .. st.row.symbol .. "`", st.code, name, n }
        for i in ipairs(ms) do
          local _, a = main_of(st, i)
          cells[#cells + 1] = fmt(a.cycles)
          cells[#cells + 1] = fmt(a.bound)
          cells[#cells + 1] = ratio(a)
          cells[#cells + 1] = a.limit
        end
        w(row(cells))
      end
      w("")
      w("### Main loops: work by class and by resource")
      w("")
      head, sep = "| stamp | instructions by class", "|---|---"
      for _, m in ipairs(ms) do
        head = head .. " | " .. m.short .. " floor | " .. m.short .. " cycles per resource"
        sep = sep .. "|---:|---"
      end
      w(head .. " |")
      w(sep .. "|")
      for _, st in ipairs(mine) do
        local cells = { "`" .. st.row.symbol .. "`", class_cell(st.main and st.main_n or st.n) }
        for i in ipairs(ms) do
          local _, a = main_of(st, i)
          cells[#cells + 1] = fmt(a.floor)
          cells[#cells + 1] = use_cell(a.list, 6)
        end
        w(row(cells))
      end
      w("")
      w("### Stamps")
      w("")
      head = "| stamp | ins | code B | const B | gpr | vec" .. (isa == "x86_64" and " | k" or "")
        .. " | saved | stack B | requires | loops |"
      sep = "|---|---:|---:|---:|---:|---:" .. (isa == "x86_64" and "|---:" or "") .. "|---:|---:|---|---:|"
      w(head)
      w(sep)
      for _, st in ipairs(mine) do
        local cells = { "`" .. st.row.symbol .. "`", st.n.total, st.code, st.ro, st.gpr, st.vec }
        if isa == "x86_64" then cells[#cells + 1] = st.mask end
        for _, x in ipairs({ st.saved, st.stack, st.exts, #st.regions }) do cells[#cells + 1] = x end
        w(row(cells))
      end
      w("")
      w("### Pipe map")
      w("")
      w("The resources each mnemonic of the main loops uses (llvm-mca's instruction tables, cut as for the bound;")
      w("one mnemonic may appear under several when its forms differ), by class; plain loads and stores and")
      w("general-purpose register work left out.")
      for i, m in ipairs(ms) do
        w("")
        w("- " .. m.short .. ":")
        -- class -> signature -> mnemonics
        local map = {}
        for _, st in ipairs(mine) do
          local _, a = main_of(st, i)
          if a.ins then
            for j, l in ipairs(a.ins) do
              local c = K.classify(l.text, isa)
              local op = c.op
              if op and op ~= "scalar" and op ~= "branch" and a.sig[j] ~= "" then
                local mn = (l.text:match("^([%w%.]+)") or ""):lower()
                map[op] = map[op] or {}
                map[op][a.sig[j]] = map[op][a.sig[j]] or {}
                map[op][a.sig[j]][mn] = true
              end
            end
          end
        end
        for _, op in ipairs(K.OPS) do
          if map[op] then
            local parts = {}
            for _, sig in ipairs(C.sorted_keys(map[op])) do
              parts[#parts + 1] = "`" .. sig .. "`: " .. table.concat(C.sorted_keys(map[op][sig]), " ")
            end
            w("  - " .. op .. ": " .. table.concat(parts, "; "))
          end
        end
      end
    end
  end
  return table.concat(out, "\n") .. "\n"
end

-- --stamp: every marked loop of one stamp, on stdout: its instructions by class, then per model
-- c/it, bound, c/it over bound, limit, floor and the cycles on each resource; for the main loop,
-- which resources each class of its instructions uses.
local function regions_report(st)
  local isa = st.row.isa
  local ms = T.MODELS[isa]
  print(st.row.symbol .. ": " .. C.int(#st.regions) .. " marked loops, main "
    .. (st.main and st.main.name or "(whole)"))
  local spans = {}
  for _, r in ipairs(st.regions) do spans[#spans + 1] = r end
  if #spans == 0 then spans[1] = { name = "(whole)", first = 1, last = #st.ins } end
  for _, r in ipairs(spans) do
    local n = count(st.ins, isa, r.first, r.last)
    local cls = {}
    for _, k in ipairs(K.OPS) do
      if n[k] > 0 then cls[#cls + 1] = K.OP_TITLE[k] .. " " .. C.int(n[k]) end
    end
    print(string.format("  %-10s ins %3d ld %2d st %2d %s", r.name, n.total, n.load, n.store, table.concat(cls, " ")))
    for i, m in ipairs(ms) do
      local a = st.mca[i][r.name]
      print(string.format("    %-4s %s c/it, bound %s (%s), c/it / bound %s, floor %s | %s", m.short, fmt(a.cycles),
        fmt(a.bound), a.limit, ratio(a), fmt(a.floor), use_cell(a.list)))
    end
  end
  local name = st.main and st.main.name or "(whole)"
  for i, m in ipairs(ms) do
    local a = st.mca[i][name]
    if a.ins then
      print("  " .. name .. " on " .. m.short .. ", by class: resource (cycles per iteration) mnemonics")
      local by = {}
      for j, l in ipairs(a.ins) do
        local c = K.classify(l.text, isa)
        local k = c.op or (c.load and "load") or (c.store and "store") or "other"
        by[k] = by[k] or {}
        local sig = a.sig[j] ~= "" and a.sig[j] or "-"
        local e = by[k][sig] or { n = 0, mn = {} }
        e.n = e.n + 1
        e.mn[(l.text:match("^([%w%.]+)") or ""):lower()] = true
        by[k][sig] = e
      end
      for _, k in ipairs(C.sorted_keys(by)) do
        local parts = {}
        for _, sig in ipairs(C.sorted_keys(by[k])) do
          local e = by[k][sig]
          parts[#parts + 1] = sig .. " x" .. C.int(e.n) .. " (" .. table.concat(C.sorted_keys(e.mn), " ") .. ")"
        end
        print("    " .. k .. ": " .. table.concat(parts, "; "))
      end
    end
  end
end

-- --rows: per model, every distinct pressure row of the selected stamps' main loops (llvm-mca's
-- cycles per unit, the instruction's mnemonic and operand kinds) and how the census cut it into
-- resources: the audit of the cuts.
local function rows_report(stamps, infos)
  for _, isa in ipairs({ "x86_64", "aarch64" }) do
    for i, m in ipairs(T.MODELS[isa]) do
      local info = infos[isa] and infos[isa][i]
      if info then
        local names = {}
        for u, unit in ipairs(info.res.units) do names[u] = info.short(unit.name) end
        local seen = {}
        for _, st in ipairs(stamps) do
          if st.row.isa == isa then
            local _, a = main_of(st, i)
            for j, r in ipairs(a.rows) do
              local cells = {}
              for u, x in ipairs(r.p) do
                if x > 0 then cells[#cells + 1] = names[u] .. " " .. string.format("%.2f", x) end
              end
              local mn = (r.text:match("^(%S+)") or ""):lower()
              local shape = r.text:find("%[") and " mem" or ""
              local key = mn .. shape .. " | " .. table.concat(cells, " ") .. " | " .. a.cut[j]
              seen[key] = true
            end
          end
        end
        print(m.short .. ": distinct rows (mnemonic [mem] | llvm-mca cycles per unit | the census's cut)")
        for _, k in ipairs(C.sorted_keys(seen)) do print("  " .. k) end
      end
    end
  end
end

D.render, D.regions_report, D.rows_report = render, regions_report, rows_report

return D
