"""A numpy float32 port of ggml's quantize_row_q4_K_ref (llama.cpp 0c1e57098, ggml/src/ggml-quants.c:
make_qkx2_quants per 32 weights with weights sqrt(mean x^2) + |x|, 21 candidate scales, then the 6-bit
scales and minimums under binary16 d and dmin, then the quants), one IEEE f32 operation at a time in
ggml's order, no contraction: the seed of q4k's quantizer and its fixtures (issue 20's next step).

  python3 q4k_port.py IN.f32 OUT.bin     (IN: float32 values, a multiple of 256; OUT: 144-byte blocks)

Checked (q4k_check.txt) against ggml's own C (q4k_ggml.c, linked with the peer build's
libggml-base.a, whose ggml-quants.c is compiled for x86-64 without -march: no FMA, so no contraction
either): the same bytes on 74 super-blocks of 12 kinds; and gguf.quants.dequantize of them equals
RN(d * sc * u - dmin * m) computed as an exact product then one f32 subtraction."""
import struct
import sys

import numpy as np
f32 = np.float32
def nearest_int(v):
    val = np.float32(v + f32(12582912.0))
    i = int(np.array([val], dtype=np.float32).view(np.int32)[0])
    return (i & 0x007fffff) - 0x00400000
def make_qkx2(x, w, nmax=15, rmin=f32(-1.0), rdelta=f32(0.1), nstep=20):
    n = len(x)
    mn = x[0]; mx = x[0]; sum_w = w[0]; sum_x = f32(sum_w * x[0])
    for i in range(1, n):
        if x[i] < mn: mn = x[i]
        if x[i] > mx: mx = x[i]
        sum_w = f32(sum_w + w[i]); sum_x = f32(sum_x + f32(w[i] * x[i]))
    if mn > 0: mn = f32(0)
    if mx == mn:
        return f32(0), -mn, [0]*n
    iscale = f32(f32(nmax) / f32(mx - mn)); scale = f32(f32(1) / iscale)
    L = [0]*n; best = f32(0)
    for i in range(n):
        l = nearest_int(f32(iscale * f32(x[i] - mn))); L[i] = max(0, min(nmax, l))
        diff = f32(f32(f32(scale * f32(L[i])) + mn) - x[i]); diff = f32(diff * diff)
        best = f32(best + f32(w[i] * diff))
    for s in range(nstep + 1):
        iscale = f32(f32(f32(rmin + f32(rdelta * f32(s))) + f32(nmax)) / f32(mx - mn))
        sl = f32(0); sl2 = f32(0); sxl = f32(0); La = [0]*n
        for i in range(n):
            l = nearest_int(f32(iscale * f32(x[i] - mn))); l = max(0, min(nmax, l)); La[i] = l
            wl = f32(w[i] * f32(l))
            sl = f32(sl + wl); sl2 = f32(sl2 + f32(wl * f32(l))); sxl = f32(sxl + f32(wl * x[i]))
        D = f32(f32(sum_w * sl2) - f32(sl * sl))
        if D > 0:
            ts = f32(f32(f32(sum_w * sxl) - f32(sum_x * sl)) / D)
            tm = f32(f32(f32(sl2 * sum_x) - f32(sl * sxl)) / D)
            if tm > 0:
                tm = f32(0); ts = f32(sxl / sl2)
            cur = f32(0)
            for i in range(n):
                diff = f32(f32(f32(ts * f32(La[i])) + tm) - x[i]); diff = f32(diff * diff)
                cur = f32(cur + f32(w[i] * diff))
            if cur < best:
                L = La; best = cur; scale = ts; mn = tm
    return scale, f32(-mn), L
def f16bits(v):
    return struct.unpack('<H', np.array([v], dtype=np.float16).tobytes())[0]
def f16val(b):
    return f32(np.frombuffer(struct.pack('<H', b), dtype=np.float16)[0])
def quantize_q4k(x):
    """x: 256 float32 -> 144 bytes"""
    scales = [f32(0)]*8; mins = [f32(0)]*8; L = [0]*256
    max_scale = f32(0); max_min = f32(0)
    for j in range(8):
        xb = x[32*j:32*j+32]
        s2 = f32(0)
        for l in range(32): s2 = f32(s2 + f32(xb[l] * xb[l]))
        av = f32(np.sqrt(f32(s2 / f32(32))))
        w = [f32(av + f32(abs(xb[l]))) for l in range(32)]
        sc, m, Lb = make_qkx2(xb, w)
        scales[j] = sc; mins[j] = m; L[32*j:32*j+32] = Lb
        if sc > max_scale: max_scale = sc
        if m > max_min: max_min = m
    inv_s = f32(f32(63) / max_scale) if max_scale > 0 else f32(0)
    inv_m = f32(f32(63) / max_min) if max_min > 0 else f32(0)
    sb = [0]*12
    for j in range(8):
        ls = min(63, nearest_int(f32(inv_s * scales[j])) & 0xff); lm = min(63, nearest_int(f32(inv_m * mins[j])) & 0xff)
        if j < 4:
            sb[j] = ls; sb[j+4] = lm
        else:
            sb[j+4] = (ls & 0xF) | ((lm & 0xF) << 4)
            sb[j-4] |= ((ls >> 4) << 6)
            sb[j] |= ((lm >> 4) << 6)
    d = f16bits(f32(max_scale / f32(63))); dmin = f16bits(f32(max_min / f32(63)))
    for j in range(8):
        if j < 4: sc = sb[j] & 63; m = sb[j+4] & 63
        else: sc = (sb[j+4] & 0xF) | ((sb[j-4] >> 6) << 4); m = (sb[j+4] >> 4) | ((sb[j] >> 6) << 4)
        dd = f32(f16val(d) * f32(sc))
        if not dd: continue
        dm = f32(f16val(dmin) * f32(m))
        for ii in range(32):
            l = nearest_int(f32(f32(x[32*j+ii] + dm) / dd)); L[32*j+ii] = max(0, min(15, l))
    qs = []
    for j in range(0, 256, 64):
        for l in range(32): qs.append(L[j+l] | (L[j+l+32] << 4))
    return struct.pack('<HH', d, dmin) + bytes(sb) + bytes(qs)
if __name__ == '__main__':
    data = np.fromfile(sys.argv[1], dtype=np.float32)
    out = b''.join(quantize_q4k(data[i:i+256]) for i in range(0, len(data), 256))
    open(sys.argv[2], 'wb').write(out)
