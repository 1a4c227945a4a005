/* tests/contract/irfft.c: contract model of templates/irfft.lua (gen/vfft.lua's algorithm).
 *
 * L = N/2. Pre: Z[k] = (X[k] + conj(X[L-k])) + i * (X[k] - conj(X[L-k])) * T[k] with the
 * imaginary parts of X[0] and X[L] taken as +0 (the stamp clears their bits); E, D, O, Z in the
 * template's order (O = (dr*tr + di*(-ti), dr*ti + di*tr), each as fmaf(dr, t, di * u)).
 * Stages: Stockham DIF, radix 2 with strides s = 1, 2, 4, ..., then radix 5 when L = 5 * 2^j;
 * the twiddles are the stamp's own words (generated/fk_tables.h). Post: x[2m] = z[m].re * scale,
 * x[2m+1] = z[m].im * scale, scale = f32(1/N). */
#include <math.h>
#include <string.h>

#include "contract.h"
#include "fk_tables.h"

static float f(uint32_t u) { float x; memcpy(&x, &u, 4); return x; }

typedef struct plan {
  int n;
  const uint32_t *pre_r, *pre_i, *pre_ni, *w5, *scale;
  const uint32_t *sr[10], *si[10], *sni[10];
} plan;

enum { LMAX = 1024 };

/* z = N * irfft(X) as split re/im halves (steps 1-2); returns the buffer pair holding it */
static float (*irfft_z(const plan *P, const float *re, const float *im, fkc_perturb pert))[LMAX] {
  const int L = P->n / 2;
  static float buf[2][2][LMAX];
  for (int k = 0; k < L; k++) {
    float ar = re[k], ai = k == 0 ? 0.0f : im[k];
    float br = re[L - k], bi = k == 0 ? 0.0f : -im[L - k];   /* the stamp clears the bits after the negation */
    float er = ar + br, ei = ai + bi, dr = ar - br, di = ai - bi;
    float tr = f(P->pre_r[k]), ti = f(P->pre_i[k]);
    float or_ = fmaf(dr, tr, di * f(P->pre_ni[k])), oi = fmaf(dr, ti, di * tr);
    buf[0][0][k] = er - oi;
    buf[0][1][k] = ei + or_;
  }
  int cur = 0, n = L, s = 1, j = 0;
  while (n % 2 == 0) {
    const float *xr = buf[cur][0], *xi = buf[cur][1];
    float *yr = buf[1 - cur][0], *yi = buf[1 - cur][1];
    for (int fidx = 0; fidx < L / 2; fidx++) {
      int p = fidx / s, q = fidx % s, e = s < 16 ? fidx : p;
      float ar = xr[fidx], br = xr[fidx + L / 2], ai = xi[fidx], bi = xi[fidx + L / 2];
      float dr = ar - br, di = ai - bi, wr = f(P->sr[j][e]);
      /* FKC_ROTATE_SWAPPED: the first stage's twiddles conjugated (the forward transform's sign) */
      float wi = f(P->si[j][e]), nwi = f(P->sni[j][e]);
      if (pert == FKC_ROTATE_SWAPPED && j == 0) wi = f(P->sni[j][e]), nwi = f(P->si[j][e]);
      yr[2 * s * p + q] = ar + br;
      yi[2 * s * p + q] = ai + bi;
      yr[2 * s * p + s + q] = fmaf(dr, wr, di * nwi);
      yi[2 * s * p + s + q] = fmaf(dr, wi, di * wr);
    }
    cur = 1 - cur, n /= 2, s *= 2, j++;
  }
  if (n == 5) {
    const float *xr = buf[cur][0], *xi = buf[cur][1];
    float *yr = buf[1 - cur][0], *yi = buf[1 - cur][1];
    for (int q = 0; q < s; q++)
      for (int u = 0; u < 5; u++) {
        float accr = xr[q], acci = xi[q];
        for (int t = 1; t < 5; t++) {
          int jj = (t * u) % 5;
          float c = f(P->w5[jj]), sn = f(P->w5[5 + jj]), nsn = f(P->w5[10 + jj]);
          float atr = xr[q + s * t], ati = xi[q + s * t];
          accr = fmaf(ati, nsn, fmaf(atr, c, accr));
          acci = fmaf(ati, c, fmaf(atr, sn, acci));
        }
        yr[q + s * u] = accr;
        yi[q + s * u] = acci;
      }
    cur = 1 - cur;
  }
  return buf[cur];
}

