/* tests/contract/vmath.c: contract model of gen/vmath.lua (exp, sincos) and templates/vmath.lua.
 *
 * Every step is the template's: f32 multiplies, adds, subtracts and fmaf in the same order,
 * rint with ties to even, min(a, b) = a < b ? a : b, max(a, b) = a > b ? a : b, int32 lane
 * arithmetic on the bit patterns. Only where the template's value is ISA-defined and cannot
 * reach the result (the int32 conversion of a NaN k in exp, whose y is NaN whatever 2^k is) does
 * the model pick a value of its own. */
#include <math.h>
#include <string.h>

#include "contract.h"

static float f(uint32_t u) { float x; memcpy(&x, &u, 4); return x; }
static uint32_t u(float x) { uint32_t b; memcpy(&b, &x, 4); return b; }
static float vmax(float a, float b) { return a > b ? a : b; }
static float vmin(float a, float b) { return a < b ? a : b; }
static int32_t clampi(int32_t v, int32_t lo, int32_t hi) { return v < lo ? lo : v > hi ? hi : v; }

static float horner(float x, const uint32_t *c, int n) {
  float p = f(c[0]);
  for (int i = 1; i < n; i++) p = fmaf(p, x, f(c[i]));
  return p;
}

static const uint32_t EXP_P[] = { 0x3ab688be, 0x3c0905f1, 0x3d2aaa8c, 0x3e2aaa6e, 0x3f000000 };
static const uint32_t SIN_S[] = { 0x3636d476, 0xb95009b3, 0x3c088887, 0xbe2aaaab };
static const uint32_t COS_C[] = { 0xb4928b1b, 0x37d00acc, 0xbab60b60, 0x3d2aaaab };

float fkc_exp(float x) {
  float xc = vmin(f(0x42b20000), vmax(f(0xc2d00000), x));
  float kf = rintf(xc * f(0x3fb8aa3b));
  int32_t k = isnan(kf) ? 0 : clampi((int32_t)kf, -151, 128);
  float r = fmaf(kf, f(0xbf318000), xc);
  r = fmaf(kf, f(0x395e8083), r);
  float q = fmaf(r * r, horner(r, EXP_P, 5), r);
  float y = q + 1.0f;
  int32_t k2 = k >> 1, k1 = k - k2;
  return (y * f((uint32_t)(k1 + 127) << 23)) * f((uint32_t)(k2 + 127) << 23);
}

static float reduce(float x, float kf) {
  float h = kf * f(0x3fc90fdb);
  float l = fmaf(kf, f(0x3fc90fdb), -h);
  float r = (x - h) - l;
  r = fmaf(kf, f(0x333bbd2e), r);
  r = fmaf(kf, f(0x26f72ced), r);
  return fmaf(kf, f(0x994c5170), r);
}

static float mod4(float k) { return k - rintf(k * 0.25f) * 4.0f; }

void fkc_sincos(float x, float *s_out, float *c_out) {
  float xc = vmin(f(0x4b800000), vmax(f(0xcb800000), x)) * ((x - x) + 1.0f);
  float p = xc * f(0x3f22f983);
  float cc = fmaf(xc, f(0x32dc9c88), fmaf(xc, f(0x3f22f983), -p));
  float kp = rintf(p);
  float kf = kp + rintf((p - kp) + cc);
  float r = reduce(xc, kf);
  int32_t q = (int32_t)vmin(vmax(mod4(kf), -2.0f), 2.0f);
  float z = r * r;
  float s = fmaf(r * z, horner(z, SIN_S, 4), r);
  float c = fmaf(z * z, horner(z, COS_C, 4), fmaf(z, -0.5f, 1.0f));
  uint32_t swap = 0u - (uint32_t)(q & 1), sc = (u(s) ^ u(c)) & swap;
  uint32_t sin_sign = (uint32_t)(q & 2) << 30, cos_sign = (uint32_t)((q + 1) & 2) << 30;
  *s_out = f((u(s) ^ sc) ^ sin_sign);
  *c_out = f((u(c) ^ sc) ^ cos_sign);
}

void fkc_vmath_exp(const fk_vmath_exp_args *a, fkc_perturb p) {
  for (int64_t i = 0; i < a->n; i++) a->y[i] = fkc_canon(fkc_exp(a->x[i]), p);
}

void fkc_vmath_sincos(const fk_vmath_sincos_args *a, fkc_perturb p) {
  for (int64_t i = 0; i < a->n; i++) {
    float s, c;
    fkc_sincos(a->x[i], &s, &c);
    a->s[i] = fkc_canon(s, p);
    a->c[i] = fkc_canon(c, p);
  }
}

void fkc_vmath_polar(const fk_vmath_polar_args *a, fkc_perturb p) {
  for (int64_t i = 0; i < a->n; i++) {
    float s, c, mag = fkc_exp(a->m[i]);
    fkc_sincos(a->p[i], &s, &c);
    a->re[i] = fkc_canon(mag * c, p);
    a->im[i] = fkc_canon(mag * s, p);
  }
}
