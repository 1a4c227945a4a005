/* runtime/fk_pack.c: weight packing, before readiness (never during a pass).
 * The layout is the one templates/gemv.lua declares (FK_GEMV_PACK_ROWS, FK_GEMV_PACK_TILE): groups
 * of rows, and per group and per tile of k the group's rows one after another, zero-padded. */
#include <string.h>

#include "fk_internal.h"

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
