/* bench/q4_min_peer.c: the 4-bit format question of the quantized weights (docs/design.md
 * "Quantized weights"): one scale per block of 32 (GGUF's Q4_0, flashkern's q4) or a scale and a
 * minimum (Q4_1: per 32, 5 bits a weight; Q4_K: per 32 within super-blocks of 256, 6-bit scales and
 * minimums under two binary16 ones, 4.5 bits a weight, as Q4_0). Each format by ggml's own
 * quantizer and dequantizer (ggml_quantize_chunk without an importance matrix: what llama-quantize
 * does without one; Q5_0 and Q8_0 beside them for scale), and flashkern's q4 (fk_q_quantize_bf16,
 * round to nearest even) beside ggml's Q4_0; then Q4_0 and Q4_K again with an importance matrix of
 * ones ("searched": ggml then picks each block's scale (and minimum) by a weighted least-squares
 * search instead of from the block's extreme: the format unchanged, only the quantizer), on seeded
 * synthetic matrices of five kinds:
 *
 *   uniform   U(-1, 1) / sqrt(k): the benches' weights
 *   gauss     N(0, 1 / k)
 *   student4  Student's t with 4 degrees of freedom, scaled to the same variance (heavy tails)
 *   outliers  gauss with 1 % of the input columns 8x larger (the outlier channels of trained LMs)
 *   offset    gauss plus a per-row offset of 0.5 sigma (blocks not centred on 0: where a minimum
 *             pays)
 *
 * every weight rounded to bf16 first (what flashkern quantizes from). Per format: bits a weight,
 * the weights' relative RMS error sqrt(sum (w' - w)^2 / sum w^2), and the GEMV's: y = W x against
 * y' = W' x in double over 8 activation vectors x ~ N(0, 1). Not built by CMake (it links
 * llama.cpp's ggml, which is not in this repository: bench/llama_peer.py build puts it outside):
 *
 *   L=/work/peers/llama_cpp_python-0.3.36/vendor/llama.cpp B=/work/peers/llama-bench-0.3.36
 *   gcc -O2 -Igenerated -Iruntime/include -I$L/ggml/include bench/q4_min_peer.c build/libflashkern.a \
 *       $B/ggml/src/libggml-base.a -lstdc++ -lpthread -lm -o q4_min_peer
 *   ./q4_min_peer [N K]          (K a multiple of 256; 1024 x 2048 unless given) */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "flashkern.h"
#include "ggml.h"

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static double uni(void) { /* (0, 1) */
  rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
  return ((double)(rng >> 11) + 0.5) * 0x1p-53;
}
static double gauss(void) { return sqrt(-2.0 * log(uni())) * cos(6.283185307179586 * uni()); }
static double student4(void) { /* t(4) / sqrt(2): variance 1 */
  double z = gauss(), c = 0;
  for (int i = 0; i < 4; i++) {
    double g = gauss();
    c += g * g;
  }
  return z / sqrt(c / 4.0) / sqrt(2.0);
}
static float bf16_round(double v) {
  float f = (float)v;
  uint32_t u;
  memcpy(&u, &f, 4);
  u = (u + 0x7fffu + ((u >> 16) & 1u)) & 0xffff0000u;
  memcpy(&f, &u, 4);
  return f;
}

static const char *const KINDS[] = { "uniform", "gauss", "student4", "outliers", "offset" };
enum { NKINDS = 5, NX = 8 };

static void fill(int kind, float *w, int64_t n, int64_t k) {
  double s = 1.0 / sqrt((double)k);
  for (int64_t r = 0; r < n; r++) {
    double off = kind == 4 ? 0.5 * s * (uni() < 0.5 ? -1 : 1) : 0;
    for (int64_t c = 0; c < k; c++) {
      double v;
      switch (kind) {
        case 0: v = (2 * uni() - 1) * s; break;
        case 2: v = student4() * s; break;
        case 3: v = gauss() * s * ((c * 7919) % 100 == 0 ? 8 : 1); break;
        default: v = gauss() * s + off; break;
      }
      w[r * k + c] = bf16_round(v);
    }
  }
}

