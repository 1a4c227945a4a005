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
 * Output: DIR/state.md (tables), DIR/state.csv (every row). Progress goes to stderr. */
#define _GNU_SOURCE /* sched_setaffinity, sched_getcpu, getrusage */
#include <errno.h>
#include <math.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/utsname.h>
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

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static void *xalloc(size_t bytes) {
  void *p = fkb_alloc(bytes);
  if (!p) die("out of memory (%zu bytes)", bytes);
  return p;
}

/* ---- other processes (as fk_bench_gemv measures them) -------------------------------------- */

typedef struct cpu_mark {
  double busy, self, wall;
} cpu_mark;

static cpu_mark cpu_mark_now(void) {
  cpu_mark c = { 0, 0, now() };
  unsigned long long v[8] = { 0 };
  FILE *f = fopen("/proc/stat", "r");
  if (f) {
    if (fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2], &v[3], &v[4], &v[5], &v[6],
               &v[7]) == 8)
      c.busy = (double)(v[0] + v[1] + v[2] + v[5] + v[6] + v[7]) / (double)sysconf(_SC_CLK_TCK);
    fclose(f);
  }
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  c.self = (double)ru.ru_utime.tv_sec + 1e-6 * (double)ru.ru_utime.tv_usec + (double)ru.ru_stime.tv_sec +
           1e-6 * (double)ru.ru_stime.tv_usec;
  return c;
}

/* The share of all CPUs other processes used between a and b, 0..1 (under 5 clock ticks: 0). */
static double others_share(cpu_mark a, cpu_mark b) {
  double wall = b.wall - a.wall, cpus = (double)sysconf(_SC_NPROCESSORS_ONLN);
  double other = (b.busy - a.busy) - (b.self - a.self);
  if (wall <= 0 || cpus <= 0 || other < 5.0 / (double)sysconf(_SC_CLK_TCK)) return 0.0;
  return other / (wall * cpus) > 1.0 ? 1.0 : other / (wall * cpus);
}

#define NOISY 0.05

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
             "  --out DIR      where state.md and state.csv go (default %s)\n",
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

typedef struct stats {
  double med, min, max;
  int ok;
} stats;

static stats stats_of(const cell *c) {
  stats st = { 0, 0, 0, 0 };
  if (!c->live || c->n == 0) return st;
  double *v = malloc((size_t)c->n * sizeof *v);
  if (!v) die("out of memory");
  memcpy(v, c->s, (size_t)c->n * sizeof *v);
  qsort(v, (size_t)c->n, sizeof *v, cmp_double);
  st.med = c->n % 2 ? v[c->n / 2] : 0.5 * (v[c->n / 2 - 1] + v[c->n / 2]);
  st.min = v[0];
  st.max = v[c->n - 1];
  st.ok = 1;
  free(v);
  return st;
}

typedef struct case_result {
  int run;
  cell cells[NE];
  double bytes, footprint_own, footprint_shared, noise;
  char bytes_detail[300];
} case_result;

static case_result results[NCASES];
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
  case_result *R = &results[ci];
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

  cpu_mark mark = cpu_mark_now();
  for (int rep = 0; rep < opt.reps; rep++)
    for (int r = 0; r < NE; r++) {
      int e = (r + rep) % NE; /* the round-robin starts one entry later each repetition */
      cell *c = &R->cells[e];
      if (!c->live) continue;
      turn(e, &I, 1); /* untimed: brings this contender's buffers back after the others' turns */
      double a = now();
      turn(e, &I, c->batch);
      c->s[c->n++] = (now() - a) / c->batch;
    }
  R->noise = others_share(mark, cpu_mark_now());

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
  if (R->noise >= NOISY) fprintf(stderr, " | OTHER PROCESSES %.0f%% of the CPUs", 100.0 * R->noise);
  fputc('\n', stderr);
  inst_free(&I);
}

