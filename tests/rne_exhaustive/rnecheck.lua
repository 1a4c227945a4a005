-- tests/rne_exhaustive/rnecheck.lua: the exact tier's rounding to bf16 alone, so that it can be
-- checked over every f32 (tests/rne_exhaustive.sh): y = RNE(x) stored as bf16 (t:rne_store) and
-- z = RNE(x) widened back to f32 (t:rne: the value the leaves go on computing with). Every
-- backend variant of the exact tier lowers them: the integer RNE (neon, avx2, avx512) and
-- BFCVTN/BFCVTN2 with the canonical NaN after them (bfcvt).
return {
  leaf = "rnecheck",
  doc = "the exact tier's RNE, f32 -> bf16 (stored and widened), over any span of f32",
  tiers = { exact = { "neon", "bfcvt", "avx2", "avx512" } },
  params = {},
  check = function() end,
  forms = {
    { name = "all", args = {
        { "x", "const float *", extent = "n" }, { "y", "uint16_t *", extent = "n" },
        { "z", "float *", extent = "n" }, { "n", "int64_t" } } },
  },
  body = function(t)
    local a = t.arg
    t:for_tiles(a.n, 16, function(i, tail)
      local lanes = tail and tail(0)
      local v = t:load_f32(a.x, i, 0, lanes)
      t:store_bf16(a.y, i, 0, t:rne_store(v), lanes)
      t:store_f32(a.z, i, 0, t:rne(v), lanes)
    end)
  end,
}
