/* tests/model/test_model.c: the whole-model programs (FK_PROGRAMS_LM, FK_PROGRAMS_DETOK) end to
 * end, from stamps alone.
 *   lm_faithful, detok_faithful: the programs against the reference traces (fixtures/lfm2/,
 *     fixtures/detok/: transformers' Lfm2ForCausalLM and liquid-audio's LFM2AudioDetokenizer on the
 *     same synthetic weights) at every boundary: the embedding, every layer's output, the final
 *     norm, the logits (LM) or the head and the PCM (detokenizer), the KV caches and conv states
 *     after every call, and the greedy tokens where the float64 margin requires them. Bound per
 *     boundary: the manifest's (2 x torch-bf16's own distance to float64, its derivation there).
 *   team_sizes: the scenario's digests (every step's residual stream, logits, tokens, PCM, state)
 *     are the same for 1, 2, 3 and 4 members.
 *   same_on_aarch64: ... and the same under qemu-aarch64 (-cpu max, -cpu neoverse-n1).
 *   gemm_equals_row_by_row: a 53-token prompt in one call == one token per call, 9 frames in one
 *     call == one per call, bit for bit, on every target and team size; a flipped row is seen.
 *   turns_continue_exactly: a prompt in chunks, a snapshot moved into a fresh plan, then decode ==
 *     one plan end to end, bit for bit; detokenizer frames in chunks == frame by frame.
 *   perturb_*: the faithfulness gate fails when a carry is not committed, a KV slot is off by
 *     one, rows are swapped or the position skips; the digest gate sees a single flipped bit.
 *   quantized_faithful: desc.quantize q8 / q4 against the quantized traces (the float64 model over
 *     the same dequantized weights; the traces' block digests checked); quantized_same_everywhere:
 *     1..3 members, desc.quantize == GGUF blocks per matrix, a mixed-format plan, qemu-aarch64;
 *     quantized_q4k_same_everywhere: q4k's sessions likewise, a fast plan's == the exact one's;
 *     quantized_perturb_other_format: a plan of another format fails (q4) or is farther (q8). */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "fk_prog_detok.h"
#include "fk_prog_lm.h"
#include "model_desc.h"
#include "trace.h"
#include "../contract/contract.h"
#include "cmd.h"

enum { LM_CALLS = 9, LM_PROMPT = 12, DT_FRAMES = 12, DT_ROWS = 72, HMAX = 512, LMAX = 8 };
_Static_assert((int)DT_ROWS <= (int)FKM_CAP_ROWS && (int)HMAX <= (int)FKM_CAP_H && (int)LMAX <= (int)FKM_CAP_LAYERS,
               "fkm_capture holds the traces");

static fkt_models M;

static int cmp_desc(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x > y ? -1 : x < y ? 1 : 0;
}

static void setup(void) { cr_assert_eq(fkt_models_make(&M), 0); }
static void teardown(void) { fkt_models_free(&M); }

static fk_tier plan_tier = FK_TIER_EXACT; /* the tier of the plans the trace runs make */

static fk_plan *make_plan_q(uint32_t programs, int threads, fk_qformat quantize) {
  fk_plan_desc d = fkt_models_desc(&M, programs, threads);
  d.quantize = quantize;
  d.tier = plan_tier;
  fk_plan *p = NULL;
  fk_error err;
  fk_status s = fk_plan_create(&d, &p, &err);
  cr_assert_eq(s, FK_OK, "fk_plan_create: %s", err.message);
  return p;
}

static void run(fk_plan *p, fk_program prog, fk_io *io) {
  fk_error err;
  fk_status s = fk_run(p, prog, io, &err);
  cr_assert_eq(s, FK_OK, "fk_run(%s): %s", fk_program_name(prog), err.message);
}

static void load_trace(fkm_trace *tr, const char *rel) {
  char path[512], err[512];
  snprintf(path, sizeof path, "%s/%s", FKT_FIXTURE_DIR, rel);
  cr_assert_eq(fkm_trace_load(path, tr, err, sizeof err), 0, "%s", err);
}

static fk_plan *make_plan(uint32_t programs, int threads) { return make_plan_q(programs, threads, FK_QNONE); }

/* The format of a quantized trace, its weights checked (fkm_trace_check_qweights); FK_QNONE for the
 * bf16 traces, whose weights are checked as they are. */
static fk_qformat trace_weights(const fkm_trace *tr, const fkm_weights *w, int quantized) {
  char err[256];
  cr_assert_eq(fkm_trace_check_weights(tr, w, err, sizeof err), 0, "%s", err);
  fk_qformat q = FK_QNONE;
  if (quantized) cr_assert_eq(fkm_trace_check_qweights(tr, w, &q, err, sizeof err), 0, "%s", err);
  return q;
}

/* ---- the LM against its trace ---------------------------------------------------------------- */

/* Runs the 9 calls of LM trace `base` (lm: bf16 weights; lm_q8, lm_q4: quantized; teacher forced
 * with the trace's tokens) on a plan quantizing its weights as `plan_q` (-1: as the trace) and
 * judges every boundary; returns the tally. */
static fkm_tally lm_trace_q(const char *base, int plan_q, int threads, fkm_perturb what, int call, FILE *rep) {
  fkm_trace tr0;
  char rel0[64];
  snprintf(rel0, sizeof rel0, "lfm2/%s_c0.manifest", base);
  load_trace(&tr0, rel0);
  fk_qformat q = trace_weights(&tr0, &M.lm, strcmp(base, "lm") != 0);
  fkm_trace_free(&tr0);
  fk_plan *p = make_plan_q(FK_PROGRAMS_LM, threads, plan_q < 0 ? q : (fk_qformat)plan_q);
  fkm_capture *c = calloc(1, sizeof *c);
  c->what = what;
  c->call = call;
  fk_plan_set_trace(p, fkm_observe, c);
  fkm_tally t = { 0 };
  const fk_stack_rt *st = &fk_lm_of(p)->stack;
  int64_t h = st->h;
  for (int k = 0; k < LM_CALLS; k++) {
    char rel[64];
    snprintf(rel, sizeof rel, "lfm2/%s_c%d.manifest", base, k);
    fkm_trace tr;
    load_trace(&tr, rel);
    const fkfix_tensor *ids = fkfix_tensor_get(&tr.fx, "ids");
    int64_t rows = ids->shape[0];
    int32_t tok[LM_PROMPT];
    for (int64_t r = 0; r < rows; r++) tok[r] = (int32_t)((const int64_t *)ids->data)[r];
    float logits[1024];
    c->row0 = 0;
    c->cur = k;
    fk_io io = { .rows = rows, .tokens = tok, .logits = logits };
    run(p, k == 0 ? FK_PROG_LM_PREFILL : FK_PROG_LM_DECODE, &io);
    fkm_cmp_full(&t, &tr, "emb", FKFIX_BF16, c->emb, rep);
    for (int i = 0; i < st->layers; i++) {
      char b[16];
      snprintf(b, sizeof b, "h%d", i);
      fkm_cmp_full(&t, &tr, b, FKFIX_BF16, c->hid[i], rep);
    }
    fkm_cmp_rows(&t, &tr, "norm", FKFIX_F32, c->norm, rows - 1, 1, h);
    fkm_cmp_full(&t, &tr, "logits", FKFIX_F32, logits, rep);
    /* state after the call */
    int64_t pos = st->pos;
    for (int i = 0; i < st->layers; i++) {
      const fk_layer_rt *l = &st->layer[i];
      char b[16];
      if (l->kind == FK_LAYER_CONV) {
        snprintf(b, sizeof b, "bx%d", i);
        fkm_cmp_full(&t, &tr, b, FKFIX_BF16, l->carry, rep);
      } else {
        snprintf(b, sizeof b, "k%d", i);
        fkm_cmp_rows(&t, &tr, b, FKFIX_BF16, l->kc, 0, pos * st->kv, 64);
        snprintf(b, sizeof b, "v%d", i);
        fkm_cmp_rows(&t, &tr, b, FKFIX_BF16, l->vc, 0, pos * st->kv, 64);
      }
    }
    int64_t need = 0;
    float labs = 0;
    fkfix_scalar_i64(&tr.fx, "tok_required", &need);
    fkfix_scalar_f32(&tr.fx, "logits_abs", &labs);
    fkm_judge_token(&t, tr.fx.casename, io.next, ((const int64_t *)fkfix_tensor_get(&tr.fx, "tok")->data)[0], (int)need,
                    fkm_trace_ref(&tr, "logits", 1)->data, labs);
    fkm_trace_free(&tr);
  }
  fk_plan_destroy(p);
  free(c);
  return t;
}

