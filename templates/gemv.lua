-- templates/gemv.lua: the BF16 GEMV family.
--
-- For activation rows j in [0, m) (m = 1..4, sharing each pass over the weights) and weight
-- rows n in [row_begin, row_end):
--   s[j,n] = sum_k W[n,k] * x[j,k]          W bf16, row n at w + n*ldw; x f32, row j at x + j*ldx
--   form f32:          y = s                 (f32 out; a NaN stored as the canonical 0x7fc00000)
--   form f32_bias:     y = s + bias[n]       (f32 out, f32 bias; NaN likewise)
--   form bf16_rne:     y = RNE(s)            (bf16 out, integer round-to-nearest-even; NaN -> 0x7fc0)
--   form bf16_rne_add: y = RNE(s + r)        (r bf16, indexed like y; y may equal r)
-- The destination of (j, n) is y + y_off + j*ldy + n: an explicit row stride and base offset,
-- so a K or V projection writes straight into its cache slot.
--
-- Exact tier (bit-identical on every ISA). x is first arranged into xs, per 64-element tile,
-- as chains of 16 lanes; then, per row n and activation row j, lane l of chain c (c = 0..3)
-- accumulates with fma, in increasing k, the k with
--     k mod 64 = 32*(c div 2) + 2*l + (c mod 2)
-- (chains 0, 1: even and odd elements of the first 32 of a tile; chains 2, 3: of the second 32,
-- which is how a 64-byte load of bf16 pairs splits into two f32 vectors with a shift and a
-- mask). Lanes past k contribute nothing. Then v = (c0 + c1) + (c2 + c3) lane by lane, the
-- halving tree sums v, and the destination op is applied. The schedule (how many activation
-- rows share one pass over a weight row) follows the register file; the order does not.
--
-- Fast tier (faithful only). x is rounded to bf16 once per call (integer RNE) into xs; lane l
-- of chain c (0, 1) accumulates, with the CPU's bf16 dot instruction (VDPBF16PS, BFDOT), the
-- pairs k mod 64 = 32c + 2l, 32c + 2l + 1; then v = c0 + c1, the halving tree, the destination.
-- The instruction's rounding differs between ISAs; fixtures/README.md derives the bound.
--
-- xs (caller scratch, per call and per thread): m * round_up(k, 64) floats.

local PACK_ROWS, TILE = 4, 64
-- the blocked layout of the fast tier's outer-product forms: blocks of BLOCK_ROWS rows (one
-- output row per f32 lane), BLOCK_GROUP blocks interleaved per bf16 pair of k, k padded to
-- BLOCK_KALIGN
local BLOCK_ROWS, BLOCK_GROUP, BLOCK_KALIGN = 16, 4, 16

-- y and r: m rows of the destination from y_off on, row_end outputs each
local DST = "row_end > row_begin ? y_off + (m - 1) * ldy + row_end : 0"

