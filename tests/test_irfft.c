/* tests/test_irfft.c: inverse real FFT stamps (templates/irfft.lua, gen/vfft.lua).
 *   exact:     every stamp == contract model bit for bit, x86_64 and AArch64.
 *   accuracy:  against a float64 inverse DFT (direct sum), within the bound below.
 *   selftests: FFTW-style: linearity, impulse response, time shift, on the stamps.
 * exact and fixtures run as leaf::exact and leaf::fixtures (tests/test_leaf.c, linked into this
 * suite). */
#include <criterion/criterion.h>
#include <criterion/logging.h>
#include <criterion/parameterized.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "flashkern.h"
#include "suite.h"

static const double PI = 3.14159265358979323846;


/* ---------------------------------------------------------------- accuracy ------------- */

/* Normwise bound of the computed transform (Higham, Accuracy and Stability of Numerical
 * Algorithms, 2nd ed., Thm 24.2, stage by stage, first order): with u = 2^-24, mu = u (each
 * twiddle component rounded once from a double within 2^-53: |w^ - w| <= u), gamma(k) = ku/(1-ku):
 *   a radix-2 stage (add, subtract, complex product of two fmas) adds eta2 = mu + gamma(4)(sqrt2 + mu),
 *   the pre-processing (two sums and a complex product) adds eta2 + 2u,
 *   the radix-5 stage (an 8-term fma chain per component, |sum| <= sqrt5 ||a||_2) adds 5 gamma(9),
 *   the scaling by f32(1/N) adds 2u (the constant's rounding and the product's),
 * so ||x^ - x||_2 <= (sum of the stages' terms) (1 + 1e-3) ||x||_2 for x = irfft(X), and every
 * |x^[n] - x[n]| is below that (the max norm is below the 2-norm). */
static double bound_factor(int n) {
  const double u = 0x1p-24, s2 = sqrt(2.0);
  double g4 = 4 * u / (1 - 4 * u), g9 = 9 * u / (1 - 9 * u), eta2 = u + g4 * (s2 + u), sum = eta2 + 2 * u + 2 * u;
  int L = n / 2;
  while (L % 2 == 0) sum += eta2, L /= 2;
  if (L == 5) sum += 5 * g9;
  return sum * (1 + 1e-3);
}

/* x = irfft(X) in float64, by the direct sum (DC and Nyquist imaginary parts ignored) */
static void dft(int n, const float *re, const float *im, double *x) {
  int L = n / 2;
  for (int t = 0; t < n; t++) {
    double acc = re[0] + ((t % 2) ? -1.0 : 1.0) * re[L];
    for (int k = 1; k < L; k++) {
      long ph = ((long)k * t) % n;
      double a = 2 * PI * (double)ph / n;
      acc += 2 * (re[k] * cos(a) - im[k] * sin(a));
    }
    x[t] = acc / n;
  }
}

static const int SIZES[] = { 256, 512, 1024, 1280, 2048 };

static void run_best(int n, float *re, float *im, float *y) {
  char form[32];
  snprintf(form, sizeof form, "irfft_n%d", n);
  fk_leaf leaf;
  fk_error err;
  cr_assert(fk_leaf_resolve(form, FK_TIER_EXACT, fk_cpu_features(), &leaf, &err) == FK_OK, "%s", err.message);
  float *work = malloc((size_t)(2 * n) * sizeof *work);
  cr_assert(work);
  /* every form has the same struct layout: re, im, y, work */
  fk_irfft_n256_args a = { re, im, y, work };
  leaf.fn(&a);
  free(work);
}

Test(irfft, within_the_float64_bound, .timeout = 120) {
  fkh_rng rng = { 0x64667431u };
  for (size_t si = 0; si < sizeof SIZES / sizeof SIZES[0]; si++) {
    int n = SIZES[si], h = n / 2 + 1;
    double worst = 0;
    for (int trial = 0; trial < 12; trial++) {
      float *re = malloc((size_t)h * 4), *im = malloc((size_t)h * 4), *y = malloc((size_t)n * 4);
      double *x = malloc((size_t)n * 8);
      cr_assert(re && im && y && x);
      int e = trial % 4 == 3 ? 40 : (trial % 4 == 2 ? -40 : 0);
      for (int k = 0; k < h; k++) re[k] = fkh_f32(&rng, e - 3, e + 3), im[k] = fkh_f32(&rng, e - 3, e + 3);
      if (trial == 5) for (int k = 0; k < h; k++) re[k] = im[k] = (k % 7 == 0) ? 1.0f : 0.0f;   /* sparse */
      run_best(n, re, im, y);
      dft(n, re, im, x);
      double norm = 0, maxerr = 0;
      for (int t = 0; t < n; t++) norm += x[t] * x[t], maxerr = fmax(maxerr, fabs((double)y[t] - x[t]));
      double b = bound_factor(n) * sqrt(norm);
      cr_assert(maxerr <= b, "N = %d trial %d: max error %.3g > bound %.3g", n, trial, maxerr, b);
      if (maxerr / b > worst) worst = maxerr / b;
      free(re), free(im), free(y), free(x);
    }
    cr_log_info("irfft N = %d: max error over 12 spectra %.4f of the derived bound (%.3g ||x||_2)", n, worst,
                bound_factor(n));
  }
}

