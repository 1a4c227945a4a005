/* tests/suite_state.c: the fixture gate of the leaves with state (ShortConv's carry, qkprep's
 * cache slots), run as the references ran them: each sequence's calls in order, each call
 * reading the state the leaf itself left after the previous call (never the manifest's copy of
 * it), calls at the same index of different sequences batched into one run of the target.
 *
 *   shortconv: call i's carry = the carry the stamp wrote in call i - 1 (zeros at call 0, as
 *              the manifest says); y is checked against y_f64 and y_torch within the bounds of
 *              fixtures/README.md, its row padding against the canary, the carry bit for bit.
 *   qkprep:    one cache per sequence ([head][slot][hd], W slots for a ring, else as many as the
 *              sequence reaches), canary-filled at the start; a call's input rows are written at
 *              their slots (as the K/V projection does), the leaf transforms them in place, then
 *              the slots are checked against x_f64 and x_torch and every other element of the
 *              cache must be as it was before the call (older positions survive, until the ring
 *              reuses their slot). */
#include <criterion/criterion.h>
#include <criterion/logging.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "contract/contract.h"
#include "flashkern.h"
#include "suite.h"

enum { CANARY = 0x7fa5 };

static const double U = 0x1p-24, ETA = 0x1p-150, R8 = 0x1p-8;
static double gamma_(double d) { return d * U / (1 - d * U); }

static double bf16v(uint16_t h) { return (double)fkc_bf16_to_f32(h); }
static int bf16_subnormal(uint16_t h) { return (h & 0x7f80) == 0 && (h & 0x7f) != 0; }

static double f64_at(const fkfix_tensor *t, int64_t flat) { return ((const double *)t->data)[flat]; }

/* 1 when decided by class (ok set): NaN references want NaN, infinite ones the same infinity */
static int by_class(double y, double ref, int *ok) {
  if (isnan(ref)) { *ok = isnan(y); return 1; }
  if (isinf(ref)) { *ok = isinf(y) && (y > 0) == (ref > 0); return 1; }
  if (!isfinite(y)) { *ok = 0; return 1; }
  return 0;
}

/* ---------------------------------------------------------------- shortconv ------------ */

/* Bx of row t (t < 0: from the carry the call read) for channel c */
static uint16_t sc_bx(const fkh_call *c, const uint16_t *carry_in, int64_t t, int64_t ch) {
  int64_t h = fkh_i64_of(c, "h");
  if (t < 0) return carry_in[(t + 2) * h + ch];
  const uint16_t *row = (const uint16_t *)fkh_buf_of((fkh_call *)c, "in") + t * fkh_i64_of(c, "ld_in");
  return fkc_rne_bits(fkc_f32_bits(fkc_bf16_to_f32(row[ch]) * fkc_bf16_to_f32(row[2 * h + ch])), FKC_EXACT);
}

/* README: shortconv_f64 with E (or torch's Et) */
static double sc_bound(double y64, double gate, double e) {
  return R8 * (2 + R8) * fabs(y64) + (1 + R8) * fabs(gate) * ((1 + R8) * e + 0x1p-134) + 0x1p-134 + 2 * ETA;
}

/* Checks one call; *clamped_off counts the outputs where the manifest's y_clamped (the older
 * transformers' decode, README "ShortConv: the clamp") lies outside the shortconv_f64 bound. */
