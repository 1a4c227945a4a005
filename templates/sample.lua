-- templates/sample.lua: the sampler leaf (issue 9). Two forms:
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
--
-- topk: one stochastic draw in transformers' generate order (TemperatureLogitsWarper,
-- TopKLogitsWarper, softmax, torch.multinomial's role), exact tier (every step below is exact or
-- one IEEE operation in a fixed order, so the token and the state are the same bits on every ISA
-- and in tests/contract/sample.c):
--   1. s_i = x_i / temperature, the IEEE f32 division (torch: scores / temperature). Then a NaN
--      s_i becomes -inf (a NaN logit is a -inf logit: never drawn unless every logit is -inf or
--      NaN) and -0 becomes +0 (s + 0), so the order-preserving key below is a total order that
--      agrees with f32 <.
--   2. kth = the k-th largest s counting duplicates (torch.topk(s, k)[0][-1]), k = top_k, or
--      k = n when top_k <= 0 or top_k >= n (nothing removed); token i is kept iff s_i >= kth
--      (transformers' rule: s < kth is set to -inf, so every tie at kth is kept). Found without
--      sorting by a radix-2 select on the signed key key(s) = bits(s) ^ ((bits(s) >>a 31) &
--      0x7fffffff) (an involution; signed key order == f32 order for non-NaN s): the keys go to
--      the scratch, then 32 counting passes fix the unsigned key ukey = key ^ 0x80000000 bit by
--      bit from the top: P = 0; for b = 31..0: c = P | 2^b, keep c in P iff
--      #{i : ukey_i >= c} >= k (counted as #{key_i < c ^ 0x80000000} <= n - k, f32 counts,
--      exact below 2^24). P ends as the largest v with #{ukey >= v} >= k, which is the k-th
--      largest key. O(32 n), no data-dependent branch, no histogram.
--   3. m = max s (always kept; 16 lanes by the vmax rule, halving tree: exact). Per token, d_i =
--      s_i - m; a NaN d_i (s_i = m = +-inf) becomes +0; e_i = exp(d_i) (gen/vmath.lua's exp,
--      whose exp(-inf) is +0 exactly) when i is kept, else +0. So an ordinary row gives the
--      softmax weights (the max has e = 1, a kept -inf logit e = 0); with +inf logits the +inf
--      tokens share the mass evenly and every finite one gets 0; when every kept s is -inf (all
--      logits -inf or NaN) every kept token gets e = 1 (uniform). The total S >= 1 always.
--   4. u: splitmix64 of the caller's state { seed, counter } (state[0], state[1]):
--      z = seed + (counter + 1) * 0x9e3779b97f4a7c15; z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9;
--      z = (z ^ (z >> 27)) * 0x94d049bb133111eb; z ^= z >> 31 (all mod 2^64, logical shifts);
--      u = f32(z >> 40) * 2^-24, in [0, 1), exact. The leaf writes state[1] = counter + 1 (the
--      commit: the next call draws the next u; seed is never written).
--   5. C_i = ((e_0 + e_1) + ...) + e_i, f32, sequentially in increasing i (a scalar loop over
--      the scratch, in place), S = C_{n-1}; token = the lowest i with u * S < C_i (u * S one f32
--      product), found as #{i : C_i <= u * S} (C is nondecreasing, so those i are a prefix; the
--      first i past it has e_i > 0, so it is kept). If no i qualifies (u * S rounded up to S),
--      the token is the last index with e_i > 0 (a kept token: the reference never draws a
--      zero-probability one).
-- The caller ensures temperature > 0 and finite (a negative one reverses the order, 0 or inf
-- make inf/NaN/0 scores: not checked, the result is still the same bits on every ISA), n in
-- [1, 2^20], and scratch of n floats (4n bytes) that overlaps nothing else. Reads x[0..n-1] and
-- state[0..1]; writes tok[0], state[1] and scratch[0..n-1] (keys, then d, then e, then C).
-- 37 passes over n: the key pass, 32 counting passes, d, e, the running sums, the count.

local function argmax_args()
  return {
    { "x", "const float *", extent = "n", doc = "n f32 logits" },
    { "tok", "int32_t *", extent = "1",
      doc = "one int32: the index of the maximum (NaN counts as the maximum; ties: the lowest index)" },
    { "n", "int64_t", doc = "logits, in [1, 2^20]" },
  }
end

