/* runtime/ckpt/safetensors.c: one safetensors file: mapped read-only (mmap), its header read and
 * checked as the safetensors crate checks it, and stricter where the crate is lenient.
 *
 * The format: 8 bytes, the header length N (little-endian u64); N bytes of JSON, an object of
 * tensor name -> {"dtype", "shape", "data_offsets": [begin, end)} and an optional "__metadata__"
 * (string -> string); then the data area, which the tensors tile in order: offsets relative to
 * its start, each tensor's span its dtype's size times its elements, no gap, no overlap, no byte
 * after the last. Every rule broken is a refusal naming the file, the tensor and the field. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ckpt.h"

static const struct {
  const char *name;
  size_t bytes;
} dtypes[CK_DTYPES] = {
  [CK_BOOL] = { "BOOL", 1 }, [CK_U8] = { "U8", 1 },   [CK_I8] = { "I8", 1 },     [CK_F8_E5M2] = { "F8_E5M2", 1 },
  [CK_F8_E4M3] = { "F8_E4M3", 1 }, [CK_I16] = { "I16", 2 }, [CK_U16] = { "U16", 2 }, [CK_F16] = { "F16", 2 },
  [CK_BF16] = { "BF16", 2 }, [CK_I32] = { "I32", 4 }, [CK_U32] = { "U32", 4 }, [CK_F32] = { "F32", 4 },
  [CK_F64] = { "F64", 8 },   [CK_I64] = { "I64", 8 }, [CK_U64] = { "U64", 8 },
};

const char *fk_ckpt_dtype_name(ck_dtype d) {
  return (unsigned)d < CK_DTYPES ? dtypes[d].name : d == CK_Q8_0 ? "Q8_0" : d == CK_Q4_0 ? "Q4_0"
       : d == CK_Q4_K ? "Q4_K" : "?";
}
size_t fk_ckpt_dtype_bytes(ck_dtype d) { return (unsigned)d < CK_DTYPES ? dtypes[d].bytes : 0; }

/* ---- mapping ---------------------------------------------------------------------------------- */

static int join(char *path, size_t size, const char *dir, const char *rel) {
  int n = snprintf(path, size, "%s/%s", dir, rel);
  return n >= 0 && (size_t)n < size;
}

int fk_ckpt_exists(const char *dir, const char *rel) {
  char path[4096];
  struct stat st;
  return join(path, sizeof path, dir, rel) && stat(path, &st) == 0;
}

fk_status fk_ckpt_map(const char *dir, const char *rel, ck_map *out, fk_error *err) {
  memset(out, 0, sizeof *out);
  char path[4096];
  FK_RETURN_ERROR_IF(!join(path, sizeof path, dir, rel), err, FK_EINVAL,
                     "fk_model_open: %s: the path is longer than %zu bytes (in %s)", rel, sizeof path, dir);
  int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK); /* a FIFO must not block the open */
  if (fd < 0) {
    int e = errno;
    FK_RETURN_ERROR_IF(e == ENOENT, err, FK_ENOTFOUND, "fk_model_open: %s: no such file (in %s)", rel, dir);
    return fk_error_set(err, FK_ESYSTEM, __FILE__, __LINE__, "fk_model_open: %s: open: %s", rel, strerror(e));
  }
  struct stat st;
  fk_status s = FK_OK;
  if (fstat(fd, &st) != 0) {
    s = fk_error_set(err, FK_ESYSTEM, __FILE__, __LINE__, "fk_model_open: %s: stat: %s", rel, strerror(errno));
  } else if (!S_ISREG(st.st_mode)) {
    s = fk_error_set(err, FK_EINVAL, __FILE__, __LINE__, "fk_model_open: %s: not a regular file", rel);
  } else if (st.st_size > 0) {
    void *p = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED)
      s = fk_error_set(err, FK_ESYSTEM, __FILE__, __LINE__, "fk_model_open: %s: mmap of %lld bytes: %s", rel,
                       (long long)st.st_size, strerror(errno));
    else
      *out = (ck_map){ p, (size_t)st.st_size };
  }
  close(fd);
  return s;
}

void fk_ckpt_unmap(ck_map *m) {
  if (m->map) munmap((void *)(uintptr_t)m->map, m->size);
  memset(m, 0, sizeof *m);
}

/* ---- the header ------------------------------------------------------------------------------- */