static fkm_tally lm_against_trace(int threads, fkm_perturb what, int call, FILE *rep) {
  return lm_trace_q("lm", -1, threads, what, call, rep);
}

Test(model, lm_faithful, .init = setup, .fini = teardown, .timeout = 300) {
  fkm_tally t = lm_against_trace(2, FKM_PERTURB_NONE, 0, stdout);
  cr_assert_eq(t.failed, 0, "%d of %d boundaries outside their bound; first: %s", t.failed, t.checked, t.first);
  cr_log_info("lm: %d boundaries within their bounds over 9 calls", t.checked);
}

/* ---- sampled tokens against the reference's distribution -------------------------------------- */

static const void *tensor_of(const fkm_trace *t, const char *name) {
  const fkfix_tensor *x = fkfix_tensor_get(&t->fx, name);
  cr_assert(x, "%s: no tensor %s", t->fx.casename, name);
  return x->data;
}

/* The 9 LM calls again, each drawing its token (temperature 1, top-k 50) with the plan's
 * generator. The reference of a draw is the inverse CDF, in double, of transformers' warpers
 * (s = l / T, s < kth removed, softmax) over the float64 run's logits at the draw's u (the
 * contract's splitmix64 of seed and counter: the u stream the sample fixtures check against
 * Python). Our logits differ from float64's by at most d per logit (measured; the faithful test
 * bounds them): every s moves by at most dd = d / T, every cumulative probability by at most
 * e^(2 dd) - 1; a token kept by one side only (our k-th value, from our logits, against the
 * reference's) moves it by at most its mass, U in all. The drawn token must be one whose interval,
 * widened by W = e^(2 dd) - 1 + U, holds u (a window of a few of the 50 kept tokens). The same
 * window at the u of a counter one ahead misses most draws: the gate sees an uncommitted or
 * skipped counter. */
Test(model, lm_sampled_tokens_follow_the_reference, .init = setup, .fini = teardown, .timeout = 300) {
  enum { SEED = 0x5eed, K = 50 };
  static const fk_sampling smp = { 1.0f, K };
  const double T = 1.0;
  fk_plan *p = make_plan(FK_PROGRAMS_LM, 2);
  cr_assert_eq(fk_sampler_seed(p, SEED), FK_OK);
  int equal = 0, late_caught = 0, distinct = 0, last = -1;
  for (int k = 0; k < LM_CALLS; k++) {
    char rel[64];
    snprintf(rel, sizeof rel, "lfm2/lm_c%d.manifest", k);
    fkm_trace tr;
    load_trace(&tr, rel);
    const fkfix_tensor *ids = fkfix_tensor_get(&tr.fx, "ids"), *ref = fkm_trace_ref(&tr, "logits", 1);
    int64_t rows = ids->shape[0], n = ref->shape[1];
    int32_t tok[LM_PROMPT];
    for (int64_t r = 0; r < rows; r++) tok[r] = (int32_t)((const int64_t *)ids->data)[r];
    float logits[1024];
    fk_io io = { .rows = rows, .tokens = tok, .logits = logits, .sampling = &smp };
    run(p, k == 0 ? FK_PROG_LM_PREFILL : FK_PROG_LM_DECODE, &io);
    cr_assert_eq(fk_state_query(p).draws, (uint64_t)k + 1, "the counter commits once per draw");
    const double *l = ref->data;
    double s[1024] = { 0 }, sorted[1024] = { 0 }, ours[1024] = { 0 }, d = 0, m = -INFINITY;
    for (int64_t i = 0; i < n; i++) {
      s[i] = l[i] / T;
      sorted[i] = s[i];
      ours[i] = (double)(logits[i] / (float)T); /* the leaf's s, from our logits */
      d = fmax(d, fabs((double)logits[i] - l[i]));
      m = fmax(m, s[i]);
    }
    qsort(sorted, (size_t)n, sizeof sorted[0], cmp_desc);
    double kth = sorted[K - 1];
    memcpy(sorted, ours, sizeof ours);
    qsort(sorted, (size_t)n, sizeof sorted[0], cmp_desc);
    double kth_ours = sorted[K - 1], dd = d / T, S = 0, U = 0, C[1025];
    C[0] = 0;
    for (int64_t i = 0; i < n; i++) {
      double w = s[i] >= kth ? exp(s[i] - m) : 0.0;
      S += w;
      C[i + 1] = S;
      if ((s[i] >= kth) != (ours[i] >= kth_ours)) U += exp(s[i] - m); /* kept by one side only */
    }
    /* the trace records the draw: its u (Python's splitmix64) and the reference's token */
    const double u_rec = ((const double *)tensor_of(&tr, "sample_u"))[0];
    const int64_t tok_rec = ((const int64_t *)tensor_of(&tr, "sample_tok"))[0];
    cr_assert_eq((double)fkc_sample_u(SEED, (uint64_t)k), u_rec, "call %d: the contract's u differs from the trace's", k);
    double W = expm1(2 * dd) + U / S, u = u_rec,
           u_late = (double)fkc_sample_u(SEED, (uint64_t)k + 1); /* a counter one ahead: the perturbation */
    int want = -1, nset = 0, member = 0, member_late = 0;
    for (int64_t i = 0; i < n; i++) {
      if (s[i] < kth && ours[i] < kth_ours) continue;
      if (want < 0 && s[i] >= kth && u * S < C[i + 1]) want = (int)i;
      if (C[i] / S - W <= u && u <= C[i + 1] / S + W) {
        nset++;
        member |= io.next == i;
      }
      if (C[i] / S - W <= u_late && u_late <= C[i + 1] / S + W) member_late |= io.next == i;
    }
    cr_log_info("call %d: d %.4g W %.4g (U/S %.4g) u %.4f: %d tokens in the window, drew %d, the reference %d", k, d,
                W, U / S, u, nset, (int)io.next, want);
    cr_assert_eq(want, tok_rec, "call %d: the inverse CDF here (%d) is not the trace's sampled token (%lld)", k, want,
                 (long long)tok_rec);
    cr_assert(member, "call %d: drew %d, outside the tokens whose CDF interval (widened by %.3g) holds u = %.9f "
              "(the reference's inverse CDF: %d)", k, (int)io.next, W, u, want);
    cr_assert_leq(nset, 12, "call %d: a window of %d of the %d kept tokens would not see a wrong draw", k, nset, K);
    equal += io.next == want;
    late_caught += !member_late;
    distinct += io.next != last;
    last = io.next;
    fkm_trace_free(&tr);
  }
  fk_plan_destroy(p);
  cr_assert_geq(late_caught, 5, "the window gate saw a counter one ahead in only %d of 9 draws", late_caught);
  cr_assert_geq(distinct, 3, "the draws did not spread (%d distinct runs)", distinct);
  cr_log_info("9 sampled draws inside the reference's CDF window, %d equal to its inverse CDF token; a counter one "
              "ahead leaves the window in %d of 9", equal, late_caught);
}

