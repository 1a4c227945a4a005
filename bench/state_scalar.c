/* bench/state_scalar.c: the contract models of the ShortConv and qkprep leaves, plain scalar C.
 *
 * The logic of tests/contract/shortconv.c and tests/contract/qkprep.c (without their
 * perturbations), copied rather than linked: the bench does not depend on tests/. It is the
 * bench's reference (every contender's output and state are compared with it bit for bit) and
 * its baseline: what an engine that writes the math as loops gets from the compiler. Built -O2
 * -march=native -ffp-contract=off -fno-tree-vectorize: scalar code (gcc 12's -O2 would vectorize
 * the cheapest loops), fmaf as one instruction, nothing fused or split that is written here. */
#include <math.h>
#include <string.h>

#include "fkb_state.h"

static uint32_t f32_bits(float f) {
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  return u;
}

static float bf16_to_f32(uint16_t h) {
  uint32_t u = (uint32_t)h << 16;
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}

/* the contract's integer RNE; NaN: quiet, sign and top payload kept */
static uint16_t rne_bits(uint32_t u) {
  if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40u);
  return (uint16_t)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

/* halving tree: lane i += lane i + s for s = 8, 4, 2, 1 */
static float reduce16(const float lanes[16]) {
  float v[16];
  memcpy(v, lanes, sizeof v);
  for (int s = 8; s >= 1; s /= 2)
    for (int i = 0; i < s; i++) v[i] = v[i] + v[i + s];
  return v[0];
}

/* ---- ShortConv: tests/contract/shortconv.c ------------------------------------------------- */

static void shortconv(const uint16_t *in, const uint16_t *w, const uint16_t *bias, uint16_t *carry, uint16_t *y,
                      int64_t h, int64_t m, int64_t ld_in, int64_t ldy) {
  for (int64_t t = 0; t < m; t++) {
    const uint16_t *row = in + t * ld_in;
    for (int64_t c = 0; c < h; c++) {
      float b = bf16_to_f32(row[c]), gate = bf16_to_f32(row[h + c]), x = bf16_to_f32(row[2 * h + c]);
      uint16_t bx = rne_bits(f32_bits(b * x));
      uint16_t p2 = carry[c], p1 = carry[h + c];
      float w0 = bf16_to_f32(w[c]), w1 = bf16_to_f32(w[h + c]), w2 = bf16_to_f32(w[2 * h + c]);
      float acc = bias ? fmaf(w0, bf16_to_f32(p2), bf16_to_f32(bias[c])) : w0 * bf16_to_f32(p2);
      acc = fmaf(w1, bf16_to_f32(p1), acc);
      acc = fmaf(w2, bf16_to_f32(bx), acc);
      float conv = bf16_to_f32(rne_bits(f32_bits(acc)));
      y[t * ldy + c] = rne_bits(f32_bits(gate * conv));
      carry[c] = p1;
      carry[h + c] = bx;
    }
  }
}

void fkb_scalar_shortconv_bf16(const void *args) {
  const fk_shortconv_bf16_args *a = args;
  shortconv(a->in, a->w, NULL, a->carry, a->y, a->h, a->m, a->ld_in, a->ldy);
}

void fkb_scalar_shortconv_bf16_bias(const void *args) {
  const fk_shortconv_bf16_bias_args *a = args;
  shortconv(a->in, a->w, a->bias, a->carry, a->y, a->h, a->m, a->ld_in, a->ldy);
}

/* ---- qkprep: tests/contract/qkprep.c --------------------------------------------------------- */

enum { LANES = 16, CHAINS = 2, TILE = LANES * CHAINS };

static void qkprep(uint16_t *x, const uint16_t *w, const float *cos_, const float *sin_, int64_t heads, int64_t m,
                   int64_t ld_head, int64_t ld_row, int64_t pos, int64_t slot, int64_t ring, float eps, int hd,
                   int cis) {
  const int half = hd / 2;
  for (int64_t j = 0; j < m; j++) {
    int64_t s = slot + j;
    if (s >= ring) s -= ring;
    const float *ct = cos_ + (pos + j) * half, *st = sin_ + (pos + j) * half;
    for (int64_t g = 0; g < heads; g++) {
      uint16_t *hp = x + g * ld_head + s * ld_row;
      float h[64], qn[64], acc[CHAINS][LANES] = { { 0 } };
      for (int i = 0; i < hd; i++) {
        h[i] = bf16_to_f32(hp[i]);
        int sl = i % TILE, c = sl / LANES, l = sl % LANES;
        acc[c][l] = fmaf(h[i], h[i], acc[c][l]);
      }
      float v[LANES];
      for (int l = 0; l < LANES; l++) v[l] = acc[0][l] + acc[1][l];
      float inv = 1.0f / sqrtf(reduce16(v) / (float)hd + eps);
      for (int i = 0; i < hd; i++) {
        float wi = bf16_to_f32(w[i]);
        float n1 = cis ? h[i] * inv : bf16_to_f32(rne_bits(f32_bits(h[i] * inv)));
        qn[i] = bf16_to_f32(rne_bits(f32_bits(wi * n1)));
      }
      for (int i = 0; i < half; i++) {
        int ia = cis ? 2 * i : i, ib = cis ? 2 * i + 1 : i + half;
        /* the negated table value, never -(b * s): see templates/qkprep.lua */
        volatile float neg_sn = -st[i];
        float a = qn[ia], b = qn[ib], c = ct[i], sn = st[i], nsn = neg_sn;
        float first = fmaf(a, c, b * nsn), second = fmaf(b, c, a * sn);
        hp[ia] = rne_bits(f32_bits(first));
        hp[ib] = rne_bits(f32_bits(second));
      }
    }
  }
}

void fkb_scalar_qkprep_neox64(const void *args) {
  const fk_qkprep_neox64_args *a = args;
  qkprep(a->x, a->w, a->cos, a->sin, a->heads, a->m, a->ld_head, a->ld_row, a->pos, a->slot, a->ring, a->eps, 64, 0);
}

void fkb_scalar_qkprep_cis32(const void *args) {
  const fk_qkprep_cis32_args *a = args;
  qkprep(a->x, a->w, a->cos, a->sin, a->heads, a->m, a->ld_head, a->ld_row, a->pos, a->slot, a->ring, a->eps, 32, 1);
}

const char *fkb_scalar_compiler(void) {
#ifdef __clang__
  return "clang " __clang_version__;
#elif defined(__GNUC__)
  return "gcc " __VERSION__;
#else
  return "cc";
#endif
}