static fk_status read_dtype(const json_t *v, const char *fname, const char *name, ck_dtype *out, fk_error *err) {
  if (!json_is_string(v)) CK_BAD("%s: tensor '%s': dtype is not a string", fname, name);
  const char *s = json_string_value(v);
  for (int d = 0; d < CK_DTYPES; d++)
    if (!strcmp(s, dtypes[d].name)) {
      *out = (ck_dtype)d;
      return FK_OK;
    }
  CK_BAD("%s: tensor '%s': dtype '%s' is not a safetensors dtype", fname, name, s);
}

/* shape -> t->ndim, t->shape, and its size in bytes (*bytes) without overflow */
static fk_status read_shape(const json_t *v, const char *fname, ck_st_tensor *t, uint64_t *bytes, fk_error *err) {
  if (!json_is_array(v)) CK_BAD("%s: tensor '%s': shape is not an array", fname, t->name);
  size_t nd = json_array_size(v);
  if (nd > CK_MAX_DIMS) CK_BAD("%s: tensor '%s': shape has %zu dimensions, at most %d", fname, t->name, nd, CK_MAX_DIMS);
  uint64_t n = fk_ckpt_dtype_bytes(t->dtype);
  for (size_t i = 0; i < nd; i++) {
    const json_t *d = json_array_get(v, i);
    if (!json_is_integer(d) || json_integer_value(d) < 0)
      CK_BAD("%s: tensor '%s': shape[%zu] is not a non-negative integer", fname, t->name, i);
    t->shape[i] = json_integer_value(d);
    if (__builtin_mul_overflow(n, (uint64_t)t->shape[i], &n))
      CK_BAD("%s: tensor '%s': shape[%zu] = %lld: the size in bytes overflows", fname, t->name, i, (long long)t->shape[i]);
  }
  t->ndim = (int)nd;
  *bytes = n;
  return FK_OK;
}

static fk_status read_offsets(const json_t *v, const char *fname, ck_st_tensor *t, fk_error *err) {
  if (!json_is_array(v) || json_array_size(v) != 2) CK_BAD("%s: tensor '%s': data_offsets is not [begin, end]", fname, t->name);
  const json_t *b = json_array_get(v, 0), *e = json_array_get(v, 1);
  if (!json_is_integer(b) || !json_is_integer(e) || json_integer_value(b) < 0 || json_integer_value(e) < 0)
    CK_BAD("%s: tensor '%s': data_offsets are not non-negative integers", fname, t->name);
  t->begin = (uint64_t)json_integer_value(b);
  t->end = (uint64_t)json_integer_value(e);
  if (t->begin > t->end)
    CK_BAD("%s: tensor '%s': data_offsets [%llu, %llu): begin after end", fname, t->name, (unsigned long long)t->begin,
        (unsigned long long)t->end);
  return FK_OK;
}

static fk_status read_tensor(const char *key, const json_t *v, const char *fname, uint64_t data_len, ck_st_tensor *t,
                             fk_error *err) {
  if (!json_is_object(v)) CK_BAD("%s: tensor '%s': not an object", fname, key);
  t->name = strdup(key);
  FK_RETURN_ERROR_IF(!t->name, err, FK_ENOMEM, "fk_model_open: %s: tensor names", fname);
  const char *k;
  const json_t *f;
  json_object_foreach((json_t *)v, k, f) {
    if (strcmp(k, "dtype") && strcmp(k, "shape") && strcmp(k, "data_offsets"))
      CK_BAD("%s: tensor '%s': key '%s' (a tensor has dtype, shape and data_offsets only)", fname, key, k);
  }
  const json_t *dt = json_object_get(v, "dtype"), *sh = json_object_get(v, "shape"), *off = json_object_get(v, "data_offsets");
  if (!dt || !sh || !off)
    CK_BAD("%s: tensor '%s': no %s", fname, key, !dt ? "dtype" : !sh ? "shape" : "data_offsets");
  uint64_t bytes = 0;
  fk_status s = read_dtype(dt, fname, key, &t->dtype, err);
  if (s == FK_OK) s = read_shape(sh, fname, t, &bytes, err);
  if (s == FK_OK) s = read_offsets(off, fname, t, err);
  if (s != FK_OK) return s;
  char shape[160];
  size_t o = 0;
  for (int i = 0; i < t->ndim && o < sizeof shape; i++)
    o += (size_t)snprintf(shape + o, sizeof shape - o, "%s%lld", i ? ", " : "", (long long)t->shape[i]);
  if (t->end - t->begin != bytes)
    CK_BAD("%s: tensor '%s': data_offsets [%llu, %llu) hold %llu bytes, dtype %s x shape [%s] needs %llu", fname, key,
        (unsigned long long)t->begin, (unsigned long long)t->end, (unsigned long long)(t->end - t->begin),
        dtypes[t->dtype].name, shape, (unsigned long long)bytes);
  if (t->end > data_len)
    CK_BAD("%s: tensor '%s': data_offsets [%llu, %llu) run past the data area (%llu bytes): the file is truncated", fname,
        key, (unsigned long long)t->begin, (unsigned long long)t->end, (unsigned long long)data_len);
  return FK_OK;
}