/* ---- the detokenizer against its trace ---------------------------------------------------------- */

/* The detokenizer trace `base` (detok_t12; detok_q8_t12, detok_q4_t12: quantized) on a plan
 * quantizing as plan_q (-1: as the trace). */
static fkm_tally detok_trace_q(const char *base, int plan_q, int threads, const int *chunks, fkm_perturb what,
                               int call, FILE *rep) {
  fkm_trace tr;
  char rel[64], err[256];
  snprintf(rel, sizeof rel, "detok/%s.manifest", base);
  load_trace(&tr, rel);
  fk_qformat q = trace_weights(&tr, &M.detok, strcmp(base, "detok_t12") != 0);
  fk_plan *p = make_plan_q(FK_PROGRAMS_DETOK, threads, plan_q < 0 ? q : (fk_qformat)plan_q);
  fkm_capture *c = calloc(1, sizeof *c);
  c->what = what;
  c->call = call;
  fk_plan_set_trace(p, fkm_observe, c);
  static float pcm[DT_FRAMES * 1920 + 480];
  fkm_tally t = { 0 };
  int64_t n = fkm_detok_trace(p, &tr, "", chunks, c, &t, pcm, DT_FRAMES * 1920 + 480, rep, err, sizeof err);
  cr_assert_eq(n, DT_FRAMES * 1920, "PCM samples %lld: %s", (long long)n, n < 0 ? err : "");
  fkm_trace_free(&tr);
  fk_plan_destroy(p);
  free(c);
  return t;
}

static fkm_tally detok_against_trace(int threads, const int *chunks, fkm_perturb what, int call, FILE *rep) {
  return detok_trace_q("detok_t12", -1, threads, chunks, what, call, rep);
}

static const int ONE_BY_ONE[DT_FRAMES] = { 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1 };
static const int CHUNKS[] = { 1, 3, 2, 4, 2 };

Test(model, detok_faithful, .init = setup, .fini = teardown, .timeout = 300) {
  fkm_tally t = detok_against_trace(2, ONE_BY_ONE, FKM_PERTURB_NONE, 0, stdout);
  cr_assert_eq(t.failed, 0, "%d of %d boundaries outside their bound; first: %s", t.failed, t.checked, t.first);
  cr_log_info("detok: %d boundaries within their bounds over 12 frames", t.checked);
}

/* ---- quantized weights (desc.quantize) against the quantized traces ------------------------------
 * fixtures/lfm2/lm_q8_*, lm_q4_*, fixtures/detok/detok_q8_t12, detok_q4_t12: the float64 model over the
 * same dequantized weights (gguf's dequantization of the RNE blocks, whose digests are checked). */

Test(model, quantized_faithful, .init = setup, .fini = teardown, .timeout = 600) {
  static const char *lm[] = { "lm_q8", "lm_q4" }, *dt[] = { "detok_q8_t12", "detok_q4_t12" };
  for (int i = 0; i < 2; i++) {
    fkm_tally t = lm_trace_q(lm[i], -1, 2, FKM_PERTURB_NONE, 0, stdout);
    cr_assert_eq(t.failed, 0, "%s: %d of %d boundaries outside their bound; first: %s", lm[i], t.failed, t.checked,
                 t.first);
    fkm_tally u = detok_trace_q(dt[i], -1, 2, ONE_BY_ONE, FKM_PERTURB_NONE, 0, stdout);
    cr_assert_eq(u.failed, 0, "%s: %d of %d boundaries outside their bound; first: %s", dt[i], u.failed, u.checked,
                 u.first);
    cr_log_info("%s: %d boundaries (worst %.3g of the bound), %s: %d boundaries (worst %.3g) within their bounds",
                lm[i], t.checked, t.worst, dt[i], u.checked, u.worst);
  }
}

/* The quantized sessions (fk_model_scenario quant: LM and detokenizer, q8 then q4) give the same
 * bits for 1, 2 and 3 members, by desc.quantize or by GGUF blocks per matrix, and under qemu-aarch64 (q8
 * on -cpu max: the bfcvt stamps; q4 on neoverse-n1: neon; one format each, qemu runs the byte
 * widening slowly; both stamps of both formats are compared with the contract in tests/leaves); a
 * plan mixing formats (layers 0..2 q, the rest bf16) gives other bits than the all-quantized one (on
 * x86_64: its stamps are the ones the two AArch64 runs and same_on_aarch64 compare). */
Test(model, quantized_same_everywhere, .timeout = 1200) {
  char cmd[1024];
  snprintf(cmd, sizeof cmd, "%s 2 quant", FKT_MODEL_SCENARIO_HOST);
  char *host = fkt_run_cmd(cmd);
  static const char *native[] = { "1 quant", "3 quant", "2 quant blocks", "1 quant blocks" };
  for (int i = 0; i < 4; i++) {
    snprintf(cmd, sizeof cmd, "%s %s", FKT_MODEL_SCENARIO_HOST, native[i]);
    char *o = fkt_run_cmd(cmd);
    cr_assert_str_eq(o, host, "%s:\n%s\n2 quant:\n%s", native[i], o, host);
    free(o);
  }
  snprintf(cmd, sizeof cmd, "%s 2 quant mixed q8", FKT_MODEL_SCENARIO_HOST);
  char *mixed = fkt_run_cmd(cmd);
  cr_assert(!strstr(host, strchr(mixed, '\n') + 1), "the mixed plan gave the all-quantized bits");
  free(mixed);
  static const struct { const char *cpu, *args; } arm[] = { { "max", "quant desc q8" }, { "neoverse-n1", "quant desc q4" } };
  for (int i = 0; i < 2; i++) {
    snprintf(cmd, sizeof cmd, "%s 2 %s", FKT_MODEL_SCENARIO_HOST, arm[i].args);
    char *want = fkt_run_cmd(cmd);
    cr_assert(strstr(host, want), "%s is not a part of the two formats' run:\n%s", arm[i].args, want);
    snprintf(cmd, sizeof cmd, "%s -cpu %s %s 2 %s", FKH_QEMU, arm[i].cpu, FKT_MODEL_SCENARIO_AARCH64, arm[i].args);
    char *got = fkt_run_cmd(cmd);
    cr_assert_str_eq(got, want, "aarch64 (-cpu %s) %s:\n%s\nhost:\n%s", arm[i].cpu, arm[i].args, got, want);
    free(got);
    free(want);
  }
  cr_log_info("quantized sessions, the same bits on 1..3 members, desc.quantize == GGUF blocks, aarch64 == x86_64:\n%s",
              host);
  free(host);
}

