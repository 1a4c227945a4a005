/* tests/quant/test_quant.c: the quantized weight formats (runtime/fk_quant.c, docs/design.md
 * "Quantized weights").
 *   - binary16 conversions: fk_f32_from_f16 over all 65536 patterns and fk_f16_from_f32 over 100 M
 *     f32 patterns against the compiler's _Float16 (round to nearest even; NaN by class);
 *   - every case of fixtures/quant/ (written by fixtures/ref/gen_quant.py from the gguf package):
 *     flashkern's RNE quantizer gives the case's `rne` blocks byte for byte, the exact dequantization
 *     of the gguf package's blocks equals its dequantization bit for bit, fk_q_pack's layout equals
 *     the case's `packed` bytes (the layout written independently from the spec), and the quants where
 *     flashkern's RNE and ggml's rounding differ are the case's `ties`; q4k's (gen_quant_q4k.py):
 *     the quantizer's blocks byte for byte (ggml's), the dequantization bit for bit (the gguf
 *     package's), fk_q_pack's layout read back by the spec's formula;
 *   - the packed layout read back by the spec's formula on random blocks (every int8, -0 scales,
 *     subnormal scales), the zero padding of rows and of a k of 32 mod 64;
 *   - the refusals of a non-finite scale, weight, or a scale that overflows binary16 (nothing written).
 * Exact data: every comparison is bit for bit (a quantized weight q * d is exact in f32). */
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "contract/contract.h"
#include "fixture/fkfix.h"
#include "flashkern.h"

#define bits_of fkc_f32_bits
#define f_of fkc_bits_f32

/* ---- binary16 -------------------------------------------------------------------------------- */

Test(quant, f16_widen_all_patterns) {
  for (uint32_t h = 0; h < 65536; h++) {
    _Float16 v;
    uint16_t hb = (uint16_t)h;
    memcpy(&v, &hb, sizeof v);
    float want = (float)v, got = fk_f32_from_f16(hb);
    if (want != want) {
      cr_assert(got != got, "0x%04x: want NaN, got 0x%08x", h, bits_of(got));
      continue;
    }
    cr_assert_eq(bits_of(got), bits_of(want), "0x%04x: got 0x%08x, want 0x%08x", h, bits_of(got), bits_of(want));
  }
}

Test(quant, f16_narrow_rne) {
  static const uint32_t low[] = { 0x00, 0x01, 0x7f, 0x80, 0x81, 0xff };
  for (uint32_t hi = 0; hi < (1u << 24); hi++)
    for (size_t j = 0; j < sizeof low / sizeof low[0]; j++) {
      uint32_t u = hi << 8 | low[j];
      float f = f_of(u);
      _Float16 w = (_Float16)f;
      uint16_t want, got = fk_f16_from_f32(f);
      memcpy(&want, &w, sizeof want);
      if (f != f) {
        cr_assert((got & 0x7c00u) == 0x7c00u && (got & 0x3ffu) && (got >> 15) == (u >> 31), "0x%08x: got 0x%04x", u, got);
        continue;
      }
      if (got != want) cr_assert_fail("0x%08x: got 0x%04x, want 0x%04x", u, got, want);
    }
}

/* ---- the fixtures --------------------------------------------------------------------------- */

static const fkfix_tensor *tensor(const fkfix *f, const char *name) {
  for (int i = 0; i < f->ntensors; i++)
    if (!strcmp(f->tensors[i].name, name)) return &f->tensors[i];
  return NULL;
}

static int64_t scalar(const fkfix *f, const char *name) {
  int64_t v = 0;
  cr_assert_eq(fkfix_scalar_i64(f, name, &v), 0, "%s: scalar %s", f->path, name);
  return v;
}

/* the quants of one GGUF block, as signed q */
static void block_quants(fk_qformat fmt, const unsigned char *blk, int q[32]) {
  for (int i = 0; i < 32; i++)
    q[i] = fmt == FK_Q8 ? (int8_t)blk[2 + i] : ((i < 16 ? blk[2 + i] & 15 : blk[2 + i - 16] >> 4) - 8);
}

