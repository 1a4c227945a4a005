/* tests/model/synth.c - synthetic model weights by formula (synth.h), the C twin of
 * fixtures/ref/gen_trace.py's synth_tensor / synth_model. */
#include "synth.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "flashkern.h" /* fk_bf16_from_f32: the contract's integer RNE */

#ifndef FKM_NO_XXHASH /* the AArch64 scenario build synthesises weights without digests */
#include <xxhash.h>
#endif

static const fkm_config fkm_lm = {
    .tag = "lm", .prefix = "", .vocab = 1024, .codebooks = 0, .hidden = 256, .ff = 768, .heads = 4,
    .kv_heads = 2, .head_dim = 64, .nlayers = 6, .is_attn = {0, 0, 1, 0, 1, 0}, .head_out = 0,
    .rope_theta = 1e6f, .norm_eps = 1e-5f, .sliding_window = 0};

static const fkm_config fkm_detok = {
    .tag = "detok", .prefix = "lfm.", .vocab = 2048, .codebooks = 8, .hidden = 512, .ff = 1536, .heads = 8,
    .kv_heads = 8, .head_dim = 64, .nlayers = 8, .is_attn = {0, 0, 1, 0, 1, 0, 1, 0}, .head_out = 1282,
    .rope_theta = 1e6f, .norm_eps = 1e-5f, .sliding_window = 30};

/* liquid-audio's LFM2AudioModel as fixtures/ref/gen_audio.py builds it (fixtures/audio/): the lfm backbone, a
 * Depthformer of 2 layers at dim 1024 (MHA: 32 heads of 32, 8 kv heads; GLU int(2 * 4096 / 3) -> 2816) */
static const fkm_config fkm_audio = {
    .tag = "audio", .prefix = "lfm.", .vocab = 512, .codebooks = 8, .hidden = 256, .ff = 768, .heads = 4,
    .kv_heads = 2, .head_dim = 64, .nlayers = 4, .is_attn = {0, 1, 0, 1}, .head_out = 0, .rope_theta = 1e6f,
    .norm_eps = 1e-5f, .sliding_window = 0, .audio_vocab = 2049, .depth_dim = 1024, .depth_layers = 2,
    .depth_heads = 32, .depth_kv_heads = 8, .depth_ff = 2816};

/* tag "audio_peaked" (gen_audio.py's seq_peaked): the same model; only fkm_synth_tensor's rules differ (peaked) */
static const fkm_config fkm_audio_peaked = {
    .tag = "audio_peaked", .prefix = "lfm.", .vocab = 512, .codebooks = 8, .hidden = 256, .ff = 768, .heads = 4,
    .kv_heads = 2, .head_dim = 64, .nlayers = 4, .is_attn = {0, 1, 0, 1}, .head_out = 0, .rope_theta = 1e6f,
    .norm_eps = 1e-5f, .sliding_window = 0, .audio_vocab = 2049, .depth_dim = 1024, .depth_layers = 2,
    .depth_heads = 32, .depth_kv_heads = 8, .depth_ff = 2816};

/* bench only (bench/fk_bench_ckpt.c writes it as a checkpoint; no trace): LFM2-350M's shapes, as
 * fk_bench_model's lm_350m (vocab 65536, hidden 1024, ffn 4608, 16 layers, 16 / 8 heads) */
static const fkm_config fkm_lm_350m = {
    .tag = "lm_350m", .prefix = "", .vocab = 65536, .codebooks = 0, .hidden = 1024, .ff = 4608, .heads = 16,
    .kv_heads = 8, .head_dim = 64, .nlayers = 16, .is_attn = {0, 0, 1, 0, 0, 1, 0, 0, 1, 0, 1, 0, 1, 0, 1, 0},
    .head_out = 0, .rope_theta = 1e6f, .norm_eps = 1e-5f, .sliding_window = 0};