/* q4k's sessions likewise: the same bits for 1, 2 and 3 members, by desc.quantize or by GGUF blocks, in
 * a fast plan as in an exact one (q4k's GEMVs run in the exact tier in both; every other phase of these
 * programs is exact-tier), under qemu-aarch64 -cpu max (the bfcvt stamps; the LM session alone: qemu
 * runs the detokenizer's q4k GEMMs for minutes; the leaf suite compares every q4k stamp, GEMM shapes
 * included, with the contract), and not q4's bits. */
static char *without_headers(char *o);
Test(model, quantized_q4k_same_everywhere, .timeout = 1200) {
  char cmd[1024];
  snprintf(cmd, sizeof cmd, "%s 2 quant desc q4k", FKT_MODEL_SCENARIO_HOST);
  char *host = fkt_run_cmd(cmd);
  static const char *native[] = { "1 quant blocks q4k", "3 quant desc q4k" };
  for (int i = 0; i < 2; i++) {
    snprintf(cmd, sizeof cmd, "%s %s", FKT_MODEL_SCENARIO_HOST, native[i]);
    char *o = fkt_run_cmd(cmd);
    cr_assert_str_eq(o, host, "%s:\n%s\n2 quant desc q4k:\n%s", native[i], o, host);
    free(o);
  }
  snprintf(cmd, sizeof cmd, "%s 2 quant desc q4k fast", FKT_MODEL_SCENARIO_HOST);
  char *fast = without_headers(fkt_run_cmd(cmd)), *exact = without_headers(strdup(host));
  cr_assert_str_eq(fast, exact, "q4k in a fast plan:\n%s\nexact:\n%s", fast, exact);
  free(fast);
  snprintf(cmd, sizeof cmd, "%s 2 quant desc q4", FKT_MODEL_SCENARIO_HOST);
  char *q4 = without_headers(fkt_run_cmd(cmd));
  cr_assert(strcmp(q4, exact) != 0, "q4k gave q4's bits");
  free(q4);
  free(exact);
  snprintf(cmd, sizeof cmd, "%s 2 quant desc q4k exact lm", FKT_MODEL_SCENARIO_HOST);
  char *want = fkt_run_cmd(cmd);
  cr_assert(strstr(host, want), "the LM session is not a part of the q4k run:\n%s", want);
  snprintf(cmd, sizeof cmd, "%s -cpu max %s 2 quant desc q4k exact lm", FKH_QEMU, FKT_MODEL_SCENARIO_AARCH64);
  char *got = fkt_run_cmd(cmd);
  cr_assert_str_eq(got, want, "aarch64 (-cpu max) q4k:\n%s\nhost:\n%s", got, want);
  free(got);
  free(want);
  cr_log_info("q4k sessions, the same bits on 1..3 members, desc.quantize == GGUF blocks, fast == exact, aarch64 == "
              "x86_64:\n%s", host);
  free(host);
}

/* The gates tell the formats apart. q4's weights are far enough from q8's and bf16's that a plan of
 * another format fails a q4 trace, and a q4 plan fails the others (144 of 162 boundaries). q8 moves the
 * model about as far as bf16 rounding does (per block, |q * d - w| <= d / 2 = max |w| / 254): a q8 plan
 * stays within the bounds of the bf16 trace and a bf16 plan within the q8 trace's (measured: 0.93 and
 * 0.77 of the bound), so there the gate is relative: each trace is closer to the plan of its own
 * format (the runs are exact, so the comparison is the same on every run). The quantized weights'
 * bits are checked by the traces' qweight digests (fkm_trace_check_qweights). */
static double worst_of(const char *trace, int plan, int expect_fail) {
  fkm_tally t = lm_trace_q(trace, plan, 2, FKM_PERTURB_NONE, 0, NULL);
  if (expect_fail)
    cr_assert_gt(t.failed, 0, "%s on a plan of format %d: all %d boundaries within bounds", trace, plan, t.checked);
  else
    cr_assert_eq(t.failed, 0, "%s on a plan of format %d: %d boundaries fail (%s)", trace, plan, t.failed, t.first);
  cr_log_info("%s, plan format %d: %d of %d boundaries fail, worst %.3g of the bound", trace, plan, t.failed, t.checked,
              t.worst);
  return t.worst;
}

Test(model, quantized_perturb_other_format, .init = setup, .fini = teardown, .timeout = 600) {
  worst_of("lm_q4", FK_Q8, 1);
  worst_of("lm_q4", FK_QNONE, 1);
  worst_of("lm_q8", FK_Q4, 1);
  worst_of("lm", FK_Q4, 1);
  double own = worst_of("lm_q8", -1, 0), bf16 = worst_of("lm_q8", FK_QNONE, 0);
  cr_assert_gt(bf16, own, "the q8 trace is not closer to the q8 plan (%.3g) than to the bf16 plan (%.3g)", own, bf16);
  double own16 = worst_of("lm", -1, 0), q8 = worst_of("lm", FK_Q8, 0);
  cr_assert_gt(q8, own16, "the bf16 trace is not closer to the bf16 plan (%.3g) than to the q8 plan (%.3g)", own16, q8);
}

/* The quantized fast tier against the quantized traces: the activations' quantization moves each
 * GEMV by up to sum |w| d_x / 2 (relative 1/254 of a block's largest |x|) on top of the f32
 * evaluation; the traces' bound, max(2 e_ref, 2^-8), is the exact plans' yardstick. */
Test(model, quantized_fast_faithful, .init = setup, .fini = teardown, .timeout = 600) {
  if (!(fk_cpu_features() & FK_CPU_AVX512VNNI)) cr_skip_test("this CPU has no AVX512-VNNI");
  plan_tier = FK_TIER_FAST;
  static const char *lm[] = { "lm_q8", "lm_q4" }, *dt[] = { "detok_q8_t12", "detok_q4_t12" };
  for (int i = 0; i < 2; i++) {
    fkm_tally t = lm_trace_q(lm[i], -1, 2, FKM_PERTURB_NONE, 0, stdout);
    fkm_tally u = detok_trace_q(dt[i], -1, 2, ONE_BY_ONE, FKM_PERTURB_NONE, 0, stdout);
    cr_log_info("fast %s: %d of %d boundaries outside (worst %.3g of the bound; first: %s); %s: %d of %d (worst %.3g)",
                lm[i], t.failed, t.checked, t.worst, t.first, dt[i], u.failed, u.checked, u.worst);
    cr_assert_eq(t.failed, 0, "fast %s: %d of %d boundaries outside their bound; first: %s", lm[i], t.failed,
                 t.checked, t.first);
    cr_assert_eq(u.failed, 0, "fast %s: %d of %d boundaries outside their bound; first: %s", dt[i], u.failed,
                 u.checked, u.first);
  }
  plan_tier = FK_TIER_EXACT;
}

