/* tests/ckpt/ckpt_write.c: see ckpt_write.h. */
#define _POSIX_C_SOURCE 200809L
#include "ckpt_write.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "flashkern.h"

/* the detokenizer's own Lfm2Model vocabulary (its unused embed_tokens), kept small */
enum { DETOK_VOCAB = 128, AUDIO_CODES = 2049, ENC_DIM = 16 };

static void *xmalloc(size_t n) {
  void *p = malloc(n ? n : 1);
  if (!p) {
    fprintf(stderr, "ckpt_write: out of memory (%zu bytes)\n", n);
    abort();
  }
  return p;
}

static int64_t count_of(int ndim, const int64_t *shape) {
  int64_t n = 1;
  for (int i = 0; i < ndim; i++) n *= shape[i];
  return n;
}

/* ---- files ----------------------------------------------------------------------------------- */

void fkw_add(fkw_file *f, const char *name, const char *dtype, int ndim, const int64_t *shape, const void *data,
             size_t nbytes) {
  if (f->n == f->cap) {
    f->cap = f->cap ? 2 * f->cap : 64;
    f->t = realloc(f->t, (size_t)f->cap * sizeof *f->t);
    if (!f->t) abort();
  }
  fkw_tensor *t = &f->t[f->n++];
  memset(t, 0, sizeof *t);
  snprintf(t->name, sizeof t->name, "%s", name);
  snprintf(t->dtype, sizeof t->dtype, "%s", dtype);
  t->ndim = ndim;
  for (int i = 0; i < ndim && i < 4; i++) t->shape[i] = shape[i];
  t->data = xmalloc(nbytes);
  if (nbytes) memcpy(t->data, data, nbytes);
  t->nbytes = nbytes;
}

/* f32 -> f16 when exact (1), else 0 */
static int f16_exact(float f, uint16_t *out) {
  uint32_t u;
  memcpy(&u, &f, 4);
  uint32_t sign = (u >> 16) & 0x8000u, e = (u >> 23) & 0xffu, m = u & 0x7fffffu;
  if (e == 0xff) {
    if (m & 0x1fffu) return 0;
    *out = (uint16_t)(sign | 0x7c00u | m >> 13);
    return 1;
  }
  if (e == 0) {
    *out = (uint16_t)sign;
    return m == 0;
  }
  int ue = (int)e - 127;
  if (ue > 15) return 0;
  if (ue >= -14) {
    if (m & 0x1fffu) return 0;
    *out = (uint16_t)(sign | (uint32_t)(ue + 15) << 10 | m >> 13);
    return 1;
  }
  int shift = 13 + (-14 - ue); /* a subnormal f16: (1.m) * 2^ue = k * 2^-24 */
  if (shift > 23) return 0;
  uint32_t full = 0x800000u | m;
  if (full & ((1u << shift) - 1)) return 0;
  *out = (uint16_t)(sign | full >> shift);
  return 1;
}

const char *fkw_add_bf16(fkw_file *f, const char *name, const char *dtype, int ndim, const int64_t *shape,
                         const uint16_t *v) {
  size_t n = (size_t)count_of(ndim, shape);
  if (dtype && !strcmp(dtype, "F32")) {
    float *w = xmalloc(n * 4);
    for (size_t i = 0; i < n; i++) w[i] = fk_f32_from_bf16(v[i]);
    fkw_add(f, name, "F32", ndim, shape, w, n * 4);
    free(w);
    return "F32";
  }
  if (dtype && !strcmp(dtype, "F16")) {
    uint16_t *w = xmalloc(n * 2);
    size_t i = 0;
    while (i < n && f16_exact(fk_f32_from_bf16(v[i]), &w[i])) i++;
    if (i == n) fkw_add(f, name, "F16", ndim, shape, w, n * 2);
    free(w);
    if (i == n) return "F16";
  }
  fkw_add(f, name, "BF16", ndim, shape, v, n * 2);
  return "BF16";
}

const char *fkw_add_f32(fkw_file *f, const char *name, const char *dtype, int ndim, const int64_t *shape,
                        const float *v) {
  size_t n = (size_t)count_of(ndim, shape);
  if (dtype && !strcmp(dtype, "BF16")) {
    uint16_t *w = xmalloc(n * 2);
    for (size_t i = 0; i < n; i++) w[i] = fk_bf16_from_f32(v[i]);
    fkw_add(f, name, "BF16", ndim, shape, w, n * 2);
    free(w);
    return "BF16";
  }
  fkw_add(f, name, "F32", ndim, shape, v, n * 4);
  return "F32";
}

fkw_tensor *fkw_find(fkw_file *f, const char *name) {
  for (int i = 0; i < f->n; i++)
    if (!strcmp(f->t[i].name, name)) return &f->t[i];
  return NULL;
}

