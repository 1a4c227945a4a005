-- gen/sha1.lua: SHA-1 in portable Lua, for the stamp banners.
-- A template's hash is its git blob id (`git hash-object templates/x.lua`), so a reviewer can
-- check a banner against the tree without running the generator.

local C = require("compat")
local band, bor, bxor, bnot, shl, shr, rol, add32 =
  C.band, C.bor, C.bxor, C.bnot, C.shl, C.shr, C.rol, C.add32

local M = {}

local function be32(s, i)
  local a, b, c, d = s:byte(i, i + 3)
  return ((a * 256 + b) * 256 + c) * 256 + d
end

local function hex32(x)
  return string.format("%08x", x)
end

function M.digest(msg)
  local h0, h1, h2, h3, h4 = 0x67452301, 0xefcdab89, 0x98badcfe, 0x10325476, 0xc3d2e1f0
  local len = #msg
  -- padding: 0x80, zeros, 64-bit big-endian bit length
  local bits = len * 8
  local pad = string.char(0x80) .. string.rep("\0", (55 - len) % 64)
  local lenbytes = {}
  for i = 7, 0, -1 do
    lenbytes[#lenbytes + 1] = string.char(math.floor(bits / 2 ^ (8 * i)) % 256)
  end
  msg = msg .. pad .. table.concat(lenbytes)
  assert(#msg % 64 == 0)
  local w = {}
  for chunk = 1, #msg, 64 do
    for i = 0, 15 do w[i] = be32(msg, chunk + 4 * i) end
    for i = 16, 79 do w[i] = rol(bxor(bxor(w[i - 3], w[i - 8]), bxor(w[i - 14], w[i - 16])), 1) end
    local a, b, c, d, e = h0, h1, h2, h3, h4
    for i = 0, 79 do
      local f, k
      if i < 20 then
        f, k = bor(band(b, c), band(bnot(b), d)), 0x5a827999
      elseif i < 40 then
        f, k = bxor(bxor(b, c), d), 0x6ed9eba1
      elseif i < 60 then
        f, k = bor(bor(band(b, c), band(b, d)), band(c, d)), 0x8f1bbcdc
      else
        f, k = bxor(bxor(b, c), d), 0xca62c1d6
      end
      local t = add32(rol(a, 5), f, e, k, w[i])
      e, d, c, b, a = d, c, rol(b, 30), a, t
    end
    h0, h1, h2, h3, h4 = add32(h0, a), add32(h1, b), add32(h2, c), add32(h3, d), add32(h4, e)
  end
  return hex32(h0) .. hex32(h1) .. hex32(h2) .. hex32(h3) .. hex32(h4)
end

-- git's object id of a blob with this content.
function M.git_blob(content)
  return M.digest("blob " .. C.int(#content) .. "\0" .. content)
end

-- shr is re-exported for callers that need a byte of a word.
M.shr, M.shl = shr, shl

return M