const fkm_config *fkm_config_get(const char *tag) {
  if (!tag) return NULL;
  if (!strcmp(tag, "lm")) return &fkm_lm;
  if (!strcmp(tag, "detok")) return &fkm_detok;
  if (!strcmp(tag, "audio")) return &fkm_audio;
  if (!strcmp(tag, "audio_peaked")) return &fkm_audio_peaked;
  if (!strcmp(tag, "lm_350m")) return &fkm_lm_350m;
  return NULL;
}

uint64_t fkm_fnv1a64(const void *p, size_t n) {
  const unsigned char *b = p;
  uint64_t h = 0xCBF29CE484222325ull;
  for (size_t i = 0; i < n; i++) h = (h ^ b[i]) * 0x100000001B3ull;
  return h;
}

uint64_t fkm_synth_key(const char *tag, const char *name) {
  uint64_t h = 0xCBF29CE484222325ull;
  for (const unsigned char *s = (const unsigned char *)tag; *s; s++) h = (h ^ *s) * 0x100000001B3ull;
  h = (h ^ (unsigned char)':') * 0x100000001B3ull;
  for (const unsigned char *s = (const unsigned char *)name; *s; s++) h = (h ^ *s) * 0x100000001B3ull;
  return h;
}

float fkm_synth_v(uint64_t key, uint64_t i) {
  uint64_t z = key + (i + 1) * 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z ^= z >> 31;
  int32_t k = (int32_t)(z >> 40) - (1 << 23);      /* |k| <= 2^23: exact in f32 */
  return (float)k * 0x1p-23f;                       /* a power of two: exact */
}

static int ends_with(const char *s, const char *suf) {
  size_t a = strlen(s), b = strlen(suf);
  return a >= b && !strcmp(s + a - b, suf);
}

static int is_audio(const char *tag) { return !strcmp(tag, "audio") || !strcmp(tag, "audio_peaked"); }

/* s = prefix, then one or more decimal digits, then exactly suffix (gen_audio.py's "[0-9]+") */
static int matches_index(const char *s, const char *prefix, const char *suffix) {
  size_t p = strlen(prefix);
  if (strncmp(s, prefix, p)) return 0;
  s += p;
  const char *d = s;
  while (*s >= '0' && *s <= '9') s++;
  return s > d && !strcmp(s, suffix);
}

/* Tag "audio_peaked" (synth.h): the key's tag and name, and the scale, of tensor name; every other tag: (tag, name, 1). */
static float synth_rule(const char **tag, const char **name) {
  if (strcmp(*tag, "audio_peaked")) return 1.0f;
  *tag = "audio";
  if (!strncmp(*name, "depth_embeddings.", 17) && (*name)[17] >= '0' && (*name)[17] <= '7' &&
      !strcmp(*name + 18, ".embedding.weight")) {
    *name = "depth_embeddings.shared.embedding.weight";
    return 1.0f;
  }
  if (!strcmp(*name, "depth_linear.weight") ||
      matches_index(*name, "depthformer.layers.", ".operator.out_proj.weight") ||
      matches_index(*name, "depthformer.layers.", ".feed_forward.w2.weight"))
    return 0.125f;
  return 1.0f;
}

int fkm_kind_of(const char *tag, const char *name, int ndim) {
  if (!strcmp(name, "embed_tokens.weight") || !strcmp(name, "emb.emb.weight")) return FKM_EMBED;
  if (is_audio(tag)) { /* gen_audio.py's kind_of; the rules below otherwise */
    if (!strcmp(name, "lfm.embed_tokens.weight") || ends_with(name, ".embedding.weight")) return FKM_EMBED;
    if (!strcmp(name, "depth_linear.bias")) return FKM_BIAS16;
  }
  if (ends_with(name, "conv.conv.weight")) return FKM_CONV;
  static const char *const norms[] = {".operator_norm.weight", ".ffn_norm.weight", ".q_layernorm.weight",
                                      ".k_layernorm.weight", "embedding_norm.weight"};
  for (size_t i = 0; i < sizeof norms / sizeof norms[0]; i++)
    if (ends_with(name, norms[i])) return FKM_NORM;
  if (!strcmp(tag, "detok") && !strcmp(name, "lin.bias")) return FKM_BIAS;
  if (ends_with(name, ".weight") && ndim == 2) return FKM_LINEAR;
  return -1;
}

