/* runtime/fk_program.h: what the program families build on (not installed): the members' shares
 * of a phase, the GEMV phase runner, the listing of a program's steps. Program files include it;
 * the engine does not. */
#ifndef FK_PROGRAM_H
#define FK_PROGRAM_H

#include "fk_plan_internal.h"

/* Member `m` of `n` takes units [b, e) of `units`: contiguous, in member order, sizes within one. */
static inline void fk_share(int64_t units, int m, int n, int64_t *b, int64_t *e) {
  *b = units * m / n;
  *e = units * (m + 1) / n;
}

/* A GEMV's weight rows in whole pack groups (the packed forms start at a group). */
static inline void fk_share_rows(int64_t rows, int m, int n, int64_t *b, int64_t *e) {
  int64_t g0, g1;
  fk_share((rows + FK_GEMV_PACK_ROWS - 1) / FK_GEMV_PACK_ROWS, m, n, &g0, &g1);
  *b = g0 * FK_GEMV_PACK_ROWS;
  *e = g1 * FK_GEMV_PACK_ROWS < rows ? g1 * FK_GEMV_PACK_ROWS : rows;
}

/* ---- the GEMV phase ---------------------------------------------------------------------------- */

/* A GEMV's weights as readiness packed them: bf16 (fmt FK_QNONE: fk_gemv_pack) or quantized
 * (FK_Q8, FK_Q4, FK_Q4K: fk_q_pack's layout). */
typedef struct fk_wmat {
  void *w;
  fk_qformat fmt;
} fk_wmat;

/* The format a matrix runs in: its GGUF blocks' when q gives them, else the plan's quantize. */
static inline fk_qformat fk_wmat_format(const fk_qmatrix *q, fk_qformat quantize) {
  return q && q->format != FK_QNONE ? q->format : quantize;
}
/* At layout: carves n x k weights of format fmt. */
fk_wmat fk_wmat_carve(fk_carver *c, fk_qformat fmt, int64_t n, int64_t k);
/* At readiness: packs the matrix into m: q's GGUF blocks (q->format set), or the bf16 weights w
 * (row stride k) packed or quantized per m->fmt. what names the descriptor field in errors. */
fk_status fk_wmat_pack(const fk_wmat *m, const uint16_t *w, const fk_qmatrix *q, int64_t n, int64_t k,
                       const char *what, fk_error *err);
/* A set of formats: fk_format_bit(f) for each format f a family's matrices run in. */
static inline unsigned fk_format_bit(fk_qformat f) { return 1u << (unsigned)f; }
/* A family's roles plus the quantized rows of its GEMV roles (R_IN, R_OUT, R_HEAD, R_LOGITS) for
 * the formats its matrices run in (after its check: the formats are known ones). */
uint64_t fk_quant_roles(uint64_t roles, unsigned formats);
/* Readiness's checks of a matrix (nothing read): a given q has a known format and blocks, and a
 * quantized matrix's k is a multiple of FK_Q_BLOCK. FK_EINVAL naming `what`. */
fk_status fk_wmat_check(const fk_qmatrix *q, fk_qformat quantize, int64_t k, const char *what, fk_error *err);
/* The stamp row of GEMV role r (R_IN, R_OUT, R_HEAD, R_LOGITS) for weights of format f. */
fk_role fk_qrole(fk_role r, fk_qformat f);

/* One GEMV phase's work: the job's activation rows in groups of <= 24 over the member's share of
 * n weight rows; row i's outputs go to y + ((slot0 + i) mod ring, or slot0 + i when ring is 0) *
 * ldy. role picks the stamp and its struct: R_IN (bf16 out), R_OUT (bf16 out + the residual r),
 * R_LOGITS (f32 out), R_HEAD (f32 out + bias); a quantized w calls the role's _Q8 / _Q4 / _Q4K row. */
typedef struct fk_gemv_job {
  fk_role role;
  fk_wmat w;
  const float *x;
  int64_t ldx, k;
  void *y;
  const void *r;      /* the residual (R_OUT) */
  const float *bias;  /* n f32 (R_HEAD) */
  int64_t ldy;
  int64_t slot0, ring;
} fk_gemv_job;

/* Member m's share of a GEMV phase over `rows` activation rows and n weight rows. */
void fk_gemv_run(fk_plan *p, int m, const fk_gemv_job *g, int64_t rows, int64_t n);
/* At layout: each member's scratch holds the x arrangement of a GEMV of width k. */
void fk_gemv_need(fk_carver *c, int64_t k);

/* ---- steps ------------------------------------------------------------------------------------- */

/* A program's steps being listed: counted (out NULL) or written. */
typedef struct fk_step_list {
  fk_step *out;
  int n;
  int gate;            /* the gate of the steps added from now on (fk_step.gate), -1: none */
} fk_step_list;

typedef void (*fk_step_fn)(fk_plan *, const fk_step *, int member);

static inline void fk_step_add(fk_step_list *l, fk_step_fn run, const char *name, const char *split, fk_role role,
                               void *ctx, int layer) {
  if (l->out) l->out[l->n] = (fk_step){ run, name, split, role, ctx, layer, l->gate };
  l->n++;
}

/* At layout: lists program prog's steps with list(l, rec, prog), carves them, and (unless
 * sizing) writes them. */
void fk_program_steps(fk_plan *p, fk_carver *c, fk_program prog, void *rec,
                      void (*list)(fk_step_list *l, void *rec, fk_program prog));

#endif
