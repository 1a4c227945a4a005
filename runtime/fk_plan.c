/* runtime/fk_plan.c: readiness (fk_plan_create), the programs' phase tables, fk_run.
 *
 * Everything a program touches lives in one arena allocated here: the plan itself, the packed
 * weights, the transient planes and the state. A phase is a function that issues the leaf
 * calls of one member's share; the share is a pure function of (rows, member, team size) and
 * every output element is computed by exactly one leaf call whose arithmetic does not depend on
 * the share, so results are the same for every team size. */
#define _GNU_SOURCE
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#if defined(__linux__)
#include <sys/mman.h>
#endif

#include "fk_plan_internal.h"

enum { SPEC_LD = FK_SPEC_LD, ALIGN = 64, LIMIT = 65536 };
_Static_assert(FK_TAIL_SPEC == FK_ISTFT_SPEC, "flashkern.h: FK_TAIL_SPEC is the istft leaf's spectrum size");

/* ORDER ROLE */
static const char *const role_names[R_COUNT] = { "rmsnorm", "in_proj", "conv", "out_proj", "head", "frames", "flush",
                                                 "conv", "embed", "codebooks", "qkprep", "attention", "attention",
                                                 "attention", "attention", "swiglu", "logits", "argmax", "sample" };

/* ---- the block's phases ----------------------------------------------------------------------- */

static void ph_norm(fk_plan *p, const fk_step *st, int m) {
  (void)st;
  int64_t b, e;
  fk_share(p->job.rows, m, p->threads, &b, &e);
  if (b == e) return;
  fk_rmsnorm_bf16_wide_args a = { .x = p->job.x + b * p->job.ldx, .w = p->norm_w, .y = p->xn + b * p->h, .n = p->h,
                                  .rows = e - b, .x_stride = p->job.ldx, .y_stride = p->h, .eps = p->eps };
  p->leaf[R_NORM].fn(&a);
}

static void ph_in_proj(fk_plan *p, const fk_step *st, int m) {
  (void)st;
  fk_gemv_job g = { R_IN, p->in_w, p->xn, p->h, p->h, p->bcx, NULL, 3 * p->h, 0, 0 };
  fk_gemv_run(p, m, &g, p->job.rows, 3 * p->h);
}

static void ph_conv(fk_plan *p, const fk_step *st, int m) {
  (void)st;
  if (m != 0) return; /* the carry is a recurrence over rows: one member, rows in order */
  if (p->conv_b) {
    fk_shortconv_bf16_bias_wide_args a = { .in = p->bcx, .w = p->conv_w, .bias = p->conv_b, .carry = p->carry,
                                           .y = p->cy, .h = p->h, .m = p->job.rows, .ld_in = 3 * p->h, .ldy = p->h };
    p->leaf[R_CONV].fn(&a);
  } else {
    fk_shortconv_bf16_wide_args a = { .in = p->bcx, .w = p->conv_w, .carry = p->carry, .y = p->cy, .h = p->h,
                                      .m = p->job.rows, .ld_in = 3 * p->h, .ldy = p->h };
    p->leaf[R_CONV].fn(&a);
  }
}

static void ph_out_proj(fk_plan *p, const fk_step *st, int m) {
  (void)st;
  /* the residual row is read and rewritten element by element (y may equal r) */
  fk_gemv_job g = { R_OUT, p->out_w, p->cy, p->h, p->h, p->job.x, p->job.x, p->job.ldx, 0, 0 };
  fk_gemv_run(p, m, &g, p->job.rows, p->h);
}

/* ---- the tail's phases ------------------------------------------------------------------------ */

static inline int64_t frame_samples(int64_t t) { return t == 0 ? 0 : t == 1 ? FK_ISTFT_HOP / 2 : FK_ISTFT_HOP; }

static void ph_head(fk_plan *p, const fk_step *st, int m) {
  (void)st;
  fk_gemv_job g = { R_HEAD, p->head_w, p->job.feat, p->job.ldfeat, p->tail_in, p->spec, NULL, SPEC_LD, 0, 0 };
  fk_gemv_run(p, m, &g, p->job.rows, FK_ISTFT_SPEC);
}

