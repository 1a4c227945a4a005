/* bench/fk_bench_state.c: the benchmark of the state-committing leaves. flashkern's ShortConv
 * FIR/gate/carry (shortconv_bf16, shortconv_bf16_bias) and q/k preparation (qkprep_neox64,
 * qkprep_cis32: per-head RMSNorm + RoPE + RNE in place at cache slots) against the compiler's
 * vectorization of the same contract and the contract's plain scalar C, all in one process and
 * one run, beside an L2 read+write bandwidth probe.
 *
 * Every case (form, model widths, rows m) is hot: each contender calls its leaf on the same
 * buffers every time, and the buffers of all contenders together stay well inside the L2, so a
 * call's bound is the bytes it must move (inputs read, outputs and state written, per the leaf's
 * contract) at the L2's read+write bandwidth, which the probe measures in the same run,
 * interleaved with the contenders. Before timing, every contender's outputs and the state it
 * leaves (the ShortConv carry, the q rows and the K cache) are compared bit for bit with the
 * scalar contract model over three consecutive calls; one that differs is not timed. At startup
 * the same comparison runs on small cases with tails, NaN, infinities, signed zeros, subnormals
 * and ties; the bench stops if the autovec peer differs there.
 *
 * Output: DIR/state.csv (every row) and DIR/state-meta.csv (the machine, stamps, probe, per-case
 * facts), which bench/report.py renders into DIR/state.md. Progress goes to stderr. */
#define _GNU_SOURCE /* strncasecmp */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "fkb.h"
#include "fkb_state.h"
#include "flashkern.h"

#ifndef FKB_FLASHKERN_VERSION
#define FKB_FLASHKERN_VERSION "this tree"
#endif

/* ---- forms and contenders ------------------------------------------------------------------- */

typedef enum form_id { F_SC, F_SCB, F_NEOX64, F_CIS32, NF } form_id;

typedef struct form_info {
  const char *name; /* the flashkern form, as fk_leaf_resolve() takes it */
  int qk, hd;       /* qkprep: 1 and the head size */
  fk_leaf_fn vec, scalar;
} form_info;

static const form_info form_tab[NF] = {
  { "shortconv_bf16", 0, 0, fkb_vec_shortconv_bf16, fkb_scalar_shortconv_bf16 },
  { "shortconv_bf16_bias", 0, 0, fkb_vec_shortconv_bf16_bias, fkb_scalar_shortconv_bf16_bias },
  { "qkprep_neox64", 1, 64, fkb_vec_qkprep_neox64, fkb_scalar_qkprep_neox64 },
  { "qkprep_cis32", 1, 32, fkb_vec_qkprep_cis32, fkb_scalar_qkprep_cis32 },
};

/* The scalar model is the reference of the gates and must stay last but one (the probe is NE-1). */
enum { C_FK, C_VEC, C_SCALAR, NC, NE = NC + 1 /* entry NC is the probe */ };
static const char *const cname[NE] = { "flashkern exact", "autovec (gcc -O3 -march=native)", "scalar (gcc -O2)",
                                       "L2 probe" };

static fk_leaf resolved[NF];
static int resolved_ok[NF];
static char resolve_why[NF][300];

#define PROBE_BUFFER ((size_t)256 << 10) /* each of the probe's two buffers */
#define BATCH_S 100e-6                   /* a timed batch lasts about this long */
#define FOOTPRINT_MAX ((double)(512 << 10)) /* every case's buffers, all contenders: at most half the L2 */
#define CANARY 0x7fa5
#define GATE_CALLS 3

/* ---- small utilities ---------------------------------------------------------------------- */

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void die(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fputs("fk_bench_state: ", stderr);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
  exit(1);
}

static uint64_t rng_state = 0x9e3779b97f4a7c15u;
static uint64_t rng(void) { /* xorshift64* */
  rng_state ^= rng_state >> 12;
  rng_state ^= rng_state << 25;
  rng_state ^= rng_state >> 27;
  return rng_state * 0x2545f4914f6cdd1du;
}

/* A random bf16: random sign, exponent in [emin, emax] (below -126: a subnormal), random mantissa. */
static uint16_t rand_bf16(int emin, int emax) {
  uint64_t r = rng();
  int e = emin + (int)((r >> 8) % (uint64_t)(emax - emin + 1));
  uint16_t sign = (uint16_t)((r & 1u) << 15), mant = (uint16_t)((r >> 1) & 0x7fu);
  int biased = e + 127;
  if (biased <= 0) return (uint16_t)(sign | (mant ? mant : 1u));
  if (biased > 254) biased = 254;
  return (uint16_t)(sign | (uint16_t)(biased << 7) | mant);
}

static void *xalloc(size_t bytes) {
  void *p = fkb_alloc(bytes);
  if (!p) die("out of memory (%zu bytes)", bytes);
  return p;
}

/* ---- one problem instance: shared inputs, the initial state, each contender's own state ------ */

typedef struct shape {
  form_id form;
  int64_t h, m, pad_in, pad_y;          /* ShortConv: channels, rows, row padding of in and y */
  int64_t qheads, kheads, extent, ring; /* qkprep: heads of q and of k, K slots per head, ring W or 0 */
  int64_t pos, q_pad;                   /* qkprep: position of row 0, padding after each q row */
  float theta, eps;
} shape;

typedef union leaf_args {
  fk_shortconv_bf16_args sc;
  fk_shortconv_bf16_bias_args scb;
  fk_qkprep_neox64_args neox64;
  fk_qkprep_cis32_args cis32;
} leaf_args;

typedef struct cbuf {
  fk_leaf_fn fn;
  leaf_args a[2]; /* ShortConv: one call; qkprep: q, then k */
  int ncalls;
  uint16_t *carry, *y, *q, *k;
} cbuf;

