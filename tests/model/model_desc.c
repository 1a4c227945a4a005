/* tests/model/model_desc.c: see model_desc.h. */
#include "model_desc.h"

#include <math.h>
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

void fkt_models_free(fkt_models *m) {
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
