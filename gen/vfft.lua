-- gen/vfft.lua: the inverse real FFT the templates stamp (templates/irfft.lua, templates/istft.lua),
-- its plan and its constant tables. Every number is computed here, in double, and rounded once
-- to f32 (compat.f32bits); the stamps hold the tables and tests/contract reads the same words
-- from generated/fk_tables.h.
--
-- x = irfft(X, N) for X[0..N/2] (the imaginary parts of X[0] and X[N/2] ignored), with L = N/2:
--   1. Z[k] = E[k] + i*O[k], k < L:  E = X[k] + conj(X[L-k]),  O = (X[k] - conj(X[L-k])) * T[k],
--      T[k] = e^{2 pi i k/N}           (then z = IFFT_L(Z) = N * (x[2m] + i x[2m+1]))
--   2. z = IFFT_L(Z), unnormalized (e^{+2 pi i}), split re/im arrays, Stockham autosort DIF:
--      radix-2 stages with strides s = 1, 2, 4, ... (n = L, L/2, ...), then one radix-5 stage
--      when L = 5 * 2^j. Radix-2 stage (s, n), m = n/2, for f = p*s + q (q < s, p < m):
--        a = in[f], b = in[f + L/2];  out[2ps + q] = a + b;  out[2ps + s + q] = (a - b) * w_p,
--        w_p = e^{2 pi i p/n};  complex product: re = fma(dr, wr, di * (-wi)), im = fma(dr, wi, di * wr)
--      Radix-5 stage (s = L/5): out[q + s*u] = a_0 + sum_{t=1..4} a_t * W^(t*u mod 5), W = e^{2 pi i/5},
--        re: acc = a0r; acc = fma(atr, c, acc); acc = fma(ati, -s, acc) for t = 1..4 in order;
--        im: acc = a0i; acc = fma(atr, s, acc); acc = fma(ati, c, acc)
--   3. x[2m] = z[m].re * f32(1/N), x[2m+1] = z[m].im * f32(1/N)
-- Twiddles of angles at multiples of pi/4 are exact (0, +-1, +-sqrt(1/2) rounded once), the others
-- the libm double cos/sin of 2 pi p/n rounded to f32.

local C = require("compat")

local M = {}

-- cos and sin of 2 pi p / n (doubles)
function M.cis(p, n)
  p = p % n
  if (4 * p) % n == 0 then
    local q = 4 * p / n
    return ({ 1, 0, -1, 0 })[q + 1], ({ 0, 1, 0, -1 })[q + 1]
  end
  if (8 * p) % n == 0 then
    local h, o = math.sqrt(0.5), 8 * p / n          -- odd octant: +-sqrt(1/2) each
    return (o == 1 or o == 7) and h or -h, (o == 1 or o == 3) and h or -h
  end
  local a = 2 * math.pi * p / n
  return math.cos(a), math.sin(a)
end

local function bits(x) return C.f32bits(x) end
local function neg(w) return w >= 0x80000000 and w - 0x80000000 or w + 0x80000000 end