typedef struct inst {
  shape s;
  int64_t hd, ld_in, ldy, q_ld_row, npos;
  uint16_t *in, *w, *bias, *wq, *wk; /* read only, shared */
  float *cos, *sin;
  uint16_t *carry0, *y0, *q0, *k0;   /* the state every contender starts from */
  size_t n_in, n_carry, n_y, n_q, n_k;
  cbuf c[NC];
} inst;

/* Bytes one call must move per the leaf's contract: inputs read once, outputs and state written
 * once (the carry read and written; q rows and K slots read and written in place). */
static double call_bytes(const shape *s, char *detail, size_t len) {
  if (!form_tab[s->form].qk) {
    double h = (double)s->h, m = (double)s->m, bias = s->form == F_SCB ? 2 * h : 0;
    double in = 6 * m * h, w = 6 * h, carry = 8 * h, y = 2 * m * h;
    if (detail) {
      char b[48] = "";
      if (s->form == F_SCB) snprintf(b, sizeof b, " + biases %.0f", bias);
      snprintf(detail, len, "in %.0f (m x 3h bf16) + taps %.0f%s + carry %.0f (2h bf16 read, 2h written) + y %.0f",
               in, w, b, carry, y);
    }
    return in + w + bias + carry + y;
  }
  double hd = (double)form_tab[s->form].hd, m = (double)s->m;
  double q = 4 * (double)s->qheads * m * hd, k = 4 * (double)s->kheads * m * hd, w = 2 * 2 * hd,
         tab = 2 * 2 * 4 * m * (hd / 2);
  if (detail)
    snprintf(detail, len, "q %.0f + k %.0f (read and written in place) + norm weights %.0f + cos/sin rows %.0f "
             "(each read by the q and the k call)", q, k, w, tab);
  return q + k + w + tab;
}

static void set_args(inst *I, cbuf *b, int call) {
  const shape *s = &I->s;
  if (!form_tab[s->form].qk) {
    if (s->form == F_SC)
      b->a[0].sc = (fk_shortconv_bf16_args){ I->in, I->w, b->carry, b->y, s->h, s->m, I->ld_in, I->ldy };
    else
      b->a[0].scb = (fk_shortconv_bf16_bias_args){ I->in, I->w, I->bias, b->carry, b->y, s->h, s->m, I->ld_in, I->ldy };
    b->ncalls = 1;
    return;
  }
  /* q: its rows (heads contiguous), linear; k: the cache, head-major, at slots pos + call*m */
  int64_t pos = s->pos + (int64_t)call * s->m, slot = s->ring ? pos % s->ring : pos;
  fk_qkprep_neox64_args q = { b->q, I->wq, I->cos, I->sin, s->qheads, s->m, I->hd, I->q_ld_row, pos, 0, 0, s->eps };
  fk_qkprep_neox64_args k = { b->k, I->wk, I->cos, I->sin, s->kheads, s->m, s->extent * I->hd, I->hd, pos, slot,
                              s->ring, s->eps };
  /* the qkprep forms share one field layout (fk_leaves.h) */
  _Static_assert(sizeof(fk_qkprep_neox64_args) == sizeof(fk_qkprep_cis32_args), "qkprep argument layouts");
  memcpy(&b->a[0], &q, sizeof q);
  memcpy(&b->a[1], &k, sizeof k);
  b->ncalls = 2;
}

static void inst_reset(inst *I) {
  for (int e = 0; e < NC; e++) {
    cbuf *b = &I->c[e];
    if (I->n_carry) memcpy(b->carry, I->carry0, I->n_carry * 2);
    if (I->n_y) memcpy(b->y, I->y0, I->n_y * 2);
    if (I->n_q) memcpy(b->q, I->q0, I->n_q * 2);
    if (I->n_k) memcpy(b->k, I->k0, I->n_k * 2);
    set_args(I, b, 0);
  }
}

/* Random inputs with exponents in [emin, emax] (weights in their own ranges), paddings hold the
 * canary; the caller may plant special values, then inst_reset(). */
