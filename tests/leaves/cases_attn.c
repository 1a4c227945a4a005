/* tests/leaves/cases_attn.c: contract cases of the attn forms (templates/attn.lua): GQA groups
 * 1, 2, 4, 8; a linear KV cache (k head-major as qkprep writes it, v rows as a GEMV's strided
 * destination writes them) and rings of W slots at positions 0, 1, W-1, W and after many wraps;
 * window lengths around the 16-lane tiles; NaN and infinities in q, k and v, large scores (the
 * max subtraction), equal scores, RNE ties in the output. Prefill forms: P = 1, 2, 15, 16, 17 and W
 * rows starting at positions 0, 1, W-1, W, 2W+5 and after 1000 wraps, rings of R = W + P - 1 (the
 * limit: P = R - W + 1) plus 0..3 slack slots, q/y/v row strides with gaps, GQA 1..8, zero rows, the
 * special values inside the block (a key NaN only for the later rows), the order probe in row 1.
 * The wide forms (d 64, and decode32_wide) take the same cases as their base forms (the same values: yw draws nothing
 * from the generator), yw prefilled with a sentinel NaN, prefill rows yw_ld = heads*d + 4*vpad apart. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cases.h"

typedef struct ashape {
  int64_t kv_heads, group, pos, ring;   /* ring 0: the linear forms */
  int vpad;                             /* v rows: kv_heads*d + vpad elements (a GEMV's ldy) */
} ashape;

static int head_dim(const char *form) { return strstr(form, "64") ? 64 : 32; }
static int is_ring(const char *form) { return strstr(form, "ring") != NULL; }

/* The window of the call's last row (a prefill's longest: the rows' windows never shrink). */
static int64_t window_of(const fkh_call *c, int ring) {
  int64_t pos = fkh_i64_of(c, "pos");
  if (fkh_field_index(c, "rows") >= 0 && fkh_i64_of(c, "rows") > 0) pos += fkh_i64_of(c, "rows") - 1;
  if (!ring) return pos + 1;
  int64_t w = fkh_i64_of(c, fkh_field_index(c, "window") >= 0 ? "window" : "ring");
  return pos + 1 < w ? pos + 1 : w;
}

/* Scratch floats of a call: round_up(n, 16) the leaf uses; the cases give 16 more (the off-by-one
 * window perturbation of test_perturb may use them) and test_attn checks the leaf leaves them alone. */
int64_t fkt_attn_scratch_used(const fkh_call *c) {
  return (window_of(c, fkh_field_index(c, "ring") >= 0) + 15) & ~(int64_t)15;
}

static const uint32_t YW_SENTINEL = 0x7fa5a5a5u;   /* what the leaf must leave between yw rows */

/* yw of a wide form: n floats holding the sentinel (no random draws, so the cases' values stay
 * those of the base form). */
static void yw_buf(fkh_call *c, int64_t n) {
  if (fkh_field_index(c, "yw") < 0) return;
  uint32_t *yw = fkh_set_buf(c, "yw", (size_t)(n ? n : 1));
  for (int64_t i = 0; i < (n ? n : 1); i++) yw[i] = YW_SENTINEL;
}

/* Every element random in [2^emin, 2^(emax+1)); slots outside the window hold values too
 * (which must not reach the output). */
