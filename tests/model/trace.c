/* tests/model/trace.c - whole-model reference traces: load, fetch, compare, judge, capture (trace.h). */
#include "trace.h"

#include <xxhash.h>

#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

/* the runtime's planes, for the capture: the tests' window into a plan (fk_model_trace has no include
 * path into runtime/, only the public headers) */
#include "../../runtime/fk_prog_detok.h"
#include "../../runtime/fk_prog_lm.h"

static const fkfix_tensor *named(const fkfix *f, const char *b, const char *suffix) {
  char nm[64];
  int w = snprintf(nm, sizeof nm, "%s%s", b, suffix);
  if (w < 0 || (size_t)w >= sizeof nm) return NULL;
  return fkfix_tensor_get(f, nm);
}

static int scalar_named(const fkfix *f, const char *b, const char *suffix, float *v) {
  char nm[64];
  int w = snprintf(nm, sizeof nm, "%s%s", b, suffix);
  if (w < 0 || (size_t)w >= sizeof nm) return -1;
  return fkfix_scalar_f32(f, nm, v);
}

static int64_t count_of(const fkfix_tensor *t) {
  int64_t n = 1;
  for (int i = 0; i < t->ndim; i++) n *= t->shape[i];
  return n;
}

static int dense(const fkfix_tensor *t) {
  int64_t st = 1;
  for (int i = t->ndim - 1; i >= 0; i--) {
    if (t->shape[i] > 1 && t->strides[i] != st) return 0;
    st *= t->shape[i];
  }
  return 1;
}

int fkm_trace_load(const char *manifest_path, fkm_trace *t, char *err, size_t errlen) {
  memset(t, 0, sizeof *t);
  if (fkfix_load(manifest_path, &t->fx, err, errlen)) return -1;
  const fkfix *f = &t->fx;
  if (!strcmp(f->leaf, "lfm2"))
    t->tag = "lm";
  else if (!strcmp(f->leaf, "detok"))
    t->tag = "detok";
  else if (!strcmp(f->leaf, "ckpt"))
    t->tag = "ckpt";
  else if (!strcmp(f->leaf, "audio"))
    t->tag = "audio";
  else {
    fkm_fail(err, errlen, "%s: leaf %s is not a model trace (lfm2, detok, ckpt, audio)", manifest_path, f->leaf);
    goto bad;
  }
  if (strcmp(f->form, "trace")) {
    fkm_fail(err, errlen, "%s: form %s is not trace", manifest_path, f->form);
    goto bad;
  }
  for (int i = 0; i < f->nboundaries; i++) {
    const fkfix_boundary *b = &f->boundaries[i];
    const fkfix_tensor *r64 = named(f, b->field, "_f64"), *r16 = named(f, b->field, "_bf16");
    float e, bd;
    if (!r64 || !r16 || strcmp(b->tensor, r64->name)) {
      fkm_fail(err, errlen, "%s:%d: boundary %s: needs tensors %s_f64 (its reference) and %s_bf16", manifest_path, b->line,
            b->field, b->field, b->field);
      goto bad;
    }
    if (scalar_named(f, b->field, "_eref", &e) || scalar_named(f, b->field, "_bound", &bd) || !(bd >= e) ||
        !(bd > 0)) {
      fkm_fail(err, errlen, "%s:%d: boundary %s: scalars %s_eref and %s_bound missing or bound < eref", manifest_path,
            b->line, b->field, b->field, b->field);
      goto bad;
    }
    if (r64->ndim != r16->ndim || count_of(r64) != count_of(r16) || !dense(r64) || !dense(r16) ||
        (r64->dtype != FKFIX_F64 && r64->dtype != FKFIX_F32)) {
      fkm_fail(err, errlen, "%s:%d: boundary %s: %s and %s differ in shape, are not dense, or the reference is not f64/f32",
            manifest_path, b->line, b->field, r64->name, r16->name);
      goto bad;
    }
  }
  return 0;
bad:
  fkfix_free(&t->fx);
  memset(t, 0, sizeof *t);
  return -1;
}

