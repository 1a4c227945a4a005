/* runtime/fk_error.c: what the library says of itself: its version, status names, error recording. */
#include <stdarg.h>
#include <stdio.h>

#include "fk_internal.h"

static const char *const status_names[FK_STATUS_COUNT] = {
  [FK_OK] = "FK_OK: success",
  [FK_EINVAL] = "FK_EINVAL: invalid argument",
  [FK_EUNSUPPORTED] = "FK_EUNSUPPORTED: a CPU feature the stamps need is missing",
  [FK_ENOTFOUND] = "FK_ENOTFOUND: not found (a leaf form; a checkpoint's file or tensor)",
  [FK_ENOMEM] = "FK_ENOMEM: out of memory at readiness",
  [FK_ESYSTEM] = "FK_ESYSTEM: the system refused a resource at readiness",
  [FK_EBUSY] = "FK_EBUSY: the plan is running",
  [FK_ESTATE] = "FK_ESTATE: state does not fit",
};

const char *fk_version(void) { return FK_VERSION_STRING; }

unsigned fk_version_number(void) { return FK_VERSION_NUMBER; }

const char *fk_strerror(fk_status s) {
  if ((unsigned)s >= FK_STATUS_COUNT || !status_names[s]) return "FK_?: unknown status";
  return status_names[s];
}

fk_status fk_error_set(fk_error *err, fk_status s, const char *file, int line, const char *fmt, ...) {
  if (!err) return s;
  err->status = s;
  err->file = file;
  err->line = line;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(err->message, sizeof err->message, fmt, ap);
  va_end(ap);
  return s;
}
