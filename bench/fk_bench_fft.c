/* bench/fk_bench_fft.c: the inverse real FFT benchmark. flashkern's irfft leaves (exact tier,
 * N = 256, 512, 1024, 1280, 2048) against FFTW's single-precision c2r (FFTW_MEASURE) and a dense
 * inverse DFT through OpenBLAS's sgemv, and flashkern's whole detokenizer frame (istft_frame:
 * polar + iFFT + window + overlap-add + envelope) against the same frame written by a user with
 * libm, FFTW and plain C; all in one process and one run.
 *
 * Every case (one N) is hot: each contender calls its transform on the same buffers every time,
 * all of them L1/L2-resident except the dense DFT's N x (N + 2) matrix (L3 from N = 512 on: it is
 * what the dense method reads). FFTW's c2r destroys its input, so its rows transform a rotation of
 * copies of the spectrum, refreshed (untimed) before every timed batch. Before timing, every
 * transform's output is compared with a float64 inverse DFT (tests/test_irfft.c's normwise
 * bound; a componentwise dot-product bound for the dense DFT), and the two frames are compared
 * with a float64 ISTFT and with each other over a stream of frames; one that fails is not timed.
 *
 * Output: DIR/fft.csv (every row) and DIR/fft-meta.csv (machine, versions, builds, stamps, plans),
 * which bench/report.py renders into DIR/fft.md, fft.dat and fft.png. Progress goes to stderr. */
#define _GNU_SOURCE /* strncasecmp */
/* fftw3.h before cblas.h: OpenBLAS's header includes <complex.h>, after which fftwf_complex would
 * be float _Complex instead of float[2] (the same bytes; this file indexes [0] and [1]) */
#include <fftw3.h>
#include <cblas.h>
#include <errno.h>
#include <gnu/libc-version.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "fkb.h"
#include "fkb_fft.h"
#include "flashkern.h"

#ifndef FKB_FLASHKERN_VERSION
#define FKB_FLASHKERN_VERSION "this tree"
#endif

/* The OpenBLAS kernel set, forced through OPENBLAS_CORETYPE as fk_bench_gemv does (this machine's
 * environment says Haswell, AVX2; Cooperlake is what OpenBLAS 0.3.21 picks by itself on this Zen 5:
 * the AVX-512 SkylakeX kernels). Forced only on CPUs with AVX-512 F/BW/DQ/VL. */
#define FKB_OPENBLAS_CORE "Cooperlake"

/* ---- contenders ------------------------------------------------------------------------------- */

enum { T_FK, T_FFTW, T_FFTW_SCALED, T_FFTW_KEEP, T_BLAS, NT }; /* transforms, every N */
enum { R_FK = NT, R_PEER, NE };                                  /* frames, N = 1280 only */
static const char *const ename[NE] = {
  "flashkern exact", "FFTW MEASURE", "FFTW MEASURE + 1/N pass", "FFTW MEASURE, input preserved",
  "OpenBLAS dense sgemv", "flashkern istft_frame", "user frame (libm + FFTW + C -O2)",
};
static const char *const eshort[NE] = { "fk", "fftw", "fftw+1/N", "fftw keep", "openblas", "fk frame", "user frame" };

static const int all_sizes[] = { 256, 512, 1024, 1280, 2048 };
enum { NSIZES = (int)(sizeof all_sizes / sizeof all_sizes[0]) };

enum { FRAME_N = 1280, HOP = 320, BINS = FRAME_N / 2 + 1, FRAME_X = 2 * BINS, FRAME_WORK = 3888 };
#define AUDIO_RATE 24000.0
#define FRAME_AUDIO_US (1e6 * HOP / AUDIO_RATE) /* 13333 us = 13.33 ms of audio per frame */

#ifndef COPY_BYTES
#define COPY_BYTES ((size_t)40 << 10) /* FFTW's input copies per size: a timed batch is one pass over them */
#endif
#define FRAME_BATCH_S 4e-6            /* a frame contender's timed batch lasts about this long */
#define GATE_SPECTRA 4
#define GATE_FRAMES 12
#define FRAME_TOL 1e-5      /* each frame vs the float64 ISTFT: ||y - ref||_2 <= FRAME_TOL ||ref||_2 */
#define FRAME_TOL_PAIR 2e-5 /* the two frames against each other, same norm */

static const double PI = 3.14159265358979323846;

