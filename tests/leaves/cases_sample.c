/* tests/leaves/cases_sample.c: contract cases of the sample forms (templates/sample.lua).
 * argmax: every length 1..48 (tiles and tails), LFM2's sizes (2049, 65536) and the largest
 * n (2^20); ties at the maximum (within a tile, across tiles, in the tail), +0 against -0,
 * NaNs (quiet, signaling, negative, with payloads; first, last, in the tail, several), +inf
 * (ties, against a NaN), all -inf, all equal, all negative (a tail lane read as 0 would win),
 * subnormals, and >= 200 seeded random shapes.
 * topk: n 1, 15, 16, 17, 1000, 65536 x top_k 0, 1, 2, 50, n, n + 5, -3 x T 0.5, 1, 1.7 (one T per k
 * at 65536); ties at the k-th (logits on a grid), every tail length 1..40, all equal, -inf (some,
 * all), NaN (some, all), +inf, +-0, subnormal and huge logits, a pair ordered differently by x / T
 * and x * (1 / T) (k = 1, 8 draws each), counters 0, 2^63 and wrapping at 2^64, n = 2^20, and 200
 * seeded random shapes (a quarter of them on an integer grid: ties). */
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

/* topk: a uniform f32 in [lo, hi) (24 random bits) */
static float uni(fkh_rng *r, float lo, float hi) {
  return lo + (hi - lo) * (float)(fkh_next(r) >> 40) * 0x1p-24f;
}

static float *topk_case(fkt_list *l, const char *name, int64_t n, int64_t k, float temp, uint64_t seed,
                        uint64_t counter, fkh_rng *rng) {
  fkh_call *c = fkt_push(l, "sample_topk", name);
  fkh_set_i64(c, "n", n);
  fkh_set_i64(c, "top_k", k);
  fkh_set_f32(c, "temperature", temp);
  float *x = fkh_set_buf(c, "x", (size_t)n);
  for (int64_t i = 0; i < n; i++) x[i] = uni(rng, -6.0f, 6.0f);
  uint64_t *st = fkh_set_buf(c, "state", 2);
  st[0] = seed, st[1] = counter;
  fkh_set_buf(c, "tok", 1);
  fkh_set_buf(c, "scratch", (size_t)n);
  return x;
}

/* A pair of logits a < b (or a == b) whose order under x / T differs from their order under
 * x * (1 / T) (one of the two ties them, or they swap): the k = 1 kept set differs, which the
 * reciprocal-temperature perturbation must show. Found by a deterministic search. */
static int recip_pair(float t, float *pa, float *pb) {
  static const float starts[] = { 1.0f, 1.25f, 1.5f, 1.75f, 3.25f, 5.5f, 7.0f };
  const float r = 1.0f / t;
  for (int st = 0; st < 7; st++) {
    float a = starts[st];
    for (int it = 0; it < 20000; it++, a = nextafterf(a, 8.0f)) {
      float b = a;
      for (int j = 0; j < 3; j++) {
        b = nextafterf(b, 8.0f);
        float qa = a / t, qb = b / t, ra = a * r, rb = b * r;
        int o1 = (qa > qb) - (qa < qb), o2 = (ra > rb) - (ra < rb);
        if (o1 != o2) {
          *pa = a, *pb = b;
          return 1;
        }
      }
    }
  }
  return 0;
}

