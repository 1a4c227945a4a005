/* runtime/fk_prog_lm.c: the LM family (FK_PROGRAMS_LM): a whole LFM2 language model (desc.lm)
 * from stamps: FK_PROG_LM_PREFILL (1..lm.max_rows prompt tokens) and FK_PROG_LM_DECODE (one):
 * the embedding gather, the stack (fk_lfm2.c), the last row's final norm, its logits (tied or
 * own head) and the next token (greedy argmax, or io.sampling's temperature/top-k draw); and
 * its sampler's seed. Its state is the stack's (position, carries, KV caches) and the sampler's
 * { seed, draws }.
 *   embed     rows split          final_norm   member 0's share of the last row
 *   logits    weight rows split   sample       member 0 (one token) */
#include <string.h>

#include "fk_prog_lm.h"

enum { LIMIT = 65536, MAX_VOCAB = 1 << 20 };

/* ---- readiness -------------------------------------------------------------------------------- */

#define MCHECK(cond, ...) FK_RETURN_ERROR_IF(cond, err, FK_EINVAL, "fk_plan_create: " __VA_ARGS__)

static fk_status check_desc(const fk_plan_desc *d, fk_error *err) {
  const fk_lm_desc *lm = &d->lm;
  fk_status s = fk_lfm2_check("lm", &lm->stack, d->quantize, err);
  if (s == FK_OK) s = fk_wmat_check(&lm->lm_head_q, d->quantize, lm->stack.hidden, "desc.lm.lm_head_q", err);
  if (s != FK_OK) return s;
  MCHECK(lm->vocab < 1 || lm->vocab > MAX_VOCAB, "desc.lm.vocab = %lld: must be in 1..%d", (long long)lm->vocab,
         MAX_VOCAB);
  MCHECK(lm->max_rows < 1 || lm->max_rows > LIMIT, "desc.lm.max_rows = %lld: must be in 1..%d",
         (long long)lm->max_rows, LIMIT);
  MCHECK(!lm->embed, "desc.lm.embed is NULL");
  return FK_OK;
}

static uint64_t roles(const fk_plan_desc *d) {
  return fk_quant_roles(fk_lfm2_roles(1) | FK_ROLE_BIT(R_EMBED) | FK_ROLE_BIT(R_LOGITS) | FK_ROLE_BIT(R_ARGMAX) |
                            FK_ROLE_BIT(R_TOPK),
                        fk_lfm2_formats(&d->lm.stack, d->quantize) |
                            fk_format_bit(fk_wmat_format(&d->lm.lm_head_q, d->quantize)));
}

/* ---- the steps around the stack ------------------------------------------------------------- */

static void st_embed(fk_plan *p, const fk_step *s, int m) {
  const fk_lm_rt *r = s->ctx;
  fk_lfm2_embed(p, &r->stack, m, r->embed, p->job.io.tokens, p->job.io.rows);
}

/* the last row's final norm, its logits, the next token */
static void st_final(fk_plan *p, const fk_step *s, int m) {
  const fk_lm_rt *r = s->ctx;
  fk_lfm2_norm(p, &r->stack, m, r->stack.final_norm, p->job.io.rows - 1, 1, r->stack.xn);
}

static void st_logits(fk_plan *p, const fk_step *s, int m) {
  const fk_lm_rt *r = s->ctx;
  int64_t h = r->stack.h;
  fk_gemv_job g = { R_LOGITS, r->lm_head, r->stack.xn, h, h, p->job.io.logits ? p->job.io.logits : r->logits,
                    NULL, NULL, r->vocab, 0, 0 };
  fk_gemv_run(p, m, &g, 1, r->vocab);
}

