/* runtime/fk_prog_tail.c: the tail family (FK_PROGRAMS_TAIL): the LFM2.5 detokenizer's spectral
 * tail on the caller's features: FK_PROG_TAIL (1..max_frames frames: head, then the ISTFT frames
 * -> PCM) and FK_PROG_TAIL_FLUSH (the stream's last 480 samples). Its state is the overlap-add
 * ring and the frame cursor (fk_spectral.h). */
#include <string.h>

#include "fk_spectral.h"

typedef struct tail_rt {
  fk_spectral sp;
} tail_rt;

/* ---- readiness -------------------------------------------------------------------------------- */

static fk_status check_desc(const fk_plan_desc *d, fk_error *err) { return fk_spectral_check_desc(d, 1, err); }

static uint64_t roles(const fk_plan_desc *d) {
  return fk_quant_roles(fk_spectral_roles(d), fk_format_bit(d->quantize));
}

static void ph_head(fk_plan *p, const fk_step *st, int m) {
  const tail_rt *r = st->ctx;
  fk_spectral_head(p, &r->sp, m, p->job.io.feat, p->job.io.ldfeat, p->job.io.rows);
}

static void ph_frames(fk_plan *p, const fk_step *st, int m) {
  const tail_rt *r = st->ctx;
  if (m == 0) fk_spectral_frames(p, &r->sp, p->job.io.rows); /* the ring is a recurrence over frames */
}

static void ph_flush(fk_plan *p, const fk_step *st, int m) {
  const tail_rt *r = st->ctx;
  if (m == 0) fk_spectral_flush(p, &r->sp);
}

static void list_steps(fk_step_list *l, void *rec, fk_program prog) {
  tail_rt *r = rec;
  if (prog == FK_PROG_TAIL) {
    fk_step_add(l, ph_head, "head", "weight rows", fk_qrole(R_HEAD, r->sp.head_w.fmt), r, -1);
    fk_step_add(l, ph_frames, "frames", "member 0", r->sp.frame, r, -1);
  } else {
    fk_step_add(l, ph_flush, "flush", "member 0", r->sp.flush, r, -1);
  }
}

static void *layout(fk_plan *p, const fk_plan_desc *d, fk_carver *c) {
  tail_rt local, *r = fk_carve_record(c, sizeof *r, &local);
  fk_spectral_layout(&r->sp, d, d->max_frames, c);
  fk_program_steps(p, c, FK_PROG_TAIL, r, list_steps);
  fk_program_steps(p, c, FK_PROG_TAIL_FLUSH, r, list_steps);
  return r;
}

static fk_status pack(void *rec, const fk_plan_desc *d, fk_error *err) {
  return fk_spectral_pack(&((tail_rt *)rec)->sp, d, err);
}

/* ---- fk_run ------------------------------------------------------------------------------------ */

#define RUN_CHECK(cond, fmt, ...) \
  FK_RETURN_ERROR_IF(cond, err, FK_EINVAL, "fk_run(%s): " fmt, fk_program_name(prog), ##__VA_ARGS__)

static fk_status check_io(const void *rec, fk_program prog, const fk_io *io, int64_t *due, fk_error *err) {
  const fk_spectral *sp = &((const tail_rt *)rec)->sp;
  *due = 0;
  if (prog == FK_PROG_TAIL) {
    RUN_CHECK(io->rows < 1 || io->rows > sp->max_frames, "io.rows = %lld: must be in 1..%lld (desc.max_frames)",
              (long long)io->rows, (long long)sp->max_frames);
    RUN_CHECK(!io->feat, "io.feat is NULL");
    RUN_CHECK(io->ldfeat < sp->tail_in, "io.ldfeat = %lld: must be >= tail_in = %lld", (long long)io->ldfeat,
              (long long)sp->tail_in);
    RUN_CHECK(fk_extent(io->rows, io->ldfeat, sp->tail_in, 4) == 0,
              "io.ldfeat = %lld: %lld rows of it overflow the address space", (long long)io->ldfeat,
              (long long)io->rows);
    *due = fk_spectral_due(sp, io->rows);
    return fk_spectral_check_pcm(sp, prog, io, *due, io->feat, fk_extent(io->rows, io->ldfeat, sp->tail_in, 4),
                                 "io.feat", err);
  }
  FK_RETURN_ERROR_IF(sp->frames == 1, err, FK_ESTATE,
                     "fk_run(%s): the stream has 1 frame; the flush leaf needs >= 2 (send another frame first)",
                     fk_program_name(prog));
  *due = sp->frames == 0 ? 0 : FK_ISTFT_FLUSH;
  return fk_spectral_check_pcm(sp, prog, io, *due, NULL, 0, NULL, err);
}

/* A flush of an empty stream has nothing to run. */
static int idle(const void *rec, fk_program prog) {
  return prog == FK_PROG_TAIL_FLUSH && ((const tail_rt *)rec)->sp.frames == 0;
}

static void commit(void *rec, const fk_job *job, fk_io *io, int64_t due) {
  fk_spectral *sp = &((tail_rt *)rec)->sp;
  if (job->program == FK_PROG_TAIL) sp->frames += job->io.rows;
  else sp->frames = 0; /* the flush leaf has zeroed the ring */
  io->pcm_count = due;
}

/* ---- state: the image holds the ring; tail_in and frames are header words ------------------------ */

static void reset(void *rec) { fk_spectral_reset(&((tail_rt *)rec)->sp); }

static void query(const void *rec, fk_state_info *info) { info->frames = ((const tail_rt *)rec)->sp.frames; }

static void state_head(const void *rec, fk_state_head *h) {
  const tail_rt *r = rec;
  h->tail_in = r->sp.tail_in;
  h->frames = r->sp.frames;
}

static size_t state_bytes(const void *rec) {
  (void)rec;
  return FK_ISTFT_RING * 4;
}

static void state_save(const void *rec, unsigned char *img) {
  memcpy(img, ((const tail_rt *)rec)->sp.ring, FK_ISTFT_RING * 4);
}

static const char *state_check(const void *rec, const unsigned char *img) {
  (void)rec, (void)img;
  return NULL;
}

static void state_load(void *rec, const unsigned char *img, const fk_state_head *h) {
  tail_rt *r = rec;
  memcpy(r->sp.ring, img, FK_ISTFT_RING * 4);
  r->sp.frames = h->frames;
}

const fk_family fk_tail_family = {
  .bit = FK_PROGRAMS_TAIL,
  .bit_name = "FK_PROGRAMS_TAIL",
  .programs = { { FK_PROG_TAIL, "tail" }, { FK_PROG_TAIL_FLUSH, "tail_flush" } },
  .check_desc = check_desc,
  .roles = roles,
  .layout = layout,
  .pack = pack,
  .check_io = check_io,
  .idle = idle,
  .commit = commit,
  .reset = reset,
  .query = query,
  .state_head = state_head,
  .state_bytes = state_bytes,
  .state_save = state_save,
  .state_check = state_check,
  .state_load = state_load,
};
