/* bench/fk_bench_runtime.c: what the runtime costs and what its team buys, on the 2048-wide LFM2
 * ShortConv block decode step (RMSNorm -> in_proj 6144x2048 -> conv -> out_proj 2048x2048 +
 * residual: 33.6 MB of packed bf16 weights per step).
 *
 * Contenders, all running the same four stamps on the same packed layouts (bit-identical
 * outputs, checked before timing):
 *   plan 1T, plan 2T     fk_run(FK_PROG_BLOCK_DECODE) on plans of 1 and 2 threads
 *   direct 1T            the four stamps called back to back by the bench (no runtime)
 *   OpenMP 2T            the same shares in one `omp parallel` region, omp barriers between phases
 * Weights hot (one copy, called again and again: about 34 MB against a 32 MiB L3) and cold
 * (L copies, more than 1.125 GiB together, like the layers of a model: every step reads DRAM).
 * Then the empty program: fk_plan_run_empty (dispatch + barriers, no leaf) against an OpenMP
 * region with the same number of barriers, 1 and 2 threads.
 *
 * Samples: one batch per contender per repetition, contenders interleaved in a rotating order;
 * medians with min and max. Output: DIR/runtime.csv and DIR/runtime-meta.csv (fkb_harness.c), which
 * bench/report.py renders into DIR/runtime.md. */
#define _GNU_SOURCE
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../runtime/fk_plan_internal.h"
#include "fkb.h"
#include "fkb_runtime.h"

#ifndef FKB_FLASHKERN_VERSION
#define FKB_FLASHKERN_VERSION "this tree"
#endif

enum { H = 2048, HOT_BATCH = 16, EMPTY_BATCH = 2000, MAX_REPS = 101 }; /* <= FKB_MAX_REPS */

static struct {
  int reps;
  const char *out;
} opt = { 31, "bench/results" };

#define die(...) fkb_die("fk_bench_runtime", __VA_ARGS__)
#define now fkb_now

static uint64_t rng = 88172645463325252ull;
static float uniform(void) {
  rng ^= rng << 13;
  rng ^= rng >> 7;
  rng ^= rng << 17;
  return (float)((double)(rng >> 11) * 0x1p-53 * 2.0 - 1.0);
}

/* ---- the model ------------------------------------------------------------------------------ */

typedef struct model {
  uint16_t *norm, *in_proj, *conv, *out_proj; /* checkpoint layouts */
  uint16_t *conv_tap;
} model;

static void model_make(model *m) {
  m->norm = malloc(H * 2);
  m->in_proj = malloc((size_t)3 * H * H * 2);
  m->conv = malloc(3 * H * 2);
  m->conv_tap = malloc(3 * H * 2);
  m->out_proj = malloc((size_t)H * H * 2);
  if (!m->norm || !m->in_proj || !m->conv || !m->conv_tap || !m->out_proj) die("out of memory");
  float ws = 1.0f / sqrtf((float)H);
  for (int i = 0; i < H; i++) m->norm[i] = fkb_f32_to_bf16(1.0f + 0.1f * uniform());
  for (size_t i = 0; i < (size_t)3 * H * H; i++) m->in_proj[i] = fkb_f32_to_bf16(ws * uniform());
  for (int i = 0; i < 3 * H; i++) m->conv[i] = fkb_f32_to_bf16(0.6f * uniform());
  for (size_t i = 0; i < (size_t)H * H; i++) m->out_proj[i] = fkb_f32_to_bf16(ws * uniform());
  for (int c = 0; c < H; c++)
    for (int k = 0; k < 3; k++) m->conv_tap[k * H + c] = m->conv[3 * c + k];
}

static fk_plan *plan_make(const model *m, int threads, const fk_plan *team_of) {
  fk_plan_desc d = { .programs = FK_PROGRAMS_BLOCK, .threads = threads, .team_of = team_of, .tier = FK_TIER_EXACT, .hidden = H,
                     .max_rows = 1, .norm_eps = 1e-5f,
                     .block = { .norm = m->norm, .in_proj = m->in_proj, .conv = m->conv, .out_proj = m->out_proj } };
  fk_plan *p;
  fk_error err;
  if (fk_plan_create(&d, &p, &err) != FK_OK) die("fk_plan_create: %s", err.message);
  return p;
}

static void resolve(const char *form, fk_leaf *out) {
  fk_error err;
  if (fk_leaf_resolve(form, FK_TIER_EXACT, fk_cpu_features(), out, &err) != FK_OK) die("%s", err.message);
}

