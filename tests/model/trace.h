/* tests/model/trace.h - whole-model reference traces (fixtures/lfm2/, fixtures/detok/, fixtures/ckpt/,
 * fixtures/audio/: whole LFM2.5-Audio turns, fixtures/README.md) for
 * the runtime's model programs: load a trace manifest through the fixture reader (tests/fixture/fkfix.h,
 * every payload digest verified), fetch a boundary's references, compare a runtime output with the
 * float64 reference under the manifest's bound (tolerance id model_rel_l2, see its derivation line),
 * tally the checks of a run (the gates tests/model/test_model.c and tests/ckpt/test_ckpt_fixtures.c
 * share) and capture the runtime's planes at the boundaries.
 *
 * A trace manifest (leaf lfm2, detok, ckpt or audio, form trace) holds, per boundary b:
 *   tensor <b>_f64   the float64 run (f64; in detok f32 rounded from f64 except lin, pcm)
 *   tensor <b>_bf16  torch's bf16 run (bf16; logits, lin, pcm: f32)
 *   scalar <b>_eref  f32: max over rows of ||bf16_r - f64_r||_2 / ||f64_r||_2 (rounded up)
 *   scalar <b>_bound f32: max(2 * eref, 2^-8) (rounded up)
 *   boundary <b> <b>_f64 faithful model_rel_l2
 * A row is the last axis (hidden rows, one head of K/V, one logits row, 320 PCM samples: pcm is
 * stored (72, 320)). Plus the inputs (lm: ids, tokens; detok: codes), weight_names / weight_digests
 * (XXH3-64, sorted-name order, see synth.h), lm: tok, tok_f64, scalars call, pos, rows,
 * logits_margin, logits_abs, tok_required. */
#ifndef FKM_TRACE_H
#define FKM_TRACE_H

#include <stdint.h>
#include <stdio.h>

#include "../fixture/fkfix.h"
#include "flashkern.h"
#include "synth.h"

typedef struct {
  fkfix fx;
  const char *tag;          /* "lm" (leaf lfm2) | "detok" | "audio" | "ckpt" (a checkpoint's trace: no synthesised weights) */
} fkm_trace;

typedef struct {
  double max_rel;           /* max over rows of ||x_r - f_r||_2 / ||f_r||_2 (inf: x row nonzero where f's is 0, or NaN) */
  int64_t worst_row;
  int64_t rows, cols;
  double eref, bound;       /* the manifest's <b>_eref, <b>_bound */
  int pass;                 /* max_rel <= bound */
} fkm_cmp;

/* Loads and validates a trace manifest (fkfix_load: schema, payload sizes, digests) and checks it is a
 * trace (leaf lfm2, detok, ckpt or audio, form trace, every boundary with its _bf16 / _f64 tensors and its
 * _eref / _bound scalars). Returns 0, or -1 with a message in err. */
int fkm_trace_load(const char *manifest_path, fkm_trace *t, char *err, size_t errlen);
void fkm_trace_free(fkm_trace *t);

/* The reference of boundary b: the float64 run (f64 != 0) or torch's bf16 run; NULL if absent. */
const fkfix_tensor *fkm_trace_ref(const fkm_trace *t, const char *b, int f64);
/* The stored e_ref and bound of boundary b. Returns 0, or -1 if absent. */
int fkm_trace_bound(const fkm_trace *t, const char *b, float *eref, float *bound);

/* Compares x (dtype FKFIX_BF16 | FKFIX_F32 | FKFIX_F64, dense, in the reference's logical shape,
 * row-major) with boundary b's float64 reference: fills *out and, if report, prints one line
 * "<case> <b>: max row rel L2 <e> (row <r> of <n>) bound <B> (torch bf16 <eref>) ok|FAIL".
 * Returns 1 when within the bound, 0 when not, -1 on error (unknown boundary, bad dtype). */
int fkm_trace_compare(const fkm_trace *t, const char *b, fkfix_dtype dtype, const void *x, fkm_cmp *out,
                      FILE *report);

/* The max row relative L2 error of x against ref (both in their dtypes, dense, rows x cols). */
double fkm_row_rel_l2(fkfix_dtype xd, const void *x, fkfix_dtype rd, const void *ref, int64_t rows, int64_t cols,
                      int64_t *worst_row);

/* ---- gates: a tally of boundary checks, the comparisons and the greedy token's rule ---------------- */

typedef struct fkm_tally {
  int checked, failed;
  double worst;             /* the largest error / bound of the checks (a check not comparable: inf) */
  char first[256];          /* the first failure, for the assertion's message */
} fkm_tally;

