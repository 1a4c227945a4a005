/* bench/ab_common.h: what the before/after tools share (bench/ab_stamp.c, bench/ab_attn.c): the two
 * revisions' calls in turn, round after round, so that the machine's drift between runs cancels,
 * and the figures of their summary line. Header-only: each tool is one file built by hand. */
#ifndef FK_BENCH_AB_COMMON_H
#define FK_BENCH_AB_COMMON_H

#include <stdlib.h>
#include <time.h>

/* medians of the per-call times (microseconds) and of the per-round ratios after / before */
typedef struct {
  double before_us, after_us, median, q25, q75;
} ab_result;

static double ab_now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static int ab_cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* rounds rounds of `inner` calls run(0, ctx) (before) then `inner` calls run(1, ctx) (after);
 * returns 0, or -1 when out of memory */
static int ab_alternate(int rounds, int inner, void (*run)(int after, void *ctx), void *ctx, ab_result *out) {
  double *ta = malloc((size_t)rounds * sizeof *ta), *tb = malloc((size_t)rounds * sizeof *tb),
         *q = malloc((size_t)rounds * sizeof *q);
  if (!ta || !tb || !q) {
    free(ta), free(tb), free(q);
    return -1;
  }
  for (int r = 0; r < rounds; r++) {
    double t0 = ab_now();
    for (int i = 0; i < inner; i++) run(0, ctx);
    double t1 = ab_now();
    for (int i = 0; i < inner; i++) run(1, ctx);
    double t2 = ab_now();
    tb[r] = (t1 - t0) / inner;
    ta[r] = (t2 - t1) / inner;
    q[r] = ta[r] / tb[r];
  }
  qsort(q, (size_t)rounds, sizeof *q, ab_cmp);
  qsort(ta, (size_t)rounds, sizeof *ta, ab_cmp);
  qsort(tb, (size_t)rounds, sizeof *tb, ab_cmp);
  *out = (ab_result){ tb[rounds / 2] * 1e6, ta[rounds / 2] * 1e6, q[rounds / 2], q[rounds / 4], q[3 * rounds / 4] };
  free(ta), free(tb), free(q);
  return 0;
}

#endif
