/* tests/ckpt/test_ckpt.c: the checkpoint loader (libflashkern_ckpt, fk_checkpoint.h) end to end.
 *
 * Each test writes checkpoint directories itself (tests/ckpt/ckpt_write.c, in C) from the
 * synthetic weights of the model traces (tests/model/synth.h) under their authors' names, opens
 * them with fk_model_open, describes a plan with fk_model_describe and runs the model scenario's
 * session (tests/model/session.c: prompt, greedy and sampled decode, every step's residual stream,
 * logits, PCM and the state) at team sizes 1 and 2; every line must equal the session of the plan
 * made from the direct descriptors (tests/model/model_desc.c): bit for bit. Variants: bf16 whole
 * and sharded, f32 (the bf16 values, exact), f16 where exact, the released and transformers 5
 * config styles, tied heads, the detokenizer alone, LFM2.5-Audio with its Depthformer, encoder
 * and audio_detokenizer/; what fk_model_query, fk_model_tensor and fk_model_describe report. The
 * refusals are tests/badinput's (docs/bad-input.md). */
#define _POSIX_C_SOURCE 200809L
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <sndfile.h>
#include <string.h>

#include "ckpt_write.h"
#include "fk_checkpoint.h"
#include "model_desc.h"
#include "session.h"
#include "cmd.h"

/* ---- helpers ------------------------------------------------------------------------------------ */

typedef struct fixture {
  char dir[64];
  fkt_models mm;      /* the direct descriptors' weights */
  fk_model *m;
} fixture;

static void setup(fixture *f) {
  memset(f, 0, sizeof *f);
  cr_assert_eq(fkt_models_make(&f->mm), 0);
  cr_assert_not_null(fkw_tmpdir(f->dir));
}

static void teardown(fixture *f) {
  fk_model_close(f->m);
  fkt_models_free(&f->mm);
  if (f->dir[0]) fkw_rmdir(f->dir);
}

static fk_model *open_dir(const char *dir, fk_model_kind kind) {
  fk_model *m = NULL;
  fk_error e;
  fk_status s = fk_model_open(dir, kind, &m, &e);
  cr_assert_eq(s, FK_OK, "fk_model_open(%s): %s: %s", dir, fk_strerror(s), e.message);
  cr_assert_not_null(m);
  return m;
}

/* the host's part of a descriptor, as the direct one (model_desc.c) sets it, then the model's */
static fk_plan_desc described(const fk_model *m, uint32_t programs, int threads) {
  fk_plan_desc d;
  memset(&d, 0, sizeof d);
  d.programs = programs;
  d.threads = threads;
  d.tier = FK_TIER_EXACT;
  d.lm.max_rows = 16;
  d.lm.stack.max_pos = 256;
  d.detok.max_frames = 4;
  d.detok.stack.max_pos = 1024;
  fk_error e;
  fk_status s = fk_model_describe(m, &d, &e);
  cr_assert_eq(s, FK_OK, "fk_model_describe: %s: %s", fk_strerror(s), e.message);
  return d;
}

static char *session(const fk_plan_desc *d, int lm) {
  char *buf = NULL;
  size_t n = 0;
  FILE *f = open_memstream(&buf, &n);
  cr_assert_not_null(f);
  int r = lm ? fkt_session_lm(d, f) : fkt_session_detok(d, f);
  fclose(f);
  cr_assert_eq(r, 0, "the session failed (stderr)");
  return buf;
}

/* The session of the checkpoint's plan at team sizes 1 and 2 equals the direct plan's (team of 1). */
static void same_sessions(const fk_model *m, const fk_plan_desc *direct, int lm) {
  char *want = session(direct, lm);
  for (int threads = 1; threads <= 2; threads++) {
    fk_plan_desc d = described(m, lm ? FK_PROGRAMS_LM : FK_PROGRAMS_DETOK, threads);
    char *got = session(&d, lm);
    cr_assert_str_eq(got, want, "%s session, team of %d: the checkpoint's plan differs from the direct one:\n%s\nwant:\n%s",
                     lm ? "LM" : "detokenizer", threads, got, want);
    free(got);
  }
  cr_log_info("%s session: bit-identical to the direct descriptors' at team sizes 1 and 2 (%zu bytes of digests)",
              lm ? "LM" : "detokenizer", strlen(want));
  free(want);
}