int fkw_remove(fkw_file *f, const char *name) {
  fkw_tensor *t = fkw_find(f, name);
  if (!t) return -1;
  free(t->data);
  int i = (int)(t - f->t);
  memmove(&f->t[i], &f->t[i + 1], (size_t)(f->n - i - 1) * sizeof *t);
  f->n--;
  return 0;
}

void fkw_free(fkw_file *f) {
  for (int i = 0; i < f->n; i++) free(f->t[i].data);
  free(f->t);
  memset(f, 0, sizeof *f);
}

/* a growable string */
typedef struct {
  char *p;
  size_t n, cap;
} str;

static void sput(str *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void sput(str *s, const char *fmt, ...) {
  for (;;) {
    va_list ap;
    va_start(ap, fmt);
    int w = vsnprintf(s->p ? s->p + s->n : NULL, s->p ? s->cap - s->n : 0, fmt, ap);
    va_end(ap);
    if (w >= 0 && s->p && (size_t)w < s->cap - s->n) {
      s->n += (size_t)w;
      return;
    }
    s->cap = (s->cap + (size_t)(w > 0 ? w : 0) + 1) * 2;
    s->p = realloc(s->p, s->cap);
    if (!s->p) abort();
  }
}

int fkw_write_raw(const char *path, uint64_t hlen, const char *header, size_t header_len, const void *data, size_t n) {
  FILE *fp = fopen(path, "wb");
  if (!fp) return -1;
  unsigned char le[8];
  for (int i = 0; i < 8; i++) le[i] = (unsigned char)(hlen >> (8 * i));
  int ok = fwrite(le, 1, 8, fp) == 8 && fwrite(header, 1, header_len, fp) == header_len && (!n || fwrite(data, 1, n, fp) == n);
  return fclose(fp) == 0 && ok ? 0 : -1;
}

int fkw_write(const fkw_file *f, const char *path) { return fkw_write_pad(f, path, 0); }

int fkw_write_pad(const fkw_file *f, const char *path, int misalign) {
  str h = { 0 };
  sput(&h, "{\"__metadata__\":{\"format\":\"pt\"}");
  size_t off = 0;
  for (int i = 0; i < f->n; i++) {
    const fkw_tensor *t = &f->t[i];
    sput(&h, ",\"%s\":{\"dtype\":\"%s\",\"shape\":[", t->name, t->dtype);
    for (int d = 0; d < t->ndim; d++) sput(&h, "%s%lld", d ? "," : "", (long long)t->shape[d]);
    sput(&h, "],\"data_offsets\":[%zu,%zu]}", off, off + t->nbytes);
    off += t->nbytes;
  }
  sput(&h, "}");
  while (h.n % 8 != (size_t)misalign % 8) sput(&h, " ");
  unsigned char *data = xmalloc(off);
  off = 0;
  for (int i = 0; i < f->n; i++) {
    if (f->t[i].nbytes) memcpy(data + off, f->t[i].data, f->t[i].nbytes);
    off += f->t[i].nbytes;
  }
  int r = fkw_write_raw(path, h.n, h.p, h.n, data, off);
  free(data);
  free(h.p);
  return r;
}

int fkw_write_text(const char *path, const char *text) {
  FILE *fp = fopen(path, "w");
  if (!fp) return -1;
  int ok = fputs(text, fp) >= 0;
  return fclose(fp) == 0 && ok ? 0 : -1;
}

int fkw_write_json(const char *path, const json_t *j) {
  return json_dump_file(j, path, JSON_INDENT(2)) == 0 ? 0 : -1;
}

static int mkdir_p(const char *dir) { return mkdir(dir, 0700) == 0 ? 0 : -1; }

char *fkw_tmpdir(char *buf) {
  snprintf(buf, 64, "/tmp/fk_ckpt_XXXXXX");
  return mkdtemp(buf);
}

void fkw_rmdir(const char *dir) {
  char cmd[600];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  if (system(cmd) != 0) fprintf(stderr, "ckpt_write: could not remove %s\n", dir);
}

/* ---- configs --------------------------------------------------------------------------------- */

static json_t *strings(int n, const char *const *s) {
  json_t *a = json_array();
  for (int i = 0; i < n; i++) json_array_append_new(a, json_string(s[i]));
  return a;
}

/* an Lfm2Config for synthetic config c, as the released checkpoints or transformers 5 write it */
static json_t *lfm2_config(const fkm_config *c, const fkw_opts *o, int detok, int64_t vocab, int tied) {
  json_t *j = json_object();
  json_object_set_new(j, "model_type", json_string("lfm2"));
  json_object_set_new(j, "vocab_size", json_integer(vocab));
  json_object_set_new(j, "hidden_size", json_integer(c->hidden));
  json_object_set_new(j, "num_hidden_layers", json_integer(c->nlayers));
  json_object_set_new(j, "num_attention_heads", json_integer(c->heads));
  json_object_set_new(j, "num_key_value_heads", json_integer(c->kv_heads));
  json_object_set_new(j, "max_position_embeddings", json_integer(128000));
  json_object_set_new(j, "norm_eps", json_real(c->norm_eps));
  json_object_set_new(j, "conv_L_cache", json_integer(3));
  json_object_set_new(j, "conv_bias", json_false());
  json_object_set_new(j, "block_multiple_of", json_integer(256));
  json_object_set_new(j, "block_ffn_dim_multiplier", json_real(1.0));
  json_object_set_new(j, "bos_token_id", json_integer(1));
  json_object_set_new(j, "eos_token_id", json_integer(7));
  json_object_set_new(j, "pad_token_id", json_integer(0));
  json_object_set_new(j, "use_cache", json_true());
  if (o->released) {
    /* LFM2-350M's style: block_ff_dim auto-adjusted (int(2 * ff / 3), rounded to 256), extra keys */
    json_object_set_new(j, "block_ff_dim", json_integer(c->ff * 3 / 2));
    json_object_set_new(j, "block_auto_adjust_ff_dim", json_true());
    json_object_set_new(j, "block_dim", json_integer(c->hidden));
    json_object_set_new(j, "conv_dim", json_integer(c->hidden));
    json_object_set_new(j, "num_heads", json_integer(c->heads));
    json_object_set_new(j, "rope_theta", json_real(c->rope_theta));
    json_object_set_new(j, "tie_embedding", json_boolean(tied));
    json_object_set_new(j, "torch_dtype", json_string("bfloat16"));
    json_object_set_new(j, "transformers_version", json_string("4.54.0.dev0"));
    if (detok) {
      const char *lt[16];
      for (int i = 0; i < c->nlayers; i++) lt[i] = c->is_attn[i] ? "sliding_attention" : "conv";
      json_object_set_new(j, "layer_types", strings(c->nlayers, lt));
    } else {
      json_t *idx = json_array();
      for (int i = 0; i < c->nlayers; i++)
        if (c->is_attn[i]) json_array_append_new(idx, json_integer(i));
      json_object_set_new(j, "full_attn_idxs", idx);
    }
  } else {
    /* what transformers 5 writes: intermediate_size, rope_parameters, layer_types */
    json_object_set_new(j, "intermediate_size", json_integer(c->ff));
    json_object_set_new(j, "block_auto_adjust_ff_dim", json_false());
    json_t *rp = json_object();
    json_object_set_new(rp, "rope_theta", json_real(c->rope_theta));
    json_object_set_new(rp, "rope_type", json_string("default"));
    json_object_set_new(j, "rope_parameters", rp);
    json_object_set_new(j, "tie_word_embeddings", json_boolean(tied));
    json_object_set_new(j, "dtype", json_string("bfloat16"));
    json_object_set_new(j, "transformers_version", json_string("5.24.0"));
    json_object_set_new(j, "full_attn_idxs", json_null());
    const char *lt[16];
    for (int i = 0; i < c->nlayers; i++) lt[i] = c->is_attn[i] ? detok ? "sliding_attention" : "full_attention" : "conv";
    json_object_set_new(j, "layer_types", strings(c->nlayers, lt));
  }
  if (detok) json_object_set_new(j, "sliding_window", json_integer(c->sliding_window));
  return j;
}

static int write_config(const char *dir, const char *fname, json_t *j, const fkw_opts *o) {
  if (o->edit_config) o->edit_config(j, fname, o->arg);
  char path[512];
  snprintf(path, sizeof path, "%s/%s", dir, fname);
  int r = fkw_write_json(path, j);
  json_decref(j);
  if (r) fprintf(stderr, "ckpt_write: cannot write %s\n", path);
  return r;
}

/* ---- weights ----------------------------------------------------------------------------------- */

const char *fkw_bias_dtype(const fkw_opts *o) { return !o->dtype || !strcmp(o->dtype, "BF16") ? "BF16" : "F32"; }

static const char *dtype_of(const fkw_opts *o) { return o->dtype ? o->dtype : "BF16"; }

/* the synthetic tensors of w, renamed prefix + name (lm_head.weight kept as it is, or dropped) */
static void add_model(fkw_file *f, const fkm_weights *w, const char *prefix, int head, const fkw_opts *o) {
  char name[160];
  for (int i = 0; i < w->n; i++) {
    const fkm_tensor *t = &w->t[i];
    int is_head = !strcmp(t->name, "lm_head.weight");
    if (is_head && !head) continue;
    snprintf(name, sizeof name, "%s%s", is_head ? "" : prefix, t->name);
    if (t->kind == FKM_BIAS) fkw_add_f32(f, name, fkw_bias_dtype(o), t->ndim, t->shape, w->data[i]);
    else fkw_add_bf16(f, name, dtype_of(o), t->ndim, t->shape, w->data[i]);
  }
}

/* a tensor by formula (tests/model/synth.h's, under tag "audio"), stored bf16 (or f32 for a bias) */
static void add_synth(fkw_file *f, const char *name, fkm_kind kind, int ndim, int64_t d0, int64_t d1, const fkw_opts *o) {
  const int64_t shape[2] = { d0, d1 };
  int64_t n = count_of(ndim, shape);
  if (kind == FKM_BIAS) {
    float *v = xmalloc((size_t)n * 4);
    fkm_synth_tensor("audio", name, kind, n, 0, v);
    fkw_add_f32(f, name, fkw_bias_dtype(o), ndim, shape, v);
    free(v);
  } else {
    uint16_t *v = xmalloc((size_t)n * 2);
    fkm_synth_tensor("audio", name, kind, n, ndim == 2 ? d1 : 1, v);
    fkw_add_bf16(f, name, dtype_of(o), ndim, shape, v);
    free(v);
  }
}

/* writes f as model.safetensors or, with o->shards >= 2, as shards and their index */
static int write_weights(const char *dir, const char *sub, fkw_file *f, const fkw_opts *o) {
  char path[512], fname[256];
  if (o->shards < 2) {
    snprintf(fname, sizeof fname, "%s%smodel.safetensors", sub, *sub ? "/" : "");
    if (o->edit_file) o->edit_file(f, fname, o->arg);
    snprintf(path, sizeof path, "%s/%s", dir, fname);
    if (fkw_write_pad(f, path, o->misalign)) return fprintf(stderr, "ckpt_write: cannot write %s\n", path), -1;
    return 0;
  }
  json_t *ix = json_object(), *wm = json_object(), *meta = json_object();
  size_t total = 0;
  int r = 0;
  for (int s = 0; s < o->shards && !r; s++) {
    fkw_file part = { 0 };
    snprintf(fname, sizeof fname, "model-%05d-of-%05d.safetensors", s + 1, o->shards);
    for (int i = 0; i < f->n; i++) {
      if ((int)((int64_t)i * o->shards / f->n) != s) continue;
      const fkw_tensor *t = &f->t[i];
      fkw_add(&part, t->name, t->dtype, t->ndim, t->shape, t->data, t->nbytes);
      json_object_set_new(wm, t->name, json_string(fname));
      total += t->nbytes;
    }
    if (o->edit_file) o->edit_file(&part, fname, o->arg);
    snprintf(path, sizeof path, "%s/%s", dir, fname);
    r = fkw_write_pad(&part, path, o->misalign);
    fkw_free(&part);
  }
  json_object_set_new(meta, "total_size", json_integer((json_int_t)total));
  json_object_set_new(ix, "metadata", meta);
  json_object_set_new(ix, "weight_map", wm);
  if (!r) r = write_config(dir, "model.safetensors.index.json", ix, &(fkw_opts){ .edit_config = o->edit_config, .arg = o->arg });
  else json_decref(ix);
  return r;
}

int fkw_lm_dir(const char *dir, const fkm_weights *lm, const fkw_opts *o) {
  json_t *cfg = lfm2_config(lm->cfg, o, 0, lm->cfg->vocab, o->tied);
  json_t *arch = json_array();
  json_array_append_new(arch, json_string("Lfm2ForCausalLM"));
  json_object_set_new(cfg, "architectures", arch);
  if (write_config(dir, "config.json", cfg, o)) return -1;
  fkw_file f = { 0 };
  add_model(&f, lm, "model.", !o->tied, o);
  if (o->tied && o->store_head) {
    const fkm_tensor *e;
    const uint16_t *v = fkm_weight(lm, "embed_tokens.weight", &e);
    fkw_add_bf16(&f, "lm_head.weight", dtype_of(o), e->ndim, e->shape, v);
  }
  int r = write_weights(dir, "", &f, o);
  fkw_free(&f);
  return r;
}

/* the detokenizer's files into dir/sub (sub "" or "audio_detokenizer") */
static int detok_files(const char *dir, const char *sub, const fkm_weights *w, const fkw_opts *o) {
  char fname[256];
  snprintf(fname, sizeof fname, "%s%sconfig.json", sub, *sub ? "/" : "");
  if (write_config(dir, fname, lfm2_config(w->cfg, o, 1, DETOK_VOCAB, 1), o)) return -1;
  fkw_file f = { 0 };
  add_model(&f, w, "", 0, o);
  /* what LFM2AudioDetokenizer's state_dict holds beside the synthetic weights: its Lfm2Model's
   * unused embed_tokens and the ISTFT's Hann window buffer (f32, as torch.hann_window) */
  add_synth(&f, "lfm.embed_tokens.weight", FKM_EMBED, 2, DETOK_VOCAB, w->cfg->hidden, o);
  float win[1280];
  for (int i = 0; i < 1280; i++) win[i] = (float)(0.5 - 0.5 * cos(2.0 * 3.14159265358979323846 * i / 1280.0));
  fkw_add_f32(&f, "istft.window", "F32", 1, (const int64_t[]){ 1280 }, win);
  int r = write_weights(dir, sub, &f, &(fkw_opts){ .dtype = o->dtype, .edit_file = o->edit_file, .arg = o->arg });
  fkw_free(&f);
  return r;
}

int fkw_detok_dir(const char *dir, const fkm_weights *detok, const fkw_opts *o) { return detok_files(dir, "", detok, o); }

int fkw_audio_dir(const char *dir, const fkm_weights *lm, const fkm_weights *detok, const fkw_opts *o) {
  const int64_t H = lm->cfg->hidden, DD = o->depth_dim ? o->depth_dim : FKW_DEPTH_DIM, CB = FKW_CODEBOOKS, HDD = DD / 32;
  const int64_t DF = (2 * 4 * DD / 3 + 255) / 256 * 256;
  json_t *cfg = json_object(), *arch = json_array(), *depth = json_object(), *pre = json_object(), *enc = json_object();
  json_array_append_new(arch, json_string("LFM2AudioModel"));
  json_object_set_new(cfg, "architectures", arch);
  json_object_set_new(cfg, "codebooks", json_integer(CB));
  json_object_set_new(cfg, "tie_audio_embeddings", json_false());
  json_object_set_new(cfg, "semantic_codebook_factor", json_real(100.0));
  json_object_set_new(cfg, "codebook_weight", json_string("log"));
  json_object_set_new(cfg, "interleaved_n_text", json_integer(o->n_text ? o->n_text : 6));
  json_object_set_new(cfg, "interleaved_n_audio", json_integer(o->n_audio ? o->n_audio : 12));
  json_object_set_new(pre, "sample_rate", json_integer(16000));
  json_object_set_new(pre, "features", json_integer(128));
  json_object_set_new(cfg, "preprocessor", pre);
  json_object_set_new(enc, "feat_in", json_integer(128));
  json_object_set_new(enc, "d_model", json_integer(ENC_DIM));
  json_object_set_new(enc, "n_layers", json_integer(1));
  json_object_set_new(cfg, "encoder", enc);
  json_object_set_new(cfg, "lfm", lfm2_config(lm->cfg, o, 0, lm->cfg->vocab, 1));
  json_object_set_new(depth, "layers", json_integer(FKW_DEPTH_LAYERS));
  json_object_set_new(depth, "dim", json_integer(DD));
  json_object_set_new(depth, "tie", json_true());
  json_object_set_new(cfg, "depthformer", depth);
  if (write_config(dir, "config.json", cfg, o)) return -1;

  fkw_file f = { 0 };
  char n[160];
  add_model(&f, lm, "lfm.", 0, o);
  add_synth(&f, "audio_embedding.embedding.weight", FKM_EMBED, 2, AUDIO_CODES * CB, H, o);
  add_synth(&f, "audio_embedding.embedding_norm.weight", FKM_NORM, 1, H, 0, o);
  add_synth(&f, "audio_embedding.to_logits.weight", FKM_LINEAR, 2, AUDIO_CODES * CB, H, o);
  for (int i = 0; i < FKW_DEPTH_LAYERS; i++) {
#define L(fmt) (snprintf(n, sizeof n, "depthformer.layers.%d." fmt, i), n)
    add_synth(&f, L("operator.qkv_proj.weight"), FKM_LINEAR, 2, DD + 2 * HDD * 8, DD, o);
    add_synth(&f, L("operator.out_proj.weight"), FKM_LINEAR, 2, DD, DD, o);
    add_synth(&f, L("operator.bounded_attention.q_layernorm.weight"), FKM_NORM, 1, HDD, 0, o);
    add_synth(&f, L("operator.bounded_attention.k_layernorm.weight"), FKM_NORM, 1, HDD, 0, o);
    add_synth(&f, L("feed_forward.w1.weight"), FKM_LINEAR, 2, DF, DD, o);
    add_synth(&f, L("feed_forward.w3.weight"), FKM_LINEAR, 2, DF, DD, o);
    add_synth(&f, L("feed_forward.w2.weight"), FKM_LINEAR, 2, DD, DF, o);
    add_synth(&f, L("operator_norm.weight"), FKM_NORM, 1, DD, 0, o);
    add_synth(&f, L("ffn_norm.weight"), FKM_NORM, 1, DD, 0, o);
#undef L
  }
  add_synth(&f, "depth_linear.weight", FKM_LINEAR, 2, DD * CB, H, o);
  add_synth(&f, "depth_linear.bias", FKM_BIAS, 1, DD * CB, 0, o);
  for (int i = 0; i < CB; i++) {
    snprintf(n, sizeof n, "depth_embeddings.%d.embedding.weight", i);
    add_synth(&f, n, FKM_EMBED, 2, AUDIO_CODES, DD, o);
    if (i == 0) { /* depthformer.tie: one codebook stores its tied copy, equal; the others none */
      fkw_tensor *e = fkw_find(&f, n);
      fkw_tensor copy = *e;
      snprintf(n, sizeof n, "depth_embeddings.%d.to_logits.weight", i);
      fkw_add(&f, n, copy.dtype, copy.ndim, copy.shape, copy.data, copy.nbytes);
    }
    snprintf(n, sizeof n, "depth_embeddings.%d.embedding_norm.weight", i);
    add_synth(&f, n, FKM_NORM, 1, DD, 0, o);
  }
  /* buffers and the encoder, which the loader ignores by name (any dtype) */
  int64_t offs[FKW_CODEBOOKS];
  for (int i = 0; i < CB; i++) offs[i] = i * AUDIO_CODES;
  fkw_add(&f, "codebook_offsets", "I64", 1, (const int64_t[]){ CB }, offs, sizeof offs);
  float enc_w[8 * 9];
  for (int i = 0; i < 72; i++) enc_w[i] = (float)i / 72.0f;
  fkw_add(&f, "conformer.pre_encode.conv.0.weight", "F32", 4, (const int64_t[]){ 8, 1, 3, 3 }, enc_w, sizeof enc_w);
  fkw_add(&f, "conformer.layers.0.norm_out.weight", "F32", 1, (const int64_t[]){ ENC_DIM }, enc_w, ENC_DIM * 4);
  int64_t tracked = 12345;
  fkw_add(&f, "conformer.layers.0.conv.batch_norm.num_batches_tracked", "I64", 0, NULL, &tracked, 8);
  fkw_add(&f, "audio_adapter.model.0.weight", "F32", 1, (const int64_t[]){ ENC_DIM }, enc_w, ENC_DIM * 4);
  fkw_add(&f, "audio_adapter.model.0.bias", "F32", 1, (const int64_t[]){ ENC_DIM }, enc_w, ENC_DIM * 4);
  int r = write_weights(dir, "", &f, o);
  fkw_free(&f);
  if (r || o->no_detok) return r;
  char sub[512];
  snprintf(sub, sizeof sub, "%s/audio_detokenizer", dir);
  if (mkdir_p(sub)) return -1;
  return detok_files(dir, "audio_detokenizer", detok, o);
}

/* ---- GGUF ----------------------------------------------------------------------------------------- */

/* gguf's TensorNameMap for MODEL_ARCH.LFM2, per layer after "model.layers.N." / "blk.N." */
static const struct {
  const char *hf, *gguf;
} GGUF_LAYER[] = {
  { "operator_norm.weight", "attn_norm.weight" }, { "ffn_norm.weight", "ffn_norm.weight" },
  { "feed_forward.w1.weight", "ffn_gate.weight" }, { "feed_forward.w3.weight", "ffn_up.weight" },
  { "feed_forward.w2.weight", "ffn_down.weight" }, { "conv.in_proj.weight", "shortconv.in_proj.weight" },
  { "conv.conv.weight", "shortconv.conv.weight" }, { "conv.out_proj.weight", "shortconv.out_proj.weight" },
  { "self_attn.q_proj.weight", "attn_q.weight" }, { "self_attn.k_proj.weight", "attn_k.weight" },
  { "self_attn.v_proj.weight", "attn_v.weight" }, { "self_attn.out_proj.weight", "attn_output.weight" },
  { "self_attn.q_layernorm.weight", "attn_q_norm.weight" }, { "self_attn.k_layernorm.weight", "attn_k_norm.weight" },
};

const char *fkw_gguf_name(const char *hf, char *out, size_t size) {
  static const struct {
    const char *hf, *gguf;
  } top[] = { { "model.embed_tokens.weight", "token_embd.weight" },
              { "model.embedding_norm.weight", "token_embd_norm.weight" }, { "lm_head.weight", "output.weight" } };
  for (size_t i = 0; i < sizeof top / sizeof top[0]; i++)
    if (!strcmp(hf, top[i].hf)) return snprintf(out, size, "%s", top[i].gguf), out;
  int layer, used = 0;
  if (sscanf(hf, "model.layers.%d.%n", &layer, &used) == 1 && used > 0)
    for (size_t i = 0; i < sizeof GGUF_LAYER / sizeof GGUF_LAYER[0]; i++)
      if (!strcmp(hf + used, GGUF_LAYER[i].hf)) return snprintf(out, size, "blk.%d.%s", layer, GGUF_LAYER[i].gguf), out;
  return NULL;
}

/* a growable byte buffer */
typedef struct {
  unsigned char *p;
  size_t n, cap;
} gbuf;

static void gput(gbuf *b, const void *d, size_t n) {
  if (b->n + n > b->cap) {
    while (b->n + n > b->cap) b->cap = b->cap ? 2 * b->cap : 4096;
    b->p = realloc(b->p, b->cap);
    if (!b->p) abort();
  }
  if (n) memcpy(b->p + b->n, d, n);
  b->n += n;
}
static void gpad(gbuf *b, size_t align) {
  static const unsigned char zero[64];
  while (b->n % align) gput(b, zero, align - b->n % align < sizeof zero ? align - b->n % align : sizeof zero);
}
static void g_u32(gbuf *b, uint32_t v) { gput(b, &v, 4); } /* little-endian hosts (as the loader) */
static void g_u64(gbuf *b, uint64_t v) { gput(b, &v, 8); }
static void g_str(gbuf *b, const char *s) {
  g_u64(b, strlen(s));
  gput(b, s, strlen(s));
}

/* GGUF value types */
enum { GV_U32 = 4, GV_I32 = 5, GV_F32 = 6, GV_STRING = 8, GV_ARRAY = 9 };
/* ggml types, and llama.cpp's file types (LLAMA_FTYPE_MOSTLY_*) */
enum { GG_F32 = 0, GG_Q4_0 = 2, GG_Q8_0 = 8, GG_Q4_K = 12, GG_BF16 = 30 };

static void kv_u32(gbuf *b, int *n, const char *key, uint32_t v) {
  g_str(b, key), g_u32(b, GV_U32), g_u32(b, v), (*n)++;
}
static void kv_f32(gbuf *b, int *n, const char *key, float v) {
  g_str(b, key), g_u32(b, GV_F32), gput(b, &v, 4), (*n)++;
}
static void kv_str(gbuf *b, int *n, const char *key, const char *v) {
  g_str(b, key), g_u32(b, GV_STRING), g_str(b, v), (*n)++;
}

/* one tensor of the file: its GGUF name, ne, ggml type and bytes (owned) */
typedef struct {
  char hf[160], name[160];
  uint32_t nd, type;
  uint64_t ne[4];
  unsigned char *data;
  size_t nbytes;
} gtensor;

static int by_hf(const void *a, const void *b) { return strcmp(((const gtensor *)a)->hf, ((const gtensor *)b)->hf); }

int fkw_lm_gguf(const char *path, const fkm_weights *lm, fk_qformat q, int tied) {
  const fkm_config *c = lm->cfg;
  if (q != FK_QNONE && q != FK_Q8 && q != FK_Q4 && q != FK_Q4K)
    return fprintf(stderr, "ckpt_write: %s: format %d\n", path, (int)q), -1;
  const uint32_t gtype = q == FK_Q8 ? GG_Q8_0 : q == FK_Q4 ? GG_Q4_0 : q == FK_Q4K ? GG_Q4_K : GG_BF16;
  const uint32_t ftype = q == FK_Q8 ? 7 : q == FK_Q4 ? 2 : q == FK_Q4K ? 15 : 32; /* MOSTLY_Q4_K_M: 15, BF16: 32 */
  gtensor *ts = calloc((size_t)lm->n + 1, sizeof *ts);
  if (!ts) abort();
  int nt = 0, r = 0;
  for (int i = 0; i < lm->n && !r; i++) {
    const fkm_tensor *t = &lm->t[i];
    const int is_head = !strcmp(t->name, "lm_head.weight");
    if (is_head && tied) continue;
    gtensor *g = &ts[nt];
    snprintf(g->hf, sizeof g->hf, "%s%s", is_head ? "" : "model.", t->name);
    if (!fkw_gguf_name(g->hf, g->name, sizeof g->name)) {
      fprintf(stderr, "ckpt_write: %s: tensor %s has no GGUF name\n", path, g->hf);
      r = -1;
      break;
    }
    nt++;
    const uint16_t *v = lm->data[i];
    const size_t n = (size_t)t->count;
    if (t->kind == FKM_BIAS) { /* (no LM tensor is one) */
      fprintf(stderr, "ckpt_write: %s: tensor %s: a bias\n", path, g->hf);
      r = -1;
    } else if (t->ndim == 2) {
      /* (out, in): ne [in, out] */
      const int64_t rows = t->shape[0], k = t->shape[1];
      g->nd = 2, g->ne[0] = (uint64_t)k, g->ne[1] = (uint64_t)rows, g->type = gtype;
      g->nbytes = q == FK_QNONE ? n * 2 : fk_q_gguf_bytes(q, rows, k);
      g->data = xmalloc(g->nbytes);
      fk_error e;
      if (q == FK_QNONE) memcpy(g->data, v, n * 2);
      else if (!g->nbytes || fk_q_quantize_bf16(q, v, k, rows, k, g->data, g->nbytes, &e) != FK_OK) {
        fprintf(stderr, "ckpt_write: %s: tensor %s (%lld x %lld): %s\n", path, g->name, (long long)rows, (long long)k,
                g->nbytes ? e.message : "not whole blocks");
        r = -1;
      }
    } else {
      /* the norms (n) and the ShortConv taps ((hidden, 1, 3): numpy (hidden, 3), ne [3, hidden]): F32 */
      g->type = GG_F32;
      if (t->ndim == 3) g->nd = 2, g->ne[0] = (uint64_t)t->shape[2], g->ne[1] = (uint64_t)t->shape[0];
      else g->nd = 1, g->ne[0] = (uint64_t)n;
      g->nbytes = n * 4;
      float *w = xmalloc(g->nbytes);
      for (size_t k = 0; k < n; k++) w[k] = fk_f32_from_bf16(v[k]);
      g->data = (unsigned char *)w;
    }
  }
  gbuf b = { 0 };
  if (!r) {
    qsort(ts, (size_t)nt, sizeof *ts, by_hf);
    gbuf kv = { 0 };
    int nkv = 0;
    char key[64];
    kv_str(&kv, &nkv, "general.architecture", "lfm2");
    kv_str(&kv, &nkv, "general.type", "model");
    kv_str(&kv, &nkv, "general.name", "fkw synthetic lm");
    kv_u32(&kv, &nkv, "lfm2.block_count", (uint32_t)c->nlayers);
    kv_u32(&kv, &nkv, "lfm2.context_length", 128000);
    kv_u32(&kv, &nkv, "lfm2.embedding_length", (uint32_t)c->hidden);
    kv_u32(&kv, &nkv, "lfm2.feed_forward_length", (uint32_t)c->ff);
    kv_u32(&kv, &nkv, "lfm2.attention.head_count", (uint32_t)c->heads);
    /* a list: GGUFWriter's array of INT32 (GGUFValueType.get_type of a Python int) */
    g_str(&kv, "lfm2.attention.head_count_kv"), g_u32(&kv, GV_ARRAY), g_u32(&kv, GV_I32), g_u64(&kv, (uint64_t)c->nlayers);
    for (int i = 0; i < c->nlayers; i++) g_u32(&kv, c->is_attn[i] ? (uint32_t)c->kv_heads : 0u);
    nkv++;
    kv_f32(&kv, &nkv, "lfm2.rope.freq_base", c->rope_theta);
    kv_f32(&kv, &nkv, "lfm2.attention.layer_norm_rms_epsilon", c->norm_eps);
    kv_u32(&kv, &nkv, "general.file_type", ftype);
    kv_u32(&kv, &nkv, "lfm2.vocab_size", (uint32_t)c->vocab);
    kv_u32(&kv, &nkv, "lfm2.shortconv.l_cache", 3);
    kv_u32(&kv, &nkv, "general.quantization_version", 2);
    kv_str(&kv, &nkv, "tokenizer.ggml.model", "none");
    g_str(&kv, "tokenizer.ggml.tokens"), g_u32(&kv, GV_ARRAY), g_u32(&kv, GV_STRING), g_u64(&kv, (uint64_t)c->vocab);
    for (int64_t i = 0; i < c->vocab; i++) snprintf(key, sizeof key, "<tok_%lld>", (long long)i), g_str(&kv, key);
    nkv++;
    g_str(&kv, "tokenizer.ggml.token_type"), g_u32(&kv, GV_ARRAY), g_u32(&kv, GV_I32), g_u64(&kv, (uint64_t)c->vocab);
    for (int64_t i = 0; i < c->vocab; i++) g_u32(&kv, 1);
    nkv++;

    gput(&b, "GGUF", 4);
    g_u32(&b, 3);
    g_u64(&b, (uint64_t)nt);
    g_u64(&b, (uint64_t)nkv);
    gput(&b, kv.p, kv.n);
    free(kv.p);
    uint64_t off = 0;
    for (int i = 0; i < nt; i++) {
      const gtensor *g = &ts[i];
      g_str(&b, g->name);
      g_u32(&b, g->nd);
      for (uint32_t d = 0; d < g->nd; d++) g_u64(&b, g->ne[d]);
      g_u32(&b, g->type);
      g_u64(&b, off);
      off += (g->nbytes + 31) / 32 * 32;
    }
    gpad(&b, 32);
    for (int i = 0; i < nt; i++) {
      gput(&b, ts[i].data, ts[i].nbytes);
      gpad(&b, 32);
    }
    FILE *fp = fopen(path, "wb");
    int ok = fp && fwrite(b.p, 1, b.n, fp) == b.n;
    if (fp && fclose(fp) != 0) ok = 0;
    if (!ok) fprintf(stderr, "ckpt_write: cannot write %s\n", path), r = -1;
  }
  free(b.p);
  for (int i = 0; i < nt; i++) free(ts[i].data);
  free(ts);
  return r;
}