static void inst_create(inst *I, const shape *s, int emin, int emax) {
  memset(I, 0, sizeof *I);
  I->s = *s;
  if (!form_tab[s->form].qk) {
    I->ld_in = 3 * s->h + s->pad_in;
    I->ldy = s->h + s->pad_y;
    int64_t rows = s->m ? s->m : 1;
    I->n_in = (size_t)(rows * I->ld_in), I->n_carry = (size_t)(2 * s->h), I->n_y = (size_t)(rows * I->ldy);
    I->in = xalloc(I->n_in * 2);
    I->w = xalloc((size_t)(3 * s->h) * 2);
    I->bias = xalloc((size_t)s->h * 2);
    I->carry0 = xalloc(I->n_carry * 2);
    I->y0 = xalloc(I->n_y * 2);
    for (size_t i = 0; i < I->n_in; i++) I->in[i] = (int64_t)i % I->ld_in < 3 * s->h ? rand_bf16(emin, emax) : CANARY;
    for (int64_t i = 0; i < 3 * s->h; i++) I->w[i] = rand_bf16(-3, 0);
    for (int64_t i = 0; i < s->h; i++) I->bias[i] = rand_bf16(-4, 0);
    for (size_t i = 0; i < I->n_carry; i++) I->carry0[i] = rand_bf16(emin, emax);
    for (size_t i = 0; i < I->n_y; i++) I->y0[i] = CANARY;
  } else {
    const int64_t hd = form_tab[s->form].hd, half = hd / 2;
    I->hd = hd;
    I->q_ld_row = s->qheads * hd + s->q_pad;
    I->n_q = (size_t)((s->m ? s->m : 1) * I->q_ld_row);
    I->n_k = (size_t)((s->kheads ? s->kheads : 1) * s->extent * hd);
    I->npos = s->pos + GATE_CALLS * s->m + 1;
    I->q0 = xalloc(I->n_q * 2);
    I->k0 = xalloc(I->n_k * 2);
    I->wq = xalloc((size_t)hd * 2);
    I->wk = xalloc((size_t)hd * 2);
    I->cos = xalloc((size_t)(I->npos * half) * sizeof(float));
    I->sin = xalloc((size_t)(I->npos * half) * sizeof(float));
    for (size_t i = 0; i < I->n_q; i++)
      I->q0[i] = (int64_t)i % I->q_ld_row < s->qheads * hd ? rand_bf16(emin, emax) : CANARY;
    for (size_t i = 0; i < I->n_k; i++) I->k0[i] = rand_bf16(emin, emax); /* other slots: other positions */
    for (int64_t i = 0; i < hd; i++) I->wq[i] = rand_bf16(-2, 1), I->wk[i] = rand_bf16(-2, 1);
    fk_error err;
    memset(&err, 0, sizeof err);
    if (fk_rope_table(s->theta, hd, 0, I->npos, I->cos, I->sin, &err) != FK_OK)
      die("fk_rope_table(%g, %lld, 0, %lld): %s: %s", (double)s->theta, (long long)hd, (long long)I->npos,
          fk_strerror(err.status), err.message);
  }
  for (int e = 0; e < NC; e++) {
    cbuf *b = &I->c[e];
    if (I->n_carry) b->carry = xalloc(I->n_carry * 2);
    if (I->n_y) b->y = xalloc(I->n_y * 2);
    if (I->n_q) b->q = xalloc(I->n_q * 2);
    if (I->n_k) b->k = xalloc(I->n_k * 2);
    b->fn = e == C_FK ? resolved[s->form].fn : e == C_VEC ? form_tab[s->form].vec : form_tab[s->form].scalar;
  }
  inst_reset(I);
}

static void inst_free(inst *I) {
  void *ps[] = { I->in, I->w, I->bias, I->wq, I->wk, I->cos, I->sin, I->carry0, I->y0, I->q0, I->k0 };
  for (size_t i = 0; i < sizeof ps / sizeof ps[0]; i++) fkb_free(ps[i]);
  for (int e = 0; e < NC; e++) {
    fkb_free(I->c[e].carry);
    fkb_free(I->c[e].y);
    fkb_free(I->c[e].q);
    fkb_free(I->c[e].k);
  }
}

/* Bytes a call touches (the q/k case: the rows and cache slots it reads and writes, the table
 * rows), per contender, and the read-only inputs shared by all: the hot footprint. */
static double inst_footprint(const inst *I, double *shared) {
  const shape *s = &I->s;
  if (!form_tab[s->form].qk) {
    *shared = 2.0 * ((double)I->n_in + 4.0 * (double)s->h);
    return 2.0 * ((double)I->n_carry + (double)I->n_y);
  }
  *shared = 2.0 * 2.0 * (double)I->hd + 2.0 * 4.0 * (double)(s->m * I->hd / 2);
  return 2.0 * (double)I->n_q + 2.0 * (double)(s->kheads * s->m * I->hd);
}

static inline void run(const cbuf *b) {
  b->fn(&b->a[0]);
  if (b->ncalls > 1) b->fn(&b->a[1]);
}

/* 0 when contender e's outputs and state equal the scalar model's bit for bit; else a message. */
static int compare(const inst *I, int e, int call, char *why, size_t len) {
  const cbuf *g = &I->c[e], *r = &I->c[C_SCALAR];
  struct {
    const char *name;
    const uint16_t *got, *want;
    size_t n;
    int64_t ld;
  } bufs[] = { { "y", g->y, r->y, I->n_y, I->ldy }, { "carry", g->carry, r->carry, I->n_carry, I->s.h },
               { "q", g->q, r->q, I->n_q, I->q_ld_row }, { "k cache", g->k, r->k, I->n_k, I->s.extent * I->hd } };
  for (size_t b = 0; b < sizeof bufs / sizeof bufs[0]; b++) {
    size_t bad = 0, first = 0;
    for (size_t i = 0; i < bufs[b].n; i++)
      if (bufs[b].got[i] != bufs[b].want[i] && bad++ == 0) first = i;
    if (!bad) continue;
    int64_t ld = bufs[b].ld > 0 ? bufs[b].ld : 1;
    snprintf(why, len, "call %d of %d: %s[%lld][%lld] = 0x%04x, the scalar contract model has 0x%04x (%zu of %zu "
             "elements differ)", call + 1, GATE_CALLS, bufs[b].name, (long long)((int64_t)first / ld),
             (long long)((int64_t)first % ld), bufs[b].got[first], bufs[b].want[first], bad, bufs[b].n);
    return -1;
  }
  return 0;
}

/* Three consecutive calls (the K slots and positions advancing), every contender compared with the
 * scalar model after each. bad[e] is set and why[e] filled for a contender that differs. */
static void gate(inst *I, int bad[NC], char why[NC][300]) {
  inst_reset(I);
  for (int e = 0; e < NC; e++) bad[e] = 0, why[e][0] = 0;
  for (int call = 0; call < GATE_CALLS; call++) {
    for (int e = 0; e < NC; e++) {
      set_args(I, &I->c[e], call);
      if (I->c[e].fn) run(&I->c[e]);
    }
    for (int e = 0; e < C_SCALAR; e++)
      if (!bad[e] && I->c[e].fn && compare(I, e, call, why[e], sizeof why[e])) bad[e] = 1;
  }
  inst_reset(I);
}

