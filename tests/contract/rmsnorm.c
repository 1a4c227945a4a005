/* tests/contract/rmsnorm.c: contract model of templates/rmsnorm.lua (params chains=2).
 *
 * Per row: h[i] = x[i] (widened if bf16), or for the add forms h[i] = RNE(x[i] + r[i]) written
 * back to r[i]. Lane l of chain c (0..1) starts at +0.0f and accumulates fmaf(h, h, acc) over
 * the i with i mod 32 == 16c + l, in increasing i; v[l] = chain0[l] + chain1[l]; the halving
 * tree gives ss; inv = 1.0f / sqrtf(ss / (float)n + eps) (IEEE divide and sqrt);
 * y[i] = RNE(w[i] * RNE(h[i] * inv)) with both products in f32. The once forms (bf16_wide_once,
 * add_f32_wide_once: liquid-audio's RMSNorm) round once: y[i] = RNE(w[i] * (h[i] * inv)), stored
 * widened; FKC_ONCE_ROUNDED_TWICE rounds them as the LFM2 forms do. */
#include <math.h>

#include "contract.h"

enum { CHAINS = 2, LANES = 16, TILE = CHAINS * LANES };

/* The row's h values are materialised as f32 first (they are exact bf16 or f32 values). */
static void norm_row(const float *h, const uint16_t *w, uint16_t *y, float *yw, int64_t n, float eps, int once,
                     fkc_perturb p) {
  float acc[CHAINS][LANES] = { { 0 } };
  for (int64_t i = 0; i < n; i++) {
    int slot = (int)(i % TILE);
    int c = slot / LANES, l = slot % LANES;
    if (p == FKC_LANES_PERMUTED) c = slot % CHAINS, l = slot / CHAINS; /* interleaved */
    acc[c][l] = fmaf(h[i], h[i], acc[c][l]);
  }
  float v[LANES];
  for (int l = 0; l < LANES; l++) v[l] = acc[0][l] + acc[1][l];
  float ss = fkc_reduce16(v, p);
  float inv = 1.0f / sqrtf(ss / (float)n + eps);
  for (int64_t i = 0; i < n; i++) {
    float y1 = h[i] * inv;
    if (!once || p == FKC_ONCE_ROUNDED_TWICE) y1 = fkc_bf16_to_f32(fkc_rne_bits(fkc_f32_bits(y1), p));
    uint16_t b = fkc_rne_bits(fkc_f32_bits(fkc_bf16_to_f32(w[i]) * y1), p);
    if (yw) yw[i] = fkc_bf16_to_f32(b);   /* the wide forms: the same bits, widened */
    else y[i] = b;
  }
}

/* Row buffer: rows are processed one at a time; n is bounded by the tests' largest shape. */
enum { MAXN = 1 << 16 };
static float hbuf[MAXN];

void fkc_rmsnorm_f32(const fk_rmsnorm_f32_args *a, fkc_perturb p) {
  for (int64_t r = 0; r < a->rows; r++) {
    for (int64_t i = 0; i < a->n; i++) hbuf[i] = a->x[r * a->x_stride + i];
    norm_row(hbuf, a->w, a->y + r * a->y_stride, NULL, a->n, a->eps, 0, p);
  }
}

void fkc_rmsnorm_bf16(const fk_rmsnorm_bf16_args *a, fkc_perturb p) {
  for (int64_t r = 0; r < a->rows; r++) {
    for (int64_t i = 0; i < a->n; i++) hbuf[i] = fkc_bf16_to_f32(a->x[r * a->x_stride + i]);
    norm_row(hbuf, a->w, a->y + r * a->y_stride, NULL, a->n, a->eps, 0, p);
  }
}

void fkc_rmsnorm_add_f32(const fk_rmsnorm_add_f32_args *a, fkc_perturb p) {
  for (int64_t r = 0; r < a->rows; r++) {
    uint16_t *rr = a->r + r * a->r_stride;
    for (int64_t i = 0; i < a->n; i++) {
      uint16_t hb = fkc_rne_bits(fkc_f32_bits(a->x[r * a->x_stride + i] + fkc_bf16_to_f32(rr[i])), p);
      hbuf[i] = fkc_bf16_to_f32(hb);
      if (p != FKC_SKIP_COMMIT) rr[i] = hb;
    }
    norm_row(hbuf, a->w, a->y + r * a->y_stride, NULL, a->n, a->eps, 0, p);
  }
}

void fkc_rmsnorm_add_bf16(const fk_rmsnorm_add_bf16_args *a, fkc_perturb p) {
  for (int64_t r = 0; r < a->rows; r++) {
    uint16_t *rr = a->r + r * a->r_stride;
    for (int64_t i = 0; i < a->n; i++) {
      float xv = fkc_bf16_to_f32(a->x[r * a->x_stride + i]);
      uint16_t hb = fkc_rne_bits(fkc_f32_bits(xv + fkc_bf16_to_f32(rr[i])), p);
      hbuf[i] = fkc_bf16_to_f32(hb);
      if (p != FKC_SKIP_COMMIT) rr[i] = hb;
    }
    norm_row(hbuf, a->w, a->y + r * a->y_stride, NULL, a->n, a->eps, 0, p);
  }
}

void fkc_rmsnorm_bf16_wide(const fk_rmsnorm_bf16_wide_args *a, fkc_perturb p) {
  for (int64_t r = 0; r < a->rows; r++) {
    for (int64_t i = 0; i < a->n; i++) hbuf[i] = fkc_bf16_to_f32(a->x[r * a->x_stride + i]);
    norm_row(hbuf, a->w, NULL, a->y + r * a->y_stride, a->n, a->eps, 0, p);
  }
}

void fkc_rmsnorm_bf16_wide_once(const fk_rmsnorm_bf16_wide_once_args *a, fkc_perturb p) {
  for (int64_t r = 0; r < a->rows; r++) {
    for (int64_t i = 0; i < a->n; i++) hbuf[i] = fkc_bf16_to_f32(a->x[r * a->x_stride + i]);
    norm_row(hbuf, a->w, NULL, a->y + r * a->y_stride, a->n, a->eps, 1, p);
  }
}

void fkc_rmsnorm_add_f32_wide_once(const fk_rmsnorm_add_f32_wide_once_args *a, fkc_perturb p) {
  for (int64_t r = 0; r < a->rows; r++) {
    uint16_t *rr = a->r + r * a->r_stride;
    for (int64_t i = 0; i < a->n; i++) {
      uint16_t hb = fkc_rne_bits(fkc_f32_bits(a->x[r * a->x_stride + i] + fkc_bf16_to_f32(rr[i])), p);
      hbuf[i] = fkc_bf16_to_f32(hb);
      if (p != FKC_SKIP_COMMIT) rr[i] = hb;
    }
    norm_row(hbuf, a->w, NULL, a->y + r * a->y_stride, a->n, a->eps, 1, p);
  }
}
