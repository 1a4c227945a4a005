/* runtime/fk_quant.c: the quantized weight formats q8 and q4 (docs/design.md, "Quantized
 * weights"): GGUF Q8_0 / Q4_0 blocks, flashkern's RNE quantizer into them, their exact
 * dequantization, and the packed layout the quantized GEMV stamps read. All before readiness.
 * Compiled with -ffp-contract=off: every f32 operation of the quantizer rounds once, as written. */
#include <string.h>

#include "fk_internal.h"

/* the packed layout's rows per group, k per tile (two blocks) and record bytes: templates/gemv.lua's */
enum { QB = FK_Q_BLOCK, PR = FK_GEMV_PACK_ROWS, PT = FK_GEMV_PACK_TILE };

static int fmt_ok(fk_qformat f) { return f == FK_Q8 || f == FK_Q4; }
static const char *fmt_name(fk_qformat f) { return f == FK_Q8 ? "q8" : "q4"; }
/* bytes of one GGUF block (scale + quants) and of one packed record (PR rows x two blocks) */
static size_t block_bytes(fk_qformat f) { return f == FK_Q8 ? 34 : 18; }
static size_t record_bytes(fk_qformat f) { return f == FK_Q8 ? FK_GEMV_Q8_RECORD : FK_GEMV_Q4_RECORD; }

/* ---- binary16 ---------------------------------------------------------------------------- */

/* an f32 of magnitude < 2^22 rounded to the nearest integer, ties to even (no rounding mode) */
static int32_t rne_int(float p) {
  float a = p < 0 ? -p : p;
  int32_t i = (int32_t)a;                /* truncation */
  float rest = a - (float)i;             /* exact */
  if (rest > 0.5f || (rest == 0.5f && (i & 1))) i++;
  return p < 0 ? -i : i;
}

/* binary16 -> f32, exact (subnormals become normal f32). */
static float f16_to_f32(uint16_t h) {
  uint32_t sign = (uint32_t)(h >> 15) << 31, e = (h >> 10) & 31u, m = h & 1023u, u;
  if (e == 0) {
    float v = (float)m * 0x1p-24f; /* m < 2^10: exact */
    memcpy(&u, &v, sizeof u);
    u |= sign;
  } else if (e == 31) {
    u = sign | 0x7f800000u | (m << 13);
  } else {
    u = sign | ((e + 112u) << 23) | (m << 13);
  }
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}

/* finite f32 -> binary16, round to nearest even (0x7c00 | sign: overflow) */
static uint16_t f32_to_f16(float f) {
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  uint16_t sign = (uint16_t)((u >> 16) & 0x8000u);
  uint32_t a = u & 0x7fffffffu;
  if (a >= 0x477ff000u) return (uint16_t)(sign | 0x7c00u); /* >= 65520: rounds to infinity */
  if (a < 0x38800000u) {                                   /* below 2^-14: a multiple of 2^-24 */
    float x;
    memcpy(&x, &a, sizeof x);
    x *= 0x1p24f;                                          /* exact: a power of two, no overflow */
    /* (x < 2^10; 1024 is 2^-14, the smallest normal: the encoding carries) */
    return (uint16_t)(sign | (uint32_t)rne_int(x));
  }
  uint32_t e = (a >> 23) - 112u, m = (a >> 13) & 1023u, rest = a & 0x1fffu;
  uint32_t h = (e << 10) | m;
  if (rest > 0x1000u || (rest == 0x1000u && (m & 1u))) h++; /* a carry into e is right */
  return (uint16_t)(sign | h);
}

uint16_t fk_f16_from_f32(float f) {
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)(0x7e00u | ((u >> 16) & 0x8000u));
  if ((u & 0x7fffffffu) == 0x7f800000u) return (uint16_t)(0x7c00u | ((u >> 16) & 0x8000u));
  return f32_to_f16(f);
}
float fk_f32_from_f16(uint16_t h) { return f16_to_f32(h); }

/* ---- sizes ------------------------------------------------------------------------------- */

/* a known format, n >= 1, k a positive multiple of 32, neither near INT64_MAX */
static int dims_ok(fk_qformat f, int64_t n, int64_t k) {
  return fmt_ok(f) && n >= 1 && k >= 1 && k % QB == 0 && n <= INT64_MAX / 2 && k <= INT64_MAX / 2;
}