static fk_model_info query(const fk_model *m) {
  fk_model_info i;
  fk_error e;
  cr_assert_eq(fk_model_query(m, &i, &e), FK_OK, "%s", e.message);
  return i;
}

static void lm_shapes(const fk_model_info *i) {
  cr_expect_eq(i->vocab, 1024);
  cr_expect_eq(i->hidden, 256);
  cr_expect_eq(i->ffn, 768);
  cr_expect_eq(i->layers, 6);
  cr_expect_eq(i->attn_layers, 2);
  cr_expect_eq(i->heads, 4);
  cr_expect_eq(i->kv_heads, 2);
  cr_expect_eq(i->head_dim, 64);
  cr_expect_eq(i->max_pos, 128000);
  cr_expect_eq(i->rope_theta, 1e6f);
  cr_expect_eq(i->norm_eps, 1e-5f);
}

/* the direct LM descriptor of the traces, team of 1 (tied: no head) */
static fk_plan_desc direct_lm(fixture *f, int tied) {
  fk_plan_desc d = fkt_models_desc(&f->mm, FK_PROGRAMS_LM, 1);
  if (tied) d.lm.lm_head = NULL;
  return d;
}

/* the direct detokenizer descriptor; its head's bias as a checkpoint of dtype `bias` holds it */
static float g_bias[FK_TAIL_SPEC];
static fk_plan_desc direct_detok(fixture *f, const char *bias) {
  fk_plan_desc d = fkt_models_desc(&f->mm, FK_PROGRAMS_DETOK, 1);
  for (int i = 0; i < FK_TAIL_SPEC; i++)
    g_bias[i] = strcmp(bias, "BF16") ? d.tail.bias[i] : fk_f32_from_bf16(fk_bf16_from_f32(d.tail.bias[i]));
  d.tail.bias = g_bias;
  return d;
}

/* ---- the LM --------------------------------------------------------------------------------------- */

static void lm_variant(const fkw_opts *o, const char *want_dtype, int files) {
  fixture f;
  setup(&f);
  cr_assert_eq(fkw_lm_dir(f.dir, &f.mm.lm, o), 0);
  f.m = open_dir(f.dir, FK_MODEL_AUTO);
  fk_model_info i = query(f.m);
  cr_expect_eq(i.kind, FK_MODEL_LFM2_LM);
  cr_expect_str_eq(i.architecture, "Lfm2ForCausalLM");
  lm_shapes(&i);
  cr_expect_eq(i.tied, o->tied);
  cr_expect_eq(i.det_hidden, 0);
  cr_expect_eq(i.codebooks, 0);
  cr_expect_eq(i.files, files);
  cr_expect_eq(i.tensors, f.mm.lm.n - o->tied, "tensors used: %lld", (long long)i.tensors);
  cr_expect_eq(i.ignored, o->tied && o->store_head, "tensors ignored: %lld", (long long)i.ignored);
  cr_expect_str_eq(i.dtype, want_dtype);
  uint64_t elems = 0;
  for (int k = 0; k < f.mm.lm.n; k++) elems += (uint64_t)f.mm.lm.t[k].count * !(o->tied && !strcmp(f.mm.lm.t[k].name, "lm_head.weight"));
  if (!strcmp(want_dtype, "bf16"))
    cr_expect_eq(i.owned_bytes, o->misalign % 2 ? 2 * elems : 0,
                 "bf16 tensors are used where they are mapped, unless at odd addresses: owned %llu",
                 (unsigned long long)i.owned_bytes);
  if (!strcmp(want_dtype, "f32")) cr_expect_eq(i.owned_bytes, 2 * elems, "owned %llu", (unsigned long long)i.owned_bytes);
  cr_expect_gt(i.file_bytes, 2 * elems);
  fk_plan_desc direct = direct_lm(&f, o->tied);
  same_sessions(f.m, &direct, 1);
  teardown(&f);
}

Test(ckpt, lm_bf16_released_style) { lm_variant(&(fkw_opts){ .released = 1 }, "bf16", 1); }
Test(ckpt, lm_bf16_sharded_transformers5_style) { lm_variant(&(fkw_opts){ .shards = 3 }, "bf16", 3); }
Test(ckpt, lm_f32_exact) { lm_variant(&(fkw_opts){ .dtype = "F32" }, "f32", 1); }
/* f32 data 2 bytes off 4-byte alignment: converted element by element instead of by the bulk RNE
 * (fk_bf16_from_f32_n); bf16 data 1 byte off (odd addresses): copied, not used in place */