/* ---- small utilities ---------------------------------------------------------------------- */

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void die(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fputs("fk_bench_fft: ", stderr);
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
static double unit(void) { return (double)(rng() >> 11) / 9007199254740992.0; } /* [0, 1) */
static float uniform(float lo, float hi) { return (float)((double)lo + (double)(hi - lo) * unit()); }
/* random sign, exponent in [emin, emax], random mantissa (tests/harness fkh_f32) */
static float rand_exp(int emin, int emax) {
  uint64_t r = rng();
  int e = emin + (int)((r >> 8) % (uint64_t)(emax - emin + 1));
  float m = 1.0f + (float)((r >> 40) & 0x7fffffu) * 0x1p-23f;
  return ldexpf(r & 1u ? -m : m, e);
}

/* the larger of a worst-so-far and a new error; NaN (a failure) sticks as +inf */
static double worse(double w, double r) { return isnan(r) || isinf(w) ? INFINITY : (r > w ? r : w); }

static void *xalloc(size_t bytes) {
  void *p = fkb_alloc(bytes);
  if (!p) die("out of memory (%zu bytes)", bytes);
  return p;
}

/* one line: runs of whitespace -> one space */
static void squeeze(const char *s, char *out, size_t len) {
  size_t at = 0;
  for (const char *c = s; c && *c && at + 1 < len; c++) {
    char ch = (*c == '\n' || *c == '\t') ? ' ' : *c;
    if (ch == ' ' && (at == 0 || out[at - 1] == ' ')) continue;
    out[at++] = ch;
  }
  while (at && out[at - 1] == ' ') at--;
  out[at] = 0;
}

/* ---- options ---------------------------------------------------------------------------------- */

static struct options {
  int reps, quick, pin, openblas_core_set, nsizes;
  int sizes[NSIZES];
  const char *out, *openblas_core;
} opt = { .reps = 201, .pin = 1, .out = "bench/results", .openblas_core = FKB_OPENBLAS_CORE };

static void usage(FILE *f) {
  fprintf(f, "usage: fk_bench_fft [--quick] [--reps N] [--sizes 256,1280] [--no-pin] [--out DIR]\n"
             "                    [--openblas-core NAME]\n"
             "  --quick          %d repetitions instead of %d: a smoke run\n"
             "  --reps N         repetitions (each gives one sample per contender per size)\n"
             "  --sizes LIST     transform sizes among 256,512,1024,1280,2048 (the frames run with 1280)\n"
             "  --no-pin         do not pin the process to the CPU it starts on\n"
             "  --out DIR        where fft.csv and fft-meta.csv go (default %s); bench/report.py fft\n"
             "                   renders them into fft.md, fft.dat and fft.png\n"
             "  --openblas-core NAME  OPENBLAS_CORETYPE for the run (default %s; the bench re-executes\n"
             "                   itself with it set, as fk_bench_gemv does)\n",
          11, 201, "bench/results", FKB_OPENBLAS_CORE);
}

static void parse_options(int argc, char **argv) {
  int reps_set = 0;
  for (int i = 0; i < NSIZES; i++) opt.sizes[i] = all_sizes[i];
  opt.nsizes = NSIZES;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!strcmp(a, "--quick")) opt.quick = 1;
    else if (!strcmp(a, "--no-pin")) opt.pin = 0;
    else if (!strcmp(a, "--help") || !strcmp(a, "-h")) usage(stdout), exit(0);
    else if (!v) usage(stderr), die("%s: missing value or unknown option", a);
    else if (!strcmp(a, "--reps")) opt.reps = atoi(v), reps_set = 1, i++;
    else if (!strcmp(a, "--out")) opt.out = v, i++;
    else if (!strcmp(a, "--openblas-core")) opt.openblas_core = v, opt.openblas_core_set = 1, i++;
    else if (!strcmp(a, "--sizes")) {
      int want[NSIZES] = { 0 };
      for (const char *p = v; *p;) {
        char *end;
        long n = strtol(p, &end, 10);
        int found = 0;
        for (int s = 0; s < NSIZES; s++)
          if (all_sizes[s] == n) want[s] = found = 1;
        if (!found || end == p) die("--sizes: %.*s is not one of 256, 512, 1024, 1280, 2048", (int)strcspn(p, ","), p);
        p = *end == ',' ? end + 1 : end;
        if (*end && *end != ',') die("--sizes: expected a comma list of sizes");
      }
      opt.nsizes = 0;
      for (int s = 0; s < NSIZES; s++)
        if (want[s]) opt.sizes[opt.nsizes++] = all_sizes[s];
      i++;
    } else usage(stderr), die("unknown option %s", a);
  }
  if (opt.quick && !reps_set) opt.reps = 11;
  if (opt.reps < 1) die("--reps must be at least 1");
}

/* What OPENBLAS_CORETYPE was before the bench set it (fkb_openblas_coretype). */
static char coretype_was[128] = "";

/* ---- results ---------------------------------------------------------------------------------- */

typedef struct cell {
  int live, n, batch;
  double *s;    /* seconds per call, one per repetition */
  double gate;  /* worst error over its bound in the gate (transforms), or relative error (frames) */
  double gate2; /* frames: worst ||fk - user|| / ||ref|| */
  char why[400];
} cell;

typedef fkb_stats stats;

static stats stats_of(const cell *c) {
  stats st = { 0, 0, 0, 0 };
  return c->live ? fkb_stats_of(c->s, c->n) : st;
}

/* ---- one size: inputs, each contender's buffers and plans ------------------------------------- */

typedef struct fcase {
  int n, h, run, frames; /* frames: this case also times the two frames (N = 1280) */
  float *re, *im;        /* the spectrum, flashkern's layout (h each; im[0] = im[h-1] = 0) */
  float *xv;             /* [re; im], N + 2 (OpenBLAS) */
  fftwf_complex *cin;    /* the spectrum interleaved (FFTW), kept intact */
  fftwf_complex *copies; /* ncopies copies of cin for the input-destroying plan, cstride apart */
  size_t cstride;
  int ncopies;
  float *y[NT], *work, *A;
  fftwf_plan plan, keep;
  double plan_s, keep_s;
  char plan_desc[1024], keep_desc[1024];
  fk_leaf leaf;
  int leaf_ok;
  char leaf_why[400];
  cell cells[NE];
  double noise, footprint[NE];
} fcase;

static fcase cases[NSIZES];

