/* tests/contract/qkprep.c: contract model of templates/qkprep.lua.
 *
 * Row j (0..m-1) lives at slot s = slot + j, minus ring once it reaches ring (ring = 0: linear)
 * and takes table row pos + j. Per head g, at x + g*ld_head + s*ld_row, h = the hd values:
 * ss = sum h^2 with lane l of chain c (0, 1) summing fmaf(h, h, acc) over the i with
 * i mod 32 == 16c + l in increasing i from +0, v[l] = chain0[l] + chain1[l], halving tree;
 * inv = 1.0f / sqrtf(ss / (float)hd + eps);
 * neox: qn = RNE(w * RNE(h * inv)); cis: qn = RNE(w * (h * inv));
 * for i < hd/2, c = cos[(pos + j)*(hd/2) + i], s = sin[...]:
 * neox pairs (i, i + hd/2), cis pairs (2i, 2i + 1), a and b the pair's qn values:
 * first = RNE(fmaf(a, c, b*(-s))), second = RNE(fmaf(b, c, a*s)) (the table value negated, so
 * a NaN b keeps its sign: see the template). */
#include <math.h>

#include "contract.h"

enum { LANES = 16, CHAINS = 2, TILE = LANES * CHAINS };

static void qkprep(uint16_t *x, const uint16_t *w, const float *cos_, const float *sin_, int64_t heads,
                   int64_t m, int64_t ld_head, int64_t ld_row, int64_t pos, int64_t slot, int64_t ring, float eps,
                   int hd, int cis, fkc_perturb p) {
  const int half = hd / 2;
  if (p == FKC_CURSOR_OFF_BY_ONE) pos += 1, slot += 1;
  for (int64_t j = 0; j < m; j++) {
    int64_t s = slot + j;
    if (s >= ring) s -= ring;
    const float *ct = cos_ + (pos + j) * half, *st = sin_ + (pos + j) * half;
    for (int64_t g = 0; g < heads; g++) {
      uint16_t *hp = x + g * ld_head + s * ld_row;
      float h[64], qn[64], acc[CHAINS][LANES] = { { 0 } };
      for (int i = 0; i < hd; i++) {
        h[i] = fkc_bf16_to_f32(hp[i]);
        int sl = i % TILE, c = sl / LANES, l = sl % LANES;
        if (p == FKC_LANES_PERMUTED) c = sl % CHAINS, l = sl / CHAINS;
        acc[c][l] = fmaf(h[i], h[i], acc[c][l]);
      }
      float v[LANES];
      for (int l = 0; l < LANES; l++) v[l] = acc[0][l] + acc[1][l];
      float inv = 1.0f / sqrtf(fkc_reduce16(v, p) / (float)hd + eps);
      for (int i = 0; i < hd; i++) {
        float wi = fkc_bf16_to_f32(w[i]);
        float n1 = cis ? h[i] * inv : fkc_bf16_to_f32(fkc_rne_bits(fkc_f32_bits(h[i] * inv), p));
        qn[i] = fkc_bf16_to_f32(fkc_rne_bits(fkc_f32_bits(wi * n1), p));
      }
      for (int i = 0; i < half; i++) {
        int ia = cis ? 2 * i : i, ib = cis ? 2 * i + 1 : i + half;
        /* the negated table value goes through a volatile: a compiler may turn b * -s into
         * -(b * s) (AArch64 FNMUL), which flips the sign of a NaN b */
        volatile float neg_sn = -st[i];
        float a = qn[ia], b = qn[ib], c = ct[i], sn = st[i], nsn = neg_sn;
        float first = fmaf(a, c, b * nsn), second = fmaf(b, c, a * sn);
        if (p == FKC_ROTATE_SWAPPED) first = fmaf(a, c, b * sn), second = fmaf(b, c, a * nsn);
        hp[ia] = fkc_rne_bits(fkc_f32_bits(first), p);
        hp[ib] = fkc_rne_bits(fkc_f32_bits(second), p);
      }
    }
  }
}

#define FKC_QKPREP(form, hd, cis)                                                                          \
  void fkc_qkprep_##form(const fk_qkprep_##form##_args *a, fkc_perturb p) {                                \
    qkprep(a->x, a->w, a->cos, a->sin, a->heads, a->m, a->ld_head, a->ld_row, a->pos, a->slot, a->ring,     \
           a->eps, hd, cis, p);                                                                            \
  }
FKC_QKPREP(neox64, 64, 0)
FKC_QKPREP(neox32, 32, 0)
FKC_QKPREP(cis64, 64, 1)
FKC_QKPREP(cis32, 32, 1)