void fk_frames_run(fk_plan *p, float *ring, int64_t frames) {
  size_t elem = p->flags & FK_PLAN_PCM_I16 ? 2 : 4;
  char *pcm = p->job.pcm;
  for (int64_t f = 0; f < frames; f++) {
    int64_t t = p->job.frame0 + f;
    fk_istft_frame_args a = { .x = p->spec + f * SPEC_LD, .ring = ring, .y = (float *)(void *)pcm, .work = p->work,
                              .frame = t, .clip = p->clip };
    p->leaf[R_FRAME].fn(&a); /* the _i16 form's struct has the same layout (uint16_t *y) */
    pcm += (size_t)frame_samples(t) * elem;
  }
}

static void ph_frames(fk_plan *p, const fk_step *st, int m) {
  (void)st;
  if (m == 0) fk_frames_run(p, p->ring, p->job.rows); /* the ring is a recurrence over frames */
}

static void ph_flush(fk_plan *p, const fk_step *st, int m) {
  (void)st;
  if (m != 0) return;
  fk_istft_flush_args a = { .ring = p->ring, .y = p->job.pcm, .frame = p->job.frame0 };
  p->leaf[R_FLUSH].fn(&a);
}

/* ---- the programs --------------------------------------------------------------------------- */

typedef struct phase {
  const char *name, *split;
  void (*run)(fk_plan *, const fk_step *, int);
  fk_role role;
} phase;

/* The block and tail programs' phases; the model programs' steps come from fk_model_steps. */
typedef struct program_table {
  const char *name;
  uint32_t family;
  int nphases;
  phase phases[4];
} program_table;

#define BLOCK_PHASES \
  { { "rmsnorm", "rows", ph_norm, R_NORM }, { "in_proj", "weight rows", ph_in_proj, R_IN }, \
    { "conv", "member 0", ph_conv, R_CONV }, { "out_proj", "weight rows", ph_out_proj, R_OUT } }

static const program_table programs[FK_PROG_COUNT] = {
  [FK_PROG_BLOCK_PREFILL] = { "block_prefill", FK_PROGRAMS_BLOCK, 4, BLOCK_PHASES },
  [FK_PROG_BLOCK_DECODE] = { "block_decode", FK_PROGRAMS_BLOCK, 4, BLOCK_PHASES },
  [FK_PROG_TAIL] = { "tail", FK_PROGRAMS_TAIL, 2,
                     { { "head", "weight rows", ph_head, R_HEAD }, { "frames", "member 0", ph_frames, R_FRAME } } },
  [FK_PROG_TAIL_FLUSH] = { "tail_flush", FK_PROGRAMS_TAIL, 1, { { "flush", "member 0", ph_flush, R_FLUSH } } },
  [FK_PROG_LM_PREFILL] = { "lm_prefill", FK_PROGRAMS_LM, 0, { { 0 } } },
  [FK_PROG_LM_DECODE] = { "lm_decode", FK_PROGRAMS_LM, 0, { { 0 } } },
  [FK_PROG_DETOK] = { "detok", FK_PROGRAMS_DETOK, 0, { { 0 } } },
  [FK_PROG_DETOK_FLUSH] = { "detok_flush", FK_PROGRAMS_DETOK, 0, { { 0 } } },
};

static int is_model(fk_program prog) { return programs[prog].family & (FK_PROGRAMS_LM | FK_PROGRAMS_DETOK); }

/* Steps of a program in this plan (count when out is NULL). */
static int build_steps(const fk_plan *p, fk_program prog, fk_step *out) {
  if (!(p->programs & programs[prog].family)) return 0;
  if (is_model(prog)) return fk_model_steps(p, prog, out);
  const program_table *t = &programs[prog];
  for (int i = 0; out && i < t->nphases; i++)
    out[i] = (fk_step){ t->phases[i].run, t->phases[i].name, t->phases[i].split, t->phases[i].role, -1, -1 };
  return t->nphases;
}