int fkm_synth_tensor(const char *tag, const char *name, fkm_kind kind, int64_t count, int64_t fan_in, void *out) {
  if (!tag || !name || count < 0 || (count && !out)) return -1;
  if ((kind == FKM_LINEAR || kind == FKM_BIAS16) && fan_in <= 0) return -1;
  const float scale = synth_rule(&tag, &name); /* tag "audio_peaked": the shared table's key, 1/8 */
  uint64_t key = fkm_synth_key(tag, name);
  if (kind == FKM_BIAS) {
    float *o = out;
    const float a = 1.0f / sqrtf(512.0f);
    for (int64_t i = 0; i < count; i++) o[i] = fkm_synth_v(key, (uint64_t)i) * a;
    return 0;
  }
  uint16_t *o = out;
  if (kind == FKM_NORM) {
    for (int64_t i = 0; i < count; i++) {
      volatile float p = fkm_synth_v(key, (uint64_t)i) * 0.25f;   /* exact; the sum rounds once */
      o[i] = fk_bf16_from_f32(1.0f + p);
    }
    return 0;
  }
  float a;
  switch (kind) {
    case FKM_LINEAR:
    case FKM_BIAS16: a = 1.0f / sqrtf((float)fan_in); break;
    case FKM_CONV: a = 1.0f / sqrtf(3.0f); break;
    case FKM_EMBED: a = 1.0f; break;
    default: return -1;
  }
  if (scale != 1.0f) {
    if (kind != FKM_LINEAR) return -1;
    for (int64_t i = 0; i < count; i++) {
      volatile float p = fkm_synth_v(key, (uint64_t)i) * a;   /* rounded once, then times 2^-3: exact */
      o[i] = fk_bf16_from_f32(p * scale);
    }
    return 0;
  }
  for (int64_t i = 0; i < count; i++) o[i] = fk_bf16_from_f32(fkm_synth_v(key, (uint64_t)i) * a);
  return 0;
}

/* ---- model tensor lists --------------------------------------------------------------------- */

typedef struct {
  fkm_tensor *t;
  int n, cap, bad;
} fkm_list;

static void add(fkm_list *l, const char *tag, int ndim, int64_t d0, int64_t d1, int64_t d2, const char *fmt, ...) {
  if (l->bad) return;
  if (l->n == l->cap) {
    int ncap = l->cap ? 2 * l->cap : 64;
    fkm_tensor *p = realloc(l->t, (size_t)ncap * sizeof *p);
    if (!p) { l->bad = 1; return; }
    l->t = p;
    l->cap = ncap;
  }
  fkm_tensor *t = &l->t[l->n];
  memset(t, 0, sizeof *t);
  va_list ap;
  va_start(ap, fmt);
  int w = vsnprintf(t->name, sizeof t->name, fmt, ap);
  va_end(ap);
  if (w < 0 || (size_t)w >= sizeof t->name) { l->bad = 1; return; }
  t->ndim = ndim;
  t->shape[0] = d0;
  t->shape[1] = ndim > 1 ? d1 : 0;
  t->shape[2] = ndim > 2 ? d2 : 0;
  t->count = d0 * (ndim > 1 ? d1 : 1) * (ndim > 2 ? d2 : 1);
  int k = fkm_kind_of(tag, t->name, ndim);
  if (k < 0) { l->bad = 1; return; }
  t->kind = (fkm_kind)k;
  t->fan_in = t->kind == FKM_LINEAR ? d1 : t->kind == FKM_CONV ? 3 : 0;
  t->nbytes = (size_t)t->count * (t->kind == FKM_BIAS ? 4u : 2u);
  l->n++;
}

