/* bench/ab_attn.c: one attention stamp (a prefill64 form) of two generator revisions, in one
 * process, in turn (so that the machine's drift between runs cancels): the median of the per-round
 * time ratios, and a check that the outputs are equal. Not built by CMake: a tool for a
 * before/after question, as bench/ab_stamp.c is for the GEMV.
 *
 *   S=fk_attn_prefill64__x86_64_avx512_exact              (any attn prefill64 stamp)
 *   gcc -c -x assembler-with-cpp -I$OLD/generated $OLD/generated/x86_64/$S.S -o before.o
 *   objcopy --redefine-sym $S=${S}_before before.o
 *   gcc -c -x assembler-with-cpp -Igenerated generated/x86_64/$S.S -o after.o
 *   gcc -O2 -DSTAMP=$S -Igenerated -Iruntime/include bench/ab_attn.c before.o after.o -o ab_attn
 *   ./ab_attn POS ROWS [KV_HEADS GROUP [ROUNDS]]
 *
 * The cache holds POS + ROWS positions, heads contiguous in a row (LFM2's layout: k_ld_row =
 * kv_heads * 64); ROWS query rows at positions POS .. POS + ROWS - 1 (ROWS = 1: one decode step's
 * work through the prefill form). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ab_common.h"
#include "fk_leaves.h"

#ifndef STAMP
#define STAMP fk_attn_prefill64__x86_64_avx512_exact
#endif
#define CAT_(a, b) a##b
#define CAT(a, b) CAT_(a, b)
#define AFTER STAMP
#define BEFORE CAT(STAMP, _before)
void AFTER(const fk_attn_prefill64_args *a);
void BEFORE(const fk_attn_prefill64_args *a);

/* the two revisions' calls, on their own outputs */
static fk_attn_prefill64_args call_a, call_b;
static void run(int after, void *ctx) {
  (void)ctx;
  if (after)
    AFTER(&call_a);
  else
    BEFORE(&call_b);
}

/* a bf16 in [-2, 2) from a counter (no NaN, no inf) */
static uint16_t bf(uint32_t i) {
  uint32_t h = i * 2654435761u;
  float f = (float)(h >> 8) / (float)(1 << 24) * 4.0f - 2.0f;
  uint32_t u;
  memcpy(&u, &f, 4);
  return (uint16_t)(u >> 16);
}

int main(int argc, char **argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: ab_attn POS ROWS [KV_HEADS GROUP [ROUNDS]]\n");
    return 2;
  }
  int64_t pos = atoll(argv[1]), rows = atoll(argv[2]);
  int64_t kvh = argc > 4 ? atoll(argv[3]) : 8, group = argc > 4 ? atoll(argv[4]) : 4;
  int rounds = argc > 5 ? atoi(argv[5]) : 30;
  if (pos < 0 || rows < 1 || pos + rows > 65536 || kvh < 1 || kvh > 64 || group < 1 || group > 16 || rounds < 1 ||
      rounds > 1000) {
    fprintf(stderr, "ab_attn: POS >= 0, ROWS >= 1, POS + ROWS <= 65536, KV_HEADS 1..64, GROUP 1..16, ROUNDS 1..1000\n");
    return 2;
  }
  int64_t slots = pos + rows, ldr = kvh * 64, heads = kvh * group;
  uint16_t *q = malloc((size_t)(rows * heads * 64) * 2), *k = malloc((size_t)(slots * ldr) * 2),
           *v = malloc((size_t)(slots * ldr) * 2), *ya = malloc((size_t)(rows * heads * 64) * 2),
           *yb = malloc((size_t)(rows * heads * 64) * 2);
  float *s = aligned_alloc(64, (size_t)((slots + 15) / 16 * 16) * 4);
  if (!q || !k || !v || !ya || !yb || !s) return 2;
  for (int64_t i = 0; i < rows * heads * 64; i++) q[i] = bf((uint32_t)i);
  for (int64_t i = 0; i < slots * ldr; i++) {
    k[i] = bf((uint32_t)(i + 7777777));
    v[i] = bf((uint32_t)(i + 3333333));
  }
  call_a = (fk_attn_prefill64_args){ .q = q, .k = k, .v = v, .y = ya, .s = s, .kv_heads = kvh, .group = group,
                                     .k_ld_head = 64, .k_ld_row = ldr, .v_ld_head = 64, .v_ld_row = ldr, .pos = pos,
                                     .rows = rows, .q_ld = heads * 64, .y_ld = heads * 64 };
  call_b = call_a;
  call_b.y = yb;
  double work = (double)rows * (double)(pos + (rows + 1) / 2) * (double)heads * 64;
  int inner = (int)(1e8 / work);
  if (inner < 1) inner = 1;
  ab_result r;
  if (ab_alternate(rounds, inner, run, NULL, &r)) return 2;
  int same = memcmp(ya, yb, (size_t)(rows * heads * 64) * 2) == 0;
  printf("pos %lld rows %lld heads %lld/%lld: before %.1f us, after %.1f us; after / before time: median %.3f "
         "(q25 %.3f, q75 %.3f); outputs %s\n", (long long)pos, (long long)rows, (long long)heads, (long long)kvh,
         r.before_us, r.after_us, r.median, r.q25, r.q75, same ? "equal" : "DIFFER");
  return same ? 0 : 1;
}
