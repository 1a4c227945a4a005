/* tests/contract/gemv_qfast.c: contract model of the quantized GEMV forms' fast tier (gemv_q8_f32,
 * gemv_q8_f32_bias, gemv_q8_bf16_rne, gemv_q8_bf16_rne_add and the four q4 ones; stamps
 * *__x86_64_avx512vnni_fast, VPDPBUSD, and *__aarch64_dotprod_fast, SDOT). The forms, argument
 * structs and weights are the exact tier's (tests/contract/gemv.c); the tier multiplies integers:
 * the activations are quantized per block of 32 as Q8_0 blocks are, every integer sum is exact and
 * the float order fixed, so the stamps of both ISAs equal this model bit for bit.
 *
 * Per activation row j (x + j*ldx, k elements, k a multiple of 32) and weight row n:
 *  1. activations, per block b of 32 consecutive k: amax = max |x_i| (f32); z = sum_i x_i * 0.0f (0
 *     when every x_i is finite, NaN otherwise); d_b = fl(amax / 127) + z (so d_b >= 0, or NaN);
 *     div = d_b > 2^-149 ? d_b : 2^-149 (a NaN d_b gives 2^-149); r = fl(x_i / div) rounded to an
 *     integer, ties to even; t = r > -127 ? r : -127 (NaN -> -127); q_i = (int)(t < 127 ? t : 127).
 *     The block padding k to a multiple of 64 is zeros: q = 0, d = +0.
 *  2. weights: the quant q_w and the binary16 scale d_w (widened exactly) of each block, from the
 *     packed layout (fkc_gemv_quant_parts; the padding block: quants 0, scale +0).
 *  3. q8: one chain of 16 f32 lanes from +0; for each tile t of 64 k in increasing order and each
 *     lane l: block b = 2t + l/8, the lane's four elements k_i = 64t + 32(l/8) + 2(4(l%4) + i) + (l%8)/4
 *     (i = 0..3); isum = sum_i q_w[k_i] * q_x[k_i] (exact int32); s = fl(d_w[b] * d_x[b]) (one f32
 *     product); acc[l] = fmaf((float)isum, s, acc[l]).
 *     q4: one chain of 8 lanes, the same with block b = 2t + l/4 and the lane's eight elements
 *     k_i = 64t + 8l + i (i = 0..7).
 *  4. S = the halving tree over the 16 lanes (fkc_reduce16; q4: over the 8, fkc_reduce8), then the
 *     exact forms' destination op:
 *     canon(S) | canon(S + bias[n]) | RNE(S) | RNE(S + r[at]); every NaN stored is canonical.
 * So a row with a non-finite x gives NaN in every output (its d_b is NaN): where the float64
 * reference may be +-inf, the tier gives NaN (tests/leaves/gemv_bounds.c, fixtures/README.md
 * gemv_q_fast_f64). An accumulator lane never holds -0 here: isum * s is 0 or at least 2^-149 in
 * magnitude and every sum of them is exact or rounds to a nonzero value, so the padding block's
 * fmaf(0, +0, acc) leaves every lane as it is.
 *
 * Perturbations: FKC_LANES_PERMUTED (lane l takes k = 64t + 4l + i; q4: 64t + l + 8i),
 * FKC_TREE_PAIRWISE (through fkc_reduce16 / fkc_reduce8), FKC_Q_SCALE_NEIGHBOR, FKC_Q_NIBBLES_SWAPPED, FKC_Q_BLOCK_SHIFT (the weights as
 * fkc_gemv_quant_parts perturbs them; an element read with another block's scale is summed apart and
 * takes its own fmaf), FKC_XQ_TRUNC (r toward zero), FKC_XQ_SCALE_F16 (d_b rounded to binary16),
 * FKC_RNE_BIAS and FKC_NAN_PAYLOAD (through the destination ops). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "contract.h"

enum { QB = 32, TILE = 64, LANES = 16 };

/* f32 -> binary16 -> f32, round to nearest even, overflow to inf (FKC_XQ_SCALE_F16 only). */
static float f16_round(float v) {
  if (!isfinite(v) || v == 0) return v;
  int e;
  frexpf(fabsf(v), &e);                           /* |v| in [2^(e-1), 2^e) */
  const float quantum = ldexpf(1.0f, (e - 1 < -14 ? -14 : e - 1) - 10);
  const float r = nearbyintf(v / quantum) * quantum;
  return fabsf(r) > 65504.0f ? copysignf(INFINITY, v) : r;
}