static fkh_call *attn_case(fkt_list *l, const char *form, const char *name, ashape s, fkh_rng *rng, int emin,
                           int emax) {
  fkh_call *c = fkt_push(l, form, name);
  const int64_t hd = head_dim(form), ring = is_ring(form) ? s.ring : 0;
  /* slots: the ring's W, or one position more than the window (a slot the leaf must not read) */
  const int64_t slots = ring ? ring : s.pos + 2;
  const int64_t heads = s.kv_heads * s.group;
  const int64_t k_ld_row = hd, k_ld_head = slots * hd;
  const int64_t v_ld_head = hd, v_ld_row = s.kv_heads * hd + s.vpad;
  fkh_set_i64(c, "kv_heads", s.kv_heads);
  fkh_set_i64(c, "group", s.group);
  fkh_set_i64(c, "k_ld_head", k_ld_head);
  fkh_set_i64(c, "k_ld_row", k_ld_row);
  fkh_set_i64(c, "v_ld_head", v_ld_head);
  fkh_set_i64(c, "v_ld_row", v_ld_row);
  fkh_set_i64(c, "pos", s.pos);
  if (ring) {
    fkh_set_i64(c, "slot", s.pos % ring);
    fkh_set_i64(c, "ring", ring);
  }
  uint16_t *q = fkh_set_buf(c, "q", (size_t)(heads * hd));
  for (int64_t i = 0; i < heads * hd; i++) q[i] = fkh_bf16(rng, emin, emax);
  const int64_t nk = s.kv_heads * k_ld_head, nv = slots * v_ld_row;
  uint16_t *k = fkh_set_buf(c, "k", (size_t)(nk ? nk : 1));
  for (int64_t i = 0; i < nk; i++) k[i] = fkh_bf16(rng, emin, emax);
  uint16_t *v = fkh_set_buf(c, "v", (size_t)(nv ? nv : 1));
  for (int64_t i = 0; i < nv; i++) v[i] = (i % v_ld_row >= s.kv_heads * hd) ? 0x7fa5 : fkh_bf16(rng, -3, 1);
  fkh_set_buf(c, "y", (size_t)(heads * hd));
  yw_buf(c, heads * hd);
  fkh_set_buf(c, "s", (size_t)(((ring ? (s.pos + 1 < ring ? s.pos + 1 : ring) : s.pos + 1) + 15) / 16 * 16 + 16));
  return c;
}

/* Element i of the k (or v) head g at window position j. */
static uint16_t *kv_at(fkh_call *c, const char *which, int64_t j, int64_t g, int64_t i) {
  const int ring = fkh_field_index(c, "ring") >= 0;
  int64_t n = window_of(c, ring), sl = j;
  if (ring) {
    int64_t w = fkh_i64_of(c, "ring");
    sl = (fkh_i64_of(c, "slot") + 1 - n + j + w) % w;
  }
  int k = which[0] == 'k';
  return (uint16_t *)fkh_buf_of(c, which) + g * fkh_i64_of(c, k ? "k_ld_head" : "v_ld_head") +
         sl * fkh_i64_of(c, k ? "k_ld_row" : "v_ld_row") + i;
}

/* Prefill cases: rows P at positions pos .. pos + P - 1, the P new keys and values in the cache
 * (linear: slots 0..pos + P - 1 and one more the leaf must not read; ring: R = W + P - 1 + slack
 * slots, position p at slot p mod R). q rows q_ld = heads*d + qpad apart, y rows y_ld = heads*d +
 * ypad (the gap is not written). */
typedef struct pshape {
  int64_t kv_heads, group, pos, rows, window, slack;
  int qpad, ypad, vpad;
} pshape;

static fkh_call *prefill_case(fkt_list *l, const char *form, const char *name, pshape s, fkh_rng *rng, int emin,
                              int emax) {
  fkh_call *c = fkt_push(l, form, name);
  const int64_t hd = head_dim(form), ring = is_ring(form);
  const int64_t R = s.window + (s.rows > 0 ? s.rows - 1 : 0) + s.slack;
  const int64_t slots = ring ? R : s.pos + s.rows + 1;
  const int64_t heads = s.kv_heads * s.group;
  const int64_t k_ld_row = hd, k_ld_head = slots * hd;
  const int64_t v_ld_head = hd, v_ld_row = s.kv_heads * hd + s.vpad;
  const int64_t q_ld = heads * hd + s.qpad, y_ld = heads * hd + s.ypad;
  fkh_set_i64(c, "kv_heads", s.kv_heads);
  fkh_set_i64(c, "group", s.group);
  fkh_set_i64(c, "k_ld_head", k_ld_head);
  fkh_set_i64(c, "k_ld_row", k_ld_row);
  fkh_set_i64(c, "v_ld_head", v_ld_head);
  fkh_set_i64(c, "v_ld_row", v_ld_row);
  fkh_set_i64(c, "pos", s.pos);
  fkh_set_i64(c, "rows", s.rows);
  fkh_set_i64(c, "q_ld", q_ld);
  fkh_set_i64(c, "y_ld", y_ld);
  if (ring) {
    fkh_set_i64(c, "slot", s.pos % R);
    fkh_set_i64(c, "ring", R);
    fkh_set_i64(c, "window", s.window);
  }
  const int64_t nq = s.rows > 0 ? (s.rows - 1) * q_ld + heads * hd : 0;
  const int64_t ny = s.rows > 0 ? (s.rows - 1) * y_ld + heads * hd : 0;
  uint16_t *q = fkh_set_buf(c, "q", (size_t)(nq ? nq : 1));
  for (int64_t i = 0; i < nq; i++) q[i] = (i % q_ld >= heads * hd) ? 0x7fa5 : fkh_bf16(rng, emin, emax);
  const int64_t nk = s.kv_heads * k_ld_head, nv = slots * v_ld_row;
  uint16_t *k = fkh_set_buf(c, "k", (size_t)(nk ? nk : 1));
  for (int64_t i = 0; i < nk; i++) k[i] = fkh_bf16(rng, emin, emax);
  uint16_t *v = fkh_set_buf(c, "v", (size_t)(nv ? nv : 1));
  for (int64_t i = 0; i < nv; i++) v[i] = (i % v_ld_row >= s.kv_heads * hd) ? 0x7fa5 : fkh_bf16(rng, -3, 1);
  fkh_set_buf(c, "y", (size_t)(ny ? ny : 1));
  if (fkh_field_index(c, "yw_ld") >= 0) {
    const int64_t yw_ld = heads * hd + 4 * s.vpad;
    fkh_set_i64(c, "yw_ld", yw_ld);
    yw_buf(c, s.rows > 0 ? (s.rows - 1) * yw_ld + heads * hd : 0);
  }
  fkh_set_buf(c, "s", (size_t)((window_of(c, (int)ring) + 15) / 16 * 16 + 16));
  return c;
}

