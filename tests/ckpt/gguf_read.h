/* tests/ckpt/gguf_read.h: a small GGUF reader of the tests' own (not runtime/ckpt/gguf.c), for the GGUF
 * fixtures (fixtures/gguf/): where each key, tensor info and tensor's data sits in a file image, so a test can
 * find a tensor's bytes without the loader, and patch a copy at a known byte (tests/ckpt/test_gguf_fixtures.c,
 * the gguf_* rows of tests/badinput/test_badinput.c).
 *
 * The format (GGUF v2/v3, little-endian): "GGUF", u32 version, u64 tensor count, u64 key-value count; the pairs
 * (u64 length + key bytes, u32 value type, the value: scalars, a string = u64 length + bytes, an array = u32
 * element type, u64 count, the elements); the tensor infos (name, u32 dimensions, u64 ne[] innermost first,
 * u32 ggml type, u64 offset); the data from the infos' end rounded up to general.alignment (32 when absent).
 * Header only (static inline functions). */
#ifndef FKT_GGUF_READ_H
#define FKT_GGUF_READ_H

#include <stdint.h>
#include <stdio.h>
#include <string.h>

enum { GGR_MAX_KV = 64, GGR_MAX_T = 256, GGR_NAME = 128 };
enum { GGR_F32 = 0, GGR_F16 = 1, GGR_Q4_0 = 2, GGR_Q8_0 = 8, GGR_Q4_K = 12, GGR_BF16 = 30 };

typedef struct ggr_kv {
  char key[GGR_NAME];
  size_t key_at;      /* the key's bytes (after its u64 length) */
  uint32_t type;
  size_t val_at, end; /* the value's first byte, one past its last */
} ggr_kv;

typedef struct ggr_tensor {
  char name[GGR_NAME];
  size_t name_at;     /* the name's bytes (after its u64 length) */
  uint32_t nd;
  uint64_t ne[4];
  uint32_t type;
  size_t type_at, off_at; /* the u32 type and the u64 offset fields */
  uint64_t off;       /* from the data's start */
  size_t data;        /* absolute: data start + off */
  size_t nbytes;      /* of its data (F32, F16, BF16, Q8_0, Q4_0, Q4_K; else 0) */
} ggr_tensor;

typedef struct ggr {
  uint32_t version;
  uint64_t nt, nkv, align;
  size_t info_at, info_end, data; /* the first tensor info, the infos' end, the data's start */
  int nkvs, nts;
  ggr_kv kv[GGR_MAX_KV];
  ggr_tensor t[GGR_MAX_T];
} ggr;

static inline size_t ggr_vsize(uint32_t t) {
  static const size_t s[13] = { 1, 1, 2, 2, 4, 4, 4, 1, 0, 0, 8, 8, 8 };
  return t < 13 ? s[t] : 0;
}

static inline int ggr_u32(const unsigned char *p, size_t n, size_t *at, uint32_t *v) {
  if (n - *at < 4 || *at > n) return -1;
  memcpy(v, p + *at, 4);
  *at += 4;
  return 0;
}

static inline int ggr_u64(const unsigned char *p, size_t n, size_t *at, uint64_t *v) {
  if (n - *at < 8 || *at > n) return -1;
  memcpy(v, p + *at, 8);
  *at += 8;
  return 0;
}

/* past one value of type t (depth: arrays in arrays) */
static inline int ggr_skip(const unsigned char *p, size_t n, size_t *at, uint32_t t, int depth) {
  uint64_t len;
  if (t == 8) { /* string */
    if (ggr_u64(p, n, at, &len) || len > n - *at) return -1;
    *at += len;
    return 0;
  }
  if (t == 9) { /* array */
    uint32_t et;
    if (depth > 3 || ggr_u32(p, n, at, &et) || ggr_u64(p, n, at, &len)) return -1;
    for (uint64_t i = 0; i < len; i++)
      if (ggr_skip(p, n, at, et, depth + 1)) return -1;
    return 0;
  }
  size_t s = ggr_vsize(t);
  if (!s || s > n - *at) return -1;
  *at += s;
  return 0;
}

