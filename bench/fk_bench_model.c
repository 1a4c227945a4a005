/* bench/fk_bench_model.c: whole LFM2 model steps through the runtime (FK_PROGRAMS_LM and
 * FK_PROGRAMS_DETOK), the flashkern side of bench/run_model.sh; the PyTorch side is
 * bench/torch_peer.py, on the same shapes (bench/README.md, "Whole models").
 *
 *   lm       LFM2 language model: vocab 1024, hidden 256, ffn 768, 6 layers (conv conv attn conv
 *            attn conv), 4 heads / 2 kv heads of 64, rope theta 1e6, tied embeddings. A 12-token
 *            prompt through FK_PROG_LM_PREFILL (untimed), then --steps FK_PROG_LM_DECODE calls,
 *            io.next fed back (greedy): only the decode calls are timed. tokens/s = steps / time.
 *            Prefill: one FK_PROG_LM_PREFILL call of P prompt tokens (--prefill, default 64 and
 *            512) from a reset state, timed alone: tokens/s = P / time (the plans' lm.max_rows is
 *            the largest P; --prefill none keeps it at the 12-token prompt's and skips the measure).
 *   lm_350m  (--lm-350m) the same at LFM2-350M's shapes: vocab 65536, hidden 1024, ffn 4608,
 *            16 layers (6 attention), 16 / 8 heads.
 *   lm_1_2b  (--lm-1-2b) the same at LFM2-1.2B's shapes: vocab 65536, hidden 2048, ffn 8192,
 *            16 layers (the same 6 attention), 32 / 8 heads.
 *   detok    the LFM2.5 audio detokenizer: codebooks 8 x 2048 x 512, the LFM2 stack (hidden 512,
 *            ffn 1536, 8 layers conv conv attn conv attn conv attn conv, 8 / 8 heads of 64, sliding
 *            window 30), final norm, 512 -> 1282 head, spectral tail -> f32 PCM.
 *            full:   50 code frames in one FK_PROG_DETOK call from a fresh stream: 50 / time.
 *            stream: one code frame per FK_PROG_DETOK call; the stream is first run 17 frames
 *                    untimed (the left context the PyTorch peer recomputes per frame), then
 *                    --stream-frames calls are timed: frames / time.
 *            RTF = wall time / audio time (a code frame is 1920 samples at 24 kHz: 80 ms).
 *
 * Plans: threads 1 and 2 (desc.threads), tier exact and fast (the fast tier only where its stamps
 * resolve on this CPU; otherwise one "skipped" line says why), and with --quantize bf16,q8,q4,q4k the
 * LM plans also with desc.quantize FK_Q8, FK_Q4 and FK_Q4K, in each tier (fast: the quantized fast tier,
 * integer dot products; the detokenizer stays bf16). All plans are alive at once, unless --fresh-plans: then each sample makes its
 * configuration's plan (untimed readiness), runs, and destroys it, so one plan is alive at a time
 * (lm_1_2b's plans are 2.6 GB each in bf16). Weights: seeded uniform
 * (-1/sqrt(fan_in), +1/sqrt(fan_in)) rounded to bf16, norms 1 + U(-0.1, 0.1): speed does not depend
 * on the values. Each repetition runs every configuration once, in an order that rotates by one
 * each repetition; a 20 ms idle gap precedes each timed sample (as fk_bench_runtime). Medians
 * with min and max over the repetitions.
 *
 * Decode is DRAM-bound: each LM configuration also prints bytes_per_token, the weight bytes one
 * decode step reads (the packed bytes of every GEMV matrix: fk_gemv_packed_elems * 2 in bf16,
 * fk_q_packed_bytes in q8 / q4 / q4k, the LM head included, plus the one embedding row), and with --probe
 * the read-bandwidth probe (bw_probe.c: a streaming read of 1.125 GiB, one untimed pass then a timed
 * one) takes a turn per thread count in every repetition, interleaved with the configurations:
 * probe_gbps per thread count. GB/s of a configuration = bytes_per_token x decode_tok_s.
 *
 * Output: CSV lines on stdout (peer,model,dtype,threads,metric,value,reps; dtype is the tier,
 * "exact" or "fast", for bf16 weights, "exact-q8", "fast-q8", "exact-q4", "fast-q4" for quantized ones), the same
 * metrics as torch_peer.py: decode_tok_s, prefill<P>_tok_s (prefill64_tok_s, prefill512_tok_s),
 * full_frames_s, full_rtf, stream_frames_s, stream_rtf and their _min / _max; bytes_per_token; with
 * --probe the lines flashkern,probe,read,T,probe_gbps (and _min / _max); progress on stderr. */
#define _GNU_SOURCE
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "flashkern.h"
#include "fkb.h"

