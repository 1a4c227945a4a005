/* runtime/example/fk_hello.c: the example host. Builds one plan for a synthetic LFM2 ShortConv
 * block (hidden 2048) and the LFM2.5 detokenizer's spectral tail (512 -> 1282 -> ISTFT), runs
 * prefills, decode steps and streams of audio frames, and prints the stamp each phase resolved to
 * on this CPU and the median time of each phase over the timed runs (after warm-up runs). Then
 * whole models from stamps alone: a synthetic LFM2 language model (hidden 256; layers conv, conv,
 * attention, conv, attention, conv) prefills, decodes greedily and samples, and the LFM2.5
 * detokenizer (hidden 512, 8 layers, sliding window 30) turns code frames into 24 kHz PCM one
 * frame per call. Usage: usage() below (fk_hello --help); every argument is checked, a bad one
 * exits 2. Only the public API (flashkern.h) is used. */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "flashkern.h"

enum { TAIL_IN = 512, PREFILL = 16, CHUNK = 5, MAX_THREADS = 64, MAX_PHASES = 160 };

/* What a run does: the full sizes, or `small` (seconds under valgrind). */
typedef struct config {
  int threads;
  fk_tier tier;
  int small;
  int hidden, decode, frames;          /* block plan: hidden, decode steps, tail frames per stream */
  int warm, reps, streams;             /* warm-up runs; timed prefills; timed tail streams */
  int lm_decode, dt_frames, dt_streams; /* models: timed decode steps, code frames per stream, streams */
} config;

static void usage(FILE *f) {
  fprintf(f,
          "usage: fk_hello [threads] [exact|fast] [small]\n"
          "       fk_hello --help\n"
          "\n"
          "The example host of flashkern (runtime/example/fk_hello.c). Through the public API\n"
          "(flashkern.h) it readies a plan for a synthetic LFM2 ShortConv block and the LFM2.5\n"
          "detokenizer's spectral tail, runs prefills, decode steps and streams of audio frames,\n"
          "then a plan of whole models (a synthetic LFM2 language model and the LFM2.5 detokenizer),\n"
          "and prints the stamp each phase resolved to on this CPU and its time. The weights are\n"
          "synthetic, from fixed seeds: the tokens and samples mean nothing, the times do.\n"
          "\n"
          "arguments, in any order, each at most once:\n"
          "  threads   the team size, 1..%d (default 2); member 0 is this thread\n"
          "  exact     the GEMV phases' tier (the default): bit-identical on every ISA\n"
          "  fast      the fast tier: the CPU's bf16 dot instructions (AVX512-BF16 or Arm BF16);\n"
          "            refused, naming the missing feature, on a CPU without them\n"
          "  small     a small run for memory checkers (the example_host_valgrind test): block\n"
          "            hidden 256, 20 decode steps, 10 frames per stream, smaller models, fewer runs\n"
          "  --help    this text\n"
          "\n"
          "environment: FK_CPU_MASK=<hex> keeps only those CPU feature bits (3: avx2 and fma);\n"
          "FK_VARIANT_DEBUG=1 logs each stamp chosen.\n"
          "\n"
          "Every phase is timed by the plan (FK_PLAN_TIMING) in each run; warm-up runs come first\n"
          "and are not counted. The columns:\n"
          "  program    the program run (fk_run)\n"
          "  phase      one step of it: every team member makes its share of the leaf calls, then\n"
          "             all meet at a barrier\n"
          "  stamp      the stamp the phase resolved to on this CPU:\n"
          "             fk_<leaf>_<form>__<isa>_<variant>_<tier>\n"
          "  share      how the phase's work is split across the team (rows, weight rows, heads,\n"
          "             columns; member 0: a recurrence that one member runs)\n"
          "  layers     (whole models) the layers the phase runs in; a run's time is their sum\n"
          "  runs       the timed runs: prefills, decode steps, tail calls of %d frames, flushes\n"
          "  median us  the median time of the phase per run, in microseconds, barrier included\n"
          "  min us     the fastest run\n"
          "  (total)    the program: the median and the minimum of its whole time per run\n"
          "\n"
          "exit status: 0 when every call succeeded; 1 when the library refused (the message says\n"
          "why); 2 for a bad argument.\n",
          MAX_THREADS, CHUNK);
}

