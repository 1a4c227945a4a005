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
 * and audio_detokenizer/; what fk_model_query, fk_model_tensor and fk_model_describe report. And the
 * LM as one GGUF file the test writes (fkw_lm_gguf: llama.cpp's layout, Q4_K / Q8_0 / Q4_0 blocks or
 * BF16): its descriptor against the directory's, its plan's logits bit for bit those of the
 * directory's plan quantized alike (gguf_*_written). The refusals are tests/badinput's
 * (docs/bad-input.md). */
#define _POSIX_C_SOURCE 200809L
#include <criterion/criterion.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <sndfile.h>
#include <string.h>

#include "ckpt_write.h"
#include "fk_checkpoint.h"
#include "model_desc.h"
#include "session.h"
#include "cmd.h"
#include "gguf_read.h"

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

/* ---- a GGUF file the test writes (fkw_lm_gguf): Q4_K, and the other formats ------------------------------ */

/* the weight matrices of a layer: bf16 and fk_qmatrix fields, layer kind (-1: every layer), GGUF name */
static const struct {
  size_t bf, q;
  int kind;
  const char *gguf;
} GMATS[] = {
  { offsetof(fk_lfm2_layer, in_proj), offsetof(fk_lfm2_layer, q.in_proj), FK_LAYER_CONV, "shortconv.in_proj" },
  { offsetof(fk_lfm2_layer, out_proj), offsetof(fk_lfm2_layer, q.out_proj), FK_LAYER_CONV, "shortconv.out_proj" },
  { offsetof(fk_lfm2_layer, q_proj), offsetof(fk_lfm2_layer, q.q_proj), FK_LAYER_ATTN, "attn_q" },
  { offsetof(fk_lfm2_layer, k_proj), offsetof(fk_lfm2_layer, q.k_proj), FK_LAYER_ATTN, "attn_k" },
  { offsetof(fk_lfm2_layer, v_proj), offsetof(fk_lfm2_layer, q.v_proj), FK_LAYER_ATTN, "attn_v" },
  { offsetof(fk_lfm2_layer, o_proj), offsetof(fk_lfm2_layer, q.o_proj), FK_LAYER_ATTN, "attn_output" },
  { offsetof(fk_lfm2_layer, w1), offsetof(fk_lfm2_layer, q.w1), -1, "ffn_gate" },
  { offsetof(fk_lfm2_layer, w3), offsetof(fk_lfm2_layer, q.w3), -1, "ffn_up" },
  { offsetof(fk_lfm2_layer, w2), offsetof(fk_lfm2_layer, q.w2), -1, "ffn_down" },
};
/* the norms and taps: field, kind, elements in units of hidden (0: head_dim) */
static const struct {
  size_t off;
  int kind, hidden_units;
} GVECS[] = {
  { offsetof(fk_lfm2_layer, operator_norm), -1, 1 }, { offsetof(fk_lfm2_layer, ffn_norm), -1, 1 },
  { offsetof(fk_lfm2_layer, conv), FK_LAYER_CONV, 3 }, { offsetof(fk_lfm2_layer, q_norm), FK_LAYER_ATTN, 0 },
  { offsetof(fk_lfm2_layer, k_norm), FK_LAYER_ATTN, 0 },
};

static const uint16_t *bf16_at(const fk_lfm2_layer *l, size_t off) {
  const uint16_t *p;
  memcpy(&p, (const char *)l + off, sizeof p);
  return p;
}

static fk_qmatrix qm_at(const fk_lfm2_layer *l, size_t off) {
  fk_qmatrix q;
  memcpy(&q, (const char *)l + off, sizeof q);
  return q;
}

/* fk_q_quantize_bf16 of n x k bf16 weights (malloc'd) */
static void *q_blocks(fk_qformat f, const uint16_t *w, int64_t n, int64_t k) {
  const size_t bytes = fk_q_gguf_bytes(f, n, k);
  cr_assert_gt(bytes, 0, "%lld x %lld: not whole blocks", (long long)n, (long long)k);
  void *b = malloc(bytes);
  cr_assert_not_null(b);
  fk_error e;
  cr_assert_eq(fk_q_quantize_bf16(f, w, k, n, k, b, bytes, &e), FK_OK, "fk_q_quantize_bf16: %s", e.message);
  return b;
}

