/* runtime/fk_prog_detok.c: the detokenizer family (FK_PROGRAMS_DETOK): the LFM2.5 audio
 * detokenizer (desc.detok) from stamps: FK_PROG_DETOK (1..detok.max_frames code frames of 8
 * codes: codebook mean, x6 repeat, the stack with its sliding window (fk_lfm2.c), final norm,
 * the 512 -> 1282 head and the spectral tail (fk_spectral.c) -> PCM) and FK_PROG_DETOK_FLUSH
 * (the stream's last 480 samples; the stack restarts). Its state is the stack's, its own OLA ring
 * and STFT frame cursor.
 *   codebooks   code frames split      final_norm   rows split
 *   head        weight rows split      frames, flush member 0 (the ring is a recurrence) */
#include <string.h>

#include "fk_prog_detok.h"

enum { CODEBOOKS = FK_DETOK_CODEBOOKS, REPEAT = FK_DETOK_REPEAT, MAX_VOCAB = 1 << 20, MAX_FRAMES = 4096 };

/* ---- readiness -------------------------------------------------------------------------------- */

#define MCHECK(cond, ...) FK_RETURN_ERROR_IF(cond, err, FK_EINVAL, "fk_plan_create: " __VA_ARGS__)

static fk_status check_desc(const fk_plan_desc *d, fk_error *err) {
  const fk_detok_desc *dt = &d->detok;
  fk_status s = fk_spectral_check_desc(d, 0, err); /* its head and tail are desc.tail */
  if (s == FK_OK) s = fk_lfm2_check("detok", &dt->stack, d->quantize, err);
  if (s != FK_OK) return s;
  MCHECK(dt->codebook_vocab < 1 || dt->codebook_vocab > MAX_VOCAB, "desc.detok.codebook_vocab = %lld: must be in 1..%d",
         (long long)dt->codebook_vocab, MAX_VOCAB);
  MCHECK(dt->max_frames < 1 || dt->max_frames > MAX_FRAMES, "desc.detok.max_frames = %lld: must be in 1..%d",
         (long long)dt->max_frames, MAX_FRAMES);
  MCHECK(!dt->codebooks, "desc.detok.codebooks is NULL");
  MCHECK(d->tail_in != dt->stack.hidden, "desc.tail_in = %lld: must equal desc.detok.stack.hidden = %lld",
         (long long)d->tail_in, (long long)dt->stack.hidden);
  return FK_OK;
}

static uint64_t roles(const fk_plan_desc *d) {
  /* the stack, and the spectral head (quantize) */
  return fk_quant_roles(fk_lfm2_roles(0) | FK_ROLE_BIT(R_CODEBOOK) | FK_ROLE_BIT(R_NORM) | fk_spectral_roles(d),
                        fk_lfm2_formats(&d->detok.stack, d->quantize) | fk_format_bit(d->quantize));
}

/* ---- the steps around the stack ------------------------------------------------------------- */

static void st_codebooks(fk_plan *p, const fk_step *s, int m) {
  const fk_detok_rt *r = s->ctx;
  int64_t b, e, h = r->stack.h;
  fk_share(p->job.io.rows, m, p->threads, &b, &e);
  if (b == e) return;
  fk_embed_codebook_mean_x6_bf16_args a = { .codes = p->job.io.codes + b * CODEBOOKS, .table = r->codebooks,
                                            .y = r->stack.res + REPEAT * b * h, .d = h, .m = e - b,
                                            .vocab = r->cb_vocab, .ld_codes = CODEBOOKS, .cb_stride = 1,
                                            .ld_table = h, .ldy = h };
  p->leaf[R_CODEBOOK].fn(&a);
}

/* every row's final norm (the head's features), the head, the frames */
static void st_final(fk_plan *p, const fk_step *s, int m) {
  const fk_detok_rt *r = s->ctx;
  fk_lfm2_norm(p, &r->stack, m, r->stack.final_norm, 0, fk_lfm2_rows(p, &r->stack), r->feat);
}

static void st_head(fk_plan *p, const fk_step *s, int m) {
  const fk_detok_rt *r = s->ctx;
  fk_spectral_head(p, &r->sp, m, r->feat, r->stack.h, fk_lfm2_rows(p, &r->stack));
}

