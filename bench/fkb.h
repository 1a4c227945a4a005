/* bench/fkb.h: what the benches share: the harness (every bench: results files, machine,
 * noise meter, statistics, interleaved turns), the helpers, and the GEMV benchmark's contender
 * interface.
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
 * Problem: y[j][n] = sum_k x[j][k] * W[n][k], W is N x K, j < M: the GEMV's M = 1..FKB_M_MAX, or the
 * GEMM's (fk_bench_gemv --gemm: M up to FKB_GEMM_M_MAX; a contender that cannot take an M says
 * so in select() and is not timed there). */
#ifndef FKB_H
#define FKB_H

#include <stddef.h>
#include <stdint.h>

enum { FKB_M_MAX = 4, FKB_GEMM_M_MAX = 512, FKB_MS_MAX = 8, FKB_THREADS_MAX = 2 };

/* Weight copies of one shape: `count` identical N x K row-major bf16 matrices (ldw = k),
 * together more than FKB_ROTATE_BYTES. Contenders that read this layout rotate through them; a
 * contender that needs another layout makes fkb_copy_count() copies of its own. */
typedef struct fkb_copies {
  const uint16_t *const *w;
  size_t count;
} fkb_copies;

typedef struct fkb_problem {
  int64_t n, k;       /* weights N x K */
  const float *x;     /* m_max x k activations, ldx = k (a contender uses the first M rows) */
  int nthreads_max;   /* select() will ask for 1..nthreads_max */
  const int64_t *ms;  /* the Ms select() will ask for, nms of them (<= FKB_MS_MAX) */
  int nms;
  int64_t m_max;      /* the largest of them */
} fkb_problem;

typedef enum fkb_threading {
  FKB_TEAM,    /* run() is called on every member of the driver's team with its tid; it does its rows */
  FKB_LIBRARY  /* run() is called once, on the main thread; the library runs select()'s thread count */
} fkb_threading;

enum {
  FKB_F_BITEXACT = 1u << 0,  /* output must equal the exact-tier contract model bit for bit */
  FKB_F_F32_OUT = 1u << 1,   /* with FKB_F_BITEXACT: the f32 sum before rounding is compared */
  FKB_F_FK_EXACT = 1u << 2,  /* the flashkern exact tier: ratio base */
  FKB_F_FK_FAST = 1u << 3,   /* the flashkern fast tier: ratio base */
  FKB_F_QX = 1u << 4         /* quantized weights, activations quantized per block of 32 (the quantized fast tier) */
};

typedef struct fkb_prepared {
  void *state;
  size_t ncopies;      /* distinct weight copies run() can be given: copy indexes are taken mod this */
  int own_copies;      /* 1: its own copies (own rotation); 0: the shared bf16 copies (shared rotation) */
  double weight_bytes; /* bytes of weights one call reads (its own layout, padding included) */
  /* quantized weights (n x k f32, exact): the gate compares with the float64 sum over them instead of
   * over the problem's bf16 weights; NULL for the others */
  const float *wdeq;
  char detail[200];    /* shown under the tables: the implementation or stamp chosen, the layout */
} fkb_prepared;