/* ---- startup self-check: small cases and special values -------------------------------------- */

static char selfcheck_fk[400]; /* flashkern's first disagreement, if any (reported, not fatal) */
static int selfcheck_cases;

static void check_one(inst *I, const char *name) {
  int bad[NC];
  char why[NC][300];
  gate(I, bad, why);
  selfcheck_cases++;
  if (bad[C_VEC])
    die("self-check failed: the autovec peer (%s) differs from the scalar contract model in %s, case %s: %s. "
        "Was state_autovec.c built with -ffp-contract=off and without -ffast-math?",
        fkb_vec_compiler(), form_tab[I->s.form].name, name, why[C_VEC]);
  if (bad[C_FK] && !selfcheck_fk[0]) {
    snprintf(selfcheck_fk, sizeof selfcheck_fk, "%s, case %s: %s", form_tab[I->s.form].name, name, why[C_FK]);
    fprintf(stderr, "fk_bench_state: WARNING: flashkern differs from the contract model: %s\n", selfcheck_fk);
  }
  inst_free(I);
}

static uint16_t *sc_part(inst *I, int64_t row, int which) { /* 0: B, 1: C, 2: x of a row */
  return I->in + row * I->ld_in + which * I->s.h;
}

static void selfcheck_shortconv(form_id f) {
  static const int64_t hs[] = { 1, 2, 7, 15, 16, 17, 31, 32, 33, 100, 1000 };
  inst I;
  char name[64];
  for (size_t i = 0; i < sizeof hs / sizeof hs[0]; i++)
    for (int64_t m = 0; m <= 3; m++) {
      shape s = { .form = f, .h = hs[i], .m = m, .pad_in = (int64_t)(i % 3), .pad_y = (int64_t)(i % 2) };
      inst_create(&I, &s, -3, 3);
      snprintf(name, sizeof name, "h%lld_m%lld", (long long)hs[i], (long long)m);
      check_one(&I, name);
    }
  shape s = { .form = f, .h = 20, .m = 4 };
  inst_create(&I, &s, -3, 3); /* a quiet NaN with a payload in x: Bx, y and the carry hold it */
  sc_part(&I, 0, 2)[5] = 0x7fc3;
  inst_reset(&I), check_one(&I, "nan_x");
  inst_create(&I, &s, -3, 3); /* a signaling NaN in B */
  sc_part(&I, 1, 0)[7] = 0xffa1;
  inst_reset(&I), check_one(&I, "nan_b_signaling");
  inst_create(&I, &s, -3, 3); /* NaN in both carry rows (other channels) */
  I.carry0[3] = 0x7f81, I.carry0[20 + 4] = 0xffc5;
  inst_reset(&I), check_one(&I, "nan_carry");
  inst_create(&I, &s, -3, 3); /* inf * 0 (the default NaN), -inf, an infinite gate */
  sc_part(&I, 0, 0)[2] = 0x7f80, sc_part(&I, 0, 2)[2] = 0;
  sc_part(&I, 1, 0)[9] = 0xff80, sc_part(&I, 2, 1)[11] = 0x7f80;
  inst_reset(&I), check_one(&I, "inf");
  shape z = { .form = f, .h = 33, .m = 3 };
  inst_create(&I, &z, -3, 3); /* signed zeros: B * x = -0 from a zero carry */
  memset(I.carry0, 0, I.n_carry * 2);
  for (int64_t r = 0; r < 3; r++)
    for (int i = 0; i < 33; i++) sc_part(&I, r, i % 2 ? 0 : 2)[i] = (uint16_t)(i % 3 ? 0x8000 : 0);
  inst_reset(&I), check_one(&I, "signed_zero");
  shape big = { .form = f, .h = 40, .m = 3 };
  inst_create(&I, &big, -70, -60), check_one(&I, "subnormal");
  inst_create(&I, &big, 40, 60), check_one(&I, "large");
  for (int k = 0; k < 3; k++) { /* exact ties of each rounding (tests/leaves/cases_shortconv.c) */
    shape t = { .form = f, .h = 3, .m = 1 };
    inst_create(&I, &t, -3, 3);
    memset(I.carry0, 0, I.n_carry * 2);
    for (int i = 0; i < 9; i++) I.w[i] = 0;
    I.w[6] = k == 1 ? 0x3fc0 : 0x3f80;
    sc_part(&I, 0, 0)[0] = k == 0 ? 0x3fc0 : 0x3f80;
    sc_part(&I, 0, 2)[0] = 0x3f81;
    sc_part(&I, 0, 1)[0] = k == 2 ? 0x3fc0 : 0x3f80;
    I.bias[0] = 0;
    inst_reset(&I);
    check_one(&I, k == 0 ? "tie_bx" : k == 1 ? "tie_conv" : "tie_gate");
  }
  for (int i = 0; i < 40; i++) {
    shape r = { .form = f, .h = 1 + (int64_t)(rng() % 300), .m = 1 + (int64_t)(rng() % 5),
                .pad_in = (int64_t)(rng() % 4), .pad_y = (int64_t)(rng() % 4) };
    inst_create(&I, &r, -4, 4);
    snprintf(name, sizeof name, "random_%d", i);
    check_one(&I, name);
  }
}

/* head g of q row j, or of K slot `slot` */
static uint16_t *q_head(inst *I, int64_t j, int64_t g) { return I->q0 + j * I->q_ld_row + g * I->hd; }
static uint16_t *k_head(inst *I, int64_t slot, int64_t g) { return I->k0 + g * I->s.extent * I->hd + slot * I->hd; }