/* the frame contenders' state (one stream each) */
static struct frames {
  fk_leaf leaf;
  int leaf_ok;
  char leaf_why[400];
  float *x, *ring, *y, *work; /* flashkern: its args' buffers; x is shared with the user frame */
  int64_t t;
  fkb_peer_frame *peer;
  float *peer_y;
  char peer_plan[1024];
  double peer_plan_s;
} fr;

static double t_start;

static fftwf_complex *copy_at(const fcase *C, int i) { return C->copies + (size_t)i * C->cstride; }

static void restore_copies(fcase *C, int count) {
  for (int i = 0; i < count; i++) memcpy(copy_at(C, i), C->cin, sizeof(fftwf_complex) * (size_t)C->h);
}

/* the layouts of the other contenders from re, im */
static void sync_layouts(fcase *C) {
  for (int k = 0; k < C->h; k++) {
    C->cin[k][0] = C->re[k], C->cin[k][1] = C->im[k];
    C->xv[k] = C->re[k], C->xv[C->h + k] = C->im[k];
  }
  restore_copies(C, C->ncopies);
}

/* cos and sin of 2 pi m / n in double, m < n, the quarter points exact */
static void trig_tables(int n, double *ct, double *st) {
  for (int m = 0; m < n; m++) ct[m] = cos(2 * PI * m / n), st[m] = sin(2 * PI * m / n);
  ct[n / 4] = 0, st[n / 4] = 1, ct[n / 2] = -1, st[n / 2] = 0, ct[3 * n / 4] = 0, st[3 * n / 4] = -1;
  st[0] = 0, ct[0] = 1;
}

/* The float64 reference: x = irfft(X) (1/N scaling), the imaginary parts of X[0] and X[N/2]
 * ignored (numpy, torch, flashkern); abs[t] = sum_k |A[t][k]| |v[k]| for the dense DFT's bound. */
static void ref_irfft(int n, const float *re, const float *im, const double *ct, const double *st, double *x,
                      double *absum) {
  int L = n / 2;
  for (int t = 0; t < n; t++) {
    double acc = (double)re[0] + ((t % 2) ? -1.0 : 1.0) * (double)re[L];
    double ab = fabs((double)re[0]) + fabs((double)re[L]);
    for (int k = 1; k < L; k++) {
      int m = (int)(((long)k * t) % n);
      acc += 2 * ((double)re[k] * ct[m] - (double)im[k] * st[m]);
      ab += 2 * (fabs((double)re[k] * ct[m]) + fabs((double)im[k] * st[m]));
    }
    x[t] = acc / n;
    if (absum) absum[t] = ab / n;
  }
}

/* tests/test_irfft.c's normwise bound: max |x^[n] - x[n]| <= bound_factor(N) ||x||_2 */
static double bound_factor(int n) {
  const double u = 0x1p-24, s2 = sqrt(2.0);
  double g4 = 4 * u / (1 - 4 * u), g9 = 9 * u / (1 - 9 * u), eta2 = u + g4 * (s2 + u), sum = eta2 + 2 * u + 2 * u;
  int L = n / 2;
  while (L % 2 == 0) sum += eta2, L /= 2;
  if (L == 5) sum += 5 * g9;
  return sum * (1 + 1e-3);
}

/* the dense DFT's componentwise bound: |y^[t] - y[t]| <= gamma(N + 3) sum_k |A[t][k]| |v[k]|
 * (N + 2 products summed, plus the rounding of each matrix entry to f32) */
static double dense_factor(int n) {
  const double u = 0x1p-24;
  return (n + 3) * u / (1 - (n + 3) * u);
}

