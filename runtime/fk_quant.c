/* runtime/fk_quant.c: the quantized weight formats q8, q4 and q4k (docs/design.md, "Quantized
 * weights"): GGUF Q8_0 / Q4_0 / Q4_K blocks, flashkern's quantizers into them (q8, q4: ggml's
 * reference quantizer with round-to-nearest-even; q4k: ggml's, written out operation by operation),
 * their exact dequantization, and the packed layouts the quantized GEMV stamps read. All before
 * readiness. Compiled with -ffp-contract=off and -fno-math-errno:
 * every f32 operation of the quantizers rounds once, as written, and a square root is the
 * instruction (correctly rounded), not a libm call. */
#include <string.h>

#include "fk_internal.h"

/* the packed layout's rows per group, k per tile (two blocks) and record bytes: templates/gemv.lua's */
enum { QB = FK_Q_BLOCK, PR = FK_GEMV_PACK_ROWS, PT = FK_GEMV_PACK_TILE };

/* q4k's super-block: 8 sub-blocks of 32, each with a 6-bit scale and minimum */
enum { QK = 256, QKB = 144 };

/* formats with GGUF blocks (every entry point but the packed layout's), and with a packed layout */
static int blocks_ok(fk_qformat f) { return f == FK_Q8 || f == FK_Q4 || f == FK_Q4K; }
static int fmt_ok(fk_qformat f) { return blocks_ok(f); }
static const char *fmt_name(fk_qformat f) { return f == FK_Q8 ? "q8" : f == FK_Q4 ? "q4" : "q4k"; }
/* k per GGUF block, bytes of one (scale(s) + quants), and of one packed record: PR rows x rec_k(f) k
 * (q8, q4: a tile, two blocks; q4k: a super-block) */
static int64_t block_k(fk_qformat f) { return f == FK_Q4K ? QK : QB; }
static size_t block_bytes(fk_qformat f) { return f == FK_Q8 ? 34 : f == FK_Q4 ? 18 : QKB; }
static int64_t rec_k(fk_qformat f) { return f == FK_Q4K ? FK_GEMV_Q4K_SPAN : PT; }
static size_t record_bytes(fk_qformat f) {
  return f == FK_Q8 ? FK_GEMV_Q8_RECORD : f == FK_Q4 ? FK_GEMV_Q4_RECORD : FK_GEMV_Q4K_RECORD;
}

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

/* a format with GGUF blocks, n >= 1, k a positive multiple of its block's k, neither near INT64_MAX */
static int dims_ok(fk_qformat f, int64_t n, int64_t k) {
  return blocks_ok(f) && n >= 1 && k >= 1 && k % block_k(f) == 0 && n <= INT64_MAX / 2 && k <= INT64_MAX / 2;
}

size_t fk_q_gguf_bytes(fk_qformat f, int64_t n, int64_t k) {
  if (!dims_ok(f, n, k)) return 0;
  uint64_t blocks = (uint64_t)k / (uint64_t)block_k(f);
  if ((uint64_t)n > SIZE_MAX / 2 / blocks / block_bytes(f)) return 0;
  return (size_t)((uint64_t)n * blocks * block_bytes(f));
}

size_t fk_q_packed_bytes(fk_qformat f, int64_t n, int64_t k) {
  if (!fmt_ok(f) || !dims_ok(f, n, k)) return 0;
  uint64_t groups = ((uint64_t)n + PR - 1) / PR, tiles = ((uint64_t)k + (uint64_t)rec_k(f) - 1) / (uint64_t)rec_k(f);
  if (groups > SIZE_MAX / 2 / tiles / record_bytes(f)) return 0;
  return (size_t)(groups * tiles * record_bytes(f));
}

/* The format an entry point takes (packed: one with a packed layout; else one with GGUF blocks),
 * refused by name otherwise. */
static fk_status check_format(const char *fn, fk_qformat f, int packed, fk_error *err) {
  FK_RETURN_ERROR_IF(packed ? !fmt_ok(f) : !blocks_ok(f), err, FK_EINVAL, "%s: format = %d, must be FK_Q8, FK_Q4 or "
                     "FK_Q4K", fn, (int)f);
  return FK_OK;
}

/* The refusals every entry point shares: format (check_format), n, k (a multiple of the format's
 * block), and the two byte ranges (the source `what` of src_have bytes, at least src_need; the
 * destination of dst_have bytes, at least dst_need) that must not overlap. */
