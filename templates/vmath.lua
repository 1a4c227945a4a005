-- templates/vmath.lua: elementwise exp, sin/cos and the polar conversion of the detokenizer's
-- spectral head, over n f32 values (gen/vmath.lua holds the algorithms, every step an f32 or
-- int32 lane operation: the same bits on every ISA).
--
-- Accuracy (ulp = the f32 spacing at the exact value, 2^-149 below the normal range), checked
-- against float64 libm by tests/test_vmath.c over every f32 input with a stride, and once
-- exhaustively (all 2^32 inputs, 2026-11-30):
--   exp:    |y - e^x| <= 1.5 ulp (exhaustive max 1.081 ulp); inf where e^x rounds past FLT_MAX
--           (x > 88.7228), subnormal results rounded once, 0 below -103.97; exp(NaN) = NaN
--   sincos: for |x| <= 2^24, |s - sin x| and |c - cos x| <= max(2.5 ulp, 2^-23) (exhaustive max:
--           1.77 ulp where the ulp term dominates, 0.71 * 2^-23 absolute otherwise); for larger
--           |x|, where one f32 ulp of x is 2 radians or more, the result is that of +-2^24
--           (no accuracy claim); inf and NaN give NaN; sin(-0) is +0
--   polar:  re = exp(m) * cos(p), im = exp(m) * sin(p): each one more f32 product rounding
-- Every NaN output is the canonical quiet NaN 0x7fc00000 (t:canon at the store).
-- Outputs must not overlap the inputs (the small-register-file path of polar stores cos and sin
-- before it reads the magnitude).

local BOUNDS = "accuracy against float64 libm over every f32 input with a stride (test_vmath bounds; stride 1 " ..
               "is exhaustive)"

local function args(ins, outs)
  local a = {}
  for _, name in ipairs(ins) do a[#a + 1] = { name, "const float *", extent = "n", doc = "n f32 inputs" } end
  for _, name in ipairs(outs) do a[#a + 1] = { name, "float *", extent = "n", doc = "n f32 outputs" } end
  a[#a + 1] = { "n", "int64_t", doc = "elements, >= 0" }
  return a
end

return {
  leaf = "vmath",
  doc = "elementwise exp, sin/cos and polar -> rectangular, libm-free, the same bits on every ISA",
  tiers = { exact = { "neon", "avx2", "avx512" } },
  fixture_gate = "none",
  params = {},
  check = function() end,
  forms = {
    { name = "exp", args = args({ "x" }, { "y" }), fixtures = { exempt = BOUNDS } },
    { name = "sincos", args = args({ "x" }, { "s", "c" }), fixtures = { exempt = BOUNDS } },
    { name = "polar", args = args({ "m", "p" }, { "re", "im" }),
      fixtures = { exempt = "exp(m) * cos(p) and exp(m) * sin(p) from the exp and sincos test_vmath bounds, one f32 " ..
                                "product each; bit-exact against the contract, no accuracy test of its own" } },
  },
  body = function(t, _, form)
    local a = t.arg
    t:for_tiles(a.n, 16, function(i, tail)
      local lanes = tail and tail(0)
      if form.name == "exp" then
        t:store_f32(a.y, i, 0, t:canon(t:exp(t:load_f32(a.x, i, 0, lanes))), lanes)
      elseif form.name == "sincos" then
        local s, c = t:sincos(t:load_f32(a.x, i, 0, lanes))
        t:store_f32(a.s, i, 0, t:canon(s), lanes)
        t:store_f32(a.c, i, 0, t:canon(c), lanes)
      elseif t.tune.hold_operands then
        local mag = t:exp(t:load_f32(a.m, i, 0, lanes))
        local s, c = t:sincos(t:load_f32(a.p, i, 0, lanes))
        t:store_f32(a.re, i, 0, t:canon(t:mul(mag, c)), lanes)
        t:store_f32(a.im, i, 0, t:canon(t:mul(mag, s)), lanes)
      else
        -- a small register file: cos and sin go to the outputs first, the magnitude scales
        -- them there (the same operations, so the same bits; a NaN waits as the canonical one)
        local s, c = t:sincos(t:load_f32(a.p, i, 0, lanes))
        t:store_f32(a.re, i, 0, t:canon(c), lanes)
        t:store_f32(a.im, i, 0, t:canon(s), lanes)
        local mag = t:exp(t:load_f32(a.m, i, 0, lanes))
        t:store_f32(a.re, i, 0, t:canon(t:mul(mag, t:load_f32(a.re, i, 0, lanes))), lanes)
        t:store_f32(a.im, i, 0, t:canon(t:mul(mag, t:load_f32(a.im, i, 0, lanes))), lanes)
      end
    end)
  end,
}