/* The quantized fast tier (activations quantized per block, integer dot products: VPDPBUSD, SDOT)
 * is deterministic as well: the same bits on 1..3 members, by desc.quantize and by GGUF blocks, and
 * under qemu-aarch64 -cpu neoverse-n1 (the dotprod stamps: an Armv8.2 core without FEAT_I8MM or
 * FEAT_BF16) as on x86_64 (avx512vnni), and (where the CPU has AVX-VNNI) with FK_CPU_MASK keeping
 * AVX2, FMA, F16C and AVX-VNNI only (the avxvnni stamps, ymm pairs; the other leaves' avx2 ones),
 * and with AVX2, FMA and F16C only (the avx2madd stamps: VPMADDUBSW); not the exact tier's bits. A
 * CPU without F16C is refused at readiness, naming it. */
static char *without_headers(char *o) { /* the session lines only: "quantize q8[ fast]" dropped */
  char *w = o;
  for (char *r = o; *r;) {
    char *e = strchr(r, '\n');
    size_t n = e ? (size_t)(e - r + 1) : strlen(r);
    if (strncmp(r, "quantize ", 9) != 0) { memmove(w, r, n); w += n; }
    r += n;
  }
  *w = 0;
  return o;
}

Test(model, quantized_fast_same_everywhere, .init = setup, .fini = teardown, .timeout = 1200) {
  if (!(fk_cpu_features() & FK_CPU_AVX512VNNI)) cr_skip_test("this CPU has no AVX512-VNNI");
  char cmd[1024];
  snprintf(cmd, sizeof cmd, "%s 2 quant desc both fast", FKT_MODEL_SCENARIO_HOST);
  char *host = fkt_run_cmd(cmd);
  static const char *native[] = { "1 quant desc both fast", "3 quant desc both fast", "2 quant blocks both fast" };
  for (int i = 0; i < 3; i++) {
    snprintf(cmd, sizeof cmd, "%s %s", FKT_MODEL_SCENARIO_HOST, native[i]);
    char *o = fkt_run_cmd(cmd);
    cr_assert_str_eq(o, host, "%s:\n%s\n2 quant desc both fast:\n%s", native[i], o, host);
    free(o);
  }
  snprintf(cmd, sizeof cmd, "%s 2 quant desc both exact", FKT_MODEL_SCENARIO_HOST);
  char *exact = without_headers(fkt_run_cmd(cmd)), *fast = without_headers(strdup(host));
  cr_assert(strcmp(exact, fast) != 0, "the fast tier gave the exact tier's bits");
  free(exact);
  free(fast);
  snprintf(cmd, sizeof cmd, "%s -cpu neoverse-n1 %s 2 quant desc both fast", FKH_QEMU, FKT_MODEL_SCENARIO_AARCH64);
  char *got = fkt_run_cmd(cmd);
  cr_assert_str_eq(got, host, "aarch64 (-cpu neoverse-n1, dotprod):\n%s\nhost:\n%s", got, host);
  free(got);
  /* the ymm variants, each alone under FK_CPU_MASK where the CPU has its features */
  const struct { uint64_t mask; const char *what; } ymm[] = {
    { FK_CPU_AVX2 | FK_CPU_FMA | FK_CPU_F16C | FK_CPU_AVXVNNI, "AVX2, FMA, F16C, AVX-VNNI (avxvnni)" },
    { FK_CPU_AVX2 | FK_CPU_FMA | FK_CPU_F16C, "AVX2, FMA, F16C (avx2madd)" },
  };
  int ran[2];
  for (int v = 0; v < 2; v++) {
    ran[v] = (fk_cpu_features() & ymm[v].mask) == ymm[v].mask;
    if (!ran[v]) continue;
    snprintf(cmd, sizeof cmd, "FK_CPU_MASK=%llx %s 2 quant desc both fast", (unsigned long long)ymm[v].mask,
             FKT_MODEL_SCENARIO_HOST);
    got = fkt_run_cmd(cmd);
    cr_assert_str_eq(got, host, "FK_CPU_MASK: %s:\n%s\nhost:\n%s", ymm[v].what, got, host);
    free(got);
  }
  const int avxvnni = ran[0], avx2madd = ran[1];
  /* no VNNI of either width runs avx2madd; without F16C too the fast plan with quantized weights is
   * refused, naming what the narrowest stamp (avx2madd) needs */
  fk_plan_desc d = fkt_models_desc(&M, FK_PROGRAMS_LM, 1);
  d.tier = FK_TIER_FAST;
  d.quantize = FK_Q8;
  d.forbid_features = FK_CPU_AVX512VNNI | FK_CPU_AVXVNNI;
  fk_plan *p = NULL;
  fk_error err;
  cr_assert_eq(fk_plan_create(&d, &p, &err), avx2madd ? FK_OK : FK_EUNSUPPORTED, "%s", err.message);
  fk_plan_destroy(p);
  p = NULL;
  d.forbid_features = FK_CPU_AVX512VNNI | FK_CPU_AVXVNNI | FK_CPU_F16C;
  cr_assert_eq(fk_plan_create(&d, &p, &err), FK_EUNSUPPORTED);
  cr_assert(strstr(err.message, "avx2madd") && strstr(err.message, "f16c"), "%s", err.message);
  /* every matrix quantized: the bf16 dot product is not needed (no bf16 GEMV stamp is resolved; an
   * AArch64 core with FEAT_DotProd and no FEAT_BF16, as neoverse-n1 above); a bf16 matrix needs it */
  d.forbid_features = FK_CPU_AVX512BF16;
  cr_assert_eq(fk_plan_create(&d, &p, &err), FK_OK, "%s", err.message);
  fk_plan_destroy(p);
  p = NULL;
  d.quantize = FK_QNONE;
  cr_assert_eq(fk_plan_create(&d, &p, &err), FK_EUNSUPPORTED);
  cr_assert(strstr(err.message, "avx512bf16"), "%s", err.message);
  cr_log_info("quantized fast sessions, the same bits on 1..3 members, desc == blocks, aarch64 (dotprod) == x86_64 "
              "(avx512vnni)%s%s, not the exact bits; without VNNI and F16C: %s\n%s", avxvnni ? " == avxvnni" : "",
              avx2madd ? " == avx2madd" : "", err.message,
              host);
  free(host);
}

/* ---- perturbations: the gates see errors ------------------------------------------------------ */

Test(model, perturb_carry_not_committed, .init = setup, .fini = teardown, .timeout = 300) {
  fkm_tally t = lm_against_trace(2, FKM_PERTURB_CARRY, 0, NULL);
  cr_assert_gt(t.failed, 0, "a lost conv carry passed the LM trace");
  cr_log_info("lm, carry of layer 0 lost at the prefill: %d of %d boundaries fail (%s)", t.failed, t.checked, t.first);
}

Test(model, perturb_kv_slot_off_by_one, .init = setup, .fini = teardown, .timeout = 300) {
  fkm_tally t = detok_against_trace(2, ONE_BY_ONE, FKM_PERTURB_KV_SLOT, 3, NULL);
  cr_assert_gt(t.failed, 0, "K one slot late passed the detokenizer trace");
  cr_log_info("detok, K one slot late at frame 3: %d of %d fail (%s)", t.failed, t.checked, t.first);
  t = lm_against_trace(2, FKM_PERTURB_KV_SLOT, 0, NULL);
  cr_assert_gt(t.failed, 0, "K one slot late passed the LM trace");
}