static void selfcheck_qkprep(form_id f) {
  inst I;
  char name[64];
  const float eps[] = { 1e-5f, 1e-6f };
  for (int64_t heads = 0; heads <= 3; heads++)
    for (int64_t m = 1; m <= 3; m++) {
      /* linear K cache of 40 slots; a ring of W = 30 slots that wraps in the second call */
      shape lin = { .form = f, .m = m, .qheads = heads, .kheads = heads, .extent = 40, .ring = 0,
                    .pos = 5 + 3 * heads, .q_pad = 3, .theta = 1e6f, .eps = eps[m % 2] };
      inst_create(&I, &lin, -3, 3);
      snprintf(name, sizeof name, "linear_h%lld_m%lld", (long long)heads, (long long)m);
      check_one(&I, name);
      shape ring = lin;
      ring.extent = ring.ring = 30, ring.pos = 298 - m, ring.theta = 1e4f;
      inst_create(&I, &ring, -3, 3);
      snprintf(name, sizeof name, "ring30_h%lld_m%lld", (long long)heads, (long long)m);
      check_one(&I, name);
    }
  shape s = { .form = f, .m = 2, .qheads = 3, .kheads = 2, .extent = 16, .ring = 16, .pos = 14, .q_pad = 0,
              .theta = 1e6f, .eps = 1e-5f };
  /* one NaN per head (it spreads through the norm to the whole head): quiet positive, quiet
   * negative (the sign the negated table value must keep), signaling */
  inst_create(&I, &s, -3, 3);
  q_head(&I, 0, 1)[5] = 0x7fc3, q_head(&I, 1, 0)[40 % I.hd] = 0xffc1, q_head(&I, 1, 2)[1] = 0xff81;
  k_head(&I, 14, 1)[7] = 0xffc1, k_head(&I, 15, 0)[0] = 0x7f81;
  inst_reset(&I), check_one(&I, "nan");
  inst_create(&I, &s, -3, 3); /* a zero head (ss = 0: inv = 1/sqrt(eps)) with signed zeros */
  for (int64_t i = 0; i < I.hd; i++) q_head(&I, 0, 2)[i] = (uint16_t)(i % 3 ? 0x8000 : 0), k_head(&I, 15, 1)[i] = 0;
  inst_reset(&I), check_one(&I, "zero_head");
  inst_create(&I, &s, -3, 3); /* an infinity: ss = inf, inv = 0, inf * 0 the default NaN */
  q_head(&I, 1, 1)[3] = 0x7f80, k_head(&I, 14, 0)[9] = 0xff80;
  inst_reset(&I), check_one(&I, "inf");
  inst_create(&I, &s, -133, -127), check_one(&I, "subnormal"); /* bf16 subnormals: h*h underflows */
  inst_create(&I, &s, 60, 70), check_one(&I, "large");           /* ss overflows to inf */
  for (int i = 0; i < 40; i++) {
    shape r = { .form = f, .m = 1 + (int64_t)(rng() % 5), .qheads = (int64_t)(rng() % 6), .kheads = 1 + (int64_t)(rng() % 3),
                .extent = 24, .ring = i % 2 ? 24 : 0, .pos = (int64_t)(rng() % 40), .q_pad = (int64_t)(rng() % 5),
                .theta = 1e4f, .eps = 1e-5f };
    if (!r.ring && r.pos + GATE_CALLS * r.m > r.extent) r.extent = r.pos + GATE_CALLS * r.m;
    inst_create(&I, &r, -5, 5);
    snprintf(name, sizeof name, "random_%d", i);
    check_one(&I, name);
  }
}

static void self_check(void) {
  rng_state = 0x5eed5eedu;
  for (int f = 0; f < NF; f++) {
    if (form_tab[f].qk) /* an unresolved flashkern form is left out; the peers are checked all the same */ selfcheck_qkprep((form_id)f);
    else selfcheck_shortconv((form_id)f);
  }
}

/* ---- the cases ------------------------------------------------------------------------------- */

typedef struct bcase {
  shape s;
  const char *model, *what; /* whose widths; what the rows are */
  int64_t hidden;
} bcase;

#define SC(F, MODEL, H, M) { { .form = F, .h = H, .m = M }, MODEL, M == 1 ? "decode" : "prefill row group", H }
/* q: its rows, heads contiguous; k: a head-major cache, slot = pos (linear) or pos mod W (ring) */
#define QK(F, MODEL, HIDDEN, M, QH, KH, EXTENT, RING, POS, THETA, WHAT)                                             \
  { { .form = F, .m = M, .qheads = QH, .kheads = KH, .extent = EXTENT, .ring = RING, .pos = POS, .theta = THETA,    \
      .eps = 1e-5f }, MODEL, WHAT, HIDDEN }

static const bcase case_tab[] = {
  SC(F_SC, "LFM2-350M", 1024, 1),
  SC(F_SC, "LFM2-350M", 1024, 17),
  SC(F_SC, "LFM2-1.2B", 2048, 1),
  SC(F_SC, "LFM2-1.2B", 2048, 17),
  SC(F_SCB, "LFM2-350M", 1024, 1),
  SC(F_SCB, "LFM2-350M", 1024, 17),
  SC(F_SCB, "LFM2-1.2B", 2048, 1),
  SC(F_SCB, "LFM2-1.2B", 2048, 17),
  QK(F_NEOX64, "LFM2-350M", 1024, 1, 16, 8, 4096, 0, 1000, 1e6f, "decode; K cache linear, 4096 slots"),
  QK(F_NEOX64, "LFM2-350M", 1024, 17, 16, 8, 4096, 0, 1000, 1e6f, "prefill row group; K cache linear, 4096 slots"),
  QK(F_NEOX64, "LFM2-1.2B", 2048, 1, 32, 8, 4096, 0, 1000, 1e6f, "decode; K cache linear, 4096 slots"),
  QK(F_NEOX64, "LFM2-1.2B", 2048, 17, 32, 8, 4096, 0, 1000, 1e6f, "prefill row group; K cache linear, 4096 slots"),
  QK(F_NEOX64, "LFM2 detokenizer", 512, 1, 8, 8, 30, 30, 500, 1e4f, "decode; K ring of W = 30 slots"),
  QK(F_NEOX64, "LFM2 detokenizer", 512, 17, 8, 8, 30, 30, 500, 1e4f, "row group; K ring of W = 30, wrapping"),
  QK(F_CIS32, "Depthformer", 1024, 1, 32, 8, 8, 0, 3, 1e4f, "one codebook step; K cache linear, 8 slots"),
};
enum { NCASES = (int)(sizeof case_tab / sizeof case_tab[0]) };

