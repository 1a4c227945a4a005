/* tests/leaves/cases_qkprep.c: contract cases of the qkprep forms (templates/qkprep.lua):
 * q rows, a linear K cache and a ring of W slots, wrapping; RoPE tables from fk_rope_table and
 * arbitrary ones; NaN, infinities, zeros, subnormals, large values, a reduction-order probe. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cases.h"
#include "flashkern.h"

enum { CANARY = 0x7fa5 };

typedef enum layout { Q_ROWS, LINEAR, RING } layout;

typedef struct shape {
  layout lay;
  int64_t heads, m, pos, extent;   /* extent: LINEAR max positions, RING slots W */
  int random_tables;
  float eps;
} shape;

static int head_dim(const char *form) { return strstr(form, "64") ? 64 : 32; }

/* The heads of x: every element random (other slots hold other positions' values, which must
 * survive), except the padding between rows of the Q layout (the canary). */
static fkh_call *qk_case(fkt_list *l, const char *form, const char *name, shape s, fkh_rng *rng, int emin,
                         int emax) {
  fkh_call *c = fkt_push(l, form, name);
  const int64_t hd = head_dim(form), half = hd / 2;
  int64_t ld_head, ld_row, slot, ring, n;
  switch (s.lay) {
  case Q_ROWS:
    ld_head = hd, ld_row = s.heads * hd + 3, slot = 0, ring = 0, n = (s.m + 1) * ld_row;
    break;
  case LINEAR:
    ld_head = s.extent * hd, ld_row = hd, slot = s.pos, ring = 0, n = (s.heads ? s.heads : 1) * ld_head + hd;
    break;
  default:
    ld_head = s.extent * hd, ld_row = hd, slot = s.pos % s.extent, ring = s.extent, n = (s.heads ? s.heads : 1) * ld_head;
    break;
  }
  fkh_set_i64(c, "heads", s.heads);
  fkh_set_i64(c, "m", s.m);
  fkh_set_i64(c, "ld_head", ld_head);
  fkh_set_i64(c, "ld_row", ld_row);
  fkh_set_i64(c, "pos", s.pos);
  fkh_set_i64(c, "slot", slot);
  fkh_set_i64(c, "ring", ring);
  fkh_set_f32(c, "eps", s.eps);
  uint16_t *x = fkh_set_buf(c, "x", (size_t)n);
  for (int64_t i = 0; i < n; i++)
    x[i] = (s.lay == Q_ROWS && i % ld_row >= s.heads * hd) ? CANARY : fkh_bf16(rng, emin, emax);
  uint16_t *w = fkh_set_buf(c, "w", (size_t)hd);
  for (int64_t i = 0; i < hd; i++) w[i] = fkh_bf16(rng, -2, 1);
  /* one slot, row and table row more than the call uses: the off-by-one perturbation
   * (test_perturb) stays inside the buffers */
  const int64_t npos = s.pos + s.m + 1;
  float *ct = fkh_set_buf(c, "cos", (size_t)(npos * half)), *st = fkh_set_buf(c, "sin", (size_t)(npos * half));
  if (s.random_tables) {
    for (int64_t i = 0; i < npos * half; i++) ct[i] = fkh_f32(rng, -12, 0), st[i] = fkh_f32(rng, -12, 0);
  } else {
    fk_error err;
    if (fk_rope_table(1e6f, hd, 0, npos, ct, st, &err) != FK_OK) {
      fprintf(stderr, "fk_rope_table: %s\n", err.message);
      exit(2);
    }
  }
  return c;
}

/* Element i of head g of row j (after the layout's slot mapping). */
static uint16_t *at(fkh_call *c, int64_t j, int64_t g, int64_t i) {
  int64_t s = fkh_i64_of(c, "slot") + j, ring = fkh_i64_of(c, "ring");
  if (s >= ring) s -= ring;
  return (uint16_t *)fkh_buf_of(c, "x") + g * fkh_i64_of(c, "ld_head") + s * fkh_i64_of(c, "ld_row") + i;
}

