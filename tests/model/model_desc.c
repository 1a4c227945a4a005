/* tests/model/model_desc.c: see model_desc.h. */
#include "model_desc.h"

#include <math.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

static const uint16_t *W(const fkm_weights *w, const char *prefix, int layer, const char *rest) {
  char name[96];
  if (layer >= 0) snprintf(name, sizeof name, "%slayers.%d.%s", prefix, layer, rest);
  else snprintf(name, sizeof name, "%s%s", prefix, rest);
  const void *d = fkm_weight(w, name, NULL);
  if (!d) fprintf(stderr, "model_desc: no weight %s\n", name);
  return d;
}

static void layers_of(const fkm_weights *w, const char *prefix, fk_lfm2_layer *out) {
  const fkm_config *c = w->cfg;
  for (int i = 0; i < c->nlayers; i++) {
    fk_lfm2_layer *l = &out[i];
    memset(l, 0, sizeof *l);
    l->operator_norm = W(w, prefix, i, "operator_norm.weight");
    l->ffn_norm = W(w, prefix, i, "ffn_norm.weight");
    l->w1 = W(w, prefix, i, "feed_forward.w1.weight");
    l->w3 = W(w, prefix, i, "feed_forward.w3.weight");
    l->w2 = W(w, prefix, i, "feed_forward.w2.weight");
    if (c->is_attn[i]) {
      l->kind = FK_LAYER_ATTN;
      l->q_proj = W(w, prefix, i, "self_attn.q_proj.weight");
      l->k_proj = W(w, prefix, i, "self_attn.k_proj.weight");
      l->v_proj = W(w, prefix, i, "self_attn.v_proj.weight");
      l->o_proj = W(w, prefix, i, "self_attn.out_proj.weight");
      l->q_norm = W(w, prefix, i, "self_attn.q_layernorm.weight");
      l->k_norm = W(w, prefix, i, "self_attn.k_layernorm.weight");
    } else {
      l->kind = FK_LAYER_CONV;
      l->in_proj = W(w, prefix, i, "conv.in_proj.weight");
      l->conv = W(w, prefix, i, "conv.conv.weight");
      l->out_proj = W(w, prefix, i, "conv.out_proj.weight");
    }
  }
}

static fk_lfm2_stack stack_of(const fkm_weights *w, const char *prefix, const fk_lfm2_layer *layers, int64_t max_pos) {
  const fkm_config *c = w->cfg;
  return (fk_lfm2_stack){ .hidden = c->hidden, .ffn = c->ff, .layers = c->nlayers, .heads = c->heads,
                          .kv_heads = c->kv_heads, .head_dim = c->head_dim, .window = c->sliding_window,
                          .max_pos = max_pos, .rope_theta = c->rope_theta, .norm_eps = c->norm_eps,
                          .layer = layers, .final_norm = W(w, prefix, -1, "embedding_norm.weight") };
}

int fkt_models_make(fkt_models *m) {
  char err[256];
  memset(m, 0, sizeof *m);
  if (fkm_synth_model("lm", &m->lm, err, sizeof err) != 0 || fkm_synth_model("detok", &m->detok, err, sizeof err) != 0) {
    fprintf(stderr, "model_desc: %s\n", err);
    return -1;
  }
  layers_of(&m->lm, "", m->lm_layers);
  layers_of(&m->detok, "lfm.", m->detok_layers);
  return 0;
}

static const void *qblocks(fkt_models *m, fk_qformat f, const uint16_t *w, int64_t n, int64_t k) {
  size_t bytes = fk_q_gguf_bytes(f, n, k);
  void *b = bytes && m->nq < (int)(sizeof m->qbuf / sizeof m->qbuf[0]) ? malloc(bytes) : NULL;
  fk_error e;
  if (!b || fk_q_quantize_bf16(f, w, k, n, k, b, bytes, &e) != FK_OK) {
    fprintf(stderr, "model_desc: %lld x %lld could not be quantized\n", (long long)n, (long long)k);
    free(b);
    return NULL;
  }
  return m->qbuf[m->nq++] = b;
}

