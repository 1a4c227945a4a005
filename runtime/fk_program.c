/* runtime/fk_program.c: the GEMV phase runner every program family uses (fk_gemv_run: a member's
 * share of weight rows, row groups of <= FK_GEMV_CALL_ROWS, weight blocks) and the listing of a
 * program's steps. */
#include <stdio.h>

#include "fk_program.h"

/* Activation rows per leaf call (FK_GEMV_CALL_ROWS = 24): the packed forms take any m, in blocks
 * of the rows that share each pass over the weights (4 on AVX2 and NEON, 6 on AVX-512: the GEMM of
 * templates/gemv.lua); 24 is a multiple of each, and bounds the x arrangement each member keeps
 * (24 * round_up(k, 64) floats). */

/* With more than 4 rows, the groups take the member's weight rows block by block, each block of
 * L2_BLOCK bytes of weights, which every group passes over before the next: the weights come from
 * DRAM once per call, not once per group (a detokenizer frame is 6 rows, a prompt more). Each call
 * arranges its rows of x again, so a block is not smaller than that: 1 MB (the L2 of a Zen 4 or
 * Neoverse N2 core). Blocks of 256 KB were 0.73-0.85x the speed at k = 8192 (16 rows a call, the
 * arrangement 17% of a call), the same at k <= 4608 (bench/results/gemm-analysis.md). Every output
 * element is still computed by one call of the same arithmetic: the same bits. */
enum { L2_BLOCK = 1 << 20 };

/* The packed forms' argument structs differ only in w's pointer type (the quantized forms take
 * bytes): one struct per output kind serves both. */
