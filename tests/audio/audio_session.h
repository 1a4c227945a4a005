/* tests/audio/audio_session.h: a fixed script of two LFM2.5-Audio turns through the audio
 * programs, one line of digests per call; the scenario prints them (natively, at several team
 * sizes and under qemu-aarch64) and test_audio compares runs, snapshots and turns with them.
 *   turn 1: generate_sequential, greedy: a prompt of 8 ids, 2 free text tokens, <|audio_start|>
 *           forced, 3 free frames, a frame forced to end the audio (code 2048), a free token,
 *           <|im_end|> forced.
 *   turn 2: generate_interleaved (the model's n_text, n_audio) on the same state, sampled (text T
 *           0.8 top-k 50, codes T 0.9 top-k 64; the plan seeded 0x5eed by the caller): a prompt
 *           of 4 ids, free steps, <|text_end|> forced at its 5th text step, its 9th frame forced to end
 *           the audio, <|im_end|> forced at its 6th text step. */
#ifndef FKT_AUDIO_SESSION_H
#define FKT_AUDIO_SESSION_H

#include <stdio.h>

#include "flashkern.h"

enum { FKT_AUDIO_MAX_FRAMES = 64 };

/* The script's progress: the plan's state is the rest (a session may move to another plan
 * loaded with a snapshot between calls). */
typedef struct fkt_audio_sess {
  int call, turn, text_steps, turn_frames, done;
  int nframes;                               /* the frames emitted, in order */
  int32_t frames[FKT_AUDIO_MAX_FRAMES][FK_CODEBOOKS];
} fkt_audio_sess;

/* Runs the script's next call on p, one line to out (NULL: none). 1: a call ran; 0: the script is
 * done; -1: a refusal (message on stderr). */
int fkt_audio_step(fkt_audio_sess *s, fk_plan *p, FILE *out);

#endif