/* A q4k case (GGUF Q4_K super-blocks): the quantizer's blocks byte for byte (ggml's
 * quantize_row_q4_K_ref, which the generator checked against ggml's C), their dequantization bit
 * for bit (the gguf package's), and fk_q_pack's layout read back by the spec's formula (docs/design.md
 * "Quantized weights": super-record (row / 4) * (k / 256) + k / 256 of 592 bytes; row r = row mod 4,
 * k = 256s + 64t + 32h + 2l + p: nibble p of byte 128t + 32r + 16h + l, sub-block j = 2t + h's sc
 * at 512 + 8r + j, m at 544 + 8r + j, d at 576 + 2r, dmin at 584 + 2r) equal to the gguf package's
 * weights, the padding rows +0. */
static void check_q4k_case(const fkfix *f) {
  const char *path = f->path;
  int64_t n = scalar(f, "n"), k = scalar(f, "k");
  const fkfix_tensor *w = tensor(f, "w"), *blocks = tensor(f, "blocks"), *deq = tensor(f, "deq");
  cr_assert(w && blocks && deq, "%s: a tensor is missing", path);
  size_t gb = fk_q_gguf_bytes(FK_Q4K, n, k);
  cr_assert(gb && blocks->nbytes == gb, "%s: blocks hold %zu bytes, want %zu", path, blocks->nbytes, gb);
  const int64_t groups = (n + 3) / 4, sbs = k / 256;
  size_t pb = fk_q_packed_bytes(FK_Q4K, n, k);
  cr_assert_eq(pb, (size_t)(groups * sbs) * 592u, "%s: q4k packed bytes %zu", path, pb);
  unsigned char *q = malloc(gb);
  float *y = malloc((size_t)(n * k) * sizeof *y);
  cr_assert(q && y);
  fk_error e;
  fk_status s = w->dtype == FKFIX_F32 ? fk_q_quantize(FK_Q4K, (const float *)w->data, k, n, k, q, gb, &e)
                                      : fk_q_quantize_bf16(FK_Q4K, (const uint16_t *)w->data, k, n, k, q, gb, &e);
  cr_assert_eq(s, FK_OK, "%s: %s", path, e.message);
  for (size_t i = 0; i < gb; i++)
    if (q[i] != ((const unsigned char *)blocks->data)[i])
      cr_assert_fail("%s: quantized byte %zu (row %zu, super-block %zu, offset %zu) is 0x%02x, ggml's 0x%02x", path, i,
                     i / (gb / (size_t)n), i % (gb / (size_t)n) / 144, i % 144, q[i],
                     ((const unsigned char *)blocks->data)[i]);
  cr_assert_eq(fk_q_dequantize(FK_Q4K, blocks->data, gb, n, k, y, k, &e), FK_OK, "%s: %s", path, e.message);
  const uint32_t *want = (const uint32_t *)deq->data;
  for (int64_t i = 0; i < n * k; i++)
    if (bits_of(y[i]) != want[i])
      cr_assert_fail("%s: deq[%lld][%lld] = 0x%08x, gguf's 0x%08x", path, (long long)(i / k), (long long)(i % k),
                     bits_of(y[i]), want[i]);
  unsigned char *pk = malloc(pb);
  cr_assert(pk);
  cr_assert_eq(fk_q_pack(FK_Q4K, blocks->data, gb, n, k, pk, pb, &e), FK_OK, "%s: %s", path, e.message);
  for (int64_t row = 0; row < groups * 4; row++)
    for (int64_t kk = 0; kk < k; kk++) {
      const unsigned char *rc = pk + (size_t)((row / 4) * sbs + kk / 256) * 592;
      const size_t r = (size_t)(row % 4), t = (size_t)(kk % 256 / 64), h = (size_t)(kk % 64 / 32);
      const size_t l = (size_t)(kk % 32 / 2), j = 2 * t + h;
      const unsigned byte = rc[128 * t + 32 * r + 16 * h + l], u = kk % 2 ? byte >> 4 : byte & 15u;
      const float d = fk_f32_from_f16((uint16_t)(rc[576 + 2 * r] | rc[577 + 2 * r] << 8));
      const float dmin = fk_f32_from_f16((uint16_t)(rc[584 + 2 * r] | rc[585 + 2 * r] << 8));
      const float d1 = d * (float)rc[512 + 8 * r + j], m1 = dmin * (float)rc[544 + 8 * r + j];
      const uint32_t got = bits_of(d1 * (float)u - m1), exp = row < n ? want[row * k + kk] : 0u;  /* one rounding */
      if (got != exp)
        cr_assert_fail("%s: packed w[%lld][%lld] = 0x%08x, want 0x%08x%s", path, (long long)row, (long long)kk, got,
                       exp, row < n ? "" : " (a padding row: +0)");
    }
  free(pk);
  free(y);
  free(q);
}