static inline uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Runs every phase of p->job's program as `member`, a barrier after each (the team's work). */
static void member_run(void *ctx, int member) {
  fk_plan *p = ctx;
  if (p->job.program == FK_PROG_COUNT) { /* fk_plan_run_empty */
    for (int64_t i = 0; i < p->job.rows; i++) fk_barrier_wait(&p->team->phase);
    return;
  }
  const fk_step *steps = p->steps[p->job.program];
  int n = p->nsteps[p->job.program];
  fk_phase_time *tm = p->timing[p->job.program];
  int timed = member == 0 && (p->flags & FK_PLAN_TIMING);
  /* read before the first barrier: once the last one passes, member 0 may return and the host
   * destroy the plan, so no member touches p after it */
  void (*trace)(void *, const fk_plan *, const fk_step *) = p->trace;
  uint64_t t0 = timed ? now_ns() : 0;
  for (int i = 0; i < n; i++) {
    steps[i].run(p, &steps[i], member);
    fk_barrier_wait(&p->team->phase);
    if (trace) { /* tests only: every member waits while member 0 observes */
      if (member == 0) trace(p->trace_ctx, p, &steps[i]);
      fk_barrier_wait(&p->team->phase);
    }
    if (timed) {
      uint64_t t1 = now_ns();
      tm[i].runs++;
      tm[i].ns += t1 - t0;
      t0 = t1;
    }
  }
}

/* Member 0's side of a program: post the job, release the team, run its own share. */
static void dispatch(fk_plan *p) { fk_team_dispatch(p->team, member_run, p); }

void fk_plan_run_empty(fk_plan *p, int phases) {
  p->job = (fk_job){ .program = FK_PROG_COUNT, .rows = phases };
  dispatch(p);
}

/* ---- readiness ------------------------------------------------------------------------------ */

typedef struct carver {
  size_t used;
  char *base; /* NULL while sizing */
} carver;

static void *carve(carver *c, size_t bytes) {
  size_t at = (c->used + ALIGN - 1) / ALIGN * ALIGN;
  c->used = at + bytes;
  return c->base ? c->base + at : NULL;
}

static void *carve_cb(void *c, size_t bytes) { return carve(c, bytes); }

/* Lays out the arena (sizing it when c->base is NULL). */
static void layout(fk_plan *p, carver *c, int has_bias) {
  carve(c, sizeof *p);
  int64_t h = p->h, kmax = 1;
  if (p->programs & FK_PROGRAMS_BLOCK) {
    p->norm_w = carve(c, (size_t)h * 2);
    p->in_w = carve(c, fk_gemv_packed_elems(3 * h, h) * 2);
    p->conv_w = carve(c, (size_t)(3 * h) * 2);
    p->conv_b = has_bias ? carve(c, (size_t)h * 2) : NULL;
    p->out_w = carve(c, fk_gemv_packed_elems(h, h) * 2);
    p->xn = carve(c, (size_t)(p->max_rows * h) * 4);
    p->bcx = carve(c, (size_t)(p->max_rows * 3 * h) * 2);
    p->cy = carve(c, (size_t)(p->max_rows * h) * 4);
    p->carry = carve(c, (size_t)(2 * h) * 2);
    kmax = h;
  }
  if (p->programs & (FK_PROGRAMS_TAIL | FK_PROGRAMS_DETOK)) {
    /* the detokenizer runs the tail's head and frames on its own spectra and ring */
    int64_t frames = p->max_frames > 6 * p->detok_max_frames ? p->max_frames : 6 * p->detok_max_frames;
    p->head_w = carve(c, fk_gemv_packed_elems(FK_ISTFT_SPEC, p->tail_in) * 2);
    p->head_b = carve(c, FK_ISTFT_SPEC * 4);
    p->spec = carve(c, (size_t)(frames * SPEC_LD) * 4);
    p->work = carve(c, FK_ISTFT_WORK * 4);
    if (p->programs & FK_PROGRAMS_TAIL) p->ring = carve(c, FK_ISTFT_RING * 4);
    if (p->programs & FK_PROGRAMS_DETOK) p->dring = carve(c, FK_ISTFT_RING * 4);
    if (p->tail_in > kmax) kmax = p->tail_in;
  }
  int64_t km = fk_model_layout(p, carve_cb, c);
  if (km > kmax) kmax = km;
  size_t xs = (size_t)(4 * ((kmax + 63) / 64 * 64)) * 4;
  for (int m = 0; m < p->threads; m++) p->xs[m] = carve(c, xs);
  for (int prog = 0; prog < FK_PROG_COUNT; prog++) {
    int n = build_steps(p, (fk_program)prog, NULL);
    p->nsteps[prog] = n;
    p->steps[prog] = n ? carve(c, (size_t)n * sizeof(fk_step)) : NULL;
    p->timing[prog] = n ? carve(c, (size_t)n * sizeof(fk_phase_time)) : NULL;
    if (c->base && n) build_steps(p, (fk_program)prog, p->steps[prog]);
  }
}

