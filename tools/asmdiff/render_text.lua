-- tools/asmdiff/render_text.lua: the terminal view: the side-by-side table of two stamps and the
-- diff of two revisions of one, at most 160 columns, ANSI colour when asked. The lines of a
-- revision diff and of the constant tables are written here for the HTML view too.

local U = require("asmdiff.common")
local P = require("asmdiff.parse")
local A = require("asmdiff.align")

local R = {}

local WIDTH, int, fit, clip, item_text = U.WIDTH, U.int, U.fit, U.clip, P.item_text

-- ANSI colour: paint(s, colour) when on, s unchanged when off.
local ANSI = { red = "\27[31m", green = "\27[32m", yellow = "\27[33m", blue = "\27[34m",
               magenta = "\27[35m", cyan = "\27[36m", bold = "\27[1m", dim = "\27[2m" }
local RESET = "\27[0m"

local function painter(on)
  return function(s, col)
    if not on or not col or s == "" then return s end
    return ANSI[col] .. s .. RESET
  end
end
R.painter = painter

---------------------------------------------------------------------------------------------
-- Two stamps side by side.

-- A constant table's status between two stamps, as one line (the HTML view shows it too).
local function const_line(e, lname, rname)
  if e.status == "equal" then return "equal (" .. int(e.bytes) .. " bytes)"
  elseif e.status == "differ" then
    local s = "differ at byte offset " .. int(e.offset)
    if e.lbytes ~= e.rbytes then s = s .. " (" .. int(e.lbytes) .. " vs " .. int(e.rbytes) .. " bytes)" end
    return s
  elseif e.status == "left" then return "only in " .. lname .. " (" .. int(e.bytes) .. " bytes)"
  else return "only in " .. rname .. " (" .. int(e.bytes) .. " bytes)" end
end
R.const_line = const_line

local function cell_colour(it, side)
  if not it then return nil end
  if it.kind == "absent" then return "dim" end
  if it.kind == "label" then return "cyan" end
  if it.kind ~= "instr" then return "dim" end
  if side == "left" then return "red" end
  if side == "right" then return "green" end
  return nil
end