static struct options {
  int reps, quick, pin;
  const char *out, *only;
} opt = { .reps = 201, .pin = 1, .out = "bench/results" };

static void usage(FILE *f) {
  fprintf(f, "usage: fk_bench_state [--quick] [--reps N] [--only FORM,...] [--no-pin] [--out DIR]\n"
             "  --quick        %d repetitions instead of %d: a smoke run\n"
             "  --reps N       repetitions (each gives one sample per contender per case)\n"
             "  --only LIST    only the cases whose form contains one of these (e.g. shortconv,cis32)\n"
             "  --no-pin       do not pin the process to the CPU it starts on\n"
             "  --out DIR      where state.csv and state-meta.csv go (default %s)\n",
          11, 201, "bench/results");
}

static void parse_options(int argc, char **argv) {
  int reps_set = 0;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!strcmp(a, "--quick")) opt.quick = 1;
    else if (!strcmp(a, "--no-pin")) opt.pin = 0;
    else if (!strcmp(a, "--help") || !strcmp(a, "-h")) usage(stdout), exit(0);
    else if (!v) usage(stderr), die("%s: missing value or unknown option", a);
    else if (!strcmp(a, "--reps")) opt.reps = atoi(v), reps_set = 1, i++;
    else if (!strcmp(a, "--only")) opt.only = v, i++;
    else if (!strcmp(a, "--out")) opt.out = v, i++;
    else usage(stderr), die("unknown option %s", a);
  }
  if (opt.quick && !reps_set) opt.reps = 11;
  if (opt.reps < 1) die("--reps must be at least 1");
}

static int selected(const char *form) {
  if (!opt.only) return 1;
  for (const char *p = opt.only; *p;) {
    size_t len = strcspn(p, ",");
    for (const char *q = form; len && *q; q++)
      if (!strncasecmp(q, p, len)) return 1;
    p += len + (p[len] == ',');
  }
  return 0;
}

/* ---- results --------------------------------------------------------------------------------- */

typedef struct cell {
  int live, n, batch;
  double *s; /* seconds per call (probe: per pass), one per repetition */
  char why[300];
} cell;

typedef fkb_stats stats;

static stats stats_of(const cell *c) {
  stats st = { 0, 0, 0, 0 };
  return c->live ? fkb_stats_of(c->s, c->n) : st;
}

typedef struct case_result {
  int run;
  cell cells[NE];
  double bytes, footprint_own, footprint_shared, noise;
  char bytes_detail[300];
} case_result;

static case_result results_of[NCASES];
static fkb_l2_probe *probe;
static double t_start;

static double probe_gbps_of(const case_result *r) {
  stats st = stats_of(&r->cells[NC]);
  return st.ok ? fkb_l2_probe_pass_bytes(probe) / st.med / 1e9 : 0.0;
}

/* ---- timing ---------------------------------------------------------------------------------- */

static void turn(int e, const inst *I, int n) {
  if (e == NC) fkb_l2_probe_run(probe, n);
  else
    for (int b = 0; b < n; b++) run(&I->c[e]);
}

/* Calls (probe: passes) per timed batch: about BATCH_S of work. */
static int calibrate(int e, const inst *I) {
  turn(e, I, 4);
  for (int n = 1;; n *= 2) {
    double a = now();
    turn(e, I, n);
    double t = now() - a;
    if (t >= 2e-3 || n >= 1 << 24) return (int)fmax(1.0, ceil(BATCH_S / (t / n)));
  }
}

typedef struct timed_ctx {
  case_result *R;
  const inst *I;
} timed_ctx;

/* One entry's turn: an untimed call, which brings its buffers back after the others' turns, then
 * a timed batch: one sample. */
static void timed_turn(void *ctx, int rep, int e) {
  timed_ctx *t = ctx;
  cell *c = &t->R->cells[e];
  (void)rep;
  if (!c->live) return;
  turn(e, t->I, 1);
  double a = now();
  turn(e, t->I, c->batch);
  c->s[c->n++] = (now() - a) / c->batch;
}

static const char *case_label(const bcase *bc, char *buf, size_t len) {
  const shape *s = &bc->s;
  if (form_tab[s->form].qk)
    snprintf(buf, len, "%s %s (%lld q + %lld k heads), m = %lld", form_tab[s->form].name, bc->model,
             (long long)s->qheads, (long long)s->kheads, (long long)s->m);
  else
    snprintf(buf, len, "%s %s (h = %lld), m = %lld", form_tab[s->form].name, bc->model, (long long)s->h,
             (long long)s->m);
  return buf;
}