static unsigned char *slurp(const char *path, size_t *n) {
  FILE *fp = fopen(path, "rb");
  cr_assert(fp, "cannot open %s", path);
  cr_assert_eq(fseek(fp, 0, SEEK_END), 0);
  long size = ftell(fp);
  cr_assert_gt(size, 0);
  rewind(fp);
  unsigned char *b = malloc((size_t)size);
  cr_assert_not_null(b);
  cr_assert_eq(fread(b, 1, (size_t)size, fp), (size_t)size);
  fclose(fp);
  *n = (size_t)size;
  return b;
}

/* the prompt: a 12-token prefill, then 4 greedy decodes (as test_gguf_fixtures.c) */
enum { GG_PROMPT = 12, GG_DECODES = 4 };
static const int32_t gg_prompt[GG_PROMPT] = { 1, 6, 17, 42, 99, 311, 512, 700, 5, 1000, 23, 64 };

/* The synthetic LM written twice: the bf16 directory (fkw_lm_dir) and a GGUF file of format q (fkw_lm_gguf).
 * The file's layout (tests/ckpt/gguf_read.h, not the loader): v3, no general.alignment, every tensor's data at
 * a multiple of 32, the matrices of ggml type `gtype`, the norms F32, the taps ne [3, hidden]. fk_model_open
 * of the file: fk_model_query's shapes are the directory's, files 1, tensors used, dtype, owned bytes;
 * fk_model_describe's descriptor: every norm and tap the directory's bytes; every matrix (the head: output, or
 * token_embd when tied) GGUF blocks of format q, byte for byte fk_q_quantize_bf16 of the directory's bf16
 * matrix, no bf16 pointer (q = FK_QNONE: bf16, the directory's bytes); the embedding bf16 RNE(dequantized
 * blocks) (fk_model_tensor serves it too; a block matrix is FK_EUNSUPPORTED there). Then plans (2 members,
 * exact tier) of the file's descriptor and of the reference: the directory's with desc.quantize = q (its
 * bf16 matrices quantized at readiness by the same quantizer), its embedding the file's dequantized one and,
 * tied, its head token_embd's blocks; the 12-token prefill and 4 greedy decodes give the same logits bit for
 * bit every call. A quantized file's logits differ from the plain bf16 plan's (the blocks reached the plan). */
