/* runtime/ckpt/config.c: config.json: which kind of directory it describes, an Lfm2Config (an LM,
 * LFM2.5-Audio's backbone, the audio detokenizer) and LFM2.5-Audio's own sections.
 *
 * An Lfm2Config is read by transformers' rules (transformers/models/lfm2/configuration_lfm2.py and
 * modeling_lfm2.py, 5.x), in both the released checkpoints' style and the one transformers 5
 * writes: the feed-forward width is block_ff_dim (released) or intermediate_size, then Lfm2MLP's
 * auto-adjust; tie_embedding (released) wins over tie_word_embeddings; rope_theta comes from
 * rope_parameters (or the legacy rope_scaling), else the top-level key, else Lfm2Config's
 * default; layer_types wins over full_attn_idxs; an absent key has Lfm2Config's default, but for
 * the shapes (vocab_size, hidden_size, num_hidden_layers, num_attention_heads,
 * num_key_value_heads, the feed-forward width), which must be there. A JSON null is an absent key
 * (transformers writes "full_attn_idxs": null). A value the runtime cannot run is refused naming
 * the key: conv_bias true, conv_L_cache other than 3, a head size other than 64, a RoPE type
 * other than "default", more layers than FK_MAX_LAYERS. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "ckpt.h"

enum { HD = 64, LIMIT = 65536, MAX_VOCAB = 1 << 20, DETOK_WINDOW = 30 };

/* ---- typed keys --------------------------------------------------------------------------------- */

typedef struct cfg {
  const json_t *o;
  const char *fname, *key; /* messages: "<fname>: <key><name>" */
} cfg;

static const json_t *get(const cfg *c, const char *name) {
  const json_t *v = json_object_get(c->o, name);
  return json_is_null(v) ? NULL : v;
}

/* an integer in [lo, hi]; absent: dflt, or a refusal when required */
static fk_status get_int(const cfg *c, const char *name, int required, int64_t dflt, int64_t lo, int64_t hi,
                         int64_t *out, fk_error *err) {
  const json_t *v = get(c, name);
  if (!v) {
    if (required) CK_BAD("%s: no %s%s", c->fname, c->key, name);
    *out = dflt;
    return FK_OK;
  }
  if (!json_is_integer(v)) CK_BAD("%s: %s%s is not an integer", c->fname, c->key, name);
  json_int_t x = json_integer_value(v);
  if (x < lo || x > hi)
    CK_BAD("%s: %s%s = %lld: must be in %lld..%lld", c->fname, c->key, name, (long long)x, (long long)lo, (long long)hi);
  *out = x;
  return FK_OK;
}

static fk_status get_num(const cfg *c, const char *name, int required, double dflt, double *out, fk_error *err) {
  const json_t *v = get(c, name);
  if (!v) {
    if (required) CK_BAD("%s: no %s%s", c->fname, c->key, name);
    *out = dflt;
    return FK_OK;
  }
  if (!json_is_number(v)) CK_BAD("%s: %s%s is not a number", c->fname, c->key, name);
  *out = json_number_value(v);
  return FK_OK;
}

static fk_status get_bool(const cfg *c, const char *name, int required, int dflt, int *out, fk_error *err) {
  const json_t *v = get(c, name);
  if (!v) {
    if (required) CK_BAD("%s: no %s%s", c->fname, c->key, name);
    *out = dflt;
    return FK_OK;
  }
  if (!json_is_boolean(v)) CK_BAD("%s: %s%s is not true or false", c->fname, c->key, name);
  *out = json_is_true(v);
  return FK_OK;
}

/* a string, or NULL when absent */
static fk_status get_str(const cfg *c, const char *name, const char **out, fk_error *err) {
  const json_t *v = get(c, name);
  *out = NULL;
  if (!v) return FK_OK;
  if (!json_is_string(v)) CK_BAD("%s: %s%s is not a string", c->fname, c->key, name);
  *out = json_string_value(v);
  return FK_OK;
}

/* ---- the kind ----------------------------------------------------------------------------------- */

static const char *const kind_names[] = { "auto", "an LM (Lfm2ForCausalLM)", "LFM2.5-Audio (LFM2AudioModel)",
                                          "an audio detokenizer (LFM2AudioDetokenizer)" };

