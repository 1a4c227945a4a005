-- tests/dsl_ops/opcheck.lua: exercises every IR op the library's leaves do not, so each
-- backend's lowering of it is checked against C on both ISAs (tests/dsl_ops.sh):
--   max (a > b ? a : b), fused fma, f32 vector stores with tails, scalar f32 loads/stores,
--   isub, iconst, cvt_f32, bcast, and a prefetch past the end of the buffer (a hint never faults).
return {
  leaf = "opcheck",
  doc = "DSL conformance: elementwise max and fma, scalar ops",
  tiers = { exact = { "neon", "avx2", "avx512" } },
  params = {},
  check = function() end,
  forms = {
    { name = "ew", args = {
        { "a", "const float *" }, { "b", "const float *" }, { "c", "const float *" },
        { "mx", "float *" }, { "fm", "float *" }, { "sc", "float *" }, { "n", "int64_t" },
        { "s", "float" } } },
  },
  body = function(t, _, _)
    local a = t.arg
    local sv = t:bcast(a.s)
    t:for_tiles(a.n, 16, function(i, tail)
      local lanes = tail and tail(0)
      t:prefetch(a.a, i, 4096, 4)         -- a hint far past the end: must not fault
      local va, vb, vc = t:load_f32(a.a, i, 0, lanes), t:load_f32(a.b, i, 0, lanes), t:load_f32(a.c, i, 0, lanes)
      t:store_f32(a.mx, i, 0, t:max(va, vb), lanes)
      t:store_f32(a.fm, i, 0, t:fma(va, t:mul(vb, sv), vc), lanes)
    end)
    -- sc[0] = a[0] * b[0] + c[0] - in scalar ops; sc[1] = (float)(n - 1)
    local zero = t:iconst(0)
    local p = t:mul(t:load1_f32(a.a, zero, 0), t:load1_f32(a.b, zero, 0))
    t:store1_f32(a.sc, zero, 0, t:add(p, t:load1_f32(a.c, zero, 0)))
    t:store1_f32(a.sc, zero, 1, t:cvt_f32(t:sub(a.n, 1)))
  end,
}
