/* tests/suite.c: shared machinery of the Criterion suites. */
#include "suite.h"

#include <criterion/criterion.h>
#include <criterion/logging.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "contract/contract.h"

/* ---------------------------------------------------------------- target pairs --------- */

typedef struct { const char *id, *variant, *tier; uint64_t features; } stamp_ref;
#define FKT_STAMP_REF(id, variant, tier, symbol, features) { #id, #variant, #tier, (uint64_t)(features) },
static const stamp_ref x86_stamps[] = { FK_STAMPS_X86_64(FKT_STAMP_REF) };
static const stamp_ref a64_stamps[] = { FK_STAMPS_AARCH64(FKT_STAMP_REF) };
#define COUNT(a) ((int)(sizeof(a) / sizeof((a)[0])))

/* The one qemu CPU that runs stamp s: neoverse-n1 has ASIMD and FEAT_DotProd alone of the features
 * the variants name, so the stamps needing no more run there (neon, dotprod: a stamp with a later
 * instruction would fault), the others on max (FEAT_BF16: bfcvt, bf16). qemu implements an
 * instruction the same on both CPUs: a second run would prove nothing more. */
static const char *qemu_cpu_of(const stamp_ref *s) {
  return s->features & ~(uint64_t)(FK_CPU_ASIMD | FK_CPU_DOTPROD) ? "max" : "neoverse-n1";
}

static int add_pair(fkt_pair *out, int n, int cap, const char *form, fkh_target a, fkh_target b) {
  if (n >= cap) cr_assert_fail("fkt: too many pairs");
  snprintf(out[n].form, sizeof out[n].form, "%s", form);
  out[n].a = a;
  out[n].b[0] = b;
  out[n].nb = 1;
  return n + 1;
}

/* one more b for the last pair */
static void add_b(fkt_pair *p, fkh_target b) {
  if (p->nb >= FKT_PAIR_MAX_B) cr_assert_fail("fkt: too many comparisons of %s", p->a.label);
  p->b[p->nb++] = b;
}

static int is_leaf_form(const char *leaf, const char *id) {
  size_t n = strlen(leaf);
  return strncmp(id, leaf, n) == 0 && id[n] == '_';
}

int fkt_exact_pairs(const char *leaf, fkt_pair *out, int cap) {
  int n = 0;
  for (int f = 0; f < fkh_nforms; f++) {
    const char *form = fkh_forms[f].id;
    if (strcmp(fkh_forms[f].leaf, leaf) != 0) continue;
    for (int i = 0; i < COUNT(x86_stamps); i++)
      if (!strcmp(x86_stamps[i].id, form) && !strcmp(x86_stamps[i].tier, "exact"))
        n = add_pair(out, n, cap, form, fkh_host(x86_stamps[i].variant), fkh_contract(0));
    for (int i = 0; i < COUNT(a64_stamps); i++) {
      if (strcmp(a64_stamps[i].id, form) || strcmp(a64_stamps[i].tier, "exact")) continue;
      n = add_pair(out, n, cap, form, fkh_remote(a64_stamps[i].variant, qemu_cpu_of(&a64_stamps[i])), fkh_contract(0));
      for (int j = 0; j < COUNT(x86_stamps); j++)
        if (!strcmp(x86_stamps[j].id, form) && !strcmp(x86_stamps[j].tier, "exact"))
          add_b(&out[n - 1], fkh_host(x86_stamps[j].variant));
    }
    /* the contract model built for AArch64, for forms that have an exact tier */
    int exact = 0;
    for (int i = 0; i < COUNT(x86_stamps); i++) exact |= !strcmp(x86_stamps[i].id, form) && !strcmp(x86_stamps[i].tier, "exact");
    if (exact) n = add_pair(out, n, cap, form, fkh_remote("contract", "max"), fkh_contract(0));
  }
  (void)is_leaf_form;
  return n;
}

static int is_fast_variant(const char *variant) {
  for (int i = 0; i < COUNT(x86_stamps); i++)
    if (!strcmp(x86_stamps[i].variant, variant)) return !strcmp(x86_stamps[i].tier, "fast");
  for (int i = 0; i < COUNT(a64_stamps); i++)
    if (!strcmp(a64_stamps[i].variant, variant)) return !strcmp(a64_stamps[i].tier, "fast");
  return 0;
}

int fkt_is_fast(const fkh_target *t) {
  if (t->kind == FKH_CONTRACT) return !strcmp(t->variant, "fast");
  if (t->kind == FKH_REMOTE && !strncmp(t->variant, "contract", 8)) return !strcmp(t->variant, "contract_fast");
  return is_fast_variant(t->variant);
}

int fkt_target_runs(const fkh_target *t, int form) {
  if (form < 0 || form >= fkh_nforms) return 0;
  const int fast = fkt_is_fast(t);
  if (t->kind == FKH_CONTRACT || (t->kind == FKH_REMOTE && !strncmp(t->variant, "contract", 8)))
    return fast ? fkh_has_fast_contract(form) : fkh_has_contract(form);
  if (t->kind == FKH_HOST) return fkh_host_stamp(form, t->variant, NULL) != NULL;
  for (int i = 0; i < COUNT(a64_stamps); i++)
    if (!strcmp(a64_stamps[i].id, fkh_forms[form].id) && !strcmp(a64_stamps[i].variant, t->variant)) return 1;
  return 0;
}

int fkt_fixture_targets(const char *leaf, const char *tier, fkh_target *out, int cap) {
  int n = 0;
  const char *seen[16];
  int nseen = 0, exact = !strcmp(tier, "exact");
  if (exact) out[n++] = fkh_contract(0);
  /* the fast tier's models, where some form of the leaf has one (its fast tier is deterministic) */
  for (int f = 0; !exact && f < fkh_nforms; f++)
    if (!strcmp(fkh_forms[f].leaf, leaf) && fkh_has_fast_contract(f)) {
      out[n++] = fkh_contract_fast(0);
      break;
    }
  /* one target per distinct variant having a stamp of this leaf in this tier */
  for (int pass = 0; pass < 2; pass++) {
    const stamp_ref *tab = pass ? a64_stamps : x86_stamps;
    int cnt = pass ? COUNT(a64_stamps) : COUNT(x86_stamps);
    for (int i = 0; i < cnt && n < cap; i++) {
      if (!is_leaf_form(leaf, tab[i].id) || strcmp(tab[i].tier, tier)) continue;
      int dup = 0;
      for (int k = 0; k < nseen; k++) dup |= !strcmp(seen[k], tab[i].variant);
      if (dup) continue;
      seen[nseen++] = tab[i].variant;
      if (!pass) out[n++] = fkh_host(tab[i].variant);
      if (pass && n < cap) out[n++] = fkh_remote(tab[i].variant, qemu_cpu_of(&tab[i]));
    }
  }
  return n;
}