fk_status fk_ckpt_config_kind(const json_t *j, const char *fname, fk_model_kind want, fk_model_kind *kind,
                              const char **arch, fk_error *err) {
  if (!json_is_object(j)) CK_BAD("%s: not a JSON object", fname);
  const cfg c = { j, fname, "" };
  const json_t *a = get(&c, "architectures");
  const char *first = NULL, *model_type;
  if (a) {
    if (!json_is_array(a) || json_array_size(a) < 1 || !json_is_string(json_array_get(a, 0)))
      CK_BAD("%s: architectures is not a list of names", fname);
    first = json_string_value(json_array_get(a, 0));
  }
  CK_TRY(get_str(&c, "model_type", &model_type, err));
  /* the detokenizer's config.json is an Lfm2Config for an Lfm2Model (liquid_audio/processor.py)
   * whose architectures say what wrote it; its sliding window (a key, or llama.cpp's
   * sliding_attention layers) marks it: transformers' LM config has neither */
  const int lfm2 = first ? !strcmp(first, "Lfm2ForCausalLM") || !strcmp(first, "Lfm2Model") ||
                               !strcmp(first, "LFM2AudioDetokenizer")
                         : model_type && !strcmp(model_type, "lfm2");
  int windowed = get(&c, "sliding_window") != NULL;
  const json_t *lt = get(&c, "layer_types");
  for (size_t i = 0; json_is_array(lt) && i < json_array_size(lt); i++) {
    const char *s = json_string_value(json_array_get(lt, i));
    windowed |= s && !strcmp(s, "sliding_attention");
  }
  fk_model_kind k;
  if (json_is_object(get(&c, "lfm"))) {
    /* liquid-audio's LFM2AudioConfig: its backbone under "lfm". The released LFM2.5-Audio's
     * config names its class Lfm2AudioForConditionalGeneration (as llama.cpp's converter of it
     * requires); liquid-audio's own module is LFM2AudioModel: either is this layout */
    if (first && strcmp(first, "LFM2AudioModel") && strcmp(first, "Lfm2AudioForConditionalGeneration"))
      CK_BAD("%s: architectures[0] = '%s' beside an lfm section: not Lfm2AudioForConditionalGeneration or "
             "LFM2AudioModel", fname, first);
    k = FK_MODEL_LFM2_AUDIO;
  } else if (!lfm2) {
    CK_BAD("%s: architectures[0] = %s%s%s, model_type %s%s%s: not Lfm2ForCausalLM, LFM2AudioModel or an lfm2 "
        "Lfm2Model (the audio detokenizer)", fname, first ? "'" : "", first ? first : "absent", first ? "'" : "",
        model_type ? "'" : "", model_type ? model_type : "absent", model_type ? "'" : "");
  } else if (want == FK_MODEL_DETOK || (want == FK_MODEL_AUTO && (windowed || !first || strcmp(first, "Lfm2ForCausalLM")))) {
    k = FK_MODEL_DETOK;
  } else {
    if (!first || strcmp(first, "Lfm2ForCausalLM"))
      CK_BAD("%s: architectures[0] = %s%s%s: an LM's is Lfm2ForCausalLM", fname, first ? "'" : "", first ? first : "absent",
          first ? "'" : "");
    k = FK_MODEL_LFM2_LM;
  }
  if (want != FK_MODEL_AUTO && want != k)
    CK_BAD("%s: architectures %s: the directory holds %s, not %s (the kind asked)", fname, first ? first : "(none)",
        kind_names[k], kind_names[want]);
  *kind = k;
  *arch = k == FK_MODEL_LFM2_AUDIO ? "LFM2AudioModel" : k == FK_MODEL_DETOK ? "LFM2AudioDetokenizer" : "Lfm2ForCausalLM";
  return FK_OK;
}

/* ---- an Lfm2Config ---------------------------------------------------------------------------- */

/* RoPE: rope_parameters (transformers 5), or the legacy rope_scaling when set, then the top-level
 * rope_theta, then Lfm2Config.default_theta; only the "default" type (plain RoPE) runs here */
