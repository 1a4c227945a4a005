/* tests/leaves/cases_shortconv.c: contract cases of the ShortConv forms (templates/shortconv.lua). */
#include <stdio.h>
#include <string.h>

#include "cases.h"

enum { CANARY = 0x7fa5 };

typedef struct shape { int64_t h, m, pad_in, pad_y; int zero_carry; } shape;

/* in: m rows of [B | C | x] (row stride 3h + pad_in, padding = sentinel NaN); w: taps around
 * +-0.6; carry: random (or zeros, the start of a sequence); y pre-filled with the canary (row
 * stride h + pad_y). Values: sign, exponent in [emin, emax], random mantissa. */
static fkh_call *conv_case(fkt_list *l, const char *form, const char *name, shape s, fkh_rng *rng, int emin,
                           int emax) {
  fkh_call *c = fkt_push(l, form, name);
  int64_t ld_in = 3 * s.h + s.pad_in, ldy = s.h + s.pad_y, rows = s.m ? s.m : 1;
  fkh_set_i64(c, "h", s.h);
  fkh_set_i64(c, "m", s.m);
  fkh_set_i64(c, "ld_in", ld_in);
  fkh_set_i64(c, "ldy", ldy);
  uint16_t *in = fkh_set_buf(c, "in", (size_t)(rows * ld_in));
  for (int64_t i = 0; i < rows * ld_in; i++) in[i] = i % ld_in < 3 * s.h ? fkh_bf16(rng, emin, emax) : CANARY;
  uint16_t *w = fkh_set_buf(c, "w", (size_t)(3 * s.h));
  for (int64_t i = 0; i < 3 * s.h; i++) w[i] = fkh_bf16(rng, -3, 0);
  if (fkh_field_index(c, "bias") >= 0) {
    uint16_t *b = fkh_set_buf(c, "bias", (size_t)s.h);
    for (int64_t i = 0; i < s.h; i++) b[i] = fkh_bf16(rng, -4, 0);
  }
  uint16_t *carry = fkh_set_buf(c, "carry", (size_t)(2 * s.h));
  for (int64_t i = 0; i < 2 * s.h; i++) carry[i] = s.zero_carry ? 0 : fkh_bf16(rng, emin, emax);
  void *y = fkh_set_buf(c, "y", (size_t)(rows * ldy));
  int ywide = fkh_forms[c->form].fields[fkh_field_index(c, "y")].elem == FK_ELEM_F32;
  for (int64_t i = 0; i < rows * ldy; i++) {
    if (ywide) ((float *)y)[i] = fkt_f32(0x7fa5a5a5u);
    else ((uint16_t *)y)[i] = CANARY;
  }
  return c;
}

static uint16_t *part(fkh_call *c, int64_t row, int which) {   /* 0: B, 1: C, 2: x of row */
  int64_t h = fkh_i64_of(c, "h");
  return (uint16_t *)fkh_buf_of(c, "in") + row * fkh_i64_of(c, "ld_in") + which * h;
}