void fkm_trace_free(fkm_trace *t) {
  if (!t) return;
  fkfix_free(&t->fx);
  memset(t, 0, sizeof *t);
}

const fkfix_tensor *fkm_trace_ref(const fkm_trace *t, const char *b, int f64) {
  return named(&t->fx, b, f64 ? "_f64" : "_bf16");
}

int fkm_trace_bound(const fkm_trace *t, const char *b, float *eref, float *bound) {
  float e, bd;
  if (scalar_named(&t->fx, b, "_eref", &e) || scalar_named(&t->fx, b, "_bound", &bd)) return -1;
  if (eref) *eref = e;
  if (bound) *bound = bd;
  return 0;
}

static double value_at(fkfix_dtype d, const void *p, int64_t i) {
  switch (d) {
    case FKFIX_BF16: {
      uint32_t u = (uint32_t)((const uint16_t *)p)[i] << 16;
      float f;
      memcpy(&f, &u, 4);
      return f;
    }
    case FKFIX_F32: return ((const float *)p)[i];
    case FKFIX_F64: return ((const double *)p)[i];
    default: return NAN;
  }
}

double fkm_row_rel_l2(fkfix_dtype xd, const void *x, fkfix_dtype rd, const void *ref, int64_t rows, int64_t cols,
                      int64_t *worst_row) {
  double worst = 0;
  int64_t wr = 0;
  for (int64_t r = 0; r < rows; r++) {
    double num = 0, den = 0;
    for (int64_t c = 0; c < cols; c++) {
      double a = value_at(xd, x, r * cols + c), b = value_at(rd, ref, r * cols + c);
      num += (a - b) * (a - b);
      den += b * b;
    }
    double rel = den > 0 ? sqrt(num) / sqrt(den) : (num == 0 ? 0.0 : INFINITY);
    if (isnan(rel)) rel = INFINITY;   /* a NaN anywhere in the row fails it */
    if (rel > worst) {
      worst = rel;
      wr = r;
    }
  }
  if (worst_row) *worst_row = wr;
  return worst;
}

int fkm_trace_compare(const fkm_trace *t, const char *b, fkfix_dtype dtype, const void *x, fkm_cmp *out,
                      FILE *report) {
  fkm_cmp c;
  memset(&c, 0, sizeof c);
  if (out) *out = c;
  const fkfix_tensor *r = fkm_trace_ref(t, b, 1);
  float e, bd;
  if (!r || !x || fkm_trace_bound(t, b, &e, &bd)) {
    if (report) fprintf(report, "%s %s: no such boundary in the trace\n", t->fx.casename, b);
    return -1;
  }
  if (dtype != FKFIX_BF16 && dtype != FKFIX_F32 && dtype != FKFIX_F64) {
    if (report) fprintf(report, "%s %s: compare takes bf16, f32 or f64 data\n", t->fx.casename, b);
    return -1;
  }
  c.cols = r->shape[r->ndim - 1];
  c.rows = c.cols ? count_of(r) / c.cols : 0;
  c.eref = e;
  c.bound = bd;
  c.max_rel = fkm_row_rel_l2(dtype, x, r->dtype, r->data, c.rows, c.cols, &c.worst_row);
  c.pass = c.max_rel <= c.bound;
  if (report)
    fprintf(report, "%s %s: max row rel L2 %.4g (row %lld of %lld) bound %.4g (torch bf16 %.4g) %s\n",
            t->fx.casename, b, c.max_rel, (long long)c.worst_row, (long long)c.rows, c.bound, c.eref,
            c.pass ? "ok" : "FAIL");
  if (out) *out = c;
  return c.pass;
}

int fkm_trace_check_weights(const fkm_trace *t, const fkm_weights *w, char *err, size_t errlen) {
  return fkm_trace_check_weights_of(t, "", w, err, errlen);
}

