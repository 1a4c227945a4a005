/* tests/test_gemv.c: the GEMV family (templates/gemv.lua): forms f32, f32_bias, bf16_rne,
 * bf16_rne_add (and their quantized q8_ / q4_ forms); m = 1..4 activation rows; strided destinations.
 *   exact:      every exact stamp == contract model, bit for bit, over >= 200 random shapes
 *               and every edge case, on x86_64 and on AArch64 (qemu -cpu max, neoverse-n1);
 *               AArch64 stamps == x86_64 stamps; AArch64 contract build == host build.
 *   fixtures:   every stamp within the bound each fixture manifest derives for its tier.
 *   fast:       every fast stamp within gemv_fast_f64 of the float64 reference on every case,
 *               adversarial ones included, and nothing written outside its slots.
 *   q_fast_model_within_bound: the quantized forms' fast contract model (tests/contract/gemv_qfast.c)
 *               within gemv_q_fast_f64 on every quantized case; rows with an inf or NaN x all NaN.
 *   q_fast:     every fast stamp of the quantized forms (avx512vnni, dotprod) and the AArch64 build of
 *               the model == the fast contract model bit for bit, and within gemv_q_fast_f64.
 *   act_rows:   m rows in one call == each row in its own call (the shared pass over the
 *               weights does not enter a row's sums).
 *   row_ranges: rows [begin, end) in one call == one call per row.
 * exact and fixtures run as leaf::exact and leaf::fixtures (tests/test_leaf.c, linked into this
 * suite). */
#include <criterion/criterion.h>
#include <criterion/logging.h>
#include <criterion/parameterized.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "suite.h"


static const char *const forms[] = { "gemv_f32", "gemv_f32_bias", "gemv_bf16_rne", "gemv_bf16_rne_add",
                                     "gemv_f32_packed", "gemv_f32_bias_packed", "gemv_bf16_rne_packed",
                                     "gemv_bf16_rne_add_packed", "gemv_f32_blocked", "gemv_f32_bias_blocked",
                                     "gemv_bf16_rne_blocked", "gemv_bf16_rne_add_blocked" };
enum { NFORMS = 12, NEXACT_FORMS = 8 };   /* the blocked forms exist in the fast tier only */

/* ---------------------------------------------------------------- fast tier ------------ */

/* The fast-tier targets that run form `form` (from the registry), the contract models kept or not. */
static int fast_targets_of(const char *form, fkh_target *out, int cap, int contract) {
  fkh_target all[16];
  int n = fkt_fixture_targets("gemv", "fast", all, 16), k = 0;
  for (int i = 0; i < n && k < cap; i++)
    if (fkt_target_runs(&all[i], fkh_form_index(form)) && (contract || all[i].kind != FKH_CONTRACT)) out[k++] = all[i];
  return k;
}

/* the bf16 forms' fast stamps (the quantized forms' fast tier has its own tests below) */
static fkh_target fast_case_targets[8];
ParameterizedTestParameters(gemv, fast) {
  return cr_make_param_array(fkh_target, fast_case_targets, (size_t)fast_targets_of("gemv_f32", fast_case_targets, 8, 0));
}
ParameterizedTest(fkh_target *t, gemv, fast, .timeout = 600) {
  fkt_need(t);
  for (int f = 0; f < NFORMS; f++) {
    fkh_call *calls, *orig;
    int n = fkt_gemv_cases(forms[f], &calls);
    fkt_gemv_cases(forms[f], &orig);
    char err[256];
    cr_assert(fkh_run(t, calls, n, err, sizeof err) == 0, "%s", err);
    int checked = 0, bad = 0;
    for (int i = 0; i < n; i++) {
      fkh_call *c = &calls[i];
      cr_assert(!c->failed, "%s: %s: %s", t->label, c->name, c->why);
      /* the float64 reference does not overflow where f32 does: no bound there */
      if (!strcmp(c->name, "overflow")) continue;
      int64_t m = fkh_i64_of(c, "m"), rb = fkh_i64_of(c, "row_begin"), re = fkh_i64_of(c, "row_end");
      /* every slot: within the bound; every other destination element: the canary */
      int yi = fkh_field_index(c, "y");
      size_t es = fkh_forms[c->form].fields[yi].elem == FK_ELEM_F32 ? 4 : 2;
      const uint8_t *y = fkh_buf_of(c, "y"), *y0 = fkh_buf_of(&orig[i], "y");
      size_t ny = c->v[yi].buf.nbytes / es;
      char *slot = calloc(ny, 1);
      for (int64_t j = 0; j < m; j++) {
        for (int64_t r = rb; r < re; r++) {
          double e, ref = fkt_gemv_reference(c, j, r, 1, &e), got = fkt_gemv_output(c, j, r);
          double bound = fkt_gemv_bound(c, ref, e, 1);
          slot[fkh_i64_of(c, "y_off") + j * fkh_i64_of(c, "ldy") + r] = 1;
          checked++;
          if (!fkt_gemv_within(got, ref, bound) && bad++ < 5)
            cr_log_error("%s %s %s (j=%lld, n=%lld): %.9g, reference %.9g, bound %.3g", t->label, forms[f], c->name,
                         (long long)j, (long long)r, got, ref, bound);
        }
      }
      for (size_t e = 0; e < ny; e++)
        if (!slot[e] && memcmp(y + e * es, y0 + e * es, es) != 0 && bad++ < 5)
          cr_log_error("%s %s %s: wrote element %zu outside its slots", t->label, forms[f], c->name, e);
      free(slot);
    }
    cr_log_info("%s %s: %d outputs within gemv_fast_f64, %d not", t->label, forms[f], checked, bad);
    cr_assert(bad == 0, "%s %s: %d outputs outside the fast-tier bound or outside their slots", t->label, forms[f], bad);
    cr_assert(checked > 1000);
    fkt_free_cases(calls, n);
    fkt_free_cases(orig, n);
  }
}