int fkt_shortconv_cases(const char *form, fkh_call **out) {
  fkt_list l = { 0 };
  fkh_rng rng = { 0x73636f6eu };
  char name[96];
  static const int64_t hs[] = { 1, 2, 7, 15, 16, 17, 31, 32, 33, 48, 100 };
  for (size_t i = 0; i < sizeof hs / sizeof hs[0]; i++)
    for (int64_t m = 0; m <= 4; m++) {
      snprintf(name, sizeof name, "h%lld_m%lld", (long long)hs[i], (long long)m);
      conv_case(&l, form, name, (shape){ hs[i], m, (int64_t)(i % 3), (int64_t)(i % 2), 0 }, &rng, -3, 3);
    }
  /* LFM2 widths (350M: 1024, 1.2B: 2048), prefill and decode, from a zero state */
  conv_case(&l, form, "lfm2_1024_prefill17", (shape){ 1024, 17, 0, 0, 1 }, &rng, -3, 3);
  conv_case(&l, form, "lfm2_2048_decode", (shape){ 2048, 1, 0, 0, 0 }, &rng, -3, 3);
  conv_case(&l, form, "lfm2_2048_prefill3", (shape){ 2048, 3, 5, 3, 1 }, &rng, -3, 3);

  /* NaN with a payload in x[0]: Bx[0] is NaN, so y of rows 0..2 and the carry hold it */
  fkh_call *c = conv_case(&l, form, "nan_x_quiet", (shape){ 20, 4, 0, 0, 0 }, &rng, -3, 3);
  part(c, 0, 2)[5] = 0x7fc3;
  c = conv_case(&l, form, "nan_b_signaling", (shape){ 20, 2, 1, 0, 0 }, &rng, -3, 3);
  part(c, 1, 0)[7] = 0xffa1;
  c = conv_case(&l, form, "nan_carry", (shape){ 20, 3, 0, 0, 0 }, &rng, -3, 3);
  ((uint16_t *)fkh_buf_of(c, "carry"))[3] = 0x7f81;         /* Bx[t-2]: row 0 only */
  ((uint16_t *)fkh_buf_of(c, "carry"))[20 + 4] = 0xffc5;    /* Bx[t-1]: rows 0 and 1 */
  /* infinities: B = inf meets x = 0 (0 * inf: the default NaN), and an infinite gate */
  c = conv_case(&l, form, "inf", (shape){ 18, 3, 0, 0, 0 }, &rng, -3, 3);
  part(c, 0, 0)[2] = 0x7f80;
  part(c, 0, 2)[2] = 0x0000;
  part(c, 1, 0)[9] = 0xff80;
  part(c, 2, 1)[11] = 0x7f80;
  /* signed zeros: B * x = -0; with no bias the conv starts from w0 * p2 (its sign kept) */
  c = conv_case(&l, form, "signed_zero", (shape){ 33, 3, 0, 0, 1 }, &rng, -3, 3);
  for (int64_t r = 0; r < 3; r++)
    for (int i = 0; i < 33; i++) part(c, r, i % 2 ? 0 : 2)[i] = (uint16_t)(i % 3 ? 0x8000 : 0);
  /* subnormal products and sums */
  conv_case(&l, form, "subnormal", (shape){ 40, 3, 0, 0, 0 }, &rng, -70, -60);
  conv_case(&l, form, "large", (shape){ 40, 3, 0, 0, 0 }, &rng, 40, 60);
  /* exact ties of each rounding: 1.5 * (1 + 2^-7) = 1.5 + 2^-7 + 2^-8 (to even: 1.515625)
   *   Bx:   B = 1.5, x = 1 + 2^-7
   *   conv: w = (0, 0, 1.5), Bx = 1 + 2^-7 (B = 1, x = 1 + 2^-7)
   *   y:    C = 1.5, conv = 1 + 2^-7 (w = (0, 0, 1), Bx = 1 + 2^-7) */
  for (int k = 0; k < 3; k++) {
    static const char *names[] = { "tie_bx", "tie_conv", "tie_gate" };
    c = conv_case(&l, form, names[k], (shape){ 3, 1, 0, 0, 1 }, &rng, -3, 3);
    uint16_t *w = fkh_buf_of(c, "w");
    for (int i = 0; i < 9; i++) w[i] = 0;
    w[6] = k == 1 ? 0x3fc0 : 0x3f80;
    part(c, 0, 0)[0] = k == 0 ? 0x3fc0 : 0x3f80;
    part(c, 0, 2)[0] = 0x3f81;
    part(c, 0, 1)[0] = k == 2 ? 0x3fc0 : 0x3f80;
    if (fkh_field_index(c, "bias") >= 0) ((uint16_t *)fkh_buf_of(c, "bias"))[0] = 0;
  }
  for (int i = 0; i < 210; i++) {
    int64_t h = fkh_range(&rng, 0, 9) < 8 ? fkh_range(&rng, 1, 200) : fkh_range(&rng, 200, 3000);
    shape s = { h, fkh_range(&rng, 1, 6), fkh_range(&rng, 0, 5), fkh_range(&rng, 0, 5), (int)fkh_range(&rng, 0, 1) };
    snprintf(name, sizeof name, "random_%d_h%lld_m%lld", i, (long long)h, (long long)s.m);
    conv_case(&l, form, name, s, &rng, -4, 4);
  }
  /* NaNs meeting NaNs (issue 18): x86 keeps an operand by its position, AArch64 prefers a
   * signalling NaN, inf - inf and 0 * inf differ in sign; the leaf stores the canonical NaN in y
   * and in the carry whatever met. Per channel (h = 40: a whole tile of 32 and a tail): B and x NaN
   * in one product (quiet with signalling both ways, negative payloads); the carry's Bx[t-2] and
   * Bx[t-1] NaN in one sum (the state); a NaN carry beside a NaN Bx; the bias NaN against a NaN
   * conv; the gate NaN against a NaN conv; inf * 0 beside a NaN. m = 1 and m = 3: with one row the
   * carry's Bx[t-1] moves to Bx[t-2] (a NaN there is stored canonical too). */
  {
    fkh_rng nrng = { 0x6e616e73u };
    for (int64_t m = 1; m <= 3; m += 2) {
      snprintf(name, sizeof name, "nan_meet_m%lld", (long long)m);
      fkh_call *c2 = conv_case(&l, form, name, (shape){ 40, m, 1, 2, 0 }, &nrng, -3, 3);
      uint16_t *carry = fkh_buf_of(c2, "carry");
      part(c2, 0, 0)[1] = 0x7fc3, part(c2, 0, 2)[1] = 0x7f81;     /* B quiet, x signalling */
      part(c2, 0, 0)[2] = 0xff85, part(c2, 0, 2)[2] = 0xffd5;     /* B signalling, x quiet */
      part(c2, 0, 0)[34] = 0x7fa1, part(c2, 0, 2)[34] = 0xff81;   /* both signalling (the tail) */
      carry[5] = 0x7fc3, carry[40 + 5] = 0xff85;                   /* p2 quiet, p1 signalling */
      carry[6] = 0xff81, carry[40 + 6] = 0x7fd1;                   /* p2 signalling, p1 quiet */
      carry[40 + 7] = 0x7f81, part(c2, 0, 0)[7] = 0xffc5;          /* p1 signalling, Bx NaN */
      carry[40 + 36] = 0xffa1;                                      /* a NaN p1 in the tail */
      part(c2, 0, 1)[9] = 0x7f81, carry[9] = 0xffd5;               /* gate signalling, conv NaN */
      part(c2, 0, 0)[10] = 0x7f80, part(c2, 0, 2)[10] = 0, carry[10] = 0x7fc3;   /* 0 * inf and a NaN */
      if (fkh_field_index(c2, "bias") >= 0) {
        uint16_t *b = fkh_buf_of(c2, "bias");
        b[5] = 0xff81, b[12] = 0x7f81, carry[12] = 0xffc5, b[37] = 0x7fc1, carry[37] = 0xff81;
      }
      if (m > 1) part(c2, 2, 2)[3] = 0x7f81, part(c2, 2, 0)[3] = 0xffc3;   /* row 2: one product */
    }
  }
  *out = l.calls;
  return l.n;
}
