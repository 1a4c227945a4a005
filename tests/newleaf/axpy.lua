-- templates/axpy.lua: y = fma(x, alpha, y) row by row: the worked example of docs/adding-a-leaf.md,
-- which tests/newleaf/run.sh drops into a scratch copy of the tree (with its contract model and its
-- case builder) to prove that a leaf needs no other file.
--
--   y[r][i] = fma(x[r][i], alpha, y[r][i])          form f32 (one rounding)
--   y[r][i] = RNE(fma(x[r][i], alpha, y[r][i]))     form bf16 (y widened exactly, the sum rounded)
-- A NaN y is the canonical quiet NaN 0x7fc00000 (bf16 0x7fc0: the RNE's NaN; f32: t:canon).
--
-- Rows r = 0..rows-1 of n elements, x row r at x + r*ldx, y row r at y + r*ldy; elements past n
-- are neither loaded nor stored. Elementwise: no reduction order to fix.

local function args(ytype)
  return {
    { "x", "const float *", extent = "span(rows, ldx, n)", doc = "rows x n inputs, row stride ldx" },
    { "y", ytype, inout = true, extent = "span(rows, ldy, n)", doc = "rows x n: read, then overwritten, row stride ldy" },
    { "alpha", "float", doc = "the scale of x" },
    { "n", "int64_t", doc = "row length, >= 0" },
    { "rows", "int64_t", doc = "rows, >= 0" },
    { "ldx", "int64_t", doc = ">= n" },
    { "ldy", "int64_t", doc = ">= n" },
  }
end

local NO_FIXTURES = "the worked example of docs/adding-a-leaf.md: no reference library computes it, and its " ..
                    "arithmetic is one fma per element, equal to the contract model on every target"

return {
  leaf = "axpy",
  doc = "y = fma(x, alpha, y) row by row, f32 or bf16 (RNE) y: the worked example of docs/adding-a-leaf.md",
  tiers = { exact = { "neon", "avx2", "avx512" } },
  params = {},
  check = function() end,
  forms = {
    { name = "f32", args = args("float *"), fixtures = { exempt = NO_FIXTURES } },
    { name = "bf16", args = args("uint16_t *"), bf16 = true, fixtures = { exempt = NO_FIXTURES } },
  },
  body = function(t, _, form)
    local a = t.arg
    local alpha = t:bcast(a.alpha)
    t:for_rows(t:iconst(0), a.rows, 1, function(r)
      local xrow = t:addr(a.x, t:mul(r, a.ldx), 4)
      local yrow = t:addr(a.y, t:mul(r, a.ldy), form.bf16 and 2 or 4)
      t:for_tiles(a.n, 16, function(i, tail)
        local lanes = tail and tail(0)
        local x = t:load_f32(xrow, i, 0, lanes)
        if form.bf16 then
          local y = t:fma(x, alpha, t:load_bf16(yrow, i, 0, lanes))
          t:store_bf16(yrow, i, 0, t:rne_store(y), lanes)
        else
          t:store_f32(yrow, i, 0, t:canon(t:fma(x, alpha, t:load_f32(yrow, i, 0, lanes))), lanes)
        end
      end)
    end)
  end,
}
