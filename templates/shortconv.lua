-- templates/shortconv.lua: the FIR/gate/carry of LFM2's ShortConv (transformers' Lfm2ShortConv
-- between in_proj and out_proj), row by row in causal order.
--
-- Input row t holds [B | C | x] (h bf16 each: in_proj's output). Per channel c:
--   bx   = RNE(B * x)                                   (an f32 product of two bf16)
--   acc  = w0 * p2        (form bf16_bias: fma(w0, p2, bias))
--   acc  = fma(w1, p1, acc); acc = fma(w2, bx, acc)     (p2 = Bx[t-2], p1 = Bx[t-1])
--   y    = RNE(C * RNE(acc))                            (the conv rounded to bf16, then gated)
--   carry: p2 <- p1, p1 <- bx                           (committed before the next row; p1 moves
--                                                        with a NaN made canonical, 0x7fc0)
-- The carry (the last two Bx rows, bf16) is the caller's state; zeros are the reference's zero
-- padding at the start of a sequence. Rows run in order and each row reads the carry the row
-- before committed, so one call of m rows equals m calls of one row, outputs and state.
-- Weights are tap-major (w[k*h + c] = conv.weight[c, 0, k]: tap k multiplies Bx[t - 2 + k]).
-- Lanes past h are neither loaded nor stored.

local WIDE = "shortconv::wide_is_the_bf16_form_widened, every target (outputs and carry)"

local function args(bias, wide)
  local a = {
    { "in", "const uint16_t *", extent = "span(m, ld_in, 3 * h)",
      doc = "m rows of [B | C | x] (3h bf16 each), row stride ld_in elements" },
    { "w", "const uint16_t *", extent = "3 * h",
      doc = "3 x h bf16 taps, tap-major: w[k*h + c] multiplies Bx[t - 2 + k][c]" },
  }
  if bias then a[#a + 1] = { "bias", "const uint16_t *", extent = "h", doc = "h bf16 conv biases" } end
  a[#a + 1] = { "carry", "uint16_t *", inout = true, extent = "2 * h",
                doc = "2 x h bf16: carry[c] = Bx[t-2][c], carry[h + c] = Bx[t-1][c]; committed row by row" }
  a[#a + 1] = { "y", wide and "float *" or "uint16_t *", extent = "span(m, ldy, h)", doc = wide and
                "m rows x h: the bf16 results widened to f32 (out_proj's GEMV input), row stride ldy" or
                "m rows x h bf16 (out_proj's input), row stride ldy elements" }
  a[#a + 1] = { "h", "int64_t", doc = "channels, >= 1" }
  a[#a + 1] = { "m", "int64_t", doc = "rows, >= 0 (prefill: P; decode: 1)" }
  a[#a + 1] = { "ld_in", "int64_t", doc = "row stride of in, >= 3h" }
  a[#a + 1] = { "ldy", "int64_t", doc = "row stride of y, >= h" }
  return a
end

return {
  leaf = "shortconv",
  doc = "LFM2 ShortConv FIR/gate/carry: y = RNE(C * RNE(conv3(RNE(B * x)))), carry committed row by row",
  tiers = { exact = { "neon", "bfcvt", "avx2", "avx512" } },
  fixture_gate = "sequence",   -- each manifest a sequence of calls on the carry the leaf commits
  params = { taps = 3 },
  check = function(p, need)
    need(p.taps == 3, "taps: the template is written for LFM2's L = 3 (conv_L_cache)")
  end,
  forms = {
    { name = "bf16", args = args(false), bias = false },
    { name = "bf16_bias", args = args(true), bias = true },
    -- the same results stored widened (exactly) to f32, for out_proj's GEMV, which reads f32 x
    { name = "bf16_wide", args = args(false, true), bias = false, wide = true,
      fixtures = { exempt = "the bf16 form's results widened: " .. WIDE } },
    { name = "bf16_bias_wide", args = args(true, true), bias = true, wide = true,
      fixtures = { exempt = "the bf16_bias form's results widened: " .. WIDE } },
  },
  body = function(t, _, form)
    local a = t.arg
    t:for_rows(t:iconst(0), a.m, 1, function(j)
      local row = t:addr(a["in"], t:mul(j, a.ld_in), 2)
      local yrow = t:addr(a.y, t:mul(j, a.ldy), form.wide and 4 or 2)
      -- one channel vector: loads (bf16 -> f32 of the channels it holds), the math, and the
      -- f32 results to store; whole tiles work on the even and the odd channels of 32 at once
      -- (raw pairs split by a shift or a mask, joined by bf16_pairs), the tail on 16 at a time
      local function conv(ld)
        local bx = t:rne(t:mul(ld("B"), ld("x")))
        local acc = form.bias and t:fma(ld("w0"), ld("p2"), ld("bias")) or t:mul(ld("w0"), ld("p2"))
        acc = t:fma(ld("w1"), ld("p1"), acc)
        acc = t:fma(ld("w2"), bx, acc)
        local y = t:mul(ld("C"), t:rne(acc))
        -- the wide forms need the rounded value as f32; the others round as they store
        return bx, form.wide and t:rne(y) or t:rne_store(y)
      end
      t:for_tiles(a.h, 32, function(c, tail)
        -- element c of the first h-wide part of each array, c + h of the second, c + 2h of the third
        local ch = t:add(c, a.h)
        local c2h = t:add(ch, a.h)
        local where = { B = { row, c }, C = { row, ch }, x = { row, c2h }, w0 = { a.w, c }, w1 = { a.w, ch },
                        w2 = { a.w, c2h }, p2 = { a.carry, c }, p1 = { a.carry, ch } }
        if form.bias then where.bias = { a.bias, c } end
        if not tail then
          -- each raw load kept for the odd pass (hold_operands), or loaded again
          local raw, keep = {}, t.tune.hold_operands
          local function split(name, parity)
            local r = raw[name] or t:load_raw(where[name][1], where[name][2], 0)
            if keep then raw[name] = r end
            return parity == 0 and t:bf16_even(r) or t:bf16_odd(r)
          end
          local bx0, y0 = conv(function(name) return split(name, 0) end)
          local bx1, y1 = conv(function(name) return split(name, 1) end)
          if form.wide then
            -- even and odd channels interleaved back into channel order
            t:store_f32(yrow, c, 0, t:zip_lo(y0, y1, 1))
            t:store_f32(yrow, c, 16, t:zip_hi(y0, y1, 1))
          else
            t:store_raw(yrow, c, 0, t:bf16_pairs(y0, y1))
          end
          -- Bx[t-2] <- Bx[t-1] (a NaN the caller left there becomes the canonical one)
          t:store_raw(a.carry, c, 0, t:canon_raw(raw.p1 or t:load_raw(a.carry, ch, 0)))
          t:store_raw(a.carry, ch, 0, t:bf16_pairs(bx0, bx1))
          return
        end
        for half = 0, 16, 16 do
          local lanes = tail(half)
          local bx, y = conv(function(name) return t:load_bf16(where[name][1], where[name][2], half, lanes) end)
          if form.wide then t:store_f32(yrow, c, half, y, lanes) else t:store_bf16(yrow, c, half, y, lanes) end
          t:store_bf16(a.carry, c, half, t:canon(t:load_bf16(a.carry, ch, half, lanes)), lanes)
          t:store_bf16(a.carry, ch, half, bx, lanes)
        end
      end)
    end)
  end,
}