/* ---------------------------------------------------------------- quantized, fast tier -- */

/* The quantized forms' fast tier (tests/contract/gemv_qfast.c): deterministic, so every fast stamp
 * (x86_64 avx512vnni and avx512vnnihw, AArch64 dotprod) equals the fast contract model bit for bit, and every output
 * lies within gemv_q_fast_f64 of the float64 reference (tests/leaves/gemv_bounds.c). */
static const char *const qforms[] = { "gemv_q8_f32", "gemv_q8_f32_bias", "gemv_q8_bf16_rne", "gemv_q8_bf16_rne_add",
                                      "gemv_q4_f32", "gemv_q4_f32_bias", "gemv_q4_bf16_rne", "gemv_q4_bf16_rne_add" };
enum { NQFORMS = 8 };

static int is_canonical_nan(const fkh_call *c, int64_t at) {
  const int yi = fkh_field_index(c, "y");
  const uint8_t *y = c->v[yi].buf.data;
  if (fkh_forms[c->form].fields[yi].elem == FK_ELEM_F32) {
    uint32_t u;
    memcpy(&u, y + 4 * at, 4);
    return u == 0x7fc00000u;
  }
  uint16_t h;
  memcpy(&h, y + 2 * at, 2);
  return h == 0x7fc0;
}

/* Every output of calls (run on t; orig: the same calls unrun) within gemv_q_fast_f64, or, in an
 * activation row holding an inf or a NaN (the reference NaN: the tier's rule), the canonical NaN;
 * every destination element outside the slots untouched. Returns the failures (the first logged). */
static int q_fast_within(const char *label, fkh_call *calls, fkh_call *orig, int n, int *checked, int *nan_outputs,
                         double *worst) {
  int bad = 0;
  for (int i = 0; i < n; i++) {
    fkh_call *c = &calls[i];
    const char *form = fkh_forms[c->form].id;
    if (c->failed) {
      if (bad++ < 5) cr_log_error("%s %s %s: %s", label, form, c->name, c->why);
      continue;
    }
    const int64_t m = fkh_i64_of(c, "m"), rb = fkh_i64_of(c, "row_begin"), re = fkh_i64_of(c, "row_end");
    const int yi = fkh_field_index(c, "y");
    const size_t es = fkh_forms[c->form].fields[yi].elem == FK_ELEM_F32 ? 4 : 2, ny = c->v[yi].buf.nbytes / es;
    const uint8_t *y = fkh_buf_of(c, "y"), *y0 = fkh_buf_of(&orig[i], "y");
    char *slot = calloc(ny + 1, 1);
    cr_assert(slot);
    for (int64_t j = 0; j < m; j++)
      for (int64_t r = rb; r < re; r++) {
        const int64_t at = fkh_i64_of(c, "y_off") + j * fkh_i64_of(c, "ldy") + r;
        double e, ref = fkt_gemv_reference(c, j, r, 1, &e), got = fkt_gemv_output(c, j, r);
        double bound = fkt_gemv_bound(c, ref, e, 1);
        slot[at] = 1;
        (*checked)++;
        if (isnan(ref)) {
          (*nan_outputs)++;
          if (!is_canonical_nan(c, at) && bad++ < 5)
            cr_log_error("%s %s %s (j=%lld, n=%lld): %.9g, want the canonical NaN (an activation row with an inf "
                         "or a NaN)", label, form, c->name, (long long)j, (long long)r, got);
          continue;
        }
        if (!fkt_gemv_within(got, ref, bound)) {
          if (bad++ < 5)
            cr_log_error("%s %s %s (j=%lld, n=%lld): %.9g, reference %.9g, bound %.3g", label, form, c->name,
                         (long long)j, (long long)r, got, ref, bound);
        } else if (bound > 0 && fabs(got - ref) / bound > *worst) {
          *worst = fabs(got - ref) / bound;
        }
      }
    for (size_t e = 0; e < ny; e++)
      if (!slot[e] && memcmp(y + e * es, y0 + e * es, es) != 0 && bad++ < 5)
        cr_log_error("%s %s %s: wrote element %zu outside its slots", label, form, c->name, e);
    free(slot);
  }
  return bad;
}

