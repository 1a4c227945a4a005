/* tests/leaves/cases_gemv.c: contract cases of the GEMV-RNE forms. */
#include <stdio.h>
#include <string.h>

#include "cases.h"

enum { PAD_BF16 = 0x7fa5, Y_CANARY = 0x7fa5 };

typedef struct shape { int64_t k, row_begin, row_end, ldw; } shape;

/* One call: w rows [0, row_end) of ldw elements (padding = sentinel NaN, so a wrong stride
 * reads NaN), x, y pre-filled with a canary (rows outside the range must keep it), r. */
static fkh_call *gemv_case(fkt_list *l, const char *form, const char *name, shape s, fkh_rng *rng,
                           int wmin, int wmax, int xmin, int xmax) {
  fkh_call *c = fkt_push(l, form, name);
  fkh_set_i64(c, "k", s.k);
  fkh_set_i64(c, "ldw", s.ldw);
  fkh_set_i64(c, "row_begin", s.row_begin);
  fkh_set_i64(c, "row_end", s.row_end);
  uint16_t *w = fkh_set_buf(c, "w", (size_t)(s.row_end * s.ldw));
  for (int64_t n = 0; n < s.row_end; n++)
    for (int64_t i = 0; i < s.ldw; i++) w[n * s.ldw + i] = i < s.k ? fkh_bf16(rng, wmin, wmax) : PAD_BF16;
  float *x = fkh_set_buf(c, "x", (size_t)s.k);
  for (int64_t i = 0; i < s.k; i++) x[i] = fkh_f32(rng, xmin, xmax);
  uint16_t *y = fkh_set_buf(c, "y", (size_t)s.row_end);
  for (int64_t n = 0; n < s.row_end; n++) y[n] = Y_CANARY;
  if (fkh_field_index(c, "r") >= 0) {
    uint16_t *r = fkh_set_buf(c, "r", (size_t)s.row_end);
    for (int64_t n = 0; n < s.row_end; n++) r[n] = fkh_bf16(rng, -2, 2);
  }
  return c;
}

static shape sh(int64_t k, int64_t rb, int64_t re) { return (shape){ k, rb, re, k }; }

/* x = 2^24 at slot 0, -2^24 at slot `neg`, 1 at slot 1, 3 at slot `odd`, 0 elsewhere; w all 1
 * but row 1 negates slot `odd` and row 2 doubles slot 1 (three rows, three sums). */
static void cancel_case(fkt_list *l, const char *form, const char *name, int64_t k, int neg, int odd, fkh_rng *rng) {
  fkh_call *c = gemv_case(l, form, name, sh(k, 0, 3), rng, 0, 0, 0, 0);
  float *x = fkh_buf_of(c, "x");
  uint16_t *w = fkh_buf_of(c, "w");
  for (int64_t i = 0; i < k; i++) x[i] = 0.0f;
  x[0] = 16777216.0f;
  x[neg] = -16777216.0f;
  x[1] = 1.0f;
  x[odd] = 3.0f;
  for (int64_t i = 0; i < 3 * k; i++) w[i] = 0x3f80;
  w[k + odd] = 0xbf80;
  w[2 * k + 1] = 0x4000;
}

