/* tests/model/test_synth.c: the synthetic weights of the whole-model traces (tests/model/synth.h).
 *   digests:   every weight tensor of the models ("lm", "detok", "audio", "audio_peaked"), synthesised here, has the XXH3-64
 *              (and name) that every trace manifest recorded (fixtures/lfm2/, fixtures/detok/, fixtures/audio/
 *              with its detokenizer's dt_ digests, each manifest loaded and digest-checked by the fixture reader);
 *   perturbed: one ulp more in one weight (a bf16 element of a linear, of a norm, the f32 lin.bias, the bf16
 *              depth_linear.bias, a Depthformer k_layernorm, the end code's row of a depth embedding)
 *              is caught, naming the tensor;
 *   formula:   fixed values of the hash, v's range and exactness, the integer RNE;
 *   trace:     the compare helper on the traces' own references: the float64 run against itself is
 *              0, torch's bf16 run is its stored e_ref (within its bound), a row scaled past the
 *              bound fails. */
#include <criterion/criterion.h>

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "flashkern.h"
#include "synth.h"
#include "trace.h"

#ifndef FKT_FIXTURE_DIR
#define FKT_FIXTURE_DIR "fixtures"
#endif

/* the manifests of a trace directory ("%s/lfm2", "%s/detok": the fixture gate's pattern) */
static int list_dir(const char *fmt, char ***paths) {
  char dir[1024], err[512];
  snprintf(dir, sizeof dir, fmt, FKT_FIXTURE_DIR);
  int n = fkfix_list(dir, paths, err, sizeof err);
  cr_assert(n > 0, "no trace manifests in %s: %s", dir, n < 0 ? err : "empty");
  return n;
}

static int check_dir(const char *fmt, const char *tag, int *checked, int *quantized) {
  char **paths;
  int n = list_dir(fmt, &paths);
  fkm_weights w;
  char err[1024];
  cr_assert(fkm_synth_model(tag, &w, err, sizeof err) == 0, "%s", err);
  for (int i = 0; i < n; i++) {
    fkm_trace t;
    cr_assert(fkm_trace_load(paths[i], &t, err, sizeof err) == 0, "%s", err);
    cr_assert_str_eq(t.tag, tag);
    int bad = fkm_trace_check_weights(&t, &w, err, sizeof err);
    cr_assert(bad == 0, "%s (%d tensors differ)", err, bad);
    *checked += w.n;
    int64_t q;
    if (fkfix_scalar_i64(&t.fx, "quant", &q) == 0) { /* a quantized trace: its GGUF blocks too */
      fk_qformat f;
      bad = fkm_trace_check_qweights(&t, &w, &f, err, sizeof err);
      cr_assert(bad == 0, "%s (%d quantized tensors differ)", err, bad);
      (*quantized)++;
    }
    fkm_trace_free(&t);
  }
  fkm_weights_free(&w);
  fkfix_list_free(paths, n);
  return n;
}

Test(model_synth, digests_lm) {
  int checked = 0, quantized = 0;
  int n = check_dir("%s/lfm2", "lm", &checked, &quantized);
  cr_assert_eq(n, 27, "lm traces: %d calls, expected prefill + 8 decodes of bf16, q8 and q4 weights", n);
  cr_assert_eq(quantized, 18);
  cr_log_info("lm: %d manifests, %d tensor digests equal, %d quantized traces' blocks equal\n", n, checked, quantized);
}

Test(model_synth, digests_detok, .timeout = 120) {
  int checked = 0, quantized = 0;
  int n = check_dir("%s/detok", "detok", &checked, &quantized);
  cr_assert_eq(n, 3, "detok traces: bf16, q8 and q4 weights");
  cr_assert_eq(quantized, 2);
}

/* fixtures/audio (whole LFM2.5-Audio turns, gen_audio.py): the audio model's weights and the detokenizer's
 * (dt_weight_names / dt_weight_digests, tag detok) in each of the 5 cases, and the turns' shapes. seq_peaked's
 * weights are tag "audio_peaked" (trace.c names every trace of leaf audio "audio": the test sets the tag), and
 * they are not tag "audio"'s: exactly its 13 peaked tensors differ (8 depth embeddings, depth_linear.weight, the
 * Depthformer's out_proj and w2). */
