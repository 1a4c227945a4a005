/* runtime/fk_prog_audio.c: the audio family (FK_PROGRAMS_AUDIO): LFM2.5-Audio's generation
 * (liquid-audio 1.3.0's LFM2AudioModel: generate_sequential, generate_interleaved) from stamps.
 * FK_PROG_AUDIO_PREFILL: the prompt's embeddings, the backbone (fk_lfm2.c), the last row's final
 * norm, text logits and a token. FK_PROG_AUDIO_STEP: the last output fed back (a token's
 * embedding, or the codebook sum of a frame), the backbone's one row, its final norm, then the
 * text branch (logits, a token) or the audio branch (depth_linear, then per codebook: feedback,
 * the Depthformer's layers at position c, the head's norm and logits, a code). The branches are
 * gated steps (fk_step.gate): only the modality's runs, barriers included. The modality state
 * machine runs in commit (flashkern.h documents it); its state, the backbone's and the sampler's
 * are the family's state. The Depthformer's KV cache restarts every frame: it is not state.
 *   embed, feed           rows / member 0         final_norm, cb_norm  member 0's share of one row
 *   logits, depth_linear  weight rows split       sample, cb_sample    member 0 (one draw)
 *   cb_feed               member 0 (one row; sets the Depthformer's position to c)
 * Codebooks run in order: codebook c's feedback is codebook c-1's code. */
#include <stdio.h>
#include <string.h>

#include "fk_prog_audio.h"

enum { LIMIT = 65536, MAX_VOCAB = 1 << 20, END_CODE = 2048, TOK_IM_END = 7, TOK_AUDIO_START = 128,
       TOK_TEXT_END = 130, MAX_TURN = 1 << 30 };

/* ---- readiness -------------------------------------------------------------------------------- */

#define MCHECK(cond, ...) FK_RETURN_ERROR_IF(cond, err, FK_EINVAL, "fk_plan_create: " __VA_ARGS__)

static fk_status check_desc(const fk_plan_desc *d, fk_error *err) {
  const fk_audio_desc *a = &d->audio;
  fk_status s = fk_lfm2_check("audio.lm", &a->lm.stack, d->quantize, err);
  if (s == FK_OK) s = fk_depth_check("audio.depth", &a->depth.stack, d->quantize, err);
  if (s == FK_OK)
    s = fk_wmat_check(&a->lm.lm_head_q, d->quantize, a->lm.stack.hidden, "desc.audio.lm.lm_head_q", err);
  if (s == FK_OK) s = fk_wmat_check(NULL, d->quantize, a->lm.stack.hidden, "desc.audio.depth.linear", err);
  if (s == FK_OK) s = fk_wmat_check(NULL, d->quantize, a->depth.stack.hidden, "desc.audio.depth.head", err);
  if (s != FK_OK) return s;
  MCHECK(a->lm.vocab <= TOK_TEXT_END || a->lm.vocab > MAX_VOCAB,
         "desc.audio.lm.vocab = %lld: must be in %d..%d (the loops' tokens 7, 128 and 130 are ids)",
         (long long)a->lm.vocab, TOK_TEXT_END + 1, MAX_VOCAB);
  MCHECK(a->lm.max_rows < 1 || a->lm.max_rows > LIMIT, "desc.audio.lm.max_rows = %lld: must be in 1..%d",
         (long long)a->lm.max_rows, LIMIT);
  MCHECK(!a->lm.embed, "desc.audio.lm.embed is NULL");
  MCHECK(a->depth.stack.max_pos < FK_CODEBOOKS, "desc.audio.depth.stack.max_pos = %lld: must be >= %d (one per codebook)",
         (long long)a->depth.stack.max_pos, FK_CODEBOOKS);
  MCHECK(a->depth.audio_vocab <= END_CODE || a->depth.audio_vocab > LIMIT,
         "desc.audio.depth.audio_vocab = %lld: must be in %d..%d (code %d ends the audio)",
         (long long)a->depth.audio_vocab, END_CODE + 1, LIMIT, END_CODE);
  MCHECK(!a->depth.linear, "desc.audio.depth.linear is NULL");
  MCHECK(!a->depth.bias, "desc.audio.depth.bias is NULL");
  for (int c = 0; c < FK_CODEBOOKS; c++) {
    MCHECK(!a->depth.embed[c], "desc.audio.depth.embed[%d] is NULL", c);
    MCHECK(!a->depth.norm[c], "desc.audio.depth.norm[%d] is NULL", c);
  }
  MCHECK(!a->audio_embed, "desc.audio.audio_embed is NULL");
  MCHECK(a->n_text < 1 || a->n_text > MAX_TURN, "desc.audio.n_text = %lld: must be in 1..%d", (long long)a->n_text,
         MAX_TURN);
  MCHECK(a->n_audio < 1 || a->n_audio > MAX_TURN, "desc.audio.n_audio = %lld: must be in 1..%d",
         (long long)a->n_audio, MAX_TURN);
  return FK_OK;
}