static void check_case(const char *path) {
  char err[512];
  fkfix f;
  cr_assert_eq(fkfix_load(path, &f, err, sizeof err), 0, "%s", err);
  if (!strcmp(f.form, "q4k")) {
    check_q4k_case(&f);
    fkfix_free(&f);
    return;
  }
  fk_qformat fmt = !strcmp(f.form, "q8") ? FK_Q8 : !strcmp(f.form, "q4") ? FK_Q4 : (fk_qformat)0;
  cr_assert(fmt, "%s: form %s", path, f.form);
  int64_t n = scalar(&f, "n"), k = scalar(&f, "k");
  const fkfix_tensor *w = tensor(&f, "w"), *gg = tensor(&f, "gguf"), *deq = tensor(&f, "deq"), *rne = tensor(&f, "rne"),
                     *rdeq = tensor(&f, "rne_deq"), *packed = tensor(&f, "packed");
  cr_assert(w && gg && deq && rne && rdeq && packed, "%s: a tensor is missing", path);
  size_t gb = fk_q_gguf_bytes(fmt, n, k), pb = fk_q_packed_bytes(fmt, n, k);
  cr_assert(gb && pb, "%s: %lld x %lld", path, (long long)n, (long long)k);
  cr_assert_eq(gg->nbytes, gb, "%s: gguf holds %zu bytes, want %zu", path, gg->nbytes, gb);
  cr_assert_eq(rne->nbytes, gb, "%s: rne bytes", path);
  cr_assert_eq(packed->nbytes, pb, "%s: packed holds %zu bytes, want %zu", path, packed->nbytes, pb);
  cr_assert_eq(w->span, n * k, "%s: w", path);
  fk_error e;

  /* the quantizer: the case's RNE blocks, byte for byte */
  unsigned char *q = malloc(gb);
  cr_assert(q);
  fk_status s = w->dtype == FKFIX_F32 ? fk_q_quantize(fmt, (const float *)w->data, k, n, k, q, gb, &e)
                                      : fk_q_quantize_bf16(fmt, (const uint16_t *)w->data, k, n, k, q, gb, &e);
  cr_assert_eq(s, FK_OK, "%s: %s", path, e.message);
  for (size_t i = 0; i < gb; i++)
    if (q[i] != ((const unsigned char *)rne->data)[i])
      cr_assert_fail("%s: quantized byte %zu (row %zu, block %zu) is 0x%02x, the reference's 0x%02x", path, i,
                     i / (gb / (size_t)n), i % (gb / (size_t)n) / (fmt == FK_Q8 ? 34 : 18), q[i],
                     ((const unsigned char *)rne->data)[i]);

  /* where RNE and ggml's rounding differ: `ties` quants, by one step each; and `scales` scales, each
   * a block of zeros whose first element is -0 (the gguf package writes +0, ggml's C and flashkern -0) */
  int64_t ties = 0, scales = 0;
  size_t bb = fmt == FK_Q8 ? 34 : 18;
  for (size_t b = 0; b < gb / bb; b++) {
    const unsigned char *x = (const unsigned char *)gg->data + b * bb, *y = (const unsigned char *)rne->data + b * bb;
    if (x[0] != y[0] || x[1] != y[1]) {
      const float *wb = w->dtype == FKFIX_F32 ? (const float *)w->data + b * 32 : NULL;
      cr_assert(wb && x[0] == 0 && x[1] == 0 && y[0] == 0 && y[1] == 0x80 && bits_of(wb[0]) == 0x80000000u,
                "%s: block %zu: the scales differ (0x%02x%02x, gguf's 0x%02x%02x)", path, b, y[1], y[0], x[1], x[0]);
      for (int i = 1; i < 32; i++) cr_assert(wb[i] == 0.0f, "%s: block %zu is not all zero", path, b);
      scales++;
    }
    int qa[32], qb[32];
    block_quants(fmt, x, qa);
    block_quants(fmt, y, qb);
    for (int i = 0; i < 32; i++) {
      if (qa[i] == qb[i]) continue;
      cr_assert(qa[i] - qb[i] == 1 || qa[i] - qb[i] == -1, "%s: block %zu, quant %d: %d against ggml's %d", path, b, i,
                qb[i], qa[i]);
      ties++;
    }
  }
  cr_assert_eq(scales, scalar(&f, "scales"), "%s: %lld scales differ from gguf's, the case says %lld", path,
               (long long)scales, (long long)scalar(&f, "scales"));
  cr_assert_eq(ties, scalar(&f, "ties"), "%s: %lld quants differ from ggml's, the case says %lld", path,
               (long long)ties, (long long)scalar(&f, "ties"));

  /* the exact dequantization of both block sets: the gguf package's, bit for bit */
  float *y = malloc((size_t)(n * k) * sizeof *y);
  cr_assert(y);
  const fkfix_tensor *pairs[2][2] = { { gg, deq }, { rne, rdeq } };
  for (int p = 0; p < 2; p++) {
    cr_assert_eq(fk_q_dequantize(fmt, pairs[p][0]->data, gb, n, k, y, k, &e), FK_OK, "%s: %s", path, e.message);
    const uint32_t *want = (const uint32_t *)pairs[p][1]->data;
    for (int64_t i = 0; i < n * k; i++)
      if (bits_of(y[i]) != want[i])
        cr_assert_fail("%s: %s[%lld][%lld] = 0x%08x, gguf's 0x%08x", path, pairs[p][0]->name, (long long)(i / k),
                       (long long)(i % k), bits_of(y[i]), want[i]);
  }

  /* the packed layout of the gguf blocks */
  unsigned char *pk = malloc(pb);
  cr_assert(pk);
  cr_assert_eq(fk_q_pack(fmt, gg->data, gb, n, k, pk, pb, &e), FK_OK, "%s: %s", path, e.message);
  for (size_t i = 0; i < pb; i++)
    if (pk[i] != ((const unsigned char *)packed->data)[i])
      cr_assert_fail("%s: packed byte %zu (record %zu, offset %zu) is 0x%02x, want 0x%02x", path, i,
                     i / (fmt == FK_Q8 ? 272 : 144), i % (fmt == FK_Q8 ? 272 : 144), pk[i],
                     ((const unsigned char *)packed->data)[i]);
  free(pk);
  free(y);
  free(q);
  fkfix_free(&f);
}