/* ---------------------------------------------------------------- exact comparison ----- */

void fkt_need(const fkh_target *t) {
  char why[200];
  if (!fkh_available(t, why, sizeof why)) cr_skip_test("%s: %s", t->label, why);
}

static void run_or_fail(const fkh_target *t, fkh_call *calls, int n) {
  char err[256];
  if (fkh_run(t, calls, n, err, sizeof err) != 0) cr_assert_fail("%s: %s", t->label, err);
}

/* the cases of a (already run) against b's run of the same cases */
static int mismatches(const fkh_target *a, fkh_call *ca, const fkh_target *b, fkh_call *cb, int n, char *first,
                      size_t firstlen) {
  run_or_fail(b, cb, n);
  int bad = 0;
  char msg[512];
  if (first && firstlen) first[0] = 0;
  for (int i = 0; i < n; i++) {
    if (fkh_same_outputs(&ca[i], &cb[i], msg, sizeof msg)) continue;
    if (bad < 5) cr_log_info("%s vs %s: %s", a->label, b->label, msg);
    if (bad == 0 && first) snprintf(first, firstlen, "%s", msg);
    bad++;
  }
  return bad;
}

static fkh_call *copy_cases(const fkh_call *ca, int n) {
  fkh_call *cb = calloc((size_t)n, sizeof *cb);
  cr_assert_not_null(cb);
  for (int i = 0; i < n; i++) fkh_call_copy(&cb[i], &ca[i]);
  return cb;
}

int fkt_count_mismatches(const char *form, fkt_builder build, fkh_target a, fkh_target b,
                         char *first, size_t firstlen) {
  fkh_call *ca;
  int n = build(form, &ca);
  fkh_call *cb = copy_cases(ca, n);
  run_or_fail(&a, ca, n);
  int bad = mismatches(&a, ca, &b, cb, n, first, firstlen);
  fkt_free_cases(ca, n);
  fkt_free_cases(cb, n);
  return bad;
}

void fkt_check_pair(const fkt_pair *p, fkt_builder build) {
  fkt_need(&p->a);
  for (int k = 0; k < p->nb; k++) fkt_need(&p->b[k]);
  char first[512];
  fkh_call *ca;
  int n = build(p->form, &ca);
  cr_expect(n >= 200, "%s: only %d cases", p->form, n);
  fkh_call *orig = copy_cases(ca, n); /* the cases unrun: each b runs a copy of them */
  run_or_fail(&p->a, ca, n);
  for (int k = 0; k < p->nb; k++) {
    fkh_call *cb = copy_cases(orig, n);
    int bad = mismatches(&p->a, ca, &p->b[k], cb, n, first, sizeof first);
    fkt_free_cases(cb, n);
    cr_log_info("%s: %s vs %s: %d cases, %d mismatching", p->form, p->a.label, p->b[k].label, n, bad);
    cr_assert(bad == 0, "%s: %s vs %s: %d of %d cases differ; first: %s", p->form, p->a.label, p->b[k].label,
              bad, n, first);
  }
  fkt_free_cases(ca, n);
  fkt_free_cases(orig, n);
}

/* ---------------------------------------------------------------- fixtures -------------- */

static size_t dtype_size(fkfix_dtype d) {
  switch (d) {
  case FKFIX_BF16: case FKFIX_U16: return 2;
  case FKFIX_F32: return 4;
  default: return 8;
  }
}

int fkt_fixture_call(const fkfix *fx, fkh_call *c, char *err, size_t errlen) {
  char id[96];
  snprintf(id, sizeof id, "%s_%s", fx->leaf, fx->form);
  if (fkh_form_index(id) < 0) {
    snprintf(err, errlen, "%s: no leaf form %s", fx->path, id);
    return -1;
  }
  fkh_call_init(c, id, fx->casename);
  const fkh_form *fm = &fkh_forms[c->form];
  for (int i = 0; i < fm->nfields; i++) {
    const fkh_field *fd = &fm->fields[i];
    if (fd->kind == FK_FIELD_I64) {
      if (fkfix_scalar_i64(fx, fd->name, &c->v[i].i64) != 0) goto missing;
    } else if (fd->kind == FK_FIELD_F32) {
      if (fkfix_scalar_f32(fx, fd->name, &c->v[i].f32) != 0) goto missing;
    } else if (fd->dir != FK_DIR_OUT && fd->dir != FK_DIR_SCRATCH) {
      const fkfix_tensor *t = fkfix_tensor_get(fx, fd->name);
      if (!t || !t->is_input) goto missing;
      if (fd->elem == FK_ELEM_I32) {
        /* ids and codes (embed): i64 in the manifest, int32 in the argument, narrowed in range */
        size_t cnt = t->nbytes / 8;
        if (t->dtype != FKFIX_I64) {
          snprintf(err, errlen, "%s: tensor '%s' must be i64 for the int32 field %s", fx->path, t->name, fd->name);
          return -1;
        }
        fkh_buf_alloc(&c->v[i].buf, cnt * 4);
        for (size_t k = 0; k < cnt; k++) {
          int64_t v;
          memcpy(&v, (const uint8_t *)t->data + 8 * k, 8);
          if (v < INT32_MIN || v > INT32_MAX) {
            snprintf(err, errlen, "%s: tensor '%s' [%zu] = %lld is out of int32 range", fx->path, t->name, k, (long long)v);
            return -1;
          }
          int32_t w = (int32_t)v;
          memcpy(c->v[i].buf.data + 4 * k, &w, 4);
        }
        continue;
      }
      if (fd->elem == FK_ELEM_U64) {
        /* PRNG state (sample topk): the uint64 bits as an i64 tensor */
        if (t->dtype != FKFIX_I64) {
          snprintf(err, errlen, "%s: tensor '%s' must be i64 for the uint64 field %s", fx->path, t->name, fd->name);
          return -1;
        }
        fkh_buf_alloc(&c->v[i].buf, t->nbytes);
        memcpy(c->v[i].buf.data, t->data, t->nbytes);
        continue;
      }
      if (fd->elem == FK_ELEM_I8 || fd->elem == FK_ELEM_U8) {
        /* bytes (the quantized gemv forms' weights): a u16 tensor, its elements little-endian pairs */
        if (t->dtype != FKFIX_U16) {
          snprintf(err, errlen, "%s: tensor '%s' must be u16 (byte pairs) for the byte field %s", fx->path, t->name,
                   fd->name);
          return -1;
        }
        fkh_buf_alloc(&c->v[i].buf, t->nbytes);
        for (size_t k = 0; k < t->nbytes / 2; k++) {
          uint16_t h;
          memcpy(&h, (const uint8_t *)t->data + 2 * k, 2);
          c->v[i].buf.data[2 * k] = (uint8_t)h, c->v[i].buf.data[2 * k + 1] = (uint8_t)(h >> 8);
        }
        continue;
      }
      size_t want = fd->elem == FK_ELEM_F32 ? 4 : 2;
      if (dtype_size(t->dtype) != want || (want == 4 && t->dtype != FKFIX_F32)) {
        snprintf(err, errlen, "%s: tensor '%s' has the wrong dtype for field %s", fx->path, t->name, fd->name);
        return -1;
      }
      fkh_buf_alloc(&c->v[i].buf, t->nbytes);
      memcpy(c->v[i].buf.data, t->data, t->nbytes);
    }
    continue;
  missing:
    snprintf(err, errlen, "%s: no %s for field '%s' of %s", fx->path,
             fd->kind == FK_FIELD_PTR ? "input tensor" : "scalar", fd->name, id);
    return -1;
  }
  /* outputs and scratch: sized by their extents (the template's, generated/fk_leaves.h) */
  for (int i = 0; i < fm->nfields; i++) {
    const fkh_field *fd = &fm->fields[i];
    if (fd->kind != FK_FIELD_PTR || (fd->dir != FK_DIR_OUT && fd->dir != FK_DIR_SCRATCH)) continue;
    int64_t e = fkh_extent(c, i);
    if (e < 0 || e > ((int64_t)1 << 31)) {
      snprintf(err, errlen, "%s: field %s: extent %lld from the manifest's scalars", fx->path, fd->name, (long long)e);
      return -1;
    }
    fkh_set_buf(c, fd->name, (size_t)e);
  }
  if (!strcmp(fx->leaf, "gemv")) {
    /* gemv's payload r holds the residual from the first destination slot on: the leaf reads it
     * at r + y_off + j * ldy + n, y's indexing */
    const fkfix_tensor *r = fkfix_tensor_get(fx, "r");
    if (r) {
      int64_t off = fkh_i64_of(c, "y_off");
      size_t ny = (size_t)fkh_extent(c, fkh_field_index(c, "r"));
      uint16_t *rb = fkh_set_buf(c, "r", ny);
      if ((size_t)off * 2 + r->nbytes > ny * 2) {
        snprintf(err, errlen, "%s: tensor 'r' does not fit the destination shape", fx->path);
        return -1;
      }
      memcpy(rb + off, r->data, r->nbytes);
    }
  }
  return 0;
}

