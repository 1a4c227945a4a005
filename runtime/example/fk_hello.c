/* runtime/example/fk_hello.c: the example host. Builds one plan for a synthetic LFM2 ShortConv
 * block (hidden 2048) and the LFM2.5 detokenizer's spectral tail (512 -> 1282 -> ISTFT), runs
 * a turn (prefill, then decode steps) and a second of audio frames, and prints the stamp each
 * phase resolved to on this CPU and the mean time of each phase.
 * Usage: fk_hello [threads] [exact|fast] [small]   (FK_VARIANT_DEBUG=1 logs each resolution,
 * FK_CPU_MASK forbids CPU features; `small`: hidden 256, 20 decode steps, 12 frames, for runs
 * under valgrind) */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
  return 0;
}