#define DESC_CHECK(cond, ...) FK_RETURN_ERROR_IF(cond, err, FK_EINVAL, "fk_plan_create: " __VA_ARGS__)

static fk_status check_desc(const fk_plan_desc *d, fk_error *err) {
  DESC_CHECK(!d, "desc is NULL");
  const uint32_t all = FK_PROGRAMS_BLOCK | FK_PROGRAMS_TAIL | FK_PROGRAMS_LM | FK_PROGRAMS_DETOK;
  DESC_CHECK(d->programs == 0 || (d->programs & ~all),
             "desc.programs = 0x%x: must be a non-empty set of FK_PROGRAMS_BLOCK, FK_PROGRAMS_TAIL, FK_PROGRAMS_LM, "
             "FK_PROGRAMS_DETOK", d->programs);
  DESC_CHECK(d->team_of && d->team_of->threads != d->threads,
             "desc.threads = %d: must equal the team's size, %d (desc.team_of)", d->threads,
             d->team_of ? d->team_of->threads : 0);
  DESC_CHECK(d->threads < 1 || d->threads > FK_MAX_THREADS, "desc.threads = %d: must be in 1..%d", d->threads,
             FK_MAX_THREADS);
  DESC_CHECK((unsigned)d->tier > FK_TIER_FAST, "desc.tier = %d: not a tier", (int)d->tier);
  DESC_CHECK(d->flags & ~(FK_PLAN_TIMING | FK_PLAN_PCM_I16 | FK_PLAN_NO_PIN), "desc.flags = 0x%x: unknown bits 0x%x",
             d->flags, d->flags & ~(FK_PLAN_TIMING | FK_PLAN_PCM_I16 | FK_PLAN_NO_PIN));
  if (d->programs & FK_PROGRAMS_BLOCK) {
    DESC_CHECK(d->hidden < 1 || d->hidden > LIMIT, "desc.hidden = %lld: must be in 1..%d", (long long)d->hidden, LIMIT);
    DESC_CHECK(d->max_rows < 1 || d->max_rows > LIMIT, "desc.max_rows = %lld: must be in 1..%d",
               (long long)d->max_rows, LIMIT);
    DESC_CHECK(!(d->norm_eps > 0.0f) || !isfinite(d->norm_eps), "desc.norm_eps = %g: must be finite and > 0",
               (double)d->norm_eps);
    DESC_CHECK(!d->block.norm, "desc.block.norm is NULL");
    DESC_CHECK(!d->block.in_proj, "desc.block.in_proj is NULL");
    DESC_CHECK(!d->block.conv, "desc.block.conv is NULL");
    DESC_CHECK(!d->block.out_proj, "desc.block.out_proj is NULL");
  }
  if (d->programs & (FK_PROGRAMS_TAIL | FK_PROGRAMS_DETOK)) {
    DESC_CHECK(d->tail_in < 1 || d->tail_in > LIMIT, "desc.tail_in = %lld: must be in 1..%d", (long long)d->tail_in,
               LIMIT);
    if (d->programs & FK_PROGRAMS_TAIL)
      DESC_CHECK(d->max_frames < 1 || d->max_frames > LIMIT, "desc.max_frames = %lld: must be in 1..%d",
                 (long long)d->max_frames, LIMIT);
    DESC_CHECK(!(d->clip > 0.0f), "desc.clip = %g: must be > 0 (INFINITY: no clip)", (double)d->clip);
    DESC_CHECK(!d->tail.lin, "desc.tail.lin is NULL");
    DESC_CHECK(!d->tail.bias, "desc.tail.bias is NULL");
  }
  return fk_model_check_desc(d, err);
}

