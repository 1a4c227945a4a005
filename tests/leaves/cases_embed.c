/* tests/leaves/cases_embed.c: contract cases of the embedding forms (templates/embed.lua).
 *
 * gather_bf16(_wide): every d from 1 to 70 (each tail length of the 32- and 16-element tiles),
 * hidden sizes, ids at 0 and vocab - 1, repeated ids, padded table and output rows (the padding
 * holds the sentinel NaN, so a wrong stride shows), special values carried bit for bit.
 * codebook_mean(_x6), codebook_sum_bf16: the same d range, both code layouts (frame-major rows of 8 and liquid-audio's
 * (8, T)), codes at 0 and vocab - 1, NaN payloads (one per element, or several quiet ones: which
 * of two NaNs an add keeps differs between ISAs when one of them is signaling), inf - inf (the
 * ISA's default NaN), signed zeros (the sum starts at +0), subnormals, ties of the f32 adds, and
 * seeded random values whose sums depend on the order. */
#include <stdio.h>
#include <string.h>

#include "cases.h"

enum { CANARY16 = 0x7fa5, CODEBOOKS = 8, UPSAMPLE = 6 };
static const uint32_t CANARY32 = 0x7fa5a5a5u;

typedef struct shape { int64_t d, m, vocab, pad; int layout; } shape;   /* layout: 0 frame-major, 1 (8, T), 2 padded */

static int is_wide(const fkh_call *c) { return fkh_forms[c->form].fields[fkh_field_index(c, "y")].elem == FK_ELEM_F32; }
static int is_mean(const char *form) { return strstr(form, "codebook_") != NULL; }   /* mean and sum forms */
static int reps(const char *form) { return strstr(form, "_x6") ? UPSAMPLE : 1; }

/* y: rows x (d + 1), prefilled with the sentinel (what the leaf must leave: the padding). */
static void out_buf(fkh_call *c, int64_t rows, int64_t d) {
  int64_t ldy = d + 1, n = (rows ? rows : 1) * ldy;
  fkh_set_i64(c, "ldy", ldy);
  void *y = fkh_set_buf(c, "y", (size_t)n);
  for (int64_t i = 0; i < n; i++) {
    if (is_wide(c)) ((float *)y)[i] = fkt_f32(CANARY32);
    else ((uint16_t *)y)[i] = CANARY16;
  }
}

/* The table: rows x d bf16 values with exponents in [emin, emax], padding = sentinel. */
static uint16_t *table_buf(fkh_call *c, int64_t rows, int64_t d, int64_t pad, fkh_rng *rng, int emin, int emax) {
  int64_t ld = d + pad;
  fkh_set_i64(c, "ld_table", ld);
  uint16_t *t = fkh_set_buf(c, "table", (size_t)(rows * ld));
  for (int64_t r = 0; r < rows; r++)
    for (int64_t i = 0; i < ld; i++) t[r * ld + i] = i < d ? fkh_bf16(rng, emin, emax) : CANARY16;
  return t;
}

static fkh_call *gather_case(fkt_list *l, const char *form, const char *name, shape s, fkh_rng *rng, int emin, int emax) {
  fkh_call *c = fkt_push(l, form, name);
  fkh_set_i64(c, "d", s.d);
  fkh_set_i64(c, "m", s.m);
  table_buf(c, s.vocab, s.d, s.pad, rng, emin, emax);
  int32_t *ids = fkh_set_buf(c, "ids", (size_t)(s.m ? s.m : 1));
  for (int64_t j = 0; j < s.m; j++) ids[j] = (int32_t)fkh_range(rng, 0, s.vocab - 1);
  if (s.m > 0) ids[0] = 0;                                  /* both ends of the table */
  if (s.m > 1) ids[s.m - 1] = (int32_t)(s.vocab - 1);
  out_buf(c, s.m, s.d);
  return c;
}