/* Tolerances: fixtures/README.md, "Tolerance ids". u = 2^-24, eta = 2^-150. */
static const double U = 0x1p-24, ETA = 0x1p-150;
static double gamma_(double d) { return d * U / (1 - d * U); }

static double bf16_value(uint16_t h) {
  uint32_t u = (uint32_t)h << 16;
  float f;
  memcpy(&f, &u, 4);
  return (double)f;
}

static double tensor_at(const fkfix_tensor *t, int64_t i0, int64_t i1) {
  int64_t off = t->ndim == 1 ? i0 * t->strides[0] : i0 * t->strides[0] + i1 * t->strides[1];
  switch (t->dtype) {
  case FKFIX_F64: return ((const double *)t->data)[off];
  case FKFIX_F32: return (double)((const float *)t->data)[off];
  default: return bf16_value(((const uint16_t *)t->data)[off]);
  }
}

int fkt_fixture_bits_equal(const void *got, const void *want, size_t es) {
  uint32_t g = 0, w = 0;
  if (!memcmp(got, want, es)) return 1;
  memcpy(&g, got, es);
  memcpy(&w, want, es);
  if (es == 2) return (g & 0x7fffu) > 0x7f80u && (w & 0x7fffu) > 0x7f80u;
  return es == 4 && (g & 0x7fffffffu) > 0x7f800000u && (w & 0x7fffffffu) > 0x7f800000u;
}

/* Special values compare by class; returns 1 when decided (ok set), 0 when both are finite. */
static int by_class(double y, double ref, int *ok) {
  if (isnan(ref)) { *ok = isnan(y); return 1; }
  if (isinf(ref)) { *ok = isinf(y) && (y > 0) == (ref > 0); return 1; }
  if (!isfinite(y)) { *ok = 0; return 1; }
  return 0;
}

static double rmsnorm_bound(double w, double z, double delta) {
  return fabs(w) * fabs(z) * (0x1p-7 + 0x1p-14 + 2 * delta) + fabs(w) * 0x1p-132 + 0x1p-133;
}

/* the once forms (rmsnorm_once_f64): one f32 product more, one bf16 rounding */
static double rmsnorm_once_bound(double w, double z, double delta) {
  return fabs(w) * fabs(z) * (0x1p-8 + (delta + U) * (1 + 0x1p-6)) + fabs(w) * 0x1p-149 + 0x1p-133;
}

/* y is bf16, or f32 holding bf16 values (the wide forms: the low 16 bits must be zero) */
static int check_rmsnorm(const fkfix *fx, const fkfix_boundary *b, fkh_call *c, char *msg, size_t len) {
  int64_t rows = fkh_i64_of(c, "rows"), n = fkh_i64_of(c, "n");
  float eps;
  fkfix_scalar_f32(fx, "eps", &eps);
  const fkfix_tensor *ref = fkfix_tensor_get(fx, b->tensor), *z = fkfix_tensor_get(fx, "z_f64");
  const uint16_t *w = fkh_buf_of(c, "w");
  const void *out = fkh_buf_of(c, b->field);
  const int wide = fkh_forms[c->form].fields[fkh_field_index(c, b->field)].elem == FK_ELEM_F32;
  const int f64 = !strcmp(b->tolerance, "rmsnorm_f64") || !strcmp(b->tolerance, "rmsnorm_once_f64");
  int64_t stride = fkh_i64_of(c, !strcmp(b->field, "r") ? "r_stride" : "y_stride");
  double delta = (gamma_((double)n + 1) / 2 + ETA / (2 * (double)eps) + 4 * U) * (1 + 0x1p-20);
  for (int64_t r = 0; r < rows; r++) {
    for (int64_t i = 0; i < n; i++) {
      uint32_t bits = wide ? ((const uint32_t *)out)[r * stride + i] : (uint32_t)((const uint16_t *)out)[r * stride + i] << 16;
      uint16_t got = (uint16_t)(bits >> 16);
      double y = bf16_value(got), rv = tensor_at(ref, r, i);
      int ok;
      if (bits & 0xffffu) {
        ok = 0;
      } else if (b->bitexact) {
        uint16_t want = ((const uint16_t *)ref->data)[r * ref->strides[0] + i * ref->strides[1]];
        ok = fkt_fixture_bits_equal(&got, &want, 2);   /* a NaN by class (suite.h) */
      } else if (!by_class(y, f64 ? bf16_value(w[i]) * rv : rv, &ok)) {
        double wi = bf16_value(w[i]), zi = tensor_at(z, r, i);
        double bound = rmsnorm_bound(wi, zi, delta), once = rmsnorm_once_bound(wi, zi, delta);
        if (!strcmp(b->tolerance, "rmsnorm_f64")) ok = fabs(y - wi * zi) <= bound;
        else if (!strcmp(b->tolerance, "rmsnorm_torch")) ok = fabs(y - rv) <= bound + rmsnorm_bound(wi, zi, delta + 2 * U);
        else if (!strcmp(b->tolerance, "rmsnorm_once_f64")) ok = fabs(y - wi * zi) <= once;
        else if (!strcmp(b->tolerance, "rmsnorm_once_torch"))
          ok = fabs(y - rv) <= once + rmsnorm_once_bound(wi, zi, delta + 2 * U);
        else {
          snprintf(msg, len, "%s: unknown tolerance '%s'", fx->path, b->tolerance);
          return 0;
        }
      }
      if (!ok) {
        snprintf(msg, len, "%s: boundary %s/%s (%s): row %lld [%lld]: got 0x%0*x (%.9g), reference %.9g",
                 fx->path, b->field, b->tensor, b->tolerance, (long long)r, (long long)i, wide ? 8 : 4,
                 wide ? bits : got, y, rv);
        return 0;
      }
    }
  }
  return 1;
}