/* Reads argv into *c; 0, or 2 after a one-line message naming the bad argument, or -1 for --help. */
static int parse_args(int argc, char **argv, config *c) {
  int have_threads = 0, have_tier = 0;
  *c = (config){ .threads = 2, .tier = FK_TIER_EXACT };
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (!strcmp(a, "--help") || !strcmp(a, "-h")) return -1;
    if ((*a >= '0' && *a <= '9') || ((*a == '-' || *a == '+') && a[1] >= '0' && a[1] <= '9')) {
      char *end;
      long t = strtol(a, &end, 10);
      if (*end || have_threads || t < 1 || t > MAX_THREADS) {
        fprintf(stderr, "fk_hello: threads '%s': %s (see fk_hello --help)\n", a,
                *end ? "not a number" : have_threads ? "given twice" : "must be in 1..64");
        return 2;
      }
      c->threads = (int)t, have_threads = 1;
    } else if (!strcmp(a, "exact") || !strcmp(a, "fast")) {
      if (have_tier) {
        fprintf(stderr, "fk_hello: tier '%s': a tier was given already (see fk_hello --help)\n", a);
        return 2;
      }
      c->tier = !strcmp(a, "fast") ? FK_TIER_FAST : FK_TIER_EXACT, have_tier = 1;
    } else if (!strcmp(a, "small")) {
      if (c->small) {
        fprintf(stderr, "fk_hello: 'small' given twice (see fk_hello --help)\n");
        return 2;
      }
      c->small = 1;
    } else {
      fprintf(stderr, "fk_hello: unknown argument '%s': expected threads (1..64), exact, fast or small "
                      "(see fk_hello --help)\n", a);
      return 2;
    }
  }
  if (c->small) {
    c->hidden = 256, c->decode = 20, c->frames = 10, c->warm = 1, c->reps = 3, c->streams = 2;
    c->lm_decode = 8, c->dt_frames = 2, c->dt_streams = 2;
  } else {
    c->hidden = 2048, c->decode = 200, c->frames = 75, c->warm = 2, c->reps = 7, c->streams = 3;
    c->lm_decode = 128, c->dt_frames = 25, c->dt_streams = 2;
  }
  return 0;
}

/* ---- what the example owns: every allocation and plan, released on every way out --------------- */

static void **owned;
static size_t nowned, capowned;
static fk_plan *plans[2];

/* p, recorded (NULL passes through): release_all() frees it unless release(p) did already. */
static void *own(void *p) {
  if (!p) return NULL;
  if (nowned == capowned) {
    size_t cap = capowned ? 2 * capowned : 256;
    void **more = realloc(owned, cap * sizeof *more);
    if (!more) {
      free(p);
      return NULL;
    }
    owned = more, capowned = cap;
  }
  owned[nowned++] = p;
  return p;
}

static void release(const void *p) {
  for (size_t i = nowned; i-- > 0;)
    if (owned[i] == p) {
      free(owned[i]);
      owned[i] = owned[--nowned];
      return;
    }
}

static void own_plan(fk_plan *p) {
  for (int i = 0; i < 2; i++)
    if (!plans[i]) {
      plans[i] = p;
      return;
    }
}

static void release_plan(fk_plan *p) {
  for (int i = 0; i < 2; i++)
    if (plans[i] == p) plans[i] = NULL;
  fk_plan_destroy(p);
}

/* At exit, also after an error returned early: the plans first (they may read the weights). */
static void release_all(void) {
  for (int i = 0; i < 2; i++)
    if (plans[i]) fk_plan_destroy(plans[i]), plans[i] = NULL;
  while (nowned) free(owned[--nowned]);
  free(owned);
  owned = NULL, capowned = 0;
}

/* ---- synthetic weights ------------------------------------------------------------------------- */

static uint32_t rng = 2026;
static float uniform(void) { /* [-1, 1) */
  rng = rng * 1664525u + 1013904223u;
  return (float)(rng >> 8) * 0x1p-23f - 1.0f;
}
static uint16_t *bf16_array(size_t n, float scale, float offset) {
  uint16_t *a = own(malloc(n * 2));
  if (a)
    for (size_t i = 0; i < n; i++) a[i] = fk_bf16_from_f32(offset + scale * uniform());
  return a;
}

