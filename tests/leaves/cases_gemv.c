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
/* A call of form `form` with every field of the row-major case rm but w (and ldw, which it lacks). */
static void call_but_w(const fkh_call *rm, const char *form, fkh_call *out) {
  fkh_call_init(out, form, rm->name);
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
}

void fkt_gemv_pack_call(const fkh_call *rm, const char *packed_form, fkh_call *out) {
  call_but_w(rm, packed_form, out);
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

/* ---- the quantized forms (gemv_q8_*, gemv_q4_*) ---------------------------------------------- */

/* Random GGUF blocks for row_end rows of k (a multiple of 32): every quant value, scales of random
 * sign and exponent (emin..emax), and among them -0, +0 and binary16 subnormals. */
static unsigned char *random_qblocks(fk_qformat f, int64_t rows, int64_t k, fkh_rng *rng, int emin, int emax) {
  size_t bb = f == FK_Q8 ? 34 : 18, nb = (size_t)(rows * k / 32);
  unsigned char *b = malloc(nb * bb);
  if (!b) exit(2);
  for (size_t i = 0; i < nb; i++) {
    unsigned char *blk = b + i * bb;
    for (size_t j = 2; j < bb; j++) blk[j] = (unsigned char)fkh_next(rng);
    int64_t pick = fkh_range(rng, 0, 15);
    uint16_t d = (uint16_t)((uint16_t)fkh_range(rng, emin + 15, emax + 15) << 10 | (uint16_t)fkh_range(rng, 0, 1023));
    if (pick == 0) d = 0x8000;                               /* -0 (ggml's all-zero Q4_0 block) */
    if (pick == 1) d = 0x0000;
    if (pick == 2) d = (uint16_t)fkh_range(rng, 1, 1023);    /* subnormal */
    if (fkh_range(rng, 0, 1)) d |= 0x8000;
    blk[0] = (unsigned char)d, blk[1] = (unsigned char)(d >> 8);
  }
  return b;
}

/* The quantized counterpart of a row-major case: every field copied but w and ldw; row_begin
 * rounded down to a whole group; w the packed layout (fk_q_pack) of `blocks` (GGUF blocks of
 * row_end rows), or of random blocks when blocks is NULL. */
static unsigned char *random_q4k(int64_t rows, int64_t k, fkh_rng *rng, int emin, int emax);

static void quant_call(const fkh_call *rm, const char *qform, fkh_call *out, const unsigned char *blocks,
                       fkh_rng *rng, int emin, int emax) {
  call_but_w(rm, qform, out);
  fk_qformat fmt = strstr(qform, "_q4k_") ? FK_Q4K : strstr(qform, "_q4_") ? FK_Q4 : FK_Q8;
  int64_t k = fkh_i64_of(rm, "k"), re = fkh_i64_of(rm, "row_end"), rb = fkh_i64_of(rm, "row_begin");
  fkh_set_i64(out, "row_begin", rb / FK_GEMV_PACK_ROWS * FK_GEMV_PACK_ROWS);
  fkh_set_buf(out, "xs", (size_t)fkh_extent(out, fkh_field_index(out, "xs")));
  size_t bytes = fk_q_packed_bytes(fmt, re > 0 ? re : 1, k);
  unsigned char *wp = fkh_set_buf(out, "w", bytes);
  if (re < 1) return;
  unsigned char *own = blocks ? NULL : fmt == FK_Q4K ? random_q4k(re, k, rng, emin, emax)
                                                     : random_qblocks(fmt, re, k, rng, emin, emax);
  fk_error err;
  if (fk_q_pack(fmt, blocks ? blocks : own, fk_q_gguf_bytes(fmt, re, k), re, k, wp, bytes, &err) != FK_OK) {
    fprintf(stderr, "fkt: %s: %s\n", rm->name, err.message);
    exit(2);
  }
  free(own);
}

/* Blocks of scale d16 (binary16) whose quants are the small integers `w` holds (row-major bf16,
 * |w| <= 7): the designed cases' weights, exactly. */
static unsigned char *integer_qblocks(fk_qformat f, const uint16_t *w, int64_t ldw, int64_t rows, int64_t k,
                                      uint16_t d16) {
  size_t bb = f == FK_Q8 ? 34 : 18, nb = (size_t)(k / 32);
  unsigned char *b = calloc((size_t)rows * nb, bb);
  if (!b) exit(2);
  for (int64_t r = 0; r < rows; r++)
    for (size_t blk = 0; blk < nb; blk++) {
      unsigned char *o = b + ((size_t)r * nb + blk) * bb;
      o[0] = (unsigned char)d16, o[1] = (unsigned char)(d16 >> 8);
      for (int i = 0; i < 32; i++) {
        int q = (int)fk_f32_from_bf16(w[r * ldw + (int64_t)blk * 32 + i]);
        if (f == FK_Q8) o[2 + i] = (unsigned char)(int8_t)q;
        else o[2 + i % 16] |= (unsigned char)((q + 8) << (i < 16 ? 0 : 4));
      }
    }
  return b;
}

/* The quantized forms' cases made for their fast tier (tests/contract/gemv_qfast.c: activations
 * quantized per block of 32, integer dots), each valid for the exact tier too; appended after the
 * cases below, with their own generator (the others keep their values). Each case's weights: random
 * blocks with scale exponents in [emin, emax] (random), or integer_qblocks of its w with scale d16. */
typedef struct qspec { int random, emin, emax; uint16_t d16; } qspec;
enum { QFAST_MAX = 32 };

static void quant_fast_cases(fkt_list *l, const char *rm_form, fk_qformat fmt, qspec *fs) {
  fkh_rng rng = { 0x71667374u };
  const int base = l->n;
  char name[96];
  fkh_call *c;
  float *x;
  uint16_t *w;
#define QF(spec_, name_, shape_) \
  do { \
    if (l->n - base >= QFAST_MAX) { \
      fprintf(stderr, "fkt: more fast-tier quantized cases than QFAST_MAX\n"); \
      exit(2); \
    } \
    fs[l->n - base] = (spec_); \
    c = gemv_case(l, rm_form, (name_), (shape_), &rng, -6, 0, -3, 3); \
  } while (0)
  const qspec rnd = { 1, -12, -2, 0 };
  /* k = 32: one block, the tile's second block padding (q 0, scale +0 on both sides); m 1..4 */
  for (int m = 1; m <= 4; m++) {
    snprintf(name, sizeof name, "q_fast_k32_m%d", m);
    QF(rnd, name, sh(32, 0, 6, m));
  }
  /* a GEMM (m 13) over a padded tile */
  QF(rnd, "q_fast_gemm_k96_m13", sh(96, 0, 9, 13));
  /* blocks of zeros (d = +0, every q 0): +0 and -0 mixed, all -0, and an activation row all zero */
  for (int m = 2; m <= 13; m += 11) {
    snprintf(name, sizeof name, "q_fast_zero_blocks_m%d", m);
    QF(rnd, name, sh(160, 0, 7, m));
    x = fkh_buf_of(c, "x");
    for (int j = 0; j < m; j++)
      for (int i = 0; i < 160; i++) {
        const int blk = i / 32;
        if (blk == 1 || blk == 3) x[j * 160 + i] = (i % 3) ? 0.0f : -0.0f;
        if (blk == 4 || j == 1) x[j * 160 + i] = -0.0f;
      }
  }
  /* activation scales in the f32 subnormal range (weights' scales large, 2^10 .. 65504, so that
   * d_w * d_x stays above the underflow): per block, amax = 2^-140 (d = fl(2^-140 / 127) = 2^-147,
   * x / d = 128: clamped to 127, and -128 to -127), amax 60 * 2^-149 (d = fl(amax / 127) = 0: div is
   * 2^-149 and q nonzero, d_x 0), amax 64 * 2^-149 (d = 2^-149 = div's floor), amax 2^-130 (d
   * subnormal, x / d just above 127), random subnormals, and normal x in activation row 2 only */
  for (int m = 3; m <= 13; m += 10) {
    snprintf(name, sizeof name, "q_fast_subnormal_x_m%d", m);
    QF(((qspec){ 1, 10, 15, 0 }), name, sh(192, 0, 5, m));
    x = fkh_buf_of(c, "x");
    for (int j = 0; j < m; j++) {
      float *xr = x + 192 * j;
      for (int i = 0; i < 192; i++) {
        const uint32_t sign = (uint32_t)(fkh_next(&rng) & 1) << 31, mant = (uint32_t)fkh_next(&rng);
        uint32_t u;
        switch (i / 32) {
        case 0: u = i % 32 == 0 ? 0x200u : i % 32 == 1 ? 0x80000200u : mant % 0x200u; break;     /* 2^-140 */
        case 1: u = i % 32 == 5 ? 60u : mant % 61u; break;                                    /* 60 * 2^-149 */
        case 2: u = i % 32 == 9 ? 64u : mant % 65u; break;                                    /* 64 * 2^-149 */
        case 3: u = i % 32 == 31 ? 0x00080000u : mant % 0x00080000u; break;                   /* 2^-130 */
        case 4: u = mant & 0x007fffffu; break;
        default: u = j == 2 ? 0x3f000000u + (mant & 0x00ffffffu) : mant % 1000u; break;
        }
        xr[i] = fkt_f32(u | (i % 32 <= 1 && i / 32 == 0 ? 0 : sign));
      }
    }
  }
  /* large |x|: one element of +-3e38 or FLT_MAX in a block of moderate ones (their quants 0, the
   * large one +-127: x / d at 127 within an ulp); weights' scales <= 2^-11 so that s = d_w * d_x and
   * the sums stay finite */
  for (int m = 1; m <= 4; m += 3) {
    snprintf(name, sizeof name, "q_fast_large_x_m%d", m);
    QF(((qspec){ 1, -14, -12, 0 }), name, sh(128, 0, 6, m));
    x = fkh_buf_of(c, "x");
    for (int j = 0; j < m; j++) {
      x[128 * j + 3 + j] = j % 2 ? -3e38f : 3e38f;
      x[128 * j + 64 + 7] = j == 3 ? -3.4028235e38f : 3.4028235e38f;
    }
  }
  /* the extreme quants: q8 weights of -128 (q4: -8) against activations at +-127 (a block of 127
   * and -127 exactly, d = 1): |isum| = 4 * 128 * 127 per lane, exact; scale 1 */
  for (int m = 2; m <= 13; m += 11) {
    snprintf(name, sizeof name, "q_fast_qmin_m%d", m);
    QF(((qspec){ 0, 0, 0, 0x3c00 }), name, sh(128, 0, 5, m));
    x = fkh_buf_of(c, "x");
    w = fkh_buf_of(c, "w");
    const int lo = fmt == FK_Q8 ? -128 : -8, hi = fmt == FK_Q8 ? 127 : 7;
    for (int n = 0; n < 5; n++)
      for (int i = 0; i < 128; i++) {
        int q = i < 64 && n != 4 ? lo : (int)fkh_range(&rng, lo, hi);
        w[128 * n + i] = fk_bf16_from_f32((float)q);
      }
    for (int j = 0; j < m; j++)
      for (int i = 0; i < 128; i++)
        x[128 * j + i] = i < 32 ? 127.0f : i < 64 ? (j % 2 ? -127.0f : 127.0f) : (float)fkh_range(&rng, -127, 127) * 0.5f;
  }
  /* every x just below the next integer of its block's grid (d = 1: x = q + 0.9, amax 127 exact),
   * positive weights and scales: to nearest rounds every x up (error 0.1), truncation down (0.9),
   * all in one direction: the bound gate sees a truncating quantizer
   * (perturb::gemv_q_fast_bound_sees_truncation) */
  QF(((qspec){ 0, 0, 0, 0x3c00 }), "q_fast_round_up", sh(128, 0, 4, 1));
  x = fkh_buf_of(c, "x");
  w = fkh_buf_of(c, "w");
  for (int i = 0; i < 128; i++) x[i] = i % 32 == 0 ? 127.0f : (float)fkh_range(&rng, 0, 125) + 0.9f;
  for (int i = 0; i < 4 * 128; i++) w[i] = fk_bf16_from_f32((float)(1 + i % 7));
  /* the float order (the fast tier's lanes hold isum * s, exact within a block: only sums across
   * blocks and tiles round). Scale 1 (d_w), k = 128; x: block 0 q -64 at d 2^13 (x[0] = 127 * 2^13 sets
   * it), block 1 q +64 at d 2^13, block 2 q 1 at d 1 (x[95] = 127), block 3 zeros. Rows 0..2 (the
   * tree): q_w -8 at block 0's k 1, 3, 5, 7 (all in lane 4: +2^24), at block 1's k 16..22 even (lane
   * 10: -2^24), n + 1 at block 2's k 8 (lane 1): the halving tree meets lane 4 with lane 10 before lane
   * 1 and gives n + 1; a pairwise tree adds n + 1 to 2^24 first (0, 2, 4). Rows 3..5 (the lanes): -8 at
   * block 0's k 1, 3, 5, 7 (lane 4), n - 2 at block 2's k 1 (lane 4 again, a tile later: 2^24 + n - 2
   * rounds to 2^24, 2^24 + 2, 2^24 + 4), -8 at block 1's k 33, 35, 37, 39 (lane 12: -2^24): 0, 2, 4;
   * a mapping that spreads block 0's four over two lanes (k = 64t + 4l + i) keeps n - 2 whole */
  for (int m = 1; m <= 13; m += 12) {
    snprintf(name, sizeof name, "q_fast_cancel_m%d", m);
    QF(((qspec){ 0, 0, 0, 0x3c00 }), name, sh(128, 0, 6, m));
    x = fkh_buf_of(c, "x");
    w = fkh_buf_of(c, "w");
    for (int j = 0; j < m; j++)
      for (int i = 0; i < 128; i++)
        x[128 * j + i] = i == 0 ? 127.0f * 8192.0f : i < 32 ? -64.0f * 8192.0f : i == 32 ? 127.0f * 8192.0f
                       : i < 64 ? 64.0f * 8192.0f : i == 95 ? 127.0f : i < 96 ? 1.0f : 0.0f;
    for (int i = 0; i < 6 * 128; i++) w[i] = 0;
    for (int n = 0; n < 6; n++) {
      uint16_t *wr = w + 128 * n;
      for (int i = 1; i <= 7; i += 2) wr[i] = fk_bf16_from_f32(-8.0f);
      if (n < 3) {
        for (int i = 48; i <= 54; i += 2) wr[i] = fk_bf16_from_f32(-8.0f);
        wr[64 + 8] = fk_bf16_from_f32((float)(n + 1));
      } else {
        for (int i = 33; i <= 39; i += 2) wr[i] = fk_bf16_from_f32(-8.0f);
        wr[64 + 1] = fk_bf16_from_f32((float)(n - 2));
      }
    }
  }
  /* non-finite x: activation row 0 holds an inf, row 1 a NaN: every output of those rows is NaN (their
   * block scale is NaN), row 2 is finite */
  QF(rnd, "q_fast_nonfinite_rows", sh(96, 0, 5, 3));
  x = fkh_buf_of(c, "x");
  x[40] = fkt_f32(0x7f800000u);
  x[96 + 70] = fkt_f32(0x7fc12345u);
  /* a lone activation row's passes on either side of the AVX-512 variant's hardware-stream bound
   * (t.tune.stream_hw: k padded to 2944 streams without software prefetch, 3008 prefetches), and
   * the lone row after a block of 4 (m 5), 9 rows: two groups and one row */
  QF(rnd, "q_fast_stream_k2944_m1", sh(2944, 0, 9, 1));
  QF(rnd, "q_fast_stream_k2976_m1", sh(2976, 0, 9, 1));
  QF(rnd, "q_fast_stream_k3008_m5", sh(3008, 0, 9, 5));
  /* a lone row's passes over two groups at once (avx512vnni), one group from each half of the rows:
   * rows 4..20 (halves of 8 rows: groups 4 and 12, 8 and 16; then rows 20, 21 one at a time), rows
   * 0..8 (groups 0 and 4; row 8), rows 0..38 (four passes, groups 0-12 with 16-28; then group 32
   * alone and three rows), and a reversed range (row_end < row_begin: nothing is read or written) */
  QF(rnd, "q_fast_lone_k1088_rows4_21", sh(1088, 4, 21, 1));
  QF(rnd, "q_fast_lone_k1024_rows0_9", sh(1024, 0, 9, 1));
  QF(rnd, "q_fast_lone_k64_rows0_39", sh(64, 0, 39, 1));
  QF(rnd, "q_fast_lone_rows_reversed", sh(64, 8, 4, 1));
  /* q4's passes over two groups for 2-3 activation rows (AVX-512), from the two halves likewise */
  QF(rnd, "q_fast_halves_k96_rows4_39_m2", sh(96, 4, 39, 2));
  QF(rnd, "q_fast_halves_k1088_rows0_21_m3", sh(1088, 0, 21, 3));
  QF(rnd, "q_fast_halves_rows_reversed_m2", sh(64, 12, 4, 2));
#undef QF
}

/* The quantized forms' cases: GEMV (m 1..4) and GEMM shapes with k a multiple of 32 (a padded
 * tile: k = 32 mod 64), row ranges from later groups, strided destinations, NaN and inf in x,
 * and a cancellation that only the template's lane mapping and tree keep (cancel_case, with
 * integer weights of scale 1); then the cases made for the fast tier (quant_fast_cases, q_fast_*),
 * which both tiers run. */
static int quant_cases(const char *form, fkh_call **out) {
  char rm_form[64], name[96];
  const char *q = strstr(form, "_q8_") ? "_q8_" : "_q4_";
  snprintf(rm_form, sizeof rm_form, "%.*s_%s", (int)(strstr(form, q) - form), form, strstr(form, q) + 4);
  fk_qformat fmt = !strcmp(q, "_q8_") ? FK_Q8 : FK_Q4;
  fkt_list l = { 0 };
  fkh_rng rng = { 0x71756e74u };
  static const int64_t ks[] = { 32, 64, 96, 160, 224, 1024, 2080 };
  for (size_t i = 0; i < sizeof ks / sizeof ks[0]; i++)
    for (int m = 1; m <= 4; m++) {
      snprintf(name, sizeof name, "q_k%lld_m%d", (long long)ks[i], m);
      gemv_case(&l, rm_form, name, sh(ks[i], 0, 5 + m, m), &rng, -6, 0, -2, 2);
    }
  gemv_case(&l, rm_form, "q_row_begin_5", sh(96, 5, 11, 2), &rng, -6, 0, -2, 2);
  gemv_case(&l, rm_form, "q_row_empty", sh(64, 4, 4, 1), &rng, -6, 0, -2, 2);
  gemv_case(&l, rm_form, "q_strided_destination", (shape){ 96, 2, 9, 96, 4, 100, 13, 21 }, &rng, -6, 0, -2, 2);
  /* a lone row's exact pass over two groups at once (AVX-512 q8, tuning exact_groups): k in pieces
   * of 4 tiles, the last one 3, 2 or 1 tiles (k 448: a piece and 3; 384: a piece and 2; 2080: 8
   * pieces and 1, its tile padded), the groups from the halves of rows 4..29 (groups 4-12 with
   * 16-24, then rows 28, 29 a group), 0..15 (two pairs) and 0..12 (one pair, then rows 8..12 a
   * group at a time) */
  gemv_case(&l, rm_form, "q_two_k448_rows4_30", sh(448, 4, 30, 1), &rng, -6, 0, -2, 2);
  gemv_case(&l, rm_form, "q_two_k384_rows0_16", sh(384, 0, 16, 1), &rng, -6, 0, -2, 2);
  gemv_case(&l, rm_form, "q_two_k2080_rows0_13", sh(2080, 0, 13, 1), &rng, -6, 0, -2, 2);
  static const int64_t ms[] = { 5, 6, 7, 8, 9, 12, 13, 16, 17, 24, 25, 50 };
  for (size_t i = 0; i < sizeof ms / sizeof ms[0]; i++) {
    int64_t k = (int64_t[]){ 64, 96, 512, 1088, 2080, 160 }[i % 6];
    snprintf(name, sizeof name, "q_gemm_m%lld_k%lld", (long long)ms[i], (long long)k);
    gemv_case(&l, rm_form, name, sh(k, 0, i % 2 ? 40 : 7, ms[i]), &rng, -6, 0, -2, 2);
  }
  gemv_case(&l, rm_form, "q_gemm_rows_4_37_m13", sh(96, 4, 37, 13), &rng, -6, 0, -2, 2);
  gemv_case(&l, rm_form, "q_gemm_strided_destination_m11", (shape){ 64, 2, 9, 64, 11, 70, 13, 21 }, &rng, -6, 0, -2, 2);
  fkh_call *c = gemv_case(&l, rm_form, "q_nan_inf_x", sh(96, 0, 6, 3), &rng, -6, 0, -2, 2);
  float *x = fkh_buf_of(c, "x");
  x[17] = fkt_f32(0x7fc12345u), x[96 + 40] = fkt_f32(0xff812345u), x[192 + 5] = fkt_f32(0x7f800000u);
  c = gemv_case(&l, rm_form, "q_gemm_nan_rows", sh(64, 0, 4, 15), &rng, -6, 0, -2, 2);
  x = fkh_buf_of(c, "x");
  x[64 * 6 + 3] = fkt_f32(0x7fc12345u), x[64 * 9 + 8] = fkt_f32(0xff812345u);
  /* seeded random shapes: k a multiple of 32 (a third beyond one GEMM k block), m 1..30, rows from
   * any group, strided destinations */
  for (int i = 0; i < 160; i++) {
    int64_t k = 32 * (fkh_range(&rng, 0, 2) ? fkh_range(&rng, 1, 12) : fkh_range(&rng, 13, 70));
    int64_t rb = fkh_range(&rng, 0, 9), nr = fkh_range(&rng, 0, i % 3 ? 9 : 40);
    int64_t m = i % 2 ? fkh_range(&rng, 1, 4) : fkh_range(&rng, 5, 30);
    shape sp = { k, rb, rb + nr, k, m, k + fkh_range(&rng, 0, 5), fkh_range(&rng, 0, 3), 0 };
    sp.ldy = sp.row_end + fkh_range(&rng, 0, 4);
    snprintf(name, sizeof name, "q_random_%d_k%lld_m%lld_rows%lld_%lld", i, (long long)k, (long long)m,
             (long long)rb, (long long)(rb + nr));
    gemv_case(&l, rm_form, name, sp, &rng, -6, 0, -3, 3);
  }
  int nrandom = l.n;
  /* designed: cancellations (cancel_case's x and integer weights; scale 1) */
  cancel_case(&l, rm_form, "q_cancel_k64_neg32_odd3", 64, 32, 3, &rng);
  cancel_case(&l, rm_form, "q_cancel_k96_neg32_odd63", 96, 32, 63, &rng);
  c = gemv_case(&l, rm_form, "q_gemm_cancel_rows", sh(64, 0, 3, 14), &rng, 0, 0, 0, 0);
  x = fkh_buf_of(c, "x");
  uint16_t *w = fkh_buf_of(c, "w");
  for (int64_t i = 0; i < 3 * 64; i++) w[i] = 0x3f80;
  for (int j = 0; j < 14; j++) {
    float *xr = x + 64 * j;
    for (int i = 0; i < 64; i++) xr[i] = 0.0f;
    xr[0] = 16777216.0f, xr[32] = -16777216.0f, xr[1] = 1.0f, xr[2] = 3.0f;
  }
  /* the halving tree: x = 2^24 at slot 0 (lane 0 of chain 0), -2^24 at slot 16 (its lane 8), 1 at
   * slot 2 (its lane 1) weighted by n + 1: the template's tree meets lane 0 with lane 8 first and
   * gives n + 1, a pairwise tree rounds the 1 away; one row (GEMV) and 12 (a GEMM block's transposed
   * epilogue) */
  for (int mm = 1; mm <= 12; mm += 11) {
    snprintf(name, sizeof name, "q_tree_cancel_m%d", mm);
    c = gemv_case(&l, rm_form, name, sh(64, 0, 6, mm), &rng, 0, 0, 0, 0);
    x = fkh_buf_of(c, "x");
    w = fkh_buf_of(c, "w");
    for (int64_t i = 0; i < 6 * 64; i++) w[i] = 0x3f80;
    for (int n = 0; n < 6; n++) w[64 * n + 2] = fk_bf16_from_f32((float)(n + 1));
    for (int j = 0; j < mm; j++) {
      float *xr = x + 64 * j;
      for (int i = 0; i < 64; i++) xr[i] = 0.0f;
      xr[0] = 16777216.0f, xr[16] = -16777216.0f, xr[2] = 1.0f;
    }
  }
  /* exact ties at the output's bf16 rounding: one product per row, 1 + 2^-8 times +-1, 2, 4 */
  c = gemv_case(&l, rm_form, "q_ties", sh(32, 0, 6, 1), &rng, 0, 0, 0, 0);
  x = fkh_buf_of(c, "x");
  w = fkh_buf_of(c, "w");
  for (int i = 0; i < 32; i++) x[i] = 0.0f;
  x[5] = fkt_f32(0x3f808000u);
  static const uint16_t qt[6] = { 0x3f80, 0xbf80, 0x4000, 0x4080, 0xc000, 0x3f80 };
  for (int n = 0; n < 6; n++)
    for (int i = 0; i < 32; i++) w[32 * n + i] = i == 5 ? qt[n] : 0;
  if (fkh_field_index(c, "r") >= 0) {
    uint16_t *r = fkh_buf_of(c, "r");
    for (int n = 0; n < 6; n++) r[n] = 0;
  }
  if (fkh_field_index(c, "bias") >= 0) {
    float *bi = fkh_buf_of(c, "bias");
    for (int n = 0; n < 6; n++) bi[n] = 0.0f;
  }
  /* the tail (k = 32 mod 64: the last tile's second block is padding, +0 weights against -0 in xs):
   * every product -2^-151 (q = -1, scale 2^-24, x = 2^-127), which rounds to -0, so y is -0 (r and
   * bias -0 too): a tail over +0 padding gives +0 (FKC_TAIL_PADDED); an inf, a NaN in a slot that
   * lies past k in the last tile (FKC_TAIL_RESET) */
  int ntiny = l.n;
  for (int i = 0; i < 4; i++) {
    int64_t k = i % 2 ? 160 : 96;
    snprintf(name, sizeof name, "tail_neg_zero_q_k%lld_m%d", (long long)k, i + 1);
    c = gemv_case(&l, rm_form, name, sh(k, 0, 5, i + 1), &rng, -6, 0, -2, 2);
    w = fkh_buf_of(c, "w");
    x = fkh_buf_of(c, "x");
    for (int64_t e = 0; e < 5 * k; e++) w[e] = 0xbf80;                       /* q = -1 */
    for (int64_t e = 0; e < (i + 1) * k; e++) x[e] = fkt_f32(0x00400000u); /* 2^-127 */
    if (fkh_field_index(c, "r") >= 0) {
      uint16_t *r = fkh_buf_of(c, "r");
      for (int e = 0; e < 5 * (i + 1); e++) r[e] = 0x8000;
    }
    if (fkh_field_index(c, "bias") >= 0) {
      float *bi = fkh_buf_of(c, "bias");
      for (int n = 0; n < 5; n++) bi[n] = fkt_f32(0x80000000u);
    }
  }
  int ntail = l.n;
  c = gemv_case(&l, rm_form, "tail_inf_past_k_q", sh(96, 0, 3, 2), &rng, 0, 0, -2, 2);
  w = fkh_buf_of(c, "w");
  for (int64_t e = 0; e < 3 * 96; e++) w[e] = 0x3f80;
  ((float *)fkh_buf_of(c, "x"))[40] = fkt_f32(0x7f800000u);      /* slot 40 lies past k = 96 */
  ((float *)fkh_buf_of(c, "x"))[96 + 40] = fkt_f32(0xff800000u);
  c = gemv_case(&l, rm_form, "tail_nan_past_k_q", sh(160, 0, 3, 1), &rng, 0, 0, -2, 2);
  w = fkh_buf_of(c, "w");
  for (int64_t e = 0; e < 3 * 160; e++) w[e] = 0x3f80;
  ((float *)fkh_buf_of(c, "x"))[64 + 45] = fkt_f32(0x7fc12345u); /* slot 45 lies past k = 160 */
  int nfast = l.n;
  qspec fs[QFAST_MAX];
  quant_fast_cases(&l, rm_form, fmt, fs);
  fkh_call *calls = calloc((size_t)l.n, sizeof *calls);
  if (!calls) exit(2);
  fkh_rng frng = { 0x71666173u };
  for (int i = 0; i < l.n; i++) {
    if (i < nrandom) {
      quant_call(&l.calls[i], form, &calls[i], NULL, &rng, -12, -2);
      continue;
    }
    if (i >= nfast) {
      const qspec *sp = &fs[i - nfast];
      unsigned char *b = sp->random ? NULL : integer_qblocks(fmt, fkh_buf_of(&l.calls[i], "w"),
                                                             fkh_i64_of(&l.calls[i], "ldw"),
                                                             fkh_i64_of(&l.calls[i], "row_end"),
                                                             fkh_i64_of(&l.calls[i], "k"), sp->d16);
      quant_call(&l.calls[i], form, &calls[i], b, &frng, sp->emin, sp->emax);
      free(b);
      continue;
    }
    fkh_call *rm = &l.calls[i];
    int64_t k = fkh_i64_of(rm, "k"), re = fkh_i64_of(rm, "row_end");
    uint16_t d16 = i >= ntiny && i < ntail ? 0x0001 : 0x3c00; /* 2^-24 for the -0 tails, else 1 */
    unsigned char *b = integer_qblocks(fmt, fkh_buf_of(rm, "w"), fkh_i64_of(rm, "ldw"), re, k, d16);
    quant_call(rm, form, &calls[i], b, &rng, 0, 0);
    free(b);
  }
  fkt_free_cases(l.calls, l.n);
  *out = calls;
  return l.n;
}

/* ---- the q4k forms (gemv_q4k_*) ------------------------------------------------------------ */

/* A q4k super-block's binary16 d or dmin: random sign and exponent (emin..emax), among them -0, +0
 * and subnormals */
static uint16_t random_f16(fkh_rng *rng, int emin, int emax) {
  int64_t pick = fkh_range(rng, 0, 15);
  uint16_t d = (uint16_t)((uint16_t)fkh_range(rng, emin + 15, emax + 15) << 10 | (uint16_t)fkh_range(rng, 0, 1023));
  if (pick == 0) d = 0x8000;
  if (pick == 1) d = 0x0000;
  if (pick == 2) d = (uint16_t)fkh_range(rng, 1, 1023);
  if (fkh_range(rng, 0, 1)) d |= 0x8000;
  return d;
}

/* Random GGUF Q4_K super-blocks for rows x k (k a multiple of 256): the 140 bytes of six-bit scales,
 * minimums and nibbles random (every sc and m, their high bits in the packing), d and dmin
 * random_f16's. */
static unsigned char *random_q4k(int64_t rows, int64_t k, fkh_rng *rng, int emin, int emax) {
  size_t nb = (size_t)(rows * k / 256);
  unsigned char *b = malloc(nb * 144);
  if (!b) exit(2);
  for (size_t i = 0; i < nb; i++) {
    unsigned char *blk = b + i * 144;
    for (size_t j = 4; j < 144; j++) blk[j] = (unsigned char)fkh_next(rng);
    for (int h = 0; h < 2; h++) {
      uint16_t d = random_f16(rng, emin, emax);
      blk[2 * h] = (unsigned char)d, blk[2 * h + 1] = (unsigned char)(d >> 8);
    }
  }
  return b;
}

/* Super-blocks whose weights are the integers `w` holds (row-major bf16, -8 <= w <= 7): d = dmin =
 * 1, every sc 1 and m 8 (ggml's six-bit packing: bytes 0-3 sc, 4-7 m, 8-11 sc | m << 4 of sub-blocks
 * 4-7), u = w + 8: RN(u - 8) = w. */
static unsigned char *integer_q4k(const uint16_t *w, int64_t ldw, int64_t rows, int64_t k) {
  size_t nb = (size_t)(k / 256);
  unsigned char *b = calloc((size_t)rows * nb, 144);
  if (!b) exit(2);
  for (int64_t r = 0; r < rows; r++)
    for (size_t s = 0; s < nb; s++) {
      unsigned char *o = b + ((size_t)r * nb + s) * 144;
      o[1] = 0x3c, o[3] = 0x3c;
      for (int j = 0; j < 4; j++) o[4 + j] = 1, o[8 + j] = 8, o[12 + j] = 0x81;
      for (int i = 0; i < 256; i++) {
        int q = (int)fk_f32_from_bf16(w[r * ldw + (int64_t)s * 256 + i]), j = i / 32;
        o[16 + 32 * (j / 2) + i % 32] |= (unsigned char)((q + 8) << (4 * (j & 1)));
      }
    }
  return b;
}

/* The q4k forms' cases (k a multiple of 256): GEMV (m 1..4) and GEMM shapes, row ranges from later
 * groups (one row, two, three of a group: the passes' first row rin at every offset), strided
 * destinations, NaN and inf in x, seeded random shapes (random super-blocks, every d and dmin kind);
 * then designed ones over integer weights (integer_q4k): the lane mapping's and the tree's
 * cancellations, ties at the output's rounding. */
static int q4k_cases(const char *form, fkh_call **out) {
  char rm_form[64], name[96];
  const char *q = strstr(form, "_q4k_");
  snprintf(rm_form, sizeof rm_form, "%.*s_%s", (int)(q - form), form, q + 5);
  fkt_list l = { 0 };
  fkh_rng rng = { 0x71346b63u };
  static const int64_t ks[] = { 256, 512, 768, 1024, 2048 };
  for (size_t i = 0; i < sizeof ks / sizeof ks[0]; i++)
    for (int m = 1; m <= 4; m++) {
      snprintf(name, sizeof name, "q4k_k%lld_m%d", (long long)ks[i], m);
      gemv_case(&l, rm_form, name, sh(ks[i], 0, 5 + m, m), &rng, -6, 0, -2, 2);
    }
  gemv_case(&l, rm_form, "q4k_row_begin_5", sh(256, 5, 11, 2), &rng, -6, 0, -2, 2);
  gemv_case(&l, rm_form, "q4k_rows_9_11_m4", sh(512, 9, 11, 4), &rng, -6, 0, -2, 2);
  gemv_case(&l, rm_form, "q4k_row_empty", sh(256, 4, 4, 1), &rng, -6, 0, -2, 2);
  gemv_case(&l, rm_form, "q4k_strided_destination", (shape){ 256, 2, 9, 256, 4, 260, 13, 21 }, &rng, -6, 0, -2, 2);
  static const int64_t ms[] = { 5, 6, 7, 8, 9, 12, 13, 16, 17, 25 };
  for (size_t i = 0; i < sizeof ms / sizeof ms[0]; i++) {
    int64_t k = (int64_t[]){ 256, 512, 1280, 2304, 768 }[i % 5];
    snprintf(name, sizeof name, "q4k_gemm_m%lld_k%lld", (long long)ms[i], (long long)k);
    gemv_case(&l, rm_form, name, sh(k, 0, i % 2 ? 39 : 7, ms[i]), &rng, -6, 0, -2, 2);
  }
  gemv_case(&l, rm_form, "q4k_gemm_rows_4_37_m13", sh(256, 4, 37, 13), &rng, -6, 0, -2, 2);
  fkh_call *c = gemv_case(&l, rm_form, "q4k_nan_inf_x", sh(256, 0, 6, 3), &rng, -6, 0, -2, 2);
  float *x = fkh_buf_of(c, "x");
  x[17] = fkt_f32(0x7fc12345u), x[256 + 140] = fkt_f32(0xff812345u), x[512 + 5] = fkt_f32(0x7f800000u);
  for (int i = 0; i < 160; i++) {
    int64_t k = 256 * fkh_range(&rng, 1, i % 4 ? 3 : 9);
    int64_t rb = fkh_range(&rng, 0, 9), nr = fkh_range(&rng, 0, i % 3 ? 9 : 40);
    int64_t m = i % 2 ? fkh_range(&rng, 1, 4) : fkh_range(&rng, 5, 30);
    shape sp = { k, rb, rb + nr, k, m, k + fkh_range(&rng, 0, 5), fkh_range(&rng, 0, 3), 0 };
    sp.ldy = sp.row_end + fkh_range(&rng, 0, 4);
    snprintf(name, sizeof name, "q4k_random_%d_k%lld_m%lld_rows%lld_%lld", i, (long long)k, (long long)m,
             (long long)rb, (long long)(rb + nr));
    gemv_case(&l, rm_form, name, sp, &rng, -6, 0, -3, 3);
  }
  int nrandom = l.n;
  /* designed, integer weights: the lane mapping (cancel_case), the halving tree (x = 2^24 at slot 0,
   * -2^24 at slot 16, 1 at slot 2 weighted n + 1: the template's tree gives n + 1, a pairwise one 0;
   * one row and 12, a GEMM block's transposed epilogue), in the second super-block of k too, and
   * ties at the bf16 rounding (1 + 2^-8 times +-1, 2, 4) */
  cancel_case(&l, rm_form, "q4k_cancel_k256_neg32_odd3", 256, 32, 3, &rng);
  for (int mm = 1; mm <= 12; mm += 11)
    for (int64_t at = 0; at <= 320; at += 320) {
      snprintf(name, sizeof name, "q4k_tree_cancel_m%d_at%lld", mm, (long long)at);
      c = gemv_case(&l, rm_form, name, sh(512, 0, 6, mm), &rng, 0, 0, 0, 0);
      x = fkh_buf_of(c, "x");
      uint16_t *w = fkh_buf_of(c, "w");
      for (int64_t i = 0; i < 6 * 512; i++) w[i] = 0x3f80;
      for (int n = 0; n < 6; n++) w[512 * n + at + 2] = fk_bf16_from_f32((float)(n + 1));
      for (int j = 0; j < mm; j++) {
        float *xr = x + 512 * j;
        for (int i = 0; i < 512; i++) xr[i] = 0.0f;
        xr[at] = 16777216.0f, xr[at + 16] = -16777216.0f, xr[at + 2] = 1.0f;
      }
    }
  c = gemv_case(&l, rm_form, "q4k_ties", sh(256, 0, 6, 1), &rng, 0, 0, 0, 0);
  x = fkh_buf_of(c, "x");
  uint16_t *w = fkh_buf_of(c, "w");
  for (int i = 0; i < 256; i++) x[i] = 0.0f;
  x[205] = fkt_f32(0x3f808000u);
  static const uint16_t qt[6] = { 0x3f80, 0xbf80, 0x4000, 0x4080, 0xc000, 0x3f80 };
  for (int n = 0; n < 6; n++)
    for (int i = 0; i < 256; i++) w[256 * n + i] = i == 205 ? qt[n] : 0;
  if (fkh_field_index(c, "r") >= 0) memset(fkh_buf_of(c, "r"), 0, 6 * sizeof(uint16_t));
  if (fkh_field_index(c, "bias") >= 0) memset(fkh_buf_of(c, "bias"), 0, 6 * sizeof(float));
  fkh_call *calls = calloc((size_t)l.n, sizeof *calls);
  if (!calls) exit(2);
  for (int i = 0; i < l.n; i++) {
    fkh_call *rm = &l.calls[i];
    unsigned char *b = i < nrandom ? NULL : integer_q4k(fkh_buf_of(rm, "w"), fkh_i64_of(rm, "ldw"),
                                                        fkh_i64_of(rm, "row_end"), fkh_i64_of(rm, "k"));
    quant_call(rm, form, &calls[i], b, &rng, -12, -2);
    free(b);
  }
  fkt_free_cases(l.calls, l.n);
  *out = calls;
  return l.n;
}

int fkt_gemv_cases(const char *form, fkh_call **out) {
  if (strstr(form, "_q4k_")) return q4k_cases(form, out);
  if (strstr(form, "_q8_") || strstr(form, "_q4_")) return quant_cases(form, out);
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
