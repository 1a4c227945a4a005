-- templates/sample.lua: the sampler leaf (issue 9). One form so far:
--
-- argmax: greedy decoding (transformers' generate: next_tokens = torch.argmax(scores, -1)),
-- tok[0] = the index of the maximum of x[0..n-1] (f32 logits), by torch.argmax's rule on CPU
-- (== numpy.argmax's; fixtures/ref/gen_sample.py checks both on every fixture):
--   * if any x[i] is a NaN (any payload, either sign), the lowest index of a NaN (NaN counts as
--     the maximum);
--   * else the lowest index i with x[i] == m, m the maximum, == as floats (so -0 == +0: a tie
--     between +0 and -0 goes to the lower index; -inf is an ordinary value: all -inf gives 0).
-- Order of work (every step exact, so it is the same on every ISA):
--   pass 1: m = the max by the vmax rule (16 lanes, halving tree) over x with NaN never winning,
--           and a NaN flag (the max of 0/1 per element); lanes past n count as -inf and no NaN;
--   pass 2: per element, neq = 0 where x is the wanted element (flag ? x is NaN :
--           bits(x + 0) == bits(m + 0), the +0 turning -0 into +0), else 1; key = i + neq * 2^20
--           (exact in f32 for i < 2^20); tok = the minimum key (16 lanes, halving tree of -key
--           by the vmax rule), converted to int32.
-- n must be in [1, 2^20] (the caller checks; for n = 0 tok is written with an unspecified value,
-- which differs between ISAs: the empty minimum is +inf, converted). Reads x[0..n-1] only
-- (tail lanes are neither loaded nor stored); writes tok[0] only.

local function argmax_args()
  return {
    { "x", "const float *", doc = "n f32 logits" },
    { "tok", "int32_t *",
      doc = "one int32: the index of the maximum (NaN counts as the maximum; ties: the lowest index)" },
    { "n", "int64_t", doc = "logits, in [1, 2^20]" },
  }
end

local NEG_INF, ABS, INF = 0xff800000, 0x7fffffff, 0x7f800000

return {
  leaf = "sample",
  doc = "token sampling: greedy argmax (NaN counts as the maximum, ties to the lowest index)",
  tiers = { exact = { "neon", "avx2", "avx512" } },
  params = { tree = "halving", penalty_log2 = 20 },
  check = function(p, need)
    need(p.tree == "halving", "tree must be 'halving'")
    need(p.penalty_log2 == 20, "penalty_log2: keys i + 2^20 stay exact in f32 for i < 2^20")
  end,
  forms = {
    { name = "argmax", args = argmax_args() },
  },
  body = function(t, p)
    local a = t.arg
    local function c(bits) return t:vconst(bits) end
    -- lane l: the f32 l (0, 1, ..., 15)
    local words = {}
    for l = 0, 15 do
      local bits = 0
      if l > 0 then
        local e = math.floor(math.log(l, 2) + 1e-9)
        bits = (127 + e) * 0x800000 + math.floor((l / 2 ^ e - 1) * 0x800000 + 0.5)
      end
      words[#words + 1] = bits
    end
    local iota_at = t:table("iota", words)
    local function isnan(x)
      return t:imin_v(t:imax_v(t:isub_v(t:band(x, c(ABS)), c(INF)), c(0)), c(1))
    end
    -- lanes l with i + l < n: int 1, else 0 (the tail tile only)
    local function valid(i)
      local idx = t:add(t:bcast(t:cvt_f32(i)), t:load_f32(iota_at, t:iconst(0), 0))
      local left = t:vsub(t:bcast(t:cvt_f32(a.n)), idx)   -- exact: both integers below 2^24
      return t:imin_v(t:imax_v(left, c(0)), c(1))          -- > 0 as bits: positive and nonzero
    end
    -- pass 1: the maximum (NaN never wins) and the NaN flag
    local mx, nf = t:fill(NEG_INF), t:fill(0)
    t:for_tiles(a.n, 16, function(i, tail)
      local lanes = tail and tail(0)
      local x = t:load_f32(a.x, i, 0, lanes)
      local isn
      if tail then
        local ok = valid(i)
        isn = t:band(isnan(x), ok)
        local bad = t:isub_v(ok, c(1))                      -- -1 past n
        x = t:bor(t:band(x, t:bxor(bad, c(0xffffffff))), t:band(bad, c(NEG_INF)))
      else
        isn = isnan(x)
      end
      t:max_acc(mx, x)
      t:max_acc(nf, t:i2f(isn))
    end)
    -- the wanted element's canonical bits: flag ? the quiet NaN 0x7fc00000 : bits(m + 0)
    local fm = t:isub_v(c(0), t:f2i(t:bcast(t:reduce_max(nf, p.tree))))   -- -1 if a NaN was seen
    local want = t:bor(t:band(t:add(t:bcast(t:reduce_max(mx, p.tree)), c(0)), t:bxor(fm, c(0xffffffff))),
                       t:band(fm, c(0x7fc00000)))
    -- pass 2: the lowest index of the wanted element; x canonical: NaN -> 0x7fc00000, -0 -> +0
    local best = t:fill(NEG_INF)
    t:for_tiles(a.n, 16, function(i, tail)
      local lanes = tail and tail(0)
      local x = t:load_f32(a.x, i, 0, lanes)
      local nanm = t:isub_v(c(0), isnan(x))
      local xc = t:bor(t:band(t:add(x, c(0)), t:bxor(nanm, c(0xffffffff))), t:band(nanm, c(0x7fc00000)))
      local d = t:bxor(xc, want)
      local neq = t:imin_v(t:bor(t:band(d, c(ABS)), t:band(t:isra_v(d, 31), c(1))), c(1))
      if tail then neq = t:imax_v(neq, t:isub_v(c(1), valid(i))) end
      local idx = t:add(t:bcast(t:cvt_f32(i)), t:load_f32(iota_at, t:iconst(0), 0))
      local key = t:add(idx, t:i2f(t:ishl_v(neq, p.penalty_log2)))
      t:max_acc(best, t:neg(key))
    end)
    local tokv = t:f2i(t:neg(t:bcast(t:reduce_max(best, p.tree))))
    t:for_tiles(t:iconst(1), 16, function(i, tail)
      if tail then t:store_f32(a.tok, i, 0, tokv, tail(0)) end
    end)
  end,
}