void fkc_gemv_q_quantize_x(const float *x, int64_t k, int8_t *q, float *d, fkc_perturb p) {
  for (int64_t b = 0; b < k / QB; b++) {
    const float *xb = x + QB * b;
    float amax = 0.0f, z = 0.0f;
    for (int i = 0; i < QB; i++) {
      const float a = fabsf(xb[i]);
      if (a > amax) amax = a;
      z += xb[i] * 0.0f;
    }
    float a127 = amax / 127.0f;
    if (p == FKC_XQ_SCALE_F16) a127 = f16_round(a127);
    const float db = a127 + z;
    const float div = db > 0x1p-149f ? db : 0x1p-149f;
    for (int i = 0; i < QB; i++) {
      const float v = xb[i] / div;
      const float r = p == FKC_XQ_TRUNC ? truncf(v) : nearbyintf(v);
      const float t = r > -127.0f ? r : -127.0f;
      q[QB * b + i] = (int8_t)(int)(t < 127.0f ? t : 127.0f);
    }
    d[b] = db;
  }
}

/* Weight row n decoded once for every activation row: its quant and scale per element of the padded
 * k (as perturbed: the scale an element is read with). */
typedef struct qrow { int *q; float *d; } qrow;

static void decode_row(const uint8_t *w, int q4, int64_t n, int64_t k, fkc_perturb p, qrow *r) {
  const int64_t kp = (k + TILE - 1) / TILE * TILE;
  for (int64_t e = 0; e < kp; e++) fkc_gemv_quant_parts(w, q4, n, k, e, p, &r->q[e], &r->d[e]);
}

/* Element i of lane l in tile t: q8, 16 lanes of 4 (i = 0..3); q4, 8 lanes of 8 (i = 0..7). */
static int64_t lane_elem(int q4, int64_t t, int l, int i, fkc_perturb p) {
  if (q4) return p == FKC_LANES_PERMUTED ? TILE * t + l + 8 * i : TILE * t + 8 * l + i;
  return p == FKC_LANES_PERMUTED ? TILE * t + 4 * l + i : TILE * t + 32 * (l / 8) + 2 * (4 * (l % 4) + i) + (l % 8) / 4;
}

/* The sum S of a decoded weight row against one quantized activation row (qx: k quants, dx: k / 32
 * scales). */
static float qfast_row(const qrow *wr, int q4, int64_t k, const int8_t *qx, const float *dx, fkc_perturb p) {
  const int64_t tiles = (k + TILE - 1) / TILE, nb = k / QB;
  const int lanes = q4 ? LANES / 2 : LANES, per = TILE / lanes;
  float acc[LANES];
  for (int l = 0; l < LANES; l++) acc[l] = 0.0f;
  for (int64_t t = 0; t < tiles; t++)
    for (int l = 0; l < lanes; l++) {
      const int64_t b = 2 * t + l / (lanes / 2);
      const float dxb = b < nb ? dx[b] : 0.0f;   /* the padding block: +0 */
      int32_t isum[2] = { 0, 0 };
      float dw[2] = { 0, 0 };
      int two = 0;
      for (int i = 0; i < per; i++) {
        const int64_t e = lane_elem(q4, t, l, i, p);
        const int32_t prod = (int32_t)wr->q[e] * (e < k ? (int32_t)qx[e] : 0);
        /* one scale per lane and block; a perturbed weight read with another block's scale sums apart */
        const int g = i > 0 && fkc_f32_bits(wr->d[e]) != fkc_f32_bits(dw[0]);
        if (g) two = 1;
        dw[g] = wr->d[e];
        isum[g] += prod;
      }
      acc[l] = fmaf((float)isum[0], dw[0] * dxb, acc[l]);
      if (two) acc[l] = fmaf((float)isum[1], dw[1] * dxb, acc[l]);
    }
  return q4 ? fkc_reduce8(acc, p) : fkc_reduce16(acc, p);
}