size_t fk_q_gguf_bytes(fk_qformat f, int64_t n, int64_t k) {
  if (!dims_ok(f, n, k)) return 0;
  uint64_t blocks = (uint64_t)k / QB;
  if ((uint64_t)n > SIZE_MAX / 2 / blocks / block_bytes(f)) return 0;
  return (size_t)((uint64_t)n * blocks * block_bytes(f));
}

size_t fk_q_packed_bytes(fk_qformat f, int64_t n, int64_t k) {
  if (!dims_ok(f, n, k)) return 0;
  uint64_t groups = ((uint64_t)n + PR - 1) / PR, tiles = ((uint64_t)k + PT - 1) / PT;
  if (groups > SIZE_MAX / 2 / tiles / record_bytes(f)) return 0;
  return (size_t)(groups * tiles * record_bytes(f));
}

/* The refusals every entry point shares: format, n, k (a multiple of 32), and the two byte ranges
 * (the source `what` of src_have bytes, at least src_need; the destination of dst_have bytes, at
 * least dst_need) that must not overlap. */
static fk_status check_common(const char *fn, fk_qformat f, int64_t n, int64_t k, const void *src, const char *what,
                              size_t src_have, size_t src_need, const void *dst, size_t dst_have, size_t dst_need,
                              fk_error *err) {
  FK_RETURN_ERROR_IF(!fmt_ok(f), err, FK_EINVAL, "%s: format = %d, must be FK_Q8 or FK_Q4", fn, (int)f);
  FK_RETURN_ERROR_IF(!src, err, FK_EINVAL, "%s: %s is NULL", fn, what);
  FK_RETURN_ERROR_IF(!dst, err, FK_EINVAL, "%s: out is NULL", fn);
  FK_RETURN_ERROR_IF(n < 1, err, FK_EINVAL, "%s: n = %lld, must be >= 1", fn, (long long)n);
  FK_RETURN_ERROR_IF(k < 1 || k % QB, err, FK_EINVAL, "%s: k = %lld, must be a positive multiple of %d (a %s block)",
                     fn, (long long)k, QB, fmt_name(f));
  FK_RETURN_ERROR_IF(src_need == 0 || dst_need == 0, err, FK_EINVAL, "%s: %lld x %lld overflows", fn, (long long)n,
                     (long long)k);
  FK_RETURN_ERROR_IF(src_have < src_need, err, FK_EINVAL, "%s: %s holds %zu bytes, %lld x %lld %s is %zu", fn, what,
                     src_have, (long long)n, (long long)k, fmt_name(f), src_need);
  FK_RETURN_ERROR_IF(dst_have < dst_need, err, FK_EINVAL, "%s: out holds %zu bytes, %lld x %lld %s needs %zu", fn,
                     dst_have, (long long)n, (long long)k, fmt_name(f), dst_need);
  FK_RETURN_ERROR_IF((uintptr_t)src > UINTPTR_MAX - src_need, err, FK_EINVAL,
                     "%s: %s's %zu bytes run past the address space", fn, what, src_need);
  FK_RETURN_ERROR_IF((uintptr_t)dst > UINTPTR_MAX - dst_need, err, FK_EINVAL,
                     "%s: out's %zu bytes run past the address space", fn, dst_need);
  FK_RETURN_ERROR_IF(fk_overlap(src, src_need, dst, dst_need), err, FK_EINVAL, "%s: out overlaps %s", fn, what);
  return FK_OK;
}

/* ---- the quantizer ----------------------------------------------------------------------- */

/* Block b of row r from f32 (w32) or bf16 (w16) weights: its 32 values. */
static void block_values(const float *w32, const uint16_t *w16, int64_t ldw, int64_t r, int64_t b, float x[QB]) {
  if (w32) {
    memcpy(x, w32 + r * ldw + b * QB, QB * sizeof *x);
  } else {
    for (int i = 0; i < QB; i++) x[i] = fk_f32_from_bf16(w16[r * ldw + b * QB + i]);
  }
}

/* The block's scale d (f32) and its binary16 bits; q4: m = the first x of largest |x| (+0 when
 * all are zero), d = m / -8; q8: d = max |x| / 127. */
static float block_scale(fk_qformat f, const float x[QB], uint16_t *bits) {
  float a = 0.0f, m = 0.0f;
  for (int i = 0; i < QB; i++) {
    float v = x[i] < 0 ? -x[i] : x[i];
    if (v > a) {
      a = v;
      m = x[i];
    }
  }
  float d = f == FK_Q8 ? a / 127.0f : m / -8.0f;
  *bits = f32_to_f16(d);
  return d;
}

