/* runtime/fk_prog_audio.h: the audio family's record (not installed; for the model tests and
 * fk_prog_audio.c). */
#ifndef FK_PROG_AUDIO_H
#define FK_PROG_AUDIO_H

#include "fk_lfm2.h"

enum { FK_AUDIO_CB = FK_CODEBOOKS };

struct fk_audio_rt;
/* A codebook's steps' context: the record and the codebook. */
typedef struct fk_audio_cb {
  struct fk_audio_rt *r;
  int c;
} fk_audio_cb;

typedef struct fk_audio_rt {
  fk_stack_rt stack;          /* first: a step's ctx is its stack (the backbone) */
  fk_stack_rt depth;          /* the Depthformer: one row, position c for codebook c */
  int64_t vocab, avocab, dim; /* text vocabulary, codes per codebook, the Depthformer's width */
  int64_t n_text, n_audio;
  uint16_t *embed;            /* vocab x h (gather) */
  fk_wmat lm_head;            /* packed vocab x h (tied: embed) */
  uint16_t *aembed;           /* (8 * avocab) x h: audio_embedding */
  fk_wmat dlin;               /* packed (8 * dim) x h: depth_linear */
  float *dbias;               /* 8 * dim: its bias, widened */
  float *d;                   /* 8 x dim: depth_linear's output, codebook c's input in row c */
  uint16_t *cb_embed[FK_AUDIO_CB], *cb_norm[FK_AUDIO_CB]; /* gather rows; norm */
  fk_wmat cb_head[FK_AUDIO_CB];                           /* packed heads */
  uint16_t *zero;             /* dim zeros: codebook 0's feedback */
  float *logits;              /* vocab: the text logits when io.logits is NULL */
  float *cb_logits;           /* 8 x avocab: each codebook's logits when io.frame_logits is NULL */
  float *scratch;             /* max(vocab, avocab) floats for the topk leaf */
  fk_audio_cb cb[FK_AUDIO_CB];
  /* per run (member 0's draws, read by the next codebook's feedback and by commit) */
  int32_t drawn[FK_AUDIO_CB], fed[FK_AUDIO_CB];
  /* state */
  uint64_t rng[2];            /* the sampler's generator { seed, draws } (the topk leaf's state) */
  int32_t turn;               /* 0: none, 1: running, 2: ended (fk_state_info.audio_turn) */
  int32_t loop, modality, left, text_done;
  int32_t last_kind;          /* FK_AUDIO_OUT_TEXT or _FRAME: what the next step feeds */
  int32_t last[FK_AUDIO_CB];  /* the last output: a token in [0], or a frame */
} fk_audio_rt;

/* The audio model of a plan ready for FK_PROGRAMS_AUDIO, else NULL. */
static inline fk_audio_rt *fk_audio_of(const fk_plan *p) {
  return (fk_audio_rt *)fk_plan_record(p, FK_PROG_AUDIO_PREFILL);
}

#endif