static fk_status rope(const cfg *c, float *theta, fk_error *err) {
  const json_t *rp = get(c, "rope_scaling");
  const char *which = "rope_scaling";
  if (!rp) {
    rp = get(c, "rope_parameters");
    which = "rope_parameters";
  }
  double t = 0;
  CK_TRY(get_num(c, "rope_theta", 0, 1e6, &t, err));
  if (rp) {
    if (!json_is_object(rp)) CK_BAD("%s: %s%s is not an object", c->fname, c->key, which);
    const char *k;
    const json_t *v;
    json_object_foreach((json_t *)rp, k, v) {
      if (!strcmp(k, "rope_theta")) {
        if (!json_is_number(v)) CK_BAD("%s: %s%s.rope_theta is not a number", c->fname, c->key, which);
        t = json_number_value(v);
      } else if (!strcmp(k, "rope_type") || !strcmp(k, "type")) {
        if (!json_is_string(v) || strcmp(json_string_value(v), "default"))
          CK_BAD("%s: %s%s.%s = %s%s%s: only plain RoPE (\"default\") runs here", c->fname, c->key, which, k,
              json_is_string(v) ? "'" : "", json_is_string(v) ? json_string_value(v) : "(not a string)",
              json_is_string(v) ? "'" : "");
      } else {
        CK_BAD("%s: %s%s.%s: not a parameter of plain RoPE (rope_theta, rope_type)", c->fname, c->key, which, k);
      }
    }
  }
  if (!(t > 1.0) || !(t < 1e30)) CK_BAD("%s: %srope_theta = %g: must be in (1, 1e30)", c->fname, c->key, t);
  *theta = (float)t;
  return FK_OK;
}

/* Lfm2MLP's width: int(2 * ff / 3), then int(multiplier * ff) rounded up to multiple_of (only when
 * the multiplier is not None), all when block_auto_adjust_ff_dim */
static fk_status ffn_width(const cfg *c, ck_lfm2 *o, fk_error *err) {
  const char *ffkey = get(c, "block_ff_dim") ? "block_ff_dim" : "intermediate_size";
  if (!get(c, ffkey)) CK_BAD("%s: no %sblock_ff_dim nor %sintermediate_size", c->fname, c->key, c->key);
  CK_TRY(get_int(c, ffkey, 1, 0, 1, (int64_t)1 << 32, &o->ff_declared, err));
  int adjust = 1;
  CK_TRY(get_bool(c, "block_auto_adjust_ff_dim", 0, 1, &adjust, err));
  int64_t ff = o->ff_declared;
  if (adjust) {
    ff = (int64_t)((double)(2 * ff) / 3.0);
    if (!json_is_null(json_object_get(c->o, "block_ffn_dim_multiplier"))) { /* absent: 1.0; null: None */
      double mult = 1.0;
      int64_t mo = 256;
      CK_TRY(get_num(c, "block_ffn_dim_multiplier", 0, 1.0, &mult, err));
      CK_TRY(get_int(c, "block_multiple_of", 0, 256, 1, LIMIT, &mo, err));
      if (!(mult > 0.0) || !(mult < 1e6)) CK_BAD("%s: %sblock_ffn_dim_multiplier = %g: must be in (0, 1e6)", c->fname, c->key, mult);
      ff = (int64_t)(mult * (double)ff);
      ff = mo * ((ff + mo - 1) / mo);
    }
  }
  if (ff < 1 || ff > LIMIT)
    CK_BAD("%s: %s%s = %lld gives a feed-forward width of %lld: must be in 1..%d", c->fname, c->key, ffkey,
        (long long)o->ff_declared, (long long)ff, LIMIT);
  o->ffn = ff;
  return FK_OK;
}

/* layer_types, else full_attn_idxs, else every layer attention (Lfm2Config.__post_init__) */
static fk_status layer_kinds(const cfg *c, int detok, ck_lfm2 *o, fk_error *err) {
  const json_t *lt = get(c, "layer_types"), *fa = get(c, "full_attn_idxs");
  if (lt) {
    if (!json_is_array(lt) || (int64_t)json_array_size(lt) != o->layers)
      CK_BAD("%s: %slayer_types is not a list of num_hidden_layers = %lld names", c->fname, c->key, (long long)o->layers);
    for (int64_t i = 0; i < o->layers; i++) {
      const char *s = json_string_value(json_array_get(lt, (size_t)i));
      if (s && !strcmp(s, "conv")) o->attn[i] = 0;
      else if (s && (!strcmp(s, "full_attention") || (detok && !strcmp(s, "sliding_attention")))) o->attn[i] = 1;
      else
        CK_BAD("%s: %slayer_types[%lld] = %s%s%s: not %s", c->fname, c->key, (long long)i, s ? "'" : "",
            s ? s : "(not a string)", s ? "'" : "",
            detok ? "conv, full_attention or sliding_attention" : "conv or full_attention");
    }
  } else if (fa) {
    if (!json_is_array(fa)) CK_BAD("%s: %sfull_attn_idxs is not a list", c->fname, c->key);
    for (size_t i = 0; i < json_array_size(fa); i++) {
      const json_t *v = json_array_get(fa, i);
      if (!json_is_integer(v) || json_integer_value(v) < 0 || json_integer_value(v) >= o->layers)
        CK_BAD("%s: %sfull_attn_idxs[%zu] is not a layer index below num_hidden_layers = %lld", c->fname, c->key, i,
            (long long)o->layers);
      o->attn[json_integer_value(v)] = 1;
    }
  } else {
    for (int64_t i = 0; i < o->layers; i++) o->attn[i] = 1;
  }
  for (int64_t i = 0; i < o->layers; i++) o->attn_layers += o->attn[i];
  return FK_OK;
}

