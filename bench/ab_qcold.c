/* bench/ab_qcold.c: up to four builds of one quantized GEMV stamp (q8_f32 or q4_f32, M activation
 * rows, 1 unless given) reading cold weights, in turn with the read-bandwidth probe, in one process (so that the
 * machine's drift between runs cancels): per build the median share of the probe over the rounds,
 * and a check that its outputs equal build 0's. Not built by CMake: a tool for a before/after
 * question about a DRAM-bound stamp, as bench/ab_stamp.c is for a hot one.
 *
 *   S=fk_gemv_q8_f32__x86_64_avx512vnni_fast              (or a q4_f32 stamp, with -DQ4; q4k_f32, -DQ4K)
 *   for i in 0 1; do                                       (DIR0 = before, DIR1 = after, ...)
 *     gcc -c -x assembler-with-cpp -I$DIRi/generated $DIRi/generated/x86_64/$S.S -o v$i.o
 *     objcopy --redefine-sym $S=ab_v$i v$i.o
 *   done
 *   gcc -O2 -march=native -DBUILDS=2 -Igenerated -Iruntime/include bench/ab_qcold.c v0.o v1.o \
 *       build/libflashkern.a -lpthread -lm -o ab_qcold
 *   ./ab_qcold N K [ROUNDS [M]]
 *
 * The weights: N x K uniform in [-1, 1], rounded to bf16, quantized (fk_q_quantize_bf16) and packed
 * (fk_q_pack) once, then copied until the copies exceed 1.125 GiB (transparent huge pages
 * requested); every call reads the next copy, so its weights were last touched more than 1 GiB
 * ago. A round: the probe (512 MiB, AVX-512 loads, the same as bench/bw_probe.c's), then each build
 * in turn (the first one rotates): one untimed call, then calls reading at least 64 MiB, timed.
 *
 * With -DHOT: one copy, every call reading the same weights (in L2 when N x K's packed bytes fit,
 * 2 MiB here): the stamp's own rate with no DRAM stream behind it, beside the same probe. A pass
 * whose hot rate is near the probe is bound by the core, not by what it keeps in flight. */
#define _GNU_SOURCE /* MADV_HUGEPAGE */
#include <immintrin.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "ab_common.h"
#include "flashkern.h"
#include "fk_leaves.h"

#if defined(Q4K)
typedef fk_gemv_q4k_f32_args qargs;
#define QFMT FK_Q4K
#elif defined(Q4)
typedef fk_gemv_q4_f32_args qargs;
#define QFMT FK_Q4
#else
typedef fk_gemv_q8_f32_args qargs;
#define QFMT FK_Q8
#endif
#ifndef BUILDS
#define BUILDS 2
#endif
#if BUILDS < 1 || BUILDS > 4
#error "BUILDS must be 1..4"
#endif
void ab_v0(const qargs *a);
void ab_v1(const qargs *a);
void ab_v2(const qargs *a);
void ab_v3(const qargs *a);
static void (*const builds[4])(const qargs *) = { ab_v0,
#if BUILDS > 1
                                                  ab_v1,
#else
                                                  NULL,
#endif
#if BUILDS > 2
                                                  ab_v2,
#else
                                                  NULL,
#endif
#if BUILDS > 3
                                                  ab_v3
#else
                                                  NULL
#endif
};

enum { ROUNDS_MAX = 200 };
static const size_t ROTATE = (size_t)1152 << 20, PROBE = (size_t)512 << 20;

static void *region(size_t bytes) {
  void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return NULL;
  madvise(p, bytes, MADV_HUGEPAGE);
  return p;
}

static volatile long long sink;
__attribute__((target("avx512f"))) static double probe_gbs(const unsigned char *b, size_t bytes) {
  double t0 = ab_now();
  __m512i a0 = _mm512_setzero_si512(), a1 = a0, a2 = a0, a3 = a0;
  for (size_t i = 0; i + 256 <= bytes; i += 256) {
    const __m512i *q = (const __m512i *)(const void *)(b + i);
    a0 = _mm512_xor_si512(a0, _mm512_load_si512(q));
    a1 = _mm512_xor_si512(a1, _mm512_load_si512(q + 1));
    a2 = _mm512_xor_si512(a2, _mm512_load_si512(q + 2));
    a3 = _mm512_xor_si512(a3, _mm512_load_si512(q + 3));
  }
  sink += _mm512_reduce_add_epi64(_mm512_xor_si512(_mm512_xor_si512(a0, a1), _mm512_xor_si512(a2, a3)));
  return (double)bytes / (ab_now() - t0) / 1e9;
}

