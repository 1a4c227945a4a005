/* runtime/fk_model.c: the whole-model programs: an LFM2 language model (prefill, decode) and the
 * LFM2.5 audio detokenizer (code frames -> PCM), as steps of stamped leaves.
 *
 * A stack is transformers' Lfm2Model: per layer, operator_norm -> (ShortConv | attention) ->
 * + residual, then ffn_norm -> w2(silu(w1 x) * w3 x) -> + residual; embedding_norm at the end.
 * Its residual stream is bf16 (torch's bf16 path rounds there too); every GEMV reads the
 * previous leaf's bf16 results widened to f32 and writes its consumer's buffer: K and V go
 * straight into their cache slots, out_proj, o_proj and w2 add into the residual row.
 *
 * Steps and their shares (a barrier after each; every output element is computed by one leaf
 * call whose arithmetic does not depend on the share, so every team size gives the same bits):
 *   embed / codebooks   rows (frames) split          norm1, norm2, final   rows split
 *   in_proj, qkv, o_proj, w13, w2, logits, head      weight rows split, row groups of <= 4
 *   conv, sample, frames, flush                      member 0 (recurrences and one-token work)
 *   qkprep              q heads then k heads split   attention            kv heads split
 *   swiglu              columns split (multiples of 64)
 * State (the KV caches, conv carries, positions, the detokenizer's OLA ring and the sampler's
 * counter) commits after the program's last barrier, in causal order. */
#include <string.h>

#include "fk_plan_internal.h"

enum { CODEBOOKS = 8, REPEAT = 6, HD = 64, LIMIT = 65536, MAX_POS = 1 << 20, MAX_DETOK_FRAMES = 4096 };

static inline int64_t round_up(int64_t v, int64_t m) { return (v + m - 1) / m * m; }
static inline int64_t frame_samples(int64_t t) { return t == 0 ? 0 : t == 1 ? FK_ISTFT_HOP / 2 : FK_ISTFT_HOP; }
static inline int64_t imax(int64_t a, int64_t b) { return a > b ? a : b; }

/* ---- readiness: checks ----------------------------------------------------------------------- */

#define MCHECK(cond, ...) FK_RETURN_ERROR_IF(cond, err, FK_EINVAL, "fk_plan_create: " __VA_ARGS__)

static fk_status check_stack(const char *w, const fk_lfm2_stack *s, fk_error *err) {
  MCHECK(s->hidden < 1 || s->hidden > LIMIT, "desc.%s.stack.hidden = %lld: must be in 1..%d", w, (long long)s->hidden,
         LIMIT);
  MCHECK(s->ffn < 1 || s->ffn > LIMIT, "desc.%s.stack.ffn = %lld: must be in 1..%d", w, (long long)s->ffn, LIMIT);
  MCHECK(s->layers < 1 || s->layers > FK_MAX_LAYERS, "desc.%s.stack.layers = %lld: must be in 1..%d", w,
         (long long)s->layers, FK_MAX_LAYERS);
  MCHECK(s->head_dim != HD, "desc.%s.stack.head_dim = %lld: the attention stamps serve 64", w, (long long)s->head_dim);
  MCHECK(s->heads < 1 || s->heads * HD > LIMIT, "desc.%s.stack.heads = %lld: must be in 1..%d", w,
         (long long)s->heads, LIMIT / HD);
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
  MCHECK(!s->layer, "desc.%s.stack.layer is NULL", w);
  MCHECK(!s->final_norm, "desc.%s.stack.final_norm is NULL", w);
  for (int64_t i = 0; i < s->layers; i++) {
    const fk_lfm2_layer *l = &s->layer[i];
#define WNULL(f) MCHECK(!l->f, "desc.%s.stack.layer[%lld]." #f " is NULL", w, (long long)i)
    MCHECK(l->kind != FK_LAYER_CONV && l->kind != FK_LAYER_ATTN,
           "desc.%s.stack.layer[%lld].kind = %d: not FK_LAYER_CONV or FK_LAYER_ATTN", w, (long long)i, (int)l->kind);
    WNULL(operator_norm);
    WNULL(ffn_norm);
    WNULL(w1);
    WNULL(w3);
    WNULL(w2);
    if (l->kind == FK_LAYER_CONV) {
      WNULL(in_proj);
      WNULL(conv);
      WNULL(out_proj);
    } else {
      WNULL(q_proj);
      WNULL(k_proj);
      WNULL(v_proj);
      WNULL(q_norm);
      WNULL(k_norm);
      WNULL(o_proj);
    }
#undef WNULL
  }
  return FK_OK;
}

fk_status fk_model_check_desc(const fk_plan_desc *d, fk_error *err) {
  fk_status s;
  if (d->programs & FK_PROGRAMS_LM) {
    const fk_lm_desc *lm = &d->lm;
    if ((s = check_stack("lm", &lm->stack, err)) != FK_OK) return s;
    MCHECK(lm->vocab < 1 || lm->vocab > MAX_POS, "desc.lm.vocab = %lld: must be in 1..%d", (long long)lm->vocab,
           MAX_POS);
    MCHECK(lm->max_rows < 1 || lm->max_rows > LIMIT, "desc.lm.max_rows = %lld: must be in 1..%d",
           (long long)lm->max_rows, LIMIT);
    MCHECK(!lm->embed, "desc.lm.embed is NULL");
  }
  if (d->programs & FK_PROGRAMS_DETOK) {
    const fk_detok_desc *dt = &d->detok;
    if ((s = check_stack("detok", &dt->stack, err)) != FK_OK) return s;
    MCHECK(dt->codebook_vocab < 1 || dt->codebook_vocab > MAX_POS, "desc.detok.codebook_vocab = %lld: must be in 1..%d",
           (long long)dt->codebook_vocab, MAX_POS);
    MCHECK(dt->max_frames < 1 || dt->max_frames > MAX_DETOK_FRAMES, "desc.detok.max_frames = %lld: must be in 1..%d",
           (long long)dt->max_frames, MAX_DETOK_FRAMES);
    MCHECK(!dt->codebooks, "desc.detok.codebooks is NULL");
    MCHECK(d->tail_in != dt->stack.hidden, "desc.tail_in = %lld: must equal desc.detok.stack.hidden = %lld",
           (long long)d->tail_in, (long long)dt->stack.hidden);
  }
  return FK_OK;
}

