/* tests/contract/istft.c: contract model of templates/istft.lua.
 *
 * frame t: X[k] = min(clip, exp(x[k])) * (cos, sin)(x[641 + k]) (gen/vmath.lua's functions,
 * min(a, b) = a < b ? a : b); z = 1280 * irfft(X) (tests/contract/irfft.c, unscaled);
 * s[n] = z[n] * wN[n]; for k = 0..3, segment g = ((t + k) & 3) * 320: ring[g + i] += s[320k + i];
 * then y = ring / E over segment (t & 3) * 320, from element 0 (t >= 2), 160 (t = 1) or none
 * (t = 0), E = E1, E2, E3 for t = 1, 2, >= 3 (the envelope tables), and that ring segment +0.
 * flush (frame = T): y[0..320) = ring / F0 (F0T2 for T = 2) over segment (T & 3), y[320..480) =
 * ring / F1 over the first 160 of segment ((T + 1) & 3), then the ring all +0. The _i16 forms: q = y * 32767 (f32), q = min(max(q,
 * -32768), 32767) with max(a, b) = a > b ? a : b, rint, as int16. Every NaN stored in y (f32) or
 * the ring is the canonical 0x7fc00000 (fkc_canon). */
#include <math.h>
#include <string.h>

#include "contract.h"
#include "fk_tables.h"

static float f(uint32_t u) { float x; memcpy(&x, &u, 4); return x; }

static void put(float v, float *yf, uint16_t *yi, int i, fkc_perturb pert) {
  if (yf) {
    yf[i] = fkc_canon(v, pert);
    return;
  }
  float q = v * 32767.0f;
  q = q > -32768.0f ? q : -32768.0f;
  q = q < 32767.0f ? q : 32767.0f;
  yi[i] = (uint16_t)(int16_t)rintf(q);
}

static void frame(const float *x, float *ring, float *yf, uint16_t *yi, int64_t t, float clip, fkc_perturb pert) {
  static float re[641], im[641], zr[640], zi[640];
  for (int k = 0; k < 641; k++) {
    float s, c, e = fkc_exp(x[k]);
    fkc_sincos(x[641 + k], &s, &c);
    float mag = clip < e ? clip : e;
    re[k] = mag * c;
    im[k] = mag * s;
  }
  fkc_irfft1280_z(re, im, zr, zi);
  for (int k = 0; k < 4; k++) {
    /* FKC_CURSOR_OFF_BY_ONE: the frame lands one segment late */
    int g = (int)((t + k + (pert == FKC_CURSOR_OFF_BY_ONE)) & 3) * 320;
    for (int i = 0; i < 320; i++) {
      int n = 320 * k + i;
      float z = n % 2 ? zi[n / 2] : zr[n / 2];
      ring[g + i] = fkc_canon(ring[g + i] + z * f(FK_ISTFT_WN[n]), pert);
    }
  }
  int g0 = (int)(t & 3) * 320, from = t == 0 ? 320 : (t == 1 ? 160 : 0);
  const uint32_t *e = t <= 1 ? FK_ISTFT_E1 : (t == 2 ? FK_ISTFT_E2 : FK_ISTFT_E3);
  for (int i = from; i < 320; i++) put(ring[g0 + i] / f(e[i]), yf, yi, i - from, pert);
  if (pert != FKC_SKIP_COMMIT)   /* FKC_SKIP_COMMIT: the finished segment is not cleared */
    for (int i = 0; i < 320; i++) ring[g0 + i] = 0.0f;
}

static void flush(float *ring, float *yf, uint16_t *yi, int64_t T, fkc_perturb pert) {
  const int late = pert == FKC_CURSOR_OFF_BY_ONE;
  int g0 = (int)((T + late) & 3) * 320, g1 = (int)((T + 1 + late) & 3) * 320;
  const uint32_t *f0 = T == 2 ? FK_ISTFT_F0T2 : FK_ISTFT_F0;
  for (int i = 0; i < 320; i++) put(ring[g0 + i] / f(f0[i]), yf, yi, i, pert);
  for (int i = 0; i < 160; i++) put(ring[g1 + i] / f(FK_ISTFT_F1[i]), yf, yi, 320 + i, pert);
  if (pert != FKC_SKIP_COMMIT)
    for (int i = 0; i < 1280; i++) ring[i] = 0.0f;
}

void fkc_istft_frame(const fk_istft_frame_args *a, fkc_perturb p) {
  frame(a->x, a->ring, a->y, NULL, a->frame, a->clip, p);
}

void fkc_istft_frame_i16(const fk_istft_frame_i16_args *a, fkc_perturb p) {
  frame(a->x, a->ring, NULL, a->y, a->frame, a->clip, p);
}

void fkc_istft_flush(const fk_istft_flush_args *a, fkc_perturb p) {
  flush(a->ring, a->y, NULL, a->frame, p);
}

void fkc_istft_flush_i16(const fk_istft_flush_i16_args *a, fkc_perturb p) {
  flush(a->ring, NULL, a->y, a->frame, p);
}