static fk_status resolve(fk_plan *p, const fk_plan_desc *d, uint64_t features, fk_error *err) {
  int i16 = (d->flags & FK_PLAN_PCM_I16) != 0;
  struct {
    fk_role role;
    uint32_t family;
    const char *form;
    fk_tier tier;
  } want[] = {
    { R_NORM, FK_PROGRAMS_BLOCK | FK_PROGRAMS_LM | FK_PROGRAMS_DETOK, "rmsnorm_bf16_wide", FK_TIER_EXACT },
    { R_IN, FK_PROGRAMS_BLOCK | FK_PROGRAMS_LM | FK_PROGRAMS_DETOK, "gemv_bf16_rne_packed", d->tier },
    { R_CONV, FK_PROGRAMS_BLOCK, d->block.conv_bias ? "shortconv_bf16_bias_wide" : "shortconv_bf16_wide",
      FK_TIER_EXACT },
    { R_OUT, FK_PROGRAMS_BLOCK | FK_PROGRAMS_LM | FK_PROGRAMS_DETOK, "gemv_bf16_rne_add_packed", d->tier },
    { R_HEAD, FK_PROGRAMS_TAIL | FK_PROGRAMS_DETOK, "gemv_f32_bias_packed", d->tier },
    { R_FRAME, FK_PROGRAMS_TAIL | FK_PROGRAMS_DETOK, i16 ? "istft_frame_i16" : "istft_frame", FK_TIER_EXACT },
    { R_FLUSH, FK_PROGRAMS_TAIL | FK_PROGRAMS_DETOK, i16 ? "istft_flush_i16" : "istft_flush", FK_TIER_EXACT },
    /* the model programs */
    { R_MCONV, FK_PROGRAMS_LM | FK_PROGRAMS_DETOK, "shortconv_bf16_wide", FK_TIER_EXACT },
    { R_QKPREP, FK_PROGRAMS_LM | FK_PROGRAMS_DETOK, "qkprep_neox64", FK_TIER_EXACT },
    { R_SWIGLU, FK_PROGRAMS_LM | FK_PROGRAMS_DETOK, "swiglu_bf16_wide", FK_TIER_EXACT },
    { R_ATTN_DEC, FK_PROGRAMS_LM, "attn_decode64_wide", FK_TIER_EXACT },
    { R_ATTN_PRE, FK_PROGRAMS_LM | FK_PROGRAMS_DETOK, "attn_prefill64_wide", FK_TIER_EXACT },
    { R_ATTN_DEC_RING, FK_PROGRAMS_LM, "attn_decode_ring64_wide", FK_TIER_EXACT },
    { R_ATTN_PRE_RING, FK_PROGRAMS_LM | FK_PROGRAMS_DETOK, "attn_prefill_ring64_wide", FK_TIER_EXACT },
    { R_EMBED, FK_PROGRAMS_LM, "embed_gather_bf16", FK_TIER_EXACT },
    { R_LOGITS, FK_PROGRAMS_LM, "gemv_f32_packed", d->tier },
    { R_ARGMAX, FK_PROGRAMS_LM, "sample_argmax", FK_TIER_EXACT },
    { R_TOPK, FK_PROGRAMS_LM, "sample_topk", FK_TIER_EXACT },
    { R_CODEBOOK, FK_PROGRAMS_DETOK, "embed_codebook_mean_x6_bf16", FK_TIER_EXACT },
  };
  for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
    if (!(d->programs & want[i].family)) continue;
    fk_error e;
    fk_status s = fk_leaf_resolve(want[i].form, want[i].tier, features, &p->leaf[want[i].role], &e);
    if (s != FK_OK)
      return fk_error_set(err, s, e.file, e.line, "fk_plan_create: phase %s: %s", role_names[want[i].role], e.message);
  }
  return FK_OK;
}

static void *arena_alloc(size_t bytes) {
  /* 2 MiB alignment lets the kernel back the packed weights with huge pages */
  size_t huge = (size_t)2 << 20;
  void *m = NULL;
  if (posix_memalign(&m, bytes >= huge ? huge : ALIGN, (bytes + ALIGN - 1) / ALIGN * ALIGN) != 0) return NULL;
#if defined(__linux__) && defined(MADV_HUGEPAGE)
  if (bytes >= huge) madvise(m, bytes / huge * huge, MADV_HUGEPAGE);
#endif
  memset(m, 0, bytes); /* every page touched now, not in a pass */
  return m;
}

