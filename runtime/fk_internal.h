/* runtime/fk_internal.h: what every runtime file shares (not installed): error recording
 * (fk_error_set, FK_RETURN_ERROR_IF) and the byte-range helpers fk_overlap and fk_extent. */
#ifndef FK_INTERNAL_H
#define FK_INTERNAL_H

#include <stdint.h>

#include "flashkern.h"

fk_status fk_error_set(fk_error *err, fk_status s, const char *file, int line, const char *fmt, ...)
  __attribute__((format(printf, 5, 6)));

/* Records file:line and returns the status from the enclosing function when cond holds. */
#define FK_RETURN_ERROR_IF(cond, err, status, ...) \
  do { \
    if (cond) return fk_error_set((err), (status), __FILE__, __LINE__, __VA_ARGS__); \
  } while (0)

/* 1 when the byte ranges [a, a + an) and [b, b + bn) share a byte (an empty range shares none). */
static inline int fk_overlap(const void *a, size_t an, const void *b, size_t bn) {
  uintptr_t x = (uintptr_t)a, y = (uintptr_t)b;
  return an && bn && x < y + bn && y < x + an;
}

/* Bytes spanned by `rows` rows of `width` elements of `elem` bytes at row stride `ld` (rows,
 * width >= 1, ld >= width): ((rows - 1) * ld + width) * elem, or 0 when beyond PTRDIFF_MAX. */
static inline size_t fk_extent(int64_t rows, int64_t ld, int64_t width, size_t elem) {
  const int64_t lim = PTRDIFF_MAX / (int64_t)elem;
  if (width > lim || (rows > 1 && ld > (lim - width) / (rows - 1))) return 0;
  return (size_t)((rows - 1) * ld + width) * elem;
}

#endif
