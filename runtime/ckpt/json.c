/* runtime/ckpt/json.c: reading and decoding the checkpoint's JSON (config.json, the index, the
 * safetensors headers) with jansson.
 *
 * Why jansson (Debian libjansson-dev) over json-c or cJSON: JSON_REJECT_DUPLICATES refuses an
 * object with a key twice, where json-c keeps the last value and cJSON keeps both and answers
 * with the first, so a header or config naming a tensor or a field twice would be read one way
 * here and another way by the reference; its json_error_t gives the line, column and byte of a
 * failure for the message; it decodes a buffer of a given length (json_loadb: a header is not
 * NUL-terminated in the mapping) and refuses integers beyond 64 bits and "\u0000" in keys. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ckpt.h"

/* config.json and the index are small; a larger one is not a checkpoint's */
#define JSON_FILE_MAX ((size_t)64 << 20)

fk_status fk_ckpt_json_decode(const void *buf, size_t len, const char *what, json_t **out, fk_error *err) {
  *out = NULL;
  json_error_t je;
  json_t *j = json_loadb(buf, len, JSON_REJECT_DUPLICATES, &je);
  FK_RETURN_ERROR_IF(!j, err, FK_EINVAL, "fk_model_open: %s: not JSON at line %d, column %d (byte %d): %s", what,
                     je.line, je.column, je.position, je.text);
  *out = j;
  return FK_OK;
}

fk_status fk_ckpt_json_file(const char *dir, const char *rel, json_t **out, fk_error *err) {
  *out = NULL;
  char path[4096];
  FK_RETURN_ERROR_IF(snprintf(path, sizeof path, "%s/%s", dir, rel) >= (int)sizeof path, err, FK_EINVAL,
                     "fk_model_open: %s: the path is longer than %zu bytes (in %s)", rel, sizeof path, dir);
  int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK); /* a FIFO must not block the open */
  if (fd < 0) {
    int e = errno;
    FK_RETURN_ERROR_IF(e == ENOENT, err, FK_ENOTFOUND, "fk_model_open: %s: no such file (in %s)", rel, dir);
    return fk_error_set(err, FK_ESYSTEM, __FILE__, __LINE__, "fk_model_open: %s: open: %s (in %s)", rel, strerror(e),
                        dir);
  }
  struct stat st;
  fk_status s = FK_OK;
  char *buf = NULL;
  if (fstat(fd, &st) != 0) {
    s = fk_error_set(err, FK_ESYSTEM, __FILE__, __LINE__, "fk_model_open: %s: stat: %s", rel, strerror(errno));
  } else if (!S_ISREG(st.st_mode)) {
    s = fk_error_set(err, FK_EINVAL, __FILE__, __LINE__, "fk_model_open: %s: not a regular file", rel);
  } else if ((uint64_t)st.st_size > JSON_FILE_MAX) {
    s = fk_error_set(err, FK_EINVAL, __FILE__, __LINE__, "fk_model_open: %s: %lld bytes, more than a JSON file of a "
                     "checkpoint holds (%zu)", rel, (long long)st.st_size, JSON_FILE_MAX);
  } else if (!(buf = malloc((size_t)st.st_size + 1))) {
    s = fk_error_set(err, FK_ENOMEM, __FILE__, __LINE__, "fk_model_open: %s: %lld bytes", rel, (long long)st.st_size);
  } else {
    size_t got = 0, want = (size_t)st.st_size;
    while (got < want) {
      ssize_t r = read(fd, buf + got, want - got);
      if (r < 0 && errno == EINTR) continue;
      if (r <= 0) break;
      got += (size_t)r;
    }
    if (got != want)
      s = fk_error_set(err, FK_ESYSTEM, __FILE__, __LINE__, "fk_model_open: %s: read %zu of %zu bytes", rel, got, want);
    else
      s = fk_ckpt_json_decode(buf, want, rel, out, err);
  }
  free(buf);
  close(fd);
  return s;
}