/* The activation rows of a call, quantized once: qx[j * k ...], dx[j * (k / 32) ...]; and room for
 * one decoded weight row. */
typedef struct qcall { int8_t *qx; float *dx; qrow w; } qcall;

static void *alloc_or_die(size_t n) {
  void *v = malloc(n + 1);
  if (!v) {
    fprintf(stderr, "fkc: out of memory\n");
    exit(2);
  }
  return v;
}

static qcall quantize_rows(const float *x, int64_t ldx, int64_t m, int64_t k, fkc_perturb p) {
  const size_t kp = (size_t)((k + TILE - 1) / TILE * TILE);
  qcall r = { alloc_or_die((size_t)(m * k)), alloc_or_die((size_t)(m * (k / QB)) * sizeof(float)),
              { alloc_or_die(kp * sizeof(int)), alloc_or_die(kp * sizeof(float)) } };
  for (int64_t j = 0; j < m; j++) fkc_gemv_q_quantize_x(x + j * ldx, k, r.qx + j * k, r.dx + j * (k / QB), p);
  return r;
}

#define FKC_QFAST_LOOP(a, q4, DEST) \
  do { \
    qcall qc = quantize_rows((a)->x, (a)->ldx, (a)->m, (a)->k, p); \
    for (int64_t n = (a)->row_begin; n < (a)->row_end; n++) { \
      decode_row((a)->w, (q4), n, (a)->k, p, &qc.w); \
      for (int64_t j = 0; j < (a)->m; j++) { \
        float s = qfast_row(&qc.w, (q4), (a)->k, qc.qx + j * (a)->k, qc.dx + j * ((a)->k / QB), p); \
        int64_t at = (a)->y_off + j * (a)->ldy + n; \
        DEST; \
      } \
    } \
    free(qc.qx); \
    free(qc.dx); \
    free(qc.w.q); \
    free(qc.w.d); \
  } while (0)

#define FKC_GEMV_QFAST(q, q4) \
  void fkc_gemv_##q##_f32_fast(const fk_gemv_##q##_f32_args *a, fkc_perturb p) { \
    FKC_QFAST_LOOP(a, q4, a->y[at] = fkc_canon(s, p)); \
  } \
  void fkc_gemv_##q##_f32_bias_fast(const fk_gemv_##q##_f32_bias_args *a, fkc_perturb p) { \
    FKC_QFAST_LOOP(a, q4, a->y[at] = fkc_canon(s + a->bias[n], p)); \
  } \
  void fkc_gemv_##q##_bf16_rne_fast(const fk_gemv_##q##_bf16_rne_args *a, fkc_perturb p) { \
    FKC_QFAST_LOOP(a, q4, a->y[at] = fkc_rne_bits(fkc_f32_bits(s), p)); \
  } \
  void fkc_gemv_##q##_bf16_rne_add_fast(const fk_gemv_##q##_bf16_rne_add_args *a, fkc_perturb p) { \
    FKC_QFAST_LOOP(a, q4, a->y[at] = fkc_rne_bits(fkc_f32_bits(s + fkc_bf16_to_f32(a->r[at])), p)); \
  }
FKC_GEMV_QFAST(q8, 0)
FKC_GEMV_QFAST(q4, 1)