fk_status fk_ckpt_config_lfm2(const json_t *j, const char *fname, const char *key, int detok, ck_lfm2 *o,
                              fk_error *err) {
  memset(o, 0, sizeof *o);
  if (!json_is_object(j)) CK_BAD("%s: %s is not an object", fname, *key ? key : "the configuration");
  const cfg c = { j, fname, key };
  const char *mt;
  CK_TRY(get_str(&c, "model_type", &mt, err));
  if (mt && strcmp(mt, "lfm2")) CK_BAD("%s: %smodel_type = '%s': not lfm2", fname, key, mt);
  CK_TRY(get_int(&c, "vocab_size", 1, 0, 1, MAX_VOCAB, &o->vocab, err));
  CK_TRY(get_int(&c, "hidden_size", 1, 0, 1, LIMIT, &o->hidden, err));
  CK_TRY(get_int(&c, "num_hidden_layers", 1, 0, 1, FK_MAX_LAYERS, &o->layers, err));
  CK_TRY(get_int(&c, "num_attention_heads", 1, 0, 1, LIMIT, &o->heads, err));
  CK_TRY(get_int(&c, "num_key_value_heads", 1, 0, 1, LIMIT, &o->kv_heads, err));
  CK_TRY(get_int(&c, "max_position_embeddings", 0, 128000, 1, INT32_MAX, &o->max_pos, err));
  CK_TRY(ffn_width(&c, o, err));
  /* the attention's head size: head_dim when given, else hidden_size / num_attention_heads */
  if (get(&c, "head_dim")) {
    CK_TRY(get_int(&c, "head_dim", 1, 0, 1, LIMIT, &o->head_dim, err));
    if (o->head_dim != HD) CK_BAD("%s: %shead_dim = %lld: the runtime's attention serves 64", fname, key, (long long)o->head_dim);
    if (o->heads * HD > LIMIT) CK_BAD("%s: %snum_attention_heads = %lld: at most %d heads of 64", fname, key, (long long)o->heads, LIMIT / HD);
  } else {
    if (o->hidden % o->heads || o->hidden / o->heads != HD)
      CK_BAD("%s: %snum_attention_heads = %lld with hidden_size = %lld: head_dim %g, the runtime's attention serves 64",
          fname, key, (long long)o->heads, (long long)o->hidden, (double)o->hidden / (double)o->heads);
    o->head_dim = HD;
  }
  if (o->kv_heads > o->heads || o->heads % o->kv_heads)
    CK_BAD("%s: %snum_key_value_heads = %lld does not divide num_attention_heads = %lld", fname, key,
        (long long)o->kv_heads, (long long)o->heads);
  double eps = 0;
  CK_TRY(get_num(&c, "norm_eps", 0, 1e-5, &eps, err));
  if (!(eps > 0.0) || !(eps < 1.0)) CK_BAD("%s: %snorm_eps = %g: must be in (0, 1)", fname, key, eps);
  o->norm_eps = (float)eps; /* the runtime's eps is a float: one that rounds to 0 is no eps (found by fuzz_ckpt) */
  if (!(o->norm_eps > 0.0f))
    CK_BAD("%s: %snorm_eps = %g: rounds to 0 as a float (the runtime's type); must be in (0, 1)", fname, key, eps);
  CK_TRY(rope(&c, &o->rope_theta, err));
  int b = 0;
  CK_TRY(get_bool(&c, "conv_bias", 0, 0, &b, err));
  if (b) CK_BAD("%s: %sconv_bias = true: the runtime's ShortConv has no biases (LFM2: false)", fname, key);
  int64_t taps = 0;
  CK_TRY(get_int(&c, "conv_L_cache", 0, 3, INT64_MIN, INT64_MAX, &taps, err));
  if (taps != 3) CK_BAD("%s: %sconv_L_cache = %lld: the runtime's ShortConv has 3 taps", fname, key, (long long)taps);
  /* tie_embedding (the released checkpoints) wins over tie_word_embeddings (Lfm2Config.__post_init__) */
  CK_TRY(get_bool(&c, get(&c, "tie_embedding") ? "tie_embedding" : "tie_word_embeddings", 0, 1, &o->tied, err));
  CK_TRY(layer_kinds(&c, detok, o, err));
  if (detok) {
    /* liquid_audio/detokenizer.py: getattr(backbone_config, "sliding_window", 30) */
    CK_TRY(get_int(&c, "sliding_window", 0, DETOK_WINDOW, 1, LIMIT, &o->window, err));
  }
  return FK_OK;
}

