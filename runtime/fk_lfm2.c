/* runtime/fk_lfm2.c: an LFM2 stack (fk_lfm2.h): its descriptor checks, shapes, layout and
 * packing, the steps of every layer, and its state.
 *
 * Steps and their shares (a barrier after each; every output element is computed by one leaf
 * call whose arithmetic does not depend on the share, so every team size gives the same bits):
 *   operator_norm, ffn_norm                      rows split
 *   in_proj, qkv_proj, o_proj, w1_w3, w2         weight rows split, row groups of <= 24
 *   conv                                         member 0 (the carry is a recurrence over rows)
 *   qk_norm_rope        q heads then k heads split   attention            kv heads split
 *   swiglu              columns split (multiples of 64)
 * The state (KV caches, conv carries, the position) is written by the steps in place or
 * committed by the family after the program's last barrier, in causal order. */
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "fk_lfm2.h"

enum { LIMIT = 65536, MAX_POS = 1 << 20 };

/* The Depthformer's forms take the LFM2 forms' argument layouts (only the head size in the
 * stamps and the rounding of the norm differ), so one step fills either. */
#define SAME_LAYOUT(a, b, f) \
  _Static_assert(sizeof(a) == sizeof(b) && offsetof(a, f) == offsetof(b, f), #a " is laid out as " #b)
SAME_LAYOUT(fk_rmsnorm_bf16_wide_once_args, fk_rmsnorm_bf16_wide_args, eps);
SAME_LAYOUT(fk_qkprep_cis32_args, fk_qkprep_neox64_args, eps);
SAME_LAYOUT(fk_attn_decode32_wide_args, fk_attn_decode64_wide_args, yw);

static inline int64_t round_up(int64_t v, int64_t m) { return (v + m - 1) / m * m; }
static inline int64_t imax(int64_t a, int64_t b) { return a > b ? a : b; }

/* ---- readiness ---------------------------------------------------------------------------------- */

#define MCHECK(cond, ...) FK_RETURN_ERROR_IF(cond, err, FK_EINVAL, "fk_plan_create: " __VA_ARGS__)

/* The layer's GEMV matrices: descriptor name, bf16 pointer, GGUF blocks, packed copy, and shape
 * (rows, k) in units of hidden h, ffn f, q width qd and kv width kd. */
#define LAYER_MATS(X, w, l, h, f, qd, kd) \
  X("in_proj", w->in_proj, in_proj, l->in_w, 3 * h, h, FK_LAYER_CONV) \
  X("out_proj", w->out_proj, out_proj, l->out_w, h, h, FK_LAYER_CONV) \
  X("q_proj", w->q_proj, q_proj, l->q_w, qd, h, FK_LAYER_ATTN) \
  X("k_proj", w->k_proj, k_proj, l->k_w, kd, h, FK_LAYER_ATTN) \
  X("v_proj", w->v_proj, v_proj, l->v_w, kd, h, FK_LAYER_ATTN) \
  X("o_proj", w->o_proj, o_proj, l->o_w, h, qd, FK_LAYER_ATTN) \
  X("w1", w->w1, w1, l->w1, f, h, -1) \
  X("w3", w->w3, w3, l->w3, f, h, -1) \
  X("w2", w->w2, w2, l->w2, h, f, -1)

static fk_status check_stack(const char *w, const fk_lfm2_stack *s, int64_t hd, int depth, fk_qformat quantize,
                             fk_error *err) {
  MCHECK(s->hidden < 1 || s->hidden > LIMIT, "desc.%s.stack.hidden = %lld: must be in 1..%d", w, (long long)s->hidden,
         LIMIT);
  MCHECK(s->ffn < 1 || s->ffn > LIMIT, "desc.%s.stack.ffn = %lld: must be in 1..%d", w, (long long)s->ffn, LIMIT);
  MCHECK(s->layers < 1 || s->layers > FK_MAX_LAYERS, "desc.%s.stack.layers = %lld: must be in 1..%d", w,
         (long long)s->layers, FK_MAX_LAYERS);
  MCHECK(s->head_dim != hd, "desc.%s.stack.head_dim = %lld: the attention stamps serve %lld", w,
         (long long)s->head_dim, (long long)hd);
  MCHECK(s->heads < 1 || s->heads * hd > LIMIT, "desc.%s.stack.heads = %lld: must be in 1..%lld", w,
         (long long)s->heads, (long long)(LIMIT / hd));
  MCHECK(s->kv_heads < 1 || s->heads % s->kv_heads != 0,
         "desc.%s.stack.kv_heads = %lld: must be >= 1 and divide heads = %lld", w, (long long)s->kv_heads,
         (long long)s->heads);
  MCHECK(s->window < 0 || s->window > LIMIT, "desc.%s.stack.window = %lld: must be in 0..%d (0: full causal)", w,
         (long long)s->window, LIMIT);
  MCHECK(s->max_pos < 1 || s->max_pos > MAX_POS, "desc.%s.stack.max_pos = %lld: must be in 1..%d", w,
         (long long)s->max_pos, MAX_POS);
  MCHECK(!(s->rope_theta > 1.0f) || !(s->rope_theta < 1e30f), "desc.%s.stack.rope_theta = %g: must be in (1, 1e30)", w,
         (double)s->rope_theta);
  MCHECK(!(s->norm_eps > 0.0f) || s->norm_eps > 1e30f, "desc.%s.stack.norm_eps = %g: must be finite and > 0", w,
         (double)s->norm_eps);
  MCHECK(depth && s->window != 0, "desc.%s.stack.window = %lld: the Depthformer attends to every codebook (0)", w,
         (long long)s->window);
  MCHECK(!s->layer, "desc.%s.stack.layer is NULL", w);
  MCHECK(!depth && !s->final_norm, "desc.%s.stack.final_norm is NULL", w);
  for (int64_t i = 0; i < s->layers; i++) {
    const fk_lfm2_layer *l = &s->layer[i];
#define WNULL(f) MCHECK(!l->f, "desc.%s.stack.layer[%lld]." #f " is NULL", w, (long long)i)
    MCHECK(l->kind != FK_LAYER_CONV && l->kind != FK_LAYER_ATTN,
           "desc.%s.stack.layer[%lld].kind = %d: not FK_LAYER_CONV or FK_LAYER_ATTN", w, (long long)i, (int)l->kind);
    MCHECK(depth && l->kind != FK_LAYER_ATTN, "desc.%s.stack.layer[%lld].kind = %d: the Depthformer's layers are FK_LAYER_ATTN",
           w, (long long)i, (int)l->kind);
    WNULL(operator_norm);
    WNULL(ffn_norm);
    if (l->kind == FK_LAYER_CONV) {
      WNULL(conv);
    } else {
      WNULL(q_norm);
      WNULL(k_norm);
    }
#undef WNULL
    /* each matrix of the layer's kind: its GGUF blocks or its bf16 weights, a quantized one's k a
     * multiple of 32; the other kind's GGUF blocks are refused (never read) */
    int64_t h = s->hidden, f = s->ffn, qd = s->heads * hd; /* the rows are not checked here */
    char what[96];
    #define MAT_CHECK(name, bf, qm, dst, rows, k, lk) \
    if ((int)(lk) < 0 || (fk_layer_kind)(lk) == l->kind) { \
      snprintf(what, sizeof what, "desc.%s.stack.layer[%lld].q." name, w, (long long)i); \
      fk_status st = fk_wmat_check(&l->q.qm, quantize, k, what, err); \
      if (st != FK_OK) return st; \
      MCHECK(!bf && l->q.qm.format == FK_QNONE, "desc.%s.stack.layer[%lld]." name " is NULL (and q." name \
             " gives no GGUF blocks)", w, (long long)i); \
    } else { \
      MCHECK(l->q.qm.format != FK_QNONE, "desc.%s.stack.layer[%lld].q." name ": a %s layer has no " name, w, \
             (long long)i, l->kind == FK_LAYER_CONV ? "conv" : "attention"); \
    }
    LAYER_MATS(MAT_CHECK, l, l, h, f, qd, 0)
#undef MAT_CHECK
  }
  return FK_OK;
}

fk_status fk_lfm2_check(const char *w, const fk_lfm2_stack *s, fk_qformat quantize, fk_error *err) {
  return check_stack(w, s, FK_LFM2_HD, 0, quantize, err);
}

fk_status fk_depth_check(const char *w, const fk_lfm2_stack *s, fk_qformat quantize, fk_error *err) {
  return check_stack(w, s, 32, 1, quantize, err);
}

unsigned fk_lfm2_formats(const fk_lfm2_stack *s, fk_qformat quantize) {
  unsigned f = 0;
  for (int64_t i = 0; i < s->layers; i++) {
    const fk_lfm2_layer *l = &s->layer[i];
#define MAT_BIT(name, bf, qm, dst, rows, k, lk) \
    if ((int)(lk) < 0 || (fk_layer_kind)(lk) == l->kind) f |= fk_format_bit(fk_wmat_format(&l->q.qm, quantize));
    LAYER_MATS(MAT_BIT, l, l, 0, 0, 0, 0)
#undef MAT_BIT
  }
  return f;
}

uint64_t fk_lfm2_roles(int decode) {
  uint64_t r = FK_ROLE_BIT(R_NORM) | FK_ROLE_BIT(R_IN) | FK_ROLE_BIT(R_CONV) | FK_ROLE_BIT(R_OUT) |
               FK_ROLE_BIT(R_QKPREP) | FK_ROLE_BIT(R_SWIGLU) | FK_ROLE_BIT(R_ATTN_PRE) | FK_ROLE_BIT(R_ATTN_PRE_RING);
  if (decode) r |= FK_ROLE_BIT(R_ATTN_DEC) | FK_ROLE_BIT(R_ATTN_DEC_RING);
  return r;
}

void fk_lfm2_shapes(fk_stack_rt *t, const fk_lfm2_stack *s, int64_t max_rows, int64_t rep, fk_qformat quantize) {
  memset(t, 0, sizeof *t);
  t->h = s->hidden;
  t->ffn = s->ffn;
  t->layers = s->layers;
  t->heads = s->heads;
  t->kv = s->kv_heads;
  t->hd = s->head_dim;
  t->r_norm = t->r_norm_in = R_NORM;
  t->r_qkprep = R_QKPREP;
  t->r_attn_dec = R_ATTN_DEC;
  t->window = s->window;
  t->max_pos = s->max_pos;
  t->max_rows = max_rows;
  t->rep = rep;
  t->eps = s->norm_eps;
  /* a ring must hold the window and a whole block's new rows (templates/attn.lua: R >= W + P - 1) */
  t->ring = s->window > 0 ? s->window + max_rows - 1 : 0;
  t->slots = t->ring ? t->ring : s->max_pos;
  for (int64_t i = 0; i < s->layers; i++) {
    const fk_lfm2_layer *w = &s->layer[i];
    fk_layer_rt *l = &t->layer[i];
    l->kind = w->kind;
#define MAT_FMT(name, bf, qm, dst, rows, k, lk) dst.fmt = fk_wmat_format(&w->q.qm, quantize);
    LAYER_MATS(MAT_FMT, w, l, 0, 0, 0, 0)
#undef MAT_FMT
  }
}

void fk_depth_shapes(fk_stack_rt *t, const fk_lfm2_stack *s, fk_qformat quantize) {
  fk_lfm2_shapes(t, s, 1, 1, quantize);
  t->r_norm = R_NORM_ONCE;
  t->r_norm_in = R_NORM_ADD_ONCE;
  t->r_qkprep = R_QKPREP32;
  t->r_attn_dec = R_ATTN_DEC32;
}

void fk_lfm2_layout(fk_stack_rt *t, int threads, fk_carver *c) {
  int64_t h = t->h, f = t->ffn, hd = t->hd, qd = t->heads * hd, kd = t->kv * hd, r = t->max_rows;
  for (int64_t i = 0; i < t->layers; i++) {
    fk_layer_rt *l = &t->layer[i];
    l->norm1 = fk_carve(c, (size_t)h * 2);
    l->norm2 = fk_carve(c, (size_t)h * 2);
#define MAT_CARVE(name, bf, qm, dst, rows, k, lk) \
    if ((int)(lk) < 0 || (fk_layer_kind)(lk) == l->kind) dst = fk_wmat_carve(c, dst.fmt, rows, k);
    LAYER_MATS(MAT_CARVE, l, l, h, f, qd, kd)
#undef MAT_CARVE
    if (l->kind == FK_LAYER_CONV) {
      l->conv_w = fk_carve(c, (size_t)(3 * h) * 2);
      l->carry = fk_carve(c, (size_t)(2 * h) * 2);
    } else {
      l->q_norm = fk_carve(c, (size_t)hd * 2);
      l->k_norm = fk_carve(c, (size_t)hd * 2);
      l->kc = fk_carve(c, (size_t)(t->slots * kd) * 2);
      l->vc = fk_carve(c, (size_t)(t->slots * kd) * 2);
    }
  }
  t->final_norm = fk_carve(c, (size_t)h * 2);
  t->cos = fk_carve(c, (size_t)(t->max_pos * hd / 2) * 4);
  t->sin = fk_carve(c, (size_t)(t->max_pos * hd / 2) * 4);
  t->res = fk_carve(c, (size_t)(r * h) * 2);
  t->xn = fk_carve(c, (size_t)(r * h) * 4);
  t->bcx = fk_carve(c, (size_t)(r * 3 * h) * 2);
  t->cy = fk_carve(c, (size_t)(r * h) * 4);
  t->q = fk_carve(c, (size_t)(r * qd) * 2);
  t->ay = fk_carve(c, (size_t)(r * qd) * 2);
  t->ayw = fk_carve(c, (size_t)(r * qd) * 4);
  t->g = fk_carve(c, (size_t)(r * f) * 2);
  t->u = fk_carve(c, (size_t)(r * f) * 2);
  t->hf = fk_carve(c, (size_t)(r * f) * 4);
  /* the scores of the longest window a row can see */
  int64_t n = round_up(t->ring ? t->window : t->max_pos, 16);
  for (int m = 0; m < threads; m++) t->s[m] = fk_carve(c, (size_t)n * 4);
  fk_gemv_need(c, imax(imax(h, f), qd));
}

fk_status fk_lfm2_pack(fk_stack_rt *t, const fk_lfm2_stack *s, const char *wn, fk_error *err) {
  int64_t h = t->h, f = t->ffn, hd = t->hd, qd = t->heads * hd, kd = t->kv * hd;
  fk_status r = FK_OK;
  char what[96];
  for (int64_t i = 0; i < t->layers && r == FK_OK; i++) {
    const fk_lfm2_layer *w = &s->layer[i];
    fk_layer_rt *l = &t->layer[i];
    memcpy(l->norm1, w->operator_norm, (size_t)h * 2);
    memcpy(l->norm2, w->ffn_norm, (size_t)h * 2);
#define MAT_PACK(name, bf, qm, dst, rows, k, lk) \
    if (r == FK_OK && ((int)(lk) < 0 || (fk_layer_kind)(lk) == l->kind)) { \
      snprintf(what, sizeof what, "desc.%s.stack.layer[%lld].%s" name, wn, (long long)i, \
               w->q.qm.format != FK_QNONE ? "q." : ""); \
      r = fk_wmat_pack(&dst, bf, &w->q.qm, rows, k, what, err); \
    }
    LAYER_MATS(MAT_PACK, w, l, h, f, qd, kd)
#undef MAT_PACK
    if (l->kind == FK_LAYER_CONV) {
      /* conv.weight[c, 0, k] -> tap-major w[k*h + c] (the leaf's layout) */
      for (int64_t ch = 0; ch < h; ch++)
        for (int k = 0; k < 3; k++) l->conv_w[k * h + ch] = w->conv[3 * ch + k];
    } else {
      memcpy(l->q_norm, w->q_norm, (size_t)hd * 2);
      memcpy(l->k_norm, w->k_norm, (size_t)hd * 2);
    }
  }
  if (s->final_norm) memcpy(t->final_norm, s->final_norm, (size_t)h * 2);
  if (r == FK_OK) r = fk_rope_table(s->rope_theta, hd, 0, t->max_pos, t->cos, t->sin, err);
  return r;
}

fk_status fk_lfm2_head_pack(fk_wmat *m, const fk_lm_desc *lm, const char *w, fk_error *err) {
  char what[64];
  snprintf(what, sizeof what, "desc.%s.%s", w,
           lm->lm_head_q.format != FK_QNONE ? "lm_head_q" : lm->lm_head ? "lm_head" : "embed (tied head)");
  return fk_wmat_pack(m, lm->lm_head ? lm->lm_head : lm->embed, &lm->lm_head_q, lm->vocab, lm->stack.hidden, what,
                      err);
}

/* ---- the steps ------------------------------------------------------------------------------ */

#define ST ((fk_stack_rt *)s->ctx)
#define LY (&((fk_stack_rt *)s->ctx)->layer[s->layer])
#define FN(role) p->leaf[role].fn

void fk_lfm2_embed(fk_plan *p, const fk_stack_rt *t, int m, const uint16_t *table, const int32_t *ids, int64_t rows) {
  int64_t b, e, h = t->h;
  fk_share(rows, m, p->threads, &b, &e);
  if (b == e) return;
  fk_embed_gather_bf16_args a = { .ids = ids + b, .table = table, .y = t->res + b * h, .d = h, .m = e - b,
                                  .ld_table = h, .ldy = h };
  FN(R_EMBED)(&a);
}

void fk_lfm2_norm(fk_plan *p, const fk_stack_rt *t, int m, const uint16_t *w, int64_t row0, int64_t rows, float *y) {
  int64_t b, e, h = t->h;
  fk_share(rows, m, p->threads, &b, &e);
  if (b == e) return;
  fk_rmsnorm_bf16_wide_args a = { .x = t->res + (row0 + b) * h, .w = w, .y = y + b * h, .n = h, .rows = e - b,
                                  .x_stride = h, .y_stride = h, .eps = t->eps };
  FN(t->r_norm)(&a);
}

static void st_norm1(fk_plan *p, const fk_step *s, int m) {
  const fk_stack_rt *t = ST;
  if (s->role == t->r_norm) {
    fk_lfm2_norm(p, t, m, LY->norm1, 0, fk_lfm2_rows(p, t), t->xn);
    return;
  }
  if (m != 0) return; /* the Depthformer's first norm: one row, res = RNE(in_x[pos] + res) */
  int64_t h = t->h;
  fk_rmsnorm_add_f32_wide_once_args a = { .x = t->in_x + t->pos * h, .w = LY->norm1, .y = t->xn, .r = t->res, .n = h,
                                          .rows = 1, .x_stride = h, .y_stride = h, .r_stride = h, .eps = t->eps };
  FN(t->r_norm_in)(&a);
}
static void st_norm2(fk_plan *p, const fk_step *s, int m) {
  fk_lfm2_norm(p, ST, m, LY->norm2, 0, fk_lfm2_rows(p, ST), ST->xn);
}

static void st_in_proj(fk_plan *p, const fk_step *s, int m) {
  int64_t h = ST->h;
  fk_gemv_job g = { R_IN, LY->in_w, ST->xn, h, h, ST->bcx, NULL, NULL, 3 * h, 0, 0 };
  fk_gemv_run(p, m, &g, fk_lfm2_rows(p, ST), 3 * h);
}

static void st_conv(fk_plan *p, const fk_step *s, int m) {
  if (m != 0) return; /* the carry is a recurrence over rows */
  int64_t h = ST->h;
  fk_shortconv_bf16_wide_args a = { .in = ST->bcx, .w = LY->conv_w, .carry = LY->carry, .y = ST->cy, .h = h,
                                    .m = fk_lfm2_rows(p, ST), .ld_in = 3 * h, .ldy = h };
  FN(R_CONV)(&a);
}

static void st_out_proj(fk_plan *p, const fk_step *s, int m) {
  int64_t h = ST->h;
  fk_gemv_job g = { R_OUT, LY->out_w, ST->cy, h, h, ST->res, ST->res, NULL, h, 0, 0 };
  fk_gemv_run(p, m, &g, fk_lfm2_rows(p, ST), h);
}

static void st_qkv(fk_plan *p, const fk_step *s, int m) {
  const fk_stack_rt *t = ST;
  int64_t hd = t->hd, h = t->h, qd = t->heads * hd, kd = t->kv * hd, rows = fk_lfm2_rows(p, t);
  int64_t slot0 = t->ring ? t->pos % t->ring : t->pos;
  fk_gemv_job q = { R_IN, LY->q_w, t->xn, h, h, t->q, NULL, NULL, qd, 0, 0 };
  fk_gemv_job k = { R_IN, LY->k_w, t->xn, h, h, LY->kc, NULL, NULL, kd, slot0, t->ring };
  fk_gemv_job v = { R_IN, LY->v_w, t->xn, h, h, LY->vc, NULL, NULL, kd, slot0, t->ring };
  fk_gemv_run(p, m, &q, rows, qd);
  fk_gemv_run(p, m, &k, rows, kd);
  fk_gemv_run(p, m, &v, rows, kd);
}

static void st_qkprep(fk_plan *p, const fk_step *s, int m) {
  const fk_stack_rt *t = ST;
  int64_t hd = t->hd, b, e, rows = fk_lfm2_rows(p, t);
  fk_share(t->heads + t->kv, m, p->threads, &b, &e);
  if (b < t->heads) { /* query heads [b, min(e, heads)) */
    int64_t qe = e < t->heads ? e : t->heads;
    fk_qkprep_neox64_args a = { .x = t->q + b * hd, .w = LY->q_norm, .cos = t->cos, .sin = t->sin, .heads = qe - b,
                                .m = rows, .ld_head = hd, .ld_row = t->heads * hd, .pos = t->pos, .slot = 0,
                                .ring = 0, .eps = t->eps };
    FN(t->r_qkprep)(&a);
  }
  if (e > t->heads) { /* key heads, in their cache slots */
    int64_t kb = b > t->heads ? b - t->heads : 0, ke = e - t->heads;
    fk_qkprep_neox64_args a = { .x = LY->kc + kb * hd, .w = LY->k_norm, .cos = t->cos, .sin = t->sin,
                                .heads = ke - kb, .m = rows, .ld_head = hd, .ld_row = t->kv * hd, .pos = t->pos,
                                .slot = t->ring ? t->pos % t->ring : t->pos, .ring = t->ring, .eps = t->eps };
    FN(t->r_qkprep)(&a);
  }
}

/* The step's role is the attention form (fk_lfm2_steps chose it from decode, ring and window). */
static void st_attn(fk_plan *p, const fk_step *s, int m) {
  const fk_stack_rt *t = ST;
  int64_t hd = t->hd, b, e, rows = fk_lfm2_rows(p, t), group = t->heads / t->kv, qd = t->heads * hd, kd = t->kv * hd;
  fk_share(t->kv, m, p->threads, &b, &e);
  if (b == e) return;
  const uint16_t *q = t->q + b * group * hd, *k = LY->kc + b * hd, *v = LY->vc + b * hd;
  uint16_t *y = t->ay + b * group * hd;
  float *yw = t->ayw + b * group * hd;
  int64_t pos = t->pos, slot = t->ring ? pos % t->ring : pos;
  switch (s->role) {
  case R_ATTN_DEC32: /* the same arguments (SAME_LAYOUT) */
  case R_ATTN_DEC: {
    fk_attn_decode64_wide_args a = { .q = q, .k = k, .v = v, .y = y, .yw = yw, .s = t->s[m], .kv_heads = e - b,
                                     .group = group, .k_ld_head = hd, .k_ld_row = kd, .v_ld_head = hd,
                                     .v_ld_row = kd, .pos = pos };
    FN(s->role)(&a);
    break;
  }
  case R_ATTN_DEC_RING: { /* the decode ring form's window is its ring: R == W */
    fk_attn_decode_ring64_wide_args a = { .q = q, .k = k, .v = v, .y = y, .yw = yw, .s = t->s[m],
                                          .kv_heads = e - b, .group = group, .k_ld_head = hd, .k_ld_row = kd,
                                          .v_ld_head = hd, .v_ld_row = kd, .pos = pos, .slot = slot,
                                          .ring = t->window };
    FN(R_ATTN_DEC_RING)(&a);
    break;
  }
  case R_ATTN_PRE: {
    fk_attn_prefill64_wide_args a = { .q = q, .k = k, .v = v, .y = y, .yw = yw, .s = t->s[m], .kv_heads = e - b,
                                      .group = group, .k_ld_head = hd, .k_ld_row = kd, .v_ld_head = hd,
                                      .v_ld_row = kd, .pos = pos, .rows = rows, .q_ld = qd, .y_ld = qd, .yw_ld = qd };
    FN(R_ATTN_PRE)(&a);
    break;
  }
  default: { /* R_ATTN_PRE_RING: prefill, and decode with R > W slots */
    fk_attn_prefill_ring64_wide_args a = { .q = q, .k = k, .v = v, .y = y, .yw = yw, .s = t->s[m],
                                           .kv_heads = e - b, .group = group, .k_ld_head = hd, .k_ld_row = kd,
                                           .v_ld_head = hd, .v_ld_row = kd, .pos = pos, .rows = rows, .q_ld = qd,
                                           .y_ld = qd, .slot = slot, .ring = t->ring, .window = t->window,
                                           .yw_ld = qd };
    FN(R_ATTN_PRE_RING)(&a);
    break;
  }
  }
}

static void st_o_proj(fk_plan *p, const fk_step *s, int m) {
  int64_t h = ST->h, qd = ST->heads * ST->hd;
  fk_gemv_job g = { R_OUT, LY->o_w, ST->ayw, qd, qd, ST->res, ST->res, NULL, h, 0, 0 };
  fk_gemv_run(p, m, &g, fk_lfm2_rows(p, ST), h);
}

static void st_w13(fk_plan *p, const fk_step *s, int m) {
  int64_t h = ST->h, f = ST->ffn, rows = fk_lfm2_rows(p, ST);
  fk_gemv_job g1 = { R_IN, LY->w1, ST->xn, h, h, ST->g, NULL, NULL, f, 0, 0 };
  fk_gemv_job g3 = { R_IN, LY->w3, ST->xn, h, h, ST->u, NULL, NULL, f, 0, 0 };
  fk_gemv_run(p, m, &g1, rows, f);
  fk_gemv_run(p, m, &g3, rows, f);
}

static void st_swiglu(fk_plan *p, const fk_step *s, int m) {
  int64_t b, e, f = ST->ffn;
  fk_share((f + 63) / 64, m, p->threads, &b, &e);
  b *= 64;
  e = e * 64 < f ? e * 64 : f;
  if (b >= e) return;
  fk_swiglu_bf16_wide_args a = { .g = ST->g + b, .u = ST->u + b, .h = ST->hf + b, .n = e - b,
                                 .rows = fk_lfm2_rows(p, ST), .g_stride = f, .u_stride = f, .h_stride = f };
  FN(R_SWIGLU)(&a);
}

static void st_w2(fk_plan *p, const fk_step *s, int m) {
  int64_t h = ST->h, f = ST->ffn;
  fk_gemv_job g = { R_OUT, LY->w2, ST->hf, f, f, ST->res, ST->res, NULL, h, 0, 0 };
  fk_gemv_run(p, m, &g, fk_lfm2_rows(p, ST), h);
}

void fk_lfm2_steps(fk_step_list *l, fk_stack_rt *t, int decode) {
  fk_role attn = t->ring ? (decode && t->ring == t->window ? R_ATTN_DEC_RING : R_ATTN_PRE_RING)
                         : (decode ? t->r_attn_dec : R_ATTN_PRE);
  for (int i = 0; i < (int)t->layers; i++) {
    const fk_layer_rt *ly = &t->layer[i]; /* a GEMV step names the stamp of its (first) matrix's format */
    fk_step_add(l, st_norm1, "operator_norm", "rows", i == 0 ? t->r_norm_in : t->r_norm, t, i);
    if (t->layer[i].kind == FK_LAYER_CONV) {
      fk_step_add(l, st_in_proj, "in_proj", "weight rows", fk_qrole(R_IN, ly->in_w.fmt), t, i);
      fk_step_add(l, st_conv, "conv", "member 0", R_CONV, t, i);
      fk_step_add(l, st_out_proj, "out_proj", "weight rows", fk_qrole(R_OUT, ly->out_w.fmt), t, i);
    } else {
      fk_step_add(l, st_qkv, "qkv_proj", "weight rows", fk_qrole(R_IN, ly->q_w.fmt), t, i);
      fk_step_add(l, st_qkprep, "qk_norm_rope", "heads", R_QKPREP, t, i);
      fk_step_add(l, st_attn, "attention", "kv heads", attn, t, i);
      fk_step_add(l, st_o_proj, "o_proj", "weight rows", fk_qrole(R_OUT, ly->o_w.fmt), t, i);
    }
    fk_step_add(l, st_norm2, "ffn_norm", "rows", t->r_norm, t, i);
    fk_step_add(l, st_w13, "w1_w3", "weight rows", fk_qrole(R_IN, ly->w1.fmt), t, i);
    fk_step_add(l, st_swiglu, "swiglu", "columns", R_SWIGLU, t, i);
    fk_step_add(l, st_w2, "w2", "weight rows", fk_qrole(R_OUT, ly->w2.fmt), t, i);
  }
}

/* ---- state ---------------------------------------------------------------------------------- */

void fk_lfm2_reset(fk_stack_rt *t) {
  for (int64_t i = 0; i < t->layers; i++) {
    fk_layer_rt *l = &t->layer[i];
    if (l->carry) memset(l->carry, 0, (size_t)(2 * t->h) * 2);
    if (l->kc) memset(l->kc, 0, (size_t)(t->slots * t->kv * t->hd) * 2);
    if (l->vc) memset(l->vc, 0, (size_t)(t->slots * t->kv * t->hd) * 2);
  }
  t->pos = 0;
}

size_t fk_lfm2_state_bytes(const fk_stack_rt *t) {
  size_t n = 8;
  for (int64_t i = 0; i < t->layers; i++)
    n += t->layer[i].kind == FK_LAYER_CONV ? (size_t)(2 * t->h) * 2 : (size_t)(2 * t->slots * t->kv * t->hd) * 2;
  return n;
}

static void copy(unsigned char **img, void *state, size_t n, int save) {
  if (save) memcpy(*img, state, n);
  else memcpy(state, *img, n);
  *img += n;
}

unsigned char *fk_lfm2_state_copy(fk_stack_rt *t, unsigned char *img, int save) {
  copy(&img, &t->pos, 8, save);
  for (int64_t i = 0; i < t->layers; i++) {
    fk_layer_rt *l = &t->layer[i];
    if (l->kind == FK_LAYER_CONV) {
      copy(&img, l->carry, (size_t)(2 * t->h) * 2, save);
    } else {
      copy(&img, l->kc, (size_t)(t->slots * t->kv * t->hd) * 2, save);
      copy(&img, l->vc, (size_t)(t->slots * t->kv * t->hd) * 2, save);
    }
  }
  return img;
}

int64_t fk_lfm2_state_pos(const unsigned char *img) {
  int64_t pos;
  memcpy(&pos, img, 8);
  return pos;
}

uint64_t fk_lfm2_digest(const fk_stack_rt *t, uint64_t h) {
  int64_t v[6 + FK_MAX_LAYERS];
  size_t n = 0;
  v[n++] = t->h;
  v[n++] = t->ffn;
  v[n++] = t->heads;
  v[n++] = t->kv;
  v[n++] = t->slots;
  v[n++] = t->layers;
  for (int64_t i = 0; i < t->layers; i++) v[n++] = t->layer[i].kind;
  return fk_fnv1a(h, v, n * sizeof v[0]);
}