/* codes[j * ld_codes + c * cb_stride] for the layout. */
static fkh_call *mean_case(fkt_list *l, const char *form, const char *name, shape s, fkh_rng *rng, int emin, int emax) {
  fkh_call *c = fkt_push(l, form, name);
  int64_t ldc = s.layout == 1 ? 1 : s.layout == 2 ? CODEBOOKS + 3 : CODEBOOKS;
  int64_t cbs = s.layout == 1 ? (s.m ? s.m : 1) : 1;
  int64_t ncodes = s.layout == 1 ? CODEBOOKS * cbs : (s.m ? s.m : 1) * ldc;
  fkh_set_i64(c, "d", s.d);
  fkh_set_i64(c, "m", s.m);
  fkh_set_i64(c, "vocab", s.vocab);
  fkh_set_i64(c, "ld_codes", ldc);
  fkh_set_i64(c, "cb_stride", cbs);
  table_buf(c, CODEBOOKS * s.vocab, s.d, s.pad, rng, emin, emax);
  int32_t *codes = fkh_set_buf(c, "codes", (size_t)ncodes);
  for (int64_t i = 0; i < ncodes; i++) codes[i] = -1;      /* padding: a code the leaf must not use */
  for (int64_t j = 0; j < s.m; j++)
    for (int64_t k = 0; k < CODEBOOKS; k++) {
      int64_t v = fkh_range(rng, 0, s.vocab - 1);
      if (j == 0) v = k % 2 ? s.vocab - 1 : 0;              /* both ends of every codebook */
      codes[j * ldc + k * cbs] = (int32_t)v;
    }
  out_buf(c, s.m * reps(form), s.d);
  return c;
}

static fkh_call *make(fkt_list *l, const char *form, const char *name, shape s, fkh_rng *rng, int emin, int emax) {
  return is_mean(form) ? mean_case(l, form, name, s, rng, emin, emax) : gather_case(l, form, name, s, rng, emin, emax);
}

/* Element i of the table row frame j's codebook k reads (mean forms), or of row ids[j]. */
static uint16_t *cell(fkh_call *c, int64_t j, int64_t k, int64_t i) {
  uint16_t *t = fkh_buf_of(c, "table");
  int64_t ld = fkh_i64_of(c, "ld_table");
  if (fkh_field_index(c, "codes") < 0) return &t[((const int32_t *)fkh_buf_of(c, "ids"))[j] * ld + i];
  const int32_t *codes = fkh_buf_of(c, "codes");
  int64_t code = codes[j * fkh_i64_of(c, "ld_codes") + k * fkh_i64_of(c, "cb_stride")];
  return &t[(k * fkh_i64_of(c, "vocab") + code) * ld + i];
}

/* Sets element i of every codebook row of frame j (mean) from vals[0..7]. */
static void set_frame(fkh_call *c, int64_t j, int64_t i, const uint16_t vals[CODEBOOKS]) {
  for (int k = 0; k < CODEBOOKS; k++) *cell(c, j, k, i) = vals[k];
}

/* Frame j reads code j of every codebook (vocab >= m), so values set through cell() for one
 * frame are not overwritten by another frame's. */
static void distinct_codes(fkh_call *c) {
  int32_t *codes = fkh_buf_of(c, "codes");
  int64_t m = fkh_i64_of(c, "m"), ldc = fkh_i64_of(c, "ld_codes"), cbs = fkh_i64_of(c, "cb_stride");
  for (int64_t j = 0; j < m; j++)
    for (int64_t k = 0; k < CODEBOOKS; k++) codes[j * ldc + k * cbs] = (int32_t)j;
}