static int check_gemv(const fkfix *fx, const fkfix_boundary *b, fkh_call *c, int fast, char *msg, size_t len) {
  int64_t rb = fkh_i64_of(c, "row_begin"), re = fkh_i64_of(c, "row_end"), m = fkh_i64_of(c, "m");
  const fkfix_tensor *ref = fkfix_tensor_get(fx, b->tensor);
  int f32_out = fkh_forms[c->form].fields[fkh_field_index(c, "y")].elem == FK_ELEM_F32;
  for (int64_t j = 0; j < m; j++) {
    for (int64_t row = rb; row < re; row++) {
      double yv = fkt_gemv_output(c, j, row), rv = tensor_at(ref, j, row), bound = 0;
      int64_t at = fkh_i64_of(c, "y_off") + j * fkh_i64_of(c, "ldy") + row;
      int ok;
      if (b->bitexact) {
        int64_t off = j * ref->strides[0] + row * ref->strides[1];
        /* a NaN by class (suite.h, fkt_fixture_bits_equal) */
        ok = f32_out ? fkt_fixture_bits_equal((const uint32_t *)fkh_buf_of(c, "y") + at, (const uint32_t *)ref->data + off, 4)
                     : fkt_fixture_bits_equal((const uint16_t *)fkh_buf_of(c, "y") + at, (const uint16_t *)ref->data + off, 2);
      } else if (!strcmp(b->tolerance, "gemv_f64") || !strcmp(b->tolerance, "gemv_fast_f64") ||
                 !strcmp(b->tolerance, "gemv_q_fast_f64") || !strcmp(b->tolerance, "gemv_torch")) {
        /* the fast E of the form's kind: gemv_fast_f64 (bf16 dot instructions) for the bf16 forms,
         * gemv_q_fast_f64 (integer dots over quantized activations) for the quantized ones */
        if (fast && (strcmp(b->tolerance, "gemv_q_fast_f64") == 0) != fkt_gemv_is_quant(c)) {
          snprintf(msg, len, "%s: tolerance %s does not apply to form %s", fx->path, b->tolerance, fkh_forms[c->form].id);
          return 0;
        }
        double e;
        fkt_gemv_reference(c, j, row, fast, &e);
        /* torch's own f32 sum carries an error <= E as well: the two add (README, gemv_torch) */
        bound = fkt_gemv_bound(c, rv, e, !strcmp(b->tolerance, "gemv_torch") ? 2 : 1);
        ok = fkt_gemv_within(yv, rv, bound);
      } else {
        snprintf(msg, len, "%s: unknown tolerance '%s'", fx->path, b->tolerance);
        return 0;
      }
      if (!ok) {
        snprintf(msg, len, "%s: boundary %s/%s (%s): row j=%lld n=%lld: got %.9g, reference %.9g, bound %.3g",
                 fx->path, b->field, b->tensor, b->tolerance, (long long)j, (long long)row, yv, rv, bound);
        return 0;
      }
    }
  }
  return 1;
}

/* embed (fixtures/README.md, embed): every boundary bit-exact, y row r against row r of the
 * reference (bf16 or f32 by the reference's dtype; a bf16 y against an f32 reference, the
 * codebook_mean_x6_bf16 form on a codebook_mean_x6 fixture, against the reference's RNE). */
static int check_embed(const fkfix *fx, const fkfix_boundary *b, fkh_call *c, char *msg, size_t len) {
  const fkfix_tensor *ref = fkfix_tensor_get(fx, b->tensor);
  int64_t d = fkh_i64_of(c, "d"), ldy = fkh_i64_of(c, "ldy");
  int wide = fkh_forms[c->form].fields[fkh_field_index(c, b->field)].elem == FK_ELEM_F32;
  int rounded = !wide && ref && ref->dtype == FKFIX_F32 && strstr(fkh_forms[c->form].form, "_bf16") != NULL;
  if (!ref || !b->bitexact || ref->ndim != 2 || ref->shape[1] != d || ((ref->dtype == FKFIX_F32) != wide && !rounded)) {
    snprintf(msg, len, "%s: boundary %s/%s: embed compares a (rows, d) %s reference bit for bit", fx->path, b->field,
             b->tensor, wide ? "f32" : "bf16");
    return 0;
  }
  const uint8_t *out = fkh_buf_of(c, b->field);
  for (int64_t r = 0; r < ref->shape[0]; r++)
    for (int64_t i = 0; i < d; i++) {
      int64_t at = r * ldy + i, off = r * ref->strides[0] + i * ref->strides[1];
      uint32_t got = 0, want = 0;
      memcpy(&got, out + at * (wide ? 4 : 2), wide ? 4 : 2);
      memcpy(&want, (const uint8_t *)ref->data + off * (wide || rounded ? 4 : 2), wide || rounded ? 4 : 2);
      if (rounded) want = fkc_rne_bits(want, FKC_EXACT); /* the contract's integer RNE */
      if (!fkt_fixture_bits_equal(&got, &want, wide ? 4 : 2)) {   /* a NaN by class (suite.h) */
        snprintf(msg, len, "%s: boundary %s/%s (bitexact): row %lld [%lld]: got 0x%0*x, reference 0x%0*x", fx->path,
                 b->field, b->tensor, (long long)r, (long long)i, wide ? 8 : 4, got, wide ? 8 : 4, want);
        return 0;
      }
    }
  return 1;
}

