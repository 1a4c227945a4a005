/* tests/contract/rne.c: bit helpers shared by the contract models. */
#include <string.h>

#include "contract.h"

uint32_t fkc_f32_bits(float f) {
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  return u;
}

float fkc_bits_f32(uint32_t u) {
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}

float fkc_bf16_to_f32(uint16_t h) { return fkc_bits_f32((uint32_t)h << 16); }

/* u += 0x7fff + ((u >> 16) & 1); out = u >> 16. NaN: the canonical quiet NaN 0x7fc0, whatever its
 * sign and payload (FKC_NAN_PAYLOAD: the old (u >> 16) | 0x40, sign and top payload kept). Denormals
 * are rounded like any other value (x86's VCVTNEPS2BF16 would flush them: it cannot serve this tier). */
uint16_t fkc_rne_bits(uint32_t u, fkc_perturb p) {
  if ((u & 0x7fffffffu) > 0x7f800000u) return p == FKC_NAN_PAYLOAD ? (uint16_t)((u >> 16) | 0x40u) : (uint16_t)0x7fc0u;
  if (p == FKC_RNE_BIAS) return (uint16_t)((u + 0x8000u) >> 16);
  return (uint16_t)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

/* The canonical NaN of what an exact leaf stores: a NaN becomes 0x7fc00000 (bf16: 0x7fc0), every
 * other value keeps its bits. FKC_NAN_PAYLOAD keeps the NaN as it is (the bits the ISA made). */
float fkc_canon(float x, fkc_perturb p) {
  if (x != x && p != FKC_NAN_PAYLOAD) return fkc_bits_f32(0x7fc00000u);
  return x;
}

uint16_t fkc_canon_bf16(uint16_t h, fkc_perturb p) {
  if ((h & 0x7fffu) > 0x7f80u && p != FKC_NAN_PAYLOAD) return 0x7fc0u;
  return h;
}

/* Halving: lane i += lane i + s for s = n/2, ..., 2, 1; the lower lane is the left operand. */
static float reduce(const float *lanes, int n, fkc_perturb p) {
  float v[16];
  memcpy(v, lanes, (size_t)n * sizeof *v);
  if (p == FKC_TREE_PAIRWISE) {
    for (int s = 1; s < n; s *= 2)
      for (int i = 0; i + s < n; i += 2 * s) v[i] = v[i] + v[i + s];
    return v[0];
  }
  for (int s = n / 2; s >= 1; s /= 2)
    for (int i = 0; i < s; i++) v[i] = v[i] + v[i + s];
  return v[0];
}

float fkc_reduce16(const float lanes[16], fkc_perturb p) { return reduce(lanes, 16, p); }
float fkc_reduce8(const float lanes[8], fkc_perturb p) { return reduce(lanes, 8, p); }
