/* tests/contract/gemv.c: contract model of templates/gemv.lua, exact tier (chains=4, tile=64).
 *
 * Order, per weight row n and activation row j: 4 chains x 16 lanes start at +0.0f; for k in
 * [0, K), the element's slot s = k mod 64 goes to chain c = 2*(s / 32) + (s % 2), lane
 * l = (s % 32) / 2, and acc[c][l] = fmaf(w, x, acc[c][l]); lanes past K are left as they are (the
 * stamps add -0 there, which leaves every value as it is; FKC_TAIL_PADDED adds +0 * +0 instead,
 * FKC_TAIL_RESET clears them).
 * Then v[l] = (acc[0][l] + acc[1][l]) + (acc[2][l] + acc[3][l]), the halving tree sums v, and
 * the destination op applies: y = s | s + bias[n] | RNE(s) | RNE(s + r). The destination of
 * (j, n) is y + y_off + j*ldy + n (r is indexed the same way). The xs scratch is the stamps'
 * business: the model neither reads nor writes it. The *_packed forms compute the same sums
 * over weights in the packed layout. */
#include <math.h>

#include "contract.h"

enum { CHAINS = 4, LANES = 16, TILE = 64 };

/* (the weights as f32: bf16 widened, or a quantized q * d, both exact) */
static float row_sum(const float *w, const float *x, int64_t k, fkc_perturb p) {
  float acc[CHAINS][LANES] = { { 0 } };
  for (int64_t i = 0; i < k; i++) {
    int s = (int)(i % TILE);
    int c = 2 * (s / 32) + s % 2, l = (s % 32) / 2;
    if (p == FKC_LANES_PERMUTED) c = s / LANES, l = s % LANES; /* contiguous */
    acc[c][l] = fmaf(w[i], x[i], acc[c][l]);
  }
  if ((p == FKC_TAIL_PADDED || p == FKC_TAIL_RESET) && k % TILE != 0)
    for (int s = (int)(k % TILE); s < TILE; s++) {
      int c = 2 * (s / 32) + s % 2, l = (s % 32) / 2;
      acc[c][l] = p == FKC_TAIL_RESET ? 0.0f : fmaf(0.0f, 0.0f, acc[c][l]);
    }
  float v[LANES];
  for (int l = 0; l < LANES; l++) v[l] = (acc[0][l] + acc[1][l]) + (acc[2][l] + acc[3][l]);
  return fkc_reduce16(v, p);
}

/* Row n of a packed matrix (templates/gemv.lua: "the packed weight layout"), read element by
 * element from the layout's formula, independently of the packer: row n, element k at
 *   ((n / ROWS) * ceil(K / TILE) + k / TILE) * ROWS * TILE + (n % ROWS) * TILE + k % TILE */
enum { MAXK = 1 << 16 };
static uint16_t rowbuf[MAXK];
static float wbuf[MAXK];

static const float *widen(const uint16_t *w, int64_t k) {
  for (int64_t i = 0; i < k; i++) wbuf[i] = fkc_bf16_to_f32(w[i]);
  return wbuf;
}

/* binary16 -> f32, exact (written out here, independently of the runtime's) */
static float f16_to_f32(uint16_t h) {
  int e = (h >> 10) & 31, m = h & 1023;
  float v = e == 0 ? (float)m * 0x1p-24f : e == 31 ? (m ? NAN : INFINITY) : ldexpf((float)(1024 + m), e - 25);
  return (h >> 15) ? -v : v;
}

/* Row n of a quantized packed matrix (docs/design.md "Quantized weights"), dequantized element by
 * element from the layout's formula: k = 64t + 32b + 2l + par of row r = n mod 4 in record
 * (n / 4) * ceil(K / 64) + t, its quant at qrow * r + 32b + 16par + l (q8, int8) or the nibble par
 * of byte qrow * r + 16b + l (q4, q + 8), its scale at 4 * qrow + 4r + 2b; w = q * d (exact).
 * Perturbations (the formats' traps): FKC_Q_SCALE_NEIGHBOR takes the scale of the other block of
 * the tile, FKC_Q_NIBBLES_SWAPPED the other nibble, FKC_Q_BLOCK_SHIFT moves the block boundary one
 * element (k = 32b + 31 read with block b + 1's scale). fkc_gemv_quant_parts gives the quant and the
 * scale apart (the fast tier's model multiplies integers first: tests/contract/gemv_qfast.c); i may lie
 * in the padding past k, up to the last record's end (quant 0, scale +0). */
