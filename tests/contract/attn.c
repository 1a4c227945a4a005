/* tests/contract/attn.c: contract model of templates/attn.lua (decode attention).
 *
 * Query head h = g*group + r reads kv head g. The window holds n = pos + 1 positions (linear
 * cache: window position j at slot j) or n = min(pos + 1, W) (ring: slot (slot + 1 - n + j) mod W).
 * Per head, q = the d values of q + h*d widened:
 *   dot_j = the rmsnorm order (lane l of chain c: fmaf over the i with i mod 32 == 16c + l, from
 *           +0; chain 0 + chain 1; halving tree);
 *   s_j   = RNE(RNE(dot_j) * scale), scale = (float)(d^-0.5);
 *   the scores padded with -inf to n16 = round_up(n, 16);
 *   m     = 16 lanes (lane l over j == l mod 16, increasing j, from -inf, a > m ? a : m), then
 *           the halving tree of a > b ? a : b (lower lanes first);
 *   e_j   = fkc_exp(s_j - m) over the padded n16 (padding: exp(-inf - m));
 *   sum   = 16 lanes (lane l: sum + e_j over j == l mod 16, increasing j, from +0), halving tree;
 *   p_j   = RNE(e_j * (1.0f / sum));
 *   o[i]  = fmaf(p_j, v_j[i], o[i]) for increasing j from +0;
 *   y     = RNE(o), a NaN o stored as 0x7fc0;
 *   yw    = y widened (<< 16), wide forms only (decode64_wide, decode_ring64_wide, prefill64_wide,
 *           prefill_ring64_wide, decode32_wide: yw + h*d, prefill row i at yw + i*yw_ld).
 * Perturbations: FKC_TREE_PAIRWISE sums the dot lanes and e adjacent-pairwise; FKC_LANES_PERMUTED
 * sends the dot's elements to other lanes (i mod 32 -> chain i mod 2, lane (i mod 32) / 2) and sums e
 * in one lane in order of j; FKC_CURSOR_OFF_BY_ONE puts the window off by one
 * (a ring not yet full: one stale slot too many; a full ring: the oldest slot dropped; a linear cache:
 * the newest position dropped; never a read past the cache); FKC_RNE_BIAS rounds half up (y and so yw);
 * FKC_WIDE_UNROUNDED stores o itself in yw, FKC_WIDE_NAN_SKIPPED widens RNE(o) without the NaN rule. */
#include <math.h>

#include "contract.h"

enum { LANES = 16, CHAINS = 2, TILE = LANES * CHAINS };

/* a > b ? a : b: the vmax rule of the stamps (NaN or equal -> b) */
static float vmax_rule(float a, float b) { return a > b ? a : b; }

static float rne_f(float x, fkc_perturb p) { return fkc_bf16_to_f32(fkc_rne_bits(fkc_f32_bits(x), p)); }