static int topk_cases(fkt_list *lp, fkh_call **out) {
  fkt_list l = *lp;
  fkh_rng rng = { 0x746f706bu };
  char name[128];
  const float inf = fkt_f32(0x7f800000u), ninf = fkt_f32(0xff800000u), qnan = fkt_f32(0x7fc00000u);
  static const int64_t ns[] = { 1, 15, 16, 17, 1000, 65536 };
  static const float temps[] = { 0.5f, 1.0f, 1.7f };
  for (size_t a = 0; a < sizeof ns / sizeof ns[0]; a++) {
    const int64_t n = ns[a];
    const int64_t ks[] = { 0, 1, 2, 50, n, n + 5, -3 };
    for (size_t b = 0; b < sizeof ks / sizeof ks[0]; b++)
      for (size_t t = 0; t < 3; t++) {
        if (n == 65536 && t != (b % 3)) continue;   /* the big row: one temperature per k */
        snprintf(name, sizeof name, "n%lld_k%lld_t%g", (long long)n, (long long)ks[b], (double)temps[t]);
        topk_case(&l, name, n, ks[b], temps[t], 0x5eed0000u + a, 7 * b + t, &rng);
      }
  }
  /* ties at the k-th value: logits on a grid of 8 values, k at, inside and across the ties */
  for (int i = 0; i < 40; i++) {
    int64_t n = fkh_range(&rng, 1, 300), k = fkh_range(&rng, 1, n);
    snprintf(name, sizeof name, "ties_%d_n%lld_k%lld", i, (long long)n, (long long)k);
    float *x = topk_case(&l, name, n, k, temps[i % 3], 0x7135u, (uint64_t)i, &rng);
    for (int64_t j = 0; j < n; j++) x[j] = (float)fkh_range(&rng, -4, 3) * 0.75f;
  }
  for (int64_t n = 1; n <= 40; n++) {   /* every tail length, ties at the k-th (k = n / 2 + 1) */
    snprintf(name, sizeof name, "tail_len%lld", (long long)n);
    float *x = topk_case(&l, name, n, n / 2 + 1, 1.0f, 0x7a11u, (uint64_t)n, &rng);
    for (int64_t j = 0; j < n; j++) x[j] = (float)(j % 3);
  }
  float *x;
  for (int k = 0; k < 6; k++) {
    snprintf(name, sizeof name, "all_equal_k%d", k);
    x = topk_case(&l, name, 37, k * 7, 1.0f, 0xe9u, (uint64_t)k, &rng);
    for (int j = 0; j < 37; j++) x[j] = 0.25f;
  }
  /* -inf logits: some (kept when k >= n: weight 0, never drawn), all (uniform over all) */
  for (int k = 0; k < 4; k++) {
    snprintf(name, sizeof name, "ninf_some_k%d", k * 10);
    x = topk_case(&l, name, 45, k * 10, 1.0f, 0x11u, (uint64_t)k, &rng);
    for (int j = 0; j < 45; j += 2) x[j] = ninf;
    snprintf(name, sizeof name, "ninf_all_k%d", k * 10);
    x = topk_case(&l, name, 45, k * 10, 1.0f, 0x12u, (uint64_t)k, &rng);
    for (int j = 0; j < 45; j++) x[j] = ninf;
  }
  /* NaN logits count as -inf; +inf logits share the mass; -0 and +0 */
  for (int k = 0; k < 4; k++) {
    snprintf(name, sizeof name, "nan_some_k%d", k * 3);
    x = topk_case(&l, name, 33, k * 3, 0.5f, 0x13u, (uint64_t)k, &rng);
    x[0] = qnan, x[5] = fkt_f32(0xffc01234u), x[32] = fkt_f32(0x7f800001u);
    snprintf(name, sizeof name, "nan_all_k%d", k * 3);
    x = topk_case(&l, name, 33, k * 3, 0.5f, 0x14u, (uint64_t)k, &rng);
    for (int j = 0; j < 33; j++) x[j] = fkt_f32(0x7fc00000u + (uint32_t)j);
    snprintf(name, sizeof name, "pinf_k%d", k * 3);
    x = topk_case(&l, name, 33, k * 3, 1.7f, 0x15u, (uint64_t)k, &rng);
    x[3] = x[17] = x[30] = inf, x[8] = ninf, x[9] = qnan;
    snprintf(name, sizeof name, "signed_zero_k%d", k + 1);
    x = topk_case(&l, name, 20, k + 1, 1.0f, 0x16u, (uint64_t)k, &rng);
    for (int j = 0; j < 20; j++) x[j] = -1.0f - (float)j;
    x[4] = fkt_f32(0x80000000u), x[11] = 0.0f, x[15] = fkt_f32(0x80000000u);
  }
  /* subnormal logits (and quotients), huge logits overflowing x / T to inf */
  for (int k = 0; k < 3; k++) {
    snprintf(name, sizeof name, "subnormal_k%d", k * 4);
    x = topk_case(&l, name, 29, k * 4, temps[k], 0x17u, (uint64_t)k, &rng);
    for (int j = 0; j < 29; j++) x[j] = fkh_f32(&rng, -149, -127);
    x[7] = x[21] = fkt_f32(0x00000003u);
    snprintf(name, sizeof name, "huge_k%d", k * 4);
    x = topk_case(&l, name, 29, k * 4, 0.5f, 0x18u, (uint64_t)k, &rng);
    for (int j = 0; j < 29; j++) x[j] = fkh_f32(&rng, 120, 127);
  }
  /* x / T against x * (1 / T): a pair ordered differently by the two, k = 1, many draws */
  for (int t = 0; t < 3; t++) {
    static const float rt[] = { 1.7f, 0.3f, 3.0f };
    float pa, pb;
    if (!recip_pair(rt[t], &pa, &pb)) continue;
    for (int d = 0; d < 8; d++) {
      snprintf(name, sizeof name, "recip_t%g_draw%d", (double)rt[t], d);
      x = topk_case(&l, name, 19, 1, rt[t], 0xabcdu, (uint64_t)d, &rng);
      for (int j = 0; j < 19; j++) x[j] = -1.0f - (float)j;
      x[2] = pa, x[9] = pb;
    }
  }
  /* counters: zero, large, wrapping at 2^64; seeds: zero, all ones */
  static const uint64_t ctrs[] = { 0, 1, 0xffffffffffffffffull, 0xfffffffffffffffeull, 0x8000000000000000ull };
  for (int i = 0; i < 5; i++) {
    snprintf(name, sizeof name, "counter_%d", i);
    topk_case(&l, name, 100, 10, 1.0f, i % 2 ? 0xffffffffffffffffull : 0, ctrs[i], &rng);
  }
  /* the largest n */
  x = topk_case(&l, "n_max_2p20", (int64_t)1 << 20, 40, 0.7f, 0xb16u, 3, &rng);
  /* seeded random shapes */
  for (int i = 0; i < 200; i++) {
    int64_t n = i % 5 == 0 ? fkh_range(&rng, 1, 5000) : fkh_range(&rng, 1, 300);
    int64_t k = fkh_range(&rng, -1, n + 2);
    float temp = uni(&rng, 0.2f, 2.5f);
    snprintf(name, sizeof name, "random_%d_n%lld_k%lld", i, (long long)n, (long long)k);
    x = topk_case(&l, name, n, k, temp, fkh_next(&rng), fkh_next(&rng), &rng);
    if (i % 4 == 1)
      for (int64_t j = 0; j < n; j++) x[j] = (float)fkh_range(&rng, -3, 3);   /* many ties */
    if (i % 13 == 2) x[fkh_range(&rng, 0, n - 1)] = ninf;
  }
  /* NaNs meeting NaNs (issue 18): NaNs of every kind (quiet, signalling, both signs, payloads)
   * in several lanes of the tiles and the tail, against +inf and ties: NaN counts as -inf, so the
   * drawn token never is one; k = 0 (all kept), 3, and k past the non-NaN count */
  {
    fkh_rng nrng = { 0x6e616e74u };
    static const uint32_t nans[] = { 0x7fc12345u, 0xff812345u, 0x7f800001u, 0xffc00000u, 0x7fffffffu, 0xffa00003u };
    for (int k = 0; k <= 6; k += 3) {
      snprintf(name, sizeof name, "nan_meet_k%d", k == 6 ? 40 : k);
      x = topk_case(&l, name, 37, k == 6 ? 40 : k, 0.9f, 0x6e616eu + (uint64_t)k, 5, &nrng);
      for (int j = 0; j < 37; j += 2) x[j] = fkt_f32(nans[(j / 2) % 6]);
      x[7] = inf, x[33] = 2.0f, x[35] = 2.0f;
    }
  }
  *out = l.calls;
  return l.n;
}

int fkt_sample_cases(const char *form, fkh_call **out) {
  fkt_list l = { 0 };
  fkh_rng rng = { 0x73616d70u };
  char name[96];
  if (strcmp(form, "sample_topk") == 0) return topk_cases(&l, out);
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
  /* NaNs meeting NaNs (issue 18): NaNs of every kind in many lanes of one tile, in the tail and
   * across tiles (the max tree meets them): the first NaN's index, whatever its kind */
  {
    fkh_rng nrng = { 0x6e616e78u };
    static const uint32_t kinds[] = { 0xff812345u, 0x7fc12345u, 0x7f800001u, 0xffc00000u, 0x7fffffffu, 0xffa00003u };
    x = argmax_case(&l, form, "nan_meet", 45, &nrng, -4, 4);
    for (int j = 5; j < 45; j += 3) x[j] = fkt_f32(kinds[(j / 3) % 6]);
    x[2] = fkt_f32(0x7f800000u);
  }
  *out = l.calls;
  return l.n;
}