Test(quant, fixtures) {
  char dir[512], err[512], **paths = NULL;
  snprintf(dir, sizeof dir, "%s/quant", FKT_FIXTURE_DIR);
  int n = fkfix_list(dir, &paths, err, sizeof err);
  cr_assert(n > 0, "%s", n < 0 ? err : "fixtures/quant holds no case");
  int fmts[4] = { 0 };
  for (int i = 0; i < n; i++) {
    check_case(paths[i]);
    fmts[strstr(paths[i], "/q8") ? 1 : strstr(paths[i], "/q4k") ? 3 : strstr(paths[i], "/q4") ? 2 : 0]++;
  }
  cr_assert(fmts[1] > 0 && fmts[2] > 0 && fmts[3] > 0, "cases: %d q8, %d q4, %d q4k (every format must be covered)",
            fmts[1], fmts[2], fmts[3]);
  fkfix_list_free(paths, n);
}

/* ---- the packed layout, read back by the spec ----------------------------------------------- */

static uint64_t rng = 0x9e3779b97f4a7c15u;
static uint32_t next(void) {
  rng ^= rng << 13;
  rng ^= rng >> 7;
  rng ^= rng << 17;
  return (uint32_t)(rng >> 16);
}

/* n x k random blocks: every byte random but the scales finite (subnormal, -0 and normal ones) */
static unsigned char *random_blocks(fk_qformat fmt, int64_t n, int64_t k) {
  size_t bb = fmt == FK_Q8 ? 34 : 18, nbk = (size_t)(n * k / 32);
  unsigned char *b = malloc(nbk * bb);
  cr_assert(b);
  for (size_t i = 0; i < nbk * bb; i++) b[i] = (unsigned char)next();
  for (size_t i = 0; i < nbk; i++) {
    uint16_t d = (uint16_t)next();
    if ((d & 0x7c00u) == 0x7c00u) d &= 0x83ffu; /* inf/NaN -> a subnormal */
    if (i % 7 == 3) d = 0x8000;                  /* -0, as ggml writes for an all-zero Q4_0 block */
    b[i * bb] = (unsigned char)d;
    b[i * bb + 1] = (unsigned char)(d >> 8);
  }
  return b;
}