static void mean_specials(fkt_list *l, const char *form, fkh_rng *rng) {
  shape s = { 37, 9, 12, 3, 0 };
  /* NaN payloads: one NaN per element (quiet or signaling, either sign), at each codebook */
  fkh_call *c = make(l, form, "nan_payloads", s, rng, -3, 3);
  distinct_codes(c);
  static const uint16_t nans[] = { 0x7fc1, 0xffc0, 0x7f81, 0xffa5, 0x7fff, 0xff80 + 0x0003 };
  for (int64_t j = 0; j < s.m; j++)
    for (int k = 0; k < CODEBOOKS; k++) *cell(c, j, k, (j * 8 + k) % s.d) = nans[(j + k) % 6];
  /* several quiet NaNs in one element: every ISA keeps the first (the running sum) */
  c = make(l, form, "nan_quiet_several", s, rng, -3, 3);
  distinct_codes(c);
  for (int64_t j = 0; j < s.m; j++) {
    uint16_t v[CODEBOOKS];
    for (int k = 0; k < CODEBOOKS; k++) v[k] = (uint16_t)(k % 3 == 0 ? (k % 2 ? 0xffc0 + k : 0x7fc0 + k) : 0x3f80 + k);
    set_frame(c, j, 5, v);
  }
  /* infinities: one sign keeps it; +inf and -inf make the ISA's default NaN */
  c = make(l, form, "inf", s, rng, -3, 3);
  distinct_codes(c);
  for (int64_t j = 0; j < s.m; j++) {
    *cell(c, j, (int)(j % 8), 1) = 0x7f80;
    *cell(c, j, (int)((j + 3) % 8), 2) = 0xff80;
    *cell(c, j, 0, 3) = 0x7f80;
    *cell(c, j, 7, 3) = 0xff80;
  }
  /* signed zeros: all -0 gives +0 (the sum starts at +0); mixes too */
  c = make(l, form, "signed_zero", s, rng, -3, 3);
  distinct_codes(c);
  for (int64_t j = 0; j < s.m; j++)
    for (int64_t i = 0; i < s.d; i++) {
      uint16_t v[CODEBOOKS];
      for (int k = 0; k < CODEBOOKS; k++) v[k] = (uint16_t)((i + j) % 3 == 0 ? 0x8000 : ((k + i) % 2 ? 0x8000 : 0));
      set_frame(c, j, i, v);
    }
  /* subnormal and tiny normal rows: computed, not flushed */
  make(l, form, "subnormal", s, rng, -133, -120);
  make(l, form, "near_overflow", s, rng, 125, 127);   /* the sum overflows to inf, or not */
  /* ties of the f32 adds: 1 + 2^-24 rounds to 1 (even); (1 + 2^-23) + 2^-24 to 1 + 2^-22 (even);
   * 2^-24 alone stays. (The divide by 8 is exact: a sum of bf16 values is a multiple of 2^-133,
   * so s / 8 is a multiple of 2^-136, above the subnormal step 2^-149, and cannot overflow.) */
  c = make(l, form, "ties", s, rng, -3, 3);
  distinct_codes(c);
  for (int64_t j = 0; j < s.m; j++) {
    static const uint16_t a[CODEBOOKS] = { 0x3f80, 0x3380, 0, 0, 0, 0, 0, 0 };
    static const uint16_t b[CODEBOOKS] = { 0x3f80, 0x3400, 0x3380, 0, 0, 0, 0, 0x8000 };
    static const uint16_t e[CODEBOOKS] = { 0x3380, 0x3f80, 0xbf80, 0, 0x3380, 0x4000, 0xc000, 0 };
    set_frame(c, j, 0, a);
    set_frame(c, j, 1, b);
    set_frame(c, j, 2, e);
  }
  /* every codebook row the same value: mean == that value (exact: 8x / 8 when 8x is finite) */
  c = make(l, form, "constant", s, rng, -3, 3);
  distinct_codes(c);
  for (int64_t j = 0; j < s.m; j++)
    for (int64_t i = 0; i < s.d; i++) {
      uint16_t v[CODEBOOKS], x = *cell(c, j, 0, i);
      for (int k = 0; k < CODEBOOKS; k++) v[k] = x;
      set_frame(c, j, i, v);
    }
}

static void gather_specials(fkt_list *l, const char *form, fkh_rng *rng) {
  shape s = { 45, 7, 9, 2, 0 };
  fkh_call *c = make(l, form, "specials", s, rng, -3, 3);
  static const uint16_t sp[] = { 0x7fc1, 0xffc0, 0x7f81, 0xffa5, 0x7f80, 0xff80, 0x0000, 0x8000,
                                 0x0001, 0x8001, 0x007f, 0x807f, 0x7f7f, 0xff7f };
  uint16_t *t = fkh_buf_of(c, "table");
  int64_t ld = fkh_i64_of(c, "ld_table");
  for (int64_t r = 0; r < s.vocab; r++)
    for (int64_t i = 0; i < s.d; i++) t[r * ld + i] = sp[(r * 5 + i) % 14];
  /* repeated ids, the whole table in order and reversed */
  c = make(l, form, "repeated_ids", (shape){ 33, 12, 3, 0, 0 }, rng, -3, 3);
  for (int j = 0; j < 12; j++) ((int32_t *)fkh_buf_of(c, "ids"))[j] = j % 2;
  c = make(l, form, "all_rows", (shape){ 64, 16, 16, 1, 0 }, rng, -3, 3);
  for (int j = 0; j < 16; j++) ((int32_t *)fkh_buf_of(c, "ids"))[j] = 15 - j;
}