static void st_sample(fk_plan *p, const fk_step *s, int m) {
  fk_lm_rt *r = s->ctx;
  if (m != 0) return;
  const float *x = p->job.io.logits ? p->job.io.logits : r->logits;
  if (p->job.io.sampling) { /* temperature, top-k, softmax, a draw; the leaf commits the counter */
    fk_sample_topk_args a = { .x = x, .tok = &p->job.io.next, .state = r->rng, .scratch = r->sample_scratch,
                              .n = r->vocab, .top_k = p->job.io.sampling->top_k,
                              .temperature = p->job.io.sampling->temperature };
    p->leaf[R_TOPK].fn(&a);
  } else {
    fk_sample_argmax_args a = { .x = x, .tok = &p->job.io.next, .n = r->vocab };
    p->leaf[R_ARGMAX].fn(&a);
  }
}

static void list_steps(fk_step_list *l, void *rec, fk_program prog) {
  fk_lm_rt *r = rec;
  fk_step_add(l, st_embed, "embed", "rows", R_EMBED, r, -1);
  fk_lfm2_steps(l, &r->stack, prog == FK_PROG_LM_DECODE);
  fk_step_add(l, st_final, "final_norm", "rows", R_NORM, r, -1); /* the last row */
  fk_step_add(l, st_logits, "logits", "weight rows", fk_qrole(R_LOGITS, r->lm_head.fmt), r, -1);
  fk_step_add(l, st_sample, "sample", "member 0", R_ARGMAX, r, -1); /* R_TOPK with io.sampling */
}

static void *layout(fk_plan *p, const fk_plan_desc *d, fk_carver *c) {
  fk_lm_rt local, *r = fk_carve_record(c, sizeof *r, &local);
  fk_lfm2_shapes(&r->stack, &d->lm.stack, d->lm.max_rows, 1, d->quantize);
  r->vocab = d->lm.vocab;
  fk_lfm2_layout(&r->stack, p->threads, c);
  r->embed = fk_carve(c, (size_t)(r->vocab * r->stack.h) * 2);
  r->lm_head = fk_wmat_carve(c, fk_wmat_format(&d->lm.lm_head_q, d->quantize), r->vocab, r->stack.h);
  r->logits = fk_carve(c, (size_t)r->vocab * 4);
  r->sample_scratch = fk_carve(c, (size_t)r->vocab * 4);
  fk_program_steps(p, c, FK_PROG_LM_PREFILL, r, list_steps);
  fk_program_steps(p, c, FK_PROG_LM_DECODE, r, list_steps);
  return r;
}

static fk_status pack(void *rec, const fk_plan_desc *d, fk_error *err) {
  fk_lm_rt *r = rec;
  int64_t h = r->stack.h;
  fk_status s = fk_lfm2_pack(&r->stack, &d->lm.stack, "lm", err);
  memcpy(r->embed, d->lm.embed, (size_t)(r->vocab * h) * 2);
  if (s == FK_OK) s = fk_lfm2_head_pack(&r->lm_head, &d->lm, "lm", err);
  return s;
}

/* ---- fk_run ------------------------------------------------------------------------------------ */

