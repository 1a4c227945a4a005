/* tests/test_gemv.c: the GEMV family (templates/gemv.lua): forms f32, f32_bias, bf16_rne,
 * bf16_rne_add; m = 1..4 activation rows; strided destinations.
 *   exact:      every exact stamp == contract model, bit for bit, over >= 200 random shapes
 *               and every edge case, on x86_64 and on AArch64 (qemu -cpu max, neoverse-n1);
 *               AArch64 stamps == x86_64 stamps; AArch64 contract build == host build.
 *   fixtures:   every stamp within the bound each fixture manifest derives for its tier.
 *   fast:       every fast stamp within gemv_fast_f64 of the float64 reference on every case,
 *               adversarial ones included, and nothing written outside its slots.
 *   act_rows:   m rows in one call == each row in its own call (the shared pass over the
 *               weights does not enter a row's sums).
 *   row_ranges: rows [begin, end) in one call == one call per row.
 * exact and fixtures run as leaf::exact and leaf::fixtures (tests/test_leaf.c, linked into this
 * suite). */
#include <criterion/criterion.h>
#include <criterion/logging.h>
#include <criterion/parameterized.h>
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

static fkh_target fast_case_targets[8];
ParameterizedTestParameters(gemv, fast) {
  return cr_make_param_array(fkh_target, fast_case_targets,
                             (size_t)fkt_fixture_targets("gemv", "fast", fast_case_targets, 8));
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