Test(quant, packed_layout_by_the_spec) {
  static const int64_t shapes[][2] = { { 1, 32 }, { 5, 160 }, { 4, 64 }, { 7, 96 }, { 9, 256 } };
  for (int fi = 0; fi < 2; fi++) {
    fk_qformat fmt = fi ? FK_Q4 : FK_Q8;
    size_t rec = fmt == FK_Q8 ? 272 : 144, qrow = fmt == FK_Q8 ? 64 : 32;
    for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; si++) {
      int64_t n = shapes[si][0], k = shapes[si][1], tiles = (k + 63) / 64, groups = (n + 3) / 4;
      unsigned char *b = random_blocks(fmt, n, k);
      size_t gb = fk_q_gguf_bytes(fmt, n, k), pb = fk_q_packed_bytes(fmt, n, k);
      cr_assert_eq(pb, (size_t)(groups * tiles) * rec);
      unsigned char *p = malloc(pb);
      float *y = malloc((size_t)(n * k) * 4);
      cr_assert(p && y);
      fk_error e;
      cr_assert_eq(fk_q_pack(fmt, b, gb, n, k, p, pb, &e), FK_OK, "%s", e.message);
      cr_assert_eq(fk_q_dequantize(fmt, b, gb, n, k, y, k, &e), FK_OK, "%s", e.message);
      /* every (row, k) of the padded matrix from its record */
      for (int64_t row = 0; row < groups * 4; row++)
        for (int64_t kk = 0; kk < tiles * 64; kk++) {
          const unsigned char *r = p + (size_t)((row / 4) * tiles + kk / 64) * rec;
          size_t rr = (size_t)(row % 4), bl = (size_t)(kk % 64 / 32), l = (size_t)(kk % 32 / 2), par = (size_t)(kk % 2);
          int qv;
          if (fmt == FK_Q8) {
            qv = (int8_t)r[qrow * rr + 32 * bl + 16 * par + l];
          } else {
            unsigned byte = r[qrow * rr + 16 * bl + l];
            qv = (int)(par ? byte >> 4 : byte & 15) - 8;
          }
          const unsigned char *sc = r + 4 * qrow + 4 * rr + 2 * bl;
          float wv = (float)qv * fk_f32_from_f16((uint16_t)(sc[0] | sc[1] << 8));
          if (row < n && kk < k) {
            cr_assert_eq(bits_of(wv), bits_of(y[row * k + kk]), "%s %lldx%lld: w[%lld][%lld] = 0x%08x, want 0x%08x",
                         fi ? "q4" : "q8", (long long)n, (long long)k, (long long)row, (long long)kk, bits_of(wv),
                         bits_of(y[row * k + kk]));
          } else {
            cr_assert_eq(bits_of(wv), 0u, "%s %lldx%lld: padding (%lld, %lld) is 0x%08x, not +0", fi ? "q4" : "q8",
                         (long long)n, (long long)k, (long long)row, (long long)kk, bits_of(wv));
          }
        }
      free(y);
      free(p);
      free(b);
    }
  }
}