static void attn(const uint16_t *q, const uint16_t *k, const uint16_t *v, uint16_t *y, float *yw, float *s,
                 int64_t kv_heads,
                 int64_t group, int64_t k_ld_head, int64_t k_ld_row, int64_t v_ld_head, int64_t v_ld_row, int64_t pos,
                 int64_t slot, int64_t ring, int64_t win, int hd, fkc_perturb p) {
  const float scale = hd == 64 ? fkc_bits_f32(0x3e000000u) : fkc_bits_f32(0x3e3504f3u);
  int64_t n = ring ? (pos + 1 < win ? pos + 1 : win) : pos + 1;
  if (p == FKC_CURSOR_OFF_BY_ONE) {   /* the window off by one, never past the cache */
    if (ring && n < win) n += 1;      /* a ring not yet full: one (stale) slot too many */
    else if (n > 1) n -= 1;           /* linear or full: the oldest (ring) or newest (linear) dropped */
  }
  int64_t start = ring ? slot + 1 - n + ring : 0;
  if (ring && start >= ring) start -= ring;
  const int64_t n16 = (n + 15) & ~(int64_t)15;
  for (int64_t g = 0; g < kv_heads; g++) {
    for (int64_t h = g * group; h < (g + 1) * group; h++) {
      const uint16_t *qh = q + h * hd;
      for (int64_t j = n; j < n16; j++) s[j] = -INFINITY;
      for (int64_t j = 0; j < n; j++) {
        int64_t sl = ring ? (start + j >= ring ? start + j - ring : start + j) : j;
        const uint16_t *kp = k + g * k_ld_head + sl * k_ld_row;
        float acc[CHAINS][LANES] = { { 0 } };
        for (int i = 0; i < hd; i++) {
          int t = i % TILE, c = t / LANES, l = t % LANES;
          if (p == FKC_LANES_PERMUTED) c = t % CHAINS, l = t / CHAINS;
          acc[c][l] = fmaf(fkc_bf16_to_f32(qh[i]), fkc_bf16_to_f32(kp[i]), acc[c][l]);
        }
        float lanes[LANES];
        for (int l = 0; l < LANES; l++) lanes[l] = acc[0][l] + acc[1][l];
        float dot = fkc_reduce16(lanes, p);
        s[j] = rne_f(rne_f(dot, p) * scale, p);
      }
      float mx[LANES];
      for (int l = 0; l < LANES; l++) mx[l] = -INFINITY;
      for (int64_t j = 0; j < n16; j++) mx[j % LANES] = vmax_rule(s[j], mx[j % LANES]);
      for (int w = LANES / 2; w >= 1; w /= 2)
        for (int l = 0; l < w; l++) mx[l] = vmax_rule(mx[l], mx[l + w]);
      const float m = mx[0];
      float sum[LANES] = { 0 };
      for (int64_t j = 0; j < n16; j++) {
        s[j] = fkc_exp(s[j] - m);
        if (p == FKC_LANES_PERMUTED) sum[0] = fmaf(s[j], 1.0f, sum[0]);
        else sum[j % LANES] = fmaf(s[j], 1.0f, sum[j % LANES]);
      }
      const float inv = 1.0f / fkc_reduce16(sum, p);
      for (int64_t j = 0; j < n16; j++) s[j] = rne_f(s[j] * inv, p);
      float o[64] = { 0 };
      for (int64_t j = 0; j < n; j++) {
        int64_t sl = ring ? (start + j >= ring ? start + j - ring : start + j) : j;
        const uint16_t *vp = v + g * v_ld_head + sl * v_ld_row;
        for (int i = 0; i < hd; i++) o[i] = fmaf(s[j], fkc_bf16_to_f32(vp[i]), o[i]);
      }
      for (int i = 0; i < hd; i++) {
        y[h * hd + i] = isnan(o[i]) ? (uint16_t)0x7fc0 : fkc_rne_bits(fkc_f32_bits(o[i]), p);
        if (!yw) continue;
        yw[h * hd + i] = p == FKC_WIDE_UNROUNDED     ? o[i]
                         : p == FKC_WIDE_NAN_SKIPPED ? fkc_bf16_to_f32(fkc_rne_bits(fkc_f32_bits(o[i]), FKC_NAN_PAYLOAD))
                                                     : fkc_bf16_to_f32(y[h * hd + i]);
      }
    }
  }
}

void fkc_attn_decode64(const fk_attn_decode64_args *a, fkc_perturb p) {
  attn(a->q, a->k, a->v, a->y, 0, a->s, a->kv_heads, a->group, a->k_ld_head, a->k_ld_row, a->v_ld_head, a->v_ld_row,
       a->pos, a->pos, 0, 0, 64, p);
}
void fkc_attn_decode32(const fk_attn_decode32_args *a, fkc_perturb p) {
  attn(a->q, a->k, a->v, a->y, 0, a->s, a->kv_heads, a->group, a->k_ld_head, a->k_ld_row, a->v_ld_head, a->v_ld_row,
       a->pos, a->pos, 0, 0, 32, p);
}
void fkc_attn_decode_ring64(const fk_attn_decode_ring64_args *a, fkc_perturb p) {
  attn(a->q, a->k, a->v, a->y, 0, a->s, a->kv_heads, a->group, a->k_ld_head, a->k_ld_row, a->v_ld_head, a->v_ld_row,
       a->pos, a->slot, a->ring, a->ring, 64, p);
}
void fkc_attn_decode_ring32(const fk_attn_decode_ring32_args *a, fkc_perturb p) {
  attn(a->q, a->k, a->v, a->y, 0, a->s, a->kv_heads, a->group, a->k_ld_head, a->k_ld_row, a->v_ld_head, a->v_ld_row,
       a->pos, a->slot, a->ring, a->ring, 32, p);
}

/* Prefill: row i (0..rows-1) is the decode of q row i at position pos + i (slot (slot + i) mod R,
 * window min(pos + i + 1, W) in the ring forms), into y row i: the rows share the scratch, one
 * after another. FKC_CURSOR_OFF_BY_ONE here moves the causal limit one past the row inside the
 * block: row i < rows - 1 sees position pos + i + 1 (the next row's key) as well. */
