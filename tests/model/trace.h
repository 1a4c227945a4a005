/* tests/model/trace.h - whole-model reference traces (fixtures/lfm2/, fixtures/detok/) for the
 * runtime's model programs: load a trace manifest through the fixture reader (tests/fixture/fkfix.h,
 * every payload digest verified), fetch a boundary's references, compare a runtime output with the
 * float64 reference under the manifest's bound (tolerance id model_rel_l2, see its derivation line).
 *
 * A trace manifest (leaf lfm2 or detok, form trace) holds, per boundary b:
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
#include "synth.h"

typedef struct {
  fkfix fx;
  const char *tag;          /* "lm" (leaf lfm2) | "detok" */
} fkm_trace;

typedef struct {
  double max_rel;           /* max over rows of ||x_r - f_r||_2 / ||f_r||_2 (inf: x row nonzero where f's is 0, or NaN) */
  int64_t worst_row;
  int64_t rows, cols;
  double eref, bound;       /* the manifest's <b>_eref, <b>_bound */
  int pass;                 /* max_rel <= bound */
} fkm_cmp;

/* Loads and validates a trace manifest (fkfix_load: schema, payload sizes, digests) and checks it is a
 * trace (leaf lfm2 or detok, form trace, every boundary with its _bf16 / _f64 tensors and its
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

/* Checks the manifest's weight_names / weight_digests against the synthesised weights w: same count,
 * same names, same XXH3-64 of every tensor. Returns the number of mismatching tensors (0: all equal),
 * or -1 on error; a message naming the first mismatch (or the error) goes to err. */
int fkm_trace_check_weights(const fkm_trace *t, const fkm_weights *w, char *err, size_t errlen);

#endif