/* ---- readiness: shapes, layout, packing ------------------------------------------------------- */

static void stack_shapes(fk_stack_rt *st, const fk_lfm2_stack *s, int64_t max_rows) {
  memset(st, 0, sizeof *st);
  st->on = 1;
  st->h = s->hidden;
  st->ffn = s->ffn;
  st->layers = s->layers;
  st->heads = s->heads;
  st->kv = s->kv_heads;
  st->hd = HD;
  st->window = s->window;
  st->max_pos = s->max_pos;
  st->max_rows = max_rows;
  st->eps = s->norm_eps;
  /* a ring must hold the window and a whole block's new rows (templates/attn.lua: R >= W + P - 1) */
  st->ring = s->window > 0 ? s->window + max_rows - 1 : 0;
  st->slots = st->ring ? st->ring : s->max_pos;
  for (int64_t i = 0; i < s->layers; i++) st->layer[i].kind = s->layer[i].kind;
}

void fk_model_shapes(fk_plan *p, const fk_plan_desc *d) {
  memset(p->stack, 0, sizeof p->stack);
  if (d->programs & FK_PROGRAMS_LM) {
    stack_shapes(&p->stack[0], &d->lm.stack, d->lm.max_rows);
    p->vocab = d->lm.vocab;
  }
  if (d->programs & FK_PROGRAMS_DETOK) {
    stack_shapes(&p->stack[1], &d->detok.stack, REPEAT * d->detok.max_frames);
    p->cb_vocab = d->detok.codebook_vocab;
    p->detok_max_frames = d->detok.max_frames;
  }
}

typedef void *(*carve_fn)(void *c, size_t bytes);

static uint16_t *carve_packed(carve_fn carve, void *c, int64_t n, int64_t k) {
  return carve(c, fk_gemv_packed_elems(n, k) * 2);
}

static int64_t stack_layout(fk_plan *p, fk_stack_rt *st, carve_fn carve, void *c) {
  int64_t h = st->h, f = st->ffn, qd = st->heads * HD, kd = st->kv * HD, r = st->max_rows;
  for (int64_t i = 0; i < st->layers; i++) {
    fk_layer_rt *l = &st->layer[i];
    l->norm1 = carve(c, (size_t)h * 2);
    l->norm2 = carve(c, (size_t)h * 2);
    if (l->kind == FK_LAYER_CONV) {
      l->in_w = carve_packed(carve, c, 3 * h, h);
      l->conv_w = carve(c, (size_t)(3 * h) * 2);
      l->out_w = carve_packed(carve, c, h, h);
      l->carry = carve(c, (size_t)(2 * h) * 2);
    } else {
      l->q_w = carve_packed(carve, c, qd, h);
      l->k_w = carve_packed(carve, c, kd, h);
      l->v_w = carve_packed(carve, c, kd, h);
      l->o_w = carve_packed(carve, c, h, qd);
      l->q_norm = carve(c, HD * 2);
      l->k_norm = carve(c, HD * 2);
      l->kc = carve(c, (size_t)(st->slots * kd) * 2);
      l->vc = carve(c, (size_t)(st->slots * kd) * 2);
    }
    l->w1 = carve_packed(carve, c, f, h);
    l->w3 = carve_packed(carve, c, f, h);
    l->w2 = carve_packed(carve, c, h, f);
  }
  st->final_norm = carve(c, (size_t)h * 2);
  st->cos = carve(c, (size_t)(st->max_pos * HD / 2) * 4);
  st->sin = carve(c, (size_t)(st->max_pos * HD / 2) * 4);
  st->res = carve(c, (size_t)(r * h) * 2);
  st->xn = carve(c, (size_t)(r * h) * 4);
  st->bcx = carve(c, (size_t)(r * 3 * h) * 2);
  st->cy = carve(c, (size_t)(r * h) * 4);
  st->q = carve(c, (size_t)(r * qd) * 2);
  st->ay = carve(c, (size_t)(r * qd) * 2);
  st->ayw = carve(c, (size_t)(r * qd) * 4);
  st->g = carve(c, (size_t)(r * f) * 2);
  st->u = carve(c, (size_t)(r * f) * 2);
  st->hf = carve(c, (size_t)(r * f) * 4);
  /* the scores of the longest window a row can see */
  int64_t n = round_up(st->ring ? st->window : st->max_pos, 16);
  for (int m = 0; m < p->threads; m++) st->s[m] = carve(c, (size_t)n * 4);
  return imax(imax(h, f), qd);
}

