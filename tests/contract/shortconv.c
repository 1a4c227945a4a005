/* tests/contract/shortconv.c: contract model of templates/shortconv.lua.
 *
 * Row t = 0..m-1 in order; per channel c: bx = RNE(B*x) (f32 product); p2 = carry[c],
 * p1 = carry[h + c]; acc = w0*p2 (form bf16_bias: fmaf(w0, p2, bias)); acc = fmaf(w1, p1, acc);
 * acc = fmaf(w2, bx, acc); y = RNE(C * RNE(acc)); then carry[c] = p1 (a NaN made canonical),
 * carry[h + c] = bx, before the next row reads them. Tap k of w is w[k*h + c]. The _wide forms
 * store y widened to f32. */
#include <math.h>
#include <stddef.h>

#include "contract.h"

static void shortconv(const uint16_t *in, const uint16_t *w, const uint16_t *bias, uint16_t *carry, uint16_t *y, float *yw,
                      int64_t h, int64_t m, int64_t ld_in, int64_t ldy, fkc_perturb p) {
  for (int64_t t = 0; t < m; t++) {
    const uint16_t *row = in + t * ld_in;
    for (int64_t c = 0; c < h; c++) {
      float b = fkc_bf16_to_f32(row[c]), gate = fkc_bf16_to_f32(row[h + c]), x = fkc_bf16_to_f32(row[2 * h + c]);
      uint16_t bx = fkc_rne_bits(fkc_f32_bits(b * x), p);
      uint16_t p2 = carry[c], p1 = carry[h + c];
      float w0 = fkc_bf16_to_f32(w[c]), w1 = fkc_bf16_to_f32(w[h + c]), w2 = fkc_bf16_to_f32(w[2 * h + c]);
      float acc = bias ? fmaf(w0, fkc_bf16_to_f32(p2), fkc_bf16_to_f32(bias[c])) : w0 * fkc_bf16_to_f32(p2);
      acc = fmaf(w1, fkc_bf16_to_f32(p1), acc);
      acc = fmaf(w2, fkc_bf16_to_f32(bx), acc);
      float conv = fkc_bf16_to_f32(fkc_rne_bits(fkc_f32_bits(acc), p));
      uint16_t out = fkc_rne_bits(fkc_f32_bits(gate * conv), p);
      if (yw) yw[t * ldy + c] = fkc_bf16_to_f32(out); /* the wide forms: the same bits, widened */
      else y[t * ldy + c] = out;
      if (p != FKC_SKIP_COMMIT) {
        carry[c] = fkc_canon_bf16(p1, p);
        carry[h + c] = bx;
      }
    }
  }
}

void fkc_shortconv_bf16(const fk_shortconv_bf16_args *a, fkc_perturb p) {
  shortconv(a->in, a->w, NULL, a->carry, a->y, NULL, a->h, a->m, a->ld_in, a->ldy, p);
}

void fkc_shortconv_bf16_bias(const fk_shortconv_bf16_bias_args *a, fkc_perturb p) {
  shortconv(a->in, a->w, a->bias, a->carry, a->y, NULL, a->h, a->m, a->ld_in, a->ldy, p);
}

void fkc_shortconv_bf16_wide(const fk_shortconv_bf16_wide_args *a, fkc_perturb p) {
  shortconv(a->in, a->w, NULL, a->carry, NULL, a->y, a->h, a->m, a->ld_in, a->ldy, p);
}

void fkc_shortconv_bf16_bias_wide(const fk_shortconv_bf16_bias_wide_args *a, fkc_perturb p) {
  shortconv(a->in, a->w, a->bias, a->carry, NULL, a->y, a->h, a->m, a->ld_in, a->ldy, p);
}