/* ---- refusals: named, nothing written -------------------------------------------------------- */

Test(quant, nonfinite_scales_refused) {
  static const uint16_t bad[] = { 0x7c00, 0xfc00, 0x7e00, 0x7c01, 0xffff };
  for (int fi = 0; fi < 2; fi++) {
    fk_qformat fmt = fi ? FK_Q4 : FK_Q8;
    int64_t n = 3, k = 96;
    size_t bb = fmt == FK_Q8 ? 34 : 18, gb = fk_q_gguf_bytes(fmt, n, k), pb = fk_q_packed_bytes(fmt, n, k);
    for (size_t j = 0; j < sizeof bad / sizeof bad[0]; j++) {
      unsigned char *b = random_blocks(fmt, n, k), *p = malloc(pb);
      float y[3 * 96];
      cr_assert(p);
      b[(2 * 3 + 1) * bb] = (unsigned char)bad[j]; /* row 2, block 1 */
      b[(2 * 3 + 1) * bb + 1] = (unsigned char)(bad[j] >> 8);
      memset(p, 0xa5, pb);
      memset(y, 0xa5, sizeof y);
      fk_error e;
      cr_assert_eq(fk_q_pack(fmt, b, gb, n, k, p, pb, &e), FK_EINVAL);
      cr_assert(strstr(e.message, "row 2, block 1"), "%s", e.message);
      for (size_t i = 0; i < pb; i++) cr_assert_eq(p[i], 0xa5, "fk_q_pack wrote byte %zu before refusing", i);
      cr_assert_eq(fk_q_dequantize(fmt, b, gb, n, k, y, k, &e), FK_EINVAL);
      cr_assert(strstr(e.message, "row 2, block 1"), "%s", e.message);
      for (size_t i = 0; i < 3 * 96; i++) cr_assert_eq(bits_of(y[i]), 0xa5a5a5a5u, "fk_q_dequantize wrote %zu", i);
      free(p);
      free(b);
    }
  }
}

Test(quant, quantizer_refusals) {
  float w[2 * 64];
  for (int i = 0; i < 2 * 64; i++) w[i] = (float)(i % 17) - 8.0f;
  unsigned char out[2 * 2 * 34];
  fk_error e;
  for (int fi = 0; fi < 2; fi++) {
    fk_qformat fmt = fi ? FK_Q4 : FK_Q8;
    size_t gb = fk_q_gguf_bytes(fmt, 2, 64);
    static const uint32_t nonfinite[] = { 0x7f800000u, 0xff800000u, 0x7fc00000u, 0xffa00001u };
    for (size_t j = 0; j < 4; j++) {
      float v[2 * 64];
      memcpy(v, w, sizeof v);
      v[64 + 37] = f_of(nonfinite[j]);
      memset(out, 0x5a, sizeof out);
      cr_assert_eq(fk_q_quantize(fmt, v, 64, 2, 64, out, gb, &e), FK_EINVAL);
      cr_assert(strstr(e.message, "w[1][37]"), "%s", e.message);
      for (size_t i = 0; i < sizeof out; i++) cr_assert_eq(out[i], 0x5a);
    }
    /* the largest |w| whose scale still rounds to a finite binary16, and the next f32 up */
    float top = fmt == FK_Q8 ? 127.0f * 65504.0f : 8.0f * 65504.0f;
    float v[2 * 64];
    memcpy(v, w, sizeof v);
    v[5] = top;
    cr_assert_eq(fk_q_quantize(fmt, v, 64, 2, 64, out, gb, &e), FK_OK, "%s", e.message);
    v[5] = fmt == FK_Q8 ? 127.0f * 65520.0f : 8.0f * 65520.0f;
    memset(out, 0x5a, sizeof out);
    cr_assert_eq(fk_q_quantize(fmt, v, 64, 2, 64, out, gb, &e), FK_EINVAL);
    cr_assert(strstr(e.message, "row 0, block 0"), "%s", e.message);
    for (size_t i = 0; i < sizeof out; i++) cr_assert_eq(out[i], 0x5a);
    /* k not a multiple of 32, out one byte short */
    cr_assert_eq(fk_q_quantize(fmt, w, 64, 2, 48, out, gb, &e), FK_EINVAL);
    cr_assert(strstr(e.message, "k = 48"), "%s", e.message);
    cr_assert_eq(fk_q_quantize(fmt, w, 64, 2, 64, out, gb - 1, &e), FK_EINVAL);
    cr_assert(strstr(e.message, "out holds"), "%s", e.message);
  }
}