static fk_status check_common(const char *fn, fk_qformat f, int packed, int64_t n, int64_t k, const void *src,
                              const char *what, size_t src_have, size_t src_need, const void *dst, size_t dst_have,
                              size_t dst_need, fk_error *err) {
  fk_status s = check_format(fn, f, packed, err);
  if (s != FK_OK) return s;
  FK_RETURN_ERROR_IF(!src, err, FK_EINVAL, "%s: %s is NULL", fn, what);
  FK_RETURN_ERROR_IF(!dst, err, FK_EINVAL, "%s: out is NULL", fn);
  FK_RETURN_ERROR_IF(n < 1, err, FK_EINVAL, "%s: n = %lld, must be >= 1", fn, (long long)n);
  FK_RETURN_ERROR_IF(k < 1 || k % block_k(f), err, FK_EINVAL,
                     "%s: k = %lld, must be a positive multiple of %lld (a %s %s)", fn, (long long)k,
                     (long long)block_k(f), fmt_name(f), f == FK_Q4K ? "super-block" : "block");
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

/* ---- q4k: GGUF Q4_K's super-blocks ------------------------------------------------------- */

/* A super-block of 256 k: binary16 d and dmin, 12 bytes holding 8 6-bit scales sc and minimums m
 * (get_scale_min), then 128 bytes where byte l of chunk c (0..3) holds sub-block 2c's weight l
 * (low nibble) and sub-block 2c + 1's weight l (high); weight u of sub-block j is
 * RN(d * sc_j * u - dmin * m_j) (docs/design.md). */
static void get_scale_min(int j, const unsigned char *q, int *sc, int *m) {
  if (j < 4) {
    *sc = q[j] & 63;
    *m = q[j + 4] & 63;
  } else {
    *sc = (q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4);
    *m = (q[j + 4] >> 4) | ((q[j] >> 6) << 4);
  }
}

/* ggml's nearest_int: an f32 rounded to the nearest integer, ties to even; saturated at +-4194303
 * (2^22 - 1), past which ggml asserts (no value this quantizer rounds gets near it but by a
 * sub-block whose 6-bit scale is far below its own) */
static int32_t nearest(float v) {
  if (v > 4194303.0f) return 4194303;
  if (v < -4194303.0f) return -4194303;
  return rne_int(v);
}

/* ggml's make_qkx2_quants(32, 15, x, w, L, &min, Laux, -1, 0.1, 20, false): the sub-block's scale
 * and minimum by a weighted least-squares fit over 21 candidate scales; every f32 operation in
 * ggml's order (this file is compiled without contraction). */
static float q4k_fit(const float x[QB], const float w[QB], uint8_t L[QB], float *the_min) {
  float min = x[0], max = x[0], sum_w = w[0], sum_x = sum_w * x[0];
  for (int i = 1; i < QB; i++) {
    if (x[i] < min) min = x[i];
    if (x[i] > max) max = x[i];
    sum_w += w[i];
    sum_x += w[i] * x[i];
  }
  if (min > 0) min = 0;
  if (max == min) {
    memset(L, 0, QB);
    *the_min = -min;
    return 0.0f;
  }
  float iscale = 15.0f / (max - min), scale = 1.0f / iscale, best = 0.0f;
  for (int i = 0; i < QB; i++) {
    int32_t l = nearest(iscale * (x[i] - min));
    L[i] = (uint8_t)(l < 0 ? 0 : l > 15 ? 15 : l);
    float diff = scale * (float)L[i] + min - x[i];
    best += w[i] * (diff * diff);
  }
  for (int is = 0; is <= 20; is++) {
    uint8_t aux[QB];
    iscale = (-1.0f + 0.1f * (float)is + 15.0f) / (max - min);
    float sum_l = 0, sum_l2 = 0, sum_xl = 0;
    for (int i = 0; i < QB; i++) {
      int32_t l = nearest(iscale * (x[i] - min));
      l = l < 0 ? 0 : l > 15 ? 15 : l;
      aux[i] = (uint8_t)l;
      float wl = w[i] * (float)l;
      sum_l += wl;
      sum_l2 += wl * (float)l;
      sum_xl += wl * x[i];
    }
    float D = sum_w * sum_l2 - sum_l * sum_l;
    if (D > 0) {
      float this_scale = (sum_w * sum_xl - sum_x * sum_l) / D, this_min = (sum_l2 * sum_x - sum_l * sum_xl) / D;
      if (this_min > 0) {
        this_min = 0;
        this_scale = sum_xl / sum_l2;
      }
      float cur = 0;
      for (int i = 0; i < QB; i++) {
        float diff = this_scale * (float)aux[i] + this_min - x[i];
        cur += w[i] * (diff * diff);
      }
      if (cur < best) {
        memcpy(L, aux, QB);
        best = cur;
        scale = this_scale;
        min = this_min;
      }
    }
  }
  *the_min = -min;
  return scale;
}

/* ggml's quantize_row_q4_K_ref on one super-block x into out (NULL: only d and dmin, the binary16
 * bits returned in dd[0], dd[1]) */
static void q4k_superblock(const float x[QK], unsigned char *out, uint16_t dd[2]) {
  uint8_t L[QK];
  float scales[QK / QB], mins[QK / QB], w[QB], max_scale = 0, max_min = 0;
  for (int j = 0; j < QK / QB; j++) {
    const float *xb = x + QB * j;
    float sum_x2 = 0;
    for (int l = 0; l < QB; l++) sum_x2 += xb[l] * xb[l];
    float av_x = __builtin_sqrtf(sum_x2 / 32);
    for (int l = 0; l < QB; l++) w[l] = av_x + __builtin_fabsf(xb[l]);
    scales[j] = q4k_fit(xb, w, L + QB * j, &mins[j]);
    if (scales[j] > max_scale) max_scale = scales[j];
    if (mins[j] > max_min) max_min = mins[j];
  }
  dd[0] = f32_to_f16(max_scale / 63.f);
  dd[1] = f32_to_f16(max_min / 63.f);
  if (!out) return;
  float inv_scale = max_scale > 0 ? 63.f / max_scale : 0.f, inv_min = max_min > 0 ? 63.f / max_min : 0.f;
  unsigned char *sb = out + 4;
  memset(sb, 0, 12);
  for (int j = 0; j < QK / QB; j++) {
    uint8_t ls = (uint8_t)nearest(inv_scale * scales[j]), lm = (uint8_t)nearest(inv_min * mins[j]);
    ls = ls > 63 ? 63 : ls;
    lm = lm > 63 ? 63 : lm;
    if (j < 4) {
      sb[j] = ls;
      sb[j + 4] = lm;
    } else {
      sb[j + 4] = (unsigned char)((ls & 0xF) | ((lm & 0xF) << 4));
      sb[j - 4] |= (unsigned char)((ls >> 4) << 6);
      sb[j] |= (unsigned char)((lm >> 4) << 6);
    }
  }
  out[0] = (unsigned char)(dd[0] & 0xff);
  out[1] = (unsigned char)(dd[0] >> 8);
  out[2] = (unsigned char)(dd[1] & 0xff);
  out[3] = (unsigned char)(dd[1] >> 8);
  for (int j = 0; j < QK / QB; j++) {
    int sc, m;
    get_scale_min(j, sb, &sc, &m);
    const float d = f16_to_f32(dd[0]) * (float)sc;
    if (d == 0.0f) continue; /* ggml keeps the fit's quants there */
    const float dm = f16_to_f32(dd[1]) * (float)m;
    for (int i = 0; i < QB; i++) {
      int32_t l = nearest((x[QB * j + i] + dm) / d);
      L[QB * j + i] = (uint8_t)(l < 0 ? 0 : l > 15 ? 15 : l);
    }
  }
  for (int c = 0; c < QK / 64; c++)
    for (int l = 0; l < 32; l++) out[16 + 32 * c + l] = (unsigned char)(L[64 * c + l] | L[64 * c + 32 + l] << 4);
}

static void pack_quantized(fk_qformat f, const uint16_t *w, int64_t ldw, int64_t n, int64_t k, unsigned char *o);
static void pack_q4k_row(const unsigned char *blk, int64_t row, int64_t b, int64_t k, unsigned char *o);

/* The quantizer into GGUF blocks, or (packed) straight into the packed layout. */
static fk_status quantize(const char *fn, fk_qformat f, const float *w32, const uint16_t *w16, size_t esz,
                          int64_t ldw, int64_t n, int64_t k, void *out, size_t out_bytes, int packed, fk_error *err) {
  const void *w = w32 ? (const void *)w32 : (const void *)w16;
  fk_status s = check_format(fn, f, packed, err);
  if (s != FK_OK) return s;
  FK_RETURN_ERROR_IF(w && n >= 1 && k >= 1 && ldw < k, err, FK_EINVAL, "%s: ldw = %lld, must be >= k = %lld", fn,
                     (long long)ldw, (long long)k);
  size_t wbytes = w && n >= 1 && k >= 1 ? fk_extent(n, ldw, k, esz) : 1;
  FK_RETURN_ERROR_IF(wbytes == 0, err, FK_EINVAL, "%s: ldw = %lld: n = %lld rows of it overflow", fn,
                     (long long)ldw, (long long)n);
  s = check_common(fn, f, packed, n, k, w, "w", wbytes, wbytes, out, out_bytes,
                   packed ? fk_q_packed_bytes(f, n, k) : fk_q_gguf_bytes(f, n, k), err);
  if (s != FK_OK) return s;
  /* every value finite and every scale finite in binary16 before a byte is written */
  int64_t nb = k / QB;
  float x[QK];
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
      if (f == FK_Q4K) continue;
      uint16_t bits;
      block_scale(f, x, &bits);
      FK_RETURN_ERROR_IF((bits & 0x7c00u) == 0x7c00u, err, FK_EINVAL,
                         "%s: row %lld, block %lld (k %lld..%lld): its %s scale overflows binary16 (the largest "
                         "|w| must stay below %s)", fn, (long long)r, (long long)b, (long long)(b * QB),
                         (long long)(b * QB + QB - 1), fmt_name(f), f == FK_Q8 ? "127 * 65520" : "8 * 65520");
    }
  unsigned char *o = (unsigned char *)out;
  if (f == FK_Q4K) {
    /* the super-blocks' d and dmin (binary16) first, nothing written, then the blocks (packed: the
     * padding rows zero, each super-block into a local buffer, then into its group's super-record) */
    for (int pass = 0; pass < 2; pass++) {
      if (pass && packed) memset(o, 0, fk_q_packed_bytes(f, n, k));
      for (int64_t r = 0; r < n; r++)
        for (int64_t b = 0; b < k / QK; b++) {
          for (int j = 0; j < QK / QB; j++) block_values(w32, w16, ldw, r, b * (QK / QB) + j, x + QB * j);
          uint16_t dd[2];
          unsigned char sb[QKB];
          q4k_superblock(x, !pass ? NULL : packed ? sb : o + (size_t)(r * (k / QK) + b) * QKB, dd);
          if (pass && packed) pack_q4k_row(sb, r, b, k, o);
          FK_RETURN_ERROR_IF((dd[0] & 0x7c00u) == 0x7c00u || (dd[1] & 0x7c00u) == 0x7c00u, err, FK_EINVAL,
                             "%s: row %lld, super-block %lld (k %lld..%lld): its q4k %s overflows binary16 (the "
                             "sub-blocks' fitted %s must stay below 63 * 65520)", fn, (long long)r, (long long)b,
                             (long long)(b * QK), (long long)(b * QK + QK - 1),
                             (dd[0] & 0x7c00u) == 0x7c00u ? "scale d" : "minimum scale dmin",
                             (dd[0] & 0x7c00u) == 0x7c00u ? "scales" : "minimums");
        }
    }
    return FK_OK;
  }
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
  if (f == FK_Q4K) {
    for (int64_t r = 0; r < n; r++)
      for (int64_t b = 0; b < k / QK; b++)
        for (int h = 0; h < 2; h++) {
          uint16_t d = block_d(src + (size_t)(r * (k / QK) + b) * QKB + 2 * h);
          FK_RETURN_ERROR_IF((d & 0x7c00u) == 0x7c00u, err, FK_EINVAL,
                             "%s: row %lld, super-block %lld (k %lld..%lld): the q4k %s is %s (0x%04x): only finite "
                             "scales are weights", fn, (long long)r, (long long)b, (long long)(b * QK),
                             (long long)(b * QK + QK - 1), h ? "minimum scale dmin" : "scale d",
                             (d & 0x3ffu) ? "NaN" : "infinite", (unsigned)d);
        }
    return FK_OK;
  }
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
  FK_RETURN_ERROR_IF(blocks_ok(f) && n >= 1 && k >= 1 && ldo < k, err, FK_EINVAL,
                     "%s: ldo = %lld, must be >= k = %lld", fn, (long long)ldo, (long long)k);
  size_t obytes = blocks_ok(f) && n >= 1 && k >= 1 ? fk_extent(n, ldo, k, 4) : 1;
  FK_RETURN_ERROR_IF(obytes == 0, err, FK_EINVAL, "%s: ldo = %lld: n = %lld rows of it overflow", fn, (long long)ldo,
                     (long long)n);
  fk_status s = check_common(fn, f, 0, n, k, blocks, "blocks", bytes, need, out, obytes, obytes, err);
  if (s != FK_OK) return s;
  const unsigned char *src = (const unsigned char *)blocks;
  if ((s = check_scales(fn, f, src, n, k, err)) != FK_OK) return s;
  if (f == FK_Q4K) {
    /* d * sc, dmin * m and d * sc * u are exact in f32: one rounding, the subtraction's */
    for (int64_t r = 0; r < n; r++)
      for (int64_t b = 0; b < k / QK; b++) {
        const unsigned char *blk = src + (size_t)(r * (k / QK) + b) * QKB;
        float d = f16_to_f32(block_d(blk)), dmin = f16_to_f32(block_d(blk + 2));
        for (int j = 0; j < QK / QB; j++) {
          int sc, m;
          get_scale_min(j, blk + 4, &sc, &m);
          float d1 = d * (float)sc, m1 = dmin * (float)m;
          for (int i = 0; i < QB; i++) {
            int u = j & 1 ? blk[16 + 32 * (j / 2) + i] >> 4 : blk[16 + 32 * (j / 2) + i] & 15;
            out[r * ldo + b * QK + QB * j + i] = d1 * (float)u - m1;
          }
        }
      }
    return FK_OK;
  }
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

/* q4k's packed layout (docs/design.md; templates/gemv.lua's QUANT.q4k): super-block b of row `row`
 * (GGUF bytes blk) into its group's super-record, rows row mod PR of (row / PR) * (k / 256) + b:
 * tile t's weights k = 64t + 32h + 2l + p at byte 128t + 32r + 16h + l (p = 0 the low nibble), the
 * unpacked six-bit sc_j at Q4K_SC + 8r + j and m_j at Q4K_M + 8r + j, d at Q4K_D + 2r, dmin at Q4K_D
 * + 8 + 2r (binary16, as in the block). */
enum { Q4K_SC = 512, Q4K_M = 544, Q4K_D = 576 };
static void pack_q4k_row(const unsigned char *blk, int64_t row, int64_t b, int64_t k, unsigned char *o) {
  unsigned char *p = o + (size_t)((row / PR) * (k / QK) + b) * FK_GEMV_Q4K_RECORD;
  const size_t r = (size_t)(row % PR);
  for (int j = 0; j < QK / QB; j++) {
    int sc, m;
    get_scale_min(j, blk + 4, &sc, &m);
    p[Q4K_SC + 8 * r + (size_t)j] = (unsigned char)sc;
    p[Q4K_M + 8 * r + (size_t)j] = (unsigned char)m;
  }
  memcpy(p + Q4K_D + 2 * r, blk, 2);
  memcpy(p + Q4K_D + 8 + 2 * r, blk + 2, 2);
  /* GGUF: sub-block j's weight i in byte 16 + 32 (j / 2) + i, the low nibble for even j */
  for (size_t t = 0; t < 4; t++)
    for (size_t h = 0; h < 2; h++)
      for (size_t l = 0; l < 16; l++) {
        const size_t j = 2 * t + h, shift = 4 * (j & 1);
        const unsigned u0 = (blk[16 + 32 * (j / 2) + 2 * l] >> shift) & 15u;
        const unsigned u1 = (blk[16 + 32 * (j / 2) + 2 * l + 1] >> shift) & 15u;
        p[128 * t + 32 * r + 16 * h + l] = (unsigned char)(u0 | u1 << 4);
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
  fk_status s = check_common(fn, f, 1, n, k, blocks, "blocks", bytes, need, out, out_bytes,
                             fk_q_packed_bytes(f, n, k), err);
  if (s != FK_OK) return s;
  const unsigned char *src = (const unsigned char *)blocks;
  if ((s = check_scales(fn, f, src, n, k, err)) != FK_OK) return s;
  if (f == FK_Q4K) {
    memset(out, 0, fk_q_packed_bytes(f, n, k));   /* the padding rows: d = dmin = +0, weights +0 */
    for (int64_t r = 0; r < n; r++)
      for (int64_t b = 0; b < k / QK; b++) pack_q4k_row(src + (size_t)(r * (k / QK) + b) * QKB, r, b, k, out);
    return FK_OK;
  }
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
