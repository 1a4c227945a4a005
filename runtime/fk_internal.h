/* runtime/fk_internal.h: shared by the runtime's translation units, not installed. */
#ifndef FK_INTERNAL_H
#define FK_INTERNAL_H

#include "flashkern.h"

fk_status fk_error_set(fk_error *err, fk_status s, const char *file, int line, const char *fmt, ...)
  __attribute__((format(printf, 5, 6)));

/* Records file:line and returns the status from the enclosing function when cond holds. */
#define FK_RETURN_ERROR_IF(cond, err, status, ...) \
  do { \
    if (cond) return fk_error_set((err), (status), __FILE__, __LINE__, __VA_ARGS__); \
  } while (0)

#endif
