/* bench/runtime_peers.c: the block step without the runtime (fkb_runtime.h). */
#include <omp.h>
#include <stdio.h>

#include "fkb.h"
#include "fkb_runtime.h"

/* the plan's shares (runtime/fk_program.h): contiguous, in member order, whole pack groups */
static void share_rows(int64_t rows, int m, int n, int64_t *b, int64_t *e) {
  int64_t groups = (rows + FK_GEMV_PACK_ROWS - 1) / FK_GEMV_PACK_ROWS;
  *b = groups * m / n * FK_GEMV_PACK_ROWS;
  *e = groups * (m + 1) / n * FK_GEMV_PACK_ROWS;
  if (*e > rows) *e = rows;
}

static void norm(const fkb_block *b, uint16_t *x) {
  fk_rmsnorm_bf16_wide_args a = { .x = x, .w = b->norm_w, .y = b->xn, .n = b->h, .rows = 1, .x_stride = b->h,
                                  .y_stride = b->h, .eps = 1e-5f };
  b->norm.fn(&a);
}
static void in_proj(const fkb_block *b, int m, int n) {
  int64_t r0, r1;
  share_rows(3 * b->h, m, n, &r0, &r1);
  if (r0 >= r1) return;
  fk_gemv_bf16_rne_packed_args a = { .w = b->in_w, .x = b->xn, .ldx = b->h, .xs = b->xs[m], .y = b->bcx, .y_off = 0,
                                     .ldy = 3 * b->h, .m = 1, .k = b->h, .row_begin = r0, .row_end = r1 };
  b->in.fn(&a);
}
static void conv(const fkb_block *b) {
  fk_shortconv_bf16_wide_args a = { .in = b->bcx, .w = b->conv_w, .carry = b->carry, .y = b->cy, .h = b->h, .m = 1,
                                    .ld_in = 3 * b->h, .ldy = b->h };
  b->conv.fn(&a);
}
static void out_proj(const fkb_block *b, uint16_t *x, int m, int n) {
  int64_t r0, r1;
  share_rows(b->h, m, n, &r0, &r1);
  if (r0 >= r1) return;
  fk_gemv_bf16_rne_add_packed_args a = { .w = b->out_w, .x = b->cy, .ldx = b->h, .xs = b->xs[m], .r = x, .y = x,
                                         .y_off = 0, .ldy = b->h, .m = 1, .k = b->h, .row_begin = r0, .row_end = r1 };
  b->out.fn(&a);
}

void fkb_block_direct(const fkb_block *b, uint16_t *x) {
  norm(b, x);
  in_proj(b, 0, 1);
  conv(b);
  out_proj(b, x, 0, 1);
}

void fkb_block_omp(const fkb_block *b, uint16_t *x, int nthreads) {
#pragma omp parallel num_threads(nthreads)
  {
    int m = omp_get_thread_num(), n = omp_get_num_threads();
    if (m == n - 1) norm(b, x); /* the plan's row share of 1 row lands on the last member */
#pragma omp barrier
    in_proj(b, m, n);
#pragma omp barrier
    if (m == 0) conv(b);
#pragma omp barrier
    out_proj(b, x, m, n);
  }
}

void fkb_omp_empty(int phases, int nthreads) {
#pragma omp parallel num_threads(nthreads)
  {
    for (int i = 0; i < phases - 1; i++) {
#pragma omp barrier
    }
  }
}

void fkb_omp_probe(void *probe, int nthreads) {
#pragma omp parallel num_threads(nthreads)
  fkb_probe_run(probe, 0, omp_get_thread_num(), nthreads);
}

const char *fkb_omp_version(void) {
  static char v[64];
  snprintf(v, sizeof v, "libgomp, OpenMP %d", _OPENMP);
  return v;
}