static void quantize_block(fk_qformat f, const float x[QB], unsigned char *out) {
  uint16_t bits;
  float d = block_scale(f, x, &bits);
  float id = d != 0.0f ? 1.0f / d : 0.0f;
  if (id - id != 0.0f) id = 0.0f; /* |d| < 2^-128: 1 / d overflows (the stored scale is 0): quants 0 */
  out[0] = (unsigned char)(bits & 0xff);
  out[1] = (unsigned char)(bits >> 8);
  if (f == FK_Q8) {
    for (int i = 0; i < QB; i++) out[2 + i] = (unsigned char)(int8_t)rne_int(x[i] * id);
    return;
  }
  int u[QB];
  for (int i = 0; i < QB; i++) {
    int32_t q = rne_int(x[i] * id);
    q = q < -8 ? -8 : q > 7 ? 7 : q;
    u[i] = q + 8;
  }
  for (int j = 0; j < QB / 2; j++) out[2 + j] = (unsigned char)(u[j] | u[j + QB / 2] << 4);
}

static void pack_quantized(fk_qformat f, const uint16_t *w, int64_t ldw, int64_t n, int64_t k, unsigned char *o);

/* The quantizer into GGUF blocks, or (packed) straight into the packed layout. */
static fk_status quantize(const char *fn, fk_qformat f, const float *w32, const uint16_t *w16, size_t esz,
                          int64_t ldw, int64_t n, int64_t k, void *out, size_t out_bytes, int packed, fk_error *err) {
  const void *w = w32 ? (const void *)w32 : (const void *)w16;
  FK_RETURN_ERROR_IF(!fmt_ok(f), err, FK_EINVAL, "%s: format = %d, must be FK_Q8 or FK_Q4", fn, (int)f);
  FK_RETURN_ERROR_IF(w && n >= 1 && k >= 1 && ldw < k, err, FK_EINVAL, "%s: ldw = %lld, must be >= k = %lld", fn,
                     (long long)ldw, (long long)k);
  size_t wbytes = w && n >= 1 && k >= 1 ? fk_extent(n, ldw, k, esz) : 1;
  FK_RETURN_ERROR_IF(wbytes == 0, err, FK_EINVAL, "%s: ldw = %lld: n = %lld rows of it overflow", fn,
                     (long long)ldw, (long long)n);
  fk_status s = check_common(fn, f, n, k, w, "w", wbytes, wbytes, out, out_bytes,
                             packed ? fk_q_packed_bytes(f, n, k) : fk_q_gguf_bytes(f, n, k), err);
  if (s != FK_OK) return s;
  /* every value finite and every scale finite in binary16 before a byte is written */
  int64_t nb = k / QB;
  float x[QB];
  for (int64_t r = 0; r < n; r++)
    for (int64_t b = 0; b < nb; b++) {
      block_values(w32, w16, ldw, r, b, x);
      for (int i = 0; i < QB; i++) {
        uint32_t u;
        memcpy(&u, &x[i], sizeof u);
        FK_RETURN_ERROR_IF((u & 0x7f800000u) == 0x7f800000u, err, FK_EINVAL,
                           "%s: w[%lld][%lld] is %s: only finite weights quantize", fn, (long long)r,
                           (long long)(b * QB + i), (u & 0x7fffffu) ? "NaN" : "infinite");
      }
      uint16_t bits;
      block_scale(f, x, &bits);
      FK_RETURN_ERROR_IF((bits & 0x7c00u) == 0x7c00u, err, FK_EINVAL,
                         "%s: row %lld, block %lld (k %lld..%lld): its %s scale overflows binary16 (the largest "
                         "|w| must stay below %s)", fn, (long long)r, (long long)b, (long long)(b * QB),
                         (long long)(b * QB + QB - 1), fmt_name(f), f == FK_Q8 ? "127 * 65520" : "8 * 65520");
    }
  unsigned char *o = (unsigned char *)out;
  if (packed) {
    pack_quantized(f, w16, ldw, n, k, o);
    return FK_OK;
  }
  for (int64_t r = 0; r < n; r++)
    for (int64_t b = 0; b < nb; b++) {
      block_values(w32, w16, ldw, r, b, x);
      quantize_block(f, x, o + (size_t)(r * nb + b) * block_bytes(f));
    }
  return FK_OK;
}

