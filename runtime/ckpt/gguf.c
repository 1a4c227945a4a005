/* runtime/ckpt/gguf.c: an LFM2 language model in one GGUF file (llama.cpp's format, as its
 * convert_hf_to_gguf.py and the `gguf` package write an Lfm2ForCausalLM), read into the model's table
 * of tensors under transformers' names, so that names.c's map claims it as it claims a safetensors
 * checkpoint.
 *
 * The format (version 2 or 3, little-endian): "GGUF", u32 version, u64 tensor count, u64 key-value
 * count; the key-value pairs (a string key: u64 length and bytes; a u32 type; the value: integers,
 * f32, f64, bool, a string, or an array: u32 element type, u64 count, the elements); the tensor infos
 * (name, u32 dimensions, u64 ne[] innermost first, u32 ggml type, u64 offset); padding to
 * general.alignment (default 32); the data, each tensor at its offset (a multiple of the alignment)
 * from there. Every rule broken is a refusal naming the file, the key or tensor, and the field.
 *
 * What an LFM2 file holds (llama.cpp's LLM_ARCH_LFM2): general.architecture "lfm2"; lfm2.block_count,
 * embedding_length, feed_forward_length, context_length, attention.head_count,
 * attention.head_count_kv (one value, or one per layer: 0 on a ShortConv layer), rope.freq_base,
 * attention.layer_norm_rms_epsilon, shortconv.l_cache (3); the tensors token_embd (the vocabulary: its
 * rows), token_embd_norm (the final norm), output (absent: tied to token_embd), and per layer blk.N.
 * attn_norm, ffn_norm, ffn_gate / ffn_up / ffn_down, and shortconv.in_proj / conv / out_proj or
 * attn_q / attn_k / attn_v / attn_output / attn_q_norm / attn_k_norm. Types: F32, F16, BF16, and for
 * the matrices Q8_0, Q4_0 and Q4_K too (their blocks go to the plan as they are: fk_qmatrix); any other
 * ggml type is refused by name. Other keys (the tokenizer's, general.*) are read past. */
#define _POSIX_C_SOURCE 200809L
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ckpt.h"

/* the ggml types a file may hold, and the ones served (ggml.h's numbering) */
enum { G_F32 = 0, G_F16 = 1, G_Q4_0 = 2, G_Q8_0 = 8, G_Q4_K = 12, G_BF16 = 30 };
static const char *const gtype_names[] = {
  [0] = "F32", [1] = "F16", [2] = "Q4_0", [3] = "Q4_1", [6] = "Q5_0", [7] = "Q5_1", [8] = "Q8_0", [9] = "Q8_1",
  [10] = "Q2_K", [11] = "Q3_K", [12] = "Q4_K", [13] = "Q5_K", [14] = "Q6_K", [15] = "Q8_K", [16] = "IQ2_XXS",
  [17] = "IQ2_XS", [18] = "IQ3_XXS", [19] = "IQ1_S", [20] = "IQ4_NL", [21] = "IQ3_S", [22] = "IQ2_S",
  [23] = "IQ4_XS", [24] = "I8", [25] = "I16", [26] = "I32", [27] = "I64", [28] = "F64", [29] = "IQ1_M",
  [30] = "BF16", [34] = "TQ1_0", [35] = "TQ2_0", [39] = "MXFP4",
};
static const char *gtype_name(uint32_t t) {
  return t < sizeof gtype_names / sizeof gtype_names[0] && gtype_names[t] ? gtype_names[t] : "unknown";
}

/* GGUF value types */
enum { V_U8, V_I8, V_U16, V_I16, V_U32, V_I32, V_F32, V_BOOL, V_STRING, V_ARRAY, V_U64, V_I64, V_F64, V_TYPES };
static const size_t vsize[V_TYPES] = { 1, 1, 2, 2, 4, 4, 4, 1, 0, 0, 8, 8, 8 };

enum { MAX_NAME = 256, MAX_DIMS = 4 };

/* A cursor over the file image; every read checks the bytes are there. */
typedef struct rd {
  const unsigned char *p;
  size_t len, at;
  const char *fname;
} rd;

