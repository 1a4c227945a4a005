/* tests/audio/audio_desc.c: see audio_desc.h. */
#include "audio_desc.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "synth.h"

const fkt_audio_cfg fkt_audio_trace_cfg = {
    .vocab = 512, .hidden = 256, .ff = 768, .heads = 4, .kv = 2, .layers = 4, .is_attn = {0, 1, 0, 1},
    .dim = 1024, .dheads = 32, .dkv = 8, .dff = 2816, .dlayers = 2, .avocab = 2049, .n_text = 2, .n_audio = 2,
    .tied = 1};

const fkt_audio_cfg fkt_audio_small_cfg = {
    .vocab = 256, .hidden = 128, .ff = 256, .heads = 2, .kv = 1, .layers = 2, .is_attn = {0, 1},
    .dim = 128, .dheads = 4, .dkv = 2, .dff = 256, .dlayers = 2, .avocab = 2049, .n_text = 2, .n_audio = 3,
    .tied = 0};

uint64_t fkt_audio_fnv(const void *p, size_t n, uint64_t h) {
  const unsigned char *b = p;
  if (!h) h = 0xcbf29ce484222325ull;
  for (size_t i = 0; i < n; i++) h = (h ^ b[i]) * 0x100000001b3ull;
  return h;
}

const void *fkt_audio_tensor(const fkt_audio *a, const char *name) {
  for (int i = 0; i < a->nbuf; i++)
    if (!strcmp(a->name[i], name)) return a->buf[i];
  return NULL;
}

