/* runtime/example/fk_hello.c: the example host. Builds one plan for a synthetic LFM2 ShortConv
 * block (hidden 2048) and the LFM2.5 detokenizer's spectral tail (512 -> 1282 -> ISTFT), runs
 * a turn (prefill, then decode steps) and a second of audio frames, and prints the stamp each
 * phase resolved to on this CPU and the mean time of each phase. Then whole models from stamps
 * alone: a synthetic LFM2 language model (hidden 256; layers conv, conv, attention, conv,
 * attention, conv) decodes greedily and samples, and the LFM2.5 detokenizer (hidden 512, 8
 * layers, sliding window 30) turns code frames into 24 kHz PCM one frame per call.
 * Usage: fk_hello [threads] [exact|fast] [small]   (FK_VARIANT_DEBUG=1 logs each resolution,
 * FK_CPU_MASK forbids CPU features; `small`: hidden 256, 20 decode steps, 12 frames, for runs
 * under valgrind) */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "flashkern.h"

enum { TAIL_IN = 512, PREFILL = 16, CHUNK = 4 };
static int H = 2048, DECODE = 200, FRAMES = 75;

static uint32_t rng = 2026;
static float uniform(void) { /* [-1, 1) */
  rng = rng * 1664525u + 1013904223u;
  return (float)(rng >> 8) * 0x1p-23f - 1.0f;
}
static uint16_t bf16(float f) { /* round to nearest even (finite values) */
  uint32_t u;
  memcpy(&u, &f, 4);
  return (uint16_t)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}
static uint16_t *bf16_array(size_t n, float scale, float offset) {
  uint16_t *a = malloc(n * 2);
  if (a)
    for (size_t i = 0; i < n; i++) a[i] = bf16(offset + scale * uniform());
  return a;
}

static int fail(const char *what, const fk_error *err) {
  fprintf(stderr, "fk_hello: %s: %s: %s\n", what, fk_strerror(err->status), err->message);
  return 1;
}

/* ---- whole models: synthetic weights in the checkpoint's layouts ----------------------------- */

typedef struct stack_weights {
  fk_lfm2_layer layer[8];
  uint16_t *final_norm;
} stack_weights;

static int make_stack(stack_weights *w, fk_lfm2_stack *st, int64_t h, int64_t ffn, int layers, const int *attn,
                      int64_t heads, int64_t kv, int64_t window, int64_t max_pos) {
  size_t qd = (size_t)(heads * 64), kd = (size_t)(kv * 64), hh = (size_t)h, f = (size_t)ffn;
  float a = 1.0f / sqrtf((float)h);
  for (int i = 0; i < layers; i++) {
    fk_lfm2_layer *l = &w->layer[i];
    memset(l, 0, sizeof *l);
    l->kind = attn[i] ? FK_LAYER_ATTN : FK_LAYER_CONV;
    l->operator_norm = bf16_array(hh, 0.1f, 1.0f);
    l->ffn_norm = bf16_array(hh, 0.1f, 1.0f);
    l->w1 = bf16_array(f * hh, a, 0.0f);
    l->w3 = bf16_array(f * hh, a, 0.0f);
    l->w2 = bf16_array(hh * f, 1.0f / sqrtf((float)ffn), 0.0f);
    if (attn[i]) {
      l->q_proj = bf16_array(qd * hh, a, 0.0f);
      l->k_proj = bf16_array(kd * hh, a, 0.0f);
      l->v_proj = bf16_array(kd * hh, a, 0.0f);
      l->q_norm = bf16_array(64, 0.1f, 1.0f);
      l->k_norm = bf16_array(64, 0.1f, 1.0f);
      l->o_proj = bf16_array(hh * qd, 1.0f / sqrtf((float)qd), 0.0f);
      if (!l->q_proj || !l->k_proj || !l->v_proj || !l->q_norm || !l->k_norm || !l->o_proj) return -1;
    } else {
      l->in_proj = bf16_array(3 * hh * hh, a, 0.0f);
      l->conv = bf16_array(hh * 3, 0.6f, 0.0f);
      l->out_proj = bf16_array(hh * hh, a, 0.0f);
      if (!l->in_proj || !l->conv || !l->out_proj) return -1;
    }
    if (!l->operator_norm || !l->ffn_norm || !l->w1 || !l->w3 || !l->w2) return -1;
  }
  w->final_norm = bf16_array(hh, 0.1f, 1.0f);
  *st = (fk_lfm2_stack){ .hidden = h, .ffn = ffn, .layers = layers, .heads = heads, .kv_heads = kv, .head_dim = 64,
                         .window = window, .max_pos = max_pos, .rope_theta = 1e6f, .norm_eps = 1e-5f,
                         .layer = w->layer, .final_norm = w->final_norm };
  return w->final_norm ? 0 : -1;
}