static fk_status need(rd *r, size_t n, const char *what, fk_error *err) {
  FK_RETURN_ERROR_IF(n > r->len - r->at, err, FK_EINVAL,
                     "fk_model_open: %s: %s at byte %zu: the file ends (%zu bytes)", r->fname, what, r->at, r->len);
  return FK_OK;
}

static fk_status u32(rd *r, uint32_t *v, const char *what, fk_error *err) {
  CK_TRY(need(r, 4, what, err));
  memcpy(v, r->p + r->at, 4);
  r->at += 4;
  return FK_OK;
}

static fk_status u64(rd *r, uint64_t *v, const char *what, fk_error *err) {
  CK_TRY(need(r, 8, what, err));
  memcpy(v, r->p + r->at, 8);
  r->at += 8;
  return FK_OK;
}

/* a string: *s points into the file (not NUL-terminated), *n its length */
static fk_status str(rd *r, const char **s, uint64_t *n, const char *what, fk_error *err) {
  CK_TRY(u64(r, n, what, err));
  CK_TRY(need(r, *n, what, err));
  *s = (const char *)r->p + r->at;
  r->at += *n;
  return FK_OK;
}

/* ---- the key-value pairs ------------------------------------------------------------------------ */

/* The keys an LFM2 file must give (and general.alignment), as read. */
typedef struct kv {
  int arch;                     /* general.architecture = "lfm2" */
  int arch_given;               /* general.architecture was there */
  char arch_seen[64];           /* what it said instead */
  uint64_t align;               /* general.alignment, 32 when absent */
  int64_t block_count, embedding, ffn, context, heads, l_cache, vocab;
  int64_t head_count_kv[FK_MAX_LAYERS];
  int kv_per_layer;             /* head_count_kv was an array */
  int64_t kv_scalar;
  float rope_base, eps;
  unsigned have;                /* bit per key of KEYS */
} kv;

enum { K_BLOCKS, K_EMB, K_FFN, K_CTX, K_HEADS, K_KV, K_ROPE, K_EPS, K_LCACHE, K_NKEYS };
static const char *const KEYS[K_NKEYS] = {
  "lfm2.block_count", "lfm2.embedding_length", "lfm2.feed_forward_length", "lfm2.context_length",
  "lfm2.attention.head_count", "lfm2.attention.head_count_kv", "lfm2.rope.freq_base",
  "lfm2.attention.layer_norm_rms_epsilon", "lfm2.shortconv.l_cache",
};

static int key_is(const char *k, uint64_t n, const char *want) { return strlen(want) == n && !memcmp(k, want, n); }

/* an integer value of any integer type, non-negative and at most 2^40 */
static fk_status int_value(rd *r, uint32_t type, const char *key, int64_t *out, fk_error *err) {
  const int integer = type == V_U8 || type == V_I8 || type == V_U16 || type == V_I16 || type == V_U32 || type == V_I32 ||
                      type == V_U64 || type == V_I64;
  FK_RETURN_ERROR_IF(!integer, err, FK_EINVAL, "fk_model_open: %s: key %s: type %u, expected an integer", r->fname, key,
                     type);
  CK_TRY(need(r, vsize[type], key, err));
  int64_t v = 0;
  const unsigned char *p = r->p + r->at;
  switch (type) {
  case V_U8: v = p[0]; break;
  case V_I8: v = (int8_t)p[0]; break;
  case V_U16: { uint16_t x; memcpy(&x, p, 2); v = x; break; }
  case V_I16: { int16_t x; memcpy(&x, p, 2); v = x; break; }
  case V_U32: { uint32_t x; memcpy(&x, p, 4); v = x; break; }
  case V_I32: { int32_t x; memcpy(&x, p, 4); v = x; break; }
  case V_U64: { uint64_t x; memcpy(&x, p, 8); v = x > ((uint64_t)1 << 40) ? -1 : (int64_t)x; break; }
  default: { int64_t x; memcpy(&x, p, 8); v = x; break; }
  }
  r->at += vsize[type];
  FK_RETURN_ERROR_IF(v < 0 || v > ((int64_t)1 << 40), err, FK_EINVAL, "fk_model_open: %s: key %s = %lld: out of range",
                     r->fname, key, (long long)v);
  *out = v;
  return FK_OK;
}