/* The fast contract model itself against the bound, on every case of every quantized form: the
 * bound's own check (it runs before any stamp exists), the dedicated non-finite case included. */
Test(gemv, q_fast_model_within_bound, .timeout = 300) {
  const fkh_target t = fkh_contract_fast(0);
  for (int f = 0; f < NQFORMS; f++) {
    fkh_call *calls, *orig;
    int n = fkt_gemv_cases(qforms[f], &calls);
    fkt_gemv_cases(qforms[f], &orig);
    char err[256];
    cr_assert(fkh_run(&t, calls, n, err, sizeof err) == 0, "%s", err);
    int checked = 0, nans = 0, dedicated = 0;
    double worst = 0;
    int bad = q_fast_within(t.label, calls, orig, n, &checked, &nans, &worst);
    for (int i = 0; i < n; i++) {
      if (strcmp(calls[i].name, "q_fast_nonfinite_rows") != 0) continue;
      /* rows 0 (an inf) and 1 (a NaN): NaN everywhere; row 2: finite */
      for (int64_t j = 0; j < 3; j++)
        for (int64_t r = fkh_i64_of(&calls[i], "row_begin"); r < fkh_i64_of(&calls[i], "row_end"); r++) {
          const int64_t at = fkh_i64_of(&calls[i], "y_off") + j * fkh_i64_of(&calls[i], "ldy") + r;
          cr_assert(j < 2 ? is_canonical_nan(&calls[i], at) : isfinite(fkt_gemv_output(&calls[i], j, r)),
                    "%s q_fast_nonfinite_rows (j=%lld, n=%lld): %.9g", qforms[f], (long long)j, (long long)r,
                    fkt_gemv_output(&calls[i], j, r));
          dedicated++;
        }
    }
    cr_log_info("%s %s: %d cases, %d outputs within gemv_q_fast_f64 (worst %.3f of the bound), %d NaN outputs of "
                "non-finite rows, %d not", t.label, qforms[f], n, checked - nans, worst, nans, bad);
    cr_assert(bad == 0, "%s %s: %d outputs outside gemv_q_fast_f64 or their slots", t.label, qforms[f], bad);
    cr_assert(dedicated >= 10 && checked > 10000, "%s: %d dedicated outputs, %d checked", qforms[f], dedicated, checked);
    fkt_free_cases(calls, n);
    fkt_free_cases(orig, n);
  }
}

/* Every fast stamp of the quantized forms (host x86_64, AArch64 under qemu -cpu max) and the fast
 * contract model built for AArch64, against the host's fast contract model: every output bit for bit
 * (every NaN stored is canonical), the whole destination (the slots and the canaries around them),
 * and within gemv_q_fast_f64. A mismatch is logged with its case, (j, n) and both bit patterns. */
