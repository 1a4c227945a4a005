/* tests/contract/swiglu.c: contract model of templates/swiglu.lua.
 *
 * Row r = 0..rows-1, element i = 0..n-1: e = fkc_exp(-g) (the template's exp; -g flips the sign
 * bit), d = 1 + e, s = g / d (f32, correctly rounded), then form f32: h = u * s; forms bf16 and
 * bf16_wide: s = RNE(s), h = RNE(u * s) (bf16_wide stores those bits widened to f32). A NaN h is
 * the canonical 0x7fc00000 / 0x7fc0 (fkc_canon, the RNE's NaN).
 * Perturbations: FKC_SILU_SIGMOID, silu as g * (1 / d) (one more rounding; over all 65536 bf16 g
 * it never changes the bf16 silu, so only form f32 can show it); FKC_SILU_UNROUNDED, the bf16
 * forms' product taken with the f32 silu (torch rounds silu's output to bf16 first). */
#include <math.h>
#include <stddef.h>

#include "contract.h"

static float silu(float g, fkc_perturb p) {
  float d = 1.0f + fkc_exp(-g);
  if (p == FKC_SILU_SIGMOID) return g * (1.0f / d);
  return g / d;
}

static void swiglu(const void *g, const void *u, void *h, int wide_in, int out, int64_t n, int64_t rows,
                   int64_t gs, int64_t us, int64_t hs, fkc_perturb p) {
  /* out: 0 bf16, 1 bf16 widened to f32, 2 f32 */
  for (int64_t r = 0; r < rows; r++)
    for (int64_t i = 0; i < n; i++) {
      float gv = wide_in ? ((const float *)g)[r * gs + i] : fkc_bf16_to_f32(((const uint16_t *)g)[r * gs + i]);
      float uv = wide_in ? ((const float *)u)[r * us + i] : fkc_bf16_to_f32(((const uint16_t *)u)[r * us + i]);
      float s = silu(gv, p);
      if (out == 2) {
        ((float *)h)[r * hs + i] = fkc_canon(uv * s, p);
        continue;
      }
      if (p != FKC_SILU_UNROUNDED) s = fkc_bf16_to_f32(fkc_rne_bits(fkc_f32_bits(s), p));
      uint16_t y = fkc_rne_bits(fkc_f32_bits(uv * s), p);
      if (out == 1) ((float *)h)[r * hs + i] = fkc_bf16_to_f32(y);
      else ((uint16_t *)h)[r * hs + i] = y;
    }
}

void fkc_swiglu_bf16(const fk_swiglu_bf16_args *a, fkc_perturb p) {
  swiglu(a->g, a->u, a->h, 0, 0, a->n, a->rows, a->g_stride, a->u_stride, a->h_stride, p);
}

void fkc_swiglu_bf16_wide(const fk_swiglu_bf16_wide_args *a, fkc_perturb p) {
  swiglu(a->g, a->u, a->h, 0, 1, a->n, a->rows, a->g_stride, a->u_stride, a->h_stride, p);
}

void fkc_swiglu_f32(const fk_swiglu_f32_args *a, fkc_perturb p) {
  swiglu(a->g, a->u, a->h, 1, 2, a->n, a->rows, a->g_stride, a->u_stride, a->h_stride, p);
}