static fk_status f32_value(rd *r, uint32_t type, const char *key, float *out, fk_error *err) {
  FK_RETURN_ERROR_IF(type != V_F32 && type != V_F64, err, FK_EINVAL,
                     "fk_model_open: %s: key %s: type %u, expected f32", r->fname, key, type);
  CK_TRY(need(r, vsize[type], key, err));
  if (type == V_F32) {
    memcpy(out, r->p + r->at, 4);
  } else {
    double d;
    memcpy(&d, r->p + r->at, 8);
    *out = (float)d;
  }
  r->at += vsize[type];
  return FK_OK;
}

/* reads past a value of `type` (arrays of arrays included) */
static fk_status skip_value(rd *r, uint32_t type, const char *key, int depth, fk_error *err) {
  FK_RETURN_ERROR_IF(type >= V_TYPES, err, FK_EINVAL, "fk_model_open: %s: key %s: value type %u is not a GGUF type",
                     r->fname, key, type);
  if (type == V_STRING) {
    const char *s;
    uint64_t n;
    return str(r, &s, &n, key, err);
  }
  if (type != V_ARRAY) {
    CK_TRY(need(r, vsize[type], key, err));
    r->at += vsize[type];
    return FK_OK;
  }
  FK_RETURN_ERROR_IF(depth > 2, err, FK_EINVAL, "fk_model_open: %s: key %s: arrays nested too deep", r->fname, key);
  uint32_t et;
  uint64_t n;
  CK_TRY(u32(r, &et, key, err));
  CK_TRY(u64(r, &n, key, err));
  FK_RETURN_ERROR_IF(et >= V_TYPES, err, FK_EINVAL, "fk_model_open: %s: key %s: array of type %u, not a GGUF type",
                     r->fname, key, et);
  if (et != V_STRING && et != V_ARRAY) {
    FK_RETURN_ERROR_IF(n > (r->len - r->at) / vsize[et], err, FK_EINVAL,
                       "fk_model_open: %s: key %s: %llu elements: the file ends", r->fname, key, (unsigned long long)n);
    r->at += (size_t)n * vsize[et];
    return FK_OK;
  }
  /* each element is at least 8 bytes: a count past the file is refused before the loop */
  FK_RETURN_ERROR_IF(n > (r->len - r->at) / 8, err, FK_EINVAL, "fk_model_open: %s: key %s: %llu elements: the file ends",
                     r->fname, key, (unsigned long long)n);
  for (uint64_t i = 0; i < n; i++) CK_TRY(skip_value(r, et, key, depth + 1, err));
  return FK_OK;
}