#ifndef FKB_FLASHKERN_VERSION
#define FKB_FLASHKERN_VERSION "this tree"
#endif

enum {
  PROMPT = 12,
  CODEBOOKS = 8,
  CODEBOOK_VOCAB = 2048,
  DETOK_FULL = 50,       /* code frames of the one-call measure (the PyTorch peer's full forward) */
  DETOK_CONTEXT = 17,    /* untimed frames before the streamed ones (the peer's left context) */
  SAMPLES_PER_CODE = 1920,
  MAX_REPS = FKB_MAX_REPS,
  MAX_STEPS = 4000,
  MAX_PREFILLS = 4,      /* prompt lengths of the prefill measure */
  MAX_PREFILL = 4096,    /* the longest (the plans' max_pos is 4096) */
  MAX_MODELS = 4,
  MAX_CFG = MAX_MODELS * 4 * 2 * 2 /* models x weight formats x tiers x threads (an upper bound) */
};
#define AUDIO_S_PER_CODE (1920.0 / 24000.0)

static struct {
  int reps, steps, stream_frames;
  int threads[2], nthreads;
  int tiers[2], ntiers;
  int do_lm, do_lm350, do_detok;
  int prefill[MAX_PREFILLS], nprefill;
  fk_qformat quant[4]; /* --quantize: the LM plans' weight formats */
  int nquant;
  int do_lm12, probe, fresh;
} opt = { 7, 64, 32, { 1, 2 }, 2, { FK_TIER_EXACT, FK_TIER_FAST }, 2, 1, 0, 1, { 64, 512 }, 2, { FK_QNONE }, 1,
          0, 0, 0 };

#define die(...) fkb_die("fk_bench_model", __VA_ARGS__)
#define now fkb_now

static void settle(void) {
  struct timespec ts = { 0, 20 * 1000 * 1000 };
  nanosleep(&ts, NULL);
}

static uint64_t rng = 88172645463325252ull;
static float uniform(void) { /* [-1, 1) */
  rng ^= rng << 13;
  rng ^= rng >> 7;
  rng ^= rng << 17;
  return (float)((double)(rng >> 11) * 0x1p-53 * 2.0 - 1.0);
}

static uint16_t *weights(size_t n, float scale) {
  uint16_t *w = malloc(n * 2);
  if (!w) die("out of memory (%zu weights)", n);
  for (size_t i = 0; i < n; i++) w[i] = fkb_f32_to_bf16(scale * uniform());
  return w;
}
static uint16_t *norm_weights(size_t n) {
  uint16_t *w = malloc(n * 2);
  if (!w) die("out of memory");
  for (size_t i = 0; i < n; i++) w[i] = fkb_f32_to_bf16(1.0f + 0.1f * uniform());
  return w;
}

/* ---- the models ------------------------------------------------------------------------------ */

typedef struct shape {
  const char *name;
  int64_t hidden, ffn, heads, kv_heads, window;
  int nlayers;
  const char *kinds; /* 'c' conv, 'a' attention, one per layer */
} shape;

static const shape SHAPE_LM = { "lm", 256, 768, 4, 2, 0, 6, "ccacac" };
static const shape SHAPE_LM350 = { "lm_350m", 1024, 4608, 16, 8, 0, 16, "ccaccaccacacacac" };
static const shape SHAPE_LM12 = { "lm_1_2b", 2048, 8192, 32, 8, 0, 16, "ccaccaccacacacac" };
static const shape SHAPE_DETOK = { "detok", 512, 1536, 8, 8, 30, 8, "ccacacac" };

static void stack_make(const shape *s, fk_lfm2_stack *st, fk_lfm2_layer *layer) {
  int64_t h = s->hidden, hd = 64, f = s->ffn;
  float sh = 1.0f / sqrtf((float)h), sf = 1.0f / sqrtf((float)f), sq = 1.0f / sqrtf((float)(s->heads * hd));
  for (int l = 0; l < s->nlayers; l++) {
    fk_lfm2_layer *L = &layer[l];
    memset(L, 0, sizeof *L);
    L->operator_norm = norm_weights((size_t)h);
    L->ffn_norm = norm_weights((size_t)h);
    if (s->kinds[l] == 'c') {
      L->kind = FK_LAYER_CONV;
      L->in_proj = weights((size_t)(3 * h * h), sh);
      L->conv = weights((size_t)(3 * h), 1.0f / sqrtf(3.0f));
      L->out_proj = weights((size_t)(h * h), sh);
    } else {
      L->kind = FK_LAYER_ATTN;
      L->q_proj = weights((size_t)(s->heads * hd * h), sh);
      L->k_proj = weights((size_t)(s->kv_heads * hd * h), sh);
      L->v_proj = weights((size_t)(s->kv_heads * hd * h), sh);
      L->q_norm = norm_weights((size_t)hd);
      L->k_norm = norm_weights((size_t)hd);
      L->o_proj = weights((size_t)(h * s->heads * hd), sq);
    }
    L->w1 = weights((size_t)(f * h), sh);
    L->w3 = weights((size_t)(f * h), sh);
    L->w2 = weights((size_t)(h * f), sf);
  }
  memset(st, 0, sizeof *st);
  st->hidden = h;
  st->ffn = f;
  st->layers = s->nlayers;
  st->heads = s->heads;
  st->kv_heads = s->kv_heads;
  st->head_dim = hd;
  st->window = s->window;
  st->max_pos = 4096;
  st->rope_theta = 1e6f;
  st->norm_eps = 1e-5f;
  st->layer = layer;
  st->final_norm = norm_weights((size_t)h);
}