static int check_shortconv(const fkfix *fx, fkh_call *c, const uint16_t *carry_in, char *msg, size_t len,
                           int *clamped_off) {
  int64_t h = fkh_i64_of(c, "h"), m = fkh_i64_of(c, "m"), ldy = fkh_i64_of(c, "ldy");
  const uint16_t *y = fkh_buf_of(c, "y"), *w = fkh_buf_of(c, "w");
  const uint16_t *bias = fkh_field_index(c, "bias") >= 0 ? fkh_buf_of(c, "bias") : NULL;
  const fkfix_tensor *y64 = fkfix_tensor_get(fx, "y_f64"), *yt = fkfix_tensor_get(fx, "y_torch");
  const fkfix_tensor *cref = fkfix_tensor_get(fx, "carry_ref"), *ycl = fkfix_tensor_get(fx, "y_clamped");
  if (!y64 || !yt || !cref) {
    snprintf(msg, len, "%s: a shortconv manifest needs y_f64, y_torch and carry_ref", fx->path);
    return 1;
  }
  const double d = bias ? 4 : 3;
  int bad = 0;
  for (int64_t t = 0; t < m && !bad; t++)
    for (int64_t ch = 0; ch < h; ch++) {
      double a = 0, f = 0;
      for (int k = 0; k < 3; k++) {
        uint16_t bx = sc_bx(c, carry_in, t - 2 + k, ch), wk = w[k * h + ch];
        double term = fabs(bf16v(wk) * bf16v(bx));
        a += term;
        if (bf16_subnormal(wk) || bf16_subnormal(bx)) f += term;
      }
      if (bias) {
        a += fabs(bf16v(bias[ch]));
        if (bf16_subnormal(bias[ch])) f += fabs(bf16v(bias[ch]));
      }
      double e = gamma_(d) * a + d * ETA, et = e + f + 2 * d * 0x1p-126;
      const uint16_t *row = (const uint16_t *)fkh_buf_of(c, "in") + t * fkh_i64_of(c, "ld_in");
      double gate = bf16v(row[h + ch]), got = bf16v(y[t * ldy + ch]);
      double r64 = f64_at(y64, t * y64->strides[0] + ch * y64->strides[1]);
      double rt = bf16v(((const uint16_t *)yt->data)[t * yt->strides[0] + ch * yt->strides[1]]);
      double b64 = sc_bound(r64, gate, e), bt = b64 + sc_bound(r64, gate, et);
      int ok64, okt, okc;
      if (!by_class(got, r64, &ok64)) ok64 = fabs(got - r64) <= b64;
      if (!by_class(got, rt, &okt)) okt = fabs(got - rt) <= bt;
      if (ycl) {
        double yc = bf16v(((const uint16_t *)ycl->data)[t * ycl->strides[0] + ch * ycl->strides[1]]);
        if (!by_class(yc, r64, &okc)) okc = fabs(yc - r64) <= b64;
        *clamped_off += !okc;
      }
      if (!ok64 || !okt) {
        snprintf(msg, len, "%s: y (%s) row %lld channel %lld: got %.9g, y_f64 %.9g (bound %.3g), y_torch %.9g (bound %.3g)",
                 fx->path, ok64 ? "shortconv_torch" : "shortconv_f64", (long long)t, (long long)ch, got, r64, b64, rt, bt);
        bad = 1;
        break;
      }
    }
  /* row padding of y: untouched */
  size_t ny = c->v[fkh_field_index(c, "y")].buf.nbytes / 2;
  for (size_t e = 0; e < ny && !bad; e++)
    if ((int64_t)e % ldy >= h && y[e] != CANARY) {
      snprintf(msg, len, "%s: y[%zu] written outside the rows' h slots", fx->path, e);
      bad = 1;
    }
  const uint16_t *carry = fkh_buf_of(c, "carry");
  for (int64_t i = 0; i < 2 * h && !bad; i++) {
    uint16_t want = ((const uint16_t *)cref->data)[(i / h) * cref->strides[0] + (i % h) * cref->strides[1]];
    if (!fkt_fixture_bits_equal(&carry[i], &want, 2)) {   /* a NaN by class (suite.h) */
      snprintf(msg, len, "%s: carry (bitexact) [%lld][%lld]: got 0x%04x, want 0x%04x", fx->path, (long long)(i / h),
               (long long)(i % h), carry[i], want);
      bad = 1;
    }
  }
  return bad;
}

/* ---------------------------------------------------------------- qkprep --------------- */

static int qk_hd(const fkfix *fx) { return strstr(fx->form, "64") ? 64 : 32; }
static int qk_cis(const fkfix *fx) { return strncmp(fx->form, "cis", 3) == 0; }