/* ---- the report -------------------------------------------------------------------------------- */

static FILE *open_out(const char *name) {
  char path[4096];
  snprintf(path, sizeof path, "%s/%s", opt.out, name);
  FILE *f = fopen(path, "w");
  if (!f) die("cannot write %s: %s", path, strerror(errno));
  return f;
}

static double of_bound(const case_result *R, const stats *st) {
  double pg = probe_gbps_of(R);
  return st->ok && pg > 0 ? R->bytes / st->med / 1e9 / pg : -1.0;
}

static void fmt_frac(char *buf, size_t len, double v) {
  if (v >= 0) snprintf(buf, len, "%.2f", v);
  else snprintf(buf, len, "-");
}

static void write_report(double elapsed, const char *machine, const char *argv_line, int pinned_cpu) {
  FILE *md = open_out("state.md"), *csv = open_out("state.csv");

  /* run-wide probe median */
  double *all = malloc((size_t)(NCASES * opt.reps) * sizeof *all);
  if (!all) die("out of memory");
  int nall = 0;
  double case_min = 1e300, case_max = 0;
  for (int ci = 0; ci < NCASES; ci++) {
    if (!results[ci].run) continue;
    const cell *c = &results[ci].cells[NC];
    for (int i = 0; i < c->n; i++) all[nall++] = c->s[i];
    double g = probe_gbps_of(&results[ci]);
    if (g > 0 && g < case_min) case_min = g;
    if (g > case_max) case_max = g;
  }
  cell allc = { .live = 1, .n = nall, .s = all };
  stats pst = stats_of(&allc);
  double probe_run = pst.ok ? fkb_l2_probe_pass_bytes(probe) / pst.med / 1e9 : 0.0;
  free(all);

  fprintf(md, "# State-committing leaves: ShortConv and qkprep, flashkern and its peers\n\n");
  fprintf(md, "Written by `fk_bench_state` (bench/fk_bench_state.c) from one run: `%s`, %.0f s. Regenerate with "
              "`make bench-state`; never edit by hand.\n\n", argv_line, elapsed);
  fprintf(md, "**Machine:** %s\n\n", machine);
  fprintf(md, "**Contenders** (each calls the form through a function pointer with the form's argument struct "
              "from fk_leaves.h, as a host calls a stamp):\n\n");
  fprintf(md, "- **flashkern exact**: flashkern %s; stamps resolved once by `fk_leaf_resolve(form, FK_TIER_EXACT, "
              "fk_cpu_features())`:", FKB_FLASHKERN_VERSION);
  for (int f = 0; f < NF; f++) {
    if (resolved_ok[f]) fprintf(md, "%s `%s` -> `%s` (variant %s)", f ? ";" : "", form_tab[f].name,
                                resolved[f].symbol, resolved[f].variant);
    else fprintf(md, "%s `%s`: NOT RESOLVED: %s", f ? ";" : "", form_tab[f].name, resolve_why[f]);
  }
  fprintf(md, ".\n- **autovec (gcc -O3 -march=native)**: %s, `-O3 -march=native -ffp-contract=off` "
              "(bench/state_autovec.c): the contract models' math and order, loops written for the vectorizer "
              "(`restrict` pointers, head size a constant, the 2 x 16 sum-of-squares lanes as one 32-wide array); "
              "bit-identical to the model and to flashkern's exact tier.\n", fkb_vec_compiler());
  fprintf(md, "- **scalar (gcc -O2)**: %s, `-O2 -march=native -ffp-contract=off -fno-tree-vectorize` "
              "(bench/state_scalar.c): the contract models of tests/contract/shortconv.c and qkprep.c as written, "
              "copied (not linked); scalar code, `fmaf` one instruction: the baseline of an engine that writes the "
              "math as loops. It is also the reference every contender is compared with.\n", fkb_scalar_compiler());
  fprintf(md, "- **L2 probe**: %s; two buffers of %zu KiB (together %zu KiB: inside the 1 MiB L2, far beyond the "
              "48 KiB L1d), a pass copies A into B and moves 2 x %zu KiB (read + written). Run-wide median "
              "**%.1f GB/s** (%d samples; the medians of single cases range from %.1f to %.1f GB/s). Each table's "
              "*of L2 bound* divides by the probe's median in that table's case.\n\n",
          fkb_l2_probe_kind(probe), fkb_l2_probe_buffer_bytes(probe) >> 10, 2 * fkb_l2_probe_buffer_bytes(probe) >> 10,
          fkb_l2_probe_buffer_bytes(probe) >> 10, probe_run, nall, case_min, case_max);
  fprintf(md, "**Startup self-check:** %d small cases over the four forms (1..1000 channels and 0..5 heads with "
              "tails, m = 0..5, padded rows, linear and wrapping K layouts, NaN with payloads, signaling NaN, "
              "infinities, signed zeros, subnormals, overflow, exact rounding ties, random shapes), three "
              "consecutive calls each: the autovec peer matched the scalar contract model bit for bit "
              "(the bench stops otherwise); flashkern %s.\n\n",
          selfcheck_cases, selfcheck_fk[0] ? "DIFFERED (below)" : "matched it too");
  if (selfcheck_fk[0]) fprintf(md, "**flashkern differs from the contract model:** %s\n\n", selfcheck_fk);

  fprintf(md,
          "**Method.** One process, one thread%s. Per case, all contenders get the same inputs (random bf16 "
          "with exponents in [-3, 3]; ShortConv taps in [-3, 0], biases in [-4, 0]; norm weights in [-2, 1]; "
          "RoPE tables from `fk_rope_table`) and the same initial state (a random carry; random q rows and K "
          "cache), each in its own state buffers. **Gate:** three consecutive calls (the K slots and "
          "positions advance by m each call), and after each one every output and state buffer, whole (y and "
          "its padding, the carry, the q rows and their padding, the entire K cache: a write outside the "
          "call's slots is caught), is compared bit for bit with the scalar contract model's; a contender "
          "that differs is not timed. **Timing:** %d repetitions; in each, the contenders and the probe take "
          "turns round-robin (the first turn moves one entry on each repetition). A turn is one untimed call "
          "(it brings back this contender's lines, which the probe's and the others' turns evicted from L1) "
          "and a timed batch of calls lasting about %.0f us whose mean is one sample; the batch size is "
          "calibrated per contender and case. **Hot, L2-resident:** every call of a contender uses the same "
          "buffers (the carry keeps evolving, q and K are transformed in place again each call, at the same "
          "slots and positions), and the bytes the calls of all contenders touch stay under %.0f KiB (the "
          "footprint is under each case's heading), so the bound of a call is the bytes it must move at the "
          "L2's read+write bandwidth. Small cases fit the 48 KiB L1d as well and can exceed that bound.\n\n",
          pinned_cpu >= 0 ? "" : " (not pinned)", opt.reps, BATCH_S * 1e6, FOOTPRINT_MAX / 1024);
  if (pinned_cpu >= 0) fprintf(md, "The process is pinned to CPU %d (the one it started on).\n\n", pinned_cpu);
  fprintf(md, "**Bytes moved** (per call, from each leaf's contract): ShortConv: in m x 3h bf16 read, the 3h taps "
              "(+ h biases) read, the 2h-element carry read and written, y m x h written: 8mh + 14h bytes "
              "(+ 2h). qkprep, per token position: the q heads and the k heads (64 or 32 bf16 each) read and "
              "written in place, the norm weights of q and k, the row's cos and sin (f32, head_dim / 2 each), "
              "read by the q call and by the k call.\n\n");
  fprintf(md, "**Columns.** *us/token*: microseconds per token (a call covers m tokens; qkprep: the q call and the "
              "k call), median [min, max] over repetitions. *us/call*: the median per call. *GB/s*: the bytes "
              "one call must move over its median time, 1 GB = 1e9 bytes. *of L2 bound*: that over the L2 "
              "probe's median GB/s in the same case. *fk / this*: flashkern's median time over this row's; "
              "below 1 flashkern is faster.\n\n");
  int noisy = 0, ran = 0;
  for (int ci = 0; ci < NCASES; ci++) ran += results[ci].run, noisy += results[ci].run && results[ci].noise >= NOISY;
  fprintf(md, "**Disturbance.** %d of %d cases ran while other processes used %.0f%% of the CPUs or more (machine "
              "busy time from /proc/stat minus this process's) and are marked.\n\n", noisy, ran, 100.0 * NOISY);

  /* the summary: hidden 2048 */
  fprintf(md, "## Summary: hidden 2048 (LFM2-1.2B), fraction of the bytes-moved bound\n\n"
              "| leaf | m | flashkern us/token | flashkern GB/s | flashkern of L2 bound | autovec of L2 bound | "
              "scalar of L2 bound | fk / autovec | fk / scalar |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|\n");
  char below[2048] = "";
  size_t at = 0;
  for (int ci = 0; ci < NCASES; ci++) {
    const bcase *bc = &case_tab[ci];
    const case_result *R = &results[ci];
    if (!R->run || bc->hidden != 2048 || strcmp(bc->model, "LFM2-1.2B")) continue;
    stats sf = stats_of(&R->cells[C_FK]), sv = stats_of(&R->cells[C_VEC]), ss = stats_of(&R->cells[C_SCALAR]);
    char a[32], b[32], c[32], rv[32], rs[32];
    fmt_frac(a, sizeof a, of_bound(R, &sf));
    fmt_frac(b, sizeof b, of_bound(R, &sv));
    fmt_frac(c, sizeof c, of_bound(R, &ss));
    fmt_frac(rv, sizeof rv, sf.ok && sv.ok ? sf.med / sv.med : -1);
    fmt_frac(rs, sizeof rs, sf.ok && ss.ok ? sf.med / ss.med : -1);
    if (sf.ok)
      fprintf(md, "| %s | %lld | %.3f | %.1f | %s | %s | %s | %s | %s |\n", form_tab[bc->s.form].name,
              (long long)bc->s.m, sf.med * 1e6 / (double)bc->s.m, R->bytes / sf.med / 1e9, a, b, c, rv, rs);
    else
      fprintf(md, "| %s | %lld | not timed | | | %s | %s | | |\n", form_tab[bc->s.form].name, (long long)bc->s.m, b, c);
    double fr = of_bound(R, &sf);
    if (sf.ok && fr < 0.9 && at < sizeof below)
      at += (size_t)snprintf(below + at, sizeof below - at, "%s`%s` m = %lld: %.2f (%.1f GB/s, %.3f us/token)",
                             at ? "; " : "", form_tab[bc->s.form].name, (long long)bc->s.m, fr,
                             R->bytes / sf.med / 1e9, sf.med * 1e6 / (double)bc->s.m);
  }
  if (below[0])
    fprintf(md, "\nBelow 0.9 of the bound at hidden 2048 (L2 probe %.1f GB/s run-wide): %s.\n\n", probe_run, below);
  else fprintf(md, "\nEvery flashkern row at hidden 2048 reaches 0.9 of the bound or more.\n\n");

  fprintf(csv, "form,model,hidden,m,contender,status,us_token_median,us_token_min,us_token_max,us_call_median,"
               "bytes_call,gbps,of_l2_bound,fk_over_this,samples,batch,probe_gbps_case,others_cpu_share\n");
  for (int f = 0; f < NF; f++) {
    int any = 0;
    for (int ci = 0; ci < NCASES; ci++) any |= results[ci].run && case_tab[ci].s.form == (form_id)f;
    if (!any) continue;
    fprintf(md, "## %s\n\n", form_tab[f].name);
    for (int ci = 0; ci < NCASES; ci++) {
      const bcase *bc = &case_tab[ci];
      const case_result *R = &results[ci];
      if (!R->run || bc->s.form != (form_id)f) continue;
      const shape *s = &bc->s;
      double m = (double)s->m, pg = probe_gbps_of(R);
      if (form_tab[f].qk)
        fprintf(md, "### %s (hidden %lld): %lld q heads + %lld k heads, head_dim %d, m = %lld (%s)\n\n", bc->model,
                (long long)bc->hidden, (long long)s->qheads, (long long)s->kheads, form_tab[f].hd, (long long)s->m,
                bc->what);
      else
        fprintf(md, "### %s: h = %lld, m = %lld (%s)\n\n", bc->model, (long long)s->h, (long long)s->m, bc->what);
      fprintf(md, "Bytes per call: %.0f = %s. Footprint: %.1f KiB shared inputs + %d x %.1f KiB per contender. "
                  "Batches (calls per sample): flashkern %d, autovec %d, scalar %d; probe %d passes.\n\n",
              R->bytes, R->bytes_detail, R->footprint_shared / 1024, NC, R->footprint_own / 1024,
              R->cells[C_FK].batch, R->cells[C_VEC].batch, R->cells[C_SCALAR].batch, R->cells[NC].batch);
      if (R->noise >= NOISY)
        fprintf(md, "Other processes used %.0f%% of the CPUs while this case ran: its times are disturbed.\n\n",
                100.0 * R->noise);
      fprintf(md, "| contender | us/token median [min, max] | us/call | GB/s | of L2 bound | fk / this |\n"
                  "|---|---:|---:|---:|---:|---:|\n");
      stats sf = stats_of(&R->cells[C_FK]);
      for (int e = 0; e < NE; e++) {
        const cell *c = &R->cells[e];
        stats st = stats_of(c);
        if (!st.ok) {
          fprintf(md, "| %s | not timed: %s | | | | |\n", cname[e], c->why[0] ? c->why : "not run");
          fprintf(csv, "%s,\"%s\",%lld,%lld,\"%s\",not timed,,,,,%.0f,,,,0,,%.3f,%.3f\n", form_tab[f].name, bc->model,
                  (long long)bc->hidden, (long long)s->m, cname[e], R->bytes, pg, R->noise);
          continue;
        }
        if (e == NC) {
          fprintf(md, "| %s (us per pass of %zu KiB) | %.2f [%.2f, %.2f] | | %.1f | 1.00 | |\n", cname[e],
                  2 * fkb_l2_probe_buffer_bytes(probe) >> 10, st.med * 1e6, st.min * 1e6, st.max * 1e6, pg);
          fprintf(csv, "%s,\"%s\",%lld,%lld,\"%s\",ok,,,,%.3f,%.0f,%.3f,1,,%d,%d,%.3f,%.3f\n", form_tab[f].name,
                  bc->model, (long long)bc->hidden, (long long)s->m, cname[e], st.med * 1e6,
                  fkb_l2_probe_pass_bytes(probe), pg, c->n, c->batch, pg, R->noise);
          continue;
        }
        char fr[32], ratio[32];
        fmt_frac(fr, sizeof fr, of_bound(R, &st));
        fmt_frac(ratio, sizeof ratio, sf.ok ? sf.med / st.med : -1);
        double gbps = R->bytes / st.med / 1e9;
        fprintf(md, "| %s | %.3f [%.3f, %.3f] | %.3f | %.1f | %s | %s |\n", cname[e], st.med * 1e6 / m,
                st.min * 1e6 / m, st.max * 1e6 / m, st.med * 1e6, gbps, fr, ratio);
        fprintf(csv, "%s,\"%s\",%lld,%lld,\"%s\",ok,%.4f,%.4f,%.4f,%.4f,%.0f,%.3f,%s,%s,%d,%d,%.3f,%.3f\n",
                form_tab[f].name, bc->model, (long long)bc->hidden, (long long)s->m, cname[e], st.med * 1e6 / m,
                st.min * 1e6 / m, st.max * 1e6 / m, st.med * 1e6, R->bytes, gbps, fr, ratio, c->n, c->batch, pg,
                R->noise);
      }
      fputc('\n', md);
    }
  }
  fclose(md);
  fclose(csv);
}