int64_t fk_model_layout(fk_plan *p, carve_fn carve, void *c) {
  int64_t kmax = 0;
  if (p->stack[0].on) {
    kmax = imax(kmax, stack_layout(p, &p->stack[0], carve, c));
    p->embed = carve(c, (size_t)(p->vocab * p->stack[0].h) * 2);
    p->lm_head = carve_packed(carve, c, p->vocab, p->stack[0].h);
    p->logits = carve(c, (size_t)p->vocab * 4);
    p->sample_scratch = carve(c, (size_t)p->vocab * 4);
  }
  if (p->stack[1].on) {
    kmax = imax(kmax, stack_layout(p, &p->stack[1], carve, c));
    p->codebooks = carve(c, (size_t)(CODEBOOKS * p->cb_vocab * p->stack[1].h) * 2);
    p->feat = carve(c, (size_t)(p->stack[1].max_rows * p->stack[1].h) * 4);
  }
  return kmax;
}

static fk_status pack_stack(fk_stack_rt *st, const fk_lfm2_stack *s, fk_error *err) {
  int64_t h = st->h, f = st->ffn, qd = st->heads * HD, kd = st->kv * HD;
  fk_status r = FK_OK;
#define PACK(src, dst, n, k) \
  if (r == FK_OK) r = fk_gemv_pack(src, k, n, k, dst, fk_gemv_packed_elems(n, k), err)
  for (int64_t i = 0; i < st->layers; i++) {
    const fk_lfm2_layer *w = &s->layer[i];
    fk_layer_rt *l = &st->layer[i];
    memcpy(l->norm1, w->operator_norm, (size_t)h * 2);
    memcpy(l->norm2, w->ffn_norm, (size_t)h * 2);
    if (l->kind == FK_LAYER_CONV) {
      PACK(w->in_proj, l->in_w, 3 * h, h);
      PACK(w->out_proj, l->out_w, h, h);
      /* conv.weight[c, 0, k] -> tap-major w[k*h + c] (the leaf's layout) */
      for (int64_t ch = 0; ch < h; ch++)
        for (int k = 0; k < 3; k++) l->conv_w[k * h + ch] = w->conv[3 * ch + k];
    } else {
      PACK(w->q_proj, l->q_w, qd, h);
      PACK(w->k_proj, l->k_w, kd, h);
      PACK(w->v_proj, l->v_w, kd, h);
      PACK(w->o_proj, l->o_w, h, qd);
      memcpy(l->q_norm, w->q_norm, HD * 2);
      memcpy(l->k_norm, w->k_norm, HD * 2);
    }
    PACK(w->w1, l->w1, f, h);
    PACK(w->w3, l->w3, f, h);
    PACK(w->w2, l->w2, h, f);
  }
#undef PACK
  memcpy(st->final_norm, s->final_norm, (size_t)h * 2);
  if (r == FK_OK) r = fk_rope_table(s->rope_theta, HD, 0, st->max_pos, st->cos, st->sin, err);
  return r;
}

fk_status fk_model_pack(fk_plan *p, const fk_plan_desc *d, fk_error *err) {
  fk_status s = FK_OK;
  if (p->stack[0].on) {
    int64_t h = p->stack[0].h;
    s = pack_stack(&p->stack[0], &d->lm.stack, err);
    memcpy(p->embed, d->lm.embed, (size_t)(p->vocab * h) * 2);
    if (s == FK_OK)
      s = fk_gemv_pack(d->lm.lm_head ? d->lm.lm_head : d->lm.embed, h, p->vocab, h, p->lm_head,
                       fk_gemv_packed_elems(p->vocab, h), err);
  }
  if (s == FK_OK && p->stack[1].on) {
    s = pack_stack(&p->stack[1], &d->detok.stack, err);
    memcpy(p->codebooks, d->detok.codebooks, (size_t)(CODEBOOKS * p->cb_vocab * p->stack[1].h) * 2);
  }
  return s;
}

/* ---- the steps ------------------------------------------------------------------------------ */

#define ST (&p->stack[s->stack])
#define LY (&p->stack[s->stack].layer[s->layer])
#define FN(role) p->leaf[role].fn

/* rows of the job through the stack: the LM's tokens, or 6 per detokenizer code frame */
static inline int64_t stack_rows(const fk_plan *p, const fk_step *s) {
  return s->stack == 0 ? p->job.rows : REPEAT * p->job.rows;
}

static void gemv_call(fk_plan *p, int m, const fk_gemv_job *g, int64_t rows, int64_t b, int64_t e);

/* With more than one row group, the groups take the member's weight rows block by block, each
 * block small enough to stay in L2 while every group passes over it: the weights come from DRAM
 * once per call, not once per group (a detokenizer frame is 6 rows, a prompt more). Every output
 * element is still computed by one call of the same arithmetic: the same bits. */
enum { L2_BLOCK = 256 << 10 };

void fk_gemv_run(fk_plan *p, int m, const fk_gemv_job *g, int64_t rows, int64_t n) {
  int64_t b, e;
  fk_share_rows(n, m, p->threads, &b, &e);
  if (b >= e) return;
  int64_t blk = e - b;
  if (rows > 4) {
    blk = L2_BLOCK / (2 * g->k) / FK_GEMV_PACK_ROWS * FK_GEMV_PACK_ROWS;
    if (blk < FK_GEMV_PACK_ROWS) blk = FK_GEMV_PACK_ROWS;
  }
  for (int64_t b0 = b; b0 < e; b0 += blk) gemv_call(p, m, g, rows, b0, b0 + blk < e ? b0 + blk : e);
}