/* The bench's own copy of the block for the direct and OpenMP contenders. */
static void block_make(const model *m, fkb_block *b, const fkb_block *share_leaves) {
  memset(b, 0, sizeof *b);
  b->h = H;
  if (share_leaves) {
    b->norm = share_leaves->norm, b->in = share_leaves->in, b->conv = share_leaves->conv, b->out = share_leaves->out;
  } else {
    resolve("rmsnorm_bf16_wide", &b->norm);
    resolve("gemv_bf16_rne_packed", &b->in);
    resolve("shortconv_bf16_wide", &b->conv);
    resolve("gemv_bf16_rne_add_packed", &b->out);
  }
  b->norm_w = m->norm;
  b->conv_w = m->conv_tap;
  size_t ni = fk_gemv_packed_elems(3 * H, H), no = fk_gemv_packed_elems(H, H);
  uint16_t *in_w = fkb_region_alloc(ni * 2), *out_w = fkb_region_alloc(no * 2);
  if (!in_w || !out_w) die("out of memory (weight copies)");
  fk_error err;
  if (fk_gemv_pack(m->in_proj, H, 3 * H, H, in_w, ni, &err) != FK_OK ||
      fk_gemv_pack(m->out_proj, H, H, H, out_w, no, &err) != FK_OK)
    die("fk_gemv_pack: %s", err.message);
  b->in_w = in_w;
  b->out_w = out_w;
  b->carry = fkb_alloc(2 * H * 2);
  b->bcx = fkb_alloc(3 * H * 2);
  b->xn = fkb_alloc(H * 4);
  b->cy = fkb_alloc(H * 4);
  b->xs[0] = fkb_alloc(4 * H * 4);
  b->xs[1] = fkb_alloc(4 * H * 4);
  if (!b->carry || !b->bcx || !b->xn || !b->cy || !b->xs[0] || !b->xs[1]) die("out of memory");
  memset(b->carry, 0, 2 * H * 2);
}

/* ---- the contenders -------------------------------------------------------------------------- */

typedef enum cid { C_PLAN1, C_DIRECT1, C_PLAN2, C_OMP2, NC } cid;
static const char *const cname[NC] = { "plan 1T", "direct 1T", "plan 2T", "OpenMP 2T" };

typedef struct world {
  int layers;            /* cold copies */
  fk_plan **plan1, **plan2; /* [layers] */
  fkb_block *blk;        /* [layers] */
  fkb_probe *probe;      /* the read-bandwidth probe over FKB_ROTATE_BYTES */
  uint16_t x[H];
} world;

/* One step of contender c on layer l. */
static void step(world *w, cid c, int l) {
  fk_error err;
  fk_io io = { .rows = 1, .x = w->x, .ldx = H };
  switch (c) {
  case C_PLAN1:
    if (fk_run(w->plan1[l], FK_PROG_BLOCK_DECODE, &io, &err) != FK_OK) die("fk_run: %s", err.message);
    break;
  case C_PLAN2:
    if (fk_run(w->plan2[l], FK_PROG_BLOCK_DECODE, &io, &err) != FK_OK) die("fk_run: %s", err.message);
    break;
  case C_DIRECT1: fkb_block_direct(&w->blk[l], w->x); break;
  case C_OMP2: fkb_block_omp(&w->blk[l], w->x, 2); break;
  default: break;
  }
}

/* Before timing: from the same state and input, every contender writes the same row and commits
 * the same carry (one step, layer 0, fresh state). */
static void gate(world *w) {
  uint16_t x0[H], out[NC][H], carry[NC][2 * H];
  for (int i = 0; i < H; i++) x0[i] = fkb_f32_to_bf16(uniform());
  for (int c = 0; c < NC; c++) {
    fk_state_reset(w->plan1[0]);
    fk_state_reset(w->plan2[0]);
    memset(w->blk[0].carry, 0, 2 * H * 2);
    for (int s = 0; s < 3; s++) { /* three steps: the carry is read back */
      memcpy(w->x, x0, sizeof x0);
      x0[s] ^= 1;
      step(w, (cid)c, 0);
    }
    for (int s = 0; s < 3; s++) x0[s] ^= 1;
    memcpy(out[c], w->x, sizeof w->x);
    if (c == C_PLAN1 || c == C_PLAN2) {
      fk_plan *p = c == C_PLAN1 ? w->plan1[0] : w->plan2[0];
      size_t len = fk_state_bytes(p);
      unsigned char *snap = malloc(len);
      fk_error err;
      if (!snap || fk_state_save(p, snap, len, &err) != FK_OK) die("fk_state_save");
      memcpy(carry[c], snap + 56, sizeof carry[c]); /* the documented snapshot layout (version 2: 56-byte header) */
      free(snap);
    } else {
      memcpy(carry[c], w->blk[0].carry, sizeof carry[c]);
    }
  }
  for (int c = 1; c < NC; c++) {
    if (memcmp(out[c], out[0], sizeof out[0]) != 0) die("gate: %s's output differs from %s's", cname[c], cname[0]);
    if (memcmp(carry[c], carry[0], sizeof carry[0]) != 0) die("gate: %s's carry differs from %s's", cname[c], cname[0]);
  }
  fprintf(stderr, "fk_bench_runtime: gate: 4 contenders, 3 steps: outputs and carries bit-identical\n");
}