-- The stages of an inverse complex FFT of size L: { r, s, n } in order.
function M.plan(L)
  local stages, s, n = {}, 1, L
  while n % 2 == 0 do
    stages[#stages + 1] = { r = 2, s = s, n = n }
    s, n = s * 2, n / 2
  end
  if n == 5 then
    stages[#stages + 1] = { r = 5, s = s, n = 5 }
  elseif n ~= 1 then
    error("vfft: L = " .. L .. " is not 2^j or 5 * 2^j")
  end
  return stages
end

-- Constant tables of irfft(N) as lists of 32-bit words, by name:
--   pre_r, pre_i, pre_ni: T[k] = e^{2 pi i k/N} (and -Im), k < L
--   sJ_r, sJ_i, sJ_ni:    radix-2 stage J's twiddles: per f (s < 16: w_{f // s}, f < L/2) or per
--                         p (s >= 16: w_p, p < n/2)
--   w5:                   cos and sin of 2 pi j/5, j = 0..4 (c0..c4, s0..s4), and -s0..-s4
--   dcmask:               lane 0 cleared, lanes 1..15 all ones
--   scale:                f32(1/N)
function M.tables(N)
  local L, t = N / 2, {}
  t.pre_r, t.pre_i, t.pre_ni = {}, {}, {}
  for k = 0, L - 1 do
    local c, s = M.cis(k, N)
    t.pre_r[k + 1], t.pre_i[k + 1], t.pre_ni[k + 1] = bits(c), bits(s), neg(bits(s))
  end
  for j, st in ipairs(M.plan(L)) do
    if st.r == 2 then
      local r, i, ni = {}, {}, {}
      local count = st.s < 16 and L / 2 or st.n / 2
      for e = 0, count - 1 do
        local p = st.s < 16 and math.floor(e / st.s) or e
        local c, s = M.cis(p, st.n)
        r[e + 1], i[e + 1], ni[e + 1] = bits(c), bits(s), neg(bits(s))
      end
      t["s" .. j .. "_r"], t["s" .. j .. "_i"], t["s" .. j .. "_ni"] = r, i, ni
    end
  end
  t.w5 = {}
  for jj = 0, 4 do t.w5[jj + 1] = bits(({ M.cis(jj, 5) })[1]) end
  for jj = 0, 4 do t.w5[jj + 6] = bits(({ M.cis(jj, 5) })[2]) end
  for jj = 0, 4 do t.w5[jj + 11] = neg(t.w5[jj + 6]) end
  t.dcmask = { 0 }
  for l = 2, 16 do t.dcmask[l] = 0xffffffff end
  t.scale = { bits(1 / N) }
  return t
end

-- Emits the inverse real FFT of X (xr, xi: N/2 + 1 values each) into the work buffer (4 * L
-- floats: two re/im buffer pairs) and returns the pair holding z (step 3 is the caller's).
-- `tab(name)` gives the address of one of M.tables(N)'s tables in the stamp.
function M.emit(t, N, xr, xi, work, tab)
  local L = N / 2
  local bufs = { { t:addr(work, 0, 4), t:addr(work, L, 4) }, { t:addr(work, 2 * L, 4), t:addr(work, 3 * L, 4) } }
  -- 1. Z[k] = E + i*O into buffer 1; the vector of k = 0..15 first (its lane 0 drops the
  -- imaginary parts of X[0] and X[L]), then the others
  local function pre(k, masked)
    local kr = t:sub(t:iconst(L - 15), k)                 -- X[L-k] for lanes k..k+15, reversed
    local ar, ai = t:load_f32(xr, k, 0), t:load_f32(xi, k, 0)
    local br, bi = t:rev(t:load_f32(xr, kr, 0)), t:neg(t:rev(t:load_f32(xi, kr, 0)))   -- conj
    if masked then
      local m = t:load_f32(tab("dcmask"), t:iconst(0), 0)
      ai, bi = t:band(ai, m), t:band(bi, m)
    end
    local er, ei = t:add(ar, br), t:add(ai, bi)
    local dr, di = t:sub(ar, br), t:sub(ai, bi)
    local tr, ti = t:load_f32(tab("pre_r"), k, 0), t:load_f32(tab("pre_i"), k, 0)
    local or_ = t:fma(dr, tr, t:mul(di, t:load_f32(tab("pre_ni"), k, 0)))
    local oi = t:fma(dr, ti, t:mul(di, tr))
    t:store_f32(bufs[1][1], k, 0, t:sub(er, oi))
    t:store_f32(bufs[1][2], k, 0, t:add(ei, or_))
  end
  pre(t:iconst(0), true)
  t:for_tiles(t:iconst(L), 16, function(k) pre(k, false) end, t:iconst(16), { whole = true })
  -- 2. the stages, ping-pong between the buffers
  local cur = 1
  for j, st in ipairs(M.plan(L)) do
    local src, dst = bufs[cur], bufs[3 - cur]
    if st.r == 2 and st.s < 16 then
      t:for_tiles(t:iconst(L / 2), 16, function(f)
        local ar, br = t:load_f32(src[1], f, 0), t:load_f32(src[1], f, L / 2)
        local y0r, dr = t:add(ar, br), t:sub(ar, br)
        local ai, bi = t:load_f32(src[2], f, 0), t:load_f32(src[2], f, L / 2)
        local y0i, di = t:add(ai, bi), t:sub(ai, bi)
        local wr = t:load_f32(tab("s" .. j .. "_r"), f, 0)
        local y1r = t:fma(dr, wr, t:mul(di, t:load_f32(tab("s" .. j .. "_ni"), f, 0)))
        local y1i = t:fma(dr, t:load_f32(tab("s" .. j .. "_i"), f, 0), t:mul(di, wr))
        local o = t:add(f, f)                              -- outputs 2f .. 2f + 31
        t:store_f32(dst[1], o, 0, t:zip_lo(y0r, y1r, st.s))
        t:store_f32(dst[1], o, 16, t:zip_hi(y0r, y1r, st.s))
        t:store_f32(dst[2], o, 0, t:zip_lo(y0i, y1i, st.s))
        t:store_f32(dst[2], o, 16, t:zip_hi(y0i, y1i, st.s))
      end, nil, { whole = true })
    elseif st.r == 2 then
      t:for_rows(t:iconst(0), t:iconst(st.n / 2), 1, function(p)
        local ib, ob = t:mul(p, st.s), t:mul(p, 2 * st.s)
        local sr, si = t:addr(src[1], ib, 4), t:addr(src[2], ib, 4)
        local dr0, di0 = t:addr(dst[1], ob, 4), t:addr(dst[2], ob, 4)
        t:for_tiles(t:iconst(st.s), 16, function(q)
          local ar, br = t:load_f32(sr, q, 0), t:load_f32(sr, q, L / 2)
          t:store_f32(dr0, q, 0, t:add(ar, br))
          local dr = t:sub(ar, br)
          local ai, bi = t:load_f32(si, q, 0), t:load_f32(si, q, L / 2)
          t:store_f32(di0, q, 0, t:add(ai, bi))
          local di = t:sub(ai, bi)
          local wr = t:load_bcast_f32(tab("s" .. j .. "_r"), p, 0)
          t:store_f32(dr0, q, st.s, t:fma(dr, wr, t:mul(di, t:load_bcast_f32(tab("s" .. j .. "_ni"), p, 0))))
          t:store_f32(di0, q, st.s, t:fma(dr, t:load_bcast_f32(tab("s" .. j .. "_i"), p, 0), t:mul(di, wr)))
        end, nil, { whole = true })
      end)
    else
      -- radix 5, m = 1: out[q + s*u] = sum_t a_t * W^(t*u)
      local s = st.s
      t:for_tiles(t:iconst(s), 16, function(q)
        for u = 0, 4 do
          local accr, acci = t:load_f32(src[1], q, 0), t:load_f32(src[2], q, 0)
          for tt = 1, 4 do
            local jj = (tt * u) % 5
            local c = t:load_bcast_f32(tab("w5"), t:iconst(0), jj)
            local atr, ati = t:load_f32(src[1], q, s * tt), t:load_f32(src[2], q, s * tt)
            accr = t:fma(ati, t:load_bcast_f32(tab("w5"), t:iconst(0), 10 + jj), t:fma(atr, c, accr))
            acci = t:fma(ati, c, t:fma(atr, t:load_bcast_f32(tab("w5"), t:iconst(0), 5 + jj), acci))
          end
          t:store_f32(dst[1], q, s * u, accr)
          t:store_f32(dst[2], q, s * u, acci)
        end
      end, nil, { whole = true })
    end
    cur = 3 - cur
  end
  return bufs[cur][1], bufs[cur][2]
end

return M
