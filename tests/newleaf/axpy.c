/* tests/contract/axpy.c: contract model of templates/axpy.lua (the worked example of
 * docs/adding-a-leaf.md): y = fma(x, alpha, y) per element, bf16 y widened exactly and the sum
 * rounded by the contract's RNE (fkc_rne_bits, which also carries the RNE perturbation); a NaN is
 * the canonical one (the RNE's, fkc_canon for f32). */
#include <math.h>

#include "contract.h"

void fkc_axpy_f32(const fk_axpy_f32_args *a, fkc_perturb p) {
  for (int64_t r = 0; r < a->rows; r++)
    for (int64_t i = 0; i < a->n; i++) {
      float *y = &a->y[r * a->ldy + i];
      *y = fkc_canon(fmaf(a->x[r * a->ldx + i], a->alpha, *y), p);
    }
}

void fkc_axpy_bf16(const fk_axpy_bf16_args *a, fkc_perturb p) {
  for (int64_t r = 0; r < a->rows; r++)
    for (int64_t i = 0; i < a->n; i++) {
      uint16_t *y = &a->y[r * a->ldy + i];
      *y = fkc_rne_bits(fkc_f32_bits(fmaf(a->x[r * a->ldx + i], a->alpha, fkc_bf16_to_f32(*y))), p);
    }
}