/* ---- LFM2.5-Audio ------------------------------------------------------------------------------ */

/* liquid_audio/model/lfm2_audio.py: LFM2AudioConfig(**config) takes these keys and no other */
static const char *const audio_keys[] = { "architectures", "codebooks", "tie_audio_embeddings",
                                          "semantic_codebook_factor", "codebook_weight", "text_loss_multiplier",
                                          "audio_loss_multiplier", "interleaved_n_text", "interleaved_n_audio",
                                          "preprocessor", "encoder", "lfm", "depthformer" };

fk_status fk_ckpt_config_audio(const json_t *j, const char *fname, ck_audio *o, ck_lfm2 *lm, fk_error *err) {
  memset(o, 0, sizeof *o);
  const cfg c = { j, fname, "" };
  const char *k;
  const json_t *v;
  json_object_foreach((json_t *)j, k, v) {
    size_t i = 0;
    while (i < sizeof audio_keys / sizeof audio_keys[0] && strcmp(k, audio_keys[i])) i++;
    if (i == sizeof audio_keys / sizeof audio_keys[0]) CK_BAD("%s: key '%s': not a field of liquid-audio's LFM2AudioConfig", fname, k);
  }
  static const char *const objects[] = { "preprocessor", "encoder", "lfm", "depthformer" };
  for (size_t i = 0; i < 4; i++)
    if (!json_is_object(get(&c, objects[i]))) CK_BAD("%s: %s is %s", fname, objects[i], get(&c, objects[i]) ? "not an object" : "absent");
  if (!get(&c, "architectures")) CK_BAD("%s: no architectures", fname);
  double x = 0;
  const char *w = NULL;
  CK_TRY(get_int(&c, "codebooks", 1, 0, 1, 64, &o->codebooks, err));
  CK_TRY(get_bool(&c, "tie_audio_embeddings", 1, 0, &o->tie_audio, err));
  CK_TRY(get_num(&c, "semantic_codebook_factor", 1, 0, &x, err));
  CK_TRY(get_num(&c, "text_loss_multiplier", 0, 1, &x, err));
  CK_TRY(get_num(&c, "audio_loss_multiplier", 0, 1, &x, err));
  CK_TRY(get_int(&c, "interleaved_n_text", 1, 0, 0, INT32_MAX, &o->n_text, err));
  CK_TRY(get_int(&c, "interleaved_n_audio", 1, 0, 0, INT32_MAX, &o->n_audio, err));
  CK_TRY(get_str(&c, "codebook_weight", &w, err));
  if (!w || (strcmp(w, "log") && strcmp(w, "linear"))) CK_BAD("%s: codebook_weight is not \"log\" or \"linear\"", fname);
  /* depthformer: DepthformerConfig {layers, dim, tie}; its blocks are StandardBlock(MHA(dim)): 32
   * heads (head_dim = dim / 32), gqa with 8 kv heads, GLU(dim, 4 * dim) with multiple_of 256 */
  const cfg d = { get(&c, "depthformer"), fname, "depthformer." };
  json_object_foreach((json_t *)d.o, k, v) {
    if (strcmp(k, "layers") && strcmp(k, "dim") && strcmp(k, "tie")) CK_BAD("%s: depthformer.%s: not layers, dim or tie", fname, k);
  }
  CK_TRY(get_int(&d, "layers", 1, 0, 1, 1024, &o->depth_layers, err));
  CK_TRY(get_int(&d, "dim", 1, 0, 32, LIMIT, &o->depth_dim, err));
  CK_TRY(get_bool(&d, "tie", 1, 0, &o->depth_tie, err));
  if (o->depth_dim % 32) CK_BAD("%s: depthformer.dim = %lld: the Depthformer's 32 heads must divide it", fname, (long long)o->depth_dim);
  o->depth_head_dim = o->depth_dim / 32;
  o->depth_qkv = o->depth_dim + 2 * o->depth_head_dim * 8;
  int64_t ff = (int64_t)((double)(2 * 4 * o->depth_dim) / 3.0);
  o->depth_ff = 256 * ((ff + 255) / 256);
  return fk_ckpt_config_lfm2(get(&c, "lfm"), fname, "lfm.", 0, lm, err);
}
