-- templates/swiglu.lua: the activation and gate of LFM2's feed-forward (transformers' Lfm2MLP:
-- w2(silu(w1 x) * w3 x)), between the GEMVs: g = w1 x and u = w3 x in, h for w2's GEMV out.
--
-- Per element, in this order (torch's CPU silu kernel: x / (1 + exp(-x)) in f32, the bf16
-- forms widening their input exactly and rounding the f32 result; torch's bf16 mul: an f32
-- product rounded once):
--   e = exp(-g)          (t:exp, gen/vmath.lua: <= 1.5 ulp, templates/vmath.lua; -g flips the sign
--                        bit only; exp(-g) = inf for g < -88.72, 0 for g > 103.97)
--   d = 1 + e
--   s = g / d            (the correctly rounded divide)
--   s = RNE(s)           (forms bf16, bf16_wide: silu's bf16 output)
--   h = u * s            (form f32: h; forms bf16, bf16_wide: h = RNE(u * s))
-- The product is written u * s (torch: s * u; the same value).
-- Special values: every NaN h (a NaN g or u, silu(-inf) = -inf / inf, 0 * inf) is stored as the
-- canonical quiet NaN 0x7fc00000 (bf16 0x7fc0: the RNE's NaN; form f32: t:canon), whatever
-- payloads met (torch: silu(-inf) is nan too; the fixtures compare NaN by class); silu(+inf) =
-- +inf; for g below -88.72, exp(-g) overflows to inf and silu(g) = -0 (torch: the same; the
-- float64 value, g e^g, is a tiny negative number there: fixtures/README.md, swiglu_f64);
-- subnormal g gives g / 2 rounded once. No FTZ: subnormal s, u and h are computed.
-- Rows: row r reads g + r*g_stride, u + r*u_stride and writes h + r*h_stride, n elements each;
-- lanes past n are neither loaded nor stored. In place: forms bf16 and f32 may be given h == g
-- or h == u (the same array and stride; every element is read before it is written, tile by
-- tile); any other overlap of h with g or u is not allowed (bf16_wide: h must not overlap).

local function args(in_type, out_type, wide)
  return {
    { "g", in_type, extent = "span(rows, g_stride, n)",
      doc = "rows x n gate inputs (w1 x), row stride g_stride elements" },
    { "u", in_type, extent = "span(rows, u_stride, n)",
      doc = "rows x n up inputs (w3 x), row stride u_stride elements" },
    { "h", out_type, extent = "span(rows, h_stride, n)", alias = not wide and { "g", "u" } or nil, doc = wide and
      "rows x n outputs: the bf16 results widened to f32 (w2's GEMV input), row stride h_stride elements"
      or "rows x n outputs silu(g) * u (w2's GEMV input), row stride h_stride elements; may be g or u" },
    { "n", "int64_t", doc = "row length, >= 1" },
    { "rows", "int64_t", doc = "number of rows, >= 0" },
    { "g_stride", "int64_t", doc = ">= n" },
    { "u_stride", "int64_t", doc = ">= n" },
    { "h_stride", "int64_t", doc = ">= n" },
  }
end

return {
  leaf = "swiglu",
  doc = "LFM2 SwiGLU gate: h = u * silu(g), silu(g) = g / (1 + exp(-g)); bf16 forms round silu and h (RNE)",
  tiers = { exact = { "neon", "avx2", "avx512" } },
  params = { tile = 16 },
  check = function(p, need)
    need(p.tile == 16, "tile: one canonical vector of 16 lanes per step (exp needs the registers)")
  end,
  forms = {
    { name = "bf16", args = args("const uint16_t *", "uint16_t *"), load = "load_bf16", bf16 = true },
    -- the bf16 form's results stored widened (exactly), for w2's GEMV, which reads f32 x
    { name = "bf16_wide", args = args("const uint16_t *", "float *", true), load = "load_bf16", bf16 = true,
      wide = true },
    { name = "f32", args = args("const float *", "float *"), load = "load_f32", bf16 = false },
  },
  body = function(t, p, form)
    local a = t.arg
    local esize = form.load == "load_f32" and 4 or 2
    t:for_rows(t:iconst(0), a.rows, 1, function(row)
      local grow = t:addr(a.g, t:mul(row, a.g_stride), esize)
      local urow = t:addr(a.u, t:mul(row, a.u_stride), esize)
      local hrow = t:addr(a.h, t:mul(row, a.h_stride), (form.wide or not form.bf16) and 4 or 2)
      t:for_tiles(a.n, p.tile, function(i, tail)
        local lanes = tail and tail(0)
        local g = t[form.load](t, grow, i, 0, lanes)
        local d = t:add(t:vconst(0x3f800000), t:exp(t:neg(g)))
        local s = t:div(g, d)
        local u = t[form.load](t, urow, i, 0, lanes)
        if not form.bf16 then
          t:store_f32(hrow, i, 0, t:canon(t:mul(u, s)), lanes)
        elseif form.wide then
          t:store_f32(hrow, i, 0, t:rne(t:mul(u, t:rne(s))), lanes)
        else
          t:store_bf16(hrow, i, 0, t:rne_store(t:mul(u, t:rne(s))), lanes)
        end
      end)
    end)
  end,
}
