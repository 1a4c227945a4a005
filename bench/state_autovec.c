/* bench/state_autovec.c: the compiler's own vectorization of the ShortConv and qkprep contracts.
 *
 * The math and order of state_scalar.c (the contract models), with the loops arranged the way a
 * user would write them for the compiler: `restrict` pointers (the engine's buffers never
 * overlap; the two halves of the carry are separate rows), the head size and the rotation style
 * constants in each entry point, the 2 x 16 lanes of the sum of squares as one 32-wide array
 * (element i goes to slot i mod 32 = 16c + l, lane l of chain c, as in the model), the negated
 * sine row computed once per row into an array. Nothing is reordered: every vector lane does what
 * one scalar iteration did, so the result is bit-identical to the model (the bench checks it at
 * startup, on special values too, and before timing). Built -O3 -march=native -ffp-contract=off;
 * gcc 12 -fopt-info-vec reports the ShortConv channel loop and the qkprep element loops
 * vectorized. */
#include <math.h>
#include <string.h>

#include "fkb_state.h"

static inline float widen(uint16_t h) {
  uint32_t u = (uint32_t)h << 16;
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}

static inline uint16_t rne(float f) {
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40u);
  return (uint16_t)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

/* ---- ShortConv ------------------------------------------------------------------------------- */

static inline __attribute__((always_inline)) void shortconv(const uint16_t *restrict in,
                                                            const uint16_t *restrict w,
                                                            const uint16_t *restrict bias,
                                                            uint16_t *restrict carry2, uint16_t *restrict carry1,
                                                            uint16_t *restrict y, int64_t h, int64_t m,
                                                            int64_t ld_in, int64_t ldy, const int has_bias) {
  const uint16_t *restrict w0 = w, *restrict w1 = w + h, *restrict w2 = w + 2 * h;
  for (int64_t t = 0; t < m; t++) {
    const uint16_t *restrict bs = in + t * ld_in, *restrict cs = bs + h, *restrict xs = bs + 2 * h;
    uint16_t *restrict yr = y + t * ldy;
    for (int64_t c = 0; c < h; c++) {
      uint16_t bx = rne(widen(bs[c]) * widen(xs[c]));
      uint16_t p2 = carry2[c], p1 = carry1[c];
      float acc = has_bias ? fmaf(widen(w0[c]), widen(p2), widen(bias[c])) : widen(w0[c]) * widen(p2);
      acc = fmaf(widen(w1[c]), widen(p1), acc);
      acc = fmaf(widen(w2[c]), widen(bx), acc);
      yr[c] = rne(widen(cs[c]) * widen(rne(acc)));
      carry2[c] = p1;
      carry1[c] = bx;
    }
  }
}

void fkb_vec_shortconv_bf16(const void *args) {
  const fk_shortconv_bf16_args *a = args;
  shortconv(a->in, a->w, NULL, a->carry, a->carry + a->h, a->y, a->h, a->m, a->ld_in, a->ldy, 0);
}

void fkb_vec_shortconv_bf16_bias(const void *args) {
  const fk_shortconv_bf16_bias_args *a = args;
  shortconv(a->in, a->w, a->bias, a->carry, a->carry + a->h, a->y, a->h, a->m, a->ld_in, a->ldy, 1);
}

/* ---- qkprep ---------------------------------------------------------------------------------- */

enum { LANES = 16, TILE = 32, HD_MAX = 64 };

static inline __attribute__((always_inline)) void qkprep(uint16_t *restrict x, const uint16_t *restrict w,
                                                         const float *restrict cos_, const float *restrict sin_,
                                                         int64_t heads, int64_t m, int64_t ld_head,
                                                         int64_t ld_row, int64_t pos, int64_t slot, int64_t ring,
                                                         float eps, const int hd, const int cis) {
  const int half = hd / 2;
  float wf[HD_MAX];
  for (int i = 0; i < hd; i++) wf[i] = widen(w[i]);
  for (int64_t j = 0; j < m; j++) {
    int64_t s = slot + j;
    if (s >= ring) s -= ring;
    const float *restrict ct = cos_ + (pos + j) * half, *restrict st = sin_ + (pos + j) * half;
    float nst[HD_MAX / 2]; /* the table value negated, never a product negated (templates/qkprep.lua) */
    for (int i = 0; i < half; i++) nst[i] = -st[i];
    for (int64_t g = 0; g < heads; g++) {
      uint16_t *restrict hp = x + g * ld_head + s * ld_row;
      float h[HD_MAX], qn[HD_MAX], acc[TILE];
      for (int i = 0; i < hd; i++) h[i] = widen(hp[i]);
      for (int l = 0; l < TILE; l++) acc[l] = 0.0f;
      for (int k = 0; k < hd; k += TILE)
        for (int l = 0; l < TILE; l++) acc[l] = fmaf(h[k + l], h[k + l], acc[l]);
      float v[LANES];
      for (int l = 0; l < LANES; l++) v[l] = acc[l] + acc[LANES + l];
      for (int step = LANES / 2; step >= 1; step /= 2)
        for (int i = 0; i < step; i++) v[i] = v[i] + v[i + step];
      float inv = 1.0f / sqrtf(v[0] / (float)hd + eps);
      for (int i = 0; i < hd; i++) {
        float n1 = cis ? h[i] * inv : widen(rne(h[i] * inv));
        qn[i] = widen(rne(wf[i] * n1));
      }
      if (cis) {
        for (int i = 0; i < half; i++) {
          float a = qn[2 * i], b = qn[2 * i + 1];
          hp[2 * i] = rne(fmaf(a, ct[i], b * nst[i]));
          hp[2 * i + 1] = rne(fmaf(b, ct[i], a * st[i]));
        }
      } else {
        for (int i = 0; i < half; i++) {
          float a = qn[i], b = qn[i + half];
          hp[i] = rne(fmaf(a, ct[i], b * nst[i]));
          hp[i + half] = rne(fmaf(b, ct[i], a * st[i]));
        }
      }
    }
  }
}

void fkb_vec_qkprep_neox64(const void *args) {
  const fk_qkprep_neox64_args *a = args;
  qkprep(a->x, a->w, a->cos, a->sin, a->heads, a->m, a->ld_head, a->ld_row, a->pos, a->slot, a->ring, a->eps, 64, 0);
}

void fkb_vec_qkprep_cis32(const void *args) {
  const fk_qkprep_cis32_args *a = args;
  qkprep(a->x, a->w, a->cos, a->sin, a->heads, a->m, a->ld_head, a->ld_row, a->pos, a->slot, a->ring, a->eps, 32, 1);
}

const char *fkb_vec_compiler(void) {
#ifdef __clang__
  return "clang " __clang_version__;
#elif defined(__GNUC__)
  return "gcc " __VERSION__;
#else
  return "cc";
#endif
}