static void gemv_call(fk_plan *p, int m, const fk_gemv_job *g, int64_t rows, int64_t b, int64_t e) {
  for (int64_t r = 0; r < rows;) {
    int64_t cnt = rows - r < 4 ? rows - r : 4;
    int64_t dst = g->slot0 + r;
    if (g->ring) {
      dst %= g->ring;
      if (dst + cnt > g->ring) cnt = g->ring - dst; /* the group stops at the ring's end */
    }
    const float *x = g->x + r * g->ldx;
    switch (g->role) {
    case R_IN: {
      fk_gemv_bf16_rne_packed_args a = { .w = g->w, .x = x, .ldx = g->ldx, .xs = p->xs[m], .y = g->y,
                                         .y_off = dst * g->ldy, .ldy = g->ldy, .m = cnt, .k = g->k,
                                         .row_begin = b, .row_end = e };
      FN(R_IN)(&a);
      break;
    }
    case R_OUT: {
      fk_gemv_bf16_rne_add_packed_args a = { .w = g->w, .x = x, .ldx = g->ldx, .xs = p->xs[m], .r = g->r, .y = g->y,
                                             .y_off = dst * g->ldy, .ldy = g->ldy, .m = cnt, .k = g->k,
                                             .row_begin = b, .row_end = e };
      FN(R_OUT)(&a);
      break;
    }
    case R_LOGITS: {
      fk_gemv_f32_packed_args a = { .w = g->w, .x = x, .ldx = g->ldx, .xs = p->xs[m], .y = g->y,
                                    .y_off = dst * g->ldy, .ldy = g->ldy, .m = cnt, .k = g->k,
                                    .row_begin = b, .row_end = e };
      FN(R_LOGITS)(&a);
      break;
    }
    default: { /* R_HEAD */
      fk_gemv_f32_bias_packed_args a = { .w = g->w, .x = x, .ldx = g->ldx, .xs = p->xs[m], .bias = p->head_b,
                                         .y = g->y, .y_off = dst * g->ldy, .ldy = g->ldy, .m = cnt, .k = g->k,
                                         .row_begin = b, .row_end = e };
      FN(R_HEAD)(&a);
      break;
    }
    }
    r += cnt;
  }
}

static void st_embed(fk_plan *p, const fk_step *s, int m) {
  int64_t b, e, h = ST->h;
  fk_share(p->job.rows, m, p->threads, &b, &e);
  if (b == e) return;
  fk_embed_gather_bf16_args a = { .ids = p->job.tokens + b, .table = p->embed, .y = ST->res + b * h, .d = h,
                                  .m = e - b, .ld_table = h, .ldy = h };
  FN(R_EMBED)(&a);
}

static void st_codebooks(fk_plan *p, const fk_step *s, int m) {
  int64_t b, e, h = ST->h;
  fk_share(p->job.rows, m, p->threads, &b, &e);
  if (b == e) return;
  fk_embed_codebook_mean_x6_bf16_args a = { .codes = p->job.codes + b * CODEBOOKS, .table = p->codebooks,
                                            .y = ST->res + REPEAT * b * h, .d = h, .m = e - b, .vocab = p->cb_vocab,
                                            .ld_codes = CODEBOOKS, .cb_stride = 1, .ld_table = h, .ldy = h };
  FN(R_CODEBOOK)(&a);
}

static void norm_rows(fk_plan *p, const fk_step *s, int m, const uint16_t *w, int64_t row0, int64_t rows, float *y) {
  int64_t b, e, h = ST->h;
  fk_share(rows, m, p->threads, &b, &e);
  if (b == e) return;
  fk_rmsnorm_bf16_wide_args a = { .x = ST->res + (row0 + b) * h, .w = w, .y = y + b * h, .n = h, .rows = e - b,
                                  .x_stride = h, .y_stride = h, .eps = ST->eps };
  FN(R_NORM)(&a);
}

static void st_norm1(fk_plan *p, const fk_step *s, int m) { norm_rows(p, s, m, LY->norm1, 0, stack_rows(p, s), ST->xn); }
static void st_norm2(fk_plan *p, const fk_step *s, int m) { norm_rows(p, s, m, LY->norm2, 0, stack_rows(p, s), ST->xn); }

static void st_in_proj(fk_plan *p, const fk_step *s, int m) {
  int64_t h = ST->h;
  fk_gemv_job g = { R_IN, LY->in_w, ST->xn, h, h, ST->bcx, NULL, 3 * h, 0, 0 };
  fk_gemv_run(p, m, &g, stack_rows(p, s), 3 * h);
}

static void st_conv(fk_plan *p, const fk_step *s, int m) {
  if (m != 0) return; /* the carry is a recurrence over rows */
  int64_t h = ST->h;
  fk_shortconv_bf16_wide_args a = { .in = ST->bcx, .w = LY->conv_w, .carry = LY->carry, .y = ST->cy, .h = h,
                                    .m = stack_rows(p, s), .ld_in = 3 * h, .ldy = h };
  FN(R_MCONV)(&a);
}

static void st_out_proj(fk_plan *p, const fk_step *s, int m) {
  int64_t h = ST->h;
  fk_gemv_job g = { R_OUT, LY->out_w, ST->cy, h, h, ST->res, ST->res, h, 0, 0 };
  fk_gemv_run(p, m, &g, stack_rows(p, s), h);
}