int fkm_trace_check_weights_of(const fkm_trace *t, const char *prefix, const fkm_weights *w, char *err, size_t errlen) {
  char nn[64], dn[64];
  snprintf(nn, sizeof nn, "%sweight_names", prefix);
  snprintf(dn, sizeof dn, "%sweight_digests", prefix);
  const fkfix_tensor *nt = fkfix_tensor_get(&t->fx, nn), *dt = fkfix_tensor_get(&t->fx, dn);
  if (!nt || !dt || nt->dtype != FKFIX_I64 || dt->dtype != FKFIX_I64 || nt->ndim != 1 || dt->ndim != 1 ||
      nt->shape[0] != dt->shape[0])
    return fkm_fail(err, errlen, "%s: %s / %s missing or malformed", t->fx.path, nn, dn);
  if (!prefix[0] && strcmp(w->cfg->tag, t->tag))
    return fkm_fail(err, errlen, "%s: trace of model %s, weights of %s", t->fx.path, t->tag, w->cfg->tag);
  if (nt->shape[0] != w->n)
    return fkm_fail(err, errlen, "%s: %lld weight tensors recorded, %d synthesised", t->fx.path, (long long)nt->shape[0],
                 w->n);
  const int64_t *names = nt->data, *digs = dt->data;
  int bad = 0;
  for (int i = 0; i < w->n; i++) {
    uint64_t nd = fkm_name_digest(w->t[i].name), wd = fkm_weight_digest(&w->t[i], w->data[i]);
    if (nd != (uint64_t)names[i]) {
      if (!bad) fkm_fail(err, errlen, "%s: weight %d: synthesised name %s is not the recorded one", t->fx.path, i, w->t[i].name);
      bad++;
    } else if (wd != (uint64_t)digs[i]) {
      if (!bad)
        fkm_fail(err, errlen, "%s: weight %s: XXH3-64 %016llx, recorded %016llx", t->fx.path, w->t[i].name,
              (unsigned long long)wd, (unsigned long long)(uint64_t)digs[i]);
      bad++;
    }
  }
  if (!bad && err && errlen) err[0] = 0;
  return bad;
}

int fkm_trace_check_qweights(const fkm_trace *t, const fkm_weights *w, fk_qformat *fmt, char *err, size_t errlen) {
  int64_t q = 0;
  if (fkfix_scalar_i64(&t->fx, "quant", &q) || (q != FK_Q8 && q != FK_Q4 && q != FK_Q4K))
    return fkm_fail(err, errlen, "%s: no scalar quant (1: q8, 2: q4, 3: q4k)", t->fx.path);
  *fmt = (fk_qformat)q;
  const fkfix_tensor *nt = fkfix_tensor_get(&t->fx, "qweight_names"), *dt = fkfix_tensor_get(&t->fx, "qweight_digests");
  if (!nt || !dt || nt->dtype != FKFIX_I64 || dt->dtype != FKFIX_I64 || nt->ndim != 1 || dt->ndim != 1 ||
      nt->shape[0] != dt->shape[0])
    return fkm_fail(err, errlen, "%s: qweight_names / qweight_digests missing or malformed", t->fx.path);
  const int64_t *names = nt->data, *digs = dt->data;
  int bad = 0, linear = 0;
  for (int i = 0; i < w->n; i++) {
    const fkm_tensor *x = &w->t[i];
    if (x->kind != FKM_LINEAR) continue;
    linear++;
    uint64_t nd = fkm_name_digest(x->name);
    int64_t j = 0;
    while (j < nt->shape[0] && (uint64_t)names[j] != nd) j++;
    if (j == nt->shape[0]) {
      if (!bad) fkm_fail(err, errlen, "%s: linear weight %s is not among the quantized ones", t->fx.path, x->name);
      bad++;
      continue;
    }
    int64_t n = x->shape[0], k = x->shape[1];
    size_t bytes = fk_q_gguf_bytes(*fmt, n, k);
    void *blocks = bytes ? malloc(bytes) : NULL;
    fk_error e;
    if (!blocks || fk_q_quantize_bf16(*fmt, w->data[i], k, n, k, blocks, bytes, &e) != FK_OK) {
      free(blocks);
      return fkm_fail(err, errlen, "%s: %s could not be quantized (%lld x %lld)", t->fx.path, x->name, (long long)n,
                      (long long)k);
    }
    uint64_t bd = (uint64_t)XXH3_64bits(blocks, bytes);
    free(blocks);
    if (bd != (uint64_t)digs[j]) {
      if (!bad)
        fkm_fail(err, errlen, "%s: %s quantized: XXH3-64 %016llx, recorded %016llx", t->fx.path, x->name,
                 (unsigned long long)bd, (unsigned long long)(uint64_t)digs[j]);
      bad++;
    }
  }
  if (!bad && linear != nt->shape[0])
    return fkm_fail(err, errlen, "%s: %lld quantized weights recorded, %d linear weights synthesised", t->fx.path,
                    (long long)nt->shape[0], linear);
  if (!bad && err && errlen) err[0] = 0;
  return bad;
}

