-- tools/asmdiff.lua: a reviewer's view of stamps, op by op (the command line; the work is done
-- by the modules in tools/asmdiff/).
--
--   lua5.4 tools/asmdiff.lua [--root DIR] LEAF [--form FORM] [--variant PAIR] [--strict-ids]
--                            [--html FILE] [--color|--no-color]
--       the x86_64 and AArch64 stamps of each form side by side, aligned on template op groups;
--   lua5.4 tools/asmdiff.lua [--root DIR] --rev A..B LEAF [--form FORM] [--isa ISA] [--variant V]
--                            [--regen] [--html FILE] [--color|--no-color]
--       what changed in each stamp of LEAF between two revisions (B may be WORKTREE), op by op;
--   lua5.4 tools/asmdiff.lua --files LEFT.S RIGHT.S [--strict-ids] [--html FILE] ...
--       two stamp files side by side;
--   lua5.4 tools/asmdiff.lua [--root DIR] --list        leaves, forms and their stamps
--   lua5.4 tools/asmdiff.lua --help
--
-- The modules, by job:
--   asmdiff/common.lua       errors (one line on stderr, exit 2), string helpers, text width
--   asmdiff/parse.lua        a stamp's text -> op groups, labels, constant tables; MANIFEST
--   asmdiff/align.lua        LCS; two ISAs side by side; two revisions' op-group diff
--   asmdiff/render_text.lua  the terminal view (160 columns, ANSI colour when asked)
--   asmdiff/render_html.lua  the self-contained HTML page
--   asmdiff/revisions.lua    stamps from the work tree, git show, or --regen of a revision
-- This file owns the options, the three commands (side by side, --rev, --files), --list, and the
-- output (text on stdout, or the HTML file replaced only on success).
--
-- Runs under Lua 5.4 and LuaJIT 2.1 alike (gen/compat.lua rules: numbers reach output through
-- %d only, no pairs() order reaches output). Loaded with dofile() it is a library: it returns
-- its table (every module's functions, as one table) and runs nothing.

local SELF = ((debug.getinfo(1, "S") or {}).source or ""):match("^@(.*)$") or "tools/asmdiff.lua"
local TOOLS_DIR = SELF:match("^(.*)/[^/]*$") or "."
-- the modules beside this file; compat.lua from the generator's folder (one copy, not two)
package.path = TOOLS_DIR .. "/?.lua;" .. TOOLS_DIR .. "/../gen/?.lua;" .. package.path
local C = require("compat")
local U = require("asmdiff.common")
local P = require("asmdiff.parse")
local A = require("asmdiff.align")
local R = require("asmdiff.render_text")
local H = require("asmdiff.render_html")
local V = require("asmdiff.revisions")

-- The library (tests/asmdiff_test.sh loads it with dofile): every module's exports, one table.
local M = {}
for _, mod in ipairs({ U, P, A, R, H, V }) do
  for _, k in ipairs(C.sorted_keys(mod)) do M[k] = mod[k] end
end

local fail, int, basename, fit, clip = U.fail, U.int, U.basename, U.fit, U.clip
local html_escape, painter = H.html_escape, R.painter
local shell_quote, execute_ok = C.sh_quote, C.execute_ok -- compat.lua: both interpreters

---------------------------------------------------------------------------------------------
-- Command line.

M.USAGE = [[
usage:
  asmdiff.lua [--root DIR] LEAF [--form FORM] [--variant PAIR] [--strict-ids] [--html FILE] [--color|--no-color]
      x86_64 and AArch64 stamps of each form of LEAF side by side, aligned on template op groups.
      PAIR: exact (default: x86_64 avx512 vs aarch64 neon), avx2 (avx2 vs neon), fast
      (avx512bf16 vs bf16), or ISA_VARIANT:ISA_VARIANT (e.g. x86_64_avx2:x86_64_avx512).
  asmdiff.lua [--root DIR] --rev A..B LEAF [--form FORM] [--isa ISA] [--variant V] [--regen] [--html FILE]
      changes of each stamp of LEAF from git revision A to B (B may be WORKTREE), op group by op group.
      Stamps are read with git show REV:generated/...; --regen stamps each revision's own tree instead.
      V: a variant (avx512, neon, ...), a tier (exact, fast) or ISA_VARIANT.
  asmdiff.lua --files LEFT.S RIGHT.S [--strict-ids] [--html FILE]   two stamp files side by side
  asmdiff.lua [--root DIR] --list                                     leaves, forms and their stamps
  asmdiff.lua --help
  --strict-ids   align on (op id, op) instead of (op, template line)
  --html FILE    write a self-contained HTML page instead of text (replaced only on success)
  --color, --no-color   ANSI colour (default: only when stdout is a terminal and NO_COLOR is unset)
exit status: 0 done, 2 bad input (one line on stderr, nothing written)
]]

local function parse_args(argv)
  local o = { positional = {} }
  local i = 1
  local function value(name)
    local v = argv[i + 1]
    if v == nil or (v:sub(1, 2) == "--" and v ~= "--") then fail("option " .. name .. " needs a value") end
    i = i + 2
    return v
  end
  while argv[i] ~= nil do
    local a = argv[i]
    if a == "--root" then o.root = value(a)
    elseif a == "--form" then o.form = value(a)
    elseif a == "--variant" then o.variant = value(a)
    elseif a == "--isa" then o.isa = value(a)
    elseif a == "--rev" then o.rev = value(a)
    elseif a == "--html" then o.html = value(a)
    elseif a == "--files" then
      o.files = { argv[i + 1], argv[i + 2] }
      if not o.files[1] or not o.files[2] then fail("option --files needs two files: --files LEFT.S RIGHT.S") end
      i = i + 3
    elseif a == "--regen" then o.regen = true; i = i + 1
    elseif a == "--strict-ids" then o.strict_ids = true; i = i + 1
    elseif a == "--color" or a == "--colour" then o.color = true; i = i + 1
    elseif a == "--no-color" or a == "--no-colour" then o.color = false; i = i + 1
    elseif a == "--list" then o.list = true; i = i + 1
    elseif a == "--help" or a == "-h" then o.help = true; i = i + 1
    elseif a:sub(1, 1) == "-" then fail("unknown option '" .. a .. "' (see --help)")
    else o.positional[#o.positional + 1] = a; i = i + 1 end
  end
  return o
end

-- Without --root: the repository this tool sits in.
local function default_root()
  if TOOLS_DIR == "." then return ".." end
  return TOOLS_DIR:match("^(.*)/[^/]*$") or "."
end

local function stdout_is_tty()
  if os.getenv("NO_COLOR") and os.getenv("NO_COLOR") ~= "" then return false end
  if os.getenv("TERM") == "dumb" then return false end
  return execute_ok("test -t 1")
end

local function leaf_index(manifest)
  local leaves, by_leaf = {}, {}
  for _, e in ipairs(manifest) do
    local L = by_leaf[e.leaf]
    if not L then
      L = { name = e.leaf, template = e.template, forms = {}, by_form = {} }
      by_leaf[e.leaf] = L
      leaves[#leaves + 1] = L
    end
    local F = L.by_form[e.form]
    if not F then
      F = { name = e.form, stamps = {} }
      L.by_form[e.form] = F
      L.forms[#L.forms + 1] = F
    end
    F.stamps[#F.stamps + 1] = e
  end
  return leaves, by_leaf
end

local function names_of(list)
  local t = {}
  for _, x in ipairs(list) do t[#t + 1] = x.name end
  return table.concat(t, ", ")
end

local function read_manifest(src)
  return P.parse_manifest(src.read("MANIFEST"))
end

local function resolve_pairing(v, manifest)
  local known = {}
  for _, e in ipairs(manifest) do known[e.isa .. "_" .. e.variant] = true end
  local function side(s)
    local isa, variant = s:match("^(x86_64)_(.+)$")
    if not isa then isa, variant = s:match("^(aarch64)_(.+)$") end
    if not isa or not known[s] then fail("unknown variant '" .. s .. "' in --variant (e.g. x86_64_avx512)") end
    return { isa = isa, variant = variant }
  end
  if v == nil or v == "exact" or v == "avx512" or v == "neon" then
    return { isa = "x86_64", variant = "avx512" }, { isa = "aarch64", variant = "neon" }
  elseif v == "avx2" then
    return { isa = "x86_64", variant = "avx2" }, { isa = "aarch64", variant = "neon" }
  elseif v == "fast" or v == "bf16" or v == "avx512bf16" then
    return { isa = "x86_64", variant = "avx512bf16" }, { isa = "aarch64", variant = "bf16" }
  elseif v:find(":", 1, true) then
    local a, b = v:match("^([^:]+):([^:]+)$")
    if not a then fail("bad --variant '" .. v .. "' (expected ISA_VARIANT:ISA_VARIANT)") end
    return side(a), side(b)
  end
  fail("unknown --variant '" .. v .. "' (exact, avx2, fast or ISA_VARIANT:ISA_VARIANT)")
end

local function find_stamp(F, want)
  for _, e in ipairs(F.stamps) do
    if e.isa == want.isa and e.variant == want.variant then return e end
  end
  return nil
end

local function cmd_list(o, out)
  local src = V.worktree_source(o.root)
  local leaves = leaf_index(read_manifest(src))
  out[#out + 1] = "leaf / form            stamps (isa_variant by tier)\n"
  for _, L in ipairs(leaves) do
    out[#out + 1] = L.name .. "  (" .. L.template .. ")\n"
    for _, F in ipairs(L.forms) do
      local by_tier, tiers = {}, {}
      for _, e in ipairs(F.stamps) do
        if not by_tier[e.tier] then by_tier[e.tier] = {}; tiers[#tiers + 1] = e.tier end
        local t = by_tier[e.tier]
        t[#t + 1] = e.isa .. "_" .. e.variant
      end
      local parts = {}
      for _, tier in ipairs(tiers) do parts[#parts + 1] = tier .. ": " .. table.concat(by_tier[tier], " ") end
      out[#out + 1] = clip("  " .. fit(F.name, 20) .. " " .. table.concat(parts, "  ")) .. "\n"
    end
  end
end

local function cmd_isa(o, out, html)
  if #o.positional ~= 1 then fail(#o.positional == 0 and "no LEAF given (see --help)"
    or ("one LEAF expected, got '" .. table.concat(o.positional, " ") .. "'")) end
  local leafname = o.positional[1]
  if o.isa then fail("--isa applies to --rev mode only") end
  local src = V.worktree_source(o.root)
  local manifest = read_manifest(src)
  local leaves, by_leaf = leaf_index(manifest)
  local L = by_leaf[leafname]
  if not L then fail("unknown leaf '" .. leafname .. "' (leaves: " .. names_of(leaves) .. ")") end
  local wl, wr = resolve_pairing(o.variant, manifest)
  local forms = L.forms
  if o.form then
    if not L.by_form[o.form] then
      fail("unknown form '" .. o.form .. "' of leaf '" .. leafname .. "' (forms: " .. names_of(L.forms) .. ")")
    end
    forms = { L.by_form[o.form] }
  end
  local jobs, skipped = {}, {}
  for _, F in ipairs(forms) do
    local el, er = find_stamp(F, wl), find_stamp(F, wr)
    if el and er then jobs[#jobs + 1] = { form = F.name, el = el, er = er }
    else
      local missing = (not el) and (wl.isa .. "_" .. wl.variant) or (wr.isa .. "_" .. wr.variant)
      if o.form then fail("form '" .. F.name .. "' of leaf '" .. leafname .. "' has no " .. missing .. " stamp") end
      skipped[#skipped + 1] = "form " .. F.name .. ": skipped (no " .. missing .. " stamp)"
    end
  end
  if #jobs == 0 then
    fail("leaf '" .. leafname .. "' has no form stamped for both " .. wl.isa .. "_" .. wl.variant .. " and "
      .. wr.isa .. "_" .. wr.variant)
  end
  for _, j in ipairs(jobs) do
    local sl = P.parse(src.read(j.el.file), "generated/" .. j.el.file)
    local sr = P.parse(src.read(j.er.file), "generated/" .. j.er.file)
    local model = A.side_by_side(sl, sr, { strict_ids = o.strict_ids })
    local title = leafname .. " " .. j.form
    if html then html[#html + 1] = H.render_html_section(model, { title = title })
    else out[#out + 1] = R.render_text(model, { color = o.color, title = title }) end
  end
  for _, s in ipairs(skipped) do
    if html then html[#html + 1] = "<p>" .. html_escape(s) .. "</p>\n" else out[#out + 1] = s .. "\n" end
  end
  return leafname .. ": " .. wl.isa .. " " .. wl.variant .. " vs " .. wr.isa .. " " .. wr.variant
end

local function cmd_files(o, out, html)
  if #o.positional > 0 then fail("--files takes no LEAF (got '" .. o.positional[1] .. "')") end
  local st = {}
  for k = 1, 2 do
    local text, err = C.read_file(o.files[k])
    if not text then fail("cannot read " .. o.files[k] .. " (" .. tostring(err):gsub("^[^:]*: ", "") .. ")") end
    st[k] = P.parse(text, o.files[k])
  end
  local model = A.side_by_side(st[1], st[2], { strict_ids = o.strict_ids })
  local title = basename(o.files[1]) .. " vs " .. basename(o.files[2])
  if html then html[#html + 1] = H.render_html_section(model, { title = title })
  else out[#out + 1] = R.render_text(model, { color = o.color, title = title }) end
  return title
end

local function cmd_rev(o, out, html, cleanup)
  if #o.positional ~= 1 then fail(#o.positional == 0 and "no LEAF given (see --help)"
    or ("one LEAF expected, got '" .. table.concat(o.positional, " ") .. "'")) end
  local leafname = o.positional[1]
  local ra, rb = o.rev:match("^(.+)%.%.(.+)$")
  if not ra or ra:find("..", 1, true) or rb:find("..", 1, true) or ra:match("%.$") or rb:match("^%.") then
    fail("bad --rev '" .. o.rev .. "' (expected A..B, e.g. HEAD~1..HEAD or HEAD..WORKTREE)")
  end
  if ra == "WORKTREE" then fail("bad --rev '" .. o.rev .. "': only B may be WORKTREE") end
  if o.isa and o.isa ~= "x86_64" and o.isa ~= "aarch64" then
    fail("unknown --isa '" .. o.isa .. "' (x86_64, aarch64)")
  end
  if not execute_ok("git -C " .. shell_quote(o.root) .. " rev-parse --git-dir > /dev/null 2>&1") then
    fail("--rev: " .. o.root .. " is not a git repository")
  end
  local ha = V.git_rev(o.root, ra)
  local hb = rb == "WORKTREE" and "WORKTREE" or V.git_rev(o.root, rb)
  local tmp = V.make_tmpdir()
  cleanup[#cleanup + 1] = tmp
  local sa, sb
  if o.regen then
    local srcs = V.regen_sources(o.root, { { rev = ra, label = "A" }, { rev = rb, label = "B" } }, tmp)
    sa, sb = srcs[1], srcs[2]
  else
    sa = V.git_source(o.root, ra, tmp)
    sb = rb == "WORKTREE" and V.worktree_source(o.root) or V.git_source(o.root, rb, tmp)
  end
  local function manifest_of(src, rev)
    local ok, res = pcall(read_manifest, src)
    if not ok then
      if U.is_failure(res) then
        fail("revision " .. rev .. " has no generated/MANIFEST" .. (o.regen and "" or " (try --regen)"))
      end
      error(res, 0)
    end
    return res
  end
  local ma, mb = manifest_of(sa, ra), manifest_of(sb, rb)
  local function select(list)
    local sel, any_leaf, any_form = {}, false, false
    for _, e in ipairs(list) do
      if e.leaf == leafname then
        any_leaf = true
        if not o.form or e.form == o.form then
          any_form = true
          local v = o.variant
          if (not o.isa or e.isa == o.isa)
              and (not v or v == e.variant or v == e.tier or v == e.isa .. "_" .. e.variant) then
            sel[#sel + 1] = e
          end
        end
      end
    end
    return sel, any_leaf, any_form
  end
  local la, leaf_a, form_a = select(ma)
  local lb, leaf_b, form_b = select(mb)
  if not leaf_a and not leaf_b then fail("unknown leaf '" .. leafname .. "' at " .. ra .. " and " .. rb) end
  if o.form and not form_a and not form_b then
    fail("unknown form '" .. o.form .. "' of leaf '" .. leafname .. "' at " .. ra .. " and " .. rb)
  end
  if #la == 0 and #lb == 0 then
    fail("no stamp of leaf '" .. leafname .. "' matches" .. (o.isa and (" --isa " .. o.isa) or "")
      .. (o.variant and (" --variant " .. o.variant) or ""))
  end
  local in_a, order = {}, {}
  for _, e in ipairs(la) do in_a[e.symbol] = e end
  local seen = {}
  for _, e in ipairs(lb) do order[#order + 1] = e.symbol; seen[e.symbol] = e end
  for _, e in ipairs(la) do if not seen[e.symbol] then order[#order + 1] = e.symbol end end
  local tot = { stamps = 0, changed = 0, added = 0, removed = 0, same = 0 }
  local label_a = ra .. " (" .. ha .. ")"
  local label_b = rb == "WORKTREE" and "WORKTREE" or (rb .. " (" .. hb .. ")")
  for _, sym in ipairs(order) do
    local ea, eb = in_a[sym], seen[sym]
    local ta = ea and sa.read(ea.file)
    local tb = eb and sb.read(eb.file)
    local pa = ta and P.parse(ta, ra .. ":generated/" .. ea.file)
    local pb = tb and P.parse(tb, rb .. ":generated/" .. eb.file)
    local d = A.diff_stamps(pa, pb)
    tot.stamps = tot.stamps + 1
    tot[d.kind] = tot[d.kind] + 1
    local ropts = { color = o.color, rev_a = label_a, rev_b = label_b, file = "generated/" .. (eb or ea).file }
    if html then html[#html + 1] = H.render_diff_html(d, ropts)
    else out[#out + 1] = R.render_diff_text(d, ropts) end
  end
  local total = "total " .. leafname .. " " .. label_a .. " -> " .. label_b .. ": "
  if tot.changed + tot.added + tot.removed == 0 then
    total = total .. "no changes (stamps " .. int(tot.stamps) .. ")"
  else
    total = total .. string.format("stamps %d, changed %d, added %d, removed %d, unchanged %d",
      tot.stamps, tot.changed, tot.added, tot.removed, tot.same)
  end
  if html then html[#html + 1] = "<p class=\"summary\">" .. html_escape(total) .. "</p>\n"
  else out[#out + 1] = painter(o.color)(clip(total), "bold") .. "\n" end
  return leafname .. " " .. label_a .. " -> " .. label_b
end

-- Write a file atomically: a temporary file beside it, renamed at the end.
local function write_atomic(path, content)
  local tmp = path .. ".tmp" .. int(os.time() % 100000) .. int(math.random(0, 99999))
  local f, err = io.open(tmp, "wb")
  if not f then fail("cannot write " .. path .. " (" .. tostring(err):gsub("^[^:]*: ", "") .. ")") end
  local ok = f:write(content)
  f:close()
  if not ok then os.remove(tmp); fail("cannot write " .. path) end
  local rok, rerr = os.rename(tmp, path)
  if not rok then os.remove(tmp); fail("cannot write " .. path .. " (" .. tostring(rerr) .. ")") end
end

-- Entry point: returns the exit status; writes nothing unless everything succeeded.
function M.main(argv)
  local cleanup = {}
  local ok, res = xpcall(function()
    local o = parse_args(argv or {})
    if o.help then return { text = M.USAGE } end
    o.root = o.root or default_root()
    if o.color == nil and not o.html then o.color = stdout_is_tty() end
    if o.html and o.html:match("/$") then fail("--html " .. o.html .. ": a directory") end
    local out, html = {}, (o.html and {} or nil)
    local title
    if o.list then
      if #o.positional > 0 or o.rev or o.files then fail("--list takes no other arguments") end
      cmd_list(o, out)
      html = nil
    elseif o.files then
      if o.rev then fail("--files and --rev exclude each other") end
      title = cmd_files(o, out, html)
    elseif o.rev then
      title = cmd_rev(o, out, html, cleanup)
    else
      if o.regen then fail("--regen applies to --rev mode only") end
      title = cmd_isa(o, out, html)
    end
    if html then
      return { html = H.html_page("asmdiff: " .. title, table.concat(html)), path = o.html }
    end
    return { text = table.concat(out) }
  end, function(e)
    if U.is_failure(e) then return e end
    return { internal = tostring(e), trace = debug.traceback() }
  end)
  for _, dir in ipairs(cleanup) do os.execute("rm -rf " .. shell_quote(dir)) end
  if not ok then
    if U.is_failure(res) then
      io.stderr:write("asmdiff: error: ", res.msg, "\n")
      return 2
    end
    io.stderr:write("asmdiff: internal error: ", res.internal, "\n", res.trace or "", "\n")
    return 1
  end
  if res.html then
    local wok, werr = pcall(write_atomic, res.path, res.html)
    if not wok then
      io.stderr:write("asmdiff: error: ", U.is_failure(werr) and werr.msg or tostring(werr), "\n")
      return 2
    end
    io.stdout:write("asmdiff: wrote ", res.path, "\n")
  else
    io.stdout:write(res.text)
  end
  return 0
end

if arg and type(arg[0]) == "string" and arg[0]:match("asmdiff%.lua$") and arg[0] == SELF then
  local argv = {}
  for i = 1, #arg do argv[i] = arg[i] end
  io.stdout:setvbuf("full")
  os.exit(M.main(argv))
end

return M
