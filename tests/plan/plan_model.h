/* tests/plan/plan_model.h: synthetic LFM2 ShortConv block and detokenizer tail weights for the
 * plan tests, the scenario program and the runtime bench, and (plan_ref.c) the same programs
 * composed from the contract models, one row and one frame at a time. */
#ifndef FKP_PLAN_MODEL_H
#define FKP_PLAN_MODEL_H

#include <stddef.h>
#include <stdint.h>

#include "flashkern.h"

typedef struct fkp_model {
  int64_t h, tail_in;
  uint16_t *norm, *in_proj, *conv, *conv_bias, *out_proj, *lin; /* the checkpoint layouts */
  float *lin_bias;
} fkp_model;

/* Seeded weights: norm 1 +- 0.1, in_proj/out_proj uniform +- 1/sqrt(h), conv +- 0.6, conv_bias
 * (with_bias) +- 0.1, lin +- 1/sqrt(tail_in), lin_bias -1 (magnitudes) and 0 (phases) +- 0.5.
 * Returns 0, or -1 when out of memory. */
int fkp_model_make(fkp_model *m, int64_t h, int64_t tail_in, int with_bias, uint64_t seed);
void fkp_model_free(fkp_model *m);

/* A descriptor for m: the block and/or the tail, exact tier, eps 1e-5, no clip. */
fk_plan_desc fkp_desc(const fkp_model *m, uint32_t programs, int threads, int64_t max_rows, int64_t max_frames);

void fkp_fill_bf16(uint16_t *x, size_t n, float scale, uint64_t seed); /* uniform +- scale, RNE to bf16 */
void fkp_fill_f32(float *x, size_t n, float scale, uint64_t seed);
uint64_t fkp_fnv(const void *p, size_t n, uint64_t h);               /* FNV-1a, h = 0: the basis */

/* ---- the reference (plan_ref.c, contract models: tests only) ----------------------------- */
typedef struct fkp_ref {
  const fkp_model *m;
  uint16_t *carry, *conv_tap, *bcx;
  float *xn, *cy, *xs, *spec, *ring, *work;
  int64_t frames;
} fkp_ref;

int fkp_ref_init(fkp_ref *r, const fkp_model *m);  /* zero state */
void fkp_ref_free(fkp_ref *r);
/* The block over rows of x (row stride ldx), row by row, in place. */
void fkp_ref_block(fkp_ref *r, uint16_t *x, int64_t rows, int64_t ldx);
/* The tail over frames of feat; PCM (f32, or int16 bits when i16) appended at pcm; returns samples. */
int64_t fkp_ref_tail(fkp_ref *r, const float *feat, int64_t frames, int64_t ldfeat, void *pcm, float clip, int i16);
int64_t fkp_ref_flush(fkp_ref *r, void *pcm, int i16);

#endif
