/* bench/fkb.h: what the GEMV benchmark's driver and its contenders share.
 *
 * A contender is one row of the driver's table (fk_bench_gemv.c, `contenders[]`): a name, a
 * version string, the bytes one weight occupies in the layout it reads, and five functions.
 * prepare() runs once per shape, untimed: it converts, reorders or packs the weights into its
 * own copies if it needs another layout, creates library primitives for every M and thread
 * count, and allocates every buffer it will touch. select() runs before each turn, untimed:
 * it picks the M and the thread count (and tells a library its thread count). run() is the
 * timed call. output() hands the last result back as f32 for the correctness gate, finish()
 * frees everything prepare() made.
 *
 * Problem: y[j][n] = sum_k x[j][k] * W[n][k], W is N x K, j < M, M = 1..FKB_M_MAX. */
#ifndef FKB_H
#define FKB_H

#include <stddef.h>
#include <stdint.h>

enum { FKB_M_MAX = 4, FKB_THREADS_MAX = 2 };

/* Weight copies of one shape: `count` identical N x K row-major bf16 matrices (ldw = k),
 * together more than FKB_ROTATE_BYTES. Contenders that read this layout rotate through them; a
 * contender that needs another layout makes fkb_copy_count() copies of its own. */
typedef struct fkb_copies {
  const uint16_t *const *w;
  size_t count;
} fkb_copies;

typedef struct fkb_problem {
  int64_t n, k;       /* weights N x K */
  const float *x;     /* FKB_M_MAX x k activations, ldx = k (a contender uses the first M rows) */
  int nthreads_max;   /* select() will ask for 1..nthreads_max */
} fkb_problem;

typedef enum fkb_threading {
  FKB_TEAM,    /* run() is called on every member of the driver's team with its tid; it does its rows */
  FKB_LIBRARY  /* run() is called once, on the main thread; the library runs select()'s thread count */
} fkb_threading;

enum {
  FKB_F_BITEXACT = 1u << 0,  /* output must equal the exact-tier contract model bit for bit */
  FKB_F_F32_OUT = 1u << 1,   /* with FKB_F_BITEXACT: the f32 sum before rounding is compared */
  FKB_F_FK_EXACT = 1u << 2,  /* the flashkern exact tier: ratio base */
  FKB_F_FK_FAST = 1u << 3    /* the flashkern fast tier: ratio base */
};

typedef struct fkb_prepared {
  void *state;
  size_t ncopies;      /* distinct weight copies run() can be given: copy indexes are taken mod this */
  int own_copies;      /* 1: its own copies (own rotation); 0: the shared bf16 copies (shared rotation) */
  double weight_bytes; /* bytes of weights one call reads (its own layout, padding included) */
  char detail[200];    /* shown under the tables: the implementation or stamp chosen, the layout */
} fkb_prepared;

typedef struct fkb_contender {
  const char *name;
  const char *(*version)(void);
  int bytes_per_weight;
  fkb_threading threading;
  unsigned flags;
  /* 0 on success; otherwise a message in err and the contender sits this shape out */
  int (*prepare)(const fkb_problem *p, const fkb_copies *c, fkb_prepared *out, char *err, size_t errlen);
  int (*select)(void *state, int64_t m, int nthreads, char *err, size_t errlen);
  void (*run)(void *state, size_t copy, int tid, int nthreads);
  void (*output)(void *state, float *y); /* M x N, row j at y + j * n */
  void (*finish)(void *state);
} fkb_contender;

/* ---- helpers (fkb_common.c) ------------------------------------------------------------ */

/* "<who>: <message>" on stderr, then exit(1). */
void fkb_die(const char *who, const char *fmt, ...) __attribute__((format(printf, 2, 3), noreturn));
/* CLOCK_MONOTONIC in seconds. */
double fkb_now(void);

/* Repeated measurements of one quantity, and their median, minimum, maximum (n >= 1). */
enum { FKB_MAX_REPS = 201 };
typedef struct fkb_series {
  double v[FKB_MAX_REPS];
  int n;
} fkb_series;
int fkb_cmp_double(const void *a, const void *b); /* qsort, ascending */
double fkb_series_median(const fkb_series *s);
double fkb_series_min(const fkb_series *s);
double fkb_series_max(const fkb_series *s);


/* Every cold rotation covers more than this many bytes: far beyond any L3 (32 MiB here, 260
 * MiB on the machine), so a copy is always evicted before it is read again. */
#define FKB_ROTATE_BYTES ((size_t)1152 << 20) /* 1.125 GiB */

/* Copies of `bytes` each that together exceed FKB_ROTATE_BYTES (at least 2). */
size_t fkb_copy_count(size_t bytes);
/* Distance between consecutive copies in one region: `bytes` rounded up to 4 KiB. */
size_t fkb_copy_stride(size_t bytes);

/* Page-aligned anonymous memory, transparent huge pages requested (every weight region of
 * every contender and the probe buffer come from here, so all see the same page size).
 * Returns NULL on failure. */
void *fkb_region_alloc(size_t bytes);
void fkb_region_free(void *p, size_t bytes);

/* 64-byte aligned heap memory for small buffers; fkb_free() releases it. */
void *fkb_alloc(size_t bytes);
void fkb_free(void *p);

/* Rows [*begin, *end) of member tid of nthreads, split at multiples of 64 rows. */
void fkb_rows(int64_t n, int tid, int nthreads, int64_t *begin, int64_t *end);

