/* tests/audio/test_audio_trace.c: the audio programs against liquid-audio's own turns
 * (fixtures/audio/: LFM2AudioModel on the synthetic tag "audio", generate_sequential and
 * generate_interleaved, greedy and sampled; gen_audio.py), teacher forced with the turn's fed
 * tokens and codes. Every boundary within its manifest bound (2 x torch-bf16's own distance to
 * float64): the prompt's embeddings, the backbone's final-norm row at every step, the text logits,
 * the next inputs (token embeddings; audio_embedding's codebook sums), and per frame and codebook
 * depth_linear's row, the Depthformer's input, both layers' outputs, the codebook logits and the
 * feedback embeddings; the detokenizer's PCM of the free frames; tokens where the float64 margin
 * requires them; the sampler's counter after the turn equal to the reference's draws.
 *   turn_<case>: the four turns at 2 members (and 1 and 3 for seq_sampled: the same bits).
 *   perturb_*: the gate fails when the codebooks' inputs are swapped, the feedback comes from the
 *     wrong codebook's table, the Depthformer's cache is not restarted per frame, the audio
 *     embedding's offsets are wrong, or the counter is not committed. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "audio_desc.h"
#include "fk_prog_audio.h"
#include "model_desc.h"
#include "trace.h"

enum { H = 256, DIM = 1024, AV = 2049, MAXF = 8, MAXS = 16 };

typedef enum { P_NONE, P_SWAP_CODEBOOKS, P_WRONG_FEEDBACK, P_NO_RESTART, P_OFFSETS, P_COUNTER } perturb;

/* the runtime's planes at the boundaries, in the manifests' row order */
typedef struct cap {
  perturb what;
  int frame;                /* the running frame (depth_linear steps seen - 1) */
  int cb;                   /* the running codebook (its cb_feed step's) */
  int pemb_rows, bh_rows, temb_rows, aemb_rows;
  uint16_t pemb[16 * H], temb[MAXS * H], aemb[MAXS * H];
  float bh[MAXS * H];
  float dlin[MAXF * 8 * DIM];
  uint16_t din[MAXF * 8 * DIM], dh[2][MAXF * 8 * DIM], dfb[MAXF * 8 * DIM];
} cap;

static void observe(void *ctx, const fk_plan *p, const fk_step *st) {
  cap *c = ctx;
  fk_audio_rt *r = fk_audio_of(p);
  const char *n = st->name;
  int64_t row = (int64_t)c->frame * 8 + c->cb;
  if (st->ctx == r && !strcmp(n, "embed")) {
    c->pemb_rows = (int)p->job.io.rows;
    memcpy(c->pemb, r->stack.res, (size_t)(c->pemb_rows * H) * 2);
  } else if (st->ctx == r && !strcmp(n, "feed_token")) {
    memcpy(c->temb + c->temb_rows++ * H, r->stack.res, H * 2);
  } else if (st->ctx == r && !strcmp(n, "feed_frame")) {
    if (c->what == P_OFFSETS) { /* offsets c * 2048 instead of c * 2049: the sum of other rows */
      for (int64_t i = 0; i < H; i++) {
        float s = 0.0f;
        for (int k = 0; k < 8; k++) {
          uint32_t u = (uint32_t)r->aembed[(k * 2048 + r->last[k]) * H + i] << 16;
          float v;
          memcpy(&v, &u, 4);
          s += v;
        }
        r->stack.res[i] = fk_bf16_from_f32(s);
      }
    }
    memcpy(c->aemb + c->aemb_rows++ * H, r->stack.res, H * 2);
  } else if (st->ctx == r && !strcmp(n, "final_norm")) {
    memcpy(c->bh + c->bh_rows++ * H, r->stack.xn, H * 4);
  } else if (st->ctx == r && !strcmp(n, "depth_linear")) {
    c->frame++;
    if (c->what == P_SWAP_CODEBOOKS) /* codebooks 0 and 1 trade their inputs */
      for (int64_t i = 0; i < DIM; i++) {
        float t = r->d[i];
        r->d[i] = r->d[DIM + i];
        r->d[DIM + i] = t;
      }
    memcpy(c->dlin + (int64_t)c->frame * 8 * DIM, r->d, 8 * DIM * 4);
  } else if (!strcmp(n, "cb_feed")) {
    const fk_audio_cb *cb = st->ctx;
    int k = c->cb = cb->c;
    row = (int64_t)c->frame * 8 + k;
    if (c->what == P_WRONG_FEEDBACK && k >= 2) /* codebook k-2's table for code k-1 */
      memcpy(r->depth.res, r->cb_embed[k - 2] + (int64_t)r->fed[k - 1] * DIM, DIM * 2);
    if (c->what == P_NO_RESTART && c->frame > 0) {
      /* a cache that runs on from the last frame: positions one further (RoPE), the last frame's
       * codebook-0 entry still in slot 0, the input row still codebook k's */
      r->depth.pos = k < 7 ? k + 1 : 7;
      r->depth.in_x = k < 7 ? r->d - DIM : r->d;
    }
    if (k > 0) memcpy(c->dfb + (row - 1) * DIM, r->depth.res, DIM * 2);
  } else if (st->ctx == &r->depth && !strcmp(n, "operator_norm") && st->layer == 0) {
    memcpy(c->din + row * DIM, r->depth.res, DIM * 2);
  } else if (st->ctx == &r->depth && !strcmp(n, "w2") && st->layer < 2) {
    memcpy(c->dh[st->layer] + row * DIM, r->depth.res, DIM * 2);
  } else if (!strcmp(n, "cb_sample") && c->what == P_COUNTER) {
    if (r->rng[1] > 0) r->rng[1]--; /* the draw's counter not committed */
  }
}