static int fail(const char *what, const fk_error *err) {
  fprintf(stderr, "fk_hello: %s: %s: %s\n", what, fk_strerror(err->status), err->message);
  return 1;
}

typedef struct stack_weights {
  fk_lfm2_layer layer[8];
  uint16_t *final_norm;
} stack_weights;

static int make_stack(stack_weights *w, fk_lfm2_stack *st, int64_t h, int64_t ffn, int layers, const int *attn,
                      int64_t heads, int64_t kv, int64_t window, int64_t max_pos) {
  size_t qd = (size_t)(heads * 64), kd = (size_t)(kv * 64), hh = (size_t)h, f = (size_t)ffn;
  float a = 1.0f / sqrtf((float)h);
  memset(w, 0, sizeof *w);
  for (int i = 0; i < layers; i++) {
    fk_lfm2_layer *l = &w->layer[i];
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
    for (size_t k = 0; k < sizeof all / sizeof all[0]; k++) release(all[k]);
  }
  release(w->final_norm);
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* ---- timing: one sample per run and phase, medians -------------------------------------------- */

/* The samples of one program: `groups` columns (phases, or phase names summed over layers), one
 * row per timed run, in microseconds. */
typedef struct samples {
  fk_program prog;
  int groups, runs, cap;
  int group_of[MAX_PHASES];     /* phase i -> its column */
  const char *name[MAX_PHASES]; /* the column's phase name */
  int layers[MAX_PHASES];       /* phases in the column */
  double *us;                   /* [cap][groups] */
} samples;

/* Columns for prog's phases: one per phase, or (by_name) one per phase name. 0, or 1 on failure. */
static int samples_init(samples *s, const fk_plan *plan, fk_program prog, int by_name, int cap) {
  memset(s, 0, sizeof *s);
  s->prog = prog, s->cap = cap;
  int n = fk_program_phases(plan, prog);
  if (n > MAX_PHASES) n = MAX_PHASES;
  for (int i = 0; i < n; i++) {
    fk_phase_info ph;
    fk_error err;
    if (fk_phase_query(plan, prog, i, &ph, &err) != FK_OK) return fail("fk_phase_query", &err);
    int k = 0;
    while (by_name && k < s->groups && strcmp(s->name[k], ph.name) != 0) k++;
    if (!by_name || k == s->groups) k = s->groups++, s->name[k] = ph.name;
    s->group_of[i] = k;
    s->layers[k]++;
  }
  s->us = own(calloc((size_t)cap * (size_t)(s->groups ? s->groups : 1), sizeof *s->us));
  return s->us ? 0 : 1;
}

/* Reads the plan's timings of the run just made (fk_plan_timing_reset before it) as one row. */
static void samples_take(samples *s, const fk_plan *plan) {
  if (s->runs >= s->cap) return;
  double *row = s->us + (size_t)s->runs * (size_t)s->groups;
  for (int i = 0; i < fk_program_phases(plan, s->prog) && i < MAX_PHASES; i++) {
    fk_phase_info ph;
    if (fk_phase_query(plan, s->prog, i, &ph, NULL) == FK_OK) row[s->group_of[i]] += (double)ph.ns / 1e3;
  }
  s->runs++;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* Median and minimum of column k (k == groups: the row sums, the program's total). */
static void samples_stat(const samples *s, int k, double *median, double *min) {
  double v[4096];
  int n = s->runs < 4096 ? s->runs : 4096;
  for (int r = 0; r < n; r++) {
    const double *row = s->us + (size_t)r * (size_t)s->groups;
    v[r] = 0;
    if (k < s->groups) v[r] = row[k];
    else
      for (int g = 0; g < s->groups; g++) v[r] += row[g];
  }
  qsort(v, (size_t)n, sizeof v[0], cmp_double);
  *median = n ? (n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2])) : 0.0;
  *min = n ? v[0] : 0.0;
}

/* ---- tables whose columns fit their content --------------------------------------------------- */

enum { COLS = 7, MAX_ROWS = 128, CELL = 96 };

typedef struct table {
  int ncols, nrows;
  int right[COLS]; /* right-aligned (numbers) */
  char cell[MAX_ROWS][COLS][CELL];
} table;

static void table_row(table *t, const char *const *v) {
  if (t->nrows >= MAX_ROWS) return;
  for (int c = 0; c < t->ncols; c++) snprintf(t->cell[t->nrows][c], CELL, "%s", v[c] ? v[c] : "");
  t->nrows++;
}

/* Every column as wide as its widest cell, two spaces between; every line the same length. */
static void table_print(const table *t, const char *indent) {
  int w[COLS] = { 0 };
  for (int r = 0; r < t->nrows; r++)
    for (int c = 0; c < t->ncols; c++) {
      int n = (int)strlen(t->cell[r][c]);
      if (n > w[c]) w[c] = n;
    }
  for (int r = 0; r < t->nrows; r++) {
    fputs(indent, stdout);
    for (int c = 0; c < t->ncols; c++)
      printf(t->right[c] ? "%s%*s" : "%s%-*s", c ? "  " : "", w[c], t->cell[r][c]);
    putchar('\n');
  }
}

static void fmt_us(char *buf, double us) { snprintf(buf, 24, "%.2f", us); }

/* The rows of one program: each column of s, then (total). */
static void table_program(table *t, const fk_plan *plan, const samples *s, int with_layers) {
  char runs[24], med[24], min[24], lay[24];
  snprintf(runs, sizeof runs, "%d", s->runs);
  for (int k = 0; k <= s->groups; k++) {
    double m, lo;
    samples_stat(s, k, &m, &lo);
    fmt_us(med, m), fmt_us(min, lo);
    const char *prog = k ? "" : fk_program_name(s->prog);
    if (k == s->groups && with_layers) {
      const char *v[COLS] = { "", "(total)", "", "", med, min };
      table_row(t, v);
    } else if (k == s->groups) {
      const char *v[COLS] = { "", "(total)", "", "", "", med, min };
      table_row(t, v);
    } else if (with_layers) {
      snprintf(lay, sizeof lay, "%d", s->layers[k]);
      const char *v[COLS] = { prog, s->name[k], lay, runs, med, min };
      table_row(t, v);
    } else {
      fk_phase_info ph = { 0 };
      for (int i = 0; i < fk_program_phases(plan, s->prog); i++)
        if (s->group_of[i] == k && fk_phase_query(plan, s->prog, i, &ph, NULL) == FK_OK) break;
      const char *v[COLS] = { prog, s->name[k], ph.symbol, ph.split, runs, med, min };
      table_row(t, v);
    }
  }
}

/* ---- the block and the tail -------------------------------------------------------------------- */

static int block_and_tail(const config *c) {
  int H = c->hidden;
  float ws = 1.0f / sqrtf((float)H);
  size_t h = (size_t)H;
  size_t pcm_cap = (size_t)c->frames * 320 + 480;
  uint16_t *norm = bf16_array(h, 0.1f, 1.0f), *in_proj = bf16_array(3 * h * h, ws, 0.0f),
           *conv = bf16_array(h * 3, 0.6f, 0.0f), *out_proj = bf16_array(h * h, ws, 0.0f),
           *lin = bf16_array((size_t)FK_TAIL_SPEC * TAIL_IN, 1.0f / sqrtf((float)TAIL_IN), 0.0f);
  float *lin_bias = own(malloc(FK_TAIL_SPEC * 4)), *feat = own(malloc((size_t)c->frames * TAIL_IN * 4));
  float *pcm = own(malloc(pcm_cap * 4));
  uint16_t *x0 = bf16_array(PREFILL * h, 1.0f, 0.0f), *x = own(malloc(PREFILL * h * 2));
  if (!norm || !in_proj || !conv || !out_proj || !lin || !lin_bias || !feat || !pcm || !x0 || !x) return 1;
  for (int i = 0; i < FK_TAIL_SPEC; i++) lin_bias[i] = (i < FK_TAIL_SPEC / 2 ? -1.0f : 0.0f) + 0.5f * uniform();
  for (int i = 0; i < c->frames * TAIL_IN; i++) feat[i] = uniform();

  fk_plan_desc d = {
    .programs = FK_PROGRAMS_BLOCK | FK_PROGRAMS_TAIL, .threads = c->threads, .tier = c->tier,
    .flags = FK_PLAN_TIMING, .hidden = H, .max_rows = PREFILL, .norm_eps = 1e-5f,
    .block = { .norm = norm, .in_proj = in_proj, .conv = conv, .conv_bias = NULL, .out_proj = out_proj },
    .tail_in = TAIL_IN, .max_frames = CHUNK, .clip = INFINITY, .tail = { .lin = lin, .bias = lin_bias },
  };
  fk_plan *plan;
  fk_error err;
  if (fk_plan_create(&d, &plan, &err) != FK_OK) return fail("fk_plan_create", &err);
  own_plan(plan);
  /* readiness packed what it needs: the host's copies can go */
  release(in_proj);
  release(out_proj);
  release(lin);
  printf("plan: LFM2 ShortConv block (hidden %d) + detokenizer tail (%d -> %d -> ISTFT 1280/320), %d threads, %s "
         "tier, arena %.1f MiB\n",
         H, TAIL_IN, FK_TAIL_SPEC, fk_plan_threads(plan), c->tier == FK_TIER_FAST ? "fast" : "exact",
         (double)fk_plan_arena_bytes(plan) / (1 << 20));

  int calls = c->frames / CHUNK + (c->frames % CHUNK != 0);
  samples sp, sd, st, sf;
  if (samples_init(&sp, plan, FK_PROG_BLOCK_PREFILL, 0, c->reps) ||
      samples_init(&sd, plan, FK_PROG_BLOCK_DECODE, 0, c->decode) ||
      samples_init(&st, plan, FK_PROG_TAIL, 0, c->streams * calls) ||
      samples_init(&sf, plan, FK_PROG_TAIL_FLUSH, 0, c->streams))
    return 1;

  /* a turn's prompt: PREFILL rows from the start of a sequence, each run on the same rows */
  for (int r = 0; r < c->warm + c->reps; r++) {
    fk_state_reset(plan);
    memcpy(x, x0, PREFILL * h * 2);
    fk_io io = { .rows = PREFILL, .x = x, .ldx = H };
    fk_plan_timing_reset(plan);
    if (fk_run(plan, FK_PROG_BLOCK_PREFILL, &io, &err) != FK_OK) return fail("block_prefill", &err);
    if (r >= c->warm) samples_take(&sp, plan);
  }
  /* then decode steps, each step's output the next input */
  fk_io io = { .rows = 1, .x = x + (PREFILL - 1) * h, .ldx = H };
  for (int s = 0; s < c->warm + c->decode; s++) {
    fk_plan_timing_reset(plan);
    if (fk_run(plan, FK_PROG_BLOCK_DECODE, &io, &err) != FK_OK) return fail("block_decode", &err);
    if (s >= c->warm) samples_take(&sd, plan);
  }
  /* streams of audio (75 frames: one second at 24 kHz), CHUNK frames per call, then the end */
  int64_t samples_out = 0;
  for (int s = 0; s < 1 + c->streams; s++) {
    samples_out = 0;
    for (int f = 0; f < c->frames; f += CHUNK) {
      fk_io t = { .rows = c->frames - f < CHUNK ? c->frames - f : CHUNK, .feat = feat + f * TAIL_IN,
                  .ldfeat = TAIL_IN, .pcm = pcm + samples_out, .pcm_cap = (int64_t)pcm_cap - samples_out };
      fk_plan_timing_reset(plan);
      if (fk_run(plan, FK_PROG_TAIL, &t, &err) != FK_OK) return fail("tail", &err);
      if (s > 0) samples_take(&st, plan);
      samples_out += t.pcm_count;
    }
    fk_io fl = { .pcm = pcm + samples_out, .pcm_cap = 480 };
    fk_plan_timing_reset(plan);
    if (fk_run(plan, FK_PROG_TAIL_FLUSH, &fl, &err) != FK_OK) return fail("tail_flush", &err);
    if (s > 0) samples_take(&sf, plan);
    samples_out += fl.pcm_count;
  }

  printf("ran: block_prefill (%d rows) x %d, block_decode x %d, tail (%d frames, %d per call) and tail_flush x %d "
         "streams; before them %d warm-up run%s of each program, 1 warm-up stream\n",
         PREFILL, c->reps, c->decode, c->frames, CHUNK, c->streams, c->warm, c->warm == 1 ? "" : "s");
  table t = { .ncols = 7, .right = { 0, 0, 0, 0, 1, 1, 1 } };
  const char *head[COLS] = { "program", "phase", "stamp", "share", "runs", "median us", "min us" };
  table_row(&t, head);
  table_program(&t, plan, &sp, 0);
  table_program(&t, plan, &sd, 0);
  table_program(&t, plan, &st, 0);
  table_program(&t, plan, &sf, 0);
  table_print(&t, "");
  double rms = 0;
  for (int64_t i = 0; i < samples_out; i++) rms += (double)pcm[i] * pcm[i];
  fk_state_info info = fk_state_query(plan);
  printf("state: %lld tokens committed; PCM of the last stream: %lld samples (%.3f s at 24 kHz), rms %.4g\n",
         (long long)info.tokens, (long long)samples_out, (double)samples_out / 24000.0,
         sqrt(rms / (double)(samples_out ? samples_out : 1)));
  release_plan(plan);
  release(sp.us), release(sd.us), release(st.us), release(sf.us);
  release(norm), release(conv), release(lin_bias), release(feat), release(pcm), release(x0), release(x);
  return 0;
}

/* ---- whole models ------------------------------------------------------------------------------ */

static int whole_models(const config *c) {
  static const int lm_attn[6] = { 0, 0, 1, 0, 1, 0 }, dt_attn[8] = { 0, 0, 1, 0, 1, 0, 1, 0 };
  enum { VOCAB = 1024, PROMPT = 12, CB = 2048, SAMPLED = 8 };
  int dt_layers = c->small ? 2 : 8, frames = c->dt_frames;
  int64_t dt_h = c->small ? 128 : 512, dt_ffn = c->small ? 256 : 1536, dt_heads = c->small ? 2 : 8;
  int64_t pcm_cap = frames * 1920 + 480;
  stack_weights lw, dw;
  fk_plan_desc d = { .programs = FK_PROGRAMS_LM | FK_PROGRAMS_DETOK, .threads = c->threads, .tier = c->tier,
                     .flags = FK_PLAN_TIMING, .clip = INFINITY };
  if (make_stack(&lw, &d.lm.stack, 256, 768, 6, lm_attn, 4, 2, 0, PROMPT + c->warm + c->lm_decode + SAMPLED + 16) != 0 ||
      make_stack(&dw, &d.detok.stack, dt_h, dt_ffn, dt_layers, dt_attn, dt_heads, dt_heads, 30, 6 * frames) != 0)
    return 1;
  uint16_t *embed = bf16_array((size_t)VOCAB * 256, 1.0f, 0.0f), *head = bf16_array((size_t)VOCAB * 256, 0.0625f, 0.0f);
  uint16_t *codebooks = bf16_array((size_t)(8 * CB * dt_h), 1.0f, 0.0f);
  uint16_t *lin = bf16_array((size_t)FK_TAIL_SPEC * (size_t)dt_h, 1.0f / sqrtf((float)dt_h), 0.0f);
  float *bias = own(malloc(FK_TAIL_SPEC * 4)), *pcm = own(malloc((size_t)pcm_cap * 4));
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
  own_plan(plan);
  free_stack(&lw, 6);
  free_stack(&dw, dt_layers);
  release(embed), release(head), release(codebooks), release(lin);
  printf("\nwhole models: LFM2 LM (hidden 256, 6 layers, vocab %d) + LFM2.5 detokenizer (hidden %lld, %d layers, "
         "window 30), arena %.1f MiB\n", VOCAB, (long long)dt_h, dt_layers,
         (double)fk_plan_arena_bytes(plan) / (1 << 20));
  samples sp, sd, sx, sf;
  if (samples_init(&sp, plan, FK_PROG_LM_PREFILL, 1, c->reps) ||
      samples_init(&sd, plan, FK_PROG_LM_DECODE, 1, c->lm_decode) ||
      samples_init(&sx, plan, FK_PROG_DETOK, 1, c->dt_streams * frames) ||
      samples_init(&sf, plan, FK_PROG_DETOK_FLUSH, 1, c->dt_streams))
    return 1;

  int32_t tok[PROMPT];
  fk_io io = { 0 };
  for (int r = 0; r < c->warm + c->reps; r++) {
    fk_state_reset(plan);
    for (int i = 0; i < PROMPT; i++) tok[i] = (int32_t)(i * 389 % VOCAB);
    io = (fk_io){ .rows = PROMPT, .tokens = tok };
    fk_plan_timing_reset(plan);
    if (fk_run(plan, FK_PROG_LM_PREFILL, &io, &err) != FK_OK) return fail("lm_prefill", &err);
    if (r >= c->warm) samples_take(&sp, plan);
  }
  printf("  tokens:");
  double t0 = 0;
  for (int s = 0; s < c->warm + c->lm_decode; s++) {
    if (s == c->warm) t0 = now_s();
    if (s < 12) printf(" %d", (int)io.next);
    tok[0] = io.next;
    io = (fk_io){ .rows = 1, .tokens = tok };
    fk_plan_timing_reset(plan);
    if (fk_run(plan, FK_PROG_LM_DECODE, &io, &err) != FK_OK) return fail("lm_decode", &err);
    if (s >= c->warm) samples_take(&sd, plan);
  }
  double lm_s = now_s() - t0;
  static const fk_sampling smp = { 0.8f, 40 };
  fk_sampler_seed(plan, 2026);
  printf(" ...; sampled (T 0.8, top-k 40):");
  for (int s = 0; s < SAMPLED; s++) {
    tok[0] = io.next;
    io = (fk_io){ .rows = 1, .tokens = tok, .sampling = &smp };
    if (fk_run(plan, FK_PROG_LM_DECODE, &io, &err) != FK_OK) return fail("lm_decode (sampled)", &err);
    printf(" %d", (int)io.next);
  }
  /* streams of code frames, one per call, each ended by the flush; the first stream warms up */
  int64_t n = 0;
  double dt_s = 0;
  for (int s = 0; s < 1 + c->dt_streams; s++) {
    n = 0;
    t0 = now_s();
    for (int f = 0; f < frames; f++) {
      int32_t codes[8];
      for (int k = 0; k < 8; k++) codes[k] = (int32_t)((f * 8 + k) * 613 % CB);
      fk_io dio = { .rows = 1, .codes = codes, .pcm = pcm + n, .pcm_cap = pcm_cap - n };
      fk_plan_timing_reset(plan);
      if (fk_run(plan, FK_PROG_DETOK, &dio, &err) != FK_OK) return fail("detok", &err);
      if (s > 0) samples_take(&sx, plan);
      n += dio.pcm_count;
    }
    if (s > 0) dt_s += now_s() - t0;
    fk_io fl = { .pcm = pcm + n, .pcm_cap = 480 };
    fk_plan_timing_reset(plan);
    if (fk_run(plan, FK_PROG_DETOK_FLUSH, &fl, &err) != FK_OK) return fail("detok_flush", &err);
    if (s > 0) samples_take(&sf, plan);
    n += fl.pcm_count;
  }
  int dt_frames = c->dt_streams * frames;
  printf("\n  lm decode: %.0f tokens/s (%d steps); detokenizer: %.1f code frames/s, RTF %.4f at 24 kHz (%d frames "
         "in %d streams; %lld samples each)\n",
         c->lm_decode / lm_s, c->lm_decode, dt_frames / dt_s, dt_s / (dt_frames * 0.08), dt_frames, c->dt_streams,
         (long long)n);
  table t = { .ncols = 6, .right = { 0, 0, 1, 1, 1, 1 } };
  const char *hd[COLS] = { "program", "phase", "layers", "runs", "median us", "min us" };
  table_row(&t, hd);
  table_program(&t, plan, &sp, 1);
  table_program(&t, plan, &sd, 1);
  table_program(&t, plan, &sx, 1);
  table_program(&t, plan, &sf, 1);
  table_print(&t, "  ");
  release_plan(plan);
  release(sp.us), release(sd.us), release(sx.us), release(sf.us);
  release(bias), release(pcm);
  return 0;
}

int main(int argc, char **argv) {
  config c;
  int a = parse_args(argc, argv, &c);
  if (a < 0) {
    usage(stdout);
    return 0;
  }
  if (a) return a;
  atexit(release_all);   /* an early error return leaves nothing behind either */
  char feats[160];
  printf("flashkern %s; cpu features: %s\n", fk_version(), fk_cpu_feature_names(fk_cpu_features(), feats, sizeof feats));
  if (block_and_tail(&c)) return 1;
  return whole_models(&c);
}