/* Readiness without side effects: the descriptor checked, the stamps resolved, the arena sized. */
static fk_status prepare(const fk_plan_desc *d, fk_plan *tmp, size_t *bytes, fk_error *err) {
  fk_status s = check_desc(d, err);
  if (s != FK_OK) return s;
  memset(tmp, 0, sizeof *tmp);
  tmp->programs = d->programs;
  tmp->flags = d->flags;
  tmp->threads = d->threads;
  tmp->tier = d->tier;
  tmp->h = d->programs & FK_PROGRAMS_BLOCK ? d->hidden : 0;
  tmp->max_rows = d->programs & FK_PROGRAMS_BLOCK ? d->max_rows : 0;
  tmp->eps = d->norm_eps;
  tmp->tail_in = d->programs & (FK_PROGRAMS_TAIL | FK_PROGRAMS_DETOK) ? d->tail_in : 0;
  tmp->max_frames = d->programs & FK_PROGRAMS_TAIL ? d->max_frames : 0;
  tmp->clip = d->clip;
  fk_model_shapes(tmp, d);
  s = resolve(tmp, d, fk_cpu_features() & ~d->forbid_features, err);
  if (s != FK_OK) return s;
  carver c = { 0, NULL };
  layout(tmp, &c, (d->programs & FK_PROGRAMS_BLOCK) && d->block.conv_bias);
  *bytes = c.used;
  return FK_OK;
}

fk_status fk_plan_check(const fk_plan_desc *d, size_t *arena_bytes, fk_error *err) {
  fk_plan tmp;
  size_t bytes = 0;
  fk_status s = prepare(d, &tmp, &bytes, err);
  if (s == FK_OK && arena_bytes) *arena_bytes = bytes;
  return s;
}

fk_status fk_plan_create(const fk_plan_desc *d, fk_plan **out, fk_error *err) {
  FK_RETURN_ERROR_IF(!out, err, FK_EINVAL, "fk_plan_create: out is NULL");
  *out = NULL;
  fk_plan tmp;
  size_t bytes = 0;
  fk_status s = prepare(d, &tmp, &bytes, err);
  if (s != FK_OK) return s;

  int has_bias = (d->programs & FK_PROGRAMS_BLOCK) && d->block.conv_bias;
  carver c = { bytes, NULL };
  char *base = arena_alloc(c.used);
  FK_RETURN_ERROR_IF(!base, err, FK_ENOMEM, "fk_plan_create: the arena (%zu bytes) could not be allocated", c.used);
  fk_plan *p = (fk_plan *)(void *)base;
  memcpy(p, &tmp, sizeof *p);
  c = (carver){ 0, base };
  layout(p, &c, has_bias);
  p->arena = base;
  p->arena_bytes = c.used;

  /* the shapes were checked: packing cannot fail, and is checked all the same */
  s = FK_OK;
  if (p->programs & FK_PROGRAMS_BLOCK) {
    int64_t h = p->h;
    memcpy(p->norm_w, d->block.norm, (size_t)h * 2);
    if (s == FK_OK) s = fk_gemv_pack(d->block.in_proj, h, 3 * h, h, p->in_w, fk_gemv_packed_elems(3 * h, h), err);
    if (s == FK_OK) s = fk_gemv_pack(d->block.out_proj, h, h, h, p->out_w, fk_gemv_packed_elems(h, h), err);
    /* conv.weight[c, 0, k] -> tap-major w[k*h + c] (the leaf's layout) */
    for (int64_t ch = 0; ch < h; ch++)
      for (int k = 0; k < 3; k++) p->conv_w[k * h + ch] = d->block.conv[3 * ch + k];
    if (has_bias) memcpy(p->conv_b, d->block.conv_bias, (size_t)h * 2);
  }
  if (s == FK_OK) s = fk_model_pack(p, d, err);
  if (p->programs & (FK_PROGRAMS_TAIL | FK_PROGRAMS_DETOK)) {
    if (s == FK_OK)
      s = fk_gemv_pack(d->tail.lin, p->tail_in, FK_ISTFT_SPEC, p->tail_in, p->head_w,
                       fk_gemv_packed_elems(FK_ISTFT_SPEC, p->tail_in), err);
    memcpy(p->head_b, d->tail.bias, FK_ISTFT_SPEC * 4);
  }
  atomic_init(&p->busy, 0);
  fk_state_reset(p);
  if (s == FK_OK && d->team_of) {
    p->team = d->team_of->team;
    atomic_fetch_add(&p->team->refs, 1);
  } else if (s == FK_OK) {
    s = fk_team_create(p->threads, p->flags, &p->team, err);
  }
  if (s != FK_OK) {
    free(base);
    return s;
  }
  *out = p;
  return FK_OK;
}

