/* fuzz_ckpt.c: libFuzzer target for the checkpoint loader's readers (runtime/ckpt/,
 * libflashkern_ckpt): a safetensors file's header and offsets (fk_ckpt_st_parse), a sharded
 * checkpoint's model.safetensors.index.json (fk_ckpt_index_parse) and config.json
 * (fk_ckpt_config_kind, then fk_ckpt_config_lfm2 / fk_ckpt_config_audio).
 *
 * Input: byte 0 selects the reader (its value mod 4: 0 safetensors, 1 index, 2 config.json, 3 an LFM2
 * GGUF file: fk_ckpt_gguf_parse, its keys and tensor infos); the
 * rest is the file, copied into a buffer of exactly its size without a terminator (a read past it
 * is an AddressSanitizer report).
 *
 * Checked for every input: no crash, leak or undefined behaviour; the same status with err NULL;
 * a refusal is FK_EINVAL (or FK_ENOMEM) with a message naming the file, and leaves *out empty;
 * an acceptance satisfies the format's rules, re-derived here: the tensors tile the data area in
 * order with spans of dtype x shape bytes; the index's entries are sorted, unique and point at
 * sorted, unique, plain .safetensors shard names; a config's values are in the runtime's ranges; a GGUF
 * file's tensors lie inside it with the bytes their type and shape take, and its stack is in range. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ckpt/ckpt.h"
#include "fuzz_common.h"

static int is_zero(const void *p, size_t n) {
  const unsigned char *b = p;
  for (size_t i = 0; i < n; i++)
    if (b[i]) return 0;
  return 1;
}

static void refused(fk_status s, const fk_error *e, const char *fname) {
  FUZZ_REQUIRE(s == FK_EINVAL || s == FK_ENOMEM, "status %d", (int)s);
  FUZZ_REQUIRE(e->status == s, "err.status %d, returned %d", (int)e->status, (int)s);
  FUZZ_REQUIRE(memchr(e->message, 0, sizeof e->message) && strstr(e->message, fname), "message '%.200s'", e->message);
}

static void safetensors(const char *buf, size_t n) {
  ck_st_header h, h2;
  fk_error e;
  fk_status s = fk_ckpt_st_parse(buf, n, "fz.safetensors", &h, &e);
  FUZZ_REQUIRE(fk_ckpt_st_parse(buf, n, "fz.safetensors", &h2, NULL) == s, "another verdict without err");
  fk_ckpt_st_free(&h2);
  if (s != FK_OK) {
    refused(s, &e, "fz.safetensors");
    FUZZ_REQUIRE(is_zero(&h, sizeof h), "*out not empty after a refusal");
    FUZZ_SAY("safetensors: %s", e.message);
    return;
  }
  FUZZ_REQUIRE(n >= 8 && h.data_off >= 8 && h.data_off <= n, "data_off %llu of %zu", (unsigned long long)h.data_off, n);
  uint64_t hl = 0;
  for (int i = 7; i >= 0; i--) hl = hl << 8 | (unsigned char)buf[i];
  FUZZ_REQUIRE(h.data_off == 8 + hl, "data_off is not 8 + the header length");
  uint64_t at = 0;
  for (int i = 0; i < h.n; i++) {
    const ck_st_tensor *t = &h.t[i];
    FUZZ_REQUIRE(t->name && t->dtype < CK_DTYPES && t->ndim >= 0 && t->ndim <= CK_MAX_DIMS, "tensor %d", i);
    uint64_t bytes = fk_ckpt_dtype_bytes(t->dtype);
    for (int d = 0; d < t->ndim; d++) {
      FUZZ_REQUIRE(t->shape[d] >= 0, "shape");
      FUZZ_REQUIRE(!__builtin_mul_overflow(bytes, (uint64_t)t->shape[d], &bytes), "size overflow accepted");
    }
    FUZZ_REQUIRE(t->begin == at && t->end - t->begin == bytes, "tensor '%s' [%llu, %llu) does not follow at %llu with %llu bytes",
                 t->name, (unsigned long long)t->begin, (unsigned long long)t->end, (unsigned long long)at,
                 (unsigned long long)bytes);
    at = t->end;
  }
  FUZZ_REQUIRE(at == n - h.data_off, "the tensors cover %llu of %llu data bytes", (unsigned long long)at,
               (unsigned long long)(n - h.data_off));
  FUZZ_SAY("safetensors: %d tensors, %d metadata entries", h.n, h.metadata);
  fk_ckpt_st_free(&h);
}

static void index_json(const char *buf, size_t n) {
  ck_index ix, ix2;
  fk_error e;
  fk_status s = fk_ckpt_index_parse(buf, n, "fz.index.json", &ix, &e);
  FUZZ_REQUIRE(fk_ckpt_index_parse(buf, n, "fz.index.json", &ix2, NULL) == s, "another verdict without err");
  fk_ckpt_index_free(&ix2);
  if (s != FK_OK) {
    refused(s, &e, "fz.index.json");
    FUZZ_REQUIRE(is_zero(&ix, sizeof ix), "*out not empty after a refusal");
    FUZZ_SAY("index: %s", e.message);
    return;
  }
  FUZZ_REQUIRE(ix.n >= 1 && ix.nshards >= 1 && ix.nshards <= ix.n, "%d entries, %d shards", ix.n, ix.nshards);
  for (int i = 0; i < ix.nshards; i++) {
    const char *sh = ix.shard[i];
    size_t l = strlen(sh);
    FUZZ_REQUIRE(l > 12 && !strcmp(sh + l - 12, ".safetensors") && sh[0] != '.' && !strchr(sh, '/'), "shard '%s'", sh);
    FUZZ_REQUIRE(i == 0 || strcmp(ix.shard[i - 1], sh) < 0, "shards not sorted and unique");
  }
  for (int i = 0; i < ix.n; i++) {
    FUZZ_REQUIRE(i == 0 || strcmp(ix.e[i - 1].tensor, ix.e[i].tensor) < 0, "entries not sorted and unique");
    FUZZ_REQUIRE(ix.e[i].shard >= 0 && ix.e[i].shard < ix.nshards, "shard index");
    FUZZ_REQUIRE(fk_ckpt_index_shard(&ix, ix.e[i].tensor) == ix.e[i].shard, "lookup of '%s'", ix.e[i].tensor);
  }
  FUZZ_SAY("index: %d tensors in %d shards", ix.n, ix.nshards);
  fk_ckpt_index_free(&ix);
}

static void stack_ok(const ck_lfm2 *c, int detok) {
  FUZZ_REQUIRE(c->hidden >= 1 && c->hidden <= 65536 && c->layers >= 1 && c->layers <= FK_MAX_LAYERS, "hidden, layers");
  FUZZ_REQUIRE(c->head_dim == 64 && c->heads >= 1 && c->heads * 64 <= 65536, "heads");
  FUZZ_REQUIRE(c->kv_heads >= 1 && c->heads % c->kv_heads == 0, "kv_heads");
  FUZZ_REQUIRE(c->ffn >= 1 && c->ffn <= 65536 && c->vocab >= 1 && c->max_pos >= 1, "ffn, vocab, max_pos");
  FUZZ_REQUIRE(c->rope_theta > 1.0f && c->rope_theta < 1e30f && c->norm_eps > 0.0f && c->norm_eps < 1.0f, "theta, eps");
  FUZZ_REQUIRE(detok ? c->window >= 1 : c->window == 0, "window %lld", (long long)c->window);
  int64_t a = 0;
  for (int64_t i = 0; i < c->layers; i++) a += c->attn[i];
  FUZZ_REQUIRE(a == c->attn_layers, "attn_layers");
}

static void config(const char *buf, size_t n) {
  json_t *j;
  fk_error e;
  fk_status s = fk_ckpt_json_decode(buf, n, "fz.json", &j, &e);
  if (s != FK_OK) {
    refused(s, &e, "fz.json");
    FUZZ_REQUIRE(!j, "*out not NULL after a refusal");
    FUZZ_SAY("config: %s", e.message);
    return;
  }
  fk_model_kind k;
  const char *arch;
  s = fk_ckpt_config_kind(j, "fz.json", FK_MODEL_AUTO, &k, &arch, &e);
  if (s == FK_OK) {
    ck_lfm2 c;
    ck_audio a;
    switch (k) {
    case FK_MODEL_LFM2_LM: s = fk_ckpt_config_lfm2(j, "fz.json", "", 0, &c, &e); break;
    case FK_MODEL_DETOK: s = fk_ckpt_config_lfm2(j, "fz.json", "", 1, &c, &e); break;
    default:
      s = fk_ckpt_config_audio(j, "fz.json", &a, &c, &e);
      if (s == FK_OK)
        FUZZ_REQUIRE(a.codebooks >= 1 && a.depth_layers >= 1 && a.depth_dim % 32 == 0 && a.depth_ff % 256 == 0,
                     "audio sections");
      break;
    }
    if (s == FK_OK) stack_ok(&c, k == FK_MODEL_DETOK);
  }
  if (s != FK_OK) refused(s, &e, "fz.json");
  FUZZ_SAY("config: %s", s == FK_OK ? arch : e.message);
  json_decref(j);
}

static void gguf_free(fk_model *m) {
  for (int i = 0; i < m->nt; i++) {
    free(m->t[i].name);
    free(m->t[i].label);
  }
  free(m->t);
}

static void gguf(const char *buf, size_t n) {
  fk_model m, m2;
  memset(&m, 0, sizeof m);
  memset(&m2, 0, sizeof m2);
  fk_error e;
  fk_status s = fk_ckpt_gguf_parse(&m, buf, n, "fz.gguf", 0, &e);
  FUZZ_REQUIRE(fk_ckpt_gguf_parse(&m2, buf, n, "fz.gguf", 0, NULL) == s, "another verdict without err");
  gguf_free(&m2);
  if (s != FK_OK) {
    FUZZ_REQUIRE(s == FK_EINVAL || s == FK_ENOTFOUND || s == FK_ENOMEM, "status %d", (int)s);
    FUZZ_REQUIRE(e.status == s && memchr(e.message, 0, sizeof e.message) && strstr(e.message, "fz.gguf"),
                 "message '%.200s'", e.message);
    FUZZ_SAY("gguf: %s", e.message);
    gguf_free(&m);
    return;
  }
  stack_ok(&m.lm, 0);
  for (int i = 0; i < m.nt; i++) {
    const ck_tensor *t = &m.t[i];
    FUZZ_REQUIRE(t->name && t->ndim >= 1 && t->ndim <= 4, "tensor %d", i);
    uint64_t elems = 1;
    for (int d = 0; d < t->ndim; d++) {
      FUZZ_REQUIRE(t->shape[d] >= 1, "tensor '%s': shape", t->name);
      elems *= (uint64_t)t->shape[d];
    }
    uint64_t want = CK_BLOCKS(t->dtype) ? elems / 32 * (t->dtype == CK_Q8_0 ? 34 : 18)
                                        : elems * fk_ckpt_dtype_bytes(t->dtype);
    FUZZ_REQUIRE(!CK_BLOCKS(t->dtype) || (t->ndim == 2 && t->shape[1] % 32 == 0), "tensor '%s': blocks", t->name);
    FUZZ_REQUIRE(t->nbytes == want, "tensor '%s': %zu bytes, its type and shape take %llu", t->name, t->nbytes,
                 (unsigned long long)want);
    FUZZ_REQUIRE(t->src >= (const unsigned char *)buf && t->nbytes <= n &&
                 t->src - (const unsigned char *)buf <= (ptrdiff_t)(n - t->nbytes), "tensor '%s' outside the file", t->name);
  }
  FUZZ_SAY("gguf: %d tensors, %lld layers", m.nt, (long long)m.lm.layers);
  gguf_free(&m);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1) return 0;
  char *buf = fuzz_exact_copy(data + 1, size - 1);
  switch (data[0] % 4) {
  case 0: safetensors(buf, size - 1); break;
  case 1: index_json(buf, size - 1); break;
  case 2: config(buf, size - 1); break;
  default: gguf(buf, size - 1); break;
  }
  free(buf);
  return 0;
}