Test(model_synth, digests_audio, .timeout = 300) {
  char **paths;
  int n = list_dir("%s/audio", &paths);
  cr_assert_eq(n, 5, "audio traces: %d cases, expected seq_greedy, seq_sampled, inter_greedy, inter_sampled, seq_peaked", n);
  fkm_weights w, wp, det;
  char err[1024];
  cr_assert(fkm_synth_model("audio", &w, err, sizeof err) == 0, "%s", err);
  cr_assert(fkm_synth_model("audio_peaked", &wp, err, sizeof err) == 0, "%s", err);
  cr_assert(fkm_synth_model("detok", &det, err, sizeof err) == 0, "%s", err);
  int checked = 0, peaked = 0;
  for (int i = 0; i < n; i++) {
    fkm_trace t;
    cr_assert(fkm_trace_load(paths[i], &t, err, sizeof err) == 0, "%s", err);
    cr_assert_str_eq(t.tag, "audio");
    int pk = !strcmp(t.fx.casename, "seq_peaked");
    if (pk) {
      int bad = fkm_trace_check_weights(&t, &w, err, sizeof err);
      cr_assert_eq(bad, 13, "seq_peaked against tag audio's weights: %d tensors differ, expected 13 (%s)", bad, err);
      t.tag = "audio_peaked";
      peaked++;
    }
    int bad = fkm_trace_check_weights(&t, pk ? &wp : &w, err, sizeof err);
    cr_assert(bad == 0, "%s (%d tensors differ)", err, bad);
    checked += w.n;
    bad = fkm_trace_check_weights_of(&t, "dt_", &det, err, sizeof err);
    cr_assert(bad == 0, "%s (%d detokenizer tensors differ)", err, bad);
    int64_t frames = -1, steps = -1;
    for (int k = 0; k < t.fx.nscalars; k++) {
      if (!strcmp(t.fx.scalars[k].name, "frames")) frames = t.fx.scalars[k].i64;
      if (!strcmp(t.fx.scalars[k].name, "steps")) steps = t.fx.scalars[k].i64;
    }
    const fkfix_tensor *dl = fkm_trace_ref(&t, "dlogits", 1), *bh = fkm_trace_ref(&t, "bh", 1);
    cr_assert(dl && bh && frames > 0 && steps > 0, "%s: no dlogits / bh / frames / steps", paths[i]);
    cr_assert(dl->ndim == 2 && dl->shape[0] == frames * 8 && dl->shape[1] == 2049, "%s: dlogits shape", paths[i]);
    cr_assert(bh->ndim == 2 && bh->shape[0] == steps && bh->shape[1] == 256, "%s: bh shape", paths[i]);
    if (pk) { /* its purpose: most greedy codes of codebooks 1..7 required */
      const fkfix_tensor *rq = fkfix_tensor_get(&t.fx, "code_required");
      cr_assert(rq && rq->dtype == FKFIX_I64 && rq->ndim == 2 && rq->shape[0] == frames && rq->shape[1] == 8);
      int64_t req = 0;
      for (int64_t f = 0; f < frames; f++)
        for (int c = 1; c < 8; c++) req += ((const int64_t *)rq->data)[f * 8 + c];
      cr_assert(req * 10 >= frames * 7 * 7, "seq_peaked: %lld of %lld codes required", (long long)req,
                (long long)(frames * 7));
      cr_log_info("seq_peaked: %lld of %lld codes of codebooks 1..7 required\n", (long long)req, (long long)(frames * 7));
    }
    fkm_trace_free(&t);
  }
  cr_assert_eq(peaked, 1);
  fkm_weights_free(&w);
  fkm_weights_free(&wp);
  fkm_weights_free(&det);
  fkfix_list_free(paths, n);
  cr_log_info("audio: 5 manifests, %d tensor digests equal\n", checked);
}

/* tag audio_peaked's rules as a descriptor meets them: fkm_kind_of + fkm_synth_tensor on liquid-audio's own
 * per-codebook names give the shared table (key "audio:depth_embeddings.shared.embedding.weight"); the scaled
 * tensors are tag audio's bits times 1/8; every other tensor is tag audio's */