static uint64_t roles(const fk_plan_desc *d) {
  return fk_quant_roles(fk_lfm2_roles(1) | FK_ROLE_BIT(R_EMBED) | FK_ROLE_BIT(R_LOGITS) | FK_ROLE_BIT(R_ARGMAX) |
                            FK_ROLE_BIT(R_TOPK) | FK_ROLE_BIT(R_HEAD) | FK_ROLE_BIT(R_CBSUM) |
                            FK_ROLE_BIT(R_NORM_ONCE) | FK_ROLE_BIT(R_NORM_ADD_ONCE) | FK_ROLE_BIT(R_QKPREP32) |
                            FK_ROLE_BIT(R_ATTN_DEC32),
                        /* the stacks, the text head, and depth_linear and the codebook heads (quantize) */
                        fk_lfm2_formats(&d->audio.lm.stack, d->quantize) |
                            fk_lfm2_formats(&d->audio.depth.stack, d->quantize) |
                            fk_format_bit(fk_wmat_format(&d->audio.lm.lm_head_q, d->quantize)) |
                            fk_format_bit(d->quantize));
}

/* ---- steps ------------------------------------------------------------------------------------ */

#define REC ((fk_audio_rt *)s->ctx)
#define CB ((const fk_audio_cb *)s->ctx)

static const int32_t zero_id = 0;

/* the gated branches of FK_PROG_AUDIO_STEP (fk_step.gate): from the modality and the last output */
enum { G_TEXT, G_AUDIO, G_FEED_TOKEN, G_FEED_FRAME };

/* prefill: the prompt's rows */
static void st_embed(fk_plan *p, const fk_step *s, int m) {
  const fk_audio_rt *r = REC;
  fk_lfm2_embed(p, &r->stack, m, r->embed, p->job.io.tokens, p->job.io.rows);
}

/* a step after a text token: its embedding (one row: member 0's share) */
static void st_feed_text(fk_plan *p, const fk_step *s, int m) {
  const fk_audio_rt *r = REC;
  fk_lfm2_embed(p, &r->stack, m, r->embed, r->last, 1);
}

/* a step after a frame: audio_embedding(codes + c * avocab).sum(0) */
static void st_feed_frame(fk_plan *p, const fk_step *s, int m) {
  const fk_audio_rt *r = REC;
  if (m != 0) return;
  int64_t h = r->stack.h;
  fk_embed_codebook_sum_bf16_args a = { .codes = r->last, .table = r->aembed, .y = r->stack.res, .d = h, .m = 1,
                                        .vocab = r->avocab, .ld_codes = FK_AUDIO_CB, .cb_stride = 1, .ld_table = h,
                                        .ldy = h };
  p->leaf[R_CBSUM].fn(&a);
}

