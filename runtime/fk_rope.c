/* runtime/fk_rope.c: RoPE tables, computed once at readiness, byte-identical on every ISA.
 *
 * The formula is the references' (transformers' Lfm2RotaryEmbedding, liquid-audio's
 * precompute_freqs_cis), with their f32 steps kept where they round:
 *   e   = (float)(2i) / (float)hd                      f32 divide
 *   r   = theta^e, correctly rounded to f32            (torch's f32 pow; measured equal for
 *                                                       hd 64 and 32 at theta 1e6)
 *   inv = 1.0f / r                                     f32 divide
 *   a   = (float)p * inv                               f32 product (position_ids.float() * inv_freq)
 *   cos, sin of a, from a double evaluation rounded once to f32.
 * No libm: log, exp, sin and cos are evaluated here with + - * / on doubles only, compiled
 * without contraction (CMake sets -ffp-contract=off for this file), so every IEEE machine gets
 * the same bits. The double evaluations are accurate to 2^-45 relative (theta^e: the error of
 * e ln theta, |e ln theta| < 70, carried into exp) and to a few units of 2^-53 (cos, sin), so the
 * f32 results are the correctly rounded ones except where the exact value lies that close to an
 * f32 rounding boundary (tests/test_runtime.c checks them
 * against libm's double functions and against torch's tables in fixtures/rope/). */
#include <string.h>

#include "fk_internal.h"

/* pi/2 as three doubles: P1 and P2 have 28 significant bits (k * P1, k * P2 exact for
 * k < 2^25), P3 is the rest. */
static const double P1 = 1.5707963109016418457031250;     /* 0x3FF921FB50000000 */
static const double P2 = 1.5893254712295857748029835e-8;  /* 0x3E5110B460000000 */
static const double P3 = 6.1232339957367660359688e-17;    /* pi/2 - P1 - P2, rounded */
static const double TWO_OVER_PI = 0.63661977236758138243;
static const double LN2_HI = 6.93147180369123816490e-01;  /* 0x3FE62E42FEE00000: 32 bits */
static const double LN2_LO = 1.90821492927058770002e-10;

/* 2^k for |k| < 1023, exactly. */
static double pow2(int k) {
  uint64_t bits = (uint64_t)(k + 1023) << 52;
  double d;
  memcpy(&d, &bits, sizeof d);
  return d;
}

/* round to nearest integer (ties away; only the reduction's choice, any integer works) */
static double nearest(double x) {
  return x >= 0 ? (double)(int64_t)(x + 0.5) : -(double)(int64_t)(-x + 0.5);
}

/* ln(x) for x > 0 normal: x = m * 2^k with m in [sqrt(1/2), sqrt(2)), ln m = 2 atanh(s),
 * s = (m - 1) / (m + 1), |s| < 0.1716, the odd series to s^31 (error < 2^-60). */
static double ln(double x) {
  uint64_t bits;
  memcpy(&bits, &x, sizeof bits);
  int k = (int)((bits >> 52) & 0x7ff) - 1023;
  bits = (bits & 0x000fffffffffffffull) | 0x3ff0000000000000ull;
  double m;
  memcpy(&m, &bits, sizeof m);
  if (m > 1.4142135623730951) {
    m *= 0.5;
    k += 1;
  }
  double s = (m - 1.0) / (m + 1.0), s2 = s * s, sum = 0.0;
  for (int n = 31; n >= 3; n -= 2) sum = (sum + 1.0 / n) * s2;
  double lnm = 2.0 * s + 2.0 * s * sum;
  return ((double)k * LN2_HI + lnm) + (double)k * LN2_LO;
}

/* exp(y) for |y| < 700: y = k ln2 + r, |r| <= ln2 / 2, Taylor to r^20 (error < 2^-60). */
static double exp_(double y) {
  double k = nearest(y / 0.69314718055994530942);
  double r = (y - k * LN2_HI) - k * LN2_LO;
  double sum = 1.0;
  for (int n = 20; n >= 1; n--) sum = 1.0 + sum * r / n;
  return sum * pow2((int)k);
}

/* sin and cos of r, |r| <= pi/4 (+ a little), Horner forms of the Taylor series to r^29 and
 * r^28 (truncation < 2^-80): sin r = r (1 - r^2/(2*3) (1 - r^2/(4*5) (...))), likewise cos. */