#define SAME_ARGS(a, b) \
  _Static_assert(sizeof(a) == sizeof(b) && offsetof(a, row_end) == offsetof(b, row_end), #a " is laid out as " #b)
SAME_ARGS(fk_gemv_q8_bf16_rne_args, fk_gemv_bf16_rne_packed_args);
SAME_ARGS(fk_gemv_q4_bf16_rne_args, fk_gemv_bf16_rne_packed_args);
SAME_ARGS(fk_gemv_q8_bf16_rne_add_args, fk_gemv_bf16_rne_add_packed_args);
SAME_ARGS(fk_gemv_q4_bf16_rne_add_args, fk_gemv_bf16_rne_add_packed_args);
SAME_ARGS(fk_gemv_q8_f32_args, fk_gemv_f32_packed_args);
SAME_ARGS(fk_gemv_q4_f32_args, fk_gemv_f32_packed_args);
SAME_ARGS(fk_gemv_q8_f32_bias_args, fk_gemv_f32_bias_packed_args);
SAME_ARGS(fk_gemv_q4_f32_bias_args, fk_gemv_f32_bias_packed_args);
SAME_ARGS(fk_gemv_q4k_bf16_rne_args, fk_gemv_bf16_rne_packed_args);
SAME_ARGS(fk_gemv_q4k_bf16_rne_add_args, fk_gemv_bf16_rne_add_packed_args);
SAME_ARGS(fk_gemv_q4k_f32_args, fk_gemv_f32_packed_args);
SAME_ARGS(fk_gemv_q4k_f32_bias_args, fk_gemv_f32_bias_packed_args);

fk_role fk_qrole(fk_role r, fk_qformat f) {
  static const fk_role q8[] = { [R_IN] = R_IN_Q8, [R_OUT] = R_OUT_Q8, [R_HEAD] = R_HEAD_Q8, [R_LOGITS] = R_LOGITS_Q8 };
  static const fk_role q4[] = { [R_IN] = R_IN_Q4, [R_OUT] = R_OUT_Q4, [R_HEAD] = R_HEAD_Q4, [R_LOGITS] = R_LOGITS_Q4 };
  static const fk_role q4k[] = { [R_IN] = R_IN_Q4K, [R_OUT] = R_OUT_Q4K, [R_HEAD] = R_HEAD_Q4K,
                                 [R_LOGITS] = R_LOGITS_Q4K };
  return f == FK_Q8 ? q8[r] : f == FK_Q4 ? q4[r] : f == FK_Q4K ? q4k[r] : r;
}

static void gemv_call(fk_plan *p, int m, const fk_gemv_job *g, int64_t rows, int64_t b, int64_t e) {
  fk_leaf_fn fn = p->leaf[fk_qrole(g->role, g->w.fmt)].fn;
  const uint16_t *w = g->w.w;
  for (int64_t r = 0; r < rows;) {
    int64_t cnt = rows - r < FK_GEMV_CALL_ROWS ? rows - r : FK_GEMV_CALL_ROWS;
    int64_t dst = g->slot0 + r;
    if (g->ring) {
      dst %= g->ring;
      if (dst + cnt > g->ring) cnt = g->ring - dst; /* the group stops at the ring's end */
    }
    const float *x = g->x + r * g->ldx;
    float *xs = p->scratch[m];
    switch (g->role) {
    case R_IN: {
      fk_gemv_bf16_rne_packed_args a = { .w = w, .x = x, .ldx = g->ldx, .xs = xs, .y = g->y,
                                         .y_off = dst * g->ldy, .ldy = g->ldy, .m = cnt, .k = g->k,
                                         .row_begin = b, .row_end = e };
      fn(&a);
      break;
    }
    case R_OUT: {
      fk_gemv_bf16_rne_add_packed_args a = { .w = w, .x = x, .ldx = g->ldx, .xs = xs, .r = g->r, .y = g->y,
                                             .y_off = dst * g->ldy, .ldy = g->ldy, .m = cnt, .k = g->k,
                                             .row_begin = b, .row_end = e };
      fn(&a);
      break;
    }
    case R_LOGITS: {
      fk_gemv_f32_packed_args a = { .w = w, .x = x, .ldx = g->ldx, .xs = xs, .y = g->y,
                                    .y_off = dst * g->ldy, .ldy = g->ldy, .m = cnt, .k = g->k,
                                    .row_begin = b, .row_end = e };
      fn(&a);
      break;
    }
    default: { /* R_HEAD */
      fk_gemv_f32_bias_packed_args a = { .w = w, .x = x, .ldx = g->ldx, .xs = xs, .bias = g->bias,
                                         .y = g->y, .y_off = dst * g->ldy, .ldy = g->ldy, .m = cnt, .k = g->k,
                                         .row_begin = b, .row_end = e };
      fn(&a);
      break;
    }
    }
    r += cnt;
  }
}

/* Weight rows per call with more than 4 activation rows: a multiple of FK_GEMV_PACK_ROWS. */
int64_t fk_gemv_block_rows(int64_t k) {
  if (k < 1) return 0;
  int64_t blk = L2_BLOCK / 2 / k / FK_GEMV_PACK_ROWS * FK_GEMV_PACK_ROWS;
  return blk < FK_GEMV_PACK_ROWS ? FK_GEMV_PACK_ROWS : blk;
}

void fk_gemv_run(fk_plan *p, int m, const fk_gemv_job *g, int64_t rows, int64_t n) {
  int64_t b, e;
  fk_share_rows(n, m, p->threads, &b, &e);
  if (b >= e) return;
  int64_t blk = rows > 4 ? fk_gemv_block_rows(g->k) : e - b;
  for (int64_t b0 = b; b0 < e; b0 += blk) gemv_call(p, m, g, rows, b0, b0 + blk < e ? b0 + blk : e);
}

/* ---- weights of a format ------------------------------------------------------------------- */

fk_wmat fk_wmat_carve(fk_carver *c, fk_qformat fmt, int64_t n, int64_t k) {
  size_t bytes = fmt != FK_QNONE ? fk_q_packed_bytes(fmt, n, k) : fk_gemv_packed_elems(n, k) * 2;
  return (fk_wmat){ fk_carve(c, bytes), fmt };
}

fk_status fk_wmat_pack(const fk_wmat *m, const uint16_t *w, const fk_qmatrix *q, int64_t n, int64_t k,
                       const char *what, fk_error *err) {
  char fn[160];
  if (q && q->format != FK_QNONE) {
    snprintf(fn, sizeof fn, "fk_plan_create: %s (GGUF blocks)", what);
    return fk_q_pack_named(fn, q->format, q->blocks, fk_q_gguf_bytes(q->format, n, k), n, k, m->w,
                           fk_q_packed_bytes(q->format, n, k), err);
  }
  if (m->fmt != FK_QNONE) {
    snprintf(fn, sizeof fn, "fk_plan_create: %s (quantize %s)", what, fk_q_name(m->fmt));
    return fk_q_pack_bf16(fn, m->fmt, w, k, n, k, m->w, fk_q_packed_bytes(m->fmt, n, k), err);
  }
  return fk_gemv_pack(w, k, n, k, m->w, fk_gemv_packed_elems(n, k), err);
}

fk_status fk_wmat_check(const fk_qmatrix *q, fk_qformat quantize, int64_t k, const char *what, fk_error *err) {
  if (q && q->format != FK_QNONE) {
    FK_RETURN_ERROR_IF(q->format != FK_Q8 && q->format != FK_Q4 && q->format != FK_Q4K, err, FK_EINVAL,
                       "fk_plan_create: %s.format = %d: must be FK_QNONE, FK_Q8, FK_Q4 or FK_Q4K", what,
                       (int)q->format);
    FK_RETURN_ERROR_IF(!q->blocks, err, FK_EINVAL, "fk_plan_create: %s.blocks is NULL (format %s)", what,
                       fk_q_name(q->format));
  }
  fk_qformat f = fk_wmat_format(q, quantize);
  const int64_t blk = f == FK_Q4K ? FK_GEMV_Q4K_SPAN : FK_Q_BLOCK;
  FK_RETURN_ERROR_IF(f != FK_QNONE && k % blk != 0, err, FK_EINVAL,
                     "fk_plan_create: %s: k = %lld is not a multiple of %lld, a %s %s (%s)", what, (long long)k,
                     (long long)blk, fk_q_name(f), f == FK_Q4K ? "super-block" : "block",
                     q && q->format != FK_QNONE ? "GGUF blocks" : "desc.quantize");
  return FK_OK;
}

uint64_t fk_quant_roles(uint64_t want, unsigned formats) {
  uint64_t r = want;
  const fk_role base[] = { R_IN, R_OUT, R_HEAD, R_LOGITS };
  for (size_t i = 0; i < sizeof base / sizeof base[0]; i++) {
    if (!(want & FK_ROLE_BIT(base[i]))) continue;
    /* no bf16 matrix: its bf16 stamp is never called, nor resolved (a quantized fast plan then needs
     * the int8 dot product alone, not the bf16 dot product too) */
    if (!(formats & fk_format_bit(FK_QNONE))) r &= ~FK_ROLE_BIT(base[i]);
    if (formats & fk_format_bit(FK_Q8)) r |= FK_ROLE_BIT(fk_qrole(base[i], FK_Q8));
    if (formats & fk_format_bit(FK_Q4)) r |= FK_ROLE_BIT(fk_qrole(base[i], FK_Q4));
    if (formats & fk_format_bit(FK_Q4K)) r |= FK_ROLE_BIT(fk_qrole(base[i], FK_Q4K));
  }
  return r;
}

/* A call's xs: FK_GEMV_CALL_ROWS arranged rows, a GEMM block's sums (FK_GEMV_GEMM_SUMS), and where k
 * takes more than one GEMM k block, the partial sums of a call's weight rows (at most one weight block,
 * from a multiple of FK_GEMV_PACK_ROWS: the packed forms' xs extent). */
size_t fk_gemv_call_scratch(int64_t k) {
  if (k < 1 || k > ((int64_t)1 << 40)) return 0;
  int64_t floats = FK_GEMV_CALL_ROWS * ((k + 63) / 64 * 64) + FK_GEMV_GEMM_SUMS;
  if (k > FK_GEMV_GEMM_KBLOCK) floats += fk_gemv_block_rows(k) * FK_GEMV_GEMM_PART_ROW;
  return (size_t)floats;
}

void fk_gemv_need(fk_carver *c, int64_t k) { fk_carve_member(c, fk_gemv_call_scratch(k) * 4); }

void fk_program_steps(fk_plan *p, fk_carver *c, fk_program prog, void *rec,
                      void (*list)(fk_step_list *l, void *rec, fk_program prog)) {
  fk_step_list l = { NULL, 0, -1 };
  list(&l, rec, prog);
  fk_step *out = fk_carve_steps(p, c, prog, l.n);
  if (!out) return;
  l = (fk_step_list){ out, 0, -1 };
  list(&l, rec, prog);
}