static void st_final(fk_plan *p, const fk_step *s, int m) {
  const fk_audio_rt *r = REC;
  fk_lfm2_norm(p, &r->stack, m, r->stack.final_norm, p->job.io.rows - 1, 1, r->stack.xn);
}

static float *text_logits(const fk_plan *p, const fk_audio_rt *r) {
  return p->job.io.logits ? p->job.io.logits : r->logits;
}

static float *frame_logits(const fk_plan *p, const fk_audio_rt *r) {
  return p->job.io.frame_logits ? p->job.io.frame_logits : r->cb_logits;
}

static void st_text_logits(fk_plan *p, const fk_step *s, int m) {
  const fk_audio_rt *r = REC;
  int64_t h = r->stack.h;
  fk_gemv_job g = { R_LOGITS, r->lm_head, r->stack.xn, h, h, text_logits(p, r), NULL, NULL, r->vocab, 0, 0 };
  fk_gemv_run(p, m, &g, 1, r->vocab);
}

/* One draw over n logits: greedy (argmax, no draw) without sampling or with top_k 1, as the
 * reference's samplers; else temperature, top-k, softmax and a draw that commits the counter. */
static void draw(fk_plan *p, fk_audio_rt *r, const float *x, int64_t n, const fk_sampling *smp, int32_t *tok) {
  if (smp && smp->top_k != 1) {
    fk_sample_topk_args a = { .x = x, .tok = tok, .state = r->rng, .scratch = r->scratch, .n = n,
                              .top_k = smp->top_k, .temperature = smp->temperature };
    p->leaf[R_TOPK].fn(&a);
  } else {
    fk_sample_argmax_args a = { .x = x, .tok = tok, .n = n };
    p->leaf[R_ARGMAX].fn(&a);
  }
}

static void st_text_sample(fk_plan *p, const fk_step *s, int m) {
  fk_audio_rt *r = REC;
  if (m != 0) return;
  draw(p, r, text_logits(p, r), r->vocab, p->job.io.sampling, &r->drawn[0]);
  r->fed[0] = p->job.io.force ? p->job.io.force[0] : r->drawn[0];
}

static void st_depth_linear(fk_plan *p, const fk_step *s, int m) {
  const fk_audio_rt *r = REC;
  int64_t h = r->stack.h, n = FK_AUDIO_CB * r->dim;
  fk_gemv_job g = { R_HEAD, r->dlin, r->stack.xn, h, h, r->d, NULL, r->dbias, n, 0, 0 };
  fk_gemv_run(p, m, &g, 1, n);
}

/* codebook c's input row: the feedback embedding of code c-1 (zeros for c = 0) into the
 * Depthformer's residual row; its first norm adds depth_linear's row c (fk_stack_rt.in_x) */
static void st_cb_feed(fk_plan *p, const fk_step *s, int m) {
  fk_audio_rt *r = CB->r;
  int c = CB->c;
  if (m != 0) return;
  int64_t dim = r->dim;
  r->depth.pos = c;
  fk_embed_gather_bf16_args a = { .ids = c ? &r->fed[c - 1] : &zero_id, .table = c ? r->cb_embed[c - 1] : r->zero,
                                  .y = r->depth.res, .d = dim, .m = 1, .ld_table = dim, .ldy = dim };
  p->leaf[R_EMBED].fn(&a);
}

static void st_cb_norm(fk_plan *p, const fk_step *s, int m) {
  const fk_audio_rt *r = CB->r;
  fk_lfm2_norm(p, &r->depth, m, r->cb_norm[CB->c], 0, 1, r->depth.xn);
}

static void st_cb_logits(fk_plan *p, const fk_step *s, int m) {
  const fk_audio_rt *r = CB->r;
  int64_t dim = r->dim;
  fk_gemv_job g = { R_LOGITS, r->cb_head[CB->c], r->depth.xn, dim, dim, frame_logits(p, r) + CB->c * r->avocab,
                    NULL, NULL, r->avocab, 0, 0 };
  fk_gemv_run(p, m, &g, 1, r->avocab);
}

