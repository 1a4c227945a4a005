/* runtime/ckpt/index.c: a sharded checkpoint's model.safetensors.index.json (transformers' and
 * accelerate's format): {"metadata": {"total_size": ...}, "weight_map": {tensor: shard file}}.
 * The index is read here; that every shard it names exists and holds exactly the tensors it
 * says is checked where the shards are read (model.c). */
#define _POSIX_C_SOURCE 200809L
#include <stdlib.h>
#include <string.h>

#include "ckpt.h"

/* A shard is a file beside the index: a plain name (no directory, not hidden) ending .safetensors. */
static int plain_shard(const char *s) {
  size_t n = strlen(s), k = strlen(".safetensors");
  return n > k && s[0] != '.' && !strchr(s, '/') && !strchr(s, '\\') && !strcmp(s + n - k, ".safetensors");
}

static int by_string(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }
static int by_tensor(const void *a, const void *b) {
  return strcmp(((const ck_index_entry *)a)->tensor, ((const ck_index_entry *)b)->tensor);
}

static fk_status parse(const json_t *j, const char *fname, ck_index *ix, fk_error *err) {
  if (!json_is_object(j)) CK_BAD("%s: not a JSON object", fname);
  const char *key;
  const json_t *v;
  json_object_foreach((json_t *)j, key, v) {
    if (strcmp(key, "weight_map") && strcmp(key, "metadata"))
      CK_BAD("%s: key '%s' (an index has weight_map and metadata only)", fname, key);
  }
  const json_t *meta = json_object_get(j, "metadata"), *wm = json_object_get(j, "weight_map");
  if (meta && !json_is_object(meta)) CK_BAD("%s: metadata is not an object", fname);
  const json_t *ts = meta ? json_object_get(meta, "total_size") : NULL;
  if (ts) {
    if (!json_is_integer(ts) || json_integer_value(ts) < 0) CK_BAD("%s: metadata.total_size is not a non-negative integer", fname);
    ix->total_size = (uint64_t)json_integer_value(ts);
  }
  if (!wm) CK_BAD("%s: no weight_map", fname);
  if (!json_is_object(wm)) CK_BAD("%s: weight_map is not an object", fname);
  size_t n = json_object_size(wm);
  if (n == 0) CK_BAD("%s: weight_map names no tensor", fname);
  ix->e = calloc(n, sizeof *ix->e);
  ix->shard = calloc(n, sizeof *ix->shard);
  char **names = calloc(n, sizeof *names); /* each entry's shard name, borrowed from the JSON */
  if (!ix->e || !ix->shard || !names) {
    free(names);
    return fk_error_set(err, FK_ENOMEM, __FILE__, __LINE__, "fk_model_open: %s: %zu entries", fname, n);
  }
  json_object_foreach((json_t *)wm, key, v) {
    const char *shard = json_string_value(v);
    fk_status s = FK_OK;
    if (!json_is_string(v))
      s = fk_error_set(err, FK_EINVAL, __FILE__, __LINE__, "fk_model_open: %s: weight_map['%s'] is not a string", fname, key);
    else if (!plain_shard(shard))
      s = fk_error_set(err, FK_EINVAL, __FILE__, __LINE__,
                       "fk_model_open: %s: weight_map['%s'] = '%s': not a .safetensors file beside the index", fname,
                       key, shard);
    else if (!(ix->e[ix->n].tensor = strdup(key)))
      s = fk_error_set(err, FK_ENOMEM, __FILE__, __LINE__, "fk_model_open: %s: tensor names", fname);
    if (s != FK_OK) {
      free(names);
      return s;
    }
    names[ix->n++] = (char *)shard;
  }
  /* the distinct shard names, sorted; each entry points at its own */
  char **sorted = calloc(n, sizeof *sorted);
  if (!sorted) {
    free(names);
    return fk_error_set(err, FK_ENOMEM, __FILE__, __LINE__, "fk_model_open: %s: %zu entries", fname, n);
  }
  memcpy(sorted, names, n * sizeof *names);
  qsort(sorted, n, sizeof *sorted, by_string);
  fk_status s = FK_OK;
  for (size_t i = 0; i < n && s == FK_OK; i++) {
    if (i && !strcmp(sorted[i], sorted[i - 1])) continue;
    if (!(ix->shard[ix->nshards] = strdup(sorted[i])))
      s = fk_error_set(err, FK_ENOMEM, __FILE__, __LINE__, "fk_model_open: %s: shard names", fname);
    else
      ix->nshards++;
  }
  for (int i = 0; i < ix->n && s == FK_OK; i++) {
    char **hit = bsearch(&names[i], ix->shard, (size_t)ix->nshards, sizeof *ix->shard, by_string);
    ix->e[i].shard = (int)(hit - ix->shard);
  }
  free(sorted);
  free(names);
  if (s == FK_OK) qsort(ix->e, (size_t)ix->n, sizeof *ix->e, by_tensor);
  return s;
}

fk_status fk_ckpt_index_parse(const void *buf, size_t len, const char *fname, ck_index *out, fk_error *err) {
  memset(out, 0, sizeof *out);
  json_t *j;
  fk_status s = fk_ckpt_json_decode(buf, len, fname, &j, err);
  if (s != FK_OK) return s;
  s = parse(j, fname, out, err);
  json_decref(j);
  if (s != FK_OK) fk_ckpt_index_free(out);
  return s;
}

void fk_ckpt_index_free(ck_index *ix) {
  if (ix->e)
    for (int i = 0; i < ix->n; i++) free(ix->e[i].tensor);
  if (ix->shard)
    for (int i = 0; i < ix->nshards; i++) free(ix->shard[i]);
  free(ix->e);
  free(ix->shard);
  memset(ix, 0, sizeof *ix);
}

int fk_ckpt_index_shard(const ck_index *ix, const char *tensor) {
  int lo = 0, hi = ix->n - 1;
  while (lo <= hi) {
    int mid = lo + (hi - lo) / 2, c = strcmp(tensor, ix->e[mid].tensor);
    if (c == 0) return ix->e[mid].shard;
    if (c < 0) hi = mid - 1;
    else lo = mid + 1;
  }
  return -1;
}
