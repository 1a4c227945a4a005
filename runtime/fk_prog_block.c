/* runtime/fk_prog_block.c: the block family (FK_PROGRAMS_BLOCK): one LFM2 ShortConv block,
 * operator_norm -> in_proj -> conv -> out_proj + residual, over the caller's residual rows in
 * place; FK_PROG_BLOCK_PREFILL (1..max_rows rows) and FK_PROG_BLOCK_DECODE (one row). Its state
 * is the conv carry and the token cursor. */
#include <math.h>
#include <string.h>

#include "fk_program.h"

enum { LIMIT = 65536 };

typedef struct block_rt {
  int64_t h, max_rows;
  float eps;
  /* weights, packed or rearranged at readiness */
  uint16_t *norm_w, *conv_w, *conv_b;
  fk_wmat in_w, out_w;
  /* transient planes (live within one program) */
  float *xn;      /* max_rows x h: RMSNorm out, in_proj's x */
  uint16_t *bcx;  /* max_rows x 3h: in_proj out, [B | C | x] */
  float *cy;      /* max_rows x h: the conv's gated output, out_proj's x */
  /* state */
  uint16_t *carry; /* 2 x h: Bx[t-2], then Bx[t-1] */
  int64_t tokens;  /* rows committed since the last reset */
} block_rt;

/* ---- readiness -------------------------------------------------------------------------------- */

#define DESC_CHECK(cond, ...) FK_RETURN_ERROR_IF(cond, err, FK_EINVAL, "fk_plan_create: " __VA_ARGS__)

static fk_status check_desc(const fk_plan_desc *d, fk_error *err) {
  DESC_CHECK(d->hidden < 1 || d->hidden > LIMIT, "desc.hidden = %lld: must be in 1..%d", (long long)d->hidden, LIMIT);
  DESC_CHECK(d->max_rows < 1 || d->max_rows > LIMIT, "desc.max_rows = %lld: must be in 1..%d", (long long)d->max_rows,
             LIMIT);
  DESC_CHECK(!(d->norm_eps > 0.0f) || !isfinite(d->norm_eps), "desc.norm_eps = %g: must be finite and > 0",
             (double)d->norm_eps);
  DESC_CHECK(!d->block.norm, "desc.block.norm is NULL");
  DESC_CHECK(!d->block.in_proj, "desc.block.in_proj is NULL");
  DESC_CHECK(!d->block.conv, "desc.block.conv is NULL");
  DESC_CHECK(!d->block.out_proj, "desc.block.out_proj is NULL");
  fk_status s = fk_wmat_check(NULL, d->quantize, d->hidden, "desc.block.in_proj", err);
  if (s == FK_OK) s = fk_wmat_check(NULL, d->quantize, d->hidden, "desc.block.out_proj", err);
  return s;
}

static uint64_t roles(const fk_plan_desc *d) {
  return fk_quant_roles(FK_ROLE_BIT(R_NORM) | FK_ROLE_BIT(R_IN) |
                            FK_ROLE_BIT(d->block.conv_bias ? R_CONV_BIAS : R_CONV) | FK_ROLE_BIT(R_OUT),
                        fk_format_bit(d->quantize));
}

/* ---- the phases ------------------------------------------------------------------------------- */

static void ph_norm(fk_plan *p, const fk_step *st, int m) {
  const block_rt *r = st->ctx;
  int64_t b, e;
  fk_share(p->job.io.rows, m, p->threads, &b, &e);
  if (b == e) return;
  fk_rmsnorm_bf16_wide_args a = { .x = p->job.io.x + b * p->job.io.ldx, .w = r->norm_w, .y = r->xn + b * r->h,
                                  .n = r->h, .rows = e - b, .x_stride = p->job.io.ldx, .y_stride = r->h,
                                  .eps = r->eps };
  p->leaf[R_NORM].fn(&a);
}

static void ph_in_proj(fk_plan *p, const fk_step *st, int m) {
  const block_rt *r = st->ctx;
  fk_gemv_job g = { R_IN, r->in_w, r->xn, r->h, r->h, r->bcx, NULL, NULL, 3 * r->h, 0, 0 };
  fk_gemv_run(p, m, &g, p->job.io.rows, 3 * r->h);
}

static void ph_conv(fk_plan *p, const fk_step *st, int m) {
  const block_rt *r = st->ctx;
  if (m != 0) return; /* the carry is a recurrence over rows: one member, rows in order */
  if (r->conv_b) {
    fk_shortconv_bf16_bias_wide_args a = { .in = r->bcx, .w = r->conv_w, .bias = r->conv_b, .carry = r->carry,
                                           .y = r->cy, .h = r->h, .m = p->job.io.rows, .ld_in = 3 * r->h,
                                           .ldy = r->h };
    p->leaf[st->role].fn(&a);
  } else {
    fk_shortconv_bf16_wide_args a = { .in = r->bcx, .w = r->conv_w, .carry = r->carry, .y = r->cy, .h = r->h,
                                      .m = p->job.io.rows, .ld_in = 3 * r->h, .ldy = r->h };
    p->leaf[st->role].fn(&a);
  }
}

static void ph_out_proj(fk_plan *p, const fk_step *st, int m) {
  const block_rt *r = st->ctx;
  /* the residual row is read and rewritten element by element (y may equal r) */
  fk_gemv_job g = { R_OUT, r->out_w, r->cy, r->h, r->h, p->job.io.x, p->job.io.x, NULL, p->job.io.ldx, 0, 0 };
  fk_gemv_run(p, m, &g, p->job.io.rows, r->h);
}