/* README: qkprep_f64 and torch's own error about X (neox or cis) */
static void qk_bounds(int hd, int cis, float eps, double x, double xp, double wj, double wjp, double *b64, double *bt) {
  const double s2 = sqrt(2.0), r = sqrt(x * x + xp * xp);
  double delta = (gamma_((double)hd + 1) / 2 + ETA / (2 * (double)eps) + 4 * U) * (1 + 0x1p-20);
  double rho = 0x1p-7 + 0x1p-14 + 2 * delta, rhot = 0x1p-7 + 0x1p-14 + 2 * (delta + 2 * U);
  double q = s2 * r * rho + (fabs(wj) + fabs(wjp)) * 0x1p-132 + 0x1p-132;
  double dd = (1 + U) * q + r * (0x1p-24 + 0x1p-51 + U + s2 * ETA) + ETA;
  double e1 = (1 + U) * dd + U * fabs(x) + ETA;
  *b64 = R8 * (fabs(x) + e1) + e1 + 0x1p-134;
  double qt = s2 * r * rhot + (fabs(wj) + fabs(wjp)) * 0x1p-132 + 0x1p-132, et;
  if (!cis) {
    double kappa = 0x1p-8 + 2 * U + 0x1p-31;
    double dt = qt + r * (kappa + s2 * 0x1p-134) + R8 * (s2 * r + qt) + 0x1p-133 + 4 * ETA;
    et = dt + U * (fabs(x) + dt);
  } else {
    et = (1 + 2 * U) * (qt + gamma_(3) * (r + qt)) + 2 * U * r + 2 * ETA;
  }
  *bt = *b64 + R8 * (fabs(x) + et) + et + 0x1p-134;
}

typedef struct qk_state {
  uint16_t *cache;      /* [heads][extent][hd] */
  int64_t extent, heads, ring;
  size_t n;
} qk_state;

static int64_t qk_slot(int64_t slot, int64_t j, int64_t ring) {
  int64_t s = slot + j;
  return ring > 0 && s >= ring ? s - ring : s;
}

/* The leaf's call on the sequence's cache: input rows written at their slots first. */
static int qk_call(const fkfix *fx, qk_state *st, fkh_call *c, char *err, size_t errlen) {
  int64_t m, heads, pos, slot, ring;
  float eps, theta;
  if (fkfix_scalar_i64(fx, "m", &m) || fkfix_scalar_i64(fx, "heads", &heads) || fkfix_scalar_i64(fx, "pos", &pos) ||
      fkfix_scalar_i64(fx, "slot", &slot) || fkfix_scalar_i64(fx, "ring", &ring) || fkfix_scalar_f32(fx, "eps", &eps) ||
      fkfix_scalar_f32(fx, "theta", &theta)) {
    snprintf(err, errlen, "%s: a qkprep manifest needs scalars m, heads, pos, slot, ring, eps, theta", fx->path);
    return -1;
  }
  const fkfix_tensor *x = fkfix_tensor_get(fx, "x"), *w = fkfix_tensor_get(fx, "w");
  const int hd = qk_hd(fx);
  if (!x || !w || !x->is_input || x->ndim != 3 || x->shape[0] != m || x->shape[1] != heads || x->shape[2] != hd ||
      heads != st->heads || ring != st->ring || (ring > 0 && (slot >= ring || m > ring)) ||
      (ring == 0 && slot + m > st->extent)) {
    snprintf(err, errlen, "%s: x, w or the slots do not fit the sequence's cache", fx->path);
    return -1;
  }
  char id[64];
  snprintf(id, sizeof id, "qkprep_%s", fx->form);
  fkh_call_init(c, id, fx->casename);
  c->nan_policy = FKH_NAN_DEFAULT;
  fkh_set_i64(c, "heads", heads);
  fkh_set_i64(c, "m", m);
  fkh_set_i64(c, "ld_head", st->extent * hd);
  fkh_set_i64(c, "ld_row", hd);
  fkh_set_i64(c, "pos", pos);
  fkh_set_i64(c, "slot", slot);
  fkh_set_i64(c, "ring", ring);
  fkh_set_f32(c, "eps", eps);
  uint16_t *xb = fkh_set_buf(c, "x", st->n);
  memcpy(xb, st->cache, st->n * 2);
  for (int64_t j = 0; j < m; j++)
    for (int64_t g = 0; g < heads; g++)
      for (int i = 0; i < hd; i++)
        xb[g * st->extent * hd + qk_slot(slot, j, ring) * hd + i] =
          ((const uint16_t *)x->data)[j * x->strides[0] + g * x->strides[1] + i * x->strides[2]];
  memcpy(fkh_set_buf(c, "w", (size_t)hd), w->data, (size_t)hd * 2);
  size_t rows = (size_t)(pos + m + 1) * (size_t)(hd / 2);
  float *ct = fkh_set_buf(c, "cos", rows), *sn = fkh_set_buf(c, "sin", rows);
  fk_error e;
  if (fk_rope_table(theta, hd, 0, pos + m + 1, ct, sn, &e) != FK_OK) {
    snprintf(err, errlen, "%s: fk_rope_table: %s", fx->path, e.message);
    return -1;
  }
  return 0;
}

