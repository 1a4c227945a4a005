/* bench/gemv_ref.c: the scalar exact-tier order of the GEMV, one k at a time, and a float64
 * reference.
 *
 * This is the oracle of the startup self-check (the autovec peer must match it bit for bit)
 * and of the correctness gate every contender passes before it is timed. Build it with
 * -ffp-contract=off and without vectorization: it is the plain reading of the contract.
 *
 * Order, per output row n and activation row j: 64 f32 slots start at +0.0f; element k goes
 * to slot k % 64 by acc = fmaf(w, x, acc), in increasing k (slots past K stay +0.0f). Slot s
 * is lane l = (s % 32) / 2 of chain c = 2 * (s / 32) + s % 2. Lane sums
 * v[l] = (A(0,l) + A(1,l)) + (A(2,l) + A(3,l)), then the halving tree over 16 lanes
 * (v[i] += v[i + step], step 8, 4, 2, 1), then the integer RNE to bf16. */
#include <math.h>

#include "fkb.h"

enum { SLOTS = 64, LANES = 16 };

static int slot_of(int chain, int lane) { return 32 * (chain / 2) + 2 * lane + chain % 2; }

static float row_sum(const uint16_t *w, const float *x, int64_t k) {
  float acc[SLOTS];
  for (int s = 0; s < SLOTS; s++) acc[s] = 0.0f;
  for (int64_t i = 0; i < k; i++) acc[i % SLOTS] = fmaf(fkb_bf16_to_f32(w[i]), x[i], acc[i % SLOTS]);
  float v[LANES];
  for (int l = 0; l < LANES; l++)
    v[l] = (acc[slot_of(0, l)] + acc[slot_of(1, l)]) + (acc[slot_of(2, l)] + acc[slot_of(3, l)]);
  for (int step = LANES / 2; step >= 1; step /= 2)
    for (int i = 0; i < step; i++) v[i] = v[i] + v[i + step];
  return v[0];
}

void fkb_ref_exact(const uint16_t *w, int64_t ldw, const float *x, int64_t ldx, int64_t m, int64_t nrows,
                   int64_t k, uint16_t *ybf, float *yf32, int64_t ldy) {
  for (int64_t n = 0; n < nrows; n++)
    for (int64_t j = 0; j < m; j++) {
      float s = row_sum(w + n * ldw, x + j * ldx, k);
      if (ybf) ybf[j * ldy + n] = fkb_f32_to_bf16(s);
      if (yf32) yf32[j * ldy + n] = s;
    }
}

void fkb_ref_f64(const uint16_t *w, int64_t ldw, const float *x, int64_t ldx, int64_t m, int64_t nrows,
                 int64_t k, double *y, double *abs_sum, int64_t ldy) {
  for (int64_t n = 0; n < nrows; n++)
    for (int64_t j = 0; j < m; j++) {
      double s = 0.0, a = 0.0;
      for (int64_t i = 0; i < k; i++) {
        double p = (double)fkb_bf16_to_f32(w[n * ldw + i]) * (double)x[j * ldx + i];
        s += p;
        a += fabs(p);
      }
      y[j * ldy + n] = s;
      abs_sum[j * ldy + n] = a;
    }
}