static int64_t i64_at(const fkm_trace *tr, const char *name, int64_t i) {
  const fkfix_tensor *t = fkfix_tensor_get(&tr->fx, name);
  cr_assert(t, "tensor %s", name);
  return ((const int64_t *)t->data)[i];
}

static int64_t scalar(const fkm_trace *tr, const char *name) {
  int64_t v;
  cr_assert_eq(fkfix_scalar_i64(&tr->fx, name, &v), 0, "scalar %s", name);
  return v;
}

/* Runs turn `name` (weights of synth.h's `tag`) with `threads` members and judges it; returns the tally. */
static fkm_tally turn_of(const char *name, const char *tag, int threads, perturb pert, FILE *rep) {
  char path[512], err[512];
  snprintf(path, sizeof path, "%s/audio/%s.manifest", FKT_FIXTURE_DIR, name);
  fkm_trace tr;
  cr_assert_eq(fkm_trace_load(path, &tr, err, sizeof err), 0, "%s", err);
  tr.tag = tag; /* trace.c names every audio trace's model "audio"; the peaked case's is audio_peaked */
  /* the weights: the manifest's digests of synth.h's tensors, and the descriptor's bytes those */
  fkm_weights w;
  cr_assert_eq(fkm_synth_model(tag, &w, err, sizeof err), 0, "%s", err);
  cr_assert_eq(fkm_trace_check_weights(&tr, &w, err, sizeof err), 0, "%s", err);
  fkt_audio_cfg cfg = fkt_audio_trace_cfg;
  cfg.tag = tag;
  cfg.n_text = scalar(&tr, "n_text");
  cfg.n_audio = scalar(&tr, "n_audio");
  fkt_audio a;
  cr_assert_eq(fkt_audio_make(&a, &cfg, threads), 0);
  int same = 0;
  for (int i = 0; i < w.n; i++) {
    const void *mine = fkt_audio_tensor(&a, w.t[i].name);
    if (!mine) continue; /* unused by the programs (audio_embedding's norm) */
    cr_assert(!memcmp(mine, w.data[i], w.t[i].nbytes), "tensor %s differs from synth.h's", w.t[i].name);
    same++;
  }
  cr_assert_geq(same, 70, "the descriptor's tensors are the manifest's (%d)", same);
  fkm_weights_free(&w);
  /* the detokenizer beside it: the trace's dt_ digests */
  fkt_models mm;
  cr_assert_eq(fkt_models_make(&mm), 0);
  cr_assert_eq(fkm_trace_check_weights_of(&tr, "dt_", &mm.detok, err, sizeof err), 0, "%s", err);
  fk_plan_desc dt = fkt_models_desc(&mm, FK_PROGRAMS_DETOK, threads);
  fk_plan_desc d = a.desc;
  fkt_audio_add_detok(&d, &dt);
  fk_plan *p;
  fk_error e;
  cr_assert_eq(fk_plan_create(&d, &p, &e), FK_OK, "%s", e.message);
  cap *c = calloc(1, sizeof *c);
  c->what = pert;
  c->frame = -1;
  fk_plan_set_trace(p, observe, c);
  int sampled = (int)scalar(&tr, "sampled");
  float tt = 0, atemp = 0;
  fk_sampling ts = { 0 }, as = { 0 };
  if (sampled) {
    cr_assert_eq(fkfix_scalar_f32(&tr.fx, "text_temperature", &tt), 0);
    cr_assert_eq(fkfix_scalar_f32(&tr.fx, "audio_temperature", &atemp), 0);
    ts = (fk_sampling){ tt, scalar(&tr, "text_top_k") };
    as = (fk_sampling){ atemp, scalar(&tr, "audio_top_k") };
    cr_assert_eq(fk_sampler_seed(p, (uint64_t)scalar(&tr, "sample_seed")), FK_OK);
  }
  int steps = (int)scalar(&tr, "steps"), prompt = (int)scalar(&tr, "prompt"), frames = (int)scalar(&tr, "frames");
  int text_steps = (int)scalar(&tr, "text_steps");
  cr_assert(frames <= MAXF && steps <= MAXS);
  int32_t ids[16];
  for (int i = 0; i < prompt; i++) ids[i] = (int32_t)i64_at(&tr, "ids", i);
  static float tlog[MAXS * 512], flog[MAXF * 8 * AV];
  fkm_tally t = { 0 };
  int ti = 0, fi = 0;
  const fkfix_tensor *l64 = fkfix_tensor_get(&tr.fx, "tlogits_f64");
  for (int s = 0; s < steps; s++) {
    int audio = (int)i64_at(&tr, "modality", s);
    int32_t force[8];
    fk_io io = { .rows = s == 0 ? prompt : 1, .tokens = ids, .loop = (int32_t)scalar(&tr, "interleaved"),
                 .force = force, .logits = tlog + ti * 512, .frame_logits = flog + (int64_t)fi * 8 * AV,
                 .sampling = sampled ? &ts : NULL, .audio_sampling = sampled ? &as : NULL };
    if (audio)
      for (int k = 0; k < 8; k++) force[k] = (int32_t)i64_at(&tr, "codes_depth", fi * 8 + k);
    else
      force[0] = (int32_t)i64_at(&tr, "tok_fed", ti);
    fk_status st = fk_run(p, s == 0 ? FK_PROG_AUDIO_PREFILL : FK_PROG_AUDIO_STEP, &io, &e);
    cr_assert_eq(st, FK_OK, "step %d: %s", s, e.message);
    cr_assert_eq(io.out == FK_AUDIO_OUT_FRAME, audio, "step %d: the modality is the reference's", s);
    if (audio) {
      for (int k = 0; k < 8; k++)
        cr_assert_eq(io.frame[k], (int32_t)i64_at(&tr, "codes_fed", fi * 8 + k), "step %d: the frame fed", s);
      if (!sampled) { /* each codebook's greedy code: the reference's where the margin requires it, else a
                         code whose float64 logit is within the bound of the reference's */
        const fkfix_tensor *dl = fkfix_tensor_get(&tr.fx, "dlogits_f64"), *ab = fkfix_tensor_get(&tr.fx, "code_abs");
        cr_assert(dl && dl->dtype == FKFIX_F32 && ab, "dlogits_f64 (f32) and code_abs");
        static double l64d[AV];
        for (int k = 0; k < 8; k++) {
          const float *row = (const float *)dl->data + (int64_t)(fi * 8 + k) * AV;
          for (int v = 0; v < AV; v++) l64d[v] = row[v];
          float abs_c;
          memcpy(&abs_c, (const float *)ab->data + fi * 8 + k, 4);
          char what[64];
          snprintf(what, sizeof what, "%s frame %d codebook %d", name, fi, k);
          fkm_judge_token(&t, what, io.drawn[k], i64_at(&tr, "codes_bf16", fi * 8 + k),
                          (int)i64_at(&tr, "code_required", fi * 8 + k), l64d, abs_c);
        }
      }
      fi++;
    } else {
      if (!sampled && l64) { /* the greedy token where the margin requires it */
        float abs_b;
        const fkfix_tensor *ab = fkfix_tensor_get(&tr.fx, "tok_abs");
        memcpy(&abs_b, (const float *)ab->data + ti, 4);
        char what[64];
        snprintf(what, sizeof what, "%s token %d", name, ti);
        fkm_judge_token(&t, what, io.drawn[0], i64_at(&tr, "tok", ti), (int)i64_at(&tr, "tok_required", ti),
                        (const double *)l64->data + ti * 512, abs_b);
      }
      ti++;
    }
  }
  cr_assert_eq(ti, text_steps);
  cr_assert_eq(fi, frames);
  /* the boundaries */
  fkm_cmp_full(&t, &tr, "pemb", FKFIX_BF16, c->pemb, rep);
  fkm_cmp_full(&t, &tr, "bh", FKFIX_F32, c->bh, rep);
  fkm_cmp_full(&t, &tr, "tlogits", FKFIX_F32, tlog, rep);
  fkm_cmp_full(&t, &tr, "temb", FKFIX_BF16, c->temb, rep);
  fkm_cmp_full(&t, &tr, "aemb", FKFIX_BF16, c->aemb, rep);
  fkm_cmp_full(&t, &tr, "dlin", FKFIX_F32, c->dlin, rep);
  fkm_cmp_full(&t, &tr, "din", FKFIX_BF16, c->din, rep);
  fkm_cmp_full(&t, &tr, "dh0", FKFIX_BF16, c->dh[0], rep);
  fkm_cmp_full(&t, &tr, "dh1", FKFIX_BF16, c->dh[1], rep);
  fkm_cmp_full(&t, &tr, "dlogits", FKFIX_F32, flog, rep);
  /* dfb: rows c = 0..6 of every frame (the runtime never embeds codebook 7's code: nothing uses it) */
  for (int f = 0; f < frames; f++)
    fkm_cmp_rows(&t, &tr, "dfb", FKFIX_BF16, c->dfb + (int64_t)f * 8 * DIM, f * 8, 7, DIM);
  cr_assert_eq(c->bh_rows, steps);
  if (sampled) {
    char what[96];
    uint64_t draws = fk_state_query(p).draws;
    snprintf(what, sizeof what, "%s: the counter after the turn, %llu draws, the reference's %lld", name,
             (unsigned long long)draws, (long long)scalar(&tr, "draws"));
    fkm_judge(&t, what, draws == (uint64_t)scalar(&tr, "draws"), (double)draws, (double)scalar(&tr, "draws"));
  }
  /* the free frames' PCM through the detokenizer, frame by frame, then the flush */
  const fkfix_tensor *dc = fkfix_tensor_get(&tr.fx, "dt_codes");
  int nf = (int)dc->shape[1];
  float *pcm = calloc((size_t)(nf * 1920 + 480), 4);
  int64_t at = 0;
  fk_plan_set_trace(p, NULL, NULL);
  for (int f = 0; f < nf; f++) {
    int32_t codes[8];
    for (int k = 0; k < 8; k++) codes[k] = (int32_t)((const int64_t *)dc->data)[k * nf + f];
    fk_io io = { .rows = 1, .codes = codes, .pcm = pcm + at, .pcm_cap = nf * 1920 + 480 - at };
    cr_assert_eq(fk_run(p, FK_PROG_DETOK, &io, &e), FK_OK, "%s", e.message);
    at += io.pcm_count;
  }
  fk_io fl = { .pcm = pcm + at, .pcm_cap = nf * 1920 + 480 - at };
  cr_assert_eq(fk_run(p, FK_PROG_DETOK_FLUSH, &fl, &e), FK_OK, "%s", e.message);
  at += fl.pcm_count;
  cr_assert_eq(at, (int64_t)nf * 1920);
  fkm_cmp_full(&t, &tr, "pcm", FKFIX_F32, pcm, rep);
  free(pcm);
  free(c);
  fk_plan_destroy(p);
  fkt_models_free(&mm);
  fkt_audio_free(&a);
  fkm_trace_free(&tr);
  return t;
}