static int check_qkprep(const fkfix *fx, qk_state *st, fkh_call *c, char *msg, size_t len) {
  const int hd = qk_hd(fx), cis = qk_cis(fx), half = hd / 2;
  int64_t m = fkh_i64_of(c, "m"), heads = st->heads, slot = fkh_i64_of(c, "slot");
  float eps;
  fkfix_scalar_f32(fx, "eps", &eps);
  const uint16_t *xb = fkh_buf_of(c, "x"), *w = fkh_buf_of(c, "w");
  const fkfix_tensor *x64 = fkfix_tensor_get(fx, "x_f64"), *xt = fkfix_tensor_get(fx, "x_torch");
  if (!x64 || !xt) {
    snprintf(msg, len, "%s: a qkprep manifest needs x_f64 and x_torch", fx->path);
    return 1;
  }
  char *mine = calloc(st->n, 1);
  cr_assert(mine);
  int bad = 0;
  for (int64_t j = 0; j < m && !bad; j++)
    for (int64_t g = 0; g < heads && !bad; g++)
      for (int i = 0; i < hd; i++) {
        size_t at = (size_t)(g * st->extent * hd + qk_slot(slot, j, st->ring) * hd + i);
        mine[at] = 1;
        int ip = cis ? (i ^ 1) : (i < half ? i + half : i - half);
        int64_t f = j * x64->strides[0] + g * x64->strides[1], ft = j * xt->strides[0] + g * xt->strides[1];
        double x = f64_at(x64, f + i * x64->strides[2]), xp = f64_at(x64, f + ip * x64->strides[2]);
        double t = bf16v(((const uint16_t *)xt->data)[ft + i * xt->strides[2]]), got = bf16v(xb[at]);
        double b64 = 0, bt = 0;
        int ok64, okt;
        if (!by_class(got, x, &ok64)) {
          qk_bounds(hd, cis, eps, x, isfinite(xp) ? xp : 0, bf16v(w[i]), bf16v(w[ip]), &b64, &bt);
          ok64 = fabs(got - x) <= b64;
        }
        if (!by_class(got, t, &okt)) {
          if (!bt) qk_bounds(hd, cis, eps, x, isfinite(xp) ? xp : 0, bf16v(w[i]), bf16v(w[ip]), &b64, &bt);
          okt = fabs(got - t) <= bt;
        }
        if (!ok64 || !okt) {
          snprintf(msg, len, "%s: x (%s) row %lld head %lld [%d]: got %.9g, x_f64 %.9g (bound %.3g), x_torch %.9g (bound %.3g)",
                   fx->path, ok64 ? "qkprep_torch" : "qkprep_f64", (long long)j, (long long)g, i, got, x, b64, t, bt);
          bad = 1;
          break;
        }
      }
  /* everything outside the call's slots: as before the call */
  for (size_t e = 0; e < st->n && !bad; e++)
    if (!mine[e] && xb[e] != st->cache[e]) {
      snprintf(msg, len, "%s: cache element %zu outside the slots of positions [pos, pos + %lld) changed", fx->path, e,
               (long long)m);
      bad = 1;
    }
  free(mine);
  return bad;
}

/* ---------------------------------------------------------------- the gate ------------- */