static inline size_t ggr_type_bytes(uint32_t type, uint64_t elems) {
  switch (type) {
  case GGR_F32: return (size_t)elems * 4;
  case GGR_F16: case GGR_BF16: return (size_t)elems * 2;
  case GGR_Q8_0: return (size_t)(elems / 32 * 34);
  case GGR_Q4_0: return (size_t)(elems / 32 * 18);
  case GGR_Q4_K: return (size_t)(elems / 256 * 144);
  default: return 0;
  }
}

/* Parses the file image p[0, n) into *g; 0, or -1 with a message in err. */
static inline int ggr_parse(const unsigned char *p, size_t n, ggr *g, char *err, size_t errlen) {
  memset(g, 0, sizeof *g);
  size_t at = 4;
  g->align = 32;
  if (n < 24 || memcmp(p, "GGUF", 4)) return snprintf(err, errlen, "not a GGUF image"), -1;
  if (ggr_u32(p, n, &at, &g->version) || ggr_u64(p, n, &at, &g->nt) || ggr_u64(p, n, &at, &g->nkv))
    return snprintf(err, errlen, "header"), -1;
  if (g->nkv > GGR_MAX_KV || g->nt > GGR_MAX_T) return snprintf(err, errlen, "%llu keys, %llu tensors: too many",
                                                                (unsigned long long)g->nkv, (unsigned long long)g->nt), -1;
  for (uint64_t i = 0; i < g->nkv; i++) {
    ggr_kv *k = &g->kv[g->nkvs++];
    uint64_t len;
    if (ggr_u64(p, n, &at, &len) || len >= GGR_NAME || len > n - at) return snprintf(err, errlen, "key %llu", (unsigned long long)i), -1;
    k->key_at = at;
    memcpy(k->key, p + at, (size_t)len);
    k->key[len] = 0;
    at += (size_t)len;
    if (ggr_u32(p, n, &at, &k->type)) return snprintf(err, errlen, "key %s: type", k->key), -1;
    k->val_at = at;
    if (ggr_skip(p, n, &at, k->type, 0)) return snprintf(err, errlen, "key %s: value", k->key), -1;
    k->end = at;
    if (!strcmp(k->key, "general.alignment") && k->type == 4) {
      uint32_t a;
      memcpy(&a, p + k->val_at, 4);
      g->align = a;
    }
  }
  g->info_at = at;
  for (uint64_t i = 0; i < g->nt; i++) {
    ggr_tensor *t = &g->t[g->nts++];
    uint64_t len, elems = 1;
    if (ggr_u64(p, n, &at, &len) || len >= GGR_NAME || len > n - at) return snprintf(err, errlen, "tensor %llu", (unsigned long long)i), -1;
    t->name_at = at;
    memcpy(t->name, p + at, (size_t)len);
    t->name[len] = 0;
    at += (size_t)len;
    if (ggr_u32(p, n, &at, &t->nd) || t->nd < 1 || t->nd > 4) return snprintf(err, errlen, "tensor %s: dimensions", t->name), -1;
    for (uint32_t d = 0; d < t->nd; d++) {
      if (ggr_u64(p, n, &at, &t->ne[d])) return snprintf(err, errlen, "tensor %s: ne", t->name), -1;
      elems *= t->ne[d];
    }
    t->type_at = at;
    if (ggr_u32(p, n, &at, &t->type)) return snprintf(err, errlen, "tensor %s: type", t->name), -1;
    t->off_at = at;
    if (ggr_u64(p, n, &at, &t->off)) return snprintf(err, errlen, "tensor %s: offset", t->name), -1;
    t->nbytes = ggr_type_bytes(t->type, elems);
  }
  g->info_end = at;
  g->data = (at + g->align - 1) / g->align * g->align;
  for (int i = 0; i < g->nts; i++) {
    ggr_tensor *t = &g->t[i];
    t->data = g->data + (size_t)t->off;
    if (t->data > n || t->nbytes > n - t->data) return snprintf(err, errlen, "tensor %s: past the end", t->name), -1;
  }
  return 0;
}

static inline const ggr_tensor *ggr_tensor_named(const ggr *g, const char *name) {
  for (int i = 0; i < g->nts; i++)
    if (!strcmp(g->t[i].name, name)) return &g->t[i];
  return NULL;
}

static inline const ggr_kv *ggr_kv_named(const ggr *g, const char *key) {
  for (int i = 0; i < g->nkvs; i++)
    if (!strcmp(g->kv[i].key, key)) return &g->kv[i];
  return NULL;
}

#endif
