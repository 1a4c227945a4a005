/* tests/leaves/cases_irfft.c: contract cases of the irfft forms: random spectra at several
 * scales, single bins (impulses in frequency), DC and Nyquist with imaginary parts (ignored),
 * NaN payloads, infinities, signed zeros, subnormals. */
#include <stdio.h>
#include <string.h>

#include "cases.h"

static int64_t n_of(const char *form) {
  int64_t n = 0;
  sscanf(strchr(form, 'n') ? strrchr(form, 'n') + 1 : "0", "%lld", (long long *)&n);
  return n;
}

static fkh_call *fft_case(fkt_list *l, const char *form, const char *name, fkh_rng *rng, int emin, int emax) {
  fkh_call *c = fkt_push(l, form, name);
  int64_t n = n_of(form), h = n / 2 + 1;
  float *re = fkh_set_buf(c, "re", (size_t)h), *im = fkh_set_buf(c, "im", (size_t)h);
  for (int64_t k = 0; k < h; k++) re[k] = fkh_f32(rng, emin, emax), im[k] = fkh_f32(rng, emin, emax);
  float *y = fkh_set_buf(c, "y", (size_t)n);
  for (int64_t i = 0; i < n; i++) y[i] = fkt_f32(0x7fa5a5a5u);
  fkh_set_buf(c, "work", (size_t)(2 * n));
  return c;
}

int fkt_irfft_cases(const char *form, fkh_call **out) {
  fkt_list l = { 0 };
  fkh_rng rng = { 0x69666674u };
  char name[96];
  const int64_t n = n_of(form), h = n / 2 + 1;
  for (int e = -20; e <= 20; e += 4) {
    snprintf(name, sizeof name, "random_e%d", e);
    fft_case(&l, form, name, &rng, e - 2, e + 2);
  }
  /* one bin at a time: cosines and sines of every frequency class (DC, Nyquist, k, L - k) */
  static const int ks[] = { 0, 1, 2, 3, 5, 16, 17, 100, 127 };
  for (size_t i = 0; i < sizeof ks / sizeof ks[0]; i++) {
    int64_t k = ks[i] < h ? ks[i] : h - 1;
    for (int part = 0; part < 2; part++) {
      snprintf(name, sizeof name, "bin%lld_%s", (long long)k, part ? "im" : "re");
      fkh_call *c = fft_case(&l, form, name, &rng, 0, 0);
      float *re = fkh_buf_of(c, "re"), *im = fkh_buf_of(c, "im");
      for (int64_t j = 0; j < h; j++) re[j] = im[j] = 0;
      (part ? im : re)[k] = 1.0f;
    }
  }
  fkh_call *c = fft_case(&l, form, "nyquist_and_dc_imag_ignored", &rng, -2, 2);
  ((float *)fkh_buf_of(c, "im"))[0] = fkt_f32(0x7fc12345u);
  ((float *)fkh_buf_of(c, "im"))[h - 1] = fkt_f32(0x7f800000u);
  c = fft_case(&l, form, "nan_bin", &rng, -2, 2);
  ((float *)fkh_buf_of(c, "re"))[7] = fkt_f32(0x7fc12345u);
  c = fft_case(&l, form, "inf_bin", &rng, -2, 2);
  ((float *)fkh_buf_of(c, "im"))[9] = fkt_f32(0xff800000u);
  c = fft_case(&l, form, "zeros", &rng, 0, 0);
  for (int64_t j = 0; j < h; j++) ((float *)fkh_buf_of(c, "re"))[j] = fkt_f32(j % 2 ? 0x80000000u : 0), ((float *)fkh_buf_of(c, "im"))[j] = fkt_f32(j % 3 ? 0x80000000u : 0);
  fft_case(&l, form, "subnormal", &rng, -149, -127);
  fft_case(&l, form, "large", &rng, 100, 110);
  for (int i = 0; i < 200; i++) {
    int e = (int)fkh_range(&rng, -30, 30);
    snprintf(name, sizeof name, "random_%d_e%d", i, e);
    fft_case(&l, form, name, &rng, e - 3, e + 3);
  }
  /* NaNs meeting NaNs (issue 18): NaN bins of every kind meet in the first butterfly (bin k with
   * bin N/2 - k: a quiet one against a signalling one, both signs) and in the later stages; an
   * infinite bin against a NaN and against the other infinity (inf - inf); every output NaN is
   * stored as the canonical 0x7fc00000 */
  {
    fkh_rng nrng = { 0x6e616e66u };
    c = fft_case(&l, form, "nan_meet", &nrng, -2, 2);
    float *re = fkh_buf_of(c, "re"), *im = fkh_buf_of(c, "im");
    re[3] = fkt_f32(0x7fc12345u), re[h - 1 - 3] = fkt_f32(0x7f800001u);
    im[5] = fkt_f32(0xff812345u), im[h - 1 - 5] = fkt_f32(0xffe54321u);
    re[11] = fkt_f32(0x7fa00003u), im[11] = fkt_f32(0x7fc00001u);
    re[20] = fkt_f32(0x7f800000u), re[h - 1 - 20] = fkt_f32(0xff800000u);
    im[30] = fkt_f32(0xff800000u), re[h - 1 - 30] = fkt_f32(0xff800001u);
    c = fft_case(&l, form, "nan_meet_made", &nrng, -2, 2);   /* invalid operations only */
    re = fkh_buf_of(c, "re");
    re[2] = fkt_f32(0x7f800000u), re[h - 1 - 2] = fkt_f32(0xff800000u), re[9] = fkt_f32(0xff800000u);
  }
  *out = l.calls;
  return l.n;
}