/* Element i of the k (or v) head g at absolute position p of a prefill case. */
static uint16_t *kv_pos(fkh_call *c, const char *which, int64_t p, int64_t g, int64_t i) {
  int64_t sl = fkh_field_index(c, "ring") >= 0 ? p % fkh_i64_of(c, "ring") : p;
  int k = which[0] == 'k';
  return (uint16_t *)fkh_buf_of(c, which) + g * fkh_i64_of(c, k ? "k_ld_head" : "v_ld_head") +
         sl * fkh_i64_of(c, k ? "k_ld_row" : "v_ld_row") + i;
}

static int prefill_cases(const char *form, fkh_call **out) {
  fkt_list l = { 0 };
  fkh_rng rng = { 0x70726566u };
  char name[128];
  const int hd = head_dim(form), ring = is_ring(form);
  static const int64_t groups[] = { 1, 2, 4, 8 };
  /* P = 1, 2, 15, 16, 17 and P = W (the ring's limit with R = W + P - 1: P <= R - W + 1); rows
   * starting at 0, inside the first window, at its end, across the ring's wrap, after many wraps */
  static const int64_t W[] = { 30, 16, 17, 1 };
  int k = 0;
  for (size_t wi = 0; wi < (ring ? 4u : 1u); wi++) {
    const int64_t w = W[wi];
    const int64_t Ps[] = { 1, 2, 15, 16, 17, w };
    const int64_t poss[] = { 0, 1, w - 1, w, 2 * w + 5, 1000 * w + 7 };
    for (size_t pi = 0; pi < 6; pi++)
      for (size_t si = 0; si < 6; si++) {
        if (pi == 5 && (Ps[pi] == 1 || Ps[pi] == 2 || Ps[pi] == 15 || Ps[pi] == 16 || Ps[pi] == 17) && w != 30) continue;
        if (!ring && poss[si] > 200) continue;
        pshape s = { (k % 2) + 1, groups[k % 4], poss[si], Ps[pi], w, (k % 3 == 2) ? 2 : 0, (k % 5) * 8, (k % 3) * 16,
                     k % 4 };
        snprintf(name, sizeof name, "edge_W%lld_P%lld_pos%lld_g%lld_slack%lld", (long long)w, (long long)Ps[pi],
                 (long long)poss[si], (long long)s.group, (long long)s.slack);
        prefill_case(&l, form, name, s, &rng, -3, 1);
        k++;
      }
  }
  prefill_case(&l, form, "lfm2_kv8_g4_P16", (pshape){ 8, 4, ring ? 300 : 150, 16, 30, 0, 0, 0, 0 }, &rng, -3, 1);
  prefill_case(&l, form, "rows0", (pshape){ 2, 2, 5, 0, 30, 0, 0, 0, 0 }, &rng, -3, 1);
  prefill_case(&l, form, "kv0", (pshape){ 0, 2, 5, 3, 30, 0, 0, 0, 0 }, &rng, -3, 1);
  prefill_case(&l, form, "large_scores", (pshape){ 2, 2, 40, 17, 30, 0, 4, 0, 1 }, &rng, 3, 6);
  prefill_case(&l, form, "tiny_scores", (pshape){ 1, 4, 20, 5, 30, 0, 0, 8, 0 }, &rng, -40, -30);
  fkh_call *c = prefill_case(&l, form, "nan_q_row1", (pshape){ 2, 2, 9, 4, 30, 0, 0, 0, 0 }, &rng, -3, 1);
  ((uint16_t *)fkh_buf_of(c, "q"))[fkh_i64_of(c, "q_ld") + hd + 3] = 0x7fc3;
  /* the key of row 2's position: NaN for rows >= 2 only (rows 0, 1 must not see it) */
  c = prefill_case(&l, form, "nan_k_in_block", (pshape){ 2, 2, 34, 6, 30, 0, 0, 0, 0 }, &rng, -3, 1);
  *kv_pos(c, "k", 36, 1, 5) = 0xffa1;
  c = prefill_case(&l, form, "inf_q", (pshape){ 2, 1, 12, 3, 30, 0, 0, 0, 0 }, &rng, -3, 1);
  ((uint16_t *)fkh_buf_of(c, "q"))[0] = 0x7f80;
  c = prefill_case(&l, form, "ninf_k_one_position", (pshape){ 1, 2, 20, 4, 30, 0, 0, 0, 0 }, &rng, -3, 1);
  for (int i = 0; i < hd; i++) *kv_pos(c, "k", 18, 0, i) = 0xff80;
  c = prefill_case(&l, form, "inf_nan_v", (pshape){ 1, 2, 18, 5, 30, 0, 0, 0, 0 }, &rng, -3, 1);
  *kv_pos(c, "v", 19, 0, 7) = 0x7f80;
  *kv_pos(c, "v", 20, 0, 9) = 0xff80;
  *kv_pos(c, "v", 20, 0, 7) = 0xff80;
  *kv_pos(c, "v", 16, 0, 11) = 0x7fd1;
  c = prefill_case(&l, form, "zero_q", (pshape){ 1, 2, 6, 3, 30, 0, 0, 0, 0 }, &rng, -3, 1);
  for (int64_t r = 0; r < 3; r++)
    for (int i = 0; i < 2 * hd; i++)
      ((uint16_t *)fkh_buf_of(c, "q"))[r * fkh_i64_of(c, "q_ld") + i] = (uint16_t)(i % 2 ? 0x8000 : 0);
  /* RNE ties at row 0 (position 1: p = 1/2 each, the mean of v0 and v0 + 1 ulp) */
  c = prefill_case(&l, form, "tie_out", (pshape){ 1, 1, 1, 2, 30, 0, 0, 0, 0 }, &rng, -3, 1);
  for (int i = 0; i < hd; i++) {
    *kv_pos(c, "k", 1, 0, i) = *kv_pos(c, "k", 0, 0, i);
    uint16_t v0 = (uint16_t)(fkh_bf16(&rng, -3, 1) & 0x7ffe);
    *kv_pos(c, "v", 0, 0, i) = v0;
    *kv_pos(c, "v", 1, 0, i) = (uint16_t)(v0 + 1);
  }
  /* the decode cases' reduction-order probe (see order_probe below) in row 1 of a block at
   * positions 0, 1; row 0 (position 0 alone: p = 1, y = v0) is not sensitive */
  c = prefill_case(&l, form, "order_probe_row1", (pshape){ 1, 1, 0, 2, 30, 0, 0, 0, 0 }, &rng, -3, 1);
  {
    uint16_t *q = (uint16_t *)fkh_buf_of(c, "q") + fkh_i64_of(c, "q_ld");
    for (int i = 0; i < hd; i++) {
      q[i] = 0;
      *kv_pos(c, "k", 0, 0, i) = 0, *kv_pos(c, "k", 1, 0, i) = 0;
      *kv_pos(c, "v", 0, 0, i) = 0x3f80, *kv_pos(c, "v", 1, 0, i) = 0xbf80;
    }
    q[0] = 0x4280;
    q[16] = 0x4080;
    q[1] = q[9] = 0x3980;
    *kv_pos(c, "k", 0, 0, 0) = 0x3f80;
    *kv_pos(c, "k", 0, 0, 16) = 0x3d80;
    *kv_pos(c, "k", 0, 0, 1) = *kv_pos(c, "k", 0, 0, 9) = 0x3c40;
    *kv_pos(c, "k", 1, 0, 0) = 0x3f80;
  }
  for (int i = 0; i < (ring ? 70 : 160); i++) {
    const int64_t w = ring ? fkh_range(&rng, 1, 40) : 30;
    pshape s = { fkh_range(&rng, 1, 3), groups[fkh_range(&rng, 0, 3)],
                 ring ? fkh_range(&rng, 0, 400) : fkh_range(&rng, 0, 120),
                 ring ? fkh_range(&rng, 1, w) : fkh_range(&rng, 1, 40), w, fkh_range(&rng, 0, 3),
                 (int)fkh_range(&rng, 0, 2) * 8, (int)fkh_range(&rng, 0, 1) * 4, (int)fkh_range(&rng, 0, 5) };
    snprintf(name, sizeof name, "random_%d_kv%lld_g%lld_pos%lld_P%lld_W%lld", i, (long long)s.kv_heads,
             (long long)s.group, (long long)s.pos, (long long)s.rows, (long long)w);
    prefill_case(&l, form, name, s, &rng, -4, 2);
  }
  /* NaNs meeting NaNs (issue 18; the decode cases' nan_meet below, inside the block): a quiet q
   * and a signalling key in one product, NaN values of both kinds in one column of v, a NaN key
   * only the later rows see, inf - inf in v */
  {
    fkh_rng nrng = { 0x6e616e70u };
    c = prefill_case(&l, form, "nan_meet_block", (pshape){ 2, 2, 33, 5, 30, 0, 0, 8, 1 }, &nrng, -3, 1);
    ((uint16_t *)fkh_buf_of(c, "q"))[hd + 3] = 0x7fc3;      /* row 0, head 1 (kv head 0) */
    *kv_pos(c, "k", 20, 0, 3) = 0x7f81;
    *kv_pos(c, "k", 35, 1, 6) = 0xff85, *kv_pos(c, "k", 36, 1, 6 + 16) = 0x7fd1;   /* rows 2.., 3.. */
    *kv_pos(c, "v", 10, 0, 7) = 0x7fc1, *kv_pos(c, "v", 30, 0, 7) = 0xff81, *kv_pos(c, "v", 37, 0, 7) = 0x7fa1;
    *kv_pos(c, "v", 12, 1, 9) = 0x7f80, *kv_pos(c, "v", 13, 1, 9) = 0xff80, *kv_pos(c, "v", 14, 1, 9) = 0xffd5;
  }
  *out = l.calls;
  return l.n;
}