/* sample (fixtures/README.md, sample): the int32 token against torch's (an i64 of shape 1), bit for bit */
/* sample_draw (fixtures/README.md): the bound B(n) on |u - F| within which a draw may land on
 * the other side of a CDF boundary than the float64 reference. */
static double sample_draw_bound(int64_t n) {
  const double dn = (double)n;
  const double bo = 2 * (3 * U + gamma_(dn) + dn * 0x1p-147) + U, bt = 2 * (3 * U + gamma_(dn)) + dn * 0x1p-53;
  return (bo + bt) * (1 + 0x1p-20);
}

/* topk's token against tok_ref: equal, or the nearest p > 0 neighbour when u lies within the
 * bound of the boundary between them. */
static int check_sample_draw(const fkfix *fx, const fkfix_boundary *b, fkh_call *c, char *msg, size_t len) {
  const fkfix_tensor *ref = fkfix_tensor_get(fx, b->tensor), *ut = fkfix_tensor_get(fx, "u_ref"),
                     *pt = fkfix_tensor_get(fx, "p_torch");
  const int64_t n = fkh_i64_of(c, "n");
  if (!ref || !ut || !pt || ref->dtype != FKFIX_I64 || ut->dtype != FKFIX_F32 || pt->dtype != FKFIX_F32 ||
      pt->ndim != 1 || pt->shape[0] != n || strcmp(b->field, "tok") != 0) {
    snprintf(msg, len, "%s: sample_draw needs tok / tok_ref i64 (1), u_ref f32 (1), p_torch f32 (n)", fx->path);
    return 0;
  }
  const int32_t got = ((const int32_t *)fkh_buf_of(c, "tok"))[0];
  const int64_t want = ((const int64_t *)ref->data)[0];
  if ((int64_t)got == want) return 1;
  const float *p = (const float *)pt->data;
  const double u = (double)((const float *)ut->data)[0], bound = sample_draw_bound(n);
  double *cdf = malloc((size_t)n * sizeof *cdf), acc = 0;
  for (int64_t i = 0; i < n; i++) acc += (double)p[i], cdf[i] = acc;
  int ok = 0;
  double edge = NAN;
  if (got >= 0 && got < n && p[got] > 0) {
    int64_t lo = want - 1, hi = want + 1;
    while (lo >= 0 && !(p[lo] > 0)) lo--;
    while (hi < n && !(p[hi] > 0)) hi++;
    if (got == lo) edge = cdf[lo] / acc;        /* the boundary below tok_ref */
    else if (got == hi) edge = cdf[want] / acc; /* the boundary above it */
    ok = !isnan(edge) && fabs(u - edge) <= bound;
    if (ok)
      cr_log_info("%s: token %d, reference %lld: u %.9g within %.3g of the boundary %.17g (accepted)", fx->path, got,
                  (long long)want, u, bound, edge);
  }
  free(cdf);
  if (!ok)
    snprintf(msg, len,
             "%s: boundary tok/%s (sample_draw): token %d, reference %lld at u %.9g (boundary %.17g, bound %.3g)",
             fx->path, b->tensor, got, (long long)want, u, edge, bound);
  return ok;
}

static int check_sample(const fkfix *fx, const fkfix_boundary *b, fkh_call *c, char *msg, size_t len) {
  if (!strcmp(b->tolerance, "sample_draw")) return check_sample_draw(fx, b, c, msg, len);
  const fkfix_tensor *ref = fkfix_tensor_get(fx, b->tensor);
  if (b->bitexact && !strcmp(b->field, "state")) {
    /* the committed PRNG state: uint64 bits against an i64 (2) reference */
    const uint64_t *st = fkh_buf_of(c, "state");
    if (!ref || ref->dtype != FKFIX_I64 || ref->ndim != 1 || ref->shape[0] != 2) {
      snprintf(msg, len, "%s: boundary state/%s: an i64 (2) reference", fx->path, b->tensor);
      return 0;
    }
    const int64_t *w = (const int64_t *)ref->data;
    if (st[0] != (uint64_t)w[0] || st[1] != (uint64_t)w[1]) {
      snprintf(msg, len, "%s: boundary state/%s (bitexact): state { %llu, %llu }, reference { %llu, %llu }", fx->path,
               b->tensor, (unsigned long long)st[0], (unsigned long long)st[1], (unsigned long long)w[0],
               (unsigned long long)w[1]);
      return 0;
    }
    return 1;
  }
  if (!ref || !b->bitexact || ref->dtype != FKFIX_I64 || ref->ndim != 1 || ref->shape[0] != 1) {
    snprintf(msg, len, "%s: boundary %s/%s: sample compares one token with an i64 (1) reference bit for bit", fx->path,
             b->field, b->tensor);
    return 0;
  }
  const int32_t got = ((const int32_t *)fkh_buf_of(c, b->field))[0];
  const int64_t want = ((const int64_t *)ref->data)[0];
  if ((int64_t)got != want) {
    snprintf(msg, len, "%s: boundary %s/%s (bitexact): token %d, reference %lld", fx->path, b->field, b->tensor, got,
             (long long)want);
    return 0;
  }
  return 1;
}

/* attn (fixtures/README.md, attn_f64 and attn_torch): y (heads x d bf16) against the reference
 * within the per-output bound tensor <reference>_bound the generator derived; NaN and infinite
 * references by class. */
