/* tests/leaves/cases_gemv.c: cases of the GEMV forms (f32, f32_bias, bf16_rne, bf16_rne_add).
 * Each case: w rows [0, row_end) of ldw elements (padding = sentinel NaN, so a wrong stride reads
 * NaN), m activation rows of x (ldx >= k, sentinel padding), the xs scratch, and a destination
 * pre-filled with a canary everywhere (slots outside (j, n) in [0, m) x [row_begin, row_end)
 * must keep it: a strided destination writes only its slots). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cases.h"
#include "flashkern.h"

typedef struct shape {
  int64_t k, row_begin, row_end, ldw, m, ldx, y_off, ldy;
} shape;

static shape sh(int64_t k, int64_t rb, int64_t re, int64_t m) {
  return (shape){ k, rb, re, k, m, k, 0, re };
}

int64_t fkt_gemv_xs_elems(int64_t m, int64_t k) { return m * ((k + 63) / 64 * 64); }

static int is_f32_out(const char *form) { return strncmp(form, "gemv_f32", 8) == 0; }

static fkh_call *gemv_case(fkt_list *l, const char *form, const char *name, shape s, fkh_rng *rng,
                           int wmin, int wmax, int xmin, int xmax) {
  fkh_call *c = fkt_push(l, form, name);
  fkh_set_i64(c, "k", s.k);
  fkh_set_i64(c, "ldw", s.ldw);
  fkh_set_i64(c, "ldx", s.ldx);
  fkh_set_i64(c, "m", s.m);
  fkh_set_i64(c, "row_begin", s.row_begin);
  fkh_set_i64(c, "row_end", s.row_end);
  fkh_set_i64(c, "y_off", s.y_off);
  fkh_set_i64(c, "ldy", s.ldy);
  uint16_t *w = fkh_set_buf(c, "w", (size_t)(s.row_end * s.ldw));
  for (int64_t n = 0; n < s.row_end; n++)
    for (int64_t i = 0; i < s.ldw; i++) w[n * s.ldw + i] = i < s.k ? fkh_bf16(rng, wmin, wmax) : 0x7fa5;
  float *x = fkh_set_buf(c, "x", (size_t)(s.m * s.ldx));
  for (int64_t j = 0; j < s.m; j++)
    for (int64_t i = 0; i < s.ldx; i++) x[j * s.ldx + i] = i < s.k ? fkh_f32(rng, xmin, xmax) : fkt_f32(0x7fa5a5a5u);
  fkh_set_buf(c, "xs", (size_t)fkt_gemv_xs_elems(s.m, s.k));
  size_t ny = (size_t)(s.y_off + (s.m - 1) * s.ldy + s.row_end);
  void *y = fkh_set_buf(c, "y", ny);
  for (size_t i = 0; i < ny; i++) {
    if (is_f32_out(form)) ((float *)y)[i] = fkt_f32(0x7fa5a5a5u);
    else ((uint16_t *)y)[i] = 0x7fa5;
  }
  if (fkh_field_index(c, "r") >= 0) {
    uint16_t *r = fkh_set_buf(c, "r", ny);
    for (size_t i = 0; i < ny; i++) r[i] = fkh_bf16(rng, -2, 2);
  }
  if (fkh_field_index(c, "bias") >= 0) {
    float *b = fkh_set_buf(c, "bias", (size_t)s.row_end);
    for (int64_t n = 0; n < s.row_end; n++) b[n] = fkh_f32(rng, -3, 1);
  }
  return c;
}

/* x = 2^24 at slot 0, -2^24 at slot `neg`, 1 at slot 1, 3 at slot `odd`, 0 elsewhere; w all 1
 * but row 1 negates slot `odd` and row 2 doubles slot 1 (three rows, three sums). With the
 * template's mapping slot 0 meets slot `neg` first and the 1 survives; any other tree or lane
 * mapping meets 2^24 with 1 first, which rounds the 1 away. */