typedef struct model {
  const shape *s;
  int detok;
  fk_plan_desc desc; /* threads and tier set per plan */
  fk_lfm2_layer layer[FK_MAX_LAYERS];
  float *tail_bias;
} model;

static void lm_make(model *m, const shape *s, int64_t vocab, int64_t max_rows) {
  memset(m, 0, sizeof *m);
  m->s = s;
  stack_make(s, &m->desc.lm.stack, m->layer);
  m->desc.programs = FK_PROGRAMS_LM;
  m->desc.lm.vocab = vocab;
  m->desc.lm.max_rows = max_rows;
  m->desc.lm.embed = weights((size_t)(vocab * s->hidden), 1.0f); /* embedding rows: U(-1, 1) */
  m->desc.lm.lm_head = NULL;                                       /* tied */
}

static void detok_make(model *m) {
  memset(m, 0, sizeof *m);
  m->s = &SHAPE_DETOK;
  m->detok = 1;
  stack_make(m->s, &m->desc.detok.stack, m->layer);
  m->desc.programs = FK_PROGRAMS_DETOK;
  m->desc.detok.codebook_vocab = CODEBOOK_VOCAB;
  m->desc.detok.max_frames = DETOK_FULL;
  m->desc.detok.codebooks = weights((size_t)CODEBOOKS * CODEBOOK_VOCAB * 512, 1.0f);
  /* the head and spectral tail (desc.tail, tail_in = stack.hidden): 6 spectral frames per code frame */
  m->desc.tail_in = 512;
  m->desc.max_frames = 6 * DETOK_FULL;
  m->desc.clip = INFINITY; /* LFM2.5: no magnitude clip */
  m->desc.tail.lin = weights((size_t)FK_TAIL_SPEC * 512, 1.0f / sqrtf(512.0f));
  m->tail_bias = malloc(FK_TAIL_SPEC * sizeof(float));
  if (!m->tail_bias) die("out of memory");
  for (int i = 0; i < FK_TAIL_SPEC; i++) m->tail_bias[i] = 0.02f * uniform();
  m->desc.tail.bias = m->tail_bias;
}

/* ---- configurations: one plan per (model, threads, tier) ------------------------------------- */

static const char *tier_name(int t) { return t == FK_TIER_FAST ? "fast" : "exact"; }

typedef struct config {
  model *m;
  int threads, tier;
  fk_qformat q;  /* desc.quantize */
  fk_plan *plan; /* NULL between samples with --fresh-plans */
} config;

/* the CSV's dtype column: the tier for bf16 weights (the names before --quantize), else tier-q8, tier-q4,
 * tier-q4k (a fast plan's q4k GEMVs run in the exact tier) */
static const char *cfg_dtype(const config *c) {
  static const char *const q[2][3] = { { "exact-q8", "exact-q4", "exact-q4k" }, { "fast-q8", "fast-q4", "fast-q4k" } };
  return c->q == FK_QNONE ? tier_name(c->tier) : q[c->tier == FK_TIER_FAST][c->q == FK_Q4K ? 2 : c->q == FK_Q4];
}

/* Weight bytes one LM decode step reads: every GEMV matrix in the plan's packed layout (the layers'
 * projections and feed-forward, the LM head: tied, so packed from the embedding) and the one
 * embedding row the gather reads (bf16 in every format). */
static double mat_bytes(fk_qformat q, int64_t n, int64_t k) {
  return (double)(q != FK_QNONE ? fk_q_packed_bytes(q, n, k) : fk_gemv_packed_elems(n, k) * 2);
}
static double decode_bytes(const model *m, fk_qformat q) {
  const shape *s = m->s;
  int64_t h = s->hidden, f = s->ffn, qd = s->heads * 64, kd = s->kv_heads * 64;
  double b = (double)h * 2 + mat_bytes(q, m->desc.lm.vocab, h);
  for (int l = 0; l < s->nlayers; l++) {
    if (s->kinds[l] == 'c') b += mat_bytes(q, 3 * h, h) + mat_bytes(q, h, h);
    else b += mat_bytes(q, qd, h) + 2 * mat_bytes(q, kd, h) + mat_bytes(q, h, qd);
    b += 2 * mat_bytes(q, f, h) + mat_bytes(q, h, f);
  }
  return b;
}