static void prefill(const uint16_t *q, const uint16_t *k, const uint16_t *v, uint16_t *y, float *yw, float *s,
                    int64_t kv_heads, int64_t group, int64_t k_ld_head, int64_t k_ld_row, int64_t v_ld_head,
                    int64_t v_ld_row, int64_t pos, int64_t rows, int64_t q_ld, int64_t y_ld, int64_t yw_ld,
                    int64_t slot, int64_t ring, int64_t win, int hd, fkc_perturb p) {
  for (int64_t i = 0; i < rows; i++) {
    int64_t d = (p == FKC_CURSOR_OFF_BY_ONE && i + 1 < rows) ? 1 : 0;
    fkc_perturb pr = p == FKC_CURSOR_OFF_BY_ONE ? FKC_EXACT : p;
    int64_t sl = ring ? (slot + i + d) % ring : 0;
    attn(q + i * q_ld, k, v, y + i * y_ld, yw ? yw + i * yw_ld : 0, s, kv_heads, group, k_ld_head, k_ld_row, v_ld_head,
         v_ld_row, pos + i + d, sl, ring, win, hd, pr);
  }
}

void fkc_attn_prefill64(const fk_attn_prefill64_args *a, fkc_perturb p) {
  prefill(a->q, a->k, a->v, a->y, 0, a->s, a->kv_heads, a->group, a->k_ld_head, a->k_ld_row, a->v_ld_head, a->v_ld_row,
          a->pos, a->rows, a->q_ld, a->y_ld, 0, 0, 0, 0, 64, p);
}
void fkc_attn_prefill32(const fk_attn_prefill32_args *a, fkc_perturb p) {
  prefill(a->q, a->k, a->v, a->y, 0, a->s, a->kv_heads, a->group, a->k_ld_head, a->k_ld_row, a->v_ld_head, a->v_ld_row,
          a->pos, a->rows, a->q_ld, a->y_ld, 0, 0, 0, 0, 32, p);
}
void fkc_attn_prefill_ring64(const fk_attn_prefill_ring64_args *a, fkc_perturb p) {
  prefill(a->q, a->k, a->v, a->y, 0, a->s, a->kv_heads, a->group, a->k_ld_head, a->k_ld_row, a->v_ld_head, a->v_ld_row,
          a->pos, a->rows, a->q_ld, a->y_ld, 0, a->slot, a->ring, a->window, 64, p);
}
void fkc_attn_prefill_ring32(const fk_attn_prefill_ring32_args *a, fkc_perturb p) {
  prefill(a->q, a->k, a->v, a->y, 0, a->s, a->kv_heads, a->group, a->k_ld_head, a->k_ld_row, a->v_ld_head, a->v_ld_row,
          a->pos, a->rows, a->q_ld, a->y_ld, 0, a->slot, a->ring, a->window, 32, p);
}

/* The wide forms: the base forms' arithmetic, y as they write it, and yw = y widened. */
void fkc_attn_decode64_wide(const fk_attn_decode64_wide_args *a, fkc_perturb p) {
  attn(a->q, a->k, a->v, a->y, a->yw, a->s, a->kv_heads, a->group, a->k_ld_head, a->k_ld_row, a->v_ld_head,
       a->v_ld_row, a->pos, a->pos, 0, 0, 64, p);
}
void fkc_attn_decode_ring64_wide(const fk_attn_decode_ring64_wide_args *a, fkc_perturb p) {
  attn(a->q, a->k, a->v, a->y, a->yw, a->s, a->kv_heads, a->group, a->k_ld_head, a->k_ld_row, a->v_ld_head,
       a->v_ld_row, a->pos, a->slot, a->ring, a->ring, 64, p);
}
void fkc_attn_prefill64_wide(const fk_attn_prefill64_wide_args *a, fkc_perturb p) {
  prefill(a->q, a->k, a->v, a->y, a->yw, a->s, a->kv_heads, a->group, a->k_ld_head, a->k_ld_row, a->v_ld_head,
          a->v_ld_row, a->pos, a->rows, a->q_ld, a->y_ld, a->yw_ld, 0, 0, 0, 64, p);
}
void fkc_attn_prefill_ring64_wide(const fk_attn_prefill_ring64_wide_args *a, fkc_perturb p) {
  prefill(a->q, a->k, a->v, a->y, a->yw, a->s, a->kv_heads, a->group, a->k_ld_head, a->k_ld_row, a->v_ld_head,
          a->v_ld_row, a->pos, a->rows, a->q_ld, a->y_ld, a->yw_ld, a->slot, a->ring, a->window, 64, p);
}
void fkc_attn_decode32_wide(const fk_attn_decode32_wide_args *a, fkc_perturb p) {
  attn(a->q, a->k, a->v, a->y, a->yw, a->s, a->kv_heads, a->group, a->k_ld_head, a->k_ld_row, a->v_ld_head,
       a->v_ld_row, a->pos, a->pos, 0, 0, 32, p);
}