/* Both programs run the same four phases (decode: one row). */
static void list_steps(fk_step_list *l, void *rec, fk_program prog) {
  block_rt *r = rec;
  (void)prog;
  fk_step_add(l, ph_norm, "rmsnorm", "rows", R_NORM, r, -1);
  fk_step_add(l, ph_in_proj, "in_proj", "weight rows", fk_qrole(R_IN, r->in_w.fmt), r, -1);
  fk_step_add(l, ph_conv, "conv", "member 0", r->conv_b ? R_CONV_BIAS : R_CONV, r, -1);
  fk_step_add(l, ph_out_proj, "out_proj", "weight rows", fk_qrole(R_OUT, r->out_w.fmt), r, -1);
}

static void *layout(fk_plan *p, const fk_plan_desc *d, fk_carver *c) {
  block_rt local, *r = fk_carve_record(c, sizeof *r, &local);
  int64_t h = r->h = d->hidden;
  r->max_rows = d->max_rows;
  r->eps = d->norm_eps;
  r->norm_w = fk_carve(c, (size_t)h * 2);
  r->in_w = fk_wmat_carve(c, d->quantize, 3 * h, h);
  r->conv_w = fk_carve(c, (size_t)(3 * h) * 2);
  r->conv_b = d->block.conv_bias ? fk_carve(c, (size_t)h * 2) : NULL;
  r->out_w = fk_wmat_carve(c, d->quantize, h, h);
  r->xn = fk_carve(c, (size_t)(r->max_rows * h) * 4);
  r->bcx = fk_carve(c, (size_t)(r->max_rows * 3 * h) * 2);
  r->cy = fk_carve(c, (size_t)(r->max_rows * h) * 4);
  r->carry = fk_carve(c, (size_t)(2 * h) * 2);
  fk_gemv_need(c, h);
  fk_program_steps(p, c, FK_PROG_BLOCK_PREFILL, r, list_steps);
  fk_program_steps(p, c, FK_PROG_BLOCK_DECODE, r, list_steps);
  return r;
}

static fk_status pack(void *rec, const fk_plan_desc *d, fk_error *err) {
  block_rt *r = rec;
  int64_t h = r->h;
  memcpy(r->norm_w, d->block.norm, (size_t)h * 2);
  fk_status s = fk_wmat_pack(&r->in_w, d->block.in_proj, NULL, 3 * h, h, "desc.block.in_proj", err);
  if (s == FK_OK) s = fk_wmat_pack(&r->out_w, d->block.out_proj, NULL, h, h, "desc.block.out_proj", err);
  /* conv.weight[c, 0, k] -> tap-major w[k*h + c] (the leaf's layout) */
  for (int64_t ch = 0; ch < h; ch++)
    for (int k = 0; k < 3; k++) r->conv_w[k * h + ch] = d->block.conv[3 * ch + k];
  if (r->conv_b) memcpy(r->conv_b, d->block.conv_bias, (size_t)h * 2);
  return s;
}

/* ---- fk_run ------------------------------------------------------------------------------------ */

/* the program's name comes first in every message */
#define RUN_CHECK(cond, fmt, ...) \
  FK_RETURN_ERROR_IF(cond, err, FK_EINVAL, "fk_run(%s): " fmt, fk_program_name(prog), ##__VA_ARGS__)

static fk_status check_io(const void *rec, fk_program prog, const fk_io *io, int64_t *due, fk_error *err) {
  const block_rt *r = rec;
  *due = 0;
  if (prog == FK_PROG_BLOCK_DECODE)
    RUN_CHECK(io->rows != 1, "io.rows = %lld: decode runs exactly 1 row", (long long)io->rows);
  RUN_CHECK(io->rows < 1 || io->rows > r->max_rows, "io.rows = %lld: must be in 1..%lld (desc.max_rows)",
            (long long)io->rows, (long long)r->max_rows);
  RUN_CHECK(!io->x, "io.x is NULL");
  RUN_CHECK(io->ldx < r->h, "io.ldx = %lld: must be >= hidden = %lld", (long long)io->ldx, (long long)r->h);
  RUN_CHECK(fk_extent(io->rows, io->ldx, r->h, 2) == 0, "io.ldx = %lld: %lld rows of it overflow the address space",
            (long long)io->ldx, (long long)io->rows);
  return FK_OK;
}

static void commit(void *rec, const fk_job *job, fk_io *io, int64_t due) {
  (void)io, (void)due;
  ((block_rt *)rec)->tokens += job->io.rows; /* the job's copy: io may alias x */
}

/* ---- state: the image holds the carry; tokens and hidden are header words ------------------------ */

static void reset(void *rec) {
  block_rt *r = rec;
  memset(r->carry, 0, (size_t)(2 * r->h) * 2);
  r->tokens = 0;
}

static void query(const void *rec, fk_state_info *info) { info->tokens = ((const block_rt *)rec)->tokens; }

static void state_head(const void *rec, fk_state_head *h) {
  const block_rt *r = rec;
  h->hidden = r->h;
  h->tokens = r->tokens;
}

static size_t state_bytes(const void *rec) { return (size_t)(2 * ((const block_rt *)rec)->h) * 2; }

static void state_save(const void *rec, unsigned char *img) {
  memcpy(img, ((const block_rt *)rec)->carry, state_bytes(rec));
}

static const char *state_check(const void *rec, const unsigned char *img) {
  (void)rec, (void)img;
  return NULL;
}

static void state_load(void *rec, const unsigned char *img, const fk_state_head *h) {
  block_rt *r = rec;
  memcpy(r->carry, img, state_bytes(rec));
  r->tokens = h->tokens;
}

const fk_family fk_block_family = {
  .bit = FK_PROGRAMS_BLOCK,
  .bit_name = "FK_PROGRAMS_BLOCK",
  .programs = { { FK_PROG_BLOCK_PREFILL, "block_prefill" }, { FK_PROG_BLOCK_DECODE, "block_decode" } },
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