static void case_create(fcase *C, int n) {
  memset(C, 0, sizeof *C);
  C->n = n, C->h = n / 2 + 1, C->run = 1, C->frames = n == FRAME_N;
  const int h = C->h;
  C->re = xalloc((size_t)h * 4), C->im = xalloc((size_t)h * 4), C->xv = xalloc((size_t)(2 * h) * 4);
  C->cin = xalloc((size_t)h * sizeof(fftwf_complex));
  C->cstride = ((size_t)h + 7) & ~(size_t)7; /* 64-byte steps: every copy has cin's alignment */
  C->ncopies = (int)(COPY_BYTES / (C->cstride * sizeof(fftwf_complex)));
  if (C->ncopies < 1) C->ncopies = 1;
  C->copies = xalloc((size_t)C->ncopies * C->cstride * sizeof(fftwf_complex));
  for (int e = 0; e < NT; e++) C->y[e] = xalloc((size_t)n * 4);
  C->work = xalloc((size_t)(2 * n) * 4);

  char form[32];
  snprintf(form, sizeof form, "irfft_n%d", n);
  fk_error err;
  memset(&err, 0, sizeof err);
  if (fk_leaf_resolve(form, FK_TIER_EXACT, fk_cpu_features(), &C->leaf, &err) == FK_OK) C->leaf_ok = 1;
  else snprintf(C->leaf_why, sizeof C->leaf_why, "fk_leaf_resolve(%s, exact): %s: %.250s", form, fk_strerror(err.status),
                err.message);

  /* FFTW plans before the inputs are written (FFTW_MEASURE overwrites the arrays it plans on) */
  double a = now();
  C->plan = fftwf_plan_dft_c2r_1d(n, C->copies, C->y[T_FFTW], FFTW_MEASURE);
  C->plan_s = now() - a;
  a = now();
  C->keep = fftwf_plan_dft_c2r_1d(n, C->cin, C->y[T_FFTW_KEEP], FFTW_MEASURE | FFTW_PRESERVE_INPUT);
  C->keep_s = now() - a;
  if (!C->plan || !C->keep) die("FFTW cannot plan a c2r of %d", n);
  char *s = fftwf_sprint_plan(C->plan);
  squeeze(s, C->plan_desc, sizeof C->plan_desc);
  free(s);
  s = fftwf_sprint_plan(C->keep);
  squeeze(s, C->keep_desc, sizeof C->keep_desc);
  free(s);

  /* the dense inverse DFT, 1/N included: y = A [re; im], A N x (N + 2) row-major, f32 from double */
  double *ct = malloc((size_t)n * sizeof *ct), *st = malloc((size_t)n * sizeof *st);
  if (!ct || !st) die("out of memory");
  trig_tables(n, ct, st);
  C->A = xalloc((size_t)n * (size_t)(2 * h) * 4);
  for (int t = 0; t < n; t++)
    for (int k = 0; k < h; k++) {
      double c = (k == 0 || k == h - 1) ? 1.0 : 2.0;
      int m = (int)(((long)k * t) % n);
      C->A[(size_t)t * (size_t)(2 * h) + (size_t)k] = (float)(c * ct[m] / n);
      C->A[(size_t)t * (size_t)(2 * h) + (size_t)(h + k)] = (k == 0 || k == h - 1) ? 0.0f : (float)(-c * st[m] / n);
    }
  free(ct), free(st);

  /* bytes each contender's calls touch (its own buffers and the inputs it reads) */
  C->footprint[T_FK] = 4.0 * (2 * h + n + 2 * n);
  C->footprint[T_FFTW] = C->footprint[T_FFTW_SCALED] = 8.0 * (double)C->ncopies * (double)C->cstride + 4.0 * n;
  C->footprint[T_FFTW_KEEP] = 8.0 * h + 4.0 * n;
  C->footprint[T_BLAS] = 4.0 * ((double)n * 2 * h + 2 * h + n);
  C->footprint[R_FK] = 4.0 * (FRAME_X + FRAME_N + HOP + FRAME_WORK);
  C->footprint[R_PEER] = 4.0 * (FRAME_X + 2 * BINS + 4 * FRAME_N + 4 * HOP + HOP);
}

static void case_free(fcase *C) {
  fftwf_destroy_plan(C->plan);
  fftwf_destroy_plan(C->keep);
  void *ps[] = { C->re, C->im, C->xv, C->cin, C->copies, C->work, C->A };
  for (size_t i = 0; i < sizeof ps / sizeof ps[0]; i++) fkb_free(ps[i]);
  for (int e = 0; e < NT; e++) fkb_free(C->y[e]);
  C->re = C->im = C->xv = C->work = C->A = NULL;
  C->cin = C->copies = NULL;
}

/* ---- the calls --------------------------------------------------------------------------------- */

/* count calls of contender e; the FFTW rows transform copies 0 .. count - 1 (count <= ncopies) */
static void turn(fcase *C, int e, int count) {
  const int n = C->n;
  switch (e) {
  case T_FK: {
    /* every irfft form has the same argument layout: re, im, y, work */
    fk_irfft_n256_args a = { C->re, C->im, C->y[T_FK], C->work };
    for (int i = 0; i < count; i++) C->leaf.fn(&a);
    break;
  }
  case T_FFTW:
    for (int i = 0; i < count; i++) fftwf_execute_dft_c2r(C->plan, copy_at(C, i), C->y[T_FFTW]);
    break;
  case T_FFTW_SCALED:
    for (int i = 0; i < count; i++) {
      fftwf_execute_dft_c2r(C->plan, copy_at(C, i), C->y[T_FFTW_SCALED]);
      fkb_fft_scale(C->y[T_FFTW_SCALED], n, 1.0f / (float)n);
    }
    break;
  case T_FFTW_KEEP:
    for (int i = 0; i < count; i++) fftwf_execute(C->keep);
    break;
  case T_BLAS:
    for (int i = 0; i < count; i++)
      cblas_sgemv(CblasRowMajor, CblasNoTrans, n, n + 2, 1.0f, C->A, n + 2, C->xv, 1, 0.0f, C->y[T_BLAS], 1);
    break;
  case R_FK: {
    fk_istft_frame_args a = { fr.x, fr.ring, fr.y, fr.work, 0, INFINITY };
    for (int i = 0; i < count; i++) {
      a.frame = fr.t++;
      fr.leaf.fn(&a);
    }
    break;
  }
  case R_PEER:
    for (int i = 0; i < count; i++) fkb_peer_frame_run(fr.peer, fr.x, fr.peer_y, INFINITY);
    break;
  default:
    break;
  }
}

static int destroys_input(int e) { return e == T_FFTW || e == T_FFTW_SCALED; }

/* ---- correctness gates ------------------------------------------------------------------------- */

/* Each transform on GATE_SPECTRA spectra against the float64 inverse DFT; the spectrum of the
 * timing runs (uniform in [-1, 1]) is the first and is left in place. */