static int by_name(const void *a, const void *b) {
  return strcmp(((const fkm_tensor *)a)->name, ((const fkm_tensor *)b)->name);
}

int fkm_model_tensors(const char *tag, fkm_tensor **out, int *n) {
  *out = NULL;
  *n = 0;
  const fkm_config *c = fkm_config_get(tag);
  if (!c) return -1;
  fkm_list l = {0};
  const char *p = c->prefix;
  int64_t h = c->hidden, ff = c->ff, hd = c->head_dim;
  if (c->codebooks == 0 || c->depth_dim) add(&l, tag, 2, c->vocab, h, 0, "%sembed_tokens.weight", p);
  if (c->codebooks == 0) add(&l, tag, 2, c->vocab, h, 0, "lm_head.weight"); /* untied: see gen_trace.py */
  add(&l, tag, 1, h, 0, 0, "%sembedding_norm.weight", p);
  for (int i = 0; i < c->nlayers; i++) {
    if (c->is_attn[i]) {
      add(&l, tag, 2, c->heads * hd, h, 0, "%slayers.%d.self_attn.q_proj.weight", p, i);
      add(&l, tag, 2, c->kv_heads * hd, h, 0, "%slayers.%d.self_attn.k_proj.weight", p, i);
      add(&l, tag, 2, c->kv_heads * hd, h, 0, "%slayers.%d.self_attn.v_proj.weight", p, i);
      add(&l, tag, 2, h, c->heads * hd, 0, "%slayers.%d.self_attn.out_proj.weight", p, i);
      add(&l, tag, 1, hd, 0, 0, "%slayers.%d.self_attn.q_layernorm.weight", p, i);
      add(&l, tag, 1, hd, 0, 0, "%slayers.%d.self_attn.k_layernorm.weight", p, i);
    } else {
      add(&l, tag, 3, h, 1, 3, "%slayers.%d.conv.conv.weight", p, i);
      add(&l, tag, 2, 3 * h, h, 0, "%slayers.%d.conv.in_proj.weight", p, i);
      add(&l, tag, 2, h, h, 0, "%slayers.%d.conv.out_proj.weight", p, i);
    }
    add(&l, tag, 2, ff, h, 0, "%slayers.%d.feed_forward.w1.weight", p, i);
    add(&l, tag, 2, h, ff, 0, "%slayers.%d.feed_forward.w2.weight", p, i);
    add(&l, tag, 2, ff, h, 0, "%slayers.%d.feed_forward.w3.weight", p, i);
    add(&l, tag, 1, h, 0, 0, "%slayers.%d.operator_norm.weight", p, i);
    add(&l, tag, 1, h, 0, 0, "%slayers.%d.ffn_norm.weight", p, i);
  }
  if (c->depth_dim) { /* LFM2AudioModel's audio parts (gen_audio.py); the text head is tied: no lm_head */
    const int64_t D = c->depth_dim, dhd = c->depth_dim / c->depth_heads, F = c->depth_ff, AV = c->audio_vocab;
    add(&l, tag, 2, c->codebooks * AV, h, 0, "audio_embedding.embedding.weight");
    add(&l, tag, 1, h, 0, 0, "audio_embedding.embedding_norm.weight");
    for (int i = 0; i < (int)c->depth_layers; i++) {
      add(&l, tag, 2, D + 2 * dhd * c->depth_kv_heads, D, 0, "depthformer.layers.%d.operator.qkv_proj.weight", i);
      add(&l, tag, 2, D, D, 0, "depthformer.layers.%d.operator.out_proj.weight", i);
      add(&l, tag, 1, dhd, 0, 0, "depthformer.layers.%d.operator.bounded_attention.q_layernorm.weight", i);
      add(&l, tag, 1, dhd, 0, 0, "depthformer.layers.%d.operator.bounded_attention.k_layernorm.weight", i);
      add(&l, tag, 2, F, D, 0, "depthformer.layers.%d.feed_forward.w1.weight", i);
      add(&l, tag, 2, D, F, 0, "depthformer.layers.%d.feed_forward.w2.weight", i);
      add(&l, tag, 2, F, D, 0, "depthformer.layers.%d.feed_forward.w3.weight", i);
      add(&l, tag, 1, D, 0, 0, "depthformer.layers.%d.operator_norm.weight", i);
      add(&l, tag, 1, D, 0, 0, "depthformer.layers.%d.ffn_norm.weight", i);
    }
    add(&l, tag, 2, c->codebooks * D, h, 0, "depth_linear.weight");
    add(&l, tag, 1, c->codebooks * D, 0, 0, "depth_linear.bias");
    if (!l.bad) l.t[l.n - 1].fan_in = h;   /* FKM_BIAS16: depth_linear's in_features */
    for (int i = 0; i < (int)c->codebooks; i++) {
      add(&l, tag, 2, AV, D, 0, "depth_embeddings.%d.embedding.weight", i);
      add(&l, tag, 1, D, 0, 0, "depth_embeddings.%d.embedding_norm.weight", i);
    }
  } else if (c->codebooks) {
    add(&l, tag, 2, c->codebooks * c->vocab, h, 0, "emb.emb.weight");
    add(&l, tag, 2, c->head_out, h, 0, "lin.weight");
    add(&l, tag, 1, c->head_out, 0, 0, "lin.bias");
  }
  if (l.bad) {
    free(l.t);
    return -1;
  }
  qsort(l.t, (size_t)l.n, sizeof *l.t, by_name);
  *out = l.t;
  *n = l.n;
  return 0;
}