Test(ckpt, lm_f32_misaligned) { lm_variant(&(fkw_opts){ .dtype = "F32", .misalign = 2 }, "f32", 1); }
Test(ckpt, lm_bf16_odd_addresses) { lm_variant(&(fkw_opts){ .misalign = 1 }, "bf16", 1); }
Test(ckpt, lm_f16_where_exact) { lm_variant(&(fkw_opts){ .dtype = "F16", .released = 1, .shards = 2 }, "mixed", 2); }
Test(ckpt, lm_tied_without_head) { lm_variant(&(fkw_opts){ .tied = 1 }, "bf16", 1); }
Test(ckpt, lm_tied_head_stored_equal) { lm_variant(&(fkw_opts){ .tied = 1, .store_head = 1, .released = 1 }, "bf16", 1); }

/* f16 where exact (the norms, 1 +- v/4, are; most projections are not): every tensor is served as
 * the bf16 values written, the f16 ones converted exactly into the model's buffer */
Test(ckpt, f16_tensors_convert_exactly) {
  fixture f;
  setup(&f);
  cr_assert_eq(fkw_lm_dir(f.dir, &f.mm.lm, &(fkw_opts){ .dtype = "F16" }), 0);
  f.m = open_dir(f.dir, FK_MODEL_LFM2_LM);
  for (int k = 0; k < f.mm.lm.n; k++) {
    char name[160];
    const fkm_tensor *t = &f.mm.lm.t[k];
    snprintf(name, sizeof name, "%s%s", strcmp(t->name, "lm_head.weight") ? "model." : "", t->name);
    fk_tensor_view v;
    fk_error e;
    cr_assert_eq(fk_model_tensor(f.m, name, &v, &e), FK_OK, "%s", e.message);
    cr_assert_eq(v.dtype, FK_DTYPE_BF16);
    cr_assert(memcmp(v.data, f.mm.lm.data[k], t->nbytes) == 0, "%s: not the bf16 values written", name);
  }
  fk_model_info i = query(f.m);
  cr_expect_str_eq(i.dtype, "mixed");
  cr_expect_gt(i.owned_bytes, 0);
  cr_log_info("f16 where exact: %lld tensors served bf16, %llu bytes converted", (long long)i.tensors,
              (unsigned long long)i.owned_bytes);
  teardown(&f);
}

/* ---- the detokenizer ------------------------------------------------------------------------------ */

static void detok_variant(const fkw_opts *o, const char *want_dtype) {
  fixture f;
  setup(&f);
  cr_assert_eq(fkw_detok_dir(f.dir, &f.mm.detok, o), 0);
  f.m = open_dir(f.dir, FK_MODEL_AUTO);
  fk_model_info i = query(f.m);
  cr_expect_eq(i.kind, FK_MODEL_DETOK);
  cr_expect_str_eq(i.architecture, "LFM2AudioDetokenizer");
  cr_expect_eq(i.vocab, 0);
  cr_expect_eq(i.det_hidden, 512);
  cr_expect_eq(i.det_layers, 8);
  cr_expect_eq(i.det_window, 30);
  cr_expect_eq(i.codebook_vocab, 2048);
  cr_expect_eq(i.files, 1);
  cr_expect_eq(i.tensors, f.mm.detok.n);
  cr_expect_eq(i.ignored, 2, "lfm.embed_tokens.weight and istft.window: %lld", (long long)i.ignored);
  cr_expect_str_eq(i.dtype, want_dtype);
  fk_tensor_view v;
  fk_error e;
  cr_assert_eq(fk_model_tensor(f.m, "lin.bias", &v, &e), FK_OK, "%s", e.message);
  cr_expect_eq(v.dtype, FK_DTYPE_F32, "the head's bias stays f32 (desc.tail.bias)");
  cr_expect_eq(v.ndim, 1);
  cr_expect_eq(v.shape[0], FK_TAIL_SPEC);
  fk_plan_desc direct = direct_detok(&f, fkw_bias_dtype(o));
  cr_expect(memcmp(v.data, direct.tail.bias, sizeof g_bias) == 0, "lin.bias differs from what was written");
  same_sessions(f.m, &direct, 0);
  teardown(&f);
}

