-- templates/rmsnorm.lua: LFM2 RMSNorm (transformers' Lfm2RMSNorm), row by row.
--
--   h    = x                      (forms f32, bf16: x widened exactly)
--   h    = RNE(x + r); r <- h     (forms add_f32, add_bf16: the residual stream is committed)
--   ss   = sum h^2                (2 chains x 16 canonical lanes, fma, halving tree)
--   inv  = 1 / sqrt(ss / n + eps) (correctly rounded divide and sqrt, no estimates)
--   y    = RNE(w * RNE(h * inv))  (LFM2 returns weight * hidden.to(bf16); the once forms: end of file)
--
-- Lane l of chain c accumulates the elements i with i mod 32 == 16c + l, in increasing i;
-- the chains are added (chain 0 + chain 1) lane by lane, then the halving tree sums the lanes.
-- Lanes past n contribute nothing (the accumulator lane is left as it is).

local function args(xtype, add, wide)
  local a = {
    { "x", xtype, extent = "span(rows, x_stride, n)", doc = "rows x n input, row stride x_stride elements" },
    { "w", "const uint16_t *", extent = "n", doc = "n bf16 weights" },
    { "y", wide and "float *" or "uint16_t *", extent = "span(rows, y_stride, n)", doc = wide and
      "rows x n outputs: the bf16 results widened to f32 (a GEMV's x), row stride y_stride elements"
      or "rows x n bf16 output, row stride y_stride elements" },
  }
  if add then
    a[#a + 1] = { "r", "uint16_t *", inout = true, extent = "span(rows, r_stride, n)",
                  doc = "rows x n bf16 residual stream, row stride r_stride: read, then overwritten by RNE(x + r)" }
  end
  a[#a + 1] = { "n", "int64_t", doc = "row length, >= 1" }
  a[#a + 1] = { "rows", "int64_t", doc = "number of rows, >= 0" }
  a[#a + 1] = { "x_stride", "int64_t" }
  a[#a + 1] = { "y_stride", "int64_t" }
  if add then a[#a + 1] = { "r_stride", "int64_t" } end
  a[#a + 1] = { "eps", "float" }
  return a
end

local template = {
  leaf = "rmsnorm",
  doc = "RMSNorm, optional fused residual add: LFM2 y = RNE(w * RNE(h*inv)), the once forms y = RNE(w * (h*inv))",
  tiers = { exact = { "neon", "avx2", "avx512" } },
  params = { chains = 2, tree = "halving" },
  check = function(p, need)
    need(p.chains == 1 or p.chains == 2 or p.chains == 4, "chains must be 1, 2 or 4")
    need(p.tree == "halving", "tree must be 'halving'")
  end,
  forms = {
    { name = "f32",      args = args("const float *", false),    xload = "load_f32",  add = false },
    { name = "bf16",     args = args("const uint16_t *", false), xload = "load_bf16", add = false },
    { name = "add_f32",  args = args("const float *", true),     xload = "load_f32",  add = true },
    { name = "add_bf16", args = args("const uint16_t *", true),  xload = "load_bf16", add = true },
    -- the bf16 form's results stored widened (exactly), for a GEMV that reads f32 x
    { name = "bf16_wide", args = args("const uint16_t *", false, true), xload = "load_bf16", add = false, wide = true,
      fixtures = { exempt = "the bf16 form's results widened: rmsnorm::wide_is_the_bf16_form_widened, every target" } },
  },
  body = function(t, p, form)
    local a = t.arg
    local tile = 16 * p.chains
    t:for_rows(t:iconst(0), a.rows, 1, function(row)
      local xrow = t:addr(a.x, t:mul(row, a.x_stride), form.xload == "load_f32" and 4 or 2)
      local yrow = t:addr(a.y, t:mul(row, a.y_stride), form.wide and 4 or 2)
      local hrow = form.add and t:addr(a.r, t:mul(row, a.r_stride), 2)
      -- pass 1: h (committed to r in the add forms) and its sum of squares
      local acc = {}
      for c = 1, p.chains do acc[c] = t:zero() end
      t:for_tiles(a.n, tile, function(i, tail)
        for c = 1, p.chains do
          local lanes = tail and tail(16 * (c - 1))
          local h = t[form.xload](t, xrow, i, 16 * (c - 1), lanes)
          if form.add then
            h = t:rne(t:add(h, t:load_bf16(hrow, i, 16 * (c - 1), lanes)))
            t:store_bf16(hrow, i, 16 * (c - 1), h, lanes)
          end
          t:fma_acc(acc[c], h, h, lanes)
        end
      end)
      local v = acc[1]
      for c = 2, p.chains do v = t:add(v, acc[c]) end
      local ss = t:reduce_add(v, p.tree)
      local mean = t:div(ss, t:cvt_f32(a.n))
      local inv = t:div(t:f32("0x3f800000"), t:sqrt(t:add(mean, a.eps)))
      local invv = t:bcast(inv)
      -- pass 2: y = RNE(w * RNE(h * inv)); the add forms re-read h from r
      t:for_tiles(a.n, 16, function(i, tail)
        local lanes = tail and tail(0)
        local h = form.add and t:load_bf16(hrow, i, 0, lanes) or t[form.xload](t, xrow, i, 0, lanes)
        local y1 = t:mul(h, invv); if not form.once then y1 = t:rne(y1) end   -- once: no bf16 rounding here
        local y = t:rne(t:mul(t:load_bf16(a.w, i, 0, lanes), y1))
        if form.wide then t:store_f32(yrow, i, 0, y, lanes) else t:store_bf16(yrow, i, 0, y, lanes) end
      end)
    end)
  end,
}

-- The once forms (bf16_wide_once, add_f32_wide_once): liquid-audio 1.3.0's RMSNorm
-- (liquid_audio/model/transformer.py, class RMSNorm: out = x.float() * rsqrt(mean(x.float()^2) +
-- eps); return (out * self.weight).type_as(x), the bf16 weight promoted to f32), used by the
-- LFM2.5-Audio Depthformer. h and inv as above (the same sum order, correctly rounded divide and
-- sqrt), then
--   y = RNE(w * (h * inv))        two f32 products, ONE rounding to bf16 (the LFM2 forms round twice)
-- stored widened to f32 (<< 16) for the GEMV that consumes it. bf16_wide_once: x bf16 (widened);
-- add_f32_wide_once: x f32, r bf16 inout, h = RNE(x + r), r <- h (as add_f32: the Depthformer's
-- input, x = depth_linear's f32 slice for one codebook, r = the feedback embedding or zeros).
-- They are declared here, after the body, so that the lines of the other forms' ops (each stamped
-- instruction names its template line) stay where they were.
template.forms[#template.forms + 1] = { name = "bf16_wide_once", args = args("const uint16_t *", false, true),
                                        xload = "load_bf16", add = false, wide = true, once = true }
template.forms[#template.forms + 1] = { name = "add_f32_wide_once", args = args("const float *", true, true),
                                        xload = "load_f32", add = true, wide = true, once = true }

return template