static int check_attn(const fkfix *fx, const fkfix_boundary *b, fkh_call *c, char *msg, size_t len) {
  char bname[64];
  snprintf(bname, sizeof bname, "%s_bound", b->tensor);
  const fkfix_tensor *ref = fkfix_tensor_get(fx, b->tensor), *bd = fkfix_tensor_get(fx, bname);
  int64_t heads = fkh_i64_of(c, "kv_heads") * fkh_i64_of(c, "group"), hd = strstr(fx->form, "64") ? 64 : 32;
  if (fkh_field_index(c, "rows") >= 0) heads *= fkh_i64_of(c, "rows");   /* prefill: (rows*heads, d) */
  if (!ref || !bd || b->bitexact || ref->ndim != 2 || bd->ndim != 2 || ref->shape[0] != heads ||
      ref->shape[1] != hd || bd->shape[0] != heads || bd->shape[1] != hd || bd->dtype != FKFIX_F64) {
    snprintf(msg, len, "%s: boundary %s/%s: attn compares (heads, d) against a reference and its f64 %s", fx->path,
             b->field, b->tensor, bname);
    return 0;
  }
  const uint16_t *y = fkh_buf_of(c, b->field);
  /* the wide forms: yw (laid out as y: yw_ld = y_ld) against the same reference and bound, and
   * bit for bit y widened */
  const float *yw = fkh_field_index(c, "yw") >= 0 ? fkh_buf_of(c, "yw") : NULL;
  for (int64_t h = 0; h < heads; h++)
    for (int64_t i = 0; i < hd; i++) {
      double yv = bf16_value(y[h * hd + i]), rv = tensor_at(ref, h, i), bound = tensor_at(bd, h, i);
      int ok;
      if (!by_class(yv, rv, &ok)) ok = fabs(yv - rv) <= bound;
      if (!ok) {
        snprintf(msg, len, "%s: boundary %s/%s (%s): head %lld [%lld]: got 0x%04x (%.9g), reference %.9g, bound %.3g",
                 fx->path, b->field, b->tensor, b->tolerance, (long long)h, (long long)i, y[h * hd + i], yv, rv, bound);
        return 0;
      }
      if (!yw) continue;
      double wv = (double)yw[h * hd + i];
      uint32_t wbits;
      memcpy(&wbits, &yw[h * hd + i], 4);
      if (!by_class(wv, rv, &ok)) ok = fabs(wv - rv) <= bound;
      if (!ok || wbits != (uint32_t)y[h * hd + i] << 16) {
        snprintf(msg, len, "%s: boundary yw/%s (%s): head %lld [%lld]: got 0x%08x (%.9g), y 0x%04x, reference %.9g, "
                 "bound %.3g", fx->path, b->tensor, b->tolerance, (long long)h, (long long)i, wbits, wv, y[h * hd + i],
                 rv, bound);
        return 0;
      }
    }
  return 1;
}

/* SwiGLU (fixtures/README.md, swiglu_f64 and swiglu_torch): B bounds |h - u*z| about the
 * float64 silu z = g / (1 + e^-g); delta = 5u(1 + 2^-20) covers exp (1.5 ulp = 3u), the add and
 * the divide; the silu's absolute term is eta (a subnormal quotient), or 2^-120 for g <= -88,
 * where exp(-g) may overflow and silu is -0 (|g e^g| < 2^-120 there). */
static double swiglu_bound(double g, double z, double u, int bf16) {
  const double delta = 5 * U * (1 + 0x1p-20);
  double S = fabs(z), Uu = fabs(u), as = g <= -88 ? 0x1p-120 : ETA;
  double es = delta * S + as;
  if (!bf16) return Uu * es + U * Uu * (S + es) + ETA;
  double esb = es + 0x1p-8 * (S + es) + 0x1p-134;
  return Uu * esb + ETA + 0x1p-8 * Uu * (S + esb) + 0x1p-134;
}

static int check_swiglu(const fkfix *fx, const fkfix_boundary *b, fkh_call *c, char *msg, size_t len) {
  int64_t rows = fkh_i64_of(c, "rows"), n = fkh_i64_of(c, "n"), hs = fkh_i64_of(c, "h_stride");
  const fkfix_tensor *ref = fkfix_tensor_get(fx, b->tensor), *z = fkfix_tensor_get(fx, "silu_f64");
  const fkfix_tensor *g = fkfix_tensor_get(fx, "g"), *u = fkfix_tensor_get(fx, "u");
  int wide = fkh_forms[c->form].fields[fkh_field_index(c, "h")].elem == FK_ELEM_F32;
  int bf16 = g->dtype == FKFIX_BF16;
  const void *out = fkh_buf_of(c, b->field);
  if (!ref || !z) {
    snprintf(msg, len, "%s: swiglu needs tensors %s and silu_f64", fx->path, b->tensor);
    return 0;
  }
  for (int64_t r = 0; r < rows; r++)
    for (int64_t i = 0; i < n; i++) {
      double y = wide ? (double)((const float *)out)[r * hs + i] : bf16_value(((const uint16_t *)out)[r * hs + i]);
      double rv = tensor_at(ref, r, i), gv = tensor_at(g, r, i), uv = tensor_at(u, r, i), zv = tensor_at(z, r, i);
      double bound = 0;
      int ok;
      if (b->bitexact) {
        ok = y == rv || (isnan(y) && isnan(rv));
      } else if (!by_class(y, rv, &ok)) {
        bound = swiglu_bound(gv, zv, uv, bf16);
        if (!strcmp(b->tolerance, "swiglu_f64")) ok = fabs(y - uv * zv) <= bound;
        else if (!strcmp(b->tolerance, "swiglu_torch")) ok = fabs(y - rv) <= 2 * bound;
        else {
          snprintf(msg, len, "%s: unknown tolerance '%s'", fx->path, b->tolerance);
          return 0;
        }
      }
      if (!ok) {
        snprintf(msg, len, "%s: boundary %s/%s (%s): row %lld [%lld]: g %.9g u %.9g: got %.9g, reference %.9g, bound %.3g",
                 fx->path, b->field, b->tensor, b->tolerance, (long long)r, (long long)i, gv, uv, y, rv, bound);
        return 0;
      }
    }
  return 1;
}

/* The generic classes, for every leaf without a checker of its own below: the reference tensor is
 * the field's whole extent element by element (the field's element type; an i32 field against an
 * i64 reference, a u64 field against i64 bits); "bitexact" compares bits, any other class the
 * distance to the reference against the f64 tensor <reference>_bound, NaN and infinities by
 * class. */
static double elem_value(const void *p, int64_t i, int elem) {
  switch (elem) {
  case FK_ELEM_F32: return (double)((const float *)p)[i];
  case FK_ELEM_BF16: return bf16_value(((const uint16_t *)p)[i]);
  case FK_ELEM_I32: return (double)((const int32_t *)p)[i];
  default: return (double)((const uint64_t *)p)[i];
  }
}