/* a detokenizer config whose architectures name the LM class (an Lfm2Config says what wrote it):
 * its sliding window still marks it a detokenizer */
static void lm_architecture(json_t *cfg, const char *fname, void *arg) {
  (void)fname, (void)arg;
  json_t *a = json_array();
  json_array_append_new(a, json_string("Lfm2ForCausalLM"));
  json_object_set_new(cfg, "architectures", a);
}

Test(ckpt, detok_bf16) { detok_variant(&(fkw_opts){ .dtype = "BF16" }, "bf16"); }
Test(ckpt, detok_f32_released_style) {
  detok_variant(&(fkw_opts){ .dtype = "F32", .released = 1, .edit_config = lm_architecture }, "f32");
}

/* ---- LFM2.5-Audio ----------------------------------------------------------------------------------- */

static void expect_tensor(const fk_model *m, const char *name, fk_tensor_dtype dt, int ndim, int64_t d0, int64_t d1) {
  fk_tensor_view v;
  fk_error e;
  fk_status s = fk_model_tensor(m, name, &v, &e);
  cr_assert_eq(s, FK_OK, "fk_model_tensor(%s): %s", name, e.message);
  cr_expect_eq(v.dtype, dt, "%s: dtype", name);
  cr_expect_eq(v.ndim, ndim, "%s: ndim", name);
  cr_expect_eq(v.shape[0], d0, "%s: shape[0]", name);
  if (ndim > 1) cr_expect_eq(v.shape[1], d1, "%s: shape[1]", name);
  cr_expect_not_null(v.data);
}

