/* bench/peer_openblas.c: OpenBLAS cblas_sgemv (M = 1) and cblas_sgemm (M = 2..4) on f32 copies
 * of the weights.
 *
 * OpenBLAS has no bf16-weight GEMV, so a user would hold the weights as f32: twice the bytes.
 * Its GB/s counts those f32 bytes. The copies are converted from the shared bf16 copies in
 * prepare() (same values, exactly), and rotate through their own > 1 GiB. The kernel set is
 * chosen by OPENBLAS_CORETYPE at library load (the driver re-executes itself with it set);
 * the thread count is openblas_set_num_threads() in select(). */
#include <cblas.h>
#include <stdio.h>

#include "fkb.h"

typedef struct openblas_state {
  float *region;
  size_t region_bytes, stride, ncopies;
  const float *x;
  float *y;
  int64_t n, k, m;
} openblas_state;

const char *fkb_openblas_corename(void) { return openblas_get_corename(); }

const char *fkb_openblas_version(void) {
  static char v[256];
  snprintf(v, sizeof v, "%s (core %s)", openblas_get_config(), openblas_get_corename());
  return v;
}

int fkb_openblas_prepare(const fkb_problem *p, const fkb_copies *c, fkb_prepared *out, char *err, size_t errlen) {
  openblas_state *st = fkb_alloc(sizeof *st);
  if (!st) goto oom;
  size_t bytes = (size_t)(p->n * p->k) * sizeof(float);
  st->n = p->n;
  st->k = p->k;
  st->m = 1;
  st->x = p->x;
  st->ncopies = fkb_copy_count(bytes);
  st->stride = fkb_copy_stride(bytes);
  st->region_bytes = st->ncopies * st->stride;
  st->region = fkb_region_alloc(st->region_bytes);
  st->y = fkb_alloc((size_t)(p->m_max * p->n) * sizeof(float));
  if (!st->region || !st->y) goto oom;
  for (size_t i = 0; i < st->ncopies; i++) {
    const uint16_t *src = c->w[i % c->count];
    float *dst = (float *)((char *)st->region + i * st->stride);
    for (int64_t e = 0; e < p->n * p->k; e++) dst[e] = fkb_bf16_to_f32(src[e]);
  }
  out->state = st;
  out->ncopies = st->ncopies;
  out->own_copies = 1;
  out->weight_bytes = (double)bytes;
  snprintf(out->detail, sizeof out->detail, "core %s; f32 row-major copies: %zu x %.1f MiB",
           openblas_get_corename(), st->ncopies, (double)bytes / 1048576.0);
  return 0;
oom:
  snprintf(err, errlen, "out of memory");
  if (st) fkb_openblas_finish(st);
  return -1;
}

int fkb_openblas_select(void *state, int64_t m, int nthreads, char *err, size_t errlen) {
  (void)err, (void)errlen;
  ((openblas_state *)state)->m = m;
  openblas_set_num_threads(nthreads);
  return 0;
}

void fkb_openblas_run(void *state, size_t copy, int tid, int nthreads) {
  (void)tid, (void)nthreads;
  const openblas_state *st = state;
  const float *w = (const float *)((const char *)st->region + copy * st->stride);
  const blasint n = (blasint)st->n, k = (blasint)st->k, m = (blasint)st->m;
  if (m == 1)
    cblas_sgemv(CblasRowMajor, CblasNoTrans, n, k, 1.0f, w, k, st->x, 1, 0.0f, st->y, 1);
  else /* Y (M x N) = X (M x K) . W^T, W row-major N x K */
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, m, n, k, 1.0f, st->x, k, w, k, 0.0f, st->y, n);
}

void fkb_openblas_output(void *state, float *y) {
  const openblas_state *st = state;
  for (int64_t i = 0; i < st->m * st->n; i++) y[i] = st->y[i];
}

void fkb_openblas_finish(void *state) {
  openblas_state *st = state;
  fkb_region_free(st->region, st->region_bytes);
  fkb_free(st->y);
  fkb_free(st);
}