/* a block so small that 1 / d overflows f32 (|d| < 2^-128; its binary16 scale is 0): quants 0 */
Test(quant, quantizer_tiny_block) {
  float w[64];
  for (int i = 0; i < 64; i++) w[i] = i < 32 ? (float)(i - 16) * 1e-39f : (float)(i - 40);
  for (int fi = 0; fi < 2; fi++) {
    fk_qformat fmt = fi ? FK_Q4 : FK_Q8;
    unsigned char out[2 * 34];
    fk_error e;
    cr_assert_eq(fk_q_quantize(fmt, w, 64, 1, 64, out, sizeof out, &e), FK_OK, "%s", e.message);
    cr_assert(out[0] == 0 && (out[1] & 0x7f) == 0, "the scale 0x%02x%02x", out[1], out[0]);
    for (int i = 2; i < (fi ? 18 : 34); i++) cr_assert_eq(out[i], fi ? 0x88 : 0, "quant byte %d is 0x%02x", i, out[i]);
  }
}

/* ---- the quantized stamps against the bf16 ones --------------------------------------------- */

/* Weights that bf16 holds exactly (power-of-two scales: q * d has at most 8 significant bits): the
 * quantized form and the bf16 packed form of one destination give the same bits, GEMV and GEMM,
 * on this host's widest exact stamps (an independent check of the layout and the order; the
 * contract model and the AArch64 stamps are checked against each other in the gemv suite). */
