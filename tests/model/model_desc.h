/* tests/model/model_desc.h: plan descriptors of the traces' two models (tests/model/synth.h's
 * weights, by state_dict name) for the model programs' tests and scenario. */
#ifndef FKT_MODEL_DESC_H
#define FKT_MODEL_DESC_H

#include "flashkern.h"
#include "synth.h"

typedef struct fkt_models {
  fkm_weights lm, detok;
  fk_lfm2_layer lm_layers[FK_MAX_LAYERS], detok_layers[FK_MAX_LAYERS];
} fkt_models;

/* Synthesises both models' weights; 0, or -1 with a message on stderr. */
int fkt_models_make(fkt_models *m);
void fkt_models_free(fkt_models *m);

/* A descriptor with the programs in `programs` (FK_PROGRAMS_LM, FK_PROGRAMS_DETOK) on `threads`
 * members, exact tier: lm.max_rows = 16, lm.stack.max_pos = 256, detok.max_frames = 4,
 * detok.stack.max_pos = 1024, f32 PCM, no clip. */
fk_plan_desc fkt_models_desc(fkt_models *m, uint32_t programs, int threads);

/* FNV-1a 64 over bytes, chained from h (0: the offset basis). */
uint64_t fkt_fnv(const void *p, size_t n, uint64_t h);

#endif