int fkm_fail(char *err, size_t errlen, const char *fmt, ...) {
  if (err && errlen) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
  }
  return -1;
}

int fkm_synth_model(const char *tag, fkm_weights *w, char *err, size_t errlen) {
  memset(w, 0, sizeof *w);
  w->cfg = fkm_config_get(tag);
  if (!w->cfg) return fkm_fail(err, errlen, "synth: unknown model tag '%s'", tag ? tag : "(null)");
  if (fkm_model_tensors(tag, &w->t, &w->n)) return fkm_fail(err, errlen, "synth %s: tensor list failed", tag);
  w->data = calloc((size_t)w->n, sizeof *w->data);
  if (!w->data) {
    fkm_weights_free(w);
    return fkm_fail(err, errlen, "synth %s: out of memory", tag);
  }
  for (int i = 0; i < w->n; i++) {
    const fkm_tensor *t = &w->t[i];
    w->data[i] = malloc(t->nbytes ? t->nbytes : 1);
    if (!w->data[i]) {
      fkm_weights_free(w);
      return fkm_fail(err, errlen, "synth %s: out of memory", tag);
    }
    if (fkm_synth_tensor(tag, t->name, t->kind, t->count, t->fan_in, w->data[i])) {
      fkm_weights_free(w);
      return fkm_fail(err, errlen, "synth %s: tensor %s failed", tag, t->name);
    }
  }
  return 0;
}

const void *fkm_weight(const fkm_weights *w, const char *name, const fkm_tensor **desc) {
  for (int i = 0; i < w->n; i++)
    if (!strcmp(w->t[i].name, name)) {
      if (desc) *desc = &w->t[i];
      return w->data[i];
    }
  return NULL;
}

void fkm_weights_free(fkm_weights *w) {
  if (!w) return;
  if (w->data)
    for (int i = 0; i < w->n; i++) free(w->data[i]);
  free(w->data);
  free(w->t);
  memset(w, 0, sizeof *w);
}

#ifndef FKM_NO_XXHASH
uint64_t fkm_weight_digest(const fkm_tensor *t, const void *data) {
  return (uint64_t)XXH3_64bits(data, t->nbytes);   /* little-endian hosts (x86_64, AArch64 Linux) */
}

uint64_t fkm_name_digest(const char *name) { return (uint64_t)XXH3_64bits(name, strlen(name)); }
#endif
