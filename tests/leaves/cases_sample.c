/* tests/leaves/cases_sample.c: contract cases of the sample forms (templates/sample.lua).
 * argmax: every length 1..48 (tiles and tails), LFM2's sizes (2049, 65536) and the largest
 * n (2^20); ties at the maximum (within a tile, across tiles, in the tail), +0 against -0,
 * NaNs (quiet, signaling, negative, with payloads; first, last, in the tail, several), +inf
 * (ties, against a NaN), all -inf, all equal, all negative (a tail lane read as 0 would win),
 * subnormals, and >= 200 seeded random shapes. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cases.h"

static float *argmax_case(fkt_list *l, const char *form, const char *name, int64_t n, fkh_rng *rng, int emin,
                          int emax) {
  fkh_call *c = fkt_push(l, form, name);
  fkh_set_i64(c, "n", n);
  float *x = fkh_set_buf(c, "x", (size_t)n);
  for (int64_t i = 0; i < n; i++) x[i] = fkh_f32(rng, emin, emax);
  fkh_set_buf(c, "tok", 1);
  return x;
}

int fkt_sample_cases(const char *form, fkh_call **out) {
  fkt_list l = { 0 };
  fkh_rng rng = { 0x73616d70u };
  char name[96];
  if (strcmp(form, "sample_argmax") != 0) {
    *out = NULL;
    return 0;
  }
  const float inf = fkt_f32(0x7f800000u), ninf = fkt_f32(0xff800000u);
  for (int64_t n = 1; n <= 48; n++) {
    snprintf(name, sizeof name, "len%lld", (long long)n);
    argmax_case(&l, form, name, n, &rng, -4, 4);
    /* all negative: lanes past n must not count as 0 */
    snprintf(name, sizeof name, "negative_len%lld", (long long)n);
    float *x = argmax_case(&l, form, name, n, &rng, -4, 4);
    for (int64_t i = 0; i < n; i++) x[i] = -fabsf(x[i]) - 1.0f;
    /* the maximum in the last element, tied with the first */
    snprintf(name, sizeof name, "tie_first_last_len%lld", (long long)n);
    x = argmax_case(&l, form, name, n, &rng, -4, 4);
    x[0] = x[n - 1] = 100.0f;
    snprintf(name, sizeof name, "max_last_len%lld", (long long)n);
    x = argmax_case(&l, form, name, n, &rng, -4, 4);
    x[n - 1] = 1000.0f;
    snprintf(name, sizeof name, "nan_last_len%lld", (long long)n);
    x = argmax_case(&l, form, name, n, &rng, -4, 4);
    x[n - 1] = fkt_f32(0xffc01234u);
  }
  static const int64_t big[] = { 2049, 65536, 65535, 4097 };
  for (size_t k = 0; k < 4; k++) {
    snprintf(name, sizeof name, "vocab%lld", (long long)big[k]);
    argmax_case(&l, form, name, big[k], &rng, -8, 5);
    snprintf(name, sizeof name, "vocab%lld_ties", (long long)big[k]);
    float *x = argmax_case(&l, form, name, big[k], &rng, -8, 5);
    for (int j = 0; j < 5; j++) x[fkh_range(&rng, 0, big[k] - 1)] = 77.0f;
  }
  float *x = argmax_case(&l, form, "n_max_2p20", (int64_t)1 << 20, &rng, -8, 5);
  x[(1 << 20) - 1] = 1e30f;
  x = argmax_case(&l, form, "n_max_2p20_first", (int64_t)1 << 20, &rng, -8, 5);
  x[3] = 1e30f;
  x[(1 << 20) - 2] = 1e30f;
  /* +0 / -0: the maximum is 0, -0 at the lower index wins */
  x = argmax_case(&l, form, "signed_zero_neg_first", 37, &rng, -4, 4);
  for (int i = 0; i < 37; i++) x[i] = -1.0f - (float)i;
  x[20] = fkt_f32(0x80000000u), x[33] = 0.0f;
  x = argmax_case(&l, form, "signed_zero_pos_first", 37, &rng, -4, 4);
  for (int i = 0; i < 37; i++) x[i] = -1.0f - (float)i;
  x[5] = 0.0f, x[17] = fkt_f32(0x80000000u);
  x = argmax_case(&l, form, "all_zero_mixed", 50, &rng, -4, 4);
  for (int i = 0; i < 50; i++) x[i] = fkt_f32(i % 3 ? 0u : 0x80000000u);
  /* NaNs */
  static const uint32_t nans[] = { 0x7fc00000u, 0xffc00000u, 0x7f800001u, 0xff812345u, 0x7fffffffu };
  for (int k = 0; k < 5; k++) {
    snprintf(name, sizeof name, "nan_%08x_mid", nans[k]);
    x = argmax_case(&l, form, name, 100, &rng, -4, 4);
    x[41] = fkt_f32(nans[k]);
    x[60] = fkt_f32(nans[k] ^ 0x80000000u);
    x[7] = inf;
  }
  x = argmax_case(&l, form, "nan_first", 33, &rng, -4, 4);
  x[0] = fkt_f32(0x7fc00001u);
  x = argmax_case(&l, form, "nan_tail", 35, &rng, -4, 4);
  x[33] = fkt_f32(0xff800002u);
  x = argmax_case(&l, form, "all_nan", 21, &rng, -4, 4);
  for (int i = 0; i < 21; i++) x[i] = fkt_f32(0x7fc00000u + (uint32_t)i);
  /* infinities */
  x = argmax_case(&l, form, "pinf_ties", 70, &rng, -4, 4);
  x[50] = x[19] = x[66] = inf;
  x = argmax_case(&l, form, "all_ninf", 23, &rng, -4, 4);
  for (int i = 0; i < 23; i++) x[i] = ninf;
  x = argmax_case(&l, form, "ninf_but_one", 23, &rng, -4, 4);
  for (int i = 0; i < 23; i++) x[i] = ninf;
  x[22] = -1e38f;
  x = argmax_case(&l, form, "all_equal", 40, &rng, -4, 4);
  for (int i = 0; i < 40; i++) x[i] = 0.5f;
  x = argmax_case(&l, form, "subnormal", 31, &rng, -149, -127);
  x[9] = fkt_f32(0x00000002u), x[29] = fkt_f32(0x00000002u);
  x = argmax_case(&l, form, "huge", 31, &rng, 120, 127);
  x = argmax_case(&l, form, "one_ulp_apart", 64, &rng, -4, 4);
  for (int i = 0; i < 64; i++) x[i] = 3.0f;
  x[40] = fkt_f32(0x40400001u);
  x[12] = fkt_f32(0x40400000u);
  for (int i = 0; i < 220; i++) {
    int64_t n = i % 4 == 0 ? fkh_range(&rng, 1, 5000) : fkh_range(&rng, 1, 300);
    snprintf(name, sizeof name, "random_%d_n%lld", i, (long long)n);
    x = argmax_case(&l, form, name, n, &rng, -6, 6);
    if (i % 3 == 0) {
      /* ties at the maximum, drawn at random places */
      float mx = x[0];
      for (int64_t j = 1; j < n; j++) mx = x[j] > mx ? x[j] : mx;
      for (int j = 0; j < 3; j++) x[fkh_range(&rng, 0, n - 1)] = mx;
    }
    if (i % 17 == 5) x[fkh_range(&rng, 0, n - 1)] = fkt_f32(0x7fc00000u | (uint32_t)i);
  }
  *out = l.calls;
  return l.n;
}
