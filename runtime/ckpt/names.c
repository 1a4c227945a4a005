/* runtime/ckpt/names.c: the name maps: for each kind of checkpoint, every tensor its files hold,
 * by the name its authors' module tree gives it, with the shape the configuration implies, and
 * what it becomes: a descriptor field (bound here, filled once converted), a tensor served by
 * fk_model_tensor only (LFM2.5-Audio's Depthformer and audio embeddings), or ignored by name (the
 * table `ignored` below says why, tensor by tensor). A tensor no map claims refuses the open.
 *
 * Sources of the names: transformers' Lfm2ForCausalLM (model.embed_tokens, model.layers.N.*,
 * model.embedding_norm, lm_head), liquid-audio's LFM2AudioModel (lfm.*, audio_embedding.*,
 * depthformer.layers.N.*, depth_linear, depth_embeddings.N.*, conformer.*, audio_adapter.*) and
 * LFM2AudioDetokenizer (emb.emb, lfm.*, lin, istft.window). */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ckpt.h"

/* liquid_audio/detokenizer.py: FusedEmbedding(512) has 8 codebooks of 2048 codes, lin is
 * Linear(512, 1282), ISTFT(1280, 320, 1280) registers its Hann window; lfm2_audio.py: an audio
 * codebook has 2048 codes + EOAudio */
enum { DET_CODEBOOKS = 8, DET_CODES = 2048, DET_SPEC = FK_TAIL_SPEC, DET_WINDOW = 1280, AUDIO_VOCAB = 2049, HD = 64 };

/* Tensors of the files that no descriptor reads, each ignored by name, and why. A `prefix` entry
 * ignores a whole module (every tensor under it, whatever its dtype: BatchNorm counters are I64);
 * the others are claimed by the maps below (shape checked; a tied copy must equal its original). */
static const struct {
  const char *name;
  int prefix;
  const char *why;
} ignored[] = {
  { "conformer.", 1, "LFM2.5-Audio's audio encoder (ConformerEncoder): the runtime has no encoder" },
  { "audio_adapter.", 1, "LFM2.5-Audio's encoder-to-backbone MLP: the runtime has no encoder" },
  { "codebook_offsets", 0, "LFM2.5-Audio's buffer arange(codebooks) * 2049: a constant of the model" },
  { "audio_loss_weights", 0, "LFM2.5-Audio's training loss weights" },
  { "lm_head.weight", 0, "tied to model.embed_tokens.weight (kept only when equal to it)" },
  { "lfm.embed_tokens.weight", 0, "the audio detokenizer's Lfm2Model embedding: its forward passes inputs_embeds" },
  { "istft.window", 0, "the detokenizer's Hann window: the ISTFT stamps apply their own (checked equal)" },
  { "to_logits.weight", 0, "a tied SharedEmbedding's output projection (kept only when equal to its embedding)" },
};

const char *fk_ckpt_ignored_why(const char *name) {
  for (size_t i = 0; i < sizeof ignored / sizeof ignored[0]; i++) {
    size_t n = strlen(ignored[i].name), l = strlen(name);
    if (ignored[i].prefix ? !strncmp(name, ignored[i].name, n) : (l >= n && !strcmp(name + l - n, ignored[i].name)))
      return ignored[i].why;
  }
  return "ignored by name";
}

/* the whole modules of the table (LFM2.5-Audio's encoder) */
static void ignore_modules(fk_model *m) {
  for (size_t i = 0; i < sizeof ignored / sizeof ignored[0]; i++)
    for (int k = 0; ignored[i].prefix && k < m->nt; k++)
      if (m->t[k].role == CK_UNCLAIMED && !strncmp(m->t[k].name, ignored[i].name, strlen(ignored[i].name)))
        m->t[k].role = CK_IGNORED;
}

/* ---- claims ------------------------------------------------------------------------------------- */

typedef struct dim {
  int64_t n;
  const char *why; /* the config's words for it */
} dim;