void fkc_gemv_quant_parts(const uint8_t *wp, int q4, int64_t n, int64_t k, int64_t i, fkc_perturb p, int *qv,
                          float *dv) {
  const int64_t tiles = (k + TILE - 1) / TILE, rec = q4 ? FK_GEMV_Q4_RECORD : FK_GEMV_Q8_RECORD, qrow = q4 ? 32 : 64;
  const int64_t r = n % 4, b = i % TILE / 32, l = i % 32 / 2, par = i % 2;
  const uint8_t *rc = wp + ((n / 4) * tiles + i / TILE) * rec;
  int q;
  if (q4) {
    unsigned byte = rc[qrow * r + 16 * b + l];
    q = (int)((par ^ (p == FKC_Q_NIBBLES_SWAPPED)) ? byte >> 4 : byte & 15) - 8;
  } else {
    q = (int8_t)rc[qrow * r + 32 * b + 16 * par + l];
  }
  int64_t sb = b;
  if (p == FKC_Q_SCALE_NEIGHBOR) sb = 1 - b;
  if (p == FKC_Q_BLOCK_SHIFT && i % 32 == 31) sb = b + 1; /* the next block's scale (past the tile: the next record's) */
  const uint8_t *sc = sb < 2 ? rc + 4 * qrow + 4 * r + 2 * sb : rc + rec + 4 * qrow + 4 * r;
  if (sb == 2 && i / TILE + 1 >= tiles) sc = rc + 4 * qrow + 4 * r + 2 * b; /* no next block: unchanged */
  *qv = q;
  *dv = f16_to_f32((uint16_t)(sc[0] | sc[1] << 8));
}

float fkc_gemv_quant_weight(const uint8_t *wp, int q4, int64_t n, int64_t k, int64_t i, fkc_perturb p) {
  int q;
  float d;
  fkc_gemv_quant_parts(wp, q4, n, k, i, p, &q, &d);
  return (float)q * d;
}

/* Row n of a q4k packed matrix (docs/design.md "Quantized weights"), element by element from the
 * layout's formula: k = 256s + 64t + 32b + 2l + par of row r = n mod 4 in super-record (n / 4) *
 * (K / 256) + s of 592 bytes, its nibble par of byte 128t + 32r + 16b + l, sub-block j = 2t + b's
 * six-bit sc at 512 + 8r + j and m at 544 + 8r + j, d at 576 + 2r, dmin at 584 + 2r (binary16);
 * w = fmaf(u, d sc, -(dmin m)): d sc and dmin m are exact, one rounding. Perturbations: as q4's
 * (FKC_Q_SCALE_NEIGHBOR: the other sub-block of the tile's sc and m; FKC_Q_BLOCK_SHIFT: k = 32j + 31
 * takes sub-block j + 1's, past the super-record the next one's, where there is one), and
 * FKC_Q4K_MIN_ADDED. */
float fkc_gemv_q4k_weight(const uint8_t *wp, int64_t n, int64_t k, int64_t i, fkc_perturb p) {
  const int64_t S = FK_GEMV_Q4K_SPAN, REC = FK_GEMV_Q4K_RECORD, r = n % 4, t = i % S / TILE, b = i % TILE / 32;
  const int64_t l = i % 32 / 2, par = i % 2;
  const uint8_t *rc = wp + ((n / 4) * (k / S) + i / S) * REC, *sr = rc;
  const unsigned byte = rc[128 * t + 32 * r + 16 * b + l];
  const int u = (int)((par ^ (p == FKC_Q_NIBBLES_SWAPPED)) ? byte >> 4 : byte & 15);
  int64_t j = 2 * t + b;
  if (p == FKC_Q_SCALE_NEIGHBOR) j ^= 1;
  if (p == FKC_Q_BLOCK_SHIFT && i % 32 == 31 && ++j == 8) {
    if (i / S + 1 < k / S) sr = rc + REC, j = 0;
    else j = 7;
  }
  const float d = f16_to_f32((uint16_t)(sr[576 + 2 * r] | sr[577 + 2 * r] << 8));
  const float dmin = f16_to_f32((uint16_t)(sr[584 + 2 * r] | sr[585 + 2 * r] << 8));
  const float d1 = d * (float)sr[512 + 8 * r + j], m1 = dmin * (float)sr[544 + 8 * r + j];
  return fmaf((float)u, d1, p == FKC_Q4K_MIN_ADDED ? m1 : -m1);
}

static const float *q4k_row(const uint8_t *wp, int64_t n, int64_t k, fkc_perturb p) {
  for (int64_t i = 0; i < k; i++) wbuf[i] = fkc_gemv_q4k_weight(wp, n, k, i, p);
  return wbuf;
}

static const float *quant_row(const uint8_t *wp, int q4, int64_t n, int64_t k, fkc_perturb p) {
  for (int64_t i = 0; i < k; i++) wbuf[i] = fkc_gemv_quant_weight(wp, q4, n, k, i, p);
  return wbuf;
}