local function args(form)
  local out = form.f32 and "float *" or "uint16_t *"
  local a = {}
  if form.blocked then
    a[#a + 1] = { "w", "const uint16_t *", doc = "weights blocked by fk_gemv_pack_blocked (FK_GEMV_BLOCK_* layout)",
                  extent = string.format("row_end > row_begin ? round_up(row_end, %d) * round_up(k, %d) : 0",
                                         BLOCK_ROWS * BLOCK_GROUP, BLOCK_KALIGN) }
  elseif form.packed then
    a[#a + 1] = { "w", "const uint16_t *", doc = "weights packed by fk_gemv_pack (FK_GEMV_PACK_ROWS rows per group)",
                  extent = string.format("row_end > row_begin ? round_up(row_end, %d) * round_up(k, %d) : 0",
                                         PACK_ROWS, TILE) }
  else
    a[#a + 1] = { "w", "const uint16_t *", extent = "row_end > row_begin ? (row_end - 1) * ldw + k : 0",
                  doc = "weights: row n at w + n * ldw" }
    a[#a + 1] = { "ldw", "int64_t", doc = "row stride of w in elements, >= k" }
  end
  local rest = {
    { "x", "const float *", extent = "span(m, ldx, k)", doc = "activations: row j at x + j * ldx" },
    { "ldx", "int64_t", doc = "row stride of x in elements, >= k" },
    -- (the blocked forms need less scratch than this)
    { "xs", "float *", scratch = true, extent = "m * round_up(k, 64)",
      doc = "scratch: m * round_up(k, 64) floats, one per thread" },
  }
  for _, r in ipairs(rest) do a[#a + 1] = r end
  if form.bias then a[#a + 1] = { "bias", "const float *", extent = "row_end > row_begin ? row_end : 0",
                                  doc = "f32 bias, indexed by row n" } end
  if form.add then a[#a + 1] = { "r", "const uint16_t *", extent = DST, doc = "bf16 residual, indexed like y" } end
  a[#a + 1] = { "y", out, extent = DST, doc = "output (j, n) at y + y_off + j * ldy + n" }
  a[#a + 1] = { "y_off", "int64_t", doc = "base offset of the destination, in elements" }
  a[#a + 1] = { "ldy", "int64_t", doc = "stride between activation rows of the destination" }
  a[#a + 1] = { "m", "int64_t", doc = "activation rows, 1..4" }
  a[#a + 1] = { "k", "int64_t", doc = "reduction length, >= 1" }
  a[#a + 1] = { "row_begin", "int64_t", doc = form.blocked and "first weight row, a multiple of 64 (a block group)"
                                              or form.packed and "first weight row, a multiple of FK_GEMV_PACK_ROWS"
                                              or "first weight row" }
  a[#a + 1] = { "row_end", "int64_t", doc = "one past the last weight row" }
  return a
end

local function form(name, f)
  f.name = name
  f.args = args(f)
  -- the packed (exact) and blocked (fast) layouts run through their row-major form's fixtures
  if f.packed or f.blocked then f.fixtures = { via = name:gsub("_packed$", ""):gsub("_blocked$", "") } end
  return f
end

-- The destination of (j, n): bias, residual, rounding, store.
local blocked_body

local function dest_row(t, a, base, j, size)
  local row = t:addr(base, a.y_off, size)
  if j > 0 then row = t:addr(row, t:mul(a.ldy, j), size) end
  return row
end

local function finish(t, form_, a, s, j, n)
  if form_.f32 then
    if form_.bias then s = t:add(s, t:load1_f32(a.bias, n, 0)) end
    t:store1_f32(dest_row(t, a, a.y, j, 4), n, 0, t:canon(s))
    return
  end
  if form_.add then s = t:add(s, t:load1_bf16(dest_row(t, a, a.r, j, 2), n, 0)) end
  t:store1_bf16(dest_row(t, a, a.y, j, 2), n, 0, t:rne(s))
end

-- The fast tier's outer product over the blocked layout: lane l of an accumulator is output
-- row n + l; each step adds w[n+l][k, k+1] . x[k, k+1] (x rounded to bf16 once, the pair
-- broadcast from memory); no horizontal reduction. Rows past row_end (zero padding) are
-- computed and not stored.
blocked_body = function(t, p, form_, a, ms)
  local BR, BG = BLOCK_ROWS, BLOCK_GROUP
  local kpad = t:iand(t:add(a.k, BLOCK_KALIGN - 1), -BLOCK_KALIGN)
  t:cases(a.m, ms, function(M)
    -- xs: x rounded to bf16 once, row j at xs + j * kpad halfwords, zero-padded to kpad
    for j = 0, M - 1 do
      local xrow = t:addr(a.x, t:mul(a.ldx, j), 4)
      local xsrow = t:addr(t:view(a.xs, "bf16"), t:mul(kpad, j), 2)
      t:for_tiles(a.k, 16, function(i, tail)
        t:store_bf16(xsrow, i, 0, t:rne(t:load_f32(xrow, i, 0, tail and tail(0))))
      end)
    end
    -- accumulators (activation rows x blocks) + the broadcast x pairs + one w vector in flight
    local budget = t.tune.accumulators
    local group = math.max(1, math.min(M, math.floor(budget / (BG + 1))))   -- activation rows per pass
    local sub = BG                                      -- blocks per pass: a divisor of the group
    while sub > 1 and (BG % sub ~= 0 or sub * group + group > budget) do sub = sub - 1 end
    t:for_tiles(a.row_end, BR * BG, function(n, tail)
      for b0 = 0, BG - 1, sub do
        for g0 = 0, M - 1, group do
          local js, bs = {}, {}
          for j = g0, math.min(g0 + group, M) - 1 do js[#js + 1] = j end
          for b = b0, b0 + sub - 1 do bs[#bs + 1] = b end
          local acc = {}
          for _, j in ipairs(js) do
            acc[j] = {}
            for _, b in ipairs(bs) do acc[j][b] = t:zero() end
          end
          local gw = t:addr(a.w, t:mul(n, kpad), 2)     -- n is a multiple of BR * BG
          local xsrow = {}
          for _, j in ipairs(js) do xsrow[j] = t:addr(t:view(a.xs, "bf16"), t:mul(kpad, j), 2) end
          t:for_tiles(kpad, 16, function(i)
            local wi = t:mul(i, BG * BR)
            for u = 0, 7 do                            -- the 8 pairs of this 16-element tile
              local xp = {}
              for _, j in ipairs(js) do xp[j] = t:load_pair_bcast(xsrow[j], i, 2 * u) end
              for _, b in ipairs(bs) do
                local off = (u * BG + b) * 2 * BR
                if p.prefetch_stream > 0 and M > 1 then t:prefetch(gw, wi, off + p.prefetch_stream, 2, 2) end
                local w = t:load_raw(gw, wi, off)
                for _, j in ipairs(js) do t:dot_bf16_acc(acc[j][b], w, xp[j]) end
              end
            end
          end, nil, { whole = true })
          for _, j in ipairs(js) do
            for _, b in ipairs(bs) do
              local lanes = tail and tail(BR * b)
              local v = acc[j][b]
              local yrow = t:addr(a.y, a.y_off, form_.f32 and 4 or 2)
              if j > 0 then yrow = t:addr(yrow, t:mul(a.ldy, j), form_.f32 and 4 or 2) end
              if form_.f32 then
                if form_.bias then v = t:add(v, t:load_f32(a.bias, n, BR * b, lanes)) end
                t:store_f32(yrow, n, BR * b, t:canon(v), lanes)
              else
                if form_.add then
                  local rrow = t:addr(a.r, a.y_off, 2)
                  if j > 0 then rrow = t:addr(rrow, t:mul(a.ldy, j), 2) end
                  v = t:add(v, t:load_bf16(rrow, n, BR * b, lanes))
                end
                t:store_bf16(yrow, n, BR * b, t:rne(v), lanes)
              end
            end
          end
        end
      end
    end, a.row_begin)
  end)
end

return {
  leaf = "gemv",
  doc = "BF16 GEMV, m = 1..4 activation rows, f32 or bf16 RNE destinations",
  tiers = { exact = { "neon", "avx2", "avx512" }, fast = { "bf16", "avx512bf16" } },
  tolerance = { fast = "gemv_fast_f64" },
  -- prefetch: elements ahead in a row-major row; prefetch_stream: elements ahead in a packed or
  -- blocked stream, every line (one stream gets no overlap of compute and DRAM from the hardware
  -- prefetcher alone at M > 1: bench/results/gemv-analysis.md), into L2: filling L1 that far
  -- ahead held its fill buffers and cost a decode step 10-15% (bench/results/audio-analysis.md)
  params = { chains = 4, tile = TILE, tree = "halving", max_m = 4, max_rows = 1, prefetch = 1024,
             prefetch_stream = 8192, pack_rows = PACK_ROWS },
  -- the packed weight layout, for runtime/fk_pack.c: groups of PACK_ROWS rows (the last one
  -- padded with zero rows); per group, per TILE-element tile of k (the last padded with zeros),
  -- the group's rows one after another: row n, element k at
  --   ((n / PACK_ROWS) * ceil(k_total / TILE) + k / TILE) * PACK_ROWS * TILE + (n % PACK_ROWS) * TILE + k % TILE
  -- so a pass over a group is one sequential stream, and one xs load serves PACK_ROWS rows
  -- the blocked layout (fast tier only): row n, element k at
  --   (n / (BLOCK_ROWS * BLOCK_GROUP)) * (BLOCK_ROWS * BLOCK_GROUP) * kpad
  --   + ((k / 2) * BLOCK_GROUP + (n / BLOCK_ROWS) % BLOCK_GROUP) * BLOCK_ROWS * 2 + (n % BLOCK_ROWS) * 2 + k % 2
  -- with kpad = round_up(k_total, BLOCK_KALIGN), rows padded with zeros to a whole group: a
  -- pass over a group is one stream, every lane of an accumulator an output row
  exports = { PACK_ROWS = PACK_ROWS, PACK_TILE = TILE, BLOCK_ROWS = BLOCK_ROWS, BLOCK_GROUP = BLOCK_GROUP,
              BLOCK_KALIGN = BLOCK_KALIGN },
  check = function(p, need)
    need(p.chains == 4 and p.tile == 64, "the lane mapping is written for 4 chains over 64-element tiles")
    need(p.tree == "halving", "tree must be 'halving'")
    need(p.max_m >= 1 and p.max_m <= 4, "max_m must be 1..4")
    need(p.max_rows >= 1 and p.max_rows <= 8, "max_rows must be 1..8")
    need(p.prefetch >= 0 and p.prefetch % 64 == 0, "prefetch: a distance in elements, a multiple of 64 (0: none)")
    need(p.prefetch_stream >= 0 and p.prefetch_stream % 64 == 0,
         "prefetch_stream: a distance in elements, a multiple of 64 (0: none)")
    need(p.pack_rows == 2 or p.pack_rows == 4, "pack_rows must be 2 or 4")
  end,
  forms = {
    form("f32", { f32 = true }),
    form("f32_bias", { f32 = true, bias = true }),
    form("bf16_rne", {}),
    form("bf16_rne_add", { add = true }),
    form("f32_packed", { f32 = true, packed = true }),
    form("f32_bias_packed", { f32 = true, bias = true, packed = true }),
    form("bf16_rne_packed", { packed = true }),
    form("bf16_rne_add_packed", { add = true, packed = true }),
    form("f32_blocked", { f32 = true, blocked = true, tiers = { "fast" } }),
    form("f32_bias_blocked", { f32 = true, bias = true, blocked = true, tiers = { "fast" } }),
    form("bf16_rne_blocked", { blocked = true, tiers = { "fast" } }),
    form("bf16_rne_add_blocked", { add = true, blocked = true, tiers = { "fast" } }),
  },
  body = function(t, p, form_)
    local a = t.arg
    local fast = t.tier == "fast"
    local ms = {}
    for mm = 1, p.max_m do ms[mm] = mm end
    if form_.blocked then return blocked_body(t, p, form_, a, ms) end
    t:cases(a.m, ms, function(M)
      -- xs: per tile, M blocks of 64 (exact: f32 chains 0..3; fast: bf16 in order)
      for j = 0, M - 1 do
        local xrow = t:addr(a.x, t:mul(a.ldx, j), 4)
        t:for_tiles(a.k, p.tile, function(i, tail)
          local im = t:mul(i, M)
          local v = {}
          for q = 0, 3 do v[q] = t:load_f32(xrow, i, 16 * q, tail and tail(16 * q)) end
          if fast then
            for q = 0, 3 do t:store_bf16(t:view(a.xs, "bf16"), im, 64 * j + 16 * q, t:rne(v[q])) end
          else
            t:store_f32(a.xs, im, 64 * j, t:uzp_even(v[0], v[1]))
            t:store_f32(a.xs, im, 64 * j + 16, t:uzp_odd(v[0], v[1]))
            t:store_f32(a.xs, im, 64 * j + 32, t:uzp_even(v[2], v[3]))
            t:store_f32(a.xs, im, 64 * j + 48, t:uzp_odd(v[2], v[3]))
          end
        end)
      end
      -- schedule: `rows` weight rows share each xs load (a packed group, or max_rows row-major
      -- rows), and as many of the m activation rows as the accumulators fit share each pass
      -- over the weights; neither changes a sum's order
      local nchains = fast and 2 or 4
      local budget = t.tune.accumulators                 -- beside one x vector in flight
      local wregs = fast and 1 or 2                      -- raw w (+ widened w) per row
      local function group_for(nrows)
        return math.max(1, math.min(M, math.floor((budget - nrows * wregs) / (nrows * nchains))))
      end
      local rows = form_.packed and p.pack_rows
                   or math.max(1, math.min(p.max_rows, math.floor(budget / (group_for(1) * nchains + wregs))))
      local kpad = form_.packed and t:iand(t:add(a.k, p.tile - 1), -p.tile)
      t:for_rows(a.row_begin, a.row_end, rows, function(n, nrows)
        -- row_at(rs): for the rows of a pass, { pointer, element offset } of where each row's
        -- elements start (computed per pass: only that pass's pointers hold registers; a packed
        -- group shares one pointer); widx(i): the element index of tile i from there
        local row_at, widx
        if form_.packed then
          local pr = p.pack_rows
          if nrows == pr then
            row_at = function(rs)                            -- n is a multiple of pack_rows
              local base, at = t:addr(a.w, t:mul(n, kpad), 2), {}
              for _, r in ipairs(rs) do at[r] = { base, p.tile * r } end
              return at
            end
          else
            row_at = function(rs)
              local base = t:addr(a.w, t:mul(t:iand(n, -pr), kpad), 2)
              return { [rs[1]] = { t:addr(base, t:mul(t:iand(n, pr - 1), p.tile), 2), 0 } }
            end
          end
          widx = function(i) return t:mul(i, pr) end
        else
          row_at = function(rs)
            local at = {}
            for _, r in ipairs(rs) do at[r] = { t:addr(a.w, t:mul(t:add(n, r), a.ldw), 2), 0 } end
            return at
          end
          widx = function(i) return i end
        end
        -- rows of this pass that fit the accumulators together (a small register file walks
        -- a packed group one row at a time)
        local sub = nrows
        while sub > 1 and sub * (nchains * group_for(sub) + wregs) > budget do sub = sub - 1 end
        for r0 = 0, nrows - 1, sub do
          local rs = {}
          for r = r0, math.min(r0 + sub, nrows) - 1 do rs[#rs + 1] = r end
          local group = group_for(#rs)
          local wrow = row_at(rs)
          for g0 = 0, M - 1, group do
            local js = {}
            for j = g0, math.min(g0 + group, M) - 1 do js[#js + 1] = j end
            local acc = {}
            for _, r in ipairs(rs) do
              acc[r] = {}
              for _, j in ipairs(js) do
                acc[r][j] = {}
                for c = 0, nchains - 1 do acc[r][j][c] = t:zero() end
              end
            end
            t:for_tiles(a.k, p.tile, function(i, tail)
              local im, wi = t:mul(i, M), widx(i)
              if p.prefetch > 0 and not form_.packed then
                for _, r in ipairs(rs) do t:prefetch(wrow[r][1], wi, wrow[r][2] + p.prefetch, 2) end
              end
              for h = 0, 1 do
                local raw = {}
                for _, r in ipairs(rs) do
                  if p.prefetch_stream > 0 and form_.packed then
                    t:prefetch(wrow[r][1], wi, wrow[r][2] + 32 * h + p.prefetch_stream, 2, 2)
                  end
                  -- packed rows are zero-padded to the tile: their tail needs no masked load
                  raw[r] = t:load_raw(wrow[r][1], wi, wrow[r][2] + 32 * h,
                                      (tail and not form_.packed) and tail(32 * h) or nil)
                end
                if fast then
                  for _, j in ipairs(js) do
                    local xr = t:load_raw(t:view(a.xs, "bf16"), im, 64 * j + 32 * h)
                    for _, r in ipairs(rs) do t:dot_bf16_acc(acc[r][j][h], raw[r], xr) end
                  end
                else
                  for par = 0, 1 do
                    local c = 2 * h + par
                    local wv = {}
                    for _, r in ipairs(rs) do wv[r] = par == 0 and t:bf16_even(raw[r]) or t:bf16_odd(raw[r]) end
                    for _, j in ipairs(js) do
                      local xv = t:load_f32(a.xs, im, 64 * j + 16 * c)
                      for _, r in ipairs(rs) do
                        t:fma_acc(acc[r][j][c], wv[r], xv, tail and tail(32 * h + par, 2))
                      end
                    end
                  end
                end
              end
            end)
            for _, r in ipairs(rs) do
              for _, j in ipairs(js) do
                local q = acc[r][j]
                local v = fast and t:add(q[0], q[1]) or t:add(t:add(q[0], q[1]), t:add(q[2], q[3]))
                finish(t, form_, a, t:reduce_add(v, p.tree), j, t:add(n, r))
              end
            end
          end
        end
      end)
    end)
  end,
}