/* QBLOCKS: a GGUF Q8_0 / Q4_0 / Q4_K matrix is taken too (its blocks to the plan, or dequantized) */
enum { OPT = 1, KEEP_F32 = 2, IGNORE = 4, ANY_DTYPE = 8, QBLOCKS = 16 };

static void fmt_dims(char *b, size_t size, const int64_t *n, const dim *d, int nd, int whys) {
  size_t o = 0;
  b[0] = 0;
  for (int i = 0; i < nd && o < size; i++) {
    int w = whys ? snprintf(b + o, size - o, "%s%s", i ? ", " : "", d[i].why)
                 : snprintf(b + o, size - o, "%s%lld", i ? ", " : "", (long long)(n ? n[i] : d[i].n));
    if (w < 0) break;
    o += (size_t)w;
  }
}

/* Claims tensor `name`: present (unless OPT), dtype BF16, F16 or F32 (unless ANY_DTYPE), shape d;
 * marks it used (served bf16, or f32 with KEEP_F32) or ignored (IGNORE). *out: the tensor, or NULL
 * when optional and absent. */
static fk_status claim(fk_model *m, const char *name, int nd, const dim *d, unsigned flags, ck_tensor **out,
                       fk_error *err) {
  char want[160], why[200];
  *out = NULL;
  ck_tensor *t = fk_ckpt_find(m, name);
  fmt_dims(want, sizeof want, NULL, d, nd, 0);
  fmt_dims(why, sizeof why, NULL, d, nd, 1);
  if (!t) {
    if (flags & OPT) return FK_OK;
    char g[256];
    return fk_error_set(err, FK_ENOTFOUND, __FILE__, __LINE__,
                        "fk_model_open: %s: no tensor '%s' (expected [%s]: %s)", fk_ckpt_file_of(m, name),
                        m->gguf ? fk_ckpt_gguf_name(name, g, sizeof g) : name, want, why);
  }
  const char *file = m->files[t->file].name;
  if (!(flags & ANY_DTYPE) && t->dtype != CK_BF16 && t->dtype != CK_F16 && t->dtype != CK_F32 &&
      !((flags & QBLOCKS) && CK_BLOCKS(t->dtype)))
    CK_BAD("%s: tensor '%s': dtype %s, expected BF16, F16 or F32%s", file, fk_ckpt_shown(t),
           fk_ckpt_dtype_name(t->dtype), flags & QBLOCKS ? " (or GGUF Q8_0, Q4_0, Q4_K)" : "");
  int same = t->ndim == nd;
  for (int i = 0; same && i < nd; i++) same = t->shape[i] == d[i].n;
  if (!same) {
    char found[160];
    fmt_dims(found, sizeof found, t->shape, NULL, t->ndim, 0);
    CK_BAD("%s: tensor '%s': shape [%s], expected [%s] (%s)", file, fk_ckpt_shown(t), found, want, why);
  }
  t->role = flags & IGNORE ? CK_IGNORED : CK_USED;
  t->out = flags & KEEP_F32 ? FK_DTYPE_F32 : FK_DTYPE_BF16;
  *out = t;
  return FK_OK;
}

static fk_status bind(fk_model *m, const ck_tensor *t, const uint16_t **bf16, const float **f32, fk_error *err) {
  if (m->nbind == m->capbind) {
    int cap = m->capbind ? 2 * m->capbind : 256;
    ck_bind *b = realloc(m->bind, (size_t)cap * sizeof *b);
    FK_RETURN_ERROR_IF(!b, err, FK_ENOMEM, "fk_model_open: %d bindings", cap);
    m->bind = b;
    m->capbind = cap;
  }
  m->bind[m->nbind++] = (ck_bind){ t, bf16, f32 };
  return FK_OK;
}

/* a name from a format (names are short: a longer one is a bug of the tables) */
static const char *nm(char *buf, size_t size, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static const char *nm(char *buf, size_t size, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, size, fmt, ap);
  va_end(ap);
  return buf;
}