static fkh_target qfast_targets[8];
ParameterizedTestParameters(gemv, q_fast) {
  int n = fast_targets_of("gemv_q8_f32", qfast_targets, 7, 0);
  qfast_targets[n++] = fkh_remote("contract_fast", "max");
  return cr_make_param_array(fkh_target, qfast_targets, (size_t)n);
}
ParameterizedTest(fkh_target *t, gemv, q_fast, .timeout = 600) {
  fkt_need(t);
  const fkh_target model = fkh_contract_fast(0);
  int total_bad = 0;
  for (int f = 0; f < NQFORMS; f++) {
    cr_assert(fkt_target_runs(t, fkh_form_index(qforms[f])), "%s has no stamp of %s", t->label, qforms[f]);
    fkh_call *calls, *want, *orig;
    const int n = fkt_gemv_cases(qforms[f], &calls);
    fkt_gemv_cases(qforms[f], &want);
    fkt_gemv_cases(qforms[f], &orig);
    char err[256];
    cr_assert(fkh_run(t, calls, n, err, sizeof err) == 0, "%s: %s", t->label, err);
    cr_assert(fkh_run(&model, want, n, err, sizeof err) == 0, "%s", err);
    int mism = 0, cases_bad = 0;
    for (int i = 0; i < n; i++) {
      fkh_call *c = &calls[i], *w = &want[i];
      if (c->failed) continue;   /* q_fast_within reports it */
      const int yi = fkh_field_index(c, "y");
      const int f32 = fkh_forms[c->form].fields[yi].elem == FK_ELEM_F32;
      const size_t es = f32 ? 4 : 2, ny = c->v[yi].buf.nbytes / es;
      const int64_t ldy = fkh_i64_of(c, "ldy"), y_off = fkh_i64_of(c, "y_off");
      int here = 0;
      for (size_t e = 0; e < ny; e++) {
        uint32_t g = 0, v = 0;
        memcpy(&g, c->v[yi].buf.data + e * es, es);
        memcpy(&v, w->v[yi].buf.data + e * es, es);
        if (g == v) continue;
        if (here++ == 0) cases_bad++;
        if (mism++ < 12) {
          const int64_t j = ldy ? ((int64_t)e - y_off) / ldy : 0, r = (int64_t)e - y_off - j * ldy;
          cr_log_error("%s %s %s (k=%lld m=%lld rows %lld..%lld): y[%zu] (j=%lld, n=%lld): got 0x%0*x, model 0x%0*x",
                       t->label, qforms[f], c->name, (long long)fkh_i64_of(c, "k"), (long long)fkh_i64_of(c, "m"),
                       (long long)fkh_i64_of(c, "row_begin"), (long long)fkh_i64_of(c, "row_end") - 1, e, (long long)j,
                       (long long)r, f32 ? 8 : 4, g, f32 ? 8 : 4, v);
        }
      }
    }
    /* equal to the model, the outputs are within the bound (q_fast_model_within_bound); where they
     * differ, whether they are still faithful tells a wrong order from a wrong value */
    int checked = 0, nans = 0, bad = 0;
    double worst = 0;
    for (int i = 0; i < n; i++) bad += calls[i].failed;
    if (mism || bad) bad = q_fast_within(t->label, calls, orig, n, &checked, &nans, &worst);
    cr_log_info("%s %s: %d cases: %d outputs differ from the model (in %d cases)%s; %d checked against "
                "gemv_q_fast_f64, %d outside it or their slots, or failed calls", t->label, qforms[f], n, mism,
                cases_bad, mism ? "" : " (the destinations, canaries included)", checked, bad);
    total_bad += mism + bad;
    fkt_free_cases(calls, n);
    fkt_free_cases(want, n);
    fkt_free_cases(orig, n);
  }
  cr_assert(total_bad == 0, "%s: %d mismatches with the fast contract model or outputs outside the bound (see log)",
            t->label, total_bad);
}

/* ---------------------------------------------------------------- splitting a call ----- */

static fkh_target split_targets[16];
ParameterizedTestParameters(gemv, act_rows) {
  int n = fkt_fixture_targets("gemv", "exact", split_targets, 16);
  return cr_make_param_array(fkh_target, split_targets + 1, (size_t)(n - 1));   /* not the contract */
}

/* Runs every case whole and split into parts (split(c, part) -> 0 when done), then requires
 * every part's slots to equal the whole call's, bit for bit. */
typedef int (*splitter)(const fkh_call *whole, int part, fkh_call *out);

