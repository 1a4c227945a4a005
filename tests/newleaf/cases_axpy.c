/* tests/leaves/cases_axpy.c: contract cases of templates/axpy.lua (the worked example of
 * docs/adding-a-leaf.md): every tail length of the 16-lane tile over 1..3 rows with padded
 * strides, zero rows and zero length, NaN payloads, infinities (and inf * 0 + y), signed zeros,
 * subnormals, RNE ties of the bf16 sum, and >= 200 seeded random shapes. */
#include <stdio.h>
#include <string.h>

#include "cases.h"

static int is_bf16(fkh_call *c) { return fkh_forms[c->form].fields[fkh_field_index(c, "y")].elem == FK_ELEM_BF16; }

/* rows x n random values (exponents in [emin, emax]), strides n + 1 and n + 2, the padding a
 * sentinel NaN the leaf must leave alone */
static fkh_call *axpy_case(fkt_list *l, const char *form, const char *name, int64_t n, int64_t rows, float alpha,
                           fkh_rng *rng, int emin, int emax) {
  fkh_call *c = fkt_push(l, form, name);
  const int64_t ldx = n + 1, ldy = n + 2, nr = rows ? rows : 1;
  fkh_set_i64(c, "n", n);
  fkh_set_i64(c, "rows", rows);
  fkh_set_i64(c, "ldx", ldx);
  fkh_set_i64(c, "ldy", ldy);
  fkh_set_f32(c, "alpha", alpha);
  float *x = fkh_set_buf(c, "x", (size_t)(nr * ldx));
  void *y = fkh_set_buf(c, "y", (size_t)(nr * ldy));
  for (int64_t k = 0; k < nr * ldx; k++) x[k] = k % ldx < n ? fkh_f32(rng, emin, emax) : fkt_f32(0x7fa5a5a5u);
  for (int64_t k = 0; k < nr * ldy; k++) {
    if (is_bf16(c)) ((uint16_t *)y)[k] = k % ldy < n ? fkh_bf16(rng, emin, emax) : 0x7fa5;
    else ((float *)y)[k] = k % ldy < n ? fkh_f32(rng, emin, emax) : fkt_f32(0x7fa5a5a5u);
  }
  return c;
}

/* one row: x[i] and y[i] (f32 patterns; a bf16 y takes the high half). Where NaNs meet (x86 and
 * AArch64 keep different ones) or are made (inf * 0, inf - inf: the ISAs' default NaNs differ in
 * sign), the leaf stores the canonical NaN, compared bit for bit like every other value. */
static void special(fkt_list *l, const char *form, const char *name, const uint32_t *xs, const uint32_t *ys, int n,
                    float alpha, fkh_rng *rng) {
  fkh_call *c = axpy_case(l, form, name, n, 1, alpha, rng, -2, 2);
  float *x = fkh_buf_of(c, "x");
  void *y = fkh_buf_of(c, "y");
  for (int i = 0; i < n; i++) {
    x[i] = fkt_f32(xs[i]);
    if (is_bf16(c)) ((uint16_t *)y)[i] = (uint16_t)(ys[i] >> 16);
    else ((float *)y)[i] = fkt_f32(ys[i]);
  }
}

int fkt_axpy_cases(const char *form, fkh_call **out) {
  fkt_list l = { 0 };
  fkh_rng rng = { 0x61787079u };
  char name[96];
  for (int64_t n = 1; n <= 48; n++) {
    snprintf(name, sizeof name, "n%lld_rows%lld", (long long)n, (long long)(1 + n % 3));
    axpy_case(&l, form, name, n, 1 + n % 3, 1.5f, &rng, -8, 8);
  }
  axpy_case(&l, form, "rows0", 20, 0, 2.0f, &rng, -4, 4);
  axpy_case(&l, form, "n0", 0, 2, 2.0f, &rng, -4, 4);
  /* NaN payloads (quiet and signalling) in x or in y, infinities, inf * 0, inf - inf, signed zeros;
   * then NaNs meeting in one element (quiet with quiet, quiet with signalling, negative payloads) */
  static const uint32_t xs[20] = { 0x7fc12345u, 0x7f812345u, 0x3f800000u, 0xffc00001u, 0x7f800000u, 0xff800000u,
                                   0x7f800000u, 0x00000000u, 0x80000000u, 0x80000000u, 0x00000001u, 0x80000001u,
                                   0x007fffffu, 0x3f800000u, 0xbf800000u, 0x7f7fffffu,
                                   0x7fc12345u, 0x7fc12345u, 0xff812345u, 0x7f800001u };
  static const uint32_t ys[20] = { 0x3f800000u, 0x3f800000u, 0x7fc54321u, 0x3f800000u, 0x3f800000u, 0x7f800000u,
                                   0xff800000u, 0x80000000u, 0x00000000u, 0x80000000u, 0x00000000u, 0x00000000u,
                                   0x00800000u, 0xff800000u, 0x7f800000u, 0x7f7f0000u,
                                   0x7fe54321u, 0xff810000u, 0x7fc50000u, 0xffa10000u };
  special(&l, form, "special_alpha1", xs, ys, 20, 1.0f, &rng);
  special(&l, form, "special_alpha0", xs, ys, 20, 0.0f, &rng);
  special(&l, form, "special_alpha_neg0", xs, ys, 20, -0.0f, &rng);
  special(&l, form, "special_alpha_inf", xs, ys, 20, fkt_f32(0x7f800000u), &rng);
  special(&l, form, "special_alpha_nan", xs, ys, 20, fkt_f32(0xff812345u), &rng);
  /* subnormal products and sums */
  axpy_case(&l, form, "subnormal", 37, 2, fkt_f32(0x00800000u), &rng, -30, -1);
  /* RNE ties of the bf16 sum: y = 1, x * alpha = 2^-8 (half an ulp of 1 in bf16) and 3 * 2^-8 */
  static const uint32_t tx[4] = { 0x3b800000u, 0x3c400000u, 0xbb800000u, 0x3b800001u };
  static const uint32_t ty[4] = { 0x3f800000u, 0x3f800000u, 0x3f810000u, 0x3f800000u };
  special(&l, form, "rne_ties", tx, ty, 4, 1.0f, &rng);
  for (int k = 0; k < 200; k++) {
    int64_t n = fkh_range(&rng, 1, 300), rows = fkh_range(&rng, 0, 4);
    snprintf(name, sizeof name, "random_%d_n%lld_rows%lld", k, (long long)n, (long long)rows);
    axpy_case(&l, form, name, n, rows, fkh_f32(&rng, -3, 3), &rng, -20, 20);
  }
  *out = l.calls;
  return l.n;
}