#define DIMS(...) ((const dim[]){ __VA_ARGS__ })
#define NDIMS(...) ((int)(sizeof((const dim[]){ __VA_ARGS__ }) / sizeof(dim)))
/* a used bf16 tensor into a descriptor field */
#define USE(name, field, ...) \
  do { \
    ck_tensor *t_; \
    CK_TRY(claim(m, (name), NDIMS(__VA_ARGS__), DIMS(__VA_ARGS__), 0, &t_, err)); \
    CK_TRY(bind(m, t_, (field), NULL, err)); \
  } while (0)
/* a weight matrix: bf16 into its field, or GGUF Q8_0 / Q4_0 / Q4_K blocks, in place, into its fk_qmatrix */
#define USE_W(name, field, qfield, ...) \
  do { \
    ck_tensor *t_; \
    CK_TRY(claim(m, (name), NDIMS(__VA_ARGS__), DIMS(__VA_ARGS__), QBLOCKS, &t_, err)); \
    if (CK_BLOCKS(t_->dtype)) { \
      t_->blocks = 1; \
      *(qfield) = (fk_qmatrix){ CK_QFORMAT(t_->dtype), t_->src }; \
    } else { \
      CK_TRY(bind(m, t_, (field), NULL, err)); \
    } \
  } while (0)
/* a tensor served by fk_model_tensor (flags: KEEP_F32, ...) */
#define SERVE(name, flags, ...) \
  do { \
    ck_tensor *t_; \
    CK_TRY(claim(m, (name), NDIMS(__VA_ARGS__), DIMS(__VA_ARGS__), (flags), &t_, err)); \
  } while (0)

/* A tied copy: absent, or the same dtype and bytes as `of` (what the reference would tie). */
static fk_status tied_copy(fk_model *m, const char *name, const ck_tensor *of, const char *by, fk_error *err) {
  ck_tensor *t;
  CK_TRY(claim(m, name, of->ndim, DIMS({ of->shape[0], "as tied" }, { of->shape[1], "as tied" }), OPT | IGNORE, &t, err));
  if (t && (t->dtype != of->dtype || memcmp(t->src, of->src, of->nbytes) != 0))
    CK_BAD("%s: tensor '%s' differs from '%s' (%s %s) but %s ties them", m->files[t->file].name, name, of->name,
        t->dtype != of->dtype ? "dtype" : "bytes", t->dtype != of->dtype ? fk_ckpt_dtype_name(t->dtype) : "differ", by);
  return FK_OK;
}

/* ---- an LFM2 stack ------------------------------------------------------------------------------ */