static fkm_tally turn(const char *name, int threads, perturb pert, FILE *rep) {
  return turn_of(name, "audio", threads, pert, rep);
}

static void passes(const char *name, int threads) {
  fkm_tally t = turn(name, threads, P_NONE, stdout);
  cr_assert_eq(t.failed, 0, "%s: %d of %d checks failed; first: %s", name, t.failed, t.checked, t.first);
  cr_log_info("%s (%d members): %d checks within their bounds", name, threads, t.checked);
}

Test(audio_trace, turn_seq_greedy, .timeout = 600) { passes("seq_greedy", 2); }
Test(audio_trace, turn_seq_sampled, .timeout = 600) { passes("seq_sampled", 2); }
Test(audio_trace, turn_inter_greedy, .timeout = 600) { passes("inter_greedy", 2); }
Test(audio_trace, turn_inter_sampled, .timeout = 600) { passes("inter_sampled", 2); }
Test(audio_trace, turn_team_sizes, .timeout = 900) {
  passes("seq_sampled", 1);
  passes("seq_sampled", 3);
}

static void caught(const char *name, perturb what, const char *label) {
  fkm_tally t = turn(name, 2, what, NULL);
  cr_assert_gt(t.failed, 0, "%s passed the %s trace", label, name);
  cr_log_info("%s: %d of %d checks fail; first: %s", label, t.failed, t.checked, t.first);
}