Test(model, perturb_rows_swapped, .init = setup, .fini = teardown, .timeout = 300) {
  fkm_tally t = lm_against_trace(2, FKM_PERTURB_SWAP_ROWS, 0, NULL);
  cr_assert_gt(t.failed, 0, "swapped prompt rows passed the LM trace");
  t = detok_against_trace(2, CHUNKS, FKM_PERTURB_SWAP_ROWS, 1, NULL); /* a call of 3 frames: rows of two frames swap */
  cr_assert_gt(t.failed, 0, "swapped rows passed the detokenizer trace");
}

Test(model, perturb_position_skipped, .init = setup, .fini = teardown, .timeout = 300) {
  /* the position cursor one ahead after the prefill: RoPE and the causal window of every decode
   * step are off by one */
  fk_plan *p = make_plan(FK_PROGRAMS_LM, 2);
  int32_t tok[LM_PROMPT];
  fkm_trace tr;
  load_trace(&tr, "lfm2/lm_c0.manifest");
  const fkfix_tensor *ids = fkfix_tensor_get(&tr.fx, "ids");
  for (int r = 0; r < LM_PROMPT; r++) tok[r] = (int32_t)((const int64_t *)ids->data)[r];
  fkm_trace_free(&tr);
  fk_io io = { .rows = LM_PROMPT, .tokens = tok };
  run(p, FK_PROG_LM_PREFILL, &io);
  fk_lm_of(p)->stack.pos++;
  load_trace(&tr, "lfm2/lm_c1.manifest");
  ids = fkfix_tensor_get(&tr.fx, "ids");
  tok[0] = (int32_t)((const int64_t *)ids->data)[0];
  float logits[1024];
  io = (fk_io){ .rows = 1, .tokens = tok, .logits = logits };
  run(p, FK_PROG_LM_DECODE, &io);
  fkm_tally t = { 0 };
  fkm_cmp_full(&t, &tr, "logits", FKFIX_F32, logits, NULL);
  fkm_trace_free(&tr);
  fk_plan_destroy(p);
  cr_assert_gt(t.failed, 0, "a skipped position passed the LM trace's logits");
}

/* ---- bit identity: team sizes, ISAs --------------------------------------------------------- */


Test(model, team_sizes, .timeout = 600) {
  char cmd[1024];
  snprintf(cmd, sizeof cmd, "%s 1", FKT_MODEL_SCENARIO_HOST);
  char *one = fkt_run_cmd(cmd);
  for (int t = 2; t <= 4; t++) {
    snprintf(cmd, sizeof cmd, "%s %d", FKT_MODEL_SCENARIO_HOST, t);
    char *other = fkt_run_cmd(cmd);
    cr_assert_str_eq(other, one, "%d members:\n%s\n1 member:\n%s", t, other, one);
    free(other);
  }
  cr_log_info("1..4 members, the same bits:\n%s", one);
  free(one);
}

Test(model, same_on_aarch64, .timeout = 1200) {
  char cmd[1024];
  snprintf(cmd, sizeof cmd, "%s 2", FKT_MODEL_SCENARIO_HOST);
  char *host = fkt_run_cmd(cmd);
  static const char *cpus[] = { "max", "neoverse-n1" };
  for (int i = 0; i < 2; i++) {
    snprintf(cmd, sizeof cmd, "%s -cpu %s %s 2", FKH_QEMU, cpus[i], FKT_MODEL_SCENARIO_AARCH64);
    char *arm = fkt_run_cmd(cmd);
    cr_assert_str_eq(arm, host, "aarch64 (-cpu %s):\n%s\nhost:\n%s", cpus[i], arm, host);
    free(arm);
  }
  cr_log_info("aarch64 (qemu -cpu max, neoverse-n1) == x86_64:\n%s", host);
  free(host);
}

/* The GEMM path (prompts and frames of more than 4 rows: the packed forms' blocks of rows, calls of
 * up to 24 rows, weights in L2 blocks) against row by row (fkt_session_gemm: an LM prompt of 53
 * tokens in one call vs one per call, 9 detokenizer frames in one call vs one per call), on every
 * target: x86_64 avx512 and avx2 (AVX-512F forbidden) exact and avx512bf16 fast on 1..4 members;
 * under qemu-aarch64 neon (-cpu neoverse-n1) and bfcvt (-cpu max) exact, bf16 fast (-cpu max; an
 * LM prompt of 29 tokens and one frame there: qemu's BF16 is slow).
 * The exact tier's digests are the same on every target and team size; the fast tier's on every
 * team size. The gate: a bit flipped in one row of the one-call run is seen. */
Test(model, gemm_equals_row_by_row, .timeout = 1200) {
  static const struct { const char *tier, *forbid, *label; } host[] = {
    { "exact", "0", "avx512 exact" }, { "exact", "4", "avx2 exact" }, { "fast", "0", "avx512bf16 fast" } };
  char cmd[1024], *exact = NULL;
  for (int v = 0; v < 3; v++) {
    char *one = NULL;
    for (int t = 1; t <= 4; t++) {
      snprintf(cmd, sizeof cmd, "%s %d gemm %s %s", FKT_MODEL_SCENARIO_HOST, t, host[v].tier, host[v].forbid);
      char *out = fkt_run_cmd(cmd);
      cr_assert(strstr(out, "gemm lm 53 rows: one call ==") && strstr(out, "gemm detok 54 rows: one call =="),
                "%s, %d members:\n%s", host[v].label, t, out);
      if (!one) one = out;
      else {
        cr_assert_str_eq(out, one, "%s: %d members:\n%s\n1 member:\n%s", host[v].label, t, out, one);
        free(out);
      }
    }
    if (v == 0) exact = one;
    else {
      if (v == 1) cr_assert_str_eq(one, exact, "avx2 exact:\n%s\navx512 exact:\n%s", one, exact);
      free(one);
    }
  }
  /* under qemu (slow) the runs are shorter: 29 tokens (calls of 24 + 5 rows), 5 frames (30 rows:
   * 24 + 6) and, fast, 1 frame */
  snprintf(cmd, sizeof cmd, "%s 2 gemm exact 0 -1 29 5", FKT_MODEL_SCENARIO_HOST);
  char *exact_short = fkt_run_cmd(cmd);
  static const struct { const char *cpu, *args, *label; int threads; } arm[] = {
    { "neoverse-n1", "exact 0 -1 29 5", "neon exact", 2 }, { "max", "exact 0 -1 29 5", "bfcvt exact", 2 },
    { "max", "fast 0 -1 29 1", "bf16 fast", 1 } };
  for (int v = 0; v < 3; v++) {
    snprintf(cmd, sizeof cmd, "%s -cpu %s %s %d gemm %s", FKH_QEMU, arm[v].cpu, FKT_MODEL_SCENARIO_AARCH64,
             arm[v].threads, arm[v].args);
    char *out = fkt_run_cmd(cmd), *want = exact_short;
    if (v < 2) cr_assert_str_eq(out, want, "aarch64 %s:\n%s\nx86_64:\n%s", arm[v].label, out, want);
    else cr_assert(strstr(out, "gemm lm 29 rows: one call ==") && strstr(out, "gemm detok 6 rows: one call =="),
                   "aarch64 %s:\n%s", arm[v].label, out);
    free(out);
  }
  free(exact_short);
  /* the gate: row 30 (the second call of 24 rows inside) flipped in the one-call run */
  snprintf(cmd, sizeof cmd, "%s 2 gemm exact 0 30", FKT_MODEL_SCENARIO_HOST);
  FILE *f = popen(cmd, "r");
  cr_assert(f, "popen %s", cmd);
  char line[512] = { 0 };
  cr_assert(fgets(line, sizeof line, f), "%s printed nothing", cmd);
  int st = pclose(f);
  cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 1, "%s: exit %d, want 1 (a difference)", cmd, st);
  cr_assert(strstr(line, "(the first: row 30)"), "%s: %s", cmd, line);
  cr_log_info("one call == row by row on avx512, avx2, avx512bf16 (1..4 members), neon, bfcvt, bf16 (qemu):\n%s",
              exact);
  free(exact);
}