static void free_stack(stack_weights *w, int layers) {
  for (int i = 0; i < layers; i++) {
    const fk_lfm2_layer *l = &w->layer[i];
    const uint16_t *all[] = { l->operator_norm, l->ffn_norm, l->w1, l->w3, l->w2, l->q_proj, l->k_proj, l->v_proj,
                              l->q_norm, l->k_norm, l->o_proj, l->in_proj, l->conv, l->out_proj };
    for (size_t k = 0; k < sizeof all / sizeof all[0]; k++) free((void *)(uintptr_t)all[k]);
  }
  free(w->final_norm);
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Mean time per run of each phase name of a model program, summed over the layers it runs in. */
static int print_model_phases(const fk_plan *plan, fk_program prog) {
  const char *names[16];
  double us[16];
  int n = 0, layers[16];
  for (int i = 0; i < fk_program_phases(plan, prog); i++) {
    fk_phase_info ph;
    fk_error err;
    if (fk_phase_query(plan, prog, i, &ph, &err) != FK_OK) return fail("fk_phase_query", &err);
    int k = 0;
    while (k < n && strcmp(names[k], ph.name) != 0) k++;
    if (k == n && n < 16) names[n] = ph.name, us[n] = 0, layers[n] = 0, n++;
    if (k < n) {
      us[k] += ph.runs ? (double)ph.ns / (double)ph.runs / 1e3 : 0.0;
      layers[k]++;
    }
  }
  double total = 0;
  for (int k = 0; k < n; k++) {
    printf("  %-14s %-14s x %-2d %10.2f us\n", k ? "" : fk_program_name(prog), names[k], layers[k], us[k]);
    total += us[k];
  }
  printf("  %-14s %-14s      %10.2f us per call\n", "", "(total)", total);
  return 0;
}

static int whole_models(int threads, fk_tier tier, int small) {
  static const int lm_attn[6] = { 0, 0, 1, 0, 1, 0 }, dt_attn[8] = { 0, 0, 1, 0, 1, 0, 1, 0 };
  enum { VOCAB = 1024, PROMPT = 12, CB = 2048 };
  int decode = small ? 8 : 128, frames = small ? 2 : 25, dt_layers = small ? 2 : 8;
  int64_t dt_h = small ? 128 : 512, dt_ffn = small ? 256 : 1536, dt_heads = small ? 2 : 8;
  stack_weights lw, dw;
  fk_plan_desc d = { .programs = FK_PROGRAMS_LM | FK_PROGRAMS_DETOK, .threads = threads, .tier = tier,
                     .flags = FK_PLAN_TIMING, .clip = INFINITY };
  if (make_stack(&lw, &d.lm.stack, 256, 768, 6, lm_attn, 4, 2, 0, PROMPT + decode + 16) != 0 ||
      make_stack(&dw, &d.detok.stack, dt_h, dt_ffn, dt_layers, dt_attn, dt_heads, dt_heads, 30, 6 * frames) != 0)
    return 1;
  uint16_t *embed = bf16_array((size_t)VOCAB * 256, 1.0f, 0.0f), *head = bf16_array((size_t)VOCAB * 256, 0.0625f, 0.0f);
  uint16_t *codebooks = bf16_array((size_t)(8 * CB * dt_h), 1.0f, 0.0f);
  uint16_t *lin = bf16_array((size_t)FK_TAIL_SPEC * (size_t)dt_h, 1.0f / sqrtf((float)dt_h), 0.0f);
  float *bias = malloc(FK_TAIL_SPEC * 4), *pcm = malloc((size_t)(frames * 1920 + 480) * 4);
  if (!embed || !head || !codebooks || !lin || !bias || !pcm) return 1;
  for (int i = 0; i < FK_TAIL_SPEC; i++) bias[i] = (i < FK_TAIL_SPEC / 2 ? -1.0f : 0.0f) + 0.5f * uniform();
  d.lm.vocab = VOCAB;
  d.lm.max_rows = PROMPT;
  d.lm.embed = embed;
  d.lm.lm_head = head;
  d.detok.codebook_vocab = CB;
  d.detok.max_frames = 1;
  d.detok.codebooks = codebooks;
  d.tail_in = dt_h;
  d.tail = (fk_tail_weights){ .lin = lin, .bias = bias };
  fk_plan *plan;
  fk_error err;
  if (fk_plan_create(&d, &plan, &err) != FK_OK) return fail("fk_plan_create (models)", &err);
  free_stack(&lw, 6);
  free_stack(&dw, dt_layers);
  free(embed);
  free(head);
  free(codebooks);
  free(lin);
  printf("\nwhole models: LFM2 LM (hidden 256, 6 layers, vocab %d) + LFM2.5 detokenizer (hidden %lld, %d layers, "
         "window 30), arena %.1f MiB\n", VOCAB, (long long)dt_h, dt_layers,
         (double)fk_plan_arena_bytes(plan) / (1 << 20));
  int32_t tok[PROMPT];
  for (int i = 0; i < PROMPT; i++) tok[i] = (int32_t)(i * 389 % VOCAB);
  fk_io io = { .rows = PROMPT, .tokens = tok };
  if (fk_run(plan, FK_PROG_LM_PREFILL, &io, &err) != FK_OK) return fail("lm_prefill", &err);
  printf("  tokens:");
  double t0 = now_s();
  for (int s = 0; s < decode; s++) {
    if (s < 12) printf(" %d", (int)io.next);
    tok[0] = io.next;
    io = (fk_io){ .rows = 1, .tokens = tok };
    if (fk_run(plan, FK_PROG_LM_DECODE, &io, &err) != FK_OK) return fail("lm_decode", &err);
  }
  double lm_s = now_s() - t0;
  static const fk_sampling smp = { 0.8f, 40 };
  fk_sampler_seed(plan, 2026);
  printf(" ...; sampled (T 0.8, top-k 40):");
  for (int s = 0; s < 8; s++) {
    tok[0] = io.next;
    io = (fk_io){ .rows = 1, .tokens = tok, .sampling = &smp };
    if (fk_run(plan, FK_PROG_LM_DECODE, &io, &err) != FK_OK) return fail("lm_decode (sampled)", &err);
    printf(" %d", (int)io.next);
  }
  int64_t n = 0;
  t0 = now_s();
  for (int f = 0; f < frames; f++) {
    int32_t codes[8];
    for (int c = 0; c < 8; c++) codes[c] = (int32_t)((f * 8 + c) * 613 % CB);
    fk_io dio = { .rows = 1, .codes = codes, .pcm = pcm + n, .pcm_cap = frames * 1920 + 480 - n };
    if (fk_run(plan, FK_PROG_DETOK, &dio, &err) != FK_OK) return fail("detok", &err);
    n += dio.pcm_count;
  }
  double dt_s = now_s() - t0;
  fk_io fl = { .pcm = pcm + n, .pcm_cap = 480 };
  if (fk_run(plan, FK_PROG_DETOK_FLUSH, &fl, &err) != FK_OK) return fail("detok_flush", &err);
  n += fl.pcm_count;
  printf("\n  lm decode: %.0f tokens/s; detokenizer: %.1f code frames/s, RTF %.4f at 24 kHz (%lld samples)\n",
         decode / lm_s, frames / dt_s, dt_s / (frames * 0.08), (long long)n);
  if (print_model_phases(plan, FK_PROG_LM_DECODE) || print_model_phases(plan, FK_PROG_DETOK)) return 1;
  fk_plan_destroy(plan);
  free(bias);
  free(pcm);
  return 0;
}

int main(int argc, char **argv) {
  int threads = argc > 1 ? atoi(argv[1]) : 2;
  fk_tier tier = argc > 2 && strcmp(argv[2], "fast") == 0 ? FK_TIER_FAST : FK_TIER_EXACT;
  if (argc > 3 && strcmp(argv[3], "small") == 0) H = 256, DECODE = 20, FRAMES = 12;
  char feats[160];
  printf("cpu features: %s\n", fk_cpu_feature_names(fk_cpu_features(), feats, sizeof feats));

  /* the checkpoint's tensors (synthetic), in their own layouts */
  float ws = 1.0f / sqrtf((float)H);
  size_t h = (size_t)H;
  uint16_t *norm = bf16_array(h, 0.1f, 1.0f), *in_proj = bf16_array(3 * h * h, ws, 0.0f),
           *conv = bf16_array(h * 3, 0.6f, 0.0f), *out_proj = bf16_array(h * h, ws, 0.0f),
           *lin = bf16_array((size_t)FK_TAIL_SPEC * TAIL_IN, 1.0f / sqrtf((float)TAIL_IN), 0.0f);
  float *lin_bias = malloc(FK_TAIL_SPEC * 4), *feat = malloc((size_t)FRAMES * TAIL_IN * 4);
  float *pcm = malloc((size_t)(FRAMES * 320 + 480) * 4);
  uint16_t *x = bf16_array(PREFILL * h, 1.0f, 0.0f);
  if (!norm || !in_proj || !conv || !out_proj || !lin || !lin_bias || !feat || !pcm || !x) return 1;
  for (int i = 0; i < FK_TAIL_SPEC; i++) lin_bias[i] = (i < FK_TAIL_SPEC / 2 ? -1.0f : 0.0f) + 0.5f * uniform();
  for (int i = 0; i < FRAMES * TAIL_IN; i++) feat[i] = uniform();

  fk_plan_desc d = {
    .programs = FK_PROGRAMS_BLOCK | FK_PROGRAMS_TAIL, .threads = threads, .tier = tier, .flags = FK_PLAN_TIMING,
    .hidden = H, .max_rows = PREFILL, .norm_eps = 1e-5f,
    .block = { .norm = norm, .in_proj = in_proj, .conv = conv, .conv_bias = NULL, .out_proj = out_proj },
    .tail_in = TAIL_IN, .max_frames = CHUNK, .clip = INFINITY, .tail = { .lin = lin, .bias = lin_bias },
  };
  fk_plan *plan;
  fk_error err;
  if (fk_plan_create(&d, &plan, &err) != FK_OK) return fail("fk_plan_create", &err);
  /* readiness packed what it needs: the host's copies can go */
  free(in_proj);
  free(out_proj);
  free(lin);
  printf("plan: LFM2 ShortConv block (hidden %d) + detokenizer tail (%d -> %d -> ISTFT 1280/320), %d threads, %s "
         "tier, arena %.1f MiB\n",
         H, TAIL_IN, FK_TAIL_SPEC, fk_plan_threads(plan), tier == FK_TIER_FAST ? "fast" : "exact",
         (double)fk_plan_arena_bytes(plan) / (1 << 20));

  /* one turn: a prompt of PREFILL rows, then DECODE tokens (each step's output is the next input) */
  fk_io io = { .rows = PREFILL, .x = x, .ldx = H };
  if (fk_run(plan, FK_PROG_BLOCK_PREFILL, &io, &err) != FK_OK) return fail("block_prefill", &err);
  io.rows = 1;
  io.x = x + (PREFILL - 1) * H;
  for (int s = 0; s < DECODE; s++)
    if (fk_run(plan, FK_PROG_BLOCK_DECODE, &io, &err) != FK_OK) return fail("block_decode", &err);
  /* one second of 24 kHz audio: 75 frames, CHUNK at a time, then the stream's end */
  int64_t samples = 0;
  for (int f = 0; f < FRAMES; f += CHUNK) {
    fk_io t = { .rows = FRAMES - f < CHUNK ? FRAMES - f : CHUNK, .feat = feat + f * TAIL_IN, .ldfeat = TAIL_IN,
                .pcm = pcm + samples, .pcm_cap = FRAMES * 320 + 480 - samples };
    if (fk_run(plan, FK_PROG_TAIL, &t, &err) != FK_OK) return fail("tail", &err);
    samples += t.pcm_count;
  }
  fk_io fl = { .pcm = pcm + samples, .pcm_cap = 480 };
  if (fk_run(plan, FK_PROG_TAIL_FLUSH, &fl, &err) != FK_OK) return fail("tail_flush", &err);
  samples += fl.pcm_count;

  printf("ran: block_prefill (%d rows), block_decode x %d, tail (%d frames, %d per call), tail_flush\n", PREFILL,
         DECODE, FRAMES, CHUNK);
  printf("%-14s %-9s %-50s %-12s %6s %10s\n", "program", "phase", "stamp", "share", "runs", "mean us");
  static const fk_program progs[] = { FK_PROG_BLOCK_PREFILL, FK_PROG_BLOCK_DECODE, FK_PROG_TAIL, FK_PROG_TAIL_FLUSH };
  for (int p = 0; p < 4; p++) {
    double total = 0;
    for (int i = 0; i < fk_program_phases(plan, progs[p]); i++) {
      fk_phase_info ph;
      if (fk_phase_query(plan, progs[p], i, &ph, &err) != FK_OK) return fail("fk_phase_query", &err);
      double us = ph.runs ? (double)ph.ns / (double)ph.runs / 1e3 : 0.0;
      total += us;
      printf("%-14s %-9s %-50s %-12s %6llu %10.2f\n", i ? "" : fk_program_name(progs[p]), ph.name, ph.symbol, ph.split,
             (unsigned long long)ph.runs, us);
    }
    printf("%-14s %-9s %-50s %-12s %6s %10.2f\n", "", "(total)", "", "", "", total);
  }
  double rms = 0;
  for (int64_t i = 0; i < samples; i++) rms += (double)pcm[i] * pcm[i];
  fk_state_info st = fk_state_query(plan);
  printf("state: %lld tokens committed; PCM: %lld samples (%.3f s at 24 kHz), rms %.4g\n", (long long)st.tokens,
         (long long)samples, (double)samples / 24000.0, sqrt(rms / (double)(samples ? samples : 1)));
  fk_plan_destroy(plan);
  free(norm);
  free(conv);
  free(lin_bias);
  free(feat);
  free(pcm);
  free(x);
  return whole_models(threads, tier, H == 256);
}