/* ---- statistics ---------------------------------------------------------------------------- */

/* the series statistics are fkb_common.c's */
typedef fkb_series series;
#define cmp_double fkb_cmp_double
#define med fkb_series_median
#define mn fkb_series_min
#define mx fkb_series_max

/* ---- the runs -------------------------------------------------------------------------------- */

static series step_hot[NC], step_cold[NC];
enum { E_PLAN, E_OMP, NE };
static const char *const ename[NE] = { "plan (fk_plan_run_empty)", "OpenMP region + barriers" };
static series empty1[NE][2], empty4[NE][2]; /* [contender][threads - 1]: s per run of 1 / 4 phases */
static series wake4[NE][2];                 /* the first run of 4 phases after the 20 ms idle gap */
/* Before every timed batch: 20 ms idle. libgomp's workers keep spinning for milliseconds after a
 * region ends (GOMP_SPINCOUNT), as the team's members spin briefly after a run; on 2 cores a
 * contender timed right after another would share its CPUs with the previous one's spinners. */
static void settle(void) {
  struct timespec ts = { 0, 20 * 1000 * 1000 };
  nanosleep(&ts, NULL);
}

static series phase_ns[2][4];
static series probe_gbs[2];                 /* the read probe, GB/s, 1 and 2 threads */

static double time_probe(world *w, int threads) {
  settle();
  double t0 = now();
  fkb_omp_probe(w->probe, threads);
  return (double)fkb_probe_bytes(w->probe) / (now() - t0) / 1e9;
}               /* FK_PLAN_TIMING: per phase, 1 and 2 threads, hot */

static double time_steps(world *w, cid c, int cold) {
  settle();
  int n = cold ? w->layers : HOT_BATCH;
  double t0 = now();
  for (int i = 0; i < n; i++) step(w, c, cold ? i : 0);
  return (now() - t0) / n;
}

/* The clock's own cost: the median of back-to-back now() pairs, subtracted from each run. */
static double clock_cost;
static void measure_clock(void) {
  static double d[EMPTY_BATCH];
  for (int i = 0; i < EMPTY_BATCH; i++) {
    double t0 = now();
    d[i] = now() - t0;
  }
  qsort(d, EMPTY_BATCH, sizeof d[0], cmp_double);
  clock_cost = d[EMPTY_BATCH / 2];
}

/* A batch of runs after the idle gap, each timed alone: returns the median run, and in *first
 * the first run (the one that wakes members asleep since the gap). */
static double time_empty(world *w, int e, int threads, int phases, double *first) {
  static double d[EMPTY_BATCH];
  fk_plan *p = threads == 1 ? w->plan1[0] : w->plan2[0];
  settle();
  for (int i = 0; i < EMPTY_BATCH; i++) {
    double t0 = now();
    if (e == E_PLAN) fk_plan_run_empty(p, phases);
    else fkb_omp_empty(phases, threads);
    d[i] = now() - t0 - clock_cost;
  }
  *first = d[0];
  qsort(d, EMPTY_BATCH, sizeof d[0], cmp_double);
  return d[EMPTY_BATCH / 2];
}

static void run_all(world *w) {
  for (int r = 0; r < opt.reps; r++) {
    for (int k = 0; k < NC; k++) {
      cid c = (cid)((k + r) % NC);
      step_hot[c].v[step_hot[c].n++] = time_steps(w, c, 0);
      step_cold[c].v[step_cold[c].n++] = time_steps(w, c, 1);
    }
    for (int k = 0; k < NE * 2; k++) {
      int e = (k + r) % NE, t = ((k + r) / NE) % 2 + 1;
      double f1, f4;
      empty1[e][t - 1].v[empty1[e][t - 1].n++] = time_empty(w, e, t, 1, &f1);
      empty4[e][t - 1].v[empty4[e][t - 1].n++] = time_empty(w, e, t, 4, &f4);
      wake4[e][t - 1].v[wake4[e][t - 1].n++] = f4;
    }
    for (int k = 0; k < 2; k++) {
      int t = (k + r) % 2 + 1;
      probe_gbs[t - 1].v[probe_gbs[t - 1].n++] = time_probe(w, t);
    }
    fprintf(stderr, "fk_bench_runtime: repetition %d of %d: hot plan 1T %.1f us, plan 2T %.1f us\n", r + 1, opt.reps,
            1e6 * step_hot[C_PLAN1].v[r], 1e6 * step_hot[C_PLAN2].v[r]);
  }
}