Test(model, perturb_bit_seen_by_digests, .init = setup, .fini = teardown, .timeout = 300) {
  /* a one-ulp change of one residual element: within every faithfulness bound, but not the same
   * bits, which the cross-ISA and team-size gates compare */
  fk_plan *p = make_plan(FK_PROGRAMS_LM, 2), *q = make_plan(FK_PROGRAMS_LM, 2);
  fkm_capture *c = calloc(1, sizeof *c);
  c->what = FKM_PERTURB_BIT;
  fk_plan_set_trace(q, fkm_observe, c);
  int32_t tok[LM_PROMPT];
  for (int r = 0; r < LM_PROMPT; r++) tok[r] = (int32_t)((r * 389 + 17) % 1024);
  float l1[1024], l2[1024];
  fk_io io = { .rows = LM_PROMPT, .tokens = tok, .logits = l1 };
  run(p, FK_PROG_LM_PREFILL, &io);
  io.logits = l2;
  run(q, FK_PROG_LM_PREFILL, &io);
  cr_assert_neq(fkt_fnv(l1, sizeof l1, 0), fkt_fnv(l2, sizeof l2, 0), "a flipped bit left the logits' digest");
  free(c);
  fk_plan_destroy(p);
  fk_plan_destroy(q);
}

/* ---- turns ------------------------------------------------------------------------------------ */

Test(model, turns_continue_exactly, .init = setup, .fini = teardown, .timeout = 300) {
  int32_t prompt[LM_PROMPT];
  for (int r = 0; r < LM_PROMPT; r++) prompt[r] = (int32_t)((r * 389 + 17) % 1024);
  /* A: one plan, the prompt at once, 8 decodes */
  fk_plan *a = make_plan(FK_PROGRAMS_LM, 2);
  float la[9][1024], lb[9][1024];
  int32_t ta[9], tb[9];
  fk_io io = { .rows = LM_PROMPT, .tokens = prompt, .logits = la[0] };
  run(a, FK_PROG_LM_PREFILL, &io);
  ta[0] = io.next;
  for (int k = 1; k < 9; k++) {
    int32_t t = ta[k - 1];
    io = (fk_io){ .rows = 1, .tokens = &t, .logits = la[k] };
    run(a, FK_PROG_LM_DECODE, &io);
    ta[k] = io.next;
  }
  /* B: the prompt in chunks of 5 and 7 on 3 members, a snapshot into a fresh 1-member plan after
   * the second decode, the rest there */
  fk_plan *b = make_plan(FK_PROGRAMS_LM, 3);
  io = (fk_io){ .rows = 5, .tokens = prompt, .logits = lb[0] };
  run(b, FK_PROG_LM_PREFILL, &io);
  io = (fk_io){ .rows = 7, .tokens = prompt + 5, .logits = lb[0] };
  run(b, FK_PROG_LM_PREFILL, &io);
  tb[0] = io.next;
  fk_error err;
  for (int k = 1; k < 9; k++) {
    if (k == 3) {
      size_t len = fk_state_bytes(b);
      void *snap = malloc(len);
      cr_assert_eq(fk_state_save(b, snap, len, &err), FK_OK, "%s", err.message);
      fk_plan_destroy(b);
      b = make_plan(FK_PROGRAMS_LM, 1);
      cr_assert_eq(fk_state_load(b, snap, len, &err), FK_OK, "%s", err.message);
      free(snap);
    }
    int32_t t = tb[k - 1];
    io = (fk_io){ .rows = 1, .tokens = &t, .logits = lb[k] };
    run(b, FK_PROG_LM_DECODE, &io);
    tb[k] = io.next;
  }
  for (int k = 0; k < 9; k++) {
    cr_assert_eq(ta[k], tb[k], "token %d: %d vs %d", k, ta[k], tb[k]);
    cr_assert_eq(memcmp(la[k], lb[k], sizeof la[k]), 0, "logits of call %d differ", k);
  }
  fk_state_info ia = fk_state_query(a), ib = fk_state_query(b);
  cr_assert_eq(ia.lm_pos, 20);
  cr_assert_eq(ib.lm_pos, 20);
  fk_plan_destroy(a);
  fk_plan_destroy(b);
}

Test(model, detok_chunks_equal_frames, .init = setup, .fini = teardown, .timeout = 300) {
  fkm_tally t = detok_against_trace(1, CHUNKS, FKM_PERTURB_NONE, 0, NULL);
  cr_assert_eq(t.failed, 0, "%s", t.first);
  /* bit identity of the two schedules: every boundary plane and the PCM */
  fk_plan *a = make_plan(FK_PROGRAMS_DETOK, 2), *b = make_plan(FK_PROGRAMS_DETOK, 1);
  static float pa[DT_FRAMES * 1920], pb[DT_FRAMES * 1920];
  int32_t codes[DT_FRAMES * 8];
  for (int i = 0; i < DT_FRAMES * 8; i++) codes[i] = (int32_t)(i * 613 % 2048);
  int64_t na = 0, nb = 0;
  for (int f = 0; f < DT_FRAMES; f++) {
    fk_io io = { .rows = 1, .codes = codes + 8 * f, .pcm = pa + na, .pcm_cap = DT_FRAMES * 1920 - na };
    run(a, FK_PROG_DETOK, &io);
    na += io.pcm_count;
  }
  for (int k = 0, f = 0; f < DT_FRAMES; f += CHUNKS[k], k++) {
    fk_io io = { .rows = CHUNKS[k], .codes = codes + 8 * f, .pcm = pb + nb, .pcm_cap = DT_FRAMES * 1920 - nb };
    run(b, FK_PROG_DETOK, &io);
    nb += io.pcm_count;
  }
  cr_assert_eq(na, nb);
  cr_assert_eq(memcmp(pa, pb, (size_t)na * 4), 0, "chunked PCM differs from frame by frame");
  size_t len = fk_state_bytes(a);
  unsigned char *sa = malloc(len), *sb = malloc(len);
  fk_error err;
  cr_assert_eq(fk_state_save(a, sa, len, &err), FK_OK);
  cr_assert_eq(fk_state_save(b, sb, len, &err), FK_OK);
  cr_assert_eq(memcmp(sa, sb, len), 0, "states differ");
  free(sa);
  free(sb);
  fk_plan_destroy(a);
  fk_plan_destroy(b);
}

/* ---- the other cache forms ------------------------------------------------------------------- */

/* The LM with a sliding window no shorter than the sequence (ring cache: W + max_rows - 1 slots,
 * decode through the prefill ring form) equals the full-causal LM bit for bit; the detokenizer
 * without a window (linear cache of max_pos slots) equals its ring of 128 >= 72 positions. */