int main(int argc, char **argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: ab_qcold N K [ROUNDS [M]]\n");
    return 2;
  }
  int64_t n = atoll(argv[1]), k = atoll(argv[2]);
  int rounds = argc > 3 ? atoi(argv[3]) : 21, m = argc > 4 ? atoi(argv[4]) : 1;
  const int64_t kq = QFMT == FK_Q4K ? 256 : 32;
  if (n < 1 || k < kq || k % kq || rounds < 1 || rounds > ROUNDS_MAX || m < 1 || m > 4) {
    fprintf(stderr, "ab_qcold: N >= 1, K a positive multiple of %lld, ROUNDS 1..%d, M 1..4\n", (long long)kq,
            ROUNDS_MAX);
    return 2;
  }
  size_t gb = fk_q_gguf_bytes(QFMT, n, k), pb = fk_q_packed_bytes(QFMT, n, k), stride = (pb + 4095) / 4096 * 4096;
#ifdef HOT
  size_t copies = 1;
  (void)ROTATE;
#else
  size_t copies = ROTATE / stride < 2 ? 2 : ROTATE / stride;
#endif
  int64_t kp = (k + 63) / 64 * 64;
  uint16_t *wr = malloc((size_t)(n * k) * 2);
  unsigned char *blocks = malloc(gb), *w = region(stride * copies), *pbuf = region(PROBE);
  float *x = malloc((size_t)(m * k) * 4), *xs = aligned_alloc(64, (size_t)(m * kp) * 4), *y[4] = { 0 };
  if (!wr || !blocks || !w || !pbuf || !x || !xs) return 2;
  uint32_t s = 1;
  for (int64_t i = 0; i < n * k; i++) {
    s = s * 1664525u + 1013904223u;
    float f = (float)(s >> 8) * 0x1p-23f - 1.0f;
    uint32_t u;
    memcpy(&u, &f, 4);
    wr[i] = (uint16_t)(u >> 16);
  }
  for (int64_t i = 0; i < m * k; i++) x[i] = (float)(i % 13) * 0.1f - 0.5f;
  fk_error err;
  if (fk_q_quantize_bf16(QFMT, wr, k, n, k, blocks, gb, &err) != FK_OK ||
      fk_q_pack(QFMT, blocks, gb, n, k, w, pb, &err) != FK_OK) {
    fprintf(stderr, "ab_qcold: %s\n", err.message);
    return 2;
  }
  for (size_t c = 1; c < copies; c++) memcpy(w + c * stride, w, pb);
  memset(pbuf, 3, PROBE);
  for (int v = 0; v < BUILDS; v++)
    if (!(y[v] = calloc((size_t)(m * n), 4))) return 2;
  int calls = (int)(((size_t)64 << 20) / pb);
  if (calls < 4) calls = 4;
  static double share[4][ROUNDS_MAX], gbs[4][ROUNDS_MAX], probe[ROUNDS_MAX];
  size_t cur = 0;
  for (int r = 0; r < rounds; r++) {
    probe[r] = probe_gbs(pbuf, PROBE);
    for (int vv = 0; vv < BUILDS; vv++) {
      int v = (vv + r) % BUILDS;
      qargs a = { .x = x, .ldx = k, .xs = xs, .y = y[v], .ldy = n, .m = m, .k = k, .row_end = n };
      a.w = w + cur * stride, cur = (cur + 1) % copies;
      builds[v](&a);
      double t0 = ab_now();
      for (int c = 0; c < calls; c++) {
        a.w = w + cur * stride, cur = (cur + 1) % copies;
        builds[v](&a);
      }
      gbs[v][r] = (double)pb * calls / (ab_now() - t0) / 1e9;
      share[v][r] = gbs[v][r] / probe[r];
    }
  }
  qsort(probe, (size_t)rounds, sizeof probe[0], ab_cmp);
  printf("%lldx%lld %s %s, M = %d, %d rounds: probe %.1f GB/s\n", (long long)n, (long long)k,
         QFMT == FK_Q8 ? "q8" : QFMT == FK_Q4 ? "q4" : "q4k", copies == 1 ? "hot" : "cold", m, rounds, probe[rounds / 2]);
  int differ = 0;
  for (int v = 0; v < BUILDS; v++) {
    qsort(share[v], (size_t)rounds, sizeof share[v][0], ab_cmp);
    qsort(gbs[v], (size_t)rounds, sizeof gbs[v][0], ab_cmp);
    int same = memcmp(y[v], y[0], (size_t)(m * n) * 4) == 0;
    differ |= !same;
    printf("  build %d: %.1f GB/s, of probe %.3f (q25 %.3f, q75 %.3f)%s\n", v, gbs[v][rounds / 2],
           share[v][rounds / 2], share[v][rounds / 4], share[v][3 * rounds / 4], same ? "" : "; outputs DIFFER from build 0");
  }
  return differ;
}