static void check_split(const fkh_target *t, splitter split, const char *what) {
  fkt_need(t);
  for (int f = 0; f < NEXACT_FORMS; f++) {
    fkh_call *all;
    int n = fkt_gemv_cases(forms[f], &all), nparts = 0, cap = 0;
    for (int i = 0; i < n; i++) {   /* room for every part: a part per activation row or per row group */
      int64_t m = fkh_i64_of(&all[i], "m"), rows = fkh_i64_of(&all[i], "row_end") - fkh_i64_of(&all[i], "row_begin");
      cap += (int)(m > rows ? m : rows) + 1;
    }
    fkh_call *parts = calloc((size_t)cap, sizeof *parts);
    int *owner = calloc((size_t)cap, sizeof *owner);
    cr_assert(parts && owner);
    for (int i = 0; i < n; i++)
      for (int p = 0; nparts < cap && split(&all[i], p, &parts[nparts]); p++) owner[nparts++] = i;
    char err[256], msg[512];
    cr_assert(fkh_run(t, all, n, err, sizeof err) == 0, "%s", err);
    cr_assert(fkh_run(t, parts, nparts, err, sizeof err) == 0, "%s", err);
    int multi = 0;
    for (int p = 0; p < nparts; p++) {
      /* a part writes a subset of the whole call's slots: merge it into a copy of the part's
       * canary-filled input and compare that subset only, through the contract's own view */
      const fkh_call *w = &all[owner[p]];
      int64_t m = fkh_i64_of(&parts[p], "m"), rb = fkh_i64_of(&parts[p], "row_begin"), re = fkh_i64_of(&parts[p], "row_end");
      for (int64_t j = 0; j < m; j++)
        for (int64_t r = rb; r < re; r++) {
          int64_t jw = j + (fkh_i64_of(&parts[p], "y_off") - fkh_i64_of(w, "y_off")) / (fkh_i64_of(w, "ldy") ? fkh_i64_of(w, "ldy") : 1);
          double a = fkt_gemv_output((fkh_call *)w, jw, r), b = fkt_gemv_output(&parts[p], j, r);
          if (memcmp(&a, &b, sizeof a) != 0)   /* bits, NaNs included: every NaN stored is canonical */
            cr_assert_fail("%s %s %s: %s: (j=%lld, n=%lld) whole %.9g, split %.9g", t->label, forms[f], w->name, what,
                           (long long)jw, (long long)r, a, b);
        }
      (void)msg;
    }
    for (int i = 0; i < n; i++) multi += fkh_i64_of(&all[i], "m") > 1 || fkh_i64_of(&all[i], "row_end") - fkh_i64_of(&all[i], "row_begin") > 1;
    cr_log_info("%s %s: %s: %d cases, %d calls after splitting", t->label, forms[f], what, n, nparts);
    cr_assert(multi > 100, "only %d splittable cases", multi);
    fkt_free_cases(all, n);
    fkt_free_cases(parts, nparts);
    free(owner);
  }
}

/* part p = activation row p alone: x advanced by p rows, the destination offset by p rows */
static int split_act_rows(const fkh_call *whole, int p, fkh_call *out) {
  if (p >= fkh_i64_of(whole, "m")) return 0;
  fkh_call_copy(out, whole);
  int64_t ldx = fkh_i64_of(whole, "ldx");
  int xi = fkh_field_index(out, "x");
  /* shift x: rows p.. move to the front (the buffer keeps its size and guards) */
  float *x = fkh_buf_of(out, "x");
  memmove(x, x + p * ldx, (size_t)((fkh_i64_of(whole, "m") - p) * ldx) * sizeof *x);
  (void)xi;
  fkh_set_i64(out, "m", 1);
  fkh_set_i64(out, "y_off", fkh_i64_of(whole, "y_off") + p * fkh_i64_of(whole, "ldy"));
  return 1;
}

ParameterizedTest(fkh_target *t, gemv, act_rows, .timeout = 300) {
  check_split(t, split_act_rows, "activation rows one by one");
}

static fkh_target range_targets[16];
ParameterizedTestParameters(gemv, row_ranges) {
  int n = fkt_fixture_targets("gemv", "exact", range_targets, 16);
  return cr_make_param_array(fkh_target, range_targets + 1, (size_t)(n - 1));
}

/* part p = weight row row_begin + p alone; for the packed forms, whose row_begin is a whole
 * group, part p = group p alone (its rows computed together, then the remainder path) */
static int split_rows(const fkh_call *whole, int p, fkh_call *out) {
  int64_t rb = fkh_i64_of(whole, "row_begin"), re = fkh_i64_of(whole, "row_end");
  int64_t step = fkh_field_index(whole, "ldw") >= 0 ? 1 : FK_GEMV_PACK_ROWS;
  if (rb + p * step >= re) return 0;
  fkh_call_copy(out, whole);
  fkh_set_i64(out, "row_begin", rb + p * step);
  fkh_set_i64(out, "row_end", rb + (p + 1) * step < re ? rb + (p + 1) * step : re);
  return 1;
}

ParameterizedTest(fkh_target *t, gemv, row_ranges, .timeout = 300) { check_split(t, split_rows, "rows one by one"); }
