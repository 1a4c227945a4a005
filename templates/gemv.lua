-- templates/gemv.lua: the BF16 GEMV family.
--
-- For activation rows j in [0, m) and weight rows n in [row_begin, row_end) (the row-major
-- forms: m = 1..4, sharing each pass over the weights; the packed forms, also the GEMM of a
-- prompt or a batch: any m, in blocks of rows that share each pass):
--   s[j,n] = sum_k W[n,k] * x[j,k]          W bf16, row n at w + n*ldw; x f32, row j at x + j*ldx
--   form f32:          y = s                 (f32 out; a NaN stored as the canonical 0x7fc00000)
--   form f32_bias:     y = s + bias[n]       (f32 out, f32 bias; NaN likewise)
--   form bf16_rne:     y = RNE(s)            (bf16 out, integer round-to-nearest-even; NaN -> 0x7fc0)
--   form bf16_rne_add: y = RNE(s + r)        (r bf16, indexed like y; y may equal r)
-- The destination of (j, n) is y + y_off + j*ldy + n: an explicit row stride and base offset,
-- so a K or V projection writes straight into its cache slot.
-- The quantized forms (q8_*, q4_*: exact tier only, every destination above, GEMV and GEMM) read
-- W from the q8 / q4 packed layout (QUANT below; docs/design.md "Quantized weights"): W[n,k] =
-- q * d, exact in f32, and then everything as the bf16 packed forms; k a multiple of 32.
--
-- Exact tier (bit-identical on every ISA). x is first arranged into xs, per 64-element tile,
-- as chains of 16 lanes; then, per row n and activation row j, lane l of chain c (c = 0..3)
-- accumulates with fma, in increasing k, the k with
--     k mod 64 = 32*(c div 2) + 2*l + (c mod 2)
-- (chains 0, 1: even and odd elements of the first 32 of a tile; chains 2, 3: of the second 32,
-- which is how a 64-byte load of bf16 pairs splits into two f32 vectors with a shift and a
-- mask). Lanes past k contribute nothing (the stamps add -0 there: xs holds -0 past k, the
-- weights +0, and x + (-0) = x for every x). Then v = (c0 + c1) + (c2 + c3) lane by lane, the
-- halving tree sums v, and the destination op is applied. The schedule follows the register
-- file, the order does not: every pass covers all M activation rows of a block (a weight tile
-- is loaded and widened once per pass), and where the accumulators cannot hold four chains for
-- M rows a pass covers two chains or one, the partial sums waiting in stack slots. Blocks: the
-- row-major forms take m = 1..4 as one block; the packed forms any m, in blocks of J rows
-- (gemm_rows) and one of the m mod J left, xs holding a block's rows interleaved by tile.
--
-- Fast tier (faithful only). x is rounded to bf16 once per call (integer RNE) into xs (a block's
-- rows interleaved by tile, as in the exact tier); lane l of chain c (0, 1) accumulates, with the
-- CPU's bf16 dot instruction (VDPBF16PS, BFDOT), the pairs k mod 64 = 32c + 2l, 32c + 2l + 1;
-- then v = c0 + c1, the halving tree, the destination.
-- The instruction's rounding differs between ISAs; fixtures/README.md derives the bound.
--
-- xs (caller scratch, per call and per thread): m * round_up(k, 64) floats, and for the packed
-- forms' k blocks (GEMM_KBLOCK) the rows' partial sums.

local compat = require("compat")

local PACK_ROWS, TILE = 4, 64
-- the GEMM blocks of the packed forms: for a whole block of more than max_m rows (AVX-512: 6
-- rows), k is cut into blocks of GEMM_KBLOCK elements, each a pass over the rows
-- [row_begin, row_end), so that the block's arranged x (rows x GEMM_KBLOCK f32) stays in L1 while
-- the weight rows stream past it; a row's accumulators wait between k blocks in xs, after the
-- arranged rows: GEMM_PART_ROW floats per weight row (up to 8 rows x 4 chains x 16 lanes)
local GEMM_KBLOCK, GEMM_PART_ROW = 1024, 512
local GEMM_KBLOCK_LOG2 = 10; assert(2 ^ GEMM_KBLOCK_LOG2 == GEMM_KBLOCK, "GEMM_KBLOCK is 2^GEMM_KBLOCK_LOG2")
-- a GEMM block's sums before their reduction (the transposed epilogue, rows_block): per activation
-- row of the block (up to GEMM_ROWS_MAX) 16 weight rows' vectors of 16 lanes, in xs right after
-- the arranged rows (the partial sums follow them)
local GEMM_SUMS = 12 * 16 * 16
-- the blocked layout of the fast tier's outer-product forms: blocks of BLOCK_ROWS rows (one
-- output row per f32 lane), BLOCK_GROUP blocks interleaved per bf16 pair of k, k padded to
-- BLOCK_KALIGN
local BLOCK_ROWS, BLOCK_GROUP, BLOCK_KALIGN = 16, 4, 16
-- the quantized packed layouts (docs/design.md "Quantized weights", runtime/fk_quant.c): per group
-- of PACK_ROWS rows and tile of 64 k one record of `rec` bytes: row r's quants from qrow * r (q8:
-- block b, parity p at 32b + 16p, 16 int8; q4: block b at 16b, 16 bytes whose low nibble is parity
-- 0, the high one parity 1, each q + 8), then the scales, binary16, row r's block b at
-- PACK_ROWS * qrow + 4r + 2b. A tile of 64 k is rec bytes: num / 4 per element (num = rec / 16).
-- (sh: a record spans span = 64 * 2^sh k; its bytes from k = i on are (i * num) >> (2 + sh): q8,
-- q4 one tile, sh = 0, num = rec / 16)
local QUANT = {}
for name, qrow in pairs({ q8 = 64, q4 = 32 }) do
  local rec = PACK_ROWS * (qrow + 4)
  QUANT[name] = { qrow = qrow, rec = rec, num = math.floor(rec / 16), sh = 0, span = TILE }
end
-- q4k's packed layout (GGUF Q4_K; docs/design.md): per group of PACK_ROWS rows and super-block of
-- 256 k one super-record of 592 bytes: tile t (0..3) of it at 128t, row r's 32 bytes at 128t + 32r
-- as a q4 record's (block b at 16b, the low nibble parity 0, the high one parity 1; here the stored
-- u itself, 0..15), then row r's six-bit scales sc_j (j = 2t + b: the sub-block of 32 k) at
-- Q4K_SC + 8r + j and minimums m_j at Q4K_M + 8r + j, a byte each, then row r's binary16 d at
-- Q4K_D + 2r and dmin at Q4K_D + 8 + 2r. The weight of u in sub-block j: RN(d sc_j u - dmin m_j),
-- exact products and one rounding: fma(u, d sc_j, -(dmin m_j)).
local Q4K_SC, Q4K_M, Q4K_D = 512, 544, 576
QUANT.q4k = { qrow = 32, rec = 592, num = 37, sh = 2, span = 4 * TILE }

-- a lone activation row's exact pass over two groups (t.tune.exact_groups = 2) goes over k in pieces
-- of this many tiles, chains (0, 1) then (2, 3) of each piece: 4 tiles (q8 2 x 1088 bytes of
-- records) read 1.03-1.11 of the probe in a C model of the pass, 8 tiles 0.97-1.08, 16 0.92-1.03,
-- the whole k 0.77-0.93 (bench/results/quant-analysis.md)
local EXACT_PIECE = 4
-- how far ahead a quantized weight stream's software prefetch runs: t.tune.stream_ahead bytes,
-- rounded up to whole records of the format qf
local function stream_ahead(t, qf) return qf.rec * math.ceil(t.tune.stream_ahead / qf.rec) end

-- q4's dequantization table (t.tune.q4_lut): lane i = i - 8, the weight of the nibble i before its
-- block's scale; times the scale d, lane i is (i - 8) * d, exact in f32 as the arithmetic path's
local Q4_RAMP, Q4K_RAMP = {}, {}
for i = 0, 15 do Q4_RAMP[i + 1], Q4K_RAMP[i + 1] = compat.f32bits(i - 8), compat.f32bits(i) end

-- y and r: m rows of the destination from y_off on, row_end outputs each
local DST = "row_end > row_begin ? y_off + (m - 1) * ldy + row_end : 0"

local function args(form)
  local out = form.f32 and "float *" or "uint16_t *"
  local a = {}
  if form.quant then
    local qf = QUANT[form.quant]
    a[#a + 1] = { "w", "const uint8_t *",
                  doc = string.format("weights in the %s packed layout (fk_q_pack: 4-row groups, %d-k records)",
                                      form.quant, qf.span),
                  extent = string.format("row_end > row_begin ? round_up(row_end, %d) / %d * (round_up(k, %d) / %d) "
                                         .. "* %d : 0", PACK_ROWS, PACK_ROWS, qf.span, qf.span, qf.rec) }
  elseif form.blocked then
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
    form.packed and
      { "xs", "float *", scratch = true,
        extent = string.format("m * round_up(k, 64) + (m > 4 ? %d : 0) + (m > 4 && k > %d ? "
                               .. "max(round_up(row_end, %d) - row_begin, 0) * %d : 0)",
                               GEMM_SUMS, GEMM_KBLOCK, PACK_ROWS, GEMM_PART_ROW),
        doc = string.format("scratch, one per thread: m * round_up(k, 64) floats; for m > 4 %d more, and for k > %d "
                            .. "%d more per weight row of round_up(row_end, %d) - row_begin (FK_GEMV_GEMM_*)",
                            GEMM_SUMS, GEMM_KBLOCK, GEMM_PART_ROW, PACK_ROWS) } or
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
  a[#a + 1] = { "m", "int64_t", doc = form.packed and "activation rows, 1 .. 2^28 - 1 (blocks of up to 12 per pass)"
                                   or "activation rows, 1..4" }
  a[#a + 1] = { "k", "int64_t", doc = form.quant == "q4k" and "reduction length, a positive multiple of 256"
                                   or form.quant and "reduction length, a positive multiple of 32 (a block)"
                                   or "reduction length, >= 1" }
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
  if (f.packed or f.blocked) and not f.quant then
    f.fixtures = { via = name:gsub("_packed$", ""):gsub("_blocked$", "") }
  end
  return f
