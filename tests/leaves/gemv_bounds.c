/* tests/leaves/gemv_bounds.c: the float64 reference of one GEMV output and its faithful bound
 * (fixtures/README.md: gemv_f64 for the exact tier, gemv_fast_f64 for the fast tier, gemv_q_fast_f64
 * for the quantized forms' fast tier), computed
 * from a call's own inputs. Used by the fixture gate and by the fast-tier tests. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../contract/contract.h"
#include "cases.h"

static const double U = 0x1p-24, ETA = 0x1p-150;

static double gamma_(double d) { return d * U / (1 - d * U); }

static int is_bf16_subnormal(float f) {
  uint32_t u = fkc_f32_bits(f);
  return (u & 0x7f800000u) == 0 && (u & 0x007f0000u) != 0;
}

/* Destination index of (j, n). */
static int64_t dest(const fkh_call *c, int64_t j, int64_t n) {
  return fkh_i64_of(c, "y_off") + j * fkh_i64_of(c, "ldy") + n;
}

double fkt_gemv_output(fkh_call *c, int64_t j, int64_t n) {
  int yi = fkh_field_index(c, "y");
  if (fkh_forms[c->form].fields[yi].elem == FK_ELEM_F32) return ((const float *)fkh_buf_of(c, "y"))[dest(c, j, n)];
  return fkc_bf16_to_f32(((const uint16_t *)fkh_buf_of(c, "y"))[dest(c, j, n)]);
}

/* s = sum w*x (+ r | + bias) in float64 (products of bf16 and f32 are exact in double; the
 * sum's own error is far below every bound here). *err gets E, the f32 evaluation's error bound
 * for the tier before any output rounding (exact: gamma(d)*A + d*eta; fast: the x rounding X,
 * the flushed products F, gamma(2d)*B + d*2^-126; the quantized forms' fast tier: q_fast_error
 * below). */
/* Weight (n, i) of a call, row-major or packed (the layout's formula, as in the contract). */
static uint16_t w_at(fkh_call *c, int64_t n, int64_t i) {
  const uint16_t *w = fkh_buf_of(c, "w");
  if (fkh_field_index(c, "ldw") >= 0) return w[n * fkh_i64_of(c, "ldw") + i];
  if (strstr(fkh_forms[c->form].id, "_blocked")) {
    const int64_t BR = FK_GEMV_BLOCK_ROWS, BG = FK_GEMV_BLOCK_GROUP, BK = FK_GEMV_BLOCK_KALIGN;
    const int64_t kpad = (fkh_i64_of(c, "k") + BK - 1) / BK * BK;
    return w[(n / (BR * BG)) * (BR * BG) * kpad + ((i / 2) * BG + (n / BR) % BG) * BR * 2 + (n % BR) * 2 + i % 2];
  }
  const int64_t R = FK_GEMV_PACK_ROWS, T = FK_GEMV_PACK_TILE, tiles = (fkh_i64_of(c, "k") + T - 1) / T;
  return w[((n / R) * tiles + i / T) * R * T + (n % R) * T + i % T];
}

/* -1 for the bf16 forms, else the quantized form's layout (0: q8, 1: q4, 2: q4k) */
static int quant_of(const fkh_call *c) {
  const char *id = fkh_forms[c->form].id;
  return strstr(id, "_q4k_") ? 2 : strstr(id, "_q4_") ? 1 : strstr(id, "_q8_") ? 0 : -1;
}

int fkt_gemv_is_quant(const fkh_call *c) { return quant_of(c) >= 0; }

/* gemv_q_fast_f64 (fixtures/README.md): the quantized forms' fast tier (tests/contract/gemv_qfast.c)
 * about the float64 reference s = sum_k deq_w[k]*x[k] + extra, deq_w = q_w*d_w. The activations are
 * quantized per block b of 32 (q_x, d_x[b]: the model's own quantizer, fkc_gemv_q_quantize_x); then
 * per lane and block the integer sum isum (exact) times s_b = fl(d_w*d_x[b]), fma-accumulated on 16
 * lanes (q4: 8), the halving tree, the destination add. With u = 2^-24, ETA = 2^-150, gamma(d) =
 * d*u/(1 - d*u), d = ceil(k/64) + 5 (the fmas of a lane, the tree's 4 levels, the destination add;
 * q4: ceil(k/64) + 4, the tree's 3 levels),
 * nb = k/32 blocks,
 *   X = sum_k |deq_w[k]| * |x[k] - q_x[k]*d_x[b(k)]|   (the activations' quantization, float64)
 *   A = sum_k |deq_w[k]| * |q_x[k]*d_x[b(k)]|           (float64)
 *   E = X + u*A + gamma(d)*((1 + u)*A + |extra|) + nb*2^-131*(1 + gamma(d)) + (k + 16)*ETA:
 * s_b errs by at most u*|d_w*d_x| + ETA, times sum |isum| <= 32*128*127 < 2^17 per block (the ETA
 * terms: nb*2^-133, stated as nb*2^-131); the f32 sum of the terms isum*s_b and extra, depth d, errs
 * by gamma(d) times the sum of their magnitudes, plus ETA per rounding (at most 16*ceil(k/64) + 16 <= k + 16).
 * A row whose x holds an inf or a NaN has d_x NaN: every output of it is NaN, where the float64
 * reference may be +-inf or finite; that divergence is the tier's (documented), so the reference
 * returned there is NaN (a NaN output required, by class) and *err 0. An s_b that overflows f32
 * (|d_w|*amax/127 > FLT_MAX: amax above 6.6e35 with the largest binary16 scale) is in no case. */