static void gate_transforms(fcase *C) {
  const int n = C->n, h = C->h;
  double *ct = malloc((size_t)n * sizeof *ct), *st = malloc((size_t)n * sizeof *st);
  double *x = malloc((size_t)n * sizeof *x), *ab = malloc((size_t)n * sizeof *ab);
  if (!ct || !st || !x || !ab) die("out of memory");
  trig_tables(n, ct, st);
  float *tre = xalloc((size_t)h * 4), *tim = xalloc((size_t)h * 4);
  for (int k = 0; k < h; k++) tre[k] = uniform(-1, 1), tim[k] = uniform(-1, 1);
  tim[0] = tim[h - 1] = 0;
  static const char *const what[GATE_SPECTRA] = { "uniform [-1, 1] (the timed spectrum)", "2^[-3, 3], random signs",
                                                  "2^[-43, -37], random signs", "sparse (every 7th bin 1 + i)" };
  for (int e = 0; e < NT; e++) C->cells[e].gate = 0;
  for (int sp = GATE_SPECTRA - 1; sp >= 0; sp--) { /* the timed spectrum last: it stays */
    for (int k = 0; k < h; k++) {
      switch (sp) {
      case 0: C->re[k] = tre[k], C->im[k] = tim[k]; break;
      case 1: C->re[k] = rand_exp(-3, 3), C->im[k] = rand_exp(-3, 3); break;
      case 2: C->re[k] = rand_exp(-43, -37), C->im[k] = rand_exp(-43, -37); break;
      default: C->re[k] = C->im[k] = k % 7 == 0 ? 1.0f : 0.0f; break;
      }
    }
    C->im[0] = C->im[h - 1] = 0;
    sync_layouts(C);
    ref_irfft(n, C->re, C->im, ct, st, x, ab);
    double norm = 0;
    for (int t = 0; t < n; t++) norm += x[t] * x[t];
    norm = sqrt(norm);
    for (int e = 0; e < NT; e++) {
      cell *c = &C->cells[e];
      if (e == T_FK && !C->leaf_ok) continue;
      for (int t = 0; t < n; t++) C->y[e][t] = NAN;
      turn(C, e, 1);
      restore_copies(C, 1);
      double worst = 0;
      int at = 0;
      for (int t = 0; t < n; t++) {
        double got = (e == T_FFTW || e == T_FFTW_KEEP) ? (double)C->y[e][t] / n : (double)C->y[e][t];
        double r = e == T_BLAS ? fabs(got - x[t]) / (dense_factor(n) * ab[t] + 1e-300)
                               : fabs(got - x[t]) / (bound_factor(n) * norm);
        double w = worse(worst, r);
        if (w > worst) worst = w, at = t;
      }
      c->gate = worse(c->gate, worst);
      if (!(worst <= 1.0) && !c->why[0])
        snprintf(c->why, sizeof c->why, "spectrum %s: y[%d] = %.9g, float64 reference %.9g: %.3g of the bound", what[sp],
                 at, (e == T_FFTW || e == T_FFTW_KEEP) ? (double)C->y[e][at] / n : (double)C->y[e][at], x[at], worst);
    }
  }
  fkb_free(tre), fkb_free(tim);
  free(ct), free(st), free(x), free(ab);
}

/* The float64 ISTFT of a stream of frames: out[j] = stream position 480 + j (the "same" trim). */
static void ref_istft(const float *xs, int frames, double *out) {
  const int total = HOP * (frames - 1) + FRAME_N;
  double *acc = calloc((size_t)total, sizeof *acc), *ct = malloc(FRAME_N * sizeof *ct),
         *st = malloc(FRAME_N * sizeof *st), *z = malloc(FRAME_N * sizeof *z), hann[FRAME_N], xr[BINS], xi[BINS];
  if (!acc || !ct || !st || !z) die("out of memory");
  trig_tables(FRAME_N, ct, st);
  for (int nn = 0; nn < FRAME_N; nn++) hann[nn] = 0.5 - 0.5 * ct[nn];
  for (int f = 0; f < frames; f++) {
    const float *x = xs + (size_t)f * FRAME_X;
    /* X in double; the imaginary parts of X[0] and X[640] ignored (torch's irfft) */
    for (int k = 0; k < BINS; k++) {
      double mag = exp((double)x[k]), ph = (double)x[BINS + k], c = (k == 0 || k == BINS - 1) ? 1.0 : 2.0;
      xr[k] = c * mag * cos(ph);
      xi[k] = (k == 0 || k == BINS - 1) ? 0.0 : c * mag * sin(ph);
    }
    for (int t = 0; t < FRAME_N; t++) {
      double s = 0;
      for (int k = 0; k < BINS; k++) {
        int m = (int)(((long)k * t) % FRAME_N);
        s += xr[k] * ct[m] - xi[k] * st[m];
      }
      z[t] = s / FRAME_N;
    }
    for (int t = 0; t < FRAME_N; t++) acc[HOP * f + t] += z[t] * hann[t];
  }
  for (int q = 480; q < HOP * frames; q++) {
    double env = 0;
    for (int f = 0; f < frames; f++)
      if (q >= HOP * f && q < HOP * f + FRAME_N) env += hann[q - HOP * f] * hann[q - HOP * f];
    out[q - 480] = acc[q] / env;
  }
  free(acc), free(ct), free(st), free(z);
}

/* Both frames over GATE_FRAMES frames of random inputs (log-magnitudes in [-6, 2], phases in
 * [-pi, pi]) against the float64 ISTFT and against each other; then both streams restart for the
 * timing, on the first frame's input. */