static void st_qkv(fk_plan *p, const fk_step *s, int m) {
  const fk_stack_rt *t = ST;
  int64_t h = t->h, qd = t->heads * HD, kd = t->kv * HD, rows = stack_rows(p, s);
  int64_t slot0 = t->ring ? p->job.pos0 % t->ring : p->job.pos0;
  fk_gemv_job q = { R_IN, LY->q_w, t->xn, h, h, t->q, NULL, qd, 0, 0 };
  fk_gemv_job k = { R_IN, LY->k_w, t->xn, h, h, LY->kc, NULL, kd, slot0, t->ring };
  fk_gemv_job v = { R_IN, LY->v_w, t->xn, h, h, LY->vc, NULL, kd, slot0, t->ring };
  fk_gemv_run(p, m, &q, rows, qd);
  fk_gemv_run(p, m, &k, rows, kd);
  fk_gemv_run(p, m, &v, rows, kd);
}

static void st_qkprep(fk_plan *p, const fk_step *s, int m) {
  const fk_stack_rt *t = ST;
  int64_t b, e, rows = stack_rows(p, s);
  fk_share(t->heads + t->kv, m, p->threads, &b, &e);
  if (b < t->heads) { /* query heads [b, min(e, heads)) */
    int64_t qe = e < t->heads ? e : t->heads;
    fk_qkprep_neox64_args a = { .x = t->q + b * HD, .w = LY->q_norm, .cos = t->cos, .sin = t->sin, .heads = qe - b,
                                .m = rows, .ld_head = HD, .ld_row = t->heads * HD, .pos = p->job.pos0, .slot = 0,
                                .ring = 0, .eps = t->eps };
    FN(R_QKPREP)(&a);
  }
  if (e > t->heads) { /* key heads, in their cache slots */
    int64_t kb = b > t->heads ? b - t->heads : 0, ke = e - t->heads;
    fk_qkprep_neox64_args a = { .x = LY->kc + kb * HD, .w = LY->k_norm, .cos = t->cos, .sin = t->sin,
                                .heads = ke - kb, .m = rows, .ld_head = HD, .ld_row = t->kv * HD, .pos = p->job.pos0,
                                .slot = t->ring ? p->job.pos0 % t->ring : p->job.pos0, .ring = t->ring,
                                .eps = t->eps };
    FN(R_QKPREP)(&a);
  }
}

static void st_attn(fk_plan *p, const fk_step *s, int m) {
  const fk_stack_rt *t = ST;
  int64_t b, e, rows = stack_rows(p, s), group = t->heads / t->kv, qd = t->heads * HD, kd = t->kv * HD;
  fk_share(t->kv, m, p->threads, &b, &e);
  if (b == e) return;
  const uint16_t *q = t->q + b * group * HD, *k = LY->kc + b * HD, *v = LY->vc + b * HD;
  uint16_t *y = t->ay + b * group * HD;
  float *yw = t->ayw + b * group * HD;
  int64_t pos = p->job.pos0, slot = t->ring ? pos % t->ring : pos;
  int decode = p->job.program == FK_PROG_LM_DECODE;
  if (decode && !t->ring) {
    fk_attn_decode64_wide_args a = { .q = q, .k = k, .v = v, .y = y, .yw = yw, .s = t->s[m], .kv_heads = e - b,
                                     .group = group, .k_ld_head = HD, .k_ld_row = kd, .v_ld_head = HD,
                                     .v_ld_row = kd, .pos = pos };
    FN(R_ATTN_DEC)(&a);
  } else if (decode) {
    fk_attn_decode_ring64_wide_args a = { .q = q, .k = k, .v = v, .y = y, .yw = yw, .s = t->s[m],
                                          .kv_heads = e - b, .group = group, .k_ld_head = HD, .k_ld_row = kd,
                                          .v_ld_head = HD, .v_ld_row = kd, .pos = pos, .slot = slot,
                                          .ring = t->window };
    /* the decode ring form's window is its ring: with R > W slots, the prefill ring form is used */
    if (t->ring == t->window) FN(R_ATTN_DEC_RING)(&a);
    else {
      fk_attn_prefill_ring64_wide_args pa = { .q = q, .k = k, .v = v, .y = y, .yw = yw, .s = t->s[m],
                                              .kv_heads = e - b, .group = group, .k_ld_head = HD, .k_ld_row = kd,
                                              .v_ld_head = HD, .v_ld_row = kd, .pos = pos, .rows = 1, .q_ld = qd,
                                              .y_ld = qd, .slot = slot, .ring = t->ring, .window = t->window,
                                              .yw_ld = qd };
      FN(R_ATTN_PRE_RING)(&pa);
    }
  } else if (!t->ring) {
    fk_attn_prefill64_wide_args a = { .q = q, .k = k, .v = v, .y = y, .yw = yw, .s = t->s[m], .kv_heads = e - b,
                                      .group = group, .k_ld_head = HD, .k_ld_row = kd, .v_ld_head = HD,
                                      .v_ld_row = kd, .pos = pos, .rows = rows, .q_ld = qd, .y_ld = qd, .yw_ld = qd };
    FN(R_ATTN_PRE)(&a);
  } else {
    fk_attn_prefill_ring64_wide_args a = { .q = q, .k = k, .v = v, .y = y, .yw = yw, .s = t->s[m],
                                           .kv_heads = e - b, .group = group, .k_ld_head = HD, .k_ld_row = kd,
                                           .v_ld_head = HD, .v_ld_row = kd, .pos = pos, .rows = rows, .q_ld = qd,
                                           .y_ld = qd, .slot = slot, .ring = t->ring, .window = t->window,
                                           .yw_ld = qd };
    FN(R_ATTN_PRE_RING)(&a);
  }
}