Test(ckpt, audio_backbone_depthformer_detokenizer) {
  fixture f;
  setup(&f);
  const fkw_opts o = { .released = 1 };
  cr_assert_eq(fkw_audio_dir(f.dir, &f.mm.lm, &f.mm.detok, &o), 0);
  f.m = open_dir(f.dir, FK_MODEL_AUTO);
  fk_model_info i = query(f.m);
  cr_expect_eq(i.kind, FK_MODEL_LFM2_AUDIO);
  cr_expect_str_eq(i.architecture, "LFM2AudioModel");
  lm_shapes(&i);
  cr_expect_eq(i.tied, 1, "text logits use lfm.embed_tokens.weight");
  cr_expect_eq(i.det_hidden, 512);
  cr_expect_eq(i.det_window, 30);
  cr_expect_eq(i.codebooks, FKW_CODEBOOKS);
  cr_expect_eq(i.depth_layers, FKW_DEPTH_LAYERS);
  cr_expect_eq(i.depth_dim, FKW_DEPTH_DIM);
  cr_expect_eq(i.files, 2);
  /* ignored: codebook_offsets, 5 encoder tensors (conformer.*, audio_adapter.*), depth_embeddings.0's
   * tied to_logits copy, the detokenizer's lfm.embed_tokens and istft.window */
  cr_expect_eq(i.ignored, 9, "ignored %lld", (long long)i.ignored);
  cr_expect_str_eq(i.dtype, "bf16", "the files' dtype (the biases too: served f32)");

  /* the backbone and the detokenizer: the direct descriptors' sessions */
  fk_plan_desc lm = direct_lm(&f, 1), det = direct_detok(&f, fkw_bias_dtype(&o));
  same_sessions(f.m, &lm, 1);
  same_sessions(f.m, &det, 0);

  /* the parts no descriptor carries yet, by their checkpoint names */
  const int64_t DD = FKW_DEPTH_DIM, CB = FKW_CODEBOOKS;
  expect_tensor(f.m, "audio_embedding.embedding.weight", FK_DTYPE_BF16, 2, 2049 * CB, 256);
  expect_tensor(f.m, "audio_embedding.to_logits.weight", FK_DTYPE_BF16, 2, 2049 * CB, 256);
  expect_tensor(f.m, "depthformer.layers.1.operator.qkv_proj.weight", FK_DTYPE_BF16, 2, DD + 2 * 2 * 8, DD);
  expect_tensor(f.m, "depthformer.layers.0.operator.bounded_attention.k_layernorm.weight", FK_DTYPE_BF16, 1, DD / 32, 0);
  expect_tensor(f.m, "depthformer.layers.1.feed_forward.w2.weight", FK_DTYPE_BF16, 2, DD, 256);
  expect_tensor(f.m, "depth_linear.weight", FK_DTYPE_BF16, 2, DD * CB, 256);
  expect_tensor(f.m, "depth_linear.bias", FK_DTYPE_F32, 1, DD * CB, 0);
  expect_tensor(f.m, "depth_embeddings.7.embedding.weight", FK_DTYPE_BF16, 2, 2049, DD);
  expect_tensor(f.m, "audio_detokenizer/lin.bias", FK_DTYPE_F32, 1, FK_TAIL_SPEC, 0);
  expect_tensor(f.m, "lfm.layers.2.self_attn.q_proj.weight", FK_DTYPE_BF16, 2, 256, 256);
  /* the bytes are the formula's */
  fk_tensor_view v;
  fk_error e;
  cr_assert_eq(fk_model_tensor(f.m, "depthformer.layers.1.feed_forward.w2.weight", &v, &e), FK_OK);
  uint16_t want[64 * 256];
  fkm_synth_tensor("audio", "depthformer.layers.1.feed_forward.w2.weight", FKM_LINEAR, 64 * 256, 256, want);
  cr_expect(memcmp(v.data, want, sizeof want) == 0, "depthformer w2: not the bytes written");
  float bias[64 * 8];
  fkm_synth_tensor("audio", "depth_linear.bias", FKM_BIAS, 64 * 8, 0, bias);
  cr_assert_eq(fk_model_tensor(f.m, "depth_linear.bias", &v, &e), FK_OK);
  for (int k = 0; k < 64 * 8; k++) /* written bf16 (a bf16 checkpoint), served f32 */
    cr_assert_eq(((const float *)v.data)[k], fk_f32_from_bf16(fk_bf16_from_f32(bias[k])), "depth_linear.bias[%d]", k);
  /* ignored and unknown names */
  cr_expect_eq(fk_model_tensor(f.m, "conformer.pre_encode.conv.0.weight", &v, &e), FK_ENOTFOUND);
  cr_expect(strstr(e.message, "ignored by name") && strstr(e.message, "encoder"), "%s", e.message);
  cr_expect_eq(fk_model_tensor(f.m, "depth_embeddings.0.to_logits.weight", &v, &e), FK_ENOTFOUND);
  cr_expect_eq(fk_model_tensor(f.m, "lin.bias", &v, &e), FK_ENOTFOUND, "the detokenizer's names carry its folder");
  cr_expect(strstr(e.message, "no tensor 'lin.bias'"), "%s", e.message);

  /* one family at a time: the host's programs are kept, the other family's fields left alone */
  fk_plan_desc d;
  memset(&d, 0, sizeof d);
  d.programs = FK_PROGRAMS_DETOK;
  d.threads = 1;
  cr_assert_eq(fk_model_describe(f.m, &d, &e), FK_OK, "%s", e.message);
  cr_expect_eq(d.programs, FK_PROGRAMS_DETOK);
  cr_expect_null(d.lm.embed);
  cr_expect_not_null(d.detok.codebooks);
  memset(&d, 0, sizeof d);
  d.threads = 1;
  cr_assert_eq(fk_model_describe(f.m, &d, &e), FK_OK, "%s", e.message);
  cr_expect_eq(d.programs, FK_PROGRAMS_LM | FK_PROGRAMS_DETOK, "programs 0: every family the checkpoint has");
  cr_expect_null(d.lm.lm_head, "tied");
  cr_expect_eq(d.lm.max_rows, 64);
  cr_expect_eq(d.lm.stack.max_pos, 4096, "min(max_position_embeddings 128000, 4096)");
  cr_expect_eq(d.lm.stack.window, 0);
  cr_expect_eq(d.detok.stack.window, 30);
  cr_assert_eq(fk_plan_check(&d, NULL, &e), FK_OK, "%s", e.message);
  teardown(&f);
}

