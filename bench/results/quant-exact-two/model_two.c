/* bench/results/quant-exact-two/model_two.c (stop 45): a C model of the exact q8 GEMV at M = 1
 * (fk_gemv_q8_f32, row_end a multiple of 4, k <= 65536), written to ask whether two weight streams
 * would lift the exact pass to the read probe before the template was changed; not built by CMake,
 * not part of the library. proto1: one group a pass (the stamp's order); proto2: two groups a pass,
 * one from each half of the rows, k in pieces of PIECE tiles, chains (0, 1) of both groups then
 * (2, 3), the other pair's sums parked (NG=1: one group in pieces; NEXTPF=1: the second half
 * prefetches the next pair's records). The same bits as the stamp (ab_qcold compares outputs).
 *   gcc -O3 -march=native -DPIECE=4 -Dproto1=u1 -Dproto2=ab_v1 -Igenerated -Iruntime/include \
 *       -c model_two.c -o p1.o       (then link into bench/ab_qcold.c as a build, tries.txt) */
#include <immintrin.h>
#include <stdint.h>
#include <string.h>
#include "flashkern.h"
#include "fk_leaves.h"
#ifndef AHEAD
#define AHEAD 2176
#endif
#ifndef PIECE
#define PIECE 8
#endif
#ifndef PFL
#define PFL _MM_HINT_T0
#endif
static float xa[1 << 16] __attribute__((aligned(64)));
static void arrange(const float *x, int64_t k) {
  int64_t kp = (k + 63) / 64 * 64;
  for (int64_t t = 0; t < kp / 64; t++)
    for (int c = 0; c < 4; c++)
      for (int l = 0; l < 16; l++) {
        int64_t kk = 64 * t + 32 * (c / 2) + 2 * l + (c % 2);
        xa[t * 64 + c * 16 + l] = kk < k ? x[kk] : 0.0f;
      }
}
static float finish(__m512 c0, __m512 c1, __m512 c2, __m512 c3) {
  __m512 s = _mm512_add_ps(_mm512_add_ps(c0, c1), _mm512_add_ps(c2, c3));
  __m256 h = _mm256_add_ps(_mm512_castps512_ps256(s), _mm512_extractf32x8_ps(s, 1));
  __m128 q = _mm_add_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1));
  q = _mm_add_ps(q, _mm_movehl_ps(q, q));
  q = _mm_add_ss(q, _mm_shuffle_ps(q, q, 1));
  return _mm_cvtss_f32(q);
}
static inline __m512 wq(const uint8_t *p, float d) {
  return _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_load_si128((const __m128i *)p))), _mm512_set1_ps(d));
}
void proto1(const fk_gemv_q8_f32_args *a) {
  int64_t k = a->k, T = (k + 63) / 64;
  arrange(a->x, k);
  for (int64_t g = a->row_begin / 4; g * 4 < a->row_end; g++) {
    const uint8_t *w = a->w + g * T * 272;
    __m512 acc[4][4];
    for (int r = 0; r < 4; r++) for (int c = 0; c < 4; c++) acc[r][c] = _mm512_setzero_ps();
    for (int64_t t = 0; t < T; t++, w += 272) {
      _Pragma("GCC unroll 5") for (int o = 0; o < 272; o += 64) _mm_prefetch((const char *)w + o + AHEAD, PFL);
      float d[8] __attribute__((aligned(32)));
      _mm256_store_ps(d, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(w + 256))));
      _Pragma("GCC unroll 4") for (int c = 0; c < 4; c++) {
        __m512 xv = _mm512_load_ps(xa + t * 64 + 16 * c);
        _Pragma("GCC unroll 4") for (int r = 0; r < 4; r++) acc[r][c] = _mm512_fmadd_ps(wq(w + 64 * r + 16 * c, d[2 * r + c / 2]), xv, acc[r][c]);
      }
    }
    for (int r = 0; r < 4 && g * 4 + r < a->row_end; r++)
      a->y[a->y_off + g * 4 + r] = finish(acc[r][0], acc[r][1], acc[r][2], acc[r][3]);
  }
}
#ifndef NG
#define NG 2
#endif
#ifndef NEXTPF
#define NEXTPF 0
#endif

static void two(const uint8_t *w0, int64_t gA, int64_t gB, int64_t T, float *y) {
  const uint8_t *wg[2] = { w0 + gA * T * 272, w0 + gB * T * 272 };
  __m512 park[2][NG][4][2];
  for (int h = 0; h < 2; h++) for (int G = 0; G < NG; G++) for (int r = 0; r < 4; r++) for (int c = 0; c < 2; c++) park[h][G][r][c] = _mm512_setzero_ps();
  for (int64_t t0 = 0; t0 < T; t0 += PIECE) {
    int64_t t1 = t0 + PIECE < T ? t0 + PIECE : T;
    _Pragma("GCC unroll 2") for (int h = 0; h < 2; h++) {
      __m512 acc[NG][4][2];
      memcpy(acc, park[h], sizeof acc);
      for (int64_t t = t0; t < t1; t++) {
        float d[NG][8] __attribute__((aligned(32)));
        _Pragma("GCC unroll 2") for (int G = 0; G < NG; G++) {
          const uint8_t *ra = wg[G] + t * 272;
          if (h == 0) { _Pragma("GCC unroll 5") for (int o = 0; o < 272; o += 64) _mm_prefetch((const char *)ra + o + AHEAD, PFL); }
          else if (NEXTPF) { _Pragma("GCC unroll 5") for (int o = 0; o < 272; o += 64) _mm_prefetch((const char *)ra + o + T * 272, PFL); }
          _mm256_store_ps(d[G], _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(ra + 256))));
        }
        _Pragma("GCC unroll 2") for (int cc = 0; cc < 2; cc++) {
          int c = 2 * h + cc;
          __m512 xv = _mm512_load_ps(xa + t * 64 + 16 * c);
          _Pragma("GCC unroll 4") for (int r = 0; r < 4; r++)
            _Pragma("GCC unroll 2") for (int G = 0; G < NG; G++)
              acc[G][r][cc] = _mm512_fmadd_ps(wq(wg[G] + t * 272 + 64 * r + 16 * c, d[G][2 * r + h]), xv, acc[G][r][cc]);
        }
      }
      memcpy(park[h], acc, sizeof acc);
    }
  }
  for (int G = 0; G < NG; G++)
    for (int r = 0; r < 4; r++)
      y[(G ? gB : gA) * 4 + r] = finish(park[0][G][r][0], park[0][G][r][1], park[1][G][r][0], park[1][G][r][1]);
}
void proto2(const fk_gemv_q8_f32_args *a) {
  int64_t k = a->k, T = (k + 63) / 64, ng = a->row_end / 4; /* row_end % 4 == 0 assumed */
  arrange(a->x, k);
  float *y = a->y + a->y_off;
  if (NG == 1) { for (int64_t g = 0; g < ng; g++) two(a->w, g, g, T, y); return; }
  int64_t h = ng / 2;
  for (int64_t g = 0; g < h; g++) two(a->w, g, g + h, T, y);
  if (ng % 2) { fk_gemv_q8_f32_args b = *a; b.row_begin = (ng - 1) * 4; proto1(&b); }
}