/* the series statistics are fkb_common.c's */
typedef fkb_series series;
#define cmp_double fkb_cmp_double
#define med fkb_series_median
#define mn fkb_series_min
#define mx fkb_series_max

static void emit(const char *name, const char *dtype, int threads, const char *metric, const series *s) {
  printf("flashkern,%s,%s,%d,%s,%.6g,%d\n", name, dtype, threads, metric, med(s), s->n);
  printf("flashkern,%s,%s,%d,%s_min,%.6g,%d\n", name, dtype, threads, metric, mn(s), s->n);
  printf("flashkern,%s,%s,%d,%s_max,%.6g,%d\n", name, dtype, threads, metric, mx(s), s->n);
  fflush(stdout);
}

static void run_or_die(fk_plan *p, fk_program prog, fk_io *io) {
  fk_error err;
  if (fk_run(p, prog, io, &err) != FK_OK) die("fk_run(%s): %s", fk_program_name(prog), err.message);
}

static config cfg[MAX_CFG];
static int ncfg;
static config *cfg_of(int i) { return &cfg[i]; }

/* LM: reset, prefill the prompt (untimed), `steps` decode calls timed; returns tokens/s. */
static int32_t prompt[PROMPT];
static double lm_sample(config *c) {
  fk_io io = { .rows = PROMPT, .tokens = prompt };
  if (fk_state_reset(c->plan) != FK_OK) die("fk_state_reset");
  settle();
  run_or_die(c->plan, FK_PROG_LM_PREFILL, &io);
  int32_t tok = io.next;
  int64_t vocab = c->m->desc.lm.vocab;
  double t0 = now();
  for (int i = 0; i < opt.steps; i++) {
    fk_io d = { .rows = 1, .tokens = &tok };
    if (fk_run(c->plan, FK_PROG_LM_DECODE, &d, NULL) != FK_OK) run_or_die(c->plan, FK_PROG_LM_DECODE, &d);
    tok = d.next;
  }
  double t = now() - t0;
  if (tok < 0 || tok >= vocab) die("%s: decode returned token %d outside [0, %lld)", c->m->s->name, (int)tok,
                                   (long long)vocab);
  return opt.steps / t;
}

/* LM prefill: one FK_PROG_LM_PREFILL call of n prompt tokens from a reset state, timed alone (the
 * whole call: embedding gather, every layer, the last row's logits and the argmax, as a host's
 * first call of a turn); returns tokens/s. */
static int32_t *prefill_prompt; /* MAX_PREFILL tokens in [0, 1023]: valid in both vocabularies */
static double prefill_sample(config *c, int n) {
  fk_io io = { .rows = n, .tokens = prefill_prompt };
  if (fk_state_reset(c->plan) != FK_OK) die("fk_state_reset");
  settle();
  double t0 = now();
  run_or_die(c->plan, FK_PROG_LM_PREFILL, &io);
  double t = now() - t0;
  if (io.next < 0 || io.next >= c->m->desc.lm.vocab)
    die("%s: a %d-token prefill returned token %d", c->m->s->name, n, (int)io.next);
  return n / t;
}

/* detok: codes of the whole run; PCM scratch */
static int32_t *codes;
static float *pcm;
static int64_t pcm_cap;

static int pcm_finite(int64_t n) {
  for (int64_t i = 0; i < n; i++)
    if (!isfinite(pcm[i])) return 0;
  return 1;
}

/* One call over DETOK_FULL code frames from a fresh stream; returns seconds. */
static double detok_full_sample(config *c) {
  if (fk_state_reset(c->plan) != FK_OK) die("fk_state_reset");
  fk_io io = { .rows = DETOK_FULL, .codes = codes, .pcm = pcm, .pcm_cap = pcm_cap };
  settle();
  double t0 = now();
  run_or_die(c->plan, FK_PROG_DETOK, &io);
  double t = now() - t0;
  if (io.pcm_count < (DETOK_FULL - 1) * SAMPLES_PER_CODE) die("detok full: %lld samples", (long long)io.pcm_count);
  return t;
}