static void gguf_written(fk_qformat q, int tied, uint32_t gtype, const char *fname) {
  fixture f;
  setup(&f);
  const fkm_weights *lm = &f.mm.lm;
  char gdir[64], path[160];
  cr_assert_not_null(fkw_tmpdir(gdir));
  snprintf(path, sizeof path, "%s/%s", gdir, fname);
  cr_assert_eq(fkw_lm_dir(f.dir, lm, &(fkw_opts){ .tied = tied }), 0);
  cr_assert_eq(fkw_lm_gguf(path, lm, q, tied), 0);

  /* the file's layout, by the tests' own reader */
  size_t fsize;
  unsigned char *img = slurp(path, &fsize);
  ggr *g = calloc(1, sizeof *g);
  char err[256];
  cr_assert_eq(ggr_parse(img, fsize, g, err, sizeof err), 0, "%s: %s", path, err);
  cr_expect_eq(g->version, 3);
  cr_expect_null(ggr_kv_named(g, "general.alignment"));
  cr_expect_eq(g->align, 32);
  cr_expect_eq(g->data % 32, 0);
  cr_expect_eq((int)g->nt, lm->n - tied, "%llu tensors", (unsigned long long)g->nt);
  cr_expect_eq(ggr_tensor_named(g, "output.weight") == NULL, tied);
  int64_t nmats = 0, nvecs = 0, vec_elems = 0;
  for (int i = 0; i < g->nts; i++) {
    const ggr_tensor *t = &g->t[i];
    cr_expect_eq(t->off % 32, 0, "%s: offset %llu", t->name, (unsigned long long)t->off);
    if (strstr(t->name, "norm") || strstr(t->name, "shortconv.conv")) {
      cr_expect_eq(t->type, GGR_F32, "%s: type %u", t->name, t->type);
      nvecs++;
      vec_elems += (int64_t)(t->nd == 2 ? t->ne[0] * t->ne[1] : t->ne[0]);
      if (strstr(t->name, "shortconv.conv")) cr_expect(t->nd == 2 && t->ne[0] == 3 && t->ne[1] == 256, "%s: ne", t->name);
    } else {
      cr_expect_eq(t->type, gtype, "%s: type %u, want %u", t->name, t->type, gtype);
      cr_expect_eq(t->nd, 2, "%s", t->name);
      nmats++;
    }
  }
  const ggr_tensor *te = ggr_tensor_named(g, "token_embd.weight");
  cr_assert_not_null(te);
  cr_expect(te->ne[0] == 256 && te->ne[1] == 1024, "token_embd.weight: ne [%llu, %llu]", (unsigned long long)te->ne[0],
            (unsigned long long)te->ne[1]);
  const size_t te_at = te->data;

  /* fk_model_query: the directory's shapes */
  f.m = open_dir(path, FK_MODEL_AUTO);
  fk_model *sm = open_dir(f.dir, FK_MODEL_AUTO);
  fk_model_info gi = query(f.m);
  cr_expect_eq(gi.kind, FK_MODEL_LFM2_LM);
  cr_expect_str_eq(gi.architecture, "lfm2 (GGUF)");
  lm_shapes(&gi);
  cr_expect_eq(gi.tied, tied);
  cr_expect_eq(gi.files, 1);
  cr_expect_eq(gi.file_bytes, fsize);
  cr_expect_eq(gi.tensors, lm->n - tied, "tensors used: %lld", (long long)gi.tensors);
  cr_expect_eq(gi.ignored, 0);
  cr_expect_str_eq(gi.dtype, "mixed", "F32 norms beside %s matrices", fname);
  const int64_t V = 1024, H = 256;
  /* owned: the norms and taps F32 -> bf16, and a quantized token_embd dequantized to bf16 */
  cr_expect_eq(gi.owned_bytes, (uint64_t)(2 * vec_elems + (q != FK_QNONE ? 2 * V * H : 0)), "owned %llu",
               (unsigned long long)gi.owned_bytes);

  /* fk_model_describe: each field against the directory's */
  fk_plan_desc gd = described(f.m, FK_PROGRAMS_LM, 2), sd = described(sm, FK_PROGRAMS_LM, 2);
  const fk_lfm2_stack *gs = &gd.lm.stack, *ss = &sd.lm.stack;
  cr_assert(gs->layers == 6 && ss->layers == 6 && gs->hidden == H && gd.lm.vocab == V && sd.lm.vocab == V);
  cr_expect(gs->ffn == ss->ffn && gs->heads == ss->heads && gs->kv_heads == ss->kv_heads && gs->head_dim == ss->head_dim &&
            gs->window == ss->window && gs->max_pos == ss->max_pos && gs->rope_theta == ss->rope_theta &&
            gs->norm_eps == ss->norm_eps && gd.norm_eps == sd.norm_eps, "the stack differs from the directory's");
  void *qb[6 * 9 + 2] = { 0 };
  int nq = 0;
  int64_t seen = 0;
  for (int64_t i = 0; i < ss->layers; i++) {
    const fk_lfm2_layer *gl = &gs->layer[i], *sl = &ss->layer[i];
    cr_expect_eq(gl->kind, sl->kind, "layer %lld", (long long)i);
    for (size_t v = 0; v < sizeof GVECS / sizeof GVECS[0]; v++) {
      if (GVECS[v].kind >= 0 && GVECS[v].kind != (int)sl->kind) continue;
      const uint16_t *a = bf16_at(gl, GVECS[v].off), *b = bf16_at(sl, GVECS[v].off);
      const size_t n = (size_t)(GVECS[v].hidden_units ? GVECS[v].hidden_units * H : 64);
      cr_expect(a && b && !memcmp(a, b, n * 2), "layer %lld: norm/tap %zu: not the directory's bytes", (long long)i, v);
    }
    for (size_t mi = 0; mi < sizeof GMATS / sizeof GMATS[0]; mi++) {
      if (GMATS[mi].kind >= 0 && GMATS[mi].kind != (int)sl->kind) continue;
      const uint16_t *sw = bf16_at(sl, GMATS[mi].bf), *gw = bf16_at(gl, GMATS[mi].bf);
      const fk_qmatrix gq = qm_at(gl, GMATS[mi].q);
      char gname[96];
      snprintf(gname, sizeof gname, "blk.%lld.%s.weight", (long long)i, GMATS[mi].gguf);
      const ggr_tensor *ft = ggr_tensor_named(g, gname);
      cr_assert(sw && ft, "%s: the directory's bf16 matrix, the file's tensor", gname);
      const int64_t n = (int64_t)ft->ne[1], k = (int64_t)ft->ne[0];
      cr_expect_eq(k % 256, 0, "%s: k = %lld", gname, (long long)k);
      seen++;
      if (q == FK_QNONE) {
        cr_expect(gq.format == FK_QNONE && gw && !memcmp(gw, sw, (size_t)(n * k) * 2), "%s: not the directory's bf16", gname);
        continue;
      }
      const size_t bytes = fk_q_gguf_bytes(q, n, k);
      cr_expect(!gw, "%s: a bf16 pointer beside the blocks", gname);
      cr_expect(ft->type == gtype && gq.format == q && gq.blocks && !memcmp(gq.blocks, img + ft->data, bytes),
                "%s: format %d (want %d), blocks %s the file's bytes", gname, gq.format, q, gq.blocks ? "not" : "NULL, not");
      /* (Q4_K's quantizer takes ~0.5 us a weight: the file's bytes of layer 0's ShortConv and of layer 2
       * (attention) are checked against it here; the others meet it through the reference plan's
       * desc.quantize) */
      if (i == 2 || (i == 0 && GMATS[mi].kind == FK_LAYER_CONV)) {
        void *want = qb[nq++] = q_blocks(q, sw, n, k);
        cr_expect(!memcmp(img + ft->data, want, bytes), "%s: not fk_q_quantize_bf16 of the directory's bf16", gname);
      }
    }
  }
  cr_expect_eq(seen, nmats - 1 - !tied, "%lld layer matrices, the file has %lld matrices", (long long)seen, (long long)nmats);
  cr_expect(gs->final_norm && !memcmp(gs->final_norm, ss->final_norm, (size_t)H * 2), "token_embd_norm: not the directory's");

  /* the embedding: bf16 RNE of token_embd's dequantized blocks; the head */
  uint16_t *emb = malloc((size_t)(V * H) * 2);
  cr_assert_not_null(emb);
  fk_qmatrix rhead = { FK_QNONE, NULL };
  fk_error e;
  if (q == FK_QNONE) {
    memcpy(emb, sd.lm.embed, (size_t)(V * H) * 2);
  } else {
    void *qe = qb[nq++] = q_blocks(q, sd.lm.embed, V, H);
    const size_t bytes = fk_q_gguf_bytes(q, V, H);
    cr_expect(!memcmp(img + te_at, qe, bytes), "token_embd.weight: not fk_q_quantize_bf16 of embed_tokens");
    float *fl = malloc((size_t)(V * H) * 4);
    cr_assert_not_null(fl);
    cr_assert_eq(fk_q_dequantize(q, qe, bytes, V, H, fl, H, &e), FK_OK, "%s", e.message);
    cr_assert_eq(fk_bf16_from_f32_n(fl, emb, (size_t)(V * H), &e), FK_OK, "%s", e.message);
    free(fl);
    cr_expect(memcmp(emb, sd.lm.embed, (size_t)(V * H) * 2) != 0, "the dequantized embedding is the bf16 one");
    if (tied) {
      rhead = (fk_qmatrix){ q, qe };
      cr_expect(!gd.lm.lm_head && gd.lm.lm_head_q.format == q && gd.lm.lm_head_q.blocks &&
                !memcmp(gd.lm.lm_head_q.blocks, qe, bytes), "tied: lm_head_q (format %d) is not token_embd's blocks",
                gd.lm.lm_head_q.format);
    } else {
      void *qh = qb[nq++] = q_blocks(q, sd.lm.lm_head, V, H);
      const ggr_tensor *to = ggr_tensor_named(g, "output.weight");
      cr_assert_not_null(to);
      cr_expect(!gd.lm.lm_head && gd.lm.lm_head_q.format == q && gd.lm.lm_head_q.blocks &&
                !memcmp(gd.lm.lm_head_q.blocks, qh, bytes) && !memcmp(img + to->data, qh, bytes),
                "output.weight: lm_head_q (format %d) is not fk_q_quantize_bf16 of lm_head", gd.lm.lm_head_q.format);
    }
    /* a block matrix is the descriptor's only; the embedding is served bf16 */
    fk_tensor_view v;
    cr_expect_eq(fk_model_tensor(f.m, "model.layers.0.feed_forward.w1.weight", &v, &e), FK_EUNSUPPORTED);
    cr_expect(strstr(e.message, q == FK_Q4K ? "Q4_K" : q == FK_Q8 ? "Q8_0" : "Q4_0"), "%s", e.message);
  }
  if (q == FK_QNONE) {
    cr_expect(gd.lm.lm_head_q.format == FK_QNONE, "BF16: lm_head_q format %d", gd.lm.lm_head_q.format);
    cr_expect(tied ? !gd.lm.lm_head : gd.lm.lm_head && !memcmp(gd.lm.lm_head, sd.lm.lm_head, (size_t)(V * H) * 2),
              "BF16: the head is not the directory's");
  }
  cr_expect(gd.lm.embed && !memcmp(gd.lm.embed, emb, (size_t)(V * H) * 2), "the embedding is not %s",
            q == FK_QNONE ? "the directory's" : "bf16 RNE of token_embd's dequantized blocks");
  fk_tensor_view ev;
  cr_assert_eq(fk_model_tensor(f.m, "model.embed_tokens.weight", &ev, &e), FK_OK, "%s", e.message);
  cr_expect(ev.dtype == FK_DTYPE_BF16 && ev.ndim == 2 && ev.shape[0] == V && ev.shape[1] == H &&
            !memcmp(ev.data, emb, (size_t)(V * H) * 2), "fk_model_tensor(model.embed_tokens.weight)");

  /* the plans: the file's, the reference (the directory's, quantized alike), the plain bf16 one */
  fk_plan_desc rd = sd;
  rd.quantize = q;
  rd.lm.embed = emb;
  if (rhead.format != FK_QNONE) rd.lm.lm_head_q = rhead;
  fk_plan *gp = NULL, *rp = NULL, *bp = NULL;
  cr_assert_eq(fk_plan_create(&gd, &gp, &e), FK_OK, "fk_plan_create(%s): %s", fname, e.message);
  cr_assert_eq(fk_plan_create(&rd, &rp, &e), FK_OK, "fk_plan_create(the reference): %s", e.message);
  if (q != FK_QNONE) cr_assert_eq(fk_plan_create(&sd, &bp, &e), FK_OK, "fk_plan_create(bf16): %s", e.message);
  fk_model_close(sm);
  fk_model_close(f.m);
  f.m = NULL;
  for (int i = 0; i < nq; i++) free(qb[i]);
  free(emb);

  float *gl = malloc((size_t)V * 4), *rl = malloc((size_t)V * 4), *bl = malloc((size_t)V * 4);
  cr_assert(gl && rl && bl);
  int32_t ids[GG_PROMPT];
  memcpy(ids, gg_prompt, sizeof ids);
  char greedy[128] = "";
  int differ = 0;
  double maxd = 0;
  for (int k = 0; k <= GG_DECODES; k++) {
    const int prog = k ? FK_PROG_LM_DECODE : FK_PROG_LM_PREFILL;
    const int64_t rows = k ? 1 : GG_PROMPT;
    fk_io gio = { .rows = rows, .tokens = ids, .logits = gl }, rio = { .rows = rows, .tokens = ids, .logits = rl },
          bio = { .rows = rows, .tokens = ids, .logits = bl };
    cr_assert_eq(fk_run(gp, prog, &gio, &e), FK_OK, "%s call %d: %s", fname, k, e.message);
    cr_assert_eq(fk_run(rp, prog, &rio, &e), FK_OK, "the reference, call %d: %s", k, e.message);
    int64_t d = -1;
    for (int64_t v = 0; v < V && d < 0; v++)
      if (memcmp(&gl[v], &rl[v], 4)) d = v;
    cr_assert(d < 0, "%s call %d (%s): logit %lld is %a, the reference plan's %a", fname, k, k ? "decode" : "prefill",
              (long long)d, d < 0 ? 0.0 : (double)gl[d], d < 0 ? 0.0 : (double)rl[d]);
    cr_assert_eq(gio.next, rio.next, "call %d: greedy %d, the reference's %d", k, (int)gio.next, (int)rio.next);
    if (bp) {
      cr_assert_eq(fk_run(bp, prog, &bio, &e), FK_OK, "bf16 call %d: %s", k, e.message);
      int same = !memcmp(gl, bl, (size_t)V * 4);
      differ += !same;
      if (k == 0) {
        cr_assert(!same, "%s: the prefill's logits are the bf16 plan's: the %s blocks did not reach the plan", fname, fname);
        for (int64_t v = 0; v < V; v++) maxd = fmax(maxd, fabs((double)gl[v] - (double)bl[v]));
      }
    }
    snprintf(greedy + strlen(greedy), sizeof greedy - strlen(greedy), "%s%d", k ? " " : "", (int)gio.next);
    ids[0] = gio.next;
  }
  cr_log_info("%s (%s): prefill of %d + %d decodes bit for bit the reference plan's (greedy %s)%s; %d calls differ "
              "from bf16 (prefill max |diff| %g)", fname, tied ? "tied" : "untied", GG_PROMPT, GG_DECODES, greedy,
              q == FK_QNONE ? ", the directory's bf16 plan" : "", differ, maxd);
  free(gl), free(rl), free(bl);
  fk_plan_destroy(gp);
  fk_plan_destroy(rp);
  fk_plan_destroy(bp);
  free(g);
  free(img);
  fkw_rmdir(gdir);
  teardown(&f);
}

/* Q4_K (ggml type 12): the layers' matrices and the tied head as super-blocks, the embedding dequantized. The
 * untied output tensor takes the same path as the layers' matrices (USE_W): it is covered in Q8_0, whose
 * quantizer is ~100 times faster than Q4_K's (ggml's search over scales). */
Test(ckpt, gguf_q4k_written, .timeout = 120) { gguf_written(FK_Q4K, 1, 12, "lm-q4_k.gguf"); }
Test(ckpt, gguf_q8_0_written_untied, .timeout = 120) { gguf_written(FK_Q8, 0, GGR_Q8_0, "lm-q8_0.gguf"); }
Test(ckpt, gguf_q4_0_written, .timeout = 120) { gguf_written(FK_Q4, 1, GGR_Q4_0, "lm-q4_0.gguf"); }
Test(ckpt, gguf_bf16_written, .timeout = 120) { gguf_written(FK_QNONE, 0, GGR_BF16, "lm-bf16.gguf"); }

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
