/* runtime/fk_pack.c: the host's data in the stamps' formats: bf16 conversions (by the stamps'
 * integer RNE) and weight packing, before readiness (never during a pass).
 * The packed layout is the one templates/gemv.lua declares (FK_GEMV_PACK_ROWS, FK_GEMV_PACK_TILE):
 * groups of rows, and per group and per tile of k the group's rows one after another, zero-padded. */
#include <string.h>

#include "fk_internal.h"

/* ---- bf16 conversions ----------------------------------------------------------------------- */

/* docs/design.md, "BF16 rounding"; tests/contract/rne.c is the oracle (tests/api/test_api.c
 * compares all 2^32 patterns). */
static inline uint16_t rne_bits(uint32_t u) {
  if ((u & 0x7fffffffu) > 0x7f800000u) return 0x7fc0u;   /* the canonical quiet NaN */
  return (uint16_t)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

uint16_t fk_bf16_from_f32(float f) {
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  return rne_bits(u);
}

float fk_f32_from_bf16(uint16_t h) {
  uint32_t u = (uint32_t)h << 16;
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}

/* The refusals of both bulk conversions: src of n elements of sb bytes, dst of n of db. */
static fk_status check_convert(const char *fn, const void *src, size_t sb, const void *dst, size_t db, size_t n,
                               fk_error *err) {
  if (n == 0) return FK_OK;
  FK_RETURN_ERROR_IF(!src, err, FK_EINVAL, "%s: src is NULL (n = %zu)", fn, n);
  FK_RETURN_ERROR_IF(!dst, err, FK_EINVAL, "%s: dst is NULL (n = %zu)", fn, n);
  FK_RETURN_ERROR_IF(n > (size_t)PTRDIFF_MAX / 4, err, FK_EINVAL, "%s: n = %zu: n * 4 bytes overflow the address space",
                     fn, n);
  FK_RETURN_ERROR_IF((uintptr_t)src > UINTPTR_MAX - n * sb, err, FK_EINVAL,
                     "%s: src + n (n = %zu) runs past the address space", fn, n);
  FK_RETURN_ERROR_IF((uintptr_t)dst > UINTPTR_MAX - n * db, err, FK_EINVAL,
                     "%s: dst + n (n = %zu) runs past the address space", fn, n);
  FK_RETURN_ERROR_IF(dst != src && fk_overlap(src, n * sb, dst, n * db), err, FK_EINVAL,
                     "%s: dst overlaps src (only dst == src, in place, may)", fn);
  return FK_OK;
}

/* Blocks of B elements through local copies (memcpy: the host's buffers are bytes to us, whatever
 * their declared type), so that in place is a matter of order: narrowing writes block k over
 * bytes block k or earlier has read, going forward; widening writes block k over bf16 elements of
 * blocks >= k, going backward. */
enum { B = 64 };

fk_status fk_bf16_from_f32_n(const float *src, uint16_t *dst, size_t n, fk_error *err) {
  fk_status s = check_convert("fk_bf16_from_f32_n", src, 4, dst, 2, n, err);
  if (s != FK_OK || n == 0) return s;
  const unsigned char *in = (const unsigned char *)src;
  unsigned char *out = (unsigned char *)dst;
  for (size_t at = 0; at < n; at += B) {
    size_t len = n - at < B ? n - at : B;
    uint32_t u[B];
    uint16_t h[B];
    memcpy(u, in + at * 4, len * 4);
    for (size_t i = 0; i < len; i++) h[i] = rne_bits(u[i]);
    memcpy(out + at * 2, h, len * 2);
  }
  return FK_OK;
}

fk_status fk_f32_from_bf16_n(const uint16_t *src, float *dst, size_t n, fk_error *err) {
  fk_status s = check_convert("fk_f32_from_bf16_n", src, 2, dst, 4, n, err);
  if (s != FK_OK || n == 0) return s;
  const unsigned char *in = (const unsigned char *)src;
  unsigned char *out = (unsigned char *)dst;
  for (size_t at = (n - 1) / B * B;; at -= B) {
    size_t len = n - at < B ? n - at : B;
    uint16_t h[B];
    uint32_t u[B];
    memcpy(h, in + at * 2, len * 2);
    for (size_t i = 0; i < len; i++) u[i] = (uint32_t)h[i] << 16;
    memcpy(out + at * 4, u, len * 4);
    if (at == 0) break;
  }
  return FK_OK;
}

/* ---- weight packing ------------------------------------------------------------------------- */

enum { P = FK_GEMV_PACK_ROWS, T = FK_GEMV_PACK_TILE };

size_t fk_gemv_packed_elems(int64_t n, int64_t k) {
  if (n < 1 || k < 1 || n > INT64_MAX / 2 || k > INT64_MAX / 2) return 0;
  uint64_t rows = ((uint64_t)n + P - 1) / P * P, cols = ((uint64_t)k + T - 1) / T * T;
  if (rows > SIZE_MAX / 2 / cols) return 0; /* the size in bytes fits size_t */
  return (size_t)(rows * cols);
}

fk_status fk_gemv_pack(const uint16_t *w, int64_t ldw, int64_t n, int64_t k, uint16_t *out, size_t out_elems,
                       fk_error *err) {
  FK_RETURN_ERROR_IF(!w, err, FK_EINVAL, "fk_gemv_pack: w is NULL");
  FK_RETURN_ERROR_IF(!out, err, FK_EINVAL, "fk_gemv_pack: out is NULL");
  FK_RETURN_ERROR_IF(n < 1, err, FK_EINVAL, "fk_gemv_pack: n = %lld, must be >= 1", (long long)n);
  FK_RETURN_ERROR_IF(k < 1, err, FK_EINVAL, "fk_gemv_pack: k = %lld, must be >= 1", (long long)k);
  FK_RETURN_ERROR_IF(ldw < k, err, FK_EINVAL, "fk_gemv_pack: ldw = %lld, must be >= k = %lld", (long long)ldw,
                     (long long)k);
  size_t need = fk_gemv_packed_elems(n, k);
  FK_RETURN_ERROR_IF(need == 0, err, FK_EINVAL, "fk_gemv_pack: %lld x %lld overflows", (long long)n, (long long)k);
  size_t wbytes = fk_extent(n, ldw, k, 2);
  FK_RETURN_ERROR_IF(wbytes == 0, err, FK_EINVAL, "fk_gemv_pack: ldw = %lld: n = %lld rows of it overflow",
                     (long long)ldw, (long long)n);
  FK_RETURN_ERROR_IF(out_elems < need, err, FK_EINVAL, "fk_gemv_pack: out holds %zu elements, the layout needs %zu",
                     out_elems, need);
  FK_RETURN_ERROR_IF(fk_overlap(out, need * 2, w, wbytes), err, FK_EINVAL, "fk_gemv_pack: out overlaps w");
  int64_t tiles = (k + T - 1) / T;
  for (int64_t g = 0; g * P < n; g++)
    for (int64_t t = 0; t < tiles; t++)
      for (int64_t r = 0; r < P; r++) {
        uint16_t *dst = out + ((g * tiles + t) * P + r) * T;
        int64_t row = g * P + r, col = t * T, len = row < n ? (k - col < T ? k - col : T) : 0;
        if (len > 0) memcpy(dst, w + row * ldw + col, (size_t)len * sizeof *dst);
        memset(dst + (len > 0 ? len : 0), 0, (size_t)(T - (len > 0 ? len : 0)) * sizeof *dst);
      }
  return FK_OK;
}

/* ---- the blocked layout of the fast tier's outer-product forms --------------------------- */

enum { BR = FK_GEMV_BLOCK_ROWS, BG = FK_GEMV_BLOCK_GROUP, BK = FK_GEMV_BLOCK_KALIGN };

size_t fk_gemv_blocked_elems(int64_t n, int64_t k) {
  if (n < 1 || k < 1 || n > INT64_MAX / 2 || k > INT64_MAX / 2) return 0;
  uint64_t rows = ((uint64_t)n + BR * BG - 1) / (BR * BG) * (BR * BG), cols = ((uint64_t)k + BK - 1) / BK * BK;
  if (rows > SIZE_MAX / 2 / cols) return 0;
  return (size_t)(rows * cols);
}

fk_status fk_gemv_pack_blocked(const uint16_t *w, int64_t ldw, int64_t n, int64_t k, uint16_t *out,
                               size_t out_elems, fk_error *err) {
  FK_RETURN_ERROR_IF(!w, err, FK_EINVAL, "fk_gemv_pack_blocked: w is NULL");
  FK_RETURN_ERROR_IF(!out, err, FK_EINVAL, "fk_gemv_pack_blocked: out is NULL");
  FK_RETURN_ERROR_IF(n < 1, err, FK_EINVAL, "fk_gemv_pack_blocked: n = %lld, must be >= 1", (long long)n);
  FK_RETURN_ERROR_IF(k < 1, err, FK_EINVAL, "fk_gemv_pack_blocked: k = %lld, must be >= 1", (long long)k);
  FK_RETURN_ERROR_IF(ldw < k, err, FK_EINVAL, "fk_gemv_pack_blocked: ldw = %lld, must be >= k = %lld",
                     (long long)ldw, (long long)k);
  size_t need = fk_gemv_blocked_elems(n, k);
  FK_RETURN_ERROR_IF(need == 0, err, FK_EINVAL, "fk_gemv_pack_blocked: %lld x %lld overflows", (long long)n,
                     (long long)k);
  size_t wbytes = fk_extent(n, ldw, k, 2);
  FK_RETURN_ERROR_IF(wbytes == 0, err, FK_EINVAL, "fk_gemv_pack_blocked: ldw = %lld: n = %lld rows of it overflow",
                     (long long)ldw, (long long)n);
  FK_RETURN_ERROR_IF(out_elems < need, err, FK_EINVAL,
                     "fk_gemv_pack_blocked: out holds %zu elements, the layout needs %zu", out_elems, need);
  FK_RETURN_ERROR_IF(fk_overlap(out, need * 2, w, wbytes), err, FK_EINVAL, "fk_gemv_pack_blocked: out overlaps w");
  const int64_t kpad = (k + BK - 1) / BK * BK, rows = (int64_t)(need / (size_t)kpad);
  /* row r, element e at (r / (BR*BG)) * BR*BG * kpad + ((e/2) * BG + (r/BR) % BG) * BR*2 + (r % BR)*2 + e % 2 */
  for (int64_t r = 0; r < rows; r++)
    for (int64_t e = 0; e < kpad; e++)
      out[(r / (BR * BG)) * (BR * BG) * kpad + ((e / 2) * BG + (r / BR) % BG) * BR * 2 + (r % BR) * 2 + e % 2] =
        (r < n && e < k) ? w[r * ldw + e] : 0;
  return FK_OK;
}