/* ---- main ------------------------------------------------------------------------------------ */

int main(int argc, char **argv) {
  parse_options(argc, argv);
  t_start = now();
  char argv_line[1024] = "fk_bench_state";
  for (int i = 1; i < argc; i++) {
    size_t at = strlen(argv_line);
    snprintf(argv_line + at, sizeof argv_line - at, " %s", argv[i]);
  }

  int pinned_cpu = -1;
  if (opt.pin) {
    int cpu = sched_getcpu();
    cpu_set_t set;
    CPU_ZERO(&set);
    if (cpu >= 0) CPU_SET((size_t)cpu, &set);
    if (cpu >= 0 && sched_setaffinity(0, sizeof set, &set) == 0) pinned_cpu = cpu;
    else fprintf(stderr, "fk_bench_state: cannot pin to a CPU (%s); running unpinned\n", strerror(errno));
  }

  for (int f = 0; f < NF; f++) {
    fk_error err;
    memset(&err, 0, sizeof err);
    if (fk_leaf_resolve(form_tab[f].name, FK_TIER_EXACT, fk_cpu_features(), &resolved[f], &err) == FK_OK)
      resolved_ok[f] = 1;
    else
      snprintf(resolve_why[f], sizeof resolve_why[f], "fk_leaf_resolve(%s, exact): %s: %s", form_tab[f].name,
               fk_strerror(err.status), err.message);
  }

  char machine[2048];
  fkb_machine_line(machine, sizeof machine);
  fprintf(stderr, "fk_bench_state: %s\n", machine);
  for (int f = 0; f < NF; f++)
    fprintf(stderr, "  %-20s %s\n", form_tab[f].name, resolved_ok[f] ? resolved[f].symbol : resolve_why[f]);

  self_check();
  fprintf(stderr, "fk_bench_state: self-check passed (%d cases): the autovec peer matches the scalar contract model "
                  "bit for bit%s\n", selfcheck_cases, selfcheck_fk[0] ? "; flashkern DIFFERS (see above)" : ", and so does flashkern");

  if (mkdir(opt.out, 0777) != 0 && errno != EEXIST) die("cannot create %s: %s", opt.out, strerror(errno));
  probe = fkb_l2_probe_create(PROBE_BUFFER);
  if (!probe) die("out of memory for the L2 probe");
  for (double t0 = now(); now() - t0 < 0.3;) fkb_l2_probe_run(probe, 16); /* clocks up before the first case */

  int total = 0, done = 0;
  for (int ci = 0; ci < NCASES; ci++) total += selected(form_tab[case_tab[ci].s.form].name);
  if (!total) die("--only %s selects no case", opt.only);
  fprintf(stderr, "fk_bench_state: %d cases, %d repetitions\n", total, opt.reps);
  for (int ci = 0; ci < NCASES; ci++)
    if (selected(form_tab[case_tab[ci].s.form].name)) run_case(ci, ++done, total);

  double elapsed = now() - t_start;
  write_report(elapsed, machine, argv_line, pinned_cpu);
  fprintf(stderr, "fk_bench_state: wrote %s/state.md and %s/state.csv (%.0f s)\n", opt.out, opt.out, elapsed);
  for (int ci = 0; ci < NCASES; ci++)
    for (int e = 0; e < NE; e++) free(results[ci].cells[e].s);
  fkb_l2_probe_destroy(probe);
  return 0;
}