fk_status fk_q_quantize(fk_qformat f, const float *w, int64_t ldw, int64_t n, int64_t k, void *out, size_t out_bytes,
                        fk_error *err) {
  return quantize("fk_q_quantize", f, w, NULL, 4, ldw, n, k, out, out_bytes, 0, err);
}

fk_status fk_q_quantize_bf16(fk_qformat f, const uint16_t *w, int64_t ldw, int64_t n, int64_t k, void *out,
                             size_t out_bytes, fk_error *err) {
  return quantize("fk_q_quantize_bf16", f, NULL, w, 2, ldw, n, k, out, out_bytes, 0, err);
}

/* ---- reading GGUF blocks ----------------------------------------------------------------- */

static uint16_t block_d(const unsigned char *blk) { return (uint16_t)(blk[0] | blk[1] << 8); }

/* quant i (0..31) of a block, as the signed q */
static int block_q(fk_qformat f, const unsigned char *blk, int i) {
  if (f == FK_Q8) return (int8_t)blk[2 + i];
  return (i < QB / 2 ? blk[2 + i] & 15 : blk[2 + i - QB / 2] >> 4) - 8;
}

/* every scale finite: the first that is not, named */
static fk_status check_scales(const char *fn, fk_qformat f, const unsigned char *src, int64_t n, int64_t k,
                              fk_error *err) {
  int64_t nb = k / QB;
  for (int64_t r = 0; r < n; r++)
    for (int64_t b = 0; b < nb; b++) {
      uint16_t d = block_d(src + (size_t)(r * nb + b) * block_bytes(f));
      FK_RETURN_ERROR_IF((d & 0x7c00u) == 0x7c00u, err, FK_EINVAL,
                         "%s: row %lld, block %lld (k %lld..%lld): the %s scale is %s (0x%04x): only finite scales "
                         "are weights", fn, (long long)r, (long long)b, (long long)(b * QB), (long long)(b * QB + QB - 1),
                         fmt_name(f), (d & 0x3ffu) ? "NaN" : "infinite", (unsigned)d);
    }
  return FK_OK;
}

fk_status fk_q_dequantize(fk_qformat f, const void *blocks, size_t bytes, int64_t n, int64_t k, float *out,
                          int64_t ldo, fk_error *err) {
  const char *fn = "fk_q_dequantize";
  size_t need = fk_q_gguf_bytes(f, n, k);
  FK_RETURN_ERROR_IF(fmt_ok(f) && n >= 1 && k >= 1 && ldo < k, err, FK_EINVAL, "%s: ldo = %lld, must be >= k = %lld",
                     fn, (long long)ldo, (long long)k);
  size_t obytes = fmt_ok(f) && n >= 1 && k >= 1 ? fk_extent(n, ldo, k, 4) : 1;
  FK_RETURN_ERROR_IF(obytes == 0, err, FK_EINVAL, "%s: ldo = %lld: n = %lld rows of it overflow", fn, (long long)ldo,
                     (long long)n);
  fk_status s = check_common(fn, f, n, k, blocks, "blocks", bytes, need, out, obytes, obytes, err);
  if (s != FK_OK) return s;
  const unsigned char *src = (const unsigned char *)blocks;
  if ((s = check_scales(fn, f, src, n, k, err)) != FK_OK) return s;
  int64_t nb = k / QB;
  for (int64_t r = 0; r < n; r++)
    for (int64_t b = 0; b < nb; b++) {
      const unsigned char *blk = src + (size_t)(r * nb + b) * block_bytes(f);
      float d = f16_to_f32(block_d(blk));
      for (int i = 0; i < QB; i++) out[r * ldo + b * QB + i] = (float)block_q(f, blk, i) * d; /* exact */
    }
  return FK_OK;
}

/* ---- the packed layout ------------------------------------------------------------------- */

/* One record: rows r < PR of the group, blocks b < 2 of the tile, from blk[r][b] (NULL: a zero
 * block padding the matrix: quants 0, scale +0). */