Test(ckpt, audio_without_detokenizer_folder) {
  fixture f;
  setup(&f);
  cr_assert_eq(fkw_audio_dir(f.dir, &f.mm.lm, &f.mm.detok, &(fkw_opts){ .shards = 2, .no_detok = 1 }), 0);
  f.m = open_dir(f.dir, FK_MODEL_LFM2_AUDIO);
  fk_model_info i = query(f.m);
  cr_expect_eq(i.files, 2);
  cr_expect_eq(i.det_hidden, 0);
  cr_expect_eq(i.ignored, 7);
  fk_plan_desc d;
  memset(&d, 0, sizeof d);
  d.threads = 1;
  fk_error e;
  cr_assert_eq(fk_model_describe(f.m, &d, &e), FK_OK, "%s", e.message);
  cr_expect_eq(d.programs, FK_PROGRAMS_LM);
  d.programs = FK_PROGRAMS_DETOK;
  cr_expect_eq(fk_model_describe(f.m, &d, &e), FK_EINVAL);
  fk_plan_desc lm = direct_lm(&f, 1);
  same_sessions(f.m, &lm, 1);
  teardown(&f);
}

/* ---- describe, and the model's lifetime ----------------------------------------------------------- */

Test(ckpt, describe_keeps_the_host_fields_and_fills_defaults) {
  fixture f;
  setup(&f);
  cr_assert_eq(fkw_detok_dir(f.dir, &f.mm.detok, &(fkw_opts){ 0 }), 0);
  f.m = open_dir(f.dir, FK_MODEL_DETOK);
  fk_error e;
  fk_plan_desc d;
  memset(&d, 0, sizeof d);
  d.threads = 1;
  cr_assert_eq(fk_model_describe(f.m, &d, &e), FK_OK, "%s", e.message);
  cr_expect_eq(d.programs, FK_PROGRAMS_DETOK);
  cr_expect_eq(d.detok.max_frames, 64);
  cr_expect_eq(d.detok.stack.max_pos, 4096, "min(max_position_embeddings, 4096)");
  cr_expect_eq(d.detok.stack.window, 30);
  cr_expect_eq(d.max_frames, 64);
  cr_expect_eq(d.tail_in, 512);
  cr_expect(isinf(d.clip) && d.clip > 0, "a zero clip becomes INFINITY (LFM2.5 clips nothing)");
  cr_expect_eq(d.norm_eps, 1e-5f);
  cr_assert_eq(fk_plan_check(&d, NULL, &e), FK_OK, "%s", e.message);
  /* the host's own fields stay */
  memset(&d, 0, sizeof d);
  d.programs = FK_PROGRAMS_DETOK | FK_PROGRAMS_TAIL;
  d.threads = 2;
  d.tier = FK_TIER_FAST;
  d.flags = FK_PLAN_PCM_I16 | FK_PLAN_NO_PIN;
  d.forbid_features = 1u << 3;
  d.clip = 100.0f;
  d.max_frames = 7;
  d.detok.max_frames = 3;
  d.detok.stack.max_pos = 600;
  cr_assert_eq(fk_model_describe(f.m, &d, &e), FK_OK, "%s", e.message);
  cr_expect_eq(d.programs, FK_PROGRAMS_DETOK | FK_PROGRAMS_TAIL);
  cr_expect_eq(d.threads, 2);
  cr_expect_eq(d.tier, FK_TIER_FAST);
  cr_expect_eq(d.flags, FK_PLAN_PCM_I16 | FK_PLAN_NO_PIN);
  cr_expect_eq(d.forbid_features, 1u << 3);
  cr_expect_eq(d.clip, 100.0f);
  cr_expect_eq(d.max_frames, 7);
  cr_expect_eq(d.detok.max_frames, 3);
  cr_expect_eq(d.detok.stack.max_pos, 600);
  teardown(&f);
}

/* The plan keeps nothing of the model: closed (unmapped) after fk_plan_create, the session is the
 * same bits (a read of the mapping would fault). */
Test(ckpt, model_closed_after_readiness) {
  fixture f;
  setup(&f);
  cr_assert_eq(fkw_lm_dir(f.dir, &f.mm.lm, &(fkw_opts){ 0 }), 0);
  f.m = open_dir(f.dir, FK_MODEL_AUTO);
  fk_plan_desc direct = direct_lm(&f, 0);
  char *want = session(&direct, 1);
  for (int threads = 1; threads <= 2; threads++) {
    fk_model *m = threads == 1 ? f.m : open_dir(f.dir, FK_MODEL_AUTO);
    fk_plan_desc d = described(m, FK_PROGRAMS_LM, threads);
    fk_plan *p;
    fk_error e;
    cr_assert_eq(fk_plan_create(&d, &p, &e), FK_OK, "%s", e.message);
    fk_model_close(m);
    f.m = NULL;
    char *got = NULL;
    size_t n = 0;
    FILE *out = open_memstream(&got, &n);
    cr_assert_eq(fkt_session_lm_run(p, d.lm.vocab, out), 0);
    fclose(out);
    fk_plan_destroy(p);
    cr_assert_str_eq(got, want, "team of %d, the model closed before the run", threads);
    free(got);
  }
  free(want);
  teardown(&f);
}