typedef struct fkb_contender {
  const char *name;
  const char *(*version)(void);
  double bytes_per_weight; /* 2 for bf16, 4 for f32, 34 / 32 for q8, 18 / 32 for q4 */
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

float fkb_bf16_to_f32(uint16_t h);
/* The contract's integer RNE (NaN: quiet, sign and top payload kept). */
uint16_t fkb_f32_to_bf16(float f);

/* ---- the harness (fkb_harness.c) ------------------------------------------------------------ *
 * A bench writes figures, never prose: DIR/<bench>.csv, one row per measured row (its own
 * columns), and DIR/<bench>-meta.csv, key,item,value rows (the command, the machine, versions,
 * the probe, the run's facts). bench/report.py renders both into DIR/<bench>.md and the plot. */

typedef struct fkb_stats {
  double med, min, max;
  int ok; /* 0: no samples */
} fkb_stats;
/* Median, minimum and maximum of v[0..n-1]; ok = 0 when n < 1. */
fkb_stats fkb_stats_of(const double *v, int n);

/* reps repetitions of a round-robin over entries 0..entries-1, each repetition starting one entry
 * later than the one before: turn(ctx, rep, entry) once per entry per repetition. */
void fkb_interleave(int reps, int entries, void (*turn)(void *ctx, int rep, int entry), void *ctx);

/* The CPU-noise meter: the machine's busy time (/proc/stat, steal included) minus this process's
 * (getrusage) between two marks, as a share of all CPUs over the wall time, 0..1. Less than 5
 * clock ticks of other work reads as 0 (/proc/stat counts in ticks). */
typedef struct fkb_cpu_mark {
  double busy, self, wall;
} fkb_cpu_mark;
fkb_cpu_mark fkb_cpu_mark_now(void);
double fkb_others_share(fkb_cpu_mark a, fkb_cpu_mark b);
#define FKB_NOISY 0.05 /* a case during which other processes used this share of the CPUs is marked */

/* Pins the process to the CPU it runs on; returns that CPU, or -1 (said on stderr) if it cannot. */
int fkb_pin_here(const char *who);

/* OpenBLAS reads OPENBLAS_CORETYPE when it is loaded, before main(): unless the environment already
 * names `want`, sets it and executes the program again (only on CPUs with AVX-512 F/BW/DQ/VL unless
 * forced). `was` receives what the environment had ("(unset)" if nothing), in both images. */
void fkb_openblas_coretype(const char *who, char **argv, const char *want, int forced, char *was, size_t len);

/* The results files. fkb_out_open() creates DIR, opens DIR/<bench>.csv (writing `header`) and
 * DIR/<bench>-meta.csv, and writes the meta rows command (who and argv[1..]) and machine (cpu, vm,
 * cpus, caches, memory, thp, kernel, compiler, date); it starts the run's clock and noise meter.
 * fkb_out_close() adds elapsed_s and others_cpu_share over the run and closes both. Errors exit. */
typedef struct fkb_out fkb_out;
void fkb_out_dir(const char *who, const char *dir); /* creates DIR and checks it is writable */
fkb_out *fkb_out_open(const char *who, const char *dir, const char *bench, const char *header, int argc,
                      char **argv);
void fkb_meta(fkb_out *o, const char *key, const char *item, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
void fkb_meta_num(fkb_out *o, const char *key, const char *item, double v);
/* One CSV row, column by column: a name (quoted), a bare word, a number (the shortest decimal
 * that reads back as the same double: the report rounds the run's own values), an integer, an
 * empty field; fkb_row_end() ends the row. */
void fkb_col_str(fkb_out *o, const char *s);
void fkb_col_word(fkb_out *o, const char *s);
void fkb_col_num(fkb_out *o, double v);
void fkb_col_int(fkb_out *o, long long v);
void fkb_col_empty(fkb_out *o);
void fkb_row_end(fkb_out *o);
/* One row of a series: table, contender (quoted), threads, tier, metric, then its median, min,
 * max and n (fk_bench_ckpt, fk_bench_audio). */
void fkb_series_row(fkb_out *o, const char *table, const char *contender, int threads, const char *tier,
                    const char *metric, const fkb_series *s);
/* A --threads or --tiers list ("1,2", "exact,fast"): the values it names, in that order (threads 1
 * and 2; FK_TIER_EXACT and FK_TIER_FAST), into out[2]; returns how many. */
int fkb_parse_threads(const char *v, int out[2]);
int fkb_parse_tiers(const char *v, int out[2]);
void fkb_out_close(fkb_out *o);

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
int fkb_flashkern_prepare_q8(const fkb_problem *p, const fkb_copies *c, fkb_prepared *out, char *err, size_t errlen);
int fkb_flashkern_prepare_q4(const fkb_problem *p, const fkb_copies *c, fkb_prepared *out, char *err, size_t errlen);
int fkb_flashkern_prepare_q8_fast(const fkb_problem *p, const fkb_copies *c, fkb_prepared *out, char *err, size_t errlen);
/* the same forms' avxvnni stamps (x86_64: AVX-VNNI, ymm pairs), chosen with the CPU's features less AVX-512 */
int fkb_flashkern_prepare_q8_ymm(const fkb_problem *p, const fkb_copies *c, fkb_prepared *out, char *err, size_t errlen);
int fkb_flashkern_prepare_q4_ymm(const fkb_problem *p, const fkb_copies *c, fkb_prepared *out, char *err, size_t errlen);
int fkb_flashkern_prepare_q8_avx2(const fkb_problem *p, const fkb_copies *c, fkb_prepared *out, char *err, size_t errlen);
int fkb_flashkern_prepare_q4_avx2(const fkb_problem *p, const fkb_copies *c, fkb_prepared *out, char *err, size_t errlen);
int fkb_flashkern_prepare_q4_fast(const fkb_problem *p, const fkb_copies *c, fkb_prepared *out, char *err, size_t errlen);
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
/* One pass of the whole buffer on 1 or 2 threads (the caller and, for 2, one more thread): GB/s. */
double fkb_probe_gbs(fkb_probe *p, int threads);

#endif /* FKB_H */
