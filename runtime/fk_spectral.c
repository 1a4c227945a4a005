/* runtime/fk_spectral.c: the spectral tail shared by the tail and detokenizer programs: its
 * descriptor checks, buffers and packing, the head, frames and flush phases, the PCM due and its
 * checks. The buffers are sized from the istft leaf's constants (FK_ISTFT_*, fk_leaves.h; CHECK:
 * templates/istft.lua exports them). */
#include <string.h>

#include "fk_spectral.h"

enum { LIMIT = 65536 };
_Static_assert(FK_TAIL_SPEC == FK_ISTFT_SPEC, "fk_models.h: FK_TAIL_SPEC is the istft leaf's spectrum size");

#define DESC_CHECK(cond, ...) FK_RETURN_ERROR_IF(cond, err, FK_EINVAL, "fk_plan_create: " __VA_ARGS__)

fk_status fk_spectral_check_desc(const fk_plan_desc *d, int with_max_frames, fk_error *err) {
  DESC_CHECK(d->tail_in < 1 || d->tail_in > LIMIT, "desc.tail_in = %lld: must be in 1..%d", (long long)d->tail_in,
             LIMIT);
  if (with_max_frames)
    DESC_CHECK(d->max_frames < 1 || d->max_frames > LIMIT, "desc.max_frames = %lld: must be in 1..%d",
               (long long)d->max_frames, LIMIT);
  DESC_CHECK(!(d->clip > 0.0f), "desc.clip = %g: must be > 0 (INFINITY: no clip)", (double)d->clip);
  DESC_CHECK(!d->tail.lin, "desc.tail.lin is NULL");
  DESC_CHECK(!d->tail.bias, "desc.tail.bias is NULL");
  return fk_wmat_check(NULL, d->quantize, d->tail_in, "desc.tail.lin", err);
}

uint64_t fk_spectral_roles(const fk_plan_desc *d) {
  int i16 = (d->flags & FK_PLAN_PCM_I16) != 0;
  return FK_ROLE_BIT(R_HEAD) | FK_ROLE_BIT(i16 ? R_FRAME_I16 : R_FRAME) | FK_ROLE_BIT(i16 ? R_FLUSH_I16 : R_FLUSH);
}

void fk_spectral_layout(fk_spectral *sp, const fk_plan_desc *d, int64_t max_frames, fk_carver *c) {
  sp->tail_in = d->tail_in;
  sp->max_frames = max_frames;
  sp->clip = d->clip;
  sp->i16 = (d->flags & FK_PLAN_PCM_I16) != 0;
  sp->frame = sp->i16 ? R_FRAME_I16 : R_FRAME;
  sp->flush = sp->i16 ? R_FLUSH_I16 : R_FLUSH;
  sp->head_w = fk_wmat_carve(c, d->quantize, FK_ISTFT_SPEC, sp->tail_in);
  sp->head_b = fk_carve(c, FK_ISTFT_SPEC * 4);
  sp->spec = fk_carve(c, (size_t)(max_frames * FK_SPEC_LD) * 4);
  sp->work = fk_carve(c, FK_ISTFT_WORK * 4);
  sp->ring = fk_carve(c, FK_ISTFT_RING * 4);
  fk_gemv_need(c, sp->tail_in);
}

fk_status fk_spectral_pack(fk_spectral *sp, const fk_plan_desc *d, fk_error *err) {
  memcpy(sp->head_b, d->tail.bias, FK_ISTFT_SPEC * 4);
  return fk_wmat_pack(&sp->head_w, d->tail.lin, NULL, FK_ISTFT_SPEC, sp->tail_in, "desc.tail.lin", err);
}

/* ---- the phases ------------------------------------------------------------------------------- */

static inline int64_t frame_samples(int64_t t) { return t == 0 ? 0 : t == 1 ? FK_ISTFT_HOP / 2 : FK_ISTFT_HOP; }

void fk_spectral_head(fk_plan *p, const fk_spectral *sp, int m, const float *x, int64_t ldx, int64_t rows) {
  fk_gemv_job g = { R_HEAD, sp->head_w, x, ldx, sp->tail_in, sp->spec, NULL, sp->head_b, FK_SPEC_LD, 0, 0 };
  fk_gemv_run(p, m, &g, rows, FK_ISTFT_SPEC);
}

void fk_spectral_frames(fk_plan *p, const fk_spectral *sp, int64_t frames) {
  size_t elem = sp->i16 ? 2 : 4;
  char *pcm = p->job.io.pcm;
  for (int64_t f = 0; f < frames; f++) {
    int64_t t = sp->frames + f;
    fk_istft_frame_args a = { .x = sp->spec + f * FK_SPEC_LD, .ring = sp->ring, .y = (float *)(void *)pcm,
                              .work = sp->work, .frame = t, .clip = sp->clip };
    p->leaf[sp->frame].fn(&a); /* the _i16 form's struct has the same layout (uint16_t *y) */
    pcm += (size_t)frame_samples(t) * elem;
  }
}

void fk_spectral_flush(fk_plan *p, const fk_spectral *sp) {
  if (sp->frames == 0) return;
  fk_istft_flush_args a = { .ring = sp->ring, .y = p->job.io.pcm, .frame = sp->frames };
  p->leaf[sp->flush].fn(&a);
}

/* ---- fk_run --------------------------------------------------------------------------------- */

int64_t fk_spectral_due(const fk_spectral *sp, int64_t frames) {
  int64_t due = 0;
  for (int64_t f = 0; f < frames; f++) due += frame_samples(sp->frames + f);
  return due;
}

#define RUN_CHECK(cond, fmt, ...) \
  FK_RETURN_ERROR_IF(cond, err, FK_EINVAL, "fk_run(%s): " fmt, fk_program_name(prog), ##__VA_ARGS__)

fk_status fk_spectral_check_pcm(const fk_spectral *sp, fk_program prog, const fk_io *io, int64_t due, const void *in,
                                size_t in_bytes, const char *in_name, fk_error *err) {
  RUN_CHECK(due > 0 && !io->pcm, "io.pcm is NULL (%lld samples are due)", (long long)due);
  RUN_CHECK(io->pcm_cap < due, "io.pcm_cap = %lld: %lld samples are due", (long long)io->pcm_cap, (long long)due);
  /* the PCM due must not overlap what the program reads, nor io.pcm_count (written after it) */
  size_t pcm_bytes = (size_t)due * (sp->i16 ? 2 : 4);
  if (in) RUN_CHECK(fk_overlap(io->pcm, pcm_bytes, in, in_bytes), "io.pcm overlaps %s", in_name);
  RUN_CHECK(fk_overlap(io->pcm, pcm_bytes, io, sizeof *io), "io.pcm overlaps the fk_io itself");
  return FK_OK;
}

void fk_spectral_reset(fk_spectral *sp) {
  memset(sp->ring, 0, FK_ISTFT_RING * 4);
  sp->frames = 0;
}