function R.render_text(model, opts)
  opts = opts or {}
  local paint = painter(opts.color)
  local sl, sr = model.left, model.right
  local out = {}
  local function put(s, col) out[#out + 1] = paint(clip(s), col) end
  local title = opts.title or ((sl.leaf or "?") .. " " .. (sl.form or "?"))
  local lhead, rhead = sl.isa .. " " .. sl.variant, sr.isa .. " " .. sr.variant
  put("==== " .. title .. ": " .. lhead .. " vs " .. rhead .. " ====", "bold")
  put("left:  " .. lhead .. "  " .. sl.symbol .. "  (" .. sl.origin .. ")")
  put("right: " .. rhead .. "  " .. sr.symbol .. "  (" .. sr.origin .. ")")
  put("@ = each side's own symbol followed by _; [a|b] = an op whose id differs between the sides")
  -- column widths
  local nl, nm, nr = #lhead, 10, #rhead
  for _, row in ipairs(model.rows) do
    nl = math.max(nl, #item_text(row.l, sl.symbol))
    nr = math.max(nr, #item_text(row.r, sr.symbol))
    if row.mid then nm = math.max(nm, #row.mid + 2) end
  end
  local mw = math.max(20, math.min(nm, 56))
  local avail = WIDTH - 6 - mw
  local lw = math.min(nl, math.max(math.floor(avail / 2), avail - nr))
  local rw = avail - lw
  put(fit(lhead, lw) .. " | " .. fit("op group", mw) .. " | " .. rhead)
  local rule = string.rep("-", lw + 1) .. "+" .. string.rep("-", mw + 2) .. "+"
    .. string.rep("-", math.min(rw, nr) + 1)
  put(rule)
  for _, row in ipairs(model.rows) do
    local lt = fit(item_text(row.l, sl.symbol), lw)
    local mt = row.mark .. " " .. (row.mid or "")
    if #mt > mw and row.first and row.tail then   -- keep "template:line" whole
      mt = fit(mt:sub(1, #mt - #row.tail), mw - #row.tail) .. row.tail
    end
    mt = fit(mt, mw)
    local rt = item_text(row.r, sr.symbol)
    if #rt > rw then rt = fit(rt, rw) end
    local mcol = row.first and (row.idd and "magenta" or "yellow") or "dim"
    if row.first and row.side ~= "both" then mcol = row.side == "left" and "red" or "green" end
    out[#out + 1] = paint(lt, cell_colour(row.l, row.side)) .. " | " .. paint(mt, mcol)
      .. (rt == "" and " |" or (" | " .. paint(rt, cell_colour(row.r, row.side))))
  end
  put(rule)
  if #model.consts > 0 then
    put("constant tables (" .. model.lname .. " vs " .. model.rname .. "):")
    local w = 8
    for _, e in ipairs(model.consts) do w = math.max(w, #e.name + 2) end
    for _, e in ipairs(model.consts) do
      local col = e.status == "equal" and "green" or (e.status == "differ" and "red" or "yellow")
      out[#out + 1] = "  " .. fit("k_" .. e.name, math.min(w, 60)) .. " "
        .. paint(clip(const_line(e, model.lname, model.rname)), col)
    end
  else
    put("constant tables: none on either side")
  end
  put(A.summary_line(model), "bold")
  put("")
  return table.concat(out, "\n") .. "\n"
end

---------------------------------------------------------------------------------------------
-- Two revisions of one stamp: a unified diff by op group.

local function hunk_title(e)
  local g, o = e.gb or e.ga, e.gb and e.ga
  local s = "[" .. int(g.id) .. "] " .. g.name
  if g.src then s = s .. " " .. g.src .. ":" .. int(g.line) end
  if o and (o.id ~= g.id or o.line ~= g.line) then
    s = s .. " (was [" .. int(o.id) .. "]" .. (o.line and (" :" .. int(o.line)) or "") .. ")"
  end
  if e.kind == "added" then s = s .. " (added)" elseif e.kind == "removed" then s = s .. " (removed)" end
  return s
end

local function const_diff_line(c)
  if c.status == "differ" then
    local s = "differ at byte offset " .. int(c.offset)
    if c.lbytes ~= c.rbytes then s = s .. " (" .. int(c.lbytes) .. " -> " .. int(c.rbytes) .. " bytes)" end
    return s
  elseif c.status == "left" then return "removed (" .. int(c.bytes) .. " bytes)"
  elseif c.status == "right" then return "added (" .. int(c.bytes) .. " bytes)" end
  return "equal (" .. int(c.bytes) .. " bytes)"
end

local function skip_text(n, renum)
  return "    ... " .. int(n) .. " op group" .. (n == 1 and "" or "s") .. " unchanged"
    .. (renum > 0 and (" (" .. int(renum) .. " renumbered)") or "")
end

-- Walk the entries, calling emit(kind, text) with kind in hunk, del, add, ctx, skip.
local function walk_diff(d, emit)
  local run, renum = 0, 0
  local function flush()
    if run > 0 then emit("skip", skip_text(run, renum)) end
    run, renum = 0, 0
  end
  for _, e in ipairs(d.entries) do
    if e.kind == "same" then
      run = run + 1
      if e.renumbered then renum = renum + 1 end
    else
      flush()
      emit("hunk", "@@ " .. hunk_title(e) .. " @@")
      for _, l in ipairs(e.lines) do
        emit(l.op == "-" and "del" or (l.op == "+" and "add" or "ctx"), l.op .. "    " .. l.text)
      end
    end
  end
  flush()
  for _, c in ipairs(d.consts or {}) do
    if c.status ~= "equal" then emit("const", "constant table k_" .. c.name .. ": " .. const_diff_line(c)) end
  end
end
R.walk_diff = walk_diff

function R.render_diff_text(d, opts)
  opts = opts or {}
  local paint = painter(opts.color)
  local out = {}
  local function put(s, col) out[#out + 1] = paint(clip(s), col) end
  local sym = (d.b or d.a).symbol
  local ra, rb = opts.rev_a or "A", opts.rev_b or "B"
  if d.kind == "added" then
    put("=== " .. sym .. ": added in " .. rb, "bold")
  elseif d.kind == "removed" then
    put("=== " .. sym .. ": removed in " .. rb, "bold")
  elseif d.kind == "same" then
    put("=== " .. sym .. ": no changes", "bold")
  else
    put("=== " .. sym .. " ===", "bold")
    put("--- " .. ra .. ":" .. (opts.file or sym), "red")
    put("+++ " .. rb .. ":" .. (opts.file or sym), "green")
    walk_diff(d, function(kind, text)
      local col = ({ hunk = "cyan", del = "red", add = "green", skip = "dim", const = "yellow" })[kind]
      put(text, col)
    end)
  end
  put(A.diff_summary(d), "bold")
  return table.concat(out, "\n") .. "\n"
end

return R