/* one tensor by formula: its kind by synth.h's rules (fkm_kind_of), fan_in for a Linear's and the bias */
static const uint16_t *tensor(fkt_audio *a, int ndim, int64_t count, int64_t fan_in, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
static const uint16_t *tensor(fkt_audio *a, int ndim, int64_t count, int64_t fan_in, const char *fmt, ...) {
  char name[96];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(name, sizeof name, fmt, ap);
  va_end(ap);
  if (a->nbuf < 0) return NULL;
  const char *tag = a->cfg.tag ? a->cfg.tag : "audio";
  int kind = fkm_kind_of(tag, name, ndim);
  uint16_t *p = malloc((size_t)count * 2);
  if (!p || kind < 0 || a->nbuf >= (int)(sizeof a->buf / sizeof a->buf[0]) ||
      fkm_synth_tensor(tag, name, (fkm_kind)kind, count, fan_in, p) != 0) {
    fprintf(stderr, "fkt_audio_make: cannot make %s\n", name);
    free(p);
    a->nbuf = -1;
    return NULL;
  }
  snprintf(a->name[a->nbuf], sizeof a->name[0], "%s", name);
  a->buf[a->nbuf++] = p;
  return p;
}

int fkt_audio_make(fkt_audio *a, const fkt_audio_cfg *c, int threads) {
  memset(a, 0, sizeof *a);
  a->cfg = *c;
  int64_t h = c->hidden, f = c->ff, dim = c->dim;
  fk_plan_desc *d = &a->desc;
  d->programs = FK_PROGRAMS_AUDIO;
  d->threads = threads;
  d->tier = FK_TIER_EXACT;
  fk_audio_desc *au = &d->audio;
  fk_lfm2_stack *s = &au->lm.stack;
  *s = (fk_lfm2_stack){ .hidden = h, .ffn = f, .layers = c->layers, .heads = c->heads, .kv_heads = c->kv,
                        .head_dim = 64, .window = 0, .max_pos = 512, .rope_theta = 1e6f, .norm_eps = 1e-5f,
                        .layer = a->lm_layers };
  for (int i = 0; i < c->layers; i++) {
    fk_lfm2_layer *l = &a->lm_layers[i];
    l->kind = c->is_attn[i] ? FK_LAYER_ATTN : FK_LAYER_CONV;
    l->operator_norm = tensor(a, 1, h, 0, "lfm.layers.%d.operator_norm.weight", i);
    l->ffn_norm = tensor(a, 1, h, 0, "lfm.layers.%d.ffn_norm.weight", i);
    if (c->is_attn[i]) {
      l->q_proj = tensor(a, 2, c->heads * 64 * h, h, "lfm.layers.%d.self_attn.q_proj.weight", i);
      l->k_proj = tensor(a, 2, c->kv * 64 * h, h, "lfm.layers.%d.self_attn.k_proj.weight", i);
      l->v_proj = tensor(a, 2, c->kv * 64 * h, h, "lfm.layers.%d.self_attn.v_proj.weight", i);
      l->o_proj = tensor(a, 2, h * c->heads * 64, c->heads * 64, "lfm.layers.%d.self_attn.out_proj.weight", i);
      l->q_norm = tensor(a, 1, 64, 0, "lfm.layers.%d.self_attn.q_layernorm.weight", i);
      l->k_norm = tensor(a, 1, 64, 0, "lfm.layers.%d.self_attn.k_layernorm.weight", i);
    } else {
      l->in_proj = tensor(a, 2, 3 * h * h, h, "lfm.layers.%d.conv.in_proj.weight", i);
      l->conv = tensor(a, 3, 3 * h, 3, "lfm.layers.%d.conv.conv.weight", i);
      l->out_proj = tensor(a, 2, h * h, h, "lfm.layers.%d.conv.out_proj.weight", i);
    }
    l->w1 = tensor(a, 2, f * h, h, "lfm.layers.%d.feed_forward.w1.weight", i);
    l->w3 = tensor(a, 2, f * h, h, "lfm.layers.%d.feed_forward.w3.weight", i);
    l->w2 = tensor(a, 2, h * f, f, "lfm.layers.%d.feed_forward.w2.weight", i);
  }
  s->final_norm = tensor(a, 1, h, 0, "lfm.embedding_norm.weight");
  au->lm.vocab = c->vocab;
  au->lm.max_rows = 16;
  au->lm.embed = tensor(a, 2, c->vocab * h, 0, "lfm.embed_tokens.weight");
  fk_lfm2_stack *ds = &au->depth.stack;
  *ds = (fk_lfm2_stack){ .hidden = dim, .ffn = c->dff, .layers = c->dlayers, .heads = c->dheads, .kv_heads = c->dkv,
                         .head_dim = 32, .window = 0, .max_pos = FK_CODEBOOKS, .rope_theta = 1e6f,
                         .norm_eps = 1e-5f, .layer = a->depth_layers };
  int64_t qd = c->dheads * 32, kd = c->dkv * 32;
  for (int i = 0; i < c->dlayers; i++) {
    fk_lfm2_layer *l = &a->depth_layers[i];
    l->kind = FK_LAYER_ATTN;
    l->operator_norm = tensor(a, 1, dim, 0, "depthformer.layers.%d.operator_norm.weight", i);
    l->ffn_norm = tensor(a, 1, dim, 0, "depthformer.layers.%d.ffn_norm.weight", i);
    const uint16_t *qkv = tensor(a, 2, (qd + 2 * kd) * dim, dim, "depthformer.layers.%d.operator.qkv_proj.weight", i);
    l->q_proj = qkv;
    l->k_proj = qkv ? qkv + qd * dim : NULL;
    l->v_proj = qkv ? qkv + (qd + kd) * dim : NULL;
    l->o_proj = tensor(a, 2, dim * qd, qd, "depthformer.layers.%d.operator.out_proj.weight", i);
    l->q_norm = tensor(a, 1, 32, 0, "depthformer.layers.%d.operator.bounded_attention.q_layernorm.weight", i);
    l->k_norm = tensor(a, 1, 32, 0, "depthformer.layers.%d.operator.bounded_attention.k_layernorm.weight", i);
    l->w1 = tensor(a, 2, c->dff * dim, dim, "depthformer.layers.%d.feed_forward.w1.weight", i);
    l->w3 = tensor(a, 2, c->dff * dim, dim, "depthformer.layers.%d.feed_forward.w3.weight", i);
    l->w2 = tensor(a, 2, dim * c->dff, c->dff, "depthformer.layers.%d.feed_forward.w2.weight", i);
  }
  au->depth.audio_vocab = c->avocab;
  au->depth.linear = tensor(a, 2, FK_CODEBOOKS * dim * h, h, "depth_linear.weight");
  /* the bias is bf16 in the checkpoint (the model runs in bf16); the descriptor takes it widened */
  const uint16_t *bias = tensor(a, 1, FK_CODEBOOKS * dim, h, "depth_linear.bias");
  float *wide = malloc((size_t)(FK_CODEBOOKS * dim) * 4);
  if (wide && bias && a->nbuf >= 0 && a->nbuf < (int)(sizeof a->buf / sizeof a->buf[0])) {
    for (int64_t i = 0; i < FK_CODEBOOKS * dim; i++) {
      uint32_t u = (uint32_t)bias[i] << 16;
      memcpy(&wide[i], &u, 4);
    }
    snprintf(a->name[a->nbuf], sizeof a->name[0], "%s", "depth_linear.bias (f32)");
    a->buf[a->nbuf++] = wide;
  } else {
    free(wide);
    a->nbuf = -1;
  }
  au->depth.bias = wide;
  for (int k = 0; k < FK_CODEBOOKS; k++) {
    au->depth.embed[k] = tensor(a, 2, c->avocab * dim, 0, "depth_embeddings.%d.embedding.weight", k);
    au->depth.norm[k] = tensor(a, 1, dim, 0, "depth_embeddings.%d.embedding_norm.weight", k);
    au->depth.head[k] = c->tied ? NULL
                                : tensor(a, 2, c->avocab * dim, dim, "depth_embeddings.%d.to_logits.weight", k);
  }
  au->audio_embed = tensor(a, 2, FK_CODEBOOKS * c->avocab * h, 0, "audio_embedding.embedding.weight");
  au->n_text = c->n_text;
  au->n_audio = c->n_audio;
  if (a->nbuf < 0) {
    fkt_audio_free(a);
    return -1;
  }
  return 0;
}

void fkt_audio_add_detok(fk_plan_desc *d, const fk_plan_desc *dt) {
  d->programs |= FK_PROGRAMS_DETOK;
  d->detok = dt->detok;
  d->tail = dt->tail;
  d->tail_in = dt->tail_in;
  d->clip = dt->clip;
  d->flags |= dt->flags;
}

void fkt_audio_free(fkt_audio *a) {
  for (int i = 0; i < a->nbuf; i++) free(a->buf[i]);
  a->nbuf = 0;
}