static void irfft(const plan *P, const float *re, const float *im, float *y, fkc_perturb pert) {
  float (*z)[LMAX] = irfft_z(P, re, im, pert);
  float sc = f(P->scale[0]);
  for (int m = 0; m < P->n / 2; m++) {
    y[2 * m] = fkc_canon(z[0][m] * sc, pert);       /* a NaN: the canonical one */
    y[2 * m + 1] = fkc_canon(z[1][m] * sc, pert);
  }
}

#define ST(N, J) P.sr[J - 1] = FK_IRFFT_N##N##_S##J##_R, P.si[J - 1] = FK_IRFFT_N##N##_S##J##_I, \
                 P.sni[J - 1] = FK_IRFFT_N##N##_S##J##_NI
#define BASE(N) plan P = { N, FK_IRFFT_N##N##_PRE_R, FK_IRFFT_N##N##_PRE_I, FK_IRFFT_N##N##_PRE_NI, \
                           FK_IRFFT_N##N##_W5, FK_IRFFT_N##N##_SCALE, { 0 }, { 0 }, { 0 } }

void fkc_irfft_n256(const fk_irfft_n256_args *a, fkc_perturb p) {
  BASE(256);
  ST(256, 1); ST(256, 2); ST(256, 3); ST(256, 4); ST(256, 5); ST(256, 6); ST(256, 7);
  irfft(&P, a->re, a->im, a->y, p);
}

void fkc_irfft_n512(const fk_irfft_n512_args *a, fkc_perturb p) {
  BASE(512);
  ST(512, 1); ST(512, 2); ST(512, 3); ST(512, 4); ST(512, 5); ST(512, 6); ST(512, 7); ST(512, 8);
  irfft(&P, a->re, a->im, a->y, p);
}

void fkc_irfft_n1024(const fk_irfft_n1024_args *a, fkc_perturb p) {
  BASE(1024);
  ST(1024, 1); ST(1024, 2); ST(1024, 3); ST(1024, 4); ST(1024, 5); ST(1024, 6); ST(1024, 7); ST(1024, 8);
  ST(1024, 9);
  irfft(&P, a->re, a->im, a->y, p);
}

void fkc_irfft_n1280(const fk_irfft_n1280_args *a, fkc_perturb p) {
  BASE(1280);
  ST(1280, 1); ST(1280, 2); ST(1280, 3); ST(1280, 4); ST(1280, 5); ST(1280, 6); ST(1280, 7);
  irfft(&P, a->re, a->im, a->y, p);
}

void fkc_irfft1280_z(const float *re, const float *im, float *zr, float *zi) {
  BASE(1280);
  ST(1280, 1); ST(1280, 2); ST(1280, 3); ST(1280, 4); ST(1280, 5); ST(1280, 6); ST(1280, 7);
  float (*z)[LMAX] = irfft_z(&P, re, im, FKC_EXACT);
  for (int m = 0; m < 640; m++) zr[m] = z[0][m], zi[m] = z[1][m];
}

void fkc_irfft_n2048(const fk_irfft_n2048_args *a, fkc_perturb p) {
  BASE(2048);
  ST(2048, 1); ST(2048, 2); ST(2048, 3); ST(2048, 4); ST(2048, 5); ST(2048, 6); ST(2048, 7); ST(2048, 8);
  ST(2048, 9); ST(2048, 10);
  irfft(&P, a->re, a->im, a->y, p);
}
