-- gen/vmath.lua: exp, sin and cos over the canonical vector, built from DSL ops only (no libm,
-- no ISA instruction with its own rounding): the same operations, so the same bits, on every
-- ISA. Constants are f32 bit patterns; the polynomial coefficients are near-minimax
-- (Chebyshev) fits from tools/coeffs/vmath_coeffs.py, rounded to f32. The contract model
-- (tests/contract/vmath.c) repeats every step; the accuracy bounds are stated in
-- templates/vmath.lua and checked against float64 by tests/test_vmath.c.
--
-- exp(x):  x clamped to [-104, 89] (NaN kept); k = rint(x * log2e); r = x - k*ln2 in two
--          steps (ln2 = LN2_HI + LN2_LO, LN2_HI with 10 significant bits so k*LN2_HI is
--          exact); e^r = 1 + (r + r^2 * P(r)), P of degree 4; times 2^k as two exact powers of
--          two 2^(k - k/2) * 2^(k/2), so a subnormal result is rounded once and an overflow
--          gives inf.
-- sincos(x): |x| clamped to 2^24; k = the integer nearest x * 2/pi (2/pi as T + T_LO, the
--          product's rounding error recovered by an fma); r = x - k*pi/2 with pi/2 = C1 + C2 +
--          C3 + C4 (k*C1 split exactly by an fma, the rest fused); sin r = r + r^3 * S(r^2),
--          cos r = 1 - r^2/2 + r^4 * C(r^2); the quadrant k mod 4 (in f32, sanitized so that
--          NaN gives the same lanes on every ISA) swaps and negates them; x is first multiplied
--          by 1 + (x - x), NaN for an infinite x.

local M = {}

local function c(t, bits) return t:vconst(bits) end

-- Horner: p = coeffs[1] * x^(n-1) + ... + coeffs[n], with fma
local function horner(t, x, coeffs)
  local p = c(t, coeffs[1])
  for i = 2, #coeffs do p = t:fma(p, x, c(t, coeffs[i])) end
  return p
end

local EXP_P = { 0x3ab688be, 0x3c0905f1, 0x3d2aaa8c, 0x3e2aaa6e, 0x3f000000 }

function M.exp(t, x)
  local xc = t:min(c(t, 0x42b20000), t:max(c(t, 0xc2d00000), x))   -- [-104, 89], NaN kept
  local kf = t:rint(t:mul(xc, c(t, 0x3fb8aa3b)))                    -- log2(e)
  -- k as int32, clamped to [-151, 128] (NaN lanes give some k: y is NaN anyway)
  local k = t:imin_v(t:imax_v(t:f2i(kf), c(t, -151)), c(t, 128))
  local r = t:fma(kf, c(t, 0xbf318000), xc)                         -- - LN2_HI (0.693359375)
  r = t:fma(kf, c(t, 0x395e8083), r)                                -- - LN2_LO
  local q = t:fma(t:mul(r, r), horner(t, r, EXP_P), r)
  local y = t:add(q, c(t, 0x3f800000))
  -- 2^k in two factors
  local k2 = t:isra_v(k, 1)
  local k1 = t:isub_v(k, k2)
  local bias = c(t, 127)
  local s1 = t:ishl_v(t:iadd_v(k1, bias), 23)
  local s2 = t:ishl_v(t:iadd_v(k2, bias), 23)
  return t:mul(t:mul(y, s1), s2)
end

local SIN_S = { 0x3636d476, 0xb95009b3, 0x3c088887, 0xbe2aaaab }
local COS_C = { 0xb4928b1b, 0x37d00acc, 0xbab60b60, 0x3d2aaaab }

-- returns sin(x), cos(x)
-- r = x - k*pi/2: k*C1 = h + l exactly (an fma gives the product's rounding error), x - h is
-- exact (Sterbenz) when r is small, then k*C2, k*C3 and k*C4 fused one by one
local function reduce(t, x, kf)
  local h = t:mul(kf, c(t, 0x3fc90fdb))
  local l = t:fma(kf, c(t, 0x3fc90fdb), t:neg(h))
  local r = t:sub(t:sub(x, h), l)
  r = t:fma(kf, c(t, 0x333bbd2e), r)                                -- -C2
  r = t:fma(kf, c(t, 0x26f72ced), r)                                -- -C3
  return t:fma(kf, c(t, 0x994c5170), r)                             -- -C4
end

-- k - 4*rint(k/4): k mod 4 in {-2, ..., 2}, exact in f32
local function mod4(t, kf)
  return t:sub(kf, t:mul(t:rint(t:mul(kf, c(t, 0x3e800000))), c(t, 0x40800000)))
end

function M.sincos(t, x)
  -- |x| clamped to 2^24 (NaN kept): beyond, one f32 ulp of x is 2 radians or more and no
  -- accuracy is claimed (the result is that of +-2^24); times 1 + (x - x): 1 for a finite x,
  -- NaN for inf (sin(inf) is invalid) and NaN
  local xc = t:mul(t:min(c(t, 0x4b800000), t:max(c(t, 0xcb800000), x)), t:add(t:sub(x, x), c(t, 0x3f800000)))
  -- k = the integer nearest x*2/pi: p = x*T rounded, e its rounding error (an fma), c adds
  -- x*T_LO (T + T_LO = 2/pi to 2^-48); k = rint(p) + rint((p - rint(p)) + c), exact for |x| <= 2^24
  local T = c(t, 0x3f22f983)
  local p = t:mul(xc, T)
  local cc = t:fma(xc, c(t, 0x32dc9c88), t:fma(xc, T, t:neg(p)))
  local kp = t:rint(p)
  local kf = t:add(kp, t:rint(t:add(t:sub(p, kp), cc)))
  local r = reduce(t, xc, kf)
  -- quadrant k mod 4, in {-2, ..., 2}; NaN -> -2 (computed before the polynomials so that k's
  -- registers are free for them)
  local q = t:f2i(t:min(t:max(mod4(t, kf), c(t, 0xc0000000)), c(t, 0x40000000)))
  local z = t:mul(r, r)
  local s = t:fma(t:mul(r, z), horner(t, z, SIN_S), r)
  local co = t:fma(t:mul(z, z), horner(t, z, COS_C), t:fma(z, c(t, 0xbf000000), c(t, 0x3f800000)))
  local swap = t:isub_v(c(t, 0), t:band(q, c(t, 1)))               -- all ones where q is odd
  local sc = t:band(t:bxor(s, co), swap)
  local sin_v, cos_v = t:bxor(s, sc), t:bxor(co, sc)                 -- swapped where q is odd
  local sin_sign = t:ishl_v(t:band(q, c(t, 2)), 30)                 -- q = 2, 3: negative
  local cos_sign = t:ishl_v(t:band(t:iadd_v(q, c(t, 1)), c(t, 2)), 30)  -- q = 1, 2: negative
  return t:bxor(sin_v, sin_sign), t:bxor(cos_v, cos_sign)
end

return M