typedef struct seq {
  fkfix *calls;       /* the manifests of one sequence, by index */
  int64_t count;
  uint16_t *carry;    /* shortconv: the state the leaf left */
  qk_state qk;        /* qkprep: the sequence's cache */
} seq;

static int by_name(const void *a, const void *b) {
  return strcmp(((const fkfix *)a)->sequence, ((const fkfix *)b)->sequence);
}

fkt_state_stats fkt_state_fixture_gate(const char *leaf, const fkh_target *t, int loud) {
  fkt_state_stats st = { 0 };
  char dir[512], err[512];
  snprintf(dir, sizeof dir, "%s/%s", FKT_FIXTURE_DIR, leaf);
  char **paths;
  int n = fkfix_list(dir, &paths, err, sizeof err);
  cr_assert(n > 0, "no fixtures in %s (%s)", dir, n < 0 ? err : "empty");
  fkfix *all = calloc((size_t)n, sizeof *all);
  cr_assert(all);
  for (int i = 0; i < n; i++) {
    cr_assert(fkfix_load(paths[i], &all[i], err, sizeof err) == 0, "%s", err);
    if (!all[i].sequence[0]) {   /* a single call: a sequence of one */
      snprintf(all[i].sequence, sizeof all[i].sequence, "~%s", all[i].casename);
      all[i].seq_index = 0, all[i].seq_count = 1;
    }
  }
  qsort(all, (size_t)n, sizeof *all, by_name);
  /* group by sequence name; indices 0..count-1 once each */
  seq *seqs = calloc((size_t)n, sizeof *seqs);
  cr_assert(seqs);
  int ns = 0;
  for (int i = 0; i < n;) {
    int j = i;
    while (j < n && !strcmp(all[j].sequence, all[i].sequence)) j++;
    seq *s = &seqs[ns++];
    s->count = all[i].seq_count;
    cr_assert_eq(j - i, s->count, "sequence %s: %d manifests, count says %lld", all[i].sequence, j - i, (long long)s->count);
    s->calls = calloc((size_t)s->count, sizeof *s->calls);
    cr_assert(s->calls);
    for (int k = i; k < j; k++) {
      cr_assert(all[k].seq_count == s->count && !s->calls[all[k].seq_index].path[0], "sequence %s: index %lld twice "
                "or counts differ", all[k].sequence, (long long)all[k].seq_index);
      s->calls[all[k].seq_index] = all[k];   /* the struct moves: all[] keeps no ownership */
    }
    i = j;
  }
  int64_t maxlen = 0;
  for (int i = 0; i < ns; i++) {
    seq *s = &seqs[i];
    if (s->count > maxlen) maxlen = s->count;
    if (!strcmp(leaf, "qkprep")) {
      int64_t heads, ring, extent = 0;
      cr_assert(fkfix_scalar_i64(&s->calls[0], "heads", &heads) == 0 && fkfix_scalar_i64(&s->calls[0], "ring", &ring) == 0);
      for (int64_t k = 0; k < s->count; k++) {
        int64_t slot, m;
        cr_assert(fkfix_scalar_i64(&s->calls[k], "slot", &slot) == 0 && fkfix_scalar_i64(&s->calls[k], "m", &m) == 0);
        if (slot + m > extent) extent = slot + m;
      }
      /* a linear cache gets one slot more than the sequence reaches, and the tables one row more
       * than a call reads, so a perturbed model writing one slot late stays inside (test_perturb) */
      s->qk.heads = heads, s->qk.ring = ring, s->qk.extent = ring > 0 ? ring : extent + 1;
      s->qk.n = (size_t)(heads > 0 ? heads : 1) * (size_t)s->qk.extent * (size_t)qk_hd(&s->calls[0]);
      s->qk.cache = malloc(s->qk.n * 2);
      cr_assert(s->qk.cache);
      for (size_t e = 0; e < s->qk.n; e++) s->qk.cache[e] = CANARY;
    }
  }
  fkh_call *batch = calloc((size_t)ns, sizeof *batch);
  int *owner = calloc((size_t)ns, sizeof *owner);
  uint16_t **carry_in = calloc((size_t)ns, sizeof *carry_in);
  cr_assert(batch && owner && carry_in);
  int bad = 0, ncalls = 0, chained = 0;
  for (int64_t k = 0; k < maxlen; k++) {
    int nb = 0;
    for (int i = 0; i < ns; i++) {
      seq *s = &seqs[i];
      if (k >= s->count) continue;
      fkh_call *c = &batch[nb];
      if (!strcmp(leaf, "shortconv")) {
        cr_assert(fkt_fixture_call(&s->calls[k], c, err, sizeof err) == 0, "%s", err);
        int64_t h = fkh_i64_of(c, "h"), m = fkh_i64_of(c, "m"), ldy = fkh_i64_of(c, "ldy");
        uint16_t *y = fkh_buf_of(c, "y");
        for (int64_t e = 0; e < (m > 0 ? (m - 1) * ldy + h : 0); e++) y[e] = CANARY;
        uint16_t *carry = fkh_buf_of(c, "carry");
        if (k > 0) {
          /* the state is the leaf's own; the manifest's copy of it must agree (the references'; a NaN by
           * class: suite.h, fkt_fixture_bits_equal) */
          int same = 1;
          for (int64_t e = 0; e < 2 * h; e++) same &= fkt_fixture_bits_equal(&carry[e], &s->carry[e], 2);
          if (!same && bad++ < 8 && loud)
            cr_log_error("%s: %s: the carry the leaf left after call %lld is not the reference's", t->label,
                         s->calls[k].path, (long long)(k - 1));
          memcpy(carry, s->carry, (size_t)(2 * h) * 2);
          chained++;
        }
        carry_in[nb] = malloc((size_t)(2 * h) * 2);
        cr_assert(carry_in[nb]);
        memcpy(carry_in[nb], carry, (size_t)(2 * h) * 2);
      } else {
        cr_assert(qk_call(&s->calls[k], &s->qk, c, err, sizeof err) == 0, "%s", err);
        chained += k > 0;
      }
      owner[nb++] = i;
    }
    char rerr[256];
    cr_assert(fkh_run(t, batch, nb, rerr, sizeof rerr) == 0, "%s: %s", t->label, rerr);
    for (int b = 0; b < nb; b++) {
      seq *s = &seqs[owner[b]];
      fkh_call *c = &batch[b];
      char msg[700] = "";
      int fail;
      if (c->failed) {
        snprintf(msg, sizeof msg, "%s: %s", s->calls[k].path, c->why);
        fail = 1;
      } else if (!strcmp(leaf, "shortconv")) {
        int off = 0;
        fail = check_shortconv(&s->calls[k], c, carry_in[b], msg, sizeof msg, &off);
        if (fkfix_tensor_get(&s->calls[k], "y_clamped")) {
          st.clamped_calls++;
          st.clamped_off_calls += off > 0;
          st.clamped_off_outputs += off;
        }
        int64_t h = fkh_i64_of(c, "h");
        free(s->carry);
        s->carry = malloc((size_t)(2 * h) * 2);
        cr_assert(s->carry);
        memcpy(s->carry, fkh_buf_of(c, "carry"), (size_t)(2 * h) * 2);
        free(carry_in[b]);
      } else {
        fail = check_qkprep(&s->calls[k], &s->qk, c, msg, sizeof msg);
        memcpy(s->qk.cache, fkh_buf_of(c, "x"), s->qk.n * 2);
      }
      if (fail && bad < 8) {
        if (loud) cr_log_error("%s: %s", t->label, msg);
        else cr_log_info("%s: %s", t->label, msg);
      }
      bad += fail;
      ncalls++;
      fkh_call_free(c);
    }
  }
  for (int i = 0; i < ns; i++) {
    for (int64_t k = 0; k < seqs[i].count; k++) fkfix_free(&seqs[i].calls[k]);
    free(seqs[i].calls);
    free(seqs[i].carry);
    free(seqs[i].qk.cache);
  }
  st.sequences = ns, st.calls = ncalls, st.chained = chained, st.bad = bad;
  free(seqs);
  free(all);
  free(batch);
  free(owner);
  free(carry_in);
  fkfix_list_free(paths, n);
  return st;
}