static void same_as_bf16(fk_qformat fmt, const char *qform, const char *bform, int f32_out) {
  fk_leaf lq, lb;
  fk_error e;
  cr_assert_eq(fk_leaf_resolve(qform, FK_TIER_EXACT, fk_cpu_features(), &lq, &e), FK_OK, "%s", e.message);
  cr_assert_eq(fk_leaf_resolve(bform, FK_TIER_EXACT, fk_cpu_features(), &lb, &e), FK_OK, "%s", e.message);
  static const int64_t shapes[][3] = { { 9, 160, 1 }, { 12, 1024, 3 }, { 7, 96, 13 }, { 20, 1088, 24 } };
  for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; si++) {
    int64_t n = shapes[si][0], k = shapes[si][1], m = shapes[si][2];
    unsigned char *blocks = random_blocks(fmt, n, k);
    size_t bb = fmt == FK_Q8 ? 34 : 18;
    for (size_t b = 0; b < (size_t)(n * k / 32); b++) { /* scale 2^e, e in -12..0, either sign */
      uint16_t d = (uint16_t)((3 + next() % 13) << 10 | (next() & 1) << 15);
      blocks[b * bb] = (unsigned char)d, blocks[b * bb + 1] = (unsigned char)(d >> 8);
    }
    float *wf = malloc((size_t)(n * k) * 4), *x = malloc((size_t)(m * k) * 4);
    uint16_t *wb = malloc((size_t)(n * k) * 2);
    size_t pb = fk_q_packed_bytes(fmt, n, k), pe = fk_gemv_packed_elems(n, k);
    unsigned char *wq = malloc(pb);
    uint16_t *wp = malloc(pe * 2);
    size_t xs_n = fk_gemv_call_scratch(k) + (size_t)((n + 3) / 4 * 4) * FK_GEMV_GEMM_PART_ROW;
    float *xs = malloc(xs_n * 4);
    void *ya = calloc((size_t)(m * n), 4), *yb = calloc((size_t)(m * n), 4);
    cr_assert(wf && x && wb && wq && wp && xs && ya && yb);
    cr_assert_eq(fk_q_dequantize(fmt, blocks, fk_q_gguf_bytes(fmt, n, k), n, k, wf, k, &e), FK_OK, "%s", e.message);
    for (int64_t i = 0; i < n * k; i++) {
      wb[i] = fk_bf16_from_f32(wf[i]);
      cr_assert_eq(bits_of(fk_f32_from_bf16(wb[i])), bits_of(wf[i]), "weight %lld is not bf16-exact", (long long)i);
    }
    for (int64_t i = 0; i < m * k; i++) x[i] = (float)(int32_t)(next() % 2001 - 1000) * 0x1p-7f;
    cr_assert_eq(fk_q_pack(fmt, blocks, fk_q_gguf_bytes(fmt, n, k), n, k, wq, pb, &e), FK_OK, "%s", e.message);
    cr_assert_eq(fk_gemv_pack(wb, k, n, k, wp, pe, &e), FK_OK, "%s", e.message);
    /* the two forms' argument structs share their layout but for w's type */
    fk_gemv_q8_f32_args aq = { .w = wq, .x = x, .ldx = k, .xs = xs, .y = ya, .y_off = 0, .ldy = n, .m = m, .k = k,
                               .row_begin = 0, .row_end = n };
    fk_gemv_f32_packed_args ab = { .w = wp, .x = x, .ldx = k, .xs = xs, .y = yb, .y_off = 0, .ldy = n, .m = m, .k = k,
                                   .row_begin = 0, .row_end = n };
    if (f32_out) {
      cr_assert_eq(fk_leaf_check(qform, &aq, &e), FK_OK, "%s", e.message);
      lq.fn(&aq);
      lb.fn(&ab);
    } else {
      fk_gemv_q8_bf16_rne_args rq = { .w = wq, .x = x, .ldx = k, .xs = xs, .y = ya, .y_off = 0, .ldy = n, .m = m,
                                      .k = k, .row_begin = 0, .row_end = n };
      fk_gemv_bf16_rne_packed_args rb = { .w = wp, .x = x, .ldx = k, .xs = xs, .y = yb, .y_off = 0, .ldy = n, .m = m,
                                          .k = k, .row_begin = 0, .row_end = n };
      cr_assert_eq(fk_leaf_check(qform, &rq, &e), FK_OK, "%s", e.message);
      lq.fn(&rq);
      lb.fn(&rb);
    }
    cr_assert(memcmp(ya, yb, (size_t)(m * n) * (f32_out ? 4 : 2)) == 0, "%s vs %s (%s): %lldx%lld, m = %lld differ",
              qform, bform, lq.symbol, (long long)n, (long long)k, (long long)m);
    free(yb), free(ya), free(xs), free(wp), free(wq), free(wb), free(x), free(wf), free(blocks);
  }
}

Test(quant, stamps_equal_bf16_stamps_on_bf16_exact_weights) {
  same_as_bf16(FK_Q8, "gemv_q8_f32", "gemv_f32_packed", 1);
  same_as_bf16(FK_Q4, "gemv_q4_f32", "gemv_f32_packed", 1);
  same_as_bf16(FK_Q8, "gemv_q8_bf16_rne", "gemv_bf16_rne_packed", 0);
  same_as_bf16(FK_Q4, "gemv_q4_bf16_rne", "gemv_bf16_rne_packed", 0);
}