static double q_fast_error(fkh_call *c, const float *x, int64_t n, int64_t k, double extra, int *nonfinite) {
  const int q4 = quant_of(c);
  const uint8_t *w = fkh_buf_of(c, "w");
  int8_t *qx = malloc((size_t)k + 1);
  float *dx = malloc((size_t)(k / 32) * sizeof *dx + 1);
  if (!qx || !dx) exit(2);
  fkc_gemv_q_quantize_x(x, k, qx, dx, FKC_EXACT);
  double X = 0, A = 0;
  *nonfinite = 0;
  for (int64_t i = 0; i < k; i++) {
    int qw;
    float dw;
    fkc_gemv_quant_parts(w, q4, n, k, i, FKC_EXACT, &qw, &dw);
    const double deq = fabs((double)qw * (double)dw), xq = (double)qx[i] * (double)dx[i / 32];
    *nonfinite |= !isfinite(x[i]);
    X += deq * fabs((double)x[i] - xq);
    A += deq * fabs(xq);
  }
  free(qx);
  free(dx);
  const double d = (double)((k + 63) / 64) + (q4 ? 4 : 5), nb = (double)(k / 32);
  return X + U * A + gamma_(d) * ((1 + U) * A + fabs(extra)) + nb * 0x1p-131 * (1 + gamma_(d)) + ((double)k + 16) * ETA;
}

double fkt_gemv_reference(fkh_call *c, int64_t j, int64_t n, int fast, double *err) {
  int64_t k = fkh_i64_of(c, "k"), ldx = fkh_i64_of(c, "ldx");
  const int q = quant_of(c);
  const float *x = (const float *)fkh_buf_of(c, "x") + j * ldx;
  double s = 0, a = 0, xerr = 0, flushed = 0, kept = 0;
  for (int64_t i = 0; i < k; i++) {
    /* (as f32, exact: bf16 widened, or a quantized q * d from the layout's formula) */
    float wv = q == 2 ? fkc_gemv_q4k_weight(fkh_buf_of(c, "w"), n, k, i, FKC_EXACT)
               : q >= 0 ? fkc_gemv_quant_weight(fkh_buf_of(c, "w"), q, n, k, i, FKC_EXACT)
               : fkc_bf16_to_f32(w_at(c, n, i)),
          xb = fkc_bf16_to_f32(fkc_rne_bits(fkc_f32_bits(x[i]), FKC_EXACT));
    s += (double)wv * (double)x[i];
    a += fabs((double)wv * (double)x[i]);
    xerr += fabs((double)wv) * fabs((double)xb - (double)x[i]);
    if (is_bf16_subnormal(wv) || is_bf16_subnormal(xb)) flushed += fabs((double)wv * (double)xb);
    else kept += fabs((double)wv * (double)xb);
  }
  double extra = 0;
  if (fkh_field_index(c, "r") >= 0) extra = fkc_bf16_to_f32(((const uint16_t *)fkh_buf_of(c, "r"))[dest(c, j, n)]);
  if (fkh_field_index(c, "bias") >= 0) extra = ((const float *)fkh_buf_of(c, "bias"))[n];
  s += extra;
  a += fabs(extra);
  kept += fabs(extra);
  if (!fast) {
    double d = (double)k + 1;
    *err = gamma_(d) * a + d * ETA;
  } else if (q >= 0) {
    int nonfinite;
    *err = q_fast_error(c, x, n, k, extra, &nonfinite);
    if (nonfinite) {
      *err = 0;
      return NAN;
    }
  } else {
    double d = (double)k + 2;
    *err = xerr + flushed + gamma_(2 * d) * kept + d * 0x1p-126;
  }
  return s;
}

/* The output bound about a reference `ref` whose own error is `refs` times E (1 for float64
 * references, 2 for another f32 evaluation such as torch's): bf16 outputs add one RNE. */
double fkt_gemv_bound(fkh_call *c, double ref, double e, double refs) {
  int bf16_out = fkh_forms[c->form].fields[fkh_field_index(c, "y")].elem == FK_ELEM_BF16;
  return bf16_out ? 0x1p-8 * (fabs(ref) + refs * e) + refs * e + 0x1p-134 : refs * e;
}

/* 1 when y matches the reference: by class for NaN and infinities, within the bound else. */
int fkt_gemv_within(double y, double ref, double bound) {
  if (isnan(ref)) return isnan(y);
  if (isinf(ref)) return isinf(y) && (y > 0) == (ref > 0);
  if (!isfinite(y)) return 0;
  return fabs(y - ref) <= bound;
}