static fk_status read_kv(rd *r, kv *o, fk_error *err) {
  const char *k;
  uint64_t kn;
  uint32_t type;
  CK_TRY(str(r, &k, &kn, "a key", err));
  char key[MAX_NAME];
  FK_RETURN_ERROR_IF(kn == 0 || kn >= sizeof key, err, FK_EINVAL,
                     "fk_model_open: %s: a key of %llu bytes at byte %zu (1 to %d)", r->fname, (unsigned long long)kn,
                     r->at - (size_t)kn, MAX_NAME - 1);
  memcpy(key, k, kn);
  key[kn] = 0;
  CK_TRY(u32(r, &type, key, err));
  if (key_is(k, kn, "general.architecture")) {
    FK_RETURN_ERROR_IF(type != V_STRING, err, FK_EINVAL, "fk_model_open: %s: key %s: type %u, expected a string",
                       r->fname, key, type);
    const char *s;
    uint64_t n;
    CK_TRY(str(r, &s, &n, key, err));
    o->arch = n == 4 && !memcmp(s, "lfm2", 4);
    o->arch_given = 1;
    snprintf(o->arch_seen, sizeof o->arch_seen, "%.*s", (int)(n < 60 ? n : 60), s);
    return FK_OK;
  }
  if (key_is(k, kn, "general.alignment")) {
    int64_t a;
    CK_TRY(int_value(r, type, key, &a, err));
    FK_RETURN_ERROR_IF(a < 1 || a > 65536 || (a & (a - 1)), err, FK_EINVAL,
                       "fk_model_open: %s: key general.alignment = %lld: not a power of two up to 65536", r->fname,
                       (long long)a);
    o->align = (uint64_t)a;
    return FK_OK;
  }
  int which = -1;
  for (int i = 0; i < K_NKEYS; i++)
    if (key_is(k, kn, KEYS[i])) which = i;
  if (key_is(k, kn, "lfm2.vocab_size")) return int_value(r, type, key, &o->vocab, err);
  if (which < 0) return skip_value(r, type, key, 0, err);
  FK_RETURN_ERROR_IF(o->have & (1u << which), err, FK_EINVAL, "fk_model_open: %s: key %s given twice", r->fname, key);
  o->have |= 1u << which;
  switch (which) {
  case K_BLOCKS: return int_value(r, type, key, &o->block_count, err);
  case K_EMB: return int_value(r, type, key, &o->embedding, err);
  case K_FFN: return int_value(r, type, key, &o->ffn, err);
  case K_CTX: return int_value(r, type, key, &o->context, err);
  case K_HEADS: return int_value(r, type, key, &o->heads, err);
  case K_LCACHE: return int_value(r, type, key, &o->l_cache, err);
  case K_ROPE: return f32_value(r, type, key, &o->rope_base, err);
  case K_EPS: return f32_value(r, type, key, &o->eps, err);
  default: break;
  }
  /* head_count_kv: one integer, or one per layer */
  if (type != V_ARRAY) return int_value(r, type, key, &o->kv_scalar, err);
  uint32_t et;
  uint64_t n;
  CK_TRY(u32(r, &et, key, err));
  CK_TRY(u64(r, &n, key, err));
  FK_RETURN_ERROR_IF(n < 1 || n > FK_MAX_LAYERS, err, FK_EINVAL,
                     "fk_model_open: %s: key %s: %llu values (one per layer: 1 to %d layers)", r->fname, key,
                     (unsigned long long)n, FK_MAX_LAYERS);
  o->kv_per_layer = (int)n;
  for (uint64_t i = 0; i < n; i++) CK_TRY(int_value(r, et, key, &o->head_count_kv[i], err));
  return FK_OK;
}

/* The stack's configuration from the keys (the rules of fk_ckpt_config_lfm2, in GGUF's words). */
static fk_status config(const kv *o, const char *fname, ck_lfm2 *c, fk_error *err) {
  if (!o->arch_given) CK_BAD("%s: no key general.architecture (this loader reads 'lfm2' GGUF files)", fname);
  if (!o->arch) CK_BAD("%s: general.architecture is '%s': this loader reads 'lfm2' GGUF files", fname, o->arch_seen);
  for (int i = 0; i < K_NKEYS; i++)
    FK_RETURN_ERROR_IF(!(o->have & (1u << i)), err, FK_EINVAL, "fk_model_open: %s: no key %s", fname, KEYS[i]);
  if (o->block_count < 1 || o->block_count > FK_MAX_LAYERS)
    CK_BAD("%s: lfm2.block_count = %lld: 1 to %d layers", fname, (long long)o->block_count, FK_MAX_LAYERS);
  if (o->l_cache != 3) CK_BAD("%s: lfm2.shortconv.l_cache = %lld: LFM2's ShortConv has 3 taps", fname, (long long)o->l_cache);
  if (o->heads < 1 || o->embedding != o->heads * 64 || o->embedding > 65536)
    CK_BAD("%s: lfm2.embedding_length = %lld with lfm2.attention.head_count = %lld: heads of 64 expected, at most "
           "65536 wide", fname, (long long)o->embedding, (long long)o->heads);
  if (o->ffn < 1 || o->ffn > 65536) CK_BAD("%s: lfm2.feed_forward_length = %lld: 1 to 65536", fname, (long long)o->ffn);
  if (o->context < 1 || o->context > INT32_MAX)
    CK_BAD("%s: lfm2.context_length = %lld: 1 to 2^31 - 1", fname, (long long)o->context);
  if (!(o->rope_base > 1.0f) || !(o->rope_base < 1e30f))
    CK_BAD("%s: lfm2.rope.freq_base = %g: must be in (1, 1e30)", fname, (double)o->rope_base);
  if (!(o->eps > 0.0f) || !(o->eps < 1.0f))
    CK_BAD("%s: lfm2.attention.layer_norm_rms_epsilon = %g: must be in (0, 1)", fname, (double)o->eps);
  if (o->vocab > (1 << 20)) CK_BAD("%s: lfm2.vocab_size = %lld: at most 2^20", fname, (long long)o->vocab);
  if (o->kv_per_layer && o->kv_per_layer != o->block_count)
    CK_BAD("%s: lfm2.attention.head_count_kv has %d values for %lld layers", fname, o->kv_per_layer,
           (long long)o->block_count);
  memset(c, 0, sizeof *c);
  c->hidden = o->embedding;
  c->ffn = c->ff_declared = o->ffn;
  c->layers = o->block_count;
  c->heads = o->heads;
  c->head_dim = 64;
  c->max_pos = o->context;
  c->rope_theta = o->rope_base;
  c->norm_eps = o->eps;
  c->vocab = o->vocab; /* (0 when absent: token_embd's rows decide) */
  for (int64_t i = 0; i < c->layers; i++) {
    int64_t kvh = o->kv_per_layer ? o->head_count_kv[i] : o->kv_scalar;
    c->attn[i] = kvh > 0;
    c->attn_layers += kvh > 0;
    if (!kvh) continue;
    if (c->kv_heads && kvh != c->kv_heads)
      CK_BAD("%s: lfm2.attention.head_count_kv[%lld] = %lld, another attention layer has %lld", fname, (long long)i,
             (long long)kvh, (long long)c->kv_heads);
    if (o->heads % kvh) CK_BAD("%s: lfm2.attention.head_count_kv[%lld] = %lld does not divide head_count %lld", fname,
                               (long long)i, (long long)kvh, (long long)o->heads);
    c->kv_heads = kvh;
  }
  if (!c->kv_heads) c->kv_heads = 1; /* a stack of ShortConv layers only: unused */
  return FK_OK;
}