static int check_generic(const fkfix *fx, const fkfix_boundary *b, fkh_call *c, char *msg, size_t len) {
  int fi = fkh_field_index(c, b->field);
  const fkfix_tensor *ref = fkfix_tensor_get(fx, b->tensor);
  if (fi < 0 || !ref) {
    snprintf(msg, len, "%s: boundary %s/%s: no such field or tensor", fx->path, b->field, b->tensor);
    return 0;
  }
  const int elem = fkh_forms[c->form].fields[fi].elem;
  const int64_t n = fkh_extent(c, fi);
  const size_t es = (size_t)FK_ELEM_BYTES(elem);
  const size_t rs = dtype_size(ref->dtype);
  const int ints = elem == FK_ELEM_I32 || elem == FK_ELEM_U64;
  if (n < 0 || ref->nbytes != (size_t)n * rs || (ints ? ref->dtype != FKFIX_I64 : rs != es && b->bitexact)) {
    snprintf(msg, len, "%s: boundary %s/%s: the reference must hold the field's %lld elements (as %s)", fx->path,
             b->field, b->tensor, (long long)n, ints ? "i64" : "the field's dtype");
    return 0;
  }
  const void *out = fkh_buf_of(c, b->field);
  char bname[80];
  snprintf(bname, sizeof bname, "%s_bound", b->tensor);
  const fkfix_tensor *bd = b->bitexact ? NULL : fkfix_tensor_get(fx, bname);
  if (!b->bitexact && (!bd || bd->dtype != FKFIX_F64 || bd->nbytes != (size_t)n * 8)) {
    snprintf(msg, len, "%s: boundary %s/%s (%s): needs the f64 tensor %s of %lld elements", fx->path, b->field,
             b->tensor, b->tolerance, bname, (long long)n);
    return 0;
  }
  for (int64_t i = 0; i < n; i++) {
    int ok;
    double y = elem_value(out, i, elem), rv;
    if (ints) {
      int64_t w;
      memcpy(&w, (const uint8_t *)ref->data + 8 * i, 8);
      rv = (double)w;
      ok = elem == FK_ELEM_I32 ? (int64_t)((const int32_t *)out)[i] == w : ((const uint64_t *)out)[i] == (uint64_t)w;
    } else {
      rv = ref->dtype == FKFIX_F64 ? ((const double *)ref->data)[i] : ref->dtype == FKFIX_F32
           ? (double)((const float *)ref->data)[i] : bf16_value(((const uint16_t *)ref->data)[i]);
      /* bitexact: bits, a NaN by class (suite.h, fkt_fixture_bits_equal) */
      if (b->bitexact) ok = fkt_fixture_bits_equal((const uint8_t *)out + es * (size_t)i, (const uint8_t *)ref->data + es * (size_t)i, es);
      else if (!by_class(y, rv, &ok)) ok = fabs(y - rv) <= ((const double *)bd->data)[i];
    }
    if (!ok) {
      snprintf(msg, len, "%s: boundary %s/%s (%s): [%lld]: got %.9g, reference %.9g%s", fx->path, b->field, b->tensor,
               b->tolerance, (long long)i, y, rv, b->bitexact ? " (bits differ)" : "");
      return 0;
    }
  }
  return 1;
}

/* Leaves whose fixtures lay their references out their own way, each with its checker; every
 * other leaf's boundaries go to check_generic. */
typedef int (*fkt_checker)(const fkfix *fx, const fkfix_boundary *b, fkh_call *c, int fast, char *msg, size_t len);
static int gemv_checker(const fkfix *fx, const fkfix_boundary *b, fkh_call *c, int fast, char *msg, size_t len) {
  return check_gemv(fx, b, c, fast, msg, len);
}
#define FKT_CHECKER(name) \
  static int name##_checker(const fkfix *fx, const fkfix_boundary *b, fkh_call *c, int fast, char *msg, size_t len) { \
    (void)fast; \
    return check_##name(fx, b, c, msg, len); \
  }
FKT_CHECKER(rmsnorm)
FKT_CHECKER(swiglu)
FKT_CHECKER(embed)
FKT_CHECKER(attn)
FKT_CHECKER(sample)
FKT_CHECKER(generic)
static const struct { const char *leaf; fkt_checker check; } checkers[] = {
  { "gemv", gemv_checker }, { "rmsnorm", rmsnorm_checker }, { "swiglu", swiglu_checker },
  { "embed", embed_checker }, { "attn", attn_checker }, { "sample", sample_checker },
};

static fkt_checker checker_of(const char *leaf) {
  for (size_t i = 0; i < sizeof checkers / sizeof checkers[0]; i++)
    if (!strcmp(checkers[i].leaf, leaf)) return checkers[i].check;
  return generic_checker;
}

/* A boundary serves one tier: a tolerance id containing `_fast_` the fast one (gemv_fast_f64 for the
 * bf16 GEMV's fast stamps, gemv_q_fast_f64 for the quantized forms'), every other id (bitexact
 * included) the exact one (fixtures/README.md, "Tolerance ids"). */
static int boundary_for(const char *leaf, const fkfix_boundary *b, int fast) {
  (void)leaf;
  return (strstr(b->tolerance, "_fast_") != NULL) == !!fast;
}

int fkt_fixture_check(const fkfix *fx, fkh_call *c, int fast, char *msg, size_t msglen) {
  int bad = 0, used = 0;
  msg[0] = 0;
  if (c->failed) {
    snprintf(msg, msglen, "%s: %s", fx->path, c->why);
    return fx->nboundaries ? fx->nboundaries : 1;
  }
  const fkt_checker check = checker_of(fx->leaf);
  for (int i = 0; i < fx->nboundaries; i++) {
    char one[512];
    if (!boundary_for(fx->leaf, &fx->boundaries[i], fast)) continue;
    used++;
    if (!check(fx, &fx->boundaries[i], c, fast, one, sizeof one)) {
      if (!bad) snprintf(msg, msglen, "%s", one);
      bad++;
    }
  }
  if (!used) {
    snprintf(msg, msglen, "%s: no boundary for the %s tier", fx->path, fast ? "fast" : "exact");
    return 1;
  }
  return bad;
}

/* The call of a companion form (attn's <form>_wide, embed's <form>_bf16) over a fixture call of
 * its base form: every field the two share copied (inputs and scalars as they are, outputs and
 * scratch reallocated with as many elements, zeroed), yw sized and strided as y (yw_ld = y_ld). */
static void companion_call(const fkh_call *base, const char *id, fkh_call *out) {
  fkh_call_init(out, id, base->name);
  const fkh_form *fm = &fkh_forms[out->form], *bm = &fkh_forms[base->form];
  for (int i = 0; i < fm->nfields; i++) {
    const fkh_field *fd = &fm->fields[i];
    const char *from = !strcmp(fd->name, "yw") ? "y" : !strcmp(fd->name, "yw_ld") ? "y_ld" : fd->name;
    int bi = fkh_field_index(base, from);
    cr_assert(bi >= 0, "%s: no field %s in %s", id, from, bm->id);
    if (fd->kind != FK_FIELD_PTR) {
      out->v[i] = base->v[bi];
      memset(&out->v[i].buf, 0, sizeof out->v[i].buf);
      continue;
    }
    const fkh_buf *b = &base->v[bi].buf;
    size_t bes = (size_t)FK_ELEM_BYTES(bm->fields[bi].elem);
    if (fd->dir == FK_DIR_IN) {
      fkh_buf_alloc(&out->v[i].buf, b->nbytes);
      memcpy(out->v[i].buf.data, b->data, b->nbytes);
    } else {
      fkh_set_buf(out, fd->name, b->nbytes / bes);
    }
  }
}