Test(audio_trace, perturb_codebook_order, .timeout = 600) { caught("seq_greedy", P_SWAP_CODEBOOKS, "codebooks 0 and 1 swapped"); }
Test(audio_trace, perturb_feedback_codebook, .timeout = 600) {
  caught("seq_greedy", P_WRONG_FEEDBACK, "feedback from the wrong codebook's table");
}
Test(audio_trace, perturb_cache_restart, .timeout = 600) { caught("inter_greedy", P_NO_RESTART, "cache not restarted per frame"); }
Test(audio_trace, perturb_offsets, .timeout = 600) { caught("seq_greedy", P_OFFSETS, "audio embedding offsets c * 2048"); }
Test(audio_trace, perturb_counter, .timeout = 600) { caught("seq_sampled", P_COUNTER, "the counter not committed"); }

/* the peaked variant (synth.h's tag audio_peaked: one shared depth table, damped writes): codebook
 * c's head scores codebook c-1's code highest, so the float64 margin requires most greedy codes */
Test(audio_trace, turn_seq_peaked, .timeout = 600) {
  fkm_tally t = turn_of("seq_peaked", "audio_peaked", 2, P_NONE, stdout);
  cr_assert_eq(t.failed, 0, "seq_peaked: %d of %d checks failed; first: %s", t.failed, t.checked, t.first);
  char path[512], err[512];
  snprintf(path, sizeof path, "%s/audio/seq_peaked.manifest", FKT_FIXTURE_DIR);
  fkm_trace tr;
  cr_assert_eq(fkm_trace_load(path, &tr, err, sizeof err), 0, "%s", err);
  const fkfix_tensor *cr = fkfix_tensor_get(&tr.fx, "code_required"), *tq = fkfix_tensor_get(&tr.fx, "tok_required");
  int64_t codes = 0, toks = 0;
  for (int64_t i = 0; i < cr->shape[0] * cr->shape[1]; i++) codes += ((const int64_t *)cr->data)[i];
  for (int64_t i = 0; i < tq->shape[0]; i++) toks += ((const int64_t *)tq->data)[i];
  cr_assert_gt(codes, 0, "the peaked turn requires codes");
  cr_log_info("seq_peaked: %d checks within their bounds; %lld of %lld codes and %lld of %lld tokens required equal",
              t.checked, (long long)codes, (long long)(cr->shape[0] * cr->shape[1]), (long long)toks,
              (long long)tq->shape[0]);
  fkm_trace_free(&tr);
}