static int by_offset(const void *pa, const void *pb) {
  const ck_st_tensor *a = pa, *b = pb;
  if (a->begin != b->begin) return a->begin < b->begin ? -1 : 1;
  if (a->end != b->end) return a->end < b->end ? -1 : 1;
  return strcmp(a->name, b->name);
}

static fk_status parse(const unsigned char *b, size_t len, const char *fname, ck_st_header *out, json_t **hj,
                       fk_error *err) {
  if (len < 8) CK_BAD("%s: %zu bytes: shorter than the 8-byte header length", fname, len);
  uint64_t n = 0;
  for (int i = 7; i >= 0; i--) n = n << 8 | b[i];
  if (n > len - 8)
    CK_BAD("%s: header length %llu runs past the end of the file (%zu bytes)", fname, (unsigned long long)n, len);
  if (n > CK_HEADER_MAX)
    CK_BAD("%s: header length %llu is more than the format allows (%llu)", fname, (unsigned long long)n,
        (unsigned long long)CK_HEADER_MAX);
  char what[512];
  snprintf(what, sizeof what, "%s: header", fname);
  fk_status s = fk_ckpt_json_decode(b + 8, (size_t)n, what, hj, err);
  if (s != FK_OK) return s;
  if (!json_is_object(*hj)) CK_BAD("%s: the header is not a JSON object", fname);
  const uint64_t data_len = len - 8 - n;
  out->data_off = 8 + n;
  out->t = calloc(json_object_size(*hj) + 1, sizeof *out->t);
  FK_RETURN_ERROR_IF(!out->t, err, FK_ENOMEM, "fk_model_open: %s: %zu tensors", fname, json_object_size(*hj));
  const char *key;
  const json_t *v;
  json_object_foreach(*hj, key, v) {
    if (!strcmp(key, "__metadata__")) {
      if (!json_is_object(v)) CK_BAD("%s: __metadata__ is not an object", fname);
      const char *mk;
      const json_t *mv;
      json_object_foreach((json_t *)v, mk, mv) {
        if (!json_is_string(mv)) CK_BAD("%s: __metadata__['%s'] is not a string", fname, mk);
      }
      out->metadata = (int)json_object_size(v);
      continue;
    }
    s = read_tensor(key, v, fname, data_len, &out->t[out->n++], err);
    if (s != FK_OK) return s;
  }
  /* the tensors tile the data area in offset order (the safetensors crate's rule) */
  qsort(out->t, (size_t)out->n, sizeof *out->t, by_offset);
  uint64_t at = 0;
  for (int i = 0; i < out->n; i++) {
    const ck_st_tensor *t = &out->t[i];
    if (t->begin < at)
      CK_BAD("%s: tensor '%s': data_offsets [%llu, %llu) overlap tensor '%s' [%llu, %llu)", fname, t->name,
          (unsigned long long)t->begin, (unsigned long long)t->end, out->t[i - 1].name,
          (unsigned long long)out->t[i - 1].begin, (unsigned long long)out->t[i - 1].end);
    if (t->begin > at)
      CK_BAD("%s: tensor '%s': data_offsets [%llu, %llu) leave bytes [%llu, %llu) of the data area to no tensor", fname,
          t->name, (unsigned long long)t->begin, (unsigned long long)t->end, (unsigned long long)at,
          (unsigned long long)t->begin);
    at = t->end;
  }
  if (at != data_len)
    CK_BAD("%s: %llu bytes after the last tensor's data (the data area has %llu, the tensors cover %llu)", fname,
        (unsigned long long)(data_len - at), (unsigned long long)data_len, (unsigned long long)at);
  return FK_OK;
}

fk_status fk_ckpt_st_parse(const void *buf, size_t len, const char *fname, ck_st_header *out, fk_error *err) {
  memset(out, 0, sizeof *out);
  json_t *hj = NULL;
  fk_status s = parse(buf, len, fname, out, &hj, err);
  json_decref(hj);
  if (s != FK_OK) fk_ckpt_st_free(out);
  return s;
}

void fk_ckpt_st_free(ck_st_header *h) {
  if (h->t)
    for (int i = 0; i < h->n; i++) free(h->t[i].name);
  free(h->t);
  memset(h, 0, sizeof *h);
}
