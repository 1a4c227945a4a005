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
#include <stdlib.h>
#include <string.h>

#include "suite.h"

FKT_LEAF_SUITE(gemv, fkt_gemv_cases)

/* Rows [begin, end) in one call equal the same rows one call each: the row group (2 rows per
 * pass, remainder alone) does not enter a row's sum. Checked on every stamp, AArch64 included
 * (each side is one batch, so one qemu start). */
static fkh_target group_targets[16];
ParameterizedTestParameters(gemv, row_groups) {
  int n = fkt_fixture_targets("gemv", group_targets, 16);
  return cr_make_param_array(fkh_target, group_targets + 1, (size_t)(n - 1));   /* not the contract */
}
ParameterizedTest(fkh_target *t, gemv, row_groups, .timeout = 300) {
  fkt_need(t);
  const char *forms[] = { "gemv_bf16_rne", "gemv_bf16_rne_add" };
  for (int f = 0; f < 2; f++) {
    fkh_call *all;
    int n = fkt_gemv_cases(forms[f], &all), nsingle = 0;
    for (int i = 0; i < n; i++) nsingle += (int)(fkh_i64_of(&all[i], "row_end") - fkh_i64_of(&all[i], "row_begin"));
    fkh_call *single = calloc((size_t)nsingle, sizeof *single);
    cr_assert_not_null(single);
    int k = 0;
    for (int i = 0; i < n; i++) {
      for (int64_t r = fkh_i64_of(&all[i], "row_begin"); r < fkh_i64_of(&all[i], "row_end"); r++) {
        fkh_call_copy(&single[k], &all[i]);
        fkh_set_i64(&single[k], "row_begin", r);
        fkh_set_i64(&single[k], "row_end", r + 1);
        k++;
      }
    }
    char err[256];
    cr_assert(fkh_run(t, all, n, err, sizeof err) == 0, "%s", err);
    cr_assert(fkh_run(t, single, nsingle, err, sizeof err) == 0, "%s", err);
    k = 0;
    int grouped = 0;
    for (int i = 0; i < n; i++) {
      const uint16_t *y = fkh_buf_of(&all[i], "y");
      int64_t rb = fkh_i64_of(&all[i], "row_begin"), re = fkh_i64_of(&all[i], "row_end");
      grouped += re - rb >= 2;
      for (int64_t r = rb; r < re; r++, k++) {
        const uint16_t *y1 = fkh_buf_of(&single[k], "y");
        cr_assert(!single[k].failed && !all[i].failed, "%s: %s", all[i].name, single[k].failed ? single[k].why : all[i].why);
        cr_assert(y[r] == y1[r],
                  "%s on %s: row %lld in its group 0x%04x, alone 0x%04x", all[i].name, t->label, (long long)r, y[r], y1[r]);
      }
    }
    cr_log_info("%s on %s: %d grouped cases, %d rows alone", forms[f], t->label, grouped, nsingle);
    cr_assert(grouped > 100, "only %d multi-row cases", grouped);
    fkt_free_cases(all, n);
    fkt_free_cases(single, nsingle);
  }
}