/* ---- gates ----------------------------------------------------------------------------------- */

void fkm_judge(fkm_tally *t, const char *what, int ok, double e, double bound) {
  t->checked++;
  double r = bound > 0 ? e / bound : INFINITY;
  if (!(r <= t->worst)) t->worst = r; /* NaN counts as the worst */
  if (!ok) {
    if (!t->failed) snprintf(t->first, sizeof t->first, "%s: %.3g > bound %.3g", what, e, bound);
    t->failed++;
  }
}

int fkm_cmp_full(fkm_tally *t, const fkm_trace *tr, const char *b, fkfix_dtype dt, const void *x, FILE *report) {
  fkm_cmp c;
  int r = fkm_trace_compare(tr, b, dt, x, &c, report);
  char what[192];
  snprintf(what, sizeof what, "%s %s%s", tr->fx.casename, b, r < 0 ? " (not comparable)" : "");
  fkm_judge(t, what, r == 1, r < 0 ? INFINITY : c.max_rel, c.bound);
  return r;
}

int fkm_cmp_rows(fkm_tally *t, const fkm_trace *tr, const char *b, fkfix_dtype dt, const void *x, int64_t r0, int64_t n,
                 int64_t cols) {
  const fkfix_tensor *ref = fkm_trace_ref(tr, b, 1);
  float eref, bound;
  char what[192];
  snprintf(what, sizeof what, "%s %s rows %lld..%lld", tr->fx.casename, b, (long long)r0, (long long)(r0 + n - 1));
  if (!ref || fkm_trace_bound(tr, b, &eref, &bound) || cols != ref->shape[ref->ndim - 1] || r0 < 0 ||
      (r0 + n) * cols > ref->span) {
    fkm_judge(t, what, 0, INFINITY, 0);
    return -1;
  }
  size_t el = ref->dtype == FKFIX_F64 ? 8 : 4;
  int64_t worst;
  double e = fkm_row_rel_l2(dt, x, ref->dtype, (const char *)ref->data + (size_t)(r0 * cols) * el, n, cols, &worst);
  fkm_judge(t, what, e <= bound, e, bound);
  return e <= bound;
}

void fkm_judge_token(fkm_tally *t, const char *what, int64_t got, int64_t want, int required, const double *l64,
                     double logits_abs) {
  t->checked++;
  if (got == want) return;
  /* not required: our token's float64 logit must be within the bound of the maximum's */
  if (!required && !(l64[got] >= l64[want] - 2.0 * logits_abs)) required = 1;
  if (required) {
    if (!t->failed)
      snprintf(t->first, sizeof t->first, "%s: token %lld, the reference's %lld (margin requires it)", what,
               (long long)got, (long long)want);
    t->failed++;
  }
}

/* ---- capture --------------------------------------------------------------------------------- */