/* relative RMS errors of the weights and of the GEMVs */
static void errors(const float *w, const float *wq, const double *x, int64_t n, int64_t k, double *ew, double *ey) {
  double dw = 0, sw = 0, dy = 0, sy = 0;
  for (int64_t i = 0; i < n * k; i++) dw += (double)(wq[i] - w[i]) * (wq[i] - w[i]), sw += (double)w[i] * w[i];
  for (int j = 0; j < NX; j++)
    for (int64_t r = 0; r < n; r++) {
      double y = 0, yq = 0;
      for (int64_t c = 0; c < k; c++) y += w[r * k + c] * x[j * k + c], yq += wq[r * k + c] * x[j * k + c];
      dy += (yq - y) * (yq - y), sy += y * y;
    }
  *ew = sqrt(dw / sw), *ey = sqrt(dy / sy);
}

int main(int argc, char **argv) {
  int64_t n = argc > 2 ? atoll(argv[1]) : 1024, k = argc > 2 ? atoll(argv[2]) : 2048;
  if (n < 1 || k < 256 || k % 256) {
    fprintf(stderr, "q4_min_peer: N >= 1, K a positive multiple of 256\n");
    return 2;
  }
  static const enum ggml_type types[] = { GGML_TYPE_Q4_0, GGML_TYPE_Q4_1, GGML_TYPE_Q4_K, GGML_TYPE_Q5_0, GGML_TYPE_Q8_0,
                                          GGML_TYPE_Q4_0, GGML_TYPE_Q4_K };
  static const int searched[] = { 0, 0, 0, 0, 0, 1, 1 };
  const int ntypes = (int)(sizeof types / sizeof types[0]);
  float *w = malloc((size_t)(n * k) * 4), *wq = malloc((size_t)(n * k) * 4);
  uint16_t *wb = malloc((size_t)(n * k) * 2);
  double *x = malloc((size_t)(NX * k) * 8);
  void *q = malloc((size_t)(n * k) * 2);
  float *ones = malloc((size_t)k * 4);
  if (!ones) return 2;
  for (int64_t i = 0; i < k; i++) ones[i] = 1.0f;
  size_t gb = fk_q_gguf_bytes(FK_Q4, n, k);
  void *blocks = malloc(gb);
  if (!w || !wq || !wb || !x || !q || !blocks) return 2;
  printf("%lld x %lld, bf16 weights, %d activation vectors N(0, 1); relative RMS error of the weights / of W x\n",
         (long long)n, (long long)k, NX);
  printf("%-10s", "kind");
  printf(" | %-21s", "flashkern q4 (RNE)");
  for (int t = 0; t < ntypes; t++) {
    char h[64];
    snprintf(h, sizeof h, "%s %.2f b%s", ggml_type_name(types[t]), 8.0 * (double)ggml_row_size(types[t], k) / (double)k,
             searched[t] ? " searched" : "");
    printf(" | %-22s", h);
  }
  printf("\n");
  for (int kind = 0; kind < NKINDS; kind++) {
    fill(kind, w, n, k);
    for (int64_t i = 0; i < NX * k; i++) x[i] = gauss();
    double ew, ey;
    printf("%-10s", KINDS[kind]);
    /* flashkern's own q4: from the same bf16 values */
    for (int64_t i = 0; i < n * k; i++) {
      uint32_t u;
      memcpy(&u, &w[i], 4);
      wb[i] = (uint16_t)(u >> 16);
    }
    fk_error err;
    if (fk_q_quantize_bf16(FK_Q4, wb, k, n, k, blocks, gb, &err) != FK_OK ||
        fk_q_dequantize(FK_Q4, blocks, gb, n, k, wq, k, &err) != FK_OK) {
      fprintf(stderr, "q4_min_peer: %s\n", err.message);
      return 2;
    }
    errors(w, wq, x, n, k, &ew, &ey);
    printf(" | %.5f / %.5f     ", ew, ey);
    for (int t = 0; t < ntypes; t++) {
      ggml_quantize_init(types[t]);
      size_t bytes = ggml_quantize_chunk(types[t], w, q, 0, n, k, searched[t] ? ones : NULL);
      const struct ggml_type_traits *tr = ggml_get_type_traits(types[t]);
      if (bytes != ggml_row_size(types[t], k) * (size_t)n || !tr->to_float) return 2;
      for (int64_t r = 0; r < n; r++) tr->to_float((const char *)q + r * ggml_row_size(types[t], k), wq + r * k, k);
      errors(w, wq, x, n, k, &ew, &ey);
      printf(" | %.5f / %.5f     ", ew, ey);
    }
    printf("\n");
    fflush(stdout);
  }
  return 0;
}