static void run_case(int ci, int done, int total) {
  const bcase *bc = &case_tab[ci];
  case_result *R = &results_of[ci];
  char label[200];
  case_label(bc, label, sizeof label);
  rng_state = 0xc0ffee00u + (uint64_t)ci;
  inst I;
  inst_create(&I, &bc->s, -3, 3);
  R->run = 1;
  R->bytes = call_bytes(&bc->s, R->bytes_detail, sizeof R->bytes_detail);
  R->footprint_own = inst_footprint(&I, &R->footprint_shared);
  if (R->footprint_shared + NC * R->footprint_own > FOOTPRINT_MAX)
    die("%s: the contenders' buffers take %.0f KiB, more than the %.0f KiB this bench allows itself (L2 1 MiB)",
        label, (R->footprint_shared + NC * R->footprint_own) / 1024, FOOTPRINT_MAX / 1024);

  int bad[NC];
  char why[NC][300];
  gate(&I, bad, why);
  for (int e = 0; e < NE; e++) {
    cell *c = &R->cells[e];
    c->s = calloc((size_t)opt.reps, sizeof(double));
    if (!c->s) die("out of memory");
    if (e < NC && !I.c[e].fn) snprintf(c->why, sizeof c->why, "%s", resolve_why[bc->s.form]);
    else if (e < NC && bad[e]) {
      snprintf(c->why, sizeof c->why, "differs from the contract model: %.260s", why[e]);
      fprintf(stderr, "fk_bench_state: %s: %s is not timed: %s\n", label, cname[e], c->why);
    } else c->live = 1;
  }
  for (int e = 0; e < NE; e++)
    if (R->cells[e].live) R->cells[e].batch = calibrate(e, &I);

  fkb_cpu_mark mark = fkb_cpu_mark_now();
  timed_ctx ctx = { R, &I };
  fkb_interleave(opt.reps, NE, timed_turn, &ctx);
  R->noise = fkb_others_share(mark, fkb_cpu_mark_now());

  double el = now() - t_start;
  fprintf(stderr, "[%6.1fs, case %d/%d, ~%.0f s left] %s:", el, done, total, el / done * (total - done), label);
  double pg = probe_gbps_of(R);
  for (int e = 0; e < NE; e++) {
    stats st = stats_of(&R->cells[e]);
    if (!st.ok) continue;
    if (e == NC) fprintf(stderr, " | probe %.1f GB/s", pg);
    else
      fprintf(stderr, " | %s %.3f us/token (%.2f of L2)", e == C_FK ? "fk" : e == C_VEC ? "autovec" : "scalar",
              st.med * 1e6 / (double)bc->s.m, pg > 0 ? R->bytes / st.med / 1e9 / pg : 0.0);
  }
  if (R->noise >= FKB_NOISY) fprintf(stderr, " | OTHER PROCESSES %.0f%% of the CPUs", 100.0 * R->noise);
  fputc('\n', stderr);
  inst_free(&I);
}

/* ---- the results: state.csv, state-meta.csv (bench/report.py writes state.md) --------------------- */

static double of_bound(const case_result *R, const stats *st) {
  double pg = probe_gbps_of(R);
  return st->ok && pg > 0 ? R->bytes / st->med / 1e9 / pg : -1.0;
}

static void col_pos(fkb_out *o, double v) { /* a figure, or empty when there is none (negative) */
  if (v >= 0) fkb_col_num(o, v);
  else fkb_col_empty(o);
}

