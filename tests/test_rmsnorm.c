/* tests/test_rmsnorm.c: RMSNorm stamps (templates/rmsnorm.lua), exact tier.
 *   exact:    every stamp == contract model, bit for bit, over >= 200 random shapes and every
 *             edge case, on x86_64 and on AArch64 (qemu -cpu max, -cpu neoverse-n1);
 *             AArch64 stamps == x86_64 stamps; AArch64 contract build == host contract build.
 *   fixtures: every stamp within the bound each fixture manifest derives (transformers'
 *             Lfm2RMSNorm and numpy float64), the residual commit bit-exact. */
#include <criterion/criterion.h>
#include <criterion/logging.h>
#include <criterion/parameterized.h>

#include "suite.h"

static fkt_pair pairs[64];
ParameterizedTestParameters(rmsnorm, exact) {
  int n = fkt_exact_pairs("rmsnorm", pairs, 64);
  return cr_make_param_array(fkt_pair, pairs, (size_t)n);
}
ParameterizedTest(fkt_pair *p, rmsnorm, exact, .timeout = 600) { fkt_check_pair(p, fkt_rmsnorm_cases); }

static fkh_target fixture_targets[16];
ParameterizedTestParameters(rmsnorm, fixtures) {
  int n = fkt_fixture_targets("rmsnorm", fixture_targets, 16);
  return cr_make_param_array(fkh_target, fixture_targets, (size_t)n);
}
ParameterizedTest(fkh_target *t, rmsnorm, fixtures, .timeout = 600) {
  fkt_need(t);
  int ncases;
  int bad = fkt_fixture_gate("rmsnorm", t, &ncases);
  cr_log_info("rmsnorm fixtures on %s: %d cases, %d failing boundaries", t->label, ncases, bad);
  cr_assert(bad == 0, "rmsnorm fixtures on %s: %d failing boundaries (see log)", t->label, bad);
}
