/* runtime/example/fk_hello.c: the smallest host. Resolves RMSNorm and GEMV-RNE for this CPU
 * through libflashkern, runs one row of each, and prints which stamp ran. */
#include <stdio.h>
#include <string.h>

#include "flashkern.h"

static uint16_t bf16(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  return (uint16_t)(u >> 16); /* the values below are exact in bf16 */
}

static float f32(uint16_t h) {
  uint32_t u = (uint32_t)h << 16;
  float f;
  memcpy(&f, &u, 4);
  return f;
}

int main(void) {
  enum { N = 8 };
  char feats[160];
  printf("cpu features: %s\n", fk_cpu_feature_names(fk_cpu_features(), feats, sizeof feats));

  fk_leaf norm, gemv;
  fk_error err;
  if (fk_leaf_resolve("rmsnorm_f32", FK_TIER_EXACT, fk_cpu_features(), &norm, &err) != FK_OK ||
      fk_leaf_resolve("gemv_bf16_rne", FK_TIER_EXACT, fk_cpu_features(), &gemv, &err) != FK_OK) {
    fprintf(stderr, "fk_hello: %s: %s\n", fk_strerror(err.status), err.message);
    return 1;
  }

  float x[N] = { 1, -2, 3, -4, 5, -6, 7, -8 };
  uint16_t w[N], h[N], y[2];
  for (int i = 0; i < N; i++) w[i] = bf16(1.0f);
  fk_rmsnorm_f32_args na = { .x = x, .w = w, .y = h, .n = N, .rows = 1, .x_stride = N, .y_stride = N, .eps = 1e-5f };
  norm.fn(&na);
  printf("%s ran %s\n  y =", norm.form, norm.symbol);
  for (int i = 0; i < N; i++) printf(" %.4f", f32(h[i]));

  uint16_t wm[2 * N];
  float hx[N], xs[64]; /* xs: the leaf's scratch, m * round_up(k, 64) floats */
  for (int i = 0; i < N; i++) {
    wm[i] = bf16(1.0f);
    wm[N + i] = bf16(i % 2 ? -0.5f : 0.5f);
    hx[i] = f32(h[i]);
  }
  fk_gemv_bf16_rne_args ga = { .w = wm, .ldw = N, .x = hx, .ldx = N, .xs = xs, .y = y, .y_off = 0, .ldy = 2,
                               .m = 1, .k = N, .row_begin = 0, .row_end = 2 };
  gemv.fn(&ga);
  printf("\n%s ran %s\n  y = %.4f %.4f\n", gemv.form, gemv.symbol, f32(y[0]), f32(y[1]));
  return 0;
}