static void st_cb_sample(fk_plan *p, const fk_step *s, int m) {
  fk_audio_rt *r = CB->r;
  int c = CB->c;
  if (m != 0) return;
  draw(p, r, frame_logits(p, r) + c * r->avocab, r->avocab, p->job.io.audio_sampling, &r->drawn[c]);
  r->fed[c] = p->job.io.force ? p->job.io.force[c] : r->drawn[c];
}

static void list_steps(fk_step_list *l, void *rec, fk_program prog) {
  fk_audio_rt *r = rec;
  int step = prog == FK_PROG_AUDIO_STEP;
  if (!step) {
    fk_step_add(l, st_embed, "embed", "rows", R_EMBED, r, -1);
  } else {
    l->gate = G_FEED_TOKEN;
    fk_step_add(l, st_feed_text, "feed_token", "member 0", R_EMBED, r, -1);
    l->gate = G_FEED_FRAME;
    fk_step_add(l, st_feed_frame, "feed_frame", "member 0", R_CBSUM, r, -1);
    l->gate = -1;
  }
  fk_lfm2_steps(l, &r->stack, step);
  fk_step_add(l, st_final, "final_norm", "rows", R_NORM, r, -1); /* the last row */
  if (step) l->gate = G_TEXT;
  fk_step_add(l, st_text_logits, "logits", "weight rows", fk_qrole(R_LOGITS, r->lm_head.fmt), r, -1);
  fk_step_add(l, st_text_sample, "sample", "member 0", R_ARGMAX, r, -1); /* R_TOPK with io.sampling */
  if (step) {
    l->gate = G_AUDIO;
    fk_step_add(l, st_depth_linear, "depth_linear", "weight rows", fk_qrole(R_HEAD, r->dlin.fmt), r, -1);
    for (int c = 0; c < FK_AUDIO_CB; c++) {
      fk_step_add(l, st_cb_feed, "cb_feed", "member 0", R_EMBED, &r->cb[c], -1);
      fk_lfm2_steps(l, &r->depth, 1);
      fk_step_add(l, st_cb_norm, "cb_norm", "rows", R_NORM_ONCE, &r->cb[c], -1);
      fk_step_add(l, st_cb_logits, "cb_logits", "weight rows", fk_qrole(R_LOGITS, r->cb_head[c].fmt), &r->cb[c], -1);
      fk_step_add(l, st_cb_sample, "cb_sample", "member 0", R_ARGMAX, &r->cb[c], -1);
    }
    l->gate = -1;
  }
}

static uint32_t gates(const void *rec, fk_program prog) {
  const fk_audio_rt *r = rec;
  (void)prog;
  return 1u << (r->modality == FK_AUDIO_TEXT ? G_TEXT : G_AUDIO) |
         1u << (r->last_kind == FK_AUDIO_OUT_TEXT ? G_FEED_TOKEN : G_FEED_FRAME);
}