int fkt_gemv_cases(const char *form, fkh_call **out) {
  fkt_list l = { 0 };
  fkh_rng rng = { 0x6e6d76u };
  char name[96];
  int add = strstr(form, "_add") != NULL;

  /* K around the tile (32 = 2 chains x 16 lanes) and single lanes */
  static const int64_t ks[] = { 1, 2, 3, 7, 15, 16, 17, 31, 32, 33, 47, 48, 63, 64, 65, 95, 96, 97 };
  for (size_t i = 0; i < sizeof ks / sizeof ks[0]; i++) {
    snprintf(name, sizeof name, "k%lld", (long long)ks[i]);
    gemv_case(&l, form, name, sh(ks[i], 0, 5), &rng, -6, 0, -2, 2);
  }
  /* row groups of 2 with remainders, and ranges not starting at 0 */
  for (int rows = 1; rows <= 5; rows++) {
    snprintf(name, sizeof name, "rows_%d", rows);
    gemv_case(&l, form, name, sh(77, 0, rows), &rng, -6, 0, -2, 2);
  }
  gemv_case(&l, form, "row_begin_3", sh(50, 3, 8), &rng, -6, 0, -2, 2);
  gemv_case(&l, form, "row_empty", sh(50, 4, 4), &rng, -6, 0, -2, 2);
  gemv_case(&l, form, "ldw_gt_k", (shape){ 45, 1, 6, 53 }, &rng, -6, 0, -2, 2);
  /* LFM2 widths and the longest reduction */
  static const int64_t lfm2[] = { 512, 1024, 2048, 4608, 8192 };
  for (size_t i = 0; i < sizeof lfm2 / sizeof lfm2[0]; i++) {
    snprintf(name, sizeof name, "lfm2_k%lld", (long long)lfm2[i]);
    gemv_case(&l, form, name, sh(lfm2[i], 0, 5), &rng, -10, -4, -2, 2);
  }
  /* NaN with a payload, one source per output: payload bits must survive exactly */
  fkh_call *c = gemv_case(&l, form, "nan_x_quiet", sh(40, 0, 3), &rng, -6, 0, -2, 2);
  ((float *)fkh_buf_of(c, "x"))[21] = fkt_f32(0x7fc12345u);
  c = gemv_case(&l, form, "nan_x_signaling", sh(40, 0, 3), &rng, -6, 0, -2, 2);
  ((float *)fkh_buf_of(c, "x"))[33] = fkt_f32(0xff812345u);
  c = gemv_case(&l, form, "nan_w_row", sh(40, 0, 3), &rng, -6, 0, -2, 2);
  ((uint16_t *)fkh_buf_of(c, "w"))[40 + 5] = 0x7fa1;     /* signaling bf16 NaN in row 1 */
  /* infinities: +inf alone -> +inf; +inf and -inf in one row -> a NaN of ISA-defined sign */
  c = gemv_case(&l, form, "inf", sh(40, 0, 3), &rng, -6, 0, 0, 1);
  float *x = fkh_buf_of(c, "x");
  for (int i = 0; i < 40; i++) x[i] = x[i] < 0 ? -x[i] : x[i];
  uint16_t *w = fkh_buf_of(c, "w");
  w[3] = 0x7f80;
  w[40 + 7] = 0x7f80;
  w[40 + 30] = 0xff80;
  c->nan_policy = FKH_NAN_DEFAULT;
  /* signed zeros: every product is -0 or +0; the accumulators start at +0 */
  c = gemv_case(&l, form, "signed_zero", sh(35, 0, 3), &rng, -6, 0, -2, 2);
  w = fkh_buf_of(c, "w");
  x = fkh_buf_of(c, "x");
  for (int i = 0; i < 35; i++) {
    w[i] = 0x8000;
    w[35 + i] = (uint16_t)(i % 2 ? 0x8000 : 0x0000);
    x[i] = (i % 3) ? -x[i] : x[i];
    w[70 + i] = 0x3f80;
    x[i] = i == 0 ? fkt_f32(0x80000000u) : x[i];
  }
  if (add) ((uint16_t *)fkh_buf_of(c, "r"))[2] = 0x8000;
  /* subnormals: subnormal inputs and products that underflow */
  gemv_case(&l, form, "subnormal", sh(70, 0, 4), &rng, -80, -60, -90, -70);
  gemv_case(&l, form, "subnormal_inputs", sh(70, 0, 4), &rng, -133, -120, -2, 2);
  /* overflow to infinity in the f32 accumulation */
  c = gemv_case(&l, form, "overflow", sh(64, 0, 4), &rng, 60, 64, 60, 64);
  c->nan_policy = FKH_NAN_DEFAULT;
  /* exact RNE ties at the output: k = 1, products exact in f32 */
  c = gemv_case(&l, form, "ties", sh(1, 0, 6), &rng, 0, 0, 0, 0);
  static const uint16_t tw[6] = { 0x3f80, 0x3fc0, 0xbf80, 0x4040, 0x0001, 0x3f80 };
  w = fkh_buf_of(c, "w");
  for (int n = 0; n < 6; n++) w[n] = tw[n];
  ((float *)fkh_buf_of(c, "x"))[0] = fkt_f32(0x3f808000u);    /* 1 + 2^-8 */
  if (add) {
    uint16_t *r = fkh_buf_of(c, "r");
    for (int n = 0; n < 6; n++) r[n] = 0;
    r[5] = 0x3f80;                                              /* 1 + (1 + 2^-8) */
  }
  /* cancellation: the result depends on which products meet first, so any other tree or lane
   * mapping gives another answer. cancel_tree (K = 16, chain 0 only): halving adds lane 0 to
   * lane 8 (2^24 - 2^24 = 0, then + 1); pairwise adds lane 0 to lane 1 (2^24 + 1 rounds to 2^24,
   * the 1 is lost). cancel_lanes (K = 32): slots 0 and 16 meet in lane 0 (chains 0 and 1);
   * an interleaved mapping would pair slots 0 and 1 instead. */
  cancel_case(&l, form, "cancel_tree", 16, 8, 3, &rng);
  cancel_case(&l, form, "cancel_lanes", 32, 16, 17, &rng);
  if (add) {
    c = gemv_case(&l, form, "residual_special", sh(20, 0, 4), &rng, -6, 0, -2, 2);
    uint16_t *r = fkh_buf_of(c, "r");
    r[0] = 0x7fc1;
    r[1] = 0xff80;
    r[2] = 0x7f80;
    r[3] = 0x8000;
  }
  /* seeded random shapes */
  for (int i = 0; i < 220; i++) {
    int64_t k = fkh_range(&rng, 0, 9) < 7 ? fkh_range(&rng, 1, 200) : fkh_range(&rng, 200, 3000);
    int64_t rb = fkh_range(&rng, 0, 3), nr = fkh_range(&rng, 1, 6);
    shape s = { k, rb, rb + nr, k + fkh_range(&rng, 0, 9) };
    snprintf(name, sizeof name, "random_%d_k%lld_rows%lld_%lld_ldw%lld", i, (long long)k, (long long)rb,
             (long long)(rb + nr), (long long)s.ldw);
    gemv_case(&l, form, name, s, &rng, -8, 0, -3, 3);
  }
  *out = l.calls;
  return l.n;
}