void fkt_state_fixture_test(const char *leaf, const fkh_target *t) {
  fkt_need(t);
  fkt_state_stats st = fkt_state_fixture_gate(leaf, t, 1);
  cr_log_info("%s fixtures on %s: %d sequences, %d calls (%d of them reading the state the leaf left), %d failures",
              leaf, t->label, st.sequences, st.calls, st.chained, st.bad);
  cr_assert(st.bad == 0, "%s fixtures on %s: %d failing calls (see log)", leaf, t->label, st.bad);
}

/* ---------------------------------------------------------------- istft streams --------- */

/* One manifest per stream (fixtures/README.md, istft): x (T, 1282), scalars T and clip. The
 * stream runs as the engine runs it: frames 0 .. T-1 on one ring, then the flush; calls at the
 * same position of different streams go to the target in one batch. The concatenated output
 * (T * 320 samples: 0, 160, then 320 per frame, then 480) is checked against every boundary's
 * reference within its per-sample bound tensor <reference>_bound (derived in the README). */
typedef struct stream {
  fkfix fx;
  int64_t T;
  float clip;
  float ring[1280];
  float *y;          /* T * 320 outputs */
  int64_t ny;
} stream;

static int check_istft(const stream *s, char *msg, size_t len) {
  for (int i = 0; i < s->fx.nboundaries; i++) {
    const fkfix_boundary *b = &s->fx.boundaries[i];
    char bname[48];
    snprintf(bname, sizeof bname, "%s_bound", b->tensor);
    const fkfix_tensor *ref = fkfix_tensor_get(&s->fx, b->tensor), *bound = fkfix_tensor_get(&s->fx, bname);
    if (!ref || !bound || ref->ndim != 1 || bound->ndim != 1 || ref->shape[0] != s->ny || bound->shape[0] != s->ny ||
        bound->dtype != FKFIX_F64) {
      snprintf(msg, len, "%s: boundary %s needs %s and %s (f64) of %lld samples", s->fx.path, b->tensor, b->tensor, bname,
               (long long)s->ny);
      return 1;
    }
    for (int64_t j = 0; j < s->ny; j++) {
      double r = ref->dtype == FKFIX_F64 ? ((const double *)ref->data)[j] : (double)((const float *)ref->data)[j];
      double bd = ((const double *)bound->data)[j], y = s->y[j];
      int ok;
      if (!by_class(y, r, &ok)) ok = fabs(y - r) <= bd;
      if (!ok) {
        snprintf(msg, len, "%s: y (%s) sample %lld: got %.9g, %s %.9g, bound %.3g", s->fx.path, b->tolerance, (long long)j,
                 y, b->tensor, r, bd);
        return 1;
      }
    }
  }
  return 0;
}

