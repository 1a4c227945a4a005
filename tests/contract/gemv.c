/* tests/contract/gemv.c: contract model of templates/gemv.lua (params chains=2, rows=2).
 *
 * Order, per row n: lane l (0..15) of chain c (0..1) starts at +0.0f and accumulates, by
 * fmaf(w, x, acc), the products of the k with k mod 32 == 16c + l, in increasing k; lanes
 * past K are left as they are. Then v[l] = chain0[l] + chain1[l], the halving tree sums v,
 * the residual (add form) is added, and the integer RNE rounds to bf16. The row group a row
 * runs in does not enter this order. */
#include <math.h>

#include "contract.h"

enum { CHAINS = 2, LANES = 16, TILE = CHAINS * LANES };

static float row_sum(const uint16_t *w, const float *x, int64_t k, fkc_perturb p) {
  float acc[CHAINS][LANES] = { { 0 } };
  for (int64_t i = 0; i < k; i++) {
    int slot = (int)(i % TILE);
    int c = slot / LANES, l = slot % LANES;
    if (p == FKC_LANES_INTERLEAVED) c = slot % CHAINS, l = slot / CHAINS;
    acc[c][l] = fmaf(fkc_bf16_to_f32(w[i]), x[i], acc[c][l]);
  }
  float v[LANES];
  for (int l = 0; l < LANES; l++) v[l] = acc[0][l] + acc[1][l];
  return fkc_reduce16(v, p);
}

void fkc_gemv_bf16_rne(const fk_gemv_bf16_rne_args *a, fkc_perturb p) {
  for (int64_t n = a->row_begin; n < a->row_end; n++) {
    float s = row_sum(a->w + n * a->ldw, a->x, a->k, p);
    a->y[n] = fkc_rne_bits(fkc_f32_bits(s), p);
  }
}

void fkc_gemv_bf16_rne_add(const fk_gemv_bf16_rne_add_args *a, fkc_perturb p) {
  for (int64_t n = a->row_begin; n < a->row_end; n++) {
    float s = row_sum(a->w + n * a->ldw, a->x, a->k, p);
    s = s + fkc_bf16_to_f32(a->r[n]);
    a->y[n] = fkc_rne_bits(fkc_f32_bits(s), p);
  }
}