static void st_frames(fk_plan *p, const fk_step *s, int m) {
  const fk_detok_rt *r = s->ctx;
  if (m == 0) fk_spectral_frames(p, &r->sp, fk_lfm2_rows(p, &r->stack)); /* the ring: a recurrence over frames */
}

static void st_flush(fk_plan *p, const fk_step *s, int m) {
  const fk_detok_rt *r = s->ctx;
  if (m == 0) fk_spectral_flush(p, &r->sp); /* nothing for a stream of 0 frames */
}

static void list_steps(fk_step_list *l, void *rec, fk_program prog) {
  fk_detok_rt *r = rec;
  if (prog == FK_PROG_DETOK) {
    fk_step_add(l, st_codebooks, "codebooks", "frames", R_CODEBOOK, r, -1);
    fk_lfm2_steps(l, &r->stack, 0);
    fk_step_add(l, st_final, "final_norm", "rows", R_NORM, r, -1);
    fk_step_add(l, st_head, "head", "weight rows", fk_qrole(R_HEAD, r->sp.head_w.fmt), r, -1);
    fk_step_add(l, st_frames, "frames", "member 0", r->sp.frame, r, -1);
  } else {
    fk_step_add(l, st_flush, "flush", "member 0", r->sp.flush, r, -1);
  }
}

static void *layout(fk_plan *p, const fk_plan_desc *d, fk_carver *c) {
  fk_detok_rt local, *r = fk_carve_record(c, sizeof *r, &local);
  fk_lfm2_shapes(&r->stack, &d->detok.stack, REPEAT * d->detok.max_frames, REPEAT, d->quantize);
  r->cb_vocab = d->detok.codebook_vocab;
  r->max_frames = d->detok.max_frames;
  fk_lfm2_layout(&r->stack, p->threads, c);
  r->codebooks = fk_carve(c, (size_t)(CODEBOOKS * r->cb_vocab * r->stack.h) * 2);
  r->feat = fk_carve(c, (size_t)(r->stack.max_rows * r->stack.h) * 4);
  fk_spectral_layout(&r->sp, d, r->stack.max_rows, c);
  fk_program_steps(p, c, FK_PROG_DETOK, r, list_steps);
  fk_program_steps(p, c, FK_PROG_DETOK_FLUSH, r, list_steps);
  return r;
}

static fk_status pack(void *rec, const fk_plan_desc *d, fk_error *err) {
  fk_detok_rt *r = rec;
  fk_status s = fk_lfm2_pack(&r->stack, &d->detok.stack, "detok", err);
  memcpy(r->codebooks, d->detok.codebooks, (size_t)(CODEBOOKS * r->cb_vocab * r->stack.h) * 2);
  if (s == FK_OK) s = fk_spectral_pack(&r->sp, d, err);
  return s;
}

/* ---- fk_run ------------------------------------------------------------------------------------ */

