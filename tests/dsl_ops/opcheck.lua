-- tests/dsl_ops/opcheck.lua: exercises every IR op the library's leaves do not, so each
-- backend's lowering of it is checked against C on both ISAs (tests/dsl_ops.sh):
--   max (a > b ? a : b), fused fma, f32 vector stores with tails, scalar f32 loads/stores,
--   isub, iconst, cvt_f32, bcast, and a prefetch past the end of the buffer (a hint never faults);
-- form int (the sampler's ops): igt_v (int32 a > b: all ones / 0), a scalar running sum
-- (sfill, sadd_acc in a for_rows loop), uint64 loads and stores, 64-bit xor, logical shift
-- right (0, 1, 40, 63), wrapping multiply and 64-bit constants (iconst64);
-- form canon: canon on vectors (tails too) and scalars, canon_raw on raw bf16 pairs, over NaNs
-- of every kind in every lane; form rows: reduce_add_rows (16 vectors reduced together, each
-- lane by the halving tree); form quant: the quantized-weight loads, load_i8 and load_u8 (from int8
-- and uint8 arrays alike, at odd byte offsets, in a tile loop whose pointers are bumped and outside
-- it, offsets past an instruction's immediate too) and load_bcast_f16 (from a uint16_t array and from
-- a binary16 view of bytes), raw and through i2f and a product, and loads at shifted indices (one
-- exact on every tile, one not: gen/bump.lua bumps the first only); lut16 by zero- and sign-extended
-- bytes, a spilled table's lanes broadcast from its slot (reload_bcast, drop), and vtable's lane
-- constants; two slots held open across a loop (slot, spill_to, reload_acc: running sums). Every
-- float stored is canonical (the NaN rule, docs/dsl.md); the raw lanes go to int32 arrays.
-- Form q8dot, the quantized fast tier's ops load_bcast8, dot_u8s8 / dot_s8s8 / dot_s8s7 (the
-- variant's: t.tune.int8_dot), dot_u7s8 (every such variant's), load_f16x8, pair_split, load_f16x4q,
-- reduce_add8 and store_i8 (stamped in avxvnni and avx512vnni: dot_u8s8, avx2madd: dot_s8s7, and
-- dotprod: dot_s8s8; the other forms are exact only).
-- Per tile k of 64 bytes (e = 16 k f32 elements, byte 64 k = 4 e), in a loop whose pointers are bumped:
--   nb[64 k + 16 m ..] the raw words of load_bcast8 of u's f32 view at e + 0, 5 (byte 20, off LDP's
--   16-byte grid), 260 (byte 1040, past LDP's reach: the pointer moves), 12 (reaching back), 16 int32
--   words each (lanes 8-15 repeat 0-7);
--   dq[128 k + 16 s ..] dot(acc[16 k ..], w_s, x bytes 64 k ..) for w_s = u bytes 64 k .. (load_f32),
--   u bytes 64 k + 18 .. (load_raw), the four load_bcast8 vectors; a chained dot (its accumulator
--   another dot's result); a constant accumulator and w (the gemv correction's shape);
--   dq[160 k + 128 ..] dot_u7s8(acc, u bytes & 0x7f, x) and q4's shape: dot_u7s8 of the low nibbles,
--   then of the high ones (ushr8_v by 4), chained
-- per tile of 8 binary16 (j = 8 t): hf[176 t ..] load_f16x8 of h at j + 0, 3, 520 (raw f32 bits), then
-- pair_split of the first for i = 0..3, then load_f16x4q of h at j + 0, 4 (the two: every binary16 of
-- the tile), 523 (byte 1046, past LDR's and LDUR's reach: the pointer moves), 520 (reaching back 6
-- bytes: LDUR);
-- per tile of 16 int32 (e = 16 k): store_i8 of v[64 k + 16 m ..] into o8's bytes 2048 k + 1, 19, 1041,
-- 529 (back past STUR's reach: the bumped pointer moved);
-- outside a loop: xo[0 ..] load_bcast8 of u's f32 view at 244 (byte 976: an LDP immediate), 260, 7;
-- xo[48 ..] their dots with acc[0 ..] and the x bytes at 1200; xo[96 ..] load_f16x8 of h at 501, 5;
-- xo[128 ..] pair_split(acc[0 ..], i) for i = 0..3; xo[192 ..] load_f16x4q of h at 501, 5, 500;
-- xo[240 + 2 q + half] reduce_add8(f[16 q ..], half) for q = 0..6 (f: finite f32), xo[254 + half]
-- reduce_add8(load_bcast8 of f at 3, half) (f32 bits); xo[256 ..] load_f16x4q of h at 501 times
-- f[0 ..]; xo[272 ..] sel128(f[3], f[5]) times sel128(f[7], f[9]) (broadcasts); xo[288 ..]
-- pair_split(f[16 ..], 3) + f[2], xo[304 ..] f[11] - that pair_split;
-- store_i8 of v[48 ..], v[32 ..], v[16 ..], v[0 ..] into o8's bytes 301, 777, 1500, 1999.
-- vtable's words (form quant): lane l = 0x9e3779b9 * (l + 1) mod 2^32, NaN patterns among them
local VT_WORDS = {}
for l = 0, 15 do VT_WORDS[l + 1] = (0x9e3779b9 * (l + 1)) % 0x100000000 end
VT_WORDS[4], VT_WORDS[11] = 0x7f800001, 0xffc00000

local function q8dot(t, a)
  local xb, ub = t:view(a.x, "f32"), t:view(a.u, "f32")
  local function dot_of(acc, w, x)
    if t.tune.int8_dot == "s8s8" then return t:dot_s8s8(acc, w, x) end
    if t.tune.int8_dot == "s8s7" then return t:dot_s8s7(acc, w, x) end
    return t:dot_u8s8(acc, w, x)
  end
  t:for_tiles(t:mul(a.nr, 16), 16, function(e)
    local e4 = t:mul(e, 4)
    local dqi = t:mul(e, 10)
    local acc, x = t:load_f32(a.acc, e, 0), t:load_f32(xb, e, 0)
    local slot = 0
    local function dot(w)
      t:store_f32(a.dq, dqi, 16 * slot, dot_of(acc, w, x))
      slot = slot + 1
    end
    dot(t:load_f32(ub, e, 0))
    dot(t:load_raw(t:view(a.u, "bf16"), t:mul(e, 2), 9))
    local last
    for m, off in ipairs({ 0, 5, 260, 12 }) do
      last = t:load_bcast8(ub, e, off)
      t:store_f32(a.nb, e4, 16 * (m - 1), last)
      dot(last)
    end
    -- chained: (acc + last . x) + u bytes . x
    t:store_f32(a.dq, dqi, 16 * slot, dot_of(dot_of(acc, last, x), t:load_f32(ub, e, 0), x))
    -- a constant accumulator (near 2^31: the sums wrap) and constant w bytes 0x80 0x01 0xff 0x80
    t:store_f32(a.dq, dqi, 16 * (slot + 1), dot_of(t:vconst(0x7ffffff0), t:vconst(0x80ff0180), x))
    -- dot_u7s8: w's bytes in 0..127 (u's low 7 bits; q4's nibbles, low then high, chained)
    local uw = t:load_f32(ub, e, 0)
    t:store_f32(a.dq, dqi, 16 * (slot + 2), t:dot_u7s8(acc, t:band(uw, t:vconst(0x7f7f7f7f)), x))
    local nib = t:vconst(0x0f0f0f0f)
    t:store_f32(a.dq, dqi, 16 * (slot + 3),
                t:dot_u7s8(t:dot_u7s8(acc, t:band(uw, nib), x), t:ushr8_v(uw, 4), x))
  end, nil, { whole = true })
  t:for_tiles(t:mul(a.nh, 8), 8, function(j)
    local j22 = t:mul(j, 22)
    local f = t:load_f16x8(a.h, j, 0)
    t:store_f32(a.hf, j22, 0, f)
    t:store_f32(a.hf, j22, 16, t:load_f16x8(a.h, j, 3))
    t:store_f32(a.hf, j22, 32, t:load_f16x8(a.h, j, 520))
    for i = 0, 3 do t:store_f32(a.hf, j22, 48 + 16 * i, t:pair_split(f, i)) end
    for m, off in ipairs({ 0, 4, 523, 520 }) do
      t:store_f32(a.hf, j22, 96 + 16 * m, t:load_f16x4q(a.h, j, off))
    end
  end, nil, { whole = true })
  local o8 = t:view(a.o8, "i8")
  t:for_tiles(t:mul(a.nr, 16), 16, function(e)
    for m, off in ipairs({ 1, 19, 1041, 529 }) do
      t:store_i8(o8, t:mul(e, 128), off, t:load_f32(a.v, t:mul(e, 4), 16 * (m - 1)))
    end
  end, nil, { whole = true })
  local zero = t:iconst(0)
  local acc, x = t:load_f32(a.acc, zero, 0), t:load_f32(xb, zero, 300)
  for m, off in ipairs({ 244, 260, 7 }) do
    local w = t:load_bcast8(ub, zero, off)
    t:store_f32(a.xo, zero, 16 * (m - 1), w)
    t:store_f32(a.xo, zero, 48 + 16 * (m - 1), dot_of(acc, w, x))
  end
  t:store_f32(a.xo, zero, 96, t:load_f16x8(a.h, zero, 501))
  t:store_f32(a.xo, zero, 112, t:load_f16x8(a.h, zero, 5))
  for i = 0, 3 do t:store_f32(a.xo, zero, 128 + 16 * i, t:pair_split(acc, i)) end
  for m, off in ipairs({ 501, 5, 500 }) do t:store_f32(a.xo, zero, 176 + 16 * m, t:load_f16x4q(a.h, zero, off)) end
  for q = 0, 6 do
    local fv = t:load_f32(a.f, zero, 16 * q)
    for half = 0, 1 do t:store1_f32(a.xo, zero, 240 + 2 * q + half, t:reduce_add8(fv, half, "halving")) end
  end
  local fb = t:load_bcast8(a.f, zero, 3)
  for half = 0, 1 do t:store1_f32(a.xo, zero, 254 + half, t:reduce_add8(fb, half, "halving")) end
  -- the shapes NEON holds in fewer registers (gen/isa/aarch64.lua, classes h and e): a product of
  -- load_f16x4q (read by element), a product of two selects of broadcasts, a sum and a difference of
  -- a pair_split and a broadcast
  local fv = t:load_f32(a.f, zero, 0)
  t:store_f32(a.xo, zero, 256, t:mul(t:load_f16x4q(a.h, zero, 501), fv))
  local function bc(i) return t:load_bcast_f32(a.f, zero, i) end
  t:store_f32(a.xo, zero, 272, t:mul(t:sel128(bc(3), bc(5), 0xe4), t:sel128(bc(7), bc(9), 0xe4)))
  local ps = t:pair_split(t:load_f32(a.f, zero, 16), 3)
  t:store_f32(a.xo, zero, 288, t:add(ps, bc(2)))
  t:store_f32(a.xo, zero, 304, t:sub(bc(11), ps))
  for m, off in ipairs({ 301, 777, 1500, 1999 }) do
    t:store_i8(o8, zero, off, t:load_f32(a.v, zero, 16 * (4 - m)))
  end
end

return {
  leaf = "opcheck",
  doc = "DSL conformance: elementwise max and fma, scalar ops",
  -- fast: form q8dot only (the int8 dot products exist in these variants alone)
  tiers = { exact = { "neon", "avx2", "avx512" }, fast = { "avxvnni", "avx512vnni", "dotprod" } },
  tolerance = { fast = "opcheck_fast" },
  params = {},
  check = function() end,
  forms = {
    { name = "ew", tiers = { "exact" }, args = {
        { "a", "const float *", extent = "n" }, { "b", "const float *", extent = "n" },
        { "c", "const float *", extent = "n" }, { "mx", "float *", extent = "n" }, { "fm", "float *", extent = "n" },
        { "sc", "float *", extent = "2" }, { "n", "int64_t" }, { "s", "float" } } },
    { name = "int", tiers = { "exact" }, args = {
        { "a", "const float *", extent = "n" }, { "b", "const float *", extent = "n" },
        { "gt", "float *", extent = "n" }, { "run", "float *", extent = "n" },
        { "st", "uint64_t *", inout = true, extent = "8" }, { "n", "int64_t" } } },
    { name = "canon", tiers = { "exact" }, args = {
        { "a", "const float *", extent = "n" }, { "h", "const uint16_t *", extent = "32 * nr" },
        { "cn", "float *", extent = "n" }, { "cs", "float *", extent = "n" },
        { "cr", "uint16_t *", extent = "32 * nr" },
        { "n", "int64_t" }, { "nr", "int64_t" } } },
    { name = "quant", tiers = { "exact" }, args = {
        { "q", "const int8_t *", extent = "32 * nr + 320" }, { "u", "const uint8_t *", extent = "32 * nr + 320" },
        { "h", "const uint16_t *", extent = "nh + 1" },
        { "si", "int32_t *", extent = "64 * nr" }, { "zi", "int32_t *", extent = "64 * nr" },
        { "sf", "float *", extent = "16 * nr" }, { "xi", "int32_t *", extent = "80" },
        { "hb", "int32_t *", extent = "32 * nh" }, { "pi", "int32_t *", extent = "32 * nr" },
        { "lk", "int32_t *", extent = "64 * nr + 112" },
        { "nr", "int64_t" }, { "nh", "int64_t" } } },
    { name = "rows", tiers = { "exact" }, args = {
        { "a", "const float *", extent = "256 * nr" }, { "y", "float *", extent = "16 * nr" },
        { "mv", "float *", extent = "112" }, { "nr", "int64_t" } } },
    { name = "q8dot", tiers = { "fast" }, variants = { fast = { "avx2madd", "avxvnni", "avx512vnni", "dotprod" } },
      args = {
        { "u", "const uint8_t *", extent = "64 * nr + 2112" }, { "x", "const int8_t *", extent = "64 * nr + 1264" },
        { "acc", "const int32_t *", extent = "16 * nr + 16" }, { "h", "const uint16_t *", extent = "8 * nh + 528" },
        { "v", "const int32_t *", extent = "64 * nr + 64" }, { "f", "const float *", extent = "112" },
        { "nb", "int32_t *", extent = "64 * nr" }, { "dq", "int32_t *", extent = "160 * nr" },
        { "hf", "int32_t *", extent = "176 * nh" }, { "o8", "int32_t *", extent = "512 * max(nr, 1)" },
        { "xo", "int32_t *", extent = "320" }, { "nr", "int64_t" }, { "nh", "int64_t" } } },
  },
  body = function(t, _, form)
    local a = t.arg
    if form.name == "q8dot" then return q8dot(t, a) end
    if form.name == "quant" then
      -- per tile of 32 bytes (i = 32 k): si[64 k ..] the bytes at i + 0, 17, 3 (of u), 257 sign-extended
      -- (257: past LDUR's reach, the bumped pointer moves, and the loads after it reach back),
      -- zi[64 k ..] at i + 0, 17, 3 (of q), 31 zero-extended; sf[16 k + l] = q[i + l] * the binary16 at
      -- byte i + 6 of u
      -- two slots held open across the loop (slot, spill_to, reload_acc): running sums over the
      -- tiles of u's bytes at i (zero-extended) and of 2 x q's bytes at i + 9 (sign-extended), each
      -- tile's sums read back from its slot, updated, written back; after it, lk[64 nr + 80 ..] and
      -- lk[64 nr + 96 ..]
      local pk = { t:slot(), t:slot() }
      for _, h in ipairs(pk) do t:spill_to(h, t:zero()) end
      t:for_tiles(t:mul(a.nr, 32), 32, function(i)
        local i2 = t:add(i, i)
        local s1, s2 = t:reload_acc(pk[1]), t:reload_acc(pk[2])
        t:fma_acc(s1, t:i2f(t:load_u8(a.u, i, 0)), t:vconst(0x3f800000))
        t:fma_acc(s2, t:i2f(t:load_i8(a.q, i, 9)), t:vconst(0x40000000))
        t:spill_to(pk[1], s1)
        t:spill_to(pk[2], s2)
        local offs = { { a.q, 0 }, { a.q, 17 }, { a.u, 3 }, { a.q, 257 } }
        for m, o in ipairs(offs) do t:store_f32(a.si, i2, 16 * (m - 1), t:load_i8(o[1], i, o[2])) end
        local uoffs = { { a.u, 0 }, { a.u, 17 }, { a.q, 3 }, { a.u, 31 } }
        for m, o in ipairs(uoffs) do t:store_f32(a.zi, i2, 16 * (m - 1), t:load_u8(o[1], i, o[2])) end
        local scale = t:load_bcast_f16(t:view(a.u, "f16"), t:ishr(i, 1), 3)
        t:store_f32(a.sf, t:ishr(i, 1), 0, t:canon(t:mul(t:i2f(t:load_i8(a.q, i, 0)), scale)))
        -- shifted indices (gen/bump.lua): pi[32 k ..] q at (i * 9) >> 3 (36 k, exact on every tile: a
        -- bumped pointer), + 1; then u at i >> 6 (k / 2, rounded down: not affine, computed per tile), + 2
        t:store_f32(a.pi, i, 0, t:load_i8(a.q, t:ishr(t:mul(i, 9), 3), 1))
        t:store_f32(a.pi, i, 16, t:load_u8(a.u, t:ishr(i, 6), 2))
        -- lk[64 k ..] lut16 of the 16 words at u byte i (the table) by the q bytes at i + 5
        -- (zero-extended: their low nibbles), then by those bytes >> 4; the table spilled, its
        -- lanes 3 and 15 broadcast from the slot (reload_bcast), the slot dropped
        local tab = t:load_f32(t:view(a.u, "f32"), t:ishr(i, 2), 0)
        local idx = t:load_u8(a.q, i, 5)
        t:store_f32(a.lk, i2, 0, t:lut16(tab, idx))
        t:store_f32(a.lk, i2, 16, t:lut16(tab, t:isra_v(idx, 4)))
        local sv = t:spill(tab)
        t:store_f32(a.lk, i2, 32, t:reload_bcast(sv, 3))
        t:store_f32(a.lk, i2, 48, t:reload_bcast(sv, 15))
        t:drop(sv)
      end, nil, { whole = true })
      -- hb[32 j ..] the binary16 h[j] in every lane, then h[j + 1]: raw f32 bits
      t:for_tiles(a.nh, 1, function(j)
        local j32 = t:mul(j, 32)
        t:store_f32(a.hb, j32, 0, t:load_bcast_f16(a.h, j, 0))
        t:store_f32(a.hb, j32, 16, t:load_bcast_f16(a.h, j, 1))
      end, nil, { whole = true })
      -- outside a loop (no bumped pointer): xi[0 ..] q at 301 (odd, past LDUR's reach), u at 288, 7;
      -- xi[48 ..] u at 250 (i8), q at 301 (u8)
      local zero = t:iconst(0)
      local xs = { t:load_i8(a.q, zero, 301), t:load_u8(a.u, zero, 288), t:load_u8(a.u, zero, 7),
                   t:load_i8(a.u, zero, 250), t:load_u8(a.q, zero, 301) }
      for m, v in ipairs(xs) do t:store_f32(a.xi, zero, 16 * (m - 1), v) end
      -- lk[64 nr ..]: lut16 of the words at u byte 100 by the q bytes at 301 sign-extended (the bits
      -- above the low 4 ignored); that table spilled: its lane 7 broadcast, then the whole reloaded
      local at = t:mul(a.nr, 64)
      local tab0 = t:load_f32(t:view(a.u, "f32"), zero, 25)
      t:store_f32(a.lk, at, 0, t:lut16(tab0, t:load_i8(a.q, zero, 301)))
      local sv0 = t:spill(tab0)
      t:store_f32(a.lk, at, 16, t:reload_bcast(sv0, 7))
      t:store_f32(a.lk, at, 32, t:reload(sv0))
      -- lk[64 nr + 48 ..]: vtable's 16 words, then lut16 of them by u bytes at 40 (zero-extended)
      local vt = t:vtable("lk_words", VT_WORDS)
      t:store_f32(a.lk, at, 48, vt)
      t:store_f32(a.lk, at, 64, t:lut16(vt, t:load_u8(a.u, zero, 40)))
      t:store_f32(a.lk, at, 80, t:reload(pk[1]))
      t:store_f32(a.lk, at, 96, t:reload(pk[2]))
      return
    end
    if form.name == "rows" then
      -- y[16 g + l] = the halving tree of a[256 g + 16 l .. + 16]
      t:for_tiles(t:mul(a.nr, 256), 256, function(i)
        local s = t:reduce_add_rows(function(l) return t:load_f32(a.a, i, 16 * l) end, "halving")
        t:store_f32(a.y, t:ishr(i, 4), 0, t:canon(s))
      end, nil, { whole = true })
      -- the chunk moves alone, on a[0..15] and a[16..31]
      local zero = t:iconst(0)
      local x, y = t:load_f32(a.a, zero, 0), t:load_f32(a.a, zero, 16)
      local moves = { function() return t:sel128(x, y, 0x1b) end, function() return t:unpack_lo(x, y, 1) end,
                      function() return t:unpack_hi(x, y, 1) end, function() return t:unpack_lo(x, y, 2) end,
                      function() return t:unpack_hi(x, y, 2) end, function() return t:uzp4_even(x, y) end,
                      function() return t:uzp4_odd(x, y) end }
      for q, m in ipairs(moves) do t:store_f32(a.mv, zero, 16 * (q - 1), t:canon(m())) end
      return
    end
    if form.name == "canon" then
      t:for_tiles(a.n, 16, function(i, tail)
        local lanes = tail and tail(0)
        t:store_f32(a.cn, i, 0, t:canon(t:load_f32(a.a, i, 0, lanes)), lanes)
      end)
      t:for_rows(t:iconst(0), a.n, 1, function(r) t:store1_f32(a.cs, r, 0, t:canon(t:load1_f32(a.a, r, 0))) end)
      t:for_tiles(t:mul(a.nr, 32), 32, function(i) t:store_raw(a.cr, i, 0, t:canon_raw(t:load_raw(a.h, i, 0))) end,
                  nil, { whole = true })
      return
    end
    if form.name == "int" then
      t:for_tiles(a.n, 16, function(i, tail)
        local lanes = tail and tail(0)
        t:store_f32(a.gt, i, 0, t:igt_v(t:load_f32(a.a, i, 0, lanes), t:load_f32(a.b, i, 0, lanes)), lanes)
      end)
      -- run[r] = 1 + a[0] + ... + a[r], one f32 addition at a time
      local acc = t:sfill(0x3f800000)
      t:for_rows(t:iconst(0), a.n, 1, function(r)
        t:sadd_acc(acc, t:load1_f32(a.a, r, 0))
        t:store1_f32(a.run, r, 0, t:canon(acc))
      end)
      -- st[2..7] from st[0] (x) and st[1] (y)
      local zero = t:iconst(0)
      local x, y = t:load1_u64(a.st, zero, 0), t:load1_u64(a.st, zero, 1)
      t:store1_u64(a.st, zero, 2, t:ixor(x, y))
      t:store1_u64(a.st, zero, 3, t:ishr(x, 1))
      t:store1_u64(a.st, zero, 4, t:ishr(y, 63))
      t:store1_u64(a.st, zero, 5, t:mul(x, t:iconst64("0x9e3779b97f4a7c15")))
      t:store1_u64(a.st, zero, 6, t:iconst64("0xfedcba9876543210"))
      t:store1_u64(a.st, zero, 7, t:add(t:ishr(t:mul(x, y), 40), t:ishr(x, 0)))
      return
    end
    local sv = t:bcast(a.s)
    t:for_tiles(a.n, 16, function(i, tail)
      local lanes = tail and tail(0)
      t:prefetch(a.a, i, 4096, 4)         -- a hint far past the end: must not fault
      local va, vb, vc = t:load_f32(a.a, i, 0, lanes), t:load_f32(a.b, i, 0, lanes), t:load_f32(a.c, i, 0, lanes)
      t:store_f32(a.mx, i, 0, t:canon(t:max(va, vb)), lanes)
      t:store_f32(a.fm, i, 0, t:canon(t:fma(va, t:mul(vb, sv), vc)), lanes)
    end)
    -- sc[0] = a[0] * b[0] + c[0] - in scalar ops; sc[1] = (float)(n - 1)
    local zero = t:iconst(0)
    local p = t:mul(t:load1_f32(a.a, zero, 0), t:load1_f32(a.b, zero, 0))
    t:store1_f32(a.sc, zero, 0, t:canon(t:add(p, t:load1_f32(a.c, zero, 0))))
    t:store1_f32(a.sc, zero, 1, t:canon(t:cvt_f32(t:sub(a.n, 1))))
  end,
}