static int stack_qblocks(fkt_models *m, fk_lfm2_stack *s, fk_lfm2_layer *layers, fk_qformat f, int upto) {
  int64_t h = s->hidden, ff = s->ffn, qd = s->heads * s->head_dim, kd = s->kv_heads * s->head_dim;
  for (int i = 0; i < s->layers; i++) layers[i] = s->layer[i];
  for (int i = 0; i < s->layers && i < upto; i++) {
    fk_lfm2_layer *l = &layers[i];
#define Q(field, n, k) \
    if (!(l->q.field.blocks = qblocks(m, f, l->field, n, k))) return -1; \
    l->q.field.format = f; \
    l->field = NULL; /* read from the blocks alone */
    if (l->kind == FK_LAYER_CONV) {
      Q(in_proj, 3 * h, h)
      Q(out_proj, h, h)
    } else {
      Q(q_proj, qd, h)
      Q(k_proj, kd, h)
      Q(v_proj, kd, h)
      Q(o_proj, h, qd)
    }
    Q(w1, ff, h)
    Q(w3, ff, h)
    Q(w2, h, ff)
#undef Q
  }
  s->layer = layers;
  return 0;
}

int fkt_models_qblocks(fkt_models *m, fk_plan_desc *d, fk_qformat f, int layers) {
  if (d->programs & FK_PROGRAMS_LM) {
    if (stack_qblocks(m, &d->lm.stack, m->lm_qlayers, f, layers) != 0) return -1;
    d->lm.lm_head_q.blocks = qblocks(m, f, d->lm.lm_head, d->lm.vocab, d->lm.stack.hidden);
    d->lm.lm_head_q.format = f;
    d->lm.lm_head = NULL;
    if (!d->lm.lm_head_q.blocks) return -1;
  }
  if ((d->programs & FK_PROGRAMS_DETOK) && stack_qblocks(m, &d->detok.stack, m->detok_qlayers, f, layers) != 0)
    return -1;
  return 0;
}

void fkt_models_free(fkt_models *m) {
  for (int i = 0; i < m->nq; i++) free(m->qbuf[i]);
  m->nq = 0;
  fkm_weights_free(&m->lm);
  fkm_weights_free(&m->detok);
}

fk_plan_desc fkt_models_desc(fkt_models *m, uint32_t programs, int threads) {
  fk_plan_desc d;
  memset(&d, 0, sizeof d);
  d.programs = programs;
  d.threads = threads;
  d.tier = FK_TIER_EXACT;
  if (programs & FK_PROGRAMS_LM) {
    d.lm.stack = stack_of(&m->lm, "", m->lm_layers, 256);
    d.lm.vocab = m->lm.cfg->vocab;
    d.lm.max_rows = 16;
    d.lm.embed = W(&m->lm, "", -1, "embed_tokens.weight");
    d.lm.lm_head = W(&m->lm, "", -1, "lm_head.weight"); /* the traces' LM has its own head */
  }
  if (programs & FK_PROGRAMS_DETOK) {
    d.detok.stack = stack_of(&m->detok, "lfm.", m->detok_layers, 1024);
    d.detok.codebook_vocab = m->detok.cfg->vocab;
    d.detok.max_frames = 4;
    d.detok.codebooks = W(&m->detok, "", -1, "emb.emb.weight");
    d.tail_in = m->detok.cfg->hidden;
    d.tail.lin = W(&m->detok, "", -1, "lin.weight");
    d.tail.bias = fkm_weight(&m->detok, "lin.bias", NULL);
    d.clip = INFINITY;
  }
  return d;
}

uint64_t fkt_fnv(const void *p, size_t n, uint64_t h) {
  const unsigned char *b = p;
  if (!h) h = 0xcbf29ce484222325u;
  for (size_t i = 0; i < n; i++) h = (h ^ b[i]) * 0x100000001b3u;
  return h;
}
