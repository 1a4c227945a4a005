-- tools/asmdiff/revisions.lua: where stamps are read from: the work tree (WORKTREE), a git
-- revision (git show REV:./generated/...), or a revision's own tree stamped by its own
-- generator (--regen: git archive, then gen/fkgen.lua, the two revisions in parallel).
-- A source is { label, read(path under generated/) -> text }; a missing file is a failure.

local C = require("compat")
local U = require("asmdiff.common")

local V = {}

local fail, int = U.fail, U.int
local shell_quote, execute_ok = C.sh_quote, C.execute_ok -- compat.lua: both interpreters

-- The stamps of a tree: root/generated, or gendir (a regenerated tree, `label` its revision).
local function worktree_source(root, gendir, label)
  gendir = gendir or (root .. "/generated")
  return {
    label = label or "WORKTREE",
    read = function(rel)
      local s, err = C.read_file(gendir .. "/" .. rel)
      if not s then
        local where = label and (label .. " (regenerated): generated/" .. rel) or (gendir .. "/" .. rel)
        fail("cannot read " .. where .. " (" .. tostring(err):gsub("^[^:]*: ", "") .. ")")
      end
      return s
    end,
  }
end

local function make_tmpdir()
  return C.make_tmpdir() or fail("cannot create a temporary directory (mktemp -d)")
end

-- The stamps committed at `rev` (git show, through a file in tmpdir).
local function git_source(root, rev, tmpdir)
  local tmpfile = tmpdir .. "/show"
  return {
    label = rev,
    read = function(rel)
      -- "REV:./path" is relative to --root, which need not be the repository's top
      local cmd = "git -C " .. shell_quote(root) .. " show " .. shell_quote(rev .. ":./generated/" .. rel)
        .. " > " .. shell_quote(tmpfile) .. " 2>/dev/null"
      if not execute_ok(cmd) then fail("revision " .. rev .. " has no generated/" .. rel) end
      return C.read_file(tmpfile) or fail("cannot read " .. tmpfile)
    end,
  }
end

-- The Lua that runs this tool (FK_LUA overrides): the generators of --regen run under it too.
local function interpreter()
  local env = os.getenv("FK_LUA")
  if env and env ~= "" then return env end
  if arg then
    local lo = 0
    while arg[lo - 1] do lo = lo - 1 end
    if lo < 0 and arg[lo] then return arg[lo] end
  end
  return "lua5.4"
end

-- Stamp revisions' own trees with their own generators, all at once (one process each, in
-- parallel). `jobs`: { {rev =, label =}, ... }; returns one source per job.
local function regen_sources(root, jobs, tmpdir)
  local lua = interpreter()
  local parts, outs = {}, {}
  for k, job in ipairs(jobs) do
    local out = tmpdir .. "/regen-" .. job.label:gsub("[^%w]", "_")
    local log = out .. ".log"
    local cmd
    if job.rev == "WORKTREE" then
      cmd = "mkdir -p " .. shell_quote(out .. "/generated") .. " && " .. shell_quote(lua) .. " "
        .. shell_quote(root .. "/gen/fkgen.lua") .. " --root " .. shell_quote(root) .. " --out "
        .. shell_quote(out .. "/generated")
    else
      -- the tree under --root at that revision (archived from the top: git archive run in a
      -- subfolder refuses a tree)
      cmd = "mkdir -p " .. shell_quote(out) .. " && top=$(git -C " .. shell_quote(root)
        .. " rev-parse --show-toplevel) && prefix=$(git -C " .. shell_quote(root)
        .. " rev-parse --show-prefix) && git -C \"$top\" archive " .. shell_quote(job.rev) .. ":\"$prefix\""
        .. " | tar -x -C " .. shell_quote(out) .. " && rm -rf "
        .. shell_quote(out .. "/generated") .. " && " .. shell_quote(lua) .. " "
        .. shell_quote(out .. "/gen/fkgen.lua") .. " --root " .. shell_quote(out)
    end
    parts[#parts + 1] = "( " .. cmd .. " ) > " .. shell_quote(log) .. " 2>&1 & p" .. int(k) .. "=$!"
    outs[k] = { out = out, log = log }
  end
  local waits = {}
  for k = 1, #jobs do
    waits[#waits + 1] = "wait $p" .. int(k) .. " || echo " .. int(k) .. " >> " .. shell_quote(tmpdir .. "/regen.failed")
  end
  os.execute(table.concat(parts, "; ") .. "; " .. table.concat(waits, "; "))
  local failed = C.read_file(tmpdir .. "/regen.failed") or ""
  local sources = {}
  for k, job in ipairs(jobs) do
    if failed:find("%f[%d]" .. int(k) .. "%f[^%d]") then
      local msg = (C.read_file(outs[k].log) or ""):match("[^\n]+") or "no output"
      fail("regenerating " .. job.rev .. " failed: " .. msg)
    end
    sources[k] = worktree_source(outs[k].out, outs[k].out .. "/generated", job.rev)
  end
  return sources
end

-- A revision's short hash; an unknown revision is a failure.
local function git_rev(root, rev)
  local p = io.popen("git -C " .. shell_quote(root) .. " rev-parse --verify --quiet --short "
    .. shell_quote(rev .. "^{commit}") .. " 2>/dev/null")
  local h = p and p:read("*l")
  if p then p:close() end
  if not h or not h:match("^%x+$") then fail("unknown git revision '" .. rev .. "'") end
  return h
end

V.worktree_source, V.git_source, V.regen_sources = worktree_source, git_source, regen_sources
V.git_rev, V.make_tmpdir = git_rev, make_tmpdir

return V
