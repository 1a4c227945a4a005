/* tests/test_rmsnorm.c: RMSNorm stamps (templates/rmsnorm.lua), exact tier.
 *   exact:    every stamp == contract model, bit for bit, over >= 200 random shapes and every
 *             edge case, on x86_64 and on AArch64 (qemu -cpu max, -cpu neoverse-n1);
 *             AArch64 stamps == x86_64 stamps; AArch64 contract build == host contract build.
 *   fixtures: every stamp within the bound each fixture manifest derives (transformers'
 *             Lfm2RMSNorm and numpy float64), the residual commit bit-exact.
 * exact and fixtures run as leaf::exact and leaf::fixtures (tests/test_leaf.c, linked into this
 * suite). */
#include <criterion/criterion.h>
#include <criterion/logging.h>
#include <criterion/parameterized.h>

#include <stdint.h>

#include "suite.h"


/* rmsnorm_bf16_wide stores the bf16 form's results widened to f32 (a GEMV's input): on every
 * case and stamp its outputs are exactly the bf16 form's, shifted up by 16 bits. */
static fkh_target wide_targets[16];
ParameterizedTestParameters(rmsnorm, wide_is_the_bf16_form_widened) {
  int n = fkt_fixture_targets("rmsnorm", "exact", wide_targets, 16);
  return cr_make_param_array(fkh_target, wide_targets, (size_t)n);
}

ParameterizedTest(fkh_target *t, rmsnorm, wide_is_the_bf16_form_widened, .timeout = 300) {
  fkt_need(t);
  fkh_call *nb, *nw;
  int n = fkt_rmsnorm_cases("rmsnorm_bf16", &nb), n2 = fkt_rmsnorm_cases("rmsnorm_bf16_wide", &nw);
  cr_assert_eq(n, n2);
  char err[256];
  cr_assert(fkh_run(t, nb, n, err, sizeof err) == 0, "%s", err);
  cr_assert(fkh_run(t, nw, n, err, sizeof err) == 0, "%s", err);
  long checked = 0;
  for (int i = 0; i < n; i++) {
    int64_t rows = fkh_i64_of(&nb[i], "rows"), cols = fkh_i64_of(&nb[i], "n"), ys = fkh_i64_of(&nb[i], "y_stride");
    const uint16_t *yb = fkh_buf_of(&nb[i], "y");
    const uint32_t *yw = fkh_buf_of(&nw[i], "y");
    for (int64_t r = 0; r < rows; r++)
      for (int64_t j = 0; j < cols; j++, checked++)
        cr_assert(yw[r * ys + j] == (uint32_t)yb[r * ys + j] << 16, "%s %s [%lld][%lld]: wide 0x%08x, bf16 0x%04x", t->label,
                  nb[i].name, (long long)r, (long long)j, yw[r * ys + j], yb[r * ys + j]);
  }
  cr_log_info("%s: %d cases, %ld outputs: rmsnorm_bf16_wide == rmsnorm_bf16 widened", t->label, n, checked);
  fkt_free_cases(nb, n);
  fkt_free_cases(nw, n);
}