static void pack_record(fk_qformat f, const unsigned char *const blk[PR][2], unsigned char *p) {
  size_t qrow = f == FK_Q8 ? 64 : 32, qoff = PR * qrow;
  for (size_t r = 0; r < PR; r++)
    for (size_t b = 0; b < 2; b++) {
      const unsigned char *k = blk[r][b];
      uint16_t d = k ? block_d(k) : 0;
      p[qoff + 4 * r + 2 * b] = (unsigned char)(d & 0xff);
      p[qoff + 4 * r + 2 * b + 1] = (unsigned char)(d >> 8);
      for (size_t l = 0; l < 16; l++) {
        int q0 = k ? block_q(f, k, 2 * (int)l) : 0, q1 = k ? block_q(f, k, 2 * (int)l + 1) : 0;
        if (f == FK_Q8) {
          p[qrow * r + 32 * b + l] = (unsigned char)(int8_t)q0;
          p[qrow * r + 32 * b + 16 + l] = (unsigned char)(int8_t)q1;
        } else {
          p[qrow * r + 16 * b + l] = (unsigned char)((q0 + 8) | (q1 + 8) << 4);
        }
      }
    }
}

/* The packed layout from a source of GGUF blocks: src(ctx, row, kb, scratch) gives block kb of row
 * `row` (in scratch, or in place); rows and blocks past the matrix are zero blocks. */
typedef const unsigned char *(*block_src)(const void *ctx, int64_t row, int64_t kb, unsigned char *scratch);

static void pack_all(fk_qformat f, int64_t n, int64_t k, block_src src, const void *ctx, unsigned char *o) {
  unsigned char tmp[PR][2][34];
  int64_t nb = k / QB, tiles = (k + PT - 1) / PT, groups = (n + PR - 1) / PR;
  for (int64_t g = 0; g < groups; g++)
    for (int64_t t = 0; t < tiles; t++) {
      const unsigned char *blk[PR][2];
      for (int64_t r = 0; r < PR; r++)
        for (int64_t b = 0; b < 2; b++) {
          int64_t row = g * PR + r, kb = 2 * t + b;
          blk[r][b] = row < n && kb < nb ? src(ctx, row, kb, tmp[r][b]) : NULL;
        }
      pack_record(f, blk, o + (size_t)(g * tiles + t) * record_bytes(f));
    }
}

typedef struct gguf_src { const unsigned char *blocks; int64_t nb; size_t bytes; } gguf_src;
static const unsigned char *from_gguf(const void *ctx, int64_t row, int64_t kb, unsigned char *scratch) {
  const gguf_src *g = ctx;
  (void)scratch;
  return g->blocks + (size_t)(row * g->nb + kb) * g->bytes;
}

typedef struct bf16_src { const uint16_t *w; int64_t ldw; fk_qformat f; } bf16_src;
static const unsigned char *from_bf16(const void *ctx, int64_t row, int64_t kb, unsigned char *scratch) {
  const bf16_src *q = ctx;
  float x[QB];
  block_values(NULL, q->w, q->ldw, row, kb, x);
  quantize_block(q->f, x, scratch);
  return scratch;
}

fk_status fk_q_pack(fk_qformat f, const void *blocks, size_t bytes, int64_t n, int64_t k, void *out, size_t out_bytes,
                    fk_error *err) {
  return fk_q_pack_named("fk_q_pack", f, blocks, bytes, n, k, out, out_bytes, err);
}

fk_status fk_q_pack_named(const char *fn, fk_qformat f, const void *blocks, size_t bytes, int64_t n, int64_t k,
                          void *out, size_t out_bytes, fk_error *err) {
  size_t need = fk_q_gguf_bytes(f, n, k);
  fk_status s = check_common(fn, f, n, k, blocks, "blocks", bytes, need, out, out_bytes, fk_q_packed_bytes(f, n, k),
                             err);
  if (s != FK_OK) return s;
  const unsigned char *src = (const unsigned char *)blocks;
  if ((s = check_scales(fn, f, src, n, k, err)) != FK_OK) return s;
  gguf_src g = { src, k / QB, block_bytes(f) };
  pack_all(f, n, k, from_gguf, &g, (unsigned char *)out);
  return FK_OK;
}

/* Readiness's quantizer (fk_internal.h): fk_q_quantize_bf16 then fk_q_pack, without the GGUF
 * copy: each record's eight blocks are quantized into a local buffer. The same checks, first. */
fk_status fk_q_pack_bf16(const char *fn, fk_qformat f, const uint16_t *w, int64_t ldw, int64_t n, int64_t k, void *out,
                         size_t out_bytes, fk_error *err) {
  return quantize(fn, f, NULL, w, 2, ldw, n, k, out, out_bytes, 1, err);
}

static void pack_quantized(fk_qformat f, const uint16_t *w, int64_t ldw, int64_t n, int64_t k, unsigned char *o) {
  bf16_src q = { w, ldw, f };
  pack_all(f, n, k, from_bf16, &q, o);
}