Test(model, windows_wider_than_the_sequence_equal_full_causal, .init = setup, .fini = teardown, .timeout = 300) {
  fk_plan_desc full = fkt_models_desc(&M, FK_PROGRAMS_LM | FK_PROGRAMS_DETOK, 2), ring = full;
  full.detok.stack.window = 0;
  ring.lm.stack.window = 64;
  ring.detok.stack.window = 128;
  fk_plan *a, *b;
  fk_error err;
  cr_assert_eq(fk_plan_create(&full, &a, &err), FK_OK, "%s", err.message);
  cr_assert_eq(fk_plan_create(&ring, &b, &err), FK_OK, "%s", err.message);
  int32_t prompt[LM_PROMPT];
  for (int r = 0; r < LM_PROMPT; r++) prompt[r] = (int32_t)((r * 389 + 17) % 1024);
  for (int k = 0; k < 9; k++) {
    float la[1024], lb[1024];
    fk_io ia = { .rows = k ? 1 : LM_PROMPT, .tokens = prompt, .logits = la }, ib = ia;
    ib.logits = lb;
    run(a, k ? FK_PROG_LM_DECODE : FK_PROG_LM_PREFILL, &ia);
    run(b, k ? FK_PROG_LM_DECODE : FK_PROG_LM_PREFILL, &ib);
    cr_assert_eq(memcmp(la, lb, sizeof la), 0, "call %d: window 64 differs from full causal", k);
    cr_assert_eq(ia.next, ib.next);
    prompt[0] = ia.next;
  }
  static float pa[DT_FRAMES * 1920], pb[DT_FRAMES * 1920];
  int32_t codes[DT_FRAMES * 8];
  for (int i = 0; i < DT_FRAMES * 8; i++) codes[i] = (int32_t)(i * 613 % 2048);
  int64_t na = 0, nb = 0;
  for (int f = 0; f < DT_FRAMES; f += 2) {
    fk_io ia = { .rows = 2, .codes = codes + 8 * f, .pcm = pa + na, .pcm_cap = DT_FRAMES * 1920 - na };
    fk_io ib = { .rows = 2, .codes = codes + 8 * f, .pcm = pb + nb, .pcm_cap = DT_FRAMES * 1920 - nb };
    run(a, FK_PROG_DETOK, &ia);
    run(b, FK_PROG_DETOK, &ib);
    na += ia.pcm_count;
    nb += ib.pcm_count;
  }
  cr_assert_eq(na, nb);
  cr_assert_eq(memcmp(pa, pb, (size_t)na * 4), 0, "the detokenizer's linear cache differs from its ring of 128");
  fk_plan_destroy(a);
  fk_plan_destroy(b);
}

/* ---- long runs: the ring's size does not matter ----------------------------------------------- */

/* A sliding window of 30 over a ring of R = 30 + max_rows - 1 slots: the same window over rings of
 * other sizes must give the same bits, at every step of a long run in which the rings wrap many
 * times at different periods. LM: 1,000 positions (a prompt, then decode), rings of 30 (max_rows
 * 1: the decode ring form) and 45 (max_rows 16: the prefill ring form, rows = 1), 2 and 1 members.
 * Detokenizer: 200 code frames (1,200 positions), rings of 35 (max_frames 1) and 53 (max_frames 4),
 * frames one per call against chunks of 1..4. */
Test(model, ring_sizes_do_not_matter_over_long_runs, .init = setup, .fini = teardown, .timeout = 600) {
  fk_plan_desc da = fkt_models_desc(&M, FK_PROGRAMS_LM | FK_PROGRAMS_DETOK, 2), db;
  da.lm.stack.window = 30;
  da.lm.stack.max_pos = 1024;
  da.detok.stack.max_pos = 1200;
  db = da;
  da.lm.max_rows = 1;
  da.detok.max_frames = 1;
  db.threads = 1;
  fk_plan *a, *b;
  fk_error err;
  cr_assert_eq(fk_plan_create(&da, &a, &err), FK_OK, "%s", err.message);
  cr_assert_eq(fk_plan_create(&db, &b, &err), FK_OK, "%s", err.message);
  cr_assert_eq(fk_lm_of(a)->stack.ring, 30);
  cr_assert_eq(fk_lm_of(b)->stack.ring, 45);
  cr_assert_eq(fk_detok_of(a)->stack.ring, 35);
  cr_assert_eq(fk_detok_of(b)->stack.ring, 53);
  int32_t ta = 7, tb[16];
  for (int i = 0; i < 16; i++) tb[i] = (int32_t)(i * 389 % 1024);
  ta = tb[0];
  float la[1024], lb[1024];
  fk_io ib = { .rows = 16, .tokens = tb, .logits = lb };
  run(b, FK_PROG_LM_PREFILL, &ib); /* the prompt at once on b, token by token on a */
  for (int i = 0; i < 16; i++) {
    fk_io ia = { .rows = 1, .tokens = &tb[i], .logits = la };
    run(a, i ? FK_PROG_LM_DECODE : FK_PROG_LM_PREFILL, &ia);
    ta = ia.next;
  }
  cr_assert_eq(memcmp(la, lb, sizeof la), 0, "the prompt's last logits differ between rings of 30 and 45");
  cr_assert_eq(ta, ib.next);
  for (int s = 16; s < 1000; s++) {
    int32_t t = ta;
    fk_io ia = { .rows = 1, .tokens = &t, .logits = la };
    fk_io ib2 = { .rows = 1, .tokens = &t, .logits = lb };
    run(a, FK_PROG_LM_DECODE, &ia);
    run(b, FK_PROG_LM_DECODE, &ib2);
    cr_assert_eq(memcmp(la, lb, sizeof la), 0, "position %d: logits differ between rings of 30 and 45", s);
    cr_assert_eq(ia.next, ib2.next);
    ta = ia.next;
  }
  enum { FR = 200 };
  static float pa[FR * 1920], pb[FR * 1920];
  static int32_t codes[FR * 8];
  for (int i = 0; i < FR * 8; i++) codes[i] = (int32_t)((i * 613 + i / 8 * 7) % 2048);
  int64_t na = 0, nb = 0;
  for (int f = 0; f < FR; f++) {
    fk_io io = { .rows = 1, .codes = codes + 8 * f, .pcm = pa + na, .pcm_cap = FR * 1920 - na };
    run(a, FK_PROG_DETOK, &io);
    na += io.pcm_count;
  }
  for (int f = 0, k = 0; f < FR; k++) {
    int r = 1 + k % 4 < FR - f ? 1 + k % 4 : FR - f;
    fk_io io = { .rows = r, .codes = codes + 8 * f, .pcm = pb + nb, .pcm_cap = FR * 1920 - nb };
    run(b, FK_PROG_DETOK, &io);
    nb += io.pcm_count;
    f += r;
  }
  cr_assert_eq(na, nb);
  for (int64_t i = 0; i < na; i++)
    cr_assert_eq(memcmp(&pa[i], &pb[i], 4), 0, "sample %lld (code frame %lld): rings of 35 and 53 differ", (long long)i,
                 (long long)((i + 480) / 1920));
  fk_plan_destroy(a);
  fk_plan_destroy(b);
  cr_log_info("LM: 1,000 positions, rings of 30 and 45 slots; detokenizer: %d code frames, rings of 35 and 53: "
              "the same bits", FR);
}