int fkt_attn_cases(const char *form, fkh_call **out) {
  if (strstr(form, "prefill")) return prefill_cases(form, out);
  fkt_list l = { 0 };
  fkh_rng rng = { 0x6174746eu };
  char name[96];
  const int hd = head_dim(form), ring = is_ring(form);
  static const int64_t groups[] = { 1, 2, 4, 8 };
  /* edges: positions 0, 1, W-1, W, W+1, tile boundaries, many wraps; LFM2 shapes (8 kv heads
   * x group 4 at d 64; the detokenizer's W = 30) */
  static const int64_t W[] = { 30, 1, 16, 17 };
  for (size_t wi = 0; wi < (ring ? 4u : 1u); wi++) {
    const int64_t w = ring ? W[wi] : 30;
    const int64_t poss[] = { 0, 1, 2, w - 1, w, w + 1, 15, 16, 17, 31, 32, 33, 47, 5 * w + 3, 1000 * w + 7 };
    for (size_t pi = 0; pi < sizeof poss / sizeof poss[0]; pi++) {
      if (!ring && poss[pi] > 200) continue;
      for (size_t gi = 0; gi < 4; gi++) {
        ashape s = { (int64_t)(gi % 2) + 1, groups[gi], poss[pi], w, (int)gi };
        snprintf(name, sizeof name, "edge_W%lld_pos%lld_g%lld", (long long)w, (long long)poss[pi], (long long)groups[gi]);
        attn_case(&l, form, name, s, &rng, -3, 1);
      }
    }
  }
  attn_case(&l, form, "lfm2_kv8_g4", (ashape){ 8, 4, ring ? 300 : 150, 30, 0 }, &rng, -3, 1);
  attn_case(&l, form, "kv0", (ashape){ 0, 2, 5, 30, 0 }, &rng, -3, 1);
  if (!ring) attn_case(&l, form, "long_pos700", (ashape){ 1, 2, 700, 0, 0 }, &rng, -3, 1);
  /* large scores: |s| up to ~2^14, exp would overflow without the max subtraction; one wins */
  attn_case(&l, form, "large_scores", (ashape){ 2, 2, 40, 30, 1 }, &rng, 3, 6);
  attn_case(&l, form, "tiny_scores", (ashape){ 1, 4, 20, 30, 0 }, &rng, -40, -30);
  /* NaN with a payload in q: that head's scores are NaN, its outputs the canonical NaN */
  fkh_call *c = attn_case(&l, form, "nan_q", (ashape){ 2, 2, 9, 30, 0 }, &rng, -3, 1);
  ((uint16_t *)fkh_buf_of(c, "q"))[1 * hd + 3] = 0x7fc3;
  c = attn_case(&l, form, "nan_k_signaling", (ashape){ 2, 2, 34, 30, 0 }, &rng, -3, 1);
  *kv_at(c, "k", 2, 1, 5) = 0xffa1;
  /* +inf in q: scores +-inf or NaN; -inf in k at one position: that score -inf (weight 0) */
  c = attn_case(&l, form, "inf_q", (ashape){ 2, 1, 12, 30, 0 }, &rng, -3, 1);
  ((uint16_t *)fkh_buf_of(c, "q"))[0] = 0x7f80;
  c = attn_case(&l, form, "ninf_k_one_position", (ashape){ 1, 2, 20, 30, 0 }, &rng, -3, 1);
  for (int i = 0; i < hd; i++) ((uint16_t *)fkh_buf_of(c, "q"))[i] = 0x3f80, ((uint16_t *)fkh_buf_of(c, "q"))[hd + i] = 0x3f80;
  for (int i = 0; i < hd; i++) *kv_at(c, "k", 3, 0, i) = 0xff80;
  /* inf and NaN in v at one position: every output element of that column */
  c = attn_case(&l, form, "inf_nan_v", (ashape){ 1, 2, 18, 30, 0 }, &rng, -3, 1);
  *kv_at(c, "v", 4, 0, 7) = 0x7f80;
  *kv_at(c, "v", 5, 0, 9) = 0xff80;
  *kv_at(c, "v", 5, 0, 7) = 0xff80;   /* inf - inf: NaN */
  *kv_at(c, "v", 2, 0, 11) = 0x7fd1;
  /* zeros and signed zeros: all scores 0, p = 1/n */
  c = attn_case(&l, form, "zero_q", (ashape){ 1, 2, 6, 30, 0 }, &rng, -3, 1);
  for (int i = 0; i < 2 * hd; i++) ((uint16_t *)fkh_buf_of(c, "q"))[i] = (uint16_t)(i % 2 ? 0x8000 : 0);
  c = attn_case(&l, form, "subnormal_v", (ashape){ 1, 1, 5, 30, 0 }, &rng, -3, 1);
  for (int64_t j = 0; j < 6; j++)
    for (int i = 0; i < hd; i++) *kv_at(c, "v", j, 0, i) = fkh_bf16(&rng, -133, -127);
  /* RNE ties: two positions with equal scores (k equal): p = 1/2 each, o = (v0 + v1) / 2
   * exactly, v1 = v0 + 1 bf16 ulp with v0's last bit even: the mean is a tie whose even
   * neighbour is v0 (half up gives v1) */
  c = attn_case(&l, form, "tie_out", (ashape){ 1, 1, 1, 30, 0 }, &rng, -3, 1);
  for (int i = 0; i < hd; i++) {
    *kv_at(c, "k", 1, 0, i) = *kv_at(c, "k", 0, 0, i);
    uint16_t v0 = (uint16_t)(fkh_bf16(&rng, -3, 1) & 0x7ffe);
    *kv_at(c, "v", 0, 0, i) = v0;
    *kv_at(c, "v", 1, 0, i) = (uint16_t)(v0 + 1);
  }
  /* reduction-order probe (the dot's lanes and tree): position 0's dot is, by lanes, X = 64 +
   * 0.25 (elements 0 and 16, lane 0: a bf16 tie, 64 * (1 + 2^-8)) plus a = b = 1.5 * 2^-19 (three
   * quarters of X's half ulp) in elements 1 and 9 (lanes 1 and 9). The halving tree adds a + b
   * first (lane 1 + lane 9), then X + (a + b) rounds up past the tie: the score is RNE(64.25 + 2^-17)
   * * scale = 64.5 * scale; adjacent pairs (or other lanes) add a and b to X one at a time, each
   * lost, and the tie rounds to even: 64 * scale. Position 1's dot is 64 exactly, v0 = 1, v1 = -1:
   * the output is p0 - p1, 0 when the scores are equal. test_perturb checks that it still moves. */
  c = attn_case(&l, form, "order_probe", (ashape){ 1, 1, 1, 30, 0 }, &rng, -3, 1);
  {
    uint16_t *q = fkh_buf_of(c, "q");
    for (int i = 0; i < hd; i++) {
      q[i] = 0;
      *kv_at(c, "k", 0, 0, i) = 0, *kv_at(c, "k", 1, 0, i) = 0;
      *kv_at(c, "v", 0, 0, i) = 0x3f80, *kv_at(c, "v", 1, 0, i) = 0xbf80;
    }
    q[0] = 0x4280;                                         /* 64 */
    q[16] = 0x4080;                                        /* 4 */
    q[1] = q[9] = 0x3980;                                  /* 2^-12 */
    *kv_at(c, "k", 0, 0, 0) = 0x3f80;                      /* 1: 64 */
    *kv_at(c, "k", 0, 0, 16) = 0x3d80;                     /* 2^-4: 0.25 */
    *kv_at(c, "k", 0, 0, 1) = *kv_at(c, "k", 0, 0, 9) = 0x3c40;   /* 1.5 * 2^-7: a = b = 1.5 * 2^-19 */
    *kv_at(c, "k", 1, 0, 0) = 0x3f80;                      /* position 1: 64 */
  }
  for (int i = 0; i < 210; i++) {
    const int64_t w = ring ? fkh_range(&rng, 1, 40) : 0;
    ashape s = { fkh_range(&rng, 1, 3), groups[fkh_range(&rng, 0, 3)],
                 ring ? fkh_range(&rng, 0, 400) : fkh_range(&rng, 0, 120), w, (int)fkh_range(&rng, 0, 5) };
    snprintf(name, sizeof name, "random_%d_kv%lld_g%lld_pos%lld_W%lld", i, (long long)s.kv_heads, (long long)s.group,
             (long long)s.pos, (long long)w);
    attn_case(&l, form, name, s, &rng, -4, 2);
  }
  /* NaNs meeting NaNs (issue 18): x86 keeps an operand by its position, AArch64 prefers a
   * signalling NaN, inf - inf differs in sign; y (and yw) hold the canonical NaN whatever met.
   * nan_meet_qk: a quiet q element times a signalling key element (one lane of the dot), a
   * negative quiet key and a signalling one in one lane two positions apart (the scores' NaNs
   * meet in the max and the sum); nan_meet_v: NaN values quiet and signalling, both signs, in one
   * column of v at several positions, inf and -inf in another column beside a NaN (the KV cache
   * as the caller left it). */
  {
    fkh_rng nrng = { 0x6e616e61u };
    c = attn_case(&l, form, "nan_meet_qk", (ashape){ 2, 2, 33, 30, 1 }, &nrng, -3, 1);
    uint16_t *q = fkh_buf_of(c, "q");
    q[3] = 0x7fc3, q[hd + 40 % hd] = 0xff85;
    *kv_at(c, "k", 4, 0, 3) = 0x7f81, *kv_at(c, "k", 6, 0, 40 % hd) = 0x7fc1;
    *kv_at(c, "k", 8, 1, 5) = 0xffd5, *kv_at(c, "k", 10, 1, 5) = 0x7fa1, *kv_at(c, "k", 11, 1, 21) = 0xff81;
    c = attn_case(&l, form, "nan_meet_v", (ashape){ 2, 4, 40, 30, 3 }, &nrng, -3, 1);
    *kv_at(c, "v", 1, 0, 7) = 0x7fc1, *kv_at(c, "v", 3, 0, 7) = 0xff81, *kv_at(c, "v", 9, 0, 7) = 0x7fa1;
    *kv_at(c, "v", 2, 1, 9) = 0x7f80, *kv_at(c, "v", 4, 1, 9) = 0xff80, *kv_at(c, "v", 5, 1, 9) = 0xffd5;
    *kv_at(c, "v", 0, 1, hd - 1) = 0x7f85, *kv_at(c, "v", 7, 1, hd - 1) = 0xffc3;
  }
  *out = l.calls;
  return l.n;
}