static void results(fkb_out *o, int pinned_cpu) {
  /* run-wide probe median */
  double *all = malloc((size_t)(NCASES * opt.reps) * sizeof *all);
  if (!all) die("out of memory");
  int nall = 0;
  for (int ci = 0; ci < NCASES; ci++) {
    const cell *c = &results_of[ci].cells[NC];
    for (int i = 0; results_of[ci].run && i < c->n; i++) all[nall++] = c->s[i];
  }
  stats pst = fkb_stats_of(all, nall);
  free(all);

  fkb_meta(o, "version", cname[C_FK], "flashkern %s", FKB_FLASHKERN_VERSION);
  fkb_meta(o, "version", cname[C_VEC], "%s", fkb_vec_compiler());
  fkb_meta(o, "version", cname[C_SCALAR], "%s", fkb_scalar_compiler());
  for (int f = 0; f < NF; f++) {
    if (resolved_ok[f]) fkb_meta(o, "stamp", form_tab[f].name, "%s %s", resolved[f].symbol, resolved[f].variant);
    else fkb_meta(o, "not_resolved", form_tab[f].name, "%s", resolve_why[f]);
  }
  fkb_meta(o, "probe", "kind", "%s", fkb_l2_probe_kind(probe));
  fkb_meta(o, "probe", "buffer_bytes", "%zu", fkb_l2_probe_buffer_bytes(probe));
  fkb_meta_num(o, "probe", "pass_bytes", fkb_l2_probe_pass_bytes(probe));
  fkb_meta_num(o, "probe", "gbps", pst.ok ? fkb_l2_probe_pass_bytes(probe) / pst.med / 1e9 : 0.0);
  fkb_meta(o, "probe", "samples", "%d", nall);
  fkb_meta(o, "selfcheck", "cases", "%d", selfcheck_cases);
  fkb_meta(o, "selfcheck", "flashkern differs", "%s", selfcheck_fk);
  fkb_meta(o, "reps", "", "%d", opt.reps);
  fkb_meta_num(o, "batch_s", "", BATCH_S);
  fkb_meta_num(o, "footprint_max_bytes", "", FOOTPRINT_MAX);
  fkb_meta(o, "pinned_cpu", "", "%d", pinned_cpu);

  for (int ci = 0; ci < NCASES; ci++) {
    const bcase *bc = &case_tab[ci];
    const case_result *R = &results_of[ci];
    if (!R->run) continue;
    const shape *s = &bc->s;
    const form_info *fi = &form_tab[s->form];
    char cid[200];
    snprintf(cid, sizeof cid, "%s|%s|%lld", fi->name, bc->model, (long long)s->m);
    fkb_meta(o, "what", cid, "%s", bc->what);
    if (fi->qk) {
      fkb_meta(o, "qheads", cid, "%lld", (long long)s->qheads);
      fkb_meta(o, "kheads", cid, "%lld", (long long)s->kheads);
      fkb_meta(o, "head_dim", cid, "%d", fi->hd);
    }
    fkb_meta(o, "bytes_detail", cid, "%s", R->bytes_detail);
    fkb_meta_num(o, "footprint_shared", cid, R->footprint_shared);
    fkb_meta_num(o, "footprint_own", cid, R->footprint_own);

    double m = (double)s->m, pg = probe_gbps_of(R);
    stats sf = stats_of(&R->cells[C_FK]);
    for (int e = 0; e < NE; e++) {
      const cell *c = &R->cells[e];
      stats st = stats_of(c);
      fkb_col_word(o, fi->name);
      fkb_col_str(o, bc->model);
      fkb_col_int(o, bc->hidden);
      fkb_col_int(o, s->m);
      fkb_col_str(o, cname[e]);
      fkb_col_word(o, st.ok ? "ok" : "not timed");
      if (st.ok && e < NC) { /* us/token median, min, max; us/call median, min, max */
        fkb_col_num(o, st.med * 1e6 / m), fkb_col_num(o, st.min * 1e6 / m), fkb_col_num(o, st.max * 1e6 / m);
      } else {
        fkb_col_empty(o), fkb_col_empty(o), fkb_col_empty(o);
      }
      if (st.ok) fkb_col_num(o, st.med * 1e6), fkb_col_num(o, st.min * 1e6), fkb_col_num(o, st.max * 1e6);
      else fkb_col_empty(o), fkb_col_empty(o), fkb_col_empty(o);
      double bytes = e == NC ? fkb_l2_probe_pass_bytes(probe) : R->bytes;
      fkb_col_num(o, bytes);                                                  /* bytes_call */
      col_pos(o, st.ok ? bytes / st.med / 1e9 : -1);                          /* gbps */
      col_pos(o, e == NC ? (st.ok ? 1.0 : -1) : of_bound(R, &st));            /* of_l2_bound */
      col_pos(o, e < NC && st.ok && sf.ok ? sf.med / st.med : -1);            /* fk_over_this */
      fkb_col_int(o, c->n);                                                   /* samples */
      if (st.ok) fkb_col_int(o, c->batch);
      else fkb_col_empty(o);
      fkb_col_num(o, pg);                                                     /* probe_gbps_case */
      fkb_col_num(o, R->noise);                                               /* others_cpu_share */
      fkb_col_str(o, st.ok ? "" : c->why[0] ? c->why : "not run");           /* why */
      fkb_row_end(o);
    }
  }
}

/* ---- main ------------------------------------------------------------------------------------ */

int main(int argc, char **argv) {
  parse_options(argc, argv);
  t_start = now();

  int pinned_cpu = opt.pin ? fkb_pin_here("fk_bench_state") : -1;

  for (int f = 0; f < NF; f++) {
    fk_error err;
    memset(&err, 0, sizeof err);
    if (fk_leaf_resolve(form_tab[f].name, FK_TIER_EXACT, fk_cpu_features(), &resolved[f], &err) == FK_OK)
      resolved_ok[f] = 1;
    else
      snprintf(resolve_why[f], sizeof resolve_why[f], "fk_leaf_resolve(%s, exact): %s: %s", form_tab[f].name,
               fk_strerror(err.status), err.message);
  }

  for (int f = 0; f < NF; f++)
    fprintf(stderr, "  %-20s %s\n", form_tab[f].name, resolved_ok[f] ? resolved[f].symbol : resolve_why[f]);

  self_check();
  fprintf(stderr, "fk_bench_state: self-check passed (%d cases): the autovec peer matches the scalar contract model "
                  "bit for bit%s\n", selfcheck_cases, selfcheck_fk[0] ? "; flashkern DIFFERS (see above)" : ", and so does flashkern");

  fkb_out *out = fkb_out_open("fk_bench_state", opt.out, "state",
                              "form,model,hidden,m,contender,status,us_token_median,us_token_min,us_token_max,"
                              "us_call_median,us_call_min,us_call_max,bytes_call,gbps,of_l2_bound,fk_over_this,"
                              "samples,batch,probe_gbps_case,others_cpu_share,why", argc, argv);
  probe = fkb_l2_probe_create(PROBE_BUFFER);
  if (!probe) die("out of memory for the L2 probe");
  for (double t0 = now(); now() - t0 < 0.3;) fkb_l2_probe_run(probe, 16); /* clocks up before the first case */

  int total = 0, done = 0;
  for (int ci = 0; ci < NCASES; ci++) total += selected(form_tab[case_tab[ci].s.form].name);
  if (!total) die("--only %s selects no case", opt.only);
  fprintf(stderr, "fk_bench_state: %d cases, %d repetitions\n", total, opt.reps);
  for (int ci = 0; ci < NCASES; ci++)
    if (selected(form_tab[case_tab[ci].s.form].name)) run_case(ci, ++done, total);

  results(out, pinned_cpu);
  fkb_out_close(out);
  fprintf(stderr, "fk_bench_state: wrote %s/state.csv, state-meta.csv (%.0f s; bench/report.py state renders them)\n",
          opt.out, now() - t_start);
  for (int ci = 0; ci < NCASES; ci++)
    for (int e = 0; e < NE; e++) free(results_of[ci].cells[e].s);
  fkb_l2_probe_destroy(probe);
  return 0;
}