local function topk_args()
  return {
    { "x", "const float *", extent = "n", doc = "n f32 logits" },
    { "tok", "int32_t *", extent = "1", doc = "one int32: the drawn token" },
    { "state", "uint64_t *", inout = true, extent = "2",
      doc = "PRNG state { seed, counter }: this draw uses them and commits counter + 1" },
    { "scratch", "float *", scratch = true, extent = "n", doc = "scratch: n floats (keys, weights, running sums)" },
    { "n", "int64_t", doc = "logits, in [1, 2^20]" },
    { "top_k", "int64_t", doc = "tokens kept (every tie at the k-th value too); <= 0 or >= n: all" },
    { "temperature", "float", doc = "> 0 and finite: s = x / temperature" },
  }
end

local NEG_INF, ABS, INF = 0xff800000, 0x7fffffff, 0x7f800000
local MINUS_ONE, SIGN = 0xbf800000, 0x80000000

-- lane l: the f32 l (0, 1, ..., 15)
local function iota_words()
  local words = {}
  for l = 0, 15 do
    local bits = 0
    if l > 0 then
      local e = math.floor(math.log(l, 2) + 1e-9)
      bits = (127 + e) * 0x800000 + math.floor((l / 2 ^ e - 1) * 0x800000 + 0.5)
    end
    words[#words + 1] = bits
  end
  return words
end

-- The topk form (see the header for the contract and the order of work).
local function topk_body(t, p)
  local a = t.arg
  local function c(bits) return t:vconst(bits) end
  local function vnot(m) return t:bxor(m, c(0xffffffff)) end
  local function sel(m, x, y) return t:bor(t:band(m, x), t:band(vnot(m), y)) end   -- m ? x : y
  local function key(v) return t:bxor(v, t:band(t:isra_v(v, 31), c(ABS))) end      -- its own inverse
  local iota_at = t:table("iota", iota_words())
  local function lane_f32() return t:load_f32(iota_at, t:iconst(0), 0) end
  -- all ones on the lanes l with i + l < n (the tail tile only); non-negative f32 bits compare
  -- as int32
  local function valid(i) return t:igt_v(t:bcast(t:cvt_f32(t:sub(a.n, i))), lane_f32()) end

  -- pass 1: s = x / T (NaN -> -inf, -0 -> +0), its maximum, and its key into the scratch
  local tv = t:bcast(a.temperature)
  local mx = t:fill(NEG_INF)
  t:for_tiles(a.n, 16, function(i, tail)
    local lanes = tail and tail(0)
    local s = t:div(t:load_f32(a.x, i, 0, lanes), tv)
    s = t:add(sel(t:igt_v(t:band(s, c(ABS)), c(INF)), c(NEG_INF), s), c(0))
    if tail then s = sel(valid(i), s, c(NEG_INF)) end
    t:max_acc(mx, s)
    t:store_f32(a.scratch, i, 0, key(s), lanes)
  end)

  local mxs = t:reduce_max(mx, p.tree)                  -- (one register through the passes below)

  -- k: min(top_k, n), or n when top_k <= 0; limit = n - k, exact (integers below 2^21), made in
  -- integer registers where it is compared: f = 1 when top_k <= 0 (top_k < 0, or top_k - 1 < 0:
  -- either alone misses INT64_MIN or 0), k = min(top_k + f * (n - top_k), n) (wrapping arithmetic:
  -- top_k + (n - top_k) is n for any top_k)
  local function limit()
    local f = t:imin(t:add(t:ishr(a.top_k, 63), t:ishr(t:sub(a.top_k, 1), 63)), 1)
    local k = t:imin(t:add(a.top_k, t:mul(f, t:sub(a.n, a.top_k))), a.n)
    return t:bcast(t:cvt_f32(t:sub(a.n, k)))
  end

  -- passes 2..33: the k-th largest unsigned key, bit by bit from the top (one loop: P and the
  -- bit carried from pass to pass, the bit 2^31 .. 2^0)
  local P = t:fill(0)
  local bit = t:fill(SIGN)
  t:for_rows(t:iconst(0), t:iconst(32), 1, function()
    local th = t:bxor(t:bor(P, bit), c(SIGN))            -- the candidate as a signed key
    local below = t:zero()                               -- per lane: keys < the candidate
    t:for_tiles(a.n, 16, function(i, tail)
      local lanes = tail and tail(0)
      local k = t:load_f32(a.scratch, i, 0, lanes)
      t:fma_acc(below, t:i2f(t:igt_v(th, k)), c(MINUS_ONE), lanes)    -- -1 * -1
    end)
    local cnt = t:bcast(t:reduce_add(below, p.tree))
    t:set(P, t:bor(P, t:band(vnot(t:igt_v(cnt, limit())), bit)))   -- counts: non-negative f32 bits
    t:set(bit, t:band(t:isra_v(bit, 1), c(ABS)))         -- the next bit down
  end)
  local kth = t:bxor(P, c(SIGN))                         -- the k-th largest s, as a signed key

  -- pass 34: d = s - m where kept (NaN d -> +0), else -inf
  local m = t:bcast(mxs)
  t:for_tiles(a.n, 16, function(i, tail)
    local lanes = tail and tail(0)
    local k = t:load_f32(a.scratch, i, 0, lanes)
    local d = t:vsub(key(k), m)
    d = t:band(d, vnot(t:igt_v(t:band(d, c(ABS)), c(INF))))
    t:store_f32(a.scratch, i, 0, sel(t:igt_v(kth, k), c(NEG_INF), d), lanes)
  end)

  -- pass 35: e = exp(d) (exp(-inf) = +0 exactly: the clamp to -104 gives 0.97 * 2^-150,
  -- which rounds to +0); the last index with e > 0
  local last = t:fill(MINUS_ONE)
  t:for_tiles(a.n, 16, function(i, tail)
    local lanes = tail and tail(0)
    local e = t:exp(t:load_f32(a.scratch, i, 0, lanes))
    local pos = t:igt_v(e, c(0))
    if tail then pos = t:band(pos, valid(i)) end
    t:max_acc(last, sel(pos, t:add(t:bcast(t:cvt_f32(i)), lane_f32()), c(MINUS_ONE)))
    t:store_f32(a.scratch, i, 0, e, lanes)
  end)

  -- pass 36: C_i, sequentially in increasing i, in place; S = C_{n-1}
  local run = t:sfill(0)
  t:for_rows(t:iconst(0), a.n, 1, function(r)
    t:sadd_acc(run, t:load1_f32(a.scratch, r, 0))
    t:store1_f32(a.scratch, r, 0, run)
  end)

  -- u from splitmix64(seed, counter + 1)
  local zero = t:iconst(0)
  local seed, ctr = t:load1_u64(a.state, zero, 0), t:load1_u64(a.state, zero, 1)
  local ctr1 = t:add(ctr, 1)
  local z = t:add(seed, t:mul(ctr1, t:iconst64("0x9e3779b97f4a7c15")))
  z = t:mul(t:ixor(z, t:ishr(z, 30)), t:iconst64("0xbf58476d1ce4e5b9"))
  z = t:mul(t:ixor(z, t:ishr(z, 27)), t:iconst64("0x94d049bb133111eb"))
  z = t:ixor(z, t:ishr(z, 31))
  local u = t:mul(t:cvt_f32(t:ishr(z, 40)), t:f32(0x33800000))     -- 2^-24
  local thr = t:bcast(t:mul(u, run))

  -- pass 37: token = #{i : C_i <= u * S}, or the last kept index when that is n
  local le = t:zero()
  t:for_tiles(a.n, 16, function(i, tail)
    local lanes = tail and tail(0)
    local cdf = t:load_f32(a.scratch, i, 0, lanes)
    t:fma_acc(le, t:i2f(t:igt_v(cdf, thr)), c(MINUS_ONE), lanes)     -- #{C_i > u * S}
  end)
  local nf2 = t:bcast(t:cvt_f32(a.n))
  local cnt = t:vsub(nf2, t:bcast(t:reduce_add(le, p.tree)))      -- #{C_i <= u * S}, exact
  local tokf = sel(t:igt_v(nf2, cnt), cnt, t:bcast(t:reduce_max(last, p.tree)))
  local tokv = t:f2i(tokf)
  t:for_tiles(t:iconst(1), 16, function(i, tail)
    if tail then t:store_f32(a.tok, i, 0, tokv, tail(0)) end
  end)
  t:store1_u64(a.state, zero, 1, ctr1)                   -- the commit
end

return {
  leaf = "sample",
  doc = "token sampling: greedy argmax (NaN counts as the maximum, ties to the lowest index); " ..
        "topk: temperature, top-k (ties kept), softmax, one splitmix64 draw (counter committed)",
  tiers = { exact = { "neon", "avx2", "avx512" } },
  params = { tree = "halving", penalty_log2 = 20 },
  check = function(p, need)
    need(p.tree == "halving", "tree must be 'halving'")
    need(p.penalty_log2 == 20, "penalty_log2: keys i + 2^20 stay exact in f32 for i < 2^20")
  end,
  forms = {
    { name = "argmax", args = argmax_args() },
    { name = "topk", args = topk_args() },
  },
  body = function(t, p, form)
    if form.name == "topk" then return topk_body(t, p) end
    local a = t.arg
    local function c(bits) return t:vconst(bits) end
    local iota_at = t:table("iota", iota_words())
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