static void st_o_proj(fk_plan *p, const fk_step *s, int m) {
  int64_t h = ST->h, qd = ST->heads * HD;
  fk_gemv_job g = { R_OUT, LY->o_w, ST->ayw, qd, qd, ST->res, ST->res, h, 0, 0 };
  fk_gemv_run(p, m, &g, stack_rows(p, s), h);
}

static void st_w13(fk_plan *p, const fk_step *s, int m) {
  int64_t h = ST->h, f = ST->ffn, rows = stack_rows(p, s);
  fk_gemv_job g1 = { R_IN, LY->w1, ST->xn, h, h, ST->g, NULL, f, 0, 0 };
  fk_gemv_job g3 = { R_IN, LY->w3, ST->xn, h, h, ST->u, NULL, f, 0, 0 };
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
                                 .rows = stack_rows(p, s), .g_stride = f, .u_stride = f, .h_stride = f };
  FN(R_SWIGLU)(&a);
}

static void st_w2(fk_plan *p, const fk_step *s, int m) {
  int64_t h = ST->h, f = ST->ffn;
  fk_gemv_job g = { R_OUT, LY->w2, ST->hf, f, f, ST->res, ST->res, h, 0, 0 };
  fk_gemv_run(p, m, &g, stack_rows(p, s), h);
}

/* LM: the last row's final norm, its logits, the next token */
static void st_lm_final(fk_plan *p, const fk_step *s, int m) {
  norm_rows(p, s, m, ST->final_norm, p->job.rows - 1, 1, ST->xn);
}

static void st_logits(fk_plan *p, const fk_step *s, int m) {
  int64_t h = ST->h;
  fk_gemv_job g = { R_LOGITS, p->lm_head, ST->xn, h, h, p->job.logits ? p->job.logits : p->logits, NULL, p->vocab, 0, 0 };
  fk_gemv_run(p, m, &g, 1, p->vocab);
}

static void st_sample(fk_plan *p, const fk_step *s, int m) {
  (void)s;
  if (m != 0) return;
  const float *x = p->job.logits ? p->job.logits : p->logits;
  if (p->job.sampling) { /* temperature, top-k, softmax, a draw; the leaf commits the counter */
    fk_sample_topk_args a = { .x = x, .tok = &p->job.next, .state = p->rng, .scratch = p->sample_scratch,
                              .n = p->vocab, .top_k = p->job.sampling->top_k,
                              .temperature = p->job.sampling->temperature };
    FN(R_TOPK)(&a);
  } else {
    fk_sample_argmax_args a = { .x = x, .tok = &p->job.next, .n = p->vocab };
    FN(R_ARGMAX)(&a);
  }
}

/* detokenizer: every row's final norm (the head's features), the head, the frames */
static void st_detok_final(fk_plan *p, const fk_step *s, int m) {
  norm_rows(p, s, m, ST->final_norm, 0, stack_rows(p, s), p->feat);
}

static void st_head(fk_plan *p, const fk_step *s, int m) {
  int64_t h = ST->h;
  fk_gemv_job g = { R_HEAD, p->head_w, p->feat, h, h, p->spec, NULL, FK_SPEC_LD, 0, 0 };
  fk_gemv_run(p, m, &g, stack_rows(p, s), FK_ISTFT_SPEC);
}

static void st_frames(fk_plan *p, const fk_step *s, int m) {
  if (m == 0) fk_frames_run(p, p->dring, stack_rows(p, s)); /* the OLA ring is a recurrence over frames */
}

static void st_detok_flush(fk_plan *p, const fk_step *s, int m) {
  (void)s;
  if (m != 0 || p->job.frame0 == 0) return;
  fk_istft_flush_args a = { .ring = p->dring, .y = p->job.pcm, .frame = p->job.frame0 };
  FN(R_FLUSH)(&a);
}

/* ---- the programs' step lists --------------------------------------------------------------- */

typedef struct step_list {
  fk_step *out;
  int n;
} step_list;

static void add(step_list *l, void (*run)(fk_plan *, const fk_step *, int), const char *name, const char *split,
                fk_role role, int stack, int layer) {
  if (l->out) l->out[l->n] = (fk_step){ run, name, split, role, stack, layer };
  l->n++;
}

static void add_stack(step_list *l, const fk_plan *p, int si, int decode) {
  const fk_stack_rt *t = &p->stack[si];
  fk_role attn = t->ring ? (decode && t->ring == t->window ? R_ATTN_DEC_RING : R_ATTN_PRE_RING)
                         : (decode ? R_ATTN_DEC : R_ATTN_PRE);
  for (int i = 0; i < (int)t->layers; i++) {
    add(l, st_norm1, "operator_norm", "rows", R_NORM, si, i);
    if (t->layer[i].kind == FK_LAYER_CONV) {
      add(l, st_in_proj, "in_proj", "weight rows", R_IN, si, i);
      add(l, st_conv, "conv", "member 0", R_MCONV, si, i);
      add(l, st_out_proj, "out_proj", "weight rows", R_OUT, si, i);
    } else {
      add(l, st_qkv, "qkv_proj", "weight rows", R_IN, si, i);
      add(l, st_qkprep, "qk_norm_rope", "heads", R_QKPREP, si, i);
      add(l, st_attn, "attention", "kv heads", attn, si, i);
      add(l, st_o_proj, "o_proj", "weight rows", R_OUT, si, i);
    }
    add(l, st_norm2, "ffn_norm", "rows", R_NORM, si, i);
    add(l, st_w13, "w1_w3", "weight rows", R_IN, si, i);
    add(l, st_swiglu, "swiglu", "columns", R_SWIGLU, si, i);
    add(l, st_w2, "w2", "weight rows", R_OUT, si, i);
  }
}