#define RCHECK(cond, code, fmt, ...) \
  FK_RETURN_ERROR_IF(cond, err, code, "fk_run(%s): " fmt, fk_program_name(prog), ##__VA_ARGS__)

static fk_status check_io(const void *rec, fk_program prog, const fk_io *io, int64_t *due, fk_error *err) {
  const fk_lm_rt *r = rec;
  const fk_stack_rt *t = &r->stack;
  *due = 0;
  if (prog == FK_PROG_LM_DECODE)
    RCHECK(io->rows != 1, FK_EINVAL, "io.rows = %lld: decode runs exactly 1 token", (long long)io->rows);
  RCHECK(io->rows < 1 || io->rows > t->max_rows, FK_EINVAL, "io.rows = %lld: must be in 1..%lld (desc.lm.max_rows)",
         (long long)io->rows, (long long)t->max_rows);
  RCHECK(!io->tokens, FK_EINVAL, "io.tokens is NULL");
  for (int64_t i = 0; i < io->rows; i++)
    RCHECK(io->tokens[i] < 0 || io->tokens[i] >= r->vocab, FK_EINVAL, "io.tokens[%lld] = %d: must be in [0, %lld)",
           (long long)i, (int)io->tokens[i], (long long)r->vocab);
  RCHECK(t->pos + io->rows > t->max_pos, FK_ESTATE,
         "position %lld + %lld rows passes desc.lm.stack.max_pos = %lld (reset the state for a new sequence)",
         (long long)t->pos, (long long)io->rows, (long long)t->max_pos);
  if (io->sampling) {
    float temp = io->sampling->temperature;
    RCHECK(!(temp > 0.0f) || temp > 3.4e38f, FK_EINVAL, "io.sampling->temperature = %g: must be finite and > 0",
           (double)temp);
    RCHECK(io->sampling->top_k < 0, FK_EINVAL, "io.sampling->top_k = %lld: must be >= 0 (0: no top-k)",
           (long long)io->sampling->top_k);
  }
  if (io->logits)
    RCHECK(fk_overlap(io->logits, (size_t)r->vocab * 4, io, sizeof *io) ||
             fk_overlap(io->logits, (size_t)r->vocab * 4, io->tokens, (size_t)io->rows * 4),
           FK_EINVAL, "io.logits overlaps the fk_io or io.tokens");
  return FK_OK;
}

static void commit(void *rec, const fk_job *job, fk_io *io, int64_t due) {
  (void)due;
  ((fk_lm_rt *)rec)->stack.pos += job->io.rows;
  io->next = job->io.next;
}

/* ---- state: the stack's image, then u64 seed, u64 draws ------------------------------------------ */

static void reset(void *rec) {
  fk_lm_rt *r = rec;
  fk_lfm2_reset(&r->stack);
  r->rng[1] = 0; /* the seed stays */
}

static void query(const void *rec, fk_state_info *info) {
  const fk_lm_rt *r = rec;
  info->lm_pos = r->stack.pos;
  info->seed = r->rng[0];
  info->draws = r->rng[1];
}

static void state_head(const void *rec, fk_state_head *h) {
  const fk_lm_rt *r = rec;
  h->digest = fk_lfm2_digest(&r->stack, fk_fnv1a(h->digest, &r->vocab, 8));
}

static size_t state_bytes(const void *rec) { return fk_lfm2_state_bytes(&((const fk_lm_rt *)rec)->stack) + 16; }

static void state_save(const void *rec, unsigned char *img) {
  fk_lm_rt *r = (fk_lm_rt *)(uintptr_t)rec; /* the copy only reads it */
  img = fk_lfm2_state_copy(&r->stack, img, 1);
  memcpy(img, r->rng, 16);
}

static const char *state_check(const void *rec, const unsigned char *img) {
  const fk_lm_rt *r = rec;
  int64_t pos = fk_lfm2_state_pos(img);
  return pos < 0 || pos > r->stack.max_pos ? "the LM's position is outside 0..max_pos" : NULL;
}

static void state_load(void *rec, const unsigned char *img, const fk_state_head *h) {
  fk_lm_rt *r = rec;
  (void)h;
  img = fk_lfm2_state_copy(&r->stack, (unsigned char *)(uintptr_t)img, 0);
  memcpy(r->rng, img, 16);
}

/* ---- the sampler's seed -------------------------------------------------------------------------- */

static void seed(void *rec, uint64_t s) {
  fk_lm_rt *r = rec;
  r->rng[0] = s;
  r->rng[1] = 0;
}

const fk_family fk_lm_family = {
  .bit = FK_PROGRAMS_LM,
  .bit_name = "FK_PROGRAMS_LM",
  .programs = { { FK_PROG_LM_PREFILL, "lm_prefill" }, { FK_PROG_LM_DECODE, "lm_decode" } },
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
  .seed = seed,
};