/* The machine in one line: CPU, caches, memory, THP, kernel, compiler, date (report headers). */
void fkb_machine_line(char *buf, size_t len);

float fkb_bf16_to_f32(uint16_t h);
/* The contract's integer RNE (NaN: quiet, sign and top payload kept). */
uint16_t fkb_f32_to_bf16(float f);

/* ---- the scalar contract model and a float64 reference (gemv_ref.c) ------------------------ */

/* The exact tier's order, written one k at a time: ybf (bf16 bits) and yf32 (the sum before
 * rounding) for rows j < m, n < nrows, at y[j * ldy + n]. Either output may be NULL. */
void fkb_ref_exact(const uint16_t *w, int64_t ldw, const float *x, int64_t ldx, int64_t m, int64_t nrows,
                   int64_t k, uint16_t *ybf, float *yf32, int64_t ldy);
/* sum in float64 and sum of |products|, for the tolerance of the non-exact contenders. */
void fkb_ref_f64(const uint16_t *w, int64_t ldw, const float *x, int64_t ldx, int64_t m, int64_t nrows,
                 int64_t k, double *y, double *abs_sum, int64_t ldy);

/* ---- the compiler's vectorization of the contract model (peer_autovec.c) ------------------ */

/* Rows [row_begin, row_end) of the exact-tier GEMV, bf16 RNE out at y[j * ldy + n]. */
void fkb_autovec_gemv(const uint16_t *w, int64_t ldw, const float *x, int64_t ldx, uint16_t *y, int64_t ldy,
                      int64_t m, int64_t k, int64_t row_begin, int64_t row_end);
const char *fkb_autovec_compiler(void);

/* ---- contender entry points, listed in the driver's table --------------------------------- */

const char *fkb_autovec_version(void);
int fkb_autovec_prepare(const fkb_problem *p, const fkb_copies *c, fkb_prepared *out, char *err, size_t errlen);
int fkb_autovec_select(void *state, int64_t m, int nthreads, char *err, size_t errlen);
void fkb_autovec_run(void *state, size_t copy, int tid, int nthreads);
void fkb_autovec_output(void *state, float *y);
void fkb_autovec_finish(void *state);

const char *fkb_onednn_version(void);
int fkb_onednn_prepare_packed(const fkb_problem *p, const fkb_copies *c, fkb_prepared *out, char *err,
                              size_t errlen);
int fkb_onednn_prepare_rowmajor(const fkb_problem *p, const fkb_copies *c, fkb_prepared *out, char *err,
                                size_t errlen);
int fkb_onednn_select(void *state, int64_t m, int nthreads, char *err, size_t errlen);
void fkb_onednn_run(void *state, size_t copy, int tid, int nthreads);
void fkb_onednn_output(void *state, float *y);
void fkb_onednn_finish(void *state);

const char *fkb_openblas_version(void);
const char *fkb_openblas_corename(void);
int fkb_openblas_prepare(const fkb_problem *p, const fkb_copies *c, fkb_prepared *out, char *err, size_t errlen);
int fkb_openblas_select(void *state, int64_t m, int nthreads, char *err, size_t errlen);
void fkb_openblas_run(void *state, size_t copy, int tid, int nthreads);
void fkb_openblas_output(void *state, float *y);
void fkb_openblas_finish(void *state);

#ifdef FK_BENCH_WITH_FLASHKERN
const char *fkb_flashkern_version(void);
int fkb_flashkern_prepare_exact(const fkb_problem *p, const fkb_copies *c, fkb_prepared *out, char *err,
                                size_t errlen);
int fkb_flashkern_prepare_fast(const fkb_problem *p, const fkb_copies *c, fkb_prepared *out, char *err,
                               size_t errlen);
int fkb_flashkern_prepare_exact_f32(const fkb_problem *p, const fkb_copies *c, fkb_prepared *out, char *err,
                                    size_t errlen);
int fkb_flashkern_prepare_fast_f32(const fkb_problem *p, const fkb_copies *c, fkb_prepared *out, char *err,
                                   size_t errlen);
int fkb_flashkern_prepare_exact_packed(const fkb_problem *p, const fkb_copies *c, fkb_prepared *out, char *err,
                                       size_t errlen);
int fkb_flashkern_prepare_fast_packed(const fkb_problem *p, const fkb_copies *c, fkb_prepared *out, char *err,
                                      size_t errlen);
int fkb_flashkern_prepare_fast_blocked(const fkb_problem *p, const fkb_copies *c, fkb_prepared *out, char *err,
                                       size_t errlen);
int fkb_flashkern_select(void *state, int64_t m, int nthreads, char *err, size_t errlen);
void fkb_flashkern_run(void *state, size_t copy, int tid, int nthreads);
void fkb_flashkern_output(void *state, float *y);
void fkb_flashkern_finish(void *state);
#endif

/* ---- the read-bandwidth probe (bw_probe.c) ------------------------------------------------ */

typedef struct fkb_probe fkb_probe;
/* A buffer of `bytes` (> 1 GiB in the bench), written once so every page is backed. */
fkb_probe *fkb_probe_create(size_t bytes);
size_t fkb_probe_bytes(const fkb_probe *p);
const char *fkb_probe_kind(const fkb_probe *p); /* "AVX-512 loads" or "portable 64-bit loads" */
/* Member tid of nthreads reads its contiguous share of the whole buffer (team job). */
void fkb_probe_run(void *probe, size_t unused, int tid, int nthreads);
void fkb_probe_destroy(fkb_probe *p);

#endif /* FKB_H */