/* The comparison sees the weights: one weight's sign flipped in the file gives another session (its
 * last mantissa bit may round away in the bf16 residual stream). */
static void flip_bit(fkw_file *f, const char *fname, void *arg) {
  (void)fname;
  fkw_tensor *t = fkw_find(f, arg);
  if (t) t->data[101] ^= 0x80; /* element 50's sign bit */
}

Test(ckpt, perturbation_one_weight_sign_is_seen) {
  fixture f;
  setup(&f);
  cr_assert_eq(fkw_lm_dir(f.dir, &f.mm.lm, &(fkw_opts){ .edit_file = flip_bit, .arg = "model.layers.3.feed_forward.w2.weight" }), 0);
  f.m = open_dir(f.dir, FK_MODEL_AUTO);
  fk_plan_desc direct = direct_lm(&f, 0), d = described(f.m, FK_PROGRAMS_LM, 1);
  char *want = session(&direct, 1), *got = session(&d, 1);
  cr_assert(strcmp(got, want) != 0, "a flipped weight sign went unseen");
  free(want);
  free(got);
  teardown(&f);
}

/* ---- flashkern-run --speak: an LFM2.5-Audio turn to a WAV ---------------------------------------- */


static float *read_wav(const char *path, int64_t *n) {
  SF_INFO info = { 0 };
  SNDFILE *sf = sf_open(path, SFM_READ, &info);
  cr_assert(sf, "%s: %s", path, sf_strerror(NULL));
  cr_assert_eq(info.samplerate, 24000);
  cr_assert_eq(info.format & SF_FORMAT_SUBMASK, SF_FORMAT_FLOAT);
  float *w = malloc((size_t)info.frames * 4 + 4);
  cr_assert_eq(sf_read_float(sf, w, info.frames), info.frames);
  sf_close(sf);
  *n = info.frames;
  return w;
}

/* A runnable Depthformer (dim 1024: head_dim 32) written as liquid-audio lays it out, an interleaved
 * sampled turn through `flashkern-run --speak`: its ids, codes and WAV equal, bit for bit, the same
 * turn run in process on a plan from the same directory (frames streamed one per detokenizer call);
 * `flashkern-run --codes` on the codes it wrote gives the same WAV again. */