/* ---- the tensors -------------------------------------------------------------------------------- */

/* GGUF's LFM2 names -> transformers' (Lfm2ForCausalLM), per layer after "blk.N." */
static const struct {
  const char *gguf, *hf;
} LAYER_NAMES[] = {
  { "attn_norm.weight", "operator_norm.weight" }, { "ffn_norm.weight", "ffn_norm.weight" },
  { "ffn_gate.weight", "feed_forward.w1.weight" }, { "ffn_up.weight", "feed_forward.w3.weight" },
  { "ffn_down.weight", "feed_forward.w2.weight" }, { "shortconv.in_proj.weight", "conv.in_proj.weight" },
  { "shortconv.conv.weight", "conv.conv.weight" }, { "shortconv.out_proj.weight", "conv.out_proj.weight" },
  { "attn_q.weight", "self_attn.q_proj.weight" }, { "attn_k.weight", "self_attn.k_proj.weight" },
  { "attn_v.weight", "self_attn.v_proj.weight" }, { "attn_output.weight", "self_attn.out_proj.weight" },
  { "attn_q_norm.weight", "self_attn.q_layernorm.weight" }, { "attn_k_norm.weight", "self_attn.k_layernorm.weight" },
};

/* The transformers name of a GGUF tensor name, into out; 0 when it is no LFM2 tensor (its name is
 * kept then: the map refuses it by name). */
static int hf_name(const char *g, char *out, size_t size) {
  static const struct {
    const char *gguf, *hf;
  } top[] = { { "token_embd.weight", "model.embed_tokens.weight" },
              { "token_embd_norm.weight", "model.embedding_norm.weight" }, { "output.weight", "lm_head.weight" } };
  for (size_t i = 0; i < sizeof top / sizeof top[0]; i++)
    if (!strcmp(g, top[i].gguf)) return snprintf(out, size, "%s", top[i].hf) > 0;
  /* blk.N. with N = 0 .. FK_MAX_LAYERS - 1 in decimal, no sign, no leading zero */
  int layer = 0, used = 4;
  if (!strncmp(g, "blk.", 4) && g[4] >= '0' && g[4] <= '9' && !(g[4] == '0' && g[5] != '.')) {
    while (g[used] >= '0' && g[used] <= '9' && layer < FK_MAX_LAYERS) layer = 10 * layer + (g[used++] - '0');
    if (g[used] == '.' && layer < FK_MAX_LAYERS)
      for (size_t i = 0; i < sizeof LAYER_NAMES / sizeof LAYER_NAMES[0]; i++)
        if (!strcmp(g + used + 1, LAYER_NAMES[i].gguf))
          return snprintf(out, size, "model.layers.%d.%s", layer, LAYER_NAMES[i].hf) > 0;
  }
  snprintf(out, size, "%s", g);
  return 0;
}