void fk_plan_destroy(fk_plan *p) {
  if (!p) return;
  fk_team_release(p->team);
  free(p->arena);
}

/* ---- fk_run ----------------------------------------------------------------------------------- */

/* the program's name comes first in every message */
#define RUN_CHECK(cond, fmt, ...) FK_RETURN_ERROR_IF(cond, err, FK_EINVAL, "fk_run(%s): " fmt, name, ##__VA_ARGS__)

static fk_status check_io(const fk_plan *p, fk_program prog, const fk_io *io, int64_t *pcm_need, fk_error *err) {
  const char *name = programs[prog].name;
  *pcm_need = 0;
  RUN_CHECK(!io, "io is NULL");
  if (is_model(prog)) return fk_model_check_io(p, prog, io, pcm_need, err);
  if (programs[prog].family == FK_PROGRAMS_BLOCK) {
    if (prog == FK_PROG_BLOCK_DECODE)
      RUN_CHECK(io->rows != 1, "io.rows = %lld: decode runs exactly 1 row", (long long)io->rows);
    RUN_CHECK(io->rows < 1 || io->rows > p->max_rows, "io.rows = %lld: must be in 1..%lld (desc.max_rows)",
              (long long)io->rows, (long long)p->max_rows);
    RUN_CHECK(!io->x, "io.x is NULL");
    RUN_CHECK(io->ldx < p->h, "io.ldx = %lld: must be >= hidden = %lld", (long long)io->ldx, (long long)p->h);
    RUN_CHECK(fk_extent(io->rows, io->ldx, p->h, 2) == 0, "io.ldx = %lld: %lld rows of it overflow the address space",
              (long long)io->ldx, (long long)io->rows);
    return FK_OK;
  }
  if (prog == FK_PROG_TAIL) {
    RUN_CHECK(io->rows < 1 || io->rows > p->max_frames, "io.rows = %lld: must be in 1..%lld (desc.max_frames)",
              (long long)io->rows, (long long)p->max_frames);
    RUN_CHECK(!io->feat, "io.feat is NULL");
    RUN_CHECK(io->ldfeat < p->tail_in, "io.ldfeat = %lld: must be >= tail_in = %lld", (long long)io->ldfeat,
              (long long)p->tail_in);
    RUN_CHECK(fk_extent(io->rows, io->ldfeat, p->tail_in, 4) == 0,
              "io.ldfeat = %lld: %lld rows of it overflow the address space", (long long)io->ldfeat, (long long)io->rows);
    for (int64_t f = 0; f < io->rows; f++) *pcm_need += frame_samples(p->frames + f);
  } else {
    FK_RETURN_ERROR_IF(p->frames == 1, err, FK_ESTATE,
                       "fk_run(%s): the stream has 1 frame; the flush leaf needs >= 2 (send another frame first)",
                       name);
    *pcm_need = p->frames == 0 ? 0 : FK_ISTFT_FLUSH;
  }
  RUN_CHECK(*pcm_need > 0 && !io->pcm, "io.pcm is NULL (%lld samples are due)", (long long)*pcm_need);
  RUN_CHECK(io->pcm_cap < *pcm_need, "io.pcm_cap = %lld: %lld samples are due", (long long)io->pcm_cap,
            (long long)*pcm_need);
  /* the PCM due must not overlap what the program reads, nor io.pcm_count (written after it) */
  size_t pcm_bytes = (size_t)*pcm_need * (p->flags & FK_PLAN_PCM_I16 ? 2 : 4);
  if (prog == FK_PROG_TAIL)
    RUN_CHECK(fk_overlap(io->pcm, pcm_bytes, io->feat, fk_extent(io->rows, io->ldfeat, p->tail_in, 4)),
              "io.pcm overlaps io.feat");
  RUN_CHECK(fk_overlap(io->pcm, pcm_bytes, io, sizeof *io), "io.pcm overlaps the fk_io itself");
  return FK_OK;
}