Test(ckpt, speak_turn_to_wav, .timeout = 600) {
  fixture f;
  setup(&f);
  const fkw_opts o = { .depth_dim = 1024, .n_text = 2, .n_audio = 3 };
  cr_assert_eq(fkw_audio_dir(f.dir, &f.mm.lm, &f.mm.detok, &o), 0);
  char cmd[2048], wav[128], wav2[128], codes[128];
  snprintf(wav, sizeof wav, "%s/speak.wav", f.dir);
  snprintf(wav2, sizeof wav2, "%s/again.wav", f.dir);
  snprintf(codes, sizeof codes, "%s/codes.txt", f.dir);
  snprintf(cmd, sizeof cmd, "%s --model %s --speak --tokens 1,6,17,42,99 --loop interleaved --max-new 12 "
           "--audio-temperature 0.9 --audio-top-k 64 --seed 7 --threads 2 --wav %s --codes-out %s 2>/dev/null",
           FKT_FLASHKERN_RUN, f.dir, wav, codes);
  char *ids = fkt_run_cmd(cmd);
  int64_t n = 0;
  float *pcm = read_wav(wav, &n);
  /* in process: the same turn */
  f.m = open_dir(f.dir, FK_MODEL_AUTO);
  fk_plan_desc d;
  memset(&d, 0, sizeof d);
  d.programs = FK_PROGRAMS_AUDIO | FK_PROGRAMS_DETOK;
  d.threads = 2;
  d.detok.max_frames = 1;
  d.audio.lm.max_rows = 64;
  fk_error e;
  cr_assert_eq(fk_model_describe(f.m, &d, &e), FK_OK, "%s", e.message);
  d.audio.lm.stack.max_pos = d.audio.lm.stack.max_pos < 17 ? 17 : d.audio.lm.stack.max_pos;
  d.detok.stack.max_pos = d.detok.stack.max_pos < 78 ? 78 : d.detok.stack.max_pos;
  fk_plan *p;
  cr_assert_eq(fk_plan_create(&d, &p, &e), FK_OK, "%s", e.message);
  cr_assert_eq(fk_sampler_seed(p, 7), FK_OK);
  const int32_t prompt[5] = { 1, 6, 17, 42, 99 };
  const fk_sampling as = { 0.9f, 64 };
  float *mine = calloc(13 * 1920 + 480, 4);
  int64_t have = 0, frames = 0;
  char want[1024] = "", line[128];
  FILE *cf = fopen(codes, "r");
  cr_assert(cf);
  fk_io io = { .rows = 5, .tokens = prompt, .loop = FK_AUDIO_INTERLEAVED };
  cr_assert_eq(fk_run(p, FK_PROG_AUDIO_PREFILL, &io, &e), FK_OK, "%s", e.message);
  for (int step = 0;; step++) {
    int sound = io.out == FK_AUDIO_OUT_FRAME;
    for (int c = 0; sound && c < 8; c++) sound = io.frame[c] < 2048;
    if (sound) {
      char got[128] = "";
      for (int c = 0; c < 8; c++) snprintf(got + strlen(got), sizeof got - strlen(got), "%d%c", io.frame[c], c == 7 ? '\n' : ' ');
      cr_assert(fgets(line, sizeof line, cf), "--codes-out has fewer frames");
      cr_assert_str_eq(line, got, "frame %lld", (long long)frames);
      fk_io dio = { .rows = 1, .codes = io.frame, .pcm = mine + have, .pcm_cap = 13 * 1920 + 480 - have };
      cr_assert_eq(fk_run(p, FK_PROG_DETOK, &dio, &e), FK_OK, "%s", e.message);
      have += dio.pcm_count;
      frames++;
    } else if (io.out == FK_AUDIO_OUT_TEXT) {
      snprintf(want + strlen(want), sizeof want - strlen(want), "%s%d", want[0] ? " " : "", io.next);
    }
    if (io.out == FK_AUDIO_OUT_END || step == 12) break;
    io = (fk_io){ .rows = 1, .audio_sampling = &as };
    cr_assert_eq(fk_run(p, FK_PROG_AUDIO_STEP, &io, &e), FK_OK, "%s", e.message);
  }
  cr_assert(!fgets(line, sizeof line, cf), "--codes-out has more frames");
  fclose(cf);
  cr_assert_geq(frames, 2, "the interleaved turn speaks (n_text 2, n_audio 3)");
  fk_io fl = { .pcm = mine + have, .pcm_cap = 480 };
  cr_assert_eq(fk_run(p, FK_PROG_DETOK_FLUSH, &fl, &e), FK_OK, "%s", e.message);
  have += fl.pcm_count;
  strcat(want, "\n");
  cr_assert_str_eq(ids, want, "flashkern-run's ids");
  cr_assert_eq(n, have, "the WAV holds %lld samples, the plan gave %lld", (long long)n, (long long)have);
  cr_assert(!memcmp(pcm, mine, (size_t)n * 4), "the WAV is the plan's PCM bit for bit");
  /* the codes it wrote, through the detokenizer in one go */
  snprintf(cmd, sizeof cmd, "%s --model %s --codes %s --wav %s 2>/dev/null", FKT_FLASHKERN_RUN, f.dir, codes, wav2);
  free(fkt_run_cmd(cmd));
  int64_t n2 = 0;
  float *again = read_wav(wav2, &n2);
  cr_assert(n2 == n && !memcmp(again, pcm, (size_t)n * 4), "--codes on --codes-out's frames gives the same WAV");
  cr_log_info("flashkern-run --speak: %lld frames, %lld samples, ids '%s', the same bits in process and via --codes",
              (long long)frames, (long long)n, ids);
  free(again), free(pcm), free(mine), free(ids);
  fk_plan_destroy(p);
  teardown(&f);
}
