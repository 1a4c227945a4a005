/* runtime/fk_prog_detok.h: the detokenizer family's record (not installed; for the model tests
 * and fk_prog_detok.c). */
#ifndef FK_PROG_DETOK_H
#define FK_PROG_DETOK_H

#include "fk_lfm2.h"
#include "fk_spectral.h"

enum { FK_DETOK_CODEBOOKS = 8, FK_DETOK_REPEAT = 6 }; /* codes per frame; stack rows per code frame */

typedef struct fk_detok_rt {
  fk_stack_rt stack;        /* first: a step's ctx is its stack */
  int64_t cb_vocab;         /* codes per codebook */
  int64_t max_frames;       /* code frames of one call */
  uint16_t *codebooks;      /* (8 * cb_vocab) x h */
  float *feat;              /* 6 * max_frames x h: the final norm's output widened, the head's x */
  fk_spectral sp;           /* the head, the frames, its own ring and STFT frame cursor */
} fk_detok_rt;

/* The detokenizer of a plan ready for FK_PROGRAMS_DETOK, else NULL. */
static inline fk_detok_rt *fk_detok_of(const fk_plan *p) { return (fk_detok_rt *)fk_plan_record(p, FK_PROG_DETOK); }

#endif
