/* bench/ab_stamp.c: one GEMV stamp of two generator revisions, in one process, in turn (so that
 * the machine's drift between runs cancels): the median of the per-round time ratios, and a check
 * that the outputs are equal. Not built by CMake: a tool for a before/after question.
 *
 *   S=fk_gemv_bf16_rne_packed__x86_64_avx512bf16_fast     (any gemv_bf16_rne_packed stamp)
 *   gcc -c -x assembler-with-cpp -I$OLD/generated $OLD/generated/x86_64/$S.S -o before.o
 *   objcopy --redefine-sym $S=${S}_before before.o
 *   gcc -c -x assembler-with-cpp -Igenerated generated/x86_64/$S.S -o after.o
 *   gcc -O2 -DSTAMP=$S -Igenerated -Iruntime/include bench/ab_stamp.c before.o after.o build/libflashkern.a \
 *       -lpthread -o ab_stamp
 *   ./ab_stamp N K [M [ROUNDS]]
 *
 * M is 1..24 (one runtime call's rows: the GEMM when M > 4); xs is sized for the current packed
 * forms (with the k pieces' partial sums), which also covers earlier revisions' smaller extent.
 * (the args struct of the two revisions must be the same: diff their generated/fk_leaves.h) */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ab_common.h"
#include "fk_leaves.h"
#include "flashkern.h"

#ifndef STAMP
#define STAMP fk_gemv_bf16_rne_packed__x86_64_avx512bf16_fast
#endif
#define CAT_(a, b) a##b
#define CAT(a, b) CAT_(a, b)
#define AFTER STAMP
#define BEFORE CAT(STAMP, _before)
void BEFORE(const fk_gemv_bf16_rne_packed_args *a);

/* the two revisions' calls, on their own outputs */
static fk_gemv_bf16_rne_packed_args call_a, call_b;
static void run(int after, void *ctx) {
  (void)ctx;
  if (after)
    AFTER(&call_a);
  else
    BEFORE(&call_b);
}

int main(int argc, char **argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: ab_stamp N K [M [ROUNDS]]\n");
    return 2;
  }
  int64_t n = atoll(argv[1]), k = atoll(argv[2]);
  int m = argc > 3 ? atoi(argv[3]) : 1, rounds = argc > 4 ? atoi(argv[4]) : 60;
  if (n < 1 || k < 1 || m < 1 || m > 24 || rounds < 1 || rounds > 1000) {
    fprintf(stderr, "ab_stamp: N, K >= 1, M 1..24, ROUNDS 1..1000\n");
    return 2;
  }
  int64_t kp = (k + 63) / 64 * 64;
  size_t el = fk_gemv_packed_elems(n, k);
  uint16_t *wr = malloc((size_t)(n * k) * 2), *w = aligned_alloc(64, (el * 2 + 63) / 64 * 64);
  size_t part = k > FK_GEMV_GEMM_KBLOCK ? (size_t)((n + 3) / 4 * 4 * FK_GEMV_GEMM_PART_ROW) : 0;
  float *x = malloc((size_t)(m * k) * 4), *xs = aligned_alloc(64, ((size_t)(m * kp) + FK_GEMV_GEMM_SUMS + part) * 4);
  uint16_t *ya = malloc((size_t)(m * n) * 2), *yb = malloc((size_t)(m * n) * 2);
  if (!wr || !w || !x || !xs || !ya || !yb) return 2;
  for (int64_t i = 0; i < n * k; i++) wr[i] = (uint16_t)(0x3c00 + i % 251);
  for (int64_t i = 0; i < m * k; i++) x[i] = (float)(i % 13) * 0.1f - 0.5f;
  fk_error err;
  if (fk_gemv_pack(wr, k, n, k, w, el, &err) != FK_OK) {
    fprintf(stderr, "ab_stamp: %s\n", err.message);
    return 2;
  }
  call_a = (fk_gemv_bf16_rne_packed_args){ .w = w, .x = x, .ldx = k, .xs = xs, .y = ya, .y_off = 0, .ldy = n,
                                           .m = m, .k = k, .row_begin = 0, .row_end = n };
  call_b = call_a;
  call_b.y = yb;
  int inner = (int)(2e8 / ((double)(n * k) * m));
  if (inner < 1) inner = 1;
  ab_result r;
  if (ab_alternate(rounds, inner, run, NULL, &r)) return 2;
  int same = memcmp(ya, yb, (size_t)(m * n) * 2) == 0;
  printf("%lldx%lld m=%d: before %.1f us, after %.1f us; after / before time: median %.3f (q25 %.3f, q75 %.3f); "
         "outputs %s\n", (long long)n, (long long)k, m, r.before_us, r.after_us, r.median, r.q25, r.q75,
         same ? "equal" : "DIFFER");
  return same ? 0 : 1;
}