/* DETOK_CONTEXT frames untimed, then stream_frames calls of one code frame timed; s per frame. */
static double detok_stream_sample(config *c) {
  if (fk_state_reset(c->plan) != FK_OK) die("fk_state_reset");
  fk_io io = { .rows = DETOK_CONTEXT, .codes = codes, .pcm = pcm, .pcm_cap = pcm_cap };
  run_or_die(c->plan, FK_PROG_DETOK, &io);
  settle();
  double t0 = now();
  for (int f = 0; f < opt.stream_frames; f++) {
    fk_io s = { .rows = 1, .codes = codes + (size_t)(DETOK_CONTEXT + f) * CODEBOOKS, .pcm = pcm, .pcm_cap = pcm_cap };
    if (fk_run(c->plan, FK_PROG_DETOK, &s, NULL) != FK_OK) run_or_die(c->plan, FK_PROG_DETOK, &s);
  }
  double t = now() - t0;
  return t / opt.stream_frames;
}

/* The configurations' checks before timing: a decode step returns a token in range, a stream gives
 * the promised sample counts and finite PCM. */
enum { GATE_STEPS = 16 };
static int32_t gate_tokens[MAX_CFG][GATE_STEPS];
static uint64_t gate_pcm[MAX_CFG];

static void gate(config *c, int ci) {
  if (!c->m->detok) {
    fk_io io = { .rows = PROMPT, .tokens = prompt };
    if (fk_state_reset(c->plan) != FK_OK) die("fk_state_reset");
    run_or_die(c->plan, FK_PROG_LM_PREFILL, &io);
    int32_t tok = io.next;
    for (int i = 0; i < GATE_STEPS; i++) {
      if (tok < 0 || tok >= c->m->desc.lm.vocab) die("%s: token %d out of range", c->m->s->name, (int)tok);
      gate_tokens[ci][i] = tok;
      fk_io d = { .rows = 1, .tokens = &tok };
      run_or_die(c->plan, FK_PROG_LM_DECODE, &d);
      tok = d.next;
    }
    /* the exact tier is bit-identical for every team size: the same greedy sequence (per weight format) */
    for (int o = 0; o < ci; o++)
      if (cfg_of(o)->m == c->m && cfg_of(o)->q == c->q && cfg_of(o)->tier == FK_TIER_EXACT &&
          c->tier == FK_TIER_EXACT && memcmp(gate_tokens[o], gate_tokens[ci], sizeof gate_tokens[ci]) != 0)
        die("%s %s: %dT and %dT decode different tokens", c->m->s->name, cfg_dtype(c), cfg_of(o)->threads,
            c->threads);
    return;
  }
  if (fk_state_reset(c->plan) != FK_OK) die("fk_state_reset");
  int64_t expect[3] = { 1440, 1920, 1920 };
  uint64_t h = 0xcbf29ce484222325ull; /* FNV-1a of the three frames' PCM */
  for (int f = 0; f < 3; f++) {
    fk_io io = { .rows = 1, .codes = codes + (size_t)f * CODEBOOKS, .pcm = pcm, .pcm_cap = pcm_cap };
    run_or_die(c->plan, FK_PROG_DETOK, &io);
    if (io.pcm_count != expect[f])
      fprintf(stderr, "fk_bench_model: detok %s %dT: frame %d gave %lld samples (expected %lld)\n",
              tier_name(c->tier), c->threads, f, (long long)io.pcm_count, (long long)expect[f]);
    if (!pcm_finite(io.pcm_count)) die("detok %s %dT: frame %d: PCM not finite", tier_name(c->tier), c->threads, f);
    const unsigned char *b = (const unsigned char *)pcm;
    for (size_t i = 0; i < (size_t)io.pcm_count * sizeof *pcm; i++) h = (h ^ b[i]) * 0x100000001b3ull;
  }
  gate_pcm[ci] = h;
  for (int o = 0; o < ci; o++)
    if (cfg_of(o)->m == c->m && cfg_of(o)->tier == FK_TIER_EXACT && c->tier == FK_TIER_EXACT && gate_pcm[o] != h)
      die("detok exact: %dT and %dT write different PCM", cfg_of(o)->threads, c->threads);
}

/* ---- readiness of one configuration ----------------------------------------------------------- */

/* fk_plan_create for c (threads, tier, quantize); FK_EUNSUPPORTED of the fast tier is returned for
 * the caller to skip, any other refusal dies */
static fk_status plan_make(config *c, fk_error *err) {
  fk_plan_desc d = c->m->desc;
  d.threads = c->threads;
  d.tier = (fk_tier)c->tier;
  d.quantize = c->q;
  c->plan = NULL;
  fk_status st = fk_plan_create(&d, &c->plan, err);
  if (st == FK_EUNSUPPORTED && d.tier == FK_TIER_FAST) return st;
  if (st != FK_OK) die("fk_plan_create(%s, %s, %dT): %s", c->m->s->name, cfg_dtype(c), d.threads, err->message);
  return FK_OK;
}