end

-- The destination of (j, n): bias, residual, rounding, store.
local blocked_body, qfast_body

-- activation row j0 + j of the destination (j0: a runtime block start, nil for 0)
local function dest_row(t, a, base, j0, j, size)
  local row = t:addr(base, a.y_off, size)
  if j0 then row = t:addr(row, t:mul(a.ldy, j0), size) end
  if j > 0 then row = t:addr(row, t:mul(a.ldy, j), size) end
  return row
end

local function finish(t, form_, a, s, j0, j, n)
  if form_.f32 then
    if form_.bias then s = t:add(s, t:load1_f32(a.bias, n, 0)) end
    t:store1_f32(dest_row(t, a, a.y, j0, j, 4), n, 0, t:canon(s))
    return
  end
  if form_.add then s = t:add(s, t:load1_bf16(dest_row(t, a, a.r, j0, j, 2), n, 0)) end
  t:store1_bf16(dest_row(t, a, a.y, j0, j, 2), n, 0, t:rne(s))
end

-- The destination of 16 outputs (j, n .. n + 15) together, lane l of s the sum of row n + l: the
-- same ops as finish, lane by lane; the lanes past row_end neither loaded nor stored. yrow + at,
-- rrow + at, brow: the destination, residual and bias from (j, n) on.
local function finish_rows(t, form_, s, yrow, rrow, brow, at, lanes)
  if form_.f32 then
    if form_.bias then s = t:add(s, t:load_f32(brow, 0, 0, lanes)) end
    t:store_f32(yrow, at, 0, t:canon(s), lanes)
    return
  end
  if form_.add then s = t:add(s, t:load_bf16(rrow, at, 0, lanes)) end
  t:store_bf16(yrow, at, 0, t:rne_store(s), lanes)
end

-- floor(v / d) for a constant 1 <= d <= 16 and 0 <= v < 2^28: a power of two shifts; any other
-- d multiplies by ceil(2^32 / d) and shifts by 32, exact for v < 2^32 / d (the multiplier's
-- excess, below d / 2^32, adds less than v / 2^32 < 1 / d to v / d)
local function div_const(t, v, d)
  assert(d >= 1 and d <= 16, "div_const: d must be 1..16")
  local sh = 0
  while 2 ^ sh < d do sh = sh + 1 end
  if 2 ^ sh == d then return t:ishr(v, sh) end
  local magic = math.floor(2 ^ 32 / d) + 1
  return t:ishr(t:mul(v, magic), 32)
end

