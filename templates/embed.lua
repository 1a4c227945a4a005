-- templates/embed.lua: embedding lookups, row by row (codebook_mean_x6_bf16: see the end of the file).
--
-- gather_bf16, gather_bf16_wide: LFM2's embed_tokens (transformers' Lfm2Model, an nn.Embedding
-- of vocab x d bf16): row j of y is row ids[j] of the table, bits as they are (infinities, signed
-- zeros and subnormals included), except that a NaN becomes the canonical quiet NaN 0x7fc0 (every
-- NaN an exact leaf stores is that one, copies included: docs/design.md); the _wide form stores
-- them widened exactly (<< 16) to f32 (NaN: 0x7fc00000), for a consumer that reads f32 x (the
-- first RMSNorm's add_f32 form, a GEMV).
--
-- codebook_mean, codebook_mean_x6: the LFM2.5-Audio detokenizer's input (liquid-audio 1.3.0,
-- detokenizer.py: FusedEmbedding, then LFM2AudioDetokenizer.forward's interpolate). One table of
-- (codebooks * vocab) x d rows (FusedEmbedding.emb: codebook c's code k is row c * vocab + k);
-- for frame j, with e_c = the widened bf16 row of codebook c's code,
--   s = +0; s = s + e_c for c = 0, 1, ..., 7 in this order (f32 adds, one rounding each)
--   y = s * 0.125 (== s / 8 exactly: the same real, rounded once; torch's mean is sum then div_)
-- which is torch's CPU mean over dim 1 in f32 (the module runs in f32; its weights hold the
-- checkpoint's bf16 values): a sequential sum from +0 (8 terms are under one cascade level),
-- then the divide. A sum is never -0 (+0 + -0 = +0); every NaN mean (a NaN row, inf - inf) is
-- stored as the canonical quiet NaN 0x7fc00000, the partial sums between passes too.
-- codebook_mean_x6 writes frame j's vector to the 6 rows 6j .. 6j+5 of y: interpolate(.., 6T,
-- mode="nearest-exact") along time is that repetition (source index floor((i + 0.5) / 6) = i div 6,
-- checked numerically by fixtures/ref/gen_embed.py), fused so no copy-only leaf follows.
-- The sum runs in passes of `pass` codebooks per tile loop; between passes the partial f32 sum
-- is kept in y's first row (exact: an f32 stored and reloaded), so the order above is unchanged
-- and a pass holds `pass` row pointers only (x86_64 has 14 general registers).
--
-- Ids are not checked here: a leaf cannot return an error. The caller guarantees
-- 0 <= ids[j] < vocab rows of the table (gather) and 0 <= code < vocab for every codebook
-- (codebook_mean); the host checks where ids enter, before the call (liquid-audio's
-- LFM2AudioProcessor.decode raises on codes outside [0, 2047]; token ids come from the
-- tokenizer). An id out of range reads outside the table. y must not overlap the table or ids.
-- Lanes past d are neither loaded nor stored.

local function gather_args(wide)
  return {
    { "ids", "const int32_t *", extent = "m", doc = "m token ids, each in [0, vocab): the caller checks them" },
    { "table", "const uint16_t *",
      data_extent = "rows ids[j] (< vocab) of ld_table elements: the vocabulary is not an argument",
      doc = "vocab x d bf16 embedding rows, row stride ld_table elements" },
    { "y", wide and "float *" or "uint16_t *", extent = "span(m, ldy, d)", doc = wide and
      "m x d: the rows widened to f32, row stride ldy elements" or "m x d bf16 rows, row stride ldy elements" },
    { "d", "int64_t", doc = "row length (hidden size), >= 1" },
    { "m", "int64_t", doc = "number of ids, >= 0" },
    { "ld_table", "int64_t", doc = "row stride of table, >= d" },
    { "ldy", "int64_t", doc = "row stride of y, >= d" },
  }
end

local function mean_args(rep)
  return {
    { "codes", "const int32_t *", extent = "m > 0 ? (m - 1) * ld_codes + 7 * cb_stride + 1 : 0",
      doc = "m frames x 8 codes: frame j, codebook c at " ..
      "codes[j*ld_codes + c*cb_stride], each in [0, vocab): the caller checks them" },
    { "table", "const uint16_t *", extent = "span(8 * vocab, ld_table, d)",
      doc = "(8 * vocab) x d bf16 rows (codebook c's code k: row c*vocab + k), " ..
      "row stride ld_table elements" },
    { "y", "float *", extent = rep > 1 and "span(6 * m, ldy, d)" or "span(m, ldy, d)",
      doc = rep > 1 and "6m x d f32: frame j's mean in rows 6j .. 6j+5, row stride ldy elements"
      or "m x d f32 means, row stride ldy elements" },
    { "d", "int64_t", doc = "row length, >= 1" },
    { "m", "int64_t", doc = "frames, >= 0" },
    { "vocab", "int64_t", doc = "codes per codebook (2048)" },
    { "ld_codes", "int64_t", doc = "stride between frames in codes (8 for frame-major, 1 for (8, T))" },
    { "cb_stride", "int64_t", doc = "stride between codebooks in codes (1 for frame-major, T for (8, T))" },
    { "ld_table", "int64_t", doc = "row stride of table, >= d" },
    { "ldy", "int64_t", doc = "row stride of y, >= d" },
  }
end

local template = {
  leaf = "embed",
  doc = "embedding lookups: token rows (LFM2 embed_tokens), the detokenizer's mean of 8 codebook rows (x6 repeat)",
  tiers = { exact = { "neon", "avx2", "avx512" } },
  params = { codebooks = 8, pass = 4, upsample = 6 },
  check = function(p, need)
    need(p.codebooks == 8, "codebooks: liquid-audio's FusedEmbedding has 8")
    need(p.pass >= 1 and p.codebooks % p.pass == 0, "pass must divide codebooks")
    need(p.upsample == 6, "upsample: the detokenizer upsamples by 6")
  end,
  forms = {
    { name = "gather_bf16", args = gather_args(false), kind = "gather" },
    { name = "gather_bf16_wide", args = gather_args(true), kind = "gather", wide = true },
    { name = "codebook_mean", args = mean_args(1), kind = "mean", rep = 1 },
    { name = "codebook_mean_x6", args = mean_args(6), kind = "mean", rep = 6 },
  },
  body = function(t, p, form)
    local a = t.arg
    if form.kind == "gather" then
      t:for_rows(t:iconst(0), a.m, 1, function(j)
        local id = t:load1_i32(a.ids, j, 0)
        local src = t:addr(a.table, t:mul(id, a.ld_table), 2)
        local yrow = t:addr(a.y, t:mul(j, a.ldy), form.wide and 4 or 2)
        if form.wide then
          t:for_tiles(a.d, 16, function(i, tail)
            local lanes = tail and tail(0)
            t:store_f32(yrow, i, 0, t:canon(t:load_bf16(src, i, 0, lanes)), lanes)
          end)
          return
        end
        t:for_tiles(a.d, 32, function(i, tail)
          if not tail then
            t:store_raw(yrow, i, 0, t:canon_raw(t:load_raw(src, i, 0)))   -- 32 bf16, NaN canonical
            return
          end
          for half = 0, 16, 16 do
            local lanes = tail(half)
            t:store_bf16(yrow, i, half, t:canon(t:load_bf16(src, i, half, lanes)), lanes)
          end
        end)
      end)
      return
    end
    -- codebook_mean(_x6)
    local eighth = 0x3e000000   -- 0.125f
    t:for_rows(t:iconst(0), a.m, 1, function(j)
      local crow = t:addr(a.codes, t:mul(j, a.ld_codes), 4)
      local yrow = t:addr(a.y, t:mul(j, form.rep == 1 and a.ldy or t:mul(a.ldy, form.rep)), 4)
      for first = 0, p.codebooks - 1, p.pass do
        local last = first + p.pass - 1
        -- row pointers of this pass's codebooks: table + (c * vocab + code) * ld_table
        local rows = {}
        for c = first, last do
          local code = t:load1_i32(crow, t:mul(a.cb_stride, c), 0)
          rows[c] = t:addr(a.table, t:mul(t:add(code, t:mul(a.vocab, c)), a.ld_table), 2)
        end
        t:for_tiles(a.d, 16, function(i, tail)
          local lanes = tail and tail(0)
          -- the running sum: +0 at the first pass, else the partial the last pass left in y
          local s = first == 0 and t:vconst(0) or t:load_f32(yrow, i, 0, lanes)
          for c = first, last do s = t:add(s, t:load_bf16(rows[c], i, 0, lanes)) end
          if last < p.codebooks - 1 then
            t:store_f32(yrow, i, 0, t:canon(s), lanes)
            return
          end
          local y = t:canon(t:mul(s, t:vconst(eighth)))
          local dst = yrow
          for k = 1, form.rep do
            t:store_f32(dst, i, 0, y, lanes)
            if k < form.rep then dst = t:addr(dst, a.ldy, 4) end
          end
        end)
      end
    end)
  end,
}

-- codebook_mean_x6_bf16: codebook_mean_x6 for a bf16 residual stream. The same f32 mean
-- (s = +0 + e_0 + ... + e_7 in codebook order, then * 0.125), rounded once to bf16 by the
-- integer RNE (NaN -> the canonical 0x7fc0) and written to the 6 rows 6j .. 6j+5 of a bf16 y.
-- Between passes the partial f32 sum is kept, exactly (a NaN as the canonical one), split over
-- y's first two rows:
-- its high halves in row 6j, its low halves in row 6j+1 (store_bf16 stores high halves; the low
-- halves are shifted up first); the next pass joins them again (hi | (lo >> 16)), so the order of
-- the adds is the one above and nothing is written outside the rows the result fills. Declared
-- after the other forms so that the lines of their ops (each stamped instruction names its
-- template line) stay where they were.
local function mean_bf16(t, p, form)
  local a = t.arg
  local eighth = 0x3e000000   -- 0.125f
  t:for_rows(t:iconst(0), a.m, 1, function(j)
    for first = 0, p.codebooks - 1, p.pass do
      local last = first + p.pass - 1
      local crow = t:addr(a.codes, t:mul(j, a.ld_codes), 4)
      local rows = {}
      for c = first, last do
        local code = t:load1_i32(crow, t:mul(a.cb_stride, c), 0)
        rows[c] = t:addr(a.table, t:mul(t:add(code, t:mul(a.vocab, c)), a.ld_table), 2)
      end
      -- y's rows after the row pointers (x86_64's 14 general registers hold one or the other)
      local yrow = t:addr(a.y, t:mul(j, t:mul(a.ldy, form.rep)), 2)
      t:for_tiles(a.d, 16, function(i, tail)
        local lanes = tail and tail(0)
        local s
        if first == 0 then
          s = t:vconst(0)
        else   -- the partial: high halves from row 6j, low halves from row 6j+1
          local hi = t:load_bf16(yrow, i, 0, lanes)
          local lo = t:load_bf16(t:addr(yrow, a.ldy, 2), i, 0, lanes)
          s = t:bor(hi, t:band(t:isra_v(lo, 16), t:vconst(0xffff)))
        end
        for c = first, last do s = t:add(s, t:load_bf16(rows[c], i, 0, lanes)) end
        if last < p.codebooks - 1 then
          s = t:canon(s)
          t:store_bf16(yrow, i, 0, s, lanes)
          t:store_bf16(t:addr(yrow, a.ldy, 2), i, 0, t:ishl_v(s, 16), lanes)
          return
        end
        local y = t:rne(t:mul(s, t:vconst(eighth)))
        local dst = yrow
        for k = 1, form.rep do
          t:store_bf16(dst, i, 0, y, lanes)
          if k < form.rep then dst = t:addr(dst, a.ldy, 2) end
        end
      end)
    end
  end)
end

template.forms[#template.forms + 1] = { name = "codebook_mean_x6_bf16", kind = "mean_bf16", rep = 6,
  fixtures = { via = "codebook_mean_x6" },   -- against RNE of the f32 reference
  args = (function()
    local args = mean_args(6)
    args[3] = { "y", "uint16_t *", extent = "span(6 * m, ldy, d)",
                doc = "6m x d bf16: RNE of frame j's f32 mean in rows 6j .. 6j+5, " ..
                "row stride ldy elements (rows 6j, 6j+1 also hold the partial sum between passes)" }
    return args
  end)() }

-- codebook_sum_bf16: the LFM2.5-Audio backbone's input after an audio frame (liquid-audio 1.3.0,
-- model/lfm2_audio.py: audio_embedding(codes + offsets).sum(0), offsets c * vocab, vocab 2049 in the
-- released model; an nn.Embedding of 8 * vocab bf16 rows). For frame j, with e_c the widened row
-- c * vocab + code_c of the table,
--   s = +0; s = s + e_c for c = 0, 1, ..., 7 in this order (f32 adds, one rounding each)
--   y = RNE(s)                      (the integer RNE; a NaN s -> the canonical 0x7fc0)
-- into row j of a bf16 y (no mean, no repeat). torch's CPU sum over dim 0 of the bf16 (8, T, d)
-- embedding accumulates in f32 from +0 in codebook order and rounds once (checked bit for bit by
-- fixtures/ref/gen_embed.py, also on data where the reversed order, a pairwise tree or a bf16
-- accumulation give other bits; a column of -0 gives +0). A 1-row output has no second row to hold
-- the partial sum between passes, so the tiles of 16 columns are the outer loop and the frames the
-- inner one: each frame's 8 row pointers are computed afresh per tile, each right before its row is
-- added (x86_64's 14 general registers never hold 8 of them at once); the order of the adds is the
-- one above.
local function sum_bf16(t, p)
  local a = t.arg
  t:for_tiles(a.d, 16, function(i, tail)
    local lanes = tail and tail(0)
    t:for_rows(t:iconst(0), a.m, 1, function(j)
      local crow = t:addr(a.codes, t:mul(j, a.ld_codes), 4)
      local s = t:vconst(0)
      for c = 0, p.codebooks - 1 do
        local code = t:load1_i32(crow, t:mul(a.cb_stride, c), 0)
        s = t:add(s, t:load_bf16(t:addr(a.table, t:mul(t:add(code, t:mul(a.vocab, c)), a.ld_table), 2), i, 0, lanes))
      end
      t:store_bf16(t:addr(a.y, t:mul(j, a.ldy), 2), i, 0, t:rne(s), lanes)
    end)
  end)
end

template.forms[#template.forms + 1] = { name = "codebook_sum_bf16", kind = "sum_bf16",
  args = (function()
    local args = mean_args(1)
    args[3] = { "y", "uint16_t *", extent = "span(m, ldy, d)",
                doc = "m x d bf16: RNE of frame j's f32 sum of its 8 codebook rows in row j, row stride ldy elements" }
    args[6] = { "vocab", "int64_t", doc = "codes per codebook (2049 in LFM2.5-Audio's audio_embedding)" }
    return args
  end)() }

do
  local body = template.body
  template.body = function(t, p, form)
    if form.kind == "mean_bf16" then return mean_bf16(t, p, form) end
    if form.kind == "sum_bf16" then return sum_bf16(t, p) end
    return body(t, p, form)
  end
end

return template
