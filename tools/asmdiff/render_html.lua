-- tools/asmdiff/render_html.lua: the HTML view: a self-contained page (inline CSS, no external
-- asset) holding the side-by-side tables or the revision diffs, every text escaped.

local P = require("asmdiff.parse")
local A = require("asmdiff.align")
local R = require("asmdiff.render_text")

local H = {}

local item_text, const_line, walk_diff = P.item_text, R.const_line, R.walk_diff

local function html_escape(s)
  return (s:gsub("[&<>\"]", { ["&"] = "&amp;", ["<"] = "&lt;", [">"] = "&gt;", ['"'] = "&quot;" }))
end
H.html_escape = html_escape

local CSS = [[
body { font-family: sans-serif; margin: 1.5em; color: #222; }
h1 { font-size: 1.3em; } h2 { font-size: 1.1em; margin-top: 2em; }
table { border-collapse: collapse; font-family: monospace; font-size: 12px; }
td, th { padding: 0 0.6em; white-space: pre; vertical-align: top; text-align: left; }
th { background: #eee; border-bottom: 1px solid #999; }
tbody.grp { border-top: 1px solid #bbb; }
td.mid { background: #fafae8; color: #664; border-left: 1px solid #ccc; border-right: 1px solid #ccc; }
td.idd { color: #a0a; }
tbody.left td.l, tbody.left td.mid { background: #fde8e8; }
tbody.right td.r, tbody.right td.mid { background: #e6f6e6; }
td.absent { color: #999; font-style: italic; }
td.label { color: #067; } td.raw { color: #888; }
tr.del td { background: #fde8e8; } tr.add td { background: #e6f6e6; }
tr.hunk td { background: #e8eefa; color: #335; } tr.skip td { color: #888; font-style: italic; }
tr.file td { font-weight: bold; } tr.const td { color: #a60; }
.equal { color: #070; } .differ { color: #b00; font-weight: bold; } .only { color: #a60; }
p.summary { font-weight: bold; }
]]

local function html_page(title, body)
  return "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>"
    .. html_escape(title) .. "</title>\n<style>\n" .. CSS .. "</style>\n</head>\n<body>\n<h1>"
    .. html_escape(title) .. "</h1>\n" .. body .. "</body>\n</html>\n"
end
H.html_page = html_page

local function td(cls, text) return "<td class=\"" .. cls .. "\">" .. html_escape(text) .. "</td>" end

-- One <h2> section: a side-by-side model (align.lua) as a table, its constant tables, its summary.
function H.render_html_section(model, opts)
  opts = opts or {}
  local sl, sr = model.left, model.right
  local h = {}
  local title = opts.title or ((sl.leaf or "?") .. " " .. (sl.form or "?"))
  local lhead, rhead = sl.isa .. " " .. sl.variant, sr.isa .. " " .. sr.variant
  h[#h + 1] = "<h2>" .. html_escape(title .. ": " .. lhead .. " vs " .. rhead) .. "</h2>\n"
  h[#h + 1] = "<p>left: <code>" .. html_escape(sl.symbol) .. "</code>, right: <code>" .. html_escape(sr.symbol)
    .. "</code>; @ = each side's own symbol followed by _; [a|b] = op ids that differ between the sides</p>\n"
  h[#h + 1] = "<table class=\"sbs\">\n<thead><tr><th>" .. html_escape(lhead)
    .. "</th><th>op group</th><th>" .. html_escape(rhead) .. "</th></tr></thead>\n"
  local function cls(it, side)
    if not it then return side end
    if it.kind == "absent" then return side .. " absent" end
    if it.kind == "label" then return side .. " label" end
    if it.kind ~= "instr" then return side .. " raw" end
    return side
  end
  for _, row in ipairs(model.rows) do
    if row.first then
      if _ ~= 1 then h[#h + 1] = "</tbody>\n" end
      h[#h + 1] = "<tbody class=\"grp " .. row.side .. "\">\n"
    end
    h[#h + 1] = "<tr>" .. td(cls(row.l, "l"), item_text(row.l, sl.symbol))
      .. td(row.idd and row.first and "mid idd" or "mid", row.title or row.mid or "")
      .. td(cls(row.r, "r"), item_text(row.r, sr.symbol)) .. "</tr>\n"
  end
  if #model.rows > 0 then h[#h + 1] = "</tbody>\n" end
  h[#h + 1] = "</table>\n"
  if #model.consts > 0 then
    h[#h + 1] = "<table class=\"consts\">\n<thead><tr><th>constant table</th><th>"
      .. html_escape(model.lname .. " vs " .. model.rname) .. "</th></tr></thead>\n<tbody>\n"
    for _, e in ipairs(model.consts) do
      local c = e.status == "equal" and "equal" or (e.status == "differ" and "differ" or "only")
      h[#h + 1] = "<tr>" .. td("", "k_" .. e.name) .. td(c, const_line(e, model.lname, model.rname)) .. "</tr>\n"
    end
    h[#h + 1] = "</tbody>\n</table>\n"
  else
    h[#h + 1] = "<p>constant tables: none on either side</p>\n"
  end
  h[#h + 1] = "<p class=\"summary\">" .. html_escape(A.summary_line(model)) .. "</p>\n"
  return table.concat(h)
end

-- One <h2> section: a revision diff model, the text view's lines one per row.
function H.render_diff_html(d, opts)
  opts = opts or {}
  local sym = (d.b or d.a).symbol
  local what = ({ added = "added in " .. (opts.rev_b or "B"), removed = "removed in " .. (opts.rev_b or "B"),
                  same = "no changes", changed = "changed" })[d.kind]
  local h = { "<h2>" .. html_escape(sym .. ": " .. what) .. "</h2>\n" }
  if d.kind == "changed" then
    h[#h + 1] = "<table class=\"diff\">\n<tbody>\n"
    local file = opts.file or sym
    h[#h + 1] = "<tr class=\"file\"><td>" .. html_escape("--- " .. (opts.rev_a or "A") .. ":" .. file)
      .. "</td></tr>\n<tr class=\"file\"><td>" .. html_escape("+++ " .. (opts.rev_b or "B") .. ":" .. file)
      .. "</td></tr>\n"
    walk_diff(d, function(kind, text)
      h[#h + 1] = "<tr class=\"" .. kind .. "\"><td>" .. html_escape(text) .. "</td></tr>\n"
    end)
    h[#h + 1] = "</tbody>\n</table>\n"
  end
  h[#h + 1] = "<p class=\"summary\">" .. html_escape(A.diff_summary(d)) .. "</p>\n"
  return table.concat(h)
end

return H
