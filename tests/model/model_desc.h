/* tests/model/model_desc.h: plan descriptors of the traces' two models (tests/model/synth.h's
 * weights, by state_dict name) for the model programs' tests and scenario. */
#ifndef FKT_MODEL_DESC_H
#define FKT_MODEL_DESC_H

#include "flashkern.h"
#include "synth.h"

typedef struct fkt_models {
  fkm_weights lm, detok;
  fk_lfm2_layer lm_layers[FK_MAX_LAYERS], detok_layers[FK_MAX_LAYERS];
  fk_lfm2_layer lm_qlayers[FK_MAX_LAYERS], detok_qlayers[FK_MAX_LAYERS]; /* copies fkt_models_qblocks edits */
  void *qbuf[256];  /* GGUF blocks of fkt_models_qblocks */
  int nq;
} fkt_models;

/* Synthesises both models' weights; 0, or -1 with a message on stderr. */
int fkt_models_make(fkt_models *m);
void fkt_models_free(fkt_models *m);

/* A descriptor with the programs in `programs` (FK_PROGRAMS_LM, FK_PROGRAMS_DETOK) on `threads`
 * members, exact tier: lm.max_rows = 16, lm.stack.max_pos = 256, detok.max_frames = 4,
 * detok.stack.max_pos = 1024, f32 PCM, no clip. */
fk_plan_desc fkt_models_desc(fkt_models *m, uint32_t programs, int threads);

/* Gives every GEMV matrix of d's LM and detokenizer stacks and the LM head as GGUF blocks of format f
 * (fk_q_quantize_bf16 of the bf16 weights, kept in m until fkt_models_free): the per-matrix path
 * (fk_lfm2_layer.q, fk_lm_desc.lm_head_q). Layers past `layers` keep their bf16 (mixed formats).
 * 0, or -1 with a message on stderr. */
int fkt_models_qblocks(fkt_models *m, fk_plan_desc *d, fk_qformat f, int layers);

/* FNV-1a 64 over bytes, chained from h (0: the offset basis). */
uint64_t fkt_fnv(const void *p, size_t n, uint64_t h);

#endif