void fkm_observe(void *ctx, const fk_plan *p, const fk_step *st) {
  fkm_capture *c = ctx;
  fk_stack_rt *t = st->ctx; /* a model family's record begins with its stack */
  int lm = st->ctx == (void *)fk_lm_of(p);
  const fk_detok_rt *dt = st->ctx; /* read on the detokenizer's steps only */
  int64_t rows = fk_lfm2_rows(p, t), h = t->h;
  size_t off = (size_t)(c->row0 * h);
  if (c->what != FKM_PERTURB_NONE && c->cur == c->call) { /* the perturbations write the planes */
    fk_layer_rt *l = st->layer >= 0 ? &t->layer[st->layer] : NULL;
    if (c->what == FKM_PERTURB_CARRY && !strcmp(st->name, "conv") && st->layer == 0)
      memset(l->carry, 0, (size_t)(2 * h) * 2); /* the carry not committed */
    if (c->what == FKM_PERTURB_KV_SLOT && !strcmp(st->name, "qk_norm_rope") && l) {
      /* the new rows' K written one slot late: shift the block's rows by one slot */
      int64_t kd = t->kv * 64, s0 = t->ring ? t->pos % t->ring : t->pos;
      for (int64_t r = rows - 1; r >= 0; r--) {
        int64_t a = s0 + r, b = s0 + r + 1;
        if (t->ring) a %= t->ring, b %= t->ring;
        if (!t->ring && b >= t->slots) continue;
        memcpy(l->kc + b * kd, l->kc + a * kd, (size_t)kd * 2);
      }
    }
    if (c->what == FKM_PERTURB_SWAP_ROWS && (!strcmp(st->name, "embed") || !strcmp(st->name, "codebooks")) &&
        rows > 1) {
      uint16_t tmp[FKM_CAP_H];
      memcpy(tmp, t->res, (size_t)h * 2);
      memcpy(t->res, t->res + (rows - 1) * h, (size_t)h * 2);
      memcpy(t->res + (rows - 1) * h, tmp, (size_t)h * 2);
    }
    if (c->what == FKM_PERTURB_BIT && !strcmp(st->name, "w2") && st->layer == 1) t->res[3] ^= 1; /* one ulp */
  }
  if (!strcmp(st->name, "embed") || !strcmp(st->name, "codebooks")) memcpy(c->emb + off, t->res, (size_t)(rows * h) * 2);
  if (!strcmp(st->name, "w2")) memcpy(c->hid[st->layer] + off, t->res, (size_t)(rows * h) * 2);
  if (!strcmp(st->name, "final_norm")) {
    if (lm) memcpy(c->norm, t->xn, (size_t)h * 4); /* the LM norms its last row */
    else memcpy(c->norm + off, dt->feat, (size_t)(rows * h) * 4);
  }
  if (!strcmp(st->name, "head"))
    for (int64_t r = 0; r < rows; r++)
      memcpy(c->lin + (c->row0 + r) * FK_ISTFT_SPEC, dt->sp.spec + r * FK_SPEC_LD, FK_ISTFT_SPEC * 4);
}

/* ---- the detokenizer's trace ------------------------------------------------------------------- */

