/* runtime/ckpt/json.c: reading and decoding the checkpoint's JSON (config.json, the index, the
 * safetensors headers) with jansson.
 *
 * Why jansson (Debian libjansson-dev) over json-c or cJSON: JSON_REJECT_DUPLICATES refuses an
 * object with a key twice, where json-c keeps the last value and cJSON keeps both and answers
 * with the first, so a header or config naming a tensor or a field twice would be read one way
 * here and another way by the reference; its json_error_t gives the line, column and byte of a
 * failure for the message; it decodes a buffer of a given length (json_loadb: a header is not
 * NUL-terminated in the mapping) and refuses integers beyond 64 bits and "\u0000" in keys. */
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
  ck_map map;
  CK_TRY(fk_ckpt_map(dir, rel, &map, err)); /* missing, not a regular file, refused by the system */
  fk_status s;
  if (map.size > JSON_FILE_MAX)
    s = fk_error_set(err, FK_EINVAL, __FILE__, __LINE__,
                     "fk_model_open: %s: %zu bytes, more than a JSON file of a checkpoint holds (%zu)", rel, map.size,
                     JSON_FILE_MAX);
  else
    s = fk_ckpt_json_decode(map.map ? (const void *)map.map : "", map.size, rel, out, err);
  fk_ckpt_unmap(&map);
  return s;
}