static void plan_drop(config *c) {
  fk_plan_destroy(c->plan);
  c->plan = NULL;
}

int main(int argc, char **argv) {
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--quick")) opt.reps = 3, opt.steps = 16, opt.stream_frames = 8;
    else if (!strcmp(argv[i], "--reps") && i + 1 < argc) opt.reps = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--steps") && i + 1 < argc) opt.steps = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--stream-frames") && i + 1 < argc) opt.stream_frames = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--threads") && i + 1 < argc) {
      const char *v = argv[++i];
      opt.nthreads = 0;
      if (strchr(v, '1')) opt.threads[opt.nthreads++] = 1;
      if (strchr(v, '2')) opt.threads[opt.nthreads++] = 2;
    } else if (!strcmp(argv[i], "--tiers") && i + 1 < argc) {
      const char *v = argv[++i];
      opt.ntiers = 0;
      if (strstr(v, "exact")) opt.tiers[opt.ntiers++] = FK_TIER_EXACT;
      if (strstr(v, "fast")) opt.tiers[opt.ntiers++] = FK_TIER_FAST;
    } else if (!strcmp(argv[i], "--only") && i + 1 < argc) {
      char list[256];
      snprintf(list, sizeof list, "%s", argv[++i]);
      opt.do_lm = opt.do_lm350 = opt.do_lm12 = opt.do_detok = 0;
      for (char *save, *t = strtok_r(list, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        if (!strcmp(t, "lm")) opt.do_lm = 1;
        else if (!strcmp(t, "lm_350m")) opt.do_lm350 = 1;
        else if (!strcmp(t, "lm_1_2b")) opt.do_lm12 = 1;
        else if (!strcmp(t, "detok")) opt.do_detok = 1;
        else die("--only: unknown model %s (lm, lm_350m, lm_1_2b, detok)", t);
      }
    } else if (!strcmp(argv[i], "--quantize") && i + 1 < argc) {
      char list[256];
      snprintf(list, sizeof list, "%s", argv[++i]);
      opt.nquant = 0;
      for (char *save, *t = strtok_r(list, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        int q = !strcmp(t, "bf16") ? FK_QNONE : !strcmp(t, "q8") ? FK_Q8 : !strcmp(t, "q4") ? FK_Q4
              : !strcmp(t, "q4k") ? FK_Q4K : -1;
        if (q < 0 || opt.nquant == 4) die("--quantize: a list of bf16, q8, q4, q4k (each once)");
        for (int k = 0; k < opt.nquant; k++)
          if ((int)opt.quant[k] == q) die("--quantize: %s twice", t);
        opt.quant[opt.nquant++] = (fk_qformat)q;
      }
    } else if (!strcmp(argv[i], "--prefill") && i + 1 < argc) {
      char list[256];
      snprintf(list, sizeof list, "%s", argv[++i]);
      opt.nprefill = 0;
      if (strcmp(list, "none"))
        for (char *save, *t = strtok_r(list, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
          int n = atoi(t);
          if (n < 1 || n > MAX_PREFILL || opt.nprefill == MAX_PREFILLS)
            die("--prefill: at most %d lengths in 1..%d, or none", MAX_PREFILLS, MAX_PREFILL);
          opt.prefill[opt.nprefill++] = n;
        }
    } else if (!strcmp(argv[i], "--lm-350m")) opt.do_lm350 = 1;
    else if (!strcmp(argv[i], "--lm-1-2b")) opt.do_lm12 = 1;
    else if (!strcmp(argv[i], "--probe")) opt.probe = 1;
    else if (!strcmp(argv[i], "--fresh-plans")) opt.fresh = 1;
    else {
      const char *usage = "usage: fk_bench_model [--quick] [--reps N] [--steps N] [--stream-frames N] "
                          "[--threads 1,2] [--tiers exact,fast] [--only lm,lm_350m,lm_1_2b,detok] [--lm-350m] "
                          "[--lm-1-2b] [--prefill 64,512|none] [--quantize bf16,q8,q4,q4k] [--probe] [--fresh-plans]";
      if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
        puts(usage);
        return 0;
      }
      die("%s", usage);
    }
  }
  if (opt.reps < 1 || opt.reps > MAX_REPS) die("--reps must be in 1..%d", MAX_REPS);
  if (opt.steps < 1 || opt.steps > MAX_STEPS) die("--steps must be in 1..%d", MAX_STEPS);
  if (opt.stream_frames < 1 || DETOK_CONTEXT + opt.stream_frames > 600) die("--stream-frames must be in 1..583");
  if (!opt.nthreads || !opt.ntiers || !opt.nquant) die("--threads, --tiers and --quantize need at least one value");

  printf("flashkern,info,-,0,version,flashkern %s,0\n", FKB_FLASHKERN_VERSION);

  for (int i = 0; i < PROMPT; i++) prompt[i] = (int32_t)(fabsf(uniform()) * 1023.0f);
  size_t ncodes = (size_t)(DETOK_CONTEXT + opt.stream_frames + DETOK_FULL) * CODEBOOKS;
  codes = malloc(ncodes * sizeof *codes);
  pcm_cap = (int64_t)(DETOK_FULL + 1) * SAMPLES_PER_CODE;
  pcm = malloc((size_t)pcm_cap * sizeof *pcm);
  if (!codes || !pcm) die("out of memory");
  for (size_t i = 0; i < ncodes; i++) codes[i] = (int32_t)(fabsf(uniform()) * (CODEBOOK_VOCAB - 1));

  /* the plans take the longest prefill in one call; without the measure they keep the 12-token
   * prompt's max_rows, as before it (fk_bench_ckpt compares decode on such plans) */
  int64_t max_rows = PROMPT;
  for (int k = 0; k < opt.nprefill; k++)
    if (opt.prefill[k] > max_rows) max_rows = opt.prefill[k];
  static model models[MAX_MODELS];
  int nmodels = 0;
  if (opt.do_lm) lm_make(&models[nmodels++], &SHAPE_LM, 1024, max_rows);
  if (opt.do_lm350) lm_make(&models[nmodels++], &SHAPE_LM350, 65536, max_rows);
  if (opt.do_lm12) lm_make(&models[nmodels++], &SHAPE_LM12, 65536, max_rows);
  if (opt.do_detok) detok_make(&models[nmodels++]);
  /* drawn after the weights, so the decode prompt, the codes and the weights stay what they were */
  prefill_prompt = malloc(MAX_PREFILL * sizeof *prefill_prompt);
  if (!prefill_prompt) die("out of memory");
  for (int i = 0; i < MAX_PREFILL; i++) prefill_prompt[i] = (int32_t)(fabsf(uniform()) * 1023.0f);

  /* plans: every (model, weight format, tier, threads) that readiness accepts; the quantized formats
   * for the LM only. Each is gated as it is made; with --fresh-plans it is then destroyed and made
   * again for every sample. */
  for (int mi = 0; mi < nmodels; mi++)
    for (int qi = 0; qi < (models[mi].detok ? 1 : opt.nquant); qi++)
      for (int ti = 0; ti < opt.ntiers; ti++)
        for (int hi = 0; hi < opt.nthreads; hi++) {
          model *m = &models[mi];
          config c = { m, opt.threads[hi], opt.tiers[ti], m->detok ? FK_QNONE : opt.quant[qi], NULL };
          fk_error err;
          double t0 = now();
          if (plan_make(&c, &err) != FK_OK) {
            fprintf(stderr, "fk_bench_model: %s %s %dT skipped: %s\n", m->s->name, cfg_dtype(&c), c.threads, err.message);
            printf("flashkern,%s,%s,%d,skipped,0,0\n", m->s->name, cfg_dtype(&c), c.threads);
            continue;
          }
          fprintf(stderr, "fk_bench_model: %s %s %dT ready in %.1f s: arena %.1f MB, %d decode phases\n", m->s->name,
                  cfg_dtype(&c), c.threads, now() - t0, (double)fk_plan_arena_bytes(c.plan) / 1e6,
                  fk_program_phases(c.plan, m->detok ? FK_PROG_DETOK : FK_PROG_LM_DECODE));
          cfg[ncfg] = c;
          gate(&cfg[ncfg], ncfg);
          if (opt.fresh) plan_drop(&cfg[ncfg]);
          ncfg++;
        }
  fprintf(stderr, "fk_bench_model: gate: %d plans; tokens in range, the exact tier's greedy sequences equal "
          "across team sizes, detok sample counts and finite PCM\n", ncfg);

  fkb_probe *probe = NULL;
  if (opt.probe && !(probe = fkb_probe_create(FKB_ROTATE_BYTES))) die("cannot allocate the read probe");
  int entries = ncfg + (probe ? opt.nthreads : 0); /* the probe's turns (one per thread count) follow the plans */
  static series tok_s[MAX_CFG], full_s[MAX_CFG], stream_s[MAX_CFG], pre_s[MAX_CFG][MAX_PREFILLS], probe_s[2];
  fkb_cpu_mark mark = fkb_cpu_mark_now();
  for (int r = 0; r < opt.reps; r++) {
    for (int k = 0; k < entries; k++) {
      int e = (k + r) % entries;
      if (e >= ncfg) { /* the probe: a pause, one untimed pass, a timed one */
        series *ps = &probe_s[e - ncfg];
        settle();
        fkb_probe_gbs(probe, opt.threads[e - ncfg]);
        ps->v[ps->n++] = fkb_probe_gbs(probe, opt.threads[e - ncfg]);
        continue;
      }
      config *c = &cfg[e];
      int ci = e;
      if (opt.fresh) {
        fk_error err;
        if (plan_make(c, &err) != FK_OK) die("fk_plan_create(%s, %s, %dT): %s", c->m->s->name, cfg_dtype(c),
                                             c->threads, err.message);
      }
      if (!c->m->detok) {
        tok_s[ci].v[tok_s[ci].n++] = lm_sample(c);
        for (int p = 0; p < opt.nprefill; p++) pre_s[ci][p].v[pre_s[ci][p].n++] = prefill_sample(c, opt.prefill[p]);
      } else {
        full_s[ci].v[full_s[ci].n++] = detok_full_sample(c);
        stream_s[ci].v[stream_s[ci].n++] = detok_stream_sample(c);
      }
      if (opt.fresh) plan_drop(c);
    }
    fprintf(stderr, "fk_bench_model: repetition %d of %d\n", r + 1, opt.reps);
  }
  double others = fkb_others_share(mark, fkb_cpu_mark_now()); /* other processes' share of the CPUs meanwhile */
  fprintf(stderr, "fk_bench_model: other processes used %.0f%% of the CPUs during the repetitions\n", 100 * others);

  for (int ci = 0; ci < ncfg; ci++) {
    config *c = &cfg[ci];
    const char *tn = cfg_dtype(c);
    if (!c->m->detok) {
      double bytes = decode_bytes(c->m, c->q);
      emit(c->m->s->name, tn, c->threads, "decode_tok_s", &tok_s[ci]);
      printf("flashkern,%s,%s,%d,bytes_per_token,%.0f,1\n", c->m->s->name, tn, c->threads, bytes);
      printf("flashkern,%s,%s,%d,others_cpu,%.4f,%d\n", c->m->s->name, tn, c->threads, others, tok_s[ci].n);
      fprintf(stderr, "fk_bench_model: %s %s %dT: decode %.1f tokens/s, %.1f MB per token, %.1f GB/s\n",
              c->m->s->name, tn, c->threads, med(&tok_s[ci]), bytes / 1e6, bytes * med(&tok_s[ci]) / 1e9);
      for (int k = 0; k < opt.nprefill; k++) {
        char metric[32];
        snprintf(metric, sizeof metric, "prefill%d_tok_s", opt.prefill[k]);
        emit(c->m->s->name, tn, c->threads, metric, &pre_s[ci][k]);
        fprintf(stderr, "fk_bench_model: %s %s %dT: prefill of %d tokens %.1f tokens/s\n", c->m->s->name, tn,
                c->threads, opt.prefill[k], med(&pre_s[ci][k]));
      }
    } else {
      series fps = { .n = full_s[ci].n }, rtf = { .n = full_s[ci].n };
      for (int i = 0; i < fps.n; i++) {
        fps.v[i] = DETOK_FULL / full_s[ci].v[i];
        rtf.v[i] = full_s[ci].v[i] / (DETOK_FULL * AUDIO_S_PER_CODE);
      }
      emit("detok", tn, c->threads, "full_frames_s", &fps);
      emit("detok", tn, c->threads, "full_rtf", &rtf);
      series sfps = { .n = stream_s[ci].n }, srtf = { .n = stream_s[ci].n };
      for (int i = 0; i < sfps.n; i++) {
        sfps.v[i] = 1.0 / stream_s[ci].v[i];
        srtf.v[i] = stream_s[ci].v[i] / AUDIO_S_PER_CODE;
      }
      emit("detok", tn, c->threads, "stream_frames_s", &sfps);
      emit("detok", tn, c->threads, "stream_rtf", &srtf);
      printf("flashkern,detok,%s,%d,others_cpu,%.4f,%d\n", tn, c->threads, others, sfps.n);
      fprintf(stderr, "fk_bench_model: detok %s %dT: full %.1f frames/s, stream %.1f frames/s (RTF %.4f)\n", tn,
              c->threads, med(&fps), med(&sfps), med(&srtf));
    }
  }
  for (int hi = 0; probe && hi < opt.nthreads; hi++) {
    emit("probe", "read", opt.threads[hi], "probe_gbps", &probe_s[hi]);
    fprintf(stderr, "fk_bench_model: read probe %dT: %.1f GB/s (%s, %.2f GiB)\n", opt.threads[hi], med(&probe_s[hi]),
            fkb_probe_kind(probe), (double)fkb_probe_bytes(probe) / (double)(1u << 30));
  }
  fkb_probe_destroy(probe);
  for (int ci = 0; ci < ncfg; ci++) fk_plan_destroy(cfg[ci].plan);
  return 0;
}