static void *layout(fk_plan *p, const fk_plan_desc *d, fk_carver *c) {
  const fk_audio_desc *a = &d->audio;
  fk_audio_rt local, *r = fk_carve_record(c, sizeof *r, &local);
  fk_lfm2_shapes(&r->stack, &a->lm.stack, a->lm.max_rows, 1, d->quantize);
  fk_depth_shapes(&r->depth, &a->depth.stack, d->quantize);
  r->vocab = a->lm.vocab;
  r->avocab = a->depth.audio_vocab;
  r->dim = a->depth.stack.hidden;
  r->n_text = a->n_text;
  r->n_audio = a->n_audio;
  int64_t h = r->stack.h, dim = r->dim, nmax = r->vocab > r->avocab ? r->vocab : r->avocab;
  fk_lfm2_layout(&r->stack, p->threads, c);
  fk_lfm2_layout(&r->depth, p->threads, c);
  r->embed = fk_carve(c, (size_t)(r->vocab * h) * 2);
  r->lm_head = fk_wmat_carve(c, fk_wmat_format(&a->lm.lm_head_q, d->quantize), r->vocab, h);
  r->aembed = fk_carve(c, (size_t)(FK_AUDIO_CB * r->avocab * h) * 2);
  r->dlin = fk_wmat_carve(c, d->quantize, FK_AUDIO_CB * dim, h);
  r->dbias = fk_carve(c, (size_t)(FK_AUDIO_CB * dim) * 4);
  r->d = fk_carve(c, (size_t)(FK_AUDIO_CB * dim) * 4);
  r->depth.in_x = r->d;
  for (int k = 0; k < FK_AUDIO_CB; k++) {
    r->cb_embed[k] = fk_carve(c, (size_t)(r->avocab * dim) * 2);
    r->cb_norm[k] = fk_carve(c, (size_t)dim * 2);
    r->cb_head[k] = fk_wmat_carve(c, d->quantize, r->avocab, dim);
    r->cb[k] = (fk_audio_cb){ r, k };
  }
  r->zero = fk_carve(c, (size_t)dim * 2);
  r->logits = fk_carve(c, (size_t)r->vocab * 4);
  r->cb_logits = fk_carve(c, (size_t)(FK_AUDIO_CB * r->avocab) * 4);
  r->scratch = fk_carve(c, (size_t)nmax * 4);
  fk_program_steps(p, c, FK_PROG_AUDIO_PREFILL, r, list_steps);
  fk_program_steps(p, c, FK_PROG_AUDIO_STEP, r, list_steps);
  return r;
}

static fk_status pack(void *rec, const fk_plan_desc *d, fk_error *err) {
  fk_audio_rt *r = rec;
  const fk_audio_desc *a = &d->audio;
  int64_t h = r->stack.h, dim = r->dim, n = FK_AUDIO_CB * dim;
  fk_status s = fk_lfm2_pack(&r->stack, &a->lm.stack, "audio.lm", err);
  if (s == FK_OK) s = fk_lfm2_pack(&r->depth, &a->depth.stack, "audio.depth", err);
  memcpy(r->embed, a->lm.embed, (size_t)(r->vocab * h) * 2);
  memcpy(r->aembed, a->audio_embed, (size_t)(FK_AUDIO_CB * r->avocab * h) * 2);
  if (s == FK_OK) s = fk_lfm2_head_pack(&r->lm_head, &a->lm, "audio.lm", err);
  if (s == FK_OK) s = fk_wmat_pack(&r->dlin, a->depth.linear, NULL, n, h, "desc.audio.depth.linear", err);
  memcpy(r->dbias, a->depth.bias, (size_t)n * 4);
  for (int c = 0; c < FK_AUDIO_CB; c++) {
    const uint16_t *head = a->depth.head[c] ? a->depth.head[c] : a->depth.embed[c];
    memcpy(r->cb_embed[c], a->depth.embed[c], (size_t)(r->avocab * dim) * 2);
    memcpy(r->cb_norm[c], a->depth.norm[c], (size_t)dim * 2);
    char what[64];
    snprintf(what, sizeof what, "desc.audio.depth.%s[%d]", a->depth.head[c] ? "head" : "embed", c);
    if (s == FK_OK) s = fk_wmat_pack(&r->cb_head[c], head, NULL, r->avocab, dim, what, err);
  }
  memset(r->zero, 0, (size_t)dim * 2);
  return s;
}

/* ---- fk_run ------------------------------------------------------------------------------------ */