int64_t fkm_detok_trace(fk_plan *p, const fkm_trace *tr, const char *prefix, const int *chunks, fkm_capture *c,
                        fkm_tally *t, float *pcm, int64_t pcm_cap, FILE *report, char *err, size_t errlen) {
  char b[64];
  snprintf(b, sizeof b, "%scodes", prefix);
  const fkfix_tensor *codes = fkfix_tensor_get(&tr->fx, b);
  const fk_detok_rt *dr = fk_detok_of(p);
  if (!codes || codes->dtype != FKFIX_I64 || codes->ndim != 2 || codes->shape[0] != 8 || !dr)
    return fkm_fail(err, errlen, "%s: no %s (8 x frames, i64), or the plan runs no detokenizer", tr->fx.path, b);
  const fk_stack_rt *st = &dr->stack;
  int64_t frames = codes->shape[1], rows = 6 * frames, kd = st->kv * 64, h = st->h, n = 0, nbx = 0;
  if (rows > FKM_CAP_ROWS || h > FKM_CAP_H || st->layers > FKM_CAP_LAYERS)
    return fkm_fail(err, errlen, "%s: %lld rows of %lld, %lld layers: beyond the capture", tr->fx.path, (long long)rows,
                    (long long)h, (long long)st->layers);
  uint16_t *kk = calloc((size_t)(st->layers * rows * kd), 2), *vv = calloc((size_t)(st->layers * rows * kd), 2);
  uint16_t *bx = calloc((size_t)(st->layers * 2 * frames * h), 2);
  int64_t ret = -1;
  if (!kk || !vv || !bx) {
    fkm_fail(err, errlen, "out of memory");
    goto done;
  }
  fk_error e;
  for (int k = 0, f = 0; f < frames; k++) {
    int fr = chunks ? chunks[k] : 1;
    int32_t cc[16 * 8];
    if (fr < 1 || fr > 16 || f + fr > frames) {
      fkm_fail(err, errlen, "call %d: a chunk of %d frames at frame %d of %lld", k, fr, f, (long long)frames);
      goto done;
    }
    for (int j = 0; j < fr; j++)
      for (int cb = 0; cb < 8; cb++) cc[j * 8 + cb] = (int32_t)((const int64_t *)codes->data)[cb * frames + f + j];
    c->row0 = 6 * f;
    c->cur = k;
    int64_t pos0 = st->pos;
    fk_io io = { .rows = fr, .codes = cc, .pcm = pcm + n, .pcm_cap = pcm_cap - n };
    if (fk_run(p, FK_PROG_DETOK, &io, &e) != FK_OK) {
      fkm_fail(err, errlen, "call %d: fk_run: %s", k, e.message);
      goto done;
    }
    n += io.pcm_count;
    /* the call's new K and V rows, from their ring slots; the conv states */
    for (int i = 0; i < st->layers; i++) {
      const fk_layer_rt *l = &st->layer[i];
      if (l->kind == FK_LAYER_ATTN) {
        for (int64_t r = 0; r < 6 * fr; r++) {
          int64_t slot = (pos0 + r) % st->ring;
          memcpy(kk + (i * rows + pos0 + r) * kd, l->kc + slot * kd, (size_t)kd * 2);
          memcpy(vv + (i * rows + pos0 + r) * kd, l->vc + slot * kd, (size_t)kd * 2);
        }
      } else {
        memcpy(bx + (i * 2 * frames + nbx) * h, l->carry, (size_t)(2 * h) * 2);
      }
    }
    /* the carry after the call holds Bx of rows pos - 2, pos - 1 */
    for (int i = 0; i < st->layers; i++)
      if (st->layer[i].kind == FK_LAYER_CONV) {
        snprintf(b, sizeof b, "%sbx%d", prefix, i);
        fkm_cmp_rows(t, tr, b, FKFIX_BF16, bx + (i * 2 * frames + nbx) * h, st->pos - 2, 2, h);
      }
    nbx += 2;
    f += fr;
  }
  fk_io io = { .pcm = pcm + n, .pcm_cap = pcm_cap - n };
  if (fk_run(p, FK_PROG_DETOK_FLUSH, &io, &e) != FK_OK) {
    fkm_fail(err, errlen, "flush: fk_run: %s", e.message);
    goto done;
  }
  n += io.pcm_count;
  snprintf(b, sizeof b, "%semb", prefix);
  fkm_cmp_full(t, tr, b, FKFIX_BF16, c->emb, report);
  for (int i = 0; i < st->layers; i++) {
    snprintf(b, sizeof b, "%sh%d", prefix, i);
    fkm_cmp_full(t, tr, b, FKFIX_BF16, c->hid[i], report);
    if (st->layer[i].kind == FK_LAYER_ATTN) {
      snprintf(b, sizeof b, "%sk%d", prefix, i);
      fkm_cmp_full(t, tr, b, FKFIX_BF16, kk + i * rows * kd, report);
      snprintf(b, sizeof b, "%sv%d", prefix, i);
      fkm_cmp_full(t, tr, b, FKFIX_BF16, vv + i * rows * kd, report);
    }
  }
  snprintf(b, sizeof b, "%snorm", prefix);
  fkm_cmp_full(t, tr, b, FKFIX_F32, c->norm, report);
  snprintf(b, sizeof b, "%slin", prefix);
  fkm_cmp_full(t, tr, b, FKFIX_F32, c->lin, report);
  snprintf(b, sizeof b, "%spcm", prefix);
  fkm_cmp_full(t, tr, b, FKFIX_F32, pcm, report);
  ret = n;
done:
  free(kk);
  free(vv);
  free(bx);
  return ret;
}
