/* bench/peer_autovec.c: the compiler's own vectorization of the exact-tier contract model.
 *
 * Plain C of the same order as gemv_ref.c (and flashkern's exact tier): built with
 * -O3 -march=native -ffp-contract=off it is what a user would get by writing the model and
 * letting the compiler do the rest. The 64 slots of a row are one contiguous float array, so
 * the slot loop is what gets vectorized; the weights of a 64-wide block are widened once and
 * shared by the M activation rows. Every fmaf is one fused multiply-add of one slot, in
 * increasing k: vectorizing across slots does not reorder anything, so the result is bit
 * identical to the scalar model (checked at the bench's startup). gcc 12 -fopt-info-vec reports
 * the slot loop (the fmaf line) "vectorized using 64 byte vectors" and keeps all M x 4 zmm
 * accumulators in registers across the K loop. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "fkb.h"

enum { SLOTS = 64, LANES = 16 };

static inline float widen(uint16_t h) {
  uint32_t u = (uint32_t)h << 16;
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}

static inline uint16_t rne(float f) {
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40u);
  return (uint16_t)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

/* Lane l of chain c is slot 32 * (c / 2) + 2 * l + c % 2: v[l] = (A0 + A1) + (A2 + A3). */
static inline float reduce(const float *acc) {
  float v[LANES];
  for (int l = 0; l < LANES; l++) v[l] = (acc[2 * l] + acc[2 * l + 1]) + (acc[32 + 2 * l] + acc[33 + 2 * l]);
  for (int step = LANES / 2; step >= 1; step /= 2)
    for (int i = 0; i < step; i++) v[i] = v[i] + v[i + step];
  return v[0];
}

/* One output row for M activation rows; M is a constant in each instance (see rows()). */
static inline __attribute__((always_inline)) void row_m(const uint16_t *wr, const float *x, int64_t ldx,
                                                        uint16_t *y, int64_t ldy, int64_t n, int64_t k,
                                                        const int m) {
  float acc[FKB_M_MAX][SLOTS];
  for (int j = 0; j < m; j++)
    for (int s = 0; s < SLOTS; s++) acc[j][s] = 0.0f;
  int64_t i = 0;
  for (; i + SLOTS <= k; i += SLOTS) {
    float wf[SLOTS];
    for (int s = 0; s < SLOTS; s++) wf[s] = widen(wr[i + s]);
    for (int j = 0; j < m; j++) {
      const float *xr = x + j * ldx + i;
      for (int s = 0; s < SLOTS; s++) acc[j][s] = fmaf(wf[s], xr[s], acc[j][s]);
    }
  }
  for (int s = 0; i + s < k; s++) { /* the tail: slots past K are left at +0.0f */
    float wv = widen(wr[i + s]);
    for (int j = 0; j < m; j++) acc[j][s] = fmaf(wv, x[j * ldx + i + s], acc[j][s]);
  }
  for (int j = 0; j < m; j++) y[j * ldy + n] = rne(reduce(acc[j]));
}

#define ROWS_M(M)                                                                                                    \
  for (int64_t n = row_begin; n < row_end; n++) row_m(w + n * ldw, x, ldx, y, ldy, n, k, M);                         \
  break

void fkb_autovec_gemv(const uint16_t *w, int64_t ldw, const float *x, int64_t ldx, uint16_t *y, int64_t ldy,
                      int64_t m, int64_t k, int64_t row_begin, int64_t row_end) {
  switch (m) {
  case 1: ROWS_M(1);
  case 2: ROWS_M(2);
  case 3: ROWS_M(3);
  default: ROWS_M(4);
  }
}

const char *fkb_autovec_compiler(void) {
#ifdef __clang__
  return "clang " __clang_version__;
#elif defined(__GNUC__)
  return "gcc " __VERSION__;
#else
  return "cc";
#endif
}

/* ---- the contender ---------------------------------------------------------------------- */

typedef struct autovec_state {
  const fkb_copies *copies;
  const float *x;
  int64_t n, k, m;
  uint16_t *y;
} autovec_state;

const char *fkb_autovec_version(void) {
  static char v[128];
  snprintf(v, sizeof v, "%s, -O3 -march=native -ffp-contract=off", fkb_autovec_compiler());
  return v;
}

int fkb_autovec_prepare(const fkb_problem *p, const fkb_copies *c, fkb_prepared *out, char *err, size_t errlen) {
  autovec_state *st = fkb_alloc(sizeof *st);
  if (st) st->y = fkb_alloc((size_t)(FKB_M_MAX * p->n) * sizeof(uint16_t));
  if (!st || !st->y) {
    snprintf(err, errlen, "out of memory");
    if (st) fkb_free(st);
    return -1;
  }
  st->copies = c;
  st->x = p->x;
  st->n = p->n;
  st->k = p->k;
  st->m = 1;
  out->state = st;
  out->ncopies = c->count;
  out->own_copies = 0;
  out->weight_bytes = 2.0 * (double)p->n * (double)p->k;
  snprintf(out->detail, sizeof out->detail, "%s on the shared row-major bf16 copies", fkb_autovec_compiler());
  return 0;
}

int fkb_autovec_select(void *state, int64_t m, int nthreads, char *err, size_t errlen) {
  (void)nthreads;
  if (m > FKB_M_MAX) {
    snprintf(err, errlen, "M = %lld: the contract model's loop takes M <= %d", (long long)m, FKB_M_MAX);
    return -1;
  }
  ((autovec_state *)state)->m = m;
  return 0;
}

void fkb_autovec_run(void *state, size_t copy, int tid, int nthreads) {
  const autovec_state *st = state;
  int64_t b, e;
  fkb_rows(st->n, tid, nthreads, &b, &e);
  fkb_autovec_gemv(st->copies->w[copy], st->k, st->x, st->k, st->y, st->n, st->m, st->k, b, e);
}

void fkb_autovec_output(void *state, float *y) {
  const autovec_state *st = state;
  for (int64_t i = 0; i < st->m * st->n; i++) y[i] = widen(st->y[i]);
}

void fkb_autovec_finish(void *state) {
  autovec_state *st = state;
  fkb_free(st->y);
  fkb_free(st);
}