#define RCHECK(cond, code, fmt, ...) \
  FK_RETURN_ERROR_IF(cond, err, code, "fk_run(%s): " fmt, fk_program_name(prog), ##__VA_ARGS__)

static fk_status check_sampling(fk_program prog, const char *name, const fk_sampling *smp, fk_error *err) {
  if (!smp) return FK_OK;
  RCHECK(!(smp->temperature > 0.0f) || smp->temperature > 3.4e38f, FK_EINVAL,
         "io.%s->temperature = %g: must be finite and > 0 (NULL: greedy)", name, (double)smp->temperature);
  RCHECK(smp->top_k < 0, FK_EINVAL, "io.%s->top_k = %lld: must be >= 0 (0: no top-k, 1: greedy)", name,
         (long long)smp->top_k);
  return FK_OK;
}

static fk_status check_io(const void *rec, fk_program prog, const fk_io *io, int64_t *due, fk_error *err) {
  const fk_audio_rt *r = rec;
  const fk_stack_rt *t = &r->stack;
  int prefill = prog == FK_PROG_AUDIO_PREFILL;
  *due = 0;
  if (prefill) {
    RCHECK(io->rows < 1 || io->rows > t->max_rows, FK_EINVAL,
           "io.rows = %lld: must be in 1..%lld (desc.audio.lm.max_rows)", (long long)io->rows, (long long)t->max_rows);
    RCHECK(!io->tokens, FK_EINVAL, "io.tokens is NULL");
    for (int64_t i = 0; i < io->rows; i++)
      RCHECK(io->tokens[i] < 0 || io->tokens[i] >= r->vocab, FK_EINVAL, "io.tokens[%lld] = %d: must be in [0, %lld)",
             (long long)i, (int)io->tokens[i], (long long)r->vocab);
    RCHECK(io->loop != FK_AUDIO_SEQUENTIAL && io->loop != FK_AUDIO_INTERLEAVED, FK_EINVAL,
           "io.loop = %d: must be FK_AUDIO_SEQUENTIAL (0) or FK_AUDIO_INTERLEAVED (1)", (int)io->loop);
  } else {
    RCHECK(io->rows != 1, FK_EINVAL, "io.rows = %lld: a step runs exactly 1 row", (long long)io->rows);
    RCHECK(r->turn == 0, FK_ESTATE, "no turn runs: FK_PROG_AUDIO_PREFILL starts one");
    RCHECK(r->turn == 2, FK_ESTATE, "the turn ended (<|im_end|>): FK_PROG_AUDIO_PREFILL starts the next");
  }
  RCHECK(t->pos + io->rows > t->max_pos, FK_ESTATE,
         "position %lld + %lld rows passes desc.audio.lm.stack.max_pos = %lld (reset the state for a new sequence)",
         (long long)t->pos, (long long)io->rows, (long long)t->max_pos);
  fk_status s = check_sampling(prog, "sampling", io->sampling, err);
  if (s == FK_OK) s = check_sampling(prog, "audio_sampling", io->audio_sampling, err);
  if (s != FK_OK) return s;
  int text = prefill || r->modality == FK_AUDIO_TEXT;
  if (io->force) {
    if (text) {
      RCHECK(io->force[0] < 0 || io->force[0] >= r->vocab, FK_EINVAL,
             "io.force[0] = %d: a text step's token must be in [0, %lld)", (int)io->force[0], (long long)r->vocab);
    } else {
      for (int c = 0; c < FK_AUDIO_CB; c++)
        RCHECK(io->force[c] < 0 || io->force[c] >= r->avocab, FK_EINVAL,
               "io.force[%d] = %d: a frame's codes must be in [0, %lld)", c, (int)io->force[c], (long long)r->avocab);
    }
  }
  if (io->logits)
    RCHECK(fk_overlap(io->logits, (size_t)r->vocab * 4, io, sizeof *io), FK_EINVAL, "io.logits overlaps the fk_io");
  if (io->frame_logits)
    RCHECK(fk_overlap(io->frame_logits, (size_t)(FK_AUDIO_CB * r->avocab) * 4, io, sizeof *io) ||
             (io->logits && fk_overlap(io->frame_logits, (size_t)(FK_AUDIO_CB * r->avocab) * 4, io->logits,
                                       (size_t)r->vocab * 4)),
           FK_EINVAL, "io.frame_logits overlaps the fk_io or io.logits");
  return FK_OK;
}

/* The modality state machine (flashkern.h, FK_PROG_AUDIO_STEP), after the run's last barrier. */
static void commit(void *rec, const fk_job *job, fk_io *io, int64_t due) {
  fk_audio_rt *r = rec;
  int prefill = job->program == FK_PROG_AUDIO_PREFILL;
  (void)due;
  r->stack.pos += job->io.rows;
  if (prefill) {
    r->turn = 1;
    r->loop = job->io.loop;
    r->modality = FK_AUDIO_TEXT;
    r->left = (int32_t)r->n_text;
    r->text_done = 0;
  }
  int inter = r->loop == FK_AUDIO_INTERLEAVED;
  if (inter) r->left--; /* every step, the prefill's included */
  memcpy(io->drawn, r->drawn, sizeof io->drawn);
  if (r->modality == FK_AUDIO_TEXT) {
    int32_t tok = r->fed[0];
    io->next = tok;
    io->out = FK_AUDIO_OUT_TEXT;
    r->last_kind = FK_AUDIO_OUT_TEXT;
    memset(r->last, 0, sizeof r->last);
    r->last[0] = tok;
    if (tok == TOK_IM_END) {
      r->turn = 2;
      io->out = FK_AUDIO_OUT_END;
    } else if (!inter) {
      if (tok == TOK_AUDIO_START) r->modality = FK_AUDIO_AUDIO;
    } else {
      if (tok == TOK_TEXT_END) r->text_done = 1;
      if (r->left == 0 || r->text_done) {
        r->modality = FK_AUDIO_AUDIO;
        r->left = (int32_t)r->n_audio;
      }
    }
  } else {
    if (inter && r->left == 0 && !r->text_done) {
      r->modality = FK_AUDIO_TEXT;
      r->left = (int32_t)r->n_text;
    }
    memcpy(r->last, r->fed, sizeof r->last);
    if (r->last[0] == END_CODE) {
      for (int c = 0; c < FK_AUDIO_CB; c++) r->last[c] = END_CODE;
      r->modality = FK_AUDIO_TEXT;
    }
    r->last_kind = FK_AUDIO_OUT_FRAME;
    memcpy(io->frame, r->last, sizeof io->frame);
    io->out = FK_AUDIO_OUT_FRAME;
  }
  io->modality = r->modality;
}

/* ---- state: the backbone's image, u64 seed, u64 draws, i32 turn, loop, modality, left,
 * text_done, last kind, last[8] ----------------------------------------------------------------- */

enum { MACHINE = 16 + 6 * 4 + FK_AUDIO_CB * 4 };

static void reset(void *rec) {
  fk_audio_rt *r = rec;
  fk_lfm2_reset(&r->stack);
  fk_lfm2_reset(&r->depth);
  r->rng[1] = 0; /* the seed stays */
  r->turn = r->loop = r->left = r->text_done = 0;
  r->modality = FK_AUDIO_TEXT;
  r->last_kind = FK_AUDIO_OUT_TEXT;
  memset(r->last, 0, sizeof r->last);
}

static void query(const void *rec, fk_state_info *info) {
  const fk_audio_rt *r = rec;
  info->audio_pos = r->stack.pos;
  info->audio_modality = r->modality;
  info->audio_turn = r->turn;
  info->seed = r->rng[0];
  info->draws = r->rng[1];
}

static void state_head(const void *rec, fk_state_head *h) {
  const fk_audio_rt *r = rec;
  int64_t v[5] = { r->vocab, r->avocab, r->dim, r->n_text, r->n_audio };
  h->digest = fk_lfm2_digest(&r->depth, fk_lfm2_digest(&r->stack, fk_fnv1a(h->digest, v, sizeof v)));
}

static size_t state_bytes(const void *rec) { return fk_lfm2_state_bytes(&((const fk_audio_rt *)rec)->stack) + MACHINE; }

static void machine_copy(fk_audio_rt *r, unsigned char *img, int save) {
  int32_t w[6] = { r->turn, r->loop, r->modality, r->left, r->text_done, r->last_kind };
  if (save) {
    memcpy(img, r->rng, 16);
    memcpy(img + 16, w, sizeof w);
    memcpy(img + 16 + sizeof w, r->last, sizeof r->last);
    return;
  }
  memcpy(r->rng, img, 16);
  memcpy(w, img + 16, sizeof w);
  memcpy(r->last, img + 16 + sizeof w, sizeof r->last);
  r->turn = w[0];
  r->loop = w[1];
  r->modality = w[2];
  r->left = w[3];
  r->text_done = w[4];
  r->last_kind = w[5];
}

static void state_save(const void *rec, unsigned char *img) {
  fk_audio_rt *r = (fk_audio_rt *)(uintptr_t)rec; /* the copies only read it */
  img = fk_lfm2_state_copy(&r->stack, img, 1);
  machine_copy(r, img, 1);
}

static const char *state_check(const void *rec, const unsigned char *img) {
  const fk_audio_rt *r = rec;
  int64_t pos = fk_lfm2_state_pos(img);
  if (pos < 0 || pos > r->stack.max_pos) return "the audio model's position is outside 0..max_pos";
  const unsigned char *m = img + fk_lfm2_state_bytes(&r->stack);
  int32_t w[6], last[FK_AUDIO_CB];
  memcpy(w, m + 16, sizeof w);
  memcpy(last, m + 16 + sizeof w, sizeof last);
  if (w[0] < 0 || w[0] > 2 || (w[1] != FK_AUDIO_SEQUENTIAL && w[1] != FK_AUDIO_INTERLEAVED) ||
      (w[2] != FK_AUDIO_TEXT && w[2] != FK_AUDIO_AUDIO) || (w[4] != 0 && w[4] != 1) ||
      (w[5] != FK_AUDIO_OUT_TEXT && w[5] != FK_AUDIO_OUT_FRAME))
    return "the audio model's turn state is not one a run leaves";
  for (int c = 0; c < FK_AUDIO_CB; c++) {
    int64_t lim = w[5] == FK_AUDIO_OUT_TEXT ? (c == 0 ? r->vocab : 1) : r->avocab;
    if (last[c] < 0 || last[c] >= lim) return "the audio model's last output is out of range";
  }
  return NULL;
}

static void state_load(void *rec, const unsigned char *img, const fk_state_head *h) {
  fk_audio_rt *r = rec;
  (void)h;
  img = fk_lfm2_state_copy(&r->stack, (unsigned char *)(uintptr_t)img, 0);
  machine_copy(r, (unsigned char *)(uintptr_t)img, 0);
}

static void seed(void *rec, uint64_t s) {
  fk_audio_rt *r = rec;
  r->rng[0] = s;
  r->rng[1] = 0;
}

const fk_family fk_audio_family = {
  .bit = FK_PROGRAMS_AUDIO,
  .bit_name = "FK_PROGRAMS_AUDIO",
  .programs = { { FK_PROG_AUDIO_PREFILL, "audio_prefill" }, { FK_PROG_AUDIO_STEP, "audio_step" } },
  .check_desc = check_desc,
  .roles = roles,
  .layout = layout,
  .pack = pack,
  .check_io = check_io,
  .commit = commit,
  .gates = gates,
  .reset = reset,
  .query = query,
  .state_head = state_head,
  .state_bytes = state_bytes,
  .state_save = state_save,
  .state_check = state_check,
  .state_load = state_load,
  .seed = seed,
};