/* FFTW-style self-tests on the stamps (each within twice the bound: two transforms compared). */
Test(irfft, selftests_linearity_impulse_shift, .timeout = 120) {
  fkh_rng rng = { 0x73656c66u };
  for (size_t si = 0; si < sizeof SIZES / sizeof SIZES[0]; si++) {
    int n = SIZES[si], h = n / 2 + 1;
    float *a = malloc((size_t)h * 16), *ya = malloc((size_t)n * 12);
    cr_assert(a && ya);
    float *ar = a, *ai = a + h, *br = a + 2 * h, *bi = a + 3 * h, *yb = ya + n, *yc = ya + 2 * n;
    for (int k = 0; k < h; k++) ar[k] = fkh_f32(&rng, -2, 1), ai[k] = fkh_f32(&rng, -2, 1), br[k] = fkh_f32(&rng, -2, 1),
                                bi[k] = fkh_f32(&rng, -2, 1);
    ai[0] = ai[h - 1] = bi[0] = bi[h - 1] = 0;
    /* linearity: irfft(0.5 A + 0.25 B) == 0.5 irfft(A) + 0.25 irfft(B) */
    float *cr = malloc((size_t)h * 8), *ci;
    cr_assert(cr);
    ci = cr + h;
    for (int k = 0; k < h; k++) cr[k] = 0.5f * ar[k] + 0.25f * br[k], ci[k] = 0.5f * ai[k] + 0.25f * bi[k];   /* exact: dyadic scales */
    run_best(n, ar, ai, ya);
    run_best(n, br, bi, yb);
    run_best(n, cr, ci, yc);
    double na = 0, nb = 0;
    for (int t = 0; t < n; t++) na += (double)ya[t] * ya[t], nb += (double)yb[t] * yb[t];
    double lb = 2 * bound_factor(n) * (0.5 * sqrt(na) + 0.25 * sqrt(nb)) * 1.01;
    for (int t = 0; t < n; t++)
      cr_assert(fabs(yc[t] - (0.5 * ya[t] + 0.25 * yb[t])) <= lb, "N = %d linearity at %d", n, t);
    /* impulse: X = delta_k -> x[t] = (2/N) cos(2 pi k t / N) (1/N for DC), and i delta_k -> -(2/N) sin */
    int ks[] = { 0, 1, n / 8, n / 2 - 1 };
    for (int q = 0; q < 4; q++) {
      for (int k = 0; k < h; k++) ar[k] = ai[k] = 0;
      ar[ks[q]] = 1;
      if (ks[q] > 0) ai[ks[q]] = 1;
      run_best(n, ar, ai, ya);
      double tol = bound_factor(n) * sqrt(2.0 / n) * 2 * 1.01;
      for (int t = 0; t < n; t++) {
        double ang = 2 * PI * (double)(((long)ks[q] * t) % n) / n;
        double want = ks[q] == 0 ? 1.0 / n : (2 * cos(ang) - 2 * sin(ang)) / n;
        cr_assert(fabs(ya[t] - want) <= tol, "N = %d impulse k = %d at t = %d: %a, want %a", n, ks[q], t, ya[t], want);
      }
    }
    /* time shift by s: X_k e^{2 pi i k s / N} gives x[t + s] */
    int s = n / 5 + 3;
    for (int k = 0; k < h; k++) ar[k] = fkh_f32(&rng, -2, 1), ai[k] = (k == 0 || k == h - 1) ? 0 : fkh_f32(&rng, -2, 1);
    run_best(n, ar, ai, ya);
    for (int k = 0; k < h; k++) {
      double ang = 2 * PI * (double)(((long)k * s) % n) / n;
      br[k] = (float)(ar[k] * cos(ang) - ai[k] * sin(ang));
      bi[k] = (float)(ar[k] * sin(ang) + ai[k] * cos(ang));
    }
    bi[0] = 0, bi[h - 1] = 0;   /* the Nyquist bin of a shift by s: real (+-X_L) */
    run_best(n, br, bi, yb);
    na = 0;
    for (int t = 0; t < n; t++) na += (double)ya[t] * ya[t];
    double st = (2 * bound_factor(n) + 4 * 0x1p-24) * sqrt(na) * 1.01;   /* + the rounding of the shifted inputs */
    for (int t = 0; t < n; t++)
      cr_assert(fabs(yb[t] - ya[(t + s) % n]) <= st, "N = %d shift %d at t = %d: %a vs %a", n, s, t, yb[t], ya[(t + s) % n]);
    free(a), free(ya), free(cr);
  }
}