-- The fast tier's outer product over the blocked layout: lane l of an accumulator is output
-- row n + l; each step adds w[n+l][k, k+1] . x[k, k+1] (x rounded to bf16 once, the pair
-- broadcast from memory); no horizontal reduction. Rows past row_end (zero padding) are
-- computed and not stored: every block runs one body, its stores (and r, bias loads) masked to
-- the rows before row_end.
blocked_body = function(t, p, form_, a)
  local BR, BG = BLOCK_ROWS, BLOCK_GROUP
  local budget = t.tune.accumulators
  local kpad = t:iand(t:add(a.k, BLOCK_KALIGN - 1), -BLOCK_KALIGN)
  -- xs: x rounded to bf16 once, row j at xs + j * kpad halfwords, zero-padded to kpad
  t:for_rows(t:iconst(0), a.m, 1, function(j)
    local xrow = t:addr(a.x, t:mul(a.ldx, j), 4)
    local xsrow = t:addr(t:view(a.xs, "bf16"), t:mul(kpad, j), 2)
    t:for_tiles(a.k, 16, function(i, tail)
      t:store_bf16(xsrow, i, 0, t:rne(t:load_f32(xrow, i, 0, tail and tail(0))))
    end)
  end)
  -- blocks per pass for g activation rows: their accumulators beside their broadcast x pairs
  -- (one w vector in flight) fit the budget
  local function blocks_for(g)
    local sub = BG
    while sub > 1 and (BG % sub ~= 0 or sub * g + g > budget) do sub = sub - 1 end
    return sub
  end
  -- activation rows share each pass over the weights in groups of G (a power of two): a runtime
  -- loop over the whole groups, then one group of the m mod G rows left
  local G = 1
  while 2 * G <= p.max_m and blocks_for(2 * G) * 2 * G + 2 * G <= budget and blocks_for(2 * G) >= 2 do G = 2 * G end
  local rows_pad = t:iand(t:add(a.row_end, BR * BG - 1), -(BR * BG))
  -- a pass over every block for activation rows j0 .. j0 + g - 1 (j0 nil: from row 0)
  local function group(j0, g)
    local sub = blocks_for(g)
    local esz = form_.f32 and 4 or 2
    t:for_tiles(rows_pad, BR * BG, function(n)
      for b0 = 0, BG - 1, sub do
        local xs0 = t:view(a.xs, "bf16")
        if j0 then xs0 = t:addr(xs0, t:mul(kpad, j0), 2) end
        local bs = {}
        for b = b0, b0 + sub - 1 do bs[#bs + 1] = b end
        local acc = {}
        for j = 0, g - 1 do
          acc[j] = {}
          for _, b in ipairs(bs) do acc[j][b] = t:zero() end
        end
        local gw = t:addr(a.w, t:mul(n, kpad), 2)       -- n is a multiple of BR * BG
        local xsrow = { [0] = xs0 }
        for j = 1, g - 1 do xsrow[j] = t:addr(xsrow[j - 1], kpad, 2) end
        t:for_tiles(kpad, 16, function(i)
          local wi = t:mul(i, BG * BR)
          for u = 0, 7 do                              -- the 8 pairs of this 16-element tile
            local xp = {}
            for j = 0, g - 1 do xp[j] = t:load_pair_bcast(xsrow[j], i, 2 * u) end
            for _, b in ipairs(bs) do
              local off = (u * BG + b) * 2 * BR
              if p.prefetch_stream > 0 and g > 1 then t:prefetch(gw, wi, off + p.prefetch_stream, 2, 2) end
              local w = t:load_raw(gw, wi, off)
              for j = 0, g - 1 do t:dot_bf16_acc(acc[j][b], w, xp[j]) end
            end
          end
        end, nil, { whole = true })
        local live = t:sub(a.row_end, n)                -- rows of this block before row_end
        local yrow = t:addr(a.y, a.y_off, esz)
        if j0 then yrow = t:addr(yrow, t:mul(a.ldy, j0), esz) end
        for j = 0, g - 1 do
          if j > 0 then yrow = t:addr(yrow, a.ldy, esz) end
          for _, b in ipairs(bs) do
            local lanes = t:lanes(live, BR * b)
            local v = acc[j][b]
            if form_.f32 then
              if form_.bias then v = t:add(v, t:load_f32(a.bias, n, BR * b, lanes)) end
              t:store_f32(yrow, n, BR * b, t:canon(v), lanes)
            else
              if form_.add then
                -- r is indexed like y
                local rrow = t:addr(a.r, a.y_off, 2)
                if j0 or j > 0 then rrow = t:addr(rrow, t:mul(a.ldy, j0 and t:add(j0, j) or j), 2) end
                v = t:add(v, t:load_bf16(rrow, n, BR * b, lanes))
              end
              t:store_bf16(yrow, n, BR * b, t:rne(v), lanes)
            end
          end
        end
      end
    end, a.row_begin, { whole = true })
  end
  if G == p.max_m then
    -- every m is one group
    local ms = {}
    for mm = 1, p.max_m do ms[mm] = mm end
    t:cases(a.m, ms, function(M) group(nil, M) end)
    return
  end
  local mfull = G > 1 and t:iand(a.m, -G) or a.m
  t:for_tiles(mfull, G, function(j0) group(j0, G) end, nil, { whole = true })
  if G > 1 then
    local left = {}
    for r = 1, G - 1 do left[r] = r end
    t:cases(t:sub(a.m, mfull), left, function(r) group(mfull, r) end)
  end
end

-- Passes over two groups (a lone activation row's where t.tune.lone_groups = 2, q4's 2-3 rows' in
-- the fast tier; the exact tier's lone row where t.tune.exact_groups = 2): the rows' range splits
-- into two halves of h = 4 floor((row_end - row_begin) / 8) rows, and each pass takes the group at
-- n and the one at n + h, two streams far apart; two(n, at2) for n = row_begin, + 4, ...,
-- < row_begin + h (at2() gives n + h, computed where it is called: no register holds it between
-- its uses), then rest(row_begin + 2h) the rows left (fewer than 8), a group at a time. An empty
-- range (row_end <= row_begin) gives h = 0. (Two adjacent groups a pass, stop 40's schedule, one
-- stream read at two points, measured 5-8% slower than one group a pass for a lone row's q4 at
-- k = 1024; the halves 6-9% faster than one group there, up to 3% faster than adjacent groups past
-- it but for q4's 2048 x 8192 (1-2% slower); q4 at 2-3 rows 3-20% faster than adjacent groups at
-- k <= 2048, level at k = 4608 and 8192: bench/results/quant-fast-analysis.md.)
local function row_halves(t, a, two, rest)
  local len = t:sub(a.row_end, a.row_begin)
  local h = t:iand(t:ishr(t:sub(len, t:imin(len, 0)), 1), -PACK_ROWS)
  t:for_tiles(t:add(a.row_begin, h), PACK_ROWS, function(n) two(n, function() return t:add(n, h) end) end,
              a.row_begin, { whole = true })
  rest(t:add(a.row_begin, t:add(h, h)))
end

-- The schedule of the row forms: per M, C chains per pass (all four when the accumulators fit
-- them, else two or one: a chain-split pass, so that every activation row shares each widened
-- weight tile) and R weight rows per pass (a packed group's rows share each xs load, when whole
-- passes fit). Neither changes a sum: each chain accumulates the same k in the same order.
-- share (a GEMM block, M > max_m): that many weight rows per pass, each xs load serving them all
-- (on a core that loads one 64-byte vector per cycle the loads of x bind before the FMAs), in
-- chain-split passes where the accumulators cannot hold every chain (AVX-512 exact: 2 weight rows
-- x 6 activation rows x 2 chains, two passes)
local function schedule(p, form_, M, nchains, wregs, budget, share)
  if share then
    local C = nchains
    while C > 1 and share * (C * M + wregs) > budget do C = math.floor(C / 2) end
    if share * (C * M + wregs) <= budget and p.pack_rows % share == 0 then return C, share end
  end
  local C = nchains
  while C > 1 and C * M + wregs > budget do C = math.floor(C / 2) end
  local R = 1
  if C == nchains then
    local rmax = form_.packed and p.pack_rows or p.max_rows
    R = rmax
    while R > 1 and ((form_.packed and rmax % R ~= 0) or R * (nchains * M + wregs) > budget) do R = R - 1 end
  end
  return C, R
end

-- The quantized forms' fast tier (docs/design.md "The quantized fast tier"): integer dot products.
-- x is quantized once per call, per row and block of 32 k, into xs: per activation row and tile
-- one slot (q8: 256 bytes, or 72 for a lone row; q4: 128 bytes), a block of activation rows' slots
-- interleaved by tile (below). Block h of a tile:
--   amax = max |x|, z = sum of x * 0 (NaN when an x is not finite), d = amax / 127 + z,
--   q_x = min(max(rint(x / max(d, 2^-149)), -127), 127)        (the vmax / vmin rules: NaN -> -127)
-- q8 slot: bytes 0-63 the quants q_x in the weights' order (block h, parity c at 32h + 16c: the
-- even elements of the block, then the odd ones), bytes 64-127 per lane -(offset) * (the sum of its
-- four q_x) (the correction of the weight bytes as the dot product reads them: q8 stores q, which
-- dot_u8s8 reads as q + 128 after an XOR and dot_s8s8 as it is, offset 0), bytes 128-191 the
-- lanes' activation scale (block 0 in lanes 0-7, block 1 in 8-15). A lone activation row (a block
-- of one: decode) keeps only the quants (64 bytes) and the tile's two scales (8 bytes, apart); its
-- passes compute the correction (one dot product per tile) and spread the scales: 72 bytes per
-- tile keep a row of 4608 k in 5 KiB of L1 beside a group's records (where t.tune.lone_compact: a
-- variant short of registers, avxvnni, reads a lone row's full slot instead). Per weight row n and activation
-- row j, one chain of 16 lanes: lane l of tile t sums, in int32 and exactly, the four products of
-- its bytes 4l .. 4l + 3 and accumulates fma(f32(isum), d_w * d_x, acc) (the scales of block
-- 2t + l / 8, their product rounded once), tiles in increasing order; the halving tree.
-- q4 slot (the record holds rows r and r + 1 in 64 consecutive bytes, low nibbles the even elements:
-- one load and two masks give both rows' even and odd quants): bytes 0-63 the even elements' q_x
-- (block 0's 16, block 1's, then both again), bytes 64-127 the odd elements' likewise, bytes
-- 128-191 per lane -8 * (the sum of its eight q_x) (q4 stores q + 8), bytes 192-255 the activation
-- scales (block 0 in lanes 0-3 and 8-11, block 1 in 4-7 and 12-15). A pass takes two weight rows
-- per vector, row r in lanes 0-7 and r + 1 in 8-15: per weight row n and activation row j one chain
-- of 8 lanes: lane l of tile t sums, in int32 and exactly, the eight products of k = 64t + 8l .. 64t
-- + 8l + 7 and accumulates fma(f32(isum), d_w * d_x, acc) (block 2t + l / 4); the halving tree over
-- the 8 lanes (reduce_add8). Then the destination. The variant's int8 dot product (t.tune.int8_dot:
-- u8s8 VPDPBUSD, s8s8 SDOT, s8s7 VPMADDUBSW; q4 dot_u7s8) changes no sum: every one is exact; every
-- other step is one IEEE rounding in a fixed order: the same bits on every ISA (tests/contract: the
-- fast model).
qfast_body = function(t, p, form_, a)
  local qf = QUANT[form_.quant]
  local q8 = form_.quant == "q8"
  local budget = t.tune.accumulators
  -- s8s8 (SDOT) and s8s7 (AVX2's VPMADDUBSW: x's bytes in -127..127, which the activations' quants
  -- are, and the q4 correction's too) read the weights signed: no offset, no correction for q8
  local signed = t.tune.int8_dot == "s8s8" or t.tune.int8_dot == "s8s7"
  local function dot(acc, w, x)
    if t.tune.int8_dot == "s8s7" then return t:dot_s8s7(acc, w, x) end
    if signed then return t:dot_s8s8(acc, w, x) end
    return t:dot_u8s8(acc, w, x)
  end
  -- the weight bytes' offset as the dot product reads them, per byte of a lane
  local offset = q8 and (signed and 0 or 0x80808080) or 0x08080808
  local function kp() return t:iand(t:add(a.k, p.tile - 1), -p.tile) end
  -- a pass: R weight rows (at most a group, at M > 1: two do not fit beside the accumulators)
  -- against M activation rows, all in registers: R * M accumulators, a weight vector and its scales
  -- per row, three values in flight
  local function rows_for(M)
    local R = p.pack_rows
    if M == 1 then
      -- a lone row's slot, where not held loaded for each row: R accumulators beside a row's w, its
      -- dot and its scales (q8_rows' `tight` pass: made after its dot), and a compact slot's quants
      -- and scales. avx2madd, avxvnni (full slots): R = 4, a group in one pass, measured 1-8% faster
      -- from DRAM than two passes of R = 2 (which were 6-10% faster than one row a pass); dotprod
      -- (compact): R = 2, a group in two passes, not four (llvm-mca's cycles per row unchanged, N2
      -- 20.2 -> 20.1, A14 12.2 -> 11.5). t.tune.lone_groups = 2 (avx512vnni): two groups at once,
      -- two streams (the core's choice: gen/isa/x86_64.lua)
      local inflight = t.tune.lone_compact and 5 or 3
      if t.tune.lone_groups == 2 and 2 * R + inflight <= budget + 1 then return 2 * R end
      while R > 1 and R + inflight > budget + 1 do R = math.floor(R / 2) end
      return R
    end
    while R > 1 and R * (M + 2) + 3 > budget + 1 do R = math.floor(R / 2) end
    return R
  end
  -- q4: a pass takes P pairs of weight rows (each pair one vector of accumulators per activation
  -- row; P = 4: two groups; a lone activation row t.tune.lone_groups groups, as above), with a
  -- pair's lo, hi and scales in flight. A lone row whose slot parts are not held (below) loads each
  -- where it is used: P accumulators beside a pair's lo, hi, their sum, a slot part and the scales
  -- (the ymm variants: P = 2, a group in one pass, not two; measured 2-16% faster from DRAM, the
  -- more the longer k: bench/results/quant-fast-analysis.md)
  local function pairs_for(M)
    if M == 1 then
      if t.tune.lone_groups == 2 and 4 + 5 <= budget + 1 then return 4 end
      return 2 + 5 <= budget + 1 and 2 or 1
    end
    for _, P in ipairs({ 4, 2 }) do
      if P * (M + 3) + 2 <= budget + 1 then return P end
    end
    return 1
  end
  -- blocks of J activation rows, each a pass over the weights, then one of the m mod J left; a
  -- block's slots interleaved by tile (row j0 + jj's tile i at xs + j0 * kpad + i * M + 64 * jj
  -- floats, M the block's rows), so that one pointer serves a block
  local J = p.max_m
  if q8 then
    while J > 1 and rows_for(J) * (J + 2) + 3 > budget + 1 do J = J - 1 end
  else
    while J > 1 and pairs_for(J) * (J + 3) + 2 > budget + 1 do J = J - 1 end
  end
  -- xs at i slot floats of q8 (64 per tile), i.e. i / 2 of q4 (32 per tile: 2-byte steps), from
  -- base (a.xs or a slot pointer of this function); f32v: a slot pointer as floats. A block of M
  -- activation rows from j0 owns the M kp floats from xs + kp j0: row jj's slot of tile i at i M +
  -- 64 jj floats (q4: i M / 2 + 32 jj). q8's lone row (a block of one) has the compact slots: tile
  -- i's quants at i / 4 floats, its scales (d_0, d_1) from kp / 4 floats on, at i / 32
  local function xs_at(base, i)
    if q8 then return t:addr(base, i, 4) end
    return t:addr(t:view(base, "bf16"), i, 2)
  end
  local function f32v(ptr) return q8 and ptr or t:view(ptr, "f32") end
  -- row j's tiles into its slots (lone: q8's compact form)
  local function quantize_row(j, j0, mb, lone)
    local xrow = t:addr(a.x, t:mul(a.ldx, j), 4)
    local xsj = xs_at(a.xs, t:add(t:mul(kp(), j0), t:mul(t:sub(j, j0), p.tile)))
    local sbj = lone and t:addr(xsj, t:ishr(kp(), 2), 4)
    t:for_tiles(a.k, p.tile, function(i, tail)
      local slotp
      if lone then slotp = t:addr(xsj, t:ishr(i, 2), 4)
      else slotp = q8 and t:addr(xsj, t:mul(i, mb), 4) or t:addr(xsj, t:mul(i, mb), 2) end
      local slot = f32v(slotp)
      local zero = t:iconst(0)
      local d = {}
      for h = 0, 1 do
        -- the block's even and odd elements (past k: +0, a block of zeros, d = 0, q_x = 0)
        local v0 = t:load_f32(xrow, i, 32 * h, tail and tail(32 * h))
        local v1 = t:load_f32(xrow, i, 32 * h + 16, tail and tail(32 * h + 16))
        local e = { [0] = t:uzp_even(v0, v1), [1] = t:uzp_odd(v0, v1) }
        local absm = t:vconst(0x7fffffff)
        local amax = t:reduce_max(t:max(t:band(e[0], absm), t:band(e[1], absm)), p.tree)
        local z = t:reduce_add(t:add(t:mul(e[0], t:vconst(0)), t:mul(e[1], t:vconst(0))), p.tree)
        local ds = t:add(t:div(amax, t:f32(0x42fe0000)), z)                -- 127
        if lone then t:store1_f32(sbj, t:ishr(i, 5), h, ds) end
        d[h] = t:bcast(ds)
        local dv = t:max(d[h], t:vconst(1))                                 -- 2^-149
        for c = 0, 1 do
          local r = t:rint(t:div(e[c], dv))
          r = t:min(t:max(r, t:vconst(0xc2fe0000)), t:vconst(0x42fe0000))   -- -127, 127
          local qx = t:f2i(r)
          if q8 then
            t:store_i8(t:view(slotp, "i8"), zero, 32 * h + 16 * c, qx)
          else
            t:store_i8(t:view(slotp, "i8"), zero, 32 * c + 16 * h, qx)
          end
        end
      end
      if lone then return end
      local dd = t:sel128(d[0], d[1], 0xe4)
      if q8 then
        if offset == 0 then
          t:store_f32(slot, zero, 16, t:vconst(0))
        else
          local corr = dot(t:vconst(0), t:vconst(offset), t:load_f32(slot, zero, 0))
          t:store_f32(slot, zero, 16, t:isub_v(t:vconst(0), corr))
        end
        t:store_f32(slot, zero, 32, dd)
      else
        -- the correction in lanes 0-7, the scales (chunks d0, d1) in 8-15: one store
        -- q4's weight bytes (nibbles 0..15, and their offset 8) are in 0..127: dot_u7s8 on every
        -- variant (the same exact sums; avx2madd's VPMADDUBSW takes them as they are)
        local o = t:vconst(offset)
        local corr = t:dot_u7s8(t:dot_u7s8(t:vconst(0), o, t:load_bcast8(slot, zero, 0)), o,
                                t:load_bcast8(slot, zero, 8))
        t:store_f32(slot, zero, 16, t:sel128(t:isub_v(t:vconst(0), corr), dd, 0x84))
      end
    end)
  end
  t:for_rows(t:iconst(0), a.m, 1, function(j)
    local j0 = t:mul(div_const(t, j, J), J)
    local mb = t:imin(t:sub(a.m, j0), J)
    -- q8 with t.tune.lone_compact: lone = 0 for a block of one row (the compact slots), 1 for more
    if not q8 or not t.tune.lone_compact then return quantize_row(j, j0, mb, false) end
    t:cases(t:imin(t:sub(mb, 1), 1), { 0, 1 }, function(c) quantize_row(j, j0, mb, c == 0) end)
  end)
  -- a pass's accumulators: n vectors (weight rows, or pairs of them) x M activation rows, from +0
  local function zeros(n, M)
    local acc = {}
    for r = 0, n - 1 do
      acc[r] = {}
      for j = 0, M - 1 do acc[r][j] = t:zero() end
    end
    return acc
  end
  -- tile i's record, in bytes (wi) and in 2-byte elements (si)
  local function record_at(i) return t:ishr(t:mul(i, qf.num), 2), t:ishr(t:mul(i, qf.num), 3) end
  -- The weight streams of a pass from row n: per group g its quants wq[g] (from row n's, rsel the
  -- row within the group: n & 3, or q4's pair n & 2) and scales ws[g]; pf the streams to prefetch.
  -- n2: a pass over two groups (n a multiple of PACK_ROWS), the second one at row n2, far away
  -- (row_halves, below): two streams, each prefetching its own lines ahead.
  -- (A pass over part of a group, avxvnni's and NEON's, prefetches every line of the records too:
  -- prefetching only its share of the stream, so that the stream ahead advances at the rate the
  -- passes consume it, measured -6% to +6% by shape on avxvnni: bench/results/quant-fast-analysis.md.)
  local function group_at(n) return t:addr(a.w, t:ishr(t:mul(t:mul(t:iand(n, -PACK_ROWS), kp()), qf.num), 4), 1) end
  local function streams(n, rsel, n2)
    local base = group_at(n)
    if n2 then
      local g1 = group_at(n2)
      local wq = { [0] = base, [1] = g1 }
      return wq, { [0] = t:view(base, "f16"), [1] = t:view(g1, "f16") }, wq
    end
    local wq = t:addr(base, t:mul(rsel, qf.qrow), 1)
    return { [0] = wq }, { [0] = t:addr(t:view(base, "f16"), t:mul(rsel, 2), 2) }, { [0] = wq }
  end
  -- row r of a pass from row n (r >= PACK_ROWS: of its second group, at row n2 if given)
  local function pass_row(n, n2, r)
    return (n2 and r >= PACK_ROWS) and t:add(n2, r - PACK_ROWS) or t:add(n, r)
  end
  -- every line of each stream's records, stream_ahead bytes ahead, into L2
  local function prefetch(pf, wi, hw)
    if p.prefetch_stream == 0 or hw then return end
    local ahead = stream_ahead(t, qf)
    for g = 0, #pf do
      for o = 0, qf.rec - 1, 64 do t:prefetch(pf[g], wi, o + ahead, 1, 2) end
    end
  end
  -- q4: a pass over np pairs of rows from row n (n even in its group; np = 4: two groups, the second
  -- at row n2) against the block's M activation rows; `half` (a single row: its parity) stores that
  -- half of the one pair
  local function q4_pass(j0, M, n, np, half, n2)
    local wq, ws, pf = streams(n, t:iand(n, 2), n2)
    local xsb = f32v(xs_at(a.xs, t:mul(kp(), j0)))
    local acc = zeros(np, M)
    local hold = 4 * M + np * M + 3 <= budget + 1
    t:for_tiles(kp(), p.tile, function(i)
      local wi, si = record_at(i)
      local xi = t:ishr(t:mul(i, M), 1)
      prefetch(pf, wi)
      -- slot part f (0: even quants, 1: odd, 2: correction, 3: scales) of activation row j, in
      -- both halves (one per weight row of a pair), held for the tile where the registers allow,
      -- else loaded where it is used
      local held = {}
      local function part(j, f)
        if hold then
          held[j] = held[j] or {}
          held[j][f] = held[j][f] or t:load_bcast8(xsb, xi, 32 * j + 8 * f)
          return held[j][f]
        end
        return t:load_bcast8(xsb, xi, 32 * j + 8 * f)
      end
      if hold then for j = 0, M - 1 do for f = 0, 3 do part(j, f) end end end
      for q = 0, np - 1 do
        -- rows 2q, 2q + 1 of the pass: 64 bytes, low nibbles the even elements, high the odd
        local g, qq = math.floor(q / 2), q % 2
        local v = t:load_raw(t:view(wq[g], "bf16"), si, qf.qrow * qq)
        local nib = t:vconst(0x0f0f0f0f)
        local lo = t:band(v, nib)
        local hi = t.tune.byte_shift and t:ushr8_v(v, 4) or t:band(t:isra_v(v, 4), nib)
        local wsc
        for j = 0, M - 1 do
          local isum = t:dot_u7s8(t:dot_u7s8(part(j, 2), lo, part(j, 0)), hi, part(j, 1))   -- nibbles: 0..15
          wsc = wsc or t:load_f16x4q(ws[g], si, math.floor(PACK_ROWS * qf.qrow / 2) + 4 * qq)
          t:fma_acc(acc[q][j], t:i2f(isum), t:mul(wsc, part(j, 3)))
        end
      end
    end, nil, { whole = true })
    for q = 0, np - 1 do
      for h = 0, 1 do
        if half == nil or half == h then
          local row = half and n or pass_row(n, n2, 2 * q + h)
          for j = 0, M - 1 do finish(t, form_, a, t:reduce_add8(acc[q][j], h, p.tree), j0, j, row) end
        end
      end
    end
  end
  -- 0 where kp <= kmax, 1 past it: (kp + 2^S - kmax - tile) >> S, S with 2^S > kmax
  local function k_past(kmax)
    local S = 0
    while 2 ^ S <= kmax do S = S + 1 end
    return t:imin(t:ishr(t:add(kp(), 2 ^ S - kmax - p.tile), S), 1)
  end
  local function q4_block(j0, M)
    -- passes of 2P rows from row_begin (a multiple of PACK_ROWS: each pass starts at an even row of
    -- its group), then single rows, each a pass over its aligned pair (rows n & -2, (n & -2) + 1, in
    -- the record) storing its own half
    local function rows(P, first)
      t:for_rows(first or a.row_begin, a.row_end, 2 * P, function(n, nrows)
        if nrows == 1 then
          t:cases(t:iand(n, 1), { 0, 1 }, function(h) q4_pass(j0, M, n, 1, h) end)
        else
          q4_pass(j0, M, n, P)
        end
      end)
    end
    local P = pairs_for(M)
    if P < 4 then return rows(P) end
    -- two groups at once (a lone row's where t.tune.lone_groups is 2; 2-3 activation rows' where the
    -- registers allow), one from each half of the rows (row_halves, above)
    row_halves(t, a, function(n, at2) q4_pass(j0, M, n, P, nil, at2()) end, function(first) rows(2, first) end)
  end
  -- q8: the passes of the block's M activation rows; hw: the hardware prefetcher alone streams
  -- the weights (no software prefetch)
  local function q8_rows(j0, M, hw)
    local R = rows_for(M)
    local function pass(n, nrows, n2)
      -- the group's records from byte (n & -4) * kp * rec / 256 (R <= 4 rows: one group)
      local wq, ws, pf = streams(n, t:iand(n, PACK_ROWS - 1), n2)
      local xsb = t:addr(a.xs, t:mul(kp(), j0), 4)
      local acc = zeros(nrows, M)
      -- the block's slots loaded once per tile where they fit beside the accumulators, else per row
      local hold = 3 * M + nrows * M + 4 <= budget + 1
      -- a lone row's pass short of registers (rows_for): no group's scales held; a row's scales
      -- made after its dot, when the weights and the slot's quants are dead
      local tight = M == 1 and nrows + 4 > budget + 1
      -- a lone row's compact slots: the scales from kp / 4 floats on (made before the loop: the
      -- loop then bumps a pointer over them, gen/bump.lua)
      local lone = M == 1 and t.tune.lone_compact
      local sb = lone and t:addr(xsb, t:ishr(kp(), 2), 4)
      t:for_tiles(kp(), p.tile, function(i)
        -- tile i's record; the block's slots (xi)
        local wi, si = record_at(i)
        local xi = t:mul(i, M)
        prefetch(pf, wi, hw)
        local function slot(j)
          if lone then
            -- the lone row's compact slot: the quants, the correction from them, the scales spread
            local q = t:load_f32(xsb, t:ishr(i, 2), 0)
            local si5 = t:ishr(i, 5)
            return { q = q, c = offset ~= 0 and t:isub_v(t:vconst(0), dot(t:vconst(0), t:vconst(offset), q)) or nil,
                     d = t:sel128(t:load_bcast_f32(sb, si5, 0), t:load_bcast_f32(sb, si5, 1), 0xe4) }
          end
          -- the full slot; a lone row's scales (not lone_compact) loaded where used: d a function
          local function d() return t:load_f32(xsb, xi, 64 * j + 32) end
          return { q = t:load_f32(xsb, xi, 64 * j), c = offset ~= 0 and t:load_f32(xsb, xi, 64 * j + 16) or nil,
                   d = M == 1 and d or d() }
        end
        local held = {}
        if hold then for j = 0, M - 1 do held[j] = slot(j) end end
        -- a whole group: its 8 scales at once (row r's blocks in lanes 2r, 2r + 1), one pair per row
        local sc8 = {}
        for r = 0, nrows - 1 do
          -- row rr of the pass's group g
          local g, rr = math.floor(r / PACK_ROWS), r % PACK_ROWS
          if nrows >= PACK_ROWS and rr == 0 and not tight then
            sc8[g] = t:load_f16x8(ws[g], si, math.floor(PACK_ROWS * qf.qrow / 2))
          end
          local w = t:load_raw(t:view(wq[g], "bf16"), si, math.floor(qf.qrow * rr / 2))
          if offset ~= 0 then w = t:bxor(w, t:vconst(offset)) end
          local function scales()
            if sc8[g] then return t:pair_split(sc8[g], rr) end
            local sbase = math.floor(PACK_ROWS * qf.qrow / 2) + 2 * rr
            return t:sel128(t:load_bcast_f16(ws[g], si, sbase), t:load_bcast_f16(ws[g], si, sbase + 1), 0xe4)
          end
          local wsc = not tight and scales()
          for j = 0, M - 1 do
            local x = held[j] or slot(j)
            local isum = dot(x.c or t:zero(), w, x.q)
            wsc = wsc or scales()
            local d = x.d
            if type(d) == "function" then d = d() end
            t:fma_acc(acc[r][j], t:i2f(isum), t:mul(wsc, d))
          end
        end
      end, nil, { whole = true })
      for r = 0, nrows - 1 do
        for j = 0, M - 1 do
          local s = t:reduce_add(acc[r][j], p.tree)
          finish(t, form_, a, s, j0, j, pass_row(n, n2, r))
        end
      end
    end
    if R <= PACK_ROWS then return t:for_rows(a.row_begin, a.row_end, R, pass) end
    -- a lone row's two groups at once, one from each half of the rows (row_halves, above)
    row_halves(t, a, function(n, at2) pass(n, R, at2()) end,
           function(first) t:for_rows(first, a.row_end, PACK_ROWS, pass) end)
  end
  -- a lone activation row's group of q8 spans kp * (rec + 72) / 64 bytes of records and slots: at
  -- most t.tune.stream_hw (kp <= kmax), the hardware prefetcher alone streams it (gen/isa/x86_64.lua
  -- says what was measured); past it the software prefetch streams it
  local function rows_block(j0, M)
    if not q8 then return q4_block(j0, M) end
    local kmax = math.floor(t.tune.stream_hw * 64 / (qf.rec + 72) / p.tile) * p.tile
    if M > 1 or kmax < p.tile or not t.tune.lone_compact then return q8_rows(j0, M, false) end
    t:cases(k_past(kmax), { 0, 1 }, function(c) q8_rows(j0, M, c == 0) end)
  end
  local mfull = t:mul(div_const(t, a.m, J), J)
  t:for_tiles(mfull, J, function(j0) rows_block(j0, J) end, nil, { whole = true })
  local left = {}
  for r = 1, J - 1 do left[r] = r end
  if #left > 0 then t:cases(t:sub(a.m, mfull), left, function(M) rows_block(mfull, M) end) end
end

-- The activation rows of one block of the packed forms (the GEMM): max_m, or more where all the
-- chains of more rows fit the accumulators beside the weights (AVX-512: 6 rows of 4 chains in
-- the exact tier, 24 accumulators), so that each weight tile loaded (and widened) serves them
-- all. The fast tier keeps two weight rows per pass (rows = 2: AVX-512: 6 rows of 2 chains for
-- each of 2 weight rows); the exact tier's passes over a whole block take two weight rows too,
-- in chain-split passes (schedule's share). GEMM_ROWS_MAX bounds J: a row's partial sums (J x chains x 16 floats) fit
-- GEMM_PART_ROW, and J fits div_const.
local GEMM_ROWS_MAX = 12
local function gemm_rows(p, nchains, wregs, budget, rows)
  local J = p.max_m
  while J < GEMM_ROWS_MAX and rows * ((J + 1) * nchains + wregs) <= budget do J = J + 1 end
  assert(J * nchains * 16 <= GEMM_PART_ROW, "a row's partial sums must fit GEMM_PART_ROW")
  assert(J * 16 * 16 <= GEMM_SUMS, "a block's sums must fit GEMM_SUMS")
  return J
end

return {
  leaf = "gemv",
  doc = "BF16, q8 and q4 GEMV and GEMM: m = 1..4 activation rows (packed forms: any m), f32 or bf16 RNE destinations",
  -- (the quantized forms' fast tier: their own variants, `variants` below)
  tiers = { exact = { "neon", "bfcvt", "avx2", "avx512" }, fast = { "bf16", "avx512bf16" } },
  tolerance = { fast = "gemv_fast_f64" },
  -- prefetch: elements ahead in a row-major row; prefetch_stream: elements ahead in a packed or
  -- blocked stream, every line (one stream gets no overlap of compute and DRAM from the hardware
  -- prefetcher alone at M > 1: bench/results/gemv-analysis.md), into L2: filling L1 that far
  -- ahead held its fill buffers and cost a decode step 10-15% (bench/results/audio-analysis.md);
  -- the quantized forms' streams prefetch t.tune.stream_ahead bytes ahead instead (0 here: none)
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
  exports = { PACK_ROWS = PACK_ROWS, PACK_TILE = TILE, GEMM_KBLOCK = GEMM_KBLOCK, GEMM_PART_ROW = GEMM_PART_ROW,
              GEMM_SUMS = GEMM_SUMS, Q8_RECORD = QUANT.q8.rec, Q4_RECORD = QUANT.q4.rec,
              Q4K_RECORD = QUANT.q4k.rec, Q4K_SPAN = QUANT.q4k.span,
              BLOCK_ROWS = BLOCK_ROWS, BLOCK_GROUP = BLOCK_GROUP, BLOCK_KALIGN = BLOCK_KALIGN },
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
    form("q8_f32", { f32 = true, packed = true, quant = "q8", tiers = { "exact", "fast" },
         variants = { fast = { "avx2madd", "avxvnni", "avx512vnni", "avx512vnnihw", "dotprod" } } }),
    form("q8_f32_bias", { f32 = true, bias = true, packed = true, quant = "q8", tiers = { "exact", "fast" },
         variants = { fast = { "avx2madd", "avxvnni", "avx512vnni", "avx512vnnihw", "dotprod" } } }),
    form("q8_bf16_rne", { packed = true, quant = "q8", tiers = { "exact", "fast" },
         variants = { fast = { "avx2madd", "avxvnni", "avx512vnni", "avx512vnnihw", "dotprod" } } }),
    form("q8_bf16_rne_add", { add = true, packed = true, quant = "q8", tiers = { "exact", "fast" },
         variants = { fast = { "avx2madd", "avxvnni", "avx512vnni", "avx512vnnihw", "dotprod" } } }),
    form("q4_f32", { f32 = true, packed = true, quant = "q4", tiers = { "exact", "fast" },
         variants = { fast = { "avx2madd", "avxvnni", "avx512vnni", "avx512vnnihw", "dotprod" } } }),
    form("q4_f32_bias", { f32 = true, bias = true, packed = true, quant = "q4", tiers = { "exact", "fast" },
         variants = { fast = { "avx2madd", "avxvnni", "avx512vnni", "avx512vnnihw", "dotprod" } } }),
    form("q4_bf16_rne", { packed = true, quant = "q4", tiers = { "exact", "fast" },
         variants = { fast = { "avx2madd", "avxvnni", "avx512vnni", "avx512vnnihw", "dotprod" } } }),
    form("q4_bf16_rne_add", { add = true, packed = true, quant = "q4", tiers = { "exact", "fast" },
         variants = { fast = { "avx2madd", "avxvnni", "avx512vnni", "avx512vnnihw", "dotprod" } } }),
    form("q4k_f32", { f32 = true, packed = true, quant = "q4k", tiers = { "exact" } }),
    form("q4k_f32_bias", { f32 = true, bias = true, packed = true, quant = "q4k", tiers = { "exact" } }),
    form("q4k_bf16_rne", { packed = true, quant = "q4k", tiers = { "exact" } }),
    form("q4k_bf16_rne_add", { add = true, packed = true, quant = "q4k", tiers = { "exact" } }),
  },
  body = function(t, p, form_)
    local a = t.arg
    local fast = t.tier == "fast"
    local ms = {}
    for mm = 1, p.max_m do ms[mm] = mm end
    if form_.blocked then return blocked_body(t, p, form_, a) end
    if form_.quant and fast then return qfast_body(t, p, form_, a) end
    -- xs: activation row j at xs + j * kpad, one loop for every m. Exact: per 64-element tile,
    -- chains 0..3 of 16 f32 lanes (the lane mapping), the lanes past k -0: a tile of weights
    -- past k (+0: zero padding, a masked load) adds (+0) * (-0) = -0 to its lanes, which leaves
    -- every accumulator as it is (-0, NaN and inf included): the tail is one more ordinary
    -- iteration. Fast: bf16 in order, past k +0.
    local nchains = fast and 2 or 4
    -- raw w (+ widened w) per row; quantized: the block's scale, the loaded quants, the weights
    local wregs = fast and 1 or form_.quant and 3 or 2
    local qf = form_.quant and QUANT[form_.quant]
    if qf then assert(p.pack_rows == PACK_ROWS, "the quantized layouts have groups of PACK_ROWS rows") end
    local pr = p.pack_rows
    -- rows per block: the packed forms take any m in blocks of J rows (the last one m mod J)
    local J = form_.packed and gemm_rows(p, nchains, wregs, t.tune.accumulators, fast and 2 or 1) or p.max_m
    -- k padded to whole tiles (recomputed where it is used, rather than held in a register)
    local function kp() return t:iand(t:add(a.k, p.tile - 1), -p.tile) end
    local kpad = kp()
    t:for_rows(t:iconst(0), a.m, 1, function(j)
      local xrow = t:addr(a.x, t:mul(a.ldx, j), 4)
      -- the rows of a block interleaved by tile (tile i / 64 of row j0 + jj at xs + j0 * kpad +
      -- i * M + 64 * jj, M the block's rows; exact in floats, fast in bf16), so one pointer serves
      -- a block
      local j0 = t:mul(div_const(t, j, J), J)
      local mb = t:imin(t:sub(a.m, j0), J)
      local at0 = t:add(t:mul(kpad, j0), t:mul(t:sub(j, j0), p.tile))
      local xsf = fast and t:addr(t:view(a.xs, "bf16"), at0, 2) or t:addr(a.xs, at0, 4)
      t:for_tiles(a.k, p.tile, function(i, tail)
        local v = {}
        for q = 0, 3 do
          v[q] = t:load_f32(xrow, i, 16 * q, tail and tail(16 * q), (tail and not fast) and 0x80000000 or nil)
        end
        local at = t:mul(i, mb)
        if fast then
          for q = 0, 3 do t:store_bf16(xsf, at, 16 * q, t:rne(v[q])) end
        else
          t:store_f32(xsf, at, 0, t:uzp_even(v[0], v[1]))
          t:store_f32(xsf, at, 16, t:uzp_odd(v[0], v[1]))
          t:store_f32(xsf, at, 32, t:uzp_even(v[2], v[3]))
          t:store_f32(xsf, at, 48, t:uzp_odd(v[2], v[3]))
        end
      end)
    end)
    -- The quantized weights of a record at q (quants, bytes) and s (its scales, binary16): block h
    -- of row r's scale (q4 lut: its table; s8: the record's 8 scales spilled, t.tune.scales_once),
    -- and (q4) the 16 bytes holding both of its chains
    local lut = (form_.quant == "q4" or form_.quant == "q4k") and t.tune.q4_lut  -- q4, q4k by table
    -- (u: the u-th record from there)
    local function q_block(q, s, wi, si, s8, r, h, u)
      local sc = s8 and t:reload_bcast(s8, 2 * r + h) or
                 t:load_bcast_f16(s, si, PACK_ROWS * qf.qrow / 2 + 2 * r + h + u * qf.rec / 2)
      if lut then sc = t:mul(t:vtable("q4_ramp", Q4_RAMP), sc) end
      return sc, form_.quant == "q4" and t:load_u8(q, wi, qf.qrow * r + 16 * h + u * qf.rec) or nil
    end
    -- lane l of chain c of row r: k = 64t + 32h + 2l + c mod 2 (h = c div 2), its weight q * d
    -- (exact) from its block's scale sc and (q4) bytes; by table: the table's lane of the nibble
    -- (lut16 reads the low 4 bits: the high nibble shifted down, the low one as loaded)
    local function q_weight(q, wi, r, c, sc, bytes, u)
      if lut then return t:lut16(sc, c % 2 == 0 and bytes or t:isra_v(bytes, 4)) end
      if form_.quant == "q8" then
        return t:mul(t:i2f(t:load_i8(q, wi, qf.qrow * r + 32 * math.floor(c / 2) + 16 * (c % 2) + u * qf.rec)), sc)
      end
      local nib = c % 2 == 0 and t:band(bytes, t:vconst(15)) or t:isra_v(bytes, 4)
      return t:mul(t:i2f(t:isub_v(nib, t:vconst(8))), sc)
    end
    -- the records of the group at row m (a multiple of PACK_ROWS), from byte m * kp * rec / 256
    local function q_group(m) return t:addr(a.w, t:ishr(t:mul(t:mul(m, kp()), qf.num), 4 + qf.sh), 1) end
    -- every line of the record at q (u records on from tile wi's) stream_ahead bytes ahead: into
    -- L2, or into L1 where the pass reads whole records (whole) and t.tune.stream_l1
    local function q_prefetch(q, wi, u, whole)
      local ahead, level = stream_ahead(t, qf) + u * qf.rec, (t.tune.stream_l1 and whole) and 1 or 2
      for o = 0, qf.rec - 1, 64 do t:prefetch(q, wi, o + ahead, 1, level) end
    end
    -- q4k: the super-record from k = i (bytes wi on) for a pass over nrows rows from wrow (rows_at),
    -- its halves hs (the chains halves[h] of each), against the block's M activation rows (fma_chain).
    -- First each row's eight d1 = d sc_j and -m1 = -(dmin m_j) (exact), two rows a vector (row 2pp in
    -- lanes 0-7, 2pp + 1 in 8-15; a lone last row in both: no binary16 read past the pass's rows), into
    -- stack slots; then per tile u and half h each row's sub-block j = 2u + h: its table, lane v =
    -- fma(v, d1, -m1) (without tables, the weights fma(u, d1, -m1) of its two chains), d1 and -m1
    -- broadcast from lane 8 (r mod 2) + j of its pair's slots. The tile's chains as q4's.
    local function q4k_super(wi, wrow, nrows, R, hs, halves, fma_chain, pass, M)
      if p.prefetch_stream > 0 and pass == 0 then q_prefetch(wrow.q, wi, 0, nrows == PACK_ROWS) end
      -- the pass's first row in its group, rin, a constant in each case: its codes
      -- (base + 8 rin) and d (base + 2 rin) at constant offsets from its quants (base + 32 rin), so
      -- no register holds a row offset (the GEMM's passes have one integer register to spare)
      local npair = math.ceil(nrows / 2)
      local d1s, m1s = {}, {}
      for pp = 0, npair - 1 do d1s[pp], m1s[pp] = t:slot(), t:slot() end
      local function prep(rin)
        local qs, si = t:view(wrow.q, "f16"), t:ishr(wi, 1)
        for pp = 0, npair - 1 do
          -- binary16 element e of the pair's rows (e: d, or e + 4: dmin), widened, a row per half
          local function pairv(e)
            local at = Q4K_D / 2 - 15 * rin + e + 2 * pp
            local lo = t:load_bcast_f16(qs, si, at)
            if 2 * pp + 1 >= nrows then return lo end
            return t:sel128(lo, t:load_bcast_f16(qs, si, at + 1), 0xe4)
          end
          local at = -24 * rin + 16 * pp
          t:spill_to(d1s[pp], t:mul(t:i2f(t:load_i8(wrow.q, wi, Q4K_SC + at)), pairv(0)))
          t:spill_to(m1s[pp], t:neg(t:mul(t:i2f(t:load_i8(wrow.q, wi, Q4K_M + at)), pairv(4))))
        end
      end
      -- (a pass of R rows starts at a multiple of R in the group; a row past the whole passes goes
      -- alone, at any row: for_rows)
      local rins = {}
      for r = 0, PACK_ROWS - 1, nrows == R and R or 1 do rins[#rins + 1] = r end
      if #rins == 1 then prep(0) else t:cases(wrow.rin(), rins, prep) end
      for u = 0, 3 do
        for _, h in ipairs(hs) do
          -- row r's d1 and -m1 (broadcast where used: no register holds them across the rows)
          local function dm(r)
            local pp, lane = math.floor(r / 2), 8 * (r % 2) + 2 * u + h
            return t:reload_bcast(d1s[pp], lane), t:reload_bcast(m1s[pp], lane)
          end
          local tab, bytes = {}, {}
          for r = 0, nrows - 1 do
            if lut then
              local d1, m1 = dm(r)
              tab[r] = t:fma(t:vtable("q4k_ramp", Q4K_RAMP), d1, m1)
            end
            bytes[r] = t:load_u8(wrow.q, wi, 128 * u + qf.qrow * r + 16 * h)
          end
          for _, c in ipairs(halves[h]) do
            -- row r's weights of chain c (its nibbles: the even chain's bytes as loaded, the odd
            -- chain's shifted down 4; lut16 reads the low 4 bits)
            local function weight(r)
              local b = c % 2 == 0 and bytes[r] or t:isra_v(bytes[r], 4)
              if lut then return t:lut16(tab[r], b) end
              if c % 2 == 0 then b = t:band(b, t:vconst(15)) end
              local d1, m1 = dm(r)
              return t:fma(t:i2f(b), d1, m1)
            end
            local wv = weight
            if not lut then
              wv = {}
              for r = 0, nrows - 1 do wv[r] = weight(r) end
            end
            fma_chain(c, wv, 64 * u * M)
          end
        end
      end
      for pp = 0, #d1s do
        t:drop(d1s[pp])
        t:drop(m1s[pp])
      end
    end
    -- A lone activation row's exact pass over two groups (t.tune.exact_groups = 2): the groups at
    -- rows n and at2() (row_halves), two streams far apart, each prefetching its own lines ahead. Their
    -- 2 x 4 rows x 4 chains are every vector register, so k goes in pieces of EXACT_PIECE tiles
    -- (the last one shorter): per piece chains (0, 1) of both groups, then chains (2, 3) over the
    -- same records (from L1), each pair's 16 accumulators parked in stack slots while the other
    -- runs. Each chain still accumulates its k in increasing order: the one-group pass's bits.
    local function exact_two(j0, n, at2)
      local xsb = j0 and t:addr(a.xs, t:mul(kp(), j0), 4) or a.xs
      local q = { [0] = q_group(n), [1] = q_group(at2()) }
      local park = {}                           -- park[h][g][r][c % 2]: chains 2h, 2h + 1
      for h = 0, 1 do
        park[h] = {}
        for g = 0, 1 do
          park[h][g] = {}
          for r = 0, PACK_ROWS - 1 do
            park[h][g][r] = {}
            for c = 0, 1 do
              park[h][g][r][c] = t:slot()
              t:spill_to(park[h][g][r][c], t:zero())
            end
          end
        end
      end
      -- chains 2h, 2h + 1 of tile i + 64u of both groups (x's two chains loaded first; per row
      -- its block's scale or table, then both chains)
      local function tile(acc, h, i, u)
        local wi, si = t:ishr(t:mul(i, qf.num), 2), t:ishr(t:mul(i, qf.num), 3)
        local xv = { [0] = t:load_f32(xsb, i, 64 * u + 32 * h), [1] = t:load_f32(xsb, i, 64 * u + 32 * h + 16) }
        for g = 0, 1 do
          local sg = t:view(q[g], "f16")
          -- (every line of both streams' records stream_ahead bytes ahead, in the first half)
          if h == 0 and p.prefetch_stream > 0 then q_prefetch(q[g], wi, u, true) end
          local s8 = t.tune.scales_once and t:spill(t:load_f16x8(sg, si, PACK_ROWS * qf.qrow / 2 + u * qf.rec / 2))
          for r = 0, PACK_ROWS - 1 do
            local sc, bytes = q_block(q[g], sg, wi, si, s8, r, h, u)
            for cc = 0, 1 do
              t:fma_acc(acc[g][r][cc], q_weight(q[g], wi, r, 2 * h + cc, sc, bytes, u), xv[cc])
            end
          end
          if s8 then t:drop(s8) end
        end
      end
      local piece = EXACT_PIECE * p.tile
      t:for_tiles(kp(), piece, function(k0, tail)
        for h = 0, 1 do
          local acc = {}
          for g = 0, 1 do
            acc[g] = {}
            for r = 0, PACK_ROWS - 1 do
              acc[g][r] = { [0] = t:reload_acc(park[h][g][r][0]), [1] = t:reload_acc(park[h][g][r][1]) }
            end
          end
          -- (the last piece: the 1 .. EXACT_PIECE - 1 tiles left, each a copy as the whole piece's)
          local tiles = {}
          for u = 1, EXACT_PIECE - 1 do tiles[u] = u end
          local function run(nt) for u = 0, nt - 1 do tile(acc, h, k0, u) end end
          if tail then t:cases(t:ishr(t:sub(kp(), k0), 6), tiles, run) else run(EXACT_PIECE) end
          for g = 0, 1 do
            for r = 0, PACK_ROWS - 1 do
              for c = 0, 1 do t:spill_to(park[h][g][r][c], acc[g][r][c]) end
            end
          end
        end
      end)
      -- (c0 + c1) + (c2 + c3), the tree, the destination
      for g = 0, 1 do
        local m = g == 0 and n or at2()
        for r = 0, PACK_ROWS - 1 do
          local v = {}
          for h = 0, 1 do v[h] = t:add(t:reload(park[h][g][r][0]), t:reload(park[h][g][r][1])) end
          finish(t, form_, a, t:reduce_add(t:add(v[0], v[1]), p.tree), j0, 0, t:add(m, r))
        end
      end
    end
    -- activation rows j0 .. j0 + M - 1 (j0 nil: from row 0) against rows [row_begin, row_end);
    -- kb (a GEMM k block, see gemm_kblocks): the tiles [kb.start, kb.stop) only, the accumulators
    -- taken from and (but for the last k block) left in the partial sums' area
    -- gemm: the block is part of a GEMM call (m > max_m), even where it has max_m rows or fewer
    -- (the rows left after the whole blocks)
    local function rows_block(j0, M, kb, gemm)
      gemm = gemm or M > p.max_m
      -- every pass covers all M activation rows (J = M): a weight tile is loaded and widened once
      -- per pass, never per activation row; in a GEMM call, a block whose passes would take one
      -- weight row shares each xs load between two
      local C, R = schedule(p, form_, M, nchains, wregs, t.tune.accumulators)
      if gemm and R < 2 then C, R = schedule(p, form_, M, nchains, wregs, t.tune.accumulators, 2) end
      -- the finished sums of a block in a GEMM call (not a k block that leaves them in the area):
      -- the transposed epilogue. A row pair's vectors v (lane sums before the tree) wait in xs's
      -- sums area, slot (j, n - row_begin mod 16); per 16 weight rows, each activation row's 16
      -- vectors are reduced together (reduce_add_rows: every lane's tree as reduce_add's) and
      -- finished as one vector, instead of a tree, a rounding and a store per output
      local transposed = gemm and not (kb and not kb.last)
      local function sums() return t:addr(a.xs, t:mul(a.m, kp()), 4) end
      -- the transposed epilogue of the group of 16 weight rows (from row_begin) that holds row n:
      -- each activation row's 16 vectors reduced together, finished as one vector (the lanes
      -- past row_end neither loaded nor stored)
      local function group_done(n)
        local n16 = t:add(a.row_begin, t:iand(t:sub(n, a.row_begin), -16))
        local lanes = t:lanes(t:sub(a.row_end, n16))
        local esz = form_.f32 and 4 or 2
        -- the group's destinations in activation row j0 (and its residual, bias), sums in xs
        local function at_group(base)
          local row = t:addr(base, t:add(a.y_off, n16), esz)
          return j0 and t:addr(row, t:mul(a.ldy, j0), esz) or row
        end
        local at0, y0 = sums(), at_group(a.y)
        local r0 = form_.add and at_group(a.r)
        local b0 = form_.bias and t:addr(a.bias, n16, 4)
        -- (a loop over the block's activation rows, jx stepping over their 256 floats of sums: one
        -- copy of the reduction in the stamp)
        t:for_tiles(t:iconst(256 * M), 256, function(jx)
          local s = t:reduce_add_rows(function(l) return t:load_f32(at0, jx, 16 * l) end, p.tree)
          finish_rows(t, form_, s, y0, r0, b0, t:mul(a.ldy, t:ishr(jx, 8)), lanes)
        end, nil, { whole = true })
      end
      local function pair(n, nrows)
        -- wrow[r]: { pointer, element offset } of row n + r; widx(i): tile i's index from there.
        -- Packed: row n of its group, the group's rows 64 elements apart in every tile (a pass
        -- of R rows starts at a multiple of R, R dividing pack_rows); the tile loop runs over
        -- the zero-padded k (no tail).
        -- kb: the rows' partial sums (row n + r's from (n + r - row_begin) * GEMM_PART_ROW floats
        -- into the area): each pass takes its chains' accumulators from there and (but in the last
        -- k block) leaves them there
        local function part_at() return t:mul(t:sub(n, a.row_begin), GEMM_PART_ROW) end
        local function part_off(r, j, c) return r * GEMM_PART_ROW + 16 * (nchains * j + c) end
        local function widx(i) return form_.packed and t:mul(i, pr) or i end
        -- (per pass: no register held across the passes)
        local function rows_at()
          local wrow = {}
          if qf then
            -- the group's records (q_group); row n's quants and scales (q4k: its quants, its codes
            -- wrow.c, its d and dmin)
            local base = q_group(t:iand(n, -pr))
            local rin = t:iand(n, pr - 1)
            wrow.q = t:addr(base, t:mul(rin, qf.qrow), 1)
            if form_.quant == "q4k" then
              -- (the row in the group, for the codes' and scales' pointers: made where used, once a
              -- super-record, so that no register holds them through its tiles)
              wrow.rin = function() return t:iand(n, pr - 1) end
            else
              wrow.s = t:addr(t:view(base, "f16"), t:mul(rin, 2), 2)
            end
            return wrow
          end
          if form_.packed then
            local base = t:addr(a.w, t:add(t:mul(t:iand(n, -pr), kp()), t:mul(t:iand(n, pr - 1), p.tile)), 2)
            for r = 0, nrows - 1 do wrow[r] = { base, p.tile * r } end
          else
            for r = 0, nrows - 1 do wrow[r] = { t:addr(a.w, t:mul(t:add(n, r), a.ldw), 2), 0 } end
          end
          return wrow
        end
        local cpass = nrows == R and C or nchains       -- (a row alone holds every chain)
        -- the chains' partial sums across passes: exact (c0 + c1) + (c2 + c3), fast c0 + c1;
        -- a value a later pass must not hold in registers waits in a stack slot
        local part = {}                                 -- part[r][j][key]: value or spill handle
        for r = 0, nrows - 1 do
          part[r] = {}
          for j = 0, M - 1 do part[r][j] = {} end
        end
        local function get(x) return (type(x) == "table" and x.kind == "spill") and t:reload(x) or x end
        local npass = math.floor(nchains / cpass)
        local first_reader = {}                         -- half -> the first pass reading it
        for s = 0, npass - 1 do
          for c = s * cpass, (s + 1) * cpass - 1 do
            local h = fast and c or math.floor(c / 2)
            if first_reader[h] == nil then first_reader[h] = s end
          end
        end
        for s = 0, npass - 1 do
          local cs = {}
          for c = s * cpass, (s + 1) * cpass - 1 do cs[#cs + 1] = c end
          local halves, hs = {}, {}                     -- half -> its chains in this pass
          for _, c in ipairs(cs) do
            local h = fast and c or math.floor(c / 2)
            if not halves[h] then halves[h] = {}; hs[#hs + 1] = h end
            halves[h][#halves[h] + 1] = c
          end
          -- the block's xs (per pass: no register held across the row loop)
          local xsb = fast and t:view(a.xs, "bf16") or a.xs
          if j0 then xsb = t:addr(xsb, t:mul(kp(), j0), fast and 2 or 4) end
          local acc = {}
          local area, at
          if kb and not kb.first then area, at = kb.area(), part_at() end
          local wrow = rows_at()
          for r = 0, nrows - 1 do
            acc[r] = {}
            for j = 0, M - 1 do
              acc[r][j] = {}
              for _, c in ipairs(cs) do
                acc[r][j][c] = area and t:load_acc(area, at, part_off(r, j, c)) or t:zero()
              end
            end
          end
          local body = function(i, tail)
            -- (quantized: tile i's record, in bytes and in binary16 elements)
            local wi = qf and t:ishr(t:mul(i, qf.num), 2 + qf.sh) or widx(i)
            -- the block's tile: M rows, interleaved (made where first used: q4k's super-record makes
            -- its pointers first)
            local xi_
            local function xi() xi_ = xi_ or t:mul(i, M); return xi_ end
            if form_.quant ~= "q4k" then xi() end
            -- chain c of every activation row of the block against the rows' widened weights wv
            -- (wv: the weights, or a function of the row making them where first used); xo: the
            -- block's tile xo / (64 M) on from tile i (q4k's super-records)
            local function fma_chain(c, wv, xo)
              local w = wv
              if type(wv) == "function" then
                w = setmetatable({}, { __index = function(tbl, r) local v = wv(r); rawset(tbl, r, v); return v end })
              end
              for j = 0, M - 1 do
                local xv = t:load_f32(xsb, xi(), (xo or 0) + 64 * j + 16 * c)
                for r = 0, nrows - 1 do t:fma_acc(acc[r][j][c], w[r], xv) end
              end
            end
            if p.prefetch > 0 and not form_.packed and s == 0 then
              for r = 0, nrows - 1 do t:prefetch(wrow[r][1], wi, wrow[r][2] + p.prefetch, 2) end
            end
            if form_.quant == "q4k" then return q4k_super(wi, wrow, nrows, R, hs, halves, fma_chain, s, M) end
            if qf then
              local whole = nrows == PACK_ROWS          -- the pass reads the whole record
              -- (the record's lines ahead, in the first pass)
              if p.prefetch_stream > 0 and s == 0 then q_prefetch(wrow.q, wi, 0, whole) end
              local si = t:ishr(t:mul(i, qf.num), 3)
              -- a pass over the whole group (rows 0-3 of the record: row r's block h in lane 2r + h)
              -- where t.tune.scales_once: the record's 8 scales converted at once into a stack
              -- slot, each broadcast from there where it is used
              local s8 = t.tune.scales_once and whole and
                         t:spill(t:load_f16x8(wrow.s, si, PACK_ROWS * qf.qrow / 2))
              for _, h in ipairs(hs) do
                -- block h of each row: its scale (q4 lut: its table), and (q4) the 16 bytes holding
                -- both of its chains
                local sc, bytes = {}, {}
                for r = 0, nrows - 1 do sc[r], bytes[r] = q_block(wrow.q, wrow.s, wi, si, s8, r, h, 0) end
                for _, c in ipairs(halves[h]) do
                  -- lane l of chain c: its weight (q_weight); by table each row's where first used
                  local wv
                  if lut then
                    wv = function(r) return q_weight(wrow.q, wi, r, c, sc[r], bytes[r], 0) end
                  else
                    wv = {}
                    for r = 0, nrows - 1 do wv[r] = q_weight(wrow.q, wi, r, c, sc[r], bytes[r], 0) end
                  end
                  fma_chain(c, wv)
                end
              end
              if s8 then t:drop(s8) end
              return
            end
            for _, h in ipairs(hs) do
              local raw = {}
              for r = 0, nrows - 1 do
                if p.prefetch_stream > 0 and form_.packed and first_reader[h] == s then
                  t:prefetch(wrow[r][1], wi, wrow[r][2] + 32 * h + p.prefetch_stream, 2, 2)
                end
                -- a row-major tail: the weights past k are not read (+0)
                raw[r] = t:load_raw(wrow[r][1], wi, wrow[r][2] + 32 * h, tail and tail(32 * h) or nil)
              end
              if fast then
                for j = 0, M - 1 do
                  local xr = t:load_raw(xsb, xi(), 64 * j + 32 * h)
                  for r = 0, nrows - 1 do t:dot_bf16_acc(acc[r][j][h], raw[r], xr) end
                end
              else
                for _, c in ipairs(halves[h]) do
                  local wv = {}
                  for r = 0, nrows - 1 do wv[r] = c % 2 == 0 and t:bf16_even(raw[r]) or t:bf16_odd(raw[r]) end
                  fma_chain(c, wv)
                end
              end
            end
          end
          -- (q4k: a super-record, 4 tiles, a step)
          local step = qf and qf.span or p.tile
          if kb then
            t:for_tiles(kb.stop(), step, body, kb.start and kb.start(), { whole = true })
          elseif form_.packed then
            t:for_tiles(kp(), step, body, nil, { whole = true })
          else
            t:for_tiles(a.k, p.tile, body)
          end
          local last = s == npass - 1
          if kb and not kb.last then
            -- the next k block goes on from here
            local area_, at_ = kb.area(), part_at()
            for r = 0, nrows - 1 do
              for j = 0, M - 1 do
                for _, c in ipairs(cs) do t:store_f32(area_, at_, part_off(r, j, c), acc[r][j][c]) end
              end
            end
          else
            for r = 0, nrows - 1 do
              for j = 0, M - 1 do
                local pr_ = part[r][j]
                for _, c in ipairs(cs) do
                  local v = acc[r][j][c]
                  if c % 2 == 0 then
                    pr_[c] = v
                  else
                    -- a pair done: chains c - 1 and c
                    v = t:add(get(pr_[c - 1]), v)
                    pr_[c - 1] = nil
                    if fast or c == 3 then
                      if not fast then v = t:add(get(pr_.pair0), v); pr_.pair0 = nil end
                      if transposed then
                        t:store_f32(sums(), t:mul(t:iand(t:sub(n, a.row_begin), 15), 16), 16 * (16 * j + r), v)
                      else
                        finish(t, form_, a, t:reduce_add(v, p.tree), j0, j, t:add(n, r))
                      end
                    else
                      pr_.pair0 = v
                    end
                  end
                end
                -- what the next pass must not hold in registers
                if not last then
                  for _, key in ipairs({ 0, 2, "pair0" }) do
                    local x = pr_[key]
                    if x ~= nil and not (type(x) == "table" and x.kind == "spill") then
                      pr_[key] = t:spill(x)
                    end
                  end
                end
              end
            end
          end
        end
        if transposed then
          -- this pass ends its group (16 rows from row_begin) or the rows: the group's epilogue
          local past = t:add(n, nrows)
          t:cases(t:imin(t:iand(t:sub(past, a.row_begin), 15), t:sub(a.row_end, past)), { 0 },
                  function() group_done(n) end)
        end
      end
      -- a lone activation row's whole groups, two at a time where t.tune.exact_groups = 2
      -- (q8 only: q4's exact pass, more work per byte, measured up to 14 % slower so at pieces of 4,
      -- 8 and 16 tiles, one shape 3 % faster: bench/results/quant-analysis.md)
      if form_.quant == "q8" and M == 1 and not kb and not gemm and R == PACK_ROWS and C == nchains
         and t.tune.exact_groups == 2 then
        return row_halves(t, a, function(n, at2) exact_two(j0, n, at2) end,
                      function(first) t:for_rows(first, a.row_end, R, pair) end)
      end
      t:for_rows(a.row_begin, a.row_end, R, pair)
    end
    if not form_.packed then
      t:cases(a.m, ms, function(M) rows_block(nil, M) end)
      return
    end
    -- the packed forms take any m (a prompt's rows, a batch's frames): blocks of J rows, each a
    -- pass over the weights, then one block of the m mod J rows left (m <= max_m: that block
    -- alone, as the GEMV)
    -- A whole block of more than max_m rows (AVX-512: 6 rows) goes over k in blocks of GEMM_KBLOCK
    -- (so its arranged x stays in L1): a pass over the rows per k block, the first from zeros, the
    -- others from each row's accumulators in the area after xs's rows; all but the last leave them
    -- there, the last finishes them. Each chain accumulates the same k in the same order: the bits
    -- do not change.
    local function gemm_kblocks(j0, M, gemm)
      local function area() return t:addr(a.xs, t:add(t:mul(a.m, kp()), GEMM_SUMS), 4) end
      -- k in one block: the plain pass
      local more = t:imin(t:ishr(t:sub(kp(), 1), GEMM_KBLOCK_LOG2), 1)
      t:cases(more, { 0, 1 }, function(v)
        if v == 0 then return rows_block(j0, M, nil, gemm) end
        rows_block(j0, M, { stop = function() return t:iconst(GEMM_KBLOCK) end, area = area, first = true }, gemm)
        -- where the last k block starts (recomputed where used: no register across the passes)
        local function klast() return t:iand(t:sub(kp(), 1), -GEMM_KBLOCK) end
        t:for_tiles(klast(), GEMM_KBLOCK, function(k0)
          rows_block(j0, M, { start = function() return k0 end, stop = function() return t:add(k0, GEMM_KBLOCK) end,
                              area = area }, gemm)
        end, t:iconst(GEMM_KBLOCK), { whole = true })
        rows_block(j0, M, { start = klast, stop = kp, area = area, last = true }, gemm)
      end)
    end
    local kblocked = J > p.max_m
    local mfull = t:mul(div_const(t, a.m, J), J)
    t:for_tiles(mfull, J, function(j0)
      if kblocked then gemm_kblocks(j0, J) else rows_block(j0, J) end
    end, nil, { whole = true })
    local left = {}
    if not kblocked then
      for r = 1, J - 1 do left[r] = r end
      t:cases(t:sub(a.m, mfull), left, function(M) rows_block(mfull, M) end)
      return
    end
    -- the m mod J rows left: as the GEMV where they are the whole call (m <= max_m); in a GEMM
    -- call (m > max_m, 16 added to the arm's value) with the GEMM's schedule and epilogue (the 4
    -- rows left of 16 then load each xs vector for two weight rows), and from 3 rows on its k
    -- pieces (the arranged x of 2 rows passes L1 only at k > 4096; a piece's partial sums cost
    -- 1.03x at k = 2048)
    for r = 1, p.max_m do left[#left + 1] = r end
    for r = 1, J - 1 do left[#left + 1] = 16 + r end
    local in_gemm = t:imin(div_const(t, t:sub(a.m, 1), p.max_m), 1)
    t:cases(t:add(t:sub(a.m, mfull), t:mul(in_gemm, 16)), left, function(v)
      if v > 18 then return gemm_kblocks(mfull, v - 16, true) end
      if v > 16 then return rows_block(mfull, v - 16, nil, true) end
      rows_block(mfull, v)
    end)
  end,
}