static fk_status stack(fk_model *m, const char *p, const ck_lfm2 *c, fk_lfm2_layer *L, fk_lfm2_stack *s,
                       fk_error *err) {
  const dim H = { c->hidden, "hidden_size" }, H3 = { 3 * c->hidden, "3 * hidden_size" },
            F = { c->ffn, "the feed-forward width" }, Q = { c->heads * HD, "num_attention_heads * 64" },
            K = { c->kv_heads * HD, "num_key_value_heads * 64" }, D = { HD, "head_dim" }, ONE = { 1, "1" },
            TAPS = { 3, "conv_L_cache" };
  char n[256];
  for (int64_t i = 0; i < c->layers; i++) {
    fk_lfm2_layer *l = &L[i];
    memset(l, 0, sizeof *l);
    const int li = (int)i;
    USE(nm(n, sizeof n, "%slayers.%d.operator_norm.weight", p, li), &l->operator_norm, H);
    USE(nm(n, sizeof n, "%slayers.%d.ffn_norm.weight", p, li), &l->ffn_norm, H);
    USE_W(nm(n, sizeof n, "%slayers.%d.feed_forward.w1.weight", p, li), &l->w1, &l->q.w1, F, H);
    USE_W(nm(n, sizeof n, "%slayers.%d.feed_forward.w3.weight", p, li), &l->w3, &l->q.w3, F, H);
    USE_W(nm(n, sizeof n, "%slayers.%d.feed_forward.w2.weight", p, li), &l->w2, &l->q.w2, H, F);
    if (c->attn[i]) {
      l->kind = FK_LAYER_ATTN;
      USE_W(nm(n, sizeof n, "%slayers.%d.self_attn.q_proj.weight", p, li), &l->q_proj, &l->q.q_proj, Q, H);
      USE_W(nm(n, sizeof n, "%slayers.%d.self_attn.k_proj.weight", p, li), &l->k_proj, &l->q.k_proj, K, H);
      USE_W(nm(n, sizeof n, "%slayers.%d.self_attn.v_proj.weight", p, li), &l->v_proj, &l->q.v_proj, K, H);
      USE_W(nm(n, sizeof n, "%slayers.%d.self_attn.out_proj.weight", p, li), &l->o_proj, &l->q.o_proj, H, Q);
      USE(nm(n, sizeof n, "%slayers.%d.self_attn.q_layernorm.weight", p, li), &l->q_norm, D);
      USE(nm(n, sizeof n, "%slayers.%d.self_attn.k_layernorm.weight", p, li), &l->k_norm, D);
    } else {
      l->kind = FK_LAYER_CONV;
      USE_W(nm(n, sizeof n, "%slayers.%d.conv.in_proj.weight", p, li), &l->in_proj, &l->q.in_proj, H3, H);
      /* nn.Conv1d(groups = hidden): (hidden, 1, 3), row-major as fk_block_weights.conv wants it */
      USE(nm(n, sizeof n, "%slayers.%d.conv.conv.weight", p, li), &l->conv, H, ONE, TAPS);
      USE_W(nm(n, sizeof n, "%slayers.%d.conv.out_proj.weight", p, li), &l->out_proj, &l->q.out_proj, H, H);
    }
  }
  USE(nm(n, sizeof n, "%sembedding_norm.weight", p), &s->final_norm, H);
  s->hidden = c->hidden;
  s->ffn = c->ffn;
  s->layers = c->layers;
  s->heads = c->heads;
  s->kv_heads = c->kv_heads;
  s->head_dim = c->head_dim;
  s->window = c->window;
  s->max_pos = c->max_pos;
  s->rope_theta = c->rope_theta;
  s->norm_eps = c->norm_eps;
  s->layer = L;
  return FK_OK;
}

/* ---- the maps ----------------------------------------------------------------------------------- */

fk_status fk_ckpt_names_lm(fk_model *m, fk_error *err) {
  const ck_lfm2 *c = &m->lm;
  const dim V = { c->vocab, "vocab_size" }, H = { c->hidden, "hidden_size" };
  CK_TRY(stack(m, "model.", c, m->lm_layer, &m->lmd.stack, err));
  /* the embedding: bf16 for the gather (a GGUF Q8_0 / Q4_0 / Q4_K token_embd dequantized: convert.c); tied,
   * its blocks are the head's */
  ck_tensor *emb;
  CK_TRY(claim(m, "model.embed_tokens.weight", 2, DIMS(V, H), QBLOCKS, &emb, err));
  CK_TRY(bind(m, emb, &m->lmd.embed, NULL, err));
  m->lmd.vocab = c->vocab;
  if (!c->tied) {
    USE_W("lm_head.weight", &m->lmd.lm_head, &m->lmd.lm_head_q, V, H);
    return FK_OK;
  }
  if (CK_BLOCKS(emb->dtype)) m->lmd.lm_head_q = (fk_qmatrix){ CK_QFORMAT(emb->dtype), emb->src };
  return tied_copy(m, "lm_head.weight", emb, "tie_word_embeddings (tie_embedding)", err);
}