Test(model_synth, audio_peaked_rules, .timeout = 120) {
  fkm_tensor *t;
  int n;
  cr_assert(fkm_model_tensors("audio_peaked", &t, &n) == 0);
  cr_assert_eq(n, 78);
  const fkm_config *c = fkm_config_get("audio_peaked");
  cr_assert(c && !strcmp(c->tag, "audio_peaked") && c->depth_dim == 1024 && c->audio_vocab == 2049);
  const int64_t cnt = 2049 * 1024;
  uint16_t *shared = malloc((size_t)cnt * 2), *x = malloc((size_t)cnt * 2), *y = malloc((size_t)8192 * 256 * 2);
  cr_assert(shared && x && y);
  uint64_t key = fkm_synth_key("audio", "depth_embeddings.shared.embedding.weight");
  for (int64_t i = 0; i < cnt; i++) shared[i] = fk_bf16_from_f32(fkm_synth_v(key, (uint64_t)i));
  for (int cb = 0; cb < 8; cb++) {
    char nm[64];
    snprintf(nm, sizeof nm, "depth_embeddings.%d.embedding.weight", cb);
    int k = fkm_kind_of("audio_peaked", nm, 2);
    cr_assert_eq(k, FKM_EMBED);
    cr_assert_eq(fkm_synth_tensor("audio_peaked", nm, (fkm_kind)k, cnt, 0, x), 0);
    cr_assert(!memcmp(x, shared, (size_t)cnt * 2), "%s is not the shared table", nm);
    cr_assert_eq(fkm_synth_tensor("audio", nm, (fkm_kind)k, cnt, 0, x), 0);
    cr_assert(memcmp(x, shared, (size_t)cnt * 2), "tag audio's %s is the shared table", nm);
  }
  static const char *const scaled[] = {"depth_linear.weight", "depthformer.layers.0.operator.out_proj.weight",
                                       "depthformer.layers.1.feed_forward.w2.weight"};
  static const int64_t rows[] = {8192, 1024, 1024}, ins[] = {256, 1024, 2816};
  for (int s = 0; s < 3; s++) {
    int64_t m = rows[s] * ins[s] < 8192 * 256 ? rows[s] * ins[s] : 8192 * 256;   /* a prefix of the tensor */
    cr_assert_eq(fkm_kind_of("audio_peaked", scaled[s], 2), FKM_LINEAR);
    cr_assert_eq(fkm_synth_tensor("audio_peaked", scaled[s], FKM_LINEAR, m, ins[s], x), 0);
    cr_assert_eq(fkm_synth_tensor("audio", scaled[s], FKM_LINEAR, m, ins[s], y), 0);
    for (int64_t i = 0; i < m; i++) {
      float a = fk_f32_from_bf16(y[i]) * 0.125f, b = fk_f32_from_bf16(x[i]);
      cr_assert(a == b, "%s[%lld]: %a, tag audio's / 8 %a", scaled[s], (long long)i, b, a);
    }
  }
  /* unchanged: a Depthformer w1, the lfm's embedding, depth_linear.bias, a norm */
  cr_assert_eq(fkm_synth_tensor("audio_peaked", "depthformer.layers.0.feed_forward.w1.weight", FKM_LINEAR, 4096, 1024, x), 0);
  cr_assert_eq(fkm_synth_tensor("audio", "depthformer.layers.0.feed_forward.w1.weight", FKM_LINEAR, 4096, 1024, y), 0);
  cr_assert(!memcmp(x, y, 4096 * 2));
  cr_assert_eq(fkm_synth_tensor("audio_peaked", "depth_linear.bias", FKM_BIAS16, 8192, 256, x), 0);
  cr_assert_eq(fkm_synth_tensor("audio", "depth_linear.bias", FKM_BIAS16, 8192, 256, y), 0);
  cr_assert(!memcmp(x, y, 8192 * 2));
  cr_assert_eq(fkm_synth_tensor("audio_peaked", "depth_embeddings.2.embedding_norm.weight", FKM_NORM, 1024, 0, x), 0);
  cr_assert_eq(fkm_synth_tensor("audio", "depth_embeddings.2.embedding_norm.weight", FKM_NORM, 1024, 0, y), 0);
  cr_assert(!memcmp(x, y, 1024 * 2));
  free(shared);
  free(x);
  free(y);
  free(t);
}