int fkt_qkprep_cases(const char *form, fkh_call **out) {
  fkt_list l = { 0 };
  fkh_rng rng = { 0x716b70u };
  char name[96];
  const int hd = head_dim(form);
  const float eps = 1e-5f;
  /* q rows of LFM2-350M / 1.2B (16 / 32 heads) and of small head counts */
  static const int64_t qheads[] = { 0, 1, 2, 3, 16, 32 };
  for (size_t i = 0; i < sizeof qheads / sizeof qheads[0]; i++)
    for (int64_t m = 0; m <= 4; m += 1 + (m == 2)) {
      snprintf(name, sizeof name, "q_heads%lld_m%lld", (long long)qheads[i], (long long)m);
      qk_case(&l, form, name, (shape){ Q_ROWS, qheads[i], m, 7 * (int64_t)i + m, 0, 0, eps }, &rng, -3, 3);
    }
  /* a linear K cache: prefill at 0, decodes later, the last position of the cache */
  qk_case(&l, form, "linear_prefill17", (shape){ LINEAR, 8, 17, 0, 40, 0, eps }, &rng, -3, 3);
  qk_case(&l, form, "linear_decode", (shape){ LINEAR, 8, 1, 300, 320, 0, eps }, &rng, -3, 3);
  qk_case(&l, form, "linear_last", (shape){ LINEAR, 2, 3, 37, 40, 0, eps }, &rng, -3, 3);
  /* a ring of W = 30 slots (the detokenizer's window): no wrap, wrapping in the call, full */
  qk_case(&l, form, "ring30_nowrap", (shape){ RING, 4, 5, 3, 30, 0, eps }, &rng, -3, 3);
  qk_case(&l, form, "ring30_wrap", (shape){ RING, 4, 7, 297, 30, 0, eps }, &rng, -3, 3);
  qk_case(&l, form, "ring30_full", (shape){ RING, 2, 30, 61, 30, 0, eps }, &rng, -3, 3);
  qk_case(&l, form, "ring30_last_slot", (shape){ RING, 3, 1, 29, 30, 0, eps }, &rng, -3, 3);
  qk_case(&l, form, "ring1", (shape){ RING, 2, 1, 5, 1, 0, eps }, &rng, -3, 3);
  /* NaN with a payload: the head's sum, so every element of that head, carries it */
  fkh_call *c = qk_case(&l, form, "nan_quiet", (shape){ Q_ROWS, 3, 2, 4, 0, 0, eps }, &rng, -3, 3);
  *at(c, 1, 2, 5) = 0x7fc3;
  c = qk_case(&l, form, "nan_signaling", (shape){ RING, 2, 3, 28, 30, 0, eps }, &rng, -3, 3);
  *at(c, 2, 0, 17) = 0xffa1;
  /* infinity: ss = inf, inv = 0: 0 * inf is the default NaN, the other elements +-0 */
  c = qk_case(&l, form, "inf", (shape){ Q_ROWS, 2, 2, 1, 0, 0, eps }, &rng, -3, 3);
  *at(c, 0, 1, 3) = 0x7f80;
  *at(c, 1, 0, 30) = 0xff80;
  /* zero heads (inv = 1/sqrt(eps)), signed zeros mixed with values */
  c = qk_case(&l, form, "zeros", (shape){ Q_ROWS, 2, 1, 9, 0, 0, eps }, &rng, -3, 3);
  for (int i = 0; i < hd; i++) *at(c, 0, 0, i) = (uint16_t)(i % 2 ? 0x8000 : 0), *at(c, 0, 1, i) &= (uint16_t)(i % 3 ? 0xffff : 0x8000);
  qk_case(&l, form, "subnormal_eps1e-30", (shape){ Q_ROWS, 2, 2, 3, 0, 0, 1e-30f }, &rng, -140, -120);
  qk_case(&l, form, "large", (shape){ Q_ROWS, 2, 2, 3, 0, 0, eps }, &rng, 55, 62);
  qk_case(&l, form, "arbitrary_tables", (shape){ Q_ROWS, 3, 4, 11, 0, 1, eps }, &rng, -3, 3);
  /* reduction-order probe: a head whose outputs move under the pairwise tree and under
   * interleaved lanes (a sum of squares has no cancellation: another order moves ss by an ulp
   * at most, visible only where some output sits near a rounding boundary). The first hd of
   * 64 values from seed 1550 (hd 64; the rmsnorm leaf's probe) or 85783 (hd 32), found by
   * searching seeds with the contract model; w = 1 and position 0 (cos 1, sin 0), so the
   * outputs are the norm's. test_perturb checks that it still does. */
  c = qk_case(&l, form, "order_probe", (shape){ Q_ROWS, 1, 1, 0, 0, 0, eps }, &rng, -3, 3);
  {
    fkh_rng probe = { (hd == 64 ? 1550ull : 85783ull) * 0x9e3779b97f4a7c15ull };
    uint16_t *w = fkh_buf_of(c, "w");
    for (int i = 0; i < 64; i++) {
      uint16_t v = fkh_bf16(&probe, -4, 4);
      if (i < hd) *at(c, 0, 0, i) = v, w[i] = 0x3f80;
    }
  }
  /* exact ties. h = [1 + 3*2^-7, 0, ...] and eps = 1 - h0^2 / hd make mean + eps == 1, so
   * inv = 1; w0 * h0 = 1.5 * (1 + 3*2^-7) = 1.10001001b is a tie whose even neighbour is the
   * lower one (to even: 0x3fc4, half up: 0x3fc5). tie_norm puts it in the norm's rounding (at
   * position 0: cos 1, sin 0); tie_rope puts it in the rotation (w0 = 1, cos0 = 1.5, sin0 = 0) */
  for (int k = 0; k < 2; k++) {
    const float h0 = fkt_f32(0x3f830000u), ss = h0 * h0, tie_eps = 1.0f - ss / (float)hd;
    if (ss / (float)hd + tie_eps != 1.0f) {
      fprintf(stderr, "cases_qkprep: the tie construction is not exact\n");
      exit(2);
    }
    c = qk_case(&l, form, k ? "tie_rope" : "tie_norm", (shape){ Q_ROWS, 1, 1, 0, 0, k, tie_eps }, &rng, -3, 3);
    for (int i = 0; i < hd; i++) *at(c, 0, 0, i) = 0;
    *at(c, 0, 0, 0) = 0x3f83;
    ((uint16_t *)fkh_buf_of(c, "w"))[0] = k ? 0x3f80 : 0x3fc0;
    if (k) ((float *)fkh_buf_of(c, "cos"))[0] = 1.5f, ((float *)fkh_buf_of(c, "sin"))[0] = 0.0f;
  }
  for (int i = 0; i < 210; i++) {
    layout lay = (layout)fkh_range(&rng, 0, 2);
    int64_t heads = fkh_range(&rng, 1, 9), extent = lay == RING ? fkh_range(&rng, 1, 40) : fkh_range(&rng, 1, 400);
    int64_t m = lay == RING ? fkh_range(&rng, 1, extent < 8 ? extent : 8) : fkh_range(&rng, 1, 8);
    int64_t pos = lay == LINEAR ? fkh_range(&rng, 0, extent > m ? extent - m : 0) : fkh_range(&rng, 0, 500);
    if (lay == LINEAR && extent < m) extent = m;
    shape s = { lay, heads, m, pos, extent, i % 5 == 0, (i % 2) ? 1e-5f : 1e-6f };
    snprintf(name, sizeof name, "random_%d_lay%d_h%lld_m%lld_pos%lld", i, (int)lay, (long long)heads, (long long)m,
             (long long)pos);
    qk_case(&l, form, name, s, &rng, -4, 4);
  }
  /* NaNs meeting NaNs (issue 18): x86 keeps an operand by its position, AArch64 prefers a
   * signalling NaN, inf - inf and 0 * inf differ in sign; the leaf stores the canonical NaN in
   * every slot it writes whatever met. Per head: a quiet and a signalling NaN in one lane of one
   * chain (i, i + 32 at d 64; i, i + 16 across chains at d 32), NaNs of both signs across chains, a
   * NaN beside an infinity; NaN table values (a signalling cos and sin) against NaN heads; the
   * cache layouts (a ring wrapping, the linear cache) too. */
  {
    fkh_rng nrng = { 0x6e616e71u };
    const int h2 = hd / 2;
    c = qk_case(&l, form, "nan_meet_q", (shape){ Q_ROWS, 4, 2, 5, 0, 0, eps }, &nrng, -3, 3);
    *at(c, 0, 0, 3) = 0x7fc3, *at(c, 0, 0, hd == 64 ? 35 : 19) = 0x7f81;   /* lane 3: chain 0 twice (d 64), chain 1 */
    *at(c, 0, 1, 0) = 0xff85, *at(c, 0, 1, 16) = 0x7fa1, *at(c, 0, 1, h2 + 1) = 0xffd5;
    *at(c, 0, 2, 5) = 0x7f80, *at(c, 0, 2, 7) = 0xff81;           /* inf beside a NaN */
    *at(c, 1, 3, 2) = 0x7f81, *at(c, 1, 3, 2 + h2) = 0x7fc1;      /* a rotation pair, both NaN */
    *at(c, 1, 0, 9) = 0xffa1;
    ((float *)fkh_buf_of(c, "cos"))[6 * h2 + 2] = fkt_f32(0x7f800001u);   /* row 1's table */
    ((float *)fkh_buf_of(c, "sin"))[6 * h2 + 4] = fkt_f32(0xff812345u);
    ((float *)fkh_buf_of(c, "sin"))[5 * h2 + 1] = fkt_f32(0x7fc12345u);   /* row 0's, head 0 NaN */
    c = qk_case(&l, form, "nan_meet_ring", (shape){ RING, 3, 4, 58, 30, 0, eps }, &nrng, -3, 3);
    *at(c, 1, 0, 1) = 0x7fd1, *at(c, 1, 0, 33 % hd) = 0xff81;
    *at(c, 2, 2, 0) = 0xff80, *at(c, 2, 2, 1) = 0x7f80;           /* inf and -inf in one head */
    *at(c, 3, 1, hd - 1) = 0x7f85, *at(c, 3, 1, 0) = 0xffc3;
    c = qk_case(&l, form, "nan_meet_linear", (shape){ LINEAR, 2, 3, 30, 40, 0, eps }, &nrng, -3, 3);
    *at(c, 0, 1, 4) = 0x7f81, *at(c, 0, 1, 4 + h2) = 0xff81, *at(c, 2, 0, 8) = 0xffc3, *at(c, 2, 0, 9) = 0x7fa1;
  }
  *out = l.calls;
  return l.n;
}
