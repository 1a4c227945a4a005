/* tests/test_sample.c: sampler stamps (templates/sample.lua), exact tier.
 *   exact:  every stamp == contract model, bit for bit (the int32 token), over >= 200 random
 *           shapes and every edge case (every length 1..48, n up to 2^20, ties at the maximum,
 *           +0 / -0, NaN payloads, infinities), on x86_64 and on AArch64 (qemu -cpu max,
 *           -cpu neoverse-n1); AArch64 stamps == x86_64 stamps; AArch64 contract == host one.
 *   rule:   on every stamp, tok is the argmax by numpy.argmax's rule, checked directly (not
 *           through the contract model): the lowest NaN index if any, else the lowest index
 *           of a value no other element exceeds.
 *   fixtures: every stamp's token == torch.argmax's on seeded logits (LFM2's vocabulary 65536,
 *           the audio codebook 2049, ties, NaNs, signed zeros, infinities), fixtures/sample/. */
#include <criterion/criterion.h>
#include <criterion/logging.h>
#include <criterion/parameterized.h>

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "suite.h"

FKT_LEAF_SUITE(sample, fkt_sample_cases)

static fkh_target rule_targets[16];
ParameterizedTestParameters(sample, argmax_rule) {
  int n = fkt_fixture_targets("sample", "exact", rule_targets, 16);
  return cr_make_param_array(fkh_target, rule_targets, (size_t)n);
}

ParameterizedTest(fkh_target *t, sample, argmax_rule, .timeout = 300) {
  fkt_need(t);
  fkh_call *c;
  int n = fkt_sample_cases("sample_argmax", &c);
  char err[256];
  cr_assert(fkh_run(t, c, n, err, sizeof err) == 0, "%s", err);
  int nan_cases = 0, tie_cases = 0;
  for (int k = 0; k < n; k++) {
    const int64_t len = fkh_i64_of(&c[k], "n");
    const float *x = fkh_buf_of(&c[k], "x");
    const int32_t tok = ((const int32_t *)fkh_buf_of(&c[k], "tok"))[0];
    cr_assert(tok >= 0 && tok < len, "%s %s: tok %d outside [0, %lld)", t->label, c[k].name, tok, (long long)len);
    int64_t first_nan = -1, ties = 0;
    for (int64_t i = 0; i < len && first_nan < 0; i++)
      if (isnan(x[i])) first_nan = i;
    if (first_nan >= 0) {
      nan_cases++;
      cr_assert(tok == first_nan, "%s %s: tok %d, first NaN at %lld", t->label, c[k].name, tok, (long long)first_nan);
      continue;
    }
    for (int64_t i = 0; i < len; i++) {
      cr_assert(!(x[i] > x[tok]), "%s %s: x[%lld] > x[tok %d]", t->label, c[k].name, (long long)i, tok);
      if (i < tok) cr_assert(x[i] != x[tok], "%s %s: x[%lld] == x[tok %d], a lower index", t->label, c[k].name, (long long)i, tok);
      ties += x[i] == x[tok];
    }
    tie_cases += ties > 1;
  }
  cr_assert(nan_cases >= 50 && tie_cases >= 50, "%s: only %d NaN cases, %d tie cases", t->label, nan_cases, tie_cases);
  cr_log_info("%s: %d cases: argmax rule holds (%d with NaNs, %d with ties at the maximum)", t->label, n, nan_cases,
              tie_cases);
  fkt_free_cases(c, n);
}