int fkt_embed_cases(const char *form, fkh_call **out) {
  fkt_list l = { 0 };
  fkh_rng rng = { 0x656d6264u };
  char name[96];
  int mean = is_mean(form);

  /* every tail length of the 16- and 32-element tiles, and beyond one tile pair */
  for (int64_t d = 1; d <= 70; d++) {
    snprintf(name, sizeof name, "d%lld", (long long)d);
    make(&l, form, name, (shape){ d, 3, mean ? 5 : 11, d % 3, (int)(d % 3) }, &rng, -3, 3);
  }
  make(&l, form, "m_0", (shape){ 20, 0, 4, 0, 0 }, &rng, -3, 3);
  make(&l, form, "m_1", (shape){ 33, 1, 4, 1, 1 }, &rng, -3, 3);
  if (mean) {
    /* liquid-audio's shapes: d = 512, vocab 2048, codes (8, T) */
    make(&l, form, "detok_d512_T5", (shape){ 512, 5, 2048, 0, 1 }, &rng, -6, 2);
    make(&l, form, "detok_d512_frames", (shape){ 512, 3, 2048, 0, 0 }, &rng, -6, 2);
    mean_specials(&l, form, &rng);
  } else {
    make(&l, form, "hidden1024", (shape){ 1024, 3, 7, 0, 0 }, &rng, -6, 2);
    make(&l, form, "hidden2048", (shape){ 2048, 2, 5, 3, 0 }, &rng, -6, 2);
    gather_specials(&l, form, &rng);
  }
  /* seeded random shapes; wide exponent ranges make the f32 sums order-dependent */
  for (int i = 0; i < 210; i++) {
    int64_t d = fkh_range(&rng, 0, 9) < 8 ? fkh_range(&rng, 1, 200) : fkh_range(&rng, 200, 1100);
    shape s = { d, fkh_range(&rng, 1, 5), fkh_range(&rng, 1, mean ? 6 : 40), fkh_range(&rng, 0, 5), (int)fkh_range(&rng, 0, 2) };
    int spread = (int)fkh_range(&rng, 0, 3) * 8;
    snprintf(name, sizeof name, "random_%d_d%lld_m%lld_v%lld", i, (long long)d, (long long)s.m, (long long)s.vocab);
    make(&l, form, name, s, &rng, -4 - spread, 4 + spread);
  }
  /* NaNs meeting NaNs (issue 18). Mean and sum forms: in one element of one frame, a quiet NaN
   * then a signalling one a few codebooks later (the running sum's NaN meets it: x86 keeps the
   * sum's, AArch64 the signalling one's), both signs, two signalling ones, NaN beside inf - inf;
   * several such elements across the lanes of a tile and its tail. Gathers: a row of every kind
   * of NaN (quiet, signalling, both signs, payloads in every bit), copied as the canonical NaN. */
  {
    fkh_rng nrng = { 0x6e616e65u };
    fkh_call *c = make(&l, form, "nan_meet", (shape){ 41, 4, mean ? 6 : 5, 2, 1 }, &nrng, -3, 3);
    if (mean) {
      distinct_codes(c);
      static const uint16_t v[6][CODEBOOKS] = {
        { 0x3f80, 0x7fc3, 0x4000, 0x3f80, 0x7f81, 0x3f80, 0x3f80, 0x3f80 },   /* quiet, then signalling */
        { 0xff85, 0x3f80, 0x7fd1, 0x3f80, 0x3f80, 0x3f80, 0xffc1, 0x3f80 },   /* signalling first */
        { 0x3f80, 0x7fa1, 0x3f80, 0xff81, 0x3f80, 0x3f80, 0x3f80, 0x7fc1 },   /* two signalling */
        { 0x7f80, 0x3f80, 0xff80, 0x3f80, 0x7fc5, 0x3f80, 0xff81, 0x3f80 },   /* inf - inf, then NaNs */
        { 0xffc3, 0xffc5, 0x7fc1, 0x7f81, 0xff81, 0x7fff, 0xffff, 0x7f82 },   /* every codebook a NaN */
        { 0x3f80, 0x3f80, 0x3f80, 0x3f80, 0x3f80, 0x3f80, 0xffa1, 0x7f81 },   /* the last two codebooks */
      };
      for (int64_t j = 0; j < 4; j++)
        for (int e = 0; e < 6; e++) set_frame(c, j, (e * 7 + j * 3) % 41, v[(e + j) % 6]);
    } else {
      static const uint16_t nans[] = { 0x7fc0, 0xffc0, 0x7f81, 0xff81, 0x7fff, 0xffff, 0x7fa5, 0xffd5, 0x7f80, 0x7fc1 };
      uint16_t *t = fkh_buf_of(c, "table");
      const int64_t ld = fkh_i64_of(c, "ld_table");
      for (int64_t r = 0; r < 5; r++)
        for (int64_t i = 0; i < 41; i++) if ((i + r) % 3 != 1) t[r * ld + i] = nans[(i + 2 * r) % 10];
    }
  }
  *out = l.calls;
  return l.n;
}