/* one ulp more in element k of tensor name (bf16 bits + 1, or the f32 bits + 1) must be caught */
static void perturb_one(const char *fmt, const char *tag, const char *name, int64_t k) {
  char **paths;
  int n = list_dir(fmt, &paths);
  fkm_weights w;
  char err[1024];
  cr_assert(fkm_synth_model(tag, &w, err, sizeof err) == 0, "%s", err);
  fkm_trace t;
  cr_assert(fkm_trace_load(paths[0], &t, err, sizeof err) == 0, "%s", err);
  cr_assert(fkm_trace_check_weights(&t, &w, err, sizeof err) == 0, "%s", err);
  const fkm_tensor *d;
  void *p = (void *)fkm_weight(&w, name, &d);
  cr_assert(p, "no tensor %s in %s", name, tag);
  cr_assert(k < d->count);
  if (d->kind == FKM_BIAS)
    ((uint32_t *)p)[k] += 1;
  else
    ((uint16_t *)p)[k] = (uint16_t)(((uint16_t *)p)[k] + 1);
  int bad = fkm_trace_check_weights(&t, &w, err, sizeof err);
  cr_assert_eq(bad, 1, "a one-ulp change of %s[%lld] gave %d mismatches", name, (long long)k, bad);
  cr_assert(strstr(err, name), "the message does not name %s: %s", name, err);
  cr_log_info("caught: %s\n", err);
  fkm_trace_free(&t);
  fkm_weights_free(&w);
  fkfix_list_free(paths, n);
}

Test(model_synth, perturbed_lm_linear) { perturb_one("%s/lfm2", "lm", "layers.2.self_attn.q_proj.weight", 12345); }
Test(model_synth, perturbed_lm_norm) { perturb_one("%s/lfm2", "lm", "layers.5.ffn_norm.weight", 255); }
Test(model_synth, perturbed_detok_bias) { perturb_one("%s/detok", "detok", "lin.bias", 1281); }
Test(model_synth, perturbed_audio_bias16) { perturb_one("%s/audio", "audio", "depth_linear.bias", 8191); }
Test(model_synth, perturbed_audio_depth) {
  perturb_one("%s/audio", "audio", "depthformer.layers.1.operator.bounded_attention.k_layernorm.weight", 31);
}
Test(model_synth, perturbed_audio_embed) { perturb_one("%s/audio", "audio", "depth_embeddings.7.embedding.weight", 2048 * 1024); }
Test(model_synth, perturbed_detok_conv) { perturb_one("%s/detok", "detok", "lfm.layers.7.conv.conv.weight", 0); }