const char *fk_ckpt_gguf_name(const char *hf, char *out, size_t size) {
  static const struct {
    const char *gguf, *hf;
  } top[] = { { "token_embd.weight", "model.embed_tokens.weight" },
              { "token_embd_norm.weight", "model.embedding_norm.weight" }, { "output.weight", "lm_head.weight" } };
  snprintf(out, size, "%s", hf);
  for (size_t i = 0; i < sizeof top / sizeof top[0]; i++)
    if (!strcmp(hf, top[i].hf)) snprintf(out, size, "%s", top[i].gguf);
  int layer, used = 0;
  if (sscanf(hf, "model.layers.%d.%n", &layer, &used) == 1 && used > 0)
    for (size_t i = 0; i < sizeof LAYER_NAMES / sizeof LAYER_NAMES[0]; i++)
      if (!strcmp(hf + used, LAYER_NAMES[i].hf)) snprintf(out, size, "blk.%d.%s", layer, LAYER_NAMES[i].gguf);
  return out;
}

/* bytes of a tensor of `elems` elements in ggml type t (per row of ne0 for the block types) */
static uint64_t type_bytes(uint32_t t, uint64_t elems) {
  switch (t) {
  case G_F32: return 4 * elems;
  case G_F16: case G_BF16: return 2 * elems;
  case G_Q8_0: return elems / 32 * 34;
  case G_Q4_0: return elems / 32 * 18;
  case G_Q4_K: return elems / 256 * 144;
  default: return 0;
  }
}

static int by_offset(const void *a, const void *b) {
  const ck_tensor *x = *(const ck_tensor *const *)a, *y = *(const ck_tensor *const *)b;
  return x->src < y->src ? -1 : x->src > y->src;
}

fk_status fk_ckpt_gguf(fk_model *m, const char *rel, fk_error *err) {
  ck_file *f;
  CK_TRY(fk_ckpt_add_file(m, rel, &f, err));
  return fk_ckpt_gguf_parse(m, f->map.map, f->map.size, rel, m->nfiles - 1, err);
}

