/* tests/model/session.h: the model scenario's fixed session of calls (fk_model_scenario.c prints
 * it; tests/ckpt compares the session of a plan made from a checkpoint with the direct one's),
 * one line of digests per call. */
#ifndef FKT_SESSION_H
#define FKT_SESSION_H

#include <stdio.h>

#include "flashkern.h"

/* lm: a 12-token prompt, then 8 greedy decode steps; per call the next token, a digest of the
 * logits and a digest of every step's residual stream (each layer boundary); then 8 sampled steps
 * (temperature 40, top-k 50, seed 0x5eed); at the end the state snapshot's size and digest (KV
 * caches, carries, position, the sampler's counter). d: a plan of FK_PROGRAMS_LM, vocab <= 4096.
 * Returns 0, or -1 with the refusal on stderr. */
int fkt_session_lm(const fk_plan_desc *d, FILE *out);

/* detok: 12 code frames, one per call, then the flush: the digests of every step's residual
 * stream, of the PCM and of the state before the flush. d: a plan of FK_PROGRAMS_DETOK. */
int fkt_session_detok(const fk_plan_desc *d, FILE *out);

/* gemm: n units (LM prompt tokens, detokenizer frames of 6 rows; n * rows <= 64) in one call, then
 * on a fresh plan of the same descriptor one unit per call (LM: then 3 greedy decode steps on
 * each): every row's residual stream at every step, the logits and tokens (LM) or the PCM
 * (detokenizer), and the state must be the same bits. Prints one line (what differs, or the
 * digests); flip_row >= 0 flips a bit of that row of the one-call run at its third step (the
 * gate's perturbation). Returns 0 when equal, 1 when not, -1 with the refusal on stderr. */
int fkt_session_gemm(const fk_plan_desc *d, int lm, int64_t n, int flip_row, FILE *out);

/* The same calls on a ready plan (its state as fk_plan_create left it): an LM plan of vocabulary
 * `vocab`, a detokenizer plan of codebook_vocab codes. */
int fkt_session_lm_run(fk_plan *p, int64_t vocab, FILE *out);
int fkt_session_detok_run(fk_plan *p, int64_t codebook_vocab, FILE *out);

#endif
