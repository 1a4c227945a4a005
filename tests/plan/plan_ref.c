/* tests/plan/plan_ref.c: the plan's programs composed from the contract models, one row (one
 * frame) per leaf call, from the checkpoint-layout weights: the oracle of the wiring (packing,
 * the conv's transposition, row groups, shares, in-place residual, state commits). */
#include <stdlib.h>
#include <string.h>

#include "../contract/contract.h"
#include "plan_model.h"

int fkp_ref_init(fkp_ref *r, const fkp_model *m) {
  memset(r, 0, sizeof *r);
  r->m = m;
  int64_t h = m->h > 0 ? m->h : 1, k = m->tail_in > h ? m->tail_in : h;
  r->carry = calloc((size_t)(2 * h), 2);
  r->conv_tap = calloc((size_t)(3 * h), 2);
  r->bcx = calloc((size_t)(3 * h), 2);
  r->xn = calloc((size_t)h, 4);
  r->cy = calloc((size_t)h, 4);
  r->xs = calloc((size_t)((k + 63) / 64 * 64 * 4), 4);
  r->spec = calloc(FK_TAIL_SPEC, 4);
  r->ring = calloc(FK_ISTFT_RING, 4);
  r->work = calloc(FK_ISTFT_WORK, 4);
  if (!r->carry || !r->conv_tap || !r->bcx || !r->xn || !r->cy || !r->xs || !r->spec || !r->ring || !r->work) return -1;
  for (int64_t c = 0; c < m->h; c++)
    for (int t = 0; t < 3; t++) r->conv_tap[t * m->h + c] = m->conv[3 * c + t];
  return 0;
}

void fkp_ref_free(fkp_ref *r) {
  free(r->carry);
  free(r->conv_tap);
  free(r->bcx);
  free(r->xn);
  free(r->cy);
  free(r->xs);
  free(r->spec);
  free(r->ring);
  free(r->work);
  memset(r, 0, sizeof *r);
}

void fkp_ref_block(fkp_ref *r, uint16_t *x, int64_t rows, int64_t ldx) {
  const fkp_model *m = r->m;
  int64_t h = m->h;
  for (int64_t j = 0; j < rows; j++) {
    uint16_t *row = x + j * ldx;
    fk_rmsnorm_bf16_wide_args na = { row, m->norm, r->xn, h, 1, h, h, 1e-5f };
    fkc_rmsnorm_bf16_wide(&na, FKC_EXACT);
    fk_gemv_bf16_rne_args ga = { .w = m->in_proj, .ldw = h, .x = r->xn, .ldx = h, .xs = r->xs, .y = r->bcx,
                                 .y_off = 0, .ldy = 3 * h, .m = 1, .k = h, .row_begin = 0, .row_end = 3 * h };
    fkc_gemv_bf16_rne(&ga, FKC_EXACT);
    if (m->conv_bias) {
      fk_shortconv_bf16_bias_wide_args ca = { r->bcx, r->conv_tap, m->conv_bias, r->carry, r->cy, h, 1, 3 * h, h };
      fkc_shortconv_bf16_bias_wide(&ca, FKC_EXACT);
    } else {
      fk_shortconv_bf16_wide_args ca = { r->bcx, r->conv_tap, r->carry, r->cy, h, 1, 3 * h, h };
      fkc_shortconv_bf16_wide(&ca, FKC_EXACT);
    }
    fk_gemv_bf16_rne_add_args oa = { .w = m->out_proj, .ldw = h, .x = r->cy, .ldx = h, .xs = r->xs, .r = row,
                                     .y = row, .y_off = 0, .ldy = h, .m = 1, .k = h, .row_begin = 0, .row_end = h };
    fkc_gemv_bf16_rne_add(&oa, FKC_EXACT);
  }
}

static int64_t samples(int64_t t) { return t == 0 ? 0 : t == 1 ? FK_ISTFT_HOP / 2 : FK_ISTFT_HOP; }

int64_t fkp_ref_tail(fkp_ref *r, const float *feat, int64_t frames, int64_t ldfeat, void *pcm, float clip, int i16) {
  const fkp_model *m = r->m;
  int64_t n = 0;
  for (int64_t f = 0; f < frames; f++) {
    fk_gemv_f32_bias_args ga = { .w = m->lin, .ldw = m->tail_in, .x = feat + f * ldfeat, .ldx = m->tail_in,
                                 .xs = r->xs, .bias = m->lin_bias, .y = r->spec, .y_off = 0, .ldy = FK_TAIL_SPEC,
                                 .m = 1, .k = m->tail_in, .row_begin = 0, .row_end = FK_TAIL_SPEC };
    fkc_gemv_f32_bias(&ga, FKC_EXACT);
    if (i16) {
      fk_istft_frame_i16_args a = { r->spec, r->ring, (uint16_t *)pcm + n, r->work, r->frames, clip };
      fkc_istft_frame_i16(&a, FKC_EXACT);
    } else {
      fk_istft_frame_args a = { r->spec, r->ring, (float *)pcm + n, r->work, r->frames, clip };
      fkc_istft_frame(&a, FKC_EXACT);
    }
    n += samples(r->frames++);
  }
  return n;
}

int64_t fkp_ref_flush(fkp_ref *r, void *pcm, int i16) {
  if (r->frames == 0) return 0;
  if (i16) {
    fk_istft_flush_i16_args a = { r->ring, pcm, r->frames };
    fkc_istft_flush_i16(&a, FKC_EXACT);
  } else {
    fk_istft_flush_args a = { r->ring, pcm, r->frames };
    fkc_istft_flush(&a, FKC_EXACT);
  }
  r->frames = 0;
  return FK_ISTFT_FLUSH;
}
