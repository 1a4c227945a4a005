/* tests/test_gemv.c: GEMV-RNE stamps (templates/gemv.lua), exact tier.
 *   exact:    every stamp == contract model, bit for bit, over >= 200 random shapes and every
 *             edge case, on x86_64 and on AArch64 (qemu -cpu max, -cpu neoverse-n1);
 *             AArch64 stamps == x86_64 stamps; AArch64 contract build == host contract build.
 *   fixtures: every stamp within the bound each fixture manifest derives.
 *   groups:   a row computed in a row group == the same row computed alone. */
#include <criterion/criterion.h>
#include <criterion/logging.h>
#include <criterion/parameterized.h>
#include <stdio.h>
#include <string.h>

#include "suite.h"

static fkt_pair pairs[64];
ParameterizedTestParameters(gemv, exact) {
  int n = fkt_exact_pairs("gemv", pairs, 64);
  return cr_make_param_array(fkt_pair, pairs, (size_t)n);
}
ParameterizedTest(fkt_pair *p, gemv, exact, .timeout = 600) { fkt_check_pair(p, fkt_gemv_cases); }

static fkh_target fixture_targets[16];
ParameterizedTestParameters(gemv, fixtures) {
  int n = fkt_fixture_targets("gemv", fixture_targets, 16);
  return cr_make_param_array(fkh_target, fixture_targets, (size_t)n);
}
ParameterizedTest(fkh_target *t, gemv, fixtures, .timeout = 600) {
  fkt_need(t);
  int ncases;
  int bad = fkt_fixture_gate("gemv", t, &ncases);
  cr_log_info("gemv fixtures on %s: %d cases, %d failing boundaries", t->label, ncases, bad);
  cr_assert(bad == 0, "gemv fixtures on %s: %d failing boundaries (see log)", t->label, bad);
}

/* Rows [begin, end) in one call equal the same rows one call each: the row group (2 rows per
 * pass, remainder alone) does not enter a row's sum. Checked on every host stamp. */
static fkh_target host_targets[16];
ParameterizedTestParameters(gemv, row_groups) {
  int n = fkt_fixture_targets("gemv", host_targets, 16);
  return cr_make_param_array(fkh_target, host_targets + 1, (size_t)(n - 1));
}
ParameterizedTest(fkh_target *t, gemv, row_groups) {
  fkt_need(t);
  const char *forms[] = { "gemv_bf16_rne", "gemv_bf16_rne_add" };
  for (int f = 0; f < 2; f++) {
    fkh_call *all;
    int n = fkt_gemv_cases(forms[f], &all);
    int checked = 0;
    for (int i = 0; i < n; i++) {
      int64_t rb = fkh_i64_of(&all[i], "row_begin"), re = fkh_i64_of(&all[i], "row_end");
      if (re - rb < 2) continue;
      fkh_call whole, one;
      fkh_call_copy(&whole, &all[i]);
      char err[256];
      cr_assert(fkh_run(t, &whole, 1, err, sizeof err) == 0, "%s", err);
      fkh_call_copy(&one, &all[i]);
      for (int64_t r = rb; r < re; r++) {
        fkh_set_i64(&one, "row_begin", r);
        fkh_set_i64(&one, "row_end", r + 1);
        cr_assert(fkh_run(t, &one, 1, err, sizeof err) == 0, "%s", err);
      }
      char msg[512];
      cr_assert(fkh_same_outputs(&whole, &one, msg, sizeof msg), "%s: group vs single rows: %s", t->label, msg);
      fkh_call_free(&whole);
      fkh_call_free(&one);
      checked++;
    }
    cr_assert(checked > 100, "only %d multi-row cases", checked);
    fkt_free_cases(all, n);
  }
}