/* The forms whose fixture evidence is the base form's (FK_FX_VIA in the registry) and that target
 * t's tier stamps: gemv's packed and blocked layouts, attn's wide forms, embed's bf16 form. gemv's
 * weights are packed into the companion's layout; every other companion shares the base's fields. */
int fkt_companion_calls(const fkh_call *base, const fkh_target *t, fkh_call *out, int cap) {
  const int tier = fkt_is_fast(t) ? FK_TIERS_FAST : FK_TIERS_EXACT;
  int n = 0;
  for (int f = 0; f < fkh_nforms && n < cap; f++) {
    const fkh_form *fm = &fkh_forms[f];
    if (fm->fixtures != FK_FX_VIA || strcmp(fm->fixtures_arg, fkh_forms[base->form].id) || !(fm->tiers & tier) ||
        !fkt_target_runs(t, f))
      continue;
    if (!strcmp(fm->leaf, "gemv")) fkt_gemv_pack_call(base, fm->id, &out[n]);
    else companion_call(base, fm->id, &out[n]);
    n++;
  }
  return n;
}

int fkt_companion_call(const fkh_call *base, const fkh_target *t, fkh_call *out) {
  return fkt_companion_calls(base, t, out, 1);
}

int fkt_fixture_gate(const char *leaf, const fkh_target *t, int *ncases) {
  char dir[512], err[512];
  snprintf(dir, sizeof dir, "%s/%s", FKT_FIXTURE_DIR, leaf);
  char **paths;
  int n = fkfix_list(dir, &paths, err, sizeof err);
  cr_assert(n > 0, "no fixtures in %s (%s)", dir, n < 0 ? err : "empty");
  fkfix *fx = calloc((size_t)n, sizeof *fx);
  fkh_call *calls = calloc((size_t)n, sizeof *calls);
  cr_assert(fx && calls);
  /* the fixtures of forms t runs: its variant's stamps (in the fast tier the bf16 GEMV's stamps and
   * the quantized forms' are different variants), or the models of its tier (the fast tier's: the
   * quantized forms); an exact stamp variant runs every exact form of the leaf (a stamp missing fails) */
  const int tier = fkt_is_fast(t) ? FK_TIERS_FAST : FK_TIERS_EXACT;
  const int every_exact = tier == FK_TIERS_EXACT && t->kind != FKH_CONTRACT && strcmp(t->variant, "contract") != 0;
  int kept = 0;
  for (int i = 0; i < n; i++) {
    cr_assert(fkfix_load(paths[i], &fx[kept], err, sizeof err) == 0, "%s", err);
    cr_assert(fkt_fixture_call(&fx[kept], &calls[kept], err, sizeof err) == 0, "%s", err);
    if (fkt_target_runs(t, calls[kept].form) || (every_exact && (fkh_forms[calls[kept].form].tiers & tier))) {
      kept++;
    } else {
      fkh_call_free(&calls[kept]);
      fkfix_free(&fx[kept]);
    }
  }
  int nall = n;
  n = kept;
  cr_assert(n > 0, "no fixtures in %s for the %s tier", dir, tier == FK_TIERS_FAST ? "fast" : "exact");
  /* the companion forms answer to the same evidence (fkt_companion_calls): each gemv fixture also
   * runs packed (exact and fast targets) and blocked (fast ones), each attn fixture whose form has
   * one through the wide form, each codebook_mean_x6 fixture through the bf16 form (checked against
   * RNE of the f32 reference) */
  enum { MAXC = 4 };
  fkh_call *comp = calloc((size_t)n * MAXC, sizeof *comp);
  int *ncomp = calloc((size_t)n, sizeof *ncomp);
  cr_assert(comp && ncomp);
  for (int i = 0; i < n; i++) ncomp[i] = fkt_companion_calls(&calls[i], t, &comp[i * MAXC], MAXC);
  run_or_fail(t, calls, n);
  for (int i = 0; i < n; i++)
    if (ncomp[i]) run_or_fail(t, &comp[i * MAXC], ncomp[i]);
  int bad = 0, ncompanion = 0;
  for (int i = 0; i < n; i++) {
    char msg[600];
    int b = fkt_fixture_check(&fx[i], &calls[i], fkt_is_fast(t), msg, sizeof msg);
    /* a perturbed contract is expected to fail (the caller asserts it does): info, not error */
    if (b && bad < 8 && !t->perturb) cr_log_error("%s: %s", t->label, msg);
    if (b && bad < 8 && t->perturb) cr_log_info("%s: %s", t->label, msg);
    for (int k = 0; k < ncomp[i]; k++) {
      fkh_call *cc = &comp[i * MAXC + k];
      int bp = fkt_fixture_check(&fx[i], cc, fkt_is_fast(t), msg, sizeof msg);
      if (bp && bad + b < 8 && !t->perturb) cr_log_error("%s (%s): %s", t->label, fkh_forms[cc->form].form, msg);
      if (bp && bad + b < 8 && t->perturb) cr_log_info("%s (%s): %s", t->label, fkh_forms[cc->form].form, msg);
      b += bp;
      ncompanion++;
      fkh_call_free(cc);
    }
    bad += b;
    fkh_call_free(&calls[i]);
    fkfix_free(&fx[i]);
  }
  if (ncompanion) cr_log_info("%s: %d companion-form runs over the same fixtures", t->label, ncompanion);
  free(comp);
  free(ncomp);
  free(calls);
  free(fx);
  fkfix_list_free(paths, nall);
  *ncases = n;
  return bad;
}

void fkt_fixture_test(const char *leaf, const fkh_target *t) {
  const fkh_leaf *l = fkh_leaf_of(leaf);
  cr_assert(l && l->gate != FK_GATE_NONE, "%s: no fixture gate (its template's fixture_gate)", leaf);
  if (l->gate == FK_GATE_SEQUENCE) {
    fkt_state_fixture_test(leaf, t);   /* sequences of calls on the leaf's own state: suite_state.c */
    return;
  }
  if (l->gate == FK_GATE_STREAM) {
    fkt_istft_fixture_test(t);         /* streams of frames: suite_state.c */
    return;
  }
  fkt_need(t);
  int ncases;
  int bad = fkt_fixture_gate(leaf, t, &ncases);
  cr_log_info("%s fixtures on %s: %d cases, %d failing boundaries", leaf, t->label, ncases, bad);
  cr_assert(bad == 0, "%s fixtures on %s: %d failing boundaries (see log)", leaf, t->label, bad);
}