static fkt_state_stats istft_gate(const fkh_target *t, int loud) {
  fkt_state_stats st = { 0 };
  char dir[512], err[512];
  snprintf(dir, sizeof dir, "%s/istft", FKT_FIXTURE_DIR);
  char **paths;
  int n = fkfix_list(dir, &paths, err, sizeof err);
  cr_assert(n > 0, "no fixtures in %s (%s)", dir, n < 0 ? err : "empty");
  stream *s = calloc((size_t)n, sizeof *s);
  cr_assert(s);
  int64_t maxT = 0;
  for (int i = 0; i < n; i++) {
    cr_assert(fkfix_load(paths[i], &s[i].fx, err, sizeof err) == 0, "%s", err);
    cr_assert(fkfix_scalar_i64(&s[i].fx, "T", &s[i].T) == 0 && fkfix_scalar_f32(&s[i].fx, "clip", &s[i].clip) == 0 &&
              s[i].T >= 2, "%s: scalars T (>= 2) and clip", s[i].fx.path);
    const fkfix_tensor *x = fkfix_tensor_get(&s[i].fx, "x");
    cr_assert(x && x->is_input && x->dtype == FKFIX_F32 && x->ndim == 2 && x->shape[0] == s[i].T && x->shape[1] == 1282,
              "%s: x must be f32 (T, 1282)", s[i].fx.path);
    s[i].ny = s[i].T * 320;
    s[i].y = calloc((size_t)s[i].ny, sizeof *s[i].y);
    cr_assert(s[i].y);
    if (s[i].T > maxT) maxT = s[i].T;
  }
  fkh_call *batch = calloc((size_t)n, sizeof *batch);
  int *owner = calloc((size_t)n, sizeof *owner);
  int64_t *done = calloc((size_t)n, sizeof *done);
  cr_assert(batch && owner && done);
  for (int64_t k = 0; k <= maxT; k++) {
    int nb = 0;
    for (int i = 0; i < n; i++) {
      if (k > s[i].T) continue;
      fkh_call *c = &batch[nb];
      const int flush = k == s[i].T;
      fkh_call_init(c, flush ? "istft_flush" : "istft_frame", s[i].fx.casename);
      c->nan_policy = FKH_NAN_DEFAULT;
      fkh_set_i64(c, "frame", k);
      memcpy(fkh_set_buf(c, "ring", 1280), s[i].ring, sizeof s[i].ring);
      float *y = fkh_set_buf(c, "y", flush ? 480 : 320);
      for (int j = 0; j < (flush ? 480 : 320); j++) y[j] = fkt_f32(0x7fa5a5a5u);
      if (!flush) {
        const fkfix_tensor *x = fkfix_tensor_get(&s[i].fx, "x");
        memcpy(fkh_set_buf(c, "x", 1282), (const float *)x->data + k * x->strides[0], 1282 * sizeof(float));
        fkh_set_f32(c, "clip", s[i].clip);
        fkh_set_buf(c, "work", 3888);
      }
      owner[nb++] = i;
    }
    char rerr[256];
    cr_assert(fkh_run(t, batch, nb, rerr, sizeof rerr) == 0, "%s: %s", t->label, rerr);
    for (int b = 0; b < nb; b++) {
      stream *sp = &s[owner[b]];
      fkh_call *c = &batch[b];
      cr_assert(!c->failed, "%s: %s: %s", t->label, sp->fx.path, c->why);
      const int flush = k == sp->T;
      int64_t count = flush ? 480 : (k == 0 ? 0 : (k == 1 ? 160 : 320));
      const float *y = fkh_buf_of(c, "y");
      for (int64_t j = count; j < (flush ? 480 : 320); j++)
        if (memcmp(&y[j], &(uint32_t){ 0x7fa5a5a5u }, 4) != 0) {
          if (loud) cr_log_error("%s: %s: call %lld wrote y[%lld] past its %lld samples", t->label, sp->fx.path, (long long)k,
                                 (long long)j, (long long)count);
          st.bad++;
          break;
        }
      memcpy(sp->y + done[owner[b]], y, (size_t)count * sizeof *y);
      done[owner[b]] += count;
      memcpy(sp->ring, fkh_buf_of(c, "ring"), sizeof sp->ring);
      st.calls++;
      st.chained += k > 0;
      fkh_call_free(c);
    }
  }
  for (int i = 0; i < n; i++) {
    char msg[600];
    cr_assert_eq(done[i], s[i].ny, "%s: %lld samples out, want %lld", s[i].fx.path, (long long)done[i], (long long)s[i].ny);
    if (check_istft(&s[i], msg, sizeof msg)) {
      if (loud) cr_log_error("%s: %s", t->label, msg);
      else cr_log_info("%s: %s", t->label, msg);
      st.bad++;
    }
    st.samples += s[i].ny;
    free(s[i].y);
    fkfix_free(&s[i].fx);
  }
  st.sequences = n;
  free(s), free(batch), free(owner), free(done);
  fkfix_list_free(paths, n);
  return st;
}

fkt_state_stats fkt_istft_fixture_gate(const fkh_target *t, int loud) { return istft_gate(t, loud); }

void fkt_istft_fixture_test(const fkh_target *t) {
  fkt_need(t);
  fkt_state_stats st = istft_gate(t, 1);
  cr_log_info("istft fixtures on %s: %d streams, %d calls on the stamp's own ring, %ld samples checked, %d failures",
              t->label, st.sequences, st.calls, st.samples, st.bad);
  cr_assert(st.bad == 0, "istft fixtures on %s: %d failing streams (see log)", t->label, st.bad);
}