int fk_model_steps(const fk_plan *p, fk_program prog, fk_step *out) {
  step_list l = { out, 0 };
  switch (prog) {
  case FK_PROG_LM_PREFILL:
  case FK_PROG_LM_DECODE:
    add(&l, st_embed, "embed", "rows", R_EMBED, 0, -1);
    add_stack(&l, p, 0, prog == FK_PROG_LM_DECODE);
    add(&l, st_lm_final, "final_norm", "rows", R_NORM, 0, -1); /* the last row */
    add(&l, st_logits, "logits", "weight rows", R_LOGITS, 0, -1);
    add(&l, st_sample, "sample", "member 0", R_ARGMAX, 0, -1); /* R_TOPK with io.sampling */
    break;
  case FK_PROG_DETOK:
    add(&l, st_codebooks, "codebooks", "frames", R_CODEBOOK, 1, -1);
    add_stack(&l, p, 1, 0);
    add(&l, st_detok_final, "final_norm", "rows", R_NORM, 1, -1);
    add(&l, st_head, "head", "weight rows", R_HEAD, 1, -1);
    add(&l, st_frames, "frames", "member 0", R_FRAME, 1, -1);
    break;
  case FK_PROG_DETOK_FLUSH:
    add(&l, st_detok_flush, "flush", "member 0", R_FLUSH, 1, -1);
    break;
  default:
    break;
  }
  return l.n;
}

/* ---- fk_run: checks and commits ------------------------------------------------------------- */

