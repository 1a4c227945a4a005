#!/usr/bin/env python3
"""tools/coeffs/vmath_coeffs.py - where gen/vmath.lua's polynomial coefficients come from.

Offline (never run by the build or the tests): near-minimax Chebyshev fits with mpmath, rounded
to f32, printed as the bit patterns gen/vmath.lua holds.

    /opt/fkref/bin/python tools/coeffs/vmath_coeffs.py     (mpmath 1.3.0, numpy 2.4.6)

  exp:  e^r = 1 + r + r^2 * P(r) on |r| <= ln2/2 (1.001 margin), P of degree 4
  sin:  sin r = r + r^3 * S(r^2) on |r| <= pi/4 (1.01 margin), S of degree 3 in r^2
  cos:  cos r = 1 - r^2/2 + r^4 * C(r^2), C of degree 3 in r^2
and the splits of ln2 (LN2_HI with 10 significant bits) and pi/2 (C1..C4, each the f32
rounding of what the previous ones leave)."""
import struct

import mpmath as mp
import numpy as np

mp.mp.dps = 60


def bits(x):
    return "0x%08x" % struct.unpack("<I", struct.pack("<f", float(np.float32(float(x)))))[0]


def fit(name, g, lo, hi, degree):
    poly = mp.chebyfit(g, [lo, hi], degree + 1)
    print(name, "(highest degree first):", ", ".join(bits(c) for c in poly))


L = mp.log(2) / 2 * mp.mpf("1.001")
fit("exp P", lambda r: (mp.exp(r) - 1 - r) / r**2 if r != 0 else mp.mpf(1) / 2, -L, L, 4)
R2 = (mp.pi / 4 * mp.mpf("1.01")) ** 2
fit("sin S", lambda z: (mp.sin(mp.sqrt(z)) - mp.sqrt(z)) / (z * mp.sqrt(z)), mp.mpf("1e-30"), R2, 3)
fit("cos C", lambda z: (mp.cos(mp.sqrt(z)) - 1 + z / 2) / (z * z), mp.mpf("1e-30"), R2, 3)
ln2_hi = mp.mpf("0.693359375")
print("LN2_HI", bits(ln2_hi), "LN2_LO", bits(mp.log(2) - ln2_hi))
rest, parts = mp.pi / 2, []
for _ in range(4):
    parts.append(np.float32(float(rest)))
    rest -= mp.mpf(float(parts[-1]))
print("pi/2 = C1 + C2 + C3 + C4:", ", ".join(bits(p) for p in parts))
print("log2(e)", bits(1 / mp.log(2)), "2/pi", bits(2 / mp.pi))
