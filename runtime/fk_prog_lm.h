/* runtime/fk_prog_lm.h: the LM family's record (not installed; for the model tests and
 * fk_prog_lm.c). */
#ifndef FK_PROG_LM_H
#define FK_PROG_LM_H

#include "fk_lfm2.h"

typedef struct fk_lm_rt {
  fk_stack_rt stack;        /* first: a step's ctx is its stack */
  int64_t vocab;
  uint16_t *embed;          /* vocab x h rows (gather) */
  fk_wmat lm_head;          /* packed vocab x h */
  float *logits;            /* vocab: the logits when io.logits is NULL */
  float *sample_scratch;    /* vocab floats for the topk leaf */
  uint64_t rng[2];          /* the sampler's generator: { seed, draws } (the topk leaf's state) */
} fk_lm_rt;

/* The LM of a plan ready for FK_PROGRAMS_LM, else NULL. */
static inline fk_lm_rt *fk_lm_of(const fk_plan *p) { return (fk_lm_rt *)fk_plan_record(p, FK_PROG_LM_PREFILL); }

#endif