#define RCHECK(cond, code, fmt, ...) \
  FK_RETURN_ERROR_IF(cond, err, code, "fk_run(%s): " fmt, fk_program_name(prog), ##__VA_ARGS__)

static fk_status check_io(const void *rec, fk_program prog, const fk_io *io, int64_t *due, fk_error *err) {
  const fk_detok_rt *r = rec;
  const fk_stack_rt *t = &r->stack;
  *due = 0;
  if (prog == FK_PROG_DETOK_FLUSH) {
    *due = r->sp.frames == 0 ? 0 : FK_ISTFT_FLUSH;
    return fk_spectral_check_pcm(&r->sp, prog, io, *due, NULL, 0, NULL, err);
  }
  RCHECK(io->rows < 1 || io->rows > r->max_frames, FK_EINVAL,
         "io.rows = %lld: must be in 1..%lld (desc.detok.max_frames)", (long long)io->rows, (long long)r->max_frames);
  RCHECK(!io->codes, FK_EINVAL, "io.codes is NULL");
  for (int64_t i = 0; i < io->rows * CODEBOOKS; i++)
    RCHECK(io->codes[i] < 0 || io->codes[i] >= r->cb_vocab, FK_EINVAL,
           "io.codes[%lld] = %d (frame %lld, codebook %lld): must be in [0, %lld)", (long long)i, (int)io->codes[i],
           (long long)(i / CODEBOOKS), (long long)(i % CODEBOOKS), (long long)r->cb_vocab);
  RCHECK(t->pos + REPEAT * io->rows > t->max_pos, FK_ESTATE,
         "position %lld + %lld rows passes desc.detok.stack.max_pos = %lld (flush: a new stream)", (long long)t->pos,
         (long long)(REPEAT * io->rows), (long long)t->max_pos);
  *due = fk_spectral_due(&r->sp, REPEAT * io->rows);
  return fk_spectral_check_pcm(&r->sp, prog, io, *due, io->codes, (size_t)(io->rows * CODEBOOKS) * 4, "io.codes", err);
}

static void commit(void *rec, const fk_job *job, fk_io *io, int64_t due) {
  fk_detok_rt *r = rec;
  if (job->program == FK_PROG_DETOK) {
    r->stack.pos += REPEAT * job->io.rows;
    r->sp.frames += REPEAT * job->io.rows;
  } else { /* the flush leaf zeroed the ring; the stack restarts at position 0 */
    r->sp.frames = 0;
    fk_lfm2_reset(&r->stack);
  }
  io->pcm_count = due;
}

/* ---- state: the stack's image, then i64 STFT frames, the OLA ring; tail_in is a header word ----- */

static void reset(void *rec) {
  fk_detok_rt *r = rec;
  fk_lfm2_reset(&r->stack);
  fk_spectral_reset(&r->sp);
}

static void query(const void *rec, fk_state_info *info) {
  info->detok_frames = ((const fk_detok_rt *)rec)->sp.frames / REPEAT;
}

static void state_head(const void *rec, fk_state_head *h) {
  const fk_detok_rt *r = rec;
  h->tail_in = r->sp.tail_in;
  h->digest = fk_lfm2_digest(&r->stack, fk_fnv1a(h->digest, &r->cb_vocab, 8));
}

static size_t state_bytes(const void *rec) {
  return fk_lfm2_state_bytes(&((const fk_detok_rt *)rec)->stack) + 8 + FK_ISTFT_RING * 4;
}

static void state_save(const void *rec, unsigned char *img) {
  fk_detok_rt *r = (fk_detok_rt *)(uintptr_t)rec; /* the copy only reads it */
  img = fk_lfm2_state_copy(&r->stack, img, 1);
  memcpy(img, &r->sp.frames, 8);
  memcpy(img + 8, r->sp.ring, FK_ISTFT_RING * 4);
}

static const char *state_check(const void *rec, const unsigned char *img) {
  const fk_detok_rt *r = rec;
  int64_t pos = fk_lfm2_state_pos(img), frames;
  if (pos < 0 || pos > r->stack.max_pos) return "the detokenizer's position is outside 0..max_pos";
  memcpy(&frames, img + fk_lfm2_state_bytes(&r->stack), 8);
  if (frames != pos) return "the detokenizer's frame count differs from its position (6 rows per code frame)";
  return NULL;
}

static void state_load(void *rec, const unsigned char *img, const fk_state_head *h) {
  fk_detok_rt *r = rec;
  (void)h;
  img = fk_lfm2_state_copy(&r->stack, (unsigned char *)(uintptr_t)img, 0);
  memcpy(&r->sp.frames, img, 8);
  memcpy(r->sp.ring, img + 8, FK_ISTFT_RING * 4);
}

const fk_family fk_detok_family = {
  .bit = FK_PROGRAMS_DETOK,
  .bit_name = "FK_PROGRAMS_DETOK",
  .programs = { { FK_PROG_DETOK, "detok" }, { FK_PROG_DETOK_FLUSH, "detok_flush" } },
  .check_desc = check_desc,
  .roles = roles,
  .layout = layout,
  .pack = pack,
  .check_io = check_io,
  .commit = commit,
  .reset = reset,
  .query = query,
  .state_head = state_head,
  .state_bytes = state_bytes,
  .state_save = state_save,
  .state_check = state_check,
  .state_load = state_load,
};