/* Per-phase times with FK_PLAN_TIMING (separate plans: timing reads the clock at each barrier). */
static void run_phases(const model *m) {
  for (int t = 1; t <= 2; t++) {
    fk_plan_desc d = { .programs = FK_PROGRAMS_BLOCK, .threads = t, .hidden = H, .max_rows = 1, .norm_eps = 1e-5f,
                       .flags = FK_PLAN_TIMING,
                       .block = { .norm = m->norm, .in_proj = m->in_proj, .conv = m->conv, .out_proj = m->out_proj } };
    fk_plan *p;
    fk_error err;
    if (fk_plan_create(&d, &p, &err) != FK_OK) die("fk_plan_create: %s", err.message);
    uint16_t x[H];
    for (int i = 0; i < H; i++) x[i] = fkb_f32_to_bf16(uniform());
    fk_io io = { .rows = 1, .x = x, .ldx = H };
    for (int r = 0; r < opt.reps; r++) {
      fk_plan_timing_reset(p);
      for (int s = 0; s < HOT_BATCH; s++) fk_run(p, FK_PROG_BLOCK_DECODE, &io, &err);
      for (int i = 0; i < 4; i++) {
        fk_phase_info ph;
        fk_phase_query(p, FK_PROG_BLOCK_DECODE, i, &ph, &err);
        phase_ns[t - 1][i].v[phase_ns[t - 1][i].n++] = (double)ph.ns / (double)ph.runs;
      }
    }
    fk_plan_destroy(p);
  }
}

/* ---- the results: runtime.csv, runtime-meta.csv (bench/report.py writes runtime.md) ------------ */

/* One row of runtime.csv: table, contender, threads, case, median, min, max, unit. */
static void row(fkb_out *o, const char *table, const char *who, int threads, const char *what, double scale,
                const series *s, const char *unit) {
  fkb_col_word(o, table);
  fkb_col_str(o, who);
  fkb_col_int(o, threads);
  fkb_col_word(o, what);
  fkb_col_num(o, scale * med(s));
  fkb_col_num(o, scale * mn(s));
  fkb_col_num(o, scale * mx(s));
  fkb_col_word(o, unit);
  fkb_row_end(o);
}

static void derived(fkb_out *o, int threads, const char *what, double v, const char *unit) {
  fkb_col_word(o, "derived");
  fkb_col_str(o, "plan");
  fkb_col_int(o, threads);
  fkb_col_word(o, what);
  fkb_col_num(o, v);
  fkb_col_empty(o);
  fkb_col_empty(o);
  fkb_col_word(o, unit);
  fkb_row_end(o);
}