fk_status fk_ckpt_names_audio(fk_model *m, fk_error *err) {
  const ck_lfm2 *c = &m->lm;
  const ck_audio *a = &m->audio;
  const dim V = { c->vocab, "lfm.vocab_size" }, H = { c->hidden, "lfm.hidden_size" },
            AV = { AUDIO_VOCAB * a->codebooks, "2049 * codebooks" }, CV = { AUDIO_VOCAB, "2049 audio codes" },
            DD = { a->depth_dim, "depthformer.dim" }, DQKV = { a->depth_qkv, "depthformer.dim + 2 * 8 * head_dim" },
            DHD = { a->depth_head_dim, "depthformer.dim / 32" }, DF = { a->depth_ff, "the Depthformer's GLU width" },
            DL = { a->depth_dim * a->codebooks, "depthformer.dim * codebooks" }, CB = { a->codebooks, "codebooks" };
  char n[256];
  /* the backbone: an Lfm2Model whose text logits are lfm.embed_tokens.weight (lfm2_audio.py) */
  CK_TRY(stack(m, "lfm.", c, m->lm_layer, &m->lmd.stack, err));
  USE("lfm.embed_tokens.weight", &m->lmd.embed, V, H);
  m->lmd.vocab = c->vocab;
  m->lmd.lm_head = NULL;
  /* the audio embedding (SharedEmbedding over every codebook) */
  ck_tensor *emb;
  CK_TRY(claim(m, "audio_embedding.embedding.weight", 2, DIMS(AV, H), 0, &emb, err));
  CK_TRY(bind(m, emb, &m->aud.audio_embed, NULL, err));
  SERVE("audio_embedding.embedding_norm.weight", 0, H);
  if (a->tie_audio) CK_TRY(tied_copy(m, "audio_embedding.to_logits.weight", emb, "tie_audio_embeddings", err));
  else SERVE("audio_embedding.to_logits.weight", 0, AV, H);
  /* the Depthformer: StandardBlock(MHA(dim)) x layers, depth_linear, one SharedEmbedding per codebook;
   * desc.audio's fields (fk_model_describe splits qkv_proj's rows into q, k and v) */
  fk_audio_desc *ad = &m->aud;
  for (int i = 0; i < (int)a->depth_layers; i++) {
    fk_lfm2_layer *l = &m->depth_layer[i];
    memset(l, 0, sizeof *l);
    l->kind = FK_LAYER_ATTN;
    USE(nm(n, sizeof n, "depthformer.layers.%d.operator.qkv_proj.weight", i), &l->q_proj, DQKV, DD);
    USE(nm(n, sizeof n, "depthformer.layers.%d.operator.out_proj.weight", i), &l->o_proj, DD, DD);
    USE(nm(n, sizeof n, "depthformer.layers.%d.operator.bounded_attention.q_layernorm.weight", i), &l->q_norm, DHD);
    USE(nm(n, sizeof n, "depthformer.layers.%d.operator.bounded_attention.k_layernorm.weight", i), &l->k_norm, DHD);
    USE(nm(n, sizeof n, "depthformer.layers.%d.feed_forward.w1.weight", i), &l->w1, DF, DD);
    USE(nm(n, sizeof n, "depthformer.layers.%d.feed_forward.w3.weight", i), &l->w3, DF, DD);
    USE(nm(n, sizeof n, "depthformer.layers.%d.feed_forward.w2.weight", i), &l->w2, DD, DF);
    USE(nm(n, sizeof n, "depthformer.layers.%d.operator_norm.weight", i), &l->operator_norm, DD);
    USE(nm(n, sizeof n, "depthformer.layers.%d.ffn_norm.weight", i), &l->ffn_norm, DD);
  }
  ad->depth.stack = (fk_lfm2_stack){ .hidden = a->depth_dim, .ffn = a->depth_ff, .layers = a->depth_layers,
                                     .heads = 32, .kv_heads = 8, .head_dim = a->depth_head_dim, .window = 0,
                                     .max_pos = a->codebooks, .rope_theta = 1e6f, .norm_eps = 1e-5f,
                                     .layer = m->depth_layer };
  USE("depth_linear.weight", &ad->depth.linear, DL, H);
  ck_tensor *bias;
  CK_TRY(claim(m, "depth_linear.bias", 1, DIMS(DL), KEEP_F32, &bias, err));
  CK_TRY(bind(m, bias, NULL, &ad->depth.bias, err));
  ad->depth.audio_vocab = AUDIO_VOCAB;
  for (int i = 0; i < (int)a->codebooks; i++) { /* desc.audio takes 8 (fk_model_describe checks) */
    int take = i < FK_CODEBOOKS;
    ck_tensor *t;
    CK_TRY(claim(m, nm(n, sizeof n, "depth_embeddings.%d.embedding.weight", i), 2, DIMS(CV, DD), 0, &emb, err));
    if (take) CK_TRY(bind(m, emb, &ad->depth.embed[i], NULL, err));
    CK_TRY(claim(m, nm(n, sizeof n, "depth_embeddings.%d.embedding_norm.weight", i), 1, DIMS(DD), 0, &t, err));
    if (take) CK_TRY(bind(m, t, &ad->depth.norm[i], NULL, err));
    nm(n, sizeof n, "depth_embeddings.%d.to_logits.weight", i);
    if (a->depth_tie) {
      CK_TRY(tied_copy(m, n, emb, "depthformer.tie", err));
    } else {
      CK_TRY(claim(m, n, 2, DIMS(CV, DD), 0, &t, err));
      if (take) CK_TRY(bind(m, t, &ad->depth.head[i], NULL, err));
    }
  }
  ad->n_text = a->n_text;
  ad->n_audio = a->n_audio;
  /* buffers a state_dict may hold, and the encoder: ignored by name */
  SERVE("codebook_offsets", OPT | IGNORE | ANY_DTYPE, CB);
  SERVE("audio_loss_weights", OPT | IGNORE | ANY_DTYPE, CB);
  ignore_modules(m);
  return FK_OK;
}