#define RCHECK(cond, code, fmt, ...) \
  FK_RETURN_ERROR_IF(cond, err, code, "fk_run(%s): " fmt, fk_program_name(prog), ##__VA_ARGS__)

fk_status fk_model_check_io(const fk_plan *p, fk_program prog, const fk_io *io, int64_t *pcm_need, fk_error *err) {
  *pcm_need = 0;
  if (prog == FK_PROG_LM_PREFILL || prog == FK_PROG_LM_DECODE) {
    const fk_stack_rt *t = &p->stack[0];
    if (prog == FK_PROG_LM_DECODE)
      RCHECK(io->rows != 1, FK_EINVAL, "io.rows = %lld: decode runs exactly 1 token", (long long)io->rows);
    RCHECK(io->rows < 1 || io->rows > t->max_rows, FK_EINVAL, "io.rows = %lld: must be in 1..%lld (desc.lm.max_rows)",
           (long long)io->rows, (long long)t->max_rows);
    RCHECK(!io->tokens, FK_EINVAL, "io.tokens is NULL");
    for (int64_t i = 0; i < io->rows; i++)
      RCHECK(io->tokens[i] < 0 || io->tokens[i] >= p->vocab, FK_EINVAL, "io.tokens[%lld] = %d: must be in [0, %lld)",
             (long long)i, (int)io->tokens[i], (long long)p->vocab);
    RCHECK(t->pos + io->rows > t->max_pos, FK_ESTATE,
           "position %lld + %lld rows passes desc.lm.stack.max_pos = %lld (reset the state for a new sequence)",
           (long long)t->pos, (long long)io->rows, (long long)t->max_pos);
    if (io->sampling) {
      float temp = io->sampling->temperature;
      RCHECK(!(temp > 0.0f) || temp > 3.4e38f, FK_EINVAL, "io.sampling->temperature = %g: must be finite and > 0",
             (double)temp);
      RCHECK(io->sampling->top_k < 0, FK_EINVAL, "io.sampling->top_k = %lld: must be >= 0 (0: no top-k)",
             (long long)io->sampling->top_k);
    }
    if (io->logits)
      RCHECK(fk_overlap(io->logits, (size_t)p->vocab * 4, io, sizeof *io) ||
               fk_overlap(io->logits, (size_t)p->vocab * 4, io->tokens, (size_t)io->rows * 4),
             FK_EINVAL, "io.logits overlaps the fk_io or io.tokens");
    return FK_OK;
  }
  int64_t frames = p->dframes;
  if (prog == FK_PROG_DETOK) {
    const fk_stack_rt *t = &p->stack[1];
    RCHECK(io->rows < 1 || io->rows > p->detok_max_frames, FK_EINVAL,
           "io.rows = %lld: must be in 1..%lld (desc.detok.max_frames)", (long long)io->rows,
           (long long)p->detok_max_frames);
    RCHECK(!io->codes, FK_EINVAL, "io.codes is NULL");
    for (int64_t i = 0; i < io->rows * CODEBOOKS; i++)
      RCHECK(io->codes[i] < 0 || io->codes[i] >= p->cb_vocab, FK_EINVAL,
             "io.codes[%lld] = %d (frame %lld, codebook %lld): must be in [0, %lld)", (long long)i, (int)io->codes[i],
             (long long)(i / CODEBOOKS), (long long)(i % CODEBOOKS), (long long)p->cb_vocab);
    RCHECK(t->pos + REPEAT * io->rows > t->max_pos, FK_ESTATE,
           "position %lld + %lld rows passes desc.detok.stack.max_pos = %lld (flush: a new stream)",
           (long long)t->pos, (long long)(REPEAT * io->rows), (long long)t->max_pos);
    for (int64_t f = 0; f < REPEAT * io->rows; f++) *pcm_need += frame_samples(frames + f);
  } else {
    *pcm_need = frames == 0 ? 0 : FK_ISTFT_FLUSH;
  }
  RCHECK(*pcm_need > 0 && !io->pcm, FK_EINVAL, "io.pcm is NULL (%lld samples are due)", (long long)*pcm_need);
  RCHECK(io->pcm_cap < *pcm_need, FK_EINVAL, "io.pcm_cap = %lld: %lld samples are due", (long long)io->pcm_cap,
         (long long)*pcm_need);
  size_t pcm_bytes = (size_t)*pcm_need * (p->flags & FK_PLAN_PCM_I16 ? 2 : 4);
  if (prog == FK_PROG_DETOK)
    RCHECK(fk_overlap(io->pcm, pcm_bytes, io->codes, (size_t)(io->rows * CODEBOOKS) * 4), FK_EINVAL,
           "io.pcm overlaps io.codes");
  RCHECK(fk_overlap(io->pcm, pcm_bytes, io, sizeof *io), FK_EINVAL, "io.pcm overlaps the fk_io itself");
  return FK_OK;
}

static void stack_reset(fk_stack_rt *t) {
  if (!t->on) return;
  for (int64_t i = 0; i < t->layers; i++) {
    fk_layer_rt *l = &t->layer[i];
    if (l->carry) memset(l->carry, 0, (size_t)(2 * t->h) * 2);
    if (l->kc) memset(l->kc, 0, (size_t)(t->slots * t->kv * HD) * 2);
    if (l->vc) memset(l->vc, 0, (size_t)(t->slots * t->kv * HD) * 2);
  }
  t->pos = 0;
}

void fk_model_commit(fk_plan *p, fk_program prog) {
  switch (prog) {
  case FK_PROG_LM_PREFILL:
  case FK_PROG_LM_DECODE:
    p->stack[0].pos += p->job.rows;
    break;
  case FK_PROG_DETOK:
    p->stack[1].pos += REPEAT * p->job.rows;
    p->dframes += REPEAT * p->job.rows;
    break;
  case FK_PROG_DETOK_FLUSH:
    /* the flush leaf zeroed the ring; the stack restarts at position 0 */
    p->dframes = 0;
    stack_reset(&p->stack[1]);
    break;
  default:
    break;
  }
}

/* ---- state ---------------------------------------------------------------------------------- */

void fk_model_reset(fk_plan *p) {
  stack_reset(&p->stack[0]);
  stack_reset(&p->stack[1]);
  if (p->dring) memset(p->dring, 0, FK_ISTFT_RING * 4);
  p->dframes = 0;
  p->rng[1] = 0; /* the seed stays */
}

/* The image, per stack: i64 pos, then per layer the carry (conv) or the K and V caches (all
 * slots); then the detokenizer's i64 frames and OLA ring; the LM's u64 seed and draws. */
static size_t stack_bytes(const fk_stack_rt *t) {
  if (!t->on) return 0;
  size_t n = 8;
  for (int64_t i = 0; i < t->layers; i++)
    n += t->layer[i].kind == FK_LAYER_CONV ? (size_t)(2 * t->h) * 2 : (size_t)(2 * t->slots * t->kv * HD) * 2;
  return n;
}

size_t fk_model_state_bytes(const fk_plan *p) {
  size_t n = stack_bytes(&p->stack[0]) + stack_bytes(&p->stack[1]);
  if (p->stack[0].on) n += 16;
  if (p->stack[1].on) n += 8 + FK_ISTFT_RING * 4;
  return n;
}

static void copy(unsigned char **img, void *state, size_t n, int save) {
  if (save) memcpy(*img, state, n);
  else memcpy(state, *img, n);
  *img += n;
}

void fk_model_state_copy(fk_plan *p, unsigned char *img, int save) {
  for (int si = 0; si < 2; si++) {
    fk_stack_rt *t = &p->stack[si];
    if (!t->on) continue;
    copy(&img, &t->pos, 8, save);
    for (int64_t i = 0; i < t->layers; i++) {
      fk_layer_rt *l = &t->layer[i];
      if (l->kind == FK_LAYER_CONV) {
        copy(&img, l->carry, (size_t)(2 * t->h) * 2, save);
      } else {
        copy(&img, l->kc, (size_t)(t->slots * t->kv * HD) * 2, save);
        copy(&img, l->vc, (size_t)(t->slots * t->kv * HD) * 2, save);
      }
    }
  }
  if (p->stack[0].on) {
    copy(&img, p->rng, 16, save);
  }
  if (p->stack[1].on) {
    copy(&img, &p->dframes, 8, save);
    copy(&img, p->dring, FK_ISTFT_RING * 4, save);
  }
}

const char *fk_model_state_check(const fk_plan *p, const unsigned char *img) {
  int64_t pos[2] = { 0, 0 };
  for (int si = 0; si < 2; si++) {
    const fk_stack_rt *t = &p->stack[si];
    if (!t->on) continue;
    memcpy(&pos[si], img, 8);
    if (pos[si] < 0 || pos[si] > t->max_pos)
      return si ? "the detokenizer's position is outside 0..max_pos" : "the LM's position is outside 0..max_pos";
    img += stack_bytes(t);
  }
  if (p->stack[0].on) img += 16;
  if (p->stack[1].on) {
    int64_t frames;
    memcpy(&frames, img, 8);
    if (frames != pos[1]) return "the detokenizer's frame count differs from its position (6 rows per code frame)";
  }
  return NULL;
}