static double sin_poly(double r) {
  double r2 = r * r, u = 1.0;
  for (int n = 29; n >= 3; n -= 2) u = 1.0 - r2 * u / ((double)n * (double)(n - 1));
  return r * u;
}

static double cos_poly(double r) {
  double r2 = r * r, u = 1.0;
  for (int n = 28; n >= 2; n -= 2) u = 1.0 - r2 * u / ((double)n * (double)(n - 1));
  return u;
}

/* cos and sin of a (|a| < 2^24, an f32 value), reduced by k pi/2. */
static void cos_sin(double a, double *c, double *s) {
  double k = nearest(a * TWO_OVER_PI);
  double r = ((a - k * P1) - k * P2) - k * P3;
  double sr = sin_poly(r), cr = cos_poly(r);
  switch ((int64_t)k & 3) {
  case 0: *c = cr, *s = sr; break;
  case 1: *c = -sr, *s = cr; break;
  case 2: *c = -cr, *s = -sr; break;
  default: *c = sr, *s = -cr; break;
  }
}

static fk_status check_theta_hd(const char *fn, float theta, int64_t head_dim, fk_error *err) {
  FK_RETURN_ERROR_IF(!(theta > 1.0f && theta < 1e30f), err, FK_EINVAL,
                     "%s: theta = %g, must be > 1 and finite", fn, (double)theta);
  FK_RETURN_ERROR_IF(head_dim < 2 || head_dim > 1024 || head_dim % 2, err, FK_EINVAL,
                     "%s: head_dim = %lld, must be even, 2..1024", fn, (long long)head_dim);
  return FK_OK;
}

/* inv[i] = 1.0f / f32(theta^e), e = (float)(2i) / (float)hd */
static void inv_freq(float theta, int64_t head_dim, float *inv) {
  const double lt = ln((double)theta);
  for (int64_t i = 0; i < head_dim / 2; i++) {
    float e = (float)(2 * i) / (float)head_dim;
    inv[i] = 1.0f / (float)exp_((double)e * lt);
  }
}

fk_status fk_rope_inv_freq(float theta, int64_t head_dim, float *inv, fk_error *err) {
  FK_RETURN_ERROR_IF(!inv, err, FK_EINVAL, "fk_rope_inv_freq: inv is NULL");
  fk_status s = check_theta_hd("fk_rope_inv_freq", theta, head_dim, err);
  if (s != FK_OK) return s;
  inv_freq(theta, head_dim, inv);
  return FK_OK;
}

fk_status fk_rope_table(float theta, int64_t head_dim, int64_t pos_begin, int64_t npos, float *cos_out,
                        float *sin_out, fk_error *err) {
  FK_RETURN_ERROR_IF(!cos_out, err, FK_EINVAL, "fk_rope_table: cos is NULL");
  FK_RETURN_ERROR_IF(!sin_out, err, FK_EINVAL, "fk_rope_table: sin is NULL");
  fk_status st = check_theta_hd("fk_rope_table", theta, head_dim, err);
  if (st != FK_OK) return st;
  FK_RETURN_ERROR_IF(pos_begin < 0 || npos < 0 || pos_begin > (1 << 24) - npos, err, FK_EINVAL,
                     "fk_rope_table: positions [%lld, %lld + %lld) must lie in [0, 2^24) (f32 positions are exact there)",
                     (long long)pos_begin, (long long)pos_begin, (long long)npos);
  const int64_t half = head_dim / 2;
  const size_t bytes = (size_t)(npos * half) * sizeof(float);
  FK_RETURN_ERROR_IF(fk_overlap(cos_out, bytes, sin_out, bytes), err, FK_EINVAL,
                     "fk_rope_table: cos and sin overlap (%zu bytes each)", bytes);
  float inv[512];
  inv_freq(theta, head_dim, inv);
  for (int64_t i = 0; i < half; i++) {
    for (int64_t p = 0; p < npos; p++) {
      float a = (float)(pos_begin + p) * inv[i];
      double c, s;
      cos_sin((double)a, &c, &s);
      cos_out[p * half + i] = (float)c;
      sin_out[p * half + i] = (float)s;
    }
  }
  return FK_OK;
}