Test(model_synth, formula) {
  cr_assert_eq(fkm_fnv1a64("", 0), 0xCBF29CE484222325ull);
  cr_assert_eq(fkm_fnv1a64("a", 1), 0xAF63DC4C8601EC8Cull);
  cr_assert_eq(fkm_synth_key("lm", "embed_tokens.weight"), fkm_fnv1a64("lm:embed_tokens.weight", 22));
  uint64_t key = fkm_synth_key("detok", "lin.weight");
  for (uint64_t i = 0; i < 100000; i++) {
    float v = fkm_synth_v(key, i);
    cr_assert(v >= -1.0f && v < 1.0f);
    float s = v * 0x1p23f;                                 /* a multiple of 2^-23 */
    cr_assert(s == truncf(s));
  }
  /* the integer RNE the weights are rounded by (flashkern.h's fk_bf16_from_f32, as gen_trace.py):
   * ties to even, NaN quiet with payload, denormals kept */
  float f;
  uint32_t u = 0x3F808000u;   /* 1 + 2^-8: tie, to even (down) */
  memcpy(&f, &u, 4);
  cr_assert_eq(fk_bf16_from_f32(f), 0x3F80);
  u = 0x3F818000u;            /* tie, to even (up) */
  memcpy(&f, &u, 4);
  cr_assert_eq(fk_bf16_from_f32(f), 0x3F82);
  u = 0x7F800001u;
  memcpy(&f, &u, 4);
  cr_assert_eq(fk_bf16_from_f32(f), 0x7FC0);
  u = 0x00008000u;            /* subnormal tie to even: 0 */
  memcpy(&f, &u, 4);
  cr_assert_eq(fk_bf16_from_f32(f), 0x0000);
  u = 0x00018000u;
  memcpy(&f, &u, 4);
  cr_assert_eq(fk_bf16_from_f32(f), 0x0002);
  /* kinds and counts */
  fkm_tensor *t;
  int n;
  cr_assert(fkm_model_tensors("lm", &t, &n) == 0);
  cr_assert_eq(n, 57);
  for (int i = 1; i < n; i++) cr_assert(strcmp(t[i - 1].name, t[i].name) < 0);
  free(t);
  cr_assert(fkm_model_tensors("detok", &t, &n) == 0);
  cr_assert_eq(n, 77);
  free(t);
  cr_assert(fkm_model_tensors("audio", &t, &n) == 0);
  cr_assert_eq(n, 78);
  for (int i = 1; i < n; i++) cr_assert(strcmp(t[i - 1].name, t[i].name) < 0);
  for (int i = 0; i < n; i++) {
    const char *nm = t[i].name;
    if (!strcmp(nm, "depth_linear.bias")) cr_assert(t[i].kind == FKM_BIAS16 && t[i].fan_in == 256 && t[i].nbytes == 8192 * 2);
    if (strstr(nm, ".embedding.weight") || !strcmp(nm, "lfm.embed_tokens.weight")) cr_assert_eq(t[i].kind, FKM_EMBED, "%s", nm);
    if (strstr(nm, "feed_forward.w2.weight") && !strncmp(nm, "depthformer.", 12)) cr_assert_eq(t[i].fan_in, 2816, "%s", nm);
  }
  free(t);
  cr_assert(fkm_model_tensors("nope", &t, &n) == -1);
}

/* the compare helper on the references themselves */
Test(model_synth, trace_compare) {
  char **paths;
  int n = list_dir("%s/detok", &paths);
  fkm_trace t;
  char err[1024];
  cr_assert(fkm_trace_load(paths[0], &t, err, sizeof err) == 0, "%s", err);
  int nb = 0;
  for (int i = 0; i < t.fx.nboundaries; i++) {
    const char *b = t.fx.boundaries[i].field;
    const fkfix_tensor *r64 = fkm_trace_ref(&t, b, 1), *r16 = fkm_trace_ref(&t, b, 0);
    cr_assert(r64 && r16);
    fkm_cmp c;
    cr_assert_eq(fkm_trace_compare(&t, b, r64->dtype, r64->data, &c, NULL), 1);
    cr_assert_eq(c.max_rel, 0.0);
    cr_assert_eq(fkm_trace_compare(&t, b, r16->dtype, r16->data, &c, stdout), 1, "%s: torch's own run fails", b);
    cr_assert(c.max_rel <= c.eref && c.max_rel >= c.eref * (1 - 1e-3), "%s: %g vs stored e_ref %g", b, c.max_rel,
              c.eref);
    /* the reference with one row scaled by 1 + 1.5 bound: outside */
    int64_t cnt = c.rows * c.cols;
    double *x = malloc((size_t)cnt * sizeof *x);
    cr_assert(x);
    for (int64_t k = 0; k < cnt; k++)
      x[k] = r64->dtype == FKFIX_F64 ? ((const double *)r64->data)[k] : ((const float *)r64->data)[k];
    int64_t row = c.rows / 2;
    for (int64_t k = 0; k < c.cols; k++) x[row * c.cols + k] *= 1 + 1.5 * c.bound;
    cr_assert_eq(fkm_trace_compare(&t, b, FKFIX_F64, x, &c, NULL), 0, "%s: a row off by 1.5 bound passes", b);
    cr_assert_eq(c.worst_row, row);
    x[0] = NAN;
    cr_assert_eq(fkm_trace_compare(&t, b, FKFIX_F64, x, &c, NULL), 0);
    free(x);
    nb++;
  }
  cr_assert_eq(nb, 23);
  fkm_cmp c;
  cr_assert_eq(fkm_trace_compare(&t, "nope", FKFIX_F64, t.fx.tensors[0].data, &c, NULL), -1);
  fkm_trace_free(&t);
  fkfix_list_free(paths, n);
}
