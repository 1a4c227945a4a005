/* runtime/fk_spectral.h: the detokenizer's spectral tail as the tail and detokenizer programs
 * share it (not installed): the head (a GEMV tail_in -> 1282 with bias), the ISTFT frames into an
 * overlap-add ring and PCM, the flush, and the stream's frame cursor. Each family owns one
 * fk_spectral in its record. */
#ifndef FK_SPECTRAL_H
#define FK_SPECTRAL_H

#include "fk_program.h"

enum { FK_SPEC_LD = (FK_ISTFT_SPEC + 15) / 16 * 16 }; /* the spectra's row stride (f32) */

typedef struct fk_spectral {
  int64_t tail_in;     /* features per frame into the head */
  int64_t max_frames;  /* spectra one call holds */
  float clip;          /* magnitude clip (INFINITY: none) */
  int i16;             /* PCM as int16 (FK_PLAN_PCM_I16) */
  fk_role frame, flush; /* the frame and flush roles of that PCM */
  fk_wmat head_w;      /* 1282 x tail_in, packed (or quantized: desc.quantize) */
  float *head_b;       /* 1282 */
  float *spec;         /* max_frames x FK_SPEC_LD: the head's output, the frames' x */
  float *work;         /* the ISTFT frame's scratch */
  /* state */
  float *ring;         /* FK_ISTFT_RING: the overlap-add sums */
  int64_t frames;      /* STFT frames of the current stream */
} fk_spectral;

/* Readiness: desc.tail_in, desc.max_frames (with_max_frames: the tail program's own limit),
 * desc.clip, desc.tail.lin, desc.tail.bias; FK_EINVAL naming the field. */
fk_status fk_spectral_check_desc(const fk_plan_desc *d, int with_max_frames, fk_error *err);
/* The roles its steps call under d (the PCM format picks the frame and flush forms). */
uint64_t fk_spectral_roles(const fk_plan_desc *d);
/* Shapes from d, for calls of up to max_frames spectra; carves the head, planes and the ring. */
void fk_spectral_layout(fk_spectral *sp, const fk_plan_desc *d, int64_t max_frames, fk_carver *c);
fk_status fk_spectral_pack(fk_spectral *sp, const fk_plan_desc *d, fk_error *err);

/* The head phase: member m's share of `rows` spectra from rows of x (row stride ldx). */
void fk_spectral_head(fk_plan *p, const fk_spectral *sp, int m, const float *x, int64_t ldx, int64_t rows);
/* Member 0's frames phase: spectra 0..frames-1 as stream frames sp->frames + f into the ring,
 * PCM to p->job.io.pcm (the ring is a recurrence over frames). */
void fk_spectral_frames(fk_plan *p, const fk_spectral *sp, int64_t frames);
/* Member 0's flush: the last FK_ISTFT_FLUSH samples to p->job.io.pcm (nothing for an empty stream). */
void fk_spectral_flush(fk_plan *p, const fk_spectral *sp);

/* PCM samples the next `frames` frames of the stream give (frame 0: 0, frame 1: 160, then 320). */
int64_t fk_spectral_due(const fk_spectral *sp, int64_t frames);
/* fk_run's PCM checks (the program's name first): io.pcm, io.pcm_cap against `due`, and the PCM
 * due overlapping the program's input [in, in + in_bytes) (named in_name) or the fk_io itself. */
fk_status fk_spectral_check_pcm(const fk_spectral *sp, fk_program prog, const fk_io *io, int64_t due, const void *in,
                                size_t in_bytes, const char *in_name, fk_error *err);

void fk_spectral_reset(fk_spectral *sp);

#endif
