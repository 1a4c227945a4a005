-- templates/gemv.lua: BF16 GEMV with round-to-nearest-even output.
--
--   y[n] = RNE(sum_k W[n, k] * x[k])            form bf16_rne
--   y[n] = RNE(sum_k W[n, k] * x[k] + r[n])     form bf16_rne_add (y may equal r)
--
-- for rows n in [row_begin, row_end): W bf16 row-major with row stride ldw elements, x f32,
-- f32 accumulation with fma. Lane l of chain c accumulates the k with k mod (16 * chains) ==
-- 16c + l, in increasing k; chains are added in order (c0 + c1 + ...), then the halving tree
-- sums the 16 lanes; the residual is added last. Lanes past K contribute nothing. Rows run in
-- groups of `rows` sharing each x load; a row's sum does not depend on its group.

local function args(add)
  local a = {
    { "w", "const uint16_t *", doc = "weights, row n at w + n * ldw" },
    { "ldw", "int64_t", doc = "row stride of w in elements, >= k" },
    { "x", "const float *", doc = "k activations" },
    { "y", "uint16_t *", doc = "outputs, indexed by absolute row n" },
  }
  if add then a[#a + 1] = { "r", "const uint16_t *", doc = "residual, indexed by absolute row n" } end
  a[#a + 1] = { "k", "int64_t", doc = "reduction length, >= 1" }
  a[#a + 1] = { "row_begin", "int64_t", doc = "first row" }
  a[#a + 1] = { "row_end", "int64_t", doc = "one past the last row" }
  return a
end

return {
  leaf = "gemv",
  doc = "BF16 GEMV, f32 accumulation in canonical order, bf16 RNE output (optionally + residual)",
  tier = "exact",
  variants = { "neon", "avx2", "avx512" },
  params = { chains = 2, rows = 2, tree = "halving" },
  check = function(p, need)
    need(p.chains == 1 or p.chains == 2 or p.chains == 4, "chains must be 1, 2 or 4")
    need(p.rows >= 1 and p.rows <= 4, "rows must be 1..4")
    need(p.tree == "halving", "tree must be 'halving'")
  end,
  forms = {
    { name = "bf16_rne",     args = args(false), add = false },
    { name = "bf16_rne_add", args = args(true),  add = true },
  },
  body = function(t, p, form)
    local a = t.arg
    t:for_rows(a.row_begin, a.row_end, p.rows, function(n, nrows)
      local wrow, acc = {}, {}
      for r = 1, nrows do
        wrow[r] = t:addr(a.w, t:mul(t:add(n, r - 1), a.ldw), 2)
        acc[r] = {}
        for c = 1, p.chains do acc[r][c] = t:zero() end
      end
      t:for_tiles(a.k, 16 * p.chains, function(i, tail)
        for c = 1, p.chains do
          local lanes = tail and tail(16 * (c - 1))
          local xv = t:load_f32(a.x, i, 16 * (c - 1), lanes)
          for r = 1, nrows do
            t:fma_acc(acc[r][c], t:load_bf16(wrow[r], i, 16 * (c - 1), lanes), xv, lanes)
          end
        end
      end)
      for r = 1, nrows do
        local v = acc[r][1]
        for c = 2, p.chains do v = t:add(v, acc[r][c]) end
        local s = t:reduce_add(v, p.tree)
        if form.add then s = t:add(s, t:load1_bf16(a.r, n, r - 1)) end
        t:store1_bf16(a.y, n, r - 1, t:rne(s))
      end
    end)
  end,
}