fk_status fk_ckpt_gguf_parse(fk_model *m, const void *buf, size_t len, const char *rel, int file, fk_error *err) {
  rd r = { buf, len, 0, rel };
  uint32_t version;
  uint64_t nt, nkv;
  CK_TRY(need(&r, 4, "the magic", err));
  r.at = 4;
  FK_RETURN_ERROR_IF(memcmp(r.p, "GGUF", 4) != 0, err, FK_EINVAL,
                     "fk_model_open: %s: not a GGUF file (the first 4 bytes are not \"GGUF\")", rel);
  CK_TRY(u32(&r, &version, "the version", err));
  FK_RETURN_ERROR_IF(version != 2 && version != 3, err, FK_EINVAL,
                     "fk_model_open: %s: GGUF version %u: this loader reads versions 2 and 3", rel, version);
  CK_TRY(u64(&r, &nt, "the tensor count", err));
  CK_TRY(u64(&r, &nkv, "the key-value count", err));
  /* a key-value pair takes at least 13 bytes, a tensor info at least 28 */
  FK_RETURN_ERROR_IF(nt > (1u << 20), err, FK_EINVAL, "fk_model_open: %s: %llu tensors (at most 2^20)", rel,
                     (unsigned long long)nt);
  FK_RETURN_ERROR_IF(nkv > r.len / 13 || nt > r.len / 28, err, FK_EINVAL,
                     "fk_model_open: %s: %llu key-value pairs and %llu tensors do not fit %zu bytes", rel,
                     (unsigned long long)nkv, (unsigned long long)nt, r.len);
  kv o;
  memset(&o, 0, sizeof o);
  o.align = 32;
  for (uint64_t i = 0; i < nkv; i++) CK_TRY(read_kv(&r, &o, err));
  CK_TRY(config(&o, rel, &m->lm, err));
  ck_tensor *t = realloc(m->t, (size_t)(m->nt + (int)nt + 1) * sizeof *t);
  FK_RETURN_ERROR_IF(!t, err, FK_ENOMEM, "fk_model_open: %s: %llu tensors", rel, (unsigned long long)nt);
  m->t = t;
  uint64_t *offs = calloc((size_t)nt + 1, sizeof *offs);
  FK_RETURN_ERROR_IF(!offs, err, FK_ENOMEM, "fk_model_open: %s: %llu tensors", rel, (unsigned long long)nt);
  fk_status s = FK_OK;
  const int first = m->nt;
  for (uint64_t i = 0; i < nt && s == FK_OK; i++) {
    const char *nmp;
    uint64_t nn;
    uint32_t nd, type;
    char gname[MAX_NAME], hf[MAX_NAME + 32];
    if ((s = str(&r, &nmp, &nn, "a tensor name", err)) != FK_OK) break;
    if (nn == 0 || nn >= sizeof gname) {
      s = fk_error_set(err, FK_EINVAL, __FILE__, __LINE__, "fk_model_open: %s: tensor %llu: a name of %llu bytes", rel,
                       (unsigned long long)i, (unsigned long long)nn);
      break;
    }
    memcpy(gname, nmp, nn);
    gname[nn] = 0;
    if ((s = u32(&r, &nd, gname, err)) != FK_OK) break;
    if (nd < 1 || nd > MAX_DIMS) {
      s = fk_error_set(err, FK_EINVAL, __FILE__, __LINE__, "fk_model_open: %s: tensor '%s': %u dimensions (1 to %d)",
                       rel, gname, nd, MAX_DIMS);
      break;
    }
    uint64_t ne[MAX_DIMS], elems = 1;
    for (uint32_t d = 0; d < nd && s == FK_OK; d++) {
      if ((s = u64(&r, &ne[d], gname, err)) != FK_OK) break;
      if (ne[d] < 1 || ne[d] > ((uint64_t)1 << 32) || elems > ((uint64_t)1 << 40) / ne[d])
        s = fk_error_set(err, FK_EINVAL, __FILE__, __LINE__, "fk_model_open: %s: tensor '%s': ne[%u] = %llu", rel,
                         gname, d, (unsigned long long)ne[d]);
      else elems *= ne[d];
    }
    if (s != FK_OK) break;
    if ((s = u32(&r, &type, gname, err)) != FK_OK || (s = u64(&r, &offs[i], gname, err)) != FK_OK) break;
    if (type != G_F32 && type != G_F16 && type != G_BF16 && type != G_Q8_0 && type != G_Q4_0 && type != G_Q4_K) {
      s = fk_error_set(err, FK_EINVAL, __FILE__, __LINE__,
                       "fk_model_open: %s: tensor '%s': ggml type %u (%s): this loader reads F32, F16, BF16, Q8_0, "
                       "Q4_0 and Q4_K", rel, gname, type, gtype_name(type));
      break;
    }
    const uint64_t qk = type == G_Q4_K ? 256 : 32;
    if ((type == G_Q8_0 || type == G_Q4_0 || type == G_Q4_K) && (nd != 2 || ne[0] % qk)) {
      s = fk_error_set(err, FK_EINVAL, __FILE__, __LINE__,
                       "fk_model_open: %s: tensor '%s': %s needs a matrix whose rows are whole blocks of %llu "
                       "(ne[0] = %llu, %u dimensions)", rel, gname, gtype_name(type), (unsigned long long)qk,
                       (unsigned long long)ne[0], nd);
      break;
    }
    ck_tensor *c = &m->t[m->nt];
    memset(c, 0, sizeof *c);
    int known = hf_name(gname, hf, sizeof hf);
    if (!(c->name = strdup(hf)) || !(c->label = strdup(gname))) {
      free(c->name);
      s = fk_error_set(err, FK_ENOMEM, __FILE__, __LINE__, "fk_model_open: %s: tensor names", rel);
      break;
    }
    m->nt++;
    c->file = file;
    c->dtype = type == G_F32 ? CK_F32 : type == G_F16 ? CK_F16 : type == G_BF16 ? CK_BF16
               : type == G_Q8_0 ? CK_Q8_0 : type == G_Q4_0 ? CK_Q4_0 : CK_Q4_K;
    /* shapes as transformers gives them: outermost first; the ShortConv taps (ne 3 x hidden) as
     * nn.Conv1d's (hidden, 1, 3) */
    c->ndim = (int)nd;
    for (uint32_t d = 0; d < nd; d++) c->shape[d] = (int64_t)ne[nd - 1 - d];
    if (known && strstr(hf, ".conv.conv.weight") && nd == 2) {
      c->ndim = 3;
      c->shape[2] = c->shape[1];
      c->shape[1] = 1;
    }
    c->nbytes = (size_t)type_bytes(type, elems);
  }
  /* the data: from the infos' end rounded up to the alignment; each tensor at a multiple of it, inside
   * the file, none overlapping another */
  uint64_t data = (r.at + o.align - 1) / o.align * o.align;
  if (s == FK_OK && data > r.len)
    s = fk_error_set(err, FK_EINVAL, __FILE__, __LINE__, "fk_model_open: %s: the data (at byte %llu) is past the end",
                     rel, (unsigned long long)data);
  for (int i = first; i < m->nt && s == FK_OK; i++) {
    ck_tensor *c = &m->t[i];
    uint64_t off = offs[i - first];
    if (off % o.align || off > r.len - data || c->nbytes > r.len - data - off)
      s = fk_error_set(err, FK_EINVAL, __FILE__, __LINE__,
                       "fk_model_open: %s: tensor '%s': offset %llu and %zu bytes: %s", rel, fk_ckpt_shown(c),
                       (unsigned long long)off, c->nbytes,
                       off % o.align ? "not a multiple of general.alignment" : "past the end of the file");
    else c->src = r.p + data + off;
  }
  free(offs);
  if (s != FK_OK) return s;
  const int n = m->nt - first;
  const ck_tensor **order = malloc((size_t)(n + 1) * sizeof *order);
  FK_RETURN_ERROR_IF(!order, err, FK_ENOMEM, "fk_model_open: %s: %d tensors", rel, n);
  for (int i = 0; i < n; i++) order[i] = &m->t[first + i];
  qsort(order, (size_t)n, sizeof *order, by_offset);
  for (int i = 1; i < n && s == FK_OK; i++)
    if (order[i - 1]->src + order[i - 1]->nbytes > order[i]->src)
      s = fk_error_set(err, FK_EINVAL, __FILE__, __LINE__, "fk_model_open: %s: tensors '%s' and '%s' overlap", rel,
                       fk_ckpt_shown(order[i - 1]), fk_ckpt_shown(order[i]));
  free(order);
  if (s != FK_OK) return s;
  /* the vocabulary: token_embd's rows (lfm2.vocab_size, when given, must agree); tied when there is
   * no output tensor */
  const ck_tensor *emb = NULL;
  m->lm.tied = 1;
  for (int i = first; i < m->nt; i++) {
    if (!strcmp(m->t[i].name, "model.embed_tokens.weight")) emb = &m->t[i];
    if (!strcmp(m->t[i].name, "lm_head.weight")) m->lm.tied = 0;
  }
  FK_RETURN_ERROR_IF(!emb, err, FK_ENOTFOUND, "fk_model_open: %s: no tensor token_embd.weight", rel);
  FK_RETURN_ERROR_IF(m->lm.vocab && m->lm.vocab != emb->shape[0], err, FK_EINVAL,
                     "fk_model_open: %s: lfm2.vocab_size = %lld, token_embd.weight has %lld rows", rel,
                     (long long)m->lm.vocab, (long long)emb->shape[0]);
  FK_RETURN_ERROR_IF(emb->ndim != 2 || emb->shape[0] > (1 << 20), err, FK_EINVAL,
                     "fk_model_open: %s: token_embd.weight: %d dimensions, %lld rows: a matrix of at most 2^20 rows",
                     rel, emb->ndim, (long long)emb->shape[0]);
  m->lm.vocab = emb->shape[0];
  return FK_OK;
}