/* Counts one check of `what`; a failing one (ok 0) with its error e and bound goes to first if it is. */
void fkm_judge(fkm_tally *t, const char *what, int ok, double e, double bound);
/* Boundary b whole (fkm_trace_compare) against x, judged. Returns 1, 0, or -1 (not comparable: judged failed). */
int fkm_cmp_full(fkm_tally *t, const fkm_trace *tr, const char *b, fkfix_dtype dt, const void *x, FILE *report);
/* Rows [r0, r0 + n) of boundary b (rows of `cols` elements) against x's n rows, judged. Returns as fkm_cmp_full. */
int fkm_cmp_rows(fkm_tally *t, const fkm_trace *tr, const char *b, fkfix_dtype dt, const void *x, int64_t r0, int64_t n,
                 int64_t cols);
/* The greedy token: got must be want when required (the float64 top-2 margin exceeds twice logits_abs, the
 * most a logit moves within the logits' bound); otherwise got's float64 logit l64[got] must be within
 * 2 * logits_abs of want's. Judged as one check named what. */
void fkm_judge_token(fkm_tally *t, const char *what, int64_t got, int64_t want, int required, const double *l64,
                     double logits_abs);

/* ---- capture: the runtime's planes at the boundaries, through fk_plan_set_trace ----------------------- */

enum { FKM_CAP_ROWS = 72, FKM_CAP_H = 512, FKM_CAP_LAYERS = 8 };

typedef enum { FKM_PERTURB_NONE, FKM_PERTURB_CARRY, FKM_PERTURB_KV_SLOT, FKM_PERTURB_SWAP_ROWS, FKM_PERTURB_BIT } fkm_perturb;

/* What fkm_observe keeps of a call (row0: the rows of earlier calls kept before it, 6 per detokenizer frame;
 * an LM call keeps its rows from 0): the embedding rows, every layer's output (the residual stream after w2),
 * the final norm (an LM's last row, f32; a detokenizer's rows) and the detokenizer head's rows. A perturbation
 * (for the gates' negative controls) changes the planes during call `call` (cur: the running call). */
typedef struct fkm_capture {
  int64_t row0;
  uint16_t emb[FKM_CAP_ROWS * FKM_CAP_H];
  uint16_t hid[FKM_CAP_LAYERS][FKM_CAP_ROWS * FKM_CAP_H];
  float norm[FKM_CAP_ROWS * FKM_CAP_H];
  float lin[FKM_CAP_ROWS * FK_ISTFT_SPEC];
  fkm_perturb what;
  int call;
  int cur;
} fkm_capture;

struct fk_step;
/* The observer fk_plan_set_trace(p, fkm_observe, capture) installs: member 0 calls it after every step. */
void fkm_observe(void *ctx, const fk_plan *p, const struct fk_step *st);

/* Runs a detokenizer trace on plan p (FK_PROGRAMS_DETOK, its state as fk_plan_create left it, p's trace set to
 * fkm_observe with c): the code frames of tensor <prefix>codes (8 x frames), chunks[k] frames in call k (at most
 * 16; NULL: one per call; they must add up to the frames), then the flush, writing the PCM to pcm[0, pcm_cap).
 * Judges, with the boundaries named <prefix><b>: the conv states after every call (bx<i>, two rows), then the
 * whole emb, every h<i> and k<i> / v<i> (the rows each call added to the ring), norm, lin and pcm.
 * Returns the PCM samples written, or -1 with a message in err (a refused run, a missing tensor). */
int64_t fkm_detok_trace(fk_plan *p, const fkm_trace *tr, const char *prefix, const int *chunks, fkm_capture *c,
                        fkm_tally *t, float *pcm, int64_t pcm_cap, FILE *report, char *err, size_t errlen);

/* Checks the manifest's weight_names / weight_digests against the synthesised weights w: same count,
 * same names, same XXH3-64 of every tensor. Returns the number of mismatching tensors (0: all equal),
 * or -1 on error; a message naming the first mismatch (or the error) goes to err. */
int fkm_trace_check_weights(const fkm_trace *t, const fkm_weights *w, char *err, size_t errlen);
/* The same against the manifest's <prefix>weight_names / <prefix>weight_digests (prefix "": the trace's own model,
 * whose tag must be w's; "dt_": an audio trace's detokenizer, tag "detok"). */
int fkm_trace_check_weights_of(const fkm_trace *t, const char *prefix, const fkm_weights *w, char *err, size_t errlen);
/* A quantized trace (scalar quant: FK_Q8 or FK_Q4; tensors qweight_names / qweight_digests, XXH3-64 of
 * each quantized matrix's name and GGUF blocks): every FKM_LINEAR weight of w, quantized by
 * fk_q_quantize_bf16 in the trace's format, has the recorded digest, and no other is recorded.
 * *fmt: the format. Returns the number of mismatches (0), or -1 with a message in err. */
int fkm_trace_check_qweights(const fkm_trace *t, const fkm_weights *w, fk_qformat *fmt, char *err, size_t errlen);

#endif