fk_status fk_run(fk_plan *p, fk_program prog, fk_io *io, fk_error *err) {
  FK_RETURN_ERROR_IF(!p, err, FK_EINVAL, "fk_run: plan is NULL");
  FK_RETURN_ERROR_IF((unsigned)prog >= FK_PROG_COUNT, err, FK_EINVAL, "fk_run: program = %d: not a program", (int)prog);
  FK_RETURN_ERROR_IF(!(p->programs & programs[prog].family), err, FK_EINVAL,
                     "fk_run(%s): the plan was not made ready for it (desc.programs = 0x%x)", programs[prog].name,
                     p->programs);
  int64_t pcm_need;
  fk_status s = check_io(p, prog, io, &pcm_need, err);
  if (s != FK_OK) return s;
  int idle = 0;
  FK_RETURN_ERROR_IF(!atomic_compare_exchange_strong(&p->busy, &idle, 1), err, FK_EBUSY,
                     "fk_run(%s): another fk_run is in flight on this plan", programs[prog].name);
  if (prog == FK_PROG_TAIL_FLUSH && p->frames == 0) {
    io->pcm_count = 0;
    atomic_store(&p->busy, 0);
    return FK_OK;
  }
  idle = 0;
  if (!atomic_compare_exchange_strong(&p->team->busy, &idle, 1)) {
    atomic_store(&p->busy, 0);
    return fk_error_set(err, FK_EBUSY, __FILE__, __LINE__,
                        "fk_run(%s): another plan on this plan's team (desc.team_of) is running", programs[prog].name);
  }
  p->job = (fk_job){ .program = prog, .rows = io->rows, .x = io->x, .ldx = io->ldx, .feat = io->feat,
                     .ldfeat = io->ldfeat, .pcm = io->pcm, .frame0 = p->frames, .tokens = io->tokens,
                     .codes = io->codes, .logits = io->logits, .sampling = io->sampling };
  if (is_model(prog)) {
    p->job.pos0 = p->stack[programs[prog].family == FK_PROGRAMS_LM ? 0 : 1].pos;
    p->job.frame0 = p->dframes;
  }
  dispatch(p);
  /* state commits, in causal order, after the program's last barrier */
  if (is_model(prog)) fk_model_commit(p, prog);
  else if (programs[prog].family == FK_PROGRAMS_BLOCK) p->tokens += p->job.rows; /* p->job: io may alias x */
  else if (prog == FK_PROG_TAIL) p->frames += p->job.rows;
  else p->frames = 0; /* the flush leaf has zeroed the ring */
  if (programs[prog].family & (FK_PROGRAMS_TAIL | FK_PROGRAMS_DETOK)) io->pcm_count = pcm_need;
  if (programs[prog].family == FK_PROGRAMS_LM) io->next = p->job.next;
  atomic_store(&p->team->busy, 0);
  atomic_store(&p->busy, 0);
  return FK_OK;
}

/* ---- introspection ---------------------------------------------------------------------------- */

int fk_plan_threads(const fk_plan *p) { return p ? p->threads : 0; }

size_t fk_plan_arena_bytes(const fk_plan *p) { return p ? p->arena_bytes : 0; }

const char *fk_program_name(fk_program prog) {
  return (unsigned)prog < FK_PROG_COUNT ? programs[prog].name : "?";
}

int fk_program_phases(const fk_plan *p, fk_program prog) {
  if (!p || (unsigned)prog >= FK_PROG_COUNT || !(p->programs & programs[prog].family)) return 0;
  return p->nsteps[prog];
}

fk_status fk_phase_query(const fk_plan *p, fk_program prog, int i, fk_phase_info *out, fk_error *err) {
  FK_RETURN_ERROR_IF(!p || !out, err, FK_EINVAL, "fk_phase_query: %s is NULL", p ? "out" : "plan");
  FK_RETURN_ERROR_IF(i < 0 || i >= fk_program_phases(p, prog), err, FK_EINVAL,
                     "fk_phase_query: %s has no phase %d in this plan", fk_program_name(prog), i);
  const fk_step *st = &p->steps[prog][i];
  *out = (fk_phase_info){ st->name, p->leaf[st->role].symbol, st->split, p->timing[prog][i].runs,
                          p->timing[prog][i].ns, st->layer };
  return FK_OK;
}

void fk_plan_timing_reset(fk_plan *p) {
  if (!p) return;
  for (int prog = 0; prog < FK_PROG_COUNT; prog++)
    if (p->nsteps[prog]) memset(p->timing[prog], 0, (size_t)p->nsteps[prog] * sizeof(fk_phase_time));
}

int fk_plan_member_cpu(const fk_plan *p, int member) {
  return p && member >= 0 && member < p->threads ? p->team->cpu[member] : -1;
}