static const uint16_t *packed_row(const uint16_t *wp, int64_t n, int64_t k) {
  const int64_t R = FK_GEMV_PACK_ROWS, T = FK_GEMV_PACK_TILE, tiles = (k + T - 1) / T;
  for (int64_t i = 0; i < k; i++) rowbuf[i] = wp[((n / R) * tiles + i / T) * R * T + (n % R) * T + i % T];
  return rowbuf;
}

/* The common shape of every form: sum(j, n) over the row ROW, then dest(j, n, s, at) where at
 * is the destination index of (j, n). */
#define FKC_GEMV_LOOP(a, p, ROW, DEST) \
  for (int64_t n = (a)->row_begin; n < (a)->row_end; n++) \
    for (int64_t j = 0; j < (a)->m; j++) { \
      float s = row_sum((ROW), (a)->x + j * (a)->ldx, (a)->k, (p)); \
      int64_t at = (a)->y_off + j * (a)->ldy + n; \
      DEST; \
    }
#define RM(a) widen((a)->w + n * (a)->ldw, (a)->k)
#define PK(a) widen(packed_row((a)->w, n, (a)->k), (a)->k)
#define Q8(a) quant_row((a)->w, 0, n, (a)->k, p)
#define Q4(a) quant_row((a)->w, 1, n, (a)->k, p)
#define Q4K(a) q4k_row((a)->w, n, (a)->k, p)

void fkc_gemv_f32(const fk_gemv_f32_args *a, fkc_perturb p) { FKC_GEMV_LOOP(a, p, RM(a), a->y[at] = fkc_canon(s, p)) }

void fkc_gemv_f32_bias(const fk_gemv_f32_bias_args *a, fkc_perturb p) {
  FKC_GEMV_LOOP(a, p, RM(a), a->y[at] = fkc_canon(s + a->bias[n], p))
}

void fkc_gemv_bf16_rne(const fk_gemv_bf16_rne_args *a, fkc_perturb p) {
  FKC_GEMV_LOOP(a, p, RM(a), a->y[at] = fkc_rne_bits(fkc_f32_bits(s), p))
}

void fkc_gemv_bf16_rne_add(const fk_gemv_bf16_rne_add_args *a, fkc_perturb p) {
  FKC_GEMV_LOOP(a, p, RM(a), a->y[at] = fkc_rne_bits(fkc_f32_bits(s + fkc_bf16_to_f32(a->r[at])), p))
}

void fkc_gemv_f32_packed(const fk_gemv_f32_packed_args *a, fkc_perturb p) {
  FKC_GEMV_LOOP(a, p, PK(a), a->y[at] = fkc_canon(s, p))
}

void fkc_gemv_f32_bias_packed(const fk_gemv_f32_bias_packed_args *a, fkc_perturb p) {
  FKC_GEMV_LOOP(a, p, PK(a), a->y[at] = fkc_canon(s + a->bias[n], p))
}

void fkc_gemv_bf16_rne_packed(const fk_gemv_bf16_rne_packed_args *a, fkc_perturb p) {
  FKC_GEMV_LOOP(a, p, PK(a), a->y[at] = fkc_rne_bits(fkc_f32_bits(s), p))
}

void fkc_gemv_bf16_rne_add_packed(const fk_gemv_bf16_rne_add_packed_args *a, fkc_perturb p) {
  FKC_GEMV_LOOP(a, p, PK(a), a->y[at] = fkc_rne_bits(fkc_f32_bits(s + fkc_bf16_to_f32(a->r[at])), p))
}

/* The quantized forms: the packed forms' sums over q * d. */
#define FKC_GEMV_QUANT(q, Q) \
  void fkc_gemv_##q##_f32(const fk_gemv_##q##_f32_args *a, fkc_perturb p) { \
    FKC_GEMV_LOOP(a, p, Q(a), a->y[at] = fkc_canon(s, p)) \
  } \
  void fkc_gemv_##q##_f32_bias(const fk_gemv_##q##_f32_bias_args *a, fkc_perturb p) { \
    FKC_GEMV_LOOP(a, p, Q(a), a->y[at] = fkc_canon(s + a->bias[n], p)) \
  } \
  void fkc_gemv_##q##_bf16_rne(const fk_gemv_##q##_bf16_rne_args *a, fkc_perturb p) { \
    FKC_GEMV_LOOP(a, p, Q(a), a->y[at] = fkc_rne_bits(fkc_f32_bits(s), p)) \
  } \
  void fkc_gemv_##q##_bf16_rne_add(const fk_gemv_##q##_bf16_rne_add_args *a, fkc_perturb p) { \
    FKC_GEMV_LOOP(a, p, Q(a), a->y[at] = fkc_rne_bits(fkc_f32_bits(s + fkc_bf16_to_f32(a->r[at])), p)) \
  }
FKC_GEMV_QUANT(q8, Q8)
FKC_GEMV_QUANT(q4, Q4)
FKC_GEMV_QUANT(q4k, Q4K)