fk_status fk_ckpt_names_detok(fk_model *m, const char *q, fk_error *err) {
  const ck_lfm2 *c = &m->det;
  const dim H = { c->hidden, "hidden_size" }, V = { c->vocab, "vocab_size" },
            CBV = { DET_CODEBOOKS * DET_CODES, "8 codebooks * 2048 codes" }, SPEC = { DET_SPEC, "1282 (lin)" },
            WIN = { DET_WINDOW, "n_fft 1280" };
  char n[256], p[128];
  CK_TRY(stack(m, nm(p, sizeof p, "%slfm.", q), c, m->det_layer, &m->detd.stack, err));
  USE(nm(n, sizeof n, "%semb.emb.weight", q), &m->detd.codebooks, CBV, H);
  m->detd.codebook_vocab = DET_CODES;
  USE(nm(n, sizeof n, "%slin.weight", q), &m->tail.lin, SPEC, H);
  ck_tensor *t;
  CK_TRY(claim(m, nm(n, sizeof n, "%slin.bias", q), 1, DIMS(SPEC), KEEP_F32, &t, err));
  CK_TRY(bind(m, t, NULL, &m->tail.bias, err));
  /* load_state_dict is strict: the unused embedding and the window are in the file */
  SERVE(nm(n, sizeof n, "%slfm.embed_tokens.weight", q), IGNORE, V, H);
  CK_TRY(claim(m, nm(n, sizeof n, "%sistft.window", q), 1, DIMS(WIN), IGNORE, &t, err));
  /* torch.hann_window(1280) (periodic), within bf16's rounding: the stamps' window is the same */
  for (size_t i = 0; i < DET_WINDOW; i++) {
    double want = 0.5 - 0.5 * cos(2.0 * 3.14159265358979323846 * (double)i / DET_WINDOW), got = fk_ckpt_f32_at(t, i);
    if (!(fabs(got - want) <= 0x1p-8))
      CK_BAD("%s: tensor '%s': element %zu = %g, the periodic Hann window of 1280 has %g: the ISTFT stamps apply that one",
          m->files[t->file].name, n, i, got, want);
  }
  return FK_OK;
}

fk_status fk_ckpt_names_unclaimed(const fk_model *m, fk_error *err) {
  for (int i = 0; i < m->nt; i++)
    if (m->t[i].role == CK_UNCLAIMED)
      CK_BAD("%s: tensor '%s' is not a tensor of %s (neither used nor ignored by name)", m->files[m->t[i].file].name,
          fk_ckpt_shown(&m->t[i]), m->arch);
  return FK_OK;
}
