/* tests/audio/audio_desc.h: LFM2.5-Audio plan descriptors for the audio family's tests and
 * scenario, weights by formula (tests/model/synth.h's fkm_synth_tensor, tag "audio", liquid-audio's
 * state_dict names: lfm.*, depthformer.layers.<i>.*, depth_linear.*, depth_embeddings.<c>.*,
 * audio_embedding.embedding.weight). */
#ifndef FKT_AUDIO_DESC_H
#define FKT_AUDIO_DESC_H

#include "flashkern.h"

typedef struct fkt_audio_cfg {
  const char *tag;                 /* synth.h's tag of the weights: "audio" (NULL), "audio_peaked" */
  int64_t vocab, hidden, ff, heads, kv;
  int layers, is_attn[FK_MAX_LAYERS];
  int64_t dim, dheads, dkv, dff;   /* the Depthformer: dim = dheads * 32 */
  int dlayers;
  int64_t avocab, n_text, n_audio;
  int tied;                        /* depth heads tied to their embeddings */
} fkt_audio_cfg;

/* The trace's shapes (fixtures/audio: hidden 256, Depthformer 1024 x 2 layers, 2049 codes) and a
 * small one for long runs (Depthformer 128 = 4 heads of 32). */
extern const fkt_audio_cfg fkt_audio_trace_cfg, fkt_audio_small_cfg;

typedef struct fkt_audio {
  fkt_audio_cfg cfg;
  fk_lfm2_layer lm_layers[FK_MAX_LAYERS], depth_layers[FK_MAX_LAYERS];
  void *buf[512];
  char name[512][96];              /* buf[i]'s state_dict name */
  int nbuf;
  fk_plan_desc desc;
} fkt_audio;

/* Synthesises the weights (synth.h's rules for tag "audio": fkm_kind_of, fkm_synth_tensor) and fills a->desc (FK_PROGRAMS_AUDIO, threads, exact tier, max_rows 16,
 * max_pos 512). 0, or -1 with a message on stderr. */
int fkt_audio_make(fkt_audio *a, const fkt_audio_cfg *cfg, int threads);
void fkt_audio_free(fkt_audio *a);

/* Adds the detokenizer of dt (FK_PROGRAMS_DETOK: its stack, spectral tail, clip) to d. */
void fkt_audio_add_detok(fk_plan_desc *d, const fk_plan_desc *dt);

/* The synthesised bytes of tensor `name` (bf16 bits), or NULL. */
const void *fkt_audio_tensor(const fkt_audio *a, const char *name);

/* FNV-1a 64 over bytes, chained from h (0: the offset basis). */
uint64_t fkt_audio_fnv(const void *p, size_t n, uint64_t h);

#endif