static void gate_frames(fcase *C) {
  cell *cf = &C->cells[R_FK], *cp = &C->cells[R_PEER];
  float *xs = xalloc((size_t)GATE_FRAMES * FRAME_X * 4);
  for (int f = 0; f < GATE_FRAMES; f++)
    for (int k = 0; k < BINS; k++)
      xs[f * FRAME_X + k] = uniform(-6, 2), xs[f * FRAME_X + BINS + k] = uniform((float)-PI, (float)PI);
  const int nout = HOP * GATE_FRAMES - 480;
  double *ref = malloc((size_t)nout * sizeof *ref);
  if (!ref) die("out of memory");
  ref_istft(xs, GATE_FRAMES, ref);
  memset(fr.ring, 0, FRAME_N * 4);
  fkb_peer_frame_reset(fr.peer);
  int at = 0;
  double wf = 0, wp = 0, wpair = 0;
  for (int t = 0; t < GATE_FRAMES; t++) {
    int cnt = t == 0 ? 0 : (t == 1 ? HOP / 2 : HOP);
    for (int i = 0; i < HOP; i++) fr.y[i] = fr.peer_y[i] = NAN;
    if (fr.leaf_ok) {
      fk_istft_frame_args a = { xs + (size_t)t * FRAME_X, fr.ring, fr.y, fr.work, t, INFINITY };
      fr.leaf.fn(&a);
    }
    int pc = fkb_peer_frame_run(fr.peer, xs + (size_t)t * FRAME_X, fr.peer_y, INFINITY);
    if (pc != cnt) die("the user frame wrote %d samples at frame %d, the contract says %d", pc, t, cnt);
    if (!cnt) continue;
    double nr = 0, df = 0, dp = 0, dpair = 0;
    for (int i = 0; i < cnt; i++) {
      double r = ref[at + i];
      nr += r * r;
      df += ((double)fr.y[i] - r) * ((double)fr.y[i] - r);
      dp += ((double)fr.peer_y[i] - r) * ((double)fr.peer_y[i] - r);
      dpair += ((double)fr.y[i] - fr.peer_y[i]) * ((double)fr.y[i] - fr.peer_y[i]);
    }
    nr = sqrt(nr);
    double ef = sqrt(df) / nr, ep = sqrt(dp) / nr, epair = sqrt(dpair) / nr;
    wf = worse(wf, ef), wp = worse(wp, ep), wpair = worse(wpair, epair);
    if (fr.leaf_ok && !(ef <= FRAME_TOL) && !cf->why[0])
      snprintf(cf->why, sizeof cf->why, "frame %d: ||y - float64 ISTFT||_2 = %.3g ||ref||_2 > %.0e", t, ef, FRAME_TOL);
    if (!(ep <= FRAME_TOL) && !cp->why[0])
      snprintf(cp->why, sizeof cp->why, "frame %d: ||y - float64 ISTFT||_2 = %.3g ||ref||_2 > %.0e", t, ep, FRAME_TOL);
    if (fr.leaf_ok && !(epair <= FRAME_TOL_PAIR)) {
      if (!cf->why[0])
        snprintf(cf->why, sizeof cf->why, "frame %d: ||fk - user||_2 = %.3g ||ref||_2 > %.0e", t, epair, FRAME_TOL_PAIR);
      if (!cp->why[0])
        snprintf(cp->why, sizeof cp->why, "frame %d: ||fk - user||_2 = %.3g ||ref||_2 > %.0e", t, epair, FRAME_TOL_PAIR);
    }
    at += cnt;
  }
  cf->gate = wf, cp->gate = wp, cf->gate2 = cp->gate2 = wpair;
  /* the timing streams: the first frame's input every call, frames 0..3 run untimed */
  memcpy(fr.x, xs, FRAME_X * 4);
  memset(fr.ring, 0, FRAME_N * 4);
  fr.t = 0;
  fkb_peer_frame_reset(fr.peer);
  free(ref);
  fkb_free(xs);
}

/* ---- one case -------------------------------------------------------------------------------- */

static int calibrate_frames(fcase *C, int e) {
  turn(C, e, 4);
  for (int n = 1;; n *= 2) {
    double a = now();
    turn(C, e, n);
    double t = now() - a;
    if (t >= 200e-6 || n >= 1 << 20) return (int)fmax(1.0, ceil(FRAME_BATCH_S / (t / n)));
  }
}

/* One entry's turn: an untimed call (it brings this contender's lines back after the others'
 * turns), the untimed rewrite of the copies an input-destroying row consumed, then a timed
 * batch: one sample. */
static void timed_turn(void *ctx, int rep, int e) {
  fcase *C = ctx;
  cell *c = &C->cells[e];
  (void)rep;
  if (!c->live) return;
  turn(C, e, 1);
  if (destroys_input(e)) restore_copies(C, c->batch);
  double a = now();
  turn(C, e, c->batch);
  c->s[c->n++] = (now() - a) / c->batch;
}