static void cancel_case(fkt_list *l, const char *form, const char *name, int64_t k, int neg, int odd, fkh_rng *rng) {
  fkh_call *c = gemv_case(l, form, name, sh(k, 0, 3, 1), rng, 0, 0, 0, 0);
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

/* The packed (or blocked) counterpart of a row-major case: every field copied but w (packed by
 * the runtime's fk_gemv_pack or fk_gemv_pack_blocked) and ldw (gone); row_begin rounded down to a
 * whole group, as those forms require (the extra rows are computed like the others). */
void fkt_gemv_pack_call(const fkh_call *rm, const char *packed_form, fkh_call *out) {
  fkh_call_init(out, packed_form, rm->name);
  const fkh_form *from = &fkh_forms[rm->form], *to = &fkh_forms[out->form];
  for (int i = 0; i < to->nfields; i++) {
    const char *name = to->fields[i].name;
    int f = fkh_field_index(rm, name);
    if (!strcmp(name, "w")) continue;
    if (f < 0) { fprintf(stderr, "fkt: %s has no field %s\n", from->id, name); exit(2); }
    if (to->fields[i].kind == FK_FIELD_PTR) {
      fkh_buf_alloc(&out->v[i].buf, rm->v[f].buf.nbytes);
      memcpy(out->v[i].buf.alloc, rm->v[f].buf.alloc, rm->v[f].buf.nbytes + 2 * FKH_GUARD);
    } else {
      out->v[i] = rm->v[f];
    }
  }
  int64_t k = fkh_i64_of(rm, "k"), re = fkh_i64_of(rm, "row_end"), rb = fkh_i64_of(rm, "row_begin");
  int blocked = strstr(packed_form, "_blocked") != NULL;
  int64_t align = blocked ? FK_GEMV_BLOCK_ROWS * FK_GEMV_BLOCK_GROUP : FK_GEMV_PACK_ROWS;
  fkh_set_i64(out, "row_begin", rb / align * align);
  /* xs as the packed form's extent says (for m > 4 and k > FK_GEMV_GEMM_KBLOCK it holds the
   * rows' partial sums too) */
  fkh_set_buf(out, "xs", (size_t)fkh_extent(out, fkh_field_index(out, "xs")));
  size_t elems = blocked ? fk_gemv_blocked_elems(re > 0 ? re : 1, k) : fk_gemv_packed_elems(re > 0 ? re : 1, k);
  uint16_t *wp = fkh_set_buf(out, "w", elems);
  fk_error err;
  const uint16_t *w = (const uint16_t *)rm->v[fkh_field_index(rm, "w")].buf.data;
  fk_status st = FK_OK;
  if (re > 0) {
    st = blocked ? fk_gemv_pack_blocked(w, fkh_i64_of(rm, "ldw"), re, k, wp, elems, &err)
                 : fk_gemv_pack(w, fkh_i64_of(rm, "ldw"), re, k, wp, elems, &err);
  }
  if (st != FK_OK) {
    fprintf(stderr, "fkt: packing: %s\n", err.message);
    exit(2);
  }
}

/* The GEMM cases of the packed forms (m > 4: a prompt's rows, a detokenizer call's frames), built
 * on the row-major form RM_FORM (whose stamps take m <= 4) and then packed: every block size a
 * stamp may use (4, 6, 8 rows) whole, with each remainder, and more; a strided KV-slot
 * destination; rows from a later group; NaNs and a cancellation in rows past the first block;
 * seeded random shapes. Own generator: the GEMV cases keep their values. */
static void gemm_cases(fkt_list *l, const char *form) {
  fkh_rng rng = { 0x67656d6du };
  char name[96];
  static const int64_t ms[] = { 5, 6, 7, 8, 9, 11, 12, 13, 16, 17, 23, 24, 25 };
  for (size_t i = 0; i < sizeof ms / sizeof ms[0]; i++) {
    int64_t k = (int64_t[]){ 77, 64, 130, 1, 200 }[i % 5];
    snprintf(name, sizeof name, "gemm_m%lld_k%lld", (long long)ms[i], (long long)k);
    gemv_case(l, form, name, sh(k, 0, 6, ms[i]), &rng, -6, 0, -2, 2);
  }
  gemv_case(l, form, "gemm_frames50_k512", sh(512, 0, 5, 50), &rng, -8, -2, -2, 2);
  gemv_case(l, form, "gemm_lfm2_k1024_m13", sh(1024, 0, 3, 13), &rng, -10, -4, -2, 2);
  gemv_case(l, form, "gemm_row_begin_5_m9", sh(90, 5, 13, 9), &rng, -6, 0, -2, 2);
  /* k in several GEMM k blocks (FK_GEMV_GEMM_KBLOCK): the accumulators carried between them, a
   * padded last block, partial sums indexed from row_begin, rows of a later group */
  gemv_case(l, form, "gemm_kblocks_k2200_m13", sh(2200, 0, 9, 13), &rng, -8, 0, -2, 2);
  gemv_case(l, form, "gemm_kblocks_k1088_m6_rows4_11", sh(1088, 4, 11, 6), &rng, -8, 0, -2, 2);
  gemv_case(l, form, "gemm_kblocks_k2048_m25", sh(2048, 0, 5, 25), &rng, -10, -2, -2, 2);
  /* one lane of one chain across three k blocks: 2^24, then -2^24, then 1 (w = 1 there); a
   * partial sum restarted or dropped between blocks gives another value; a NaN in the second */
  fkh_call *ck = gemv_case(l, form, "gemm_kblocks_carry", sh(2100, 0, 3, 7), &rng, -12, -8, -1, 1);
  float *xk = fkh_buf_of(ck, "x");
  uint16_t *wk = fkh_buf_of(ck, "w");
  for (int j = 0; j < 7; j++) {
    float *xr = xk + 2100 * j;
    xr[5] = 16777216.0f, xr[1029] = -16777216.0f, xr[2053] = 1.0f;
  }
  for (int n = 0; n < 3; n++) wk[n * 2100 + 5] = wk[n * 2100 + 1029] = wk[n * 2100 + 2053] = 0x3f80;
  xk[2100 * 2 + 1500] = fkt_f32(0x7fc12345u);
  /* a K/V cache slot: rows j land ldy apart from a base offset */
  gemv_case(l, form, "gemm_strided_destination_m11", (shape){ 70, 2, 9, 70, 11, 75, 13, 21 }, &rng, -6, 0, -2, 2);
  /* NaNs in activation rows past the first block: a quiet one, a signalling one meeting a quiet
   * one in one lane, and inf - inf; every one stored as the canonical NaN */
  fkh_call *c = gemv_case(l, form, "gemm_nan_rows", sh(70, 0, 4, 15), &rng, -6, 0, -2, 2);
  float *x = fkh_buf_of(c, "x");
  uint16_t *w = fkh_buf_of(c, "w");
  x[70 * 6 + 3] = fkt_f32(0x7fc12345u);
  x[70 * 9 + 8] = fkt_f32(0xff812345u);
  w[70 + 8] = 0x7fc3;
  w[140 + 40] = 0x7f80, w[140 + 41] = 0xff80;
  x[70 * 13 + 40] = 1.0f, x[70 * 13 + 41] = 1.0f;
  /* cancellation in the last row of a block and the first of the next (see cancel_case) */
  c = gemv_case(l, form, "gemm_cancel_rows", sh(64, 0, 3, 14), &rng, 0, 0, 0, 0);
  x = fkh_buf_of(c, "x");
  w = fkh_buf_of(c, "w");
  for (int64_t i = 0; i < 3 * 64; i++) w[i] = 0x3f80;
  for (int j = 5; j <= 8; j++) {
    float *xr = x + 64 * j;
    for (int i = 0; i < 64; i++) xr[i] = 0.0f;
    xr[0] = 16777216.0f, xr[32] = -16777216.0f, xr[1] = 1.0f, xr[2] = 3.0f;
  }
  /* more weight rows than one group of 16 (a GEMM block's transposed epilogue reduces 16 rows'
   * sums together): groups from row_begin, whole and cut at row_end, an odd last row, with k
   * blocks; a cancellation in the tree of every row of 40: x = 2^24 at slot 0 (lane 0 of
   * chain 0), -2^24 at slot 16 (its lane 8), 1 at slot 2 (its lane 1) weighted by the row's own
   * n + 1; the halving tree meets lane 0 with lane 8 first and gives n + 1, a tree that meets
   * lane 0 with lane 1 first rounds an odd n + 1 away, and a row's sum landing in another row's
   * output shows; a NaN in row 17 */
  gemv_case(l, form, "gemm_rows_0_40_m7", sh(130, 0, 40, 7), &rng, -6, 0, -2, 2);
  gemv_case(l, form, "gemm_rows_4_37_m13", sh(77, 4, 37, 13), &rng, -6, 0, -2, 2);
  gemv_case(l, form, "gemm_rows_8_24_m6", sh(64, 8, 24, 6), &rng, -6, 0, -2, 2);
  gemv_case(l, form, "gemm_rows_4_21_m25", sh(200, 4, 21, 25), &rng, -6, 0, -2, 2);
  gemv_case(l, form, "gemm_kblocks_k1100_rows_4_29_m7", sh(1100, 4, 29, 7), &rng, -8, 0, -2, 2);
  /* the rows left after the whole blocks of a GEMM call, with the GEMM's k pieces (3 rows and
   * more) and epilogue: 4 of 16, 3 of 9, 5 of 11 */
  gemv_case(l, form, "gemm_kblocks_k2100_m16", sh(2100, 0, 9, 16), &rng, -8, 0, -2, 2);
  gemv_case(l, form, "gemm_kblocks_k1100_rows_4_29_m9", sh(1100, 4, 29, 9), &rng, -8, 0, -2, 2);
  gemv_case(l, form, "gemm_kblocks_k1500_rows_0_20_m11", sh(1500, 0, 20, 11), &rng, -8, 0, -2, 2);
  c = gemv_case(l, form, "gemm_cancel_rows_40", sh(64, 0, 40, 12), &rng, 0, 0, 0, 0);
  x = fkh_buf_of(c, "x");
  w = fkh_buf_of(c, "w");
  for (int64_t i = 0; i < 40 * 64; i++) w[i] = 0x3f80;
  for (int n = 0; n < 40; n++) {
    float wn = (float)(n + 1);
    uint32_t b;
    memcpy(&b, &wn, 4);
    w[64 * n + 2] = (uint16_t)(b >> 16);
  }
  for (int j = 0; j < 12; j++) {
    float *xr = x + 64 * j;
    for (int i = 0; i < 64; i++) xr[i] = 0.0f;
    xr[0] = 16777216.0f, xr[16] = -16777216.0f, xr[2] = 1.0f;
  }
  c = gemv_case(l, form, "gemm_nan_row_17", sh(96, 0, 35, 8), &rng, -6, 0, -2, 2);
  w = fkh_buf_of(c, "w");
  w[96 * 17 + 50] = 0x7f81;
  for (int i = 0; i < 40; i++) {
    int64_t k = fkh_range(&rng, 0, 9) < 7 ? fkh_range(&rng, 1, 200) : fkh_range(&rng, 200, 1100);
    int64_t rb = fkh_range(&rng, 0, 5), nr = fkh_range(&rng, 1, i % 2 ? 40 : 6), m = fkh_range(&rng, 5, 30);
    shape s = { k, rb, rb + nr, k + fkh_range(&rng, 0, 9), m, k + fkh_range(&rng, 0, 5), fkh_range(&rng, 0, 3), 0 };
    s.ldy = s.row_end + fkh_range(&rng, 0, 4);
    snprintf(name, sizeof name, "gemm_random_%d_k%lld_m%lld_rows%lld_%lld", i, (long long)k, (long long)m,
             (long long)rb, (long long)(rb + nr));
    gemv_case(l, form, name, s, &rng, -8, 0, -3, 3);
  }
}

int fkt_gemv_cases(const char *form, fkh_call **out) {
  const char *packed = strstr(form, "_packed");
  if (!packed) packed = strstr(form, "_blocked");
  if (packed) {
    /* the row-major cases of the same destination, with their weights packed; the packed forms
     * (not the blocked ones, m <= 4) also take the GEMM cases */
    char rm_form[64];
    snprintf(rm_form, sizeof rm_form, "%.*s", (int)(packed - form), form);
    fkh_call *rm;
    int n = fkt_gemv_cases(rm_form, &rm);
    fkt_list g = { 0 };
    if (strstr(form, "_packed")) gemm_cases(&g, rm_form);
    fkh_call *calls = calloc((size_t)(n + g.n), sizeof *calls);
    if (!calls) exit(2);
    for (int i = 0; i < n; i++) fkt_gemv_pack_call(&rm[i], form, &calls[i]);
    for (int i = 0; i < g.n; i++) fkt_gemv_pack_call(&g.calls[i], form, &calls[n + i]);
    fkt_free_cases(rm, n);
    fkt_free_cases(g.calls, g.n);
    *out = calls;
    return n + g.n;
  }
  fkt_list l = { 0 };
  fkh_rng rng = { 0x6e6d76u };
  char name[96];
  int add = strstr(form, "_add") != NULL;

  /* K around the tile (64 = 4 chains x 16 lanes) and single lanes, each m */
  static const int64_t ks[] = { 1, 2, 3, 15, 16, 17, 31, 32, 33, 63, 64, 65, 95, 127, 128, 129, 191 };
  for (size_t i = 0; i < sizeof ks / sizeof ks[0]; i++) {
    snprintf(name, sizeof name, "k%lld_m%d", (long long)ks[i], (int)(i % 4) + 1);
    gemv_case(&l, form, name, sh(ks[i], 0, 5, (int)(i % 4) + 1), &rng, -6, 0, -2, 2);
  }
  for (int m = 1; m <= 4; m++) {
    snprintf(name, sizeof name, "m%d", m);
    gemv_case(&l, form, name, sh(77, 0, 5, m), &rng, -6, 0, -2, 2);
  }
  gemv_case(&l, form, "row_begin_3", sh(50, 3, 8, 2), &rng, -6, 0, -2, 2);
  gemv_case(&l, form, "row_empty", sh(50, 4, 4, 1), &rng, -6, 0, -2, 2);
  gemv_case(&l, form, "ldw_ldx_gt_k", (shape){ 45, 1, 6, 53, 3, 50, 0, 6 }, &rng, -6, 0, -2, 2);
  /* a strided destination with a base offset (a K/V cache slot): rows j land ldy apart */
  gemv_case(&l, form, "strided_destination", (shape){ 70, 2, 9, 70, 4, 70, 13, 21 }, &rng, -6, 0, -2, 2);
  /* LFM2 widths and the longest reduction */
  static const int64_t lfm2[] = { 512, 1024, 2048, 4608, 8192 };
  for (size_t i = 0; i < sizeof lfm2 / sizeof lfm2[0]; i++) {
    snprintf(name, sizeof name, "lfm2_k%lld_m%d", (long long)lfm2[i], (int)(i % 4) + 1);
    gemv_case(&l, form, name, sh(lfm2[i], 0, 3, (int)(i % 4) + 1), &rng, -10, -4, -2, 2);
  }
  /* NaN with a payload, one source per output: payload bits must survive exactly */
  fkh_call *c = gemv_case(&l, form, "nan_x_quiet", sh(40, 0, 3, 2), &rng, -6, 0, -2, 2);
  ((float *)fkh_buf_of(c, "x"))[21] = fkt_f32(0x7fc12345u);
  c = gemv_case(&l, form, "nan_x_signaling", sh(40, 0, 3, 1), &rng, -6, 0, -2, 2);
  ((float *)fkh_buf_of(c, "x"))[33] = fkt_f32(0xff812345u);
  c = gemv_case(&l, form, "nan_w_row", sh(40, 0, 3, 1), &rng, -6, 0, -2, 2);
  ((uint16_t *)fkh_buf_of(c, "w"))[40 + 5] = 0x7fa1;     /* signaling bf16 NaN in row 1 */
  /* infinities: +inf alone -> +inf; +inf and -inf in one row -> a NaN of ISA-defined sign */
  c = gemv_case(&l, form, "inf", sh(40, 0, 3, 1), &rng, -6, 0, 0, 1);
  float *x = fkh_buf_of(c, "x");
  for (int i = 0; i < 40; i++) x[i] = x[i] < 0 ? -x[i] : x[i];
  uint16_t *w = fkh_buf_of(c, "w");
  w[3] = 0x7f80;
  w[40 + 7] = 0x7f80;
  w[40 + 30] = 0xff80;
  /* signed zeros: every product is -0 or +0; the accumulators start at +0 */
  c = gemv_case(&l, form, "signed_zero", sh(35, 0, 3, 1), &rng, -6, 0, -2, 2);
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
  /* the tail (K off the tile) with special accumulator lanes past K (the stamps add -0 there:
   * docs/design.md "Tails and padding"): every product -2^-200, which rounds to -0, so every
   * lane holds -0 before the tail and y is -0 (r and bias -0 too; +0 padding gives +0: caught by
   * FKC_TAIL_PADDED); +inf, or a NaN with a payload, only in a lane past K (a lane lost in the
   * tail gives a finite y: caught by FKC_TAIL_RESET) */
  static const int64_t tail_k[] = { 65, 100, 127, 191 };
  for (int i = 0; i < 4; i++) {
    snprintf(name, sizeof name, "tail_neg_zero_k%lld_m%d", (long long)tail_k[i], i + 1);
    c = gemv_case(&l, form, name, sh(tail_k[i], 0, 5, i + 1), &rng, -6, 0, -2, 2);
    w = fkh_buf_of(c, "w");
    x = fkh_buf_of(c, "x");
    for (int64_t e = 0; e < 5 * tail_k[i]; e++) w[e] = 0x8d80;                     /* -2^-100 */
    for (int64_t e = 0; e < (i + 1) * tail_k[i]; e++) x[e] = fkt_f32(0x0d800000u); /* 2^-100 */
    if (add) {
      uint16_t *r = fkh_buf_of(c, "r");
      for (int e = 0; e < 5 * (i + 1); e++) r[e] = 0x8000;                     /* ldy = 5 */
    }
    if (fkh_field_index(c, "bias") >= 0) {
      float *b = fkh_buf_of(c, "bias");
      for (int n = 0; n < 5; n++) b[n] = fkt_f32(0x80000000u);
    }
  }
  c = gemv_case(&l, form, "tail_inf_past_k", sh(67, 0, 3, 2), &rng, -6, 0, -2, 2);
  ((uint16_t *)fkh_buf_of(c, "w"))[5] = 0x7f80;        /* slot 5 of the tail tile lies past K = 67 */
  ((float *)fkh_buf_of(c, "x"))[5] = 1.0f;
  ((uint16_t *)fkh_buf_of(c, "w"))[67 + 5] = 0xff80;
  ((float *)fkh_buf_of(c, "x"))[67 + 5] = 1.0f;
  c = gemv_case(&l, form, "tail_nan_past_k", sh(70, 0, 3, 1), &rng, -6, 0, -2, 2);
  ((float *)fkh_buf_of(c, "x"))[9] = fkt_f32(0x7fc12345u);   /* slot 9 lies past K = 70 */
  /* subnormals: subnormal inputs and products that underflow */
  gemv_case(&l, form, "subnormal", sh(70, 0, 4, 2), &rng, -80, -60, -90, -70);
  gemv_case(&l, form, "subnormal_inputs", sh(70, 0, 4, 1), &rng, -133, -120, -2, 2);
  /* overflow to infinity in the f32 accumulation */
  c = gemv_case(&l, form, "overflow", sh(64, 0, 4, 1), &rng, 60, 64, 60, 64);
  /* exact RNE ties at the output: k = 1, products exact in f32 */
  c = gemv_case(&l, form, "ties", sh(1, 0, 6, 1), &rng, 0, 0, 0, 0);
  static const uint16_t tw[6] = { 0x3f80, 0x3fc0, 0xbf80, 0x4040, 0x0001, 0x3f80 };
  w = fkh_buf_of(c, "w");
  for (int n = 0; n < 6; n++) w[n] = tw[n];
  ((float *)fkh_buf_of(c, "x"))[0] = fkt_f32(0x3f808000u);    /* 1 + 2^-8 */
  if (add) {
    uint16_t *r = fkh_buf_of(c, "r");
    for (int n = 0; n < 6; n++) r[n] = 0;
    r[5] = 0x3f80;                                              /* 1 + (1 + 2^-8) */
  }
  /* cancellation: the result depends on which products meet first (see cancel_case) */
  cancel_case(&l, form, "cancel_tree", 16, 8, 3, &rng);       /* halving: slot 0 meets slot 8... */
  cancel_case(&l, form, "cancel_chains", 64, 32, 2, &rng);    /* chain 0 meets chain 2 only at the end */
  cancel_case(&l, form, "cancel_lanes", 64, 2, 3, &rng);      /* slots 0 and 2: lanes 0 and 1 of chain 0 */
  /* adversarial for the fast tier, which rounds x to bf16 first: x exactly halfway between
   * bf16 values, all products positive (the rounding errors add up); x just below a bf16 value
   * (RNE rounds up, a truncating rounding would be caught); bf16 subnormal weights among normal
   * ones (flushed to zero by the dot instructions); a huge cancellation (A >> |s|); partial
   * sums in the f32 subnormal range (flushed outputs). */
  c = gemv_case(&l, form, "fast_midpoints", sh(200, 0, 3, 2), &rng, -3, 0, 0, 3);
  x = fkh_buf_of(c, "x");
  w = fkh_buf_of(c, "w");
  for (int i = 0; i < 400; i++) x[i] = fkt_f32((fkt_bf16_of(x[i] < 0 ? -x[i] : x[i]) * 65536u) | 0x8000u);
  for (int i = 0; i < 600; i++) w[i] &= 0x7fff;
  c = gemv_case(&l, form, "fast_round_up", sh(130, 0, 3, 1), &rng, -3, 0, 0, 3);
  x = fkh_buf_of(c, "x");
  w = fkh_buf_of(c, "w");
  for (int i = 0; i < 130; i++) x[i] = fkt_f32((fkt_bf16_of(x[i] < 0 ? -x[i] : x[i]) * 65536u) | 0xf000u);
  for (int i = 0; i < 390; i++) w[i] &= 0x7fff;
  c = gemv_case(&l, form, "fast_flush", sh(96, 0, 4, 1), &rng, -3, 0, -2, 2);
  w = fkh_buf_of(c, "w");
  for (int i = 0; i < 384; i += 3) w[i] = (uint16_t)(0x0001 + (i % 0x7f) + (i % 2 ? 0x8000 : 0));
  c = gemv_case(&l, form, "fast_cancel", sh(128, 0, 3, 1), &rng, -1, 0, 8, 10);
  x = fkh_buf_of(c, "x");
  for (int i = 0; i < 64; i++) x[64 + i] = -x[i];
  w = fkh_buf_of(c, "w");
  for (int i = 0; i < 384; i++) w[i] = w[(i / 128) * 128 + (i % 64)];
  gemv_case(&l, form, "fast_subnormal_sums", sh(64, 0, 3, 1), &rng, -70, -64, -70, -64);
  if (add) {
    c = gemv_case(&l, form, "residual_special", sh(20, 0, 4, 1), &rng, -6, 0, -2, 2);
    uint16_t *r = fkh_buf_of(c, "r");
    r[0] = 0x7fc1;
    r[1] = 0xff80;
    r[2] = 0x7f80;
    r[3] = 0x8000;
  }
  if (fkh_field_index(c, "bias") >= 0) {
    c = gemv_case(&l, form, "bias_special", sh(20, 0, 4, 1), &rng, -6, 0, -2, 2);
    float *b = fkh_buf_of(c, "bias");
    b[0] = fkt_f32(0x7fc00123u);
    b[1] = fkt_f32(0xff800000u);
    b[2] = fkt_f32(0x80000000u);
    b[3] = fkt_f32(0x00000001u);
  }
  /* seeded random shapes */
  for (int i = 0; i < 220; i++) {
    int64_t k = fkh_range(&rng, 0, 9) < 7 ? fkh_range(&rng, 1, 260) : fkh_range(&rng, 260, 3000);
    int64_t rb = fkh_range(&rng, 0, 3), nr = fkh_range(&rng, 1, 6), m = fkh_range(&rng, 1, 4);
    shape s = { k, rb, rb + nr, k + fkh_range(&rng, 0, 9), m, k + fkh_range(&rng, 0, 5), fkh_range(&rng, 0, 3), 0 };
    s.ldy = s.row_end + fkh_range(&rng, 0, 4);
    snprintf(name, sizeof name, "random_%d_k%lld_m%lld_rows%lld_%lld", i, (long long)k, (long long)m, (long long)rb,
             (long long)(rb + nr));
    gemv_case(&l, form, name, s, &rng, -8, 0, -3, 3);
  }
  /* NaNs meeting NaNs (issue 18): where two meet, x86 keeps an operand by its position and AArch64
   * prefers a signalling one, and a NaN made by inf - inf or 0 * inf differs in sign; the exact
   * tier stores the canonical NaN whatever met. Rows of w against activation rows of x (k = 70:
   * two tiles): in one product (a quiet w times a signalling x and the reverse, negative NaNs), in
   * one lane of one chain (a quiet NaN accumulated, then a signalling one a tile later), across
   * chains (different NaNs meeting in the tree), NaN beside inf - inf and 0 * inf; then a NaN sum
   * meeting a NaN residual or bias. Own generator: the cases above keep their values. */
  {
    fkh_rng nrng = { 0x6e616e6du };
    c = gemv_case(&l, form, "nan_meet_lane", sh(70, 0, 6, 4), &nrng, -6, 0, -2, 2);
    w = fkh_buf_of(c, "w");
    x = fkh_buf_of(c, "x");
    w[5] = 0x7fc3;                                             /* row 0: quiet w ... */
    x[5] = fkt_f32(0x7f800001u), x[70 + 5] = fkt_f32(0xff812345u);   /* ... times signalling x */
    x[140 + 5] = fkt_f32(0x7fc12345u), x[210 + 5] = fkt_f32(0xffe54321u);
    w[70 + 9] = 0x7f81;                                        /* row 1: signalling w times quiet x */
    x[9] = fkt_f32(0x7fc12345u), x[70 + 9] = fkt_f32(0xffe54321u), x[140 + 9] = fkt_f32(0x7fa00003u);
    w[140 + 2] = 0xffd5, w[140 + 66] = 0xff85;                 /* row 2: one lane of chain 0, two tiles */
    x[210 + 2] = fkt_f32(0x7f800001u);
    w[210 + 0] = 0x7fc3, w[210 + 33] = 0xffa1;                 /* row 3: chains 0 and 3 */
    x[32] = fkt_f32(0xff800001u), x[70 + 1] = fkt_f32(0x7f812345u), x[140 + 63] = fkt_f32(0xffc00000u);
    w[280 + 3] = 0x7f80, w[280 + 35] = 0xff80;                 /* row 4: inf - inf beside a NaN */
    for (int j = 0; j < 4; j++) x[70 * j + 3] = 1.0f, x[70 * j + 35] = 1.0f;
    x[70 + 40] = fkt_f32(0x7fc12345u);
    w[350 + 7] = 0x7f80;                                       /* row 5: 0 * inf, then a NaN in x */
    for (int j = 0; j < 4; j++) x[70 * j + 7] = 0.0f;
    x[140 + 20] = fkt_f32(0x7f800001u);
    if (add || fkh_field_index(c, "bias") >= 0) {
      c = gemv_case(&l, form, "nan_meet_destination", sh(40, 0, 5, 2), &nrng, -6, 0, -2, 2);
      x = fkh_buf_of(c, "x");
      x[11] = fkt_f32(0x7fc12345u);          /* activation row 0: a quiet NaN sum in every row */
      x[40 + 17] = fkt_f32(0xffe54321u);     /* row 1: a negative one */
      if (add) {
        uint16_t *r = fkh_buf_of(c, "r");    /* y + y_off + j * ldy + n: ldy = row_end = 5 */
        static const uint16_t rn[10] = { 0x7f81, 0xffd5, 0xff85, 0x7fa1, 0x3f80, 0xff81, 0x7fc3, 0x7f80, 0xffa1, 0x0000 };
        for (int i = 0; i < 10; i++) r[i] = rn[i];
      } else {
        float *b = fkh_buf_of(c, "bias");
        static const uint32_t bn[5] = { 0x7f800001u, 0xffe54321u, 0xff812345u, 0x7fa00003u, 0x3f800000u };
        for (int i = 0; i < 5; i++) b[i] = fkt_f32(bn[i]);
      }
    }
  }
  *out = l.calls;
  return l.n;
}