static void results(fkb_out *o, const world *w) {
  double bytes = (double)(fk_gemv_packed_elems(3 * H, H) + fk_gemv_packed_elems(H, H)) * 2;
  fkb_meta(o, "reps", "", "%d", opt.reps);
  fkb_meta(o, "version", "flashkern", "flashkern %s", FKB_FLASHKERN_VERSION);
  fkb_meta(o, "version", "OpenMP", "%s", fkb_omp_version());
  fkb_meta(o, "stamp", "rmsnorm_bf16_wide", "%s", w->blk[0].norm.symbol);
  fkb_meta(o, "stamp", "gemv_bf16_rne_packed", "%s", w->blk[0].in.symbol);
  fkb_meta(o, "stamp", "shortconv_bf16_wide", "%s", w->blk[0].conv.symbol);
  fkb_meta(o, "stamp", "gemv_bf16_rne_add_packed", "%s", w->blk[0].out.symbol);
  fkb_meta_num(o, "weight_bytes", "", bytes);
  fkb_meta(o, "hot_batch", "", "%d", HOT_BATCH);
  fkb_meta(o, "layers", "", "%d", w->layers);
  fkb_meta(o, "empty_batch", "", "%d", EMPTY_BATCH);
  fkb_meta_num(o, "clock_ns", "", 1e9 * clock_cost);
  fkb_meta(o, "probe", "kind", "%s", fkb_probe_kind(w->probe));
  fkb_meta_num(o, "probe", "bytes", (double)fkb_probe_bytes(w->probe));

  for (int c = 0; c < NC; c++) {
    row(o, "step", cname[c], c >= C_PLAN2 ? 2 : 1, "hot", 1e6, &step_hot[c], "us");
    row(o, "step", cname[c], c >= C_PLAN2 ? 2 : 1, "cold", 1e6, &step_cold[c], "us");
  }
  row(o, "probe", "read", 1, "cold", 1, &probe_gbs[0], "GB/s");
  row(o, "probe", "read", 2, "cold", 1, &probe_gbs[1], "GB/s");
  const series *S[2] = { step_hot, step_cold };
  static const char *const ovn[2] = { "overhead_hot", "overhead_cold" }, *const scn[2] = { "scaling_hot", "scaling_cold" };
  for (int k = 0; k < 2; k++) derived(o, 1, ovn[k], 1e9 * (med(&S[k][C_PLAN1]) - med(&S[k][C_DIRECT1])), "ns");
  for (int k = 0; k < 2; k++) derived(o, 2, scn[k], med(&S[k][C_PLAN1]) / med(&S[k][C_PLAN2]), "x");
  for (int e = 0; e < NE; e++)
    for (int t = 0; t < 2; t++) {
      row(o, "empty", ename[e], t + 1, "first4_after_gap", 1e9, &wake4[e][t], "ns");
      row(o, "empty", ename[e], t + 1, "1phase", 1e9, &empty1[e][t], "ns");
      row(o, "empty", ename[e], t + 1, "4phases", 1e9, &empty4[e][t], "ns");
    }
  derived(o, 2, "empty4_share_hot", med(&empty4[E_PLAN][1]) / med(&step_hot[C_PLAN2]), "fraction");
  static const char *const phn[4] = { "rmsnorm", "in_proj", "conv", "out_proj" };
  for (int i = 0; i < 4; i++)
    for (int t = 0; t < 2; t++) row(o, "phase", phn[i], t + 1, "hot", 1, &phase_ns[t][i], "ns");
}

int main(int argc, char **argv) {
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--quick")) opt.reps = 5;
    else if (!strcmp(argv[i], "--reps") && i + 1 < argc) opt.reps = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--out") && i + 1 < argc) opt.out = argv[++i];
    else die("usage: fk_bench_runtime [--quick] [--reps N] [--out DIR]");
  }
  if (opt.reps < 1 || opt.reps > MAX_REPS) die("--reps must be in 1..%d", MAX_REPS);
  /* The results files are opened before the long run, not after it. */
  fkb_out *out = fkb_out_open("fk_bench_runtime", opt.out, "runtime",
                              "table,contender,threads,case,median,min,max,unit", argc, argv);
  model m;
  model_make(&m);
  world *w = calloc(1, sizeof *w);
  double bytes = (double)(fk_gemv_packed_elems(3 * H, H) + fk_gemv_packed_elems(H, H)) * 2;
  w->layers = (int)ceil((double)FKB_ROTATE_BYTES / bytes);
  w->plan1 = calloc((size_t)w->layers, sizeof *w->plan1);
  w->plan2 = calloc((size_t)w->layers, sizeof *w->plan2);
  w->blk = calloc((size_t)w->layers, sizeof *w->blk);
  if (!w->plan1 || !w->plan2 || !w->blk) die("out of memory");
  fprintf(stderr, "fk_bench_runtime: readiness of %d layers x (plan 1T, plan 2T, bench copy), %.2f GiB each\n",
          w->layers, bytes * w->layers / (double)(1u << 30));
  for (int l = 0; l < w->layers; l++) {
    /* the layers' plans share one team, as a host's model would (desc.team_of) */
    w->plan1[l] = plan_make(&m, 1, l ? w->plan1[0] : NULL);
    w->plan2[l] = plan_make(&m, 2, l ? w->plan2[0] : NULL);
    block_make(&m, &w->blk[l], l ? &w->blk[0] : NULL);
  }
  w->probe = fkb_probe_create(FKB_ROTATE_BYTES);
  if (!w->probe) die("cannot allocate the read probe");
  for (int i = 0; i < H; i++) w->x[i] = fkb_f32_to_bf16(uniform());
  gate(w);
  measure_clock();
  run_all(w);
  run_phases(&m);
  results(out, w);
  fkb_out_close(out);
  fprintf(stderr, "fk_bench_runtime: wrote %s/runtime.csv, runtime-meta.csv (bench/report.py runtime renders them)\n",
          opt.out);
  return 0;
}