static void run_case(fcase *C, int done, int total) {
  rng_state = 0xf0f7u + (uint64_t)C->n;
  gate_transforms(C);
  if (C->frames) gate_frames(C);
  int last = C->frames ? NE : NT;
  for (int e = 0; e < last; e++) {
    cell *c = &C->cells[e];
    c->s = calloc((size_t)opt.reps, sizeof(double));
    if (!c->s) die("out of memory");
    if (e == T_FK && !C->leaf_ok) snprintf(c->why, sizeof c->why, "%s", C->leaf_why);
    else if (e == R_FK && !fr.leaf_ok) snprintf(c->why, sizeof c->why, "%s", fr.leaf_why);
    if (c->why[0]) {
      fprintf(stderr, "fk_bench_fft: N = %d: %s is not timed: %s\n", C->n, ename[e], c->why);
      continue;
    }
    c->live = 1;
    c->batch = e < NT ? C->ncopies : calibrate_frames(C, e);
  }

  fkb_cpu_mark mark = fkb_cpu_mark_now();
  fkb_interleave(opt.reps, last, timed_turn, C);
  C->noise = fkb_others_share(mark, fkb_cpu_mark_now());

  double el = now() - t_start;
  fprintf(stderr, "[%5.1fs, size %d/%d] N = %4d:", el, done, total, C->n);
  for (int e = 0; e < last; e++) {
    stats st = stats_of(&C->cells[e]);
    if (st.ok) fprintf(stderr, " | %s %.3f us", eshort[e], st.med * 1e6);
    else fprintf(stderr, " | %s NOT TIMED", eshort[e]);
  }
  if (C->noise >= FKB_NOISY) fprintf(stderr, " | OTHER PROCESSES %.0f%% of the CPUs", 100.0 * C->noise);
  fputc('\n', stderr);
}

/* ---- the results: fft.csv, fft-meta.csv (bench/report.py writes fft.md, fft.dat, fft.png) --------- */

static fcase *case_of(int n) {
  for (int s = 0; s < opt.nsizes; s++)
    if (cases[s].n == n && cases[s].run) return &cases[s];
  return NULL;
}

/* benchFFT's convention for a real transform of size N: 2.5 N log2 N "flops" over the time */
static double mflops(int n, double sec) { return 2.5 * n * log2((double)n) / sec / 1e6; }

static void col_ratio(fkb_out *o, const stats *num, const stats *den) {
  if (num->ok && den->ok) fkb_col_num(o, num->med / den->med);
  else fkb_col_empty(o);
}

static void results(fkb_out *o, int pinned_cpu) {
  fkb_meta(o, "version", "flashkern", "flashkern %s", FKB_FLASHKERN_VERSION);
  fkb_meta(o, "version", "FFTW", "%s", fftwf_version);
  fkb_meta(o, "version", "OpenBLAS", "%s", openblas_get_config());
  fkb_meta(o, "version", "glibc", "%s", gnu_get_libc_version());
  fkb_meta(o, "build", "FFTW", "%s", fftwf_cc);
  fkb_meta(o, "build", "fft_scale.c", "%s", fkb_fft_scale_flags());
  fkb_meta(o, "build", "fft_peer_frame.c", "%s", fkb_peer_frame_flags());
  fkb_meta(o, "env", "OPENBLAS_CORETYPE", "%s", getenv("OPENBLAS_CORETYPE") ? getenv("OPENBLAS_CORETYPE") : "(unset)");
  fkb_meta(o, "env", "OPENBLAS_CORETYPE was", "%s", coretype_was);
  fkb_meta(o, "openblas_corename", "", "%s", openblas_get_corename());
  for (int s = 0; s < opt.nsizes; s++) {
    char n[16];
    snprintf(n, sizeof n, "%d", cases[s].n);
    if (cases[s].leaf_ok) fkb_meta(o, "stamp", n, "%s %s", cases[s].leaf.symbol, cases[s].leaf.variant);
    else fkb_meta(o, "not_resolved", n, "%s", cases[s].leaf_why);
  }
  if (case_of(FRAME_N)) {
    if (fr.leaf_ok) fkb_meta(o, "stamp", "istft_frame", "%s %s", fr.leaf.symbol, fr.leaf.variant);
    else fkb_meta(o, "not_resolved", "istft_frame", "%s", fr.leaf_why);
    fkb_meta(o, "plan", "user frame", "%s", fr.peer_plan);
    fkb_meta_num(o, "plan_s", "user frame", fr.peer_plan_s);
    fkb_meta_num(o, "frames_differ", "", case_of(FRAME_N)->cells[R_FK].gate2);
  }
  fkb_meta(o, "pinned_cpu", "", "%d", pinned_cpu);
  fkb_meta(o, "reps", "", "%d", opt.reps);
  fkb_meta(o, "copy_bytes", "", "%zu", COPY_BYTES);
  fkb_meta_num(o, "frame_batch_s", "", FRAME_BATCH_S);
  fkb_meta_num(o, "bound_factor", "1280", bound_factor(FRAME_N));
  fkb_meta(o, "gate_frames", "", "%d", GATE_FRAMES);
  fkb_meta_num(o, "frame_tol", "", FRAME_TOL);
  fkb_meta_num(o, "frame_tol_pair", "", FRAME_TOL_PAIR);

  for (int s = 0; s < opt.nsizes; s++) {
    const fcase *C = &cases[s];
    char n[16], np[32];
    snprintf(n, sizeof n, "%d", C->n);
    snprintf(np, sizeof np, "%d preserve", C->n);
    fkb_meta(o, "copies", n, "%d", C->ncopies);
    fkb_meta(o, "copy_bytes", n, "%zu", (size_t)C->h * sizeof(fftwf_complex));
    fkb_meta_num(o, "plan_s", n, C->plan_s);
    fkb_meta(o, "plan", n, "%s", C->plan_desc);
    fkb_meta_num(o, "plan_s", np, C->keep_s);
    fkb_meta(o, "plan", np, "%s", C->keep_desc);

    stats sf = stats_of(&C->cells[T_FK]), sw = stats_of(&C->cells[T_FFTW]), ss = stats_of(&C->cells[T_FFTW_SCALED]),
          sfr = stats_of(&C->cells[R_FK]);
    for (int e = 0; e < (C->frames ? NE : NT); e++) {
      const cell *c = &C->cells[e];
      stats st = stats_of(c);
      fkb_col_int(o, C->n);
      fkb_col_str(o, ename[e]);
      fkb_col_word(o, st.ok ? "ok" : "not timed");
      if (st.ok) {
        fkb_col_num(o, st.med * 1e6), fkb_col_num(o, st.min * 1e6), fkb_col_num(o, st.max * 1e6);
        fkb_col_int(o, c->n);
        fkb_col_int(o, c->batch);
        if (e < NT) fkb_col_num(o, mflops(C->n, st.med));
        else fkb_col_empty(o);
        col_ratio(o, &st, &sw);                      /* over_fftw */
        col_ratio(o, &st, &ss);                      /* over_fftw_scaled */
        col_ratio(o, e < NT ? &sf : &sfr, &st);      /* fk_over_this */
      } else {
        for (int i = 0; i < 3; i++) fkb_col_empty(o);
        fkb_col_int(o, 0);
        for (int i = 0; i < 5; i++) fkb_col_empty(o);
      }
      fkb_col_num(o, c->gate);
      fkb_col_num(o, C->footprint[e]);
      if (st.ok && e >= NT) fkb_col_num(o, FRAME_AUDIO_US / (st.med * 1e6)); /* rtf */
      else fkb_col_empty(o);
      fkb_col_num(o, C->noise);
      fkb_col_str(o, st.ok ? "" : c->why[0] ? c->why : "not run");
      fkb_row_end(o);
    }
  }
}

/* ---- main ------------------------------------------------------------------------------------ */

int main(int argc, char **argv) {
  parse_options(argc, argv);
  fkb_openblas_coretype("fk_bench_fft", argv, opt.openblas_core, opt.openblas_core_set, coretype_was,
                        sizeof coretype_was);
  t_start = now();
  const char *core = openblas_get_corename(), *want = getenv("OPENBLAS_CORETYPE");
  if (want && strcasecmp(core, want) != 0)
    fprintf(stderr, "fk_bench_fft: warning: OPENBLAS_CORETYPE=%s but OpenBLAS runs core %s\n", want, core);
  openblas_set_num_threads(1);

  int pinned_cpu = opt.pin ? fkb_pin_here("fk_bench_fft") : -1;
  fprintf(stderr, "fk_bench_fft: %s; %s (core %s); glibc %s\n", fftwf_version, openblas_get_config(), core,
          gnu_get_libc_version());
  fkb_out *out = fkb_out_open("fk_bench_fft", opt.out, "fft",
                              "n,contender,status,median_us,min_us,max_us,samples,batch,mflops,over_fftw,"
                              "over_fftw_scaled,fk_over_this,gate,footprint_bytes,rtf,others_cpu_share,why", argc, argv);

  int with_frames = 0;
  for (int s = 0; s < opt.nsizes; s++) with_frames |= opt.sizes[s] == FRAME_N;
  if (with_frames) {
    fk_error err;
    memset(&err, 0, sizeof err);
    if (fk_leaf_resolve("istft_frame", FK_TIER_EXACT, fk_cpu_features(), &fr.leaf, &err) == FK_OK) fr.leaf_ok = 1;
    else snprintf(fr.leaf_why, sizeof fr.leaf_why, "fk_leaf_resolve(istft_frame, exact): %s: %.250s",
                  fk_strerror(err.status), err.message);
    fr.x = xalloc(FRAME_X * 4), fr.ring = xalloc(FRAME_N * 4), fr.y = xalloc(HOP * 4);
    fr.work = xalloc(FRAME_WORK * 4), fr.peer_y = xalloc(HOP * 4);
    double a = now();
    fr.peer = fkb_peer_frame_create(FFTW_MEASURE, fr.peer_plan, sizeof fr.peer_plan);
    fr.peer_plan_s = now() - a;
    if (!fr.peer) die("cannot create the user frame (FFTW plan or memory)");
    fprintf(stderr, "  %-24s %s\n", "istft_frame", fr.leaf_ok ? fr.leaf.symbol : fr.leaf_why);
  }

  /* planning (FFTW_MEASURE: seconds), then one size after the other */
  for (int s = 0; s < opt.nsizes; s++) {
    case_create(&cases[s], opt.sizes[s]);
    fprintf(stderr, "  N = %-5d %-40s FFTW plan %.2f s: %.100s\n", cases[s].n,
            cases[s].leaf_ok ? cases[s].leaf.symbol : cases[s].leaf_why, cases[s].plan_s, cases[s].plan_desc);
  }
  fprintf(stderr, "fk_bench_fft: %d sizes, %d repetitions\n", opt.nsizes, opt.reps);
  for (int s = 0; s < opt.nsizes; s++) run_case(&cases[s], s + 1, opt.nsizes);

  results(out, pinned_cpu);
  fkb_out_close(out);
  fprintf(stderr, "fk_bench_fft: wrote %s/fft.csv, fft-meta.csv (%.0f s; bench/report.py fft renders them)\n", opt.out,
          now() - t_start);

  for (int s = 0; s < opt.nsizes; s++) {
    for (int e = 0; e < NE; e++) free(cases[s].cells[e].s);
    case_free(&cases[s]);
  }
  if (fr.peer) fkb_peer_frame_destroy(fr.peer);
  fkb_free(fr.x), fkb_free(fr.ring), fkb_free(fr.y), fkb_free(fr.work), fkb_free(fr.peer_y);
  return 0;
}
